# Sorted runs of counted pre-tokens: what a counter over its memory budget writes (PretokenCounter.spill), what
# _runs.merge_runs adds up into one, and what MergeEngine.from_run lays out. Plain C++ (inline), shared by those
# modules; the Python layer opens, names and removes the files, this code only reads and writes file descriptors.
#
# A run file: a header of 24 bytes (the magic b"BPERUN1\n", then little-endian uint64 entries and uint64 key
# bytes), then its entries, each uint32 length, int64 count (> 0), then the key's bytes, in strictly increasing
# order of the keys' bytes (shorter first where one is the other's prefix: as Python compares bytes).
#
# Worked example: the run of {b"ab": 2, b"a": 5} is the header (2 entries, 3 key bytes), then
#     (1, 5, b"a"), (2, 2, b"ab")                   (b"a" < b"ab": a prefix first)
# and merging it with the run (1, 1, b"a"), (1, 4, b"b") gives (1, 6, b"a"), (2, 2, b"ab"), (1, 4, b"b"): equal
# keys summed, the others in order.
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t

cdef extern from *:
    """
    #include <errno.h>
    #include <stdint.h>
    #include <string.h>
    #include <unistd.h>
    #include <algorithm>
    #include <vector>

    #define BPE_RUN_HEADER 24
    #define BPE_RUN_RECORD 12
    #define BPE_RUN_BUFFER (1 << 20)
    #define BPE_RUN_MAX_KEY 0x7FFFFFFF
    static const char bpe_run_magic[8] = {'B', 'P', 'E', 'R', 'U', 'N', '1', '\\n'};

    // what a reader found wrong (RunReader.problem)
    enum { BPE_RUN_OK = 0, BPE_RUN_IO = 1, BPE_RUN_MAGIC = 2, BPE_RUN_TRUNCATED = 3, BPE_RUN_ORDER = 4,
           BPE_RUN_COUNT = 5, BPE_RUN_LENGTH = 6, BPE_RUN_TRAILING = 7, BPE_RUN_TOTALS = 8, BPE_RUN_MEMORY = 9 };

    // the first min(n, 8) bytes of a key as a big-endian number, zero-padded: keys whose prefixes differ are in
    // the order of their prefixes (equal prefixes: compare the keys)
    static inline uint64_t bpe_key_prefix(const uint8_t* p, uint32_t n) {
        uint8_t b[8] = {0};
        memcpy(b, p, n < 8 ? n : 8);
        uint64_t v = 0;
        for (int k = 0; k < 8; k++) v = (v << 8) | b[k];
        return v;
    }

    // two keys whose first min(la, lb, from) bytes are equal, compared from there 8 bytes at a time (no call to
    // memcmp: most keys are short, and the sort and the merge compare keys whose first 8 bytes are equal)
    static inline int bpe_key_cmp_after(const uint8_t* a, uint32_t la, const uint8_t* b, uint32_t lb, uint32_t from) {
        uint32_t m = la < lb ? la : lb, i = from < m ? from : m;
        for (; i + 8 <= m; i += 8) {
            uint64_t x, y;
            memcpy(&x, a + i, 8);
            memcpy(&y, b + i, 8);
            if (x != y) {
    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
                x = __builtin_bswap64(x);
                y = __builtin_bswap64(y);
    #endif
                return x < y ? -1 : 1;
            }
        }
        for (; i < m; i++) if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
        return la < lb ? -1 : (la > lb ? 1 : 0);
    }

    // keys in Python's bytes order: -1, 0, 1
    static inline int bpe_key_cmp(const uint8_t* a, uint32_t la, const uint8_t* b, uint32_t lb) {
        uint32_t m = la < lb ? la : lb;
        int c = m ? memcmp(a, b, m) : 0;
        if (c) return c < 0 ? -1 : 1;
        return la < lb ? -1 : (la > lb ? 1 : 0);
    }

    static inline int bpe_write_all(int fd, const uint8_t* p, size_t n) {
        while (n) {
            ssize_t k = write(fd, p, n);
            if (k < 0) { if (errno == EINTR) continue; return errno ? errno : EIO; }
            if (k == 0) return ENOSPC;
            p += k; n -= (size_t)k;
        }
        return 0;
    }

    struct BpeRunWriter {
        int fd;
        std::vector<uint8_t> buf;
        size_t used;
        uint64_t entries, key_bytes;
        int err;                    // the first errno met (then nothing more is written)
    };

    static inline void bpe_run_flush(BpeRunWriter* w) {
        if (!w->err && w->used) w->err = bpe_write_all(w->fd, w->buf.data(), w->used);
        w->used = 0;
    }

    static inline void bpe_run_raw(BpeRunWriter* w, const void* p, size_t n) {
        if (w->used + n > w->buf.size()) bpe_run_flush(w);
        if (n > w->buf.size()) { if (!w->err) w->err = bpe_write_all(w->fd, (const uint8_t*)p, n); return; }
        memcpy(w->buf.data() + w->used, p, n);
        w->used += n;
    }

    // a writer on fd, at its start (the header is written by bpe_run_close); 0 or ENOMEM
    static inline int bpe_run_open(BpeRunWriter* w, int fd) {
        w->fd = fd; w->used = 0; w->entries = 0; w->key_bytes = 0; w->err = 0;
        try { w->buf.resize(BPE_RUN_BUFFER); } catch (...) { return ENOMEM; }
        uint8_t header[BPE_RUN_HEADER] = {0};
        bpe_run_raw(w, header, BPE_RUN_HEADER);
        return 0;
    }

    // one entry, the keys given in increasing order (the writer does not check it: the readers do)
    static inline void bpe_run_put(BpeRunWriter* w, const uint8_t* key, uint32_t length, int64_t count) {
        uint8_t head[BPE_RUN_RECORD];
        memcpy(head, &length, 4);
        memcpy(head + 4, &count, 8);
        bpe_run_raw(w, head, BPE_RUN_RECORD);
        if (length) bpe_run_raw(w, key, length);
        w->entries += 1;
        w->key_bytes += length;
    }

    // the rest written and the header filled in; returns 0 or the first errno met
    static inline int bpe_run_close(BpeRunWriter* w) {
        bpe_run_flush(w);
        uint8_t header[BPE_RUN_HEADER];
        memcpy(header, bpe_run_magic, 8);
        memcpy(header + 8, &w->entries, 8);
        memcpy(header + 16, &w->key_bytes, 8);
        while (!w->err) {
            ssize_t k = pwrite(w->fd, header, BPE_RUN_HEADER, 0);
            if (k == BPE_RUN_HEADER) break;
            if (k < 0 && errno == EINTR) continue;
            w->err = k < 0 ? (errno ? errno : EIO) : ENOSPC;
        }
        std::vector<uint8_t>().swap(w->buf);
        return w->err;
    }

    struct BpeRunReader {
        int fd;
        std::vector<uint8_t> buf;
        size_t pos, end;
        bool eof;
        uint64_t entries, key_bytes, seen_entries, seen_bytes;
        std::vector<uint8_t> prev;  // the previous key (each key must be greater)
        const uint8_t* key;         // the current entry (valid until the next bpe_run_next)
        uint64_t prefix;            // its first 8 bytes as a big-endian number, zero-padded (bpe_key_prefix)
        uint32_t length;
        int64_t count;
        int problem;                // BPE_RUN_*: what was wrong (once not OK, the reader stays so)
        int err;                    // the errno of an I/O problem
    };

    // more bytes so that `need` are buffered from pos (fewer only at the end of the file); false on an error
    static inline bool bpe_run_fill(BpeRunReader* r, size_t need) {
        if (r->end - r->pos >= need || r->eof) return true;
        if (r->pos) {
            memmove(r->buf.data(), r->buf.data() + r->pos, r->end - r->pos);
            r->end -= r->pos; r->pos = 0;
        }
        if (need > r->buf.size()) {
            try { r->buf.resize(need); } catch (...) { r->problem = BPE_RUN_MEMORY; return false; }
        }
        while (r->end < need && !r->eof) {
            ssize_t k = read(r->fd, r->buf.data() + r->end, r->buf.size() - r->end);
            if (k < 0) {
                if (errno == EINTR) continue;
                r->problem = BPE_RUN_IO; r->err = errno ? errno : EIO; return false;
            }
            if (k == 0) r->eof = true;
            r->end += (size_t)k;
        }
        return true;
    }

    // a reader of the run on fd (at its start): reads and checks the header; false (problem set) on an error
    static inline bool bpe_run_start(BpeRunReader* r, int fd) {
        r->fd = fd; r->pos = r->end = 0; r->eof = false; r->problem = BPE_RUN_OK; r->err = 0;
        r->seen_entries = r->seen_bytes = 0; r->key = nullptr; r->length = 0; r->count = 0;
        try { r->buf.resize(BPE_RUN_BUFFER); r->prev.reserve(64); } catch (...) { r->problem = BPE_RUN_MEMORY; return false; }
        if (!bpe_run_fill(r, BPE_RUN_HEADER)) return false;
        if (r->end < BPE_RUN_HEADER) { r->problem = BPE_RUN_TRUNCATED; return false; }
        if (memcmp(r->buf.data(), bpe_run_magic, 8)) { r->problem = BPE_RUN_MAGIC; return false; }
        memcpy(&r->entries, r->buf.data() + 8, 8);
        memcpy(&r->key_bytes, r->buf.data() + 16, 8);
        r->pos = BPE_RUN_HEADER;
        return true;
    }

    // the next entry into key, length, count: 1, or 0 at the run's end, or -1 (problem set) when it is not a
    // well-formed run: cut short, an entry past the header's count, a count <= 0, keys not increasing, bytes
    // after the last entry, totals not the header's
    static inline int bpe_run_next(BpeRunReader* r) {
        if (r->problem) return -1;
        if (r->key) {                       // the key just read is the one the next must pass
            try { r->prev.assign(r->key, r->key + r->length); } catch (...) { r->problem = BPE_RUN_MEMORY; return -1; }
        }
        if (r->seen_entries == r->entries) {
            if (!bpe_run_fill(r, 1)) return -1;
            if (r->end > r->pos) { r->problem = BPE_RUN_TRAILING; return -1; }
            if (r->seen_bytes != r->key_bytes) { r->problem = BPE_RUN_TOTALS; return -1; }
            r->key = nullptr;
            return 0;
        }
        if (!bpe_run_fill(r, BPE_RUN_RECORD)) return -1;
        if (r->end - r->pos < BPE_RUN_RECORD) { r->problem = BPE_RUN_TRUNCATED; return -1; }
        uint32_t length; int64_t count;
        memcpy(&length, r->buf.data() + r->pos, 4);
        memcpy(&count, r->buf.data() + r->pos + 4, 8);
        if (length > BPE_RUN_MAX_KEY) { r->problem = BPE_RUN_LENGTH; return -1; }
        if (count <= 0) { r->problem = BPE_RUN_COUNT; return -1; }
        if (!bpe_run_fill(r, BPE_RUN_RECORD + (size_t)length)) return -1;
        if (r->end - r->pos < BPE_RUN_RECORD + (size_t)length) { r->problem = BPE_RUN_TRUNCATED; return -1; }
        const uint8_t* key = r->buf.data() + r->pos + BPE_RUN_RECORD;
        if (r->seen_entries && bpe_key_cmp(r->prev.data(), (uint32_t)r->prev.size(), key, length) >= 0) {
            r->problem = BPE_RUN_ORDER; return -1;
        }
        r->key = key; r->length = length; r->count = count; r->prefix = bpe_key_prefix(key, length);
        r->pos += BPE_RUN_RECORD + (size_t)length;
        r->seen_entries += 1;
        r->seen_bytes += length;
        return 1;
    }

    static inline void bpe_run_stop(BpeRunReader* r) {
        std::vector<uint8_t>().swap(r->buf);
        std::vector<uint8_t>().swap(r->prev);
    }

    // the reader at the first entry of the run on fd, read again from its start (lseek): as bpe_run_next (1, 0 at
    // an empty run's end, -1 with problem set); a descriptor that cannot seek (a pipe) is BPE_RUN_IO
    static inline int bpe_run_rewind(BpeRunReader* r, int fd) {
        if (lseek(fd, 0, SEEK_SET) != 0) {
            r->problem = BPE_RUN_IO; r->err = errno ? errno : EIO;
            return -1;
        }
        if (!bpe_run_start(r, fd)) return -1;
        return bpe_run_next(r);
    }

    // the spans' order by their keys' bytes, as keys[0:n] (16 bytes each: the caller's room, a counter's hash
    // table, which a table at most half full always has): each span's first 12 bytes (zero-padded, as big-endian
    // numbers) and index, sorted by those and, where they are equal, by the keys' bytes from the 13th. Sorting
    // these, not the 40-byte spans, moves less and compares integers; most keys differ in their first 12 bytes,
    // so the sort seldom reads the keys themselves (at random: on web-like text the first try, 8 bytes, spent
    // most of the sort's time in those reads).
    struct BpeSortKey { uint64_t prefix; uint32_t next; uint32_t index; };
    template <class S> static inline void bpe_sort_span_keys(BpeSortKey* keys, const S* spans, size_t n,
                                                             const uint8_t* arena) {
        for (size_t k = 0; k < n; k++) {
            const S& x = spans[k];
    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            keys[k].prefix = __builtin_bswap64(x.head);     // (load_head's: little-endian, zero-padded)
    #else
            keys[k].prefix = bpe_key_prefix(arena + x.start, (uint32_t)x.length);
    #endif
            uint32_t next = 0;
            for (int64_t j = 8; j < 12; j++) next = (next << 8) | (j < x.length ? arena[x.start + j] : 0);
            keys[k].next = next;
            keys[k].index = (uint32_t)k;
        }
        std::sort(keys, keys + n, [spans, arena](const BpeSortKey& a, const BpeSortKey& b) {
            if (a.prefix != b.prefix) return a.prefix < b.prefix;
            if (a.next != b.next) return a.next < b.next;
            const S& x = spans[a.index];
            const S& y = spans[b.index];
            return bpe_key_cmp_after(arena + x.start, (uint32_t)x.length, arena + y.start, (uint32_t)y.length, 12) < 0;
        });
    }
    """
    int BPE_RUN_OK, BPE_RUN_IO, BPE_RUN_MAGIC, BPE_RUN_TRUNCATED, BPE_RUN_ORDER, BPE_RUN_COUNT, BPE_RUN_LENGTH
    int BPE_RUN_TRAILING, BPE_RUN_TOTALS, BPE_RUN_MEMORY
    int BPE_RUN_MAX_KEY
    int key_cmp "bpe_key_cmp" (const uint8_t* a, uint32_t la, const uint8_t* b, uint32_t lb) noexcept nogil
    int key_cmp_after "bpe_key_cmp_after" (const uint8_t* a, uint32_t la, const uint8_t* b, uint32_t lb,
                                           uint32_t start) noexcept nogil

    cdef cppclass RunWriter "BpeRunWriter":
        uint64_t entries, key_bytes
        int err
    int run_open "bpe_run_open" (RunWriter* w, int fd) noexcept nogil
    void run_put "bpe_run_put" (RunWriter* w, const uint8_t* key, uint32_t length, int64_t count) noexcept nogil
    int run_close "bpe_run_close" (RunWriter* w) noexcept nogil

    cdef cppclass RunReader "BpeRunReader":
        const uint8_t* key
        uint64_t prefix
        uint32_t length
        int64_t count
        uint64_t entries, key_bytes
        int problem, err
    bint run_start "bpe_run_start" (RunReader* r, int fd) noexcept nogil
    int run_next "bpe_run_next" (RunReader* r) noexcept nogil
    void run_stop "bpe_run_stop" (RunReader* r) noexcept nogil
    int run_rewind "bpe_run_rewind" (RunReader* r, int fd) noexcept nogil
    cdef struct SortKey "BpeSortKey":
        uint64_t prefix
        uint32_t next
        uint32_t index
    void sort_span_keys "bpe_sort_span_keys" [S](SortKey* keys, const S* spans, size_t n,
                                                 const uint8_t* arena) noexcept nogil


cdef inline str run_problem(int problem, int err):
    """What a RunReader's problem says, for an error message that names the file."""
    import os
    if problem == BPE_RUN_IO:
        return f"cannot be read ({os.strerror(err)})"
    return {BPE_RUN_MAGIC: "is not a run of counts (its first bytes are not b'BPERUN1\\n')",
            BPE_RUN_TRUNCATED: "is cut short",
            BPE_RUN_ORDER: "has its keys out of order (each must be greater than the one before)",
            BPE_RUN_COUNT: "has a count of 0 or less",
            BPE_RUN_LENGTH: "has a key longer than 2 GiB",
            BPE_RUN_TRAILING: "has bytes after its last entry",
            BPE_RUN_TOTALS: "does not hold the key bytes its header says",
            BPE_RUN_MEMORY: "needs more memory than there is to read"}.get(problem, f"is corrupt (problem {problem})")
