"""HF tokenizers' ``tokenizer.json``: reading the files of byte-level BPE models (Tokenizer.from_hf), and the
spelling of a pattern in them (both ways).

What a file may hold, and what it becomes:

- ``model``: type "BPE"; ``vocab`` {token: id} in GPT-2's byte-to-unicode strings (the ids as in the file:
  any order, gaps allowed, the single bytes anywhere, but every byte must have one); ``merges`` in rank order,
  as "a b" strings or [a, b] pairs. ``unk_token`` and ``fuse_unk`` are never used (every byte has a token).
  ``ignore_merges: true`` (Llama 3's files have it: HF then gives a pre-token that is a vocab token that
  token's id, as tiktoken does) is read when it changes nothing (every vocab token that is not an added token
  is made by a merge and merges back to itself), or when the file is tiktoken's ranks as transformers'
  TikTokenConverter writes them (Llama 3's: every way of writing a token as two tokens is a merge, in the order
  of the ids of the tokens made, no merge takes or makes an added token): it is then read as from_tiktoken
  reads those ranks (the ids the ranks; Tokenizer.by_ranks_only when merging does not make every token, as for
  Llama 3's 678). Otherwise it is refused, naming a token and why the file is not such ranks.
- ``pre_tokenizer``: ByteLevel with use_regex true (GPT-2's pattern), or a Sequence of a Split (a regex or a
  string, behavior Isolated, not inverted) and ByteLevel with use_regex false, as Llama 3 and GPT-4-style
  files have: the Split's regex becomes the pattern; or DeepSeek V3's three Splits (DEEPSEEK3_SPLITS, as its
  files spell them) then ByteLevel, which become DEEPSEEK3_PATTERN. ByteLevel's add_prefix_space must be false.
- ``added_tokens``: each is matched in the text before pre-tokenizing (the longest first), with its id. HF
  matches the non-special ones in the text too, so all become bpe_fast special tokens (Tokenizer.special_tokens
  lists both kinds; export_hf writes them back as special). rstrip and single_word must be false; lstrip
  (RoBERTa's and BART's <mask>) is followed (Tokenizer.with_special_lstrip: the white space before such a token,
  back to the end of the added token before it, is in no token), but not with a normalizer.
- ``normalizer``: null, or NFC (Qwen2's, Qwen2.5's and Qwen3's files; also as the one normalizer of a
  Sequence): the tokenizer then normalizes the text between its special tokens, as HF does
  (Tokenizer.with_normalizer); its added tokens must have normalized false (HF looks for those with normalized
  true in the normalized text), unless they are made of ASCII characters NFC leaves alone wherever they are
  (NFC_INERT: not letters nor ;<=>`; GPT-NeoX's and Pythia's runs of spaces). ``decoder`` ByteLevel (or a Sequence of it alone) or null.
- Ignored: ``post_processor`` (ByteLevel, TemplateProcessing, RobertaProcessing, BertProcessing, a Sequence of
  them): encode gives HF's ``encode(text, add_special_tokens=False)``, so the tokens a template adds around a
  text (Llama 3's <|begin_of_text|>) are not added; prepend them yourself. ``truncation`` and ``padding`` too:
  bpe_fast never truncates or pads.

Anything else is refused with a FormatError (a ValueError) naming the file, the line where known and what is
unsupported: other model types (WordPiece, Unigram, WordLevel), byte_fallback, dropout,
continuing_subword_prefix, end_of_word_suffix, ignore_merges that changes ids (but for ranks, above), a
normalizer other than NFC, other pre-tokenizers, decoders and post-processors. So is some of what HF's own reader refuses (_check_fields): a
top-level field it does not know, a version other than "1.0", a model setting or ByteLevel flag of the wrong JSON
type ("ignore_merges": "no"), an added token without its five flags, merges written in both forms. (Inside the
parts bpe_fast ignores, the post-processor's and truncation's own fields, HF checks more.)

Where HF and bpe_fast could differ, and what is refused for it:

- Merging. bpe_fast joins the adjacent pair whose concatenation the earliest merge made (tiktoken's rule), HF
  the pair that comes first in the list. They agree for merges made by BPE training and for merges recovered
  from tiktoken ranks (all merges that make one token next to each other; where two ways of writing one token
  are both adjacent at once, HF joins the one listed first, bpe_fast the leftmost: no text was found where that
  changes the ids, of 2 million made to look for it on Llama 3's file). Refused: a merge listed twice (HF keeps
  its later place) and a token made by merges with other merges between them.
- Added token ids. HF numbers added tokens itself (a token in the model's vocab keeps that id; the others
  follow the vocab in file order) and only warns when the file says otherwise: such a file is refused, as no
  ids are both the file's and HF's. An added token whose UTF-8 bytes are a model token with another id
  (GPT-NeoX's "  ", also the model's "ĠĠ") is read: HF finds the added token in the text first, so the model's
  id is never encoded and decodes to the same bytes, as in bpe_fast (such a tokenizer is not saved as vocab.json,
  which gives a token's bytes one id; export_hf writes it). A model vocab key that is an added token's text and
  whose byte-level bytes no text holds (HF's trainer puts its special tokens in the vocab under their text:
  "<|début|>" spells b"<|d\\xe9but|>") is read as that text, as a key outside the byte mapping is (key_read_as_text;
  HF decodes such an id to the key's bytes, bpe_fast to the text; export_hf writes such special tokens so).
- Patterns. HF runs the Split regex on Oniguruma, bpe_fast on `regex` (see pattern_from_hf).
"""
from __future__ import annotations

import codecs
import functools
import json
import operator
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn

import numpy as np
import regex
from numpy.typing import NDArray

from . import formats
from ._gpt2_files import TokenIndex, model_spans, parse_merge_list, parse_vocab, token_list
from ._scan import white_space_run_start
from .formats import FormatError
from .patterns import (DEEPSEEK3_PATTERN, DEEPSEEK3_SPLITS, DIGIT_RUNS_GPT2_PATTERN, GPT2_PATTERN, GPT4_PATTERN,
                       LLAMA3_PATTERN, O200K_PATTERN, STARCODER_PATTERN,
                       KIMI_PAT_STR, KIMI_PATTERN, QWEN2_PATTERN, R50K_PATTERN, TEKKEN_PATTERN, V1_PREFIX, can_match_empty,
                       negated_class_of_two_sets,
                       rewrite_anchors, shown_pattern)
from .procs import ThreadJob
from ._types import Merges, StrPath, Vocab
from .merge_rule import describe_difference, merge_rule_difference, rule_difference_of_indices
from .ranks import not_as_ranks, ranks_of_merge_list, ranks_of_model
from .token_arrays import all_distinct

if TYPE_CHECKING:
    from .ranks import RankedTokens

__all__ = ["hf_added_token_difference", "hf_added_token_ids", "key_read_as_text", "pattern_from_hf", "pattern_to_hf", "read_tokenizer_json", "split_to_hf"]

# Oniguruma reads "{1,3}+" as a repeated interval, not a possessive one; at the end of its alternative a greedy
# "{1,3}" matches what tiktoken's possessive one does, so files (and export_hf) spell cl100k's pattern so.
GPT4_PATTERN_HF = GPT4_PATTERN.replace(r"\p{N}{1,3}+", r"\p{N}{1,3}")
_POSSESSIVE_INTERVAL = regex.compile(r"\{(?:\d+(?:,\d*)?|,\d+)\}\+")      # (searched with escapes masked: _unescaped_match)
# Oniguruma reads "x{3}?" as an optional "x{3}", `regex` as a lazy one (exactly three)
_OPTIONAL_COUNT = regex.compile(r"\{\d+\}\?")
# built-in patterns that HF files spell as bpe_fast does (Llama 3's, Qwen2's and Mistral's files among them): no anchor, no
# possessive interval, and every character in some match, so an Isolated Split gives their matches alone
_VERBATIM = (GPT2_PATTERN, O200K_PATTERN, LLAMA3_PATTERN, QWEN2_PATTERN, TEKKEN_PATTERN)
_IGNORED_POST_PROCESSORS = {"ByteLevel", "TemplateProcessing", "RobertaProcessing", "BertProcessing"}


_Z = r"\Z"
_END_OR_BEFORE_LAST_NEWLINE = r"(?=\n?\z)"     # Oniguruma's \Z (and `regex`'s $ outside multi-line mode)
_LINE_START = r"(?:\A|(?<=\n)(?!\z))"         # Oniguruma's ^: not at the end of a text after its final newline
# tiktoken's spelling of GPT-2's pattern (gpt2, r50k_base, p50k_base), which runs natively, as export_hf writes it
# (a Removed, inverted Split: split_to_hf), its "$" spelled as `regex` reads it
R50K_PATTERN_HF = R50K_PATTERN.replace(r"\s++$", r"\s++" + _END_OR_BEFORE_LAST_NEWLINE)


def pattern_from_hf(split_regex: str, keep_gaps: bool = True) -> str:
    """The bpe_fast pattern for an HF Split regex: the same pieces as HF (Oniguruma) gives. ValueError saying
    why when there is none. keep_gaps: the Split is Isolated (the text between matches is a piece), else
    Removed and inverted (only the matches are pieces: what bpe_fast and tiktoken do with a pattern).

    GPT2_PATTERN, O200K_PATTERN, LLAMA3_PATTERN, QWEN2_PATTERN and TEKKEN_PATTERN, character for character, and GPT4_PATTERN as
    HF files spell it (GPT4_PATTERN_HF), and Kimi K2's pat_str (KIMI_PAT_STR: KIMI_PATTERN) run natively. Another regex is wrapped so that `regex` reads it as
    Oniguruma does: ^ and $ match at each line's end (Oniguruma's default; its ^ not at the end of the text), and the text between two
    matches is a piece of its own (HF's Isolated keeps it; bpe_fast would drop it); without keep_gaps, a regex
    with no anchor that the two engines read otherwise (^, $, \\Z) is returned as it is (as export_hf writes a
    pattern). Refused: "{m,n}+" (a possessive interval in `regex`, a repeated one in Oniguruma; tiktoken's own
    spelling of cl100k has one), what else the two engines read differently (\\w, \\W, \\h, \\H, \\b, \\B, \\K,
    \\N, a class in a class: _engine_difference), capturing groups, and a regex that matches empty text.

    >>> pattern_from_hf(GPT4_PATTERN_HF) == GPT4_PATTERN
    True
    >>> import regex
    >>> regex.findall(pattern_from_hf(r"\\p{L}+"), "ab, cd")
    ['ab', ', ', 'cd']
    """
    if split_regex in _VERBATIM:
        return split_regex
    if split_regex == GPT4_PATTERN_HF:
        return GPT4_PATTERN
    if split_regex == KIMI_PAT_STR:         # Oniguruma nests classes and reads && as tiktoken's engine does
        return KIMI_PATTERN
    if split_regex == R50K_PATTERN_HF and not keep_gaps:       # as export_hf writes tiktoken's gpt2 / r50k_base
        return R50K_PATTERN
    found = _unescaped_match(_POSSESSIVE_INTERVAL, split_regex)
    if found:
        raise ValueError(f"the Split regex has {found!r}, which Oniguruma (HF) reads as a repeated interval and "
                         "`regex` as a possessive one, so the pieces would differ (tiktoken's spelling of cl100k "
                         r"has '\p{N}{1,3}+'; HF files write '\p{N}{1,3}')")
    split_regex = _nested_classes_joined(split_regex)
    _check_optional_count(split_regex, "the Split regex")
    _check_same_reading(split_regex, "the Split regex")
    anchored = _anchored(split_regex)
    wrapped = _wrap(split_regex)
    try:
        rx = regex.compile(anchored)
        regex.compile(wrapped)
    except regex.error as exc:
        raise ValueError(f"the Split regex {split_regex!r} does not compile with `regex`: {exc}") from None
    except RecursionError:          # `regex`'s parser recurses into each group
        raise ValueError(f"the Split regex {shown_pattern(split_regex)} does not compile with `regex`: groups nested "
                         "too deeply") from None
    if rx.groups:
        raise ValueError(f"the Split regex {split_regex!r} has capturing groups; write them (?:...)")
    if can_match_empty(anchored):
        raise ValueError(f"the Split regex {split_regex!r} can match empty text")
    if keep_gaps:
        return wrapped
    if regex.fullmatch(r"\w+", split_regex):
        return f"(?:{split_regex})"     # a regex, not a pattern's name ("gpt2") nor a misspelt one (resolve_pattern)
    # a regex without anchors the engines read otherwise reads as itself: the pattern export_hf wrote it from
    # (a round trip keeps the pattern), not its (?m:...) spelling
    return split_regex if rewrite_anchors(split_regex, _ANY_ANCHOR) == split_regex else anchored


def _nested_classes_joined(pattern: str) -> str:
    """`pattern` with each class nested in a class written into it, where Oniguruma reads the nested class as a
    union (BLOOM's Split regex " ?[^(\\s|[.,!?…。，、।۔،])]+": the characters ( | ) and .,!?… and white space):
    a nested class that is not negated, not a POSIX bracket ([:alpha:]), holds no "[" or "&&", does not start
    with "]" and is not the end of a range. `regex` reads a "[" in a class as a literal, so any other nesting is
    left as it is, for _engine_difference to refuse; so is a pattern with "&&" anywhere (an intersection's
    operand joined into its class would read as a literal "&" to `regex`)."""
    if "&&" in pattern:
        return pattern
    out: list[str] = []
    i, n, depth = 0, len(pattern), 0
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if depth and c == "[" and out and out[-1] != "-" and pattern[i + 1:i + 2] not in ("^", "]", ":", ""):
            end = i + 1
            while end < n and pattern[end] != "]":
                end += 2 if pattern[end] == "\\" else 1
            inner = pattern[i + 1:end]
            if end < n and "[" not in inner.replace("\\[", ""):
                out.append(inner)
                i = end + 1
                continue
        if c == "[" and not depth:
            depth = 1
            out.append(c)
            i += 1
            for lead in ("^", "]"):             # a leading ^ negates; a "]" first is a literal
                if pattern[i:i + 1] == lead:
                    out.append(lead)
                    i += 1
            continue
        if c == "]" and depth:
            depth = 0
        out.append(c)
        i += 1
    return "".join(out)


def _check_optional_count(pattern: str, what: str) -> None:
    """ValueError when `pattern` has "{n}?", which the two engines read otherwise."""
    found = _unescaped_match(_OPTIONAL_COUNT, pattern)
    if found:
        raise ValueError(f"{what} has {found!r}, which Oniguruma (HF tokenizers) reads as an optional "
                         f"{found[:-1]!r} and `regex` as a lazy one, so the pieces would differ")


def _unescaped_match(rx: regex.Pattern[str], pattern: str) -> str | None:
    """The first match of rx in `pattern` outside its escapes (each backslash and the character after it hidden:
    in "\\\\{2}?" the brace is not escaped), as `pattern` spells it; or None."""
    m = rx.search(regex.sub(r"\\.", "\0\0", pattern, flags=regex.DOTALL))
    return pattern[m.start():m.end()] if m else None


_ANY_ANCHOR = {"^": "\\A", "$": "\\z", _Z: "\\z"}     # changes each anchor that (?m:...) or Oniguruma reads otherwise


def pattern_to_hf(pattern: str) -> str:
    """The Split regex that gives, in HF, the pieces `pattern` gives in bpe_fast, with split_to_hf's behavior
    (the inverse of pattern_from_hf for the patterns it returns).

    >>> pattern_to_hf(pattern_from_hf(r"\\p{L}+"))
    '\\\\p{L}+'
    """
    return split_to_hf(pattern)[0]


def split_to_hf(pattern: str) -> tuple[str, str, bool]:
    """(regex, behavior, invert) of the HF Split that gives the pieces `pattern` gives in bpe_fast: a built-in
    pattern, or one pattern_from_hf wrapped, as an Isolated Split (every piece of the text, gaps included);
    any other as a Removed, inverted Split (only its matches: bpe_fast skips the text no match covers), its
    anchors spelled as Oniguruma reads them (there ^ and $ match at every line)."""
    if pattern == GPT4_PATTERN:
        return GPT4_PATTERN_HF, "Isolated", False
    if pattern == KIMI_PATTERN:
        return KIMI_PAT_STR, "Isolated", False
    if pattern in _VERBATIM:
        return pattern, "Isolated", False
    inner_length, odd = divmod(len(pattern) - len(_wrap("")), 2)     # P appears twice in _wrap(P)
    if not odd and inner_length > 0:
        inner = pattern[len("(?m:"):len("(?m:") + inner_length]
        if pattern == _wrap(inner):
            return _read_alike(inner), "Isolated", False
    if pattern.startswith("(?m:") and pattern.endswith(")"):
        inner = pattern[len("(?m:"):-1].replace(_END_OR_BEFORE_LAST_NEWLINE, _Z).replace(_LINE_START, "^")
        if pattern == _anchored(inner):                               # pattern_from_hf(..., keep_gaps=False)
            return _read_alike(inner), "Removed", True
    if pattern.startswith(V1_PREFIX):
        raise ValueError(f"the pattern {shown_pattern(pattern)} has set operations or classes in classes (as read from a "
                         "tiktoken pat_str): the export does not spell them for Oniguruma (HF tokenizers)")
    alike = _read_alike(pattern)        # (first: what Oniguruma reads otherwise, \K among them, is named)
    if can_match_empty(pattern):        # bpe_fast skips such matches; HF's Removed, inverted Split
        raise ValueError(f"the pattern {shown_pattern(pattern)} can match empty text, which HF tokenizers "  # keeps them
                         "would keep as pieces (and drop the text between them)")
    return rewrite_anchors(alike, {"^": r"\A", "$": _END_OR_BEFORE_LAST_NEWLINE, _Z: r"\z"}), "Removed", True


def _read_alike(pattern: str) -> str:
    """`pattern`, for an HF Split regex, or a ValueError when Oniguruma would read it otherwise than `regex`, or
    when pattern_from_hf would not read it back (capturing groups: where a group is named, Oniguruma does not
    capture the others, and numbers its back references otherwise)."""
    _check_optional_count(pattern, "the pattern")
    _check_same_reading(pattern, "the pattern", importing=False)
    if regex.compile(pattern).groups:
        raise ValueError(f"the pattern {shown_pattern(pattern)} has capturing groups, which from_hf refuses in a "
                         "Split regex (the export could not be read back); write them (?:...)")
    found = _unescaped_match(_POSSESSIVE_INTERVAL, pattern)
    if found:
        raise ValueError(f"the pattern has {found!r}, a possessive interval, which Oniguruma (HF tokenizers) reads "
                         "as a repeated one, so the pieces would differ")
    return pattern


# Unicode properties the two engines give other characters: Word is \\w; XDigit takes fullwidth digits in `regex`;
# PosixPunct takes 130 more in Oniguruma (the circled letters U+24B6-24E9, ...)
_PROPERTIES_READ_OTHERWISE = {"word", "xdigit", "posixpunct",
                              "extendedpictographic", "extpict"}   # 651 characters of Unicode 14 (★, 😀, ...)
# property names `regex` reads and Oniguruma refuses (HF cannot load the file): its Is prefix (\p{IsLatin}), its
# Posix and XPosix names, and a property with its value (\p{Script=Latin}, \p{gc=L}: "=" and ":", tested apart)
_PROPERTY_FORMS_NOT_READ = ("is", "posix", "xposix")


def _property_name(name: str) -> str:
    """A \\p{...} property's name as both engines match it: case, spaces, "_" and "-" aside, "^" (negated) dropped."""
    return name.lower().replace("_", "").replace(" ", "").replace("-", "").lstrip("^")


def _not_oniguruma_s(name: str) -> bool:
    """Whether Oniguruma refuses a property so named (_property_name) that `regex` reads (it reads PosixPunct,
    otherwise)."""
    return name not in _PROPERTIES_READ_OTHERWISE and (
        name.startswith(_PROPERTY_FORMS_NOT_READ) or "=" in name or ":" in name)


@functools.cache
def _folded_otherwise() -> tuple[frozenset[str], tuple[str, ...]]:
    """(the characters the flag i matches otherwise in the two engines, the case folds of several characters):
    `regex` folds i with İ and I with ı; Oniguruma matches a character whose case fold is several characters (ß,
    ﬁ, ŉ) with those characters (ss, fi, ʼn), `regex` does not."""
    several = [chr(c) for c in range(0x10000) if len(chr(c).casefold()) > 1]
    return frozenset("iIı" + "".join(several)), tuple({c.casefold() for c in several})


def _engine_difference(pattern: str, importing: bool = True) -> str | None:
    """The first construct of `pattern` that Oniguruma (HF) and `regex` read differently, beside anchors
    (rewritten) and {m,n}+ (refused on its own), or None: \\w and \\W (Oniguruma's word characters take the other
    numbers, ² ³ ¹ ¼ ½ ¾, and more; \\p{Word} too), \\h and \\H (a hex digit to Oniguruma, horizontal space to
    `regex`), \\b and \\B outside a class (word boundaries, by \\w), \\K (Oniguruma's "keep"), \\N outside a class
    (any character but a newline to Oniguruma, a literal N or a named character to `regex`), \\X (grapheme
    clusters, cut differently), \\pL without braces, \\p{XDigit}, \\p{Extended_Pictographic}, the flag m ((?m: is
    dot-all to Oniguruma), a "[" inside a class (Oniguruma's nested classes, POSIX brackets and && intersections; a literal "[" to
    `regex`), and where the flag i is on, what it matches otherwise (returned after "(?i)"): i, I, ı, İ and a
    character whose case fold is several characters, in a class too (or in a range), letters that spell such a
    fold (ss, fi: Oniguruma matches ß, ﬁ), and any property (\\p{Lu}: every cased letter to `regex`); and an
    option group such as (?i) after the start of an alternative when another alternative follows it (Oniguruma reads
    x(?i)y|z as x(?i:y|z), `regex` as xy|z); and (*NAME) (a callout to Oniguruma, a backtracking verb such as
    (*SKIP) or (*FAIL) to `regex`). Also: where the flag i is on, letters that spell such a fold across a plain
    group's edge ((?:s)s: Oniguruma joins them), a class holding an escape or negated (Oniguruma closes it under case folding), \\u and
    \\x escapes; an escape not read alike (_escape_read_otherwise); flags other than i ((?x) skips other spaces, (?L)
    is the longest match to Oniguruma; (?-m) in a regex with $ where importing: it turns the multi-line $ of
    _anchored's (?m:...) off, and Oniguruma's $ is a line's end whatever the flags); a group opening other than (?: (?= (?! (?<= (?<! (?>
    (?<name> and flags ((?# comments, (?| (?( (?R ...); {,} (literal text to Oniguruma, {0,} to `regex`); and a
    negated class holding two of \\s \\S \\d \\D \\p \\P, one negated ([^\\s\\S]: no character to Oniguruma, any to
    `regex`).
    importing: `pattern` is an HF Split regex (else a bpe_fast pattern to write as one, its anchors rewritten)."""
    depth = 0                   # inside a class: 1 (Oniguruma could nest further; that is refused here)
    ignore_case = False         # the flag i here
    begun = False               # the alternative here has begun: an option group such as (?i) after its start
    reaching = ""               # reaches over the alternatives after it in Oniguruma (the first such in this group)
    # for each group the parser is in, (ignore_case, begun, reaching) to go back to when it closes (begun: the group
    # is an item), and whether it is a plain (?:...), which Oniguruma joins with the letters around it: where the
    # flag i is on, (?:s)s is "ss", which matches ß
    outer: list[tuple[bool, bool, str, bool]] = []
    letters = ""                # the literal characters just before, where the flag i is on
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            e = pattern[i + 1]
            if e in "wWhHX" or (e in "bBKN" and not depth):
                return "\\" + e
            construct = _escape_read_otherwise(pattern, i, bool(depth), ignore_case)
            if construct is not None:
                return construct
            if e in "pP":
                if pattern[i + 2:i + 3] != "{":
                    return pattern[i:i + 3]          # \pL: a letter class to `regex`, not to Oniguruma
                end = pattern.find("}", i)
                name = _property_name(pattern[i + 3:end])
                # where the flag i is on: \p{Lu} is every cased letter to `regex`; in an alternation, `regex` closes
                # the others under case folding too ((?i:\p{L}|a) and U+0345: ι)
                if name in _PROPERTIES_READ_OTHERWISE or _not_oniguruma_s(name) or ignore_case:
                    return ("(?i)" if ignore_case else "") + pattern[i:end + 1]
            letters = ""
            begun = True
            i += 2
            continue
        if c == "(" and pattern[i + 1:i + 2] == "*" and not depth:
            return pattern[i:pattern.find(")", i) + 1] or "(*"      # Oniguruma's callouts, `regex`'s verbs
        if c == "(" and pattern[i + 1:i + 2] == "?" and not depth:
            flags = regex.match(r"[a-zA-Z-]*(?=[:)])", pattern[i + 2:])
            if flags and set(flags.group()) - set("i-") and (
                    "m" in flags.group().split("-")[0] or set(flags.group()) - set("im-")
                    or (importing and rewrite_anchors(pattern, {"$": ""}) != pattern)):
                # (?m: dot-all to Oniguruma, multi-line to `regex`; (?x) skips other spaces, (?L) the longest match
                # to Oniguruma, locale to `regex`; (?s), (?a), (?u): not Oniguruma's
                return pattern[i:i + 3 + len(flags.group())]
            if not flags and not regex.match(r"[=!>]|<[=!]|<[A-Za-z_]", pattern[i + 2:i + 4]):
                return pattern[i:i + 3]         # (?# a comment (Oniguruma ends it at an escaped ")"), (?| (?( (?R ...
            if flags:
                on, _, off = flags.group().partition("-")
                plain = not flags.group()
                if pattern[i + 2 + len(flags.group())] == ":":
                    outer.append((ignore_case, True, reaching, plain))
                    begun, reaching = False, ""
                elif begun:         # Oniguruma reads x(?i)y|z as x(?i:y|z), `regex` as xy|z (z with the flag)
                    reaching = reaching or pattern[i:i + 3 + len(flags.group())]
                ignore_case = "i" in on or (ignore_case and "i" not in off)
                if not plain:
                    letters = ""
                i += 3 + len(flags.group())
                continue
        if ignore_case and c not in "]-" and (depth or c not in "\\()[]|*+?{}.^$"):
            several, folds = _folded_otherwise()
            if c in several:
                return "(?i)" + c
            if depth and pattern[i + 1:i + 2] == "-" and pattern[i + 2:i + 3] not in ("]", ""):
                high = pattern[i + 2]
                if high == "\\" or any(c <= s <= high for s in several):
                    return "(?i)" + pattern[i:i + 3]
            if not depth:
                letters += c
                if any(fold in letters.casefold() for fold in folds):
                    return "(?i)" + letters
        elif not (c == ")" and not depth and outer and outer[-1][3]):      # a plain group's end joins its letters
            letters = ""                                                    # with those after it
        if c == "(" and not depth:
            outer.append((ignore_case, True, reaching, False))
            begun, reaching = False, ""
        elif c == ")" and not depth and outer:
            ignore_case, begun, reaching, _ = outer.pop()
        elif c == "|" and not depth:
            if reaching:
                return reaching + " followed by |"
            begun = False
        elif not depth:
            begun = True
            if c == "{" and pattern[i:i + 3] == "{,}":
                return "{,}"        # literal to Oniguruma, {0,} to `regex`
        if depth:
            if c == "[":
                return "[" + pattern[i + 1:i + 2] if pattern[i + 1:i + 2] == ":" else "["
            if c == "&" and pattern[i + 1:i + 2] == "&":
                return "&&"
            if c == "]":
                depth = 0
        elif c == "[":
            depth = 1
            negated = pattern[i + 1:i + 2] == "^"
            whole = pattern[i:_class_end(pattern, i)]
            if ignore_case and (negated or "\\" in whole):
                return "(?i)" + pattern[i:i + 3]     # Oniguruma closes such a class under case folding ([\p{Greek}]
                                                     # takes µ, [^x] matches "fi" by ﬁ), `regex` does not
            two_sets = negated_class_of_two_sets(whole) if negated else None
            if two_sets is not None:
                return two_sets                      # [^\s\S]: no character to Oniguruma, any to `regex`
            i += 1
            if negated:
                i += 1
            if pattern[i:i + 1] == "]":     # a "]" first in a class is a member
                i += 1
            continue
        i += 1
    return None


def _class_end(pattern: str, start: int) -> int:
    """The index after the "]" that closes the class opening at pattern[start] (a "]" first in it is a member, an
    escaped one too), or len(pattern)."""
    i = start + 1 + (pattern[start + 1:start + 2] == "^")
    i += pattern[i:i + 1] == "]"
    while i < len(pattern) and pattern[i] != "]":
        i += 2 if pattern[i] == "\\" else 1
    return min(i + 1, len(pattern))


def _escape_read_otherwise(pattern: str, i: int, in_class: bool, ignore_case: bool) -> str | None:
    r"""The escape at pattern[i] (a backslash), when it is not one that both engines read alike, or in a way this
    module checks elsewhere (\p{...}): what the two read differently, or what one of them refuses. Alike: an escaped
    symbol, \s \S \d \D \t \n \r \f \v \a, \b \B \K \N in a class, \A \z \Z (anchors, rewritten), \uHHHH and
    \xHH below 80 (not where the flag i is on: they could spell a fold). Otherwise read: \xHH from 80 and octal
    escapes (UTF-8 bytes to Oniguruma, characters to `regex`), \m (a literal to Oniguruma, a word start to
    `regex`), \G (moved by the gaps _wrap matches), \g<0> (a call), \U, back-references."""
    e = pattern[i + 1]
    if not e.isalnum() or e in "sdtnrfva" or (in_class and e in "bBKN") or (not in_class and e in "AzZ"):
        return None
    if e in "SDPp":
        return None
    if not ignore_case and (regex.match(r"u[0-9A-Fa-f]{4}|x[0-7][0-9A-Fa-f]", pattern[i + 1:i + 6])):
        return None
    return ("(?i)" if ignore_case and e in "ux" else "") + pattern[i:i + 2]


def _check_same_reading(pattern: str, what: str, importing: bool = True) -> None:
    """ValueError when `pattern` holds a construct that Oniguruma (HF) and `regex` read differently
    (_engine_difference), naming it: the pieces, and so the ids, would differ."""
    construct = _engine_difference(pattern, importing)
    if construct is not None and construct[1:3] in ("p{", "P{") \
            and _not_oniguruma_s(_property_name(construct[3:-1])):
        raise ValueError(f"{what} has '{construct}', a property name Oniguruma (HF tokenizers) does not read: it "
                         r"takes a name alone (\p{Latin}, \p{Lu}, \p{Han})")
    if construct is not None:
        raise ValueError(f"{what} has '{construct}', which Oniguruma (HF tokenizers) and `regex` read differently, "
                         r"so the pieces would differ (spell the characters out with \p{...} classes)")


def _anchored(split_regex: str) -> str:
    """`split_regex` with ^ and $ at line ends and \\Z also before a final newline, as Oniguruma reads them (its ^
    does not match at the end of a text after a final newline; `regex`'s does)."""
    return f"(?m:{rewrite_anchors(split_regex, {'^': _LINE_START, _Z: _END_OR_BEFORE_LAST_NEWLINE})})"


def _wrap(split_regex: str) -> str:
    """_anchored(split_regex), and a second alternative that takes the text up to its next match (HF's Isolated
    keeps it as a piece)."""
    anchored = _anchored(split_regex)
    return f"{anchored}|(?:(?!{anchored})[\\s\\S])+"


def hf_added_token_ids(vocab: Mapping[str, int], contents: Iterable[str], *, before_0_22_2: bool = False) -> list[int]:
    """The ids HF tokenizers gives added tokens (`contents`, in file order) over a model vocab {token: id},
    whatever ids the file says: a token found (by its text) in the vocab, or added before, keeps that id; the
    others get the vocab's size (its number of entries, not its largest id + 1), then one more each, in order
    (tokenizers 0.22.2 and later, which add a file's added tokens at once). before_0_22_2: the rule of earlier
    releases, which gave such a token the vocab's size, or one more than the largest id of the added tokens so
    far (found ones too) when that is not below the size. The two differ when a token found in the vocab has
    an id at or past the vocab's size (a vocab whose ids have gaps) before one that is not found.

    >>> hf_added_token_ids({"a": 0, "b": 1, "<s>": 7}, ["<s>", "<t>", "a", "<u>"])
    [7, 3, 0, 4]
    >>> hf_added_token_ids({"a": 0, "b": 1, "<s>": 7}, ["<s>", "<t>", "a", "<u>"], before_0_22_2=True)
    [7, 8, 0, 9]
    """
    size = len(vocab)
    given: dict[str, int] = {}
    top: int | None = None              # the largest id given so far
    fresh = size                        # the next id 0.22.2 and later give
    for content in contents:
        if content not in given:
            i = vocab.get(content)
            if i is None and before_0_22_2:
                i = top + 1 if top is not None and (top >= size or size == 0) else size
            elif i is None:
                i = fresh
                fresh += 1
            given[content] = i
            top = i if top is None else max(top, i)
    return [given[content] for content in contents]


def hf_added_token_difference(vocab: Mapping[str, int], contents: Sequence[str],
                              ids: Sequence[int]) -> tuple[int, int, str] | None:
    """(index in contents, the id HF gives it, which releases) of the first added token to which HF tokenizers
    does not give its id in `ids`, by the rule of its current releases or of those before 0.22.2
    (hf_added_token_ids); None when both give every one its id."""
    for before, which in ((False, "tokenizers 0.22.2 and later"), (True, "tokenizers before 0.22.2")):
        for k, (i, hf_id) in enumerate(zip(ids, hf_added_token_ids(vocab, contents, before_0_22_2=before))):
            if hf_id != i:
                return k, hf_id, which
    return None


class _File:
    """The file being read: its path and text, for errors that name the place."""

    def __init__(self, path: StrPath, text: str) -> None:
        self.path = path
        self.text = text

    def fail(self, message: str, near: object = None, after: str | None = None) -> NoReturn:
        """Raise FormatError; the line is that of the first `near` (a JSON string: a key or a token) after the
        first `after`, when found."""
        raise FormatError(self.path, self.line_of(near, after), message)

    def line_of(self, near: object, after: str | None = None) -> int | None:
        if near is None:
            return None
        start = 0
        if after is not None:
            start = max(0, self.text.find(json.dumps(after)))
        spellings = (json.dumps(near, ensure_ascii=False), json.dumps(near), json.dumps(near, separators=(",", ":")))
        for spelling in spellings:
            pos = self.text.find(spelling, start)
            if pos >= 0:
                return self.text.count("\n", 0, pos) + 1
        return None


def read_tokenizer_json(path: StrPath) -> tuple[Vocab, Merges, list[str], str]:
    """(vocab {id: bytes}, merges [(bytes, bytes)], special_tokens [str], pattern) of an HF ``tokenizer.json``
    of a byte-level BPE model; FormatError naming the file and what is unsupported (see the module's docstring).

    >>> import os, tempfile
    >>> from bpe_fast import Tokenizer
    >>> path = os.path.join(tempfile.mkdtemp(), "tokenizer.json")
    >>> Tokenizer({i: bytes([i]) for i in range(256)} | {256: b" a"}, [(b" ", b"a")], ["<|endoftext|>"]).export_hf(path)
    >>> vocab, merges, specials, pattern = read_tokenizer_json(path)
    >>> vocab[256], merges, specials, pattern == GPT2_PATTERN
    (b' a', [(b' ', b'a')], ['<|endoftext|>'], True)

    The file's normalizer (NFC, or None) is not among these: read_tokenizer_arrays(path).normalizer has it, and
    Tokenizer.from_hf applies it.
    """
    read = read_tokenizer_arrays(path)
    assert not callable(read.vocab) and not callable(read.merges)       # made unless read for a tokenizer
    return read.vocab, read.merges, read.special_tokens, read.pattern


class TokenizerFile(NamedTuple):
    """read_tokenizer_json's result, the special tokens' ids and, when the model's vocab and merges were read
    natively, the vocabulary (the added tokens too) and merges as arrays (else None). vocab and merges:
    functions that make them, when read for a tokenizer (read_tokenizer_arrays' for_tokenizer) with the arrays."""
    vocab: Vocab | Callable[[], Vocab]
    merges: Merges | Callable[[], Merges]
    special_tokens: list[str]
    pattern: str
    arrays: formats.GPT2Arrays | None
    special_ids: list[int]
    normalizer: str | None = None       # "NFC" or None (Tokenizer.with_normalizer)
    lstrip: frozenset[str] = frozenset()    # the added tokens with lstrip (Tokenizer.with_special_lstrip)
    ranks: RankedTokens | None = None       # the model, when the file is tiktoken's ranks (ranks.not_as_ranks)


def read_tokenizer_arrays(path: StrPath, for_tokenizer: bool = False) -> TokenizerFile:
    """read_tokenizer_json with the arrays when the file is plainly well formed (TokenizerFile).

    for_tokenizer: for Tokenizer.from_hf, which builds the encoder's tables from the arrays. The merge rule's
    check is then left to that build (the arrays' `parts`): the build proves the rule reads the merges as listed
    when each token's pair is its first merge's, and asks the check only otherwise; refuse_merges(path) raises
    what it finds. And the vocabulary and the merge list are functions that make them: the tokenizer makes the
    vocabulary's dict while its tables are built, and encoding does not need the merge list."""
    data = formats.read_bytes(path)
    fast = _read_plain(path, data, for_tokenizer)
    if fast is not None:
        return fast
    return TokenizerFile(*_read_python(path, data))


def refuse_merges(path: StrPath) -> NoReturn:
    """Raise the FormatError that reading the file in Python gives, for a file read natively whose merges the
    merge rule's check refused (read_tokenizer_arrays' for_tokenizer): it names the merge; or, when the file
    read again passes, that it changed while it was read."""
    _read_python(path, formats.read_bytes(path))
    raise FormatError(path, None, "changed while it was read: the merges first read from it are refused by the "
                      "merge rule's check (bpe_fast.merge_rule), those read again are not")


def _read_python(path: StrPath, data: bytes) -> tuple[Vocab, Merges, list[str], str, None, list[int], str | None,
                                                       frozenset[str], RankedTokens | None]:
    """read_tokenizer_json of the file's bytes, in Python: what any file that _read_plain declines goes through."""
    text = formats.read_text(path, data)
    doc = formats.parse_json(path, text)
    f = _File(path, text)
    if not isinstance(doc, dict) or not isinstance(doc.get("model"), dict):
        f.fail('not an HF tokenizer.json: expected a JSON object with a "model" object')
    model = doc["model"]
    pattern, normalizer = _check_components(f, doc)
    added = doc.get("added_tokens", [])
    contents = ({entry["content"] for entry in added
                 if isinstance(entry, dict) and isinstance(entry.get("content"), str)} if isinstance(added, list) else set())
    key_ids, vocab = _read_vocab(f, model.get("vocab"), contents)
    merges = _read_merges(f, model.get("merges"), key_ids, vocab)
    _give_added_tokens_their_text(vocab, key_ids, added, merges)
    ranks, not_ranks = _ranks_of_python(path, model, vocab, merges, contents)
    difference = merge_rule_difference(merges) if ranks is None else None
    if difference is not None:
        k, parts = difference
        merge = f"merge {k} ({formats.token_to_str(merges[k][0])} {formats.token_to_str(merges[k][1])})"
        lead = f"ignore_merges: true, but {not_ranks}; read as a merge list, " if not_ranks else ""
        f.fail(f"{lead}{merge}: {describe_difference(*merges[k], parts)}", "merges", "model")
    model_tokens = set(vocab.values())
    specials = _read_added_tokens(f, doc.get("added_tokens", []), key_ids, vocab)
    _check_raw_added_tokens(f, doc.get("added_tokens", []), normalizer)
    if model.get("ignore_merges") and ranks is None:
        _check_whole_tokens(f, model_tokens - {s.encode("utf-8") for s in specials}, merges, not_ranks)
    ids = {entry["content"]: entry["id"] for entry in doc.get("added_tokens", [])}      # (checked to be HF's)
    return (vocab, merges, specials, pattern, None, [ids[s] for s in specials], normalizer, _lstrip_of(added),
            ranks)


def _no_text_holds(token: bytes) -> bool:
    """Whether no UTF-8 text holds `token` anywhere (its bytes, up to three continuation bytes at its start aside,
    are no UTF-8 nor the start of some): no pre-token is it or holds it, so merging and ignore_merges never give it.

    >>> _no_text_holds("<|début|>".encode("latin-1")), _no_text_holds("é".encode()[1:] + b"ab\\xe2\\x82")
    (True, False)
    """
    start = 0
    while start < min(3, len(token)) and 0x80 <= token[start] < 0xC0:
        start += 1
    try:
        codecs.getincrementaldecoder("utf-8")().decode(token[start:], final=False)    # (an unfinished end is held)
    except UnicodeDecodeError:
        return True
    return False


def key_read_as_text(key: str) -> bool:
    """Whether from_hf reads a model vocab key that is an added token's content (and that no merge names) as the
    content's UTF-8, not as GPT-2's byte-level spelling of bytes: a key outside the byte mapping (DeepSeek's
    "<\uff5cbegin\u2581of\u2581sentence\uff5c>"), or one whose bytes, more than one, no text holds
    (_no_text_holds: "<|début|>" spells b"<|d\\xe9but|>"), as HF's trainer puts its special tokens in the vocab
    under their text. HF gives such a key's id to the added token only. export_hf writes a special token so.

    >>> key_read_as_text("<|début|>"), key_read_as_text("<|fin|>"), key_read_as_text("é")
    (True, False, False)
    """
    try:
        token = formats.str_to_token(key)
    except ValueError:
        return True
    return len(token) > 1 and _no_text_holds(token)


def _give_added_tokens_their_text(vocab: Vocab, key_ids: Mapping[str, int], added: object, merges: Merges) -> None:
    """The model's token whose key an added token's content is gets the content's UTF-8 as its bytes where
    key_read_as_text and no merge takes or makes it (HF decodes that id to the key's bytes, not UTF-8, bpe_fast to
    the token's text; the ids are HF's). Anything malformed is left to _read_added_tokens to name."""
    if not isinstance(added, list):
        return
    in_merges: set[bytes] | None = None
    for entry in added:
        content = entry.get("content") if isinstance(entry, dict) else None
        if not isinstance(content, str) or key_ids.get(content) is None or not key_read_as_text(content):
            continue
        i = key_ids[content]
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError:
            continue
        if in_merges is None:
            in_merges = {t for a, b in merges for t in (a, b, a + b)}
        if vocab[i] not in in_merges:
            vocab[i] = data


def _ranks_of_python(path: StrPath, model: dict[str, Any], vocab: Vocab, merges: Merges,
                     contents: Collection[str]) -> tuple[RankedTokens | None, str]:
    """_read_python's model as tiktoken's ranks when it is (ranks.not_as_ranks), else None; and, for a refusal of
    a file with ignore_merges that is not, why it is not (else ""). vocab: the model's, read and checked;
    contents: the added tokens'."""
    if model.get("ignore_merges") is not True:
        return None, ""
    try:
        contents_bytes = [c.encode("utf-8") for c in contents]
    except UnicodeEncodeError:      # a lone surrogate: _read_added_tokens names it
        return None, ""
    ranks, problem = ranks_of_merge_list(vocab, merges, contents_bytes, path)
    if ranks is None:
        return None, ("the file is not tiktoken's ranks as transformers' TikTokenConverter writes them (Llama 3's: "
                      "the merges every way of writing each token as two, in the order of the ids of the tokens they "
                      f"make), which bpe_fast reads as such: {problem}")
    return ranks, ""


def _lstrip_of(added: Sequence[dict[str, Any]]) -> frozenset[str]:
    """The added tokens (checked) with lstrip true (a token listed twice: its last entry's, as in HF)."""
    return frozenset(token for token, lstrip in {e["content"]: e["lstrip"] for e in added}.items() if lstrip)


class _KeysOfTokens:
    """The model vocab's keys (GPT-2-mapped strings) {key: id}, answered from its tokens (index, their ids): a
    key is the mapping of exactly one token, so a string is a key when it maps to a token's bytes (what
    hf_added_token_ids asks of a vocab)."""

    def __init__(self, index: TokenIndex, ids: NDArray[np.int64], keys: Iterable[str] = ()) -> None:
        self.index = index
        self.ids = ids
        self.known: dict[str, int | None] = {}      # key -> id, or None: not a key
        self._look_up(keys)     # the keys that will be asked for, in one call of the index (one a call took
                                # 11 us: 32,000 added tokens, each asked for three times, were read in 1.1 s)

    def __len__(self) -> int:
        return len(self.ids)

    def _look_up(self, keys: Iterable[str]) -> None:
        named, tokens = [], []
        for key in keys:
            if key in self.known:
                continue
            try:
                tokens.append(formats.str_to_token(key))
            except ValueError:          # a character outside the mapping: no key has it
                self.known[key] = None
                continue
            named.append(key)
        for key, i in zip(named, _find_all(self.index, tokens) if tokens else ()):
            self.known[key] = int(self.ids[i]) if i >= 0 else None

    def get(self, key: str, default: int | None = None) -> int | None:
        if key not in self.known:
            self._look_up([key])
        found = self.known[key]
        return default if found is None else found


class _TokensOfIds:
    """The model's vocabulary {id: bytes} answered from its arrays (token k is pool[offsets[k]:offsets[k + 1]],
    its id ids[k]), and the ids put in it (`added`: the added tokens, each with its id): what
    _read_added_tokens asks of a vocab, with no dict of the model's 200,000 tokens made for it."""

    def __init__(self, pool: NDArray[np.uint8], offsets: NDArray[np.int64], ids: NDArray[np.int64]) -> None:
        self.pool = pool
        self.offsets = offsets
        self.ids = ids
        self.at = np.full(int(ids.max()) + 1 if len(ids) else 0, -1, dtype=np.int64)    # id -> k (ids distinct)
        self.at[ids] = np.arange(len(ids))
        self.added: dict[int, bytes] = {}

    def index_of(self, i: int) -> int:
        """The model's token k with id i, or -1."""
        return int(self.at[i]) if 0 <= i < len(self.at) else -1

    def __contains__(self, i: int) -> bool:
        return i in self.added or self.index_of(i) >= 0

    def __getitem__(self, i: int) -> bytes:
        if i in self.added:
            return self.added[i]
        k = self.index_of(i)
        if k < 0:
            raise KeyError(i)
        return bytes(self.pool[self.offsets[k]:self.offsets[k + 1]])

    def __setitem__(self, i: int, token: bytes) -> None:
        self.added[i] = token

    def vocab(self) -> Vocab:
        """The vocabulary as a dict: the model's tokens by id, then the added tokens not among them (as the
        file read in Python gives it)."""
        return dict(zip(self.ids.tolist(), token_list(self.pool, self.offsets))) | self.added


def _find_all(index: TokenIndex, tokens: list[bytes]) -> list[int]:
    """The index of each of tokens among index's tokens, or -1."""
    found = index.find(np.frombuffer(b"".join(tokens), dtype=np.uint8),
                       np.cumsum([0] + [len(t) for t in tokens], dtype=np.int64))
    if found is None:
        raise ValueError("the index is flooded")        # not reached: _read_plain declines a flooded index
    return found.tolist()


def _added_in_model(index: TokenIndex, added: object) -> list[int] | None:
    """The indices of the model's tokens that are the bytes of an added token (`added`: the file's
    "added_tokens"), or None when that is not a list of objects with a string "content" (the Python reader names
    what is wrong: not UTF-8 either)."""
    if not isinstance(added, list) or not all(isinstance(e, dict) and isinstance(e.get("content"), str)
                                              for e in added):
        return None
    try:
        contents = [e["content"].encode("utf-8") for e in added]
    except UnicodeEncodeError:      # a lone surrogate
        return None
    return sorted({k for k in _find_all(index, contents) if k >= 0})


def _read_plain(path: StrPath, data: bytes, for_tokenizer: bool = False) -> TokenizerFile | None:
    """read_tokenizer_json's result for a plainly well-formed file, with the model's vocab and merges read
    natively (bpe_fast._gpt2_files; the rest of the file, a few KB, by json.loads); None for anything else, or
    any fault, for read_tokenizer_json to read the whole file in Python and name what is wrong. for_tokenizer:
    see read_tokenizer_arrays."""
    spans = model_spans(data)
    if spans is None:
        return None
    vocab_start, vocab_end, merges_start, merges_end = spans
    view = memoryview(data)
    vocab_arrays = parse_vocab(view[vocab_start:vocab_end], formats.char_to_byte_table(), formats.MAX_TOKEN_ID)
    merge_arrays = parse_merge_list(view[merges_start:merges_end], formats.char_to_byte_table())
    if vocab_arrays is None or merge_arrays is None:
        return None
    (first, first_end, first_text), (second, second_end, second_text) = sorted(
        [(vocab_start, vocab_end, b"{}"), (merges_start, merges_end, b"[]")])
    try:        # the rest of the file, the two spans left empty
        doc = json.loads(data[:first] + first_text + data[first_end:second] + second_text + data[second_end:],
                         parse_constant=formats.refuse_json_constant)
    except (ValueError, RecursionError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("model"), dict):
        return None
    pool, offsets, ids = vocab_arrays
    merge_pool, merge_offsets = merge_arrays
    n = len(ids)
    if formats.sparsity_problem(int(ids.max()) if n else -1, n):
        return None             # _read_vocab names the largest id's line
    lengths = np.diff(offsets)
    index = TokenIndex(pool, offsets)
    if (index.flooded or index.duplicates or not all_distinct(ids) or np.any(lengths == 0)
            or len(np.unique(pool[offsets[:-1][lengths == 1]])) != 256):
        return None             # a key or an id given twice (json.loads keeps the last key), the empty token, or
                                # a byte missing
    found = [index.find(merge_pool, merge_offsets, first, 2, span) for first, span in ((0, 1), (1, 1), (0, 2))]
    if any(hits is None or np.any(hits < 0) for hits in found):
        return None             # a merge's token or join not in the vocab (or tokens crafted to crowd the index)
    left, right, joined = (hits for hits in found if hits is not None)     # all three (checked above)
    if not all_distinct(left << 32 | right) or not all_distinct(joined[np.flatnonzero(np.diff(joined, prepend=-1))]):
        return None             # a pair listed twice, or a token made again after other merges (the first of
                                # each run of merges making it: twice)
    added_ranks = _added_in_model(index, doc.get("added_tokens")) if doc["model"].get("ignore_merges") is True else None
    as_ranks = added_ranks is not None and not_as_ranks(pool, offsets, ids, left, right, joined, added_ranks,
                                                        describe=False) is None
    if for_tokenizer or as_ranks:     # the rule's check is the tables' build's (read_tokenizer_arrays), or none
        made = _python_side(path, doc, index, pool, offsets, ids, merge_pool, merge_offsets, lazy_merges=True)
        every_token_made = False
    else:
        # the ranks rule's check (native; its recovery of the merges without the GIL) beside the Python work
        rule_check = ThreadJob(lambda: rule_difference_of_indices(pool, offsets, left, right, joined),
                               "bpe_fast-rule-check")
        try:
            made = _python_side(path, doc, index, pool, offsets, ids, merge_pool, merge_offsets)
        finally:
            rule_check.wait()
        rule = rule_check.result()
        if rule.difference is not None:
            return None
        every_token_made = rule.every_token_made
    if made is None:
        return None
    view, merges, specials, pattern, special_ids, normalizer, lstrip = made
    extra = sorted(i for i in view.added if view.index_of(i) < 0)     # the added tokens not in the model's vocab
    if as_ranks:
        assert added_ranks is not None
        ranks = ranks_of_model(pool, offsets, ids, added_ranks, path)
        return TokenizerFile(view.vocab if for_tokenizer else view.vocab(),
                             functools.partial(formats.merges_of_arrays, merge_pool, merge_offsets) if for_tokenizer
                             else formats.merges_of_arrays(merge_pool, merge_offsets),
                             specials, pattern, None, special_ids, normalizer, lstrip, ranks)
    if for_tokenizer and doc["model"].get("ignore_merges") and _unmade_tokens(index, offsets, joined, specials):
        return None             # read in Python, which names the token
    if extra:
        added = [view.added[i] for i in extra]
        pool = np.concatenate([pool, np.frombuffer(b"".join(added), dtype=np.uint8)])
        offsets = np.concatenate([offsets, offsets[-1] + np.cumsum([len(t) for t in added], dtype=np.int64)])
        ids = np.concatenate([ids, np.array(extra, dtype=np.int64)])
    arrays = formats.GPT2Arrays(pool, offsets, ids, merge_pool, merge_offsets, joined, all_permanent=every_token_made,
                                parts=(left, right) if for_tokenizer else None)
    return TokenizerFile(view.vocab if for_tokenizer else view.vocab(),
                         merges if merges is not None else arrays.merges, specials, pattern, arrays, special_ids,
                         normalizer, lstrip)


def _python_side(path: StrPath, doc: dict[str, Any], index: TokenIndex, pool: NDArray[np.uint8],
                 offsets: NDArray[np.int64], ids: NDArray[np.int64], merge_pool: NDArray[np.uint8],
                 merge_offsets: NDArray[np.int64], lazy_merges: bool = False,
                 ) -> tuple[_TokensOfIds, Merges | None, list[str], str, list[int], str | None, frozenset[str]] | None:
    """_read_plain's Python objects and checks of the rest of the file: (the model's vocabulary as a _TokensOfIds
    holding the added tokens, merges, special tokens, pattern, their ids, normalizer, those with lstrip), or None
    when a check fails
    (the whole file is then read again in Python, which names it). index: of the model's tokens (pool, offsets;
    their ids `ids`). lazy_merges: the merges are None, and ignore_merges' check is the caller's."""
    view = _TokensOfIds(pool, offsets, ids)
    f = _File(path, "")         # a check that fails here is made again on the whole file, which names the line
    try:
        model = doc["model"]
        merges = None if lazy_merges else formats.merges_of_arrays(merge_pool, merge_offsets)
        pattern, normalizer = _check_components(f, doc)
        added = doc.get("added_tokens", [])
        # {bytes: id} of the model's tokens that the added tokens' contents are (all _read_added_tokens asks)
        contents = [entry["content"].encode("utf-8") for entry in added]
        ids_of_bytes = {data: int(ids[i]) for data, i in zip(contents, _find_all(index, contents)) if i >= 0}
        keys = _KeysOfTokens(index, ids, (entry["content"] for entry in added))
        specials = _read_added_tokens(f, added, keys, view, ids_of_bytes)  # type: ignore[arg-type]
        _check_raw_added_tokens(f, added, normalizer)
        if model.get("ignore_merges") and not lazy_merges:      # (else _read_plain's _unmade_tokens)
            assert merges is not None
            _check_whole_tokens(f, set(token_list(pool, offsets)) - {s.encode("utf-8") for s in specials}, merges)
    except Exception:       # noqa: BLE001 -- whatever fails here, the Python path reads the file and raises its error
        return None
    return (view, merges, specials, pattern, [ids_of_bytes[name.encode("utf-8")] for name in specials], normalizer,
            _lstrip_of(added))


def _check_components(f: _File, doc: dict[str, Any]) -> tuple[str, str | None]:
    """The file's (pattern, normalizer), once its model's settings, normalizer, pre-tokenizer, decoder and
    post-processor are found to be what bpe_fast follows (FormatError naming the first that is not)."""
    _check_fields(f, doc)
    _check_model(f, doc["model"])
    normalizer = _normalizer_of(f, doc.get("normalizer"))
    pattern = _pattern_of(f, doc.get("pre_tokenizer"))
    _check_decoder(f, doc.get("decoder"))
    _check_post_processor(f, doc.get("post_processor"))
    return pattern, normalizer


def _describe(component: object) -> str:
    """A component for a message: an object by its "type", anything else by what it is (the string "ByteLevel"
    is not an object of that type)."""
    if isinstance(component, dict):
        return json.dumps(component["type"]) if "type" in component else 'an object without "type"'
    if component is None:
        return "null"
    kind = {str: "a string", list: "an array", bool: "a boolean"}.get(type(component), "a number")
    return f"{json.dumps(component)[:60]} ({kind}, not an object)"


# the fields of a tokenizer.json HF reads (it refuses a file with any other), and the JSON types it requires of
# the ones bpe_fast reads or ignores: a file HF refuses is refused here too, naming the field
_FIELDS = frozenset({"version", "truncation", "padding", "added_tokens", "normalizer", "pre_tokenizer", "model",
                     "decoder", "post_processor"})
_MODEL_FIELD_TYPES = {"dropout": ((int, float), "a number"), "unk_token": ((str,), "a string"),
                      "continuing_subword_prefix": ((str,), "a string"), "end_of_word_suffix": ((str,), "a string"),
                      "fuse_unk": ((bool,), "true or false"), "byte_fallback": ((bool,), "true or false"),
                      "ignore_merges": ((bool,), "true or false")}
_SETTINGS_REQUIRED = {"truncation": (("max_length", (int,)), ("strategy", (str,)), ("stride", (int,))),
                      "padding": (("strategy", (str, dict)), ("direction", (str,)), ("pad_id", (int,)),
                                  ("pad_type_id", (int,)), ("pad_token", (str,)))}
_BYTE_LEVEL_FLAGS = ("add_prefix_space", "trim_offsets", "use_regex")
_ADDED_TOKEN_FLAGS = ("single_word", "lstrip", "rstrip", "normalized", "special")


def _check_fields(f: _File, doc: dict[str, Any]) -> None:
    """What HF tokenizers' reader refuses among the fields and their JSON types, named: a field it does not know,
    a version other than "1.0", truncation or padding that is not an object, a model setting of the wrong type
    (null is its default), a ByteLevel flag that is not true or false, a Sequence step that is not an object.
    (The added tokens' flags: _read_added_tokens.)"""
    for key in doc:
        if key not in _FIELDS:
            f.fail(f"unknown field {json.dumps(key)} (HF tokenizers refuses the file too; its fields: "
                   f"{', '.join(sorted(_FIELDS))})", key)
    if "version" in doc and doc["version"] != "1.0":
        f.fail(f'"version" {json.dumps(doc["version"])[:40]} is unknown (HF tokenizers reads version "1.0")', "version")
    for key, required in _SETTINGS_REQUIRED.items():       # (bpe_fast ignores them: it never truncates or pads)
        settings = doc.get(key)
        if settings is None:
            continue
        if not isinstance(settings, dict):
            f.fail(f'"{key}" must be null or an object, not {_describe(settings)}', key)
        for name, types in required:
            if not isinstance(settings.get(name), types) or type(settings[name]) is bool:
                f.fail(f'"{key}" needs "{name}" of the type HF tokenizers requires ({types[0].__name__}), not '
                       f"{json.dumps(settings.get(name))[:40]}", key)
    model = doc["model"]
    for key, (types, what) in _MODEL_FIELD_TYPES.items():
        if model.get(key) is not None and type(model[key]) not in types:
            f.fail(f'model "{key}" must be {what} or null, not {json.dumps(model[key])[:40]}', key, "model")
    for component, steps_key in (("normalizer", "normalizers"), ("pre_tokenizer", "pretokenizers"),
                                 ("decoder", "decoders")):
        value = doc.get(component)
        for step in _flat_steps(value, steps_key):
            if value is not step and not isinstance(step, dict):
                f.fail(f'{component} Sequence holds {_describe(step)}: each step must be an object', steps_key,
                       component)
            if isinstance(step, dict) and step.get("type") == "ByteLevel":
                for flag in _BYTE_LEVEL_FLAGS:
                    if flag in step and type(step[flag]) is not bool:
                        f.fail(f'{component} ByteLevel "{flag}" must be true or false, not '
                               f"{json.dumps(step[flag])[:40]}", flag, component)
                    if flag not in step and flag != "use_regex" and component != "normalizer":   # (use_regex:
                        # true by default; HF's ByteLevel normalizer has no flags)
                        f.fail(f'{component} ByteLevel has no "{flag}" (HF tokenizers refuses the file too)',
                               "type", component)
            if isinstance(step, dict) and step.get("type") == "Split" and component == "pre_tokenizer":
                for field in ("pattern", "behavior", "invert"):
                    if field not in step:
                        f.fail(f'pre_tokenizer Split has no "{field}" (HF tokenizers refuses the file too)', "type",
                               component)


def _flat_steps(value: object, steps_key: str) -> list[Any]:
    """The steps of a component (a normalizer, pre_tokenizer or decoder): a Sequence's, those of a Sequence in it
    in their place (bpe_fast reads nested Sequences flat, as HF applies them), or [value] for any other."""
    if not (isinstance(value, dict) and value.get("type") == "Sequence"):
        return [value]
    steps = value.get(steps_key)
    return [] if not isinstance(steps, list) else [
        flat for step in steps for flat in (_flat_steps(step, steps_key) if isinstance(step, dict) else [step])]


def _check_model(f: _File, model: dict[str, Any]) -> None:
    kind = model.get("type", "BPE" if "merges" in model else None)     # old files have no "type"
    if kind != "BPE":
        f.fail(f"model type {_describe(model)} is not supported: bpe_fast reads byte-level BPE models "
               '("type": "BPE")', "type" if "type" in model else "model", "model")
    dropout = model.get("dropout")
    if dropout not in (None, 0, 0.0):
        f.fail(f"BPE dropout ({dropout!r}) is not supported: bpe_fast encodes deterministically", "dropout", "model")
    for key in ("continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(key) not in (None, ""):
            f.fail(f"{key} ({model[key]!r}) is not supported: byte-level BPE marks no word boundaries", key, "model")
    if model.get("byte_fallback"):
        f.fail("byte_fallback: true is not supported (a byte-level vocabulary has every byte)", "byte_fallback",
               "model")


def _unmade_tokens(index: TokenIndex, offsets: NDArray[np.int64], joined: NDArray[np.int64],
                   specials: list[str]) -> bool:
    """_check_whole_tokens for the model's tokens as arrays (index, offsets; joined: the merges' joins, as
    indices of them) whose merges the ranks rule reads as listed (the tables' build checks it), every byte a
    token (_read_plain checks it): whether a multi-byte token other than a special token's bytes is made by no
    merge (then ignore_merges gives it where bpe_fast merges). The other half of _check_whole_tokens, each token merging back to itself,
    then holds: the ranks rule makes every merged token from the tokens before it (RuleCheck.every_token_made)."""
    unmade = np.diff(offsets) > 1
    unmade[joined] = False
    unmade[[k for k in _find_all(index, [name.encode("utf-8") for name in specials]) if k >= 0]] = False
    return bool(unmade.any())


def _check_whole_tokens(f: _File, tokens: set[bytes], merges: Merges, not_ranks: str = "") -> None:
    """With ignore_merges HF gives a pre-token that is a vocab token that token's id; bpe_fast merges it. The
    same, when every multi-byte token of `tokens` is made by a merge and bpe_fast's merging of its bytes leaves
    it whole (tiktoken's ranks must hold the same: bpe_fast.ranks.merges_from_ranks checks it). not_ranks: why
    the file is not read as tiktoken's ranks, for the message (_ranks_of_python)."""
    from .ranks import merges_from_ranks

    ranked = list(dict.fromkeys(a + b for a, b in merges))          # bpe_fast's ranks: first merges first
    unmade = {t for t in tokens if len(t) > 1} - set(ranked)
    why = "HF then gives a pre-token that is a vocab token that token's id"
    if unmade:
        token = formats.token_to_str(min(unmade))
        f.fail(f"ignore_merges: true is not supported here: no merge makes vocab token {token!r} ({why}; bpe_fast "
               f"never gives it){'; ' + not_ranks if not_ranks else ''}", "ignore_merges", "model")
    try:
        merges_from_ranks({bytes([b]): b for b in range(256)} | {t: 256 + k for k, t in enumerate(ranked)})
    except ValueError as exc:
        m = regex.search(r"\(rank (\d+)\)", str(exc))
        token = formats.token_to_str(ranked[int(m.group(1)) - 256]) if m else "?"
        f.fail(f"ignore_merges: true is not supported here: vocab token {token!r} does not merge back to itself "
               f"({why}; bpe_fast merges it){'; ' + not_ranks if not_ranks else ''}", "ignore_merges", "model")


def _normalizer_of(f: _File, normalizer: object) -> str | None:
    """The normal form the file's normalizer puts text in ("NFC"), None for none, or the FormatError naming it."""
    if isinstance(normalizer, dict) and normalizer.get("type") == "Sequence" \
            and isinstance(normalizer.get("normalizers"), list) and len(normalizer["normalizers"]) <= 1:
        normalizer = normalizer["normalizers"][0] if normalizer["normalizers"] else None
    if normalizer is None:
        return None
    if isinstance(normalizer, dict) and normalizer.get("type") == "NFC":    # (HF ignores other fields)
        return "NFC"
    f.fail(f"normalizer {_describe(normalizer)} is not supported: bpe_fast normalizes text to NFC only "
           '("normalizer": null or {"type": "NFC"})', "normalizer")


# The ASCII characters NFC leaves alone wherever they are: no canonical decomposition maps any character to one
# of them or to a sequence holding one (so NFC neither makes one nor composes one with a neighbour), and they are
# starters (no mark is reordered across them): every ASCII character but ;<=>` and the letters (of which only Q and
# q qualify today; left out in case a later version composes one). Unicode's tables have had no other
# decomposition into ASCII since 1.1 (HF's NFC has 9.0's); tests/test_normalize.py derives the set from unicodedata.
NFC_INERT = frozenset(map(chr, range(0x20))) | frozenset(" !\"#$%&'()*+,-./0123456789:?@[\\]^_{|}~\x7f")


def _check_raw_added_tokens(f: _File, added: Sequence[dict[str, Any]], normalizer: str | None) -> None:
    """With a normalizer, HF finds the added tokens with normalized true in the normalized text, bpe_fast all in
    the text as given. NFC of a text is then NFC of the text between such a token's matches, and the token's
    matches the same in both, when each of its characters is one NFC leaves alone wherever it is (NFC_INERT:
    GPT-NeoX's and Pythia's runs of spaces); another (where normalizing may have made one, or joined its first
    character to what precedes it) is refused."""
    if normalizer is None:
        return
    takes = _lstrip_of(added)       # (a token listed twice: its last entry's flags, as HF takes)
    for entry in added:
        if entry["content"] in takes:
            f.fail(f"added token {entry['content']!r} has lstrip: true, and the file normalizes text to "
                   f"{normalizer}: bpe_fast takes the white space before a special token only without a normalizer",
                   entry["content"], "added_tokens")
        if entry.get("normalized", True) and not NFC_INERT.issuperset(entry["content"]):
            f.fail(f"added token {entry['content']!r} has normalized: true, and the file normalizes text to "
                   f"{normalizer}: HF finds it in the normalized text, bpe_fast finds added tokens in the text as "
                   "given (with a normalizer, normalized: true is supported for tokens of ASCII characters other "
                   "than letters and ;<=>`, which NFC leaves alone, and normalized: false for any)",
                   entry["content"], "added_tokens")


def _check_decoder(f: _File, decoder: object) -> None:
    if isinstance(decoder, dict) and decoder.get("type") == "Sequence" and isinstance(decoder.get("decoders"), list) \
            and len(decoder["decoders"]) == 1:
        decoder = decoder["decoders"][0]        # a Sequence of one step decodes as that step
    if decoder is None or (isinstance(decoder, dict) and decoder.get("type") == "ByteLevel"):
        return
    f.fail(f"decoder {_describe(decoder)} is not supported (only ByteLevel, a Sequence of it alone, or null)",
           "decoder")


def _check_post_processor(f: _File, post: object) -> None:
    steps = post.get("processors", []) if isinstance(post, dict) and post.get("type") == "Sequence" else [post]
    if not isinstance(steps, list):
        f.fail(f'post_processor Sequence\'s "processors" must be an array, got {json.dumps(steps)[:60]}',
               "processors", "post_processor")
    for step in steps:
        if step is not None and not (isinstance(step, dict) and str(step.get("type")) in _IGNORED_POST_PROCESSORS):
            f.fail(f"post_processor {_describe(step)} is not supported (bpe_fast ignores ByteLevel and the "
                   "processors that add special tokens: TemplateProcessing, RobertaProcessing, BertProcessing)",
                   "post_processor")


def _pre_tokenizer_steps(pre: object) -> list[Any]:
    if pre is None:
        return []
    if isinstance(pre, dict) and pre.get("type") == "Sequence" and isinstance(pre.get("pretokenizers"), list):
        return [step for inner in pre["pretokenizers"] for step in _pre_tokenizer_steps(inner)]
    return [pre]


def _pattern_of(f: _File, pre: object) -> str:
    """The pattern of the pre_tokenizer: ByteLevel(use_regex) alone, Split then ByteLevel(no regex), DeepSeek V3's
    three Splits then ByteLevel(no regex), or Digits then ByteLevel(use_regex) (StarCoder's)."""
    steps = _pre_tokenizer_steps(pre)
    kinds = [step.get("type") if isinstance(step, dict) else None for step in steps]
    if kinds == ["Split"] * len(DEEPSEEK3_SPLITS) + ["ByteLevel"] and _is_deepseek3(steps[:-1]):
        _check_byte_level_after_split(f, steps[-1])
        return DEEPSEEK3_PATTERN
    if kinds == ["Digits", "ByteLevel"]:
        return _digits_pattern(f, steps[0], steps[1])
    if kinds not in (["ByteLevel"], ["Split", "ByteLevel"]):
        shown = " then ".join(map(_describe, steps)) or "null"
        f.fail(f"pre_tokenizer {shown} is not supported: bpe_fast reads ByteLevel (use_regex true), or Split "
               "(a regex, Isolated) then ByteLevel (use_regex false), or DeepSeek V3's three Splits then ByteLevel, "
               "or Digits then ByteLevel (use_regex true; StarCoder's)", "pre_tokenizer")
    if len(steps) == 1:
        _check_prefix_space(f, steps[0])
        if steps[0].get("use_regex", True) is not True:
            f.fail("ByteLevel without use_regex and without a Split before it (no pre-tokenizing) is not "
                   "supported", "use_regex", "pre_tokenizer")
        return GPT2_PATTERN
    _check_byte_level_after_split(f, steps[-1])
    split = steps[0]
    shape = (split.get("behavior"), split.get("invert", False))
    if shape not in (("Isolated", False), ("Removed", True)):
        f.fail(f"Split with behavior {split.get('behavior')!r} and invert {split.get('invert')!r} is not supported "
               "(only Isolated not inverted, or Removed inverted)", "behavior", "pre_tokenizer")
    spec = split.get("pattern")
    if isinstance(spec, dict) and isinstance(spec.get("Regex"), str) and spec["Regex"]:
        split_regex = spec["Regex"]
    elif isinstance(spec, dict) and isinstance(spec.get("String"), str) and spec["String"]:
        split_regex = regex.escape(spec["String"])
    else:
        f.fail(f"Split pattern {json.dumps(spec)[:80]} is not a non-empty Regex or String", "pattern",
               "pre_tokenizer")
    try:
        return pattern_from_hf(split_regex, keep_gaps=shape == ("Isolated", False))
    except ValueError as exc:
        f.fail(str(exc), "pattern", "pre_tokenizer")


def _digits_pattern(f: _File, digits: dict[str, Any], byte_level: dict[str, Any]) -> str:
    """The pattern of Digits then ByteLevel with GPT-2's regex (StarCoder's files): STARCODER_PATTERN, or
    DIGIT_RUNS_GPT2_PATTERN without individual_digits. (HF's Digits asks Rust's char::is_numeric, of Unicode 17 in
    tokenizers 0.23, its regex Unicode 16.0, as bpe_fast does: the 13 digits Unicode 17 added, U+11DE0-11DE9 and
    U+16FF4-16FF6, are pieces of their own there, not here; every other code point gives HF's pieces.)"""
    individual = digits.get("individual_digits")
    if type(individual) is not bool:        # (HF refuses the file too: the field is required)
        f.fail(f'pre_tokenizer Digits "individual_digits" must be true or false, not {json.dumps(individual)[:40]}',
               "individual_digits" if "individual_digits" in digits else "type", "pre_tokenizer")
    _check_prefix_space(f, byte_level)
    if byte_level.get("use_regex", True) is not True:
        f.fail("Digits then ByteLevel without use_regex (pieces only at digits) is not supported", "use_regex",
               "pre_tokenizer")
    return STARCODER_PATTERN if individual else DIGIT_RUNS_GPT2_PATTERN


def _check_prefix_space(f: _File, byte_level: dict[str, Any]) -> None:
    if byte_level.get("add_prefix_space") is not False:
        f.fail("ByteLevel add_prefix_space must be false (HF then puts a space before the text; bpe_fast does "
               "not)", "add_prefix_space", "pre_tokenizer")


def _check_byte_level_after_split(f: _File, byte_level: dict[str, Any]) -> None:
    _check_prefix_space(f, byte_level)
    if byte_level.get("use_regex", True) is not False:
        f.fail("ByteLevel after a Split must have use_regex false (HF would split the pieces again with "
               "GPT-2's pattern)", "use_regex", "pre_tokenizer")


def _is_deepseek3(splits: Sequence[dict[str, Any]]) -> bool:
    """Whether the Splits are DeepSeek V3's (DEEPSEEK3_SPLITS, Isolated, not inverted; "\\r" and "\\n" in its
    third regex spelled as the characters or as escapes)."""
    for split, expected in zip(splits, DEEPSEEK3_SPLITS):
        spec = split.get("pattern")
        given = spec.get("Regex") if isinstance(spec, dict) else None
        if (split.get("behavior"), split.get("invert", False)) != ("Isolated", False) or not isinstance(given, str) \
                or given.replace("\\r", "\r").replace("\\n", "\n") != expected:
            return False
    return True


def pre_tokenizer_to_hf(pattern: str) -> list[dict[str, Any]]:
    """The steps of an HF pre_tokenizer Sequence that give the pieces `pattern` gives in bpe_fast, ByteLevel last
    (its bytes to GPT-2's characters): Digits then ByteLevel with GPT-2's regex for STARCODER_PATTERN and
    DIGIT_RUNS_GPT2_PATTERN (StarCoder's); else Splits, then ByteLevel without its regex: DeepSeek V3's three for
    DEEPSEEK3_PATTERN, or split_to_hf's one."""
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
    if pattern in (STARCODER_PATTERN, DIGIT_RUNS_GPT2_PATTERN):
        return [{"type": "Digits", "individual_digits": pattern == STARCODER_PATTERN}, {**byte_level, "use_regex": True}]
    if pattern == DEEPSEEK3_PATTERN:
        return [*({"type": "Split", "pattern": {"Regex": split}, "behavior": "Isolated", "invert": False}
                  for split in DEEPSEEK3_SPLITS), byte_level]
    split_regex, behavior, invert = split_to_hf(pattern)
    return [{"type": "Split", "pattern": {"Regex": split_regex}, "behavior": behavior, "invert": invert}, byte_level]


def _read_vocab(f: _File, vocab_json: object, added: Collection[str] = ()) -> tuple[dict[str, int], Vocab]:
    """({token as written: id}, {id: bytes}); every id an int in range, no id twice, every byte a token. A key
    that is not in GPT-2's byte mapping is refused unless it is one of the added tokens' contents (`added`), as
    DeepSeek's files have theirs ("<\uff5cbegin\u2581of\u2581sentence\uff5c>"): HF gives the added token that id, and
    merging never makes it; its bytes are its UTF-8."""
    if not isinstance(vocab_json, dict):
        f.fail('model "vocab" must be a JSON object {token: id}', "vocab", "model")
    keys = list(vocab_json)
    ids = list(vocab_json.values())
    if ids and (set(map(type, ids)) != {int} or min(ids) < 0 or max(ids) > formats.MAX_TOKEN_ID):
        for key, i in vocab_json.items():
            if type(i) is not int or not 0 <= i <= formats.MAX_TOKEN_ID:
                f.fail(f"vocab token {key!r} has id {json.dumps(i)}, not an int in 0..{formats.MAX_TOKEN_ID}",
                       key, "vocab")
    if len(set(ids)) != len(ids):
        seen: dict[int, str] = {}
        for key, i in vocab_json.items():
            if i in seen:
                f.fail(f"vocab id {i} is given to two tokens, {seen[i]!r} and {key!r}", key, "vocab")
            seen[i] = key
    try:
        tokens = formats.strs_to_tokens(keys)
    except ValueError:
        tokens = []
        for key in keys:
            try:
                tokens.append(formats.str_to_token(key))
            except ValueError as exc:
                if key not in added:
                    f.fail(f"vocab token {key!r}: {exc} (not a byte-level vocabulary?)", key, "vocab")
                tokens.append(key.encode("utf-8"))
    if "" in vocab_json:       # no text encodes to it; the Tokenizer constructor refuses it too
        f.fail(f"the empty token \"\" has id {vocab_json['']}: a token is at least one byte", "", "vocab")
    vocab = dict(zip(ids, tokens))
    top = max(ids, default=-1)
    problem = formats.sparsity_problem(top, len(ids))
    if problem:
        f.fail(problem, keys[ids.index(top)], "vocab")
    missing = sorted(set(range(256)) - {t[0] for t in tokens if len(t) == 1})
    if missing:
        shown = ", ".join(f"0x{b:02X}" for b in missing[:8]) + (", ..." if len(missing) > 8 else "")
        f.fail(f"the vocab has no token for {len(missing)} of the 256 bytes ({shown}); bpe_fast needs every byte "
               "(HF would drop such bytes or give unk_token)", "vocab", "model")
    return vocab_json, vocab


def _read_merges(f: _File, merges_json: object, key_ids: Mapping[str, Any], vocab: Vocab) -> Merges:
    """[(bytes, bytes)] in rank order; refuses what HF would rank otherwise than bpe_fast (module docstring)."""
    if not isinstance(merges_json, list):
        f.fail('model "merges" must be a list', "merges", "model")
    merges = _merges_at_once(merges_json, key_ids, vocab)
    if merges is not None:
        return merges
    merges = []
    first_of: dict[int, int] = {}           # id of a merged token -> index of its first merge
    count_of: dict[int, int] = {}           # id of a merged token -> how many merges make it
    place_of: dict[tuple[int, ...], int] = {}           # (id, id) -> index of the merge
    for k, merge in enumerate(merges_json):
        parts = merge.split(" ") if type(merge) is str else merge
        if type(parts) is not list or len(parts) != 2 or not all(type(p) is str and p for p in parts):
            f.fail(f"merge {k} ({json.dumps(merge)}) is not two tokens, as \"a b\" or [\"a\", \"b\"]", merge, "merges")
        if type(merge) is not type(merges_json[0]):
            f.fail(f"merge {k} ({json.dumps(merge, ensure_ascii=False)}) is not written as merge 0 "
                   f"({json.dumps(merges_json[0], ensure_ascii=False)}): HF "
                   'tokenizers reads a list of "a b" strings or a list of ["a", "b"] pairs, not both', merge, "merges")
        a, b = parts
        ids: tuple[Any, ...] = key_ids.get(a), key_ids.get(b), key_ids.get(a + b)
        if None in ids:
            missing = (a, b, a + b)[ids.index(None)]
            f.fail(f"merge {k} ({json.dumps(merge)}): token {missing!r} is not in the vocab", merge, "merges")
        pair = ids[:2]
        if pair in place_of:
            f.fail(f"merge {k} ({json.dumps(merge)}) repeats merge {place_of[pair]}: HF ranks the pair by its last "
                   "place, bpe_fast by its first", merge, "merges")
        place_of[pair] = k
        made = ids[2]
        first = first_of.setdefault(made, k)
        count_of[made] = count_of.get(made, 0) + 1
        if count_of[made] != k - first + 1:
            f.fail(f"merge {k} ({json.dumps(merge)}) makes token {a + b!r}, which merge {first} made already, with "
                   "other merges between them: HF ranks each pair by its own place, bpe_fast ranks a token by its "
                   "first merge (tiktoken's rule), so the ids could differ", merge, "merges")
        merges.append((vocab[pair[0]], vocab[pair[1]]))
    return merges


def _merges_at_once(merges_json: list[Any], key_ids: Mapping[str, Any], vocab: Vocab) -> Merges | None:
    """_read_merges' result when every check passes, by loops in C over the whole list; None when one fails
    (or the list is unusual), for the loop a merge that names the first fault."""
    kinds = set(map(type, merges_json))
    if kinds == {str}:
        parts = [merge.split(" ") for merge in merges_json]
    elif kinds == {list}:
        parts = merges_json
    else:
        return None if merges_json else []
    if set(map(len, parts)) != {2}:
        return None
    lefts = list(map(operator.itemgetter(0), parts))
    rights = list(map(operator.itemgetter(1), parts))
    if not all(lefts) or not all(rights):
        return None
    get = key_ids.get
    try:        # a part that is not a str is not a key (a JSON object's keys are strs), or not hashable
        left_ids, right_ids = list(map(get, lefts)), list(map(get, rights))
        made = list(map(get, map(str.__add__, lefts, rights)))
    except TypeError:
        return None
    if None in left_ids or None in right_ids or None in made:
        return None
    pair_keys = np.sort(np.array(left_ids, dtype=np.int64) << 32 | np.array(right_ids, dtype=np.int64))
    if np.any(pair_keys[1:] == pair_keys[:-1]):             # a pair listed twice
        return None
    made_ids = np.array(made, dtype=np.int64)
    run_values = np.sort(made_ids[np.flatnonzero(np.diff(made_ids, prepend=-1))])      # the first of each run
    if np.any(run_values[1:] == run_values[:-1]):           # a token made again after other merges
        return None
    return list(zip(map(vocab.__getitem__, left_ids), map(vocab.__getitem__, right_ids)))     # type: ignore[arg-type]


def _read_added_tokens(f: _File, added: object, key_ids: Mapping[str, int], vocab: Vocab,
                       ids_of_bytes: dict[bytes, int] | None = None) -> list[str]:
    """The added tokens' contents, in order of id, each put into `vocab` with its id (checked to be HF's).
    ids_of_bytes: {bytes: id} of vocab's tokens, if the caller has it (each added token is put in it too)."""
    if not isinstance(added, list):
        f.fail('"added_tokens" must be a list', "added_tokens")
    for entry in added:
        content = entry.get("content") if isinstance(entry, dict) else None
        if type(content) is not str or not content or type(entry.get("id")) is not int:
            f.fail(f"added token {json.dumps(entry)[:80]} needs a non-empty \"content\" and an integer \"id\"",
                   "added_tokens")
        if not 0 <= entry["id"] < 1 << 32:
            f.fail(f"added token {content!r} has id {entry['id']}: HF tokenizers refuses it (an id is a 32-bit "
                   "unsigned integer)", content, "added_tokens")
        try:
            content.encode("utf-8")
        except UnicodeEncodeError as exc:
            f.fail(f"added token {content!r} holds a lone surrogate at index {exc.start}: it has no UTF-8",
                   "added_tokens")
        for flag in _ADDED_TOKEN_FLAGS:
            if type(entry.get(flag)) is not bool:
                f.fail(f'added token {content!r} needs "{flag}": true or false (HF tokenizers refuses it without), '
                       f"not {json.dumps(entry.get(flag))[:40]}", content, "added_tokens")
        for flag in ("rstrip", "single_word"):
            if entry[flag]:
                f.fail(f"added token {content!r} has {flag}: true, which is not supported (bpe_fast matches "
                       "special tokens exactly; of the three flags it follows lstrip only)", content, "added_tokens")
    if ids_of_bytes is None:
        ids_of_bytes = {token: i for i, token in vocab.items()}
    contents = [e["content"] for e in added]
    hf_ids = dict(zip(contents, hf_added_token_ids(key_ids, contents)))
    difference = hf_added_token_difference(key_ids, contents, [e["id"] for e in added])
    for k, entry in enumerate(added):
        content, file_id = entry["content"], entry["id"]
        if difference is not None and difference[0] == k:
            f.fail(f"added token {content!r} has id {file_id}, but HF tokenizers gives it id {difference[1]} "
                   f"({difference[2]}: a token in the vocab keeps its id; the others follow the vocab in order)",
                   content, "added_tokens")
        data = content.encode("utf-8")
        if file_id in vocab and vocab[file_id] != data:
            f.fail(f"added token {content!r} (bytes {data!r}) has id {file_id}, the id of vocab token "
                   f"{formats.token_to_str(vocab[file_id])!r} (bytes {vocab[file_id]!r}): bpe_fast gives an id one "
                   "byte string", content, "added_tokens")
        # An added token whose bytes are a model token's with another id (GPT-NeoX's and Pythia's runs of spaces:
        # "  " is also the merge of "Ġ Ġ"): HF finds it in the text before the model sees any, so encoding gives
        # the added token's id, and the model's id decodes to the same bytes; bpe_fast's special token does both.
        vocab[file_id] = data
        ids_of_bytes[data] = file_id
    _check_two_passes(f, added)
    return sorted(hf_ids, key=hf_ids.get)        # type: ignore[arg-type]  # every key is there


def _check_two_passes(f: _File, added: Sequence[dict[str, Any]]) -> None:
    """HF finds the added tokens with normalized false in the text first, then those with normalized true in
    what is left; bpe_fast finds all in one pass (the leftmost, then the longest). The two agree unless a token of
    one kind can overlap one of the other (one inside the other, or the end of one the start of the other). A
    token listed twice has the kind of its last entry, as in HF."""
    kinds = {e["content"]: bool(e.get("normalized", True)) for e in added}      # the last entry's
    raw = {token for token, normalized in kinds.items() if not normalized}
    normalized = {token for token, normalized in kinds.items() if normalized}
    if not raw or not normalized:
        return
    # one with lstrip in the first pass takes white space a token of the second would have ended in (helper-109)
    takes = sorted(raw & _lstrip_of(added))
    if takes:
        for token in sorted(normalized):
            data = token.encode("utf-8")
            if white_space_run_start(data) < len(data):
                f.fail(f"added token {token!r} has normalized: true and ends in white space, which {takes[0]!r} "
                       "(lstrip: true, normalized: false) may take: HF matches the two kinds in two passes, "
                       "bpe_fast in one, so the ids could differ", token, "added_tokens")
    for group, others in ((raw, normalized), (normalized, raw)):
        inside = {t[i:j] for t in others for i in range(len(t)) for j in range(i + 1, len(t) + 1)}
        starts = {t[:k] for t in others for k in range(1, len(t))}
        for token in sorted(group):
            if token in inside or any(token[k:] in starts for k in range(1, len(token))):
                f.fail(f"added token {token!r} can overlap another added token whose \"normalized\" flag differs; "
                       "HF matches the two kinds in two passes, bpe_fast in one, so the ids could differ",
                       token, "added_tokens")
