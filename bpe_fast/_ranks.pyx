# distutils: language = c++
# distutils: extra_compile_args = -O3 -std=c++17
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Recovering the merge list from tiktoken-style ranks (bpe_fast.ranks.merges_from_ranks checks the arguments).

The tokens come in rank order, their bytes back to back in a pool. Each token of two bytes or more is
encoded with tiktoken's rule using only the tokens before it: it starts as its single bytes; while two
adjacent parts concatenate to a token already seen, the pair whose token came first is joined (on a tie, the
leftmost). The token is reachable when this ends in exactly two parts (a, b): its merge is (a, b), and it
joins the table. Parts are slices of the token itself, so a part or a pair is a (start, end) range, looked
up without copying: two-byte tokens in a direct table of 65,536 entries, longer ones in an open-addressing
table keyed by their bytes (either gives the token's index in rank order).

Worked example, ranks a b c ab abc bc:
    "ab"  -> [a, b]: nothing to join; two parts: merge (a, b).
    "abc" -> [a, b, c]: "ab" (index 3) is seen, "bc" is not yet: join -> [ab, c]; merge (ab, c).
    "bc"  -> [b, c]: merge (b, c).
A token "abd" after them, with no "bd" and no "abd" seen, stays [ab, d] -> merge (ab, d); a token "abcd"
with no "cd" and no "abcd" seen stays [abc, d] -> merge (abc, d); a token "xyz" with neither "xy" nor "yz"
seen stays three parts: unreachable, reported.

Measured on o200k_base (200k tokens, 7 bytes on average; about 2.6 M lookups): about 0.09-0.11 s, nearly all
of it cache misses on the tables. Tried: the direct two-byte table and the Bloom filter in front of the hash
table (kept, small gains); hash tags in the slots (no measurable gain, kept as it spares byte comparisons).
The rest of Tokenizer.from_tiktoken (reading, Python glue, the encoder's own tables) costs more than this.
"""
from cpython cimport array
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_Next
from cpython.long cimport PyLong_AsLongLongAndOverflow, PyLong_CheckExact
from cpython.object cimport PyObject
from libc.stdint cimport INT64_MAX, int8_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcmp, memcpy, memset
from libcpp.vector cimport vector

from bpe_fast._hashing cimport (EMPTY_INDEX, Slot, hash_bytes, seed_hash_bytes, load_head, next_slot, slot_place,
                                slot_tag, table_size)
from bpe_fast._heap cimport HeapEntry, heap_make, heap_pop, heap_sift_up, lowest_first
from bpe_fast._scan cimport line_end as find_line_end

import array

from bpe_fast._numpy import np     # (NumPy imported when first used: see there)

hash_seed = seed_hash_bytes()     # the key of this module's hash_bytes (see _hashing.pxd)

# What the functions building a tokenizer from ranks return are array.array buffers (uint8 "B", int32 "i",
# int64 "q"), not NumPy arrays: a fresh process building its first Encoding does not import NumPy (50-70 ms).
# NumPy reads them without a copy (np.asarray), as the native functions do (typed memoryviews).
cdef array.array _UINT8 = array.array("B"), _INT32 = array.array("i"), _INT64 = array.array("q")


cdef array.array _copied(array.array kind, const void* data, Py_ssize_t n):
    """A new array.array of `kind`'s type holding the n items at data."""
    cdef array.array out = array.clone(kind, n, False)
    if n:
        memcpy(out.data.as_voidptr, data, n * kind.ob_descr.itemsize)
    return out


cdef struct Table:
    int32_t* two            # tokens of two bytes: index by (first byte << 8) | second, -1 for none
    Slot* slots             # longer tokens, open addressing by hash_bytes; the tags spare most byte comparisons
    uint64_t mask
    uint64_t* bloom         # one bit a hash (its bits 40..61) set for each longer token: most strings that
                            # are not tokens are answered here, in a table that stays in cache
    const uint8_t* pool     # token k is pool[offsets[k]:offsets[k + 1]]
    const int64_t* offsets
    const uint8_t* end      # the end of the pool (hash_bytes reads whole words up to it)
    uint8_t* is_length        # is_length[n]: some token in the table is n bytes long (n <= max_length)
    Py_ssize_t max_length


cdef inline int32_t table_find(const Table* t, const uint8_t* s, Py_ssize_t n) noexcept nogil:
    """The index of the token with bytes s[0:n] (n >= 2, within the pool), or -1."""
    if n == 2:
        return t.two[(<uint32_t>s[0] << 8) | s[1]]
    if n > t.max_length or not t.is_length[n]:     # spares hashing long spans (crafted ranks) for nothing
        return -1
    cdef uint64_t h = hash_bytes(s, n, load_head(s, n, t.end), t.end)
    cdef uint64_t bit = (h >> 40) & BLOOM_MASK
    if not (t.bloom[bit >> 6] >> (bit & 63)) & 1:
        return -1
    cdef uint32_t tag = slot_tag(h)
    cdef uint64_t i = h & t.mask
    cdef int32_t k
    while t.slots[i].index != EMPTY_INDEX:
        if t.slots[i].tag == tag:
            k = t.slots[i].index
            if t.offsets[k + 1] - t.offsets[k] == n and memcmp(t.pool + t.offsets[k], s, n) == 0:
                return k
        i = next_slot(i, t.mask)
    return -1


cdef inline void table_add(Table* t, int32_t k) noexcept nogil:
    """Add token k (its bytes, two or more, are not in the table yet)."""
    cdef const uint8_t* s = t.pool + t.offsets[k]
    cdef Py_ssize_t n = t.offsets[k + 1] - t.offsets[k]
    if n == 2:
        t.two[(<uint32_t>s[0] << 8) | s[1]] = k
        return
    cdef uint64_t h = hash_bytes(s, n, load_head(s, n, t.end), t.end)
    cdef uint64_t bit = (h >> 40) & BLOOM_MASK
    t.bloom[bit >> 6] |= (<uint64_t>1) << (bit & 63)
    t.is_length[n] = 1
    slot_place(t.slots, t.mask, h, k)


cdef int32_t BIG = 0x7FFFFFFF
LONG_TOKEN = 64         # recover_merges' default long_from: longer tokens are merged with a heap
cdef uint64_t BLOOM_MASK = (1 << 21) - 1        # 2^21 bits, 256 KB


cdef Py_ssize_t _recover_long(const Table* t, const uint8_t* s, Py_ssize_t n, Py_ssize_t* split) except -1 nogil:
    """recover's merge of one long token s[0:n] (the tokens before it in t) in O(n log n): the parts as a linked
    list, the candidate joins in a heap, lowest token index first and on a tie the leftmost, as the scan of
    short tokens chooses. An entry is checked when it comes up (the pair it was pushed for may have changed
    since). Returns how many parts are left (it stops at two), and the second part's start in split."""
    cdef vector[int32_t] nxt, prv             # by a part's start: the next part's start (n: none), the previous
    cdef vector[HeapEntry] heap               # (token index of the join, start of its left part)
    cdef HeapEntry e
    cdef Py_ssize_t count = n, i, j, end
    cdef int32_t r
    nxt.resize(n)
    prv.resize(n)
    for i in range(n):
        nxt[i] = <int32_t>(i + 1)
        prv[i] = <int32_t>(i - 1)
    for i in range(n - 1):
        r = table_find(t, s + i, 2)
        if r >= 0:
            e.key = r
            e.id = <int32_t>i
            heap.push_back(e)
    heap_make(heap.data(), heap.size(), lowest_first, NULL)
    while count > 2 and not heap.empty():
        e = heap_pop(heap.data(), heap.size(), lowest_first, NULL)
        heap.pop_back()
        i = e.id
        if prv[i] == -2:                      # no longer a part's start
            continue
        j = nxt[i]
        if j >= n:
            continue
        end = nxt[j]
        if table_find(t, s + i, end - i) != e.key:
            continue                          # the pair changed since it was pushed
        prv[j] = -2                           # join the parts at i and j
        nxt[i] = <int32_t>end
        if end < n:
            prv[end] = <int32_t>i
        count -= 1
        if prv[i] >= 0:                       # the new pairs on either side
            r = table_find(t, s + prv[i], end - prv[i])
            if r >= 0:
                e.key = r
                e.id = prv[i]
                heap.push_back(e)
                heap_sift_up(heap.data(), heap.size() - 1, lowest_first, NULL)
        if end < n:
            r = table_find(t, s + i, nxt[end] - i)
            if r >= 0:
                e.key = r
                e.id = <int32_t>i
                heap.push_back(e)
                heap_sift_up(heap.data(), heap.size() - 1, lowest_first, NULL)
    split[0] = nxt[0]
    return count


cdef Py_ssize_t recover(const uint8_t* pool, const int64_t* offsets, Py_ssize_t n_tokens,
                        const int32_t* byte_index, int32_t* left, int32_t* right, Py_ssize_t long_from,
                        Py_ssize_t* parts) except -2 nogil:
    """Fill left[k], right[k] for every token k (-1, -1 for single bytes); returns -1, or the index of the first
    unreachable token (left and right are then filled only before it; parts[0] is how many parts it is left
    in). Tokens longer than long_from bytes are merged by _recover_long (the scan below takes time quadratic in
    a token's length). Running out of memory raises MemoryError."""
    cdef uint64_t size = table_size(n_tokens)
    cdef Slot empty
    empty.index = EMPTY_INDEX
    empty.tag = 0
    cdef vector[Slot] slots
    cdef vector[uint64_t] bloom
    cdef vector[int32_t] two
    slots.assign(size, empty)
    two.assign(1 << 16, -1)
    bloom.assign((BLOOM_MASK + 1) // 64, 0)
    cdef Table t
    t.bloom = bloom.data()
    t.two = two.data()
    t.slots = slots.data()
    t.mask = size - 1
    t.pool = pool
    t.offsets = offsets
    t.end = pool + offsets[n_tokens]
    cdef vector[uint8_t] is_length

    # The parts of the token being merged: starts[j] is where part j begins (starts[count] = its length);
    # joined[j] is the index of the token parts j and j + 1 would make (BIG when none seen).
    cdef vector[Py_ssize_t] starts
    cdef vector[int32_t] joined
    cdef Py_ssize_t k, n, j, best_j, count, split
    cdef int32_t best
    t.max_length = 0
    for k in range(n_tokens):
        if offsets[k + 1] - offsets[k] > t.max_length:
            t.max_length = offsets[k + 1] - offsets[k]
    is_length.assign(t.max_length + 1, 0)
    t.is_length = is_length.data()
    cdef const uint8_t* s
    for k in range(n_tokens):
        s = pool + offsets[k]
        n = offsets[k + 1] - offsets[k]
        if n == 1:
            left[k] = -1
            right[k] = -1
            continue
        if n > long_from:
            count = _recover_long(&t, s, n, &split)
            if count != 2:
                parts[0] = count
                return k
            left[k] = byte_index[s[0]] if split == 1 else table_find(&t, s, split)
            right[k] = byte_index[s[n - 1]] if n - split == 1 else table_find(&t, s + split, n - split)
            table_add(&t, <int32_t>k)
            continue
        starts.resize(n + 1)
        joined.resize(n)
        for j in range(n + 1):
            starts[j] = j
        count = n
        for j in range(count - 1):
            joined[j] = table_find(&t, s + j, 2)
            if joined[j] < 0:
                joined[j] = BIG
        while count > 2:
            best = BIG
            best_j = -1
            for j in range(count - 1):
                if joined[j] < best:
                    best = joined[j]
                    best_j = j
            if best_j < 0:
                break
            # join parts best_j and best_j + 1
            for j in range(best_j + 1, count):
                starts[j] = starts[j + 1]
            for j in range(best_j, count - 2):
                joined[j] = joined[j + 1]
            count -= 1
            # the pairs that changed: (best_j - 1, best_j) and (best_j, best_j + 1)
            if best_j > 0:
                joined[best_j - 1] = table_find(&t, s + starts[best_j - 1], starts[best_j + 1] - starts[best_j - 1])
                if joined[best_j - 1] < 0:
                    joined[best_j - 1] = BIG
            if best_j < count - 1:
                joined[best_j] = table_find(&t, s + starts[best_j], starts[best_j + 2] - starts[best_j])
                if joined[best_j] < 0:
                    joined[best_j] = BIG
        if count != 2:
            parts[0] = count
            return k
        left[k] = byte_index[s[0]] if starts[1] == 1 else table_find(&t, s, starts[1])
        right[k] = byte_index[s[n - 1]] if n - starts[1] == 1 else table_find(&t, s + starts[1], n - starts[1])
        table_add(&t, <int32_t>k)
    return -1


cdef int8_t[256] B64
cdef int _b64_init():
    cdef int c
    cdef const char* alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    for c in range(256):
        B64[c] = -1
    for c in range(64):
        B64[<uint8_t>alphabet[c]] = c
    return 0
_b64_init()


cdef inline bint is_blank(uint8_t c) noexcept nogil:
    return c == 32 or c == 9


cdef Py_ssize_t decode_base64(const uint8_t* s, Py_ssize_t n, uint8_t* out) noexcept nogil:
    """Strict standard base64 (padded, no whitespace) of s[0:n] into out; returns the length, or -1."""
    cdef Py_ssize_t i, j, pad = 0, m = 0
    cdef uint32_t v
    cdef int8_t d
    if n == 0 or n % 4:
        return -1
    if s[n - 1] == 61:      # "="
        pad = 2 if s[n - 2] == 61 else 1
    for i in range(0, n, 4):
        v = 0
        for j in range(4):
            if i + j >= n - pad:
                d = 0
            else:
                d = B64[s[i + j]]
                if d < 0:
                    return -1
            v = (v << 6) | <uint32_t>d
        out[m] = <uint8_t>(v >> 16)
        out[m + 1] = <uint8_t>(v >> 8)
        out[m + 2] = <uint8_t>v
        m += 3
    return m - pad


def parse_tiktoken(const uint8_t[::1] data):
    """(pool, offsets, ranks, lines, bad_line) of a `.tiktoken` file's bytes: the tokens in file order (token k is
    pool[offsets[k]:offsets[k + 1]]), their ranks (int64), their 1-based line numbers (int64), all array.array
    buffers (see _copied), and 0, or the number of the first line that is not `base64 rank` (the caller says what
    is wrong with it). A line is blanks (spaces, tabs), a non-empty padded base64 token, blanks, decimal digits
    (at most 10), blanks and an optional CR; empty lines are skipped. Duplicates are left to the caller.

    >>> pool, offsets, ranks, lines, bad = parse_tiktoken(b"YQ== 0\\n\\nYWI= 7\\r\\n")
    >>> bytes(pool), offsets.tolist(), ranks.tolist(), lines.tolist(), bad
    (b'aab', [0, 1, 3], [0, 7], [1, 3], 0)
    >>> parse_tiktoken(b"YQ== 0\\nYQ=0\\n")[-1]
    2
    """
    cdef Py_ssize_t n = data.shape[0], i = 0, line_start, line_end, a, b, c, d, m, count = 0
    cdef int64_t line = 0, rank
    cdef vector[uint8_t] pool
    cdef vector[int64_t] offsets, ranks, lines
    cdef int64_t bad = 0
    cdef const uint8_t* s = &data[0] if n else NULL
    offsets.push_back(0)
    with nogil:
        while i < n:
            line += 1
            line_start = i
            line_end = find_line_end(s, i, n)
            i = line_end + 1                # past the newline
            if line_end > line_start and s[line_end - 1] == 13:
                line_end -= 1
            if line_end == line_start:
                continue
            a = line_start
            while a < line_end and is_blank(s[a]):
                a += 1
            b = a                           # the token: [a, b)
            while b < line_end and not is_blank(s[b]):
                b += 1
            c = b                           # the rank: [c, d)
            while c < line_end and is_blank(s[c]):
                c += 1
            d = c
            rank = 0
            while d < line_end and 48 <= s[d] <= 57 and d - c < 10:
                rank = rank * 10 + (s[d] - 48)
                d += 1
            m = d
            while m < line_end and is_blank(s[m]):
                m += 1
            if b == a or c == b or d == c or m != line_end:
                bad = line
                break
            count = pool.size()
            pool.resize(count + (b - a) // 4 * 3)
            m = decode_base64(s + a, b - a, pool.data() + count)
            if m <= 0:
                bad = line
                break
            pool.resize(count + m)
            offsets.push_back(pool.size())
            ranks.push_back(rank)
            lines.push_back(line)
    return (_copied(_UINT8, pool.data(), pool.size()), _copied(_INT64, offsets.data(), offsets.size()),
            _copied(_INT64, ranks.data(), ranks.size()), _copied(_INT64, lines.data(), lines.size()), bad)


def recover_merges(const uint8_t[::1] pool, const int64_t[::1] offsets, const int32_t[::1] byte_index,
                   Py_ssize_t long_from=LONG_TOKEN):
    """(left, right, bad, parts): for the tokens in rank order (token k is pool[offsets[k]:offsets[k + 1]], distinct,
    none empty; byte_index[b] is the index of the token bytes([b]), all 256 present), int32 arrays where
    left[k], right[k] are the indices of the two tokens whose merge makes token k (-1 for single bytes), and bad
    = -1, or the index of the first token that merging the tokens before it cannot make (the arrays are then
    filled only before it; parts is how many parts tiktoken's rule leaves it in, else 0). The caller has checked all of this; here only the sizes are. long_from: tokens longer
    than this many bytes are merged with a heap (O(n log n)) rather than by scanning the parts (O(n^2)); the
    two give the same parts (tests compare them with long_from=1).

    >>> tokens = [b"a", b"b", b"c", b"ab", b"abc", b"bc"]
    >>> pool = np.frombuffer(b"".join(tokens), dtype=np.uint8)
    >>> offsets = np.cumsum([0] + [len(t) for t in tokens]).astype(np.int64)
    >>> byte_index = np.zeros(256, dtype=np.int32); byte_index[list(b"abc")] = [0, 1, 2]
    >>> left, right, bad, parts = recover_merges(pool, offsets, byte_index)
    >>> left.tolist(), right.tolist(), bad, parts
    ([-1, -1, -1, 0, 3, 1], [-1, -1, -1, 1, 2, 2], -1, 0)
    """
    cdef Py_ssize_t n_tokens = offsets.shape[0] - 1
    if n_tokens < 0 or byte_index.shape[0] != 256:
        raise ValueError("offsets must have one entry more than there are tokens; byte_index 256 entries")
    if n_tokens >= BIG or pool.shape[0] >= BIG:         # parts are int32 offsets into a token
        raise ValueError("too many tokens, or too many bytes (2 GiB or more)")
    if offsets[0] != 0 or offsets[n_tokens] != pool.shape[0]:
        raise ValueError("offsets must start at 0 and end at the pool's length")
    left_arr = np.empty(n_tokens, dtype=np.int32)
    right_arr = np.empty(n_tokens, dtype=np.int32)
    cdef int32_t[::1] left = left_arr
    cdef int32_t[::1] right = right_arr
    cdef Py_ssize_t bad, parts = 0
    if n_tokens == 0:
        return left_arr, right_arr, -1, 0
    with nogil:
        bad = recover(&pool[0] if pool.shape[0] else NULL, &offsets[0], n_tokens, &byte_index[0],
                      &left[0], &right[0], long_from, &parts)
    return left_arr, right_arr, bad, parts


def ranks_arrays(dict ranks, int64_t max_rank=INT64_MAX):
    """(pool, offsets, values) of a dict {bytes: int} of tiktoken's ranks, in the dict's order: the tokens' bytes
    back to back (uint8), where each starts (int64, one more entry than tokens) and the ranks (int64), array.array
    buffers; or None when an entry is not a plain bytes token, not empty, with a plain int rank in 0..max_rank
    (a bool, an int subclass, a NumPy integer, a bytearray token...), or when the ranks do not rise in the dict's
    order, for bpe_fast.ranks to read in Python (and name what is wrong). One pass over the dict's entries to
    check them and add up their lengths (nothing is allocated by Python during it), then one copying them into
    the arrays, which checks that the dict still holds as many entries, of those lengths (the allocation could
    run a finalizer that changes it: then None): 200k entries in a few milliseconds, where the Python loops and
    joins took about 40; each token's bytes copied once (a vector grown as it went copied 32 MB of long tokens
    about three times, with their page faults: 70 ms of 75).

    >>> pool, offsets, values = ranks_arrays({b"a": 0, b"bc": 5})
    >>> pool.tobytes(), offsets.tolist(), values.tolist()
    (b'abc', [0, 1, 3], [0, 5])
    >>> ranks_arrays({b"a": True}) is None, ranks_arrays({b"a": 1, b"b": 0}) is None, ranks_arrays({b"a": 9}, 8)
    (True, True, None)
    """
    cdef Py_ssize_t pos = 0, size, total = 0, count = 0, n = len(ranks), k = 0
    cdef PyObject* key
    cdef PyObject* value
    cdef int overflow = 0
    cdef long long rank, previous = -1
    while PyDict_Next(ranks, &pos, &key, &value):
        if not PyBytes_CheckExact(<object>key) or not PyLong_CheckExact(<object>value):
            return None
        size = PyBytes_GET_SIZE(<object>key)
        rank = PyLong_AsLongLongAndOverflow(<object>value, &overflow)
        if size == 0 or overflow or rank < 0 or rank > max_rank or rank <= previous:
            return None
        previous = rank
        total += size
        count += 1
    cdef array.array pool_arr = array.clone(_UINT8, total, False)
    cdef array.array offsets_arr = array.clone(_INT64, count + 1, False)
    cdef array.array values_arr = array.clone(_INT64, count, False)
    cdef uint8_t* pool_out = <uint8_t*>pool_arr.data.as_uchars
    cdef int64_t* offsets_out = <int64_t*>offsets_arr.data.as_voidptr
    cdef int64_t* values_out = <int64_t*>values_arr.data.as_voidptr
    if len(ranks) != n:
        return None
    offsets_out[0] = 0
    pos = 0
    previous = -1
    while PyDict_Next(ranks, &pos, &key, &value):
        if k == count or not PyBytes_CheckExact(<object>key) or not PyLong_CheckExact(<object>value):
            return None
        size = PyBytes_GET_SIZE(<object>key)
        rank = PyLong_AsLongLongAndOverflow(<object>value, &overflow)
        if size == 0 or overflow or rank < 0 or rank > max_rank or rank <= previous or size > total - offsets_out[k]:
            return None
        previous = rank
        memcpy(pool_out + offsets_out[k], PyBytes_AS_STRING(<object>key), size)
        offsets_out[k + 1] = offsets_out[k] + size
        values_out[k] = rank
        k += 1
    if k != count or offsets_out[k] != total:
        return None
    return pool_arr, offsets_arr, values_arr


def ranks_rise(const int64_t[::1] values, int64_t max_rank):
    """Whether the ranks `values` rise, each in 0..max_rank (then none is given twice).

    >>> ranks_rise(array.array("q", [0, 5, 7]), 7), ranks_rise(array.array("q", [0, 5, 5]), 7)
    (True, False)
    """
    cdef Py_ssize_t k, n = values.shape[0]
    if n and (values[0] < 0 or values[n - 1] > max_rank):
        return False
    for k in range(1, n):
        if values[k] <= values[k - 1]:
            return False
    return True


cdef int _check_spans(const uint8_t[::1] pool, const int64_t[::1] offsets, bint nonempty) except -1:
    """ValueError unless offsets (one more than the tokens) start at 0, rise (strictly when `nonempty`) and end at
    the pool's length, so that every token pool[offsets[k]:offsets[k + 1]] lies inside it."""
    cdef Py_ssize_t k, n = offsets.shape[0] - 1
    if n < 0 or offsets[0] != 0 or offsets[n] != pool.shape[0]:
        raise ValueError("offsets must start at 0 and end at the pool's length, one more than the tokens")
    for k in range(n):
        if offsets[k + 1] < offsets[k] + nonempty:
            raise ValueError(f"token {k}: offsets must rise" + (" (no token is empty)" if nonempty else ""))
    return 0


def byte_index(const uint8_t[::1] pool, const int64_t[::1] offsets):
    """index[b] for each byte b: the index of the token bytes([b]) among the tokens pool[offsets[k]:offsets[k + 1]]
    (the last one, if several), or -1 (an int32 array.array of 256).

    >>> byte_index(array.array("B", b"abz"), array.array("q", [0, 1, 2, 3]))[ord("a"):ord("d")].tolist()
    [0, 1, -1]
    """
    cdef Py_ssize_t k, n = offsets.shape[0] - 1
    cdef array.array index = array.clone(_INT32, 256, False)
    cdef int32_t* out = <int32_t*>index.data.as_voidptr
    if n >= BIG:
        raise ValueError("fewer than 2^31 tokens needed")
    _check_spans(pool, offsets, False)
    for k in range(256):
        out[k] = -1
    for k in range(n):
        if offsets[k + 1] - offsets[k] == 1:
            out[pool[offsets[k]]] = <int32_t>k
    return index


def find_token(const uint8_t[::1] pool, const int64_t[::1] offsets, const uint8_t[::1] token):
    """The index of the first of the tokens pool[offsets[k]:offsets[k + 1]] whose bytes are `token`, or -1.

    >>> find_token(array.array("B", b"abab"), array.array("q", [0, 1, 2, 4]), b"ab")
    2
    """
    cdef Py_ssize_t k, n = offsets.shape[0] - 1, size = token.shape[0], found = -1
    _check_spans(pool, offsets, False)
    if size == 0:
        return -1
    with nogil:
        for k in range(n):
            if offsets[k + 1] - offsets[k] == size and memcmp(&pool[offsets[k]], &token[0], size) == 0:
                found = k
                break
    return found


def ranks_table_arrays(const uint8_t[::1] pool, const int64_t[::1] offsets, const int64_t[::1] values,
                       const uint8_t[::1] extra_pool, const int64_t[::1] extra_offsets, const int64_t[::1] extra_ids):
    """bpe_fast._encode.BPETables' arguments (a dict of array.array buffers), `permanent` included, for tiktoken's
    ranks (token k pool[offsets[k]:offsets[k + 1]], rank values[k]; every byte a token, checked) and the tokens
    `extra` that only decode (the special tokens: extra_pool[extra_offsets[j]:extra_offsets[j + 1]] with id
    extra_ids[j]); the ids distinct, in 0..2^31 - 2 (checked by the caller). The merged tokens are the multi-byte
    ones in rank order, their ids their ranks, each permanent (the ranks make every token: the caller's tables
    check it); each id's bytes are in the decoding pool at decode_offsets[id].

    >>> made = ranks_table_arrays(array.array("B", b"abab"), array.array("q", [0, 1, 2, 4]),
    ...                           array.array("q", [0, 1, 3]), array.array("B", b"<s>"), array.array("q", [0, 3]),
    ...                           array.array("q", [5]))
    >>> made["byte_ids"][97:99].tolist(), made["ranked_pool"].tobytes(), made["ranked_ids"].tolist()
    ([0, 1], b'ab', [3])
    >>> made["decode_pool"].tobytes(), made["decode_offsets"].tolist(), made["known"].tolist()
    (b'abab<s>', [0, 1, 2, 2, 4, 4, 7], [1, 1, 0, 1, 0, 1])
    """
    cdef Py_ssize_t n = offsets.shape[0] - 1, n_extra = extra_offsets.shape[0] - 1
    cdef Py_ssize_t k, j, n_multi = 0, multi_bytes = 0, size = 0, length
    cdef int64_t i
    if n < 0 or n_extra < 0 or values.shape[0] != n or extra_ids.shape[0] != n_extra:
        raise ValueError("one offset more than tokens, one id a token")
    _check_spans(pool, offsets, True)
    _check_spans(extra_pool, extra_offsets, False)
    for k in range(n):
        if not 0 <= values[k] < BIG:
            raise ValueError(f"token {k}: rank {values[k]} outside 0..2^31 - 2")
    for j in range(n_extra):
        if not 0 <= extra_ids[j] < BIG:
            raise ValueError(f"extra token {j}: id {extra_ids[j]} outside 0..2^31 - 2")
    for k in range(n):
        if offsets[k + 1] - offsets[k] > 1:
            n_multi += 1
            multi_bytes += offsets[k + 1] - offsets[k]
        if values[k] + 1 > size:
            size = values[k] + 1
    for j in range(n_extra):
        if extra_ids[j] + 1 > size:
            size = extra_ids[j] + 1
    cdef array.array byte_ids = array.clone(_INT32, 256, False)
    cdef array.array ranked_pool = array.clone(_UINT8, multi_bytes, False)
    cdef array.array ranked_offsets = array.clone(_INT64, n_multi + 1, False)
    cdef array.array ranked_ids = array.clone(_INT32, n_multi, False)
    cdef array.array permanent = array.clone(_UINT8, n_multi, False)
    cdef array.array decode_pool = array.clone(_UINT8, pool.shape[0] + extra_pool.shape[0], False)
    cdef array.array decode_offsets = array.clone(_INT64, size + 1, True)
    cdef array.array known = array.clone(_UINT8, size, True)
    cdef int32_t* bids = <int32_t*>byte_ids.data.as_voidptr
    cdef uint8_t* rpool = <uint8_t*>ranked_pool.data.as_uchars
    cdef int64_t* roffs = <int64_t*>ranked_offsets.data.as_voidptr
    cdef int32_t* rids = <int32_t*>ranked_ids.data.as_voidptr
    cdef uint8_t* dpool = <uint8_t*>decode_pool.data.as_uchars
    cdef int64_t* doffs = <int64_t*>decode_offsets.data.as_voidptr
    cdef uint8_t* kn = <uint8_t*>known.data.as_uchars
    with nogil:
        memset(bids, 0xFF, 256 * sizeof(int32_t))       # -1: no token
        if n_multi:
            memset(<uint8_t*>permanent.data.as_uchars, 1, n_multi)
        roffs[0] = 0
        j = 0
        for k in range(n):
            length = offsets[k + 1] - offsets[k]
            if length == 1:
                bids[pool[offsets[k]]] = <int32_t>values[k]
            else:
                memcpy(rpool + roffs[j], &pool[offsets[k]], length)
                roffs[j + 1] = roffs[j] + length
                rids[j] = <int32_t>values[k]
                j += 1
            doffs[values[k] + 1] = length       # each id's length, then their sums: where each id's bytes start
            kn[values[k]] = 1
        for j in range(n_extra):
            doffs[extra_ids[j] + 1] = extra_offsets[j + 1] - extra_offsets[j]
            kn[extra_ids[j]] = 1
        for i in range(size):
            doffs[i + 1] += doffs[i]
        for k in range(n):
            if offsets[k + 1] > offsets[k]:
                memcpy(dpool + doffs[values[k]], &pool[offsets[k]], offsets[k + 1] - offsets[k])
        for j in range(n_extra):
            if extra_offsets[j + 1] > extra_offsets[j]:
                memcpy(dpool + doffs[extra_ids[j]], &extra_pool[extra_offsets[j]], extra_offsets[j + 1] - extra_offsets[j])
    return dict(byte_ids=byte_ids, ranked_pool=ranked_pool, ranked_offsets=ranked_offsets, ranked_ids=ranked_ids,
                permanent=permanent, decode_pool=decode_pool, decode_offsets=decode_offsets, known=known)
