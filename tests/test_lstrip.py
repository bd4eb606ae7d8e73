"""Special tokens that take the white space before them: HF tokenizers' added tokens with "lstrip": true
(RoBERTa's, BART's and Longformer's <mask>). Every encoding path against HF's ids on text with every kind of
white space before and around them, and against a plain-Python oracle of HF's rule; what is kept and refused."""
from __future__ import annotations

import gzip
import json
import pickle
import random
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bpe_fast import GPT2_PATTERN, Tokenizer, encode_file, encode_files, train_bpe
from bpe_fast.formats import FormatError

tokenizers = pytest.importorskip("tokenizers", reason="HF tokenizers is not installed")

ROBERTA_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]
# Unicode's White_Space (Rust's char::is_whitespace, which HF's lstrip uses) and characters Python's str.isspace
# takes that it does not (U+001C-001F), next to the tokens and parts of them
WHITE = ["\t", "\n", "\x0b", "\x0c", "\r", " ", "\x85", "\xa0", "\u1680", "\u2000", "\u200a", "\u2028", "\u2029",
         "\u202f", "\u205f", "\u3000"]
PIECES = [*WHITE, "  ", "\x1c", "\x1f", "\u200b", "<mask>", "<s>", "</s>", "<mask", "mask>", "<", "a", "Hello",
          " world", ".", "é", "日本"]
texts = st.lists(st.sampled_from(PIECES), max_size=20).map("".join)


def roberta_doc(tokenizer):
    """A RoBERTa-like tokenizer.json of `tokenizer` (trained with ROBERTA_SPECIALS): ByteLevel pre-tokenizer and
    decoder, RobertaProcessing, its special tokens normalized (as RoBERTa's), and <mask> with lstrip after the
    vocab, in the model's vocab too."""
    from bpe_fast.export import hf_tokenizer_json

    doc = hf_tokenizer_json(tokenizer)
    doc["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True}
    doc["decoder"] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True}
    doc["post_processor"] = {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0],
                             "trim_offsets": True, "add_prefix_space": False}
    for entry in doc["added_tokens"]:
        entry["normalized"] = True
    mask = max(doc["model"]["vocab"].values()) + 1
    doc["model"]["vocab"]["<mask>"] = mask
    doc["added_tokens"].append({"id": mask, "content": "<mask>", "single_word": False, "lstrip": True,
                                "rstrip": False, "normalized": False, "special": True})
    return doc


@pytest.fixture(scope="module")
def roberta(tmp_path_factory):
    """(bpe_fast's from_hf, HF's, the document, its path) of a RoBERTa-like file."""
    folder = tmp_path_factory.mktemp("roberta")
    corpus = folder / "corpus.txt"
    rng = random.Random(3)
    words = ["Hello", "world", "the", "mask", "a", "é", "日本", ".", "\n", "  "]
    corpus.write_text(" ".join(rng.choice(words) for _ in range(20_000)), "utf-8")
    vocab, merges = train_bpe(corpus, 300, ROBERTA_SPECIALS, num_processes=1)
    doc = roberta_doc(Tokenizer(vocab, merges, ROBERTA_SPECIALS))
    path = folder / "tokenizer.json"
    path.write_text(json.dumps(doc), "utf-8")
    return Tokenizer.from_hf(path), tokenizers.Tokenizer.from_file(str(path)), doc, path


def hf_ids(hf, text):
    return hf.encode(text, add_special_tokens=False).ids


def oracle(tok, text):
    """HF's rule in plain Python: the added tokens found left to right (at each place the longest), the white
    space before one with lstrip taken back to the end of the one before; the text between encoded alone."""
    specials = sorted(tok.special_tokens, key=len, reverse=True)
    plain = tok.restricted_to(frozenset())
    ids, pos, k = [], 0, 0
    while k < len(text):
        found = next((s for s in specials if text.startswith(s, k)), None)
        if found is None:
            k += 1
            continue
        end = k
        if found in tok.special_lstrip:
            while end > pos and text[end - 1] in WHITE:
                end -= 1
        ids += plain.encode(text[pos:end]) + [tok.special_tokens[found]]
        pos = k = k + len(found)
    return ids + plain.encode(text[pos:])


def test_the_fixture_takes_the_white_space(roberta):
    ours, hf, _, _ = roberta
    assert ours.special_lstrip == {"<mask>"}
    text = "Hello \u3000\t<mask> world<s> <mask>\x1c <mask>"
    assert ours.encode(text) == hf_ids(hf, text) == oracle(ours, text)
    assert ours.encode(text) != ours.with_special_lstrip([]).encode(text)


@settings(max_examples=400, deadline=None)
@given(texts)
def test_every_encoding_method_as_hf(roberta, text):
    ours, hf, _, _ = roberta
    expected = hf_ids(hf, text)
    assert oracle(ours, text) == expected
    assert ours.encode(text) == expected
    assert ours.encode_to_numpy(text).tolist() == expected
    assert ours.encode_utf8_to_numpy(text.encode("utf-8")).tolist() == expected
    assert ours.encode_batch([text, "x" + text], num_threads=2) == [expected, hf_ids(hf, "x" + text)]


@settings(max_examples=200, deadline=None)
@given(st.lists(texts, max_size=5), st.randoms(use_true_random=False))
def test_streams_and_documents_as_hf(roberta, batch, rng):
    ours, hf, _, _ = roberta
    whole = "".join(batch)
    cuts = sorted(rng.sample(range(len(whole) + 1), min(len(whole) + 1, rng.randint(0, 10))))
    chunks = [whole[a:b] for a, b in zip([0, *cuts], [*cuts, len(whole)])]
    assert list(ours.encode_iterable(chunks)) == hf_ids(hf, whole)
    data = "".join(batch).encode("utf-8")
    bounds = np.cumsum([0] + [len(text.encode("utf-8")) for text in batch])
    assert ours.encode_documents_utf8(data, bounds).tolist() == [i for text in batch for i in hf_ids(hf, text)]


def test_a_stream_one_character_at_a_time(roberta):
    ours, hf, _, _ = roberta
    text = "".join(random.Random(7).choice(PIECES) for _ in range(4000))
    assert list(ours.encode_iterable(list(text))) == hf_ids(hf, text)


def test_the_python_path_of_a_custom_pattern(roberta):
    # GPT-2's pattern and "|x" (x is a letter already): pre-tokenized by `regex`, the special tokens found by the
    # Python path (SpecialMatcher.final_matches), the same ids
    ours, hf, _, _ = roberta
    custom = Tokenizer(dict(ours.vocab), list(ours.merges), list(ours.special_tokens),
                       pattern=GPT2_PATTERN + "|x").with_special_lstrip(["<mask>"])
    assert custom._segmenter is None
    rng = random.Random(11)
    for _ in range(300):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 16)))
        assert custom.encode(text) == hf_ids(hf, text), ascii(text)
    text = "".join(rng.choice(PIECES) for _ in range(3000))
    assert list(custom.encode_iterable(text[k:k + 7] for k in range(0, len(text), 7))) == hf_ids(hf, text)


@pytest.mark.parametrize("num_processes", [1, 2])
def test_encode_file_and_shards_never_cut_before_the_white_space(roberta, tmp_path, monkeypatch, num_processes):
    # a chunk boundary at "<mask>" with white space before it left the white space to the chunk before
    from bpe_fast import file_encoding

    ours, hf, _, _ = roberta
    rng = random.Random(5)
    text = "".join(rng.choice(["Hello", " world", " ", "\n", "\u3000", " <mask>", "\n<mask>", "\t <mask>", "<s>",
                               "é", "."]) for _ in range(30_000))
    path = tmp_path / "text.txt"
    path.write_text(text, "utf-8")
    expected = hf_ids(hf, text)
    assert text.count(" <mask>") > 1000
    out = tmp_path / "ids.npy"
    encode_file(ours, path, out, num_processes=num_processes, chunk_bytes=500)
    assert np.load(out).tolist() == expected
    monkeypatch.setattr(file_encoding, "DEFAULT_CHUNK_BYTES", 500)      # the pieces of a compressed file
    gz = tmp_path / "text.txt.gz"
    gz.write_bytes(gzip.compress(text.encode("utf-8")))
    encode_files([gz], tmp_path / "shards", ours, num_processes=num_processes)
    assert np.load(tmp_path / "shards" / "text.npy").tolist() == expected


def test_offsets_leave_the_white_space_out(roberta):
    ours, hf, _, _ = roberta
    text = "Hello \t<mask> world"
    ids, offsets = ours.encode_with_offsets(text)
    assert ids.tolist() == hf_ids(hf, text)
    mask = ids.tolist().index(ours.special_tokens["<mask>"])
    assert offsets[mask] == text.index("<mask>")
    assert ours.decode(ids.tolist()) == "Hello<mask> world"


def test_kept_by_save_load_pickle_views_and_export(roberta, tmp_path):
    ours, hf, _, _ = roberta
    text = "a <mask> b  <mask>\n<s> <mask>"
    expected = hf_ids(hf, text)
    ours.save(tmp_path / "saved")
    assert json.loads((tmp_path / "saved" / "bpe_fast.json").read_text("utf-8"))["special_lstrip"] == ["<mask>"]
    loaded = Tokenizer.load(tmp_path / "saved")
    assert loaded.special_lstrip == {"<mask>"} and loaded.encode(text) == expected
    assert pickle.loads(pickle.dumps(ours)).encode(text) == expected
    view = ours.restricted_to(frozenset(["<mask>"]))
    assert view.special_lstrip == {"<mask>"} and view.encode(" <mask>") == [ours.special_tokens["<mask>"]]
    assert ours.restricted_to(frozenset(["<s>"])).special_lstrip == frozenset()
    ours.export_hf(tmp_path / "again.json")
    again = json.loads((tmp_path / "again.json").read_text("utf-8"))
    assert [e["content"] for e in again["added_tokens"] if e["lstrip"]] == ["<mask>"]
    assert tokenizers.Tokenizer.from_file(str(tmp_path / "again.json")).encode(
        text, add_special_tokens=False).ids == expected
    assert Tokenizer.from_hf(tmp_path / "again.json").encode(text) == expected
    # transformers' folder: tokenizer_config.json's added tokens as tokenizer.json's (transformers adds one again
    # where they differ, which dropped <mask>'s lstrip: "a <mask>" became [a, " ", <mask>]; helper-109)
    ours.export_hf_dir(tmp_path / "folder")
    config = json.loads((tmp_path / "folder" / "tokenizer_config.json").read_text("utf-8"))
    document = json.loads((tmp_path / "folder" / "tokenizer.json").read_text("utf-8"))
    assert config["added_tokens_decoder"] == {str(e["id"]): {k: v for k, v in e.items() if k != "id"}
                                              for e in document["added_tokens"]}
    assert config["added_tokens_decoder"][str(ours.special_tokens["<mask>"])]["lstrip"] is True


def test_what_cannot_take_the_white_space_is_refused(roberta, tmp_path):
    ours, _, doc, _ = roberta
    with pytest.raises(ValueError, match="tiktoken's do not"):
        ours.to_tiktoken()
    with pytest.raises(ValueError, match="with a normalizer"):
        ours.with_normalizer("NFC")
    with pytest.raises(ValueError, match="normalizes text to NFC"):
        ours.with_special_lstrip([]).with_normalizer("NFC").with_special_lstrip(["<mask>"])
    with pytest.raises(ValueError, match=r"'<x>' is not one of the special tokens"):
        ours.with_special_lstrip(["<x>"])
    with pytest.raises(TypeError, match="not one str"):
        ours.with_special_lstrip("<mask>")
    corpus = tmp_path / "c.txt"
    corpus.write_text("Hello world " * 100, "utf-8")
    with pytest.raises(ValueError, match="initial: special tokens .* take the white space"):
        train_bpe(corpus, ours.vocab_size + 10, num_processes=1, initial=ours)
    for flag in ("rstrip", "single_word"):
        bad = json.loads(json.dumps(doc))
        bad["added_tokens"][-1][flag] = True
        path = tmp_path / f"{flag}.json"
        path.write_text(json.dumps(bad), "utf-8")
        with pytest.raises(FormatError, match=rf"'<mask>' has {flag}: true, which is not supported"):
            Tokenizer.from_hf(path)
    nfc = dict(doc, normalizer={"type": "NFC"}, added_tokens=[dict(e, normalized=False) for e in doc["added_tokens"]])
    path = tmp_path / "nfc.json"
    path.write_text(json.dumps(nfc), "utf-8")
    with pytest.raises(FormatError, match="'<mask>' has lstrip: true, and the file normalizes text to NFC"):
        Tokenizer.from_hf(path)
    folder = tmp_path / "saved"
    ours.save(folder)
    config = json.loads((folder / "bpe_fast.json").read_text("utf-8"))
    (folder / "bpe_fast.json").write_text(json.dumps(dict(config, special_lstrip=["<nope>"]), indent=2), "utf-8")
    with pytest.raises(FormatError, match=r"bpe_fast\.json:\d+: \"special_lstrip\" must be a list of some of"):
        Tokenizer.load(folder)
    (folder / "bpe_fast.json").write_text(json.dumps(dict(config, normalizer="NFC"), indent=2), "utf-8")
    with pytest.raises(FormatError, match=r"bpe_fast\.json:\d+: \"special_lstrip\" with a \"normalizer\""):
        Tokenizer.load(folder)
    # special tokens sharing an id (o200k_harmony's kind): the lengths of their tokens in the text were found as if
    # no white space were taken (encode_with_offsets raised StopIteration; helper-109)
    harmony = Tokenizer.from_tiktoken({bytes([i]): i for i in range(256)}, "gpt2", {"<a>": 256, "<bb>": 256})
    with pytest.raises(ValueError, match="share an id"):
        harmony.with_special_lstrip(["<bb>"])


def test_a_token_of_the_other_pass_ending_in_white_space_is_refused(roberta, tmp_path):
    # HF finds the added tokens with normalized false first (<mask>, which takes the white space before it), then
    # those with normalized true in what is left: a "  " of the second pass never got the white space <mask> took,
    # bpe_fast's one pass matched it first ("a   <mask>": HF [a, <mask>], bpe_fast [a, "  ", <mask>]; helper-109)
    _, _, doc, _ = roberta
    n = max(e["id"] for e in doc["added_tokens"]) + 1
    for content, refused in [("  ", True), ("x\u3000", True), (" x", False)]:
        entry = {"id": n, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
                 "normalized": True, "special": False}
        path = tmp_path / "two.json"
        path.write_text(json.dumps(dict(doc, added_tokens=[*doc["added_tokens"], entry])), "utf-8")
        if refused:
            with pytest.raises(FormatError, match=re.escape(f"{content!r} has normalized: true and ends in white "
                                                            "space")):
                Tokenizer.from_hf(path)
        else:
            text = "a x <mask> x  <mask>"
            assert Tokenizer.from_hf(path).encode(text) == hf_ids(tokenizers.Tokenizer.from_file(str(path)), text)
        path.write_text(json.dumps(dict(doc, added_tokens=[*doc["added_tokens"], dict(entry, normalized=False)])),
                        "utf-8")        # both in the first pass: read, and as HF
        text = "a   <mask>" + content + "<mask>"
        assert Tokenizer.from_hf(path).encode(text) == hf_ids(tokenizers.Tokenizer.from_file(str(path)), text)


def test_white_space_is_unicodes_white_space():
    # the native rule (white_space_start) on each White_Space character, and on characters str.isspace takes that
    # are not White_Space (U+001C-001F), zero-width space and others; never before `lo`
    from bpe_fast._scan import white_space_run_start

    for ch in WHITE:
        data = ("x" + ch + ch).encode("utf-8")
        assert white_space_run_start(data) == 1, hex(ord(ch))
        middle = len(("x" + ch).encode("utf-8"))
        assert white_space_run_start(data, lo=middle) == middle
    for ch in ["\x1c", "\x1d", "\x1e", "\x1f", "\u200b", "\u180e", "\ufeff", "a", "\u3001", "\u2060"]:
        data = (" " + ch).encode("utf-8")
        assert white_space_run_start(data) == len(data), hex(ord(ch))
    assert white_space_run_start(b" \t\xe3\x80\x80", at=2) == 0 and white_space_run_start(b"") == 0
    with pytest.raises(ValueError):
        white_space_run_start(b"ab", lo=2, at=1)


@pytest.mark.parametrize("num_processes", [1, 2])
def test_no_cut_where_a_shorter_token_starts_a_longer_one_that_takes_white_space(tmp_path, monkeypatch,
                                                                                 num_processes):
    # "<m" (no lstrip) starts where "<mask>" (lstrip) does: its start was taken as a cut, and the space before
    # <mask> was encoded in the chunk before (helper-108)
    from bpe_fast import file_encoding

    tok = Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<m", "<mask>", "\u3000\u3000"]).with_special_lstrip(
        ["<mask>", "\u3000\u3000"])
    text = ("x" * 150 + " <mask>" + "y" * 150 + "\u3000\u3000\u3000" + "z" * 100 + " <m") * 20
    path = tmp_path / "text.txt"
    path.write_text(text, "utf-8")
    expected = oracle(tok, text)
    assert tok.encode(text) == expected and 32 not in expected[:160]
    encode_file(tok, path, tmp_path / "ids.npy", num_processes=num_processes, chunk_bytes=300)
    assert np.load(tmp_path / "ids.npy").tolist() == expected
    monkeypatch.setattr(file_encoding, "DEFAULT_CHUNK_BYTES", 300)
    gz = tmp_path / "text.txt.gz"
    gz.write_bytes(gzip.compress(text.encode("utf-8")))
    encode_files([gz], tmp_path / "shards", tok, num_processes=num_processes)
    assert np.load(tmp_path / "shards" / "text.npy").tolist() == expected


def test_a_token_listed_twice_has_its_last_entry_s_lstrip(roberta, tmp_path):
    # HF takes the last entry's flags: <mask> with lstrip first and without last is read under NFC (helper-108)
    _, _, doc, _ = roberta
    mask = doc["added_tokens"][-1]
    twice = dict(doc, normalizer={"type": "NFC"},
                 added_tokens=[dict(e, normalized=False) for e in doc["added_tokens"]] + [dict(mask, lstrip=False)])
    path = tmp_path / "twice.json"
    path.write_text(json.dumps(twice), "utf-8")
    ours = Tokenizer.from_hf(path)
    assert ours.special_lstrip == frozenset()
    text = "a <mask> b"
    assert ours.encode(text) == hf_ids(tokenizers.Tokenizer.from_file(str(path)), text)
