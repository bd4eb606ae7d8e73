"""Hunted bugs of the input rules (a .json file read as JSON lines or as text): each decision is the same
wherever the inputs are resolved, and the results are the oracle's."""
import json
import os
import re

import numpy as np
import pytest

from bpe_fast import GPT2_PATTERN, Tokenizer, count_pretokens, train_bpe
from bpe_fast.shards import encode_files

from encode_oracle import oracle_encode
from train_oracle import oracle_count_pretokens, oracle_train_bpe

EOT = "<|endoftext|>"

DOCS = ["hello world", "foo bar baz", "hello again, world"]


def _records(path, field, docs=DOCS):
    path.write_text("".join(json.dumps({field: d}) + "\n" for d in docs))
    return path


@pytest.fixture(scope="module")
def tok(tmp_path_factory):
    vocab, merges = oracle_train_bpe(" ".join(DOCS) * 3, 280, [EOT], GPT2_PATTERN)
    return Tokenizer(vocab, merges, [EOT])


def _ids(tok, text):
    return oracle_encode(text, tok.vocab, tok.merges, [EOT], GPT2_PATTERN)


def test_encode_files_of_a_json_file_that_is_text_for_its_text_field(tok, tmp_path):
    # a .json of "text" records encoded with text_field="content" is text by the rule (its first line holds no
    # "content"); encode_file's own check sniffed it with "text" and refused it as "a JSON lines file"
    path = _records(tmp_path / "t.json", "text")
    index = encode_files([path], tmp_path / "out", tok, text_field="content")
    assert np.load(tmp_path / "out" / "t.npy").tolist() == _ids(tok, path.read_text())
    assert index["tokens"] == len(_ids(tok, path.read_text()))


def test_cli_encode_of_a_json_file_that_is_text_for_its_text_field(tok, tmp_path):
    from bpe_fast.cli import main
    path = _records(tmp_path / "t.json", "text")
    tok.save(tmp_path / "tok")
    assert main(["encode", "-t", str(tmp_path / "tok"), "--text-field", "content", str(path), "-o",
          str(tmp_path / "t.npy")]) == 0
    assert np.load(tmp_path / "t.npy").tolist() == _ids(tok, path.read_text())


def _oracle(docs):
    total = {}
    for d in docs:
        for k, v in oracle_count_pretokens(d, [EOT], GPT2_PATTERN).items():
            total[k] = total.get(k, 0) + v
    return total


@pytest.mark.parametrize("num_processes", [1, 2])
def test_a_json_file_whose_first_record_has_a_bom_or_invalid_utf8_is_json_lines(tmp_path, num_processes):
    # the sniff took a first line starting with a UTF-8 BOM, or holding invalid UTF-8 (errors="replace"), for no
    # record: the .json was counted as text (keys, quotes and all), where the same lines as .jsonl are records
    rest = "".join(json.dumps({"text": d}) + "\n" for d in DOCS).encode()
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf" + rest)
    assert count_pretokens(bom, [EOT], num_processes=num_processes) == _oracle(DOCS)
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"text": "caf\xe9 au lait"}\n' + rest)
    assert count_pretokens(bad, [EOT], num_processes=num_processes, errors="replace") == \
        _oracle(["caf\ufffd au lait"] + DOCS)
    with pytest.raises(UnicodeError, match=r"bad.json: invalid UTF-8 at line 1, byte offset 13 of the line"):
        count_pretokens(bad, [EOT], num_processes=num_processes)


@pytest.mark.parametrize("name", ["big.json", "big.json.gz"])
def test_a_json_file_whose_first_record_is_longer_than_the_sniff_is_json_lines(tmp_path, monkeypatch, name):
    # the sniff reads at most _SNIFF_BYTES of the first line: a first record longer than that (a book, a code
    # file) was cut, failed json.loads, and the whole file was counted as text, keys and quotes included
    import gzip
    from bpe_fast import inputs
    monkeypatch.setattr(inputs, "_SNIFF_BYTES", 1000)
    long_doc = "x" + " word" * 400
    opener = gzip.open if name.endswith(".gz") else open
    for first in ({"text": long_doc, "id": 1}, {"id": 1, "meta": {"a": [1, 2]}, "text": long_doc}):
        with opener(tmp_path / name, "wt") as f:
            f.write("".join(json.dumps(r) + "\n" for r in [first] + [{"text": d} for d in DOCS]))
        want = _oracle(DOCS)
        want[b"x"] = want.get(b"x", 0) + 1
        want[b" word"] = want.get(b" word", 0) + 400
        assert count_pretokens(tmp_path / name, [EOT], num_processes=1) == want
    # still text: a long first line that is no record holding a string under text_field
    for line in ('{"id": 1, "text": 5, "more": "' + "y " * 600 + '"}', '{"text": ' + "[1, " * 600 + "1]}",
                 '[{"text": "' + "y " * 600 + '"}]'):
        with opener(tmp_path / name, "wt") as f:
            f.write(line + "\n")
        assert count_pretokens(tmp_path / name, [EOT], num_processes=1) == _oracle([line + "\n"]), line[:30]


def test_a_file_that_shrinks_under_the_range_readers_is_an_error_not_a_short_count(tmp_path):
    # the ranges are planned from the file's size; a file cut shorter before a range is read (rewritten, truncated
    # while a run or a Dask task reads it) was counted short without a word: f.read(end - start) returned less
    from bpe_fast.count_workers import count_ranges
    from bpe_fast.dask_counts import _count_pieces
    from bpe_fast.inputs import jsonl_range_batches
    path = tmp_path / "a.txt"
    path.write_text("hello world " * 10)
    size = path.stat().st_size
    with pytest.raises(OSError, match=r"a.txt changed while it was read \(shorter than planned\)"):
        count_ranges([(str(path), 0, 60), (str(path), 60, size + 8)], [], GPT2_PATTERN, "strict")
    records = _records(tmp_path / "r.jsonl", "text")
    with pytest.raises(OSError, match=r"r.jsonl changed while it was read \(shorter than planned\)"):
        list(jsonl_range_batches(str(records), 0, records.stat().st_size + 8, "text", 1 << 20))
    # a Dask task reads the same way, after checking the size
    pieces = [(str(path), size, [(0, size)])]
    want = oracle_count_pretokens(path.read_text(), [], GPT2_PATTERN)
    assert _count_pieces(pieces, [], GPT2_PATTERN, "strict")[2].sum() == sum(want.values())
    with pytest.raises(OSError, match=r"a.txt changed while it was read"):
        _count_pieces([(str(path), size, [(0, 60), (60, size + 8)])], [], GPT2_PATTERN, "strict")


def test_a_json_lines_file_that_shrank_under_a_worker_is_named_before_a_later_files_bad_line(tmp_path):
    # helper-118 #2: "changed while it was read" was an OSError with no filename, so the search for the first
    # failure in the files' order could not place it: a later file's bad line was named instead
    import pickle
    from bpe_fast.count_workers import _first_jsonl_error, _read_files
    from bpe_fast.inputs import ChangedWhileReadError, InputError, Stream, jsonl_range_batches
    first, second = _records(tmp_path / "a.jsonl", "text"), tmp_path / "b.jsonl"
    second.write_text('{"text": "fine"}\n{"txt": "no field"}\n')
    streams = [Stream("jsonl", str(p), str(p)) for p in (first, second)]
    with pytest.raises(ChangedWhileReadError) as info:      # as a worker meets it: a range planned too long
        list(jsonl_range_batches(str(first), 0, first.stat().st_size + 5, "text", 1 << 20))
    met = pickle.loads(pickle.dumps(info.value))            # as it comes back from the worker
    assert isinstance(met, OSError) and met.filename == str(first) and str(met) == str(info.value)
    with pytest.raises(InputError) as later:
        list(jsonl_range_batches(str(second), 0, second.stat().st_size, "text", 1 << 20))
    for seen in ([later.value, met], [met, later.value]):
        assert _first_jsonl_error(streams, "text", "strict", seen) is met
    # the same error from a run of small files read natively, and from a text file's byte range
    assert _read_files([(str(first), first.stat().st_size + 5, False)])[2].filename == str(first)
    assert re.fullmatch(r".*a\.jsonl changed while it was read \(shorter than planned\)", str(met))


def test_a_bad_text_field_is_refused_with_a_dask_client_too(tmp_path):
    # without a client a text_field that is not a str is a TypeError; with one it decided which .json files are
    # JSON lines (record.get(5)) without a word, or failed on an unhashable one inside the sniff
    path = _records(tmp_path / "r.json", "text")
    for bad in (5, ["text"]):
        with pytest.raises(TypeError, match="text_field must be a str"):
            count_pretokens(path, num_processes=1, text_field=bad)
        with pytest.raises(TypeError, match="text_field must be a str"):
            count_pretokens(path, client=object(), text_field=bad)


@pytest.mark.parametrize("cut", [False, True])
def test_a_json_file_whose_first_record_has_a_null_text_is_json_lines(tmp_path, monkeypatch, cut):
    # HF datasets' to_json writes a missing text as null: with the null on line 2 the file is JSON lines (and the
    # reader names the line), with it on line 1 the whole file was counted as text, keys and quotes included
    from bpe_fast import inputs
    if cut:
        monkeypatch.setattr(inputs, "_SNIFF_BYTES", 40)
    path = tmp_path / "nulls.json"
    path.write_text(json.dumps({"text": None, "meta": "m" * 60}) + "\n" + json.dumps({"text": "hello"}) + "\n")
    with pytest.raises(ValueError, match=r"nulls.json:1: field 'text' is NoneType, not a string"):
        count_pretokens(path, num_processes=1)


def test_a_small_damaged_compressed_json_file_is_json_lines(tmp_path):
    # the first line of a .json file is read to decide whether it is JSON lines, and a damaged one by what
    # decompresses of it; but the read that failed lost what it had decompressed (the whole of a small file), so
    # nothing was a record: it was counted as text, and its error named no line
    import gzip
    lines = [json.dumps({"text": f"line {k} hello world"}) for k in range(300)]
    data = gzip.compress(("\n".join(lines) + "\n").encode())
    path = tmp_path / "c.json.gz"
    path.write_bytes(data[:len(data) // 2])
    with pytest.raises(ValueError, match=r"c\.json\.gz: corrupt compressed file after \d+ decompressed bytes "
                                         r"\(line \d+; EOFError"):
        count_pretokens(path, num_processes=1)


@pytest.mark.parametrize("extra, named", [(["--max-bytes", "1MB"], "--max-bytes"),
                                          (["--max-documents", "3"], "--max-documents")])
def test_count_refuses_caps_with_dask_by_their_flags_before_connecting(tmp_path, capsys, extra, named):
    # 'bpe-fast count ... --dask-scheduler ADDR --max-bytes 1MB' connected first, then said 'max_bytes and
    # max_documents are not supported with a Dask client', naming keywords the command line does not have
    pytest.importorskip("distributed")
    from bpe_fast.cli import main
    (tmp_path / "c.txt").write_text("hello world")
    code = main(["-q", "count", str(tmp_path / "c.txt"), "-o", str(tmp_path / "c.npz"), "--dask-scheduler",
                 "not an address", *extra])
    err = capsys.readouterr().err
    assert code == 1 and f"{named} is not supported with --dask-scheduler" in err, err
    assert not (tmp_path / "c.npz").exists()


def test_encode_file_reads_json_lines_under_the_callers_text_field(tok, tmp_path):
    # encode_file had no text_field: code.json of {"code": ...} records was sniffed with "text", found to be text,
    # and its raw JSON (keys, quotes and all) encoded, where training and encode_files read the records
    import gzip
    from bpe_fast import encode_file
    path = _records(tmp_path / "code.json", "code")
    want = [i for d in DOCS for i in _ids(tok, d)]
    out = tmp_path / "o.npy"
    assert encode_file(tok, path, out, text_field="code") == len(want)
    assert np.load(out).tolist() == want
    # the same records in every other form give the same ids
    (tmp_path / "code.jsonl.gz").write_bytes(gzip.compress(path.read_bytes()))
    assert encode_file(tok, tmp_path / "code.jsonl.gz", out, text_field="code") == len(want)
    assert np.load(out).tolist() == want
    # by the rule, with the default field the file is text: its raw JSON, as training reads it
    assert encode_file(tok, path, out) == len(_ids(tok, path.read_text()))
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".npy")] == ["o.npy"]


def test_encode_file_reads_parquet_under_the_callers_text_column(tok, tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    from bpe_fast import encode_file
    pq.write_table(pa.table({"body": DOCS}), tmp_path / "d.parquet")
    out = tmp_path / "o.npy"
    with pytest.raises(ValueError, match=r"d.parquet: no column 'text'"):
        encode_file(tok, tmp_path / "d.parquet", out)
    assert not out.exists()
    encode_file(tok, tmp_path / "d.parquet", out, text_column="body")
    assert np.load(out).tolist() == [i for d in DOCS for i in _ids(tok, d)]


@pytest.mark.parametrize("compression", ["gz", "bz2", "xz"])
def test_a_json_gz_damaged_within_its_first_line_is_named_as_json_lines_are(tmp_path, compression):
    # the sniff's readline of the first record failed on the damage and decided "text": the error then named
    # decompressed bytes of a text file and no line, where the same bytes as .jsonl.gz name line 1 and the offset
    import bz2
    import gzip
    import lzma
    compress = {"gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}[compression]
    first = json.dumps({"text": " ".join(f"w{k}x{k * 7919 % 10007}" for k in range(200_000))}) + "\n"
    data = compress((first + "".join(json.dumps({"text": d}) + "\n" for d in DOCS)).encode())
    errors = {}
    for name in (f"d.json.{compression}", f"d.jsonl.{compression}"):
        (tmp_path / name).write_bytes(data[:len(data) // 2])
        with pytest.raises(ValueError) as info:
            count_pretokens(tmp_path / name, [EOT], num_processes=1)
        errors[name] = str(info.value).replace(str(tmp_path / name), "FILE")
    assert "(line 1; " in errors[f"d.jsonl.{compression}"]
    assert errors[f"d.json.{compression}"] == errors[f"d.jsonl.{compression}"]


@pytest.mark.parametrize("name", ["bad.txt", "bad.txt.gz"])
def test_encode_file_names_the_line_of_invalid_utf8_in_a_compressed_text_as_in_a_plain_one(tok, tmp_path, name):
    # encode_file of bad.txt said "byte offset 12 (line 2)", of the same bytes as bad.txt.gz "byte offset 12" alone
    # (count_pretokens and encode_files name the line of both)
    import gzip
    from bpe_fast import encode_file
    from bpe_fast.inputs import CorpusDecodeError
    data = b"ok\nline two \xff x"
    (tmp_path / name).write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    with pytest.raises(CorpusDecodeError, match=rf"{name}: invalid UTF-8 at byte offset 12 \(line 2\)"):
        encode_file(tok, tmp_path / name, tmp_path / "o.npy")
    assert list(tmp_path.iterdir()) == [tmp_path / name]


def test_encode_file_puts_the_separator_after_each_document(tmp_path):
    # encode_file of JSON lines (or any input) takes encode_files' separator: the documents' ids are told apart
    # (without one they run together); a plain text file is one document, the separator after it
    from bpe_fast import encode_file
    tok = Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"ab"}, [(b"a", b"b")], ["<|eot|>"])
    eot = tok.special_tokens["<|eot|>"]
    records = tmp_path / "d.jsonl"
    records.write_text('{"text": "ab"}\n{"text": "cab"}\n')
    plain = tmp_path / "d.txt"
    plain.write_text("ab c")
    for given in (eot, "<|eot|>"):
        encode_file(tok, records, tmp_path / "r.npy", separator=given, num_processes=1)
        assert np.load(tmp_path / "r.npy").tolist() == [256, eot, 99, 256, eot]
    encode_file(tok, records, tmp_path / "n.npy", num_processes=1)
    assert np.load(tmp_path / "n.npy").tolist() == [256, 99, 256]
    encode_file(tok, plain, tmp_path / "p.npy", separator="<|eot|>", num_processes=2)
    assert np.load(tmp_path / "p.npy").tolist() == [256, 32, 99, eot]
    with pytest.raises(ValueError, match="separator '<|pad|>' is not one of the tokenizer's special tokens"):
        encode_file(tok, records, tmp_path / "x.npy", separator="<|pad|>")
    assert not (tmp_path / "x.npy").exists()


def test_encode_file_with_a_separator_names_the_line_of_invalid_utf8_in_a_text_file(tmp_path):
    # a text file with a separator is read as one document in batches, not by byte ranges: its invalid UTF-8 is
    # still named with its line, as without a separator and as encode_files names it (the line was left out)
    from bpe_fast import encode_file
    from bpe_fast.inputs import CorpusDecodeError
    tok = Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"ab"}, [(b"a", b"b")], ["<|eot|>"])
    path = tmp_path / "t.txt"
    path.write_bytes(b"ab\nab \xff c\n")
    for separator in (None, "<|eot|>"):
        with pytest.raises(CorpusDecodeError, match=r"t.txt: invalid UTF-8 at byte offset 6 \(line 2\)"):
            encode_file(tok, path, tmp_path / "o.npy", separator=separator, num_processes=1)
        with pytest.raises(CorpusDecodeError, match=r"t.txt: invalid UTF-8 at byte offset 6 \(line 2\)"):
            encode_files([path], tmp_path / f"out-{separator}", tok, separator=separator, num_processes=1)
    assert not (tmp_path / "o.npy").exists()


@pytest.mark.parametrize("name", ["docs.jsonl", "docs.jsonl.gz"])
def test_encode_file_of_a_stream_reports_progress_as_it_goes(tok, tmp_path, name):
    # encode_file of JSON lines or a compressed file called progress once, at the end (a long encode of a
    # .jsonl.gz showed nothing until it was over); now after each batch with the documents' bytes done (no
    # total, as counting a stream reports), then the file's size as the end
    import gzip
    from bpe_fast import encode_file
    docs = [f"document {k}: " + "hello world " * (k % 7 + 1) for k in range(400)]
    raw = "".join(json.dumps({"text": d}) + "\n" for d in docs).encode()
    path = tmp_path / name
    path.write_bytes(gzip.compress(raw) if name.endswith(".gz") else raw)
    calls = []
    count = encode_file(tok, path, tmp_path / "o.npy", chunk_bytes=1000, num_processes=1,
                        progress=lambda *a: calls.append(a))
    assert count == sum(len(_ids(tok, d)) for d in docs)
    size = path.stat().st_size
    assert calls[-1] == ("encode", size, size)
    steps = calls[:-1]
    assert len(steps) > 5 and all(stage == "encode" and total is None for stage, _, total in steps)
    done = [d for _, d, _ in steps]
    assert done == sorted(done) and done[-1] == sum(len(d.encode()) for d in docs)


def test_encode_file_of_a_list_names_what_it_takes(tok, tmp_path):
    # encode_file([path], ...) failed with os.fspath's "expected str, bytes or os.PathLike object, not list",
    # naming neither the argument's meaning nor where several inputs go
    from bpe_fast import encode_file
    path = tmp_path / "a.txt"
    path.write_text("hello world\n")
    for given in ([str(path)], (str(path),), iter([str(path)]), 3):
        with pytest.raises(TypeError, match=r"one file's path .*got (list|tuple|list_iterator|int): encode_files"):
            encode_file(tok, given, tmp_path / "o.npy")
    assert not (tmp_path / "o.npy").exists()
    assert encode_file(tok, os.fsencode(path), tmp_path / "o.npy") == len(_ids(tok, "hello world\n"))
