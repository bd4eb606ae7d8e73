# cython: language_level=3
# ReVec: a growable array of a trivially copyable T on malloc/realloc, for the native tables that grow to
# gigabytes (the merge engine's positions and pairs, the counting table's spans and bytes): growing a large one
# is an mremap, so the pages already touched are neither copied nor faulted in again, and the old block and the
# new one are never both in memory, where std::vector copies into fresh pages while the old ones still live.
# Declared noexcept, as the std::vector calls of the loops that use it are (push_or_end and the rest below):
# running out of memory ends the process.

from libcpp.vector cimport vector

cdef extern from *:
    """
    #include <cstdlib>
    #include <cstring>
    #include <cstdint>
    #include <new>
    #include <utility>
    #include <vector>
    #if defined(__linux__)
    #include <sys/mman.h>
    #endif
    // huge_pages: ask Linux to back the whole 2 MB pages of [p, p + bytes) with transparent huge pages (where
    // THP is "madvise", the default of Debian and Ubuntu; a no-op where it is "always" or "never", and off
    // Linux), as NumPy does for its large arrays. For a table read at random and never grown in place, given
    // before its pages are first written: one TLB entry covers 2 MB instead of 4 KB.
    static inline void huge_pages(void* p, size_t bytes) {
    #if defined(__linux__) && defined(MADV_HUGEPAGE)
        const uintptr_t H = (uintptr_t)1 << 21;
        uintptr_t lo = ((uintptr_t)p + H - 1) & ~(H - 1), hi = ((uintptr_t)p + bytes) & ~(H - 1);
        if (hi > lo) madvise((void*)lo, hi - lo, MADV_HUGEPAGE);
    #else
        (void)p; (void)bytes;
    #endif
    }
    // fill_huge: v becomes n copies of fill, in a new block marked for huge pages before it is written (the old
    // block freed). C++ noexcept: running out of memory ends the process (std::terminate), as ReVec's growing
    // does, where Cython's std::vector::reserve (except +) would return through Cython's unraisable path and
    // leave the caller with the old, smaller table.
    template <typename T> static inline void fill_huge(std::vector<T>& v, size_t n, const T& fill) noexcept {
        std::vector<T> fresh;
        fresh.reserve(n);
        huge_pages(fresh.data(), n * sizeof(T));
        fresh.assign(n, fill);
        v.swap(fresh);
    }
    // push_or_end, resize_or_end, assign_or_end, append_or_end: a std::vector grown inside a function Cython
    // runs as noexcept (the native loops), in C++ noexcept: running out of memory there ends the process
    // (std::terminate), as ReVec's growing and fill_huge do. Cython's own std::vector calls (except +) in such a
    // function would write the MemoryError as unraisable and return, the vector not grown and the caller's
    // tables wrong. (A function that can raise, except -1, grows its vectors with Cython's calls: MemoryError.)
    template <typename T, typename U> static inline void push_or_end(std::vector<T>& v, const U& x) noexcept {
        v.push_back(x);
    }
    template <typename T> static inline void resize_or_end(std::vector<T>& v, size_t n) noexcept { v.resize(n); }
    template <typename T, typename U> static inline void assign_or_end(std::vector<T>& v, size_t n, const U& x)
            noexcept {
        v.assign(n, x);
    }
    // refill_or_end: v becomes n copies of x, its old block freed before the new one is taken (for a table
    // put together again from elsewhere, its old contents not needed: assign() holds both at once)
    template <typename T, typename U> static inline void refill_or_end(std::vector<T>& v, size_t n, const U& x)
            noexcept {
        std::vector<T>().swap(v);
        v.assign(n, x);
    }
    template <typename T, typename U> static inline void append_or_end(std::vector<T>& v, const U* first,
                                                                       const U* last) noexcept {
        v.insert(v.end(), first, last);
    }
    template <typename T> struct ReVec {
        T* p = nullptr;
        size_t n = 0, cap = 0;
        ReVec() {}
        ~ReVec() { std::free(p); }
        ReVec(const ReVec&) = delete;
        ReVec& operator=(const ReVec&) = delete;
        T* data() { return p; }
        T* begin() { return p; }
        size_t size() const { return n; }
        size_t capacity() const { return cap; }
        T& operator[](size_t i) { return p[i]; }
        void reserve(size_t c) {
            if (c <= cap) return;
            T* q = static_cast<T*>(std::realloc(p, c * sizeof(T)));
            if (!q) throw std::bad_alloc();
            p = q;
            cap = c;
        }
        void resize(size_t m) {           // new elements are zero, as std::vector's value-initialised ones
            if (m > cap) reserve(m > 2 * n ? m : 2 * n);
            if (m > n) std::memset(static_cast<void*>(p + n), 0, (m - n) * sizeof(T));
            n = m;
        }
        void resize_unset(size_t m) {     // new elements not set: for a caller that writes every one of them
            if (m > cap) reserve(m);
            n = m;
        }
        void push_back(const T& v) {
            if (n == cap) reserve(cap ? 2 * cap : 64);
            p[n++] = v;
        }
        void release() { std::free(p); p = nullptr; n = cap = 0; }
        void swap(ReVec& o) { std::swap(p, o.p); std::swap(n, o.n); std::swap(cap, o.cap); }
        bool empty() const { return n == 0; }
        T& back() { return p[n - 1]; }
        void pop_back() { --n; }
        void shrink_to_fit() {
            if (n == 0) { release(); return; }
            T* q = static_cast<T*>(std::realloc(p, n * sizeof(T)));
            if (q) { p = q; cap = n; }
        }
    };
    """
    cdef cppclass ReVec[T]:
        T* data() noexcept nogil
        T* begin() noexcept nogil
        size_t size() noexcept nogil
        size_t capacity() noexcept nogil
        T& operator[](size_t) noexcept nogil
        void reserve(size_t) noexcept nogil
        void resize(size_t) noexcept nogil
        void resize_unset(size_t) noexcept nogil
        void push_back(const T&) noexcept nogil
        void release() noexcept nogil
        void swap(ReVec[T]&) noexcept nogil
        bint empty() noexcept nogil
        T& back() noexcept nogil
        void pop_back() noexcept nogil
        void shrink_to_fit() noexcept nogil
    void huge_pages(void* p, size_t bytes) noexcept nogil      # (see above; a hint: never fails)
    void fill_huge[T](vector[T]& v, size_t n, const T& fill) noexcept nogil     # (see above)
    void push_or_end[T, U](vector[T]& v, const U& x) noexcept nogil             # (see above)
    void resize_or_end[T](vector[T]& v, size_t n) noexcept nogil
    void assign_or_end[T, U](vector[T]& v, size_t n, const U& x) noexcept nogil
    void refill_or_end[T, U](vector[T]& v, size_t n, const U& x) noexcept nogil
    void append_or_end[T, U](vector[T]& v, const U* first, const U* last) noexcept nogil
