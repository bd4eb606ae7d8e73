"""Unicode normalization of the text a tokenizer encodes, as HF tokenizers' ``"normalizer": {"type": "NFC"}``
(Qwen2's, Qwen2.5's and Qwen3's ``tokenizer.json``): the owner of where and how text is normalized.

HF finds the added tokens in the raw text first and normalizes each piece of text between them on its own; a
tokenizer with a normalizer does the same (Tokenizer.with_normalizer): the text between its special tokens is
normalized, then pre-tokenized and merged. A text that is already in normal form, as nearly all text is, is
encoded as it is (a normal text's pieces are normal too), so the check (unicodedata.is_normalized) is the only
cost. Normalization is Python's unicodedata's, as HF's: HF's normalizer (the unicode-normalization-alignments
crate, in tokenizers 0.23.3 as before) has Unicode 9.0's tables, so a character assigned since (U+0C3C, U+1DF6,
U+11930, ...) is to it a starter that composes with nothing, where Python's tables (14.0 in 3.11) reorder or
compose it: normal() keeps such characters as they are and normalizes the text between them on its own
(_UNKNOWN_TO_HF_CLASS). Characters assigned after the running Python's Unicode version are left as they are.

For text that arrives in pieces (encode_iterable), stable_cut (and last_stable, which it asks) says how much of
a piece may be normalized before the rest of the text is seen.
"""
from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable
from typing import TYPE_CHECKING

from ._numpy import np

if TYPE_CHECKING:
    from numpy.typing import NDArray

NORMALIZERS = ("NFC",)      # the forms a tokenizer may apply (HF's normalizer types of the same names)

# Every character below U+0300 has canonical combining class 0, is its own decomposition's first character and
# is no composition's second character: a cut before one never changes what normalization makes of the text.
_ALWAYS_STABLE = "\u0300"
_SCAN = 4096        # stable_cut looks this far back for such a character before it asks the full table

# The characters that HF tokenizers' NFC tables (Unicode 9.0) do not have and Python's (or a later Unicode
# version's) normalize: those assigned since 9.0 with a combining class or a canonical decomposition, the parts of
# their compositions (U+11935 U+11930 is U+11938 in 13.0) and the scripts of 16.0's compositions. HF leaves each as
# it is and composes or reorders nothing across it, so the text between them is normalized on its own. (Measured
# against tokenizers 0.23.3 for Python's 14.0; the later ones from the `regex` module's Unicode 17 tables. Any
# character assigned after 9.0 may be listed: to HF each is the same barrier.)
_UNKNOWN_TO_HF_CLASS = (
    "\u05c8\u05c9\u07fd\u0897-\u089f\u08ca-\u08d3\u09fe\u0c3c\u0d3b\u0d3c\u0eba\u1715\u1abf-\u1af0"
    "\u1df6-\u1dfa\ua82c\U000105c0-\U000105f3\U00010d24-\U00010d27\U00010d69-\U00010d6d\U00010eab"
    "\U00010eac\U00010ecb-\U00010ecf\U00010ef0-\U00010efb\U00010efd-\U00010eff\U00010f46-\U00010f50"
    "\U00010f82-\U00010f85\U00011070\U0001133b\U00011380-\U00011389\U0001138b\U0001138e"
    "\U00011390-\U000113b5\U000113b7-\U000113c0\U000113c2\U000113c5\U000113c7-\U000113ca"
    "\U000113cc-\U000113d5\U000113d7\U000113d8\U000113e1\U000113e2\U0001145e\U00011839\U0001183a"
    "\U00011930\U00011935\U00011938\U0001193d\U0001193e\U00011943\U000119e0\U00011a34\U00011a47\U00011a99"
    "\U00011d42\U00011d44\U00011d45\U00011d97\U00011f41\U00011f42\U00016100-\U00016139"
    "\U00016d40-\U00016d79\U00016ff0\U00016ff1\U0001d127\U0001d128\U0001d250-\U0001d252\U0001d25b"
    "\U0001d25c\U0001d25f\U0001d280\U0001d281\U0001e08f\U0001e130-\U0001e136\U0001e2ae"
    "\U0001e2ec-\U0001e2ef\U0001e4ec-\U0001e4ef\U0001e5ee\U0001e5ef\U0001e6e3\U0001e6e6\U0001e6ee"
    "\U0001e6ef\U0001e6f5")


@functools.cache
def _unknown_to_hf() -> re.Pattern[str]:
    """_UNKNOWN_TO_HF_CLASS as a regex splitting text on each such character, compiled when first needed (a text
    holding one is rare; the compile was 0.7 ms of every process's first tokenizer, at this module's import)."""
    return re.compile(f"([{_UNKNOWN_TO_HF_CLASS}])")


def _class_characters(spelled: str) -> frozenset[str]:
    """The characters of a regex class's contents made of characters and ranges "a-b" only."""
    out: set[str] = set()
    k = 0
    while k < len(spelled):
        if k + 2 < len(spelled) and spelled[k + 1] == "-":
            out.update(map(chr, range(ord(spelled[k]), ord(spelled[k + 2]) + 1)))
            k += 3
        else:
            out.add(spelled[k])
            k += 1
    return frozenset(out)


# the same characters as a set: asking whether a text holds one is 15 times faster than searching with the regex
_UNKNOWN_TO_HF_SET = _class_characters(_UNKNOWN_TO_HF_CLASS)


def check_normalizer(normalizer: object) -> str | None:
    """normalizer, checked: None or one of NORMALIZERS (ValueError naming the value otherwise).

    >>> check_normalizer("NFC"), check_normalizer(None)
    ('NFC', None)
    >>> check_normalizer("NFKC")
    Traceback (most recent call last):
    ...
    ValueError: normalizer must be None or one of ('NFC',), got 'NFKC'
    """
    if normalizer is None or (type(normalizer) is str and normalizer in NORMALIZERS):
        return normalizer
    raise ValueError(f"normalizer must be None or one of {NORMALIZERS}, got {normalizer!r}")


def is_normal(form: str, text: str) -> bool:
    """True when `text` is in normal form `form` (normalizing it would not change it)."""
    return unicodedata.is_normalized(form, text)      # type: ignore[arg-type]  # check_normalizer's forms


def normal(form: str, text: str) -> str:
    """`text` in normal form `form`, as HF tokenizers normalizes it: a character HF's tables lack
    (_UNKNOWN_TO_HF_CLASS) is kept as it is, and the text on either side of it normalized on its own.

    >>> normal("NFC", "e\\u0301") == "\\u00e9", normal("NFC", "\\u0301\\u0c3c") == "\\u0301\\u0c3c"
    (True, True)
    """
    if _UNKNOWN_TO_HF_SET.isdisjoint(text):
        return unicodedata.normalize(form, text)      # type: ignore[arg-type]  # check_normalizer's forms
    return "".join(part if k % 2 else unicodedata.normalize(form, part)      # type: ignore[arg-type]
                   for k, part in enumerate(_unknown_to_hf().split(text)))


def stable_cut(text: str, start: int = 0, end: int | None = None, floor: int | None = None) -> int:
    """A k, start <= k < end, before which text[start:end] may be cut without changing its NFC: text[k] is a
    character that nothing before it composes or reorders with (canonical combining class 0, not the second
    character of a composition, its decomposition starting with such a character). It is the last character
    below U+0300 when one is among the last 4,096 (the usual case, and cheap), else the last such character;
    `start` when there is none after it. The NFC of text[start:k] is then final, whatever follows text[:end].
    `end` is len(text) when None. Nothing before `floor` is looked at (a caller that asked before, the text
    since grown, passes where it looked up to, so a long run of combining marks fed in pieces costs each
    character one look): k is then at or after it, or `start`. Any k returned is a safe cut.

    >>> stable_cut("ab"), stable_cut("e\\u0301"), stable_cut("\\u0301\\u0301"), stable_cut("x\\u3042\\u3099")
    (1, 0, 0, 0)
    >>> stable_cut("\\u3042\\u3042\\u3099"), stable_cut("\\u3042\\u3042\\u3099", end=1)
    (1, 0)
    """
    k = last_stable(text, start if floor is None else max(start, floor), end)
    return start if k < 0 else k


def last_stable(text: str, low: int = 0, end: int | None = None) -> int:
    """The k, low <= k < end, of stable_cut's rule (a cut before text[k] never changes the NFC of the text before
    it, whatever follows), or -1 when text[low:end] has none: unlike stable_cut's `start`, -1 cannot be taken
    for a cut at `low` (encode_iterable looks at the newly arrived text only, and a cut at its first character
    is a cut). Only text[low:end] is looked at. `end` is len(text) when None.

    The search runs in C: the text is read backwards (a reversed copy of a stretch of it, the first _SCAN
    characters, then four times as many each time, so a cut near the end costs little however long the text),
    a character below U+0300 looked for in the first stretch (the usual case), then the run of characters
    _unstable_characters holds matched (_unstable_run).

    >>> last_stable("ab"), last_stable("\\u0301\\u0301"), last_stable("a\\u0301", 1), last_stable("a\\u0301", 0, 1)
    (1, -1, -1, 0)
    """
    n = len(text) if end is None else end
    if low < 0 or not 0 <= n <= len(text):   # (low past end: text[low:end] is empty, -1)
        raise ValueError(f"last_stable: low={low}, end={end}: 0 <= low and 0 <= end <= len(text) = {len(text)} "
                         "needed")
    high, size = n, _SCAN
    while high > low:
        start = max(low, high - size)
        backwards = text[high - 1:start - 1:-1] if start else text[high - 1::-1]
        if high == n:       # the last _SCAN characters: the last one below U+0300 among them, if any
            found = _BELOW_UNSTABLE.search(backwards)
            if found is not None:
                return n - 1 - found.start()
        run = _unstable_run(backwards)
        if run < len(backwards):
            return high - 1 - run
        high, size = start, 4 * size
    return -1


def _unstable_run(backwards: str) -> int:
    """How many characters at the start of `backwards` _unstable_characters holds. The regex's class has the
    ones below U+10000 (a table lookup a character in `re`; its ranges above U+FFFF are tried one after the
    other, 74 of them: slower than the loop this replaced), so from the first such character on the rest is
    looked up in a table indexed by code point (NumPy)."""
    matcher, table = _unstable_search()
    run = matcher(backwards).end()
    if run == len(backwards) or backwards[run] < "\U00010000" or backwards[run] not in _unstable_characters():
        return run
    codes = np.frombuffer(backwards[run:].encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    stable = np.flatnonzero(~table[np.minimum(codes, len(table) - 1)])
    return run + int(stable[0]) if len(stable) else len(backwards)


_BELOW_UNSTABLE = re.compile("[\x00-\u02ff]")


@functools.cache
def _unstable_search() -> tuple[Callable[[str], re.Match[str]], NDArray[np.bool_]]:
    """(match of the run of characters below U+10000 that _unstable_characters holds at a string's start, a table
    of every code point up to the largest it holds and one more: True for those it holds)."""
    unstable = sorted(map(ord, _unstable_characters()))
    table = np.zeros(unstable[-1] + 2, dtype=np.bool_)
    table[unstable] = True
    ranges: list[list[int]] = []
    for c in unstable:
        if c > 0xFFFF:
            break
        if ranges and ranges[-1][1] == c - 1:
            ranges[-1][1] = c
        else:
            ranges.append([c, c])
    spelled = "".join(f"\\u{a:04x}-\\u{b:04x}" for a, b in ranges)
    return re.compile(f"[{spelled}]*").match, table     # type: ignore[return-value]  # [...]* always matches


@functools.cache
def _unstable_characters() -> frozenset[str]:
    """The characters before which a cut may change the NFC of a text (see stable_cut); made once, when first
    asked for (about a second: every code point is looked at)."""
    seconds = {chr(c) for c in range(0x1161, 0x1176)} | {chr(c) for c in range(0x11A8, 0x11C3)}     # Hangul
    for c in range(0x300, 0x110000):
        spelled = unicodedata.decomposition(chr(c))
        if spelled and not spelled.startswith("<"):
            parts = spelled.split()
            if len(parts) == 2:
                seconds.add(chr(int(parts[1], 16)))
    unstable = set()
    for c in range(0x300, 0x110000):
        if 0xD800 <= c < 0xE000:
            continue
        first = unicodedata.normalize("NFD", chr(c))[0]
        if unicodedata.combining(first) or first in seconds:
            unstable.add(chr(c))
    return frozenset(unstable)
