"""Hostile input: control characters, one long line, huge pre-tokens, unreachable tokens, surrogates.
(The same at full size — 200 MB lines, 100 million repeats — is in benchmarks/bench_hostile.py.)"""
import random
import warnings

import pytest

from bpe_fast import GPT2_PATTERN, GPT4_PATTERN, Tokenizer, train_bpe
from bpe_fast.patterns import O200K_PATTERN
from bpe_fast.chunking import chunk_boundaries
from bpe_fast.counts import count_file

from corpora import write
from encode_oracle import oracle_encode
from train_oracle import oracle_train_bpe

CONTROL = "".join(chr(c) for c in range(32)) + "\x7f\x85\xa0\u2028\u2029\ufeff"


def control_corpus(seed, n=4000):
    rng = random.Random(seed)
    words = ["nul\x00byte", "\x00\x00\x00", "bell\x07", "tab\tbed", "cr\rlf\n", "esc\x1b[0m", "del\x7f",
             "x\x85y", "a\u2028b", "\ufeffbom", "plain", "words", " ", "  "]
    return "".join(rng.choice(words) + rng.choice(CONTROL + " ") for _ in range(n))


@pytest.mark.parametrize("pattern", [GPT2_PATTERN, GPT4_PATTERN, O200K_PATTERN], ids=["gpt2", "gpt4", "o200k"])
def test_nul_and_control_characters_train_and_encode_exactly(tmp_path, pattern):
    text = control_corpus(1)
    path = write(tmp_path, text)
    vocab, merges = train_bpe(path, 400, [], num_processes=2, pattern=pattern, chunk_bytes=1000)
    assert (vocab, merges) == oracle_train_bpe(text, 400, [], pattern)
    tok = Tokenizer(vocab, merges, pattern=pattern)
    sample = control_corpus(2, 500)
    ids = tok.encode(sample)
    assert ids == oracle_encode(sample, vocab, merges, (), pattern)
    assert tok.decode(ids) == sample


def test_one_long_line_without_newline_or_special_token_is_still_cut(tmp_path):
    rng = random.Random(3)
    words = ["once", "upon", "a", "time", "there", "was", "a", "cat,", "42", "день", "猫", "🙂"]
    text = " ".join(rng.choice(words) for _ in range(400_000))      # ~2.3 MB, no "\n"
    assert "\n" not in text
    path = write(tmp_path, text)
    bounds = chunk_boundaries(path, [], GPT2_PATTERN, 256 << 10, min_chunks=2)
    assert len(bounds) - 1 >= 6                       # cut about every 256 KB: every process gets work
    whole = count_file(path, [], num_processes=1, chunk_bytes=1 << 30)
    assert count_file(path, [], num_processes=2, chunk_bytes=256 << 10) == whole
    # a pattern without known safe cuts: one chunk, and still the right counts
    assert chunk_boundaries(path, [], r"\S+|\s+", 256 << 10) == [0, len(text.encode())]


def test_a_two_million_letter_pre_token_trains_by_doubling(tmp_path):
    # "a" * 2**21 is one pre-token. Merging (a, a) leaves 2**20 "aa"; then (aa, aa) is the only pair; and so
    # on: 21 merges, each joining two copies of the previous token, then no pair is left.
    path = write(tmp_path, "a" * 2 ** 21)
    with pytest.warns(UserWarning, match="no pairs left after 21 merges"):
        vocab, merges = train_bpe(path, 1000, [], num_processes=2)
    assert merges == [(b"a" * 2 ** k, b"a" * 2 ** k) for k in range(21)]
    tok = Tokenizer(vocab, merges)
    assert tok.encode("a" * 2 ** 21) == [256 + 20]
    assert tok.encode("a" * (2 ** 21 + 3)) == [256 + 20, 256, 97]     # 2**21 + 2 + 1


def test_long_pre_tokens_encode_like_the_oracle(tmp_path):
    # pieces far over the encoder's heap threshold, with a real vocabulary
    rng = random.Random(5)
    text = " ".join("".join(rng.choice("abcab") for _ in range(rng.randint(1, 12))) for _ in range(3000))
    path = write(tmp_path, text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vocab, merges = train_bpe(path, 600, [])
    tok = Tokenizer(vocab, merges)
    for n in (129, 1000, 5000):
        piece = "".join(rng.choice("abcab") for _ in range(n))
        assert tok.encode(piece) == oracle_encode(piece, vocab, merges, (), GPT2_PATTERN)


def test_lone_surrogates_are_replaced_not_a_crash():
    tok = Tokenizer({i: bytes([i]) for i in range(256)}, [])
    assert tok.encode("a\ud800b\udfff") == tok.encode("a\ufffdb\ufffd")
    assert tok.decode(tok.encode("a\ud800b")) == "a\ufffdb"


def test_a_token_no_merge_reaches_is_kept_but_never_produced():
    # GPT-2's own vocab.json holds "<|endoftext|>", which no merge makes; such tokens load, decode, and
    # never come out of encode (tiktoken's rule: a part joins only through a merge's result).
    vocab = {i: bytes([i]) for i in range(256)}
    vocab.update({256: b"ab", 257: b"xyz"})
    tok = Tokenizer(vocab, [(b"a", b"b")])
    assert tok.encode("abxyz") == [256, ord("x"), ord("y"), ord("z")]
    assert tok.decode([257]) == "xyz"


def test_huge_or_bad_ids_in_decode_name_the_id():
    tok = Tokenizer({i: bytes([i]) for i in range(256)}, [])
    for bad in (256, -1, 2 ** 40):
        with pytest.raises(ValueError, match=str(bad)):
            tok.decode([1, bad])
