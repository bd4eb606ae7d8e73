"""tiktoken's ranks: reading `.tiktoken` files and recovering the merge list from ranks.

tiktoken describes a byte-level BPE by ranks, {token bytes: rank}: the rank is the token's id and its merge
priority (a pair of adjacent parts is joined when their concatenation has a rank, the lowest rank first).
bpe_fast describes the same by a vocabulary {id: bytes} and an ordered merge list. The two agree when the
merges are the multi-byte tokens in rank order, each the pair (a, b) that tiktoken's rule, using only the
lower ranks, leaves of its own bytes (merges_from_ranks). A token that rule does not leave in two parts
(tiktoken can never produce it from text that is not the token itself) is refused.

Decisions:
- Ranks are distinct ints in 0..MAX_TOKEN_ID; gaps are allowed, as in tiktoken (the ids are the ranks, so an
  id in a gap decodes to nothing, and n_vocab is the largest rank + 1).
- All 256 single bytes must have a rank (tiktoken fails on a text holding a missing byte); their ranks may be
  anything: a single byte is never the result of a merge, so its rank is only its id.
- A `.tiktoken` file is read strictly: each non-empty line is a base64 token (standard alphabet, padded, not
  empty), blanks (spaces or tabs), and a decimal rank of at most 10 digits, with blanks around allowed and
  LF, CRLF or CR line ends (tiktoken's bytes.splitlines); a UTF-8 byte order mark before the first line is read
  past (tiktoken's base64 decoder drops it); a token or rank given twice is an error (tiktoken's reader keeps
  the last). A ``.gz`` name is read through gzip. A path may be a str, an os.PathLike or bytes. Errors are
  bpe_fast.formats.FormatError (a ValueError) naming the file and the 1-based line.
"""
from __future__ import annotations

import array
import base64
import bisect
import operator
import os
import re
import zlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from ._numpy import np
from ._types import Merges, StrPath, Vocab
from ._limits import MAX_TOKEN_ID, sparsity_problem
from .specials import id_holders

if TYPE_CHECKING:
    from typing import Union

    from numpy.typing import NDArray
    from typing_extensions import TypeAlias

    from .tokenizer import Tokenizer

    # RankedTokens' arrays: NumPy's, or array.array buffers (read natively: see RankedTokens)
    Ints: TypeAlias = Union[NDArray[np.int64], array.array[int]]
    Int32s: TypeAlias = Union[NDArray[np.int32], array.array[int]]
    Bytes: TypeAlias = Union[NDArray[np.uint8], array.array[int]]

__all__ = ["read_tiktoken", "tiktoken_text", "merges_from_ranks", "ranks_from_tokenizer"]


def read_tiktoken(path: StrPath, data: bytes | None = None) -> dict[bytes, int]:
    """{token bytes: rank} from a `.tiktoken` file (``.tiktoken.gz``: gzip-compressed; data: its contents, already
    read and decompressed, which errors name the file for).

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "tiny.tiktoken")
    >>> with open(path, "w") as f:
    ...     _ = f.write("YQ== 0\\nYg== 1\\nYWI= 2\\n")
    >>> read_tiktoken(path)
    {b'a': 0, b'b': 1, b'ab': 2}
    >>> with open(path, "w") as f:
    ...     _ = f.write("YQ== 0\\nYg==1\\n")
    >>> read_tiktoken(path)
    Traceback (most recent call last):
    ...
    bpe_fast.formats.FormatError: ...tiny.tiktoken:2: expected a base64 token, blanks and a decimal rank, got 'Yg==1'
    """
    tokens, values = _read_arrays(path, data)[:2]
    return dict(zip(tokens, values.tolist()))


def tiktoken_text(ranks: Mapping[bytes, int]) -> bytes:
    """The contents of a `.tiktoken` file of ranks ({token bytes: rank}): each token in base64, a space and its
    rank, in rank order; TypeError/ValueError naming an entry read_tiktoken would refuse (the empty token, a rank
    outside 0..MAX_TOKEN_ID or given twice).

    >>> tiktoken_text({b"b": 1, b"a": 0})
    b'YQ== 0\\nYg== 1\\n'
    """
    tokens, values = _ranked_tokens(ranks)
    return b"".join(base64.b64encode(token) + b" %d\n" % rank for token, rank in zip(tokens, values.tolist()))


def read_tiktoken_bytes(path: StrPath) -> bytes:
    """The contents of a `.tiktoken` file (a ``.gz`` name: decompressed); FormatError naming it when it cannot
    be read (a broken gzip stream), OSError when it is missing or not readable."""
    opener: Any = open
    if os.fsdecode(path).endswith(".gz"):      # (a bytes path too)
        import gzip

        opener = gzip.open
    try:
        with opener(path, "rb") as f:
            return f.read()
    except (EOFError, OSError, zlib.error) as exc:
        if isinstance(exc, OSError) and exc.errno is not None:     # the system's (missing, not a folder, ...)
            raise                                                   # gzip's BadGzipFile has no errno
        raise _format_error(path, None, f"cannot read: {exc}") from exc


def _read_arrays(path: StrPath, data: bytes | None = None) -> tuple[list[bytes], Ints, Ints, Bytes, Ints, bool]:
    """(tokens, ranks, lines, pool, offsets, rise) of a `.tiktoken` file (data: its contents, if already read):
    its tokens (bytes) in file order, their ranks (int64) and line numbers (int64), checked (FormatError naming
    the file and line), the tokens end to end (uint8; token k is pool[offsets[k]:offsets[k + 1]]), and whether
    the ranks rise in file order (as in tiktoken's files); the arrays are array.array buffers
    (bpe_fast._ranks.parse_tiktoken's)."""
    from ._ranks import parse_tiktoken, ranks_rise
    from ._scan import first_repeat

    path = os.fsdecode(path)        # (a bytes path: named as text)
    if data is None:
        data = read_tiktoken_bytes(path)
    if data.startswith(_BOM):       # an editor's byte order mark: tiktoken's base64 decoder drops it
        data = data[len(_BOM):]
    pool, offsets, values, lines, bad = parse_tiktoken(data)
    if bad and _LONE_CR.search(data) and not data.startswith(b"\x1f\x8b"):
        # lines ending in CR alone (or some of them), which tiktoken's bytes.splitlines ends lines at too
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        pool, offsets, values, lines, bad = parse_tiktoken(data)
    if bad:
        if data.startswith(b"\x1f\x8b"):    # gzip's magic: compressed bytes read as text (a line of them may hold a CR)
            raise _format_error(path, None, "is gzip-compressed (it starts with gzip's bytes 1F 8B), not the text of a "
                                  ".tiktoken file: decompress it (Tokenizer.from_tiktoken and "
                                  "Encoding.from_tiktoken_file read a name ending in .gz through gzip; load_tiktoken_bpe, "
                                  "as tiktoken's, does not)")
        line = data.split(b"\n", bad)[bad - 1]
        raise _format_error(path, bad, _line_problem(line[:-1] if line.endswith(b"\r") else line))
    joined = pool.tobytes()
    bounds = offsets.tolist()
    tokens = [joined[a:b] for a, b in zip(bounds, bounds[1:])]
    rise = ranks_rise(values, MAX_TOKEN_ID)     # as in tiktoken's files: then no rank is too large or given twice
    if not rise:
        big = np.flatnonzero(np.asarray(values) > MAX_TOKEN_ID)
        if len(big):
            k = int(big[0])
            raise _format_error(path, int(lines[k]), f"the rank {int(values[k])} is beyond {MAX_TOKEN_ID}")
    if first_repeat(pool, offsets) >= 0:       # natively: a set of the tokens took o200k's file 13 ms of 80
        first: dict[bytes, int] = {}
        for token, line in zip(tokens, lines.tolist()):
            if token in first:
                raise _format_error(path, line, f"the token {token!r} is on line {first[token]} already")
            first[token] = line
    if not rise:
        order = np.argsort(values, kind="stable")
        same = np.flatnonzero(np.asarray(values)[order][1:] == np.asarray(values)[order][:-1])
        if len(same):
            a, b = sorted(order[int(same[0]):int(same[0]) + 2].tolist())     # lines where one rank is given twice
            raise _format_error(path, int(lines[b]), f"the rank {int(values[b])} is on line {int(lines[a])} already")
    return tokens, values, lines, pool, offsets, rise


def _format_error(path: StrPath, line: int | None, message: str) -> ValueError:
    """bpe_fast.formats.FormatError(path, line, message), formats imported only when a file's error is raised (an
    Encoding of ranks in a dict, or of a good file, imports none of the readers)."""
    from .formats import FormatError

    return FormatError(path, line, message)


_BOM = b"\xef\xbb\xbf"
_LONE_CR = re.compile(rb"\r(?!\n)")


def check_has_ranks(path: StrPath, count: int) -> None:
    """FormatError naming the `.tiktoken` file at path when it holds no ranks (count 0: empty, or blank lines
    only), which read_tiktoken reads as tiktoken does ({}), but no tokenizer can be made of."""
    if not count:
        raise _format_error(path, None, 'holds no ranks (no line "base64 rank": an empty file?)')


def _line_problem(line: bytes) -> str:
    """What is wrong with a line of a `.tiktoken` file that the parser refused."""
    m = re.fullmatch(rb"[ \t]*([^ \t]+)[ \t]+([^ \t]+)[ \t]*", line)
    if m is None:
        return f"expected a base64 token, blanks and a decimal rank, got {_show(line)}"
    token_text, rank_text = m.groups()
    if not (rank_text.isdigit() and len(rank_text) <= 10):
        return f"the rank {_show(rank_text)} is not a decimal integer of at most 10 digits"
    return f"the token {_show(token_text)} is not padded base64 of a non-empty token"


def _show(raw: bytes) -> str:
    """A line's bytes for an error message: as text, shortened."""
    text = raw.decode("utf-8", "replace")
    return repr(text if len(text) <= 80 else text[:77] + "...")


def _ranked_tokens(ranks: Mapping[bytes, int]) -> tuple[list[bytes], NDArray[np.int64]]:
    """(tokens, values): the tokens of `ranks` ({bytes: int}) in rank order and their ranks (int64 array);
    TypeError/ValueError naming a bad entry."""
    if not hasattr(ranks, "items"):
        raise TypeError(f"ranks must be a dict[bytes, int], got {type(ranks).__name__}")
    tokens = list(ranks.keys())
    values = list(ranks.values())
    if not set(map(type, tokens)) <= {bytes}:
        bad = next((t for t in tokens if not isinstance(t, bytes)), None)
        if bad is not None:
            raise TypeError(f"ranks: the token {bad!r} is not bytes")
        tokens = [bytes(t) for t in tokens]
    if not set(map(type, values)) <= {int}:
        for token, value in zip(tokens, values):
            if type(value) is not int and (not isinstance(value, (int, np.integer)) or isinstance(value, bool)):
                raise TypeError(f"ranks: the rank of {token!r} is not an int: {value!r}")
        values = [operator.index(v) for v in values]
    if b"" in ranks:
        raise ValueError("ranks: the empty token has a rank")
    try:
        array = np.fromiter(values, dtype=np.int64, count=len(values))
    except OverflowError:       # beyond int64: out of range, found below
        array = np.array(values, dtype=object)
    if len(array) and not (0 <= array.min() and array.max() <= MAX_TOKEN_ID):
        k = next(k for k, v in enumerate(values) if not 0 <= v <= MAX_TOKEN_ID)
        raise ValueError(f"ranks: the rank {values[k]} of {tokens[k]!r} is out of range 0..{MAX_TOKEN_ID}")
    array = array.astype(np.int64)
    if np.all(array[1:] > array[:-1]):      # given in rank order, as tiktoken's loader gives them
        return tokens, array
    order = np.argsort(array, kind="stable")
    sorted_values = array[order]
    same = np.flatnonzero(sorted_values[1:] == sorted_values[:-1])
    if len(same):
        k = int(same[0])
        a, b = tokens[order[k]], tokens[order[k + 1]]
        raise ValueError(f"ranks: {a!r} and {b!r} have the same rank {int(sorted_values[k])}")
    return list(map(tokens.__getitem__, order.tolist())), sorted_values


def merges_from_ranks(ranks: Mapping[bytes, int]) -> Merges:
    """The merge list, [(bytes, bytes)] in rank order, that gives the ids tiktoken gives for `ranks`
    ({token bytes: rank}): for each token of two bytes or more, lowest rank first, the two parts tiktoken's rule
    leaves of its bytes using only the lower ranks. ValueError naming the token (and its rank) when that is not
    two parts (the token is unreachable), or naming the single bytes without a rank.

    >>> ranks = {bytes([b]): b for b in range(256)}
    >>> ranks.update({b"ab": 256, b"abc": 257, b"bc": 258})
    >>> merges_from_ranks(ranks)
    [(b'a', b'b'), (b'ab', b'c'), (b'b', b'c')]
    >>> merges_from_ranks(ranks | {b"xyz": 259})
    Traceback (most recent call last):
    ...
    ValueError: ranks: the token b'xyz' (rank 259) cannot be made by merging tokens of lower rank: ...
    """
    return _merges_in_order(*_ranked_tokens(ranks))


class RankedTokens(NamedTuple):
    """tiktoken's ranks, checked, in rank order: the tokens, their ranks (ascending int64), the tokens end to end
    (pool, uint8; token k is pool[offsets[k]:offsets[k + 1]]) and byte_index[b], the index of the token bytes([b])
    (all 256 have one, int32). From a file: its path and each token's line (in rank order), which errors name.
    The arrays are NumPy's or array.array buffers (read natively from a dict or a file: building a tokenizer
    from ranks imports no NumPy); the methods that need NumPy read them with np.asarray."""
    tokens: list[bytes]
    values: Ints
    pool: Bytes
    offsets: Ints
    byte_index: Int32s
    path: str | None = None
    lines: Ints | None = None

    def recover(self) -> tuple[NDArray[np.int32], NDArray[np.int32]]:
        """(left, right): for token k, the indices of the two lower-ranked tokens whose merge makes it (int32
        arrays; -1 for a single byte): tiktoken's rule, with the lower ranks only, leaves its bytes in exactly
        those two parts, so merging its bytes with all the ranks gives the token itself. ValueError naming the
        first token that rule cannot make. Native, without the GIL."""
        from ._ranks import recover_merges

        left, right, bad, parts = recover_merges(self.pool, self.offsets, self.byte_index)
        if bad >= 0:
            raise self.unmade(bad, parts)
        return left, right

    def unmade(self, index: int, parts: int) -> ValueError:
        """The error for token `index`, which tiktoken's rule with the lower ranks leaves in `parts` parts."""
        token = self.tokens[index]
        shown = repr(token) if len(token) <= 200 else f"{token[:100]!r}... ({len(token):,} bytes)"
        message = (f"the token {shown} (rank {int(self.values[index])}) cannot be made by merging tokens of lower "
                   f"rank: merging its bytes by the ranks below its own leaves {parts} parts (bpe_fast recovers a merge "
                   "list from the ranks, which needs each token made of two tokens ranked before it, as in OpenAI's "
                   "encodings and Llama 4's; tiktoken builds an encoding from such ranks all the same, as Llama 3's, "
                   "and so does Tokenizer.from_tiktoken)")
        if self.path is not None and self.lines is not None:
            return _format_error(self.path, int(self.lines[index]), message)
        return ValueError(f"ranks: {message}")

    def lookup_merges(self) -> Merges:
        """A merge list for ranks some of whose tokens merging does not make (Llama 3's: tiktoken gives them only
        to a pre-token that is the whole token): for each multi-byte token in rank order, a split of it into two
        tokens ranked before it, the one whose higher rank is lowest (the first such cut on a tie; none for a
        token with no such split). Only what Tokenizer.merges shows: such a tokenizer encodes by the ranks, each
        ranked token looked up whole."""
        token, left, right, _ = every_split(self.pool, self.offsets)     # by token (rank order), then cut
        lower = (left < token) & (right < token)
        token, left, right = token[lower], left[lower], right[lower]
        # of each token's splits, the one whose higher part is lowest, the first cut on a tie (a stable sort)
        order = np.lexsort((np.maximum(left, right), token))
        token, left, right = token[order], left[order], right[order]
        first = np.flatnonzero(np.diff(token, prepend=-1))
        get = self.tokens.__getitem__
        return list(zip(map(get, left[first].tolist()), map(get, right[first].tolist())))

    def every_split_merges(self) -> Merges:
        """Every way of writing each multi-byte token as two ranked tokens, as a merge list in rank order of the
        token made, a token's splits by the ranks of their left then right part: what transformers'
        TikTokenConverter lists in the tokenizer.json it makes of tiktoken's ranks (Llama 3's), which HF reads
        with ignore_merges as tiktoken reads the ranks (bpe_fast.hf)."""
        token, left, right, _ = every_split(self.pool, self.offsets)
        order = np.lexsort((right, left, token))
        get = self.tokens.__getitem__
        return list(zip(map(get, left[order].tolist()), map(get, right[order].tolist())))

    def merges_of_ranks(self, left: Int32s, right: Int32s) -> Merges:
        """The merge list from the ranks of the two tokens whose merge makes each multi-byte token, in rank order
        (BPETables.splits() of tables built from these ranks)."""
        get = self.tokens.__getitem__
        return list(zip(map(get, np.searchsorted(self.values, left).tolist()),
                        map(get, np.searchsorted(self.values, right).tolist())))

    def find(self, token: bytes) -> int:
        """The index of `token` among the tokens, or -1."""
        from ._ranks import find_token

        return find_token(self.pool, self.offsets, token)

    def merges(self, left: NDArray[np.int32], right: NDArray[np.int32]) -> Merges:
        """The merge list from recover()'s arrays: (bytes, bytes) for each multi-byte token, in rank order."""
        multi = np.flatnonzero(left >= 0)
        get = self.tokens.__getitem__
        return list(zip(map(get, left[multi].tolist()), map(get, right[multi].tolist())))


def every_split(pool: Bytes, offsets: Ints, expected: NDArray[np.int64] | None = None,
                ) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], int]:
    """Every way of writing a token as two tokens, of the distinct tokens pool[offsets[k]:offsets[k + 1]]: the
    arrays (k, left, right) of token indices, one entry a split, ordered by k, then by where the cut is, and
    `stop`. What tiktoken's rule may join (two adjacent parts whose bytes are a ranked token), and what a
    tokenizer.json converted from ranks lists as merges. expected (one count a token, optional): the search
    stops after the first token k whose number of splits is not expected[k], and stop is k (else -1)."""
    from ._gpt2_files import TokenIndex

    found = TokenIndex(pool, offsets).splits(expected)
    if found is not None:
        return found
    # tokens crafted to crowd the index: a dict
    tokens = [bytes(pool[offsets[k]:offsets[k + 1]]) for k in range(len(offsets) - 1)]
    at = {token: k for k, token in enumerate(tokens)}
    rows: list[tuple[int, int, int]] = []
    for k, t in enumerate(tokens):
        mine = [(k, at[t[:c]], at[t[c:]]) for c in range(1, len(t)) if t[:c] in at and t[c:] in at]
        rows += mine
        if expected is not None and len(mine) != expected[k]:
            return (*(np.array([row[i] for row in rows], dtype=np.int64) for i in range(3)), k)  # type: ignore[return-value]
    return (*(np.array([row[i] for row in rows], dtype=np.int64) for i in range(3)), -1)  # type: ignore[return-value]


def _ranked(tokens: list[bytes], values: Ints, pool: Bytes | None = None, offsets: Ints | None = None,
            path: str | None = None, lines: Ints | None = None) -> RankedTokens:
    """RankedTokens of the distinct tokens `tokens` in rank order with the ranks `values` (pool and offsets:
    theirs when the caller has them; path and lines: the file's, when read from one); ValueError naming the
    single bytes without a rank (a FormatError naming the file)."""
    from ._ranks import byte_index as index_bytes

    if pool is None or offsets is None:
        offsets = np.zeros(len(tokens) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens)), out=offsets[1:])
        pool = np.frombuffer(b"".join(tokens), dtype=np.uint8)
    byte_index = index_bytes(pool, offsets)
    missing = [b for b in range(256) if byte_index[b] < 0]
    if missing:
        shown = ", ".join(repr(bytes([b])) for b in missing[:8]) + (", ..." if len(missing) > 8 else "")
        message = f"{len(missing)} of the 256 single bytes have no rank ({shown}); every byte needs one"
        raise _format_error(path, None, message) if path is not None else ValueError(f"ranks: {message}")
    return RankedTokens(tokens, values, pool, offsets, byte_index, path, lines)


def ranked_from_arrays(pool: NDArray[np.uint8], offsets: NDArray[np.int64], values: NDArray[np.int64],
                       path: StrPath | None = None) -> RankedTokens:
    """RankedTokens of distinct tokens given as arrays in rank order (token k is pool[offsets[k]:offsets[k + 1]],
    rank values[k], ascending), as a tokenizer.json's model that is tiktoken's ranks (bpe_fast.hf); path: the
    file they come from, which errors name."""
    from ._gpt2_files import token_list

    return _ranked(token_list(pool, offsets), values, pool, offsets, None if path is None else os.fspath(path))


def not_as_ranks(pool: NDArray[np.uint8], offsets: NDArray[np.int64], ids: NDArray[np.int64],
                  left: NDArray[np.int64], right: NDArray[np.int64], joined: NDArray[np.int64],
                  added: Sequence[int] = (), describe: bool = True) -> str | None:
    """None when a model with ignore_merges is tiktoken's ranks, its ids the ranks, as transformers'
    TikTokenConverter writes them (Llama 3's files); else what is not so. It is when its merges (distinct, merge
    k two vocab tokens left[k] and right[k] whose bytes make vocab token joined[k], as the readers check) are
    every way of writing a token as two, in the order of the ids of the tokens they make: HF then gives a
    pre-token that is a vocab token its id, and joins any two adjacent parts whose bytes are a token, the lowest
    id first, which is tiktoken's rule with these ranks. (Where two ways of writing one token are both adjacent
    at once, HF joins the one listed first, tiktoken the leftmost; no text was found where that changes the ids:
    2 million made to look for it on Llama 3's file.) added: the vocab tokens that are added tokens (found in the
    text first, never in a pre-token): not ranks, and in no merge. describe: false when "" does for what is not
    so."""
    from .formats import token_to_str
    from .token_arrays import gather_tokens

    made = ids[joined]
    later = np.flatnonzero(made[1:] < made[:-1])
    if len(later):
        k = int(later[0]) + 1
        return f"merge {k} makes id {made[k]}, after merge {k - 1} made id {made[k - 1]}" if describe else ""
    ranked = np.arange(len(ids))
    if len(added):
        is_added = np.zeros(len(ids), dtype=bool)
        is_added[added] = True
        touching = np.flatnonzero(is_added[left] | is_added[right] | is_added[joined])
        if len(touching):
            if not describe:
                return ""
            k = int(touching[0])
            added_token = next(int(t[k]) for t in (left, right, joined) if is_added[t[k]])
            shown = token_to_str(bytes(pool[offsets[added_token]:offsets[added_token + 1]]))
            return f"merge {k} takes or makes {shown!r}, an added token"
        ranked = np.flatnonzero(~is_added)
        pool, offsets = gather_tokens(pool, offsets, ranked)
        joined = (np.cumsum(~is_added) - 1)[joined]        # the index among the ranked tokens
    # the listed merges are among the splits (the readers check it): they are all of them when each token is
    # made by as many merges as it has splits (the search stops at the first that is not: a file of one merge a
    # token, as bpe_fast's, stops at once)
    token, parts_left, parts_right, stop = every_split(pool, offsets, np.bincount(joined, minlength=len(ranked)))
    if stop < 0:
        return None
    if not describe:
        return ""
    listed = np.isin(ranked[parts_left] << 32 | ranked[parts_right], left << 32 | right)
    missing = np.flatnonzero((token == stop) & ~listed)[0]
    shown = [token_to_str(bytes(pool[offsets[k]:offsets[k + 1]]))
             for k in (stop, parts_left[missing], parts_right[missing])]
    return (f"the merges leave out ways of writing a token as two, as {shown[1]!r} + {shown[2]!r} for "
            f"{shown[0]!r}")


def ranks_of_model(pool: NDArray[np.uint8], offsets: NDArray[np.int64], ids: NDArray[np.int64],
                   added: Sequence[int] = (), path: StrPath | None = None) -> RankedTokens:
    """The model's tokens but the added ones (their indices `added`) as tiktoken's ranks, the ids the ranks (ids
    distinct, every byte a token: checked by the readers)."""
    from .token_arrays import gather_tokens

    kept = np.ones(len(ids), dtype=bool)
    kept[added] = False
    order = np.argsort(ids, kind="stable")
    order = order[kept[order]]
    return ranked_from_arrays(*gather_tokens(pool, offsets, order), ids[order], path)


def ranks_of_merge_list(vocab: Vocab, merges: Merges, added: Sequence[bytes] = (),
                        path: StrPath | None = None) -> tuple[RankedTokens | None, str]:
    """A vocabulary {id: bytes} and merge list (read and checked: each merge's tokens and join in the vocab, no
    pair twice) as tiktoken's ranks when the merges are every way of writing a token as two in the order of the
    ids made (not_as_ranks; `added`: the bytes of the special or added tokens, not ranks), else (None, what is
    not so). path: the file they come from, which errors name."""
    tokens = list(vocab.values())
    at = {token: k for k, token in enumerate(tokens)}
    offsets = np.zeros(len(tokens) + 1, dtype=np.int64)
    np.cumsum([len(t) for t in tokens], out=offsets[1:])
    pool = np.frombuffer(b"".join(tokens), dtype=np.uint8)
    ids = np.fromiter(vocab, dtype=np.int64, count=len(vocab))
    left, right, joined = (np.array([at[part] for part in parts], dtype=np.int64)
                           for parts in ([a for a, _ in merges], [b for _, b in merges], [a + b for a, b in merges]))
    indices = sorted({at[token] for token in added if token in at})
    problem = not_as_ranks(pool, offsets, ids, left, right, joined, indices)
    if problem is not None:
        return None, problem
    return ranks_of_model(pool, offsets, ids, indices, path), ""


def _merges_in_order(tokens: list[bytes], values: NDArray[np.int64]) -> Merges:
    """merges_from_ranks of the tokens `tokens` in rank order, with the ranks `values` (for messages)."""
    ranked = _ranked(tokens, values)
    return ranked.merges(*ranked.recover())


def ranked_tokens(path_or_ranks: StrPath | Mapping[bytes, int]) -> RankedTokens:
    """tiktoken's ranks (a `.tiktoken` file, its path a str, os.PathLike or bytes, or a dict {bytes: int}) checked,
    in rank order. Whether they make every token is RankedTokens.recover's to check. A file's ranks too sparse
    for the encoder's tables, which are indexed by id (formats.sparsity_problem), are a FormatError naming the
    line of the largest."""
    if isinstance(path_or_ranks, (str, bytes, os.PathLike)):     # (bytes: a path, as from_files takes one)
        path = os.fsdecode(path_or_ranks)
        tokens, values, lines, pool, offsets, rise = _read_arrays(path)
        check_has_ranks(path, len(values))
        largest = len(values) - 1 if rise else int(np.argmax(values))
        problem = sparsity_problem(int(values[largest]), len(values))
        if problem:         # the encoder's tables are indexed by id: named here, with the file and line
            raise _format_error(path, int(lines[largest]), problem)
        if rise:
            return _ranked(tokens, values, pool, offsets, path, lines)
        order = np.argsort(values, kind="stable")
        return _ranked(list(map(tokens.__getitem__, order.tolist())), np.asarray(values)[order], path=path,
                       lines=np.asarray(lines)[order])
    if type(path_or_ranks) is dict:     # a plain dict of bytes and ints in rank order, as tiktoken's loader gives:
        from ._ranks import ranks_arrays        # read natively; anything else is read below, which names it

        arrays = ranks_arrays(path_or_ranks, MAX_TOKEN_ID)
        if arrays is not None:
            pool, offsets, values = arrays
            return _ranked(list(path_or_ranks), values, pool, offsets)
    if hasattr(path_or_ranks, "items"):
        return _ranked(*_ranked_tokens(path_or_ranks))
    raise TypeError("expected the path of a .tiktoken file or a dict[bytes, int] of ranks, got "
                    f"{type(path_or_ranks).__name__}")


def check_tiktoken_specials(ranked: RankedTokens, special_tokens: Mapping[str, int] | None) -> dict[str, int]:
    """tiktoken's special tokens ({str: id}, or None) beside the ranks `ranked`, checked, as a new dict in the
    given order: a special token's id must not be a rank, nor its bytes a ranked token (bpe_fast gives a token's
    bytes one id). Several special tokens may share an id, as in tiktoken's o200k_harmony (an alias: each
    encodes to the id, which decodes to the first; specials.id_holders)."""
    if special_tokens is None:
        special_tokens = {}
    if not hasattr(special_tokens, "items"):
        raise TypeError(f"special_tokens must be a dict[str, int], got {type(special_tokens).__name__}")
    values = ranked.values
    checked: dict[str, int] = {}
    # a special token's bytes against the ranked tokens: a search of the arrays each (no 200k-entry set) for a
    # few special tokens, a set for many
    token_set = set(ranked.tokens) if len(special_tokens) > 16 else None
    for name, i in special_tokens.items():
        if not isinstance(name, str):
            raise TypeError(f"special token {name!r} is not a str")
        if not name:
            raise ValueError("special tokens must not be empty strings")
        if type(i) is not int and (not isinstance(i, (int, np.integer)) or isinstance(i, bool)):
            raise TypeError(f"the id of special token {name!r} is not an int: {i!r}")
        i = int(i)
        if not 0 <= i <= MAX_TOKEN_ID:
            raise ValueError(f"the id {i} of special token {name!r} is out of range 0..{MAX_TOKEN_ID}")
        at = bisect.bisect_left(values, i)
        if at < len(values) and values[at] == i:
            raise ValueError(f"special token {name!r}: its id {i} is the rank of {ranked.tokens[at]!r}")
        data = name.encode("utf-8")
        if (data in token_set) if token_set is not None else ranked.find(data) >= 0:
            raise ValueError(f"special token {name!r}: its bytes are a ranked token "
                             "(bpe_fast gives one id to each token's bytes)")
        checked[str(name)] = i
    return checked


def vocab_of(ranked: RankedTokens, special_tokens: Mapping[str, int]) -> Vocab:
    """{id: bytes} of the ranks and the special tokens (checked by check_tiktoken_specials)."""
    vocab = dict(zip(ranked.values.tolist(), ranked.tokens))
    for i, name in id_holders(special_tokens).items():      # an id several special tokens share: the first's bytes
        vocab[i] = name.encode("utf-8")
    return vocab


def ranks_from_tokenizer(tokenizer: Tokenizer) -> dict[bytes, int]:
    """{token bytes: id} for tiktoken (its ranks), refused with a ValueError when tiktoken's rule with these
    ranks would give other ids than the tokenizer: a single byte without a token, two tokens with the same bytes,
    a multi-byte token no merge makes, a special token a merge makes, or merged tokens whose ids are not in the
    order of their first merges, or a tokenizer with a normalizer (tiktoken does not normalize text) or with
    special tokens that take the white space before them (tiktoken's do not)."""
    if tokenizer.normalizer is not None:
        raise ValueError(f"the tokenizer normalizes text to {tokenizer.normalizer} before encoding it, and tiktoken "
                         "does not normalize text: its ids would differ (tokenizer.with_normalizer(None) has none)")
    if tokenizer.special_lstrip:
        raise ValueError(f"special tokens {sorted(tokenizer.special_lstrip)} take the white space before them, and "
                         "tiktoken's do not: its ids would differ (tokenizer.with_special_lstrip([]) has none)")
    if tokenizer.by_ranks_only:     # from tiktoken's ranks, which merging does not rebuild (Llama 3's): they are
        return dict(sorted(tokenizer.tiktoken_ranks().items(), key=lambda item: item[1]))     # its ids as they were
    specials = {s.encode("utf-8") for s in tokenizer.special_tokens}
    ranks: dict[bytes, int] = {}
    for i, token in sorted(tokenizer.vocab.items()):
        if token in specials:
            continue
        if token in ranks:
            raise ValueError(f"tokens {ranks[token]} and {i} have the same bytes {token!r}; tiktoken's ranks "
                             "hold one id a token")
        ranks[token] = i
    missing = [b for b in range(256) if bytes([b]) not in ranks]
    special_byte = next((bytes([b]) for b in missing if bytes([b]) in specials), None)
    if special_byte is not None:
        name = special_byte.decode("utf-8")
        raise ValueError(f"the single byte {special_byte!r} is the special token {name!r} (id "
                         f"{tokenizer.special_tokens[name]}), which tiktoken's ranks leave out; tiktoken needs all 256 "
                         "bytes ranked")
    if missing:
        raise ValueError(f"the single byte {bytes([missing[0]])!r} has no token ({len(missing)} bytes have "
                         "none); tiktoken needs all 256")
    made: dict[bytes, int] = {}
    for k, (a, b) in enumerate(tokenizer.merges):
        if a + b in specials:
            name = (a + b).decode("utf-8")
            raise ValueError(f"special token {name!r} (id {tokenizer.special_tokens[name]}) is made by merge {k}; "
                             "tiktoken's ranks leave special tokens out, so tiktoken would not make it, nor the "
                             "tokens merged from it")
        made.setdefault(a + b, len(made))
    for token, i in ranks.items():
        if len(token) > 1 and token not in made:
            raise ValueError(f"token {i} ({token!r}) is made by no merge; tiktoken would merge into it")
    previous = -1
    previous_token = None
    for token in made:
        i = ranks[token]
        if i <= previous:
            raise ValueError(f"token {i} ({token!r}) is merged after token {previous} ({previous_token!r}); "
                             "tiktoken merges in id order, so the ids must follow the merge order")
        previous, previous_token = i, token
    return ranks
