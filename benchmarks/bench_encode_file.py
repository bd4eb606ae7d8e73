"""Encoding a file to .npy (bpe_fast.encode_file): throughput with 1 and 2 workers, and peak memory.

    pytest benchmarks/bench_encode_file.py -s --benchmark-columns=min,median,rounds

- test_encode_file[1 worker / 2 workers]: the corpus of conftest.py (BPE_FAST_BENCH_BYTES, default 20 MB)
  encoded with a 10,000-token vocabulary trained on its first 5 MB. The two are run in alternation, round by
  round, inside one benchmark (this machine's speed drifts over seconds), and each records its MB/s;
  extra_info["scaling"] is the 2-worker throughput over the 1-worker one, from the medians
  (BPE_FAST_BENCH_ROUNDS rounds, default 5).
- test_encode_file_peak_memory: peak resident memory of a fresh `python -m bpe_fast encode` on the corpus and
  on the corpus four times over. The token array streams to disk, so the two peaks should be close.
"""
import os
import subprocess
import sys
import time

import pytest

from bpe_fast import Tokenizer, encode_file, train_bpe

from conftest import EOT, record_scaling

ROUNDS = int(os.environ.get("BPE_FAST_BENCH_ROUNDS", 5))      # alternating rounds of 1 and 2 workers


@pytest.fixture(scope="module")
def tokenizer_dir(corpus_path, tmp_path_factory):
    sample = tmp_path_factory.mktemp("sample") / "sample.txt"
    with open(corpus_path, "rb") as src:
        data = src.read(5_000_000)
    sample.write_bytes(data[:data.rfind(b"\n") + 1])
    vocab, merges = train_bpe(sample, 10_000, [EOT], num_processes=2)
    folder = tmp_path_factory.mktemp("tok") / "tok"
    Tokenizer(vocab, merges, [EOT]).save(folder)
    return folder


def test_encode_file_1_and_2_workers(benchmark, corpus_path, tokenizer_dir, tmp_path):
    size = corpus_path.stat().st_size
    times = {1: [], 2: []}

    def one_round():
        for workers in (1, 2):
            tok = Tokenizer.load(tokenizer_dir)        # a fresh tokenizer: no pre-token cache carried over
            out = tmp_path / f"ids{workers}.npy"
            out.unlink(missing_ok=True)                # replacing the last round's file costs its unlinking
            start = time.perf_counter()
            encode_file(tok, corpus_path, out, num_processes=workers)
            times[workers].append(time.perf_counter() - start)

    benchmark.pedantic(one_round, rounds=ROUNDS, iterations=1)
    import numpy as np

    one, two = np.load(tmp_path / "ids1.npy"), np.load(tmp_path / "ids2.npy")
    assert one.dtype == np.uint16 and np.array_equal(one, two)
    record_scaling(benchmark, "encode_file", size, times, "worker")


_RUN_AND_REPORT_PEAK = """
import sys
from bpe_fast.cli import main
code = main(sys.argv[1:]) or 0
with open("/proc/self/status") as f:
    print(next(line.split()[1] for line in f if line.startswith("VmHWM:")))
sys.exit(code)
"""


def _peak_rss_mb(args, cwd):
    """Run `bpe-fast ARGS` in a new interpreter; its peak resident memory in MB, as the process itself reads it
    (VmHWM; a child's ru_maxrss can include the parent's memory at the fork)."""
    proc = subprocess.run([sys.executable, "-c", _RUN_AND_REPORT_PEAK, *args], cwd=cwd, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    return int(proc.stdout.split()[-1]) / 1024


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads VmHWM from /proc (Linux)")
def test_encode_file_peak_memory(benchmark, corpus_path, tokenizer_dir, tmp_path):
    big = tmp_path / "big.txt"
    data = corpus_path.read_bytes()
    with open(big, "wb") as f:
        for _ in range(4):
            f.write(data)
    peaks = {}

    def measure():
        for name, path in (("1x", corpus_path), ("4x", big)):
            peaks[name] = _peak_rss_mb(["-q", "encode", "-t", str(tokenizer_dir), str(path),
                                        "-o", str(tmp_path / f"{name}.npy"), "--processes", "2"], cwd=tmp_path)

    benchmark.pedantic(measure, rounds=1, iterations=1)
    benchmark.extra_info.update({"peak MB 1x": round(peaks["1x"]), "peak MB 4x": round(peaks["4x"]),
                                 "corpus MB": round(len(data) / 1e6)})
    print(f"\nencode peak RSS: {peaks['1x']:.0f} MB for {len(data) / 1e6:.0f} MB, "
          f"{peaks['4x']:.0f} MB for {4 * len(data) / 1e6:.0f} MB")
    assert (tmp_path / "4x.npy").stat().st_size > 4 * (tmp_path / "1x.npy").stat().st_size - 1000
