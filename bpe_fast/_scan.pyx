# distutils: language = c++
# distutils: extra_compile_args = -O3 -std=c++17
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Native pre-tokenizer: GPT2_PATTERN, GPT4_PATTERN, O200K_PATTERN, LLAMA3_PATTERN, QWEN2_PATTERN and
TEKKEN_PATTERN scanned over UTF-8 bytes, and pre-token counting.

Each pattern is one function, ``gpt2_next``/``gpt4_next``/``o200k_next`` (gpt4_next also scans the two
variants of GPT-4's pattern that Llama 3 and Qwen2 use, o200k_next the one of o200k's that Mistral's Tekken uses), that returns the end of the pre-token starting at
byte i: the alternatives of the regex tried in order, with the backtracking the regex engine would do spelled
out. Code points are classified with a two-level table generated from the installed `regex`, which a
UnicodeTables object owns; every scanner reads it through the `const ScanTables*` it is given.
The loops take valid UTF-8 (the Python layer validates or encodes first) and touch no Python objects; Python
objects are only built for the results: boundaries() (int64 array), split() (list of str) and PretokenCounter
(distinct pre-tokens and counts, accumulated over chunks in a native hash table). bpe_fast/pretokenize.py is
the interface; this module trusts its arguments.
"""
cimport cython
from cpython cimport array
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.ref cimport PyObject, Py_INCREF, Py_XDECREF
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memchr, memcmp, memcpy, memset
from libcpp.vector cimport vector

from bpe_fast._revec cimport ReVec, fill_huge, push_or_end
from bpe_fast._runs cimport RunWriter, SortKey, run_close, run_open, run_put, sort_span_keys
from bpe_fast._threads cimport atomic_add_int64, run_in_threads
from bpe_fast._hashing cimport (EMPTY_INDEX, Slot, hash_bytes, seed_hash_bytes, load_head, next_slot, slot_place,
                                slot_tag, tail_equal)

cdef extern from *:
    """
    /* Every `cdef inline` function below (the scanners' helpers: cls_at, decode, run, o200k_cased, ...) is
       inlined, not left to the compiler's size limits: they are called once or twice a code point from the
       pattern scanners, which grew past what gcc inlines into on its own, and each call paid a frame. */
    #if defined(__GNUC__) || defined(__clang__)
    #undef CYTHON_INLINE
    #define CYTHON_INLINE inline __attribute__((always_inline))
    #endif
    """

import array
import sys

from bpe_fast._numpy import np     # (NumPy imported when first used: see there)

hash_seed = seed_hash_bytes()     # the key of this module's hash_bytes (see _hashing.pxd)

# Class bits of a code point. A code point with none of L, N, S is "other": [^\s\p{L}\p{N}].
cdef enum:
    C_L = 1     # \p{L}
    C_N = 2     # \p{N}
    C_S = 4     # \s
    C_NL = 8    # \r or \n (also C_S)
    C_LNS = 7
    C_U = 16    # [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]   (o200k's "upper")
    C_W = 32    # [\p{Ll}\p{Lm}\p{Lo}\p{M}]          (o200k's "lower")
    C_LM = 48   # U or W: [\p{L}\p{M}] (every letter is one of them, a mark both)
    C_PS = 64   # [\p{P}\p{S}]                        (DeepSeek V3's punctuation and symbols)
    C_HAN = 128 # \p{Han}                              (Kimi K2's runs of Han)


@cython.final
cdef class UnicodeTables:
    """The classification tables of the native scanner (built by bpe_fast.pretokenize.native_tables from
    bpe_fast/_unicode_table.py, or _unicode_table_peers.py for the drop-in paths' Unicode 16.0):
    UnicodeTables(stage1, stage2, fold_cps, fold_letters).

    stage1[cp >> 8] is a block number b, stage2[b * 256 + (cp & 255)] the class bits of cp (L=1, N=2, S=4,
    CR/LF=8, o200k's upper=16 and lower=32, DeepSeek's punctuation and symbols=64, Han=128). fold_cps[k] is a code point that (?i) matches to the ASCII letter
    fold_letters[k]. The arrays are copied; the object never changes after, so any number of scans may read
    it at once without the GIL (each scan keeps a reference to it), and several may exist side by side.
    """

    def __cinit__(self, const uint16_t[::1] stage1, const uint8_t[::1] stage2, fold_cps, fold_letters):
        cdef Py_ssize_t k
        if stage1.shape[0] != 0x1100:
            raise ValueError("stage1 must have 0x1100 entries")
        for k in range(stage1.shape[0]):
            if (<Py_ssize_t>stage1[k] + 1) * 256 > stage2.shape[0]:
                raise ValueError("stage1 points past the end of stage2")
        for k in range(stage2.shape[0]):        # o200k_next relies on it
            if (stage2[k] & C_L) and not (stage2[k] & (C_U | C_W)):
                raise ValueError("every letter (L) must be upper (U) or lower (W) too")
        self.stage1.assign(&stage1[0], &stage1[0] + stage1.shape[0])
        self.stage2.assign(&stage2[0], &stage2[0] + stage2.shape[0])
        self.t.st1 = self.stage1.data()
        self.t.st2 = self.stage2.data()
        for k in range(128):
            self.t.ascii_cls[k] = self.t.st2[<Py_ssize_t>self.t.st1[0] * 256 + k]
            self.t.ascii_fold[k] = 0
        for cp, letter in zip(fold_cps, fold_letters):
            if not 0 <= cp <= 0x10FFFF:
                raise ValueError(f"fold_cps holds {cp!r}, not a code point")
            if cp < 128:
                self.t.ascii_fold[cp] = ord(letter)
            else:
                self.fold_cps.push_back(cp)
                self.fold_letters.push_back(ord(letter))
        self.t.fold_cps = self.fold_cps.data()
        self.t.fold_letters = self.fold_letters.data()
        self.t.n_folds = self.fold_cps.size()
        letters = [k for k in range(128) if self.t.ascii_cls[k] & C_L]
        self.t.swar_letters = sys.byteorder == "little" and letters == list(range(65, 91)) + list(range(97, 123))
        lower = [k for k in range(128) if self.t.ascii_cls[k] & C_W]
        self.t.swar_lower = sys.byteorder == "little" and lower == list(range(97, 123))
        # Kimi K2's letter runs leave Han out ([\p{Lu}...\p{M}&&[^\p{Han}]]): the same tables with Han neither
        # upper nor lower, which its scanner reads past its first choice (a run of Han)
        self.stage2_han_apart = self.stage2
        for k in range(<Py_ssize_t>self.stage2_han_apart.size()):
            if self.stage2_han_apart[k] & C_HAN:
                self.stage2_han_apart[k] &= ~(C_U | C_W)
        self.t_han_apart = self.t
        self.t_han_apart.st2 = self.stage2_han_apart.data()
        for k in range(128):
            self.t_han_apart.ascii_cls[k] = self.t_han_apart.st2[<Py_ssize_t>self.t.st1[0] * 256 + k]
        self.t_han_apart.han_apart = &self.t_han_apart
        self.t.han_apart = &self.t_han_apart

    def classify_all(self):
        """The class bits of every code point 0..0x10FFFF as the scanner sees them (bytes of length 0x110000)."""
        out = bytearray(0x110000)
        cdef uint8_t[::1] view = out
        cdef uint32_t cp
        for cp in range(0x110000):
            view[cp] = cls_of(&self.t, cp)
        return bytes(out)

    def fold_letter(self, uint32_t cp):
        """The contraction letter that (?i) matches code point cp to in GPT-4's pattern ('s', 'd', ...), or ''."""
        cdef uint8_t f = fold_of(&self.t, cp)
        return chr(f) if f else ""


# ---------------------------------------------------------------------------------------------- classes

cdef inline uint8_t cls_of(const ScanTables* t, uint32_t cp) noexcept nogil:
    return t.st2[<Py_ssize_t>t.st1[cp >> 8] * 256 + (cp & 255)]


cdef inline uint32_t decode(const uint8_t* s, Py_ssize_t i, Py_ssize_t* nxt) noexcept nogil:
    """The code point at s[i] (valid UTF-8); nxt receives the offset after it."""
    cdef uint32_t b = s[i]
    if b < 0x80:
        nxt[0] = i + 1
        return b
    if b < 0xE0:
        nxt[0] = i + 2
        return ((b & 0x1F) << 6) | (s[i + 1] & 0x3F)
    if b < 0xF0:
        nxt[0] = i + 3
        return ((b & 0x0F) << 12) | ((s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F)
    nxt[0] = i + 4
    return ((b & 0x07) << 18) | ((s[i + 1] & 0x3F) << 12) | ((s[i + 2] & 0x3F) << 6) | (s[i + 3] & 0x3F)


cdef inline uint8_t cls_at(const ScanTables* t, const uint8_t* s, Py_ssize_t i, Py_ssize_t* nxt) noexcept nogil:
    """Class bits of the code point at s[i]; nxt receives the offset after it."""
    cdef uint8_t b = s[i]
    if b < 0x80:
        nxt[0] = i + 1
        return t.ascii_cls[b]
    return cls_of(t, decode(s, i, nxt))


cdef inline uint8_t fold_of(const ScanTables* t, uint32_t cp) noexcept nogil:
    cdef size_t k
    if cp < 128:
        return t.ascii_fold[cp]
    for k in range(<size_t>t.n_folds):
        if t.fold_cps[k] == cp:
            return t.fold_letters[k]
    return 0


cdef inline Py_ssize_t run(const ScanTables* t, const uint8_t* s, Py_ssize_t i, Py_ssize_t n, uint8_t mask,
                           uint8_t want) noexcept nogil:
    """The end of the longest run of code points from i whose class bits c have (c & mask) == want."""
    cdef Py_ssize_t j
    cdef uint8_t b
    while i < n:
        b = s[i]
        if b < 0x80:
            if (t.ascii_cls[b] & mask) != want:
                break
            i += 1
        else:
            if (cls_of(t, decode(s, i, &j)) & mask) != want:
                break
            i = j
    return i


cdef extern from *:
    int __builtin_ctzll(unsigned long long) nogil

cdef uint64_t HIGH = 0x8080808080808080ULL


cdef inline Py_ssize_t swar_letters(const uint8_t* s, Py_ssize_t i, Py_ssize_t n, bint* ended) noexcept nogil:
    """Skip ASCII letters from i eight bytes at a time. Returns the end of the run with ended[0] set, or where
    it stopped looking (fewer than eight bytes left, or a non-ASCII byte among the next eight).

    For ASCII bytes, x = byte | 0x20 folds A-Z onto a-z and moves no other byte into a-z; x is a letter iff
    x + 0x1F has its high bit set (x >= 0x61) and x + 0x05 has not (x < 0x7B). No byte carries into the next,
    as x < 0x80. Worked example: "cat, the" -> non-letter bits at bytes 3 and 4 -> the run ends at i + 3.
    """
    cdef uint64_t w, x, nonletter
    while i + 8 <= n:
        memcpy(&w, s + i, 8)
        if w & HIGH:
            break
        x = w | 0x2020202020202020ULL
        nonletter = ~((x + 0x1F1F1F1F1F1F1F1FULL) & ~(x + 0x0505050505050505ULL)) & HIGH
        if nonletter:
            ended[0] = True
            return i + (__builtin_ctzll(nonletter) >> 3)
        i += 8
    return i


cdef inline Py_ssize_t swar_lower(const uint8_t* s, Py_ssize_t i, Py_ssize_t n, bint* ended) noexcept nogil:
    """swar_letters for a-z alone (o200k's lower ASCII letters): x is a-z iff x + 0x1F has its high bit set
    (x >= 0x61) and x + 0x05 has not (x < 0x7B), for ASCII bytes, with no carry between bytes. Worked example:
    "thE end." -> non-lower bits at bytes 2, 3 and 7 -> the run ends at i + 2."""
    cdef uint64_t w, nonlower
    while i + 8 <= n:
        memcpy(&w, s + i, 8)
        if w & HIGH:
            break
        nonlower = ~((w + 0x1F1F1F1F1F1F1F1FULL) & ~(w + 0x0505050505050505ULL)) & HIGH
        if nonlower:
            ended[0] = True
            return i + (__builtin_ctzll(nonlower) >> 3)
        i += 8
    return i


cdef inline Py_ssize_t run_letters(const ScanTables* t, const uint8_t* s, Py_ssize_t i,
                                   Py_ssize_t n) noexcept nogil:
    """run(t, s, i, n, C_L, C_L), eight ASCII bytes at a time where it can."""
    cdef bint ended = False
    if t.swar_letters:
        i = swar_letters(s, i, n, &ended)
        if ended:
            return i
    return run_letters_slow(t, s, i, n)


cdef Py_ssize_t run_letters_slow(const ScanTables* t, const uint8_t* s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    """run_letters past a non-ASCII byte or near the end: a code point at a time, and eight bytes at a time
    again after each ASCII letter."""
    cdef Py_ssize_t j
    cdef uint8_t b
    cdef bint ended = False
    while i < n:
        b = s[i]
        if b < 0x80:
            if not (t.ascii_cls[b] & C_L):
                return i
            i += 1
            if t.swar_letters:
                i = swar_letters(s, i, n, &ended)
                if ended:
                    return i
        else:
            if not (cls_of(t, decode(s, i, &j)) & C_L):
                return i
            i = j
    return i


cdef inline Py_ssize_t run_crlf(const uint8_t* s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    while i < n and (s[i] == 13 or s[i] == 10):
        i += 1
    return i


# ---------------------------------------------------------------------------------------------- GPT-2
# '(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+

cdef inline Py_ssize_t gpt2_next(const ScanTables* t, const uint8_t* s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    """End of the GPT-2 pre-token starting at s[i] (i < n)."""
    cdef uint8_t b = s[i], b1, b2, c, c2
    cdef Py_ssize_t j, k
    if b == 39 and i + 1 < n:                                   # '(?:[sdmt]|ll|ve|re), case-sensitive
        b1 = s[i + 1]
        if b1 == 115 or b1 == 100 or b1 == 109 or b1 == 116:    # s d m t
            return i + 2
        if i + 2 < n:
            b2 = s[i + 2]
            if (b1 == 108 and b2 == 108) or (b2 == 101 and (b1 == 118 or b1 == 114)):  # ll ve re
                return i + 3
    c = cls_at(t, s, i, &j)
    if b == 32 and j < n:                                       # " ?" takes the space if a run follows
        c2 = cls_at(t, s, j, &k)
        if c2 & C_L:
            return run_letters(t, s, k, n)
        if c2 & C_N:
            return run(t, s, k, n, C_N, C_N)
        if (c2 & C_LNS) == 0:
            return run(t, s, k, n, C_LNS, 0)
    elif c & C_L:
        return run_letters(t, s, j, n)
    elif c & C_N:
        return run(t, s, j, n, C_N, C_N)
    elif (c & C_LNS) == 0:
        return run(t, s, j, n, C_LNS, 0)
    # \s+(?!\S)|\s+ : the whitespace run, minus its last code point when a non-space follows and it has >= 2
    cdef Py_ssize_t last = i
    k = j
    while k < n:
        c = cls_at(t, s, k, &j)
        if not (c & C_S):
            return last if last > i else k
        last = k
        k = j
    return n


# ---------------------------------------------------------------------------------------------- StarCoder
# \p{N}|'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?[^\s\p{L}\p{N}]+|\s+(?![^\s\p{N}])|\s+ : GPT-2's with every digit a piece
# (HF's Digits then ByteLevel): no space joins a digit, and a white space run that a digit ends is whole, as at
# the text's end. Worked example: "a  12 b" -> "a", "  ", "1", "2", " b" (GPT-2: "a", " ", " 12", " b").
# gpt2_next's shape, written again: one function of both with a flag cost GPT-2's counting 3.7% more
# instructions (benchmarks/icount.py), past the gate's 3%.

cdef inline Py_ssize_t starcoder_next(const ScanTables* t, const uint8_t* s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    """End of the STARCODER_PATTERN pre-token starting at s[i] (i < n)."""
    cdef uint8_t b = s[i], b1, b2, c, c2
    cdef Py_ssize_t j, k
    c = cls_at(t, s, i, &j)
    if c & C_N:                                                 # \p{N}: one code point
        return j
    if b == 39 and i + 1 < n:                                   # '(?:[sdmt]|ll|ve|re), case-sensitive
        b1 = s[i + 1]
        if b1 == 115 or b1 == 100 or b1 == 109 or b1 == 116:    # s d m t
            return i + 2
        if i + 2 < n:
            b2 = s[i + 2]
            if (b1 == 108 and b2 == 108) or (b2 == 101 and (b1 == 118 or b1 == 114)):  # ll ve re
                return i + 3
    if b == 32 and j < n:                                       # " ?" takes the space if a run follows
        c2 = cls_at(t, s, j, &k)
        if c2 & C_L:
            return run_letters(t, s, k, n)
        if (c2 & C_LNS) == 0:
            return run(t, s, k, n, C_LNS, 0)
    elif c & C_L:
        return run_letters(t, s, j, n)
    elif (c & C_LNS) == 0:
        return run(t, s, j, n, C_LNS, 0)
    # \s+(?![^\s\p{N}])|\s+ : the whitespace run, minus its last code point when it has >= 2 and what follows is
    # neither white space nor a digit
    cdef Py_ssize_t last = i
    k = j
    while k < n:
        c = cls_at(t, s, k, &j)
        if not (c & C_S):
            if c & C_N:
                return k
            return last if last > i else k
        last = k
        k = j
    return n


# ---------------------------------------------------------------------------------------------- BLOOM
# " ?[^(\s|.,!?…。，、।۔،)]+" and the text between two matches a piece of its own (HF's Isolated Split): a run of
# what is not white space nor one of those 11 characters, with the space before it; else everything up to where
# such a run (or a space and one) starts. Worked example: "Hi, (you) ok" -> "Hi", ", (", "you", ")", " ok".

cdef inline bint bloom_apart(const ScanTables* t, const uint8_t* s, Py_ssize_t i, Py_ssize_t* j) noexcept nogil:
    """Whether the code point at s[i] (its end put in j[0]) is one BLOOM's runs stop at: white space or one of
    ( | ) . , ! ? … 。 ， 、 । ۔ ،"""
    cdef uint8_t c = cls_at(t, s, i, j), b = s[i], b1, b2
    if c & C_S:
        return True
    if b < 128:
        return b == 40 or b == 124 or b == 41 or b == 46 or b == 44 or b == 33 or b == 63
    if j[0] - i == 2:                                           # ، U+060C, ۔ U+06D4
        b1 = s[i + 1]
        return (b == 0xD8 and b1 == 0x8C) or (b == 0xDB and b1 == 0x94)
    if j[0] - i == 3:                                           # … U+2026, 。 U+3002, 、 U+3001, ， U+FF0C, । U+0964
        b1 = s[i + 1]
        b2 = s[i + 2]
        return ((b == 0xE2 and b1 == 0x80 and b2 == 0xA6) or (b == 0xE3 and b1 == 0x80 and (b2 == 0x82 or b2 == 0x81))
                or (b == 0xEF and b1 == 0xBC and b2 == 0x8C) or (b == 0xE0 and b1 == 0xA5 and b2 == 0xA4))
    return False


# bloom_apart's ASCII punctuation ! ( ) , . ? as the bits of a mask (| is 124, past it)
cdef uint64_t BLOOM_ASCII_APART = ((1ULL << 0x21) | (1ULL << 0x28) | (1ULL << 0x29) | (1ULL << 0x2C) | (1ULL << 0x2E)
                                   | (1ULL << 0x3F))


cdef inline Py_ssize_t bloom_run(const ScanTables* t, const uint8_t* s, Py_ssize_t j, Py_ssize_t n) noexcept nogil:
    """The end of the run from s[j] of code points bloom_apart does not stop at: ASCII by its class bits and the
    punctuation mask, without a call (BLOOM's runs are whole words with their punctuation, mostly ASCII)."""
    cdef Py_ssize_t k
    cdef uint8_t b
    cdef bint ended
    while j < n:
        if t.swar_letters:
            j = swar_letters(s, j, n, &ended)
            if j >= n:
                return j
        b = s[j]
        if b < 0x80:
            if (t.ascii_cls[b] & C_S) or b == 124 or (b < 64 and (BLOOM_ASCII_APART >> b) & 1):
                return j
            j += 1
        elif bloom_apart(t, s, j, &k):
            return j
        else:
            j = k
    return j


cdef inline Py_ssize_t bloom_next(const ScanTables* t, const uint8_t* s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    """End of the BLOOM_PATTERN pre-token starting at s[i] (i < n)."""
    cdef Py_ssize_t j, k, m
    cdef bint apart = bloom_apart(t, s, i, &j)
    if s[i] == 32 and j < n and not bloom_apart(t, s, j, &k):      # " ?" then the run
        apart = False
        j = k
    if not apart:
        return bloom_run(t, s, j, n)
    while j < n:                # between two matches: up to where one starts (a run, or a space before one)
        if not bloom_apart(t, s, j, &k):
            return j
        if s[j] == 32 and k < n and not bloom_apart(t, s, k, &m):
            return j
        j = k
    return n


cdef inline Py_ssize_t space_run(const ScanTables* t, const uint8_t* s, Py_ssize_t i, Py_ssize_t j, uint8_t c,
                                 Py_ssize_t n, Py_ssize_t* after_nl) noexcept nogil:
    """The whitespace run from s[i] (class c; the next code point at j) as GPT-4's and o200k's patterns end it
    when a non-space follows: up to its last \\r or \\n if it has one, else without its last code point if it
    has two or more, else that one code point. -1 when the run reaches n (the patterns differ there); after_nl
    then holds the end of its last \\r or \\n, or -1."""
    cdef Py_ssize_t last = i, k = j, m
    after_nl[0] = j if (c & C_NL) else -1
    while k < n:
        c = cls_at(t, s, k, &m)
        if not (c & C_S):
            if after_nl[0] >= 0:
                return after_nl[0]
            return last if last > i else k
        if c & C_NL:
            after_nl[0] = m
        last = k
        k = m
    return -1


# ---------------------------------------------------------------------------------------------- GPT-4
# '(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s
# Llama 3's spelling (cl100k's before tiktoken made it possessive), the same pre-tokens but at the end:
# (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
# (nothing it makes possessive could give anything back that another alternative would take); Qwen2's is
# Llama 3's with \p{N} for \p{N}{1,3}.

cdef inline Py_ssize_t gpt4_next(const ScanTables* t, const uint8_t* s, Py_ssize_t i, Py_ssize_t n,
                                 int digits=3, bint split_end=False) noexcept nogil:
    """End of the GPT-4 pre-token starting at s[i] (i < n); digits: how many \\p{N} a pre-token holds at
    most (Qwen2: 1); split_end: a whitespace run that ends the text ends at its last \\r or \\n, if it has
    one, and the rest is a pre-token of its own (Llama 3's \\s*[\\r\\n]+|\\s+(?!\\S)), not one pre-token
    (\\s++$)."""
    cdef uint8_t b = s[i], c, c2, f1, f2
    cdef Py_ssize_t j, k, m, count
    if b == 39 and i + 1 < n:                                   # '(?i:[sdmt]|ll|ve|re)
        f1 = fold_of(t, decode(s, i + 1, &j))
        if f1 == 115 or f1 == 100 or f1 == 109 or f1 == 116:    # s d m t
            return j
        if (f1 == 108 or f1 == 118 or f1 == 114) and j < n:     # l v r
            f2 = fold_of(t, decode(s, j, &k))
            if (f1 == 108 and f2 == 108) or (f1 != 108 and f2 == 101):
                return k
    c = cls_at(t, s, i, &j)
    if c & C_L:                                                 # \p{L}++
        return run_letters(t, s, j, n)
    if c & C_N:                                                 # \p{N}{1,3}+
        count = 1
        while count < digits and j < n:
            if not (cls_at(t, s, j, &k) & C_N):
                break
            j = k
            count += 1
        return j
    if not (c & C_NL) and j < n:
        c2 = cls_at(t, s, j, &k)
        if c2 & C_L:                                            # [^\r\n\p{L}\p{N}]?+\p{L}++
            return run_letters(t, s, k, n)
        if b == 32 and (c2 & C_LNS) == 0:                       # " [^\s\p{L}\p{N}]++[\r\n]*+"
            return run_crlf(s, run(t, s, k, n, C_LNS, 0), n)
    if (c & C_LNS) == 0:                                        # "[^\s\p{L}\p{N}]++[\r\n]*+"
        return run_crlf(s, run(t, s, j, n, C_LNS, 0), n)
    # whitespace run from i: \s++$ | \s*[\r\n] | \s+(?!\S) | \s
    cdef Py_ssize_t after_nl
    k = space_run(t, s, i, j, c, n, &after_nl)
    if k >= 0:
        return k
    if split_end and after_nl >= 0:                             # \s*[\r\n]+ first (then \s+(?!\S) the rest)
        return after_nl
    return n                                                    # \s++$: a run reaching the end is whole


# ---------------------------------------------------------------------------------------------- o200k
# (Tekken's pattern, Mistral's: the same without C, and \p{N} for \p{N}{1,3})
# [^\r\n\p{L}\p{N}]?[U]*[W]+C? | [^\r\n\p{L}\p{N}]?[U]+[W]*C? | \p{N}{1,3} | " ?[^\s\p{L}\p{N}]+[\r\n/]*"
# | \s*[\r\n]+ | \s+(?!\S) | \s+        with U = [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}], W = [\p{Ll}\p{Lm}\p{Lo}\p{M}],
# C = (?i:'s|'t|'re|'ve|'m|'ll|'d). Nothing is possessive: U and W overlap (Lm, Lo, M), so [U]* gives code
# points back to [W]+, spelled out in o200k_cased. Every function here sets at_end[0] when its result
# depended on whether text goes on after n (it looked for a code point at n): a pre-token scanned without
# that is final whatever follows (scan_block_final).

cdef inline Py_ssize_t run_to(const ScanTables* t, const uint8_t* s, Py_ssize_t i, Py_ssize_t n, uint8_t mask,
                              uint8_t want, bint* at_end) noexcept nogil:
    """run(), noting in at_end when the run reached n."""
    i = run(t, s, i, n, mask, want)
    if i >= n:
        at_end[0] = True
    return i


cdef inline Py_ssize_t run_lower_to(const ScanTables* t, const uint8_t* s, Py_ssize_t i, Py_ssize_t n,
                                    bint* at_end) noexcept nogil:
    """run_to(t, s, i, n, C_W, C_W, at_end), eight ASCII bytes at a time while they are a-z (swar_lower)."""
    cdef bint ended = False
    if t.swar_lower:
        i = swar_lower(s, i, n, &ended)
        if ended:
            return i
    return run_to(t, s, i, n, C_W, C_W, at_end)


cdef inline Py_ssize_t o200k_contraction(const ScanTables* t, const uint8_t* s, Py_ssize_t i, Py_ssize_t n,
                                         bint* at_end) noexcept nogil:
    """The end of (?i:'s|'t|'re|'ve|'m|'ll|'d) at s[i], or i when there is none."""
    cdef Py_ssize_t j, k
    cdef uint8_t f1, f2
    if i >= n or s[i] != 39:
        if i >= n:
            at_end[0] = True
        return i
    if i + 1 >= n:
        at_end[0] = True
        return i
    f1 = fold_of(t, decode(s, i + 1, &j))
    if f1 == 115 or f1 == 116 or f1 == 109 or f1 == 100:       # s t m d
        return j
    if f1 == 114 or f1 == 118 or f1 == 108:                    # r v l
        if j >= n:
            at_end[0] = True
            return i
        f2 = fold_of(t, decode(s, j, &k))
        if (f1 == 108 and f2 == 108) or (f1 != 108 and f2 == 101):
            return k
    return i


cdef inline Py_ssize_t o200k_cased(const ScanTables* t, const uint8_t* s, Py_ssize_t p, Py_ssize_t n, uint8_t c,
                                   Py_ssize_t q, Py_ssize_t* upper, bint* at_end) noexcept nogil:
    """The end of [U]*[W]+ matched at s[p] as `regex` backtracks, or -1 when it does not match there, and then
    (only then: set in no other case) upper receives the end of [U]+[W]* there, or -1; c: the class bits of the
    code point at p, which ends at q (the caller has them; c = 0 and at_end set when p == n).

    Greedy [U]* takes the whole run of U from p, to e. If the code point at e is W, [W]+ takes the run of W
    from e. Otherwise [U]* gives back code points until one is W: the last W of the run, whose successor in
    the run is not W, so [W]+ ends right after it. [U]+[W]* needs the run to be non-empty and then takes the
    run of W from e (empty unless e is W). Worked example: "中A!" -> [U]*[W]+ gives "中" ('A' is U, not W)."""
    cdef Py_ssize_t e = p, last_w = -1
    while c & C_U:
        if c & C_W:
            last_w = q
        e = q
        if e >= n:
            at_end[0] = True
            c = 0
            break
        c = cls_at(t, s, e, &q)
    if c & C_W:
        return run_lower_to(t, s, q, n, at_end)
    if last_w < 0:
        upper[0] = e if e > p else -1
    return last_w


cdef inline Py_ssize_t o200k_next(const ScanTables* t, const uint8_t* s, Py_ssize_t i, Py_ssize_t n,
                                  bint* at_end, bint contractions=True, int digits=3, bint slash=True) noexcept nogil:
    """End of the o200k pre-token starting at s[i] (i < n); contractions: the letter runs take C (Tekken's
    pattern has no C), digits: how many \\p{N} a pre-token holds at most (Tekken: 1), slash: punctuation takes
    [\\r\\n/]* after it (Kimi K2's: [\\r\\n]*)."""
    cdef uint8_t b = s[i], c, c2
    cdef Py_ssize_t j, k, m, e, count, upper
    c = cls_at(t, s, i, &j)
    if c & C_L:                                         # no prefix: [U]*[W]+C? then [U]+[W]*C? at i
        e = o200k_cased(t, s, i, n, c, j, &upper, at_end)
        if e < 0:
            e = upper                                   # every letter is U or W: one of them matches
        return o200k_contraction(t, s, e, n, at_end) if contractions else e
    if c & C_N:                                         # \p{N}{1,3}
        count = 1
        while count < digits:
            if j >= n:
                at_end[0] = True
                break
            if not (cls_at(t, s, j, &k) & C_N):
                break
            j = k
            count += 1
        return j
    if not (c & C_NL):                                  # [^\r\n\p{L}\p{N}]? may take s[i]
        k = j
        c2 = 0
        if j >= n:
            at_end[0] = True
        else:
            c2 = cls_at(t, s, j, &k)
        e = o200k_cased(t, s, j, n, c2, k, &upper, at_end)
        if e < 0 and (c & C_W):                         # a mark (U and W, not L): [W]+ can start at i itself,
            e = j                                       # and ends there when it did not match from j
        if e < 0:
            e = upper
        if e >= 0:
            return o200k_contraction(t, s, e, n, at_end) if contractions else e
        if b == 32 and j < n and (c2 & C_LNS) == 0:     # " ?[^\s\p{L}\p{N}]+[\r\n/]*" with the space
            return o200k_crlf_slash(s, run_to(t, s, k, n, C_LNS, 0, at_end), n, at_end, slash)
        if (c & C_LNS) == 0:                            # ... without it
            return o200k_crlf_slash(s, run_to(t, s, j, n, C_LNS, 0, at_end), n, at_end, slash)
    # the whitespace run from i: \s*[\r\n]+ | \s+(?!\S) | \s+
    cdef Py_ssize_t after_nl
    k = space_run(t, s, i, j, c, n, &after_nl)
    if k >= 0:
        return k
    at_end[0] = True
    return after_nl if after_nl >= 0 else n                     # to the run's last \r or \n, else to the end


cdef inline Py_ssize_t o200k_crlf_slash(const uint8_t* s, Py_ssize_t i, Py_ssize_t n, bint* at_end,
                                        bint slash) noexcept nogil:
    """[\r\n/]* from i ([\r\n]* without slash)."""
    while i < n and (s[i] == 13 or s[i] == 10 or (slash and s[i] == 47)):
        i += 1
    if i >= n:
        at_end[0] = True
    return i


# ---------------------------------------------------------------------------------------------- drivers

cdef void scan_ends(const ScanTables* t, const uint8_t* s, Py_ssize_t n, int kind,
                    vector[int64_t]* out) noexcept nogil:
    cdef Py_ssize_t i = 0
    cdef bint at_end = False
    if kind == KIND_GPT2:
        while i < n:
            i = gpt2_next(t, s, i, n)
            push_or_end(out[0], i)
    elif kind == KIND_GPT4:
        while i < n:
            i = gpt4_next(t, s, i, n)
            push_or_end(out[0], i)
    elif kind == KIND_O200K:
        while i < n:
            i = o200k_next(t, s, i, n, &at_end)
            push_or_end(out[0], i)
    else:
        while i < n:
            i = variant_next(kind, t, s, i, n, &at_end)
            push_or_end(out[0], i)


cdef inline bint ascii32(const uint8_t* s) noexcept nogil:
    """Whether the 32 bytes at s are all ASCII."""
    cdef uint64_t a, b, c, d
    memcpy(&a, s, 8)
    memcpy(&b, s + 8, 8)
    memcpy(&c, s + 16, 8)
    memcpy(&d, s + 24, 8)
    return ((a | b | c | d) & HIGH) == 0


cdef inline Py_ssize_t utf8_walk(const uint8_t* s, Py_ssize_t n, Py_ssize_t* chars, uint8_t* widest,
                                 bint measure) noexcept nogil:
    """utf8_first_error, and with measure, utf8_measure's chars and widest (inlined into each: without measure,
    the counting is compiled out)."""
    cdef Py_ssize_t i = 0, extra = 0        # extra: the continuation bytes of the sequences passed
    cdef uint64_t w
    cdef uint8_t b, lo, hi, lead = 0
    while i < n:
        if i + 8 <= n:
            memcpy(&w, s + i, 8)
            if (w & HIGH) == 0:
                i += 8
                # eight ASCII bytes: then 32 at a time while they are (text of other scripts, where ASCII comes
                # a byte or a few at a time, seldom gets here and pays nothing more)
                while i + 32 <= n and ascii32(s + i):
                    i += 32
                continue
        b = s[i]
        if b < 0x80:
            i += 1
            continue
        if b < 0xC2:                                            # continuation byte or overlong 2-byte lead
            return i
        if b < 0xE0:
            if i + 1 >= n or (s[i + 1] & 0xC0) != 0x80:
                return i
            if measure:
                lead = b if b > lead else lead
                extra += 1
            i += 2
            continue
        if b < 0xF0:
            lo = 0xA0 if b == 0xE0 else 0x80                    # no overlongs
            hi = 0x9F if b == 0xED else 0xBF                    # no surrogates
            if i + 1 >= n or s[i + 1] < lo or s[i + 1] > hi:
                return i
            if i + 2 >= n or (s[i + 2] & 0xC0) != 0x80:
                return i
            if measure:
                lead = b if b > lead else lead
                extra += 2
            i += 3
            continue
        if b < 0xF5:
            lo = 0x90 if b == 0xF0 else 0x80                    # no overlongs
            hi = 0x8F if b == 0xF4 else 0xBF                    # nothing above U+10FFFF
            if i + 1 >= n or s[i + 1] < lo or s[i + 1] > hi:
                return i
            if i + 2 >= n or (s[i + 2] & 0xC0) != 0x80:
                return i
            if i + 3 >= n or (s[i + 3] & 0xC0) != 0x80:
                return i
            if measure:
                lead = b if b > lead else lead
                extra += 3
            i += 4
            continue
        return i
    if measure:
        chars[0] = n - extra
        widest[0] = lead
    return -1


cdef Py_ssize_t utf8_measure(const uint8_t* s, Py_ssize_t n, Py_ssize_t* chars, uint8_t* widest) noexcept nogil:
    return utf8_walk(s, n, chars, widest, True)


cdef Py_ssize_t utf8_first_error(const uint8_t* s, Py_ssize_t n) noexcept nogil:
    return utf8_walk(s, n, NULL, NULL, False)


def two_level_table(classes):
    """(stage1, stage2) of the code point classes `classes`: seven int64 buffers of flat [start, stop) ranges,
    sorted, within 0..0x110000, the classes of bits 1, 2, 4, 16, 32, 64 and 128 (bit 8 is \\r and \\n). The bits
    of code point cp are stage2[stage1[cp >> 8] * 256 + (cp & 255)]: stage1 (uint16, 0x1100 entries) numbers the
    distinct blocks of 256 code points in the order they first appear, stage2 (uint8) holds them end to end
    (array.array buffers: NumPy is not imported for them).
    (Built in Python, a loop over the ranges and the blocks, it took 5-7 ms a table, in every process that
    scans natively.)

    >>> import numpy as np
    >>> none = np.zeros(0, dtype=np.int64)
    >>> stage1, stage2 = two_level_table([np.array([65, 91], dtype=np.int64)] + [none] * 6)
    >>> stage1[:2].tolist(), int(stage2[stage1[0] * 256 + 65]), int(stage2[stage1[0] * 256 + 10]), len(stage2)
    ([0, 1], 1, 8, 512)
    """
    cdef int bits[7]
    bits[:] = [1, 2, 4, 16, 32, 64, 128]
    if len(classes) != 7:
        raise ValueError(f"two_level_table takes 7 classes, got {len(classes)}")
    cdef const int64_t[::1] view
    held = []                   # the classes' memoryviews, holding the buffers that ends[] points into
    cdef const int64_t* ends[7]
    cdef Py_ssize_t sizes[7]
    cdef Py_ssize_t c, k, cp
    cdef int64_t start, stop, last
    for c in range(7):
        view = classes[c]
        held.append(view)
        sizes[c] = view.shape[0]
        if sizes[c] % 2:
            raise ValueError(f"class {c} has an odd number of range ends ({sizes[c]})")
        ends[c] = &view[0] if sizes[c] else NULL
        last = 0
        for k in range(0, sizes[c], 2):
            start = ends[c][k]
            stop = ends[c][k + 1]
            if not last <= start <= stop <= 0x110000:
                raise ValueError(f"class {c}'s range {k // 2} ({start}, {stop}) is not sorted within 0..0x110000")
            last = stop
    # One block of 256 code points at a time (each class's ranges walked once, side by side), kept when its bytes
    # are new: not the whole 1.1 MB of code points at once, whose first pages cost more than the rest of the
    # work in a fresh process (1.1 ms of 1.4 cold, 0.25 warm).
    cdef Py_ssize_t at[7]
    cdef uint8_t block[256]
    cdef vector[uint8_t] distinct        # the distinct blocks end to end, in the order they first appear
    cdef vector[int32_t] slot_of         # their numbers by a table of their hashes (8192 slots, at most 4352 blocks)
    slot_of.assign(8192, -1)
    cdef array.array stage1 = array.clone(array.array("H"), 0x1100, False)
    cdef uint16_t* v1 = <uint16_t*>stage1.data.as_ushorts
    cdef uint64_t h, word
    cdef Py_ssize_t b, j, base, lo, hi
    cdef int32_t number
    distinct.reserve(256 * 256)
    with nogil:
        for c in range(7):
            at[c] = 0
        for b in range(0x1100):
            base = b * 256
            memset(block, 0, 256)
            for c in range(7):
                k = at[c]
                while k < sizes[c] and ends[c][k + 1] <= base:      # ranges that end before this block
                    k += 2
                at[c] = k
                while k < sizes[c] and ends[c][k] < base + 256:
                    lo = max(<Py_ssize_t>ends[c][k], base) - base
                    hi = min(<Py_ssize_t>ends[c][k + 1], base + 256) - base
                    for cp in range(lo, hi):
                        block[cp] |= bits[c]
                    k += 2
            if b == 0:
                block[0x0A] |= 8
                block[0x0D] |= 8
            h = <uint64_t>1469598103934665603ULL          # FNV-1a, a word at a time
            for j in range(0, 256, 8):
                memcpy(&word, block + j, 8)
                h = (h ^ word) * <uint64_t>1099511628211ULL
            j = <Py_ssize_t>(h >> 51)       # (13 bits)
            while slot_of[j] >= 0 and memcmp(distinct.data() + <Py_ssize_t>slot_of[j] * 256, block, 256) != 0:
                j = (j + 1) & 8191
            if slot_of[j] < 0:
                number = <int32_t>(distinct.size() // 256)
                slot_of[j] = number
                distinct.insert(distinct.end(), block, block + 256)
            v1[b] = <uint16_t>slot_of[j]
    cdef array.array stage2 = array.clone(array.array("B"), distinct.size(), False)
    if distinct.size():
        memcpy(stage2.data.as_uchars, distinct.data(), distinct.size())
    return stage1, stage2


def utf8_error(const uint8_t[::1] data):
    """Offset of the first invalid UTF-8 byte sequence in data (the .start bytes.decode reports), or -1."""
    cdef Py_ssize_t n = data.shape[0], pos
    if n == 0:
        return -1
    with nogil:
        pos = utf8_first_error(&data[0], n)
    return pos


cdef Py_ssize_t trailing_space_start(const ScanTables* t, const uint8_t* s, Py_ssize_t n) noexcept nogil:
    """Walk back from n over whole code points while they are \\s. Worked example: "ab \\u3000\\n" (7 bytes)
    -> 2: "\\n", U+3000 (3 bytes) and " " are \\s, "b" is not."""
    cdef Py_ssize_t j, nxt
    while n > 0:
        j = n - 1
        while j > 0 and (s[j] & 0xC0) == 0x80:                  # back to the lead byte
            j -= 1
        if not (cls_at(t, s, j, &nxt) & C_S):
            break
        n = j
    return n


def trailing_space(UnicodeTables tables not None, const uint8_t[::1] data):
    """trailing_space_start for Python (tests): where the run of \\s ending valid UTF-8 data starts."""
    cdef Py_ssize_t n = data.shape[0]
    return trailing_space_start(&tables.t, &data[0], n) if n else 0


cdef int _kind(int kind) except -1:
    if not known_kind(kind):
        raise ValueError(f"unknown pattern kind {kind}")
    return kind


cdef inline Py_ssize_t variant_next(int kind, const ScanTables* t, const uint8_t* s, Py_ssize_t i, Py_ssize_t n,
                                    bint* at_end) noexcept nogil:
    """next_of for the kinds after the first three, given by number (a dispatch a pre-token: for the loops that
    are not one a kind, scan_ends', scan_block_final's and the counter's); next_of says which scanner each is."""
    if kind == KIND_QWEN2:
        return next_of(<const Qwen2Kind*>NULL, t, s, i, n, at_end)
    if kind == KIND_LLAMA3:
        return next_of(<const Llama3Kind*>NULL, t, s, i, n, at_end)
    if kind == KIND_DEEPSEEK3:
        return next_of(<const Deepseek3Kind*>NULL, t, s, i, n, at_end)
    if kind == KIND_KIMI:
        return next_of(<const KimiKind*>NULL, t, s, i, n, at_end)
    if kind == KIND_STARCODER:
        return next_of(<const StarcoderKind*>NULL, t, s, i, n, at_end)
    if kind == KIND_BLOOM:
        return next_of(<const BloomKind*>NULL, t, s, i, n, at_end)
    return next_of(<const TekkenKind*>NULL, t, s, i, n, at_end)


# ---------------------------------------------------------------------------------------------- Kimi K2
# [\p{Han}]+ | o200k's alternatives with Han in no letter run ([...&&[^\p{Han}]]) and [\r\n]* after punctuation.
# A run of Han is the first choice; anywhere else the o200k scanner on tables where Han is neither upper nor
# lower (ScanTables.han_apart) gives the piece: its runs stop before Han, and Han is still a letter there for
# [^\r\n\p{L}\p{N}] and [^\s\p{L}\p{N}]. Worked example: " 中文ab" -> " ", "中文", "ab" (o200k: " 中文ab").

cdef inline Py_ssize_t kimi_next(const ScanTables* t, const uint8_t* s, Py_ssize_t i, Py_ssize_t n,
                                 bint* at_end) noexcept nogil:
    cdef Py_ssize_t j
    if cls_at(t, s, i, &j) & C_HAN:
        return run_to(t, s, j, n, C_HAN, C_HAN, at_end)
    return o200k_next(t.han_apart, s, i, n, at_end, True, 3, False)


# ---------------------------------------------------------------------------------------------- DeepSeek V3
# Three Isolated Splits, each applied to every piece the ones before it made: \p{N}{1,3}, then [K]+ with K the
# CJK ideographs and kana U+4E00-U+9FA5 and U+3040-U+30FF, then
#     [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+ | [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+
#     | " ?[\p{P}\p{S}]+[\r\n]*" | \s*[\r\n]+ | \s+(?!\S) | \s+
# (DEEPSEEK3_PATTERN spells the same pieces as one regex). So a digit run goes three at a time; in a run of K the
# third regex's alternatives match K code points only; elsewhere they match no K code point and no digit, and a
# whitespace run ends its piece before a digit or a K code point ((?!\S) holds there); the text no alternative
# matches is a piece of its own, in a run of K or out of one. Every choice reads at most one code point past the
# pre-token, or the whole whitespace run and the code point after it, as GPT-4's do (scan_block_final).

cdef inline bint ds_cjk(uint32_t cp) noexcept nogil:
    return 0x4E00 <= cp <= 0x9FA5 or 0x3040 <= cp <= 0x30FF


cdef inline uint8_t cp_cls_at(const ScanTables* t, const uint8_t* s, Py_ssize_t i, Py_ssize_t* nxt,
                              uint32_t* cp) noexcept nogil:
    """cls_at, with the code point in cp."""
    cdef uint8_t b = s[i]
    if b < 0x80:
        nxt[0] = i + 1
        cp[0] = b
        return t.ascii_cls[b]
    cp[0] = decode(s, i, nxt)
    return cls_of(t, cp[0])


cdef inline Py_ssize_t ds_run(const ScanTables* t, const uint8_t* s, Py_ssize_t i, Py_ssize_t n, uint8_t mask,
                              bint cjk) noexcept nogil:
    """The end of the run from i of code points with a class bit of mask, in K (cjk) or not."""
    cdef Py_ssize_t j
    cdef uint32_t cp
    while i < n:
        if not (cp_cls_at(t, s, i, &j, &cp) & mask) or ds_cjk(cp) != cjk:
            break
        i = j
    return i


cdef inline bint ds_letters_at(const ScanTables* t, const uint8_t* s, Py_ssize_t i, Py_ssize_t n, bint cjk,
                               Py_ssize_t* nxt) noexcept nogil:
    """Whether a [\p{L}\p{M}] code point in K (cjk) or not is at i (nxt: the offset after it)."""
    cdef uint32_t cp
    return i < n and (cp_cls_at(t, s, i, nxt, &cp) & C_LM) != 0 and ds_cjk(cp) == cjk


cdef Py_ssize_t ds_gap(const ScanTables* t, const uint8_t* s, Py_ssize_t i, Py_ssize_t n, bint cjk) noexcept nogil:
    """The end of the text from i (in K or out of it: cjk) where no alternative matches: code points that are no
    digit, letter, mark, punctuation, symbol or space, each not followed by a letter or mark (it would be the
    optional code point before them)."""
    cdef Py_ssize_t j, k
    cdef uint32_t cp
    while i < n:
        if (cp_cls_at(t, s, i, &j, &cp) & (C_N | C_LM | C_PS | C_S)) or ds_cjk(cp) != cjk:
            return i
        if ds_letters_at(t, s, j, n, cjk, &k):
            return i
        i = j
    return n


cdef inline bint ds_ascii_punct(uint8_t b) noexcept nogil:
    """[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~]"""
    return (33 <= b <= 47) or (58 <= b <= 64) or (91 <= b <= 96) or (123 <= b <= 126)


cdef inline bint ds_ascii_letter(uint8_t b) noexcept nogil:
    return (65 <= b <= 90) or (97 <= b <= 122)


cdef Py_ssize_t deepseek_next(const ScanTables* t, const uint8_t* s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    """End of the DeepSeek V3 pre-token starting at s[i] (i < n)."""
    cdef uint8_t b = s[i], c, c2 = 0
    cdef uint32_t cp, cp2 = 0
    cdef Py_ssize_t j, k, m, last, after_nl
    cdef int count
    c = cp_cls_at(t, s, i, &j, &cp)
    if c & C_N:                                                 # \p{N}{1,3}
        count = 1
        while count < 3 and j < n and (cls_at(t, s, j, &k) & C_N):
            j = k
            count += 1
        return j
    if ds_cjk(cp):                                              # in a run of K
        if c & C_LM:                                            # [\p{L}\p{M}]+ (a mark before them: the same end)
            return ds_run(t, s, j, n, C_LM, True)
        if c & C_PS:                                            # [\p{P}\p{S}]+
            return ds_run(t, s, j, n, C_PS, True)
        if ds_letters_at(t, s, j, n, True, &k):                 # [^\r\n\p{L}\p{P}\p{S}] then [\p{L}\p{M}]+
            return ds_run(t, s, k, n, C_LM, True)
        return ds_gap(t, s, i, n, True)
    if ds_ascii_punct(b) and j < n and ds_ascii_letter(s[j]):    # [!"#...~][A-Za-z]+
        k = j + 1
        while k < n and ds_ascii_letter(s[k]):
            k += 1
        return k
    if not (c & (C_L | C_PS | C_NL)) and ds_letters_at(t, s, j, n, False, &k):   # [^\r\n\p{L}\p{P}\p{S}]?
        return ds_run(t, s, k, n, C_LM, False)                                  # [\p{L}\p{M}]+
    if c & C_LM:
        return ds_run(t, s, j, n, C_LM, False)
    if b == 32 and j < n:                                       # " ?[\p{P}\p{S}]+[\r\n]*" with the space
        c2 = cp_cls_at(t, s, j, &k, &cp2)
        if (c2 & C_PS) and not ds_cjk(cp2):
            return run_crlf(s, ds_run(t, s, k, n, C_PS, False), n)
    if c & C_PS:                                                # ... without it
        return run_crlf(s, ds_run(t, s, j, n, C_PS, False), n)
    if not (c & C_S):
        return ds_gap(t, s, i, n, False)
    # the whitespace run from i: \s*[\r\n]+ | \s+(?!\S) | \s+
    last, k = i, j
    after_nl = j if (c & C_NL) else -1
    while k < n:
        c2 = cp_cls_at(t, s, k, &m, &cp2)
        if not (c2 & C_S):
            break
        if c2 & C_NL:
            after_nl = m
        last = k
        k = m
    if after_nl >= 0:                                           # to its last \r or \n
        return after_nl
    if k >= n or (c2 & C_N) or ds_cjk(cp2):                     # the piece ends with the run: all of it
        return k
    return last if last > i else k                              # all but its last code point, or the one


# One type a pattern kind, so that Cython makes scan_block one loop a kind (a fused type's specializations), each
# with its kind's scanner inlined: a dispatch a pre-token (variant_next's) costs a call each (Llama 3's pattern
# pre-tokenized the real corpus 10% slower so than in a loop of its own, Tekken's 17%).
ctypedef struct Gpt2Kind:
    char unused
ctypedef struct Gpt4Kind:
    char unused
ctypedef struct O200kKind:
    char unused
ctypedef struct Llama3Kind:
    char unused
ctypedef struct Qwen2Kind:
    char unused
ctypedef struct TekkenKind:
    char unused
ctypedef struct Deepseek3Kind:
    char unused
ctypedef struct KimiKind:
    char unused
ctypedef struct StarcoderKind:
    char unused
ctypedef struct BloomKind:
    char unused

ctypedef fused AnyKind:
    Gpt2Kind
    Gpt4Kind
    O200kKind
    Llama3Kind
    Qwen2Kind
    TekkenKind
    Deepseek3Kind
    KimiKind
    StarcoderKind
    BloomKind


cdef inline Py_ssize_t next_of(const AnyKind* kind, const ScanTables* t, const uint8_t* s, Py_ssize_t i,
                               Py_ssize_t n, bint* at_end) noexcept nogil:
    """The end of the pre-token that starts at s[i] by the pattern of kind's type (kind itself is not read)."""
    if AnyKind is Gpt2Kind:
        return gpt2_next(t, s, i, n)
    elif AnyKind is Gpt4Kind:
        return gpt4_next(t, s, i, n)
    elif AnyKind is O200kKind:
        return o200k_next(t, s, i, n, at_end)
    elif AnyKind is Llama3Kind:
        return gpt4_next(t, s, i, n, 3, True)
    elif AnyKind is Qwen2Kind:
        return gpt4_next(t, s, i, n, 1, True)
    elif AnyKind is TekkenKind:
        return o200k_next(t, s, i, n, at_end, False, 1)
    elif AnyKind is Deepseek3Kind:
        return deepseek_next(t, s, i, n)
    elif AnyKind is KimiKind:
        return kimi_next(t, s, i, n, at_end)
    elif AnyKind is StarcoderKind:
        return starcoder_next(t, s, i, n)
    else:
        return bloom_next(t, s, i, n)


cdef Py_ssize_t scan_block_of(const AnyKind* kind, const ScanTables* t, const uint8_t* s, Py_ssize_t i, Py_ssize_t n,
                              int64_t* out, Py_ssize_t* count, Py_ssize_t cap) noexcept nogil:
    """scan_block's loop for the pattern of kind's type."""
    cdef Py_ssize_t k = count[0]
    cdef bint at_end = False
    while i < n and k < cap:
        i = next_of(kind, t, s, i, n, &at_end)
        out[k] = i
        k += 1
    count[0] = k
    return i


cdef Py_ssize_t scan_block(const ScanTables* t, const uint8_t* s, Py_ssize_t i, Py_ssize_t n, int kind,
                           int64_t* out, Py_ssize_t* count, Py_ssize_t cap) noexcept nogil:
    """Scan from byte i, appending pre-token ends to out[count[0]:cap]; returns where it stopped (n when done)."""
    if kind == KIND_GPT2:
        return scan_block_of(<const Gpt2Kind*>NULL, t, s, i, n, out, count, cap)
    if kind == KIND_GPT4:
        return scan_block_of(<const Gpt4Kind*>NULL, t, s, i, n, out, count, cap)
    if kind == KIND_O200K:
        return scan_block_of(<const O200kKind*>NULL, t, s, i, n, out, count, cap)
    if kind == KIND_LLAMA3:
        return scan_block_of(<const Llama3Kind*>NULL, t, s, i, n, out, count, cap)
    if kind == KIND_QWEN2:
        return scan_block_of(<const Qwen2Kind*>NULL, t, s, i, n, out, count, cap)
    if kind == KIND_TEKKEN:
        return scan_block_of(<const TekkenKind*>NULL, t, s, i, n, out, count, cap)
    if kind == KIND_DEEPSEEK3:
        return scan_block_of(<const Deepseek3Kind*>NULL, t, s, i, n, out, count, cap)
    if kind == KIND_KIMI:
        return scan_block_of(<const KimiKind*>NULL, t, s, i, n, out, count, cap)
    if kind == KIND_STARCODER:
        return scan_block_of(<const StarcoderKind*>NULL, t, s, i, n, out, count, cap)
    return scan_block_of(<const BloomKind*>NULL, t, s, i, n, out, count, cap)


cdef Py_ssize_t scan_block_final(const ScanTables* t, const uint8_t* s, Py_ssize_t i, Py_ssize_t n, int kind,
                                 int64_t* out, Py_ssize_t* count, Py_ssize_t cap) noexcept nogil:
    """scan_block for text that may go on after n: only the pre-tokens that text after n cannot change.

    o200k, Tekken and Kimi K2: the pre-tokens scanned without looking for a code point at n (at_end stays False). The
    others (GPT-2 and StarCoder's, GPT-4 and its variants): the pre-token [p, c) is final when c < n, p is before the trailing whitespace run and p is not an
    apostrophe less than two bytes from the end (their look-ahead is one code point, except that the
    whitespace alternatives read the whole run and a contraction two code points). Final pre-tokens are a
    prefix of all of them, so this stops at the first that is not, with count[0] < cap.
    Worked example (GPT-2): "it's  a  " -> "it", "'s", " ", " a" are final; "  " could still grow."""
    cdef Py_ssize_t k = count[0], e, ws
    cdef bint at_end = False
    if kind == KIND_O200K or kind == KIND_TEKKEN or kind == KIND_KIMI:
        while i < n and k < cap:
            e = o200k_next(t, s, i, n, &at_end) if kind == KIND_O200K else variant_next(kind, t, s, i, n, &at_end)
            if at_end:
                break
            out[k] = e
            k += 1
            i = e
    else:
        ws = trailing_space_start(t, s, n)
        while i < n and k < cap:
            e = (gpt2_next(t, s, i, n) if kind == KIND_GPT2 else gpt4_next(t, s, i, n) if kind == KIND_GPT4
                 else variant_next(kind, t, s, i, n, &at_end))
            if e >= n or i >= ws or (s[i] == 39 and i + 2 >= n):
                break
            out[k] = e
            k += 1
            i = e
    count[0] = k
    return i


def boundaries(UnicodeTables tables not None, const uint8_t[::1] data, int kind):
    """int64 array b of pre-token offsets in valid UTF-8 data (classes from tables): b[0] == 0,
    b[-1] == len(data)."""
    _kind(kind)
    cdef Py_ssize_t n = data.shape[0], pos = 0, count = 1, cap = n // 3 + 16   # most pre-tokens are >= 3 bytes
    out = np.empty(cap, dtype=np.int64)
    cdef int64_t[::1] view = out
    view[0] = 0
    while pos < n:
        if count == cap:                                     # written straight into the result: grow it rarely
            cap = cap + cap // 2 + (n - pos) // 2 + 16
            out = np.concatenate([out, np.empty(cap - count, dtype=np.int64)])
            view = out
        with nogil:
            pos = scan_block(&tables.t, &data[0], pos, n, kind, &view[0], &count, cap)
    view = None
    out.resize(count, refcheck=False)                        # shrinks in place: no copy
    return out


cdef struct CachedStr:
    int64_t start       # where the span was seen in the buffer
    int64_t length
    uint64_t head       # its first (up to) 8 bytes, zero-padded
    PyObject* text      # its str, a reference the cache owns; or NULL


def split(UnicodeTables tables not None, const uint8_t[::1] data, int kind):
    """The pre-tokens of valid UTF-8 data (classes from tables), as a list of str.

    Pre-tokens repeat ("the", " of", ","), so the str made for a span (of at most 64 bytes) is kept in a
    small direct-mapped cache keyed by its bytes, and appended again when the same bytes come back.
    """
    _kind(kind)
    cdef Py_ssize_t n = data.shape[0], k, a, length
    if n == 0:
        return []
    cdef vector[int64_t] ends
    ends.reserve(n // 4 + 16)
    ends.push_back(0)
    with nogil:
        scan_ends(&tables.t, &data[0], n, kind, &ends)
    cdef const uint8_t* base = &data[0]
    cdef vector[CachedStr] cache
    cdef CachedStr empty
    cdef CachedStr* entry
    cdef uint64_t head
    empty.start = 0
    empty.length = 0
    empty.head = 0
    empty.text = NULL
    cache.assign(4096, empty)
    out = []
    try:
        for k in range(<Py_ssize_t>ends.size() - 1):
            a = ends[k]
            length = ends[k + 1] - a
            if length > 64:
                out.append(PyUnicode_DecodeUTF8(<const char*>base + a, length, NULL))
                continue
            head = load_head(base + a, length, base + n)
            entry = &cache[hash_bytes(base + a, length, head, base + n) & 4095]
            if entry.text == NULL or entry.length != length or entry.head != head or (
                    length > 8 and memcmp(base + entry.start + 8, base + a + 8, length - 8) != 0):
                piece = PyUnicode_DecodeUTF8(<const char*>base + a, length, NULL)
                Py_XDECREF(entry.text)
                Py_INCREF(piece)
                entry.text = <PyObject*>piece
                entry.start = a
                entry.length = length
                entry.head = head
            out.append(<object>entry.text)
    finally:
        for k in range(<Py_ssize_t>cache.size()):
            Py_XDECREF(cache[k].text)
    return out


# ---------------------------------------------------------------------------------------------- counting

cdef struct Span:
    int64_t start       # offset of its bytes in the arena
    int64_t length
    int64_t count
    uint64_t hash
    uint64_t head       # the first (up to) 8 bytes, zero-padded: spans of <= 8 bytes compare by this alone


cdef struct Pending:
    # a pre-token scanned and hashed, waiting in PretokenCounter.add_range's queue to be counted
    const uint8_t* p
    Py_ssize_t length
    uint64_t head
    uint64_t hash


cdef struct HotKey:
    # a pre-token of at most 8 bytes (its head and length: the whole key) and its span, in PretokenCounter.hot
    uint64_t head
    int64_t length      # 0: an empty entry (no pre-token is empty)
    int64_t index


cdef enum:
    # PretokenCounter.hot: pre-tokens of at most 8 bytes last found or added, by bits 40.. of their hash; most
    # pre-tokens of text are one of a few thousand short ones, which it counts without a probe of the table
    HOT_KEYS = 4096     # a power of two (96 KB)


cdef enum:
    # PretokenCounter.add_range's queue: a pre-token's slot is asked for when it is scanned, its span ASK_SPAN
    # pre-tokens later, the rest of its key (past 8 bytes) ASK_KEY later, and it is counted QUEUE later.
    QUEUE = 32          # a power of two
    QUEUE_FROM_SLOTS = 1 << 20    # a table this large (262,144 pre-tokens or more: 8 MB of slots, 10 MB or more
                                  # of spans) is past the cache and the queue pays; a smaller one (the 2 GB
                                  # stories corpus's 115,000) it slows by 5%
    ASK_SPAN = 16
    ASK_KEY = 24


cdef extern from *:
    void prefetch "__builtin_prefetch" (const void*) noexcept nogil


cdef enum:
    LOOK_UP_PER_THREAD = 65536   # PretokenCounter.arrays_with: fewer pre-tokens than this a thread, not worth one


cdef struct LookUp:
    # one thread's share of PretokenCounter.arrays_with's lookups: the table's pre-tokens lo .. hi - 1
    void* owner                 # the PretokenCounter (its caller holds it)
    const uint8_t* base
    int64_t total
    const int64_t* offsets
    const int64_t* counts
    uint8_t* fresh
    Py_ssize_t lo, hi
    Py_ssize_t new_words        # out: how many were not found, and their bytes
    int64_t new_bytes
    bint shared                 # several threads look up in the counter: its counts are added atomically
    bint changed                # out: an offset out of order (another thread writes them)


cdef struct FillOut:
    # one of PretokenCounter.arrays_with's two fills of its arrays: which 0, the counter's own pre-tokens;
    # which 1, the table's new ones (fresh[j]) after them, from index first and byte at
    void* owner                 # the PretokenCounter (its caller holds it)
    uint8_t* tv
    int64_t* ov
    int64_t* cv
    int which
    const uint8_t* base
    int64_t total
    const int64_t* offsets
    const int64_t* counts
    const uint8_t* fresh
    Py_ssize_t m, first, words
    int64_t at, room            # tv[at:room]: the room made for the new ones' bytes
    bint changed                # out (which 1): the offsets changed since the lookups (another thread)


cdef inline Py_ssize_t _next_end(int kind, const ScanTables* t, const uint8_t* s, Py_ssize_t i, Py_ssize_t n,
                                 bint* at_end) noexcept nogil:
    """The end of the pre-token that starts at s[i] (the text ends at n), by the pattern of `kind`: the one
    dispatch of PretokenCounter.add_range's two loops."""
    if kind == KIND_GPT2:
        return gpt2_next(t, s, i, n)
    if kind == KIND_GPT4:
        return gpt4_next(t, s, i, n)
    if kind == KIND_O200K:
        return o200k_next(t, s, i, n, at_end)
    return variant_next(kind, t, s, i, n, at_end)


cdef inline Py_ssize_t white_space_start(const uint8_t* s, Py_ssize_t lo, Py_ssize_t at) noexcept nogil:
    """The start of the run of white space ending at `at` in the UTF-8 text s, not before lo: characters with
    Unicode's White_Space property (Rust's char::is_whitespace and its regex's \\s, which HF's lstrip uses):
    U+0009-000D, U+0020, U+0085, U+00A0, U+1680, U+2000-200A, U+2028, U+2029, U+202F, U+205F, U+3000."""
    cdef uint8_t b, b1, b2
    while at > lo:
        b = s[at - 1]
        if b == 0x20 or 0x09 <= b <= 0x0D:
            at -= 1
            continue
        if at - 2 >= lo and s[at - 2] == 0xC2 and (b == 0x85 or b == 0xA0):
            at -= 2
            continue
        if at - 3 >= lo:
            b1 = s[at - 3]
            b2 = s[at - 2]
            if ((b1 == 0xE1 and b2 == 0x9A and b == 0x80)
                    or (b1 == 0xE2 and b2 == 0x80 and (0x80 <= b <= 0x8A or b == 0xA8 or b == 0xA9 or b == 0xAF))
                    or (b1 == 0xE2 and b2 == 0x81 and b == 0x9F)
                    or (b1 == 0xE3 and b2 == 0x80 and b == 0x80)):
                at -= 3
                continue
        break
    return at


def white_space_run_start(const uint8_t[::1] data, Py_ssize_t lo=0, at=None):
    """white_space_start for Python callers and tests: where the run of white space ending at `at` (default: the
    end) starts in UTF-8 data, not before lo."""
    cdef Py_ssize_t n = data.shape[0]
    cdef Py_ssize_t end = n if at is None else at
    if not 0 <= lo <= end <= n:
        raise ValueError("need 0 <= lo <= at <= len(data)")
    return white_space_start(&data[0], lo, end) if n else 0


cdef class SpecialMatcher:
    """The special tokens of a text, found in its UTF-8 bytes: at the leftmost position where one starts, the
    first of them in the list (given longest first, so where one token is a prefix of another the longer wins),
    as the alternation regex of bpe_fast.specials finds them in the str.

    Worked example: with [b"<|e|><|e|>", b"<|e|>"], b"a<|e|><|e|><|e|>" has matches (1, 11) and (11, 16).

    lstrip (one flag a token, or empty: none): a token flagged takes the white space before it, back to the end of
    the token before it (HF's added tokens with "lstrip": text_end), as RoBERTa's and BART's <mask>.
    """

    def __cinit__(self, specials=(), lstrip=()):
        cdef bytes t
        cdef Py_ssize_t k
        specials = list(specials)
        lstrip = [bool(flag) for flag in lstrip]
        if lstrip and len(lstrip) != len(specials):
            raise ValueError("one lstrip flag a special token")
        for k in range(256):
            self.first[k] = 0
        self.nfirst = 0
        self.longest = 0
        self.any_lstrip = any(lstrip)
        for k in range(len(specials)):
            self.lstrip.push_back(lstrip[k] if lstrip else 0)
        self.off.push_back(0)
        for t in specials:
            if len(t) == 0:
                raise ValueError("special tokens must not be empty")
            if self.off.size() > 1 and len(t) > self.off.back() - self.off[self.off.size() - 2]:
                raise ValueError("special tokens must be ordered longest first")
            for k in range(len(t)):
                self.tokens.push_back(t[k])
            self.off.push_back(self.tokens.size())
            self.longest = max(self.longest, len(t))
            if not self.first[t[0]]:
                self.first[t[0]] = 1
                self.nfirst += 1
                self.only_first = t[0]
        self._build_trie(specials)

    cdef int _build_trie(self, list specials) except -1:
        """The trie of the tokens (see _scan.pxd): the tokens taken in byte order, each adds the nodes past the
        part it shares with the one before (a node's children are so made in byte order), then the edges are
        grouped by node (a counting sort, stable)."""
        cdef vector[int32_t] order = sorted(range(len(specials)), key=specials.__getitem__)   # (stable)
        cdef vector[int32_t] path               # the nodes along the token before: path[j] after j bytes
        cdef vector[int32_t] parent             # edge e (in the order made): parent[e] -> node e + 1 by byte[e]
        cdef vector[uint8_t] byte
        cdef vector[int32_t] fill
        cdef const uint8_t* tok
        cdef const uint8_t* before = NULL
        cdef Py_ssize_t i, j, k, length, shared, n_before = 0, n_nodes, e
        cdef int32_t node
        with nogil:
            path.push_back(0)
            self.node_token.push_back(-1)
            for i in range(<Py_ssize_t>order.size()):
                k = order[i]
                tok = self.tokens.data() + self.off[k]
                length = self.off[k + 1] - self.off[k]
                shared = 0
                while shared < length and shared < n_before and tok[shared] == before[shared]:
                    shared += 1
                path.resize(shared + 1)
                node = path[shared]
                for j in range(shared, length):
                    parent.push_back(node)
                    byte.push_back(tok[j])
                    node = <int32_t>self.node_token.size()
                    self.node_token.push_back(-1)
                    path.push_back(node)
                if self.node_token[node] < 0:       # (a token listed twice: its first place, as the list's loop
                    self.node_token[node] = <int32_t>k      # found it; the sort keeps equal ones in list order)
                before, n_before = tok, length
            n_nodes = self.node_token.size()
            self.edge_start.assign(n_nodes + 1, 0)
            for e in range(<Py_ssize_t>parent.size()):
                self.edge_start[parent[e] + 1] += 1
            for j in range(n_nodes):
                self.edge_start[j + 1] += self.edge_start[j]
            fill.resize(n_nodes)
            for j in range(n_nodes):
                fill[j] = self.edge_start[j]
            self.edge_byte.resize(parent.size())
            self.edge_child.resize(parent.size())
            for e in range(<Py_ssize_t>parent.size()):
                j = fill[parent[e]]
                fill[parent[e]] += 1
                self.edge_byte[j] = byte[e]
                self.edge_child[j] = <int32_t>(e + 1)          # node e + 1 was made with edge e
            for j in range(256):
                self.root[j] = -1
            for e in range(self.edge_start[0], self.edge_start[1]):
                self.root[self.edge_byte[e]] = self.edge_child[e]
        return 0

    cdef int32_t walk(self, int32_t node, const uint8_t* s, Py_ssize_t at, Py_ssize_t n,
                      Py_ssize_t* best) noexcept nogil:
        cdef const int32_t* token_of = self.node_token.data()
        cdef const int32_t* edges = self.edge_start.data()
        cdef const uint8_t* by = self.edge_byte.data()
        cdef Py_ssize_t lo, hi, mid
        cdef uint8_t b
        while True:
            if token_of[node] >= 0:
                best[0] = token_of[node]
            if at >= n:
                return node
            b = s[at]
            lo = edges[node]
            hi = edges[node + 1]
            while hi - lo > 4:                              # a node of many children: halve the range
                mid = (lo + hi) >> 1
                if by[mid] <= b:
                    lo = mid
                else:
                    hi = mid
            while lo < hi and by[lo] != b:
                lo += 1
            if lo == hi:
                return -1
            node = self.edge_child[lo]
            at += 1

    def __len__(self):
        return self.off.size() - 1

    def covered(self, const uint8_t[::1] data, Py_ssize_t k):
        """Whether an occurrence of a token in data (any, not only those find would match) starts before k and
        ends after it: from each start q in the reach of k, the longest token there (the trie's walk) decides.
        chunking's rule for a safe cut; a Python loop over the tokens and their lengths there cost 0.6 s a MB
        of a compressed corpus with Llama 3's 256 special tokens.

        >>> SpecialMatcher([b"<|e|>", b"e|"]).covered(b"a<|e|>b", 3), SpecialMatcher([b"<|e|>"]).covered(b"a<|e|>b", 1)
        (True, False)
        """
        cdef Py_ssize_t n = data.shape[0], q, best
        cdef const uint8_t* s
        cdef bint found = False
        if k <= 0 or k >= n or self.nfirst == 0:
            return False
        s = &data[0]
        with nogil:
            for q in range(max(0, k - self.longest + 1), k):
                if not self.first[s[q]]:
                    continue
                best = -1
                self.walk(self.root[s[q]], s, q + 1, n, &best)
                if best >= 0 and q + self.off[best + 1] - self.off[best] > k:
                    found = True
                    break
        return found

    def first_start(self, const uint8_t[::1] data, Py_ssize_t lo, Py_ssize_t hi):
        """The least i, lo <= i < hi, where a token occurs whole in data, or -1 (chunking's search for a cut at
        a token: one pass for all the tokens, not a bytes.find a token)."""
        cdef Py_ssize_t n = data.shape[0], index = 0, at
        lo = max(lo, 0)
        hi = min(hi, n)
        if lo >= hi:
            return -1
        with nogil:
            at = self.find(&data[0], lo, n, &index)
        return at if at < hi else -1

    def last_start(self, const uint8_t[::1] data, Py_ssize_t lo, Py_ssize_t hi):
        """The greatest i, lo <= i < hi, where a token occurs whole in data, or -1 (first_start's other way).

        >>> SpecialMatcher([b"<|e|>"]).last_start(b"<|e|>x<|e|><|e", 0, 14), SpecialMatcher([b"<|e|>"]).last_start(b"<|e|>x", 1, 6)
        (6, -1)
        """
        cdef Py_ssize_t n = data.shape[0], i, best, found = -1
        cdef const uint8_t* s
        lo = max(lo, 0)
        hi = min(hi, n)
        if lo >= hi or self.nfirst == 0:
            return -1
        s = &data[0]
        with nogil:
            i = hi
            while i > lo:
                i -= 1
                if not self.first[s[i]]:
                    continue
                best = -1
                self.walk(self.root[s[i]], s, i + 1, n, &best)
                if best >= 0:
                    found = i
                    break
        return found

    cdef Py_ssize_t find(self, const uint8_t* s, Py_ssize_t pos, Py_ssize_t n, Py_ssize_t* index) noexcept nogil:
        cdef Py_ssize_t best, k, length, ntok = <Py_ssize_t>self.off.size() - 1
        cdef const uint8_t* hit
        cdef const uint8_t* tok
        if self.nfirst == 0:
            return n
        while pos < n:
            if self.nfirst == 1:                                 # the usual case: one first byte, memchr for it
                hit = <const uint8_t*>memchr(s + pos, self.only_first, n - pos)
                if hit == NULL:
                    return n
                pos = hit - s
            elif not self.first[s[pos]]:
                pos += 1
                continue
            if ntok <= 4:       # a few tokens (<|endoftext|>, say): each compared whole, cheaper than the walk
                for k in range(ntok):
                    tok = self.tokens.data() + self.off[k]
                    length = self.off[k + 1] - self.off[k]
                    if tok[0] == s[pos] and length <= n - pos and memcmp(tok, s + pos, length) == 0:
                        index[0] = k
                        return pos
            else:
                best = -1
                self.walk(self.root[s[pos]], s, pos + 1, n, &best)
                if best >= 0:
                    index[0] = best
                    return pos
            pos += 1
        return n

    cdef Py_ssize_t text_end(self, const uint8_t* s, Py_ssize_t pos, Py_ssize_t at, Py_ssize_t index) noexcept nogil:
        return white_space_start(s, pos, at) if self.lstrip[index] else at

    cdef Py_ssize_t held(self, const uint8_t* s, Py_ssize_t pos, Py_ssize_t undecided) noexcept nogil:
        return white_space_start(s, pos, undecided) if self.any_lstrip else undecided

    cdef Py_ssize_t prefix_start(self, const uint8_t* s, Py_ssize_t pos, Py_ssize_t n) noexcept nogil:
        cdef Py_ssize_t k, best
        cdef int32_t end
        if n - self.longest + 1 > pos:
            pos = n - self.longest + 1
        for k in range(pos, n):
            if not self.first[s[k]]:
                continue
            end = self.walk(self.root[s[k]], s, k + 1, n, &best)
            if end >= 0 and self.edge_start[end + 1] > self.edge_start[end]:      # a longer token goes on
                return k
        return n

    cdef Py_ssize_t next_final(self, const uint8_t* s, Py_ssize_t pos, Py_ssize_t n, Py_ssize_t* undecided,
                               Py_ssize_t* index) noexcept nogil:
        cdef Py_ssize_t at
        if pos > undecided[0]:              # a special token ran past it
            undecided[0] = self.prefix_start(s, pos, n)
        at = self.find(s, pos, n, index)
        return at if at < undecided[0] else undecided[0]

    def final_matches(self, const uint8_t[::1] data, bint final=True):
        """(matches, undecided) for UTF-8 `data`: matches = [(text_end, start, end, index), ...], the special
        tokens that are final, left to right (index: the token's place in the list given; the text before the
        token ends at text_end: start, or before the white space a token with lstrip takes); undecided: where
        the text still to come may change what follows, and the final text ends (len(data) when `final`, the
        text having ended; before white space at the end a token to come may take). The Python path's access to
        next_final, text_end and held, the rules the native encoder follows.

        >>> SpecialMatcher([b"<|a|>b", b"<|a|>"]).final_matches(b"x<|a|>y<|a|>", False)
        ([(1, 1, 6, 1)], 7)
        >>> SpecialMatcher([b"<m>"], [True]).final_matches(b"x <m> \\t", False)
        ([(1, 2, 5, 0)], 5)
        """
        cdef Py_ssize_t n = data.shape[0], pos = 0, index = 0, at, end, undecided = n
        cdef const uint8_t* s = &data[0] if n else NULL
        out = []
        if n == 0:
            return out, 0
        if not final:
            undecided = self.prefix_start(s, 0, n)
        while True:
            at = self.next_final(s, pos, n, &undecided, &index)
            if at >= undecided:
                break
            end = at + self.off[index + 1] - self.off[index]
            out.append((self.text_end(s, pos, at, index), at, end, index))
            pos = end
        if not final:
            undecided = self.held(s, pos, undecided)
        return out, undecided

    def matches(self, const uint8_t[::1] data):
        """[(start, end), ...] of the special tokens in data, left to right (for tests)."""
        cdef Py_ssize_t n = data.shape[0], pos = 0, index = 0, at
        out = []
        while n and pos < n:
            at = self.find(&data[0], pos, n, &index)
            if at >= n:
                break
            pos = at + self.off[index + 1] - self.off[index]
            out.append((at, pos))
        return out

    def undecided(self, const uint8_t[::1] data):
        """prefix_start(data, 0, len(data)): where the text may be the start of a token cut short (for tests)."""
        cdef Py_ssize_t n = data.shape[0]
        return self.prefix_start(&data[0], 0, n) if n else 0


@cython.final
cdef int _check_table(const uint8_t[::1] tokens, const int64_t[::1] offsets, Py_ssize_t m) except -1:
    """ValueError unless offsets (of a table of m pre-tokens, as arrays() gives them) rise from 0 to len(tokens)."""
    cdef Py_ssize_t k
    if offsets.shape[0] != m + 1 or offsets[0] != 0 or offsets[m] != tokens.shape[0]:
        raise ValueError("offsets must have len(counts) + 1 entries, from 0 to len(tokens)")
    for k in range(m):
        if offsets[k + 1] < offsets[k]:
            raise ValueError(f"offsets fall at {k}")
    return 0


cdef class PretokenCounter:
    """Distinct pre-tokens and their counts, accumulated natively over any number of chunks of UTF-8.

    add(data) cuts data at the special tokens (longest first; they are not counted) and counts the pre-tokens
    of each piece, scanned as a text of its own. Keys are copied into an arena the counter owns, so chunks
    may be dropped after add(); memory grows with the number of distinct pre-tokens only. Results come out in
    order of first occurrence, as a Counter over regex.findall would have them.

    Worked example: PretokenCounter(tables, 2, [b"<|e|>"]).add(b"a b<|e|>a b").to_dict() == {b"a": 2, b" b": 2}
    (tables: a UnicodeTables, kept for the counter's life; kind 2 is GPT2_PATTERN, 4 GPT4_PATTERN, 5 O200K_PATTERN, see
    _scan.pxd; kind 0, which takes tables None, only adds arrays).
    """
    cdef ReVec[Span] spans          # start = offset into arena (ReVec: growing is a realloc, not a copy)
    cdef vector[Slot] slots         # open addressing, linear probing, power-of-two size, at most half full
    cdef vector[HotKey] hot         # HOT_KEYS short pre-tokens and their spans (see HOT_KEYS), before a large
                                    # table (empty until one counts)
    cdef ReVec[uint8_t] arena
    cdef uint64_t mask
    cdef int64_t total_count
    cdef SpecialMatcher specials
    cdef UnicodeTables tables       # what t points into (None for kind 0)
    cdef const ScanTables* t
    cdef bint busy
    cdef readonly int kind

    def __cinit__(self, UnicodeTables tables, int kind, specials=()):
        cdef Slot empty
        self.kind = _kind(kind) if kind != 0 else 0      # kind 0: adds arrays only (needs no tables)
        if tables is None and kind != 0:
            raise TypeError("PretokenCounter needs a UnicodeTables to scan with")
        self.tables = tables
        self.t = &tables.t if tables is not None else NULL
        self.specials = SpecialMatcher(specials)
        empty.index = EMPTY_INDEX
        empty.tag = 0
        self.slots.assign(1024, empty)
        self.mask = 1023

    cdef void _make_hot_table(self) noexcept nogil:
        """hot, empty: made when a large table first counts (a small counter, most are, never needs it)."""
        cdef HotKey none
        none.head = 0
        none.length = 0
        none.index = 0
        self.hot.assign(HOT_KEYS, none)

    def __len__(self):
        return self.spans.size()

    def total(self):
        """The number of pre-tokens counted."""
        return self.total_count

    def add(self, const uint8_t[::1] data):
        """Count the pre-tokens of data, which must be valid UTF-8 (the caller checks) and start and end on
        a character boundary. Returns self."""
        cdef Py_ssize_t n = data.shape[0]
        if self.kind == 0:
            raise ValueError("this PretokenCounter (kind 0) only adds arrays")
        if n == 0:
            return self
        if self.busy:
            raise RuntimeError("PretokenCounter.add called from two threads at once")
        self.busy = True
        with nogil:
            self.add_buffer(&data[0], n)
        self.busy = False
        return self

    def add_documents(self, const uint8_t[::1] data, const int64_t[::1] bounds):
        """Count documents: document k is data[bounds[k]:bounds[k + 1]], each cut at the special tokens and
        scanned as a text of its own, exactly as add() of each one would (pre-tokens never cross documents).
        Same conditions on the data as add() (each document valid UTF-8). Returns self."""
        cdef Py_ssize_t m = bounds.shape[0] - 1, k, n = data.shape[0]
        if self.kind == 0:
            raise ValueError("this PretokenCounter (kind 0) only adds arrays")
        if m < 0 or bounds[0] != 0 or bounds[m] != n:
            raise ValueError("bounds must rise from 0 to len(data)")
        for k in range(m):
            if bounds[k + 1] < bounds[k]:
                raise ValueError(f"bounds fall at {k}")
        if n == 0:
            return self
        if self.busy:
            raise RuntimeError("PretokenCounter.add_documents called from two threads at once")
        self.busy = True
        cdef int64_t a, b
        cdef bint changed = False
        with nogil:
            for k in range(m):
                a, b = bounds[k], bounds[k + 1]     # (checked above, but another thread may write them since)
                if not 0 <= a <= b <= n:
                    changed = True
                    break
                if b > a:
                    self.add_buffer(&data[a], b - a)
        self.busy = False
        if changed:
            raise RuntimeError("bounds changed while they were read (another thread writes to them)")
        return self

    def to_dict(self):
        """dict[bytes, int] of the distinct pre-tokens, in order of first occurrence."""
        cdef Py_ssize_t k
        cdef Span* span
        cdef const char* base = <const char*>self.arena.data()
        out = {}
        for k in range(<Py_ssize_t>self.spans.size()):
            span = &self.spans[k]
            out[PyBytes_FromStringAndSize(base + span.start, span.length)] = span.count
        return out

    def arrays(self, bint release=False):
        """(tokens, offsets, counts): uint8 array of the distinct pre-tokens concatenated, int64 offsets
        (token k is tokens[offsets[k]:offsets[k + 1]]) and int64 counts, in order of first occurrence.
        release: the counter is emptied as they are made (its hash table freed first, its spans and bytes after:
        for a caller done with it, the arrays need not sit beside the whole table: 5.2 million pre-tokens of
        web-like text, 134 MB less at once)."""
        if self.busy:
            raise RuntimeError("PretokenCounter.arrays called while another thread adds to it")
        if release:
            self._free_table()          # (the table is freed here, before the arrays are made)
        try:
            tables = self._own_arrays(0, 0)
        except MemoryError:
            if release:                 # (its table is gone: not a counter to go on with)
                self._empty()
            raise
        if release:
            self._empty()
        return tables

    def memory(self):
        """The bytes its table fills: spans, hash table, key bytes and hot keys (what a memory budget watches: the
        spans and bytes grow by mremap, so the room reserved past them is not memory until written)."""
        return (self.spans.size() * sizeof(Span) + self.slots.size() * sizeof(Slot)
                + self.arena.size() + self.hot.size() * sizeof(HotKey))

    def spill(self, int fd, bint keep=False):
        """Write its pre-tokens and counts to the open file descriptor fd (at its start) as a run sorted by their
        bytes (_runs.pxd's format), emptying the counter: their order is sorted in its hash table's room
        (_runs.pxd's bpe_sort_span_keys), and the table freed after. Returns (entries, errno of writing or 0); with
        an error the counter is emptied all the same.
        keep: for a counter that goes on counting, its memory is kept (the hash table cleared in place, not
        freed): it fills the same room again without growing its table anew (each growth rehashes every span).

        >>> import os, tempfile
        >>> counter = PretokenCounter(None, 0).add_arrays(np.frombuffer(b"ab" b"a", np.uint8), np.array([0, 2, 3]),
        ...                                                np.array([2, 5]))
        >>> with tempfile.TemporaryFile() as f:
        ...     counter.spill(f.fileno()), len(counter), f.seek(0, 2)
        ((2, 0), 0, 51)
        """
        if self.busy:
            raise RuntimeError("PretokenCounter.spill called while another thread adds to it")
        cdef RunWriter writer
        cdef Py_ssize_t k, m = self.spans.size()
        cdef Span* span
        cdef int err
        # the order is sorted in the hash table's memory (16 bytes a span: a table at most half full has room),
        # which is cleared or freed after
        cdef SortKey* order = <SortKey*>self.slots.data()
        if 2 * <size_t>m > self.slots.size():
            raise RuntimeError("PretokenCounter.spill: the hash table is more than half full")
        for k in range(m):              # (a run's lengths are uint32: no pre-token of 2 GiB or more)
            if self.spans[k].length > 0x7FFFFFFF:
                raise ValueError(f"a pre-token of {self.spans[k].length:,} bytes: a run of counts holds pre-tokens "
                                 f"of less than 2 GiB")
        with nogil:
            err = run_open(&writer, fd)
            if err == 0:
                sort_span_keys(order, self.spans.data(), m, self.arena.data())
                for k in range(m):
                    if k + 16 < m:      # (the spans are read in the keys' order: at random)
                        prefetch(&self.spans[order[k + 16].index])
                    if k + 8 < m:
                        prefetch(self.arena.data() + self.spans[order[k + 8].index].start)
                    span = &self.spans[order[k].index]
                    run_put(&writer, self.arena.data() + span.start, <uint32_t>span.length, span.count)
                err = run_close(&writer)
            if keep:
                self._clear()
        if not keep:
            self._empty()
        return m, err

    cdef void _clear(self) noexcept nogil:
        """Empty the counter, keeping its memory: the hash table's slots emptied in place, no span, no byte."""
        cdef Slot empty
        cdef HotKey none
        cdef size_t k
        empty.index = EMPTY_INDEX
        empty.tag = 0
        for k in range(self.slots.size()):
            self.slots[k] = empty
        none.head = 0
        none.length = 0
        none.index = 0
        for k in range(self.hot.size()):
            self.hot[k] = none
        self.spans.resize(0)
        self.arena.resize(0)
        self.total_count = 0

    cdef tuple _own_arrays(self, int64_t extra_bytes, Py_ssize_t extra_words, bint fill=True):
        """(tokens, offsets, counts) with room for this counter's pre-tokens and extra_words more of extra_bytes
        bytes after them; with fill, its own filled in, in order (offsets and counts past them are not)."""
        cdef Py_ssize_t m = self.spans.size()
        cdef int64_t size = self._own_bytes()
        tokens = np.empty(size + extra_bytes, dtype=np.uint8)
        offsets = np.empty(m + extra_words + 1, dtype=np.int64)
        counts = np.empty(m + extra_words, dtype=np.int64)
        cdef uint8_t[::1] tv = tokens
        cdef int64_t[::1] ov = offsets, cv = counts
        if fill:
            self._fill_own(&tv[0] if tv.shape[0] else NULL, &ov[0], &cv[0] if cv.shape[0] else NULL)
        return tokens, offsets, counts

    cdef int64_t _own_bytes(self) noexcept nogil:
        cdef Py_ssize_t k
        cdef int64_t size = 0
        for k in range(<Py_ssize_t>self.spans.size()):
            size += self.spans[k].length
        return size

    cdef void _fill_own(self, uint8_t* tv, int64_t* ov, int64_t* cv) noexcept nogil:
        """This counter's pre-tokens into tokens, offsets and counts (room for them: _own_bytes() bytes)."""
        cdef Py_ssize_t k, m = self.spans.size()
        cdef Span* span
        ov[0] = 0
        for k in range(m):
            span = &self.spans[k]
            if span.length:
                memcpy(tv + ov[k], self.arena.data() + span.start, span.length)
            ov[k + 1] = ov[k] + span.length
            cv[k] = span.count

    cdef void add_buffer(self, const uint8_t* s, Py_ssize_t n) noexcept nogil:
        """Cut s[0:n] at the special tokens (SpecialMatcher.find) and count the pieces between them."""
        cdef Py_ssize_t pos = 0, at, k = 0
        while pos < n:
            at = self.specials.find(s, pos, n, &k)
            self.add_range(s, pos, at, s + n)
            if at >= n:
                return
            pos = at + self.specials.off[k + 1] - self.specials.off[k]

    cdef void add_range(self, const uint8_t* s, Py_ssize_t i, Py_ssize_t n, const uint8_t* end) noexcept nogil:
        """Count the pre-tokens of s[i:n], scanned as a text of its own (the scanners look no further than n);
        end is the end of the buffer, for reading whole words near n.

        A large table is far bigger than the cache, and counting a pre-token reads a slot, a span and the
        span's bytes there, each at random and each needing the one before: so the pre-tokens wait in a queue
        (see QUEUE), and each read is asked for some pre-tokens before it is needed (a prefetch, which does
        not wait). On 100 MB of the web-like corpus (3.8 million distinct pre-tokens) one process counts
        1.8x as fast so. They are counted in order, so first occurrences keep their order. A short pre-token
        that hot holds (one counted lately, as most are) is counted at once, without the queue: the real
        corpus on one process 6% faster so, 150 MB of the web-like one 12%. (A table in the cache gains
        nothing from either.)"""
        cdef Pending queue[QUEUE]
        cdef Pending* q
        cdef Py_ssize_t e, queued = 0       # pre-tokens scanned: queue[queued % QUEUE] is the newest
        cdef Py_ssize_t k, length
        cdef uint64_t head, h
        cdef bint at_end = False
        if self.slots.size() < QUEUE_FROM_SLOTS:     # a table in the cache: the queue would only cost
            while i < n:
                e = _next_end(self.kind, self.t, s, i, n, &at_end)
                self.add_span_n(s + i, e - i, end, 1)
                i = e
            return
        if self.hot.empty():
            self._make_hot_table()
        while i < n:
            e = _next_end(self.kind, self.t, s, i, n, &at_end)
            length = e - i
            head = load_head(s + i, length, end)
            h = hash_bytes(s + i, length, head, end)
            if self.add_hot(head, length, h):
                i = e
                continue
            if queued >= QUEUE:
                q = &queue[queued & (QUEUE - 1)]
                self.make_hot(q, self.add_hashed(q.p, q.length, q.head, q.hash, 1))
            self.enqueue_hashed(&queue[queued & (QUEUE - 1)], s + i, length, head, h)
            if queued >= ASK_SPAN:
                self.ask_span(&queue[(queued - ASK_SPAN) & (QUEUE - 1)])
            if queued >= ASK_KEY:
                self.ask_key(&queue[(queued - ASK_KEY) & (QUEUE - 1)])
            queued += 1
            i = e
        for k in range(queued - QUEUE if queued > QUEUE else 0, queued):
            q = &queue[k & (QUEUE - 1)]
            self.make_hot(q, self.add_hashed(q.p, q.length, q.head, q.hash, 1))

    cdef inline void enqueue(self, Pending* q, const uint8_t* p, Py_ssize_t length, const uint8_t* end) noexcept nogil:
        cdef uint64_t head = load_head(p, length, end)
        self.enqueue_hashed(q, p, length, head, hash_bytes(p, length, head, end))

    cdef inline void enqueue_hashed(self, Pending* q, const uint8_t* p, Py_ssize_t length, uint64_t head,
                                    uint64_t h) noexcept nogil:
        q.p = p
        q.length = length
        q.head = head
        q.hash = h
        prefetch(&self.slots[h & self.mask])

    cdef inline void make_hot(self, const Pending* q, int64_t index) noexcept nogil:
        """q's pre-token, counted at spans[index], is hot from now on when it is short (see add_hot)."""
        cdef HotKey* hot
        if q.length <= 8:
            hot = &self.hot[(q.hash >> 40) & (HOT_KEYS - 1)]
            hot.head = q.head
            hot.length = q.length
            hot.index = index

    cdef inline bint add_hot(self, uint64_t head, Py_ssize_t length, uint64_t h) noexcept nogil:
        """Count one more of the pre-token (head, length: at most 8 bytes; hash h) if hot holds it; whether it
        did (else the table counts it, and it becomes hot)."""
        cdef HotKey* hot = &self.hot[(h >> 40) & (HOT_KEYS - 1)]
        if length > 8 or hot.length != length or hot.head != head:
            return False
        self.spans[hot.index].count += 1
        self.total_count += 1
        return True

    cdef inline void ask_span(self, const Pending* q) noexcept nogil:
        """Ask for the span of q's slot (the first of its probe run) when its tag matches: most likely q's."""
        cdef const Slot* slot = &self.slots[q.hash & self.mask]
        if slot.index != EMPTY_INDEX and slot.tag == slot_tag(q.hash):
            prefetch(&self.spans[slot.index])

    cdef inline void ask_key(self, const Pending* q) noexcept nogil:
        """Ask for the bytes past the first 8 (which the span holds) of that span, when q is that long. (The
        same slot test as ask_span, written out: a shared helper made the web-like corpus count 4% slower.)"""
        cdef const Slot* slot = &self.slots[q.hash & self.mask]
        if q.length > 8 and slot.index != EMPTY_INDEX and slot.tag == slot_tag(q.hash):
            prefetch(self.arena.data() + self.spans[slot.index].start + 8)

    def add_arrays(self, const uint8_t[::1] tokens, const int64_t[::1] offsets, const int64_t[::1] counts):
        """Add counted pre-tokens, as arrays() gives them (the caller checks that counts are >= 0), to this
        counter. Returns self. Offsets that do not rise from 0 to len(tokens) are a ValueError: the loop below
        reads tokens[offsets[k]:offsets[k + 1]] (PretokenCounts.from_arrays(..., check=False) passes arrays
        unchecked)."""
        cdef Py_ssize_t m = counts.shape[0], k
        _check_table(tokens, offsets, m)
        if m == 0:
            return self
        if self.busy:
            raise RuntimeError("PretokenCounter.add_arrays called from two threads at once")
        self.busy = True
        cdef const uint8_t* base = &tokens[0] if tokens.shape[0] else <const uint8_t*>b""
        cdef const uint8_t* end = base + tokens.shape[0]
        cdef size_t size = self.slots.size()
        cdef Pending queue[QUEUE]
        cdef Pending* q
        cdef Py_ssize_t first
        cdef int64_t a, b, total = tokens.shape[0]
        cdef bint changed = False, queued
        with nogil:
            while 2 * (self.spans.size() + m) > size:      # room for all of them at once: no growing midway
                size *= 2
            if size != self.slots.size():
                self.resize_slots(size)
            self.spans.reserve(self.spans.size() + m)
            queued = self.slots.size() >= QUEUE_FROM_SLOTS  # (else a table in the cache: the queue would only cost)
            # each offset is read once, checked, and kept in the queue until its pre-token is counted (they were
            # checked above too, but another thread may write them since). A large table is past the cache: the
            # pre-tokens wait in a queue as add_range's do, their slot, span and key asked for before they are
            # counted (adding half of 150 MB of web-like text's table to the other half's, 2.9 million pre-tokens,
            # took 350 ms with only the slot asked for, 285 ms so; on the real corpus's, whose 600,000 stay in
            # this machine's 480 MB cache, 3% less)
            for k in range(m):
                a, b = offsets[k], offsets[k + 1]
                if not 0 <= a <= b <= total:
                    changed = True
                    break
                if not queued:
                    self.add_span_n(base + a, b - a, end, counts[k])
                    continue
                if k >= QUEUE:
                    q = &queue[k & (QUEUE - 1)]
                    self.add_hashed(q.p, q.length, q.head, q.hash, counts[k - QUEUE])
                self.enqueue(&queue[k & (QUEUE - 1)], base + a, b - a, end)
                if k >= ASK_SPAN:
                    self.ask_span(&queue[(k - ASK_SPAN) & (QUEUE - 1)])
                if k >= ASK_KEY:
                    self.ask_key(&queue[(k - ASK_KEY) & (QUEUE - 1)])
            if not changed and queued:
                first = m - QUEUE if m > QUEUE else 0
                for k in range(first, m):
                    q = &queue[k & (QUEUE - 1)]
                    self.add_hashed(q.p, q.length, q.head, q.hash, counts[k])
        self.busy = False
        if changed:
            raise RuntimeError("offsets changed while they were read (another thread writes to them)")
        return self

    def arrays_with(self, const uint8_t[::1] tokens, const int64_t[::1] offsets, const int64_t[::1] counts,
                    int threads=1):
        """arrays(release=True) of this counter with a table of distinct pre-tokens added (as arrays() gives them;
        the caller checks that counts are >= 0): add_arrays then arrays, but the table's pre-tokens are only
        looked up here, not inserted: the ones found add to their counts, the others follow this counter's in
        the arrays, in the table's order (the order add_arrays then arrays gives). So the hash table neither
        grows nor takes the new pre-tokens (the real corpus on 2 processes: 600,000 of them, 380,000 new), and
        it is freed before the arrays are made. On any error past the checks of the arguments the counter is
        left empty (its table is gone by then, or the table's counts are partly added).

        threads: look the table up in that many threads at most (one range of its pre-tokens each, for a table
        of LOOK_UP_PER_THREAD pre-tokens a thread or more; their counts added atomically), and then fill the
        arrays in two. For a caller whose other cores are idle by then (count_pretokens' workers have sent
        their tables)."""
        cdef Py_ssize_t m = counts.shape[0], k
        _check_table(tokens, offsets, m)
        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        if self.busy:
            raise RuntimeError("PretokenCounter.arrays_with called from two threads at once")
        self.busy = True
        try:
            return self._arrays_with(tokens, offsets, counts, threads)
        except BaseException:
            self._empty()
            raise
        finally:
            self.busy = False

    cdef tuple _arrays_with(self, const uint8_t[::1] tokens, const int64_t[::1] offsets, const int64_t[::1] counts,
                            int threads):
        cdef Py_ssize_t m = counts.shape[0], k, mine = self.spans.size(), new_words = 0
        cdef const uint8_t* base = &tokens[0] if tokens.shape[0] else <const uint8_t*>b""
        cdef int64_t total = tokens.shape[0], new_bytes = 0
        cdef bint changed = False
        cdef vector[uint8_t] fresh              # 1 for each of the table's pre-tokens not in this counter
        cdef vector[LookUp] parts
        cdef int n = <int>min(<Py_ssize_t>threads, max(<Py_ssize_t>1, m // LOOK_UP_PER_THREAD))
        with nogil:
            fresh.assign(m, 0)
            parts.resize(n)
            for k in range(n):
                parts[k].owner = <void*>self
                parts[k].base = base
                parts[k].total = total
                parts[k].offsets = &offsets[0]
                parts[k].counts = &counts[0] if m else NULL
                parts[k].fresh = fresh.data()
                parts[k].lo = m * k // n
                parts[k].hi = m * (k + 1) // n
                parts[k].new_words = 0
                parts[k].new_bytes = 0
                parts[k].shared = n > 1
                parts[k].changed = False
            run_in_threads(_look_up_part, <char*>parts.data(), sizeof(LookUp), n)
            for k in range(n):
                new_words += parts[k].new_words
                new_bytes += parts[k].new_bytes
                changed = changed or parts[k].changed
        if changed:
            raise RuntimeError("offsets changed while they were read (another thread writes to them)")
        self._free_table()              # (before the arrays are made)
        out_tokens, out_offsets, out_counts = self._own_arrays(new_bytes, new_words, False)
        cdef uint8_t[::1] tv = out_tokens
        cdef int64_t[::1] ov = out_offsets, cv = out_counts
        cdef FillOut fill[2]
        with nogil:
            # the counter's own pre-tokens and the table's new ones after them, in two threads when the lookups
            # had several and there are both (the new ones' offsets read again: checked against the room made)
            for k in range(2):
                fill[k].owner = <void*>self
                fill[k].tv = &tv[0] if tv.shape[0] else NULL
                fill[k].ov = &ov[0]
                fill[k].cv = &cv[0] if cv.shape[0] else NULL
                fill[k].which = k
                fill[k].base = base
                fill[k].total = total
                fill[k].offsets = &offsets[0]
                fill[k].counts = &counts[0] if m else NULL
                fill[k].fresh = fresh.data()
                fill[k].m = m
                fill[k].first = mine
                fill[k].words = new_words
                fill[k].at = tv.shape[0] - new_bytes
                fill[k].room = tv.shape[0]
                fill[k].changed = False
            if n > 1 and mine and new_words:
                run_in_threads(_fill_out_part, <char*>fill, sizeof(FillOut), 2)
            else:
                _fill_out_part(&fill[0])
                _fill_out_part(&fill[1])
        if fill[1].changed:
            raise RuntimeError("offsets changed while they were read (another thread writes to them)")
        self._empty()
        return out_tokens, out_offsets, out_counts

    cdef void _look_up(self, LookUp* part) noexcept nogil:
        """arrays_with's lookups of the table's pre-tokens part.lo .. part.hi - 1: each offset read once and checked
        (another thread may write them), kept in the queue until its pre-token is looked up; a table past the
        cache asks for the slot, span and key first (add_range). Several threads may run this at once on one
        counter for disjoint ranges (part.shared: add_found adds atomically, and leaves total_count alone)."""
        cdef Pending queue[QUEUE]
        cdef Pending* q
        cdef Py_ssize_t k, j, lo = part.lo, hi = part.hi
        cdef const int64_t* offsets = part.offsets
        cdef const int64_t* counts = part.counts
        cdef const uint8_t* base = part.base
        cdef const uint8_t* end = base + part.total
        cdef int64_t a, b, new_bytes = 0
        cdef Py_ssize_t new_words = 0
        cdef uint8_t* fresh = part.fresh
        cdef bint queued = self.slots.size() >= QUEUE_FROM_SLOTS, shared = part.shared
        for k in range(lo, hi):
            a, b = offsets[k], offsets[k + 1]
            if not 0 <= a <= b <= part.total:
                part.changed = True
                break
            self.enqueue(&queue[k & (QUEUE - 1)], base + a, b - a, end)
            if queued:
                if k - lo >= ASK_SPAN:
                    self.ask_span(&queue[(k - ASK_SPAN) & (QUEUE - 1)])
                if k - lo >= ASK_KEY:
                    self.ask_key(&queue[(k - ASK_KEY) & (QUEUE - 1)])
                j = k - (QUEUE - 1)
            else:
                j = k
            if j >= lo:
                q = &queue[j & (QUEUE - 1)]
                if not self.add_found(q.p, q.length, q.head, q.hash, counts[j], shared):
                    fresh[j] = 1
                    new_words += 1
                    new_bytes += q.length
        if not part.changed:
            for j in range(max(lo, hi - (QUEUE - 1)) if queued else hi, hi):
                q = &queue[j & (QUEUE - 1)]
                if not self.add_found(q.p, q.length, q.head, q.hash, counts[j], shared):
                    fresh[j] = 1
                    new_words += 1
                    new_bytes += q.length
        part.new_words = new_words      # (once: the parts sit side by side, a write each would share their lines)
        part.new_bytes = new_bytes

    cdef void _free_table(self):
        """Free the hash table (a table of 1024 empty slots in its place); the spans and bytes stay."""
        cdef Slot empty
        cdef vector[Slot] old
        empty.index = EMPTY_INDEX
        empty.tag = 0
        old.assign(1024, empty)
        self.slots.swap(old)
        self.mask = 1023
        old.clear()
        old.shrink_to_fit()

    cdef void _empty(self):
        """Empty the counter: no pre-token, no count (what arrays(release=True) leaves)."""
        self._free_table()
        self.spans.release()
        self.arena.release()
        self.total_count = 0
        vector[HotKey]().swap(self.hot)     # (its spans are gone)

    cdef inline bint add_found(self, const uint8_t* p, Py_ssize_t length, uint64_t head, uint64_t h,
                               int64_t n, bint shared) noexcept nogil:
        """Add n to the count of p[0:length] (first bytes head, hash h) if this counter holds it; whether it did.
        Not to total_count: arrays_with, its one user, empties the counter after, and runs it in several threads
        at once (shared: then the add is atomic, for a table that lists a pre-token twice, as one another thread
        rewrites may). (add_hashed's probe, written out: a probe shared by both cost add_range 2% more
        instructions.)"""
        cdef uint64_t pos = h & self.mask
        cdef uint32_t tag = slot_tag(h)
        cdef Slot* slot
        cdef Span* span
        while True:
            slot = &self.slots[pos]
            if slot.index == EMPTY_INDEX:
                return False
            if slot.tag == tag:
                span = &self.spans[slot.index]
                if span.length == length and span.head == head and tail_equal(self.arena.data() + span.start, p,
                                                                              length):
                    if shared:
                        atomic_add_int64(&span.count, n)
                    else:
                        span.count += n
                    return True
            pos = next_slot(pos, self.mask)

    cdef inline void add_span_n(self, const uint8_t* p, Py_ssize_t length, const uint8_t* end, int64_t n) noexcept nogil:
        cdef uint64_t head = load_head(p, length, end)
        self.add_hashed(p, length, head, hash_bytes(p, length, head, end), n)

    cdef inline int64_t add_hashed(self, const uint8_t* p, Py_ssize_t length, uint64_t head, uint64_t h,
                                   int64_t n) noexcept nogil:
        """Add n to the count of p[0:length], whose first bytes are head and hash h; returns its span's index."""
        cdef uint64_t pos = h & self.mask
        cdef uint32_t tag = slot_tag(h)
        cdef Slot* slot
        cdef Span* span
        cdef Span fresh
        cdef size_t old
        self.total_count += n
        while True:
            slot = &self.slots[pos]
            if slot.index == EMPTY_INDEX:
                break
            if slot.tag == tag:
                span = &self.spans[slot.index]
                if span.length == length and span.head == head and tail_equal(self.arena.data() + span.start, p,
                                                                              length):
                    span.count += n
                    return slot.index
            pos = next_slot(pos, self.mask)
        old = self.arena.size()
        if length:                      # (an empty first key: the arena holds no buffer yet, no memcpy to NULL)
            self.arena.resize(old + length)
            memcpy(self.arena.data() + old, p, length)
        fresh.start = old
        fresh.length = length
        fresh.count = n
        fresh.hash = h
        fresh.head = head
        slot.index = <int32_t>self.spans.size()
        slot.tag = tag
        self.spans.push_back(fresh)
        if 2 * self.spans.size() > self.slots.size():
            self.grow()
        return <int64_t>self.spans.size() - 1

    cdef void grow(self) noexcept nogil:
        self.resize_slots(self.slots.size() * 2)

    cdef void resize_slots(self, size_t size) noexcept nogil:
        cdef Slot empty
        empty.index = EMPTY_INDEX
        empty.tag = 0
        cdef size_t k
        fill_huge(self.slots, size, empty)      # (on huge pages: the probes read it at random)
        self.mask = size - 1
        for k in range(self.spans.size()):
            slot_place(self.slots.data(), self.mask, self.spans[k].hash, <int32_t>k)


def hash_of(const uint8_t[::1] data):
    """hash_bytes of data with this module's key (hash_seed): for tests that craft keys to meet in the counter's
    table."""
    cdef Py_ssize_t n = data.shape[0]
    if n == 0:
        return hash_bytes(NULL, 0, 0, NULL)
    return hash_bytes(&data[0], n, load_head(&data[0], n, &data[0] + n), &data[0] + n)


def first_repeat(const uint8_t[::1] tokens, const int64_t[::1] offsets):
    """The index of the first pre-token of (tokens, offsets) whose bytes an earlier one has, or -1 when every
    one is listed once (offsets as PretokenCounter.arrays gives them; the caller checks they rise from 0 to
    len(tokens)). PretokenCounts checks its arrays with this: 8 bytes a pre-token (its hash) and a table of
    4-byte indices at most half full, where adding the arrays to a PretokenCounter (merge_arrays) copied every
    byte into a table of about 60 bytes a pre-token (11.5 GB and 45 s for the 88.6 million of 5 GB of web-like
    text; this: under 2 GB and a few seconds).

    >>> import numpy as np
    >>> first_repeat(np.frombuffer(b"abcab", dtype=np.uint8), np.array([0, 2, 3, 5]))
    2
    """
    cdef Py_ssize_t n = offsets.shape[0] - 1, k
    if n < 2:
        return -1
    if n >= <Py_ssize_t>0xFFFFFFFF:
        raise ValueError("more than 4,294,967,294 pre-tokens")
    cdef size_t size = 4
    while size < 2 * <size_t>n:
        size <<= 1
    cdef size_t mask = size - 1, slot
    cdef vector[uint64_t] hashes
    cdef vector[uint32_t] table
    cdef const uint8_t* base = &tokens[0] if tokens.shape[0] else <const uint8_t*>b""
    cdef const uint8_t* end = base + tokens.shape[0]
    cdef const uint8_t* p
    cdef int64_t a, b, c, d, total = tokens.shape[0]
    cdef uint64_t h
    cdef uint32_t j, empty = <uint32_t>-1
    cdef Py_ssize_t found = -1
    cdef bint changed = False
    # every offset is checked where it is read (the caller checked them, but another thread may write them since:
    # a value read twice is never trusted the second time)
    with nogil:
        hashes.resize(n)
        table.assign(size, empty)
        for k in range(n):
            a, b = offsets[k], offsets[k + 1]
            if not 0 <= a <= b <= total:
                changed = True
                break
            p = base + a
            hashes[k] = hash_bytes(p, b - a, load_head(p, b - a, end), end)
        for k in range(0 if changed else n):
            if k + 8 < n:               # the table is far bigger than the cache
                prefetch(&table[hashes[k + 8] & mask])
            h = hashes[k]
            slot = h & mask
            a, b = offsets[k], offsets[k + 1]
            while table[slot] != empty:
                j = table[slot]
                if hashes[j] == h:
                    c, d = offsets[j], offsets[j + 1]
                    if not (0 <= a <= b <= total and 0 <= c <= d <= total):
                        changed = True
                        break
                    if d - c == b - a and memcmp(base + c, base + a, b - a) == 0:
                        found = k
                        break
                slot = (slot + 1) & mask
            if found >= 0 or changed:
                break
            table[slot] = <uint32_t>k
    if changed:
        raise RuntimeError("offsets changed while they were read (another thread writes to them)")
    return found


def merge_arrays(parts):
    """The sum of several (tokens, offsets, counts) tables (see PretokenCounter.arrays) as one, its
    pre-tokens in order of first appearance (the first table's first)."""
    cdef list tables = list(parts)
    cdef Py_ssize_t n = len(tables), k
    counter = PretokenCounter(None, 0)
    if n == 0:
        return counter.arrays(release=True)
    for k in range(n - 1):                  # (no negative index: this module does not wrap around)
        tokens, offsets, counts = tables[k]
        counter.add_arrays(tokens, offsets, counts)
    tokens, offsets, counts = tables[n - 1]
    return counter.arrays_with(tokens, offsets, counts)


def count(UnicodeTables tables not None, const uint8_t[::1] data, int kind, specials=()):
    """dict[bytes, int] of the pre-tokens of valid UTF-8 data (classes from tables), in order of first
    occurrence; specials (bytes, longest first) cut the data and are not counted. See PretokenCounter."""
    return PretokenCounter(tables, kind, specials).add(data).to_dict()


cdef void _look_up_part(void* arg) noexcept nogil:
    """run_in_threads' function for PretokenCounter.arrays_with (a LookUp)."""
    cdef LookUp* part = <LookUp*>arg
    (<PretokenCounter>part.owner)._look_up(part)


cdef void _fill_out_part(void* arg) noexcept nogil:
    """run_in_threads' function for PretokenCounter.arrays_with's arrays (a FillOut)."""
    cdef FillOut* part = <FillOut*>arg
    cdef Py_ssize_t j, k = part.first, stop = part.first + part.words
    cdef int64_t a, b, at = part.at
    if part.which == 0:
        (<PretokenCounter>part.owner)._fill_own(part.tv, part.ov, part.cv)
        return
    for j in range(part.m):
        if not part.fresh[j]:
            continue
        a, b = part.offsets[j], part.offsets[j + 1]
        if not (0 <= a <= b <= part.total and k < stop and at + (b - a) <= part.room):
            part.changed = True
            return
        if b > a:
            memcpy(part.tv + at, part.base + a, b - a)
        at += b - a
        part.ov[k + 1] = at
        part.cv[k] = part.counts[j]
        k += 1
    if k != stop or at != part.room:
        part.changed = True
