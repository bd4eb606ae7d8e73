"""Bad arguments of the benchmark scripts (benchmarks/ab.py, icount.py, compare.py): each is refused with one
line naming the option, before anything is built or measured (no traceback, no benchmark lost at the end)."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def run(script, args, cwd, timeout=600):
    proc = subprocess.run([sys.executable, str(BENCHMARKS / script), *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)
    return proc.returncode, proc.stdout, proc.stderr


def assert_one_line_error(status, out, err, script, words):
    assert "Traceback" not in err, err[-3000:]
    assert status == 2, (status, err[-3000:])
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"{script}: error: "), last
    for w in words:
        assert w in last, (w, last)
    assert "building" not in err and "counted" not in err and "[compare] run" not in err


@pytest.mark.parametrize("args, words", [
    (["--jobs", "-1", "WORKTREE", "WORKTREE", "--only", "count"], ["--jobs"]),
    (["--jobs", "0", "WORKTREE", "WORKTREE", "--only", "count"], ["--jobs"]),
    (["--out", "{tmp}/no/such/folder/ab.md", "WORKTREE", "WORKTREE", "--only", "count"], ["--out", "no/such/folder"]),
    (["--png", "{tmp}/no/such/folder/ab.png", "WORKTREE", "WORKTREE", "--only", "count"], ["--png", "no/such/folder"]),
    (["--corpus-bytes", "junk", "WORKTREE", "WORKTREE", "--only", "count"], ["junk"]),
    (["--against-version", "{whl}", "WORKTREE", "HEAD", "--only", "count"], ["--against-version", "HEAD"]),
])
def test_ab_bad_arguments(tmp_path, args, words):
    (tmp_path / "bpe_fast-0.0.1-py3-none-any.whl").write_bytes(b"")
    args = [a.replace("{tmp}", str(tmp_path)).replace("{whl}", str(tmp_path / "bpe_fast-0.0.1-py3-none-any.whl"))
            for a in args] + ["--rounds", "6", "--reps", "1"]
    assert_one_line_error(*run("ab.py", args, tmp_path), "ab.py", words)


@pytest.mark.parametrize("args, words", [
    (["--repeat", "-1"], ["--repeat"]),
    (["--repeat", "0"], ["--repeat"]),
    (["--jobs", "-1"], ["--jobs"]),
    (["--json", "{tmp}/no/such/folder/counts.json"], ["--json", "no/such/folder"]),
])
def test_icount_bad_arguments(tmp_path, args, words):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args] + ["--only", "count"]
    assert_one_line_error(*run("icount.py", args, tmp_path), "icount.py", words)


def test_icount_unreadable_baseline_is_one_line(tmp_path):
    bad = tmp_path / "icounts.json"
    bad.write_text("{not json")
    assert_one_line_error(*run("icount.py", ["--baseline", bad, "--only", "count"], tmp_path), "icount.py",
                          ["--baseline", str(bad)])


def test_icount_zero_count_in_the_baseline_is_one_line(tmp_path):
    """A baseline whose count of a hot path is 0 is refused up front, naming the hot path, before anything is
    measured (not a ZeroDivisionError once the counts are in)."""
    import json
    bad = tmp_path / "icounts.json"
    bad.write_text(json.dumps({"environment": {}, "inputs_sha256": "x", "counts": {"count": 0, "decode": 5}}))
    status, out, err = run("icount.py", ["--baseline", bad, "--only", "count"], tmp_path)
    assert_one_line_error(status, out, err, "icount.py", ["--baseline", "'count'", "0"])


@pytest.mark.parametrize("option", ["--out", "--png"])
def test_compare_unwritable_output_is_one_line(tmp_path, option):
    args = ["--size", "100KB", "--vocab-size", "300", "--encode-bytes", "50KB", "--repeat", "1", "--only", "encode",
            "--peers", "tiktoken", option, tmp_path / "no" / "such" / "folder" / "r.out"]
    assert_one_line_error(*run("compare.py", args, tmp_path), "compare.py", [option, "no/such/folder"])


def _compare_versions_line(tmp_path, pythonpath):
    code = "import compare; print(compare.versions()['bpe_fast'])"
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**__import__("os").environ, "PYTHONPATH": f"{pythonpath}:{BENCHMARKS}"})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_compare_names_the_commit_of_the_bpe_fast_it_measures(tmp_path):
    """The report's commit is that of the bpe_fast imported, never that of the checkout compare.py sits in when
    bpe_fast comes from elsewhere (an installed copy: no commit can be told)."""
    import shutil

    import bpe_fast
    package = Path(bpe_fast.__file__).resolve().parent
    tracked = subprocess.run(["git", "-C", str(package.parent), "ls-files", "--error-unmatch", "--",
                              "bpe_fast/__init__.py"], capture_output=True, text=True).returncode == 0
    line = _compare_versions_line(tmp_path, package.parent)
    if tracked:             # an in-place build in a checkout (this worktree): its commit
        head = subprocess.run(["git", "-C", str(package.parent), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True).stdout.strip()
        assert f"commit {head}" in line, line
    else:                   # installed (CI's venv, even inside the clone): no commit
        assert line.endswith(f"({package})"), line
    copy = tmp_path / "site"
    shutil.copytree(package, copy / "bpe_fast", ignore=shutil.ignore_patterns("__pycache__"))
    line = _compare_versions_line(tmp_path, copy)
    assert line.endswith(f"({copy / 'bpe_fast'})"), line


class _RecordingBenchmark:
    """Stands in for pytest-benchmark's fixture (run as it does: setup before every round, untimed) and records
    the Tokenizer each timed round uses: the bound method's owner or a Tokenizer among the arguments."""

    stats = None
    disabled = False

    def __init__(self, rounds=3):
        self.rounds, self.used, self.extra_info = rounds, [], {}

    def _record(self, fn, args):
        from bpe_fast import Tokenizer
        owners = [getattr(fn, "__self__", None), *args]
        self.used.extend(o for o in owners if isinstance(o, Tokenizer))

    def __call__(self, fn, *args, **kwargs):
        for _ in range(self.rounds):
            self._record(fn, args)
            result = fn(*args, **kwargs)
        return result

    def pedantic(self, fn, args=(), kwargs=None, setup=None, rounds=1, iterations=1, warmup_rounds=0):
        for _ in range(max(rounds, self.rounds) if setup is not None else rounds):
            if setup is not None:
                made = setup()
                if made is not None:
                    args, kwargs = made
            self._record(fn, args)
            result = fn(*args, **(kwargs or {}))
        return result


def test_bench_encode_times_a_cold_tokenizer_every_round():
    """bench_encode.py says its texts are not repeated because a repeat flatters bpe_fast's pre-token cache
    (twice as fast on the fixture texts); so each timed round must encode with a tokenizer that has not
    encoded before, never the one of the round before (tiktoken keeps no such cache)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import bench_encode
    finally:
        sys.path.remove(str(BENCHMARKS))
    from bpe_fast import Tokenizer
    vocab = {i: bytes([i]) for i in range(256)}
    vocab.update({256: b"he", 257: b"ll", 258: b"hell", 259: b"hello"})
    tok = Tokenizer(vocab, [(b"h", b"e"), (b"l", b"l"), (b"he", b"ll"), (b"hell", b"o")], ["<|endoftext|>"])
    ranks = {t: i for i, t in vocab.items()}
    enc = bench_encode.tiktoken.Encoding("t", pat_str=bench_encode.GPT2_PATTERN, mergeable_ranks=ranks,
                                         special_tokens={"<|endoftext|>": 260})
    libraries, text = (tok, enc, "test"), ("real", "hello world\nhell<|endoftext|>hello\n" * 20)
    cases = [(bench_encode.test_encode_bpe_fast, ()), (bench_encode.test_encode_to_numpy_bpe_fast, ()),
             (bench_encode.test_encode_iterable_bpe_fast, ("lines",)),
             (bench_encode.test_encode_iterable_bpe_fast, ("1 MB blocks",)),
             (bench_encode.test_encode_short, ("lines", "bpe_fast")),
             (bench_encode.test_encode_short, ("11 chars", "bpe_fast"))]
    for test, extra in cases:
        bench = _RecordingBenchmark()
        test(bench, libraries, text, *extra)
        assert len(bench.used) >= 3, (test.__name__, extra)
        assert len({id(t) for t in bench.used}) == len(bench.used), (test.__name__, extra)
        assert tok not in bench.used, (test.__name__, extra)


@pytest.fixture
def bench_report_module(monkeypatch):
    """benchmarks/bench_report.py, with its timed calls recording the Tokenizer each one used."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import bench_report
    finally:
        sys.path.remove(str(BENCHMARKS))
    from bpe_fast import Tokenizer
    used = []

    def recording(name, real):
        def call(tok, *args, **kwargs):
            used.append((name, tok))
            return real(tok, *args, **kwargs)
        return call
    for name in ("compression_curve", "write_report"):
        monkeypatch.setattr(bench_report, name, recording(name, getattr(bench_report, name)))
    monkeypatch.setattr(Tokenizer, "encode_to_numpy", recording("encode_to_numpy", Tokenizer.encode_to_numpy))
    monkeypatch.setattr(bench_report, "ROUNDS", 4)
    return bench_report, used


@pytest.fixture
def report_inputs(tmp_path):
    from bpe_fast import Tokenizer, train_bpe
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("hello world, the hello of the world<|endoftext|>a world of hellos\n" * 200, encoding="utf-8")
    result = train_bpe(corpus, 270, ["<|endoftext|>"], num_processes=1)
    Tokenizer(*result, ["<|endoftext|>"], training=result.training).save(tmp_path / "tok")
    return corpus, tmp_path / "tok"


def test_bench_report_times_encode_and_curve_both_with_a_cold_tokenizer(bench_report_module, report_inputs):
    """The curve against one encode: the encode must not warm the tokenizer's pre-token cache for the curve
    timed after it (nor a round's warm the next), else the first round compares a cold encode with a warm curve
    and the later ones two warm calls, none of them the one call on a freshly loaded tokenizer that a report
    makes. Each timed call gets a tokenizer that has not encoded before."""
    bench_report, used = bench_report_module
    bench_report.test_compression_curve_against_encode(_RecordingBenchmark(), *report_inputs)
    names = [name for name, _ in used]
    assert names.count("encode_to_numpy") == names.count("compression_curve") >= 3, names
    assert len({id(tok) for _, tok in used}) == len(used), names


def test_bench_report_times_write_report_with_a_cold_tokenizer(bench_report_module, report_inputs, tmp_path):
    bench_report, used = bench_report_module
    bench_report.test_report(_RecordingBenchmark(), *report_inputs, tmp_path)
    reports = [tok for name, tok in used if name == "write_report"]
    assert len(reports) >= 2 and len({id(tok) for tok in reports}) == len(reports), used


def _bench_module(name):
    sys.path.insert(0, str(BENCHMARKS))
    try:
        return __import__(name)
    finally:
        sys.path.remove(str(BENCHMARKS))


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_bench_encode_memory_streams_through_a_tokenizer_that_has_not_encoded(monkeypatch):
    """test_encode_iterable_memory records how much the resident memory grows while streaming: the tokenizer
    the module shares has encoded the same text in the tests before it (its pre-token cache full and grown), so
    streaming through it leaves out the cache's growth. It must stream through a fresh copy."""
    bench_encode = _bench_module("bench_encode")
    from bpe_fast import Tokenizer
    vocab = {i: bytes([i]) for i in range(256)}
    vocab.update({256: b"he", 257: b"ll", 258: b"hell", 259: b"hello"})
    tok = Tokenizer(vocab, [(b"h", b"e"), (b"l", b"l"), (b"he", b"ll"), (b"hell", b"o")], ["<|endoftext|>"])
    text = "hello world\nhell<|endoftext|>hello\n" * 200
    tok.encode(text)                    # as the earlier tests of the module leave it
    streamed = []
    real = Tokenizer.encode_iterable
    monkeypatch.setattr(Tokenizer, "encode_iterable", lambda self, it: (streamed.append(self), real(self, it))[1])
    monkeypatch.setenv("BPE_FAST_BENCH_STREAM_MB", "0.1")
    bench_encode.test_encode_iterable_memory(_RecordingBenchmark(), (tok, None, "test"), text, "lines")
    assert streamed and all(t is not tok for t in streamed), streamed


class _SettingsBenchmark:
    """Stands in for pytest-benchmark's fixture: runs the function once and records the rounds and warm-up
    rounds it was given."""

    stats = None
    disabled = False
    group = None

    def __init__(self):
        self.extra_info, self.settings = {}, []

    def pedantic(self, fn, args=(), kwargs=None, setup=None, rounds=1, warmup_rounds=0, iterations=1):
        self.settings.append({"rounds": rounds, "warmup_rounds": warmup_rounds, "iterations": iterations})
        if setup is not None:
            args, kwargs = setup()
        return fn(*args, **(kwargs or {}))

    def __call__(self, fn, *args, **kwargs):
        self.settings.append("calibrated by pytest-benchmark")
        return fn(*args, **kwargs)


@pytest.mark.parametrize("job", ["scan", "split", "count"])
def test_bench_pretokenize_gives_native_and_regex_the_same_rounds(job):
    """Each MB/s is the fastest round's, and the table sets native against `regex`: the fastest of 5 rounds
    after a warm-up is not the fastest of 2 without one, so both sides must be timed the same way."""
    bench_pretokenize = _bench_module("bench_pretokenize")
    given = {}
    for impl in ("native", "regex"):
        bench = _SettingsBenchmark()
        getattr(bench_pretokenize, f"test_{job}_{impl}")(bench, "mixed", "gpt2")
        given[impl] = bench.settings
    assert given["native"] == given["regex"] and len(given["native"]) == 1, given


@pytest.mark.parametrize("case", [("test_encode_bpe_fast", "test_encode_tiktoken", ()),
                                  ("test_encode_short", "test_encode_short", ("lines",)),
                                  ("test_encode_short", "test_encode_short", ("11 chars",))])
def test_bench_encode_times_bpe_fast_and_tiktoken_the_same_way(case):
    """bpe_fast's encoding runs a fixed number of rounds (each with a fresh tokenizer) and its MB/s is the
    fastest round's: tiktoken's must be the fastest of as many rounds, not of whatever number pytest-benchmark
    calibrates (at least 5, else as many as fit in a second: a few on 4 MB, many on the fixture texts)."""
    bench_encode = _bench_module("bench_encode")
    from bpe_fast import Tokenizer
    vocab = {i: bytes([i]) for i in range(256)}
    vocab.update({256: b"he", 257: b"ll", 258: b"hell", 259: b"hello"})
    tok = Tokenizer(vocab, [(b"h", b"e"), (b"l", b"l"), (b"he", b"ll"), (b"hell", b"o")], ["<|endoftext|>"])
    enc = bench_encode.tiktoken.Encoding("t", pat_str=bench_encode.GPT2_PATTERN,
                                         mergeable_ranks={t: i for i, t in vocab.items()},
                                         special_tokens={"<|endoftext|>": 260})
    libraries, text = (tok, enc, "test"), ("real", "hello world\nhell<|endoftext|>hello\n" * 20)
    ours, theirs, extra = case
    given = {}
    for library, test in (("bpe_fast", ours), ("tiktoken", theirs)):
        bench = _SettingsBenchmark()
        args = (*extra, library) if test == "test_encode_short" else extra
        getattr(bench_encode, test)(bench, libraries, text, *args)
        given[library] = bench.settings
    assert given["bpe_fast"] == given["tiktoken"], given


_FORKSERVER_WORKER = """
import json, sys
import bpe_fast.procs
bpe_fast.procs.FORK_LIMIT_BYTES = 0          # workers from a forkserver, as for a caller holding over 512 MB
sys.path.insert(0, sys.argv[2])
import {module}
{call}
with open("/proc/self/status") as f:
    print(json.dumps({{"own_kb": next(int(l.split()[1]) for l in f if l.startswith("VmHWM:"))}}))
"""


def _forkserver_run(tmp_path, module, call, corpus):
    code = _FORKSERVER_WORKER.format(module=module, call=call)
    proc = subprocess.run([sys.executable, "-c", code, str(corpus), str(BENCHMARKS), str(tmp_path / "out.json")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [__import__("json").loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory):
    from bpe_fast.synthetic import generate
    path = tmp_path_factory.mktemp("corpus") / "c.txt"
    generate(path, 6_000_000, seed=0)       # over 4 MiB: counted by workers
    return path


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_bench_inputs_counts_the_memory_of_forkserver_workers(tmp_path, small_corpus):
    """A worker started by a forkserver is the forkserver's child, never reaped by the measured process, so
    RUSAGE_CHILDREN leaves it out: the peak reported must still be more than the calling process's own (each
    worker is an interpreter with bpe_fast imported, tens of MB)."""
    result, own = _forkserver_run(tmp_path, "bench_inputs",
                                  "bench_inputs._worker('file', {'file': sys.argv[1]}, sys.argv[1], 2, None)",
                                  small_corpus)
    assert result["peak_kb"] > own["own_kb"] + 10 * 1024, (result, own)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_hostile_counts_the_memory_of_forkserver_workers(tmp_path, small_corpus):
    results = _forkserver_run(tmp_path, "hostile",
                              "hostile.worker('memory-50MB', sys.argv[1], sys.argv[3])\n"
                              "print(open(sys.argv[3]).read())", small_corpus)
    result, own = results
    assert result["peak_mb"] * 1024 > own["own_kb"] + 10 * 1024, (result, own)


@pytest.mark.parametrize("size", ["0", "0MB"])
def test_the_suite_refuses_an_empty_corpus_size(tmp_path, size):
    """--corpus-bytes 0 is a usage error (pytest's exit status 4, one line), not a suite run on an empty corpus
    whose benchmarks then fail one by one."""
    proc = subprocess.run([sys.executable, "-m", "pytest", str(BENCHMARKS / "bench_train.py"), "--benchmark-disable",
                           "--corpus-bytes", size, "-q", "-p", "no:cacheprovider"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 4, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    assert "ERROR: --corpus-bytes" in proc.stderr and "must be more than 0" in proc.stderr, proc.stderr


def test_hostile_reports_a_failing_case_and_goes_on(tmp_path):
    """A case whose worker fails (here a corrupt input left in the work folder) is a row saying so, with the
    error's last line; the other cases still run, the table is still written, and the exit status is 1."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "ranks-1MB.tiktoken").write_text("not a ranks file\n")
    status, out, err = run("hostile.py", ["--workdir", work, "--only", "ranks-1MB", "vocab-flood",
                                          "--out", tmp_path / "h.md"], tmp_path)
    assert status == 1, err[-3000:]
    assert "CalledProcessError" not in err and "ranks-1MB failed" in err, err[-3000:]
    table = (tmp_path / "h.md").read_text()
    rows = {line.split("|")[1].strip(): line for line in table.splitlines()[2:]}
    assert "failed (exit 1)" in rows["ranks-1MB"], table
    assert "tokens" in rows["vocab-flood"] and "failed" not in rows["vocab-flood"], table


def test_ab_out_is_not_overwritten_by_the_raw_times(tmp_path):
    """ab.py writes the raw times to --out's path with the suffix .json: an --out that already ends in .json
    would have its Markdown replaced by them, so it is refused up front."""
    status, out, err = run("ab.py", ["WORKTREE", "WORKTREE", "--only", "count", "--rounds", "6", "--reps", "1",
                                      "--out", tmp_path / "ab.json"], tmp_path)
    assert_one_line_error(status, out, err, "ab.py", ["--out", "ab.json"])


def test_compare_says_when_a_check_could_not_be_made(tmp_path):
    """A peer that ran while bpe_fast's run of the same work failed is not checked, and its row says so (a blank
    cell reads as nothing to check)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import compare
    finally:
        sys.path.remove(str(BENCHMARKS))
    ours = compare.Job("encode", "bpe_fast `encode`", "encode.bpe_fast", {"out": str(tmp_path / "a.npy")},
                       tool="bpe_fast", status="failed (exit 1): MemoryError")
    theirs = compare.Job("encode", "tiktoken", "encode.tiktoken", {"out": str(tmp_path / "b.npy")},
                         tool="tiktoken", baseline=ours, check="ids")
    theirs.runs.append((1.0, 0.1, 50.0))
    assert "not checked" in compare.check_ids(theirs) and "bpe_fast" in compare.check_ids(theirs)
    ours.spec["out"] = str(tmp_path / "a.json")
    theirs.kind, theirs.check, theirs.spec["out"] = "train.rustbpe", "merges", str(tmp_path / "b.json")
    assert "not checked" in compare.check_merges(theirs, None)


def test_ab_instructions_of_no_hot_path_is_one_line(tmp_path):
    """--instructions counts the hot paths only (train_corpus is timed, never counted): --only train_corpus
    leaves nothing to count, which is said up front, not answered by counting every hot path of both builds
    and printing an empty table."""
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello world\n" * 100)
    status, out, err = run("ab.py", ["--instructions", "--corpus", corpus, "--only", "train_corpus",
                                     "WORKTREE", "WORKTREE"], tmp_path)
    assert_one_line_error(status, out, err, "ab.py", ["--instructions", "train_corpus"])


def test_ab_names_the_commit_under_the_working_tree():
    """The report's line for WORKTREE says which commit the working tree is on (and that it has changes, when
    it has), and every side's line names its build, so a report says what code it measured."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import ab
    finally:
        sys.path.remove(str(BENCHMARKS))
    head = subprocess.run(["git", "-C", str(ab.REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    source = ab.resolve("WORKTREE")
    assert f"HEAD {head}" in source.about, source.about
    build = ab.Build(source, "tree-0123456789abcdef", Path("/nowhere"))
    text = ab.report([], build, build, [], 0.05, "cpu")
    assert "tree-0123456789abcdef" in text and f"HEAD {head}" in text, text


def test_icount_installed_measures_the_bpe_fast_the_caller_imports(tmp_path):
    """icount.py's default, 'installed', is documented as the importable bpe_fast: its measuring processes must
    import the same bpe_fast as the process that runs the gate (here a copy that a relative PYTHONPATH puts
    first), not another one found once PYTHONPATH is dropped or read from the workers' folder."""
    import json
    import shutil

    import bpe_fast
    (tmp_path / "site").mkdir()
    shutil.copytree(Path(bpe_fast.__file__).resolve().parent, tmp_path / "site" / "bpe_fast",
                    ignore=shutil.ignore_patterns("__pycache__"))
    code = ("import json, sys; sys.path.insert(0, sys.argv[1]); import ab, bpe_fast; "
            "done = ab.run_child([ab.script('icount.py'), '--environment'], None, 'env'); "
            "print(json.dumps([bpe_fast.__file__, json.loads(done.stdout.splitlines()[-1])['bpe_fast']]))")
    proc = subprocess.run([sys.executable, "-c", code, str(BENCHMARKS)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env={**__import__("os").environ, "PYTHONPATH": "site"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    here, child = json.loads(proc.stdout.strip().splitlines()[-1])
    assert Path(here).resolve() == (tmp_path / "site" / "bpe_fast" / "__init__.py").resolve()
    assert Path(child).resolve() == Path(here).resolve(), (here, child)


def test_screenshot_report_without_playwright_says_so_before_any_work(tmp_path):
    # without playwright it trained a tokenizer, wrote a report, then failed with an ImportError traceback
    import importlib.util
    if importlib.util.find_spec("playwright") is not None:
        pytest.skip("playwright is installed here: the refusal is not reached")
    corpus = tmp_path / "c.txt"
    corpus.write_text("some text\n" * 100)
    keep = tmp_path / "keep"
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "screenshot_report.py"), "--corpus", str(corpus),
                           "--keep", str(keep)], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr.strip() == "screenshot_report.py needs playwright: pip install playwright", proc.stderr
    assert not keep.exists()


def test_memtrace_prints_the_stages_and_the_peak_and_refuses_bad_arguments_in_one_line(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("the cat sat on the mat<|endoftext|>a dog ran far " * 200, encoding="utf-8")
    status, out, err = run("memtrace.py", [corpus, 300], tmp_path)
    assert status == 0, err[-3000:]
    lines = out.splitlines()
    assert "stage count begins" in lines[0] and any("stage merge begins" in line for line in lines)
    assert lines[-1].startswith("done in ") and " MB at " in lines[-1]
    for args, words in [([corpus, 100], ["vocab_size", "257"]), ([tmp_path / "gone.txt", 300], ["gone.txt"]),
                        ([corpus], ["vocab_size"])]:
        assert_one_line_error(*run("memtrace.py", args, tmp_path), "memtrace.py", words)


@pytest.mark.parametrize("args, words", [
    # a folder with no build in it ran this build twice, the second labelled as the baseline (helper-149)
    (["--corpus", "c.txt", "--forms", "file,iterator", "--baseline-build", "nowhere"], ["--baseline-build nowhere"]),
    (["--corpus", "c.txt", "--forms", "iterator"], ["--forms", "file"]),       # KeyError: 'file' after every round
    (["--corpus", "c.txt", "--forms", "file,tar"], ["--forms", "unknown tar"]),
    (["--corpus", "missing.txt"], ["--corpus missing.txt: no such file"]),      # a CalledProcessError traceback
    (["--corpus", "empty.txt"], ["--corpus empty.txt: empty"]),
    (["--corpus", "c.txt", "--forms", "file,iterator", "--peers", "tokenizers"], ["--peers", "--train"]),
    (["--corpus", "c.txt", "--forms", "file,iterator", "--train", "300", "--peers", "sentencepiece"],
     ["--peers", "unknown sentencepiece"]),
    (["--corpus", "c.txt", "--forms", "file,gz", "--train", "300", "--peers", "rustbpe"], ["--peers", "rustbpe: iterator"]),
])
def test_bench_inputs_bad_arguments(tmp_path, args, words):
    (tmp_path / "c.txt").write_text("some text<|endoftext|>more text")
    (tmp_path / "empty.txt").write_text("")
    assert_one_line_error(*run("bench_inputs.py", args, tmp_path), "bench_inputs.py", words)


def test_bench_inputs_trains_the_peers_on_the_same_documents(tmp_path):
    """--peers: each peer's row beside bpe_fast's for the same form, timed against it, the peers' vocabularies
    checked to be as large as asked (a peer that ran out of pairs would look fast)."""
    pytest.importorskip("tokenizers")
    pytest.importorskip("rustbpe")
    (tmp_path / "c.txt").write_text("<|endoftext|>".join(f"the cat {k} sat on the mat, a dog ran far" for k in range(300)))
    status, out, err = run("bench_inputs.py", ["--corpus", "c.txt", "--forms", "file,iterator,lists", "--train", "300",
                                               "--peers", "tokenizers,rustbpe", "--rounds", "1"], tmp_path)
    assert status == 0, err[-3000:]
    rows = [line for line in out.splitlines() if line.startswith("| ")][2:]
    assert [re.sub(r"\(\d+\.\d\dx", "({}x", row.split(" | ")[0]) for row in rows] == [
        "| file", "| iterator", "| lists", "| iterator, HF tokenizers `train_from_iterator` ({}x bpe_fast's)",
        "| iterator, rustbpe `train_from_iterator` ({}x bpe_fast's)",
        "| lists, HF tokenizers `train_from_iterator` ({}x bpe_fast's)"], rows


def test_ab_instructions_take_a_json_out(tmp_path):
    # "--out's .json counts.json: is --out too": with --instructions no raw times' .json is written beside --out,
    # and a .json --out is how they are kept (helper-153); stopped here by the unknown benchmark after it
    status, out, err = run("ab.py", ["--instructions", "--out", tmp_path / "counts.json", "--only", "nosuch"], tmp_path)
    assert status == 2 and "--only: unknown benchmark 'nosuch'" in err and "--out" not in err.strip().splitlines()[-1]
