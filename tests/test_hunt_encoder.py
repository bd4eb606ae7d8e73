"""Found by an adversarial hunt on the encoder and decoder against tiktoken 0.14 with the same ranks: each test
failed before its fix; expected values come from tiktoken itself."""
import pytest

from bpe_fast import Encoding

tiktoken = pytest.importorskip("tiktoken")

BYTE_RANKS = {bytes([b]): b for b in range(256)}


@pytest.mark.parametrize("specials, short, long", [
    ({"<|a|>": 256, "<|a|>b": 257}, "<|a|>", "<|a|>b"),
    ({"<|a|><|a|>": 256, "<|a|>": 257}, "<|a|>", "<|a|><|a|>"),
    ({"<|x|>": 256, "ab": 257, "abc": 258}, "ab", "abc"),
])
def test_special_tokens_one_the_start_of_another_are_refused(specials, short, long):
    # tiktoken finds special tokens with one alternation in the order of its (Fx) hash map, the first that
    # matches where a special token starts: of "<|a|>" and "<|a|>b" it found "<|a|>" in "<|a|>b" ([256, 98]),
    # bpe_fast the longest ([257]); and with disallowed_special=() the one it finds first, when not allowed,
    # hides the other there. Encoding accepted such special tokens and gave other ids than tiktoken.
    with pytest.raises(ValueError, match=f"{long!r}.*starts with.*{short!r}".replace("|", r"\|")):
        Encoding("x", pat_str=r"\w+|\W", mergeable_ranks=BYTE_RANKS, special_tokens=specials)


@pytest.mark.parametrize("text", ["xabc", "ababa", "<|a|>b|>", "x<|a|>abcabab|>", "aabab|>"])
def test_special_tokens_that_overlap_without_one_starting_another_are_tiktokens(text):
    # the leftmost wins, whatever tiktoken's hash order: these stay accepted, with tiktoken's ids
    specials = {"xab": 256, "abc": 257, "aba": 258, "<|a|>": 259, "|>b": 260, "b|>": 261}
    ours = Encoding("x", pat_str=r"\w+|\W", mergeable_ranks=BYTE_RANKS, special_tokens=specials)
    theirs = tiktoken.Encoding("x", pat_str=r"\w+|\W", mergeable_ranks=BYTE_RANKS, special_tokens=specials)
    for allowed in ["all", {"abc"}, {"aba", "b|>"}, {"<|a|>"}]:
        assert ours.encode(text, allowed_special=allowed, disallowed_special=()) == \
            theirs.encode(text, allowed_special=allowed, disallowed_special=())
