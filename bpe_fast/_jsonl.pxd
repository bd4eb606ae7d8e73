# Declarations other Cython modules may cimport: reading a JSON string natively, as json.loads reads it.
from libc.stdint cimport uint8_t
from libcpp.vector cimport vector

# The JSON string whose opening quote is s[i - 1]: returns the index after its closing quote, or -1 if it is not
# one json.loads reads as this would. With out, its value's UTF-8 is appended (a lone surrogate escape is then -1);
# escaped: set if it holds an escape.
cdef Py_ssize_t _string(const uint8_t* s, Py_ssize_t i, Py_ssize_t n, vector[uint8_t]* out,
                        bint* escaped) noexcept nogil
