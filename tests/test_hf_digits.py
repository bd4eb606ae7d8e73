"""HF tokenizer.json files whose pre-tokenizer is Digits then ByteLevel with GPT-2's regex (StarCoder's and
StarCoder2's): bpe_fast reads them as one regex (patterns.STARCODER_PATTERN, DIGIT_RUNS_GPT2_PATTERN) and
writes them back as Digits then ByteLevel. Against HF tokenizers itself: its pieces and its ids."""
from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bpe_fast import Tokenizer
from bpe_fast.formats import FormatError, token_to_str
from bpe_fast.patterns import DIGIT_RUNS_GPT2_PATTERN, STARCODER_PATTERN
from bpe_fast.pretokenize import pretokenize
from bpe_fast.synthetic import mixed_text

tokenizers = pytest.importorskip("tokenizers", reason="HF tokenizers is not installed")
from tokenizers import decoders, models, pre_tokenizers, trainers  # noqa: E402

EOT = "<|endoftext|>"
# what meets at a digit: spaces, tabs and newlines before and after it, other numerics (fullwidth, superscript,
# Arabic-Indic, Roman numerals), letters, contractions, punctuation, no-break and ideographic spaces
ALPHABET = ["a", "b", "Z", " ", "  ", "\t", "\n", "1", "2", "9", "１", "²", "٣", "Ⅻ", "é", "x", "'s", "'ll", "'",
            ".", ",", "!", "\u00a0", "\u3000", "中", "-", "$", "😀"]


def hf_pre_tokenizer(individual):
    return pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=individual),
                                    pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])


def texts(seed, n):
    rng = random.Random(seed)
    return ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 24))) for _ in range(n)]


@pytest.mark.parametrize("individual, pattern", [(True, STARCODER_PATTERN), (False, DIGIT_RUNS_GPT2_PATTERN)])
def test_the_pattern_gives_hf_pieces(individual, pattern):
    hf = hf_pre_tokenizer(individual)
    for text in texts(1 + individual, 5000):
        assert [token_to_str(p.encode()) for p in pretokenize(text, pattern)] == \
            [p for p, _ in hf.pre_tokenize_str(text)], text


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(ALPHABET + ["0", "\r", "\x0b", "\u2028", "\u2003"]), max_size=30), st.booleans())
def test_the_pattern_gives_hf_pieces_property(pieces, individual):
    text = "".join(pieces)
    pattern = STARCODER_PATTERN if individual else DIGIT_RUNS_GPT2_PATTERN
    assert [token_to_str(p.encode()) for p in pretokenize(text, pattern)] == \
        [p for p, _ in hf_pre_tokenizer(individual).pre_tokenize_str(text)]


@pytest.fixture(scope="module", params=[True, False], ids=["individual", "runs"])
def starcoder_like(request, tmp_path_factory):
    """A byte-level BPE HF trains with Digits then ByteLevel, saved as StarCoder's tokenizer.json is."""
    hf = tokenizers.Tokenizer(models.BPE())
    hf.pre_tokenizer = hf_pre_tokenizer(request.param)
    hf.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=700, special_tokens=[EOT], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    corpus = mixed_text(120_000, seed=5).split("\n") + ["x = 1234567 + 89 * 2024", "pi ≈ 3.14159 ²"] * 50
    hf.train_from_iterator(corpus, trainer)
    path = tmp_path_factory.mktemp("starcoder") / "tokenizer.json"
    hf.save(str(path))
    return path, request.param


def test_from_hf_gives_hf_ids_and_export_writes_digits_back(starcoder_like, tmp_path):
    path, individual = starcoder_like
    hf = tokenizers.Tokenizer.from_file(str(path))
    tok = Tokenizer.from_hf(path)
    assert tok.pattern == (STARCODER_PATTERN if individual else DIGIT_RUNS_GPT2_PATTERN)
    assert tok.native == individual         # StarCoder's (individual digits) is scanned natively
    sample = texts(7, 1500) + [mixed_text(20_000, seed=6), "in 2024, 3.14  42\t7 x1y2 " + EOT + "99"]
    for text in sample:
        assert tok.encode(text) == hf.encode(text, add_special_tokens=False).ids, text[:80]
    tok.export_hf(tmp_path / "back.json")
    steps = json.loads((tmp_path / "back.json").read_text("utf-8"))["pre_tokenizer"]["pretokenizers"]
    assert steps[0] == {"type": "Digits", "individual_digits": individual} and steps[1]["use_regex"] is True
    back = tokenizers.Tokenizer.from_file(str(tmp_path / "back.json"))
    again = Tokenizer.from_hf(tmp_path / "back.json")
    for text in sample[:300]:
        ids = tok.encode(text)
        assert back.encode(text, add_special_tokens=False).ids == ids == again.encode(text), text[:80]


@pytest.mark.parametrize("digits, byte_level, message", [
    ({"type": "Digits"}, None, r'Digits "individual_digits" must be true or false, not null'),
    ({"type": "Digits", "individual_digits": 1}, None, r'Digits "individual_digits" must be true or false, not 1'),
    (None, {"use_regex": False}, "Digits then ByteLevel without use_regex"),
    (None, {"add_prefix_space": True}, "add_prefix_space"),
])
def test_what_is_not_starcoder_s_is_refused_naming_it(starcoder_like, tmp_path, digits, byte_level, message):
    path, _ = starcoder_like
    doc = json.loads(path.read_text("utf-8"))
    steps = doc["pre_tokenizer"]["pretokenizers"]
    if digits is not None:
        steps[0] = digits
    if byte_level is not None:
        steps[1].update(byte_level)
    bad = tmp_path / "tokenizer.json"
    bad.write_text(json.dumps(doc), "utf-8")
    with pytest.raises(FormatError, match=message) as info:
        Tokenizer.from_hf(bad)
    assert str(info.value).startswith(str(bad))
