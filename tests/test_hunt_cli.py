"""The command line as a careless user meets it: each case a subprocess run from outside the repository (from its
root, `-m bpe_fast` would import the source folder), its exit code, its one line on stderr, its outputs."""
import os
import resource
import shutil
import subprocess
import sys
import time

import pytest

CLI = [sys.executable, "-m", "bpe_fast"]


def _limit_file_size():
    # a guard for the code before the fix, which wrote until the disk was full: a file past 8 MB fails (EFBIG)
    resource.setrlimit(resource.RLIMIT_FSIZE, (8 << 20, 8 << 20))


def _cli(args, cwd, env=None, timeout=120, **kwargs):
    return subprocess.run(CLI + list(args), capture_output=True, text=True, cwd=cwd, timeout=timeout,
                          env=dict(os.environ, **(env or {})), **kwargs)


def test_synth_larger_than_the_free_space_is_refused_before_writing(tmp_path):
    free = shutil.disk_usage(tmp_path).free
    size = str(free * 2)            # bytes: twice what the folder's file system has free
    start = time.monotonic()
    proc = _cli(["synth", "--size", size, "-o", "big.txt"], tmp_path, preexec_fn=_limit_file_size)
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"bpe-fast: --size {size}:") and "free" in lines[0], proc.stderr
    assert time.monotonic() - start < 60
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("where", ["flag", "flag after", "environment"])
def test_a_number_of_processes_too_large_is_one_line(tmp_path, where):
    # 99999999999 processes: OverflowError from multiprocessing's semaphore, a traceback, after the
    # encoding threads or counting processes for it were being started
    (tmp_path / "c.txt").write_text("some text " * 500_000, encoding="utf-8")     # 5 MB: counted by workers
    big = "99999999999"
    args, env = ["count", "c.txt", "-o", "c.npz"], {}
    if where == "flag":
        args = ["-j", big] + args
    elif where == "flag after":
        args = args + ["-j", big]
    else:
        env = {"BPE_FAST_NUM_PROCESSES": big}
    proc = _cli(args, tmp_path, env=env)
    lines = proc.stderr.splitlines()
    assert proc.returncode in (1, 2) and "Traceback" not in proc.stderr, proc.stderr
    name = "BPE_FAST_NUM_PROCESSES" if where == "environment" else "-j"
    assert any(name in line and big in line for line in lines), proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.txt"]


def test_encode_of_one_input_into_a_folder_that_exists(tmp_path):
    # README and --help: a folder (one .npy a shard and index.json) for several inputs, -o ending with /, or a
    # folder that exists already (they said only the first two)
    (tmp_path / "c.txt").write_text("some text\n" * 50, encoding="utf-8")
    (tmp_path / "out").mkdir()
    proc = _cli(["-q", "encode", "-t", "cl100k_base", "c.txt", "-o", "out"], tmp_path)
    if proc.returncode and "not on this machine" in proc.stderr:
        pytest.skip("cl100k_base's ranks are not on this machine")
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["c.npy", "index.json"]
    help_text = _cli(["encode", "--help"], tmp_path).stdout
    assert "is a folder already" in " ".join(help_text.split())


def test_from_counts_given_a_token_array_or_a_text_file_says_what_it_is(tmp_path):
    # np.load gave a .npy array, and `with` on it failed: "(TypeError: 'numpy.ndarray' object does not support
    # the context manager protocol)"; a text file: "(ValueError: This file contains pickled (object) data...)"
    import numpy as np
    np.save(tmp_path / "tokens.npy", np.arange(5, dtype=np.uint16))
    (tmp_path / "corpus.txt").write_text("Once upon a time\n", encoding="utf-8")
    for name, what in (("tokens.npy", "a .npy array"), ("corpus.txt", "not a .npz archive")):
        proc = _cli(["train", "--from-counts", name, "--vocab-size", "300", "-o", "tok"], tmp_path)
        assert proc.returncode == 1
        assert proc.stderr.splitlines() == [f"bpe-fast: {name}: not a bpe_fast counts file ({what}; counts are the "
                                            f".npz archive bpe-fast count writes)"], proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.txt", "tokens.npy"]


def test_from_counts_given_a_foreign_npz_says_what_is_missing_in_one_line(tmp_path):
    # an .npz not written by bpe_fast: NumPy's own words in brackets ("(ValueError: Object arrays cannot be loaded
    # when allow_pickle=False)", "(BadZipFile: File is not a zip file)"), or a traceback (AttributeError: 'bytes'
    # object has no attribute 'dtype') for a member that is not a .npy array
    import zipfile

    import numpy as np
    np.savez(tmp_path / "foreign.npz", a=np.arange(3), b=np.arange(2))
    np.savez(tmp_path / "pickled.npz", a=np.array([{"x": 1}], dtype=object))
    raw = (tmp_path / "foreign.npz").read_bytes()
    (tmp_path / "cut.npz").write_bytes(raw[:len(raw) // 2])
    with zipfile.ZipFile(tmp_path / "raw.npz", "w") as z:
        z.writestr("format.npy", "hello")
    with zipfile.ZipFile(tmp_path / "header.npz", "w") as z:
        z.writestr("format.npy", b"\x93NUMPY\x01\x00garbage")
    tail = "; counts are the .npz archive bpe-fast count writes)"
    for name, what in (("foreign.npz", "an .npz archive of 'a', 'b', without the 'format' entry"),
                       ("pickled.npz", "an .npz archive of 'a', without the 'format' entry"),
                       ("cut.npz", "a damaged or truncated .npz archive"),
                       ("raw.npz", "its 'format' entry is not a .npy array"),
                       ("header.npz", "its 'format' entry is not a readable .npy array")):
        proc = _cli(["train", "--from-counts", name, "--vocab-size", "300", "-o", "tok"], tmp_path)
        assert proc.returncode == 1
        assert proc.stderr.splitlines() == [f"bpe-fast: {name}: not a bpe_fast counts file ({what}{tail}"], \
            proc.stderr
    assert not (tmp_path / "tok").exists()


def test_export_eos_token_not_a_special_token_names_the_flag(tmp_path):
    (tmp_path / "c.txt").write_text("some text\n" * 50, encoding="utf-8")
    assert _cli(["-q", "train", "c.txt", "--vocab-size", "260", "--special-token", "<|eot|>", "-o", "tok"],
                tmp_path).returncode == 0
    proc = _cli(["export", "-t", "tok", "--hf-dir", "hf", "--eos-token", "</s>"], tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == ["bpe-fast: --eos-token '</s>': not one of the special tokens of tok "
                                        "(['<|eot|>'])"], proc.stderr
    assert not (tmp_path / "hf").exists()


def test_train_summary_longest_tokens_are_the_same_every_run(tmp_path):
    # they were taken from a set of bytes sorted by length: tokens of the same length came in the order of
    # Python's randomized hash, so the same command printed another list each run
    words = " ".join(f"w{chr(97 + i % 26)}{chr(97 + i // 26 % 26)}xyz" for i in range(200))
    (tmp_path / "c.txt").write_text((words + "\n") * 20, encoding="utf-8")
    lines = []
    for seed in ("1", "2", "3"):
        proc = _cli(["train", "c.txt", "--vocab-size", "700", "-o", f"tok{seed}"], tmp_path,
                    env={"PYTHONHASHSEED": seed})
        assert proc.returncode == 0, proc.stderr
        lines.append([line for line in proc.stderr.splitlines() if line.startswith("longest tokens: ")])
    assert lines[0] and lines[0] == lines[1] == lines[2]


def test_encode_to_stdout_on_a_terminal_is_refused(tmp_path):
    # the .npy's binary bytes went to the terminal (as gzip and zstd refuse to do), and worked as escape sequences
    import pty
    (tmp_path / "c.txt").write_text("some text\n" * 50, encoding="utf-8")
    leader, follower = pty.openpty()
    try:
        proc = subprocess.run(CLI + ["-q", "encode", "-t", "cl100k_base", "c.txt", "-o", "-"], stdout=follower,
                              stderr=subprocess.PIPE, text=True, cwd=tmp_path, timeout=120)
        os.set_blocking(leader, False)
        try:
            shown = os.read(leader, 1 << 16)
        except (BlockingIOError, OSError):
            shown = b""
    finally:
        os.close(follower)
        os.close(leader)
    if proc.returncode and "not on this machine" in proc.stderr:
        pytest.skip("cl100k_base's ranks are not on this machine")
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == ["bpe-fast: -o -: stdout is a terminal, and the tokens are a binary .npy; "
                                        "redirect it (> tokens.npy) or give -o FILE"], proc.stderr
    assert b"NUMPY" not in shown


def test_progress_of_an_empty_input_ends_at_100_percent(tmp_path):
    # "pre-tokenized 0 B / 0 B (0%)": all of nothing is done, which is 100%
    (tmp_path / "empty.txt").write_bytes(b"")
    proc = _cli(["count", "empty.txt", "-o", "c.npz"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    progress = [line for line in proc.stderr.splitlines() if line.startswith("pre-tokenized")]
    assert progress and all("0 B / 0 B (100%)" in line for line in progress), proc.stderr


@pytest.mark.parametrize("kind", ["stdin", "gzip"])
def test_progress_of_a_streamed_input_ends_with_all_it_read(tmp_path, kind):
    # read as it comes (no total), the progress line was drawn at the start and then only every 5 s (not a
    # terminal): a run shorter than that showed "pre-tokenized 0 B  0 B/s" and nothing after it
    import gzip
    text = ("Once upon a time there was a cat. " * 60_000).encode()       # 2,040,000 bytes
    args, stdin = ["count", "-", "-o", "c.npz"], text
    if kind == "gzip":
        (tmp_path / "c.txt.gz").write_bytes(gzip.compress(text))
        args, stdin = ["count", "c.txt.gz", "-o", "c.npz"], None
    proc = subprocess.run(CLI + args, input=stdin, capture_output=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    progress = [line for line in proc.stderr.decode().splitlines() if line.startswith("pre-tokenized")]
    assert progress and progress[-1].startswith("pre-tokenized 2.0 MB "), proc.stderr


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc, where nothing can be made")
def test_an_output_folder_that_cannot_be_made_names_the_flag(tmp_path):
    # 'encode -o /proc/xd/' and 'export --hf-dir /proc/hfd' said "/proc/xd/: No such file or directory" after
    # loading the tokenizer (os.makedirs's words, naming no flag), where train -o and every output file say
    # which flag and why before any work
    (tmp_path / "c.txt").write_text("some text\n" * 50, encoding="utf-8")
    assert _cli(["-q", "train", "c.txt", "--vocab-size", "260", "-o", "tok"], tmp_path).returncode == 0
    for args, given in ((["encode", "-t", "tok", "c.txt", "-o", "/proc/bpe-fast-xd/"], "-o /proc/bpe-fast-xd/"),
                        (["encode", "-t", "tok", "c.txt", "tok/vocab.json", "-o", "/proc/bpe-fast-xd"],
                         "-o /proc/bpe-fast-xd"),
                        (["export", "-t", "tok", "--hf-dir", "/proc/bpe-fast-hfd"], "--hf-dir /proc/bpe-fast-hfd")):
        proc = _cli(["-q", *args], tmp_path)
        assert proc.returncode == 1
        lines = proc.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"bpe-fast: {given}: cannot make anything in /proc ("), \
            proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.txt", "tok"]


def _unreadable_runner():
    """A prefix to run the command line without the power to read a file of mode 000: none needed but chmod when
    not root; as root, setpriv dropping CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH (skipped without setpriv)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("root reads a file of mode 000, and setpriv (to drop that power) is not here")
    caps = "-dac_override,-dac_read_search"
    return [setpriv, f"--bounding-set={caps}", f"--inh-caps={caps}", "--"]


def test_an_unreadable_input_encoded_into_a_folder_is_named_as_given(tmp_path):
    # 'encode -o DIR/' named it by its absolute path ('/tmp/.../secret.txt: Permission denied'), where 'encode -o
    # FILE', count and train name it as given ('secret.txt: Permission denied')
    prefix = _unreadable_runner()
    (tmp_path / "c.txt").write_text("some text\n" * 50, encoding="utf-8")
    assert _cli(["-q", "train", "c.txt", "--vocab-size", "260", "-o", "tok"], tmp_path).returncode == 0
    secret = tmp_path / "secret.txt"
    secret.write_text("hidden text\n", encoding="utf-8")
    secret.chmod(0)
    for args in (["count", "secret.txt", "-o", "c.npz"], ["encode", "-t", "tok", "secret.txt", "-o", "x.npy"],
                 ["encode", "-t", "tok", "c.txt", "secret.txt", "-o", "out/"]):
        proc = subprocess.run(prefix + CLI + ["-q", *args], capture_output=True, text=True, cwd=tmp_path,
                              timeout=120)
        assert proc.returncode == 1
        assert proc.stderr.splitlines() == ["bpe-fast: secret.txt: Permission denied"], (args, proc.stderr)
    assert not (tmp_path / "c.npz").exists() and not (tmp_path / "x.npy").exists()


@pytest.mark.parametrize("args, flag", [
    (["export", "-t", "tok", "--hf", ""], "--hf"),            # a traceback (AttributeError: 'NoneType' ...)
    (["export", "-t", "tok", "--hf-dir", ""], "--hf-dir"),    # a traceback too
    (["train", "c.txt", "--vocab-size", "300", "--continue-from", "", "-o", "t"], "--continue-from"),  # ignored
    (["report", "-t", "tok", "--eval", "c.txt", "-o", "r.html", "--against", ""], "--against"),         # ignored
    (["show", "-t", "tok", "hi", "--html", ""], "--html"),   # ignored: the view went to stdout
    (["report", "-t", "tok", "--eval", "c.txt", "-o", "r.html", "--png", ""], "--png"),
    (["count", "c.txt", "-o", ""], "-o"),                     # "[Errno 2] cannot be replaced: ...: ''", after the work
    (["encode", "-t", "tok", "c.txt", "-o", ""], "-o"),
    (["decode", "-t", "tok", "ids.npy", "-o", ""], "-o"),
    (["synth", "--size", "1KB", "-o", ""], "-o"),
    (["train", "c.txt", "--vocab-size", "300", "-o", ""], "-o"),
    (["train", "--from-counts", "", "--vocab-size", "300", "-o", "t"], "--from-counts"),
    (["count", "", "-o", "c.npz"], "CORPUS"),                # "[Errno 2] corpus file not found: ''"
    (["encode", "-t", "tok", "", "-o", "x.npy"], "INPUT"),
    (["decode", "-t", "tok", "", "-o", "x.txt"], "TOKENS.npy"),
    (["decode", "-t", "", "ids.npy", "-o", "x.txt"], "-t"),
])
def test_an_empty_path_is_refused_naming_its_flag(tmp_path, args, flag):
    # an empty string given for a file or folder ("$UNSET", a script's missing variable) was a traceback, was
    # ignored (the option taken as not given: --continue-from "" trained from scratch), or failed with OS words
    # about '' after the work
    (tmp_path / "c.txt").write_text("some text\n" * 50, encoding="utf-8")
    assert _cli(["-q", "train", "c.txt", "--vocab-size", "260", "-o", "tok"], tmp_path).returncode == 0
    assert _cli(["-q", "encode", "-t", "tok", "c.txt", "-o", "ids.npy"], tmp_path).returncode == 0
    proc = _cli(["-q", *args], tmp_path)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.splitlines() == [f"bpe-fast: {flag} '': an empty path; give a file or folder name"], \
        proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.txt", "ids.npy", "tok"]


@pytest.mark.parametrize("args", [["count", "c.txt", "-o", "c.npz"], ["encode", "-t", "tok", "c.txt", "-o", "out/"]])
def test_an_empty_dask_scheduler_address_is_refused(tmp_path, args):
    # --dask-scheduler '' was taken for no --dask-scheduler: the corpus was counted (encoded) here, exit 0
    (tmp_path / "c.txt").write_text("some text\n" * 50, encoding="utf-8")
    assert _cli(["-q", "train", "c.txt", "--vocab-size", "260", "-o", "tok"], tmp_path).returncode == 0
    proc = _cli(["-q", *args, "--dask-scheduler", ""], tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == ["bpe-fast: --dask-scheduler '': an empty address; give the scheduler's "
                                        "(such as tcp://host:8786)"], proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.txt", "tok"]


@pytest.mark.parametrize("args, folder, name, flag", [
    (["train", "c.txt", "--vocab-size", "300", "-o", "out"], "out", "vocab.json", "-o"),
    (["export", "-t", "tok", "--hf-dir", "out"], "out", "tokenizer.json", "--hf-dir"),
    (["encode", "-t", "tok", "c.txt", "d.txt", "-o", "out/"], "out", "d.npy", None),
    (["encode", "-t", "tok", "c.txt", "d.txt", "-o", "out/"], "out", "index.json", None),
])
def test_an_output_file_that_is_a_folder_already_is_refused_before_the_work(tmp_path, args, folder, name, flag):
    # train and export trained (exported), then failed ('out/vocab.json: Is a directory'); encode wrote the
    # shards before, then said "encoding d.txt into /tmp/.../out/d.npy failed: IsADirectoryError: [Errno 21] ..."
    (tmp_path / "c.txt").write_text("some text\n" * 50, encoding="utf-8")
    (tmp_path / "d.txt").write_text("more text\n" * 50, encoding="utf-8")
    assert _cli(["-q", "train", "c.txt", "--vocab-size", "260", "-o", "tok"], tmp_path).returncode == 0
    (tmp_path / folder / name).mkdir(parents=True)
    proc = _cli(["-q", *args], tmp_path)
    assert proc.returncode == 1
    given = os.path.join(folder, name)
    assert proc.stderr.splitlines() == [f"bpe-fast: {f'{flag} {folder}: ' if flag else ''}{given} is a folder; "
                                        f"the output of that name cannot replace it"], proc.stderr
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if "tok" not in p.parts) == \
        sorted(["c.txt", "d.txt", folder, given])


@pytest.mark.parametrize("output", ["tok", "./tok/", "link"])
def test_train_into_the_tokenizer_it_continues_is_refused(tmp_path, output):
    # --continue-from's files are an input, as the corpus is: 'train --continue-from tok -o tok' replaced the
    # tokenizer it extended (the one the tokens encoded with it need), where the module's rule is that an output
    # that is one of the command's inputs is refused before any work
    (tmp_path / "c.txt").write_text("some text and more text\n" * 50, encoding="utf-8")
    assert _cli(["-q", "train", "c.txt", "--vocab-size", "260", "-o", "tok"], tmp_path).returncode == 0
    (tmp_path / "link").symlink_to("tok")
    before = {p.name: p.read_bytes() for p in (tmp_path / "tok").iterdir()}
    proc = _cli(["-q", "train", "c.txt", "--vocab-size", "280", "--continue-from", "tok", "-o", output], tmp_path)
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("bpe-fast: tok/vocab.json is an input and would be overwritten "
                                                   "by the output (-o "), proc.stderr
    assert {p.name: p.read_bytes() for p in (tmp_path / "tok").iterdir()} == before


def test_an_unreadable_parquet_file_is_named_as_any_unreadable_input(tmp_path):
    # it was "x.parquet: not a Parquet file (Failed to open local file ... Permission denied)" (helper-121)
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    prefix = _unreadable_runner()
    pq.write_table(pa.table({"text": ["some text"] * 10}), tmp_path / "secret.parquet")
    (tmp_path / "secret.parquet").chmod(0)
    proc = subprocess.run(prefix + CLI + ["-q", "count", "secret.parquet", "-o", "c.npz"], capture_output=True,
                          text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == ["bpe-fast: secret.parquet: Permission denied"], proc.stderr
    assert not (tmp_path / "c.npz").exists()
