"""Smoke test of benchmarks/small_calls.py: it runs, times every row, and its check that bpe_fast's result of
each call equals tiktoken's holds (it exits with the row's name otherwise). No timing is asserted."""
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "small_calls.py"


@pytest.mark.parametrize("corpus", ["fixture", "synthetic"])
@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
def test_small_calls_runs_and_checks_results(tmp_path, encoding, corpus):
    # the fixture text, or bpe-fast synth's (its documents end with <|endoftext|>, which the script's texts
    # must leave out: encode refuses it by default, and the script stopped there)
    for module in ("tiktoken", "bpe_openai"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} (a test extra) is not installed")
    out = tmp_path / "small.md"
    args = []
    if corpus == "synthetic":
        from bpe_fast.synthetic import generate

        generate(tmp_path / "synth.txt", 200_000, seed=1)
        assert "<|endoftext|>" in (tmp_path / "synth.txt").read_text(encoding="utf-8")[:5000]
        args = ["--corpus", str(tmp_path / "synth.txt")]
    proc = subprocess.run([sys.executable, str(SCRIPT), "--encoding", encoding, "--scale", "0.001", "--rounds", "1",
                           "--out", str(out), *args], capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr
    rows = [line for line in out.read_text().splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert len(rows) == 16 and all(line.endswith("x |") for line in rows), rows
    assert "decode_with_offsets (a line)" in out.read_text()
