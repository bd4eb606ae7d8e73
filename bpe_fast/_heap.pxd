# A binary heap of (key, id) entries in an array the caller owns (a std::vector, a ReVec), shared by the native
# modules: the merge engine's candidate pairs (_train: key = count, id = pair; the order looks at the pairs'
# bytes, hence an order function with a context) and the encoder's pairs of long pre-tokens (_encode: key =
# rank, id = start). `first(ctx, x, y)` says whether x comes out before y; it must be a strict order. Pass a
# cdef function of the module by name: these are inline, so the compiler specialises them for it and inlines
# it (no call a comparison; checked in _train's build).
#
# Pushing: append the entry, then heap_sift_up(heap, n - 1, ...) (n the new size). Popping: the top is
# heap[0]; heap_pop(heap, n, ...) moves the last entry to the top and sifts it down; then drop the last.
#
# Worked example, smallest key first: push 5, 3, 4 -> [3, 5, 4]; pop -> 3, the heap [4, 5].
from libc.stdint cimport int32_t, int64_t


cdef packed struct HeapEntry:       # 12 bytes, not 16: the merge engine's heap holds millions of them
    int64_t key
    int32_t id


ctypedef bint (*HeapOrder)(void* ctx, HeapEntry x, HeapEntry y) noexcept nogil


cdef inline bint entry_less(const HeapEntry& x, const HeapEntry& y) noexcept nogil:
    """(key, id) in increasing order: a comparison for std::sort."""
    return x.key < y.key or (x.key == y.key and x.id < y.id)


cdef inline bint lowest_first(void* ctx, HeapEntry x, HeapEntry y) noexcept nogil:
    """A HeapOrder: the smallest (key, id) first (ctx unused)."""
    return entry_less(x, y)


cdef inline void heap_sift_down(HeapEntry* heap, Py_ssize_t n, Py_ssize_t i, HeapOrder first,
                                void* ctx) noexcept nogil:
    """Move heap[i] down to its place among heap[0:n]."""
    cdef HeapEntry e = heap[i]
    cdef Py_ssize_t child
    while True:
        child = 2 * i + 1
        if child >= n:
            break
        if child + 1 < n and first(ctx, heap[child + 1], heap[child]):
            child += 1
        if not first(ctx, heap[child], e):
            break
        heap[i] = heap[child]
        i = child
    heap[i] = e


cdef inline void heap_sift_up(HeapEntry* heap, Py_ssize_t i, HeapOrder first, void* ctx) noexcept nogil:
    """Move heap[i] up to its place (after it was appended at i)."""
    cdef HeapEntry e = heap[i]
    cdef Py_ssize_t parent
    while i > 0:
        parent = (i - 1) // 2
        if not first(ctx, e, heap[parent]):
            break
        heap[i] = heap[parent]
        i = parent
    heap[i] = e


cdef inline void heap_make(HeapEntry* heap, Py_ssize_t n, HeapOrder first, void* ctx) noexcept nogil:
    """Order heap[0:n] as a heap."""
    cdef Py_ssize_t k = n // 2
    while k > 0:
        k -= 1
        heap_sift_down(heap, n, k, first, ctx)


cdef inline HeapEntry heap_pop(HeapEntry* heap, Py_ssize_t n, HeapOrder first, void* ctx) noexcept nogil:
    """The top of heap[0:n] (n >= 1); heap[0:n - 1] is then the rest, as a heap (the caller drops the last)."""
    cdef HeapEntry top = heap[0]
    heap[0] = heap[n - 1]
    if n > 2:
        heap_sift_down(heap, n - 1, 0, first, ctx)
    return top
