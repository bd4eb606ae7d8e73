"""The pre-tokenization patterns bpe_fast knows by name."""
from __future__ import annotations

import functools
import string
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import regex
# `regex` is imported where a regex is compiled: a built-in pattern needs none (it is scanned natively), and the
# import was 8-11 ms of a fresh process's first Encoding


def _lazy(text: str) -> Callable[[], regex.Pattern[str]]:
    """A regex of this module's own, compiled when first used: loading a built-in pattern uses none of them (their
    nine compiles were 3 ms of a fresh process's first Encoding)."""
    def compiled() -> regex.Pattern[str]:
        import regex

        return regex.compile(text)

    return functools.cache(compiled)


# GPT-2's pattern (also CS336 assignment 1's): contractions, letter runs, digit runs, other runs, whitespace.
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

# GPT-2's pattern as tiktoken spells it (gpt2, r50k_base, p50k_base): the same pre-tokens (the runs are maximal
# either way; a whitespace run that reaches the end is what \s+(?!\S) takes there too; \s+(?!\S) fails only
# on a single whitespace character before a non-space, which \s and \s+ both take), so the same native scanner.
R50K_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""

# GPT-2's pattern as GPT-2's encoder.py spells it (and tiktoken's gpt2 / r50k_base did before their runs were
# possessive; ports of GPT-2 copy it): the same alternatives ('s|'t|... tries each contraction in turn, none the
# prefix of another), so the same pre-tokens; read as GPT2_PATTERN (native, with tiktoken's Unicode tables, where
# `regex` would read it with its own, a newer Unicode's)
GPT2_ENCODER_PAT_STR = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

# cl100k's pattern (GPT-4): case-insensitive contractions, digits in groups of at most three.
GPT4_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)

# o200k's pattern (GPT-4o), as tiktoken spells it: case-aware letter runs (an upper-case run, then lower case)
# with optional contraction suffixes, digits in groups of at most three, "/" and newlines after punctuation.
_CASED = (r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+""",
          r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*""")
_O200K_SUFFIX = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)?"""
_O200K_REST = (r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""", r"""\s*[\r\n]+""", r"""\s+(?!\S)""", r"""\s+""")
O200K_PATTERN = "|".join([*(run + _O200K_SUFFIX for run in _CASED), r"""\p{N}{1,3}""", *_O200K_REST])

# Llama 3's pattern (Meta's tokenizer.py and its tokenizer.json; cl100k's as tiktoken spelt it before making the
# runs possessive): GPT-4's pre-tokens, except that a whitespace run ending the text is cut after its last \r or
# \n ("a \n " -> "a", " \n", " "; GPT4_PATTERN's \s++$ keeps " \n " whole).
_LLAMA3_HEAD = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+"""
_LLAMA3_TAIL = r""" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
LLAMA3_PATTERN = "|".join([_LLAMA3_HEAD, r"""\p{N}{1,3}""", _LLAMA3_TAIL])

# Qwen2's pattern (Qwen2, Qwen2.5, Qwen3's tokenizer.json): Llama 3's with digits one at a time.
QWEN2_PATTERN = "|".join([_LLAMA3_HEAD, r"""\p{N}""", _LLAMA3_TAIL])

# Tekken's pattern (Mistral's tekken.json and the tokenizer.json of Mistral Nemo and later, Nemotron, Falcon 3):
# o200k's without the contraction suffixes, with digits one at a time.
TEKKEN_PATTERN = "|".join([*_CASED, r"""\p{N}""", *_O200K_REST])

# `regex`'s version 1 syntax, where classes nest and hold set operations as in tiktoken's engine (Rust's regex): the
# prefix pattern_from_tiktoken gives a pattern that needs it (without the full case folding that version 1 turns on
# under the flag i: tiktoken's engine folds a character to one, so (?i:st) does not match the ligature U+FB06)
V1_PREFIX = "(?V1-f)"

# Kimi K2's pattern (moonshotai's tokenization_kimi.py, a tiktoken pat_str): o200k's with the Han script apart (its
# runs are pieces of their own, no letter run takes one) and no "/" after punctuation. KIMI_PAT_STR is tiktoken's
# spelling, KIMI_PATTERN the one pattern_from_tiktoken reads it as (`regex`'s version 1 syntax: classes nest there;
# resolve_pattern reads KIMI_PAT_STR so too: in `regex`'s default syntax it would drop text).
_KIMI_HAN_APART = r"""&&[^\p{Han}]]"""
KIMI_PAT_STR = "|".join([
    r"""[\p{Han}]+""",
    *(run.replace("]*", _KIMI_HAN_APART + "*").replace("]+", _KIMI_HAN_APART + "+") + _O200K_SUFFIX for run in _CASED),
    r"""\p{N}{1,3}""", r""" ?[^\s\p{L}\p{N}]+[\r\n]*""", *_O200K_REST[1:]])
KIMI_PATTERN = V1_PREFIX + KIMI_PAT_STR

# DeepSeek V3's (and V4's) tokenizer.json pre-tokenizer: three Isolated Splits in sequence, each cutting the pieces the
# one before it left (what a match does not cover is a piece too): digits three at a time, then runs of CJK
# ideographs and kana, then the third regex (DeepSeek's letters, punctuation and spaces) on the rest. As the files
# spell them (their "\r" and "\n" are the characters):
_DEEPSEEK3_CJK = "\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff"
DEEPSEEK3_SPLITS = (r"""\p{N}{1,3}""", f"[{_DEEPSEEK3_CJK}]+",
                    r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^""" + "\r\n"
                    + r"""\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[""" + "\r\n" + r"""]*|\s*[""" + "\r\n"
                    + r"""]+|\s+(?!\S)|\s+""")
# HF applies each Split to every piece the ones before it made, the third to the digit chunks (it leaves them whole)
# and to the runs of CJK too. The same pieces from one regex over the whole text: digits three at a time; in a run
# of CJK (_IN), the third regex's alternatives that can match there; elsewhere (_OFF, no digit), its alternatives
# kept off those characters (a piece ends where one starts: its (?!\S) holds there); and the text no alternative
# matches, as a piece of its own in a run of CJK or out of one (Isolated keeps it).
_DEEPSEEK3_IN = f"(?=[{_DEEPSEEK3_CJK}])"
_DEEPSEEK3_OFF = f"(?![{_DEEPSEEK3_CJK}])"
_DEEPSEEK3_ONE = "|".join([
    DEEPSEEK3_SPLITS[0],
    f"(?:{_DEEPSEEK3_IN}[^\r\n\\p{{L}}\\p{{P}}\\p{{S}}])?(?:{_DEEPSEEK3_IN}[\\p{{L}}\\p{{M}}])+",
    f"(?:{_DEEPSEEK3_IN}[\\p{{P}}\\p{{S}}])+",
    r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+""",
    f"(?:{_DEEPSEEK3_OFF}[^\r\n\\p{{L}}\\p{{P}}\\p{{S}}\\p{{N}}])?(?:{_DEEPSEEK3_OFF}[\\p{{L}}\\p{{M}}])+",
    f" ?(?:{_DEEPSEEK3_OFF}[\\p{{P}}\\p{{S}}])+[\r\n]*",
    "\\s*[\r\n]+",
    f"\\s+(?![^\\s\\p{{N}}{_DEEPSEEK3_CJK}])",
    "\\s+"])
DEEPSEEK3_PATTERN = (f"{_DEEPSEEK3_ONE}|(?:(?!{_DEEPSEEK3_ONE}){_DEEPSEEK3_IN}[\\s\\S])+"
                     f"|(?:(?!{_DEEPSEEK3_ONE}){_DEEPSEEK3_OFF}[\\s\\S])+")

# StarCoder's and StarCoder2's tokenizer.json: HF's Digits (each digit a piece; with individual_digits false, each
# run of digits) then ByteLevel with GPT-2's regex, which HF runs on each piece Digits leaves. As one regex: no
# piece holds a digit and another character (a space before a digit is a piece of its own), and a run of white
# space that ends at a digit ends there as at the end of a text ("(?!\S)" holds). from_hf gives them, export_hf
# writes them back as Digits then ByteLevel. STARCODER_PATTERN ("starcoder") is scanned natively; the other, which
# no published file is known to use, is read by `regex`.
STARCODER_PATTERN = r"""\p{N}|'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?[^\s\p{L}\p{N}]+|\s+(?![^\s\p{N}])|\s+"""
DIGIT_RUNS_GPT2_PATTERN = r"""\p{N}+|'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?[^\s\p{L}\p{N}]+|\s+(?![^\s\p{N}])|\s+"""

# BLOOM's tokenizer.json: an Isolated Split by " ?[^(\s|[.,!?…。，、।۔،])]+" (BLOOM_SPLIT; Oniguruma reads its nested
# class as a union), whose pieces are its matches and the text between two of them: as bpe_fast.hf.pattern_from_hf
# writes it. Scanned natively ("bloom").
BLOOM_SPLIT = r""" ?[^(\s|[.,!?…。，、।۔،])]+"""
_BLOOM_RUN = r"""(?m: ?[^(\s|.,!?…。，、।۔،)]+)"""
BLOOM_PATTERN = f"{_BLOOM_RUN}|(?:(?!{_BLOOM_RUN})[\\s\\S])+"

# bpe_fast's short names of its patterns (cl100k, gpt4's other name, aside), as the CLI's help lists them
SHORT_NAMES = ("gpt2", "gpt4", "o200k", "llama3", "qwen2", "tekken", "deepseek3", "kimi", "starcoder", "bloom")
# by name: bpe_fast's short names, and tiktoken's encoding names (a name is never read as a regex: "cl100k_base"
# as a regex would match only itself, and encode most text to nothing)
PATTERNS: dict[str, str] = {"gpt2": GPT2_PATTERN, "gpt4": GPT4_PATTERN, "cl100k": GPT4_PATTERN, "o200k": O200K_PATTERN,
                            "llama3": LLAMA3_PATTERN, "qwen2": QWEN2_PATTERN, "tekken": TEKKEN_PATTERN,
                            "deepseek3": DEEPSEEK3_PATTERN, "kimi": KIMI_PATTERN, "starcoder": STARCODER_PATTERN,
                            "bloom": BLOOM_PATTERN,
                            "r50k_base": R50K_PATTERN, "p50k_base": R50K_PATTERN, "p50k_edit": R50K_PATTERN,
                            "cl100k_base": GPT4_PATTERN, "o200k_base": O200K_PATTERN,
                            "o200k_harmony": O200K_PATTERN}


def resolve_pattern(pattern: str) -> str:
    """Return the regex text for `pattern`, which is a name from PATTERNS or a regex string."""
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a str, got {type(pattern).__name__}")
    if pattern in PATTERNS:
        return PATTERNS[pattern]
    if pattern == KIMI_PAT_STR:     # tiktoken's spelling (classes in classes), which `regex` reads in its version 1
        return KIMI_PATTERN
    if pattern == GPT2_ENCODER_PAT_STR:
        return GPT2_PATTERN
    if pattern in _BUILT_IN:    # (the checks below searched a built-in pattern's text four times a load)
        return pattern
    if not pattern:
        raise ValueError("pattern must not be empty")
    lone = _SURROGATE().search(pattern)
    if lone:    # the text is matched as UTF-8 (lone surrogates in it become U+FFFD): such a character matches nothing
        raise ValueError(f"pattern {shown_pattern(pattern)} holds a lone surrogate (U+{ord(lone.group()):04X}) at index "
                         f"{lone.start()}, which no text has (a byte that is not UTF-8, as a command line passes it?)")
    unsupported = _unsupported(pattern)
    if unsupported is not None:
        raise ValueError(f"pattern {shown_pattern(pattern)} uses {unsupported}; not supported")
    if _NAME_LIKE().fullmatch(pattern):   # a misspelt name: as a regex it would match only itself, and the text
        import regex

        def plain(name: str) -> str:
            return regex.sub(r"[_.\-]", "", name.lower())
        near = [name for name in PATTERNS if plain(name) == plain(pattern)]
        hint = f"did you mean {near[0]!r}? " if near else ""
        raise ValueError(f"pattern {pattern!r} is not a built-in pattern's name ({', '.join(PATTERNS)}), and read "
                         f"as a regex it matches only the text {pattern!r} (text no match covers is dropped): "
                         f"{hint}give a name or a regex")
    return pattern


# a pattern that is one word (letters, digits, _ . -) and no name: surely a misspelt name (tiktoken would read
# "GPT2" as a regex and encode "ab cd" to nothing)
_NAME_LIKE = _lazy(r"[A-Za-z][A-Za-z0-9_.\-]*")
_SURROGATE = _lazy("[\ud800-\udfff]")
_BUILT_IN = frozenset(PATTERNS.values())


def _unsupported(pattern: str) -> str | None:
    """What `regex` reads in `pattern` that a tokenizer cannot cut text by (helper-148): \\K, whose match begins
    before the start it reports (a stream's cut, encode_iterable's, then skipped text), and the reverse flag
    (?r), whose matches come last first (the ids of a text in reverse order, a stream's pieces mixed up)."""
    if "\\K" not in pattern and "r" not in pattern:
        return None
    comment_end = -1
    for start, end, in_class, _ in _pieces(pattern):
        piece = pattern[start:end]
        if in_class or start < comment_end:
            continue
        if pattern.startswith("(?#", start):        # a comment group: to its ")" (no escapes there)
            close = pattern.find(")", start)
            comment_end = len(pattern) if close < 0 else close + 1
            continue
        if piece == "\\K":
            return "\\K (a match's text would start before the place `regex` reports)"
        flags = _INLINE_FLAGS().fullmatch(piece)
        if flags is not None and "r" in flags.group(1).split("-")[0]:
            return "the reverse flag (?r) (matches would come last first)"
    return None


def compile_pattern(pattern: str) -> regex.Pattern[str]:
    """`regex`'s compiled pattern for a name from PATTERNS or a regex string; ValueError naming the pattern when
    it does not compile, or nests groups too deeply for `regex`'s parser (whose RecursionError would name
    nothing)."""
    import regex

    pattern = resolve_pattern(pattern)
    try:
        return regex.compile(pattern)
    except regex.error as exc:
        raise ValueError(f"invalid pre-tokenization pattern {shown_pattern(pattern)}: {exc}") from None
    except RecursionError:
        raise ValueError(f"invalid pre-tokenization pattern {shown_pattern(pattern)}: groups nested too deeply") from None


def builtin_name(pattern: str) -> str | None:
    """The built-in pattern `pattern` (a resolved regex) is, by name: "gpt2" (in bpe_fast's spelling or
    tiktoken's, R50K_PATTERN: the same pre-tokens), "gpt4" (cl100k), "o200k", "llama3", "qwen2", "tekken",
    "deepseek3", "kimi", "starcoder" or "bloom"; None for any other regex."""
    return {GPT2_PATTERN: "gpt2", R50K_PATTERN: "gpt2", GPT4_PATTERN: "gpt4", O200K_PATTERN: "o200k",
            LLAMA3_PATTERN: "llama3", QWEN2_PATTERN: "qwen2", TEKKEN_PATTERN: "tekken",
            DEEPSEEK3_PATTERN: "deepseek3", KIMI_PATTERN: "kimi", STARCODER_PATTERN: "starcoder",
            BLOOM_PATTERN: "bloom"}.get(pattern)


def shown_pattern(pattern: str) -> str:
    """A pattern for an error message: its repr, shortened past 200 characters."""
    return repr(pattern) if len(pattern) <= 200 else f"{pattern[:100]!r}... ({len(pattern):,} characters)"




def _pieces(pattern: str, nested: bool | None = None) -> Iterator[tuple[int, int, bool, str]]:
    """The pieces of a regex, in order, as (start, end, in_class, flags): an escape (a backslash and the next
    character, with the one letter of \\pL or \\PN, with the braces of \\x{...}, \\u{...}, \\U{...}, \\p{...}, \\P{...}, \\N{...} and \\b{start}, or the hex digits
    of \\xHH, \\uHHHH and \\UHHHHHHHH), a POSIX set
    inside a class ("[:alpha:]", "[:^alpha:]"), a class's opening ("[", "[^", with a first "]", a member), a
    comment of verbose mode ("#" to the end of the line, the flag x), an inline flags group ("(?i)", "(?m-x:"),
    or one character. in_class: the piece is inside a character class (a class's opening is not; its "]" is);
    flags: the inline flags on where the piece is (of "imsx"), as "(?flags)" sets them to the end of the group
    holding it, "(?flags:...)" inside it, "(?-flags)" turns them off again: both `regex` and tiktoken's engine
    read them so. rewrite_anchors and the reading of tiktoken's patterns walk a regex with this.
    nested: a "[" inside a class opens a class inside it (tiktoken's engine, `regex`'s version 1) rather than being
    a member (`regex`'s default); None: so when the pattern starts with V1_PREFIX."""
    i, n = 0, len(pattern)
    in_class = False
    depth = 0                           # the classes open at i (nested: more than one)
    if nested is None:
        nested = pattern.startswith(V1_PREFIX)
    if pattern.startswith(V1_PREFIX):
        yield 0, len(V1_PREFIX), False, ""
        i = len(V1_PREFIX)
    flags = ""
    outer: list[str] = []               # the flags outside each group open at i
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            end = i + 2
            if pattern[i + 1] in "xuUpPNb" and pattern.startswith("{", end):
                close = pattern.find("}", end)
                if close > 0 and (pattern[i + 1] != "b" or pattern[end + 1:close].replace("-", "").isalpha()):
                    end = close + 1
            elif pattern[i + 1] in "pP" and end < n:     # \\pL: a property of one letter
                end += 1
            elif pattern[i + 1] in _HEX_DIGITS:          # \\xHH, \\uHHHH, \\UHHHHHHHH
                digits = _HEX_DIGITS[pattern[i + 1]]
                if all(d in string.hexdigits for d in pattern[end:end + digits]) and end + digits <= n:
                    end += digits
            yield i, end, in_class, flags
            i = end
            continue
        if in_class:
            if pattern.startswith("[:", i):             # a POSIX set, [:punct:]: one piece
                close = pattern.find(":]", i + 2)
                if close >= 0:
                    yield i, close + 2, True, flags
                    i = close + 2
                    continue
            if nested and c == "[":                     # a class inside the class: "[" or "[^" opens it
                end = i + 2 if pattern.startswith("^", i + 1) else i + 1
                yield i, end, True, flags
                depth += 1
                i = end
                continue
            yield i, i + 1, True, flags
            if c == "]":
                depth -= 1
                in_class = depth > 0
            i += 1
            continue
        end = i + 1
        if c == "[":
            in_class = True
            depth = 1
            if pattern.startswith("^", end):            # "[^]...]" and "[]...]": a first "]" is a member
                end += 1
            if pattern.startswith("]", end):
                end += 1
        elif c == "#" and "x" in flags:                 # a comment, to the end of the line
            end = pattern.find("\n", i)
            end = n if end < 0 else end + 1
        elif c == "(":
            group = _INLINE_FLAGS().match(pattern, i)
            if group is not None:                       # "(?flags)" or "(?flags:": on or off from here
                on, _, off = group.group(1).partition("-")
                if group.group(2) == ":":
                    outer.append(flags)
                yield i, group.end(), False, flags
                flags = "".join(f for f in "imsx" if (f in flags or f in on) and f not in off)
                i = group.end()
                continue
            outer.append(flags)
        elif c == ")":
            yield i, end, False, flags
            flags = outer.pop() if outer else flags
            i = end
            continue
        yield i, end, False, flags
        i = end


def rewrite_anchors(pattern: str, replace: Mapping[str, str]) -> str:
    """`pattern` with each anchor outside a character class replaced as `replace` says ({"$": ..., "\\Z": ...}:
    an unescaped "^" or "$" outside multi-line mode, or a two-character escape), for reading a regex written for
    another engine with `regex`, or writing one of `regex`'s for another engine. "^" and "$" where the flag m is
    on are line anchors in either engine, and kept: the flag as inline flags set it (_pieces). Comments of
    verbose mode (the flag x: "#" to the end of the line) are copied as they are.

    >>> rewrite_anchors(r"a$|[$]|\\$|b\\Z", {"$": r"\\Z", r"\\Z": "$"})
    'a\\\\Z|[$]|\\\\$|b$'
    >>> rewrite_anchors(r"a$|(?m:b$)|(?m)c$|(?-m:d$)", {"$": r"\\Z"})
    'a\\\\Z|(?m:b$)|(?m)c$|(?-m:d\\\\Z)'
    """
    out: list[str] = []
    for start, end, in_class, flags in _pieces(pattern):
        piece = pattern[start:end]
        anchor = not in_class and (piece.startswith("\\") or (piece in "^$" and "m" not in flags))
        out.append(replace.get(piece, piece) if anchor else piece)
    return "".join(out)


_HEX_DIGITS = {"x": 2, "u": 4, "U": 8}
_INLINE_FLAGS = _lazy(r"\(\?([a-zA-Z]*(?:-[a-zA-Z]*)?)([:)])")


# zero-width escapes (\g and \1-\9 refer back to a group, which may have taken nothing): each may be all a match is
_EMPTY_ESCAPES = frozenset(["\\b", "\\B", "\\A", "\\z", "\\Z", "\\G", "\\g", *(f"\\{d}" for d in "123456789")])
_COUNT = _lazy(r"\{(\d*)(?:,(\d*))?\}")
# what opens a group after its "(": a group that takes nothing whatever it holds (a lookaround; a conditional, a
# back reference or a recursion, each taken as such), or the name or kind of one that takes what it holds
_GROUP_OPENING = _lazy(r"\?(?:(?P<empty>[=!]|<[=!]|\(|P[=>]|&|R|[-+]?\d)|P?<[^>]*>|'[^']*'|[>|])")


def can_match_empty(pattern: str) -> bool:
    """Whether a match of `pattern` (a regex `regex` compiles) may be empty text, read from its structure: some
    way through it takes no character, where an assertion (a lookaround, an anchor, \\b), a back reference and a
    count from 0 may take none (and a \\K anywhere may leave nothing in the match). Never False for a regex
    that has an empty match in some text; True for a few that have none (an assertion that never holds there,
    such as (?=a)(?!a)).

    >>> can_match_empty(r"a|b*"), can_match_empty(r"z*(?=zz)|a"), can_match_empty(GPT2_PATTERN)
    (True, True, False)
    """
    return _empty_reading(pattern)[0]


def repeats_what_can_be_empty(pattern: str) -> bool:
    """Whether `pattern` repeats (*, +, {m,n} with n > 1) an item that may take nothing, as (?:a*|b)+: engines
    stop such a loop at different places (`regex` ends it at the first empty pass, tiktoken's engine takes "b"
    there). Read as can_match_empty reads a regex.

    >>> repeats_what_can_be_empty(r"(?:a*|b)+"), repeats_what_can_be_empty(r"(?:a|b)+|c*")
    (True, False)
    """
    return _empty_reading(pattern)[1]


def _empty_reading(pattern: str) -> tuple[bool, bool]:
    """(can_match_empty(pattern), repeats_what_can_be_empty(pattern))."""
    repeats_empty = False
    pieces = list(_pieces(pattern))
    # the branch being read: every item before the last may take nothing (prefix); whether the last (what a
    # count applies to) may, None before the first; some branch before it in its group may take nothing
    # (any_branch); its group takes nothing whatever it holds (empty_group). Each open group's outer state on a stack
    stack: list[tuple[bool, bool, bool, bool | None]] = []
    empty_group, any_branch, prefix = False, False, True
    last: bool | None = None
    counted = False     # the piece before was a count: a "?" or "+" now makes it lazy or possessive
    k = 0

    def skip_to(position: int) -> None:
        nonlocal k
        while k < len(pieces) and pieces[k][0] < position:
            k += 1

    while k < len(pieces):
        start, end, in_class, flags = pieces[k]
        piece = pattern[start:end]
        k += 1
        if in_class or ("x" in flags and (piece.isspace() or piece.startswith("#"))):
            continue            # a class's members (its opening is the item); verbose mode's blanks and comments
        quantity = _COUNT().match(pattern, start) if piece == "{" else None
        if piece in ("*", "?", "+") or quantity is not None:
            if quantity is not None:
                skip_to(quantity.end())
            modifier = counted and piece in ("?", "+")      # lazy or possessive, not a count
            if last is True and not modifier and (piece in ("*", "+") or quantity is not None and (
                    quantity.group(2) is not None and quantity.group(2) != "1"
                    or quantity.group(2) is None and int(quantity.group(1) or 0) > 1)):
                repeats_empty = True
            if last is not None and not modifier and (
                    piece in ("*", "?") or quantity is not None and int(quantity.group(1) or 0) == 0):
                last = True     # a count from 0
            counted = not modifier
            continue
        counted = False
        if piece == "|":
            any_branch = any_branch or (prefix and last is not False)
            prefix, last = True, None
            continue
        if piece == ")":
            took_nothing = empty_group or any_branch or (prefix and last is not False)
            if stack:
                empty_group, any_branch, prefix, last = stack.pop()
            prefix, last = prefix and last is not False, took_nothing
            continue
        if piece.startswith("("):
            if piece.endswith(")"):     # inline flags, "(?i)": no item
                continue
            empty = False
            if piece == "(" and pattern.startswith("(?#", start):       # a comment, to its ")"
                close = pattern.find(")", start)
                skip_to(len(pattern) if close < 0 else close + 1)
                continue
            if piece == "(":
                opening = _GROUP_OPENING().match(pattern, end)
                if opening is not None:
                    empty = opening.group("empty") is not None
                    skip_to(opening.end())
            stack.append((empty_group, any_branch, prefix, last))
            empty_group, any_branch, prefix, last = empty, False, True, None
            continue
        if piece == "\\K":     # what the match took before it is not in the match: as if nothing were
            return True, repeats_empty
        # an item: an escape, a class, ".", an anchor or a character
        prefix = prefix and last is not False
        last = piece in ("^", "$") or piece in _EMPTY_ESCAPES or piece.startswith("\\b{")
    return any_branch or (prefix and last is not False), repeats_empty


# POSIX sets as tiktoken's engine (Rust's regex) reads them: ASCII only (`regex` takes Unicode's letters, marks, ...)
_POSIX_ASCII = {"alnum": "0-9A-Za-z", "alpha": "A-Za-z", "ascii": "\x00-\x7f", "blank": "\t ", "cntrl": "\x00-\x1f\x7f",
                "digit": "0-9", "graph": "!-~", "lower": "a-z", "print": " -~", "punct": "!-/:-@\\[-`{-~",
                "space": "\t\n\x0b\x0c\r ", "upper": "A-Z", "word": "0-9A-Za-z_", "xdigit": "0-9A-Fa-f"}
# escapes tiktoken's engine and `regex` read alike (a backslash before a character that is not a letter or a digit
# is that character in both; \\1 to \\9 are back references in both; anchors are rewritten on their own)
_SAME_ESCAPES = set("dDsSwWbBAzZtnrfvapPxuU123456789")
# tiktoken's escapes that `regex` spells otherwise, outside a class and inside one (None: no spelling there)
_TIKTOKEN_ESCAPES = {
    "\\e": ("\\x1b", "\\x1b"), "\\h": ("[0-9A-Fa-f]", "0-9A-Fa-f"), "\\H": ("[^0-9A-Fa-f]", None),
    "\\<": ("(?:\\b(?=\\w))", None), "\\>": ("(?:\\b(?<=\\w))", None), "\\b{start}": ("(?:\\b(?=\\w))", None),
    "\\b{end}": ("(?:\\b(?<=\\w))", None), "\\b{start-half}": ("(?:(?<!\\w))", None),
    "\\b{end-half}": ("(?:(?!\\w))", None)}     # (in a group: a quantifier after one takes it whole)


def _tiktoken_reading(pattern: str) -> tuple[str, str | None, str | None, str | None]:
    """(`pattern` with what tiktoken's engine (Rust's regex and fancy-regex) and `regex` spell otherwise respelled
    for `regex`, the first construct the two read differently that has no such spelling or None, the first
    construct respelled or None, the first construct that needs `regex`'s version 1 or None). Anchors are not
    touched (swap_tiktoken_anchors rewrites them).

    Classes inside classes and the set operations &&, -- and ~~ (Kimi K2's pattern has [\\p{Lu}...&&[^\\p{Han}]])
    are read by `regex` as tiktoken's engine reads them in its version 1 syntax: the pattern then starts with
    V1_PREFIX (and a "|" in a class is escaped: "||" is a union there). Refused: two different operations in one
    class (the engines order them otherwise: && before -- in `regex`, left to right in tiktoken's engine), and a
    class inside a class that starts with "]".

    Respelled: \\x{...}, \\u{...} and \\U{...}, \\e, \\h and \\H (a hex digit to tiktoken), \\<, \\>, \\b{start}, \\b{end} and
    their halves (word boundaries), POSIX sets ([[:alpha:]]: ASCII to tiktoken, Unicode to `regex`), and I or i
    under the flag i (`regex` also takes U+0130 or U+0131 for them). No spelling: under the flag i properties,
    POSIX sets, U+0130 or U+0131, and I or i in a class (the two engines fold them, and the categories,
    differently), escapes of letters not known to read alike (\\N, \\K,
    \\X, ...), the properties Print, Graph and Extended_Pictographic (other members), inline flags other than i, m,
    s, x and u ((?R): CRLF mode to tiktoken, recursion to `regex`), and
    "(?flags)" inside a group other than "(?:...)" (tiktoken's engine keeps the flags on after a capturing group, a
    lookaround or an atomic group; `regex` ends them with any group).

    >>> _tiktoken_reading(r"[[:alpha:]]+|\\x{e9}|\\h")
    ('[A-Za-z]+|\\\\U000000E9|[0-9A-Fa-f]', None, '[:alpha:]', None)
    >>> _tiktoken_reading(r"[\\w&&[^\\d]]+|[|]")[0]
    '(?V1-f)[\\\\w&&[^\\\\d]]+|[\\\\|]'
    >>> _tiktoken_reading(r"(?i:[sdmt]|ll)|(?i:[a-z]+)")[1]
    "'[a-z]' under the flag i"
    """
    out: list[str] = []
    refused = respelled = None
    cls = 0                                 # where the class holding the piece opens
    last: int | None = None                 # the class's last member, as a code point (None: not one)
    range_from: int | None = None           # the start of a range the piece ends
    scoped: list[bool] = []                 # for each group open at the piece: "(?:" or "(?flags:" (else "(", "(?=", ...)
    previous = ""                           # the piece before, in the class holding this one
    operations: list[str] = []              # for each class open at the piece: the set operation in it, or ""
    version1: str | None = None             # the first construct that needs `regex`'s version 1
    operand = False                         # the piece is the second character of a set operation
    opening = False                         # the piece before opened a class (or was a set operation)
    for start, end, in_class, flags in _pieces(pattern, nested=True):
        piece = pattern[start:end]
        spelled: str | None = piece
        operation = ""                      # the piece is a set operation's first character: which one
        if not in_class:
            cls, last, range_from = start, None, None
            if piece[0] == "[":
                operations = [""]
        elif piece in ("[", "[^"):          # a class inside the class
            version1 = version1 or "'[' inside a class"
            operations.append("")
            if pattern.startswith("]", end):
                refused = refused or f"{pattern[start:end + 1]!r} (a class inside a class that starts with ']')"
        elif piece == "]":
            operations.pop()
        elif operand:
            operand = False
        elif pattern[start:start + 2] in ("&&", "--", "~~"):
            operation = pattern[start:start + 2]
            version1 = version1 or operation
            operand = True
            if operations[-1] not in ("", operation):
                refused = refused or f"{operations[-1]} and {operation} in one class (ordered otherwise by the engines)"
            elif opening or pattern[start + 2:start + 3] in ("]", "&", "-", "~"):
                refused = refused or f"{operation!r} with no set on one side (the engines read it otherwise)"
            operations[-1] = operation
        elif piece == "|":
            spelled = "\\|"                # ("||" is a union in `regex`'s version 1, two "|" in tiktoken's engine)
        if piece[0] == "\\" and len(piece) > 1:
            letter = piece[1]
            if piece in _TIKTOKEN_ESCAPES:
                spelled = _TIKTOKEN_ESCAPES[piece][in_class]
            elif letter in "xuU" and piece[2:3] == "{":
                try:
                    spelled = f"\\U{int(piece[3:-1], 16):08X}"
                except ValueError:
                    spelled = None
            elif letter.isalnum() and letter not in _SAME_ESCAPES or "i" in flags and letter in "pP":
                spelled = None
            elif letter in "pP" and (_property_name(piece) in _PROPERTIES_READ_OTHERWISE or "!=" in piece):
                spelled = None              # (\p{gc!=L}: a negation to tiktoken's engine, nothing to `regex`)
            elif letter in "pP" and len(piece) == 3 and piece[2].islower():
                spelled = None              # \pl: \p{L} to tiktoken's engine, nothing to `regex`
        elif in_class and piece.startswith("[:") and len(piece) > 4:
            name = piece[2:-2]
            ascii_set = _POSIX_ASCII.get(name.lstrip("^"))
            spelled = None if ascii_set is None or "i" in flags or previous == "-" else \
                _complement(ascii_set) if name.startswith("^") else ascii_set    # (a range's end: refused)
        elif in_class and piece == "-" and previous.startswith("[:") and pattern[end:end + 1] != "]" and not operation:
            spelled = "\\-"                # after a set, a "-" is itself to tiktoken's engine; after its ASCII
                                            # spelling ("..._") `regex` would start a range
        elif not in_class and piece[:2] == "(?" and set(piece[2:-1]) - set("imsxu-"):
            spelled = None                  # R (CRLF mode to tiktoken, recursion to `regex`), U (lazy by default)
        elif "x" in flags and piece.isspace() and (in_class or piece not in " \t\n\r"):
            refused = refused or f"{piece!r} where the flag x is on"    # `regex` skips U+3000, \x0b, ... too, and
                                                                        # keeps spaces in a class
        elif not in_class and piece[:2] == "(?" and piece[-1] == ")" and scoped and not scoped[-1]:
            refused = refused or f"{piece!r} inside a capturing group or a lookaround (tiktoken keeps it on after it)"
        if not in_class and piece[0] == "(":
            scoped.append(piece[-1] == ":")
        elif not in_class and piece == ")" and scoped:
            scoped.pop()
        if "i" in flags and spelled is not None and (in_class or piece[0] != "["):
            point = _code_point(piece)
            folded_otherwise = False        # the piece, or the range it ends, holds I, i, U+0130 or U+0131
            if in_class and piece == "-" and last is not None:
                range_from, point = last, None
            elif range_from is not None and point is not None:
                folded_otherwise = any(range_from <= t <= point for t in _FOLDED_OTHERWISE)
                range_from, point = None, None
            elif not in_class and point in (0x49, 0x69):
                spelled = "(?-i:[Ii])"      # I or i alone: to tiktoken's engine exactly these two
            else:
                folded_otherwise = point in _FOLDED_OTHERWISE
            if folded_otherwise and refused is None:
                close = pattern.find("]", end) if in_class else -1
                refused = f"{pattern[cls:close + 1] if close > 0 else piece!r} under the flag i"
            last = point
        if spelled is None:
            refused = refused or piece
            spelled = piece
        elif spelled != piece and piece != "|":        # (a "|" escaped in a class reads alike in both)
            respelled = respelled or piece
        out.append(spelled)
        previous = piece if in_class else ""
        opening = piece[0] == "[" and not piece.startswith("[:") or bool(operation)
    refused = refused or negated_class_of_two_sets(pattern)
    alone = _negated_class_alone_under_i(pattern)
    if refused is None and alone is not None:
        refused = f"{alone!r} (an alternative of its own where the flag i is on elsewhere: `regex` may ignore its case)"
    reading = "".join(out)
    return (V1_PREFIX + reading if version1 else reading), refused, respelled, version1


_NEGATED_CLASS = _lazy(r"\[\^(\]?(?:\\.|[^\]\\])*)\]")
_SETS = _lazy(r"\\[sSdD]|\\[pP]\{\^?")


def negated_class_of_two_sets(pattern: str) -> str | None:
    """The first negated class holding two of \\s \\S \\d \\D \\p{..} \\P{..}, one of them negated, as "[^" and
    those sets, or None: `regex` (2026.11) reads [^\\s\\S] and [^\\P{L}a\\p{L}] as any character, the other engines
    as none (rarer shapes of the same may go wrong too).

    >>> negated_class_of_two_sets(r"[^\\s\\S]|b"), negated_class_of_two_sets(r"[^\\S\\r\\n]+")
    ('[^\\\\s\\\\S', None)
    """
    for m in _NEGATED_CLASS().finditer(pattern):
        sets = _SETS().findall(m.group(1))
        if len(sets) > 1 and any(x[1] in "SDP" or x.endswith("^") for x in sets):
            return "[^" + "".join(sets)
    return None


_NEGATED_CLASS_ALONE = _lazy(r"(?:^|\||\((?:\?:)?)(\[\^(?:\\.|[^\]\\])+\])(?:\{\d+(?:,\d*)?\})?(?=\||\)|$)")
_FLAG_I = _lazy(r"\(\?[a-zA-Z]*i[a-zA-Z]*(?:-[a-zA-Z]*)?[:)]")


def _negated_class_alone_under_i(pattern: str) -> str | None:
    """A negated class that is a whole alternative (or counted, [^a]{1}) in a pattern where the flag i is on
    somewhere, or None: `regex` 2026.11 can then read the class ignoring case ((?i:x)|[^a]|y does not match "A";
    2026.12 mended it, and the pattern is still refused: the package takes either),
    where the other engines and the pattern's own flags do not.

    >>> _negated_class_alone_under_i(r"(?i:x)|[^a]|y"), _negated_class_alone_under_i(r"x|[^a]|y")
    ('[^a]', None)
    """
    m = _NEGATED_CLASS_ALONE().search(pattern) if _FLAG_I().search(pattern) else None
    return m.group(1) if m else None


# properties of other members in the two engines (as _property_name spells them): Print and Graph take the format
# characters (Cf) in `regex` only, Extended_Pictographic takes U+2605 and 650 other symbols in tiktoken's engine only
_PROPERTIES_READ_OTHERWISE = {"print", "graph", "extendedpictographic", "extpict"}


def _property_name(piece: str) -> str:
    """The name of the property \\p{...} or \\P{...} names, as both engines compare names: lower case, without
    spaces, "_", "-" or a first "^" (`regex`'s negation)."""
    name = piece[3:-1] if piece[2:3] == "{" else piece[2:]
    return name.lower().replace(" ", "").replace("_", "").replace("-", "").lstrip("^")


# I, i, İ and ı: folded together by `regex`, not by tiktoken's engine (I with i, İ and ı each alone)
_FOLDED_OTHERWISE = (0x49, 0x69, 0x130, 0x131)


def _code_point(piece: str) -> int | None:
    """The character a piece of a regex (_pieces) stands for: itself, or a hex escape's; None for others."""
    if len(piece) == 1:
        return ord(piece)
    if piece[:2] in ("\\x", "\\u", "\\U") and len(piece) > 2:
        try:
            return int(piece[2:].strip("{}"), 16)
        except ValueError:
            return None
    return None


def _complement(ascii_set: str) -> str:
    """The ranges of every code point not in `ascii_set` (ranges of ASCII characters, as _POSIX_ASCII's)."""
    import regex

    members = set(regex.findall(f"[{ascii_set}]", "".join(map(chr, range(128)))))
    out, lo = [], 0
    for cp in range(129):
        if cp == 128 or chr(cp) in members:
            if lo < cp:
                out.append((lo, cp - 1))
            lo = cp + 1
    out.append((128, 0x10FFFF))
    return "".join(f"\\U{a:08X}-\\U{b:08X}" for a, b in out)


def pattern_from_tiktoken(pat_str: str) -> str:
    """The `regex` pattern giving the pieces tiktoken gives with `pat_str` (tiktoken.Encoding's pat_str, read by
    Rust's regex and fancy-regex): anchors as swap_tiktoken_anchors rewrites them, constructs `regex` spells
    otherwise respelled (_tiktoken_reading); a ValueError naming the first construct the two engines read
    differently that `regex` cannot spell (the ids would differ). The built-in patterns are kept. A pat_str
    spelling one of PATTERNS' names, or any one word (which resolve_pattern refuses as a misspelt name), is a
    regex matching that word, as tiktoken reads it: it comes back in a group, so that it is not taken for a name.

    >>> pattern_from_tiktoken(r"[[:upper:]]+|\\s+$")
    '[A-Z]+|\\\\s+\\\\Z'
    >>> pattern_from_tiktoken("gpt2")
    '(?:gpt2)'
    """
    if pat_str in PATTERNS.values() or pat_str == R50K_PATTERN:
        return pat_str
    if pat_str == GPT2_ENCODER_PAT_STR:
        return GPT2_PATTERN
    respelled, refused, _, _ = _tiktoken_reading(pat_str)
    if refused is not None:
        raise ValueError(f"pat_str {shown_pattern(pat_str)} has {refused}, which tiktoken's regex engine and `regex` "
                         "read differently, so the ids would differ from tiktoken's (spell the characters out: "
                         r"\p{...} classes, [A-Za-z] ranges)")
    pattern = swap_tiktoken_anchors(respelled)
    if repeats_what_can_be_empty(pattern):
        raise ValueError(f"pat_str {shown_pattern(pat_str)} repeats what can match empty text (as (?:a*|b)+): "
                         "tiktoken's regex engine and `regex` end such a loop at different places, so the ids would "
                         "differ")
    if can_match_empty(pattern):
        # tiktoken's engine takes the leftmost-first match at each place, and where it is empty right after the last
        # match, goes on one character later; `regex` then looks for a longer match at the same place (a|(?=b)|b on
        # "ab": "a" to tiktoken, "a", "", "b" to `regex`). In an atomic group `regex` has no other match there either.
        prefix = V1_PREFIX if pattern.startswith(V1_PREFIX) else ""
        return f"{prefix}(?>{pattern[len(prefix):]})"
    return f"(?:{pattern})" if pattern in PATTERNS or _NAME_LIKE().fullmatch(pattern) else pattern


def check_tiktoken_readable(pattern: str) -> None:
    """ValueError when tiktoken's engine would read `pattern` (a `regex` pattern, anchors aside: tiktoken_anchors
    rewrites them) otherwise than `regex` does, naming the construct (_tiktoken_reading)."""
    if pattern in PATTERNS.values() or pattern == R50K_PATTERN:
        return
    version1 = pattern.startswith(V1_PREFIX)        # (as pattern_from_tiktoken gives a pattern that needs it)
    _, refused, respelled, needs = _tiktoken_reading(pattern[len(V1_PREFIX):] if version1 else pattern)
    construct = refused or respelled or (None if version1 else needs)
    if construct is not None:
        raise ValueError(f"the pattern has {construct}, which `regex` and tiktoken's regex engine read differently, "
                         "so tiktoken's ids would differ")
    if can_match_empty(pattern):        # (pattern_from_tiktoken reads such a pat_str; none is written: helper-148)
        raise ValueError("the pattern can match empty text (as a|(?=b)|b or \\b): tiktoken's engine goes on past an "
                         "empty match where `regex` looks for a longer one at the same place (other ids), and "
                         "tiktoken's encode fails on some empty matches")


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
    if pattern not in PATTERNS.values() and pattern != R50K_PATTERN:
        pattern = rewrite_anchors(pattern, {"$": r"(?=\n?\z)", r"\Z": r"\z"})
    return pattern.removeprefix(V1_PREFIX)      # (tiktoken's engine reads version 1's classes: KIMI_PAT_STR)
