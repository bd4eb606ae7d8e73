"""bpe_fast.Encoding: tiktoken's Encoding interface on bpe_fast's encoder.

Code written for ``tiktoken.Encoding`` runs on it unchanged, with the same results and the same exceptions: the
same constructor (name, pat_str, mergeable_ranks, special_tokens, explicit_n_vocab), methods, arguments and
defaults (``encode`` refuses special tokens in the text unless allowed), the attributes tiktoken users read
(``name``, ``max_token_value``, ``_pat_str``, ``_mergeable_ranks``, ``_special_tokens``) and pickling by value.
tiktoken's private methods people call are provided too (``_encode_single_piece``, ``_encode_bytes``,
``_encode_only_native_bpe``), and its core, ``_core_bpe`` (bpe_fast._tiktoken.CoreBPE, as tiktoken's is
tiktoken._tiktoken.CoreBPE), which such code calls or replaces with one of other special tokens.

It is a thin layer: an Encoding's core holds a bpe_fast.Tokenizer (``.tokenizer``, built by
Tokenizer.from_tiktoken, the merges recovered from the ranks) and the Encoding turns tiktoken's keywords into the
Tokenizer's: the allowed special tokens select a view of the tokenizer that matches only those, the disallowed ones
are looked for in the text first. A pat_str other than the built-in patterns is read with `regex` as tiktoken's
engine reads it (bpe_fast.patterns.pattern_from_tiktoken: anchors, POSIX sets, set operations in `regex`'s
version 1 syntax, ...; a ValueError names a construct the two engines read otherwise with no such spelling).
Differences, all refusals at construction: the 256 single bytes must have ranks; a special token may not
share its id with a ranked token, nor its bytes; ids must lie below
2^31 - 1, the largest below 4 times the number of tokens plus 2^20 (the encoder's tables are indexed by id),
"" is not a special token, and no special token starts with another (tiktoken chooses between two such by its
hash map's order). Ranks with tokens that merging the lower-ranked ones does not make (Llama 3's 678) are
read as tiktoken reads them (Tokenizer.by_ranks_only: such a token only for a piece that is the whole token).
Two special tokens may share an id (o200k_harmony's <|endofprompt|> and
<|reserved_200018|>): both encode to it, and it decodes to the first given (tiktoken's to either). One more
difference, for speed: encode reads ``special_tokens_set`` (which tokens are disallowed by default, or not
allowed by a set) once for the defaults and once for each allowed set it keeps, where tiktoken reads it on every
call; changing that set in place after encoding has no effect here.

>>> ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256, b"abc": 257}
>>> enc = Encoding("tiny", pat_str=r"\\w+|\\W", mergeable_ranks=ranks, special_tokens={"<|endoftext|>": 258})
>>> enc.encode("abc ab<|endoftext|>", allowed_special="all")
[257, 32, 256, 258]
>>> enc.decode([257, 32, 256])
'abc ab'
"""
from __future__ import annotations

import functools
import math
import operator
import os
import sys
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Any, Generic, Literal, NamedTuple, SupportsIndex, TypeVar, cast, overload

from ._numpy import np
from .specials import FEW_TOKENS, check_disallowed, shared_start
from .procs import map_threads
from ._encode import items_at
from ._types import StrPath
from ._tiktoken import CoreBPE
from .tokenizer import Tokenizer, decodes_in_parallel

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["Encoding"]

_NOTHING: frozenset[str]
_NOTHING = frozenset()   # allowed_special's default: tiktoken's is set(), equal to it; this one is told apart
_ALL = "all"
_OWN_HANDLERS = frozenset({"replace", "strict", "ignore"})     # decode's handlers that are Python's own code
_REPLACE = "replace"    # decode's default (the same object as the default's: the quick test)
_T = TypeVar("_T")
_MAX_VIEWS = 64     # allowed sets an Encoding keeps what they ask for (forgotten all at once past it)
# The attributes an Encoding makes when first asked for (see _core_bpe's setter and special_tokens_set). __init__
# sets each and drops it again, so that its class has seen their names from its first instance on: CPython 3.11
# keeps an object's attributes in the object only under names its class saw before a few dozen instances were
# made, and one made later under another name moves them all into a dict (each read ~15 ns slower)
_MADE_LATER = ("_bytes_of", "_rank_of", "_bytes_list", "_default_view", "special_tokens_set")


class _MadeOnce(Generic[_T]):
    """functools.cached_property's kind (made when first read, then the instance's own attribute), the value set
    with setattr: cached_property writes to the instance's __dict__, and on CPython 3.11 reading an object's
    __dict__ makes every later attribute read of it slower (Encoding._core_bpe's setter)."""

    def __init__(self, func: Callable[[Any], _T]) -> None:
        self.func = func
        self.attrname = func.__name__
        self.__doc__ = func.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.attrname = name

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> _MadeOnce[_T]: ...

    @overload
    def __get__(self, instance: object, owner: type | None = None) -> _T: ...

    def __get__(self, instance: object | None, owner: type | None = None) -> _T | _MadeOnce[_T]:
        if instance is None:
            return self
        value = self.func(instance)
        setattr(instance, self.attrname, value)     # (this has no __set__: the instance's attribute, read first)
        return value


class _View(NamedTuple):
    """What an allowed_special set asks encode for (Encoding._checked)."""

    allowed: frozenset[str] | str   # the set's contents when it was seen (or "all")
    disallowed: frozenset[str]      # the special tokens to look for in the text
    look_for: tuple[str, ...] | None    # the same, looked for one by one (None: too many, check_disallowed)
    shared: str                     # the start they all share ("<|"; "" for none): a text without it holds none
    encoder: Tokenizer | None       # the tokenizer view matching the allowed special tokens (None: the defaults')
_MAX_THREADS = 1 << 16    # a larger num_threads (inf) asks for a thread an item, as this many do


_NO_VIEW = _View(cast(Any, object()), frozenset(), (), "", None)     # (equal to no allowed set)


def _view(allowed: frozenset[str] | str, disallowed: frozenset[str], encoder: Tokenizer | None) -> _View:
    """The _View of these allowed and disallowed special tokens, encoding with `encoder`."""
    look_for = tuple(disallowed) if len(disallowed) <= FEW_TOKENS else None    # (None: one regex search)
    return _View(allowed, disallowed, look_for, shared_start(disallowed), encoder)


# the methods tiktoken's batch and bytes helpers call on self, and those helpers: where a subclass or an instance
# has its own method, the helpers are replaced by ones that call it as tiktoken's do (Encoding._<helper>_on_self:
# the native paths skipped it; helper-150), so that Encoding's own pay nothing for the check
_HELPERS_CALLING = {"encode": ("encode_batch",), "encode_ordinary": ("encode_ordinary_batch",),
                    "decode_single_token_bytes": ("decode_tokens_bytes", "decode_with_offsets"),
                    "decode_tokens_bytes": ("decode_with_offsets",)}


class Encoding:
    """tiktoken.Encoding's interface (see the module docstring); its docstrings are tiktoken's, shortened."""

    # the core's (set with it by _core_bpe's setter)
    _core: CoreBPE
    _tokenizer: Tokenizer
    _ordinary: Tokenizer
    _vocab: Mapping[int, bytes]
    _views: dict[tuple[int, bool], _View]
    # made when first asked for (see _core_bpe's setter)
    _bytes_of: dict[int, bytes]
    _rank_of: dict[bytes, int]
    _bytes_list: list[bytes | None]
    _default_view: _View

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name, helpers in _HELPERS_CALLING.items():
            if getattr(cls, name) is not getattr(Encoding, name):
                for helper in helpers:
                    if getattr(cls, helper) is getattr(Encoding, helper):      # (not one of its own either)
                        setattr(cls, helper, getattr(Encoding, f"_{helper}_on_self"))

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        for helper in _HELPERS_CALLING.get(name, ()):   # a method set on the instance (enc.encode = wrapper)
            if getattr(type(self), helper) is getattr(Encoding, helper) and helper not in vars(self):
                object.__setattr__(self, helper, getattr(Encoding, f"_{helper}_on_self").__get__(self))

    def __init__(self, name: str, *, pat_str: str, mergeable_ranks: dict[bytes, int], special_tokens: dict[str, int],
                 explicit_n_vocab: int | None = None) -> None:
        """name: the encoding's name; pat_str: the pre-tokenization regex; mergeable_ranks: {token bytes: rank}
        (the rank is the id and the merge priority); special_tokens: {str: id}; explicit_n_vocab: when given,
        len(mergeable_ranks) + len(special_tokens) and max_token_value + 1 must equal it (AssertionError)."""
        for made_later in _MADE_LATER:
            if not hasattr(getattr(type(self), made_later, None), "__set__"):    # (a subclass's property: not set)
                object.__setattr__(self, made_later, None)
                object.__delattr__(self, made_later)
        self.name = name
        self._pat_str = pat_str
        self._mergeable_ranks = mergeable_ranks
        self._special_tokens = special_tokens
        if not mergeable_ranks:     # tiktoken's error, in this Python's words (3.12 changed them): its
            max(mergeable_ranks.values())       # max_token_value is max(mergeable_ranks.values(), ...)
        if explicit_n_vocab:
            largest = max(max(mergeable_ranks.values()), max(special_tokens.values(), default=0))
            if len(mergeable_ranks) + len(special_tokens) != explicit_n_vocab:
                raise AssertionError(f"{len(mergeable_ranks)} ranks and {len(special_tokens)} special tokens, "
                                     f"not explicit_n_vocab={explicit_n_vocab}")
            if largest != explicit_n_vocab - 1:
                raise AssertionError(f"the largest id is {largest}, not explicit_n_vocab - 1")
        self._special_token_values = set(special_tokens.values())
        self._core_bpe = CoreBPE(mergeable_ranks, special_tokens, pat_str)
        # tiktoken's max(max(ranks), max(special ids, default=0)): the ranks are not negative (checked)
        self.max_token_value = self._tokenizer.max_token_value

    @property
    def _core_bpe(self) -> CoreBPE:
        """The core doing the work (bpe_fast._tiktoken.CoreBPE, as tiktoken's is tiktoken._tiktoken.CoreBPE).
        Code written for tiktoken may put another in its place (one made with other special tokens): the
        methods use it from then on; the attributes tiktoken sets once (max_token_value, _special_tokens,
        special_tokens_set, is_special_token's ids) stay as they were, as tiktoken's do."""
        return self._core

    @_core_bpe.setter
    def _core_bpe(self, core: CoreBPE) -> None:
        if not isinstance(core, CoreBPE):
            raise TypeError(f"_core_bpe must be a bpe_fast._tiktoken.CoreBPE, got {type(core).__name__} (with "
                            "bpe_fast in tiktoken's place, make it with bpe_fast._tiktoken.CoreBPE(ranks, special_tokens, "
                            "pattern))")
        # the encoding and decoding paths read these directly (the default ones are a few hundred nanoseconds a
        # call). Set one by one, never through __dict__: on CPython 3.11 reading an object's __dict__ makes every
        # later attribute read of it ~15 ns slower (its values move from the object into a dict), a tenth of what
        # a one-token look-up costs. A thread encoding meanwhile may see some of the old core's and some of the
        # new one's: each call reads one of them
        self._core = core
        self._tokenizer = core._tokenizer
        self._ordinary = core._ordinary
        self._vocab = core._vocab
        self._views = {}        # encode's keywords -> what they ask for (_checked)
        # made when first asked for (AttributeError until then), the old core's dropped: _bytes_of, {id: bytes}, a
        # plain dict of the core's read-only vocabulary for decode_single_token_bytes (a dict's look-up is ~20 ns
        # quicker than the mapping's); _bytes_list, the same as a list by id (None: no token) for
        # decode_tokens_bytes's native look-ups; _rank_of, the core's {token bytes: rank} for encode_single_token. Kept
        # across cores: _default_view, what encode's defaults ask for (_checked: no tokenizer in it). _views, the
        # allowed sets', is set after _core: a thread that reads the new dict then reads the new core, and one
        # that read the old dict keeps what it makes in that one, which no one reads again
        # (deleted last: a thread making one meanwhile, from the old core, drops it when it sees the new core)
        _forget(self, "_bytes_of")
        _forget(self, "_rank_of")
        _forget(self, "_bytes_list")

    def _make(self, name: str, make: Callable[[Encoding], object]) -> None:
        """Set the attribute `name` (a look-up table made from the core, see _core_bpe's setter) to make(self);
        dropped again when a core was put in place meanwhile (made from the new one next time: the setter drops
        these after it sets _core). (Not a lambda at the callers: one would make `self` a closure cell there, and
        each of their calls slower.)"""
        core = self._core
        setattr(self, name, make(self))
        if self._core is not core:
            _forget(self, name)

    def _ranks_of_core(self) -> dict[bytes, int]:
        return self._core.ranks()

    def _bytes_of_vocab(self) -> dict[int, bytes]:
        return dict(self._vocab)

    def _bytes_list_of_vocab(self) -> list[bytes | None]:
        vocab = self._vocab
        return [vocab.get(i) for i in range(max(vocab, default=-1) + 1)]

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
        try:
            return cls(name, pat_str=pat_str, mergeable_ranks=ranks,
                       special_tokens={} if special_tokens is None else special_tokens,
                       explicit_n_vocab=explicit_n_vocab)
        except ValueError as exc:       # the ranks' checks, made on a dict: "ranks: ..." named no file
            try:                        # (the same checks of the file: a FormatError naming it and the line)
                Tokenizer.from_tiktoken(path, pat_str, special_tokens)
            except ValueError as named:
                raise named from None
            raise exc

    @property
    def tokenizer(self) -> Tokenizer:
        """The bpe_fast.Tokenizer doing the work (its defaults are CS336's: its special tokens are matched; it reads
        characters as tiktoken does, Unicode 16.0: Tokenizer.with_unicode, with a built-in pattern; a custom pat_str
        goes through `regex`, with its own, newer, classes)."""
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
        if allowed_special is _NOTHING and disallowed_special is _ALL and type(text) is str:
            try:        # (the defaults, written out here: a call fewer)
                shared = self._default_view.shared
            except AttributeError:
                shared = None
            if shared and shared not in text:
                return self._ordinary.encode(text)
        return self._checked(text, allowed_special, disallowed_special).encode(text)

    def encode_to_numpy(self, text: str, *, allowed_special: Literal["all"] | AbstractSet[str] = _NOTHING,
                        disallowed_special: Literal["all"] | Collection[str] = "all") -> NDArray[np.uint32]:
        """encode's ids as a uint32 array, read-only (as tiktoken's, a view of its core's buffer: writing to it
        raises ValueError). As tiktoken's, lone surrogates raise UnicodeEncodeError here.

        >>> _tiny().encode_to_numpy("abc")
        array([257], dtype=uint32)
        """
        encoder = self._checked_text_first(text, allowed_special, disallowed_special)
        if not isinstance(text, str):
            raise TypeError(f"argument 'text': {type(text).__name__!r} object cannot be converted to 'PyString'")
        ids = encoder.encode_utf8_to_numpy(str.encode(text, "utf-8"), _uint32())     # a subclass: its characters
        ids.setflags(write=False)
        return ids

    def encode_ordinary_batch(self, text: Iterable[str], *, num_threads: int | None = 8) -> list[list[int]]:
        """[encode_ordinary(t) for t in text], on up to `num_threads` threads.

        >>> _tiny().encode_ordinary_batch(["ab", "abc"])
        [[256], [257]]
        """
        return self._ordinary.encode_batch(_as_list(text), num_threads=_threads(num_threads))

    def _encode_ordinary_batch_on_self(self, text: Iterable[str], *, num_threads: int | None = 8) -> list[list[int]]:
        """encode_ordinary_batch calling self.encode_ordinary (see _HELPERS_CALLING)."""
        return map_threads(self.encode_ordinary, _as_list(text), _threads(num_threads))

    def _encode_batch_on_self(self, text: Iterable[str], *, num_threads: int | None = 8,
                              allowed_special: Literal["all"] | AbstractSet[str] = _NOTHING,
                              disallowed_special: Literal["all"] | Collection[str] = "all") -> list[list[int]]:
        """encode_batch calling self.encode (see _HELPERS_CALLING), with the keywords as tiktoken hands them on."""
        allowed_special, disallowed_special = self._batch_specials(allowed_special, disallowed_special)
        encode = functools.partial(self.encode, allowed_special=allowed_special, disallowed_special=disallowed_special)
        return map_threads(encode, _as_list(text), _threads(num_threads))

    def _batch_specials(self, allowed_special: Literal["all"] | AbstractSet[str],
                        disallowed_special: Literal["all"] | Collection[str]
                        ) -> tuple[AbstractSet[str], frozenset[str]]:
        """encode_batch's keywords as tiktoken's encode_batch passes them to encode: "all" made a set, the
        disallowed tokens a frozenset (its errors, a list or a number given, raised here, before any text)."""
        if allowed_special == "all":
            allowed_special = self.special_tokens_set
        if disallowed_special == "all":
            disallowed_special = self.special_tokens_set - allowed_special
        if not isinstance(disallowed_special, frozenset):
            disallowed_special = frozenset(disallowed_special)
        return allowed_special, disallowed_special

    def encode_batch(self, text: Iterable[str], *, num_threads: int | None = 8,
                     allowed_special: Literal["all"] | AbstractSet[str] = _NOTHING,
                     disallowed_special: Literal["all"] | Collection[str] = "all") -> list[list[int]]:
        """[encode(t, ...) for t in text], on up to `num_threads` threads.

        >>> _tiny().encode_batch(["ab", "<|endoftext|>"], allowed_special="all")
        [[256], [258]]
        """
        allowed_special, disallowed_special = self._batch_specials(allowed_special, disallowed_special)
        threads = _threads(num_threads)
        texts = _as_list(text)
        if not texts:       # tiktoken's encode runs text by text: no text, no more checks
            return []
        try:
            encoder = self._core.tokenizer_for(allowed_special, allowed_special is self.special_tokens_set)
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
        if type(text_or_bytes) is not bytes:
            if not isinstance(text_or_bytes, str):
                return self._core.encode_single_token(text_or_bytes)    # (tiktoken's exceptions)
            text_or_bytes = text_or_bytes.encode("utf-8")
        try:
            return self._rank_of[text_or_bytes]
        except KeyError:
            pass
        except AttributeError:      # not made yet (see _core_bpe's setter)
            self._make("_rank_of", Encoding._ranks_of_core)
            return Encoding.encode_single_token(self, text_or_bytes)
        return self._core.encode_single_token(text_or_bytes)    # a special token's, or tiktoken's KeyError

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
        encoder = self._checked_text_first(text, allowed_special, disallowed_special)
        if not isinstance(text, str):
            raise TypeError(f"argument 'text': {type(text).__name__!r} object cannot be converted to 'PyString'")
        return self._core.encode_with_unstable(text, frozenset(encoder.special_tokens))

    def _encode_bytes(self, text: bytes) -> list[int]:
        """The ids of any bytes, as tiktoken's private method of that name gives them (its core's: CoreBPE's).

        >>> _tiny()._encode_bytes(b"ab ab\\xff")
        [256, 32, 256, 255]
        """
        return self._core._encode_bytes(text)

    def _encode_only_native_bpe(self, text: str) -> list[int]:
        """The ids of `text` split by `regex`'s findall of the pattern and each piece merged alone (tiktoken's
        private method of that name, which checks its Rust split against Python's). No special token is made.

        >>> _tiny()._encode_only_native_bpe("ab ab")
        [256, 32, 256]
        """
        import regex

        pieces = [piece.encode("utf-8") for piece in regex.findall(self._pat_str, text)]
        return [token for ids in self._ordinary.encode_pieces(pieces) for token in ids]

    def _encode_single_piece(self, text_or_bytes: str | bytes) -> list[int]:
        """The ids of the text (or bytes) merged as one piece: no pre-tokenizer, no special tokens (tiktoken's
        private method of that name).

        >>> _tiny()._encode_single_piece("ab ab")
        [256, 32, 256]
        """
        if isinstance(text_or_bytes, str):
            text_or_bytes = text_or_bytes.encode("utf-8")
        return self._core.encode_single_piece(text_or_bytes)

    def _checked(self, text: str, allowed_special: Literal["all"] | AbstractSet[str],
                 disallowed_special: Literal["all"] | Collection[str]) -> Tokenizer:
        """The tokenizer view for encode's keywords, once `text` is checked for disallowed special tokens (as
        tiktoken's encode does it, so with the same exceptions). What the defaults ask for, and what a set (or
        "all") given again asks for (or an equal one at its address: kept by its identity, checked by its
        contents) with the two disallowed_special people pass with it, "all" (the default) and (), is kept as a
        _View."""
        if allowed_special is _NOTHING and disallowed_special is _ALL:      # the defaults
            try:
                view = self._default_view
            except AttributeError:
                # special_tokens_set's tokens, as tiktoken's encode takes them: its set is made when first asked
                # for, and kept (a core put in its place later does not change it, nor this view)
                view = self._default_view = _view(_NOTHING, frozenset(self.special_tokens_set), None)
            encoder = self._ordinary
        else:
            kind = type(allowed_special)
            if not ((kind is set or kind is frozenset or (kind is str and allowed_special == "all"))
                    and (disallowed_special is _ALL or disallowed_special == ())):
                return self._checked_slowly(text, allowed_special, disallowed_special)
            key = (id(allowed_special), disallowed_special is _ALL)
            views = self._views     # (read before the core: see _core_bpe's setter)
            view = views.get(key, _NO_VIEW)
            found = view.allowed == allowed_special
            if found and kind is not str:
                for item in allowed_special:    # (equal is not enough: tiktoken's TypeError for what is not a str)
                    if type(item) is not str:
                        found = False
                        break
            if not found:
                # the set read once (another thread may change it meanwhile), its tokenizer view made for that
                every = self.special_tokens_set
                given: frozenset[str] = frozenset(every if kind is str else cast(AbstractSet[str], allowed_special))
                encoder = self._checked_slowly(text, "all" if kind is str else given, disallowed_special)
                if len(views) >= _MAX_VIEWS:
                    views.clear()
                views[key] = _view("all" if kind is str else given, frozenset(every - given) if key[1]
                                   else frozenset(), encoder)
                return encoder
            encoder = cast(Tokenizer, view.encoder)     # (a set's view has one)
        _, disallowed, look_for, shared, _ = view
        if disallowed:
            if type(text) is not str or look_for is None:       # (a str subclass's `in` may be its own)
                check_disallowed(text, disallowed)
            elif not shared or shared in text:
                for token in look_for:
                    if token in text:
                        check_disallowed(text, disallowed)      # (raises tiktoken's error)
        return encoder

    def _checked_text_first(self, text: str, allowed_special: Literal["all"] | AbstractSet[str],
                            disallowed_special: Literal["all"] | Collection[str]) -> Tokenizer:
        """_checked, for the methods whose core tiktoken gives the text and then the allowed set: a text that
        cannot be UTF-8 (lone surrogates) raises its UnicodeEncodeError before the core's TypeError for a set
        with an item that is not a str, and after the TypeError of tiktoken's own steps before the core (an
        allowed_special that is not a set, as a list: special_tokens_set - allowed_special; a disallowed_special
        with an item that is not a str). (Taken again only when a TypeError was raised: no cost otherwise.)"""
        try:
            return self._checked(text, allowed_special, disallowed_special)
        except TypeError:
            if isinstance(text, str):
                self._keywords_checked(text, allowed_special, disallowed_special)  # (their TypeError, if theirs)
                str.encode(text, "utf-8")
            raise

    def _checked_slowly(self, text: str, allowed_special: Literal["all"] | AbstractSet[str],
                        disallowed_special: Literal["all"] | Collection[str]) -> Tokenizer:
        """_checked, every step taken as tiktoken's encode takes it."""
        allowed_special = self._keywords_checked(text, allowed_special, disallowed_special)
        return self._core.tokenizer_for(allowed_special, allowed_special is self.special_tokens_set)

    def _keywords_checked(self, text: str, allowed_special: Literal["all"] | AbstractSet[str],
                          disallowed_special: Literal["all"] | Collection[str]) -> AbstractSet[str]:
        """The allowed set, once `text` is checked for disallowed special tokens: tiktoken's encode's steps before
        it calls its core, with their exceptions in their order."""
        if allowed_special == "all":
            allowed_special = self.special_tokens_set
        if disallowed_special == "all":
            disallowed_special = self.special_tokens_set - allowed_special
        if disallowed_special:
            if not isinstance(disallowed_special, frozenset):
                disallowed_special = frozenset(disallowed_special)
            check_disallowed(text, disallowed_special)
        return allowed_special

    # ---------------------------------------------------------------------------------------- decoding

    def decode_bytes(self, tokens: Sequence[int]) -> bytes:
        """The tokens' bytes joined.

        >>> _tiny().decode_bytes([256, 258])
        b'ab<|endoftext|>'
        """
        if type(tokens) is list:        # (as decode)
            try:
                return self._tokenizer.decode_bytes(tokens)
            except (TypeError, ValueError, OverflowError):
                pass
        return self._core.decode_bytes(tokens)

    def decode(self, tokens: Sequence[int], errors: str = "replace") -> str:
        """The tokens' bytes decoded as UTF-8 with `errors` ("replace" by default: lossy).

        >>> _tiny().decode([256, 0xE2])
        'ab�'
        """
        if type(tokens) is list and (errors is _REPLACE or type(errors) is str and errors in _OWN_HANDLERS):
            # (the usual call, often of a few ids: the tokenizer's, one call fewer; with a handler that runs no
            # code of the caller's, so that an error other than strict's is the ids' and the long way names it)
            try:
                return self._tokenizer.decode(tokens, errors)
            except UnicodeDecodeError:
                raise       # (strict's: the ids were read and have tokens, and the error is bytes.decode's)
            except (TypeError, ValueError, OverflowError):
                pass
        return self._core.decode(tokens, errors)

    def decode_single_token_bytes(self, token: int) -> bytes:
        """The bytes of one token, special tokens included; KeyError when the id has none.

        >>> _tiny().decode_single_token_bytes(257)
        b'abc'
        """
        if type(token) is int:          # (the quick way: one look-up)
            try:
                return self._bytes_of[token]
            except KeyError:
                pass
            except AttributeError:      # not made yet (see _core_bpe's setter)
                self._make("_bytes_of", Encoding._bytes_of_vocab)
                return Encoding.decode_single_token_bytes(self, token)     # (not a subclass's: its super() call)
        return self._core.decode_single_token_bytes(token)      # its exceptions, as tiktoken's

    def decode_tokens_bytes(self, tokens: Iterable[int]) -> list[bytes]:
        """[decode_single_token_bytes(t) for t in tokens].

        >>> _tiny().decode_tokens_bytes([257, 258])
        [b'abc', b'<|endoftext|>']
        """
        try:
            result = items_at(self._bytes_list, tokens)     # (a list of ints with tokens: natively)
        except AttributeError:      # not made yet (see _core_bpe's setter)
            self._make("_bytes_list", Encoding._bytes_list_of_vocab)
            return Encoding.decode_tokens_bytes(self, tokens)
        if result is not None:
            return result
        return [self.decode_single_token_bytes(token) for token in tokens]     # (its exceptions, as tiktoken's)

    def _decode_tokens_bytes_on_self(self, tokens: Iterable[int]) -> list[bytes]:
        """decode_tokens_bytes calling self.decode_single_token_bytes (see _HELPERS_CALLING)."""
        return [self.decode_single_token_bytes(token) for token in tokens]

    def _decode_with_offsets_on_self(self, tokens: Iterable[int]) -> tuple[str, list[int]]:
        """decode_with_offsets from self.decode_tokens_bytes (see _HELPERS_CALLING): the text (strict UTF-8) and for
        each token the index of the first character holding bytes of it (one that starts with a continuation byte
        belongs to the character before)."""
        pieces = self.decode_tokens_bytes(tokens)
        offsets, length = [], 0
        for piece in pieces:
            offsets.append(max(0, length - (1 if piece and 0x80 <= piece[0] < 0xC0 else 0)))
            length += sum(1 for byte in piece if not 0x80 <= byte < 0xC0)
        return b"".join(pieces).decode("utf-8", "strict"), offsets

    def decode_with_offsets(self, tokens: Iterable[int]) -> tuple[str, list[int]]:
        """(text, offsets): the text of `tokens`, decoded strictly (invalid UTF-8 raises UnicodeDecodeError),
        and for each token the index of the first character holding bytes of it.

        >>> _tiny().decode_with_offsets([256, 0xE2, 0x82, 0xAC])
        ('ab€', [0, 2, 2, 2])
        """
        tokens = _as_list(tokens)
        try:
            return self._tokenizer.decode_with_offsets(tokens)
        except (TypeError, ValueError, OverflowError):  # (a UnicodeDecodeError too: raised again below)
            pass
        for token in tokens:        # tiktoken's exceptions for bad ids, in its order
            self.decode_single_token_bytes(token)
        return self._tokenizer.decode_with_offsets([operator.index(t) for t in tokens])

    def decode_batch(self, batch: Iterable[Sequence[int]], *, errors: str = "replace",
                     num_threads: int | None = 8) -> list[str]:
        """[decode(tokens, errors) for tokens in batch], on up to `num_threads` threads.

        >>> _tiny().decode_batch([[256], [257]])
        ['ab', 'abc']
        """
        return map_threads(functools.partial(self.decode, errors=errors), _as_list(batch), _threads(num_threads),
                           decodes_in_parallel)

    def decode_bytes_batch(self, batch: Iterable[Sequence[int]], *, num_threads: int | None = 8) -> list[bytes]:
        """[decode_bytes(tokens) for tokens in batch], on up to `num_threads` threads."""
        return map_threads(self.decode_bytes, _as_list(batch), _threads(num_threads), decodes_in_parallel)

    # ---------------------------------------------------------------------------------------- miscellaneous

    def token_byte_values(self) -> list[bytes]:
        """The bytes of every ranked token, sorted.

        >>> len(_tiny().token_byte_values())
        258
        """
        return self._core.token_byte_values()

    @property
    def eot_token(self) -> int:
        """The id of "<|endoftext|>" (KeyError when it is not a special token)."""
        return self._special_tokens["<|endoftext|>"]

    @_MadeOnce
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


def _as_list(items: Iterable[_T]) -> list[_T]:
    """`items` as a new list, read as tiktoken reads them, by iterating: list() asks a sequence for its length
    first, and one whose __len__ raises (other than TypeError) would fail here where tiktoken's methods do not."""
    return list(items) if type(items) is list else [item for item in items]


def _forget(obj: object, name: str) -> None:
    """Delete the attribute `name` of `obj` if it has one."""
    try:
        delattr(obj, name)
    except AttributeError:
        pass


def _threads(num_threads: float | None) -> int:
    """num_threads as ThreadPoolExecutor takes it (None: its default; 0 or below: its ValueError; what cannot
    be compared with 0: its TypeError), as an int: any other number (a float such as os.cpu_count() / 2, a
    NumPy integer, True) is as many threads as the executor would start for it, its ceiling."""
    if num_threads is None:
        return min(32, (os.cpu_count() or 1) + 4)
    if num_threads <= 0:
        raise ValueError("max_workers must be greater than 0")
    return math.ceil(min(num_threads, _MAX_THREADS))


@functools.cache
def _uint32() -> np.dtype[np.uint32]:
    """encode_to_numpy's dtype, as tiktoken's (NumPy's instance: made when first asked for)."""
    return np.dtype(np.uint32)


def _tiny() -> Encoding:
    """A small Encoding for the examples: bytes, "ab" and "abc", and "<|endoftext|>"."""
    ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256, b"abc": 257}
    return Encoding("tiny", pat_str=r"\w+|\W", mergeable_ranks=ranks, special_tokens={"<|endoftext|>": 258})
