"""The native JSON lines reader (bpe_fast._jsonl.extract_texts, through inputs.jsonl_blocks) against json.loads:
whatever it reads itself must be what json.loads gives, line for line, and every line it leaves is read by
json.loads, so the documents and the errors are json.loads's. A plain-Python oracle gives each line's text."""
import json
import os
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from bpe_fast import GPT2_PATTERN as GPT2
from bpe_fast._jsonl import extract_texts
from bpe_fast.inputs import InputError, jsonl_blocks


def oracle_line(line, field="text"):
    """("blank",), ("text", utf8) or ("error",) for one line (bytes, without its newline), by json.loads."""
    if not line.strip():
        return ("blank",)
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return ("error",)
    if not isinstance(record, dict) or not isinstance(record.get(field), str):
        return ("error",)
    try:
        return ("text", record[field].encode("utf-8"))
    except UnicodeEncodeError:
        return ("error",)


def read_all(data, field="text"):
    """[(line, utf8)] of the block `data` as inputs reads it: natively, and each line left by json.loads (an
    error is ("error", line) and ends the list)."""
    out, start, line = [], 0, 1
    while start < len(data):
        texts, lengths, lines, stop, line = extract_texts(data, start, field.encode(), line)
        at = 0
        for length, number in zip(lengths.tolist(), lines.tolist()):
            out.append((number, texts[at:at + length]))
            at += length
        assert at == len(texts)
        if stop < 0:
            break
        end = data.find(b"\n", stop)
        end = len(data) if end < 0 else end + 1
        expected = oracle_line(data[stop:end].rstrip(b"\n"), field)
        if expected[0] == "error":
            return out + [("error", line)]
        if expected[0] == "text":
            out.append((line, expected[1]))
        line += 1
        start = end
    return out


def oracle_all(data, field="text"):
    out = []
    for number, line in enumerate(data.split(b"\n"), 1):
        expected = oracle_line(line, field)
        if expected[0] == "error":
            return out + [("error", number)]
        if expected[0] == "text":
            out.append((number, expected[1]))
    return out


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),     # json.dumps writes NaN, Infinity
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12)


@st.composite
def json_lines(draw):
    """A JSON line as dataset writers make them: an object holding "text" (a string) among other fields."""
    fields = draw(st.dictionaries(st.text(max_size=6).filter(lambda k: k != "text"), json_values, max_size=4))
    items = list(fields.items())
    items.insert(draw(st.integers(0, len(items))), ("text", draw(st.text())))
    separators = draw(st.sampled_from([(", ", ": "), (",", ":"), (" , ", " : ")]))
    line = json.dumps(dict(items), ensure_ascii=draw(st.booleans()), separators=separators)
    return (draw(st.sampled_from(["", " ", "\t"])) + line + draw(st.sampled_from(["", " ", "\r"]))).encode()


@settings(max_examples=150, deadline=None)
@given(st.lists(json_lines(), min_size=1, max_size=6), st.sampled_from([b"\n", b"\n\n", b"\n \n"]))
def test_lines_as_writers_make_them_are_all_read_natively_as_json_loads_reads_them(lines, gap):
    data = gap.join(lines) + b"\n"
    texts, lengths, numbers, stop, _ = extract_texts(data, 0, b"text", 1)
    assert stop == -1                                   # nothing left to json.loads
    got = [(n, texts[a:b]) for n, a, b in zip(numbers.tolist(), np.cumsum([0, *lengths[:-1]]).tolist(),
                                               np.cumsum(lengths).tolist())]
    assert got == oracle_all(data)


MUTATIONS = b'"\\{}[],:0123456789eE.-+ \t\r\x0b\x0c\x00\x7f\x80\xbf\xc3\xa9\xed\xa0\xf4\x90ufntxNI'


@st.composite
def mutated(draw):
    line = bytearray(draw(json_lines()))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(line)))
        kind = draw(st.sampled_from(["insert", "replace", "delete"]))
        byte = draw(st.sampled_from(MUTATIONS))
        if kind == "insert":
            line[at:at] = bytes([byte])
        elif at < len(line):
            line[at:at + 1] = b"" if kind == "delete" else bytes([byte])
    return bytes(line)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(mutated(), json_lines()), min_size=1, max_size=5))
# each of these is left to json.loads (it reads some of them, and refuses the rest)
@example([b'{"text": NaN}', b'{"a": NaN, "text": "x"}', b'{"a": Infinity, "text": "x"}',
          b'{"a": -Infinity, "text": "x"}', b'{"a": -NaN, "text": "x"}', b'{"a": NaNa, "text": "x"}',
          b'{"a": [Infinity, -Infinit], "text": "x"}', b'{"a": nan, "text": "x"}'])
@example([b'{"text": "a", "text": "b"}', b'{"te\\u0078t": "esc"}', b'{"te\\u0078t": "a", "text": "b"}',
          b'{"\\ud800": 1, "text": "lone key"}', b'{"text": "\\ud800"}',
          b'{"a": "\\ud800", "text": "lone elsewhere"}', b'{"text": "\\udc00\\ud800"}'])
@example([b'\xef\xbb\xbf{"text": "bom"}', b'{"a": 01, "text": "x"}', b'{"a": 1., "text": "x"}',
          b'{"a": -, "text": "x"}', b'{"a": 1e, "text": "x"}', b'{"text": "x"} x', b'["text"]', b"{}",
          b'{"text": null}', b'{"text": "\xff"}', b'{"a": "\xed\xa0\x80", "text": "x"}', b'{"text": "\x01"}',
          b'\x0b', b'\x0c{"text": "x"}', b'{"text": "\\/\\b\\f\\n\\r\\t\\"\\\\"}'])
@example([b'{"a": ' + b"[" * 300 + b"]" * 300 + b', "text": "deep"}',
          b'{"a": ' + b"9" * 5000 + b', "text": "huge int"}', b'{"a": ' + b"[" * 200 + b"]" * 200 + b', "text": "ok"}'])
def test_every_line_reads_as_json_loads_reads_it(lines):
    data = b"\n".join(lines)
    assert read_all(data) == oracle_all(data)


def test_a_line_left_to_json_loads_is_named_and_the_field_can_be_any_key(tmp_path):
    # through the reader: the line it leaves is json.loads's, with its error naming the file and line
    path = tmp_path / "c.jsonl"
    path.write_bytes(b'{"body": "one"}\n\n{"body": "x", "body": "t\\u00e9"}\n{"body": 3}\n')
    blocks = jsonl_blocks(str(path), "body")
    assert [(t, list(n)) for t, _, n in [next(blocks), next(blocks)]] == [(b"one", [1]), ("té".encode(), [3])]
    with pytest.raises(InputError, match=r"c\.jsonl:4: field 'body' is int, not a string"):
        next(blocks)


def test_lines_longer_than_a_read_and_a_last_line_without_newline(tmp_path, monkeypatch):
    import bpe_fast.inputs as inputs
    monkeypatch.setattr(inputs, "_READ_BYTES", 7)              # every line spans several reads
    docs = ["x" * 30, "", "é" * 11, "last"]
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(json.dumps({"text": d}) for d in docs) + "\n\n" + json.dumps({"text": "end"}))
    got = [(texts, lengths.tolist(), lines.tolist()) for texts, lengths, lines in jsonl_blocks(str(path), "text")]
    flat = [(line, texts) for texts, _, ls in got for line in ls]
    assert [line for line, _ in flat] == [1, 2, 3, 4, 6]
    assert b"".join(t for t, _, _ in got) == "".join(docs + ["end"]).encode()


def test_extract_texts_checks_its_start():
    with pytest.raises(ValueError, match="start 5 is outside the data"):
        extract_texts(b"{}", 5, b"text", 1)
    assert extract_texts(b"", 0, b"text", 7)[3:] == (-1, 7)


# ---- uncompressed JSON lines read by the workers themselves, a range of whole lines each ----------

def test_jsonl_ranges_are_whole_lines_covering_the_file(tmp_path):
    from bpe_fast.inputs import jsonl_ranges
    path = tmp_path / "c.jsonl"
    data = b"".join(b'{"text": "%s"}\n' % (b"x" * (k % 37)) for k in range(500)) + b'{"text": "no newline"}'
    path.write_bytes(data)
    for pieces in (1, 2, 7, 64, 5000):
        ranges = jsonl_ranges(str(path), pieces)
        assert ranges[0][0] == 0 and ranges[-1][1] == len(data)
        assert all(a < b for a, b in ranges) and all(b == c for (_, b), (c, _) in zip(ranges, ranges[1:]))
        assert all(data[b - 1:b] == b"\n" for _, b in ranges[:-1])
        assert len(ranges) <= pieces
    assert jsonl_ranges(str(tmp_path / "c.jsonl.gz"), 4) is None


def worker_ranges(monkeypatch):
    """Make any JSON lines file big enough for the workers to read it in ranges."""
    import bpe_fast.count_workers as cw
    monkeypatch.setattr(cw, "_IN_PROCESS_BYTES", 0)
    calls = []
    real = cw.count_unit_tables
    monkeypatch.setattr(cw, "count_unit_tables",
                        lambda run, units, *a, **k: calls.append(len(units)) or real(run, units, *a, **k))
    return calls


def test_json_lines_read_by_the_workers_count_as_the_documents_read_in_order(tmp_path, monkeypatch):
    from bpe_fast import count_pretokens, train_bpe
    from corpora import EOT, make_corpus
    from train_oracle import oracle_count_pretokens
    calls = worker_ranges(monkeypatch)
    docs = [make_corpus(k, n_words=k % 40) for k in range(120)]
    lines = []
    for k, d in enumerate(docs):
        record = {"id": k, "text": d} if k % 3 else {"text": d, "meta": {"k": [k, None, True]}}
        line = json.dumps(record, ensure_ascii=bool(k % 2))
        if k % 17 == 0:
            line = '{"text": "replaced", ' + line[1:]             # the field twice: left to json.loads
        lines.append(line + ("\r" if k % 5 == 0 else ""))
        if k % 11 == 0:
            lines.append("  ")                                  # blank
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    expected = oracle_count_pretokens(EOT.join(docs), [EOT], GPT2)
    for procs in (2, 3):
        assert count_pretokens(path, [EOT], num_processes=procs, chunk_bytes=1 << 10) == expected
    assert calls and all(n >= 4 for n in calls)
    one = train_bpe(path, 256 + 1 + 40, [EOT], num_processes=1)
    two = train_bpe(path, 256 + 1 + 40, [EOT], num_processes=2, chunk_bytes=1 << 10)
    assert two == one and two.training["corpus"] == one.training["corpus"]
    assert two.training["corpus"]["documents"] == len(docs)


def test_small_json_lines_files_are_read_in_runs_and_count_as_each_read_in_order(tmp_path, monkeypatch):
    # a folder of 19,763 JSON lines files of 4.6 KB took 3x one file of them all: each file was a unit a worker
    # opened and parsed alone; small files are now read whole, natively, in runs of neighbours, each file's lines
    # numbered from 1, beside the ranges of the large files; the first bad line in the files' order is named
    import bpe_fast.count_workers as cw
    from bpe_fast import count_pretokens, train_bpe
    from corpora import EOT, make_corpus
    from train_oracle import oracle_count_pretokens
    calls = worker_ranges(monkeypatch)
    monkeypatch.setattr(cw, "_IN_PROCESS_BYTES", 4000)
    docs = [make_corpus(300 + k, n_words=(k * 7) % 50) for k in range(90)]
    folder = tmp_path / "shards"
    folder.mkdir()
    at = 0
    for f in range(30):               # files of 0 to 8 documents, some empty, one large
        n = 60 if f == 11 else f % 9 if f != 20 else 0
        lines = [json.dumps({"text": d, "n": k}) for k, d in enumerate(docs[at:at + n])]
        at += n
        (folder / f"{f:02d}.jsonl").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    used = docs[:at]
    units = cw.jsonl_units([cw.Stream("jsonl", str(p), str(p)) for p in sorted(folder.iterdir())], 2, 1 << 10)
    assert any(len(unit) > 1 for unit in units) and any(len(unit) == 1 for unit in units), units
    expected = oracle_count_pretokens(EOT.join(used), [EOT], GPT2)
    for procs in (2, 3):
        assert count_pretokens(folder, [EOT], num_processes=procs, chunk_bytes=1 << 10) == expected
    assert calls
    two = train_bpe(folder, 256 + 1 + 40, [EOT], num_processes=2, chunk_bytes=1 << 10)
    assert two == train_bpe(folder, 256 + 1 + 40, [EOT], num_processes=1)
    assert two.training["corpus"]["documents"] == len(used)
    # a bad line in a small file of a run, and a later one: the first in the files' order, its line numbered
    (folder / "05.jsonl").write_text('{"text": "ok"}\n{"text": "ok"}\n{"txet": "oops"}\n', encoding="utf-8")
    (folder / "25.jsonl").write_text('{"text": 5}\n', encoding="utf-8")
    for procs in (2, 3):
        with pytest.raises(InputError, match=r"05\.jsonl:3: no field 'text'"):
            count_pretokens(folder, [EOT], num_processes=procs, chunk_bytes=1 << 10)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
def test_a_json_lines_pipe_beside_files_read_by_ranges_is_read(tmp_path, monkeypatch):
    # jsonl_ranges cut a pipe named *.jsonl by its size (0) into no range: with a file the workers read by
    # ranges, its documents were silently left out of the counts
    from bpe_fast import count_pretokens
    worker_ranges(monkeypatch)
    lines = [json.dumps({"text": f"document {k} " * 20}) for k in range(400)]
    (tmp_path / "a.jsonl").write_text("\n".join(lines) + "\n")
    pipe = tmp_path / "p.jsonl"
    os.mkfifo(pipe)

    def write():
        with open(pipe, "w") as f:
            f.write('{"text": "zebra zebra"}\n')

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        counts = count_pretokens([tmp_path / "a.jsonl", pipe], num_processes=2, chunk_bytes=1 << 10)
    finally:
        if writer.is_alive():                  # not read: open it, so that the writer ends
            with open(pipe, "rb") as f:
                f.read()
        writer.join()
    assert dict(counts.most_common())[b" zebra"] == 1


def test_the_first_bad_line_in_the_file_is_named_whichever_worker_meets_it(tmp_path, monkeypatch):
    from bpe_fast import count_pretokens
    worker_ranges(monkeypatch)
    lines = [json.dumps({"text": f"document {k} " * 20}) for k in range(400)]
    lines[250] = '{"text": 250}'
    lines[390] = "not json"
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(lines) + "\n")
    for procs in (2, 3):
        with pytest.raises(InputError, match=r"c\.jsonl:251: field 'text' is int, not a string"):
            count_pretokens(path, num_processes=procs, chunk_bytes=1 << 10)
    lines[250] = json.dumps({"text": "fine"})
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"c\.jsonl:391: not a JSON line"):
        count_pretokens(path, num_processes=2, chunk_bytes=1 << 10)


def test_invalid_utf8_in_a_json_line_is_named_or_replaced(tmp_path, monkeypatch):
    # errors="replace" did nothing for JSON lines: json.loads of the bytes failed, "not a JSON line"
    import gzip

    from bpe_fast import count_pretokens
    from bpe_fast.inputs import CorpusDecodeError
    from corpora import EOT
    from train_oracle import oracle_count_pretokens
    worker_ranges(monkeypatch)
    raw = [json.dumps({"text": f"document {k} caf\u00e9 " * 5}, ensure_ascii=False).encode() for k in range(400)]
    raw[100] = raw[100].replace(b"caf\xc3\xa9", b"caf\xe9", 1)       # Latin-1 in a UTF-8 file
    raw[300] = b'{"text": "cut \xf0\x9f here"}'                       # a truncated sequence
    data = b"\n".join(raw) + b"\n"
    docs = [json.loads(line.decode("utf-8", "replace"))["text"] for line in raw]
    expected = oracle_count_pretokens(EOT.join(docs), [EOT], GPT2)
    (tmp_path / "c.jsonl").write_bytes(data)
    (tmp_path / "c.jsonl.gz").write_bytes(gzip.compress(data))
    bad_at = raw[100].index(b"\xe9")
    for name in ("c.jsonl", "c.jsonl.gz"):
        for procs in (1, 2):
            with pytest.raises(CorpusDecodeError, match=rf"{name}: invalid UTF-8 at line 101, byte offset "
                                                        rf"{bad_at} of the line"):
                count_pretokens(tmp_path / name, [EOT], num_processes=procs, chunk_bytes=1 << 10)
            got = count_pretokens(tmp_path / name, [EOT], num_processes=procs, chunk_bytes=1 << 10,
                                  errors="replace")
            assert got == expected


def test_the_utf8_of_a_surrogate_in_a_json_line_is_replaced_as_in_a_text_file(tmp_path, monkeypatch):
    # ED A0 80 (a surrogate's UTF-8, as CESU-8 / WTF-8 writers leave it) is not UTF-8: a text file holding it
    # reads with U+FFFD for each byte under errors="replace". json.loads reads it as a lone surrogate, so a JSON
    # line holding it in its text was an error ("holds a lone surrogate") even with errors="replace".
    from bpe_fast import count_pretokens
    from bpe_fast.inputs import CorpusDecodeError
    from corpora import EOT
    from train_oracle import oracle_count_pretokens
    worker_ranges(monkeypatch)
    raw = [json.dumps({"text": f"doc {k} caf\u00e9"}, ensure_ascii=False).encode() for k in range(300)]
    raw[40] = b'{"text": "cut \xed\xa0\x80 here"}'
    raw[200] = b'{"text": "x \xed\xb0\x80\xed\xa0\x80y"}'
    data = b"\n".join(raw) + b"\n"
    (tmp_path / "c.jsonl").write_bytes(data)
    texts = [line.decode("utf-8", "replace") for line in raw]
    docs = [t[len('{"text": "'):-len('"}')] for t in texts]
    assert docs[40] == "cut \ufffd\ufffd\ufffd here"
    expected = oracle_count_pretokens(EOT.join(docs), [EOT], GPT2)
    for procs in (1, 2):
        assert count_pretokens(tmp_path / "c.jsonl", [EOT], num_processes=procs, chunk_bytes=1 << 10,
                               errors="replace") == expected
        with pytest.raises(CorpusDecodeError, match="c.jsonl: invalid UTF-8 at line 41, byte offset 14 of the line"):
            count_pretokens(tmp_path / "c.jsonl", [EOT], num_processes=procs, chunk_bytes=1 << 10)
    (tmp_path / "c.txt").write_bytes(raw[40])
    assert count_pretokens(tmp_path / "c.txt", num_processes=1, errors="replace") == \
        count_pretokens(iter([texts[40]]), num_processes=1)


def test_a_line_is_utf8_before_json_loads_reads_it(tmp_path):
    # json.loads of a line's bytes read the UTF-8 of a surrogate (ED A0 80) as a lone surrogate, so with
    # errors="strict" a line holding it outside its text was read, and one holding it in its text was "a lone
    # surrogate", not invalid UTF-8; and it read a line with NULs in its first bytes (valid UTF-8, not JSON) as
    # UTF-16 or UTF-32
    from bpe_fast.inputs import CorpusDecodeError
    path = tmp_path / "c.jsonl"
    path.write_bytes(b'{"text": "a"}\n{"text": "b", "x": "\xed\xa0\x80"}\n')
    with pytest.raises(CorpusDecodeError, match=r"c\.jsonl: invalid UTF-8 at line 2, byte offset 20 of the line"):
        list(jsonl_blocks(str(path), "text"))
    assert [t for t, _, _ in jsonl_blocks(str(path), "text", "replace")] == [b"a", b"b"]
    for encoding in ("utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"):
        path.write_bytes('{"text": "a"}'.encode(encoding))
        with pytest.raises(InputError, match=r"c\.jsonl:1: not a JSON line"):
            list(jsonl_blocks(str(path), "text"))


def test_a_line_with_a_byte_order_mark_reads_as_json_loads_reads_it(tmp_path):
    from bpe_fast import count_pretokens
    path = tmp_path / "c.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"text": "a b"}\n{"text": "c d"}\n')
    for errors in ("strict", "replace"):
        assert dict(count_pretokens(path, num_processes=1, errors=errors).most_common()) == \
            {b"a": 1, b" b": 1, b"c": 1, b" d": 1}


def test_what_json_loads_refuses_past_pythons_limits_is_left_to_it(tmp_path):
    import sys
    line = b'{"text": "a", "n": ' + b"1" * 1000 + b"}"
    assert extract_texts(line, 0, b"text", 1)[:2][0] == b"a"                  # under the default limit
    assert extract_texts(line, 0, b"text", 1, max_digits=640)[3] == 0         # left to json.loads
    path = tmp_path / "c.jsonl"
    path.write_bytes(b'{"text": "fine"}\n' + line + b"\n")
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(640)
    try:
        with pytest.raises(InputError, match=r"c\.jsonl:2: not a JSON line"):
            list(jsonl_blocks(str(path), "text"))
    finally:
        sys.set_int_max_str_digits(limit)
    assert b"".join(t for t, _, _ in jsonl_blocks(str(path), "text")) == b"finea"
    deep = b'{"a": ' + b"[" * 100 + b"]" * 100 + b', "text": "deep"}'
    assert extract_texts(deep, 0, b"text", 1, max_depth=50)[3] == 0
    assert extract_texts(deep, 0, b"text", 1, max_depth=200)[0] == b"deep"


def test_json_lines_are_read_on_a_python_without_a_limit_on_int_digits(tmp_path, monkeypatch):
    # sys.get_int_max_str_digits came with Python 3.9.14 and 3.10.7 (requires-python is >=3.9): before, reading
    # any JSON lines file raised AttributeError
    import sys
    monkeypatch.delattr(sys, "get_int_max_str_digits")
    path = tmp_path / "c.jsonl"
    path.write_bytes(b'{"text": "a", "n": ' + b"1" * 5000 + b'}\n')
    assert [t for t, _, _ in jsonl_blocks(str(path), "text")] == [b"a"]


def test_nesting_is_left_to_json_loads_within_its_own_limit_whatever_the_recursion_limit(tmp_path, monkeypatch):
    # the native reader took nesting up to sys.getrecursionlimit() // 4 deep, but json.loads of Python 3.12 nests
    # no deeper than its C recursion limit (1500) whatever sys.getrecursionlimit() is: with the limit raised to
    # 100,000 a line nested 3,000 deep was read here and refused by json.loads (RecursionError) on 3.12
    import sys
    import bpe_fast.inputs as inputs
    stops = []
    real = inputs.extract_texts
    monkeypatch.setattr(inputs, "extract_texts", lambda *a: stops.append(real(*a)[3]) or real(*a))
    line = b'{"a": ' + b"[" * 3000 + b"]" * 3000 + b', "text": "deep"}'
    path = tmp_path / "c.jsonl"
    path.write_bytes(line + b"\n")
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(100_000)
    try:
        expected = oracle_line(line)
        try:
            got = ("text", b"".join(t for t, _, _ in jsonl_blocks(str(path), "text")))
        except InputError:
            got = ("error",)
    finally:
        sys.setrecursionlimit(limit)
    assert got == expected                              # json.loads's reading, whichever it is
    assert stops[0] == 0                                # left to json.loads


def test_a_damaged_compressed_file_gives_the_lines_before_the_damage(tmp_path):
    import gzip
    from bpe_fast import count_pretokens
    lines = [json.dumps({"text": f"line {k} " + "word " * (k % 50)}) for k in range(20000)]
    data = gzip.compress(("\n".join(lines) + "\n").encode())
    path = tmp_path / "c.jsonl.gz"
    path.write_bytes(data[:len(data) * 2 // 3])
    read = []
    with pytest.raises(InputError, match=r"c\.jsonl\.gz: corrupt compressed file after \d+ decompressed bytes") \
            as info:
        for texts, _, numbers in jsonl_blocks(str(path), "text"):
            read.extend(numbers.tolist())
    assert read == list(range(1, len(read) + 1)) and len(read) > 10000      # every whole line before the damage
    message = str(info.value)
    assert f"(line {len(read) + 1};" in message
    assert f"after {sum(len(line) + 1 for line in lines[:len(read)])} decompressed bytes" in message
    counts = count_pretokens(path, num_processes=1, max_documents=10)        # the cap stops before the damage
    assert counts == count_pretokens(iter([json.loads(x)["text"] for x in lines[:10]]), num_processes=1)


def test_a_small_damaged_compressed_file_gives_the_lines_before_the_damage(tmp_path):
    # the lines were read again a readline at a time, and the read under the first one decompressed the whole
    # of a small file, then failed and lost it: no line read, and "after 0 decompressed bytes (line 1; ..."
    import gzip
    lines = [json.dumps({"text": f"line {k} hello world"}) for k in range(300)]
    data = gzip.compress(("\n".join(lines) + "\n").encode())
    path = tmp_path / "c.jsonl.gz"
    path.write_bytes(data[:len(data) // 2])
    read = []
    with pytest.raises(InputError, match=r"c\.jsonl\.gz: corrupt compressed file after \d+ decompressed bytes") \
            as info:
        for texts, _, numbers in jsonl_blocks(str(path), "text"):
            read.extend(numbers.tolist())
    assert read == list(range(1, len(read) + 1)) and len(read) > 100
    assert f"after {sum(len(line) + 1 for line in lines[:len(read)])} decompressed bytes (line {len(read) + 1};" \
        in str(info.value)


def test_a_corrupt_compressed_file_gives_the_lines_that_decompress(tmp_path):
    # a corrupt (not cut) stream fails inside a read of the decompressor, which loses what that read had
    # decompressed: read again by read1's of 64 KB, a .jsonl.xz whose first 8 KB of lines decompress gave none of
    # them, "after 0 decompressed bytes (line 1; ..."
    import lzma
    lines = [json.dumps({"text": f"line {k} " + " ".join(["hello", "world", "tokens"][j % 3] * (k % 5 + 1)
                                                          for j in range(k % 11))}) for k in range(300)]
    data = bytearray(lzma.compress(("\n".join(lines) + "\n").encode()))
    data[len(data) // 3] ^= 0x55
    path = tmp_path / "c.jsonl.xz"
    path.write_bytes(data)
    decompressor, out = lzma.LZMADecompressor(), b""
    for k in range(len(data)):          # what decompresses, a byte at a time
        try:
            out += decompressor.decompress(bytes(data[k:k + 1]))
        except lzma.LZMAError:
            break
    whole = out[:out.rfind(b"\n") + 1]
    assert whole.count(b"\n") > 50
    read = []
    with pytest.raises(InputError, match=r"corrupt compressed file after (\d+) decompressed bytes") as info:
        for _, _, numbers in jsonl_blocks(str(path), "text"):
            read.extend(numbers.tolist())
    assert read == list(range(1, len(read) + 1))
    reached = sum(len(line) + 1 for line in lines[:len(read)])
    assert f"after {reached} decompressed bytes (line {len(read) + 1};" in str(info.value)
    assert len(whole) - 2048 <= reached <= len(whole)


def test_a_field_name_that_is_not_a_str_is_a_type_error(tmp_path):
    from bpe_fast import count_pretokens
    path = tmp_path / "c.jsonl"
    path.write_text('{"text": "a"}\n')
    with pytest.raises(TypeError, match="text_field must be a str, got int"):
        count_pretokens(path, text_field=3)


def test_a_file_shorter_when_read_again_after_damage_is_an_error_not_a_loop(tmp_path):
    # reading again up to a failed read's offset (_jsonl_until_damage) looped for good when the file had become
    # shorter in between (f.read gave b"" and the count of bytes left never fell)
    import gzip
    from bpe_fast.inputs import _jsonl_until_damage
    path = tmp_path / "short.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"text": "a"}\n'))
    with pytest.raises(InputError, match=r"short\.jsonl\.gz: ended after 14 decompressed bytes when read again, "
                                         r"where 1000 were read before"):
        list(_jsonl_until_damage(str(path), 1000, 2, "text"))


def test_a_read_failure_that_does_not_come_back_reads_the_rest_in_large_reads(tmp_path, monkeypatch):
    # after a failed read, the file is read again by read1's of 1 KB to find the damage; when the failure does
    # not come back (a transient error), every line still comes out, and the reads past the place of the
    # failure go back to 1 MB (1 KB reads of a file of gigabytes took minutes)
    import gzip
    import bpe_fast.inputs as inputs
    lines = [json.dumps({"text": f"document {k} " + "x" * 200}) for k in range(100_000)]    # about 22 MB
    path = tmp_path / "d.jsonl.gz"
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode(), compresslevel=1))
    real_open = inputs.open_binary
    calls = {"read1": 0}

    class FailsOnce:
        def __init__(self, f):
            self.f, self.reads = f, 0

        def read(self, n=-1):
            self.reads += 1
            if self.reads == 2:
                raise EOFError("a transient failure")
            return self.f.read(n)

        def read1(self, n=-1):
            calls["read1"] += 1
            return self.f.read1(n)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

    def fake_open(p, damaged=False):
        f = real_open(p, damaged)
        return FailsOnce(f) if not damaged else _Counting(f)

    class _Counting(FailsOnce):
        def read(self, n=-1):
            return self.f.read(n)

    monkeypatch.setattr(inputs, "open_binary", fake_open)
    got = [t.decode() for texts, lengths, _ in jsonl_blocks(str(path), "text")
           for t in np.split(np.frombuffer(texts, dtype=np.uint8), np.cumsum(lengths)[:-1]) for t in [t.tobytes()]]
    assert got == [json.loads(line)["text"] for line in lines]
    assert calls["read1"] < 6_000, calls      # 1 KB reads for 5 MB past the failure, then 1 MB ones


def test_damage_error_of_a_failure_that_does_not_come_back_stops_reading_past_it(tmp_path, monkeypatch):
    # a failure at 1 MB that a read again does not meet: the first failure's offset stands, and the read again
    # stops a few MB past it (it read the whole file in 1 KB reads)
    import gzip
    import bpe_fast.inputs as inputs
    path = tmp_path / "t.txt.gz"
    path.write_bytes(gzip.compress(os.urandom(12 << 20).hex().encode(), compresslevel=1))     # 24 MB of text
    real_open = inputs.open_binary
    calls = []

    def counting_open(p, damaged=False):
        f = real_open(p, damaged)
        read1 = f.read1
        def counted(n=-1):
            block = read1(n)
            calls.append(len(block))
            return block
        f.read1 = counted
        return f

    monkeypatch.setattr(inputs, "open_binary", counting_open)
    error = inputs._damage_error(str(path), "t.txt.gz", 1 << 20, EOFError("gone"))
    assert f"after {1 << 20} decompressed bytes (EOFError: gone)" in str(error)
    assert sum(calls) < 8 << 20, (len(calls), sum(calls))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
@pytest.mark.parametrize("which", ["small", "large"])
def test_a_json_lines_file_replaced_by_a_pipe_after_listing_is_refused_not_waited_on(tmp_path, which):
    # helper-118: a file the workers read by ranges, or the in-order read that names the first bad line after a
    # run of small files failed, opened the pipe put in its place and waited for a writer for ever
    import subprocess
    import sys
    script = f"""
import json, os, sys
import bpe_fast.count_workers as cw
from bpe_fast import GPT2_PATTERN
cw._IN_PROCESS_BYTES = 1000
folder = {str(tmp_path)!r}
paths = []
for k in range(40):
    path = os.path.join(folder, f"{{k:02d}}.jsonl")
    n = 400 if (k == 5 and {which!r} == "large") else 150
    with open(path, "w") as f:
        f.writelines(json.dumps({{"text": f"doc {{k}} line {{j}} " * 5}}) + "\\n" for j in range(n))
    paths.append(path)
streams = [cw.Stream("jsonl", p, p) for p in paths]
units = cw.jsonl_units(streams, 2, 1 << 10 if {which!r} == "large" else 1 << 20)
unit_of_5 = [u for u in units if any(p == paths[5] for p, _, _ in u)]
assert unit_of_5 and all(len(u) > 1 for u in unit_of_5) == ({which!r} == "small"), units
os.unlink(paths[5])
os.mkfifo(paths[5])
try:
    cw.count_unit_tables(streams, units, [], GPT2_PATTERN, 2, "strict", "text", "text", 1 << 20, None)
except OSError as exc:
    print("refused:", exc)
    sys.exit(0)
sys.exit("counted a pipe")
"""
    # (run from tmp_path: `python -c` puts its working folder first on sys.path, and from a source checkout that
    # is the uncompiled package, not the installed one)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "refused: [Errno 22] no longer a regular file" in done.stdout and "05.jsonl" in done.stdout, done.stdout


_LINES = st.sampled_from([
    '{"text": "plain words"}', '{"text": "caf\\u00e9 \\ud83d\\ude00", "id": 3}', '{"text": "é 漢字 tab\\t"}',
    "", "   ", '\ufeff{"text": "after a BOM"}', '{"text": "crlf"}\r', '{"id": 1}', '{"text": 5}', "not json",
    '{"text": "lone \\ud800"}', '{"text": "a", "text": "twice"}', '{"text": "nested", "m": {"a": [1, {"b": null}]}}',
    '{"text": "half a ', 'line"}'])          # (one line if a file's last line had no newline and the next went on)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files=st.lists(st.tuples(st.lists(_LINES, max_size=5), st.booleans()), min_size=1, max_size=6),
       errors=st.sampled_from(["strict", "replace"]))
@example(files=[(['{"text": "whole"}', '{"text": "half a '], False), (['line"}'], True)], errors="strict")
def test_a_run_of_small_json_lines_files_read_as_one_block_gives_what_each_file_read_alone_gives(
        tmp_path_factory, files, errors):
    # _jsonl_run_documents reads a run of files whose last lines all end in a newline as one block (their lines
    # are then the files' lines); the oracle is the same run read a file at a time (whole=False): the same
    # documents, or the same error, which names the file and line
    from bpe_fast.count_workers import _jsonl_run_documents, _read_files
    folder = tmp_path_factory.mktemp("run")
    unit = []
    for k, (lines, ended) in enumerate(files):
        data = ("\n".join(lines) + ("\n" if ended and lines else "")).encode("utf-8", "surrogatepass")
        (folder / f"{k}.jsonl").write_bytes(data)
        unit.append((str(folder / f"{k}.jsonl"), 0, len(data)))
    data, bounds, failure = _read_files([(path, end, False) for path, _, end in unit])
    assert failure is None

    def read(whole):
        try:
            return _jsonl_run_documents(unit, data, bounds, "text", errors, whole=whole)
        except (InputError, UnicodeError) as exc:
            return type(exc), str(exc)

    alone, together = read(False), read(True)
    if isinstance(alone, tuple) and isinstance(alone[0], type):        # an error: the same one
        assert together == alone
        return
    texts, doc_bounds, owner = together
    assert (texts, doc_bounds.tolist()) == (alone[0], alone[1].tolist())
    assert len(owner) == len(alone[2]) == len(doc_bounds) - 1
    assert (owner == -1).all() or np.array_equal(owner, alone[2])     # not known when read as one block
    # each file's documents, read by the reader of a whole file, in the order of the files
    by_file = [texts[doc_bounds[d]:doc_bounds[d + 1]] for d in range(len(owner))]
    expected = [t[a:b] for path, _, _ in unit for t, lengths, _ in jsonl_blocks(path, "text", errors)
                for a, b in zip(np.concatenate([[0], np.cumsum(lengths)[:-1]]), np.cumsum(lengths))]
    assert by_file == expected


def test_a_bad_document_of_a_run_read_as_one_block_is_named_in_its_file(tmp_path):
    # read as one block, the documents' files are not known; the counter's error for one is placed by reading
    # the run again a file at a time
    from bpe_fast.count_workers import _count_jsonl_unit
    from bpe_fast.inputs import CorpusDecodeError
    unit = []
    for k in range(4):
        data = (json.dumps({"text": f"file {k} one"}) + "\n" + json.dumps({"text": f"file {k} two"}) + "\n").encode()
        (tmp_path / f"{k}.jsonl").write_bytes(data)
        unit.append((str(tmp_path / f"{k}.jsonl"), 0, len(data)))

    class Refusing:
        errors = "strict"

        def add_documents(self, texts, bounds):
            at = texts.index(b"file 2 two") + 5       # the second document of the third file
            raise UnicodeDecodeError("utf-8", texts, at, at + 1, "invalid start byte")

    with pytest.raises(CorpusDecodeError) as info:
        _count_jsonl_unit([unit], "text", 1 << 20, "strict", Refusing(), 0, None, None)
    assert (info.value.path, info.value.offset) == (unit[2][0], 5)
