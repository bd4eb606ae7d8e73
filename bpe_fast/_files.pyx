# cython: language_level=3
"""Looking up and reading many small files without the GIL: the loops of bpe_fast.inputs' listing (one stat a
path) and of count_workers' runs of small files (open, read to the end, close). In Python each file cost about
12 µs of os.stat, os.open, os.read and os.close calls (a folder of 79,000 files of 630 bytes: 1 s on one core);
the system calls themselves are about 2 µs a stat and 5 µs a read file on this kind of machine.

Paths arrive as a list of bytes (os.fsencode'd, no NUL: the caller checks); errors come back as numbers (an
index, an errno), which the Python layer turns into exceptions naming the file."""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_GET_SIZE
from libc.errno cimport EINTR, EINVAL, EISDIR, ENOMEM, errno
from libc.stdint cimport INT64_MAX, int8_t, int32_t, int64_t, uint8_t
from libc.string cimport strlen
from libcpp.vector cimport vector
from posix.fcntl cimport O_CLOEXEC, O_NONBLOCK, O_RDONLY, open as c_open
from posix.stat cimport S_ISDIR, S_ISREG, fstat, stat, struct_stat
from posix.unistd cimport close, read

import numpy as np

cdef enum:
    # what stat_paths says a path is
    C_MISSING = 0          # stat failed: errnos says why
    C_REGULAR = 1
    C_DIRECTORY = 2
    C_OTHER = 3            # a pipe, a device, a socket
    # read_files' failures that are no errno
    C_SHORTER = -1         # a file planned (not whole) at some size holds fewer bytes now
    C_NOT_REGULAR = -2     # no longer a regular file (a pipe or a device put in its place since it was listed;
                           # a folder is EISDIR)

MISSING, REGULAR, DIRECTORY, OTHER = C_MISSING, C_REGULAR, C_DIRECTORY, C_OTHER
SHORTER, NOT_REGULAR = C_SHORTER, C_NOT_REGULAR


cdef vector[const char*] _c_paths(list paths) except *:
    """The paths as C strings; NULL for one holding a NUL (which a C string would cut short)."""
    cdef vector[const char*] out
    out.reserve(len(paths))
    for p in paths:
        if not PyBytes_CheckExact(p):
            raise TypeError(f"paths must be bytes, got {type(p).__name__}")
        out.push_back(PyBytes_AS_STRING(p) if strlen(PyBytes_AS_STRING(p)) == PyBytes_GET_SIZE(p) else NULL)
    return out


def stat_paths(list paths, Py_ssize_t start=0, stop=None, kinds_array=None, sizes_array=None,
               errnos_array=None):
    """(kinds int8: MISSING, REGULAR, DIRECTORY or OTHER; sizes int64, a regular file's; errnos int32, a MISSING
    path's stat error: EINVAL for a path holding NUL) of each path (bytes, links followed, as os.stat). Only
    paths[start:stop] when given, into the arrays given (threads may each look up a part: the GIL is released)."""
    cdef Py_ssize_t n = len(paths), k
    cdef Py_ssize_t end = n if stop is None else min(<Py_ssize_t>stop, n)
    start = max(start, 0)
    cdef vector[const char*] c_paths = _c_paths(paths[start:end])     # (a thread's part only)
    if kinds_array is None:
        kinds_array = np.zeros(n, dtype=np.int8)
        sizes_array = np.zeros(n, dtype=np.int64)
        errnos_array = np.zeros(n, dtype=np.int32)
    cdef int8_t[::1] kinds = kinds_array
    cdef int64_t[::1] sizes = sizes_array
    cdef int32_t[::1] errnos = errnos_array
    if kinds.shape[0] != n or sizes.shape[0] != n or errnos.shape[0] != n:
        raise ValueError(f"{n} paths and arrays of {kinds.shape[0]}, {sizes.shape[0]} and {errnos.shape[0]}")
    cdef struct_stat st
    with nogil:
        for k in range(start, end):
            if c_paths[k - start] == NULL:
                kinds[k] = C_MISSING
                errnos[k] = EINVAL
            elif stat(c_paths[k - start], &st) != 0:
                kinds[k] = C_MISSING
                errnos[k] = errno
            elif S_ISREG(st.st_mode):
                kinds[k] = C_REGULAR
                sizes[k] = st.st_size
            elif S_ISDIR(st.st_mode):
                kinds[k] = C_DIRECTORY
            else:
                kinds[k] = C_OTHER
    return kinds_array, sizes_array, errnos_array


cdef enum:
    C_NO_ROOM = -3         # _read_file: the buffer is too small for the file (b.needed: the room it wants)


cdef struct Buffer:
    uint8_t* data          # a numpy array's bytes, grown by read_files (with the GIL) when a file needs more
    int64_t used
    int64_t capacity
    int64_t needed


cdef int _read_file(const char* path, int64_t size, bint whole, Buffer* b) noexcept nogil:
    """Append the file at path to b: whole, as it is now (to the end, however it changed since it was listed),
    else exactly its first size bytes. 0, or an errno (EISDIR for a folder), SHORTER, NOT_REGULAR or NO_ROOM
    (b.needed set: the caller grows the buffer and reads the file again); b.used as it was but on success."""
    cdef int fd
    cdef struct_stat st
    cdef int64_t start = b.used, want
    cdef Py_ssize_t got
    cdef int failure = 0
    if path == NULL:
        return EINVAL
    while True:
        fd = c_open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)    # (no wait on a pipe put in its place)
        if fd >= 0 or errno != EINTR:       # (a signal during an open on NFS or FUSE: tried again, as os.open)
            break
    if fd < 0:
        return errno
    if fstat(fd, &st) != 0:
        failure = errno
    elif S_ISDIR(st.st_mode):
        failure = EISDIR                    # (IsADirectoryError, as open() gives)
    elif not S_ISREG(st.st_mode):
        failure = C_NOT_REGULAR
    if whole and failure == 0:
        size = st.st_size          # the plan: read on to the end, one more read finds it
    while failure == 0:
        if whole:
            want = size - (b.used - start) + 1 if b.used - start <= size else b.used - start
        else:
            want = size - (b.used - start)
            if want == 0:
                break
        if b.used + want > b.capacity:
            b.needed = b.used + want
            failure = C_NO_ROOM
            break
        got = read(fd, b.data + b.used, want)
        if got < 0:
            if errno == EINTR:
                continue
            failure = errno
        elif got == 0:
            if not whole:
                failure = C_SHORTER
            break
        else:
            b.used += got
            if whole and got < want and b.used - start == size:
                # a short read that ends where fstat said the file ends: its end, without the read that
                # would return 0 (one system call in five a small file; a file grown since fstat filled the
                # size + 1 bytes asked for, a shrunk one ends elsewhere: both read on)
                break
    close(fd)
    if failure != 0:
        b.used = start
    return failure


def read_files(list paths, const int64_t[::1] sizes, const uint8_t[::1] whole):
    """Read the files at paths (bytes) one after another into one buffer: file k whole (whole[k]: as it is now)
    or its first sizes[k] bytes. Returns (data: a uint8 array, bounds: int64 with file k = data[bounds[k]:bounds[k +
    1]], failed, error): failed -1, or the index of the first file that could not be read (then data holds the
    files before it), error its errno (EINVAL for a path holding NUL, ENOMEM when no buffer could hold it),
    SHORTER or NOT_REGULAR. The files are read straight into the array (sized by the plan: sizes[k] + 1 a file;
    a file grown since is read again into a larger one)."""
    cdef vector[const char*] c_paths = _c_paths(paths)
    cdef Py_ssize_t n = c_paths.size(), k = 0
    if sizes.shape[0] != n or whole.shape[0] != n:
        raise ValueError(f"{n} paths, {sizes.shape[0]} sizes and {whole.shape[0]} whole flags")
    bounds_array = np.zeros(n + 1, dtype=np.int64)
    cdef int64_t[::1] bounds = bounds_array
    cdef uint8_t[::1] view
    cdef Buffer b
    cdef int64_t planned = 1
    cdef int error = 0
    cdef Py_ssize_t j
    for j in range(n):                  # saturating: a plan past any memory is refused below (ENOMEM)
        planned = planned + max(sizes[j], 0) + 1 if max(sizes[j], 0) < INT64_MAX - planned else INT64_MAX
    try:
        out = np.empty(planned, dtype=np.uint8)
    except MemoryError:
        return np.empty(0, dtype=np.uint8), bounds_array[:1], 0, ENOMEM
    view = out
    b.data, b.used, b.capacity, b.needed = &view[0], 0, planned, 0
    while True:
        with nogil:
            while k < n:
                error = _read_file(c_paths[k], sizes[k], whole[k] != 0, &b)
                if error != 0:
                    break
                k += 1
                bounds[k] = b.used
        if error != C_NO_ROOM:
            break
        try:                            # (with the GIL: a file grown since it was listed)
            grown = np.empty(max(2 * b.capacity, b.needed + (1 << 16)), dtype=np.uint8)
        except MemoryError:
            error = ENOMEM
            break
        grown[:b.used] = out[:b.used]
        out = grown
        view = out
        b.data, b.capacity = &view[0], out.shape[0]
    if error != 0:
        return out[:b.used], bounds_array[:k + 1], k, error
    return out[:b.used], bounds_array, -1, 0
