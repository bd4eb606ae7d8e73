"""Special tokens: one checked value (SpecialTokens) with their forms, splitting text on them (longest match
first), tiktoken's disallowed check."""
from __future__ import annotations

import functools
import operator
import os
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple, overload

if TYPE_CHECKING:
    import regex
    from typing_extensions import TypeAlias

    from ._scan import SpecialMatcher

    _StrRegex: TypeAlias = regex.Pattern[str]
# (`regex` is imported where a regex of special tokens is compiled: the native paths match them with SpecialMatcher)


def check_special_tokens(special_tokens: Iterable[str] | None) -> tuple[str, ...]:
    """Return special_tokens as a tuple of str, or raise ValueError/TypeError naming the bad one. A set has no
    order: its tokens are sorted (their order gives them their ids: in a set's own order, which follows the
    process's string hashes, they changed from run to run)."""
    if special_tokens is None:
        return ()
    if isinstance(special_tokens, (str, bytes)):
        raise TypeError("special_tokens must be a list of str, not a single string")
    tokens = tuple(special_tokens)
    if isinstance(special_tokens, (set, frozenset)) and all(isinstance(tok, str) for tok in tokens):
        tokens = tuple(sorted(tokens))
    seen: set[str] = set()
    for tok in tokens:
        if not isinstance(tok, str):
            raise TypeError(f"special token {tok!r} is not a str")
        if not tok:
            raise ValueError("special tokens must not be empty strings")
        if tok in seen:
            raise ValueError(f"duplicate special token {tok!r}")
        try:
            tok.encode("utf-8")
        except UnicodeEncodeError as e:     # a lone surrogate: a special token is matched in UTF-8
            # (U+DC80-DCFF: how Python passes a byte of an argument that is not UTF-8)
            escaped = "\udc80" <= tok[e.start] <= "\udcff"
            raise ValueError(f"special token {tok!r} holds a lone surrogate at index {e.start}: it has no UTF-8"
                             + (" (a byte that is not UTF-8, as a command line passes it?)" if escaped else "")) \
                from None
        seen.add(tok)
    return tokens


def first_alias(ids: Mapping[str, int]) -> tuple[str, str, int] | None:
    """(first, other, id) for the first special token whose id an earlier one has (tiktoken's o200k_harmony gives
    <|endofprompt|> and <|reserved_200018|> the id 200018: both encode to it, it decodes to the first); None when
    each special token has an id of its own.

    >>> first_alias({"<|a|>": 5, "<|b|>": 6, "<|c|>": 5})
    ('<|a|>', '<|c|>', 5)
    """
    holders = id_holders(ids)
    for name, i in ids.items():
        if holders[i] != name:
            return holders[i], name, i
    return None


class SharedId(NamedTuple):
    """Special tokens of one id (tiktoken's o200k_harmony gives <|endofprompt|> and <|reserved_200018|> the id
    200018): each encodes to it, and it decodes to the holder's bytes. names: those matched, the longest first
    (as the matchers try them: the text holds the first found where the token starts); holder: the special
    token whose bytes the id holds, the first given (id_holders)."""
    names: tuple[str, ...]
    holder: str


def id_holders(ids: Mapping[str, int]) -> dict[int, str]:
    """{id: the special token whose bytes the id holds (decodes to)}: of special tokens sharing an id, the first
    given; in the order the ids first occur.

    >>> id_holders({"<|a|>": 5, "<|b|>": 6, "<|c|>": 5})
    {5: '<|a|>', 6: '<|b|>'}
    """
    holders: dict[int, str] = {}
    for name, i in ids.items():
        holders.setdefault(i, name)
    return holders


def shared_ids(ids: Mapping[str, int], holders: Mapping[int, str] | None = None) -> dict[int, SharedId]:
    """{id: SharedId} for each id whose special tokens in `ids` are not just the one whose bytes it holds: several
    share it, or (with `holders`, {id: special token} for ids whose holder is not in `ids`: a tokenizer matching
    only some of its special tokens) the holder is not among them. In the order the ids first occur.

    >>> shared_ids({"<|a|>": 5, "<|b|>": 6, "<|cc|>": 5})
    {5: SharedId(names=('<|cc|>', '<|a|>'), holder='<|a|>')}
    >>> shared_ids({"<|b|>": 6, "<|cc|>": 5}, holders={5: "<|a|>"})
    {5: SharedId(names=('<|cc|>',), holder='<|a|>')}
    """
    names: dict[int, list[str]] = {}
    for name in sorted(ids, key=_match_order):
        names.setdefault(ids[name], []).append(name)
    found = id_holders(ids) | dict(holders or {})
    return {i: SharedId(tuple(names[i]), found[i]) for i in dict.fromkeys(ids.values())
            if names[i] != [found[i]]}


def _match_order(token: str) -> tuple[int, bytes]:
    """The order the native matchers try special tokens in: the longest UTF-8 first (a token that is the start
    of another loses to it), then by bytes."""
    data = token.encode("utf-8")
    return -len(data), data


def first_prefix_pair(tokens: Iterable[str]) -> tuple[str, str] | None:
    """(short, long) for the first two special tokens (in sorted order) of which one, short, is the start of the
    other; None when no special token starts another.

    >>> first_prefix_pair(["<|a|>b", "<|b|>", "<|a|>"])
    ('<|a|>', '<|a|>b')
    >>> first_prefix_pair(["xab", "abc"]) is None
    True
    """
    names = sorted(tokens)
    for short, long in zip(names, names[1:]):       # a token's extensions sort right after it
        if long.startswith(short):
            return short, long
    return None


def check_no_alias(ids: Mapping[str, int], files: str) -> None:
    """ValueError when two special tokens share an id (first_alias): `files` (bpe_fast's, HF's) give each special
    token an id of its own, so they cannot say it."""
    alias = first_alias(ids)
    if alias is not None:
        first, other, i = alias
        raise ValueError(f"special tokens {first!r} and {other!r} share the id {i} (as in tiktoken's o200k_harmony); "
                         f"{files} give each special token an id of its own, so they cannot hold this tokenizer")


class SpecialTokens(Sequence[str]):
    """The special tokens of a tokenizer or of a counting run, checked once, with every form their users need:
    built here, passed everywhere, never derived again (and never parsed back out of a regex).

    tokens: the str tokens in the order given; utf8: their UTF-8 bytes, the longest first (the order the
    native matchers try them in, so a token that is a prefix of another loses to it, as in the regex);
    ids: {str: id} when the tokens have ids (a tokenizer's), else None; utf8_ids: the ids in utf8's order;
    id_of_utf8: {bytes: id}; shared: shared_ids's {id: SharedId} of the ids several of them share (o200k_harmony's
    200018), or whose bytes are a special token not among them (`holders`, {id: special token}: restricted_to
    keeps them); regex: a compiled `regex` matching any of them, the longest first; matcher: the native
    bpe_fast._scan.SpecialMatcher over utf8. The last three are made on first use. lstrip: the tokens that take
    the white space before them (HF's added tokens with "lstrip": true, as RoBERTa's <mask>; see
    bpe_fast._scan.SpecialMatcher), a frozenset; utf8_lstrip: a flag a token in utf8's order. A value: its
    attributes cannot be set, and its mappings (ids, id_of_utf8, shared) are read-only views (a tokenizer hands
    its own out: tok.special_token_set.ids["<|x|>"] = 5 changed what tok.special_tokens said).

    >>> st = SpecialTokens(["<|a|>", "<|a|>b"], ids=[300, 301])
    >>> st.tokens, st.utf8, st.utf8_ids, st.regex.findall("x<|a|>b<|a|>")
    (('<|a|>', '<|a|>b'), (b'<|a|>b', b'<|a|>'), (301, 300), ['<|a|>b', '<|a|>'])
    >>> SpecialTokens(["<|a|>", "<|a|>"])
    Traceback (most recent call last):
    ...
    ValueError: duplicate special token '<|a|>'
    """

    tokens: tuple[str, ...]
    utf8: tuple[bytes, ...]
    ids: Mapping[str, int] | None       # (read-only views: MappingProxyType)
    utf8_ids: tuple[int, ...]
    id_of_utf8: Mapping[bytes, int]
    _made = False       # set at the end of __init__: from then on no attribute can be set (__setattr__)

    def __init__(self, special_tokens: Iterable[str] | None = (), ids: Iterable[int] | None = None,
                 holders: Mapping[int, str] | None = None, lstrip: Iterable[str] = ()) -> None:
        self.tokens = check_special_tokens(special_tokens)
        self._holders = dict(holders or {})
        self.lstrip = frozenset(lstrip)
        if not self.lstrip <= set(self.tokens):
            raise ValueError(f"lstrip: {sorted(self.lstrip - set(self.tokens))[0]!r} is not one of the special "
                             f"tokens")
        order = sorted(range(len(self.tokens)), key=lambda k: _match_order(self.tokens[k]))
        self.utf8 = tuple(self.tokens[k].encode("utf-8") for k in order)
        self.utf8_lstrip = tuple(self.tokens[k] in self.lstrip for k in order) if self.lstrip else ()
        if ids is None:
            self.ids, self.utf8_ids, self.id_of_utf8 = None, (), MappingProxyType({})
        else:
            id_list = [operator.index(i) for i in ids]
            if len(id_list) != len(self.tokens):
                raise ValueError(f"{len(self.tokens)} special tokens but {len(id_list)} ids")
            self.ids = MappingProxyType(dict(zip(self.tokens, id_list)))
            self.utf8_ids = tuple(id_list[k] for k in order)
            self.id_of_utf8 = MappingProxyType(dict(zip(self.utf8, self.utf8_ids)))
        self._made = True

    def __setattr__(self, name: str, value: object) -> None:
        if self._made:
            raise AttributeError(f"SpecialTokens is read-only: {name!r} cannot be set")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"SpecialTokens is read-only: {name!r} cannot be deleted")

    @classmethod
    def of(cls, special_tokens: SpecialTokens | Iterable[str] | None) -> SpecialTokens:
        """`special_tokens` itself when it is a SpecialTokens, else SpecialTokens(special_tokens)."""
        return special_tokens if isinstance(special_tokens, SpecialTokens) else cls(special_tokens)

    def restricted_to(self, keep: Collection[str]) -> SpecialTokens:
        """The same tokens (and ids) without those not in `keep`, in the same order; the holders of the ids they
        share (shared) are kept, whether kept or not."""
        kept = [t for t in self.tokens if t in keep]
        lstrip = self.lstrip.intersection(kept)
        if self.ids is None:
            return type(self)(kept, lstrip=lstrip)
        return type(self)(kept, [self.ids[t] for t in kept], {i: s.holder for i, s in self.shared.items()}, lstrip)

    def with_lstrip(self, lstrip: Iterable[str]) -> SpecialTokens:
        """The same tokens (and ids, holders) with `lstrip` the tokens that take the white space before them."""
        return type(self)(self.tokens, None if self.ids is None else self.ids.values(), self._holders, lstrip)

    @functools.cached_property
    def shared(self) -> Mapping[int, SharedId]:
        """shared_ids of these tokens' ids (and holders), read-only; empty without ids."""
        return MappingProxyType({} if self.ids is None else shared_ids(self.ids, self._holders))

    @functools.cached_property
    def regex(self) -> _StrRegex | None:
        """A compiled regex matching any of the tokens, the longest first; None when there is none."""
        return _alternation(self.tokens)

    @functools.cached_property
    def matcher(self) -> SpecialMatcher:
        """The native matcher over utf8 (bpe_fast._scan.SpecialMatcher)."""
        from ._scan import SpecialMatcher

        return SpecialMatcher(self.utf8, self.utf8_lstrip)

    def __len__(self) -> int:
        return len(self.tokens)

    def __iter__(self) -> Iterator[str]:
        return iter(self.tokens)

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...
    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        return self.tokens[index]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SpecialTokens):
            return NotImplemented
        return (self.tokens, self.ids, self.lstrip) == (other.tokens, other.ids, other.lstrip)

    def __hash__(self) -> int:
        return hash(self.tokens)

    def __repr__(self) -> str:
        ids = "" if self.ids is None else f", ids={list(self.ids.values())!r}"
        lstrip = f", lstrip={sorted(self.lstrip)!r}" if self.lstrip else ""
        return f"{type(self).__name__}({list(self.tokens)!r}{ids}{lstrip})"

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.tokens, None if self.ids is None else tuple(self.ids.values()), self._holders or None,
                            tuple(sorted(self.lstrip)))


def split_on_specials(text: str, special_regex: regex.Pattern[str] | None) -> Iterator[tuple[str, bool]]:
    """Yield (piece, is_special) in order; empty text pieces are skipped."""
    if special_regex is None:
        if text:
            yield text, False
        return
    pos = 0
    for m in special_regex.finditer(text):
        if m.start() > pos:
            yield text[pos:m.start()], False
        yield m.group(), True
        pos = m.end()
    if pos < len(text):
        yield text[pos:], False


def disallowed_special_error(token: str) -> ValueError:
    """The ValueError tiktoken raises for a disallowed special token found in the text (the same message)."""
    return ValueError(
        f"Encountered text corresponding to disallowed special token {token!r}.\n"
        "If you want this text to be encoded as a special token, "
        f"pass it to `allowed_special`, e.g. `allowed_special={{{token!r}, ...}}`.\n"
        f"If you want this text to be encoded as normal text, disable the check for this token "
        f"by passing `disallowed_special=(enc.special_tokens_set - {{{token!r}}})`.\n"
        "To disable this check for all special tokens, pass `disallowed_special=()`.\n"
    )


def check_disallowed(text: str, tokens: frozenset[str]) -> None:
    """Raise tiktoken's ValueError (disallowed_special_error) naming the first of `tokens` (a frozenset of str)
    found in `text`, as tiktoken's encode does before encoding; the leftmost, the longest there.

    >>> check_disallowed("a <|eot|>", frozenset({"<|x|>"}))
    >>> check_disallowed("a <|eot|>", frozenset({"<|eot|>"}))
    Traceback (most recent call last):
    ...
    ValueError: Encountered text corresponding to disallowed special token '<|eot|>'.
    ...
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    shared = shared_start(tokens)      # ("<|" for today's encodings: one search rules all of them out)
    if shared and not str.__contains__(text, shared):
        return
    if len(tokens) > FEW_TOKENS:       # one pass for all (o200k_harmony's 1,091), in the text's UTF-8, by the
        # native trie made once a set (a regex alternation tried every token at each "<|": Haskell's "<|>" read
        # at 2 MB/s); its leftmost occurrence, the longest there, as the alternation's
        native = _disallowed_matcher(tokens)
        if native is None:              # a token that is no str, or holds a lone surrogate: the regex's way
            m = _search_regex(tokens).search(text)      # type: ignore[union-attr]  # tokens: not empty
            if m is not None:
                raise disallowed_special_error(m.group())
            return
        matcher, utf8 = native
        data = str.encode(text, "utf-8", "surrogatepass")     # (a surrogate's bytes are in no token's UTF-8)
        at = matcher.first_start(data, 0, len(data))
        if at >= 0:
            found = max((t for t in utf8 if data.startswith(t, at)), key=len)
            raise disallowed_special_error(found.decode("utf-8"))
        return
    for token in tokens:
        if str.__contains__(text, token):   # fast (and a subclass's characters); the regex runs when one is there
            m = _search_regex(tokens).search(text)      # type: ignore[union-attr]  # tokens: not empty
            raise disallowed_special_error(m.group())   # type: ignore[union-attr]  # `token` is there


FEW_TOKENS = 8     # check_disallowed searches up to this many special tokens one by one


@functools.lru_cache(maxsize=128)
def _disallowed_matcher(tokens: frozenset[str]) -> tuple[SpecialMatcher, tuple[bytes, ...]] | None:
    """(the native matcher of tokens, their UTF-8, longest first) for check_disallowed; None when one is no str
    or has no UTF-8 (a lone surrogate, which a text may hold too)."""
    from ._scan import SpecialMatcher

    try:
        utf8 = tuple(sorted((str.encode(t, "utf-8") for t in tokens), key=lambda t: (-len(t), t)))
    except (TypeError, UnicodeEncodeError):
        return None
    return SpecialMatcher(utf8), utf8


@functools.lru_cache(maxsize=128)
def shared_start(tokens: frozenset[str]) -> str:
    """The longest start every one of `tokens` has ("" when they have none, or there are none).

    >>> shared_start(frozenset({"<|endoftext|>", "<|fim_prefix|>"}))
    '<|'
    """
    return os.path.commonprefix(list(tokens)) if tokens else ""


@functools.lru_cache(maxsize=128)
def _search_regex(tokens: frozenset[str]) -> _StrRegex | None:
    return _alternation(tokens)


def _alternation(tokens: Collection[str]) -> _StrRegex | None:
    """A compiled regex matching any of `tokens` (any strings), the longest first; None for none."""
    if not tokens:
        return None
    import regex

    return regex.compile("|".join(regex.escape(t) for t in sorted(tokens, key=lambda t: (-len(t), t))))
