# distutils: language = c++
# distutils: extra_compile_args = -O3 -std=c++17
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Kernels for looking at a tokenizer and its corpus (bpe_fast.curve, bpe_fast.train's corpus statistics).

* tally_tokens: walk the ids of a text beside its UTF-8 bytes, counting each id by the script class of the
  text it covers (the first character in the token that is not whitespace);
* count_words: runs of characters that are not whitespace;
* propagate: push occurrence counts from each merged token down to its two parts (the compression curve);
* count_distinct: distinct byte strings among a table's pre-tokens (a table may list one twice);
* merge_forest: a tokenizer's merged tokens in rank order with the ranks of their parts;
* sort_byte_strings: the order that sorts byte strings as Python sorts bytes, and which are UTF-8
  (bpe_fast.encoding's sorted vocabulary);
* first_spans: each distinct byte string's first among strings of a pool (encode_with_unstable's completions,
  as the bytes of their ids);
* covering_tokens: where each of several texts' tokens begin, and end once they cover its first bytes
  (encode_with_unstable's completions).

No Python object is touched inside the loops; bpe_fast.curve checks the arguments.

Worked example for propagate (bpe_fast.curve explains why it gives the curve): ranks 0 = "ab" (a, b),
1 = "abc" (ab, c); the text "abcab" encodes as [abc, ab], so weights start as [1, 1] (one "ab", one "abc").
Rank 1 passes its 1 to its left part, rank 0: weights [2, 1]. With 0 merged tokens the text has
2 + (2 + 1) = 5 tokens, with 1 it has 2 + 1 = 3, with 2 it has 2.
"""
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.ref cimport Py_INCREF
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcmp, memcpy, memmove
from libcpp.algorithm cimport sort as cpp_sort
from libcpp.vector cimport vector

from bpe_fast._numpy import np     # (NumPy imported when first used: see there)

from ._revec cimport push_or_end
from ._scan cimport utf8_first_error
from ._hashing cimport (EMPTY_INDEX, Slot, hash_bytes, seed_hash_bytes, load_head, next_slot, slot_place, slot_tag,
                        table_size)

hash_seed = seed_hash_bytes()     # the key of this module's hash_bytes (see _hashing.pxd)


cdef inline Py_ssize_t _char_at(const uint8_t* s, Py_ssize_t i, Py_ssize_t n, uint32_t* cp) noexcept nogil:
    """Decode the (valid) UTF-8 character starting at s[i]; returns its length in bytes."""
    cdef uint8_t b = s[i]
    if b < 0x80:
        cp[0] = b
        return 1
    if b < 0xE0 and i + 1 < n:
        cp[0] = ((b & 0x1F) << 6) | (s[i + 1] & 0x3F)
        return 2
    if b < 0xF0 and i + 2 < n:
        cp[0] = ((b & 0x0F) << 12) | ((s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F)
        return 3
    if i + 3 < n:
        cp[0] = ((b & 0x07) << 18) | ((s[i + 1] & 0x3F) << 12) | ((s[i + 2] & 0x3F) << 6) | (s[i + 3] & 0x3F)
        return 4
    cp[0] = 0xFFFD          # a truncated sequence (not in valid UTF-8)
    return 1



cdef inline uint8_t _class_of(uint32_t cp, const uint8_t* bmp, uint8_t astral_cjk,
                              uint8_t astral_other) noexcept nogil:
    if cp < 0x10000:
        return bmp[cp]
    if 0x20000 <= cp < 0x40000:         # CJK ideographs, extensions B and after
        return astral_cjk
    return astral_other


def tally_tokens(const uint8_t[::1] data, const int32_t[::1] ids, const int64_t[::1] lengths,
                 const uint8_t[::1] bmp, int64_t[:, ::1] counts, int64_t[::1] class_bytes, int space,
                 int astral_cjk, int astral_other):
    """Add each token of `ids` (the encoding of the valid UTF-8 `data`; token k covers the next lengths[ids[k]]
    bytes) to counts[id, class] and its bytes to class_bytes[class], where class is bmp[code point] (U+20000
    to U+3FFFF: astral_cjk; the rest of the astral planes: astral_other) of the first character in the token
    that is not of class `space` (a token starting inside a character: from that character), or `space` if
    there is none. With one column, every token counts in column 0 and no character is looked at.
    ValueError when the tokens' bytes do not add up to len(data)."""
    cdef Py_ssize_t n = data.shape[0], ntok = ids.shape[0], size = lengths.shape[0]
    cdef Py_ssize_t ncls = counts.shape[1], k = 0, pos = 0, p, end, step
    cdef int32_t t
    cdef int64_t length
    cdef uint32_t cp
    cdef uint8_t cls
    cdef const uint8_t* s = &data[0] if n else NULL
    cdef const uint8_t* table = &bmp[0]
    cdef bint bad = False, changed = False
    if counts.shape[0] < size or class_bytes.shape[0] < ncls or bmp.shape[0] < 0x10000:
        raise ValueError("counts must have a row per id, class_bytes a cell per column, bmp 65536 entries")
    if ncls > 1:                # every class a token can be given must be a column of counts
        for p in range(0x10000):
            if table[p] >= ncls:
                raise ValueError(f"bmp[{p:#x}] is class {table[p]}, and counts has {ncls} columns")
        for p, name in ((space, "space"), (astral_cjk, "astral_cjk"), (astral_other, "astral_other")):
            if not 0 <= p < ncls:
                raise ValueError(f"{name} is class {p}, and counts has {ncls} columns")
    with nogil:
        for k in range(ntok):
            t = ids[k]
            if t < 0 or t >= size:
                bad = True
                break
            length = lengths[t]
            end = pos + length
            if length < 0 or end > n:
                bad = True
                break
            cls = 0
            if ncls > 1:
                cls = <uint8_t>space
            if ncls > 1 and length > 0:     # a token of no bytes has no character: `space` (and pos may be n)
                p = pos
                while p > 0 and pos - p < 3 and (s[p] & 0xC0) == 0x80:
                    p -= 1              # the token starts inside a character: classify that character
                while p < end:
                    step = _char_at(s, p, n, &cp)
                    cls = _class_of(cp, table, <uint8_t>astral_cjk, <uint8_t>astral_other)
                    if cls != space:
                        break
                    p += step
            if cls >= ncls > 1:         # (bmp's classes were checked, but another thread may write them since)
                changed = True
                break
            counts[t, cls] += 1
            class_bytes[cls] += length
            pos = end
    if changed:
        raise RuntimeError("bmp changed while it was read (another thread writes to it)")
    if bad or pos != n:
        raise ValueError(f"the tokens' bytes do not make up the text (token {k} of {ntok}, byte {pos} of {n})")


def count_words(const uint8_t[::1] data, const uint8_t[::1] bmp, int space, int astral_cjk, int astral_other):
    """The number of words of the valid UTF-8 `data`: maximal runs of characters whose class (as in
    tally_tokens) is not `space`."""
    cdef Py_ssize_t n = data.shape[0], i = 0
    cdef int64_t words = 0
    cdef uint8_t blank, after_blank = 1          # the previous character was blank (or there was none)
    cdef uint8_t ascii_blank[128]
    cdef uint32_t cp
    cdef const uint8_t* s = &data[0] if n else NULL
    cdef const uint8_t* table = &bmp[0]
    if bmp.shape[0] < 0x10000:
        raise ValueError("bmp must have 65536 entries")
    for i in range(128):
        ascii_blank[i] = table[i] == space
    i = 0
    with nogil:
        while i < n:
            if s[i] < 0x80:         # ASCII: the common case, a table of 128 and no branch
                blank = ascii_blank[s[i]]
                i += 1
            else:
                i += _char_at(s, i, n, &cp)
                blank = _class_of(cp, table, <uint8_t>astral_cjk, <uint8_t>astral_other) == space
            words += after_blank & (blank ^ 1)
            after_blank = blank
    return words


def propagate(const int32_t[::1] left, const int32_t[::1] right, int64_t[:, ::1] weights):
    """For r from the last rank down to 0: add row r of weights to the rows of its parts left[r] and right[r]
    (-1: a byte, no row). Each part's rank must be below r (bpe_fast.curve checks). Afterwards row r is how many
    times token r occurs in the merge trees of the counted tokens (its own occurrences included)."""
    cdef Py_ssize_t nranks = left.shape[0], ncls = weights.shape[1], r, c
    cdef int32_t a, b
    if right.shape[0] != nranks or weights.shape[0] != nranks:
        raise ValueError("left, right and weights must have a row per rank")
    left = np.array(left, dtype=np.int32)       # its own copies, checked once, then read without the GIL:
    right = np.array(right, dtype=np.int32)     # another thread may write the caller's (a MergeTrees it keeps)
    for r in range(nranks):     # a part at or after its token's rank (or below -1) was added out of the array
        if not (-1 <= left[r] < r and -1 <= right[r] < r):
            raise ValueError(f"rank {r}: its parts {left[r]} and {right[r]} must be ranks below it (or -1)")
    with nogil:
        for r in range(nranks - 1, -1, -1):
            a = left[r]
            b = right[r]
            if a >= 0:
                for c in range(ncls):
                    weights[a, c] += weights[r, c]
            if b >= 0:
                for c in range(ncls):
                    weights[b, c] += weights[r, c]


cdef enum:
    DISTINCT_AHEAD = 32     # count_distinct hashes this many pre-tokens ahead (a power of two)


cdef extern from *:
    void prefetch "__builtin_prefetch" (const void*) noexcept nogil


def count_distinct(const uint8_t[::1] tokens, const int64_t[::1] offsets):
    """How many distinct byte strings tokens[offsets[k]:offsets[k + 1]] there are (a hash set of them, equal
    hashes confirmed byte by byte).

    A table of millions of pre-tokens is far bigger than the cache, and checking one reads its slot, then the
    offsets and bytes of the pre-token there, each at random and each needing the one before: so each is
    hashed DISTINCT_AHEAD pre-tokens before it is checked, its slot asked for then (a prefetch, which does not
    wait), the offsets of the pre-token in that slot a third of the way, and its bytes two thirds."""
    cdef Py_ssize_t n = offsets.shape[0] - 1, k, q
    cdef vector[Slot] slots
    cdef uint64_t mask, h
    cdef uint64_t ahead[DISTINCT_AHEAD]     # the hashes of the pre-tokens k .. k + DISTINCT_AHEAD - 1
    cdef const uint8_t* base = &tokens[0] if tokens.shape[0] else <const uint8_t*>b""    # (not NULL: memcmp of 0 bytes)
    cdef const uint8_t* end = base + tokens.shape[0]
    cdef const int64_t* off = &offsets[0]
    cdef Slot empty
    cdef const Slot* seen
    cdef int64_t distinct = 0
    if n < 0:
        raise ValueError("offsets must have at least one entry")
    if n >= 2 ** 31 - 1:
        raise ValueError("too many pre-tokens to count")
    if off[0] != 0 or off[n] != tokens.shape[0]:
        raise ValueError("offsets must start at 0 and end at len(tokens)")
    _check_rising(off, n, "offsets")
    empty.index = EMPTY_INDEX
    empty.tag = 0
    with nogil:
        mask = table_size(n) - 1
        slots.assign(mask + 1, empty)
        for q in range(min(n, DISTINCT_AHEAD)):
            ahead[q] = _hash_of(base, off, q, end)
            prefetch(&slots[ahead[q] & mask])
        for k in range(n):
            h = ahead[k & (DISTINCT_AHEAD - 1)]
            q = k + DISTINCT_AHEAD
            if q < n:
                ahead[q & (DISTINCT_AHEAD - 1)] = _hash_of(base, off, q, end)
                prefetch(&slots[ahead[q & (DISTINCT_AHEAD - 1)] & mask])
            q = k + DISTINCT_AHEAD * 2 // 3
            if q < n:
                seen = &slots[ahead[q & (DISTINCT_AHEAD - 1)] & mask]
                if seen.index != EMPTY_INDEX and seen.tag == slot_tag(ahead[q & (DISTINCT_AHEAD - 1)]):
                    prefetch(off + seen.index)
            q = k + DISTINCT_AHEAD // 3
            if q < n:
                seen = &slots[ahead[q & (DISTINCT_AHEAD - 1)] & mask]
                if seen.index != EMPTY_INDEX and seen.tag == slot_tag(ahead[q & (DISTINCT_AHEAD - 1)]):
                    prefetch(base + off[seen.index])
            if _add_new(slots.data(), mask, h, <int32_t>k, base, off, 1):
                distinct += 1
    return distinct


cdef inline bint _add_new(Slot* slots, uint64_t mask, uint64_t h, int32_t k, const uint8_t* base,
                          const int64_t* bounds, Py_ssize_t stride) noexcept nogil:
    """Add string k, base[bounds[k * stride]:bounds[k * stride + 1]] with hash h, to the hash set `slots`
    (strings by index, the same bounds for each) unless an equal one is there: True when it was added."""
    cdef const int64_t* mine = bounds + k * stride
    cdef const int64_t* theirs
    cdef int64_t length = mine[1] - mine[0]
    cdef uint64_t i = h & mask
    cdef int32_t j
    while True:
        j = slots[i].index
        if j == EMPTY_INDEX:
            slots[i].index = k
            slots[i].tag = slot_tag(h)
            return True
        theirs = bounds + j * stride
        if slots[i].tag == slot_tag(h) and theirs[1] - theirs[0] == length and \
                memcmp(base + theirs[0], base + mine[0], length) == 0:
            return False
        i = next_slot(i, mask)


def first_spans(const uint8_t[::1] pool, const int64_t[::1] starts, const int64_t[::1] stops):
    """The indices k, increasing, of the byte strings pool[starts[k]:stops[k]] that no string before them
    equals (a hash set of them, equal hashes confirmed byte by byte): each distinct one's first.

    >>> first_spans(b"abab", np.array([0, 2, 1, 0]), np.array([2, 4, 3, 0])).tolist()     # ab, ab, ba, ''
    [0, 2, 3]
    """
    cdef Py_ssize_t n = starts.shape[0], k, total = pool.shape[0], bad = -1
    cdef vector[Slot] slots
    cdef vector[int64_t] at         # each string's start and end, as read (and checked) once
    cdef uint64_t mask, h
    cdef const uint8_t* base = &pool[0] if total else <const uint8_t*>b""    # (not NULL: memcmp of 0 bytes)
    cdef const uint8_t* end = base + total
    cdef int64_t a, b, count = 0
    cdef Slot empty
    if stops.shape[0] != n:
        raise ValueError(f"starts and stops must have the same length, got {n} and {stops.shape[0]}")
    if n >= 2 ** 31 - 1:
        raise ValueError("too many strings")
    keep = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] out = keep
    empty.index = EMPTY_INDEX
    empty.tag = 0
    with nogil:
        mask = table_size(n) - 1
        slots.assign(mask + 1, empty)
        at.resize(2 * n)
        for k in range(n):
            a = starts[k]
            b = stops[k]
            if not 0 <= a <= b <= total:
                bad = k
                break
            at[2 * k] = a
            at[2 * k + 1] = b
            h = hash_bytes(base + a, b - a, load_head(base + a, b - a, end), end)
            if _add_new(slots.data(), mask, h, <int32_t>k, base, at.data(), 2):
                out[count] = k
                count += 1
    if bad >= 0:
        raise ValueError(f"string {bad} ({starts[bad]}:{stops[bad]}) is not within the pool's {total} bytes")
    return keep[:count]


def covering_tokens(const int32_t[::1] ids, const int64_t[::1] lengths, const int64_t[::1] bounds, int64_t size):
    """For texts laid end to end (text k is bytes bounds[k]:bounds[k + 1]) and `ids`, their tokens one after
    another (token t covering lengths[ids[t]] bytes): (first, stop), int64, where text k's tokens begin and
    the index past its first token that reaches byte bounds[k] + size; None when the tokens do not cover the
    texts exactly (a pattern that leaves text out), or a text is shorter than size.

    >>> covering_tokens(np.array([0, 1, 0], np.int32), np.array([1, 2]), np.array([0, 3, 4]), 1)
    (array([0, 2]), array([1, 3]))
    """
    cdef Py_ssize_t n = bounds.shape[0] - 1, nids = ids.shape[0], nlen = lengths.shape[0], k, t = 0, bad = -1
    cdef int64_t pos = 0, goal, length
    cdef int32_t i
    if n < 0:
        raise ValueError("bounds must have at least one entry")
    if size < 1:
        raise ValueError(f"size must be >= 1, got {size}")
    first = np.empty(n, dtype=np.int64)
    stop = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] vf = first
    cdef int64_t[::1] vs = stop
    with nogil:
        for k in range(n):
            if pos != bounds[k] or bounds[k + 1] - bounds[k] < size:
                bad = k
                break
            vf[k] = t
            goal = bounds[k] + size
            while pos < bounds[k + 1] and t < nids:
                i = ids[t]
                if i < 0 or i >= nlen or lengths[i] < 1:
                    bad = k
                    break
                pos += lengths[i]
                t += 1
                if pos >= goal and pos - lengths[i] < goal:
                    vs[k] = t
            if bad >= 0:
                break
    if bad >= 0 or t != nids or (n and pos != bounds[n]):
        return None
    return first, stop


cdef struct Span:
    uint64_t head      # the first 8 bytes, big-endian, zero-padded: most comparisons end with it
    const uint8_t* p
    int64_t n
    int64_t index


cdef bint _span_less(const Span& x, const Span& y) noexcept nogil:
    """x's bytes before y's as Python orders bytes (the first differing byte decides, a prefix comes first),
    equal ones by index. Different heads differ in a byte of the first 8 (padding zeros sort as a prefix
    does), so they decide; equal heads compare the rest."""
    if x.head != y.head:
        return x.head < y.head
    cdef int64_t m = x.n if x.n < y.n else y.n
    cdef int c = memcmp(x.p + 8, y.p + 8, m - 8) if m > 8 else 0
    if c != 0:
        return c < 0
    if x.n != y.n:
        return x.n < y.n
    return x.index < y.index


def sort_byte_strings(const uint8_t[::1] pool, const int64_t[::1] offsets, bint utf8_flags=True):
    """(order, utf8) for the byte strings pool[offsets[k]:offsets[k + 1]]: order (int64) lists their indices
    sorted as Python sorts bytes (equal ones by index), utf8 (uint8, in that sorted order) is 1 where the
    string is valid UTF-8 (all 0, unchecked, with utf8_flags False).

    >>> import numpy as np
    >>> order, utf8 = sort_byte_strings(b"abab\\xffb", np.array([0, 2, 3, 5, 6]))    # ab, a, b\\xff, b
    >>> order.tolist(), utf8.tolist()
    ([1, 0, 3, 2], [1, 1, 1, 0])
    """
    cdef Py_ssize_t n = offsets.shape[0] - 1, k
    cdef const uint8_t* base = &pool[0] if pool.shape[0] else NULL
    if n < 0:
        raise ValueError("offsets must have at least one entry")
    if n >= (<int64_t>1 << 32):
        raise ValueError(f"too many strings to sort ({n}; at most 2**32 - 1)")
    cdef vector[int64_t] own         # the offsets checked are the offsets used (another thread may write the
    own.assign(&offsets[0], &offsets[0] + n + 1)        # caller's array)
    cdef const int64_t* off = own.data()
    if off[0] != 0 or off[n] != pool.shape[0]:
        raise ValueError("offsets must start at 0 and end at len(pool)")
    _check_rising(off, n, "offsets")
    order = np.empty(n, dtype=np.int64)
    utf8 = np.empty(n, dtype=np.uint8)
    cdef int64_t[::1] vo = order
    cdef uint8_t[::1] vu = utf8
    cdef vector[uint8_t] valid
    cdef int64_t length
    cdef const uint8_t* end = base + pool.shape[0] if pool.shape[0] else NULL
    with nogil:
        if n:
            _sort_strings(base, off, n, &vo[0])
        valid.resize(n)
        for k in range(n if utf8_flags else 0):      # in the pool's order (read in sorted order, the checks took twice as long)
            length = off[k + 1] - off[k]
            valid[k] = length == 0 or (length <= 8 and _head8(base + off[k], length, end) & ASCII_BITS == 0) or (
                utf8_first_error(base + off[k], length) < 0)
        for k in range(n):
            vu[k] = valid[vo[k]]
    return order, utf8


cdef int _span_of(const int64_t[::1] offsets, Py_ssize_t size, int64_t i, int64_t* start, int64_t* stop) except -1:
    """start, stop = string i's offsets, read once each (another thread may write the caller's arrays: what is
    checked is what is used); ValueError unless i is one of the strings and its span lies in a pool of `size`
    bytes."""
    if not 0 <= i < offsets.shape[0] - 1:
        raise ValueError(f"index {i} is not one of the {offsets.shape[0] - 1} strings")
    start[0] = offsets[i]
    stop[0] = offsets[i + 1]
    if not 0 <= start[0] <= stop[0] <= size:
        raise ValueError(f"string {i}'s offsets ({start[0]}, {stop[0]}) do not fit the pool")
    return 0


def byte_strings(const uint8_t[::1] pool, const int64_t[::1] offsets, const int64_t[::1] ids):
    """[pool[offsets[i]:offsets[i + 1]] for i in ids], as bytes (ValueError naming an index out of range or a
    span outside the pool).

    >>> import numpy as np
    >>> byte_strings(b"abc", np.array([0, 1, 3]), np.array([1, 0]))
    [b'bc', b'a']
    """
    cdef Py_ssize_t k, n = ids.shape[0]
    cdef const char* base = <const char*>&pool[0] if pool.shape[0] else NULL
    cdef vector[int64_t] spans      # start, stop of each: checked, then used
    spans.resize(2 * n)
    for k in range(n):
        _span_of(offsets, pool.shape[0], ids[k], &spans[2 * k], &spans[2 * k + 1])
    result = PyList_New(n)          # (filled in place: appending took half as long again)
    cdef object item
    for k in range(n):
        item = PyBytes_FromStringAndSize(base + spans[2 * k] if base != NULL else NULL, spans[2 * k + 1] - spans[2 * k])
        Py_INCREF(item)
        PyList_SET_ITEM(result, k, item)
    return result


def prefix_range(const uint8_t[::1] pool, const int64_t[::1] offsets, const int64_t[::1] ids, const uint8_t[::1] prefix):
    """(lo, hi): the strings pool[offsets[i]:offsets[i + 1]] for i in ids, which are in the order Python sorts
    bytes (sort_byte_strings' order), that start with `prefix` are those of ids[lo:hi] (a binary search: only the
    strings it reads are checked to be in the pool).

    >>> import numpy as np
    >>> prefix_range(b"aabab", np.array([0, 1, 3, 5]), np.array([0, 1, 2]), b"a")    # a, ab, ab
    (0, 3)
    """
    cdef Py_ssize_t lo = 0, hi = ids.shape[0], mid, first
    cdef const uint8_t* base = &pool[0] if pool.shape[0] else NULL
    cdef const uint8_t* p = &prefix[0] if prefix.shape[0] else NULL
    cdef int64_t m = prefix.shape[0], start, stop
    while lo < hi:          # the first string not before the prefix
        mid = (lo + hi) >> 1
        _span_of(offsets, pool.shape[0], ids[mid], &start, &stop)
        if _against_prefix(base + start, stop - start, p, m) < 0:
            lo = mid + 1
        else:
            hi = mid
    first = lo
    hi = ids.shape[0]
    while lo < hi:          # the first string after every string that starts with it
        mid = (lo + hi) >> 1
        _span_of(offsets, pool.shape[0], ids[mid], &start, &stop)
        if _against_prefix(base + start, stop - start, p, m) <= 0:
            lo = mid + 1
        else:
            hi = mid
    return first, lo


def prefixed_strings(const uint8_t[::1] pool, const int64_t[::1] offsets, const int64_t[::1] ids,
                     const uint8_t[::1] text, const int64_t[::1] los, const int64_t[::1] his):
    """The strings text[:i] + pool[offsets[t]:offsets[t + 1]] for i = 1, 2, ... len(los) and t in
    ids[los[i - 1]:his[i - 1]], in that order, as (utf8_data, utf8_bounds, other_data, other_bounds): those
    that are valid UTF-8 back to back in utf8_data (bytes; string k is utf8_data[utf8_bounds[k]:utf8_bounds[k +
    1]], int64 bounds), the others in other_data, each group in the order above (encode_with_unstable's
    candidates: the bytes before a token that starts with the rest of the unstable bytes).

    >>> import numpy as np
    >>> prefixed_strings(b"ab\\xff", np.array([0, 1, 2, 3]), np.array([0, 1, 2]), b"xy", np.array([1]), np.array([3]))
    (b'xb', array([0, 2]), b'x\\xff', array([0, 2]))
    """
    cdef Py_ssize_t n_prefix = los.shape[0], i, k, total = 0, count = 0
    cdef int64_t lo, hi, start, stop
    if his.shape[0] != n_prefix or n_prefix > text.shape[0]:
        raise ValueError("los and his must have one entry a prefix length, at most len(text)")
    # each candidate's prefix length and token span, read once and checked (another thread may write the
    # caller's arrays: the loop below uses only these)
    cdef vector[int64_t] spans         # prefix length, start, stop; three a candidate
    for i in range(n_prefix):
        lo = los[i]
        hi = his[i]
        if not 0 <= lo <= hi <= ids.shape[0]:
            raise ValueError(f"the range of prefix {i + 1} ({lo}, {hi}) is not one of ids")
        for k in range(lo, hi):
            _span_of(offsets, pool.shape[0], ids[k], &start, &stop)
            spans.push_back(i + 1)
            spans.push_back(start)
            spans.push_back(stop)
            total += i + 1 + stop - start
            count += 1
    cdef vector[uint8_t] data, others
    utf8_bounds = np.zeros(count + 1, dtype=np.int64)
    other_bounds = np.zeros(count + 1, dtype=np.int64)
    cdef int64_t[::1] vb = utf8_bounds
    cdef int64_t[::1] ob = other_bounds
    cdef Py_ssize_t at = 0, good = 0, length, n_other = 0, other_at = total, front = 0, head
    cdef uint8_t* dst
    data.resize(total)
    with nogil:
        for k in range(count):
            head = spans[3 * k]
            start = spans[3 * k + 1]
            stop = spans[3 * k + 2]
            length = head + stop - start
            dst = data.data() + at
            memcpy(dst, &text[0], head)
            if stop > start:
                memcpy(dst + head, &pool[0] + start, stop - start)
            if utf8_first_error(dst, length) < 0:
                at += length
                good += 1
                vb[good] = at
            else:           # moved to the buffer's end, which fills backwards (the space between is at least
                other_at -= length      # what the strings not yet written need)
                memmove(data.data() + other_at, dst, length)
                n_other += 1
                ob[n_other] = length
        others.resize(total - other_at)     # the others in their order
        for k in range(1, n_other + 1):
            length = ob[k]
            memcpy(others.data() + front, data.data() + total - front - length, length)
            front += length
            ob[k] = front
    return ((<const char*>data.data())[:at] if at else b"", utf8_bounds[:good + 1].copy(),
            (<const char*>others.data())[:front] if front else b"", other_bounds[:n_other + 1].copy())


cdef inline int _against_prefix(const uint8_t* s, int64_t n, const uint8_t* p, int64_t m) noexcept nogil:
    """Below 0 when the string s[:n] sorts before every string starting with p[:m], 0 when it starts with it,
    above 0 when it sorts after them all."""
    cdef int c = memcmp(s, p, n if n < m else m) if n and m else 0
    if c != 0:
        return c
    return -1 if n < m else 0


cdef uint64_t ASCII_BITS = 0x8080808080808080      # the high bit of each of 8 bytes


cdef struct Keyed:
    uint64_t head       # Span.head
    int64_t at          # its string's index


cdef extern from *:
    """
    /* The first min(n, 8) bytes at p as a big-endian integer, zero-padded (so that integers compare as the bytes
       do); reads a whole word when p + 8 <= end, never at or past end. */
    static inline uint64_t bpe_fast_head8(const uint8_t* p, Py_ssize_t n, const uint8_t* end) {
        uint64_t v = 0;
    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && defined(__GNUC__)
        if (n >= 8 || (n > 0 && p + 8 <= end)) {
            memcpy(&v, p, 8);
            v = __builtin_bswap64(v);
            return n >= 8 ? v : v & ~(UINT64_MAX >> (8 * n));
        }
    #endif
        for (Py_ssize_t j = 0; j < 8; j++)
            v = (v << 8) | (j < n ? p[j] : 0);
        return v;
    }
    """
    uint64_t _head8 "bpe_fast_head8" (const uint8_t* p, Py_ssize_t n, const uint8_t* end) noexcept nogil


cdef int _sort_strings(const uint8_t* base, const int64_t* off, Py_ssize_t n, int64_t* out) except -1 nogil:
    """out[0:n] = the indices of the strings base[off[k]:off[k + 1]] (k < n < 2**32) in _span_less's order: by
    their first 8 bytes (big-endian, zero-padded) a byte at a time from the last (LSD radix, stable: equal heads
    stay in index order; a byte that no two heads differ in is skipped), then each run of equal heads (strings
    sharing their first 8 bytes, or shorter ones differing only in trailing zero bytes) by _span_less.
    std::sort on _span_less alone mispredicts most of its branches: 5 ms for GPT-2's 50,000 tokens, now 2."""
    cdef Py_ssize_t k, j, start
    cdef vector[Keyed] keys, other
    cdef vector[uint32_t] count
    cdef vector[Span] run
    cdef vector[Keyed] spare            # _sort_run's
    cdef Keyed* src
    cdef Keyed* dst
    cdef Keyed* swap
    cdef uint32_t* hist
    cdef uint32_t* c
    cdef uint64_t head, ones = 0, zeros = <uint64_t>-1, digit
    cdef Py_ssize_t total, here
    cdef const uint8_t* end = base + off[n]
    cdef int shift
    keys.resize(n)
    other.resize(n)
    # four histograms of each byte, one for every fourth head: heads that follow each other often share a byte
    # (short strings' zero padding), and counting them in one counter waits on its last store each time
    count.resize(4 * 8 * 256)
    for k in range(n):
        head = _head8(base + off[k], off[k + 1] - off[k], end)
        keys[k].head = head
        keys[k].at = k
        ones |= head
        zeros &= head
        hist = count.data() + (k & 3) * (8 * 256)
        hist[head & 0xFF] += 1
        hist[256 + ((head >> 8) & 0xFF)] += 1
        hist[512 + ((head >> 16) & 0xFF)] += 1
        hist[768 + ((head >> 24) & 0xFF)] += 1
        hist[1024 + ((head >> 32) & 0xFF)] += 1
        hist[1280 + ((head >> 40) & 0xFF)] += 1
        hist[1536 + ((head >> 48) & 0xFF)] += 1
        hist[1792 + (head >> 56)] += 1
    src = keys.data()
    dst = other.data()
    for shift in range(8):
        if ((ones ^ zeros) >> (8 * shift)) & 0xFF == 0:
            continue        # every head has the same byte here
        c = count.data() + shift * 256
        total = 0
        for k in range(256):
            here = c[k] + c[k + 2048] + c[k + 4096] + c[k + 6144]
            c[k] = total
            total += here
        for k in range(n):
            digit = (src[k].head >> (8 * shift)) & 0xFF
            dst[c[digit]] = src[k]
            c[digit] += 1
        swap = src
        src = dst
        dst = swap
    start = 0
    for k in range(1, n + 1):
        if k < n and src[k].head == src[start].head:
            continue
        if k - start > 1:       # equal heads: the lengths, the rest of the bytes and the indices decide
            _sort_run(src + start, k - start, base, off, spare, run)
        start = k
    for k in range(n):
        out[k] = src[k].at
    return 0


cdef int _sort_run(Keyed* run, Py_ssize_t n, const uint8_t* base, const int64_t* off, vector[Keyed]& spare,
                   vector[Span]& spans) except -1 nogil:
    """Put run[0:n] (strings with equal heads, in index order) in _span_less's order. A string of 8 bytes or fewer
    with this head is a prefix of every longer one with it (they differ only in the head's zero padding), so: by
    length (a stable counting sort, every length over 8 as one, last), then those over 8 bytes by comparison. (A
    vocabulary with a million ids without bytes is a million empty strings: the comparison sort of them all took
    0.1 s; helper-131: one longer string among them sent them all there again.)"""
    cdef Py_ssize_t j, first_long, count[11]
    cdef int64_t length
    for j in range(11):
        count[j] = 0
    for j in range(n):
        length = off[run[j].at + 1] - off[run[j].at]
        count[min(length, 9) + 1] += 1
    for j in range(1, 11):
        count[j] += count[j - 1]
    first_long = count[9]
    cdef bint one_length = False        # (then they are in order already)
    for j in range(10):
        one_length = one_length or count[j + 1] - count[j] == n
    if not one_length:
        spare.resize(n)
        for j in range(n):
            length = min(off[run[j].at + 1] - off[run[j].at], 9)
            spare[count[length]] = run[j]
            count[length] += 1
        for j in range(n):
            run[j] = spare[j]
    if n - first_long > 1:
        spans.resize(n - first_long)
        for j in range(first_long, n):
            spans[j - first_long].head = run[j].head
            spans[j - first_long].p = base + off[run[j].at]
            spans[j - first_long].n = off[run[j].at + 1] - off[run[j].at]
            spans[j - first_long].index = run[j].at
        cpp_sort(spans.begin(), spans.end(), _span_less)
        for j in range(first_long, n):
            run[j].at = spans[j - first_long].index
    return 0


cdef int _check_rising(const int64_t* off, Py_ssize_t n, str name) except -1:
    """ValueError unless off[0] <= off[1] <= ... <= off[n] (a fall is a negative length: memcmp of it read
    out of the arrays)."""
    cdef Py_ssize_t k, bad = -1
    with nogil:
        for k in range(n):
            if off[k + 1] < off[k]:
                bad = k
                break
    if bad >= 0:
        raise ValueError(f"{name} must not decrease ({name}[{bad + 1}] = {off[bad + 1]} < {off[bad]})")
    return 0


cdef inline uint64_t _hash_of(const uint8_t* base, const int64_t* off, Py_ssize_t k, const uint8_t* end) noexcept nogil:
    cdef int64_t length = off[k + 1] - off[k]
    return hash_bytes(base + off[k], length, load_head(base + off[k], length, end), end)


cdef class _BytesTable:
    """Byte strings pool[offsets[k]:offsets[k + 1]] looked up by content (the first k holding them)."""
    cdef const uint8_t* pool
    cdef const int64_t* off
    cdef const uint8_t* end
    cdef vector[Slot] slots
    cdef uint64_t mask

    cdef void build(self, const uint8_t* pool, const int64_t* off, Py_ssize_t n, Py_ssize_t total) noexcept nogil:
        cdef Slot empty
        cdef Py_ssize_t k
        cdef int64_t length
        cdef uint64_t h
        self.pool, self.off, self.end = pool, off, pool + total
        empty.index = EMPTY_INDEX
        empty.tag = 0
        self.mask = table_size(n) - 1
        self.slots.assign(self.mask + 1, empty)
        for k in range(n):
            length = off[k + 1] - off[k]
            if length > 0 and self.find(pool + off[k], length, pool + total) < 0:
                h = hash_bytes(pool + off[k], length, load_head(pool + off[k], length, pool + total), pool + total)
                slot_place(&self.slots[0], self.mask, h, <int32_t>k)

    cdef int32_t find(self, const uint8_t* p, int64_t length, const uint8_t* end) noexcept nogil:
        """The first k whose bytes are p[0:length] (p + length <= end), or -1."""
        cdef uint64_t h = hash_bytes(p, length, load_head(p, length, end), end)
        cdef uint64_t i = h & self.mask
        cdef int32_t j
        while True:
            j = self.slots[i].index
            if j == EMPTY_INDEX:
                return -1
            if self.slots[i].tag == slot_tag(h) and self.off[j + 1] - self.off[j] == length and \
                    memcmp(self.pool + self.off[j], p, length) == 0:
                return j
            i = next_slot(i, self.mask)

    cdef bint last_pair(self, const uint8_t* token, int64_t length, const uint8_t* end, const int32_t* rank_of,
                        int32_t below, int32_t* parts) noexcept nogil:
        """The ranks (rank_of, -1 for a byte) of the two tokens that the ranks rule (tiktoken's, the encoder's)
        joins into `token`: its bytes alone merged, the adjacent pair whose concatenation has the lowest rank
        below `below` first (the leftmost of equals), until none is left. False unless that leaves two."""
        cdef vector[int64_t] cuts          # token k of the merging is token[cuts[k]:cuts[k + 1]]
        cdef Py_ssize_t k, best
        cdef int32_t j, best_rank = 0
        for k in range(length + 1):
            push_or_end(cuts, k)
        while cuts.size() > 3:
            best = -1
            for k in range(<Py_ssize_t>cuts.size() - 2):
                j = self.find(token + cuts[k], cuts[k + 2] - cuts[k], end)
                if j >= 0 and 0 <= rank_of[j] < below and (best < 0 or rank_of[j] < best_rank):
                    best, best_rank = k, rank_of[j]
            if best < 0:
                return False
            for k in range(best + 1, <Py_ssize_t>cuts.size() - 1):
                cuts[k] = cuts[k + 1]
            cuts.pop_back()
        if cuts.size() != 3:
            return False
        for k in range(2):
            j = self.find(token + cuts[k], cuts[k + 1] - cuts[k], end)
            parts[k] = rank_of[j] if j >= 0 else -1
        return True


def merge_forest(const uint8_t[::1] vocab_pool, const int64_t[::1] vocab_offsets, const uint8_t[::1] merge_pool,
                 const int64_t[::1] merge_offsets, const int64_t[::1] special_ids=None):
    """A tokenizer's merge trees. Id i's token is vocab_pool[vocab_offsets[i]:vocab_offsets[i + 1]] (empty: no
    such id); merge k joins the byte strings k2 = 2k and 2k + 1 of merge_pool (merge_offsets has 2 * merges + 1
    entries). The ranked tokens are the distinct tokens the merges make, in order of their first merge, each as
    its smallest id. The tokens of the ids special_ids are special tokens, matched in a text before any merging:
    no merge makes one (a merge with its bytes makes no ranked token) and a merge may have one as a part. A
    token that several merges make (HF files converted from tiktoken's ranks list every split of a token) has
    the parts the encoder joins: those the ranks rule leaves of its bytes alone (_BytesTable.last_pair).

    Returns (ranked_ids int64, left int32, right int32, first_merge int64, base_size): for rank r, its id, the
    ranks of its parts (-1: a single byte or a special token) and its first merge's index;
    base_size, the number of ids whose token no merge makes. ValueError naming the first merge with a token not
    in the vocabulary, or with a part that is neither a single byte, a special token nor an earlier merge's
    token."""
    cdef Py_ssize_t size = vocab_offsets.shape[0] - 1, nmerges = (merge_offsets.shape[0] - 1) // 2
    cdef Py_ssize_t k, r
    if size < 0 or vocab_offsets[0] != 0 or vocab_offsets[size] != vocab_pool.shape[0]:
        raise ValueError("vocab_offsets must run from 0 to len(vocab_pool)")
    if merge_offsets.shape[0] != 2 * nmerges + 1 or merge_offsets[0] != 0 or \
            merge_offsets[2 * nmerges] != merge_pool.shape[0]:
        raise ValueError("merge_offsets must have 2 * merges + 1 entries, from 0 to len(merge_pool)")
    if size >= 2 ** 31 - 1:
        raise ValueError("too many ids")
    cdef Py_ssize_t nspecial = 0 if special_ids is None else special_ids.shape[0]
    for k in range(nspecial):
        if not 0 <= special_ids[k] < size or vocab_offsets[special_ids[k] + 1] == vocab_offsets[special_ids[k]]:
            raise ValueError(f"special id {special_ids[k]} has no token in the vocabulary")
    _check_rising(&vocab_offsets[0], size, "vocab_offsets")
    _check_rising(&merge_offsets[0], 2 * nmerges, "merge_offsets")
    cdef const uint8_t* vpool = &vocab_pool[0] if vocab_pool.shape[0] else NULL
    cdef const uint8_t* mpool = &merge_pool[0] if merge_pool.shape[0] else NULL
    cdef const int64_t* moff = &merge_offsets[0]
    cdef _BytesTable table = _BytesTable()
    cdef vector[int32_t] rank_of                    # by id: its rank, -1 if no merge made it (yet)
    cdef vector[uint8_t] special                    # by id: a special token's bytes (as its smallest id)
    cdef vector[int64_t] ranked, first
    cdef vector[int32_t] left, right
    cdef vector[uint8_t] several                    # by rank: made by several merges
    cdef int64_t la, lb
    cdef int32_t ia, ib, ic
    cdef int32_t parts[2]
    cdef Py_ssize_t bad = -1, why = 0, base = 0
    with nogil:
        table.build(vpool, &vocab_offsets[0], size, vocab_pool.shape[0])
        rank_of.assign(size, -1)
        special.assign(size, 0)
        for k in range(nspecial):
            special[table.find(vpool + vocab_offsets[special_ids[k]],
                               vocab_offsets[special_ids[k] + 1] - vocab_offsets[special_ids[k]],
                               vpool + vocab_pool.shape[0])] = 1
        for k in range(nmerges):
            la = moff[2 * k + 1] - moff[2 * k]
            lb = moff[2 * k + 2] - moff[2 * k + 1]
            ia = table.find(mpool + moff[2 * k], la, mpool + moff[2 * nmerges])
            ib = table.find(mpool + moff[2 * k + 1], lb, mpool + moff[2 * nmerges])
            ic = table.find(mpool + moff[2 * k], la + lb, mpool + moff[2 * nmerges])   # a and b lie end to end
            if ia < 0 or ib < 0 or ic < 0:
                bad, why = k, 1
                break
            if rank_of[ic] >= 0:
                several[rank_of[ic]] = 1        # made again by a later merge: its rank stands
                continue
            if special[ic]:
                continue                # a special token is matched before merging: no merge makes it
            if (rank_of[ia] < 0 and la != 1 and not special[ia]) or \
                    (rank_of[ib] < 0 and lb != 1 and not special[ib]):
                bad, why = k, 2
                break
            rank_of[ic] = <int32_t>ranked.size()
            ranked.push_back(ic)
            left.push_back(rank_of[ia])
            right.push_back(rank_of[ib])
            first.push_back(k)
            several.push_back(0)
        for r in range(<Py_ssize_t>ranked.size() if bad < 0 else 0):
            if several[r] and table.last_pair(vpool + vocab_offsets[ranked[r]],
                                              vocab_offsets[ranked[r] + 1] - vocab_offsets[ranked[r]],
                                              vpool + vocab_pool.shape[0], &rank_of[0], <int32_t>r, parts):
                left[r] = parts[0]
                right[r] = parts[1]
        if bad < 0:
            for k in range(size):
                if vocab_offsets[k + 1] > vocab_offsets[k]:
                    ic = table.find(vpool + vocab_offsets[k], vocab_offsets[k + 1] - vocab_offsets[k],
                                    vpool + vocab_pool.shape[0])
                    if rank_of[ic] < 0:
                        base += 1
    if bad >= 0:
        a = bytes(merge_pool[merge_offsets[2 * bad]:merge_offsets[2 * bad + 1]])
        b = bytes(merge_pool[merge_offsets[2 * bad + 1]:merge_offsets[2 * bad + 2]])
        if why == 1:
            raise ValueError(f"merge {bad} ({a!r}, {b!r}): a token of it is not in the vocabulary")
        raise ValueError(f"merge {bad} ({a!r}, {b!r}): a part is neither a single byte nor made by an earlier "
                         f"merge, so the tokenizer cut to fewer merges is not defined")
    n = ranked.size()
    out_ids = np.empty(n, dtype=np.int64)
    out_first = np.empty(n, dtype=np.int64)
    out_left = np.empty(n, dtype=np.int32)
    out_right = np.empty(n, dtype=np.int32)
    cdef int64_t[::1] vi = out_ids, vf = out_first
    cdef int32_t[::1] vl = out_left, vr = out_right
    for r in range(<Py_ssize_t>n):
        vi[r] = ranked[r]
        vf[r] = first[r]
        vl[r] = left[r]
        vr[r] = right[r]
    return out_ids, out_left, out_right, out_first, base
