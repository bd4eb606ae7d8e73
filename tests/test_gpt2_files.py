"""bpe_fast._gpt2_files, the native readers of vocab.json and merges.txt: what bpe_fast.formats reads with them
must be exactly what its Python reader gives (the oracle: the same function with the native reader switched
off), for well-formed files and for any mutation of one (then both give the same result or the same error)."""
import json

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
    table = F._CHAR_TO_BYTE_ARRAY
    tokens, ids = _gpt2_files.parse_vocab('{"Ġthe": 7, "a\\u0120": 2}'.encode(), table, F.MAX_TOKEN_ID)
    assert tokens == [b" the", b"a "] and ids.tolist() == [7, 2]
    lefts, rights, joined, lines = _gpt2_files.parse_merges("#version: 0.2\nĠ t\n\nh e\r\n".encode(), table)
    assert (lefts, rights, joined, lines.tolist()) == ([b" ", b"h"], [b"t", b"e"], [b" t", b"he"], [2, 4])
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
