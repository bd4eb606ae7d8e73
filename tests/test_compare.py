"""Smoke test of benchmarks/compare.py on tiny inputs: it runs, reports every tool, checks ids and merges.

No timing is asserted. The script runs in a subprocess from a temporary folder, so the installed package is
imported (PYTHONPATH passes through for an in-place build).
"""
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest


SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "compare.py"
PEER_ROWS = {
    "rustbpe": ["rustbpe `train_from_iterator`"],
    "tokenizers": ["HF tokenizers BpeTrainer, `train_from_iterator`", "HF tokenizers BpeTrainer, `train([file])`",
                   "HF tokenizers `encode`", "HF tokenizers `encode_batch`", "HF tokenizers `decode`"],
    "tiktoken": ["tiktoken `encode` (allowed_special)", "tiktoken `encode_ordinary`",
                 "tiktoken `encode_ordinary_batch`", "tiktoken `encode_batch`", "tiktoken `decode`",
                 "tiktoken `decode_bytes`"],
    "gigabpe": ["gigabpe `train_bpe`"],
}


def installed(peer):
    return importlib.util.find_spec(peer) is not None


def script_fixtures():
    """The folder where the script looks for GPT-2's files (its FIXTURES; importing it runs no benchmark)."""
    spec = importlib.util.spec_from_file_location("compare_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.FIXTURES


def run_compare(tmp_path, *args, env=None):
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--size", "200KB", "--vocab-size", "400", "--encode-bytes", "100KB",
         "--processes", "2", "--repeat", "1", "--out", str(tmp_path / "results.md"), *args],
        cwd=tmp_path, env=dict(os.environ, **(env or {})), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    md = (tmp_path / "results.md").read_text(encoding="utf-8")
    assert proc.stdout.strip() == md.strip()
    return md


def rows(md):
    """{label: [cells]} of the Markdown tables' rows."""
    out = {}
    for line in md.splitlines():
        if line.startswith("| ") and not line.startswith(("| tool", "| ---")):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip("|"))]     # (a cell's own "|" is "\|")
            out[cells[0]] = cells[1:]
    return out


def row(table, prefix):
    """The row whose label is `prefix`, or else the one row whose label starts with it."""
    if prefix in table:
        return table[prefix]
    matches = [cells for label, cells in table.items() if label.startswith(prefix)]
    assert len(matches) == 1, (prefix, list(table))
    return matches[0]


def test_train(tmp_path):
    md = run_compare(tmp_path, "--only", "train")
    table = rows(md)
    assert "## Training" in md and "## Encoding" not in md
    assert "Machine: " in md and "Python " in md
    bpe = row(table, "bpe_fast `train_bpe`")
    assert float(bpe[0]) > 0 and bpe[3] == "baseline"
    for peer in ("rustbpe", "tokenizers", "gigabpe"):
        for prefix in PEER_ROWS[peer]:
            if not prefix.startswith(("rustbpe", "HF tokenizers BpeTrainer", "gigabpe")):
                continue
            cells = row(table, prefix)
            if installed(peer):
                assert cells[3].endswith("x"), cells
                assert "at the same rank" in cells[4] or cells[4].startswith("yes"), cells
                assert "merges vs" not in cells[4], cells      # the same number of merges as bpe_fast
            else:
                assert cells[0] == "not installed"


@pytest.mark.skipif(not installed("gigabpe"), reason="gigabpe is not installed")
def test_train_gigabpe_two_vocab_sizes(tmp_path):
    """gigabpe learns as many merges as bpe_fast at each size (it is asked for fewer tokens: no initial alphabet
    of 256 bytes), and they are exactly HF's train([file]) merges (same reading of the file, same ties)."""
    md = run_compare(tmp_path, "--only", "train", "--vocab-size", "300,400", "--peers", "gigabpe,tokenizers")
    assert "## Training, vocab 300" in md and "## Training, vocab 400" in md
    assert "rustbpe `train_from_iterator`" in md and "not run (--peers)" in md
    tables = md.split("## Training, vocab ")[1:]
    for vocab, section in zip((300, 400), tables):
        assert f"which is {vocab - 257:,} merges" in section
        cells = row(rows(section), "gigabpe `train_bpe`")
        assert float(cells[0]) > 0 and cells[3].endswith("x"), cells
        assert "at the same rank" in cells[4] or cells[4].startswith("yes"), cells
        assert "merges vs" not in cells[4], cells
        if installed("tokenizers"):
            assert "identical to HF `train([file])`'s" in cells[4] and "NOT" not in cells[4], cells


def test_gigabpe_needs_the_gpt2_pattern(tmp_path):
    md = run_compare(tmp_path, "--only", "train", "--pattern", "gpt4", "--peers", "gigabpe")
    expected = "not run (its pre-tokenizer is GPT-2's pattern only)" if installed("gigabpe") else "not installed"
    assert row(rows(md), "gigabpe `train_bpe`")[0] == expected


@pytest.mark.skipif(not installed("tokenizers"), reason="HF tokenizers is not installed")
def test_hf_training_gets_the_pattern_as_the_export_spells_it(tmp_path):
    # a custom pattern with "--" (regex's version 1; Oniguruma has no such operation) went to Oniguruma as it was;
    # Kimi K2's classes in classes and "&&" are Oniguruma's syntax too: HF trains with it
    md = run_compare(tmp_path, "--only", "train", "--peers", "tokenizers",
                     "--pattern", r"(?V1-f)[\p{L}--[q]]+| ?[^\s\p{L}]+|\s+|q")
    for prefix in PEER_ROWS["tokenizers"][:2]:
        assert row(rows(md), prefix)[0].startswith("not run (bpe_fast's HF export refuses the pattern")
    # rustbpe's engine is tiktoken's: it gets the pattern as tiktoken spells it (it refused "(?V1-f)")
    md = run_compare(tmp_path, "--only", "train", "--peers", "tokenizers,rustbpe", "--pattern", "kimi")
    for prefix in PEER_ROWS["tokenizers"][:2] + (PEER_ROWS["rustbpe"] if installed("rustbpe") else []):
        cells = row(rows(md), prefix)
        assert cells[3].endswith("x"), cells


@pytest.mark.skipif(not installed("tiktoken"), reason="tiktoken is not installed")
def test_encode_with_a_ranks_file(tmp_path):
    # --ranks: a .tiktoken file of one's own (Llama 4's tokenizer.model is one), here GPT-2's ranks written so
    from bpe_fast import Tokenizer

    fixtures = script_fixtures()
    Tokenizer.from_files(fixtures / "gpt2_vocab.json", fixtures / "gpt2_merges.txt", ["<|endoftext|>"]).export_tiktoken(
        tmp_path / "gpt2.tiktoken")
    md = run_compare(tmp_path, "--only", "encode", "--ranks", str(tmp_path / "gpt2.tiktoken"), "--peers", "tiktoken")
    assert f"the ranks of {tmp_path / 'gpt2.tiktoken'} (50,257 tokens)" in md
    cells = row(rows(md), "tiktoken `encode` (allowed_special)")
    assert cells[3].endswith("x") and cells[4].startswith("yes"), cells
    proc = subprocess.run([sys.executable, str(SCRIPT), "--ranks", str(tmp_path / "none.tiktoken")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "none.tiktoken: no such file" in proc.stderr


def test_encode(tmp_path):
    md = run_compare(tmp_path, "--only", "encode", "--png", str(tmp_path / "chart.png"))
    table = rows(md)
    assert "## Training" not in md
    assert row(table, "bpe_fast `encode`")[3] == "baseline"
    assert row(table, "bpe_fast `encode_to_numpy`")[4].startswith("yes")
    assert row(table, "bpe_fast `encode_file`")[4].startswith("yes")
    for call in ("decode", "decode_bytes"):     # each decodes its own ids back to the text
        assert row(table, f"bpe_fast `{call}`")[3] == "baseline"
        assert row(table, f"bpe_fast `{call}`")[4].startswith("yes")
    for peer in ("tokenizers", "tiktoken"):
        for prefix in PEER_ROWS[peer]:
            if "BpeTrainer" in prefix:
                continue
            cells = row(table, prefix)
            if installed(peer):
                assert cells[4].startswith("yes"), (prefix, cells)
            else:
                assert cells[0] == "not installed"
    if (script_fixtures() / "gpt2_vocab.json").exists():
        assert "GPT-2's ranks" in md
    if installed("matplotlib"):
        assert (tmp_path / "chart.png").stat().st_size > 0
    else:
        assert "matplotlib is not installed" in md


def test_every_row_has_the_headers_cells(tmp_path):
    # "not run (only with --encoding cl100k_base|o200k_base)": its "|" made three rows of every default report
    # one cell longer than the table (helper-149)
    md = run_compare(tmp_path, "--only", "encode")
    for line in md.splitlines():
        if line.startswith("| "):
            assert len(re.split(r"(?<!\\)\|", line.strip().strip("|"))) == 6, line
    assert "cl100k_base\\|o200k_base" in md


_WRONG_ID = """
import bpe_fast.tokenizer as _t
_real = _t.Tokenizer.encode_to_numpy
def _wrong(self, *args, **kwargs):
    ids = _real(self, *args, **kwargs).copy()
    ids[7] += 1
    return ids
_t.Tokenizer.encode_to_numpy = _wrong
"""


def test_ids_that_differ_fail_the_run_and_are_named(tmp_path):
    # a "NO" in the table was all: exit 0, nothing on stderr, so a script could not catch it (helper-149)
    (tmp_path / "patch").mkdir()
    (tmp_path / "patch" / "sitecustomize.py").write_text(_WRONG_ID)
    path = os.pathsep.join(filter(None, [str(tmp_path / "patch"), os.environ.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--size", "200KB", "--vocab-size", "400", "--encode-bytes", "100KB",
         "--processes", "2", "--repeat", "1", "--only", "encode", "--peers", "tiktoken"],
        cwd=tmp_path, env=dict(os.environ, PYTHONPATH=path), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stderr
    assert "bpe_fast `encode_to_numpy`: NO (" in proc.stderr and "first difference at 7)" in proc.stderr


def test_missing_and_excluded_peers_are_reported(tmp_path):
    md = run_compare(tmp_path, "--only", "train", "--peers", "rustbpe,gigabpe",
                     env={"BPE_FAST_COMPARE_PRETEND_MISSING": "rustbpe,gigabpe"})
    table = rows(md)
    assert float(row(table, "bpe_fast `train_bpe`")[0]) > 0
    assert row(table, "rustbpe `train_from_iterator`")[0] == "not installed"
    assert row(table, "gigabpe `train_bpe`")[0] == "not installed"
    for prefix in PEER_ROWS["tokenizers"][:2]:
        assert row(table, prefix)[0] == "not run (--peers)"


def test_bad_arguments(tmp_path):
    proc = subprocess.run([sys.executable, str(SCRIPT), "--peers", "sentencepiece"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "unknown" in proc.stderr
    proc = subprocess.run([sys.executable, str(SCRIPT), "--vocab-size", "1000,200"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "at least 257" in proc.stderr
    # a chart matplotlib cannot write, or one over the Markdown, failed after every measurement (helper-149)
    for args, words in ((["--png", "same.md"], "a chart file ends in .avif, .eps"),
                        (["--png", "r.png", "--out", "r.png"], "is --out too")):
        proc = subprocess.run([sys.executable, str(SCRIPT), *args], cwd=tmp_path, capture_output=True, text=True,
                              timeout=60)
        assert proc.returncode == 2 and words in proc.stderr, proc.stderr
    (tmp_path / "empty.txt").write_bytes(b"")
    proc = subprocess.run([sys.executable, str(SCRIPT), "--corpus", "empty.txt"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 1 and "--corpus empty.txt: empty" in proc.stderr, proc.stderr


@pytest.mark.parametrize("args, words", [
    (["--size", "0"], "--size"),
    (["--size", "junk"], "--size"),
    (["--encode-bytes", "junk"], "--encode-bytes"),
    (["--encode-bytes", "0"], "--encode-bytes"),
    (["--pattern", "("], "--pattern"),
    (["--timeout", "0"], "--timeout"),
    (["--timeout", "-1"], "--timeout"),
])
def test_bad_sizes_patterns_and_timeouts_are_one_line(tmp_path, args, words):
    """Refused before anything runs, with argparse's one-line error naming the option (no traceback, no
    run on an empty corpus or with every job failing)."""
    proc = subprocess.run([sys.executable, str(SCRIPT), *args, "--workdir", str(tmp_path / "work")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("compare.py: error: ") and words in last, last
    assert not proc.stdout


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
@pytest.mark.parametrize("lister", ["the kernel's lists if any", "every process's parent"])
def test_tree_memory_counts_a_child_started_by_another_thread(lister):
    """The sampled memory of a job's process tree includes a process started by a thread other than the main
    one (a pool started from a thread): Linux lists such a child under that thread (/proc/PID/task/TID/children),
    not under the main thread, and some kernels have no such lists at all."""
    import threading

    spec = importlib.util.spec_from_file_location("compare_script", SCRIPT)
    compare = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(compare)
    size_mb = 150
    started, done, box = threading.Event(), threading.Event(), {}

    def start_child():          # stays alive while measured, so the child stays this thread's own
        child = subprocess.Popen([sys.executable, "-c", f"import sys, time; x = bytearray({size_mb} << 20); "
                                  "print('ready', flush=True); sys.stdin.read()"],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        child.stdout.readline()
        box["child"] = child
        started.set()
        done.wait(60)

    thread = threading.Thread(target=start_child)
    thread.start()
    try:
        assert started.wait(60)

        def rss_kb(pid):
            with open(f"/proc/{pid}/status") as f:
                return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))

        assert rss_kb(box["child"].pid) > size_mb * 1024
        children = compare._children_by_parent() if lister == "every process's parent" else None
        tree = compare._tree_rss_kb(os.getpid(), children)
        assert tree > rss_kb(os.getpid()) + size_mb * 1024 * 0.9, (tree, rss_kb(os.getpid()))
    finally:
        done.set()
        thread.join()
        if "child" in box:
            box["child"].communicate("", timeout=60)


def test_a_decoded_text_that_differs_is_reported_where(tmp_path):
    spec = importlib.util.spec_from_file_location("compare_script", SCRIPT)
    compare = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(compare)
    (tmp_path / "text.txt").write_bytes(b"hello world")
    for got, expected in [(b"hello world", "yes (11 bytes)"),
                          (b"hello_world", "NO (11 bytes vs 11, first difference at byte 5)"),
                          (b"hello", "NO (5 bytes vs 11, first difference at byte 5)")]:
        (tmp_path / "out").write_bytes(got)
        job = compare.Job("decode", "x", "decode.bpe_fast", {"text": str(tmp_path / "text.txt"),
                                                              "out": str(tmp_path / "out")}, tool="bpe_fast")
        assert compare.check_text(job) == ""        # not run: nothing to check
        job.runs.append((1.0, 0.0, 1.0))
        assert compare.check_text(job) == expected
