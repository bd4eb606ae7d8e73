"""The native Parquet reader (bpe_fast._parquet, inputs' glue) against pyarrow: the same documents for every
file pyarrow writes that it reads (and the files it leaves to pyarrow read as before), the counts of the same
documents given as an iterable, and damaged files an InputError naming the file, never a crash (run in-process:
a crash kills pytest, which is the failure)."""
import os
import random
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from bpe_fast import count_pretokens
from bpe_fast.inputs import InputError, parquet_reader, read_documents

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

EOT = "<|endoftext|>"


def arrow_documents(path, column="text"):
    """pyarrow's documents of the column (a null: b""), as (data, int64 bounds)."""
    values = pq.read_table(path, columns=[column]).column(0).combine_chunks()
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    blobs = [v or b"" for v in values.cast(pa.large_binary()).to_pylist()]    # (bytes: UTF-8 or not)
    return b"".join(blobs), np.cumsum([0] + [len(b) for b in blobs]).astype(np.int64)


def bpe_fast_documents(path, column="text"):
    ((_, data, bounds),) = list(read_documents(path, text_column=column))
    return bytes(data), np.asarray(bounds, dtype=np.int64)


def assert_same_documents(path, column="text"):
    data, bounds = bpe_fast_documents(path, column)
    want_data, want_bounds = arrow_documents(path, column)
    assert data == want_data
    assert bounds.tolist() == want_bounds.tolist()


def some_documents(seed, n=300, nulls=True, long_every=0):
    rng = random.Random(seed)
    docs = []
    for k in range(n):
        r = rng.random()
        if nulls and r < 0.08:
            docs.append(None)
        elif r < 0.14:
            docs.append("")
        else:
            docs.append("".join(rng.choice(["a", "b", " ", "é", "日本", "\U0001F600", "\n", "the ", "x1"])
                                for _ in range(rng.randrange(1, 40))))
        if long_every and k % long_every == 0:
            docs[-1] = f"long {k} " + "word é " * rng.randrange(500, 3000)       # pages of 1 KB: many spanned
    return docs


def write(path, docs, *, compression="snappy", use_dictionary=True, version="1.0", page_size=1 << 20,
          row_group_size=None, column_type=None, before=None, after=None, encoding=None):
    columns = {}
    if before is not None:
        columns["before"] = before
    columns["text"] = pa.array(docs, type=column_type) if column_type is not None else pa.array(docs)
    if after is not None:
        columns["after"] = after
    extra = {"column_encoding": {"text": encoding}} if encoding else {}
    pq.write_table(pa.table(columns), path, compression=compression, use_dictionary=use_dictionary,
                   data_page_version=version, data_page_size=page_size,
                   row_group_size=row_group_size or max(1, len(docs)), **extra)
    return path


# what the native reader reads, and what it leaves to pyarrow
NATIVE = [(compression, dictionary, version) for compression in ("none", "snappy")
          for dictionary in (True, False) for version in ("1.0", "2.0")]
FALLBACK = [("gzip", True, "1.0"), ("zstd", False, "2.0"), ("brotli", True, "2.0")]


@pytest.mark.parametrize("compression,dictionary,version", NATIVE + FALLBACK)
def test_the_documents_are_pyarrows(tmp_path, compression, dictionary, version):
    docs = some_documents(1, n=400, long_every=37)
    path = write(tmp_path / "a.parquet", docs, compression=compression, use_dictionary=dictionary, version=version,
                 page_size=1024, row_group_size=90)
    expected = "native" if compression in ("none", "snappy") else f"{compression.upper()} compression"
    assert parquet_reader(str(path)) == expected
    assert_same_documents(path)


@pytest.mark.parametrize("column_type", [pa.string(), pa.large_string()], ids=["string", "large_string"])
@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_string_kinds_columns_around_and_delta_lengths(tmp_path, column_type, version):
    docs = some_documents(2, n=250, long_every=50)
    n = len(docs)
    cases = {
        "plain": dict(),
        "other columns": dict(before=list(range(n)), after=[f"id{k}" for k in range(n)]),
        "a struct before": dict(before=[{"k": f"k{i}", "v": i, "w": [i, i]} for i in range(n)]),
        "delta lengths": dict(use_dictionary=False, encoding="DELTA_LENGTH_BYTE_ARRAY", page_size=700),
        "many row groups": dict(row_group_size=7, page_size=300),
        "required": dict(nulls=False),
    }
    for name, options in cases.items():
        rows = docs if options.pop("nulls", True) else [d or "" for d in docs]
        path = write(tmp_path / f"{name}.parquet", rows, column_type=column_type, version=version, **options)
        assert parquet_reader(str(path)) == "native", name
        assert_same_documents(path)


def test_a_not_nullable_column_and_a_categorical_one(tmp_path):
    docs = [d or "" for d in some_documents(3, n=200)]
    schema = pa.schema([pa.field("text", pa.string(), nullable=False)])
    pq.write_table(pa.table({"text": docs}, schema=schema), tmp_path / "required.parquet", row_group_size=64)
    assert parquet_reader(str(tmp_path / "required.parquet")) == "native"
    assert_same_documents(tmp_path / "required.parquet")
    categorical = pa.array(["a b", None, "c d é", "a b", ""] * 60).dictionary_encode()
    pq.write_table(pa.table({"text": categorical}), tmp_path / "categorical.parquet", row_group_size=70)
    assert parquet_reader(str(tmp_path / "categorical.parquet")) == "native"
    assert_same_documents(tmp_path / "categorical.parquet")


def test_what_is_left_to_pyarrow_is_read_by_it(tmp_path):
    docs = some_documents(4, n=120)
    path = write(tmp_path / "d.parquet", docs, use_dictionary=False, encoding="DELTA_BYTE_ARRAY")
    assert parquet_reader(str(path)) == "the DELTA_BYTE_ARRAY encoding"
    assert_same_documents(path)
    pq.write_table(pa.table({"text": pa.array([b"ab", b"c"])}), tmp_path / "b.parquet")
    assert parquet_reader(str(tmp_path / "b.parquet")) == "a binary column"
    with pytest.raises(InputError, match=r"b\.parquet: column 'text' is binary, not strings"):
        count_pretokens(tmp_path / "b.parquet", num_processes=1)
    pq.write_table(pa.table({"text": pa.array([["a", "b"], ["c"]])}), tmp_path / "l.parquet")
    assert parquet_reader(str(tmp_path / "l.parquet")) == "a nested column"
    with pytest.raises(InputError, match=r"l\.parquet: column 'text' is list<element: string>, not strings"):
        count_pretokens(tmp_path / "l.parquet", num_processes=1)


@pytest.mark.parametrize("compression,dictionary,version", [("snappy", True, "1.0"), ("none", False, "2.0"),
                                                             ("zstd", True, "1.0")])
def test_counts_are_the_documents_counts(tmp_path, monkeypatch, compression, dictionary, version):
    import bpe_fast.count_workers as cw
    monkeypatch.setattr(cw, "PARQUET_UNIT_BYTES", 1)        # each row group a unit: the workers read them
    docs = some_documents(5, n=300, long_every=41)
    path = write(tmp_path / "c.parquet", docs, compression=compression, use_dictionary=dictionary,
                 version=version, page_size=2048, row_group_size=40)
    expected = count_pretokens(iter([d or "" for d in docs]), [EOT], num_processes=1)
    for procs in (1, 2):
        assert count_pretokens(path, [EOT], num_processes=procs) == expected
    assert count_pretokens(path, [EOT], num_processes=1, max_documents=123) == count_pretokens(
        iter([d or "" for d in docs[:123]]), [EOT], num_processes=1)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(docs=st.lists(st.one_of(st.none(), st.text(max_size=30), st.sampled_from(["", "é" * 300, "a b " * 200])),
                     max_size=120),
       compression=st.sampled_from(["none", "snappy"]), dictionary=st.booleans(),
       version=st.sampled_from(["1.0", "2.0"]), page_size=st.sampled_from([64, 512, 1 << 20]),
       row_group_size=st.integers(1, 150), delta=st.booleans(), large=st.booleans())
def test_random_documents_read_as_pyarrow_reads_them(tmp_path, docs, compression, dictionary, version, page_size,
                                                     row_group_size, delta, large):
    docs = [d.encode("utf-8", "replace").decode() if d is not None else None for d in docs]   # (no surrogates)
    path = write(tmp_path / "h.parquet", docs, compression=compression, use_dictionary=dictionary and not delta,
                 version=version, page_size=page_size, row_group_size=row_group_size,
                 column_type=pa.large_string() if large else pa.string(),
                 encoding="DELTA_LENGTH_BYTE_ARRAY" if delta and not dictionary else None)
    assert parquet_reader(str(path)) == "native"
    assert_same_documents(path)


def test_a_read_gives_a_document_at_least_and_at_most_max_rows(tmp_path):
    from bpe_fast._parquet import ColumnChunk
    docs = some_documents(9, n=200)
    path = write(tmp_path / "r.parquet", docs, page_size=256)
    meta = pq.ParquetFile(path).metadata.row_group(0).column(0)
    start = min(meta.dictionary_page_offset or meta.data_page_offset, meta.data_page_offset)
    data = path.read_bytes()[start:start + meta.total_compressed_size]
    for max_bytes, max_rows in ((0, 1 << 16), (1, 1 << 16), (1 << 20, 1), (1 << 20, 7), (100, 3)):
        chunk = ColumnChunk(data, start, 1, True, len(docs))
        pieces = []
        while (piece := chunk.read(max_bytes, max_rows)) is not None:
            assert 1 <= len(piece[1]) - 1 <= max_rows
            pieces.append(piece)
        got = [p[0][p[1][k]:p[1][k + 1]] for p in pieces for k in range(len(p[1]) - 1)]
        assert got == [(d or "").encode() for d in docs]


def test_snappy_against_pyarrows():
    from bpe_fast._parquet import snappy_decompress
    rng = random.Random(6)
    for k in range(200):
        kind = k % 4
        n = rng.randrange(0, 5000)
        if kind == 0:
            raw = bytes(rng.randrange(256) for _ in range(n))
        elif kind == 1:
            raw = bytes(rng.choice(b"ab") for _ in range(n))
        elif kind == 2:
            raw = b"x" * n
        else:
            raw = " ".join(rng.choice(["the", "a", "word", "é", "日本"]) for _ in range(n // 3)).encode()
        packed = pa.compress(raw, codec="snappy", asbytes=True)
        assert snappy_decompress(packed, len(raw)) == raw
        with pytest.raises(ValueError):
            snappy_decompress(packed, len(raw) + 1)
        damaged = bytearray(packed)
        for _ in range(rng.randrange(1, 4)):
            if damaged:
                damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        try:
            out = snappy_decompress(bytes(damaged), len(raw))
        except ValueError:
            continue
        assert len(out) == len(raw)
        try:
            assert out == pa.decompress(bytes(damaged), len(raw), codec="snappy", asbytes=True)
        except pa.ArrowException:
            pass


def damaged_files():
    """Valid files of each kind the native reader reads (small pages, several row groups)."""
    docs = some_documents(7, n=160, long_every=31)
    return {
        "snappy-dict-v1": dict(compression="snappy", use_dictionary=True, version="1.0"),
        "none-plain-v2": dict(compression="none", use_dictionary=False, version="2.0"),
        "snappy-plain-v2": dict(compression="snappy", use_dictionary=False, version="2.0"),
        "none-dict-v1": dict(compression="none", use_dictionary=True, version="1.0"),
        "delta-v1": dict(compression="snappy", use_dictionary=False, version="1.0",
                         encoding="DELTA_LENGTH_BYTE_ARRAY"),
    }, docs


def native_or_error(path):
    """("ok", documents) or ("error", message): the reader's answer, InputError its only error."""
    try:
        return "ok", bpe_fast_documents(path)
    except InputError as exc:
        assert str(path) in str(exc)
        return "error", str(exc)


def pyarrows(path):
    try:
        return arrow_documents(path)
    except Exception:
        return None


def arrow_schema_range(data):
    """The file range of the value of the footer's ARROW:schema key (pyarrow's own schema, base64 of an Arrow
    IPC message: pyarrow refuses a file where it is damaged; the native reader does not read it)."""
    at = data.rindex(b"ARROW:schema") + len(b"ARROW:schema") + 1      # (the value's field header)
    length, shift = 0, 0
    while True:
        b = data[at]
        at += 1
        length |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return range(at, at + length)


def test_damaged_files_are_an_input_error_or_read_as_pyarrow_reads_them(tmp_path):
    # truncated at many offsets and bytes changed at random (seeded): the native reader raises InputError naming
    # the file, or gives what pyarrow gives; a file whose footer it leaves to pyarrow is pyarrow's to read. Only
    # damage to pyarrow's own ARROW:schema metadata, which the native reader does not read, lets it read a file
    # pyarrow refuses: it gives what pyarrow gives for the file with that metadata intact
    cases, docs = damaged_files()
    rng = random.Random(8)
    tally = {"native ok": 0, "native error": 0, "pyarrow's": 0, "pyarrow's metadata": 0}
    for name, options in cases.items():
        path = write(tmp_path / f"{name}.parquet", docs, page_size=600, row_group_size=50, **options)
        good = path.read_bytes()
        schema = arrow_schema_range(good)
        variants = [(good[:cut], []) for cut in sorted(rng.sample(range(len(good)), 40))]
        for _ in range(400):
            damaged = bytearray(good)
            where = [rng.randrange(4, len(good) - 8) for _ in range(rng.choice([1, 1, 2, 4]))]
            for at in where:
                damaged[at] = rng.randrange(256) if rng.random() < 0.7 else damaged[at] ^ (1 << rng.randrange(8))
            variants.append((bytes(damaged), where))
        path = tmp_path / "damaged.parquet"
        for data, where in variants:
            path.write_bytes(data)
            try:
                native = parquet_reader(str(path)) == "native"
            except InputError:
                native = False
            if not native:
                tally["pyarrow's"] += 1
                continue
            kind, got = native_or_error(path)
            tally["native " + kind] += 1
            if kind == "ok":
                want = pyarrows(path)
                if want is None and any(at in schema for at in where):
                    # pyarrow's answer were its metadata intact
                    repaired = bytearray(data)
                    repaired[schema.start:schema.stop] = good[schema.start:schema.stop]
                    path.write_bytes(bytes(repaired))
                    want = pyarrows(path)
                    tally["pyarrow's metadata"] += 1
                assert want is not None, f"{name}: read natively, refused by pyarrow ({where})"
                assert got[0] == want[0] and got[1].tolist() == want[1].tolist(), name
    assert tally["native error"] >= 400 and tally["native ok"] >= 200, tally


def test_a_truncated_column_chunk_names_the_file_and_row_group(tmp_path):
    docs = [f"document {i} " * 40 for i in range(300)]
    path = write(tmp_path / "c.parquet", docs, compression="none", use_dictionary=False, row_group_size=100)
    data = bytearray(path.read_bytes())
    meta = pq.ParquetFile(path).metadata.row_group(1).column(0)
    at = meta.data_page_offset + 200
    data[at:at + 3000] = b"\xff" * 3000                  # the second row group's pages; the footer intact
    path.write_bytes(bytes(data))
    with pytest.raises(InputError, match=r"c\.parquet: corrupt Parquet file after 100 rows \(row group 1: "):
        count_pretokens(path, num_processes=1)


def run_without_pyarrow(code, folder):
    """Runs code in a child in which pyarrow cannot be imported; returns (exit code, stderr)."""
    import bpe_fast
    where = os.path.dirname(os.path.dirname(os.path.abspath(bpe_fast.__file__)))
    prelude = "import sys\nsys.modules['pyarrow'] = None\nsys.modules['pyarrow.parquet'] = None\n"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([where, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", prelude + code], capture_output=True, text=True, cwd=folder,
                          env=env, timeout=300)
    return proc.returncode, proc.stderr


def test_without_pyarrow_the_native_reader_reads_and_says_what_needs_it(tmp_path):
    docs = [f"doc {i} é" for i in range(200)]
    write(tmp_path / "ok.parquet", docs, row_group_size=20)
    write(tmp_path / "z.parquet", docs, compression="zstd")
    pq.write_table(pa.table({"text": pa.array([b"ab", b"c"])}), tmp_path / "b.parquet")
    code = ("from bpe_fast import count_pretokens\n"
            f"expected = count_pretokens(iter({docs!r}), num_processes=1)\n"
            "assert count_pretokens('ok.parquet', num_processes=1) == expected\n"
            "assert count_pretokens('ok.parquet', num_processes=2) == expected\n"
            "try:\n    count_pretokens('z.parquet', num_processes=1)\n"
            "except ImportError as exc:\n    print(exc, file=sys.stderr)\n"
            "try:\n    count_pretokens('ok.parquet', num_processes=1, text_column='body')\n"
            "except ValueError as exc:\n    print(exc, file=sys.stderr)\n"
            "try:\n    count_pretokens('b.parquet', num_processes=1)\n"
            "except ValueError as exc:\n    print(exc, file=sys.stderr)\n"
            "assert 'pyarrow' not in [m for m in sys.modules if sys.modules[m] is not None]\n")
    status, err = run_without_pyarrow(code, tmp_path)
    assert status == 0, err
    lines = err.splitlines()
    assert lines[0] == ("z.parquet: reading Parquet needs the pyarrow package (pip install 'bpe_fast[parquet]'): "
                        "this file has ZSTD compression (bpe_fast reads a top-level string column, "
                        "uncompressed or SNAPPY, itself)")
    assert lines[1].startswith("ok.parquet: no column 'body' (columns: ['text'])")
    assert lines[2] == "b.parquet: column 'text' is binary, not strings"


def test_the_caller_imports_no_pyarrow_for_a_file_read_natively(tmp_path):
    # the footer read natively: counting with the workers reading the row groups imports no pyarrow anywhere in
    # the caller (its import was 0.15-0.2 s of the run)
    import bpe_fast
    write(tmp_path / "ok.parquet", [f"doc {i} é" for i in range(400)], row_group_size=40)
    code = ("import sys\nimport bpe_fast.count_workers as cw\ncw.PARQUET_UNIT_BYTES = 1\n"
            "from bpe_fast import count_pretokens\n"
            "assert len(count_pretokens('ok.parquet', num_processes=2)) > 10\n"
            "assert 'pyarrow' not in sys.modules, 'pyarrow imported'\n")
    where = os.path.dirname(os.path.dirname(os.path.abspath(bpe_fast.__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([where, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
