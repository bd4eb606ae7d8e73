# Hashing and open addressing, shared by the native modules (cimport what you need; everything here is inline).
#
# Three hashes of bytes, on purpose:
# * hash_bytes: the hash of a byte string, for tables keyed by bytes (the pre-token counter in _scan, the
#   encoder's pre-token tables in _encode, the rank table in _ranks). Eight bytes at a time, mixed by mix64.
# * rolling_hash: a polynomial hash the merge engine (_train) extends without reading bytes again: the hash of
#   a concatenation comes from its halves' hashes in O(1) (rolling_concat). Not well mixed: tables index it
#   through mix64.
# * hash_wide: hash_bytes for keys of less than 72 bytes, four words at a time after that, for tables of tokens
#   that may be megabytes (_gpt2_files' index of a vocabulary); it keeps the check of a key's length out of
#   hash_bytes, the counter's and the encoder's.
# Integer keys are mixed by mix64 too: rolling hashes (a table of Slot, h & mask first) and pair_key (pair
# tables, pair_slot first). Every table here is open addressing with linear probing: a power-of-two number of
# slots (table_size), at most half full, then next_slot.
#
# hash_bytes is keyed by a secret seed, drawn from os.urandom when a module that uses it is imported (each
# module has its own: no hash of it leaves the module, nor the process), so that keys crafted to share a slot
# (under a known key they are easy to compute: the hash inverts) cannot be made in advance. What the key does
# not change was how one mix64 spreads the last word: keys that differed only in its top bits shared their
# hashes' low bits (2^15 keys one slot of a 2^17-slot table), which is why a key of 8 bytes or more gets a
# second mix at the end. BPE_FAST_HASH_SEED=N fixes the key (to reproduce a run exactly, or count
# instructions). Nothing bpe_fast returns depends on it: tables give their entries in the order they were added.
#
# Worked example: hash_bytes(b"ab", 2, head, end) with head = load_head(b"ab", 2, end) = 0x6261 (zero-padded,
# little-endian) is mix64(0x6261 ^ (2 << 56) ^ seed): one mix for keys of less than 8 bytes (two for 8).
from libc.stdint cimport int32_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcmp, memcpy


cdef extern from *:
    """
    static const uint64_t bpe_fast_mix64_factor = 0xff51afd7ed558ccdULL;
    """
    const uint64_t MIX64_FACTOR "bpe_fast_mix64_factor"


cdef inline uint64_t mix64(uint64_t x) noexcept nogil:
    """A 64-bit key spread over all 64 bits. The product's high half depends on every bit of x; the final xor
    folds it onto the low half, which tables index with (h & mask); the high half is left for tags."""
    x *= MIX64_FACTOR
    return x ^ (x >> 32)


cdef inline uint64_t load_head(const uint8_t* p, Py_ssize_t n, const uint8_t* end) noexcept nogil:
    """The first min(n, 8) bytes at p as a little-endian integer, zero-padded; reads nothing at or past end
    (p + n <= end). Reading a whole word when the buffer goes on past p + n spares a copy of variable size."""
    cdef uint64_t v = 0
    if n >= 8:
        memcpy(&v, p, 8)
    elif p + 8 <= end:
        memcpy(&v, p, 8)
        v &= (<uint64_t>1 << (8 * n)) - 1
    elif n > 0:                         # (an empty key may sit at a NULL base: no memcpy from NULL, even of 0)
        memcpy(&v, p, n)
    return v


cdef inline bint tail_equal(const uint8_t* a, const uint8_t* b, Py_ssize_t n) noexcept nogil:
    """Whether a[8:n] == b[8:n], for two keys of n bytes whose first 8 (load_head's) are already equal: keys of
    9 to 16 bytes by their last 8 bytes (one load each, overlapping the first 8), longer ones by memcmp (a call,
    which cost the counting loop more than the compare for the short keys most pre-tokens are)."""
    cdef uint64_t x, y
    if n <= 8:
        return True
    if n <= 16:
        memcpy(&x, a + n - 8, 8)
        memcpy(&y, b + n - 8, 8)
        return x == y
    return memcmp(a + 8, b + 8, n - 8) == 0


cdef extern from *:
    """
    static uint64_t bpe_fast_hash_seed = 0x9E3779B97F4A7C15ULL;   /* this module's own, set at its import */
    static void bpe_fast_set_hash_seed(uint64_t seed) { bpe_fast_hash_seed = seed; }
    """
    uint64_t HASH_SEED "bpe_fast_hash_seed"
    void _set_hash_seed "bpe_fast_set_hash_seed" (uint64_t seed) noexcept nogil


cdef inline uint64_t seed_hash_bytes() except? 0:
    """Key this module's hash_bytes with BPE_FAST_HASH_SEED (an integer) if it is set, else with 8 bytes of
    os.urandom; returns the seed. Each module that uses hash_bytes calls it once, at its import."""
    import os
    text = os.environ.get("BPE_FAST_HASH_SEED")
    if text:
        try:
            seed = int(text, 0) & 0xFFFFFFFFFFFFFFFF
        except ValueError:
            raise ValueError(f"BPE_FAST_HASH_SEED must be an integer, got {text!r}") from None
    else:
        seed = int.from_bytes(os.urandom(8), "little")
    _set_hash_seed(seed)
    return seed


cdef inline uint64_t hash_bytes(const uint8_t* p, Py_ssize_t n, uint64_t head, const uint8_t* end) noexcept nogil:
    """The hash of p[0:n] (p + n <= end), whose first bytes are head = load_head(p, n, end): callers keep head
    to compare keys of 8 bytes or less without reading them again."""
    # mix64 of the first word, then of (the hash so far + the next word) for each further word; written with
    # the fold of each step deferred to the next (the same value), which compiles to better code.
    cdef uint64_t h = (head ^ (<uint64_t>n << 56) ^ HASH_SEED) * MIX64_FACTOR
    cdef bint full_words = n >= 8
    p += 8
    n -= 8
    while n > 0:
        h = ((h ^ (h >> 32)) + load_head(p, n, end)) * MIX64_FACTOR
        p += 8
        n -= 8
    if full_words:
        # one more mix, so that every low bit (tables index by them) depends on every bit of the last word: the
        # product's low bits depend only on the word's low bits, and one fold brings down only half of the
        # rest. A key shorter than 8 bytes has no byte in the top bits (the length is there), so it needs none.
        h = (h ^ (h >> 32)) * MIX64_FACTOR
    return h ^ (h >> 32)


cdef enum:
    # hash_bytes' chain of multiplies reads 8 bytes in the time of one multiply and fold (about 4 GB/s):
    # hash_wide's key of at least this many more bytes after its first word goes through four chains at once
    # (_hash_lanes), which memory's speed bounds instead
    LANES_FROM = 64


cdef inline uint64_t _hash_lanes(const uint8_t** at, Py_ssize_t* left, uint64_t h) noexcept nogil:
    """hash_bytes' state h (its first word mixed in) carried over the 32-byte blocks at *at (*left >= 32 bytes
    from there) by four chains, each hash_bytes' step over every fourth word and each started from h and a
    different constant; then folded into one state, each chain's in turn. Advances *at and *left past the blocks
    (fewer than 32 bytes are left, for hash_bytes' own loop)."""
    cdef const uint8_t* p = at[0]
    cdef Py_ssize_t n = left[0]
    cdef uint64_t a = h, b = h ^ 0x9E3779B97F4A7C15ULL, c = h ^ 0xC2B2AE3D27D4EB4FULL, d = h ^ 0x165667B19E3779F9ULL
    cdef uint64_t w0, w1, w2, w3
    while n >= 32:
        memcpy(&w0, p, 8)
        memcpy(&w1, p + 8, 8)
        memcpy(&w2, p + 16, 8)
        memcpy(&w3, p + 24, 8)
        a = ((a ^ (a >> 32)) + w0) * MIX64_FACTOR
        b = ((b ^ (b >> 32)) + w1) * MIX64_FACTOR
        c = ((c ^ (c >> 32)) + w2) * MIX64_FACTOR
        d = ((d ^ (d >> 32)) + w3) * MIX64_FACTOR
        p += 32
        n -= 32
    at[0] = p
    left[0] = n
    h = ((a ^ (a >> 32)) + (b ^ (b >> 32))) * MIX64_FACTOR
    h = ((h ^ (h >> 32)) + (c ^ (c >> 32))) * MIX64_FACTOR
    return ((h ^ (h >> 32)) + (d ^ (d >> 32))) * MIX64_FACTOR


cdef inline uint64_t hash_wide(const uint8_t* p, Py_ssize_t n, uint64_t head, const uint8_t* end) noexcept nogil:
    """A hash of p[0:n] for tables whose keys may be megabytes (a vocabulary's tokens: one learnt from a run of
    one letter holds tokens of 2, 4, ... 8 million bytes; _gpt2_files.TokenIndex): hash_bytes' for keys of less
    than 72 bytes; a longer key's words after the first go through _hash_lanes, then hash_bytes' loop takes the
    last 0..31 bytes, and its last mix ends it. Not hash_bytes itself: one more comparison a key costs the
    counter's and the encoder's tables of short pre-tokens about 1% of their instructions."""
    if n < 8 + LANES_FROM:
        return hash_bytes(p, n, head, end)
    cdef uint64_t h = (head ^ (<uint64_t>n << 56) ^ HASH_SEED) * MIX64_FACTOR
    p += 8
    n -= 8
    h = _hash_lanes(&p, &n, h)
    while n > 0:
        h = ((h ^ (h >> 32)) + load_head(p, n, end)) * MIX64_FACTOR
        p += 8
        n -= 8
    h = (h ^ (h >> 32)) * MIX64_FACTOR
    return h ^ (h >> 32)


cdef extern from *:
    """
    static const uint64_t bpe_fast_rolling_base = 0x100000001b3ULL;   /* FNV's 64-bit prime */
    """
    const uint64_t ROLLING_BASE "bpe_fast_rolling_base"


cdef inline uint64_t rolling_hash(const uint8_t* p, Py_ssize_t n) noexcept nogil:
    """sum((p[i] + 1) * ROLLING_BASE ** (n - 1 - i)) mod 2**64: see rolling_concat. Equal hashes must be
    confirmed byte by byte."""
    cdef uint64_t h = 0
    cdef Py_ssize_t i
    for i in range(n):
        h = h * ROLLING_BASE + p[i] + 1
    return h


cdef inline uint64_t rolling_concat(uint64_t ha, uint64_t hb, uint64_t power_b) noexcept nogil:
    """rolling_hash of a + b from the hashes of a and b, power_b = ROLLING_BASE ** len(b) (kept with b)."""
    return ha * power_b + hb


cdef inline uint64_t pair_key(int32_t a, int32_t b) noexcept nogil:
    """The key of the pair of ids (a, b), both >= 0: (a << 32) | b. Never EMPTY_KEY."""
    return ((<uint64_t><uint32_t>a) << 32) | <uint32_t>b


cdef inline uint64_t pair_slot(uint64_t key, int shift) noexcept nogil:
    """The first slot of a pair key in a table of 2 ** (64 - shift) slots (table_shift): the top bits of
    key * MIX64_FACTOR, which depend on every bit of the key (multiplicative hashing). Pair tables keep no
    tags, so they index with the high half of mix64's product and skip its fold: one multiply a look-up."""
    return (key * MIX64_FACTOR) >> shift


cdef enum:
    EMPTY_INDEX = -1        # Slot.index of an empty slot


cdef extern from *:
    """
    static const uint64_t bpe_fast_empty_key = 0xFFFFFFFFFFFFFFFFULL;
    """
    const uint64_t EMPTY_KEY "bpe_fast_empty_key"     # an empty slot of a table keyed by pair_key


cdef struct Slot:
    # A slot of a table whose items live elsewhere (a pool of bytes, an array of spans or symbols).
    int32_t index           # the item, EMPTY_INDEX when the slot is empty
    uint32_t tag            # slot_tag of the item's hash: most mismatches are seen without reading the item


cdef inline uint32_t slot_tag(uint64_t h) noexcept nogil:
    return <uint32_t>(h >> 32)


cdef inline uint64_t table_size(Py_ssize_t n) noexcept nogil:
    """The number of slots (a power of two, at least 16) for a table that will hold n items."""
    cdef uint64_t size = 16
    while size < <uint64_t>(2 * n + 16):
        size <<= 1
    return size


cdef inline int table_shift(uint64_t size) noexcept nogil:
    """64 - log2(size) for a power of two: pair_slot's shift for a table of that size."""
    cdef int shift = 64
    while size > 1:
        size >>= 1
        shift -= 1
    return shift


cdef inline uint64_t next_slot(uint64_t i, uint64_t mask) noexcept nogil:
    """Linear probing: the slot after i."""
    return (i + 1) & mask


cdef inline void slot_place(Slot* slots, uint64_t mask, uint64_t h, int32_t index) noexcept nogil:
    """Put item index (not in the table yet) with hash h in the first empty slot from h & mask."""
    cdef uint64_t i = h & mask
    while slots[i].index != EMPTY_INDEX:
        i = next_slot(i, mask)
    slots[i].index = index
    slots[i].tag = slot_tag(h)
