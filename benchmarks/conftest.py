"""Shared inputs for the benchmarks: fixed, seeded corpora made once per session.

Set BPE_FAST_BENCH_CORPUS to a real corpus (e.g. TinyStories' train file) to benchmark on it instead of the
synthetic one (the first BPE_FAST_BENCH_BYTES bytes of it, default 20 MB, cut at a line end).
"""
import os
from pathlib import Path

import pytest

from bpe_fast.synthetic import generate

FIXTURES = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures"
EOT = "<|endoftext|>"


def _bench_bytes():
    return int(os.environ.get("BPE_FAST_BENCH_BYTES", 20_000_000))


@pytest.fixture(scope="session")
def corpus_path(tmp_path_factory):
    """A corpus file of about BPE_FAST_BENCH_BYTES bytes: synthetic (seed 0) or a prefix of a real one."""
    size = _bench_bytes()
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    real = os.environ.get("BPE_FAST_BENCH_CORPUS")
    if real:
        with open(real, "rb") as src:
            data = src.read(size)
        cut = data.rfind(b"\n") + 1 or len(data)
        path.write_bytes(data[:cut])
    else:
        generate(path, size, seed=0)
    return path


@pytest.fixture(scope="session")
def small_corpus_path(tmp_path_factory):
    """1 MB synthetic corpus (seed 1): a full training run in the caller's process."""
    path = tmp_path_factory.mktemp("small") / "small.txt"
    generate(path, 1_000_000, seed=1)
    return path
