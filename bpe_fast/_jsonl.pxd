# Declarations other Cython modules may cimport: reading a JSON string natively, as json.loads reads it.
from libc.stdint cimport uint8_t
from libcpp.vector cimport vector

cdef struct Limits:
    Py_ssize_t digits   # a number this long or longer is left to json.loads (it refuses ints past
                        # sys.get_int_max_str_digits())
    int depth           # nesting this deep or deeper too (json.loads raises RecursionError past Python's limit)


# The JSON value starting at s[i] (no space before it): the index after it, or -1 when it is not one json.loads
# reads as this would (within limits).
cdef Py_ssize_t _value(const uint8_t* s, Py_ssize_t i, Py_ssize_t n, int depth, const Limits* limits) noexcept nogil

# The JSON string whose opening quote is s[i - 1]: returns the index after its closing quote, or -1 if it is not
# one json.loads reads as this would. With out, its value's UTF-8 is appended (a lone surrogate escape is then -1);
# escaped: set if it holds an escape.
cdef Py_ssize_t _string(const uint8_t* s, Py_ssize_t i, Py_ssize_t n, vector[uint8_t]* out,
                        bint* escaped) noexcept nogil


cdef inline bint _json_space(uint8_t c) noexcept nogil:
    """JSON's whitespace: space, tab, LF, CR."""
    return c == 0x20 or c == 0x09 or c == 0x0A or c == 0x0D


cdef inline Py_ssize_t _skip_space(const uint8_t* s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    """The index of the first byte of s[i:n] that is not JSON whitespace, or n."""
    while i < n and _json_space(s[i]):
        i += 1
    return i
