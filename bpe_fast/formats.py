"""GPT-2's tokenizer files: the byte<->unicode mapping, vocab.json and merges.txt.

GPT-2 writes each token (a bytes object) as a str in which every byte is one printable character: bytes
``!``..``~``, ``¡``..``¬`` and ``®``..``ÿ`` stand for themselves, the other 68 bytes, in increasing order, are
``chr(256)``, ``chr(257)``, ... (so the space byte is ``Ġ``).

- ``vocab.json`` is one JSON object ``{"token": id, ...}``.
- ``merges.txt`` has one merge a line, the two tokens separated by one space, in rank order; an optional first
  line ``#version: ...`` and blank lines are skipped.

Readers reject malformed files with a :class:`FormatError` (a ``ValueError``) naming the file and the line.
Writers go through a temporary file in the same folder and ``os.replace``, so a reader never sees half a file.
No pickle, no eval.
"""
from __future__ import annotations

import codecs
import contextlib
import contextvars
import errno
import functools
import hashlib
import io
import json
import os
import re
import stat
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn, Union

from ._numpy import np
from ._gpt2_files import TokenIndex, mapped_object, mapped_pairs, pack_pairs, parse_merges, parse_vocab, token_list

from ._types import Merges, StrPath, Vocab
from ._limits import MAX_TOKEN_ID, sparsity_problem  # noqa: F401  (exported: the readers' limits)
from .atomic import OutputGroup, atomic_output, folder_lock, identity, output_group, path_identity
from .merge_rule import PAIR_TWICE as _TWICE
from .normalize import check_normalizer
from .pretokenize import check_unicode
from .merge_rule import RuleCheck, list_rule_problem, repeated_merge, rule_difference_of_indices
from .token_arrays import all_distinct, gather_tokens

if TYPE_CHECKING:
    from numpy.typing import NDArray
    from typing_extensions import TypeAlias

__all__ = [
    "FormatError",
    "MAX_TOKEN_ID",
    "bytes_to_unicode",
    "unicode_to_bytes",
    "token_to_str",
    "str_to_token",
    "tokens_to_strs",
    "merge_strs",
    "strs_to_tokens",
    "read_vocab",
    "read_merges",
    "write_vocab",
    "write_merges",
    "write_text_atomic",
    "VOCAB_FILE",
    "MERGES_FILE",
    "CONFIG_FILE",
    "save_tokenizer_files",
    "load_tokenizer_files",
    "load_tokenizer_folder",
    "read_folder_arrays",
    "read_config",
    "CACHE_FILE",
    "CACHE_MIN_TOKENS",
    "write_cache",
    "read_cache",
    "cache_not_used",
]


# the encoder's table arrays by name (_CACHE_TABLES), as bpe_fast._encode.BPETables takes them
TableArrays: TypeAlias = "dict[str, NDArray[Any]]"
# merges, or (read from the cache) a function that makes the list when first needed
MergesSource = Union[Merges, Callable[[], Merges]]


class FormatError(ValueError):
    """A tokenizer file is malformed. The message starts with ``path:line:``."""

    def __init__(self, path: StrPath, line: int | None, message: str) -> None:
        self.path = os.fspath(path)
        self.line = line
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")


def _byte_table() -> dict[int, str]:
    printable = list(range(ord("!"), ord("~") + 1))
    printable += list(range(ord("¡"), ord("¬") + 1))
    printable += list(range(ord("®"), ord("ÿ") + 1))
    table = {b: chr(b) for b in printable}
    n = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + n)
            n += 1
    return table


_BYTE_TO_CHAR = _byte_table()
_CHAR_TO_BYTE = {c: b for b, c in _BYTE_TO_CHAR.items()}
# bytes.translate/str.translate tables for whole tokens at once
_ENCODE_TABLE = [_BYTE_TO_CHAR[b] for b in range(256)]
# str.translate table taking each mapped character to chr(its byte), so that .encode("latin-1") gives the bytes;
# the 68 characters below 256 that are not in the mapping go to U+FFFF, which latin-1 cannot encode.
_TO_LATIN1: dict[int, str] = {cp: "\uffff" for cp in range(256)}
_TO_LATIN1.update({ord(c): chr(b) for c, b in _CHAR_TO_BYTE.items()})
# The mapping as a codec (C speed): character k of the decoding table stands for byte k.
_DECODING_TABLE = "".join(_ENCODE_TABLE)
_ENCODING_MAP = codecs.charmap_build(_DECODING_TABLE)


@functools.cache
def char_to_byte_table() -> NDArray[np.int16]:
    """The mapping for the native readers (bpe_fast._gpt2_files): code point -> the byte it stands for, or -1
    (a read-only array, made when first asked for: NumPy's import is not every process's)."""
    table = np.full(max(map(ord, _CHAR_TO_BYTE)) + 1, -1, dtype=np.int16)
    table[list(map(ord, _CHAR_TO_BYTE))] = list(_CHAR_TO_BYTE.values())
    table.setflags(write=False)
    return table


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's mapping from each byte value to the character that stands for it.

    >>> bytes_to_unicode()[ord(" ")], bytes_to_unicode()[ord("a")]
    ('Ġ', 'a')
    """
    return dict(_BYTE_TO_CHAR)


def unicode_to_bytes() -> dict[str, int]:
    """The inverse of :func:`bytes_to_unicode`.

    >>> unicode_to_bytes()["Ġ"]
    32
    """
    return dict(_CHAR_TO_BYTE)


def token_to_str(token: bytes) -> str:
    """A token's bytes written with GPT-2's mapping.

    >>> token_to_str(b" the\\n")
    'ĠtheĊ'
    """
    return codecs.charmap_decode(token, "strict", _DECODING_TABLE)[0]


def str_to_token(text: str) -> bytes:
    """The bytes a GPT-2-mapped string stands for; ValueError naming the first character outside the mapping.

    >>> str_to_token("Ġthe")
    b' the'
    """
    try:
        return codecs.charmap_encode(text, "strict", _ENCODING_MAP)[0]
    except UnicodeEncodeError as exc:
        bad = text[exc.start]
        raise ValueError(f"character {bad!r} (U+{ord(bad):04X}) is not in GPT-2's byte mapping") from None


def tokens_to_strs(tokens: Iterable[bytes]) -> list[str]:
    """[token_to_str(t) for t in tokens] (for whole vocabularies: the lookups are bound once).

    >>> tokens_to_strs([b" a", b"\\n"])
    ['Ġa', 'Ċ']
    """
    tokens = tokens if type(tokens) is list else list(tokens)
    if len(tokens) < 64 or not set(map(type, tokens)) <= {bytes}:      # (bytearray, memoryview: one at a time)
        decode, table = codecs.charmap_decode, _DECODING_TABLE
        return [decode(token, "strict", table)[0] for token in tokens]
    return mapped_strs(*pack_tokens(tokens))


_SPLIT = 0xFFFF     # a character no mapped token holds (GPT-2's mapping has none past U+0143): tokens_to_strs' cut
_CHUNK = 1 << 22    # mapped_text's bytes a step: its arrays stay near 50 MB whatever the tokens' size


def pack_tokens(tokens: Sequence[bytes]) -> tuple[NDArray[np.uint8], NDArray[np.int64]]:
    """(pool, ends) of a list of bytes: their bytes end to end (uint8), and where each ends (int64)."""
    pool = np.frombuffer(b"".join(tokens), dtype=np.uint8)
    return pool, np.cumsum(np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens)))


@functools.cache
def _code_points() -> NDArray[np.uint32]:
    """The code point GPT-2's mapping writes for each byte (mapped_text's table; made once, when first asked for)."""
    table = np.array([ord(_BYTE_TO_CHAR[b]) for b in range(256)], dtype=np.uint32)
    table.setflags(write=False)
    return table


def mapped_text(pool: NDArray[np.uint8], ends: NDArray[np.int64], separators: NDArray[np.uint32]) -> str:
    """The tokens of `pool` (token k ends at ends[k], the next one starts there, the first at 0) written with
    GPT-2's mapping (token_to_str), each followed by the character separators[k] (a code point): one str, made
    with no Python object a token (the code points in NumPy, decoded as UTF-32 a few MB at a time).

    >>> mapped_text(np.frombuffer(b" ab\\n", dtype=np.uint8), np.array([2, 4]), np.array([32, 10], dtype=np.uint32))
    'Ġa bĊ\\n'
    """
    parts = []
    code_points = _code_points()
    first = start = 0
    while first < len(ends):
        last = max(first + 1, int(np.searchsorted(ends, start + _CHUNK, side="right")))
        stop = int(ends[last - 1])
        codes = np.insert(code_points[pool[start:stop]], ends[first:last] - start, separators[first:last])
        parts.append(codes.astype("<u4", copy=False).tobytes().decode("utf-32-le"))
        first, start = last, stop
    return "".join(parts)


def merge_strs(merges: Sequence[Sequence[bytes]]) -> list[str]:
    """Each merge as HF's tokenizer.json writes it: its two tokens (token_to_str) with a space between.

    >>> merge_strs([(b" ", b"a"), (b"b", b"c")])
    ['Ġ a', 'b c']
    """
    packed = pack_pairs(merges) if type(merges) is list and merges else None
    if packed is None:
        keys = iter(tokens_to_strs(token for merge in merges for token in merge))
        return [a + " " + b for a, b in zip(keys, keys)]
    pool, offsets = packed
    separators = np.tile(np.array([32, _SPLIT], dtype=np.uint32), len(merges))
    return mapped_text(pool, offsets[1:], separators).split(chr(_SPLIT))[:-1]


def mapped_strs(pool: NDArray[np.uint8], ends: NDArray[np.int64]) -> list[str]:
    """The tokens of `pool` (token k ends at ends[k], as mapped_text) written with GPT-2's mapping (token_to_str).

    >>> mapped_strs(np.frombuffer(b" ab\\n", dtype=np.uint8), np.array([2, 4]))
    ['Ġa', 'bĊ']
    """
    return mapped_text(pool, ends, np.full(len(ends), _SPLIT, dtype=np.uint32)).split(chr(_SPLIT))[:-1]


# each byte's character as the files hold it: as it is (merges.txt), and in a JSON string as json.dumps writes it,
# by json's own escaping: ensure_ascii=False (tokenizer.json: the quote and the backslash escaped, as the mapping
# has no control character) and True (vocab.json: every character past ASCII as \u0120, lowercase hex)
_WRITE_FORMS: dict[str, Callable[[str], str]] = {
    "plain": lambda c: c,
    "json": lambda c: json.encoder.encode_basestring(c)[1:-1],
    "json_ascii": lambda c: json.encoder.encode_basestring_ascii(c)[1:-1],
}


@functools.cache
def _forms(form: str) -> tuple[NDArray[np.uint8], NDArray[np.int64]]:
    """Each byte's character in GPT-2's mapping as the file form `form` writes it (_WRITE_FORMS), in UTF-8, end
    to end (byte c's is table[offsets[c]:offsets[c + 1]]): the native writers' table
    (bpe_fast._gpt2_files.mapped_object), made when first asked for."""
    write = _WRITE_FORMS[form]
    pool, ends = pack_tokens([write(_BYTE_TO_CHAR[b]).encode("utf-8") for b in range(256)])
    return pool, np.concatenate([np.zeros(1, dtype=np.int64), ends])


_WRITE_CHUNK = 1 << 20     # the native writers' bytes a chunk: the text of a 64 MB vocabulary is not made at once


def _chunks(write: Callable[[int, int], tuple[NDArray[np.uint8], int]], n: int) -> Iterator[NDArray[np.uint8]]:
    """The chunks write(first, budget) gives (a native writer: the chunk and where the next starts) from 0 to n."""
    first = 0
    while True:
        chunk, first = write(first, _WRITE_CHUNK)
        yield chunk
        if first >= n:
            return


def json_object_chunks(pool: NDArray[np.uint8], offsets: NDArray[np.int64], which: NDArray[np.int64],
                       ids: NDArray[np.int64], ensure_ascii: bool) -> Iterator[NDArray[np.uint8]]:
    """json.dumps({token_to_str(token which[k]): ids[k] ...}, ensure_ascii=ensure_ascii) in UTF-8, in chunks (uint8
    arrays of about _WRITE_CHUNK bytes) to write one after the other, token j pool[offsets[j]:offsets[j + 1]]:
    made natively, no Python object a token. The keys must be distinct (not checked), the ids ints >= 0.

    >>> pool, offsets = np.frombuffer(b' a"b', dtype=np.uint8), np.array([0, 2, 3, 4])
    >>> print(b"".join(json_object_chunks(pool, offsets, np.array([1, 0]), np.array([7, 18]), True)).decode())
    {"\\"": 7, "\\u0120a": 18}
    >>> print(b"".join(json_object_chunks(pool, offsets, np.array([0, 2]), np.array([7, 8]), False)).decode())
    {"Ġa": 7, "b": 8}
    """
    table, table_offsets = _forms("json_ascii" if ensure_ascii else "json")
    pool, offsets = np.ascontiguousarray(pool, dtype=np.uint8), np.ascontiguousarray(offsets, dtype=np.int64)
    which, ids = np.ascontiguousarray(which, dtype=np.int64), np.ascontiguousarray(ids, dtype=np.int64)
    return _chunks(lambda first, budget: mapped_object(pool, offsets, which, ids, table, table_offsets, first,
                                                       budget), len(which))


def json_merges_chunks(packed: tuple[NDArray[np.uint8], NDArray[np.int64]]) -> Iterator[NDArray[np.uint8]]:
    """json.dumps(merge_strs(merges), ensure_ascii=False) in UTF-8, in chunks as json_object_chunks', made
    natively from the merges as pack_pairs gives them (packed: pool, offsets).

    >>> print(b"".join(json_merges_chunks(pack_pairs([(b" ", b"a"), (b'"', b"b")]))).decode())
    ["Ġ a", "\\" b"]
    """
    table, table_offsets = _forms("json")
    pool, offsets = packed
    return _chunks(lambda first, budget: mapped_pairs(pool, offsets, table, table_offsets, b"[", b'"', b" ", b'"',
                                                      b", ", b"]", first, budget), len(offsets) // 2)


def merge_lines_chunks(packed: tuple[NDArray[np.uint8], NDArray[np.int64]], head: bytes = b""
                       ) -> Iterator[NDArray[np.uint8]]:
    """head and merges.txt's lines (a merge a line: its two tokens, token_to_str, a space between) in UTF-8, in
    chunks as json_object_chunks', made natively from the merges as pack_pairs gives them (packed: pool, offsets).

    >>> b"".join(merge_lines_chunks(pack_pairs([(b" ", b"a"), (b"b", b"\\n")]))).decode()
    'Ġ a\\nb Ċ\\n'
    """
    table, table_offsets = _forms("plain")
    pool, offsets = packed
    return _chunks(lambda first, budget: mapped_pairs(pool, offsets, table, table_offsets, head, b"", b" ", b"\n",
                                                      b"", b"", first, budget), len(offsets) // 2)


def strs_to_tokens(texts: Iterable[str]) -> list[bytes]:
    """[str_to_token(t) for t in texts] (for whole vocabularies); the same ValueError, for the first string
    holding a character outside the mapping.

    >>> strs_to_tokens(["Ġa", "Ċ"])
    [b' a', b'\\n']
    """
    texts = list(texts)
    encode, table = codecs.charmap_encode, _ENCODING_MAP
    try:
        return [encode(text, "strict", table)[0] for text in texts]
    except UnicodeEncodeError:
        for text in texts:
            str_to_token(text)        # raises for the first bad one
        raise                         # not reached


def read_bytes(path: StrPath) -> bytes:
    """The bytes of the file at path (the file a FolderPin holds open under that path, while one is in use);
    FileNotFoundError naming it, and any other OSError naming it too. A path that is not a str, bytes or
    os.PathLike is a TypeError before anything is opened (open() takes an int for a descriptor: the caller's,
    which it would read and then close)."""
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise TypeError(f"a file's path must be a str or os.PathLike, got {type(path).__name__}")
    pinned = _PINNED.get()
    fd = pinned.get(os.path.abspath(path)) if pinned else None
    if fd is not None:
        try:
            return _read_fd(fd)
        except OSError as exc:      # (a directory, an I/O error): a read of a descriptor names no file
            raise OSError(exc.errno, exc.strerror, os.fspath(path)) from None
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise FileNotFoundError(f"{os.fspath(path)}: no such file") from None


def _read_fd(fd: int) -> bytes:
    """The whole file open as fd, read by position (the descriptor's own offset is not used)."""
    size = os.fstat(fd).st_size
    parts: list[bytes] = []
    at = 0
    while True:
        part = os.pread(fd, max(size - at, 1 << 16), at)
        if not part:
            return b"".join(parts)
        parts.append(part)
        at += len(part)


def read_text(path: StrPath, data: bytes | None = None) -> str:
    """The UTF-8 text of the file at path (data: its bytes, if already read); FormatError naming the line and
    byte offset of invalid UTF-8."""
    if data is None:
        data = read_bytes(path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise FormatError(path, line, f"not UTF-8 (byte offset {exc.start})") from None


def parse_json(path: StrPath, text: str, **options: Any) -> Any:
    """json.loads(text, **options) of the file at path; FormatError naming the file (and the line) when the text
    is not JSON (NaN and Infinity, which json.loads takes, included: HF tokenizers refuses them), or nests arrays
    and objects too deeply for json.loads (whose RecursionError would name neither)."""
    try:
        return json.loads(text, parse_constant=refuse_json_constant, **options)
    except json.JSONDecodeError as exc:
        raise FormatError(path, exc.lineno, f"bad JSON: {exc.msg} (column {exc.colno})") from None
    except _JsonConstant as exc:
        constant = str(exc)
        at = next((m.start() for m in _JSON_STRING_OR_CONSTANT.finditer(text) if m.group() == constant), None)
        raise FormatError(path, None if at is None else text.count("\n", 0, at) + 1,
                          f"bad JSON: {constant} is not a JSON value") from None
    except RecursionError:
        raise FormatError(path, None, "bad JSON: arrays or objects nested too deeply") from None


class _JsonConstant(ValueError):
    """NaN, Infinity or -Infinity in a JSON text (json.loads' parse_constant)."""


def refuse_json_constant(constant: str) -> NoReturn:
    """json.loads' parse_constant: NaN, Infinity and -Infinity are not JSON (json.loads takes them)."""
    raise _JsonConstant(constant)


# a JSON string (skipped whole) or one of those constants, to find the line of the first constant
_JSON_STRING_OR_CONSTANT = re.compile(r'"(?:[^"\\]|\\.)*"|-?Infinity|NaN')


_JSON_OBJECT = object()  # stands for any JSON object while reading vocab.json


def _member_line(text: str, index: int) -> int:
    """The line on which the `index`-th member of the top-level JSON object in `text` starts.

    Only called to locate an error, so it may be slower than json.loads.
    """
    decoder = json.JSONDecoder()
    n = len(text)

    def skip(pos: int) -> int:
        while pos < n and text[pos] in " \t\n\r":
            pos += 1
        return pos

    pos = skip(skip(0) + 1)  # past the '{'
    for _ in range(index):
        _, pos = decoder.raw_decode(text, pos)  # the key
        pos = skip(skip(pos) + 1)  # past the ':'
        _, pos = decoder.raw_decode(text, pos)  # the value
        pos = skip(skip(pos) + 1)  # past the ','
    return text.count("\n", 0, pos) + 1


def read_vocab(path: StrPath, data: bytes | None = None) -> Vocab:
    """Read a GPT-2 ``vocab.json`` (data: its bytes, if already read); returns ``dict[int, bytes]`` (id -> token bytes).

    Rejects, naming the file and line: bad JSON, a top level other than an object, an id that is not an int
    (true/false/floats too), an id outside 0..MAX_TOKEN_ID, a duplicate id, a duplicate token, the empty
    token, a token with a character outside GPT-2's byte mapping, ids too sparse for the encoder (sparsity_problem; the line
    of the largest).

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "vocab.json")
    >>> write_vocab(path, {0: b" ", 1: b"a", 2: b" a"})
    >>> print(open(path).read())
    {"\\u0120": 0, "a": 1, "\\u0120a": 2}
    >>> read_vocab(path)
    {0: b' ', 1: b'a', 2: b' a'}
    """
    if data is None:
        data = read_bytes(path)
    parsed = parse_vocab(data, char_to_byte_table(), MAX_TOKEN_ID)
    if parsed is not None:          # plainly well formed (the native reader): left are the duplicates
        tokens = token_list(parsed[0], parsed[1])
        read = dict(zip(parsed[2].tolist(), tokens))
        top = int(parsed[2].max()) if len(tokens) else -1
        if len(read) == len(tokens) == len(set(tokens)) and all(tokens) and not sparsity_problem(top, len(read)):
            return read
    text = read_text(path, data)        # anything else: read here, which names what is wrong
    objects: list[list[tuple[str, Any]]] = []

    def hook(pairs: list[tuple[str, Any]]) -> object:
        objects.append(pairs)
        return _JSON_OBJECT

    parse_json(path, text, object_pairs_hook=hook)
    if not text.lstrip(" \t\n\r").startswith("{"):
        raise FormatError(path, 1, "vocab.json must hold one JSON object {token: id}")
    pairs = objects[-1]  # inner objects complete first, the outermost last

    def fail(index: int, message: str) -> NoReturn:
        raise FormatError(path, _member_line(text, index), message)

    vocab: Vocab = {}
    index_of_token: dict[str, int] = {}
    for index, (key, value) in enumerate(pairs):
        if type(value) is not int:
            shown = "an object" if value is _JSON_OBJECT else json.dumps(value)
            fail(index, f"the id of token {key!r} is not an integer: {shown}")
        if not 0 <= value <= MAX_TOKEN_ID:
            fail(index, f"id {value} of token {key!r} is out of range 0..{MAX_TOKEN_ID}")
        try:
            token = str_to_token(key)
        except ValueError as exc:
            fail(index, f"token {key!r}: {exc}")
        if not token:       # no text encodes to it; the Tokenizer constructor refuses it too
            fail(index, f"the empty token \"\" has id {value}: a token is at least one byte")
        if key in index_of_token:
            first = pairs[index_of_token[key]][1]
            fail(index, f"token {key!r} appears twice (ids {first} and {value})")
        index_of_token[key] = index
        if value in vocab:
            fail(index, f"duplicate id {value}: tokens {token_to_str(vocab[value])!r} and {key!r}")
        vocab[value] = token
    top = max(vocab, default=-1)
    problem = sparsity_problem(top, len(vocab))
    if problem:
        fail(next(index for index, (_, value) in enumerate(pairs) if value == top), problem)
    return vocab


class GPT2Arrays(NamedTuple):
    """GPT-2's vocab.json and merges.txt as arrays (read_gpt2_arrays): vocab token k is
    vocab_pool[vocab_offsets[k]:vocab_offsets[k + 1]] with id vocab_ids[k]; merge k is
    (merge_pool[merge_offsets[2k]:merge_offsets[2k + 1]], merge_pool[merge_offsets[2k + 1]:merge_offsets[2k + 2]]),
    and its join is vocab token joined[k]. all_permanent: tiktoken's ranks rule (the merged tokens ranked by
    their first merge) is known to make every merged token, so each is a permanent entry of the encoder.
    parts: (left, right), merge k's tokens as vocab indices, when whether the ranks rule reads the merges as
    listed is still to be asked (rule_check); None when the reader has asked. distinct: no two vocab tokens have
    the same bytes (known by the reader)."""
    vocab_pool: NDArray[np.uint8]
    vocab_offsets: NDArray[np.int64]
    vocab_ids: NDArray[np.int64]
    merge_pool: NDArray[np.uint8]
    merge_offsets: NDArray[np.int64]
    joined: NDArray[np.int64]
    all_permanent: bool = False
    parts: tuple[NDArray[np.int64], NDArray[np.int64]] | None = None
    distinct: bool = False

    def rule_check(self) -> RuleCheck:
        """bpe_fast.merge_rule's answer for these merges (native; parts must be known)."""
        assert self.parts is not None
        return rule_difference_of_indices(self.vocab_pool, self.vocab_offsets, *self.parts, self.joined)

    def vocab(self) -> Vocab:
        """read_vocab's result."""
        return dict(zip(self.vocab_ids.tolist(), token_list(self.vocab_pool, self.vocab_offsets)))

    def merges(self) -> Merges:
        """read_merges' result."""
        return merges_of_arrays(self.merge_pool, self.merge_offsets)

    def with_tokens(self, tokens: Sequence[bytes], ids: Sequence[int]) -> GPT2Arrays:
        """These arrays with `tokens` added after the vocabulary's, their ids `ids` (the merges' parts, indices of
        the vocabulary's tokens, stay as they are)."""
        lengths = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
        end = self.vocab_offsets[-1] if len(self.vocab_offsets) else 0
        return GPT2Arrays(np.concatenate([self.vocab_pool, np.frombuffer(b"".join(tokens), dtype=np.uint8)]),
                          np.concatenate([self.vocab_offsets, end + np.cumsum(lengths)]),
                          np.concatenate([self.vocab_ids, np.array(ids, dtype=np.int64)]),
                          *self[3:])        # (the fields after the vocabulary's three, as they are)


def merges_of_arrays(pool: NDArray[np.uint8], offsets: NDArray[np.int64]) -> Merges:
    """The merge list of merges read natively as arrays (merge k: the tokens at 2k and 2k + 1 of pool, offsets)."""
    return list(zip(token_list(pool, offsets, 0, 2), token_list(pool, offsets, 1, 2)))


def read_gpt2_arrays(vocab_path: StrPath, merges_path: StrPath) -> GPT2Arrays | None:
    """GPT-2's vocab.json and merges.txt read natively, with no Python object a token, when both are plainly well
    formed: what read_vocab(vocab_path) and read_merges(merges_path, that vocab) give without error, as arrays,
    but for the merge rule's check (GPT2Arrays.rule_check: the caller asks it beside other work). None for
    anything else: those two then read the files, and name what is wrong."""
    vocab = parse_vocab(read_bytes(vocab_path), char_to_byte_table(), MAX_TOKEN_ID)
    merges = parse_merges(read_bytes(merges_path), char_to_byte_table())
    if vocab is None or merges is None:
        return None
    return gpt2_arrays(*vocab, *merges[:2])


def gpt2_arrays(vocab_pool: NDArray[np.uint8], vocab_offsets: NDArray[np.int64], vocab_ids: NDArray[np.int64],
                merge_pool: NDArray[np.uint8], merge_offsets: NDArray[np.int64]) -> GPT2Arrays | None:
    """A vocabulary (ids in 0..MAX_TOKEN_ID) and merges as arrays (GPT2Arrays' first five fields) as GPT2Arrays,
    when they are plainly regular: not too sparse, no token or id twice, each merge's tokens and join in the
    vocabulary, no pair twice, no token made again after other merges; else None (the Python readers and
    checks then name what is wrong). The merge rule's check is left to GPT2Arrays.rule_check."""
    if sparsity_problem(int(vocab_ids.max()) if len(vocab_ids) else -1, len(vocab_ids)):
        return None                 # read_vocab names the file and the largest id's line
    if np.any(vocab_offsets[1:] == vocab_offsets[:-1]):
        return None                 # the empty token (read_vocab names its line)
    index = TokenIndex(vocab_pool, vocab_offsets)
    if index.flooded or index.duplicates or not all_distinct(vocab_ids):
        return None                 # a token or an id given twice (or tokens crafted to crowd the index)
    found = [index.find(merge_pool, merge_offsets, first, 2, span) for first, span in ((0, 1), (1, 1), (0, 2))]
    if any(hits is None or np.any(hits < 0) for hits in found):
        return None                 # a merge's token or join not in the vocab
    if not all_distinct(found[0] << 32 | found[1]):      # type: ignore[operator, arg-type]
        return None                 # a pair listed twice
    joined: NDArray[np.int64] = found[2]      # type: ignore[assignment]
    if not all_distinct(joined[np.flatnonzero(np.diff(joined, prepend=-1))]):
        return None                 # a token made again after other merges (read_merges names it)
    return GPT2Arrays(vocab_pool, vocab_offsets, vocab_ids, merge_pool, merge_offsets, found[2],   # type: ignore[arg-type]
                      parts=(found[0], found[1]), distinct=True)       # type: ignore[arg-type]


def read_merges(path: StrPath, vocab: Mapping[int, bytes] | None = None, rule: bool = True) -> Merges:
    """Read a GPT-2 ``merges.txt``; returns ``list[tuple[bytes, bytes]]`` in rank order.

    Each line holds exactly two tokens separated by one space, no pair on two lines (_TWICE). With `vocab` (id ->
    bytes), read for a tokenizer: each merge's two tokens and their concatenation must be in it, and (rule) the
    ranks rule bpe_fast encodes with must read the list as its own rule does (bpe_fast.merge_rule; not asked of
    a folder whose merges.txt holds tiktoken's ranks, read_ignore_merges). Errors name the file and the line.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "merges.txt")
    >>> write_merges(path, [(b" ", b"a"), (b" a", b"\\n")])
    >>> open(path, encoding="utf-8").read()
    'Ġ a\\nĠa Ċ\\n'
    >>> read_merges(path)
    [(b' ', b'a'), (b' a', b'\\n')]
    """
    data = read_bytes(path)
    parsed = parse_merges(data, char_to_byte_table())
    if parsed is not None:          # plainly well formed (the native reader): left is the check against vocab
        pool, offsets = parsed[:2]
        lefts, rights = token_list(pool, offsets, 0, 2), token_list(pool, offsets, 1, 2)
        known = set(vocab.values()) if vocab is not None else None
        if known is None or (known.issuperset(lefts) and known.issuperset(rights)
                             and known.issuperset(token_list(pool, offsets, 0, 2, 2))):
            read = list(zip(lefts, rights))
            if len(set(read)) == len(read) and (vocab is None or not rule or list_rule_problem(read, str) is None):
                return read         # no pair listed twice (and for a tokenizer, read by the ranks rule as listed)
    text = read_text(path, data)        # anything else: read here, which names what is wrong
    lines = text.split("\n")
    first = 1 if lines and lines[0].startswith("#version") else 0
    table = _TO_LATIN1
    merges: Merges = []
    numbers = []          # the line number of each merge
    for lineno in range(first, len(lines)):
        parts = lines[lineno].split(" ")
        try:
            a, b = parts
            if not a and not b.strip():
                continue          # a blank line (" ", " \r"): no token is empty
            merges.append((a.translate(table).encode("latin-1"), b.rstrip("\r").translate(table).encode("latin-1")))
            numbers.append(lineno + 1)
        except (ValueError, UnicodeEncodeError):
            line = lines[lineno].rstrip("\r")
            if not line.strip():
                continue          # a blank line
            if len(parts) != 2:
                raise FormatError(path, lineno + 1,
                                  f"a merge line must hold two tokens separated by one space, got {line!r}") from None
            for part in line.split(" "):
                try:
                    str_to_token(part)
                except ValueError as exc:
                    raise FormatError(path, lineno + 1, str(exc)) from None
            raise  # not reached: one of the parts is outside the mapping
    for (a, b), lineno in zip(merges, numbers):
        if not a or not b:
            line = lines[lineno - 1].rstrip("\r")
            raise FormatError(path, lineno, f"a merge line must hold two tokens separated by one space, got {line!r}")
    if vocab is not None:
        known = set(vocab.values())
        for (a, b), lineno in zip(merges, numbers):
            if a not in known or b not in known or a + b not in known:
                for token in (a, b, a + b):
                    if token not in known:
                        line = lines[lineno - 1].rstrip("\r")
                        raise FormatError(path, lineno, f"merge {line!r}: token {token_to_str(token)!r} "
                                                        "is not in the vocabulary")
    repeat = repeated_merge(merges)
    if repeat is not None:
        k, j = repeat
        line = lines[numbers[k] - 1].rstrip("\r")
        raise FormatError(path, numbers[k], f"merge {line!r} is on line {numbers[j]} already: {_TWICE}")
    problem = list_rule_problem(merges, lambda j: f"line {numbers[j]}") if vocab is not None and rule else None
    if problem is not None:
        k, what = problem
        line = lines[numbers[k] - 1].rstrip("\r")
        raise FormatError(path, numbers[k], f"merge {line!r}{what}")
    return merges


def write_text_atomic(path: StrPath, text: str, group: OutputGroup | None = None) -> None:
    """Write `text` (UTF-8) to `path` through a temporary file in the same folder and os.replace (with `group`:
    when the group commits, beside its other files)."""
    output = atomic_output if group is None else group.output
    with output(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)


def write_bytes_atomic(path: StrPath, parts: Iterable[Any], group: OutputGroup | None = None,
                       digest: Any = None) -> None:
    """Write the bytes of `parts` (bytes, uint8 arrays: buffers) one after another to `path` through a temporary
    file in the same folder and os.replace (with `group`: when the group commits, beside its other files);
    digest (a hashlib object), if given, is updated with them."""
    output = atomic_output if group is None else group.output
    with output(path, "wb") as f:
        for part in parts:
            f.write(part)
            if digest is not None:
                digest.update(part)


def write_merge_lines(path: StrPath, packed: tuple[NDArray[np.uint8], NDArray[np.int64]],
                      group: OutputGroup | None = None, digest: Any = None) -> None:
    """write_merges' file of merges already checked (none empty, no pair twice), given as pack_pairs gives them
    (pool, offsets): a "#version" first line when the first merge's line starts with "#version". digest: as
    write_bytes_atomic's."""
    pool, offsets = packed
    first = bytes(pool[offsets[0]:offsets[1]]) if len(offsets) > 1 else b""
    head = b"#version: 0.2\n" if first.startswith(b"#version") else b""       # (HF's header)
    write_bytes_atomic(path, merge_lines_chunks(packed, head), group, digest)


def write_vocab(path: StrPath, vocab: Mapping[int, bytes], group: OutputGroup | None = None) -> None:
    """Write ``dict[int, bytes]`` as GPT-2's ``vocab.json`` (one line, ids in increasing order).

    Two ids with the same bytes cannot be written (the file maps token -> id): ValueError naming them.
    """
    data = _vocab_json(vocab)
    if data is not None:
        write_bytes_atomic(path, data, group)
        return
    entries: dict[str, int] = {}
    for i in sorted(vocab):
        token = vocab[i]
        if type(i) is not int or not 0 <= i <= MAX_TOKEN_ID:
            raise ValueError(f"id {i!r} is not an int in 0..{MAX_TOKEN_ID}")
        if not isinstance(token, bytes):
            raise TypeError(f"token {i} is {type(token).__name__}, not bytes")
        key = token_to_str(token)
        if key in entries:
            raise ValueError(f"ids {entries[key]} and {i} have the same bytes {token!r}; vocab.json cannot hold both")
        entries[key] = i
    write_text_atomic(path, json.dumps(entries, ensure_ascii=True), group)


def _vocab_json(vocab: Mapping[int, bytes]) -> Iterator[NDArray[np.uint8]] | None:
    """write_vocab's bytes (in chunks), made natively from the tokens as arrays (json_object_chunks), when every id is an int in
    range and every token a bytes object, none twice; None otherwise (write_vocab then names what is wrong)."""
    ids = sorted(vocab)
    if ids and (not set(map(type, ids)) <= {int} or ids[0] < 0 or ids[-1] > MAX_TOKEN_ID):
        return None
    tokens = list(map(vocab.__getitem__, ids))
    if not set(map(type, tokens)) <= {bytes} or len(set(tokens)) != len(tokens):
        return None
    pool, ends = pack_tokens(tokens)
    offsets = np.concatenate([np.zeros(1, dtype=np.int64), ends])
    return json_object_chunks(pool, offsets, np.arange(len(ids), dtype=np.int64), np.array(ids, dtype=np.int64),
                              True)


def _vocab_array_json(pool: NDArray[np.uint8], offsets: NDArray[np.int64], ids: NDArray[np.int64],
                      index: TokenIndex | None = None) -> Iterator[NDArray[np.uint8]] | None:
    """write_vocab's bytes (in chunks) of the vocabulary {ids[k]: pool[offsets[k]:offsets[k + 1]]}, when the ids
    rise within 0..MAX_TOKEN_ID and no two tokens are the same (a native index of them: `index`, the caller's
    TokenIndex of the same pool and offsets, or one made here); None otherwise."""
    ids = np.ascontiguousarray(ids, dtype=np.int64)
    if len(ids) and (ids[0] < 0 or ids[-1] > MAX_TOKEN_ID or np.any(ids[1:] <= ids[:-1])):
        return None
    pool, offsets = np.ascontiguousarray(pool, dtype=np.uint8), np.ascontiguousarray(offsets, dtype=np.int64)
    index = index if index is not None else TokenIndex(pool, offsets)
    if index.flooded or index.duplicates:
        return None
    return json_object_chunks(pool, offsets, np.arange(len(ids), dtype=np.int64), ids, True)


def write_merges(path: StrPath, merges: Iterable[Sequence[bytes]], group: OutputGroup | None = None) -> None:
    """Write ``list[tuple[bytes, bytes]]`` as GPT-2's ``merges.txt`` (one merge a line, rank order); a pair
    given twice is a ValueError, as read_merges refuses it (_TWICE). No "#version" first line, but when the first
    merge's line starts with "#version" (its first token does): read_merges would skip that merge as the header.
    """
    merges = merges if isinstance(merges, (list, tuple)) else list(merges)
    packed = pack_pairs(merges) if type(merges) is list else None     # tuples of two bytes objects: no Python
    if packed is not None and not np.any(packed[1][1:] == packed[1][:-1]):     # object a line (none empty)
        repeat = repeated_merge(merges)
        if repeat is not None:
            k, j = repeat
            raise ValueError(f"merge {k} ({merges[k][0]!r}, {merges[k][1]!r}) repeats merge {j}: {_TWICE}")
        write_merge_lines(path, packed, group)
        return
    lines = []
    for k, merge in enumerate(merges):
        if len(merge) != 2 or not all(isinstance(t, bytes) and t for t in merge):
            raise ValueError(f"merge {k} is not a pair of non-empty bytes: {merge!r}")
        lines.append(token_to_str(merge[0]) + " " + token_to_str(merge[1]) + "\n")
    repeat = repeated_merge(merges)
    if repeat is not None:
        k, j = repeat
        raise ValueError(f"merge {k} ({merges[k][0]!r}, {merges[k][1]!r}) repeats merge {j}: {_TWICE}")
    if lines and lines[0].startswith("#version"):
        lines.insert(0, "#version: 0.2\n")         # (HF's header)
    write_text_atomic(path, "".join(lines), group)


# ------------------------------------------------------------------------------------- tokenizer folders

VOCAB_FILE = "vocab.json"
MERGES_FILE = "merges.txt"
CONFIG_FILE = "bpe_fast.json"     # {"format": "bpe_fast", "version": 1, "pattern": regex, "special_tokens": [...]}
# and, for a trained tokenizer, "training": {"merge_counts": [...], "corpus": {...}} (see check_training)
_CONFIG_FORMAT = "bpe_fast"
_CONFIG_VERSION = 1
# a folder of tiktoken's ranks ("ignore_merges": true, read_ignore_merges): a version bpe_fast before it refuses,
# where it would read vocab.json and merges.txt as a merge list, with other ids (helper-112)
_CONFIG_RANKS_VERSION = 2


def save_tokenizer_files(directory: StrPath, vocab: Mapping[int, bytes], merges: Iterable[Sequence[bytes]],
                         special_tokens: Iterable[str] | None = (), pattern: str | None = None,
                         training: dict[str, Any] | None = None, group: OutputGroup | None = None,
                         normalizer: str | None = None, special_lstrip: Iterable[str] = (),
                         unicode: str | None = None, ignore_merges: bool = False,
                         vocab_arrays: tuple[NDArray[np.uint8], NDArray[np.int64], NDArray[np.int64]] | None = None,
                         packed_merges: tuple[NDArray[np.uint8], NDArray[np.int64]] | None = None,
                         vocab_index: TokenIndex | None = None) -> dict[str, bytes]:
    """Write a tokenizer folder: vocab.json, merges.txt (GPT-2's format) and bpe_fast.json (the special tokens,
    in order, the pre-tokenization regex, the normalizer if there is one (read_normalizer), the special tokens
    that take the white space before them if any (read_special_lstrip), the Unicode version characters are read
    as if not the installed `regex`'s (read_unicode), whether the vocabulary is tiktoken's ranks with every way of
    writing a token as two as the merges (ignore_merges: read_ignore_merges) and, if given, what
    training recorded: check_training). The folder is
    created if missing; the files are replaced together (group: the caller's, which may hold more files; None:
    one of their own), so a failure leaves the folder as it was. This is what Tokenizer.save writes and
    Tokenizer.load reads. Returns the SHA-256 digests of vocab.json and merges.txt (by name), as bpe_fast.json
    holds them.

    A caller that holds the tokens as arrays passes them too, to be written from them: vocab_arrays (pool,
    offsets, ids: `vocab` as {ids[k]: pool[offsets[k]:offsets[k + 1]]}, ids rising; checked as write_vocab checks
    the dict, which is written instead when they are not so) and packed_merges (pack_pairs(merges), given when
    the caller knows that no token of them is empty and no pair is listed twice, as write_merges checks), with
    vocab_index, a TokenIndex of vocab_arrays' pool and offsets when the caller has made one."""
    from .patterns import GPT2_PATTERN, resolve_pattern

    directory = os.fspath(directory)
    merges = merges if isinstance(merges, (list, tuple)) else list(merges)
    training = check_training(training, len(merges))    # as load checks it: refused here, not on reading back
    specials = list(special_tokens or ())
    config = {
        "format": _CONFIG_FORMAT,
        "version": _CONFIG_RANKS_VERSION if ignore_merges else _CONFIG_VERSION,
        "pattern": resolve_pattern(pattern or GPT2_PATTERN),
        "special_tokens": specials,
    }
    if normalizer is not None:
        config["normalizer"] = check_normalizer(normalizer)
    lstrip = [t for t in specials if t in set(special_lstrip)]
    if lstrip:
        config["special_lstrip"] = lstrip
    if unicode is not None:
        config["unicode"] = check_unicode(unicode)
    if ignore_merges:
        config["ignore_merges"] = True
    text = json.dumps(config, ensure_ascii=False, indent=2)
    if training is not None:        # one line: a count a line would make a 32,000-line file
        text = text[:-2] + ',\n  "training": ' + json.dumps(training, separators=(", ", ": ")) + "\n}"
    with contextlib.nullcontext(group) if group is not None else output_group() as files:
        files.makedirs(directory)
        # the digests of the two files written with it: a load sees whether it read one save's set (files_match);
        # made from the bytes as they are written, or else read back
        made: dict[str, Any] = {}
        vocab_path, merges_path = (os.path.join(directory, name) for name in (VOCAB_FILE, MERGES_FILE))
        chunks = _vocab_array_json(*vocab_arrays, vocab_index) if vocab_arrays is not None else None
        chunks = chunks if chunks is not None else _vocab_json(vocab)
        if chunks is not None:
            made[VOCAB_FILE] = hashlib.sha256()
            write_bytes_atomic(vocab_path, chunks, files, made[VOCAB_FILE])
        else:
            write_vocab(vocab_path, vocab, files)       # (which names what is wrong)
        if packed_merges is not None:
            made[MERGES_FILE] = hashlib.sha256()
            write_merge_lines(merges_path, packed_merges, files, made[MERGES_FILE])
        else:
            write_merges(merges_path, merges, files)
        digests = {name: made[name].digest() if name in made else _file_digest(files.staged(os.path.join(directory,
                                                                                                         name)))
                   for name in _DIGESTED}
        hex_digests = {name: digest.hex() for name, digest in digests.items()}
        text = text[:-2] + ',\n  "files_sha256": ' + json.dumps(hex_digests, separators=(", ", ": ")) + "\n}"
        write_text_atomic(os.path.join(directory, CONFIG_FILE), text + "\n", files)
    return digests


_DIGESTED = (VOCAB_FILE, MERGES_FILE)     # the files whose digests bpe_fast.json holds ("files_sha256")


def _file_digest(path: StrPath) -> bytes:
    """The SHA-256 of the file at path (read_bytes'); computed once while a FolderPin holds it (a load checks the
    cache's digests, then files_match the config's, of the same two files)."""
    return _pinned_once(path, "sha256", lambda p: hashlib.sha256(read_bytes(p)).digest())


def _pinned_once(path: StrPath, kind: str, compute: Callable[[StrPath], Any]) -> Any:
    """compute(path), of a file a FolderPin holds computed once while the pin is in use (`kind` tells apart what
    is computed of one file); of any other file, each time."""
    pinned = _PINNED.get()
    fd = pinned.get(os.path.abspath(path)) if pinned else None
    memo = _PIN_MEMO.get()
    if memo is None or fd is None:
        return compute(path)
    key = (kind, fd)
    if key not in memo:
        memo[key] = compute(path)
    return memo[key]


def _sha256_hex(path: StrPath) -> str:
    return _file_digest(path).hex()


def files_match(directory: StrPath) -> bool:
    """Whether the folder's vocab.json and merges.txt are those its bpe_fast.json was saved with (its
    "files_sha256"): false for a set mixed by a load during a save, and for files edited since (or a folder
    without bpe_fast.json, or one saved before the digests were kept: then true)."""
    return not edited_files(directory)


def edited_files(directory: StrPath) -> list[str]:
    """The names of the folder's vocab.json and merges.txt that are not those its bpe_fast.json was saved with
    (files_match)."""
    path = os.path.join(os.fspath(directory), CONFIG_FILE)
    try:
        text, config = _read_json_object(path)
    except (OSError, ValueError):
        return []
    if "files_sha256" not in config:        # saved before the digests were kept
        return []
    digests = config["files_sha256"]
    # present but damaged (a list, a digest that is no string): was taken for a save from before digests, and an
    # edited vocab.json loaded without a word (helper-151)
    if not isinstance(digests, dict) or not all(isinstance(digests.get(name), str) for name in _DIGESTED):
        raise FormatError(path, _key_line(text, "files_sha256"), f'"files_sha256" must map {" and ".join(_DIGESTED)} '
                                                                 f"to their SHA-256 in hex, got {digests!r}"[:300])
    return [name for name in _DIGESTED if digests.get(name) != _sha256_hex(os.path.join(os.fspath(directory), name))]


def _read_json_object(path: StrPath) -> tuple[str, dict[str, Any]]:
    """(text, the JSON object it holds) of a file; FormatError naming the file and line otherwise. Read once
    while a FolderPin holds it (a load reads bpe_fast.json's pattern, special tokens, training, normalizer and
    digests): the object is shared, not to be changed."""
    found: tuple[str, dict[str, Any]] = _pinned_once(path, "json", _parse_json_object)
    return found


class _RepeatedKey(Exception):
    pass


def _refuse_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json.loads' object_pairs_hook: the object, or _RepeatedKey(key) for a key given twice (which json.loads
    would read as its last value, saying nothing)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _RepeatedKey(key)
            seen.add(key)
    return out


def _parse_json_object(path: StrPath) -> tuple[str, dict[str, Any]]:
    text = read_text(path)
    try:
        config = parse_json(path, text, object_pairs_hook=_refuse_repeats)
    except _RepeatedKey as exc:
        quoted = json.dumps(exc.args[0])
        # the second place it is written as a key, as json.dumps writes it (a value of that text followed by
        # a colon inside a string could be taken for one: the line is a hint)
        places = [m.start() for m in re.finditer(re.escape(quoted) + r"\s*:", text)]
        line = text.count("\n", 0, places[1]) + 1 if len(places) > 1 else None
        raise FormatError(path, line, f"key {quoted} given twice (which one is meant is not known)") from None
    if not isinstance(config, dict):
        raise FormatError(path, 1, "must hold one JSON object")
    return text, config


def read_config(path: StrPath) -> tuple[list[str], str]:
    """Read bpe_fast.json; returns (special_tokens: list[str], pattern: str). Errors name the file and line,
    the Tokenizer's too: a pattern that does not compile, a special token given twice or with a lone surrogate."""
    from .patterns import compile_pattern
    from .specials import check_special_tokens

    text, config = _read_json_object(path)
    version = _CONFIG_RANKS_VERSION if config.get("ignore_merges") is True else _CONFIG_VERSION
    given = config.get("version")
    if config.get("format") != _CONFIG_FORMAT or type(given) is not int or given != version:   # (not true, 1.0)
        raise FormatError(path, None, f'expected "format": "{_CONFIG_FORMAT}" and "version": {version}, got '
                                      f'{config.get("format")!r} and {config.get("version")!r}')
    pattern = config.get("pattern")
    if not isinstance(pattern, str) or not pattern:
        raise FormatError(path, _key_line(text, "pattern"), f'"pattern" must be a non-empty string, got {pattern!r}')
    specials = config.get("special_tokens", [])
    if not isinstance(specials, list) or not all(isinstance(t, str) and t for t in specials):
        raise FormatError(path, _key_line(text, "special_tokens"),
                          f'"special_tokens" must be a list of non-empty strings, got {specials!r}')
    try:
        compile_pattern(pattern)
    except ValueError as exc:
        raise FormatError(path, _key_line(text, "pattern"), str(exc)) from None
    try:
        check_special_tokens(specials)
    except ValueError as exc:
        raise FormatError(path, _key_line(text, "special_tokens"), str(exc)) from None
    return list(specials), pattern


def read_normalizer(directory: StrPath) -> str | None:
    """The normalizer of a tokenizer folder's bpe_fast.json ("normalizer": "NFC"; Tokenizer.with_normalizer),
    None when it has none (or there is no bpe_fast.json); a FormatError naming the file and line for another
    value."""
    return _config_value(directory, "normalizer", check_normalizer)


def read_unicode(directory: StrPath) -> str | None:
    """The Unicode version of a tokenizer folder's bpe_fast.json ("unicode": "16.0"; Tokenizer.with_unicode), None
    when it has none (the installed `regex`'s) or there is no bpe_fast.json; a FormatError naming the file and line
    for another value."""
    return _config_value(directory, "unicode", check_unicode)


def read_ignore_merges(directory: StrPath) -> bool:
    """Whether a tokenizer folder's bpe_fast.json says "ignore_merges": true (as HF's tokenizer.json does: a
    pre-token that is a vocab token gets its id; Tokenizer.save writes it for a tokenizer by_ranks_only, whose
    merges.txt then holds every way of writing a token as two, in the order of the ids made, and whose vocab.json's
    ids but the special tokens' are tiktoken's ranks); False when it has no such key (or there is no
    bpe_fast.json); a FormatError naming the file and line for a value other than true or false."""
    return _config_value(directory, "ignore_merges", _check_flag) == "true"


def _check_flag(value: object) -> str | None:
    """A bpe_fast.json flag: "true" for true, None for false or none; ValueError for anything else."""
    if value is None or value is False:
        return None
    if value is True:
        return "true"
    raise ValueError(f"must be true or false, not {json.dumps(value)[:40]}")


def _config_value(directory: StrPath, key: str, check: Callable[[Any], str | None]) -> str | None:
    """check(bpe_fast.json's value of `key`, None when it has none or there is no such file); its ValueError
    as a FormatError naming the file and the key's line."""
    path = os.path.join(os.fspath(directory), CONFIG_FILE)
    if not os.path.exists(path):
        return None
    text, config = _read_json_object(path)
    try:
        return check(config.get(key))
    except ValueError as exc:
        raise FormatError(path, _key_line(text, key), f'"{key}": {exc}') from None


def read_special_lstrip(directory: StrPath, special_tokens: Iterable[str]) -> list[str]:
    """The special tokens that take the white space before them, of a tokenizer folder's bpe_fast.json
    ("special_lstrip": [...]; Tokenizer.with_special_lstrip), [] when it has none (or there is no bpe_fast.json);
    a FormatError naming the file and line for a value that is not a list of some of its special_tokens."""
    path = os.path.join(os.fspath(directory), CONFIG_FILE)
    if not os.path.exists(path):
        return []
    text, config = _read_json_object(path)
    lstrip = config.get("special_lstrip", [])
    known = set(special_tokens)
    if not isinstance(lstrip, list) or not all(isinstance(t, str) and t in known for t in lstrip):
        raise FormatError(path, _key_line(text, "special_lstrip"),
                          '"special_lstrip" must be a list of some of the "special_tokens"')
    if lstrip and config.get("normalizer") is not None:
        raise FormatError(path, _key_line(text, "special_lstrip"),
                          '"special_lstrip" with a "normalizer": bpe_fast does not take white space before special '
                          "tokens with a normalizer (save never writes both)")
    return lstrip


_CORPUS_KEYS = ("bytes", "documents", "pretokens", "pretoken_bytes", "distinct_pretokens")


_INT64_MAX = 2 ** 63 - 1


def check_training(training: object, num_merges: int | None = None) -> dict[str, Any] | None:
    """What training recorded, checked: None, or a dict with "merge_counts" (a list of int64s >= 0, one a merge
    when num_merges is given) and "corpus" (a dict of some of "bytes", "documents", "pretokens",
    "pretoken_bytes", "distinct_pretokens": ints >= 0), both optional. Returns a copy; ValueError saying what
    is wrong.

    >>> check_training({"merge_counts": [7, 7], "corpus": {"bytes": 33}}, num_merges=2)
    {'merge_counts': [7, 7], 'corpus': {'bytes': 33}}
    """
    if training is None:
        return None
    if not isinstance(training, dict):
        raise ValueError(f"training must be a dict, got {type(training).__name__}")
    unknown = set(training) - {"merge_counts", "corpus"}
    if unknown:
        raise ValueError(f"training has unknown keys {sorted(unknown)} (expected merge_counts, corpus)")
    out: dict[str, Any] = {}
    if "merge_counts" in training:
        counts = training["merge_counts"]
        if (not isinstance(counts, list) or not set(map(type, counts)) <= {int} or min(counts, default=0) < 0
                or max(counts, default=0) > _INT64_MAX):
            raise ValueError("training's merge_counts must be a list of ints from 0 to 2**63 - 1 (int64, as "
                             "counting keeps them)")
        if num_merges is not None and len(counts) != num_merges:
            raise ValueError(f"training's merge_counts has {len(counts)} counts for {num_merges} merges")
        out["merge_counts"] = list(counts)
    if "corpus" in training:
        corpus = training["corpus"]
        # (no upper bound: the counts of one-byte words, which make no pair, may sum past 2**63)
        if not isinstance(corpus, dict) or not all(k in _CORPUS_KEYS and type(v) is int and v >= 0
                                                   for k, v in corpus.items()):
            raise ValueError(f"training's corpus must map some of {', '.join(_CORPUS_KEYS)} to ints >= 0, "
                             f"got {corpus!r}")
        out["corpus"] = dict(corpus)
    return out


def read_training(path: StrPath, num_merges: int | None = None) -> dict[str, Any] | None:
    """The "training" entry of a bpe_fast.json (check_training, with one merge count a merge when num_merges,
    the folder's number of merges, is given), or None when it has none (files written before it was recorded,
    or by Tokenizer.save of an untrained tokenizer). Errors name the file and line."""
    text, config = _read_json_object(path)
    try:
        return check_training(config.get("training"), num_merges)
    except ValueError as exc:
        problem = str(exc)
        if problem.endswith(f" for {num_merges} merges"):      # their number is merges.txt's, beside it
            problem += (f" (the merges of {os.path.join(os.path.dirname(os.fspath(path)), MERGES_FILE)}: "
                        "cut short or edited since the save?)")
        raise FormatError(path, _key_line(text, "training"), problem) from None


def _key_line(text: str, key: str) -> int | None:
    """The line of the top-level member `key` of the JSON object in `text` (read already), or None when it has
    none. Found by reading the members, not by searching for the key's text: a special token of that text (the
    list comes before "training" and "normalizer") was taken for the key, and its line named."""
    decoder = json.JSONDecoder()
    space = re.compile(r"[ \t\n\r]*")

    def after(pos: int) -> int:             # past the white space at pos, one character (',', ':', '{') and more
        return space.match(text, space.match(text, pos).end() + 1).end()    # type: ignore[union-attr]  # (* matches)

    pos = after(0)                          # past the '{'
    while pos < len(text) and text[pos] == '"':
        name, end = decoder.raw_decode(text, pos)
        if name == key:
            return text.count("\n", 0, pos) + 1
        _, end = decoder.raw_decode(text, after(end))      # the value, past the ':'
        pos = after(end)                                   # the next key, past the ','
    return None


def _other_loader(path: str) -> str:
    """A hint naming the loader for `path` when its name says what it is (and it exists), else ""."""
    name = os.path.basename(path)
    if not os.path.isfile(path):
        return ""
    if name.endswith((".tiktoken", ".tiktoken.gz")):
        return "; for a .tiktoken file use Tokenizer.from_tiktoken"
    if name in (VOCAB_FILE, MERGES_FILE, CONFIG_FILE):
        return f"; give its folder, or use Tokenizer.from_files({VOCAB_FILE}, {MERGES_FILE})"
    if name.endswith(".json"):
        return "; for an HF tokenizer.json use Tokenizer.from_hf"
    return ""


def load_tokenizer_files(directory: StrPath) -> tuple[Vocab, MergesSource, list[str], str]:
    """Read a folder written by save_tokenizer_files: (vocab, merges, special_tokens, pattern).

    A folder with only vocab.json and merges.txt (GPT-2's own files) loads with no special tokens and
    GPT-2's pattern."""
    return load_tokenizer_folder(directory, use_cache=False)[:4]


def load_tokenizer_folder(directory: StrPath, use_cache: bool = True) -> tuple[Vocab, MergesSource, list[str], str,
                                                                               TableArrays | None,
                                                                               dict[str, Any] | None]:
    """load_tokenizer_files, the encoder's arrays and what training recorded: (vocab, merges, special_tokens,
    pattern, arrays, training), training as read_training reads it, its merge counts checked against the merges
    (as the Tokenizer constructor checks them: save would write back counts of other merges).

    With `use_cache`, when the folder's bpe_fast.npz matches its vocab.json and merges.txt (read_cache),
    vocab and merges come from it (merges as a function that makes the list, called when first needed) and
    `arrays` is its dict of table arrays and merge_ids (the merges as id pairs); else the text files are parsed
    and `arrays` is None."""
    directory = os.fspath(directory)
    expected = f"a tokenizer folder holds {VOCAB_FILE} and {MERGES_FILE} (and {CONFIG_FILE}), as Tokenizer.save writes"
    if os.path.isfile(directory):
        raise NotADirectoryError(f"{directory} is a file, not a folder: {expected}{_other_loader(directory)}")
    if not path_exists(directory) or not os.path.isdir(directory):
        raise FileNotFoundError(f"{directory}: no such tokenizer folder")
    for name in (VOCAB_FILE, MERGES_FILE):
        if not path_exists(os.path.join(directory, name)):
            hint = _other_loader(os.path.join(directory, "tokenizer.json"))
            raise FileNotFoundError(f"{directory} has no {name}: {expected}{hint}")
    cached = read_cache(directory) if use_cache else None
    merges: MergesSource
    arrays: TableArrays | None
    if cached is not None:
        vocab, merges, arrays, num_merges = cached
    else:
        vocab = read_vocab(os.path.join(directory, VOCAB_FILE))
        merges = read_merges(os.path.join(directory, MERGES_FILE), vocab)
        arrays, num_merges = None, len(merges)
    specials, pattern, training = _read_folder_config(directory, num_merges)
    return vocab, merges, specials, pattern, arrays, training


def path_exists(path: StrPath) -> bool:
    """Whether path names something; a PermissionError naming it when that cannot be told (a folder on the way
    that may not be searched: os.path.exists said no, and a load named an unreadable folder's vocab.json as
    missing, the CLI its folder as no such folder)."""
    try:
        os.stat(path)
    except PermissionError as exc:
        raise PermissionError(exc.errno, "Permission denied (a folder on the way may not be looked into)",
                              os.fspath(path)) from None
    except (FileNotFoundError, NotADirectoryError):
        return False
    return True


def _read_folder_config(directory: str, num_merges: int) -> tuple[list[str], str, dict[str, Any] | None]:
    """(special_tokens, pattern, training) of a tokenizer folder of `num_merges` merges: from its bpe_fast.json,
    or none, GPT-2's pattern and none when it has none (GPT-2's own files)."""
    from .patterns import GPT2_PATTERN

    config_path = os.path.join(directory, CONFIG_FILE)
    if not os.path.exists(config_path):
        if os.path.lexists(config_path):    # a link to nothing: not a folder without one (GPT-2's files)
            raise FileNotFoundError(f"{config_path}: a symbolic link to {os.readlink(config_path)}, which does "
                                    "not exist")
        return [], GPT2_PATTERN, None
    specials, pattern = read_config(config_path)
    return specials, pattern, read_training(config_path, num_merges)


def read_folder_arrays(directory: StrPath) -> tuple[GPT2Arrays, list[str], str, dict[str, Any] | None] | None:
    """A tokenizer folder with no cache (bpe_fast.npz: a vocabulary under CACHE_MIN_TOKENS) whose vocab.json and
    merges.txt are plainly well formed, read natively (read_gpt2_arrays, as Tokenizer.from_files reads them), with
    its special tokens, pattern and training: (files, special_tokens, pattern, training). None for anything else,
    which load_tokenizer_folder then reads (and names what is wrong)."""
    directory = os.fspath(directory)
    if not os.path.isdir(directory) or os.path.exists(os.path.join(directory, CACHE_FILE)):
        return None
    try:
        files = read_gpt2_arrays(os.path.join(directory, VOCAB_FILE), os.path.join(directory, MERGES_FILE))
    except OSError:         # a file missing or unreadable: load_tokenizer_folder says which
        return None
    if files is None:
        return None
    try:
        config = _read_folder_config(directory, len(files.joined))
    except ValueError:
        if files.rule_check().difference is not None:
            return None     # merges.txt is wrong too: load_tokenizer_folder names its line first, as it always has
        raise
    return (files, *config)


_PINNED: contextvars.ContextVar[dict[str, int] | None] = contextvars.ContextVar("_PINNED", default=None)
# what is computed of the files held (by kind and descriptor: their digests, bpe_fast.json's parse) while a
# FolderPin is in use (_pinned_once)
_PIN_MEMO: contextvars.ContextVar[dict[tuple[str, int], Any] | None] = contextvars.ContextVar("_PIN_MEMO", default=None)


class FolderPin:
    """The files of a tokenizer folder as they are now, held open: in use (a with block), read_bytes reads them
    from there, so a load reads one set of files, whatever a save renames over them meanwhile. changed() says
    whether any path names another file now (Tokenizer.save replaces each by a rename) or appeared or went:
    true just after the pin was made, a save replaced some while they were being opened. (The inodes held open
    cannot be reused: stamps of inode, size and time were not enough, two saves within a clock tick gave a
    freed inode back with the same size and time.)"""

    def __init__(self, directory: StrPath) -> None:
        self._held: list[tuple[str, int | None, tuple[int, int] | None]] = []
        with folder_lock(directory, exclusive=False):      # not while a save's renames are under way
            self._open(directory)

    def _open(self, directory: StrPath) -> None:
        for name in (VOCAB_FILE, MERGES_FILE, CONFIG_FILE, CACHE_FILE):
            path = os.path.join(os.fspath(directory), name)
            try:        # (O_NONBLOCK: opening a named pipe waits for a writer otherwise; a file ignores it)
                fd: int | None = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
            except OSError:             # missing, or not to be opened: then only what the path names is compared
                fd = None
            if fd is not None:
                mode = os.fstat(fd).st_mode
                if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):  # (a folder: read_bytes names it, as it did)
                    os.close(fd)
                    self.close()
                    raise OSError(errno.EINVAL, "not a regular file (a named pipe or a device, which a load would "
                                  "wait on or read without end): a tokenizer folder's files are read whole", path)
            self._held.append((path, fd, identity(os.fstat(fd)) if fd is not None else path_identity(path)))

    def changed(self) -> bool:
        return any(path_identity(path) != held for path, _, held in self._held)

    def close(self) -> None:
        for _, fd, _ in self._held:
            if fd is not None:
                os.close(fd)
        self._held.clear()

    def __enter__(self) -> FolderPin:
        """While in use, the files are read from the descriptors held (read_bytes), not by their paths: what is
        read is what was pinned, whatever is renamed over the paths meanwhile."""
        self._token = _PINNED.set({os.path.abspath(path): fd for path, fd, _ in self._held if fd is not None})
        self._memo_token = _PIN_MEMO.set({})
        return self

    def __exit__(self, *exc: object) -> None:
        _PIN_MEMO.reset(self._memo_token)
        _PINNED.reset(self._token)
        self.close()


# ------------------------------------------------------------------------------------- the binary cache
#
# Parsing vocab.json and merges.txt of a 200k-token vocabulary and building the encoder's tables from them
# takes about a second; Tokenizer.save therefore also writes bpe_fast.npz (for vocabularies of
# CACHE_MIN_TOKENS tokens or more): NumPy arrays, no pickle, holding the encoder's table arrays (the
# vocabulary is their decode pool, offsets and known flags), the merges as id pairs, and the sha256 of
# vocab.json and merges.txt as they were written. Load uses it only when both digests match the files now in
# the folder and the arrays are well formed; otherwise (no cache, a file edited since, a cache from another
# version) the text files are parsed as before. The text files stay the tokenizer; the cache can be deleted.

CACHE_FILE = "bpe_fast.npz"
CACHE_MIN_TOKENS = 16384        # smaller vocabularies load fast from the text files: no cache is written
_CACHE_VERSION = 1              # bump when the arrays' meaning changes
# the table arrays: name -> (dtype, number of dimensions)
_CACHE_TABLES: dict[str, tuple[str, int]] = {        # (NumPy's dtype names)
    "byte_ids": ("int32", 1), "ranked_pool": ("uint8", 1), "ranked_offsets": ("int64", 1),
    "ranked_ids": ("int32", 1), "decode_pool": ("uint8", 1), "decode_offsets": ("int64", 1),
    "known": ("uint8", 1), "permanent": ("uint8", 1),
}


def _file_sha256(path: StrPath) -> NDArray[np.uint8]:
    return np.frombuffer(_file_digest(path), dtype=np.uint8)


def write_cache(directory: StrPath, arrays: Mapping[str, NDArray[Any]], merge_ids: NDArray[np.int32],
                group: OutputGroup | None = None, digests: Mapping[str, bytes] | None = None) -> None:
    """Write bpe_fast.npz into a folder save_tokenizer_files has just written (or staged in `group`, whose
    commit then writes this file too): `arrays` (the table arrays, _CACHE_TABLES), `merge_ids` (int32, one row
    (id of a, id of b) a merge) and the digests of the folder's vocab.json and merges.txt (digests: what
    save_tokenizer_files returned; None: read from the files)."""
    staged = group.staged if group is not None else os.fspath
    directory = os.fspath(directory)
    contents: dict[str, Any] = {name: np.ascontiguousarray(arrays[name], dtype=dtype)
                                for name, (dtype, _) in _CACHE_TABLES.items()}
    contents["merge_ids"] = np.ascontiguousarray(merge_ids, dtype=np.int32).reshape(-1, 2)
    contents["version"] = np.array([_CACHE_VERSION], dtype=np.int64)
    for name, key in ((VOCAB_FILE, "vocab_sha256"), (MERGES_FILE, "merges_sha256")):
        contents[key] = (np.frombuffer(digests[name], dtype=np.uint8) if digests is not None
                         else _file_sha256(staged(os.path.join(directory, name))))
    buffer = io.BytesIO()
    np.savez(buffer, **contents)
    with (atomic_output if group is None else group.output)(os.path.join(directory, CACHE_FILE), "wb") as f:
        f.write(buffer.getbuffer())


def read_cache(directory: StrPath) -> tuple[Vocab, Callable[[], Merges], TableArrays, int] | None:
    """(vocab, merges, arrays, number of merges) from the folder's bpe_fast.npz (merges: a function that makes
    the list of pairs; arrays: the table arrays and merge_ids, the merges as id pairs), or None when there is none
    or it does not
    match the folder's vocab.json and merges.txt. A cache that cannot be read or is malformed is a
    warning naming the file (and None): the text files are read instead."""
    path = os.path.join(os.fspath(directory), CACHE_FILE)
    if not os.path.exists(path):
        return None
    import zipfile         # (here, as np.load does: 4 ms of every import of the encoding path otherwise)

    try:
        with np.load(io.BytesIO(read_bytes(path)), allow_pickle=False) as npz:
            contents = {name: npz[name] for name in npz.files}
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, MemoryError) as exc:
        # (MemoryError: an array's header that claims a shape far beyond the file, which numpy allocates first)
        warnings.warn(f"{path}: cannot be read ({exc}); reading the text files instead", stacklevel=3)
        return None
    version = contents.get("version")
    if version is None or version.shape != (1,) or int(version[0]) != _CACHE_VERSION:
        return None     # another version's cache: not an error
    for name, key in ((VOCAB_FILE, "vocab_sha256"), (MERGES_FILE, "merges_sha256")):
        digest = contents.get(key)
        if digest is None or not np.array_equal(digest, _file_sha256(os.path.join(directory, name))):
            return None     # the text files changed since the cache was written
    problem = _cache_problem(contents)
    if problem:
        warnings.warn(f"{path}: malformed ({problem}); reading the text files instead", stacklevel=3)
        return None
    pool = contents["decode_pool"].tobytes()
    offsets = contents["decode_offsets"].tolist()
    ids = np.flatnonzero(contents["known"]).tolist()
    vocab = dict(zip(ids, [pool[offsets[i]:offsets[i + 1]] for i in ids]))
    merge_ids = contents["merge_ids"]
    token = vocab.__getitem__

    def merges() -> Merges:       # made when first asked for (Tokenizer.merges, save, export): load need not pay for it
        problem = _merges_disagreement(contents)        # checked here too, for the same reason
        if problem:
            raise FormatError(path, None, f"malformed ({problem}); delete it, and the text files are read")
        return list(zip(map(token, merge_ids[:, 0].tolist()), map(token, merge_ids[:, 1].tolist())))
    return vocab, merges, {name: contents[name] for name in (*_CACHE_TABLES, "merge_ids")}, len(merge_ids)


def cache_not_used(directory: StrPath, why: str) -> None:
    """Warn that the folder's bpe_fast.npz is malformed (`why`) and was not used (read_cache's warning)."""
    path = os.path.join(os.fspath(directory), CACHE_FILE)
    warnings.warn(f"{path}: malformed ({why}); reading the text files instead", stacklevel=3)


def _cache_problem(contents: Mapping[str, NDArray[Any]]) -> str:
    """What is wrong with the arrays of a cache (as far as reading vocab and merges from them goes), or ""."""
    for name, (dtype, ndim) in _CACHE_TABLES.items():
        array = contents.get(name)
        if array is None or array.dtype != dtype or array.ndim != ndim:
            return f"array {name!r} missing or not {np.dtype(dtype)}"
    merge_ids = contents.get("merge_ids")
    if merge_ids is None or merge_ids.dtype != np.int32 or merge_ids.ndim != 2 or merge_ids.shape[1] != 2:
        return "array 'merge_ids' missing or not int32 pairs"
    known, offsets, pool = contents["known"], contents["decode_offsets"], contents["decode_pool"]
    size = known.shape[0]
    if offsets.shape[0] != size + 1 or offsets[0] != 0 or offsets[-1] != pool.shape[0] \
            or np.any(offsets[1:] < offsets[:-1]):
        return "bad decode offsets"
    for name in ("merge_ids", "ranked_ids", "byte_ids"):
        ids = contents[name]
        low = -1 if name == "byte_ids" else 0
        if ids.size and (ids.min() < low or ids.max() >= size):
            return f"an id in {name!r} is out of range"
    if merge_ids.size and not known[merge_ids].all():
        return "a merge names an id without a token"
    if contents["ranked_ids"].size and not known[contents["ranked_ids"]].all():
        return "a ranked id without a token"
    if contents["byte_ids"].shape[0] != 256:
        return "'byte_ids' must have 256 entries"
    if contents["permanent"].shape[0] != contents["ranked_ids"].shape[0]:
        return "'permanent' must have one entry a ranked token"
    return _cache_disagreement(contents)


def _cache_disagreement(contents: Mapping[str, NDArray[Any]]) -> str:
    """How a cache's tables (shapes and ranges checked) disagree with one another, or "": too sparse for its
    number of tokens (the text readers' limit), a byte's id without that byte, or a ranked token that is not its
    id's bytes. (The `permanent` flags are taken as written: recomputing them costs what the cache saves. The
    merges, which encoding does not use, are checked when their list is made: _merges_disagreement.)"""
    known, offsets, pool = contents["known"], contents["decode_offsets"], contents["decode_pool"]
    sparse = sparsity_problem(known.shape[0] - 1, int(np.count_nonzero(known)))     # the tables follow the size
    if sparse:
        return sparse
    lengths = np.diff(offsets)
    byte_ids = contents["byte_ids"]
    present = np.flatnonzero(byte_ids >= 0)
    if not known[byte_ids[present]].all() or np.any(lengths[byte_ids[present]] != 1) \
            or np.any(pool[offsets[byte_ids[present]]] != present):
        return "a byte's id is not that byte"
    single = np.flatnonzero((lengths == 1) & (known != 0))
    if np.any(byte_ids[pool[offsets[single]]] < 0):
        return "a byte that is a token has no id in 'byte_ids'"
    ranked_ids, ranked_pool, ranked_offsets = contents["ranked_ids"], contents["ranked_pool"], contents["ranked_offsets"]
    if ranked_offsets.shape[0] != ranked_ids.shape[0] + 1 or ranked_offsets[0] != 0 \
            or ranked_offsets[-1] != ranked_pool.shape[0] or np.any(ranked_offsets[1:] < ranked_offsets[:-1]):
        return "bad ranked offsets"
    if len(ranked_ids) and np.all(np.diff(ranked_ids) == 1):     # consecutive ids (trained, tiktoken's): one slice
        first, last = int(ranked_ids[0]), int(ranked_ids[-1])
        same = (np.array_equal(offsets[first:last + 2] - offsets[first], ranked_offsets)
                and np.array_equal(pool[offsets[first]:offsets[last + 1]], ranked_pool))
    else:
        ids_pool, ids_offsets = gather_tokens(pool, offsets, ranked_ids.astype(np.int64))
        same = np.array_equal(ids_offsets, ranked_offsets) and np.array_equal(ids_pool, ranked_pool)
    return "" if same else "a ranked token is not its id's bytes"


def _merges_disagreement(contents: Mapping[str, NDArray[Any]]) -> str:
    """"" when a cache's merges make its ranked tokens, in order (a token made by several merges at its first),
    else what is wrong."""
    pool, offsets = contents["decode_pool"], contents["decode_offsets"]
    ranked_pool, ranked_offsets = contents["ranked_pool"], contents["ranked_offsets"]
    joins_pool, halves = gather_tokens(pool, offsets, contents["merge_ids"].astype(np.int64).reshape(-1))
    join_offsets = halves[::2]                              # each merge's join: its halves end to end
    if len(join_offsets) != len(ranked_offsets):            # a token made by several merges: its first counts
        joins = token_list(joins_pool, halves, 0, 2, 2)
        first = dict(zip(reversed(joins), range(len(joins) - 1, -1, -1)))     # the last write is the first merge
        firsts = np.sort(np.fromiter(first.values(), dtype=np.int64, count=len(first)))
        if len(firsts) != len(ranked_offsets) - 1:
            return "the merges make other tokens than the ranked ones"
        joins_pool, join_offsets = gather_tokens(joins_pool, join_offsets, firsts)
    if not (np.array_equal(np.diff(join_offsets), np.diff(ranked_offsets)) and np.array_equal(joins_pool, ranked_pool)):
        return "the merges make other tokens than the ranked ones"
    return ""
