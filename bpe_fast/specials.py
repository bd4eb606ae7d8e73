"""Special tokens: validation, splitting text on them (longest match first), tiktoken's disallowed check."""
from __future__ import annotations

import functools
from collections.abc import Collection, Iterable, Iterator

import regex


def check_special_tokens(special_tokens: Iterable[str] | None) -> tuple[str, ...]:
    """Return special_tokens as a tuple of str, or raise ValueError/TypeError naming the bad one."""
    if special_tokens is None:
        return ()
    if isinstance(special_tokens, (str, bytes)):
        raise TypeError("special_tokens must be a list of str, not a single string")
    tokens = tuple(special_tokens)
    seen: set[str] = set()
    for tok in tokens:
        if not isinstance(tok, str):
            raise TypeError(f"special token {tok!r} is not a str")
        if not tok:
            raise ValueError("special tokens must not be empty strings")
        if tok in seen:
            raise ValueError(f"duplicate special token {tok!r}")
        seen.add(tok)
    return tokens


def special_regex(special_tokens: Collection[str]) -> regex.Pattern[str] | None:
    """A compiled regex matching any special token, the longest first where one is a prefix of another."""
    if not special_tokens:
        return None
    ordered = sorted(special_tokens, key=lambda t: (-len(t), t))
    return regex.compile("|".join(regex.escape(t) for t in ordered))


def special_bytes(special_tokens: Iterable[str]) -> tuple[bytes, ...]:
    """The special tokens as UTF-8 bytes, the longest first (the order the native matchers try them in)."""
    return tuple(sorted((t.encode("utf-8") for t in special_tokens), key=lambda b: (-len(b), b)))


def special_bytes_regex(special_tokens: Collection[str]) -> regex.Pattern[bytes] | None:
    """special_regex for UTF-8 bytes: matching any special token's bytes, the longest first."""
    if not special_tokens:
        return None
    return regex.compile(b"|".join(regex.escape(t) for t in special_bytes(special_tokens)))


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
    for token in tokens:
        if token in text:       # str.__contains__ is fast; the regex only runs when one is there
            m = _search_regex(tokens).search(text)      # type: ignore[union-attr]  # tokens: not empty
            raise disallowed_special_error(m.group())   # type: ignore[union-attr]  # `token` is there


@functools.lru_cache(maxsize=128)
def _search_regex(tokens: frozenset[str]) -> regex.Pattern[str] | None:
    return special_regex(tokens)
