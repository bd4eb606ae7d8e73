"""Unicode normalization of the text a tokenizer encodes, as HF tokenizers' ``"normalizer": {"type": "NFC"}``
(Qwen2's, Qwen2.5's and Qwen3's ``tokenizer.json``): the owner of where and how text is normalized.

HF finds the added tokens in the raw text first and normalizes each piece of text between them on its own; a
tokenizer with a normalizer does the same (Tokenizer.with_normalizer): the text between its special tokens is
normalized, then pre-tokenized and merged. A text that is already in normal form, as nearly all text is, is
encoded as it is (a normal text's pieces are normal too), so the check (unicodedata.is_normalized) is the only
cost. Normalization is Python's unicodedata's, of the Unicode version of the running Python (14.0 in 3.11):
characters assigned after that version are left as they are.

For text that arrives in pieces (encode_iterable), stable_cut says how much of a piece may be normalized
before the rest of the text is seen.
"""
from __future__ import annotations

import functools
import unicodedata

NORMALIZERS = ("NFC",)      # the forms a tokenizer may apply (HF's normalizer types of the same names)

# Every character below U+0300 has canonical combining class 0, is its own decomposition's first character and
# is no composition's second character: a cut before one never changes what normalization makes of the text.
_ALWAYS_STABLE = "\u0300"
_SCAN = 4096        # stable_cut looks this far back for such a character before it asks the full table


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
    """`text` in normal form `form`."""
    return unicodedata.normalize(form, text)      # type: ignore[arg-type]  # check_normalizer's forms


def stable_cut(text: str, start: int = 0) -> int:
    """A k, start <= k < len(text), before which `text` may be cut without changing its NFC: text[k] is a
    character that nothing before it composes or reorders with (canonical combining class 0, not the second
    character of a composition, its decomposition starting with such a character). It is the last character
    below U+0300 when one is among the last 4,096 (the usual case, and cheap), else the last such character;
    `start` when there is none after it. The NFC of text[start:k] is then final, whatever follows the text.

    >>> stable_cut("ab"), stable_cut("e\\u0301"), stable_cut("\\u0301\\u0301"), stable_cut("x\\u3042\\u3099")
    (1, 0, 0, 0)
    >>> stable_cut("\\u3042\\u3042\\u3099")
    1
    """
    n = len(text)
    for k in range(n - 1, max(start, n - _SCAN) - 1, -1):
        if text[k] < _ALWAYS_STABLE:
            return k
    unstable = _unstable_characters()
    for k in range(n - 1, start - 1, -1):
        if text[k] not in unstable:
            return k
    return start


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
