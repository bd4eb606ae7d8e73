# distutils: language = c++
# distutils: extra_compile_args = -O3 -std=c++17
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The text field of JSON lines, read natively (bpe_fast.inputs reads .jsonl files with it).

extract_texts walks whole lines of a block and, for each line that is a JSON object with the field as a string,
appends the field's UTF-8 (escapes decoded). It accepts only what it is sure `json.loads` reads the same way:
strict JSON (RFC 8259) in valid UTF-8, the field given once (its key compared once decoded), its value a string
without lone surrogates. Any other line (invalid JSON, a missing or non-string field, a duplicate key,
nesting or numbers past json.loads's limits, ...) stops the walk there: the caller reads that line with json.loads, which
gives its value or the error that names it, and calls again after it. So what is read never differs from what
json.loads would give; only the common case is fast. Blank lines (only whitespace, as bytes.strip() sees it) are
skipped. The loops touch no Python object.
"""
cimport cython
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.stdint cimport int64_t, uint8_t, uint32_t
from libc.string cimport memcmp
from libcpp.vector cimport vector

from bpe_fast._revec cimport append_or_end, push_or_end, resize_or_end
from bpe_fast._scan cimport line_end, utf8_first_error

from bpe_fast._numpy import np     # (NumPy imported when first used: see there)

cdef extern from *:
    """
    #include <cstdint>
    #if defined(__SSE2__) || defined(_M_X64) || (defined(_M_IX86_FP) && _M_IX86_FP >= 2)
    #include <emmintrin.h>
    #define BPE_FAST_JSONL_SSE2 1
    #endif
    // The index of the first byte of s[i:n] that is not plain in a JSON string (a quote, a backslash, a control
    // character, or not ASCII), or n: 16 bytes at a time where there is SSE2.
    static Py_ssize_t bpe_fast_json_plain_run(const uint8_t* s, Py_ssize_t i, Py_ssize_t n) {
    #if defined(BPE_FAST_JSONL_SSE2)
        const __m128i quote = _mm_set1_epi8(0x22), backslash = _mm_set1_epi8(0x5C), space = _mm_set1_epi8(0x20);
        while (i + 16 <= n) {
            __m128i x = _mm_loadu_si128((const __m128i*)(s + i));
            // signed: bytes of 0x80 and more are negative, so below 0x20 too
            __m128i stop = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, backslash)),
                                        _mm_cmplt_epi8(x, space));
            int mask = _mm_movemask_epi8(stop);
            if (mask)
                return i + __builtin_ctz((unsigned)mask);
            i += 16;
        }
    #endif
        while (i < n && s[i] != 0x22 && s[i] != 0x5C && s[i] >= 0x20 && s[i] < 0x80)
            i++;
        return i;
    }
    """
    Py_ssize_t plain_run "bpe_fast_json_plain_run"(const uint8_t* s, Py_ssize_t i, Py_ssize_t n) noexcept nogil


cdef inline bint _blank(uint8_t c) noexcept nogil:
    """What bytes.strip() strips: JSON's whitespace and \\x0b, \\x0c."""
    return c == 0x20 or (0x09 <= c <= 0x0D)


cdef inline int _hex(uint8_t c) noexcept nogil:
    if 0x30 <= c <= 0x39:
        return c - 0x30
    if 0x41 <= c <= 0x46:
        return c - 0x41 + 10
    if 0x61 <= c <= 0x66:
        return c - 0x61 + 10
    return -1


cdef inline int _hex4(const uint8_t* s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    """The value of the 4 hex digits s[i:i+4], or -1."""
    cdef int a, b, c, d
    if i + 4 > n:
        return -1
    a, b, c, d = _hex(s[i]), _hex(s[i + 1]), _hex(s[i + 2]), _hex(s[i + 3])
    if a < 0 or b < 0 or c < 0 or d < 0:
        return -1
    return (a << 12) | (b << 8) | (c << 4) | d


cdef inline void _put_code_point(vector[uint8_t]* out, uint32_t c) noexcept nogil:
    if c < 0x80:
        push_or_end(out[0], <uint8_t>c)
    elif c < 0x800:
        push_or_end(out[0], <uint8_t>(0xC0 | (c >> 6)))
        push_or_end(out[0], <uint8_t>(0x80 | (c & 0x3F)))
    elif c < 0x10000:
        push_or_end(out[0], <uint8_t>(0xE0 | (c >> 12)))
        push_or_end(out[0], <uint8_t>(0x80 | ((c >> 6) & 0x3F)))
        push_or_end(out[0], <uint8_t>(0x80 | (c & 0x3F)))
    else:
        push_or_end(out[0], <uint8_t>(0xF0 | (c >> 18)))
        push_or_end(out[0], <uint8_t>(0x80 | ((c >> 12) & 0x3F)))
        push_or_end(out[0], <uint8_t>(0x80 | ((c >> 6) & 0x3F)))
        push_or_end(out[0], <uint8_t>(0x80 | (c & 0x3F)))


cdef Py_ssize_t _string(const uint8_t* s, Py_ssize_t i, Py_ssize_t n, vector[uint8_t]* out,
                        bint* escaped) noexcept nogil:
    """The JSON string whose opening quote is s[i - 1]: returns the index after its closing quote, or -1 if it
    is not one json.loads reads as this would. With out, its value's UTF-8 is appended (a lone surrogate escape
    is then -1: UTF-8 cannot hold it); escaped: set if it holds an escape."""
    cdef uint8_t c
    cdef Py_ssize_t k, start
    cdef int u, v
    while i < n:
        start = i
        i = plain_run(s, i, n)                         # a run of plain ASCII
        if out != NULL and i > start:
            append_or_end(out[0], s + start, s + i)
        if i >= n:
            return -1
        c = s[i]
        if c == 0x22:
            return i + 1
        if c < 0x20:
            return -1                                  # json.loads (strict) refuses control characters
        if c >= 0x80:                                  # a run of bytes past ASCII: whole valid UTF-8 characters
            k = i + 1
            while k < n and s[k] >= 0x80:
                k += 1
            if utf8_first_error(s + i, k - i) >= 0:    # the rule bytes.decode follows (no surrogates either)
                return -1
            if out != NULL:
                append_or_end(out[0], s + i, s + k)
            i = k
            continue
        escaped[0] = True                              # a backslash
        if i + 1 >= n:
            return -1
        c = s[i + 1]
        i += 2
        if c == 0x75:                                  # \uXXXX
            u = _hex4(s, i, n)
            if u < 0:
                return -1
            i += 4
            if out == NULL:
                continue
            if 0xD800 <= u <= 0xDBFF:                  # a high surrogate: a pair only with a low one next
                if i + 1 < n and s[i] == 0x5C and s[i + 1] == 0x75:
                    v = _hex4(s, i + 2, n)
                    if 0xDC00 <= v <= 0xDFFF:
                        _put_code_point(out, 0x10000 + ((<uint32_t>(u - 0xD800)) << 10) + <uint32_t>(v - 0xDC00))
                        i += 6
                        continue
                return -1
            if 0xDC00 <= u <= 0xDFFF:
                return -1
            _put_code_point(out, <uint32_t>u)
            continue
        if c == 0x22 or c == 0x5C or c == 0x2F:
            pass
        elif c == 0x62:
            c = 0x08
        elif c == 0x66:
            c = 0x0C
        elif c == 0x6E:
            c = 0x0A
        elif c == 0x72:
            c = 0x0D
        elif c == 0x74:
            c = 0x09
        else:
            return -1
        if out != NULL:
            push_or_end(out[0], c)
    return -1


cdef Py_ssize_t _number(const uint8_t* s, Py_ssize_t i, Py_ssize_t n, Py_ssize_t max_digits) noexcept nogil:
    """The JSON number starting at s[i] (or NaN, Infinity, -Infinity, which json.loads takes too): the index
    after it, or -1."""
    cdef Py_ssize_t start = i
    if i + 3 <= n and memcmp(s + i, b"NaN", 3) == 0:
        return i + 3
    if i < n and s[i] == 0x2D:
        i += 1
    if i + 8 <= n and memcmp(s + i, b"Infinity", 8) == 0:
        return i + 8
    if i >= n:
        return -1
    if s[i] == 0x30:
        i += 1
    elif 0x31 <= s[i] <= 0x39:
        while i < n and 0x30 <= s[i] <= 0x39:
            i += 1
    else:
        return -1                                      # -Infinity and the like: left to json.loads
    if i < n and s[i] == 0x2E:
        i += 1
        if i >= n or not (0x30 <= s[i] <= 0x39):
            return -1
        while i < n and 0x30 <= s[i] <= 0x39:
            i += 1
    if i < n and (s[i] == 0x65 or s[i] == 0x45):
        i += 1
        if i < n and (s[i] == 0x2B or s[i] == 0x2D):
            i += 1
        if i >= n or not (0x30 <= s[i] <= 0x39):
            return -1
        while i < n and 0x30 <= s[i] <= 0x39:
            i += 1
    return i if i - start < max_digits else -1


cdef Py_ssize_t _value(const uint8_t* s, Py_ssize_t i, Py_ssize_t n, int depth, const Limits* limits) noexcept nogil:
    """The JSON value starting at s[i] (no space before it): the index after it, or -1."""
    cdef uint8_t c
    cdef bint escaped = False
    if i >= n:
        return -1
    c = s[i]
    if c == 0x22:
        return _string(s, i + 1, n, NULL, &escaped)
    if c == 0x7B or c == 0x5B:
        if depth >= limits.depth:
            return -1
        i = _skip_space(s, i + 1, n)
        if i < n and s[i] == (0x7D if c == 0x7B else 0x5D):
            return i + 1
        while True:
            if c == 0x7B:                              # "key": value
                if i >= n or s[i] != 0x22:
                    return -1
                i = _string(s, i + 1, n, NULL, &escaped)
                if i < 0:
                    return -1
                i = _skip_space(s, i, n)
                if i >= n or s[i] != 0x3A:
                    return -1
                i = _skip_space(s, i + 1, n)
            i = _value(s, i, n, depth + 1, limits)
            if i < 0:
                return -1
            i = _skip_space(s, i, n)
            if i < n and s[i] == 0x2C:
                i = _skip_space(s, i + 1, n)
                continue
            if i < n and s[i] == (0x7D if c == 0x7B else 0x5D):
                return i + 1
            return -1
    if c == 0x74:
        return i + 4 if i + 4 <= n and memcmp(s + i, b"true", 4) == 0 else -1
    if c == 0x66:
        return i + 5 if i + 5 <= n and memcmp(s + i, b"false", 5) == 0 else -1
    if c == 0x6E:
        return i + 4 if i + 4 <= n and memcmp(s + i, b"null", 4) == 0 else -1
    return _number(s, i, n, limits.digits)


cdef int _line_text(const uint8_t* s, Py_ssize_t n, const uint8_t* field, Py_ssize_t field_n,
                    vector[uint8_t]* out, const Limits* limits) noexcept nogil:
    """One line s[0:n] (without its newline): 1 if it is an object whose field is a string (its UTF-8
    appended to out), 0 if it is blank, -1 for anything else (out as it was)."""
    cdef Py_ssize_t i = 0, key, end, before = out.size()
    cdef bint found = False, escaped, is_field
    cdef vector[uint8_t] spelled                       # a key written with escapes, decoded
    while i < n and _blank(s[i]):
        i += 1
    if i == n:
        return 0
    i = _skip_space(s, 0, n)
    if i >= n or s[i] != 0x7B:
        return -1
    i = _skip_space(s, i + 1, n)
    if i < n and s[i] == 0x7D:
        return -1                                      # no field
    while True:
        if i >= n or s[i] != 0x22:
            break
        key = i + 1
        escaped = False
        i = _string(s, key, n, NULL, &escaped)
        if i < 0:
            break
        end = i - 1
        if escaped:                                    # compared as json.loads would: decoded
            spelled.clear()
            if _string(s, key, n, &spelled, &escaped) < 0:
                break                                  # a lone surrogate in a key
            is_field = <Py_ssize_t>spelled.size() == field_n and (
                field_n == 0 or memcmp(spelled.data(), field, field_n) == 0)
        else:
            is_field = end - key == field_n and memcmp(s + key, field, field_n) == 0
        i = _skip_space(s, i, n)
        if i >= n or s[i] != 0x3A:
            break
        i = _skip_space(s, i + 1, n)
        if is_field:
            if found or i >= n or s[i] != 0x22:       # given twice (json.loads keeps the last), or not a string
                break
            found = True
            i = _string(s, i + 1, n, out, &escaped)
        else:
            i = _value(s, i, n, 1, limits)
        if i < 0:
            break
        i = _skip_space(s, i, n)
        if i < n and s[i] == 0x2C:
            i = _skip_space(s, i + 1, n)
            continue
        if i < n and s[i] == 0x7D:
            if found and _skip_space(s, i + 1, n) == n:
                return 1
        break
    resize_or_end(out[0], before)
    return -1


def extract_texts(data, Py_ssize_t start, field, int64_t first_line, Py_ssize_t max_digits=4300,
                  int max_depth=250):
    """The text field of the JSON lines of data[start:] (bytes-like holding whole lines; the last may lack its
    newline), up to the first line that is not read here (see the module's docstring).

    Returns (texts, lengths, lines, stop, next_line): texts, the fields' UTF-8 one after another (bytes);
    lengths, each one's length, and lines, each one's line number (int64 arrays; data[start:]'s first line is
    number first_line); stop, the offset in data of the line not read (-1: every line was read); next_line, the
    number of that line (or of the line after the last). A number of max_digits characters or more, or nesting
    max_depth deep or more, is left to json.loads (give sys.get_int_max_str_digits() and a part of
    sys.getrecursionlimit(): json.loads refuses what goes past them).

    Worked example: extract_texts(b'{"text": "a\\\\u00e9"}\\n\\n{"text": 1}\\n', 0, b"text", 1)
    -> (b"a\\xc3\\xa9", [3], [1], 21, 3)."""
    cdef const uint8_t[::1] view = data
    cdef const uint8_t[::1] key = field
    cdef Py_ssize_t n = view.shape[0], i = start, end, stop = -1, before
    cdef const uint8_t* s = &view[0] if n else NULL
    cdef int64_t line = first_line
    cdef vector[uint8_t] out
    cdef vector[int64_t] lengths, lines
    cdef int found
    cdef Limits limits
    limits.digits, limits.depth = max_digits, max_depth
    if start < 0 or start > n:
        raise ValueError(f"start {start} is outside the data ({n} bytes)")
    out.reserve(n - start)                             # the texts are never longer than their lines
    with nogil:
        while i < n:
            end = line_end(s, i, n)
            before = out.size()
            found = _line_text(s + i, end - i, &key[0] if key.shape[0] else <const uint8_t*>b"", key.shape[0],
                               &out, &limits)
            if found < 0:
                stop = i
                break
            if found:
                lengths.push_back(out.size() - before)
                lines.push_back(line)
            line += 1
            i = end + 1
    texts = PyBytes_FromStringAndSize(<const char*>out.data(), out.size()) if out.size() else b""
    return texts, _int64_array(lengths), _int64_array(lines), stop, line


cdef object _int64_array(vector[int64_t]& values):
    result = np.empty(values.size(), dtype=np.int64)
    cdef int64_t[::1] view = result
    cdef Py_ssize_t k
    for k in range(<Py_ssize_t>values.size()):
        view[k] = values[k]
    return result
