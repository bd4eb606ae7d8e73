"""tiktoken's native module, ``tiktoken._tiktoken``, on bpe_fast's encoder: its one class, CoreBPE.

tiktoken's Encoding checks its keywords in Python and hands the work to ``self._core_bpe``, a CoreBPE made from
the ranks, the special tokens and the pattern. Code written for tiktoken calls that core itself
(``enc._core_bpe.encode_ordinary(text)``, ``enc._core_bpe.encode_single_piece(piece)``) or makes one to put in
its place (``enc._core_bpe = tiktoken._tiktoken.CoreBPE(ranks, specials, enc._pat_str)``, to give an encoding
other special tokens). bpe_fast.Encoding has the same layer: its CoreBPE holds the Tokenizer doing the work,
with tiktoken's core's methods, arguments, results and exceptions. The core checks no keyword: a special token
in the text is one where ``allowed_special`` (a set of str) holds it, and ordinary text elsewhere.

>>> core = CoreBPE({bytes([b]): b for b in range(256)} | {b"ab": 256}, {"<|endoftext|>": 257}, r"\\w+|\\W")
>>> core.encode("ab<|endoftext|>", {"<|endoftext|>"}), core.encode_ordinary("ab<|endoftext|>")[:2]
([256, 257], [256, 60])
>>> core.decode_bytes([256, 257])
b'ab<|endoftext|>'
"""
from __future__ import annotations

import collections.abc
import itertools
import operator
import sys
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Any

from ._numpy import np
from ._encode import utf8_text
from .patterns import pattern_from_tiktoken
from .pretokenize import native_kind, pretoken_boundaries, pretokenize
from .specials import SpecialTokens, first_prefix_pair
from .tokenizer import Tokenizer

if TYPE_CHECKING:
    from numpy.typing import NDArray
    from typing_extensions import TypeAlias

__all__ = ["CoreBPE"]

_U32_MAX = 2**32 - 1
_LISTS = (list, tuple)     # with NumPy's arrays (_is_ndarray): what the tokenizer's decode takes as tiktoken's does


def _is_ndarray(value: object) -> bool:
    """Whether `value` is a NumPy array (exactly numpy.ndarray): none is when NumPy is not imported, which this
    does not import."""
    numpy = sys.modules.get("numpy")
    return numpy is not None and type(value) is numpy.ndarray


class CoreBPE:
    """tiktoken's CoreBPE: the encoder of `encoder` ({token bytes: rank}), `special_tokens_encoder` ({str: id})
    and the regex `pattern` (read as tiktoken's engine reads it). Refused at construction, as by bpe_fast.Encoding
    (see its module): what that module lists, and two special tokens one of which starts the other."""

    def __init__(self, encoder: Mapping[bytes, int], special_tokens_encoder: Mapping[str, int], pattern: str) -> None:
        special_tokens = dict(special_tokens_encoder)       # tiktoken's core holds copies
        self._tokenizer = Tokenizer.from_tiktoken(encoder, pattern_from_tiktoken(pattern), special_tokens)
        prefix_pair = first_prefix_pair(special_tokens)
        if prefix_pair is not None:
            short, long = prefix_pair
            raise ValueError(f"special token {long!r} starts with special token {short!r}: where both are in the "
                             "text, tiktoken finds the one its hash map holds first (and, unless allowed, it hides the "
                             "other there), bpe_fast the longest; bpe_fast.Tokenizer takes them (longest first)")
        self._special_tokens = special_tokens
        self._special_token_values = set(special_tokens.values())
        self._all_specials = frozenset(special_tokens)
        self._ordinary = self._tokenizer.restricted_to(frozenset())
        self._vocab = self._tokenizer.vocab         # id -> bytes, read-only
        self._special_bytes = SpecialTokens(special_tokens, special_tokens.values()).id_of_utf8
        # made when first asked for, set here first: CPython 3.11 keeps an object's attributes in the object only
        # under names its class saw before a few dozen instances were made (see encoding._MADE_LATER); made later
        # under a new name, one moved all of a core's attributes into a dict (each read about 15 ns slower)
        self._own_sorted: NDArray[np.int64] | None = None
        self._own_ranks: dict[bytes, int] | None = None
        self._own_byte_values: list[bytes] | None = None

    def __repr__(self) -> str:
        return f"<bpe_fast CoreBPE of {len(self._vocab)} tokens>"

    # ---------------------------------------------------------------------------------------- encoding

    def encode_ordinary(self, text: str) -> list[int]:
        """The ids of `text`, special tokens as ordinary text. Lone surrogates are a UnicodeEncodeError (tiktoken's
        Encoding catches it and encodes the text with them replaced, as bpe_fast.Encoding does)."""
        return self._ordinary.encode(_utf8_text(text))

    def encode(self, text: str, allowed_special: AbstractSet[str]) -> list[int]:
        """The ids of `text`, the special tokens of `allowed_special` (a set of str) found in it as theirs."""
        text = _utf8_text(text)
        return self.tokenizer_for(allowed_special).encode(text)

    def encode_to_tiktoken_buffer(self, text: str, allowed_special: AbstractSet[str]) -> NDArray[np.uint32]:
        """encode's ids as a uint32 array (tiktoken's is a buffer of u32 that NumPy reads as one)."""
        _check_str(text)
        encoder = self.tokenizer_for(allowed_special)
        return encoder.encode_utf8_to_numpy(str.encode(text, "utf-8"), np.uint32)

    def encode_with_unstable(self, text: str, allowed_special: AbstractSet[str]) -> tuple[list[int], list[list[int]]]:
        """(stable, completions): see bpe_fast.Encoding.encode_with_unstable."""
        _check_str(text)
        encoder = self.tokenizer_for(allowed_special)
        data = str.encode(text, "utf-8")       # as tiktoken's, lone surrogates are a UnicodeEncodeError here
        tokens = encoder.encode(text)
        # the last piece: the pre-tokenizer's last match after the last special token (none: nothing is unstable)
        segment = text
        if encoder.special_tokens:
            matches, _ = SpecialTokens(list(encoder.special_tokens)).matcher.final_matches(data, True)
            if matches:
                segment = data[matches[-1][2]:].decode("utf-8")       # after the last one's end
        unstable = self._unstable_count(encoder, segment, tokens)
        if not unstable:        # (a pattern may match nothing there)
            return tokens, []
        tail = b"".join(self._vocab[i] for i in tokens[-unstable:])
        del tokens[-unstable:]
        return tokens, self._completions(tail)

    def _encode_bytes(self, text: bytes) -> list[int]:
        """The ids of any bytes, as tiktoken's private method of that name gives them (used to encode bytes that
        may not be UTF-8): UTF-8 is encode_ordinary's; else the UTF-8 before the first invalid byte is encoded
        so, then the tokens text appended could change (encode_with_unstable's) are joined with every byte from
        there on and merged as one piece. No special token is made.

        >>> _tiny()._encode_bytes(b"ab ab\\xff")
        [256, 32, 256, 255]
        """
        if not isinstance(text, bytes):     # tiktoken's Rust takes bytes: not bytes(5)'s five zero bytes
            raise TypeError(f"{type(text).__name__!r} object is not an instance of 'bytes'")
        data = bytes(text)
        try:
            return self._ordinary.encode(data.decode("utf-8"))
        except UnicodeDecodeError as exc:
            valid = exc.start
        head = data[:valid].decode("utf-8")
        encoder = self._ordinary
        tokens = encoder.encode(head)
        unstable = self._unstable_count(encoder, head, tokens)
        rest = data[valid:]
        if unstable:
            rest = b"".join(self._vocab[i] for i in tokens[-unstable:]) + rest
            del tokens[-unstable:]
        return tokens + encoder.encode_pieces([rest])[0]

    def encode_single_token(self, piece: bytes) -> int:
        """The id of the token whose bytes are `piece`, special tokens included; KeyError when there is none."""
        if not isinstance(piece, bytes):
            raise TypeError(f"{type(piece).__name__!r} object is not an instance of 'bytes'")
        rank = self.ranks().get(piece)
        if rank is None:
            rank = self._special_bytes.get(piece)
            if rank is None:
                raise KeyError(piece)
        return rank

    def encode_single_piece(self, piece: bytes) -> list[int]:
        """The ids of `piece` merged as one piece: no pre-tokenizer, no special tokens."""
        if not isinstance(piece, bytes):
            raise TypeError(f"{type(piece).__name__!r} object is not an instance of 'bytes'")
        return self._ordinary.encode_pieces([bytes(piece)])[0]

    def _unstable_count(self, encoder: Tokenizer, segment: str, tokens: list[int]) -> int:
        """How many of `tokens` (encoder's encoding of a text that ends with `segment`, the text after its last
        special token) text appended could change, as tiktoken counts them: the tokens of the pre-tokenizer's
        last piece, and the white-space tokens before them when its first token is one."""
        last = _last_piece(segment, encoder.pattern, encoder.unicode)
        unstable = len(encoder.encode_pieces([last])[0]) if last else 0
        if not unstable:
            return 0
        # tiktoken's fix for patterns whose splits move with what follows (cl100k's \s*[\r\n]+): the tokens of
        # spaces, tabs and newlines before the last piece are unstable too, when its first token is one
        specials, vocab = self._special_token_values, self._vocab
        if tokens[-unstable] not in specials and _all_space(vocab[tokens[-unstable]]):
            while (unstable < len(tokens) and tokens[-unstable - 1] not in specials
                   and _all_space(vocab[tokens[-unstable - 1]])):
                unstable += 1
        return unstable

    def _completions(self, tail: bytes) -> list[list[int]]:
        """encode_with_unstable's completions of the unstable bytes `tail` (tiktoken's three steps), each once."""
        from ._inspect import first_spans, prefix_range, prefixed_strings

        pool, offsets = self._tokenizer.token_pool()
        ids = self._sorted_ranks()
        # 1. every token that starts with the unstable bytes
        lo, hi = prefix_range(pool, offsets, ids, tail)
        singles = ids[lo:hi]
        result = [[i] for i in singles.tolist()]
        # 2. every other place a token may straddle the end: the bytes before it, then a token that starts with
        # the bytes after it, encoded again (UTF-8: pre-tokenized as encode_ordinary does; else merged as one
        # piece), up to the tokens that cover the unstable bytes
        ranges = np.array([prefix_range(pool, offsets, ids, tail[i:]) for i in range(1, len(tail))],
                          dtype=np.int64).reshape(-1, 2).T.copy()     # (lo, hi) of each, as two rows
        valid, valid_bounds, raw, raw_bounds = prefixed_strings(pool, offsets, ids, tail, ranges[0], ranges[1])
        found = [self._covering(valid, valid_bounds, len(tail)),
                 self._covering(raw, raw_bounds, len(tail), whole=True)]
        # 3. a split a pattern makes before trailing white space (GPT-2's \s+(?!\S)): the last character alone
        last = tail.decode("utf-8")[-1:]
        if len(tail) > 1 and last in _WHITE_SPACE and len(last.encode("utf-8")) < len(tail):
            size = len(last.encode("utf-8"))
            head, end = self._ordinary.merge_pieces([tail[:-size], tail[-size:]])
            found.append(_segments([head + end]))
        # each sequence once, those of one token step 1 has left out; shorter ones first, else as found
        flat, first, stop = _joined_segments(found)
        sizes = stop - first
        ones = np.flatnonzero(sizes == 1)
        keep = np.setdiff1d(np.arange(len(first)), ones[np.isin(flat[first[ones]], singles)], assume_unique=True)
        # (each sequence's ids compared as bytes, in a hash set: rows padded to the longest, 33,000 of 1,001 ids
        # for " " * 1001 with GPT-2's ranks, took seconds to make, sort and compare)
        keep = keep[first_spans(flat.view(np.uint8), first[keep] * flat.itemsize, stop[keep] * flat.itemsize)]
        keep = keep[np.argsort(sizes[keep], kind="stable")]
        starts, stops = first[keep].tolist(), stop[keep].tolist()
        if len(flat) > 64 * len(starts):    # long sequences: each row's tolist (no list of every id made first)
            result.extend([flat[a:b].tolist() for a, b in zip(starts, stops)])
        else:                               # short ones: slices of one list (an array's tolist costs more)
            values = flat.tolist()
            result.extend(map(values.__getitem__, map(slice, starts, stops)))
        return result

    def _covering(self, data: bytes, bounds: NDArray[np.int64], size: int, whole: bool = False) -> _Segments:
        """For each of the texts data[bounds[k]:bounds[k + 1]] (UTF-8, encoded as encode_ordinary does; `whole`:
        any bytes, merged as one piece, never looked up whole, as tiktoken's byte_pair_encode), its first tokens up to the first that reaches byte `size` (every text
        holds that many bytes): the segments flat[first[k]:stop[k]] of (flat, first, stop), one a text."""
        from ._inspect import covering_tokens

        if len(bounds) < 2:
            return _segments([])
        if not whole:
            ids = self._ordinary.encode_documents_utf8(data, bounds)
            # (no special token: each token covers its own bytes)
            spans = covering_tokens(ids, self._ordinary.token_lengths(), bounds, size)
            if spans is not None:   # (else a pattern left text out)
                return ids, spans[0], spans[1]
        texts = [data[a:b] for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist())]
        if whole:
            encoded = self._ordinary.merge_pieces(texts)
        else:
            encoded = self._ordinary.encode_batch([t.decode("utf-8") for t in texts], num_threads=1)
        vocab = self._vocab         # (encode_ordinary and encode_pieces make no special token)
        cut = []
        for seq in encoded:
            covered = 0
            for n, token in enumerate(seq):
                covered += len(vocab[token])
                if covered >= size:
                    seq = seq[:n + 1]
                    break
            cut.append(seq)
        return _segments(cut)

    def _sorted_ranks(self) -> NDArray[np.int64]:
        """The ranked tokens' ids in the order of their bytes (as Python sorts bytes): sorted natively on the
        decoder's bytes (Tokenizer.token_pool) when first asked for, kept."""
        from ._inspect import sort_byte_strings

        cached = self._own_sorted
        if cached is None:
            pool, offsets = self._tokenizer.token_pool()
            lengths = np.diff(offsets)
            ranked = lengths > 0
            ranked[[i for i in self._special_token_values if i < len(ranked)]] = False
            ids = np.flatnonzero(ranked)
            if len(ids) >= len(ranked) // 2:
                order, _ = sort_byte_strings(pool, offsets, False)     # every id: those without bytes are empty
                cached = order[ranked[order]]
            else:       # ids mostly without bytes (a special token at id 1,200,000): their tokens' bytes alone
                sizes = lengths[ids]
                starts = np.zeros(len(ids) + 1, dtype=np.int64)
                np.cumsum(sizes, out=starts[1:])
                gathered = pool[np.repeat(offsets[ids] - starts[:-1], sizes) + np.arange(starts[-1])]
                cached = ids[sort_byte_strings(gathered, starts, False)[0]]
            cached.flags.writeable = False      # (passed to native loops that read it without the GIL)
            self._own_sorted = cached
        return cached

    def ranks(self) -> dict[bytes, int]:
        """{token bytes: rank} of the ranks this encoding was made with, its own (made from the tokenizer's
        vocabulary when first asked for): like tiktoken's, which holds a copy, the answers do not follow a
        change to the caller's dict after construction."""
        ranks = self._own_ranks
        if ranks is None:
            specials = self._special_token_values
            ranks = self._own_ranks = {token: i for i, token in self._vocab.items() if i not in specials}
        return ranks

    def tokenizer_for(self, allowed_special: AbstractSet[str], checked: bool = False) -> Tokenizer:
        """The tokenizer matching the special tokens of `allowed_special` (a set of str: tiktoken takes no other;
        `checked`: the caller knows it holds only str)."""
        if not isinstance(allowed_special, (set, frozenset)):
            raise TypeError(f"{type(allowed_special).__name__!r} object is not an instance of 'set'")
        if not checked:
            for token in allowed_special:       # a set of str: bytes or an id in it is tiktoken's TypeError
                if not isinstance(token, str):
                    raise TypeError(f"{type(token).__name__!r} object is not an instance of 'str'")
        if not allowed_special:
            return self._ordinary
        if self._all_specials.issubset(allowed_special):
            return self._tokenizer
        return self._tokenizer.restricted_to(frozenset(allowed_special).intersection(self._special_tokens))

    # ---------------------------------------------------------------------------------------- decoding

    def decode_bytes(self, tokens: Sequence[int]) -> bytes:
        """The tokens' bytes joined."""
        if type(tokens) in _LISTS or _is_ndarray(tokens):
            try:
                return self._tokenizer.decode_bytes(tokens)
            except (TypeError, ValueError, OverflowError):
                pass
        # tiktoken's exception, or tokens it takes that the tokenizer does not (a range, a deque, bools)
        return self._tokenizer.decode_bytes(self._tiktoken_ids(tokens))

    def decode(self, tokens: Sequence[int], errors: str) -> str:
        """decode_bytes(tokens).decode("utf-8", errors), with bpe_fast's decoder of valid UTF-8 (Encoding.decode
        asks its tokenizer first for a list; this is the way for what it refuses, raising as tiktoken does)."""
        return utf8_text(self.decode_bytes(tokens), errors)

    def decode_single_token_bytes(self, token: int) -> bytes:
        """The bytes of one token, special tokens included; KeyError when the id has none."""
        value = token if type(token) is int else operator.index(token)
        data = self._vocab.get(value)
        if data is None:
            _check_u32(value)
            raise KeyError(str(value))
        return data

    def token_byte_values(self) -> list[bytes]:
        """The bytes of every ranked token, sorted (a new list each call, as tiktoken's; the bytes made once)."""
        from ._inspect import byte_strings

        values = self._own_byte_values
        if values is None:
            pool, offsets = self._tokenizer.token_pool()
            values = self._own_byte_values = byte_strings(pool, offsets, self._sorted_ranks())
        return list(values)

    def _tiktoken_ids(self, tokens: Any) -> list[int]:
        """`tokens` as a list of known ids, or the exception tiktoken raises for them: TypeError for what is not a
        sequence of integers, OverflowError for one outside 0..2**32 - 1, KeyError for one without a token."""
        if isinstance(tokens, str):
            raise TypeError("Can't extract `str` to `Vec`")
        if isinstance(tokens, (dict, collections.abc.Set)) or not hasattr(type(tokens), "__getitem__"):
            raise TypeError(f"{type(tokens).__name__!r} object is not an instance of 'Sequence'")
        ids = []
        for token in tokens:
            value = operator.index(token)
            _check_u32(value)
            ids.append(value)
        for value in ids:
            if value not in self._vocab:
                raise KeyError(f"Invalid token for decoding: {value}")
        return ids


# the characters Rust's char::is_whitespace takes (Unicode's White_Space), which tiktoken's last step asks about
_WHITE_SPACE = frozenset("\t\n\x0b\x0c\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000"
                         + "".join(map(chr, range(0x2000, 0x200B))))


_Segments: TypeAlias = "tuple[NDArray[np.int32], NDArray[np.int64], NDArray[np.int64]]"      # ids, first, stop


def _segments(seqs: list[list[int]]) -> _Segments:
    """The sequences as segments flat[first[k]:stop[k]] of (flat, first, stop)."""
    sizes = np.fromiter(map(len, seqs), dtype=np.int64, count=len(seqs))
    stop = np.cumsum(sizes)
    flat = np.fromiter(itertools.chain.from_iterable(seqs), dtype=np.int32, count=int(sizes.sum()))
    return flat, stop - sizes, stop


def _joined_segments(parts: list[_Segments]) -> _Segments:
    """The segments of several (flat, first, stop) as one, in order."""
    shift = np.cumsum([0] + [len(flat) for flat, _, _ in parts[:-1]])
    return (np.concatenate([flat for flat, _, _ in parts]),
            np.concatenate([first + s for (_, first, _), s in zip(parts, shift)]),
            np.concatenate([stop + s for (_, _, stop), s in zip(parts, shift)]))


def _last_piece(text: str, pattern: str, unicode: str | None) -> bytes:
    """The UTF-8 of the pattern's last non-empty match in `text` (b"" when none): for a built-in pattern from the
    native scanner's boundaries (with the tables of `unicode`), which cover the text (no Python string a
    pre-token)."""
    if not text:
        return b""
    if native_kind(pattern):
        data = text.encode("utf-8")
        bounds = pretoken_boundaries(data, pattern, unicode)
        return data[int(bounds[-2]):] if len(bounds) > 1 else b""
    # (tiktoken's regex reports no empty match where the match before it ends, `regex` does: \w* on "ab" is
    # "ab" to it, "ab" and "" to `regex`; the empty matches are left out, they hold no tokens)
    pieces = [piece for piece in pretokenize(text, pattern) if piece]
    return pieces[-1].encode("utf-8") if pieces else b""


def _all_space(token: bytes) -> bool:
    """Whether a token's bytes are all spaces, tabs or newlines."""
    return not token.strip(b" \n\t")


def _check_u32(value: int) -> None:
    """tiktoken's OverflowError for an id (an int) that is not a u32 (its conversion goes through a C long)."""
    if not 0 <= value <= _U32_MAX:
        if not -2**63 <= value < 2**63:
            raise OverflowError("Python int too large to convert to C long")
        raise OverflowError("out of range integral type conversion attempted")


def _check_str(text: object) -> None:
    if not isinstance(text, str):
        raise TypeError(f"{type(text).__name__!r} object is not an instance of 'str'")


def _utf8_text(text: str) -> str:
    """`text`, once checked as tiktoken's core checks it: a str (TypeError) that UTF-8 can hold (lone surrogates
    are a UnicodeEncodeError, which bpe_fast.Tokenizer would replace)."""
    _check_str(text)
    if not text.isascii():
        str.encode(text, "utf-8")
    return text


def _tiny() -> CoreBPE:
    """A small core for the examples: bytes, "ab" and "abc", and "<|endoftext|>"."""
    ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256, b"abc": 257}
    return CoreBPE(ranks, {"<|endoftext|>": 258}, r"\w+|\W")
