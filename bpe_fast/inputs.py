"""Corpus inputs: what train_bpe and count_pretokens accept, resolved into sources, read as batches of texts.

An input is
  * a path: a text file, a directory (its files, sorted; hidden ones skipped) or a glob ("shards/*.txt");
  * a list or tuple of such paths (taken in order);
  * any other iterable (a generator, a dataset): its items are documents, each a `str`, `bytes` (UTF-8) or a
    mapping holding the text under `text_field` (as the rows of HF datasets do); an item that is a list is a
    batch of such documents (as HF's train_from_iterator takes them), and so is a mapping whose `text_field`
    holds a list (a batch's columns, as HF datasets' iter(batch_size=...) gives them); a batch's documents are
    numbered as items of the input (in errors and for max_documents);
  * a mapping: one such item (a record, or a batch's columns, as HF datasets' dataset[:n] gives them), not its
    keys.

Files are read by extension: `.gz`, `.bz2`, `.xz` and `.zst` (the `zstandard` package) are decompressed as
they are read; then `.jsonl` / `.ndjson` are JSON lines (one document per line, its text under `text_field`),
and so is a `.json` file whose first line is a JSON object holding a string (or null) under `text_field`
(C4's `.json.gz` shards and HF datasets' `to_json` write JSON lines under that name; any other `.json` file,
such as a package.json, is text; one whose first line names `text_field` but is no JSON, a damaged record most
likely, is text with a warning),
`.parquet` is Parquet (one document per row of `text_column`, a null an empty one, read a few MB at a time: natively,
bpe_fast._parquet, when the footer says the column is a top-level string column whose chunks are uncompressed or
Snappy and encoded PLAIN, by dictionary or DELTA_LENGTH_BYTE_ARRAY; by the `pyarrow` package otherwise, decided a
file at a time), anything else is UTF-8 text. An uncompressed text file is a `TextFile`: it is counted by byte ranges
read by the workers themselves (counts.count_file_tables). Everything else is a `Stream`, read in this
process into `Batch`es of about `batch_bytes`, which the workers count; except, when there is no cap, Parquet
files with row groups enough, whose row groups the workers read themselves (parquet_row_group_batches), and
uncompressed JSON lines files big enough, cut into ranges of whole lines that the workers read themselves
(jsonl_ranges, jsonl_range_batches). JSON lines are read natively (bpe_fast._jsonl) where a line is sure to read
as json.loads reads it, and by json.loads otherwise.

A document is a unit: pre-tokens and special tokens never cross from one document to the next. A text file
is one document, cut into pieces at safe points (chunking.py), which does not change its pre-tokens.

`Budget` applies max_bytes / max_documents: the corpus's first bytes (cut back to a character boundary) and
first documents (a text file counts as one), in input order, the same whichever way the text arrives.
"""
from __future__ import annotations

import bz2
import contextlib
import errno
import glob
import gzip
import io
import itertools
import json
import lzma
import os
import re
import stat
import sys
import threading
import warnings
import zlib
from collections.abc import Generator, Iterable, Iterator, Mapping, Sequence
from typing import IO, Any, BinaryIO, Callable, NamedTuple

import numpy as np
from numpy.typing import NDArray

from ._encode import pull_utf8
from ._files import REGULAR, stat_paths
from ._jsonl import extract_texts
from ._types import StrPath
from .chunking import SpaceCuts, cut_margin, cut_tokens, last_safe_cut

COMPRESSIONS = (".gz", ".bz2", ".xz", ".zst")
JSONL_SUFFIXES = (".jsonl", ".ndjson")
PARQUET_SUFFIXES = (".parquet",)
JSON_SUFFIX = ".json"           # JSON lines when its first line is a record (_is_json_lines), else text
_STAT_IN_TWO = 4096             # paths from which file_sizes looks them up in two threads
_READ_BY_SUFFIX = COMPRESSIONS + JSONL_SUFFIXES + PARQUET_SUFFIXES + (JSON_SUFFIX,)   # name endings not plain text
_SNIFF_BYTES = 16 << 20         # at most, the first line of a .json file read to decide
_READ_BYTES = 1 << 20           # decompressed bytes read at a time from a compressed text file or JSON lines
_DECOMPRESS_ERRORS: tuple[type[BaseException], ...]
_DECOMPRESS_ERRORS = (OSError, EOFError, lzma.LZMAError, zlib.error)   # _StreamsReader raises OSError
try:                                   # isal (the `fast` extra) reads .gz files; its errors are its own
    from isal.isal_zlib import error as _isal_error
except ImportError:
    pass
else:
    _DECOMPRESS_ERRORS += (_isal_error,)      # type: ignore[assignment, unused-ignore]  # isal: `error: Exception`
_PARQUET_ROWS = 8192            # at most, in a Parquet record batch


class CorpusDecodeError(UnicodeError):
    """A corpus input is not valid UTF-8 (and errors="strict"). offset is the byte offset in the file (its
    decompressed bytes), or with `document` set, in that document (the index of an item or JSON line)."""

    hint = "pass errors='replace' to substitute U+FFFD"      # the CLI names its flag instead

    def __init__(self, path: str, offset: int, reason: str, line: int | None = None,
                 document: int | None = None, in_line: bool = False) -> None:
        super().__init__(path, offset, reason, line)
        self.path, self.offset, self.reason, self.line, self.document = path, offset, reason, line, document
        self.in_line = in_line          # offset is in the line (a JSON line, before its text is parsed)

    def __reduce__(self) -> tuple[Any, ...]:       # from a worker process: every field, not only the args
        return type(self), (self.path, self.offset, self.reason, self.line, self.document, self.in_line)

    def with_line(self, path: str, name: str | None = None, scan_limit: int | None = None) -> CorpusDecodeError:
        """This error with the line of its offset read from the file at `path` (a regular file, which can be
        read again; not a pipe), when it names neither a line nor a document, and named `name` (the input as
        the user gave it) if given; the line left out when the file cannot be read now, or when its offset is
        past scan_limit bytes (the most read to find it, for a caller that has not read the file: Dask's)."""
        line = self.line
        if (line is None and self.document is None and (scan_limit is None or self.offset <= scan_limit)
                and os.path.isfile(path)):
            with contextlib.suppress(OSError):
                line = line_of(path, self.offset)
        if line == self.line and name is None:
            return self
        return CorpusDecodeError(self.path if name is None else name, self.offset, self.reason, line, self.document,
                                 self.in_line)

    def __str__(self) -> str:
        where = f"byte offset {self.offset}" + (f" (line {self.line})" if self.line is not None else "")
        if self.in_line:
            where = f"line {self.line}, byte offset {self.offset} of the line"
        if self.document is not None:
            line = f" (line {self.line})" if self.line is not None else ""
            where = f"document {self.document}{line}, byte offset {self.offset} of the document"
        return f"{self.path}: invalid UTF-8 at {where}: {self.reason}; {self.hint}"


def check_errors(errors: str) -> str:
    if errors not in ("strict", "replace"):
        raise ValueError(f"errors must be 'strict' or 'replace', got {errors!r}")
    return errors


def check_input_file(path: StrPath) -> str:
    """path (one existing file that is not a folder) as a str; a TypeError naming what was given for anything
    that is not a path (a list of them went to os.fspath: "expected str, bytes or os.PathLike object")."""
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise TypeError(f"expected one file's path (str or os.PathLike), got {type(path).__name__}: "
                        f"encode_files encodes several inputs, train_bpe and count_pretokens read lists, "
                        f"folders, globs and iterables")
    path = os.fspath(path)
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not os.path.exists(path):
        raise not_found(path)
    if os.path.isdir(path):
        raise IsADirectoryError(21, "corpus path is a directory", path)
    return path


def not_found(path: str) -> OSError:
    """The error for an input path that does not exist, naming a symbolic link that points nowhere, or into a loop
    of links (os.path.exists says False for both: "not found" sent the user looking for a file that is there)."""
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return OSError(errno.ELOOP, "corpus path is a loop of symbolic links", path)
        if exc.errno in (errno.ENAMETOOLONG, errno.ENOTDIR, errno.EACCES):     # not "not found": the OS's reason
            return OSError(exc.errno, f"corpus path: {exc.strerror}", path)
    if os.path.islink(path):
        return FileNotFoundError(errno.ENOENT, f"corpus path is a symbolic link to {os.readlink(path)}, which does "
                                 f"not exist", path)
    return FileNotFoundError(errno.ENOENT, "corpus file not found", path)


def line_of(path: str, offset: int) -> int:
    """1-based line number of a byte offset of a file's (decompressed) bytes; for error messages."""
    lines = 1
    with open_binary(path) as f:
        left = offset
        while left > 0:
            block = f.read(min(left, 1 << 20))
            if not block:
                break
            lines += block.count(b"\n")
            left -= len(block)
    return lines


class InputError(ValueError):
    """A corpus input that cannot be read as asked (a missing field, a corrupt compressed file, an item of a
    wrong type); the message names where."""


class Batch(NamedTuple):
    """Documents to count: document k is data[bounds[k]:bounds[k + 1]] (UTF-8, unless the input was bytes
    and not valid). `origin` says where they came from, for error messages: (name, first_document,
    lines, base_offset) where `lines` is None or the 1-based line of each document (JSON lines), and
    base_offset the byte offset of data[0] within a text file (whose pieces are one document); a piece of a
    stream that cannot be read again (stdin) has `lines` (the line data[0] is on,)."""
    data: bytes
    bounds: NDArray[np.int64]
    origin: tuple[Any, ...]

    @property
    def size(self) -> int:
        return len(self.data)


class SlotBatch(NamedTuple):
    """A Batch whose bytes are already in a shared slot (count_workers.BatchRing): the first `length` bytes of
    slot `slot`. Small enough to send through a queue as it is."""
    slot: int
    length: int
    bounds: NDArray[np.int64]
    origin: tuple[Any, ...]

    @property
    def size(self) -> int:
        return self.length


class Slots:
    """Shared slots a reader writes batches' bytes into (the interface; count_workers implements it over a
    BatchRing, and over one buffer for a single process): lease() a free slot (None: none came free soon, the
    reader then makes a Batch of its own), view(slot) its writable bytes (slot_bytes of them), release(slot)
    gives back one that was not used."""

    slot_bytes: int

    def lease(self) -> int | None:
        raise NotImplementedError

    def view(self, slot: int) -> NDArray[np.uint8]:
        raise NotImplementedError

    def release(self, slot: int) -> None:
        raise NotImplementedError

    def data(self, item: Batch | SlotBatch) -> bytes | NDArray[np.uint8]:
        """The bytes of a batch: a Batch's own, a SlotBatch's in its slot (a view: no copy)."""
        return item.data if isinstance(item, Batch) else self.view(item.slot)[:item.length]


def batch_decode_error(batch: Batch | SlotBatch, exc: UnicodeDecodeError,
                       data: bytes | NDArray[np.uint8] | None = None) -> CorpusDecodeError:
    """The CorpusDecodeError for the UnicodeDecodeError exc of a Batch's data (`data`: a SlotBatch's bytes): the
    offset in the file for a piece of a text file (and its line, when the piece's origin carries the line it
    starts on: a stream that cannot be read again), else the document, its line (JSON lines) and the offset in
    it."""
    bounds, (name, first, lines, base) = batch.bounds, batch.origin
    if base is not None:
        line = None
        if data is None and isinstance(batch, Batch):
            data = batch.data
        if lines and data is not None:
            line = lines[0] + bytes(data[:exc.start]).count(b"\n")
        return CorpusDecodeError(name, base + exc.start, exc.reason, line)
    k = int(np.searchsorted(bounds, exc.start, side="right")) - 1
    return CorpusDecodeError(name, exc.start - int(bounds[k]), exc.reason, line=lines[k] if lines else None,
                             document=first + k)


class TextFile(NamedTuple):
    """An uncompressed text file; size: its size when it was listed (one stat a file: a folder of 79,000 small
    files spent 0.25 s on a second one), None when not looked up."""
    path: str
    size: int | None = None


class Stream(NamedTuple):
    """A source read in this process: kind is "text" (a compressed text file, or a binary file object such
    as stdin), "jsonl", "parquet" or "iterable"; `obj` is the path, the file object or the iterable; size, an
    uncompressed JSON lines file's size when it was listed (else None: looked up where it is needed)."""
    kind: str
    obj: Any
    name: str
    size: int | None = None


def check_cap(value: int | None, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int or None, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name} must be a non-negative int or None, got {value!r}")
    return int(value)


class Budget:
    """What max_bytes / max_documents leave; None for no cap. take() is called in corpus order."""

    def __init__(self, max_bytes: int | None = None, max_documents: int | None = None) -> None:
        self.bytes = check_cap(max_bytes, "max_bytes")
        self.documents = check_cap(max_documents, "max_documents")

    @property
    def spent(self) -> bool:
        return self.bytes == 0 or self.documents == 0

    def take_bytes(self, data: bytes) -> bytes:
        """data, cut to the bytes left (back to a character boundary); counts them as spent."""
        if self.bytes is None:
            return data
        if len(data) > self.bytes:
            data = data[:utf8_boundary(data, self.bytes)]
            self.bytes = 0
        else:
            self.bytes -= len(data)
        return data

    def take_document(self) -> bool:
        """False when no document is left; else counts one as spent."""
        if self.documents is None:
            return True
        if self.documents == 0:
            return False
        self.documents -= 1
        return True


def utf8_boundary(data: bytes | NDArray[np.uint8], k: int) -> int:
    """The greatest character boundary <= k of UTF-8 data (continuation bytes are 10xxxxxx)."""
    k = min(k, len(data))
    stop = max(0, k - 3)
    while k > stop and k < len(data) and (data[k] & 0xC0) == 0x80:
        k -= 1
    return k


# ---- resolving ------------------------------------------------------------------------------------

def resolve_inputs(inputs: object, text_field: str = "text") -> list[TextFile | Stream]:
    """The sources of an input (see the module's docstring), in order; text_field decides which `.json` files
    are JSON lines. A missing path, an empty glob or an empty directory is FileNotFoundError naming it."""
    if isinstance(inputs, (str, bytes, os.PathLike)):
        with _text_taken_for_a_path(inputs, "the input"):
            return _resolve_path(inputs, text_field)
    if isinstance(inputs, (TextFile, Stream)):
        return [inputs]
    if isinstance(inputs, (list, tuple)):
        paths = [item if type(item) is str else _path_item(item, position) for position, item in enumerate(inputs)]
        if not paths:
            raise ValueError("no input: the list of paths is empty")
        sources: list[TextFile | Stream] = []
        sizes = file_sizes(paths)           # (looked up together, natively: 2 µs a path)
        if None not in sizes:
            return _sources_of_files(paths, sizes, text_field)
        for position, (path, size) in enumerate(zip(paths, sizes)):
            if size is not None:
                sources.append(_source_of(path, text_field, is_file=True, size=size))
            else:           # a folder, a glob, a pipe, a missing path: looked at again, as one path is
                with _text_taken_for_a_path(path, f"item {position} of the list of inputs"):
                    sources.extend(_resolve_path(path, text_field))
        return sources
    if isinstance(inputs, Mapping):
        # one record, or a batch's columns (HF datasets' dataset[:n]): one item, as in an iterable; iterating it
        # gave its keys, and the field names were counted as the corpus
        if text_field not in inputs:
            fields = sorted(map(str, itertools.islice(inputs, 11)))
            raise InputError(f"the input is a mapping without a field {text_field!r} (fields: "
                             f"{fields[:10]}{' and more' if len(fields) > 10 else ''}): a mapping is read as one "
                             f"record, or a batch's columns; choose the field with text_field=, or pass an "
                             f"iterable of documents")
        return [Stream("iterable", (inputs,), "iterable")]
    if isinstance(inputs, Iterable):
        return [Stream("iterable", inputs, "iterable")]
    raise TypeError(f"input must be a path, a list of paths or an iterable of texts, "
                    f"not {type(inputs).__name__}")


@contextlib.contextmanager
def _text_taken_for_a_path(path: str | bytes | os.PathLike[str] | os.PathLike[bytes], what: str) -> Iterator[None]:
    """Resolving path: a missing path (not found, no glob match, a name too long) that reads as text, not as a
    file's name (a line break, a name longer than a file system's 255 bytes, three spaces), is named shortened,
    with the way to pass texts: a document given as a path (or a list of documents, which is taken as paths)
    was named whole, a whole story in a FileNotFoundError, and a '?' in it made it a glob pattern."""
    try:
        yield
    except OSError as exc:
        text = os.fsdecode(path)
        if exc.filename != text or not ("\n" in text or text.count(" ") >= 3 or
                                        any(len(os.fsencode(part)) > 255 for part in text.split(os.sep))):
            raise
        shown = text if len(text) <= 60 else f"{text[:60]}... ({len(text):,} characters)"
        raise type(exc)(exc.errno, f"{exc.strerror} ({what} reads as text: a str input, and each item of a list, "
                        f"is a path; to pass texts, pass an iterator: iter(texts))", shown) from None


def _path_item(item: object, position: int) -> str:
    """Item position of a list of inputs as a str path (os.fsdecode), or the TypeError naming it."""
    if not isinstance(item, (str, bytes, os.PathLike)):
        raise TypeError(f"a list of inputs holds paths; item {position} is "
                        f"{type(item).__name__} (to train on texts, pass an iterator: iter(texts))")
    return os.fsdecode(item)


def _sources_of_files(paths: list[str], sizes: Sequence[int | None], text_field: str) -> list[TextFile | Stream]:
    """_source_of each path, a regular file of the size given: a name that is plain text or JSON lines becomes
    its source at once (a folder of 79,000 files spent 45 ms in _source_of's calls and TextFile's constructor)."""
    new = tuple.__new__                 # (TextFile's own __new__ is a Python function: twice the time)
    sources: list[TextFile | Stream] = []
    for path, size in zip(paths, sizes):
        lower = path.lower()
        if not lower.endswith(_READ_BY_SUFFIX):
            sources.append(new(TextFile, (path, size)))
        elif lower.endswith(JSONL_SUFFIXES):        # (uncompressed: a compressed one's name ends otherwise)
            sources.append(new(Stream, ("jsonl", path, path, size)))
        else:
            sources.append(_source_of(path, text_field, is_file=True, size=size))
    return sources


def _has_magic(path: str) -> bool:
    return any(c in path for c in "*?[")


def _resolve_path(path: str | bytes | os.PathLike[str] | os.PathLike[bytes], text_field: str) -> list[TextFile | Stream]:
    path = os.fsdecode(path)
    try:
        looked = os.stat(path)                      # (one look a path: a list of 20,000 files took four each)
        mode: int | None = looked.st_mode
        size = looked.st_size
    except (OSError, ValueError):                   # (as os.path.exists: missing, not to be looked at, a NUL)
        mode = None
    if mode is not None and stat.S_ISDIR(mode):
        with os.scandir(path) as listing:     # (an entry knows whether it is a file: no stat a file, mostly)
            names = sorted(entry.name for entry in listing if not entry.name.startswith(".") and _is_file(entry))
        if not names:
            raise FileNotFoundError(2, "corpus directory holds no files", path)
        folder = path if path.endswith(os.sep) else path + os.sep       # (as an entry's path, os.path.join)
        files = [folder + name for name in names]
        return _sources_of_files(files, file_sizes(files), text_field)
    if mode is None and _has_magic(path):
        matches = sorted(glob.glob(path, recursive=True))
        files_sized = [(f, size) for f, size in zip(matches, file_sizes(matches)) if size is not None]
        if not files_sized:
            raise FileNotFoundError(2, "no corpus file matches the pattern", path)
        return _sources_of_files([f for f, _ in files_sized], [size for _, size in files_sized], text_field)
    if mode is None:
        raise not_found(path)
    regular = stat.S_ISREG(mode)
    return [_source_of(path, text_field, is_file=regular, size=size if regular else None)]


class ChangedWhileReadError(OSError):
    """A file found shorter when read than it was when listed (the ranges or the run it is read in were planned
    from that size). An OSError naming the file (filename, kept through pickling: the caller, not the worker
    that met it, decides which of several failing files comes first)."""

    def __init__(self, path: str) -> None:
        super().__init__(f"{path} changed while it was read (shorter than planned)")
        self.filename = path

    def __str__(self) -> str:
        return str(self.args[0])

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.filename,)


def not_regular(path: str) -> OSError:
    """The error for a listed file that is no longer a regular file when read (a pipe or a device in its place)."""
    return OSError(errno.EINVAL, "no longer a regular file (put in place since it was listed)", path)


def open_regular(path: str) -> BinaryIO:
    """open(path, "rb") of a regular file, anything else refused naming it: a folder IsADirectoryError, a pipe or a
    device OSError EINVAL (one put in place of a file since it was listed would wait for a writer, or never end)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        if not stat.S_ISREG(mode):
            raise not_regular(path)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def encode_paths(paths: Iterable[str]) -> list[bytes]:
    """os.fsencode of each path (str), for bpe_fast._files: twice as fast as calling it on each."""
    encoding, errors = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()
    return [p.encode(encoding, errors) for p in paths]


def file_sizes(paths: list[str]) -> Sequence[int | None]:
    """The size of each path that is a regular file (through links), None for any other (a folder, a pipe, one
    missing or not to be looked at, a name holding NUL), each path looked up once, natively; a long list in two
    threads (a stat is a system call, 2 µs: 79,000 paths took 0.13 s in one)."""
    encoded = encode_paths(paths)
    n = len(encoded)
    kinds, sizes, errnos = np.zeros(n, dtype=np.int8), np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int32)
    half = n // 2 if n >= _STAT_IN_TWO else n
    other = threading.Thread(target=stat_paths, args=(encoded, half, n, kinds, sizes, errnos), daemon=True)
    if half < n:
        other.start()
    stat_paths(encoded, 0, half, kinds, sizes, errnos)
    if half < n:
        other.join()
    if (kinds == REGULAR).all():
        return sizes.tolist()
    return [size if kind == REGULAR else None for kind, size in zip(kinds.tolist(), sizes.tolist())]


def _is_file(entry: os.DirEntry[str]) -> bool:
    """Whether a folder's entry is a file (through a link), False where that cannot be told (a loop of links, a
    link into a folder not to be looked into), as os.path.isfile says: such entries are passed over, as a glob
    passes them over."""
    try:
        return entry.is_file()
    except OSError:
        return False


def _split_suffix(path: str) -> tuple[str, str]:
    """(format suffix, compression suffix or "") of a file name."""
    lower = path.lower()
    if not lower.endswith(COMPRESSIONS):       # (one call: most names; a list of 79,000 files spent 0.4 s here)
        return os.path.splitext(lower)[1], ""
    compression = next(c for c in COMPRESSIONS if lower.endswith(c))
    return os.path.splitext(lower[:len(lower) - len(compression)])[1], compression


def _source_of(path: str, text_field: str = "text", is_file: bool | None = None,
               size: int | None = None) -> TextFile | Stream:
    """How the file at path is read; is_file: whether it is a regular file, when the caller knows; size, its
    size, when the caller looked it up."""
    if is_file and not path.lower().endswith(_READ_BY_SUFFIX):      # (most names: one call)
        return TextFile(path, size)
    suffix, compression = _split_suffix(path)
    if suffix in PARQUET_SUFFIXES:
        if compression:
            raise InputError(f"{path}: a compressed Parquet file is not read (Parquet compresses its columns "
                             f"itself)")
        return Stream("parquet", path, path)
    if suffix in JSONL_SUFFIXES or suffix == JSON_SUFFIX and _is_json_lines(path, text_field):
        return Stream("jsonl", path, path, None if compression else size)
    if compression or not (os.path.isfile(path) if is_file is None else is_file):
        # (a pipe (<(cmd), /dev/stdin) is read as it comes, not by ranges)
        return Stream("text", path, path)
    return TextFile(path, size)


def _is_json_lines(path: str, text_field: str) -> bool:
    """Whether the `.json` file at path (compressed or not) is JSON lines: its first line that is not blank (read
    up to _SNIFF_BYTES; a longer one by _prefix_holds_string) a JSON object holding a str (or null) under
    text_field. A pipe is not read to decide (text), nor a file that cannot be read (text: the error comes where
    it is read). A compressed file damaged within that line is decided by what decompresses of it (as a cut one:
    JSON lines, whose reader then names the line and offset of the damage, when it starts such a record)."""
    if not os.path.isfile(path):
        return False
    try:
        line, cut = _first_line(path)
    except _DECOMPRESS_ERRORS + (ImportError,):      # (at opening it)
        return False
    if not line.strip():
        return False
    # as the JSON lines reader reads a line (_jsonl_line_text): UTF-8 after a BOM; invalid UTF-8 is that reader's
    # error (or U+FFFD with errors="replace"), not a reason to read the records' syntax as text
    text = line.decode("utf-8", "replace").removeprefix("\ufeff")
    if not text.lstrip().startswith("{"):      # (a package.json's first line is "{" alone: not an object)
        return False
    try:
        record = json.loads(text)
    except (ValueError, RecursionError) as exc:
        if cut:
            return _prefix_holds_string(text, text_field)
        if re.search(f'"{re.escape(text_field)}"\\s*:', text):      # a damaged record, most likely: said
            warnings.warn(f"{path}: its first line names the {text_field!r} field of a JSON record but is not "
                          f"JSON ({exc}): the file is read as plain text, each record's keys and quotes too (named "
                          f".jsonl, it is read as JSON lines, and the damage is an error naming its line)",
                          stacklevel=2)
        return False
    # (a null too: a missing text, as HF datasets' to_json writes it, which the reader names, as on any other line)
    return isinstance(record, dict) and text_field in record and (record[text_field] is None
                                                                  or isinstance(record[text_field], str))


def _first_line(path: str, damaged: bool = False) -> tuple[bytes, bool]:
    """(the first line of the file that is not blank, cut) for _is_json_lines, reading at most _SNIFF_BYTES:
    cut when more of the line follows, or the rest of it could not be decompressed (what did is the line: the
    file is read again as damaged, see open_binary, for the read that failed lost what it had decompressed);
    b"" when there is none in what was read."""
    data = bytearray()
    start = search = 0                  # the start of the line being read; where its newline may be
    with open_binary(path, damaged) as f:
        while True:
            end = data.find(b"\n", search)
            while end >= 0:
                if data[start:end].strip():
                    return bytes(data[start:end + 1]), False
                start = end + 1
                end = data.find(b"\n", start)
            search = len(data)
            if len(data) >= _SNIFF_BYTES:
                return bytes(data[start:]), True
            try:
                block = (f.read1(min(_DAMAGE_STEP, _SNIFF_BYTES - len(data))) if damaged
                         else f.read(min(1 << 16, _SNIFF_BYTES - len(data))))
            except _DECOMPRESS_ERRORS:
                if not damaged:
                    return _first_line(path, damaged=True)
                return bytes(data[start:]), True
            if not block:
                return bytes(data[start:]), False
            data += block


_JSON_SPACE = re.compile(r"[ \t\n\r]*")


def _skip_space(text: str, at: int) -> int:
    """The index of the first character at or after `at` that is not JSON whitespace."""
    return _JSON_SPACE.match(text, at).end()      # type: ignore[union-attr]  # (it matches the empty string)


def _prefix_holds_string(text: str, text_field: str) -> bool:
    """Whether `text`, the start of a line too long to read whole, starts a JSON object whose text_field holds a
    string (or null, as _is_json_lines takes it): its members are read in order, up to the first member that
    runs past the end, which must be a string under text_field (a long document) or come after one (a later
    member of that name decides, as in json.loads)."""
    decoder = json.JSONDecoder()
    at = _skip_space(text, 0) + 1          # after the "{"
    found = False
    while True:
        at = _skip_space(text, at)
        if text[at:at + 1] != '"':
            return found and at == len(text)        # (cut just after a member's ",")
        try:
            key, at = decoder.raw_decode(text, at)
        except ValueError:
            return found
        at = _skip_space(text, at)
        if text[at:at + 1] != ":":
            return found and at == len(text)
        at = _skip_space(text, at + 1)
        try:
            value, at = decoder.raw_decode(text, at)
        except (ValueError, RecursionError):    # runs past the end (or is not JSON: the reader names the line)
            return text[at:at + 1] == '"' if key == text_field else found
        if key == text_field:
            found = value is None or isinstance(value, str)
        at = _skip_space(text, at)
        if text[at:at + 1] != ",":
            return found and at == len(text)
        at += 1


def plain_pipe(source: TextFile | Stream) -> str | None:
    """The path of `source` when it is a pipe (<(cmd), /dev/stdin) of uncompressed text, read as it comes
    (_source_of), else None."""
    if not isinstance(source, Stream) or source.kind != "text" or not isinstance(source.obj, str):
        return None
    return source.obj if not os.path.isfile(source.obj) and not _split_suffix(source.obj)[1] else None


def open_binary(path: str, damaged: bool = False) -> io.BufferedIOBase:
    """A binary file object of path's decompressed bytes (by extension). damaged: for reading again, by read1,
    a file whose read failed, to find how far it decompresses (_damage_error): a .gz file is then read by the
    standard library's gzip, whose read1 hands out what it decompressed before the damage and fails at the
    next call, where isal's fails in that call and loses it (a file cut within its first 8 KB decompressed
    bytes read 0 of them in reads of 8 KB); slower, but only after a failure."""
    _, compression = _split_suffix(path)
    if compression in (".gz", ".zst") and os.path.isfile(path) and os.path.getsize(path) == 0:
        # gzip and zstandard read an empty file as no text (bz2 and lzma refuse it): a download cut at its start
        raise InputError(f"{path}: corrupt compressed file after 0 decompressed bytes (an empty file, not a "
                         f"{compression[1:]} stream)")
    if compression == ".gz" and damaged:
        return gzip.open(path, "rb")
    if compression == ".gz":
        try:
            from isal import igzip            # the `fast` extra: 3x faster than zlib at decompressing
        except ImportError:
            return gzip.open(path, "rb")
        return igzip.open(path, "rb")
    if compression == ".bz2":
        return io.BufferedReader(_StreamsReader(path, bz2.BZ2Decompressor, "bz2"), buffer_size=_READ_BYTES)
    if compression == ".xz":
        return io.BufferedReader(_StreamsReader(path, lzma.LZMADecompressor, "xz", padding=True),
                                 buffer_size=_READ_BYTES)
    if compression == ".zst":
        try:
            import zstandard
        except ImportError:
            raise ImportError(f"{path}: reading .zst files needs the zstandard package "
                              f"(pip install 'bpe_fast[zstd]')") from None
        return io.BufferedReader(_StreamsReader(path, lambda: zstandard.ZstdDecompressor().decompressobj(), "zstd",
                                                feed=_ZSTD_FEED, errors=(zstandard.ZstdError,)),
                                 buffer_size=_READ_BYTES)
    return open(path, "rb")


# the bytes a stream of each kind begins with: after a stream's end, anything else is trailing data
_STREAM_STARTS = {"bz2": re.compile(rb"BZh[1-9]"), "xz": re.compile(rb"\xfd7zXZ\x00"),
                  "zstd": re.compile(rb"\x28\xb5\x2f\xfd|[\x50-\x5f]\x2a\x4d\x18")}   # (a frame, a skippable one)
_STREAM_START_BYTES = 6         # enough of a stream's first bytes to tell
_ZSTD_FEED = 1 << 11            # compressed bytes given zstandard's decompressor at a time (no max_length: 2 KB
#                                 expand to 64 MB at most, zstd's largest ratio being 32,768)


class _StreamsReader(io.RawIOBase):
    """The decompressed bytes of a file of one or more compressed streams (bz2 streams, xz streams, zstd
    frames) one after another, as pbzip2 and pzstd write them and `cat` joins them. After a
    stream's end, the next bytes must begin another (its magic bytes; for xz, after stream padding: NULs in
    fours): anything else is an OSError naming their offset, where the standard library's bz2 and lzma stop
    silently (a later stream whose header was damaged dropped the rest of the corpus unseen; `bzip2 -d` warns
    and goes on, this refuses: a corpus is not to be cut short unseen). A file that ends inside a stream is an
    EOFError, not a silent end (zstandard's stream_reader ended there). Output is bounded by the caller's
    buffer: bz2 and lzma are given max_length, zstandard's decompressor (which has none) _ZSTD_FEED
    compressed bytes at a time."""

    def __init__(self, path: str, new: Callable[[], Any], kind: str, feed: int | None = None,
                 padding: bool = False, errors: tuple[type[BaseException], ...] = ()) -> None:
        super().__init__()
        self._raw = open(path, "rb")
        try:
            self._dobj = new()
        except BaseException:
            self._raw.close()
            raise
        self._new, self._kind, self._feed, self._padding = new, kind, feed, padding
        self._errors = (OSError, lzma.LZMAError) + errors
        self._streams = 1                 # streams begun
        self._ended = False               # the end of the file found after a whole stream
        self._input, self._in_at = b"", 0  # compressed bytes read, from _in_at not yet given to the decompressor
        self._pending, self._at = b"", 0  # output not yet handed out
        self._bounded = hasattr(self._dobj, "needs_input")

    def readable(self) -> bool:
        return True

    def _take(self) -> bytes:
        """The next compressed bytes to give the decompressor (b"" at the end of the file): what is left of the
        last read, or a new read; no more than `feed` of them."""
        if self._in_at >= len(self._input):
            self._input, self._in_at = self._raw.read(_READ_BYTES), 0
        end = len(self._input) if self._feed is None else self._in_at + self._feed
        data = self._input[self._in_at:end] if self._in_at or end < len(self._input) else self._input
        self._in_at += len(data)
        return data

    def _next_stream(self) -> bool:
        """After a stream's end: begins the next one (True), or finds the end of the file (False); OSError for
        bytes that begin no stream."""
        data = self._dobj.unused_data + self._input[self._in_at:]
        nuls = 0
        while True:
            if self._padding:
                kept = data.lstrip(b"\0")
                nuls, data = nuls + len(data) - len(kept), kept
            if len(data) >= _STREAM_START_BYTES:
                break
            more = self._raw.read(_READ_BYTES)
            if not more:
                break
            data += more
        at = self._raw.tell() - len(data)
        if nuls % 4:
            raise OSError(f"{nuls} NUL bytes before compressed offset {at}, after the end of {self._kind} stream "
                          f"{self._streams}: stream padding comes in fours")
        if not data:
            self._ended = True
            return False
        if not _STREAM_STARTS[self._kind].match(data):
            raise OSError(f"the bytes at compressed offset {at}, after the end of {self._kind} stream "
                          f"{self._streams}, do not begin another: trailing data, or a damaged stream header")
        self._input, self._in_at = data, 0
        self._dobj = self._new()
        self._streams += 1
        return True

    def readinto(self, buffer: Any) -> int:
        while self._at >= len(self._pending):
            if self._ended or (self._dobj.eof and not self._next_stream()):
                return 0        # (asked again after the end: the last stream's unused bytes were looked at)
            if self._bounded and not self._dobj.needs_input:
                data = b""
            else:
                data = self._take()
                if not data:
                    raise EOFError("compressed file ended before the end-of-stream marker was reached")
            try:
                out = (self._dobj.decompress(data, len(buffer)) if self._bounded
                       else self._dobj.decompress(data))
            except self._errors as exc:
                raise OSError(f"{self._kind}: {exc}") from None
            self._pending, self._at = out, 0
        n = min(len(buffer), len(self._pending) - self._at)
        buffer[:n] = memoryview(self._pending)[self._at:self._at + n]
        self._at += n
        return n

    def close(self) -> None:
        self._raw.close()
        super().close()


# ---- reading --------------------------------------------------------------------------------------

class _Batcher:
    """Joins documents into Batches of about batch_bytes."""

    def __init__(self, batch_bytes: int, name: str) -> None:
        self.batch_bytes, self.name = batch_bytes, name
        self.pieces: list[bytes]
        self.lines: list[int | None]
        self.pieces, self.size, self.first, self.lines = [], 0, 0, []

    def add(self, data: bytes, index: int, line: int | None = None) -> Batch | None:
        """Add document `index`; returns a full Batch or None."""
        if not self.pieces:
            self.first = index
        self.pieces.append(data)
        self.lines.append(line)
        self.size += len(data)
        return self.flush() if self.size >= self.batch_bytes else None

    def flush(self) -> Batch | None:
        if not self.pieces:
            return None
        batch = _batch_of(self.pieces, list(map(len, self.pieces)), self.name, self.first,
                          None if self.lines[0] is None else tuple(self.lines))
        self.pieces, self.size, self.lines = [], 0, []
        return batch


def read_slot_batches(stream: Stream, budget: Budget, batch_bytes: int, special_tokens: Iterable[str],
                      space_cuts: SpaceCuts, text_field: str, text_column: str,
                      slots: Slots, errors: str = "strict") -> Iterator[Batch | SlotBatch]:
    """read_batches, but an iterable's documents without caps are made UTF-8 straight into the slots:
    SlotBatches."""
    if stream.kind == "iterable" and budget.bytes is None and budget.documents is None:
        return _iterable_slot_batches(stream.obj, batch_bytes, text_field, stream.name, slots)
    return read_batches(stream, budget, batch_bytes, special_tokens, space_cuts, text_field, text_column, errors)


def read_batches(stream: Stream, budget: Budget, batch_bytes: int, special_tokens: Iterable[str], space_cuts: SpaceCuts,
                 text_field: str = "text", text_column: str = "text",
                 errors: str = "strict") -> Generator[Batch, None, None]:
    """The Batches of a Stream, in order, within the budget. errors: what a JSON line that is not valid UTF-8
    gets (see _jsonl_chunk); other inputs' bytes are checked where they are counted or encoded."""
    if stream.kind == "text":
        yield from _text_batches(stream.obj, stream.name, budget, batch_bytes, special_tokens, space_cuts)
    elif stream.kind == "parquet":
        yield from _parquet_batches(stream.obj, budget, batch_bytes, text_column)
    elif stream.kind == "iterable" and budget.bytes is None and budget.documents is None:
        for batch in _iterable_slot_batches(stream.obj, batch_bytes, text_field, stream.name,
                                            _FreshBuffers(slot_bytes_for(batch_bytes))):
            assert isinstance(batch, Batch)    # no slot is ever leased
            yield batch
    elif stream.kind == "jsonl" and budget.bytes is None and budget.documents is None:
        yield from _jsonl_batches(stream.obj, batch_bytes, text_field, errors)
    else:
        documents = (_jsonl_documents(stream.obj, text_field, errors) if stream.kind == "jsonl"
                     else _iterable_documents(stream.obj, text_field))
        batcher = _Batcher(batch_bytes, stream.name)
        index = 0
        while not budget.spent:                    # never pulls a document beyond the cap
            try:
                item = next(documents, None)
            except Exception:
                # the input's error (an item's type, the iterator's own): the documents before it go on first,
                # so that their invalid UTF-8, found where they are counted, is the first error in input order
                last = batcher.flush()
                if last is not None:
                    yield last
                raise
            if item is None:
                break
            budget.take_document()
            full = batcher.add(budget.take_bytes(item[0]), index, item[1])
            index += 1
            if full is not None:
                yield full
        last = batcher.flush()
        if last is not None:
            yield last


def _text_batches(source: str | IO[bytes], name: str, budget: Budget, batch_bytes: int,
                  special_tokens: Iterable[str], space_cuts: SpaceCuts) -> Iterator[Batch]:
    """A compressed text file (or a binary file object, such as stdin, called `name`) as one document: pieces
    cut at safe points, about batch_bytes each. The Batches name the input by `name` (never hold the file
    object: they go to other processes)."""
    if budget.spent or not budget.take_document():
        return
    specials, starts = cut_tokens(special_tokens)
    # carry: the bytes read and not yet handed out, grown in place (a long stretch without a safe cut was copied
    # whole at each read, and searched whole again: quadratic); searched: its start, where no cut can be
    carry, offset, searched = bytearray(), 0, 0
    # a stream that cannot be read again (stdin, a pipe) carries each piece's first line in its origin, for the
    # line of its invalid UTF-8 (a file's is found by reading it again, inputs.line_of, only when there is one)
    line: int | None = None if isinstance(source, (str, os.PathLike)) and os.path.isfile(source) else 1
    # budget.bytes, not budget.spent: this document is taken, the last one max_documents leaves included
    with (open_binary(source) if isinstance(source, (str, os.PathLike)) else contextlib.nullcontext(source)) as f:
        while budget.bytes != 0:
            asked = max(_READ_BYTES, batch_bytes - len(carry))
            if budget.bytes is not None:    # no further than the cap's byte after: what lies past it (a damaged
                asked = min(asked, budget.bytes + 1 - len(carry))     # end, say) is not read, as in JSON lines
            try:
                block = f.read(asked)
            except _DECOMPRESS_ERRORS as exc:
                raise _damage_error(source, name, offset + len(carry), exc, asked) from None
            if not block:
                break
            carry += block
            if budget.bytes is not None and len(carry) > budget.bytes:
                break       # the cap cuts the document in carry: taken whole below (a safe cut of the uncut bytes,
                            # such as before a special token the cap cuts into, need not be one of the cut text)
            if len(carry) < batch_bytes:
                continue
            cut = last_safe_cut(carry, specials, space_cuts, after=searched, starts=starts)
            if cut is None:                  # no safe cut yet: read on, and search only what comes next
                searched = len(carry) - cut_margin(specials)
                continue
            piece = budget.take_bytes(bytes(carry[:cut]))
            yield Batch(piece, np.array([0, len(piece)], dtype=np.int64),
                        (name, 0, None if line is None else (line,), offset))
            if line is not None:
                line += piece.count(b"\n")
            offset += cut
            del carry[:cut]
            searched = 0
    if (carry or offset == 0) and budget.bytes != 0:     # an empty file is an empty document, as a text file is
        piece = budget.take_bytes(bytes(carry))
        yield Batch(piece, np.array([0, len(piece)], dtype=np.int64),
                    (name, 0, None if line is None else (line,), offset))


def read_documents(inputs: object, text_field: str = "text", text_column: str = "text",
                   errors: str = "strict") -> Iterator[tuple[str, bytes, NDArray[np.int64]]]:
    """(name, data, bounds) of each file of `inputs` (a path, a folder, a glob or a list of them, resolved as
    resolve_inputs resolves them), read whole by the readers of its kind: document k is data[bounds[k]:bounds[k +
    1]]. A text file, compressed or not, is one document, its bytes as they are (not checked: the caller decodes
    them, naming the offset); JSON lines and Parquet rows are UTF-8 (errors: what invalid UTF-8 in a JSON line
    gets, see read_batches). For readers that take a file's text at once (bpe-fast report's evaluation text)."""
    for source in resolve_inputs(inputs, text_field):
        if isinstance(source, TextFile):
            with open(source.path, "rb") as f:
                data = f.read()
            yield source.path, data, np.array([0, len(data)], dtype=np.int64)
            continue
        batches = list(read_batches(source, Budget(), _READ_BYTES, (), False, text_field, text_column, errors))
        data = b"".join(batch.data for batch in batches)
        if source.kind == "text":           # the pieces of one document
            yield source.name, data, np.array([0, len(data)], dtype=np.int64)
            continue
        bounds, base = [np.zeros(1, dtype=np.int64)], 0
        for batch in batches:
            bounds.append(batch.bounds[1:] + base)
            base += len(batch.data)
        yield source.name, data, np.concatenate(bounds)


_DAMAGE_READ = 1 << 16      # the reads that find how far a damaged file decompresses, up to where it failed before
# read1's from there on: a corrupt (not cut) stream fails within a call, which loses what it had decompressed, up to
# the size asked for (64 KB: a .jsonl.xz said line 1 where 8 KB of lines decompress)
_DAMAGE_STEP = 1 << 10
# ... up to this many bytes past the end of the failed read (what a decompressor may hold back); a read again
# that gets further without failing (a failure that does not come back) stops, or goes on in reads of _READ_BYTES
_DAMAGE_SPAN = 4 * _READ_BYTES


def _damage_error(source: str | IO[bytes], name: str, good: int, exc: BaseException,
                  asked: int = _READ_BYTES) -> InputError:
    """The InputError for a compressed input whose read failed with exc after `good` decompressed bytes: a
    file is read again to find how far it decompresses (the failed read was of megabytes, and what it had
    decompressed is lost with it), by read1: one read of the decompressor a call, so that only the call that
    fails loses what it decompressed, and a decompressor hands out what it has before it fails (read(n) gathers
    n bytes over several, and loses them all when one fails: the whole of a small file); of _DAMAGE_READ up to
    `good`, of _DAMAGE_STEP past it. asked: the size of the read that failed; the damage is looked for no
    further than _DAMAGE_SPAN past its end."""
    reached = good
    if isinstance(source, (str, os.PathLike)):
        with open_binary(source, damaged=True) as f:
            reached = 0
            while True:
                try:
                    block = f.read1(_DAMAGE_READ if reached + _DAMAGE_READ <= good else _DAMAGE_STEP)
                except _DECOMPRESS_ERRORS:
                    break
                if not block or reached > good + asked + _DAMAGE_SPAN:
                    reached = good          # read whole (or well past) this time: the first failure stands
                    break
                reached += len(block)
    return InputError(f"{name}: corrupt compressed file after {reached} decompressed bytes "
                      f"({type(exc).__name__}: {exc})")


def jsonl_blocks(path: str, text_field: str,
                 errors: str = "strict") -> Iterator[tuple[bytes, NDArray[np.int64], NDArray[np.int64]]]:
    """(texts, lengths, lines) of the JSON lines of a file, a block of lines at a time: the text_field's UTF-8
    of each non-blank line one after another, each one's length and its line number (see _jsonl_chunk). A
    compressed file damaged part-way gives every line before the damage, then the InputError that says where."""
    field = text_field.encode("utf-8", "surrogatepass")
    line_no, offset = 1, 0                        # the number of the next line; the bytes read before it
    pieces: list[bytes] = []                      # an unfinished line, read so far
    with open_binary(path) as f:
        while True:
            try:
                block = f.read(_READ_BYTES)
            except _DECOMPRESS_ERRORS:            # the lines before the damage, one at a time, then the error
                yield from _jsonl_until_damage(path, offset, line_no, text_field, errors)
                return
            if block:
                cut = block.rfind(b"\n") + 1
                if cut == 0:                      # no line ends in it yet
                    pieces.append(block)
                    continue
                data = b"".join(pieces + [block[:cut]]) if pieces else block[:cut]
                pieces = [block[cut:]] if cut < len(block) else []
            else:
                data = b"".join(pieces)           # the last line, without its newline
                pieces = []
            line_no = yield from _jsonl_chunk(data, path, text_field, field, line_no, errors)
            offset += len(data)
            if not block:
                return


def _jsonl_chunk(data: bytes, path: str, text_field: str, field: bytes, line_no: int,
                 errors: str = "strict") -> Generator[tuple[bytes, NDArray[np.int64], NDArray[np.int64]], None, int]:
    """(texts, lengths, lines) of the whole lines of data, whose first is line line_no: runs of lines read
    natively (bpe_fast._jsonl.extract_texts), and each line it leaves read by _jsonl_line_text (json.loads),
    which gives its text or the error that names it. Returns the number of the line after data's."""
    # what json.loads refuses natively is left to it (Python before 3.9.14 / 3.10.7 has no limit)
    digits = getattr(sys, "get_int_max_str_digits", lambda: 0)() or (1 << 30)
    depth = max(1, min(sys.getrecursionlimit(), 1000) // 4)  # json.loads of 3.12 stops at 1500 whatever the limit
    start = 0
    while start < len(data):
        texts, lengths, lines, stop, line_no = extract_texts(data, start, field, line_no, digits, depth)
        if len(lengths):
            yield texts, lengths, lines
        if stop < 0:
            break
        end = data.find(b"\n", stop)
        end = len(data) if end < 0 else end + 1
        text = _jsonl_line_text(data[stop:end], path, line_no, text_field, errors)
        if text is not None:
            yield text, np.array([len(text)], dtype=np.int64), np.array([line_no], dtype=np.int64)
        line_no += 1
        start = end
    return line_no


def _jsonl_until_damage(path: str, offset: int, line_no: int, text_field: str,
                        errors: str = "strict") -> Iterator[tuple[bytes, NDArray[np.int64], NDArray[np.int64]]]:
    """jsonl_blocks after a read failed: the file read again past its first `offset` bytes (line line_no on),
    a line at a time, up to the damage, whose InputError names the offset and line reached."""
    with open_binary(path, damaged=True) as f:
        left = offset
        while left > 0:                           # read before without a failure
            block = f.read(min(left, _READ_BYTES))
            if not block:                         # shorter now than when it was read (it looped for good)
                raise InputError(f"{path}: ended after {offset - left} decompressed bytes when read again, where "
                                 f"{offset} were read before (changed while it was read?)")
            left -= len(block)
        # a line at a time from reads by read1 (see _damage_error: readline, as read, lost the bytes of a read
        # that failed, which for a small file held every line)
        pending, at, searched = bytearray(), 0, 0     # read and not given out: pending[at:]; no newline before searched
        small_until = offset + _READ_BYTES + _DAMAGE_SPAN       # (the failed read asked for _READ_BYTES)
        while True:
            end = pending.find(b"\n", max(at, searched)) + 1
            if end == 0:
                try:
                    block = f.read1(_DAMAGE_STEP if offset + len(pending) - at < small_until else _READ_BYTES)
                except _DECOMPRESS_ERRORS as exc:
                    raise InputError(f"{path}: corrupt compressed file after {offset} decompressed bytes "
                                     f"(line {line_no}; {type(exc).__name__}: {exc})") from None
                if block:
                    del pending[:at]
                    at, searched = 0, len(pending)
                    pending += block
                    continue
                if at == len(pending):
                    return
                end = len(pending)                # the last line, without its newline
            line = bytes(pending[at:end])
            at = end
            text = _jsonl_line_text(line, path, line_no, text_field, errors)
            if text is not None:
                yield text, np.array([len(text)], dtype=np.int64), np.array([line_no], dtype=np.int64)
            offset += len(line)
            line_no += 1


def jsonl_ranges(path: str, pieces: int, size: int | None = None) -> list[tuple[int, int]] | None:
    """Byte ranges of whole lines (each cut just after a newline) of an uncompressed JSON lines file, about
    size / pieces bytes each, for workers that read their share themselves; None for a compressed file or a
    pipe (whose size says nothing: it is read as it comes). size: the file's, from a caller that looked it up
    (and found an uncompressed regular file)."""
    if size is None:
        if _split_suffix(path)[1] or not os.path.isfile(path):
            return None
        size = os.path.getsize(path)
    if pieces <= 1:             # (the whole file: nothing to look for in it)
        return [(0, size)] if size else []
    cuts = [0]
    with open_regular(path) as f:
        for k in range(1, pieces):
            at = k * size // pieces
            if at < cuts[-1]:                     # inside a long line already cut after
                continue
            f.seek(at)
            while True:
                block = f.read(1 << 16)
                if not block:
                    at = size
                    break
                newline = block.find(b"\n")
                if newline >= 0:
                    at += newline + 1
                    break
                at += len(block)
            if at >= size:
                break
            if at > cuts[-1]:
                cuts.append(at)
    cuts.append(size)
    return [(a, b) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]


def jsonl_range_batches(path: str, start: int, end: int, text_field: str, batch_bytes: int,
                        errors: str = "strict") -> Iterator[Batch]:
    """The Batches of the JSON lines in bytes [start, end) of an uncompressed file (whole lines, see
    jsonl_ranges), read as jsonl_blocks reads them. The InputError of a bad line numbers it within the range:
    the caller names the first bad line of the file by reading it in order (count_workers._first_jsonl_error)."""
    with open_regular(path) as f:      # (a pipe put in its place since it was listed: refused, not waited on)
        f.seek(start)
        data = f.read(end - start)
    if len(data) != end - start:        # (not fewer lines: the ranges were planned from its size)
        raise ChangedWhileReadError(path)
    yield from _jsonl_batches_of(jsonl_data_blocks(data, path, text_field, errors), batch_bytes, path, lines=False)


def jsonl_data_blocks(data: bytes, path: str, text_field: str, errors: str = "strict"
                      ) -> Iterator[tuple[bytes, NDArray[np.int64], NDArray[np.int64]]]:
    """(texts, lengths, lines) blocks of the JSON lines in data, whole lines read from the file at path (its
    first line numbered 1: within the range, for a range of a file), read as jsonl_blocks reads them."""
    return _jsonl_chunk(data, path, text_field, text_field.encode("utf-8", "surrogatepass"), 1, errors)


def _jsonl_line_text(line: bytes, path: str, line_no: int, text_field: str, errors: str = "strict") -> bytes | None:
    """The UTF-8 of the text_field of one JSON line read by json.loads (None if it is blank), or the
    InputError that names the file and line. A line that is not valid UTF-8 is a CorpusDecodeError naming the
    line and the offset in it, or with errors="replace" is read with U+FFFD for each bad sequence."""
    if not line.strip():
        return None
    try:            # not json.loads of the bytes: it reads the UTF-8 of surrogates (ED A0 80: not UTF-8) and
        decoded = line.decode("utf-8")  # takes a line with NULs in its first bytes for UTF-16 or UTF-32
    except UnicodeDecodeError as exc:
        if errors != "replace":
            raise CorpusDecodeError(path, exc.start, exc.reason, line=line_no, in_line=True) from None
        decoded = line.decode("utf-8", "replace")
    record = _json_record(decoded.removeprefix("\ufeff"), path, line_no)  # a BOM, as json.loads reads bytes
    if not isinstance(record, dict):
        raise InputError(f"{path}:{line_no}: a JSON line must be an object with a {text_field!r} field, "
                         f"got {type(record).__name__}")
    if text_field not in record:
        raise InputError(f"{path}:{line_no}: no field {text_field!r} (fields: {sorted(record)}); "
                         f"choose one with text_field= (CLI: --text-field)")
    text = record[text_field]
    if not isinstance(text, str):
        raise InputError(f"{path}:{line_no}: field {text_field!r} is {type(text).__name__}, not a string")
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(f"{path}:{line_no}: field {text_field!r} holds a lone surrogate at "
                         f"character {exc.start}") from None


def _json_record(line: str, path: str, line_no: int) -> Any:
    """json.loads(line); InputError naming the file and line when the line is not JSON, or nests arrays and
    objects too deeply for json.loads (whose RecursionError would name neither)."""
    try:
        return json.loads(line)
    except ValueError as exc:       # json.JSONDecodeError
        raise InputError(f"{path}:{line_no}: not a JSON line ({exc})") from None
    except RecursionError:
        raise InputError(f"{path}:{line_no}: not a JSON line (arrays or objects nested too deeply)") from None


def _jsonl_documents(path: str, text_field: str, errors: str = "strict") -> Iterator[tuple[bytes, int]]:
    """(UTF-8 text, line) of each non-blank JSON line's text_field (for read_batches with caps)."""
    for texts, lengths, lines in jsonl_blocks(path, text_field, errors):
        at = 0
        for length, line in zip(lengths.tolist(), lines.tolist()):
            yield texts[at:at + length], line
            at += length


def _jsonl_batches(path: str, batch_bytes: int, text_field: str, errors: str = "strict") -> Iterator[Batch]:
    """read_batches of a JSON lines file without caps: Batches of about batch_bytes of whole documents, made
    from blocks of lines (the same documents, lines and order as the capped path's)."""
    yield from _jsonl_batches_of(jsonl_blocks(path, text_field, errors), batch_bytes, path, lines=True)


def _jsonl_batches_of(blocks: Iterable[tuple[bytes, NDArray[np.int64], NDArray[np.int64]]], batch_bytes: int,
                      name: str, lines: bool) -> Iterator[Batch]:
    """Batches of about batch_bytes (a block bigger than that is cut between documents) of (texts, lengths,
    lines) blocks; lines: the Batches carry each document's line (for errors), else not."""
    blobs: list[bytes] = []
    parts: list[NDArray[np.int64]] = []
    line_parts: list[NDArray[np.int64]] = []
    size, first, index = 0, 0, 0
    for texts, lengths, numbers in blocks:
        ends = np.cumsum(lengths)
        done, at = 0, 0                           # documents and bytes of the block batched
        while done < len(lengths):
            upto = max(done + 1, int(np.searchsorted(ends, at + batch_bytes - size, side="right")))
            cut = int(ends[upto - 1])
            blobs.append(texts[at:cut])
            parts.append(lengths[done:upto])
            line_parts.append(numbers[done:upto])
            size += cut - at
            index += upto - done
            done, at = upto, cut
            if size >= batch_bytes:
                yield _joined_batch(blobs, parts, line_parts if lines else None, name, first)
                blobs, parts, line_parts, size, first = [], [], [], 0, index
    if parts:
        yield _joined_batch(blobs, parts, line_parts if lines else None, name, first)


def _joined_batch(blobs: list[bytes], parts: list[NDArray[np.int64]], line_parts: list[NDArray[np.int64]] | None,
                  name: str, first: int) -> Batch:
    """The Batch of the documents blobs (joined), parts their lengths, line_parts their lines (or None)."""
    lengths = np.concatenate(parts)
    bounds = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=bounds[1:])
    lines = None if line_parts is None else tuple(np.concatenate(line_parts).tolist())
    return Batch(b"".join(blobs), bounds, (name, first, lines, None))


MAX_SLOT_BYTES = 64 << 20


def slot_bytes_for(batch_bytes: int) -> int:
    """The size of a slot for batches of about batch_bytes (Slots): twice that, so that the documents that end
    a batch fit too, at least 128 KB and at most MAX_SLOT_BYTES (a larger batch_bytes makes batches of about a
    slot each, so memory stays bounded)."""
    return min(2 * max(batch_bytes, 1 << 16), MAX_SLOT_BYTES)


class _FreshBuffers(Slots):
    """Slots that never lease: _iterable_slot_batches then makes each batch in a buffer of its own (of
    slot_bytes) and yields it as a Batch, for readers whose batches are used side by side (read_batches)."""

    def __init__(self, slot_bytes: int) -> None:
        self.slot_bytes = slot_bytes

    def lease(self) -> int | None:
        return None


def _iterable_slot_batches(iterable: Iterable[Any], batch_bytes: int, text_field: str, name: str,
                           slots: Slots) -> Iterator[Batch | SlotBatch]:
    """The Batches of an iterable without caps, each batch's UTF-8 written straight into a leased slot: no
    bytes object made and copied a batch, and memory whose pages were faulted in once (a fresh 4 MB bytes
    object a batch cost more than the conversion). Runs of plain str and bytes items (and of plain dicts whose
    text_field holds one) are pulled and made UTF-8 natively (bpe_fast._encode.pull_utf8); any other item (a
    bytearray, another mapping, a str subclass, a str with a lone surrogate) is converted, or named in the
    error, here. A list item is a batch of documents (as HF's train_from_iterator takes them): its items are
    pulled the same way, numbered as items of the input. A batch stops at batch_bytes or when the slot is full:
    an item whose UTF-8 does not fit what is left starts the next one, and one bigger than a slot goes as a
    Batch of its own. When no slot comes free soon (more counters than slots), the batch is made the same way
    in a buffer of its own and goes as a Batch."""
    sources = [iter(iterable)]          # the input, and above it the items of a list item being pulled
    index, done = 0, False
    carry: bytes | None = None          # the UTF-8 of an item that did not fit the last slot
    while not done or carry is not None:
        slot = slots.lease()
        array = slots.view(slot) if slot is not None else np.empty(slots.slot_bytes, dtype=np.uint8)
        view = array.data               # a memoryview: its slice assignment costs far less than an array's
        room = len(view)
        lengths: list[Any] = []         # int64 arrays (from pull_utf8) and ints (items converted here)
        at, first = 0, index
        failure: Exception | None = None    # the input's error: raised once the documents before it are handed on
        if carry is not None:
            view[:len(carry)] = carry
            lengths.append(len(carry))
            at, index, carry = len(carry), index + 1, None
        while at < batch_bytes and not done:
            # (a list item is pulled natively too, in the input's place: `rest`, the rest of one left unfinished)
            written, pulled, state, item, rest = pull_utf8(sources[-1], batch_bytes - at, view[at:], text_field,
                                                           len(sources) == 1)
            if len(pulled):
                lengths.append(pulled)
                at += written
                index += len(pulled)
            if rest is not None:
                sources.append(rest)
            if state == 1:                      # the input, or the list item being pulled, is exhausted
                sources.pop()
                done = not sources
            elif state == 3:                    # the iterator raised
                failure = item
                break
            elif state == 2:        # a batch of documents; or not a plain str, or too big for what is left
                try:
                    if len(sources) == 1 and (batch := _batch_items(item, text_field)) is not None:
                        sources.append(iter(batch))
                        continue
                    document = _document_utf8(item, index, text_field)     # converted here, or named
                except Exception as exc:
                    failure = exc
                    break
                if at + len(document) > room:
                    carry = document
                    break
                view[at:at + len(document)] = document
                lengths.append(len(document))
                at, index = at + len(document), index + 1
        # the documents before a failure go on first: their invalid UTF-8, found where they are counted, is the
        # first error in input order then, as when the two are in different batches
        if lengths:
            bounds = np.zeros(index - first + 1, dtype=np.int64)
            np.cumsum(np.hstack(lengths), out=bounds[1:])
            yield (SlotBatch(slot, at, bounds, (name, first, None, None)) if slot is not None
                   else Batch(array[:at].tobytes(), bounds, (name, first, None, None)))
        elif slot is not None:
            slots.release(slot)
        if failure is not None:
            item = None
            try:
                raise failure
            finally:
                # its traceback holds this frame and the callers' (a count's native table): left in these locals, a
                # reference cycle kept them alive until the garbage collector ran
                failure = None
        if carry is not None and len(carry) > room:
            yield _batch_of([carry], [len(carry)], name, index)
            index, carry = index + 1, None


def _document_of(item: object, index: int, text_field: str) -> str | bytes:
    """An item of an iterable input that is not a str, as a plain str or bytes (or the error that names it);
    a str subclass is taken as its str, as Tokenizer.encode takes it."""
    if isinstance(item, str):
        return str.__str__(item)
    if isinstance(item, (bytes, bytearray, memoryview)):
        return bytes(item)
    if isinstance(item, Mapping):
        if text_field not in item:
            raise InputError(f"item {index} of the input has no field {text_field!r} "
                             f"(fields: {sorted(map(str, item))})")
        text = item[text_field]
        if isinstance(text, str):
            return str.__str__(text)
        if isinstance(text, (bytes, bytearray, memoryview)):
            return bytes(text)
        raise TypeError(f"item {index} of the input: field {text_field!r} is {type(text).__name__}; documents "
                        f"must be str or bytes")
    if type(item) is list:
        raise TypeError(f"item {index} of the input is a list inside a list item (a list item is a batch of "
                        f"documents: str, bytes or mappings with a {text_field!r} field)")
    raise TypeError(f"item {index} of the input is {type(item).__name__}; documents must be str or "
                    f"bytes (or mappings with a {text_field!r} field, or lists of those)")


def _batch_of(blobs: Iterable[bytes], lengths: Sequence[int], name: str, first: int,
              lines: tuple[int | None, ...] | None = None) -> Batch:
    """The Batch of the documents whose bytes are `blobs` joined, `lengths` long each; the first is document
    `first` of the input."""
    bounds = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(lengths, dtype=np.int64, count=len(lengths)), out=bounds[1:])
    return Batch(b"".join(blobs), bounds, (name, first, lines, None))


def _iterable_documents(iterable: Iterable[Any], text_field: str) -> Iterator[tuple[bytes, None]]:
    """(UTF-8 text, None) of each item of an iterable input (for read_batches with caps); a list item is a
    batch of items, numbered as items of the input."""
    index = 0
    for item in iterable:
        batch = _batch_items(item, text_field)
        for document in (item,) if batch is None else batch:
            yield _document_utf8(document, index, text_field), None
            index += 1


def _batch_items(item: object, text_field: str) -> list[Any] | None:
    """The documents of an item of an iterable input that is a batch: a list (as HF's train_from_iterator takes
    them), or a mapping whose text_field holds a list (the columns of a batch, as HF datasets' iter(batch_size)
    gives them); None for any other item."""
    if type(item) is list:
        return item
    if isinstance(item, Mapping) and text_field in item and type(item[text_field]) is list:
        return item[text_field]
    return None


def _document_utf8(item: object, index: int, text_field: str) -> bytes:
    """The UTF-8 of item `index` of an iterable input (see _document_of), or the InputError that names a
    lone surrogate in it."""
    document = item if type(item) is str else _document_of(item, index, text_field)
    if type(document) is not str:
        return document         # type: ignore[return-value]  # bytes
    try:
        return document.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(f"item {index} of the input holds a lone surrogate at character {exc.start}") from None


def _message_line(exc: BaseException) -> str:
    """The first line of exc's message (pyarrow's are several: a message of one line left its bracket open)."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


# Parquet: read natively (bpe_fast._parquet) when the file's footer says the text column is a top-level string
# column whose chunks are uncompressed or Snappy and encoded PLAIN, by dictionary or DELTA_LENGTH_BYTE_ARRAY
# (what pyarrow, pandas, Polars, Spark and HF datasets write by default but for the codec), by pyarrow otherwise:
# decided a file at a time, from its footer, so that one reader reads all of a file
_PARQUET_CODECS = {0: "uncompressed", 1: "SNAPPY", 2: "GZIP", 3: "LZO", 4: "BROTLI", 5: "LZ4", 6: "ZSTD",
                   7: "LZ4_RAW"}
_PARQUET_ENCODINGS = {0: "PLAIN", 2: "PLAIN_DICTIONARY", 3: "RLE", 4: "BIT_PACKED", 5: "DELTA_BINARY_PACKED",
                      6: "DELTA_LENGTH_BYTE_ARRAY", 7: "DELTA_BYTE_ARRAY", 8: "RLE_DICTIONARY",
                      9: "BYTE_STREAM_SPLIT"}
_PARQUET_TYPES = {0: "bool", 1: "int32", 2: "int64", 3: "int96", 4: "float", 5: "double", 6: "binary",
                  7: "fixed_size_binary"}
_PARQUET_FOOTER_MAX = 1 << 30     # a footer claiming more is damaged (not read into memory)
_NATIVE_ROWS = 1 << 16            # at most, the documents of a piece the native reader gives (a run of nulls
                                  # can be millions of them in a few bytes)


class ParquetPlan(NamedTuple):
    """How the native reader reads a Parquet file's text column, from its footer: for each row group (its rows,
    the column's uncompressed bytes in it, its codec, the file range of its column chunk, its values), and
    whether the column is OPTIONAL (has nulls)."""
    chunks: list[tuple[int, int, int, int, int, int]]
    optional: bool


class _NeedsPyarrow(NamedTuple):
    """A Parquet file the native reader leaves to pyarrow: why (a feature it does not read, or what looks
    damaged in the footer, which pyarrow then names as it always did)."""
    why: str
    damaged: bool


def _pyarrow_installed() -> bool:
    """Whether pyarrow can be imported (looked up, not imported: its import is 0.15-0.2 s)."""
    import importlib.util
    try:
        return importlib.util.find_spec("pyarrow") is not None
    except (ImportError, ValueError):
        return False


def _parquet_plan(path: str, text_column: str) -> ParquetPlan | _NeedsPyarrow:
    """The native reader's plan for a Parquet file, or why pyarrow reads it; the OSError of a file that cannot be
    opened; InputError for a column that is not there or not alone (the errors pyarrow's reading gave)."""
    from ._parquet import SUPPORTED_CODECS, SUPPORTED_ENCODINGS, read_footer
    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        if size < 12:
            return _NeedsPyarrow("a file too short to be Parquet", True)
        tail = os.pread(f.fileno(), 8, size - 8)
        head = os.pread(f.fileno(), 4, 0)
        if tail[4:] == b"PARE":
            return _NeedsPyarrow("an encrypted footer", False)
        footer_len = int.from_bytes(tail[:4], "little")
        if len(tail) != 8 or tail[4:] != b"PAR1" or head != b"PAR1":
            return _NeedsPyarrow("no Parquet magic bytes", True)
        if footer_len > min(size - 12, _PARQUET_FOOTER_MAX):
            return _NeedsPyarrow("a footer longer than the file", True)
        data_end = size - 8 - footer_len
        footer = os.pread(f.fileno(), footer_len, data_end)
    if len(footer) != footer_len:
        return _NeedsPyarrow("the file shorter than it was", True)
    try:
        num_rows, encrypted, names, tops, matches, element, text, groups = read_footer(footer,
                                                                                        text_column.encode())
    except (ValueError, UnicodeEncodeError) as exc:
        return _NeedsPyarrow(f"a footer that does not parse: {exc}", True)
    try:
        top_names = [names[i].decode() for i in tops]
        for name in names:
            name.decode()
    except UnicodeDecodeError:
        return _NeedsPyarrow("a column name that is not UTF-8", True)
    if matches == 0:
        raise InputError(f"{path}: no column {text_column!r} (columns: {top_names}); choose one with "
                         f"text_column= (CLI: --text-column)")
    if matches > 1:
        raise InputError(f"{path}: {matches} columns named {text_column!r} (columns: {top_names}): "
                         "which one holds the text is not known")
    if encrypted:
        return _NeedsPyarrow("encryption", False)
    assert text is not None                         # (the column is there: its element)
    kind, repetition, children, converted, logical = text
    if children >= 0:
        return _NeedsPyarrow("a nested column", False)
    if repetition not in (0, 1):                    # REQUIRED, OPTIONAL
        return _NeedsPyarrow("a repeated column", False)
    if kind != 6:                                   # BYTE_ARRAY
        return _NeedsPyarrow(f"a column of type {_PARQUET_TYPES.get(kind, kind)}", False)
    if not (logical == 1 or logical < 0 and converted == 0):        # the STRING logical type, or UTF8
        return _NeedsPyarrow("a binary column" if logical < 0 and converted < 0 else "an annotated binary column",
                             False)
    chunks = []
    for g, (rows, kind, codec, encodings, num_values, uncompressed, compressed, data_page, dictionary_page,
            path_matches, file_path, encrypted, has_meta) in enumerate(groups):
        if encrypted or not has_meta:
            return _NeedsPyarrow("encryption", False)
        if file_path:
            return _NeedsPyarrow("column data in another file", False)
        if codec not in SUPPORTED_CODECS:
            return _NeedsPyarrow(f"{_PARQUET_CODECS.get(codec, codec)} compression", False)
        other = [e for e in range(64) if encodings >> e & 1 and e not in SUPPORTED_ENCODINGS]
        if other:
            return _NeedsPyarrow(f"the {_PARQUET_ENCODINGS.get(other[0], other[0])} encoding", False)
        start = data_page
        if dictionary_page > 0 and dictionary_page < start:
            start = dictionary_page
        if num_values == 0 == rows and kind == 6 and path_matches:
            start = compressed = 0          # (an empty row group's chunk: nothing to read, whatever its offsets)
        elif (kind != 6 or not path_matches or num_values != rows or min(uncompressed, compressed, start) < 0
                or start < 4 or compressed > data_end - start):
            return _NeedsPyarrow(f"row group {g}'s column chunk out of place", True)
        chunks.append((rows, uncompressed, codec, start, compressed, num_values))
    return ParquetPlan(chunks, repetition == 1)


def _planned(path: str, text_column: str) -> ParquetPlan | None:
    """_parquet_plan, None for a file pyarrow reads (ImportError naming why without pyarrow; InputError for
    a damaged footer)."""
    plan = _parquet_plan(path, text_column)
    if isinstance(plan, ParquetPlan):
        return plan
    if _pyarrow_installed():
        return None
    if plan.damaged:
        raise InputError(f"{path}: not a Parquet file ({plan.why})")
    if plan.why == "a binary column":           # (refused by pyarrow too, in these words)
        raise InputError(f"{path}: column {text_column!r} is binary, not strings")
    raise ImportError(f"{path}: reading Parquet needs the pyarrow package (pip install 'bpe_fast[parquet]'): "
                      f"this file has {plan.why} (bpe_fast reads a top-level string column, uncompressed or "
                      f"SNAPPY, itself)")


def parquet_reader(path: str, text_column: str = "text") -> str:
    """"native" when bpe_fast reads the file's text column itself, else why pyarrow reads it."""
    plan = _parquet_plan(path, text_column)
    return "native" if isinstance(plan, ParquetPlan) else plan.why


def _native_pieces(path: str, plan: ParquetPlan, groups: Iterable[int], rows: int, batch_bytes: int,
                   max_rows: int | None = None) -> Iterator[tuple[bytes, NDArray[np.int64]]]:
    """(data, int64 bounds from 0) of the text column of the row groups `groups`, read natively, about
    batch_bytes each (a row group's last less), at most max_rows documents each; rows: the rows before the first
    row group (for errors)."""
    from ._parquet import ColumnChunk
    limit = _NATIVE_ROWS if max_rows is None else max(1, min(_NATIVE_ROWS, max_rows))
    with open_regular(path) as f:
        for g in groups:
            _, _, codec, start, length, num_values = plan.chunks[g]
            data = os.pread(f.fileno(), length, start) if length else b""
            if len(data) != length:
                raise ChangedWhileReadError(path)
            chunk = ColumnChunk(data, start, codec, plan.optional, num_values)
            while True:
                try:
                    piece = chunk.read(batch_bytes, limit)
                except ValueError as exc:
                    raise InputError(f"{path}: corrupt Parquet file after {rows} rows (row group {g}: "
                                     f"{exc})") from None
                if piece is None:
                    break
                rows += len(piece[1]) - 1
                yield piece


def _open_parquet(path: str, text_column: str) -> tuple[Any, Any]:
    """(pyarrow.parquet.ParquetFile, the pyarrow module) of a Parquet file holding a string column
    text_column; ImportError without pyarrow, the OSError of a file that cannot be opened (naming it, as for any
    input), InputError naming the file for anything else."""
    try:
        import pyarrow            # not pyarrow.compute: 0.07 s more to import, needed only for nulls
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError(f"{path}: reading Parquet needs the pyarrow package "
                          f"(pip install 'bpe_fast[parquet]')") from None
    try:
        parquet = pq.ParquetFile(path)
    except (OSError, pyarrow.ArrowException, UnicodeDecodeError) as exc:
        if isinstance(exc, OSError) and exc.errno and not isinstance(exc, pyarrow.ArrowException):
            # a file that cannot be opened is named as any other input's (pyarrow's "Failed to open local file")
            raise type(exc)(exc.errno, os.strerror(exc.errno), path) from None
        # (UnicodeDecodeError: a damaged footer whose column names are not UTF-8, which pyarrow decodes)
        raise InputError(f"{path}: not a Parquet file ({_message_line(exc)})") from None
    names = parquet.schema_arrow.names
    if text_column not in names:
        parquet.close()
        raise InputError(f"{path}: no column {text_column!r} (columns: {names}); choose one with "
                         f"text_column= (CLI: --text-column)")
    if names.count(text_column) > 1:        # (pyarrow's field() is a bare KeyError then)
        parquet.close()
        raise InputError(f"{path}: {names.count(text_column)} columns named {text_column!r} (columns: {names}): "
                         "which one holds the text is not known")
    kind = parquet.schema_arrow.field(text_column).type
    if pyarrow.types.is_dictionary(kind):       # dictionary-encoded strings (a pandas categorical column)
        kind = kind.value_type
    if not (pyarrow.types.is_string(kind) or pyarrow.types.is_large_string(kind)
            or getattr(pyarrow.types, "is_string_view", lambda t: False)(kind)):
        parquet.close()
        raise InputError(f"{path}: column {text_column!r} is {kind}, not strings")
    return parquet, pyarrow


def parquet_row_groups(path: str, text_column: str) -> tuple[list[int], list[int]]:
    """(the text column's uncompressed bytes in each row group, the rows in each) of a Parquet file, checked as
    _open_parquet checks it (from the footer read natively when the native reader reads the file)."""
    plan = _planned(path, text_column)
    if plan is not None:
        return [chunk[1] for chunk in plan.chunks], [chunk[0] for chunk in plan.chunks]
    parquet, _ = _open_parquet(path, text_column)
    with parquet:
        meta = parquet.metadata
        index = _parquet_leaf(parquet, text_column)
        groups = [meta.row_group(g) for g in range(meta.num_row_groups)]
        return [group.column(index).total_uncompressed_size for group in groups], [group.num_rows for group in groups]


def _parquet_leaf(parquet: Any, text_column: str) -> int:
    """The index of the column text_column among the file's Parquet leaf columns (what a row group's metadata
    is indexed by: a struct or list column before it has several leaves, so this is not its Arrow field index)."""
    schema = parquet.metadata.schema
    return [schema.column(i).path for i in range(len(schema))].index(text_column)


def parquet_row_group_batches(path: str, groups: Sequence[int], first: int, text_column: str,
                              batch_bytes: int) -> Iterator[Batch]:
    """The Batches of consecutive row groups of a Parquet file, `first` the rows before them (their documents
    numbered in the whole file), for a worker that reads its share of a file itself (count_workers.
    count_unit_tables). The caller knows `first` (a row group alone summed the ones before it, and the file was
    opened for each: 2,000 row groups of 100 rows took 24 s)."""
    plan = _planned(path, text_column)
    if plan is not None:
        pending: list[tuple[Any, NDArray[np.int64]]] = []
        size = 0
        for data, bounds in _native_pieces(path, plan, groups, first, batch_bytes):
            pending.append((data, bounds))
            size += len(data)
            if size >= batch_bytes:
                first = yield from _flush_arrow(pending, path, first)
                size = 0
        yield from _flush_arrow(pending, path, first)
        return
    parquet, pyarrow = _open_parquet(path, text_column)
    with parquet:
        for record_batch in _parquet_record_batches(parquet, path, text_column, batch_bytes, pyarrow, list(groups),
                                                    first):
            data, bounds = _arrow_strings(record_batch.column(0), pyarrow)
            yield Batch(data.tobytes(), bounds, (path, first, None, None))
            first += len(bounds) - 1


def _parquet_pieces(path: str, budget: Budget, batch_bytes: int, text_column: str
                    ) -> Iterator[tuple[Any, NDArray[np.int64]]]:
    """(data, int64 bounds from 0) of the whole file's text column, read natively or by pyarrow."""
    plan = _planned(path, text_column)
    if plan is not None:
        yield from _native_pieces(path, plan, range(len(plan.chunks)), 0, batch_bytes, budget.documents)
        return
    parquet, pyarrow = _open_parquet(path, text_column)
    with parquet:
        for record_batch in _parquet_record_batches(parquet, path, text_column, batch_bytes, pyarrow):
            yield _arrow_strings(record_batch.column(0), pyarrow)


def _parquet_batches(path: str, budget: Budget, batch_bytes: int, text_column: str) -> Iterator[Batch]:
    if budget.spent:            # the caps reached before this file: not opened (nor its empty documents read)
        return
    first = 0
    pending: list[tuple[Any, NDArray[np.int64]]] = []
    size = 0
    for data, bounds in _parquet_pieces(path, budget, batch_bytes, text_column):
        rows = len(bounds) - 1
        if budget.documents is not None and rows > budget.documents:
            rows = budget.documents
            data, bounds = data[:bounds[rows]], bounds[:rows + 1]
        if budget.documents is not None:
            budget.documents -= rows
        if budget.bytes is not None and len(data) >= budget.bytes:      # == : not the empty ones after
            # the documents begun within the cap, the last one cut (to nothing, if need be, as elsewhere) back to
            # a character boundary within it, as an iterable's is cut (a next document beginning with a
            # continuation byte, not UTF-8, cut bytes of the one before)
            rows = int(np.searchsorted(bounds, budget.bytes, side="left"))
            start = int(bounds[rows - 1]) if rows else 0
            keep = start + utf8_boundary(data[start:int(bounds[rows])], budget.bytes - start)
            bounds = np.minimum(bounds[:rows + 1], keep)
            data = data[:keep]
            budget.bytes = 0
        elif budget.bytes is not None:
            budget.bytes -= len(data)
        pending.append((data, bounds))
        size += len(data)
        if size >= batch_bytes or budget.spent:
            first = yield from _flush_arrow(pending, path, first)
            size = 0
        if budget.spent:
            break
    yield from _flush_arrow(pending, path, first)


def _parquet_record_batches(parquet: Any, path: str, text_column: str, batch_bytes: int, pyarrow: Any,
                            row_groups: list[int] | None = None, rows: int = 0) -> Iterator[Any]:
    """The file's record batches of the text column (of the given row groups, None: all), each about
    batch_bytes of text (the row groups' sizes tell the average row's), so that workers get work of even
    sizes. rows: the rows before the first batch (for errors)."""
    meta = parquet.metadata
    index = _parquet_leaf(parquet, text_column)
    text_bytes = sum(meta.row_group(g).column(index).total_uncompressed_size for g in range(meta.num_row_groups))
    per_row = max(1, text_bytes // max(1, meta.num_rows))
    batches = parquet.iter_batches(batch_size=max(16, min(_PARQUET_ROWS, batch_bytes // per_row)),
                                   row_groups=row_groups, columns=[text_column],
                                   use_threads=row_groups is None)     # the workers are the threads
    while True:
        try:
            batch = next(batches, None)
        except (OSError, pyarrow.ArrowException) as exc:
            raise InputError(f"{path}: corrupt Parquet file after {rows} rows ({_message_line(exc)})") from None
        if batch is None:
            return
        rows += batch.num_rows
        yield batch


def _flush_arrow(pending: list[Any], path: str, first: int) -> Generator[Batch, None, int]:
    """One Batch of the pending (data, bounds) pieces (emptied); returns the documents' number after them."""
    if not pending:
        return first
    if len(pending) == 1 and isinstance(pending[0][0], bytes):
        data = pending[0][0]                    # (a native piece: no copy)
    else:
        data = b"".join(bytes(d) for d, _ in pending)
    bounds = [pending[0][1]]
    base = pending[0][1][-1]
    for _, b in pending[1:]:
        bounds.append(b[1:] + base)
        base += b[-1]
    bounds = np.concatenate(bounds)
    yield Batch(data, bounds, (path, first, None, None))
    pending.clear()
    return first + len(bounds) - 1


def _arrow_strings(column: Any, pyarrow: Any) -> tuple[NDArray[np.uint8], NDArray[np.int64]]:
    """(uint8 data from 0, int64 bounds from 0) of an Arrow string column (or dictionary-encoded strings), without
    a Python object a row; a null is an empty document."""
    if pyarrow.types.is_dictionary(column.type):
        column = column.dictionary_decode()
    if not (pyarrow.types.is_string(column.type) or pyarrow.types.is_large_string(column.type)):
        column = column.cast(pyarrow.large_string())    # first: fill_null has no kernel for string_view
    if column.null_count:
        column = column.fill_null("")
    _, offsets_buf, data_buf = column.buffers()
    width = np.int32 if pyarrow.types.is_string(column.type) else np.int64
    offsets = np.frombuffer(offsets_buf, dtype=width, count=column.offset + len(column) + 1)[column.offset:]
    offsets = offsets.astype(np.int64)
    data = np.frombuffer(data_buf, dtype=np.uint8)[offsets[0]:offsets[-1]] if data_buf is not None \
        else np.zeros(0, dtype=np.uint8)
    return data, offsets - offsets[0]
