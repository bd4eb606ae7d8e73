"""Counting pre-tokens over processes, into native tables (a byte pool, offsets, int64 counts).

Text files: the parent cuts each file into byte ranges at safe points (see chunking.py); the caller's thread and
num_processes - 1 worker processes claim ranges one at a time, read them from the file (no text is sent between
processes), count them into one native table each, and the workers write their arrays to a scratch file.
Without a max_bytes / max_documents cap, uncompressed JSON lines files big enough are shared out the same way, in
ranges of whole lines, and Parquet files with row groups enough a row group at a time, largest first: each is
read and decoded by whoever claims it; the batches of the row groups still being read at the end go to claimants
with nothing left (TailShare). Other inputs (compressed files, capped reads, iterables; see inputs.py): read here
in batches of documents, handed to the thread, and to the workers through a bounded queue (their bytes through
shared slots, BatchRing, into which an iterable's documents are made UTF-8 directly). No pre-token is a Python
object on the way: the tables go as they are to the merge engine (train.py) or into PretokenCounts (counts.py).
What a Dask task runs is here too (count_ranges), so counts.py and dask_counts.py both build on this module.
"""
from __future__ import annotations

import contextlib
import copy
import ctypes
import functools
import itertools
import os
import queue
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, wait
from multiprocessing import heap, sharedctypes
from typing import Any, BinaryIO

import numpy as np
from numpy.typing import NDArray

from ._files import NOT_REGULAR, SHORTER, read_files
from ._types import Progress, StrPath, Table
from .chunking import chunk_boundaries, cuts_at_spaces
from .inputs import (COMPRESSIONS, MAX_SLOT_BYTES, Batch, Budget, ChangedWhileReadError, CorpusDecodeError,
                     InputError, SlotBatch, Slots, Stream, TextFile, batch_decode_error, check_errors, check_input_file,
                     encode_paths, file_sizes, jsonl_blocks, jsonl_data_blocks, jsonl_range_batches, jsonl_ranges,
                     parquet_row_group_batches, parquet_row_groups, not_regular, open_regular, read_slot_batches,
                     resolve_inputs, slot_bytes_for, utf8_boundary)
from .pretokenize import ChunkCounter, check_documents_utf8, check_utf8, compiled_pattern, native_kind
from .patterns import resolve_pattern
from .procs import (check_chunk_bytes, check_num_processes, check_progress, check_workers_alive, discard_queue,
                    shared_counter, shared_queue, usable_processes, worker_context, worker_pool)
from .specials import SpecialTokens
from .spill import Spill

DEFAULT_CHUNK_BYTES = 4 << 20
# count_unit(counter, k, bytes_done, share): count unit k into counter (see _count_claimed_units)
CountUnit = Callable[[ChunkCounter, int, Any, "TailShare | None"], None]
_IN_PROCESS_BYTES = 4 << 20     # below this, counting in the caller beats starting workers
_RANGES_PER_PROCESS = 8         # at least: workers claim ranges one by one, so they finish together
_SEND_SECONDS_A_PRETOKEN = 40e-9    # a worker's table to the caller: made, written, read (600,000 in 20-27 ms)


_bytes_done: Any = None        # in a worker: the shared Tally of bytes (for the caller's progress report) and documents
_next_range: Any = None        # in a worker: the shared index of the next byte range to claim
_share: TailShare | None = None  # in a worker: where claimants with nothing left get batches (or None)


def _init_worker(bytes_done: Any, next_range: Any, share: TailShare | None = None) -> None:
    global _bytes_done, _next_range, _share
    _bytes_done, _next_range, _share = bytes_done, next_range, share


class Tally:
    """What the counting has done, shared by the caller and its workers (given to them as they start): the
    bytes counted (`value`, for progress reports) and the documents (those of Batches, each whole; a byte
    range of a text file adds none)."""

    def __init__(self, context: Any) -> None:
        self._bytes, self._documents = shared_counter(context), shared_counter(context)

    def add(self, n_bytes: int, n_documents: int = 0) -> None:
        with self._bytes.get_lock():
            self._bytes.value += n_bytes
        if n_documents:
            with self._documents.get_lock():
                self._documents.value += n_documents

    @property
    def value(self) -> int:
        return int(self._bytes.value)

    @property
    def documents(self) -> int:
        return int(self._documents.value)


class TailShare:
    """Work shared at the end of a run of claimed units too big to end together (Parquet row groups): a
    claimant still reading a unit hands its next batch (offer) to a claimant with nothing left to claim
    (drain) instead of counting it, while there are fewer batches waiting than claimants idle. Made by the
    caller with the workers' context and given to them as they start (shared objects, not pickled data)."""

    def __init__(self, context: Any, claimants: int) -> None:
        self.claimants = claimants
        self.state = context.Array("q", 3)     # claimants idle in drain, batches offered, batches taken
        self.queue = context.Queue(claimants)
        # an offer nobody took (a worker died, an error) must not keep this process from exiting; on a normal
        # finish every offered batch has been taken (drain returns only then), so nothing can be lost
        self.queue.cancel_join_thread()

    def offer(self, batch: Batch) -> bool:
        """True if the batch went to an idle claimant (the caller then does not count it)."""
        with self.state.get_lock():
            idle, given, taken = self.state[:]
            if idle <= given - taken:
                return False
            self.state[1] = given + 1
        self.queue.put(batch)
        return True

    def drain(self, counter: ChunkCounter, bytes_done: Any, stop: threading.Event | None = None) -> None:
        """Count the batches offered by others until every claimant is idle here and none is left (or stop)."""
        lock = self.state.get_lock()
        with lock:
            self.state[0] += 1
        while stop is None or not stop.is_set():
            with lock:
                idle, given, taken = self.state[:]
            if idle == self.claimants and given == taken:
                return
            try:
                batch = self.queue.get(timeout=0.05)
            except queue.Empty:
                continue
            with lock:
                self.state[0] -= 1
                self.state[2] += 1
            _count_batch(counter, batch, bytes_done)
            with lock:
                self.state[0] += 1


def _counter_for(special_tokens: Iterable[str], pattern: str, errors: str) -> ChunkCounter:
    return ChunkCounter(special_tokens, pattern, errors)


def _count_range(counter: ChunkCounter, f: BinaryIO, path: str, start: int, end: int, bytes_done: Any) -> None:
    """Add the pre-tokens of bytes [start, end) of the open file f to counter."""
    f.seek(start)
    data = f.read(end - start)
    if len(data) != end - start:        # (not a short count: the ranges were planned from its size)
        raise ChangedWhileReadError(path)
    try:
        counter.add(data)
    except UnicodeDecodeError as exc:
        raise CorpusDecodeError(path, start + exc.start, exc.reason) from None
    if bytes_done is not None:
        bytes_done.add(end - start)


def _claim(next_range: Any, below: int | None = None) -> int:
    """The index of the next unit, claimed (past the last: none left). below: claim none from that index on (a
    worker leaving the last unit to the caller's thread, _count_claimed), returning below."""
    with next_range.get_lock():
        k = next_range.value
        if below is not None and k >= below:
            return below
        next_range.value = k + 1
    return k


def count_ranges(units: Iterable[tuple[str, int, int]], special_tokens: Iterable[str], pattern: str,
                 errors: str, spill: Spill | None = None) -> Table:
    """Count the pre-tokens of some byte ranges (path, start, end) of files into one native table; returns its
    arrays (tokens uint8, offsets int64, counts int64). spill: when the table passes spill's budget it is written
    as a run (spill.runs), and once it has been, the rest too: then the table returned is empty."""
    counter = _counter_for(special_tokens, pattern, errors)
    for path, ranges in itertools.groupby(units, key=lambda unit: unit[0]):
        with open(path, "rb") as f:
            for _, start, end in ranges:
                _count_range(counter, f, path, start, end, _bytes_done)
                if spill is not None and spill.over(counter):
                    spill.write(counter, keep=True)
    if spill is not None and spill.runs:
        spill.write(counter)
        return _empty_table()
    return counter.arrays(release=True)


def _count_range_unit(units: Sequence[tuple[str, int, int]], counter: ChunkCounter, k: int, bytes_done: Any,
                      share: TailShare | None) -> None:
    """Count byte range k, units[k] = (path, start, end) (a unit of _count_claimed_units; ranges are small:
    nothing shared)."""
    path, start, end = units[k]
    with open(path, "rb") as f:
        _count_range(counter, f, path, start, end, bytes_done)


def _count_claimed(count_unit: CountUnit, n_units: int, special_tokens: Iterable[str], pattern: str, errors: str,
                   out_path: str, spill: Spill | None = None) -> str | list[str]:
    """Worker: claim units one at a time from the shared index until none is left, count each with
    count_unit(counter, k, bytes_done, share) into one native table (then, with a TailShare, count what the
    others offer), and write its arrays to out_path (.npy arrays, not pickled); returns out_path. spill: the
    table is written as a run whenever it passes spill's budget, and once it has been, the rest at the end
    too: then returns the runs' paths (a list) and writes no table."""
    counter = _counter_for(special_tokens, pattern, errors)
    busy, done = 0.0, 0
    while True:
        # the last unit is left to the caller's thread when sending this table would take longer than half a
        # unit: the caller counts it while the table is written, instead of waiting for it (on the real corpus
        # the caller had waited 30 ms on average for a table of 600,000 pre-tokens, units of 20 ms)
        leave = done > 0 and counter.distinct() * _SEND_SECONDS_A_PRETOKEN > busy / done / 2
        limit = n_units - 1 if leave else n_units
        k = _claim(_next_range, limit)
        if k >= limit:
            break
        start = time.perf_counter()
        count_unit(counter, k, _bytes_done, _share)
        if spill is not None and spill.over(counter):
            spill.write(counter, keep=True)
        busy += time.perf_counter() - start
        done += 1
    if _share is not None:
        _share.drain(counter, _bytes_done)
    if spill is not None and spill.runs:
        spill.write(counter)
        return spill.runs
    return _save_table(counter, out_path)


def _save_table(counter: ChunkCounter, out_path: str) -> str:
    """Write a counter's arrays to out_path (.npy arrays, not pickled), emptying it; returns out_path. (Measured
    and not kept: the native counter writing them straight into the file's mapped pages took 22 ms where these
    arrays and np.save took 18 ms, a worker's table of the real corpus: a page of /dev/shm first written through
    a map costs more than through write().)"""
    tokens, offsets, counts = counter.arrays(release=True)
    try:
        with open(out_path, "wb") as out:
            for array in (tokens, offsets, counts):
                np.save(out, array, allow_pickle=False)
    except OSError as exc:
        # a full /dev/shm or TMPDIR, a file size limit (ulimit -f): NumPy's "9852 requested and 4689 written" named
        # neither the file nor the cause
        from .atomic import named_write_error
        named = named_write_error(exc, out_path)
        raise OSError(named.errno, f"{named.strerror or named}, writing a counting worker's table in the temporary "
                                   f"folder {os.path.dirname(out_path)} (/dev/shm's when it has room, else TMPDIR's)",
                      out_path) from None
    return out_path


_NPY_HEADERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}


def _read_table(path: str) -> Table:
    """The arrays _save_table wrote to path, as (tokens, offsets, counts): read-only views of the file (no copy:
    the caller adds them to its table at once, _own_and_theirs; an unlinked file's pages stay while they are
    mapped). Where a file cannot be deleted while mapped (not POSIX), copies."""
    arrays = []
    with open(path, "rb") as f:
        for dtype in (np.dtype(np.uint8), np.dtype(np.int64), np.dtype(np.int64)):
            version = np.lib.format.read_magic(f)
            if version not in _NPY_HEADERS:
                raise ValueError(f"{path}: a .npy header of version {version}, not one np.save writes")
            shape, fortran, found = _NPY_HEADERS[version](f)
            if found != dtype or len(shape) != 1 or fortran:
                raise ValueError(f"{path}: an array of {found} {shape}, not a table's")
            start = f.tell()
            if os.name != "posix":
                arrays.append(np.fromfile(f, dtype=dtype, count=shape[0]))
            else:
                arrays.append(np.memmap(f, dtype=dtype, mode="r", offset=start, shape=shape) if shape[0]
                              else np.empty(0, dtype=dtype))
            f.seek(start + shape[0] * dtype.itemsize)
    tokens, offsets, counts = arrays
    return tokens.view(np.uint8), offsets.view(np.int64), counts.view(np.int64)


def _first_decode_error(units: Sequence[tuple[str, int, int]], before: tuple[int, int]) -> CorpusDecodeError | None:
    """The first invalid UTF-8 of the byte ranges (path, start, end) in their order, looked for before
    before = (the unit, the offset in its file) (workers report the first they meet in time)."""
    for k, (path, start, end) in enumerate(units):
        if (k, start) >= before:
            break
        with open(path, "rb") as f:
            f.seek(start)
            try:
                check_utf8(f.read(end - start))
            except UnicodeDecodeError as exc:
                return CorpusDecodeError(path, start + exc.start, exc.reason)
    return None


def check_count_args(path: StrPath, special_tokens: Iterable[str] | None, pattern: str,
                     errors: str) -> tuple[str, SpecialTokens, str]:
    path = check_input_file(path)
    special_tokens, pattern = check_input_args(special_tokens, pattern, errors)
    return path, special_tokens, pattern


def count_file_tables(path: str, special_tokens: Sequence[str], pattern: str, num_processes: int | None, errors: str,
                      chunk_bytes: int | None, progress: Progress | None, combine: bool = False,
                      size: int | None = None) -> list[Table]:
    """count_file's work, as tables (tokens, offsets, counts): with combine, one (as training and count_pretokens
    ask: the workers' added into the caller's thread's table as they arrive); else one per worker, and a pre-token
    may be in several (their sum is the file's counts). Arguments as count_file checks them; size: count only the
    file's first size bytes (a character boundary).

    (Measured and not kept: for a pattern the native scanner counts, threads of this process in place of the
    workers, as small files are counted, took the same time on the real corpus, 0.82-0.89 s against 0.81-0.84 s
    with 2 processes: a worker forked from a small process starts in milliseconds and its table comes back
    through /dev/shm in a few more.)"""
    return count_text_files_tables([(path, size)], special_tokens, pattern, num_processes, errors, chunk_bytes,
                                   progress, combine)


def count_text_files_tables(files: Sequence[tuple[str, int | None]], special_tokens: Sequence[str], pattern: str,
                            num_processes: int | None, errors: str, chunk_bytes: int | None,
                            progress: Progress | None, combine: bool = False,
                            spill: Spill | None = None) -> list[Table]:
    """count_file_tables of consecutive text files (path, size: count only its first size bytes, a character
    boundary; None: all of it), their byte ranges claimed by one pool of workers (a corpus of 10 files counted
    one after another started a pool, and summed two tables, a file: 0.35 s of 1.3 s). Of the files that fail,
    the first in their order is named, and in it the first invalid UTF-8. spill: counters over its budget write
    runs (spill.runs); once any has, every table is written as one and the list returned is empty."""
    check_progress(progress)
    num_processes = check_num_processes(num_processes)
    chunk_bytes = check_chunk_bytes(chunk_bytes, DEFAULT_CHUNK_BYTES)
    sizes = []
    for path, size in files:
        with open_regular(path) as f:         # (not a pipe put in its place since it was listed: refused, no wait)
            sizes.append(os.fstat(f.fileno()).st_size if size is None else size)
    total = sum(sizes)
    workers = usable_processes(num_processes if total >= _IN_PROCESS_BYTES or chunk_bytes < total else 1)
    units: list[tuple[str, int, int]] = []         # (path, start, end): byte ranges, in the files' order
    for (path, _), size in zip(files, sizes):
        share = -(-workers * _RANGES_PER_PROCESS * size // max(total, 1)) if workers > 1 else 1
        bounds = chunk_boundaries(path, special_tokens, pattern, chunk_bytes, min_chunks=max(1, share), size=size)
        units.extend((path, a, b) for a, b in zip(bounds[:-1], bounds[1:]))
    # a claimant a range at most (num_processes=1024 on a small file with few safe cuts forked 1023 processes)
    workers = min(workers, len(units))
    try:
        if workers == 1:
            tables = [count_ranges(units, special_tokens, pattern, errors, spill)]
            if spill is not None and spill.runs:
                tables = []
        else:
            tables = _count_parallel(units, special_tokens, pattern, errors, workers, progress, combine, spill)
        if progress is not None:
            progress("count", total, total)
        return tables
    except CorpusDecodeError as exc:
        raise exc.with_line(exc.path) from None


def count_small_files_tables(files: Sequence[tuple[str, int, bool]], special_tokens: Sequence[str], pattern: str,
                             num_processes: int, errors: str, progress: Progress | None,
                             combine: bool = False) -> list[Table]:
    """Text files each smaller than _IN_PROCESS_BYTES, given as (path, size, whole): whole, the file as it is
    when read (size: as it was listed, for sharing the work out), else only its first size bytes (a character
    boundary: a max_bytes cap); each one document, as count_file_tables counts each. One native table for all of
    them in the caller (a folder of 20,000 files of a few KB took 5.6 times as long as one file of the same text
    when each file was counted into its own table, which training then read with each common word once a file),
    or, when they hold _IN_PROCESS_BYTES or more, runs of consecutive files claimed one at a time by num_processes
    claimants: threads of the caller's when the pattern is counted natively (reading and counting release the
    GIL: no worker to start, nothing to send it or to send back), else the caller's thread and num_processes - 1
    workers, as count_file_tables' byte ranges are. Of the files that fail (invalid UTF-8, one gone or not to be
    read), the first in the order given is named, whoever met which first."""
    total = sum(size for _, size, _ in files)
    workers = num_processes if total >= _IN_PROCESS_BYTES else 1
    if not native_kind(pattern):        # (a pattern the native scanner runs is counted in threads)
        workers = usable_processes(workers)
    units = _runs_of_files(files, max(64 << 10, min(1 << 20, total // (workers * _RANGES_PER_PROCESS))))
    workers = min(workers, len(units))
    count_unit = functools.partial(_count_files_unit, units)

    def first_failure(seen: list[BaseException]) -> BaseException:
        # the first failing file in the files' order, read again up to the earliest one seen failing
        order: dict[str, int] = {}
        for at, (path, _, _) in enumerate(files):
            order.setdefault(path, at)
        at = [order.get(_failed_path(e) or "", len(files)) for e in seen]
        if min(at) >= len(files):
            return seen[0]
        for piece in _runs_of_files(files[:min(at) + 1], 1 << 20):     # (a MB at a time: not the corpus at once)
            bad = _first_bad_file(piece, errors)
            if bad is not None:
                return bad
        return seen[at.index(min(at))]

    try:
        if workers == 1 or native_kind(pattern):
            tables = _count_in_threads(len(units), count_unit, special_tokens, pattern, errors, workers, progress,
                                       total, first_failure)
        else:
            own, tables, _ = _count_claimed_units(len(units), count_unit, special_tokens, pattern, errors, workers,
                                                  progress, total,
                                                  f"counting {files[0][0]} and {len(files) - 1} more files",
                                                  first_failure)
            tables = _own_and_theirs(own, tables, combine)
        if progress is not None:
            progress("count", total, total)
        return tables
    except CorpusDecodeError as exc:
        raise exc.with_line(exc.path) from None


def _count_in_threads(n_units: int, count_unit: CountUnit, special_tokens: Sequence[str], pattern: str, errors: str,
                      threads: int, progress: Progress | None, total: int | None,
                      first_failure: Callable[[list[BaseException]], BaseException]) -> list[Table]:
    """The units 0..n_units - 1 claimed one at a time by threads of this process (the first, the caller's own),
    each counting into a counter of its own with count_unit(counter, k, bytes_done, None); one table, their sum.
    Worth it where count_unit holds the GIL for little of its time (a native pattern). first_failure picks the
    error to raise from those seen; an interrupt stops the others after the unit each is counting, waited for."""
    counters = [_counter_for(special_tokens, pattern, errors) for _ in range(threads)]
    claims = iter(range(n_units))          # (next() on it is atomic under the GIL)
    done = _ThreadsTally()
    stop: list[bool] = []                  # [True] once a claimant failed or was interrupted
    failures: list[BaseException] = []

    def report() -> None:
        if progress is not None and (total is None or done.value < total):    # (the total: the caller's, once)
            progress("count", done.value, total)

    def claim_and_count(counter: ChunkCounter, caller: bool = False) -> None:
        try:
            for k in claims:
                if stop:
                    break
                count_unit(counter, k, done, None)
                if caller:
                    report()
        except Exception as exc:
            failures.append(exc)
            stop.append(True)
        except BaseException as exc:       # an interrupt in the caller's thread: raised there
            stop.append(True)
            if caller:
                raise
            failures.append(exc)

    helpers = [threading.Thread(target=claim_and_count, args=(counter,), name="bpe_fast-count", daemon=True)
               for counter in counters[1:]]
    for thread in helpers:
        thread.start()
    try:
        claim_and_count(counters[0], caller=True)
        for thread in helpers:
            while thread.is_alive():
                thread.join(0.25)
                report()
    except BaseException:
        stop.append(True)                  # the others stop after the unit each is counting (a run of files:
        for thread in helpers:             # milliseconds); none outlives the call
            thread.join()
        failures.clear()                   # (see below)
        raise
    if failures:
        try:
            raise first_failure(failures)
        finally:
            # each failure's traceback holds its claimant's frame, which holds this list and its counter: a
            # reference cycle that kept the counters' native tables until the garbage collector ran
            failures.clear()
    return _own_and_theirs(counters[0], [counter.arrays(release=True) for counter in counters[1:]], True)


class _ThreadsTally:
    """The bytes_done of claimants that are threads of this process (as a CountUnit reports them: add)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.value = 0

    def add(self, n_bytes: int, n_documents: int = 0) -> None:
        with self.lock:
            self.value += n_bytes


def _failed_path(exc: BaseException) -> str | None:
    """The file an error is about: a CorpusDecodeError's path, an OSError's filename, else None."""
    if isinstance(exc, CorpusDecodeError):
        return exc.path
    name = getattr(exc, "filename", None) if isinstance(exc, OSError) else None
    return name if isinstance(name, str) else None


def _runs_of_files(files: Sequence[tuple[str, int, bool]], run_bytes: int) -> list[list[tuple[str, int, bool]]]:
    """The files in runs of consecutive ones holding about run_bytes each (the units workers claim)."""
    runs: list[list[tuple[str, int, bool]]] = [[]]
    held = 0
    for file in files:
        if held >= run_bytes:
            runs.append([])
            held = 0
        runs[-1].append(file)
        held += file[1]
    return runs


def _read_files(files: Sequence[tuple[str, int, bool]]
                ) -> tuple[NDArray[np.uint8], NDArray[np.int64], OSError | None]:
    """The files (path, size, whole: read whole as it is now, else its first size bytes) read one after another,
    natively (bpe_fast._files: 5 µs a file of a few hundred bytes, where Python's os.open, os.read and os.close
    took 12): (data, bounds with file k data[bounds[k]:bounds[k + 1]], the error of the first file that could not
    be read or None); with an error, data holds the files before that one."""
    data, bounds, failed, error = read_files(encode_paths(path for path, _, _ in files),
                                             np.array([size for _, size, _ in files], dtype=np.int64),
                                             np.array([whole for _, _, whole in files], dtype=np.uint8))
    if failed < 0:
        return data, bounds, None
    path = files[failed][0]
    if error == SHORTER:
        return data, bounds, ChangedWhileReadError(path)
    if error == NOT_REGULAR:
        return data, bounds, not_regular(path)
    return data, bounds, OSError(error, os.strerror(error), path)


def _decode_error(files: Sequence[tuple[str, int, bool]], bounds: NDArray[np.int64],
                  exc: UnicodeDecodeError) -> CorpusDecodeError:
    """The CorpusDecodeError of the files read into one buffer (as _read_files reads them) for exc, the first
    invalid document's error, its offsets in the buffer: naming that file, the offset in it."""
    at = int(np.searchsorted(bounds, exc.start, side="right")) - 1
    return CorpusDecodeError(files[at][0], exc.start - int(bounds[at]), exc.reason)


def _count_files_unit(units: Sequence[Sequence[tuple[str, int, bool]]], counter: ChunkCounter, k: int,
                      bytes_done: Any, share: TailShare | None) -> None:
    """Count run k of small files, each a document of its own (a CountUnit): read, then counted in one call."""
    run = units[k]
    data, bounds, failure = _read_files(run)
    if failure is not None:
        raise _first_bad_file(run, counter.errors) or failure
    try:
        counter.add_documents(data, bounds)
    except UnicodeDecodeError as exc:
        raise _decode_error(run, bounds, exc) from None
    if bytes_done is not None:
        bytes_done.add(len(data))


def _first_bad_file(files: Sequence[tuple[str, int, bool]], errors: str) -> BaseException | None:
    """The error of the first of the files that cannot be read, or (errors "strict") holds invalid UTF-8, in
    their order; None if none."""
    data, bounds, failure = _read_files(files)
    if errors == "strict":
        try:
            check_documents_utf8(data, bounds)
        except UnicodeDecodeError as exc:
            return _decode_error(files, bounds, exc)
    return failure


def _scratch_dir(corpus_bytes: int) -> tempfile.TemporaryDirectory[str]:
    """A private folder for the workers' tables: in memory (/dev/shm) where there is one with room for tables
    as large as the corpus (a container's /dev/shm may be 64 MB), else the usual temporary folder."""
    shm, base = "/dev/shm", None
    try:
        if os.path.isdir(shm) and os.access(shm, os.W_OK):
            st = os.statvfs(shm)
            if st.f_bavail * st.f_frsize >= corpus_bytes + (256 << 20):
                base = shm
    except OSError:
        pass
    return tempfile.TemporaryDirectory(prefix="bpe_fast-counts-", dir=base)


def _count_parallel(units: Sequence[tuple[str, int, int]], special_tokens: Sequence[str], pattern: str,
                    errors: str, workers: int, progress: Progress | None, combine: bool,
                    spill: Spill | None = None) -> list[Table]:
    """workers - 1 processes and a thread of the caller's claim byte ranges (path, start, end) one at a time until
    none is left, each counting into one native table (the thread's scan runs without the GIL); returns the
    tables, or with combine the workers' added into the thread's table."""
    def first_failure(seen: list[BaseException]) -> BaseException:
        # the first in the files' order, not the first a worker met: the earliest range a failure names (its
        # file's first for an error naming only the file), and before it the first invalid UTF-8 there is
        where = [_unit_of(units, e) for e in seen]
        first = min(where)
        failed = seen[where.index(first)]
        # (up to the invalid byte, that range included; before the range, for a file that could not be read)
        found = _first_decode_error(units, (first[0], first[1] + 1) if isinstance(failed, CorpusDecodeError)
                                    else first)
        return found if found is not None else failed

    own, tables, _ = _count_claimed_units(len(units), functools.partial(_count_range_unit, units), special_tokens,
                                          pattern, errors, workers, progress, sum(b - a for _, a, b in units),
                                          f"counting {units[0][0]}" if units[0][0] == units[-1][0]
                                          else f"counting {units[0][0]} and the files after it", first_failure,
                                          spill=spill)
    return _own_and_theirs(own, tables, combine, spill)


def _unit_of(units: Sequence[tuple[str, int, int]], exc: BaseException) -> tuple[int, int]:
    """(the index of the range exc happened in, the offset in its file) for ordering failures: a decode error's
    offset, a file's first range for an error naming only the file, after every range for one naming none."""
    path = _failed_path(exc)
    offset = exc.offset if isinstance(exc, CorpusDecodeError) else -1
    for k, (unit_path, start, end) in enumerate(units):
        if unit_path == path and (offset < end or offset < 0):
            return k, max(offset, start)
    return len(units), 0


def _own_and_theirs(own: ChunkCounter, tables: list[Table], combine: bool, spill: Spill | None = None) -> list[Table]:
    """The caller's thread's table and the workers': with combine, theirs added into its own, one table (the last
    looked up as the arrays are made, not inserted: ChunkCounter.arrays_with, in as many threads as there were
    processes counting: the workers are done). With a spill that has runs, each table is written as one (its
    own first, freeing it) and the list is empty."""
    if spill is not None and spill.runs:
        spill.write(own)
        for table in tables:
            spill.write_table(table)
        return []
    if combine and tables:
        for table in tables[:-1]:
            own.add_arrays(*table)
        return [own.arrays_with(*tables[-1], threads=len(tables) + 1)]
    # (each of theirs copied from the file it maps: _read_table)
    return [own.arrays(release=True)] + [(np.array(tokens, dtype=np.uint8), np.array(offsets, dtype=np.int64),
                                          np.array(counts, dtype=np.int64)) for tokens, offsets, counts in tables]


def _count_claimed_units(n_units: int, count_unit: CountUnit, special_tokens: Sequence[str], pattern: str,
                         errors: str, workers: int, progress: Progress | None, total: int | None, what: str,
                         first_failure: Callable[[list[BaseException]], BaseException], shared_tail: bool = False,
                         spill: Spill | None = None) -> tuple[ChunkCounter, list[Table], Tally]:
    """The units of work 0..n_units - 1 (byte ranges of a file, ranges of JSON lines, row groups of Parquet files)
    claimed one at a time from a shared index by a thread of the caller's and by workers - 1 processes
    (_count_claimed), each counting a unit with count_unit(counter, k, bytes_done, share) (picklable: a functools.partial of a module
    function) until none is left. With shared_tail, share is a TailShare: a claimant with nothing left counts
    batches the others offer from the units they are still reading. Returns (the thread's counter, the
    workers' tables, the Tally of bytes and documents counted). first_failure picks the error to raise from
    those seen. spill: every counter writes its table as a run when it passes spill's budget; the runs of the
    workers that did are added to spill.runs (and their tables are not among those returned)."""
    context = worker_context()
    bytes_done, next_unit = Tally(context), shared_counter(context)
    share = TailShare(context, workers) if shared_tail else None
    own = _counter_for(special_tokens, pattern, errors)
    stop = threading.Event()
    failure: list[BaseException] = []

    def count_own() -> None:
        try:
            while not stop.is_set():
                k = _claim(next_unit)
                if k >= n_units:
                    break
                count_unit(own, k, bytes_done, share)
                if spill is not None and spill.over(own):
                    spill.write(own, keep=True)
            if share is not None:
                share.drain(own, bytes_done, stop)
        except BaseException as exc:       # reported by the caller's thread
            failure.append(exc)

    with _scratch_dir(total or 0) as scratch, _discarded_on_error(share.queue if share is not None else None), \
            worker_pool(workers - 1, what, _init_worker, (bytes_done, next_unit, share), context) as pool:
        futures = [pool.submit(_count_claimed, count_unit, n_units, special_tokens, pattern, errors,
                               os.path.join(scratch, f"table-{i}.npy"), spill) for i in range(workers - 1)]
        thread = threading.Thread(target=count_own, name="bpe_fast-count", daemon=True)
        thread.start()

        def raise_first_failure() -> None:
            seen: list[Any] = failure + [f.exception() for f in futures if f.done() and f.exception() is not None]
            if seen:
                stop.set()                 # the thread claims nothing more while first_failure looks
                try:
                    raise first_failure(seen)
                finally:
                    # their tracebacks hold this frame, or count_own's (which holds `failure` and `own`, a native
                    # table): reference cycles that kept them until the garbage collector ran
                    seen.clear()
                    failure.clear()

        try:
            pending = set(futures)
            while pending or thread.is_alive():
                _, pending = wait(pending, timeout=0.25, return_when=FIRST_EXCEPTION)
                if pending:
                    check_workers_alive(pool)   # a worker killed mid-result would leave its future pending
                thread.join(0 if pending else 0.25)
                if progress is not None:
                    progress("count", bytes_done.value, total)
                raise_first_failure()
        except BaseException:
            stop.set()
            # not without a limit: a worker killed while it sent this thread a shared batch (TailShare) leaves
            # the thread waiting for the rest of it; the thread is a daemon and its counter is dropped
            thread.join(5)
            failure.clear()                # (see raise_first_failure)
            raise
        stop.set()
        thread.join()
        raise_first_failure()              # a failure in the last moments, after the loop's last look
        tables = []
        for f in futures:
            result = f.result()
            if isinstance(result, list):   # a worker's runs (spill)
                spill.runs.extend(result)  # type: ignore[union-attr]
                continue
            tables.append(_read_table(result))
            os.unlink(result)              # (its pages stay while _read_table's map holds them)
    return own, tables, bytes_done


@contextlib.contextmanager
def _discarded_on_error(shared: Any) -> Iterator[None]:
    """On an error or interrupt in the block (its workers stopped by then: worker_pool's exit comes first), the
    multiprocessing queue `shared` (if not None) emptied and closed (discard_queue: a batch offered to a worker
    that is gone left the queue's feeder thread blocked for good)."""
    try:
        yield
    except BaseException:
        if shared is not None:
            discard_queue(shared)
        raise


# ---- Parquet files whose row groups the workers read themselves ------------------------------------

ParquetUnit = tuple[str, tuple[int, ...], int]      # (path, consecutive row groups, the rows before them)
PARQUET_UNIT_BYTES = 4 << 20


def _count_row_group_unit(units: Sequence[ParquetUnit], text_column: str, batch_bytes: int,
                          counter: ChunkCounter, k: int, bytes_done: Any, share: TailShare | None) -> None:
    """Count the row groups of units[k] (a unit of _count_claimed_units), but for the batches taken by claimants
    with nothing left (share)."""
    for batch in parquet_row_group_batches(*units[k], text_column, batch_bytes):
        if share is None or not share.offer(batch):
            _count_batch(counter, batch, bytes_done)


def parquet_units(streams: Sequence[Stream], text_column: str, num_processes: int,
                  unit_bytes: int | None = None) -> list[ParquetUnit] | None:
    """The units of a run of Parquet streams, when there are enough for the workers to read them themselves
    (at least 2 a process: they claim them one at a time, so they finish together); else None (the caller reads
    the files and hands out batches). A unit is a row group, or consecutive ones of a file until their text
    reaches unit_bytes (a file of thousands of small row groups: a worker opens the file once a unit). The
    largest units come first, so that the last ones claimed are small and the claimants finish close together."""
    if num_processes < 2 or not streams or any(s.kind != "parquet" for s in streams):
        return None
    unit_bytes = PARQUET_UNIT_BYTES if unit_bytes is None else unit_bytes
    sized: list[tuple[int, str, tuple[int, ...], int]] = []
    for stream in streams:
        sizes, rows = parquet_row_groups(stream.obj, text_column)
        run: list[int] = []
        run_bytes = before = first = 0
        for g, (size, n) in enumerate(zip(sizes, rows)):
            if not run:
                first = before
            run.append(g)
            run_bytes += size
            before += n
            if run_bytes >= unit_bytes or g == len(sizes) - 1:
                sized.append((run_bytes, stream.obj, tuple(run), first))
                run, run_bytes = [], 0
    sized.sort(key=lambda unit: -unit[0])                 # stable: equal sizes stay in file order
    units = [(path, groups, first) for _, path, groups, first in sized]
    return units if len(units) >= 2 * num_processes else None


def _first_parquet_error(streams: Sequence[Stream], text_column: str, batch_bytes: int,
                         seen: list[BaseException]) -> BaseException:
    """The first invalid UTF-8 of a run of Parquet files in input order (the row groups are claimed largest
    first, and each claimant reports the first error it meets in time), found by reading the row groups again in
    order up to the earliest error seen; seen[0] if none is a CorpusDecodeError."""
    decode = [e for e in seen if isinstance(e, CorpusDecodeError)]
    if not decode:
        return seen[0]
    paths = [stream.obj for stream in streams]
    earliest = min(decode, key=lambda e: (paths.index(e.path), e.document, e.offset))
    until = (paths.index(earliest.path), earliest.document)
    for i, path in enumerate(paths[:until[0] + 1]):
        groups = range(len(parquet_row_groups(path, text_column)[0]))
        for batch in parquet_row_group_batches(path, groups, 0, text_column, batch_bytes):
            if (i, batch.origin[1]) > until:
                return earliest
            error = _batch_utf8_error(batch)
            if error is not None:
                return error
    return earliest


def _batch_utf8_error(batch: Batch) -> CorpusDecodeError | None:
    """The first invalid UTF-8 of a Batch's documents, each decoded alone (as a counter does), or None."""
    data, bounds = batch.data, batch.bounds
    try:
        check_utf8(data)
        starts = bounds[1:-1][bounds[1:-1] < len(data)]
        if not np.any((np.frombuffer(data, dtype=np.uint8)[starts] & 0xC0) == 0x80):
            return None                # whole characters, and each document starts at one
    except UnicodeDecodeError:
        pass
    for k in range(len(bounds) - 1):
        try:
            check_utf8(data[bounds[k]:bounds[k + 1]])
        except UnicodeDecodeError as exc:
            return batch_decode_error(batch, UnicodeDecodeError("utf-8", data, int(bounds[k]) + exc.start,
                                                                int(bounds[k]) + exc.end, exc.reason))
    return None


# ---- uncompressed JSON lines files whose byte ranges the workers read themselves -------------------

def _count_jsonl_unit(units: Sequence[Sequence[tuple[str, int, int]]], text_field: str, batch_bytes: int,
                      errors: str, counter: ChunkCounter, k: int, bytes_done: Any, share: TailShare | None) -> None:
    """Count the JSON lines of units[k] (a unit of _count_claimed_units): one range (path, start, end) of a
    file, or a run of small files (path, 0, size), read natively and counted in one call."""
    unit = units[k]
    if len(unit) == 1:
        for batch in jsonl_range_batches(*unit[0], text_field, batch_bytes, errors):
            _count_batch(counter, batch, bytes_done)
        return
    data, bounds, failure = _read_files([(path, end, False) for path, _, end in unit])
    if failure is not None:
        raise failure
    texts, doc_bounds, owner = _jsonl_run_documents(unit, data, bounds, text_field, errors)
    if not len(owner):
        return
    try:
        counter.add_documents(texts, doc_bounds)
    except UnicodeDecodeError as exc:       # (first_failure reads the files again in order, naming the line)
        at = int(np.searchsorted(doc_bounds, exc.start, side="right")) - 1
        if owner[at] < 0:                   # read as one block: the same documents, read a file at a time
            owner = _jsonl_run_documents(unit, data, bounds, text_field, errors, whole=False)[2]
        raise CorpusDecodeError(unit[owner[at]][0], exc.start - int(doc_bounds[at]), exc.reason) from None
    if bytes_done is not None:
        bytes_done.add(len(texts), len(owner))


def _jsonl_run_documents(unit: Sequence[tuple[str, int, int]], data: NDArray[np.uint8], bounds: NDArray[np.int64],
                         text_field: str, errors: str, whole: bool = True
                         ) -> tuple[bytes, NDArray[np.int64], NDArray[np.int64]]:
    """(texts, bounds of each document in texts, the file in unit of each document) of a run of small JSON lines
    files read into data (file j data[bounds[j]:bounds[j + 1]]). When every file ends its last line, the run is
    read as one block (its lines are the files' lines: a folder of 32,020 one-record files spent 0.2 s of 1.4 s
    reading them a file at a time), the documents' files not known (-1) unless a line is bad: then, with whole
    False, and when a file's last line has no newline, a file at a time, which names the file and line."""
    ends = bounds[1:][bounds[1:] > bounds[:-1]]
    if whole and len(ends) and bool(np.all(data[ends - 1] == 0x0A)):
        try:
            blocks = list(jsonl_data_blocks(data.tobytes(), unit[0][0], text_field, errors))
            return _joined_documents([texts for texts, _, _ in blocks], [lengths for _, lengths, _ in blocks],
                                     None)
        except (InputError, CorpusDecodeError):
            pass                        # named below, in its file
    blobs: list[bytes] = []
    lengths: list[NDArray[np.int64]] = []
    owner: list[int] = []          # the file of each document
    for j, (path, _, _) in enumerate(unit):
        for texts, block_lengths, _ in jsonl_data_blocks(data[bounds[j]:bounds[j + 1]].tobytes(), path, text_field,
                                                         errors):
            blobs.append(texts)
            lengths.append(block_lengths)
            owner.extend([j] * len(block_lengths))
    return _joined_documents(blobs, lengths, np.array(owner, dtype=np.int64))


def _joined_documents(blobs: list[bytes], lengths: list[NDArray[np.int64]], owner: NDArray[np.int64] | None
                      ) -> tuple[bytes, NDArray[np.int64], NDArray[np.int64]]:
    """(the blobs joined, the bounds of the documents of the given lengths in them, owner: the file of each
    document, or -1 for each when not known)."""
    n = sum(len(block) for block in lengths)
    doc_bounds = np.zeros(n + 1, dtype=np.int64)
    if n:
        np.cumsum(np.concatenate(lengths), out=doc_bounds[1:])
    return b"".join(blobs), doc_bounds, owner if owner is not None else np.full(n, -1, dtype=np.int64)


def jsonl_units(streams: Sequence[Stream], num_processes: int, batch_bytes: int
                ) -> list[list[tuple[str, int, int]]] | None:
    """The units of a run of uncompressed JSON lines files, when they are big enough for the workers to read
    them themselves (else None: the caller reads the files and hands out batches): byte ranges (path, start,
    end) of whole lines, about batch_bytes each and at least _RANGES_PER_PROCESS a process, each a unit of its
    own; small files whole, in runs of consecutive ones (a folder of 19,763 files of 4.6 KB took 3x one file of
    them all, a unit each)."""
    if num_processes < 2 or not streams or any(s.kind != "jsonl" or not isinstance(s.obj, str) for s in streams):
        return None
    paths = [s.obj for s in streams]
    listed = [s.size for s in streams]
    sizes = listed if None not in listed else file_sizes(paths)     # (one native stat a file, when not listed)
    if any(size is None or path.lower().endswith(COMPRESSIONS) for path, size in zip(paths, sizes)):
        return None                     # compressed, a pipe (or gone: the error comes where it is read in order)
    known = [size for size in sizes if size is not None]
    total = sum(known)
    if total < _IN_PROCESS_BYTES:
        return None
    run_bytes = max(64 << 10, min(1 << 20, total // (num_processes * _RANGES_PER_PROCESS)))
    units: list[list[tuple[str, int, int]]] = []
    run: list[tuple[str, int, int]] = []
    held = 0
    for path, size in zip(paths, known):
        pieces = max(1, size // batch_bytes, (_RANGES_PER_PROCESS * num_processes * size) // max(total, 1))
        if pieces == 1 and size < run_bytes:
            if size:
                run.append((path, 0, size))
                held += size
            if held >= run_bytes:
                units.append(run)
                run, held = [], 0
            continue
        ranges = jsonl_ranges(path, pieces, size)       # (never None: uncompressed regular files, sized)
        assert ranges is not None
        units.extend([(path, a, b)] for a, b in ranges)
    if run:
        units.append(run)
    return units if len(units) >= 2 * num_processes else None


def _first_jsonl_error(streams: Sequence[Stream], text_field: str, errors: str,
                       seen: list[BaseException]) -> BaseException:
    """The error of the first bad line in the files' order, found by reading them in order (the workers report
    the first they meet in time, with lines numbered within their range), or the error a worker met reading a
    file before it that reads cleanly now (an OSError naming it); seen[0] if none. A file is read again only if
    it is still a regular file (a pipe put in its place since it was listed would wait for a writer)."""
    order = {stream.obj: at for at, stream in reversed(list(enumerate(streams)))}
    unread = {order[e.filename]: e for e in reversed(seen)
              if isinstance(e, OSError) and isinstance(e.filename, str) and e.filename in order}
    for at, stream in enumerate(streams):
        try:
            with open_regular(stream.obj):
                pass
            for _ in jsonl_blocks(stream.obj, text_field, errors):
                pass
        except Exception as exc:           # InputError or CorpusDecodeError, naming the line; OSError
            return exc
        if at in unread:                   # read cleanly now, not when a worker read it
            return unread[at]
    return seen[0]


# ---- streams the workers read themselves (Parquet row groups, JSON lines ranges) --------------------

def count_unit_tables(run: Sequence[Stream], units: Sequence[Any], special_tokens: Sequence[str], pattern: str,
                      num_processes: int, errors: str, text_field: str, text_column: str, batch_bytes: int,
                      progress: Progress | None, combine: bool = False) -> tuple[list[Table], Tally]:
    """(tables, what was counted) of a run of streams whose units (parquet_units or jsonl_units) the workers and
    the caller's thread claim one at a time, each reading, decoding and counting its own: no text goes between
    processes but, for Parquet, the batches of the last row groups, which go through TailShare's queue to
    claimants with nothing left. Without caps only (the order of the documents does not matter to the counts).
    combine: the workers' tables added into the thread's, one table (as count_file_tables')."""
    what = run[0].name if len(run) == 1 else f"{run[0].name} and {len(run) - 1} more"
    if run[0].kind == "parquet":
        count_unit: CountUnit = functools.partial(_count_row_group_unit, units, text_column, batch_bytes)
        first_failure: Callable[[list[BaseException]], BaseException]
        first_failure = functools.partial(_first_parquet_error, run, text_column, batch_bytes)
    else:
        count_unit = functools.partial(_count_jsonl_unit, units, text_field, batch_bytes, errors)
        first_failure = functools.partial(_first_jsonl_error, run, text_field, errors)
    own, tables, counted = _count_claimed_units(len(units), count_unit, special_tokens, pattern, errors,
                                                num_processes, progress, None, f"counting {what}", first_failure,
                                                shared_tail=run[0].kind == "parquet")
    return _own_and_theirs(own, tables, combine), counted


# ---- documents read in this process (compressed files, capped reads, small files, iterables) -------

_UNPACKED = object()   # count_stream_tables: a batch not yet packed for the workers' queue

_queue: Any = None     # in a stream worker: the queue of packed batches (BatchRing.pack; inherited)
_ring: BatchRing | None = None   # in a stream worker: the shared buffers the batches' bytes come through


def _init_stream_worker(bytes_done: Any, batches: Any, ring: BatchRing) -> None:
    global _bytes_done, _queue, _ring
    _bytes_done, _queue, _ring = bytes_done, batches, ring


def shared_bytes(n: int) -> Any:
    """n bytes of shared memory as a ctypes array that forked and forkserver workers take (what
    RawArray("B", n) makes), left as the kernel gives them: RawArray's memset made all of a BatchRing resident
    at once (up to 256 MB and 0.1 s for an input of a few bytes); a slot is written before it is read."""
    # (RawArray's own steps without the memset; rebuild_ctype, which the stubs do not list, also registers how
    # the array is pickled for a forkserver's workers)
    return sharedctypes.rebuild_ctype(ctypes.c_ubyte * n, heap.BufferWrapper(n), None)  # type: ignore[attr-defined]


class BatchRing(Slots):
    """Shared buffers (slots, in one shared array) through which the caller hands batches to stream workers and
    to its own counting thread. A reader may write a batch straight into a leased slot (a SlotBatch, see
    inputs.Slots); pack copies any other Batch into a free slot. Either way only (slot, length, bounds, origin)
    goes through the queue; whoever counts the batch reads it in the slot (data) and frees the slot after
    (done). Pickling a batch and sending it through a pipe cost about 3.6 s of CPU a GB between the two
    processes. A batch bigger than a slot, or one for which no slot comes free soon, goes whole, pickled, so
    the ring's size can stay small: at most MAX_SLOTS slots of at most MAX_SLOT_BYTES, MAX_BYTES in all, resident
    only as slots are written (shared_bytes). Made by the caller with the workers' context and given to them
    as they start."""

    MAX_SLOTS = 16
    MAX_SLOT_BYTES = MAX_SLOT_BYTES
    MAX_BYTES = 256 << 20

    def __init__(self, context: Any, slots: int, slot_bytes: int) -> None:
        self.slot_bytes = max(1, min(slot_bytes, self.MAX_SLOT_BYTES))
        self.n_slots = max(1, min(slots, self.MAX_SLOTS, self.MAX_BYTES // self.slot_bytes))
        self.buffer = shared_bytes(self.n_slots * self.slot_bytes)
        self.free = context.Queue(self.n_slots)
        for k in range(self.n_slots):
            self.free.put(k)

    def take(self, timeout: float) -> int | None:
        """A free slot, or None if none comes free within timeout seconds."""
        try:
            return int(self.free.get(timeout=timeout))
        except queue.Empty:
            return None

    def lease(self) -> int | None:
        return self.take(0.05)

    def view(self, slot: int) -> NDArray[np.uint8]:
        """The bytes of a slot (writable; no copy)."""
        start = slot * self.slot_bytes
        return np.frombuffer(self.buffer, dtype=np.uint8)[start:start + self.slot_bytes]

    def release(self, slot: int) -> None:
        self.free.put(slot)

    def pack(self, batch: Batch | SlotBatch, timeout: float = 0.05) -> Batch | SlotBatch:
        """What to send for batch: a SlotBatch as it is; a Batch's bytes copied into a free slot (a SlotBatch),
        or the Batch itself if it does not fit one or no slot comes free within timeout seconds."""
        if isinstance(batch, SlotBatch):
            return batch
        n = len(batch.data)
        if n > self.slot_bytes:
            return batch
        k = self.take(timeout)
        if k is None:
            return batch
        ctypes.memmove(ctypes.addressof(self.buffer) + k * self.slot_bytes, batch.data, n)
        return SlotBatch(k, n, batch.bounds, batch.origin)

    def done(self, item: Batch | SlotBatch) -> None:
        """After counting what data(item) gave (a SlotBatch's stays in its slot until then): its slot is free
        again."""
        if isinstance(item, SlotBatch):
            self.release(item.slot)

    def close(self) -> None:
        """The caller's end, once the workers are done or gone (slot numbers left in the queue must not hold
        up its exit)."""
        self.free.cancel_join_thread()
        self.free.close()


class _LeasedSlots(Slots):
    """inputs.Slots for a reader feeding count_stream_tables: with `wait`, lease() waits for a free slot of the
    ring, checking between tries that the counting still goes on (`check` raises if it does not). Without, it
    gives None when none comes free within 10 ms (after the same check), and the reader makes a batch of its own,
    which goes whole: for a ring with fewer slots than the counters can hold at once (many processes), where
    waiting would leave counters idle. With slots enough, no free slot means every counter is busy, and a batch
    of its own would only take CPU from them."""

    def __init__(self, ring: BatchRing, check: Callable[[], None], wait: bool) -> None:
        self.ring, self.check, self.wait = ring, check, wait
        self.slot_bytes = ring.slot_bytes

    def lease(self) -> int | None:
        while True:
            slot = self.ring.take(0.1 if self.wait else 0.01)
            if slot is not None:
                return slot
            self.check()
            if not self.wait:
                return None

    def view(self, slot: int) -> NDArray[np.uint8]:
        return self.ring.view(slot)

    def release(self, slot: int) -> None:
        self.ring.release(slot)


class _OneSlot(Slots):
    """inputs.Slots of one buffer used again and again, for counting in this thread alone: each batch is
    counted before the reader writes the next (so its pages are faulted in once, not a fresh bytes object a
    batch)."""

    def __init__(self, size: int) -> None:
        self.buffer = np.empty(size, dtype=np.uint8)
        self.slot_bytes = size

    def lease(self) -> int | None:
        return 0

    def view(self, slot: int) -> NDArray[np.uint8]:
        return self.buffer

    def release(self, slot: int) -> None:
        pass


def _count_batch(counter: ChunkCounter, batch: Batch | SlotBatch, bytes_done: Any,
                 data: bytes | NDArray[np.uint8] | None = None) -> None:
    """Count one Batch (inputs.py), whose bytes are `data` if given (a SlotBatch's, in its slot); invalid UTF-8
    is a CorpusDecodeError naming the input and document."""
    if data is None:
        assert isinstance(batch, Batch)
        data = batch.data
    try:
        counter.add_documents(data, batch.bounds)
    except UnicodeDecodeError as exc:
        raise batch_decode_error(batch, exc, data) from None
    if bytes_done is not None:
        bytes_done.add(len(data), len(batch.bounds) - 1)


class _BatchDecodeError(Exception):
    """A counter of count_stream_tables met invalid UTF-8 (`error`, a CorpusDecodeError) in the batch handed out
    `number`th: the number puts the errors of several counters in input order (a batch holds at most one, its
    first)."""

    def __init__(self, number: int, error: CorpusDecodeError) -> None:
        super().__init__(number, error)
        self.number, self.error = number, error


class _StopReading(Exception):
    """count_stream_tables: a counter met invalid UTF-8, so no batch is handed out after those already were."""


def _count_numbered(counter: ChunkCounter, number: int, batch: Batch | SlotBatch, bytes_done: Any,
                    ring: BatchRing) -> None:
    """Count the batch handed out `number`th (its invalid UTF-8: a _BatchDecodeError); its slot is free after."""
    try:
        _count_batch(counter, batch, bytes_done, ring.data(batch))
    except CorpusDecodeError as exc:
        raise _BatchDecodeError(number, exc) from None
    finally:
        ring.done(batch)


def _count_queued(special_tokens: Iterable[str], pattern: str, errors: str, out_path: str) -> str:
    """Stream worker: count the batches of the shared queue, (number, batch) each, until a None, then write the
    table to out_path."""
    counter = _counter_for(special_tokens, pattern, errors)
    while True:
        item = _queue.get()
        if item is None:
            break
        _count_numbered(counter, item[0], item[1], _bytes_done, _ring)  # type: ignore[arg-type]
    return _save_table(counter, out_path)


def count_stream_tables(make_batches: Callable[[Slots], Iterable[Batch | SlotBatch]],
                        special_tokens: Sequence[str], pattern: str, num_processes: int, errors: str,
                        progress: Progress | None, what: str,
                        batch_bytes: int = DEFAULT_CHUNK_BYTES, combine: bool = False) -> list[Table]:
    """The tables (one per worker) of the Batches (of about batch_bytes) that make_batches(slots) yields, read
    here and counted by num_processes - 1 worker processes and a thread of this process (whose counting runs
    without the GIL). Their bytes go through a BatchRing (2 slots a worker and 4 more, of twice batch_bytes; at
    most 16 of at most 64 MB, 256 MB in all), which make_batches may write into directly (with one process:
    one buffer, _OneSlot); a batch that finds no free slot soon goes whole. At most a few batches are in
    flight: memory does not grow with the corpus. `what` names the input in errors. Invalid UTF-8: no batch is
    handed out after a counter meets it, the counters count those they were handed, and the error of the first
    batch in input order is raised (not the first a counter met: a big batch can be met last). combine: the
    workers' tables added into the thread's, one table."""
    context = worker_context()
    bytes_done = Tally(context)
    own = _counter_for(special_tokens, pattern, errors)
    if num_processes == 1:
        one = _OneSlot(slot_bytes_for(batch_bytes))
        for batch in make_batches(one):
            _count_batch(own, batch, bytes_done, one.data(batch))
            if progress is not None:
                progress("count", bytes_done.value, None)
        return [own.arrays(release=True)]
    workers = num_processes - 1
    shared = shared_queue(context, workers + 1)
    local: queue.Queue[tuple[int, Batch | SlotBatch] | None]
    local = queue.Queue(maxsize=1)            # the thread's next batch: handed over without pickling
    stop = threading.Event()
    failure: list[BaseException] = []

    def count_own() -> None:
        try:
            while not stop.is_set():
                try:
                    item = local.get(timeout=0.25)
                except queue.Empty:
                    continue
                if item is None:
                    break
                _count_numbered(own, item[0], item[1], bytes_done, ring)  # type: ignore[arg-type]  # made before
        except BaseException as exc:       # reported by the caller's thread
            failure.append(exc)

    def check(futures: Sequence[Future[str]], pool: Any, reading: bool = True) -> None:
        """Raise a counter's failure, or if a worker died; while reading, _StopReading if a counter met invalid
        UTF-8 (the batches handed out are counted still: an earlier one may hold an earlier error)."""
        seen: list[Any] = failure + [f.exception() for f in futures if f.done() and f.exception() is not None]
        fatal = [e for e in seen if not isinstance(e, _BatchDecodeError)]
        if fatal:
            try:
                raise fatal[0]
            finally:
                seen = fatal = []       # (its traceback holds this frame: no reference cycle left, see below)
                futures = ()
        check_workers_alive(pool)
        if seen and reading:
            raise _StopReading

    def hand_over(number: int, batch: Batch | SlotBatch, futures: Sequence[Future[str]], pool: Any) -> None:
        item: Any = _UNPACKED                    # what goes to the workers' queue, once packed
        while True:
            if item is _UNPACKED:
                try:
                    local.put_nowait((number, batch))
                    return
                except queue.Full:
                    pass
                item = (number, ring.pack(batch))  # type: ignore[union-attr]  # made before
            try:
                shared.put(item, timeout=0.1)
                return
            except queue.Full:
                check(futures, pool)
                if not thread.is_alive():
                    raise RuntimeError("the counting thread stopped") from (failure[0] if failure else None)

    ring: BatchRing | None = None
    reading_error: Exception | None = None
    try:
        wanted = 2 * workers + 4        # what the counters can hold at once, with the reader's and a spare
        ring = BatchRing(context, wanted, slot_bytes_for(batch_bytes))
        with _scratch_dir(0) as scratch, \
                worker_pool(workers, f"counting {what}", _init_stream_worker, (bytes_done, shared, ring),
                            context) as pool:
            futures = [pool.submit(_count_queued, special_tokens, pattern, errors,
                                   os.path.join(scratch, f"table-{i}.npy")) for i in range(workers)]
            thread = threading.Thread(target=count_own, name="bpe_fast-count", daemon=True)
            thread.start()
            try:
                slots = _LeasedSlots(ring, functools.partial(check, futures, pool), wait=ring.n_slots >= wanted)
                sent = 0
                batches = make_batches(slots)
                try:
                    for number, batch in enumerate(batches):
                        hand_over(number, batch, futures, pool)
                        sent += batch.size
                        check(futures, pool)
                        if progress is not None:
                            progress("count", bytes_done.value, None)
                except _StopReading:        # invalid UTF-8: the counters finish what they were handed, then the
                    pass                    # first error in input order is raised (below)
                except Exception as exc:    # noqa: BLE001  (raised below)
                    # the input's error (a later file's missing field, ...): the batches handed out come before
                    # it, so their first invalid UTF-8 is the first error in input order, as one process finds
                    # (a review found the later error raised with two); the counters finish them first
                    reading_error = exc
                finally:
                    getattr(batches, "close", lambda: None)()
                # the end (None) to each worker still counting: one stopped by invalid UTF-8 takes none
                ends = 0
                while ends < workers and not all(f.done() for f in futures):
                    try:
                        shared.put(None, timeout=0.1)
                        ends += 1
                    except queue.Full:
                        check(futures, pool, reading=False)
                while thread.is_alive():
                    try:
                        local.put(None, timeout=0.25)
                        break
                    except queue.Full:
                        check(futures, pool, reading=False)
                pending = set(futures)
                while pending or thread.is_alive():
                    _, pending = wait(pending, timeout=0.25, return_when=FIRST_EXCEPTION)
                    thread.join(0 if pending else 0.25)
                    check(futures, pool, reading=False)
                    if progress is not None and reading_error is None:     # (no report of a failed input)
                        progress("count", bytes_done.value, None)
            finally:
                stop.set()
                thread.join()
            check(futures, pool, reading=False)
            decode = [e for e in failure + [f.exception() for f in futures] if isinstance(e, _BatchDecodeError)]
            if decode:          # the first in input order, not the first a counter met
                raise min(decode, key=lambda e: e.number).error from None
            if reading_error is not None:
                raise reading_error
            if bytes_done.value != sent:       # a batch the queue could not send (its feeder only prints why)
                raise RuntimeError(f"counting {what}: {sent - bytes_done.value:,} of the {sent:,} bytes handed to "
                                   f"the counting processes were not counted")
            tables = []
            for f in futures:
                tables.append(_read_table(f.result()))
                os.unlink(f.result())
            return _own_and_theirs(own, tables, combine)
    except BaseException:
        discard_queue(shared)                  # batches left in it must hold up no thread, nor this process's exit
        raise
    finally:
        shared.close()
        if ring is not None:
            ring.close()
        # an error raised here has a traceback holding this frame (and `own`, the counts so far: a native table
        # of up to hundreds of MB), as count_own's do its frame: held in these names (a worker's, in its future,
        # which `futures`, `pending`, `_` and `slots` hold), the reference cycles kept them until the garbage
        # collector ran
        failure.clear()
        reading_error = None
        decode = []
        futures = []
        pending = _ = set()
        slots = None


def check_input_args(special_tokens: Iterable[str] | None, pattern: str, errors: str) -> tuple[SpecialTokens, str]:
    special_tokens = SpecialTokens.of(special_tokens)
    pattern = resolve_pattern(pattern)
    compiled_pattern(pattern)                      # a bad pattern fails here, not in a worker
    check_errors(errors)
    return special_tokens, pattern


def count_input_tables(inputs: Any, special_tokens: Sequence[str], pattern: str, num_processes: int | None = None,
                       errors: str = "strict", chunk_bytes: int | None = None, progress: Progress | None = None, *,
                       max_bytes: int | None = None, max_documents: int | None = None, text_field: str = "text",
                       text_column: str = "text", stats: dict[str, int] | None = None,
                       combine: bool = False, spill: Spill | None = None) -> list[Table]:
    """The pre-token tables of any input (inputs.py): uncompressed text files by byte ranges read by the
    workers, the rest read here as batches of documents; in input order within the caps. Their sum is the
    corpus's counts. Arguments as check_input_args checks them. stats: a dict, if given, gets the "bytes" and
    "documents" read (within the caps). combine: each input's (or run of inputs') tables are added into one as
    its workers' arrive (for a caller that sums them anyway, or trains on them: cheaper than summing them after,
    and the engine lays out each word once). progress: called as
    progress("count", bytes done, total) over the whole corpus, total None unless every input is a text file.
    spill: the counters of text files counted by byte ranges write their tables as runs when they pass its budget
    (spill.runs); once any has, every table is written as a run too, and the list returned is empty."""
    check_progress(progress)
    for name, value in (("text_field", text_field), ("text_column", text_column)):
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    if stats is not None:
        stats.update(bytes=0, documents=0)
    sources = resolve_inputs(inputs, text_field)
    budget = Budget(max_bytes, max_documents)
    num_processes = check_num_processes(num_processes)
    # the worker processes of streams (the threads of small files and the tables' lookups keep num_processes)
    processes = usable_processes(num_processes)
    batch_bytes = check_chunk_bytes(chunk_bytes, DEFAULT_CHUNK_BYTES)
    space_cuts = cuts_at_spaces(pattern)
    # (the total only a progress report shows: a size looked up a file, 0.2 s for 79,000 files, only for one)
    overall = _OverallProgress(progress, _text_files_total(sources, budget) if progress is not None else None)
    tables = _TableSum(combine, num_processes, spill)
    small: list[tuple[str, int, bool]] = []     # consecutive small text files, counted together
    big: list[tuple[str, int | None]] = []      # consecutive larger text files, counted by one pool of workers

    def count_small() -> None:
        if small:
            tables.extend(count_small_files_tables(small, special_tokens, pattern, num_processes, errors,
                                                   overall.part(), combine))
            overall.counted(sum(size for _, size, _ in small))
            small.clear()

    def count_big() -> None:
        if big:
            tables.extend(count_text_files_tables(big, special_tokens, pattern, num_processes, errors, chunk_bytes,
                                                  overall.part(), combine, spill))
            overall.counted(sum(size or 0 for _, size in big))
            big.clear()

    small_limit = min(_IN_PROCESS_BYTES - 1, batch_bytes)
    k = 0
    while k < len(sources) and not budget.spent:
        source = sources[k]
        if budget.bytes is None and budget.documents is None and _small_listed(source, small_limit):
            count_big()
            start = k         # (no cap to spend: a run of small files in one go, 79,000 files in 15 ms)
            while k < len(sources) and _small_listed(sources[k], small_limit):
                k += 1
            run_files = [(file.path, file.size, True) for file in sources[start:k]
                         if isinstance(file, TextFile) and file.size is not None]       # (all: for mypy)
            small.extend(run_files)
            if stats is not None:
                stats["bytes"] += sum(size for _, size, _ in run_files)
                stats["documents"] += len(run_files)
            continue
        if isinstance(source, TextFile):
            k += 1
            if not budget.take_document():
                break
            size, whole = _capped_size(source, budget)
            if stats is not None:
                stats["bytes"] += size
                stats["documents"] += 1
            if size <= small_limit:     # (what count_file_tables would count whole)
                count_big()
                small.append((source.path, size, whole))
                continue
            count_small()
            big.append((source.path, size))
            continue
        count_small()
        count_big()
        run: list[Any] = []            # consecutive streams share one pool of workers
        while k < len(sources) and isinstance(sources[k], Stream):
            run.append(sources[k])
            k += 1
        uncapped = budget.bytes is None and budget.documents is None
        units = ((parquet_units(run, text_column, processes) or jsonl_units(run, processes, batch_bytes))
                 if uncapped else None)
        if units is not None:           # Parquet row groups, or ranges of JSON lines: the workers read them
            counted, tally = count_unit_tables(run, units, special_tokens, pattern, processes, errors,
                                               text_field, text_column, batch_bytes, overall.part(), combine)
            tables.extend(counted)
            if stats is not None:
                stats["bytes"] += tally.value
                stats["documents"] += tally.documents
            overall.counted(tally.value)
            continue
        read = dict(bytes=0, documents=0)       # this run's

        def make_batches(slots: Slots, run: list[Any] = run, read: dict[str, int] = read
                         ) -> Iterable[Batch | SlotBatch]:
            batches = (batch for stream in run
                       for batch in read_slot_batches(stream, budget, batch_bytes, special_tokens, space_cuts,
                                                      text_field, text_column, slots, errors))
            return _tallied(batches, read)

        what = run[0].name if len(run) == 1 else f"{run[0].name} and {len(run) - 1} more"
        try:
            tables.extend(count_stream_tables(make_batches, special_tokens, pattern, processes, errors,
                                              overall.part(), what, batch_bytes, combine))
        except CorpusDecodeError as exc:
            raise exc.with_line(exc.path) from None     # (a pipe is not read again)
        if stats is not None:
            stats["bytes"] += read["bytes"]
            stats["documents"] += read["documents"]
        overall.counted(read["bytes"])
    count_small()
    count_big()
    return tables.result()


class _TableSum:
    """The tables count_input_tables gathers, in order; with combine, added into one as they come (the caller sums
    them anyway: a corpus of many files listed each common word once a file, and training laid it out so)."""

    def __init__(self, combine: bool, threads: int = 1, spill: Spill | None = None) -> None:
        self.combine = combine
        self.spill = spill                         # once it has runs, result() writes every table as one
        self.threads = threads                     # result()'s lookups: the counting is done by then
        self.tables: list[Table] = []
        self.sum: ChunkCounter | None = None       # with combine, once a second table came

    def extend(self, tables: Iterable[Table]) -> None:
        self.tables.extend(tables)
        if self.combine and len(self.tables) > 1:
            if self.sum is None:
                self.sum = ChunkCounter()         # (its add_arrays adds any pre-tokens, whatever the pattern)
            for table in self.tables[:-1]:        # the last waits: the next is added after it, or result() looks
                self.sum.add_arrays(*table)       # it up as the arrays are made (as _own_and_theirs does)
            del self.tables[:-1]

    def result(self) -> list[Table]:
        if self.spill is not None and self.spill.runs:
            for table in self.tables:
                self.spill.write_table(table)
            if self.sum is not None:
                self.spill.write(self.sum)
            self.tables, self.sum = [], None
            return []
        if self.sum is not None:
            return [self.sum.arrays_with(*self.tables[-1], threads=self.threads)]
        return self.tables or [_empty_table()]


def _small_listed(source: TextFile | Stream, limit: int) -> bool:
    """Whether source is a text file listed with its size, at most limit bytes."""
    return isinstance(source, TextFile) and source.size is not None and source.size <= limit


def _text_files_total(sources: Sequence[TextFile | Stream], budget: Budget) -> int | None:
    """The bytes count_input_tables will count if every source is a text file (their sizes, within the caps:
    the loop's own reckoning, on a copy of the budget), else None (the documents of compressed files, JSON
    lines and Parquet are known only as they are read)."""
    files = [source for source in sources if isinstance(source, TextFile)]
    if len(files) < len(sources):
        return None
    trial = copy.copy(budget)
    total = 0
    for file in files:
        if trial.spent or not trial.take_document():
            break
        total += _capped_size(file, trial)[0]
    return total


class _OverallProgress:
    """progress over a corpus of several inputs: each input reports its own bytes done (against its own size, a
    text file), so the reports of one input after another went back to 0 and changed total, and a progress line
    showed the first input's 100% as the end. Here an input's reports are moved on by the bytes counted before it,
    against the corpus's total (None when it is not known before reading: see _text_files_total)."""

    def __init__(self, progress: Progress | None, total: int | None) -> None:
        self.progress, self.total, self.before = progress, total, 0

    def part(self) -> Progress | None:
        """The progress function for the next input (its bytes done), or None."""
        if self.progress is None:
            return None
        report, before, total = self.progress, self.before, self.total
        return lambda stage, done, _: report(stage, before + done, total)

    def counted(self, n_bytes: int) -> None:
        """An input is done: n_bytes counted."""
        self.before += n_bytes


def _tallied(batches: Iterable[Batch | SlotBatch], stats: dict[str, int]) -> Iterator[Batch | SlotBatch]:
    """The batches, adding their bytes and documents to stats (a piece of a text file is a document when it is
    the file's first: its origin's base offset is 0; other batches hold len(bounds) - 1 whole documents)."""
    for batch in batches:
        stats["bytes"] += batch.size
        base_offset = batch.origin[3]
        stats["documents"] += (base_offset == 0) if base_offset is not None else len(batch.bounds) - 1
        yield batch


def _capped_size(source: TextFile, budget: Budget) -> tuple[int, bool]:
    """(the bytes of a text file the budget takes, cut back to a character boundary, spent from it; whether that
    is the whole file)."""
    path = source.path
    size = source.size if source.size is not None else os.path.getsize(path)
    if budget.bytes is None:
        return size, True
    if size <= budget.bytes:
        budget.bytes -= size
        return size, True
    with open_regular(path) as f:
        f.seek(max(0, budget.bytes - 3))
        near = f.read(4)
    size = max(0, budget.bytes - 3) + utf8_boundary(near, min(3, budget.bytes))
    budget.bytes = 0
    return size, False


def _empty_table() -> Table:
    return np.zeros(0, dtype=np.uint8), np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64)
