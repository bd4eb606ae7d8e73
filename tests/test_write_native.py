"""The native writers of vocab.json, merges.txt and tokenizer.json's vocab and merges (bpe_fast._gpt2_files'
mapped_object and mapped_pairs, through bpe_fast.formats' json_object_chunks, json_merges_chunks and
merge_lines_chunks): their bytes must be the plain-Python oracle's, json.dumps of the dict or list of the tokens
written one at a time with token_to_str (and "a b\\n" lines for merges.txt), on random tokens of every byte: the
quote and the backslash JSON escapes, the control bytes 0x00-0x1f and 0x7f-0xff GPT-2's mapping moves past ASCII
(written as \\u0100... when ensure_ascii), empty pools and one token, whole or in chunks of any size."""
import hashlib
import json
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bpe_fast import Tokenizer, _gpt2_files
from bpe_fast import export as E
from bpe_fast import formats as F

# the bytes JSON or the mapping treats apart, often; any byte sometimes
ODD_BYTES = [0x22, 0x5C, 0x20, 0x00, 0x0A, 0x1F, 0x7F, 0x80, 0xAD, 0xFF, 0x61, 0x2F, 0x75, 0x30]
byte = st.one_of(st.sampled_from(ODD_BYTES), st.integers(0, 255))
token = st.lists(byte, min_size=1, max_size=10).map(bytes)
tokens = st.lists(token, min_size=0, max_size=60, unique=True)
IDENTITY = np.frombuffer(bytes(range(256)), dtype=np.uint8)


def json_object_bytes(*args):
    return b"".join(map(bytes, F.json_object_chunks(*args)))


def json_merges_bytes(packed):
    return b"".join(map(bytes, F.json_merges_chunks(packed)))


def merge_lines_bytes(packed, head=b""):
    return b"".join(map(bytes, F.merge_lines_chunks(packed, head)))


def _offsets(tokens):
    pool, ends = F.pack_tokens(tokens)
    return pool, np.concatenate([np.zeros(1, dtype=np.int64), ends])


# ------------------------------------------------------------------------------------- worked examples

def test_object_worked_example():
    # tokens ' a', '"', '\\', 0x00 by index; written in the order 2, 1, 0, 3 with ids 5, 70, 0, 12345
    pool, offsets = _offsets([b" a", b'"', b"\\", b"\x00"])
    which, ids = np.array([2, 1, 0, 3]), np.array([5, 70, 0, 12345])
    assert (json_object_bytes(pool, offsets, which, ids, False)) == (
        '{"\\\\": 5, "\\"": 70, "\u0120a": 0, "\u0100": 12345}'.encode("utf-8"))
    assert (json_object_bytes(pool, offsets, which, ids, True)) == (
        b'{"\\\\": 5, "\\"": 70, "\\u0120a": 0, "\\u0100": 12345}')


def test_pairs_worked_example():
    packed = _gpt2_files.pack_pairs([(b" ", b"a"), (b'"', b"\\"), (b"\n", b"\xff")])
    assert (json_merges_bytes(packed)).decode("utf-8") == '["\u0120 a", "\\" \\\\", "\u010a \u00ff"]'
    assert (merge_lines_bytes(packed)).decode("utf-8") == '\u0120 a\n" \\\n\u010a \u00ff\n'
    assert (merge_lines_bytes(packed, b"#version: 0.2\n")).startswith(b"#version: 0.2\n\xc4\xa0 a\n")


def test_kernels_with_a_table_of_their_own():
    # the table is the caller's: here each byte as itself, and 'x' as three bytes
    forms = [bytes([b]) for b in range(256)]
    forms[ord("x")] = b"<x>"
    table, table_offsets = _offsets(forms)
    pool, offsets = _offsets([b"ax", b"b", b"xx"])
    chunk, end = _gpt2_files.mapped_object(pool, offsets, np.array([0, 2]), np.array([1, 22]), table, table_offsets)
    assert (bytes(chunk), end) == (b'{"a<x>": 1, "<x><x>": 22}', 2)
    chunk, end = _gpt2_files.mapped_pairs(pool, offsets[:3], table, table_offsets, b"(", b"[", b"+", b"]", b"; ",
                                          b")")
    assert (bytes(chunk), end) == (b"([a<x>+b])", 1)
    empty_pool, empty_offsets = np.zeros(0, dtype=np.uint8), np.zeros(1, dtype=np.int64)
    none = np.zeros(0, dtype=np.int64)
    assert bytes(_gpt2_files.mapped_object(empty_pool, empty_offsets, none, none, table, table_offsets)[0]) == b"{}"
    assert bytes(_gpt2_files.mapped_pairs(empty_pool, empty_offsets, table, table_offsets, b"[", b'"', b" ", b'"',
                                          b", ", b"]")[0]) == b"[]"


def test_kernels_refuse_bad_arguments():
    pool, offsets = _offsets([b"a", b"b"])
    table_offsets = np.arange(257, dtype=np.int64)
    with pytest.raises(ValueError, match="257 offsets"):
        _gpt2_files.mapped_object(pool, offsets, np.array([0]), np.array([1]), IDENTITY, table_offsets[:256])
    with pytest.raises(ValueError, match="1..8 bytes"):
        _gpt2_files.mapped_object(pool, offsets, np.array([0]), np.array([1]),
                                  np.zeros(256 * 9, dtype=np.uint8), table_offsets * 9)
    with pytest.raises(ValueError, match="not one of the 2"):
        _gpt2_files.mapped_object(pool, offsets, np.array([2]), np.array([1]), IDENTITY, table_offsets)
    with pytest.raises(ValueError, match="negative"):
        _gpt2_files.mapped_object(pool, offsets, np.array([0]), np.array([-1]), IDENTITY, table_offsets)
    with pytest.raises(ValueError, match="1 tokens but 2 values"):
        _gpt2_files.mapped_object(pool, offsets, np.array([0]), np.array([1, 2]), IDENTITY, table_offsets)
    with pytest.raises(ValueError, match="offsets must rise"):
        _gpt2_files.mapped_object(pool, np.array([0, 2, 1]), np.array([0]), np.array([1]), IDENTITY, table_offsets)
    with pytest.raises(ValueError, match="first 3 is not in 0..2"):
        _gpt2_files.mapped_object(pool, offsets, np.array([0, 1]), np.array([1, 2]), IDENTITY, table_offsets, 3)
    with pytest.raises(ValueError, match="odd number of offsets"):
        _gpt2_files.mapped_pairs(pool, offsets[:2], IDENTITY, table_offsets, b"", b"", b" ", b"\n", b"", b"")


@settings(max_examples=200)
@given(st.lists(token, max_size=30, unique=True), st.integers(-1, 40), st.data())
def test_chunks_join_to_the_whole(tokens, budget, data):
    """The kernels' chunks from first = 0 on, each of at most `budget` bytes but when one entry is longer (then
    that entry alone), end to end, are the whole text (budget -1)."""
    pool, offsets = _offsets(tokens)
    which = np.array(data.draw(st.permutations(range(len(tokens)))), dtype=np.int64)
    ids = np.arange(len(tokens), dtype=np.int64) * 1000
    table, table_offsets = F._forms("json_ascii")
    whole, end = _gpt2_files.mapped_object(pool, offsets, which, ids, table, table_offsets)
    assert end == len(tokens)
    pairs = _offsets(tokens[:len(tokens) // 2 * 2])
    whole_pairs, _ = _gpt2_files.mapped_pairs(*pairs, table, table_offsets, b"[", b"<", b" ", b">", b", ", b"]")
    for write, n, expected in (
            (lambda first: _gpt2_files.mapped_object(pool, offsets, which, ids, table, table_offsets, first, budget),
             len(tokens), whole),
            (lambda first: _gpt2_files.mapped_pairs(*pairs, table, table_offsets, b"[", b"<", b" ", b">", b", ", b"]",
                                                    first, budget), len(tokens) // 2, whole_pairs)):
        chunks, first = [], 0
        while True:
            chunk, next_first = write(first)
            assert next_first > first or next_first == first == n
            assert budget < 0 or len(chunk) <= budget or next_first == first + 1 or n == 0
            chunks.append(bytes(chunk))
            first = next_first
            if first >= n:
                break
        assert b"".join(chunks) == bytes(expected)


def test_the_formats_chunks_are_the_whole(monkeypatch):
    """formats' writers in chunks of a few bytes write what they write in one."""
    tokens = [bytes([b, b]) for b in range(256)]
    pool, offsets = _offsets(tokens)
    which, ids = np.arange(256, dtype=np.int64), np.arange(256, dtype=np.int64) + 7
    packed = _gpt2_files.pack_pairs([(a, b) for a, b in zip(tokens[::2], tokens[1::2])])
    whole = [json_object_bytes(pool, offsets, which, ids, True), json_merges_bytes(packed), merge_lines_bytes(packed)]
    monkeypatch.setattr(F, "_WRITE_CHUNK", 50)
    assert len(list(F.json_merges_chunks(packed))) > 10
    assert [json_object_bytes(pool, offsets, which, ids, True), json_merges_bytes(packed),
            merge_lines_bytes(packed)] == whole


def test_same_spans():
    pool, offsets = _offsets([b"a", b"bc", b"", b'"'])
    assert _gpt2_files.same_spans(pool, offsets, np.array([3, 1, 2]), *_offsets([b'"', b"bc", b""]))
    assert not _gpt2_files.same_spans(pool, offsets, np.array([3, 1]), *_offsets([b'"', b"bd"]))
    assert not _gpt2_files.same_spans(pool, offsets, np.array([3, 1]), *_offsets([b'"', b"bc", b"x"]))
    assert not _gpt2_files.same_spans(pool, offsets, np.array([4]), *_offsets([b"a"]))
    assert _gpt2_files.same_spans(pool, offsets, np.array([], dtype=np.int64), *_offsets([]))


def test_the_tables_are_json_s_escaping():
    """The quote and the backslash are the only mapped characters JSON escapes (the mapping has no control
    character); ensure_ascii writes the characters past ASCII as json does, lowercase hex."""
    for b in range(256):
        char = F.token_to_str(bytes([b]))
        for table, ensure_ascii in ((F._forms("json"), False), (F._forms("json_ascii"), True)):
            form = bytes(table[0][table[1][b]:table[1][b + 1]])
            assert form == json.dumps(char, ensure_ascii=ensure_ascii)[1:-1].encode("utf-8")
    table, offsets = F._forms("json_ascii")
    assert bytes(table[offsets[32]:offsets[33]]) == b"\\u0120"


# ------------------------------------------------------------------------------------- against the oracle

@settings(max_examples=300)
@given(tokens, st.data())
def test_object_is_json_dumps_of_the_dict(tokens, data):
    pool, offsets = _offsets(tokens)
    which = data.draw(st.permutations(range(len(tokens)))) if tokens else []
    which = which[:data.draw(st.integers(0, len(which)))]
    ids = data.draw(st.lists(st.integers(0, 2**31 - 2), min_size=len(which), max_size=len(which)))
    for ensure_ascii in (False, True):
        expected = json.dumps({F.token_to_str(tokens[t]): i for t, i in zip(which, ids)}, ensure_ascii=ensure_ascii)
        got = json_object_bytes(pool, offsets, np.array(which, dtype=np.int64), np.array(ids, dtype=np.int64),
                                ensure_ascii)
        assert got == expected.encode("utf-8")


@settings(max_examples=300)
@given(st.lists(st.tuples(token, token), max_size=40))
def test_pairs_are_the_merge_strings(merges):
    packed = _gpt2_files.pack_pairs(merges) if merges else (np.zeros(0, dtype=np.uint8), np.zeros(1, dtype=np.int64))
    strs = [F.token_to_str(a) + " " + F.token_to_str(b) for a, b in merges]
    assert (json_merges_bytes(packed)) == json.dumps(strs, ensure_ascii=False).encode("utf-8")
    assert (merge_lines_bytes(packed)) == "".join(s + "\n" for s in strs).encode("utf-8")


@settings(max_examples=100)
@given(st.lists(token, min_size=1, max_size=200, unique=True), st.data())
def test_write_vocab_and_merges_are_the_python_paths(tmp_path_factory, tokens, data):
    """write_vocab and write_merges (the native path) write what their Python fallback writes (json.dumps of the
    dict, a line a merge), the "#version" header too."""
    folder = tmp_path_factory.mktemp("w")
    ids = sorted(data.draw(st.lists(st.integers(0, 10**6), min_size=len(tokens), max_size=len(tokens),
                                    unique=True)))
    vocab = dict(zip(ids, tokens))
    F.write_vocab(folder / "vocab.json", vocab)
    expected = json.dumps({F.token_to_str(vocab[i]): i for i in sorted(vocab)}, ensure_ascii=True)
    assert (folder / "vocab.json").read_bytes() == expected.encode("utf-8")
    first = data.draw(st.sampled_from([b"#version", b"#versions", b"#", b"a"]))
    merges = [(first, tokens[0])] + [(tokens[k], tokens[k - 1]) for k in range(1, len(tokens))]
    F.write_merges(folder / "merges.txt", merges)
    lines = "".join(f"{F.token_to_str(a)} {F.token_to_str(b)}\n" for a, b in merges)
    header = "#version: 0.2\n" if first.startswith(b"#version") else ""
    assert (folder / "merges.txt").read_bytes() == (header + lines).encode("utf-8")
    assert F.read_merges(folder / "merges.txt") == merges


def test_export_vocab_from_the_token_pool_is_the_dicts():
    """export's vocab from the tokenizer's own token pool (ids with gaps, special tokens at the end) is the one
    made from the vocab dict, and the file the same."""
    ranks = {bytes([b]): b for b in range(256)} | {b'""': 256, b"\\\\": 257, b'"\\': 258, b"\x00\x00": 259,
                                                   b"\xff\xff": 260}
    tok = Tokenizer.from_tiktoken(ranks, "gpt2", {"<|endoftext|>": 300, '<|"|>': 305})
    special_ids = sorted(tok.special_tokens.items(), key=lambda item: item[1])
    merges = list(tok.merges)
    packed = _gpt2_files.pack_pairs(merges)
    from_pool = E._plain_vocab(tok.vocab, special_ids, True, merges, packed, tok.token_pool())
    from_dict = E._plain_vocab(tok.vocab, special_ids, True, merges, packed)
    assert from_pool is not None and from_dict is not None
    assert list(from_pool.as_dict().items()) == list(from_dict.as_dict().items())
    pool_data, dict_data = (b"".join(map(bytes, vocab.data())) for vocab in (from_pool, from_dict))
    assert pool_data == dict_data == json.dumps(from_dict.as_dict(), ensure_ascii=False).encode("utf-8")
    assert from_pool.ids.tolist() == sorted(tok.vocab)


def _saved(folder):
    return {name: (folder / name).read_bytes() for name in sorted(os.listdir(folder))}


@pytest.mark.parametrize("case", ["trained", "not as listed", "gaps and specials", "gpt2"])
def test_save_from_arrays_is_the_dict_save(tmp_path, case):
    """Tokenizer.save (vocab.json from token_pool, merges.txt from the packed merges, digests while writing, the
    cache from the arrays) writes what save_tokenizer_files writes from the vocab dict and the merge list, and
    the cache it writes is the one write_cache makes reading the files back."""
    from bpe_fast.train import train_from_counts
    from corpora import FIXTURES

    if case == "trained":
        counts = {b'say "hi"': 5, b"back\\slash \\": 4, b"caf\xc3\xa9 \xe2\x96\x81": 3, b"\x00\x01\x02": 2}
        vocab, merges = train_from_counts(counts, 290, ["<|endoftext|>"])
        tok = Tokenizer(vocab, merges, ["<|endoftext|>"])
    elif case == "not as listed":      # the ranks rule makes b"abc" from (a, bc): merges.txt as listed all the same
        vocab = {i: bytes([i]) for i in range(256)} | {256: b"bc", 257: b"ab", 258: b"abc"}
        tok = Tokenizer._from_checked(vocab, [(b"b", b"c"), (b"a", b"b"), (b"ab", b"c")], None, "gpt2")
    elif case == "gaps and specials":
        ranks = {bytes([b]): b for b in range(256)} | {b'""': 256, b"\\\\": 257, b'"\\': 258, b"\x00\x00": 259}
        tok = Tokenizer.from_tiktoken(ranks, "gpt2", {"<|endoftext|>": 300, '<|"|>': 305})
    else:
        tok = Tokenizer.from_files(FIXTURES / "gpt2_vocab.json", FIXTURES / "gpt2_merges.txt", ["<|endoftext|>"])
    tok.save(tmp_path / "tok")
    digests = F.save_tokenizer_files(tmp_path / "dict", dict(tok.vocab), list(tok.merges), list(tok.special_tokens),
                                     tok.pattern, tok.training, normalizer=tok.normalizer,
                                     special_lstrip=tok.special_lstrip, unicode=tok.unicode)
    ours, theirs = _saved(tmp_path / "tok"), _saved(tmp_path / "dict")
    cache = ours.pop(F.CACHE_FILE, None)
    assert ours == theirs
    assert digests == {name: hashlib.sha256(theirs[name]).digest() for name in ("vocab.json", "merges.txt")}
    assert (cache is not None) == (case == "gpt2")
    if cache is not None:       # its digests (made while writing) are the files': load uses it
        vocab, merges, arrays, n_merges = F.read_cache(tmp_path / "tok")
        assert vocab == dict(tok.vocab) and merges() == list(tok.merges) and n_merges == len(tok.merges)
    if case != "not as listed":     # (which load refuses, as the constructor does)
        assert Tokenizer.load(tmp_path / "tok").encode('a "b" \\c abc') == tok.encode('a "b" \\c abc')


def test_save_still_refuses_a_special_token_with_another_s_bytes(tmp_path):
    tok = Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"<s>"}, [], [])
    aliased = Tokenizer._from_checked({**tok.vocab, 257: b"<s>"}, [], {"<s>": 257}, "gpt2")
    with pytest.raises(ValueError, match="has the bytes of token"):
        aliased.save(tmp_path / "t")
    assert not (tmp_path / "t").exists()
