"""bpe_fast.Encoding: tiktoken's Encoding interface on bpe_fast's encoder.

Code written for ``tiktoken.Encoding`` runs on it unchanged, with the same results and the same exceptions: the
same constructor (name, pat_str, mergeable_ranks, special_tokens, explicit_n_vocab), methods, arguments and
defaults (``encode`` refuses special tokens in the text unless allowed), the attributes tiktoken users read
(``name``, ``max_token_value``, ``_pat_str``, ``_mergeable_ranks``, ``_special_tokens``) and pickling by value.
tiktoken's private methods people call are provided too (``_encode_single_piece``, ``_encode_bytes``,
``_encode_only_native_bpe``); the others are not.

It is a thin layer: an Encoding holds a bpe_fast.Tokenizer (``.tokenizer``, built by Tokenizer.from_tiktoken,
the merges recovered from the ranks) and turns tiktoken's keywords into the Tokenizer's: the allowed special
tokens select a view of the tokenizer that matches only those, the disallowed ones are looked for in the text
first. A pat_str other than the built-in patterns is read with `regex`, its anchors "$" and "\\Z" swapped to
keep tiktoken's meaning (other differences between the two engines' syntax, such as "--" in a class, are not
translated). Differences, all refusals at construction: the 256 single bytes must have ranks; every multi-byte
token must be reachable by merging lower-ranked ones (tiktoken accepts others, and never produces them from
other text); a special token may not share its id with a ranked token, nor its bytes; ids must lie below
2^31 - 1, the largest below 4 times the number of tokens plus 2^20 (the encoder's tables are indexed by id),
"" is not a special token, and no special token starts with another (tiktoken chooses between two such by its
hash map's order). Two special tokens may share an id (o200k_harmony's <|endofprompt|> and
<|reserved_200018|>): both encode to it, and it decodes to the first given (tiktoken's to either).

>>> ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256, b"abc": 257}
>>> enc = Encoding("tiny", pat_str=r"\\w+|\\W", mergeable_ranks=ranks, special_tokens={"<|endoftext|>": 258})
>>> enc.encode("abc ab<|endoftext|>", allowed_special="all")
[257, 32, 256, 258]
>>> enc.decode([257, 32, 256])
'abc ab'
"""
from __future__ import annotations

import bisect
import collections.abc
import functools
import itertools
import math
import operator
import os
import sys
from collections.abc import Collection, Iterable, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, Literal, SupportsIndex

import numpy as np
import regex
from numpy.typing import NDArray

from ._inspect import sort_byte_strings
from .patterns import pattern_from_tiktoken
from .pretokenize import native_kind, pretoken_boundaries, pretokenize
from .specials import SpecialTokens, check_disallowed, first_prefix_pair
from .procs import map_threads
from ._types import StrPath
from .tokenizer import Tokenizer

__all__ = ["Encoding"]

_U32_MAX = 2**32 - 1
_NOTHING: frozenset[str]
_NOTHING = frozenset()   # allowed_special's default: tiktoken's is set(), equal to it; this one is told apart
_ALL = "all"
_MAX_THREADS = 1 << 16    # a larger num_threads (inf) asks for a thread an item, as this many do
_ARRAYS = (list, tuple, np.ndarray)     # what the tokenizer's decode takes as tiktoken's does, when valid


class Encoding:
    """tiktoken.Encoding's interface (see the module docstring); its docstrings are tiktoken's, shortened."""

    def __init__(self, name: str, *, pat_str: str, mergeable_ranks: dict[bytes, int], special_tokens: dict[str, int],
                 explicit_n_vocab: int | None = None) -> None:
        """name: the encoding's name; pat_str: the pre-tokenization regex; mergeable_ranks: {token bytes: rank}
        (the rank is the id and the merge priority); special_tokens: {str: id}; explicit_n_vocab: when given,
        len(mergeable_ranks) + len(special_tokens) and max_token_value + 1 must equal it (AssertionError)."""
        self.name = name
        self._pat_str = pat_str
        self._mergeable_ranks = mergeable_ranks
        self._special_tokens = special_tokens
        if not mergeable_ranks:     # tiktoken's error: its max_token_value is max(mergeable_ranks.values(), ...)
            raise ValueError("max() arg is an empty sequence")
        if explicit_n_vocab:
            largest = max(max(mergeable_ranks.values()), max(special_tokens.values(), default=0))
            if len(mergeable_ranks) + len(special_tokens) != explicit_n_vocab:
                raise AssertionError(f"{len(mergeable_ranks)} ranks and {len(special_tokens)} special tokens, "
                                     f"not explicit_n_vocab={explicit_n_vocab}")
            if largest != explicit_n_vocab - 1:
                raise AssertionError(f"the largest id is {largest}, not explicit_n_vocab - 1")
        self._special_token_values = set(special_tokens.values())
        self._tokenizer = Tokenizer.from_tiktoken(mergeable_ranks, pattern_from_tiktoken(pat_str), special_tokens)
        prefix_pair = first_prefix_pair(special_tokens)
        if prefix_pair is not None:
            short, long = prefix_pair
            raise ValueError(f"special token {long!r} starts with special token {short!r}: where both are in the "
                             "text, tiktoken finds the one its hash map holds first (and, unless allowed, it hides the "
                             "other there), bpe_fast the longest; bpe_fast.Tokenizer takes them (longest first)")
        # tiktoken's max(max(ranks), max(special ids, default=0)): the ranks are not negative (checked)
        self.max_token_value = self._tokenizer.max_token_value
        self._ordinary = self._tokenizer.restricted_to(frozenset())
        self._vocab = self._tokenizer.vocab         # id -> bytes, read-only
        self._special_bytes = SpecialTokens(special_tokens, special_tokens.values()).id_of_utf8
        self._all_specials = frozenset(special_tokens)

    @classmethod
    def from_tiktoken_file(cls, name: str, path: StrPath, pat_str: str, special_tokens: dict[str, int] | None = None,
                           explicit_n_vocab: int | None = None) -> Encoding:
        """The Encoding of a `.tiktoken` ranks file (``.tiktoken.gz``: gzip), read strictly by
        bpe_fast.ranks.read_tiktoken (a bad line is a FormatError naming the file and line); as
        ``Encoding(name, pat_str=pat_str, mergeable_ranks=tiktoken.load.load_tiktoken_bpe(path), ...)``
        without tiktoken or a download.

        >>> import os, tempfile, base64
        >>> path = os.path.join(tempfile.mkdtemp(), "bytes.tiktoken")
        >>> with open(path, "w") as f:
        ...     _ = f.write("".join(f"{base64.b64encode(bytes([b])).decode()} {b}\\n" for b in range(256)))
        >>> Encoding.from_tiktoken_file("bytes", path, r"\\S+|\\s+").encode("hi")
        [104, 105]
        """
        from .ranks import check_has_ranks, read_tiktoken

        ranks = read_tiktoken(path)
        check_has_ranks(path, len(ranks))
        return cls(name, pat_str=pat_str, mergeable_ranks=ranks,
                   special_tokens={} if special_tokens is None else special_tokens,
                   explicit_n_vocab=explicit_n_vocab)

    @property
    def tokenizer(self) -> Tokenizer:
        """The bpe_fast.Tokenizer doing the work (its defaults are CS336's: its special tokens are matched)."""
        return self._tokenizer

    def __repr__(self) -> str:
        return f"<Encoding {self.name!r}>"

    def __reduce_ex__(self, protocol: SupportsIndex) -> str | tuple[Any, ...]:
        """One get_encoding built (the one ENCODINGS holds under its name) is pickled by its name, as tiktoken's are
        (rebuilt by get_encoding where it is unpickled); any other by its ranks. (The registry is looked up, not
        imported: it imports this module, and before it is imported it holds no encoding.)"""
        registry = sys.modules.get(f"{__package__}.registry")
        if registry is not None and registry.ENCODINGS.get(self.name) is self:
            return registry.get_encoding, (self.name,)
        return super().__reduce_ex__(protocol)

    def __getstate__(self) -> dict[str, Any]:
        return {"name": self.name, "pat_str": self._pat_str, "mergeable_ranks": self._mergeable_ranks,
                "special_tokens": self._special_tokens}

    def __setstate__(self, value: dict[str, Any]) -> None:
        self.__init__(**value)      # type: ignore[misc]

    # ---------------------------------------------------------------------------------------- encoding

    def encode_ordinary(self, text: str) -> list[int]:
        """The ids of `text`, special tokens ignored (encoded as ordinary text).

        >>> enc = _tiny()
        >>> enc.encode_ordinary("ab<|endoftext|>")[:2]
        [256, 60]
        """
        return self._ordinary.encode(text)

    def encode(self, text: str, *, allowed_special: Literal["all"] | AbstractSet[str] = _NOTHING,
               disallowed_special: Literal["all"] | Collection[str] = "all") -> list[int]:
        """The ids of `text`. Special tokens in `allowed_special` ("all": all) become their ids; finding one of
        `disallowed_special` ("all": every special token not allowed) in the text raises ValueError; the others
        are ordinary text.

        >>> enc = _tiny()
        >>> enc.encode("ab<|endoftext|>", allowed_special="all")
        [256, 258]
        >>> enc.encode("ab<|endoftext|>")
        Traceback (most recent call last):
        ...
        ValueError: Encountered text corresponding to disallowed special token '<|endoftext|>'.
        ...
        """
        return self._checked(text, allowed_special, disallowed_special).encode(text)

    def encode_to_numpy(self, text: str, *, allowed_special: Literal["all"] | AbstractSet[str] = _NOTHING,
                        disallowed_special: Literal["all"] | Collection[str] = "all") -> NDArray[np.uint32]:
        """encode's ids as a uint32 array. As tiktoken's, lone surrogates raise UnicodeEncodeError here.

        >>> _tiny().encode_to_numpy("abc")
        array([257], dtype=uint32)
        """
        encoder = self._checked(text, allowed_special, disallowed_special)
        if not isinstance(text, str):
            raise TypeError(f"argument 'text': {type(text).__name__!r} object cannot be converted to 'PyString'")
        return encoder.encode_utf8_to_numpy(str.encode(text, "utf-8"), np.uint32)   # a subclass: its characters

    def encode_ordinary_batch(self, text: Iterable[str], *, num_threads: int | None = 8) -> list[list[int]]:
        """[encode_ordinary(t) for t in text], on up to `num_threads` threads.

        >>> _tiny().encode_ordinary_batch(["ab", "abc"])
        [[256], [257]]
        """
        return self._ordinary.encode_batch(list(text), num_threads=_threads(num_threads))

    def encode_batch(self, text: Iterable[str], *, num_threads: int | None = 8,
                     allowed_special: Literal["all"] | AbstractSet[str] = _NOTHING,
                     disallowed_special: Literal["all"] | Collection[str] = "all") -> list[list[int]]:
        """[encode(t, ...) for t in text], on up to `num_threads` threads.

        >>> _tiny().encode_batch(["ab", "<|endoftext|>"], allowed_special="all")
        [[256], [258]]
        """
        if allowed_special == "all":
            allowed_special = self.special_tokens_set
        if disallowed_special == "all":
            disallowed_special = self.special_tokens_set - allowed_special
        if not isinstance(disallowed_special, frozenset):
            disallowed_special = frozenset(disallowed_special)
        threads = _threads(num_threads)
        texts = list(text)
        if not texts:       # tiktoken's encode runs text by text: no text, no more checks
            return []
        try:
            encoder = self._encoder(allowed_special)
        except TypeError:
            # tiktoken's encode raises it text by text: the first text's disallowed check first
            if disallowed_special:
                check_disallowed(texts[0], disallowed_special)
            raise
        return encoder.encode_batch(texts, num_threads=threads, disallowed_special=disallowed_special)

    def encode_single_token(self, text_or_bytes: str | bytes) -> int:
        """The id of the token whose bytes (or text) are `text_or_bytes`, special tokens included; KeyError when
        there is none.

        >>> enc = _tiny()
        >>> enc.encode_single_token("abc"), enc.encode_single_token(b"<|endoftext|>")
        (257, 258)
        """
        if isinstance(text_or_bytes, str):
            text_or_bytes = text_or_bytes.encode("utf-8")
        if not isinstance(text_or_bytes, bytes):
            raise TypeError(f"{type(text_or_bytes).__name__!r} object is not an instance of 'bytes'")
        rank = self._ranks().get(text_or_bytes)
        if rank is None:
            rank = self._special_bytes.get(text_or_bytes)
            if rank is None:
                raise KeyError(text_or_bytes)
        return rank

    def encode_with_unstable(self, text: str, *, allowed_special: Literal["all"] | AbstractSet[str] = _NOTHING,
                             disallowed_special: Literal["all"] | Collection[str] = "all"
                             ) -> tuple[list[int], list[list[int]]]:
        """(stable, completions): the ids of a prefix of `text` that no text appended to it can change, and every
        sequence of ids that may follow them in the encoding of `text` continued (each covering at least the
        rest of `text`'s bytes), as tiktoken's (for completing a prompt whose last word is unfinished). Keywords
        as encode's. tiktoken's algorithm, step by step: its results, its list order aside (tiktoken's is a hash
        set's, different from run to run; here, the single tokens first, then the longer
        sequences). tiktoken calls this API unstable itself.

        >>> enc = _tiny()
        >>> enc.encode_with_unstable("abc ab")
        ([257, 32], [[256], [257]])
        """
        encoder = self._checked(text, allowed_special, disallowed_special)
        if not isinstance(text, str):
            raise TypeError(f"argument 'text': {type(text).__name__!r} object cannot be converted to 'PyString'")
        data = str.encode(text, "utf-8")       # as tiktoken's, lone surrogates are a UnicodeEncodeError here
        tokens = encoder.encode(text)
        # the last piece: the pre-tokenizer's last match after the last special token (none: nothing is unstable)
        segment = text
        if encoder.special_tokens:
            matches, _ = SpecialTokens(list(encoder.special_tokens)).matcher.final_matches(data, True)
            if matches:
                segment = data[matches[-1][1]:].decode("utf-8")
        unstable = self._unstable_count(encoder, segment, tokens)
        if not unstable:        # (a pattern may match nothing there)
            return tokens, []
        tail = b"".join(self._vocab[i] for i in tokens[-unstable:])
        del tokens[-unstable:]
        return tokens, self._completions(tail)

    def _unstable_count(self, encoder: Tokenizer, segment: str, tokens: list[int]) -> int:
        """How many of `tokens` (encoder's encoding of a text that ends with `segment`, the text after its last
        special token) text appended could change, as tiktoken counts them: the tokens of the pre-tokenizer's
        last piece, and the white-space tokens before them when its first token is one."""
        last = _last_piece(segment, encoder.pattern)
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
            return self.encode_ordinary(data.decode("utf-8"))
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

    def _encode_only_native_bpe(self, text: str) -> list[int]:
        """The ids of `text` split by `regex`'s findall of the pattern and each piece merged alone (tiktoken's
        private method of that name, which checks its Rust split against Python's). No special token is made.

        >>> _tiny()._encode_only_native_bpe("ab ab")
        [256, 32, 256]
        """
        pieces = [piece.encode("utf-8") for piece in regex.findall(self._pat_str, text)]
        return [token for ids in self._ordinary.encode_pieces(pieces) for token in ids]

    def _completions(self, tail: bytes) -> list[list[int]]:
        """encode_with_unstable's completions of the unstable bytes `tail` (tiktoken's three steps), each once."""
        ranked, ids, utf8 = self._sorted_ranks()
        # 1. every token that starts with the unstable bytes
        lo, hi = _prefix_range(ranked, tail)
        result = [[i] for i in ids[lo:hi]]
        singles = np.array(ids[lo:hi], dtype=np.int64)
        # 2. every other place a token may straddle the end: the bytes before it, then a token that starts with
        # the bytes after it, encoded again (UTF-8: pre-tokenized as encode_ordinary does; else merged as one
        # piece), up to the tokens that cover the unstable bytes
        valid: list[bytes] = []
        raw: list[bytes] = []
        for i in range(1, len(tail)):
            prefix = tail[:i]
            lo, hi = _prefix_range(ranked, tail[i:])
            if (tail[i] & 0xC0) != 0x80:        # a character starts at i: prefix + token is UTF-8 if the token is
                valid.extend(prefix + t for t in itertools.compress(ranked[lo:hi], utf8[lo:hi]))
                raw.extend(prefix + t for t, ok in zip(ranked[lo:hi], utf8[lo:hi]) if not ok)
                continue
            for t in ranked[lo:hi]:
                possible = prefix + t
                try:
                    possible.decode("utf-8")
                    valid.append(possible)
                except UnicodeDecodeError:
                    raw.append(possible)
        found = [self._covering(valid, len(tail)), self._covering(raw, len(tail), whole=True)]
        # 3. a split a pattern makes before trailing white space (GPT-2's \s+(?!\S)): the last character alone
        last = tail.decode("utf-8")[-1:]
        if len(tail) > 1 and last in _WHITE_SPACE and len(last.encode("utf-8")) < len(tail):
            size = len(last.encode("utf-8"))
            head, end = self._ordinary.encode_pieces([tail[:-size], tail[-size:]])
            found.append(_padded_rows([head + end]))
        # each sequence once (rows padded with -1), those of one token step 1 has left out
        width = max(rows.shape[1] for rows in found)
        rows = _unique_rows(np.concatenate([np.pad(r, ((0, 0), (0, width - r.shape[1])), constant_values=-1)
                                            for r in found]))
        sizes = (rows >= 0).sum(axis=1)
        keep = ~((sizes == 1) & np.isin(rows[:, 0], singles))
        rows, sizes = rows[keep], sizes[keep]
        for k in np.unique(sizes).tolist():
            result.extend(rows[sizes == k, :k].tolist())
        return result

    def _covering(self, texts: list[bytes], size: int, whole: bool = False) -> NDArray[np.int64]:
        """For each of `texts` (UTF-8, encoded as encode_ordinary does; `whole`: any bytes, merged as one piece),
        its first tokens up to the first that reaches byte `size` (every text holds that many bytes): a row each,
        padded with -1."""
        if not texts:
            return np.zeros((0, 1), dtype=np.int64)
        if whole:
            encoded = self._ordinary.encode_pieces(texts)
        else:
            bounds = np.zeros(len(texts) + 1, dtype=np.int64)
            np.cumsum([len(t) for t in texts], out=bounds[1:])
            data = b"".join(texts)
            ids = self._ordinary.encode_documents_utf8(data, bounds)
            lengths = self._ordinary.lengths_in(data, ids)
            ends = np.cumsum(lengths)
            if len(ends) and ends[-1] == len(data):     # the tokens cover the texts (a pattern may leave text out)
                first = np.searchsorted(ends, bounds[:-1], side="right")        # each text's first token
                stop = np.searchsorted(ends - lengths, bounds[:-1] + size, side="left")     # past its last needed
                return _rows_of(ids.astype(np.int64), first, stop)
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
        return _padded_rows(cut)

    def _sorted_ranks(self) -> tuple[list[bytes], list[int], list[bool]]:
        """The ranked tokens' bytes sorted, their ids in that order, and whether each is UTF-8 (made when first
        asked for, sorted natively: Python's sort of o200k_base's 200,000 tokens took 0.3 s)."""
        cached: tuple[list[bytes], list[int], list[bool]] | None = self.__dict__.get("_own_sorted")
        if cached is None:
            ranks = self._ranks()
            tokens = list(ranks)
            offsets = np.zeros(len(tokens) + 1, dtype=np.int64)
            np.cumsum(np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens)), out=offsets[1:])
            order, utf8 = sort_byte_strings(np.frombuffer(b"".join(tokens), dtype=np.uint8), offsets)
            ids = np.fromiter(ranks.values(), dtype=np.int64, count=len(ranks))[order].tolist()
            ranked = list(map(tokens.__getitem__, order.tolist()))
            cached = self._own_sorted = (ranked, ids, utf8.astype(bool).tolist())
        return cached

    def _encode_single_piece(self, text_or_bytes: str | bytes) -> list[int]:
        """The ids of the text (or bytes) merged as one piece: no pre-tokenizer, no special tokens (tiktoken's
        private method of that name).

        >>> _tiny()._encode_single_piece("ab ab")
        [256, 32, 256]
        """
        if isinstance(text_or_bytes, str):
            text_or_bytes = text_or_bytes.encode("utf-8")
        if not isinstance(text_or_bytes, bytes):
            raise TypeError(f"{type(text_or_bytes).__name__!r} object is not an instance of 'bytes'")
        return self._ordinary.encode_pieces([bytes(text_or_bytes)])[0]

    def _ranks(self) -> dict[bytes, int]:
        """{token bytes: rank} of the ranks this encoding was made with, its own (made from the tokenizer's
        vocabulary when first asked for): like tiktoken's, which holds a copy, the answers do not follow a
        change to the caller's dict after construction."""
        ranks: dict[bytes, int] | None = self.__dict__.get("_own_ranks")
        if ranks is None:
            specials = self._special_token_values
            ranks = self._own_ranks = {token: i for i, token in self._vocab.items() if i not in specials}
        return ranks

    def _checked(self, text: str, allowed_special: Literal["all"] | AbstractSet[str],
                 disallowed_special: Literal["all"] | Collection[str]) -> Tokenizer:
        """The tokenizer view for encode's keywords, once `text` is checked for disallowed special tokens (as
        tiktoken's encode does it, so with the same exceptions)."""
        if allowed_special is _NOTHING and disallowed_special is _ALL:      # the defaults: the quick way
            if self._special_tokens:
                check_disallowed(text, self._all_specials)
            return self._ordinary
        if allowed_special == "all":
            allowed_special = self.special_tokens_set
        if disallowed_special == "all":
            disallowed_special = self.special_tokens_set - allowed_special
        if disallowed_special:
            if not isinstance(disallowed_special, frozenset):
                disallowed_special = frozenset(disallowed_special)
            check_disallowed(text, disallowed_special)
        return self._encoder(allowed_special)

    def _encoder(self, allowed_special: AbstractSet[str]) -> Tokenizer:
        """The tokenizer matching the special tokens of `allowed_special` (a set of str: tiktoken takes no other)."""
        if not isinstance(allowed_special, (set, frozenset)):
            raise TypeError(f"{type(allowed_special).__name__!r} object is not an instance of 'set'")
        if allowed_special is not self.special_tokens_set:
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
        """The tokens' bytes joined.

        >>> _tiny().decode_bytes([256, 258])
        b'ab<|endoftext|>'
        """
        if type(tokens) in _ARRAYS:
            try:
                return self._tokenizer.decode_bytes(tokens)
            except (TypeError, ValueError, OverflowError):
                pass
        # tiktoken's exception, or tokens it takes that the tokenizer does not (a range, a deque, bools)
        return self._tokenizer.decode_bytes(self._tiktoken_ids(tokens))

    def decode(self, tokens: Sequence[int], errors: str = "replace") -> str:
        """The tokens' bytes decoded as UTF-8 with `errors` ("replace" by default: lossy).

        >>> _tiny().decode([256, 0xE2])
        'ab�'
        """
        return self.decode_bytes(tokens).decode("utf-8", errors=errors)

    def decode_single_token_bytes(self, token: int) -> bytes:
        """The bytes of one token, special tokens included; KeyError when the id has none.

        >>> _tiny().decode_single_token_bytes(257)
        b'abc'
        """
        value = token if type(token) is int else operator.index(token)
        data = self._vocab.get(value)
        if data is None:
            _check_u32(value)
            raise KeyError(str(value))
        return data

    def decode_tokens_bytes(self, tokens: Iterable[int]) -> list[bytes]:
        """[decode_single_token_bytes(t) for t in tokens].

        >>> _tiny().decode_tokens_bytes([257, 258])
        [b'abc', b'<|endoftext|>']
        """
        return [self.decode_single_token_bytes(token) for token in tokens]

    def decode_with_offsets(self, tokens: Iterable[int]) -> tuple[str, list[int]]:
        """(text, offsets): the text of `tokens`, decoded strictly (invalid UTF-8 raises UnicodeDecodeError),
        and for each token the index of the first character holding bytes of it.

        >>> _tiny().decode_with_offsets([256, 0xE2, 0x82, 0xAC])
        ('ab€', [0, 2, 2, 2])
        """
        tokens = list(tokens)
        for token in tokens:        # tiktoken's exceptions for bad ids, in its order
            self.decode_single_token_bytes(token)
        return self._tokenizer.decode_with_offsets([operator.index(t) for t in tokens])

    def decode_batch(self, batch: Iterable[Sequence[int]], *, errors: str = "replace",
                     num_threads: int | None = 8) -> list[str]:
        """[decode(tokens, errors) for tokens in batch], on up to `num_threads` threads.

        >>> _tiny().decode_batch([[256], [257]])
        ['ab', 'abc']
        """
        return map_threads(functools.partial(self.decode, errors=errors), list(batch), _threads(num_threads))

    def decode_bytes_batch(self, batch: Iterable[Sequence[int]], *, num_threads: int | None = 8) -> list[bytes]:
        """[decode_bytes(tokens) for tokens in batch], on up to `num_threads` threads."""
        return map_threads(self.decode_bytes, list(batch), _threads(num_threads))

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

    # ---------------------------------------------------------------------------------------- miscellaneous

    def token_byte_values(self) -> list[bytes]:
        """The bytes of every ranked token, sorted.

        >>> len(_tiny().token_byte_values())
        258
        """
        return list(self._sorted_ranks()[0])

    @property
    def eot_token(self) -> int:
        """The id of "<|endoftext|>" (KeyError when it is not a special token)."""
        return self._special_tokens["<|endoftext|>"]

    @functools.cached_property
    def special_tokens_set(self) -> set[str]:
        """The special tokens, as a set."""
        return set(self._special_tokens.keys())

    def is_special_token(self, token: int) -> bool:
        """Whether the id `token` (an int) is a special token's.

        >>> enc = _tiny()
        >>> enc.is_special_token(258), enc.is_special_token(257)
        (True, False)
        """
        assert isinstance(token, int)
        return token in self._special_token_values

    @property
    def n_vocab(self) -> int:
        """max_token_value + 1 (ids in gaps have no token)."""
        return self.max_token_value + 1


# the characters Rust's char::is_whitespace takes (Unicode's White_Space), which tiktoken's last step asks about
_WHITE_SPACE = frozenset("\t\n\x0b\x0c\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000"
                         + "".join(map(chr, range(0x2000, 0x200B))))


def _prefix_range(ranked: list[bytes], prefix: bytes) -> tuple[int, int]:
    """[lo, hi): where the sorted byte strings `ranked` start with `prefix` (not empty)."""
    lo = bisect.bisect_left(ranked, prefix)
    head = prefix.rstrip(b"\xff")       # the strings that start with prefix sort before its successor
    if not head:
        return lo, len(ranked)
    return lo, bisect.bisect_left(ranked, head[:-1] + bytes([head[-1] + 1]), lo)


def _rows_of(flat: NDArray[np.int64], first: NDArray[np.int64], stop: NDArray[np.int64]) -> NDArray[np.int64]:
    """flat[first[k]:stop[k]] as row k of an array padded with -1 (stop > first)."""
    counts = stop - first
    columns = np.arange(max(int(counts.max(initial=1)), 1))
    inside = columns[None, :] < counts[:, None]
    rows = np.full(inside.shape, -1, dtype=np.int64)
    rows[inside] = flat[(first[:, None] + columns[None, :])[inside]]
    return rows


def _unique_rows(rows: NDArray[np.int64]) -> NDArray[np.int64]:
    """The distinct rows of an array of ids padded with -1: each row packed into one int64 when it fits (NumPy's
    unique of rows sorts them as byte strings, several times slower)."""
    bits = (int(rows.max(initial=0)) + 1).bit_length()
    if bits * rows.shape[1] > 63:
        return np.unique(rows, axis=0)
    keys = np.zeros(len(rows), dtype=np.int64)
    for column in range(rows.shape[1]):
        keys = (keys << bits) | (rows[:, column] + 1)
    return rows[np.unique(keys, return_index=True)[1]]


def _padded_rows(seqs: list[list[int]]) -> NDArray[np.int64]:
    """The sequences as the rows of an array padded with -1."""
    sizes = np.array([len(seq) for seq in seqs], dtype=np.int64)
    stop = np.cumsum(sizes)
    return _rows_of(np.fromiter(itertools.chain.from_iterable(seqs), dtype=np.int64, count=int(stop[-1])),
                    stop - sizes, stop)


def _last_piece(text: str, pattern: str) -> bytes:
    """The UTF-8 of the pattern's last non-empty match in `text` (b"" when none): for a built-in pattern from the
    native scanner's boundaries, which cover the text (no Python string a pre-token)."""
    if not text:
        return b""
    if native_kind(pattern):
        data = text.encode("utf-8")
        bounds = pretoken_boundaries(data, pattern)
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


def _threads(num_threads: float | None) -> int:
    """num_threads as ThreadPoolExecutor takes it (None: its default; 0 or below: its ValueError; what cannot
    be compared with 0: its TypeError), as an int: any other number (a float such as os.cpu_count() / 2, a
    NumPy integer, True) is as many threads as the executor would start for it, its ceiling."""
    if num_threads is None:
        return min(32, (os.cpu_count() or 1) + 4)
    if num_threads <= 0:
        raise ValueError("max_workers must be greater than 0")
    return math.ceil(min(num_threads, _MAX_THREADS))


def _tiny() -> Encoding:
    """A small Encoding for the examples: bytes, "ab" and "abc", and "<|endoftext|>"."""
    ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256, b"abc": 257}
    return Encoding("tiny", pat_str=r"\w+|\W", mergeable_ranks=ranks, special_tokens={"<|endoftext|>": 258})
