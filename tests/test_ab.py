"""benchmarks/ab.py and benchmarks/icount.py: the statistics, the instruction-count gate's decision, bad input.

The slow tests (they build bpe_fast twice and run benchmarks and valgrind for minutes) run only with
BPE_FAST_AB_SLOW=1:

    BPE_FAST_AB_SLOW=1 pytest tests/test_ab.py -k slow -s
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
BENCHMARKS = REPO / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import ab  # noqa: E402
import icount  # noqa: E402

slow = pytest.mark.skipif(not os.environ.get("BPE_FAST_AB_SLOW"),
                          reason="builds bpe_fast and runs for minutes: set BPE_FAST_AB_SLOW=1")


# ---------------------------------------------------------------------------------------------------------
# Statistics: the ratio's bootstrap interval and the verdict.

def paired(ratio, noise, rounds=10, runs=8, seed=1):
    """Times of A (about 1 s, drifting by 30% as this machine's speed does) and of B = ratio * A, run back to
    back, each with its own multiplicative noise of this relative size: (a, b), rounds x runs."""
    rng = np.random.default_rng(seed)
    drift = 1 + 0.3 * np.sin(np.arange(rounds * runs) / 5).reshape(rounds, runs)
    a = drift * (1 + noise * rng.standard_normal((rounds, runs)))
    b = ratio * drift * (1 + noise * rng.standard_normal((rounds, runs)))
    return a, b


def test_same_code_is_no_change_despite_drift():
    a, b = paired(1.0, 0.02)
    ratio, low, high = ab.bootstrap_ratio(a, b)
    assert ratio == pytest.approx(1.0, abs=0.02)
    assert 0.97 < low < high < 1.03
    assert ab.verdict(low, high, 0.05) == "no change"


def test_a_ten_percent_slowdown_is_slower():
    a, b = paired(1.10, 0.02)
    ratio, low, high = ab.bootstrap_ratio(a, b)
    assert ratio == pytest.approx(1.10, abs=0.02)
    assert 1.05 < low < ratio < high < 1.15
    assert ab.verdict(low, high, 0.05) == "slower"


def test_a_ten_percent_speedup_is_faster():
    a, b = paired(0.90, 0.02)
    ratio, low, high = ab.bootstrap_ratio(a, b)
    assert high < 1 / 1.05
    assert ab.verdict(low, high, 0.05) == "faster"


def test_a_real_change_below_the_threshold_is_no_change():
    a, b = paired(1.03, 0.005)
    ratio, low, high = ab.bootstrap_ratio(a, b)
    assert 1 < low and high < 1.05                  # the interval excludes 1, but not by 5%
    assert ab.verdict(low, high, 0.05) == "no change"
    assert ab.verdict(low, high, 0.01) == "slower"


def test_a_slowdown_drowned_in_noise_gets_no_verdict():
    a, b = paired(1.10, 0.4, rounds=4, runs=3)
    ratio, low, high = ab.bootstrap_ratio(a, b)
    assert low < 1.05
    assert ab.verdict(low, high, 0.05) == "no change"


def test_rounds_that_differ_widen_the_interval():
    """Runs agree within a round, but one pair of processes differs from the next (memory layout): the
    interval resamples rounds, so it covers that."""
    a, b = paired(1.0, 0.001)
    steady = ab.bootstrap_ratio(a, b)
    b = b * (1 + 0.05 * np.random.default_rng(2).standard_normal((len(b), 1)))
    shifting = ab.bootstrap_ratio(a, b)
    assert shifting[2] - shifting[1] > 5 * (steady[2] - steady[1])


def test_the_verdict_is_symmetric_in_a_and_b():
    for low, high in [(1.06, 1.2), (1.04, 1.2), (0.8, 0.95), (0.8, 0.96), (0.97, 1.02)]:
        swapped = ab.verdict(1 / high, 1 / low, 0.05)
        assert {"slower": "faster", "faster": "slower"}.get(ab.verdict(low, high, 0.05), "no change") == swapped


def test_the_verdict_at_the_edges():
    assert ab.verdict(1.0501, 1.2, 0.05) == "slower"
    assert ab.verdict(1.05, 1.2, 0.05) == "no change"
    assert ab.verdict(0.8, 1 / 1.05 - 1e-9, 0.05) == "faster"
    assert ab.verdict(0.8, 0.953, 0.05) == "no change"


def test_the_bootstrap_is_repeatable_and_checks_its_input():
    a, b = paired(1.0, 0.05)
    assert ab.bootstrap_ratio(a, b) == ab.bootstrap_ratio(a, b)
    with pytest.raises(ValueError, match="paired"):
        ab.bootstrap_ratio([[1, 2], [3, 4]], [[1, 2], [3]])
    with pytest.raises(ValueError, match="paired"):
        ab.bootstrap_ratio([[1, 2]], [[1, 2]])
    with pytest.raises(ValueError, match="positive"):
        ab.bootstrap_ratio([[1, 0], [1, 1]], [[1, 1], [1, 1]])


@pytest.mark.parametrize("rounds", [2, 3, 5])
def test_too_few_rounds_for_a_95_percent_interval_are_refused(rounds, capsys):
    """With n rounds the widest interval the rounds can give, from the lowest round to the highest, covers the
    true ratio with probability 1 - 2 * 0.5 ** n only (under 95% for n < 6); the bootstrap's is narrower still
    (of 2 rounds it is the span of their two medians). So fewer than 6 rounds are refused, in one line naming
    --rounds."""
    with pytest.raises(SystemExit) as exc:
        ab.parse_args(["WORKTREE", "WORKTREE", "--rounds", str(rounds)])
    assert exc.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--rounds" in last and "6" in last, last
    assert ab.parse_args(["WORKTREE", "WORKTREE", "--rounds", "6"]).rounds == 6


def test_summarize_reports_both_medians_and_the_ratio():
    row = ab.summarize("merge_loop", [[1.0, 1.2], [1.1, 1.0]], [[2.0, 2.4], [2.2, 2.0]], 0.05)
    assert row["a"] == pytest.approx(1.05) and row["b"] == pytest.approx(2.1)
    assert row["ratio"] == pytest.approx(2.0)
    assert row["verdict"] == "slower"
    text = ab.report([row], *[ab.Build(ab.Source(n, "commit", "0" * 40, f"{n} subject"), n, Path("."))
                              for n in ("A", "B")], ["machine: x"], 0.05, "cpu")
    assert "| merge_loop | 1.050 s | 2.100 s | 2.000 | 2.000 – 2.000 | slower |" in text


def test_percentages_and_sizes():
    assert ab.parse_percent("5%") == pytest.approx(0.05)
    assert ab.parse_percent("0.03") == pytest.approx(0.03)
    for bad in ("five", "150%", "-1%"):
        with pytest.raises(Exception):
            ab.parse_percent(bad)
    assert ab.parse_size("4MB") == 4_000_000
    assert ab.parse_size("1.5GB") == 1_500_000_000
    assert ab.parse_size("1234") == 1234
    with pytest.raises(ab.ABError):
        ab.parse_size("lots")
    for bad in ("inf", "1e400", "nan"):          # inf was an OverflowError traceback (helper-149)
        with pytest.raises(ab.ABError, match="not a size"):
            ab.parse_size(bad)


def test_benchmark_selection():
    assert "train_corpus" not in ab.selected(None, None)
    assert "train_corpus" in ab.selected(None, "/some/corpus")
    assert ab.selected("decode,count", None) == ["count", "decode"]
    with pytest.raises(ab.ABError, match="unknown benchmark 'nope'"):
        ab.selected("count,nope", None)
    with pytest.raises(ab.ABError, match="needs --corpus"):
        ab.selected("train_corpus", None)


def test_the_hot_paths_of_the_gate_are_the_benchmarks_without_a_corpus():
    assert icount.HOT_PATHS == ["count", "merge_loop", "train_synthetic", "encode", "encode_file", "decode"]


# ---------------------------------------------------------------------------------------------------------
# The instruction-count gate's decision.

ENV = {"python": "CPython 3.11.7", "compiler": "GCC: (Debian 12.2.0-14) 12.2.0", "cython": "3.3.1",
       "numpy": "2.4.6", "platform": "Linux x86_64 glibc 2.36"}


def documents(scale, **changes):
    counts = {"count": 10_000_000, "merge_loop": 60_000_000}
    baseline = {"environment": dict(ENV), "inputs_sha256": "abc", "counts": counts, "commit": "0" * 40}
    measured = {"environment": {**ENV, **changes}, "inputs_sha256": "abc",
                "counts": {"count": counts["count"], "merge_loop": int(counts["merge_loop"] * scale)}}
    return baseline, measured


def test_a_four_percent_increase_fails_the_gate():
    status, lines = icount.compare(*documents(1.04))
    assert status == "fail"
    assert any("merge_loop" in line and "+4.00%" in line and "MORE INSTRUCTIONS" in line for line in lines)


def test_a_two_percent_increase_passes():
    status, lines = icount.compare(*documents(1.02))
    assert status == "pass"
    assert any("merge_loop" in line and "+2.00%" in line and "ok" in line for line in lines)


def test_the_limit_is_an_option():
    assert icount.compare(*documents(1.04), max_increase=0.05)[0] == "pass"
    assert icount.compare(*documents(1.02), max_increase=0.01)[0] == "fail"


def test_fewer_instructions_pass_and_suggest_a_new_baseline():
    status, lines = icount.compare(*documents(0.90))
    assert status == "pass"
    assert any("-10.00%" in line and "--update-baseline" in line for line in lines)


@pytest.mark.parametrize("key", icount.ENVIRONMENT_KEYS)
def test_another_environment_warns_and_skips(key):
    status, lines = icount.compare(*documents(1.50, **{key: "something else"}))
    assert status == "skip"
    assert lines[0].startswith("warning:") and "skipped" in lines[0]
    assert any(line.strip().startswith(f"{key}:") and "something else" in line for line in lines[1:])


def test_other_inputs_fail_and_say_to_record_the_baseline():
    baseline, measured = documents(1.0)
    measured["inputs_sha256"] = "def"
    status, lines = icount.compare(baseline, measured)
    assert status == "fail" and "--update-baseline" in lines[0]


@pytest.mark.parametrize("bad", [0, -5, None, "60000000", True])
def test_a_baseline_count_that_is_not_a_positive_number_is_an_error_naming_it(bad):
    """A count of 0 in the baseline (a hand edit, a broken recording) would divide by zero: it is an ABError (one
    line, exit 2) naming the hot path, never a ZeroDivisionError or an infinite change."""
    baseline, measured = documents(1.0)
    baseline["counts"]["merge_loop"] = bad
    with pytest.raises(ab.ABError, match="merge_loop") as exc:
        icount.compare(baseline, measured)
    assert "--update-baseline" in str(exc.value)


def test_a_hot_path_missing_on_either_side_fails():
    baseline, measured = documents(1.0)
    measured["counts"]["decode"] = 5
    assert icount.compare(baseline, measured)[0] == "fail"
    baseline, measured = documents(1.0)
    del measured["counts"]["count"]
    assert icount.compare(baseline, measured)[0] == "fail"


def test_the_stored_baseline_is_complete():
    baseline = json.loads(icount.BASELINE.read_text())
    assert set(baseline["counts"]) == set(icount.HOT_PATHS)
    assert set(icount.ENVIRONMENT_KEYS) <= set(baseline["environment"])
    assert re.fullmatch(r"[0-9a-f]{64}", baseline["inputs_sha256"])
    assert baseline["repeat_spread"] <= icount.REPEAT_TOLERANCE


CALLGRIND_OUT = """version: 1
creator: callgrind-3.19.0
events: Ir
summary: 0

fl=(1) train.cpp
fn=(1) merge
10 500
cfn=(2) realloc
calls=2 0
11 300
cfn=(3) memcpy
calls=1 0
12 40
fn=(2)
0 20
cfn=(3)
calls=1 0
0 250
fn=(3)
0 290
fn=(4) grow
cfn=(2)
calls=1 0
5 60

totals: 900
"""


def test_callgrind_totals_and_the_realloc_share_are_read(tmp_path):
    out = tmp_path / "callgrind.out"
    out.write_text(CALLGRIND_OUT)
    assert icount.read_callgrind(out) == (900, 360)     # realloc called from merge (300) and from grow (60)
    out.write_text("events: Ir\nsummary: 0\n")
    with pytest.raises(ab.ABError, match="no instruction total"):
        icount.read_callgrind(out)


# ---------------------------------------------------------------------------------------------------------
# Builds: the per-module cache key.

def test_a_module_key_changes_with_its_sources_only(tmp_path):
    ab._copy_sources(REPO, tmp_path / "src")
    src = tmp_path / "src"
    assert not list((src / "bpe_fast").glob("*.so")) and not list((src / "bpe_fast").glob("*.cpp"))
    before = ab._extension_keys(src)
    assert set(before) >= {"_train", "_encode"}
    (src / "bpe_fast" / "_train.pyx").write_text((src / "bpe_fast" / "_train.pyx").read_text() + "\n# changed\n")
    after = ab._extension_keys(src)
    assert after["_train"] != before["_train"]
    assert {k: v for k, v in after.items() if k != "_train"} == {k: v for k, v in before.items() if k != "_train"}
    (src / "bpe_fast" / "_new.pxd").write_text("# a shared declaration\n")
    assert all(ab._extension_keys(src)[k] != after[k] for k in after)


# ---------------------------------------------------------------------------------------------------------
# Bad input: one clear line, a nonzero exit, nothing left behind.

def leftovers(pid):
    """Temporary folders and git worktrees of the process pid."""
    prefix = f"{ab.TMP_PREFIX}{pid}-"
    folders = [p for p in Path(tempfile.gettempdir()).iterdir() if p.name.startswith(prefix)]
    worktrees = [line for line in ab.git("worktree", "list").stdout.splitlines() if prefix in line]
    return folders + worktrees


def run_script(args, tmp_path, env=None, own_cache=True, timeout=600):
    """Run benchmarks/<script> (with its own cache, or the user's); (exit status, stdout, stderr lines, pid)."""
    environ = dict(os.environ, **(env or {}))
    if own_cache:
        environ["BPE_FAST_AB_CACHE"] = str(tmp_path / "cache")
    proc = subprocess.Popen([sys.executable, *map(str, args)], cwd=REPO, env=environ, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err.strip().splitlines(), proc.pid


def test_an_unknown_revision_is_one_line(tmp_path):
    status, out, err, pid = run_script([BENCHMARKS / "ab.py", "no-such-revision-xyz", "HEAD"], tmp_path)
    assert status == 2
    assert err == ["ab.py: error: unknown revision 'no-such-revision-xyz': not a commit of "
                   f"{REPO}, a source folder or a wheel/sdist"]
    assert leftovers(pid) == []


def test_a_missing_package_is_one_line(tmp_path):
    status, out, err, pid = run_script([BENCHMARKS / "ab.py", "--against-version", tmp_path / "bpe_fast-9.whl"],
                                       tmp_path)
    assert status == 2 and len(err) == 1 and "no such wheel or sdist" in err[0]
    assert leftovers(pid) == []


def test_a_revision_that_does_not_build_keeps_and_names_its_log(tmp_path):
    broken = tmp_path / "broken"
    ab._copy_sources(REPO, broken)
    (broken / "setup.py").write_text("raise SystemExit('this revision does not build')\n")
    status, out, err, pid = run_script([BENCHMARKS / "ab.py", broken, "HEAD"], tmp_path)
    assert status == 2 and len(err) == 2           # "building ... log: PATH", then the error
    assert err[1].startswith(f"ab.py: error: revision '{broken}'") and "does not build" in err[1]
    log = Path(err[1].rsplit("build log ", 1)[1])
    assert log.is_file() and "this revision does not build" in log.read_text()
    assert leftovers(pid) == []
    assert not [p for p in log.parent.parent.iterdir() if p.name.startswith("tree-")]    # no half-built cache


@pytest.mark.parametrize("script, args", [("icount.py", ["--baseline", str(icount.BASELINE)]),
                                          ("ab.py", ["--instructions", "HEAD", "HEAD"])])
def test_valgrind_missing_is_one_line(tmp_path, script, args):
    bin_dir = tmp_path / "bin"                      # git, and no valgrind
    bin_dir.mkdir()
    (bin_dir / "git").symlink_to(shutil.which("git"))
    status, out, err, pid = run_script([BENCHMARKS / script, *args], tmp_path, {"PATH": str(bin_dir)})
    assert status == 2
    assert err == [f"{script}: error: valgrind not found: install it with `apt-get install valgrind`"]
    assert leftovers(pid) == []


def test_the_gate_without_a_baseline_is_one_line(tmp_path):
    status, out, err, pid = run_script([BENCHMARKS / "icount.py", "--baseline", tmp_path / "none.json"], tmp_path)
    assert status == 2 and len(err) == 1 and "--update-baseline" in err[0]


def test_an_output_over_the_baseline_or_another_output_is_refused_before_any_work(tmp_path):
    # icount.py --json BASELINE replaced the baseline with the measured counts; ab.py --png x.json --out x.md wrote
    # the raw times over the chart (helper-149)
    baseline = tmp_path / "base.json"
    baseline.write_text("{}")
    status, out, err, pid = run_script([BENCHMARKS / "icount.py", "--baseline", baseline, "--json", baseline], tmp_path)
    assert status == 2 and "is --baseline too" in err[-1] and baseline.read_text() == "{}"
    status, out, err, pid = run_script([BENCHMARKS / "ab.py", "--out", tmp_path / "x.md", "--png", tmp_path / "x.json"],
                                       tmp_path)
    assert status == 2 and "is --png too" in err[-1]


def test_stale_worktrees_of_dead_runs_are_removed(tmp_path):
    dead = subprocess.Popen(["true"])
    dead.wait()
    top = Path(tempfile.mkdtemp(prefix=f"{ab.TMP_PREFIX}{dead.pid}-"))
    ab.git("worktree", "add", "--detach", str(top / "src"), "HEAD")
    try:
        assert leftovers(dead.pid)
        ab.remove_stale_worktrees()
        assert leftovers(dead.pid) == []
    finally:
        ab.git("worktree", "remove", "--force", str(top / "src"), check=False)
        shutil.rmtree(top, ignore_errors=True)


# ---------------------------------------------------------------------------------------------------------
# Slow: the targets of issue 17, on real builds (the user's build cache is used, so a second run is faster).

SPIN = '''
cdef extern from *:
    """
    #include <time.h>
    static double ab_thread_seconds(void) {
        struct timespec t;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
        return t.tv_sec + 1e-9 * t.tv_nsec;
    }
    static void ab_spin_seconds(double seconds) {   /* busy: instructions (for callgrind) and CPU time */
        double end = ab_thread_seconds() + seconds;
        volatile long long sink = 0;
        do {
            for (int i = 0; i < 1000; i++) sink += i;
        } while (ab_thread_seconds() < end);
    }
    """
    double ab_thread_seconds() noexcept nogil
    void ab_spin_seconds(double seconds) noexcept nogil

'''


def source_of(sha, folder):
    """The sources of a commit in folder (what ab.py builds)."""
    folder.mkdir()
    archive = subprocess.run(["git", "-C", str(REPO), "archive", sha, "bpe_fast", "setup.py", "pyproject.toml",
                              "README.md"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    return folder


def inject_slowdown(folder, fraction=0.10):
    """Make the merge engine 10% slower: after each of its native blocks (building the pair index in
    MergeEngine.__init__, the merges in MergeEngine.run) it spins for `fraction` of the CPU time the block took.
    Those blocks are nearly all of the merge_loop benchmark (train_from_counts). (A fixed spin for each
    occurrence merged was tried first: its share of the time went from 11% to 5% when the machine got busy,
    since the merges' memory waits grow and a spin's do not; slowing run() alone slowed the benchmark 6-7%.)"""
    pyx = folder / "bpe_fast" / "_train.pyx"
    text = pyx.read_text()
    for method in ("__init__", "run"):
        found = re.search(r"\n(?P<i> +)def " + method + r"\(self, [^\n]*\n(?:(?P=i) {4}[^\n]*\n|\n)*?"
                          r"(?P<w>(?P=i) {4}with nogil:\n)(?P<body>(?:(?P=i) {8}[^\n]*\n)+)", text)
        assert found, f"MergeEngine.{method}'s `with nogil:` block not found in _train.pyx"
        outer, inner = found.group("i") + " " * 4, found.group("i") + " " * 8
        slower = (f"{outer}cdef double ab_start\n{found.group('w')}{inner}ab_start = ab_thread_seconds()\n"
                  f"{found.group('body')}{inner}ab_spin_seconds({fraction} * (ab_thread_seconds() - ab_start))\n")
        text = text[:found.start("w")] + slower + text[found.end("body"):]
    assert text.count("\ncdef class MergeEngine") == 1
    pyx.write_text(text.replace("\ncdef class MergeEngine", SPIN + "\ncdef class MergeEngine"))


@pytest.fixture
def head_and_slower(tmp_path):
    sha = ab.git("rev-parse", "HEAD").stdout.strip()
    slower = source_of(sha, tmp_path / "slower")
    inject_slowdown(slower)
    return sha, slower


@slow
def test_slow_an_injected_slowdown_is_slower(tmp_path, head_and_slower):
    """The issue's target: a 10% slowdown is reported as slower, its interval excluding 1. With another job on
    the machine the 95% interval of a 10% change is about +-4%, so its low end can fall under the default 5%
    threshold (which is for telling noise from change on unknown code); the test asks for a verdict beyond 2%."""
    sha, slower = head_and_slower
    status, out, err, pid = run_script([BENCHMARKS / "ab.py", sha, slower, "--only", "merge_loop", "--threshold",
                                        "2%", "--fail-on-regression", "--out", tmp_path / "ab.md"], tmp_path,
                                       own_cache=False, timeout=1800)
    print(out)
    row = json.loads((tmp_path / "ab.json").read_text())["rows"][0]
    assert row["verdict"] == "slower" and row["low"] > 1.02 and row["ratio"] > 1.05, row
    assert status == 1
    assert leftovers(pid) == []


@slow
def test_slow_the_instruction_gate_flags_an_injected_slowdown(tmp_path, head_and_slower):
    sha, slower = head_and_slower
    baseline = tmp_path / "icounts.json"
    status, out, err, pid = run_script([BENCHMARKS / "icount.py", sha, "--update-baseline", "--baseline", baseline,
                                        "--only", "merge_loop"], tmp_path, own_cache=False, timeout=1800)
    assert status == 0, err
    status, out, err, pid = run_script([BENCHMARKS / "icount.py", slower, "--baseline", baseline, "--only",
                                        "merge_loop"], tmp_path, own_cache=False, timeout=1800)
    print(out)
    assert status == 1
    increase = re.search(r"\| merge_loop \| [\d,]+ \| [\d,]+ \| \+(\d+\.\d\d)% \| MORE INSTRUCTIONS \|", out)
    assert increase and float(increase.group(1)) > 5
    status, out, err, pid = run_script([BENCHMARKS / "ab.py", "--instructions", sha, slower, "--only", "merge_loop",
                                        "--fail-on-regression"], tmp_path, own_cache=False, timeout=1800)
    assert status == 1 and "| more instructions |" in out


@slow
def test_slow_the_same_code_is_no_change_with_a_busy_process_beside(tmp_path):
    sha = ab.git("rev-parse", "HEAD").stdout.strip()
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        status, out, err, pid = run_script([BENCHMARKS / "ab.py", sha, sha, "--out", tmp_path / "ab.md"], tmp_path,
                                           own_cache=False, timeout=3600)
    finally:
        busy.kill()
        busy.wait()
    print(out)
    assert status == 0
    rows = json.loads((tmp_path / "ab.json").read_text())["rows"]
    assert [r["verdict"] for r in rows] == ["no change"] * len(rows)


@slow
def test_slow_instruction_counts_repeat_with_a_busy_process_beside(tmp_path):
    """--update-baseline measures twice and checks that they agree within 0.5%; a third and fourth run with a
    busy process beside agree with them too."""
    sha = ab.git("rev-parse", "HEAD").stdout.strip()
    counts = []
    for name, busy in (("quiet", False), ("busy", True)):
        spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
        try:
            status, out, err, pid = run_script([BENCHMARKS / "icount.py", sha, "--update-baseline", "--baseline",
                                                tmp_path / f"{name}.json"], tmp_path, own_cache=False, timeout=1800)
        finally:
            if spinner is not None:
                spinner.kill()
                spinner.wait()
        assert status == 0, err
        counts.append(json.loads((tmp_path / f"{name}.json").read_text())["counts"])
    quiet, busy = counts
    assert quiet.keys() == busy.keys()
    for name in quiet:
        assert abs(busy[name] / quiet[name] - 1) < icount.REPEAT_TOLERANCE, (name, quiet[name], busy[name])
