"""Found by an adversarial hunt on the drop-in surfaces (bpe_fast.Encoding against tiktoken.Encoding with the
same ranks, Tokenizer against CS336's interface): one test a bug, each failing before its fix."""
import pytest

from bpe_fast import Encoding

tiktoken = pytest.importorskip("tiktoken")


def small_ranks():
    return {bytes([b]): b for b in range(256)} | {b"ab": 256}


@pytest.mark.parametrize("pat_str", ["gpt2", "cl100k", "o200k_base", "p50k_edit"])
def test_a_pat_str_spelling_a_pattern_name_is_a_regex(pat_str):
    # Encoding's pat_str is a regex, as tiktoken's: "gpt2" matches the four characters "gpt2" and nothing else.
    # It was handed on as bpe_fast's pattern name, so the text was cut with GPT-2's pattern: every character
    # encoded where tiktoken skips all but the matches.
    text = "ab gpt2 cl100k o200k_base p50k_edit"
    ours = Encoding("x", pat_str=pat_str, mergeable_ranks=small_ranks(), special_tokens={})
    theirs = tiktoken.Encoding("x", pat_str=pat_str, mergeable_ranks=small_ranks(), special_tokens={})
    assert ours.encode(text) == theirs.encode(text) == list(pat_str.encode())
    assert ours.encode_batch([text, "ab"]) == theirs.encode_batch([text, "ab"])
    assert ours._pat_str == pat_str
