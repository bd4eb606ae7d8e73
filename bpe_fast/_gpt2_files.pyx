# distutils: language = c++
# distutils: extra_compile_args = -O3 -std=c++17
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""GPT-2's vocab.json and merges.txt, and the model of an HF tokenizer.json, read natively: the common case
fast, everything else left to Python.

bpe_fast.formats owns GPT-2's formats, their byte mapping and every error; bpe_fast.hf owns tokenizer.json. They
call these first; each returns the tokens as arrays when the file is plainly well formed, or None when anything
is unusual (a character outside the mapping, invalid UTF-8, a number json.loads would read otherwise, a line
that is not two tokens, a key given twice, ...), and the caller then reads the file in Python, which gives the
same result or the error naming the line. So what is read never differs from the Python reader's result (tests
compare the two on generated and mutated files); the loops touch no Python object. index_tokens (a hash index of
the tokens) lets the callers check duplicates and unknown tokens on the arrays, and token_list makes the bytes
objects once the checks pass.

A token's characters go to bytes through `char_to_byte` (int16, indexed by code point; -1: not in the mapping),
which bpe_fast.formats makes from its mapping.
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_Next
from cpython.long cimport PyLong_AsLongLongAndOverflow, PyLong_CheckExact
from cpython.object cimport PyObject
from cpython.tuple cimport PyTuple_CheckExact, PyTuple_GET_ITEM, PyTuple_GET_SIZE
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcmp, memcpy, memset, strlen
from libcpp.vector cimport vector

from bpe_fast._hashing cimport (EMPTY_INDEX, HASH_SEED, Slot, hash_wide, seed_hash_bytes, load_head, mix64, next_slot,
                                slot_place, slot_tag, table_size)
from bpe_fast._jsonl cimport Limits, _skip_space, _string, _value
from bpe_fast._revec cimport push_or_end
from bpe_fast._scan cimport line_end as find_line_end, utf8_first_error

from bpe_fast._numpy import np     # (NumPy imported when first used: see there)

hash_seed = seed_hash_bytes()     # the key of this module's hash_wide (see _hashing.pxd)


cdef inline Py_ssize_t _after_item(const uint8_t* s, Py_ssize_t i, Py_ssize_t n, uint8_t close,
                                   bint* closed) noexcept nogil:
    """After an item of a JSON object or list that ends at s[i]: the start of the next item (past a comma), or,
    when the object or list closes here (`close`: } or ]), the index past it with closed set; -1 otherwise."""
    i = _skip_space(s, i, n)
    if i < n and s[i] == 0x2C:
        return _skip_space(s, i + 1, n)
    if i < n and s[i] == close:
        closed[0] = True
        return i + 1
    return -1


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
        push_or_end(out[0], <uint8_t>table[cp])
    return True


cdef object _int64_array(vector[int64_t]& values):
    if values.empty():
        return np.zeros(0, dtype=np.int64)
    return np.array(<int64_t[:values.size()]>values.data(), dtype=np.int64)


cdef object _uint8_array(vector[uint8_t]& values):
    return np.frombuffer((<const char*>values.data())[:values.size()] if values.size() else b"", dtype=np.uint8)


cdef int _check_spans(const uint8_t[::1] pool, const int64_t[::1] offsets, Py_ssize_t first, Py_ssize_t step,
                      Py_ssize_t span) except -1:
    """ValueError unless first >= 0, step >= 1, span >= 1 and the offsets rise within the pool (callers pass the
    parsers' arrays; this keeps a wrong call from reading out of bounds)."""
    cdef Py_ssize_t k, n = offsets.shape[0]
    if first < 0 or step < 1 or span < 1:
        raise ValueError(f"first {first} must be >= 0, step {step} and span {span} >= 1")
    for k in range(n):
        if offsets[k] < (offsets[k - 1] if k else 0) or offsets[k] > pool.shape[0]:
            raise ValueError(f"offsets must rise from 0 up to the pool's length ({pool.shape[0]}); offset {k} is "
                             f"{offsets[k]}")
    return 0


def token_list(const uint8_t[::1] pool, const int64_t[::1] offsets, Py_ssize_t first=0, Py_ssize_t step=1,
               Py_ssize_t span=1):
    """[bytes(pool[offsets[k]:offsets[k + span]]) for k in range(first, len(offsets) - span, step)]: the
    readers' tokens as bytes objects (offsets nondecreasing, within the pool).

    >>> import numpy as np
    >>> pool, offsets = np.frombuffer(b"abcd", dtype=np.uint8), np.array([0, 1, 3, 4])
    >>> token_list(pool, offsets), token_list(pool, offsets, 0, 2, 2), token_list(pool, offsets, 1, 2)
    ([b'a', b'bc', b'd'], [b'abc'], [b'bc'])
    """
    _check_spans(pool, offsets, first, step, span)
    cdef const char* p = <const char*>&pool[0] if pool.shape[0] else NULL
    cdef Py_ssize_t k, last = offsets.shape[0] - span
    cdef list out = []
    if p == NULL:                                       # no bytes: every token empty
        return [b""] * len(range(first, max(first, last), step))
    cdef int64_t a, b
    for k in range(first, last, step):
        a, b = offsets[k], offsets[k + span]
        if not 0 <= a <= b <= pool.shape[0]:     # (checked above, but another thread may write offsets)
            raise RuntimeError("offsets changed while they were read (another thread writes to them)")
        out.append(PyBytes_FromStringAndSize(p + a, b - a))
    return out


def gather_spans(const uint8_t[::1] pool, const int64_t[::1] offsets, const int64_t[::1] which):
    """(pool, offsets) of the tokens `which` (indices) of pool/offsets, end to end in that order: one copy a token
    (token_arrays.gather_tokens; offsets nondecreasing, within the pool).

    >>> import numpy as np
    >>> out_pool, out_offsets = gather_spans(np.frombuffer(b"abcde", dtype=np.uint8), np.array([0, 1, 3, 5]),
    ...                                      np.array([2, 0]))
    >>> bytes(out_pool), out_offsets.tolist()
    (b'dea', [0, 2, 3])
    """
    _check_spans(pool, offsets, 0, 1, 1)
    cdef Py_ssize_t n = offsets.shape[0] - 1, m = which.shape[0], k
    cdef int64_t w, start, end
    out_offsets = np.empty(m + 1, dtype=np.int64)
    cdef int64_t[::1] oo = out_offsets
    cdef vector[int64_t] starts        # each token's start as read and checked here: the copy reads no array again
    starts.resize(m)
    oo[0] = 0
    for k in range(m):
        w = which[k]
        if not 0 <= w < n:
            raise IndexError(f"index {w} (item {k}) is out of range for {n} tokens")
        start, end = offsets[w], offsets[w + 1]
        if not 0 <= start <= end <= pool.shape[0]:      # (checked above, but another thread may write offsets)
            raise RuntimeError("offsets changed while they were read (another thread writes to them)")
        starts[k] = start
        oo[k + 1] = oo[k] + end - start
    out_pool = np.empty(oo[m], dtype=np.uint8)
    cdef uint8_t[::1] op = out_pool
    with nogil:
        for k in range(m):
            if oo[k + 1] > oo[k]:
                memcpy(&op[oo[k]], &pool[starts[k]], oo[k + 1] - oo[k])
    return out_pool, out_offsets


def pack_vocab(dict vocab, int64_t max_id):
    """A dict {int: bytes} as (pool, offsets, ids) arrays, entry k (in the dict's order) being
    pool[offsets[k]:offsets[k + 1]] with id ids[k], when every key is an int (exactly: not a bool) in 0..max_id
    and every value a non-empty bytes object (exactly); None otherwise (the caller's Python check names the
    entry). The constructor's vocabulary, packed with no Python object made a token.

    >>> pack_vocab({5: b"ab", 0: b"c"}, 10)
    (array([97, 98, 99], dtype=uint8), array([0, 2, 3]), array([5, 0]))
    >>> pack_vocab({True: b"a"}, 10), pack_vocab({1: b""}, 10), pack_vocab({11: b"a"}, 10)
    (None, None, None)
    """
    cdef Py_ssize_t n = len(vocab), pos = 0, k = 0, total = 0, size
    cdef PyObject* key
    cdef PyObject* value
    cdef long long i
    cdef int overflow
    cdef list tokens = []
    ids = np.empty(n, dtype=np.int64)
    offsets = np.empty(n + 1, dtype=np.int64)
    cdef int64_t[::1] id_view = ids
    cdef int64_t[::1] off_view = offsets
    off_view[0] = 0
    while PyDict_Next(vocab, &pos, &key, &value):
        if not PyLong_CheckExact(<object>key) or not PyBytes_CheckExact(<object>value):
            return None
        i = PyLong_AsLongLongAndOverflow(<object>key, &overflow)
        size = PyBytes_GET_SIZE(<object>value)
        if overflow or i < 0 or i > max_id or size == 0:
            return None
        id_view[k] = i
        total += size
        k += 1
        off_view[k] = total
        tokens.append(<object>value)
    pool = np.empty(total, dtype=np.uint8)
    _pack(tokens, pool, off_view)
    return pool, offsets, ids


def pack_pairs(list merges):
    """A list of (bytes, bytes) tuples as (pool, offsets): merge k is (pool[offsets[2k]:offsets[2k + 1]],
    pool[offsets[2k + 1]:offsets[2k + 2]]), as parse_merges gives; None when an item is not a tuple (exactly) of
    two bytes objects (exactly).

    >>> pack_pairs([(b"a", b"bc"), (b"d", b"e")])
    (array([ 97,  98,  99, 100, 101], dtype=uint8), array([0, 1, 3, 4, 5]))
    >>> pack_pairs([[b"a", b"b"]]), pack_pairs([(b"a",)]), pack_pairs([(b"a", "b")])
    (None, None, None)
    """
    cdef Py_ssize_t n = len(merges), k, j, total = 0
    cdef object pair
    cdef object part
    offsets = np.empty(2 * n + 1, dtype=np.int64)
    cdef int64_t[::1] off_view = offsets
    off_view[0] = 0
    cdef list parts = []
    for k in range(n):
        pair = merges[k]
        if not PyTuple_CheckExact(pair) or PyTuple_GET_SIZE(pair) != 2:
            return None
        for j in range(2):
            part = <object>PyTuple_GET_ITEM(pair, j)
            if not PyBytes_CheckExact(part):
                return None
            total += PyBytes_GET_SIZE(part)
            off_view[2 * k + j + 1] = total
            parts.append(part)
    pool = np.empty(total, dtype=np.uint8)
    _pack(parts, pool, off_view)
    return pool, offsets


def first_indices(const int64_t[::1] values):
    """The index of the first occurrence of each distinct value of `values`, in increasing order (int64), found
    with a table of a byte a value when the values are in 0..4 * len(values) + 4095 (ids, indices), else with a
    hash table keyed by this module's secret seed (no sort); None when a run of that table is longer than
    MAX_PROBES (values made to share slots: the caller then sorts).

    >>> first_indices(np.array([5, 3, 5, 7, 3, -1])).tolist()
    [0, 1, 3, 5]
    """
    cdef Py_ssize_t n = values.shape[0], k, m = 0, probes
    cdef int64_t v, low = 0, high = -1
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] out_view = out
    cdef vector[uint8_t] seen
    with nogil:
        for k in range(n):
            v = values[k]
            if k == 0 or v < low:
                low = v
            if k == 0 or v > high:
                high = v
        if n and low >= 0 and high < 4 * n + 4096:
            # ids, indices: values below a few times their number are marked in a direct table, a byte a value
            # (a pass over a table that stays in cache, where the hash table's look-ups miss it: 25x faster at
            # 200,000 values)
            seen.assign(high + 1, 0)
            for k in range(n):
                v = values[k]
                if v < low or v > high:     # values changed since they were read (another thread writes them)
                    m = -1
                    break
                if not seen[v]:
                    seen[v] = 1
                    out_view[m] = k
                    m += 1
    if n and low >= 0 and high < 4 * n + 4096:
        if m < 0:
            raise RuntimeError("the values changed while they were read (another thread writes to them)")
        return out[:m]
    cdef uint64_t size = table_size(n), mask = size - 1, i
    cdef vector[int64_t] keys
    cdef vector[int64_t] where
    keys.resize(size)
    where.assign(size, -1)
    with nogil:
        for k in range(n):
            v = values[k]
            i = mix64(mix64(<uint64_t>v ^ HASH_SEED)) & mask
            probes = 0
            while where[i] >= 0 and keys[i] != v:
                i = next_slot(i, mask)
                probes += 1
                if probes > MAX_PROBES:
                    break
            if probes > MAX_PROBES:
                m = -1
                break
            if where[i] < 0:
                keys[i] = v
                where[i] = k
                out_view[m] = k
                m += 1
    return None if m < 0 else out[:m]


cdef void _pack(list tokens, uint8_t[::1] pool, const int64_t[::1] offsets):
    """Copy bytes objects tokens[k] (checked: bytes, of the lengths offsets say) to pool[offsets[k]:]."""
    cdef Py_ssize_t k
    cdef object token
    for k in range(len(tokens)):
        token = tokens[k]
        memcpy(&pool[offsets[k]], PyBytes_AS_STRING(token), offsets[k + 1] - offsets[k])


cdef class TokenIndex:
    """A hash index of the tokens pool[offsets[i]:offsets[i + 1]], built once and asked many times (find). A
    token equal to an earlier one is not indexed: `duplicates` counts them. `flooded`: the tokens crowd the table
    (MAX_PROBES: made to share hash slots), and find answers None.

    >>> import numpy as np
    >>> pool, offsets = np.frombuffer(b"abab", dtype=np.uint8), np.array([0, 1, 2, 4])
    >>> index = TokenIndex(pool, offsets)
    >>> index.find(pool, offsets).tolist(), index.find(pool, offsets, 0, 1, 2).tolist(), index.duplicates
    ([0, 1, 2], [2, -1], 0)
    """
    cdef vector[Slot] slots
    cdef uint64_t mask
    cdef const uint8_t[::1] pool
    cdef const int64_t[::1] offsets
    cdef readonly bint flooded
    cdef readonly Py_ssize_t duplicates

    def __cinit__(self, const uint8_t[::1] pool, const int64_t[::1] offsets):
        cdef Py_ssize_t n = offsets.shape[0] - 1, k, length
        cdef const uint8_t* p = &pool[0] if pool.shape[0] else NULL
        cdef const uint8_t* end = p + pool.shape[0] if p != NULL else NULL
        cdef const uint8_t* s
        cdef uint64_t h
        cdef int32_t found
        cdef Slot empty
        if not 1 <= offsets.shape[0] < (1 << 31):
            raise ValueError("offsets must hold 1 to 2**31 - 1 entries")
        # its own copies, checked once: every method reads them again without the GIL (splits sized a table by
        # one read of the offsets and wrote it by another), and another thread may write the caller's arrays
        pool = np.array(pool, dtype=np.uint8)
        offsets = np.array(offsets, dtype=np.int64)
        p = &pool[0] if pool.shape[0] else NULL
        end = p + pool.shape[0] if p != NULL else NULL
        _check_spans(pool, offsets, 0, 1, 1)
        self.pool = pool
        self.offsets = offsets
        empty.index = EMPTY_INDEX
        empty.tag = 0
        self.slots.assign(table_size(n), empty)
        self.mask = self.slots.size() - 1
        with nogil:
            for k in range(n):
                s = p + offsets[k]
                length = offsets[k + 1] - offsets[k]
                h = hash_wide(s, length, load_head(s, length, end), end)
                found = _find(self.slots.data(), self.mask, h, p, &offsets[0], s, length)
                if found == FLOODED:
                    self.flooded = True
                    break
                if found >= 0:
                    self.duplicates += 1
                else:
                    slot_place(self.slots.data(), self.mask, h, <int32_t>k)

    def find(self, const uint8_t[::1] queries, const int64_t[::1] query_offsets, Py_ssize_t first=0,
             Py_ssize_t step=1, Py_ssize_t span=1):
        """For each query queries[query_offsets[k]:query_offsets[k + span]], k in range(first,
        len(query_offsets) - span, step): the index of the first token with its bytes, or -1 (an int64 array);
        None when the index is flooded or a query's run is."""
        cdef Py_ssize_t n_queries, k, q, length
        cdef const uint8_t* p = &self.pool[0] if self.pool.shape[0] else NULL
        cdef const uint8_t* qp = &queries[0] if queries.shape[0] else NULL
        cdef const uint8_t* qend = qp + queries.shape[0] if qp != NULL else NULL
        cdef const uint8_t* s
        cdef uint64_t h
        cdef int32_t found
        cdef bint flooded = self.flooded
        _check_spans(queries, query_offsets, first, step, span)
        n_queries = max(0, (query_offsets.shape[0] - span - first + step - 1) // step)
        out = np.empty(n_queries, dtype=np.int64)
        cdef int64_t[::1] result = out
        with nogil:
            for q in range(0 if flooded else n_queries):
                k = first + q * step
                s = qp + query_offsets[k]
                length = query_offsets[k + span] - query_offsets[k]
                h = hash_wide(s, length, load_head(s, length, qend), qend)
                found = _find(self.slots.data(), self.mask, h, p, &self.offsets[0], s, length)
                if found == FLOODED:
                    flooded = True
                    break
                result[q] = found
        return None if flooded else out

    def splits(self, const int64_t[::1] expected=None):
        """Every way of writing one of the indexed tokens as two of them: (k, left, right, stop), the first three
        int64 arrays of token indices, one entry a split, ordered by k, then by where the cut is; None when the
        index is flooded. A cut is looked up only where tokens of both lengths exist, so a long token costs its
        length, not its square. expected (one count a token, optional): the search stops after the first token k
        whose number of splits is not expected[k], and stop is k (else -1)."""
        cdef Py_ssize_t n = self.offsets.shape[0] - 1, k, c, length, longest = 0, stop = -1
        cdef const uint8_t* p = &self.pool[0] if self.pool.shape[0] else NULL
        cdef const uint8_t* end = p + self.pool.shape[0] if p != NULL else NULL
        cdef const uint8_t* s
        cdef int32_t a, b
        cdef int64_t count
        cdef vector[int64_t] found
        cdef vector[uint8_t] has_length
        cdef bint flooded = self.flooded
        if expected is not None and expected.shape[0] != n:
            raise ValueError("expected must hold one count a token")
        for k in range(n):
            longest = max(longest, self.offsets[k + 1] - self.offsets[k])
        with nogil:
            has_length.assign(longest + 1, 0)
            for k in range(n):
                has_length[self.offsets[k + 1] - self.offsets[k]] = 1
            for k in range(0 if flooded else n):
                s = p + self.offsets[k]
                length = self.offsets[k + 1] - self.offsets[k]
                count = 0
                for c in range(1, length):
                    if not (has_length[c] and has_length[length - c]):
                        continue
                    a = _find(self.slots.data(), self.mask, hash_wide(s, c, load_head(s, c, end), end), p,
                              &self.offsets[0], s, c)
                    if a == FLOODED:
                        flooded = True
                        break
                    if a < 0:
                        continue
                    b = _find(self.slots.data(), self.mask,
                              hash_wide(s + c, length - c, load_head(s + c, length - c, end), end), p,
                              &self.offsets[0], s + c, length - c)
                    if b == FLOODED:
                        flooded = True
                        break
                    if b >= 0:
                        found.push_back(k)
                        found.push_back(a)
                        found.push_back(b)
                        count += 1
                if flooded:
                    break
                if expected is not None and count != expected[k]:
                    stop = k
                    break
        if flooded:
            return None
        out = np.empty(found.size(), dtype=np.int64)
        cdef int64_t[::1] view = out
        if found.size():
            memcpy(&view[0], found.data(), found.size() * sizeof(int64_t))
        return out[0::3].copy(), out[1::3].copy(), out[2::3].copy(), stop


def index_tokens(const uint8_t[::1] pool, const int64_t[::1] offsets, const uint8_t[::1] queries,
                 const int64_t[::1] query_offsets, Py_ssize_t first=0, Py_ssize_t step=1, Py_ssize_t span=1):
    """TokenIndex(pool, offsets).find(queries, query_offsets, first, step, span): for each query, the index of
    the first token with its bytes, or -1 (an int64 array); None when the tokens crowd the table. Given the
    tokens themselves as queries, an index other than the query's own marks a token seen before.

    >>> import numpy as np
    >>> pool, offsets = np.frombuffer(b"abab", dtype=np.uint8), np.array([0, 1, 2, 4])
    >>> index_tokens(pool, offsets, pool, offsets).tolist(), index_tokens(pool, offsets, pool, offsets, 0, 1, 2).tolist()
    ([0, 1, 2], [2, -1])
    """
    return TokenIndex(pool, offsets).find(queries, query_offsets, first, step, span)


cdef enum:
    # A run of this many full slots before the one a token belongs in does not happen by chance in a table at
    # most half full (the longest runs in real vocabularies are a few dozen): tokens made to share a run (the hash
    # is fixed, and a file can hold any tokens) would make the index quadratic, so index_tokens gives up, and
    # its callers read the file in Python.
    MAX_PROBES = 512
    FLOODED = -2            # _find: the run was longer than MAX_PROBES


cdef inline int32_t _find(const Slot* slots, uint64_t mask, uint64_t h, const uint8_t* pool, const int64_t* offsets,
                          const uint8_t* s, Py_ssize_t n) noexcept nogil:
    """The token with bytes s[0:n] and hash h in the table, -1, or FLOODED."""
    cdef uint64_t i = h & mask
    cdef uint32_t tag = slot_tag(h)
    cdef int32_t k
    cdef Py_ssize_t probes = 0
    while slots[i].index != EMPTY_INDEX:
        if slots[i].tag == tag:
            k = slots[i].index
            if offsets[k + 1] - offsets[k] == n and (n == 0 or memcmp(pool + offsets[k], s, n) == 0):
                return k
        i = next_slot(i, mask)
        probes += 1
        if probes > MAX_PROBES:
            return FLOODED
    return -1


def parse_vocab(const uint8_t[::1] data, const int16_t[::1] char_to_byte, int64_t max_id):
    """(pool, offsets, ids) of a vocab.json's bytes that is one flat JSON object {token: id} (each id a plain
    decimal int in 0..max_id: no sign, fraction, exponent or leading zero): token k is
    pool[offsets[k]:offsets[k + 1]] (uint8, int64), its id ids[k] (int64), in file order; or None for anything
    else. Duplicates are left to the caller.

    >>> import numpy as np
    >>> table = np.full(300, -1, dtype=np.int16); table[ord("a")] = 97; table[0x120] = 32
    >>> pool, offsets, ids = parse_vocab(b' {"a": 5, "\\\\u0120a":0}\\n', table, 10)
    >>> bytes(pool), offsets.tolist(), ids.tolist()
    (b'a a', [0, 1, 3], [5, 0])
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
            while not ok and i < n and s[i] == 0x22:     # a member: "token": id
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
                i = _after_item(s, i, n, 0x7D, &ok)      # , or }
                if i < 0:
                    break
            if ok and _skip_space(s, i, n) != n:
                ok = False
    if not ok:
        return None
    return _uint8_array(pool), _int64_array(offsets), _int64_array(ids)


def parse_merges(const uint8_t[::1] data, const int16_t[::1] char_to_byte):
    """(pool, offsets, lines) of a merges.txt's bytes whose every line is two tokens separated by one space (the
    second may end in carriage returns), an empty line (or only carriage returns), or, first, "#version...":
    merge k is (pool[offsets[2k]:offsets[2k + 1]], pool[offsets[2k + 1]:offsets[2k + 2]]) (its join:
    pool[offsets[2k]:offsets[2k + 2]]), from line lines[k] (1-based; int64 arrays); or None for anything else.

    >>> import numpy as np
    >>> table = np.full(300, -1, dtype=np.int16); table[ord("a")] = 97; table[0x120] = 32
    >>> pool, offsets, lines = parse_merges("#version: 2\\n\\u0120 a\\n\\n\\u0120a a\\r\\n".encode(), table)
    >>> bytes(pool), offsets.tolist(), lines.tolist()
    (b' a aa', [0, 1, 2, 4, 5], [2, 4])
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
            line_end = find_line_end(s, i, n)
            i = line_end + 1                             # past the newline
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
    return _uint8_array(pool), _int64_array(offsets), _int64_array(lines)


# --- HF tokenizer.json: the model's vocab and merges ---------------------------------------------------------

cdef Limits SKIM_LIMITS                 # what model_spans walks past: json.loads reads it again afterwards
SKIM_LIMITS.digits = 4300               # sys.get_int_max_str_digits()'s default
SKIM_LIMITS.depth = 512                 # deeper nesting is left to json.loads (which has its own limit)


cdef bint _member_spans(const uint8_t* s, Py_ssize_t i, Py_ssize_t n, const char* first, const char* second,
                        Py_ssize_t* spans) noexcept nogil:
    """For the JSON object starting at s[i]: the spans (start, end) of the values of its members named `first`
    and `second` (NUL-terminated; -1, -1 when absent) into spans[0:4]; False when it is not an object, or a
    name is given twice (json.loads would keep the last: left to it)."""
    cdef vector[uint8_t] key
    cdef bint escaped = False
    cdef Py_ssize_t start, k
    cdef const char* names[2]
    names[0] = first
    names[1] = second
    spans[0] = spans[1] = spans[2] = spans[3] = -1
    if i >= n or s[i] != 0x7B:
        return False
    i = _skip_space(s, i + 1, n)
    if i < n and s[i] == 0x7D:
        return True
    while i < n and s[i] == 0x22:
        key.clear()
        i = _string(s, i + 1, n, &key, &escaped)
        if i < 0:
            return False
        i = _skip_space(s, i, n)
        if i >= n or s[i] != 0x3A:
            return False
        start = _skip_space(s, i + 1, n)
        i = _value(s, start, n, 1, &SKIM_LIMITS)
        if i < 0:
            return False
        for k in range(2):
            if names[k][0] != 0 and key.size() == strlen(names[k]) and memcmp(key.data(), names[k], key.size()) == 0:
                if spans[2 * k] >= 0:
                    return False
                spans[2 * k] = start
                spans[2 * k + 1] = i
        i = _skip_space(s, i, n)
        if i < n and s[i] == 0x2C:
            i = _skip_space(s, i + 1, n)
            continue
        return i < n and s[i] == 0x7D
    return False


def model_spans(const uint8_t[::1] data):
    """(vocab_start, vocab_end, merges_start, merges_end): where the values of "vocab" and "merges" of the
    top-level "model" object of an HF tokenizer.json's bytes lie, or None when the file is not plainly such an
    object (a name given twice, "model" not an object, either member missing, the structure broken, ...).

    >>> model_spans(b'{"a": [1, {"b": "}"}], "model": {"merges": ["a b"], "x": 1, "vocab": {"a": 0}}}')
    (69, 77, 43, 50)
    >>> model_spans(b'{"model": {"vocab": {}, "merges": []}, "model": {}}') is None
    True
    """
    cdef Py_ssize_t n = data.shape[0], i
    cdef const uint8_t* s = &data[0] if n else NULL
    cdef Py_ssize_t top[4]
    cdef Py_ssize_t inner[4]
    cdef bint ok = False
    with nogil:
        i = _skip_space(s, 0, n)
        if _member_spans(s, i, n, "model", "", top) and top[0] >= 0:
            ok = _member_spans(s, top[0], n, "vocab", "merges", inner) and inner[0] >= 0 and inner[2] >= 0
    if not ok:
        return None
    return inner[0], inner[1], inner[2], inner[3]


def parse_merge_list(const uint8_t[::1] data, const int16_t[::1] char_to_byte):
    """(pool, offsets) of a JSON array of merges, each "a b" (one space between two non-empty tokens, escapes
    decoded) or ["a", "b"] (two non-empty strings), all of one form: merge k is (pool[offsets[2k]:offsets[2k + 1]],
    pool[offsets[2k + 1]:offsets[2k + 2]]), the tokens' characters mapped to bytes; or None for anything else.

    >>> import numpy as np
    >>> table = np.full(300, -1, dtype=np.int16); table[ord("a")] = 97; table[0x120] = 32
    >>> pool, offsets = parse_merge_list(b'["\\\\u0120 a", "a a"]', table)
    >>> bytes(pool), offsets.tolist()
    (b' aaa', [0, 1, 2, 3, 4])
    >>> bytes(parse_merge_list(b'[["\\\\u0120", "a"], ["a", "a"]]', table)[0])
    b' aaa'
    >>> parse_merge_list(b'["a  a"]', table) is None, parse_merge_list(b'[["a"]]', table) is None
    (True, True)
    >>> parse_merge_list(b'["a a", ["a", "a"]]', table) is None       # both forms: HF refuses such a list
    True
    """
    cdef Py_ssize_t n = data.shape[0], i, k, space
    cdef const uint8_t* s = &data[0] if n else NULL
    cdef const int16_t* table = &char_to_byte[0] if char_to_byte.shape[0] else NULL
    cdef Py_ssize_t table_n = char_to_byte.shape[0]
    cdef vector[uint8_t] pool, text
    cdef vector[int64_t] offsets
    cdef bint escaped = False, ok = False
    cdef uint8_t form = 0                               # the first merge's opening character: all have its form
    offsets.push_back(0)
    with nogil:
        i = _skip_space(s, 0, n)
        if i < n and s[i] == 0x5B:
            i = _skip_space(s, i + 1, n)
            if i < n and s[i] == 0x5D:
                ok = True
                i += 1
            while not ok and i < n:
                if form == 0:
                    form = s[i]
                if s[i] != form:                             # HF refuses a list of both forms
                    break
                if s[i] == 0x22:                             # "a b"
                    text.clear()
                    i = _string(s, i + 1, n, &text, &escaped)
                    if i < 0:
                        break
                    space = -1
                    for k in range(<Py_ssize_t>text.size()):
                        if text[k] == 0x20:
                            space = k if space == -1 else -2
                    if space <= 0 or space + 1 >= <Py_ssize_t>text.size():
                        break
                    if not _map_chars(text.data(), space, table, table_n, &pool):
                        break
                    offsets.push_back(pool.size())
                    if not _map_chars(text.data() + space + 1, text.size() - space - 1, table, table_n, &pool):
                        break
                    offsets.push_back(pool.size())
                elif s[i] == 0x5B:                           # ["a", "b"]
                    i = _skip_space(s, i + 1, n)
                    for k in range(2):
                        if i >= n or s[i] != 0x22:
                            i = -1
                            break
                        text.clear()
                        i = _string(s, i + 1, n, &text, &escaped)
                        if i < 0 or text.empty() or not _map_chars(text.data(), text.size(), table, table_n, &pool):
                            i = -1
                            break
                        offsets.push_back(pool.size())
                        i = _skip_space(s, i, n)
                        if k == 0:
                            if i >= n or s[i] != 0x2C:
                                i = -1
                                break
                            i = _skip_space(s, i + 1, n)
                    if i < 0 or i >= n or s[i] != 0x5D:
                        break
                    i += 1
                else:
                    break
                i = _after_item(s, i, n, 0x5D, &ok)      # , or ]
                if i < 0:
                    break
            if ok and _skip_space(s, i, n) != n:
                ok = False
    if not ok:
        return None
    return _uint8_array(pool), _int64_array(offsets)


# ------------------------------------------------------------------------------------------------- writing
# The writers of vocab.json, merges.txt and tokenizer.json's vocab and merges (bpe_fast.formats owns the files and
# the mapping, and gives it here as a table: byte c is written as table[table_offsets[c]:table_offsets[c + 1]], the
# UTF-8 of its character, escaped as json.dumps escapes it or not): the bytes of the text made from the arrays in
# two passes (a bound on its size, then the bytes), in chunks of about a budget's bytes, with no Python object a
# token.

cdef enum:
    _WIDE = 8       # a byte's written form is at most this long (json's "\u0120" is 6)


cdef Py_ssize_t _wide_table(const uint8_t[::1] table, const int64_t[::1] table_offsets, uint8_t* wide,
                            uint8_t* lengths, uint8_t* same) except -1:
    """The table as 256 rows of _WIDE bytes (wide), each row's length, and whether byte c is written as itself
    (same[c]); the longest row's length. ValueError unless table_offsets has
    257 rising entries within the table, each byte's form 1.._WIDE bytes long."""
    cdef int c
    cdef int64_t a, b
    cdef Py_ssize_t widest = 0
    if table_offsets.shape[0] != 257 or table_offsets[0] != 0 or table_offsets[256] != table.shape[0]:
        raise ValueError("table_offsets must be 257 offsets from 0 to the table's length")
    memset(wide, 0, 256 * _WIDE)
    for c in range(256):
        a, b = table_offsets[c], table_offsets[c + 1]
        if not 1 <= b - a <= _WIDE:
            raise ValueError(f"byte {c}'s written form must be 1..{_WIDE} bytes long, not {b - a}")
        memcpy(wide + c * _WIDE, &table[a], b - a)
        lengths[c] = <uint8_t>(b - a)
        same[c] = b - a == 1 and table[a] == c
        widest = max(widest, b - a)
    return widest


cdef inline int _digits(int64_t v) noexcept nogil:
    cdef int d = 1
    while v >= 10:
        v //= 10
        d += 1
    return d


cdef inline Py_ssize_t _put_int(uint8_t* out, int64_t v) noexcept nogil:
    """v (>= 0) in decimal at out; its number of digits."""
    cdef int d = _digits(v), k
    for k in range(d - 1, -1, -1):
        out[k] = <uint8_t>(0x30 + v % 10)
        v //= 10
    return d


cdef inline Py_ssize_t _put_mapped(uint8_t* out, Py_ssize_t at, Py_ssize_t cap, const uint8_t* s, int64_t n,
                                   const uint8_t* wide, const uint8_t* lengths, const uint8_t* same) noexcept nogil:
    """Append the written form of s[0:n] at out[at:] (a run of bytes written as themselves, same[c], copied at
    once); the new end, or -1 when it would pass cap - _WIDE (the size pass saw other arrays: another thread
    wrote them)."""
    cdef int64_t i = 0, j
    cdef uint8_t c
    while i < n:
        c = s[i]
        if same[c]:
            j = i + 1
            while j < n and same[s[j]]:
                j += 1
            if at + (j - i) > cap - _WIDE:
                return -1
            memcpy(out + at, s + i, j - i)
            at += j - i
            i = j
        else:
            if at > cap - _WIDE:
                return -1
            memcpy(out + at, wide + c * _WIDE, _WIDE)     # (a whole row: what follows overwrites the rest)
            at += lengths[c]
            i += 1
    return at


cdef inline Py_ssize_t _put(uint8_t* out, Py_ssize_t at, Py_ssize_t cap, const uint8_t[::1] what) noexcept nogil:
    cdef Py_ssize_t n = what.shape[0]
    if at + n > cap:
        return -1
    if n:
        memcpy(out + at, &what[0], n)
    return at + n


def mapped_object(const uint8_t[::1] pool, const int64_t[::1] offsets, const int64_t[::1] which,
                  const int64_t[::1] values, const uint8_t[::1] table, const int64_t[::1] table_offsets,
                  Py_ssize_t first=0, Py_ssize_t budget=-1):
    """(chunk, next): the bytes (uint8 array) of the JSON object {key k: values[k]} as json.dumps writes it
    ('{"a": 1, "b": 2}'; '{}' when there are none), key k token which[k] of pool
    (pool[offsets[which[k]]:offsets[which[k] + 1]]) with each byte c written as
    table[table_offsets[c]:table_offsets[c + 1]] (the caller's table says how, escaped for JSON), values[k] (>= 0)
    in decimal. The keys are not checked distinct. Written from entry `first` on, as many as fit in `budget`
    bytes (at least one; -1: all of them), the chunk ending before entry `next` (len(which): the end, with '}'):
    the chunks from first = 0 to the end, one after the other, are the whole text.

    >>> import numpy as np
    >>> table = np.frombuffer(bytes(range(256)), dtype=np.uint8)
    >>> pool, offsets = np.frombuffer(b"abc", dtype=np.uint8), np.array([0, 1, 3])
    >>> chunk, end = mapped_object(pool, offsets, np.array([1, 0]), np.array([7, 10]), table, np.arange(257))
    >>> bytes(chunk), end
    (b'{"bc": 7, "a": 10}', 2)
    >>> [(bytes(c), e) for c, e in [mapped_object(pool, offsets, np.array([1, 0]), np.array([7, 10]), table,
    ...                                           np.arange(257), k, 1) for k in (0, 1)]]
    [(b'{"bc": 7', 1), (b', "a": 10}', 2)]
    """
    cdef uint8_t wide[256 * _WIDE]
    cdef uint8_t lengths[256]
    cdef uint8_t same[256]
    cdef Py_ssize_t widest = _wide_table(table, table_offsets, wide, lengths, same)
    cdef Py_ssize_t n = which.shape[0], k, last, size, entry, at, n_tokens = offsets.shape[0] - 1
    cdef int64_t t, a, b, v
    cdef int bad = 0
    if values.shape[0] != n:
        raise ValueError(f"{n} tokens but {values.shape[0]} values")
    if not 0 <= first <= n:
        raise ValueError(f"first {first} is not in 0..{n}")
    _check_spans(pool, offsets, 0, 1, 1)
    cdef const uint8_t* p = &pool[0] if pool.shape[0] else NULL
    size = 1 if first == 0 else 0           # {
    last = first
    with nogil:
        while last < n:
            t, v = which[last], values[last]
            if t < 0 or t >= n_tokens or v < 0:
                bad = 1
                break
            a, b = offsets[t], offsets[t + 1]
            # ', "' key '": ' v (at most), and the last entry's '}'
            entry = (b - a) * widest + 4 + _digits(v) + (2 if last else 0) + (1 if last == n - 1 else 0)
            if last > first and budget >= 0 and size + entry > budget:
                break
            size += entry
            last += 1
        if first == n:
            size += 1                       # } (alone, or '{}')
    if bad:
        raise ValueError(f"token {which[last]} is not one of the {n_tokens}, or value {values[last]} is negative")
    out = np.empty(size + _WIDE, dtype=np.uint8)
    cdef uint8_t[::1] o = out
    cdef uint8_t* q = &o[0]
    cdef Py_ssize_t cap = size + _WIDE
    with nogil:
        at = 0
        if first == 0:
            q[0] = 0x7B     # {
            at = 1
        for k in range(first, last):
            t, v = which[k], values[k]
            if t < 0 or t >= n_tokens or v < 0 or at + 3 > cap:
                at = -1
                break
            if k:
                q[at] = 0x2C    # ,
                q[at + 1] = 0x20
                at += 2
            q[at] = 0x22        # "
            a, b = offsets[t], offsets[t + 1]
            if not 0 <= a <= b <= pool.shape[0]:
                at = -1
                break
            at = _put_mapped(q, at + 1, cap, p + a, b - a, wide, lengths, same)
            if at < 0 or at + 3 + _digits(v) + 1 > cap:
                at = -1
                break
            q[at] = 0x22        # ": value
            q[at + 1] = 0x3A
            q[at + 2] = 0x20
            at += 3
            at += _put_int(q + at, v)
        if at >= 0 and last == n:
            q[at] = 0x7D        # }
            at += 1
    if at < 0:
        raise RuntimeError("the arrays changed while they were read (another thread writes to them)")
    return out[:at], last


def mapped_pairs(const uint8_t[::1] pool, const int64_t[::1] offsets, const uint8_t[::1] table,
                 const int64_t[::1] table_offsets, const uint8_t[::1] head, const uint8_t[::1] before,
                 const uint8_t[::1] middle, const uint8_t[::1] after, const uint8_t[::1] between,
                 const uint8_t[::1] tail, Py_ssize_t first=0, Py_ssize_t budget=-1):
    """(chunk, next): the bytes (uint8 array) head + between.join(before + a + middle + b + after for each pair)
    + tail, pair k the tokens 2k and 2k + 1 of pool (pool[offsets[j]:offsets[j + 1]], as pack_pairs gives them)
    each byte c written as table[table_offsets[c]:table_offsets[c + 1]] (see mapped_object): merges.txt's lines,
    or tokenizer.json's list of merges. From pair `first` on, as many as fit in `budget` bytes (at least one;
    -1: all), as mapped_object's chunks.

    >>> import numpy as np
    >>> table = np.frombuffer(bytes(range(256)), dtype=np.uint8)
    >>> pool, offsets = np.frombuffer(b"abcd", dtype=np.uint8), np.array([0, 1, 3, 4, 4])
    >>> chunk, end = mapped_pairs(pool, offsets, table, np.arange(257), b"[", b'"', b" ", b'"', b", ", b"]")
    >>> bytes(chunk), end
    (b'["a bc", "d "]', 2)
    """
    cdef uint8_t wide[256 * _WIDE]
    cdef uint8_t lengths[256]
    cdef uint8_t same[256]
    cdef Py_ssize_t widest = _wide_table(table, table_offsets, wide, lengths, same)
    if offsets.shape[0] % 2 != 1:
        raise ValueError(f"pairs need an odd number of offsets (two tokens a pair, and the end), not {offsets.shape[0]}")
    _check_spans(pool, offsets, 0, 1, 1)
    cdef Py_ssize_t n = offsets.shape[0] // 2, k, at, last, entry
    if not 0 <= first <= n:
        raise ValueError(f"first {first} is not in 0..{n}")
    cdef Py_ssize_t item = before.shape[0] + middle.shape[0] + after.shape[0]
    cdef const uint8_t* p = &pool[0] if pool.shape[0] else NULL
    cdef Py_ssize_t size = head.shape[0] if first == 0 else 0
    cdef int64_t a, b
    last = first
    with nogil:
        while last < n:
            a, b = offsets[2 * last], offsets[2 * last + 2]         # (rising: checked)
            entry = (b - a) * widest + item + (between.shape[0] if last else 0)        # (at most)
            entry += tail.shape[0] if last == n - 1 else 0
            if last > first and budget >= 0 and size + entry > budget:
                break
            size += entry
            last += 1
        if first == n:
            size += tail.shape[0]           # (alone, or head + tail)
    out = np.empty(size + _WIDE, dtype=np.uint8)
    cdef uint8_t[::1] o = out
    cdef uint8_t* q = &o[0]
    cdef Py_ssize_t cap = size + _WIDE
    with nogil:
        at = _put(q, 0, cap, head) if first == 0 else 0
        for k in range(first, last):
            if k:
                at = _put(q, at, cap, between)
            at = _put(q, at, cap, before) if at >= 0 else -1
            a, b = offsets[2 * k], offsets[2 * k + 1]
            if at < 0 or not 0 <= a <= b <= pool.shape[0]:
                at = -1
                break
            at = _put_mapped(q, at, cap, p + a, b - a, wide, lengths, same)
            at = _put(q, at, cap, middle) if at >= 0 else -1
            a, b = offsets[2 * k + 1], offsets[2 * k + 2]
            if at < 0 or not 0 <= a <= b <= pool.shape[0]:
                at = -1
                break
            at = _put_mapped(q, at, cap, p + a, b - a, wide, lengths, same)
            at = _put(q, at, cap, after) if at >= 0 else -1
            if at < 0:
                break
        if at >= 0 and last == n:
            at = _put(q, at, cap, tail)
    if at < 0:
        raise RuntimeError("the arrays changed while they were read (another thread writes to them)")
    return out[:at], last


def same_spans(const uint8_t[::1] pool, const int64_t[::1] offsets, const int64_t[::1] which,
               const uint8_t[::1] other_pool, const int64_t[::1] other_offsets):
    """Whether the tokens which[0], which[1], ... of pool (token j: pool[offsets[j]:offsets[j + 1]]) are the
    tokens of other_pool, in order (token k: other_pool[other_offsets[k]:other_offsets[k + 1]]): what
    gather_spans(pool, offsets, which) == (other_pool, other_offsets) says, with no copy of the bytes.

    >>> import numpy as np
    >>> pool, offsets = np.frombuffer(b"abc", dtype=np.uint8), np.array([0, 1, 3])
    >>> same_spans(pool, offsets, np.array([1, 0]), np.frombuffer(b"bca", dtype=np.uint8), np.array([0, 2, 3]))
    True
    >>> same_spans(pool, offsets, np.array([1, 0]), np.frombuffer(b"bca", dtype=np.uint8), np.array([0, 1, 3]))
    False
    """
    _check_spans(pool, offsets, 0, 1, 1)
    _check_spans(other_pool, other_offsets, 0, 1, 1)
    cdef Py_ssize_t n = which.shape[0], k, n_tokens = offsets.shape[0] - 1
    cdef int64_t t, a, b, c, d
    cdef bint same = other_offsets.shape[0] == n + 1 and (n == 0 or other_offsets[0] == 0) and (
        other_offsets[n] == other_pool.shape[0])
    cdef const uint8_t* p = &pool[0] if pool.shape[0] else NULL
    cdef const uint8_t* r = &other_pool[0] if other_pool.shape[0] else NULL
    with nogil:
        for k in range(n):
            if not same:
                break
            t = which[k]
            if t < 0 or t >= n_tokens:
                same = False
                break
            a, b, c, d = offsets[t], offsets[t + 1], other_offsets[k], other_offsets[k + 1]
            if not (0 <= a <= b <= pool.shape[0] and 0 <= c <= d <= other_pool.shape[0]) or b - a != d - c:
                same = False
            elif b > a and memcmp(p + a, r + c, b - a) != 0:
                same = False
    return bool(same)
