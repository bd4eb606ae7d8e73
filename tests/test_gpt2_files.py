"""bpe_fast._gpt2_files, the native readers of vocab.json and merges.txt: what bpe_fast.formats reads with them
must be exactly what its Python reader gives (the oracle: the same function with the native reader switched
off), for well-formed files and for any mutation of one (then both give the same result or the same error)."""
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bpe_fast import _gpt2_files
from bpe_fast import formats as F
from bpe_fast.formats import FormatError
from corpora import FIXTURES


def outcome(read, path, *args):
    try:
        result = read(path, *args)
    except (FormatError, ValueError) as exc:
        return ("error", type(exc).__name__, str(exc))
    return ("ok", list(result.items()) if isinstance(result, dict) else result)


def both(monkeypatch, read, path, *args):
    """(with the native reader, with the Python reader alone)."""
    native = outcome(read, path, *args)
    with monkeypatch.context() as m:
        m.setattr(F, "parse_vocab", lambda *a: None)
        m.setattr(F, "parse_merges", lambda *a: None)
        python = outcome(read, path, *args)
    return native, python


# ------------------------------------------------------------------------------------- worked examples

def test_worked_examples():
    table = F.char_to_byte_table()
    pool, offsets, ids = _gpt2_files.parse_vocab('{"Ġthe": 7, "a\\u0120": 2}'.encode(), table, F.MAX_TOKEN_ID)
    assert _gpt2_files.token_list(pool, offsets) == [b" the", b"a "] and ids.tolist() == [7, 2]
    pool, offsets, lines = _gpt2_files.parse_merges("#version: 0.2\nĠ t\n\nh e\r\n".encode(), table)
    assert bytes(pool) == b" the" and offsets.tolist() == [0, 1, 2, 3, 4] and lines.tolist() == [2, 4]
    assert _gpt2_files.token_list(pool, offsets, 0, 2, 2) == [b" t", b"he"]
    # a token's index among the tokens: the first with its bytes (a later equal one is a duplicate), or -1
    pool, offsets = np.frombuffer(b"abxab", dtype=np.uint8), np.array([0, 2, 3, 5])
    assert _gpt2_files.index_tokens(pool, offsets, pool, offsets).tolist() == [0, 1, 0]
    queries, bounds = np.frombuffer(b"xabq", dtype=np.uint8), np.array([0, 1, 3, 4])
    assert _gpt2_files.index_tokens(pool, offsets, queries, bounds).tolist() == [1, 0, -1]
    assert _gpt2_files.index_tokens(pool, offsets, queries, bounds, 0, 1, 2).tolist() == [-1, -1]
    assert _gpt2_files.parse_vocab(b'{}"a": 1}', table, F.MAX_TOKEN_ID) is None     # found by the test below
    # anything unusual is left to Python: None
    for text in ('{"a": 01}', '{"a": -0}', '{"a": 1e2}', '{"a": 1}x', '{"a": 1,}', '{"a" 1}', '["a"]',
                 '{"a": 99999999999999}', '{"\\u00ad": 1}', '{"a": {"b": 1}}', '\ufeff{"a": 1}'):
        assert _gpt2_files.parse_vocab(text.encode(), table, F.MAX_TOKEN_ID) is None, text
    for text in ("a  b\n", "a b c\n", " a\n", "a \n", "a\tb\n", "a b\n\t\n", "ab\n", "a b\r c\n", "a \u0144\n"):
        assert _gpt2_files.parse_merges(text.encode(), table) is None, text
    assert _gpt2_files.parse_merges(b"#version \xff\na b\n", table) is None      # invalid UTF-8 in the header
    assert _gpt2_files.parse_merges(b"a \xc4\n", table) is None                  # a character cut short


def test_gpt2_files_read_natively_as_in_python(monkeypatch):
    vocab_native, vocab_python = both(monkeypatch, F.read_vocab, FIXTURES / "gpt2_vocab.json")
    assert vocab_native == vocab_python and vocab_native[0] == "ok" and len(vocab_native[1]) == 50257
    vocab = dict(vocab_native[1])
    native, python = both(monkeypatch, F.read_merges, FIXTURES / "gpt2_merges.txt", vocab)
    assert native == python and native[0] == "ok" and len(native[1]) == 50000


# ------------------------------------------------------------------------------------- differential

# characters: the mapping's, and some outside it (space, tab, U+00AD, U+0144, a CJK character, an emoji)
_chars = st.sampled_from(sorted(F._CHAR_TO_BYTE)[:40] + ["Ġ", "Ċ", "ĉ", "Ń", "ł", "\u00ad", " ", "\t", "\u0144",
                                                       "中", "😀", "\r", "\\", '"'])
_keys = st.text(_chars, min_size=0, max_size=4)


def _mutate(data, edits):
    data = bytearray(data)
    for kind, where, byte in edits:
        if not data and kind != "insert":
            continue
        at = where % (len(data) + (kind == "insert"))
        if kind == "insert":
            data[at:at] = bytes([byte])
        elif kind == "delete":
            del data[at]
        else:
            data[at] = byte
    return bytes(data)


_edits = st.lists(st.tuples(st.sampled_from(["insert", "delete", "replace"]), st.integers(0, 10**6),
                            st.sampled_from(list(b' \t\n\r{}[]:,"\\0123456789-.eE') + [0xC4, 0xA0, 0xFF, 0x80])),
                  max_size=3)


_ids = st.one_of(st.integers(0, 300).map(str), st.sampled_from(
    ["01", "00", "-0", "-1", "1.0", "1e2", "1E2", "2147483646", "2147483647", "99999999999999", "true", "null",
     '"1"', "{}", "[1]"]))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(_keys, _ids), max_size=8), st.booleans(), st.booleans(), _edits)
def test_vocab_native_equals_python(monkeypatch, tmp_path, members, ascii_only, spaced, edits):
    sep = (", ", ": ") if spaced else (",", ":")
    body = sep[0].join(json.dumps(k, ensure_ascii=ascii_only) + sep[1] + str(v) for k, v in members)
    data = _mutate(("{" + body + "}\n").encode("utf-8"), edits)
    path = tmp_path / "vocab.json"
    path.write_bytes(data)
    native, python = both(monkeypatch, F.read_vocab, path)
    assert native == python


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(_keys, _keys), max_size=8), st.booleans(), st.sampled_from(["\n", "\r\n", "\n\n"]),
       _edits, st.booleans())
def test_merges_native_equals_python(monkeypatch, tmp_path, merges, header, newline, edits, with_vocab):
    text = ("#version: 0.2" + newline if header else "") + "".join(f"{a} {b}{newline}" for a, b in merges)
    data = _mutate(text.encode("utf-8"), edits)
    path = tmp_path / "merges.txt"
    path.write_bytes(data)
    vocab = None
    if with_vocab:      # every token of the unmutated merges but the last merge's join
        known = set()
        for a, b in merges:
            try:
                known |= {F.str_to_token(a), F.str_to_token(b), F.str_to_token(a + b)}
            except ValueError:
                pass
        if merges:
            try:
                known.discard(F.str_to_token(merges[-1][0] + merges[-1][1]))
            except ValueError:
                pass
        vocab = dict(enumerate(sorted(known)))
    native, python = both(monkeypatch, F.read_merges, path, vocab)
    assert native == python


# ------------------------------------------------------------------------------------- both files as arrays

_tokens = st.binary(min_size=1, max_size=4)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(_tokens, _tokens), unique=True, max_size=12), st.lists(_tokens, max_size=6), st.randoms(),
       st.sampled_from(["none", "drop", "repeat_id", "repeat_token", "big_id", "merge_line", "repeat_merge"]))
def test_read_gpt2_arrays_equals_the_readers(tmp_path, merges, extra, rng, fault):
    """read_gpt2_arrays gives what read_vocab and read_merges(path, vocab) give, or None where they raise;
    and from its arrays the encoder's table arrays are those the vocabulary and merges give."""
    from bpe_fast import tokenizer as T

    tokens = list(dict.fromkeys([bytes([b]) for b in range(256)] + [a + b for a, b in merges] + extra))
    ids = rng.sample(range(3 * len(tokens)), len(tokens))          # ids in any order, with gaps
    vocab = dict(zip(ids, tokens))
    if fault == "drop" and merges:
        del vocab[ids[tokens.index(merges[-1][0] + merges[-1][1])]]  # a merge's join not in the vocab
    F.write_vocab(tmp_path / "vocab.json", vocab)
    F.write_merges(tmp_path / "merges.txt", merges)
    if fault == "repeat_id":
        text = (tmp_path / "vocab.json").read_text(encoding="utf-8")
        (tmp_path / "vocab.json").write_text(text[:-1] + f', "{F.token_to_str(b"zz~")}": {ids[0]}}}', encoding="utf-8")
    elif fault == "repeat_token":
        text = (tmp_path / "vocab.json").read_text(encoding="utf-8")
        (tmp_path / "vocab.json").write_text(text[:-1] + f', "a": {10**6}}}', encoding="utf-8")
    elif fault == "big_id":
        text = (tmp_path / "vocab.json").read_text(encoding="utf-8")
        (tmp_path / "vocab.json").write_text(text[:-1] + f', "zz~": {F.MAX_TOKEN_ID + 1}}}', encoding="utf-8")
    elif fault == "merge_line":
        with open(tmp_path / "merges.txt", "a", encoding="utf-8") as f:
            f.write("a b c\n")
    elif fault == "repeat_merge" and merges:
        with open(tmp_path / "merges.txt", "a", encoding="utf-8") as f:
            f.write(f"{F.token_to_str(merges[0][0])} {F.token_to_str(merges[0][1])}\n")
    arrays = F.read_gpt2_arrays(tmp_path / "vocab.json", tmp_path / "merges.txt")
    try:
        expected_vocab = F.read_vocab(tmp_path / "vocab.json")
        expected_merges = F.read_merges(tmp_path / "merges.txt", expected_vocab)
    except FormatError as exc:
        # refused for the merge rule (bpe_fast.merge_rule): well formed, so arrays, whose own check refuses it
        if "a pair the merge list does not hold" in str(exc) or "cannot make" in str(exc):
            assert arrays is not None and arrays.rule_check().difference is not None
        else:
            assert arrays is None
        return
    assert arrays is not None          # these files are plainly well formed
    assert list(arrays.vocab().items()) == list(expected_vocab.items())
    assert arrays.merges() == expected_merges
    check = arrays.rule_check()
    assert check.difference is None
    arrays = arrays._replace(all_permanent=check.every_token_made)      # as from_files does
    ids_of = {token: i for i, token in sorted(expected_vocab.items(), reverse=True)}
    general = T._table_arrays(expected_vocab, expected_merges, ids_of)
    native = T._gpt2_table_arrays(arrays)
    permanent = native.pop("permanent", None)
    # given when the ranks rule is known to make every merged token: then each is permanent, as the general
    # build finds by merging every token's bytes
    assert (permanent is not None) == arrays.all_permanent
    if permanent is not None:
        assert permanent.tobytes() == T.BPETables(**general).permanent_mask() == b"\x01" * len(permanent)
    assert sorted(general) == sorted(native)
    for name, array in general.items():
        assert native[name].dtype == array.dtype and np.array_equal(native[name], array), name


def test_from_files_equals_the_general_build(tmp_path):
    """Tokenizer.from_files and Tokenizer(vocab, merges) (tables from the arrays, in a thread) against the general
    build (the constructor's Python path) on GPT-2's files: the same ids, the same permanent entries."""
    from bpe_fast import Tokenizer

    from bpe_fast import tokenizer as T

    fast = Tokenizer.from_files(FIXTURES / "gpt2_vocab.json", FIXTURES / "gpt2_merges.txt", ["<|endoftext|>"])
    vocab = F.read_vocab(FIXTURES / "gpt2_vocab.json")
    merges = F.read_merges(FIXTURES / "gpt2_merges.txt", vocab)
    by_objects = Tokenizer(dict(vocab), merges, ["<|endoftext|>"])     # CS336's constructor: the arrays' way too
    with pytest.MonkeyPatch.context() as m:     # the general build: the constructor's Python path
        m.setattr(T, "_plain_arrays", lambda packed_vocab, merges: None)
        general = Tokenizer(vocab, merges, ["<|endoftext|>"])
    text = (FIXTURES / "corpus.en").read_text(encoding="utf-8")[:20000] + "<|endoftext|> naïve 日本語 12345"
    for tok in (fast, by_objects):
        assert tok.encode(text) == general.encode(text)
        assert tok._tables.permanent_mask() == general._tables.permanent_mask()
        assert tok.vocab == general.vocab and tok.merges == general.merges
        assert tok.special_tokens == general.special_tokens == {"<|endoftext|>": 50256}


# ------------------------------------------------------------------------------------- hostile and bad calls

M64 = (1 << 64) - 1


UNKEYED = 0x9E3779B97F4A7C15       # hash_bytes' key before it was drawn at random (what a crafted file targets)


def _token_with_hash(h, seed, mixes=2):
    """The 8-byte token whose hash_bytes under the key `seed` is h (for keys of 8 bytes the hash is a bijection:
    `mixes` times mix64 of the bytes xor the length and the key, each a multiply and a fold, which invert; the
    hash had one mix before its key was drawn at random)."""
    inverse = pow(0xff51afd7ed558ccd, -1, 1 << 64)
    for _ in range(mixes):
        h = ((h ^ (h >> 32)) * inverse) & M64
    return (h ^ (8 << 56) ^ seed).to_bytes(8, "little")


def _crafted(seed, n, mixes=2):
    """n 8-byte tokens whose hashes under the key `seed` share their low 40 bits."""
    tokens = [_token_with_hash((k + 1) << 40, seed, mixes) for k in range(n)]
    pool = np.frombuffer(b"".join(tokens), dtype=np.uint8)
    return tokens, pool, np.arange(0, 8 * n + 1, 8, dtype=np.int64)


def test_tokens_crafted_against_a_known_key_do_not_collide():
    """The key of hash_bytes is drawn at random when the module is imported: tokens crafted to share one slot
    under any key fixed in advance (here the one it had before) are spread like any others, and indexed."""
    assert _gpt2_files.hash_seed != UNKEYED
    tokens, pool, offsets = _crafted(UNKEYED, 20_000, mixes=1)     # the hash as it was
    found = _gpt2_files.index_tokens(pool, offsets, pool, offsets)
    assert found is not None and found.tolist() == list(range(len(tokens)))


def test_keys_differing_in_the_top_bits_of_their_last_word_spread():
    """hash_bytes mixes twice: with one mix, 8-byte keys that differ only in bits 49..63 (their last two bytes,
    less a bit) shared their hashes' low 17 bits, whatever the key, so all 32,768 filled one run of a table
    of 2^16 or 2^17 slots (the index gave up). Now they spread and are indexed."""
    low = int.from_bytes(b"prefix", "little")
    tokens = [(low | (v << 49)).to_bytes(8, "little") for v in range(1 << 15)]
    pool = np.frombuffer(b"".join(tokens), dtype=np.uint8)
    offsets = np.arange(0, 8 * len(tokens) + 1, 8, dtype=np.int64)
    found = _gpt2_files.index_tokens(pool, offsets, pool, offsets)
    assert found is not None and found.tolist() == list(range(len(tokens)))


@pytest.mark.parametrize("length", [71, 72, 100, 200, 333])
def test_long_keys_differing_in_any_one_word_spread(length):
    """The index hashes a key of 72 bytes or more four words at a time (_hashing.hash_wide), then the rest a word
    at a time: keys that differ only in one word, wherever it is (each lane's, the tail's, the first), each take
    their own slots. A word left out of the hash would give 4,096 of them one hash: a run far past the index's
    limit (it would give up)."""
    base = bytes(range(256)) * 2
    for at in range(0, length, 8):
        tokens = [base[:at] + k.to_bytes(2, "little") + base[at + 2:length] for k in range(4096)]
        pool = np.frombuffer(b"".join(tokens), dtype=np.uint8)
        offsets = np.arange(0, length * len(tokens) + 1, length, dtype=np.int64)
        found = _gpt2_files.index_tokens(pool, offsets, pool, offsets)
        assert found is not None and found.tolist() == list(range(len(tokens))), at
        index = _gpt2_files.TokenIndex(pool, offsets)
        other = np.frombuffer(tokens[7][:-1] + b"\xff", dtype=np.uint8)       # its last byte changed
        assert index.find(other, np.array([0, length])).tolist() == ([-1] if tokens[7][-1] != 0xFF else [7])


def test_the_hash_key_is_drawn_per_process_unless_fixed(tmp_path):
    # every module whose source uses hash_bytes keys it at import (a module that did not would keep a fixed key)
    package = pathlib.Path(__file__).resolve().parents[1] / "bpe_fast"      # the sources (the repository's)
    users = sorted(p.stem for p in package.glob("_*.pyx") if any(f"{name}(" in p.read_text()
                                                                  for name in ("hash_bytes", "hash_wide")))
    assert {"_encode", "_gpt2_files", "_scan"} <= set(users)
    for name in users:
        assert "\nhash_seed = seed_hash_bytes()" in (package / f"{name}.pyx").read_text(), name
    code = "import importlib; print(*(importlib.import_module('bpe_fast.' + m).hash_seed for m in %r))" % users
    env = {k: v for k, v in os.environ.items() if k != "BPE_FAST_HASH_SEED"}
    # (run outside the repository, whose uncompiled bpe_fast/ would shadow the installed package)
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True,
                           cwd=tmp_path).stdout.split() for _ in range(2)]
    assert len(set(runs[0] + runs[1])) == 2 * len(users)      # every module, every process: its own key
    assert str(UNKEYED) not in runs[0] + runs[1]
    fixed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           cwd=tmp_path, env=env | {"BPE_FAST_HASH_SEED": "0x1234"}).stdout.split()
    assert fixed == [str(0x1234)] * len(users)
    bad = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                         env=env | {"BPE_FAST_HASH_SEED": "twelve"})
    assert bad.returncode != 0 and "BPE_FAST_HASH_SEED must be an integer, got 'twelve'" in bad.stderr


def test_tokens_crafted_to_share_a_slot_are_declined(tmp_path, monkeypatch):
    """Tokens whose hashes (under this process's key, which an attacker cannot know) share their low 40 bits
    all land in one run of the index's table: it gives up (None) instead of going quadratic, and the files
    are read in Python, with the same result (review F1)."""
    tokens, pool, offsets = _crafted(_gpt2_files.hash_seed, 2000)
    assert _gpt2_files.index_tokens(pool, offsets, pool, offsets) is None
    few = offsets[:101]         # 100 of them crowd a run too, but not past the limit
    assert _gpt2_files.index_tokens(pool[:800], few, pool[:800], few).tolist() == list(range(100))
    vocab = {i: bytes([i]) for i in range(256)} | {256 + k: t for k, t in enumerate(tokens)}
    F.write_vocab(tmp_path / "vocab.json", vocab)
    F.write_merges(tmp_path / "merges.txt", [])
    assert F.read_gpt2_arrays(tmp_path / "vocab.json", tmp_path / "merges.txt") is None
    native, python = both(monkeypatch, F.read_vocab, tmp_path / "vocab.json")
    assert native == python and native[0] == "ok"


def test_bad_calls_are_value_errors():
    """The helpers check their spans rather than reading out of bounds (review F3)."""
    pool, offsets = np.frombuffer(b"abcd", dtype=np.uint8), np.array([0, 1, 3, 4])
    for first, step, span in ((0, 0, 1), (-3, 1, 1), (0, 1, 0)):
        with pytest.raises(ValueError, match="must be >= 0"):
            _gpt2_files.token_list(pool, offsets, first, step, span)
        with pytest.raises(ValueError, match="must be >= 0"):
            _gpt2_files.index_tokens(pool, offsets, pool, offsets, first, step, span)
    for bad in ([0, 5], [2, 1], [-1, 2]):
        with pytest.raises(ValueError, match="offsets must rise"):
            _gpt2_files.token_list(pool, np.array(bad, dtype=np.int64))
        with pytest.raises(ValueError, match="offsets must rise"):
            _gpt2_files.index_tokens(pool, offsets, pool, np.array(bad, dtype=np.int64))
    with pytest.raises(ValueError, match="read-only"):
        F.char_to_byte_table()[0] = 5          # what the native readers map with cannot be changed (review F4)


def test_from_files_with_a_special_token_not_in_the_vocab(tmp_path):
    """A special token that is not a vocab token gets the next id: from_files then takes the general build
    once (review F5), and gives what Tokenizer(vocab, merges, specials) gives."""
    from bpe_fast import Tokenizer

    vocab = {i: bytes([i]) for i in range(256)} | {256: b"ab", 257: b" ab"}
    merges = [(b"a", b"b"), (b" ", b"ab")]
    F.write_vocab(tmp_path / "vocab.json", vocab)
    F.write_merges(tmp_path / "merges.txt", merges)
    fast = Tokenizer.from_files(tmp_path / "vocab.json", tmp_path / "merges.txt", ["<|new|>", "ab"])
    general = Tokenizer(vocab, merges, ["<|new|>", "ab"])
    text = "ab ab<|new|>a ab"        # "ab" a special token (its vocab id), "<|new|>" the next id
    assert fast.encode(text) == general.encode(text) == [256, 32, 256, 258, 97, 32, 256]
    assert fast.vocab == general.vocab and fast._tables.permanent_mask() == general._tables.permanent_mask()


@pytest.mark.parametrize("specials", [None, ["<|new|>"]])
def test_from_files_checks_the_merge_rule_when_a_byte_has_no_token(tmp_path, specials):
    """A vocabulary without some single byte: the ranks rule's check of the arrays (then rule_cuts) could not rank the
    bytes and answered "no difference", so from_files took a list that read_merges, load and the constructor
    refuse ('abc' -> [258], where GPT-2's encoder and HF give [97, 256])."""
    from bpe_fast import Tokenizer
    from bpe_fast.merge_rule import merge_rule_difference

    vocab = {i: bytes([i]) for i in range(1, 256)} | {256: b"bc", 257: b"ab", 258: b"abc"}     # no b"\x00"
    merges = [(b"b", b"c"), (b"a", b"b"), (b"ab", b"c")]
    F.write_vocab(tmp_path / "vocab.json", vocab)
    F.write_merges(tmp_path / "merges.txt", merges)
    assert merge_rule_difference(merges) == (2, (b"a", b"bc"))
    arrays = F.read_gpt2_arrays(tmp_path / "vocab.json", tmp_path / "merges.txt")
    assert arrays is not None and arrays.rule_check() == (merge_rule_difference(merges), False)
    with pytest.raises(FormatError, match=r"merges\.txt:3: merge 'ab c': .* makes b'abc' from b'a' \+ b'bc'"):
        Tokenizer.from_files(tmp_path / "vocab.json", tmp_path / "merges.txt", specials)
    # a list the rule reads as listed still loads, with the encoder's general permanent entries
    F.write_merges(tmp_path / "merges.txt", [(b"a", b"b"), (b"b", b"c"), (b"ab", b"c")])
    fast = Tokenizer.from_files(tmp_path / "vocab.json", tmp_path / "merges.txt", specials)
    general = Tokenizer(vocab, [(b"a", b"b"), (b"b", b"c"), (b"ab", b"c")], specials)
    assert fast.encode("abc\x01bc") == general.encode("abc\x01bc") == [258, 1, 256]
    assert fast._tables.permanent_mask() == general._tables.permanent_mask()


def test_merges_txt_changed_between_the_two_reads_is_named(tmp_path, monkeypatch):
    # from_files reads merges.txt natively and, when the merge rule's check refuses it, again to name the line:
    # a file that no longer holds the refused merge then was an AssertionError
    from bpe_fast import Tokenizer

    vocab = {i: bytes([i]) for i in range(256)} | {256: b"bc", 257: b"ab", 258: b"abc"}
    F.write_vocab(tmp_path / "vocab.json", vocab)
    F.write_merges(tmp_path / "merges.txt", [(b"b", b"c"), (b"a", b"b"), (b"ab", b"c")])
    with pytest.raises(FormatError, match=r"merges\.txt:3: merge 'ab c'"):
        Tokenizer.from_files(tmp_path / "vocab.json", tmp_path / "merges.txt")
    monkeypatch.setattr(F, "read_merges", lambda path, vocab=None: [])      # the second read finds other merges
    with pytest.raises(FormatError, match=r"merges\.txt: changed while it was read"):
        Tokenizer.from_files(tmp_path / "vocab.json", tmp_path / "merges.txt")
