"""Cutting a corpus file into byte ranges that can be counted independently.

A cut at byte offset k is safe when counting the two sides separately gives the same pre-tokens as
counting the whole file:
  * no occurrence of a special token covers k (starts before k and ends after it), and
  * either a special token starts at k (the text is split there for any pattern), or the pattern is a
    built-in one but BLOOM's (GPT-2's, GPT-4's, o200k's, Llama 3's, Qwen2's, Tekken's, DeepSeek V3's, Kimi
    K2's or StarCoder's: _SPACE_CUT_PATTERNS),
    byte k is a space
    and byte k-1 is a printable ASCII character (or byte k-1 is a newline with a character other than white
    space before it and one other than white space and "/" after it: _LINE_CUT, for text without spaces): these
    patterns end every pre-token that holds a non-space
    character at the first space after it (GPT-4 and o200k keep "\\r\\n" after punctuation, hence a space and
    not any whitespace; o200k's letter runs read ahead to the end of an upper-case run, which a space ends),
    and none looks behind. (Llama 3's pattern cuts a whitespace run that ends the text otherwise than GPT-4's:
    a side never ends in one. DeepSeek V3's takes every printable ASCII character into a match, never a gap
    between matches, and its matches stop at a space after one too.) Both kinds of cut fall on character boundaries, so UTF-8 decoding is unchanged
    too.
The start of a special token that takes the white space before it (a SpecialTokens' lstrip, as RoBERTa's <mask>)
is no cut for encoding: that white space may be on the other side (cut_tokens). The cut before a space is safe
for it, as the run of white space starts there.
"""
from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Sequence
from typing import BinaryIO, Union

from ._types import StrPath
from .patterns import GPT2_PATTERN, builtin_name, resolve_pattern
from ._scan import SpecialMatcher
from .specials import SpecialTokens

_FIRST_WINDOW = 1 << 14     # most cuts are found within a few KB: read little, then more
_MAX_WINDOW = 1 << 20
# A cut after a newline that a character other than white space comes before and after (not "/", which o200k's
# and Tekken's punctuation runs take after their newlines), for text without spaces (Chinese, Japanese, Thai,
# minified code): those patterns make such a newline a pre-token of its own, or end a punctuation run with it.
# The characters either side are read whole (a lookahead that cannot see all of the next one finds no cut),
# and none of Unicode's White_Space (U+0085, U+00A0, U+1680, U+2000-200A, U+2028, U+2029, U+202F, U+205F,
# U+3000) may be one: before the newline, a run of white space would join it; after it, "\r\n" and the like.
_NOT_WIDE_SPACE_BEFORE = (rb"(?<!\xc2\x85)(?<!\xc2\xa0)(?<!\xe1\x9a\x80)(?<!\xe2\x80[\x80-\x8a\xa8\xa9\xaf])"
                          rb"(?<!\xe2\x81\x9f)(?<!\xe3\x80\x80)")
_LINE_CUT = (rb"(?<=[\x21-\x7e\x80-\xbf])" + _NOT_WIDE_SPACE_BEFORE + rb"\n"
             rb"(?!\xc2[\x85\xa0]|\xe1\x9a\x80|\xe2\x80[\x80-\x8a\xa8\xa9\xaf]|\xe2\x81\x9f|\xe3\x80\x80)"
             rb"(?=[\x21-\x2e\x30-\x7e]|[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3})")
_SPACE_CUT = re.compile(rb"[\x21-\x7e](?= )|" + _LINE_CUT)
# BLOOM's: a space after a printable ASCII character its word runs take (not one of ()|.,!?, which start its
# other pieces: those run on into the spaces after them, "x.  y" being 'x', '. ', ' y'); a word run ends at the
# space, and the pattern looks ahead only
_BLOOM_SPACE_CUT = re.compile(rb"[^\x00-\x20\x7f-\xff()|.,!?](?= )")
SpaceCuts = Union[bool, "re.Pattern[bytes]", None]     # a rule's regex; True: _SPACE_CUT; False or None: none


# the built-in patterns (patterns.builtin_name) whose pre-tokens a space after a printable ASCII character ends
# (see above); BLOOM's has its own rule (_BLOOM_SPACE_CUT: a cut before any such space changed its pre-tokens,
# which a review found)
_SPACE_CUT_PATTERNS = frozenset({"gpt2", "gpt4", "o200k", "llama3", "qwen2", "tekken", "deepseek3", "kimi",
                                 "starcoder"})


def cuts_at_spaces(pattern: str) -> re.Pattern[bytes] | None:
    """Where a text pre-tokenized with pattern may be cut before a space (the regex whose matches end there), or
    None: after a printable ASCII character for the built-in patterns (GPT-2's as tiktoken spells it too; see
    above), after one of those but ()|.,!? for BLOOM's, nowhere for any other pattern."""
    name = builtin_name(resolve_pattern(pattern))
    if name == "bloom":
        return _BLOOM_SPACE_CUT
    return _SPACE_CUT if name in _SPACE_CUT_PATTERNS else None


def _space_rule(space_cuts: SpaceCuts) -> re.Pattern[bytes] | None:
    return _SPACE_CUT if space_cuts is True else space_cuts or None


@functools.lru_cache(maxsize=16)
def _matcher(specials: tuple[bytes, ...]) -> SpecialMatcher:
    """The native matcher of specials, made once for the tokens of a corpus: covered(buf, k) tells whether an
    occurrence of one (any occurrence, not only one the text's matching would take: a cut is refused where it
    might split one) starts before k and ends after it, in steps of the longest token whatever their number."""
    return SpecialMatcher(sorted(set(specials), key=len, reverse=True))


def _rule_cut(buf: bytes | bytearray, k: int, matcher: SpecialMatcher, takers: Sequence[bytes]) -> bool:
    """Whether the cut k a rule allows (before a space, after a newline) is safe: no special token covers it,
    and none that takes the white space before it starts there (after a newline: "\n<mask>")."""
    return not matcher.covered(buf, k) and not any(buf.startswith(t, k) for t in takers)


def _takers(specials: Sequence[bytes], starts: Sequence[bytes]) -> list[bytes]:
    """The special tokens whose start is no cut (those not in starts)."""
    if starts is specials:
        return []
    cut = set(starts)
    return [t for t in specials if t not in cut]


def _start_cut(buf: bytes | bytearray, i: int, matcher: SpecialMatcher, takers: Sequence[bytes],
               starts: Sequence[bytes]) -> bool:
    """Whether i, where a special token starts, is a safe cut: one of starts starts there, no token covers i, and
    none that takes the white space before it starts there (a longer one than the token found, as "<mask>"
    where "<m" is found: it is matched, and that white space may be on the other side of the cut)."""
    if takers and not any(buf.startswith(t, i) for t in starts):      # (no takers: every token is one of starts)
        return False
    return _rule_cut(buf, i, matcher, takers)


def _first_safe_cut(f: BinaryIO, start: int, end: int, specials: Sequence[bytes], space_cuts: SpaceCuts,
                    starts: Sequence[bytes] | None = None) -> int | None:
    """The first safe cut k with start <= k < end, or None. Reads the file in windows. starts: the special tokens
    whose start is a cut (default: all; not one that takes the white space before it, which may be in the chunk
    before)."""
    starts = specials if starts is None else starts
    takers = _takers(specials, starts)
    matcher = _matcher(tuple(specials))
    margin = max((len(t) for t in specials), default=1)
    rule = _space_rule(space_cuts)
    pos = start
    window = _FIRST_WINDOW
    while pos < end:
        lo = max(0, pos - margin)
        f.seek(lo)
        buf = f.read(min(end, pos + window) - lo + margin)[:end - lo]     # nothing past end (a cap) counts
        stop = min(end, pos + window) - lo          # candidates are buf offsets in [pos - lo, stop)
        candidates = []
        if starts:                                  # the first token starting before stop (buf holds its end)
            i = matcher.first_start(buf, pos - lo, stop)
            while i >= 0:
                if _start_cut(buf, i, matcher, takers, starts):
                    candidates.append(i)
                    break
                i = matcher.first_start(buf, i + 1, stop)
        if rule is not None:
            for m in rule.finditer(buf, max(0, pos - lo - 1), min(len(buf), stop + 1)):
                k = m.end()
                if k >= stop:
                    break
                if k >= pos - lo and _rule_cut(buf, k, matcher, takers):
                    candidates.append(k)
                    break
        if candidates:
            return lo + min(candidates)
        pos = min(end, pos + window)
        window = min(2 * window, _MAX_WINDOW)
    return None


def cut_tokens(special_tokens: Iterable[str]) -> tuple[tuple[bytes, ...], tuple[bytes, ...]]:
    """(the special tokens as bytes, those whose start is a safe cut): all but those that take the white space
    before them (a SpecialTokens' lstrip), which may be in the chunk before."""
    tokens = SpecialTokens.of(special_tokens)
    if not tokens.lstrip:
        return tokens.utf8, tokens.utf8
    return tokens.utf8, tuple(t for t, lstrip in zip(tokens.utf8, tokens.utf8_lstrip) if not lstrip)


def cut_margin(specials: Sequence[bytes]) -> int:
    """The bytes at the end of a buffer whose safe cuts last_safe_cut leaves undecided (what follows may change
    them): those of the longest special token, at least 1."""
    return max((len(t) for t in specials), default=1)


def last_safe_cut(buf: bytes | bytearray, specials: Sequence[bytes], space_cuts: SpaceCuts, after: int = 0,
                  starts: Sequence[bytes] | None = None) -> int | None:
    """The greatest safe cut k, after < k < len(buf), that the bytes of buf decide on their own (whatever
    follows buf), or None. specials: the special tokens as bytes; starts: those whose start is a cut (as
    _first_safe_cut's). For reading a stream piece by piece: a
    reader that found none in a prefix p of buf passes after=len(p) - cut_margin(specials) (the cuts up to
    there were decided by p's bytes), so that each call looks at the new bytes only."""
    limit = len(buf) - cut_margin(specials)        # candidates k <= limit: every occurrence around k is in buf
    after = max(0, after)
    best = after
    starts = specials if starts is None else starts
    takers = _takers(specials, starts)
    matcher = _matcher(tuple(specials))
    if starts:              # the last token starting at or before limit (buf holds its end)
        i = matcher.last_start(buf, best + 1, limit + 1)
        while i >= 0:
            if _start_cut(buf, i, matcher, takers, starts):
                best = i
                break
            i = matcher.last_start(buf, best + 1, i)
    rule = _space_rule(space_cuts)
    if rule is not None:
        window = _FIRST_WINDOW
        hi = limit + 1                             # matches end at k, the space's offset, with k <= limit
        while hi > best + 1:
            lo = max(best, hi - window)
            last = next((k for k in reversed([m.end() for m in rule.finditer(buf, lo, hi)])
                         if _rule_cut(buf, k, matcher, takers)), None)      # the last one that is safe
            if last is not None:
                best = max(best, last)
                break
            hi, window = lo + 1, min(2 * window, _MAX_WINDOW)
    return best if best > after else None


def chunk_boundaries(path: StrPath, special_tokens: Iterable[str] = (), pattern: str = GPT2_PATTERN,
                     chunk_bytes: int = 4 << 20, min_chunks: int = 1, size: int | None = None) -> list[int]:
    """Safe cut points of the file (or of its first `size` bytes) as a sorted list [0, ..., size], aiming at
    chunks of about chunk_bytes and at least min_chunks of them (fewer when the file has too few safe cuts).
    special_tokens: str tokens, or a SpecialTokens (whose lstrip tokens' starts are no cuts)."""
    size = os.path.getsize(path) if size is None else size
    if size == 0:
        return [0, 0]
    specials, starts = cut_tokens(special_tokens)
    space_cuts = cuts_at_spaces(pattern)
    n = max(min_chunks, -(-size // max(1, chunk_bytes)))
    bounds = [0]
    with open(path, "rb") as f:
        for i in range(1, n):
            target = max(size * i // n, bounds[-1] + 1)
            if target >= size:
                break
            k = _first_safe_cut(f, target, size, specials, space_cuts, starts)
            if k is None:
                break
            if k > bounds[-1]:
                bounds.append(k)
    bounds.append(size)
    return bounds
