"""tiktoken.load's functions, for code written against tiktoken: `from bpe_fast.load import load_tiktoken_bpe`
where it had `from tiktoken.load import load_tiktoken_bpe` (Llama 3's and Qwen's tokenizers load their ranks
so, then hand them to tiktoken.Encoding: bpe_fast.Encoding takes them the same way).

Nothing is downloaded: a URL is read from tiktoken's cache, where tiktoken.load left it (TIKTOKEN_CACHE_DIR, else
DATA_GYM_CACHE_DIR, else the temporary folder's data-gym-cache), or is a FileNotFoundError saying so. The files
are read by bpe_fast's readers, which are stricter than tiktoken's: a line that is not "base64 rank" is a
FormatError (a ValueError) naming the file and line, as tiktoken's ValueError names the line, and a token or a
rank given twice is refused (tiktoken's dict keeps the last).
"""
from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Mapping

from .atomic import atomic_output
from .formats import MAX_TOKEN_ID, FormatError, bytes_to_unicode, parse_json, read_text
from .ranks import read_tiktoken, tiktoken_text
from .registry import tiktoken_cache_file

__all__ = ["load_tiktoken_bpe", "dump_tiktoken_bpe", "data_gym_to_mergeable_bpe_ranks", "read_file",
           "read_file_cached", "check_hash"]


def check_hash(data: bytes, expected_hash: str) -> bool:
    """Whether `data` has the SHA-256 `expected_hash` (hex), as tiktoken.load.check_hash."""
    return hashlib.sha256(data).hexdigest() == expected_hash


def read_file(blobpath: str) -> bytes:
    """The contents of a local file, or of a URL as tiktoken's cache holds it (tiktoken.load.read_file downloads
    a URL; bpe_fast does not): read_file_cached without a hash."""
    return read_file_cached(blobpath)


def read_file_cached(blobpath: str, expected_hash: str | None = None) -> bytes:
    """The contents of a local file, or of a URL as tiktoken's cache holds it; with expected_hash (a SHA-256 in
    hex; None or "" checks nothing, as tiktoken's), a ValueError when they do not have it, as tiktoken's (a URL: a
    FileNotFoundError unless its cached copy has it). A local file's path may be an os.PathLike or bytes too
    (tiktoken's takes a str only)."""
    if isinstance(blobpath, (bytes, os.PathLike)):     # a local file (a URL is a str)
        blobpath = os.fsdecode(blobpath)
    if not isinstance(blobpath, str):       # ("://" in it was a TypeError naming no argument)
        raise TypeError(f"a file's path or URL must be a str or os.PathLike, got {type(blobpath).__name__}")
    if "://" not in blobpath:
        with open(blobpath, "rb") as f:
            data = f.read()
    else:
        cached = tiktoken_cache_file(blobpath)
        offline = f"{blobpath}: bpe_fast downloads nothing"
        hint = "give the path of a local copy, or read it once with tiktoken where the network is reachable"
        if cached is None:
            raise FileNotFoundError(f"{offline}, and tiktoken's cache is off (TIKTOKEN_CACHE_DIR or "
                                    f"DATA_GYM_CACHE_DIR is empty); {hint}")
        try:
            mode = os.stat(cached).st_mode
        except FileNotFoundError:
            raise FileNotFoundError(f"{offline}, and tiktoken's cache holds no copy of it ({cached}); {hint}") \
                from None
        if not stat.S_ISREG(mode):      # a folder, or a named pipe, which would block the read for good
            raise FileNotFoundError(f"{offline}, and what tiktoken's cache holds for it ({cached}) is not a regular "
                                    f"file; {hint}")
        with open(cached, "rb") as f:
            data = f.read()
        if expected_hash and not check_hash(data, expected_hash):
            raise FileNotFoundError(f"{offline}, and the copy in tiktoken's cache ({cached}) does not have the "
                                    f"SHA-256 {expected_hash}; {hint}")
    if expected_hash and not check_hash(data, expected_hash):     # "" checks nothing, as tiktoken's
        raise ValueError(f"Hash mismatch for {blobpath} (expected {expected_hash}, its SHA-256 is "
                         f"{hashlib.sha256(data).hexdigest()})")
    return data


def load_tiktoken_bpe(tiktoken_bpe_file: str, expected_hash: str | None = None) -> dict[bytes, int]:
    """{token bytes: rank} of a `.tiktoken` file, as tiktoken.load.load_tiktoken_bpe (read natively).

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "tiny.tiktoken")
    >>> dump_tiktoken_bpe({b"a": 0, b"b": 1, b"ab": 2}, path)
    >>> load_tiktoken_bpe(path)
    {b'a': 0, b'b': 1, b'ab': 2}
    """
    return read_tiktoken(tiktoken_bpe_file, read_file_cached(tiktoken_bpe_file, expected_hash))


def dump_tiktoken_bpe(bpe_ranks: Mapping[bytes, int], tiktoken_bpe_file: str) -> None:
    """Write ranks as a `.tiktoken` file (each token in base64, a space, its rank; in rank order), as
    tiktoken.load.dump_tiktoken_bpe, to a local path (tiktoken needs blobfile for it); written whole or not at
    all. Ranks load_tiktoken_bpe would refuse (the empty token, a rank outside 0..MAX_TOKEN_ID or given twice)
    are a ValueError, a token not bytes or a rank not an int a TypeError, before anything is written."""
    text = tiktoken_text(bpe_ranks)     # checked first: ranks load_tiktoken_bpe would refuse are not written
    with atomic_output(tiktoken_bpe_file) as f:
        f.write(text)


def data_gym_to_mergeable_bpe_ranks(vocab_bpe_file: str, encoder_json_file: str, vocab_bpe_hash: str | None = None,
                                    encoder_json_hash: str | None = None,
                                    clobber_one_byte_tokens: bool = False) -> dict[bytes, int]:
    """Ranks from GPT-2's vocab.bpe and encoder.json, as tiktoken.load.data_gym_to_mergeable_bpe_ranks: the 256
    bytes in GPT-2's order (its printable characters first), then a token a merge of vocab.bpe; a ValueError when
    encoder.json (its <|endoftext|> and <|startoftext|> left out) gives other ids (tiktoken: an AssertionError);
    a FormatError (a ValueError) naming the file, and the line of vocab.bpe, when either cannot be read, or when
    two merges make one token (tiktoken's dict keeps the last)."""
    decoder = {char: byte for byte, char in bytes_to_unicode().items()}
    order = sorted(decoder.values(), key=lambda byte: ord(bytes_to_unicode()[byte]))    # printable ones first

    def decode(value: str, path: str, line: int | None) -> bytes:
        try:
            return bytes(decoder[char] for char in value)
        except KeyError as exc:
            raise FormatError(path, line, f"{value!r} holds {exc.args[0]!r}, which GPT-2's byte encoding does not "
                              "use") from None

    ranks = {bytes([byte]): rank for rank, byte in enumerate(order)}
    text = read_text(vocab_bpe_file, read_file_cached(vocab_bpe_file, vocab_bpe_hash))
    for number, line in enumerate(text.split("\n")[1:-1], start=2):     # (tiktoken's reading)
        parts = line.split()
        if len(parts) != 2:
            raise FormatError(vocab_bpe_file, number, f"expected two tokens, got {line!r}")
        token = decode(parts[0], vocab_bpe_file, number) + decode(parts[1], vocab_bpe_file, number)
        if token in ranks:      # (made by a merge, as it has two bytes or more: rank 256 on line 2, and so on)
            raise FormatError(vocab_bpe_file, number, f"the merge {line!r} makes {token!r}, made on line "
                              f"{ranks[token] - 254} already")
        ranks[token] = len(ranks)
    text = read_text(encoder_json_file, read_file_cached(encoder_json_file, encoder_json_hash))
    encoder = parse_json(encoder_json_file, text.removeprefix("\ufeff"))     # (a BOM: json.loads of bytes reads past)
    if not isinstance(encoder, dict):
        raise FormatError(encoder_json_file, None, f"expected a JSON object {{token: id}}, got "
                          f"{type(encoder).__name__}")
    given = {decode(token, encoder_json_file, None): rank for token, rank in encoder.items()}
    given.pop(b"<|endoftext|>", None)
    given.pop(b"<|startoftext|>", None)
    if clobber_one_byte_tokens:
        ranks.update((token, rank) for token, rank in given.items() if len(token) == 1)
        holders: dict[int, bytes] = {}      # a byte given a merge's id, or another byte's, is no rank
        for token, rank in ranks.items():
            if type(rank) is not int or not 0 <= rank <= MAX_TOKEN_ID:
                raise FormatError(encoder_json_file, None, f"the id of {token!r} is {rank!r}, not an int in "
                                  f"0..{MAX_TOKEN_ID}")
            if holders.setdefault(rank, token) != token:
                raise FormatError(encoder_json_file, None, f"{holders[rank]!r} and {token!r} have the same id {rank}")
    if ranks != given:
        token = next((t for t in ranks if given.get(t) != ranks[t]), None)
        what = (f"{token!r} is {ranks[token]} by the merges, {given.get(token)!r} in {encoder_json_file}"
                if token is not None else f"{encoder_json_file} holds tokens no merge makes")
        raise ValueError(f"{encoder_json_file} does not match {vocab_bpe_file}: {what}")
    return ranks
