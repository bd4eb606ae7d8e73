# Declarations other Cython modules may cimport (the encoder scans with these, without Python objects).
from libc.stdint cimport uint8_t, int64_t
from libcpp.vector cimport vector

cdef enum:
    KIND_GPT2 = 2   # GPT2_PATTERN
    KIND_GPT4 = 4   # GPT4_PATTERN

# Append the end offset of every pre-token of the valid UTF-8 s[0:n] to out (the first pre-token starts at 0).
# Only call after bpe_fast.pretokenize.native_kind(pattern) returned kind (that loads the tables).
cdef void scan_ends(const uint8_t* s, Py_ssize_t n, int kind, vector[int64_t]* out) noexcept nogil

# Byte offset of the first invalid UTF-8 sequence in s[0:n] (as bytes.decode reports it), or -1.
cdef Py_ssize_t utf8_first_error(const uint8_t* s, Py_ssize_t n) noexcept nogil
