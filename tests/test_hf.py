"""HF tokenizer.json files: Tokenizer.from_hf against the real `tokenizers` library, the refusals, export_hf's
file form, and export_hf_dir against `transformers` (optional).

Expected ids always come from `tokenizers` (Tokenizer.from_file(...).encode(text, add_special_tokens=False)),
never from bpe_fast. GPT-2's files are in tests/fixtures.
"""
import json
import os
import random
import re

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from bpe_fast import Tokenizer
from bpe_fast.cli import main
from bpe_fast.export import hf_tokenizer_json
from bpe_fast.formats import FormatError, token_to_str
from bpe_fast.hf import GPT4_PATTERN_HF, pattern_from_hf, pattern_to_hf
from bpe_fast.pretokenize import pretokenize
from bpe_fast.patterns import (BLOOM_PATTERN, BLOOM_SPLIT, DEEPSEEK3_PATTERN, DEEPSEEK3_SPLITS, GPT2_PATTERN, GPT4_PATTERN, KIMI_PAT_STR,
                               KIMI_PATTERN, O200K_PATTERN, R50K_PATTERN)
from bpe_fast.synthetic import mixed_text
from corpora import EOT, FIXTURES, SCRIPTS

tokenizers = pytest.importorskip("tokenizers", reason="HF tokenizers is not installed")
from tokenizers import decoders, models, pre_tokenizers, trainers

# Llama 3's Split regex (cl100k's pattern as tiktoken first spelled it; it differs from GPT4_PATTERN at the end
# of a text ending in whitespace after a newline), written out here as Meta's files have it; bpe_fast scans it
# natively (bpe_fast.patterns.LLAMA3_PATTERN), as it does Qwen2's (the same with \p{N} for \p{N}{1,3})
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                  r"\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PATTERN = LLAMA3_PATTERN.replace(r"\p{N}{1,3}", r"\p{N}")
# Tekken's (Mistral's files): o200k's without the contraction suffixes, digits one at a time
TEKKEN_PATTERN = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?"
                  r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|"
                  r"\s+(?!\S)|\s+")


def _agreed_characters(candidates):
    """The candidates that Oniguruma (in HF) and `regex` put in the same Unicode classes. Oniguruma's tables are
    older: recently assigned letters (U+0558, U+A7CE, ...) are letters to `regex` only, and texts holding them
    get other pieces, so other ids, in HF than in bpe_fast (or tiktoken)."""
    import regex
    classes = [r"\p{L}", r"\p{N}", r"\s", r"\p{Lu}", r"\p{Ll}", r"\p{Lt}", r"\p{Lm}", r"\p{Lo}", r"\p{M}"]
    splits = [pre_tokenizers.Split(tokenizers.Regex(c), behavior="isolated") for c in classes]
    agreed = []
    for ch in candidates:
        hf = [len(split.pre_tokenize_str("#" + ch + "#")) == 3 for split in splits]
        if hf == [regex.fullmatch(c, ch) is not None for c in classes]:
            agreed.append(ch)
    return agreed


def _random_texts(n, seed):
    rng = random.Random(seed)
    alphabet = list("aAzZ '\n\r\t 0123456789.,!/?-ßİıſKé́Ωω中文")
    alphabet += ["\u00a0", "\u2028", "\u0301", "\U0001F600", "'s", "'LL", "  \n", "\r\n", "123456", EOT]
    others = _agreed_characters(chr(cp) for cp in rng.sample(range(0x20, 0x30000), 3000) if not 0xD800 <= cp < 0xE000)
    out = []
    for _ in range(n):
        out.append("".join(rng.choice(others if rng.random() < 0.1 else alphabet) for _ in range(rng.randint(1, 30))))
    return out


TEXTS = [
    "", "Hello world! It's a test.", "I'm HE'LL 'S don't we'LL they'VE", "12345678 1/2 3.14159 ١٢٣٤٥",
    "  leading and trailing  ", "x  \n\n  y \r\n\r\n z\t\t", "ends in spaces   ", "\n\n\n", "  \n  ",
    "a\u00a0b\u2028c\u3000d", "ſK İı ǅ ﬁ", " ".join(SCRIPTS.values()), f"{EOT}Hello{EOT}{EOT} x{EOT}",
    "<|endoftext|", "<|endoftext|>>", "$x ^y (a) [b] {c}",
] + _random_texts(300, seed=1) + [mixed_text(20_000, seed=3)]


def hf_ids(hf, text):
    return hf.encode(text, add_special_tokens=False).ids


def assert_same_ids(ours, hf, texts=TEXTS):
    for text in texts:
        expected = hf_ids(hf, text)
        assert ours.encode(text) == expected, text[:100]
        assert ours.decode(expected) == hf.decode(expected, skip_special_tokens=False), text[:100]


def save_hf(hf, path):
    hf.save(str(path))
    return path


# ------------------------------------------------------------------------------------- (a) GPT-2's files

@pytest.fixture(scope="module")
def gpt2_json(tmp_path_factory):
    """GPT-2's tokenizer.json as `tokenizers` writes it (merges as [a, b] pairs)."""
    bpe = models.BPE.from_file(str(FIXTURES / "gpt2_vocab.json"), str(FIXTURES / "gpt2_merges.txt"))
    hf = tokenizers.Tokenizer(bpe)
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    hf.add_special_tokens([EOT])
    return save_hf(hf, tmp_path_factory.mktemp("gpt2") / "tokenizer.json")


@pytest.mark.parametrize("merge_form", ["pairs", "strings", "hub"])
def test_gpt2_tokenizer_json(gpt2_json, gpt2, tmp_path, merge_form):
    doc = json.loads(gpt2_json.read_text("utf-8"))
    assert isinstance(doc["model"]["merges"][0], list)
    if merge_form in ("strings", "hub"):
        doc["model"]["merges"] = [" ".join(m) for m in doc["model"]["merges"]]
    if merge_form == "hub":     # as the Hub's openai-community/gpt2 holds it (an older writer's fields and order)
        doc = {"version": "1.0", "truncation": None, "padding": None,
               "added_tokens": [{"id": 50256, "special": True, "content": EOT, "single_word": False, "lstrip": False,
                                 "rstrip": False, "normalized": True}],
               "normalizer": None, "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True},
               "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False},
               "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True},
               "model": {"dropout": None, "unk_token": None, "continuing_subword_prefix": "", "end_of_word_suffix": "",
                         "fuse_unk": False, "vocab": doc["model"]["vocab"], "merges": doc["model"]["merges"]}}
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc), "utf-8")
    hf = tokenizers.Tokenizer.from_file(str(path))
    ours = Tokenizer.from_hf(path)
    assert ours.pattern == GPT2_PATTERN and ours.special_tokens == {EOT: 50256} and ours.vocab_size == 50257
    texts = TEXTS + [(FIXTURES / "german.txt").read_text("utf-8"), (FIXTURES / "address.txt").read_text("utf-8")]
    assert_same_ids(ours, hf, texts)
    # the same tokenizer as GPT-2's own two files give
    assert ours.vocab == gpt2.vocab and ours.merges == gpt2.merges


def test_ids_need_not_be_ordered_or_dense(gpt2_json, tmp_path):
    # every id moved to a random place in 0..3n: the single bytes are no longer 0..255
    doc = json.loads(gpt2_json.read_text("utf-8"))
    vocab = doc["model"]["vocab"]
    new_ids = random.Random(0).sample(range(3 * len(vocab)), len(vocab))
    moved = dict(zip(sorted(vocab.values()), new_ids))
    doc["model"]["vocab"] = {key: moved[i] for key, i in vocab.items()}
    doc["added_tokens"][0]["id"] = moved[50256]
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc), "utf-8")
    hf = tokenizers.Tokenizer.from_file(str(path))
    ours = Tokenizer.from_hf(path)
    assert ours.encode("a")[0] == moved[64] != 64
    assert_same_ids(ours, hf, TEXTS[:40])


# ------------------------------------------------------------------------------------- (b) Split + ByteLevel

def train_hf(split, tmp_path, vocab_size=800, specials=(EOT, "<|pad|>")):
    """A byte-level BPE trained by `tokenizers` with Split(`split`) then ByteLevel, as Llama 3's files are."""
    hf = tokenizers.Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(split, behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    hf.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(specials), show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    hf.train_from_iterator(mixed_text(150_000, seed=11).split("\n"), trainer)
    return save_hf(hf, tmp_path / "tokenizer.json")


@pytest.mark.parametrize("split, native", [
    (GPT4_PATTERN_HF, GPT4_PATTERN),      # cl100k's pattern as HF files spell it: runs natively
    (O200K_PATTERN, O200K_PATTERN),
    (GPT2_PATTERN, GPT2_PATTERN),
    (LLAMA3_PATTERN, LLAMA3_PATTERN),
    (QWEN2_PATTERN, QWEN2_PATTERN),
    (TEKKEN_PATTERN, TEKKEN_PATTERN),
    (KIMI_PAT_STR, KIMI_PATTERN),         # Kimi K2's: Oniguruma nests classes and reads && as tiktoken's engine does
    (r"\p{L}+|\p{N}", None),              # leaves gaps, which HF keeps as pieces
    (r"\s+$|\S+|\s", None),               # $ at each line's end, as Oniguruma reads it
])
def test_split_then_byte_level(tmp_path, split, native):
    path = train_hf(tokenizers.Regex(split), tmp_path)
    hf = tokenizers.Tokenizer.from_file(str(path))
    ours = Tokenizer.from_hf(path)
    if native:
        assert ours.pattern == native
        assert ours.native
    assert pattern_to_hf(ours.pattern) == split
    assert ours.special_tokens == {EOT: 0, "<|pad|>": 1}
    assert_same_ids(ours, hf)


def test_a_class_nested_in_a_class_is_read_as_oniguruma_s_union(tmp_path):
    # BLOOM's Split regex was refused ("'[' ... read differently"): Oniguruma reads the nested class as a union, which
    # bpe_fast writes into the outer class (hf._nested_classes_joined), the pieces as HF's
    path = train_hf(tokenizers.Regex(BLOOM_SPLIT), tmp_path)
    hf = tokenizers.Tokenizer.from_file(str(path))
    ours = Tokenizer.from_hf(path)
    assert ours.pattern == BLOOM_PATTERN and ours.native         # ("bloom": scanned natively)
    assert pattern_to_hf(ours.pattern) == r" ?[^(\s|.,!?…。，、।۔،)]+"
    texts = TEXTS + ["Hello, world! (a|b) 。，、 x…y [z] ।۔، end.", "a  ,b\n\n(c)"]
    assert_same_ids(ours, hf, texts)
    split = pre_tokenizers.Split(tokenizers.Regex(BLOOM_SPLIT), behavior="isolated", invert=False)
    rng = random.Random(8)
    alphabet = list("ab xy09(|)[].,!?…。，、।۔،\n\t-^") + ["  ", "中", "é"]
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 20)))
        assert pretokenize(text, ours.pattern) == [p for p, _ in split.pre_tokenize_str(text)], text
    ours.export_hf(tmp_path / "again.json")
    assert_same_ids(Tokenizer.from_hf(tmp_path / "again.json"), hf, texts)
    assert_same_ids(ours, tokenizers.Tokenizer.from_file(str(tmp_path / "again.json")), texts)
    # what is not such a union stays refused: a negated nested class, a POSIX bracket, an intersection
    for regex_text in (r"[a[^b]]+", r"[a[:alpha:]]+", r"[a-z&&[^aeiou]]+"):
        with pytest.raises(ValueError, match="read differently"):
            pattern_from_hf(regex_text)
    # and bpe_fast's own pattern with "[" in a class (a literal to `regex`) is still not written for Oniguruma
    with pytest.raises(ValueError, match="read differently"):
        Tokenizer({i: bytes([i]) for i in range(256)}, [], pattern=r"[a[b]]|\s").export_hf(tmp_path / "x.json")


# ------------------------------------------------------------------------ DeepSeek V3's three Splits

def _deepseek3_splits(third=DEEPSEEK3_SPLITS[2]):
    return [pre_tokenizers.Split(tokenizers.Regex(r), behavior="isolated", invert=False)
            for r in (*DEEPSEEK3_SPLITS[:2], third)]


_DEEPSEEK3_HF = pre_tokenizers.Sequence(_deepseek3_splits())
# the characters each alternative of the three regexes (and the lines between them) turns on: ASCII punctuation
# and letters, digits of several scripts, the edges of its CJK and kana ranges, the marks, punctuation, symbols and
# unassigned code points inside them, other letters, marks and spaces; and characters at random, of those assigned
# since Unicode 3.2 (Oniguruma's tables and `regex`'s agree on their classes; recently assigned ones they may not)
_DEEPSEEK3_CHARS = (list("aZ ,.!?'\"-_[]\\`{}~^@#$%&*+/:;<=>|()\t\r\n0123456789xyz")
                    + list("\u00e9\u0301\u3099\u309b\u30a0\u30fb\u30fc\u65e5\u672c\u30c6\u304b\u3040\u3097\u4e00"
                           "\u9fa5\u9fa6\u4dff\u3003\u0663\u00b2\u216b\u00a0\u3000\u2028\x00\x7f\U0001f600\u03a9\ud55c\u0e01\u0e31"
                           "\u20ac\u00bd\uff11\U0001d7ce\U00020000\uf900"))
_DEEPSEEK3_OTHERS = [chr(c) for c in random.Random(7).sample(range(0x20, 0x30000), 3000)
                      if not 0xD800 <= c < 0xE000 and __import__("unicodedata").ucd_3_2_0.category(chr(c)) != "Cn"]


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(_DEEPSEEK3_CHARS), st.sampled_from(_DEEPSEEK3_OTHERS)), max_size=30)
       .map("".join))
@example("a  1")                        # spaces before a digit: the end of the third Split's piece
@example("x \u65e5")                    # ... and before a CJK character
@example("\u304b\u30fb\u672c")           # the third Split cuts a run of CJK and kana too: its punctuation apart
@example("\u3040\u304b \u30fb\u3099\u304b")   # an unassigned code point and a mark inside the run
def test_deepseek3_pattern_gives_hf_pieces(text):
    import regex
    assert regex.findall(DEEPSEEK3_PATTERN, text) == [piece for piece, _ in _DEEPSEEK3_HF.pre_tokenize_str(text)]


@pytest.fixture(scope="module")
def deepseek3_file(tmp_path_factory):
    """(path, HF's tokenizer) of a byte-level BPE trained by HF with DeepSeek V3's pre-tokenizer and added tokens
    as its files have them (normalized true, no normalizer)."""
    hf = tokenizers.Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.Sequence([*_deepseek3_splits(),
                                                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    hf.decoder = decoders.ByteLevel()
    specials = ["<\uff5cbegin\u2581of\u2581sentence\uff5c>", "<\uff5cend\u2581of\u2581sentence\uff5c>"]
    trainer = trainers.BpeTrainer(vocab_size=900, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    hf.train_from_iterator(mixed_text(150_000, seed=12).split("\n"), trainer)
    path = save_hf(hf, tmp_path_factory.mktemp("deepseek3") / "tokenizer.json")
    return path, tokenizers.Tokenizer.from_file(str(path))


def test_deepseek3_file_gives_hf_ids(deepseek3_file, tmp_path):
    path, hf = deepseek3_file
    ours = Tokenizer.from_hf(path)
    assert ours.pattern == DEEPSEEK3_PATTERN and ours.native
    rng = random.Random(3)
    texts = ["".join(rng.choice(_DEEPSEEK3_CHARS + _DEEPSEEK3_OTHERS[:100]) for _ in range(rng.randint(1, 40)))
             for _ in range(300)]
    texts.append("\u65e5\u672c\u8a9e\u30c6\u30ad\u30b9\u30c812345 abc\u3001<\uff5cend\u2581of\u2581sentence\uff5c>x")
    assert_same_ids(ours, hf, TEXTS + texts)
    # written back as the three Splits, as DeepSeek's files spell them
    ours.export_hf(tmp_path / "back.json")
    steps = json.loads((tmp_path / "back.json").read_text("utf-8"))["pre_tokenizer"]["pretokenizers"]
    assert [step["pattern"]["Regex"] for step in steps[:-1]] == list(DEEPSEEK3_SPLITS)
    back = Tokenizer.from_hf(tmp_path / "back.json")
    assert back.pattern == DEEPSEEK3_PATTERN
    assert_same_ids(back, tokenizers.Tokenizer.from_file(str(tmp_path / "back.json")), texts)


def test_deepseek3_splits_spelled_with_escapes_and_others_refused(deepseek3_file, tmp_path):
    path, _ = deepseek3_file
    doc = json.loads(path.read_text("utf-8"))
    third = doc["pre_tokenizer"]["pretokenizers"][2]["pattern"]
    third["Regex"] = third["Regex"].replace("\r", "\\r").replace("\n", "\\n")        # "\\r": the escape
    assert "\r" not in third["Regex"] and "\\r" in third["Regex"]
    (tmp_path / "escaped.json").write_text(json.dumps(doc), "utf-8")
    assert Tokenizer.from_hf(tmp_path / "escaped.json").pattern == DEEPSEEK3_PATTERN
    third["Regex"] = third["Regex"].replace("\\p{M}", "")       # not DeepSeek's: three Splits are refused
    (tmp_path / "other.json").write_text(json.dumps(doc), "utf-8")
    with pytest.raises(FormatError, match=r'pre_tokenizer "Split" then "Split" then "Split" then "ByteLevel" is not '
                                          r"supported: .*or DeepSeek V3's three Splits then ByteLevel"):
        Tokenizer.from_hf(tmp_path / "other.json")


def test_split_on_a_string(tmp_path):
    path = train_hf(".", tmp_path, vocab_size=400)
    hf = tokenizers.Tokenizer.from_file(str(path))
    assert json.loads(path.read_text("utf-8"))["pre_tokenizer"]["pretokenizers"][0]["pattern"] == {"String": "."}
    assert_same_ids(Tokenizer.from_hf(path), hf, TEXTS[:60])


def test_tiktoken_spelling_of_cl100k_is_refused(tmp_path):
    # Oniguruma reads "\p{N}{1,3}+" as "(\p{N}{1,3})+": HF does not split digits as cl100k does
    split = pre_tokenizers.Split(tokenizers.Regex(GPT4_PATTERN), behavior="isolated")
    assert [piece for piece, _ in split.pre_tokenize_str("12345678")] == ["12345678"]
    path = train_hf(tokenizers.Regex(GPT4_PATTERN), tmp_path, vocab_size=300)
    with pytest.raises(FormatError, match=r"\{1,3\}\+.*Oniguruma") as info:
        Tokenizer.from_hf(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("split, message", [
    (r"(\p{L}+)|\s+|\S", "capturing groups"),
    (r"\p{L}*|\s|\S", "empty text"),
    # empty only after a newline before a letter, where finditer over the probe text never looked: HF keeps the
    # letter after it ("a\nb": a, \n, b), bpe_fast's pieces dropped it
    (r"\s+|(?<=\n)", "empty text"),
    # (review helper-91) empty only before a character no probe text held: found from the regex's structure now
    (r"(?=q)|\p{L}+|\s+|[^\s\p{L}]+", "empty text"),
    (r"z*(?=zz)|\p{L}+|\s+|[^\s\p{L}]+", "empty text"),
    (r"[a-z", "does not compile"),
    # `regex`'s parser recurses into each group: this was a bare RecursionError
    ("(?:" * 1000 + "a" + ")" * 1000, r"\.\.\. \(4,001 characters\) does not compile with `regex`: groups nested too "
                                      "deeply"),
])
def test_split_patterns_bpe_fast_cannot_follow(split, message):
    if split == r"\s+|(?<=\n)":
        hf_split = pre_tokenizers.Split(tokenizers.Regex(split), behavior="isolated")
        assert [piece for piece, _ in hf_split.pre_tokenize_str("a\nb")] == ["a", "\n", "b"]
    with pytest.raises(ValueError, match=message):
        pattern_from_hf(split)


def test_constructs_oniguruma_reads_otherwise_are_refused(tmp_path):
    r"""Oniguruma's \w takes ² ³ ½ (`regex`'s does not): a file split on \w+ gave 2 ids for "x² cm³ ½" where HF gave
    6, and an export of a \w pattern gave HF other ids; && is an intersection to Oniguruma, \K its "keep"."""
    import re

    split = pre_tokenizers.Split(tokenizers.Regex(r"\w+"), behavior="removed", invert=True)
    assert [piece for piece, _ in split.pre_tokenize_str("x² cm³ ½")] == ["x²", "cm³", "½"]        # HF's reading
    # ★ (U+2605, Unicode 1.1) is Extended_Pictographic to Oniguruma, not to `regex` (2026.11)
    split = pre_tokenizers.Split(tokenizers.Regex(r"\p{Extended_Pictographic}+"), behavior="isolated")
    assert [piece for piece, _ in split.pre_tokenize_str("a\u2605")] == ["a", "\u2605"]
    import regex
    assert regex.findall(r"\p{Extended_Pictographic}+", "a\u2605") == []
    split = pre_tokenizers.Split(tokenizers.Regex(r"(*FAIL)|a"), behavior="isolated")
    assert [piece for piece, _ in split.pre_tokenize_str("ab*a")] == ["a", "b*", "a"]
    assert regex.findall(r"(*FAIL)|a", "ab*a") == ["a", "a"]
    for pattern, construct in [(r"\w+|\s+", r"\w"), (r"\W+|\p{L}+", r"\W"), (r"\b\p{L}+", r"\b"),
                               (r"[a-z&&[^aeiou]]+|\p{L}+", "&&"),
                               (r"[[:punct:]]+|\p{L}+", "[:"), (r"\h+|\p{L}+", r"\h"), (r"[a[^b]]|\s", "["),
                               (r"(?m:.+)|\s", "(?m:"), (r"(?im)a|.", "(?im)"), (r"\p{Word}+|\s", r"\p{Word}"),
                               (r"\p{XDigit}+|.", r"\p{XDigit}"), (r"\pL+|.", r"\pL"), (r"\X", r"\X"),
                               (r"\N+|\n", r"\N"),
                               (r"\p{Extended_Pictographic}+|\s", r"\p{Extended_Pictographic}"),
                               (r"[\p{ExtPict}a]+|\s", r"\p{ExtPict}"),
                               # Oniguruma's PosixPunct takes 130 characters more (Ⓐ, U+24B6, among them)
                               (r"\p{PosixPunct}+|\P{PosixPunct}+", r"\p{PosixPunct}"),
                               # a callout to Oniguruma, a verb to `regex`: HF read "a(*SKIP)b|." as ab then one
                               # piece a character, bpe_fast dropped the last "a" of "ab*SKIP)a"
                               (r"a(*SKIP)b|.", "(*SKIP)"), (r"(*FAIL)|a", "(*FAIL)")]:
        _assert_read_differently(pattern, construct, tmp_path / "out.json")
    # \K: read differently too, and no tokenizer takes it (bpe_fast.patterns: a match starting before where it says)
    with pytest.raises(ValueError, match=r"has '\\K'.*read differently"):
        pattern_from_hf(r"a\Kb|\p{L}")
    with pytest.raises(ValueError, match=r"uses \\K"):
        Tokenizer({i: bytes([i]) for i in range(256)}, [], pattern=r"a\Kb|\p{L}")
    assert not (tmp_path / "out.json").exists()
    path = train_hf(tokenizers.Regex(r"\w+|\s+"), tmp_path, vocab_size=300)
    with pytest.raises(FormatError, match=re.escape(r"has '\w'")):
        Tokenizer.from_hf(path)
    # read alike: an escaped backslash before the letter (no \w), && outside a class, \b in a class (a backspace)
    import regex
    assert regex.findall(pattern_from_hf(r"\\w|\p{L}+"), "a\\w") == ["a", "\\w"]
    assert regex.findall(pattern_from_hf(r"&&|\|\||[\b]|\p{L}+|\s"), "a&&b") == ["a", "&&", "b"]
    split = pre_tokenizers.Split(tokenizers.Regex(r"&&|\|\||[\b]|\p{L}+|\s"), behavior="isolated")
    assert [piece for piece, _ in split.pre_tokenize_str("a&&b")] == ["a", "&&", "b"]
    # \N: any character but a newline to Oniguruma, a literal N to `regex` (a named character with braces); in a
    # class both read an N
    split = pre_tokenizers.Split(tokenizers.Regex(r"\N"), behavior="isolated")
    assert [piece for piece, _ in split.pre_tokenize_str("aN")] == ["a", "N"]
    assert regex.findall(r"\N", "aN") == ["N"]
    assert regex.findall(pattern_from_hf(r"[\N]"), "aN") == ["a", "N"]
    with pytest.raises(ValueError, match="possessive interval"):
        Tokenizer({i: bytes([i]) for i in range(256)}, [], pattern=r"\p{N}{1,3}+|\p{L}+|\s").export_hf(tmp_path / "o.json")


# (Split regex, a text, the construct named): each accepted before and read otherwise by the engines (helper-101's
# grammar fuzz of 215,000 regexes against HF); HF's pieces are asserted to differ from what `regex` gives for the
# regex as bpe_fast wrapped such a regex (hf._wrap)
READ_OTHERWISE = [
    (r"a{,}b", "ab a{,}b", "{,}"),                          # literal to Oniguruma, {0,} to `regex`
    (r"a{,2}+b", "aaab", "{,2}+"),                          # a repeated interval to Oniguruma, possessive to `regex`
    (r"\\{2}?x", "ax", "{2}?"),                             # the brace after an escaped backslash is not escaped
    (r"(?-m)a$", "a\nb", "(?-m)"),                          # Oniguruma's $ is a line's end whatever the flags
    (r"\xc3\xa9", "xé", "\\x"),                              # UTF-8 bytes to Oniguruma, characters to `regex`
    (r"\303\251", "xé", "\\3"),
    (r"\U0001F600", "a\U0001F600", "\\U"),
    (r"\m", "am", "\\m"),                                    # a literal m to Oniguruma, a word start to `regex`
    (r"(?#\)a)|b", "ab", "(?#"),                             # where a comment ends
    ("(?x)a\x0bb", "ab a\x0bb", "(?x)"),                   # which spaces (?x) skips (\x0b: `regex` 2026.11 also
                                                             # skipped U+3000, 2026.12 no more)
    (r"(?i)\u00df", "xss", "(?i)\\u"),
    (r"(?i)(?:s)s", "x\u00df", "(?i)ss"),                    # Oniguruma joins a plain group's letters with those
    (r"(?i)f(?:i)", "x\ufb01", "(?i)i"),                     # around it
    (r"(?i)[\p{Greek}]", "x\u00b5", "(?i)[\\p"),                # Oniguruma closes the class under case folding
    (r"(?i:[\S].){2}", "fi In", "(?i)[\\S"),
    (r"\Gb|b+", "xbb", "\\G"),                                # moved by the gaps the wrapped regex matches
    (r"x\g'0'?", "ax", "\\g"),                               # a call of the whole regex to Oniguruma
    (r"(?L)\S+", "b a)b", "(?L)"),                          # the longest match to Oniguruma, locale to `regex`
    (r"[^\s\S]|b", "acb", "[^\\s\\S"),                        # no character to Oniguruma, any to `regex`
    (r"[^\P{L}a\p{L}]", "a1", "[^\\P{\\p{"),
    (r"(?i:\p{L}|a)", "k\u0345'", "(?i)\\p{L}"),                # `regex` closes the alternation under case folding
    (r"(?i:a|\P{L})", "S\u0345", "(?i)\\P{L}"),                  # (U+0345 folds to ι) (helper-103)
]


@pytest.mark.parametrize("split_regex, text, construct", READ_OTHERWISE)
def test_split_regexes_the_engines_read_otherwise_are_refused(split_regex, text, construct):
    import re

    import regex
    from bpe_fast import hf as hf_module

    split = pre_tokenizers.Split(tokenizers.Regex(split_regex), behavior="isolated")
    assert [piece for piece, _ in split.pre_tokenize_str(text)] != regex.findall(hf_module._wrap(split_regex), text)
    with pytest.raises(ValueError, match=f"has '{re.escape(construct)}"):
        pattern_from_hf(split_regex)


def test_split_regexes_near_those_read_otherwise_are_read():
    # what the refusals above leave: an inline (?-i) where the flag i is on, a group or a class there whose letters
    # spell no fold with those around it (minbpe's and nanochat's '(?i:[sdmt]|ll|ve|re): helper-103), \u and \x
    # below 80, (?-m) without $, a class holding \S, a negated class holding \S alone ([^\S\r\n]: spaces, no newline)
    import regex
    nanochat = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,2}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|"""
                r"""\s+(?!\S)|\s+""")
    for split_regex in [r"(?i:a(?-i)ss)|\p{L}+|\s", r"x(?i)(?:y|z)", r"\u0041\x42|\p{L}|\s",
                        r"(?-m:ab)|\p{L}|\s", r"[\S\d]+|\s", nanochat, r"[^\S\r\n]+|\S+", r"(?i:[st])t",
                        r"(?i)(?:s|a)s", r"(?i)s(?i:s)"]:
        split = pre_tokenizers.Split(tokenizers.Regex(split_regex), behavior="isolated")
        text = "AB ab xy xY Xz Ass ß a\nb  \t\n I'M it's ﬆ st As aß 123"
        assert regex.findall(pattern_from_hf(split_regex), text) == [piece for piece, _ in split.pre_tokenize_str(text)]


def test_property_names_oniguruma_does_not_read_are_refused(tmp_path):
    # export_hf wrote \p{Script=Latin} and the rest, which HF then failed to load ("invalid character property
    # name"); from_hf read them (review helper-141)
    import regex
    for pattern in [r"\p{Script=Latin}+|\s", r"\p{sc=Han}+|\s", r"\p{IsLatin}+|\s", r"\P{gc=L}+|\p{L}+",
                    r"[\p{General_Category=Lu}a]+|\s", r"\p{PosixDigit}+|\s"]:
        construct = regex.search(r"\\[pP]\{[^}]*\}", pattern).group()
        with pytest.raises(Exception, match="invalid character property name"):     # noqa: B017 (HF's own)
            pre_tokenizers.Split(tokenizers.Regex(pattern), behavior="isolated")
        expected = f"has '{re.escape(construct)}', a property name Oniguruma \\(HF tokenizers\\) does not read"
        with pytest.raises(ValueError, match=expected):
            pattern_from_hf(pattern)
        with pytest.raises(ValueError, match=expected):
            Tokenizer({i: bytes([i]) for i in range(256)}, [], pattern=pattern).export_hf(tmp_path / "out.json")
    assert not (tmp_path / "out.json").exists()
    # the names alone read alike
    split = pre_tokenizers.Split(tokenizers.Regex(r"\p{Latin}+|\p{Han}+|\s"), behavior="isolated")
    text = "ab 漢字 cd"
    assert regex.findall(pattern_from_hf(r"\p{Latin}+|\p{Han}+|\s"), text) == [
        piece for piece, _ in split.pre_tokenize_str(text)]


def test_export_refuses_capturing_groups_as_from_hf_does(tmp_path):
    # export_hf wrote a pattern with capturing groups, which from_hf then refused in its own file (helper-141)
    for pattern in [r"(\p{L}+)|\S|\s+", r"(?<w>\p{L}+)|\S|\s+"]:
        tok = Tokenizer({i: bytes([i]) for i in range(256)}, [], pattern=pattern)
        with pytest.raises(ValueError, match="capturing groups"):
            pattern_from_hf(pattern)
        with pytest.raises(ValueError, match="capturing groups, which from_hf refuses"):
            tok.export_hf(tmp_path / "out.json")
    assert not (tmp_path / "out.json").exists()


def _assert_read_differently(pattern, construct, out):
    """pattern_from_hf and export_hf both refuse `pattern`, naming `construct` as read differently by the engines."""
    import re
    expected = f"has '{re.escape(construct)}'.*read differently"
    with pytest.raises(ValueError, match=expected):
        pattern_from_hf(pattern)
    with pytest.raises(ValueError, match=expected):
        Tokenizer({i: bytes([i]) for i in range(256)}, [], pattern=pattern).export_hf(out)


def test_case_insensitive_constructs_oniguruma_reads_otherwise_are_refused(tmp_path):
    """Under the flag i, `regex` folds i with İ and I with ı and widens \\p{Lu} to every cased letter; Oniguruma
    matches ß with ss, ﬀ with ff: files split so were read and gave other ids than HF ('(?i:ss)' is 'ß' in HF)."""
    import re

    import regex
    cases = [("(?i:ss)", "ß", ["ß"], "(?i)ss"), ("(?i:ß)", "ss", ["ss"], "(?i)ß"), ("(?i)ff", "ﬀ", ["ﬀ"], "(?i)ff"),
             ("(?i:st)", "ﬆ", ["ﬆ"], "(?i)st"), ("(?i)\\p{Lu}+", "aB", ["B"], "(?i)\\p{Lu}"),
             ("(?i)[\\p{Lu}]", "ƫ", [], "(?i)[\\p"), ("(?i)[A-Z]+", "ı", [], "(?i)A-Z"),
             ("(?i)I", "ı", [], "(?i)I"), ("(?i)x|(?i:İ)", "i", [], "(?i)İ")]
    for pattern, text, hf_matches, construct in cases:
        split = pre_tokenizers.Split(tokenizers.Regex(pattern), behavior="removed", invert=True)
        assert [piece for piece, _ in split.pre_tokenize_str(text)] == hf_matches       # HF's reading
        assert regex.findall(pattern, text) != hf_matches                                 # `regex`'s
        _assert_read_differently(pattern, construct, tmp_path / "out.json")
    # \K: read differently too, and no tokenizer takes it (bpe_fast.patterns: a match starting before where it says)
    with pytest.raises(ValueError, match=r"has '\\K'.*read differently"):
        pattern_from_hf(r"a\Kb|\p{L}")
    with pytest.raises(ValueError, match=r"uses \\K"):
        Tokenizer({i: bytes([i]) for i in range(256)}, [], pattern=r"a\Kb|\p{L}")
    assert not (tmp_path / "out.json").exists()
    path = train_hf(tokenizers.Regex("(?i:st)|\\p{L}+|\\s+|[^\\s\\p{L}]+"), tmp_path, vocab_size=300)
    with pytest.raises(FormatError, match=re.escape("has '(?i)st'")):
        Tokenizer.from_hf(path)
    # read alike: the flag i on other letters, where it is off, and the contractions of Llama 3's pattern
    for pattern in ["(?i:'s|'t|'re|'ve|'m|'ll|'d)|\\p{L}+|\\s", "(?i:ab)s|s|\\s", "(?i:a(?-i)ss)|[a-z]+|\\s",
                    "(?i:[b-h]+)|\\p{Lu}+|\\s", "(?i:k)(?:ss)|\\p{L}|\\s"]:
        split = pre_tokenizers.Split(tokenizers.Regex(pattern), behavior="isolated")
        text = "Ass aSS ss ß ﬁ İ ı BIG ſtop 's 'S 'LL ﬆ K Kss"
        hf_pieces = [piece for piece, _ in split.pre_tokenize_str(text)]
        assert regex.findall(pattern_from_hf(pattern), text) == hf_pieces


def test_an_option_group_inside_an_alternative_before_another_is_refused(tmp_path):
    """Oniguruma reads x(?i)y|C as x(?i:y|C), `regex` as xy|C (C with the flag), whatever the flags: such files
    were read and gave other ids than HF."""
    import re

    import regex
    for pattern, text, hf_matches in [("x(?i)y|C", "xy C xC", ["xy", "xC"]), ("x(?-i)y|C", "xy C xC", ["xy", "xC"]),
                                      ("(?:x(?i)y|c)d", "cd xcd", ["xcd"])]:
        split = pre_tokenizers.Split(tokenizers.Regex(pattern), behavior="removed", invert=True)
        assert [piece for piece, _ in split.pre_tokenize_str(text)] == hf_matches       # HF's reading
        assert regex.findall(pattern, text) != hf_matches                                 # `regex`'s
        with pytest.raises(ValueError, match=r"has '\(\?-?[ix]\) followed by \|'.*read differently"):
            pattern_from_hf(pattern)
    with pytest.raises(ValueError, match=re.escape("has '(?i) followed by |'")):
        Tokenizer({i: bytes([i]) for i in range(256)}, [], pattern="x(?i)y|\\s").export_hf(tmp_path / "out.json")
    # read alike: the option group first in its alternative, or no alternative after it in its group
    for pattern in ["(?i)x|y", "a|(?i)x|y", "x(?i)y", "x(?i)(?:y|z)", "(?:x(?i)y)|z", "(?i:x)y|z"]:
        split = pre_tokenizers.Split(tokenizers.Regex(pattern), behavior="isolated")
        text = "xy xY Xy y Y z Z a xz"
        assert regex.findall(pattern_from_hf(pattern), text) == [piece for piece, _ in split.pre_tokenize_str(text)]


def test_llama3_style_file_from_tiktoken_ranks(tmp_path):
    # transformers' TikTokenConverter makes Llama 3's tokenizer.json from tiktoken ranks: every split of every
    # token a merge (next to each other), ignore_merges true, Llama 3's Split regex. Here from cl100k's ranks.
    pytest.importorskip("transformers", reason="transformers is not installed (optional)")
    try:
        from transformers.convert_slow_tokenizer import TikTokenConverter
    except ImportError:
        pytest.skip("this transformers has no TikTokenConverter")
    import gzip
    import shutil

    from openai_ranks import ranks_path
    with gzip.open(ranks_path("cl100k_base"), "rb") as src, open(tmp_path / "cl100k.tiktoken", "wb") as dst:
        shutil.copyfileobj(src, dst)
    converted = TikTokenConverter(str(tmp_path / "cl100k.tiktoken"), pattern=LLAMA3_PATTERN).converted()
    path = save_hf(converted, tmp_path / "tokenizer.json")
    doc = json.loads(path.read_text("utf-8"))
    assert doc["model"]["ignore_merges"] is True and len(doc["model"]["merges"]) > len(doc["model"]["vocab"])
    assert_same_ids(Tokenizer.from_hf(path), tokenizers.Tokenizer.from_file(str(path)))


# ------------------------------------------------------------------------------------- (c) bpe_fast's own files

@pytest.fixture(scope="module")
def ours_trained(tmp_path_factory):
    from bpe_fast import train_bpe
    corpus = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    corpus.write_text(mixed_text(150_000, seed=4, special_token=EOT), "utf-8")
    return train_bpe(corpus, 700, [EOT, "<|pad|>"], num_processes=1)


@pytest.mark.parametrize("pattern", ["gpt2", "gpt4", "o200k", "llama3", "qwen2", "tekken", "deepseek3", R50K_PATTERN])
def test_export_then_from_hf(tmp_path, ours_trained, pattern):
    vocab, merges = ours_trained
    # "<|a b|>" is not its byte-level form ("<|aĠb|>"): HF cannot find it in the vocab, gives it the next id
    tok = Tokenizer(vocab, merges, [EOT, "<|pad|>", "<|a b|>"], pattern=pattern)
    path = tmp_path / "tokenizer.json"
    tok.export_hf(path)
    merges_json = json.loads(path.read_text("utf-8"))["model"]["merges"]
    assert all(isinstance(m, str) and m.count(" ") == 1 for m in merges_json)
    hf = tokenizers.Tokenizer.from_file(str(path))
    texts = TEXTS + ["x<|a b|>y<|pad|>" + EOT]
    for text in texts:
        assert tok.encode(text) == hf_ids(hf, text), text[:100]
    back = Tokenizer.from_hf(path)
    assert (back.vocab, back.merges, back.special_tokens) == (tok.vocab, tok.merges, tok.special_tokens)
    # the pattern comes back as it was, a built-in one or another (exported as a Removed, inverted Split: its
    # matches; without anchors, which Oniguruma reads otherwise, it was read back as "(?m:" + pattern + ")")
    assert back.pattern == tok.pattern       # R50K_PATTERN (tiktoken's gpt2, r50k_base) came back as its HF spelling
    assert back.native == tok.native        # (which is not native)
    assert_same_ids(back, hf, texts + ["a  \n", "a \n\n", "x  \n  y \n"])


def test_from_hf_reads_the_tokenizer_json_of_a_folder(tmp_path, ours_trained):
    # a model's folder (save_pretrained's, export --hf-dir's) was a bare IsADirectoryError
    vocab, merges = ours_trained
    tok = Tokenizer(vocab, merges, [EOT, "<|pad|>"])
    (tmp_path / "model").mkdir()
    tok.export_hf(tmp_path / "model" / "tokenizer.json")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "model" / "tokenizer.json"))
    assert_same_ids(Tokenizer.from_hf(tmp_path / "model"), hf, TEXTS)
    assert_same_ids(Tokenizer.from_hf(str(tmp_path / "model")), hf, TEXTS)
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match=f"^{re.escape(str(tmp_path / 'empty'))} is a folder with no "
                                                f"tokenizer.json in it"):
        Tokenizer.from_hf(tmp_path / "empty")


@pytest.mark.parametrize("pattern", [r"\S+|\s+", LLAMA3_PATTERN, r"(?i:'s|'t)|\p{L}+|\p{N}|\s+|[^\s\p{L}\p{N}]+",
                                     r"\Aab|a|b|\s|[^ab\s]"])
def test_a_pattern_without_anchors_comes_back_from_hf_as_it_was(tmp_path, pattern):
    # from_hf gave "(?m:\S+|\s+)" for "\S+|\s+": the same pieces, but not the pattern, so continuing the
    # tokenizer on counts made with the pattern it was exported with was refused ("the counts were made with
    # the pattern '\\S+|\\s+', but the initial tokenizer's pattern is '(?m:\\S+|\\s+)'")
    from bpe_fast import count_pretokens, train_from_counts

    tok = Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"ab"}, [(b"a", b"b")], ["<|e|>"], pattern=pattern)
    tok.export_hf(tmp_path / "tokenizer.json")
    back = Tokenizer.from_hf(tmp_path / "tokenizer.json")
    assert back.pattern == pattern
    vocab, merges = train_from_counts(count_pretokens(iter(["abc abd abc"]), ["<|e|>"], pattern=pattern), 258,
                                      initial=back)
    assert (vocab, merges) == (tok.vocab, list(tok.merges))
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    assert_same_ids(back, hf, ANCHOR_TEXTS + TEXTS[:40])


@pytest.mark.parametrize("pattern", [r"^ab|ab$|a|b|\n|[^ab\n]", r"ab\Z|a|b|\n|[^ab\n]", r"(?-m:ab$)|a|b|\n|[^ab\n]"])
def test_a_pattern_with_anchors_comes_back_from_hf_reading_as_hf_does(tmp_path, pattern):
    # anchors are spelled for Oniguruma on the way out, and read as it reads them on the way back: not the same
    # string, the same ids as HF's, and a second round trip changes nothing
    tok = Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"ab"}, [(b"a", b"b")], pattern=pattern)
    tok.export_hf(tmp_path / "tokenizer.json")
    back = Tokenizer.from_hf(tmp_path / "tokenizer.json")
    back.export_hf(tmp_path / "again.json")
    assert Tokenizer.from_hf(tmp_path / "again.json").pattern == back.pattern
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    assert_same_ids(back, hf, ANCHOR_TEXTS + ["$ab^ab\n", "^ab$", "ab, ab  cd!"])
    assert [tok.encode(t) for t in ANCHOR_TEXTS] == [hf_ids(hf, t) for t in ANCHOR_TEXTS]


ANCHOR_TEXTS = ["hello\n", "hello\nworld\n", "hello\nworld", "ab\nab\nab", "ab\n", "xab\nab\n", "ab", "\n"]


def test_from_hf_reads_backslash_z_as_oniguruma_does(tmp_path):
    # \Z matches before a final newline too in Oniguruma; `regex`'s \Z only at the very end
    path = train_hf(tokenizers.Regex(r"\p{L}+\Z|\p{L}|\s|[^\p{L}\s]"), tmp_path, vocab_size=400)
    hf = tokenizers.Tokenizer.from_file(str(path))
    assert_same_ids(Tokenizer.from_hf(path), hf, ANCHOR_TEXTS + TEXTS[:40])


def test_from_hf_reads_caret_as_oniguruma_does(tmp_path):
    # ^ does not match at the end of a text after a final newline in Oniguruma; `regex`'s multi-line ^ does there:
    # "ab  \n" was "ab", "  \n" here (one token), "ab", " ", " ", "\n" in HF
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"  ", 257: b"  \n"}
    doc = hf_tokenizer_json(Tokenizer(vocab, [(b" ", b" "), (b"  ", b"\n")]))
    doc["pre_tokenizer"]["pretokenizers"][0].update(pattern={"Regex": r"\p{L}+|\s+^|\s"}, behavior="Isolated",
                                                     invert=False)
    path = write_doc(tmp_path, doc)
    hf = tokenizers.Tokenizer.from_file(str(path))
    assert hf_ids(hf, "ab  \n") == [97, 98, 32, 32, 10]
    texts = ANCHOR_TEXTS + ["ab  \n", "ab  \n\n", "a  \n  \n", "  \n", "\n\n\n", "ab  \ncd  \n"] + TEXTS[:40]
    assert_same_ids(Tokenizer.from_hf(path), hf, texts)


@pytest.mark.parametrize("pattern", [r"^ab|ab$|a|b|\n|[^ab\n]", r"ab\Z|a|b|\n|[^ab\n]", r"[$^]|ab|a|b|\n|[^ab\n$^]",
                                     r"\p{L}+", r"ab|\p{L}"])
def test_export_spells_anchors_as_oniguruma_reads_them(tmp_path, pattern):
    # HF reads ^ and $ at every line: a custom pattern's anchors are written as \A, (?=\n?\z) and \z; and its
    # Split is Removed and inverted, whose pieces are the matches alone (Isolated kept the text between them)
    tok = Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"ab"}, [(b"a", b"b")], pattern=pattern)
    tok.export_hf(tmp_path / "tokenizer.json")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    texts = ANCHOR_TEXTS + ["$ab^ab\n", "^ab$", "ab, ab  cd!", "x1 ab2"]
    for text in texts:
        assert tok.encode(text) == hf_ids(hf, text), text
    assert_same_ids(Tokenizer.from_hf(tmp_path / "tokenizer.json"), hf, texts)


def test_a_split_regex_holding_the_wrappers_own_text_is_read():
    import regex
    # pattern_from_hf cut its result at the first "|(?:(?!", which this regex holds
    assert regex.findall(pattern_from_hf(r"\p{L}+|(?:(?!x)\P{L})+"), "ab, x") == ["ab", ", ", "x"]


def test_round_trip_keeps_a_wrapped_pattern(tmp_path):
    path = train_hf(tokenizers.Regex(r"\p{L}+|\p{N}"), tmp_path, vocab_size=300)
    ours = Tokenizer.from_hf(path)
    ours.export_hf(tmp_path / "again.json")
    doc = json.loads((tmp_path / "again.json").read_text("utf-8"))
    assert doc["pre_tokenizer"]["pretokenizers"][0]["pattern"] == {"Regex": r"\p{L}+|\p{N}"}
    assert Tokenizer.from_hf(tmp_path / "again.json").pattern == ours.pattern
    assert_same_ids(ours, tokenizers.Tokenizer.from_file(str(tmp_path / "again.json")), TEXTS[:60])


def test_export_refuses_a_special_token_hf_would_renumber(tmp_path):
    # "\u0120x" reads as a byte-level vocab key (" x"): written there it would be another token, and HF gives an
    # added token not found in the vocab the next id after it
    vocab = {i: bytes([i]) for i in range(256)}
    tok = Tokenizer(vocab | {256: "\u0120x".encode(), 257: b"ab"}, [(b"a", b"b")], ["\u0120x"])
    with pytest.raises(ValueError, match=r"'\u0120x' has id 256, but HF would give it id 257"):
        tok.export_hf(tmp_path / "tokenizer.json")
    assert not (tmp_path / "tokenizer.json").exists()


@pytest.mark.parametrize("special, byte", [("\u0120", 32), ("\u00e9", 0xE9)])
def test_export_refusing_a_special_token_that_is_a_byte_keys_text_says_why(tmp_path, special, byte):
    # a special token whose text is the byte-level key of an ordinary token: HF gives it that token's id (checked
    # with HF below); the refusal said it "gets the next id after the vocab's size"
    vocab = {i: bytes([i]) for i in range(256)}
    tok = Tokenizer(vocab, [], ["<|a|>", special])
    with pytest.raises(ValueError, match=f"^special token {re.escape(repr(special))} has id 257, but HF would give "
                                         f"it id {byte}: its text is the byte-level spelling of token {byte} "):
        tok.export_hf(tmp_path / "tokenizer.json")
    assert not (tmp_path / "tokenizer.json").exists()
    hf = tokenizers.Tokenizer(tokenizers.models.BPE(vocab={token_to_str(bytes([b])): b for b in range(256)},
                                                    merges=[]))
    hf.add_special_tokens(["<|a|>", special])
    assert hf.token_to_id(special) == byte


def test_export_writes_a_special_token_outside_the_byte_mapping_as_its_text(tmp_path):
    # "<|a b|>" holds a space, which GPT-2's byte mapping writes "\u0120": under its own text in the vocab (as
    # DeepSeek's files hold theirs), HF finds it there and keeps its id; until then export refused it
    vocab = {i: bytes([i]) for i in range(256)}
    tok = Tokenizer(vocab | {256: b"<|a b|>", 257: b"ab"}, [(b"a", b"b")], ["<|a b|>"])
    path = tmp_path / "tokenizer.json"
    tok.export_hf(path)
    assert json.loads(path.read_text("utf-8"))["model"]["vocab"]["<|a b|>"] == 256
    hf = tokenizers.Tokenizer.from_file(str(path))
    assert hf.token_to_id("<|a b|>") == 256
    text = "ab <|a b|>xab<|a b|>"
    assert hf_ids(hf, text) == tok.encode(text) == Tokenizer.from_hf(path).encode(text)



@pytest.mark.parametrize("native", [True, False])
def test_a_trainers_special_token_with_latin_1_letters_is_read(tmp_path, native):
    # HF's BpeTrainer puts its special tokens in the model's vocab under their text: "<|début|>" read as a
    # byte-level key is b"<|d\xe9but|>", which no UTF-8 text holds, so HF gives that id to the added token only;
    # the file was refused ("bpe_fast gives an id one byte string")
    hf = tokenizers.Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<|début|>", "<|fin|>", "<¶>"], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    hf.train_from_iterator(["le début et la fin <|début|> d'un texte <|fin|> ¶ <¶>"] * 5, trainer)
    path = save_hf(hf, tmp_path / "tokenizer.json")
    assert json.loads(path.read_text("utf-8"))["model"]["vocab"]["<|début|>"] == 0     # (HF's file form)
    ours = Tokenizer.from_hf(path) if native else python_path(lambda: Tokenizer.from_hf(path))
    assert ours.special_tokens == {"<|début|>": 0, "<|fin|>": 1, "<¶>": 2}
    texts = ["<|début|>le début<|fin|>", "début <¶>¶<|d", "<|début|><|début|> fin", *TEXTS[:40]]
    for text in texts:
        assert ours.encode(text) == hf_ids(hf, text), text
    # (HF decodes id 0 to the key's bytes, b"<|d\xe9but|>", not UTF-8; bpe_fast to the special token's text)
    assert ours.decode([0, 1, 2]) == "<|début|><|fin|><¶>"


def test_export_writes_a_special_token_with_latin_1_letters_as_its_text(tmp_path):
    # "<|début|>" between the bytes and the merges: it was refused ("HF would give it id 257"); written under its
    # text, HF finds it in the vocab and keeps its id, and from_hf reads it back (a key no text holds)
    vocab = {i: bytes([i]) for i in range(256)}
    tok = Tokenizer(vocab | {256: "<|début|>".encode(), 257: b"<|fin|>", 258: b"ab"}, [(b"a", b"b")],
                    ["<|début|>", "<|fin|>"])
    assert tok.special_tokens == {"<|début|>": 256, "<|fin|>": 257}
    path = tmp_path / "tokenizer.json"
    tok.export_hf(path)
    assert json.loads(path.read_text("utf-8"))["model"]["vocab"]["<|début|>"] == tok.special_tokens["<|début|>"]
    hf = tokenizers.Tokenizer.from_file(str(path))
    back = Tokenizer.from_hf(path)
    assert back.special_tokens == tok.special_tokens
    for text in ["ab<|début|> début<|fin|>ab", "<|début|", *TEXTS[:40]]:
        assert hf_ids(hf, text) == tok.encode(text) == back.encode(text), text


def _bare_doc(vocab, added_tokens):
    """A tokenizer.json with a byte-level BPE model of `vocab` ({key: id}, no merges) and these added tokens."""
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added_tokens, "normalizer": None,
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                              "use_regex": True},
            "post_processor": None, "decoder": {"type": "ByteLevel", "add_prefix_space": False,
                                                "trim_offsets": False, "use_regex": True},
            "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                      "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                      "ignore_merges": False, "vocab": vocab, "merges": []}}


_GAPPED_VOCAB = {token_to_str(bytes([b])): b for b in range(256)} | {"<s>": 300}     # 257 keys, ids up to 300


def test_export_refuses_special_ids_hf_gives_otherwise_after_a_gap(tmp_path):
    # sparse ids (no 256..299): "<s>" (id 300) is found in the model's vocab, "<|a b|>" (id 301) is not. HF
    # tokenizers 0.22.2 and later give it the vocab's size, 257, whatever the ids found before it; the check
    # followed the earlier releases' rule (one more than the largest id so far: 301), so the file was written
    # and HF read "<|a b|>" as 257 where bpe_fast and its from_hf gave 301
    tok = Tokenizer({i: bytes([i]) for i in range(256)} | {300: b"<s>", 301: b"<|a b|>"}, [], ["<s>", "<|a b|>"])
    assert tok.special_tokens == {"<s>": 300, "<|a b|>": 301}
    hf = tokenizers.Tokenizer.from_str(json.dumps(_bare_doc(_GAPPED_VOCAB, [added("<s>", 300), added("<|a b|>", 301)])))
    assert hf.token_to_id("<|a b|>") == 257          # HF's own reading of the file export_hf wrote
    # now "<|a b|>" goes into the vocab under its text, where HF finds it, with its id
    tok.export_hf(tmp_path / "tokenizer.json")
    written = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    assert written.token_to_id("<|a b|>") == 301 and written.token_to_id("<s>") == 300
    # a special token whose text reads as another byte-level key cannot go there: refused
    tok = Tokenizer({i: bytes([i]) for i in range(256)} | {300: b"<s>", 301: "\u0120x".encode()}, [], ["<s>", "\u0120x"])
    with pytest.raises(ValueError, match=r"'\u0120x' has id 301, but HF would give it id 257 \(tokenizers 0.22.2"):
        tok.export_hf(tmp_path / "refused.json")
    assert not (tmp_path / "refused.json").exists()


@pytest.mark.parametrize("file_id", [301, 257])
def test_from_hf_refuses_added_ids_hf_releases_give_differently(tmp_path, file_id):
    # that file (301: what tokenizers before 0.22.2 give) was read with HF's ids taken to be the file's; 257 is
    # what later releases give: either way one of them reads the file otherwise, so it is refused
    path = write_doc(tmp_path, _bare_doc(_GAPPED_VOCAB, [added("<s>", 300), added("<|a b|>", file_id)]))
    assert tokenizers.Tokenizer.from_file(str(path)).token_to_id("<|a b|>") == 257
    other = 301 if file_id == 257 else 257
    with pytest.raises(FormatError, match=rf"'<\|a b\|>' has id {file_id}, but HF tokenizers gives it id {other}"):
        Tokenizer.from_hf(path)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=8, unique=True),
       st.lists(st.sampled_from(["a", "b", "c", "<s>", "<t>", "<u>", "<v>"]), max_size=6))
def test_added_token_ids_are_hfs(ids, contents):
    # the ids bpe_fast.hf.hf_added_token_ids says HF gives added tokens, against the installed HF over vocabs
    # with gaps in their ids (the keys a, b, c, <s> in that order get the first ids drawn)
    from bpe_fast.hf import hf_added_token_ids

    vocab = dict(zip(["a", "b", "c", "<s>", "<t>"], ids))
    hf = tokenizers.Tokenizer.from_str(json.dumps(_bare_doc(vocab, [added(c, 0) for c in contents])))
    assert hf_added_token_ids(vocab, contents) == [hf.token_to_id(c) for c in contents]


# ------------------------------------------------------------------------------------- added tokens, post-processor

def small_doc(specials=(EOT,)):
    """A tokenizer.json document (GPT-2's pattern) with a, b, c, d, " a" merged in a few steps."""
    vocab = {i: bytes([i]) for i in range(256)}
    # " ab" is " " + "ab": with (" a", "b") HF would leave " ", "ab" apart where tiktoken's rule joins them
    merges = [(b"a", b"b"), (b" ", b"a"), (b"ab", b"c"), (b" ", b"ab")]
    for a, b in merges:
        vocab[len(vocab)] = a + b
    return hf_tokenizer_json(Tokenizer(vocab, merges, list(specials)))


def write_doc(tmp_path, doc, indent=None, name="tokenizer.json"):
    path = tmp_path / name
    path.write_text(json.dumps(doc, indent=indent, ensure_ascii=False), "utf-8")
    return path


def added(content, i, special=True, **flags):
    return {"id": i, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": False, "special": special} | flags


def test_non_special_added_tokens_are_matched_in_text(tmp_path):
    doc = small_doc()
    doc["added_tokens"] += [added("hello", 261, special=False), added("ab", 256, special=False)]
    path = write_doc(tmp_path, doc)
    hf = tokenizers.Tokenizer.from_file(str(path))
    texts = ["hello", "ahellob", "abc abc hello<|endoftext|>helloab", " ab"] + TEXTS[:30]
    assert hf_ids(hf, "abc")[0] == 256        # HF takes "ab" out of "abc" before merging
    ours = Tokenizer.from_hf(path)
    assert ours.special_tokens == {"ab": 256, EOT: 260, "hello": 261}
    assert_same_ids(ours, hf, texts)


def test_post_processor_is_ignored(tmp_path):
    doc = small_doc(["<s>", "</s>"])
    doc["post_processor"] = {"type": "TemplateProcessing",
                             "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                        {"Sequence": {"id": "A", "type_id": 0}}],
                             "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
                             "special_tokens": {"<s>": {"id": "<s>", "ids": [260], "tokens": ["<s>"]}}}
    path = write_doc(tmp_path, doc)
    hf = tokenizers.Tokenizer.from_file(str(path))
    assert hf.encode("abc").ids[0] == 260           # HF's default adds <s>
    assert_same_ids(Tokenizer.from_hf(path), hf, ["abc", "x</s>abc<s>"] + TEXTS[:30])


def test_added_token_id_hf_would_not_give(tmp_path):
    doc = small_doc()
    doc["added_tokens"].append(added("<|x|>", 1000))
    path = write_doc(tmp_path, doc)
    assert tokenizers.Tokenizer.from_file(str(path)).token_to_id("<|x|>") == 261     # not the file's 1000
    with pytest.raises(FormatError, match=r"'<\|x\|>' has id 1000, but HF tokenizers gives it id 261"):
        Tokenizer.from_hf(path)


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize("special", [True, False])
def test_added_token_with_the_bytes_of_a_vocab_token(tmp_path, native, special):
    # GPT-NeoX's and Pythia's files: "  " is an added token (id 50276) and the model's "ĠĠ" (merge 0) too. HF finds
    # the added token in the text first, so the model's id is never encoded, and decodes to the same bytes. It was
    # refused: "bpe_fast gives a byte string one id"
    doc = small_doc()
    doc["added_tokens"].append(added(" a", 261, special=special))    # HF finds "Ġa" (id 257) only as " a" bytes
    path = write_doc(tmp_path, doc)
    hf = tokenizers.Tokenizer.from_file(str(path))
    assert hf.token_to_id(" a") == 261
    ours = Tokenizer.from_hf(path) if native else python_path(lambda: Tokenizer.from_hf(path))
    assert ours.special_tokens[" a"] == 261 and ours.vocab[257] == ours.vocab[261] == b" a"
    assert_same_ids(ours, hf, [" a", "b a abc a", " ab", *TEXTS[:60]])
    assert 261 in ours.encode("x a")
    assert ours.decode([257, 261]) == hf.decode([257, 261], skip_special_tokens=False) == " a a"
    assert ours.encode_ordinary(" a") == [257]
    with pytest.raises(ValueError, match=r"special token ' a' \(id 261\) has the bytes of token 257 .*export_hf"):
        ours.save(tmp_path / "saved")
    assert not (tmp_path / "saved").exists()
    ours.export_hf(tmp_path / "again.json")                 # written as the file was: HF reads the same ids
    again = json.loads((tmp_path / "again.json").read_text("utf-8"))
    assert again["model"]["vocab"]["Ġa"] == 257 and " a" not in again["model"]["vocab"]
    assert_same_ids(Tokenizer.from_hf(tmp_path / "again.json"), hf, TEXTS[:60])
    assert_same_ids(ours, tokenizers.Tokenizer.from_file(str(tmp_path / "again.json")), TEXTS[:60])


@pytest.mark.parametrize("native", [True, False])
def test_an_added_token_of_one_byte_a_vocab_token_has_leaves_the_byte_its_id(tmp_path, native):
    # added "\n" (id 261) where the model has "Ċ" (id 10): with the special token not matched (encode_ordinary,
    # HF's encode_special_tokens) the byte was given the added token's id 261, not the model's 10 (helper-108)
    doc = small_doc()
    doc["added_tokens"].append(added("\n", 261))
    path = write_doc(tmp_path, doc)
    hf = tokenizers.Tokenizer.from_file(str(path))
    ours = Tokenizer.from_hf(path) if native else python_path(lambda: Tokenizer.from_hf(path))
    assert_same_ids(ours, hf, ["a\nb", "\n\n a", *TEXTS[:40]])
    hf.encode_special_tokens = True
    for text in ["a\nb", "x\n\n a"]:
        assert ours.encode_ordinary(text) == ours.encode(text, allowed_special=set()) == hf_ids(hf, text)
        assert 10 in ours.encode_ordinary(text)


def test_added_token_spelled_as_a_vocab_key_is_refused_not_a_crash(tmp_path):
    doc = small_doc()
    doc["added_tokens"].append(added("Ġa", 257))      # the vocab key of " a" (id 257), as the added token's text
    path = write_doc(tmp_path, doc)
    assert tokenizers.Tokenizer.from_file(str(path)).token_to_id("Ġa") == 257
    with pytest.raises(FormatError, match=r"'Ġa' \(bytes b'\\xc4\\xa0a'\) has id 257, the id of vocab token 'Ġa' "
                                          r"\(bytes b' a'\)"):
        Tokenizer.from_hf(path)


def _set_path(doc, where, value):
    *parents, last = where
    for key in parents:
        doc = doc[key]
    doc[last] = value


@pytest.mark.parametrize("where, value, message", [
    # (structural defects no test reached, found by coverage) each a FormatError naming the file and what it is
    ((), None, r'not an HF tokenizer\.json: expected a JSON object with a "model" object'),
    (("model",), [1], r'not an HF tokenizer\.json: expected a JSON object with a "model" object'),
    (("model", "vocab"), [["a", 0]], r'model "vocab" must be a JSON object \{token: id\}'),
    (("model", "merges"), {"a b": 0}, r'model "merges" must be a list'),
    (("added_tokens",), {"<|endoftext|>": 260}, r'"added_tokens" must be a list'),
    (("added_tokens", 0, "content"), "", r'added token .* needs a non-empty "content" and an integer "id"'),
    (("added_tokens", 0, "id"), "260", r'added token .* needs a non-empty "content" and an integer "id"'),
    # an id HF refuses ("expected u32"): it was said to be "id 1099511627776, but HF tokenizers gives it id 256"
    (("added_tokens", 0, "id"), 1 << 40, r"added token '<\|endoftext\|>' has id 1099511627776: HF tokenizers "
                                          r"refuses it \(an id is a 32-bit unsigned integer\)"),
    (("added_tokens", 0, "id"), -3, r"added token '<\|endoftext\|>' has id -3: HF tokenizers refuses it"),
])
def test_a_tokenizer_json_of_the_wrong_shape_is_named(tmp_path, where, value, message):
    doc = small_doc()
    if where:
        _set_path(doc, where, value)
    else:
        doc = value
    path = write_doc(tmp_path, doc)
    with pytest.raises(FormatError, match=re.escape(str(path)) + r"(:\d+)?: " + message):
        Tokenizer.from_hf(path)


def test_many_added_tokens_are_looked_up_in_the_vocab_together(tmp_path, monkeypatch):
    # each added token's text was looked up in the model's vocab by a call of its own, three times over (the ids
    # HF gives, by two releases' rules): 32,000 added tokens took 1.1 s to read (helper-176). The ids are
    # still HF's
    import bpe_fast.hf as hf

    doc = small_doc()
    doc["added_tokens"] += [added(f"<t{i}>", 261 + i) for i in range(300)] + [added("ab", 256)]
    path = write_doc(tmp_path, doc)
    calls = []
    real = hf._find_all
    monkeypatch.setattr(hf, "_find_all", lambda index, tokens: calls.append(len(tokens)) or real(index, tokens))
    tok = Tokenizer.from_hf(path)
    assert len(calls) <= 4, calls
    reference = tokenizers.Tokenizer.from_file(str(path))
    assert all(tok.vocab[reference.token_to_id(t)] == t.encode() for t in ["<t0>", "<t299>", "<|endoftext|>"])
    assert_same_ids(tok, reference, ["<t5>ab<t299> <t3>", "ab<|endoftext|>"])


def test_added_tokens_matched_in_two_passes(tmp_path):
    # HF finds normalized=false tokens first, then normalized=true ones in what is left
    doc = small_doc()
    doc["added_tokens"] += [added("<x", 261, normalized=True), added("x>", 262)]
    path = write_doc(tmp_path, doc)
    with pytest.raises(FormatError, match="can overlap"):
        Tokenizer.from_hf(path)
    doc["added_tokens"][-1]["content"] = "<y>"          # no overlap: one pass finds the same
    path = write_doc(tmp_path, doc)
    assert_same_ids(Tokenizer.from_hf(path), tokenizers.Tokenizer.from_file(str(path)),
                    ["<x<y>x>", "<<xy>", "<|endoftext|><x"])


@pytest.mark.parametrize("entries, refused", [
    ([("ab", True), ("ab", False), ("a", False)], False),     # ab raw at last: one kind, as "a"
    ([("ab", False), ("ab", True), ("a", False)], True),      # ab normalized at last: "a" (raw) is inside it
    ([("<x>", False), ("<x>", True), ("<", False)], True),
    ([("<x>", True), ("<x>", False), ("<", False)], False),
])
def test_an_added_token_listed_twice_has_its_last_entrys_kind(tmp_path, entries, refused):
    # HF keeps the last entry of an added token listed twice: listed raw, then normalized, it is found in the
    # second pass, after a raw token inside it ("xab" is x, a, b in HF). The check took the first entry's kind
    # and gave ab (helper-98)
    doc = small_doc(())
    ids = {token_to_str(t): i for i, t in enumerate(bytes([b]) for b in range(256))} | {"ab": 256, "<x>": 260}
    doc["added_tokens"] = [added(content, ids[content], normalized=normalized) for content, normalized in entries]
    path = write_doc(tmp_path, doc)
    hf = tokenizers.Tokenizer.from_file(str(path))
    if refused:
        with pytest.raises(FormatError, match="can overlap"):
            Tokenizer.from_hf(path)
    else:
        assert_same_ids(Tokenizer.from_hf(path), hf, ["xab abc", "a<x>b", "<x><<x"])


# ------------------------------------------------------------------------------------- merge ranks

def abcd_doc(merges):
    doc = small_doc(())
    vocab = {token_to_str(bytes([b])): b for b in range(256)}
    for token in ("bc", "ab", "abc", "bcd"):
        vocab[token] = len(vocab)
    doc["model"]["vocab"] = vocab
    doc["model"]["merges"] = merges
    return doc


def test_a_token_made_by_merges_far_apart_is_refused(tmp_path):
    # "a bc" makes "abc" again, after "bc d": HF ranks it 4th, tiktoken's rule by "ab c" (2nd)
    path = write_doc(tmp_path, abcd_doc(["b c", "a b", "ab c", "bc d", "a bc"]), indent=1)
    hf = tokenizers.Tokenizer.from_file(str(path))
    assert hf_ids(hf, "abcd") == [ord("a"), 259]    # [a, bcd]; tiktoken's rule would give [abc, d]
    with pytest.raises(FormatError, match=r"merge 4 \(\"a bc\"\) makes token 'abc', which merge 2 made") as info:
        Tokenizer.from_hf(path)
    assert info.value.line is not None


def test_a_token_made_by_adjacent_merges_is_accepted(tmp_path):
    # as in files converted from tiktoken ranks (Llama 3): every split of a token, one after another
    path = write_doc(tmp_path, abcd_doc(["b c", "a b", "ab c", "a bc", "bc d"]))
    rng = random.Random(2)
    texts = ["".join(rng.choice("abcd ") for _ in range(rng.randint(1, 12))) for _ in range(300)]
    assert_same_ids(Tokenizer.from_hf(path), tokenizers.Tokenizer.from_file(str(path)), texts)


def test_a_repeated_merge_is_refused(tmp_path):
    path = write_doc(tmp_path, abcd_doc(["b c", "a b", "b c"]))
    with pytest.raises(FormatError, match="merge 2 .* repeats merge 0"):
        Tokenizer.from_hf(path)


# ------------------------------------------------------------------------------------- what is refused

def _set(path, value):
    """A change to the document: set the value at `path` (keys and indexes)."""
    def change(doc):
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return change


def _nested(change_after):
    """A change to the document: its pre_tokenizer put in a Sequence of its own, then `change_after`."""
    def change(doc):
        doc["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [doc["pre_tokenizer"]]}
        change_after(doc)
    return change


def _drop(path):
    """A change to the document: delete the field at `path`."""
    def change(doc):
        target = doc
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]
    return change


BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
REFUSED = {
    "WordPiece": (_set(["model", "type"], "WordPiece"), r'model type "WordPiece" is not supported'),
    "Unigram": (_set(["model", "type"], "Unigram"), r'model type "Unigram" is not supported'),
    "WordLevel": (_set(["model", "type"], "WordLevel"), r'model type "WordLevel" is not supported'),
    "normalizer": (_set(["normalizer"], {"type": "NFKC"}), r'normalizer "NFKC" is not supported: bpe_fast normalizes '
                                                             r'text to NFC only'),
    "two normalizers": (_set(["normalizer"], {"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "NFC"}]}),
                        r'normalizer "Sequence" is not supported'),
    "byte_fallback": (_set(["model", "byte_fallback"], True), "byte_fallback: true is not supported"),
    "dropout": (_set(["model", "dropout"], 0.1), r"dropout \(0.1\) is not supported"),
    "continuing_subword_prefix": (_set(["model", "continuing_subword_prefix"], "##"),
                                  r"continuing_subword_prefix \('##'\) is not supported"),
    "end_of_word_suffix": (_set(["model", "end_of_word_suffix"], "</w>"),
                           r"end_of_word_suffix \('</w>'\) is not supported"),
    "whitespace": (_set(["pre_tokenizer"], {"type": "Whitespace"}), r'pre_tokenizer "Whitespace" is not supported'),
    "no pre_tokenizer": (_set(["pre_tokenizer"], None), "pre_tokenizer null is not supported"),
    # (Digits then ByteLevel, StarCoder's, is read: tests/test_hf_digits.py); Falcon's Punctuation first is not
    "punctuation": (_set(["pre_tokenizer"], {"type": "Sequence", "pretokenizers": [
        {"type": "Punctuation", "behavior": "Contiguous"}, BYTE_LEVEL]}),
        r'pre_tokenizer "Punctuation" then "ByteLevel" is not supported'),
    "add_prefix_space": (_set(["pre_tokenizer"], BYTE_LEVEL | {"add_prefix_space": True}),
                         "add_prefix_space must be false"),
    "ByteLevel without regex": (_set(["pre_tokenizer"], BYTE_LEVEL | {"use_regex": False}),
                                "without use_regex and without a Split"),
    "split removed": (_set(["pre_tokenizer", "pretokenizers", 0, "behavior"], "Removed"),
                      "Split with behavior 'Removed'.* is not supported"),
    "split inverted": (_set(["pre_tokenizer", "pretokenizers", 0, "invert"], True), "invert True"),
    "split then regex": (_set(["pre_tokenizer", "pretokenizers", 1, "use_regex"], True), "must have use_regex false"),
    "decoder": (_set(["decoder"], {"type": "WordPiece", "prefix": "##", "cleanup": True}),
                r'decoder "WordPiece" is not supported'),
    # a Sequence of one ByteLevel is read (below); of two, each step decoding the bytes again, it is not
    "decoder sequence of two": (_set(["decoder"], {"type": "Sequence", "decoders": [
        BYTE_LEVEL, BYTE_LEVEL]}), r'decoder "Sequence" is not supported \(only ByteLevel, a Sequence of it alone'),
    "post_processor": (_set(["post_processor"], {"type": "Mystery"}), r'post_processor "Mystery" is not supported'),
    # a Sequence whose processors were not an array was a bare TypeError ('int' object is not iterable)
    "post_processor processors": (_set(["post_processor"], {"type": "Sequence", "processors": 5}),
                                  r'post_processor Sequence\'s "processors" must be an array, got 5'),
    # a "type" that is not a string was a bare TypeError (unhashable list) (helper-103)
    "post_processor type list": (_set(["post_processor"], {"type": ["ByteLevel"]}),
                                 r'post_processor \["ByteLevel"\] is not supported'),
    "post_processor string": (_set(["post_processor"], "ByteLevel"),
                              r'post_processor "ByteLevel" \(a string, not an object\) is not supported'),
    # a pre_tokenizer that is not an object was reported as "pre_tokenizer null"
    "pre_tokenizer string": (_set(["pre_tokenizer"], "ByteLevel"),
                             r'pre_tokenizer "ByteLevel" \(a string, not an object\) is not supported'),
    "pre_tokenizer step string": (_set(["pre_tokenizer"], {"type": "Sequence", "pretokenizers": ["Split", BYTE_LEVEL]}),
                                  r'pre_tokenizer Sequence holds "Split" \(a string, not an object\): each step must '
                                  r'be an object'),
    "pre_tokenizer without type": (_set(["pre_tokenizer"], {"use_regex": True}),
                                   r'pre_tokenizer an object without "type" is not supported'),
    "rstrip": (_set(["added_tokens", 0, "rstrip"], True), r"'<\|endoftext\|>' has rstrip: true"),
    "single_word": (_set(["added_tokens", 0, "single_word"], True), "has single_word: true"),
    "bad merge": (_set(["model", "merges", 0], "a b c"), r'merge 0 \("a b c"\) is not two tokens'),
    "unknown merge token": (_set(["model", "merges", 0], "a z"),
                            r"merge 0 \(\"a z\"\): token 'az' is not in the vocab"),
    "not byte-level": (_set(["model", "vocab", "a b"], 300), r"vocab token 'a b': character ' ' \(U\+0020\)"),
    "bad id": (_set(["model", "vocab", "ab"], -1), "'ab' has id -1, not an int"),
    "id twice": (_set(["model", "vocab", "ab"], 97), "vocab id 97 is given to two tokens"),
}


# what HF's own reader refuses (its serde types and fields), which bpe_fast read as something else or ignored:
# "no" was a true ignore_merges, false a dropout of 0, a null normalizer step none
HF_REFUSES = {
    "unknown field": (_set(["extra"], 1), r'unknown field "extra" \(HF tokenizers refuses the file too'),
    "version": (_set(["version"], "2.0"), r'"version" "2.0" is unknown'),
    "version number": (_set(["version"], 1.0), r'"version" 1.0 is unknown'),
    "truncation number": (_set(["truncation"], 512), r'"truncation" must be null or an object, not 512'),
    "truncation without max_length": (_set(["truncation"], {"strategy": "LongestFirst", "stride": 0}),
                                      r'"truncation" needs "max_length" of the type HF tokenizers requires \(int\)'),
    "padding without pad_token": (_set(["padding"], {"strategy": "BatchLongest", "direction": "Right", "pad_id": 0,
                                                     "pad_type_id": 0}), r'"padding" needs "pad_token"'),
    "ignore_merges string": (_set(["model", "ignore_merges"], "no"),
                             r'model "ignore_merges" must be true or false or null, not "no"'),
    "byte_fallback number": (_set(["model", "byte_fallback"], 0), r'model "byte_fallback" must be true or false'),
    "dropout false": (_set(["model", "dropout"], False), r'model "dropout" must be a number or null, not false'),
    "unk_token number": (_set(["model", "unk_token"], 5), r'model "unk_token" must be a string or null, not 5'),
    "added token normalized null": (_set(["added_tokens", 0, "normalized"], None),
                                    r'added token \'<\|endoftext\|>\' needs "normalized": true or false'),
    "added token special string": (_set(["added_tokens", 0, "special"], "yes"), r'needs "special": true or false'),
    "mixed merges": (_set(["model", "merges", 1], ["Ġ", "a"]),
                     r'merge 1 \(\["Ġ", "a"\]\) is not written as merge 0 \("a b"\)'),
    "normalizer step null": (_set(["normalizer"], {"type": "Sequence", "normalizers": [None]}),
                             r"normalizer Sequence holds null: each step must be an object"),
    "pre_tokenizer step null": (_set(["pre_tokenizer"], {"type": "Sequence", "pretokenizers": [None, BYTE_LEVEL]}),
                                r"pre_tokenizer Sequence holds null"),
    "decoder flag string": (_set(["decoder", "trim_offsets"], "x"),
                            r'decoder ByteLevel "trim_offsets" must be true or false, not "x"'),
    "pre_tokenizer flag null": (_set(["pre_tokenizer", "pretokenizers", 1, "trim_offsets"], None),
                                r'pre_tokenizer ByteLevel "trim_offsets" must be true or false, not null'),
    # (read with their defaults before: helper-104's fuzz against HF)
    "decoder without add_prefix_space": (_drop(["decoder", "add_prefix_space"]),
                                         r'decoder ByteLevel has no "add_prefix_space" \(HF tokenizers refuses'),
    "pre_tokenizer without trim_offsets": (_drop(["pre_tokenizer", "pretokenizers", 1, "trim_offsets"]),
                                           r'pre_tokenizer ByteLevel has no "trim_offsets"'),
    "split without invert": (_drop(["pre_tokenizer", "pretokenizers", 0, "invert"]),
                             r'pre_tokenizer Split has no "invert"'),
    # the same in a Sequence inside the Sequence (read flat, as HF applies it): accepted before (review helper-141)
    "nested without trim_offsets": (_nested(_drop(["pre_tokenizer", "pretokenizers", 0, "pretokenizers", 1,
                                                   "trim_offsets"])), r'pre_tokenizer ByteLevel has no "trim_offsets"'),
    "nested flag string": (_nested(_set(["pre_tokenizer", "pretokenizers", 0, "pretokenizers", 1, "trim_offsets"],
                                        "no")), r'pre_tokenizer ByteLevel "trim_offsets" must be true or false'),
    "nested split without invert": (_nested(_drop(["pre_tokenizer", "pretokenizers", 0, "pretokenizers", 0,
                                                   "invert"])), r'pre_tokenizer Split has no "invert"'),
    # NaN is not JSON (Python's json takes it; HF's reader does not): it was "BPE dropout (nan) is not supported"
    "dropout NaN": (_set(["model", "dropout"], float("nan")), r":\d+: bad JSON: NaN is not a JSON value"),
}
# HF's ByteLevel normalizer has no flags: it loads in HF, and is refused for what it is (not for a flag)
REFUSED["byte-level normalizer"] = (_set(["normalizer"], {"type": "ByteLevel"}), r'normalizer "ByteLevel" is not supported')
REFUSED |= HF_REFUSES


@pytest.mark.parametrize("name", list(HF_REFUSES))
def test_hf_refuses_them_too(tmp_path, name):
    doc = small_doc()
    tokenizers.Tokenizer.from_file(str(write_doc(tmp_path, doc)))     # the unchanged file loads in HF
    HF_REFUSES[name][0](doc)
    with pytest.raises(Exception):      # noqa: B017 -- HF's errors are its own (a bare Exception from Rust)
        tokenizers.Tokenizer.from_file(str(write_doc(tmp_path, doc)))


def test_an_nfc_normalizer_with_a_field_hf_ignores_is_read(tmp_path):
    # {"type": "NFC"} with another field was refused as "not supported"; HF reads it as NFC
    doc = small_doc()
    doc["normalizer"] = {"type": "NFC", "note": 1}
    path = write_doc(tmp_path, doc)
    text = "cafe\u0301 abc<|endoftext|>a\u030a"
    assert Tokenizer.from_hf(path).encode(text) == tokenizers.Tokenizer.from_file(str(path)).encode(text).ids


def test_a_decoder_sequence_of_one_byte_level_is_read_as_byte_level(tmp_path):
    # {"type": "Sequence", "decoders": [ByteLevel]} decodes as ByteLevel in HF; it was refused
    doc = small_doc()
    doc["decoder"] = {"type": "Sequence", "decoders": [BYTE_LEVEL]}
    path = write_doc(tmp_path, doc)
    hf = tokenizers.Tokenizer.from_file(str(path))
    tok = Tokenizer.from_hf(path)
    for text in ("abc<|endoftext|> d\u00e9j\u00e0 vu \U0001f600", " a  b\n\nc"):
        ids = tok.encode(text)
        assert ids == hf.encode(text).ids
        assert tok.decode(ids) == hf.decode(ids, skip_special_tokens=False) == text


@pytest.mark.parametrize("name", list(REFUSED))
def test_refused(tmp_path, name):
    change, message = REFUSED[name]
    doc = small_doc()
    if name.startswith("split"):
        doc["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": GPT4_PATTERN_HF}, "behavior": "Isolated", "invert": False},
            BYTE_LEVEL | {"use_regex": False}]}
    else:
        assert Tokenizer.from_hf(write_doc(tmp_path, doc)).encode("abc")   # the unchanged file loads
    change(doc)
    path = write_doc(tmp_path, doc, indent=2)
    with pytest.raises(FormatError, match=message) as info:
        Tokenizer.from_hf(path)
    assert str(info.value).startswith(str(path))


def test_ignore_merges_when_it_changes_nothing(tmp_path):
    # as in Llama 3's files: every vocab token merges back to itself, so looking pre-tokens up whole changes nothing
    path = train_hf(tokenizers.Regex(LLAMA3_PATTERN), tmp_path, vocab_size=600)
    doc = json.loads(path.read_text("utf-8"))
    doc["model"]["ignore_merges"] = True
    path = write_doc(tmp_path, doc)
    assert_same_ids(Tokenizer.from_hf(path), tokenizers.Tokenizer.from_file(str(path)))


@pytest.mark.parametrize("vocab, merges, token", [
    ({"abcab": 300}, None, "abcab"),                    # made by no merge
    ({"bc": 300, "ab": 301, "cd": 302, "abcd": 303}, ["b c", "a b", "c d", "ab cd"], "abcd"),   # not merged back
])
def test_ignore_merges_that_changes_ids(tmp_path, vocab, merges, token):
    doc = small_doc()
    if merges:      # only the single bytes, the special token and these
        doc["model"]["vocab"] = {k: i for k, i in doc["model"]["vocab"].items() if i < 256 or k == EOT}
        doc["model"]["merges"] = merges
    doc["model"]["vocab"] |= vocab
    plain = write_doc(tmp_path, doc, name="plain.json")
    hf_plain = tokenizers.Tokenizer.from_file(str(plain))
    doc["model"]["ignore_merges"] = True
    path = write_doc(tmp_path, doc)
    hf_ignoring = tokenizers.Tokenizer.from_file(str(path))
    assert hf_ids(hf_ignoring, token) == [vocab[token]] != hf_ids(hf_plain, token)
    if merges:      # a token merging does not make back is one tiktoken's rule cannot make: refused on its own
        with pytest.raises(FormatError, match=f"cannot make b'{token}'.*cannot be checked"):
            Tokenizer.from_hf(plain)
        # with ignore_merges, as its merges are every way of writing a token as two, in the order of their ids,
        # the file is tiktoken's ranks (Llama 3's are so): read as from_tiktoken reads them, HF's ids
        tok = Tokenizer.from_hf(path)
        assert tok.by_ranks_only and tok.encode(token) == [vocab[token]]
        assert_same_ids(tok, hf_ignoring, ["abcd", "xabcd", "abcdabcd", "ab cd abc bcd", "cdab"])
        return
    assert Tokenizer.from_hf(plain).encode(token) == hf_ids(hf_plain, token)
    with pytest.raises(FormatError, match=f"ignore_merges: true is not supported here: .*'{token}'"):
        Tokenizer.from_hf(path)


def test_missing_byte_is_refused(tmp_path):
    doc = small_doc()
    del doc["model"]["vocab"][token_to_str(b"\x00")]
    with pytest.raises(FormatError, match=r"no token for 1 of the 256 bytes \(0x00\)"):
        Tokenizer.from_hf(write_doc(tmp_path, doc))


def test_errors_name_the_line(tmp_path):
    doc = small_doc()
    doc["model"]["vocab"]["x y"] = 300
    path = write_doc(tmp_path, doc, indent=1)
    line = next(k for k, text in enumerate(path.read_text("utf-8").split("\n"), 1) if '"x y"' in text)
    with pytest.raises(FormatError) as info:
        Tokenizer.from_hf(path)
    assert info.value.line == line and str(info.value).startswith(f"{path}:{line}: ")
    path.write_text('{"model":\n {"type": "BPE",\n "vocab": }}', "utf-8")
    with pytest.raises(FormatError, match=rf"{path}:3: bad JSON"):
        Tokenizer.from_hf(path)


def test_sparse_ids_are_refused_naming_the_file_and_line(tmp_path):
    # the message named no file: the ids were checked only as the tokenizer's
    doc = small_doc()
    doc["model"]["vocab"]["ab"] = 2_000_000
    path = write_doc(tmp_path, doc, indent=1)
    line = next(k for k, text in enumerate(path.read_text("utf-8").split("\n"), 1) if '"ab": 2000000' in text)
    with pytest.raises(FormatError, match=rf"^{path}:{line}: vocab ids are too sparse: largest id 2000000 for "):
        Tokenizer.from_hf(path)


@pytest.mark.parametrize("where", ["top-level", "in-a-component"])
def test_json_nested_too_deeply_names_the_file(tmp_path, where):
    # json.loads raises RecursionError past its depth, which left from_hf bare, naming no file
    path = write_doc(tmp_path, small_doc(), indent=1)
    text = path.read_text("utf-8")
    deep = "[" * 100_000
    path.write_text(deep if where == "top-level" else text.replace('"normalizer": null', '"normalizer": ' + deep),
                    "utf-8")
    with pytest.raises(FormatError, match=rf"^{path}: bad JSON: arrays or objects nested too deeply$"):
        Tokenizer.from_hf(path)


def test_load_of_a_file_says_what_it_expects(tmp_path):
    path = write_doc(tmp_path, small_doc())
    with pytest.raises(NotADirectoryError, match="vocab.json and merges.txt.*Tokenizer.from_hf"):
        Tokenizer.load(path)
    with pytest.raises(FileNotFoundError, match="has no vocab.json.*Tokenizer.from_hf"):
        Tokenizer.load(tmp_path)


# ------------------------------------------------------------------------------------- transformers and the CLI

def _fail_writing_the_last_hf_file(monkeypatch):
    """export_hf_dir's third file (special_tokens_map.json) fails to be written: a full disk."""
    from bpe_fast import export
    real = export.write_text_atomic

    def fail_on_the_last(path, *args):
        if os.path.basename(path) == "special_tokens_map.json":
            raise OSError(28, "No space left on device")
        return real(path, *args)
    monkeypatch.setattr(export, "write_text_atomic", fail_on_the_last)


def test_export_hf_dir_that_fails_midway_leaves_the_folder_as_it_was(tmp_path, ours_trained, monkeypatch):
    vocab, merges = ours_trained
    Tokenizer(vocab, merges[:10], [EOT]).export_hf_dir(tmp_path)
    before = {name: (tmp_path / name).read_bytes() for name in os.listdir(tmp_path)}
    _fail_writing_the_last_hf_file(monkeypatch)
    with pytest.raises(OSError):
        Tokenizer(vocab, merges, [EOT, "<|pad|>"]).export_hf_dir(tmp_path, pad_token="<|pad|>")
    assert {name: (tmp_path / name).read_bytes() for name in os.listdir(tmp_path)} == before


def test_export_hf_dir_that_fails_midway_leaves_no_new_folder(tmp_path, ours_trained, monkeypatch):
    """The folder export_hf_dir creates is removed again when a write fails (it was left behind, empty)."""
    vocab, merges = ours_trained
    _fail_writing_the_last_hf_file(monkeypatch)
    with pytest.raises(OSError):
        Tokenizer(vocab, merges, [EOT]).export_hf_dir(tmp_path / "new" / "hf")
    assert os.listdir(tmp_path) == []


def test_export_hf_dir_loads_in_transformers(tmp_path, ours_trained):
    vocab, merges = ours_trained
    tok = Tokenizer(vocab, merges, [EOT, "<|pad|>", "<|a b|>"], pattern="gpt4")
    paths = tok.export_hf_dir(tmp_path / "out", eos_token=EOT, pad_token="<|pad|>")
    assert [p.rsplit("/", 1)[-1] for p in paths] == ["tokenizer.json", "tokenizer_config.json",
                                                     "special_tokens_map.json"]
    config = json.loads((tmp_path / "out" / "tokenizer_config.json").read_text("utf-8"))
    assert config["tokenizer_class"] == "PreTrainedTokenizerFast" and config["eos_token"] == EOT
    assert config["added_tokens_decoder"][str(tok.special_tokens["<|a b|>"])]["content"] == "<|a b|>"
    with pytest.raises(ValueError, match="bos_token '<s>' is not one of the special tokens"):
        tok.export_hf_dir(tmp_path / "bad", bos_token="<s>")
    transformers = pytest.importorskip("transformers", reason="transformers is not installed (optional)")
    loaded = transformers.PreTrainedTokenizerFast.from_pretrained(str(tmp_path / "out"))
    assert loaded.eos_token == EOT and loaded.pad_token_id == tok.special_tokens["<|pad|>"]
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "out" / "tokenizer.json"))
    for text in TEXTS + ["x<|a b|>y<|pad|>" + EOT]:
        expected = hf_ids(hf, text)
        assert loaded(text)["input_ids"] == expected == tok.encode(text), text[:100]
        assert loaded.decode(expected) == text


def test_cli_reads_and_writes_hf_files(tmp_path, ours_trained):
    vocab, merges = ours_trained
    Tokenizer(vocab, merges, [EOT], pattern="o200k").export_hf(tmp_path / "tokenizer.json")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(mixed_text(30_000, seed=9, special_token=EOT), "utf-8")
    assert main(["-q", "encode", "-t", str(tmp_path / "tokenizer.json"), str(corpus), "-o",
                 str(tmp_path / "ids.npy")]) == 0
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    assert np.load(tmp_path / "ids.npy").tolist() == hf_ids(hf, corpus.read_text("utf-8"))
    assert main(["export", "-t", str(tmp_path / "tokenizer.json"), "--hf-dir", str(tmp_path / "dir"),
                 "--eos-token", EOT]) == 0
    again = json.loads((tmp_path / "dir" / "tokenizer.json").read_text("utf-8"))
    assert again == json.loads((tmp_path / "tokenizer.json").read_text("utf-8"))
    assert json.loads((tmp_path / "dir" / "special_tokens_map.json").read_text("utf-8"))["eos_token"] == EOT


def _a_bc_file(tmp_path):
    """(HF's tokenizer, its tokenizer.json) of merges (b, c), (a, b), (ab, c): HF never joins a + bc, so it gives
    "abc" as a, bc; bpe_fast (tiktoken's rule: any adjacent pair whose concatenation is a token, lowest rank
    first) would join them into abc."""
    from tokenizers import models, pre_tokenizers

    keys = {token_to_str(bytes([b])): b for b in range(256)}
    hf = tokenizers.Tokenizer(models.BPE(keys | {"bc": 256, "ab": 257, "abc": 258},
                                         [("b", "c"), ("a", "b"), ("ab", "c")]))
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    path = tmp_path / "tokenizer.json"
    hf.save(str(path))
    return hf, path


def test_merge_list_hf_reads_otherwise_than_the_ranks_rule_is_refused(tmp_path):
    hf, path = _a_bc_file(tmp_path)
    assert hf.encode("abc").ids == [97, 256]
    with pytest.raises(FormatError, match=r"merge 2 \(ab c\).*from b'a' \+ b'bc', a pair the merge list does not hold"):
        Tokenizer.from_hf(path)
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"bc", 257: b"ab", 258: b"abc"}
    merges = [(b"b", b"c"), (b"a", b"b"), (b"ab", b"c")]
    with pytest.raises(ValueError, match=r"merge 2 \(b'ab', b'c'\): bpe_fast \(as tiktoken\) makes b'abc' from b'a' \+ "
                                         r"b'bc', a pair the merge list does not hold"):
        Tokenizer(vocab, merges)        # CS336's tokenizer, too, would give "abc" as a, bc
    ours = Tokenizer._from_checked(vocab, merges, None, "gpt2")     # past the constructor's check: export's own
    assert ours.encode("abc") == [258]
    with pytest.raises(ValueError, match=r"merge 2 \(b'ab', b'c'\): bpe_fast \(as tiktoken\) makes b'abc' from b'a'"):
        ours.export_hf(tmp_path / "out.json")
    assert not (tmp_path / "out.json").exists()



def test_a_tokenizer_json_changed_between_the_two_reads_is_named(tmp_path, monkeypatch):
    # from_hf reads the model natively and leaves the merge rule's check to the tables' build; when the check
    # refuses the merges, the file is read again in Python to name the merge: a file that no longer holds it then
    # is named as changed
    import bpe_fast.hf as hf_module

    _, path = _a_bc_file(tmp_path)
    assert hf_module.read_tokenizer_arrays(path, for_tokenizer=True).arrays is not None   # read natively
    with pytest.raises(FormatError, match=r"merge 2 \(ab c\)"):
        Tokenizer.from_hf(path)
    monkeypatch.setattr(hf_module, "_read_python", lambda path, data: None)     # the second read passes
    with pytest.raises(FormatError, match=r"tokenizer\.json: changed while it was read"):
        Tokenizer.from_hf(path)


def test_export_hf_refuses_a_merge_listed_twice(tmp_path):
    """HF ranks a pair listed twice by its last place, bpe_fast by its first: the file export_hf wrote gave
    [97, 257] for "abc" in HF where the tokenizer gives [256, 99] (and from_hf refused it)."""
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"ab", 257: b"bc"}
    with pytest.raises(ValueError, match=r"merge 2 \(b'a', b'b'\) repeats merge 0: GPT-2's encoder and HF rank"):
        Tokenizer(vocab, [(b"a", b"b"), (b"b", b"c"), (b"a", b"b")])      # the constructor refuses it first
    tok = Tokenizer._from_checked(vocab, [(b"a", b"b"), (b"b", b"c"), (b"a", b"b")], None, "gpt2")
    assert tok.encode("abc") == [256, 99]
    with pytest.raises(ValueError, match=r"merge 2 \(b'a', b'b'\) repeats merge 0: HF ranks a pair by its last"):
        tok.export_hf(tmp_path / "tokenizer.json")
    assert not (tmp_path / "tokenizer.json").exists()

def test_export_hf_refuses_a_vocabulary_without_every_byte(tmp_path):
    """HF's byte-level model drops a byte it has no token for ("a\\x00b" gave [66, 67])."""
    tok = Tokenizer({i: bytes([i]) for i in range(1, 256)} | {256: b"ab"}, [(b"a", b"b")])
    with pytest.raises(ValueError, match=r"single byte b'\\x00' has no token.*drop"):
        tok.export_hf(tmp_path / "tokenizer.json")
    assert not (tmp_path / "tokenizer.json").exists()


@settings(max_examples=60, deadline=None)
@given(st.sets(st.integers(0, 255), max_size=3), st.booleans(), st.booleans(), st.sampled_from(["vocab", "ranks",
                                                                                                 "hf added", "ranks only"]))
def test_token_census_is_a_set_of_the_tokens(tmp_path_factory, missing, special, gap, how):
    # export_hf asks whether two ids have the same bytes and which single bytes no token is of a TokenIndex of the
    # token pool (_token_census; a set of o200k_base's 200k tokens took 12-18 ms of its 75 ms export): the same
    # answers as a set of the vocabulary's bytes, with bytes missing, special tokens (after a gap of ids without
    # bytes, which the pool skips), an added token with the bytes of a model token (GPT-NeoX's), and ranks that
    # merging does not make (by_ranks_only)
    from bpe_fast import export

    if how == "vocab":
        vocab = {i: bytes([i]) for i in range(256) if i not in missing} | {256: b"ab"}
        tok = Tokenizer(vocab, [(b"a", b"b")] if {97, 98}.isdisjoint(missing) else [], [EOT] if special else [])
    elif how == "hf added":
        doc = small_doc()
        doc["added_tokens"].append(added(" a", 261, special=special))
        tok = Tokenizer.from_hf(write_doc(tmp_path_factory.mktemp("census"), doc))
    else:
        ranks = {bytes([i]): i for i in range(256)} | {b"ab": 256, b"abc": 257}
        if how == "ranks only":
            ranks[b"bcd"] = 258
        tok = Tokenizer.from_tiktoken(ranks, "gpt2", {EOT: 300 if gap else 259} if special else {})
    tokens = set(tok.vocab.values())
    assert export._token_census(tok, tok.vocab) == (len(tokens) == len(tok.vocab),
                                                    [b for b in range(256) if bytes([b]) not in tokens])


def test_a_token_the_ranks_rule_cannot_make_is_refused(tmp_path):
    """The check once gave up at the first token the ranks rule cannot make from the tokens ranked before it
    ("wxyz": w+x joins first, and wx+y is no token), and accepted the list, so the "her" difference before it went
    unseen (HF gave h, er where bpe_fast gave her). Such a token is itself refused: the ranks rule can still make
    it from a part ranked after it (b+a, a+b, ab+ab, ba+b: "abab" is a, ba, b, then a, bab, then abab, where HF
    keeps a, bab), so past it the two rules cannot be shown to agree."""
    from tokenizers import models, pre_tokenizers

    def files(made, merges):
        keys = {token_to_str(bytes([b])): b for b in range(256)}
        hf = tokenizers.Tokenizer(models.BPE(keys | {t: 256 + k for k, t in enumerate(made)}, merges))
        hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        path = tmp_path / f"{len(made)}.json"
        hf.save(str(path))
        vocab = {i: bytes([i]) for i in range(256)} | {256 + k: t.encode() for k, t in enumerate(made)}
        merge_list = [(a.encode(), b.encode()) for a, b in merges]
        with pytest.raises(ValueError, match=r"merge 2 "):
            Tokenizer(vocab, merge_list)        # the constructor refuses it too
        return hf, path, Tokenizer._from_checked(vocab, merge_list, None, "gpt2")   # export_hf's own check

    hf, path, ours = files(["er", "he", "her", "wx", "xy", "xyz", "wxyz"],
                           [("e", "r"), ("h", "e"), ("he", "r"), ("w", "x"), ("x", "y"), ("xy", "z"), ("w", "xyz")])
    assert hf.encode("her").tokens == ["h", "er"] and hf.encode("wxyz").tokens == ["wx", "y", "z"]
    with pytest.raises(FormatError, match=r"merge 2 \(he r\).*b'h' \+ b'er'"):
        Tokenizer.from_hf(path)
    with pytest.raises(ValueError, match=r"merge 2 \(b'he', b'r'\)"):
        ours.export_hf(tmp_path / "out.json")
    hf, path, ours = files(["ba", "ab", "abab", "bab"], [("b", "a"), ("a", "b"), ("ab", "ab"), ("ba", "b")])
    assert hf_ids(hf, "abab") == [97, 259] and ours.encode("abab") == [258]      # the ids differ
    with pytest.raises(FormatError, match=r"merge 2 \(ab ab\).*cannot make b'abab'.*cannot be checked"):
        Tokenizer.from_hf(path)
    with pytest.raises(ValueError, match=r"merge 2 \(b'ab', b'ab'\).*cannot make b'abab'"):
        ours.export_hf(tmp_path / "out.json")
    assert not (tmp_path / "out.json").exists()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 1000)), min_size=1, max_size=12),
       st.lists(st.text("abcd", min_size=1, max_size=12), min_size=1, max_size=8))
@example([(1, 0), (0, 1), (5, 5), (4, 1)], ["abab"])       # b+a, a+b, ab+ab, ba+b: abab made from a + bab
def test_merge_lists_the_check_accepts_give_hfs_ids(choices, texts):
    """Random merge lists over four letters (each merge joins two tokens made so far): whenever
    merge_rule_difference finds no difference, bpe_fast's ids are HF's on random words; when it finds parts that
    HF would not join, HF's ids for that token's own bytes are not bpe_fast's."""
    from tokenizers import models, pre_tokenizers

    from bpe_fast.merge_rule import merge_rule_difference
    tokens = [bytes([c]) for c in b"abcd"]
    merges: list[tuple[bytes, bytes]] = []
    for i, j in choices:
        a, b = tokens[i % len(tokens)], tokens[j % len(tokens)]
        if a + b not in tokens:
            tokens.append(a + b)
            merges.append((a, b))
    vocab = {i: bytes([i]) for i in range(256)} | {256 + k: t for k, t in enumerate(tokens[4:])}
    difference = merge_rule_difference(merges)
    if difference is None:
        ours = Tokenizer(vocab, merges)
    else:                   # refused by the constructor; built past it to show the ids would differ
        with pytest.raises(ValueError, match=f"merge {difference[0]} "):
            Tokenizer(vocab, merges)
        ours = Tokenizer._from_checked(vocab, merges, None, "gpt2")
    keys = {token_to_str(t): i for i, t in vocab.items()}
    hf = tokenizers.Tokenizer(models.BPE(keys, [(token_to_str(a), token_to_str(b)) for a, b in merges]))
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    if difference is None:
        for text in texts:
            assert ours.encode_ordinary(text) == hf_ids(hf, text), (merges, text)
    elif difference[1] is not None:
        token = b"".join(merges[difference[0]]).decode()
        assert ours.encode_ordinary(token) != hf_ids(hf, token), (merges, difference)


# ------------------------------------------------------------------------------------- the merge list at once

# pairs whose parts and join are mostly known (so that whole lists pass), as "a b" or ["a", "b"]
_hf_pairs = st.sampled_from([("a", "b"), ("b", "c"), ("a", "bc"), ("ab", "c"), ("c", "a"), ("ca", "b"), ("c", "ab"),
                             ("b", "ca"), ("bc", "a"), ("a", "x")])
_hf_merge = st.one_of(_hf_pairs.map(" ".join), _hf_pairs.map(list))
_hf_fault = st.sampled_from(["a  b", "a", "a b c", " b", "", 7, ["a"], ["a", 1], [["a"], "b"], ["", "a"]])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(_hf_merge, _hf_merge, _hf_merge, _hf_merge, _hf_merge, _hf_merge, _hf_fault), max_size=8),
       st.sets(st.sampled_from(["ab", "bc", "abc", "ca", "cab", "bca"]), min_size=4))
@example(["a bc", "b c", "ab c"], {"ab", "bc", "abc", "ca"})        # a token made again after another merge
@example(["a b", "b c", ["a", "b"]], {"ab", "bc", "abc", "ca"})      # a pair listed twice
@example(["a bc", "ab c", "b c"], {"ab", "bc", "abc", "ca"})        # a token made by adjacent merges: accepted
def test_merge_list_at_once_equals_the_loop(merges_json, known):
    """_read_merges with its fast path against its loop a merge (the path off): the same merges, or the same
    error, on merge lists with every fault the loop names."""
    import bpe_fast.hf as hf_module
    from bpe_fast.formats import str_to_token
    from hypothesis import target

    key_ids = {k: i for i, k in enumerate(["a", "b", "c", "x"] + sorted(known))}
    vocab = {i: str_to_token(k) for k, i in key_ids.items()}
    f = hf_module._File("tokenizer.json", json.dumps({"model": {"merges": merges_json}}))

    def outcome():
        try:
            return ("ok", hf_module._read_merges(f, merges_json, key_ids, vocab))
        except FormatError as exc:
            return ("error", str(exc))

    fast = outcome()
    original = hf_module._merges_at_once
    hf_module._merges_at_once = lambda *args: None
    try:
        loop = outcome()
    finally:
        hf_module._merges_at_once = original
    target(float(fast[0] == "ok"))
    assert fast == loop


# ------------------------------------------------------------------------------------- the model read natively

def python_path(job):
    """job() with tokenizer.json read by the Python path alone (the native one, hf._read_plain, switched off)."""
    import bpe_fast.hf as hf_module

    original = hf_module._read_plain
    hf_module._read_plain = lambda *args: None
    try:
        return job()
    finally:
        hf_module._read_plain = original


def _in_form_of(merges, merge):
    """merge ("a b") written as the list's merges are: HF reads a list of "a b" strings or of ["a", "b"] pairs."""
    return merge if not merges or type(merges[0]) is str else merge.split(" ")


def _hf_doc(rng):
    """A small byte-level BPE tokenizer.json document, as HF writes them (merges as "a b" or ["a", "b"])."""
    from bpe_fast import hf as hf_module

    vocab = {token_to_str(bytes([b])): b for b in range(256)}
    merges = []
    pool = ["a", "b", "c", "Ġ", "Ċ", "é"]
    as_strings = rng.random() < 0.5         # HF reads a list of one form
    while len(merges) < rng.randint(0, 12):
        a, b = rng.choice(pool), rng.choice(pool)
        if a + b in vocab or len(a + b) > 6:
            continue
        vocab[a + b] = len(vocab)
        merges.append(f"{a} {b}" if as_strings else [a, b])
        pool.append(a + b)
    added = [{"id": len(vocab), "content": "<|endoftext|>", "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True}]
    doc = {"version": "1.0", "truncation": None, "added_tokens": added, "normalizer": None,
           "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
           "post_processor": None, "decoder": {"type": "ByteLevel"},
           "model": {"type": "BPE", "dropout": None, "vocab": vocab, "merges": merges}}
    assert hf_module  # the reader under test
    return doc


_HF_FAULTS = ["none", "unmade_part", "model_twice", "vocab_twice", "key_twice", "id_twice", "escaped_key", "merge_twice",
              "made_apart", "unknown_part", "missing_byte", "normalizer", "nfc", "nfc_normalized_token", "added_id",
              "bad_id", "spaced",
              "mutate", "mutate", "mutate"]


@settings(max_examples=200, deadline=None)
@given(st.randoms(use_true_random=False), st.sampled_from(["none", "unmade", "special_unmade", "rule"]), st.booleans(),
       st.lists(st.text("abcxyzwé <>|endoftx\n", max_size=30), max_size=4))
def test_from_hf_read_natively_as_in_python(tmp_path_factory, rng, fault, ignore_merges, texts):
    """Tokenizer.from_hf reads the model natively for a tokenizer (read_tokenizer_arrays' for_tokenizer): the
    merge rule's check is the tables' build's, ignore_merges' is made on the arrays (hf._unmade_tokens), the
    vocabulary and merges are made when asked for. The same tokenizer and ids as with the file read in Python
    (hf._read_plain off), or the same error."""
    import bpe_fast.hf as hf_module

    doc = _hf_doc(rng)
    model, vocab, added = doc["model"], doc["model"]["vocab"], doc["added_tokens"]
    model["ignore_merges"] = ignore_merges
    folder = tmp_path_factory.mktemp("hf")

    def outcome(path):
        try:
            tok = Tokenizer.from_hf(path)
        except FormatError as exc:
            return ("error", str(exc))
        return ("ok", list(tok.vocab.items()), tok.merges, tok.special_tokens, [tok.encode(t) for t in texts])

    (folder / "base.json").write_text(json.dumps(doc), "utf-8")
    base = outcome(folder / "base.json")        # the random merges alone may be refused
    if fault in ("unmade", "special_unmade"):       # a multi-byte vocab token that no merge makes ...
        vocab["xyz"] = len(vocab)
        added[0]["id"] = len(vocab)
        if fault == "special_unmade":                # ... the bytes of an added token too: ignore_merges allows it
            added.insert(0, added[0] | {"id": vocab["xyz"], "content": "xyz"})
    elif fault == "rule":       # (x y), (w x), (wx y): the ranks rule makes "wxy" as w + xy, which HF never joins
        for token in ("xy", "wx", "wxy"):
            vocab[token] = len(vocab)
        added[0]["id"] = len(vocab)
        model["merges"] += [_in_form_of(model["merges"], merge) for merge in ("x y", "w x", "wx y")]
    path = folder / "tokenizer.json"
    path.write_text(json.dumps(doc), "utf-8")
    native = outcome(path)
    assert native == python_path(lambda: outcome(path))
    if base[0] == "ok":
        # read natively (the rule's check left to the tables' build), but for the token no merge makes with
        # ignore_merges: read in Python, which names it
        assert (hf_module._read_plain(path, path.read_bytes(), True) is not None) == (
            fault != "unmade" or not ignore_merges)
        expected = {"none": "ok", "special_unmade": "ok", "unmade": "error" if ignore_merges else "ok", "rule": "error"}
        assert native[0] == expected[fault], native
        if native[0] == "error":
            assert ("no merge makes vocab token 'xyz'" if fault == "unmade" else "merge ") in native[1]


@settings(max_examples=300, deadline=None)
@given(st.randoms(use_true_random=False), st.sampled_from(_HF_FAULTS))
def test_tokenizer_json_read_natively_as_in_python(tmp_path_factory, rng, fault):
    """read_tokenizer_json with the model read natively (hf._read_plain) against the same function reading the
    whole file in Python (the path off): the same result, or the same error, on files with each fault."""
    import bpe_fast.hf as hf_module

    doc = _hf_doc(rng)
    model, vocab = doc["model"], doc["model"]["vocab"]
    text = None
    if fault == "id_twice":
        vocab["Ġ"] = vocab["a"]
    elif fault == "merge_twice" and model["merges"]:
        model["merges"].append(model["merges"][0])
    elif fault == "made_apart":     # "abc" made by "ab c" and again, after another merge, by "a bc"
        for token in ("ab", "bc", "abc", "éa"):
            vocab.setdefault(token, len(vocab))
        doc["added_tokens"][0]["id"] = len(vocab)
        model["merges"] = ["a b", "b c", "ab c", "é a", "a bc"]
    elif fault == "unmade_part":    # "xy", in the vocab, made by no merge: "xyz" (from "xy z") is not reachable
        for token in ("xy", "xyz"):     # by the ranks rule, nor permanent ("xyz" stays x, y, z)
            vocab.setdefault(token, len(vocab))
        doc["added_tokens"][0]["id"] = len(vocab)
        model["merges"].append(_in_form_of(model["merges"], "xy z"))
    elif fault == "unknown_part":
        model["merges"].append(_in_form_of(model["merges"], "zz q"))
    elif fault == "missing_byte":
        del vocab[token_to_str(b"\x07")]
    elif fault == "normalizer":
        doc["normalizer"] = {"type": "NFKC"}
    elif fault in ("nfc", "nfc_normalized_token"):        # read (the first), refused (the second)
        doc["normalizer"] = {"type": "NFC"} if rng.random() < 0.5 else {"type": "Sequence", "normalizers": [{"type": "NFC"}]}
        doc["added_tokens"][0]["normalized"] = fault == "nfc_normalized_token"
    elif fault == "added_id":
        doc["added_tokens"][0]["id"] += 1
    elif fault == "bad_id":
        vocab["a"] = -1
    text = json.dumps(doc, ensure_ascii=rng.random() < 0.5, indent=2 if fault == "spaced" else None)
    if fault == "model_twice":
        text = text[:-1] + ', "model": {"type": "BPE", "vocab": {}, "merges": []}}'
    elif fault == "vocab_twice":
        text = text.replace('"vocab": {', '"vocab": {"a": 0}, "vocab": {', 1)
    elif fault == "key_twice":
        text = text.replace('"vocab": {', '"vocab": {"a": 300, ', 1)
    elif fault == "escaped_key":
        text = text.replace('"a":', '"\\u0061":', 1)
    data = text.encode("utf-8")
    if fault == "mutate":
        data = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(data))
            kind = rng.random()
            if kind < 0.4:
                data[at] = rng.choice(b' {}[]":,0123456789\\ua')
            elif kind < 0.7:
                del data[at]
            else:
                data[at:at] = bytes([rng.choice(b' {}[]":,0123456789\\ua')])
        data = bytes(data)
    path = tmp_path_factory.mktemp("hf") / "tokenizer.json"
    path.write_bytes(data)

    def outcome():
        try:
            read = hf_module.read_tokenizer_arrays(path)
            return ("ok", *((list(r.items()) if isinstance(r, dict) else r)
                            for r in (read.vocab, read.merges, read.special_tokens, read.pattern)), read.normalizer)
        except FormatError as exc:
            return ("error", str(exc))

    native = outcome()
    python = python_path(outcome)
    assert native == python
    if fault in ("none", "escaped_key", "spaced", "nfc") and python[0] == "ok":     # well formed: the native path
        assert hf_module._read_plain(path, data) is not None                       # took it
    if fault in ("nfc", "nfc_normalized_token") and python[0] == "error" and "normaliz" not in python[1]:
        # the random file has another fault, found first: the same file without the normalizer has it too
        del doc["normalizer"]
        doc["added_tokens"][0]["normalized"] = False
        path.write_text(json.dumps(doc), "utf-8")
        assert python_path(outcome) == python
    elif fault == "nfc":
        assert python[0] == "ok" and python[-1] == "NFC"
    elif fault == "nfc_normalized_token":
        assert python[0] == "error" and "has normalized: true, and the file normalizes text to NFC" in python[1]
    elif python[0] == "ok":
        assert python[-1] is None
    if python[0] == "ok":       # the same encoder: its tables from the arrays (every token permanent, when the
        fast = Tokenizer.from_hf(path)          # ranks rule makes them all) and from the Python objects
        slow = python_path(lambda: Tokenizer.from_hf(path))
        assert fast._tables.permanent_mask() == slow._tables.permanent_mask()
        text = "abcabc éa a\nb aaa bca xyz" + EOT + "cab a b c xyzxyz"
        assert fast.encode(text) == slow.encode(text)


def test_tokenizer_json_read_natively_gives_the_same_tokenizer(gpt2_json):
    """GPT-2's tokenizer.json through the native path (tables from the arrays, in a thread) against the
    Python path and the general build: the same vocabulary, merges, special tokens and ids."""
    import bpe_fast.hf as hf_module

    assert hf_module._read_plain(gpt2_json, open(gpt2_json, "rb").read()) is not None     # the native path
    fast = Tokenizer.from_hf(gpt2_json)
    python = python_path(lambda: Tokenizer.from_hf(gpt2_json))
    assert (fast.vocab, fast.merges, fast.special_tokens) == (python.vocab, python.merges, python.special_tokens)
    assert fast._tables.permanent_mask() == python._tables.permanent_mask()
    text = " ".join(TEXTS) + EOT + " naïve 日本語 12345"
    assert fast.encode(text) == python.encode(text)


def test_added_token_with_a_lone_surrogate_is_a_format_error(tmp_path):
    """An added token with a lone surrogate (it has no UTF-8) is refused naming it, on either path, even when
    the merges also fail the ranks rule (review F2: the native path raised UnicodeEncodeError)."""
    import bpe_fast.hf as hf_module

    keys = {token_to_str(bytes([b])): b for b in range(256)}
    for merges in ([], ["b c", "a b", "ab c"]):
        doc = {"model": {"type": "BPE", "vocab": keys | {"bc": 256, "ab": 257, "abc": 258}, "merges": merges},
               "added_tokens": [{"id": 259, "content": "\ud800", "special": True}],
               "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                                     "use_regex": True}}
        path = tmp_path / "tokenizer.json"
        path.write_text(json.dumps(doc), encoding="utf-8")
        errors = []
        for run in (lambda job: job(), python_path):
            with pytest.raises(FormatError) as info:
                run(lambda: hf_module.read_tokenizer_json(path))
            errors.append(str(info.value))
        assert errors[0] == errors[1]
        assert ("lone surrogate" in errors[0]) if not merges else ("a pair the merge list does not hold" in errors[0])


def _gpt2_split_file(path, split_regex, behavior, invert):
    """GPT-2's model behind a Split (then a ByteLevel without its regex), saved by HF tokenizers to `path`."""
    hf = tokenizers.Tokenizer(models.BPE.from_file(str(FIXTURES / "gpt2_vocab.json"),
                                                   str(FIXTURES / "gpt2_merges.txt")))
    hf.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split(split_regex, behavior=behavior, invert=invert),
                                                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    hf.decoder = decoders.ByteLevel()
    hf.save(str(path))
    return tokenizers.Tokenizer.from_file(str(path))


@pytest.mark.parametrize("word", ["gpt2", "llama3", "ab"])
def test_removed_inverted_split_of_one_word_is_that_regex_not_a_pattern_name(tmp_path, word):
    # (review helper-91) a Removed, inverted Split matching only "gpt2" was read as GPT-2's pattern by name, and
    # one matching "ab" refused as a misspelt name: only the matches are pieces, as in HF
    for split_regex in (tokenizers.Regex(word), word):
        hf = _gpt2_split_file(tmp_path / "tokenizer.json", split_regex, "removed", True)
        tok = Tokenizer.from_hf(tmp_path / "tokenizer.json")
        for text in ("Hello world", f"use {word} now {word}{word}", ""):
            assert tok.encode(text) == hf.encode(text, add_special_tokens=False).ids


def test_a_fixed_count_made_optional_is_refused_both_ways(tmp_path):
    # (review helper-91) Oniguruma reads "b{2}?" as an optional "bb", `regex` as exactly "bb" (lazily): such a
    # Split is refused when read, and such a pattern when exported
    with pytest.raises(FormatError, match=r"'\{2\}\?'"):
        _gpt2_split_file(tmp_path / "tokenizer.json", tokenizers.Regex(r"ab{2}?|\p{L}+|\s+|[^\s\p{L}]+"), "isolated",
                         False)
        Tokenizer.from_hf(tmp_path / "tokenizer.json")
    tok = Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"ab"}, [(b"a", b"b")], pattern=r"ab{2}?|\p{L}+|\s+")
    with pytest.raises(ValueError, match=r"'\{2\}\?'"):
        tok.export_hf(tmp_path / "out.json")
    assert not (tmp_path / "out.json").exists()


@pytest.mark.parametrize("pattern", [r"\p{N}*|\p{L}+|\s+|[^\s\p{L}\p{N}]+", r"\p{L}+|\s+|[^\s\p{L}]+|(?=q)",
                                     r"z*(?=zz)|\p{L}+|\s+|[^\s\p{L}]+"])
def test_a_pattern_that_matches_empty_text_is_not_exported(tmp_path, pattern):
    # (review helper-91) bpe_fast skips empty matches; HF's Removed, inverted Split keeps them and drops the text
    # between them ("a b" gave [] in HF): refused, also where only a character no probe text held ("q", "zz")
    # makes an empty match
    tok = Tokenizer({i: bytes([i]) for i in range(256)}, [], pattern=pattern)
    assert tok.encode("a b") == [97, 32, 98]
    with pytest.raises(ValueError, match="can match empty text"):
        tok.export_hf(tmp_path / "out.json")
    assert not (tmp_path / "out.json").exists()


def test_export_hf_of_a_run_of_one_letter_loads_in_hf(tmp_path):
    """A merge list making tokens of 2..600 letters "a" (the ranks rule's parts: merge_rule_difference proves them
    by the split trees, not by merging each token's bytes): export_hf's file gives bpe_fast's ids in HF
    tokenizers and reads back with from_hf; save and load too."""
    tokenizers = pytest.importorskip("tokenizers")
    from bpe_fast import Tokenizer

    ranks = {bytes([b]): b for b in range(256)} | {b"a" * n: 254 + n for n in range(2, 601)}
    merges = list(Tokenizer.from_tiktoken(ranks, "gpt2").merges)
    vocab = {i: bytes([i]) for i in range(256)} | {256 + k: a + b for k, (a, b) in enumerate(merges)}
    tok = Tokenizer(vocab, merges)
    tok.export_hf(tmp_path / "tokenizer.json")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    text = "a" * 1000 + " aaa" + " a" * 3 + "a" * 599 + "b"
    ids = tok.encode(text)
    assert max(ids) > 700       # tokens of hundreds of letters
    assert hf.encode(text, add_special_tokens=False).ids == ids
    assert Tokenizer.from_hf(tmp_path / "tokenizer.json").encode(text) == ids
    tok.save(tmp_path / "saved")
    assert Tokenizer.load(tmp_path / "saved").encode(text) == ids
