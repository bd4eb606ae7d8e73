"""Bad arguments of the benchmark scripts (benchmarks/ab.py, icount.py, compare.py): each is refused with one
line naming the option, before anything is built or measured (no traceback, no benchmark lost at the end)."""
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
])
def test_ab_bad_arguments(tmp_path, args, words):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args] + ["--rounds", "2", "--reps", "1"]
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
    repo = BENCHMARKS.parent
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    line = _compare_versions_line(tmp_path, repo)
    assert f"commit {head}" in line, line
    copy = tmp_path / "site"
    shutil.copytree(repo / "bpe_fast", copy / "bpe_fast", ignore=shutil.ignore_patterns("__pycache__"))
    line = _compare_versions_line(tmp_path, copy)
    assert line.endswith(f"({copy / 'bpe_fast'})"), line
