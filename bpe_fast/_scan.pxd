# Declarations other Cython modules may cimport (the encoder scans with these, without Python objects).
from libc.stdint cimport uint8_t, uint16_t, int32_t, uint32_t, int64_t
from libc.string cimport memchr
from libcpp.vector cimport vector

cdef enum:
    KIND_GPT2 = 2   # GPT2_PATTERN
    KIND_GPT4 = 4   # GPT4_PATTERN
    KIND_O200K = 5  # O200K_PATTERN
    KIND_LLAMA3 = 6 # LLAMA3_PATTERN: GPT4_PATTERN but for a whitespace run that ends the text
    KIND_QWEN2 = 7  # QWEN2_PATTERN: LLAMA3_PATTERN with digits one at a time
    KIND_TEKKEN = 8 # TEKKEN_PATTERN: O200K_PATTERN without contractions, digits one at a time
    KIND_DEEPSEEK3 = 9  # DEEPSEEK3_PATTERN: DeepSeek V3's three Splits
    KIND_KIMI = 10  # KIMI_PATTERN: O200K_PATTERN with runs of Han apart, no "/" after punctuation
    KIND_STARCODER = 11  # STARCODER_PATTERN: GPT2_PATTERN with digits apart (HF's Digits before ByteLevel)
    KIND_BLOOM = 12  # BLOOM_PATTERN: BLOOM's Isolated Split, the text between its matches pieces too


cdef inline bint known_kind(int kind) noexcept nogil:
    """Whether kind is one of the KIND_ numbers above."""
    return (kind == KIND_GPT2 or kind == KIND_GPT4 or kind == KIND_O200K or kind == KIND_LLAMA3 or kind == KIND_QWEN2
            or kind == KIND_TEKKEN or kind == KIND_DEEPSEEK3 or kind == KIND_KIMI or kind == KIND_STARCODER
            or kind == KIND_BLOOM)

# The code point classes every scanner reads, as plain C (so scans run without the GIL): the class bits of code
# point cp are st2[st1[cp >> 8] * 256 + (cp & 255)] (L=1, N=2, S=4, CR/LF=8, o200k's upper=16 and lower=32,
# DeepSeek V3's punctuation and symbols=64, Han=128).
# A UnicodeTables owns one (and the arrays it points into) and never changes it once built.
cdef struct ScanTables:
    const uint16_t* st1             # code point >> 8 -> block number
    const uint8_t* st2              # block number * 256 + (code point & 255) -> class bits
    uint8_t ascii_cls[128]          # the class bits of the ASCII code points (st2's first block)
    uint8_t ascii_fold[128]         # GPT-4 contraction letter ('s', 'd', ...) an ASCII byte case-folds to, or 0
    const uint32_t* fold_cps        # non-ASCII code points that (?i) matches to a contraction letter
    const uint8_t* fold_letters     # ... and that letter
    Py_ssize_t n_folds
    bint swar_letters               # ASCII \p{L} is exactly A-Z a-z and the machine is little-endian
    bint swar_lower                 # ASCII o200k lower (W) is exactly a-z, and the machine is little-endian
    const ScanTables* han_apart     # the same but for Kimi K2's letter runs: Han neither upper nor lower there


cdef class UnicodeTables:
    """Owns a ScanTables and its storage; built once by its constructor (bpe_fast.pretokenize.native_tables
    makes the package's one), immutable after. Whoever scans with t keeps the object alive meanwhile."""
    cdef vector[uint16_t] stage1
    cdef vector[uint8_t] stage2
    cdef vector[uint8_t] stage2_han_apart
    cdef vector[uint32_t] fold_cps
    cdef vector[uint8_t] fold_letters
    cdef ScanTables t
    cdef ScanTables t_han_apart


# Append the end offset of every pre-token of the valid UTF-8 s[0:n] to out (the first pre-token starts at 0).
# t: the classes (a UnicodeTables' t), kind: one of the KIND_ numbers.
cdef void scan_ends(const ScanTables* t, const uint8_t* s, Py_ssize_t n, int kind,
                    vector[int64_t]* out) noexcept nogil

# Scan the valid UTF-8 s[0:n] from byte i (a pre-token start), writing pre-token ends to out[count[0]:cap] and
# advancing count[0]; returns where it stopped (n when done). t and kind as for scan_ends.
cdef Py_ssize_t scan_block(const ScanTables* t, const uint8_t* s, Py_ssize_t i, Py_ssize_t n, int kind,
                           int64_t* out, Py_ssize_t* count, Py_ssize_t cap) noexcept nogil

# scan_block for text that may go on after n: stops (with count[0] < cap) before the first pre-token that text
# after n could change.
cdef Py_ssize_t scan_block_final(const ScanTables* t, const uint8_t* s, Py_ssize_t i, Py_ssize_t n, int kind,
                                 int64_t* out, Py_ssize_t* count, Py_ssize_t cap) noexcept nogil

# Byte offset of the first invalid UTF-8 sequence in s[0:n] (as bytes.decode reports it), or -1.
cdef Py_ssize_t utf8_first_error(const uint8_t* s, Py_ssize_t n) noexcept nogil

# utf8_first_error, and when s[0:n] is valid, how many code points it holds (chars) and its greatest lead byte
# (widest: 0 if all ASCII; below 0xC4 none is past U+00FF, below 0xF0 none past U+FFFF).
cdef Py_ssize_t utf8_measure(const uint8_t* s, Py_ssize_t n, Py_ssize_t* chars, uint8_t* widest) noexcept nogil


cdef inline Py_ssize_t line_end(const uint8_t* s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    """Where the line that starts at s[i] (i < n) ends: the index of the next newline at or after i, or n. The
    line readers of files (merges.txt, .tiktoken, JSON lines) all find their lines with it."""
    cdef const uint8_t* p = <const uint8_t*>memchr(s + i, 0x0A, n - i)
    return n if p == NULL else p - s

# Start of the run of \s code points (classes from t) that ends the valid UTF-8 s[0:n] (n if s does not end in \s).
cdef Py_ssize_t trailing_space_start(const ScanTables* t, const uint8_t* s, Py_ssize_t n) noexcept nogil


cdef class SpecialMatcher:
    """Finds special tokens (UTF-8 bytes, longest first) in UTF-8 text, as the alternation regex would."""
    cdef vector[int64_t] off        # token k is tokens[off[k]:off[k + 1]]
    cdef vector[uint8_t] tokens
    cdef uint8_t first[256]         # first[b]: some token starts with byte b
    cdef int nfirst
    cdef uint8_t only_first
    # The tokens as a trie of their bytes: node 0 is the root; node v's children are edge_child[edge_start[v]:
    # edge_start[v + 1]], reached by the bytes edge_byte[...] (ascending); node_token[v]: the token ending at v
    # (its index), or -1. A position is tried in as many steps as the longest token it starts, whatever the
    # number of tokens (a loop over the list cost o200k_harmony's 1,091 tokens at every '<' of the text).
    cdef int32_t root[256]          # the root's child by byte, or -1
    cdef vector[int32_t] edge_start
    cdef vector[uint8_t] edge_byte
    cdef vector[int32_t] edge_child
    cdef vector[int32_t] node_token
    cdef int _build_trie(self, list specials) except -1
    # The deepest node reached from the root's child `node` along s[at:n] (-1 if the walk leaves the trie),
    # with best[0] the last token passed on the way (the longest that starts there), left as it was if none.
    cdef int32_t walk(self, int32_t node, const uint8_t* s, Py_ssize_t at, Py_ssize_t n,
                      Py_ssize_t* best) noexcept nogil
    cdef readonly Py_ssize_t longest
    cdef vector[uint8_t] lstrip     # lstrip[k]: token k takes the white space before it (HF's lstrip)
    cdef readonly bint any_lstrip
    # Where the text before token `index` found at `at` ends: `at`, or for a token with lstrip the start of the
    # run of white space (Unicode's White_Space, as Rust's char::is_whitespace) before it, not before pos.
    cdef Py_ssize_t text_end(self, const uint8_t* s, Py_ssize_t pos, Py_ssize_t at, Py_ssize_t index) noexcept nogil
    # Of a text that may go on: where the text in s[pos:undecided] that is final ends (before the run of white
    # space that ends it when a token to come may take it).
    cdef Py_ssize_t held(self, const uint8_t* s, Py_ssize_t pos, Py_ssize_t undecided) noexcept nogil
    # Start of the leftmost token in s[pos:n] (at that start, the first in the list, so the longest), or n;
    # index receives which token it is.
    cdef Py_ssize_t find(self, const uint8_t* s, Py_ssize_t pos, Py_ssize_t n, Py_ssize_t* index) noexcept nogil
    # The first k >= pos with s[k:n] a proper prefix of some token, or n: from k on, whether a token starts
    # depends on bytes not yet seen.
    cdef Py_ssize_t prefix_start(self, const uint8_t* s, Py_ssize_t pos, Py_ssize_t n) noexcept nogil
    # The rule for which tokens are final in a text that may go on: the start of the next token in s[pos:n]
    # that text still to come cannot change, or undecided[0] when there is none before it. undecided[0] starts
    # as n for a final text, else as prefix_start(s, 0, n), and is moved on when a token ran past it; index
    # receives which token it is. The one rule of the encoder (BPECore) and of the Python path (final_matches).
    cdef Py_ssize_t next_final(self, const uint8_t* s, Py_ssize_t pos, Py_ssize_t n, Py_ssize_t* undecided,
                               Py_ssize_t* index) noexcept nogil
