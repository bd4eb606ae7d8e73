"""Counting pre-tokens on a Dask cluster: what `count_pretokens(..., client=...)` runs.

The caller's process cuts each file into byte ranges at safe points (chunking.py reads only small windows
around the cuts) and groups consecutive ranges into tasks of at most _MAX_TASK_BYTES, at least
_TASKS_PER_THREAD per worker thread. A task carries paths and offsets only: the worker reads its own ranges
from a path every worker must see, counts them into one native table and keeps its arrays (a byte pool,
offsets, counts). The tables are added natively on the workers by a tree of tasks, _FAN_IN at a time, and only the final table comes back. No text and no partial table
travels through the scheduler or the client.

Failures:
  * invalid UTF-8 (errors="strict"): CorpusDecodeError naming the caller's path, the byte offset and the line,
    without waiting for the other tasks (after the RETRIES reruns Dask gives any task that raises). With
    several bad spots, the one found first is reported, not necessarily the first in the files.
  * a worker dies: the scheduler reruns its tasks on the other workers and recomputes the tables it held (a
    task's result depends only on the file, so this is safe). After a task has been on
    `distributed.scheduler.allowed-failures` + 1 workers that died, the count stops with a RuntimeError.
  * a task raises (say a transient I/O error on a network file system): it is rerun up to RETRIES times.
  * no workers at all: Dask waits for some to join (adaptive clusters scale up from zero); set
    `distributed.scheduler.no-workers-timeout` to fail with a RuntimeError instead.
A partial count is never returned.

Dask is imported inside the functions: `import bpe_fast` never needs it.
"""
from __future__ import annotations

import os
import uuid
from collections.abc import Iterable, Sequence
from concurrent.futures import CancelledError
from typing import Any

from .chunking import chunk_boundaries
import numpy as np

from ._scan import merge_arrays
from ._types import Table
from .count_workers import count_ranges
from .inputs import CorpusDecodeError, check_errors
from .pretokenize import compiled_pattern
from .procs import check_chunk_bytes

_MAX_TASK_BYTES = 64 << 20      # about a second of one worker thread with the native scanner
_TASKS_PER_THREAD = 2           # at least: balances uneven workers and spreads the loss of one
_FAN_IN = 4                     # partial tables added by one task of the reduction tree
RETRIES = 2                    # reruns of a task that raised
# an error further into a file is reported without its line number: the caller, which has not read the file (the
# workers did), reads at most this much of it to find the line
_LINE_SCAN_LIMIT = 256 << 20
# a task's pieces: (path, size, byte ranges) of consecutive ranges of a file
_Pieces = list[tuple[str, int, list[tuple[int, int]]]]


def count_on_dask(client: Any, paths: Iterable[str], special_tokens: Sequence[str], pattern: str, errors: str,
                  chunk_bytes: int | None) -> Table:
    """The pre-token counts of the files, as arrays (tokens, offsets, counts), counted on the cluster of
    `client`.

    paths: checked paths (str) every worker can read at the same absolute path. special_tokens: checked
    (a bpe_fast.specials.SpecialTokens); pattern: the regex text; errors: "strict" or "replace"; chunk_bytes: None or the most bytes a
    worker reads at once (None: a whole task's bytes). The result equals the local count_pretokens'.
    """
    check_client(client, "count_pretokens")
    errors = check_errors(errors)
    compiled_pattern(pattern)                   # a bad pattern fails here, not on every worker
    if chunk_bytes is not None:                 # checked as without a client (int() took 1.5, '100' and True)
        chunk_bytes = check_chunk_bytes(chunk_bytes, 0)

    given = {os.path.abspath(p): p for p in paths}     # workers need absolute paths; errors name the caller's
    files = [(os.path.abspath(p), os.path.getsize(p)) for p in paths]
    total = sum(size for _, size in files)
    if total == 0:
        return np.zeros(0, np.uint8), np.zeros(1, np.int64), np.zeros(0, np.int64)
    nthreads = max(1, sum(client.nthreads().values()))
    task_bytes = _task_bytes(total, nthreads)
    range_bytes = task_bytes if chunk_bytes is None else min(chunk_bytes, task_bytes)
    tasks = _plan(files, special_tokens, pattern, range_bytes, task_bytes)

    final = _submit(client, tasks, special_tokens, pattern, errors)
    try:
        return final.result()
    except CorpusDecodeError as exc:
        raise exc.with_line(exc.path, name=given.get(exc.path, exc.path), scan_limit=_LINE_SCAN_LIMIT) from None
    except Exception as exc:
        message = cluster_failure(exc)
        if message is None:
            raise
        raise RuntimeError(f"counting on the Dask cluster failed, no counts returned: {message}") from exc
    finally:
        final.cancel()                          # stops the other tasks after an error; frees the result


def _task_bytes(total: int, nthreads: int) -> int:
    """Bytes per task: at most _MAX_TASK_BYTES, and few enough that every worker thread gets some."""
    ntasks = max(-(-total // _MAX_TASK_BYTES), _TASKS_PER_THREAD * nthreads)
    return max(1, -(-total // ntasks))


def _plan(files: Iterable[tuple[str, int]], special_tokens: Sequence[str], pattern: str, range_bytes: int,
          task_bytes: int) -> list[_Pieces]:
    """The tasks: lists of (path, size, ranges) pieces, about task_bytes each, in file order.

    Every range goes to the task its middle byte falls in, counting the files as one stream of bytes, so
    tasks come out even whatever the ranges' sizes; consecutive ranges of a file in a task form one piece.
    """
    tasks: dict[int, _Pieces] = {}
    base = 0
    for path, size in files:
        bounds = chunk_boundaries(path, special_tokens, pattern, range_bytes, min_chunks=1)
        for start, end in zip(bounds[:-1], bounds[1:]):
            if start == end:
                continue
            pieces = tasks.setdefault((base + (start + end) // 2) // task_bytes, [])
            if pieces and pieces[-1][0] == path and pieces[-1][2][-1][1] == start:
                pieces[-1][2].append((start, end))
            else:
                pieces.append((path, size, [(start, end)]))
        base += size
    return [tasks[i] for i in sorted(tasks)]


def _submit(client: Any, tasks: Sequence[_Pieces], special_tokens: Sequence[str], pattern: str, errors: str) -> Any:
    """Submit the counting tasks and the reduction tree; returns the future of the final table.

    Only the final future is kept: Dask frees each partial table once the task adding it is done. The adding
    tasks have higher priority than counting ones, so tables are added as soon as they are ready instead of
    piling up until every range is counted."""
    token = uuid.uuid4().hex
    level = [client.submit(_count_pieces, pieces, special_tokens, pattern, errors,
                           key=f"bpe_fast-count-{token}-{i}", retries=RETRIES)
             for i, pieces in enumerate(tasks)]
    depth = 0
    while len(level) > 1:
        depth += 1
        level = [group[0] if len(group) == 1 else
                 client.submit(_add, *group, key=f"bpe_fast-add-{token}-{depth}-{j}", retries=RETRIES,
                               priority=depth)
                 for j, group in enumerate(level[i:i + _FAN_IN] for i in range(0, len(level), _FAN_IN))]
    return level[0]


def check_client(client: Any, caller: str) -> None:
    """TypeError unless `client` is a synchronous dask.distributed.Client; ValueError when it is not running (a
    closed client failed inside Dask: "'NoneType' object has no attribute 'ncores'")."""
    from distributed import Client

    if not isinstance(client, Client):
        raise TypeError(f"client must be a dask.distributed.Client, got {type(client).__name__}")
    if client.asynchronous:
        raise TypeError(f"{caller} needs a synchronous dask.distributed.Client")
    if client.status != "running":
        raise ValueError(f"client is not running (its status is {client.status!r}): {caller} needs a connected "
                         f"dask.distributed.Client")


def cluster_failure(exc: BaseException, doing: str = "counting") -> str | None:
    """A message if exc says the cluster could not finish (workers died, none left, lost connection)."""
    from distributed import scheduler
    from distributed.comm.core import CommClosedError

    no_worker = tuple(getattr(scheduler, name) for name in ("NoWorkerError", "NoValidWorkerError")
                      if hasattr(scheduler, name))     # no-workers-timeout errors (distributed >= 2024.1)
    if isinstance(exc, scheduler.KilledWorker):
        return f"workers died while {doing} ({exc})"
    if isinstance(exc, no_worker):
        return f"no worker could run a task ({exc})"
    if isinstance(exc, CancelledError):
        return f"the tasks were cancelled: the client or the scheduler went away? ({exc})"
    if isinstance(exc, CommClosedError):
        return f"lost the connection to the scheduler ({exc})"
    return None


# ---- on the workers -----------------------------------------------------------------------------------

def _count_pieces(pieces: _Pieces, special_tokens: Sequence[str], pattern: str, errors: str) -> Table:
    """Task: count the pre-tokens of some byte ranges of some files."""
    tables: list[Table] = []
    for path, size, ranges in pieces:
        _check_same_file(path, size)
        tables.append(count_ranges([(path, a, b) for a, b in ranges], special_tokens, pattern, errors))
    return merge_arrays(tables) if len(tables) > 1 else tables[0]


def _check_same_file(path: str, size: int) -> None:
    try:
        found = os.path.getsize(path)
    except FileNotFoundError:
        raise FileNotFoundError(2, f"corpus file not found on Dask worker {worker_address()} "
                                   "(every worker must see the files at the same path)", path) from None
    if found != size:
        raise RuntimeError(f"{path} is {found} bytes on Dask worker {worker_address()} but {size} bytes "
                           "where count_pretokens was called: every worker must see the same files")


def worker_address() -> str:
    from distributed import get_worker

    try:
        return get_worker().address
    except ValueError:
        return "(not a worker)"


def _add(*tables: Table) -> Table:
    """Task: the sum of some partial tables (arrays), added natively into a new table: the inputs are left
    as they are (Dask may reuse them if this task is rerun)."""
    return merge_arrays(tables)
