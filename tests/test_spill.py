"""Counting under a memory budget (bpe_fast/spill.py): counters past the budget write sorted runs, a native k-way
merge adds them up (bpe_fast._runs), and the merge engine lays the words out from the merged run
(MergeEngine.from_run). Checked against plain Python (a reader of the format written out below, a Counter's
sum) and against the unspilled path and the oracle trainer: the merges must be the same for any budget."""
import glob
import os
import struct
import tempfile
import warnings
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from bpe_fast import GPT2_PATTERN, GPT4_PATTERN, train_bpe
from bpe_fast import spill as spill_module
from bpe_fast._runs import merge_runs
from bpe_fast._scan import PretokenCounter
from bpe_fast._train import MergeEngine
from bpe_fast.spill import BUDGET_ENV, Spill, count_budget, merged_run
from bpe_fast.train import counts_to_arrays

from corpora import EOT, make_corpus, write
from train_oracle import oracle_count_pretokens, oracle_train_bpe

MAGIC = b"BPERUN1\n"


def read_run(path):
    """The entries [(key, count), ...] of a run file, read by plain Python from the format in _runs.pxd."""
    data = open(path, "rb").read()
    assert data[:8] == MAGIC
    entries, key_bytes = struct.unpack_from("<QQ", data, 8)
    out, at = [], 24
    while at < len(data):
        length, count = struct.unpack_from("<Iq", data, at)
        out.append((data[at + 12:at + 12 + length], count))
        at += 12 + length
    assert at == len(data) and len(out) == entries and sum(len(k) for k, _ in out) == key_bytes
    return out


def write_run(path, entries, *, entries_in_header=None, key_bytes=None):
    """A run file of the entries [(key, count), ...] as given (in any order: for corrupt runs)."""
    body = b"".join(struct.pack("<Iq", len(k), c) + k for k, c in entries)
    header = MAGIC + struct.pack("<QQ", len(entries) if entries_in_header is None else entries_in_header,
                                 sum(len(k) for k, _ in entries) if key_bytes is None else key_bytes)
    with open(path, "wb") as f:
        f.write(header + body)


def table_of(counts):
    """(tokens, offsets, counts) arrays of a dict {bytes: int}, in its order."""
    keys = list(counts)
    offsets = np.zeros(len(keys) + 1, dtype=np.int64)
    np.cumsum([len(k) for k in keys], out=offsets[1:])
    return (np.frombuffer(b"".join(keys), dtype=np.uint8).copy(), offsets,
            np.array([counts[k] for k in keys], dtype=np.int64))


def spilled(counts, path):
    """counts (a dict) written as a run at path by a native counter (PretokenCounter.spill); the counter after."""
    counter = PretokenCounter(None, 0)
    if counts:
        counter.add_arrays(*table_of(counts))
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC)
    try:
        assert counter.spill(fd) == (len(counts), 0)
    finally:
        os.close(fd)
    return counter


def merged(paths, out):
    """merge_runs of the run files at paths into out: its result tuple."""
    fds = [os.open(p, os.O_RDONLY) for p in paths]
    out_fd = os.open(out, os.O_RDWR | os.O_CREAT | os.O_TRUNC)
    try:
        return merge_runs(fds, out_fd)
    finally:
        for fd in fds + [out_fd]:
            os.close(fd)


# ---- the runs and their merge ----------------------------------------------------------------------

def test_spill_writes_a_sorted_run_and_empties_the_counter(tmp_path):
    counter = spilled({b"ab": 2, b"a": 5, b"": 1, b"\xff": 3, b"a\x00": 4}, tmp_path / "r")
    assert len(counter) == 0 and counter.memory() < 100_000
    # bytes order, as Python sorts bytes: a prefix before what extends it, b"\x00" before b"b"
    assert read_run(tmp_path / "r") == [(b"", 1), (b"a", 5), (b"a\x00", 4), (b"ab", 2), (b"\xff", 3)]


def test_k_way_merge_worked_example(tmp_path):
    # run 1: a 5, ab 2; run 2: a 1, b 4; run 3 empty -> a 6 (summed), ab 2, b 4
    write_run(tmp_path / "1", [(b"a", 5), (b"ab", 2)])
    write_run(tmp_path / "2", [(b"a", 1), (b"b", 4)])
    write_run(tmp_path / "3", [])
    result = merged([tmp_path / "1", tmp_path / "2", tmp_path / "3"], tmp_path / "m")
    # (bad, problem, err, write_err, distinct, pretokens, pretoken_bytes, longest)
    assert result == (-1, 0, 0, 0, 3, 12, 6 + 4 + 4, 2)
    assert read_run(tmp_path / "m") == [(b"a", 6), (b"ab", 2), (b"b", 4)]


keys = st.binary(min_size=0, max_size=20) | st.sampled_from([b"a" * n for n in range(12)] + [b"\x00" * 9, b"\xff"])


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(runs=st.lists(st.dictionaries(keys, st.integers(1, 2 ** 40), max_size=30), min_size=0, max_size=7))
def test_merge_of_runs_is_their_sum(tmp_path, runs):
    with tempfile.TemporaryDirectory(dir=tmp_path) as folder:
        paths = [os.path.join(folder, f"r{k}") for k in range(len(runs))]
        for counts, path in zip(runs, paths):
            spilled(counts, path)
        want = Counter()
        for counts in runs:
            want.update(counts)
        result = merged(paths, os.path.join(folder, "m"))
        got = read_run(os.path.join(folder, "m"))
    assert got == sorted(want.items())
    assert result == (-1, 0, 0, 0, len(want), sum(want.values()), sum(len(k) * c for k, c in want.items()),
                      max(map(len, want), default=0))


@pytest.mark.parametrize("entries,kwargs,says", [
    ([(b"b", 1), (b"a", 1)], {}, "out of order"),
    ([(b"a", 1), (b"a", 1)], {}, "out of order"),
    ([(b"a", 0)], {}, "count of 0 or less"),
    ([(b"a", -3)], {}, "count of 0 or less"),
    ([(b"a", 1)], {"entries_in_header": 2}, "cut short"),
    ([(b"a", 1), (b"b", 1)], {"entries_in_header": 1}, "bytes after its last entry"),
    ([(b"ab", 1)], {"key_bytes": 1}, "key bytes its header says"),
])
def test_a_corrupt_run_is_refused_naming_its_file(tmp_path, entries, kwargs, says):
    write_run(tmp_path / "good", [(b"a", 1), (b"zz", 2)])
    write_run(tmp_path / "bad", entries, **kwargs)
    spill = Spill(str(tmp_path), 1)
    spill.runs = [str(tmp_path / "good"), str(tmp_path / "bad")]
    with pytest.raises(ValueError, match=f"{tmp_path / 'bad'}: this run of counts .*{says}"):
        merged_run(spill)
    assert sorted(os.listdir(tmp_path)) == ["bad", "good"]      # (no merged file left)


def test_a_file_that_is_no_run_or_is_cut_is_refused(tmp_path):
    (tmp_path / "r").write_bytes(b"NOTARUN!" + bytes(16))
    spill = Spill(str(tmp_path), 1)
    spill.runs = [str(tmp_path / "r")]
    with pytest.raises(ValueError, match="r: this run of counts is not a run of counts"):
        merged_run(spill)
    write_run(tmp_path / "r", [(b"abc", 1), (b"abd", 2)])
    data = (tmp_path / "r").read_bytes()
    (tmp_path / "r").write_bytes(data[:-2])
    with pytest.raises(ValueError, match="r: this run of counts is cut short"):
        merged_run(spill)


def test_engine_refuses_a_corrupt_run_naming_it(tmp_path):
    write_run(tmp_path / "r", [(b"ab", 2), (b"aa", 1)])
    fd = os.open(tmp_path / "r", os.O_RDONLY)
    try:
        with pytest.raises(ValueError, match="the-name: this run of counts has its keys out of order"):
            MergeEngine.from_run(fd, name="the-name")
    finally:
        os.close(fd)


# ---- the engine laid out from a run ---------------------------------------------------------------

def engine_results(engine, n):
    engine.run(n, 1)
    return engine.merges(), engine.merge_counts()


def from_run(counts, path, **options):
    spilled(counts, path)
    fd = os.open(path, os.O_RDONLY)
    try:
        return MergeEngine.from_run(fd, **options)
    finally:
        os.close(fd)


words = st.dictionaries(st.binary(min_size=1, max_size=8).filter(lambda b: b.count(b[:1]) < 6)
                        | st.sampled_from([b"aaaa", b"abab", b"aab", b"ba", b"a", b"b"]),
                        st.integers(1, 5) | st.integers(65530, 70000) | st.sampled_from([1, 2, 65535, 65536]),
                        max_size=40)


@settings(max_examples=80, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(counts=words, n=st.integers(0, 60), narrow=st.booleans(), max_token_length=st.sampled_from([None, 2, 3]),
       positions_budget=st.sampled_from([None, 0, 3, 40]))
def test_engine_from_run_makes_the_merges_of_the_arrays(tmp_path, counts, n, narrow, max_token_length,
                                                        positions_budget):
    # (positions_budget: the engine of a run under a positions budget, as a 5 GB corpus has both, against the
    # unbounded engine of the arrays)
    options = dict(max_token_length=max_token_length, narrow=narrow, max_merges=n)
    want = engine_results(MergeEngine(*table_of(counts), **options), n)
    got = engine_results(from_run(counts, tmp_path / "r", positions_budget=positions_budget, **options), n)
    assert got == want


def test_engine_from_run_of_the_real_words(tmp_path):
    text = make_corpus(3, n_words=6000, specials=[EOT])
    counts = dict(oracle_count_pretokens(text, [EOT], GPT2_PATTERN))
    want = engine_results(MergeEngine(*counts_to_arrays(counts), max_merges=300), 300)
    got = engine_results(from_run(counts, tmp_path / "r", max_merges=300), 300)
    assert got == want and len(got[0]) == 300
    bounded = from_run(counts, tmp_path / "b", max_merges=300, positions_budget=500)
    assert engine_results(bounded, 300) == want
    memory = bounded.memory()
    assert memory["bounded"] and memory["rescans"] > 0 and memory["mismatched"] == 0
    empty = from_run({}, tmp_path / "e", max_merges=10)       # no word: no merge, as for empty arrays
    assert engine_results(empty, 10) == ([], [])


# ---- train_bpe under a tiny budget ---------------------------------------------------------------------

@pytest.fixture
def runs_written(monkeypatch):
    """The runs train_bpe merged (a spy on merged_run, which gets every process's): [paths]."""
    import importlib
    train_module = importlib.import_module("bpe_fast.train")
    written = []
    real = train_module.merged_run

    def spy(spill):
        written.extend(spill.runs)
        return real(spill)

    monkeypatch.setattr(train_module, "merged_run", spy)
    return written


def scratch_folders():
    """The folders of runs (spill.spill_folder's, in TMPDIR's folder). (Not the workers' tables' folders in
    /dev/shm: other runs of bpe_fast on the machine make and remove theirs meanwhile; their removal is tested
    elsewhere.)"""
    return set(glob.glob(os.path.join(tempfile.gettempdir(), "bpe_fast-runs-*")))


@pytest.mark.parametrize("num_processes", [1, 2, 3])
@pytest.mark.parametrize("share", [0, 3, 12])
@pytest.mark.parametrize("pattern", [GPT2_PATTERN, GPT4_PATTERN, r"\w+|\s+|[^\w\s]+"], ids=["gpt2", "gpt4", "custom"])
def test_train_bpe_spilled_equals_unspilled_and_oracle(tmp_path, monkeypatch, runs_written, num_processes, share,
                                                       pattern):
    # budgets: 1 byte (a run a unit counted), a third and a twelfth of the whole table's memory
    from bpe_fast.pretokenize import ChunkCounter
    specials = [EOT]
    text = make_corpus(5, n_words=20_000, specials=specials)
    text += " ".join(f"w{k}" for k in range(3000))          # more distinct words: a table to spill in parts
    path = write(tmp_path, text)
    budget = ChunkCounter(specials, pattern).add(text.encode()).memory() // share if share else 1
    before = scratch_folders()
    seen = []                                       # the runs folders there are when the merges are reported
    want = train_bpe(path, 256 + 1 + 200, specials, num_processes=num_processes, pattern=pattern, chunk_bytes=4000,
                     progress=lambda stage, done, total: stage == "merge" and seen.append(scratch_folders() - before))
    assert not runs_written                         # the default budget: nothing spilled
    assert seen and not any(seen)                   # and its empty folder was gone before the merges
    monkeypatch.setenv(BUDGET_ENV, str(budget))
    got = train_bpe(path, 256 + 1 + 200, specials, num_processes=num_processes, pattern=pattern, chunk_bytes=4000)
    assert len(runs_written) >= 2                   # it did spill, more than once
    assert got == want
    assert got.training == want.training            # the corpus's figures, from the merge, and the merge counts
    assert got == oracle_train_bpe(text, 256 + 1 + 200, specials, pattern)
    assert scratch_folders() <= before              # no folder, no run left
    assert not any(os.path.exists(p) for p in runs_written)


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(text=st.lists(st.sampled_from(list("aab bc\n\r\t'sé😀中1 ") + ["<|eot|>", "ab", "\r\n", "aaaa "]),
                     max_size=300).map("".join),
       extra=st.integers(0, 40), num_processes=st.sampled_from([1, 2]), budget=st.sampled_from([1, 3000]),
       chunk_bytes=st.sampled_from([8, 40, 200]))
def test_random_corpora_spilled_match_oracle(tmp_path, text, extra, num_processes, budget, chunk_bytes):
    path = write(tmp_path, text)
    vocab_size = 256 + 1 + extra
    want = oracle_train_bpe(text, vocab_size, ["<|eot|>"], GPT2_PATTERN)
    os.environ[BUDGET_ENV] = str(budget)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = train_bpe(path, vocab_size, ["<|eot|>"], num_processes=num_processes, chunk_bytes=chunk_bytes)
    finally:
        del os.environ[BUDGET_ENV]
    assert got == want


def test_budget_setting(monkeypatch):
    monkeypatch.delenv(BUDGET_ENV, raising=False)
    assert count_budget() == spill_module.DEFAULT_COUNT_BUDGET
    monkeypatch.setenv(BUDGET_ENV, "12345")
    assert count_budget() == 12345
    for bad in ("0", "-5", "1e9", "lots"):
        monkeypatch.setenv(BUDGET_ENV, bad)
        with pytest.raises(ValueError, match=BUDGET_ENV):
            count_budget()


def test_a_run_that_cannot_be_written_names_the_folder(tmp_path):
    counter = PretokenCounter(None, 0).add_arrays(*table_of({b"ab": 1}))
    spill = Spill(str(tmp_path), 1)
    bad = type("Counter", (), {"spill": lambda self, fd, keep=False: (1, 28)})()      # ENOSPC
    with pytest.raises(OSError, match=f"writing a run of counts in the temporary folder {tmp_path}"):
        spill.write(bad)
    assert spill.write(counter) in spill.runs


# ---- faults while spilling: a signal, a killed worker -------------------------------------------------------

SLOW_PATTERN = r"\w+|[^\w\s]+|\s+"      # counted by `regex`: the workers stay busy for seconds
HANG = 300


@pytest.fixture(scope="module")
def big_corpus(tmp_path_factory):
    from bpe_fast.synthetic import generate
    path = tmp_path_factory.mktemp("big") / "big.txt"
    generate(path, 40_000_000, seed=2)
    return path


def _start_spilling(tmp_path, corpus):
    """`bpe-fast train` of corpus in 2 processes under a tiny budget, once it has written a run: (the process,
    its worker's pids, the folder of its runs)."""
    import subprocess
    import signal
    import sys
    import time
    from proctable import children

    def from_a_terminal():
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    before = scratch_folders()
    env = dict(os.environ, **{BUDGET_ENV: "100000"})
    proc = subprocess.Popen([sys.executable, "-m", "bpe_fast", "train", str(corpus), "--vocab-size", "500",
                             "--pattern", SLOW_PATTERN, "--special-token", EOT, "--processes", "2",
                             "-o", str(tmp_path / "tok")], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=from_a_terminal, env=env)
    deadline = time.time() + HANG
    while time.time() < deadline and proc.poll() is None:
        folders = [f for f in scratch_folders() - before if glob.glob(os.path.join(f, "run-*.bin"))]
        kids = children(proc.pid)
        if folders and kids:
            return proc, kids, folders[0]
        time.sleep(0.02)
    proc.kill()
    raise AssertionError(f"no run was written (exit {proc.poll()}): {proc.communicate()[1]}")


def _assert_gone(pids, folder):
    import time
    from proctable import alive
    deadline = time.time() + 60
    while time.time() < deadline and any(alive(p) for p in pids):
        time.sleep(0.05)
    assert not [p for p in pids if alive(p)], "worker processes outlived the command"
    assert not os.path.exists(folder), os.listdir(folder)


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads the process table in /proc")
def test_an_interrupt_while_spilling_leaves_no_run_and_no_process(tmp_path, big_corpus):
    import signal
    proc, kids, folder = _start_spilling(tmp_path, big_corpus)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=HANG)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    _assert_gone(kids, folder)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads the process table in /proc")
def test_a_worker_killed_while_spilling_fails_the_run_fast(tmp_path, big_corpus):
    import signal
    proc, kids, folder = _start_spilling(tmp_path, big_corpus)
    os.kill(kids[0], signal.SIGKILL)
    _, err = proc.communicate(timeout=HANG)
    assert proc.returncode == 1 and "worker process died" in err, err
    _assert_gone(kids, folder)
    assert list(tmp_path.iterdir()) == []
