"""The command line's corpus inputs, training options and habits (issue 14): each flag against the Python
function it stands for, or against the oracle."""
import functools
import gzip
import io
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from bpe_fast import Tokenizer, __version__, count_pretokens, train_bpe
from bpe_fast.cli import main
from bpe_fast.patterns import GPT4_PATTERN

from corpora import EOT, make_corpus
from train_oracle import oracle_count_pretokens, oracle_train_bpe


def run(argv, capsys):
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.err


@pytest.fixture(scope="module")
def docs():
    return [make_corpus(k, n_words=80) for k in range(30)]


@pytest.fixture(scope="module")
def shards(tmp_path_factory, docs):
    """The documents as a .jsonl.gz shard and a plain-text shard (joined by EOT)."""
    folder = tmp_path_factory.mktemp("shards")
    with gzip.open(folder / "a.jsonl.gz", "wt", encoding="utf-8") as f:
        for d in docs[:20]:
            f.write(json.dumps({"body": d}) + "\n")
    (folder / "b.txt").write_bytes(EOT.join(docs[20:]).encode())
    return folder


def test_train_on_shards_of_several_kinds_equals_the_oracle(tmp_path, shards, docs, capsys):
    code, err = run(["train", str(shards / "a.jsonl.gz"), str(shards / "b.txt"), "--text-field", "body",
                     "--vocab-size", "330", "--special-token", EOT, "-j", "2", "-o", str(tmp_path / "t")], capsys)
    assert code == 0, err
    _, merges = oracle_train_bpe(EOT.join(docs), 330, [EOT], Tokenizer.load(tmp_path / "t").pattern)
    assert list(Tokenizer.load(tmp_path / "t").merges) == merges


def test_train_options_reach_train_bpe(tmp_path, shards, capsys):
    corpus = shards / "b.txt"
    code, err = run(["train", str(corpus), "--vocab-size", "300", "--special-token", EOT, "--min-frequency", "3",
                     "--max-token-length", "4", "--special-tokens-position", "end", "--pad-vocab-to-multiple-of",
                     "64", "-o", str(tmp_path / "t")], capsys)
    assert code == 0, err
    want = train_bpe(corpus, 300, [EOT], min_frequency=3, max_token_length=4, special_tokens_position="end",
                     pad_vocab_to_multiple_of=64)
    tok = Tokenizer.load(tmp_path / "t")
    assert (dict(tok.vocab), list(tok.merges)) == want
    assert max(map(len, tok.vocab.values())) <= max(4, len(EOT))


def test_continue_from_keeps_every_id(tmp_path, shards, docs, capsys):
    base = tmp_path / "base"
    assert run(["-q", "train", str(shards / "b.txt"), "--vocab-size", "300", "--special-token", EOT,
                "--pattern", "gpt4", "-o", str(base)], capsys)[0] == 0
    code, err = run(["train", str(shards / "a.jsonl.gz"), "--text-field", "body", "--vocab-size", "340",
                     "--continue-from", str(base), "-o", str(tmp_path / "more")], capsys)
    assert code == 0, err
    old, new = Tokenizer.load(base), Tokenizer.load(tmp_path / "more")
    assert all(new.vocab[i] == t for i, t in old.vocab.items()) and len(new.vocab) == 340
    assert new.pattern == GPT4_PATTERN and list(new.special_tokens) == [EOT]
    assert (dict(new.vocab), list(new.merges)) == train_bpe(iter(docs[:20]), 340, initial=old)


def test_quiet_and_processes_after_the_command(tmp_path, shards, capsys):
    code, err = run(["count", str(shards / "b.txt"), "-q", "-j", "1", "--special-token", EOT,
                     "-o", str(tmp_path / "c.npz")], capsys)
    assert code == 0 and "pre-tokenized" not in err
    code, err = run(["-j", "2", "count", str(shards / "b.txt"), "--special-token", EOT,
                     "-o", str(tmp_path / "c.npz")], capsys)
    assert code == 0 and "pre-tokenized" in err


def test_max_bytes_and_max_documents(tmp_path, shards, docs, capsys):
    out = tmp_path / "c.npz"
    assert run(["-q", "count", str(shards / "a.jsonl.gz"), "--text-field", "body", "--max-documents", "4",
                "--special-token", EOT, "-o", str(out)], capsys)[0] == 0
    from bpe_fast import PretokenCounts
    assert PretokenCounts.load(out) == oracle_count_pretokens(EOT.join(docs[:4]), [EOT],
                                                              PretokenCounts.load(out).pattern)
    assert run(["-q", "count", str(shards / "b.txt"), "--max-bytes", "1KB", "-o", str(out)], capsys)[0] == 0
    text = (shards / "b.txt").read_bytes()[:1000].decode("utf-8", "ignore")
    assert PretokenCounts.load(out) == count_pretokens(iter([text]))
    code, err = run(["count", str(shards / "b.txt"), "--max-bytes", "lots", "-o", str(out)], capsys)
    assert code == 1 and "--max-bytes" in err


def test_train_from_stdin(tmp_path, shards, capsys, monkeypatch):
    data = (shards / "b.txt").read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    code, err = run(["train", "-", "--vocab-size", "300", "--special-token", EOT, "-o", str(tmp_path / "t")], capsys)
    assert code == 0, err
    assert list(Tokenizer.load(tmp_path / "t").merges) == train_bpe(shards / "b.txt", 300, [EOT])[1]


def test_count_from_stdin_with_two_processes_counts_everything(tmp_path, docs):
    # stdin is read by the calling process, which hands 4 MB batches to a worker: a batch must not hold the
    # file object (it cannot be sent; the queue dropped such batches, 40% of 20 MB were counted, exit 0)
    from bpe_fast import PretokenCounts

    corpus = tmp_path / "c.txt"
    block = EOT.join(docs).encode()
    corpus.write_bytes(block * (14_000_000 // len(block) + 1))
    out = tmp_path / "c.npz"
    with open(corpus, "rb") as stdin:
        done = subprocess.run([sys.executable, "-m", "bpe_fast", "-q", "-j", "2", "count", "-",
                               "--special-token", EOT, "-o", str(out)], stdin=stdin, capture_output=True,
                              cwd=tmp_path)
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
    assert PretokenCounts.load(out) == count_pretokens(corpus, [EOT], num_processes=1)


def test_progress_covers_every_input(tmp_path, shards, capsys):
    # each text file reported its own bytes against its own size, and the CLI's progress line, which shows a
    # stage's 100% once, stopped at the first file's: `count a.txt b.txt` showed 100% of a.txt and nothing more
    paths = [tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "c.txt"]
    for k, path in enumerate(paths):
        path.write_text(make_corpus(50 + k, n_words=2000 * (k + 1)), encoding="utf-8")
    total = sum(p.stat().st_size for p in paths)
    calls = []
    count_pretokens(paths, [EOT], num_processes=1, progress=lambda *a: calls.append(a))
    assert calls[-1] == ("count", total, total) and all(t == total for _, _, t in calls)
    assert [d for _, d, _ in calls] == sorted(d for _, d, _ in calls)
    calls.clear()                           # within max_bytes: the total is what is read
    count_pretokens(paths, [EOT], num_processes=1, max_bytes=total - 100, progress=lambda *a: calls.append(a))
    assert calls[-1] == ("count", total - 100, total - 100)
    calls.clear()                           # with JSON lines among them: bytes done, the total not known
    count_pretokens([paths[0], shards / "a.jsonl.gz"], [EOT], num_processes=1, text_field="body",
                    progress=lambda *a: calls.append(a))
    assert all(t is None for _, _, t in calls) and calls[-1][1] > paths[0].stat().st_size
    assert [d for _, d, _ in calls] == sorted(d for _, d, _ in calls)

    code, err = run(["count", *map(str, paths), "-o", str(tmp_path / "x.npz")], capsys)
    assert code == 0, err
    shown = [line for line in err.splitlines() if line.startswith("pre-tokenized")]
    assert shown[-1].startswith(f"pre-tokenized {total / 1000:.1f} KB / {total / 1000:.1f} KB (100%)"), err


def test_stdout_whose_reader_stops_ends_quietly_and_synth_writes_to_stdout(tmp_path, shards):
    # `| head`: the .npy written to a closed pipe ended with exit 1 and "... requested and ... written"
    cli = [sys.executable, "-m", "bpe_fast"]
    tok = tmp_path / "t"
    assert main(["-q", "train", str(shards / "b.txt"), "--vocab-size", "300", "-o", str(tok)]) == 0
    big = tmp_path / "big.txt"
    big.write_bytes((shards / "b.txt").read_bytes() * 20)
    enc = subprocess.Popen(cli + ["-q", "encode", "-t", str(tok), str(big), "-o", "-"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, cwd=tmp_path)
    assert enc.stdout.read(10)[:6] == b"\x93NUMPY"
    enc.stdout.close()
    err = enc.stderr.read()
    assert enc.wait() == 141 and err == b"", err
    synth = subprocess.run(cli + ["synth", "--size", "20KB", "-o", "-"], capture_output=True, cwd=tmp_path)
    assert synth.returncode == 0 and not (tmp_path / "-").exists()
    assert len(synth.stdout) == 20_000 and synth.stdout == _synth_bytes(tmp_path, cli)


def _synth_bytes(folder, cli):
    out = folder / "s.txt"
    subprocess.run(cli + ["synth", "--size", "20KB", "-o", str(out)], check=True, capture_output=True, cwd=folder)
    return out.read_bytes()


def test_from_counts_with_another_pattern_is_an_error(tmp_path, shards, capsys):
    counts = tmp_path / "c.npz"
    assert run(["-q", "count", str(shards / "b.txt"), "-o", str(counts)], capsys)[0] == 0
    code, err = run(["train", "--from-counts", str(counts), "--pattern", "gpt4", "--vocab-size", "300",
                     "-o", str(tmp_path / "t")], capsys)
    assert code == 1 and "--pattern gpt4 differs" in err and not (tmp_path / "t").exists()
    code, err = run(["train", "--from-counts", str(counts), "--pattern", "gpt2", "--vocab-size", "300",
                     "-o", str(tmp_path / "t")], capsys)
    assert code == 0, err


def test_train_output_folders_and_options_that_do_not_apply(tmp_path, shards, capsys):
    corpus = str(shards / "b.txt")
    nested = tmp_path / "runs" / "new" / "tok"         # missing folders are made, as Tokenizer.save makes them
    code, err = run(["-q", "train", corpus, "--vocab-size", "300", "-o", str(nested)], capsys)
    assert code == 0, err
    assert list(Tokenizer.load(nested).merges) == train_bpe(corpus, 300, num_processes=1)[1]
    (tmp_path / "afile").write_text("x")
    code, err = run(["-q", "train", corpus, "--vocab-size", "300", "-o", str(tmp_path / "afile" / "sub")], capsys)
    assert code == 1 and f"{tmp_path / 'afile'} is not a folder" in err
    counts = tmp_path / "c.npz"
    assert run(["-q", "count", corpus, "-o", str(counts)], capsys)[0] == 0
    code, err = run(["-q", "train", "--from-counts", str(counts), "--max-bytes", "10", "--text-field", "body",
                     "--vocab-size", "300", "-o", str(tmp_path / "t2")], capsys)
    assert code == 1 and "--max-bytes, --text-field: for reading CORPUS inputs" in err
    assert not (tmp_path / "t2").exists()


def test_count_into_a_folder_is_refused_before_counting(tmp_path, capsys):
    # `-o` naming a folder failed only when the counts were saved ("Is a directory"), after the whole corpus
    # was read: here the corpus is not even valid UTF-8, and the error is the output's
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"hello \xff world")
    code, err = run(["-q", "count", str(bad), "-o", str(tmp_path)], capsys)
    assert code == 1 and f"-o {tmp_path}: is a folder" in err and "UTF-8" not in err
    assert sorted(os.listdir(tmp_path)) == ["bad.txt"]


def test_a_mapping_whose_text_is_not_a_string_is_named_and_numpy_sizes_work(tmp_path):
    with pytest.raises(TypeError, match=r"item 1 of the input: field 'text' is int"):
        count_pretokens(iter([{"text": "fine"}, {"text": 5}]), num_processes=1)
    vocab, merges = train_bpe(iter(["ab ab ab"]), np.int64(258), num_processes=1)
    assert len(vocab) == 258 and merges == train_bpe(iter(["ab ab ab"]), 258, num_processes=1)[1]


def test_invalid_utf8_error_names_the_cli_flag(tmp_path, capsys):
    src = tmp_path / "bad.txt.gz"
    src.write_bytes(gzip.compress(b"hello world\n" * 10 + b"\xff oops\n"))
    code, err = run(["train", str(src), "--vocab-size", "300", "-o", str(tmp_path / "t")], capsys)
    assert code == 1 and "byte offset 120 (line 11)" in err and "--errors replace" in err
    assert "errors='replace'" not in err and not (tmp_path / "t").exists()


def test_bad_options_are_errors_naming_the_flag(tmp_path, shards, capsys):
    for flag in ("--min-frequency", "--max-token-length", "--pad-vocab-to-multiple-of"):
        with pytest.raises(SystemExit):
            main(["train", str(shards / "b.txt"), "--vocab-size", "300", flag, "0", "-o", str(tmp_path / "t")])
        assert flag in capsys.readouterr().err
    code, err = run(["train", str(shards / "b.txt"), "--vocab-size", "300", "--continue-from",
                     str(tmp_path / "nope"), "-o", str(tmp_path / "t")], capsys)
    assert code == 1 and "--continue-from" in err


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out.strip() == f"bpe-fast {__version__}"


def test_num_processes_from_the_environment(monkeypatch):
    from bpe_fast.procs import check_num_processes
    monkeypatch.setenv("BPE_FAST_NUM_PROCESSES", "3")
    assert check_num_processes(None) == 3 and check_num_processes(1) == 1
    monkeypatch.setenv("BPE_FAST_NUM_PROCESSES", "zero")
    with pytest.raises(ValueError, match="BPE_FAST_NUM_PROCESSES"):
        check_num_processes(None)
    # white space only was taken for the variable unset (all cores); "" still means unset
    monkeypatch.setenv("BPE_FAST_NUM_PROCESSES", " \t")
    with pytest.raises(ValueError, match=r"BPE_FAST_NUM_PROCESSES must be a positive integer, got ' \\t'"):
        check_num_processes(None)
    monkeypatch.setenv("BPE_FAST_NUM_PROCESSES", "")
    assert check_num_processes(None) >= 1
    monkeypatch.setenv("BPE_FAST_NUM_PROCESSES", " 2 ")
    assert check_num_processes(None) == 2
    # a digit int() does not take ('³'.isdigit()): "invalid literal for int() with base 10: '³'", no variable named
    monkeypatch.setenv("BPE_FAST_NUM_PROCESSES", "\u00b3")
    with pytest.raises(ValueError, match="BPE_FAST_NUM_PROCESSES must be a positive integer, got '\u00b3'"):
        check_num_processes(None)


@pytest.mark.parametrize("variable, value, message", [
    # white space only was taken for the variable unset (all cores)
    ("BPE_FAST_NUM_PROCESSES", " ", "BPE_FAST_NUM_PROCESSES must be a positive integer, got ' '"),
    # the compiled modules read BPE_FAST_HASH_SEED when they are imported, and main imported one before its
    # errors were caught: a ten-line traceback, where BPE_FAST_NUM_PROCESSES=abc is one line
    ("BPE_FAST_HASH_SEED", "xyz", "BPE_FAST_HASH_SEED must be an integer, got 'xyz'"),
])
def test_an_invalid_environment_variable_is_one_line(tmp_path, variable, value, message):
    (tmp_path / "c.txt").write_text("some text\n", encoding="utf-8")
    env = dict(os.environ, **{variable: value})
    proc = subprocess.run([sys.executable, "-m", "bpe_fast", "count", "c.txt", "-o", "c.npz"], capture_output=True,
                          text=True, cwd=tmp_path, env=env)
    assert proc.returncode == 1
    assert proc.stderr == f"bpe-fast: {message}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.txt"]


def test_encode_and_decode_through_stdin_and_stdout(tmp_path, shards):
    tok = tmp_path / "t"
    assert main(["-q", "train", str(shards / "b.txt"), "--vocab-size", "300", "--special-token", EOT,
                 "-o", str(tok)]) == 0
    text = (shards / "b.txt").read_bytes()
    cli = [sys.executable, "-m", "bpe_fast"]
    # run in tmp_path: from the repository's root, `-m bpe_fast` would import the source folder, not the package
    run_cli = functools.partial(subprocess.run, capture_output=True, cwd=tmp_path)
    enc = run_cli(cli + ["encode", "-t", str(tok), "-", "-o", "-"], input=text)
    assert enc.returncode == 0, enc.stderr
    ids = np.load(io.BytesIO(enc.stdout))
    assert ids.tolist() == Tokenizer.load(tok).encode(text.decode())
    dec = run_cli(cli + ["decode", "-t", str(tok), "-", "-o", "-"], input=enc.stdout)
    assert dec.returncode == 0 and dec.stdout == text
    bad = run_cli(cli + ["encode", "-t", str(tok), "-", "-o", "-"], input=b"ok\n\xff")
    assert bad.returncode == 1 and b"<stdin>: invalid UTF-8 at byte offset 3 (line 2)" in bad.stderr
    assert b"--errors replace" in bad.stderr and bad.stdout == b""


def test_encode_several_inputs_into_a_folder(tmp_path, shards, docs, capsys):
    tok = tmp_path / "t"
    assert main(["-q", "train", str(shards / "b.txt"), "--vocab-size", "300", "--special-token", EOT,
                 "-o", str(tok)]) == 0
    out = tmp_path / "out"
    code, err = run(["encode", "-t", str(tok), str(shards / "a.jsonl.gz"), str(shards / "b.txt"),
                     "--text-field", "body", "-o", str(out) + "/"], capsys)
    assert code == 0, err
    t = Tokenizer.load(tok)
    assert np.load(out / "a.npy").tolist() == [i for d in docs[:20] for i in t.encode(d)]
    assert np.load(out / "b.npy").tolist() == t.encode((shards / "b.txt").read_bytes().decode("utf-8"))
    index = json.loads((out / "index.json").read_text())
    assert sum(s["tokens"] for s in index["shards"]) == index["tokens"]
    one = tmp_path / "one.npy"
    code, err = run(["encode", "-t", str(tok), str(shards / "a.jsonl.gz"), "--text-field", "body",
                     "-o", str(one)], capsys)
    assert code == 0, err
    assert np.load(one).tolist() == np.load(out / "a.npy").tolist()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.npy", "out", "t"]


def test_no_public_name_is_shadowed_by_a_submodule(tmp_path):
    # importing every submodule first must leave each public name what it was (a module named like a function
    # used to replace the function: bpe_fast.encode_file became the module once it was imported)
    code = ("import importlib, pkgutil, bpe_fast\n"
            "for m in pkgutil.iter_modules(bpe_fast.__path__):\n"
            "    if m.name == '__main__': continue\n"
            "    importlib.import_module('bpe_fast.' + m.name)\n"
            "import types\n"
            "bad = [n for n in bpe_fast.__all__ if isinstance(getattr(bpe_fast, n), types.ModuleType)]\n"
            "assert not bad, bad\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


def _report_figures(err):
    """The figures report prints (the lines naming the tokenizer and the bytes read), without its timing."""
    return [line.split(" in ")[0] for line in err.splitlines() if "bytes per token" in line or "report on" in line]


def test_report_reads_every_kind_of_eval_input_as_the_other_commands_do(tmp_path, shards, docs, capsys):
    # report --eval x.gz encoded gzip's compressed bytes as text (most of them invalid UTF-8: a decode error, or
    # with --errors replace a report on U+FFFDs); --eval took only plain files, none of the other commands' kinds
    code, err = run(["train", str(shards / "b.txt"), "--vocab-size", "300", "--special-token", EOT, "-o",
                     str(tmp_path / "t")], capsys)
    assert code == 0, err
    tok = Tokenizer.load(tmp_path / "t")
    text = EOT.join(docs[20:])
    gz = tmp_path / "held.txt.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    got = {}
    for name, extra in (("txt", [str(shards / "b.txt")]), ("gz", [str(gz)])):
        code, err = run(["report", "-t", str(tmp_path / "t"), "--eval", *extra, "-o", str(tmp_path / f"{name}.html")],
                        capsys)
        assert code == 0, err
        got[name] = _report_figures(err)
    assert got["gz"] == got["txt"] and len(got["txt"]) == 2
    # JSON lines (its documents each encoded alone, as encode reads them) under --text-field
    code, err = run(["report", "-t", str(tmp_path / "t"), "--eval", str(shards / "a.jsonl.gz"), "--text-field",
                     "body", "-o", str(tmp_path / "j.html")], capsys)
    assert code == 0, err
    size = sum(len(d.encode()) for d in docs[:20])
    assert f"report on {size / 1000:.1f} KB" in err or f"report on {size:,}" in err, err
    tokens = sum(len(tok.encode(d)) for d in docs[:20])
    assert f"{size / tokens:.3f} bytes per token" in err, err


@pytest.mark.parametrize("command", [["train", "--vocab-size", "300", "-o", "tok"], ["count", "-o", "c.npz"]])
@pytest.mark.parametrize("processes", ["1", "2"])
@pytest.mark.parametrize("source", ["-", "/dev/stdin"])
def test_invalid_utf8_from_stdin_names_the_line_and_the_offset(tmp_path, command, processes, source):
    # a file's invalid UTF-8 is named by its byte offset and line (the file is read again for the line); stdin
    # (or a pipe given by its path) cannot be read again, and its error gave the offset alone
    line = b"a line of some text\n"
    head = line * (6_000_000 // len(line))          # past the first batches of 4 MB: the lines add up across them
    data = head + b"bad \xff here\n" + line * 10
    bad_line = head.count(b"\n") + 1
    proc = subprocess.run([sys.executable, "-m", "bpe_fast", "-q", "-j", processes, command[0], source,
                           *command[1:]], input=data, capture_output=True, cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.decode().splitlines() == [
        f"bpe-fast: {'<stdin>' if source == '-' else source}: invalid UTF-8 at byte offset {len(head) + 4} "
        f"(line {bad_line}): invalid start byte; pass --errors replace to substitute U+FFFD"]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", [["train", "--vocab-size", "300", "-o", "tok"], ["count", "-o", "c.npz"],
                                     ["encode", "-t", "t", "-o", "ids.npy"], ["encode", "-t", "t", "-o", "ids/"]])
def test_jsonl_and_parquet_errors_name_the_file_as_given_by_every_command(tmp_path, command):
    # encode named the file by its absolute path ("/tmp/.../d.jsonl:2: no field 'text'"), train and count as the
    # user typed it ("d.jsonl:2: ..."): each command now names it as given
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    (tmp_path / "c.txt").write_text("some text\n" * 50, encoding="utf-8")
    assert main(["-q", "train", str(tmp_path / "c.txt"), "--vocab-size", "260", "-o", str(tmp_path / "t")]) == 0
    (tmp_path / "d.jsonl").write_text('{"text": "hello"}\n{"body": "x"}\n', encoding="utf-8")
    pq.write_table(pa.table({"body": ["a", "b"]}), tmp_path / "p.parquet")
    before = sorted(p.name for p in tmp_path.iterdir())
    for name, message in (("d.jsonl", "d.jsonl:2: no field 'text' (fields: ['body'])"),
                          ("p.parquet", "p.parquet: no column 'text' (columns: ['body'])")):
        proc = subprocess.run([sys.executable, "-m", "bpe_fast", "-q", command[0], name, *command[1:]],
                              capture_output=True, text=True, cwd=tmp_path)
        assert proc.returncode == 1
        lines = proc.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"bpe-fast: {message}; choose one with "), proc.stderr
        shutil.rmtree(tmp_path / "ids", ignore_errors=True)    # (a folder encode keeps its index.json to resume)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_damaged_parquet_file_is_one_line_with_its_brackets_closed(tmp_path, capsys):
    # pyarrow's message for a damaged page is several lines: the CLI's first line left the bracket open
    # ("mid.parquet: corrupt Parquet file after 0 rows (Couldn't deserialize thrift: ...: Invalid data")
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    pq.write_table(pa.table({"text": ["abc " * 1000] * 50}), tmp_path / "ok.parquet")
    data = (tmp_path / "ok.parquet").read_bytes()
    (tmp_path / "mid.parquet").write_bytes(data[:4] + b"x" * 200 + data[204:])     # its first page header
    code, err = run(["count", str(tmp_path / "mid.parquet"), "-o", str(tmp_path / "c.npz")], capsys)
    assert code == 1
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"bpe-fast: {tmp_path / 'mid.parquet'}: corrupt Parquet file "
                                                   f"after 0 rows (") and lines[0].endswith(")"), err
    assert not (tmp_path / "c.npz").exists()
