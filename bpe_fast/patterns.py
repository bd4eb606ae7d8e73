"""The pre-tokenization patterns bpe_fast knows by name."""
from __future__ import annotations

from collections.abc import Mapping

import regex

# GPT-2's pattern (also CS336 assignment 1's): contractions, letter runs, digit runs, other runs, whitespace.
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

# GPT-2's pattern as tiktoken spells it (gpt2, r50k_base, p50k_base): the same pre-tokens (the runs are maximal
# either way; a whitespace run that reaches the end is what \s+(?!\S) takes there too; \s+(?!\S) fails only
# on a single whitespace character before a non-space, which \s and \s+ both take), so the same native scanner.
R50K_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""

# cl100k's pattern (GPT-4): case-insensitive contractions, digits in groups of at most three.
GPT4_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)

# o200k's pattern (GPT-4o), as tiktoken spells it: case-aware letter runs (an upper-case run, then lower case)
# with optional contraction suffixes, digits in groups of at most three, "/" and newlines after punctuation.
O200K_PATTERN = "|".join([
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""",
    r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
    r"""\s*[\r\n]+""",
    r"""\s+(?!\S)""",
    r"""\s+""",
])

# by name: bpe_fast's short names, and tiktoken's encoding names (a name is never read as a regex: "cl100k_base"
# as a regex would match only itself, and encode most text to nothing)
PATTERNS: dict[str, str] = {"gpt2": GPT2_PATTERN, "gpt4": GPT4_PATTERN, "cl100k": GPT4_PATTERN, "o200k": O200K_PATTERN,
                            "r50k_base": R50K_PATTERN, "p50k_base": R50K_PATTERN, "p50k_edit": R50K_PATTERN,
                            "cl100k_base": GPT4_PATTERN, "o200k_base": O200K_PATTERN}


def resolve_pattern(pattern: str) -> str:
    """Return the regex text for `pattern`, which is a name from PATTERNS or a regex string."""
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a str, got {type(pattern).__name__}")
    if pattern in PATTERNS:
        return PATTERNS[pattern]
    if not pattern:
        raise ValueError("pattern must not be empty")
    return pattern


def compile_pattern(pattern: str) -> regex.Pattern[str]:
    """`regex`'s compiled pattern for a name from PATTERNS or a regex string; ValueError naming the pattern when
    it does not compile, or nests groups too deeply for `regex`'s parser (whose RecursionError would name
    nothing)."""
    pattern = resolve_pattern(pattern)
    try:
        return regex.compile(pattern)
    except regex.error as exc:
        raise ValueError(f"invalid pre-tokenization pattern {shown_pattern(pattern)}: {exc}") from None
    except RecursionError:
        raise ValueError(f"invalid pre-tokenization pattern {shown_pattern(pattern)}: groups nested too deeply") from None


def shown_pattern(pattern: str) -> str:
    """A pattern for an error message: its repr, shortened past 200 characters."""
    return repr(pattern) if len(pattern) <= 200 else f"{pattern[:100]!r}... ({len(pattern):,} characters)"


def rewrite_anchors(pattern: str, replace: Mapping[str, str]) -> str:
    """`pattern` with each anchor outside a character class replaced as `replace` says ({"$": ..., "\\Z": ...}:
    an unescaped "^" or "$" outside multi-line mode, or a two-character escape), for reading a regex written for
    another engine with `regex`, or writing one of `regex`'s for another engine. "^" and "$" where the flag m is
    on are line anchors in either engine, and kept: the flag as inline flags set it, from "(?m)" to the end of
    the group holding it, inside "(?m:...)", off again after "(?-m)" (both engines read them so). Comments of
    verbose mode (the flag x: "#" to the end of the line) are copied as they are.

    >>> rewrite_anchors(r"a$|[$]|\\$|b\\Z", {"$": r"\\Z", r"\\Z": "$"})
    'a\\\\Z|[$]|\\\\$|b$'
    >>> rewrite_anchors(r"a$|(?m:b$)|(?m)c$|(?-m:d$)", {"$": r"\\Z"})
    'a\\\\Z|(?m:b$)|(?m)c$|(?-m:d\\\\Z)'
    """
    out: list[str] = []
    i, n = 0, len(pattern)
    in_class = False
    multiline = verbose = False         # the flags m and x where pattern[i] is
    outer: list[tuple[bool, bool]] = []     # the flags m and x outside each group open at i
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            escape = pattern[i:i + 2]
            out.append(escape if in_class else replace.get(escape, escape))
            i += 2
            continue
        if in_class:
            if pattern.startswith("[:", i):             # a POSIX set, [:punct:]: copied whole
                end = pattern.find(":]", i + 2)
                if end >= 0:
                    out.append(pattern[i:end + 2])
                    i = end + 2
                    continue
            in_class = c != "]"
        elif c == "[":
            in_class = True
            out.append(c)
            i += 1
            if i < n and pattern[i] == "^":       # "[^]...]" and "[]...]": a first "]" is a member
                out.append("^")
                i += 1
            if i < n and pattern[i] == "]":
                out.append("]")
                i += 1
            continue
        elif c == "#" and verbose:                # a comment, to the end of the line: copied whole
            end = pattern.find("\n", i)
            end = n if end < 0 else end + 1
            out.append(pattern[i:end])
            i = end
            continue
        elif c == "(":
            flags = _INLINE_FLAGS.match(pattern, i)
            if flags is not None:                 # "(?flags)" or "(?flags:": m and x on or off from here
                on, _, off = flags.group(1).partition("-")
                if flags.group(2) == ":":
                    outer.append((multiline, verbose))
                multiline = True if "m" in on else False if "m" in off else multiline
                verbose = True if "x" in on else False if "x" in off else verbose
                out.append(flags.group())
                i = flags.end()
                continue
            outer.append((multiline, verbose))
        elif c == ")":
            if outer:
                multiline, verbose = outer.pop()
        elif c in "^$" and not multiline:
            out.append(replace.get(c, c))
            i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


_INLINE_FLAGS = regex.compile(r"\(\?([a-zA-Z]*(?:-[a-zA-Z]*)?)([:)])")


def swap_tiktoken_anchors(pattern: str) -> str:
    """A pattern for tiktoken's regex engine (Rust's fancy-regex) as `regex` reads it the same way: there "$"
    (outside multi-line mode) matches only at the end of the text and "\\Z" also before any number of final
    newlines; in `regex` "$" matches at the end or before one final newline, and "\\Z" only at the end. The
    built-in patterns' spellings are kept (they run natively, and their "\\s++$" matches the same either way).
    tiktoken_anchors goes back.

    >>> swap_tiktoken_anchors(r"a$|b\\Z|c\\z")
    'a\\\\Z|b(?=\\\\n*\\\\Z)|c\\\\z'
    """
    if pattern in PATTERNS.values() or pattern == R50K_PATTERN:
        return pattern
    return rewrite_anchors(pattern, {"$": r"\Z", r"\Z": r"(?=\n*\Z)"})


def tiktoken_anchors(pattern: str) -> str:
    """A `regex` pattern as tiktoken's engine reads it the same way (swap_tiktoken_anchors' other direction):
    `regex`'s "$" (outside multi-line mode: the end, or before one final newline) as "(?=\\n?\\z)", its "\\Z"
    (the end) as "\\z". The built-in patterns' spellings are kept.

    >>> tiktoken_anchors(r"a$|b\\Z")
    'a(?=\\\\n?\\\\z)|b\\\\z'
    """
    if pattern in PATTERNS.values() or pattern == R50K_PATTERN:
        return pattern
    return rewrite_anchors(pattern, {"$": r"(?=\n?\z)", r"\Z": r"\z"})
