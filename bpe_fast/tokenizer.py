"""The byte-level BPE tokenizer: encode, encode_iterable and decode, with the ids tiktoken gives for the same ranks.

Encoding a text:

1. The special tokens are found, the longest first where one is a prefix of another (bpe_fast.specials);
   each becomes its single id. Without special tokens "<|endoftext|>" is ordinary text.
2. Each piece between them is pre-tokenized with the pattern (bpe_fast.pretokenize: the native scanner for
   the built-in patterns, `regex` for other patterns), on the whole piece at once.
3. Each pre-token's bytes are merged by the native encoder (bpe_fast._encode) with tiktoken's rule: while two
   adjacent parts concatenate to a token some merge produced, join the pair whose token the earliest merge
   produced, the leftmost on a tie. Merge k (0-based) has rank k; a token made by several merges keeps the
   first. For tokenizers produced by BPE training this is the same as applying the merge list in order.

For the built-in patterns (patterns.builtin_name: GPT-2's, GPT-4's, o200k's, Llama 3's, Qwen2's, Tekken's; when
the native scanner is available) steps 1-3 are one native call per text (BPECore.encode_text) or per chunk of encode_iterable
(StreamEncoder.feed), and the native scanner owns the rule for where a text that may go on can be cut. Other
patterns take the Python path below: the special tokens found with the native matcher, `regex` pre-tokenizes, the merges
are native, and encode_iterable cuts with _safe_cut's more cautious rule.

Which special tokens step 1 matches is tiktoken's `allowed_special` (by default all of the tokenizer's, as
CS336 has it); for another set, encode runs on a view of the tokenizer (_view: the same tables and encoders,
other special-token matching), so there is one encoding path. tiktoken's ranks come in through from_tiktoken
(bpe_fast.ranks recovers the merges) and bpe_fast.Encoding gives tiktoken's interface over a Tokenizer.

This module checks arguments and owns files; the loops are in bpe_fast/_encode.pyx.
"""
from __future__ import annotations

import array
import collections.abc
import functools
import itertools
import operator
import os
import time
import warnings
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, NoReturn, TypeVar, Union

from ._numpy import np
from ._limits import MAX_TOKEN_ID, sparsity_problem
from ._encode import (DECODE_PARALLEL_IDS, MAX_WHOLE_PIECE, BatchJob, BPETables, DisallowedFound, EncoderPool,
                      IdBuffer, PieceTable, Segmenter, StreamEncoder, StreamIds, tables_made_by_merging, utf8_searchable,
                      utf8_text)
from ._ranks import ranks_table_arrays
from .patterns import (GPT2_PATTERN, GPT4_PATTERN, O200K_PATTERN, builtin_name, check_tiktoken_readable,  # noqa: F401
                       resolve_pattern)     # (GPT4_PATTERN, O200K_PATTERN: the doctests')
from .pretokenize import (PEERS_UNICODE, check_documents_utf8, check_unicode, check_utf8, compiled_pattern,
                          native_kind, native_tables, pretoken_spans)
from .procs import ThreadJob, map_threads, usable_cores
from .specials import SpecialTokens, check_disallowed, check_no_alias, id_holders, split_on_specials
from ._types import Merges, StrPath, Vocab

if TYPE_CHECKING:
    from concurrent.futures import Future

    from numpy.typing import ArrayLike, DTypeLike, NDArray
    import regex
    import tiktoken

    from . import formats
    from ._encode import BPECore
    from ._gpt2_files import TokenIndex
    from .formats import MergesSource, TableArrays
    from .token_view import TokenView
    from .ranks import RankedTokens

__all__ = ["Tokenizer"]

_T = TypeVar("_T")
# encode's keywords, as tiktoken's: "all", or the special tokens to match / to refuse in the text
AllowedSpecial = Union[Literal["all"], AbstractSet[str]]
DisallowedSpecial = Union[Literal["all"], Collection[str]]

_INT32_MAX = 2**31 - 1


@functools.cache
def _output_dtypes() -> dict[np.dtype[Any], int]:
    """The dtypes the encoding methods may give ids as (encode_to_numpy's), each with its largest value."""
    return {np.dtype(t): int(np.iinfo(t).max) for t in (np.int32, np.uint16, np.uint32, np.int64, np.uint64)}


@functools.cache
def _last_non_space() -> regex.Pattern[str]:
    """Searched backwards: the last character that is not \\s (compiled when first used: `regex` is imported only
    where a custom pattern needs it)."""
    import regex

    return regex.compile(r"(?r)\S")


_ALL = "all"            # encode's default allowed_special (any str "all" means the same; this one is fast)
_NONE: frozenset[str] = frozenset()
_LISTS = (list, tuple)   # what decode reads item by item in C (BPETables.decode_list); a tuple as a list
# a tokenizer keeps at most this many views with other special tokens (Tokenizer._view)
_MAX_VIEWS = 64
# encode_iterable re-examines the unfinished tail only once the pending text has grown by this factor,
# so a pre-token longer than any chunk costs linear, not quadratic, time.
_PENDING_GROWTH = 2
# encode_iterable with a normalizer holds the text it cannot normalize yet in pieces; strings shorter than this
# (characters) are joined into one piece once this many have come (_normalized_runs)
_JOINED_PIECE = 4096
# encode_iterable (a custom pattern) keeps this much of the text it has encoded before the pending text, for the
# pattern's "^", "\b" and look-behind (a look-behind reaching further back sees only this much)
_CONTEXT_BYTES = 256
# encode_batch cuts a batch into groups of texts of at most about this much UTF-8 (a text longer than that into
# pieces), which the threads claim one at a time (a BatchJob): small enough that the threads finish together
# and that the calling thread makes each group's lists soon after it is encoded, large enough that a group
# costs little.
_GROUP_BYTES = 1 << 18


LOAD_TRIES = 8          # Tokenizer.load opens a folder's files again when they changed meanwhile, this many times
LOAD_SETTLE = 0.05      # and looks again this many seconds after files that make no tokenizer


class Tokenizer:
    """A byte-level BPE tokenizer (GPT-2 style) with a native encoder.

    vocab: dict[int, bytes], id -> token bytes. merges: list[tuple[bytes, bytes]] in the order they were made;
    both tokens of a merge and their concatenation must be in the vocabulary. special_tokens: list[str]; each
    takes the id of its UTF-8 bytes in the vocabulary, or else the next unused id (appended, in order); given as
    tiktoken's {str: id}, those ids must be the ones they take (else ValueError: from_tiktoken takes such ids); a
    token listed twice counts once, where it first appears.
    pattern: the pre-tokenization regex or a name ("gpt2", "gpt4"). training: what training recorded (train_bpe's
    result.training: each merge's pair count, corpus statistics), kept as `training` and saved by save.

    Threads may share a Tokenizer. Texts of 16 KB or more are encoded without the GIL, each call on an encoder
    of its own (the tokenizer keeps the ones not in use, up to max(8, CPU count), each with its cache), so
    threads encode in parallel; the pre-tokenizing of a custom pattern holds the GIL (processes suit it
    better).

    A subclass with an __init__ of its own: the class-method constructors (from_files, load, from_hf,
    from_tiktoken) build the tokenizer from what they read, then run that __init__ on it with what they read as
    its arguments (those of vocab, merges, special_tokens, pattern and training its signature takes). Arguments it
    passes on to Tokenizer.__init__ as given (or, not taking them, leaves at their defaults) keep the tokenizer
    built; other arguments rebuild it from them, as the constructor would (_run_init).

    >>> vocab = {i: bytes([i]) for i in range(256)}
    >>> vocab.update({256: b"he", 257: b"ll", 258: b"hell", 259: b"hello"})
    >>> tok = Tokenizer(vocab, [(b"h", b"e"), (b"l", b"l"), (b"he", b"ll"), (b"hell", b"o")], ["<|endoftext|>"])
    >>> tok.encode("hello<|endoftext|>hel")
    [259, 260, 256, 108]
    >>> tok.decode([259, 260, 256, 108])
    'hello<|endoftext|>hel'
    """

    _built: _Built      # set by _run_init for __init__ to read, then deleted

    def __init__(self, vocab: Mapping[int, bytes], merges: Iterable[tuple[bytes, bytes]],
                 special_tokens: Iterable[str] | None = None, pattern: str = GPT2_PATTERN, *,
                 training: dict[str, Any] | None = None) -> None:
        from . import formats

        built: _Built | None = getattr(self, "_built", None)
        if built is not None:       # built by a class-method constructor, running a subclass's __init__ on it
            del self._built
            given: dict[str, Any] = dict(zip(_INIT_NAMES, (vocab, merges, special_tokens, pattern, training)))
            changed = built.changed(given)
            if changed:     # built again from them, the others as read
                *args, kept_training = (given[name] if name in changed else built.values[name] for name in _INIT_NAMES)
                Tokenizer.__init__(self, *args, training=kept_training)
            return
        vocab, packed = _check_vocab(vocab)
        if isinstance(merges, (set, frozenset)):    # its order follows the hash seed: the ids would change per run
            raise TypeError("merges must be a list of (bytes, bytes) pairs in merge order, got a "
                            + type(merges).__name__)
        merges = list(merges) if not isinstance(merges, (str, bytes)) else merges
        wanted_ids, special_tokens = _special_id_mapping(special_tokens)
        special_ids = _ids_of_shared_bytes(wanted_ids, vocab)
        files = _plain_arrays(packed, merges)
        if files is None:       # not plainly regular: checked in Python, which names what is wrong
            merges = _check_merges(merges, vocab)
            problem = _rule_problem(merges)
            if problem is not None:
                raise problem
            training = formats.check_training(training, len(merges))
            self._setup(vocab, merges, special_tokens, pattern, special_ids=special_ids)
        else:       # as GPT-2's files read as arrays: the merge rule's check and the tables natively, in a thread
            refused = False

            def refuse() -> NoReturn:
                nonlocal refused
                refused = True
                problem = _rule_problem(merges)
                assert problem is not None, "the native merge rule's check and bpe_fast.merge_rule disagree"
                raise problem

            try:
                training = formats.check_training(training, len(merges))
                self._setup_arrays(files, vocab, merges, special_tokens, pattern, special_ids, refuse=refuse)
            except Exception:
                # the merge rule's refusal comes first, as on the Python path (which checks the merges before the
                # training record, the special tokens and the pattern): here the check runs in the tables' thread,
                # asked after those have been looked at
                if refused or files.rule_check().difference is None:
                    raise
                refused = True
            if refused:     # (outside the handler: the refusal is not raised as a consequence of the other error)
                refuse()
        self._training = training
        _check_special_ids(wanted_ids, self)

    @classmethod
    def _from_checked(cls, vocab: Vocab, merges: MergesSource, special_tokens: Iterable[str] | None, pattern: str,
                      arrays: TableArrays | None = None, training: dict[str, Any] | None = None, *,
                      tables: Callable[[], BPETables] | None = None, special_ids: list[int] | None = None,
                      unicode: str | None = None) -> Tokenizer:
        """From a vocab and merges that bpe_fast.formats has read (and so checked); skips checking again.
        arrays: the encoder's table arrays for this vocab and merges (bpe_fast.formats' cache), or None.
        tables: instead, a function giving the encoder's tables (built elsewhere while this runs), or None.
        special_ids, unicode: as _setup's. training: as the constructor's, checked."""
        self = cls.__new__(cls)
        self._setup(vocab, merges, special_tokens, pattern, arrays, tables, special_ids, unicode)
        self._training = training
        return self

    def _run_init(self) -> Tokenizer:
        """This tokenizer, made by a class-method constructor without __init__; when its class (a subclass) has an
        __init__ of its own, after that __init__ has run on it with this tokenizer's parts as its arguments, by
        name (those its signature takes: _INIT_NAMES). Tokenizer.__init__, reached from it, keeps the tokenizer
        as built when the arguments are those (or, not passed, its defaults): else it builds it again from them."""
        init = type(self).__init__
        if init is Tokenizer.__init__:
            return self
        import inspect

        values: dict[str, Any] = dict(zip(_INIT_NAMES, (dict(self._vocab), list(self._merge_list()),
                                                        list(self._specials.tokens), self._pattern, self._training)))
        params = inspect.signature(init).parameters
        if any(p.kind is p.VAR_KEYWORD for p in params.values()):
            given = values
        else:
            given = {name: value for name, value in values.items()
                     if name in params and params[name].kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                                                 inspect.Parameter.KEYWORD_ONLY)}
        self._built = _Built(values, frozenset(given))
        try:
            init(self, **given)
        finally:
            try:
                del self._built
            except AttributeError:      # (__init__ took it)
                pass
        return self

    def _setup(self, vocab: Vocab, merges: MergesSource, special_tokens: Iterable[str] | None, pattern: str,
               arrays: TableArrays | None = None, tables: Callable[[], BPETables] | None = None,
               special_ids: list[int] | None = None, unicode: str | None = None) -> None:
        """special_ids: the special tokens' ids when the caller has checked them (each special token's bytes are
        in vocab at that id; at another too when a model token has them, as GPT-NeoX's "  "), or None to look them
        up here. unicode: as with_unicode's (checked), so that only the scanner's tables of that reading are made
        (from_tiktoken's: Unicode 16.0's, without `regex`)."""
        top = max(vocab) if vocab else -1
        _check_sparsity(top, len(vocab))
        specials = SpecialTokens(special_tokens)
        self._pattern = resolve_pattern(pattern)
        if builtin_name(self._pattern) is None:     # (a built-in one compiles: when first needed, 1-3 ms)
            compiled_pattern(self._pattern)  # ValueError now for a regex that does not compile

        self._vocab = vocab
        self._ids_of_made: dict[bytes, int] | None = None       # _ids_of, made when first asked for
        next_id = top + 1
        if special_ids is None:     # each special token's id: its bytes' in the vocabulary, or the next free one
            ids_of = self._ids_of
            special_ids = []
            for tok in specials.tokens:
                data = tok.encode("utf-8")
                if data not in ids_of:
                    if next_id > MAX_TOKEN_ID:
                        raise ValueError(f"no id left for special token {tok!r}")
                    vocab[next_id] = data
                    ids_of[data] = next_id
                    next_id += 1
                    arrays = tables = None      # built for the vocabulary without this token
                special_ids.append(ids_of[data])
            holders = None
        else:       # an id special tokens share holds one's bytes (specials.id_holders), maybe not one of these (a
            # tokenizer matching only some of its special tokens, pickled): the vocabulary's bytes say which
            holders = {i: vocab[i].decode("utf-8", "replace") for tok, i in zip(specials.tokens, special_ids)
                       if vocab.get(i) != tok.encode("utf-8")}
        # merges may be a function that makes the list (the cache's id pairs): made on first use
        self._merges = None if callable(merges) else merges
        self._make_merges = merges if callable(merges) else None
        self._id_objects = list(range(next_id))     # encode's lists share these ints (next_id: largest id + 1)
        # tables built in another thread: the first encoder's table is made meanwhile (its page faults), for as
        # many permanent entries as there can be merged tokens (the encoder takes it if that is the size it needs)
        first_table = PieceTable(len(vocab) - 256) if tables is not None else None
        self._tables = (tables() if tables is not None else BPETables(**arrays) if arrays is not None
                        else _build_tables(vocab, self._merge_list(), self._ids_of))
        # The encoders not in use (native): each encoding call takes one and gives it back, so threads encoding
        # at once (the encoder runs without the GIL on long texts) each have their own cache of pre-tokens.
        self._pool = EncoderPool(self._tables, self._id_objects, first_table=first_table)
        self._kind = native_kind(self._pattern)     # the native scanner's number for the pattern; 0: `regex`
        self._views: dict[frozenset[str], Tokenizer]
        self._views = {}        # frozenset of special tokens -> this tokenizer matching only those (_view)
        self._normalizer: str | None = None     # the normal form of the text between special tokens (with_normalizer)
        self._unicode: str | None = unicode     # the Unicode classes of the native scans (with_unicode)
        self._rank_ids: frozenset[int] = frozenset()    # by_ranks_only (its merges cannot say it): its ranks' ids
        self._unnormalized_made: Tokenizer | None = None     # this tokenizer without it (_unnormalized)
        # made when first asked for (token_lengths, token_pool), set now: every attribute a Tokenizer has is set
        # here, so that a new name is never added to an object later (CPython 3.11 keeps a class's attribute
        # names in one table of 30; past it, an object adding a name moves its values into a dict: _shallow_copy)
        self._lengths: NDArray[np.int64] | None = None
        self._token_pool: tuple[NDArray[np.uint8], NDArray[np.int64]] | None = None
        self._use_specials(SpecialTokens(specials.tokens, special_ids, holders))

    @property
    def _ids_of(self) -> dict[bytes, int]:
        """{token bytes: the smallest id with those bytes}, made from the vocabulary when first asked for (loading
        a 200k-token encoding does not need it)."""
        ids_of = self._ids_of_made
        if ids_of is None:
            descending = sorted(self._vocab, reverse=True)
            ids_of = self._ids_of_made = dict(zip(map(self._vocab.__getitem__, descending), descending))
        return ids_of

    def _use_specials(self, specials: SpecialTokens) -> None:
        """Match the special tokens of `specials` (with their ids), and only those, when encoding."""
        self._specials = specials
        self._special_set = frozenset(specials.tokens)
        # The native path (None: the Python path), with the special tokens longest first (SpecialTokens.utf8).
        tables = native_tables(self._unicode) if self._kind else None
        self._segmenter = (Segmenter(tables, self._kind, specials.utf8, specials.utf8_ids, specials.utf8_lstrip)
                           if tables is not None else None)

    def restricted_to(self, allowed: AbstractSet[str] | Iterable[str]) -> Tokenizer:
        """This tokenizer matching only the special tokens in `allowed` (a frozenset, or a set or list, of some
        of its special tokens; the others are ordinary text): a shallow copy sharing the tables, the vocabulary and
        the pool of encoders, with its own special-token matching; cached, one per set. It pickles and reports as a
        tokenizer with those special tokens only (bpe_fast.Encoding keeps one per allowed set).

        >>> tok = Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|a|>", "<|b|>"])
        >>> tok.restricted_to(frozenset(["<|a|>"])).encode("<|a|><|b|>")[:2]
        [256, 60]
        """
        if type(allowed) is not frozenset:      # a set, a list: as that frozenset
            if isinstance(allowed, str):
                raise TypeError("restricted_to takes a set of special tokens (str), not one str")
            allowed = _names(allowed, "restricted_to takes a set of special tokens (str)", self._special_set)
        if allowed >= self._special_set:
            return self
        if not allowed <= self._special_set:
            # names it does not have: left out, so that the view cached for a set (shared with the tokenizer
            # this is a view of, and its other views) is the same whichever of them made it
            allowed = allowed & self._special_set
        view = self._views.get(allowed)
        if view is None:
            view = self._shallow_copy()
            view._use_specials(self._specials.restricted_to(allowed))
            view._unnormalized_made = None      # made with these special tokens when asked for
            if len(self._views) >= _MAX_VIEWS:
                self._views.clear()
            self._views[allowed] = view
        return view

    def with_normalizer(self, normalizer: str | None) -> Tokenizer:
        """This tokenizer normalizing the text it encodes to `normalizer` ("NFC", as HF tokenizers'
        ``"normalizer": {"type": "NFC"}`` that Qwen2's, Qwen2.5's and Qwen3's tokenizer.json files have; None:
        none, the default): a shallow copy sharing the tables, the vocabulary and the encoders. As in HF, the
        special tokens are found in the text as given and the text between them is normalized on its own
        (bpe_fast.normalize). Every encoding method normalizes (encode_pieces, which takes pre-tokens as bytes,
        does not); decoding gives the normalized text. save, export_hf and pickling keep the normalizer; a
        tiktoken Encoding cannot have one (to_tiktoken and export_tiktoken refuse).

        >>> tok = Tokenizer({i: bytes([i]) for i in range(256)} | {256: "é".encode()}, [(b"\\xc3", b"\\xa9")])
        >>> tok.encode("e\\u0301"), tok.with_normalizer("NFC").encode("e\\u0301")
        ([101, 204, 129], [256])
        """
        from .normalize import check_normalizer

        normalizer = check_normalizer(normalizer)
        if normalizer == self._normalizer:
            return self
        if self._specials.lstrip:
            raise ValueError(f"with_normalizer: special tokens {sorted(self._specials.lstrip)} take the white space "
                             "before them (with_special_lstrip), which bpe_fast does not do with a normalizer")
        if normalizer is None:
            return self._unnormalized
        made = self._copy_normalizing(normalizer)
        made._unnormalized_made = self._unnormalized
        return made

    def with_unicode(self, unicode: str | None) -> Tokenizer:
        """This tokenizer reading characters as Unicode `unicode` does: None (the default), as the installed
        `regex` does (the reference pre-tokenizer of CS336's tokenizer and training); "16.0" (PEERS_UNICODE), as
        tiktoken's regex engine and HF tokenizers' Oniguruma do, which from_tiktoken, from_hf and bpe_fast.Encoding
        give, so that with a built-in pattern every code point is pre-tokenized as there (a character assigned in
        a later version, as U+3D000 in 17.0, is no letter to them; a custom pattern is read by `regex`, with its
        classes, either way). A shallow copy sharing the tables, the vocabulary and the encoders; save and
        pickling keep it. to_tiktoken and export_hf give the same ids as this tokenizer on every code point only
        with "16.0" (with None, on those both Unicode versions agree on).

        >>> tok = Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"a\\xf0"}, [(b"a", b"\\xf0")])
        >>> tok.unicode, tok.with_unicode("16.0").encode("a\\U0003D000")[:2]      # not a letter in Unicode 16.0
        (None, [97, 240])
        """
        unicode = check_unicode(unicode)
        if unicode == self._unicode:
            return self
        return self._copy(self._specials, _unicode=unicode)

    @property
    def unicode(self) -> str | None:
        """The Unicode version the native scans read characters as: None, the installed `regex`'s, or "16.0"
        (see with_unicode)."""
        return self._unicode

    def with_special_lstrip(self, tokens: Iterable[str]) -> Tokenizer:
        """This tokenizer with the special tokens `tokens` (some of its special tokens; empty: none, the default)
        taking the white space before them, as HF tokenizers' added tokens with ``"lstrip": true`` (RoBERTa's and
        BART's ``<mask>``): the run of white space (characters with Unicode's White_Space property) that ends
        where such a token is found, back to the end of the special token before it, is in no token. A shallow
        copy sharing the tables, the vocabulary and the encoders; every encoding method follows it, and save,
        export_hf and pickling keep it. Not with a normalizer (with_normalizer), nor for tiktoken (to_tiktoken
        refuses), nor to continue training from.

        >>> tok = Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<mask>"])
        >>> tok.encode("a <mask>"), tok.with_special_lstrip(["<mask>"]).encode("a \\t<mask>")
        ([97, 32, 256], [97, 256])
        """
        if isinstance(tokens, str):
            raise TypeError("with_special_lstrip takes special tokens (a list), not one str")
        lstrip = frozenset(tokens)
        if lstrip == self._specials.lstrip:
            return self
        specials = self._specials.with_lstrip(lstrip)       # (ValueError for one that is not a special token)
        if lstrip and self._normalizer is not None:
            raise ValueError(f"with_special_lstrip: this tokenizer normalizes text to {self._normalizer}; bpe_fast "
                             "does not take white space before special tokens with a normalizer")
        if lstrip and specials.shared:      # the lengths of their tokens in the text are found as if none took any
            raise ValueError("with_special_lstrip: special tokens of this tokenizer share an id (as in "
                             "o200k_harmony); bpe_fast does not take white space before special tokens with them")
        return self._copy(specials)

    @property
    def by_ranks_only(self) -> bool:
        """True for a tokenizer from tiktoken's ranks some of whose tokens merging the tokens ranked before them
        does not make (Llama 3's: 678 of them): as tiktoken, it gives such a token only to a pre-token that is
        the whole token, which no merge list says. Its `merges` show a split of each where there is one; it pickles
        by its ranks, export_tiktoken and to_tiktoken write them, save and export_hf refuse it."""
        return bool(self._rank_ids)

    def tiktoken_ranks(self) -> dict[bytes, int]:
        """{bytes: rank} of a tokenizer by_ranks_only: the ranks it was made from (ValueError for another, whose
        ranks bpe_fast.ranks.ranks_from_tokenizer recovers from its merges)."""
        if not self._rank_ids:
            raise ValueError("tiktoken_ranks: this tokenizer is not by_ranks_only (to_tiktoken gives its ranks)")
        rank_ids = self._rank_ids
        return {token: i for i, token in self._vocab.items() if i in rank_ids}

    @property
    def special_lstrip(self) -> frozenset[str]:
        """The special tokens that take the white space before them (see with_special_lstrip)."""
        return self._specials.lstrip

    @property
    def special_token_set(self) -> SpecialTokens:
        """The special tokens as one checked bpe_fast.specials.SpecialTokens (their ids, those that take the white
        space before them, the native matcher): what chunking a file or a stream for this tokenizer is given,
        rather than one built again from special_tokens and special_lstrip."""
        return self._specials

    def _copy_normalizing(self, normalizer: str | None) -> Tokenizer:
        """A shallow copy of this tokenizer (the tables, vocabulary and encoders shared) normalizing to
        `normalizer`, with views of its own."""
        return self._copy(None, _normalizer=normalizer)

    def _shallow_copy(self) -> Tokenizer:
        """A new object of this one's class holding this one's attributes (the same objects). A Tokenizer's are
        read by name (_OWN_ATTRIBUTES): reading its __dict__ would make every later attribute read of it ~15 ns
        slower on CPython 3.11 (its values move from the object into a dict), and encode reads several a call. A
        subclass's, which may have attributes of its own, are copied through __dict__ (so an attribute someone
        set on a plain Tokenizer is not in its views)."""
        made = object.__new__(type(self))
        if type(self) is Tokenizer:
            for name in _OWN_ATTRIBUTES:
                value = getattr(self, name, _ABSENT)
                if value is not _ABSENT:
                    setattr(made, name, value)
        else:
            made.__dict__.update(self.__dict__)
        return made

    def _copy(self, specials: SpecialTokens | None, **attributes: Any) -> Tokenizer:
        """A shallow copy of this tokenizer (the tables, vocabulary and encoders shared) with views of its own and
        `attributes` set; matching `specials` (its special-token matching built again for them and its Unicode
        reading), or as this one does (None)."""
        made = self._shallow_copy()
        made._views = {}
        made._unnormalized_made = None
        for name, value in attributes.items():
            setattr(made, name, value)
        if specials is not None:
            made._use_specials(specials)
        return made

    @property
    def normalizer(self) -> str | None:
        """The normal form the text is put in before it is encoded ("NFC"), or None (see with_normalizer)."""
        return self._normalizer

    @property
    def _unnormalized(self) -> Tokenizer:
        """This tokenizer (with the same special tokens) without its normalizer; made when first asked for."""
        if self._normalizer is None:
            return self
        made = self._unnormalized_made
        if made is None:
            made = self._unnormalized_made = self._copy_normalizing(None)
        return made

    # ---------------------------------------------------------------------------------------- construction

    @classmethod
    def from_files(cls, vocab_filepath: StrPath, merges_filepath: StrPath, special_tokens: Iterable[str] | None = None,
                   pattern: str = GPT2_PATTERN) -> Tokenizer:
        """A tokenizer from GPT-2's vocab.json and merges.txt (tokens written with GPT-2's byte mapping).

        Malformed files raise bpe_fast.formats.FormatError (a ValueError) naming the file and line.

        >>> import tempfile, os
        >>> folder = tempfile.mkdtemp()
        >>> Tokenizer({i: bytes([i]) for i in range(256)} | {256: b" a"}, [(b" ", b"a")]).save(folder)
        >>> tok = Tokenizer.from_files(os.path.join(folder, "vocab.json"), os.path.join(folder, "merges.txt"))
        >>> tok.encode(" a a")
        [256, 256]
        """
        from . import formats

        wanted_ids, special_tokens = _special_id_mapping(special_tokens)
        files = formats.read_gpt2_arrays(vocab_filepath, merges_filepath)
        if files is None:       # not plainly well formed: read in Python, which names what is wrong
            vocab = formats.read_vocab(vocab_filepath)
            merges = formats.read_merges(merges_filepath, vocab)
            return _check_special_ids(wanted_ids, cls._from_checked(vocab, merges, special_tokens, pattern))._run_init()

        return _check_special_ids(wanted_ids, cls._from_arrays(files, files.vocab, files.merges, special_tokens,
                                                               pattern, refuse=_refuser(files, merges_filepath)))._run_init()

    @classmethod
    def _from_arrays(cls, files: formats.GPT2Arrays, vocab: Vocab | Callable[[], Vocab],
                     merges: Merges | Callable[[], Merges], special_tokens: Iterable[str] | None,
                     pattern: str, special_ids: list[int] | None = None,
                     refuse: Callable[[], NoReturn] | None = None) -> Tokenizer:
        """From a vocabulary and merges read as arrays (`files`), and the same as Python objects (or functions
        that make them): see _setup_arrays."""
        self = cls.__new__(cls)
        self._setup_arrays(files, vocab, merges, special_tokens, pattern, special_ids, refuse)
        self._training = None
        return self

    def _setup_arrays(self, files: formats.GPT2Arrays, vocab: Vocab | Callable[[], Vocab],
                      merges: Merges | Callable[[], Merges], special_tokens: Iterable[str] | None,
                      pattern: str, special_ids: list[int] | None = None,
                      refuse: Callable[[], NoReturn] | None = None) -> None:
        """_setup for a vocabulary and merges read as arrays (`files`), and the same as Python objects (or
        functions that make them): the encoder's tables are built from the arrays without the GIL, beside the
        Python work here (the id-indexed ones once the ids are known not to be too sparse). special_ids: as
        _setup's. When files.parts is given, the merge rule's check (files.rule_check) runs first in the tables'
        thread (its recovery of the merges holds no GIL; on the caller's thread, beside the Python objects made
        from the arrays, it ran after them); refuse() raises when it finds a difference."""
        from ._gpt2_files import index_tokens
        from .specials import check_special_tokens

        ids = files.vocab_ids
        _check_sparsity(int(ids.max()) if len(ids) else -1, len(ids))
        special_tokens = check_special_tokens(special_tokens)       # once: it may be an iterator
        wanted = [token.encode("utf-8") for token in special_tokens]
        table_files = files     # the vocabulary the tables decode: with the special tokens it lacks (added)
        added: Vocab = {}
        if wanted:      # a special token not in the vocabulary gets a new id (the next free one), added to both
            found = index_tokens(files.vocab_pool, files.vocab_offsets, np.frombuffer(b"".join(wanted), dtype=np.uint8),
                                 np.cumsum([0] + [len(token) for token in wanted], dtype=np.int64))
            if found is not None and special_ids is None and np.all(found >= 0) and files.distinct:
                special_ids = ids[found].tolist()       # each special token's bytes are at that id, at no other
            adding = (_added_specials(files, wanted, found)
                      if found is not None and special_ids is None and np.any(found < 0) else None)
            if adding is not None:
                table_files, special_ids, added = adding
            elif found is None or np.any(found < 0):       # else the general build, which adds them
                if files.parts is not None and files.rule_check().difference is not None:
                    assert refuse is not None
                    refuse()
                self._setup(vocab() if callable(vocab) else vocab, merges() if callable(merges) else merges,
                            special_tokens, pattern)
                return
        # What the thread needs from NumPy is made here first: a thread that asks for the GIL while this one runs
        # Python code (the vocabulary's dict, below) waits for the interpreter's switch interval, 5 ms, where the
        # native build of a 10,000-token vocabulary takes 2 ms (see procs.started)
        arrays = _gpt2_table_arrays(table_files)
        listed = _first_merge_ids(files) if files.parts is not None else None
        by_merging = bool(np.all(arrays["byte_ids"] >= 0))    # the ranks rule's tables, one pair a token, if it
        expected = _expected_parts(listed) if by_merging else {}    # makes every token
        if expected:        # (and the pairs of a token's later merges, for a list that holds the rule's later)
            expected.update(_later_merge_ids(files))

        def build() -> BPETables | None:
            made = None
            if by_merging:
                made = tables_made_by_merging(**arrays, **expected)
                if made.splits()[2] >= 0:       # a token the rule does not make (the check names it)
                    made = None
            if listed is None:     # the reader has asked the merge rule's check (a tokenizer.json)
                return made if made is not None else BPETables(**arrays)
            # the check too, when each token's pair is its first merge's (else, as with a token listed with several
            # merges the rule makes from a later one, the check is asked)
            if made is not None and _made_as_listed(made, *listed):
                return made
            check = files.rule_check()
            if check.difference is not None:
                return None
            if made is not None:
                return made
            if check.every_token_made:      # each merged token is then a permanent entry (see GPT2Arrays)
                arrays["permanent"] = np.ones(len(arrays["ranked_ids"]), dtype=np.uint8)
            return BPETables(**arrays)

        rule_refused = False

        def tables() -> BPETables:
            nonlocal rule_refused
            made = built.result()
            if made is None:
                assert refuse is not None
                rule_refused = True
                refuse()
            return made

        built = ThreadJob(build, "bpe_fast-tables")
        try:
            made_vocab = vocab() if callable(vocab) else vocab
            made_vocab.update(added)        # (the general build added them so, in the order given, after the others)
            # the merge list (two bytes objects and a tuple a merge) is made when first asked for: encoding does not
            try:
                self._setup(made_vocab, merges, special_tokens, pattern, tables=tables, special_ids=special_ids)
            except Exception:
                # the general build, which took special tokens the vocabulary lacks, asked the merge rule's check
                # before anything else: its refusal comes first here too
                if rule_refused or not added or refuse is None or built.result() is not None:
                    raise
                refused = True
            else:
                refused = False
        finally:
            built.wait()
        if refused:     # (outside the handler: the refusal is not raised as a consequence of the other error)
            assert refuse is not None
            refuse()

    @classmethod
    def from_hf(cls, path: StrPath) -> Tokenizer:
        """A tokenizer from an HF tokenizers ``tokenizer.json`` of a byte-level BPE model (GPT-2's, Llama 3's and
        files like them, and those export_hf writes), or from the one in the folder `path` (as transformers'
        save_pretrained and export_hf's folders hold it), with the file's ids: encode(text) gives HF's
        ``encode(text, add_special_tokens=False).ids``. The added tokens are special tokens here; a
        post-processor's BOS/EOS are not added. What is read, ignored and refused is in bpe_fast.hf; a file
        bpe_fast cannot follow exactly raises bpe_fast.formats.FormatError (a ValueError) naming the file and
        what is unsupported. Characters are read as HF's Oniguruma reads them (Unicode 16.0: with_unicode) by the
        built-in patterns; a custom pattern goes through `regex`, with its own (newer) classes.

        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "tokenizer.json")
        >>> Tokenizer({i: bytes([i]) for i in range(256)} | {256: b" a"}, [(b" ", b"a")], ["<|endoftext|>"]).export_hf(path)
        >>> Tokenizer.from_hf(path).encode(" a<|endoftext|>")
        [256, 257]
        """
        from .hf import read_tokenizer_arrays, refuse_merges

        if os.path.isdir(path):         # (a bare IsADirectoryError before)
            if not os.path.isfile(os.path.join(path, "tokenizer.json")):
                raise FileNotFoundError(f"{os.fspath(path)} is a folder with no tokenizer.json in it: give the "
                                        f"tokenizer.json file, or the folder that holds it")
            path = os.path.join(path, "tokenizer.json")
        read = read_tokenizer_arrays(path, for_tokenizer=True)
        if read.ranks is not None:      # ignore_merges and every split of each token (Llama 3's): tiktoken's ranks
            made = cls._from_ranked(read.ranks, dict(zip(read.special_tokens, read.special_ids)), read.pattern)
        elif read.arrays is None:
            assert not callable(read.vocab) and not callable(read.merges)
            made = cls._from_checked(read.vocab, read.merges, read.special_tokens, read.pattern,
                                     special_ids=read.special_ids)._run_init()
        else:       # the merge rule's check is the tables' build's (read_tokenizer_arrays)
            made = cls._from_arrays(read.arrays, read.vocab, read.merges, read.special_tokens, read.pattern,
                                    read.special_ids, refuse=lambda: refuse_merges(path))._run_init()
        return made.with_normalizer(read.normalizer).with_special_lstrip(read.lstrip).with_unicode(PEERS_UNICODE)

    @classmethod
    def from_tiktoken(cls, path_or_ranks: StrPath | Mapping[bytes, int], pattern: str,
                      special_tokens: Mapping[str, int] | None = None) -> Tokenizer:
        """A tokenizer giving tiktoken's ids for tiktoken's ranks: `path_or_ranks` is a `.tiktoken` file
        (``.tiktoken.gz``: gzip) or a dict {token bytes: rank}; `pattern` a name ("o200k", "cl100k", "gpt2", or
        tiktoken's encoding names: "o200k_base", "cl100k_base", "r50k_base", "p50k_base") or a regex; `special_tokens` a dict {str: id}. The ids are the ranks; the merges are recovered from them
        (bpe_fast.ranks.merges_from_ranks); ranks holding tokens that merging does not make (Llama 3's) are read as
        tiktoken reads them (by_ranks_only). A bad line of the file is a bpe_fast.formats.FormatError naming the
        file and line; such a token longer than the 256 bytes the encoder looks up whole is a ValueError naming it.
        Characters are read as tiktoken reads them (Unicode 16.0: with_unicode) by the built-in patterns; a custom
        pattern goes through `regex`, with its own (newer) classes.

        >>> ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256, b"abc": 257}
        >>> tok = Tokenizer.from_tiktoken(ranks, "gpt2", {"<|endoftext|>": 300})
        >>> tok.merges, tok.encode("abcab<|endoftext|>")
        (((b'a', b'b'), (b'ab', b'c')), [257, 256, 300])
        """
        from .ranks import check_tiktoken_specials, ranked_tokens

        ranked = ranked_tokens(path_or_ranks)
        specials = check_tiktoken_specials(ranked, special_tokens)
        # tiktoken's characters (again after a subclass's __init__, which may have built it anew)
        return cls._from_ranked(ranked, specials, pattern, PEERS_UNICODE).with_unicode(PEERS_UNICODE)

    @classmethod
    def _from_ranked(cls, ranked: RankedTokens, specials: dict[str, int], pattern: str,
                     unicode: str | None = None) -> Tokenizer:
        """from_tiktoken's tokenizer of ranks read and checked (ranks.ranked_tokens), with special tokens
        checked by ranks.check_tiktoken_specials (from_hf's, of a file that is tiktoken's ranks, too); unicode:
        as _setup's."""
        from .ranks import vocab_of

        _check_sparsity(max([int(ranked.values[-1]), *specials.values()]), len(ranked.values) + len(specials))
        # The encoder's tables are built natively without the GIL, beside the Python dicts made here, by merging
        # each token's bytes with the tokens before it (which checks that tiktoken's rule makes every token, and
        # gives the two tokens each is made of: the merge list, 200k tuples for o200k, made when first asked for).
        arrays = _ranks_table_arrays(ranked, specials)      # here: numpy in a thread waits for the GIL
        splits: list[tuple[array.array[int], array.array[int]]] = []      # the tables' splits(), once built

        def tables() -> BPETables:
            made = built.result()
            left, right, unmade, parts = made.splits()
            if unmade >= 0:
                # a ranked token merging the tokens before it does not make (Llama 3's ranks have 678): as in
                # tiktoken, every ranked token is looked up whole (the permanent entries, all of them: `arrays`
                # has them so), and any two adjacent parts whose bytes are a ranked token can join (every way of
                # writing a token as two ranked tokens is in the pair table)
                every_way = BPETables(**arrays)
                _check_whole_lookup(ranked, every_way)
                return every_way
            splits.append((left, right))
            return made

        def merges() -> Merges:
            return ranked.merges_of_ranks(*splits[0]) if splits else ranked.lookup_merges()

        built = ThreadJob(lambda: tables_made_by_merging(**arrays), "bpe_fast-tables")
        try:
            made = cls._from_checked(vocab_of(ranked, specials), merges, list(specials), pattern, tables=tables,
                                     special_ids=list(specials.values()),     # checked: not a ranked token's bytes
                                     unicode=unicode)
        finally:
            built.wait()
        if not splits:      # (its merges cannot say it: pickles, save and export_hf go by the ranks)
            made._rank_ids = frozenset(ranked.values.tolist())      # (a view's other special tokens are none)
        return made._run_init()

    def to_tiktoken(self, name: str = "bpe_fast") -> tiktoken.Encoding:
        """A tiktoken.Encoding giving the same ids (ImportError when tiktoken is not installed); ValueError when
        tiktoken's ranks cannot express this tokenizer (see bpe_fast.ranks.ranks_from_tokenizer), when tiktoken's
        regex engine would read the pattern otherwise (patterns.check_tiktoken_readable), or when of two
        special tokens, one the start of the other, tiktoken would find the shorter (it tries them in its hash
        map's order). With such special tokens the ids are the same with all of them allowed (or none), not
        always with only some allowed: where tiktoken's regex finds a special token that is not allowed, it
        looks no further, so a shorter allowed one starting there is text to it
        ("<|x|>" allowed, "<|x|>y" not: bpe_fast encodes "<|x|>y" as <|x|> then "y", tiktoken all as text).

        >>> tok = Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"ab"}, [(b"a", b"b")], ["<|eot|>"])
        >>> enc = tok.to_tiktoken("mine")       # doctest: +SKIP
        >>> enc.encode("ab<|eot|>", allowed_special="all")       # doctest: +SKIP
        [256, 257]
        """
        try:
            import tiktoken
        except ImportError as exc:
            raise ImportError("Tokenizer.to_tiktoken needs tiktoken: pip install tiktoken") from exc
        from .export import tiktoken_encoding
        from .ranks import ranks_from_tokenizer

        check_tiktoken_readable(self._pattern)
        return tiktoken_encoding(self, tiktoken, name, ranks_from_tokenizer(self))

    def save(self, directory: StrPath) -> None:
        """Write vocab.json and merges.txt (GPT-2's format) and bpe_fast.json (special tokens, pattern) into
        `directory`, created if missing. The files are written to temporary names first and renamed together
        once all are written: an error, a full disk or Ctrl-C leaves the folder as it was.

        >>> import tempfile
        >>> folder = tempfile.mkdtemp()
        >>> tok = Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|endoftext|>"])
        >>> tok.save(folder)
        >>> Tokenizer.load(folder).encode("a<|endoftext|>")
        [97, 256]

        A vocabulary of formats.CACHE_MIN_TOKENS tokens or more also gets bpe_fast.npz, the encoder's tables
        (NumPy arrays, no pickle), which load uses while it matches vocab.json and merges.txt (see
        bpe_fast.formats). A tokenizer by_ranks_only is saved as HF's tokenizer.json holds Llama 3's ranks:
        merges.txt has every way of writing a token as two, and bpe_fast.json says "ignore_merges" (no cache).
        """
        from ._gpt2_files import TokenIndex, pack_pairs

        from . import formats
        from .atomic import output_group

        directory = os.fsdecode(directory)     # (a bytes path too, as load and from_files take one)
        check_no_alias(self.special_tokens, "bpe_fast's files (vocab.json and bpe_fast.json)")
        if self._rank_ids:      # tiktoken's ranks that merging does not rebuild: as HF's tokenizer.json holds them
            self._save_ranks(directory)
            return
        from .export import tables_made_as_listed

        vocab_arrays = self._vocab_arrays()
        index = TokenIndex(vocab_arrays[0], vocab_arrays[1]) if vocab_arrays is not None else None
        distinct = index is not None and not index.flooded and index.duplicates == 0      # no two ids' bytes the same
        special_bytes = {name.encode("utf-8"): i for name, i in self.special_tokens.items()}
        for i, token in self._vocab.items() if not distinct and len(set(self._vocab.values())) < len(self._vocab) else ():
            if special_bytes.get(token, i) != i:
                raise ValueError(f"special token {token.decode('utf-8')!r} (id {special_bytes[token]}) has the bytes "
                                 f"of token {i} (as GPT-NeoX's runs of spaces have); vocab.json gives a token's bytes "
                                 "one id: export_hf writes a tokenizer.json that holds both")
        merges = self._merge_list()
        packed_merges = pack_pairs(merges) if type(merges) is list else None
        # no pair twice: the tables made each merged token from its merge's two tokens (else write_merges checks)
        as_listed = tables_made_as_listed(self, len(merges), packed_merges)
        checked = packed_merges if as_listed else None
        with output_group() as group:       # every file at once: a failure leaves the folder as it was
            digests = formats.save_tokenizer_files(directory, self._vocab, merges, self._specials.tokens,
                                                   self._pattern, self._training, group, self._normalizer,
                                                   self._specials.lstrip, self._unicode, vocab_arrays=vocab_arrays,
                                                   packed_merges=checked, vocab_index=index)
            cache = os.path.join(os.fspath(directory), formats.CACHE_FILE)
            if len(self._vocab) < formats.CACHE_MIN_TOKENS:
                group.remove(cache)         # an earlier save's, of another vocabulary
                return
            packed = None
            if vocab_arrays is not None and index is not None and packed_merges is not None:
                # merge k's two tokens are those of the tables' split tree (as_listed), and their ids the only ids
                # with those bytes (distinct)
                trees = self.split_trees() if as_listed and distinct else None
                packed = _packed_cache_arrays(*vocab_arrays, packed_merges, index, trees)
            if packed is not None:
                arrays, merge_ids = packed
            else:
                arrays = _table_arrays(self._vocab, merges, self._ids_of)
                ids_of = self._ids_of.__getitem__
                merge_ids = np.fromiter(itertools.chain.from_iterable(zip(map(ids_of, (a for a, _ in merges)),
                                                                          map(ids_of, (b for _, b in merges)))),
                                        dtype=np.int32, count=2 * len(merges))
            arrays["permanent"] = np.frombuffer(self._tables.permanent_mask(), dtype=np.uint8)
            formats.write_cache(directory, arrays, merge_ids, group, digests)

    def _vocab_arrays(self) -> tuple[NDArray[np.uint8], NDArray[np.int64], NDArray[np.int64]] | None:
        """(pool, offsets, ids): the vocabulary as {ids[k]: pool[offsets[k]:offsets[k + 1]]}, ids rising, made from
        token_pool (no bytes object a token); None when the ids with bytes there are not as many as the
        vocabulary's."""
        from .token_arrays import gather_tokens

        pool, offsets = self.token_pool()
        ids = np.flatnonzero(offsets[1:] != offsets[:-1])     # (no token is empty)
        if len(ids) != len(self._vocab):
            return None
        if len(ids) == len(offsets) - 1:        # every id has bytes: the pool as it is
            return pool, offsets, ids
        return (*gather_tokens(pool, offsets, ids), ids)

    @classmethod
    def load(cls, directory: StrPath) -> Tokenizer:
        """The tokenizer `save` wrote into `directory` (a folder with only GPT-2's vocab.json and merges.txt
        loads too: no special tokens, GPT-2's pattern). Malformed files raise bpe_fast.formats.FormatError
        naming the file and line.

        >>> import tempfile
        >>> folder = tempfile.mkdtemp()
        >>> Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"ab"}, [(b"a", b"b")], pattern="gpt4").save(folder)
        >>> tok = Tokenizer.load(folder)
        >>> tok.encode("abc"), tok.pattern == GPT4_PATTERN
        ([256, 99], True)

        Another process may save into the folder meanwhile: the files are held open first and read from there
        (formats.FolderPin), so the tokenizer is one save's, not vocab.json of one and merges.txt of the next (nor
        an error made by mixing them). Files renamed while they were being opened are opened again, LOAD_TRIES
        times at most (then a RuntimeError); files that make no tokenizer, or not the one bpe_fast.json was saved
        with (formats.files_match), are looked at once more after LOAD_SETTLE seconds, in case a save's renames
        were caught halfway (its process paused between two): read again if they changed, else taken as they are
        (or the error raised).
        """
        from . import formats

        directory = os.fsdecode(directory)     # (a bytes path too, as from_files takes one)
        for attempt in range(LOAD_TRIES):
            if attempt:
                time.sleep(0.002 * attempt)     # a save under way: a little longer for it to end each time
            with formats.FolderPin(directory) as pin:
                if pin.changed():
                    continue
                try:
                    tokenizer = cls._load_once(directory)
                except OSError:             # (a save never leaves a file missing: renames replace them)
                    if not pin.changed():
                        raise
                    continue
                except ValueError:
                    time.sleep(LOAD_SETTLE)
                    if not pin.changed():
                        raise
                    continue
                if formats.files_match(directory):
                    return tokenizer
                time.sleep(LOAD_SETTLE)     # a save caught halfway, or files edited since their save
                if not pin.changed():       # edited: the files as they are
                    edited = formats.edited_files(directory)
                    if edited:
                        warnings.warn(f"{os.fspath(directory)}: {' and '.join(edited)} not as bpe_fast.json was saved "
                                      "with (edited since, or cut short?): loaded as they are", stacklevel=2)
                    return tokenizer
        raise RuntimeError(f"{directory}: its files were replaced while they were opened, {LOAD_TRIES} times "
                           f"(another process saving into it?)")

    @classmethod
    def _load_once(cls, directory: StrPath) -> Tokenizer:
        """load, the files read once: natively, as from_files reads them, when the folder has no cache and they are
        plainly well formed (formats.read_folder_arrays); else by formats.load_tokenizer_folder."""
        from . import formats

        if formats.read_ignore_merges(directory):
            return cls._load_ranks(directory)
        read = formats.read_folder_arrays(directory)
        if read is not None:
            files, specials, pattern, training = read
            options = _text_options(directory, specials)
            made = cls._from_arrays(files, files.vocab, files.merges, specials, pattern,
                                    refuse=_refuser(files, os.path.join(directory, formats.MERGES_FILE)))
            made._training = training
            return options(made._run_init())
        vocab, merges, specials, pattern, arrays, training = formats.load_tokenizer_folder(directory)
        options = _text_options(directory, specials)
        if arrays is not None:      # the cache (bpe_fast.npz)
            tables = _cached_tables(arrays)
            if tables is not None:
                return options(cls._from_checked(vocab, merges, specials, pattern, training=training,
                                                 tables=lambda: tables)._run_init())
            # its merges are not what the ranks rule makes of its tokens: the text files (a list the rule reads
            # otherwise is refused there, naming its line; saved before that check, the cache held it)
            vocab, merges, specials, pattern, arrays, training = formats.load_tokenizer_folder(directory, False)
            formats.cache_not_used(directory, "its merges are not what the ranks rule makes of its tokens")
        return options(cls._from_checked(vocab, merges, specials, pattern, arrays, training)._run_init())

    def _save_ranks(self, directory: StrPath) -> None:
        """save of a tokenizer by_ranks_only, whose merges cannot say it: bpe_fast.json says "ignore_merges" (as
        HF's tokenizer.json does for Llama 3's ranks) and merges.txt holds every way of writing a token as two, in
        rank order (ranks.RankedTokens.every_split_merges); load reads the folder as those ranks. No cache."""
        from . import formats
        from .atomic import output_group
        from .ranks import ranked_tokens, vocab_of

        ranked = ranked_tokens(self.tiktoken_ranks())
        # the ranks and its special tokens (a view's vocab holds the others, which would be ranked tokens looked up
        # whole, once read back: helper-112)
        vocab = vocab_of(ranked, self.special_tokens)
        with output_group() as group:
            formats.save_tokenizer_files(directory, vocab, ranked.every_split_merges(), self._specials.tokens,
                                         self._pattern, None,
                                         group, self._normalizer, self._specials.lstrip, self._unicode,
                                         ignore_merges=True)
            group.remove(os.path.join(os.fspath(directory), formats.CACHE_FILE))    # an earlier save's

    @classmethod
    def _load_ranks(cls, directory: StrPath) -> Tokenizer:
        """load of a folder whose bpe_fast.json says "ignore_merges" (_save_ranks): its vocab.json but the special
        tokens as tiktoken's ranks, when merges.txt is every way of writing a token as two in the order of the ids
        made (else a FormatError naming merges.txt and what is not so)."""
        from . import formats
        from ._gpt2_files import TokenIndex
        from .ranks import not_as_ranks, ranks_of_merge_list, ranks_of_model

        directory = os.fspath(directory)
        specials, pattern = formats.read_config(os.path.join(directory, formats.CONFIG_FILE))
        vocab_path, merges_path = (os.path.join(directory, name) for name in (formats.VOCAB_FILE, formats.MERGES_FILE))
        special_bytes = [name.encode("utf-8") for name in specials]
        files = formats.read_gpt2_arrays(vocab_path, merges_path)       # plainly well formed: as arrays
        found = None if files is None else TokenIndex(files.vocab_pool, files.vocab_offsets).find(
            np.frombuffer(b"".join(special_bytes), dtype=np.uint8),
            np.cumsum([0] + [len(data) for data in special_bytes], dtype=np.int64))
        if files is not None and files.parts is not None and found is not None and np.all(found >= 0):
            pool, offsets, ids = files.vocab_pool, files.vocab_offsets, files.vocab_ids
            added = sorted(set(found.tolist()))
            problem = not_as_ranks(pool, offsets, ids, *files.parts, files.joined, added)
            ranks = None if problem is not None else ranks_of_model(pool, offsets, ids, added, merges_path)
            special_ids = ids[found].tolist()
        else:       # anything else: the Python readers, which name what is wrong
            vocab = formats.read_vocab(vocab_path)
            merges = formats.read_merges(merges_path, vocab, rule=False)
            ranks, problem = ranks_of_merge_list(vocab, merges, special_bytes, merges_path)
            ids_of = {token: i for i, token in vocab.items()}
            missing = [name for name, data in zip(specials, special_bytes) if data not in ids_of]
            if missing:
                raise formats.FormatError(vocab_path, None, f"special token {missing[0]!r} of bpe_fast.json has no id "
                                                            "here")
            special_ids = [ids_of[data] for data in special_bytes]
        if ranks is None:
            raise formats.FormatError(merges_path, None, f'bpe_fast.json says "ignore_merges", but these merges are not '
                                      f"every way of writing a token as two, in the order of the ids made: {problem}")
        made = cls._from_ranked(ranks, dict(zip(specials, special_ids)), pattern)
        return _text_options(directory, specials)(made)

    def export_hf(self, path: StrPath) -> None:
        """Write an HF tokenizers ``tokenizer.json`` that gives the same ids (see bpe_fast.export)."""
        from .export import export_hf

        export_hf(self, os.fsdecode(path))

    def export_hf_dir(self, directory: StrPath, *, bos_token: str | None = None, eos_token: str | None = None,
                      pad_token: str | None = None) -> list[str]:
        """Write the folder transformers' save_pretrained writes (tokenizer.json, tokenizer_config.json,
        special_tokens_map.json), created if missing: ``PreTrainedTokenizerFast.from_pretrained(directory)``
        gives the same ids. bos_token, eos_token, pad_token: special tokens to give those roles (the others are
        additional special tokens). Returns the paths written (see bpe_fast.export).

        >>> import os, tempfile
        >>> tok = Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|endoftext|>"])
        >>> [os.path.basename(p) for p in tok.export_hf_dir(tempfile.mkdtemp(), eos_token="<|endoftext|>")]
        ['tokenizer.json', 'tokenizer_config.json', 'special_tokens_map.json']
        """
        from .export import export_hf_dir

        return export_hf_dir(self, os.fsdecode(directory), bos_token=bos_token, eos_token=eos_token, pad_token=pad_token)

    def export_tiktoken(self, path: StrPath) -> None:
        """Write a tiktoken ``.tiktoken`` ranks file that, with this pattern (spelled for tiktoken by
        bpe_fast.patterns.tiktoken_anchors) and these special tokens, gives the same ids; refused (ValueError)
        when tiktoken cannot, as to_tiktoken is (see bpe_fast.export; where one special token is the start of
        another, tiktoken, when installed, is asked which it finds first)."""
        from .export import export_tiktoken

        export_tiktoken(self, os.fsdecode(path))

    def __reduce__(self) -> tuple[Any, ...]:
        # For multiprocessing: rebuilt from its parts in the other process (files never hold pickles). A subclass
        # is rebuilt as itself, with the attributes it added (those not in _OWN_ATTRIBUTES) as the pickle's state.
        cls = type(self)
        if self._rank_ids:          # no merge list says it: its ranks do (and a subclass's attributes, as below)
            added = {name: value for name, value in self.__dict__.items() if name not in _OWN_ATTRIBUTES}
            return (_rebuild_from_ranks, (self.tiktoken_ranks(), self._pattern, dict(self.special_tokens), cls,
                                          self._normalizer, sorted(self._specials.lstrip), self._unicode), added or None)
        parts = (dict(self._vocab), list(self._merge_list()), list(self._specials.tokens), self._pattern,
                 self._training, list(self.special_tokens.values()))
        if cls is Tokenizer and self._normalizer is None and not self._specials.lstrip and self._unicode is None:
            return (_rebuild, parts)
        added = {name: value for name, value in self.__dict__.items() if name not in _OWN_ATTRIBUTES}
        return (_rebuild, (*parts, cls, self._normalizer, sorted(self._specials.lstrip), self._unicode),
                added or None)

    # ---------------------------------------------------------------------------------------- properties

    @property
    def vocab(self) -> Mapping[int, bytes]:
        """Read-only id -> bytes, special tokens included.

        >>> Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|endoftext|>"]).vocab[256]
        b'<|endoftext|>'
        """
        return MappingProxyType(self._vocab)

    @property
    def merges(self) -> tuple[tuple[bytes, bytes], ...]:
        """The merges, in rank order.

        >>> Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"ab"}, [(b"a", b"b")]).merges
        ((b'a', b'b'),)
        """
        return tuple(self._merge_list())

    def _merge_list(self) -> Merges:
        merges = self._merges
        if merges is None:          # threads may both make it: the function is pure, and kept (no race on it)
            merges = self._merges = self._make_merges()     # type: ignore[misc]  # set when _merges is None
        return merges

    @property
    def training(self) -> dict[str, Any] | None:
        """What training recorded (a copy), or None: {"merge_counts": [each merge's pair count when chosen],
        "corpus": {"bytes", "documents", "pretokens", "pretoken_bytes", "distinct_pretokens"}} (see
        bpe_fast.train.TrainResult). Saved in bpe_fast.json; a tokenizer from other files has none.

        >>> Tokenizer({i: bytes([i]) for i in range(256)}, []).training is None
        True
        """
        from . import formats

        return None if self._training is None else formats.check_training(self._training)

    @property
    def special_tokens(self) -> dict[str, int]:
        """special token -> id, in the order given.

        >>> Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|endoftext|>", "<|pad|>"]).special_tokens
        {'<|endoftext|>': 256, '<|pad|>': 257}
        """
        return self._specials.ids.copy()    # type: ignore[union-attr]  # a tokenizer's have ids (a read-only view:
        # its copy() is the dict's, where dict() of it reads item by item, 4 times as long)

    @property
    def pattern(self) -> str:
        """The pre-tokenization regex (a name given to the constructor is resolved).

        >>> Tokenizer({i: bytes([i]) for i in range(256)}, [], pattern="gpt4").pattern == GPT4_PATTERN
        True
        """
        return self._pattern

    @property
    def vocab_size(self) -> int:
        """One more than the largest id (every id is below it), as tiktoken's n_vocab.

        >>> Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|endoftext|>"]).vocab_size
        257
        """
        return len(self._id_objects)        # one a possible id: 0 to the largest (_setup)

    @property
    def max_token_value(self) -> int:
        """The largest id.

        >>> Tokenizer({i: bytes([i]) for i in range(256)}, []).max_token_value
        255
        """
        return self.vocab_size - 1

    def __repr__(self) -> str:
        name = builtin_name(self._pattern) or "custom"
        normalizer = "" if self._normalizer is None else f" normalizer={self._normalizer}"
        lstrip = f" special_lstrip={sorted(self._specials.lstrip)!r}" if self._specials.lstrip else ""
        unicode = "" if self._unicode is None else f" unicode={self._unicode}"
        return (f"<Tokenizer vocab_size={self.vocab_size} merges={len(self._merge_list())} "
                f"special_tokens={list(self._specials.tokens)!r} pattern={name}{normalizer}{lstrip}{unicode}>")

    # ---------------------------------------------------------------------------------------- encoding

    def encode(self, text: str, *, allowed_special: AllowedSpecial = "all",
               disallowed_special: DisallowedSpecial = ()) -> list[int]:
        """The token ids of `text` as a list of int.

        The special tokens in `allowed_special` ("all": all of this tokenizer's, the default) are matched; the
        others are ordinary text. A special token of `disallowed_special` ("all": those not allowed; by default
        none) found in the text raises tiktoken's ValueError (these are tiktoken's keywords; only the defaults
        differ: tiktoken allows none and disallows all).

        >>> tok = Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"ab"}, [(b"a", b"b")], ["<|eot|>"])
        >>> tok.encode("abc ab<|eot|>")
        [256, 99, 32, 256, 257]
        >>> tok.encode("ab<|eot|>", allowed_special=set()) == tok.encode("ab") + list(b"<|eot|>")
        True
        >>> tok.encode("ab<|eot|>", disallowed_special="all", allowed_special=set())
        Traceback (most recent call last):
        ...
        ValueError: Encountered text corresponding to disallowed special token '<|eot|>'.
        ...
        """
        if allowed_special is not _ALL or disallowed_special:
            return self._for_specials(text, allowed_special, disallowed_special).encode(text)
        if type(text) is not str:
            text = str.__str__(_check_text(text))        # a str subclass as a plain str
        if self._normalizer is not None:
            from .normalize import is_normal

            if text.isascii() or is_normal(self._normalizer, text):      # as it is, unless it holds a surrogate
                plain = self._unnormalized
                try:
                    if plain._segmenter is not None:
                        return plain._pool.encode_text(text, plain._segmenter)
                    return plain._encode_all(text).take_list(self._id_objects)
                except UnicodeEncodeError:
                    pass
            return self._encode_normalizing(text).take_list(self._id_objects)
        segmenter = self._segmenter
        if segmenter is not None:
            try:
                return self._pool.encode_text(text, segmenter)
            except UnicodeEncodeError:
                # Lone surrogates cannot be UTF-8: replaced by U+FFFD as tiktoken does.
                return self._pool.encode_text(_replace_surrogates(text), segmenter)
        try:
            out = self._encode_all(text)
        except UnicodeEncodeError:
            out = self._encode_all(_replace_surrogates(text))
        return out.take_list(self._id_objects)

    def _encode_normalizing(self, text: str) -> IdBuffer:
        """An IdBuffer with the ids of `text` (a str) for a tokenizer with a normalizer (_normal_pieces): a text
        in normal form in one call, else piece by piece, each piece of text as ordinary text."""
        plain = self._unnormalized
        pieces = self._normal_pieces(text)
        if pieces is None:
            return plain._encode_all(_replace_surrogates(text) if _has_surrogate(text) else text)
        ordinary = plain.restricted_to(_NONE)
        ids = self._specials.ids or {}
        out = IdBuffer()
        for piece, special in pieces:
            if special:
                out.push(ids[piece])
            else:
                ordinary._encode_all(piece, out)
        return out

    def _normal_pieces(self, text: str) -> list[tuple[str, bool]] | None:
        """For a tokenizer with a normalizer: None when `text` (lone surrogates replaced, as encode replaces them)
        is in normal form, else its (piece, is_special) in order, the special tokens found in it, each piece of
        text between them in normal form (bpe_fast.normalize)."""
        from .normalize import is_normal, normal

        form = self._normalizer
        assert form is not None
        if _has_surrogate(text):
            text = _replace_surrogates(text)        # a surrogate pair may become a character normalizing changes
        if text.isascii() or is_normal(form, text):
            return None
        return [(piece, True) if special else (normal(form, piece), False)
                for piece, special in split_on_specials(text, self._specials.regex)]

    def normalize(self, text: str) -> str:
        """`text` as this tokenizer encodes it: with a normalizer (with_normalizer), its special tokens as they
        are and the text between them in normal form, lone surrogates replaced with U+FFFD as encode replaces
        them; without, `text` itself.

        >>> tok = Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<a>"]).with_normalizer("NFC")
        >>> tok.normalize("e\\u0301<a>\\u0338") == "\\u00e9<a>\\u0338"
        True
        """
        if type(text) is not str:
            text = str.__str__(_check_text(text))
        if self._normalizer is None:
            return text
        pieces = self._normal_pieces(text)
        if pieces is None:
            return _replace_surrogates(text) if _has_surrogate(text) else text
        return "".join(piece for piece, _ in pieces)

    def encode_ordinary(self, text: str) -> list[int]:
        """The token ids of `text` with no special token matched (all are ordinary text), as tiktoken's.

        >>> tok = Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|eot|>"])
        >>> tok.encode_ordinary("<|eot|>") == list(b"<|eot|>")
        True
        """
        return self.restricted_to(_NONE).encode(text)

    def encode_pieces(self, pieces: Iterable[bytes]) -> list[list[int]]:
        """The ids of each byte string merged as one pre-token: no pre-tokenizer, no special tokens, any bytes
        (UTF-8 or not); tiktoken's byte_pair_encode (Encoding._encode_single_piece). A piece that is not bytes
        (or a bytearray, a memoryview) is a TypeError naming its index.

        >>> tok = Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"ab"}, [(b"a", b"b")])
        >>> tok.encode_pieces([b"ab ab", b"", b"\\xffab"])
        [[256, 32, 256], [], [255, 256]]
        """
        items = _byte_pieces(pieces)
        bounds = np.zeros(2, dtype=np.int64)

        def run(core: BPECore) -> list[list[int]]:
            out = IdBuffer()
            result = []
            for piece in items:
                data = bytes(piece)
                if data:
                    bounds[1] = len(data)
                    core.encode_pretokens(out, data, bounds)
                result.append(out.take_list(self._id_objects))
            return result
        return self._pool.run(run)

    def merge_pieces(self, pieces: Iterable[bytes]) -> list[list[int]]:
        """The ids of each byte string merged by the merge rule alone, never looked up whole: tiktoken's
        byte_pair_encode. encode_pieces' ids, except for a tokenizer by_ranks_only, whose rule looks a pre-token
        up whole first (as tiktoken's encode does; its encode_with_unstable merges some candidates without that).

        >>> tok = Tokenizer.from_tiktoken({bytes([b]): b for b in range(256)} | {b"a\\xff\\xff": 256}, r"\\S+")
        >>> tok.encode_pieces([b"a\\xff\\xff"]), tok.merge_pieces([b"a\\xff\\xff"])
        ([[256]], [[97, 255, 255]])
        """
        if not self._rank_ids:
            return self.encode_pieces(pieces)       # (which checks them)
        return [self._tables.merge_bytes(bytes(piece)) for piece in _byte_pieces(pieces)]

    def show(self, text: str) -> TokenView:
        """(pieces, ids) of `text`: the ids encode gives and each token's text, where the bytes of a token that
        holds only part of a character are \\xNN escapes (bpe_fast.token_view; `bpe-fast show` draws them).

        >>> tok = Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"ab"}, [(b"a", b"b")])
        >>> pieces, ids = tok.show("abc€")
        >>> pieces, ids
        (['ab', 'c', '\\\\xe2', '\\\\x82', '\\\\xac'], [256, 99, 226, 130, 172])
        """
        from .token_view import token_view

        if self._normalizer is not None and isinstance(text, str) and self._changes(text):
            # the normalized text's tokens, unless normalizing spelled a special token (then its ids are others)
            view = token_view(self._unnormalized, self.normalize(text))
            if view.ids != self.encode(text):
                raise ValueError(f"show: normalizing the text to {self._normalizer} spells a special token in it, so "
                                 "its tokens are not those of the normalized text")
            return view
        return token_view(self, text)

    def encode_batch(self, texts: Iterable[str], *, num_threads: int = 8, allowed_special: AllowedSpecial = "all",
                     disallowed_special: DisallowedSpecial = ()) -> list[list[int]]:
        """[encode(text) for text in texts], on up to `num_threads` threads (no more than the cores this process may
        use). For the built-in patterns the texts are cut into groups of about 256 KB (a longer text into pieces,
        where its pre-tokens allow) that the threads, this one among them, claim and encode without the GIL, so
        short texts and a single long one too encode in parallel; this thread makes the lists of each group as it
        is done, while the others go on encoding.

        >>> tok = Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"ab"}, [(b"a", b"b")])
        >>> tok.encode_batch(["ab", "b"])
        [[256], [98]]
        """
        texts = _check_batch(texts, "texts")
        _check_threads(num_threads)
        if allowed_special is _ALL and not disallowed_special:
            return self._encode_batch(texts, num_threads, _NONE)
        view, disallowed = self._specials_rule(allowed_special, disallowed_special)
        return view._encode_batch(texts, num_threads, disallowed)

    def _encode_batch(self, texts: list[str], num_threads: int, disallowed: frozenset[str]) -> list[list[int]]:
        """encode_batch of the list `texts`, the special tokens matched being this tokenizer's; a text holding
        one of `disallowed` (a frozenset of str) raises tiktoken's ValueError, as encode's keywords do."""
        if self._normalizer is not None:
            return self._encode_batch_normalizing(texts, num_threads, disallowed)
        if self._segmenter is None:         # the Python path: a text a call
            if not disallowed:
                return map_threads(self.encode, texts, num_threads)

            def encode(text: str) -> list[int]:
                check_disallowed(text, disallowed)
                return self.encode(text)

            return map_threads(encode, texts, num_threads)
        # Disallowed tokens are searched in each piece's UTF-8 by the thread that encodes it, unless one holds
        # U+FFFD or a character above U+FFFF (which surrogates in a text could spell there): then all are
        # searched here first, in each str, as check_disallowed does.
        native = tuple(sorted(disallowed)) if all(utf8_searchable(token) for token in disallowed) else ()
        try:
            job = BatchJob(texts, self._segmenter, _GROUP_BYTES, self._specials.tokens, self._id_objects, native)
        except TypeError:       # naming a text that is not a str: tiktoken's error unless one before holds a
            if disallowed:      # disallowed token (it raises the first text's error)
                for text in itertools.takewhile(lambda text: isinstance(text, str), texts):
                    check_disallowed(text, disallowed)
            raise
        if disallowed and not native:
            for text in texts:
                check_disallowed(text, disallowed)
        # (no more threads than cores: each holds an encoder of its own, tens of megabytes for o200k_base, kept
        # after the call; 8 threads on 2 cores were no faster and kept 367 MB instead of 117)
        helpers = min(num_threads, job.n_groups, usable_cores()) - 1
        try:
            if helpers <= 0:
                ids = self._pool.batch_collect(job)
            else:
                from concurrent.futures import ThreadPoolExecutor

                futures: list[Future[None]] = []
                with ThreadPoolExecutor(helpers) as pool:
                    try:
                        for _ in range(helpers):
                            futures.append(pool.submit(self._pool.batch_work, job))
                        ids = self._pool.batch_collect(job)
                    finally:
                        job.cancel()        # on an error here, the helpers stop at their next group
                    for future in futures:
                        future.result()     # a helper's error (collect then gave None)
        except DisallowedFound as found:    # texts[found.index] is the first to hold one: tiktoken's error
            check_disallowed(texts[found.index], disallowed)
            raise AssertionError(f"encode_batch: texts[{found.index}] holds no disallowed token") from None
        if ids is None:
            raise AssertionError("encode_batch: a helper failed without an error")
        return ids

    def _encode_batch_normalizing(self, texts: list[str], num_threads: int,
                                  disallowed: frozenset[str]) -> list[list[int]]:
        """_encode_batch for a tokenizer with a normalizer: the texts normalizing changes (few, usually) are
        encoded one by one as encode does; the others as a batch, as they are."""
        changed = [k for k, text in enumerate(texts) if isinstance(text, str) and self._changes(text)]
        plain = self._unnormalized
        if not changed:
            return plain._encode_batch(texts, num_threads, disallowed)
        if disallowed:      # tiktoken's error names the first text holding one
            for text in itertools.takewhile(lambda text: isinstance(text, str), texts):
                check_disallowed(text, disallowed)
        rest = list(texts)
        for k in changed:
            rest[k] = ""
        ids = plain._encode_batch(rest, num_threads, disallowed)
        for k in changed:
            ids[k] = self._encode_normalizing(texts[k]).take_list(self._id_objects)
        return ids

    def _changes(self, text: str) -> bool:
        """False when `text` is encoded as it is by a tokenizer with a normalizer: it is in normal form and holds
        no surrogate (replacing surrogates can make a character that normalizing changes)."""
        from .normalize import is_normal

        return not text.isascii() and (not is_normal(self._normalizer, text)      # type: ignore[arg-type]
                                       or _has_surrogate(text))

    def encode_with_offsets(self, text: str, *, allowed_special: AllowedSpecial = "all",
                            disallowed_special: DisallowedSpecial = ()) -> tuple[NDArray[np.int32], NDArray[np.int64]]:
        """(ids, offsets): the ids of `text` (int32 array, as encode_to_numpy) and the index in `text` of the
        character where each token starts (int64 array); a token that starts inside a character (a part of
        its UTF-8) gets that character's index, as tiktoken's decode_with_offsets. Keywords as encode's.

        >>> tok = Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"ab"}, [(b"a", b"b")])
        >>> ids, offsets = tok.encode_with_offsets("ab€b")
        >>> ids.tolist(), offsets.tolist()
        ([256, 226, 130, 172, 98], [0, 2, 2, 2, 3])
        """
        if self._normalizer is not None:
            # (the whole text's form first, quick; where it is not normal, its pieces between the special tokens
            # matched, which are what is normalized: "x<a>\u0338" is tokenizer.normalize's own output)
            # (lone surrogates aside: encode replaces them either way, and the offsets below map them back)
            if isinstance(text, str) and self._changes(text) and \
                    self._specials_rule(allowed_special, disallowed_special)[0].normalize(text) != (
                        _replace_surrogates(text) if _has_surrogate(text) else text):
                raise ValueError(f"encode_with_offsets: the text is not in {self._normalizer} (which this tokenizer "
                                 f"encodes), so its ids have no offsets in it; pass tokenizer.normalize(text)")
            return self._unnormalized.encode_with_offsets(text, allowed_special=allowed_special,
                                                          disallowed_special=disallowed_special)
        tok = self if allowed_special is _ALL and not disallowed_special else \
            self._for_specials(text, allowed_special, disallowed_special)
        if type(text) is not str:
            text = str.__str__(_check_text(text))
        index = None
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            text, index = _replace_surrogates_mapped(text)
            data = text.encode("utf-8")
        ids = tok.encode_utf8_to_numpy(data)
        lengths = tok.lengths_in(data, ids)
        starts = None
        if int(lengths.sum()) != len(data):     # a pattern that leaves text out: each token's place, piece by piece
            starts = tok._token_byte_starts(data, lengths)
        offsets = _char_offsets(data, lengths, starts)
        return ids, (index[offsets] if index is not None else offsets)

    def _token_byte_starts(self, data: bytes, lengths: NDArray[np.int64]) -> NDArray[np.int64]:
        """Where each token of data's encoding (of `lengths` bytes each) starts in UTF-8 `data`, when the pattern
        leaves some text in no pre-token (so the tokens do not follow each other): the special tokens and the
        pre-tokens of the text between them, in order, each covered by its own tokens."""
        spans: list[tuple[int, int]] = []
        pos = 0
        matches = list(self._specials.matcher.final_matches(data, True)[0]) if self._specials else []
        for text_end, start, end, _ in matches + [(len(data), len(data), len(data), -1)]:
            if text_end > pos:      # (the white space a token with lstrip takes is in no token)
                first, last = pretoken_spans(data[pos:text_end], self._pattern)
                spans.extend(zip((first + pos).tolist(), (last + pos).tolist()))
            if end > start:
                spans.append((start, end))
            pos = end
        starts = np.zeros(len(lengths), dtype=np.int64)
        sizes = lengths.tolist()
        k = 0
        for start, end in spans:
            while start < end:
                starts[k] = start
                start += sizes[k]
                k += 1
        return starts

    def _for_specials(self, text: str, allowed_special: AllowedSpecial,
                      disallowed_special: DisallowedSpecial) -> Tokenizer:
        """The tokenizer (self or a _view) for encode's keywords, once `text` is checked for disallowed ones."""
        view, disallowed = self._specials_rule(allowed_special, disallowed_special)
        if disallowed:
            check_disallowed(text, disallowed)
        return view

    def _specials_rule(self, allowed_special: AllowedSpecial,
                       disallowed_special: DisallowedSpecial) -> tuple[Tokenizer, frozenset[str]]:
        """(view, disallowed): the tokenizer matching the allowed special tokens, and the frozenset of strings
        whose presence in a text is an error."""
        if isinstance(allowed_special, str):
            if allowed_special != "all":
                raise TypeError(f'allowed_special must be "all" or a set of str, got the str {allowed_special!r}')
            allowed = frozenset(self._specials.tokens)
        else:
            allowed = _names(allowed_special, 'allowed_special must be "all" or a set of str', self._special_set)
            if not allowed <= self._special_set:
                allowed = allowed.intersection(self._specials.tokens)
        if isinstance(disallowed_special, str):
            if disallowed_special != "all":
                raise TypeError('disallowed_special must be "all" or a collection of str, got the str '
                                f"{disallowed_special!r}")
            disallowed = frozenset(self._specials.tokens) - allowed
        elif not disallowed_special:        # (None too, as tiktoken reads it, and encode without allowed_special)
            disallowed = _NONE
        else:
            disallowed = _names(disallowed_special, 'disallowed_special must be "all" or a collection of str',
                                self._special_set)
        return self.restricted_to(allowed), disallowed

    def lengths_in(self, data: bytes, ids: NDArray[Any]) -> NDArray[np.int64]:
        """How many bytes of `data` each token of `ids` (this tokenizer's encoding of data) covers (int64 array):
        its id's bytes' length, but for a special token sharing its id with others (o200k_harmony's
        <|endofprompt|> and <|reserved_200018|>), that of the one matched there.

        >>> tok = Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|eot|>"])
        >>> tok.lengths_in(b"a<|eot|>", tok.encode_utf8_to_numpy(b"a<|eot|>")).tolist()
        [1, 7]
        """
        table = self.token_lengths()
        ids = np.array(ids)     # a copy: checked, then read again (another thread could write the caller's array)
        if ids.dtype.kind not in "iu":
            raise TypeError(f"ids must be an array of integers, got {ids.dtype}")
        if ids.size:        # NumPy would take a negative id from the end, and an unknown one as 0 bytes
            outside = np.flatnonzero((ids < 0) | (ids >= len(table)))
            unknown = outside if len(outside) else np.flatnonzero(table[ids] == 0)
            if len(unknown):
                k = int(unknown[0])
                raise ValueError(f"{'negative' if ids[k] < 0 else 'unknown'} token id {int(ids[k])} (at position {k})")
        lengths = table[ids]
        _shared_id_lengths(lengths, ids, data, self._specials)
        return lengths

    def token_lengths(self) -> NDArray[np.int64]:
        """A read-only int64 array: id -> the length of its token's bytes (0 for an id without a token), made
        on first use and kept.

        >>> Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"ab"}, [(b"a", b"b")]).token_lengths()[255:]
        array([1, 2])
        """
        lengths = self._lengths
        if lengths is None:
            offsets = self.token_pool()[1]
            lengths = np.zeros(self.vocab_size, dtype=np.int64)
            known = min(len(offsets) - 1, len(lengths))
            np.subtract(offsets[1:known + 1], offsets[:known], out=lengths[:known])
            lengths.flags.writeable = False     # (handed out by token_lengths)
            self._lengths = lengths
        return lengths

    def split_trees(self) -> tuple[NDArray[np.int32], NDArray[np.int32]] | None:
        """(left, right): for each ranked (merged) token in rank order, the ids of the two tokens the ranks rule
        joins to make it, as the encoder's tables hold them (each token's split tree); None when a ranked token is
        one the rule does not make from the tokens ranked before it (tiktoken ranks such as Llama 3's).

        >>> Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"ab", 257: b"abc"},
        ...           [(b"a", b"b"), (b"ab", b"c")]).split_trees()
        (array([ 97, 256], dtype=int32), array([98, 99], dtype=int32))
        """
        left, right, unmade, _ = self._tables.splits()
        return None if unmade >= 0 else (np.asarray(left), np.asarray(right))

    def token_pool(self) -> tuple[NDArray[np.uint8], NDArray[np.int64]]:
        """(pool, offsets): the bytes of every token back to back, by id, as the decoder holds them, and where
        each id's start: id i's bytes are pool[offsets[i]:offsets[i + 1]] (none for an id without a token, special
        tokens' included). Both read-only, made on first use and kept: a vocabulary's bytes as two arrays, not a
        dict of bytes objects.

        >>> pool, offsets = Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"ab"}, [(b"a", b"b")]).token_pool()
        >>> pool[offsets[256]:offsets[257]].tobytes(), len(offsets)
        (b'ab', 258)
        """
        made = self._token_pool
        if made is None:
            made = self._token_pool = self._tables.token_pool()
        return made

    @property
    def native(self) -> bool:
        """True when the native scanner pre-tokenizes this tokenizer's pattern (the built-in patterns): the
        encoder then runs without the GIL and reads UTF-8 bytes without making a str."""
        return self._segmenter is not None

    def encode_documents_utf8(self, data: bytes, bounds: ArrayLike, dtype: DTypeLike = "int32",
                              separator: int | None = None) -> NDArray[Any]:
        """The ids of each document data[bounds[k]:bounds[k + 1]] (valid UTF-8 bytes; bounds int64 from 0 to
        len(data)), each encoded alone as encode_utf8_to_numpy does, one after another in one array of dtype,
        with the id `separator` (None: nothing; else an id of the vocabulary) after each. For encoding shards of
        documents.

        >>> tok = Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"ab"}, [(b"a", b"b")])
        >>> tok.encode_documents_utf8(b"aab", np.array([0, 1, 3]), separator=0).tolist()
        [97, 0, 256, 0]
        """
        dtype = self._check_dtype(dtype)
        if type(data) is not bytes:
            # a copy (as encode_utf8_to_numpy's; about 1% of the encoding's time): the UTF-8 is checked first and
            # then scanned without the GIL, and a mutable buffer could change in between (another thread); of a
            # buffer only (bytes(3) would be three NUL bytes, bytes([104, 105]) b"hi")
            data = bytes(memoryview(data))
        if separator is not None:       # an id of the vocabulary fits dtype (_check_dtype); another would wrap
            if isinstance(separator, bool) or not isinstance(separator, (int, np.integer)):
                raise TypeError(f"separator must be None or an int id, got {type(separator).__name__}")
            if int(separator) not in self._vocab:
                raise ValueError(f"separator id {separator} is not in the vocabulary")
            separator = int(separator)
        given = np.asarray(bounds)
        if given.size and given.dtype.kind not in "iu":     # floats would be cut to ints without a word
            raise TypeError(f"bounds must be integers, got an array of {given.dtype}")
        edges_array = given.astype(np.int64)
        # the native encoder reads each document to its end bound as valid UTF-8 (check_documents_utf8 checks
        # the inner bounds): a first bound past 0 or a last before len(data) could cut a character, and the
        # scanner read past the document, and past the buffer's end
        if (edges_array.ndim != 1 or len(edges_array) == 0 or edges_array[0] != 0
                or edges_array[-1] != memoryview(data).nbytes or (np.diff(edges_array) < 0).any()):
            raise ValueError("bounds must rise from 0 to len(data)")
        edges = edges_array.tolist()
        if self._normalizer is not None and (bytes(data).isascii() or not self._changes(bytes(data).decode("utf-8"))):
            # in normal form, and so each document (a part of a normal text is normal): as it is
            return self._unnormalized.encode_documents_utf8(data, edges_array, dtype, separator)
        if self._segmenter is None or self._normalizer is not None:
            arrays = []
            for start, end in zip(edges[:-1], edges[1:]):
                arrays.append(self.encode_to_numpy(str(data[start:end], "utf-8"), dtype))
                if separator is not None:
                    arrays.append(np.array([separator], dtype=dtype))
            return np.concatenate(arrays) if arrays else np.zeros(0, dtype=dtype)
        check_documents_utf8(data, edges)

        def encode(core: BPECore) -> IdBuffer:
            out = IdBuffer()
            core.encode_documents_into(out, data, edges_array, self._segmenter,     # type: ignore[arg-type]
                                       -1 if separator is None else separator)
            return out
        return self._pool.run(encode).take(dtype)

    def encode_to_numpy(self, text: str, dtype: DTypeLike = "int32") -> NDArray[Any]:
        """The token ids of `text` as a 1-D NumPy array of `dtype` (int32 by default; also uint16, uint32,
        int64, uint64). A dtype too small for the largest id (uint16 with more than 65,536 ids) is a ValueError.

        >>> tok = Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"ab"}, [(b"a", b"b")])
        >>> tok.encode_to_numpy("abc", dtype="uint16")
        array([256,  99], dtype=uint16)
        """
        dtype = self._check_dtype(dtype)
        if type(text) is not str:
            text = str.__str__(_check_text(text))
        if self._normalizer is not None:
            from .normalize import is_normal

            if text.isascii() or is_normal(self._normalizer, text):      # as it is, unless it holds a surrogate
                try:
                    return self._unnormalized._encode_all(text).take(dtype)
                except UnicodeEncodeError:
                    pass
            return self._encode_normalizing(text).take(dtype)
        if self._segmenter is not None:
            try:
                return self._pool.encode_text_array(text, self._segmenter, dtype)
            except UnicodeEncodeError:
                # Lone surrogates cannot be UTF-8: replaced by U+FFFD as tiktoken does.
                return self._pool.encode_text_array(_replace_surrogates(text), self._segmenter, dtype)
        try:
            out = self._encode_all(text)
        except UnicodeEncodeError:
            out = self._encode_all(_replace_surrogates(text))
        return out.take(dtype)

    def encode_utf8_to_numpy(self, data: bytes | bytearray | memoryview, dtype: DTypeLike = "int32", *,
                             scratch: IdBuffer | None = None) -> NDArray[Any]:
        """encode_to_numpy of UTF-8 bytes (equal to encode_to_numpy(data.decode("utf-8"))), without making a
        str: for reading files. Invalid UTF-8 raises the UnicodeDecodeError bytes.decode would. scratch: an
        empty bpe_fast._encode.IdBuffer to work in (left empty, its memory kept, for a caller encoding many
        pieces); with one, data may be a bytearray or memoryview, which must not change during the call (no
        other thread may hold it); without, such data is copied first.

        >>> tok = Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"ab"}, [(b"a", b"b")])
        >>> tok.encode_utf8_to_numpy("abc".encode(), dtype="uint16")
        array([256,  99], dtype=uint16)
        """
        dtype = self._check_dtype(dtype)
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"data must be bytes, got {type(data).__name__}")
        if self._normalizer is not None:      # as it is unless normalizing changes it (checked in the str)
            if not bytes(data).isascii() and self._changes(bytes(data).decode("utf-8")):
                return self.encode_to_numpy(bytes(data).decode("utf-8"), dtype)
            return self._unnormalized.encode_utf8_to_numpy(data, dtype, scratch=scratch)
        if self._segmenter is None:
            return self.encode_to_numpy(bytes(data).decode("utf-8"), dtype)
        if scratch is None:
            if type(data) is not bytes:
                # a copy: the UTF-8 is checked first and then scanned without the GIL, and a mutable buffer could
                # change in between (another thread); bytes cannot
                data = bytes(data)
            arr = self._pool.encode_utf8_array(data, self._segmenter, dtype)
            if arr is not None:
                return arr
            check_utf8(data)    # (raises bytes.decode's error)
        return self._encode_utf8_array(data, dtype, IdBuffer() if scratch is None else scratch)

    def _encode_utf8_array(self, data: bytes | bytearray | memoryview, dtype: DTypeLike, out: IdBuffer) -> NDArray[Any]:
        """encode_utf8_to_numpy for the native path, its arguments checked, with `out` (an empty IdBuffer) as
        the working buffer: it is left empty, its memory kept, so a caller encoding many pieces reuses it. data
        must not change during the call (bytes, or a buffer no other thread holds)."""
        check_utf8(data)
        self._pool.run(lambda core: core.encode_utf8_into(out, data, self._segmenter))
        return out.take(dtype)

    def encode_iterable(self, iterable: Iterable[str]) -> Iterator[int]:
        """Lazily yield the ids of the concatenated strings of `iterable` (e.g. a text file, line by line).

        Equal to ``encode("".join(iterable))`` however the text is cut (with a custom pattern, as long as a
        pre-token is decided by the text up to two pre-tokens past it, as the built-in patterns' are: a pattern
        that looks further ahead, such as ``a+b|a``, may cut differently where a string ends inside such a run;
        give it whole lines or blocks, or encode the text whole; its "^", "\\b" and look-behind see the last
        256 bytes of the text before a cut). After each string, the ids of the text
        up to the last safe cut are yielded; only the tail after it is kept: text that could still join the
        next string (a possible prefix of a special token, the last pre-token, a trailing whitespace run), so
        memory stays bounded on a stream of any size. Nothing is batched: a string's ids come out as soon as
        the next string makes them final. With the built-in patterns each string costs one native call (well
        under a microsecond of overhead), so a file read line by line is fast; with other patterns it costs
        several microseconds, and blocks (``iter(lambda: f.read(1 << 20), "")``) go faster than short lines.
        On the native path the iterator itself is native (bpe_fast._encode.StreamIds): each id comes from the
        stream's buffer, with no list and no Python frame a string, so each id costs a few nanoseconds.
        A str or bytes in place of the iterable is a TypeError at once; a chunk that is not a str, when it is
        reached.

        >>> tok = Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"  "}, [(b" ", b" ")], ["<|eot|>"])
        >>> list(tok.encode_iterable(["a  ", " b<|e", "ot|>"])) == tok.encode("a   b<|eot|>")
        True
        """
        if isinstance(iterable, (str, bytes)):
            raise TypeError("encode_iterable takes an iterable of str (e.g. an open text file), not a single "
                            + type(iterable).__name__)
        if self._normalizer is not None:
            return self._ids_normalizing(iterable)
        if self._segmenter is None:
            return itertools.chain.from_iterable(self._id_lists_python(iterable))
        return StreamIds(self._pool, self._open_stream(), iterable, _as_str, _hold_high_surrogate,
                         _replace_surrogates)

    def _ids_normalizing(self, iterable: Iterable[str]) -> Iterator[int]:
        """encode_iterable for a tokenizer with a normalizer: the special tokens are found in the strings as given
        (_normalized_runs), each run of text between them is normalized as it comes and encoded as a stream of
        its own by this tokenizer without normalizer or special tokens, as encode encodes the pieces."""
        ordinary = self._unnormalized.restricted_to(_NONE)
        for special, run in itertools.groupby(self._normalized_runs(iterable), key=lambda item: item[0]):
            if special:
                yield from (item[1] for item in run)        # type: ignore[misc]  # the ids of special tokens
            else:
                yield from ordinary.encode_iterable(item[1] for item in run)     # type: ignore[misc]  # text

    def _normalized_runs(self, iterable: Iterable[str]) -> Iterator[tuple[bool, int | str]]:
        """(True, id) for each special token of the concatenated strings, (False, text) for the normalized text
        between them, as soon as it is final: a special token once no longer one can start before its end, text
        up to a cut normalizing cannot see past (bpe_fast.normalize.last_stable) and no special token can cover.

        Only the text not yet searched (the last `reach` - 1 characters held and the new string) is searched and
        copied: the text held before it, searched already, stays in pieces (`settled`) until a cut or a special
        token lets it go, so a long stretch with no cut (a megabyte of combining marks) costs time linear in its
        length, not the length held times the number of strings."""
        from .normalize import last_stable, normal

        form = self._normalizer
        assert form is not None
        regex_, ids = self._specials.regex, self._specials.ids or {}
        reach = max(map(len, self._specials.tokens), default=1)     # a special token starting k characters before
        # The text held (not yet normalized) is settled + tail. settled: searched, no special token starts in it and
        # no stable cut is in it after its first character, in pieces; those before settled[joined] have
        # _JOINED_PIECE characters or more (short strings are joined into one once that many have come, so a
        # stream of single characters does not hold a str object a character; each character is copied once
        # there). tail: the end of the text, decided once `reach` characters follow its start (fewer than that).
        settled: list[str] = []
        joined = short = 0      # settled[joined:] are short pieces, `short` characters in all
        join_at = _JOINED_PIECE
        tail = ""
        carry = ""              # a high surrogate ending the last string (it may pair with the next one)
        for chunk in itertools.chain(iterable, [None]):
            final = chunk is None
            if final:
                chunk = carry
            else:
                if type(chunk) is not str:
                    chunk = _as_str(chunk)
                chunk, carry = _hold_high_surrogate(carry + chunk)
            if _has_surrogate(chunk):       # replaced as encode replaces them (the text held has none)
                chunk = _replace_surrogates(chunk)
            text = tail + chunk             # the text to search; settled is before it
            pos, limit = 0, len(text) if final else len(text) - reach + 1
            if regex_ is not None:
                for m in regex_.finditer(text):
                    if m.start() >= limit:
                        break
                    if settled or m.start() > pos:
                        yield False, normal(form, "".join([*settled, text[pos:m.start()]]))
                        settled, joined, short = [], 0, 0
                    yield True, ids[m.group()]
                    pos = m.end()
                    limit = max(limit, pos)
            if final:
                if settled or pos < len(text):
                    yield False, normal(form, "".join([*settled, text[pos:]]))
                return
            cut = last_stable(text, pos, limit) if limit > pos else -1
            if cut >= 0 and (cut > pos or settled):     # a cut at text's start is one after settled
                piece = text[pos:cut]
                if settled:
                    settled.append(piece)
                    piece = "".join(settled)
                    settled, joined, short = [], 0, 0
                yield False, normal(form, piece)
                pos = cut
            if limit > pos:
                settled.append(text[pos:limit])
                short += limit - pos
                if short >= join_at:
                    if len(settled) - joined > 1:
                        settled[joined:] = ["".join(settled[joined:])]
                    joined, short = len(settled), 0
                tail = text[limit:]
            else:
                tail = text[pos:]

    def _open_stream(self) -> StreamEncoder:
        """A new native StreamEncoder for encode_iterable."""
        return StreamEncoder(self._segmenter, self._id_objects)        # type: ignore[arg-type]  # the native path

    def _id_lists_python(self, iterable: Iterable[str]) -> Iterator[list[int]]:
        """encode_iterable's lists of ids for patterns the native scanner does not know: the pending strings
        are joined and cut in Python once they have grown by _PENDING_GROWTH."""
        pending: list[str] = []          # strings not yet encoded, in order
        pending_len = 0
        next_attempt = 1      # examine the pending text once it is at least this long
        carry = ""
        context = b""         # the end of the ordinary text before the pending text (none after a special token)
        for chunk in iterable:
            if type(chunk) is not str:
                chunk = _as_str(chunk)
            if carry:
                chunk, carry = carry + chunk, ""
            chunk, carry = _hold_high_surrogate(chunk)
            if not chunk:
                continue
            pending.append(chunk)
            pending_len += len(chunk)
            if pending_len < next_attempt:
                continue
            text = "".join(pending)
            try:
                ids, rest, context = self._encode_finished(text, context)
            except UnicodeEncodeError:
                ids, rest, context = self._encode_finished(_replace_surrogates(text), context)
            pending = [rest] if rest else []
            pending_len = len(rest)
            next_attempt = max(1, _PENDING_GROWTH * pending_len)
            if ids:
                yield ids
        if pending or carry:
            text = "".join(pending) + carry
            try:
                data = text.encode("utf-8")
            except UnicodeEncodeError:
                data = _replace_surrogates(text).encode("utf-8")
            out = IdBuffer()
            pos = self._encode_specials(out, data, True, context)[0]
            if pos < len(data):
                self._encode_ordinary(out, data[pos:], True, b"" if pos else context)
            yield out.take_list(self._id_objects)

    def _encode_all(self, text: str, out: IdBuffer | None = None) -> IdBuffer:
        """An IdBuffer with the ids of `text` (appended to `out` when given), not normalized. The special tokens
        are found in the UTF-8 bytes, which gives the same cuts as in the str (a token's bytes can only match where
        its characters do)."""
        if out is None:
            out = IdBuffer()
        if self._segmenter is not None:
            self._pool.run(lambda core: core.encode_text_into(out, text, self._segmenter))
            return out
        data = text.encode("utf-8")
        pos = self._encode_specials(out, data, True)[0]
        if pos < len(data):
            self._encode_ordinary(out, data[pos:] if pos else data)
        return out

    def _encode_specials(self, out: IdBuffer, data: bytes, final: bool, context: bytes = b"") -> tuple[int, int]:
        """The Python path's special tokens: append the ids of data's final special tokens and of the ordinary
        text before each to `out`; returns (pos, undecided): where the last token ended and from where the
        text still to come may change what follows (the native rule, SpecialMatcher.final_matches). context:
        as _encode_ordinary's, for the text before the first special token."""
        specials = self._specials
        if not specials:
            return 0, len(data)
        matches, undecided = specials.matcher.final_matches(data, final)
        pos = 0
        for text_end, _, end, index in matches:
            if text_end > pos:
                self._encode_ordinary(out, data[pos:text_end], True, b"" if pos else context)
            out.push(specials.utf8_ids[index])
            pos = end
        return pos, undecided

    def _encode_ordinary(self, out: IdBuffer, data: bytes, final: bool = True, context: bytes = b"") -> int:
        """The Python path (a custom regex): append the ids of UTF-8 `data` (no special tokens in it) to `out`;
        returns how many bytes were encoded: all if `final`, else those before the last safe cut (the text
        may continue; see _safe_cut). context: the UTF-8 of the ordinary text just before `data` that
        encode_iterable has already encoded (its last _CONTEXT_BYTES at most), which the pattern's "^", "\\b"
        and look-behind see as they would in the whole text."""
        return self._pool.run(self._encode_ordinary_with, out, data, final, context)

    def _encode_ordinary_with(self, core: BPECore, out: IdBuffer, data: bytes, final: bool,
                              context: bytes = b"") -> int:
        if not data:
            return 0
        starts, ends = pretoken_spans(data, self._pattern, context)
        bounds = np.concatenate([[0], ends]).astype(np.int64)
        cuts = np.append(starts, len(data))           # pre-token i and the text after it no match covers
        pieces = data
        if np.any(cuts != bounds):                    # the pattern leaves text out: it is skipped, as tiktoken does
            pieces = b"".join(data[a:b] for a, b in zip(starts.tolist(), ends.tolist()))
            np.cumsum(ends - starts, out=bounds[1:])
        if final:
            core.encode_pretokens(out, pieces, bounds)
            return len(data)
        k = self._safe_cut(data, cuts)
        if k > 0:
            core.encode_pretokens(out, pieces, bounds, k)
        return int(cuts[k]) if k > 0 else 0

    def _encode_finished(self, text: str, context: bytes = b"") -> tuple[list[int], str, bytes]:
        """(ids, rest, context): the ids of text up to its last safe cut, the text after the cut, and the
        ordinary text before the cut (as _encode_ordinary's context). context: the ordinary text before `text`."""
        out = IdBuffer()
        data = text.encode("utf-8")
        n = len(data)
        pos, undecided = self._encode_specials(out, data, False, context)
        if pos:
            context = b""           # text after a special token: a piece of its own
        # data[pos:undecided] is ordinary text that may continue past `undecided`.
        cut = pos + self._encode_ordinary(out, data[pos:undecided] if pos or undecided < n else data, False,
                                          context)
        return out.take_list(self._id_objects), data[cut:].decode("utf-8"), _utf8_tail(context + data[pos:cut])

    @staticmethod
    def _safe_cut(data: bytes, bounds: NDArray[np.int64]) -> int:
        """For the Python path (a custom regex; the built-in patterns' exact rule is the native scanner's,
        bpe_fast._scan.scan_block_final): the largest k such that the pre-tokens before bounds[k] are taken as
        final while `data` (UTF-8 ordinary text) may continue; 0 if there is none.

        A custom regex's look-ahead is unknown, so this assumes it is no longer than the built-in patterns'
        (whose pre-token at p is decided by the characters up to the one after its end, a whitespace
        alternative by the whole whitespace run and the character after it, a contraction by two characters
        after its apostrophe) and keeps one pre-token more than they would need: the cut at the end of
        pre-token k - 1 (bounds[k]) is taken when at least two pre-tokens follow it (so at least two bytes
        follow its start: a contraction after an apostrophe there has its characters) and pre-token k - 1 does
        not start in the trailing whitespace run.

        >>> data = b"ab cd ef"
        >>> Tokenizer._safe_cut(data, np.array([0, 2, 5, 8]))      # "ab", " cd", " ef": " ef" may go on
        1
        """
        n = len(data)
        tail = data[-64:].decode("utf-8", "ignore")
        last_non_space = _last_non_space()
        m = last_non_space.search(tail)
        if m is None and len(tail) < n:
            tail = data.decode("utf-8")
            m = last_non_space.search(tail)
        ws_start = n - len(tail[m.end():].encode("utf-8")) if m is not None else 0
        for k in range(len(bounds) - 3, 0, -1):
            if bounds[k - 1] < ws_start:
                return k
        return 0

    def _check_dtype(self, dtype: DTypeLike) -> np.dtype[Any]:
        if not isinstance(dtype, np.dtype):
            try:
                dtype = np.dtype(dtype)
            except TypeError:
                raise TypeError(f"dtype must be a NumPy integer dtype, got {dtype!r}") from None
        largest = _output_dtypes().get(dtype)
        if largest is None:
            raise ValueError(f"dtype must be one of int32, uint16, uint32, int64, uint64; got {dtype}")
        if largest < _INT32_MAX and self.max_token_value > largest:     # (ids are int32: only uint16 can be short)
            raise ValueError(f"the largest id, {self.max_token_value}, does not fit in {dtype} (largest {largest})")
        return dtype

    # ---------------------------------------------------------------------------------------- decoding

    def decode(self, ids: Iterable[int], errors: str = "replace") -> str:
        """The text of `ids` (a list or 1-D array of ints): the tokens' bytes joined and decoded as UTF-8 with
        `errors` ("replace": invalid UTF-8 becomes U+FFFD; "strict": raises UnicodeDecodeError; "ignore": is
        dropped; any error handler of bytes.decode). An id that is negative or has no token is a ValueError
        naming it.

        >>> tok = Tokenizer({i: bytes([i]) for i in range(256)}, [])
        >>> tok.decode([104, 105]), tok.decode([0xE2, 0x82]), tok.decode([104, 0xE2], errors="ignore")
        ('hi', '�', 'h')
        """
        if type(ids) in _LISTS:
            text = self._tables.decode_list_text(ids if type(ids) is list else list(ids), errors)
            if text is not None:
                return text
        return utf8_text(self.decode_bytes(ids), errors)

    def decode_batch(self, batch: Iterable[Iterable[int]], *, errors: str = "replace",
                     num_threads: int = 8) -> list[str]:
        """[decode(ids, errors) for ids in batch], on up to `num_threads` threads.

        >>> Tokenizer({i: bytes([i]) for i in range(256)}, []).decode_batch([[104, 105], [33]])
        ['hi', '!']
        """
        batch = _check_batch(batch, "batch")
        _check_threads(num_threads)
        return map_threads(lambda ids: self.decode(ids, errors), batch, num_threads, decodes_in_parallel)

    def decode_with_offsets(self, ids: Iterable[int]) -> tuple[str, list[int]]:
        """(text, offsets), as tiktoken's: the text of `ids`, decoded strictly (invalid UTF-8 raises
        UnicodeDecodeError), and for each token the index of the first character holding bytes of it.

        >>> tok = Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"ab"}, [(b"a", b"b")])
        >>> tok.decode_with_offsets([256, 226, 130, 172, 98])
        ('ab€b', [0, 2, 2, 2, 3])
        """
        got = None
        if type(ids) in _LISTS:
            got = self._tables.decode_list_offsets(ids if type(ids) is list else list(ids))
        if got is None:
            ids = _id_array(ids)
            got = self._tables.decode_bytes(ids, True), self._tables.char_offsets(ids)
        return utf8_text(got[0], "strict"), got[1]

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """The tokens' bytes joined, without decoding.

        >>> Tokenizer({i: bytes([i]) for i in range(256)}, []).decode_bytes([0xE2, 0x82, 0xAC])
        b'\\xe2\\x82\\xac'
        """
        if type(ids) in _LISTS:
            data = self._tables.decode_list(ids if type(ids) is list else list(ids))
            if data is not None:
                return data
        return self._tables.decode_bytes(_id_array(ids), True)


def _utf8_tail(data: bytes) -> bytes:
    """The last _CONTEXT_BYTES of UTF-8 `data` at most, from a character's start."""
    tail = data[-_CONTEXT_BYTES:]
    start = 0
    while start < len(tail) and tail[start] & 0xC0 == 0x80:
        start += 1
    return tail[start:]


def _shared_id_lengths(lengths: NDArray[np.int64], ids: NDArray[Any], data: bytes, specials: SpecialTokens) -> None:
    """Set in `lengths` (of the tokens `ids` making up `data`) the length of each special token of an id in
    specials.shared: special tokens sharing an id (o200k_harmony's <|endofprompt|> and <|reserved_200018|>) leave
    it the first's bytes, but the text holds the one matched, the first of its names found where it starts."""
    shared = {i: [name.encode("utf-8") for name in s.names] for i, s in specials.shared.items()}
    if not shared:
        return
    pos = last = 0
    for k in np.flatnonzero(np.isin(ids, list(shared))).tolist():
        pos += int(lengths[last:k].sum())
        last = k
        lengths[k] = next(len(utf8) for utf8 in shared[int(ids[k])] if data.startswith(utf8, pos))


# _char_offsets counts characters this many bytes of the text at a time: a count for every byte of the whole text
# (int64, and NumPy's int64 copy of the mask it summed) took about 17 bytes a byte of text, so that
# encode_with_offsets of a 1 GB text needed over 12 GB where encode_to_numpy needs 1.5
_OFFSET_BLOCK = 1 << 20


def _char_offsets(data: bytes, lengths: NDArray[np.int64], starts: NDArray[np.int64] | None = None
                  ) -> NDArray[np.int64]:
    """For tokens of `lengths` bytes making up UTF-8 `data` (or starting at the byte offsets `starts`, increasing,
    when they leave some out): the index of the character holding each token's first byte (int64 array): the
    characters started up to that byte, less one."""
    if not len(lengths):
        return np.zeros(0, dtype=np.int64)
    if starts is None:
        starts = np.zeros(len(lengths), dtype=np.int64)
        np.cumsum(lengths[:-1], out=starts[1:])
    first = np.frombuffer(data, dtype=np.uint8)
    out = np.zeros(len(starts), dtype=np.int64)
    chars = 0               # characters started before the block
    done = 0                # tokens starting before the block
    for lo in range(0, len(first), _OFFSET_BLOCK):
        is_start = (first[lo:lo + _OFFSET_BLOCK] & 0xC0) != 0x80         # the first byte of a character
        end = int(np.searchsorted(starts, lo + len(is_start)))           # the tokens starting in the block
        if end > done:
            upto = np.cumsum(is_start, dtype=np.int64)                     # characters started up to each byte
            out[done:end] = np.maximum(chars + upto[starts[done:end] - lo] - 1, 0)
            chars += int(upto[-1])
            done = end
        else:
            chars += int(np.count_nonzero(is_start))
    return out


def _replace_surrogates_mapped(text: str) -> tuple[str, NDArray[np.intp]]:
    """(_replace_surrogates(text), index): index[k] is where character k of the new text is in `text` (a
    surrogate pair becomes one character)."""
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    high = (codes >= 0xD800) & (codes <= 0xDBFF)
    low = (codes >= 0xDC00) & (codes <= 0xDFFF)
    second = np.zeros(len(codes), dtype=bool)             # the low half of a pair
    second[1:] = high[:-1] & low[1:]
    return _replace_surrogates(text), np.flatnonzero(~second)


def _check_batch(items: Iterable[_T], what: str) -> list[_T]:
    """`items` as a list; TypeError for a str or bytes (one text, not a batch)."""
    if isinstance(items, (str, bytes)):
        raise TypeError(f"{what} must be a list, not a single {type(items).__name__}")
    return items if type(items) is list else list(items)


def decodes_in_parallel(ids: Any) -> bool:
    """Whether decoding ids gains from a thread of its own: a long list or array (its bytes gathered and its
    text written without the GIL); a short one holds the GIL all through, and an iterator while it is read."""
    try:
        return len(ids) >= DECODE_PARALLEL_IDS
    except Exception:       # noqa: BLE001  (no length, or one that raises: read item by item, as tiktoken does)
        return False


def _check_threads(num_threads: int) -> None:
    if type(num_threads) is not int or num_threads < 1:
        if isinstance(num_threads, bool) or not isinstance(num_threads, int):
            raise TypeError(f"num_threads must be an int, got {num_threads!r}")
        raise ValueError(f"num_threads must be at least 1, got {num_threads}")


# The attributes a Tokenizer sets on itself (Tokenizer.__reduce__ rebuilds them; a subclass's others are its state)
# Tokenizer.__init__'s arguments, as a class-method constructor passes them to a subclass's __init__ (_run_init),
# and the defaults of those that have one
_INIT_NAMES = ("vocab", "merges", "special_tokens", "pattern", "training")
_INIT_DEFAULTS: dict[str, Any] = {"special_tokens": None, "pattern": GPT2_PATTERN, "training": None}


class _Built(NamedTuple):
    """A tokenizer a class-method constructor built, running a subclass's __init__ (Tokenizer._run_init): the
    values of Tokenizer.__init__'s arguments that make it, and the names of those passed to that __init__."""
    values: dict[str, Any]
    passed: frozenset[str]

    def changed(self, given: dict[str, Any]) -> set[str]:
        """The names of the arguments Tokenizer.__init__ got (`given`) that are not those values: neither the
        objects passed, nor (not passed) Tokenizer.__init__'s defaults."""
        return {name for name, value in given.items()
                if value is not self.values[name]
                and (name in self.passed or name not in _INIT_DEFAULTS or value is not _INIT_DEFAULTS[name])}


_ABSENT = object()      # (_shallow_copy's default of getattr)
_OWN_ATTRIBUTES = frozenset({"_id_objects", "_ids_of_made", "_kind", "_lengths", "_make_merges", "_merges", "_pattern",
                             "_token_pool",
                             "_pool", "_segmenter", "_special_set", "_specials", "_tables", "_training", "_views",
                             "_vocab", "_normalizer", "_unnormalized_made", "_unicode", "_rank_ids"})


def _text_options(directory: StrPath, specials: Iterable[str]) -> Callable[[Tokenizer], Tokenizer]:
    """What a folder's bpe_fast.json says of how text is read (its normalizer, its special tokens that take the
    white space before them, its Unicode reading), read (and checked) now, as a function that gives a tokenizer
    of the folder those."""
    from . import formats

    normalizer = formats.read_normalizer(directory)
    lstrip = formats.read_special_lstrip(directory, specials)
    unicode = formats.read_unicode(directory)
    return lambda made: made.with_normalizer(normalizer).with_special_lstrip(lstrip).with_unicode(unicode)


def _rebuild_from_ranks(ranks: dict[bytes, int], pattern: str, specials: dict[str, int], cls: type[Tokenizer],
                        normalizer: str | None, lstrip: Iterable[str], unicode: str | None) -> Tokenizer:
    """Tokenizer.__reduce__'s for a tokenizer by_ranks_only: made again from its ranks."""
    made = cls.from_tiktoken(ranks, pattern, specials)
    return made.with_normalizer(normalizer).with_special_lstrip(lstrip).with_unicode(unicode)


def _rebuild(vocab: Vocab, merges: Merges, specials: list[str], pattern: str,
             training: dict[str, Any] | None = None, special_ids: list[int] | None = None,
             cls: type[Tokenizer] = Tokenizer, normalizer: str | None = None,
             lstrip: Iterable[str] = (), unicode: str | None = None) -> Tokenizer:
    """Tokenizer.__reduce__'s: the parts of a tokenizer already made (and checked) in another process, not checked
    again (a pickle is trusted as code; GPT-2's 50k merges: the constructor's checks took 40 ms a worker), with
    its special tokens' ids (an id two of them share, as in o200k_harmony, is not the vocabulary's to say), as
    an instance of `cls` (a subclass: its __init__ is not called; pickle then sets the attributes it added),
    normalizing to `normalizer`, its special tokens `lstrip` taking the white space before them, reading
    characters as Unicode `unicode`."""
    made = cls._from_checked(vocab, merges, specials, pattern, training=training, special_ids=special_ids)
    return made.with_normalizer(normalizer).with_special_lstrip(lstrip).with_unicode(unicode)


def _special_id_mapping(special_tokens: Any) -> tuple[dict[str, Any] | None, Any]:
    """(wanted, special_tokens): for special tokens given as tiktoken's {str: id} (from_tiktoken's form), that dict
    and its tokens as a list, which the constructor and from_files take, with each id to be checked once the
    tokenizer has given its own (_check_special_ids); else (None, the special tokens, a str given twice kept once
    where it first appears: it has one id either way, and a subclass whose __init__ appends a special token is
    given it again by load). They are checked later, where the merges' refusal comes first (SpecialTokens)."""
    if isinstance(special_tokens, Mapping):
        wanted = dict(special_tokens)
        return wanted, list(wanted)
    if special_tokens is None or isinstance(special_tokens, (str, bytes, set, frozenset)):
        return None, special_tokens     # (checked where the others are: SpecialTokens)
    seen: set[str] = set()
    once = []
    for token in special_tokens:        # (once: it may be an iterator)
        if isinstance(token, str):
            if token in seen:
                continue
            seen.add(token)
        once.append(token)
    return None, once


def _ids_of_shared_bytes(wanted: dict[str, Any] | None, vocab: Vocab) -> list[int] | None:
    """The ids `wanted` ({str: id}) gives the special tokens, when each is an id the vocabulary holds the token's
    bytes at and some token's bytes are at another id too (GPT-NeoX's "  ", id 50276, also the merge "Ġ Ġ"'s
    token: from_hf reads it so, and tokenizer.special_tokens gives it back); else None, for the constructor's rule
    (a special token takes the id of its bytes, else the next free one; _check_special_ids checks `wanted`)."""
    if not wanted:
        return None
    data = {}
    for token, i in wanted.items():
        try:
            encoded = token.encode("utf-8")
        except (AttributeError, UnicodeEncodeError):        # not a str, or a lone surrogate: the rule's checks name it
            return None
        if type(i) is not int or vocab.get(i) != encoded:
            return None
        data[encoded] = i
    if len(set(data.values())) != len(data):        # an id two special tokens share: the rule's check says it
        return None
    shared = any(token in data and data[token] != i for i, token in vocab.items())
    return list(wanted.values()) if shared else None


def _check_special_ids(wanted: dict[str, Any] | None, tokenizer: Tokenizer) -> Tokenizer:
    """`tokenizer` when each of its special tokens has the id `wanted` gives it (None: ids not given); else
    ValueError naming the first that does not: the constructor gives a special token the id of its bytes in the
    vocabulary or the next free one, and cannot give another."""
    if wanted is not None:
        given = tokenizer.special_tokens
        for token, i in wanted.items():
            if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or i != given[token]:
                raise ValueError(f"special token {token!r} is given id {i!r}, but takes {given[token]}: a special "
                                 "token takes the id of its bytes in the vocabulary, else the next free id (pass a "
                                 "list of str; Tokenizer.from_tiktoken takes {str: id})")
    return tokenizer


def _names(given: Any, rule: str, known: frozenset[str]) -> frozenset[str]:
    """Special tokens `given` (encode's allowed_special or disallowed_special, restricted_to's argument; not a str)
    as a frozenset of str; else TypeError, `rule` (what it must be) naming the first item that is not a str
    (tiktoken takes str only: bytes or an id were ignored in allowed_special, and failed disallowed_special's
    search of the text with a message about paths), or what was given when it is no collection. A set within
    `known` (the tokenizer's special tokens, all str) is not looked at item by item: the usual call pays a subset
    test only, as before the check."""
    if isinstance(given, Iterator):     # (read once)
        given = list(given)
    try:
        names = frozenset(given)
    except TypeError:       # not iterable, or an item that is not hashable
        if not isinstance(given, Iterable):
            raise TypeError(f"{rule}, got {type(given).__name__}") from None
        names = None
    if names is None or not (names <= known or all(isinstance(name, str) for name in names)):
        token = next(name for name in given if not isinstance(name, str))
        raise TypeError(f"{rule}, got {token!r} in it")
    return names


def _check_text(text: object) -> str:
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return text


def _check_chunk(chunk: object) -> str:
    if not isinstance(chunk, str):
        raise TypeError(f"encode_iterable expects str chunks, got {type(chunk).__name__}")
    return chunk


def _as_str(chunk: object) -> str:
    """A chunk of encode_iterable that is not exactly a str, as one (a str subclass's own text), or TypeError."""
    return str.__str__(_check_chunk(chunk))


def _hold_high_surrogate(chunk: str) -> tuple[str, str]:
    """(chunk, carry): a high surrogate ending the chunk is held back, as the next chunk may start with its low
    half; joined, the two are one character once surrogates are replaced (see _replace_surrogates)."""
    if chunk and "\ud800" <= chunk[-1] <= "\udbff":
        return chunk[:-1], chunk[-1]
    return chunk, ""


def _has_surrogate(text: str) -> bool:
    """True when `text` holds a surrogate (found by the UTF-8 conversion failing: faster than a search)."""
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _replace_surrogates(text: str) -> str:
    # what tiktoken does with text that holds lone surrogates
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _check_sparsity(top: int, n: int) -> None:
    """ValueError when a vocabulary of n tokens whose largest id is top is too sparse for the id-indexed tables
    (checked before they are built: their size follows the largest id)."""
    problem = sparsity_problem(top, n)
    if problem:
        raise ValueError(problem)


def _check_vocab(vocab: Any) -> tuple[Vocab, tuple[NDArray[np.uint8], NDArray[np.int64], NDArray[np.int64]] | None]:
    """(a new dict[int, bytes], its pack_vocab arrays when it was checked natively, else None); TypeError /
    ValueError naming the bad entry."""
    from ._gpt2_files import pack_vocab

    try:
        items = None if type(vocab) is dict else list(vocab.items())
    except AttributeError:
        raise TypeError(f"vocab must be a dict[int, bytes], got {type(vocab).__name__}") from None
    # the usual case checked natively (a 50k vocabulary in a millisecond); else the loop below names the entry.
    # Another mapping's items may hold a key twice, an unhashable key or an entry that is not a pair: the loop
    # then goes through them as given (the first bad entry named; the last of a key's entries kept)
    if items is None:
        out: Vocab = vocab.copy()
        packed = pack_vocab(out, MAX_TOKEN_ID)
        if packed is not None:
            return out, packed
        items = list(out.items())
    else:
        try:
            out = dict(items)
        except (TypeError, ValueError):
            pass
        else:
            packed = pack_vocab(out, MAX_TOKEN_ID) if len(out) == len(items) else None
            if packed is not None:
                return out, packed
    for i, token in items:      # each entry a pair before any is checked (ValueError: not a pair)
        pass
    out = {}
    for i, token in items:
        if type(i) is not int:
            if isinstance(i, (bool, np.bool_)):      # before operator.index, which makes True the int 1
                raise TypeError(f"vocab id {i!r} is not an int")
            try:
                i = operator.index(i)
            except TypeError:
                raise TypeError(f"vocab id {i!r} is not an int") from None
        if not 0 <= i <= MAX_TOKEN_ID:
            raise ValueError(f"vocab id {i} is out of range 0..{MAX_TOKEN_ID}")
        if not isinstance(token, (bytes, bytearray, memoryview)):
            raise TypeError(f"vocab token {i} is {type(token).__name__}, not bytes")
        token = bytes(token)
        if not token:
            raise ValueError(f"vocab token {i} is empty")
        out[i] = token
    return out, None


def _plain_arrays(packed_vocab: tuple[NDArray[np.uint8], NDArray[np.int64], NDArray[np.int64]] | None,
                  merges: Any) -> formats.GPT2Arrays | None:
    """A vocab packed by _check_vocab and a list of merges as formats.GPT2Arrays, the merge rule's check still to
    ask (as GPT-2's files read natively), when the merges are tuples of two bytes and everything is plainly
    regular (formats.gpt2_arrays); else None."""
    from ._gpt2_files import pack_pairs

    from . import formats

    if packed_vocab is None or not isinstance(merges, list):
        return None
    packed = pack_pairs(merges)
    return None if packed is None else formats.gpt2_arrays(*packed_vocab, *packed)


def _rule_problem(merges: Merges) -> ValueError | None:
    """The constructor's error for merges (checked by _check_merges) that the merge rule's check refuses
    (bpe_fast.merge_rule), naming the merge; None when it reads them as listed."""
    from .merge_rule import list_rule_problem

    problem = list_rule_problem(merges, lambda j: f"merge {j}")
    if problem is None:
        return None
    k, what = problem
    return ValueError(f"merge {k} {merges[k]!r}{what}")


def _check_merges(merges: Any, vocab: Mapping[int, bytes]) -> Merges:
    """A new list[tuple[bytes, bytes]]; each token of a merge and their concatenation must be in vocab."""
    if isinstance(merges, (str, bytes)):
        raise TypeError("merges must be a list of (bytes, bytes) pairs")
    known = set(vocab.values())
    merges = list(merges)
    # the usual case, tuples of two bytes, checked by loops in C; else the loop below names the bad merge
    if set(map(type, merges)) <= {tuple} and set(map(len, merges)) <= {2}:
        lefts = list(map(operator.itemgetter(0), merges))
        rights = list(map(operator.itemgetter(1), merges))
        if (set(map(type, lefts)) <= {bytes} and set(map(type, rights)) <= {bytes} and known.issuperset(lefts)
                and known.issuperset(rights) and known.issuperset(map(bytes.__add__, lefts, rights))):
            return merges
    out = []
    for k, merge in enumerate(merges):
        try:
            a, b = merge
        except (TypeError, ValueError):
            raise ValueError(f"merge {k} is not a pair: {merge!r}") from None
        if not isinstance(a, (bytes, bytearray)) or not isinstance(b, (bytes, bytearray)):
            raise TypeError(f"merge {k} must be a pair of bytes, got {merge!r}")
        a, b = bytes(a), bytes(b)
        for token in (a, b, a + b):
            if token not in known:
                raise ValueError(f"merge {k} ({a!r}, {b!r}): token {token!r} is not in the vocabulary")
        out.append((a, b))
    return out


def _build_tables(vocab: Mapping[int, bytes], merges: Merges, ids_of: Mapping[bytes, int]) -> BPETables:
    """The encoder's tables of a vocabulary and merges as Python objects. When every byte is a token and each
    merge makes a token of its own, by the ranks rule one pair a token, each merge's two tokens expected
    (tables_made_by_merging, as the array path builds them): when that makes every token from its merge's parts,
    each is a permanent entry, with no token's bytes merged; else BPETables finds the permanent entries by
    merging every token's bytes (which grows about with the cube of a run of one letter's length: 1.8 s for a run
    2,000 long, 0.01 s by the split trees)."""
    arrays = _table_arrays(vocab, merges, ids_of)
    if merges and len(arrays["ranked_ids"]) == len(merges) and np.all(arrays["byte_ids"] >= 0):
        left = np.fromiter(map(ids_of.__getitem__, map(operator.itemgetter(0), merges)), dtype=np.int64,
                           count=len(merges))
        right = np.fromiter(map(ids_of.__getitem__, map(operator.itemgetter(1), merges)), dtype=np.int64,
                            count=len(merges))
        made = tables_made_by_merging(**arrays, **_expected_parts((left, right)))
        if _made_as_listed(made, left, right):
            return made
    return BPETables(**arrays)


def _table_arrays(vocab: Mapping[int, bytes], merges: Merges, ids_of: Mapping[bytes, int]) -> TableArrays:
    """BPETables' arguments (but `permanent`) as a dict of arrays."""
    byte_ids = np.array([ids_of.get(bytes([b]), -1) for b in range(256)], dtype=np.int32)
    # each merged token once, where its first merge made it: dict keys keep the first insertion's place,
    # so their order is rank order (a list comprehension of the joins: about 3x faster than map over zip(*merges))
    ranked_tokens = list(dict.fromkeys([a + b for a, b in merges]))
    n_ranked = len(ranked_tokens)
    ranked_pool = np.frombuffer(b"".join(ranked_tokens), dtype=np.uint8)
    ranked_offsets = np.zeros(n_ranked + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, ranked_tokens), dtype=np.int64, count=n_ranked), out=ranked_offsets[1:])
    ranked_ids = np.fromiter(map(ids_of.__getitem__, ranked_tokens), dtype=np.int32, count=n_ranked)
    return dict(byte_ids=byte_ids, ranked_pool=ranked_pool, ranked_offsets=ranked_offsets, ranked_ids=ranked_ids,
                **_decode_arrays(vocab))


def _packed_cache_arrays(pool: NDArray[np.uint8], offsets: NDArray[np.int64], ids: NDArray[np.int64],
                         packed_merges: tuple[NDArray[np.uint8], NDArray[np.int64]], index: TokenIndex,
                         parts: tuple[NDArray[np.int32], NDArray[np.int32]] | None = None
                         ) -> tuple[TableArrays, NDArray[np.int32]] | None:
    """save's cache arrays: _table_arrays(vocab, merges, ids_of) and the ids of each merge's two tokens (a's, b's,
    one merge after the other), a token's id its bytes' smallest, made from the tokens as arrays (no Python object
    a merge: 0.1 s of o200k_base's save, where the dicts and generators took 0.7): the vocabulary as
    Tokenizer._vocab_arrays gives it (ids rising) and index (TokenIndex) of its tokens, the merges as pack_pairs
    does; parts, when known, the ids of each merge's two tokens (left, right: not looked up). None when a token is
    not found (the caller then makes them from the objects)."""
    from .token_arrays import first_occurrences, gather_tokens

    merge_pool, merge_offsets = packed_merges
    lookups = ((0, 2),) if parts is not None else ((0, 1), (1, 1), (0, 2))
    found = [index.find(merge_pool, merge_offsets, which, 2, span) for which, span in lookups]
    single = index.find(np.arange(256, dtype=np.uint8), np.arange(257, dtype=np.int64))
    if single is None or any(hits is None or np.any(hits < 0) for hits in found):
        return None
    if parts is not None:           # (as indices into ids, as find gives them)
        at = np.zeros(int(ids[-1]) + 1 if len(ids) else 0, dtype=np.int64)
        at[ids] = np.arange(len(ids))
        found = [at[parts[0]], at[parts[1]], found[0]]
    left, right, joined = found
    assert left is not None and right is not None and joined is not None
    ranked = joined[first_occurrences(joined)]
    ranked_pool, ranked_offsets = gather_tokens(pool, offsets, ranked)
    arrays: TableArrays = dict(byte_ids=np.where(single >= 0, ids[single], -1).astype(np.int32),
                               ranked_pool=ranked_pool, ranked_offsets=ranked_offsets,
                               ranked_ids=ids[ranked].astype(np.int32), **_decode_arrays_of(pool, offsets, ids))
    return arrays, np.stack([ids[left], ids[right]], axis=1).astype(np.int32).ravel()


def _check_whole_lookup(ranked: RankedTokens, every_way: BPETables) -> None:
    """For ranks some of whose tokens merging does not make, encoded as tiktoken does, each ranked token looked up
    whole first (every_way: their tables, every token permanent): the encoder looks up pre-tokens of up to
    MAX_WHOLE_PIECE bytes, so a longer token must be what merging its bytes gives (helper-111: [97] * 300 was
    merged, not looked up), or the ranks are refused, naming it (a FormatError naming the file they came from)."""
    from . import formats

    lengths = np.diff(ranked.offsets)
    for k in np.flatnonzero(lengths > MAX_WHOLE_PIECE).tolist():
        token = ranked.pool[ranked.offsets[k]:ranked.offsets[k + 1]]
        if every_way.merge_bytes(token) != [int(ranked.values[k])]:
            shown = f"{bytes(token[:60])!r}... ({int(lengths[k]):,} bytes, rank {int(ranked.values[k])})"
            message = (f"the token {shown} is not what merging its bytes by the ranks gives, and is longer than the "
                       f"{MAX_WHOLE_PIECE} bytes of a pre-token bpe_fast looks up whole: tiktoken gives it to a "
                       "pre-token that is the whole token, bpe_fast cannot (these ranks hold tokens that merging "
                       "does not make, as Llama 3's, which bpe_fast looks up whole up to that length)")
            if ranked.path is not None:
                raise formats.FormatError(ranked.path, int(ranked.lines[k]) if ranked.lines is not None else None,
                                          message)
            raise ValueError(f"ranks: {message}")


def _ranks_table_arrays(ranked: RankedTokens, special_tokens: Mapping[str, int]) -> TableArrays:
    """BPETables' arguments, `permanent` included, for tiktoken's ranks and special tokens ({str: id}, checked
    by ranks.check_tiktoken_specials), for ranks that make every token (ranked.recover() or BPETables'
    made_by_merging checks it). The same as _table_arrays and permanent_mask() give for the vocabulary and the
    recovered merges: the merged tokens are the multi-byte ones in rank order, their ids their ranks, and each
    is permanent (merging its own bytes gives itself). Made natively (bpe_fast._ranks.ranks_table_arrays), as
    array.array buffers: no NumPy."""
    holders = id_holders(special_tokens)        # an id several special tokens share decodes to the first's bytes
    extra = [name.encode("utf-8") for name in holders.values()]
    return ranks_table_arrays(ranked.pool, ranked.offsets, ranked.values, b"".join(extra),
                              array.array("q", itertools.accumulate(map(len, extra), initial=0)),
                              array.array("q", holders))


def _refuser(files: formats.GPT2Arrays, merges_filepath: StrPath) -> Callable[[], NoReturn]:
    """_setup_arrays' `refuse` for GPT-2's files read natively: the merge rule's check found a difference, which
    read_merges names with its line (as it reads the file again)."""
    from . import formats

    def refuse() -> NoReturn:
        formats.read_merges(merges_filepath, files.vocab())
        raise formats.FormatError(merges_filepath, None, "changed while it was read: the merges first read from "
                                  "it are refused by the merge rule's check (bpe_fast.merge_rule), those read "
                                  "again are not")

    return refuse


def _cached_tables(arrays: TableArrays) -> BPETables | None:
    """The encoder's tables from a cache's arrays (formats.read_cache: the table arrays and merge_ids); None when
    they show that its merges are not what the ranks rule makes of its tokens. With every byte a token and each
    merged token made by one merge, they are built by the rule one pair a token (tables_made_by_merging), which
    checks that each token is made from its merge's two tokens; otherwise (tokens made by several merges, as
    in files converted from tiktoken's ranks) from the cache's arrays as they are, as save wrote them."""
    arrays = dict(arrays)
    merge_ids = arrays.pop("merge_ids")
    if np.any(arrays["byte_ids"] < 0) or len(merge_ids) != len(arrays["ranked_ids"]):
        return BPETables(**arrays)
    del arrays["permanent"]     # the rule's tables: every token permanent, as it makes every one
    made = tables_made_by_merging(**arrays, **_expected_parts((merge_ids[:, 0], merge_ids[:, 1])))
    return made if _made_as_listed(made, merge_ids[:, 0], merge_ids[:, 1]) else None


def _expected_parts(listed: tuple[NDArray[np.integer[Any]], NDArray[np.integer[Any]]] | None) -> TableArrays:
    """tables_made_by_merging's expected_left / expected_right for the ids of each merged token's listed merge
    (none when not known, or when an id does not fit in 32 bits: the bytes are then merged)."""
    if listed is None or any(len(ids) and (ids.min() < 0 or ids.max() > np.iinfo(np.int32).max) for ids in listed):
        return {}
    return dict(expected_left=np.ascontiguousarray(listed[0], dtype=np.int32),
                expected_right=np.ascontiguousarray(listed[1], dtype=np.int32))


def _made_as_listed(tables: BPETables, left: NDArray[np.integer[Any]], right: NDArray[np.integer[Any]]) -> bool:
    """Whether tables_made_by_merging made every merged token, token k of the tokens with ids left[k] and
    right[k] (its listed merge's): the merge list then reads as the ranks rule does (bpe_fast.merge_rule)."""
    made_left, made_right, unmade, _ = tables.splits()
    return bool(unmade < 0 and np.array_equal(made_left, left) and np.array_equal(made_right, right))


def _first_merge_ids(files: formats.GPT2Arrays) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """(left, right): the ids of the two tokens of the first merge of each merged token of `files`, in the order
    of _gpt2_table_arrays."""
    from .token_arrays import first_occurrences

    assert files.parts is not None
    first = first_occurrences(files.joined)
    return files.vocab_ids[files.parts[0][first]], files.vocab_ids[files.parts[1][first]]


def _later_merge_ids(files: formats.GPT2Arrays) -> TableArrays:
    """tables_made_by_merging's other_starts / other_left / other_right for the merges of `files` after the first
    of each merged token (merge_rule.later_pairs), ids as _first_merge_ids gives them."""
    from .merge_rule import later_pairs
    from .token_arrays import first_occurrences

    assert files.parts is not None
    first = first_occurrences(files.joined)
    rank = np.full(len(files.vocab_ids), -1, dtype=np.int64)
    rank[files.joined[first]] = np.arange(len(first))
    return later_pairs(rank[files.joined], first, files.vocab_ids[files.parts[0]], files.vocab_ids[files.parts[1]],
                       len(first))


def _added_specials(files: formats.GPT2Arrays, wanted: list[bytes], found: NDArray[np.int64]
                    ) -> tuple[formats.GPT2Arrays, list[int], Vocab] | None:
    """For special tokens (`wanted`, their UTF-8 bytes) some of which the vocabulary of `files` lacks (found: each
    one's vocab index, -1 when it lacks it; as index_tokens gives): (files with those tokens added to the
    vocabulary, each special token's id, {id: bytes} of those added), the ids _setup's general build gives
    (a token's bytes' id, else the next free id, in the order given). None when that is not plainly so (the
    general build then adds them, and says what is wrong): tokens that share bytes, a special token of one byte
    (it would be that byte's token), no id left."""
    ids = files.vocab_ids
    missing = np.flatnonzero(found < 0).tolist()
    top = int(ids.max()) if len(ids) else -1
    if not files.distinct or any(len(wanted[k]) < 2 for k in missing) or top + len(missing) > MAX_TOKEN_ID:
        return None
    new_ids = list(range(top + 1, top + 1 + len(missing)))
    special_ids = ids[found[found >= 0]].tolist()       # those the vocabulary holds, then those added, in place
    for k, i in zip(missing, new_ids):
        special_ids.insert(k, i)
    extra = [wanted[k] for k in missing]
    return files.with_tokens(extra, new_ids), special_ids, dict(zip(new_ids, extra))


def _gpt2_table_arrays(files: formats.GPT2Arrays) -> TableArrays:
    """BPETables' arguments for GPT-2's files read as arrays: what _table_arrays gives for their vocabulary and
    merges, with no Python object a token (and `permanent`, all ones, when files.all_permanent). The merged
    tokens are the joins in the order of their first merge."""
    from .token_arrays import first_occurrences, gather_tokens

    pool, offsets, ids = files.vocab_pool, files.vocab_offsets, files.vocab_ids
    lengths = np.diff(offsets)
    byte_ids = np.full(256, -1, dtype=np.int32)
    singles = np.flatnonzero(lengths == 1)
    # a byte two ids hold (a model's token and an added token of its bytes, from_hf): the smaller, the model's,
    # as _table_arrays' ids_of gives (assigned last, it is the one kept)
    singles = singles[np.argsort(-ids[singles], kind="stable")]
    byte_ids[pool[offsets[singles]]] = ids[singles]
    first = first_occurrences(files.joined)
    ranked = files.joined[first]     # vocab indices of the merged tokens, in rank order
    merge_offsets = files.merge_offsets
    if (len(first) == len(files.joined) and len(merge_offsets) == 2 * len(first) + 1 and merge_offsets[0] == 0
            and merge_offsets[-1] == len(files.merge_pool)):
        # each merge makes a token of its own: the merged tokens in rank order are the merges' pairs, end to end
        # (their bytes are the joins'), with no copy (a vocabulary of long runs holds 80 MB of them)
        ranked_pool, ranked_offsets = files.merge_pool, np.ascontiguousarray(merge_offsets[::2])
    else:
        ranked_pool, ranked_offsets = gather_tokens(pool, offsets, ranked)
    arrays: TableArrays = dict(byte_ids=byte_ids, ranked_pool=ranked_pool, ranked_offsets=ranked_offsets,
                               ranked_ids=ids[ranked].astype(np.int32), **_decode_arrays_of(pool, offsets, ids))
    if files.all_permanent:
        arrays["permanent"] = np.ones(len(ranked), dtype=np.uint8)
    return arrays


def _byte_pieces(pieces: Iterable[bytes]) -> list[bytes]:
    """`pieces` as a list, each a bytes-like object (a TypeError names the first that is not)."""
    items = list(pieces)
    for k, piece in enumerate(items):
        if not isinstance(piece, (bytes, bytearray, memoryview)):
            raise TypeError(f"pieces[{k}] must be bytes, got {type(piece).__name__}")
    return items


def _decode_arrays_of(pool: NDArray[np.uint8], offsets: NDArray[np.int64], ids: NDArray[np.int64]) -> TableArrays:
    """_decode_arrays of the vocabulary {ids[k]: pool[offsets[k]:offsets[k + 1]]} (distinct ids)."""
    lengths = np.diff(offsets)
    size = int(ids.max()) + 1 if len(ids) else 0
    by_id = np.zeros(size, dtype=np.int64)
    by_id[ids] = lengths
    known = np.zeros(size, dtype=np.uint8)
    known[ids] = 1
    decode_offsets = np.zeros(size + 1, dtype=np.int64)
    np.cumsum(by_id, out=decode_offsets[1:])
    if np.all(ids[1:] > ids[:-1]):      # the tokens in id order already (ranks, then the special tokens)
        return dict(decode_pool=pool, decode_offsets=decode_offsets, known=known)
    decode_pool = np.empty(len(pool), dtype=np.uint8)      # each token's bytes moved to where its id puts them
    decode_pool[np.repeat(decode_offsets[ids] - offsets[:-1], lengths) + np.arange(len(pool))] = pool
    return dict(decode_pool=decode_pool, decode_offsets=decode_offsets, known=known)


def _decode_arrays(vocab: Mapping[int, bytes]) -> TableArrays:
    """BPETables' decoding arguments: every id's bytes end to end, their offsets, and which ids are known."""
    size = max(vocab) + 1 if vocab else 0
    lengths = np.zeros(size, dtype=np.int64)
    known = np.zeros(size, dtype=np.uint8)
    order = np.fromiter(vocab.keys(), dtype=np.int64, count=len(vocab))
    lengths[order] = np.fromiter(map(len, vocab.values()), dtype=np.int64, count=len(vocab))
    known[order] = 1
    decode_offsets = np.zeros(size + 1, dtype=np.int64)
    np.cumsum(lengths, out=decode_offsets[1:])
    decode_pool = np.frombuffer(b"".join(map(vocab.get, range(size), itertools.repeat(b"", size))), dtype=np.uint8)
    return dict(decode_pool=decode_pool, decode_offsets=decode_offsets, known=known)


def _id_array(ids: Any) -> NDArray[np.int64]:
    """ids as a 1-D int64 array of the caller's own (never the array given: decode_bytes(ids, private=True) reads
    it as is); TypeError for non-integers, ValueError naming an id beyond int64."""
    if isinstance(ids, np.ma.MaskedArray):      # (its masked items were decoded as if unmasked)
        if np.ma.getmaskarray(ids).any():
            raise TypeError("ids must be a sequence of int, got a masked array with ids masked: pass "
                            "ids.compressed() for the unmasked ones")
        ids = ids.data
    listed = not isinstance(ids, np.ndarray)   # items of a sequence (looked at one by one for bools below)
    if listed:
        # (a set or a dict has no order; NumPy took one for a single object, "one-dimensional, got shape ()");
        # a byte string is text's bytes given by mistake (bytes were refused, a bytearray read as ids); a view
        # of bytes as wider items (memoryview(data).cast("H"), nanoGPT's uint16 ids) is ids
        if isinstance(ids, (str, bytes, bytearray, collections.abc.Set, collections.abc.Mapping)) or (
                isinstance(ids, memoryview) and ids.format in ("B", "b", "c")):
            raise TypeError(f"ids must be a sequence of int, got {type(ids).__name__}")
        if not hasattr(ids, "__len__"):
            if not isinstance(ids, Iterable):
                raise TypeError(f"ids must be a sequence of int, got {type(ids).__name__}")
            ids = list(ids)
        try:
            arr = np.asarray(ids)
        except (OverflowError, ValueError):
            arr = np.asarray(ids, dtype=object)
        if arr.dtype.kind not in "iubO":     # each item looked at, so that the error names the first that is not an
            arr = np.asarray(ids, dtype=object)     # int (NumPy's int64 and uint64 together make float64; [1, "a"]
            # an array of str, which was named as "an array of <U21"); a list's bools are below
    else:
        arr = ids
    if arr.ndim != 1:
        raise ValueError(f"ids must be one-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    kind = arr.dtype.kind
    # a list's bools are ints (decode([True]) is decode([1]), as tiktoken's); a bool array, or NumPy's bools in a
    # list, are not (tiktoken: "'numpy.bool' object cannot be interpreted as an integer"), among ints neither
    # [1, np.True_] is an int array, the bool a 0 or 1 in it: the items are looked at only when one is there
    if kind == "i" and listed and (arr <= 1).any() and np.bool_ in map(type, ids):
        k, value = next((k, i) for k, i in enumerate(ids) if type(i) is np.bool_)
        raise TypeError(f"token id {value!r} (at position {k}) is not an int")
    # the result is always a copy, made before its ids are checked: they are checked, then read again (here and by
    # the native decoder), and another thread could write the caller's array in between (a uint64 id checked
    # below 2**63 and read back as a negative one)
    if kind == "i" or (kind == "b" and listed and all(type(i) is bool for i in ids)):
        return np.array(arr, dtype=np.int64)
    if kind == "b" and listed:      # NumPy's bools among them: the first named, as for [1, np.True_] above
        k, value = next((k, i) for k, i in enumerate(ids) if type(i) is not bool)
        raise TypeError(f"token id {value!r} (at position {k}) is not an int")
    if kind == "u":
        out = np.array(arr, dtype=np.int64)            # (2**63 and more wrap to negative: the first is named)
        if arr.dtype.itemsize == 8 and (out < 0).any():
            k = int(np.argmax(out < 0))
            raise ValueError(f"unknown token id {int(out[k]) + 2 ** 64} (at position {k})")
        return out
    if kind == "O":
        out = np.empty(arr.size, dtype=np.int64)
        values = []
        for k, value in enumerate(arr):     # every item first: one that is not an int anywhere is the error
            try:
                values.append(operator.index(value))
            except TypeError:
                raise TypeError(f"token id {value!r} (at position {k}) is not an int") from None
        for k, value in enumerate(values):
            if value < 0:
                raise ValueError(f"negative token id {value} (at position {k})")
            if value > _INT32_MAX:
                raise ValueError(f"unknown token id {value} (at position {k})")
            out[k] = value
        return out
    raise TypeError(f"token ids must be integers, got an array of {arr.dtype}")
