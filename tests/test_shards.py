"""encode_files: one .npy per shard and index.json, for every input kind, resumable, all or nothing per shard, on
Dask as locally. The expected arrays are tokenizer.encode of each shard's text (a text file is one document,
JSON lines and Parquet rows are documents, each encoded alone, concatenated)."""
import bz2
import gzip
import json
import os
import re
import signal
import subprocess
import sys

import numpy as np
import pytest

from bpe_fast import GPT2_PATTERN, Tokenizer, encode_file, encode_files, train_bpe
from bpe_fast import file_encoding, shards as shards_module
from bpe_fast.inputs import CorpusDecodeError, InputError
from bpe_fast.shards import INDEX_FILE, complete_length, output_name

from corpora import EOT, make_corpus

pyarrow = pytest.importorskip("pyarrow")
import pyarrow.parquet as pq  # noqa: E402

zstandard = pytest.importorskip("zstandard")

PAD = "<|pad|>"
KINDS = ["txt", "txt.gz", "txt.bz2", "txt.zst", "jsonl", "jsonl.gz", "json.gz", "parquet"]    # json.gz: C4's shards


@pytest.fixture(scope="module")
def tok(tmp_path_factory):
    path = tmp_path_factory.mktemp("train") / "train.txt"
    path.write_text(make_corpus(5, 4000, specials=[EOT]), encoding="utf-8")
    vocab, merges = train_bpe(path, 500, [EOT, PAD], num_processes=1)
    return Tokenizer(vocab, merges, [EOT, PAD])


def documents(seed, n=30):
    """Documents of every script with special tokens inside, empty ones and a long one."""
    rng = np.random.default_rng(seed)
    docs = [make_corpus(seed * 1000 + k, n_words=int(rng.integers(0, 50)), specials=[EOT, PAD]) for k in range(n)]
    docs[2] = ""
    docs[5] = make_corpus(seed + 77, n_words=4000, specials=[EOT])
    docs[-1] = ""
    return docs


def write_shard(folder, name, docs):
    """Write docs as a shard of the kind its name says; returns the path. A text shard is one document: the
    docs joined."""
    path = folder / name
    openers = {".gz": gzip.open, ".bz2": bz2.open, ".zst": zstandard.open}
    opener = openers.get(os.path.splitext(name)[1], open)
    if ".parquet" in name:
        pq.write_table(pyarrow.table({"n": pyarrow.array(range(len(docs)), pyarrow.int64()),
                                      "body": pyarrow.array(docs, pyarrow.string())}), path, row_group_size=7)
    elif ".json" in name:             # .jsonl, and .json as C4 and HF datasets' to_json name JSON lines
        with opener(path, "wb") as f:
            for d in docs:
                f.write((json.dumps({"id": 1, "body": d}, ensure_ascii=False) + "\n\n").encode("utf-8"))
    else:
        with opener(path, "wb") as f:
            f.write("".join(docs).encode("utf-8"))
    return path


def expected(tok, name, docs, separator=None):
    """The ids encode_files must give, from tokenizer.encode: a text shard is one document."""
    units = ["".join(docs)] if ".txt" in name else docs
    ids = []
    for doc in units:
        ids += tok.encode(doc)
        if separator is not None:
            ids.append(separator)
    return np.array(ids, dtype=np.int64)


def write_all(folder, seed=1):
    """One shard of each kind, each with other documents; returns ({name: docs}, [paths])."""
    folder.mkdir(exist_ok=True)
    contents, paths = {}, []
    for k, kind in enumerate(KINDS):
        name = f"shard-{k:02d}.{kind}"
        contents[name] = documents(seed * 100 + k)
        paths.append(write_shard(folder, name, contents[name]))
    return contents, paths


def leftovers(folder):
    return sorted(n for n in os.listdir(folder) if n.startswith(".") or n.endswith(".tmp"))


def settled(index):
    """index with each array's stamp cut to its size: its modification time differs between two writes of it."""
    return dict(index, shards=[dict(e, output={"bytes": e["output"]["bytes"]}) for e in index["shards"]])


def left_after_failure(folder):
    """The files a run that failed left in folder besides index.json, which it must have left marked
    incomplete, listing only those."""
    index = json.loads((folder / INDEX_FILE).read_text())
    left = sorted(n for n in os.listdir(folder) if n != INDEX_FILE)
    assert index["complete"] is False and [e["file"] for e in index["shards"]] == left
    return left


# ---- every kind of shard -------------------------------------------------------------------------------

@pytest.mark.parametrize("num_processes", [1, 2])
@pytest.mark.parametrize("batch_bytes", [None, 700], ids=["1MB-batches", "700B-batches"])
def test_every_kind_equals_encode_of_its_documents(tok, tmp_path, monkeypatch, num_processes, batch_bytes):
    if batch_bytes is not None:           # many batches and many pieces of a compressed text file
        monkeypatch.setattr(file_encoding, "DEFAULT_CHUNK_BYTES", batch_bytes)
    contents, paths = write_all(tmp_path / "in")
    out = tmp_path / "out"
    index = encode_files(paths, out, tok, num_processes=num_processes, text_field="body", text_column="body")
    for path, entry in zip(paths, index["shards"]):
        got = np.load(out / entry["file"])
        assert got.dtype == np.uint16
        np.testing.assert_array_equal(got, expected(tok, path.name, contents[path.name]), err_msg=path.name)
    assert leftovers(out) == []


def test_a_pattern_without_the_native_scanner(tok, tmp_path, monkeypatch):
    monkeypatch.setattr(file_encoding, "DEFAULT_CHUNK_BYTES", 2000)
    custom = Tokenizer(dict(tok.vocab), list(tok.merges), [EOT, PAD], pattern=GPT2_PATTERN + "|x")
    assert custom._segmenter is None              # the Python path (regex), not the native one
    docs = documents(4, n=10)
    paths = [write_shard(tmp_path, name, docs) for name in ("a.txt", "b.txt.gz", "c.jsonl", "d.parquet")]
    index = encode_files(paths, tmp_path / "out", custom, num_processes=2, separator=PAD, text_field="body",
                         text_column="body")
    for path, entry in zip(paths, index["shards"]):
        np.testing.assert_array_equal(np.load(tmp_path / "out" / entry["file"]),
                                      expected(custom, path.name, docs, custom.special_tokens[PAD]), err_msg=path.name)


def test_empty_shards(tok, tmp_path):
    paths = [write_shard(tmp_path, name, []) for name in ("a.txt", "b.txt.gz", "c.jsonl", "d.parquet")]
    index = encode_files(paths, tmp_path / "out", tok, text_column="body")
    assert [e["tokens"] for e in index["shards"]] == [0, 0, 0, 0] and index["tokens"] == 0
    for entry in index["shards"]:
        assert np.load(tmp_path / "out" / entry["file"]).shape == (0,)
        assert complete_length(tmp_path / "out" / entry["file"], np.dtype(np.uint16)) == 0


def test_special_tokens_in_text_are_special_tokens(tok, tmp_path):
    text = f"a{EOT}b {PAD}{PAD} c"
    paths = [write_shard(tmp_path, "s.txt", [text]), write_shard(tmp_path, "s2.txt.gz", [text]),
             write_shard(tmp_path, "s3.jsonl", [text])]
    encode_files(paths, tmp_path / "out", tok, text_field="body")
    want = tok.encode(text)
    assert want.count(tok.special_tokens[PAD]) == 2
    for name in ("s.npy", "s2.npy", "s3.npy"):
        assert np.load(tmp_path / "out" / name).tolist() == want


def test_a_document_boundary_is_not_glued(tok, tmp_path):
    # "ab" + "c" as two documents is not "abc": each is encoded alone, with nothing between
    path = write_shard(tmp_path, "s.jsonl", ["  hello", " world", "", "  "])
    encode_files(path, tmp_path / "out", tok, text_field="body")
    want = tok.encode("  hello") + tok.encode(" world") + tok.encode("  ")
    assert np.load(tmp_path / "out" / "s.npy").tolist() == want


@pytest.mark.parametrize("separator", [EOT, PAD, 300])
def test_separator_after_each_document(tok, tmp_path, monkeypatch, separator):
    monkeypatch.setattr(file_encoding, "DEFAULT_CHUNK_BYTES", 1000)     # a text file in several pieces
    sep_id = tok.special_tokens.get(separator, separator)
    docs = documents(9, n=8)
    paths = [write_shard(tmp_path, name, docs) for name in ("a.txt", "b.txt.gz", "c.jsonl", "d.parquet")]
    index = encode_files(paths, tmp_path / "out", tok, separator=separator, text_field="body", text_column="body")
    assert index["separator"] == sep_id
    for path, entry in zip(paths, index["shards"]):
        got = np.load(tmp_path / "out" / entry["file"])
        np.testing.assert_array_equal(got, expected(tok, path.name, docs, sep_id), err_msg=path.name)
    assert np.load(tmp_path / "out" / "c.npy").tolist().count(sep_id) >= len(docs)
    assert np.load(tmp_path / "out" / "b.npy")[-2] != sep_id       # one document: one separator


def test_bad_separators(tok, tmp_path):
    path = write_shard(tmp_path, "a.txt", ["x"])
    with pytest.raises(ValueError, match="not one of the tokenizer's special tokens"):
        encode_files(path, tmp_path / "out", tok, separator="<|nope|>")
    with pytest.raises(ValueError, match="not in the vocabulary"):
        encode_files(path, tmp_path / "out", tok, separator=tok.vocab_size)
    with pytest.raises(TypeError, match="separator"):
        encode_files(path, tmp_path / "out", tok, separator=True)
    assert not (tmp_path / "out").exists()


def test_errors_replace(tok, tmp_path):
    bad = b"caf\xe9 au lait \xe2\x82 " + "fin €".encode()
    (tmp_path / "a.txt").write_bytes(bad)
    (tmp_path / "b.txt.gz").write_bytes(gzip.compress(bad))
    encode_files([tmp_path / "a.txt", tmp_path / "b.txt.gz"], tmp_path / "out", tok, errors="replace")
    want = tok.encode(bad.decode("utf-8", "replace"))
    assert np.load(tmp_path / "out" / "a.npy").tolist() == want
    assert np.load(tmp_path / "out" / "b.npy").tolist() == want


# ---- index.json and names ------------------------------------------------------------------------------

def test_index_lists_every_shard_in_input_order(tok, tmp_path, monkeypatch):
    contents, paths = write_all(tmp_path / "in")
    monkeypatch.chdir(tmp_path)
    given = [os.path.join("in", p.name) for p in reversed(paths)]        # relative, and not sorted
    index = encode_files(given, "out", tok, dtype="uint32", text_field="body", text_column="body")
    with open(tmp_path / "out" / INDEX_FILE, encoding="utf-8") as f:
        assert json.load(f) == index
    assert index["vocab_size"] == tok.vocab_size
    assert index["dtype"] == "uint32"
    assert [e["path"] for e in index["shards"]] == given
    assert [e["file"] for e in index["shards"]] == [f"shard-{k:02d}.npy" for k in reversed(range(len(KINDS)))]
    for path, entry in zip(reversed(paths), index["shards"]):
        assert entry["tokens"] == len(expected(tok, path.name, contents[path.name])) > 0
        assert entry["dtype"] == "uint32"
        assert np.load(tmp_path / "out" / entry["file"]).dtype == np.uint32
    assert index["tokens"] == sum(e["tokens"] for e in index["shards"])
    assert index["separator"] is None and index["text_field"] == "body"


def test_a_directory_or_glob_of_shards(tok, tmp_path):
    contents, paths = write_all(tmp_path / "in")
    by_dir = encode_files(tmp_path / "in", tmp_path / "o1", tok, text_field="body", text_column="body")
    by_glob = encode_files(str(tmp_path / "in" / "shard-0*"), tmp_path / "o2", tok, text_field="body",
                           text_column="body")
    assert [e["path"] for e in by_dir["shards"]] == [str(p) for p in paths]
    assert settled(by_glob)["shards"] == settled(by_dir)["shards"]


def test_output_names():
    assert output_name("data/shard-00.jsonl.gz") == "shard-00.npy"
    assert output_name("x/shard-01.TXT.ZST") == "shard-01.npy"
    assert output_name("a.b.parquet") == "a.b.npy"
    assert output_name("README") == "README.npy"
    assert output_name("notes.gz") == "notes.npy"
    # a last suffix without a letter is a shard's number (split -d), not a format: both were corpus.txt.npy, a clash
    # (review helper-142)
    assert output_name("corpus.txt.00") == "corpus.txt.00.npy" and output_name("data.v1.5.gz") == "data.v1.5.npy"


def test_clashing_output_names_are_refused_before_any_work(tok, tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    one = write_shard(tmp_path / "a", "x.txt", ["one"])
    two = write_shard(tmp_path / "b", "x.jsonl.gz", ["two"])
    out = tmp_path / "out"
    with pytest.raises(ValueError, match=r"a/x\.txt and .*b/x\.jsonl\.gz would both be encoded into x\.npy"):
        encode_files([one, two], out, tok)
    # one file twice was "x.txt and x.txt would both be encoded into x.npy ... rename one" (helper-147)
    with pytest.raises(ValueError, match=r"a/x\.txt and .*a/x\.txt are one file, given twice"):
        encode_files([one, one], out, tok)
    with pytest.raises(ValueError, match="are one file, given twice"):
        encode_files([tmp_path / "a", one], out, tok)
    upper = write_shard(tmp_path / "b", "X.txt", ["three"])
    with pytest.raises(ValueError, match="would both be encoded"):
        encode_files([one, upper], out, tok)
    assert not out.exists()
    # an input that an output would overwrite
    npy = write_shard(tmp_path / "a", "y.npy", ["text"])
    with pytest.raises(ValueError, match="would be overwritten"):
        encode_files(npy, tmp_path / "a", tok)
    assert npy.read_text() == "text"


def test_iterables_and_bad_arguments(tok, tmp_path):
    path = write_shard(tmp_path, "a.txt", ["x"])
    with pytest.raises(TypeError, match="encode_files needs files"):
        encode_files(iter(["some text"]), tmp_path / "out", tok)
    with pytest.raises(TypeError, match="encode_files needs files"):
        encode_files([path, 3], tmp_path / "out", tok)
    with pytest.raises(TypeError, match="bpe_fast.Tokenizer"):
        encode_files(path, tmp_path / "out", "gpt2")
    with pytest.raises(ValueError, match="errors"):
        encode_files(path, tmp_path / "out", tok, errors="ignore")
    with pytest.raises(ValueError, match="dtype"):
        encode_files(path, tmp_path / "out", tok, dtype=np.float32)
    with pytest.raises(FileNotFoundError):
        encode_files(tmp_path / "missing.txt", tmp_path / "out", tok)
    assert not (tmp_path / "out").exists()


def test_an_exception_of_the_progress_function_reaches_the_caller_as_it_is(tok, tmp_path):
    # it came as RuntimeError("encoding ... failed: Cancelled: ..."), where count_pretokens and encode_file pass
    # it on (review helper-142)
    class Cancelled(Exception):
        pass

    def cancel(stage, done, total):
        if done:
            raise Cancelled("stop")

    path = write_shard(tmp_path, "a.txt", documents(3, n=8))
    with pytest.raises(Cancelled, match="stop"):
        encode_files(path, tmp_path / "out", tok, progress=cancel)
    assert not (tmp_path / "out" / "a.npy").exists()


def test_progress_reaches_the_total(tok, tmp_path):
    contents, paths = write_all(tmp_path / "in")
    calls = []
    encode_files(paths, tmp_path / "out", tok, text_field="body", text_column="body",
                 progress=lambda *a: calls.append(a))
    total = sum(p.stat().st_size for p in paths)
    assert calls[-1] == ("encode", total, total)
    assert all(stage == "encode" and t == total for stage, _, t in calls)
    assert [d for _, d, _ in calls] == sorted(d for _, d, _ in calls)


# ---- resuming ------------------------------------------------------------------------------------------

def spy_on_encoding(monkeypatch):
    """The output paths _encode_shard is asked to write, in order."""
    encoded = []
    real = shards_module._encode_shard

    def spy(tokenizer, source, out_path, *args, **kwargs):
        encoded.append(os.path.basename(out_path))
        return real(tokenizer, source, out_path, *args, **kwargs)

    monkeypatch.setattr(shards_module, "_encode_shard", spy)
    return encoded


def test_resume_keeps_complete_shards_and_redoes_the_rest(tok, tmp_path, monkeypatch):
    contents, paths = write_all(tmp_path / "in")
    out = tmp_path / "out"
    kw = dict(text_field="body", text_column="body")
    first = encode_files(paths, out, tok, **kw)
    names = [e["file"] for e in first["shards"]]
    kept = out / names[0]
    kept_stamp = os.stat(kept).st_mtime_ns
    os.remove(out / names[1])                        # missing
    with open(out / names[2], "r+b") as f:           # truncated by one id
        f.truncate(os.path.getsize(out / names[2]) - 2)
    with open(out / names[3], "ab") as f:            # one byte too many
        f.write(b"\0")
    with open(out / names[4], "r+b") as f:           # not a .npy any more
        f.write(b"garbage")
    assert [complete_length(out / n, np.dtype(np.uint16)) is None for n in names[:5]] == \
        [False, True, True, True, True]

    encoded = spy_on_encoding(monkeypatch)
    second = encode_files(paths, out, tok, **kw)
    assert encoded == names[1:5]
    assert os.stat(kept).st_mtime_ns == kept_stamp
    assert settled(second) == settled(first)
    for path, name in zip(paths, names):
        np.testing.assert_array_equal(np.load(out / name), expected(tok, path.name, contents[path.name]))

    encoded.clear()                                  # all complete: nothing to do, the same index
    assert encode_files(paths, out, tok, **kw) == second and encoded == []
    # another dtype: every shard again
    third = encode_files(paths, out, tok, dtype="int32", **kw)
    assert encoded == names and third["dtype"] == "int32"
    assert [e["tokens"] for e in third["shards"]] == [e["tokens"] for e in first["shards"]]


@pytest.mark.parametrize("glob", [False, True])
def test_a_folder_encoded_into_itself_is_resumed(tok, tmp_path, monkeypatch, glob):
    # the second 'encode_files(d, d)' took d/index.json and the arrays for inputs: "d/shard-00.txt and
    # d/shard-00.npy would both be encoded into shard-00.npy"
    contents, paths = write_all(tmp_path / "d")
    given = str(tmp_path / "d" / "shard-*") if glob else tmp_path / "d"
    kw = dict(text_field="body", text_column="body")
    first = encode_files(given, tmp_path / "d", tok, **kw)
    assert [e["path"] for e in first["shards"]] == [str(p) for p in paths]
    encoded = spy_on_encoding(monkeypatch)
    assert encode_files(given, tmp_path / "d", tok, **kw) == first and encoded == []
    changed = paths[0]
    changed.write_text(changed.read_text() + " more", encoding="utf-8")
    again = encode_files(given, tmp_path / "d", tok, **kw)
    assert encoded == [first["shards"][0]["file"]]
    assert [e["path"] for e in again["shards"]] == [str(p) for p in paths]
    for path, entry in zip(paths, again["shards"]):
        docs = [changed.read_text()] if path == changed else contents[path.name]
        np.testing.assert_array_equal(np.load(tmp_path / "d" / entry["file"]), expected(tok, path.name, docs))
    # an output named on its own is still an input (refused: it would be overwritten)
    with pytest.raises(ValueError, match="would both be encoded"):
        encode_files([given, tmp_path / "d" / first["shards"][0]["file"]], tmp_path / "d", tok, **kw)
    # a run killed after an array was written, before the index listed it (rewritten every 30 s): the index as
    # written before the first shard. The array was taken for an input, "would both be encoded" (helper-142)
    index = json.loads((tmp_path / "d" / INDEX_FILE).read_text())
    (tmp_path / "d" / INDEX_FILE).write_text(json.dumps(dict(index, complete=False, shards=[], tokens=0)))
    encoded.clear()
    resumed = encode_files(given, tmp_path / "d", tok, **kw)
    assert sorted(encoded) == sorted(e["file"] for e in again["shards"])        # none listed: every one again
    assert [e["path"] for e in resumed["shards"]] == [str(p) for p in paths] and resumed["complete"]


def test_an_array_of_another_tokenizer_or_input_is_not_taken_for_this_ones(tok, tmp_path):
    # helper-147: (1) an array no index vouches for (encode_file's own output; or an index deleted) was kept,
    # and the new index listed another tokenizer's ids as this one's; (2) b/x.txt after a/x.txt into one folder,
    # same size and modification time, kept a/x.txt's ids under b/x.txt's path
    other = Tokenizer({i: bytes([i]) for i in range(256)}, [], [EOT, PAD])       # no merges: other ids
    docs = documents(7, n=8)
    text = write_shard(tmp_path, "x.txt", docs)
    out = tmp_path / "out"
    out.mkdir()
    encode_file(other, text, out / "x.npy")
    encode_files(text, out, tok)
    np.testing.assert_array_equal(np.load(out / "x.npy"), expected(tok, "x.txt", docs))
    for folder, words in (("a", "alpha beta "), ("b", "gamma delta ")):
        (tmp_path / folder).mkdir()
        write_shard(tmp_path / folder, "x.txt", [(words * 300)[:3000]])
    os.utime(tmp_path / "b" / "x.txt", ns=(1, 10 ** 18))
    os.utime(tmp_path / "a" / "x.txt", ns=(1, 10 ** 18))
    assert os.path.getsize(tmp_path / "a" / "x.txt") == os.path.getsize(tmp_path / "b" / "x.txt") == 3000
    encode_files(tmp_path / "a" / "x.txt", tmp_path / "o", tok)
    index = encode_files(tmp_path / "b" / "x.txt", tmp_path / "o", tok)
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "x.npy"),
                                  tok.encode((tmp_path / "b" / "x.txt").read_text(encoding="utf-8")))
    assert index["shards"][0]["input"]["real_path"] == os.path.realpath(tmp_path / "b" / "x.txt")


def test_a_folder_encoded_into_itself_resumes_after_an_input_is_removed(tok, tmp_path):
    # helper-147: the second run's index no longer listed b.npy (its input removed); the third took it for an
    # input and was refused ("d/b.npy is an input and would be overwritten")
    folder = tmp_path / "d"
    folder.mkdir()
    for name, seed in (("a.txt", 1), ("b.txt", 2)):
        write_shard(folder, name, documents(seed, n=8))
    encode_files(folder, folder, tok)
    (folder / "b.txt").unlink()
    for _ in range(2):
        index = encode_files(folder, folder, tok)
        assert [e["file"] for e in index["shards"]] == ["a.npy"] and index["complete"]


def test_a_folder_of_outputs_only_an_output_folder_and_an_index_not_json_are_named(tok, tmp_path):
    # (paths no test reached, found by coverage)
    for folder in ("d", "e"):
        (tmp_path / folder).mkdir()
    write_shard(tmp_path / "d", "a.txt", ["some text"])
    encode_files(tmp_path / "d", tmp_path / "d", tok)
    (tmp_path / "d" / "a.txt").unlink()             # nothing left but what encoding it wrote
    with pytest.raises(FileNotFoundError, match=r"holds no files but the outputs of encoding into"):
        encode_files(tmp_path / "d", tmp_path / "d", tok)
    write_shard(tmp_path / "e", "b.txt", ["more text"])
    (tmp_path / "out" / "b.npy").mkdir(parents=True)
    with pytest.raises(ValueError, match=r"b\.npy is a folder; the output of that name cannot replace it"):
        encode_files(tmp_path / "e" / "b.txt", tmp_path / "out", tok)
    (tmp_path / "out2").mkdir()
    (tmp_path / "out2" / INDEX_FILE).write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match=r"index\.json is not a bpe_fast shard index \(Expecting property name"):
        encode_files(tmp_path / "e" / "b.txt", tmp_path / "out2", tok)
    assert sorted(p.name for p in (tmp_path / "out2").iterdir()) == [INDEX_FILE]


def test_a_folders_own_index_json_that_is_not_one_stays_an_input(tok, tmp_path):
    # only an index of encode_files is taken for outputs: a data file named index.json is an input, and would be
    # overwritten
    write_shard(tmp_path, "a.txt", ["some text"])
    (tmp_path / INDEX_FILE).write_text(json.dumps({"format": "mine", "shards": [{"file": "a.npy"}]}))
    with pytest.raises(ValueError, match=r"index\.json is an input and would be overwritten"):
        encode_files(tmp_path, tmp_path, tok)
    assert not (tmp_path / "a.npy").exists()


def test_a_shard_with_a_damaged_header_is_encoded_again(tok, tmp_path, monkeypatch):
    # numpy reads a header whose brackets do not close with tokenize, whose TokenError is no ValueError: it got
    # through complete_length and resuming stopped with a traceback
    a = write_shard(tmp_path, "a.txt", documents(3, n=8))
    b = write_shard(tmp_path, "b.txt", documents(4, n=8))
    out = tmp_path / "out"
    first = encode_files([a, b], out, tok)
    data = (out / "b.npy").read_bytes()
    (out / "b.npy").write_bytes(data.replace(b"}", b" ", 1))
    assert complete_length(out / "b.npy", np.dtype(np.uint16)) is None
    encoded = spy_on_encoding(monkeypatch)
    assert settled(encode_files([a, b], out, tok)) == settled(first) and encoded == ["b.npy"]
    assert (out / "b.npy").read_bytes() == data


def test_other_settings_in_the_same_folder_are_refused(tok, tmp_path):
    path = write_shard(tmp_path, "a.jsonl", documents(3, n=8))
    out = tmp_path / "out"
    encode_files(path, out, tok, text_field="body")
    other = Tokenizer(dict(tok.vocab), list(tok.merges)[:-1], [EOT, PAD])
    with pytest.raises(ValueError, match="encoded with another tokenizer"):
        encode_files(path, out, other, text_field="body")
    # the same vocabulary read otherwise (helper-109: with_special_lstrip's kept the first run's arrays)
    for reading in (tok.with_special_lstrip([EOT]), tok.with_normalizer("NFC"), tok.with_unicode("16.0")):
        with pytest.raises(ValueError, match="encoded with another tokenizer"):
            encode_files(path, out, reading, text_field="body")
    with pytest.raises(ValueError, match="another separator"):
        encode_files(path, out, tok, text_field="body", separator=EOT)
    # errors: a strict run kept a replace run's arrays (their U+FFFD ids) (review helper-142)
    with pytest.raises(ValueError, match="encoded with another errors setting"):
        encode_files(path, out, tok, text_field="body", errors="replace")
    index = json.loads((out / INDEX_FILE).read_text())
    assert index["errors"] == "strict"
    del index["errors"]         # an index of a version before it was recorded: taken as any
    (out / INDEX_FILE).write_text(json.dumps(index))
    assert encode_files(path, out, tok, text_field="body", errors="replace")["errors"] == "replace"
    (out / INDEX_FILE).write_text("[1, 2]")
    with pytest.raises(ValueError, match="not a bpe_fast shard index"):
        encode_files(path, out, tok, text_field="body")



@pytest.mark.parametrize("damage", ["file-not-a-name", "entry-not-a-dict", "shards-not-a-list", "no-shards",
                                    "nested-too-deeply"])
def test_a_damaged_index_is_refused_naming_it(tok, tmp_path, damage):
    # a shard entry of the wrong type was a bare TypeError (an unhashable name) or was passed over (its shard
    # encoded again, the rest of the index trusted); JSON nested too deeply was a RecursionError
    path = write_shard(tmp_path, "a.jsonl", documents(3, n=8))
    out = tmp_path / "out"
    index = encode_files(path, out, tok, text_field="body")
    damaged = {"file-not-a-name": dict(index, shards=[{"file": []}]),
               "entry-not-a-dict": dict(index, shards=index["shards"] + [3]),
               "shards-not-a-list": dict(index, shards={"a.npy": 1}),
               "no-shards": {k: v for k, v in index.items() if k != "shards"}}.get(damage)
    (out / INDEX_FILE).write_text("[" * 100_000 if damaged is None else json.dumps(damaged))
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with pytest.raises(ValueError, match=re.escape(str(out / INDEX_FILE)) + r" is (a damaged|not a) bpe_fast "
                                         r"shard index \(") as info:
        encode_files(path, out, tok, text_field="body")
    assert ("nested too deeply" if damage == "nested-too-deeply" else "shard") in str(info.value)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before        # nothing written, nothing removed


# ---- errors --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("bad_kind", ["txt", "txt.gz", "jsonl"])
def test_invalid_utf8_names_the_shard_and_leaves_no_partial_file(tok, tmp_path, monkeypatch, bad_kind):
    monkeypatch.setattr(file_encoding, "DEFAULT_CHUNK_BYTES", 4000)    # the bad bytes after a piece or two
    good = make_corpus(41, 3000).encode()
    before = write_shard(tmp_path, "a.txt", [good.decode()])
    bad = tmp_path / f"b.{bad_kind}"
    if bad_kind == "jsonl":
        bad.write_bytes(b'{"text": "fine"}\n{"text": "caf\xe9"}\n')
    else:
        data = good + b"caf\xe9 au lait" + good
        bad.write_bytes(gzip.compress(data) if bad_kind == "txt.gz" else data)
    after = write_shard(tmp_path, "c.txt", ["after"])
    out = tmp_path / "out"
    encoded = spy_on_encoding(monkeypatch)
    with pytest.raises((CorpusDecodeError, InputError)) as info:
        encode_files([before, bad, after], out, tok, num_processes=2)
    assert str(bad) in str(info.value)
    if bad_kind != "jsonl":
        assert isinstance(info.value, CorpusDecodeError)
        assert (info.value.path, info.value.offset) == (str(bad), len(good) + 3)
        assert info.value.line == good.count(b"\n") + 1
    assert encoded == ["a.npy", "b.npy"]
    assert left_after_failure(out) == ["a.npy"]      # no b.npy, no temporary file
    assert complete_length(out / "a.npy", np.dtype(np.uint16)) == len(tok.encode(good.decode()))


def test_invalid_utf8_in_compressed_text_names_offset_and_line(tok, tmp_path):
    (tmp_path / "b.txt.bz2").write_bytes(bz2.compress(b"ok\nok\n\xff"))
    with pytest.raises(CorpusDecodeError) as info:
        encode_files(tmp_path / "b.txt.bz2", tmp_path / "out", tok)
    assert (info.value.path, info.value.offset, info.value.line) == (str(tmp_path / "b.txt.bz2"), 6, 3)
    assert left_after_failure(tmp_path / "out") == []


def test_missing_json_field_names_shard_and_line(tok, tmp_path):
    good = write_shard(tmp_path, "a.jsonl", ["one", "two"])          # field "body"
    bad = tmp_path / "b.jsonl.gz"
    bad.write_bytes(gzip.compress(b'{"body": "x"}\n{"text": "y"}\n'))
    out = tmp_path / "out"
    with pytest.raises(InputError, match=rf"{bad}:2: no field 'body'"):
        encode_files([good, bad], out, tok, text_field="body")
    assert left_after_failure(out) == ["a.npy"]


def test_other_errors_name_the_shard(tok, tmp_path, monkeypatch):
    path = write_shard(tmp_path, "a.jsonl", ["one"])

    def fail(*args):
        raise MemoryError()

    monkeypatch.setattr(file_encoding, "_encode_batch", fail)    # (encode_stream encodes a shard's batches)
    with pytest.raises(RuntimeError, match=rf"encoding {path} into .*a\.npy failed: MemoryError") as info:
        encode_files(path, tmp_path / "out", tok, text_field="body")
    assert isinstance(info.value.__cause__, MemoryError)
    assert left_after_failure(tmp_path / "out") == []


# ---- on Dask -------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed", reason="encoding on Dask needs dask[distributed]")
    # as tests/test_dask.py: no dashboard, the scheduler's HTTP server on a free port
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=True, dashboard_address=":0",
                                  scheduler_kwargs={"dashboard": False}) as cluster:
        with distributed.Client(cluster) as client:
            yield client


def test_a_run_that_stopped_still_refuses_another_tokenizer(tok, tmp_path):
    # the settings are in index.json before the first shard is written: a run that fails part-way, then one
    # with another tokenizer, kept the first one's arrays and recorded the second one's digest
    good = write_shard(tmp_path, "a.jsonl", documents(3, n=8))
    bad = tmp_path / "b.jsonl"
    bad.write_bytes(b'{"body": "fine"}\n{"body": "caf\xe9"}\n')
    out = tmp_path / "out"
    with pytest.raises((CorpusDecodeError, InputError)):
        encode_files([good, bad], out, tok, text_field="body")
    assert (out / "a.npy").exists()
    other = Tokenizer(dict(tok.vocab), list(tok.merges)[:-1], [EOT, PAD])
    with pytest.raises(ValueError, match="encoded with another tokenizer"):
        encode_files([good], out, other, text_field="body")
    index = encode_files([good], out, tok, text_field="body")
    assert index["complete"] is True and [e["file"] for e in index["shards"]] == ["a.npy"]


def test_a_shard_whose_input_changed_is_encoded_again(tok, tmp_path, monkeypatch):
    a = write_shard(tmp_path, "a.jsonl", documents(3, n=8))
    b = write_shard(tmp_path, "b.jsonl", documents(4, n=8))
    out = tmp_path / "out"
    encode_files([a, b], out, tok, text_field="body")
    write_shard(tmp_path, "b.jsonl", documents(5, n=9))       # another text in the same file
    bad = tmp_path / "0.jsonl"                                 # a run that stops before it gets to b
    bad.write_text('{"body": 5}\n')
    with pytest.raises(InputError):
        encode_files([a, bad, b], out, tok, text_field="body")
    encoded = spy_on_encoding(monkeypatch)
    index = encode_files([a, b], out, tok, text_field="body")
    assert encoded == ["b.npy"]
    np.testing.assert_array_equal(np.load(out / "b.npy"), expected(tok, "b.jsonl", documents(5, n=9)))
    assert index["shards"][1]["input"]["bytes"] == os.path.getsize(b)


_KILLED_AFTER_FIRST_SHARD = """
import os, signal, sys
import bpe_fast.shards
from bpe_fast import Tokenizer, encode_files
out, first = sys.argv[1], sys.argv[2]
bpe_fast.shards._INDEX_AFTER = 1e9                   # no index write after the first shard, however slow it is

def progress(stage, done, total):
    if os.path.exists(os.path.join(out, first)):     # the first shard is complete on disk: the process dies
        os.kill(os.getpid(), signal.SIGKILL)         # (the OOM killer, a power cut): no index rewrite after it

encode_files(sys.argv[4:], out, Tokenizer.load(sys.argv[3]), num_processes=1, progress=progress)
"""


_KILLED_AFTER_A_SLOW_FIRST_SHARD = """
import os, signal, sys, time
from bpe_fast import Tokenizer, encode_files
out, first = sys.argv[1], sys.argv[2]
slept, after = [], []

def progress(stage, done, total):
    if not os.path.exists(os.path.join(out, first)):
        if not slept:       # the first shard takes 3 s: past the 1 s plus twenty index writes' time (an fsync
            slept.append(time.sleep(3.0))   # each: 10-20 ms on a loaded machine made 1.2 s too short), not 30 s
        return
    after.append(done)
    if len(after) > 1:                               # the first shard done, and reported: within the next one
        os.kill(os.getpid(), signal.SIGKILL)

encode_files(sys.argv[4:], out, Tokenizer.load(sys.argv[3]), num_processes=1, progress=progress)
"""


def _run_killed(script, tok, tmp_path):
    """Shards a.txt and b.txt encoded into out/ by `script` in a process that kills itself (SIGKILL) after the
    first shard: (a, b, out)."""
    a = write_shard(tmp_path, "a.txt", documents(3, n=8))
    b = write_shard(tmp_path, "b.txt", documents(4, n=8))
    tok.save(tmp_path / "tok")
    out = tmp_path / "out"
    killed = subprocess.run([sys.executable, "-c", script, str(out), "a.npy", str(tmp_path / "tok"), str(a), str(b)],
                            capture_output=True, text=True, cwd=tmp_path)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    return a, b, out


def test_a_run_killed_keeps_the_shards_done_a_second_before(tok, tmp_path, monkeypatch):
    # the index was rewritten every 30 s only: runs killed sooner (a job limit, a preemptible machine) each
    # started from nothing (helper-147). Now after a shard once a second (and twenty rewrites' time) has passed.
    a, b, out = _run_killed(_KILLED_AFTER_A_SLOW_FIRST_SHARD, tok, tmp_path)
    assert [e["file"] for e in json.loads((out / INDEX_FILE).read_text())["shards"]] == ["a.npy"]
    encoded = spy_on_encoding(monkeypatch)
    index = encode_files([a, b], out, tok)
    assert encoded == ["b.npy"] and index["complete"]
    np.testing.assert_array_equal(np.load(out / "a.npy"), expected(tok, "a.txt", documents(3, n=8)))


def test_an_array_written_to_since_it_was_complete_is_encoded_again(tok, tmp_path, monkeypatch):
    # its header and length are still right: only the index's stamp of the array tells (helper-105's case)
    a = write_shard(tmp_path, "a.txt", documents(3, n=8))
    b = write_shard(tmp_path, "b.txt", documents(4, n=8))
    out = tmp_path / "out"
    index = encode_files([a, b], out, tok)
    assert index["shards"][0]["output"] == {"bytes": os.path.getsize(out / "a.npy"),
                                            "mtime_ns": os.stat(out / "a.npy").st_mtime_ns}
    good = np.load(out / "a.npy")
    with open(out / "a.npy", "r+b") as f:            # the last id overwritten, the length unchanged
        f.seek(-2, os.SEEK_END)
        f.write(b"\xff\x7f")
    os.utime(out / "a.npy", ns=(5, 5))               # (the write's own mtime may fall in the same tick)
    assert complete_length(out / "a.npy", np.dtype(np.uint16)) == len(good)
    encoded = spy_on_encoding(monkeypatch)
    again = encode_files([a, b], out, tok)
    assert encoded == ["a.npy"]
    np.testing.assert_array_equal(np.load(out / "a.npy"), good)
    assert again["shards"][1] == index["shards"][1]
    assert again["shards"][0]["output"]["mtime_ns"] == os.stat(out / "a.npy").st_mtime_ns
    # an index written before the arrays' stamps were (no "output"): complete arrays are kept, as then
    (out / INDEX_FILE).write_text(json.dumps(dict(again, shards=[{k: v for k, v in e.items() if k != "output"}
                                                                 for e in again["shards"]])))
    os.utime(out / "b.npy", ns=(5, 5))
    encoded.clear()
    assert encode_files([a, b], out, tok)["shards"][1]["output"]["mtime_ns"] == 5 and encoded == []


def test_a_shard_completed_after_the_last_index_write_is_encoded_again(tok, tmp_path, monkeypatch):
    # index.json is rewritten every _INDEX_EVERY seconds: a run killed after a shard's .npy is complete, before
    # the next rewrite, leaves it complete and unlisted; its input may change before the next run, which kept it
    # (and recorded the new input's stamp for it, so that no later run could tell)
    a, b, out = _run_killed(_KILLED_AFTER_FIRST_SHARD, tok, tmp_path)
    assert complete_length(out / "a.npy", np.dtype(np.uint16)) is not None
    assert json.loads((out / INDEX_FILE).read_text())["shards"] == []
    write_shard(tmp_path, "a.txt", documents(5, n=9))       # another text in the same file
    encoded = spy_on_encoding(monkeypatch)
    index = encode_files([a, b], out, tok)
    assert encoded == ["a.npy", "b.npy"]
    np.testing.assert_array_equal(np.load(out / "a.npy"), expected(tok, "a.txt", documents(5, n=9)))
    assert index["shards"][0]["input"]["bytes"] == os.path.getsize(a)
    # an index that lists a shard without its input's stamp cannot tell whether the input changed: encoded again
    (out / INDEX_FILE).write_text(json.dumps(dict(index, shards=[{k: v for k, v in e.items() if k != "input"}
                                                                 for e in index["shards"]])))
    encoded.clear()
    again = encode_files([a, b], out, tok)
    assert settled(again) == settled(index) and encoded == ["a.npy", "b.npy"]
    index = again
    # with no index.json at all, nothing says which tokenizer wrote the arrays: encoded again (they were kept,
    # and a run with another tokenizer listed them as its own; helper-147)
    os.remove(out / INDEX_FILE)
    encoded.clear()
    assert settled(encode_files([a, b], out, tok)) == settled(index) and encoded == ["a.npy", "b.npy"]


def test_a_killed_run_leaves_no_temporary_file_after_the_next(tok, tmp_path):
    # a run killed (SIGKILL, the OOM killer) while it wrote a shard leaves atomic_output's temporary file, as large
    # as what was written; no later run removed it, and each killed run added one (hidden: they start with ".")
    # (one killed while it rewrote index.json, during its fsync, left the index's: no later run removed that)
    import tempfile
    a = write_shard(tmp_path, "a.txt", documents(3, n=8))
    b = write_shard(tmp_path, "b.jsonl", documents(4, n=8))
    out = tmp_path / "out"
    out.mkdir()
    left = []
    for name in ("a.npy", "b.npy", INDEX_FILE):         # named as atomic_output names them
        fd, tmp = tempfile.mkstemp(dir=out, prefix=f".{name}.", suffix=".tmp")
        os.write(fd, b"\x93NUMPY partial")
        os.close(fd)
        left.append(tmp)
    other = out / ".c.npy.abcdefgh.tmp"                  # of an output this run does not write: left alone
    other.write_bytes(b"")
    encode_files([a, b], out, tok, text_field="body")
    assert leftovers(out) == [other.name]
    encode_files([a, b], out, tok, text_field="body")     # and when every shard is complete
    assert leftovers(out) == [other.name]


def test_a_killed_runs_temporary_file_of_a_long_named_shard_is_removed_too(tok, tmp_path):
    # an output name of over 241 bytes: its temporary file holds only the start of it (atomic.staged_key)
    from bpe_fast.atomic import staged_key
    name = "x" * 245
    a = write_shard(tmp_path, name + ".txt", documents(3, n=8))
    out = tmp_path / "out"
    out.mkdir()
    (out / f".{staged_key(name + '.npy', str(out))}.abcdefgh.tmp").write_bytes(b"\x93NUMPY partial")
    other = out / f".{staged_key('y' * 245 + '.npy', str(out))}.abcdefgh.tmp"       # another output's
    other.write_bytes(b"")
    index = encode_files([a], out, tok)
    assert leftovers(out) == [other.name]
    assert [entry["file"] for entry in index["shards"]] == [name + ".npy"]
    assert np.load(out / (name + ".npy")).tolist() == tok.encode((tmp_path / (name + ".txt")).read_bytes().decode("utf-8"))


def test_dask_gives_the_same_files(tok, tmp_path, client, monkeypatch):
    contents, paths = write_all(tmp_path / "in")
    kw = dict(text_field="body", text_column="body")
    local = encode_files(paths, tmp_path / "local", tok, **kw)
    monkeypatch.chdir(tmp_path)                        # relative paths: the workers get absolute ones
    given = [os.path.join("in", p.name) for p in paths]
    remote = encode_files(given, "remote", tok, client=client, **kw)
    assert settled(remote)["shards"] == [dict(e, path=g) for e, g in zip(settled(local)["shards"], given)]
    for entry in local["shards"]:
        assert (tmp_path / "remote" / entry["file"]).read_bytes() == (tmp_path / "local" / entry["file"]).read_bytes()
    assert leftovers(tmp_path / "remote") == []
    # resuming on Dask: only the missing shard is encoded
    first = tmp_path / "remote" / local["shards"][0]["file"]
    inode = os.stat(first).st_ino                    # a shard written again is a new file (atomic_output)
    os.remove(tmp_path / "remote" / local["shards"][1]["file"])
    resumed = encode_files(given, "remote", tok, client=client, separator=None, **kw)
    assert os.stat(first).st_ino == inode
    assert resumed == dict(remote, shards=[dict(e, output=resumed["shards"][1]["output"]) if k == 1 else e
                                           for k, e in enumerate(remote["shards"])])
    assert (tmp_path / "remote" / local["shards"][1]["file"]).exists()


def test_dask_error_names_the_shard(tok, tmp_path, client):
    good = write_shard(tmp_path, "a.txt", ["fine text"])
    bad = tmp_path / "b.txt.gz"
    data = b"line\n" * 100 + b"caf\xe9"
    bad.write_bytes(gzip.compress(data))
    with pytest.raises(CorpusDecodeError) as info:
        encode_files([good, bad], tmp_path / "out", tok, client=client)
    assert (info.value.path, info.value.offset, info.value.line) == (str(bad), 503, 101)
    assert "b.npy" not in left_after_failure(tmp_path / "out")
    with pytest.raises(TypeError, match="Client"):
        encode_files(good, tmp_path / "out", tok, client="tcp://127.0.0.1:8786")


def test_dask_refuses_a_pipe_naming_it_before_anything_is_written(tok, tmp_path, client):
    # a pipe (a named pipe, /dev/stdin, <(cmd) as /dev/fd/N) was sent to the workers by its path: a worker read
    # its own stdin (an empty shard, without a word, where it is /dev/null), its own fd N, or another machine's
    # named pipe (waiting for ever); count_pretokens(client=...) refuses them, and so does encode_files now
    good = write_shard(tmp_path, "a.txt", ["fine text"])
    fifo = tmp_path / "p.txt"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match=r"p.txt: .*not a regular file \(a pipe\?\).*without client="):
        encode_files([good, fifo], tmp_path / "out", tok, client=client)
    assert not (tmp_path / "out").exists()


def test_dask_with_a_pattern_without_the_native_scanner_and_several_threads(tok, tmp_path, client):
    # a text shard encoded by encode_file, whose workers for a pattern `regex` runs are processes: a Dask worker
    # (a daemon process) may not start them, and the task failed with "daemonic processes are not allowed to
    # have children" (bpe-fast encode --dask-scheduler ... -j 2 with a custom pattern)
    custom = Tokenizer(dict(tok.vocab), list(tok.merges), [EOT, PAD], pattern=GPT2_PATTERN + "|x")
    text = make_corpus(61, 120_000, specials=[EOT])          # over 1 MB: encode_file would use its workers
    assert len(text.encode()) > 1 << 20
    path = write_shard(tmp_path, "a.txt", [text])
    index = encode_files(path, tmp_path / "out", custom, client=client, num_processes=2)
    assert index["complete"] is True
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "a.npy"), custom.encode(text))


def test_dask_workers_that_see_another_out_dir_are_an_error(tok, tmp_path, client, monkeypatch):
    # workers that see another folder at out_dir's path (a disk of their own, not the caller's shared one) wrote
    # the arrays there: encode_files returned a complete index of arrays the caller does not have. Simulated by
    # taking index.json (written before the first task) out of the folder the workers see
    path = write_shard(tmp_path, "a.jsonl", documents(3, n=8))
    out = tmp_path / "out"
    real = shards_module._encode_on_dask

    def elsewhere(*args, **kwargs):
        os.remove(out / INDEX_FILE)
        return real(*args, **kwargs)

    monkeypatch.setattr(shards_module, "_encode_on_dask", elsewhere)
    with pytest.raises(RuntimeError, match=rf"encoding {path} .*Dask worker .*every worker must see out_dir at "
                                           rf"the same path"):
        encode_files(path, out, tok, client=client, text_field="body")
    assert not (out / "a.npy").exists()


def test_dask_worker_killed_while_it_writes_a_shard(tok, tmp_path, client):
    # the task is run again on the worker the nanny starts, and the run ends complete; the killed task's
    # temporary file (.a.npy.XXXXXXXX.tmp) was left in out_dir
    import threading
    import time
    custom = Tokenizer(dict(tok.vocab), list(tok.merges), [EOT, PAD], pattern=GPT2_PATTERN + "|x")   # slower
    text = make_corpus(62, 100_000, specials=[EOT])
    path = write_shard(tmp_path, "a.txt", [text])
    out = tmp_path / "out"
    pid, = client.run(os.getpid).values()
    killed = []

    def kill_when_writing():
        deadline = time.monotonic() + 120
        while not killed and time.monotonic() < deadline:
            if out.is_dir() and any(n.startswith(".a.npy.") for n in os.listdir(out)):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            time.sleep(0.002)

    watcher = threading.Thread(target=kill_when_writing)
    watcher.start()
    try:
        index = encode_files(path, out, custom, client=client)
    finally:
        watcher.join()
        client.wait_for_workers(1, timeout=120)
    assert killed and index["complete"] is True
    np.testing.assert_array_equal(np.load(out / "a.npy"), custom.encode(text))
    assert leftovers(out) == []


def test_the_tasks_that_end_after_an_error_are_listed(monkeypatch):
    # on a Dask task's error, a task already running still writes its shard: the index listed it or not by which
    # of the two as_completed gave first (test_dask_error_names_the_shard failed so on a loaded machine); the
    # shards of the tasks that end within SETTLE_SECONDS are now listed
    distributed = pytest.importorskip("distributed", reason="encoding on Dask needs dask[distributed]")
    from bpe_fast import shards

    class Task:
        def __init__(self, status, count):
            self.status, self.count = status, count

        def result(self):
            return self.count

    waited = []
    monkeypatch.setattr(distributed, "wait", lambda futures, timeout: waited.append((len(futures), timeout)))
    failed, running, cancelled, yielded = Task("error", 0), Task("finished", 7), Task("cancelled", 0), Task("finished", 3)
    futures = {yielded: 0, failed: 1, running: 2, cancelled: 3}
    assert list(shards._finished_anyway(futures, {yielded, failed})) == [(2, 7)]
    assert waited == [(2, shards.SETTLE_SECONDS)]
