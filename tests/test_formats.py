"""bpe_fast.formats: GPT-2's byte mapping, vocab.json and merges.txt, and the tokenizer folder."""
import json
import os
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bpe_fast
from bpe_fast import formats as F
from bpe_fast.formats import FormatError
from corpora import FIXTURES


# ------------------------------------------------------------------------------------- the byte mapping

def test_byte_mapping_worked_example():
    # printable latin-1 bytes stand for themselves; the other 68 take chr(256), chr(257), ... in order
    m = F.bytes_to_unicode()
    assert m[ord("!")] == "!" and m[ord("~")] == "~" and m[0xA1] == "¡" and m[0xFF] == "ÿ"
    assert m[0] == chr(256) and m[1] == chr(257) and m[32] == "Ġ" and m[ord("\n")] == "Ċ"
    assert m[0x7F] == chr(256 + 33) and m[0xAD] == chr(256 + 67)
    assert len(set(m.values())) == 256
    assert all(not c.isspace() and c.isprintable() for c in m.values())
    assert F.unicode_to_bytes() == {c: b for b, c in m.items()}


@given(st.binary())
def test_token_str_round_trip(token):
    assert F.str_to_token(F.token_to_str(token)) == token


@given(st.lists(st.binary(max_size=6), max_size=20))
def test_whole_lists_map_as_one_token_at_a_time(tokens):
    strs = F.tokens_to_strs(tokens)
    assert strs == [F.token_to_str(t) for t in tokens]
    assert F.strs_to_tokens(strs) == tokens


def test_strs_to_tokens_names_the_first_bad_character():
    with pytest.raises(ValueError, match=r"character ' ' \(U\+0020\) is not in GPT-2's byte mapping"):
        F.strs_to_tokens(["Ġa", "b c", "d\te"])


@pytest.mark.parametrize("text", [" ", "a b", "\x00", "\u00ad", "\u0144", "x\n"])
def test_str_to_token_rejects_characters_outside_the_mapping(text):
    with pytest.raises(ValueError, match="not in GPT-2's byte mapping"):
        F.str_to_token(text)


def test_mapping_matches_gpt2_vocab():
    vocab = F.read_vocab(FIXTURES / "gpt2_vocab.json")
    # GPT-2's first 256 tokens are the single bytes (in the order of the mapping's characters)
    assert sorted(vocab[i] for i in range(256)) == [bytes([b]) for b in range(256)]
    assert vocab[50256] == b"<|endoftext|>"


# ------------------------------------------------------------------------------------- reading and writing

tokens = st.binary(min_size=1, max_size=8)


@settings(max_examples=50, deadline=None)
@given(st.lists(tokens, unique=True, max_size=40), st.lists(st.tuples(tokens, tokens), unique=True, max_size=40))
def test_write_read_round_trip(tmp_path_factory, token_list, merges):
    folder = tmp_path_factory.mktemp("rt")
    vocab = {i * 3 + 1: t for i, t in enumerate(token_list)}      # ids need not be contiguous
    F.write_vocab(folder / "vocab.json", vocab)
    F.write_merges(folder / "merges.txt", merges)
    assert F.read_vocab(folder / "vocab.json") == vocab
    assert F.read_merges(folder / "merges.txt") == merges
    assert sorted(os.listdir(folder)) == ["merges.txt", "vocab.json"]     # no temporary file left


# tokens whose written form is one merges.txt's reader looks at twice: the header's "#version", spaces, newlines
odd_tokens = st.one_of(tokens, st.sampled_from([b"#version", b"#version: 0.2", b"#v", b" ", b"\n", b"\r\n", b"\xff"]),
                       st.tuples(st.sampled_from([b"#version", b"#version:"]), st.binary(max_size=3)).map(b"".join))


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(odd_tokens, odd_tokens), unique=True, min_size=1, max_size=6))
def test_merges_of_odd_tokens_round_trip(tmp_path_factory, merges):
    path = tmp_path_factory.mktemp("rt") / "merges.txt"
    F.write_merges(path, merges)
    assert F.read_merges(path) == merges


def test_a_first_merge_that_starts_with_version_is_not_taken_for_the_header(tmp_path):
    # its line "#version x" was written first, and read back as the "#version" header: the merge was lost
    path = tmp_path / "merges.txt"
    F.write_merges(path, [(b"#version", b"x"), (b" ", b"a")])
    assert F.read_merges(path) == [(b"#version", b"x"), (b" ", b"a")]
    assert path.read_text(encoding="utf-8") == "#version: 0.2\n#version x\nĠ a\n"      # (HF's header)
    F.write_merges(path, [(b" ", b"a"), (b"#version", b"x")])      # only a first line is taken for the header
    assert path.read_text(encoding="utf-8") == "Ġ a\n#version x\n"
    assert F.read_merges(path) == [(b" ", b"a"), (b"#version", b"x")]


def test_gpt2_files_round_trip(tmp_path):
    vocab = F.read_vocab(FIXTURES / "gpt2_vocab.json")
    merges = F.read_merges(FIXTURES / "gpt2_merges.txt", vocab)
    assert len(vocab) == 50257 and len(merges) == 50000
    assert merges[0] == (b" ", b"t")
    F.write_vocab(tmp_path / "vocab.json", vocab)
    F.write_merges(tmp_path / "merges.txt", merges)
    assert F.read_vocab(tmp_path / "vocab.json") == vocab
    assert F.read_merges(tmp_path / "merges.txt", vocab) == merges
    # the same JSON object as GPT-2's file, and the same lines
    assert json.loads((tmp_path / "vocab.json").read_text()) == json.loads((FIXTURES / "gpt2_vocab.json").read_text())
    assert (tmp_path / "merges.txt").read_text(encoding="utf-8").split("\n")[:5] == \
        (FIXTURES / "gpt2_merges.txt").read_text(encoding="utf-8").split("\n")[:5]


def test_merges_header_blank_lines_and_crlf(tmp_path):
    path = tmp_path / "merges.txt"
    path.write_bytes("#version: 0.2\r\nĠ t\r\n\r\nh e\r\n".encode())
    assert F.read_merges(path) == [(b" ", b"t"), (b"h", b"e")]


# ------------------------------------------------------------------------------------- malformed files

@pytest.mark.parametrize("text, line, message", [
    ('{"a": 0,\n "b": 1,\n "c" 2}', 3, "bad JSON"),
    ('{"a": 0,\n "b": 1', 2, "bad JSON"),
    ("", 1, "bad JSON"),
    ('["a", "b"]', 1, "one JSON object"),
    ('{"a": 0,\n "b": true}', 2, "not an integer: true"),
    ('{"a": 0,\n "b": 1.0}', 2, "not an integer: 1.0"),
    ('{"a": 0,\n "b": "1"}', 2, 'not an integer: "1"'),
    ('{"a": 0,\n "b": {"c": 1}}', 2, "not an integer: an object"),
    ('{"a": 0,\n\n "b": null}', 3, "not an integer: null"),
    ('{"a": 0,\n "b": -1}', 2, "out of range"),
    ('{"a": 0,\n "b": 2147483647}', 2, "out of range"),
    ('{"a": 0,\n "b": 0}', 2, "duplicate id 0"),
    ('{"a": 0,\n "b": 1,\n "a": 2}', 3, "appears twice"),
    ('{"a": 0,\n "b c": 1}', 2, "not in GPT-2's byte mapping"),
])
def test_read_vocab_rejects_with_file_and_line(tmp_path, text, line, message):
    path = tmp_path / "vocab.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(FormatError, match=message) as info:
        F.read_vocab(path)
    assert str(info.value).startswith(f"{path}:{line}: ")
    assert info.value.line == line and info.value.path == str(path)


def test_read_vocab_rejects_bad_utf8(tmp_path):
    path = tmp_path / "vocab.json"
    path.write_bytes(b'{"a": 0,\n "\xff": 1}')
    with pytest.raises(FormatError, match=rf"{path}:2: not UTF-8"):
        F.read_vocab(path)


@pytest.mark.parametrize("text, line, message", [
    ("a b\nabc\n", 2, "two tokens"),
    ("a b\nb c d\n", 2, "two tokens"),
    ("a b\n\nb  c\n", 3, "two tokens"),
    ("a b\n c\n", 2, "two tokens"),
    ("a b\na\tb\n", 2, "two tokens"),
    ("a b\na \u0144\n", 2, "not in GPT-2's byte mapping"),
    ("a b\nb c\na z\n", 3, "'z' is not in the vocabulary"),
    ("a b\nb c\nc a\n", 3, "'ca' is not in the vocabulary"),
    ("a b\nab\nb c a\n", 2, "two tokens"),       # as many spaces as lines, but not one a line
    ("a b\nb\u0100 c\n", 2, "'b\u0100' is not in the vocabulary"),
    ("a b\nb c\n\na b\r\n", 4, "merge 'a b' is on line 1 already"),
])
def test_read_merges_rejects_with_file_and_line(tmp_path, text, line, message):
    path = tmp_path / "merges.txt"
    path.write_text(text, encoding="utf-8")
    vocab = {0: b"a", 1: b"b", 2: b"c", 3: b"ab", 4: b"bc"}
    with pytest.raises(FormatError, match=message) as info:
        F.read_merges(path, vocab)
    assert str(info.value).startswith(f"{path}:{line}: ")



def test_a_merge_listed_twice_is_refused(tmp_path):
    """GPT-2's encoder (a dict of the merges) and HF's BPE.from_file rank a pair listed twice by its last line,
    bpe_fast by its first: GPT-2's merges.txt with its first merge repeated at the end loaded, and gave 962 ids
    for the first 20,000 characters of tinystories_sample.txt where HF gives 1,021. Save refuses to write one."""
    from bpe_fast import Tokenizer

    lines = (FIXTURES / "gpt2_merges.txt").read_text(encoding="utf-8").splitlines()
    path = tmp_path / "merges.txt"
    path.write_text("\n".join(lines + [lines[0]]) + "\n", encoding="utf-8")
    message = rf"{path}:{len(lines) + 1}: merge 'Ġ t' is on line 1 already: GPT-2's encoder and HF rank"
    with pytest.raises(FormatError, match=message):
        Tokenizer.from_files(FIXTURES / "gpt2_vocab.json", path)
    with pytest.raises(FormatError, match=message):
        F.read_merges(path)
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"ab", 257: b"bc"}
    with pytest.raises(ValueError, match=r"merge 2 \(b'a', b'b'\) repeats merge 0"):
        Tokenizer(vocab, [(b"a", b"b"), (b"b", b"c"), (b"a", b"b")])      # the constructor refuses it first
    tok = Tokenizer._from_checked(vocab, [(b"a", b"b"), (b"b", b"c"), (b"a", b"b")], None, "gpt2")
    with pytest.raises(ValueError, match=r"merge 2 \(b'a', b'b'\) repeats merge 0"):
        tok.save(tmp_path / "tok")
    assert not (tmp_path / "tok").exists()

def test_missing_file_names_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.json"):
        F.read_vocab(tmp_path / "nope.json")


# ------------------------------------------------------------------------------------- atomic writes

def test_write_vocab_refuses_two_ids_with_the_same_bytes(tmp_path):
    with pytest.raises(ValueError, match="ids 1 and 2"):
        F.write_vocab(tmp_path / "vocab.json", {1: b"ab", 2: b"ab"})
    assert not os.listdir(tmp_path)


def test_bad_input_leaves_the_old_file(tmp_path):
    path = tmp_path / "merges.txt"
    F.write_merges(path, [(b"a", b"b")])
    with pytest.raises(ValueError):
        F.write_merges(path, [(b"a", b"b"), (b"a",)])
    with pytest.raises(TypeError):
        F.write_vocab(tmp_path / "vocab.json", {0: "a"})
    assert F.read_merges(path) == [(b"a", b"b")]
    assert os.listdir(tmp_path) == ["merges.txt"]


def test_failed_replace_leaves_no_temporary_file(tmp_path, monkeypatch):
    path = tmp_path / "vocab.json"
    F.write_vocab(path, {0: b"a"})

    def broken(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(F.os, "replace", broken)
    with pytest.raises(OSError, match="disk full"):
        F.write_vocab(path, {0: b"b"})
    monkeypatch.undo()
    assert F.read_vocab(path) == {0: b"a"}
    assert os.listdir(tmp_path) == ["vocab.json"]


# ------------------------------------------------------------------------------------- tokenizer folders

def test_tokenizer_folder_round_trip(tmp_path):
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"<|endoftext|>", 257: b"ab"}
    merges = [(b"a", b"b")]
    F.save_tokenizer_files(tmp_path / "new" / "tok", vocab, merges, ["<|endoftext|>"], "gpt4")
    loaded = F.load_tokenizer_files(tmp_path / "new" / "tok")
    from bpe_fast.patterns import GPT4_PATTERN
    assert loaded == (vocab, merges, ["<|endoftext|>"], GPT4_PATTERN)



def test_a_failed_save_into_a_new_folder_leaves_no_folder(tmp_path):
    """save creates the folder it writes into; a save that fails (two ids with the same bytes, which vocab.json
    cannot hold) left that folder behind, empty, where the docstring promises the folder as it was: missing."""
    from bpe_fast import Tokenizer

    tok = Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"ab", 257: b"ab"}, [(b"a", b"b")])
    with pytest.raises(ValueError, match="ids 256 and 257"):
        tok.save(tmp_path / "new" / "tok")
    assert os.listdir(tmp_path) == []
    with pytest.raises(ValueError, match="ids 256 and 257"):
        F.save_tokenizer_files(tmp_path / "new", dict(tok.vocab), [(b"a", b"b")])
    assert os.listdir(tmp_path) == []

def test_save_refuses_training_counts_that_load_would_refuse(tmp_path):
    """save_tokenizer_files wrote merge counts of another length unchecked; load then refused the folder."""
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"ab"}
    with pytest.raises(ValueError, match="1 merges"):
        F.save_tokenizer_files(tmp_path / "tok", vocab, [(b"a", b"b")], training={"merge_counts": [3, 2]})
    assert not (tmp_path / "tok" / F.VOCAB_FILE).exists()
    F.save_tokenizer_files(tmp_path / "tok", vocab, iter([(b"a", b"b")]), training={"merge_counts": [3]})
    assert F.load_tokenizer_folder(tmp_path / "tok")[5] == {"merge_counts": [3]}


def test_config_errors_name_the_file(tmp_path):
    vocab = {i: bytes([i]) for i in range(256)}
    F.save_tokenizer_files(tmp_path, vocab, [])
    config = tmp_path / F.CONFIG_FILE
    config.write_text('{"format": "bpe_fast",\n "version": 1,\n "pattern": 3}')
    with pytest.raises(FormatError, match=rf"{config}:3: \"pattern\""):
        F.load_tokenizer_files(tmp_path)
    config.write_text('{"format": "bpe_fast", "version": 1, "pattern": "x",\n "special_tokens": "<|a|>"}')
    with pytest.raises(FormatError, match=rf"{config}:2: \"special_tokens\""):
        F.load_tokenizer_files(tmp_path)
    config.write_text('{"format": "other", "version": 1}')
    with pytest.raises(FormatError, match="format"):
        F.load_tokenizer_files(tmp_path)
    config.write_text('{"format": "bpe_fast", \n')
    with pytest.raises(FormatError, match=rf"{config}:2: bad JSON"):
        F.load_tokenizer_files(tmp_path)


def test_a_config_error_names_the_keys_line_not_a_special_token_of_its_text(tmp_path):
    # the line was that of the first text '"normalizer"' (or '"training"'), which a special token of that name,
    # in the list written before those keys, is
    from bpe_fast import Tokenizer
    Tokenizer({i: bytes([i]) for i in range(256)}, [], ["normalizer", "training"]).save(tmp_path)
    config = tmp_path / F.CONFIG_FILE
    text = config.read_text(encoding="utf-8")
    assert text.count('"normalizer"') == 1 and text.count('"training"') == 1
    for key, value, message in [("normalizer", '"NFX"', r'"normalizer": normalizer must be None or one of'),
                                ("training", "5", "training must be a dict, got int")]:
        config.write_text(text.replace('  "files_sha256"', f'  "{key}": {value},\n  "files_sha256"'), encoding="utf-8")
        line = config.read_text(encoding="utf-8").split("\n").index(f'  "{key}": {value},') + 1
        with pytest.raises(FormatError, match=rf"^{re.escape(str(config))}:{line}: {message}"):
            Tokenizer.load(tmp_path)


@pytest.mark.parametrize("key, value, message", [
    ("pattern", "(", r"invalid pre-tokenization pattern '\(': missing \)"),
    ("special_tokens", ["<|a|>", "<|b|>", "<|a|>"], r"duplicate special token '<\|a\|>'"),
    ("special_tokens", ["<|a|>", "\ud800"], r"special token '\\ud800' holds a lone surrogate"),
])
def test_config_the_tokenizer_would_refuse_is_refused_naming_the_file(tmp_path, key, value, message):
    # the Tokenizer refused these after the folder was read, naming no file
    from bpe_fast import Tokenizer
    F.save_tokenizer_files(tmp_path, {i: bytes([i]) for i in range(256)}, [], ["<|a|>"])
    config = tmp_path / F.CONFIG_FILE
    settings = json.loads(config.read_text())
    settings[key] = value
    config.write_text(json.dumps(settings, indent=2))
    line = next(k for k, text in enumerate(config.read_text().split("\n"), 1) if f'"{key}"' in text)
    with pytest.raises(FormatError, match=rf"^{re.escape(str(config))}:{line}: {message}"):
        Tokenizer.load(tmp_path)
    with pytest.raises(FormatError, match=rf"^{re.escape(str(config))}:{line}: {message}"):
        F.read_config(config)


def test_sparse_ids_are_refused_naming_the_file_and_the_largest_ids_line(tmp_path):
    # the message named no file: the ids were checked only as the tokenizer's
    from bpe_fast import Tokenizer
    vocab = {i: bytes([i]) for i in range(256)}
    F.save_tokenizer_files(tmp_path, vocab, [])
    entries = {F.token_to_str(token): i for i, token in vocab.items()}
    entries[F.token_to_str(b"a")] = 2_000_000
    path = tmp_path / F.VOCAB_FILE
    path.write_text(json.dumps(entries, indent=1))
    line = 1 + path.read_text().split("\n").index(' "a": 2000000,')
    message = rf"^{re.escape(str(path))}:{line}: vocab ids are too sparse: largest id 2000000 for 256 tokens$"
    with pytest.raises(FormatError, match=message):
        F.read_vocab(path)
    with pytest.raises(FormatError, match=message):
        Tokenizer.load(tmp_path)
    with pytest.raises(FormatError, match=message):
        Tokenizer.from_files(path, tmp_path / F.MERGES_FILE)


@pytest.mark.parametrize("name", [F.VOCAB_FILE, F.CONFIG_FILE])
@pytest.mark.parametrize("text", ["[" * 100_000, '{"format": "bpe_fast",\n "a": ' + "[{\"b\": " * 50_000],
                         ids=["top-level", "in-a-value"])
def test_json_nested_too_deeply_names_the_file(tmp_path, name, text):
    # json.loads raises RecursionError past its depth, which left the reader bare, naming no file
    from bpe_fast import Tokenizer
    F.save_tokenizer_files(tmp_path, {i: bytes([i]) for i in range(256)}, [])
    path = tmp_path / name
    path.write_text(text)
    message = rf"^{re.escape(str(path))}: bad JSON: arrays or objects nested too deeply$"
    with pytest.raises(FormatError, match=message):
        F.load_tokenizer_files(tmp_path)
    with pytest.raises(FormatError, match=message):
        Tokenizer.load(tmp_path)
    if name == F.VOCAB_FILE:
        with pytest.raises(FormatError, match=message):
            Tokenizer.from_files(path, tmp_path / F.MERGES_FILE)


def test_folder_merges_checked_against_its_vocab(tmp_path):
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"ab"}
    F.save_tokenizer_files(tmp_path, vocab, [(b"a", b"b")])
    assert F.load_tokenizer_files(tmp_path)[1] == [(b"a", b"b")]
    path = tmp_path / F.MERGES_FILE
    path.write_text("a b\nab c\n", encoding="utf-8")
    with pytest.raises(FormatError, match=rf"{path}:2: merge 'ab c': token 'abc' is not in the vocabulary"):
        F.load_tokenizer_files(tmp_path)


def test_load_of_a_file_or_an_incomplete_folder_says_what_it_expects(tmp_path):
    F.write_vocab(tmp_path / "vocab.json", {i: bytes([i]) for i in range(256)})
    with pytest.raises(NotADirectoryError, match=r"vocab.json is a file, not a folder: a tokenizer folder holds "
                                                 r"vocab.json and merges.txt \(and bpe_fast.json\).*from_files"):
        F.load_tokenizer_files(tmp_path / "vocab.json")
    with pytest.raises(FileNotFoundError, match=rf"{tmp_path} has no merges.txt: a tokenizer folder holds"):
        F.load_tokenizer_files(tmp_path)


@pytest.mark.parametrize("name", ["vocab.json", "merges.txt", "bpe_fast.json"])
def test_a_folder_whose_file_is_a_directory_names_it(tmp_path, name):
    # load reads the files through the descriptors it holds (FolderPin): an error there named no file
    # ("[Errno 21] Is a directory"); it names the one that is a directory now (helper-97)
    bpe_fast.Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"ab"}, [(b"a", b"b")], ["<|eot|>"]).save(tmp_path / "tok")
    (tmp_path / "tok" / name).unlink()
    (tmp_path / "tok" / name).mkdir()
    with pytest.raises(IsADirectoryError) as caught:
        bpe_fast.Tokenizer.load(tmp_path / "tok")
    assert caught.value.filename == str(tmp_path / "tok" / name)
    assert name in str(caught.value)


def test_config_and_training_of_the_wrong_shape_and_a_tiktoken_file_for_a_folder_are_named(tmp_path):
    # (paths no test reached, found by coverage)
    from bpe_fast import Tokenizer
    folder = tmp_path / "tok"
    Tokenizer({i: bytes([i]) for i in range(256)}, []).save(folder)
    (folder / F.CONFIG_FILE).write_text("[1, 2]\n", encoding="utf-8")
    with pytest.raises(FormatError, match=rf"{re.escape(str(folder / F.CONFIG_FILE))}:1: must hold one JSON object"):
        Tokenizer.load(folder)
    with pytest.raises(ValueError, match=r"training's corpus must map some of bytes, documents, .* to ints >= 0, "
                                         r"got \{'bytes': -1\}"):
        F.check_training({"corpus": {"bytes": -1}})
    # merge counts beyond int64 (no engine makes one) loaded, and the report (numpy arrays of them) died of an
    # OverflowError (helper-115); the corpus's totals may pass it (test_hunt_engine)
    assert F.check_training({"merge_counts": [2 ** 63 - 1], "corpus": {"pretokens": 2 ** 64}}, 1) is not None
    with pytest.raises(ValueError, match=r"merge_counts must be a list of ints from 0 to 2\*\*63 - 1"):
        F.check_training({"merge_counts": [1, 2 ** 63]})
    (tmp_path / "cl100k_base.tiktoken").write_bytes(b"YQ== 0\n")
    with pytest.raises(NotADirectoryError, match=r"is a file, not a folder: .*; for a \.tiktoken file use "
                                                 r"Tokenizer\.from_tiktoken"):
        Tokenizer.load(tmp_path / "cl100k_base.tiktoken")


def test_a_folder_under_one_that_may_not_be_searched_is_not_called_missing(tmp_path, unsearchable):
    # os.path.exists says no where a folder on the way may not be searched: a load said "no such tokenizer
    # folder" (or "has no vocab.json"), sending its user to look for a file that is there
    from bpe_fast import Tokenizer
    Tokenizer({i: bytes([i]) for i in range(256)}, []).save(tmp_path / "outer" / "tok")
    unsearchable(tmp_path / "outer")
    for folder in (tmp_path / "outer" / "tok", tmp_path / "outer"):
        with pytest.raises(PermissionError, match=r"Permission denied \(a folder on the way may not be looked into"
                                                  r"\)") as info:
            Tokenizer.load(folder)
        assert info.value.filename in (str(folder), str(folder / "vocab.json"))
    with pytest.raises(FileNotFoundError, match="no such tokenizer folder"):      # one that is not there still is
        Tokenizer.load(tmp_path / "elsewhere")


def test_folder_without_config_is_gpt2(tmp_path):
    from bpe_fast.patterns import GPT2_PATTERN
    F.write_vocab(tmp_path / "vocab.json", {i: bytes([i]) for i in range(256)})
    F.write_merges(tmp_path / "merges.txt", [])
    assert F.load_tokenizer_files(tmp_path)[2:] == ([], GPT2_PATTERN)


# ---- a load while another process saves into the folder


def _two_tokenizers():
    """Two tokenizers whose files do not mix: the merges of one name tokens the other's vocabulary lacks."""
    from bpe_fast import Tokenizer
    base = {i: bytes([i]) for i in range(256)}
    first = Tokenizer(base | {256: b"ab", 257: b"abc"}, [(b"a", b"b"), (b"ab", b"c")])
    second = Tokenizer(base | {256: b"xy", 257: b"xyz"}, [(b"x", b"y"), (b"xy", b"z")], ["<|s|>"])
    return first, second


def _same(tok, other):
    return (dict(tok.vocab), list(tok.merges), tok.special_tokens) == (dict(other.vocab), list(other.merges),
                                                                       other.special_tokens)


def test_a_save_between_reading_the_vocabulary_and_the_merges_is_not_mixed_in(tmp_path, monkeypatch):
    # vocab.json of one save and merges.txt of the next: a FormatError ("token 'xy' is not in the vocabulary"),
    # or, where the merges fit the other vocabulary, a tokenizer of neither
    from bpe_fast import Tokenizer
    first, second = _two_tokenizers()
    first.save(tmp_path)
    read_bytes, saved = F.read_bytes, []

    def save_then_read(path, *args, **kwargs):      # merges.txt read (natively or not) after the vocabulary
        if os.path.basename(path) == "merges.txt" and not saved:
            second.save(tmp_path)
            saved.append(True)
        return read_bytes(path, *args, **kwargs)

    monkeypatch.setattr(F, "read_bytes", save_then_read)
    assert _same(Tokenizer.load(tmp_path), first) and saved      # the files as they were when the load began
    assert _same(Tokenizer.load(tmp_path), second)


def test_files_replaced_at_every_opening_are_a_runtime_error(tmp_path, monkeypatch):
    from bpe_fast import Tokenizer
    from bpe_fast import tokenizer as tokenizer_module
    _two_tokenizers()[0].save(tmp_path)
    monkeypatch.setattr(F.FolderPin, "changed", lambda self: True)
    monkeypatch.setattr(tokenizer_module, "LOAD_TRIES", 3)
    with pytest.raises(RuntimeError, match=r"its files were replaced while they were opened, 3 times"):
        Tokenizer.load(tmp_path)


def _save_alternately(folder, stop):
    tokenizers, k = _two_tokenizers(), 0
    while not stop.is_set():
        tokenizers[k % 2].save(folder)
        k += 1


def _save_pausing_after_the_first_rename(folder, seconds):
    """Save the second tokenizer into folder, pausing `seconds` after its first file is renamed into place (a
    process descheduled between two renames, as on a loaded machine)."""
    import time
    from bpe_fast import atomic
    replace, renamed = atomic._replace, []

    def pausing(tmp, target, done):
        replace(tmp, target, done)
        renamed.append(target)
        if len(renamed) == 1:
            time.sleep(seconds)
    atomic._replace = pausing
    _two_tokenizers()[1].save(folder)


def test_a_load_waits_for_a_save_paused_between_its_renames(tmp_path):
    # the suite under load once loaded a tokenizer of neither save (one load in thousands): a save paused longer
    # than LOAD_SETTLE between two renames left vocab.json of one save beside bpe_fast.json of the other, which
    # load took for files edited since ("loaded as they are"). A save's renames hold the folder's lock; a load
    # pins the files under it
    import multiprocessing
    import time
    import warnings
    from bpe_fast import Tokenizer
    first, second = _two_tokenizers()
    first.save(tmp_path)
    names = [tmp_path / name for name in (F.VOCAB_FILE, F.MERGES_FILE, F.CONFIG_FILE)]
    before = [os.stat(path).st_ino for path in names]
    saver = multiprocessing.get_context("spawn").Process(target=_save_pausing_after_the_first_rename,
                                                         args=(str(tmp_path), 1.5))
    saver.start()
    try:
        deadline = time.monotonic() + 60
        while [os.stat(path).st_ino for path in names] == before and time.monotonic() < deadline:
            time.sleep(0.001)           # until the first file of the save is in place
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            tok = Tokenizer.load(tmp_path)
    finally:
        saver.join(60)
    assert saver.exitcode == 0
    assert _same(tok, second)


def test_loads_while_another_process_saves_get_one_save_or_the_other(tmp_path):
    # before the files were read from where they were opened, about one load in 13 failed here
    import multiprocessing
    import time
    from bpe_fast import Tokenizer
    first, second = _two_tokenizers()
    first.save(tmp_path)
    context = multiprocessing.get_context("spawn")
    stop = context.Event()
    saver = context.Process(target=_save_alternately, args=(str(tmp_path), stop))
    saver.start()
    try:
        loads, start = [], time.monotonic()
        while len(loads) < 200 or time.monotonic() - start < 2:
            tok = Tokenizer.load(tmp_path)
            loads.append(1 if _same(tok, first) else 2 if _same(tok, second) else 0)
    finally:
        stop.set()
        saver.join(30)
    assert 0 not in loads and 2 in loads, loads.count(2)


def test_files_edited_since_their_save_load_as_they_are(tmp_path):
    # bpe_fast.json holds the digests of the vocab.json and merges.txt saved with it; files edited by hand since
    # differ from them, and are what load reads (once it has seen that they stay as they are)
    from bpe_fast import Tokenizer
    first, _ = _two_tokenizers()
    first.save(tmp_path)
    config = json.loads((tmp_path / F.CONFIG_FILE).read_text("utf-8"))
    assert set(config["files_sha256"]) == {F.VOCAB_FILE, F.MERGES_FILE} and F.files_match(tmp_path)
    merges = tmp_path / F.MERGES_FILE
    merges.write_text(merges.read_text("utf-8").splitlines()[0] + "\n", "utf-8")      # the first merge only
    assert not F.files_match(tmp_path) and F.edited_files(tmp_path) == [F.MERGES_FILE]
    with pytest.warns(UserWarning, match=r"merges.txt not as bpe_fast.json was saved with \(edited since, or cut"):
        tok = Tokenizer.load(tmp_path)      # (a file cut short loads silently otherwise: a bad-input audit)
    assert list(tok.merges) == [(b"a", b"b")] and dict(tok.vocab) == dict(first.vocab)


def test_a_folder_without_cache_loads_natively_as_the_python_readers_read_it(tmp_path, monkeypatch):
    # a folder of a vocabulary under CACHE_MIN_TOKENS has no bpe_fast.npz: its text files are read natively (as
    # from_files reads them); the tokenizer must be the one read by the Python readers, with its special tokens,
    # pattern, training and normalizer
    from bpe_fast import Tokenizer

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("low lower lowest newer wider <|endoftext|> naïve café 12345\n" * 50, encoding="utf-8")
    result = bpe_fast.train_bpe(corpus, 280, ["<|endoftext|>", "<|pad|>"])
    vocab, merges = result
    assert result.training is not None
    cases = {"plain": Tokenizer(vocab, merges),
             "special": Tokenizer(vocab, merges, ["<|endoftext|>", "<|pad|>", "<|new|>"], pattern="gpt4"),
             "nfc": Tokenizer(vocab, merges, ["<|endoftext|>"]).with_normalizer("NFC"),
             "trained": Tokenizer(vocab, merges, ["<|endoftext|>", "<|pad|>"], training=result.training)}
    text = "low lowest <|endoftext|> <|pad|><|new|> café naïve 987"
    for name, tok in cases.items():
        folder = tmp_path / name
        tok.save(folder)
        assert not (folder / F.CACHE_FILE).exists()
        assert F.read_folder_arrays(folder) is not None, name
        native = Tokenizer.load(folder)
        with monkeypatch.context() as m:
            m.setattr(F, "read_folder_arrays", lambda directory: None)
            python = Tokenizer.load(folder)
        assert _same(native, python) and native.pattern == python.pattern, name
        assert native._training == python._training and native.normalizer == python.normalizer, name
        assert (native._training is not None) == (name == "trained"), name
        assert native.encode(text) == python.encode(text) == tok.encode(text), name
    # what the native readers do not take plainly is read by the Python ones, which name what is wrong
    (tmp_path / "plain" / "merges.txt").write_text("#version: 0.2\nl o\nzz q\n", encoding="utf-8")
    assert F.read_folder_arrays(tmp_path / "plain") is None
    with pytest.raises(F.FormatError, match=r"merges\.txt:3: merge 'zz q': token 'zz' is not in the vocabulary"):
        Tokenizer.load(tmp_path / "plain")


def test_a_folder_wrong_in_merges_and_config_names_the_merges_first(tmp_path):
    # merges.txt edited by hand (a merge removed: the rule cannot make the next token) also leaves bpe_fast.json's
    # merge counts wrong; the merges.txt line is the error, whichever way the files are read (review helper-89)
    from bpe_fast import Tokenizer

    base = {i: bytes([i]) for i in range(256)}
    Tokenizer(base | {256: b"ab", 257: b"abc"}, [(b"a", b"b"), (b"ab", b"c")],
              training={"merge_counts": [5, 3]}).save(tmp_path)
    (tmp_path / "merges.txt").write_text("ab c\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"merges\.txt:1: merge 'ab c': tiktoken's rule"):
        Tokenizer.load(tmp_path)
    # the counts alone wrong: the config's error, naming its line
    (tmp_path / "merges.txt").write_text("a b\n", encoding="utf-8")
    (tmp_path / "vocab.json").write_text(json.dumps({F.token_to_str(t): i for i, t in (base | {256: b"ab"}).items()}),
                                         encoding="utf-8")
    with pytest.raises(FormatError, match=r"bpe_fast\.json:\d+: training's merge_counts has 2 counts for 1 merges"):
        Tokenizer.load(tmp_path)


@pytest.mark.parametrize("reader", ["from_files vocab", "from_files merges", "from_hf", "read_vocab", "read_merges"])
def test_a_descriptor_given_for_a_path_is_refused_and_left_open(tmp_path, reader):
    # open() takes an int for a file descriptor: from_files(fd, ...) built a tokenizer from whatever the caller's
    # descriptor was open on, then closed it (from_hf(1) closed stdout); found by helper-115's bad-input fuzz
    vocab, merges = FIXTURES / "gpt2_vocab.json", FIXTURES / "gpt2_merges.txt"
    calls = {"from_files vocab": lambda fd: bpe_fast.Tokenizer.from_files(fd, merges),
             "from_files merges": lambda fd: bpe_fast.Tokenizer.from_files(vocab, fd),
             "from_hf": bpe_fast.Tokenizer.from_hf, "read_vocab": F.read_vocab, "read_merges": F.read_merges}
    with open(vocab, "rb") as held:
        with pytest.raises(TypeError, match="a file's path must be a str or os.PathLike, got int"):
            calls[reader](held.fileno())
        assert os.fstat(held.fileno()).st_size > 0 and held.read(1) == b"{"     # still the caller's, still open


def test_a_key_given_twice_in_bpe_fast_json_is_refused_naming_its_line(tmp_path):
    # json.loads reads a repeated "pattern" or "special_tokens" as its last value: a folder loaded with the
    # second of two patterns, saying nothing, where vocab.json refuses a token given twice (helper-115)
    from bpe_fast import Tokenizer
    folder = tmp_path / "tok"
    Tokenizer({i: bytes([i]) for i in range(256)}, [], special_tokens=["<|e|>"]).save(folder)
    config = folder / F.CONFIG_FILE
    lines = config.read_text("utf-8").splitlines()
    at = next(k for k, line in enumerate(lines) if line.lstrip().startswith('"special_tokens"'))
    lines.insert(at, '  "special_tokens": ["<|x|>"],')
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(FormatError, match=rf'{re.escape(str(config))}:{at + 2}: key "special_tokens" given twice'):
        Tokenizer.load(folder)
    # a special token spelt as the key is no key: the line is the second key's (helper-116)
    Tokenizer({i: bytes([i]) for i in range(256)}, [], special_tokens=["pattern", "<|e|>"]).save(folder)
    lines = config.read_text("utf-8").rstrip().splitlines()
    assert lines[-1] == "}" and '    "pattern",' in lines
    lines[-2:] = [lines[-2] + ",", '  "pattern": "gpt2"', "}"]       # the second "pattern" key, last: after the token
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(FormatError, match=rf'{re.escape(str(config))}:{len(lines) - 1}: key "pattern" given twice'):
        Tokenizer.load(folder)


def test_a_folder_named_by_bytes_loads(tmp_path):
    # Tokenizer.load(b"/path") was "Can't mix strings and bytes in path components"; from_files takes bytes paths
    from bpe_fast import Tokenizer
    tok = Tokenizer({**{i: bytes([i]) for i in range(256)}, 256: b"ab"}, [(b"a", b"b")], special_tokens=["<|e|>"])
    tok.save(tmp_path / "tok")
    again = Tokenizer.load(os.fsencode(tmp_path / "tok"))
    assert again.encode("abab<|e|>") == tok.encode("abab<|e|>") == [256, 256, 257]


def test_a_config_version_or_digests_of_the_wrong_type_are_refused(tmp_path):
    # "version": true and 1.0 were read as 1 (True == 1 == 1.0); "files_sha256" as a list, or with a digest that
    # is no string, was taken for a save from before the digests, and an edited vocab.json loaded without a word
    # (helper-151)
    from bpe_fast import Tokenizer
    tok = Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"ab"}, [(b"a", b"b")])
    tok.save(tmp_path / "t")
    config_path = tmp_path / "t" / "bpe_fast.json"
    config = json.loads(config_path.read_text())
    for version in (True, 1.0):
        config_path.write_text(json.dumps(dict(config, version=version)))
        with pytest.raises(FormatError, match=r'expected "format": "bpe_fast" and "version": 1'):
            Tokenizer.load(tmp_path / "t")
    for digests in ([config["files_sha256"]["vocab.json"]], dict(config["files_sha256"], **{"vocab.json": 1})):
        config_path.write_text(json.dumps(dict(config, files_sha256=digests)))
        with pytest.raises(FormatError, match=r'bpe_fast\.json.*"files_sha256" must map vocab\.json and merges\.txt'):
            Tokenizer.load(tmp_path / "t")
    del config["files_sha256"]                      # absent: a save from before the digests, loaded as it is
    config_path.write_text(json.dumps(config))
    assert Tokenizer.load(tmp_path / "t").encode("abc") == [256, 99]


# ------------------------------------------------------------------ the files' text made from arrays (export speed)

@pytest.mark.parametrize("seed", range(5))
def test_files_text_from_arrays_equals_the_per_token_text(tmp_path, seed):
    """write_vocab, write_merges, tokens_to_strs and merge_strs, which make their text from the
    tokens as arrays past a few tokens, write what json.dumps and token_to_str write one token at a time: every
    byte (the quote and the backslash that JSON escapes too), tokens long enough to cross mapped_text's steps."""
    import json
    import random

    from bpe_fast import formats

    rng = random.Random(seed)
    tokens = list(dict.fromkeys(bytes(rng.randrange(256) for _ in range(rng.choice([1, 2, 3, 8, 40])))
                                for _ in range(3000)))
    tokens.append(b"x" * (formats._CHUNK + 5) if seed == 0 else b'"\\' * 7)
    vocab = {i * 3 + 1: token for i, token in enumerate(tokens)}
    formats.write_vocab(tmp_path / "vocab.json", vocab)
    expected = json.dumps({formats.token_to_str(vocab[i]): i for i in sorted(vocab)}, ensure_ascii=True)
    assert (tmp_path / "vocab.json").read_text(encoding="utf-8") == expected
    assert formats.tokens_to_strs(tokens) == [formats.token_to_str(token) for token in tokens]
    merges = [(tokens[k], tokens[k + 1]) for k in range(0, len(tokens) - 1, 2)]
    formats.write_merges(tmp_path / "merges.txt", merges)
    lines = "".join(f"{formats.token_to_str(a)} {formats.token_to_str(b)}\n" for a, b in merges)
    assert (tmp_path / "merges.txt").read_text(encoding="utf-8") == lines
    assert formats.merge_strs(merges) == [f"{formats.token_to_str(a)} {formats.token_to_str(b)}" for a, b in merges]


def test_write_merges_from_arrays_keeps_the_version_line_and_the_refusals(tmp_path):
    """The array path's header (a first merge whose line starts with "#version") and its refusal of a pair listed
    twice are write_merges' own."""
    from bpe_fast import formats

    merges = [(b"#version", b"x")] + [(bytes([b]), b"y") for b in range(97, 123)]
    formats.write_merges(tmp_path / "merges.txt", merges)
    text = (tmp_path / "merges.txt").read_text(encoding="utf-8")
    assert text.startswith("#version: 0.2\n#version x\n")
    assert formats.read_merges(tmp_path / "merges.txt") == merges
    with pytest.raises(ValueError, match="merge 27 .* repeats merge 1"):
        formats.write_merges(tmp_path / "merges.txt", merges + [merges[1]])
    with pytest.raises(ValueError, match="merge 1 is not a pair of non-empty bytes"):
        formats.write_merges(tmp_path / "merges.txt", [(b"a", b"b"), (b"", b"c")])
