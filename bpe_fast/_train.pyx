# distutils: language = c++
# distutils: extra_compile_args = -O3 -std=c++17
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The BPE merge engine: learns merges from distinct pre-tokens (words) and their frequencies.

Layout, built for millions of distinct words in little memory (2 or 4 bytes a byte of word, plus the pair index):

* `sym`, one slot per byte of every word, words laid end to end with a sentinel slot (SENT) before,
  between and after them. A symbol covering bytes [i, e) of a word sits in its first slot: sym[i] >= 0 is
  its id; its last slot (when e - 1 > i) holds a relative back pointer -(e - 1 - i + 2), its distance back
  to the first slot; slots inside hold -1. So the right neighbour of the symbol at i starts at
  i + len(sym[i]) and the left one ends at i - 1: no link arrays. The slots are int16 ("narrow": half the
  memory, the engine's largest array) when every id fits (the caller's max_merges: 256 + max_merges <=
  NARROW_IDS) and every word is at most NARROW_WORD bytes (the pointers are relative for that: their size
  is a word's length, not the corpus's), else int32. A narrow engine asked for id NARROW_IDS after all (more
  merges than promised) rewrites its slots as int32 first (_widen: for a moment 6 bytes a slot). The code
  that reads or writes slots is in functions fused over the slot type (slot_t), each called through a test
  of `narrow` (once a merge, a compaction's checked segment, a range of the setup: never in a loop over
  slots).
* Words are grouped by frequency ("classes"): the frequency of the word holding slot i is found by a binary
  search over the few thousand class ends, which stay in cache; no word id is kept per slot.
* Each distinct adjacent pair has a pair id (pid) with its count and a segment of an arena of positions
  (slots where the pair was created; some may be stale and are checked when used). The first segments are
  built in one counting-sort pass; a merge's new pairs get theirs in one grouped append; merged and dead
  segments are garbage, compacted in place when the arena is full and a quarter of it is garbage (else it
  grows by a quarter). Positions also go stale: a merge next to a pair's occurrence changes it for good
  (symbols at a slot only ever grow, so a stale position never holds its pair again), and about half of a
  large run's live positions are stale. A large engine (LEAN_SLOTS slots or more: about 3 million distinct
  pre-tokens) counts them for each pair (a merge knows which pairs lost occurrences, and how many), compacts
  when a quarter of the arena is garbage or stale, drops them as it compacts and gives back the pages past
  the arena's new end: on 150 MB of web-like text (5.2 million distinct pre-tokens) to vocab 32,000, a peak
  of 696 MB instead of 929 MB. Checking a position reads its slot, at random, so a compaction checks only
  the segments of which a quarter or more may be stale and moves the others as they are (on 500 MB of
  web-like text, 227 million positions checked instead of 3 compactions' worth of every live one, and a
  peak 8% lower); a smaller run is better without any of this. The arena and the
  pair arrays live in ReVec, a realloc-backed array: growing one is an mremap, so pages already touched are
  neither copied nor faulted in again (page faults were a quarter of train_from_counts' time on 330 MB of
  real text with std::vector's copy-on-grow).
* Positions under a budget. On 5 GB of web-like text (1.17 billion slots) the first positions are a billion,
  4 GB, and the first merges grew them to 5.1 GB: more than the slots. A bounded engine keeps positions only
  for the pairs that count a watermark T or more; the others are "positionless" (plen UNTRACKED): they keep
  their exact count (pair table, heap) and their number of occurrences (pocc: a merge counts the occurrences
  it takes from each pair, `gone`, and makes, `made`), not where they are. This is exact because the best
  count never rises: every occurrence a merge of (a, b) -> c makes, of (x, c) or (c, y), is one of (a, b)'s,
  so a pair's count rises only in the merge that makes one of its symbols. The index gives positions to the
  byte pairs of count T0 or more, T0 the least count whose pairs' occurrences fit the budget (_bound_positions);
  after each merge a pair it made gets its positions only when it counts T or more (_drop_records), and a pair
  positionless before stays so (the positions the merge found are only some of its occurrences: the case of a
  merge whose bytes already existed, which reuses that symbol and its pairs). When the heap's best pair is
  positionless (its count is below T, or it is such a reused symbol's), _rescan lowers T to the least count
  whose pairs' occurrences fit the budget (by a histogram of the counts; at most 65,536 pairs, MAX_WANTED, and
  at most the best count), compacts the arena dropping the positions of pairs now below it, and collects the
  positions of the positionless pairs at or above it in one pass over the slots, symbol to symbol, into
  segments sized by pocc: each adjacent pair is looked up in a small table of the wanted pairs after a test of
  per-symbol flags (left or right symbol of a wanted pair), in two ranges of slots at once when the engine has
  threads. A replayed merge (continued training) of a positionless pair starts one too. The engine is bounded
  when it is lean and its first positions would take more than half its slots' bytes (POSITIONS_SHARE) and more
  than 1 GiB (MIN_BUDGET: 268 million positions); the budget is then the larger of the two: 293 million
  positions (1.2 GB) for 5 GB of web-like text, where the billion of the first positions, the 1.3 billion of
  the first merges, took 4 to 5.1 GB (5 re-scans of ~11 s each there). Smaller runs keep every position: each
  re-scan reads all the slots, and on 150 MB of web-like text, bounded by half its slots' bytes, training took
  25% longer for memory it did not need (positions_budget= sets any budget: tests force tiny ones, many
  re-scans). BPE_FAST_TRACE_RESCANS=1 in the
  environment prints each re-scan (benchmarks).
* One hash table maps a pair to its pid (4 bytes a slot: the pid; the key is read from the pair's array), but
  a merge asks it once per distinct neighbour, not per
  occurrence: every pair a merge of (a, b) -> c touches is (x, a), (b, y), (x, c) or (c, y), so four arrays
  indexed by the other symbol, valid for that merge, cache the pids and collect the count changes, which
  are applied once when the merge ends.
* A max-heap of (count, pid) picks each merge; ties go to the lexicographically greatest (bytes, bytes), as
  in the reference algorithm. A pair's entry is pushed when its count rises; when it falls nothing is done
  until the old entry (which ranks at least as high) comes up and is pushed again with the count of now.
  Only candidates enter the heap: with max_token_length, a pair whose concatenation is longer is never pushed
  (its count is still kept, lengths never change). run(n, min_count) stops when the best count is below
  min_count, leaving that pair in the heap.
* Continued training: replay(tokens, offsets) does given merges in order, each exactly as a chosen merge
  (_merge), or, when the pair does not occur, only makes its token (so later merges that use it resolve) and
  records it with count 0.

Symbols are canonical by their bytes, as in the reference algorithm (which keys pairs by bytes): a merge whose
bytes already exist would reuse that symbol and its pairs. (Whether whole-word BPE can ever rebuild bytes an
earlier merge made is not relied on either way: the engine handles it, and the hypothesis tests have not
produced one.)

Worked example, one word "aaab" with frequency 2, slots [S a a a b S]:
    pairs (a,a) twice -> count 4; (a,b) once -> count 2.
    merge (a,a) -> aa, positions in order 1, 2:
      at 1: no left neighbour; right neighbour a at 3: (a,a) -2; the pair itself (a,a) -2 -> 0; (aa,a) +2.
        slots [S aa ~1 a b S] (~1: the back pointer to 1, -(1 + 2): its first slot is 1 before it).
      at 2: no longer a symbol's start, skipped.  The word is [aa, a, b].
    counts now (aa,a) 2, (a,b) 2: a tie, won by the greater pair, (b"aa", b"a") > (b"a", b"b").
"""
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcmp, memcpy, memmove
from libcpp.vector cimport vector
from libcpp.algorithm cimport is_sorted, sort as cpp_sort, upper_bound

from bpe_fast._hashing cimport (EMPTY_INDEX, ROLLING_BASE, Slot, mix64, next_slot, pair_key, pair_slot,
                                rolling_concat, rolling_hash, slot_place, slot_tag, table_shift)
from bpe_fast._heap cimport HeapEntry, heap_make, heap_pop, heap_sift_up
from bpe_fast._revec cimport ReVec, assign_or_end, huge_pages, push_or_end, refill_or_end, resize_or_end
from bpe_fast._threads cimport run_in_threads
from bpe_fast._runs cimport RunReader, run_next, run_problem as describe_run, run_rewind, run_stop


ctypedef fused slot_t:     # a slot: int16 in a narrow engine, else int32
    int16_t
    int32_t


cdef enum:
    SENT = -2           # sentinel slot between words
    NARROW_IDS = 32768  # a narrow engine's symbol ids are below this (int16)
    NARROW_WORD = 32767 # and its words at most this many bytes (a back pointer -(d + 2), d < a word's length)
    LEAN_SLOTS = 1 << 25    # an engine of this many slots (128 MB of them) or more is lean (see above)
    INNER = -1          # a slot inside a symbol
    SMALL_FREQ = 1 << 16
    VALIDATE_SHARE = 4  # a lean compaction checks a segment's positions when 1 / VALIDATE_SHARE of them or
                        # more went stale since it was last checked; it moves the others as they are
    LEAN_TRIGGER = 4    # a lean engine compacts when 1 / LEAN_TRIGGER of its arena is garbage or stale
    MAX_INDEX_THREADS = 8
    MAX_WANTED = 1 << 16    # a re-scan collects the positions of this many pairs at most (its table: 4 MB)
    INDEX_SLOTS_PER_THREAD = 1 << 16    # the pair index: fewer slots than this a thread, not worth one
    BYTE_PAIRS = 65536
    LAYOUT_WORDS_PER_THREAD = 1 << 15   # laying words out: fewer than this a thread, not worth one
    PID_LOOK_UP = -2    # a map slot's pid before _resolve_pids: look the pair up (made if not found)
    PID_NEW = -3        # the same for a pair known to be new: made without looking
    RESOLVE_GROUP = 32  # _resolve_pids' look-ups fetched ahead at a time
    UNTRACKED = -1      # plen of a positionless pair (a bounded engine: see "Positions under a budget")
    COUNT_BUCKETS = 57 * 1024   # _watermark's histogram of pair counts (_count_bucket)
    POSITIONS_SHARE = 2 # a lean engine is bounded, by 1 / this of its slots' bytes or MIN_BUDGET positions,
    MIN_BUDGET = 1 << 28    # whichever is more, when its positions would be more (see "Positions under a budget")


cdef struct LayOut:
    # one thread's share of MergeEngine._lay_out's step 2: the words order[k_lo:k_hi] into sym[slot_lo:slot_hi]
    void* owner                 # the MergeEngine (its caller holds it)
    const uint8_t* tokens
    const int64_t* offsets
    const int64_t* counts
    const int32_t* order
    Py_ssize_t total, k_lo, k_hi
    int64_t slot_lo, slot_hi
    double pairs                # out: the sum of its words' pair counts
    vector[int64_t]* starts     # out: the first slot of each class it begins, and its frequency
    vector[int64_t]* freqs
    bint changed                # out: a value out of order or bounds (another thread writes the arrays)


cdef struct PairScan:
    # one thread's share of MergeEngine._index_pairs: the pairs (sym[i], sym[i + 1]), lo <= i < hi, by byte pair
    # x * 256 + y (BYTE_PAIRS entries each): how often (count: the sum of their words' frequencies) and where
    void* owner                 # the MergeEngine (its caller holds it)
    Py_ssize_t lo, hi
    int64_t* count
    int32_t* length             # how many
    int32_t* first              # the byte pairs in the order first met, seen of them
    Py_ssize_t seen
    int64_t* cursor             # the second pass: where its next position goes in the arena
    bint positions              # False: the first pass (counts), True: the second (positions)


cdef struct MapSlot:
    int64_t delta       # this merge's change to the pair's count, applied when the merge ends
    int64_t fill        # positions recorded for the pair in this merge, then where the next one goes
    int32_t stamp       # the merge this slot was filled in (else the slot is empty)
    int32_t pid
    int32_t gone        # the pair's occurrences this merge took away (positions it made stale)
    int32_t made        # and those it made (a bounded engine keeps each pair's number of occurrences)


cdef struct Record:
    int32_t pos         # a slot where a pair was created in this merge
    int32_t at          # the pair's map slot, or -1: look it up when the merge ends (it may change before)


cdef extern from *:
    void prefetch "__builtin_prefetch" (const void*) noexcept nogil
    int clzll "__builtin_clzll" (unsigned long long) noexcept nogil


import os as _os
from posix.time cimport clock_gettime, timespec, CLOCK_MONOTONIC

cdef bint _trace = bool(_os.environ.get("BPE_FAST_TRACE_RESCANS"))     # benchmarks: print each re-scan


cdef double _now() noexcept nogil:
    cdef timespec t
    clock_gettime(CLOCK_MONOTONIC, &t)
    return t.tv_sec + t.tv_nsec * 1e-9


cdef inline void _reverse(int32_t* p, int64_t n) noexcept nogil:
    """p[:n] in the opposite order (std::reverse, which this module's check of noexcept C++ calls refuses)."""
    cdef int64_t k
    cdef int32_t t
    for k in range(n // 2):
        t = p[k]
        p[k] = p[n - 1 - k]
        p[n - 1 - k] = t


cdef inline int _count_bucket(int64_t c) noexcept nogil:
    """_watermark's bucket of a count > 0: the count itself below 2048, else its 11 leading bits and its length
    (buckets rise with the counts, each holding the counts from its _bucket_floor to the next one's)."""
    if c < 2048:
        return <int>c
    cdef int e = 64 - clzll(<unsigned long long>c) - 11        # c >> e: 11 bits, 1024 to 2047
    return 1024 * e + <int>(c >> e)


cdef inline int64_t _bucket_floor(int b) noexcept nogil:
    if b < 2048:
        return b
    return (<int64_t>(b % 1024 + 1024)) << (b // 1024 - 1)


cdef extern from *:
    """
    #define BPE_FAST_WANT_EMPTY (~(unsigned long long)0)
    """
    const uint64_t WANT_EMPTY "BPE_FAST_WANT_EMPTY"     # no pair's key


cdef struct Wanted:
    # a re-scan's pair (MergeEngine._rescan), in an open-addressing table of its own by key
    uint64_t key        # pair_key, or WANT_EMPTY
    int64_t start       # its segment: arena[start:start + n]
    int32_t n           # its occurrences (pocc)
    int32_t pid


cdef struct Collect:
    # one thread's share of MergeEngine._rescan's pass: the slots [lo, hi) (lo a sentinel or 1), its positions
    # written from each segment's start on (forward), or from its end down
    void* owner
    const Wanted* table
    uint64_t mask
    const uint8_t* flags
    int32_t* found      # per table slot: positions written
    Py_ssize_t lo, hi
    bint forward


cdef enum:
    NO_PID = -1


cdef extern from *:
    """
    // (key, id) in increasing order, as _heap's entry_less, for std::sort: a function object, which the sort's
    // instantiation always inlines, where a pointer to entry_less is inlined only when the compiler clones the
    // sort for it (a heuristic: an unrelated change to this module made _compact's sort call it, 4% more
    // instructions in the merge loop's count)
    struct bpe_fast_key_id_less {
        template <class T> bool operator()(const T& x, const T& y) const {
            return x.key < y.key || (x.key == y.key && x.id < y.id);
        }
    };
    """
    cdef cppclass KeyIdLess "bpe_fast_key_id_less":
        KeyIdLess() noexcept nogil




cdef enum:
    SHORT = 64          # symbols of at most this many bytes keep their bytes; longer ones only their halves
    CHUNK = 256         # bytes compared at a time between long symbols


# A symbol's hash is its rolling_hash (bpe_fast/_hashing.pxd), so the hash of a concatenation comes from its
# halves' in O(1) (rolling_concat); equal hashes are always confirmed byte by byte.


cdef class MergeEngine:
    """Learns merges from the distinct pre-tokens of a corpus.

    tokens: uint8 array, the pre-tokens' bytes concatenated; offsets: int64 array of len(counts) + 1
    boundaries into tokens; counts: int64 array, how often each pre-token occurs (PretokenCounts' arrays).
    The arrays are only read while the words are laid out in slots, before the pair index is built:
    MergeEngine.consume([tokens, offsets, counts]) lets go of them then.
    max_token_length: no merge run() chooses makes a token longer than this many bytes (None: no limit);
    replay() is not limited.
    lean: drop stale positions as the arena is compacted (see the module's notes); None: when the engine holds
    LEAN_SLOTS slots or more.
    max_merges: the most merges (replayed and run) the caller will ask for, if it knows (None: it does not): the
    engine lays its words out in 2-byte slots when 256 + max_merges ids fit them and no word is longer than
    NARROW_WORD (32,767) bytes, else in 4-byte ones (memory()["slots"]); more merges than promised still work
    (the slots are rewritten as 4-byte ones then). narrow: True or False forces the layout (tests: True with a
    longer word is a ValueError); None: as just said.
    positions_budget: keep positions for about this many pair occurrences at most, re-scanning the slots for
    more when needed (see the module's notes); None: only a lean engine whose positions would be more than
    its slots' bytes / POSITIONS_SHARE and than MIN_BUDGET is bounded (by the larger). Tests set a tiny one:
    many re-scans.
    threads: lay the words out and index their pairs in up to this many threads (ranges of words and of slots,
    joined in order: the same engine, and the same merges, for any number); the merges run in one.
    One thread at a time: run, next_count and replay release the GIL, and any call from another thread meanwhile
    is a RuntimeError (finish() would free the arrays under them, a second run() would merge in them at once).
    """
    # slots and frequency classes
    cdef ReVec[int32_t] sym            # (a ReVec: laid out without zeroing first, _lay_out writes every slot)
    cdef ReVec[int16_t] sym16          # the slots of a narrow engine (sym is then empty, and sym16 otherwise)
    cdef readonly bint narrow          # the slots are int16 (sym16), else int32 (sym): see max_merges
    cdef vector[int64_t] cls_end       # class k holds the slots [cls_end[k - 1], cls_end[k])
    cdef vector[int64_t] cls_freq
    # pairs
    cdef ReVec[uint64_t] pkey          # pair_key(left, right): the pair's symbols (_left, _right)
    cdef ReVec[int32_t] plen
    cdef ReVec[int32_t] pgone          # positions of the pair made stale since the last compaction (at most)
    cdef ReVec[int64_t] pcount, pstart
    cdef ReVec[int32_t] arena         # positions; pair p's are arena[pstart[p]:pstart[p] + plen[p]]
    cdef int64_t garbage               # arena entries no live segment uses
    cdef int64_t stale                 # live entries that may be stale: the sum of pgone (lean engines only)
    cdef bint lean                     # compactions drop stale positions and give pages back (see above)
    cdef int64_t compactions           # how many times the garbage was dropped (for tests)
    cdef int64_t checked               # positions a lean compaction read the slots of (for tests)
    cdef int64_t most_positions        # the arena's largest size so far (for tests)
    # positions under a budget (see the module's notes)
    cdef bint bounded                  # some pairs may be positionless (plen UNTRACKED)
    cdef int64_t budget                # positions the arena is to hold (about): bounded engines
    cdef int64_t asked_budget          # the caller's positions_budget, or -1 (None: see _bound_positions)
    cdef int64_t watermark             # a pair made with a count below this gets no positions
    cdef ReVec[int32_t] pocc           # each pair's number of occurrences (bounded engines)
    cdef int32_t pairs_before          # pairs that existed before this merge (pids below this)
    cdef int64_t rescans               # re-scans of the slots (for tests and benchmarks)
    cdef int64_t rescanned             # positions they collected
    cdef int64_t mismatched            # occurrences a re-scan found beyond pocc, or short of it (0: tests)
    # per symbol: the pids ending in it and starting with it
    cdef vector[int32_t] pslots        # pair table: a pid or -1, from pair_slot(pkey[pid], pshift); 4 bytes a
                                       # slot (the key is read from pkey), at most half full
    cdef uint64_t pmask
    cdef int pshift
    # per merge: pid of (x, a), (b, y), (x, c), (c, y) by the other symbol, valid where stamp == merge number
    cdef vector[MapSlot] maps          # at 4 * symbol + rule
    cdef int32_t ma, mb, mc, mstamp
    cdef bint mc_new                   # c did not exist before this merge
    cdef vector[int32_t] touched       # this merge's map slots
    cdef ReVec[uint64_t] touched_key   # their pairs' keys (pair_key), in the same order (a ReVec: pushed after
                                       # touched, and running out of memory there ends the process, so the two
                                       # never differ in length)
    cdef vector[Record] records
    cdef Py_ssize_t fcls               # the frequency class last asked for
    # heap
    cdef ReVec[HeapEntry] heap
    cdef Py_ssize_t heap_pruned        # its size after the last pruning
    cdef Py_ssize_t heap_slack         # entries it may gain beyond twice that before it is pruned again
    cdef bint finished
    cdef bint busy                     # a method runs without the GIL: the others refuse (RuntimeError)
    cdef int64_t max_len               # longest token a chosen merge may make (max_token_length)
    cdef bint limited                  # max_len is a limit (else every pair is a candidate)
    cdef int threads                   # the setup (layout, pair index) runs in this many threads at most
    # symbols (canonical by bytes): a short one's (tok_len <= SHORT) bytes are pool[tok_head:tok_head + tok_len]; a
    # long one is the concatenation of its halves tok_left, tok_right, so a huge token costs no bytes, and keeps its
    # first SHORT bytes at pool[tok_head:] (its left half's, when that is long too)
    cdef vector[uint8_t] pool
    cdef vector[int64_t] tok_head
    cdef vector[int32_t] tok_len, tok_left, tok_right
    cdef vector[int32_t] tok_jump      # an ancestor on its left spine (left, left's left, ...; itself for a
    cdef vector[int32_t] tok_depth     # byte), chosen by depth on the spine as skew-binary jump pointers
                                       # (Myers 1983): any spine ancestor is reached in O(log depth) steps
    cdef vector[uint64_t] tok_hash, tok_pow
    cdef vector[Slot] islots           # intern table: symbols by mix64(tok_hash)
    cdef uint64_t imask
    # results
    cdef vector[int32_t] merge_a, merge_b, merge_c
    cdef vector[int64_t] merge_count

    def __init__(self, tokens, offsets, counts, *, Py_ssize_t heap_slack=1 << 16, max_token_length=None,
                 lean=None, int threads=1, max_merges=None, narrow=None, positions_budget=None):
        self._setup([tokens, offsets, counts], heap_slack, max_token_length, lean, threads, max_merges, narrow,
                    positions_budget)

    @staticmethod
    def consume(list arrays, *, Py_ssize_t heap_slack=1 << 16, max_token_length=None, lean=None, int threads=1,
                max_merges=None, narrow=None, positions_budget=None):
        """An engine built from arrays = [tokens, offsets, counts], as MergeEngine(tokens, offsets, counts),
        which empties the list once the words are laid out in the engine's slots, before the pair index is
        built: arrays that nothing else holds are then freed, and the peak is the engine's alone, not the
        engine's plus the arrays' (about 30 bytes a distinct pre-token)."""
        if len(arrays) != 3:
            raise ValueError(f"arrays must be [tokens, offsets, counts], got a list of {len(arrays)}")
        cdef MergeEngine engine = MergeEngine.__new__(MergeEngine)
        engine._setup(arrays, heap_slack, max_token_length, lean, threads, max_merges, narrow, positions_budget)
        return engine

    @staticmethod
    def from_run(int fd, *, str name="the run", Py_ssize_t heap_slack=1 << 16, max_token_length=None, lean=None,
                 int threads=1, max_merges=None, narrow=None, positions_budget=None):
        """An engine built from the words of a sorted run of counts (_runs.pxd's format: what merge_runs writes),
        open at the descriptor fd (seekable; read twice from its start, a buffer at a time: the words are never
        all in memory beside the slots). The same merges as MergeEngine(tokens, offsets, counts) of the same words
        (the words of a class lie in the run's order, not the arrays'). A run that is not well formed is a
        ValueError naming it (name: its file) and saying what is wrong with it."""
        cdef MergeEngine engine = MergeEngine.__new__(MergeEngine)
        engine._setup_from_run(fd, name, heap_slack, max_token_length, lean, threads, max_merges, narrow,
                               positions_budget)
        return engine

    cdef _setup_from_run(self, int fd, str name, Py_ssize_t heap_slack, max_token_length, lean, int threads, max_merges,
                         narrow, positions_budget):
        """from_run's work: a first pass over the run counts the slots of each frequency class (a counting sort's
        buckets for the small frequencies; the few words of large ones are kept, to be sorted), a second writes
        each word at its class's cursor; then the pair index is built as for arrays."""
        self._idle("from_run")
        cdef RunReader reader
        cdef int got, problem = 0, err = 0
        cdef int64_t nwords = 0, total = 0, longest = 0, c, n, k, slot, nslots, f
        cdef double pairs = 0
        cdef vector[int64_t] bucket          # SMALL_FREQ: the slots of the words of each small frequency
        cdef vector[uint8_t] large_bytes     # the words of large frequencies, end to end
        cdef vector[int64_t] large_at        # ... where each starts in large_bytes, and its count
        cdef vector[HeapEntry] large         # (count, index into large_at), sorted
        cdef HeapEntry he
        try:
            bucket.assign(SMALL_FREQ, 0)
            with nogil:
                got = run_rewind(&reader, fd)
                while got > 0:
                    n = reader.length
                    c = reader.count
                    nwords += 1
                    total += n
                    if n > longest:
                        longest = n
                    if n >= 2:
                        pairs += <double>c * <double>(n - 1)
                        if c < SMALL_FREQ:
                            bucket[c] += n + 1
                        else:
                            he.key = c
                            he.id = <int32_t>large_at.size()
                            large.push_back(he)
                            large_at.push_back(<int64_t>large_bytes.size())
                            large_bytes.insert(large_bytes.end(), reader.key, reader.key + n)
                    got = run_next(&reader)
                problem = reader.problem
                err = reader.err
                run_stop(&reader)
        except MemoryError:
            raise MemoryError("out of memory reading a run of counts for the merge engine") from None
        if got < 0:
            raise ValueError(f"{name}: this run of counts {describe_run(problem, err)}")
        large_at.push_back(<int64_t>large_bytes.size())
        if pairs >= 9.2e18:             # (an estimate: no corpus counted from files comes near)
            raise ValueError("the counts are too large: the pair counts they make would overflow int64")
        self._configure(heap_slack, max_token_length, lean, threads, max_merges, narrow, positions_budget, total,
                        nwords, longest)
        self.busy = True
        cpp_sort(large.begin(), large.end(), KeyIdLess())
        # the classes: small frequencies rising, then the large ones; each bucket becomes its class's cursor
        nslots = 1
        for c in range(SMALL_FREQ):
            if bucket[c]:
                n = bucket[c]
                bucket[c] = nslots
                nslots += n
                self.cls_end.push_back(nslots)
                self.cls_freq.push_back(c)
        f = -1
        for k in range(<int64_t>large.size()):
            if large[k].key != f:
                if f >= 0:
                    self.cls_end.push_back(nslots)
                    self.cls_freq.push_back(f)
                f = large[k].key
            nslots += large_at[large[k].id + 1] - large_at[large[k].id] + 1
        if f >= 0:
            self.cls_end.push_back(nslots)
            self.cls_freq.push_back(f)
        self.cls_freq.push_back(0)        # past the last class (never asked for)
        with nogil:
            self._init_symbols()
            if self.narrow:
                self.sym16.resize_unset(nslots)
                huge_pages(self.sym16.data(), nslots * sizeof(int16_t))
                got = self._place_run(self.sym16.data(), fd, bucket.data(), nslots, &large, &large_at, &large_bytes,
                                      &problem, &err)
            else:
                self.sym.resize_unset(nslots)
                huge_pages(self.sym.data(), nslots * sizeof(int32_t))
                got = self._place_run(self.sym.data(), fd, bucket.data(), nslots, &large, &large_at, &large_bytes,
                                      &problem, &err)
        if got < 0:                       # (busy stays set: this engine is unfinished, and every call refuses)
            raise ValueError(f"{name}: this run of counts {describe_run(problem, err)}")
        if got > 0:
            raise RuntimeError(f"{name}: the run of counts changed between its two readings")
        self.busy = False
        vector[int64_t]().swap(bucket)
        vector[uint8_t]().swap(large_bytes)
        self.busy = True
        with nogil:
            self._index_pairs()
        self.busy = False

    cdef int _place_run(self, slot_t* sym, int fd, int64_t* cursor, int64_t nslots, vector[HeapEntry]* large,
                        vector[int64_t]* large_at, vector[uint8_t]* large_bytes, int* problem,
                        int* err) noexcept nogil:
        """from_run's second pass: each word of 2 bytes or more at its class's cursor (cursor[count], a small
        count) or, the large ones, in their sorted order after the small classes; SENT between. 0, or -1 (problem,
        err: the run is not well formed), or 1 (it changed since the first pass: a word past its class)."""
        cdef RunReader reader
        cdef int got
        cdef int64_t n, c, slot, k, a, i, small_end = nslots
        cdef const uint8_t* key
        sym[0] = SENT
        for k in range(<int64_t>large[0].size()):
            small_end -= large_at[0][large[0][k].id + 1] - large_at[0][large[0][k].id] + 1
        got = run_rewind(&reader, fd)
        while got > 0:
            n = reader.length
            c = reader.count
            if n >= 2 and c < SMALL_FREQ:
                slot = cursor[c]
                if slot + n + 1 > small_end:
                    run_stop(&reader)
                    return 1
                key = reader.key
                for i in range(n):
                    sym[slot + i] = key[i]
                sym[slot + n] = SENT
                cursor[c] = slot + n + 1
            got = run_next(&reader)
        problem[0] = reader.problem
        err[0] = reader.err
        run_stop(&reader)
        if got < 0:
            return -1
        slot = small_end
        for k in range(<int64_t>large[0].size()):
            a = large_at[0][large[0][k].id]
            n = large_at[0][large[0][k].id + 1] - a
            for i in range(n):
                sym[slot + i] = large_bytes[0][a + i]
            sym[slot + n] = SENT
            slot += n + 1
        return 0

    cdef _setup(self, list arrays, Py_ssize_t heap_slack, max_token_length, lean, int threads, max_merges,
                narrow, positions_budget):
        """__init__'s work; empties `arrays` between laying the words out and indexing their pairs."""
        self._idle("__init__")
        if self.tok_len.size():         # __init__ called again: the new words would mix with the old state
            raise RuntimeError("this MergeEngine is already built: make a new one for other words")
        cdef const uint8_t[::1] tokens = arrays[0]
        cdef const int64_t[::1] offsets = arrays[1]
        cdef const int64_t[::1] counts = arrays[2]
        cdef Py_ssize_t nwords = counts.shape[0]
        cdef Py_ssize_t total = tokens.shape[0]
        if offsets.shape[0] != nwords + 1:
            raise ValueError("offsets must have len(counts) + 1 entries")
        if nwords and (offsets[0] != 0 or offsets[nwords] != total):
            raise ValueError("offsets must start at 0 and end at len(tokens)")
        cdef Py_ssize_t w
        cdef int64_t longest = 0        # the longest word laid out (count > 0)
        cdef double pairs = 0           # the sum of all pair counts, which must fit an int64
        for w in range(nwords):
            if offsets[w + 1] < offsets[w]:
                raise ValueError(f"offsets are not increasing at {w}")
            if counts[w] < 0:
                raise ValueError(f"counts[{w}] = {counts[w]} is negative")
            if counts[w] > 0 and offsets[w + 1] - offsets[w] > longest:
                longest = offsets[w + 1] - offsets[w]
            if offsets[w + 1] - offsets[w] > 1:
                pairs += <double>counts[w] * <double>(offsets[w + 1] - offsets[w] - 1)
        if pairs >= 9.2e18:             # 2**63 is 9.22e18: an exact check where the estimate comes close
            if sum(int(counts[w]) * max(0, int(offsets[w + 1] - offsets[w]) - 1) for w in range(nwords)) >= 2 ** 63:
                raise ValueError("the counts are too large: the pair counts they make would overflow int64")
        self._configure(heap_slack, max_token_length, lean, threads, max_merges, narrow, positions_budget, total,
                        nwords, longest)
        self.busy = True
        cdef int changed
        try:
            with nogil:
                self._init_symbols()
                changed = self._lay_out(&tokens[0] if total else NULL, &offsets[0],
                                        &counts[0] if nwords else NULL, nwords, total)
        except MemoryError:             # (busy stays set, as below)
            raise MemoryError(f"out of memory laying out {nwords:,} distinct pre-tokens ({total:,} bytes) in "
                              f"the merge engine") from None
        if changed:                     # (busy stays set: this engine is unfinished, and every call refuses)
            raise RuntimeError("the arrays changed while they were read (another thread writes to them)")
        self.busy = False
        tokens = None           # the arrays are not read again: the caller's list was their last holder
        offsets = None
        counts = None
        arrays.clear()
        self.busy = True
        with nogil:
            self._index_pairs()
        self.busy = False

    cdef _configure(self, Py_ssize_t heap_slack, max_token_length, lean, int threads, max_merges, narrow,
                    positions_budget, int64_t total, int64_t nwords, int64_t longest):
        """The options checked and set, for words of total bytes, nwords of them, the longest (count > 0) longest
        bytes (_setup's and _setup_from_run's)."""
        if heap_slack < 0:
            raise ValueError("heap_slack must be >= 0")
        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        self.threads = min(threads, MAX_INDEX_THREADS)
        # tests set 0: the heap is pruned after every merge. At most 2**62: 2 * heap_pruned + heap_slack must not
        # overflow (sys.maxsize wrapped to a negative bound, and the heap was pruned after every merge)
        self.heap_slack = min(heap_slack, 2 ** 62)
        self.limited = max_token_length is not None
        self.max_len = 0
        if self.limited:
            if isinstance(max_token_length, bool) or not hasattr(max_token_length, "__index__"):
                # (a float was cut down to an int: 2.5 made tokens of at most 2 bytes)
                raise TypeError(f"max_token_length must be an int or None, got {type(max_token_length).__name__}")
            max_token_length = max_token_length.__index__()
            if max_token_length < 1:
                raise ValueError(f"max_token_length must be >= 1, got {max_token_length}")
            self.max_len = min(max_token_length, 2 ** 62)
        # tests set lean: True or False whatever the size
        self.lean = (total + nwords + 1 >= LEAN_SLOTS) if lean is None else bool(lean)
        if total + nwords + 1 >= 2 ** 31:
            raise ValueError("the distinct pre-tokens hold more than 2 GiB of bytes; the engine indexes them "
                             "with int32")
        if max_merges is not None:
            if isinstance(max_merges, bool) or not hasattr(max_merges, "__index__"):
                raise TypeError(f"max_merges must be an int or None, got {type(max_merges).__name__}")
            max_merges = max_merges.__index__()
            if max_merges < 0:
                raise ValueError(f"max_merges must be >= 0, got {max_merges}")
        self.asked_budget = -1
        if positions_budget is not None:        # tests: a bounded engine whatever the size
            if isinstance(positions_budget, bool) or not hasattr(positions_budget, "__index__"):
                raise TypeError(f"positions_budget must be an int or None, got {type(positions_budget).__name__}")
            positions_budget = positions_budget.__index__()
            if positions_budget < 0:
                raise ValueError(f"positions_budget must be >= 0, got {positions_budget}")
            self.asked_budget = min(positions_budget, 2 ** 62)
        if narrow is None:              # the layout: narrow when the ids and the words fit (see the module's notes)
            self.narrow = max_merges is not None and 256 + max_merges <= NARROW_IDS and longest <= NARROW_WORD
        elif narrow and longest > NARROW_WORD:
            raise ValueError(f"narrow slots hold words of at most {NARROW_WORD:,} bytes, and one has {longest:,}")
        else:
            self.narrow = bool(narrow)

    cdef inline Py_ssize_t _slots(self) noexcept nogil:
        """How many slots: the words' bytes and the sentinels."""
        return self.sym16.size() if self.narrow else self.sym.size()

    cdef _idle(self, str name):
        """RuntimeError if another thread is in a method that released the GIL (run, next_count, replay,
        building): the engine's arrays change under it, and finish() would free them."""
        if self.busy:
            raise RuntimeError(f"MergeEngine.{name} called while another thread uses the engine "
                               f"(one thread at a time)")

    # --- symbols ------------------------------------------------------------------------------

    cdef void _init_symbols(self) noexcept nogil:
        cdef int32_t b
        cdef Slot empty
        empty.index = EMPTY_INDEX
        empty.tag = 0
        self.imask = 1023
        self.islots.assign(1024, empty)
        for b in range(256):
            push_or_end(self.pool, <uint8_t>b)
            self._add_symbol(b, 1, -1, -1, rolling_hash(&self.pool[b], 1), ROLLING_BASE)

    cdef int32_t _add_symbol(self, int64_t head, int32_t n, int32_t left, int32_t right, uint64_t h,
                             uint64_t pw) noexcept nogil:
        cdef int32_t s = <int32_t>self.tok_len.size()
        cdef int32_t j = s, d = 0
        cdef int k
        cdef MapSlot empty
        if s >= NARROW_IDS and self.narrow:     # more merges than max_merges promised: int16 holds no id s
            self._widen()
        if left >= 0:               # the jump pointer: two equal jumps below make one twice as long
            d = self.tok_depth[left] + 1
            j = self.tok_jump[left]
            if self.tok_depth[left] - self.tok_depth[j] == self.tok_depth[j] - self.tok_depth[self.tok_jump[j]]:
                j = self.tok_jump[j]
            else:
                j = left
        push_or_end(self.tok_head, head)
        push_or_end(self.tok_len, n)
        push_or_end(self.tok_left, left)
        push_or_end(self.tok_right, right)
        push_or_end(self.tok_jump, j)
        push_or_end(self.tok_depth, d)
        push_or_end(self.tok_hash, h)
        push_or_end(self.tok_pow, pw)
        empty.delta = 0
        empty.fill = 0
        empty.gone = 0
        empty.made = 0
        empty.stamp = -1
        empty.pid = -1
        for k in range(4):
            push_or_end(self.maps, empty)
        if <uint64_t>(self.tok_len.size() * 2) > self.imask:
            self._intern_grow()
        else:
            self._intern_put(s, h)
        return s

    cdef void _intern_put(self, int32_t s, uint64_t h) noexcept nogil:
        slot_place(self.islots.data(), self.imask, mix64(h), s)

    cdef void _intern_grow(self) noexcept nogil:
        cdef Py_ssize_t cap = (self.imask + 1) * 2
        cdef int32_t s
        cdef Slot empty
        empty.index = EMPTY_INDEX
        empty.tag = 0
        self.imask = cap - 1
        refill_or_end(self.islots, cap, empty)     # (put together again below: see _pairs_grow)
        for s in range(<int32_t>self.tok_len.size()):
            self._intern_put(s, self.tok_hash[s])

    cdef void _read(self, int32_t s, int64_t off, int64_t n, uint8_t* out) noexcept nogil:
        """Copy bytes [off, off + n) of symbol s to out, walking down the halves of long symbols."""
        cdef vector[int32_t] later                 # right halves still to read, the next one last
        cdef int64_t k, la
        while n > 0:
            if self.tok_len[s] <= SHORT:
                k = self.tok_len[s] - off
                if k > n:
                    k = n
                memcpy(out, &self.pool[self.tok_head[s] + off], k)
                out += k
                n -= k
                if n == 0:
                    break
                s = later.back()
                later.pop_back()
                off = 0
                continue
            la = self.tok_len[self.tok_left[s]]
            if off >= la:
                off -= la
                s = self.tok_right[s]
            elif off + n > la:
                push_or_end(later, self.tok_right[s])
                s = self.tok_left[s]
            else:
                s = self._spine_holding(self.tok_left[s], off + n)

    cdef inline int32_t _spine_holding(self, int32_t s, int64_t m) noexcept nogil:
        """The shortest symbol on s's left spine (s itself included) of at least m bytes (s has m or more): its
        bytes start with s's first m. A merge chain makes spines thousands of symbols deep."""
        cdef int32_t j
        while self.tok_len[s] > SHORT:
            j = self.tok_jump[s]
            if self.tok_len[j] >= m:
                s = j
            elif self.tok_len[self.tok_left[s]] >= m:
                s = self.tok_left[s]
            else:
                break
        return s

    cdef void _read_concat(self, int32_t a, int32_t b, int64_t off, int64_t n, uint8_t* out) noexcept nogil:
        """Copy bytes [off, off + n) of bytes(a) + bytes(b) to out."""
        cdef int64_t la = self.tok_len[a], k
        if off < la:
            k = la - off if la - off < n else n
            self._read(a, off, k, out)
            out += k
            n -= k
            off = la
        if n > 0:
            self._read(b, off - la, n, out)

    cdef int _compare(self, int32_t s, int32_t t, int32_t a, int32_t b, const uint8_t* data, int64_t off,
                      int64_t n) noexcept nogil:
        """memcmp of bytes [off, n) of symbol s with those of t (t >= 0), of bytes(a) + bytes(b) (a >= 0),
        or of data, CHUNK bytes at a time."""
        cdef uint8_t x[CHUNK]
        cdef uint8_t y[CHUNK]
        cdef int64_t k
        cdef int c
        while off < n:
            k = n - off if n - off < CHUNK else CHUNK
            self._read(s, off, k, x)
            if t >= 0:
                self._read(t, off, k, y)
                c = memcmp(x, y, k)
            elif a >= 0:
                self._read_concat(a, b, off, k, y)
                c = memcmp(x, y, k)
            else:
                c = memcmp(x, data + off, k)
            if c != 0:
                return c
            off += k
        return 0

    cdef int32_t _find_symbol(self, uint64_t h, int64_t n, int32_t a, int32_t b, const uint8_t* data) noexcept nogil:
        """The symbol whose bytes are bytes(a) + bytes(b) (a >= 0) or data[:n], with hash h; -1 if none."""
        cdef uint64_t m = mix64(h)
        cdef uint64_t slot = m & self.imask
        cdef uint32_t tag = slot_tag(m)
        cdef int32_t s
        while self.islots[slot].index != EMPTY_INDEX:
            s = self.islots[slot].index
            if self.islots[slot].tag == tag and self.tok_len[s] == n and self._compare(s, -1, a, b, data, 0, n) == 0:
                return s
            slot = next_slot(slot, self.imask)
        return -1

    cdef int32_t _intern_concat(self, int32_t a, int32_t b) noexcept nogil:
        """The symbol whose bytes are bytes(a) + bytes(b), created if new."""
        cdef int64_t la = self.tok_len[a], lb = self.tok_len[b], head
        cdef uint64_t h = rolling_concat(self.tok_hash[a], self.tok_hash[b], self.tok_pow[b])
        cdef int32_t s = self._find_symbol(h, la + lb, a, b, NULL)
        if s >= 0:
            return s
        if la >= SHORT:                             # a long one's first bytes are its left half's
            head = self.tok_head[a]
        else:                                       # a short left half's bytes, then the right half's first
            head = self.pool.size()
            lb = min(lb, SHORT - la)
            resize_or_end(self.pool, head + la + lb)
            memcpy(&self.pool[head], &self.pool[self.tok_head[a]], la)
            memcpy(&self.pool[head + la], &self.pool[self.tok_head[b]], lb)      # (all of b when the whole is short)
        return self._add_symbol(head, <int32_t>(la + self.tok_len[b]), a, b, h,
                                self.tok_pow[a] * self.tok_pow[b])

    # --- slots --------------------------------------------------------------------------------

    cdef void _widen(self) noexcept nogil:
        """Rewrite a narrow engine's slots as int32 (the same values: the back pointers are relative)."""
        cdef size_t k, n = self.sym16.size()
        cdef const int16_t* old = self.sym16.data()
        cdef int32_t* new
        self.sym.resize_unset(n)
        huge_pages(self.sym.data(), n * sizeof(int32_t))
        new = self.sym.data()
        for k in range(n):
            new[k] = old[k]
        self.sym16.release()
        self.narrow = False

    cdef inline int64_t _freq_at(self, int32_t i) noexcept nogil:
        # positions come mostly in increasing order, so the last class asked for usually holds i
        cdef const int64_t* ends = self.cls_end.data()
        cdef Py_ssize_t k = self.fcls
        if i < ends[k] and (k == 0 or i >= ends[k - 1]):
            return self.cls_freq[k]
        k = upper_bound(ends, ends + self.cls_end.size(), <int64_t>i) - ends
        self.fcls = k
        return self.cls_freq[k]

    # --- pairs --------------------------------------------------------------------------------

    cdef int32_t _new_pair(self, int32_t x, int32_t y) noexcept nogil:
        cdef int32_t pid = <int32_t>self.pcount.size()
        if <uint64_t>(2 * (pid + 1)) > self.pmask:
            self._pairs_grow()
        self.pkey.push_back(pair_key(x, y))
        self.pcount.push_back(0)
        self.pstart.push_back(0)
        if self.lean:
            self.pgone.push_back(0)
        if self.bounded:
            self.pocc.push_back(0)
        self.plen.push_back(0)
        self._pair_put(x, y, pid)
        return pid

    cdef inline int32_t _left(self, int32_t pid) noexcept nogil:
        return <int32_t>(self.pkey[pid] >> 32)

    cdef inline int32_t _right(self, int32_t pid) noexcept nogil:
        return <int32_t><uint32_t>self.pkey[pid]

    cdef void _pair_put(self, int32_t x, int32_t y, int32_t pid) noexcept nogil:
        cdef uint64_t slot = pair_slot(pair_key(x, y), self.pshift)
        while self.pslots[slot] >= 0:
            slot = next_slot(slot, self.pmask)
        self.pslots[slot] = pid

    cdef void _pairs_grow(self) noexcept nogil:
        cdef Py_ssize_t cap = (self.pmask + 1) * 2 if self.pmask else 1 << 16
        cdef int32_t pid
        # the table is put together again from pkey: the old one is let go before the new one, twice as large, is
        # made (assign() held both: 192 MB at once on the way to 8.5 million pairs' 128 MB)
        refill_or_end(self.pslots, cap, -1)
        self.pmask = cap - 1
        self.pshift = table_shift(cap)
        for pid in range(<int32_t>self.pkey.size()):
            self._pair_put(self._left(pid), self._right(pid), pid)

    cdef int32_t _find_pair(self, int32_t x, int32_t y) noexcept nogil:
        """The pid of (x, y), or -1. A pair keeps its pid for good, also while its count is 0."""
        if self.pmask == 0:
            return -1
        cdef uint64_t key = pair_key(x, y)
        return self._find_pair_from(key, pair_slot(key, self.pshift))

    cdef inline int32_t _find_pair_from(self, uint64_t key, uint64_t slot) noexcept nogil:
        """_find_pair's probe for a key whose first slot (pair_slot) is known; the table is not empty."""
        cdef int32_t pid = self.pslots[slot]
        while pid >= 0:
            if self.pkey[pid] == key:
                return pid
            slot = next_slot(slot, self.pmask)
            pid = self.pslots[slot]
        return -1

    cdef inline int _rule(self, int32_t x, int32_t y) noexcept nogil:
        """Which of this merge's four maps holds the pair (x, y): (x, a), (b, y), (x, c), else (c, y)."""
        if y == self.ma:
            return 0
        if x == self.mb:
            return 1
        if y == self.mc:
            return 2
        return 3

    cdef void _fill(self, MapSlot* m, int32_t at, int32_t x, int32_t y, bint fresh) noexcept nogil:
        """Fill the empty map slot `at` for (x, y) in this merge. Its pid comes later, from _resolve_pids (a
        pair of a token that did not exist before this merge, `fresh`, is new without asking the pair table)."""
        m.stamp = self.mstamp
        m.pid = PID_NEW if fresh else PID_LOOK_UP
        m.delta = 0
        m.fill = 0
        m.gone = 0
        m.made = 0
        push_or_end(self.touched, at)
        self.touched_key.push_back(pair_key(x, y))     # (after touched: see touched_key)

    cdef void _resolve_pids(self) noexcept nogil:
        """Give the map slots this merge filled their pids, found in the pair table or made (in the order the
        slots were filled, as if each were made when filled); once a merge, when every slot is filled. The
        look-ups go in groups of RESOLVE_GROUP: each one's first table slot, then the key of the pair there,
        fetched ahead of the probes, so that a merge with many neighbours waits for memory about once a group,
        not twice a pair."""
        cdef Py_ssize_t k, g, end, n = self.touched.size()
        cdef MapSlot* m
        cdef uint64_t key
        cdef uint64_t home[RESOLVE_GROUP]
        cdef int32_t pid
        cdef int shift
        cdef const int32_t* at = self.touched.data()
        cdef const uint64_t* keys = self.touched_key.data()
        g = 0
        while g < n:
            end = min(g + RESOLVE_GROUP, n)
            shift = self.pshift
            if self.pmask:
                for k in range(g, end):
                    home[k - g] = pair_slot(keys[k], shift)
                    prefetch(&self.pslots[home[k - g]])
                for k in range(g, end):
                    pid = self.pslots[home[k - g]]
                    if pid >= 0:
                        prefetch(&self.pkey[pid])
            for k in range(g, end):
                m = &self.maps[at[k]]
                key = keys[k]
                pid = -1
                if m.pid == PID_LOOK_UP and self.pmask:
                    # (a table grown by a pair made in this group has other slots: found from the start)
                    pid = self._find_pair_from(key, home[k - g] if self.pshift == shift else
                                                    pair_slot(key, self.pshift))
                if pid >= 0:                # (the merge's end reads its count and length: fetched now)
                    prefetch(&self.pcount[pid])
                    prefetch(&self.plen[pid])
                else:
                    pid = self._new_pair(<int32_t>(key >> 32), <int32_t><uint32_t>key)
                m.pid = pid
            g = end

    cdef inline int32_t _slot_of(self, int32_t x, int32_t y) noexcept nogil:
        """The map slot of (x, y), a pair this merge touches (see _rule), filled if empty. The maps cache,
        for this merge, what the pair table says: one table look-up per distinct neighbour. (The hot loop in
        _merge computes the same slots inline.)"""
        cdef int r = self._rule(x, y)
        cdef int32_t at = 4 * (x if (r == 0 or r == 2) else y) + r
        cdef MapSlot* m = &self.maps[at]
        if m.stamp != self.mstamp:
            self._fill(m, at, x, y, r >= 2 and self.mc_new)     # a new c has no pairs yet
        return at

    # --- heap ordering: higher count first, ties to the lexicographically greatest (bytes, bytes) ---

    cdef inline int _cmp_sym(self, int32_t s, int32_t t) noexcept nogil:
        if s == t:
            return 0
        cdef int32_t ls = self.tok_len[s], lt = self.tok_len[t]
        cdef int32_t m = ls if ls < lt else lt
        cdef int c = memcmp(&self.pool[self.tok_head[s]], &self.pool[self.tok_head[t]], m if m < SHORT else SHORT)
        if c != 0:
            return c
        if m > SHORT:       # both long, their first bytes equal
            if (ls < lt and self._starts(t, s)) or (lt < ls and self._starts(s, t)):
                return ls - lt      # the shorter one is the longer one's first bytes (a merge chain's versions)
            c = self._compare(s, t, -1, -1, NULL, SHORT, m)
            if c != 0:
                return c
        return ls - lt

    cdef inline bint _starts(self, int32_t t, int32_t s) noexcept nogil:
        """True if symbol s is on the left spine of t's halves (then t's bytes start with s's); False does not say
        they do not. A merge chain (a long pre-token whose pairs all tie, merged one neighbour at a time) makes
        every version the next one's left half: comparing two versions byte by byte walked thousands of levels of
        halves for each 256 bytes, in every heap comparison (training about cubic in the chain's length)."""
        return self._spine_holding(t, self.tok_len[s]) == s

    cdef inline bint _above(self, HeapEntry x, HeapEntry y) noexcept nogil:
        """True if x (key: count, id: pid) should be merged before y."""
        if x.key != y.key:
            return x.key > y.key
        cdef int c = self._cmp_sym(self._left(x.id), self._left(y.id))
        if c != 0:
            return c > 0
        return self._cmp_sym(self._right(x.id), self._right(y.id)) > 0

    cdef void _prune_heap(self) noexcept nogil:
        """Drop the entries that can never be used (their pair's count is 0, or a higher entry of the same
        pair exists: its count rose since), bring the others' counts down to the count of now, re-heap."""
        cdef Py_ssize_t k, keep = 0
        cdef HeapEntry e
        cdef int64_t now
        for k in range(<Py_ssize_t>self.heap.size()):
            e = self.heap[k]
            now = self.pcount[e.id]
            if now > 0 and e.key >= now:
                e.key = now
                self.heap[keep] = e
                keep += 1
        self.heap.resize(keep)
        self.heap.shrink_to_fit()
        heap_make(self.heap.data(), keep, _merge_first, <void*>self)
        self.heap_pruned = keep

    cdef void _push(self, int64_t count, int32_t pid) noexcept nogil:
        cdef HeapEntry e
        e.key = count
        e.id = pid
        self.heap.push_back(e)
        heap_sift_up(self.heap.data(), self.heap.size() - 1, _merge_first, <void*>self)

    cdef HeapEntry _pop(self) noexcept nogil:
        cdef HeapEntry top = heap_pop(self.heap.data(), self.heap.size(), _merge_first, <void*>self)
        self.heap.pop_back()
        return top

    # --- building -----------------------------------------------------------------------------

    cdef int _lay_out(self, const uint8_t* tokens, const int64_t* offsets, const int64_t* counts,
                      Py_ssize_t nwords, Py_ssize_t total) except -1 nogil:
        """Steps 1 and 2 of building: the words' bytes in slots, grouped by frequency (the arrays' last use).
        The arrays were checked, but another thread may write them meanwhile: each value read again is checked
        where a wrong one would write or read out of bounds; 1 (the slots unfinished) when one changed, else 0.
        Its vectors' std::bad_alloc is a MemoryError (-1), not taken for a change (the slots themselves are a
        ReVec, whose running out of memory ends the process, as everywhere in the engine)."""
        cdef Py_ssize_t w, k, i, n
        cdef int64_t f, slot, a, b, c
        # 1. group the words that have pairs (2+ bytes, count > 0) by frequency: a counting sort for the
        #    small frequencies, a sort for the few large ones
        cdef vector[int64_t] bucket_start
        bucket_start.assign(SMALL_FREQ + 1, 0)
        cdef vector[int64_t] large        # words with a large count: sorted by (count, word)
        cdef vector[int32_t] order
        for w in range(nwords):
            c = counts[w]               # (read once: checked, then used as an index)
            if offsets[w + 1] - offsets[w] < 2 or c <= 0:
                continue
            if c < SMALL_FREQ:
                bucket_start[c] += 1
            else:
                large.push_back(w)
        cdef int64_t run = 0, c0
        for k in range(SMALL_FREQ + 1):
            c0 = bucket_start[k]
            bucket_start[k] = run
            run += c0
        cdef Py_ssize_t nsmall = run
        order.resize(nsmall + large.size())
        for w in range(nwords):
            c = counts[w]
            if offsets[w + 1] - offsets[w] < 2 or c <= 0 or c >= SMALL_FREQ:
                continue
            if bucket_start[c] >= nsmall:   # a count that changed since it was read: no write past the run
                return 1
            order[bucket_start[c]] = <int32_t>w
            bucket_start[c] += 1
        cdef vector[HeapEntry] tmp
        cdef HeapEntry he
        for k in range(<Py_ssize_t>large.size()):
            he.key = counts[large[k]]
            he.id = <int32_t>large[k]
            tmp.push_back(he)
        cpp_sort(tmp.begin(), tmp.end(), KeyIdLess())
        for k in range(<Py_ssize_t>tmp.size()):
            order[nsmall + k] = tmp[k].id
        # 2. lay the words out in that order, one class per distinct frequency: in ranges of words, one a thread
        #    when there are threads and words enough, each range's slots known first (its classes' starts are
        #    then joined in order: the same slots and classes as one thread's)
        cdef int nr = <int>min(<Py_ssize_t>self.threads, max(<Py_ssize_t>1, <Py_ssize_t>order.size() // LAYOUT_WORDS_PER_THREAD))
        cdef vector[LayOut] ranges
        cdef vector[vector[int64_t]] starts, freqs
        cdef Py_ssize_t r, j, nk = order.size()
        ranges.resize(nr)
        starts.resize(nr)
        freqs.resize(nr)
        cdef int64_t nslots = 1
        r = 0
        for k in range(nk + 1):
            while r < nr and k == nk * r // nr:
                ranges[r].k_lo = k
                ranges[r].slot_lo = nslots
                if r:
                    ranges[r - 1].k_hi = k
                    ranges[r - 1].slot_hi = nslots
                r += 1
            if k == nk:
                break
            w = order[k]
            a, b = offsets[w], offsets[w + 1]
            if not 0 <= a <= b <= total:
                return 1
            nslots += b - a + 1
        ranges[nr - 1].k_hi = nk
        ranges[nr - 1].slot_hi = nslots
        if self.narrow:                 # (every slot written below: 0 here, the others by the ranges)
            self.sym16.resize_unset(nslots)
            huge_pages(self.sym16.data(), nslots * sizeof(int16_t))   # (the merges read it at random; it never
            self.sym16[0] = SENT                                       # grows)
        else:
            self.sym.resize_unset(nslots)
            huge_pages(self.sym.data(), nslots * sizeof(int32_t))
            self.sym[0] = SENT
        for r in range(nr):
            ranges[r].owner = <void*>self
            ranges[r].tokens = tokens
            ranges[r].offsets = offsets
            ranges[r].counts = counts
            ranges[r].order = order.data()
            ranges[r].total = total
            ranges[r].pairs = 0
            ranges[r].starts = &starts[r]
            ranges[r].freqs = &freqs[r]
        run_in_threads(_lay_out_part, <char*>ranges.data(), sizeof(LayOut), nr)
        cdef double pairs = 0           # _setup's bound on the pair counts (2**63), again for the counts read here:
                                        # past 9.3e18 (rounding aside, past the bound) they changed since
        f = -1
        for r in range(nr):
            if ranges[r].changed:
                return 1
            pairs += ranges[r].pairs
            for j in range(<Py_ssize_t>starts[r].size()):
                c = freqs[r][j]
                if c < f:               # (each range's own are rising: checked there)
                    return 1
                if c != f:
                    if f >= 0:
                        self.cls_end.push_back(starts[r][j])
                        self.cls_freq.push_back(f)
                    f = c
        if pairs > 9.3e18:
            return 1
        if f >= 0:
            self.cls_end.push_back(nslots)
            self.cls_freq.push_back(f)
        self.cls_freq.push_back(0)        # past the last class (never asked for)
        return 0

    cdef void _lay_out_range(self, LayOut* part) noexcept nogil:
        if self.narrow:
            self._lay_out_words(part, self.sym16.data())
        else:
            self._lay_out_words(part, self.sym.data())

    cdef void _lay_out_words(self, LayOut* part, slot_t* sym) noexcept nogil:
        """_lay_out's step 2 for the words order[k_lo:k_hi], into the slots slot_lo .. slot_hi - 1: each value of
        the arrays read once and checked (another thread may write them: changed, and nothing written out of
        bounds); the start and frequency of each class it begins."""
        cdef Py_ssize_t k, i, n
        cdef int64_t c, a, b, f = -1, slot = part.slot_lo
        cdef int32_t w
        cdef const uint8_t* tokens = part.tokens
        cdef double pairs = 0           # (written to part once: the parts sit side by side in one array)
        part.changed = True             # until the range is done: a push_back that fails (out of memory) returns
        for k in range(part.k_lo, part.k_hi):   # early through Cython's unraisable path, slots left unwritten
            w = part.order[k]
            c, a, b = part.counts[w], part.offsets[w], part.offsets[w + 1]
            if c <= 0 or c < f or not 0 <= a <= b <= part.total or slot + (b - a) + 1 > part.slot_hi:
                return
            if slot_t is int16_t and b - a > NARROW_WORD:   # longer since _setup looked: its back pointers
                return                                      # would not fit
            pairs += <double>c * <double>(b - a - 1)
            if c != f:
                push_or_end(part.starts[0], slot)
                push_or_end(part.freqs[0], c)
                f = c
            n = b - a
            for i in range(n):
                sym[slot + i] = tokens[a + i]
            slot += n
            sym[slot] = SENT
            slot += 1
        part.pairs = pairs
        part.changed = slot != part.slot_hi

    cdef void _index_pairs(self) noexcept nogil:
        """Steps 3 and 4 of building, from the slots alone."""
        cdef Py_ssize_t nslots = self._slots()
        cdef int32_t pid
        cdef HeapEntry he
        # 3. the pairs of bytes: ids from a direct table, counts, then positions by counting sort (in ranges of
        #    slots, one a thread, when there are threads and slots enough: _index_pairs_in_ranges)
        cdef int n = <int>min(<Py_ssize_t>self.threads, max(<Py_ssize_t>1, (nslots - 2) // INDEX_SLOTS_PER_THREAD))
        if n > 1:
            self._index_pairs_in_ranges(n)
        elif self.narrow:
            self._index_pairs_serially(self.sym16.data())
        else:
            self._index_pairs_serially(self.sym.data())
        self.garbage = 0
        self.stale = 0
        # 4. the heap
        for pid in range(<int32_t>self.pcount.size()):
            if self.pcount[pid] > 0 and self._candidate(pid):
                he.key = self.pcount[pid]
                he.id = pid
                self.heap.push_back(he)
        heap_make(self.heap.data(), self.heap.size(), _merge_first, <void*>self)
        self.heap_pruned = self.heap.size()

    cdef void _index_pairs_serially(self, const slot_t* sym) noexcept nogil:
        """_index_pairs' step 3 in this thread: ids from a direct table, counts, then positions by counting sort."""
        cdef Py_ssize_t i, nslots = self._slots()
        cdef int64_t f, run
        cdef vector[int32_t] byte_pid
        assign_or_end(byte_pid, 65536, -1)
        cdef int32_t pid, x, y
        cdef Py_ssize_t cls = 0
        f = self.cls_freq[0]
        for i in range(1, nslots - 1):
            while cls < <Py_ssize_t>self.cls_end.size() and i >= self.cls_end[cls]:
                cls += 1
                f = self.cls_freq[cls]
            x = sym[i]
            y = sym[i + 1]
            if x < 0 or y < 0:
                continue
            pid = byte_pid[x * 256 + y]
            if pid < 0:
                pid = self._new_pair(x, y)
                byte_pid[x * 256 + y] = pid
            self.pcount[pid] += f
            self.plen[pid] += 1
        self._bound_positions()
        cdef vector[int64_t] cursor
        resize_or_end(cursor, self.pcount.size())
        run = 0
        for pid in range(<int32_t>self.pcount.size()):
            self.pstart[pid] = run
            if self.plen[pid] == UNTRACKED:
                cursor[pid] = -1
                continue
            cursor[pid] = run
            run += self.plen[pid]
        self.arena.resize_unset(run)    # (every entry written below: one a pair counted above)
        self.most_positions = run
        for i in range(1, nslots - 1):
            x = sym[i]
            y = sym[i + 1]
            if x < 0 or y < 0:
                continue
            pid = byte_pid[x * 256 + y]
            if cursor[pid] < 0:
                continue
            self.arena[cursor[pid]] = <int32_t>i
            cursor[pid] += 1

    cdef void _index_pairs_in_ranges(self, int n) noexcept nogil:
        """_index_pairs' step 3 over n ranges of slots, one a thread: each range counts its pairs by byte pair
        in tables of its own, which are added in order (ids in the order first met), then each writes its
        positions after the ranges' before it: the same ids, counts and positions, each pair's in rising order,
        as _index_pairs_serially's (the real corpus's 9 million slots: 134 ms -> 85 ms in two threads)."""
        cdef Py_ssize_t nslots = self._slots()
        cdef int64_t run
        # (ReVecs, as the engine's other tables: running out of memory ends the process, where a std::vector
        # failing in this noexcept function would go on with no room)
        cdef ReVec[PairScan] parts
        cdef ReVec[int64_t] counts, cursors
        cdef ReVec[int32_t] lengths, firsts, byte_pid
        cdef Py_ssize_t k, j, key
        cdef int32_t pid
        parts.resize_unset(n)
        counts.resize(<size_t>n * BYTE_PAIRS)           # (zeroed)
        lengths.resize(<size_t>n * BYTE_PAIRS)
        firsts.resize_unset(<size_t>n * BYTE_PAIRS)
        cursors.resize_unset(<size_t>n * BYTE_PAIRS)
        for k in range(n):
            parts[k].owner = <void*>self
            parts[k].lo = 1 + (nslots - 2) * k // n
            parts[k].hi = 1 + (nslots - 2) * (k + 1) // n
            parts[k].count = &counts[k * BYTE_PAIRS]
            parts[k].length = &lengths[k * BYTE_PAIRS]
            parts[k].first = &firsts[k * BYTE_PAIRS]
            parts[k].seen = 0
            parts[k].cursor = &cursors[k * BYTE_PAIRS]
            parts[k].positions = False
        run_in_threads(_scan_pairs_part, <char*>parts.data(), sizeof(PairScan), n)
        byte_pid.resize_unset(BYTE_PAIRS)
        for key in range(BYTE_PAIRS):
            byte_pid[key] = -1
        for k in range(n):
            for j in range(parts[k].seen):
                key = parts[k].first[j]
                pid = byte_pid[key]
                if pid < 0:
                    pid = self._new_pair(<int32_t>(key >> 8), <int32_t>(key & 255))
                    byte_pid[key] = pid
                self.pcount[pid] += parts[k].count[key]
                self.plen[pid] += parts[k].length[key]
        self._bound_positions()
        run = 0
        for pid in range(<int32_t>self.pcount.size()):
            self.pstart[pid] = run
            if self.plen[pid] != UNTRACKED:
                run += self.plen[pid]
        self.arena.resize_unset(run)    # (every entry written below: one a pair counted above)
        self.most_positions = run
        for k in range(n):                  # each range's positions after the ranges' before it
            for j in range(parts[k].seen):
                key = parts[k].first[j]
                pid = byte_pid[key]
                if self.plen[pid] == UNTRACKED:     # (a positionless pair: none written)
                    parts[k].cursor[key] = -1
                    continue
                parts[k].cursor[key] = self.pstart[pid]
                self.pstart[pid] += parts[k].length[key]
            parts[k].positions = True
        for pid in range(<int32_t>self.pcount.size()):
            if self.plen[pid] != UNTRACKED:
                self.pstart[pid] -= self.plen[pid]
        run_in_threads(_scan_pairs_part, <char*>parts.data(), sizeof(PairScan), n)

    cdef void _scan_pairs(self, PairScan* part) noexcept nogil:
        if self.narrow:
            self._scan_pairs_in(part, self.sym16.data())
        else:
            self._scan_pairs_in(part, self.sym.data())

    cdef void _scan_pairs_in(self, PairScan* part, const slot_t* sym) noexcept nogil:
        """_index_pairs' work on one range of slots (see PairScan): the first pass counts its pairs by byte
        pair, the second writes their positions into the arena from part.cursor. (Everything in locals: the
        module is compiled without strict aliasing, and each store through a pointer would reload the fields.)"""
        cdef Py_ssize_t i, cls = 0, ncls = self.cls_end.size(), seen = part.seen
        cdef Py_ssize_t lo = part.lo, hi = part.hi
        cdef int32_t x, y, key
        cdef int64_t f
        cdef const int64_t* cls_end = self.cls_end.data()
        cdef int32_t* arena = self.arena.data()
        cdef int64_t* cursor = part.cursor
        cdef int64_t* count = part.count
        cdef int32_t* length = part.length
        cdef int32_t* first = part.first
        if part.positions:
            for i in range(lo, hi):
                x = sym[i]
                y = sym[i + 1]
                if x < 0 or y < 0:
                    continue
                key = x * 256 + y
                if cursor[key] < 0:         # a positionless pair (a bounded engine)
                    continue
                arena[cursor[key]] = <int32_t>i
                cursor[key] += 1
            return
        while cls < ncls and lo >= cls_end[cls]:
            cls += 1
        f = self.cls_freq[cls]
        for i in range(lo, hi):
            while cls < ncls and i >= cls_end[cls]:
                cls += 1
                f = self.cls_freq[cls]
            x = sym[i]
            y = sym[i + 1]
            if x < 0 or y < 0:
                continue
            key = x * 256 + y
            if length[key] == 0:
                first[seen] = key
                seen += 1
            count[key] += f
            length[key] += 1
        part.seen = seen

    # --- merging ------------------------------------------------------------------------------

    cdef inline bint _candidate(self, int32_t pid) noexcept nogil:
        """Whether run() may choose the pair: its token is not longer than max_token_length."""
        return not self.limited or self.tok_len[self._left(pid)] + self.tok_len[self._right(pid)] <= self.max_len

    cdef int64_t _best_count(self) noexcept nogil:
        """The count of the pair the next merge would choose, which is then the heap's top; 0 if none."""
        cdef HeapEntry top
        cdef int64_t now
        while not self.heap.empty():
            top = self.heap[0]
            now = self.pcount[top.id]
            if now == top.key and now > 0:
                return now
            self._pop()
            if 0 < now < top.key:
                # a count that fell is not pushed when it falls (most changes are falls): its old entry,
                # which ranks at least as high, comes up first and is pushed again with the count of now
                self._push(now, top.id)
        return 0

    cdef int _merge_one(self, int64_t min_count) noexcept nogil:
        """Do the next merge; returns 0 when no pair is left or the best occurs fewer than min_count times."""
        cdef int64_t best = self._best_count()
        if best == 0 or best < min_count:
            return 0
        if self.bounded and self.plen[self.heap[0].id] == UNTRACKED:   # (the top: _best_count's pair)
            self._rescan(best, self.heap[0].id)
        self._merge(self._pop().id, best)
        return 1

    cdef void _force(self, int32_t a, int32_t b) noexcept nogil:
        """Merge the symbols a and b as if chosen (continued training). A pair that does not occur still
        makes its token and is recorded, with count 0; its heap entry, if any, is dropped when it comes up."""
        cdef int32_t pid = self._find_pair(a, b)
        if pid >= 0 and self.pcount[pid] > 0:
            if self.bounded and self.plen[pid] == UNTRACKED:
                self._rescan(-1, pid)
            self._merge(pid, self.pcount[pid])
            return
        push_or_end(self.merge_a, a)
        push_or_end(self.merge_b, b)
        push_or_end(self.merge_c, self._intern_concat(a, b))
        push_or_end(self.merge_count, 0)

    cdef void _merge(self, int32_t pab, int64_t count) noexcept nogil:
        """Merge every occurrence of pair pab (which occurs `count` times), left to right in each word."""
        cdef int32_t a = self._left(pab), b = self._right(pab)
        cdef int32_t nsym = <int32_t>self.tok_len.size()
        cdef int32_t c = self._intern_concat(a, b)
        self.mc_new = c == nsym
        self.ma = a
        self.mb = b
        self.mc = c
        self.mstamp = <int32_t>self.merge_c.size()
        self.pairs_before = <int32_t>self.pcount.size()
        self.touched.clear()
        self.touched_key.resize_unset(0)
        push_or_end(self.merge_a, a)
        push_or_end(self.merge_b, b)
        push_or_end(self.merge_c, c)
        push_or_end(self.merge_count, count)
        cdef int32_t la = self.tok_len[a], lb = self.tok_len[b]
        cdef int64_t seg = self.pstart[pab], nseg = self.plen[pab]
        if a == b and not is_sorted(self.arena.begin() + seg, self.arena.begin() + seg + nseg):
            # overlapping occurrences ("aaa") must be merged left to right
            cpp_sort(self.arena.begin() + seg, self.arena.begin() + seg + nseg)
        cdef int64_t merged
        cdef Py_ssize_t k
        cdef MapSlot* m
        cdef int32_t p
        if self.narrow:                 # (after _intern_concat: making c may have widened the slots)
            merged = self._merge_at(self.sym16.data(), a, b, c, la, lb, seg, nseg)
        else:
            merged = self._merge_at(self.sym.data(), a, b, c, la, lb, seg, nseg)
        # the merged pair is used up: its count drops by what was merged (to 0), its segment is garbage
        self.pcount[pab] -= merged
        self.garbage += self.plen[pab]
        self.plen[pab] = 0
        if self.lean:
            self.stale -= self.pgone[pab]
            self.pgone[pab] = 0
        self._file_records()
        if <Py_ssize_t>self.heap.size() > 2 * self.heap_pruned + self.heap_slack:
            self._prune_heap()
        cdef int64_t gone
        for k in range(<Py_ssize_t>self.touched.size()):
            m = &self.maps[self.touched[k]]
            if self.bounded:
                self.pocc[m.pid] += m.made - m.gone
            if m.gone:
                if self.lean and self.plen[m.pid] != UNTRACKED:
                    gone = min(<int64_t>m.gone, <int64_t>self.plen[m.pid] - self.pgone[m.pid])
                    self.pgone[m.pid] += <int32_t>gone
                    self.stale += gone
                m.gone = 0
            if m.delta == 0:
                continue
            p = m.pid
            self.pcount[p] += m.delta
            if m.delta > 0 and self._candidate(p):  # a rise needs a new entry; a fall is found when its
                self._push(self.pcount[p], p)        # entry comes up
            m.delta = 0
            if self.pcount[p] <= 0 and self.plen[p] > 0:
                self.garbage += self.plen[p]
                self.plen[p] = 0
                if self.lean:
                    self.stale -= self.pgone[p]
                    self.pgone[p] = 0
            elif self.pcount[p] <= 0 and self.plen[p] == UNTRACKED:    # no occurrence left to miss
                self.plen[p] = 0
        if self.bounded:
            self.pocc[pab] = 0

    cdef int64_t _merge_at(self, slot_t* sym, int32_t a, int32_t b, int32_t c, int32_t la, int32_t lb, int64_t seg,
                           int64_t nseg) noexcept nogil:
        """_merge's loop over the occurrences of (a, b) -> c in sym (this engine's slots): the slots rewritten, the
        neighbours' count changes and the new positions recorded; returns the count merged."""
        # The loop below is the hot path: everything it reads often is in locals (stores to sym could
        # otherwise alias the engine's fields), and the map slot of each pair is computed as _rule would.
        cdef const int32_t* positions = self.arena.data() + seg
        cdef MapSlot* maps = self.maps.data()
        cdef const int64_t* cend = self.cls_end.data()
        cdef const int64_t* cfreq = self.cls_freq.data()
        cdef Py_ssize_t ncls = self.cls_end.size(), kc = self.fcls
        cdef int32_t stamp = self.mstamp
        cdef bint fresh = self.mc_new
        cdef Py_ssize_t k
        cdef int32_t i, j, e, p, n, sp, sn, at, v
        cdef int64_t f, merged = 0
        cdef MapSlot* m
        cdef Record rec
        self.records.clear()
        for k in range(nseg):
            if k + 32 < nseg:                # the slots an occurrence reads: from its left neighbour's end to
                i = positions[k + 32]        # its right neighbour's start, maybe two cache lines
                prefetch(sym + i - 1)
                prefetch(sym + i + la + lb)
            i = positions[k]
            if sym[i] != a:
                continue
            j = i + la
            if sym[j] != b:
                continue
            e = j + lb
            if not (i < cend[kc] and (kc == 0 or i >= cend[kc - 1])):
                kc = upper_bound(cend, cend + ncls, <int64_t>i) - cend
            f = cfreq[kc]
            merged += f
            v = sym[i - 1]                   # the left neighbour: a sentinel, a 1-byte symbol or a back pointer
            p = -1 if v == SENT else (i - 1 if v >= 0 else i + 1 + v)
            n = e if sym[e] != SENT else -1
            sym[i] = <slot_t>c
            sym[j] = INNER
            sym[e - 1] = <slot_t>(i - e - 1)   # the back pointer -(d + 2), d = e - 1 - i
            if p >= 0:
                sp = sym[p]
                m = maps + 4 * sp                                   # (sp, a): rule 0
                if m.stamp != stamp:
                    self._fill(m, 4 * sp, sp, a, False)
                m.delta -= f
                m.gone += 1
                at = 4 * c + 1 if sp == b else 4 * sp + 2           # (b, c): rule 1; (sp, c): rule 2
                m = maps + at
                if m.stamp != stamp:
                    self._fill(m, at, sp, c, fresh)
                m.delta += f
                m.made += 1
                if sp != c or not fresh:     # a c at p made in this loop was recorded then
                    rec.pos = p
                    rec.at = -1 if sp == b else at     # a b at p may yet be merged into a c on its left
                    push_or_end(self.records, rec)
            if n >= 0:
                sn = sym[n]
                at = 4 * b if sn == a else 4 * sn + 1               # (b, a): rule 0; (b, sn): rule 1
                m = maps + at
                if m.stamp != stamp:
                    self._fill(m, at, b, sn, False)
                m.delta -= f
                m.gone += 1
                at = 4 * c if sn == a else (4 * c + 2 if sn == c else 4 * sn + 3)   # rules 0, 2, 3
                m = maps + at
                if m.stamp != stamp:
                    self._fill(m, at, c, sn, fresh)
                m.delta += f
                m.made += 1
                rec.pos = i
                rec.at = -1 if sn == a else at         # an a at n may yet be merged into a c
                push_or_end(self.records, rec)
        self.fcls = kc
        return merged

    cdef inline int32_t _record_slot(self, const slot_t* sym, int32_t r) noexcept nogil:
        """The map slot of the pair now starting at slot r (recorded in this merge), or -1 if r is stale."""
        cdef int32_t x = sym[r]
        if x < 0:
            return -1
        cdef int32_t y = sym[r + self.tok_len[x]]
        if y < 0:
            return -1
        return self._slot_of(x, y)

    cdef int64_t _moved_positions(self) noexcept nogil:
        """The positions of the pairs that gain some in this merge, whose segments move to the arena's end."""
        cdef int64_t total = 0
        cdef MapSlot* m
        cdef Py_ssize_t k
        for k in range(<Py_ssize_t>self.touched.size()):
            m = &self.maps[self.touched[k]]
            if m.fill > 0:                  # (-1: dropped by _drop_records)
                total += self.plen[m.pid]
        return total

    cdef int64_t _count_records(self, const slot_t* sym) noexcept nogil:
        """_file_records' first step: the map slot of each record not yet known (-1: stale), each slot's
        count of them; returns how many are not stale."""
        cdef Py_ssize_t k, nrec = self.records.size()
        cdef Record* rec
        cdef int64_t need = 0
        for k in range(nrec):
            rec = &self.records[k]
            if rec.at < 0:
                rec.at = self._record_slot(sym, rec.pos)
                if rec.at < 0:
                    continue
            self.maps[rec.at].fill += 1
            need += 1
        return need

    cdef void _file_records(self) noexcept nogil:
        """Append the positions recorded in this merge to their pairs' segments (grouped, one copy)."""
        cdef Py_ssize_t k, nrec = self.records.size(), ntouched
        cdef Record* rec
        cdef MapSlot* m
        cdef int32_t pid
        cdef int64_t need, at, old, fresh
        need = self._count_records(self.sym16.data()) if self.narrow else self._count_records(self.sym.data())
        self._resolve_pids()                # (every slot this merge fills is filled by now)
        if self.bounded and need:
            need = self._drop_records(need)
            if need == 0:
                for k in range(<Py_ssize_t>self.touched.size()):
                    self.maps[self.touched[k]].fill = 0
        if need == 0:
            return
        ntouched = self.touched.size()
        cdef int64_t fresh_total = need
        need += self._moved_positions()
        if <int64_t>self.arena.size() + need > <int64_t>self.arena.capacity():
            # full: compact if enough of it is garbage (a lean engine: or stale), else grow by a quarter
            if self.lean and LEAN_TRIGGER * (self.garbage + self.stale) > <int64_t>self.arena.size() or \
                    not self.lean and 4 * self.garbage > <int64_t>self.arena.size():
                self._compact(need, 0)
                need = fresh_total + self._moved_positions()     # a lean compaction may have shrunk them
            else:
                self.arena.reserve(self.arena.size() + need + self.arena.size() // 4)
        at = self.arena.size()
        self.arena.resize(at + need)
        self.most_positions = max(self.most_positions, <int64_t>self.arena.size())
        for k in range(ntouched):
            m = &self.maps[self.touched[k]]
            if m.fill <= 0:
                continue
            pid = m.pid
            old = self.plen[pid]
            fresh = m.fill
            if old > 0:                    # a pair that existed before (c existed already): move it
                memcpy(&self.arena[at], &self.arena[self.pstart[pid]], old * sizeof(int32_t))
                self.garbage += old
            self.pstart[pid] = at
            self.plen[pid] = <int32_t>(old + fresh)
            m.fill = at + old              # where this merge's positions go
            at += old + fresh
        cdef int32_t* arena = self.arena.data()
        for k in range(nrec):
            rec = &self.records[k]
            if rec.at >= 0:
                m = &self.maps[rec.at]
                if m.fill >= 0:
                    arena[m.fill] = rec.pos
                    m.fill += 1
        for k in range(ntouched):
            self.maps[self.touched[k]].fill = 0

    cdef int64_t _drop_records(self, int64_t need) noexcept nogil:
        """A bounded engine's choice of the positions this merge recorded (after _count_records and
        _resolve_pids): a positionless pair stays so (its segment would lack its older occurrences), and a pair
        made in this merge gets positions only when it will count watermark or more and may be chosen; the map
        slots of the others get fill -1 (nothing written). Returns the positions still to write."""
        cdef Py_ssize_t k
        cdef MapSlot* m
        cdef int32_t pid
        for k in range(<Py_ssize_t>self.touched.size()):
            m = &self.maps[self.touched[k]]
            if m.fill <= 0:
                continue
            pid = m.pid
            if self.plen[pid] == UNTRACKED or pid >= self.pairs_before and \
                    (m.delta < self.watermark or not self._candidate(pid)):
                self.plen[pid] = UNTRACKED      # (a new pair's count is its delta: it had none before)
                need -= m.fill
                m.fill = -1
        return need

    cdef void _compact(self, int64_t extra, int64_t drop_below) noexcept nogil:
        """Drop the garbage in place: move the live segments to the front of the arena in the order they lie
        in it (every entry moves down, over garbage or its own old place, never over one still to move). A
        lean engine checks the segments of which 1 / VALIDATE_SHARE or more may be stale, keeps only their
        positions that still hold their pair, and gives back the pages past the new end. Then leave room for
        `extra` more positions and half again (growing is a realloc: no copy, no new pages until used)."""
        cdef vector[HeapEntry] order            # (start, pid) of the live segments
        cdef HeapEntry e
        cdef int32_t pid, x, y, lx
        cdef int64_t at = 0, src, end, size = self.arena.size(), left_stale = 0
        cdef Py_ssize_t k
        cdef int32_t* arena = self.arena.data()
        for pid in range(<int32_t>self.plen.size()):
            if self.plen[pid] > 0:
                if 0 < self.pcount[pid] < drop_below:       # below a re-scan's watermark: positionless
                    self.plen[pid] = UNTRACKED
                    if self.lean:
                        self.pgone[pid] = 0
                    continue
                e.key = self.pstart[pid]
                e.id = pid
                push_or_end(order, e)
        cpp_sort(order.begin(), order.end(), KeyIdLess())
        for k in range(<Py_ssize_t>order.size()):
            pid = order[k].id
            if not self.lean:
                if self.pstart[pid] != at:
                    memmove(&arena[at], &arena[self.pstart[pid]], self.plen[pid] * sizeof(int32_t))
                    self.pstart[pid] = at
                at += self.plen[pid]
                continue
            if VALIDATE_SHARE * <int64_t>self.pgone[pid] < <int64_t>self.plen[pid]:   # few stale: moved as is
                if self.pstart[pid] != at:
                    memmove(&arena[at], &arena[self.pstart[pid]], self.plen[pid] * sizeof(int32_t))
                    self.pstart[pid] = at
                at += self.plen[pid]
                left_stale += self.pgone[pid]
                continue
            self.pgone[pid] = 0
            self.checked += self.plen[pid]
            x = self._left(pid)
            y = self._right(pid)
            lx = self.tok_len[x]
            src = self.pstart[pid]
            self.pstart[pid] = at
            if self.narrow:
                at = self._keep_live(self.sym16.data(), arena, src, src + self.plen[pid], at, size, x, y, lx)
            else:
                at = self._keep_live(self.sym.data(), arena, src, src + self.plen[pid], at, size, x, y, lx)
            self.plen[pid] = <int32_t>(at - self.pstart[pid])
        self.arena.resize(at)
        if self.lean:
            self.arena.shrink_to_fit()          # the pages past the end go back to the system
        self.garbage = 0
        self.stale = left_stale                 # what the segments moved unchecked still hold
        self.compactions += 1
        self.arena.reserve(at + extra + (at + extra) // 2)

    cdef int64_t _keep_live(self, const slot_t* sym, int32_t* arena, int64_t src, int64_t end, int64_t at,
                            int64_t size, int32_t x, int32_t y, int32_t lx) noexcept nogil:
        """_compact's check of a segment: its positions arena[src:end] that still hold (x, y) (x of lx bytes),
        moved down to arena[at:]; returns the new end."""
        cdef int32_t r
        while src < end:
            if src + 32 < size:             # the slot checked soon (maybe in a later segment or in
                prefetch(sym + arena[src + 32])   # garbage), which lies anywhere in sym
            r = arena[src]
            src += 1
            if sym[r] == x and sym[r + lx] == y:
                arena[at] = r
                at += 1
        return at

    # --- positions under a budget ---------------------------------------------------------------

    cdef void _bound_positions(self) noexcept nogil:
        """_index_pairs' choice, between counting the byte pairs (plen: their occurrences) and writing their
        positions: whether the engine is bounded (asked to be, or lean with more positions than its slots' bytes
        / POSITIONS_SHARE and than MIN_BUDGET), and then which pairs get positions: those that may be chosen and
        count the watermark or more, the least count that keeps their positions within the budget (at least the
        best pairs'); the others get plen UNTRACKED."""
        cdef int32_t pid, npairs = <int32_t>self.pcount.size()
        cdef int64_t total = 0, top = 0, w
        cdef int64_t slot_bytes = <int64_t>self._slots() * (2 if self.narrow else 4)
        for pid in range(npairs):
            total += self.plen[pid]
        if self.asked_budget >= 0:
            self.budget = self.asked_budget
        else:
            self.budget = max(slot_bytes // (POSITIONS_SHARE * <int64_t>sizeof(int32_t)), <int64_t>MIN_BUDGET)
            if not self.lean or total <= self.budget:
                return
        self.bounded = True
        self.pocc.resize_unset(npairs)
        for pid in range(npairs):
            self.pocc[pid] = self.plen[pid]
            if self.pcount[pid] > top and self._candidate(pid):
                top = self.pcount[pid]
        w = self._watermark()
        self.watermark = top if w == 0 or w > top else w
        if top == 0:                    # nothing may be chosen (max_token_length 1): nothing needs positions
            self.watermark = 1 << 62
        for pid in range(npairs):
            if self.pcount[pid] < self.watermark or not self._candidate(pid):
                self.plen[pid] = UNTRACKED

    cdef int64_t _watermark(self) noexcept nogil:
        """The least count such that the pairs that may be chosen and count that or more have at most `budget`
        occurrences and are at most MAX_WANTED, taken from a histogram of the counts (so a little higher than it
        could be, at worst); 0 when even the best pairs are more than that."""
        cdef vector[int64_t] hist, npairs
        assign_or_end(hist, COUNT_BUCKETS, 0)
        assign_or_end(npairs, COUNT_BUCKETS, 0)
        cdef int32_t pid
        cdef int b
        cdef int64_t c, total = 0, pairs = 0, w = 0
        for pid in range(<int32_t>self.pcount.size()):
            c = self.pcount[pid]
            if c > 0 and self._candidate(pid):
                b = _count_bucket(c)
                hist[b] += self.pocc[pid]
                npairs[b] += 1
        for b in range(COUNT_BUCKETS - 1, 0, -1):
            if npairs[b] == 0:
                continue
            if total + hist[b] > self.budget or pairs + npairs[b] > MAX_WANTED:
                break
            total += hist[b]
            pairs += npairs[b]
            w = _bucket_floor(b)
        return w

    cdef inline bint _wanted(self, int32_t pid, int32_t must) noexcept nogil:
        """Whether _rescan collects the positions of pid: positionless, occurring, and must or at or above the
        watermark and a candidate."""
        return self.plen[pid] == UNTRACKED and self.pcount[pid] > 0 and \
            (pid == must or self.pcount[pid] >= self.watermark and self._candidate(pid))

    cdef void _rescan(self, int64_t best, int32_t must) noexcept nogil:
        """Give positions to the pair `must`, positionless, about to be merged: a new watermark (the least
        count whose pairs' occurrences fit the budget, at most `best` when it is the best count, else (-1) the
        watermark of now when not even the best pairs fit), a compaction that drops the positions of the pairs
        below it, then one pass over the slots that collects those of the positionless pairs at or above it, and
        must's, into segments sized by their numbers of occurrences (pocc)."""
        cdef double t0 = _now()
        cdef int64_t w = self._watermark()
        if best > 0:
            self.watermark = best if w == 0 or w > best else w
        elif w > 0:
            self.watermark = w
        self._compact(0, self.watermark)
        cdef double t1 = _now()
        cdef int32_t pid, npairs = <int32_t>self.pcount.size()
        cdef int64_t total = 0, nwant = 0, at
        for pid in range(npairs):
            if self._wanted(pid, must):
                nwant += 1
                total += self.pocc[pid]
        cdef uint64_t cap = 16, slot
        while cap < <uint64_t>(2 * nwant):
            cap *= 2
        cdef Wanted empty
        empty.key = WANT_EMPTY
        empty.pid = -1
        empty.start = 0
        empty.n = 0
        cdef vector[Wanted] table
        assign_or_end(table, cap, empty)
        cdef vector[uint8_t] flags          # 1: the left symbol of a wanted pair, 2: the right one
        assign_or_end(flags, self.tok_len.size(), 0)
        at = self.arena.size()
        self.arena.resize_unset(at + total)
        self.most_positions = max(self.most_positions, <int64_t>self.arena.size())
        for pid in range(npairs):
            if self._wanted(pid, must):
                slot = mix64(self.pkey[pid]) & (cap - 1)
                while table[slot].key != WANT_EMPTY:
                    slot = (slot + 1) & (cap - 1)
                table[slot].key = self.pkey[pid]
                table[slot].pid = pid
                table[slot].start = at
                table[slot].n = self.pocc[pid]
                self.pstart[pid] = at
                at += self.pocc[pid]
                flags[self._left(pid)] |= 1
                flags[self._right(pid)] |= 2
        # the pass: in two ranges of slots at once when the engine has threads (cut at a sentinel), the first
        # range's positions written from each segment's start up, the second's from its end down (then turned
        # round: each segment in rising order, as the pair index writes them)
        cdef Collect parts[2]
        cdef vector[int32_t] found
        assign_or_end(found, 2 * cap, 0)
        cdef Py_ssize_t nslots = self._slots(), mid = nslots - 1
        cdef int nparts = 2 if self.threads > 1 and nslots > 2 * INDEX_SLOTS_PER_THREAD else 1
        cdef int k
        if nparts == 2:
            mid = nslots // 2
            while mid < nslots - 1 and self._slot(mid) != SENT:
                mid += 1
        for k in range(2):
            parts[k].owner = <void*>self
            parts[k].table = table.data()
            parts[k].mask = cap - 1
            parts[k].flags = flags.data()
            parts[k].found = found.data() + k * cap
            parts[k].forward = k == 0
        parts[0].lo = 1
        parts[0].hi = mid
        parts[1].lo = mid
        parts[1].hi = nslots - 1
        run_in_threads(_collect_part, <char*>parts, sizeof(Collect), nparts)
        cdef int64_t got, n
        cdef int32_t* arena = self.arena.data()
        for slot in range(cap):
            if table[slot].key == WANT_EMPTY:
                continue
            pid = table[slot].pid
            n = table[slot].n
            got = <int64_t>found[slot] + found[cap + slot]
            if got > n:                     # (pocc too low: not so, unless a bug; the two ends may overlap)
                self.mismatched += got - n
                self.plen[pid] = <int32_t>n
                continue
            if found[cap + slot]:
                _reverse(arena + table[slot].start + n - found[cap + slot], found[cap + slot])
                if got < n:                 # (pocc too high: not so, unless a bug; the hole closed)
                    memmove(arena + table[slot].start + found[slot], arena + table[slot].start + n - found[cap + slot],
                            found[cap + slot] * sizeof(int32_t))
            self.plen[pid] = <int32_t>got
            self.mismatched += n - got      # (occurrences not found)
            self.garbage += n - got
        self.rescans += 1
        self.rescanned += total
        if _trace:
            with gil:
                print(f"rescan {self.rescans}: merge {self.merge_c.size()} best {best} watermark {self.watermark} "
                      f"pairs {nwant} positions {total} arena {self.arena.size()} compact {t1 - t0:.2f}s "
                      f"collect {_now() - t1:.2f}s", flush=True)

    cdef inline int32_t _slot(self, Py_ssize_t i) noexcept nogil:
        return self.sym16[i] if self.narrow else self.sym[i]

    cdef void _collect_range(self, Collect* part) noexcept nogil:
        if self.narrow:
            self._collect(self.sym16.data(), part)
        else:
            self._collect(self.sym.data(), part)

    cdef void _collect(self, const slot_t* sym, Collect* part) noexcept nogil:
        """_rescan's pass over one range of slots: the position of each occurrence of a pair in the table written
        into its segment (at most n of them: more are counted in mismatched by _rescan)."""
        cdef Py_ssize_t i = part.lo, j, hi = part.hi
        cdef const int32_t* tlen = self.tok_len.data()
        cdef int32_t* arena = self.arena.data()
        cdef const Wanted* table = part.table
        cdef const uint8_t* flags = part.flags
        cdef int32_t* found = part.found
        cdef uint64_t mask = part.mask
        cdef bint forward = part.forward
        cdef int32_t x, y
        cdef uint64_t key, slot
        while i < hi:                   # symbol to symbol (a symbol's start, else a sentinel)
            x = sym[i]
            if x < 0:
                i += 1
                continue
            j = i + tlen[x]
            if flags[x] & 1:
                y = sym[j]
                if y >= 0 and flags[y] & 2:
                    key = pair_key(x, y)
                    slot = mix64(key) & mask
                    while table[slot].key != key and table[slot].key != WANT_EMPTY:
                        slot = (slot + 1) & mask
                    if table[slot].key == key:
                        if found[slot] < table[slot].n:
                            if forward:
                                arena[table[slot].start + found[slot]] = <int32_t>i
                            else:
                                arena[table[slot].start + table[slot].n - 1 - found[slot]] = <int32_t>i
                        found[slot] += 1        # (past n too: _rescan counts them in mismatched)
            i = j

    def finish(self):
        """Free the working arrays (slots, positions, pairs, heap): no merge can follow, merges() still
        works. A caller about to turn huge tokens into bytes objects calls this first."""
        self._idle("finish")
        self.sym.release()
        self.sym16.release()
        self.arena.release()
        self.pkey.release()
        self.plen.release()
        self.pgone.release()
        self.pocc.release()
        vector[int32_t]().swap(self.pslots)
        vector[int32_t]().swap(self.touched)
        self.touched_key.release()
        self.pcount.release()
        self.pstart.release()
        self.heap.release()
        vector[Record]().swap(self.records)
        vector[MapSlot]().swap(self.maps)
        self.pmask = 0
        self.finished = True

    def run(self, Py_ssize_t max_merges, int64_t min_count=1):
        """Do up to max_merges merges; returns how many were done (fewer when no pair is left, or when the
        best pair occurs fewer than min_count times: see next_count)."""
        cdef Py_ssize_t done = 0
        self._idle("run")
        if self.finished:
            return 0
        self.busy = True
        with nogil:
            while done < max_merges and self._merge_one(min_count):
                done += 1
        self.busy = False
        return done

    def next_count(self):
        """How often the pair the next merge would choose occurs (0 when no pair is left)."""
        self._idle("next_count")
        if self.finished:
            raise RuntimeError("next_count needs an engine before finish()")
        cdef int64_t best
        self.busy = True
        with nogil:
            best = self._best_count()
        self.busy = False
        return best

    def replay(self, const uint8_t[::1] tokens, const int64_t[::1] offsets):
        """Do the given merges, in order, whatever the counts (continued training): merge k joins the symbols
        with the bytes tokens[offsets[2k]:offsets[2k + 1]] and tokens[offsets[2k + 1]:offsets[2k + 2]], each
        a single byte or an earlier merge's token (ValueError naming k otherwise). A merge whose pair does not
        occur still makes its token; merges() and merge_counts() list it, with count 0."""
        self._idle("replay")
        if self.finished or self.tok_len.size() == 0:     # (MergeEngine.__new__'s: no table to look in)
            raise RuntimeError("replay needs a built engine, before finish()")
        # its own copies, checked once, then read without the GIL: another thread may write the caller's
        if tokens.shape[0]:             # (a memoryview of nothing cannot be copied, nor needs to be)
            tokens = tokens.copy()
        if offsets.shape[0]:
            offsets = offsets.copy()
        cdef Py_ssize_t n = offsets.shape[0] // 2, k, bad = -1
        if offsets.shape[0] != 2 * n + 1 or offsets[0] != 0 or offsets[2 * n] != tokens.shape[0]:
            raise ValueError("offsets must have 2 * (number of merges) + 1 entries, from 0 to len(tokens)")
        for k in range(2 * n):
            if offsets[k + 1] <= offsets[k]:
                raise ValueError(f"merge {k // 2} has an empty token")
        cdef const uint8_t* base = &tokens[0] if tokens.shape[0] else NULL
        cdef const int64_t* off = &offsets[0]
        cdef int32_t a, b
        self.busy = True
        with nogil:
            for k in range(n):
                a = self._find_symbol(rolling_hash(base + off[2 * k], off[2 * k + 1] - off[2 * k]),
                                      off[2 * k + 1] - off[2 * k], -1, -1, base + off[2 * k])
                b = self._find_symbol(rolling_hash(base + off[2 * k + 1], off[2 * k + 2] - off[2 * k + 1]),
                                      off[2 * k + 2] - off[2 * k + 1], -1, -1, base + off[2 * k + 1])
                if a < 0 or b < 0:
                    bad = k
                    break
                self._force(a, b)
        self.busy = False
        if bad >= 0:
            side = bytes(tokens[offsets[2 * bad]:offsets[2 * bad + 1]]) if a < 0 else \
                bytes(tokens[offsets[2 * bad + 1]:offsets[2 * bad + 2]])
            raise ValueError(f"merge {bad}: {side!r} is neither a single byte nor an earlier merge's token "
                             f"(the merges before it were done)")

    @property
    def num_merges(self):
        """How many merges were done (replayed ones included). A RuntimeError while another thread is in the
        engine, as every other method: its merges grow under it (a data race ThreadSanitizer saw, helper-120)."""
        self._idle("num_merges")
        return self.merge_c.size()

    def memory(self):
        """Bytes held by the engine's main arrays, by name (for benchmarks and tests)."""
        self._idle("memory")
        return {"slots": self.sym.capacity() * 4 + self.sym16.capacity() * 2, "positions": self.arena.capacity() * 4,
                "pairs": self.pkey.capacity() * 28 + self.pgone.capacity() * 4 + self.pocc.capacity() * 4 +
                         self.pslots.capacity() * 4,
                "heap": self.heap.capacity() * sizeof(HeapEntry),
                "symbols": self.pool.capacity() + self.tok_len.capacity() * 52 + self.maps.capacity() * sizeof(MapSlot),
                "num_pairs": self.pkey.size(), "compactions": self.compactions, "checked": self.checked,
                "most_positions": self.most_positions, "bounded": self.bounded,
                "positions_budget": self.budget if self.bounded else None, "watermark": self.watermark,
                "rescans": self.rescans, "rescanned": self.rescanned, "mismatched": self.mismatched}

    def merges(self, bint with_tokens=False, Py_ssize_t start=0):
        """The merges done so far as a list of (bytes, bytes), in order, from merge `start` on (replayed
        merges come first); with_tokens: also the list of the tokens they made (the same bytes objects as in
        the merges: a huge token is held once)."""
        self._idle("merges")
        cdef const char* base = <const char*>self.pool.data()
        cdef list names = []
        cdef int32_t s
        for s in range(<int32_t>self.tok_len.size()):
            if self.tok_len[s] <= SHORT:
                names.append(base[self.tok_head[s]:self.tok_head[s] + self.tok_len[s]])
            else:
                names.append(names[self.tok_left[s]] + names[self.tok_right[s]])
        cdef Py_ssize_t k, n = self.merge_a.size()
        start = min(max(start, 0), n)
        merges = [(names[self.merge_a[k]], names[self.merge_b[k]]) for k in range(start, n)]
        if with_tokens:
            return merges, [names[self.merge_c[k]] for k in range(start, n)]
        return merges

    def merge_counts(self):
        """The count of each merged pair when it was chosen, in merge order (list of int)."""
        self._idle("merge_counts")
        return [self.merge_count[k] for k in range(<Py_ssize_t>self.merge_count.size())]

    def pair_count(self, bytes left, bytes right):
        """The current count of the pair of symbols with these bytes (0 if either is unknown); for tests."""
        self._idle("pair_count")
        if self.finished or self.tok_len.size() == 0:
            raise RuntimeError("pair_count needs a built engine, before finish()")
        cdef int32_t a = self._lookup(left), b = self._lookup(right)
        if a < 0 or b < 0:
            return 0
        cdef int32_t pid = self._find_pair(a, b)
        return self.pcount[pid] if pid >= 0 else 0

    cdef int32_t _lookup(self, bytes data):
        cdef const uint8_t* p = <const uint8_t*><const char*>data
        cdef Py_ssize_t n = len(data)
        return self._find_symbol(rolling_hash(p, n), n, -1, -1, p)


cdef bint _merge_first(void* engine, HeapEntry x, HeapEntry y) noexcept nogil:
    """The heap's order (bpe_fast/_heap.pxd): the engine's _above."""
    return (<MergeEngine>engine)._above(x, y)


cdef void _scan_pairs_part(void* arg) noexcept nogil:
    """run_in_threads' function for MergeEngine._index_pairs (a PairScan)."""
    cdef PairScan* part = <PairScan*>arg
    (<MergeEngine>part.owner)._scan_pairs(part)


cdef void _lay_out_part(void* arg) noexcept nogil:
    """run_in_threads' function for MergeEngine._lay_out (a LayOut)."""
    cdef LayOut* part = <LayOut*>arg
    (<MergeEngine>part.owner)._lay_out_range(part)


cdef void _collect_part(void* arg) noexcept nogil:
    """run_in_threads' function for MergeEngine._rescan (a Collect)."""
    cdef Collect* part = <Collect*>arg
    (<MergeEngine>part.owner)._collect_range(part)
