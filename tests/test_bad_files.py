"""Bad tokenizer files: each is refused with a FormatError naming the file and line, as the Tokenizer
constructor refuses the same vocabulary."""
import json

import pytest

from bpe_fast import Tokenizer
from bpe_fast.formats import FormatError, read_vocab, token_to_str

BYTES = {i: bytes([i]) for i in range(256)}


def _vocab_lines(entries):
    """vocab.json text with one member a line: member k (of entries, (str, id) pairs) on line k + 2."""
    return "{\n" + ",\n".join(f"{json.dumps(key)}: {i}" for key, i in entries) + "\n}\n"


@pytest.fixture
def gpt2_files(tmp_path):
    def write(extra):
        entries = [(token_to_str(t), i) for i, t in BYTES.items()] + [("a" + "b", 256)] + extra
        (tmp_path / "vocab.json").write_text(_vocab_lines(entries), encoding="utf-8")
        (tmp_path / "merges.txt").write_text("#version: 0.2\na b\n", encoding="utf-8")
        return tmp_path / "vocab.json", tmp_path / "merges.txt"
    return write


def test_constructor_refuses_the_empty_token():
    with pytest.raises(ValueError, match="vocab token 257 is empty"):
        Tokenizer(BYTES | {256: b"ab", 257: b""}, [(b"a", b"b")])


def test_vocab_json_with_the_empty_token_is_refused_naming_its_line(gpt2_files, tmp_path):
    # 256 bytes on lines 2..257, "ab" on line 258, "" on line 259: loaded, it was a token no text encodes to,
    # which the constructor refuses, and which reached bpe_fast.curve as a token of no bytes
    vocab_path, merges_path = gpt2_files([("", 257)])
    expected = f"{vocab_path}:259: the empty token \"\" has id 257"
    with pytest.raises(FormatError) as info:
        Tokenizer.from_files(vocab_path, merges_path)
    assert str(info.value).startswith(expected)
    with pytest.raises(FormatError) as info:
        read_vocab(vocab_path)
    assert str(info.value).startswith(expected)
    (tmp_path / "bpe_fast.json").unlink(missing_ok=True)
    with pytest.raises(FormatError) as info:
        Tokenizer.load(tmp_path)
    assert str(info.value).startswith(expected)


def test_tokenizer_json_with_the_empty_token_is_refused_naming_its_line(tmp_path):
    path = tmp_path / "tokenizer.json"
    Tokenizer(BYTES | {256: b"ab"}, [(b"a", b"b")]).export_hf(path)
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["model"]["vocab"] = {"": 257} | doc["model"]["vocab"]
    text = json.dumps(doc, indent=1)
    path.write_text(text, encoding="utf-8")
    line = text[:text.index('"vocab"')].count("\n") + 2         # the first member of "vocab"
    with pytest.raises(FormatError) as info:
        Tokenizer.from_hf(path)
    assert str(info.value).startswith(f"{path}:{line}: the empty token \"\" has id 257")
