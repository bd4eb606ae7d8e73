# cython: language_level=3
# run_in_threads: one function on several argument blocks at once, for a native loop that splits its work in
# ranges (PretokenCounter.arrays_with's lookups, MergeEngine's pair index). The threads are C++ ones, started and
# joined within the call: no Python object is touched in them, and the caller holds what they use.

cdef extern from *:
    """
    #include <thread>
    #include <vector>
    // fn(args + k * stride) for k = 0 .. n - 1, each but the first in a thread of its own, the first in the
    // calling thread; the ones no thread could be started for run in the calling thread too (nothing thrown).
    static inline void bpe_fast_in_threads(void (*fn)(void*), char* args, size_t stride, int n) {
        std::vector<std::thread> started;
        int k = 1;
        try {
            started.reserve(n > 1 ? n - 1 : 0);
            for (; k < n; k++)
                started.emplace_back(fn, (void*)(args + k * stride));
        } catch (...) {
        }
        fn(args);
        for (std::thread& t : started)
            t.join();
        for (; k < n; k++)
            fn(args + k * stride);
    }
    """
    void run_in_threads "bpe_fast_in_threads"(void (*fn)(void*) noexcept nogil, char* args, size_t stride,
                                               int n) noexcept nogil
