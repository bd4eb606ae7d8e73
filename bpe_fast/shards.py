"""Encoding a corpus of shards: one .npy token array per input file and an index, locally or on Dask, resumable.

    encode_files(["data/shard-00.jsonl.gz", "data/shard-01.jsonl.gz"], "tokens/", tokenizer)

writes tokens/shard-00.npy, tokens/shard-01.npy (load them with np.load(path, mmap_mode="r")) and
tokens/index.json. Inputs are read as bpe_fast.inputs reads them: an uncompressed text file is one document and
is encoded by encode_file (its fast path: byte ranges on several workers); a compressed text file is one document
read in pieces cut at safe points; each JSON line and each Parquet row is a document. A shard's array is its
documents' ids, concatenated in order: each document is encoded alone (tokenizer.encode(document), special
tokens matched), and nothing is put between documents unless `separator` asks for it.

Every file appears only when complete (bpe_fast.atomic); the temporary files of a run that was killed (SIGKILL,
a power cut) are removed by the next run into the folder. A shard whose .npy is complete (a valid 1-D .npy of the
dtype asked for, as long as its header says) and listed in index.json is not encoded again, so a run that stopped
(an error, a crash, Ctrl-C) is resumed by calling encode_files again with the same arguments. index.json is
written before the first shard, after a shard once a second has passed since the last write (at most a twentieth
of the time goes to it; at least every 30 s) and at the end, listing the shards done ("complete": false until the
last); it records what the arrays depend on (a digest of the tokenizer, the separator, the field and column
read), so that a later run into the same folder with other settings, even after a run that stopped, is refused
rather than mixing arrays of two tokenizers; and each shard's input (its real path, size and modification time),
so that a shard whose input changed since, or is another file of that name, is encoded again; and each array's
own size and modification time, so that one written to since it was complete (even at the same length) is
encoded again. A shard the index does not list with them (completed after the index's last rewrite by a run
that was killed), and any array in a folder without index.json, is encoded again too.

Locally the shards are encoded one after another, each on num_processes workers. With a dask.distributed
Client each shard not yet complete is one task; the workers read the inputs and write the outputs themselves,
so every worker must see the input files and out_dir at the same paths (a shared file system).
"""
from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import time
import uuid
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from typing import Any, NoReturn, TypeVar, Union

import numpy as np
from numpy.typing import DTypeLike

from .atomic import atomic_output, staged_key, staged_target
from .file_encoding import NPY_HEADER_ERRORS, check_dtype, check_separator, encode_source
from .inputs import (COMPRESSIONS, CorpusDecodeError, InputError, Stream, TextFile, check_errors,
                     resolve_inputs)
from .procs import check_num_processes, check_progress
from ._types import Progress, StrPath
from .tokenizer import Tokenizer

_T = TypeVar("_T")
# (dtype, errors, separator id or None, text_field, text_column)
_Options = tuple[np.dtype[Any], str, Union[int, None], str, str]

__all__ = ["encode_files", "INDEX_FILE", "output_name"]

INDEX_FILE = "index.json"
_INDEX_FORMAT = "bpe_fast.shards"
_INDEX_VERSION = 1
# what the arrays depend on (errors: an index without it, of a version before it was recorded, is taken as any)
_SETTINGS = ("tokenizer_sha256", "separator", "errors", "text_field", "text_column")
_INDEX_EVERY = 30.0             # the most seconds between the index.json writes of a run (see encode_files)
_INDEX_AFTER = 1.0              # the fewest, plus twenty times what the last write took
SETTLE_SECONDS = 10.0           # on a Dask task's error, how long the tasks still running are waited for


def encode_files(paths: StrPath | Sequence[StrPath], out_dir: StrPath, tokenizer: Tokenizer, *, client: Any = None,
                 num_processes: int | None = None, dtype: DTypeLike | None = None, errors: str = "strict",
                 separator: int | str | None = None, text_field: str = "text", text_column: str = "text",
                 progress: Callable[[str, int, int], object] | None = None) -> dict[str, Any]:
    """Encode each input file into `out_dir`/<name>.npy and write `out_dir`/index.json; returns the index.

    paths: a path, a directory (its files), a glob, or a list of those (bpe_fast.inputs); not an iterable of
    texts (TypeError). The output name is the input's name without its compression and format suffixes
    (shard-00.jsonl.gz -> shard-00.npy); two inputs with the same output name are a ValueError before anything
    is written. out_dir is created if missing; it may be the inputs' folder (a directory or glob there does not
    take this encoding's index.json and arrays for inputs, so the same call resumes).

    A shard's array is the ids of its documents, each encoded alone as tokenizer.encode does it (special tokens
    matched), concatenated in order; `separator` (None, an id of the vocabulary, or one of the tokenizer's
    special tokens) is appended after each document. A text file is one document. JSON lines take their text
    from `text_field`, Parquet files from `text_column`. dtype: as encode_file's (default uint16 when the vocab
    fits). errors: "strict" (invalid UTF-8 is a CorpusDecodeError) or "replace" (U+FFFD).

    Shards whose .npy is complete already are skipped (resuming) if index.json lists them with their input's
    real path, size and modification time as they are now, and the .npy's own; others are encoded again (a
    shard whose input changed or is another file, one whose array was written to since, and one completed after
    the index's last rewrite by a run that was killed: its input may have changed since). With no index.json,
    no array is kept (nothing says what wrote it). If one shard fails, the error names it and no file of it
    is left; the shards completed stay, listed in index.json with "complete": false. The shards are encoded
    locally one after another, each on num_processes workers (None: every core; see encode_file), or with
    `client` (a dask.distributed.Client) as one task a shard on the cluster, each on num_processes threads
    (None: 1).
    progress, if given, is called as progress("encode", input_bytes_done, input_bytes_total) (sizes of the
    input files as stored, compressed or not).

    The index (also written as JSON) is a dict: "format" ("bpe_fast.shards"), "version" (1), "complete" (True
    once every shard is done), "vocab_size",
    "dtype", "tokens" (the total), the settings the arrays depend on ("tokenizer_sha256", "separator" (an id or
    None), "errors", "text_field", "text_column") and
    "shards": one {"path": input path as given, "file": output file name, "tokens": n, "dtype": ..., "input":
    {"bytes": size, "mtime_ns": modification time, "real_path": os.path.realpath of it}, "output": {"bytes",
    "mtime_ns"} of the .npy} a shard, in input order.
    """
    if not isinstance(tokenizer, Tokenizer):
        raise TypeError(f"tokenizer must be a bpe_fast.Tokenizer, got {type(tokenizer).__name__}")
    for name, value in (("text_field", text_field), ("text_column", text_column)):
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    sources = _resolve_files(paths, text_field, os.fspath(out_dir))
    dtype = check_dtype(dtype, tokenizer.vocab_size)
    errors = check_errors(errors)
    check_progress(progress)
    separator = check_separator(separator, tokenizer)
    if client is None:
        num_processes = check_num_processes(num_processes)
    else:
        from .dask_counts import check_client
        check_client(client, "encode_files")
        num_processes = 1 if num_processes is None else check_num_processes(num_processes)
        _check_regular_files(sources)
    out_dir = os.fspath(out_dir)
    shards = _plan(sources, out_dir)                       # ValueError for clashing names, before any write
    settings = {"tokenizer_sha256": _tokenizer_sha256(tokenizer), "separator": separator, "errors": errors,
                "text_field": text_field, "text_column": text_column}
    os.makedirs(out_dir, exist_ok=True)
    index_path = os.path.join(out_dir, INDEX_FILE)
    earlier = _check_earlier_index(index_path, settings)
    _remove_leftovers(out_dir, {s.name for s in shards})
    # output file name -> its entry in the earlier index
    listed = None if earlier is None else {e["file"]: e for e in earlier["shards"]}
    inputs = [_input_stamp(s.path) for s in shards]

    counts: list[Any] = []                                          # None: to encode
    outputs: list[Any] = []                                         # the stamp of each shard's .npy once done
    for shard, stamp in zip(shards, inputs):
        # A complete .npy is kept only if the earlier index lists it with its input's stamp as it is now, and with
        # its own stamp as it is now. Every run writes the index before its first shard, so one the index does
        # not list (or lists without a stamp, or with another) was written before its input changed, or completed
        # after the index's last rewrite by a run that was then killed (SIGKILL, a power cut): its input may have
        # changed since. An array whose own stamp changed was written to since it was complete (its header and
        # length may still be right). Either is encoded again, and its old array goes now (no later run may take
        # it for this input's). With no index at all, no array is kept: nothing says which tokenizer wrote it (an
        # `encode -o out/a.npy` of another tokenizer, an index deleted; helper-147). The input's stamp holds its
        # real path: another input of the same name, size and time (b/x.txt after a/x.txt) is not it.
        entry = None if listed is None else listed.get(shard.name)
        now = _output_stamp(shard.out_path)
        if entry is not None and entry.get("input") == stamp and entry.get("output", now) == now:
            counts.append(complete_length(shard.out_path, dtype))
        else:
            with contextlib.suppress(FileNotFoundError):
                os.remove(shard.out_path)
            counts.append(None)
        outputs.append(None if counts[-1] is None else now)
    todo = [i for i, n in enumerate(counts) if n is None]
    sizes = [os.path.getsize(s.path) for s in shards]
    report = _Progress(progress, sizes, [i for i, n in enumerate(counts) if n is not None])
    options = (dtype, errors, separator, text_field, text_column)

    def write_index(complete: bool) -> dict[str, Any]:
        """index.json, listing the shards done: written before the first shard (so a run that stops leaves its
        settings, which a later run with others is refused against), after a shard once _INDEX_AFTER seconds
        and twenty times the last write's time have passed since the last (not after each: thousands of shards
        would make rewriting it quadratic; at most a twentieth of the time goes to it) or _INDEX_EVERY seconds,
        when the run stops on an error while shards are encoded, and complete at the end. (A run killed loses
        the shards done since the last write: they are encoded again.)"""
        done = [i for i, n in enumerate(counts) if n is not None]
        index = {"format": _INDEX_FORMAT, "version": _INDEX_VERSION, "complete": complete,
                 "vocab_size": tokenizer.vocab_size, "dtype": dtype.name,
                 "tokens": int(sum(counts[i] for i in done)), **settings,
                 "shards": [{"path": shards[i].given, "file": shards[i].name, "tokens": int(counts[i]),
                             "dtype": dtype.name, "input": inputs[i], "output": outputs[i]} for i in done]}
        with atomic_output(index_path, "w", encoding="utf-8") as f:
            json.dump(index, f, indent=1)
            f.write("\n")
        return index

    written, cost = time.monotonic(), 0.0        # the last write's end and how long it took

    def timed_write() -> None:
        nonlocal written, cost
        start = time.monotonic()
        write_index(False)
        written = time.monotonic()
        cost = written - start

    def shard_done(i: int) -> None:
        outputs[i] = _output_stamp(shards[i].out_path)
        report.done(i)
        if time.monotonic() - written >= min(_INDEX_EVERY, _INDEX_AFTER + 20 * cost):
            timed_write()

    if todo:
        timed_write()
        try:
            if client is None:
                for i in todo:
                    try:
                        counts[i] = _encode_shard(tokenizer, shards[i].source, shards[i].out_path, options,
                                                  num_processes, report.within(i))
                    except Exception as exc:
                        if exc is report.raised:        # the progress function's own: the caller's, as it is
                            raise
                        _raise_naming(exc, shards[i])
                    shard_done(i)
            else:
                with contextlib.closing(_encode_on_dask(client, tokenizer, shards, todo, options,
                                                        num_processes)) as results:
                    for i, count in results:
                        counts[i] = count
                        shard_done(i)
                # a task whose worker died while it wrote left its temporary file (its rerun wrote the shard)
                _remove_leftovers(out_dir, {s.name for s in shards})
        except BaseException:
            with contextlib.suppress(Exception):
                write_index(False)          # the shards done, with their inputs' stamps, for the next run
            raise
    return write_index(True)


def _remove_leftovers(out_dir: str, names: set[str]) -> None:
    """Remove the temporary files of these outputs and of index.json that a run killed while it wrote them
    (SIGKILL, the OOM killer, a power cut) left in out_dir: atomic_output removes its own on any error it sees,
    not on those."""
    keys = {staged_key(name, out_dir) for name in names} | {staged_key(INDEX_FILE, out_dir)}
    for entry in os.listdir(out_dir):
        if staged_target(entry) in keys:
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(out_dir, entry))


def _file_stamp(path: str) -> dict[str, int]:
    """What shows that a file changed: its size and modification time."""
    st = os.stat(path)
    return {"bytes": st.st_size, "mtime_ns": st.st_mtime_ns}


def _input_stamp(path: str) -> dict[str, Any]:
    """An input's stamp: which file (its real path) and how it was."""
    return {**_file_stamp(path), "real_path": os.path.realpath(path)}


def _output_stamp(path: str) -> dict[str, int] | None:
    """The stamp of an output array, None when it is missing."""
    try:
        return _file_stamp(path)
    except FileNotFoundError:
        return None


# ---- checking and planning (the caller's process) ----------------------------------------------------------

class _Shard:
    """One input: its source (bpe_fast.inputs), the path as given, the absolute path, the output."""

    def __init__(self, source: TextFile | Stream, out_dir: str) -> None:
        self.given = _given(source)
        self.path = os.path.abspath(self.given)
        self.source = TextFile(self.path) if isinstance(source, TextFile) else \
            Stream(source.kind, self.path, self.given)      # read by absolute path; errors name it as given
        self.name = output_name(self.given)
        self.out_path = os.path.abspath(os.path.join(out_dir, self.name))


def _resolve_files(paths: StrPath | Sequence[StrPath], text_field: str, out_dir: str) -> list[TextFile | Stream]:
    """The sources of `paths`; of a directory or glob, not out_dir's index.json, the arrays it lists, nor any
    other .npy in out_dir (a folder encoded into itself, `encode_files("d", "d")`, is resumed as any other: its
    outputs are not inputs, those of a run killed before its index listed them and those of an input since
    removed neither; a .npy there could not be encoded into it anyway, its output being itself). One named on
    its own stays (and is refused as an output, by _plan)."""
    items: list[Any] = list(paths) if isinstance(paths, (list, tuple)) else [paths]
    for item in items:
        if not isinstance(item, (str, bytes, os.PathLike)):
            raise TypeError(f"encode_files needs files (a path, a directory or a glob, or a list of them), got "
                            f"{type(item).__name__}")
    expanded = [os.path.isdir(p) or not os.path.exists(p) for p in map(os.fsdecode, items)]   # (a glob)
    if not any(expanded):               # files only (resolve_inputs names an empty list): looked up together
        return resolve_inputs(items, text_field)
    own = _listed_outputs(out_dir)
    folder = os.path.realpath(out_dir)
    sources: list[TextFile | Stream] = []
    for item, expand in zip(items, expanded):
        found = resolve_inputs(item, text_field)
        if expand:
            real = [os.path.realpath(_given(source)) for source in found]
            found = [source for source, path in zip(found, real) if path not in own
                     and not (path.endswith(".npy") and os.path.dirname(path) == folder)]
            if not found:
                raise FileNotFoundError(2, f"holds no files but the outputs of encoding into {out_dir}",
                                        os.fsdecode(item))
        sources.extend(found)
    return sources


def _listed_outputs(out_dir: str) -> set[str]:
    """The real paths of out_dir's index.json and of the arrays it lists, when it is an index of encode_files
    (else, or when it cannot be read, none: what is wrong with it is _check_earlier_index's to say)."""
    index_path = os.path.join(out_dir, INDEX_FILE)
    try:
        with open(index_path, "rb") as f:
            index = json.loads(f.read())
    except (OSError, ValueError, RecursionError):
        return set()
    if not isinstance(index, dict) or index.get("format") != _INDEX_FORMAT or not isinstance(index.get("shards"), list):
        return set()
    files = [e["file"] for e in index["shards"] if isinstance(e, dict) and isinstance(e.get("file"), str)]
    return {os.path.realpath(os.path.join(out_dir, name)) for name in [INDEX_FILE, *files]
            if os.path.basename(name) == name}


def _given(source: TextFile | Stream) -> str:
    """The path of a source as its input named it."""
    return source.path if isinstance(source, TextFile) else source.name


def output_name(path: StrPath) -> str:
    """The .npy name of an input: its file name without a compression suffix and then its format suffix (the
    last, when it holds a letter: not a shard's number, as split -d names them).

    >>> output_name("data/shard-00.jsonl.gz"), output_name("a.b.txt"), output_name("README")
    ('shard-00.npy', 'a.b.npy', 'README.npy')
    >>> output_name("corpus.txt.00"), output_name("data.v1.5")
    ('corpus.txt.00.npy', 'data.v1.5.npy')
    """
    base = os.path.basename(os.fsdecode(path))
    lower = base.lower()
    for suffix in COMPRESSIONS:
        if lower.endswith(suffix) and len(base) > len(suffix):
            base = base[:-len(suffix)]
            break
    stem, suffix = os.path.splitext(base)
    return (stem if stem and any(c.isalpha() for c in suffix) else base) + ".npy"


def _plan(sources: Iterable[TextFile | Stream], out_dir: str) -> list[_Shard]:
    shards = [_Shard(source, out_dir) for source in sources]
    first: dict[str, _Shard] = {}
    for shard in shards:
        key = shard.name.casefold()     # a case-insensitive file system would make these one file
        if key in first and os.path.realpath(first[key].path) == os.path.realpath(shard.path):
            raise ValueError(f"{first[key].given} and {shard.given} are one file, given twice; give each input once")
        if key in first:
            raise ValueError(f"{first[key].given} and {shard.given} would both be encoded into {shard.name} "
                             f"(output names come from the input names); rename one, or encode them into "
                             f"separate folders")
        first[key] = shard
    for name in [s.name for s in shards] + [INDEX_FILE]:     # (found only when its shard was written, after others)
        if os.path.isdir(os.path.join(out_dir, name)):
            raise ValueError(f"{os.path.join(out_dir, name)} is a folder; the output of that name cannot replace it")
    outputs = {os.path.realpath(s.out_path) for s in shards} | {os.path.realpath(os.path.join(out_dir, INDEX_FILE))}
    for shard in shards:
        if os.path.realpath(shard.path) in outputs:
            raise ValueError(f"{shard.given} is an input and would be overwritten by an output; choose another "
                             f"out_dir")
    return shards


def _check_regular_files(sources: Iterable[TextFile | Stream]) -> None:
    """A ValueError naming the first input that is not a regular file (a named pipe, /dev/stdin, <(cmd) as
    /dev/fd/N): a worker would open that path on its own machine, in its own process (its stdin, its fd N)."""
    for source in sources:
        path = source.path if isinstance(source, TextFile) else source.obj
        if isinstance(path, str) and not os.path.isfile(path):
            name = source.path if isinstance(source, TextFile) else source.name
            raise ValueError(f"{name}: not a regular file (a pipe?); with a Dask client the workers open each input "
                             f"by its path: encode it without client=")


def _tokenizer_sha256(tokenizer: Tokenizer) -> str:
    """A digest of what the ids depend on: the vocabulary, the merges, the special tokens and the pattern, and how
    text is read when not as by default (a normalizer, special tokens that take the white space before them, the
    Unicode version: the digest of a tokenizer without them is what it was before they were)."""
    h = hashlib.sha256()
    h.update(json.dumps([tokenizer.pattern, list(tokenizer.special_tokens.items())]).encode("utf-8"))
    reading = {key: value for key, value in (("normalizer", tokenizer.normalizer),
                                             ("special_lstrip", sorted(tokenizer.special_lstrip)),
                                             ("unicode", tokenizer.unicode)) if value}
    if reading:
        h.update(json.dumps(reading).encode("utf-8"))
    vocab = tokenizer.vocab
    ids = sorted(vocab)
    tokens = list(map(vocab.__getitem__, ids))
    merged = list(itertools.chain.from_iterable(tokenizer.merges))
    for parts in (tokens, merged):
        h.update(np.fromiter(map(len, parts), dtype=np.int64, count=len(parts)).tobytes())
        h.update(b"".join(parts))
    h.update(np.array(ids, dtype=np.int64).tobytes())
    h.update(np.array([len(ids), len(merged)], dtype=np.int64).tobytes())
    return h.hexdigest()


def _check_earlier_index(index_path: str, settings: dict[str, Any]) -> dict[str, Any] | None:
    """The index an earlier run left in out_dir (None if none); a ValueError if it is of a run with other
    settings (its arrays would be kept), or is not an index or a damaged one (its "shards" not a list of
    {"file": name, ...}), naming it."""
    try:
        with open(index_path, "rb") as f:
            earlier = json.loads(f.read())
    except FileNotFoundError:
        return None
    except ValueError as exc:
        raise ValueError(f"{index_path} is not a bpe_fast shard index ({exc}); encode into another folder") from None
    except RecursionError:
        raise ValueError(f"{index_path} is not a bpe_fast shard index (JSON nested too deeply); encode into "
                         f"another folder") from None
    if not isinstance(earlier, dict) or earlier.get("format") != _INDEX_FORMAT:
        raise ValueError(f"{index_path} is not a bpe_fast shard index; encode into another folder")
    changed = [key for key in _SETTINGS
               if earlier.get(key, settings[key] if key == "errors" else None) != settings[key]]
    if changed:
        what = " and ".join({"tokenizer_sha256": "tokenizer", "errors": "errors setting"}.get(key, key)
                            for key in changed)
        raise ValueError(f"{os.path.dirname(index_path) or '.'} holds shards encoded with another {what} "
                         f"({index_path}); encode into another folder, or delete its files to encode again")
    # what encode_files reads of the shards listed (which arrays it keeps depends on it)
    entries, damage = earlier.get("shards"), None
    if not isinstance(entries, list):
        damage = '"shards" is not a list'
    else:
        bad = [k for k, e in enumerate(entries) if not (isinstance(e, dict) and isinstance(e.get("file"), str))]
        if bad:
            damage = f'shard entry {bad[0]} is not {{"file": name, ...}}'
    if damage is not None:
        raise ValueError(f"{index_path} is a damaged bpe_fast shard index ({damage}); encode into another folder, "
                         f"or delete its files to encode again")
    return earlier


def complete_length(path: StrPath, dtype: np.dtype[Any]) -> int | None:
    """The length of the array in `path` if it is a complete 1-D .npy of `dtype` (its header's length of data
    is the file's), else None (missing, truncated, another dtype or shape, not a .npy)."""
    try:
        with open(path, "rb") as f:
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                shape, fortran, found = np.lib.format.read_array_header_1_0(f)
            else:
                shape, fortran, found = np.lib.format.read_array_header_2_0(f)
            size = os.fstat(f.fileno()).st_size
            data_start = f.tell()
    except FileNotFoundError:
        return None
    except (OSError, *NPY_HEADER_ERRORS):
        return None
    if fortran or len(shape) != 1 or found != dtype or data_start + shape[0] * found.itemsize != size:
        return None
    return shape[0]


class _Progress:
    """progress("encode", bytes done, bytes total) over the shards' input sizes."""

    def __init__(self, progress: Callable[[str, int, int], object] | None, sizes: Sequence[int],
                 done: Iterable[int]) -> None:
        self.progress, self.sizes = progress, sizes
        self.raised: BaseException | None = None     # what the progress function raised within a shard
        self.total = sum(sizes)
        self.bytes = sum(sizes[i] for i in done)
        if progress is not None and done:
            progress("encode", self.bytes, self.total)

    def done(self, i: int) -> None:
        self.bytes += self.sizes[i]
        if self.progress is not None:
            self.progress("encode", self.bytes, self.total)

    def within(self, i: int) -> Progress | None:
        """A progress function for encode_file on shard i (bytes of it done), or None. A stream's reports (of
        its decompressed bytes, total None) are not in the units of the shards' sizes: left out."""
        if self.progress is None:
            return None
        progress = self.progress

        def within(stage: str, done: int, total: int | None) -> None:
            if total is not None:
                try:
                    progress("encode", self.bytes + min(done, self.sizes[i]), self.total)
                except BaseException as exc:
                    self.raised = exc
                    raise
        return within


def _raise_naming(exc: Exception, shard: _Shard) -> NoReturn:
    """Raise exc (being handled) to the caller naming the shard: a CorpusDecodeError with the path as given (and
    the line, in a text file); an error whose message names the shard as it is; any other in a RuntimeError
    naming the shard."""
    if isinstance(exc, CorpusDecodeError):     # (a pipe is not read again: it gave line 1)
        raise exc.with_line(shard.path, name=shard.given) from None
    message = str(exc)
    # the shard is read by its absolute path: its errors (a JSON line's, a Parquet file's, open's) named that, where
    # count and train name the input as the user typed it
    if shard.path != shard.given:
        if isinstance(exc, InputError) and shard.path in message:
            raise InputError(message.replace(shard.path, shard.given)) from None
        if isinstance(exc, OSError) and exc.filename == shard.path and exc.filename2 is None:
            raise type(exc)(exc.errno, exc.strerror, shard.given) from None
    if shard.given in message or shard.path in message:
        raise exc
    raise RuntimeError(f"encoding {shard.given} into {shard.out_path} failed: {type(exc).__name__}: {exc}") from exc


# ---- encoding one shard (here or on a Dask worker) ---------------------------------------------------------

def _encode_shard(tokenizer: Tokenizer, source: TextFile | Stream, out_path: str, options: _Options, num_workers: int,
                  progress: Progress | None = None) -> int:
    """Encode one source into out_path (atomically); returns the number of ids."""
    dtype, errors, separator, text_field, text_column = options
    return encode_source(tokenizer, source, out_path, dtype=dtype, errors=errors, separator=separator,
                         text_field=text_field, text_column=text_column, num_workers=num_workers, progress=progress)


# ---- on a Dask cluster -------------------------------------------------------------------------------------

def _encode_on_dask(client: Any, tokenizer: Tokenizer, shards: Sequence[_Shard], todo: Iterable[int], options: _Options,
                    num_threads: int) -> Generator[tuple[int, int], None, None]:
    """Yield (i, count) for each shard i of todo as its task finishes, one task a shard; on an error, cancel the
    rest and raise it naming the shard."""
    from distributed import as_completed

    from .dask_counts import RETRIES, cluster_failure

    run = uuid.uuid4().hex
    # The tokenizer is a task's result, sent to the cluster once and fetched by each worker that needs it; unlike
    # client.scatter, it waits for workers to join (as count_pretokens' tasks do), and it is rebuilt if the worker
    # holding it dies.
    tokenizer_future = client.submit(_same, tokenizer, key=f"bpe_fast-tokenizer-{run}", retries=RETRIES)
    futures: dict[Any, int] = {}
    try:
        for i in todo:
            shard = shards[i]
            future = client.submit(_encode_task, tokenizer_future, shard.source, shard.out_path, options,
                                   num_threads, os.path.getsize(shard.path), key=f"bpe_fast-encode-{run}-{i}",
                                   retries=RETRIES)      # a key of its own: never taken for another run's
            futures[future] = i
        done: set[Any] = set()
        for future in as_completed(futures):
            i = futures[future]
            try:
                count = future.result()
            except Exception as exc:
                # the tasks still running end with their files written: listed, as the shards done before
                client.cancel([f for f in futures if f not in done and f is not future])
                yield from _finished_anyway(futures, done | {future})
                message = cluster_failure(exc, "encoding")
                if message is not None:
                    raise RuntimeError(f"encoding {shards[i].given} on the Dask cluster failed: "
                                       f"{message}") from exc
                _raise_naming(exc, shards[i])
            done.add(future)
            yield i, count
    finally:
        client.cancel([*futures, tokenizer_future])    # a task already running still ends with a complete file or none


def _finished_anyway(futures: dict[Any, int], seen: set[Any]) -> Iterator[tuple[int, int]]:
    """(i, count) of the tasks not in `seen` that end with their shard written once the others are cancelled (those
    already running), waiting SETTLE_SECONDS for them at most: an error's index lists the files it leaves."""
    from distributed import wait

    rest = [future for future in futures if future not in seen]
    with contextlib.suppress(Exception):
        wait(rest, timeout=SETTLE_SECONDS)
    for future in rest:
        if future.status == "finished":
            yield futures[future], future.result()


def _same(value: _T) -> _T:
    """Task: its argument, kept on the worker (the tokenizer for the encoding tasks)."""
    return value


def _encode_task(tokenizer: Tokenizer, source: TextFile | Stream, out_path: str, options: _Options, num_threads: int,
                 size: int) -> int:
    """Task: encode one shard on a Dask worker; returns the number of ids."""
    from .dask_counts import worker_address

    path = source.path if isinstance(source, TextFile) else source.obj
    where = worker_address()
    try:
        found = os.path.getsize(path)
    except FileNotFoundError:
        raise FileNotFoundError(2, f"shard not found on Dask worker {where} (every worker must see the input "
                                   f"files at the same path)", path) from None
    if found != size:
        raise RuntimeError(f"{path} is {found} bytes on Dask worker {where} but {size} bytes where encode_files "
                           f"was called: every worker must see the same files")
    folder = os.path.dirname(out_path)
    if not os.path.isdir(folder):
        raise FileNotFoundError(2, f"output folder not found on Dask worker {where} (every worker must see "
                                   f"out_dir at the same path)", folder)
    if not os.path.isfile(os.path.join(folder, INDEX_FILE)):     # written there before the first task
        raise FileNotFoundError(2, f"output folder on Dask worker {where} is not the one encode_files wrote "
                                   f"{INDEX_FILE} into (a disk of the worker's own?): every worker must see "
                                   f"out_dir at the same path", folder)
    if isinstance(source, TextFile) and not tokenizer.native:
        # encode_file's workers for a pattern `regex` runs are processes, which a Dask worker (a daemon process)
        # may not start; threads would only take turns holding the GIL
        num_threads = 1
    return _encode_shard(tokenizer, source, out_path, options, num_threads)

