"""tiktoken's ranks that merging does not rebuild (Llama 3's: 678 of its tokens cannot be made by merging the
tokens ranked before them): as tiktoken, every ranked token is looked up whole and any two adjacent parts whose
bytes are a ranked token can join. Against tiktoken on small ranks built to have such a token."""
from __future__ import annotations

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
    with pytest.raises(ValueError, match="merges.txt cannot say that; keep its .tiktoken file"):
        tok.save(tmp_path / "saved")
    assert not (tmp_path / "saved").exists()
    with pytest.raises(ValueError, match="ignore_merges and every split"):
        tok.export_hf(tmp_path / "tokenizer.json")
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
    with pytest.raises(ValueError, match="cannot be made by merging tokens of lower rank"):
        Tokenizer.from_tiktoken({bytes([b]): b for b in range(256)} | {long: 256}, r"\S+|\s+")
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
