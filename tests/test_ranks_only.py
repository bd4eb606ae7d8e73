"""tiktoken's ranks that merging does not rebuild (Llama 3's: 678 of its tokens cannot be made by merging the
tokens ranked before them): as tiktoken, every ranked token is looked up whole and any two adjacent parts whose
bytes are a ranked token can join. Against tiktoken on small ranks built to have such a token."""
from __future__ import annotations

import json
import pickle
import random

import pytest

import bpe_fast
from bpe_fast import Tokenizer, train_bpe

tiktoken = pytest.importorskip("tiktoken", reason="tiktoken is not installed")

# "abcd" (rank 259): merging its bytes with the ranks below takes "bc" first and leaves a, bc, d, which no ranked
# token joins; tiktoken gives it to the pre-token "abcd" only. ".:.:" likewise (":." before ".:").
RANKS = {bytes([b]): b for b in range(256)} | {b"bc": 256, b"ab": 257, b"cd": 258, b"abcd": 259, b":.": 260,
                                                 b".:": 261, b".:.:": 262, b" ab": 263}
SPECIALS = {"<|end|>": 264}
PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""     # GPT-2's


@pytest.fixture(scope="module")
def pair():
    return (bpe_fast.Encoding("r", pat_str=PATTERN, mergeable_ranks=RANKS, special_tokens=SPECIALS),
            tiktoken.Encoding("r", pat_str=PATTERN, mergeable_ranks=RANKS, special_tokens=SPECIALS))


def test_the_tokens_merging_does_not_make_are_read(pair):
    ours, theirs = pair
    tok = ours.tokenizer
    assert tok.by_ranks_only and tok.native
    for text in ["abcd", "xabcd", " abcd", "abcd abcd", ".:.:", "x.:.:", ".:.:.:", "ab cd", "<|end|>abcd"]:
        assert ours.encode(text, allowed_special="all") == theirs.encode(text, allowed_special="all"), text
    assert ours.encode("abcd") == [259] and len(ours.encode("xabcd")) == 4
    # a split of each into two tokens ranked before it, where there is one (ab + cd; .: + .:)
    assert (b"ab", b"cd") in tok.merges and (b".:", b".:") in tok.merges


def test_random_text_as_tiktoken(pair):
    ours, theirs = pair
    rng = random.Random(3)
    pieces = ["a", "b", "c", "d", "ab", "cd", "abcd", " ", ".", ":", ".:", "x", "<|end|>", "\n"]
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 20))) for _ in range(2000)]
    for text in texts:
        assert ours.encode(text, allowed_special="all") == theirs.encode(text, allowed_special="all"), text
    assert ours.encode_ordinary_batch(texts) == theirs.encode_ordinary_batch(texts)
    for text in texts[:50]:
        stable, completions = ours.encode_with_unstable(text, allowed_special="all")
        expected = theirs.encode_with_unstable(text, allowed_special="all")
        assert (stable, sorted(completions)) == (expected[0], sorted(expected[1])), text
    assert ours._encode_single_piece("abcd") == theirs._encode_single_piece("abcd") == [259]
    whole = "".join(texts)
    assert list(ours.tokenizer.encode_iterable(whole[k:k + 9] for k in range(0, len(whole), 9))) == \
        theirs.encode(whole, allowed_special="all")


def test_kept_by_pickles_views_and_tiktoken_files_refused_where_merges_would_say_it(pair, tmp_path):
    tok = pair[0].tokenizer
    text = "xabcd abcd .:.:<|end|>"
    again = pickle.loads(pickle.dumps(tok))
    assert again.by_ranks_only and again.encode(text) == tok.encode(text)
    view = tok.restricted_to(frozenset())
    assert view.by_ranks_only and pickle.loads(pickle.dumps(view)).encode(text) == view.encode(text)
    tok.export_tiktoken(tmp_path / "r.tiktoken")
    back = Tokenizer.from_tiktoken(tmp_path / "r.tiktoken", "gpt2", SPECIALS)
    assert back.by_ranks_only and back.encode(text) == tok.encode(text)
    # saved as HF's file holds such ranks: bpe_fast.json says ignore_merges, merges.txt has every split
    tok.save(tmp_path / "saved")
    assert json.loads((tmp_path / "saved" / "bpe_fast.json").read_text("utf-8"))["ignore_merges"] is True
    loaded = Tokenizer.load(tmp_path / "saved")
    assert loaded.by_ranks_only and loaded.encode(text) == tok.encode(text) and loaded.tiktoken_ranks() == RANKS
    assert (loaded.special_tokens, loaded.pattern, loaded.unicode) == (tok.special_tokens, tok.pattern, tok.unicode)
    # HF's file holds such ranks as transformers' TikTokenConverter writes Llama 3's: ignore_merges and every split
    tok.export_hf(tmp_path / "tokenizer.json")
    model = json.loads((tmp_path / "tokenizer.json").read_text("utf-8"))["model"]
    # every way of writing each token as two, by rank (by hand: "abcd" is only ab + cd, " ab" only " " + ab)
    assert model["ignore_merges"] is True
    assert model["merges"] == ["b c", "a b", "c d", "ab cd", ": .", ". :", ".: .:", "Ġ ab"]
    back = Tokenizer.from_hf(tmp_path / "tokenizer.json")
    assert back.by_ranks_only and back.encode(text) == tok.encode(text)
    corpus = tmp_path / "c.txt"
    corpus.write_text("abcd " * 100, "utf-8")
    with pytest.raises(ValueError, match="initial: the tokenizer's ranks hold tokens that merging does not make"):
        train_bpe(corpus, tok.vocab_size + 5, num_processes=1, initial=tok)
    # the ranks of OpenAI's encodings are rebuilt by merging: no such tokenizer there
    assert not Tokenizer.from_tiktoken({bytes([b]): b for b in range(256)} | {b"ab": 256}, "gpt2").by_ranks_only


def test_what_the_whole_lookup_cannot_hold_or_merges_cannot_say_is_refused(tmp_path):
    # helper-111: a token longer than the whole-piece table's longest (256 bytes) that merging does not make was
    # merged, not looked up ([97] * 300 where tiktoken gives [256]); such ranks are refused, as before
    from bpe_fast import compression_curve
    from bpe_fast._encode import MAX_WHOLE_PIECE

    long = b"a" * (MAX_WHOLE_PIECE + 44)
    with pytest.raises(ValueError, match=r"\(300 bytes, rank 256\) is not what merging its bytes by the ranks gives, "
                                         "and is longer than the 256 bytes of a pre-token bpe_fast looks up whole"):
        Tokenizer.from_tiktoken({bytes([b]): b for b in range(256)} | {long: 256}, r"\S+|\s+")
    # a longer token that merging makes is merged (not looked up): read, beside a short one merging does not make
    doubling = {b"a" * (2 ** k): 264 + k for k in range(1, 10)}         # aa, aaaa, ..., 512 a's
    ranks = RANKS | doubling
    ours = Tokenizer.from_tiktoken(ranks, PATTERN, SPECIALS)
    theirs = tiktoken.Encoding("r", pat_str=PATTERN, mergeable_ranks=ranks, special_tokens=SPECIALS)
    assert ours.by_ranks_only
    for text in ["a" * 512, "a" * 700 + " abcd", "abcd" * 3, "a" * 513]:
        assert ours.encode(text) == theirs.encode(text), text[:20]
    assert ours.encode("a" * 512) == [273]
    # the compression curve cuts the vocabulary by the merges, which do not say how such tokens are made
    tok = Tokenizer.from_tiktoken(RANKS, PATTERN, SPECIALS)
    with pytest.raises(ValueError, match="its size cannot be cut by its merges"):
        compression_curve(tok, ["abcd abcd"])


def test_a_view_pickles_and_exports_its_ranks_not_the_other_special_tokens():
    # helper-111: the view's ranks were every id but its own special tokens', the others' bytes among them
    tok = Tokenizer.from_tiktoken(RANKS, PATTERN, SPECIALS | {"<|b|>": 265})
    view = tok.restricted_to(frozenset(["<|end|>"]))
    text = "x <|b|>abcd"
    assert view.tiktoken_ranks() == tok.tiktoken_ranks() == RANKS
    assert pickle.loads(pickle.dumps(view)).encode(text) == view.encode(text)
    assert view.to_tiktoken().encode(text, disallowed_special=()) == view.encode(text)
    with pytest.raises(ValueError, match="not by_ranks_only"):
        Tokenizer.from_tiktoken({bytes([b]): b for b in range(256)}, "gpt2").tiktoken_ranks()


class Noted(Tokenizer):
    pass


def test_a_subclass_keeps_its_attributes_through_a_pickle():
    tok = Noted.from_tiktoken(RANKS, PATTERN, SPECIALS)
    tok.note = "kept"
    again = pickle.loads(pickle.dumps(tok))
    assert type(again) is Noted and again.note == "kept" and again.by_ranks_only


def test_hf_reads_the_exported_file_as_tiktoken_reads_the_ranks(pair, tmp_path):
    tokenizers = pytest.importorskip("tokenizers", reason="HF tokenizers is not installed")
    ours, theirs = pair
    path = tmp_path / "tokenizer.json"
    ours.tokenizer.export_hf(path)
    hf = tokenizers.Tokenizer.from_file(str(path))
    rng = random.Random(5)
    pieces = ["a", "b", "c", "d", "ab", "cd", "abcd", " ", ".", ":", ".:", "x", "<|end|>", "\n", " ab"]
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 20))) for _ in range(2000)]
    for text, encoding in zip(texts, hf.encode_batch(texts, add_special_tokens=False)):
        assert encoding.ids == theirs.encode(text, allowed_special="all"), text


# ------------------------------------------------------------------ HF files of such ranks (Llama 3's tokenizer.json)

def converted_doc(ranks, specials, pattern):
    """An HF tokenizer.json of tiktoken's ranks as transformers' TikTokenConverter makes Llama 3's (the oracle of
    the form, written here from its description): the ranks as the vocab, every way of writing a token as two
    ranked tokens as a merge, by the rank of the token made, then of the left and the right part; ignore_merges;
    the special tokens as added tokens outside the vocab."""
    from bpe_fast.formats import token_to_str

    merges = []
    for token, rank in sorted(ranks.items(), key=lambda item: item[1]):
        splits = [(token[:i], token[i:]) for i in range(1, len(token)) if token[:i] in ranks and token[i:] in ranks]
        merges += sorted(splits, key=lambda split: (ranks[split[0]], ranks[split[1]]))
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for s, i in specials.items()],
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": True,
                  "vocab": {token_to_str(t): r for t, r in ranks.items()},
                  "merges": [[token_to_str(a), token_to_str(b)] for a, b in merges]},
    }


def write_json(path, doc):
    path.write_text(json.dumps(doc, ensure_ascii=False), "utf-8")
    return path


def random_texts(seed, n=1500):
    rng = random.Random(seed)
    pieces = ["a", "b", "c", "d", "ab", "cd", "abcd", " ", ".", ":", ".:", ".:.:", "x", "<|end|>", "\n", " ab", "é"]
    return ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 20))) for _ in range(n)]


@pytest.mark.parametrize("native", [True, False])
def test_a_converted_file_is_read_as_its_ranks(pair, tmp_path, monkeypatch, native):
    tokenizers = pytest.importorskip("tokenizers", reason="HF tokenizers is not installed")
    from bpe_fast import hf as hf_module

    path = write_json(tmp_path / "tokenizer.json", converted_doc(RANKS, SPECIALS, PATTERN))
    if not native:      # the Python reader, which any file the native one declines goes through
        monkeypatch.setattr(hf_module, "_read_plain", lambda *args, **kwargs: None)
    tok = Tokenizer.from_hf(path)
    hf = tokenizers.Tokenizer.from_file(str(path))
    theirs = pair[1]
    assert tok.by_ranks_only and tok.tiktoken_ranks() == RANKS and tok.special_tokens == SPECIALS
    texts = random_texts(6)
    assert tok.encode_batch(texts) == [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)] == \
        [theirs.encode(t, allowed_special="all") for t in texts]
    assert tok.encode("abcd") == [259] and tok.encode(".:.:") == [262]
    # read_tokenizer_json gives the file's own merge list
    assert len(hf_module.read_tokenizer_json(path)[1]) == len(converted_doc(RANKS, SPECIALS, PATTERN)["model"]["merges"])


def test_transformers_converter_file_is_read_as_its_ranks(pair, tmp_path):
    tokenizers = pytest.importorskip("tokenizers", reason="HF tokenizers is not installed")
    pytest.importorskip("transformers", reason="transformers is not installed")
    from transformers.convert_slow_tokenizer import TikTokenConverter

    pair[0].tokenizer.export_tiktoken(tmp_path / "r.tiktoken")
    converted = TikTokenConverter(str(tmp_path / "r.tiktoken"), pattern=PATTERN,
                                  extra_special_tokens=list(SPECIALS)).converted()
    converted.save(str(tmp_path / "tokenizer.json"))
    tok = Tokenizer.from_hf(tmp_path / "tokenizer.json")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    assert tok.by_ranks_only and tok.special_tokens == SPECIALS
    texts = random_texts(7)
    assert tok.encode_batch(texts) == [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)] == \
        [pair[1].encode(t, allowed_special="all") for t in texts]


@pytest.mark.parametrize("change, message", [
    ("drop", r"ignore_merges: true, but the file is not tiktoken's ranks .*: the merges leave out ways of writing a "
             r"token as two, as 'ab' \+ 'cd' for 'abcd'; read as a merge list, merge"),
    ("swap", r"ignore_merges: true, but .*: merge 3 makes id 258, after merge 2 made id 259"),
    ("added", r"ignore_merges: true, but .*: merge 2 takes or makes 'cd', an added token"),
])
def test_a_file_with_ignore_merges_that_is_not_ranks_is_refused_saying_why(tmp_path, change, message):
    doc = converted_doc(RANKS, SPECIALS, PATTERN)
    merges = doc["model"]["merges"]
    k = merges.index(["ab", "cd"])
    if change == "drop":
        del merges[k]
    elif change == "swap":
        merges[k - 1], merges[k] = merges[k], merges[k - 1]
    else:       # an added token that is a model token (helper-112: the message did not name it)
        doc["added_tokens"].append({"id": 258, "content": "cd", "single_word": False, "lstrip": False,
                                    "rstrip": False, "normalized": False, "special": True})
    path = write_json(tmp_path / "tokenizer.json", doc)
    with pytest.raises(bpe_fast.formats.FormatError, match=message) as info:
        Tokenizer.from_hf(path)
    assert str(info.value).startswith(str(path)) and "TikTokenConverter" in str(info.value)


def test_a_converted_file_with_a_token_too_long_to_look_up_is_refused_naming_it(tmp_path):
    ranks = RANKS | {b"ab" * 150: 264}          # 300 bytes, which merging ab's does not make (no longer halves)
    path = write_json(tmp_path / "tokenizer.json", converted_doc(ranks, {}, PATTERN))
    with pytest.raises(bpe_fast.formats.FormatError, match=r"\(300 bytes, rank 264\) is not what merging its bytes"):
        Tokenizer.from_hf(path)


def test_a_saved_folder_of_such_ranks_is_checked_on_load(tmp_path, monkeypatch):
    from bpe_fast import formats

    tok = Tokenizer.from_tiktoken(RANKS, PATTERN, SPECIALS)
    folder = tmp_path / "saved"
    monkeypatch.setattr(formats, "CACHE_MIN_TOKENS", 0)     # another tokenizer's folder, with its cache
    Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"ab"}, [(b"a", b"b")]).save(folder)
    assert (folder / formats.CACHE_FILE).exists()
    tok.save(folder)        # no cache: its tables are not what merging makes
    assert not (folder / formats.CACHE_FILE).exists() and Tokenizer.load(folder).encode("abcd") == [259]
    text = "xabcd abcd .:.:<|end|>"
    with monkeypatch.context() as patch:    # the Python readers, which read what the native ones decline
        patch.setattr(formats, "read_gpt2_arrays", lambda *args: None)
        assert Tokenizer.load(folder).encode(text) == tok.encode(text)
    merges = (folder / "merges.txt").read_text("utf-8").splitlines()
    assert merges == ["b c", "a b", "c d", "ab cd", ": .", ". :", ".: .:", "Ġ ab"]      # by hand, as above
    (folder / "merges.txt").write_text("\n".join(merges[:3] + merges[4:]) + "\n", "utf-8")
    with pytest.raises(formats.FormatError, match=r'merges.txt: bpe_fast.json says "ignore_merges", but .* as '
                                                  r"'ab' \+ 'cd' for 'abcd'"):
        Tokenizer.load(folder)
    config = json.loads((folder / "bpe_fast.json").read_text("utf-8"))
    config["ignore_merges"] = "yes"
    (folder / "bpe_fast.json").write_text(json.dumps(config, indent=2), "utf-8")
    with pytest.raises(formats.FormatError, match=r'bpe_fast.json:\d+: "ignore_merges": must be true or false'):
        Tokenizer.load(folder)


def test_a_view_saves_and_exports_its_ranks_and_its_own_special_tokens_only(tmp_path):
    # helper-112: the view's vocab holds the special tokens it leaves out, which save and export_hf wrote as
    # tokens; read back, they were ranked tokens a whole pre-token is looked up as ("<|b|>" gave 261)
    tokenizers = pytest.importorskip("tokenizers", reason="HF tokenizers is not installed")
    tok = Tokenizer.from_tiktoken(RANKS, r"\S+|\s+", SPECIALS | {"<|b|>": 265})
    view = tok.restricted_to(frozenset(["<|end|>"]))
    text = "<|b|> abcd <|end|>"
    expected = view.encode(text)
    assert expected[:5] == list(b"<|b|>") and expected[-1] == 264
    view.save(tmp_path / "view")
    assert Tokenizer.load(tmp_path / "view").encode(text) == expected
    view.export_hf(tmp_path / "view.json")
    assert tokenizers.Tokenizer.from_file(str(tmp_path / "view.json")).encode(
        text, add_special_tokens=False).ids == expected == Tokenizer.from_hf(tmp_path / "view.json").encode(text)


def test_a_saved_folder_of_such_ranks_is_refused_by_a_reader_of_version_1(tmp_path):
    # helper-112: bpe_fast before it ignored "ignore_merges" and read vocab.json and merges.txt as a merge list
    # (other ids, when that list passed its checks): the folder's version is 2, which such a reader refuses
    ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256, b"xyz": 257}      # "xyz": no split at all
    tok = Tokenizer.from_tiktoken(ranks, r"\S+|\s+")
    assert tok.by_ranks_only
    tok.save(tmp_path / "r")
    config = json.loads((tmp_path / "r" / "bpe_fast.json").read_text("utf-8"))
    assert (config["version"], config["ignore_merges"]) == (2, True)
    assert Tokenizer.load(tmp_path / "r").encode("xyz ab") == [257, 32, 256]
    config["ignore_merges"] = False     # as a version-1 reader reads it
    (tmp_path / "r" / "bpe_fast.json").write_text(json.dumps(config), "utf-8")
    with pytest.raises(bpe_fast.formats.FormatError, match=r'expected "format": "bpe_fast" and "version": 1, got '
                                                           r"'bpe_fast' and 2"):
        Tokenizer.load(tmp_path / "r")
