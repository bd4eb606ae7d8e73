# distutils: language = c++
# distutils: extra_compile_args = -O3 -std=c++17
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The BPE merge engine: learns merges from distinct pre-tokens and their frequencies.

Every occurrence of a symbol lives in one flat array `sym` (int32 symbol ids, -1 once merged away) with
doubly linked neighbours `nxt`/`prv` (-1 at a word's ends) and the word it belongs to `wid`. Each distinct
adjacent pair gets a pair id (pid) with its count and the list of positions where it was created. A
max-heap of (count, pid) with lazy invalidation picks each merge; merging walks only that pair's
positions and updates the counts of the neighbouring pairs.

Symbols are canonical by their bytes: a merge whose bytes already exist (("ab","c") after ("a","bc"))
reuses the existing symbol, as the reference algorithm (which keys pairs by bytes) does.

Worked example, one word "aaab" with frequency 2:
    pairs (a,a) twice -> count 4; (a,b) once -> count 2.
    merge (a,a) -> aa, positions in order 0, 1:
      at 0: no left neighbour; right neighbour a at 2: (a,a) -2; the pair itself (a,a) -2 -> 0; (aa,a) +2.
      at 1: merged away at 0, skipped.  The word is [aa, a, b].
    counts now (aa,a) 2, (a,b) 2: a tie, won by the greater pair, (b"aa", b"a") > (b"a", b"b").
"""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcmp, memcpy
from libcpp.vector cimport vector
from libcpp.algorithm cimport sort as cpp_sort


cdef struct HeapEntry:
    int64_t count
    int32_t pid


cdef inline uint64_t mix64(uint64_t x) noexcept nogil:
    # splitmix64's finaliser: a cheap, well-spread hash of a 64-bit key
    x ^= x >> 30
    x *= <uint64_t>0xbf58476d1ce4e5b9ULL
    x ^= x >> 27
    x *= <uint64_t>0x94d049bb133111ebULL
    x ^= x >> 31
    return x


cdef inline uint64_t hash_bytes(const uint8_t* p, Py_ssize_t n) noexcept nogil:
    # FNV-1a over the bytes, then mixed
    cdef uint64_t h = <uint64_t>14695981039346656037ULL
    cdef Py_ssize_t i
    for i in range(n):
        h = (h ^ p[i]) * <uint64_t>1099511628211ULL
    return mix64(h ^ <uint64_t>n)


cdef class MergeEngine:
    """Learns merges from the distinct pre-tokens of a corpus.

    words: int32 array of byte values (0..255), the pre-tokens concatenated; offsets: int64 array of
    len(freqs) + 1 boundaries into words; freqs: int64 array, the count of each pre-token.
    """
    # occurrences
    cdef vector[int32_t] sym, nxt, prv, wid
    cdef vector[int64_t] freq
    # pairs
    cdef vector[int32_t] pleft, pright, ptouch
    cdef vector[int64_t] pcount
    cdef vector[vector[int32_t]] ppos
    cdef vector[uint64_t] pkeys        # open addressing: key (a << 32 | b) + 1, 0 = empty
    cdef vector[int32_t] pvals
    cdef uint64_t pmask
    cdef Py_ssize_t pfill
    # heap
    cdef vector[HeapEntry] heap
    # symbols (canonical by bytes)
    cdef vector[uint8_t] pool
    cdef vector[int64_t] tok_off
    cdef vector[int32_t] tok_len
    cdef vector[int32_t] ikeys         # intern table: symbol id + 1, 0 = empty
    cdef vector[uint64_t] ihash
    cdef uint64_t imask
    # results
    cdef vector[int32_t] merge_a, merge_b, merge_c
    cdef vector[int32_t] touched

    def __init__(self, const int32_t[::1] words, const int64_t[::1] offsets, const int64_t[::1] freqs):
        cdef Py_ssize_t nwords = freqs.shape[0]
        cdef Py_ssize_t total = words.shape[0]
        if offsets.shape[0] != nwords + 1:
            raise ValueError("offsets must have len(freqs) + 1 entries")
        if nwords and (offsets[0] != 0 or offsets[nwords] != total):
            raise ValueError("offsets must start at 0 and end at len(words)")
        cdef Py_ssize_t i, w
        for i in range(total):
            if words[i] < 0 or words[i] > 255:
                raise ValueError(f"words[{i}] = {words[i]} is not a byte value")
        for w in range(nwords):
            if offsets[w + 1] < offsets[w]:
                raise ValueError(f"offsets are not increasing at {w}")
            if freqs[w] < 0:
                raise ValueError(f"freqs[{w}] = {freqs[w]} is negative")
        with nogil:
            self._init_symbols()
            self._build(&words[0] if total else NULL, &offsets[0], &freqs[0] if nwords else NULL,
                        nwords, total)

    cdef void _init_symbols(self) noexcept nogil:
        cdef int32_t b
        cdef uint8_t byte
        self.imask = 1023
        self.ikeys.assign(1024, 0)
        self.ihash.assign(1024, 0)
        for b in range(256):
            byte = <uint8_t>b
            self._intern_new(&byte, 1)

    cdef int32_t _intern_new(self, const uint8_t* p, Py_ssize_t n) noexcept nogil:
        """Add a symbol with bytes p[:n] (known to be absent); returns its id."""
        cdef int32_t s = <int32_t>self.tok_len.size()
        cdef Py_ssize_t start = self.pool.size()
        self.pool.resize(start + n)
        memcpy(&self.pool[start], p, n)
        self.tok_off.push_back(start)
        self.tok_len.push_back(<int32_t>n)
        if <uint64_t>(self.tok_len.size() * 2) > self.imask:
            self._intern_grow()
        else:
            self._intern_put(s, hash_bytes(p, n))
        return s

    cdef void _intern_put(self, int32_t s, uint64_t h) noexcept nogil:
        cdef uint64_t slot = h & self.imask
        while self.ikeys[slot] != 0:
            slot = (slot + 1) & self.imask
        self.ikeys[slot] = s + 1
        self.ihash[slot] = h

    cdef void _intern_grow(self) noexcept nogil:
        cdef Py_ssize_t cap = (self.imask + 1) * 2
        cdef int32_t s
        self.imask = cap - 1
        self.ikeys.assign(cap, 0)
        self.ihash.assign(cap, 0)
        for s in range(<int32_t>self.tok_len.size()):
            self._intern_put(s, hash_bytes(&self.pool[self.tok_off[s]], self.tok_len[s]))

    cdef int32_t _intern_concat(self, int32_t a, int32_t b) noexcept nogil:
        """The symbol whose bytes are bytes(a) + bytes(b), created if new."""
        cdef Py_ssize_t la = self.tok_len[a], lb = self.tok_len[b]
        cdef vector[uint8_t] buf
        buf.resize(la + lb)
        memcpy(&buf[0], &self.pool[self.tok_off[a]], la)
        memcpy(&buf[la], &self.pool[self.tok_off[b]], lb)
        cdef uint64_t h = hash_bytes(&buf[0], la + lb)
        cdef uint64_t slot = h & self.imask
        cdef int32_t s
        while self.ikeys[slot] != 0:
            s = self.ikeys[slot] - 1
            if self.ihash[slot] == h and self.tok_len[s] == la + lb and \
                    memcmp(&self.pool[self.tok_off[s]], &buf[0], la + lb) == 0:
                return s
            slot = (slot + 1) & self.imask
        return self._intern_new(&buf[0], la + lb)

    # --- pair table -------------------------------------------------------------------------

    cdef void _pairs_grow(self) noexcept nogil:
        cdef Py_ssize_t cap = (self.pmask + 1) * 2 if self.pmask else 1 << 16
        cdef vector[uint64_t] keys
        cdef vector[int32_t] vals
        keys.swap(self.pkeys)
        vals.swap(self.pvals)
        self.pkeys.assign(cap, 0)
        self.pvals.assign(cap, -1)
        self.pmask = cap - 1
        cdef Py_ssize_t k
        cdef uint64_t slot
        for k in range(<Py_ssize_t>keys.size()):
            if keys[k] != 0:
                slot = mix64(keys[k]) & self.pmask
                while self.pkeys[slot] != 0:
                    slot = (slot + 1) & self.pmask
                self.pkeys[slot] = keys[k]
                self.pvals[slot] = vals[k]

    cdef int32_t _pair_id(self, int32_t a, int32_t b) noexcept nogil:
        """The pid of (a, b), created (count 0, no positions) if new."""
        cdef uint64_t key = ((<uint64_t>a << 32) | <uint32_t>b) + 1
        cdef uint64_t slot = mix64(key) & self.pmask
        cdef uint64_t k
        while True:
            k = self.pkeys[slot]
            if k == key:
                return self.pvals[slot]
            if k == 0:
                break
            slot = (slot + 1) & self.pmask
        cdef int32_t pid = <int32_t>self.pcount.size()
        self.pkeys[slot] = key
        self.pvals[slot] = pid
        self.pleft.push_back(a)
        self.pright.push_back(b)
        self.pcount.push_back(0)
        self.ptouch.push_back(-1)
        self.ppos.emplace_back()
        self.pfill += 1
        if <uint64_t>(self.pfill * 2) > self.pmask:
            self._pairs_grow()
        return pid

    cdef inline void _add(self, int32_t a, int32_t b, int64_t delta, int32_t pos, int32_t stamp) noexcept nogil:
        """Add delta to the count of (a, b); record pos (>= 0) as a place where the pair now stands."""
        cdef int32_t pid = self._pair_id(a, b)
        self.pcount[pid] += delta
        if pos >= 0:
            self.ppos[pid].push_back(pos)
        if self.ptouch[pid] != stamp:
            self.ptouch[pid] = stamp
            self.touched.push_back(pid)

    # --- heap ordering: higher count first, ties to the lexicographically greatest (bytes, bytes) ---

    cdef inline int _cmp_sym(self, int32_t s, int32_t t) noexcept nogil:
        if s == t:
            return 0
        cdef int32_t ls = self.tok_len[s], lt = self.tok_len[t]
        cdef int c = memcmp(&self.pool[self.tok_off[s]], &self.pool[self.tok_off[t]], ls if ls < lt else lt)
        if c != 0:
            return c
        return ls - lt

    cdef inline bint _above(self, HeapEntry x, HeapEntry y) noexcept nogil:
        """True if x should be merged before y."""
        if x.count != y.count:
            return x.count > y.count
        cdef int c = self._cmp_sym(self.pleft[x.pid], self.pleft[y.pid])
        if c != 0:
            return c > 0
        return self._cmp_sym(self.pright[x.pid], self.pright[y.pid]) > 0

    cdef void _sift_down(self, Py_ssize_t i) noexcept nogil:
        cdef Py_ssize_t n = self.heap.size(), child
        cdef HeapEntry e = self.heap[i]
        while True:
            child = 2 * i + 1
            if child >= n:
                break
            if child + 1 < n and self._above(self.heap[child + 1], self.heap[child]):
                child += 1
            if not self._above(self.heap[child], e):
                break
            self.heap[i] = self.heap[child]
            i = child
        self.heap[i] = e

    cdef void _push(self, int64_t count, int32_t pid) noexcept nogil:
        cdef HeapEntry e
        e.count = count
        e.pid = pid
        self.heap.push_back(e)
        cdef Py_ssize_t i = self.heap.size() - 1, parent
        while i > 0:
            parent = (i - 1) // 2
            if not self._above(e, self.heap[parent]):
                break
            self.heap[i] = self.heap[parent]
            i = parent
        self.heap[i] = e

    cdef HeapEntry _pop(self) noexcept nogil:
        cdef HeapEntry top = self.heap[0]
        self.heap[0] = self.heap.back()
        self.heap.pop_back()
        if self.heap.size() > 1:
            self._sift_down(0)
        return top

    # --- building and merging ---------------------------------------------------------------

    cdef void _build(self, const int32_t* words, const int64_t* offsets, const int64_t* freqs,
                     Py_ssize_t nwords, Py_ssize_t total) noexcept nogil:
        cdef Py_ssize_t w, i, start, end
        self.sym.resize(total)
        self.nxt.resize(total)
        self.prv.resize(total)
        self.wid.resize(total)
        self.freq.resize(nwords)
        self.pmask = 0
        self.pfill = 0
        self._pairs_grow()
        for w in range(nwords):
            start = offsets[w]
            end = offsets[w + 1]
            self.freq[w] = freqs[w]
            for i in range(start, end):
                self.sym[i] = words[i]
                self.wid[i] = <int32_t>w
                self.prv[i] = <int32_t>(i - 1) if i > start else -1
                self.nxt[i] = <int32_t>(i + 1) if i + 1 < end else -1
            if freqs[w] == 0:
                continue
            for i in range(start, end - 1):
                self._add(words[i], words[i + 1], freqs[w], <int32_t>i, -2)
        self.touched.clear()
        cdef int32_t pid
        cdef HeapEntry e
        for pid in range(<int32_t>self.pcount.size()):
            if self.pcount[pid] > 0:
                e.count = self.pcount[pid]
                e.pid = pid
                self.heap.push_back(e)
        cdef Py_ssize_t k = <Py_ssize_t>self.heap.size() // 2
        while k > 0:
            k -= 1
            self._sift_down(k)

    cdef int _merge_one(self) noexcept nogil:
        """Do the next merge; returns 0 when no pair is left."""
        cdef HeapEntry top
        while True:
            if self.heap.empty():
                return 0
            top = self._pop()
            if top.count > 0 and self.pcount[top.pid] == top.count:
                break
        cdef int32_t pid = top.pid
        cdef int32_t a = self.pleft[pid], b = self.pright[pid]
        cdef int32_t c = self._intern_concat(a, b)
        cdef int32_t stamp = <int32_t>self.merge_c.size()
        self.merge_a.push_back(a)
        self.merge_b.push_back(b)
        self.merge_c.push_back(c)
        cdef vector[int32_t] positions
        positions.swap(self.ppos[pid])
        if a == b:
            # overlapping occurrences ("aaa") must be merged left to right
            cpp_sort(positions.begin(), positions.end())
        self.touched.clear()
        cdef Py_ssize_t k
        cdef int32_t i, j, p, n
        cdef int64_t f
        for k in range(<Py_ssize_t>positions.size()):
            i = positions[k]
            if self.sym[i] != a:
                continue
            j = self.nxt[i]
            if j < 0 or self.sym[j] != b:
                continue
            f = self.freq[self.wid[i]]
            p = self.prv[i]
            n = self.nxt[j]
            if p >= 0:
                self._add(self.sym[p], a, -f, -1, stamp)
            if n >= 0:
                self._add(b, self.sym[n], -f, -1, stamp)
            self._add(a, b, -f, -1, stamp)
            self.sym[i] = c
            self.sym[j] = -1
            self.nxt[i] = n
            if n >= 0:
                self.prv[n] = i
            if p >= 0:
                self._add(self.sym[p], c, f, p, stamp)
            if n >= 0:
                self._add(c, self.sym[n], f, i, stamp)
        for k in range(<Py_ssize_t>self.touched.size()):
            pid = self.touched[k]
            if self.pcount[pid] > 0:
                self._push(self.pcount[pid], pid)
            elif self.pcount[pid] == 0:
                self.ppos[pid].clear()
                self.ppos[pid].shrink_to_fit()
        return 1

    def run(self, Py_ssize_t max_merges):
        """Do up to max_merges merges; returns how many were done (fewer when no pair is left)."""
        cdef Py_ssize_t done = 0
        with nogil:
            while done < max_merges and self._merge_one():
                done += 1
        return done

    @property
    def num_merges(self):
        return self.merge_c.size()

    def merges(self):
        """The merges done so far as a list of (bytes, bytes), in order."""
        cdef const uint8_t* base = self.pool.data()
        cdef list names = [(<const char*>base)[self.tok_off[s]:self.tok_off[s] + self.tok_len[s]]
                           for s in range(<int32_t>self.tok_len.size())]
        return [(names[self.merge_a[k]], names[self.merge_b[k]]) for k in range(<Py_ssize_t>self.merge_a.size())]

    def pair_count(self, bytes left, bytes right):
        """The current count of the pair of symbols with these bytes (0 if either is unknown); for tests."""
        cdef int32_t a = self._lookup(left), b = self._lookup(right)
        if a < 0 or b < 0:
            return 0
        cdef uint64_t key = ((<uint64_t>a << 32) | <uint32_t>b) + 1
        cdef uint64_t slot = mix64(key) & self.pmask
        while self.pkeys[slot] != 0:
            if self.pkeys[slot] == key:
                return self.pcount[self.pvals[slot]]
            slot = (slot + 1) & self.pmask
        return 0

    cdef int32_t _lookup(self, bytes data):
        cdef const uint8_t* p = <const uint8_t*><const char*>data
        cdef Py_ssize_t n = len(data)
        cdef uint64_t h = hash_bytes(p, n)
        cdef uint64_t slot = h & self.imask
        cdef int32_t s
        while self.ikeys[slot] != 0:
            s = self.ikeys[slot] - 1
            if self.ihash[slot] == h and self.tok_len[s] == n and memcmp(&self.pool[self.tok_off[s]], p, n) == 0:
                return s
            slot = (slot + 1) & self.imask
        return -1
