"""export_hf's text: the model's vocab and merges are written from arrays and spliced into json.dumps of the rest
(bpe_fast.export.hf_tokenizer_text); the file must be json.dumps(hf_tokenizer_json(tok), ensure_ascii=False),
byte for byte, whichever way the vocab is made (every token under its byte-level form, or the special tokens
placed), and the merge rule's proof by the tokenizer's own tables must agree with merge_rule.made_as_listed."""
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bpe_fast.export as export
from bpe_fast import Tokenizer
from bpe_fast.export import hf_tokenizer_json, hf_tokenizer_text
from bpe_fast.merge_rule import made_as_listed
from bpe_fast.train import train_from_counts
from corpora import FIXTURES

BYTES = {i: bytes([i]) for i in range(256)}
# tokens with a quote, a backslash, control bytes, non-ASCII bytes (UTF-8 and not), a space
ODD = [b'"', b"\\", b'a"', b'\\"', b"\x00\x01", b"\n\t", b"\xc3\xa9", b"\xff\xfe", b" \"", b"\x7f\\"]


def _merges_of(tokens):
    """A merge list making each token of `tokens` (2 bytes or more) from its first byte and the rest, made first."""
    merges, made = [], set(BYTES.values())

    def make(token):
        if token in made:
            return
        make(token[1:])
        merges.append((token[:1], token[1:]))
        made.add(token)

    for token in tokens:
        make(token)
    return merges


def _tokenizers():
    merges = _merges_of([t for t in ODD if len(t) > 1])
    vocab = BYTES | {256 + k: a + b for k, (a, b) in enumerate(merges)}
    made = {
        "odd": Tokenizer(dict(vocab), merges),
        # special tokens whose text is their byte-level form, with a quote and a backslash (every token under its
        # byte-level form), and ones that are not (a space, a control character, non-ASCII: placed)
        "odd, plain specials": Tokenizer(dict(vocab), merges, ['<|"q"|>', "<|back\\slash|>"]),
        "odd, placed specials": Tokenizer(dict(vocab), merges, ["<|a b|>", "<|\x01|>", '<|é"\\|>', "<|\u2581|>"]),
        "no merges": Tokenizer(dict(BYTES), [], ["<|endoftext|>"]),
        "gpt2": Tokenizer.from_files(FIXTURES / "gpt2_vocab.json", FIXTURES / "gpt2_merges.txt", ["<|endoftext|>"]),
        "gpt2, a special token outside": Tokenizer.from_files(FIXTURES / "gpt2_vocab.json",
                                                              FIXTURES / "gpt2_merges.txt", ["<|endoftext|>", "<|x y|>"]),
        "ranks only": Tokenizer.from_tiktoken({v: k for k, v in BYTES.items()}
                                              | {b"ab": 256, b"abc": 257, b"bc": 258, b"xyz": 259}, "gpt2",
                                              {"<|endoftext|>": 300}),
    }
    counts = {b'say "hi"': 5, b"back\\slash \\": 4, b"caf\xc3\xa9 \xe2\x96\x81": 3, b"\x00\x01\x02": 2}
    vocab, trained = train_from_counts(counts, 280, ["<|endoftext|>", "<|pad|>"])
    made["trained"] = Tokenizer(vocab, trained, ["<|endoftext|>", "<|pad|>"])
    made["trained, lstrip"] = made["trained"].with_special_lstrip(["<|pad|>"])
    made["trained, nfc"] = made["trained"].with_normalizer("NFC")
    return made


@pytest.mark.parametrize("name", list(_tokenizers()))
def test_the_text_is_json_dumps_of_the_document(name, tmp_path):
    tok = _tokenizers()[name]
    document = hf_tokenizer_json(tok)
    text = hf_tokenizer_text(tok)
    assert text == json.dumps(document, ensure_ascii=False)
    assert json.loads(text) == document
    tok.export_hf(tmp_path / "tokenizer.json")
    assert (tmp_path / "tokenizer.json").read_bytes() == json.dumps(document, ensure_ascii=False).encode("utf-8")
    paths = tok.export_hf_dir(tmp_path / "dir")
    assert open(paths[0], "rb").read() == (tmp_path / "tokenizer.json").read_bytes()


def test_both_ways_of_making_the_vocab_are_taken(monkeypatch):
    """The cases above take the array path (_plain_vocab) and the placement (_placed_vocab) both, and the array
    path's vocab is the placement's."""
    taken = {}
    plain = export._plain_vocab
    for name, tok in _tokenizers().items():
        if tok.by_ranks_only:
            continue
        special_ids = sorted(tok.special_tokens.items(), key=lambda item: item[1])
        merges = list(tok.merges)
        packed = export.pack_pairs(merges) if merges else None
        made = plain(tok.vocab, special_ids, len(set(tok.vocab.values())) == len(tok.vocab), merges, packed)
        taken[name] = made is not None
        if made is not None:
            assert list(made.as_dict().items()) == list(export._placed_vocab(tok.vocab, special_ids, merges).items())
    assert taken["odd, plain specials"] and taken["gpt2"] and taken["trained"]
    assert not taken["odd, placed specials"] and not taken["gpt2, a special token outside"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 1000)), min_size=1, max_size=12))
def test_the_tables_proof_is_made_as_listed(choices):
    """export skips merge_rule_difference when the tokenizer's tables made each token from its merge's two
    (tables_made_as_listed): only where made_as_listed proves the same, on random merge lists over four letters
    (each merge joins two tokens made so far), built past the constructor's check."""
    made = [b"a", b"b", b"c", b"d"]
    merges = []
    for x, y in choices:
        a, b = made[x % len(made)], made[y % len(made)]
        merges.append((a, b))
        if a + b not in made:
            made.append(a + b)
    vocab = dict(BYTES)
    for a, b in merges:
        if a + b not in vocab.values():
            vocab[len(vocab)] = a + b
    tok = Tokenizer._from_checked(vocab, list(merges), None, "gpt2")
    packed = export.pack_pairs(merges)
    if export.tables_made_as_listed(tok, len(merges), packed):
        assert made_as_listed(merges)


def test_refusals_come_before_anything_is_written(tmp_path):
    vocab = BYTES | {256: b"bc", 257: b"ab", 258: b"abc"}
    tok = Tokenizer._from_checked(vocab, [(b"b", b"c"), (b"a", b"b"), (b"ab", b"c")], None, "gpt2")
    with pytest.raises(ValueError, match=r"merge 2 \(b'ab', b'c'\): bpe_fast \(as tiktoken\) makes b'abc'"):
        hf_tokenizer_text(tok)
    with pytest.raises(ValueError, match=r"merge 2 \(b'ab', b'c'\)"):
        tok.export_hf_dir(tmp_path / "dir")
    assert not (tmp_path / "dir").exists()
