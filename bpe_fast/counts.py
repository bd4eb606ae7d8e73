"""Counting the pre-tokens of corpus files, over several processes.

The parent cuts each file into byte ranges at safe points (see chunking.py); each worker reads its own
ranges from the file (no text is sent between processes), counts them and returns one table of distinct
pre-tokens. The tables are added in the parent.
"""
import os
from collections import Counter
from concurrent.futures import FIRST_EXCEPTION, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
import multiprocessing

from .chunking import chunk_boundaries
from .patterns import GPT2_PATTERN, resolve_pattern
from .pretokenize import compiled_pattern, count_chunk
from .specials import check_special_tokens, special_regex

DEFAULT_CHUNK_BYTES = 4 << 20
_IN_PROCESS_BYTES = 4 << 20     # below this, counting in the caller beats starting workers
_TASKS_PER_PROCESS = 4


class CorpusDecodeError(UnicodeError):
    """A corpus file is not valid UTF-8 (and errors="strict")."""

    def __init__(self, path, offset, reason, line=None):
        super().__init__(path, offset, reason, line)
        self.path, self.offset, self.reason, self.line = path, offset, reason, line

    def __str__(self):
        where = f"byte offset {self.offset}" + (f" (line {self.line})" if self.line is not None else "")
        return (f"{self.path}: invalid UTF-8 at {where}: {self.reason}; "
                f"pass errors='replace' to substitute U+FFFD")


class WorkerDiedError(RuntimeError):
    """A counting worker process ended abnormally (killed, out of memory)."""


def check_errors(errors):
    if errors not in ("strict", "replace"):
        raise ValueError(f"errors must be 'strict' or 'replace', got {errors!r}")
    return errors


def check_num_processes(num_processes):
    if num_processes is None:
        return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
    if isinstance(num_processes, bool) or not isinstance(num_processes, int) or num_processes < 1:
        raise ValueError(f"num_processes must be a positive int or None, got {num_processes!r}")
    return num_processes


def check_input_file(path):
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(2, "corpus file not found", path)
    if os.path.isdir(path):
        raise IsADirectoryError(21, "corpus path is a directory", path)
    return path


def _line_of(path, offset):
    """1-based line number of a byte offset (only computed when reporting an error)."""
    lines = 1
    with open(path, "rb") as f:
        left = offset
        while left > 0:
            block = f.read(min(left, 1 << 20))
            if not block:
                break
            lines += block.count(b"\n")
            left -= len(block)
    return lines


_bytes_done = None     # in a worker: a shared counter of bytes counted, for the caller's progress report


def _init_worker(bytes_done):
    global _bytes_done
    _bytes_done = bytes_done


def _count_ranges(path, ranges, special_tokens, pattern, errors):
    """Worker: count the pre-tokens of some byte ranges of one file."""
    rx = special_regex(special_tokens)
    total = Counter()
    with open(path, "rb") as f:
        for start, end in ranges:
            f.seek(start)
            data = f.read(end - start)
            try:
                counts = count_chunk(data, rx, pattern, errors)
            except UnicodeDecodeError as exc:
                raise CorpusDecodeError(path, start + exc.start, exc.reason) from None
            if total:
                total.update(counts)
            else:
                total = Counter(counts)
            if _bytes_done is not None:
                with _bytes_done.get_lock():
                    _bytes_done.value += end - start
    return total


def _terminate(executor):
    # ProcessPoolExecutor lets running tasks finish on shutdown; on an error or Ctrl-C we stop them now.
    for proc in list(getattr(executor, "_processes", {}).values()):
        if proc.is_alive():
            proc.terminate()
    executor.shutdown(wait=True, cancel_futures=True)


def _pool_context():
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else None)


def count_file(path, special_tokens=(), pattern=GPT2_PATTERN, num_processes=None, errors="strict",
               chunk_bytes=None, progress=None):
    """The pre-token counts of one UTF-8 file as a Counter of bytes, the same whatever num_processes and
    chunk_bytes. Special tokens split the text and are never counted.

    progress, if given, is called as progress("count", bytes_done, bytes_total) now and then."""
    path = check_input_file(path)
    special_tokens = check_special_tokens(special_tokens)
    pattern = resolve_pattern(pattern)
    compiled_pattern(pattern)                      # a bad pattern fails here, not in a worker
    errors = check_errors(errors)
    num_processes = check_num_processes(num_processes)
    chunk_bytes = DEFAULT_CHUNK_BYTES if chunk_bytes is None else int(chunk_bytes)
    if chunk_bytes < 1:
        raise ValueError(f"chunk_bytes must be positive, got {chunk_bytes}")

    size = os.path.getsize(path)
    workers = num_processes if size >= _IN_PROCESS_BYTES or chunk_bytes < size else 1
    bounds = chunk_boundaries(path, special_tokens, pattern, chunk_bytes,
                              min_chunks=workers * _TASKS_PER_PROCESS if workers > 1 else 1)
    ranges = list(zip(bounds[:-1], bounds[1:]))
    try:
        if workers == 1 or len(ranges) == 1:
            counts = _count_ranges(path, ranges, special_tokens, pattern, errors)
        else:
            counts = _count_parallel(path, ranges, special_tokens, pattern, errors, workers, progress)
        if progress is not None:
            progress("count", size, size)
        return counts
    except CorpusDecodeError as exc:
        raise CorpusDecodeError(exc.path, exc.offset, exc.reason, _line_of(path, exc.offset)) from None


def _count_parallel(path, ranges, special_tokens, pattern, errors, workers, progress):
    ntasks = min(len(ranges), workers * _TASKS_PER_PROCESS)
    groups = [ranges[len(ranges) * i // ntasks: len(ranges) * (i + 1) // ntasks] for i in range(ntasks)]
    context = _pool_context()
    bytes_done = context.Value("q", 0)
    executor = ProcessPoolExecutor(max_workers=min(workers, ntasks), mp_context=context,
                                   initializer=_init_worker, initargs=(bytes_done,))
    try:
        futures = [executor.submit(_count_ranges, path, g, special_tokens, pattern, errors) for g in groups]
        pending = set(futures)
        while pending:
            _, pending = wait(pending, timeout=0.25, return_when=FIRST_EXCEPTION)
            if progress is not None:
                progress("count", bytes_done.value, ranges[-1][1])
            if any(f.done() and f.exception() is not None for f in futures):
                break
        total = Counter()
        for fut in futures:                     # in file order, so the first decode error is reported
            total.update(fut.result())
        executor.shutdown(wait=True)
        return total
    except BrokenProcessPool:
        _terminate(executor)
        raise WorkerDiedError(f"a worker process died while counting {path} "
                              f"(killed, or out of memory?)") from None
    except BaseException:
        _terminate(executor)
        raise
