"""Writing an output file all at once or not at all.

Every file bpe_fast writes (tokenizer files, counts, token arrays, generated corpora) goes through
atomic_output: the data goes to a temporary file beside the target, which is synced and renamed over the
target only when the writing succeeded. On an error, a full disk or Ctrl-C the temporary file is removed
and a previous file at the target is left as it was. (A target that is not a regular file, such as
/dev/null or a named pipe, is written to directly: see atomic_output.) Files that belong together (a
tokenizer's folder) are an output_group: all written first, then all renamed, so a failure leaves the old set.
"""
from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import re
import signal
import stat
import threading
from collections.abc import Iterable, Iterator
from typing import IO, Any

from ._types import StrPath

_SYNC_FILE_RANGE_WRITE = 2
_sync_file_range: Any = None         # libc's, once looked up; False where there is none


_UMASK_LOCK = threading.Lock()


def _umask() -> int:
    """The process's umask. Linux gives it in /proc/self/status; elsewhere it is read by setting it (to 0,
    then back), which another thread making a file in between would see: the lock keeps bpe_fast's own threads
    from doing that, at least."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _UMASK_LOCK:
        mask = os.umask(0)
        os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_output(path: StrPath, mode: str = "wb", **open_kwargs: Any) -> Iterator[IO[Any]]:
    """Yield a file object open for writing (`mode`, `open_kwargs` as for open()) whose contents become
    `path` when the block ends without an exception. An OSError creating or writing the file names `path`.

    A symbolic link is written through: the file it points to is replaced (not the link). What is at `path`
    and is not a regular file (/dev/null, a named pipe, a terminal) is written to directly, as it cannot be
    replaced (renaming over it would put a file in its place)."""
    with _staged(path, mode, open_kwargs, None) as f:
        yield f


class OutputGroup:
    """Files replaced together (a tokenizer's folder): each is written in full to a temporary file beside its
    target (`output`, as atomic_output), and only when every one is written are they renamed over their
    targets and the files given to `remove` removed (output_group's commit). An error, a full disk or Ctrl-C
    before then removes the temporary files and leaves every target as it was; the commit only renames, which
    needs no space."""

    def __init__(self) -> None:
        self._renames: list[tuple[str, str]] = []        # (temporary file, target)
        self._removals: list[str] = []
        self._folders: list[str] = []                     # made by makedirs, the deepest first
        self._sets: set[str] = set()                      # the folders given to makedirs (real paths)

    def output(self, path: StrPath, mode: str = "wb", **open_kwargs: Any) -> contextlib.AbstractContextManager[IO[Any]]:
        """A file object whose contents become `path` when the group commits (see atomic_output)."""
        folder = os.path.realpath(os.path.dirname(os.path.abspath(os.fspath(path))))
        return _staged(path, mode, open_kwargs, self._renames, folder in self._sets)

    def makedirs(self, path: StrPath) -> None:
        """os.makedirs(path, exist_ok=True) for the group's files; the folders it creates are removed again (when
        empty) if the group is discarded, so a failure leaves no new folder behind. A symbolic link to a folder
        still to be made is made through, as the files are written through links."""
        missing, folder = [], os.path.realpath(path)
        while not os.path.lexists(folder):
            missing.append(folder)
            folder = os.path.dirname(folder)
        self._folders.extend(missing)
        os.makedirs(os.path.realpath(path), exist_ok=True)
        self._sets.add(os.path.realpath(path))

    def staged(self, path: StrPath) -> str:
        """Where `path`'s new contents are until the commit (the temporary file), or `path` when not staged."""
        target = os.path.realpath(path)
        return next((tmp for tmp, dest in self._renames if dest == target), os.fspath(path))

    def remove(self, path: StrPath) -> None:
        """Remove `path`, if it exists, when the group commits."""
        self._removals.append(os.fspath(path))

    def _commit(self) -> None:
        # Ctrl-C or SIGTERM between two renames would leave a mixed set; a reader pinning the folder's files
        # (formats.FolderPin, under folder_lock shared) waits for the renames to end
        folders = sorted({os.path.realpath(os.path.dirname(os.path.abspath(target))) for _, target in self._renames}
                         | {os.path.realpath(os.path.dirname(os.path.abspath(path))) for path in self._removals})
        with _signals_deferred(), contextlib.ExitStack() as locks:
            locked: set[tuple[int, int]] = set()
            for folder in folders:
                found = path_identity(folder)
                if found is not None and found not in locked:  # each folder once: two locks of one folder (by
                    locked.add(found)                          # two paths) would wait on each other
                    locks.enter_context(folder_lock(folder, exclusive=True))
            # the targets there are now, linked aside: a rename that fails puts back those already done (the
            # folder was left half one save, half the other, which neither loaded; helper-151)
            _remove_stale_asides(target for _, target in self._renames)
            aside = [_link_aside(target) if len(self._renames) > 1 else None for _, target in self._renames]
            try:
                for k, (tmp, target) in enumerate(self._renames):
                    try:
                        os.replace(tmp, target)
                    except OSError as exc:
                        undone = _put_back([dest for _, dest in self._renames[:k]], aside[:k])
                        raise type(exc)(exc.errno, f"cannot be replaced: {exc.strerror or exc}{undone}",
                                        target) from None
            finally:
                for link in aside:
                    if link:
                        with contextlib.suppress(OSError):
                            os.unlink(link)
            self._renames.clear()
            for path in self._removals:
                with contextlib.suppress(FileNotFoundError):
                    os.remove(path)

    def _discard(self) -> None:
        for tmp, _ in self._renames:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        self._renames.clear()
        for folder in self._folders:
            with contextlib.suppress(OSError):      # not empty: something else was put there
                os.rmdir(folder)
        self._folders.clear()


def identity(st: os.stat_result) -> tuple[int, int]:
    """What names one file or folder whatever path reaches it: (device, inode)."""
    return st.st_dev, st.st_ino


def path_identity(path: StrPath) -> tuple[int, int] | None:
    """identity of what `path` names now, or None when it names nothing (a folder made by a group's renames)."""
    try:
        return identity(os.stat(path))
    except OSError:
        return None


@contextlib.contextmanager
def folder_lock(folder: StrPath, exclusive: bool) -> Iterator[None]:
    """An advisory lock (flock) on a folder itself, no file added: exclusive while a group's renames replace
    files in it, shared while a reader opens a set of them (formats.FolderPin), so that the reader never opens one
    file of a save and another of the next, however long the saving process pauses between two renames (a load
    under load took a mix). None where the folder cannot be opened or flock is missing (not POSIX)."""
    try:
        import fcntl
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except (ImportError, OSError):
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        except OSError:         # a file system without flock: as before, unlocked
            pass
        yield
    finally:
        os.close(fd)            # (releases the lock)


# the signals that stop a command (the CLI turns SIGTERM and SIGHUP into exceptions, Ctrl-C is one)
_DEFERRED = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


@contextlib.contextmanager
def stop_signals_handled(handler: Any) -> Iterator[None]:
    """In the block, SIGTERM and SIGHUP (a closed terminal or ssh session; not when it is ignored, as under
    `nohup`: it stays so) call `handler`, which raises, so that workers are stopped and temporary files removed
    (a closed session left a hidden temporary file as large as the work done; helper-146); the handlers before
    are put back after, SIGTERM's last. The command line's and the generator's."""
    hangup = getattr(signal, "SIGHUP", None)
    signals = [signal.SIGTERM] + ([hangup] if hangup is not None and signal.getsignal(hangup) is signal.SIG_DFL
                                  else [])
    previous = {sig: signal.signal(sig, handler) for sig in signals}
    try:
        yield
    finally:
        for sig, old in reversed(previous.items()):
            signal.signal(sig, old)


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP arriving in the block are handled when it ends (by the handlers they had), not
    in it. Python runs its handlers in the main thread, whichever thread the signal reached, so the handlers are
    swapped for ones that note the signal (the main thread only can; elsewhere the block runs as it is)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted: list[int] = []
    previous = {sig: signal.getsignal(sig) for sig in _DEFERRED}
    previous = {sig: handler for sig, handler in previous.items() if handler is not None}   # None: not Python's
    try:
        for sig in previous:
            signal.signal(sig, lambda number, frame: noted.append(number))
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _raise_signals(sorted(set(noted), key=lambda number: number != signal.SIGTERM))   # SIGTERM first


def _raise_signals(numbers: list[int]) -> None:
    """Raise each signal in turn, the later ones even when a handler raises (KeyboardInterrupt)."""
    if numbers:
        try:
            signal.raise_signal(numbers[0])
        finally:
            _raise_signals(numbers[1:])


@contextlib.contextmanager
def output_group() -> Iterator[OutputGroup]:
    """An OutputGroup, committed when the block ends without an exception, discarded otherwise.

    >>> import tempfile, os
    >>> folder = tempfile.mkdtemp()
    >>> with output_group() as group:
    ...     with group.output(os.path.join(folder, "a.txt"), "w") as f:
    ...         _ = f.write("a")
    ...     "a.txt" in os.listdir(folder)               # nothing at the target until the block ends
    False
    >>> sorted(os.listdir(folder))
    ['a.txt']
    """
    group = OutputGroup()
    try:
        yield group
        group._commit()
    except BaseException:       # in the block, or a failed rename: what was not renamed is removed
        group._discard()
        raise


_TMP_SUFFIX = ".tmp"
# _staged's temporary files: "." + the output's name + "." + mkstemp's 8 characters + _TMP_SUFFIX
_TEMPORARY = re.compile(r"\.(.+)\.[a-z0-9_]{8}" + re.escape(_TMP_SUFFIX), re.DOTALL)    # (a name may hold a newline)


_LONG = "~"        # ends the part of a name a temporary file holds when the whole name would make it too long


def staged_target(entry: str) -> str | None:
    """The name of the output whose temporary file is `entry` (a name in a folder), as staged_key gives it, or
    None when it is not one: what a killed process (SIGKILL, the OOM killer) leaves, which nothing here then
    removes."""
    found = _TEMPORARY.fullmatch(entry)
    return None if found is None else found.group(1)


def staged_key(name: str, folder: str = ".") -> str:
    """What the temporary file of the output `name` in `folder` holds of its name (see staged_target): the name,
    or, when the name is too long to be held with the 14 characters a temporary file adds (a valid name of
    over 241 bytes), its longest start that fits followed by "~"."""
    room = name_max(folder) - len(os.fsencode(f"..12345678{_TMP_SUFFIX}"))
    if len(os.fsencode(name)) <= room:
        return name
    cut = name
    while len(os.fsencode(cut + _LONG)) > room:
        cut = cut[:-1]
    return cut + _LONG


def name_max(folder: str) -> int:
    """The longest name, in bytes, a file in `folder` may have (255 where the system does not say)."""
    try:
        return os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255


def check_name_fits(path: StrPath) -> None:
    """An OSError (ENAMETOOLONG) naming `path` when its last part is longer than its folder takes: found
    before the output is written, not when it is renamed into place."""
    path = os.fspath(path)
    folder, name = os.path.split(os.path.abspath(path))
    limit = name_max(folder if os.path.isdir(folder) else "/")
    if len(os.fsencode(name)) > limit:
        raise OSError(errno.ENAMETOOLONG, f"the name is too long ({len(os.fsencode(name))} bytes; at most {limit} "
                      f"here)", path)


@contextlib.contextmanager
def _staged(path: StrPath, mode: str, open_kwargs: dict[str, Any],
            renames: list[tuple[str, str]] | None, whole_folder: bool = False) -> Iterator[IO[Any]]:
    """atomic_output's file (renames None: renamed over `path` when the block ends) or an OutputGroup's
    (its (temporary file, target) appended to `renames` when the block ends, for the group's commit).
    whole_folder: `path` is one of the files of a folder written as a set (OutputGroup.makedirs named its folder),
    which refuses a target that is not a regular file rather than writing into it."""
    path = os.fspath(path)
    if path.endswith(("/", os.sep)):     # renamed onto, it named the temporary file; in a group, made a file
        raise IsADirectoryError(errno.EISDIR, "ends with '/', a folder's name, not a file's", path)
    try:
        target = os.stat(path)                 # through links
    except OSError:
        target = None
    if target is not None and not stat.S_ISREG(target.st_mode):
        if whole_folder:    # a folder's files are replaced together: a pipe would wait for a reader, a device
            # (/dev/null) would take a file a load then refuses (helper-151)
            raise OSError(errno.EINVAL, "is not a regular file; the files of a folder are replaced together, "
                                        "and this one cannot be", path)
        try:
            with open(path, mode, **open_kwargs) as direct:
                yield direct
        except OSError as exc:              # a full device (/dev/full), a pipe whose reader left: say which output
            if exc.errno is None or exc.filename is not None:
                raise
            raise type(exc)(exc.errno, exc.strerror, path) from None
        return
    if os.path.islink(path):
        path = os.path.realpath(path)
    check_name_fits(path)
    folder, name = os.path.split(os.path.abspath(path))
    try:
        import tempfile     # (here: tempfile and random took 2 ms of every import of the encoding path)

        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{staged_key(name, folder)}.", suffix=_TMP_SUFFIX)
    except OSError as exc:
        raise type(exc)(exc.errno, exc.strerror, path) from None
    try:
        os.chmod(tmp, 0o666 & ~_umask())      # mkstemp makes 0600; give the file the usual permissions
        try:
            with os.fdopen(fd, mode, **open_kwargs) as f:
                yield f
                f.flush()
                os.fsync(f.fileno())
        except OSError as exc:              # a full disk or a failing device: say which output
            named = named_write_error(exc, path, tmp)
            if named is exc:
                raise
            raise named from None
        if renames is None:
            _replace(tmp, path, [])
        else:
            renames.append((tmp, os.path.realpath(path)))
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


# NumPy writes an array to a real file with fwrite (ndarray.tofile, which np.save uses) and reports a short write
# as "N requested and M written" (or, failing to reserve the space first, "Not enough free space to write N bytes
# after offset M"): an OSError with neither errno nor file name, which named nothing ("bpe-fast: 614986 requested
# and 51136 written" for `encode - -o ids.npy` past ulimit -f)
_NUMPY_SHORT_WRITE = re.compile(r"\d+ requested and \d+ written|Not enough free space to write ")


def named_write_error(exc: OSError, path: StrPath, written: StrPath | None = None) -> OSError:
    """exc, raised writing the file `written` (the temporary file of the output `path`; None: `path` itself), as
    an OSError naming `path`: one with an errno and no file name gets `path`; NumPy's short write (see
    _NUMPY_SHORT_WRITE) gets `path` and its cause, looked for here: EFBIG at the file size limit (ulimit -f),
    ENOSPC on a full file system. Any other is exc itself."""
    if exc.filename is not None or (exc.errno is None and not _NUMPY_SHORT_WRITE.match(str(exc))):
        return exc
    if exc.errno is not None:
        return type(exc)(exc.errno, exc.strerror, os.fspath(path))
    code = _short_write_cause(str(exc), os.fspath(written if written is not None else path))
    return OSError(code, f"{os.strerror(code)} ({exc})" if code else str(exc), os.fspath(path))


def _short_write_cause(message: str, written: str) -> int | None:
    """The errno NumPy's short write of the regular file `written` lost: EFBIG when the file has reached the
    file size limit, ENOSPC when its file system has no room; None when neither is seen."""
    if message.startswith("Not enough free space"):
        return errno.ENOSPC
    try:
        import resource

        st = os.stat(written)
        if not stat.S_ISREG(st.st_mode):
            return None
        limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        if limit != resource.RLIM_INFINITY and st.st_size >= limit:
            return errno.EFBIG
        if os.statvfs(written).f_bavail == 0:
            return errno.ENOSPC
    except (ImportError, OSError, ValueError):
        pass
    return None


_ASIDE_SUFFIX = ".old"
_ASIDE = re.compile(r"\.(.+)\.[0-9a-f]{8}" + re.escape(_ASIDE_SUFFIX), re.DOTALL)


def _remove_stale_asides(targets: Iterable[str]) -> None:
    """Remove the links _link_aside made for these targets that a commit killed (SIGKILL, a power cut) left: each
    holds an old file's blocks. Called under the folders' exclusive locks, so no other commit's are among them."""
    by_folder: dict[str, set[str]] = {}
    for target in targets:
        folder, name = os.path.split(target)
        by_folder.setdefault(folder, set()).add(staged_key(name, folder))
    for folder, keys in by_folder.items():
        try:
            entries = os.listdir(folder)
        except OSError:
            continue
        for entry in entries:
            found = _ASIDE.fullmatch(entry)
            if found is not None and found.group(1) in keys:
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(folder, entry))


def _link_aside(target: str) -> str | None:
    """A second name for the file at `target` (a hard link beside it: ".NAME.XXXXXXXX.old", which the next commit
    into the folder removes if this one is killed): "" when there is none to keep (no file there yet), None when
    the link cannot be made (a file system without hard links: that file cannot be put back)."""
    if not os.path.isfile(target) or os.path.islink(target):
        return ""
    folder, name = os.path.split(target)
    for _ in range(100):
        suffix = os.urandom(4).hex()        # (not the random module: a caller's seeded sequence stays its own)
        aside = os.path.join(folder, f".{staged_key(name, folder)}.{suffix}{_ASIDE_SUFFIX}")
        try:
            os.link(target, aside)
            return aside
        except FileExistsError:
            continue
        except OSError:
            return None
    return None


def _put_back(replaced: list[str], aside: list[str | None]) -> str:
    """Undo the renames onto `replaced` (each target's earlier file linked aside, "" where it had none): what the
    error says of them."""
    if not replaced:
        return ""
    lost = []
    for target, link in reversed(list(dict(zip(replaced, aside)).items())):    # (a target twice: its first link)
        try:
            if link == "":
                os.unlink(target)               # a file this group added
            elif link is not None:
                os.replace(link, target)
            else:
                lost.append(target)
        except OSError:
            lost.append(target)
    if lost:
        return f" ({', '.join(lost)} replaced already, and could not be put back)"
    return f" ({', '.join(replaced)} put back as they were)"


def _replace(tmp: str, target: str, replaced: list[str]) -> None:
    """os.replace(tmp, target), its OSError naming the target (not the temporary file, a name the user never
    gave) and the files of the group `replaced` already."""
    try:
        os.replace(tmp, target)
    except OSError as exc:
        done = f" ({', '.join(replaced)} replaced already)" if replaced else ""
        raise type(exc)(exc.errno, f"cannot be replaced: {exc.strerror or exc}{done}", target) from None


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
