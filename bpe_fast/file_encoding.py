"""Encoding a large file into a .npy token array, over several workers, in bounded memory.

A plain text file is cut at the same safe points as for training (chunking.py): a special token's start, or,
for the built-in patterns, a space after a printable ASCII character. Encoding each range alone and
concatenating equals encoding the whole text. Workers encode ranges; the caller writes the arrays in
file order into a temporary .npy next to the output, fixes its header, and renames it when complete.

With the built-in patterns the workers are threads: the native encoder runs without the GIL, each thread
takes its own encoder from the tokenizer (bpe_fast.Tokenizer), and the arrays reach the writer without
being copied. With other patterns, pre-tokenizing with `regex` holds the GIL, so the workers are processes
(bpe_fast.procs.worker_pool).

Any other input bpe_fast.inputs reads (a compressed file, JSON lines, Parquet, a pipe) is read as training reads
it, in batches of documents (encode_stream): each document encoded alone, the arrays concatenated in order.
"""
from __future__ import annotations

import contextlib
import itertools
import math
import os
import tokenize
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from concurrent.futures import Future
from typing import IO, TYPE_CHECKING, Any, TypeVar

import numpy as np
from numpy.typing import DTypeLike, NDArray

from .chunking import chunk_boundaries, cuts_at_spaces
from .inputs import (Batch, Budget, CorpusDecodeError, Stream, TextFile, batch_decode_error, check_errors,
                     check_input_file, read_batches, resolve_inputs)
from .atomic import atomic_output, start_writeback
from ._encode import IdBuffer
from .pretokenize import check_documents_utf8
from .procs import (check_chunk_bytes, check_num_processes, check_progress, result_of, thread_pool,
                    usable_processes, worker_pool)
from ._types import Progress, StrPath

if TYPE_CHECKING:
    from .tokenizer import Tokenizer

DEFAULT_CHUNK_BYTES = 1 << 20
_CHUNKS_PER_WORKER = 16     # at least this many ranges a worker, so that the workers finish together
_IN_PROCESS_BYTES = 1 << 20
_WRITEBACK_BYTES = 8 << 20  # the output is handed to the disk this many bytes at a time as it grows
_HEADER_BYTES = 128          # room for any 1-D shape; rewritten in place with the real length
_BATCHES_PER_THREAD = 2      # batches in flight a thread (encode_stream): bounds the memory held by encoded batches

_T = TypeVar("_T")
_R = TypeVar("_R")

_tokenizer: Any = None       # in a worker process: the tokenizer, inherited from the caller (fork) or passed once
_scratch: Any = None         # in a worker process: its _Scratch


class _Scratch:
    """Working buffers for encoding ranges, reused from one range to the next (fresh memory for every range
    costs page faults): pairs of (bytearray for the text, IdBuffer for the ids), one per task running."""

    def __init__(self) -> None:
        self.spare: list[list[Any]] = []

    def take(self) -> list[Any]:
        try:
            return self.spare.pop()
        except IndexError:
            return [bytearray(), IdBuffer()]

    def give(self, pair: list[Any]) -> None:
        self.spare.append(pair)


def _init_worker(tokenizer: Tokenizer) -> None:
    global _tokenizer, _scratch
    _tokenizer = tokenizer
    _scratch = _Scratch()


def _encode_range_in_worker(path: str, start: int, end: int, dtype: np.dtype[Any], errors: str) -> NDArray[Any]:
    return _encode_range(_tokenizer, _scratch, path, start, end, dtype, errors)


def _encode_range(tokenizer: Tokenizer, scratch: _Scratch, path: str, start: int, end: int, dtype: np.dtype[Any],
                  errors: str) -> NDArray[Any]:
    pair = scratch.take()
    try:
        n = end - start
        if len(pair[0]) < n:
            pair[0] = bytearray(n)
        with memoryview(pair[0])[:n] as data:
            with open(path, "rb") as f:
                f.seek(start)
                if f.readinto(data) != n:
                    raise OSError(f"{path} changed while it was being encoded (shorter than expected)")
            try:
                if errors == "strict" and tokenizer.native:
                    return tokenizer.encode_utf8_to_numpy(data, dtype, scratch=pair[1])     # no str made
                return tokenizer.encode_to_numpy(str(data, "utf-8", errors), dtype=dtype)
            except UnicodeDecodeError as exc:
                raise CorpusDecodeError(path, start + exc.start, exc.reason) from None
    finally:
        scratch.give(pair)


def _npy_header(dtype: DTypeLike, length: int) -> bytes:
    """A version 1.0 .npy header of exactly _HEADER_BYTES bytes for a 1-D array."""
    header = repr({"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)), "fortran_order": False,
                   "shape": (length,)})
    body_len = _HEADER_BYTES - 10
    body = header.ljust(body_len - 1) + "\n"
    if len(body) != body_len:
        raise ValueError("npy header does not fit")
    return b"\x93NUMPY\x01\x00" + body_len.to_bytes(2, "little") + body.encode("latin1")


def check_dtype(dtype: DTypeLike | None, vocab_size: int) -> np.dtype[Any]:
    """uint16 when the vocab fits in it and dtype is None; asking for uint16 with a larger vocab is an
    error."""
    if dtype is None:
        dtype = np.uint16 if vocab_size <= 1 << 16 else np.uint32
    dtype = np.dtype(dtype)
    if dtype not in (np.dtype(np.uint16), np.dtype(np.uint32), np.dtype(np.int32), np.dtype(np.int64)):
        raise ValueError(f"dtype must be uint16, uint32, int32 or int64, got {dtype}")
    if vocab_size - 1 > np.iinfo(dtype).max:
        raise ValueError(f"a vocabulary of {vocab_size} tokens does not fit in {dtype} "
                         f"(largest id {vocab_size - 1} > {np.iinfo(dtype).max})")
    return dtype


def encode_file(tokenizer: Tokenizer, input_path: StrPath, output_path: StrPath, *, num_processes: int | None = None,
                dtype: DTypeLike | None = None, errors: str = "strict", chunk_bytes: int | None = None,
                text_field: str = "text", text_column: str = "text", separator: int | str | None = None,
                progress: Progress | None = None) -> int:
    """Encode a corpus file into a .npy array of token ids (load it with np.load(path, mmap_mode="r")).

    A plain UTF-8 text file is one document: the array equals tokenizer.encode(whole text), encoded by byte
    ranges on several workers. Any other file is read as training reads it (bpe_fast.inputs: .gz/.bz2/.xz/.zst,
    JSON lines taking their text from `text_field`, which also decides whether a .json file is JSON lines,
    Parquet from `text_column`): each document encoded alone, the ids concatenated in order, with `separator`
    (None: nothing; an id of the vocabulary, or one of the tokenizer's special tokens) after each (a text file:
    after it), as encode_files writes them. dtype defaults to uint16 when the vocab fits, else uint32. The output appears only when complete (written to
    a temporary name, then renamed).
    num_processes: how many workers encode at once (None: one per CPU core); threads of this process for
    the built-in patterns, processes for other patterns (see the module docstring). progress, if given, is
    called as progress("encode", bytes_done, bytes_total), bytes_total None while a file read as it comes
    (not a plain text file) is being encoded: bytes_done is then its documents' bytes. Returns the number of
    tokens written.
    """
    input_path = check_input_file(input_path)
    _check_not_the_input(input_path, output_path)
    for name, value in (("text_field", text_field), ("text_column", text_column)):
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    source = resolve_inputs(input_path, text_field)[0]     # (an existing file: itself, by the readers' own rule)
    separator = check_separator(separator, tokenizer)
    if isinstance(source, TextFile) and separator is None:
        return encode_text_file(tokenizer, source.path, output_path, num_processes=num_processes, dtype=dtype,
                                errors=errors, chunk_bytes=chunk_bytes, progress=progress)
    _check_output_folder(output_path)
    chunk_bytes = check_chunk_bytes(chunk_bytes, DEFAULT_CHUNK_BYTES)
    check_progress(progress)
    try:
        count = encode_source(tokenizer, source, output_path, dtype=check_dtype(dtype, tokenizer.vocab_size),
                              errors=check_errors(errors), separator=separator, text_field=text_field,
                              text_column=text_column, num_workers=check_num_processes(num_processes),
                              batch_bytes=chunk_bytes, progress=progress)
    except CorpusDecodeError as exc:
        # an offset in a text file read as one document (with a separator) or in a compressed text file's
        # decompressed bytes: its line too, as in a plain text file read by byte ranges
        raise exc.with_line(input_path) from None
    if progress is not None:
        size = os.path.getsize(input_path) if os.path.isfile(input_path) else 0
        progress("encode", size, size)
    return count


def _check_not_the_input(input_path: str, output_path: StrPath) -> None:
    """A ValueError when output_path names the input file (itself, a link to it, another name of it): the
    finished .npy would be renamed over the corpus."""
    if not isinstance(output_path, (str, bytes, os.PathLike)):
        raise TypeError(f"output_path must be a str or os.PathLike, got {type(output_path).__name__}")
    try:
        same = os.path.samefile(input_path, output_path)
    except OSError:             # (no such output yet, or not to be looked at: the write says why)
        return
    if same:
        raise ValueError(f"output_path {os.fspath(output_path)} is the input file {input_path}: its ids would "
                         "replace the corpus; give another file")


def _check_output_folder(output_path: StrPath) -> None:
    folder = os.path.dirname(os.path.abspath(os.fspath(output_path)))
    if not os.path.isdir(folder):
        raise FileNotFoundError(2, "output folder does not exist", folder)


def encode_text_file(tokenizer: Tokenizer, input_path: str, output_path: StrPath, *, num_processes: int | None = None,
                     dtype: DTypeLike | None = None, errors: str = "strict", chunk_bytes: int | None = None,
                     progress: Callable[[str, int, int], object] | None = None) -> int:
    """encode_file of an existing file its caller found to be a plain text file (a bpe_fast.inputs.TextFile, as
    resolved with the caller's text_field: a .json file of records under another field is text), read by byte
    ranges without resolving it again."""
    output_path = os.fspath(output_path)
    _check_output_folder(output_path)
    dtype = check_dtype(dtype, tokenizer.vocab_size)
    errors = check_errors(errors)
    num_processes = check_num_processes(num_processes)
    chunk_bytes = check_chunk_bytes(chunk_bytes, DEFAULT_CHUNK_BYTES)
    check_progress(progress)

    size = os.path.getsize(input_path)
    if size < _IN_PROCESS_BYTES and chunk_bytes >= size:
        num_processes = 1                 # starting workers would cost more than the work
    bounds = chunk_boundaries(input_path, tokenizer.special_token_set, tokenizer.pattern, chunk_bytes,
                              min_chunks=_CHUNKS_PER_WORKER * num_processes if num_processes > 1 else 1)
    ranges = list(zip(bounds[:-1], bounds[1:]))
    try:
        # closed on any error, the pool's block exited with it: an error raised while an array is written (a full
        # disk, Ctrl-C) left the ranges' generator suspended, its workers running while the error was kept
        with atomic_output(output_path) as out, contextlib.closing(
                _encoded_ranges(tokenizer, input_path, ranges, dtype, errors, num_processes)) as encoded:
            def arrays() -> Iterator[NDArray[Any]]:
                for start, end, ids in encoded:
                    yield ids
                    if progress is not None:
                        progress("encode", end, size)
            count = write_npy(out, dtype, arrays())
        return count
    except CorpusDecodeError as exc:
        raise exc.with_line(input_path) from None


def write_npy(out: IO[bytes], dtype: DTypeLike, arrays: Iterable[NDArray[Any]]) -> int:
    """Write a 1-D .npy of the arrays (of dtype), concatenated as they come, to the binary file object `out`,
    handing what is written to the disk as it grows; returns the length. The header is written first with
    room for any length, then rewritten with the real one; to a file that cannot seek (a pipe), the arrays are
    gathered first and the header written with their length."""
    if not out.seekable():
        held = list(arrays)
        count = sum(len(ids) for ids in held)
        out.write(_npy_header(dtype, count))
        for ids in held:
            out.write(ids.data)
        return count
    out.write(_npy_header(dtype, 0))
    count = 0
    written = synced = _HEADER_BYTES
    for ids in arrays:
        out.write(ids.data)     # its buffer, not a copy (a memoryview: NumPy declares the array one for 3.12+)
        count += len(ids)
        written += ids.nbytes
        if written - synced >= _WRITEBACK_BYTES:
            out.flush()
            start_writeback(out, synced, written - synced)
            synced = written
    out.seek(0)
    out.write(_npy_header(dtype, count))
    return count


def _encoded_ranges(tokenizer: Tokenizer, path: str, ranges: Sequence[tuple[int, int]], dtype: np.dtype[Any],
                    errors: str, num_workers: int) -> Generator[tuple[int, int, NDArray[Any]], None, None]:
    """Yield (start, end, ids) for each range, in file order."""
    if not tokenizer.native:            # (a tokenizer the native encoder does not run encodes in processes)
        num_workers = usable_processes(num_workers)
    if num_workers == 1 or len(ranges) <= 1:
        scratch = _Scratch()
        for start, end in ranges:
            yield start, end, _encode_range(tokenizer, scratch, path, start, end, dtype, errors)
        return
    # (mypy 2 reports submit(task, *first, path, ...) as too few arguments: its bug with ParamSpec and *args)
    task: Any       # _encode_range, or _encode_range_in_worker: called with *first, path, start, ...
    first: Any      # a tuple
    if tokenizer.native:                          # the native encoder: threads
        pool = thread_pool(num_workers, "bpe_fast-encode")
        task, first = _encode_range, (tokenizer, _Scratch())
    else:                                         # `regex` holds the GIL: processes
        pool = worker_pool(num_workers, f"encoding {path}", _init_worker, (tokenizer,))
        task, first = _encode_range_in_worker, ()
    window = 2 * num_workers                # ranges in flight: bounds the memory held by results
    with pool as executor:
        futures: dict[int, Any] = {}
        for i, (start, end) in enumerate(ranges[:window]):
            futures[i] = executor.submit(task, *first, path, start, end, dtype, errors)  # type: ignore[call-arg]
        for i, (start, end) in enumerate(ranges):
            ids = result_of(futures.pop(i), executor)
            j = i + window
            if j < len(ranges):
                futures[j] = executor.submit(task, *first, path, *ranges[j], dtype, errors)  # type: ignore[call-arg]
            yield start, end, ids


def encode_source(tokenizer: Tokenizer, source: TextFile | Stream, output_path: StrPath, *, dtype: np.dtype[Any],
                  errors: str, separator: int | None, text_field: str = "text", text_column: str = "text",
                  num_workers: int = 1, batch_bytes: int | None = None,
                  progress: Progress | None = None) -> int:
    """Encode one resolved input (bpe_fast.inputs) into output_path (atomically), `separator` (an id, or None)
    after each document: a plain text file without a separator by byte ranges (encode_text_file), anything else
    (or with one: a text file is then one document) in batches of documents (encode_stream). Arguments already
    checked (batch_bytes None: DEFAULT_CHUNK_BYTES); returns the number of ids."""
    if isinstance(source, TextFile):
        if separator is None:
            return encode_text_file(tokenizer, source.path, output_path, num_processes=num_workers, dtype=dtype,
                                    errors=errors, progress=progress)
        source = Stream("text", source.path, source.path)     # one document, then the separator
    return encode_stream(tokenizer, source, output_path, dtype=dtype, errors=errors, separator=separator,
                         text_field=text_field, text_column=text_column, num_threads=num_workers,
                         batch_bytes=DEFAULT_CHUNK_BYTES if batch_bytes is None else batch_bytes, progress=progress)


def check_separator(separator: int | str | None, tokenizer: Tokenizer) -> int | None:
    """A separator (None, an id of the vocabulary, or one of the tokenizer's special tokens) as its id, or None."""
    if separator is None:
        return None
    if isinstance(separator, str):
        specials = tokenizer.special_tokens
        if separator not in specials:
            raise ValueError(f"separator {separator!r} is not one of the tokenizer's special tokens "
                             f"{list(specials)}")
        return specials[separator]
    if isinstance(separator, bool) or not isinstance(separator, (int, np.integer)):
        raise TypeError(f"separator must be None, an int id or a special token (str), got "
                        f"{type(separator).__name__}")
    if int(separator) not in tokenizer.vocab:
        raise ValueError(f"separator id {separator} is not in the vocabulary")
    return int(separator)


def encode_stream(tokenizer: Tokenizer, source: Stream, output_path: StrPath, *, dtype: np.dtype[Any], errors: str,
                  separator: int | None = None, text_field: str = "text", text_column: str = "text",
                  num_threads: int = 1, batch_bytes: int = DEFAULT_CHUNK_BYTES, progress: Progress | None = None) -> int:
    """Encode a Stream (bpe_fast.inputs: a compressed text file, JSON lines, Parquet, a pipe) into a .npy at
    output_path (atomically): each document encoded alone (tokenizer.encode), the ids concatenated in order,
    `separator` (an id, or None) after each (a text Stream is one document: after its last piece). Batches of
    about batch_bytes are encoded on num_threads threads. progress, if given, is called as progress("encode",
    the documents' bytes written so far, None) after each batch (the total is not known before reading, as
    in counting a stream). Arguments already checked; returns the number of ids."""
    batches = read_batches(source, Budget(), batch_bytes, tokenizer.special_token_set,
                           cuts_at_spaces(tokenizer.pattern), text_field, text_column, errors)

    one_document = source.kind == "text"       # its batches are pieces: the separator goes after the last
    after_each = None if one_document else separator

    def encode(batch: Batch) -> tuple[NDArray[Any], int]:
        return _encode_batch(tokenizer, batch, dtype, errors, after_each), batch.size

    def reported(encoded: Iterable[tuple[NDArray[Any], int]]) -> Iterator[NDArray[Any]]:
        done = 0
        for ids, size in encoded:
            yield ids
            done += size
            if progress is not None:
                progress("encode", done, None)

    with contextlib.closing(batches), contextlib.closing(_in_order(encode, batches, num_threads)) as encoded:
        arrays: Iterable[NDArray[Any]] = reported(encoded)
        if one_document and separator is not None:
            arrays = itertools.chain(arrays, [np.array([separator], dtype=dtype)])
        with atomic_output(output_path) as out:
            return write_npy(out, dtype, arrays)


def _in_order(func: Callable[[_T], _R], items: Iterable[_T], num_threads: int) -> Generator[_R, None, None]:
    """map(func, items) on num_threads threads, results in order, a few items in flight."""
    if num_threads == 1:
        yield from map(func, items)
        return
    with thread_pool(num_threads, "bpe_fast-encode") as pool:
        pending: deque[Future[_R]] = deque()
        for item in items:
            pending.append(pool.submit(func, item))
            if len(pending) >= _BATCHES_PER_THREAD * num_threads:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def _encode_batch(tokenizer: Tokenizer, batch: Batch, dtype: np.dtype[Any], errors: str,
                  separator: int | None) -> NDArray[Any]:
    """The ids of a Batch's documents (inputs.Batch), each encoded alone, concatenated (with the separator after
    each, unless None), as an array of dtype."""
    data, bounds, _ = batch
    try:
        check_documents_utf8(data, bounds)
    except UnicodeDecodeError as exc:
        if errors == "strict":
            raise batch_decode_error(batch, exc) from None
        data, bounds = _replace_invalid(data, bounds)
    return tokenizer.encode_documents_utf8(data, bounds, dtype, separator)


def _replace_invalid(data: bytes, bounds: NDArray[np.int64]) -> tuple[bytes, NDArray[np.int64]]:
    """(data, bounds) with each document's invalid UTF-8 replaced by U+FFFD, a document at a time (as decoding
    each alone does)."""
    edges = bounds.tolist()
    parts = [data[s:e].decode("utf-8", "replace").encode("utf-8") for s, e in zip(edges[:-1], edges[1:])]
    new = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in parts], out=new[1:])
    return b"".join(parts), new


# What numpy's .npy header reader raises for a damaged header: a header whose brackets do not close is read
# with tokenize, whose TokenError is not a ValueError.
NPY_HEADER_ERRORS = (ValueError, EOFError, SyntaxError, TypeError, tokenize.TokenError)


def read_npy_dtype(path: StrPath | IO[bytes]) -> tuple[np.dtype[Any], tuple[int, ...]]:
    """The dtype and shape of a .npy file (a path or a binary file object), read from its header (for checking
    inputs). A ValueError saying what is wrong if it is not a .npy file, its header is damaged, or its data is
    shorter than the header says (a truncated file: numpy's memory map of it would fail without saying so)."""
    f: Any          # a binary file object: `path`, or the file it names
    with (contextlib.nullcontext(path) if hasattr(path, "read") else open(path, "rb")) as f:
        try:
            version = np.lib.format.read_magic(f)
        except ValueError:      # what it is, not NumPy's "the magic string is not correct; expected b'\x93NUMPY'..."
            f.seek(0)
            head = f.read(4)
            what = ("empty" if not head
                    else "an .npz archive; decode reads one token array, the .npy file encode writes"
                    if head == b"PK\x03\x04" else "it does not start with the .npy magic string")
            raise ValueError(f"not a .npy file ({what})") from None
        try:
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
            else:
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
        except NPY_HEADER_ERRORS as exc:
            reason = str(exc.args[0] if isinstance(exc, tokenize.TokenError) else exc)    # TokenError: (what, where)
            raise ValueError(f"a damaged .npy header ({(reason.splitlines() or [type(exc).__name__])[0]})") from None
        data_start = f.tell()
        data_bytes = f.seek(0, os.SEEK_END) - data_start
    if any(n < 0 for n in shape):           # (NumPy's header reader takes them; its arrays then fail unnamed)
        raise ValueError(f"a damaged .npy header (a negative dimension in its shape {shape})")
    need = math.prod(shape) * dtype.itemsize
    if not dtype.hasobject and data_bytes < need:       # (an object array's data is a pickle, of any length)
        raise ValueError(f"a truncated .npy file: its header says {math.prod(shape):,} values of {dtype} "
                         f"({need:,} bytes), {data_bytes:,} bytes follow it")
    return dtype, shape

