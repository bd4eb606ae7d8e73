"""Writing an output file all at once or not at all.

Every file bpe_fast writes (tokenizer files, counts, token arrays, generated corpora) goes through
atomic_output: the data goes to a temporary file beside the target, which is synced and renamed over the
target only when the writing succeeded. On an error, a full disk or Ctrl-C the temporary file is removed
and a previous file at the target is left as it was. (A target that is not a regular file, such as
/dev/null or a named pipe, is written to directly: see atomic_output.)
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import stat
import tempfile
from collections.abc import Iterator
from typing import IO, Any

from ._types import StrPath

_SYNC_FILE_RANGE_WRITE = 2
_sync_file_range: Any = None         # libc's, once looked up; False where there is none


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_output(path: StrPath, mode: str = "wb", **open_kwargs: Any) -> Iterator[IO[Any]]:
    """Yield a file object open for writing (`mode`, `open_kwargs` as for open()) whose contents become
    `path` when the block ends without an exception. An OSError creating the file names `path`.

    A symbolic link is written through: the file it points to is replaced (not the link). What is at `path`
    and is not a regular file (/dev/null, a named pipe, a terminal) is written to directly, as it cannot be
    replaced (renaming over it would put a file in its place)."""
    path = os.fspath(path)
    try:
        target = os.stat(path)                 # through links
    except OSError:
        target = None
    if target is not None and not stat.S_ISREG(target.st_mode):
        with open(path, mode, **open_kwargs) as direct:
            yield direct
        return
    if os.path.islink(path):
        path = os.path.realpath(path)
    folder, name = os.path.split(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".tmp")
    except OSError as exc:
        raise type(exc)(exc.errno, exc.strerror, path) from None
    try:
        os.chmod(tmp, 0o666 & ~_umask())      # mkstemp makes 0600; give the file the usual permissions
        with os.fdopen(fd, mode, **open_kwargs) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def start_writeback(f: IO[Any], offset: int, length: int) -> None:
    """Ask the kernel to start writing f's bytes [offset, offset + length) to disk now, without waiting
    (Linux's sync_file_range; nothing elsewhere). A writer of a large file calls it as it goes, so that the
    fsync at the end of atomic_output finds little left to write."""
    global _sync_file_range
    if _sync_file_range is None:
        _sync_file_range = False
        with contextlib.suppress(Exception):        # no libc to load (Windows), no such call (macOS)
            fn = ctypes.CDLL(None, use_errno=True).sync_file_range
            fn.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
            fn.restype = ctypes.c_int
            _sync_file_range = fn
    if _sync_file_range and length > 0:
        _sync_file_range(f.fileno(), offset, length, _SYNC_FILE_RANGE_WRITE)   # a failure only loses the head start
