"""The peers' Unicode table (bpe_fast/_unicode_table_peers.py, Unicode 16.0): every code point in every class the
native scanner asks about, as tiktoken's regex engine and HF tokenizers' Oniguruma read it; the drop-in paths
(Encoding, from_tiktoken, from_hf) scanning with it give their ids on the characters assigned since (Unicode 17's,
which the installed `regex` reads otherwise); the CS336 side keeps the installed `regex`'s."""
from __future__ import annotations

import importlib
import json
import pickle
import random
import warnings

import numpy as np
import pytest
import regex

import bpe_fast
from bpe_fast import Tokenizer
from bpe_fast import _unicode_table as regex_table
from bpe_fast import _unicode_table_peers as peers_table
from bpe_fast.formats import FormatError
from bpe_fast.patterns import (DEEPSEEK3_PATTERN, GPT2_PATTERN, GPT4_PATTERN, KIMI_PAT_STR, LLAMA3_PATTERN,
                               O200K_PATTERN, QWEN2_PATTERN, STARCODER_PATTERN, TEKKEN_PATTERN,
                               tiktoken_anchors)
from bpe_fast.pretokenize import _FIELDS, CLASSES, CONTRACTION_LETTERS, PEERS_UNICODE

pretokenize = importlib.import_module("bpe_fast.pretokenize")      # (bpe_fast.pretokenize is also the function)

tiktoken = pytest.importorskip("tiktoken", reason="tiktoken is not installed")
tokenizers = pytest.importorskip("tokenizers", reason="HF tokenizers is not installed")

BYTE_RANKS = {bytes([b]): b for b in range(256)}


@pytest.fixture(scope="module")
def gpt2():
    """(GPT-2's ranks, its special tokens), from the fixture files."""
    from bpe_fast.ranks import ranks_from_tokenizer
    from corpora import EOT, FIXTURES

    tok = Tokenizer.from_files(FIXTURES / "gpt2_vocab.json", FIXTURES / "gpt2_merges.txt", [EOT])
    return ranks_from_tokenizer(tok), {EOT: tok.special_tokens[EOT]}


@pytest.fixture(scope="module")
def every_character():
    cps = np.arange(0x110000, dtype=np.uint32)
    cps = cps[(cps < 0xD800) | (cps > 0xDFFF)]
    return cps.astype("<u4").tobytes().decode("utf-32-le")


def members(table, field):
    ranges = getattr(table, field)
    return {chr(c) for start, stop in zip(ranges[0::2], ranges[1::2]) for c in range(start, stop)}


def differing():
    """The characters the two tables put in different classes (Unicode 17's, mostly letters), in order."""
    out = set()
    for key, _ in CLASSES:
        out |= members(peers_table, _FIELDS[key]) ^ members(regex_table, _FIELDS[key])
    return sorted(out)


def test_the_table_is_tiktokens_on_every_code_point(every_character):
    # tiktoken leaves out the text its pattern does not match: a pattern of one class gives that class's characters
    for key, rx in CLASSES:
        enc = tiktoken.Encoding("probe", pat_str=rx, mergeable_ranks=BYTE_RANKS, special_tokens={})
        found = set(bytes(enc.encode_ordinary(every_character)).decode("utf-8"))
        assert found == members(peers_table, _FIELDS[key]), key
    for letter in CONTRACTION_LETTERS:
        enc = tiktoken.Encoding("probe", pat_str=f"(?i:{letter})", mergeable_ranks=BYTE_RANKS, special_tokens={})
        found = sorted(map(ord, bytes(enc.encode_ordinary(every_character)).decode("utf-8")))
        assert found == sorted(peers_table.FOLDS[letter]), letter


def test_the_table_is_oniguruma_s_on_every_code_point(every_character):
    # HF's Split, inverted and removing the rest, keeps the matches of its regex
    for key, rx in CLASSES:
        split = tokenizers.pre_tokenizers.Split(tokenizers.Regex(rx), "removed", invert=True)
        found = set("".join(piece for piece, _ in split.pre_tokenize_str(every_character)))
        assert found == members(peers_table, _FIELDS[key]), key


def test_the_tables_differ_where_unicode_17_assigned_characters():
    # (when the installed `regex` is of Unicode 16 too, there is nothing to tell apart)
    if regex.match(r"\p{L}", "\U0003D000") is None:
        pytest.skip("the installed regex is of Unicode 16: its table is the peers'")
    chars = differing()
    assert "\U0003D000" in chars and len(chars) > 10_000
    assert peers_table.UNICODE == PEERS_UNICODE


def _texts(chars, seed, n=300):
    rng = random.Random(seed)
    contexts = ["{}", "a{}", "{}b", " {}", "{}{}", "'s{}", "{}'S", "1{}", "{} ", "\n{}", "Ab{}cD", "中{}", "{}123",
                "!{}", "{}\r\n", "{}'ll"]
    return ["".join(rng.choice(contexts).format(rng.choice(chars), rng.choice(chars))
                    for _ in range(rng.randint(1, 12))) for _ in range(n)]


@pytest.mark.parametrize("pattern", [GPT2_PATTERN, GPT4_PATTERN, O200K_PATTERN, LLAMA3_PATTERN, QWEN2_PATTERN,
                                     TEKKEN_PATTERN, KIMI_PAT_STR, STARCODER_PATTERN])
def test_encoding_gives_tiktoken_s_ids_on_the_new_characters(gpt2, pattern):
    ranks, specials = gpt2
    pat_str = pattern if pattern == KIMI_PAT_STR else tiktoken_anchors(pattern)
    ours = bpe_fast.Encoding("t", pat_str=pat_str, mergeable_ranks=ranks, special_tokens=specials)
    theirs = tiktoken.Encoding("t", pat_str=pat_str, mergeable_ranks=ranks, special_tokens=specials)
    assert ours._core._tokenizer.unicode == PEERS_UNICODE
    texts = _texts(differing() or ["\U0003D000"], hash(pattern) % 1000)
    for text in texts:
        assert ours.encode(text) == theirs.encode(text), ascii(text)
    assert ours.encode_ordinary_batch(texts) == theirs.encode_ordinary_batch(texts)
    stable, completions = ours.encode_with_unstable(texts[0], allowed_special="all")
    expected = theirs.encode_with_unstable(texts[0], allowed_special="all")
    assert (stable, sorted(completions)) == (expected[0], sorted(expected[1]))


@pytest.mark.parametrize("pattern", [GPT2_PATTERN, LLAMA3_PATTERN, DEEPSEEK3_PATTERN, STARCODER_PATTERN])
def test_from_hf_gives_hf_s_ids_on_the_new_characters(gpt2, tmp_path, pattern):
    ranks, specials = gpt2
    path = tmp_path / "tokenizer.json"
    Tokenizer.from_tiktoken(ranks, pattern, specials).export_hf(path)
    ours, theirs = Tokenizer.from_hf(path), tokenizers.Tokenizer.from_file(str(path))
    assert ours.unicode == PEERS_UNICODE
    for text in _texts(differing() or ["\U0003D000"], 7):
        assert ours.encode(text) == theirs.encode(text, add_special_tokens=False).ids, ascii(text)


def test_the_cs336_side_keeps_the_installed_regex(gpt2, tmp_path):
    ranks, specials = gpt2
    drop_in = Tokenizer.from_tiktoken(ranks, "gpt2", specials)
    cs336 = Tokenizer(dict(drop_in.vocab), list(drop_in.merges), list(specials))
    assert cs336.unicode is None and drop_in.unicode == PEERS_UNICODE
    text = "a\U0003D000\U0003D001 b"
    assert cs336.encode(text) == Tokenizer.from_tiktoken(ranks, "gpt2", specials).with_unicode(None).encode(text)
    # the pre-tokens the installed regex gives (U+3D000 a letter in Unicode 17), and the peers' (none in 16.0)
    data = "a\U0003D000".encode("utf-8")
    assert pretokenize.pretoken_boundaries(data, "gpt2", unicode=PEERS_UNICODE).tolist() == [0, 1, 5]
    if differing():
        assert pretokenize.pretoken_boundaries(data, "gpt2").tolist() == [0, 5]
        assert pretokenize.pretokenize("a\U0003D000") == ["a\U0003D000"]
    # kept by save, load, pickling and views; refused values name themselves
    drop_in.save(tmp_path / "saved")
    assert json.loads((tmp_path / "saved" / "bpe_fast.json").read_text("utf-8"))["unicode"] == PEERS_UNICODE
    assert Tokenizer.load(tmp_path / "saved").unicode == PEERS_UNICODE
    # a merge that joins "a" with U+3D000's first byte tells the two readings apart (GPT-2's vocabulary does not)
    telling = Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"a\xf0"}, [(b"a", b"\xf0")])
    peers = telling.with_unicode(PEERS_UNICODE)
    probe = "a\U0003D000"
    assert peers.encode(probe)[:2] == [97, 240]
    if differing():
        assert telling.encode(probe)[:2] == [256, 189]
    for kept in (pickle.loads(pickle.dumps(peers)), peers.restricted_to(frozenset()),
                 peers.with_special_lstrip([]), peers.with_normalizer("NFC"),
                 pickle.loads(pickle.dumps(peers.with_normalizer("NFC")))):
        assert kept.unicode == PEERS_UNICODE and kept.encode(probe) == peers.encode(probe)
    assert pickle.loads(pickle.dumps(drop_in)).unicode == PEERS_UNICODE
    with pytest.raises(ValueError, match=r"unicode must be None .* or '16.0' .*, got '17.0'"):
        drop_in.with_unicode("17.0")
    with pytest.raises(ValueError, match=r"unicode must be None .* got 'bogus'"):
        pretokenize.pretoken_boundaries(probe.encode(), "gpt2", unicode="bogus")
    config = json.loads((tmp_path / "saved" / "bpe_fast.json").read_text("utf-8"))
    (tmp_path / "saved" / "bpe_fast.json").write_text(json.dumps(dict(config, unicode="15.1"), indent=2), "utf-8")
    with pytest.raises(FormatError, match=r"bpe_fast\.json:\d+: \"unicode\": unicode must be None"):
        Tokenizer.load(tmp_path / "saved")


def test_a_hand_edited_peers_table_is_not_used(monkeypatch):
    monkeypatch.setattr(peers_table, "STAMP", "0" * 32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tables = pretokenize._load_peer_tables()
    assert tables is pretokenize.native_tables() and "does not match its stamp" in str(caught[0].message)
