# distutils: language = c++
# distutils: extra_compile_args = -O3 -std=c++17
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The k-way merge of sorted runs of counts (see _runs.pxd for the format and a worked example): the runs read a
buffer at a time, their entries merged in key order, equal keys' counts summed, the result written as one run;
never a whole table in memory. The Python layer (spill.py) opens and names the files."""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libcpp.vector cimport vector

from bpe_fast._heap cimport HeapEntry, heap_make, heap_sift_down
from bpe_fast._runs cimport (RunReader, RunWriter, key_cmp_after, run_close, run_next, run_open, run_put, run_start,
                             run_stop, run_problem)


cdef extern from *:
    bint __builtin_add_overflow(int64_t a, int64_t b, int64_t* out) noexcept nogil
    bint __builtin_mul_overflow(int64_t a, int64_t b, int64_t* out) noexcept nogil


cdef inline bint _reader_first(void* ctx, HeapEntry x, HeapEntry y) noexcept nogil:
    """A HeapOrder over readers (ctx: the RunReader array; an entry's id is a reader's index): the smaller key
    first, equal keys the lower index first (a stable order)."""
    cdef RunReader* readers = <RunReader*>ctx
    cdef RunReader* i = &readers[x.id]
    cdef RunReader* j = &readers[y.id]
    if i.prefix != j.prefix:            # by their first 8 bytes' prefixes, most often, else by their bytes
        return i.prefix < j.prefix
    cdef int c = key_cmp_after(i.key, i.length, j.key, j.length, 8)
    return c < 0 or (c == 0 and x.id < y.id)


def merge_runs(list fds, int out_fd):
    """Merge the sorted runs open at the descriptors fds (each at its start) into one run written to out_fd (at its
    start). Returns (bad, problem, err, write_err, distinct, pretokens, pretoken_bytes, longest): bad is the
    index in fds of a run that is not well formed (problem: _runs.pxd's BPE_RUN_*, err its errno; see
    describe()) or -1; write_err the errno of writing out_fd or 0; then the merged run's entries, the sum of
    their counts, of count * length, and the longest key. A sum past int64 is bad = len(fds) (problem 0)."""
    cdef Py_ssize_t k, n = len(fds), live = 0, top
    cdef vector[int] fdv
    for fd in fds:
        fdv.push_back(fd)
    cdef vector[RunReader] readers
    cdef vector[HeapEntry] heap          # the readers not at their end, by their current key
    readers.resize(n)
    heap.resize(n + 1)
    cdef RunWriter writer
    cdef Py_ssize_t bad = -1
    cdef int got, problem = 0, err = 0, werr = 0
    cdef int64_t total, distinct = 0, pretokens = 0, pretoken_bytes = 0, longest = 0, product
    cdef vector[uint8_t] key
    cdef uint32_t length
    cdef uint64_t prefix
    cdef bint overflow = False
    with nogil:
        if run_open(&writer, out_fd) != 0:
            werr = 12                   # ENOMEM
        for k in range(n):
            if bad < 0 and werr == 0:
                if not run_start(&readers[k], fdv[k]):
                    bad = k
                    continue
                got = run_next(&readers[k])
                if got < 0:
                    bad = k
                elif got > 0:
                    heap[live].key = 0
                    heap[live].id = <int32_t>k
                    live += 1
        if bad < 0 and werr == 0:
            heap_make(heap.data(), live, _reader_first, readers.data())
        while bad < 0 and live > 0:
            top = heap[0].id
            length = readers[top].length
            prefix = readers[top].prefix
            key.assign(readers[top].key, readers[top].key + length)
            total = 0
            while live > 0:
                top = heap[0].id
                if readers[top].prefix != prefix or key_cmp_after(key.data(), length, readers[top].key,
                                                                  readers[top].length, 8) != 0:
                    break
                if __builtin_add_overflow(total, readers[top].count, &total):
                    overflow = True
                got = run_next(&readers[top])
                if got < 0:
                    bad = top
                    break
                if got == 0:
                    live -= 1
                    heap[0] = heap[live]
                if live > 0:
                    heap_sift_down(heap.data(), live, 0, _reader_first, readers.data())
            if bad >= 0:
                break
            run_put(&writer, key.data(), length, total)
            distinct += 1
            if (__builtin_add_overflow(pretokens, total, &pretokens)
                    or __builtin_mul_overflow(total, <int64_t>length, &product)
                    or __builtin_add_overflow(pretoken_bytes, product, &pretoken_bytes)):
                overflow = True
            if length > longest:
                longest = length
            if overflow:
                bad = n
                break
        if bad >= 0 and bad < n:
            problem = readers[bad].problem
            err = readers[bad].err
        for k in range(n):
            run_stop(&readers[k])
        if werr == 0:
            werr = run_close(&writer)
    return bad, problem, err, werr, distinct, pretokens, pretoken_bytes, longest


def describe(int problem, int err):
    """What a run's problem (merge_runs' problem and err) says: "is cut short", ..."""
    return run_problem(problem, err)

