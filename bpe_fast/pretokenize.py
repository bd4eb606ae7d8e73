"""Pre-tokenization: cutting text into the pieces that BPE merges never cross.

This module is the single entry point for pre-tokenizing; callers never use `regex` directly.
`regex` is the reference for every pattern.
"""
from collections import Counter

import numpy as np
import regex

from .patterns import GPT2_PATTERN, resolve_pattern

_compiled = {}


def compiled_pattern(pattern):
    """The compiled `regex` object for a pattern name or regex string (cached)."""
    pattern = resolve_pattern(pattern)
    rx = _compiled.get(pattern)
    if rx is None:
        try:
            rx = regex.compile(pattern)
        except regex.error as exc:
            raise ValueError(f"invalid pre-tokenization pattern {pattern!r}: {exc}") from None
        _compiled[pattern] = rx
    return rx


def pretokenize(text, pattern=GPT2_PATTERN):
    """Split `text` into pre-tokens; always equal to ``regex.findall(pattern, text)``.

    >>> pretokenize("Hello, world!")
    ['Hello', ',', ' world', '!']
    """
    return compiled_pattern(pattern).findall(text)


def pretoken_boundaries(data, pattern=GPT2_PATTERN):
    """Byte offsets of the pre-tokens of UTF-8 `data`: an int64 array b with b[0] == 0 and b[-1] == len(data);
    pre-token i is data[b[i]:b[i+1]]."""
    text = data.decode("utf-8")
    lengths = [len(p.encode("utf-8")) for p in compiled_pattern(pattern).findall(text)]
    out = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=out[1:])
    return out


def count_pretokens_text(text, pattern=GPT2_PATTERN, counts=None):
    """Add the pre-tokens of `text` (a piece between special tokens) to `counts` (a Counter of UTF-8 bytes)."""
    if counts is None:
        counts = Counter()
    words = Counter(compiled_pattern(pattern).findall(text))
    for word, n in words.items():
        counts[word.encode("utf-8")] += n
    return counts


def count_chunk(data, special_regex=None, pattern=GPT2_PATTERN, errors="strict"):
    """Count the pre-tokens of a chunk of a UTF-8 file: decode, split on special tokens (never counted),
    pre-tokenize each piece. Returns dict[bytes, int].

    `data` must start and end on a character boundary and on a pre-token boundary (the chunker guarantees it).
    Invalid UTF-8 with errors="strict" raises UnicodeDecodeError (its .start is the offset within `data`).
    """
    from .specials import split_on_specials

    text = data.decode("utf-8", errors)
    counts = Counter()
    for piece, is_special in split_on_specials(text, special_regex):
        if not is_special:
            count_pretokens_text(piece, pattern, counts)
    return dict(counts)
