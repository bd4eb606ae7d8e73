"""PretokenCounts, the reusable counts of a corpus, and count_pretokens, which makes them.

The counting itself (local processes) is count_workers.py's, on a Dask cluster dask_counts.py's; both give
tables of arrays (a byte pool, offsets, counts), which PretokenCounts holds as they are.
"""
from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._scan import first_repeat, merge_arrays
from ._types import Progress, StrPath, Table
from .atomic import atomic_output
from .count_workers import check_count_args, check_input_args, count_file_tables, count_input_tables
from .inputs import InputError, Stream, TextFile, resolve_inputs
from .patterns import GPT2_PATTERN, compile_pattern, resolve_pattern
from .procs import check_progress
from .specials import SpecialTokens


def count_file(path: StrPath, special_tokens: Iterable[str] | None = (), pattern: str | None = GPT2_PATTERN,
               num_processes: int | None = None, errors: str = "strict", chunk_bytes: int | None = None,
               progress: Progress | None = None) -> PretokenCounts:
    """The pre-token counts of one UTF-8 file as PretokenCounts, the same whatever num_processes and
    chunk_bytes. Special tokens split the text and are never counted.

    progress, if given, is called as progress("count", bytes_done, bytes_total) now and then. pattern None:
    GPT-2's."""
    path, special_tokens, pattern = check_count_args(path, special_tokens, GPT2_PATTERN if pattern is None else pattern,
                                                     errors)
    table, = count_file_tables(path, special_tokens, pattern, num_processes, errors, chunk_bytes, progress,
                               combine=True)
    return PretokenCounts.from_arrays(*table, pattern=pattern, special_tokens=special_tokens, check=False)



# ---- reusable counts -----------------------------------------------------------------------------

COUNTS_FORMAT = "bpe_fast.pretoken_counts"
COUNTS_VERSION = 1


class PretokenCounts:
    """The distinct pre-tokens of a corpus with their counts, and the pattern and special tokens that
    made them, held as three arrays: `tokens` (uint8, the pre-tokens' bytes end to end), `offsets` (int64,
    pre-token k is tokens[offsets[k]:offsets[k + 1]]) and `counts` (int64). Training reads the arrays as
    they are. Add shards with `+` or `PretokenCounts.merge` (natively); shards made with the same special tokens
    in other orders add up (and compare equal): the sum has them sorted, since their order gives them their ids
    in training (train_from_counts' special_tokens chooses it). Save and load as `.npz` (no pickle).
    Reading it as a mapping ({bytes: count}: `[]`, `in`, `items()`) makes a dict once, on first use.

    File format (version 1), a NumPy .npz with:
      format: str "bpe_fast.pretoken_counts";  version: int64 1
      tokens: uint8, the pre-tokens' UTF-8 bytes concatenated;  offsets: int64, len(counts) + 1 boundaries
      counts: int64;  pattern: str, the regex;  special_tokens: str, a JSON list of str
    """

    __slots__ = ("tokens", "offsets", "counts", "pattern", "special_tokens", "_dict")
    tokens: NDArray[np.uint8]
    offsets: NDArray[np.int64]
    counts: NDArray[np.int64]
    pattern: str
    special_tokens: tuple[str, ...]
    _dict: dict[bytes, int] | None

    def __init__(self, counts: Mapping[bytes, int] | Iterable[bytes] | None = None, pattern: str | None = None,
                 special_tokens: Iterable[str] | None = None) -> None:
        """From a mapping {bytes: int} (PretokenCounts too), an iterable of bytes (counted, as Counter does) or
        nothing (empty). pattern and special_tokens: what made the counts; None: a PretokenCounts' own, else
        GPT-2's pattern and no special token."""
        if isinstance(counts, PretokenCounts):      # its arrays, not an iterable of its pre-tokens (each counted once)
            # (copies, as Counter(other) is one: the arrays are writable, and a change to one was a change to both)
            self._set(counts.tokens.copy(), counts.offsets.copy(), counts.counts.copy(),
                      counts.pattern if pattern is None else pattern,
                      counts.special_tokens if special_tokens is None else special_tokens)
            return
        counts = {} if counts is None else counts if isinstance(counts, Mapping) else Counter(counts)
        self._set(*mapping_arrays(counts), GPT2_PATTERN if pattern is None else pattern, special_tokens)

    def _set(self, tokens: NDArray[np.uint8], offsets: NDArray[np.int64], counts: NDArray[np.int64], pattern: str,
             special_tokens: Iterable[str] | None) -> None:
        self.tokens, self.offsets, self.counts = tokens, offsets, counts
        self.pattern = resolve_pattern(pattern)
        compile_pattern(self.pattern)       # ValueError now for a regex that does not compile, not after training
        self.special_tokens = SpecialTokens.of(special_tokens).tokens
        self._dict = None

    @classmethod
    def from_arrays(cls, tokens: ArrayLike, offsets: ArrayLike, counts: ArrayLike, pattern: str = GPT2_PATTERN,
                    special_tokens: Iterable[str] | None = (), *, check: bool = True) -> PretokenCounts:
        """From the three arrays (not copied when they have the right dtypes). check=True verifies that
        they agree, that no pre-token is listed twice and that the cast to these dtypes changed no value: a
        byte above 255, a fractional count or offset (ValueError otherwise)."""
        if check:
            tokens, offsets, counts = (_cast_exactly(array, dtype, name) for array, dtype, name in
                                       ((tokens, np.uint8, "tokens"), (offsets, np.int64, "offsets"),
                                        (counts, np.int64, "counts")))
            _check_arrays(tokens, offsets, counts)
        else:
            tokens = np.ascontiguousarray(tokens, dtype=np.uint8)
            offsets = np.ascontiguousarray(offsets, dtype=np.int64)
            counts = np.ascontiguousarray(counts, dtype=np.int64)
        out = cls.__new__(cls)
        out._set(tokens, offsets, counts, pattern, special_tokens)
        return out

    # -- container protocol (a dict made on first use)
    def _as_dict(self) -> dict[bytes, int]:
        if self._dict is None:
            blob, bounds = self.tokens.tobytes(), self.offsets.tolist()
            self._dict = dict(zip((blob[bounds[k]:bounds[k + 1]] for k in range(len(self.counts))),
                                  self.counts.tolist()))
        return self._dict

    def __len__(self) -> int:
        return len(self.counts)

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._as_dict())

    def __getitem__(self, token: bytes) -> int:
        return self._as_dict().get(token, 0)

    def __contains__(self, token: object) -> bool:
        return token in self._as_dict()

    def get(self, token: bytes, default: Any = None) -> Any:
        return self._as_dict().get(token, default)

    def keys(self) -> KeysView[bytes]:
        return self._as_dict().keys()

    def values(self) -> ValuesView[int]:
        return self._as_dict().values()

    def items(self) -> ItemsView[bytes, int]:
        return self._as_dict().items()

    def __eq__(self, other: object) -> bool:
        """Equal to PretokenCounts with the same pattern, special tokens and counts; to a mapping with the
        same counts. As for Counter, a count of 0 is the same as no entry."""
        if isinstance(other, PretokenCounts):
            if (self.pattern, set(self.special_tokens)) != (other.pattern, set(other.special_tokens)):
                return False
            return _nonzero(self._as_dict()) == _nonzero(other._as_dict())
        if isinstance(other, Mapping):
            return _nonzero(self._as_dict()) == _nonzero(other)
        return NotImplemented

    __hash__ = None     # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its arrays, pattern and special tokens: in every protocol (0 and 1 refused a class with
        __slots__), without the dict a mapping read made (a second copy of the counts)."""
        return _unpickle, (self.tokens, self.offsets, self.counts, self.pattern, self.special_tokens)

    def __repr__(self) -> str:
        return f"PretokenCounts({len(self)} distinct, {self.total()} in all)"

    def total(self) -> int:
        """The number of pre-tokens counted (exact: the counts' int64 sum could wrap past 2**63)."""
        return exact_total(self.counts)

    def most_common(self, n: int | None = None) -> list[tuple[bytes, int]]:
        """The n most common (bytes, count) pairs, all of them when n is None (like Counter; ties in the
        arrays' order)."""
        order = np.argsort(-self.counts, kind="stable")
        if n is not None:
            order = order[:max(0, n)]
        blob, offsets, counts = self.tokens, self.offsets, self.counts
        return [(blob[offsets[k]:offsets[k + 1]].tobytes(), int(counts[k])) for k in order.tolist()]

    # -- adding shards
    def check_compatible(self, other: object) -> None:
        """Raise TypeError/ValueError unless `other` is PretokenCounts made with the same pattern and special
        tokens (so the two can be added)."""
        if not isinstance(other, PretokenCounts):
            raise TypeError(f"can only add PretokenCounts, not {type(other).__name__}")
        if other.pattern != self.pattern:
            raise ValueError("cannot add counts made with different patterns: "
                             f"{self.pattern!r} and {other.pattern!r}")
        if set(other.special_tokens) != set(self.special_tokens):
            raise ValueError("cannot add counts made with different special tokens: "
                             f"{list(self.special_tokens)} and {list(other.special_tokens)}")

    def _arrays(self) -> Table:
        return self.tokens, self.offsets, self.counts

    def __add__(self, other: PretokenCounts) -> PretokenCounts:
        """The sum of two shards made with the same pattern and special tokens. Counts of nothing (`len` 0, such as
        `PretokenCounts()`) add to any shard as nothing, whatever made them: `sum(shards, PretokenCounts())`."""
        if isinstance(other, PretokenCounts) and (not len(other) or not len(self)):
            return PretokenCounts(other if not len(self) else self)       # (a copy, as a sum is a new one)
        self.check_compatible(other)
        return PretokenCounts.from_arrays(*_add_tables([self._arrays(), other._arrays()]),
                                          pattern=self.pattern, special_tokens=_shared_order([self, other]),
                                          check=False)

    def __radd__(self, other: object) -> PretokenCounts:
        """0 + counts is counts (a copy): `sum(shards)` with sum's own start."""
        if isinstance(other, int) and not isinstance(other, bool) and other == 0:
            return PretokenCounts(self)
        return NotImplemented

    @classmethod
    def merge(cls, shards: Iterable[PretokenCounts]) -> PretokenCounts:
        """The sum of several PretokenCounts made with the same pattern and special tokens (in any order: the
        sum's are then sorted, as for `+`)."""
        shards = list(shards)
        if not shards:
            raise ValueError("merge needs at least one PretokenCounts")
        first = shards[0]
        if not isinstance(first, PretokenCounts):
            raise TypeError(f"can only merge PretokenCounts, not {type(first).__name__}")
        for shard in shards[1:]:
            first.check_compatible(shard)
        return cls.from_arrays(*_add_tables([s._arrays() for s in shards]), pattern=first.pattern,
                               special_tokens=_shared_order(shards), check=False)

    # -- files
    def save(self, path: StrPath) -> None:
        """Write the counts to `path` (.npz), through a temporary file: nothing half-written is left."""
        arrays: dict[str, Any] = dict(
            format=np.array(COUNTS_FORMAT), version=np.array(COUNTS_VERSION, dtype=np.int64),
            tokens=self.tokens, offsets=self.offsets, counts=self.counts,
            pattern=np.array(self.pattern), special_tokens=np.array(json.dumps(list(self.special_tokens))),
            # the pattern's exact bytes too: NumPy's str arrays drop trailing NULs ('a|\x00' came back 'a|')
            pattern_utf8=np.frombuffer(self.pattern.encode("utf-8", "surrogatepass"), dtype=np.uint8),
        )
        path = os.fspath(path)
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise FileNotFoundError(2, "output folder does not exist", folder)
        with atomic_output(path) as f:
            np.savez(f, **arrays)

    @classmethod
    def load(cls, path: StrPath) -> PretokenCounts:
        """Read counts written by save(); a truncated or foreign file is a ValueError naming it (and what it is,
        or what it lacks), a file that cannot be opened the OSError of open()."""
        path = os.fspath(path)
        with open(path, "rb") as f:             # np.load reads a .npy (an array, no `with`) or a text file too
            head = f.read(6)
        if not head.startswith(b"PK"):
            raise _not_counts(path, "a .npy array" if head.startswith(b"\x93NUMPY") else "empty" if not head
                              else "not a .npz archive")
        # (a file object, closed here: np.load of a path left the file it opened open when the archive was damaged,
        # until the garbage collector found it, a descriptor for each error kept)
        f = open(path, "rb")
        try:
            try:
                archive = np.load(f, allow_pickle=False)
            except Exception:       # zipfile.BadZipFile, EOFError, OSError ...: its directory cannot be read
                raise _not_counts(path, "a damaged or truncated .npz archive") from None
        except BaseException:
            f.close()
            raise
        with f, archive:
            if "format" not in archive.files:      # another program's archive: nothing of it is loaded
                names = ", ".join(map(repr, archive.files[:5])) + (f" and {len(archive.files) - 5} more"
                                                                    if len(archive.files) > 5 else "")
                raise _not_counts(path, f"an .npz archive of {names}, without the 'format' entry" if names
                                  else "an empty .npz archive")
            arrays = {"format": _npz_entry(archive, "format", path)}
            if arrays["format"].dtype.kind == "U" and arrays["format"].reshape(-1)[:2].tolist() == [COUNTS_FORMAT]:
                arrays.update((name, _npz_entry(archive, name, path)) for name in archive.files)
            # (else the format's check below says what it is, without reading the others)

        def need(name: str, kind: str) -> NDArray[Any]:
            if name not in arrays or arrays[name].dtype.kind != kind:
                raise ValueError(f"{path}: not a bpe_fast counts file (missing or bad {name!r})")
            return arrays[name]

        def one(name: str, kind: str) -> Any:
            """The value of an entry that save writes as one value (a 0-d array; one element is taken too); a
            larger array is refused (its str() would be taken for a pattern, its int() a TypeError)."""
            array = need(name, kind)
            if array.shape not in ((), (1,)):
                raise ValueError(f"{path}: not a bpe_fast counts file ({name!r} is an array of shape {array.shape}, "
                                 "not one value)")
            return array.reshape(()).item()
        if one("format", "U") != COUNTS_FORMAT:
            raise ValueError(f"{path}: not a bpe_fast counts file (format {one('format', 'U')!r})")
        version = one("version", "i")
        if version != COUNTS_VERSION:
            raise ValueError(f"{path}: counts file version {version} is not supported (this is {COUNTS_VERSION})")
        tokens, offsets, counts = need("tokens", "u"), need("offsets", "i"), need("counts", "i")
        if tokens.dtype != np.uint8:        # cast, its values above 255 would wrap into other bytes
            raise ValueError(f"{path}: corrupt counts file ('tokens' is {tokens.dtype}, not uint8)")
        specials_json, pattern = one("special_tokens", "U"), one("pattern", "U")
        try:
            if "pattern_utf8" in arrays:        # (files written before it: "pattern" alone)
                exact = need("pattern_utf8", "u")
                if exact.dtype != np.uint8 or exact.ndim != 1:
                    raise ValueError(f"'pattern_utf8' is {exact.dtype} of shape {exact.shape}, not uint8 bytes")
                pattern_bytes = exact.tobytes()
                if pattern_bytes.rstrip(b"\0") != pattern.encode("utf-8", "surrogatepass"):
                    raise ValueError("'pattern_utf8' and 'pattern' differ")
                pattern = pattern_bytes.decode("utf-8", "surrogatepass")
            specials = json.loads(specials_json)
            if not isinstance(specials, list):
                raise ValueError("special_tokens is not a list")
            return cls.from_arrays(tokens, offsets, counts, pattern, specials)
        except (ValueError, TypeError) as exc:      # the pattern's ValueError too: it does not compile
            raise ValueError(f"{path}: corrupt counts file ({exc})") from None
        except RecursionError:      # json.loads of special_tokens
            raise ValueError(f"{path}: corrupt counts file (special_tokens: JSON arrays or objects nested too "
                             "deeply)") from None


def _unpickle(tokens: NDArray[np.uint8], offsets: NDArray[np.int64], counts: NDArray[np.int64], pattern: str,
              special_tokens: tuple[str, ...]) -> PretokenCounts:
    return PretokenCounts.from_arrays(tokens, offsets, counts, pattern, special_tokens, check=False)


def _not_counts(path: str, what: str) -> ValueError:
    """The error of PretokenCounts.load for a file that is not counts: `what` it is (or lacks)."""
    return ValueError(f"{path}: not a bpe_fast counts file ({what}; counts are the .npz archive bpe-fast count "
                      f"writes)")


def _npz_entry(archive: Any, name: str, path: str) -> NDArray[Any]:
    """The array `name` of an open .npz archive, or the error naming the entry: one that needs pickle (an object
    array), one that is not a .npy array (NpzFile gives its bytes), a damaged one."""
    try:
        value = archive[name]
    except ValueError as exc:
        if "allow_pickle" not in str(exc):
            raise _not_counts(path, f"its {name!r} entry is not a readable .npy array") from None
        raise _not_counts(path, f"its {name!r} entry holds Python objects, which are not loaded") from None
    except Exception:               # zipfile.BadZipFile (a bad CRC), EOFError, zlib.error, OSError ...
        raise _not_counts(path, f"its {name!r} entry is not a readable .npy array") from None
    if not isinstance(value, np.ndarray):
        raise _not_counts(path, f"its {name!r} entry is not a .npy array")
    return value


# a mapping, read as one by what takes mappings (Counter(counts), dict.update, `isinstance(counts, Mapping)`): it
# was taken for an iterable of its pre-tokens, each counted once
Mapping.register(PretokenCounts)


def exact_total(counts: NDArray[np.int64], weights: NDArray[np.int64] | None = None) -> int:
    """sum(counts), or sum(counts * weights), as a Python int: NumPy's int64 sums wrap past 2**63 (counts
    PretokenCounts and the engine take can get there: words of one byte make no pair). Exact with Python ints
    where a float bound says int64 might not hold it (weights >= 0)."""
    if not len(counts):
        return 0
    bound = float(np.sum(counts, dtype=np.float64))
    if weights is not None:
        bound *= float(np.max(weights))
    if bound < 2.0 ** 62:
        return int(np.sum(counts) if weights is None else np.dot(weights, counts))
    if weights is None:
        return sum(map(int, counts.tolist()))
    return sum(c * w for c, w in zip(counts.tolist(), weights.tolist()))


def _add_tables(tables: list[Table]) -> Table:
    """merge_arrays(tables) (counts checked >= 0); ValueError naming the pre-token whose counts add up to more
    than int64 holds, which the native adding wraps to a negative count."""
    if sum(int(t[2].max(initial=0)) for t in tables) < 2 ** 63:     # no sum can reach it
        return merge_arrays(tables)
    table = tables[0]
    for other in tables[1:]:    # two counts below 2^63 wrap exactly when their sum does not fit: to a negative
        table = merge_arrays([table, other])
        wrapped = np.flatnonzero(table[2] < 0)
        if len(wrapped):
            k = int(wrapped[0])
            token = table[0][table[1][k]:table[1][k + 1]].tobytes()
            raise ValueError(f"the counts of {token[:50]!r} add up to more than int64 holds (2^63 - 1)")
    return table


def _shared_order(shards: list[PretokenCounts]) -> tuple[str, ...]:
    """The special tokens of a sum of shards: in the shards' order when they agree on one, else sorted, as a set
    of them is (the left operand's order made a + b and b + a train the special tokens at other ids)."""
    orders = {shard.special_tokens for shard in shards}
    return orders.pop() if len(orders) == 1 else tuple(sorted(shards[0].special_tokens))


def _nonzero(mapping: Mapping[bytes, int]) -> dict[bytes, int]:
    return {k: v for k, v in mapping.items() if v}


def mapping_arrays(counts: Mapping[bytes, int]) -> Table:
    """A mapping {pre-token bytes: count} as (tokens uint8, offsets int64, counts int64); TypeError/ValueError
    naming the first pre-token that is not bytes or whose count is not an int in 0..2^63 - 1 (a float count
    would be truncated, a str pre-token fail in a join). PretokenCounts and train_from_counts take mappings so."""
    if not isinstance(counts, Mapping):
        raise TypeError(f"counts must be PretokenCounts or a mapping {{bytes: int}}, got {type(counts).__name__}")
    keys = list(counts.keys())
    n = len(keys)
    if not set(map(type, keys)) <= {bytes}:
        for k in keys:
            if not isinstance(k, bytes):
                raise TypeError(f"pre-tokens must be bytes, got {type(k).__name__} {k!r}")
    values = list(counts.values())
    if not set(map(type, values)) <= {int}:
        for k, v in zip(keys, values):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"count of {k!r} must be an int, got {type(v).__name__} {v!r}")
    try:
        freqs = np.fromiter(values, dtype=np.int64, count=n)
    except OverflowError:
        for k, v in zip(keys, values):
            if not -2 ** 63 <= v < 2 ** 63:
                raise ValueError(f"count of {k!r} does not fit int64: {v!r}") from None
        raise
    if n and freqs.min() < 0:
        k = int(np.argmin(freqs))
        raise ValueError(f"count of {keys[k]!r} must be non-negative, got {values[k]!r}")
    lengths = np.fromiter(map(len, keys), dtype=np.int64, count=n)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return np.frombuffer(b"".join(keys), dtype=np.uint8), offsets, freqs


def _cast_exactly(array: ArrayLike, dtype: Any, name: str) -> NDArray[Any]:
    """array as a contiguous array of dtype; ValueError naming it if the cast changes a value (NumPy wraps a
    300 to uint8 44 and truncates 2.9 to 2 without a word); NumPy's own errors name it too."""
    try:
        given = np.asarray(array)
        with np.errstate(invalid="ignore"):     # (a float past the dtype, NaN: compared below, no RuntimeWarning)
            out = np.ascontiguousarray(given, dtype=dtype)
    except OverflowError:       # a Python int past int64, in an object array
        raise ValueError(f"{name}: values that {np.dtype(dtype).name} cannot hold (an int past int64)") from None
    except (TypeError, ValueError) as exc:      # None, "a", a ragged list
        raise type(exc)(f"{name}: {exc}") from None
    if given.dtype != out.dtype and given.size and not np.array_equal(out, given):
        # (ints of a list past int64, as [1, 2**63], are a float64 array to NumPy: named as the ints they are)
        past = given.dtype.kind == "f" and not isinstance(array, np.ndarray) and all(
            type(v) is int for v in np.asarray(array, dtype=object).flat)
        raise ValueError(f"{name}: values that {np.dtype(dtype).name} cannot hold "
                         f"({'an int past int64' if past else f'a {given.dtype} array'})")
    return out


def _check_arrays(tokens: NDArray[np.uint8], offsets: NDArray[np.int64], counts: NDArray[np.int64]) -> None:
    n = len(counts)
    if tokens.ndim != 1 or offsets.shape != (n + 1,) or counts.ndim != 1 or offsets[0] != 0 or \
            offsets[-1] != len(tokens) or np.any(np.diff(offsets) < 0):
        raise ValueError("tokens, offsets and counts disagree")
    if np.any(counts < 0):
        raise ValueError("a count is negative")
    k = first_repeat(tokens, offsets)
    if k >= 0:
        raise ValueError(f"a pre-token is listed twice: {bytes(tokens[offsets[k]:offsets[k + 1]])[:50]!r} (pre-token {k})")


def count_pretokens(inputs: Any, special_tokens: Iterable[str] | None = (), *, pattern: str | None = GPT2_PATTERN,
                    num_processes: int | None = None, errors: str = "strict", chunk_bytes: int | None = None,
                    progress: Progress | None = None, client: Any = None, max_bytes: int | None = None,
                    max_documents: int | None = None, text_field: str = "text",
                    text_column: str = "text") -> PretokenCounts:
    """Count the pre-tokens of a corpus; returns PretokenCounts.

    inputs: a path (text, .gz/.bz2/.xz/.zst, .jsonl, .parquet), a directory, a glob, a list of those, or an
    iterable of documents (str, bytes, or mappings with `text_field`, or lists of those: batches); see
    bpe_fast.inputs. Each document is counted on its own (pre-tokens never cross documents). max_bytes /
    max_documents take the corpus's first bytes / documents (a text file is one document). With `client` (a
    dask.distributed.Client) the counting of text files runs on that Dask cluster instead of local processes;
    every worker must see the paths.
    progress, if given, is called as progress("count", bytes_done, bytes_total) now and then, over all the inputs
    (bytes_total is None unless every input is an uncompressed text file: the others' text is known only as it
    is read). pattern None is GPT-2's, as for train_bpe.
    """
    special_tokens, pattern = check_input_args(special_tokens, GPT2_PATTERN if pattern is None else pattern, errors)
    check_progress(progress)    # (a Dask count reports nothing, but the argument is the same)
    if client is not None:
        from .dask_counts import count_on_dask
        if max_bytes is not None or max_documents is not None:
            raise ValueError("max_bytes and max_documents are not supported with a Dask client")
        for name, value in (("text_field", text_field), ("text_column", text_column)):     # as without a client
            if not isinstance(value, str):
                raise TypeError(f"{name} must be a str, got {type(value).__name__}")
        # (a Stream, such as the CLI's stdin, is a NamedTuple: not a tuple of paths)
        if not isinstance(inputs, (str, bytes, os.PathLike, TextFile, Stream, list, tuple)):
            raise TypeError("with a Dask client, inputs must be paths of uncompressed text files")
        sources = resolve_inputs(inputs, text_field)      # folders and globs: their files
        for source in sources:  # the workers read the bytes as they are: no decompressing, no JSON or Parquet
            if not isinstance(source, TextFile):
                path = source.name
                kind = (source.kind if source.kind != "text" else "a stream (such as stdin)"
                        if not isinstance(source.obj, str) else "compressed text" if os.path.isfile(path)
                        else "a pipe")
                raise InputError(f"{path}: with a Dask client, inputs must be uncompressed text files, not {kind} "
                                 f"(count it without client=)")
        paths = [source.path for source in sources if isinstance(source, TextFile)]     # all of them (above)
        table = count_on_dask(client, paths, special_tokens, pattern, errors, chunk_bytes)
        return PretokenCounts.from_arrays(*table, pattern=pattern, special_tokens=special_tokens, check=False)
    tables = count_input_tables(inputs, special_tokens, pattern, num_processes, errors, chunk_bytes, progress,
                                max_bytes=max_bytes, max_documents=max_documents, text_field=text_field,
                                text_column=text_column, combine=True)
    table, = tables                     # (combine: one table, every input's added into it)
    return PretokenCounts.from_arrays(*table, pattern=pattern, special_tokens=special_tokens, check=False)
