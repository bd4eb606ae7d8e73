"""Counting the pre-tokens of corpus files, over several processes.

The parent cuts each file into byte ranges at safe points (see chunking.py); each worker reads its own
ranges from the file (no text is sent between processes), counts them and returns one table of distinct
pre-tokens. The tables are added in the parent.
"""
import json
import os
from collections import Counter
from concurrent.futures import FIRST_EXCEPTION, wait

import numpy as np

from .atomic import atomic_output
from .chunking import chunk_boundaries
from .patterns import GPT2_PATTERN, resolve_pattern
from .pretokenize import ChunkCounter, compiled_pattern
from .procs import WorkerDiedError, check_chunk_bytes, check_num_processes, shared_counter, worker_pool  # noqa: F401 (re-exported)
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


def check_errors(errors):
    if errors not in ("strict", "replace"):
        raise ValueError(f"errors must be 'strict' or 'replace', got {errors!r}")
    return errors


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
    """Worker: count the pre-tokens of some byte ranges of one file (one native table for all of them)."""
    counter = ChunkCounter(special_regex(special_tokens), pattern, errors)
    with open(path, "rb") as f:
        for start, end in ranges:
            f.seek(start)
            data = f.read(end - start)
            try:
                counter.add(data)
            except UnicodeDecodeError as exc:
                raise CorpusDecodeError(path, start + exc.start, exc.reason) from None
            del data
            if _bytes_done is not None:
                with _bytes_done.get_lock():
                    _bytes_done.value += end - start
    return Counter(counter.to_dict())


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
    chunk_bytes = check_chunk_bytes(chunk_bytes, DEFAULT_CHUNK_BYTES)

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
    bytes_done = shared_counter()
    with worker_pool(min(workers, ntasks), f"counting {path}", _init_worker, (bytes_done,)) as pool:
        futures = [pool.submit(_count_ranges, path, g, special_tokens, pattern, errors) for g in groups]
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
    return total


# ---- reusable counts -----------------------------------------------------------------------------

COUNTS_FORMAT = "bpe_fast.pretoken_counts"
COUNTS_VERSION = 1


class PretokenCounts:
    """The distinct pre-tokens of a corpus with their counts, and the pattern and special tokens that
    made them. Add shards with `+` or `PretokenCounts.merge`; save and load as `.npz` (no pickle).

    File format (version 1), a NumPy .npz with:
      format: str "bpe_fast.pretoken_counts";  version: int64 1
      tokens: uint8, the pre-tokens' UTF-8 bytes concatenated;  offsets: int64, len(counts) + 1 boundaries
      counts: int64;  pattern: str, the regex;  special_tokens: str, a JSON list of str
    """

    __slots__ = ("_counts", "pattern", "special_tokens")

    def __init__(self, counts=None, pattern=GPT2_PATTERN, special_tokens=()):
        self._counts = Counter() if counts is None else Counter(counts)
        self.pattern = resolve_pattern(pattern)
        self.special_tokens = check_special_tokens(special_tokens)
        for tok, n in self._counts.items():
            if not isinstance(tok, bytes):
                raise TypeError(f"pre-tokens must be bytes, got {tok!r}")
            if not isinstance(n, int) or n < 0:
                raise ValueError(f"count of {tok!r} must be a non-negative int, got {n!r}")

    # -- container protocol
    def __len__(self):
        return len(self._counts)

    def __iter__(self):
        return iter(self._counts)

    def __getitem__(self, token):
        return self._counts[token]

    def __contains__(self, token):
        return token in self._counts

    def keys(self):
        return self._counts.keys()

    def values(self):
        return self._counts.values()

    def items(self):
        return self._counts.items()

    def __eq__(self, other):
        if not isinstance(other, PretokenCounts):
            return NotImplemented
        return (self.pattern, set(self.special_tokens), self._counts) == \
            (other.pattern, set(other.special_tokens), other._counts)

    def __repr__(self):
        return f"PretokenCounts({len(self)} distinct, {self.total()} in all)"

    def total(self):
        """The number of pre-tokens counted."""
        return sum(self._counts.values())

    def most_common(self, n=None):
        """The n most common (bytes, count) pairs, all of them when n is None (like Counter)."""
        return self._counts.most_common(n)

    # -- adding shards
    def _check_compatible(self, other):
        if not isinstance(other, PretokenCounts):
            raise TypeError(f"can only add PretokenCounts, not {type(other).__name__}")
        if other.pattern != self.pattern:
            raise ValueError("cannot add counts made with different patterns: "
                             f"{self.pattern!r} and {other.pattern!r}")
        if set(other.special_tokens) != set(self.special_tokens):
            raise ValueError("cannot add counts made with different special tokens: "
                             f"{list(self.special_tokens)} and {list(other.special_tokens)}")

    def __add__(self, other):
        self._check_compatible(other)
        out = PretokenCounts(self._counts, self.pattern, self.special_tokens)
        out._counts.update(other._counts)
        return out

    @classmethod
    def merge(cls, shards):
        """The sum of several PretokenCounts made with the same pattern and special tokens."""
        shards = list(shards)
        if not shards:
            raise ValueError("merge needs at least one PretokenCounts")
        first = shards[0]
        out = cls(first._counts, first.pattern, first.special_tokens)
        for shard in shards[1:]:
            out._check_compatible(shard)
            out._counts.update(shard._counts)
        return out

    # -- files
    def save(self, path):
        """Write the counts to `path` (.npz), through a temporary file: nothing half-written is left."""
        keys = list(self._counts.keys())
        lengths = np.fromiter(map(len, keys), dtype=np.int64, count=len(keys))
        offsets = np.zeros(len(keys) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        arrays = dict(
            format=np.array(COUNTS_FORMAT), version=np.array(COUNTS_VERSION, dtype=np.int64),
            tokens=np.frombuffer(b"".join(keys), dtype=np.uint8), offsets=offsets,
            counts=np.fromiter(self._counts.values(), dtype=np.int64, count=len(keys)),
            pattern=np.array(self.pattern), special_tokens=np.array(json.dumps(list(self.special_tokens))),
        )
        path = os.fspath(path)
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise FileNotFoundError(2, "output folder does not exist", folder)
        with atomic_output(path) as f:
            np.savez(f, **arrays)

    @classmethod
    def load(cls, path):
        """Read counts written by save(); a truncated or foreign file is a ValueError naming it."""
        path = os.fspath(path)
        try:
            with np.load(path, allow_pickle=False) as data:
                arrays = {name: data[name] for name in data.files}
        except FileNotFoundError:
            raise
        except Exception as exc:     # zipfile.BadZipFile, EOFError, ValueError, OSError ...
            raise ValueError(f"{path}: not a bpe_fast counts file ({type(exc).__name__}: {exc})") from None
        def need(name, kind):
            if name not in arrays or arrays[name].dtype.kind != kind:
                raise ValueError(f"{path}: not a bpe_fast counts file (missing or bad {name!r})")
            return arrays[name]
        if str(need("format", "U")) != COUNTS_FORMAT:
            raise ValueError(f"{path}: not a bpe_fast counts file (format {str(arrays['format'])!r})")
        version = int(need("version", "i"))
        if version != COUNTS_VERSION:
            raise ValueError(f"{path}: counts file version {version} is not supported (this is {COUNTS_VERSION})")
        tokens, offsets, counts = need("tokens", "u"), need("offsets", "i"), need("counts", "i")
        n = len(counts)
        if tokens.dtype != np.uint8 or offsets.shape != (n + 1,) or offsets[0] != 0 or \
                offsets[-1] != len(tokens) or np.any(np.diff(offsets) < 0) or np.any(counts < 0):
            raise ValueError(f"{path}: corrupt counts file (tokens, offsets and counts disagree)")
        try:
            specials = json.loads(str(need("special_tokens", "U")))
            pattern = str(need("pattern", "U"))
            blob = tokens.tobytes()
            bounds = offsets.tolist()
            table = dict(zip((blob[bounds[i]:bounds[i + 1]] for i in range(n)), counts.tolist()))
            if len(table) != n:
                raise ValueError("a pre-token is listed twice")
            return cls(table, pattern, specials)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{path}: corrupt counts file ({exc})") from None


def count_pretokens(paths, special_tokens=(), *, pattern=GPT2_PATTERN, num_processes=None, errors="strict",
                    chunk_bytes=None, progress=None, client=None):
    """Count the pre-tokens of one or more UTF-8 files; returns PretokenCounts.

    With `client` (a dask.distributed.Client) the counting runs on that Dask cluster instead of local
    processes; every worker must see the same paths.
    """
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    paths = [check_input_file(p) for p in paths]
    special_tokens = check_special_tokens(special_tokens)
    pattern = resolve_pattern(pattern)
    if client is not None:
        from .dask_counts import count_on_dask
        counts = count_on_dask(client, paths, special_tokens, pattern, errors, chunk_bytes)
    else:
        counts = Counter()
        for path in paths:
            counts.update(count_file(path, special_tokens, pattern, num_processes, errors, chunk_bytes, progress))
    return PretokenCounts(counts, pattern, special_tokens)
