# distutils: language = c++
# distutils: extra_compile_args = -O3 -std=c++17
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""GPT-2's vocab.json and merges.txt read natively: the common case fast, everything else left to Python.

bpe_fast.formats owns both formats, their byte mapping and every error. It calls these first; each returns the
tokens as arrays when the file is plainly well formed, or None when anything is unusual (a character outside
the mapping, invalid UTF-8, a number json.loads would read otherwise, a line that is not two tokens, ...), and
formats then reads the file in Python, which gives the same result or the error naming the line. So what is
read never differs from the Python reader's result; the loops touch no Python object.

A token's characters go to bytes through `char_to_byte` (int16, indexed by code point; -1: not in the mapping),
which bpe_fast.formats makes from its mapping.
"""
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.stdint cimport int16_t, int64_t, uint8_t, uint32_t
from libc.string cimport memcmp
from libcpp.vector cimport vector

from bpe_fast._jsonl cimport _string
from bpe_fast._scan cimport utf8_first_error

import numpy as np


cdef inline bint _json_space(uint8_t c) noexcept nogil:
    return c == 0x20 or c == 0x09 or c == 0x0A or c == 0x0D


cdef inline Py_ssize_t _skip_space(const uint8_t* s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    while i < n and _json_space(s[i]):
        i += 1
    return i


cdef bint _map_chars(const uint8_t* s, Py_ssize_t n, const int16_t* table, Py_ssize_t table_n,
                     vector[uint8_t]* out) noexcept nogil:
    """Append the byte each character of the UTF-8 s[0:n] stands for; False at a character outside the mapping
    or a byte sequence that is not a one- or two-byte UTF-8 character (the mapping's characters are below
    U+0800)."""
    cdef Py_ssize_t i = 0
    cdef uint32_t cp
    cdef uint8_t c
    while i < n:
        c = s[i]
        if c < 0x80:
            cp = c
            i += 1
        elif 0xC2 <= c <= 0xDF and i + 1 < n and (s[i + 1] & 0xC0) == 0x80:
            cp = ((<uint32_t>(c & 0x1F)) << 6) | (s[i + 1] & 0x3F)
            i += 2
        else:
            return False
        if cp >= <uint32_t>table_n or table[cp] < 0:
            return False
        out.push_back(<uint8_t>table[cp])
    return True


cdef list _tokens(vector[uint8_t]& pool, vector[int64_t]& offsets, Py_ssize_t first, Py_ssize_t step,
                  Py_ssize_t span):
    """[pool[offsets[k]:offsets[k + span]] for k in range(first, len(offsets) - span, step)] as bytes objects:
    the readers' results, made once their loop is done."""
    cdef const char* p = <const char*>pool.data()
    cdef Py_ssize_t k, last = <Py_ssize_t>offsets.size() - span
    cdef list out = []
    for k in range(first, last, step):
        out.append(PyBytes_FromStringAndSize(p + offsets[k], offsets[k + span] - offsets[k]))
    return out


cdef object _int64_array(vector[int64_t]& values):
    if values.empty():
        return np.zeros(0, dtype=np.int64)
    return np.array(<int64_t[:values.size()]>values.data(), dtype=np.int64)


def parse_vocab(const uint8_t[::1] data, const int16_t[::1] char_to_byte, int64_t max_id):
    """(tokens, ids) of a vocab.json's bytes that is one flat JSON object {token: id} (each id a plain decimal
    int in 0..max_id: no sign, fraction, exponent or leading zero): the tokens (bytes) and ids (int64 array) in
    file order; or None for anything else. Duplicates are left to the caller.

    >>> import numpy as np
    >>> table = np.full(300, -1, dtype=np.int16); table[ord("a")] = 97; table[0x120] = 32
    >>> tokens, ids = parse_vocab(b' {"a": 5, "\\u0120a":0}\\n', table, 10)
    >>> tokens, ids.tolist()
    ([b'a', b' a'], [5, 0])
    >>> parse_vocab(b'{"a": 5.0}', table, 10) is None, parse_vocab(b'{"b": 5}', table, 10) is None
    (True, True)
    """
    cdef Py_ssize_t n = data.shape[0], i = 0, start, digits
    cdef const uint8_t* s = &data[0] if n else NULL
    cdef const int16_t* table = &char_to_byte[0] if char_to_byte.shape[0] else NULL
    cdef Py_ssize_t table_n = char_to_byte.shape[0]
    cdef vector[uint8_t] pool, key
    cdef vector[int64_t] offsets, ids
    cdef int64_t value
    cdef bint escaped = False, ok = False
    offsets.push_back(0)
    with nogil:
        i = _skip_space(s, 0, n)
        if i < n and s[i] == 0x7B:                       # {
            i = _skip_space(s, i + 1, n)
            if i < n and s[i] == 0x7D:                   # {}
                ok = True
                i += 1
            while i < n and s[i] == 0x22:                # a member: "token": id
                key.clear()
                i = _string(s, i + 1, n, &key, &escaped)
                if i < 0 or not _map_chars(key.data(), <Py_ssize_t>key.size(), table, table_n, &pool):
                    break
                offsets.push_back(pool.size())
                i = _skip_space(s, i, n)
                if i >= n or s[i] != 0x3A:               # :
                    break
                i = _skip_space(s, i + 1, n)
                start = i
                value = 0
                while i < n and 0x30 <= s[i] <= 0x39 and i - start < 12:
                    value = value * 10 + (s[i] - 0x30)
                    i += 1
                digits = i - start
                if (digits == 0 or (digits > 1 and s[start] == 0x30) or value > max_id
                        or (i < n and (s[i] == 0x2E or s[i] == 0x65 or s[i] == 0x45 or 0x30 <= s[i] <= 0x39))):
                    break
                ids.push_back(value)
                i = _skip_space(s, i, n)
                if i < n and s[i] == 0x2C:               # ,
                    i = _skip_space(s, i + 1, n)
                    continue
                if i < n and s[i] == 0x7D:               # }
                    ok = True
                    i += 1
                break
            if ok and _skip_space(s, i, n) != n:
                ok = False
    if not ok:
        return None
    return _tokens(pool, offsets, 0, 1, 1), _int64_array(ids)


def parse_merges(const uint8_t[::1] data, const int16_t[::1] char_to_byte):
    """(lefts, rights, joined, lines) of a merges.txt's bytes whose every line is two tokens separated by one
    space (the second may end in carriage returns), an empty line (or only carriage returns), or, first,
    "#version...": merge k is (lefts[k], rights[k]), joined[k] their concatenation, from line lines[k] (1-based,
    an int64 array); or None for anything else.

    >>> import numpy as np
    >>> table = np.full(300, -1, dtype=np.int16); table[ord("a")] = 97; table[0x120] = 32
    >>> lefts, rights, joined, lines = parse_merges("#version: 2\\n\\u0120 a\\n\\n\\u0120a a\\r\\n".encode(), table)
    >>> lefts, rights, joined, lines.tolist()
    ([b' ', b' a'], [b'a', b'a'], [b' a', b' aa'], [2, 4])
    >>> parse_merges(b"a  a\\n", table) is None, parse_merges(b"a b\\n", table) is None
    (True, True)
    """
    cdef Py_ssize_t n = data.shape[0], i = 0, line_start, line_end, space, k
    cdef const uint8_t* s = &data[0] if n else NULL
    cdef const int16_t* table = &char_to_byte[0] if char_to_byte.shape[0] else NULL
    cdef Py_ssize_t table_n = char_to_byte.shape[0]
    cdef vector[uint8_t] pool
    cdef vector[int64_t] offsets, lines
    cdef int64_t line = 0
    cdef bint ok = True
    offsets.push_back(0)
    with nogil:
        while i < n and ok:
            line += 1
            line_start = i
            while i < n and s[i] != 0x0A:
                i += 1
            line_end = i
            i += 1                                       # past the newline
            if line == 1 and line_end - line_start >= 8 and memcmp(s + line_start, b"#version", 8) == 0:
                ok = utf8_first_error(s + line_start, line_end - line_start) < 0
                continue
            while line_end > line_start and s[line_end - 1] == 0x0D:
                line_end -= 1
            if line_end == line_start:
                continue                                 # a blank line
            space = -1
            for k in range(line_start, line_end):
                if s[k] == 0x20:
                    if space >= 0:
                        space = -2                       # a second space
                        break
                    space = k
            if space <= line_start or space + 1 >= line_end:
                ok = False                               # no space, two, or an empty token
                break
            if not _map_chars(s + line_start, space - line_start, table, table_n, &pool):
                ok = False
                break
            offsets.push_back(pool.size())
            if not _map_chars(s + space + 1, line_end - space - 1, table, table_n, &pool):
                ok = False
                break
            offsets.push_back(pool.size())
            lines.push_back(line)
    if not ok:
        return None
    return (_tokens(pool, offsets, 0, 2, 1), _tokens(pool, offsets, 1, 2, 1), _tokens(pool, offsets, 0, 2, 2),
            _int64_array(lines))
