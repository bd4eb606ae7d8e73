"""Workers for counting and encoding: started, watched and stopped in one place.

Processes (worker_pool) where the work holds the GIL (counting; encoding with a pattern `regex` runs);
threads (thread_pool) where it does not (encoding with the built-in patterns: the native encoder releases
the GIL, and threads share the tokenizer and the results without copying).

For processes:

* Workers ignore SIGINT: Ctrl-C reaches the whole process group, and the caller decides what stops.
  SIGTERM ends a worker at once (terminate() sends it), whatever handler the caller had installed.
* On Linux a worker is sent SIGTERM if its parent dies, even by SIGKILL: no orphan goes on counting.
* A worker that dies (killed, out of memory) makes the call fail with WorkerDiedError, never hang
  (concurrent.futures notices a broken pool; multiprocessing.Pool would wait forever).
* On any error or interrupt in the caller, the running workers are terminated, not waited for.
"""
from __future__ import annotations

import contextlib
import itertools
import os
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from concurrent.futures import Executor, Future, ThreadPoolExecutor

# multiprocessing and concurrent.futures are imported where a pool is made (the process pool's took 10-14 ms of
# every `import bpe_fast.encoding`, which encodes in threads only; concurrent.futures, with logging, 4-12 ms of a
# fresh process's first Encoding, which starts one thread: ThreadJob), ctypes, select and signal where a
# worker or a queue uses them (4 ms): pretokenize imports this module

_T = TypeVar("_T")
_R = TypeVar("_R")

_PR_SET_PDEATHSIG = 1


class WorkerDiedError(RuntimeError):
    """A worker process ended abnormally (killed, out of memory)."""


NUM_PROCESSES_VARIABLE = "BPE_FAST_NUM_PROCESSES"


def check_progress(progress: object) -> None:
    """TypeError unless `progress` is None or callable (as progress(stage, done, total)): a str given for it
    failed at the first report, mid-run, as "'str' object is not callable", naming no argument."""
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be a callable (stage, done, total) or None, got {type(progress).__name__}")


# The most processes (or threads) asked for at once: more, and 99999999999 failed as an OverflowError from
# multiprocessing's semaphore after thousands of processes or tiny byte ranges were being made for them
MAX_PROCESSES = 1024


def usable_cores() -> int:
    """The cores this process may run on (its affinity, where the system tells it), at least 1."""
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def check_num_processes(num_processes: int | None) -> int:
    """None means the environment variable BPE_FAST_NUM_PROCESSES if set and not empty (white space around
    the number is allowed; white space alone is refused, as any other value that is no number), else every
    core this process may use. At most MAX_PROCESSES."""
    if num_processes is None:
        raw = os.environ.get(NUM_PROCESSES_VARIABLE, "")
        if raw:
            value = raw.strip()
            # ASCII digits only: int() takes a sign and '_', str.isdigit '³', which int() does not
            number = int(value) if value.isascii() and value.isdigit() else 0
            if number < 1:
                raise ValueError(f"{NUM_PROCESSES_VARIABLE} must be a positive integer, got {raw!r}")
            if number > MAX_PROCESSES:
                raise ValueError(f"{NUM_PROCESSES_VARIABLE} must be at most {MAX_PROCESSES}, got {raw!r}")
            return number
        return usable_cores()
    if not _is_int(num_processes):
        raise TypeError(f"num_processes must be an int or None, got {type(num_processes).__name__}")
    if num_processes < 1:
        raise ValueError(f"num_processes must be a positive int or None, got {num_processes!r}")
    if num_processes > MAX_PROCESSES:
        raise ValueError(f"num_processes must be at most {MAX_PROCESSES}, got {num_processes!r}")
    return int(num_processes)


def _is_int(value: object) -> bool:
    """An int or NumPy integer, not a bool (True is no count of processes or bytes)."""
    import numbers

    return isinstance(value, numbers.Integral) and not isinstance(value, bool)   # (np.bool_ is no Integral)


def check_chunk_bytes(chunk_bytes: int | None, default: int) -> int:
    """The size of the byte ranges given to workers: `default` for None, else a positive int (int() took '100',
    1.5 and True)."""
    if chunk_bytes is None:
        return default
    if not _is_int(chunk_bytes):
        raise TypeError(f"chunk_bytes must be an int or None, got {type(chunk_bytes).__name__}")
    if chunk_bytes < 1:
        raise ValueError(f"chunk_bytes must be positive, got {chunk_bytes}")
    return int(chunk_bytes)


def _die_with_parent() -> None:
    import ctypes
    import signal

    with contextlib.suppress(Exception):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def _die_with_caller(caller: int) -> None:
    """For a worker whose parent is a forkserver, not the caller (whose death the forkserver outlives while
    its workers hold its pipe): a daemon thread that sends this process SIGTERM when the caller ends (watched
    through a pidfd where Linux has them, else polled)."""
    import select
    import signal

    try:
        pidfd: int | None = os.pidfd_open(caller)
    except ProcessLookupError:
        os.kill(os.getpid(), signal.SIGTERM)
        return
    except (AttributeError, OSError):
        pidfd = None

    def watch() -> None:
        if pidfd is not None:
            select.select([pidfd], [], [])
        else:
            while True:
                time.sleep(0.5)
                try:
                    os.kill(caller, 0)
                except ProcessLookupError:
                    break
                except PermissionError:
                    pass
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="bpe_fast-watch-caller", daemon=True).start()


def _init_worker(initializer: Callable[..., object] | None, initargs: tuple[Any, ...], caller: int) -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "SIGHUP"):       # a closed terminal: the caller stops them (as for Ctrl-C), or its death
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)     # a forked worker may inherit the caller's handler
    if hasattr(os, "sched_getaffinity"):      # Linux: prctl exists
        _die_with_parent()
    if os.getppid() != caller:                # started by a forkserver
        _die_with_caller(caller)
    if initializer is not None:
        initializer(*initargs)


# Above this many resident bytes in the caller, workers start from a forkserver rather than by fork (see
# worker_context).
FORK_LIMIT_BYTES = 512 << 20
_start_lock = threading.Lock()
# What _worker_start_env has changed and not yet put back: [__main__, its saved attributes, the folder inserted
# first on sys.path (None until it is)]; empty otherwise. A process forked while another thread started workers
# (os.fork, a 'fork' pool, PyTorch's DataLoader workers) has those changes, and the lock held, with no thread to
# undo them: _after_fork_in_child does (a count_pretokens in such a child waited for the lock forever).
_hidden: list[Any] = []


def usable_processes(num_processes: int) -> int:
    """How many worker processes a job asked to use num_processes may start: num_processes, or 1 (the work done
    in this process; the results are the same for any number of processes) in a daemonic process, such as a
    multiprocessing.Pool's worker or PyTorch's DataLoader's, which multiprocessing forbids to have children
    (Process.start's AssertionError, "daemonic processes are not allowed to have children")."""
    process = sys.modules.get("multiprocessing.process")       # (imported in any process multiprocessing started)
    return num_processes if process is None or not process.current_process().daemon else 1


def _put_back_hidden() -> None:
    """Undo what _worker_start_env changed (see _hidden)."""
    if not _hidden:
        return
    main, saved, home = _hidden
    del _hidden[:]
    if home is not None:
        with contextlib.suppress(ValueError):
            sys.path.remove(home)   # the first occurrence: the one inserted
    if main is not None:
        main.__dict__.pop("__spec__", None)
        main.__dict__.update(saved)


def renewed_in_child(namespace: dict[str, Any], name: str, make: Callable[[], Any] = threading.Lock) -> None:
    """Give namespace[name], a module's lock, a new one, make(), in every forked child (os.fork, a 'fork' pool,
    PyTorch's DataLoader workers): a thread that held it at the fork is not there to release it, and the child
    waited for it forever. What that thread did under it is not done in the child, which does it again."""
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=lambda: namespace.__setitem__(name, make()))


renewed_in_child(globals(), "_start_lock")


def _after_fork_in_child() -> None:
    """In a forked child: the thread that held _start_lock (renewed) would have put __main__ and sys.path back:
    put back here. And multiprocessing's forkserver, if this process's parent had started one, forgotten: its
    ensure_running asks os.waitpid about the server, not this process's child, and every pool of the child
    (worker_context's forkserver once the caller holds FORK_LIMIT_BYTES) failed with ChildProcessError (CPython's,
    on 3.11); the child starts a server of its own."""
    _put_back_hidden()
    module = sys.modules.get("multiprocessing.forkserver")
    server = getattr(module, "_forkserver", None)
    if server is not None:
        with contextlib.suppress(Exception):
            server._lock = threading.Lock()         # (held by a parent's thread starting it, at the fork)
            if server._forkserver_pid is not None:
                fd = server._forkserver_alive_fd
                server._forkserver_pid = server._forkserver_address = server._forkserver_alive_fd = None
                if fd is not None:
                    os.close(fd)                    # this process's copy: the parent keeps its server


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def worker_context() -> Any:
    """The multiprocessing context for one worker_pool and the shared objects its workers get
    (shared_counter, shared_queue: made with the same context).

    fork while this process is small: a worker starts in milliseconds with what the caller has imported. Once
    the caller holds more than FORK_LIMIT_BYTES resident (a list of documents in memory, say), a forkserver
    starts them: after a fork the caller's pages are shared copy-on-write, and the caller reading its
    documents (each read writes a reference count) or its garbage collector passing over them copies page
    after page; training from a 2 GB list of documents took 27 s against 8 s from the file, most of it
    copying pages. The workers run bpe_fast's functions only, so they are started without the caller's
    __main__ (see _worker_start_env): a script without an ``if __name__ == "__main__":`` guard is not run
    again in them.
    """
    import multiprocessing

    methods = multiprocessing.get_all_start_methods()
    if "fork" not in methods:
        return multiprocessing.get_context(None)
    if "forkserver" in methods and _resident_bytes() > FORK_LIMIT_BYTES:
        # (no preload: the server imports with its own sys.path, '' first, so from a source checkout it would
        # import that; each worker imports bpe_fast as it starts, with the caller's path: see _worker_start_env)
        return multiprocessing.get_context("forkserver")
    return multiprocessing.get_context("fork")


@contextlib.contextmanager
def _worker_start_env() -> Iterator[None]:
    """While worker processes start from a forkserver (which take the caller's sys.path): the caller's
    __main__ without __file__ and __spec__, so that multiprocessing does not have the workers import it (it
    would run a script's top level again), and the folder this bpe_fast was imported from first on sys.path,
    so that they import the same bpe_fast (not, say, a source checkout without its compiled modules that a
    folder on the caller's path holds)."""
    main = sys.modules.get("__main__")
    home = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with _start_lock:               # pools started by two threads at once: one hides and restores at a time
        saved: dict[str, Any] = {}
        if main is not None:
            saved = {k: main.__dict__[k] for k in ("__file__", "__spec__") if k in main.__dict__}
        _hidden[:] = [main, saved, None]        # (before anything changes: a fork from here on puts it back)
        try:
            if main is not None:
                main.__dict__.pop("__file__", None)
                main.__dict__["__spec__"] = None
            sys.path.insert(0, home)
            _hidden[2] = home
            yield
        finally:
            _put_back_hidden()


def _resident_bytes() -> int:
    """This process's resident memory (Linux: /proc/self/statm), or 0 where it cannot be read."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


@contextlib.contextmanager
def worker_pool(num_processes: int, what: str, initializer: Callable[..., object] | None = None,
                initargs: tuple[Any, ...] = (), context: Any = None) -> Iterator[Executor]:
    """A ProcessPoolExecutor for `num_processes` workers; `what` names the job in errors
    ("counting corpus.txt"); context: worker_context()'s (made here if None; pass the one the shared objects
    in initargs were made with). Leaves no worker running when the block exits, however it exits."""
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    context = context if context is not None else worker_context()
    executor = ProcessPoolExecutor(max_workers=num_processes, mp_context=context,
                                   initializer=_init_worker, initargs=(initializer, initargs, os.getpid()))
    try:
        forked = context.get_start_method() == "fork"
        if not forked or _other_threads():
            # start every worker now: while __main__ is hidden (a pool of this kind starts one a submit when
            # none is idle: num_processes quick tasks at once start them all), or forked without Python 3.12's
            # DeprecationWarning that this process has other threads (pyarrow's, once imported): the workers run
            # bpe_fast's loops only, none of the libraries whose locks those threads may hold at the fork
            with (_forked_quietly() if forked else _worker_start_env()):
                started = [executor.submit(os.getpid) for _ in range(num_processes)]
            for future in started:
                result_of(future, executor)
        yield executor
    except BrokenProcessPool:
        terminate(executor)
        raise WorkerDiedError(f"a worker process died while {what} (killed, or out of memory?)") from None
    except BaseException:
        terminate(executor)
        raise
    _shut_down(executor)


def _processes_of(executor: Any) -> list[Any]:
    """The worker processes a process pool has started (none once it is shut down)."""
    return list((getattr(executor, "_processes", None) or {}).values())


def _shut_down(executor: Any, cancel_futures: bool = False) -> None:
    """executor.shutdown(wait=True), and the pool's pipes closed now, not when its objects are collected: the
    ended workers' Process objects' (two each), and the tasks' queue's write end, which its feeder thread leaves
    open when a worker was stopped (EPIPE). A reference cycle can hold them all: tblib's (dask.distributed
    installs it) keeps the pool's manager thread's frames in the traceback of a worker's error, with them 13
    descriptors for 3 failed calls of 2 workers, until the garbage collector ran."""
    processes = _processes_of(executor)
    tasks = getattr(executor, "_call_queue", None)     # (CPython's ProcessPoolExecutor's; None after shutdown)
    executor.shutdown(wait=True, cancel_futures=cancel_futures)
    for proc in processes:
        with contextlib.suppress(ValueError):       # (still running: left to its finalizer)
            proc.close()
    with contextlib.suppress(Exception):
        feeder = tasks._thread                      # type: ignore[union-attr]
        if feeder is None or not feeder.is_alive():
            tasks._writer.close()                   # type: ignore[union-attr]


def _other_threads() -> bool:
    """Whether this process runs other threads than the calling one (Linux: /proc/self/task; elsewhere, the
    Python threads), as Python 3.12 counts them when it warns of a fork."""
    try:
        return len(os.listdir("/proc/self/task")) > 1
    except OSError:
        return threading.active_count() > 1


@contextlib.contextmanager
def _forked_quietly() -> Iterator[None]:
    """Python 3.12's DeprecationWarning of a fork in a process with other threads ignored (see worker_pool)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"This process .* is multi-threaded, use of fork\(\) may lead to "
                                "deadlocks", category=DeprecationWarning)
        yield


@contextlib.contextmanager
def thread_pool(num_threads: int, name: str) -> Iterator[ThreadPoolExecutor]:
    """A ThreadPoolExecutor of `num_threads` threads. When the block exits on an error or an interrupt,
    tasks not yet started are cancelled and the running ones (which cannot be stopped) are waited for, so no
    thread outlives the block."""
    from concurrent.futures import ThreadPoolExecutor

    executor = ThreadPoolExecutor(max_workers=num_threads, thread_name_prefix=name)
    try:
        yield executor
    finally:
        executor.shutdown(wait=True, cancel_futures=True)


def shared_counter(context: Any, initial: int = 0) -> Any:
    """An int64 that workers started by worker_pool(..., context=context) can add to (progress, claims)."""
    return context.Value("q", initial)


def shared_queue(context: Any, maxsize: int) -> Any:
    """A bounded multiprocessing queue for workers started by worker_pool(..., context=context) (pass it in
    initargs: it goes to them as they start, never through a pipe)."""
    return context.Queue(maxsize)


def discard_queue(q: Any, timeout: float = 5.0) -> None:
    """Close a multiprocessing queue (shared_queue's) whose readers are gone (the workers stopped on an error or
    an interrupt), dropping what is left in it: what its feeder thread is still sending is read here, so that the
    thread ends (writing an item larger than the pipe holds, it stayed blocked for good, holding the item: a
    thread and a batch left behind by each interrupted call), and this process's exit never waits for it. Gives
    up after timeout seconds (a worker killed while it held the queue's write lock)."""
    import select

    q.cancel_join_thread()
    thread = getattr(q, "_thread", None)            # (CPython's; None until something was put)
    fd = None
    if thread is not None:
        with contextlib.suppress(AttributeError, OSError, ValueError):
            fd = os.dup(q._reader.fileno())         # ours: the feeder closes the queue's reader as it ends
    q.close()                                       # the feeder ends once it has sent what it holds
    if fd is None or thread is None:
        return
    try:
        deadline = time.monotonic() + timeout
        while thread.is_alive() and time.monotonic() < deadline:
            if select.select([fd], [], [], 0.05)[0] and not os.read(fd, 1 << 16):
                thread.join(max(0.0, deadline - time.monotonic()))   # no writer left: it is ending
    finally:
        os.close(fd)


def result_of(future: Future[_T], executor: Executor, poll: float = 0.25) -> _T:
    """future.result(), for a future of `executor` (either pool kind). For a process pool, a worker that died
    while it sent a result can leave the pool waiting forever for the rest of the message, the future never
    done: so this also looks every `poll` seconds whether a worker has exited, and raises BrokenProcessPool
    (worker_pool turns it into WorkerDiedError) if one has."""
    from concurrent.futures import TimeoutError as FutureTimeout

    try:
        if not _is_process_pool(executor):
            return future.result()
        while True:
            try:
                return future.result(timeout=poll)
            except FutureTimeout:
                check_workers_alive(executor)
    finally:
        # the future holds the error it raises, whose traceback holds this frame: with `future` left here, a
        # reference cycle kept the task's frames (an encoder's scratch buffers) until the garbage collector ran
        del future


def check_workers_alive(executor: Executor) -> None:
    """Raise BrokenProcessPool if a worker of the process pool `executor` has exited (they only exit at
    shutdown)."""
    from concurrent.futures.process import BrokenProcessPool

    for proc in _processes_of(executor):
        if proc.exitcode is not None:
            raise BrokenProcessPool(f"worker {proc.pid} exited with code {proc.exitcode}")


def _is_process_pool(executor: Executor) -> bool:
    """Whether `executor` is a concurrent.futures process pool (never, while no module has imported one)."""
    process = sys.modules.get("concurrent.futures.process")
    return process is not None and isinstance(executor, process.ProcessPoolExecutor)


def terminate(executor: Any) -> None:
    """Stop the workers now (shutdown() alone would let running tasks finish)."""
    processes = _processes_of(executor)
    for proc in processes:
        with contextlib.suppress(Exception):
            if proc.is_alive():
                proc.terminate()
    for proc in processes:
        with contextlib.suppress(Exception):
            proc.join(timeout=5)
    # A worker stopped while it sent a result leaves part of a message in the result pipe, and the executor's
    # manager thread then waits for the rest forever (this process holds the pipe's write end too), so
    # shutdown(wait=True) hung (seen in tests/test_faults.py under load). Closing that end gives the thread
    # EOF; it marks the pool broken and ends. (CPython's ProcessPoolExecutor keeps it as _result_queue.)
    with contextlib.suppress(Exception):
        executor._result_queue._writer.close()
    _shut_down(executor, cancel_futures=True)


def map_threads(func: Callable[[_T], _R], items: Sequence[_T], num_threads: int,
                parallel: Callable[[_T], bool] | None = None) -> list[_R]:
    """[func(x) for x in items] on up to num_threads threads, and no more than the cores this process may use
    (a thread more gains nothing and costs its encoder's memory): the items cut into about 4 runs a thread, a run
    a task (a task per item would cost more than encoding a short text). parallel: whether func(x) releases
    the GIL long enough for threads to gain; when it is false for every item, they run here (starting the
    threads costs a few hundred microseconds)."""
    n = len(items)
    workers = min(num_threads, n, usable_cores())
    if workers < 2 or (parallel is not None and not any(map(parallel, items))):
        return [func(x) for x in items]
    size = -(-n // (4 * workers))
    runs = [items[k:k + size] for k in range(0, n, size)]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(workers) as pool:
        return list(itertools.chain.from_iterable(pool.map(lambda run: [func(x) for x in run], runs)))


class ThreadJob(Generic[_T]):
    """job() run in a thread of its own, started and begun when this is made; or here and now when no thread may
    start any more (the interpreter is shutting down: an atexit handler). result() waits for it and gives what job
    returned, or raises what it raised; wait() only waits for it. One job's thread, without concurrent.futures
    (which imports logging: 4-12 ms of a fresh process's first Encoding).

    Why wait until it has begun: the jobs are native work that releases the GIL, run beside Python work on this
    thread. A thread that asks for the GIL while this one runs Python code gets it only after the interpreter's
    switch interval (5 ms), so a job started before that work began late (the tables of a 10,000-token folder
    take 2 ms). Begun, it holds the GIL until its native part releases it, and this thread goes on from there."""

    def __init__(self, job: Callable[[], _T], name: str) -> None:
        self._value: _T | None = None
        self._error: BaseException | None = None
        begun = threading.Event()

        def run() -> None:
            begun.set()
            try:
                self._value = job()
            except BaseException as exc:        # raised where the result is asked for, as from a Future
                self._error = exc

        self._thread: threading.Thread | None = threading.Thread(target=run, name=name)
        try:
            self._thread.start()
        except RuntimeError:        # no new thread at interpreter shutdown: the job runs here
            self._thread = None
            run()
        else:
            begun.wait()

    def wait(self) -> None:
        if self._thread is not None:
            self._thread.join()

    def result(self) -> _T:
        self.wait()
        error = self._error
        if error is not None:
            raise error
        return self._value      # type: ignore[return-value]  # (job's, set)
