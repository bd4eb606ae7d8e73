# distutils: language = c++
# distutils: extra_compile_args = -O3 -std=c++17
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The native BPE encoder and decoder behind bpe_fast.Tokenizer.

Merging follows tiktoken's ``byte_pair_merge``: a pre-token starts as its single bytes; while two adjacent
parts concatenate to a ranked token, the pair whose token has the lowest rank is joined (on a tie, the
leftmost). Ranks are given by the caller as a list of tokens in rank order, so the rule is a lookup in a
table keyed by the pair of part ids, (a << 32) | b -> (rank, id of a+b), holding every way of writing each
ranked token as two parts, or only the one way that rule ever joins, found by merging each token's bytes
(BPETables' made_by_merging: from tiktoken's ranks, GPT-2's files, a tokenizer.json, a saved folder's cache).

Whole pre-tokens are looked up first in a table keyed by their bytes: every ranked token that merges to
itself is there for good, and the ids of other pre-tokens are added as they are merged, up to a bound
(the cache), after which the cached ones are dropped together. Before it, a small direct-mapped table holds
the last short pre-token (8 bytes or less, one id) seen in each of its slots: the frequent words, in L1/L2.
The encoding and merging loops touch no Python objects (only the list-making wrappers and
BPETables.decode_list convert to and from lists).

What never changes (the rank table, the permanent entries, the bytes of every id) is a BPETables, shared
read-only; the cache, the small table and the scratch space are a BPECore's, one per thread at a time
(bpe_fast.Tokenizer keeps a pool of them). So the loops run without the GIL on texts of NOGIL_BYTES or
more, and threads encode in parallel.

For the built-in patterns one call does the whole text (BPECore.encode_text, StreamEncoder): its UTF-8 is cut
at the special tokens (bpe_fast._scan.SpecialMatcher), each piece is scanned by the native pre-tokenizer
(bpe_fast._scan.scan_block) a block of pre-tokens at a time, and each pre-token is looked up or merged into
the id buffer. For other patterns the Python layer (bpe_fast/tokenizer.py) pre-tokenizes with `regex` and
hands the boundaries to BPECore.encode_pretokens. The Python layer checks arguments.
"""
cimport cython
from cpython cimport array
from cpython.buffer cimport PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_CheckExact, PyDict_GetItemWithError
from cpython.list cimport PyList_CheckExact, PyList_GET_ITEM, PyList_GET_SIZE, PyList_New, PyList_SET_ITEM
from cpython.long cimport PyLong_AsLongLongAndOverflow, PyLong_Check
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_XDECREF
from cpython.unicode cimport PyUnicode_AsUTF8String, PyUnicode_CheckExact, PyUnicode_DecodeUTF8, PyUnicode_Find
from libc.stdint cimport INT32_MAX, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcmp, memcpy, memmove, memset
from libc.stdlib cimport free, malloc
from libcpp.vector cimport vector

from bpe_fast._hashing cimport (EMPTY_KEY, HASH_SEED, hash_bytes, seed_hash_bytes, load_head, mix64, next_slot,
                                pair_key, pair_slot, table_shift, table_size, tail_equal)
from bpe_fast._threads cimport atomic_load, atomic_store, claim_next
from bpe_fast._revec cimport assign_or_end, huge_pages, push_or_end, resize_or_end
from bpe_fast._scan cimport (ScanTables, SpecialMatcher, UnicodeTables, known_kind, scan_block,
                             scan_block_final, utf8_first_error, utf8_measure)

import array
import os

from bpe_fast._numpy import np     # (NumPy imported when first used: see there)

hash_seed = seed_hash_bytes()     # the key of this module's hash_bytes (see _hashing.pxd)

cdef extern from *:
    """
    // Append [a, b) to an id vector, with vector::insert and what it calls inlined here (flatten). Left to
    // itself the compiler inlined insert at the module's three calls, until _merge_pretoken grew by one branch:
    // then it made them all call one out-of-line copy, 2.6% more instructions in the encoding loop (whose cached
    // pieces of several ids are appended this way too). Inlining this wrapper as well (always_inline) undid the
    // flattening: 4.6% more.
    #include <vector>
    #include <cstdint>
    #if defined(__GNUC__) || defined(__clang__)
    #define BPE_FAST_FLATTEN __attribute__((flatten))
    #else
    #define BPE_FAST_FLATTEN
    #endif
    static inline BPE_FAST_FLATTEN
    void bpe_fast_append_ids(std::vector<int32_t>* v, const int32_t* a, const int32_t* b) {
        v->insert(v->end(), a, b);
    }
    """
    void append_ids "bpe_fast_append_ids" (vector[int32_t]* v, const int32_t* a, const int32_t* b) except + nogil

cdef extern from *:
    """
    #include <Python.h>
    #include <cstdint>
    // list[k] = objects[ids[k]] for k < n, each with a new reference: list is new (its items NULL), objects a
    // list. One refcount write per item (a Cython object variable would make three). Returns -1, or the first
    // k whose id is not an index of objects (list's items from k on are left NULL, which its dealloc skips).
    static Py_ssize_t bpe_fast_fill_list(PyObject* list, const int32_t* ids, Py_ssize_t n, PyObject* objects) {
        PyObject** dst = PySequence_Fast_ITEMS(list);
        PyObject** src = PySequence_Fast_ITEMS(objects);
        size_t n_objects = (size_t)PyList_GET_SIZE(objects);
        for (Py_ssize_t k = 0; k < n; k++) {
            if ((size_t)(int64_t)ids[k] >= n_objects)     // a negative id too
                return k;
            PyObject* o = src[ids[k]];
            Py_INCREF(o);
            dst[k] = o;
        }
        return -1;
    }
    // objects[ids[k]] gains a reference for each k < n.
    static void bpe_fast_add_each_reference(PyObject* objects, const int32_t* ids, Py_ssize_t n) {
        PyObject** src = PySequence_Fast_ITEMS(objects);
        for (Py_ssize_t k = 0; k < n; k++)
            Py_INCREF(src[ids[k]]);
    }
    // objects[ids[k]] loses a reference for each k < n (one that add_each_reference or add_references gave;
    // objects itself holds one more, so none is freed).
    static void bpe_fast_drop_references(PyObject* objects, const int32_t* ids, Py_ssize_t n) {
        PyObject** src = PySequence_Fast_ITEMS(objects);
        for (Py_ssize_t k = 0; k < n; k++)
            Py_DECREF(src[ids[k]]);
    }
    // list[k] = objects[ids[k]] for k < n: list is new (its items NULL), objects a list holding every id in ids,
    // whose references the caller has added (add_references, add_each_reference).
    static void bpe_fast_fill_list_owned(PyObject* list, const int32_t* ids, Py_ssize_t n, PyObject* objects) {
        PyObject** dst = PySequence_Fast_ITEMS(list);
        PyObject** src = PySequence_Fast_ITEMS(objects);
        for (Py_ssize_t k = 0; k < n; k++)
            dst[k] = src[ids[k]];
    }
    // objects[distinct[k]] gains counts[k] references, for k < n.
    static void bpe_fast_add_references(PyObject* objects, const int32_t* distinct, Py_ssize_t n,
                                        const Py_ssize_t* counts) {
        PyObject** src = PySequence_Fast_ITEMS(objects);
        for (Py_ssize_t k = 0; k < n; k++) {
            PyObject* o = src[distinct[k]];
            Py_SET_REFCNT(o, Py_REFCNT(o) + counts[k]);
        }
    }
    // ids[k] = list[k] for k < n, each a known id (known[id] for id < n_known), and *total the sum of their
    // lengths (offs[id + 1] - offs[id]); no reference is taken (the caller holds the GIL: the list stays as it is).
    // Returns n, or the index of the first item that is not an int (*bad = 1) or not a known id (*bad = 2).
    static Py_ssize_t bpe_fast_read_ids(PyObject* list, Py_ssize_t n, int32_t* ids, const int64_t* offs,
                                        const uint8_t* known, int64_t n_known, int64_t* total, int* bad) {
        PyObject** src = PySequence_Fast_ITEMS(list);
        int64_t sum = 0;
        for (Py_ssize_t k = 0; k < n; k++) {
            PyObject* o = src[k];
            int overflow = 0;
            long long v;
            if (!PyLong_Check(o)) {
                *bad = 1;
                return k;
            }
            v = PyLong_AsLongLongAndOverflow(o, &overflow);
            if (overflow || v < 0 || v >= n_known || !known[v]) {
                *bad = 2;
                return k;
            }
            ids[k] = (int32_t)v;
            sum += offs[v + 1] - offs[v];
        }
        *total = sum;
        return n;
    }
    """
    Py_ssize_t fill_list "bpe_fast_fill_list"(list result, const int32_t* ids, Py_ssize_t n, list objects)
    Py_ssize_t read_ids "bpe_fast_read_ids"(list ids, Py_ssize_t n, int32_t* out, const int64_t* offs,
                                            const uint8_t* known, int64_t n_known, int64_t* total, int* bad)
    void add_each_reference "bpe_fast_add_each_reference"(list objects, const int32_t* ids, Py_ssize_t n)
    void drop_references "bpe_fast_drop_references"(list objects, const int32_t* ids, Py_ssize_t n)
    void fill_list_owned "bpe_fast_fill_list_owned"(list result, const int32_t* ids, Py_ssize_t n, list objects)
    void add_references "bpe_fast_add_references"(list objects, const int32_t* distinct, Py_ssize_t n,
                                                  const Py_ssize_t* counts)

cdef extern from *:
    """
    #if defined(__SSE2__) || defined(_M_X64) || (defined(_M_IX86_FP) && _M_IX86_FP >= 2)
    #define BPE_FAST_SSE2 1
    #include <emmintrin.h>
    #endif
    // If the 16 code units s[0:16] are all ASCII, writes them to out as bytes and returns 1; else 0, out
    // untouched. SSE2 (every x86-64) where there is SSE2, else a plain loop.
    template <typename T>
    static inline int bpe_fast_ascii16(const T* s, uint8_t* out) {
    #if defined(BPE_FAST_SSE2)
        if (sizeof(T) == 1) {
            __m128i a = _mm_loadu_si128((const __m128i*)s);
            if (_mm_movemask_epi8(a))
                return 0;
            _mm_storeu_si128((__m128i*)out, a);
            return 1;
        }
        if (sizeof(T) == 2) {
            __m128i a = _mm_loadu_si128((const __m128i*)s), b = _mm_loadu_si128((const __m128i*)s + 1);
            __m128i high = _mm_and_si128(_mm_or_si128(a, b), _mm_set1_epi16((short)0xFF80));
            if (_mm_movemask_epi8(_mm_cmpeq_epi16(high, _mm_setzero_si128())) != 0xFFFF)
                return 0;
            _mm_storeu_si128((__m128i*)out, _mm_packus_epi16(a, b));
            return 1;
        }
        {
            __m128i a = _mm_loadu_si128((const __m128i*)s), b = _mm_loadu_si128((const __m128i*)s + 1);
            __m128i c = _mm_loadu_si128((const __m128i*)s + 2), d = _mm_loadu_si128((const __m128i*)s + 3);
            __m128i any = _mm_or_si128(_mm_or_si128(a, b), _mm_or_si128(c, d));
            __m128i high = _mm_and_si128(any, _mm_set1_epi32((int)0xFFFFFF80));
            if (_mm_movemask_epi8(_mm_cmpeq_epi32(high, _mm_setzero_si128())) != 0xFFFF)
                return 0;
            __m128i ab = _mm_packs_epi32(a, b), cd = _mm_packs_epi32(c, d);   // every unit < 0x80: no saturation
            _mm_storeu_si128((__m128i*)out, _mm_packus_epi16(ab, cd));
            return 1;
        }
    #else
        T any = 0;
        for (int j = 0; j < 16; j++)
            any |= s[j];
        if (any >= 0x80)
            return 0;
        for (int j = 0; j < 16; j++)
            out[j] = (uint8_t)s[j];
        return 1;
    #endif
    }
    // The UTF-8 of the n code units s[0:n] of a str (PyUnicode kind 1, 2 or 4) written to out, which has room
    // for 2, 3 or 4 bytes a unit; returns the bytes written. A surrogate pair (a high one, then a low one)
    // becomes the code point it encodes and a lone surrogate U+FFFD: what encode does to such text
    // (a round trip through UTF-16, as tiktoken does). Strict (for text that must be valid UTF-8 as it is):
    // any surrogate stops it, returning -1.
    template <bool Strict, typename T>
    static Py_ssize_t bpe_fast_units_to_utf8(const T* s, Py_ssize_t n, uint8_t* out) {
        uint8_t* o = out;
        Py_ssize_t i = 0;
        while (i < n) {
            // 16 ASCII units at once, tried from an ASCII unit only (text of other scripts pays nothing)
            if (s[i] < 0x80 && i + 16 <= n && bpe_fast_ascii16(s + i, o)) {
                o += 16;
                i += 16;
                continue;
            }
            uint32_t c = s[i++];
            if (c < 0x80) {
                *o++ = (uint8_t)c;
            } else if (c < 0x800) {
                *o++ = (uint8_t)(0xC0 | (c >> 6));
                *o++ = (uint8_t)(0x80 | (c & 0x3F));
            } else if (c >= 0xD800 && c <= 0xDFFF) {
                if (Strict)
                    return -1;
                if (c <= 0xDBFF && i < n && s[i] >= 0xDC00 && s[i] <= 0xDFFF) {
                    c = 0x10000 + ((c - 0xD800) << 10) + ((uint32_t)s[i++] - 0xDC00);
                    *o++ = (uint8_t)(0xF0 | (c >> 18));
                    *o++ = (uint8_t)(0x80 | ((c >> 12) & 0x3F));
                    *o++ = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
                    *o++ = (uint8_t)(0x80 | (c & 0x3F));
                } else {
                    *o++ = 0xEF; *o++ = 0xBF; *o++ = 0xBD;
                }
            } else if (c < 0x10000) {
                *o++ = (uint8_t)(0xE0 | (c >> 12));
                *o++ = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
                *o++ = (uint8_t)(0x80 | (c & 0x3F));
            } else {
                *o++ = (uint8_t)(0xF0 | (c >> 18));
                *o++ = (uint8_t)(0x80 | ((c >> 12) & 0x3F));
                *o++ = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
                *o++ = (uint8_t)(0x80 | (c & 0x3F));
            }
        }
        return o - out;
    }
    // kind 0: an ASCII str (its bytes are its UTF-8); else PyUnicode_KIND. Strict: -1 if the str holds a
    // surrogate (see units_to_utf8).
    template <bool Strict>
    static Py_ssize_t bpe_fast_any_to_utf8(int kind, const void* data, Py_ssize_t n, uint8_t* out) {
        switch (kind) {
            case 0: memcpy(out, data, (size_t)n); return n;
            case 1: return bpe_fast_units_to_utf8<Strict>((const uint8_t*)data, n, out);
            case 2: return bpe_fast_units_to_utf8<Strict>((const uint16_t*)data, n, out);
            default: return bpe_fast_units_to_utf8<Strict>((const uint32_t*)data, n, out);
        }
    }
    static Py_ssize_t bpe_fast_str_to_utf8(int kind, const void* data, Py_ssize_t n, uint8_t* out) {
        return bpe_fast_any_to_utf8<false>(kind, data, n, out);
    }
    static Py_ssize_t bpe_fast_str_to_utf8_strict(int kind, const void* data, Py_ssize_t n, uint8_t* out) {
        return bpe_fast_any_to_utf8<true>(kind, data, n, out);
    }
    // The other way: the code points of the valid UTF-8 s[0:n] written to out as code units of type T, which
    // holds every one of them (a str's kind: utf8_measure tells which). ASCII 16 bytes at a time.
    template <typename T>
    static void bpe_fast_utf8_to_units(const uint8_t* s, Py_ssize_t n, T* out) {
        Py_ssize_t i = 0;
        while (i < n) {
            if (i + 16 <= n) {
                uint64_t a, b;
                memcpy(&a, s + i, 8);
                memcpy(&b, s + i + 8, 8);
                if (((a | b) & 0x8080808080808080ULL) == 0) {
                    for (int j = 0; j < 16; j++)
                        out[j] = (T)s[i + j];
                    out += 16;
                    i += 16;
                    continue;
                }
            }
            uint32_t c = s[i];
            if (c < 0x80) {
                i += 1;
            } else if (c < 0xE0) {
                c = ((c & 0x1F) << 6) | (s[i + 1] & 0x3F);
                i += 2;
            } else if (c < 0xF0) {
                c = ((c & 0x0F) << 12) | ((s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F);
                i += 3;
            } else {
                c = ((c & 0x07) << 18) | ((s[i + 1] & 0x3F) << 12) | ((s[i + 2] & 0x3F) << 6) | (s[i + 3] & 0x3F);
                i += 4;
            }
            *out++ = (T)c;
        }
    }
    // ascii: s is all ASCII (kind 1), copied as it is.
    static void bpe_fast_utf8_to_str(int kind, int ascii, const uint8_t* s, Py_ssize_t n, void* out) {
        if (ascii) {
            memcpy(out, s, (size_t)n);
            return;
        }
        switch (kind) {
            case 1: bpe_fast_utf8_to_units(s, n, (uint8_t*)out); break;
            case 2: bpe_fast_utf8_to_units(s, n, (uint16_t*)out); break;
            default: bpe_fast_utf8_to_units(s, n, (uint32_t*)out);
        }
    }
    """
    Py_ssize_t str_to_utf8 "bpe_fast_str_to_utf8"(int kind, const void* data, Py_ssize_t n, uint8_t* out) noexcept nogil
    Py_ssize_t str_to_utf8_strict "bpe_fast_str_to_utf8_strict"(int kind, const void* data, Py_ssize_t n,
                                                                uint8_t* out) noexcept nogil
    void utf8_to_str "bpe_fast_utf8_to_str"(int kind, int ascii, const uint8_t* s, Py_ssize_t n,
                                            void* out) noexcept nogil

cdef extern from *:
    """
    /* Every str is ready from Python 3.12 on, where PyUnicode_READY is deprecated (a no-op). */
    #if PY_VERSION_HEX >= 0x030C0000
    #define bpe_fast_unicode_ready(o) 0
    #else
    #define bpe_fast_unicode_ready(o) PyUnicode_READY(o)
    #endif
    """
    int bpe_fast_unicode_ready(object o) except -1


cdef extern from "Python.h":
    bint PyUnicode_IS_ASCII(object o)
    bint PyUnicode_Check(object o)
    int PyUnicode_KIND(object o)
    void* PyUnicode_DATA(object o)
    Py_ssize_t PyUnicode_GET_LENGTH(object o)
    const char* PyUnicode_AsUTF8AndSize(object o, Py_ssize_t* size) except NULL
    PyObject** PySequence_Fast_ITEMS(object o)
    object PyUnicode_New(Py_ssize_t size, Py_UCS4 maxchar)

cdef enum:
    SMALL_PIECE = 128           # pieces up to this many bytes merge with arrays on the stack (quadratic scan)
    MAX_CACHED_PIECE = 256      # longer pre-tokens are not cached
    SCRATCH_KEPT = 1 << 16      # an encoder's scratch (_merge_pretoken's) larger than this, for a longer pre-token, is
                                # given back when the call ends (_trim_scratch): it stayed as long as the longest
                                # pre-token ever merged, 4 bytes a byte, for the encoder's life (given back in
                                # _merge_pretoken, the encode loop took 2.6% more instructions, by code layout alone)
    SCAN_BLOCK = 256            # pre-token ends scanned at a time (on the stack) before they are encoded
    PENDING_GROWTH = 2          # StreamEncoder looks for a cut again once the pending text has doubled
    HOT_SLOTS = 4096            # the small direct-mapped table of frequent short pre-tokens (64 KB)
    SPLIT_AT_LENGTHS = 256      # made_by_merging: a longer ranked token is first split where two earlier tokens meet
    SPLIT_TRIES = 64            # ... at most this many splits asked about (then, and for no split, its bytes merge)
    SPLIT_LENGTHS = 4096        # ... at most this many token lengths looked at
    NEIGHBOUR_CUTS = 12         # ... after the cuts its neighbours' splits suggest (_neighbour_cuts)
    SPAN_LOOKS = 4              # ... each neighbour looked for among this many tokens with its span's signature
    DEFAULT_CACHE_ENTRIES = 1 << 16     # an encoder's cache of pre-tokens, to begin with (BPECore, EncoderPool)
    NOGIL_BYTES = 1 << 14       # texts at least this long are encoded without the GIL (other threads run)
    NOGIL_IDS = 1 << 16         # id arrays at least this long are copied or decoded without the GIL
    DECODE_OWN_BYTES = 64       # utf8_text writes the str of UTF-8 this long or longer itself
    SMALL_LIST = 1024           # BPETables._list reads this many ids or fewer into a buffer on the stack,
    SMALL_TEXT = 4096           # ... and decodes a text this long or shorter from one
    LIST_BYTES = 0              # what BPETables._list answers: the bytes, the text, the bytes and offsets
    LIST_TEXT = 1
    LIST_OFFSETS = 2
    GATHER_COPY = 16            # _gather copies tokens this long or shorter as this many bytes
    RESERVE_BYTES = 1 << 20     # _encode_bytes gives a text this long room for ids first (see there)
    MAX_RESERVE_IDS = 1 << 28   # ... for at most this many (1 GB; past it the vector grows as it fills)

# the longest pre-token the whole-piece table looks up (a ranked token longer is merged, never looked up whole)
MAX_WHOLE_PIECE = MAX_CACHED_PIECE
# a list of ids this long decodes to about NOGIL_BYTES of text or more (4 bytes a token), written without the GIL:
# decode_batch's threads gain only from such lists (Tokenizer.decodes_in_parallel)
DECODE_PARALLEL_IDS = NOGIL_BYTES // 4
# decode_list_text decodes from buffers on the stack up to these many ids and bytes (for tests at the limits)
DECODE_STACK_IDS = SMALL_LIST
DECODE_STACK_BYTES = SMALL_TEXT

cdef int32_t NO_RANK = 0x7FFFFFFF


cdef struct PairSlot:
    uint64_t key                # pair_key(a, b), or EMPTY_KEY
    int32_t rank
    int32_t merged


cdef struct HotSlot:
    uint64_t prefix             # the pre-token's bytes (8 or fewer), zero-padded
    int32_t key_len             # 0: empty
    int32_t value               # its single id


# The pre-token tables are open-addressing tables as in bpe_fast/_hashing.pxd, but their slots hold more than a
# Slot on purpose: the key's first 8 bytes and a single id are in the slot, so a hit on a short pre-token reads
# one slot and no key bytes.
cdef extern from *:
    void prefetch "__builtin_prefetch" (const void*) noexcept nogil


cdef enum:
    PAIR_LOOKAHEAD = 4      # tokens ahead whose table slots _build_pairs asks for


cdef struct PieceSlot:
    uint64_t hash               # hash_bytes of the key
    uint64_t prefix             # the first 8 bytes of the key, zero-padded (so keys of 8 bytes or less are
                                # compared without reading the key arena)
    uint32_t key_off            # into the key arena (bytes 8.. of the key are compared there)
    int32_t key_len
    int32_t n_ids               # 0: empty slot
    int32_t value               # n_ids == 1: the id; else the offset of the ids in cached_ids


cdef inline bint key_matches(const PieceSlot* slot, uint64_t h, uint64_t prefix, const uint8_t* keys,
                             const uint8_t* p, Py_ssize_t n) noexcept nogil:
    if slot.hash != h or slot.key_len != n or slot.prefix != prefix:
        return False
    return tail_equal(keys + slot.key_off, p, n)


cdef inline uint64_t hash_key(const uint8_t* p, Py_ssize_t n, const uint8_t* end, uint64_t* prefix) noexcept nogil:
    """hash_bytes of p[0:n] (p + n <= end); sets prefix to its first 8 bytes, zero-padded (read once for both)."""
    prefix[0] = load_head(p, n, end)
    return hash_bytes(p, n, prefix[0], end)


cdef list _id_list(const int32_t* ids, Py_ssize_t n, list id_objects):
    """ids[0:n] as a new list of int; id_objects[i] is the int i (shared, so no int is allocated here)."""
    result = PyList_New(n)
    huge_pages(PySequence_Fast_ITEMS(result), n * sizeof(PyObject*))     # (a large list's fresh pages: see
    cdef Py_ssize_t bad = fill_list(result, ids, n, id_objects)           # BPECore._encode_bytes)
    if bad >= 0:
        raise ValueError(f"id {ids[bad]} has no int object")
    return result


cdef object _bytes_pointer(data, const uint8_t** s, Py_ssize_t* n):
    """Points s, n at the bytes of data (bytes, or any contiguous bytes-like object); returns what keeps them
    alive (a bytes object's own bytes: no memoryview, which costs a few hundred nanoseconds a call)."""
    cdef const uint8_t[::1] view
    if type(data) is bytes:
        s[0] = <const uint8_t*>PyBytes_AS_STRING(data)
        n[0] = PyBytes_GET_SIZE(data)
        return data
    view = data
    n[0] = view.shape[0]
    s[0] = &view[0] if view.shape[0] else NULL
    return view


cdef inline Py_ssize_t _utf8_room(int kind, Py_ssize_t n) noexcept:
    """The most bytes str_to_utf8 writes for n code units of a str of this kind (0: ASCII)."""
    return n * (1 if kind == 0 else 4 if kind == 4 else kind + 1)


cdef enum:
    UTF8_PAD = 16       # zero bytes _utf8_holder puts after a text's UTF-8 (as a bytes object's one NUL, and more)


cdef inline object _utf8_holder(str text, const uint8_t** data, Py_ssize_t* n):
    """Point data/n at the UTF-8 of text and return the object that owns those bytes: text itself when it is
    ASCII (its own buffer is the UTF-8, nothing is copied), else a new bytes with room for the longest UTF-8
    the text could have, written by str_to_utf8_strict (runs of ASCII 16 units at a time; CPython's encoder
    takes a unit at a time; pages past what is written are never touched). Text from a str without lone
    surrogates is valid UTF-8 by construction, so it is not validated again; lone surrogates raise
    UnicodeEncodeError, CPython's (the caller replaces them, as tiktoken does)."""
    cdef object holder
    cdef int kind
    cdef Py_ssize_t units, room, written
    cdef uint8_t* out
    if PyUnicode_CheckExact(text) and PyUnicode_IS_ASCII(text):
        data[0] = <const uint8_t*>PyUnicode_AsUTF8AndSize(text, n)
        return text
    bpe_fast_unicode_ready(text)
    units = PyUnicode_GET_LENGTH(text)
    kind = 0 if PyUnicode_IS_ASCII(text) else PyUnicode_KIND(text)
    room = _utf8_room(kind, units)
    holder = PyBytes_FromStringAndSize(NULL, room + UTF8_PAD)
    out = <uint8_t*>PyBytes_AS_STRING(holder)
    huge_pages(out, room)
    written = str_to_utf8_strict(kind, PyUnicode_DATA(text), units, out)
    if written < 0:                                 # a lone surrogate: CPython's error
        PyUnicode_AsUTF8String(text)
        raise AssertionError("str_to_utf8_strict found a surrogate that UTF-8 encodes")
    memset(out + written, 0, UTF8_PAD)
    data[0] = out
    n[0] = written
    return holder


@cython.final
cdef class Segmenter:
    """How a text is cut before merging, for the native path: Segmenter(tables, kind, specials, ids) with the
    scanner's Unicode tables (a bpe_fast._scan.UnicodeTables, kept for the segmenter's life; the package's,
    one a Unicode reading, are bpe_fast.pretokenize.native_tables(unicode)), the pattern's kind for the native scanner (2: GPT2_PATTERN,
    4: GPT4_PATTERN, 5: O200K_PATTERN, see bpe_fast/_scan.pxd) and the special tokens, UTF-8 ordered longest
    first, with their ids, and which of them take the white space before them (lstrip: one flag a token, or
    empty: none; see SpecialMatcher)."""

    cdef readonly int kind
    cdef UnicodeTables tables               # what t points into
    cdef const ScanTables* t
    cdef SpecialMatcher specials            # None without special tokens
    cdef vector[int32_t] special_ids

    def __cinit__(self, UnicodeTables tables not None, int kind, specials=(), ids=(), lstrip=()):
        specials = list(specials)
        ids = list(ids)
        if not known_kind(kind):
            raise ValueError(f"unknown pattern kind {kind}")
        if len(specials) != len(ids):
            raise ValueError("one id per special token")
        self.kind = kind
        self.tables = tables
        self.t = &tables.t
        self.specials = SpecialMatcher(specials, lstrip) if specials else None
        for i in ids:
            self.special_ids.push_back(i)


cdef class IdBuffer:
    """A growing int32 buffer of ids, one per encode call (so threads sharing a tokenizer don't mix)."""

    cdef vector[int32_t] ids

    def push(self, int32_t token_id):
        """Append one id (a special token's)."""
        self.ids.push_back(token_id)

    def __len__(self):
        return self.ids.size()

    def take_list(self, list id_objects):
        """The ids as a new list of int; the buffer is emptied. id_objects[i] is the int i (shared, so no int
        is allocated here)."""
        result = _id_list(self.ids.data(), self.ids.size(), id_objects)
        self.ids.clear()
        return result

    def take(self, dtype=None):
        """The ids as a new 1-D NumPy array of `dtype`, a native-order integer type of 2 (unsigned), 4 or 8 bytes
        (the caller has checked that the ids fit; None: int32); the buffer is emptied, even on an error. Long
        buffers are copied without the GIL."""
        cdef Py_ssize_t n = self.ids.size()
        cdef int width
        cdef void* dst
        cdef Py_buffer view
        global _DTYPE, _INT32, _UINT32, _INT64, _UINT64
        try:
            if _DTYPE is None:      # the first call (NumPy is imported when first used); _DTYPE set last: a
                # thread that sees it set sees the others set
                _INT32, _UINT32, _INT64, _UINT64 = (np.dtype(t) for t in (np.int32, np.uint32, np.int64, np.uint64))
                _DTYPE = np.dtype
            dt = dtype if isinstance(dtype, _DTYPE) else np.dtype(np.int32 if dtype is None else dtype)
            if dt is _INT32 or dt is _UINT32:       # (the usual ones, NumPy's own instances: the rule below
                width = 4                           # takes ~100 ns)
            elif dt is _INT64 or dt is _UINT64:
                width = 8
            elif dt.kind in "iu" and dt.isnative and (dt.itemsize in (4, 8) or (dt.itemsize, dt.kind) == (2, "u")):
                width = dt.itemsize
            else:
                raise ValueError(f"unsupported dtype {dt}")
            arr = np.empty(n, dt)
            if n:
                PyObject_GetBuffer(arr, &view, PyBUF_WRITABLE)      # (arr.ctypes.data took a microsecond)
                try:
                    dst = view.buf
                    if n >= NOGIL_IDS:
                        with nogil:
                            _convert_ids(self.ids.data(), n, width, dst)
                    else:
                        _convert_ids(self.ids.data(), n, width, dst)
                finally:
                    PyBuffer_Release(&view)
            return arr
        finally:
            self.ids.clear()


cdef array.array _INT32_ARRAY = array.array("i")     # (BPETables.splits')
# IdBuffer.take's: numpy.dtype and its usual instances, set by its first call
cdef object _DTYPE = None, _INT32 = None, _UINT32 = None, _INT64 = None, _UINT64 = None


cdef void _convert_ids(const int32_t* src, Py_ssize_t n, int width, void* dst) noexcept nogil:
    """dst[0:n] = src[0:n] as integers of `width` bytes (ids are >= 0, so signed and unsigned are the same bits)."""
    cdef Py_ssize_t k
    cdef uint16_t* d16
    cdef int64_t* d64
    if width == 2:
        d16 = <uint16_t*>dst
        for k in range(n):
            d16[k] = <uint16_t>src[k]
    elif width == 4:
        memcpy(dst, src, n * sizeof(int32_t))
    else:
        d64 = <int64_t*>dst
        for k in range(n):
            d64[k] = src[k]


ctypedef fused TokenId:
    int32_t
    int64_t


cdef void _gather(const uint8_t* pool, Py_ssize_t pool_size, const int64_t* offs, const TokenId* ids, Py_ssize_t n,
                  char* dst, const char* dst_end) noexcept nogil:
    """The bytes of ids[0:n] (all known) joined into dst[:dst_end - dst], which holds them exactly. A token of at
    most GATHER_COPY bytes is copied as GATHER_COPY bytes (one fixed-size move, where memcpy of its length is a
    call: most tokens are a few bytes) when the pool has them and dst has room; the bytes past the token are
    written over by the next one's."""
    cdef Py_ssize_t k
    cdef int64_t i, start, length
    for k in range(n):
        i = ids[k]
        start = offs[i]
        length = offs[i + 1] - start
        if length <= GATHER_COPY and start + GATHER_COPY <= pool_size and dst + GATHER_COPY <= dst_end:
            memcpy(dst, pool + start, GATHER_COPY)
        else:
            memcpy(dst, pool + start, length)
        dst += length


cdef struct RankedPair:
    int32_t rank                # NO_RANK: the two bytes are no token
    int32_t merged


cdef struct Ranks:
    int32_t byte_ids[256]           # id of each single byte, -1 if the vocabulary lacks it
    const PairSlot* pairs           # pair_key(a, b) -> rank and id of a+b, open addressing; owned by BPETables
    uint64_t pair_mask
    int pair_shift
    const RankedPair* two           # two[(b1 << 8) | b2]: what pairs gives for the ids of bytes b1, b2 (a dense
                                    # 512 KB table: a piece's first look-ups, one a byte, stay in the cache)


cdef inline int32_t pair_rank(const Ranks* r, int32_t a, int32_t b, int32_t* merged) noexcept nogil:
    """The rank of joining parts a and b (NO_RANK if they don't join); sets merged to the joined id."""
    cdef uint64_t key = pair_key(a, b)
    cdef uint64_t i = pair_slot(key, r.pair_shift)
    cdef const PairSlot* slots = r.pairs
    while True:
        if slots[i].key == key:
            merged[0] = slots[i].merged
            return slots[i].rank
        if slots[i].key == EMPTY_KEY:
            return NO_RANK
        i = next_slot(i, r.pair_mask)


cdef int _no_token_for_byte(uint8_t b) except -1 with gil:
    """Raise the error for a byte the vocabulary lacks (out of line: the encoding loops stay small)."""
    raise ValueError(f"byte 0x{b:02x} has no token in the vocabulary")


cdef int _piece_too_long(Py_ssize_t n) except -1 with gil:
    raise ValueError(f"a pre-token of {n} bytes: the encoder merges pre-tokens of less than 2**31 bytes")


cdef Py_ssize_t merge_piece(const Ranks* r, const uint8_t* p, Py_ssize_t n, int32_t* ids) except -1 nogil:
    """Merge the pre-token p[0:n] into ids[0:count]; returns count. ids must hold n entries."""
    cdef Py_ssize_t i
    if n > INT32_MAX:
        return _piece_too_long(n)       # (merge_large keeps positions in 32 bits)
    for i in range(n):
        ids[i] = r.byte_ids[p[i]]
        if ids[i] < 0:
            return _no_token_for_byte(p[i])
    if n <= SMALL_PIECE:
        return merge_small(r, p, ids, n)
    return merge_large(r, p, ids, n)


cdef Py_ssize_t merge_small(const Ranks* r, const uint8_t* p, int32_t* ids, Py_ssize_t m) noexcept nogil:
    """tiktoken's loop on the bytes p[0:m] (ids[i]: the id of byte p[i]): find the lowest-ranked adjacent
    pair (leftmost on ties), join it, repeat. The pairs of two bytes come from r.two; the two pairs a join
    changes are asked of the pair table at once (both slots prefetched before either is read)."""
    cdef int32_t ranks[SMALL_PIECE]     # ranks[i]: rank of joining parts i and i+1
    cdef int32_t merged[SMALL_PIECE]    # merged[i]: the id they join into
    cdef Py_ssize_t i, best_i
    cdef int32_t best
    cdef const RankedPair* two
    for i in range(m - 1):
        two = &r.two[(<Py_ssize_t>p[i] << 8) | p[i + 1]]
        ranks[i] = two.rank
        merged[i] = two.merged
    while m > 1:
        best = NO_RANK
        best_i = -1
        for i in range(m - 1):
            if ranks[i] < best:
                best = ranks[i]
                best_i = i
        if best_i < 0:
            break
        i = best_i
        ids[i] = merged[i]
        # part i + 1 is gone: shift the parts after it, and the pairs after pair i + 1, one to the left
        memmove(&ids[i + 1], &ids[i + 2], (m - i - 2) * sizeof(int32_t))
        if m - i - 3 > 0:
            memmove(&ranks[i + 1], &ranks[i + 2], (m - i - 3) * sizeof(int32_t))
            memmove(&merged[i + 1], &merged[i + 2], (m - i - 3) * sizeof(int32_t))
        m -= 1
        if i > 0:
            prefetch(&r.pairs[pair_slot(pair_key(ids[i - 1], ids[i]), r.pair_shift)])
        if i < m - 1:
            prefetch(&r.pairs[pair_slot(pair_key(ids[i], ids[i + 1]), r.pair_shift)])
        if i > 0:
            ranks[i - 1] = pair_rank(r, ids[i - 1], ids[i], &merged[i - 1])
        if i < m - 1:
            ranks[i] = pair_rank(r, ids[i], ids[i + 1], &merged[i])
    return m


cdef extern from *:
    """
    #include <algorithm>
    // merge_large's heaps: (rank << 32 | start) or (rank << 32) complemented, in a max-heap of plain integers,
    // so the lowest is on top and each comparison is one integer compare (std's heap, which never throws here)
    static inline void bpe_fast_heap_push(uint64_t* first, size_t n) { std::push_heap(first, first + n); }
    static inline void bpe_fast_heap_pop(uint64_t* first, size_t n) { std::pop_heap(first, first + n); }
    static inline void bpe_fast_heap_make(uint64_t* first, size_t n) { std::make_heap(first, first + n); }
    static inline void bpe_fast_sort_starts(int32_t* first, size_t n) { std::sort(first, first + n); }
    """
    void heap_push "bpe_fast_heap_push" (uint64_t* first, size_t n) noexcept nogil
    void heap_pop "bpe_fast_heap_pop" (uint64_t* first, size_t n) noexcept nogil
    void heap_make "bpe_fast_heap_make" (uint64_t* first, size_t n) noexcept nogil
    void sort_starts "bpe_fast_sort_starts" (int32_t* first, size_t n) noexcept nogil


cdef struct RankGroup:
    int32_t rank                # the rank (-1: an empty slot of the table)
    int32_t head                # the first of its waiting pairs (RankQueue.start's index), -1 when none waits
    int32_t tail                # the last


cdef struct RankQueue:
    # merge_large's candidate pairs by rank: each rank with pairs waiting has a group (a list, in the order
    # they were added), found by rank in an open-addressing table, and sits once in a heap of ranks
    vector[RankGroup] groups
    Py_ssize_t used             # groups' slots taken
    vector[int32_t] start       # a waiting pair (the index of RankGroup's head and tail): its left part's start
    vector[int32_t] next        # ... and the next pair of its rank's group, -1 at its end
    int32_t free                # the first of the entries taken (linked by next), to be used again; -1: none
    vector[uint64_t] ranks      # the ranks with pairs waiting, lowest on top (complemented rank << 32)


cdef inline Py_ssize_t _group_slot(const vector[RankGroup]& groups, int32_t rank) noexcept nogil:
    """The slot of rank in the table, or the empty slot where it would go."""
    cdef uint64_t mask = groups.size() - 1, i = mix64(<uint64_t><uint32_t>rank) & mask
    while groups[i].rank >= 0 and groups[i].rank != rank:
        i = next_slot(i, mask)
    return <Py_ssize_t>i


cdef int _queue_init(RankQueue* q, Py_ssize_t pairs) except -1 nogil:
    cdef RankGroup empty
    empty.rank = empty.head = empty.tail = -1
    q.groups.assign(table_size(min(pairs, 256)), empty)  # grown when half full (a run of one character has
                                                        # a few ranks in millions of pairs)
    q.used = 0
    q.free = -1
    q.start.reserve(pairs)
    q.next.reserve(pairs)
    return 0


cdef int _queue_grow(RankQueue* q) except -1 nogil:
    """Twice the table's slots, every group moved to its new slot."""
    cdef vector[RankGroup] old
    cdef RankGroup empty
    cdef Py_ssize_t k
    empty.rank = empty.head = empty.tail = -1
    old.swap(q.groups)
    q.groups.assign(2 * old.size(), empty)
    for k in range(<Py_ssize_t>old.size()):
        if old[k].rank >= 0:
            q.groups[_group_slot(q.groups, old[k].rank)] = old[k]
    return 0


cdef inline int _queue_add(RankQueue* q, int32_t rank, int32_t start) except -1 nogil:
    """Put the pair at start (rank >= 0) at the end of its rank's group; the rank joins the heap when its group
    had nothing waiting."""
    cdef Py_ssize_t g = _group_slot(q.groups, rank)
    cdef int32_t node = q.free
    if node >= 0:
        q.free = q.next[node]
        q.start[node] = start
        q.next[node] = -1
    else:
        node = <int32_t>q.start.size()
        q.start.push_back(start)
        q.next.push_back(-1)
    if q.groups[g].rank < 0:
        if 2 * (q.used + 1) > <Py_ssize_t>q.groups.size():
            _queue_grow(q)
            g = _group_slot(q.groups, rank)
        q.groups[g].rank = rank
        q.groups[g].head = -1
        q.used += 1
    if q.groups[g].head < 0:
        q.groups[g].head = node
        q.ranks.push_back(~(<uint64_t><uint32_t>rank << 32))
        heap_push(q.ranks.data(), q.ranks.size())
    else:
        q.next[q.groups[g].tail] = node
    q.groups[g].tail = node
    return 0


cdef int32_t _queue_take(RankQueue* q, vector[int32_t]& starts) except -1 nogil:
    """Take the lowest rank with pairs waiting (the queue is not empty): its pairs' starts into `starts`, in
    increasing order; returns the rank."""
    cdef int32_t rank = <int32_t>((~q.ranks[0]) >> 32)
    cdef Py_ssize_t g, k
    cdef int32_t node
    heap_pop(q.ranks.data(), q.ranks.size())
    q.ranks.pop_back()
    g = _group_slot(q.groups, rank)
    starts.clear()
    node = q.groups[g].head
    while node >= 0:
        starts.push_back(q.start[node])
        node = q.next[node]
    q.next[q.groups[g].tail] = q.free         # the group's entries are free again
    q.free = q.groups[g].head
    q.groups[g].head = -1
    for k in range(1, <Py_ssize_t>starts.size()):
        if starts[k] < starts[k - 1]:
            sort_starts(starts.data(), starts.size())
            break
    return rank


cdef struct Part:
    int32_t next                # the next part's start, -1 for the last
    int32_t prev                # the previous part's start, -1 for the first
    int32_t rank                # the rank of the pair this part begins (NO_RANK: none)
    int32_t joined              # the id that pair joins into


cdef inline uint64_t _pair_entry(int32_t rank, int32_t start) noexcept nogil:
    """A heap entry for the pair at `start` with `rank` (both >= 0): the greatest is the lowest (rank, start)."""
    return ~((<uint64_t><uint32_t>rank << 32) | <uint32_t>start)


cdef inline int _push_pair(vector[uint64_t]& heap, int32_t rank, int32_t start) except -1 nogil:
    heap.push_back(_pair_entry(rank, start))
    heap_push(heap.data(), heap.size())
    return 0


cdef inline int32_t _join(const Ranks* r, Part* pt, int32_t* ids, int32_t left) noexcept nogil:
    """Join the pair at `left` (still there, pt[left].rank its rank): the part after it is gone, and the pairs
    the joined part begins and ends (pt[left] and pt[before]) get their ranks and ids from the pair table (both
    slots fetched before either is read). Returns the part before (-1: none)."""
    cdef int32_t right = pt[left].next
    cdef int32_t after = pt[right].next
    cdef int32_t before = pt[left].prev
    cdef int32_t merged = 0
    ids[left] = pt[left].joined
    ids[right] = -1                     # gone
    pt[left].next = after
    if after >= 0:
        pt[after].prev = left
        prefetch(&r.pairs[pair_slot(pair_key(ids[left], ids[after]), r.pair_shift)])
    if before >= 0:
        prefetch(&r.pairs[pair_slot(pair_key(ids[before], ids[left]), r.pair_shift)])
    pt[left].rank = NO_RANK
    if after >= 0:
        pt[left].rank = pair_rank(r, ids[left], ids[after], &merged)
        pt[left].joined = merged
    if before >= 0:
        pt[before].rank = pair_rank(r, ids[before], ids[left], &merged)
        pt[before].joined = merged
    return before


cdef enum:
    REPEAT_SLOTS = 256          # merge_large: the direct-mapped table of recent ranks that tells repeats ...
    REPEAT_SAMPLE = 512         # ... among this many pairs spread over a piece


cdef Py_ssize_t merge_large(const Ranks* r, const uint8_t* p, int32_t* ids, Py_ssize_t n) except -1 nogil:
    """merge_small's result for the bytes p[0:n] (ids[i]: the id of byte p[i]) in O(n log n): parts in a linked
    list by start byte (Part: each keeps the rank and the joined id of the pair it begins now, set whenever that
    pair changes, so a waiting pair is joined only if its part is still there with that rank, without asking
    the pair table again). The first pairs come from r.two. The candidate pairs wait in one of two queues,
    chosen by how often REPEAT_SAMPLE pairs spread over the piece repeat a rank (a run of one character, a few
    letters: most; text: few): repeats go to _merge_by_groups, where each rank's pairs are joined together; the rest to a
    heap of (rank, start) (_merge_by_heap), where a group of one would cost a table look-up more."""
    cdef vector[Part] parts
    cdef int32_t seen[REPEAT_SLOTS]
    cdef Part* pt
    cdef Py_ssize_t i, k, m, samples, pairs = 0, sampled = 0, repeats = 0
    cdef uint64_t step
    cdef int32_t rank
    cdef const RankedPair* two
    parts.resize(n)
    pt = parts.data()
    memset(seen, 0xff, sizeof(seen))
    for i in range(n):
        pt[i].next = <int32_t>(i + 1) if i + 1 < n else -1
        pt[i].prev = <int32_t>(i - 1)
        pt[i].rank = NO_RANK
    for i in range(n - 1):
        two = &r.two[(<Py_ssize_t>p[i] << 8) | p[i + 1]]
        if two.rank != NO_RANK:
            pt[i].rank = two.rank
            pt[i].joined = two.merged
            pairs += 1
    samples = min(n - 1, REPEAT_SAMPLE)
    step = ((<uint64_t>(n - 1)) << 16) // <uint64_t>samples     # pairs spread over the piece (16 bits of fraction)
    for k in range(samples):
        rank = pt[(<uint64_t>k * step) >> 16].rank
        if rank != NO_RANK:
            sampled += 1
            m = mix64(<uint64_t><uint32_t>rank) & (REPEAT_SLOTS - 1)
            repeats += seen[m] == rank
            seen[m] = rank
    if 2 * repeats < sampled or _merge_by_groups(r, pt, ids, n) == 0:
        _merge_by_heap(r, pt, ids, n, pairs)
    m = 0
    for i in range(n):
        if ids[i] >= 0:
            ids[m] = ids[i]
            m += 1
    return m


cdef int _merge_by_heap(const Ranks* r, Part* pt, int32_t* ids, Py_ssize_t n, Py_ssize_t pairs) except -1 nogil:
    """merge_large's joins with the candidate pairs in a heap ordered by (rank, start of the left part), from
    the parts as they are (some may be joined already: _merge_by_groups stopped); every join pushes the new
    pairs, so the true minimum is always in the heap."""
    cdef vector[uint64_t] heap               # (rank, start), lowest first (_pair_entry)
    cdef uint64_t top
    cdef Py_ssize_t i
    cdef int32_t rank, left, before
    heap.reserve(pairs)
    for i in range(n - 1):
        if ids[i] >= 0 and pt[i].rank != NO_RANK:
            heap.push_back(_pair_entry(pt[i].rank, <int32_t>i))
    heap_make(heap.data(), heap.size())
    while not heap.empty():
        top = ~heap[0]
        heap_pop(heap.data(), heap.size())
        heap.pop_back()
        rank = <int32_t>(top >> 32)
        left = <int32_t><uint32_t>top
        if ids[left] < 0 or pt[left].rank != rank:
            continue                            # stale: the pair changed since it was pushed
        before = _join(r, pt, ids, left)
        if pt[left].rank != NO_RANK:
            _push_pair(heap, pt[left].rank, left)
        if before >= 0 and pt[before].rank != NO_RANK:
            _push_pair(heap, pt[before].rank, before)
    return 0


cdef int _merge_by_groups(const Ranks* r, Part* pt, int32_t* ids, Py_ssize_t n) except -1 nogil:
    """merge_large's joins with the candidate pairs grouped by rank (RankQueue), the lowest rank's pairs joined
    left to right. A join makes pairs of higher rank only (their tokens are longer), so the pairs of one rank
    are all waiting when its turn comes. A join that makes a pair of lower or equal rank (a vocabulary whose
    ranks do not follow its merges: "aa" 1000 and "aaa" 300) stops it there, the joins so far those of the
    lowest (rank, start) as in tiktoken: returns 0, and _merge_by_heap goes on from the parts as they are
    (putting the rest of the group back instead would be quadratic: in "aaaa...", every join of "aa" does it).
    Returns 1 when no pair is left to join. (Every function here that allocates passes a MemoryError up.)"""
    cdef vector[int32_t] starts
    cdef RankQueue q
    cdef Py_ssize_t i, k
    cdef int32_t rank, left, before
    _queue_init(&q, n)
    for i in range(n - 1):
        if pt[i].rank != NO_RANK:
            _queue_add(&q, pt[i].rank, <int32_t>i)
    while not q.ranks.empty():
        rank = _queue_take(&q, starts)
        for k in range(<Py_ssize_t>starts.size()):
            left = starts[k]
            if ids[left] < 0 or pt[left].rank != rank:
                continue                        # stale: the pair changed since it was added
            before = _join(r, pt, ids, left)
            if pt[left].rank <= rank or (before >= 0 and pt[before].rank <= rank):
                return 0                        # (NO_RANK is above every rank)
            if pt[left].rank != NO_RANK:
                _queue_add(&q, pt[left].rank, left)
            if before >= 0 and pt[before].rank != NO_RANK:
                _queue_add(&q, pt[before].rank, before)
    return 1


cdef inline void _take_rank(vector[int32_t]& rank_of, int32_t token, int32_t rank) noexcept nogil:
    """rank_of[token] = rank, or -3 (no rank: never taken for a part) when the id already has one."""
    if rank_of[token] == -2:
        rank_of[token] = rank
    else:
        rank_of[token] = -3


cdef inline uint64_t _span_signature(const uint8_t* p, Py_ssize_t m) noexcept nogil:
    """A hash of p[0:m]'s length and its first and last 8 bytes (m >= 1): equal spans have equal signatures, at
    a cost that does not grow with m (unequal spans may share one: a candidate, checked by its user)."""
    cdef uint64_t head = 0, tail = 0
    if m >= 8:
        memcpy(&head, p, 8)
        memcpy(&tail, p + m - 8, 8)
    else:
        memcpy(&head, p, m)
    return mix64(mix64(mix64(<uint64_t>m ^ HASH_SEED) + head) + tail)


cdef inline Py_ssize_t _signature_slot(const vector[uint64_t]& keys, const vector[int32_t]& heads,
                                       uint64_t sig) noexcept nogil:
    """The slot of signature sig in the table (keys[i], heads[i]: its signature and the last token with it; a
    head of -1 is an empty slot), or the empty slot where it would go."""
    cdef uint64_t mask = keys.size() - 1, i = sig & mask
    while heads[i] >= 0 and keys[i] != sig:
        i = next_slot(i, mask)
    return <Py_ssize_t>i


cdef inline Py_ssize_t _length_slot(const vector[int64_t]& slots, int64_t length) noexcept nogil:
    """The slot of `length` in the open-addressing set `slots` (-1: empty), or the empty slot where it would go."""
    cdef uint64_t mask = slots.size() - 1, i = mix64(<uint64_t>length) & mask
    while slots[i] >= 0 and slots[i] != length:
        i = next_slot(i, mask)
    return <Py_ssize_t>i


cdef inline bint _length_known(const vector[int64_t]& slots, int64_t length) noexcept nogil:
    return slots[_length_slot(slots, length)] == length


cdef inline void _add_length(vector[int64_t]& slots, vector[int64_t]& lengths, int64_t length) noexcept nogil:
    """Put `length` in the set `slots` and the list `lengths`, if it is not there yet."""
    cdef Py_ssize_t i = _length_slot(slots, length)
    if slots[i] != length:
        slots[i] = length
        push_or_end(lengths, length)


cdef inline bint _spine(const int32_t* rank, const int32_t* split, int32_t top, vector[int32_t]& out) noexcept nogil:
    """out = top, split[its rank], split[that one's rank], ... down to a byte (rank -1): one edge of top's split
    tree (split: the ranked tokens' left or right parts). False when it ends at an id that is neither."""
    out.clear()
    push_or_end(out, top)
    while rank[top] >= 0:
        top = split[rank[top]]
        push_or_end(out, top)
    return rank[top] == -1


cdef inline Py_ssize_t _part_length(const vector[int32_t]& rank_of, const int64_t[::1] offs,
                                    int32_t part) noexcept nogil:
    """The length of a ranked token's part (a byte's id, rank -1, or a ranked token's), or 0 when rank_of does not
    say (an id at two tokens, or none)."""
    cdef int32_t r
    if part < 0 or part >= <int32_t>rank_of.size():
        return 0
    r = rank_of[part]
    if r == -1:
        return 1
    return offs[r + 1] - offs[r] if r >= 0 else 0


@cython.final
cdef class BPETables:
    """What never changes once built from the ranks and the vocabulary: the merge rule (Ranks), the entries
    of the pre-token table that are there for good, and the bytes of every id (decoding). Shared, read-only,
    by every BPECore made from it, so threads can each encode with their own BPECore (own cache) at once."""

    cdef Ranks r
    cdef vector[PairSlot] pairs
    cdef Py_ssize_t n_pairs
    cdef vector[PieceSlot] permanent        # each ranked token whose own bytes merge to exactly itself (up to
    # MAX_CACHED_PIECE bytes)
    cdef vector[uint8_t] permanent_keys     # their key bytes (PieceSlot.key_off points here)
    cdef Py_ssize_t lookup_limit            # longest pre-token worth looking up
    cdef vector[uint8_t] is_permanent       # ranked token k -> 1 if its own bytes merge to exactly itself
    # (permanent_mask; an entry of `permanent` when not too long)

    cdef const uint8_t[::1] pool            # decode: bytes of every id, back to back (the caller's array, held,
    cdef const uint8_t* pool_data           # not copied: a vocabulary of long tokens is megabytes); its start
    cdef vector[int64_t] offsets            # id -> start in pool; offsets[id + 1] - offsets[id] is its length
    cdef vector[uint8_t] known              # id -> 1 if the id has bytes

    cdef vector[RankedPair] two             # Ranks.two
    cdef vector[int32_t] split_left         # made_by_merging: the two ids whose merge makes ranked token k
    cdef vector[int32_t] split_right
    cdef Py_ssize_t unmade                  # made_by_merging: the first ranked token not made, or -1
    cdef Py_ssize_t unmade_parts            # the parts tiktoken's rule leaves it in
    cdef Py_ssize_t n_bytes_merged          # made_by_merging: the ranked tokens whose bytes were merged (stats())

    def __cinit__(self, const int32_t[::1] byte_ids, const uint8_t[::1] ranked_pool,
                  const int64_t[::1] ranked_offsets, const int32_t[::1] ranked_ids,
                  const uint8_t[::1] decode_pool, const int64_t[::1] decode_offsets, const uint8_t[::1] known,
                  const uint8_t[::1] permanent=None, bint made_by_merging=False,
                  const int32_t[::1] expected_left=None, const int32_t[::1] expected_right=None,
                  Py_ssize_t split_at_lengths=SPLIT_AT_LENGTHS, const int64_t[::1] other_starts=None,
                  const int32_t[::1] other_left=None, const int32_t[::1] other_right=None):
        """byte_ids: 256 ids (-1: absent). Ranked token k (rank k) is ranked_pool[ranked_offsets[k]:
        ranked_offsets[k+1]] with id ranked_ids[k]; tokens are distinct and at least 2 bytes long.
        Decoding: id i is decode_pool[decode_offsets[i]:decode_offsets[i+1]] when known[i].
        permanent: optional, permanent_mask() of tables built from the same arrays (bpe_fast.formats' cache);
        it spares merging every ranked token once, and is trusted, so it must come from those arrays.
        made_by_merging: tiktoken's ranks, every byte with an id: each ranked token's bytes are merged with the
        tokens ranked before it, which must leave two parts; their pair is the only one the encoder needs for
        it (splits()), and every token is then permanent (`permanent`, if given, is still what is used). A
        token left in other than two parts stops the build (splits() names it; the tables are then not to be
        used). expected_left / expected_right (made_by_merging, optional): the ids of the two parts each ranked
        token is expected to be made of (its listed merge's); where the pairs' ranks show that merging the
        token's bytes leaves exactly those two, its bytes are not merged (_leaves_parts: a long token costs the
        depth of its parts' split trees, not its length). The tables are the same with or without them.
        other_starts / other_left / other_right (with expected_left, optional): more pairs each ranked token may be
        made of, asked the same way when its expected pair is not (ranked token k's: other_left[j], other_right[j]
        for j in other_starts[k]..other_starts[k + 1]; a merge list's later merges of a token).
        split_at_lengths (made_by_merging): a ranked token longer than this is first split where two tokens
        before it meet (_split_at_lengths: no cost a byte); the tables are the same whatever it is (tests lower
        it to take that way for every token)."""
        cdef Py_ssize_t n_ranked = ranked_ids.shape[0]
        if permanent is not None and permanent.shape[0] != n_ranked:
            raise ValueError("permanent must have one entry a ranked token")
        cdef Py_ssize_t k, i
        if byte_ids.shape[0] != 256:
            raise ValueError("byte_ids must have 256 entries")
        self.unmade = -1
        self.unmade_parts = 0
        self.n_bytes_merged = 0
        if made_by_merging:
            for i in range(256):
                if byte_ids[i] < 0:
                    raise ValueError(f"made_by_merging needs an id for every byte (byte 0x{i:02x} has none)")
        if ranked_offsets.shape[0] != n_ranked + 1:
            raise ValueError("ranked_offsets must have one entry more than ranked_ids")
        if (expected_left is None) != (expected_right is None) or (
                expected_left is not None and not (made_by_merging and expected_left.shape[0] == n_ranked
                                                   and expected_right.shape[0] == n_ranked)):
            raise ValueError("expected_left and expected_right go together, made_by_merging, one id a ranked token")
        if expected_left is not None:
            for k in range(n_ranked):
                if ranked_ids[k] < 0:
                    raise ValueError(f"ranked token {k} has a negative id ({ranked_ids[k]})")
        if (other_starts is None) != (other_left is None) or (other_left is None) != (other_right is None) or (
                other_starts is not None and (expected_left is None or other_starts.shape[0] != n_ranked + 1
                                              or other_left.shape[0] != other_right.shape[0])):
            raise ValueError("other_starts, other_left and other_right go together, with expected_left, "
                             "other_starts one entry more than the ranked tokens")
        if other_starts is not None:
            for k in range(n_ranked):
                if not (0 <= other_starts[k] <= other_starts[k + 1] <= other_left.shape[0]):
                    raise ValueError(f"ranked token {k} has bad other_starts")
        if decode_offsets.shape[0] != known.shape[0] + 1:
            raise ValueError("decode_offsets must have one entry more than known")
        if ranked_pool.shape[0] >= (1 << 31):
            raise ValueError("the ranked tokens are too long (2 GiB or more)")
        for k in range(n_ranked):
            if not (0 <= ranked_offsets[k] and ranked_offsets[k] + 2 <= ranked_offsets[k + 1]
                    and ranked_offsets[k + 1] <= ranked_pool.shape[0]):
                raise ValueError(f"ranked token {k} has bad offsets")
        for i in range(known.shape[0]):
            if known[i] and not (0 <= decode_offsets[i] <= decode_offsets[i + 1] <= decode_pool.shape[0]):
                raise ValueError(f"token {i} has bad decode offsets")
        for i in range(256):
            self.r.byte_ids[i] = byte_ids[i]
        cdef bint every = made_by_merging and permanent is None     # every token merges to itself: proven
        cdef RankedPair none
        none.rank = NO_RANK
        none.merged = -1
        with nogil:         # the tables of a 200k-token vocabulary take a tenth of a second: other threads run
            self.two.assign(1 << 16, none)
            self.r.two = self.two.data()            # the vector is not resized after this
            if made_by_merging:
                self._build_pairs_by_merging(ranked_pool, ranked_offsets, ranked_ids, expected_left, expected_right,
                                             max(split_at_lengths, 1), other_starts, other_left, other_right)
            else:
                self._build_pairs(ranked_pool, ranked_offsets, ranked_ids)
                self.r.pairs = self.pairs.data()        # the vector is not resized after this
                self._fill_two()
            if self.unmade < 0:
                self._build_permanent(ranked_pool, ranked_offsets, ranked_ids, permanent, every)
        self.pool = decode_pool         # its size cannot change while it is held (the offsets were checked)
        self.pool_data = &decode_pool[0] if decode_pool.shape[0] else NULL
        self.offsets.assign(&decode_offsets[0], &decode_offsets[0] + decode_offsets.shape[0])
        if known.shape[0]:
            self.known.assign(&known[0], &known[0] + known.shape[0])

    cdef int _build_pairs(self, const uint8_t[::1] pool, const int64_t[::1] offs,
                          const int32_t[::1] ids) except -1 nogil:
        """Every split of every ranked token into two parts that are tokens (single bytes or ranked). Running out
        of memory raises MemoryError (the tables are then unusable and dropped)."""
        cdef Py_ssize_t n_ranked = ids.shape[0]
        cdef Py_ssize_t k, j, n, cap
        cdef int32_t a, b
        cdef uint64_t h, prefix
        cdef const uint8_t* t
        cdef const uint8_t* end = &pool[0] + pool.shape[0] if pool.shape[0] else NULL
        # ids of ranked tokens by their bytes, to find the parts: a temporary piece table
        cdef vector[PieceSlot] table
        cdef uint64_t mask
        cap = table_size(n_ranked)
        table.resize(cap)
        mask = cap - 1
        for k in range(n_ranked):
            t = &pool[0] + offs[k]
            n = offs[k + 1] - offs[k]
            h = hash_key(t, n, end, &prefix)
            _table_insert(table, mask, h, prefix, offs[k], n, 1, ids[k])
        # A split at j can only give two tokens if some token is j bytes long and some n - j: trying just
        # those lengths keeps a corpus's few very long tokens (a 10 MB run of one letter) from costing
        # O(n^2) hashing here. `lengths` lists the token lengths in increasing order, 1 (the bytes) first.
        cdef vector[uint8_t] is_length
        cdef vector[Py_ssize_t] lengths
        cdef Py_ssize_t li
        is_length.resize(2, 0)
        is_length[1] = 1
        for k in range(n_ranked):
            n = offs[k + 1] - offs[k]
            if <Py_ssize_t>is_length.size() <= n:
                is_length.resize(n + 1, 0)
            is_length[n] = 1
        for n in range(1, <Py_ssize_t>is_length.size()):
            if is_length[n]:
                lengths.push_back(n)
        # first pass counts candidate pairs to size the table
        cdef vector[uint64_t] found_keys
        cdef vector[int32_t] found_ranks
        cdef vector[int32_t] found_ids
        cdef Py_ssize_t ahead
        for k in range(n_ranked):
            ahead = k + PAIR_LOOKAHEAD         # the table is far bigger than the cache: ask for the slots a later
            if ahead < n_ranked:               # token's splits will read (both parts) while this one's are read
                t = &pool[0] + offs[ahead]
                n = offs[ahead + 1] - offs[ahead]
                for li in range(<Py_ssize_t>lengths.size()):
                    j = lengths[li]
                    if j >= n:
                        break
                    if is_length[n - j]:
                        if j > 1:
                            prefetch(&table[hash_key(t, j, end, &prefix) & mask])
                        if n - j > 1:
                            prefetch(&table[hash_key(t + j, n - j, end, &prefix) & mask])
            t = &pool[0] + offs[k]
            n = offs[k + 1] - offs[k]
            for li in range(<Py_ssize_t>lengths.size()):
                j = lengths[li]
                if j >= n:
                    break
                if not is_length[n - j]:
                    continue
                a = self.r.byte_ids[t[0]] if j == 1 else _table_get(table, mask, &pool[0], t, j, end)
                if a < 0:
                    continue
                b = self.r.byte_ids[t[j]] if j == n - 1 else _table_get(table, mask, &pool[0], t + j, n - j, end)
                if b < 0:
                    continue
                found_keys.push_back(pair_key(a, b))
                found_ranks.push_back(<int32_t>k)
                found_ids.push_back(ids[k])
        cap = table_size(found_keys.size())
        self.pairs.resize(cap)
        self.r.pair_mask = cap - 1
        self.r.pair_shift = table_shift(cap)
        for k in range(cap):
            self.pairs[k].key = EMPTY_KEY
        self.n_pairs = 0
        for k in range(<Py_ssize_t>found_keys.size()):
            if k + 8 < <Py_ssize_t>found_keys.size():
                prefetch(&self.pairs[pair_slot(found_keys[k + 8], self.r.pair_shift)])
            self._pair_insert(found_keys[k], found_ranks[k], found_ids[k])
        return 0

    cdef int _build_pairs_by_merging(self, const uint8_t[::1] pool, const int64_t[::1] offs,
                                     const int32_t[::1] ids, const int32_t[::1] expected_left,
                                     const int32_t[::1] expected_right, Py_ssize_t split_at_lengths,
                                     const int64_t[::1] other_starts, const int32_t[::1] other_left,
                                     const int32_t[::1] other_right) except -1 nogil:
        """The pairs for tiktoken's ranks, one a ranked token: in rank order, each token's bytes merged by the
        pairs of the tokens before it, which must leave two parts. Where tiktoken's rule (any two adjacent parts
        whose bytes are a token join, the lowest rank first) joins two parts into a token, in any text, the
        parts inside that token's bytes went through what merging its bytes alone goes through (a join across
        its edges would have left it unmade), so their last two parts are these two: the other ways to split a
        token in two never join, and the table need not hold them. Merging with only these pairs is then
        tiktoken's rule, token after token, so each token's two parts are found with the pairs before it."""
        cdef Py_ssize_t n_ranked = ids.shape[0]
        cdef Py_ssize_t k, n, count, longest = 0
        cdef uint64_t cap = table_size(n_ranked)
        self.pairs.resize(cap)
        for k in range(<Py_ssize_t>cap):
            self.pairs[k].key = EMPTY_KEY
        self.r.pairs = self.pairs.data()        # the vector is not resized after this
        self.r.pair_mask = cap - 1
        self.r.pair_shift = table_shift(cap)
        self.n_pairs = 0
        for k in range(n_ranked):
            if offs[k + 1] - offs[k] > longest:
                longest = offs[k + 1] - offs[k]
        self.split_left.resize(n_ranked)
        self.split_right.resize(n_ranked)
        cdef vector[int32_t] buf           # merge_piece's parts, grown to a token's length when it is merged: a
        buf.resize(max(2, min(longest, 256)))       # vocabulary of megabyte tokens seldom merges one
        cdef const uint8_t* t
        cdef vector[int32_t] rank_of         # id -> ranked index, -1 a byte's id, -2 neither (_leaves_parts only)
        cdef vector[int32_t] spine_x, spine_y
        cdef int32_t most = -1
        # Tokens longer than split_at_lengths with no expected parts (tiktoken's ranks of a run of one letter: tokens
        # of megabytes) are first split where two tokens before them meet, found by the lengths of those tokens
        # and the signatures of their spans (_split_at_lengths); a split _leaves_parts accepts is the one merging
        # the bytes gives, so the tables are the same
        cdef bint at_lengths = longest > split_at_lengths
        cdef vector[uint64_t] sig_keys      # signature -> the last ranked token with it (heads), the one before
        cdef vector[int32_t] sig_heads      # it with the same signature (sig_next), ...
        cdef vector[int32_t] sig_next
        cdef vector[int64_t] length_slots   # the lengths of the tokens so far: a set, and in the order first seen
        cdef vector[int64_t] lengths
        cdef Py_ssize_t slot
        cdef uint64_t sig
        if at_lengths:
            sig_keys.resize(table_size(n_ranked))
            sig_heads.assign(table_size(n_ranked), -1)
            sig_next.resize(n_ranked)
            length_slots.assign(table_size(n_ranked), -1)
            _add_length(length_slots, lengths, 1)
        if expected_left is not None or at_lengths:
            for k in range(256):
                most = max(most, self.r.byte_ids[k])
            for k in range(n_ranked):
                most = max(most, ids[k])
            rank_of.assign(most + 1, -2)
            for k in range(256):        # an id at two tokens (-3) is never taken for a part (no `x if c else y`
                _take_rank(rank_of, self.r.byte_ids[k], -1)        # on a vector's item: Cython's temporary breaks)
        for k in range(n_ranked):
            t = &pool[0] + offs[k]
            n = offs[k + 1] - offs[k]
            if expected_left is not None and self._leaves_parts(k, t, n, expected_left[k], expected_right[k], pool,
                                                                offs, rank_of, spine_x, spine_y):
                buf[0] = expected_left[k]
                buf[1] = expected_right[k]
                count = 2
            elif other_starts is not None and self._other_parts(k, t, n, other_starts, other_left, other_right, pool,
                                                                offs, rank_of, spine_x, spine_y, buf.data()):
                count = 2
            elif n > split_at_lengths and at_lengths and self._split_at_lengths(
                    k, t, n, pool, offs, ids, rank_of, spine_x, spine_y, sig_keys, sig_heads, sig_next, length_slots,
                    lengths, buf.data()):
                count = 2
            else:
                if <Py_ssize_t>buf.size() < n:
                    buf.resize(n)
                count = merge_piece(&self.r, t, n, buf.data())
                self.n_bytes_merged += 1
            if count != 2:
                self.unmade = k
                self.unmade_parts = count
                return 0
            self.split_left[k] = buf[0]
            self.split_right[k] = buf[1]
            self._pair_insert(pair_key(buf[0], buf[1]), <int32_t>k, ids[k])
            if n == 2:      # a pair of two bytes: in the dense table too, for the tokens after it
                self.two[(<Py_ssize_t>t[0] << 8) | t[1]].rank = <int32_t>k
                self.two[(<Py_ssize_t>t[0] << 8) | t[1]].merged = ids[k]
            if rank_of.size():
                _take_rank(rank_of, ids[k], <int32_t>k)
            if at_lengths:
                sig = _span_signature(t, n)
                slot = _signature_slot(sig_keys, sig_heads, sig)
                sig_keys[slot] = sig
                sig_next[k] = sig_heads[slot]
                sig_heads[slot] = <int32_t>k
                _add_length(length_slots, lengths, n)
        return 0

    cdef bint _other_parts(self, Py_ssize_t k, const uint8_t* t, Py_ssize_t n, const int64_t[::1] starts,
                           const int32_t[::1] lefts, const int32_t[::1] rights, const uint8_t[::1] pool,
                           const int64_t[::1] offs, vector[int32_t]& rank_of, vector[int32_t]& spine_x,
                           vector[int32_t]& spine_y, int32_t* out) noexcept nogil:
        """Whether merging ranked token k's bytes t[0:n] leaves one of its other pairs (lefts[j], rights[j] for j in
        starts[k]..starts[k + 1]), asked of _leaves_parts; if so its two ids are out[0], out[1]."""
        cdef Py_ssize_t j
        for j in range(starts[k], starts[k + 1]):
            if self._leaves_parts(k, t, n, lefts[j], rights[j], pool, offs, rank_of, spine_x, spine_y):
                out[0] = lefts[j]
                out[1] = rights[j]
                return True
        return False

    cdef bint _split_at_lengths(self, Py_ssize_t k, const uint8_t* t, Py_ssize_t n, const uint8_t[::1] pool,
                                const int64_t[::1] offs, const int32_t[::1] ids, vector[int32_t]& rank_of,
                                vector[int32_t]& spine_x, vector[int32_t]& spine_y, const vector[uint64_t]& sig_keys,
                                const vector[int32_t]& sig_heads, const vector[int32_t]& sig_next,
                                const vector[int64_t]& length_slots, const vector[int64_t]& lengths,
                                int32_t* out) noexcept nogil:
        """Whether ranked token k's bytes t[0:n] merge (with the pairs before it) to two parts that are tokens
        before it, t[0:j] and t[j:n] for a length j of those tokens; if so they are out[0], out[1]. The tokens of
        each span are looked up by its signature (its length and end bytes: no cost a byte), each split asked of
        _leaves_parts (which compares the bytes), SPLIT_TRIES splits and SPLIT_LENGTHS lengths at most: False
        leaves the bytes to be merged (the answer is the same, only slower).

        The lengths the splits of its neighbours give are asked first (_neighbour_cuts): in the ranks of a run
        of one letter (a, aa, aaa, ...: a token of n bytes splits after a power of two, 512 for n = 900), the
        split sought is rarely among the first SPLIT_TRIES lengths, but always one of those."""
        cdef Py_ssize_t li, lj, tries = 0
        cdef Py_ssize_t cuts[NEIGHBOUR_CUTS]
        cdef Py_ssize_t n_cuts = self._neighbour_cuts(k, t, n, pool, offs, rank_of, sig_keys, sig_heads, sig_next,
                                                      cuts)
        for li in range(n_cuts):
            lj = 0
            while lj < li and cuts[lj] != cuts[li]:
                lj += 1
            if lj < li:         # suggested twice (a run's sides often agree): asked once, its tries not spent again
                continue
            if self._split_at(k, t, n, cuts[li], pool, offs, ids, rank_of, spine_x, spine_y, sig_keys, sig_heads,
                              sig_next, length_slots, &tries, out):
                return True
            if tries >= SPLIT_TRIES:
                return False
        for li in range(min(<Py_ssize_t>lengths.size(), <Py_ssize_t>SPLIT_LENGTHS)):
            if self._split_at(k, t, n, lengths[li], pool, offs, ids, rank_of, spine_x, spine_y, sig_keys, sig_heads,
                              sig_next, length_slots, &tries, out):
                return True
            if tries >= SPLIT_TRIES:
                return False
        return False

    cdef bint _split_at(self, Py_ssize_t k, const uint8_t* t, Py_ssize_t n, Py_ssize_t j, const uint8_t[::1] pool,
                        const int64_t[::1] offs, const int32_t[::1] ids, vector[int32_t]& rank_of,
                        vector[int32_t]& spine_x, vector[int32_t]& spine_y, const vector[uint64_t]& sig_keys,
                        const vector[int32_t]& sig_heads, const vector[int32_t]& sig_next,
                        const vector[int64_t]& length_slots, Py_ssize_t* tries, int32_t* out) noexcept nogil:
        """_split_at_lengths' question for one cut: whether t[0:j] and t[j:n] are the tokens merging ranked token
        k's bytes leaves (out[0], out[1]); each pair of candidates asked counts in *tries (it stops at
        SPLIT_TRIES)."""
        cdef Py_ssize_t m = n - j
        cdef int32_t rx, ry, x, y
        if j < 1 or m < 1 or not _length_known(length_slots, j) or not _length_known(length_slots, m):
            return False
        # the candidates: a byte (-2), or the tokens with the span's signature (a chain, -1 ending it)
        rx = -2 if j == 1 else sig_heads[_signature_slot(sig_keys, sig_heads, _span_signature(t, j))]
        while rx != -1:
            x = self.r.byte_ids[t[0]] if rx == -2 else ids[rx]
            ry = -2 if m == 1 else sig_heads[_signature_slot(sig_keys, sig_heads, _span_signature(t + j, m))]
            while ry != -1:
                y = self.r.byte_ids[t[j]] if ry == -2 else ids[ry]
                if self._leaves_parts(k, t, n, x, y, pool, offs, rank_of, spine_x, spine_y):
                    out[0] = x
                    out[1] = y
                    return True
                tries[0] += 1
                if tries[0] >= SPLIT_TRIES:
                    return False
                ry = -1 if ry == -2 else sig_next[ry]
            rx = -1 if rx == -2 else sig_next[rx]
        return False

    cdef Py_ssize_t _neighbour_cuts(self, Py_ssize_t k, const uint8_t* t, Py_ssize_t n, const uint8_t[::1] pool,
                                    const int64_t[::1] offs, const vector[int32_t]& rank_of,
                                    const vector[uint64_t]& sig_keys, const vector[int32_t]& sig_heads,
                                    const vector[int32_t]& sig_next, Py_ssize_t* cuts) noexcept nogil:
        """Where to cut ranked token k's bytes t[0:n] first (cuts[], NEIGHBOUR_CUTS at most; how many is returned),
        from the splits of tokens before it that are its start or its end: its bytes but the last, t[0:n-1], and
        the token ranked just before it when it starts t; its bytes but the first, t[1:n], and the token before it
        when it ends t. A start of n - u bytes split at a (a + b = n - u) suggests a cut at a (the u bytes join the
        right part), at b + u (the parts change places: a run of one letter) and at n - u; an end split at c
        (c + d = n - u), at c + u, at d and at u. Candidates only: each cut is asked of _leaves_parts."""
        cdef Py_ssize_t count = 0, a, b, u, side
        cdef int32_t r
        cdef int32_t before = <int32_t>k - 1
        cdef Py_ssize_t m_before = offs[k] - offs[k - 1] if k > 0 else 0
        for side in range(4):       # t[0:n-1], the token before as t's start, t[1:n], the token before as its end
            if side == 0:
                r = self._ranked_span(t, n - 1, pool, offs, sig_keys, sig_heads, sig_next)
            elif side == 2:
                r = self._ranked_span(t + 1, n - 1, pool, offs, sig_keys, sig_heads, sig_next)
            elif 0 < m_before < n - 1 and memcmp(&pool[0] + offs[before], t if side == 1 else t + n - m_before,
                                                  m_before) == 0:
                r = before
            else:
                r = -1
            if r < 0:
                continue
            u = n - (offs[r + 1] - offs[r])
            a = _part_length(rank_of, offs, self.split_left[r])
            b = _part_length(rank_of, offs, self.split_right[r])
            if a <= 0 or b <= 0:
                continue
            if side < 2:
                cuts[count] = a
                cuts[count + 1] = b + u
                cuts[count + 2] = n - u
            else:
                cuts[count] = a + u
                cuts[count + 1] = b
                cuts[count + 2] = u
            count += 3
        return count

    cdef int32_t _ranked_span(self, const uint8_t* s, Py_ssize_t m, const uint8_t[::1] pool,
                              const int64_t[::1] offs, const vector[uint64_t]& sig_keys,
                              const vector[int32_t]& sig_heads, const vector[int32_t]& sig_next) noexcept nogil:
        """The ranked token so far whose bytes are s[0:m], its index, or -1 (none, or not among the first
        SPAN_LOOKS with the span's signature)."""
        cdef int32_t r = sig_heads[_signature_slot(sig_keys, sig_heads, _span_signature(s, m))]
        cdef Py_ssize_t looks = 0
        while r != -1 and looks < SPAN_LOOKS:
            if offs[r + 1] - offs[r] == m and memcmp(&pool[0] + offs[r], s, m) == 0:
                return r
            r = sig_next[r]
            looks += 1
        return -1

    cdef bint _leaves_parts(self, Py_ssize_t k, const uint8_t* t, Py_ssize_t n, int32_t x, int32_t y,
                            const uint8_t[::1] pool, const int64_t[::1] offs, vector[int32_t]& rank_of,
                            vector[int32_t]& spine_x, vector[int32_t]& spine_y) noexcept nogil:
        """Whether merging ranked token k's bytes t[0:n] with the pairs ranked before it (the table so far)
        leaves exactly the two parts x, y: False when it does not, or when x and y are not tokens ranked before
        k whose bytes make t (the caller then merges the bytes).

        Why the parts' split trees suffice: every pair in the table ranks after its two parts (a token's pair is
        the two parts merging its bytes left, with the pairs before it), so tiktoken's rule joins pairs in rank
        order, and at one rank the leftmost first: the joins of one rank are a left-to-right scan. Merging x's
        bytes alone follows x's split tree and leaves x; y's likewise. In x's bytes then y's, the two halves go
        their own ways until a pair across the boundary joins: at rank q, the boundary pair is x's last part a
        (its right spine) and y's first part b (its left spine), and it joins when it is the pair of rank q, a
        was made before q and is not taken by a join of rank q on its left (its spine parent ranks after q;
        x's part of the scan comes first), and b was made before q and not taken before q (its parent ranks
        at q or after: the boundary, on its left, comes first at q). Walking both spines upwards, one boundary
        pair for each stretch of ranks, asks the table once a stretch; if none joins, the bytes end as x, y."""
        cdef int32_t most = <int32_t>rank_of.size() - 1
        cdef Py_ssize_t nx, ny
        cdef int32_t rx, ry, a, b, ra, rb, pa, pb, q, merged
        cdef const int32_t* rank = rank_of.data()
        if not (0 <= x <= most and 0 <= y <= most):
            return False
        rx = rank[x]
        ry = rank[y]
        if rx < -1 or ry < -1 or rx >= k or ry >= k:
            return False
        nx = 1 if rx < 0 else offs[rx + 1] - offs[rx]
        ny = 1 if ry < 0 else offs[ry + 1] - offs[ry]
        if nx + ny != n:
            return False
        if (self.r.byte_ids[t[0]] != x) if rx < 0 else (memcmp(&pool[0] + offs[rx], t, nx) != 0):
            return False
        if (self.r.byte_ids[t[nx]] != y) if ry < 0 else (memcmp(&pool[0] + offs[ry], t + nx, ny) != 0):
            return False
        # x, its right part, that one's right part, ... down to a byte; y, its left part, ... down to a byte
        if not _spine(rank, self.split_right.data(), x, spine_x) or not _spine(rank, self.split_left.data(), y,
                                                                                 spine_y):
            return False
        nx = spine_x.size() - 1     # walked from the bytes (the ends of the spines) up
        ny = spine_y.size() - 1
        while True:
            a = spine_x[nx]
            b = spine_y[ny]
            ra = rank[a]
            rb = rank[b]
            pa = rank[spine_x[nx - 1]] if nx > 0 else <int32_t>k      # when a is joined into its parent
            pb = rank[spine_y[ny - 1]] if ny > 0 else <int32_t>k
            q = pair_rank(&self.r, a, b, &merged)
            if q != NO_RANK and ra < q and rb < q and q < pa and q <= pb:
                return False
            if nx == 0 and ny == 0:
                return True
            if pa <= pb:
                nx -= 1
            if pb <= pa:
                ny -= 1

    cdef void _fill_two(self) noexcept nogil:
        """The dense table of the pairs of two bytes, from the pair table (every byte pair with ids)."""
        cdef Py_ssize_t a, b
        cdef int32_t merged
        for a in range(256):
            if self.r.byte_ids[a] < 0:
                continue
            for b in range(256):
                if self.r.byte_ids[b] >= 0:
                    self.two[(a << 8) | b].rank = pair_rank(&self.r, self.r.byte_ids[a], self.r.byte_ids[b], &merged)
                    self.two[(a << 8) | b].merged = merged

    def splits(self):
        """Tables built made_by_merging: (left, right, unmade, parts): int32 arrays (array.array: building a
        tokenizer from ranks imports no NumPy) of the two ids whose merge makes each ranked token, in rank order;
        unmade, -1 or the first ranked token that merging the tokens before it leaves in `parts` parts (the
        arrays are then filled only before it)."""
        cdef Py_ssize_t n = self.split_left.size()
        cdef array.array left = array.clone(_INT32_ARRAY, n, False)
        cdef array.array right = array.clone(_INT32_ARRAY, n, False)
        if n:
            memcpy(left.data.as_voidptr, self.split_left.data(), n * sizeof(int32_t))
            memcpy(right.data.as_voidptr, self.split_right.data(), n * sizeof(int32_t))
        return left, right, self.unmade, self.unmade_parts

    cdef void _pair_insert(self, uint64_t key, int32_t rank, int32_t merged) noexcept nogil:
        cdef uint64_t i = pair_slot(key, self.r.pair_shift)
        while self.pairs[i].key != EMPTY_KEY:
            if self.pairs[i].key == key:      # the same two parts: keep the lower rank (the first seen)
                return
            i = next_slot(i, self.r.pair_mask)
        self.pairs[i].key = key
        self.pairs[i].rank = rank
        self.pairs[i].merged = merged
        self.n_pairs += 1

    cdef int _build_permanent(self, const uint8_t[::1] pool, const int64_t[::1] offs,
                              const int32_t[::1] ids, const uint8_t[::1] given, bint every) except -1 nogil:
        """The permanent entries: each ranked token whose own bytes merge to exactly itself (as `given` says,
        when it is not None; every one, when `every`), but for those longer than MAX_CACHED_PIECE (permanent_mask
        still says 1 for them)."""
        cdef Py_ssize_t n_ranked = ids.shape[0]
        cdef Py_ssize_t k, n, count, j
        cdef const uint8_t* t
        cdef const uint8_t* end = &pool[0] + pool.shape[0] if pool.shape[0] else NULL
        cdef PieceSlot slot
        cdef vector[int32_t] buf
        cdef bint reachable
        cdef bint some_byte_missing = False
        for j in range(256):
            if self.r.byte_ids[j] < 0:
                some_byte_missing = True
        self.lookup_limit = MAX_CACHED_PIECE
        self.is_permanent.assign(n_ranked, 0)
        for k in range(n_ranked):
            t = &pool[0] + offs[k]
            n = offs[k + 1] - offs[k]
            reachable = True
            for j in range(n if some_byte_missing else 0):
                if self.r.byte_ids[t[j]] < 0:
                    reachable = False       # holds a byte the vocabulary lacks: no text encodes to it
            if not reachable:
                continue
            if every:
                pass
            elif given is not None:
                if not given[k]:
                    continue
            else:
                if <Py_ssize_t>buf.size() < n:
                    buf.resize(n)
                count = merge_piece(&self.r, t, n, buf.data())
                if count != 1 or buf[0] != ids[k]:
                    continue
            self.is_permanent[k] = 1
            if n > MAX_CACHED_PIECE:
                continue        # no entry: a pre-token this long is merged (to this token), not looked up, as it
                # is not cached either; its bytes would be copied into every encoder (a vocabulary learnt from a
                # run of one letter holds tokens of megabytes)
            slot.hash = hash_key(t, n, end, &slot.prefix)
            slot.key_off = <uint32_t>self.permanent_keys.size()
            slot.key_len = <int32_t>n
            slot.n_ids = 1
            slot.value = ids[k]
            self.permanent_keys.insert(self.permanent_keys.end(), t, t + n)
            self.permanent.push_back(slot)
        self._order_permanent()
        return 0

    cdef void _order_permanent(self) noexcept nogil:
        """Order the permanent entries by the slot each takes in an encoder's table of the default size (a
        counting sort on the slot's top bits): placing them, in every new encoder and at every reset of its
        cache, then walks the table from start to end (o200k_base's 200k entries: 2 ms, where a table placed in
        rank order took 4, and 19 when it was twice the size). Tables of twice or half that size are walked as
        two interleaved runs, still in order."""
        cdef Py_ssize_t n = self.permanent.size(), k
        if n < 1024:
            return
        cdef uint64_t cap = piece_table_size(n, DEFAULT_CACHE_ENTRIES)
        cdef int shift = 0
        while (cap >> shift) > (1 << 16):
            shift += 1
        cdef vector[Py_ssize_t] start
        assign_or_end(start, (cap >> shift) + 1, 0)
        for k in range(n):
            start[((self.permanent[k].hash & (cap - 1)) >> shift) + 1] += 1
        for k in range(1, <Py_ssize_t>start.size()):
            start[k] += start[k - 1]
        cdef vector[PieceSlot] ordered
        resize_or_end(ordered, n)
        cdef uint64_t b
        for k in range(n):
            b = (self.permanent[k].hash & (cap - 1)) >> shift
            ordered[start[b]] = self.permanent[k]
            start[b] += 1
        self.permanent.swap(ordered)

    def permanent_mask(self):
        """bytes: 1 for each ranked token (in rank order) that is a permanent entry, else 0; what the
        `permanent` argument takes, to build the same tables again without merging every token."""
        if self.is_permanent.empty():
            return b""
        return (<const char*>self.is_permanent.data())[:self.is_permanent.size()]

    # ------------------------------------------------------------------------------------------ decoding

    def token_pool(self):
        """(pool, offsets): the bytes of every id back to back (uint8) and where each id's start (int64, one entry
        more than there are ids; an id without bytes has none), both read-only for good (their buffers are
        read-only: flags.writeable cannot be set back): the decoder's own pool, a copy of its offsets."""
        if self.pool is None or not self.pool.shape[0]:
            pool = np.frombuffer(b"", dtype=np.uint8)
        else:
            pool = np.frombuffer(memoryview(self.pool).toreadonly(), dtype=np.uint8)
        offsets = np.frombuffer((<const char*>self.offsets.data())[:self.offsets.size() * sizeof(int64_t)],
                                dtype=np.int64)
        return pool, offsets

    def decode_bytes(self, const int64_t[::1] ids, bint private=False):
        """The bytes of the ids joined. Raises ValueError naming the first id without bytes. private: the caller
        owns ids and nothing writes them during the call (else they are copied first)."""
        cdef vector[int64_t] own
        if ids.shape[0] == 0:
            return b""
        if private:
            return self._decode(&ids[0], ids.shape[0])
        # a private copy, whatever the length: _decode reads the ids twice (checking them and sizing the bytes,
        # then gathering), and another thread may write the caller's array meanwhile (numpy's copyto releases the
        # GIL): ids changed between the two reads wrote past the bytes allocated (helper-120)
        own.assign(&ids[0], &ids[0] + ids.shape[0])
        return self._decode(own.data(), own.size())

    def decode_list(self, list ids):
        """decode_bytes for a list of int, read without making an array first; None if an item is not an int
        (the caller converts then). ValueError naming a negative or unknown id. One pass reads, checks and sizes
        the ids (read_ids), one gathers their bytes."""
        return self._list(ids, LIST_BYTES, None)

    def decode_list_offsets(self, list ids):
        """(decode_list(ids), char_offsets of them) in one call, or None as decode_list: the ids are read once
        (another thread may change the list while the bytes are gathered without the GIL)."""
        return self._list(ids, LIST_OFFSETS, None)

    def char_offsets(self, const int64_t[::1] ids):
        """For each of ids (known ids, which nothing else writes to: decode_bytes(ids, True) has checked them),
        the index of the character of their decoded text holding the token's first byte, as tiktoken's
        decode_with_offsets gives it: the characters started before it, less one when that byte continues a
        character (not below 0). A list of int.

        Worked example: ids of b"ab", b"\\xe2", b"\\x82\\xac", b"c" -> [0, 2, 2, 3]."""
        return self._char_offsets(&ids[0] if ids.shape[0] else NULL, ids.shape[0])

    cdef list _char_offsets(self, const TokenId* ids, Py_ssize_t n):
        cdef const uint8_t* pool = self.pool_data
        cdef const int64_t* offs = self.offsets.data()
        cdef Py_ssize_t k
        cdef int64_t chars = 0, i, j
        cdef list result = []
        for k in range(n):
            i = ids[k]
            result.append(max(chars - ((pool[offs[i]] & 0xC0) == 0x80), 0))
            for j in range(offs[i], offs[i + 1]):
                chars += (pool[j] & 0xC0) != 0x80
        return result

    def decode_list_text(self, list ids, errors):
        """utf8_text(decode_list(ids), errors) in one call, or None as decode_list. A short text (the usual
        call: a streamed token, a message) is gathered on the stack and decoded from there by CPython, without a
        bytes object (a few ids: 1.4x tiktoken's speed where the bytes made it 0.9x)."""
        return self._list(ids, LIST_TEXT, errors)

    cdef object _list(self, list ids, int answer, errors):
        """decode_list (answer LIST_BYTES), decode_list_text (LIST_TEXT: decoded with errors) or
        decode_list_offsets (LIST_OFFSETS)."""
        cdef Py_ssize_t n = PyList_GET_SIZE(ids), k
        cdef int64_t total = 0
        cdef int bad = 0
        cdef int32_t small_ids[SMALL_LIST]
        cdef char small_text[SMALL_TEXT + GATHER_COPY]
        cdef const char* handler
        # (not zeroed first: read_ids writes every id it reads, and only those are gathered; fresh pages of a
        # large one on huge pages, so that 4 KB page faults do not cost a first decode more than the reading)
        cdef int32_t* buf = &small_ids[0]
        if n > SMALL_LIST:
            buf = <int32_t*>malloc(n * sizeof(int32_t))
        if buf == NULL:
            raise MemoryError(f"no memory for the {n:,} ids to decode")
        try:
            if buf != &small_ids[0]:
                huge_pages(buf, n * sizeof(int32_t))
            k = read_ids(ids, n, buf, self.offsets.data(), self.known.data(), self.known.size(), &total, &bad)
            if k < n:
                return self._bad_item(ids, k, bad)
            if answer == LIST_BYTES:
                return self._gathered(buf, n, total)
            if answer == LIST_OFFSETS:
                return self._gathered(buf, n, total), self._char_offsets(buf, n)
            handler = _common_handler(errors)
            if total <= SMALL_TEXT and handler != NULL:
                _gather(self.pool_data, self.pool.shape[0] if self.pool is not None else 0, self.offsets.data(),
                        buf, n, small_text, small_text + sizeof(small_text))
                return PyUnicode_DecodeUTF8(small_text, total, handler)
            data = self._gathered(buf, n, total)
        finally:
            if buf != &small_ids[0]:
                free(buf)
        return utf8_text(data, errors)      # (the ids' buffer freed first, as when the bytes were returned)

    cdef _bad_item(self, list ids, Py_ssize_t k, int bad):
        """decode_list's answer when read_ids stopped at item k (bad: 1, not an int; 2, not a known id), as a
        pass that converts every item first and then checks the ids would give it: None (the caller's TypeError)
        when an item from k on is not an int, else a ValueError naming the first id past int64 from k on, or else
        item k. Ids are shown by their int value (int.__int__: no method of an int subclass runs)."""
        cdef Py_ssize_t j
        if bad == 1:
            return None
        for j in range(k, len(ids)):
            item = ids[j]
            if not PyLong_Check(item):
                return None
            if not -2 ** 63 <= int.__int__(item) < 2 ** 63:
                k = j
                break
        i = int.__int__(ids[k])
        raise ValueError(f"{'negative' if i < 0 else 'unknown'} token id {i} (at position {k})")

    cdef bytes _decode(self, const int64_t* ids, Py_ssize_t n):
        """decode_bytes of ids[0:n], which nothing else writes to (read twice: checked and sized, then gathered)."""
        cdef Py_ssize_t k
        cdef int64_t i, total = 0, n_known = self.known.size()
        cdef const int64_t* offs = self.offsets.data()
        cdef const uint8_t* known = self.known.data()
        for k in range(n):
            i = ids[k]
            if i < 0:
                raise ValueError(f"negative token id {i} (at position {k})")
            if i >= n_known or not known[i]:
                raise ValueError(f"unknown token id {i} (at position {k})")
            total += offs[i + 1] - offs[i]
        return self._gathered(ids, n, total)

    cdef bytes _gathered(self, const TokenId* ids, Py_ssize_t n, int64_t total):
        """The bytes of ids[0:n], checked known, total bytes in all."""
        result = PyBytes_FromStringAndSize(NULL, total)
        cdef char* dst = PyBytes_AS_STRING(result)
        cdef Py_ssize_t pool_size = self.pool.shape[0] if self.pool is not None else 0
        huge_pages(dst, total)          # (a large result's fresh pages: see decode_list)
        if n >= NOGIL_IDS:
            with nogil:
                _gather(self.pool_data, pool_size, self.offsets.data(), ids, n, dst, dst + total)
        elif n:
            _gather(self.pool_data, pool_size, self.offsets.data(), ids, n, dst, dst + total)
        return result

    # ------------------------------------------------------------------------------------------ inspection

    def merge_bytes(self, const uint8_t[::1] piece):
        """The ids of one pre-token, merged without any cache (for tests)."""
        cdef Py_ssize_t n = piece.shape[0], count
        if n == 0:
            return []
        cdef vector[int32_t] buf
        buf.resize(n)
        count = merge_piece(&self.r, &piece[0], n, buf.data())
        return [buf[k] for k in range(count)]

    def stats(self):
        """Sizes of the tables (for tests and benchmarks)."""
        return {"pairs": self.n_pairs, "pair_slots": self.pairs.size(), "permanent": self.permanent.size(),
                "lookup_limit": self.lookup_limit, "bytes_merged": self.n_bytes_merged}


def tables_made_by_merging(byte_ids, ranked_pool, ranked_offsets, ranked_ids, decode_pool, decode_offsets, known,
                           permanent=None, expected_left=None, expected_right=None, split_at_lengths=SPLIT_AT_LENGTHS,
                           other_starts=None, other_left=None, other_right=None):
    """BPETables(..., made_by_merging=True) for tiktoken's ranks: one pair a token, checked (splits());
    expected_left / expected_right: the two parts each token is expected to be made of, if known; other_starts /
    other_left / other_right: more pairs each may be made of; split_at_lengths: see BPETables."""
    return BPETables(byte_ids, ranked_pool, ranked_offsets, ranked_ids, decode_pool, decode_offsets, known,
                     permanent, made_by_merging=True, expected_left=expected_left, expected_right=expected_right,
                     split_at_lengths=split_at_lengths, other_starts=other_starts, other_left=other_left,
                     other_right=other_right)


cdef class PieceTable:
    """An encoder's whole-pre-token table made ahead, empty (all zeros, its pages touched), for the first encoder
    of a tokenizer whose tables are built in another thread (BPECore's `table`): a fresh 16 MB table's page
    faults (8 ms of the first encoder's 10 for cl100k_base) are then taken while the caller waits for the tables,
    not after. n_permanent: the permanent entries expected; an encoder takes the table only when its size is the
    one it would make (and only once)."""
    cdef vector[PieceSlot] slots

    def __cinit__(self, Py_ssize_t n_permanent, Py_ssize_t cache_entries=DEFAULT_CACHE_ENTRIES):
        cdef uint64_t cap = piece_table_size(max(n_permanent, 0), max(cache_entries, 0))
        with nogil:
            self.slots.resize(cap)

    def __len__(self):
        """Its slots (0 once an encoder has taken them)."""
        return self.slots.size()


cdef class BPECore:
    """One encoder: the shared BPETables plus its own whole-pre-token table (the permanent entries, then a
    cache of merged pre-tokens). A BPECore is used by one thread at a time (bpe_fast.Tokenizer hands each
    call its own); its encoding loops run without the GIL on long texts."""

    cdef readonly BPETables tables          # kept alive: r.pairs and perm point into it
    cdef Ranks r
    cdef const PieceSlot* perm
    cdef Py_ssize_t n_perm
    cdef Py_ssize_t permanent_key_bytes
    cdef Py_ssize_t lookup_limit

    cdef vector[PieceSlot] pieces           # whole pre-token -> ids (ranked tokens for good, then the cache)
    cdef uint64_t piece_mask
    cdef vector[uint8_t] keys               # key bytes of the entries of `pieces` (the permanent ones first)
    cdef vector[int32_t] cached_ids         # ids of cached entries with more than one id
    cdef Py_ssize_t n_cached
    cdef readonly Py_ssize_t cache_entries  # bound on the number of cached entries
    cdef readonly Py_ssize_t cache_bytes    # bound on the bytes of keys + ids of cached entries
    cdef readonly Py_ssize_t max_cache_entries  # the bounds may double up to these when the cache fills
    cdef readonly Py_ssize_t max_cache_bytes
    cdef Py_ssize_t cached_bytes
    cdef Py_ssize_t n_resets
    cdef Py_ssize_t n_growths

    cdef vector[int32_t] scratch
    cdef HotSlot hot[HOT_SLOTS]             # pre-tokens of 2..8 bytes with one id, last seen per slot

    def __cinit__(self, BPETables tables not None, Py_ssize_t cache_entries=DEFAULT_CACHE_ENTRIES,
                  Py_ssize_t cache_bytes=16 << 20, Py_ssize_t max_cache_entries=-1, Py_ssize_t max_cache_bytes=-1,
                  PieceTable table=None):
        """cache_entries / cache_bytes bound the cache; each time it fills they double (and the table with
        them), up to max_cache_entries / max_cache_bytes (-1: no growth), so a text of many distinct
        pre-tokens gets a larger cache while short texts keep a small encoder. table: a PieceTable made ahead,
        taken (and left empty) when it has the size this encoder's table needs."""
        cdef Py_ssize_t cap
        self.tables = tables
        self.r = tables.r
        memset(self.hot, 0, sizeof(self.hot))
        self.perm = tables.permanent.data()
        self.n_perm = tables.permanent.size()
        self.lookup_limit = tables.lookup_limit
        self.keys = tables.permanent_keys
        self.permanent_key_bytes = self.keys.size()
        self.cache_entries = max(cache_entries, 0)
        self.cache_bytes = min(max(cache_bytes, 0), 1 << 30)     # key offsets and id offsets are 32-bit
        self.max_cache_entries = max(max_cache_entries, self.cache_entries)
        self.max_cache_bytes = min(max(max_cache_bytes, self.cache_bytes), 1 << 30)
        cap = piece_table_size(self.n_perm, self.cache_entries)
        if table is not None and table.slots.size() == cap:
            self.pieces.swap(table.slots)       # all zeros, as a fresh one
        else:
            self.pieces.resize(cap)
        self.piece_mask = cap - 1
        self._reset_cache(True)

    # ------------------------------------------------------------------------------------------ the cache

    cdef void _reset_cache(self, bint fresh=False) noexcept nogil:
        """Drop the cached entries, keep the permanent ones. fresh: the table was just made, all zeros (an empty
        slot is all zeros), so it is not cleared again (a fresh o200k_base table is 32 MB)."""
        cdef Py_ssize_t k
        if not fresh:
            memset(self.pieces.data(), 0, self.pieces.size() * sizeof(PieceSlot))
        for k in range(self.n_perm):
            _slot_place(self.pieces, self.piece_mask, self.perm[k])
        resize_or_end(self.keys, self.permanent_key_bytes)
        self.cached_ids.clear()
        self.n_cached = 0
        self.cached_bytes = 0

    cdef int _grow_cache(self) except -1 nogil:
        """Double the cache's bounds (up to their maxima) and the table to hold them. The entries stay: the
        table's slots are placed again in the larger one (dropping them, as a reset does, made a first encode
        of 20 MB of real text merge each of the first 65,536 distinct pre-tokens again when seen again). The
        larger table is made and filled before anything changes, so if that allocation fails (MemoryError) the
        encoder is as it was (swapping its table out first would leave it an empty table under the old mask)."""
        cdef uint64_t cap
        cdef vector[PieceSlot] larger
        cdef size_t k
        cdef Py_ssize_t entries = min(2 * self.cache_entries, self.max_cache_entries)
        cdef Py_ssize_t nbytes = min(2 * self.cache_bytes, self.max_cache_bytes)
        cap = piece_table_size(self.n_perm, entries)
        if cap != self.pieces.size():
            larger.resize(cap)                  # (all zeros: empty slots; may raise MemoryError)
            for k in range(self.pieces.size()):
                if self.pieces[k].n_ids != 0:
                    _slot_place(larger, cap - 1, self.pieces[k])
            self.pieces.swap(larger)
            self.piece_mask = cap - 1
        self.cache_entries = entries
        self.cache_bytes = nbytes
        self.n_growths += 1
        return 0

    cdef inline const PieceSlot* _find(self, uint64_t h, uint64_t prefix, const uint8_t* p,
                                       Py_ssize_t n) noexcept nogil:
        cdef uint64_t i = h & self.piece_mask
        cdef const PieceSlot* slots = self.pieces.data()
        cdef const uint8_t* keys = self.keys.data()
        while slots[i].n_ids != 0:
            if key_matches(&slots[i], h, prefix, keys, p, n):
                return &slots[i]
            i = next_slot(i, self.piece_mask)
        return NULL

    cdef int _cache(self, uint64_t h, uint64_t prefix, const uint8_t* p, Py_ssize_t n, const int32_t* ids,
                    Py_ssize_t count) except -1 nogil:
        cdef PieceSlot slot
        if self.cache_entries == 0:
            return 0
        if self.n_cached >= self.cache_entries or self.cached_bytes + n + 4 * count > self.cache_bytes:
            if self.cache_entries < self.max_cache_entries or self.cache_bytes < self.max_cache_bytes:
                self._grow_cache()              # the entries stay
            if self.n_cached >= self.cache_entries or self.cached_bytes + n + 4 * count > self.cache_bytes:
                self.n_resets += 1              # full at its maxima (or a bound that cannot grow): dropped
                self._reset_cache()
        slot.hash = h
        slot.prefix = prefix
        slot.key_off = <uint32_t>self.keys.size()
        slot.key_len = <int32_t>n
        slot.n_ids = <int32_t>count
        if count == 1:
            slot.value = ids[0]
        else:
            slot.value = <int32_t>self.cached_ids.size()
            append_ids(&self.cached_ids, ids, ids + count)
        self.keys.insert(self.keys.end(), p, p + n)
        _slot_place(self.pieces, self.piece_mask, slot)
        self.n_cached += 1
        self.cached_bytes += n + 4 * count
        return 0

    # ------------------------------------------------------------------------------------------ encoding

    def encode_pretokens(self, IdBuffer out, const uint8_t[::1] data, const int64_t[::1] bounds,
                         Py_ssize_t stop=-1):
        """Append to `out` the ids of the pre-tokens data[bounds[k]:bounds[k+1]] for k < stop (default: all).
        Returns the number of ids appended. The bounds are checked, then used without the GIL: neither data nor
        bounds may change during the call (Tokenizer passes its own)."""
        cdef Py_ssize_t n_bounds = bounds.shape[0]
        cdef Py_ssize_t k, s, n, before = out.ids.size()
        cdef const uint8_t* base
        if stop < 0 or stop > n_bounds - 1:
            stop = n_bounds - 1
        if stop <= 0:
            return 0
        if bounds[0] < 0 or bounds[stop] > data.shape[0]:
            raise ValueError("pre-token bounds outside the data")
        for k in range(stop):
            if bounds[k + 1] < bounds[k]:
                raise ValueError("pre-token bounds must not decrease")
        base = &data[0] if data.shape[0] else NULL
        try:
            if bounds[stop] - bounds[0] >= NOGIL_BYTES:
                with nogil:
                    self._encode_ends(base, bounds[0], &bounds[1], stop, base + bounds[stop], &out.ids)
            else:
                self._encode_ends(base, bounds[0], &bounds[1], stop, base + bounds[stop], &out.ids)
        except BaseException:
            out.ids.resize(before)
            raise
        return out.ids.size() - before

    cdef int _encode_ends(self, const uint8_t* s, Py_ssize_t start, const int64_t* ends, Py_ssize_t count,
                          const uint8_t* end, vector[int32_t]* out) except -1 nogil:
        """Append the ids of the pre-tokens s[start:ends[0]], s[ends[0]:ends[1]], ..., count of them (empty ones
        are skipped; the text goes on to end). Each is a single byte's id, the ids of the table, or merged (and
        then cached) by _merge_pretoken. The one loop over pre-tokens, the hot path of encoding: the look-ups are
        written out in it, the rare cases are calls."""
        cdef const uint8_t* p
        cdef Py_ssize_t k, n
        cdef const PieceSlot* slot
        cdef HotSlot* hot
        cdef uint64_t h, prefix
        cdef int32_t id_
        for k in range(count):
            p = s + start
            n = ends[k] - start
            start = ends[k]
            if n <= 0:
                continue
            if n == 1:
                id_ = self.r.byte_ids[p[0]]
                if id_ < 0:
                    return _no_token_for_byte(p[0])
                out.push_back(id_)
                continue
            h = 0
            prefix = 0
            if n <= self.lookup_limit:
                h = hash_key(p, n, end, &prefix)
                if n <= 8:
                    hot = &self.hot[(h >> 20) & (HOT_SLOTS - 1)]
                    if hot.key_len == n and hot.prefix == prefix:
                        out.push_back(hot.value)
                        continue
                slot = self._find(h, prefix, p, n)
                if slot != NULL:
                    if slot.n_ids == 1:
                        out.push_back(<int32_t>slot.value)
                        if n <= 8:
                            hot.prefix = prefix
                            hot.key_len = <int32_t>n
                            hot.value = slot.value
                    else:
                        append_ids(out, self.cached_ids.data() + slot.value,
                                   self.cached_ids.data() + slot.value + slot.n_ids)
                    continue
            self._merge_pretoken(p, n, h, prefix, out)
        return 0

    cdef int _merge_pretoken(self, const uint8_t* p, Py_ssize_t n, uint64_t h, uint64_t prefix,
                             vector[int32_t]* out) except -1 nogil:
        """Append the ids of the pre-token p[0:n] (n >= 2, not in the table), merged, and cache them (h and
        prefix: from hash_key, when n <= lookup_limit)."""
        if <Py_ssize_t>self.scratch.size() < n:
            if n > INT32_MAX:               # refused (merge_piece's limit) before asking for 4 bytes a byte of it
                return _piece_too_long(n)
            self.scratch.resize(n)
        cdef Py_ssize_t count = merge_piece(&self.r, p, n, self.scratch.data())
        append_ids(out, self.scratch.data(), self.scratch.data() + count)
        if n <= MAX_CACHED_PIECE:
            self._cache(h, prefix, p, n, self.scratch.data(), count)
        return 0

    cdef int _encode_piece(self, const uint8_t* s, Py_ssize_t n, Segmenter seg, vector[int32_t]* out) except -1 nogil:
        """Append the ids of s[0:n], valid UTF-8 without special tokens: scanned by the native pre-tokenizer
        (seg's tables and kind) SCAN_BLOCK pre-tokens at a time (the scanner resumes where it stopped, so no
        cut is needed)."""
        cdef int64_t ends[SCAN_BLOCK]
        cdef Py_ssize_t i = 0, start, count
        while i < n:
            count = 0
            start = i
            i = scan_block(seg.t, s, i, n, seg.kind, ends, &count, SCAN_BLOCK)
            self._encode_ends(s, start, ends, count, s + n, out)
        return 0

    cdef Py_ssize_t _encode_piece_unfinished(self, const uint8_t* s, Py_ssize_t n, Segmenter seg,
                                             vector[int32_t]* out) except -1 nogil:
        """_encode_piece for text that may continue: only the pre-tokens that text still to come cannot change
        (the scanner's rule, bpe_fast._scan.scan_block_final); returns where they end."""
        cdef int64_t ends[SCAN_BLOCK]
        cdef Py_ssize_t i = 0, start, count
        while i < n:
            count = 0
            start = i
            i = scan_block_final(seg.t, s, i, n, seg.kind, ends, &count, SCAN_BLOCK)
            self._encode_ends(s, start, ends, count, s + n, out)
            if count < SCAN_BLOCK:
                return i
        return n

    cdef Py_ssize_t _encode_utf8(self, const uint8_t* s, Py_ssize_t n, Segmenter seg, SpecialMatcher m,
                                 bint final, vector[int32_t]* out) except -1 nogil:
        """Append the ids of the valid UTF-8 text s[0:n]. Returns how many bytes were encoded: n when final,
        else those before the last point that text still to come cannot change (see StreamEncoder). m is
        seg.specials (passed in, as the GIL may be released).

        Special tokens are cut out with m. When the text may continue, a special token is final only if it
        starts before `undecided`, the first place from which the rest of the text is a proper prefix of a
        special token (a longer one could still be completed there); the ordinary text before `undecided` is
        then encoded up to its last safe cut."""
        cdef Py_ssize_t pos = 0, at, end, index = 0, undecided = n
        if m is None:
            if final:
                self._encode_piece(s, n, seg, out)
                return n
            return self._encode_piece_unfinished(s, n, seg, out)
        if not final:
            undecided = m.prefix_start(s, 0, n)
        while True:
            at = m.next_final(s, pos, n, &undecided, &index)
            if at >= undecided:
                break
            end = m.text_end(s, pos, at, index)       # (before the white space a token with lstrip takes)
            if end > pos:
                self._encode_piece(s + pos, end - pos, seg, out)
            out.push_back(seg.special_ids[index])
            pos = at + m.off[index + 1] - m.off[index]
        if final:
            self._encode_piece(s + pos, n - pos, seg, out)
            return n
        return pos + self._encode_piece_unfinished(s + pos, m.held(s, pos, undecided) - pos, seg, out)

    cdef Py_ssize_t _encode_bytes(self, const uint8_t* s, Py_ssize_t n, Segmenter seg, bint final,
                                  vector[int32_t]* out) except -1:
        """_encode_utf8 without the GIL when the text is long (NOGIL_BYTES), so other threads run meanwhile.
        On an error, out is as it was.

        A long text's ids get room first: one id every two bytes (most text takes three or more bytes an id),
        so the vector is not copied as it doubles. Room asked for and not filled is never touched, and a fresh
        page costs (zeroing and faulting it in) about 1.5 ms a MB here where rewriting one costs 0.15: a vector
        grown by doubling touched twice the pages of its ids (o200k_base's first encode of 20 MB of real text,
        6 million ids: 6% faster with the room). At least doubling, so repeated calls on one vector stay linear."""
        cdef SpecialMatcher m = seg.specials
        cdef Py_ssize_t before = out.size(), done
        cdef size_t want
        if n >= RESERVE_BYTES:
            want = out.size() + <size_t>min(n // 2, MAX_RESERVE_IDS)
            if want > out.capacity():
                out.reserve(max(want, 2 * out.capacity()))
                # the room not yet written, on huge pages: one fault (and one zeroing) every 2 MB, not every 4 KB
                huge_pages(out.data() + out.size(), (out.capacity() - out.size()) * sizeof(int32_t))
        try:
            if n >= NOGIL_BYTES:
                with nogil:
                    done = self._encode_utf8(s, n, seg, m, final, out)
            else:
                done = self._encode_utf8(s, n, seg, m, final, out)
        except BaseException:
            out.resize(before)
            raise
        self._trim_scratch()
        return done

    cdef int _trim_scratch(self) except -1 nogil:
        """Give back the scratch, if a long pre-token grew it past SCRATCH_KEPT: each call that encodes ends
        with this (encode, encode_documents_into, a thread's share of encode_batch), so that an encoder does
        not keep 4 bytes a byte of the longest pre-token it ever merged (encode_batch of a 50 MB one kept
        190 MB in its thread's core)."""
        if self.scratch.capacity() > SCRATCH_KEPT:
            self.scratch.clear()
            self.scratch.shrink_to_fit()
        return 0

    cpdef list encode_text(self, str text, Segmenter seg, list id_objects):
        """The ids of `text` as a new list of int (id_objects[i] is the int i), in one native pass: UTF-8,
        special tokens, pre-tokens, merges. Lone surrogates raise UnicodeEncodeError."""
        if text is None or seg is None or id_objects is None:
            raise TypeError("encode_text takes a str, a Segmenter and a list")
        cdef const uint8_t* data
        cdef Py_ssize_t n
        cdef vector[int32_t] ids
        holder = _utf8_holder(text, &data, &n)
        self._encode_bytes(data, n, seg, True, &ids)
        return _id_list(ids.data(), ids.size(), id_objects)

    def encode_text_into(self, IdBuffer out not None, str text not None, Segmenter seg not None):
        """encode_text, appending to `out` instead. Returns the number of ids appended."""
        cdef const uint8_t* data
        cdef Py_ssize_t n, before = out.ids.size()
        holder = _utf8_holder(text, &data, &n)
        self._encode_bytes(data, n, seg, True, &out.ids)
        return out.ids.size() - before

    def encode_utf8_into(self, IdBuffer out not None, data, Segmenter seg not None):
        """encode_text_into for UTF-8 bytes (or a bytes-like object of them), which the caller has checked are
        valid and which must not change during the call (they are read without the GIL). Returns the number of
        ids appended."""
        cdef Py_ssize_t before = out.ids.size(), n
        cdef const uint8_t* s
        holder = _bytes_pointer(data, &s, &n)
        if n == 0:
            return 0
        self._encode_bytes(s, n, seg, True, &out.ids)
        return out.ids.size() - before

    def encode_documents_into(self, IdBuffer out not None, const uint8_t[::1] data, const int64_t[::1] bounds,
                              Segmenter seg not None, int64_t separator=-1):
        """encode_utf8_into for each document data[bounds[k]:bounds[k + 1]] in turn (bounds rising from 0 to
        len(data), each document valid UTF-8: checked by the caller), `separator` (an id, unless negative) after
        each: one call for many short documents, where a call each cost more than encoding them. Returns the
        number of ids appended; on an error, out is as it was."""
        cdef Py_ssize_t k, n = bounds.shape[0] - 1, before = out.ids.size()
        cdef int64_t start = 0, stop, total = data.shape[0]
        cdef bint bad = False
        cdef SpecialMatcher m = seg.specials
        if n < 0 or separator >= 2 ** 31:
            raise ValueError("bounds must rise from 0 to len(data)" if n < 0 else
                             f"separator {separator} is not an int32 id")
        try:
            with nogil:
                bad = bounds[0] != 0 or bounds[n] != total
                for k in range(n):
                    if bad:
                        break
                    stop = bounds[k + 1]            # (each bound read once: checked, then used)
                    if stop < start or stop > total:
                        bad = True
                        break
                    if stop > start:
                        self._encode_utf8(&data[0] + start, stop - start, seg, m, True, &out.ids)
                    if separator >= 0:
                        out.ids.push_back(<int32_t>separator)
                    start = stop
        except BaseException:
            out.ids.resize(before)
            raise
        finally:
            self._trim_scratch()
        if bad:
            out.ids.resize(before)
            raise ValueError("bounds must rise from 0 to len(data)")
        return out.ids.size() - before

    cdef int _encode_texts(self, const uint8_t* base, const int64_t* offsets, Py_ssize_t n_texts, Segmenter seg,
                           SpecialMatcher m, vector[int32_t]* out, Py_ssize_t* ends) except -1 nogil:
        """Append the ids of each text base[offsets[k]:offsets[k+1]] to out, each as _encode_utf8 does it (its
        own special-token cuts and pre-tokens); ends[k] is where text k's ids end."""
        cdef Py_ssize_t k
        for k in range(n_texts):
            if offsets[k + 1] > offsets[k]:
                self._encode_utf8(base + offsets[k], offsets[k + 1] - offsets[k], seg, m, True, out)
            ends[k] = out.size()
        return 0

    # ------------------------------------------------------------------------------------------ inspection

    def stats(self):
        """Sizes of the tables and the cache (for tests and benchmarks)."""
        result = self.tables.stats()
        result.update({"cached": self.n_cached, "cache_resets": self.n_resets, "cached_bytes": self.cached_bytes,
                       "cache_growths": self.n_growths})
        return result


cdef void _texts_to_utf8(const int* kinds, const void* const* buffers, const Py_ssize_t* lengths, Py_ssize_t n_texts,
                        uint8_t* out, int64_t* offsets) noexcept nogil:
    """The UTF-8 of each text (a str's kind, buffer and length, see str_to_utf8) one after another into out;
    text k's is out[offsets[k]:offsets[k + 1]]."""
    cdef Py_ssize_t k, at = 0
    offsets[0] = 0
    for k in range(n_texts):
        at += str_to_utf8(kinds[k], buffers[k], lengths[k], out + at)
        offsets[k + 1] = at


def pull_utf8(iterator, Py_ssize_t budget, out, field=None, bint batches=False):
    """For bpe_fast.inputs (an iterable of documents read in batches): pull items from `iterator` while each is
    a plain str without a lone surrogate or a plain bytes (or, with `field`, a plain dict whose `field` holds
    one), until their UTF-8 reaches `budget` bytes or the iterator ends, writing their UTF-8 (bytes as they are:
    the counting workers check them) one after another into `out` (a writable buffer of bytes, such as a shared
    slot that the workers read). With `batches`, an item that is a plain list (or, with `field`, a plain dict
    whose `field` holds one) is a batch of documents: its items are pulled in its place as the iterator's are
    (a batch inside it is not one: handed back, state 2). Returns (written, lengths, state, item, rest): the
    bytes written; each document's UTF-8 length (int64 array); `rest`: when the pull stopped inside a batch, an
    iterator over the batch's items not yet pulled (pull from it, without `batches`, before the iterator again),
    else None; state 0: the budget was reached, 1: the iterator is exhausted, 2: `item` was pulled
    and is not taken (none of those, a dict without the field, a str with a lone surrogate, bytes that do not
    fit what is left of `out`, or a str whose UTF-8 might not, at the most bytes a character of its str's kind
    takes: the caller converts it, or names the error), 3: the iterator raised `item` (an Exception; what was
    pulled before it is returned, so that an earlier item's invalid UTF-8, found where the bytes are counted,
    comes first, as it does when the two are in different batches). The Python loop this replaces cost about a
    microsecond an item in the calling process, which feeds all the counting workers (items handed back one at
    a time cost it about 5 us each: 16 s of CPU for 3.2 million bytes documents); writing into a buffer used
    again and again, rather than a fresh bytes object a batch whose pages the kernel must fault in, saves most
    of the rest (about 1 ns a byte against 0.2 ns for the conversion).

    A batch handed over one Python call at a time cost the caller about 5 us a batch (a million batches of one
    document: 7 s, against 0.7 s for the same documents as str items).

    Worked example: pull_utf8(iter(["ab", {"t": b"\xc3\xa9"}, 3]), 100, buf, "t") -> (4, [2, 2], 2, 3, None), buf
    starting b"ab\xc3\xa9"."""
    cdef vector[int64_t] lengths
    cdef Py_ssize_t n, at = 0, written, need
    cdef int kind, state = 1
    cdef uint8_t[::1] target = out
    cdef Py_ssize_t room = target.shape[0]
    cdef uint8_t* base = &target[0] if room else NULL
    cdef object end = _PULL_END
    cdef PyObject* found
    item = None
    rest = None                             # an iterator over the batch being pulled
    source = iterator
    try:
        while at < budget:
            obj = next(source, end)
            if obj is end:
                if rest is None:
                    break
                rest, source = None, iterator   # the batch is done: on with the iterator
                continue
            value = obj
            if field is not None and PyDict_CheckExact(obj):
                found = PyDict_GetItemWithError(obj, field)
                if found == NULL:               # no such field: the caller names it
                    state, item = 2, obj
                    break
                value = <object>found
            if batches and rest is None and PyList_CheckExact(value):
                rest = source = iter(value)
                continue
            if PyBytes_CheckExact(value):
                n = PyBytes_GET_SIZE(value)
                if n > room - at:
                    state, item = 2, obj
                    break
                if n:
                    memcpy(base + at, PyBytes_AS_STRING(value), n)
                at += n
                lengths.push_back(n)
                continue
            if not PyUnicode_CheckExact(value):
                state, item = 2, obj
                break
            bpe_fast_unicode_ready(value)
            n = PyUnicode_GET_LENGTH(value)
            kind = 0 if PyUnicode_IS_ASCII(value) else PyUnicode_KIND(value)
            need = _utf8_room(kind, n)
            if need > room - at:
                state, item = 2, obj
                break
            written = str_to_utf8_strict(kind, PyUnicode_DATA(value), n, base + at)
            if written < 0:                     # a lone surrogate: the caller names it
                state, item = 2, obj
                break
            at += written
            lengths.push_back(written)
        else:
            state = 0
    except Exception as exc:        # the iterator raised (or a dict's look-up): what was pulled is returned,
        state, item = 3, exc        # so that the caller hands it on before raising this
    sizes = np.empty(lengths.size(), dtype=np.int64)
    cdef int64_t[::1] view = sizes
    if lengths.size():
        memcpy(&view[0], lengths.data(), lengths.size() * sizeof(int64_t))
    return at, sizes, state, item, rest


_PULL_END = object()

cdef extern from *:
    """
    #include <vector>
    #include <thread>
    #include <chrono>
    // One group of an encode_batch job (BatchJob): the ids of its pieces one after another, where each piece's
    // ids end, the distinct ids with their counts (when counted, else empty: references are then added id by
    // id) and the first id with no int object (-1: none). state: 0 waiting, 1 encoded, 2 its encoder failed; read
    // and written atomically (a thread encodes the group, the calling thread makes its lists).
    struct BpeFastGroup {
        std::vector<int32_t> ids;
        std::vector<Py_ssize_t> ends;
        std::vector<int32_t> distinct;
        std::vector<Py_ssize_t> counts;
        Py_ssize_t bad = -1;
        Py_ssize_t flagged = -1;                        // the first piece holding a disallowed token (-1: none)
        bool counted = false;                           // references to add by distinct id and count
        int state = 0;
        void release() { *this = BpeFastGroup(); }      // its memory freed
    };
    static inline void bpe_fast_pause() { std::this_thread::sleep_for(std::chrono::microseconds(20)); }
    // 1 if needle[0:m] (m >= 1) occurs in hay[0:n], else 0: memchr for its first byte, then memcmp.
    static inline int bpe_fast_contains(const uint8_t* hay, Py_ssize_t n, const uint8_t* needle, Py_ssize_t m) {
        const uint8_t* end = hay + n;
        for (const uint8_t* p = hay; end - p >= m; p++) {
            p = (const uint8_t*)memchr(p, needle[0], (size_t)(end - p - m + 1));
            if (p == NULL)
                return 0;
            if (memcmp(p, needle, (size_t)m) == 0)
                return 1;
        }
        return 0;
    }
    """
    cdef cppclass BpeFastGroup:
        vector[int32_t] ids
        vector[Py_ssize_t] ends
        vector[int32_t] distinct
        vector[Py_ssize_t] counts
        Py_ssize_t bad
        Py_ssize_t flagged
        bint counted
        int state
        void release()
    void pause_briefly "bpe_fast_pause"() noexcept nogil
    bint utf8_contains "bpe_fast_contains"(const uint8_t* hay, Py_ssize_t n, const uint8_t* needle,
                                          Py_ssize_t m) noexcept nogil


cdef const char* _common_handler(errors):
    """errors as the C string bytes.decode would pass on, when it is one of the handlers every Python has (the
    ones decode's callers give); else NULL (bytes.decode itself then checks and looks errors up)."""
    if type(errors) is not str:
        return NULL
    if errors == "replace":
        return "replace"
    if errors == "strict":
        return "strict"
    if errors == "ignore":
        return "ignore"
    return NULL


def utf8_text(bytes data not None, errors):
    """data.decode("utf-8", errors). Valid UTF-8 of DECODE_OWN_BYTES or more is measured (utf8_measure) and
    written by bpe_fast into a new str of its final kind, on huge pages, without the GIL when long: a decoded
    text's fresh pages cost a first decode more than the decoding (20 MB of the real text, a str of kind 4: 80
    MB), and CPython's decoder allocates as it goes (starting narrow, widening at the first wider code point),
    where no hint can be given. Anything else (and errors, which valid UTF-8 never needs) is CPython's."""
    cdef const uint8_t* s = <const uint8_t*>PyBytes_AS_STRING(data)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(data), chars = 0, bad
    cdef uint8_t widest = 0
    if n < DECODE_OWN_BYTES:
        return data.decode("utf-8", errors)
    b"".decode("utf-8", errors)     # bytes.decode's checks of errors (a str, no NUL, no surrogate; -X dev: known)
    if n >= NOGIL_BYTES:
        with nogil:
            bad = utf8_measure(s, n, &chars, &widest)
    else:
        bad = utf8_measure(s, n, &chars, &widest)
    if bad >= 0:
        return data.decode("utf-8", errors)
    text = PyUnicode_New(chars, 127 if widest == 0 else 255 if widest < 0xC4 else 0xFFFF if widest < 0xF0
                         else 0x10FFFF)
    cdef void* out = PyUnicode_DATA(text)
    cdef int kind = PyUnicode_KIND(text)
    huge_pages(out, chars * kind)
    if n >= NOGIL_BYTES:
        with nogil:
            utf8_to_str(kind, widest == 0, s, n, out)
    else:
        utf8_to_str(kind, widest == 0, s, n, out)
    return text


def items_at(list table not None, ids):
    """[table[i] for i in ids] when ids is a list or tuple of ints (exactly int: not bool, not a NumPy integer)
    that are all indexes of table with something other than None there; else None (the caller goes the long way,
    for its exceptions). Encoding.decode_tokens_bytes's, table holding each id's bytes: a look-up an id, no call.
    Nothing here runs Python code, so another thread cannot change ids meanwhile."""
    cdef list seq
    if type(ids) is list:
        seq = <list>ids
    elif type(ids) is tuple:
        seq = list(ids)
    else:
        return None
    cdef Py_ssize_t n = PyList_GET_SIZE(seq), size = PyList_GET_SIZE(table), k
    cdef long long value
    cdef int overflow = 0
    cdef PyObject* item
    cdef PyObject* found
    result = PyList_New(n)
    for k in range(n):
        item = PyList_GET_ITEM(seq, k)
        if type(<object>item) is not int:
            return None
        value = PyLong_AsLongLongAndOverflow(<object>item, &overflow)
        if overflow or value < 0 or value >= size:
            return None
        found = PyList_GET_ITEM(table, <Py_ssize_t>value)
        if <object>found is None:
            return None
        Py_INCREF(<object>found)
        PyList_SET_ITEM(result, k, <object>found)
    return result


def utf8_searchable(token):
    """True if the str (or str subclass: tiktoken takes them) `token` can be searched for in a text's UTF-8 as
    BatchJob makes it (lone surrogates U+FFFD, a surrogate pair its character): not empty, and no U+FFFD,
    surrogate or character above U+FFFF in it, so it occurs there exactly where it occurs in the str."""
    if not isinstance(token, str):
        raise TypeError(f"a disallowed special token must be a str, not {type(token).__name__}")
    return bool(token) and all(c < "\ud800" or "\ue000" <= c <= "\uffff" and c != "\ufffd" for c in token)


class DisallowedFound(Exception):
    """Raised by BatchJob.collect: texts[index] is the first text holding one of the job's disallowed tokens
    (the caller raises tiktoken's error for it)."""

    @property
    def index(self):
        return self.args[0]


@cython.final
cdef class BatchJob:
    """encode_batch of a sequence of str on several threads at once, the lists made as the groups finish.

    BatchJob(texts, seg, group_bytes, specials, id_objects) cuts the texts into pieces and the pieces into
    groups of about group_bytes of UTF-8 at most (at least one piece each). A text longer than group_bytes is
    cut into pieces of about group_bytes where chunking.py's rule allows (before a space that follows a
    printable ASCII character, no special token of `specials`, a tuple of str, over the cut): the built-in
    patterns' pre-tokens never cross such a cut, so the pieces' ids put together are the text's. Every thread
    taking part calls work(core) with an encoder of its own: without the GIL, it claims the next group not yet
    claimed, makes its pieces' UTF-8 (lone surrogates become U+FFFD, as encode does) and encodes them, until
    none is left. The calling thread calls collect(core) instead: it encodes groups too, and between them, with
    the GIL, makes the lists (of id_objects[i], the int i) of the groups finished so far, in order, so that
    making lists (and the garbage collector's passes over them) runs while the other threads encode; it
    returns the list of the ids of every text. The texts are held for the job's life: their buffers are read
    without the GIL.

    `disallowed` (a tuple of str, none holding U+FFFD or a character above U+FFFF, whose UTF-8 cannot arise
    from surrogates): each piece's UTF-8 is searched for them, by the thread that encodes it, and collect
    raises DisallowedFound with the index of the first text (in order) holding one. No cut falls inside one.

    Worked example (tokenizer with "ab" -> 256): texts ["ab", "b", "abab"], group_bytes 3 -> groups ["ab",
    "b"] and ["abab"]; collect gives [[256], [98], [256, 256]]. With group_bytes 4, "ab! ab! ab" is cut
    into "ab! ab!" and " ab" (the first space after a printable character at or after its 4th character).
    """

    cdef tuple items
    cdef Segmenter seg
    cdef list id_objects
    cdef Py_ssize_t n_objects               # len(id_objects)
    cdef bint counting                      # each group's ids counted, their references added by count
    cdef vector[int] kinds                  # piece p: its str's kind (0: ASCII), buffer and length
    cdef vector[const void*] buffers
    cdef vector[Py_ssize_t] lengths
    cdef vector[Py_ssize_t] text_of         # piece p is part of text text_of[p]
    cdef vector[uint8_t] whole              # 1: piece p is its whole text; else 2 for its last piece, 0 before
    cdef vector[Py_ssize_t] starts          # group g holds pieces starts[g]:starts[g + 1]
    cdef vector[Py_ssize_t] bounds          # at most this many UTF-8 bytes in group g
    cdef vector[BpeFastGroup] groups
    cdef Py_ssize_t next_group              # the next group to claim (atomically incremented)
    cdef int failed                         # set (atomically) once a thread has failed: the others stop
    cdef readonly Py_ssize_t n_groups
    cdef readonly Py_ssize_t n_pieces
    cdef readonly Py_ssize_t total_bytes    # at most this many UTF-8 bytes in all
    cdef list disallowed_utf8               # the UTF-8 of the disallowed tokens (bytes), held for:
    cdef vector[const uint8_t*] disallowed_data
    cdef vector[Py_ssize_t] disallowed_sizes

    def __cinit__(self, texts, Segmenter seg not None, Py_ssize_t group_bytes, tuple specials not None,
                  list id_objects not None, tuple disallowed not None=()):
        cdef Py_ssize_t n_texts, k, n, size, group = 0, at, cut, target, reach = 0
        cdef int kind, per_unit
        cdef uint8_t role
        cdef const uint8_t* data
        if group_bytes < 1:
            raise ValueError(f"group_bytes must be at least 1, got {group_bytes}")
        self.disallowed_utf8 = []
        for token in disallowed:
            if not utf8_searchable(token):
                raise ValueError(f"a disallowed token searched natively must be a str without U+FFFD or a "
                                 f"character above U+FFFF, got {token!r}")
            encoded = (<str>token).encode("utf-8")
            self.disallowed_utf8.append(encoded)
            self.disallowed_data.push_back(<const uint8_t*>PyBytes_AS_STRING(encoded))
            self.disallowed_sizes.push_back(len(encoded))
        specials = specials + disallowed         # no cut inside any of them
        for special in specials:                # the longest special token, twice: see _piece_cut
            reach = max(reach, 2 * len(<str>special))
        self.items = tuple(texts)
        self.seg = seg
        self.id_objects = id_objects
        self.n_objects = PyList_GET_SIZE(id_objects)
        n_texts = len(self.items)
        self.starts.push_back(0)
        for k in range(n_texts):
            text = self.items[k]
            if not PyUnicode_Check(text):
                raise TypeError(f"text must be a str, got {type(text).__name__} (texts[{k}])")
            bpe_fast_unicode_ready(text)
            n = PyUnicode_GET_LENGTH(text)
            kind = 0 if PyUnicode_IS_ASCII(text) else PyUnicode_KIND(text)
            data = <const uint8_t*>PyUnicode_DATA(text)
            per_unit = _utf8_room(kind, 1)                                  # UTF-8 bytes a unit, at most
            target = max(1, group_bytes // per_unit)                        # units in a piece
            at = 0
            while True:
                cut = _piece_cut(text, kind, data, at + target, n, specials, reach) if n - at > target else -1
                self.kinds.push_back(kind)
                self.buffers.push_back(data + at * (1 if kind == 0 else kind))
                self.lengths.push_back((n if cut < 0 else cut) - at)
                self.text_of.push_back(k)
                # (through a typed local: Cython 3 pushes the expression itself through a dangling reference)
                role = 1 if at == 0 and cut < 0 else 2 if cut < 0 else 0
                self.whole.push_back(role)
                size = ((n if cut < 0 else cut) - at) * per_unit
                if group and group + size > group_bytes:
                    self.starts.push_back(self.kinds.size() - 1)
                    self.bounds.push_back(group)
                    group = 0
                group += size
                self.total_bytes += size
                if cut < 0:
                    break
                at = cut
        self.n_pieces = self.kinds.size()
        if self.n_pieces:
            self.starts.push_back(self.n_pieces)
            self.bounds.push_back(group)
        self.n_groups = self.bounds.size()
        self.groups.resize(self.n_groups)
        # counting pays (one reference write per distinct id, not per id) once there are ids enough
        self.counting = self.total_bytes >= self.n_objects // 4

    cdef int _encode_group(self, BPECore core, Py_ssize_t g, vector[uint8_t]* data, vector[int64_t]* offsets,
                           vector[int32_t]* counts) except -1 nogil:
        """Encode group g into self.groups[g] (data, offsets: the caller's scratch; counts: empty or zeros,
        sized len(id_objects), left zeros)."""
        cdef Py_ssize_t first = self.starts[g], n_pieces = self.starts[g + 1] - self.starts[g], k, t
        cdef BpeFastGroup* out = &self.groups[g]
        data.resize(self.bounds[g] + 1)
        offsets.resize(n_pieces + 1)
        _texts_to_utf8(self.kinds.data() + first, self.buffers.data() + first, self.lengths.data() + first,
                       n_pieces, data.data(), offsets.data())
        for k in range(n_pieces if not self.disallowed_data.empty() else 0):
            for t in range(<Py_ssize_t>self.disallowed_data.size()):
                if utf8_contains(data.data() + offsets[0][k], offsets[0][k + 1] - offsets[0][k],
                                 self.disallowed_data[t], self.disallowed_sizes[t]):
                    out.flagged = first + k             # the batch fails: nothing more to encode here
                    return 0
        out.ends.resize(n_pieces)
        out.ids.reserve(offsets[0][n_pieces] // 3 + 16)    # about as many ids as that, most often fewer
        core._encode_texts(data.data(), offsets.data(), n_pieces, self.seg, self.seg.specials, &out.ids,
                           out.ends.data())
        # (int32 counts: a group of 2^31 ids or more, a text that could not be cut, has its references added by id)
        out.counted = self.counting and out.ids.size() < INT32_MAX
        out.bad = _count_ids(out.ids.data(), out.ids.size(), self.n_objects, out.counted, counts, &out.distinct)
        out.counts.resize(out.distinct.size())
        for k in range(<Py_ssize_t>out.distinct.size()):
            out.counts[k] = counts[0][out.distinct[k]]
            counts[0][out.distinct[k]] = 0
        return 0

    def work(self, BPECore core not None):
        """Encode groups with `core` (this thread's own) until none is left to claim."""
        cdef vector[uint8_t] data
        cdef vector[int64_t] offsets
        cdef vector[int32_t] counts             # id -> occurrences in a group (int32: half the cache lines)
        cdef Py_ssize_t g = -1
        try:
            with nogil:
                while True:
                    g = claim_next(&self.next_group)
                    if g >= self.n_groups:
                        break
                    if atomic_load(&self.failed):       # given up: whoever waits for it learns why
                        atomic_store(&self.groups[g].state, 2)
                        break
                    self._encode_group(core, g, &data, &offsets, &counts)
                    atomic_store(&self.groups[g].state, 1)
                    g = -1
        except BaseException:
            atomic_store(&self.failed, 1)
            if 0 <= g < self.n_groups:
                atomic_store(&self.groups[g].state, 2)
            raise
        finally:
            core._trim_scratch()

    cdef int _make_lists(self, Py_ssize_t g, list result, vector[int32_t]* pending) except -1:
        """Put the lists of group g's texts into result (the GIL held); the ids of a text cut into pieces
        gather in pending until its last piece."""
        cdef BpeFastGroup* group = &self.groups[g]
        cdef Py_ssize_t p, start = 0, n, held
        cdef const int32_t* ids
        if group.flagged >= 0:
            raise DisallowedFound(self.text_of[group.flagged])
        if group.bad >= 0:
            raise ValueError(f"id {group.ids[group.bad]} has no int object")
        if group.counted:
            add_references(self.id_objects, group.distinct.data(), group.distinct.size(), group.counts.data())
        else:
            add_each_reference(self.id_objects, group.ids.data(), group.ids.size())
        for p in range(self.starts[g], self.starts[g + 1]):
            ids = group.ids.data() + start
            n = group.ends[p - self.starts[g]] - start
            start += n
            if self.whole[p] != 1:
                # (resize and memcpy, not insert: a second vector[int32_t] range insert in this module makes
                # the compiler build the encoder's own out of line, 2% more instructions to encode a text)
                held = pending.size()
                pending.resize(held + n)
                memcpy(pending.data() + held, ids, n * sizeof(int32_t))
                if self.whole[p] == 0:
                    continue
                ids = pending.data()
                n = pending.size()
            item = PyList_New(n)                # (a MemoryError here leaves some ints a few references too many)
            fill_list_owned(item, ids, n, self.id_objects)
            Py_INCREF(item)
            PyList_SET_ITEM(result, self.text_of[p], item)
            pending.clear()
        group.release()
        return 0

    def collect(self, BPECore core not None):
        """Take part as work does, and make the lists (the GIL held) of each group once it and those before it
        are encoded. Returns the list of every text's ids, or None when another thread failed (the caller
        raises that thread's error); in either case no thread claims a group after this returns."""
        cdef vector[uint8_t] data
        cdef vector[int64_t] offsets
        cdef vector[int32_t] counts             # id -> occurrences in a group (int32: half the cache lines)
        cdef vector[int32_t] pending            # the ids of a text's pieces so far
        cdef Py_ssize_t done = 0, g
        cdef int state
        cdef bint release = self.total_bytes >= NOGIL_BYTES, finished = False
        result = PyList_New(len(self.items))
        try:
            while done < self.n_groups:
                state = atomic_load(&self.groups[done].state)
                if state == 2 or atomic_load(&self.failed):
                    return None
                if state == 1:
                    self._make_lists(done, result, &pending)
                    done += 1
                    continue
                g = claim_next(&self.next_group)
                if g < self.n_groups:
                    if release:
                        with nogil:
                            self._encode_group(core, g, &data, &offsets, &counts)
                    else:
                        self._encode_group(core, g, &data, &offsets, &counts)
                    atomic_store(&self.groups[g].state, 1)
                else:
                    with nogil:
                        while atomic_load(&self.groups[done].state) == 0:
                            pause_briefly()
            finished = True
            return result
        finally:
            atomic_store(&self.failed, 1)
            if not finished:                    # the ids of a text whose last piece never came give back
                drop_references(self.id_objects, pending.data(), pending.size())   # their references
            core._trim_scratch()

    def cancel(self):
        """Stop the job: no thread claims a group after this (for the caller's error paths)."""
        atomic_store(&self.failed, 1)


cdef inline Py_UCS4 _unit_at(int kind, const uint8_t* data, Py_ssize_t i) noexcept nogil:
    if kind <= 1:
        return data[i]
    if kind == 2:
        return (<const uint16_t*>data)[i]
    return (<const uint32_t*>data)[i]


cdef Py_ssize_t _piece_cut(object text, int kind, const uint8_t* data, Py_ssize_t lo, Py_ssize_t n,
                           tuple specials, Py_ssize_t reach) except -2:
    """The first k in [lo, n) where `text` (its kind and buffer) may be cut between pieces that encode
    apart: text[k] a space, text[k - 1] a printable ASCII character (the built-in patterns end a pre-token
    there, see bpe_fast/chunking.py), and no occurrence of one of `specials` (str) starting before k and
    ending after it. The special tokens are matched in the text's UTF-8, where a lone surrogate is U+FFFD and
    a surrogate pair one character, so no cut is made within `reach` (twice the longest special token) units
    of a surrogate: around such a cut the str and what is encoded are the same characters. -1 when there is
    none."""
    cdef Py_ssize_t k, q, size
    cdef Py_UCS4 before, u
    cdef bint covered
    for k in range(max(lo, 1), n):
        if _unit_at(kind, data, k) != 0x20:
            continue
        before = _unit_at(kind, data, k - 1)
        if before < 0x21 or before > 0x7E:
            continue
        covered = False
        if kind >= 2:                           # only a str of 2 or 4 bytes a unit holds surrogates
            for q in range(max(0, k - reach), min(n, k + reach)):
                u = _unit_at(kind, data, q)
                if 0xD800 <= u <= 0xDFFF:
                    covered = True
                    break
            if covered:
                continue
        for special in specials:
            size = len(<str>special)
            if size > 1 and PyUnicode_Find(text, special, max(0, k - size + 1), k + size - 1, 1) >= 0:
                covered = True
                break
        if not covered:
            return k
    return -1


cdef Py_ssize_t _count_ids(const int32_t* ids, Py_ssize_t n, Py_ssize_t n_objects, bint count,
                           vector[int32_t]* counts, vector[int32_t]* distinct) except -2 nogil:
    """Check that every id of ids[0:n] is in [0, n_objects) and, when `count`, append the distinct ones to
    distinct and add their occurrences to counts (empty or n_objects zeros on entry; the caller sets the
    entries of distinct back to zero after). Returns the position of the first id outside, else -1 (-2: no
    memory, MemoryError set)."""
    cdef Py_ssize_t k
    cdef int32_t i
    if not count:
        for k in range(n):
            if ids[k] < 0 or ids[k] >= n_objects:
                return k
        return -1
    if <Py_ssize_t>counts.size() != n_objects:
        counts.assign(n_objects, 0)
    for k in range(n):
        i = ids[k]
        if i < 0 or i >= n_objects:
            return k
        if counts[0][i] == 0:
            distinct.push_back(i)
        counts[0][i] += 1
    return -1


# A Tokenizer keeps at most this many encoders not in use (each holds megabytes of tables and cache): after
# a burst of many threads the others are dropped.
cdef Py_ssize_t _max_spare = max(8, os.cpu_count() or 1)
MAX_SPARE_CORES = _max_spare


@cython.final
cdef class EncoderPool:
    """The encoders (BPECore) of one bpe_fast.Tokenizer that no call is using. Each encoding call takes one
    (take, or a new one when none is spare), has it to itself and gives it back (give), so threads encoding at
    once (the encoder runs without the GIL on long texts) each have their own, with its own cache of
    pre-tokens. At most max_spare encoders are kept: after a burst of many threads the others are dropped.

    New encoders are BPECore(tables, ...) with the pool's cache bounds (by default a cache of 65,536 entries
    and 16 MB that doubles each time it fills, up to 262,144 and 32 MB), or whatever `factory()` returns when
    a factory is set (tests give encoders that record their calls)."""

    cdef readonly BPETables tables
    cdef readonly list id_objects           # encode's lists share these ints (id -> int object)
    cdef list _spare
    cdef readonly Py_ssize_t max_spare
    cdef readonly Py_ssize_t cache_entries
    cdef readonly Py_ssize_t cache_bytes
    cdef readonly Py_ssize_t max_cache_entries
    cdef readonly Py_ssize_t max_cache_bytes
    cdef public object factory              # None, or a callable returning a new BPECore

    def __cinit__(self, BPETables tables not None, list id_objects not None,
                  Py_ssize_t cache_entries=DEFAULT_CACHE_ENTRIES,
                  Py_ssize_t cache_bytes=16 << 20, Py_ssize_t max_spare=-1, Py_ssize_t max_cache_entries=1 << 18,
                  Py_ssize_t max_cache_bytes=32 << 20, PieceTable first_table=None):
        self.tables = tables
        self.id_objects = id_objects
        self.cache_entries = cache_entries
        self.cache_bytes = cache_bytes
        self.max_cache_entries = max_cache_entries
        self.max_cache_bytes = max_cache_bytes
        self.max_spare = _max_spare if max_spare < 0 else max_spare
        self.factory = None
        self._spare = [self.new_core(first_table)]

    def new_core(self, PieceTable table=None):
        """A new encoder (not put in the pool), with `table` (a PieceTable) if it fits."""
        if self.factory is not None:
            return self.factory()
        return BPECore(self.tables, self.cache_entries, self.cache_bytes, self.max_cache_entries,
                       self.max_cache_bytes, table)

    cdef inline BPECore take(self):
        if PyList_GET_SIZE(self._spare):
            return self._spare.pop()
        return self.new_core()

    cdef inline void give(self, BPECore core):
        if PyList_GET_SIZE(self._spare) < self.max_spare:
            self._spare.append(core)

    def set_cache_bounds(self, Py_ssize_t cache_entries, Py_ssize_t cache_bytes,
                         Py_ssize_t max_cache_entries=-1, Py_ssize_t max_cache_bytes=-1):
        """Make encoders made from now on with these cache bounds (fixed, unless maxima are given); the spare
        ones are dropped."""
        self.cache_entries = cache_entries
        self.cache_bytes = cache_bytes
        self.max_cache_entries = max_cache_entries
        self.max_cache_bytes = max_cache_bytes
        del self._spare[:]

    def spare(self):
        """A list of the encoders not in use (a copy)."""
        return list(self._spare)

    def set_spare(self, cores):
        """Make `cores` (BPECore objects) the spare encoders."""
        cdef list checked = []
        for core in cores:
            if not isinstance(core, BPECore):
                raise TypeError(f"an encoder must be a BPECore, got {type(core).__name__}")
            checked.append(core)
        self._spare[:] = checked

    def run(self, call, *args):
        """call(core, *args) on an encoder this call has to itself, given back after."""
        cdef BPECore core = self.take()
        try:
            return call(core, *args)
        finally:
            self.give(core)

    def encode_text(self, str text not None, Segmenter seg not None):
        """BPECore.encode_text on an encoder of the pool: Tokenizer.encode's path, in Cython for the sake of
        short texts, where taking and giving back an encoder costs as much as the encoding."""
        cdef BPECore core = self.take()
        try:
            return core.encode_text(text, seg, self.id_objects)
        finally:
            self.give(core)

    def encode_text_array(self, str text not None, Segmenter seg not None, dtype):
        """encode_text's ids as a new 1-D array of `dtype` (see IdBuffer.take): Tokenizer.encode_to_numpy's path,
        one call (a short text's ids made an array in well under a microsecond more than its list). Lone
        surrogates raise UnicodeEncodeError."""
        return self._encoded_array(text, False, seg, dtype)

    def encode_utf8_array(self, data, Segmenter seg not None, dtype):
        """encode_text_array of UTF-8 bytes (or a bytes-like object of them), which must not change during the
        call (read without the GIL when long), or None when they are not valid UTF-8 (the caller raises
        bytes.decode's error)."""
        cdef Py_ssize_t n, bad = -1
        cdef const uint8_t* s
        holder = _bytes_pointer(data, &s, &n)
        if n >= NOGIL_BYTES:
            with nogil:
                bad = utf8_first_error(s, n)
        elif n:
            bad = utf8_first_error(s, n)
        if bad >= 0:
            return None
        return self._encoded_array(data, True, seg, dtype)

    cdef _encoded_array(self, text, bint utf8, Segmenter seg, dtype):
        """The ids of text (a str, or valid UTF-8 bytes: utf8) as a new array of dtype, by an encoder of the
        pool (through its Python-visible methods: a subclass's, as the tests' watching one, are called)."""
        cdef IdBuffer out = IdBuffer()
        cdef BPECore core = self.take()
        try:
            if utf8:
                core.encode_utf8_into(out, text, seg)
            else:
                core.encode_text_into(out, text, seg)
        finally:
            self.give(core)
        return out.take(dtype)

    def batch_work(self, BatchJob job not None):
        """BatchJob.work on an encoder of the pool (a helping thread's part of encode_batch)."""
        cdef BPECore core = self.take()
        try:
            job.work(core)
        finally:
            self.give(core)

    def batch_collect(self, BatchJob job not None):
        """BatchJob.collect on an encoder of the pool (the calling thread's part of encode_batch)."""
        cdef BPECore core = self.take()
        try:
            return job.collect(core)
        finally:
            self.give(core)


@cython.final
cdef class StreamEncoder:
    """The state of Tokenizer.encode_iterable on the native path: the UTF-8 of the text received but not yet
    encoded (its unfinished tail), and the rule for when to look at it again.

    feed(chunk) appends the chunk's UTF-8 and returns the ids that are final now: those of the text before the
    last point that text still to come cannot change (see BPECore._encode_utf8); that text is dropped. So each
    chunk costs one native call, and its ids come out as soon as the next chunk makes them final. To stay
    linear when one pre-token is longer than many chunks, the tail is looked at again only once the pending
    text has grown to PENDING_GROWTH times what was held back. finish() returns the ids of the rest.

    Worked example (GPT-2 pattern): feed("Hello wor") -> ids of "Hello" (" wor" may go on);
    feed("ld  ") -> ids of " world" ("  " may grow); finish() -> ids of "  ".
    """

    cdef Segmenter seg
    cdef list id_objects
    cdef vector[uint8_t] pending
    cdef vector[int32_t] ids
    cdef Py_ssize_t next_attempt
    cdef readonly Py_ssize_t attempts       # calls that looked for a cut (for tests)
    cdef readonly Py_ssize_t max_held       # the most bytes held back after an attempt (for tests)

    def __cinit__(self, Segmenter seg not None, list id_objects not None):
        self.seg = seg
        self.id_objects = id_objects
        self.next_attempt = 1

    @property
    def pending_bytes(self):
        """How many bytes of text are held, not yet encoded."""
        return self.pending.size()

    def feed(self, BPECore core not None, str text not None):
        """Add `text`; returns the ids that are final now (a list, often empty), encoded with `core` (the
        caller's for this call: a stream holds no encoder between calls). Lone surrogates raise
        UnicodeEncodeError, and nothing is added."""
        return self._feed(core, text)

    cdef list _feed(self, BPECore core, str text):
        self.ids.clear()
        self._feed_into(core, text)
        return self._take_ids()

    cdef int _feed_into(self, BPECore core, str text) except -1:
        """feed, the ids appended to self.ids (on an error, the stream and self.ids are as they were)."""
        cdef const uint8_t* data
        cdef Py_ssize_t n, done, held
        holder = _utf8_holder(text, &data, &n)
        if n == 0:
            return 0
        self.pending.insert(self.pending.end(), data, data + n)
        if <Py_ssize_t>self.pending.size() < self.next_attempt:
            return 0
        self.attempts += 1
        try:
            done = core._encode_bytes(self.pending.data(), self.pending.size(), self.seg, False, &self.ids)
        except BaseException:
            self.pending.resize(self.pending.size() - n)
            raise
        self.pending.erase(self.pending.begin(), self.pending.begin() + done)
        held = self.pending.size()
        self.max_held = max(self.max_held, held)
        self.next_attempt = max(1, PENDING_GROWTH * held)
        return 0

    cdef list _take_ids(self):
        """self.ids as a new list of int; self.ids emptied."""
        result = _id_list(self.ids.data(), self.ids.size(), self.id_objects)
        self.ids.clear()
        return result

    def finish(self, BPECore core not None):
        """The ids of the text still held (all final now: the text has ended), encoded with `core`; the state
        is emptied."""
        self.ids.clear()
        self._finish_into(core)
        return self._take_ids()

    cdef int _finish_into(self, BPECore core) except -1:
        """finish, the ids appended to self.ids."""
        core._encode_bytes(self.pending.data(), self.pending.size(), self.seg, True, &self.ids)
        self.pending.clear()
        self.next_attempt = 1
        return 0


cdef object _END = object()       # StreamIds: the end of the strings


@cython.final
cdef class StreamIds:
    """Tokenizer.encode_iterable's iterator on the native path: the ids of the strings `chunks` gives, encoded as
    one stream (a StreamEncoder) a string at a time, each string on an encoder of `pool` taken for it and given
    back (none is held while the caller has the ids), each id returned as it is asked for: no Python frame and no
    list a string. The rules for the rare strings are the tokenizer's, passed in: as_str(item) for an item that
    is not exactly a str (a str, or TypeError naming it); hold(text) -> (text, carry) for text with a lone
    surrogate (a high surrogate ending it is held back: it may pair with the next string); replace(text), lone
    surrogates as U+FFFD. An error ends the iteration, as a generator's does. One thread at a time: a call
    while another runs (a long string is encoded without the GIL) is a ValueError."""

    cdef EncoderPool pool
    cdef StreamEncoder stream
    cdef object chunks
    cdef object as_str, hold, replace
    cdef str carry                     # a high surrogate that ended the previous string
    cdef Py_ssize_t at                 # stream.ids[at:] are ready and not yet returned
    cdef bint ended, busy

    def __cinit__(self, EncoderPool pool not None, StreamEncoder stream not None, chunks, as_str, hold, replace):
        self.pool = pool
        self.stream = stream
        self.chunks = iter(chunks)
        self.as_str = as_str
        self.hold = hold
        self.replace = replace
        self.carry = ""
        self.stream.ids.clear()

    def __iter__(self):
        return self

    def __next__(self):
        cdef int32_t i
        if self.busy:
            raise ValueError("this encode_iterable iterator is already running in another thread")
        self.busy = True
        try:
            while self.at >= <Py_ssize_t>self.stream.ids.size():
                if self.ended:
                    raise StopIteration
                self.stream.ids.clear()
                self.at = 0
                try:
                    self._next_string()
                except BaseException:
                    self.ended = True
                    self.stream.ids.clear()
                    raise
            i = self.stream.ids[self.at]
            self.at += 1
            if i < 0 or i >= PyList_GET_SIZE(self.stream.id_objects):
                raise ValueError(f"id {i} has no int object")
            return self.stream.id_objects[i]
        finally:
            self.busy = False

    cdef int _next_string(self) except -1:
        """Encode the next string into stream.ids (the rest, at the end)."""
        chunk = next(self.chunks, _END)
        if chunk is _END:
            self.ended = True
            if self.carry:
                self._feed(self.replace(self.carry))
                self.carry = ""
            self._feed(None)
            return 0
        if type(chunk) is not str:
            chunk = self.as_str(chunk)
        if self.carry:
            chunk = self.carry + chunk
            self.carry = ""
        try:
            self._feed(chunk)
        except UnicodeEncodeError:
            chunk, self.carry = self.hold(chunk)
            self._feed(self.replace(chunk))
        return 0

    cdef int _feed(self, str text) except -1:
        """Feed `text` to the stream (None: finish it) on an encoder taken from the pool and given back."""
        cdef BPECore core = self.pool.take()
        try:
            if text is None:
                self.stream._finish_into(core)
            else:
                self.stream._feed_into(core, text)
        finally:
            self.pool.give(core)
        return 0



cdef inline uint64_t piece_table_size(Py_ssize_t n_perm, Py_ssize_t cache_entries) noexcept nogil:
    """The slots of an encoder's whole-pre-token table for its permanent entries and a full cache: at most
    0.6 of them used (table_size's half would round o200k_base's 265,000 entries up to 2^20 slots, 32 MB a
    quarter full, whose making took 19 ms where 2^19 takes 4)."""
    return table_size((n_perm + cache_entries) * 5 // 6)


cdef void _slot_place(vector[PieceSlot]& table, uint64_t mask, const PieceSlot& slot) noexcept nogil:
    cdef uint64_t i = slot.hash & mask
    while table[i].n_ids != 0:
        i = next_slot(i, mask)
    table[i] = slot


cdef void _table_insert(vector[PieceSlot]& table, uint64_t mask, uint64_t h, uint64_t prefix, int64_t key_off,
                        Py_ssize_t n, int32_t n_ids, int32_t value) noexcept nogil:
    cdef PieceSlot slot
    slot.hash = h
    slot.prefix = prefix
    slot.key_off = <uint32_t>key_off
    slot.key_len = <int32_t>n
    slot.n_ids = n_ids
    slot.value = value
    _slot_place(table, mask, slot)


cdef int32_t _table_get(vector[PieceSlot]& table, uint64_t mask, const uint8_t* keys, const uint8_t* p,
                        Py_ssize_t n, const uint8_t* end) noexcept nogil:
    """The value for key p[0:n] (p + n <= end) in a table whose keys live in `keys`, or -1."""
    cdef uint64_t prefix
    cdef uint64_t h = hash_key(p, n, end, &prefix)
    cdef uint64_t i = h & mask
    while table[i].n_ids != 0:
        if key_matches(&table[i], h, prefix, keys, p, n):
            return table[i].value
        i = next_slot(i, mask)
    return -1

