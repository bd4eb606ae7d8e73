"""The command line, encode_file, and the interchange formats, checked with the real libraries."""
import io
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from bpe_fast import GPT4_PATTERN, Tokenizer, count_pretokens, encode_file, train_bpe
from bpe_fast.cli import _human_bytes, main
from bpe_fast.file_encoding import check_dtype
from bpe_fast.synthetic import generate, mixed_text

from corpora import EOT, FIXTURES


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    generate(path, 300_000, seed=5)
    return path


@pytest.fixture(scope="module")
def tokdir(tmp_path_factory, corpus):
    out = tmp_path_factory.mktemp("tok") / "tok"
    assert main(["-q", "train", str(corpus), "--vocab-size", "600", "--special-token", EOT,
                 "--processes", "2", "-o", str(out)]) == 0
    return out


def run(argv, capsys):
    """(exit code, stderr) of the command line run in this process."""
    code = main(argv)
    return code, capsys.readouterr().err


def test_train_writes_the_tokenizer_train_bpe_would(tokdir, corpus):
    tok = Tokenizer.load(tokdir)
    vocab, merges = train_bpe(corpus, 600, [EOT])
    assert list(tok.merges) == merges and dict(tok.vocab) == vocab
    assert list(tok.special_tokens) == [EOT]


def test_train_prints_progress_and_summary(tmp_path, corpus, capsys):
    code, err = run(["train", str(corpus), "--vocab-size", "400", "--pattern", "gpt4", "-o",
                     str(tmp_path / "t")], capsys)
    assert code == 0
    assert "pre-tokenized" in err and "merges" in err
    assert "trained in" in err and "longest tokens" in err and "bytes per token" in err
    assert Tokenizer.load(tmp_path / "t").pattern == GPT4_PATTERN


def test_train_with_o200k_pattern_equals_train_bpe(tmp_path, corpus, capsys):
    from bpe_fast.patterns import O200K_PATTERN

    code, _ = run(["train", str(corpus), "--vocab-size", "400", "--pattern", "o200k", "--special-token", EOT,
                   "-o", str(tmp_path / "t")], capsys)
    assert code == 0
    tok = Tokenizer.load(tmp_path / "t")
    assert tok.pattern == O200K_PATTERN
    assert list(tok.merges) == train_bpe(corpus, 400, [EOT], pattern=O200K_PATTERN)[1]


@pytest.mark.parametrize("processes", ["1", "2"])
def test_encode_equals_tokenizer_encode(tmp_path, tokdir, corpus, processes, capsys):
    out = tmp_path / "tokens.npy"
    code, err = run(["encode", "-t", str(tokdir), str(corpus), "-o", str(out), "--processes", processes], capsys)
    assert code == 0, err
    ids = np.load(out, mmap_mode="r")
    assert ids.dtype == np.uint16
    want = Tokenizer.load(tokdir).encode(corpus.read_text("utf-8"))
    assert ids.tolist() == want
    assert [p.name for p in tmp_path.iterdir()] == ["tokens.npy"]


@pytest.mark.parametrize("form", ["file", "stdin", "folder"])
def test_encode_ordinary_encodes_a_special_tokens_text_as_text(tmp_path, tokdir, capsys, monkeypatch, form):
    # by default a special token's text in the input is its id (CS336's encode); --ordinary encodes it as
    # text, as tiktoken's encode_ordinary does, on every way in (a file, stdin, shards into a folder)
    text = "one story" + EOT + "two <|endoftext stories " + EOT + EOT + "end\n"
    path = tmp_path / "in.txt"
    path.write_text(text, encoding="utf-8")
    tok = Tokenizer.load(tokdir)
    eot = tok.special_tokens[EOT]
    for ordinary, want in ((False, tok.encode(text)), (True, tok.encode_ordinary(text))):
        out = tmp_path / f"{form}-{ordinary}"
        if form == "stdin":
            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode("utf-8"))))
        source = "-" if form == "stdin" else str(path)
        target = str(out) + "/" if form == "folder" else str(out) + ".npy"
        code, err = run(["encode", "-t", str(tokdir), source, "-o", target] + ["--ordinary"] * ordinary, capsys)
        assert code == 0, err
        ids = np.load(out / "in.npy" if form == "folder" else target).tolist()
        assert ids == want
        assert (eot in ids) == (not ordinary)
    assert tok.decode(want) == text
    if form == "folder":    # a folder encoded one way is not resumed the other way
        code, err = run(["encode", "-t", str(tokdir), str(path), "-o", str(tmp_path / "folder-True") + "/"],
                        capsys)
        assert code != 0 and "another tokenizer" in err


def test_encode_uint32_and_decode_round_trip(tmp_path, tokdir, corpus, capsys):
    out = tmp_path / "tokens.npy"
    assert run(["encode", "-t", str(tokdir), str(corpus), "-o", str(out), "--dtype", "uint32"], capsys)[0] == 0
    assert np.load(out).dtype == np.uint32
    text = tmp_path / "back.txt"
    assert run(["decode", "-t", str(tokdir), str(out), "-o", str(text)], capsys)[0] == 0
    assert text.read_bytes() == corpus.read_bytes()


def test_encode_file_small_chunks_equal_whole(tmp_path, tokdir):
    text = mixed_text(50_000, seed=9) + EOT + " end  \r\n\r\n  "
    src = tmp_path / "in.txt"
    src.write_text(text, encoding="utf-8", newline="")
    tok = Tokenizer.load(tokdir)
    for processes, chunk in ((1, 100), (2, 777)):
        n = encode_file(tok, src, tmp_path / "o.npy", num_processes=processes, chunk_bytes=chunk)
        ids = np.load(tmp_path / "o.npy")
        assert n == len(ids) and ids.tolist() == tok.encode(text)


def test_encode_file_with_tiktokens_spelling_of_gpt2s_pattern_is_cut_at_spaces(tmp_path, tokdir):
    # R50K_PATTERN (get_encoding("gpt2"), r50k_base, p50k_base) gives GPT-2's pre-tokens, but was not taken for a
    # built-in pattern by the chunking: a file without special tokens was one range, read whole by one worker
    from bpe_fast.chunking import chunk_boundaries
    from bpe_fast.patterns import R50K_PATTERN
    text = mixed_text(50_000, seed=4) + " end  \r\n\r\n  "
    src = tmp_path / "in.txt"
    src.write_text(text, encoding="utf-8", newline="")
    trained = Tokenizer.load(tokdir)
    tok = Tokenizer(dict(trained.vocab), list(trained.merges), [EOT], pattern=R50K_PATTERN)
    assert len(chunk_boundaries(src, tok.special_tokens, tok.pattern, 1000)) > 20
    for processes, chunk in ((1, 100), (2, 1000)):
        n = encode_file(tok, src, tmp_path / "o.npy", num_processes=processes, chunk_bytes=chunk)
        ids = np.load(tmp_path / "o.npy")
        assert n == len(ids) and ids.tolist() == tok.encode(text)



@pytest.mark.parametrize("name", ["in.txt.gz", "in.jsonl"])
def test_encode_file_reads_what_is_not_plain_text_as_training_does(tmp_path, tokdir, name):
    # encode_file cut a .gz file's raw bytes into ranges and encoded them as text (with errors="replace", gzip's
    # bytes as U+FFFD and letters, silently); it then refused every kind but plain text; it reads each kind as
    # the other readers do (the extension says the kind)
    import gzip
    src = tmp_path / name
    src.write_bytes(gzip.compress(b"hello world") if name.endswith(".gz") else b'{"text": "hello world"}\n')
    tok = Tokenizer.load(tokdir)
    assert encode_file(tok, src, tmp_path / "o.npy", errors="replace") == len(tok.encode("hello world"))
    assert np.load(tmp_path / "o.npy").tolist() == tok.encode("hello world")


def test_human_bytes_of_a_rate_below_a_kilobyte():
    # encode's summary of a small file read slowly said "(732.1061316561245 B/s)": a rate is a float, and bytes
    # were written as given
    assert _human_bytes(732.1061316561245) == "732 B" and _human_bytes(30) == "30 B"
    assert _human_bytes(1500) == "1.5 KB"


def test_uint16_with_a_larger_vocab_is_an_error():
    with pytest.raises(ValueError, match="does not fit in uint16"):
        check_dtype("uint16", 70_000)
    assert check_dtype(None, 70_000) == np.uint32 and check_dtype(None, 65_536) == np.uint16


def test_synth_and_count_commands(tmp_path, capsys):
    corpus = tmp_path / "c.txt"
    assert run(["synth", "--size", "200KB", "-o", str(corpus)], capsys)[0] == 0
    assert corpus.stat().st_size == 200_000
    counts = tmp_path / "c.npz"
    assert run(["count", str(corpus), "--special-token", EOT, "-o", str(counts)], capsys)[0] == 0
    assert run(["train", "--from-counts", str(counts), "--vocab-size", "500", "-o", str(tmp_path / "t")],
               capsys)[0] == 0
    vocab, merges = train_bpe(corpus, 500, [EOT])
    assert list(Tokenizer.load(tmp_path / "t").merges) == merges


def test_train_from_count_shards_equals_the_whole(tmp_path, capsys):
    parts = []
    for seed in (1, 2):
        corpus = tmp_path / f"c{seed}.txt"
        assert run(["synth", "--size", "100KB", "--seed", str(seed), "-o", str(corpus)], capsys)[0] == 0
        parts.append(corpus)
        assert run(["count", str(corpus), "--special-token", EOT, "-o", str(corpus.with_suffix(".npz"))],
                   capsys)[0] == 0
    shards = [str(p.with_suffix(".npz")) for p in parts]
    assert run(["train", "--from-counts", *shards, "--vocab-size", "400", "-o", str(tmp_path / "t")], capsys)[0] == 0
    joined = tmp_path / "joined.txt"
    joined.write_bytes(parts[0].read_bytes() + EOT.encode() + parts[1].read_bytes())
    assert list(Tokenizer.load(tmp_path / "t").merges) == train_bpe(joined, 400, [EOT])[1]


def test_train_refuses_a_foreign_count_shard(tmp_path, capsys):
    corpus = tmp_path / "c.txt"
    assert run(["synth", "--size", "50KB", "-o", str(corpus)], capsys)[0] == 0
    good, other = tmp_path / "good.npz", tmp_path / "other.npz"
    assert run(["count", str(corpus), "--special-token", EOT, "-o", str(good)], capsys)[0] == 0
    assert run(["count", str(corpus), "--special-token", EOT, "--pattern", "gpt4", "-o", str(other)], capsys)[0] == 0
    code, err = run(["train", "--from-counts", str(good), str(other), "--vocab-size", "300",
                     "-o", str(tmp_path / "t")], capsys)
    assert code == 1 and "other.npz" in err and "patterns" in err and not (tmp_path / "t").exists()
    code, err = run(["train", str(corpus), "--from-counts", str(good), "--vocab-size", "300",
                     "-o", str(tmp_path / "t")], capsys)
    assert code == 1 and "not both" in err


def test_train_from_counts_of_other_special_tokens_or_pattern_names_the_counts_file(tmp_path, capsys):
    # train_from_counts refused them, and the one line named no file: "the counts were made with special tokens
    # [...], not [...]" (and, continuing, "... with the pattern ..., but the initial tokenizer's pattern ...")
    corpus = tmp_path / "c.txt"
    assert run(["synth", "--size", "50KB", "-o", str(corpus)], capsys)[0] == 0
    counts = tmp_path / "c.npz"
    assert run(["count", str(corpus), "--special-token", EOT, "-o", str(counts)], capsys)[0] == 0
    made = rf"^bpe-fast: {re.escape(str(counts))}: the counts were made with special tokens \['<\|endoftext\|>'\], not "
    code, err = run(["train", "--from-counts", str(counts), "--special-token", "<|x|>", "--vocab-size", "300",
                     "-o", str(tmp_path / "t")], capsys)
    assert code == 1 and re.search(made + r"\['<\|x\|>'\] \(--special-token\)", err, re.M), err
    other, gpt4 = tmp_path / "other-specials", tmp_path / "gpt4"
    Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|z|>"]).save(other)
    code, err = run(["train", "--from-counts", str(counts), "--continue-from", str(other), "--vocab-size", "300",
                     "-o", str(tmp_path / "t")], capsys)
    assert code == 1 and re.search(made + rf"\['<\|z\|>'\] \(the special tokens of {re.escape(str(other))}\)",
                                   err, re.M), err
    Tokenizer({i: bytes([i]) for i in range(256)}, [], [EOT], pattern="gpt4").save(gpt4)
    code, err = run(["train", "--from-counts", str(counts), "--continue-from", str(gpt4), "--vocab-size", "300",
                     "-o", str(tmp_path / "t")], capsys)
    assert code == 1 and re.search(rf"^bpe-fast: {re.escape(str(counts))}: the counts were made with the pattern "
                                   rf".*, but the pattern of {re.escape(str(gpt4))} is ", err, re.M), err
    assert not (tmp_path / "t").exists()
    Tokenizer({i: bytes([i]) for i in range(256)}, [], [EOT]).save(tmp_path / "same")
    assert run(["train", "--from-counts", str(counts), "--continue-from", str(tmp_path / "same"),
                "--vocab-size", "300", "-o", str(tmp_path / "t")], capsys)[0] == 0


def test_train_from_counts_too_large_names_the_counts_files(tmp_path, capsys):
    # the engine's "the counts are too large" (pair counts past int64) and the merge's overflow named no file
    from bpe_fast import PretokenCounts
    big, one = tmp_path / "big.npz", tmp_path / "one.npz"
    PretokenCounts({b" the": 2 ** 62, b" them": 2 ** 62}).save(big)
    PretokenCounts({b" the": 2 ** 62}).save(one)
    code, err = run(["train", "--from-counts", str(big), "--vocab-size", "300", "-o", str(tmp_path / "t")], capsys)
    assert code == 1 and re.search(rf"^bpe-fast: {re.escape(str(big))}: the counts are too large", err, re.M), err
    code, err = run(["train", "--from-counts", str(one), str(one), "--vocab-size", "300", "-o", str(tmp_path / "t")],
                    capsys)
    assert code == 1 and re.search(rf"^bpe-fast: {re.escape(str(one))}, {re.escape(str(one))}: the counts of "
                                   rf"b' the' add up to more than int64 holds", err, re.M), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.npz", "one.npz"]


# ---- bad input: one line on stderr, a non-zero exit, no traceback, no output left behind --------

def _assert_clean_failure(code, err, tmp_path, keep=()):
    assert code == 1
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    # progress lines may come first; the error is one line, the last
    assert lines and lines[-1].startswith("bpe-fast: "), err
    assert sum(line.startswith("bpe-fast: ") for line in lines) == 1, err
    left = sorted(p.name for p in tmp_path.iterdir() if p.name not in keep)
    assert left == [], left


def test_missing_tokenizer_dir(tmp_path, corpus, capsys):
    code, err = run(["encode", "-t", str(tmp_path / "nope"), str(corpus), "-o", str(tmp_path / "o.npy")], capsys)
    _assert_clean_failure(code, err, tmp_path)
    assert "nope" in err


def test_a_tokenizer_dir_under_one_that_may_not_be_searched_is_not_called_missing(tmp_path, tokdir, corpus, capsys,
                                                                                 unsearchable):
    # "-t DIR: no such tokenizer directory (nor one of tiktoken's encodings ...)" for a folder that is there
    import shutil

    shutil.copytree(tokdir, tmp_path / "outer" / "tok")
    unsearchable(tmp_path / "outer")
    code, err = run(["encode", "-t", str(tmp_path / "outer" / "tok"), str(corpus), "-o", str(tmp_path / "o.npy")],
                    capsys)
    assert code == 1 and not (tmp_path / "o.npy").exists()
    assert err == (f"bpe-fast: -t: {tmp_path / 'outer' / 'tok'}: Permission denied (a folder on the way may not be "
                   f"looked into)\n")


@pytest.mark.parametrize("argv, message", [
    # (usage errors no test reached, found by coverage) each names what is wrong, before anything is read
    ("train a.txt - --vocab-size 300 -o t/", "'-' (stdin) must be the only CORPUS"),
    ("train --vocab-size 300 -o t/", "give a CORPUS or --from-counts"),
    ("encode -t TOK a.txt - -o out/", "'-' (stdin) must be the only INPUT"),
    ("encode -t TOK a.txt a.txt.gz -o -", "-o -: several inputs are encoded into a folder, not to stdout"),
    ("encode -t TOK - -o out/", "-o out/: '-' (stdin) is encoded to a .npy file or to stdout (-o -), not into a "
                                "folder"),
    ("encode -t TOK a.txt -o x.npy --dask-scheduler tcp://127.0.0.1:9", "--dask-scheduler encodes shards into a "
                                                                         "folder: give -o DIR/"),
    ("encode -t TOK two -o x.npy", "two: holds 2 files; give -o DIR/ to encode them into a folder"),
    ("encode -t TOK a.txt.gz -o -", "-o -: only a plain text file (or stdin) is encoded to stdout; a.txt.gz is "
                                    "not one"),
    ("export -t TOK --hf-dir hfd --eos-token <|nope|>", "--eos-token '<|nope|>': not one of the special tokens of "
                                                        "TOK (['<|endoftext|>'])"),
])
def test_usage_errors_name_what_is_wrong(tmp_path, tokdir, capsys, monkeypatch, argv, message):
    import gzip
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.txt").write_text("hello there\n", encoding="utf-8")
    (tmp_path / "a.txt.gz").write_bytes(gzip.compress(b"hello there\n"))
    (tmp_path / "two").mkdir()
    for name in ("x.txt", "y.txt"):
        (tmp_path / "two" / name).write_text("hello\n", encoding="utf-8")
    before = sorted(p.name for p in tmp_path.iterdir())
    code, err = run([str(tokdir) if arg == "TOK" else arg for arg in argv.split()], capsys)
    assert (code, err) == (1, f"bpe-fast: {message.replace('TOK', str(tokdir))}\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_malformed_tokenizer_dir(tmp_path, corpus, capsys):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "vocab.json").write_text('{"a": 0,', encoding="utf-8")
    (bad / "merges.txt").write_text("", encoding="utf-8")
    code, err = run(["encode", "-t", str(bad), str(corpus), "-o", str(tmp_path / "o.npy")], capsys)
    _assert_clean_failure(code, err, tmp_path, keep=("bad",))
    assert "vocab.json" in err


def test_unknown_pattern_name(tmp_path, corpus, capsys):
    code, err = run(["train", str(corpus), "--vocab-size", "300", "--pattern", "gpt5", "-o",
                     str(tmp_path / "t")], capsys)
    _assert_clean_failure(code, err, tmp_path)
    assert "--pattern: unknown pattern name 'gpt5'" in err


def test_the_summary_cuts_long_tokens_short(tmp_path, capsys):
    corpus = tmp_path / "a.txt"
    corpus.write_bytes(b"a" * 5000)
    code, err = run(["train", str(corpus), "--vocab-size", "300", "-o", str(tmp_path / "t")], capsys)
    assert code == 0 and "warning: no pairs left" in err
    longest = next(line for line in err.splitlines() if line.startswith("longest tokens: "))
    assert longest.startswith("longest tokens: '" + "a" * 40 + "'... (5,000 bytes), '" + "a" * 40 + "'... (")
    assert len(longest) < 400


@pytest.mark.parametrize("command", ["count", "train", "encode"])
def test_an_output_name_too_long_is_refused_before_the_work(tmp_path, tokdir, corpus, capsys, command):
    # the work was done, then the output could not be made: 'File name too long', naming no flag
    long = str(tmp_path / ("a" * 300))
    argv = {"count": ["count", str(corpus), "-o", long + ".npz"],
            "train": ["train", str(corpus), "--vocab-size", "300", "-o", long + "/tok"],
            "encode": ["encode", "-t", str(tokdir), str(corpus), "-o", long + ".npy"]}[command]
    code, err = run(argv, capsys)
    _assert_clean_failure(code, err, tmp_path)
    assert err.splitlines()[-1].startswith(f"bpe-fast: -o {argv[-1]}: the name is too long (30")
    assert "pre-tokenized" not in err           # refused before counting


def test_an_output_through_a_link_to_what_does_not_exist_yet(tmp_path, corpus, capsys):
    # a link to a folder still to be made is written through (trained, then 'File exists' before); a link into
    # a missing folder is refused before the work, as that folder given itself is
    (tmp_path / "tok").symlink_to("made/tok")
    code, err = run(["-q", "train", str(corpus), "--vocab-size", "300", "-o", str(tmp_path / "tok")], capsys)
    assert code == 0, err
    assert Tokenizer.load(tmp_path / "made" / "tok").vocab_size == 300 and (tmp_path / "tok").is_symlink()
    (tmp_path / "c.npz").symlink_to("nowhere/c.npz")
    code, err = run(["count", str(corpus), "-o", str(tmp_path / "c.npz")], capsys)
    assert code == 1 and err == f"bpe-fast: -o {tmp_path / 'c.npz'}: the folder {tmp_path / 'nowhere'} does not exist\n"


def test_output_in_a_missing_folder(tmp_path, tokdir, corpus, capsys):
    code, err = run(["encode", "-t", str(tokdir), str(corpus), "-o", str(tmp_path / "no" / "o.npy")], capsys)
    _assert_clean_failure(code, err, tmp_path)
    # train makes the folders its output needs, as Tokenizer.save does (test_cli_inputs)


def test_tokens_file_of_the_wrong_dtype(tmp_path, tokdir, capsys):
    np.save(tmp_path / "f.npy", np.zeros(5, dtype=np.float32))
    code, err = run(["decode", "-t", str(tokdir), str(tmp_path / "f.npy"), "-o", str(tmp_path / "o.txt")], capsys)
    _assert_clean_failure(code, err, tmp_path, keep=("f.npy",))
    assert "float32" in err


@pytest.mark.parametrize("damage", ["header", "data"])
def test_a_damaged_tokens_file_is_named(tmp_path, tokdir, capsys, damage):
    # a header whose brackets do not close (numpy's tokenize.TokenError) was a traceback; data shorter than the
    # header says was "mmap length is greater than file size", naming neither the file nor what is wrong
    np.save(tmp_path / "ids.npy", np.arange(100, dtype=np.uint16))
    data = (tmp_path / "ids.npy").read_bytes()
    (tmp_path / "ids.npy").write_bytes(data.replace(b"}", b" ", 1) if damage == "header" else data[:-10])
    code, err = run(["decode", "-t", str(tokdir), str(tmp_path / "ids.npy"), "-o", str(tmp_path / "o.txt")], capsys)
    _assert_clean_failure(code, err, tmp_path, keep=("ids.npy",))
    assert f"{tmp_path / 'ids.npy'}: " in err
    assert ("damaged .npy header" if damage == "header" else "truncated") in err


_OVERWRITING = {      # a command whose output is one of its inputs: (argv, the input named); TOK is a tokenizer folder
    "encode": (["encode", "-t", "TOK", "c.txt", "-o", "c.txt"], "c.txt"),
    "encode through a link": (["encode", "-t", "TOK", "c.txt", "-o", "link.npy"], "c.txt"),
    "encode a compressed file": (["encode", "-t", "TOK", "c.txt.gz", "-o", "c.txt.gz"], "c.txt.gz"),
    "encode into the tokenizer": (["encode", "-t", "hf/tokenizer.json", "c.txt", "-o", "hf/tokenizer.json"],
                                  "hf/tokenizer.json"),
    "count": (["count", "c.txt", "-o", "c.txt"], "c.txt"),
    "count a folder": (["count", "texts", "-o", "texts/d.txt"], "texts/d.txt"),
    "decode": (["decode", "-t", "TOK", "ids.npy", "-o", "ids.npy"], "ids.npy"),
    "export": (["export", "-t", "TOK", "--hf", "TOK/vocab.json"], "TOK/vocab.json"),
    "export through a link": (["export", "-t", "TOK", "--tiktoken", "link.tiktoken"], "TOK/merges.txt"),
    "export a folder": (["export", "-t", "hf/tokenizer.json", "--hf-dir", "hf"], "hf/tokenizer.json"),
    "show": (["show", "-t", "TOK", "-f", "c.txt", "--html", "c.txt"], "c.txt"),
    "report": (["report", "-t", "TOK", "--eval", "c.txt", "-o", "TOK/bpe_fast.json"], "TOK/bpe_fast.json"),
    # --eval's folders and globs were taken as given: the page replaced an evaluation file (review helper-140)
    "report a folder": (["report", "-t", "TOK", "--eval", "texts", "-o", "texts/d.txt"], "texts/d.txt"),
    "report a glob": (["report", "-t", "TOK", "--eval", "texts/*.txt", "-o", "texts/d.txt"], "texts/d.txt"),
    # -t naming a folder export --hf-dir wrote: its tokenizer.json, the file read, was not an input (helper-140)
    "encode into the folder's tokenizer": (["encode", "-t", "hf", "c.txt", "-o", "hf/tokenizer.json"],
                                           "hf/tokenizer.json"),
    "decode into the folder's tokenizer": (["decode", "-t", "hf", "ids.npy", "-o", "hf/tokenizer.json"],
                                           "hf/tokenizer.json"),
    "show into the folder's tokenizer": (["show", "-t", "hf", "-f", "c.txt", "--html", "hf/tokenizer.json"],
                                         "hf/tokenizer.json"),
    # train wrote its folder's files over a corpus of those names, after training on it (found by training on
    # DIR/merges.txt with -o DIR); a folder's bpe_fast.npz, a cache a small tokenizer does not write, it removed
    "train": (["train", "texts/merges.txt", "--vocab-size", "300", "-o", "texts"], "texts/merges.txt"),
    "train a folder": (["train", "texts", "--vocab-size", "300", "-o", "texts/"], "texts/vocab.json"),
    "train a glob": (["train", "texts/*.npz", "--vocab-size", "300", "-o", "texts"], "texts/bpe_fast.npz"),
    "train from counts": (["train", "--from-counts", "texts/bpe_fast.json", "--vocab-size", "300", "-o", "texts"],
                          "texts/bpe_fast.json"),
}


@pytest.mark.parametrize("case", list(_OVERWRITING))
def test_an_output_that_is_an_input_is_refused(tmp_path, tokdir, corpus, capsys, monkeypatch, case):
    # encode_files refuses this; the single-file commands replaced their input with their output (the corpus
    # with its token array, the tokenizer with its export)
    import gzip
    import shutil
    monkeypatch.chdir(tmp_path)
    text = corpus.read_bytes()[:20_000]
    (tmp_path / "c.txt").write_bytes(text)
    (tmp_path / "c.txt.gz").write_bytes(gzip.compress(text))
    (tmp_path / "texts").mkdir()
    (tmp_path / "texts" / "d.txt").write_bytes(text)
    if case.startswith("train"):
        for name in ("merges.txt", "vocab.json", "bpe_fast.npz"):
            (tmp_path / "texts" / name).write_bytes(text)
        count_pretokens(tmp_path / "c.txt").save(tmp_path / "texts" / "counts.npz")
        os.rename(tmp_path / "texts" / "counts.npz", tmp_path / "texts" / "bpe_fast.json")
    shutil.copytree(tokdir, tmp_path / "tok")
    tok = Tokenizer.load(tokdir)
    (tmp_path / "hf").mkdir()
    tok.export_hf(tmp_path / "hf" / "tokenizer.json")
    np.save(tmp_path / "ids.npy", np.array(tok.encode(text.decode()), dtype=np.uint16))
    (tmp_path / "link.npy").symlink_to(tmp_path / "c.txt")
    (tmp_path / "link.tiktoken").symlink_to(tmp_path / "tok" / "merges.txt")
    files = sorted(p for p in tmp_path.rglob("*") if p.is_file())
    before = {p: p.read_bytes() for p in files}
    argv, named = _OVERWRITING[case]
    code, err = run([a.replace("TOK", "tok") for a in argv], capsys)
    assert code == 1 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert f"bpe-fast: {named.replace('TOK', 'tok')} is an input and would be overwritten by the output" in err
    assert sorted(p for p in tmp_path.rglob("*") if p.is_file()) == files        # nothing written, nothing left
    assert {p: p.read_bytes() for p in files} == before


def test_an_output_hard_linked_to_an_input_is_written_and_the_input_kept(tmp_path, tokdir, corpus, capsys):
    """The output's own directory entry is replaced (written to a temporary file and renamed), so a hard link
    to the input leaves the input as it was: no refusal (a check by inode refused it, saying the input would be
    overwritten)."""
    text = corpus.read_bytes()[:20_000]
    (tmp_path / "c.txt").write_bytes(text)
    os.link(tmp_path / "c.txt", tmp_path / "out.npy")
    code, err = run(["encode", "-t", str(tokdir), str(tmp_path / "c.txt"), "-o", str(tmp_path / "out.npy")], capsys)
    assert code == 0, err
    assert (tmp_path / "c.txt").read_bytes() == text
    assert np.load(tmp_path / "out.npy").tolist() == Tokenizer.load(tokdir).encode(text.decode())


def test_missing_corpus(tmp_path, capsys):
    code, err = run(["train", str(tmp_path / "none.txt"), "--vocab-size", "300", "-o", str(tmp_path / "t")],
                    capsys)
    _assert_clean_failure(code, err, tmp_path)
    assert "none.txt" in err


def test_invalid_utf8_corpus_names_offset(tmp_path, tokdir, capsys):
    src = tmp_path / "bad.txt"
    src.write_bytes(b"hello world\n" * 10 + b"\xff oops\n")
    code, err = run(["encode", "-t", str(tokdir), str(src), "-o", str(tmp_path / "o.npy")], capsys)
    _assert_clean_failure(code, err, tmp_path, keep=("bad.txt",))
    assert "byte offset 120" in err and "line 11" in err


def test_python_dash_m_entry_point(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "bpe_fast", "synth", "--size", "nonsense", "-o",
                           str(tmp_path / "x")], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr and "nonsense" in proc.stderr


@pytest.mark.parametrize("args, flag", [(["--size", "nonsense"], "--size"),
                                        (["--size", "1KB", "--seed", "-1"], "--seed"),
                                        (["--size", "1KB", "--style", "web", "--seed", str(2 ** 64)], "--seed")])
def test_synth_errors_name_the_flag(tmp_path, args, flag, capsys):
    # "seed must be a non-negative int, got -1" named the library's argument, not the flag (the CLI review);
    # a web-style seed of 2**64 or more was a traceback (OverflowError: the seed is a uint64 there)
    code, err = run(["synth", *args, "-o", str(tmp_path / "x.txt")], capsys)
    assert code != 0 and f"bpe-fast: {flag}: " in err and not (tmp_path / "x.txt").exists()


def test_an_interrupted_folder_encode_says_its_shards_stay(tmp_path, tokdir, corpus, monkeypatch, capsys):
    # "interrupted; no output written" was said of folder encodes too, whose finished shards stay for resuming
    import bpe_fast.cli as cli

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_encode_shards", interrupted)
    code, err = run(["-q", "encode", "-t", str(tokdir), str(corpus), str(corpus), "-o", str(tmp_path / "out") + "/"],
                    capsys)
    assert code == 130 and f"interrupted; the shards finished stay in {tmp_path / 'out'}/" in err
    monkeypatch.setattr(cli, "_encode_one", interrupted)
    code, err = run(["-q", "encode", "-t", str(tokdir), str(corpus), "-o", str(tmp_path / "x.npy")], capsys)
    assert code == 130 and "interrupted; no output written" in err


def test_stopped_after_the_tokenizer_was_saved_says_it_was(tmp_path, corpus, monkeypatch, capsys):
    # a signal during train's summary (which encodes a sample of the corpus) said "no output written" of a
    # tokenizer saved already
    import bpe_fast.cli as cli

    def stopped(*args, **kwargs):
        raise cli.Terminated

    monkeypatch.setattr(cli, "_summary", stopped)
    out = tmp_path / "tok"
    code, err = run(["train", str(corpus), "--vocab-size", "300", "-o", str(out)], capsys)
    assert code == 143 and f"terminated; the tokenizer was saved to {out} before" in err, err
    assert (out / "merges.txt").exists() and "no output written" not in err


@pytest.mark.parametrize("argv", [
    ["train", "CORPUS", "--vocab-size", "300", "-o", "/proc/bpe-fast-tok"],
    ["count", "CORPUS", "-o", "/proc/counts.npz"],
    ["encode", "-t", "TOK", "CORPUS", "-o", "/proc/ids.npy"],
    ["report", "-t", "TOK", "--eval", "CORPUS", "-o", "REPORT", "--png", "/proc/bpe-fast-charts"],
])
def test_an_output_where_nothing_can_be_made_is_refused_before_the_work(tmp_path, corpus, tokdir, argv,
                                                                         monkeypatch, capsys):
    # /proc is a folder that even root (to whom os.access says yes) can make nothing in: the output's temporary
    # file (or the charts' folder) failed only after the work, naming no flag
    if not os.path.isdir("/proc") or os.path.exists("/proc/bpe-fast-tok"):
        pytest.skip("needs Linux's /proc")
    import bpe_fast.cli as cli
    import bpe_fast.counts as counts_module

    def work(*args, **kwargs):
        raise AssertionError("the work started")

    for module, name in ((cli, "train_bpe"), (counts_module, "count_pretokens"), (cli, "_encode_one")):
        monkeypatch.setattr(module, name, work, raising=False)
    monkeypatch.setattr("bpe_fast.train.train_bpe", work)
    monkeypatch.setattr("bpe_fast.html_report.write_report", work)
    names = {"CORPUS": str(corpus), "TOK": str(tokdir), "REPORT": str(tmp_path / "r.html")}
    code, err = run(["-q", *[names.get(a, a) for a in argv]], capsys)
    flag = "--png" if "--png" in argv else "-o"
    assert code == 1 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"bpe-fast: {flag} /proc/") and "cannot make anything in /proc" in err, err


# ---- interchange with the real libraries --------------------------------------------------------

@pytest.mark.parametrize("pattern", ["gpt2", "gpt4"])
def test_export_hf_gives_the_same_ids(tmp_path, corpus, pattern, capsys):
    tokenizers = pytest.importorskip("tokenizers", reason="HF tokenizers is not installed")
    tokdir = tmp_path / "t"
    assert run(["-q", "train", str(corpus), "--vocab-size", "700", "--special-token", EOT, "--special-token",
                "<|pad|>", "--pattern", pattern, "-o", str(tokdir)], capsys)[0] == 0
    assert run(["export", "-t", str(tokdir), "--hf", str(tmp_path / "tokenizer.json")], capsys)[0] == 0
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    ours = Tokenizer.load(tokdir)
    text = mixed_text(100_000, seed=12) + f"{EOT}x<|pad|>{EOT}{EOT} 1234567  \r\n\r\n  'S 'll  "
    assert hf.encode(text).ids == ours.encode(text)
    assert hf.decode(ours.encode(text), skip_special_tokens=False) == text


def test_t_takes_the_folder_export_hf_dir_writes(tmp_path, tokdir, capsys):
    # 'show -t DIR' of a folder export --hf-dir wrote said it had no vocab.json and to use Tokenizer.from_hf (the
    # Python API) where -t DIR/tokenizer.json worked; found by helper-114's README audit
    pytest.importorskip("tokenizers", reason="HF tokenizers is not installed")
    assert run(["-q", "export", "-t", str(tokdir), "--hf-dir", str(tmp_path / "hfd")], capsys)[0] == 0
    assert not (tmp_path / "hfd" / "vocab.json").exists()
    text = "Once upon a time, 1234 \u00e9t\u00e9s"
    shown = []
    for given in (tokdir, tmp_path / "hfd", tmp_path / "hfd" / "tokenizer.json"):
        assert main(["show", "-t", str(given), text]) == 0
        shown.append(capsys.readouterr().out)
    assert shown[0] == shown[1] == shown[2] != ""
    # transformers' save_pretrained writes vocab.json and merges.txt beside tokenizer.json: read as GPT-2's files
    # they gave GPT-2's pattern and no special tokens (<|endoftext|> cut into pieces); helper-116
    for name in ("vocab.json", "merges.txt"):
        (tmp_path / "hfd" / name).write_bytes((tokdir / name).read_bytes())
    special = f"a{EOT}b"
    assert main(["show", "-t", str(tmp_path / "hfd"), special]) == 0
    assert main(["show", "-t", str(tokdir), special]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:len(out) // 2] == out[len(out) // 2:] and f"[{EOT}]" in out[0], out


@pytest.mark.parametrize("name", ["vocab.json", "merges.txt", "bpe_fast.json", "notes.txt"])
def test_t_of_a_file_that_is_no_tokenizer_json_says_what_t_takes(tmp_path, tokdir, name, capsys):
    given = tokdir / name if name != "notes.txt" else tmp_path / name
    if name == "notes.txt":
        given.write_text("hello")
    code, err = run(["show", "-t", str(given), "hi"], capsys)
    assert code != 0
    assert f"bpe-fast: -t {given}: a file that is no tokenizer.json; -t takes a folder Tokenizer.save" in err, err
    assert "Tokenizer.from" not in err      # no Python call for a command-line user


@pytest.mark.parametrize("pattern", ["gpt2", "gpt4"])
def test_export_tiktoken_gives_the_same_ids(tmp_path, corpus, pattern, capsys):
    tiktoken = pytest.importorskip("tiktoken", reason="tiktoken is not installed")
    from tiktoken.load import load_tiktoken_bpe
    tokdir = tmp_path / "t"
    assert run(["-q", "train", str(corpus), "--vocab-size", "700", "--special-token", EOT, "--pattern",
                pattern, "-o", str(tokdir)], capsys)[0] == 0
    assert run(["export", "-t", str(tokdir), "--tiktoken", str(tmp_path / "t.tiktoken")], capsys)[0] == 0
    ours = Tokenizer.load(tokdir)
    enc = tiktoken.Encoding("exported", pat_str=ours.pattern,
                            mergeable_ranks=load_tiktoken_bpe(str(tmp_path / "t.tiktoken")),
                            special_tokens={EOT: ours.encode(EOT)[0]})
    text = mixed_text(100_000, seed=13) + f"{EOT} tail {EOT}{EOT}   "
    assert enc.encode(text, allowed_special="all") == ours.encode(text)


def test_gpt2_files_load_and_export_to_hf(gpt2, tmp_path):
    tokenizers = pytest.importorskip("tokenizers", reason="HF tokenizers is not installed")
    assert gpt2.vocab_size == 50257
    gpt2.export_hf(tmp_path / "tokenizer.json")
    doc = json.loads((tmp_path / "tokenizer.json").read_text("utf-8"))
    assert doc["model"]["vocab"]["Ġthe"] == gpt2.encode(" the")[0]
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    text = (FIXTURES / "german.txt").read_text("utf-8") + EOT + (FIXTURES / "address.txt").read_text("utf-8")
    assert hf.encode(text).ids == gpt2.encode(text)


@pytest.mark.parametrize("form", ["folder", "glob"])
def test_encode_one_text_file_named_by_a_folder_or_glob(tmp_path, tokdir, capsys, form):
    # INPUT may be a folder or a glob: one that names a single text file is encoded into the one .npy, as
    # with -o - (found by trying `encode -t tok FOLDER -o x.npy`: "corpus path is a directory")
    folder = tmp_path / "in"
    folder.mkdir()
    text = "Once upon a time " * 50 + EOT + " the end\n"
    (folder / "doc.txt").write_text(text, encoding="utf-8")
    given = str(folder) if form == "folder" else str(folder / "d*.txt")
    out = tmp_path / "tokens.npy"
    code, err = run(["encode", "-t", str(tokdir), given, "-o", str(out)], capsys)
    assert code == 0, err
    assert np.load(out).tolist() == Tokenizer.load(tokdir).encode(text)
    assert f"from {len(text.encode())} B" in err


def test_encode_of_one_jsonl_file_writes_through_a_link_and_into_a_pipe(tmp_path, tokdir, capsys):
    # an output that is a symbolic link is written through and one that is not a regular file is written to
    # (README): the .npy of a JSON lines (or compressed, Parquet) input replaced the link, and the named pipe,
    # by a regular file (as root, -o /dev/null would have replaced /dev/null). Found by trying -o LINK.
    import io
    import stat
    import threading

    docs = ["Once upon a time", "there was a cat " + EOT, "the end"]
    src = tmp_path / "docs.jsonl"
    src.write_text("".join(json.dumps({"text": d}) + "\n" for d in docs), encoding="utf-8")
    tok = Tokenizer.load(tokdir)
    want = [i for d in docs for i in tok.encode(d)]
    (tmp_path / "disk").mkdir()
    real = tmp_path / "disk" / "tokens.npy"
    real.write_bytes(b"old")
    link = tmp_path / "tokens.npy"
    link.symlink_to(real)
    code, err = run(["-q", "encode", "-t", str(tokdir), str(src), "-o", str(link)], capsys)
    assert code == 0, err
    assert link.is_symlink() and np.load(real).tolist() == want
    assert sorted(os.listdir(tmp_path / "disk")) == ["tokens.npy"]

    fifo = tmp_path / "pipe.npy"
    os.mkfifo(fifo)
    got = []

    def read():
        with open(fifo, "rb") as f:
            got.append(f.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    code, err = run(["-q", "encode", "-t", str(tokdir), str(src), "-o", str(fifo)], capsys)
    reader.join(10)
    assert code == 0, err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert np.load(io.BytesIO(got[0])).tolist() == want
    assert sorted(os.listdir(tmp_path)) == ["disk", "docs.jsonl", "pipe.npy", "tokens.npy"]
    # -o /dev/stdout when stdout is a pipe: its real path, /proc/PID/fd/pipe:[N], was taken for a regular file
    # to come, and the temporary folder made beside it ("No such file or directory"; helper-147)
    proc = subprocess.run([sys.executable, "-m", "bpe_fast", "-q", "encode", "-t", str(tokdir), str(src), "-o",
                           "/dev/stdout"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert np.load(io.BytesIO(proc.stdout)).tolist() == want


def test_train_into_a_folder_on_another_file_system(tmp_path, corpus, capsys, monkeypatch):
    # -o DIR that is a mount point (or a link to a folder on another disk): the tokenizer was saved into a
    # temporary folder beside DIR and its files renamed into DIR, which fails across file systems ("Invalid
    # cross-device link"), after the training. Found by trying -o a link into /dev/shm. Here renames between
    # two folders are refused, as between two file systems.
    import errno

    replace = os.replace

    def same_folder_only(src, dst):
        if os.path.dirname(os.path.realpath(src)) != os.path.dirname(os.path.realpath(dst)):
            raise OSError(errno.EXDEV, "Invalid cross-device link", src, None, dst)
        return replace(src, dst)

    monkeypatch.setattr(os, "replace", same_folder_only)
    out = tmp_path / "mounted"
    out.mkdir()
    code, err = run(["-q", "train", str(corpus), "--vocab-size", "300", "-o", str(out)], capsys)
    assert code == 0, err
    assert list(Tokenizer.load(out).merges) == train_bpe(corpus, 300)[1]
    assert sorted(os.listdir(tmp_path)) == ["mounted"]


@pytest.mark.parametrize("bad", [-1, 600])
def test_decode_of_an_id_outside_the_vocabulary_names_the_tokens_file(tmp_path, tokdir, capsys, bad):
    # was "bpe-fast: unknown token id 600 (at position 2)", naming no file (found by decoding ids of another
    # tokenizer); the vocabulary has 600 ids, 0..599
    np.save(tmp_path / "ids.npy", np.array([5, 7, bad, 9], dtype=np.int32))
    code, err = run(["decode", "-t", str(tokdir), str(tmp_path / "ids.npy"), "-o", str(tmp_path / "o.txt")], capsys)
    _assert_clean_failure(code, err, tmp_path, keep=("ids.npy",))
    assert "ids.npy: " in err and f"token id {bad} (at position 2)" in err


def test_decode_of_a_uint64_id_beyond_int64_names_its_position(tmp_path, tokdir, capsys):
    # ids past 2**63 - 1 in a uint64 array were "unknown token id N" for the largest, at no position, where any
    # other bad id is named with its position: the first such id is named now, as the others are
    bad = 2**63 + 5
    np.save(tmp_path / "ids.npy", np.array([5, 7, bad, 9, 2**64 - 1], dtype=np.uint64))
    code, err = run(["decode", "-t", str(tokdir), str(tmp_path / "ids.npy"), "-o", str(tmp_path / "o.txt")], capsys)
    _assert_clean_failure(code, err, tmp_path, keep=("ids.npy",))
    assert err.splitlines() == [f"bpe-fast: {tmp_path / 'ids.npy'}: unknown token id {bad} (at position 2)"]


@pytest.mark.parametrize("name, content, what", [
    ("empty.npy", b"", "empty"),
    ("counts.npz", None, "an .npz archive; decode reads one token array, the .npy file encode writes"),
    ("corpus.txt", b"Once upon a time\n", "it does not start with the .npy magic string"),
])
def test_decode_of_a_file_that_is_not_a_npy_says_what_it_is(tmp_path, tokdir, capsys, name, content, what):
    # it said NumPy's words: "(EOF: reading magic string, expected 8 bytes got 0)", "(the magic string is not
    # correct; expected b'\\x93NUMPY', got b'PK\\x03\\x04-\\x00')"
    if content is None:
        np.savez(tmp_path / name, ids=np.arange(3))
    else:
        (tmp_path / name).write_bytes(content)
    code, err = run(["decode", "-t", str(tokdir), str(tmp_path / name), "-o", str(tmp_path / "o.txt")], capsys)
    _assert_clean_failure(code, err, tmp_path, keep=(name,))
    assert err.splitlines() == [f"bpe-fast: {tmp_path / name}: not a .npy file ({what})"]


@pytest.mark.parametrize("flag", ["--hf", "--tiktoken"])
def test_export_eos_token_without_hf_dir_is_refused(tmp_path, tokdir, capsys, flag):
    # --eos-token is for --hf-dir (README, --help); with --hf or --tiktoken it was silently ignored, exit 0
    # (found by trying export --hf x.json --eos-token TOK)
    code, err = run(["export", "-t", str(tokdir), flag, str(tmp_path / "out"), "--eos-token", EOT], capsys)
    _assert_clean_failure(code, err, tmp_path)
    assert "--eos-token" in err and "--hf-dir" in err


def test_encode_of_several_inputs_into_an_existing_file_says_so(tmp_path, tokdir, corpus, capsys):
    # several inputs go into a folder; -o an existing file was "bpe-fast: FILE: File exists" (os.makedirs's
    # words; found by giving -o a file with two inputs)
    out = tmp_path / "tokens.npy"
    out.write_bytes(b"keep")
    other = tmp_path / "other.txt"
    other.write_text("Once upon a time", encoding="utf-8")
    code, err = run(["encode", "-t", str(tokdir), str(corpus), str(other), "-o", str(out)], capsys)
    _assert_clean_failure(code, err, tmp_path, keep=("tokens.npy", "other.txt"))
    assert f"-o {out}: is a file" in err and "folder" in err
    assert out.read_bytes() == b"keep"


def _fed_pipe(path, data):
    """A named pipe at `path` that a thread writes `data` into once it is opened (bash's <(cmd) is one);
    returns the thread."""
    import threading

    os.mkfifo(path)

    def feed():
        with open(path, "wb") as f:
            f.write(data)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    return writer


def test_encode_of_a_named_pipe_input(tmp_path, tokdir, capsys):
    # INPUT a pipe (bash's <(cmd), /dev/stdin): was "bpe-fast: File or stream is not seekable." naming nothing
    # (encode_file seeks to cut the file into ranges); found by trying encode -t tok <(cat f) -o x.npy
    text = "Once upon a time " * 100 + EOT + " the end\n"
    out = tmp_path / "tokens.npy"
    writer = _fed_pipe(tmp_path / "in.txt", text.encode("utf-8"))
    code, err = run(["-q", "encode", "-t", str(tokdir), str(tmp_path / "in.txt"), "-o", str(out)], capsys)
    writer.join(10)
    assert code == 0, err
    assert np.load(out).tolist() == Tokenizer.load(tokdir).encode(text)


def test_encode_of_a_compressed_named_pipe_input_decompresses_it(tmp_path, tokdir, capsys):
    # a named pipe called *.gz (mkfifo x.gz; gzip -c f > x.gz) was read raw, as an uncompressed pipe is, since
    # bd66367: "invalid UTF-8 at byte offset 1"; before it, it went as a one-shard folder, decompressed
    import gzip

    text = "Once upon a time " * 100 + EOT + " the end\n"
    out = tmp_path / "tokens.npy"
    writer = _fed_pipe(tmp_path / "in.txt.gz", gzip.compress(text.encode("utf-8")))
    code, err = run(["-q", "encode", "-t", str(tokdir), str(tmp_path / "in.txt.gz"), "-o", str(out)], capsys)
    writer.join(10)
    assert code == 0, err
    assert np.load(out).tolist() == Tokenizer.load(tokdir).encode(text)


def test_show_and_decode_read_a_named_pipe(tmp_path, tokdir, capsys):
    # show -f <(cmd) and decode <(cmd) said "no such file" of a pipe that exists (found reviewing the pipe fix)
    tok = Tokenizer.load(tokdir)
    ids = np.array(tok.encode("Once upon a time"), dtype=np.int32)
    held = tmp_path / "held.npy"
    np.save(held, ids)
    writer = _fed_pipe(tmp_path / "ids.npy", held.read_bytes())
    code, err = run(["decode", "-t", str(tokdir), str(tmp_path / "ids.npy"), "-o", str(tmp_path / "out.txt")], capsys)
    writer.join(10)
    assert code == 0, err
    assert (tmp_path / "out.txt").read_text("utf-8") == "Once upon a time"
    writer = _fed_pipe(tmp_path / "text.txt", "Once upon a time".encode("utf-8"))
    code = main(["show", "-t", str(tokdir), "-f", str(tmp_path / "text.txt")])
    out = capsys.readouterr().out
    writer.join(10)
    assert main(["show", "-t", str(tokdir), "Once upon a time"]) == 0         # the same text, as the argument
    assert code == 0 and out == capsys.readouterr().out != ""


@pytest.mark.parametrize("command", ["train", "count", "encode-folder"])
def test_train_count_and_folder_encode_read_a_named_pipe(tmp_path, tokdir, corpus, command, capsys):
    # train <(cat f), count <(cat f) and encode A <(cat f) -o DIR/ failed with "File or stream is not seekable."
    # (a pipe was counted by byte ranges, as a file is); found by the CLI review
    data = corpus.read_bytes()[:300_000]
    plain = tmp_path / "plain.txt"
    plain.write_bytes(data)
    writer = _fed_pipe(tmp_path / "pipe.txt", data)
    if command == "train":
        args = ["train", "--vocab-size", "400", "--special-token", EOT]
        code, err = run(["-q", *args, str(tmp_path / "pipe.txt"), "-o", str(tmp_path / "a")], capsys)
        assert code == 0, err
        assert Tokenizer.load(tmp_path / "a").merges == tuple(train_bpe(plain, 400, [EOT])[1])
    elif command == "count":
        code, err = run(["-q", "count", str(tmp_path / "pipe.txt"), "--special-token", EOT, "-o",
                         str(tmp_path / "c.npz")], capsys)
        assert code == 0, err
        from bpe_fast import PretokenCounts, count_pretokens
        assert PretokenCounts.load(tmp_path / "c.npz") == count_pretokens(plain, [EOT])
    else:
        code, err = run(["-q", "encode", "-t", str(tokdir), str(plain), str(tmp_path / "pipe.txt"), "-o",
                         str(tmp_path / "out") + "/"], capsys)
        assert code == 0, err
        expected = Tokenizer.load(tokdir).encode(data.decode("utf-8"))
        assert np.load(tmp_path / "out" / "pipe.npy").tolist() == expected
    writer.join(10)


@pytest.mark.parametrize("closed, argv", [
    ("stdin", ["encode", "-t", "TOK", "-", "-o", "OUT/x.npy"]),
    ("stdin", ["decode", "-t", "TOK", "-", "-o", "OUT/x.txt"]),
    ("stdin", ["train", "-", "--vocab-size", "300", "-o", "OUT/tok"]),
    ("stdin", ["count", "-", "-o", "OUT/c.npz"]),
    ("stdin", ["show", "-t", "TOK", "-f", "-"]),
    ("stdout", ["encode", "-t", "TOK", "CORPUS", "-o", "-"]),
    ("stdout", ["decode", "-t", "TOK", "OUT/ids.npy", "-o", "-"]),
    ("stdout", ["show", "-t", "TOK", "Once upon a time"]),
    ("stdout", ["synth", "--size", "10KB", "-o", "-"]),
])
def test_closed_stdin_or_stdout_is_one_line(tmp_path, tokdir, corpus, capsys, monkeypatch, closed, argv):
    # started with stdin or stdout closed (`<&-`, `>&-`), Python sets sys.stdin / sys.stdout to None: every command
    # reading '-' or writing to stdout stopped with a traceback (AttributeError: 'NoneType' object has no
    # attribute 'buffer'; show: 'isatty'). Found by 'bpe-fast encode -t tok - -o x.npy <&-'
    np.save(tmp_path / "ids.npy", np.array([72, 105], dtype=np.uint16))
    argv = [a.replace("TOK", str(tokdir)).replace("OUT", str(tmp_path)).replace("CORPUS", str(corpus))
            for a in argv]
    before = sorted(tmp_path.iterdir())
    monkeypatch.setattr(sys, closed, None)
    code, err = run(["-q", *argv], capsys)
    assert code == 1 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert f"{closed} is closed" in err
    assert sorted(tmp_path.iterdir()) == before


@pytest.mark.parametrize("argv, message", [
    # check_vocab_size's "vocab_size must be at least ...", the library's keyword (found by train --vocab-size 100)
    (["train", "CORPUS", "--vocab-size", "100", "-o", "OUT/t"],
     "bpe-fast: --vocab-size must be at least 256 (256 byte tokens + 0 special tokens), got 100"),
    (["train", "CORPUS", "--vocab-size", "500", "--continue-from", "TOK", "-o", "OUT/t"],
     "bpe-fast: --vocab-size must be at least 600 (the initial tokenizer's 600 tokens"),
    # the counts' special tokens, taken when --special-token is not given, were checked inside train_from_counts
    (["train", "--from-counts", "COUNTS", "--vocab-size", "256", "-o", "OUT/t"],
     "bpe-fast: --vocab-size must be at least 257 (256 byte tokens + 1 special token), got 256"),
    # the library's keywords or no flag at all (found by a review trying the command line as a new user)
    (["train", "CORPUS", "--vocab-size", "700", "--continue-from", "TOK", "--pattern", "gpt4", "-o", "OUT/t"],
     "bpe-fast: --pattern gpt4: not the pattern of --continue-from "),
    (["encode", "-t", "TOK", "OUT/a.npy", "CORPUS", "-o", "OUT/"], "is an input and would be overwritten by an output; "
                                                                 "choose another -o"),
    (["report", "-t", "TOK", "--eval", "-", "-o", "OUT/r.html"],
     "bpe-fast: --eval -: report reads its evaluation text from files (each is read twice), not stdin"),
    (["encode", "-t", "TOK", "-", "-o", "OUT"], "'-' (stdin) is encoded to a .npy file or to stdout (-o -), not into"),
    (["train", "OUT/" + "a" * 300, "--vocab-size", "300", "-o", "OUT/t"], "corpus path: File name too long"),
    # counted, then training from the counts refused the special token
    (["count", "CORPUS", "--special-token", "X", "-o", "OUT/c.npz"],
     "bpe-fast: --special-token 'X': its bytes are token 88's already (a single byte)"),
    # SpecialTokens' errors named no flag
    (["train", "CORPUS", "--vocab-size", "300", "--special-token", "", "-o", "OUT/t"],
     "bpe-fast: --special-token: special tokens must not be empty strings"),
    (["count", "CORPUS", "--special-token", "a", "--special-token", "a", "-o", "OUT/c.npz"],
     "bpe-fast: --special-token: duplicate special token 'a'"),
    # check_dtype's, from inside encode_file / encode_files
    (["encode", "-t", "BIG", "CORPUS", "-o", "OUT/x.npy", "--dtype", "uint16"],
     "bpe-fast: --dtype uint16: a vocabulary of 70000 tokens does not fit in uint16"),
    (["encode", "-t", "BIG", "CORPUS", "CORPUS2", "-o", "OUT/x/", "--dtype", "uint16"],
     "bpe-fast: --dtype uint16: a vocabulary of 70000 tokens does not fit in uint16"),
])
def test_errors_name_the_flag_not_the_keyword(tmp_path, tokdir, corpus, capsys, argv, message):
    big = tmp_path / "big"
    vocab = {i: bytes([i]) for i in range(256)} | {69_999: EOT.encode()}
    Tokenizer(vocab, [], special_tokens=[EOT]).save(big)
    count_pretokens(corpus, [EOT]).save(tmp_path / "counts.npz")
    (tmp_path / "c2.txt").write_text("more text")
    out = tmp_path / "out"
    out.mkdir()
    if "OUT/a.npy" in argv:
        (out / "a.npy").write_bytes(b"x")
    argv = [{"CORPUS": str(corpus), "CORPUS2": str(tmp_path / "c2.txt"), "TOK": str(tokdir), "BIG": str(big),
             "COUNTS": str(tmp_path / "counts.npz")}.get(a, a.replace("OUT", str(out))) for a in argv]
    code, err = run(["-q", *argv], capsys)
    _assert_clean_failure(code, err, out, keep=["a.npy"])
    assert message in err, err


def test_warnings_name_the_flag_not_the_keyword(tmp_path, corpus, capsys):
    code, err = run(["-q", "train", str(corpus), "--vocab-size", "320", "--min-frequency", "1000000",
                     "--pad-vocab-to-multiple-of", "64", "-o", str(tmp_path / "t")], capsys)
    assert code == 0
    warning = next(line for line in err.splitlines() if line.startswith("bpe-fast: warning: "))
    assert "fewer than --min-frequency 1000000;" in warning and "_" not in warning


@pytest.mark.parametrize("argv, message", [
    # an output that is a folder: 'bpe-fast: DIR: Is a directory', naming no flag (decode: once all was decoded);
    # found by decode -o tok / export --hf tok / synth -o tok
    (["decode", "-t", "TOK", "IDS", "-o", "DIR"], "-o DIR: is a folder"),
    (["export", "-t", "TOK", "--hf", "DIR"], "--hf DIR: is a folder"),
    (["export", "-t", "TOK", "--tiktoken", "DIR"], "--tiktoken DIR: is a folder"),
    (["synth", "--size", "1KB", "-o", "DIR"], "-o DIR: is a folder"),
    # --hf-dir a file: 'bpe-fast: FILE: File exists'; under a file: 'FILE/sub: the folder FILE does not exist'
    (["export", "-t", "TOK", "--hf-dir", "FILE"], "--hf-dir FILE: exists and is not a folder"),
    (["export", "-t", "TOK", "--hf-dir", "FILE/sub"], "--hf-dir FILE/sub: FILE is not a folder"),
    (["show", "-t", "TOK", "hi", "--html", "DIR/none/x.html"], "--html DIR/none/x.html: the folder DIR/none does not"),
    (["encode", "-t", "TOK", "IDS", "-o", "DIR/none/x.npy"], "-o DIR/none/x.npy: the folder DIR/none does not exist"),
    # train -o a file, or under one: 'bpe-fast: FILE: exists and is not a directory', 'FILE/t: FILE is not a folder'
    (["train", "IDS", "--vocab-size", "300", "-o", "FILE"], "-o FILE: exists and is not a folder"),
    (["train", "IDS", "--vocab-size", "300", "-o", "FILE/t"], "-o FILE/t: FILE is not a folder"),
])
def test_outputs_that_cannot_be_files_are_named_by_their_flag(tmp_path, tokdir, capsys, argv, message):
    folder = tmp_path / "dir"
    folder.mkdir()
    (folder / "old").write_text("kept")
    (tmp_path / "file").write_text("kept")
    np.save(tmp_path / "ids.npy", np.array([72, 105], dtype=np.uint16))
    names = {"TOK": str(tokdir), "IDS": str(tmp_path / "ids.npy"), "DIR": str(folder), "FILE": str(tmp_path / "file")}

    def put(text):
        for key, value in names.items():
            text = text.replace(key, value)
        return text

    code, err = run(["-q", *map(put, argv)], capsys)
    _assert_clean_failure(code, err, tmp_path, keep=("dir", "file", "ids.npy"))
    assert f"bpe-fast: {put(message)}" in err, err
    assert [p.name for p in folder.iterdir()] == ["old"] and (tmp_path / "file").read_text() == "kept"


@pytest.mark.parametrize("argv, message", [
    (["train", "IDS", "--vocab-size", "300", "-o", "FILE/"], "-o FILE/: exists and is not a folder"),
    (["export", "-t", "TOK", "--hf-dir", "FILE/"], "--hf-dir FILE/: exists and is not a folder"),
    (["report", "-t", "TOK", "--eval", "TEXT", "-o", "DIR/r.html", "--png", "FILE/"],
     "--png FILE/: exists and is not a folder"),
    (["encode", "-t", "TOK", "TEXT", "-o", "FILE/"], "-o FILE/: is a file"),
])
def test_a_folder_output_naming_a_file_with_a_slash_is_refused_before_any_work(tmp_path, tokdir, capsys, monkeypatch,
                                                                               argv, message):
    # the checks 'exists and is not a folder' asked os.path.exists('file/'), False for a file: 'bpe-fast train
    # c.txt --vocab-size 300 -o notes.txt/' trained, then said '-o notes.txt/: cannot write there (File exists)';
    # export --hf-dir notes.txt/, report --png notes.txt/ (once all was measured) and encode ... -o notes.txt/
    # said 'bpe-fast: notes.txt/: File exists', naming no flag
    import bpe_fast.html_report
    import bpe_fast.shards
    import bpe_fast.train

    def no_work(*args, **kwargs):
        raise AssertionError("the work was started")

    for module, name in ((bpe_fast.train, "train_bpe"), (bpe_fast.html_report, "write_report"),
                         (bpe_fast.shards, "encode_files"), (Tokenizer, "export_hf_dir")):
        monkeypatch.setattr(module, name, no_work)
    folder = tmp_path / "dir"
    folder.mkdir()
    (tmp_path / "file").write_text("kept")
    (tmp_path / "text.txt").write_text("Once upon a time")
    np.save(tmp_path / "ids.npy", np.array([72, 105], dtype=np.uint16))
    names = {"TOK": str(tokdir), "IDS": str(tmp_path / "ids.npy"), "TEXT": str(tmp_path / "text.txt"),
             "DIR": str(folder), "FILE": str(tmp_path / "file")}

    def put(text):
        for key, value in names.items():
            text = text.replace(key, value)
        return text

    code, err = run(["-q", *map(put, argv)], capsys)
    _assert_clean_failure(code, err, tmp_path, keep=("dir", "file", "ids.npy", "text.txt"))
    assert f"bpe-fast: {put(message)}" in err, err
    assert list(folder.iterdir()) == [] and (tmp_path / "file").read_text() == "kept"


@pytest.mark.parametrize("argv, message", [
    (["train", "CORPUS", "--vocab-size", "300", "--special-token", "X", "-o", "OUT"],
     "--special-token 'X': its bytes are token 88's already"),
    (["train", "CORPUS", "--vocab-size", "300", "--special-token", "é", "--special-tokens-position", "end",
      "-o", "OUT"], None),    # two bytes: not a byte token, trained and saved
    (["train", "--from-counts", "COUNTS", "--vocab-size", "300", "-o", "OUT"],
     "COUNTS: the counts' special token 'X': its bytes are token 88's already"),
    (["train", "CORPUS", "--vocab-size", "700", "--continue-from", "TOK", "--special-token", "MERGED", "-o", "OUT"],
     "--special-token 'MERGED': its bytes are token ID's already"),
])
def test_a_special_token_with_another_tokens_bytes_is_refused_before_training(tmp_path, tokdir, corpus, capsys,
                                                                               argv, message):
    # a special token that is a single byte (or, continuing, one of the tokenizer's tokens) was trained with,
    # then saving failed: 'bpe-fast: ids 88 and 256 have the same bytes b'X'; vocab.json cannot hold both',
    # naming no flag, after the whole run (found by train --special-token X)
    tok = Tokenizer.load(tokdir)
    merged_id = max(tok.vocab, key=lambda i: (len(tok.vocab[i]), i) if i not in tok.special_tokens.values() else (0, i))
    merged = tok.vocab[merged_id].decode("utf-8")
    count_pretokens(corpus, ["X"]).save(tmp_path / "counts.npz")
    out = tmp_path / "out" / "tok"
    names = {"CORPUS": str(corpus), "TOK": str(tokdir), "COUNTS": str(tmp_path / "counts.npz"), "OUT": str(out),
             "MERGED": merged}
    code, err = run(["-q", *[names.get(a, a) for a in argv]], capsys)
    if message is None:
        assert code == 0, err
        assert Tokenizer.load(out).special_tokens["é"] == 299
        return
    message = message.replace("COUNTS", str(tmp_path / "counts.npz")).replace("MERGED", merged)
    assert code == 1 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert f"bpe-fast: {message.replace('ID', str(merged_id))}" in err, err
    assert "trained in" not in err and not (tmp_path / "out").exists()


@pytest.mark.parametrize("failure, code", [(OSError(28, "No space left on device"), 1), (KeyboardInterrupt(), 130)])
def test_train_failing_to_save_leaves_no_new_folder(tmp_path, corpus, capsys, monkeypatch, failure, code):
    # train made -o's folders before Tokenizer.save, so a save that failed (a full disk, Ctrl-C, ...) left them
    # behind, empty (the save's own output group removes only the folders it made); found when a save failed
    # after training with --special-token X
    def failing_save(self, directory):
        raise failure

    monkeypatch.setattr(Tokenizer, "save", failing_save)
    out = tmp_path / "new" / "deeper" / "tok"
    got, err = run(["-q", "train", str(corpus), "--vocab-size", "300", "-o", str(out)], capsys)
    assert got == code and "Traceback" not in err, err
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "kept").mkdir()         # an existing folder stays, with what it holds
    (tmp_path / "kept" / "file").write_text("x")
    got, err = run(["-q", "train", str(corpus), "--vocab-size", "300", "-o", str(tmp_path / "kept" / "tok")],
                   capsys)
    assert got == code and [p.name for p in (tmp_path / "kept").iterdir()] == ["file"]


def test_export_hf_dir_makes_the_missing_folders(tmp_path, tokdir, capsys):
    # 'export --hf-dir a/b' where a did not exist was refused ('the folder a does not exist'), where train -o a/b
    # makes them (and export_hf_dir makes its folder)
    out = tmp_path / "new" / "deeper" / "hf"
    code, err = run(["-q", "export", "-t", str(tokdir), "--hf-dir", str(out)], capsys)
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == ["special_tokens_map.json", "tokenizer.json",
                                                     "tokenizer_config.json"]


@pytest.mark.parametrize("failure, code", [(OSError(28, "No space left on device"), 1), (KeyboardInterrupt(), 130)])
def test_export_hf_dir_failing_leaves_no_new_folder(tmp_path, tokdir, capsys, monkeypatch, failure, code):
    import bpe_fast.export
    real, written = bpe_fast.export.write_text_atomic, []

    def failing_write(path, text, group=None):
        if written:         # the second file: the first is written, the folders made
            raise failure
        written.append(path)
        return real(path, text, group)

    monkeypatch.setattr(bpe_fast.export, "write_text_atomic", failing_write)
    out = tmp_path / "new" / "deeper" / "hf"
    got, err = run(["-q", "export", "-t", str(tokdir), "--hf-dir", str(out)], capsys)
    assert got == code and "Traceback" not in err and written, err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["out", "run (2)"])
def test_encode_into_a_folder_of_other_settings_names_the_flags(tmp_path, tokdir, capsys, name):
    # 'bpe-fast encode ... -o out/ --text-field body' into a folder encoded with the default field said
    # 'out holds shards encoded with another text_field', the keyword of encode_files, not the flag; 2e7cac9 put
    # the flags into the text before the first ' (', which for a folder named 'run (2)' is inside its name
    (tmp_path / "a.jsonl").write_text('{"text": "hello", "body": "there"}\n')
    (tmp_path / "b.jsonl").write_text('{"text": "world", "body": "again"}\n')
    out = tmp_path / name
    shards = [str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")]
    assert run(["-q", "encode", "-t", str(tokdir), *shards, "-o", f"{out}/"], capsys)[0] == 0
    index = (out / "index.json").read_bytes()
    for extra, named in ((["--text-field", "body"], "--text-field"), (["--text-column", "body"], "--text-column"),
                         (["--text-field", "body", "--text-column", "x"], "--text-field and --text-column")):
        code, err = run(["-q", "encode", "-t", str(tokdir), *shards, "-o", f"{out}/", *extra], capsys)
        assert code == 1 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
        assert err.startswith(f"bpe-fast: {out} holds shards encoded with another {named} ({out / 'index.json'})"), err
        assert (out / "index.json").read_bytes() == index


def test_a_warning_is_one_line_naming_no_source(tmp_path):
    # train on a corpus with fewer pairs than --vocab-size asks for printed Python's warning: 'bpe_fast/cli.py:359:
    # UserWarning: no pairs left ...' and then the line of source that called train_bpe (found by training on an
    # empty file)
    (tmp_path / "tiny.txt").write_text("ab ab")
    proc = subprocess.run([sys.executable, "-m", "bpe_fast", "-q", "train", "tiny.txt", "--vocab-size", "300",
                           "-o", "tok"], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert "bpe-fast: warning: no pairs left after 2 merges: the vocabulary has 258 tokens, not the 300 asked for" \
        in lines, proc.stderr
    assert "UserWarning" not in proc.stderr and "train_bpe(" not in proc.stderr and ".py:" not in proc.stderr
    assert Tokenizer.load(tmp_path / "tok").vocab_size == 258


@pytest.mark.parametrize("command", ["train", "count"])
def test_an_empty_pattern_is_refused_not_taken_for_gpt2(tmp_path, corpus, capsys, command):
    # --pattern '' (say --pattern "$PATTERN" with the variable unset) was taken for no --pattern: train and count
    # used GPT-2's pattern without a word
    out = tmp_path / ("tok" if command == "train" else "c.npz")
    extra = ["--vocab-size", "300"] if command == "train" else []
    code, err = run(["-q", command, str(corpus), *extra, "--pattern", "", "-o", str(out)], capsys)
    _assert_clean_failure(code, err, tmp_path)
    assert "bpe-fast: --pattern: empty" in err


@pytest.mark.parametrize("argv", [
    ["decode", "-t", "TOK", "IDS", "-o", "NEW/"],
    ["count", "IDS", "-o", "NEW/"],
    ["report", "-t", "TOK", "--eval", "TEXT", "-o", "NEW/"],
    ["export", "-t", "TOK", "--hf", "NEW/"],
    ["export", "-t", "TOK", "--tiktoken", "NEW/"],
    ["synth", "--size", "1KB", "-o", "NEW/"],
    ["show", "-t", "TOK", "hi", "--html", "NEW/"],
])
def test_a_file_output_ending_with_a_slash_is_refused(tmp_path, tokdir, capsys, argv):
    # -o new/ (a folder not there yet) for a command writing one file: the temporary file was renamed onto
    # 'new/', so the error named it ('bpe-fast: /…/.new.k2x9a1b0.tmp: Not a directory', no flag); an output group
    # renames onto the realpath, which drops the '/': report (its page in a group since 3352a68) wrote a file
    # called 'new' and exited 0
    np.save(tmp_path / "ids.npy", np.array([72, 105], dtype=np.uint16))
    (tmp_path / "text.txt").write_text("Once upon a time")
    names = {"TOK": str(tokdir), "IDS": str(tmp_path / "ids.npy"), "TEXT": str(tmp_path / "text.txt"),
             "NEW/": f"{tmp_path / 'new'}/"}
    argv = [names.get(a, a) for a in argv]
    flag = argv[-2]
    code, err = run(["-q", *argv], capsys)
    _assert_clean_failure(code, err, tmp_path, keep=("ids.npy", "text.txt"))
    assert f"bpe-fast: {flag} {tmp_path / 'new'}/: ends with '/', a folder's name" in err, err


def test_atomic_output_to_a_folder_name_is_refused(tmp_path):
    from bpe_fast.atomic import atomic_output, output_group
    for opener in (atomic_output, lambda path: output_group().__enter__().output(path)):
        with pytest.raises(IsADirectoryError, match="ends with '/'") as caught:
            with opener(f"{tmp_path / 'new'}/") as f:
                f.write(b"x")
        assert caught.value.filename == f"{tmp_path / 'new'}/"
        assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("argv, named", [
    (["decode", "-t", "TOK", "IDS", "-o", "/dev/full"], "/dev/full"),
    (["encode", "-t", "TOK", "TEXT", "-o", "/dev/full"], "/dev/full"),
    (["synth", "--size", "10KB", "-o", "/dev/full"], "/dev/full"),
    (["decode", "-t", "TOK", "IDS", "-o", "-"], "stdout"),
    (["show", "-t", "TOK", "Once upon a time"], "stdout"),
])
def test_a_full_device_names_the_output(tmp_path, tokdir, argv, named):
    # writing to a full device said 'bpe-fast: [Errno 28] No space left on device', naming no output: an output
    # that is not a regular file is written directly, without the temporary file's errors naming it, and stdout
    # only turned a closed pipe into its own error (found by -o /dev/full and > /dev/full)
    np.save(tmp_path / "ids.npy", np.array([72, 105], dtype=np.uint16))
    (tmp_path / "text.txt").write_text("Once upon a time")
    names = {"TOK": str(tokdir), "IDS": str(tmp_path / "ids.npy"), "TEXT": str(tmp_path / "text.txt")}
    with open("/dev/full", "wb") as full:
        proc = subprocess.run([sys.executable, "-m", "bpe_fast", "-q", *[names.get(a, a) for a in argv]],
                              stdout=full, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines() == [f"bpe-fast: {named}: No space left on device"], proc.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["train", "--help"]])
@pytest.mark.parametrize("unbuffered", ["1", ""])
def test_help_and_version_that_cannot_be_written_fail(argv, unbuffered):
    # argparse ignores an OSError writing them: 'bpe-fast --version > /dev/full' exited 0 (stdout unbuffered), or
    # 120 with Python's 'Exception ignored' (buffered)
    env = dict(os.environ, PYTHONUNBUFFERED=unbuffered)
    with open("/dev/full", "wb") as full:
        proc = subprocess.run([sys.executable, "-m", "bpe_fast", *argv], stdout=full, stderr=subprocess.PIPE,
                              text=True, env=env)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip().splitlines() == ["bpe-fast: stdout: No space left on device"], proc.stderr
    written = subprocess.run([sys.executable, "-m", "bpe_fast", *argv], capture_output=True, text=True, env=env)
    assert written.returncode == 0 and written.stderr == "" and "bpe-fast" in written.stdout


def test_version_with_stdout_closed_fails():
    # 'bpe-fast --version >&-' wrote the version to stderr and exited 0 (argparse's fallback), where every other
    # command with stdout closed exits 1 (review helper-140)
    import shlex
    proc = subprocess.run(f"{shlex.quote(sys.executable)} -m bpe_fast --version >&-", shell=True,
                          stderr=subprocess.PIPE, text=True)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip().splitlines() == ["bpe-fast: stdout is closed, there is nowhere to write"]


def test_the_summary_samples_the_corpus_not_the_tokenizer_saved_beside_it(tmp_path, corpus, capsys):
    # trained with -o the corpus's folder, the summary listed the folder again after saving: it sampled the
    # tokenizer's bpe_fast.json, first of the folder then (review helper-140)
    (tmp_path / "c2").mkdir()
    (tmp_path / "c2" / "text.txt").write_bytes(corpus.read_bytes()[:50_000])
    code, err = run(["train", str(tmp_path / "c2"), "--vocab-size", "300", "-o", str(tmp_path / "c2")], capsys)
    assert code == 0, err
    assert f"of {tmp_path / 'c2' / 'text.txt'}: " in err and "bpe_fast.json:" not in err, err


def test_a_negative_dimension_in_a_npy_header_names_the_file(tmp_path, tokdir, capsys):
    # NumPy's header reader takes (-5,): the error was NumPy's "negative dimensions are not allowed", naming no
    # file (review helper-140)
    buffer = io.BytesIO()
    np.save(buffer, np.arange(10, dtype=np.uint16))
    data = buffer.getvalue()
    assert b"'shape': (10,)" in data
    (tmp_path / "neg.npy").write_bytes(data.replace(b"'shape': (10,)", b"'shape': (-5,)"))
    code, err = run(["decode", "-t", str(tokdir), str(tmp_path / "neg.npy"), "-o", str(tmp_path / "out.txt")],
                    capsys)
    assert code == 1 and err.strip().splitlines() == [
        f"bpe-fast: {tmp_path / 'neg.npy'}: a damaged .npy header (a negative dimension in its shape (-5,))"], err
    assert not (tmp_path / "out.txt").exists()


def test_a_special_token_argument_that_is_not_utf8_says_so(tmp_path, corpus, capsys):
    code, err = run(["train", str(corpus), "--vocab-size", "300", "--special-token", "a\udcffb",
                     "-o", str(tmp_path / "t")], capsys)
    assert code == 1 and "lone surrogate at index 1" in err and "a byte that is not UTF-8, as a command line " \
        "passes it?" in err, err
    assert not (tmp_path / "t").exists()


@pytest.mark.parametrize("command", ["count", "encode"])
def test_a_bad_dask_scheduler_names_the_flag(tmp_path, tokdir, corpus, capsys, command):
    # 'bpe-fast count corpus.txt -o c.npz --dask-scheduler "not an address"' said "missing port number in address
    # 'not an address'" (an unreachable one: 'Timed out trying to connect to ...'), naming no flag
    pytest.importorskip("distributed")
    argv = (["count", str(corpus), "-o", str(tmp_path / "c.npz")] if command == "count" else
            ["encode", "-t", str(tokdir), str(corpus), "-o", f"{tmp_path / 'out'}/"])
    code, err = run(["-q", *argv, "--dask-scheduler", "not an address"], capsys)
    _assert_clean_failure(code, err, tmp_path)
    assert "bpe-fast: --dask-scheduler not an address: missing port number" in err, err


def test_a_bad_tokenizer_is_named_by_its_flag(tmp_path, tokdir, corpus, capsys):
    # 'bpe-fast report -t tok --against corpus.txt ...' said 'bpe-fast: corpus.txt is a file, not a folder: ...'
    # and a damaged vocab.json 'bpe-fast: bad/vocab.json:2: bad JSON: ...': which of -t, --against or
    # --continue-from was meant went unsaid
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "vocab.json").write_text("{\n")
    (bad / "merges.txt").write_text("")
    text = tmp_path / "t.txt"
    text.write_text("Once upon a time")
    cases = [(["encode", "-t", str(bad), str(text), "-o", str(tmp_path / "x.npy")], f"-t: {bad / 'vocab.json'}:2: "),
             (["report", "-t", str(tokdir), "--against", str(text), "--eval", str(text), "-o", str(tmp_path / "r.html")],
              f"--against {text}: a file that is no tokenizer.json; --against takes a folder"),
             (["train", str(text), "--continue-from", str(bad), "--vocab-size", "700", "-o", str(tmp_path / "t")],
              f"--continue-from: {bad / 'vocab.json'}:2: ")]
    for argv, message in cases:
        code, err = run(["-q", *argv], capsys)
        _assert_clean_failure(code, err, tmp_path, keep=("bad", "t.txt"))
        assert f"bpe-fast: {message}" in err, err


def test_synth_to_stdout_interrupted_says_what_stdout_holds(monkeypatch, capsys):
    # "bpe-fast: interrupted; no output written" after hundreds of MB had gone to stdout (helper-146)
    import bpe_fast.synthetic

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(bpe_fast.synthetic, "generate", interrupted)
    code, err = run(["synth", "--size", "1MB", "-o", "-"], capsys)
    assert code == 130 and "interrupted; stdout holds the corpus written so far, cut short" in err, err


def test_ctrl_c_as_the_command_ends_is_no_traceback(tmp_path, tokdir, capsys, monkeypatch):
    # a SIGINT reaching the CLI after the command's work, while main restored its SIGTERM handler, escaped main
    # as a KeyboardInterrupt traceback (seen sending SIGINT to 'bpe-fast encode -t tok s2.jsonl -o out.npy' as
    # it finished); simulated here by the restoring call raising it
    import signal as signal_module
    (tmp_path / "t.txt").write_text("Once upon a time")
    real = signal_module.signal
    calls = []

    def signal(number, handler):
        calls.append(number)
        previous = real(number, handler)
        if number == signal_module.SIGTERM and calls.count(number) == 2:       # the restore in main's finally
            raise KeyboardInterrupt
        return previous

    monkeypatch.setattr(signal_module, "signal", signal)
    try:
        code, err = run(["-q", "encode", "-t", str(tokdir), str(tmp_path / "t.txt"), "-o", str(tmp_path / "x.npy")],
                        capsys)
    except KeyboardInterrupt:
        pytest.fail("KeyboardInterrupt escaped main (a traceback from the command line)")
    assert calls[-1] == signal_module.SIGTERM
    assert code == 130 and err.strip().splitlines()[-1] == "bpe-fast: interrupted as the command ended", err
    assert np.load(tmp_path / "x.npy").tolist() == Tokenizer.load(tokdir).encode("Once upon a time")


def test_closed_stderr_leaves_stdout_as_the_output(tmp_path, tokdir):
    # started with stderr closed (2>&-), sys.stderr is None: print(..., file=sys.stderr) then writes to stdout, so
    # 'bpe-fast -q decode -t tok ids.npy -o - 2>&-' put 'decoded 4 tokens -> stdout' after the text, and encode
    # failed on the progress line (None.isatty()), writing nothing, exit 1
    text = "Once upon a time"
    ids = Tokenizer.load(tokdir).encode(text)
    np.save(tmp_path / "ids.npy", np.array(ids, dtype=np.uint16))
    (tmp_path / "t.txt").write_text(text)

    def cli(*argv):
        return subprocess.run([sys.executable, "-m", "bpe_fast", *argv], capture_output=False,
                              stdout=subprocess.PIPE, cwd=tmp_path, preexec_fn=lambda: os.close(2))

    proc = cli("-q", "decode", "-t", str(tokdir), "ids.npy", "-o", "-")
    assert proc.returncode == 0 and proc.stdout == text.encode()
    proc = cli("encode", "-t", str(tokdir), "t.txt", "-o", "-")
    assert proc.returncode == 0 and np.load(io.BytesIO(proc.stdout)).tolist() == ids
    proc = cli("decode", "-t", str(tokdir), "none.npy", "-o", "-")
    assert proc.returncode == 1 and proc.stdout == b""


@pytest.mark.parametrize("argv, flag", [
    (["count", "TEXT", "-o", "-"], "-o"),
    (["train", "TEXT", "--vocab-size", "300", "-o", "-"], "-o"),
    (["report", "-t", "TOK", "--eval", "TEXT", "-o", "-"], "-o"),
    (["export", "-t", "TOK", "--hf", "-"], "--hf"),
    (["export", "-t", "TOK", "--tiktoken", "-"], "--tiktoken"),
    (["export", "-t", "TOK", "--hf-dir", "-"], "--hf-dir"),
    (["show", "-t", "TOK", "hi", "--html", "-"], "--html"),
])
def test_dash_is_refused_where_stdout_is_not_taken(tmp_path, tokdir, capsys, monkeypatch, argv, flag):
    # '-' means stdout for encode, decode and synth -o; 'bpe-fast count corpus.txt -o -' (report, export, show
    # --html, train) wrote a file (or a folder) named '-' instead, exit 0
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.txt").write_text("Once upon a time")
    code, err = run(["-q", *[{"TOK": str(tokdir), "TEXT": "t.txt"}.get(a, a) for a in argv]], capsys)
    _assert_clean_failure(code, err, tmp_path, keep=("t.txt",))
    assert f"bpe-fast: {flag} -: " in err and "stdout" in err, err


@pytest.mark.parametrize("png", ["-", "OUT"])
def test_report_png_folder_that_is_stdout_or_the_page_is_refused(tmp_path, tokdir, capsys, monkeypatch, png):
    # '--png -' wrote the charts into a folder named '-' (f6a69a3 refused '-' for -o, --hf-dir, --html, ..., not
    # --png); '-o r --png r' measured everything, then renaming the page onto the folder just made for the charts
    # failed naming the temporary file ('bpe-fast: /…/.r.k2x9a1b0.tmp: Is a directory')
    import bpe_fast.html_report

    def no_work(*args, **kwargs):
        raise AssertionError("the work was started")

    monkeypatch.setattr(bpe_fast.html_report, "write_report", no_work)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.txt").write_text("Once upon a time")
    png = "r" if png == "OUT" else png
    code, err = run(["-q", "report", "-t", str(tokdir), "--eval", "t.txt", "-o", "r", "--png", png], capsys)
    _assert_clean_failure(code, err, tmp_path, keep=("t.txt",))
    assert f"bpe-fast: --png {png}: " in err, err


def test_sigterm_as_the_command_ends_is_terminated_not_ctrl_c(tmp_path, tokdir, capsys, monkeypatch):
    # main's handler for a KeyboardInterrupt past _run's (88a4205) also took SIGTERM's Terminated, a subclass of
    # it: a SIGTERM arriving while _run said its error (its handler still _on_sigterm) ended with
    # 'bpe-fast: interrupted as the command ended', status 130, as if Ctrl-C, where SIGTERM is 143 'terminated'
    import signal as signal_module

    class Stderr(io.StringIO):
        sent = False

        def write(self, text):
            if not Stderr.sent:         # SIGTERM reaches the process as _run prints the command's error
                Stderr.sent = True
                signal_module.raise_signal(signal_module.SIGTERM)
            return super().write(text)

    stderr = Stderr()
    monkeypatch.setattr(sys, "stderr", stderr)
    before = signal_module.getsignal(signal_module.SIGTERM)
    code = main(["-q", "decode", "-t", str(tokdir), str(tmp_path / "none.npy"), "-o", str(tmp_path / "x.txt")])
    assert signal_module.getsignal(signal_module.SIGTERM) is before
    assert code == 143, stderr.getvalue()
    assert stderr.getvalue().strip().splitlines()[-1] == "bpe-fast: terminated as the command ended"
    assert list(tmp_path.iterdir()) == []


def test_closed_stderr_keeps_a_usage_error_off_stdout(tmp_path, tokdir):
    # c3558c5 sent the messages to /dev/null while stderr is closed, but only once the arguments were parsed:
    # argparse's usage error (print_usage writes to sys.stdout when given None) went to stdout, where
    # 'bpe-fast decode -t tok ids.npy -o - --bogus 2>&- > text.txt' put the usage into the text file
    np.save(tmp_path / "ids.npy", np.array([72, 105], dtype=np.uint16))
    for argv in (["decode", "-t", str(tokdir), "ids.npy", "-o", "-", "--bogus"], ["decode", "-t", str(tokdir)]):
        proc = subprocess.run([sys.executable, "-m", "bpe_fast", *argv], stdout=subprocess.PIPE, cwd=tmp_path,
                              preexec_fn=lambda: os.close(2))
        assert proc.returncode == 2 and proc.stdout == b"", proc.stdout
    proc = subprocess.run([sys.executable, "-m", "bpe_fast", "--version"], stdout=subprocess.PIPE, cwd=tmp_path,
                          preexec_fn=lambda: os.close(2))
    assert proc.returncode == 0 and proc.stdout.decode().startswith("bpe-fast "), proc.stdout


def test_report_on_text_without_words_says_so(tmp_path, tokdir, capsys):
    # text of whitespace only has no words: the summary line said 'nan tokens per word'
    (tmp_path / "spaces.txt").write_text("   \n\n  ")
    code, err = run(["report", "-t", str(tokdir), "--eval", str(tmp_path / "spaces.txt"),
                     "-o", str(tmp_path / "r.html")], capsys)
    assert code == 0 and "no words at" in err and "nan" not in err, err


def test_a_folder_encoded_into_itself_is_resumed_by_the_same_command(tmp_path, tokdir, capsys):
    # 'bpe-fast encode -t tok DIR -o DIR/' worked once; run again (as its interrupt message says to resume), it
    # took its own outputs for inputs: "DIR/a.npy and DIR/a.txt would both be encoded into a.npy"
    (tmp_path / "a.txt").write_text("Once upon a time")
    (tmp_path / "b.txt").write_text("there was a cat")
    argv = ["-q", "encode", "-t", str(tokdir), str(tmp_path), "-o", f"{tmp_path}/"]
    assert run(argv, capsys)[0] == 0
    arrays = {name: np.load(tmp_path / name) for name in ("a.npy", "b.npy")}
    code, err = run(argv, capsys)
    assert code == 0 and "would both be encoded" not in err, err
    tok = Tokenizer.load(tokdir)
    assert {name: a.tolist() for name, a in arrays.items()} == {"a.npy": tok.encode("Once upon a time"),
                                                                "b.npy": tok.encode("there was a cat")}
    assert sorted(os.listdir(tmp_path)) == ["a.npy", "a.txt", "b.npy", "b.txt", "index.json"]


@pytest.mark.parametrize("argv0, preset, expected", [
    ("/usr/local/bin/bpe-fast", None, "1"),             # the command: one BLAS thread
    ("/usr/local/bin/bpe-fast", "3", "3"),              # a setting of the user's is kept
    ("train.py", None, None),                           # a program importing bpe_fast: left alone
])
def test_the_command_asks_numpy_for_one_blas_thread_before_importing_it(argv0, preset, expected, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if preset is not None:
        env["OPENBLAS_NUM_THREADS"] = preset
    # (import bpe_fast imports no NumPy, nor does bpe_fast.tokenizer: bpe_fast.train, as the command's training, does)
    code = (f"import sys; sys.argv[0] = {argv0!r}\nimport bpe_fast, bpe_fast.train, os\n"
            "print(os.environ.get('OPENBLAS_NUM_THREADS'), 'numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                         cwd=tmp_path).stdout      # (not the checkout: the installed package)
    assert out.split() == [str(expected), "True"]


def test_python_dash_m_is_the_command_too():
    from bpe_fast import _is_command
    assert _is_command(["-m", "train"], ["python3", "-m", "bpe_fast", "train"])
    assert _is_command(["bpe-fast.exe"], ["bpe-fast.exe"])
    assert not _is_command(["-m"], ["python3", "-m", "bpe_fast_other"])
    assert not _is_command([], [])


def test_synth_into_a_pipe_named_by_its_path_is_not_measured_as_a_disk(tmp_path):
    # 'bpe-fast synth --size 10KB -o /dev/stdout | gzip' (or -o >(gzip > c.gz)) failed: "--size 10KB: 10,000
    # bytes, more than the 0 bytes free in /proc/PID/fd", the free space of the folder of the pipe's link target
    expected = tmp_path / "expected.txt"
    generate(expected, 10_000, seed=3)
    for output in ("/dev/stdout", "/proc/self/fd/1"):
        proc = subprocess.run([sys.executable, "-m", "bpe_fast", "synth", "--size", "10KB", "--seed", "3", "-o",
                               output], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == expected.read_bytes()


def test_export_beside_the_files_of_a_trained_folder_is_no_overwritten_input(tmp_path, tokdir, corpus, capsys):
    # a folder holding bpe_fast.json is read from it, never from a tokenizer.json there: 'export -t tok --hf
    # tok/tokenizer.json' (and --hf-dir tok) were refused, "tok/tokenizer.json is an input and would be overwritten"
    import shutil
    shutil.copytree(tokdir, tmp_path / "tok")
    files = {p.name: p.read_bytes() for p in (tmp_path / "tok").iterdir()}
    tok = Tokenizer.load(tokdir)
    text = corpus.read_text(encoding="utf-8")[:5_000] + EOT + " the end"
    for argv in (["--hf", str(tmp_path / "tok" / "tokenizer.json")], ["--hf-dir", str(tmp_path / "tok")]):
        code, err = run(["export", "-t", str(tmp_path / "tok"), *argv], capsys)
        assert code == 0, err
        assert Tokenizer.from_hf(tmp_path / "tok" / "tokenizer.json").encode(text) == tok.encode(text)
        assert {name: (tmp_path / "tok" / name).read_bytes() for name in files} == files
        assert Tokenizer.load(tmp_path / "tok").encode(text) == tok.encode(text)
    # a folder that is read from its tokenizer.json (export --hf-dir's) still is an input
    code, err = run(["export", "-t", str(tmp_path / "tok"), "--hf-dir", str(tmp_path / "hf")], capsys)
    assert code == 0, err
    before = (tmp_path / "hf" / "tokenizer.json").read_bytes()
    code, err = run(["export", "-t", str(tmp_path / "hf"), "--hf", str(tmp_path / "hf" / "tokenizer.json")], capsys)
    assert code == 1 and "is an input and would be overwritten by the output (--hf " in err, err
    assert (tmp_path / "hf" / "tokenizer.json").read_bytes() == before


@pytest.fixture(scope="module")
def dask_scheduler():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp",
                                  dashboard_address=":0", scheduler_kwargs={"dashboard": False}) as cluster:
        yield cluster.scheduler_address


def test_what_the_dask_cluster_cannot_read_is_named_by_the_flag(tmp_path, tokdir, corpus, capsys, dask_scheduler):
    # "(count it without client=)", "encode it without client=": a keyword the command line's user never gave
    import gzip
    (tmp_path / "c.txt.gz").write_bytes(gzip.compress(corpus.read_bytes()[:1_000]))
    code, err = run(["-q", "count", str(tmp_path / "c.txt.gz"), "-o", str(tmp_path / "c.npz"),
                     "--dask-scheduler", dask_scheduler], capsys)
    assert (code, err) == (1, f"bpe-fast: {tmp_path / 'c.txt.gz'}: with --dask-scheduler, inputs must be uncompressed "
                              f"text files, not compressed text (count it without --dask-scheduler)\n")
    code, err = run(["-q", "encode", "-t", str(tokdir), "/dev/null", str(corpus), "-o", str(tmp_path / "out") + "/",
                     "--dask-scheduler", dask_scheduler], capsys)
    assert (code, err) == (1, "bpe-fast: /dev/null: not a regular file (a pipe?); with --dask-scheduler the workers "
                              "open each input by its path: encode it without --dask-scheduler\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.txt.gz"]


def test_show_plain_and_html_together_is_refused(tmp_path, tokdir, capsys):
    # --plain was dropped without a word: the page written had its colours
    code, err = run(["show", "-t", str(tokdir), "once upon a time", "--plain", "--html", str(tmp_path / "v.html")],
                    capsys)
    assert (code, err) == (1, "bpe-fast: --plain: the terminal's view without colours; --html writes a page, with "
                              "its colours: give one of them\n")
    assert list(tmp_path.iterdir()) == []


def _quiet_cases(tmp, tokdir, corpus):
    """Each command's argv, run once with -q before the command and once after it, and its summary's words."""
    ids = tmp / "ids.npy"
    return [
        (["synth", "--size", "2KB", "-o", str(tmp / "s.txt")], "wrote"),
        (["count", str(corpus), "-o", str(tmp / "c.npz")], "distinct pre-tokens"),
        (["train", str(corpus), "--vocab-size", "300", "-o", str(tmp / "t")], "saved to"),
        (["encode", "-t", str(tokdir), str(corpus), "-o", str(ids)], "tokens from"),
        (["decode", "-t", str(tokdir), str(ids), "-o", str(tmp / "back.txt")], "decoded"),
        (["export", "-t", str(tokdir), "--tiktoken", str(tmp / "t.tiktoken")], "exported"),
        (["show", "-t", str(tokdir), "--html", str(tmp / "v.html"), "a tale"], "bytes per token"),
        (["show", "-t", str(tokdir), "--plain", "a tale"], "bytes per token"),
        (["report", "-t", str(tokdir), "--against", str(tokdir), "--eval", str(corpus), "-o", str(tmp / "r.html")],
         "report on"),
    ]


def test_quiet_leaves_stderr_empty_and_without_it_every_command_sums_up(tmp_path, tokdir, corpus, capsys):
    for argv, words in _quiet_cases(tmp_path, tokdir, corpus):
        code, err = run(argv, capsys)
        assert code == 0 and words in err, (argv, err)
        for quiet in (["-q", *argv], [argv[0], "-q", *argv[1:]], [argv[0], "--quiet", *argv[1:]]):
            code, err = run(quiet, capsys)
            assert (code, err) == (0, ""), quiet
