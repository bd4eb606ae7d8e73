# cython: language_level=3
# What the native modules' threads share: run_in_threads, one function on several argument blocks at once, for a
# native loop that splits its work in ranges (PretokenCounter.arrays_with's lookups, MergeEngine's layout and
# pair index; C++ threads started and joined within the call: no Python object is touched in them, and the
# caller holds what they use), and the atomic operations of values several threads write (encode_batch's
# BatchJob claims groups and publishes their states; arrays_with's threads add counts).

from libc.stdint cimport int64_t

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


cdef extern from *:
    """
    #if defined(_MSC_VER)
    #include <intrin.h>
    static inline Py_ssize_t bpe_fast_claim(Py_ssize_t* p) {
    #if defined(_WIN64)
        return (Py_ssize_t)_InterlockedExchangeAdd64((volatile __int64*)p, 1);
    #else
        return (Py_ssize_t)_InterlockedExchangeAdd((volatile long*)p, 1);
    #endif
    }
    static inline int bpe_fast_load(int* p) { return _InterlockedOr((volatile long*)p, 0); }
    static inline void bpe_fast_store(int* p, int v) { _InterlockedExchange((volatile long*)p, v); }
    static inline void bpe_fast_atomic_add_int64(int64_t* p, int64_t n) {
        _InterlockedExchangeAdd64((volatile __int64*)p, n);
    }
    #else
    static inline Py_ssize_t bpe_fast_claim(Py_ssize_t* p) { return __atomic_fetch_add(p, 1, __ATOMIC_RELAXED); }
    static inline int bpe_fast_load(int* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
    static inline void bpe_fast_store(int* p, int v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
    static inline void bpe_fast_atomic_add_int64(int64_t* p, int64_t n) { __atomic_fetch_add(p, n, __ATOMIC_RELAXED); }
    #endif
    """
    Py_ssize_t claim_next "bpe_fast_claim"(Py_ssize_t* p) noexcept nogil      # returns *p, then adds 1
    int atomic_load "bpe_fast_load"(int* p) noexcept nogil
    void atomic_store "bpe_fast_store"(int* p, int v) noexcept nogil
    void atomic_add_int64 "bpe_fast_atomic_add_int64"(int64_t* p, int64_t n) noexcept nogil
