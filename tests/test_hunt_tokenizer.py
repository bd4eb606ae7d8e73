"""Tokenizer: constructor, files, save/load and exports with awkward inputs (found by review).

Expected values come from the oracle (encode_oracle), HF tokenizers, tiktoken, or by hand."""
import pytest

from bpe_fast import Tokenizer

BYTES = {i: bytes([i]) for i in range(256)}


def test_export_tiktoken_refuses_special_tokens_tiktoken_would_match_otherwise(tmp_path):
    """export_tiktoken is refused "as to_tiktoken is": with "<|end" and "<|endoftext|>", tiktoken (given the
    ranks file and these special tokens, as the docstring says to build it) finds "<|end" first in
    "<|endoftext|>", where the tokenizer gives the one id of "<|endoftext|>". to_tiktoken refused it;
    export_tiktoken wrote the file."""
    tiktoken = pytest.importorskip("tiktoken", reason="tiktoken is not installed")
    specials = {"<|end": 256, "<|endoftext|>": 257}
    enc = tiktoken.Encoding("x", pat_str=r"\S+|\s+", mergeable_ranks={v: i for i, v in BYTES.items()},
                            special_tokens=specials)
    if enc.encode("<|endoftext|>", allowed_special="all") == [257]:
        pytest.skip("this tiktoken tries the longer special token first")
    tok = Tokenizer(BYTES, [], list(specials))
    assert tok.encode("<|endoftext|>") == [257]
    with pytest.raises(ValueError, match=r"special tokens '<\|end' and '<\|endoftext\|>'"):
        tok.to_tiktoken()
    with pytest.raises(ValueError, match=r"special tokens '<\|end' and '<\|endoftext\|>'"):
        tok.export_tiktoken(tmp_path / "out.tiktoken")
    assert not (tmp_path / "out.tiktoken").exists()
