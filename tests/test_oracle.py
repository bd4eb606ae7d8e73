"""Tests of the plain-Python training oracle itself: hand-derived examples and the CS336 reference fixtures."""
from collections import Counter

from bpe_fast.patterns import GPT2_PATTERN
from corpora import EOT, FIXTURES, gpt2_unicode_to_byte
from train_oracle import oracle_count_pretokens, oracle_train_bpe


def merges_of(text, vocab_size, special_tokens=(), pattern=GPT2_PATTERN):
    return oracle_train_bpe(text, vocab_size, list(special_tokens), pattern)[1]


# --- worked examples, derived by hand ---------------------------------------------------------------------


def test_byte_mapping_is_a_bijection():
    table = gpt2_unicode_to_byte()
    assert sorted(table.values()) == list(range(256))
    assert table["Ġ"] == ord(" ") and table["Ċ"] == ord("\n") and table["!"] == ord("!")


def test_vocab_layout_bytes_then_specials_then_merges():
    vocab, merges = oracle_train_bpe("ab ab", 256 + 2 + 1, ["<|b|>", "<|a|>"], GPT2_PATTERN)
    assert [vocab[i] for i in range(256)] == [bytes([i]) for i in range(256)]
    assert vocab[256] == b"<|b|>" and vocab[257] == b"<|a|>"  # the given order, not sorted
    # "ab ab" -> pre-tokens "ab", " ab": (a,b) x2, (' ',a) x1 -> merge (a,b) is id 258.
    assert merges == [(b"a", b"b")] and vocab[258] == b"ab"
    assert len(vocab) == 259


def test_aaa_counts_the_pair_twice():
    # "aaa bc" -> pre-tokens "aaa", " bc". "aaa" holds (a,a) at positions 0 and 1: count 2.
    # (' ',b) and (b,c) count 1 each. Were (a,a) counted once, the tie would go to the greatest pair (b,c).
    assert merges_of("aaa bc", 257) == [(b"a", b"a")]


def test_aaa_merges_left_to_right_without_overlap():
    # "aaa": merge 1 (a,a) -> [aa, a]  (not [a, aa], not [aa, aa]); the only pair left is (aa, a).
    assert merges_of("aaa", 300) == [(b"a", b"a"), (b"aa", b"a")]
    # "aaaa": (a,a) x3 -> [aa, aa]; then (aa, aa).
    assert merges_of("aaaa", 300) == [(b"a", b"a"), (b"aa", b"aa")]
    # "aaaaa": (a,a) x4 -> [aa, aa, a]; pairs (aa,aa) x1, (aa,a) x1 tie -> greatest second element: (aa, aa)
    # -> [aaaa, a]; then (aaaa, a).
    assert merges_of("aaaaa", 300) == [(b"a", b"a"), (b"aa", b"aa"), (b"aaaa", b"a")]


def test_tie_goes_to_the_greatest_pair():
    # "ab cd" -> "ab", " cd": (a,b), (' ',c), (c,d) all count 1; the greatest is (c,d).
    # Then (a,b) and (' ',cd) tie at 1: b"a" > b" ", so (a,b); then (' ', cd).
    assert merges_of("ab cd", 300) == [(b"c", b"d"), (b"a", b"b"), (b" ", b"cd")]
    # Frequency wins over order: "ab ab cd" has (a,b) x2.
    assert merges_of("ab ab cd", 257) == [(b"a", b"b")]


def test_tie_compares_tuples_not_concatenations():
    # "abc\nabc\nab\naz\naz" -> pre-tokens "abc" x2, "ab", "az" x2 (and "\n" x4, which hold no pair).
    # Step 1: (a,b) 3, (b,c) 2, (a,z) 2 -> (a,b).
    # Step 2: [ab,c] x2, [ab], [a,z] x2: (ab,c) 2 and (a,z) 2 tie. As tuples (b"ab", b"c") > (b"a", b"z")
    # because b"ab" > b"a"; compared as concatenations, "az" > "abc" would pick (a,z) instead.
    # Step 3: (a,z).
    assert merges_of("abc\nabc\nab\naz\naz", 300) == [(b"a", b"b"), (b"ab", b"c"), (b"a", b"z")]
    # Tie on the first element: the greatest second element wins. "xa xb" -> "xa", " xb":
    # (x,a) 1, (' ',x) 1, (x,b) 1 -> (x,b); then (x,a) 1, (' ',xb) 1 -> (x,a) since b"x" > b" ".
    assert merges_of("xa xb", 258) == [(b"x", b"b"), (b"x", b"a")]


def test_special_token_is_never_merged_across_or_counted():
    # With the special token, "a<|eot|>b" is the pieces "a" and "b": no pair at all, so no merge,
    # however large vocab_size is.
    assert merges_of("a<|eot|>b", 1000, ["<|eot|>"]) == []
    # Without it, "<|", "eot", "|>" are ordinary pre-tokens and get merged.
    assert merges_of("a<|eot|>b", 1000) != []
    # "xy<|eot|>xy<|eot|>": only (x,y) x2 is counted; the special's bytes never are.
    vocab, merges = oracle_train_bpe("xy<|eot|>xy<|eot|>", 1000, ["<|eot|>"], GPT2_PATTERN)
    assert merges == [(b"x", b"y")] and len(vocab) == 256 + 1 + 1


def test_longest_special_token_wins():
    # Specials "ab" and "abc": in "abcd" the longest, "abc", is cut out, leaving "d".
    # Were "ab" tried first, the piece left would be "cd".
    assert oracle_count_pretokens("abcd", ["ab", "abc"], GPT2_PATTERN) == Counter({b"d": 1})
    assert oracle_count_pretokens("abcd", ["abc", "ab"], GPT2_PATTERN) == Counter({b"d": 1})


def test_count_pretokens():
    text = "the cat<|endoftext|>the dog, the cat\n"
    assert oracle_count_pretokens(text, [EOT], GPT2_PATTERN) == Counter(
        {b"the": 2, b" cat": 2, b" dog": 1, b",": 1, b" the": 1, b"\n": 1}
    )
    # Pre-tokens are counted as UTF-8 bytes.
    assert oracle_count_pretokens("héllo", [], GPT2_PATTERN) == Counter({"héllo".encode(): 1})


def test_stops_when_no_pair_is_left():
    vocab, merges = oracle_train_bpe("ab", 10_000, [], GPT2_PATTERN)
    assert merges == [(b"a", b"b")] and len(vocab) == 257
    vocab, merges = oracle_train_bpe("", 10_000, [EOT], GPT2_PATTERN)
    assert merges == [] and vocab == {**{i: bytes([i]) for i in range(256)}, 256: EOT.encode()}


# --- the CS336 reference --------------------------------------------------------------------------------


def test_matches_cs336_reference_on_corpus_en(cs336_reference):
    text = (FIXTURES / "corpus.en").read_bytes().decode("utf-8")
    vocab, merges = oracle_train_bpe(text, 500, [EOT], GPT2_PATTERN)
    expected_merges, expected_tokens = cs336_reference
    assert merges == expected_merges
    assert len(vocab) == 500
    assert set(vocab.values()) == expected_tokens
