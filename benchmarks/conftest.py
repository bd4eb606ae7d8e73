"""Shared inputs for the benchmarks: fixed, seeded corpora made once per session.

The corpus the training and file-encoding benchmarks use is synthetic (bpe_fast.synthetic, seed 0) unless a real
one is given, by the command line or, as a fallback, the environment:

    pytest benchmarks --corpus /data/real.txt [--corpus-bytes 100MB | --corpus-bytes all]
    BPE_FAST_BENCH_CORPUS=/data/real.txt BPE_FAST_BENCH_BYTES=100000000 pytest benchmarks

Of a real corpus the first --corpus-bytes (BPE_FAST_BENCH_BYTES, default 20 MB) are used, cut at a line end;
"all" uses the whole file. The size also sets the synthetic corpus's. The corpus is recorded in the benchmark's
machine_info, so pytest-benchmark warns when a run is compared with one made on another corpus.
"""
import os
import statistics
from pathlib import Path

import pytest

from bpe_fast.synthetic import generate, parse_size

# tiktoken's loaders keep a copy of every file they read, local ones too, in a cache folder (by default
# data-gym-cache in the temporary folder) under the path's SHA-1: the temporary rank files read here are not to be
# left there (nor a stale copy read back for a reused path). "" turns the cache off; a test that wants one sets it.
os.environ["TIKTOKEN_CACHE_DIR"] = ""

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"       # copies of the published files, with their licences
EOT = "<|endoftext|>"
DEFAULT_BYTES = 20_000_000
CORPUS_KEY = pytest.StashKey()


def pytest_addoption(parser):
    group = parser.getgroup("bpe_fast benchmarks")
    group.addoption("--corpus", metavar="PATH", default=None,
                    help="a real UTF-8 corpus (documents separated by <|endoftext|>) for the training and "
                         "file-encoding benchmarks, instead of the synthetic one (env: BPE_FAST_BENCH_CORPUS)")
    group.addoption("--corpus-bytes", metavar="SIZE", default=None,
                    help="how much of the corpus to use: a size like 100MB (its first bytes, cut at a line end) "
                         "or 'all'; also the synthetic corpus's size (env: BPE_FAST_BENCH_BYTES; default 20MB)")


def pytest_configure(config):
    config.stash[CORPUS_KEY] = _read_corpus_settings(config)    # a bad option stops the run here


def _corpus_settings(config):
    """(real corpus path or None, bytes or None for the whole file)."""
    if CORPUS_KEY not in config.stash:
        config.stash[CORPUS_KEY] = _read_corpus_settings(config)
    return config.stash[CORPUS_KEY]


def _read_corpus_settings(config):
    """(real corpus path or None, bytes or None for the whole file), from the options or the environment."""
    real = config.getoption("--corpus") or os.environ.get("BPE_FAST_BENCH_CORPUS") or None
    size = config.getoption("--corpus-bytes") or os.environ.get("BPE_FAST_BENCH_BYTES") or DEFAULT_BYTES
    if str(size).strip().lower() == "all":
        if not real:
            raise pytest.UsageError("--corpus-bytes all needs a real corpus (--corpus PATH)")
        nbytes = None
    else:
        try:
            nbytes = parse_size(size)
        except ValueError as e:
            raise pytest.UsageError(f"--corpus-bytes / BPE_FAST_BENCH_BYTES: {e}") from None
        if nbytes <= 0:
            raise pytest.UsageError(f"--corpus-bytes / BPE_FAST_BENCH_BYTES: must be more than 0 bytes, got {size!r}")
    if real:
        real = Path(real).expanduser().resolve()
        if not real.is_file():
            raise pytest.UsageError(f"--corpus / BPE_FAST_BENCH_CORPUS: {real}: no such file")
        if real.stat().st_size == 0:        # (the benchmarks then failed their asserts, saying nothing of why)
            raise pytest.UsageError(f"--corpus / BPE_FAST_BENCH_CORPUS: {real}: empty")
    return real, nbytes


def _corpus_description(config):
    real, nbytes = _corpus_settings(config)
    if real is None:
        return f"synthetic (bpe_fast.synthetic, seed 0), {nbytes / 1e6:.1f} MB"
    whole = real.stat().st_size
    used = "all of it" if nbytes is None or nbytes >= whole else f"its first {nbytes / 1e6:.1f} MB"
    return f"{real} ({whole / 1e6:.1f} MB), {used}"


def pytest_report_header(config):
    return f"bpe_fast benchmark corpus: {_corpus_description(config)}"


try:
    import pytest_benchmark  # noqa: F401  (the hook below is pytest-benchmark's; pytest rejects unknown hooks)
except ImportError:
    pass
else:
    def pytest_benchmark_update_machine_info(config, machine_info):
        machine_info["bpe_fast_corpus"] = _corpus_description(config)


@pytest.fixture(scope="session")
def corpus_path(request, tmp_path_factory):
    """The corpus file: synthetic (seed 0) of --corpus-bytes bytes, or a prefix of the real corpus cut at a
    line end, or the real corpus itself with --corpus-bytes all (or when it is no larger than asked)."""
    real, size = _corpus_settings(request.config)
    if real is not None and (size is None or size >= real.stat().st_size):
        return real
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    if real is not None:
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


def record_scaling(benchmark, what, size, times, unit):
    """Put the 1- and 2-worker throughputs of alternating rounds (times: {1: [s, ...], 2: [...]}) and their
    ratio from the medians in the benchmark's extra_info, and print them. Nothing under --benchmark-disable."""
    if benchmark.stats is None:                   # --benchmark-disable: ran once, untimed
        return
    plural = unit + ("es" if unit.endswith("s") else "s")
    median = {w: statistics.median(t) for w, t in times.items()}
    benchmark.extra_info.update({
        f"MB/s 1 {unit}": round(size / median[1] / 1e6, 1),
        f"MB/s 2 {plural}": round(size / median[2] / 1e6, 1),
        "scaling": round(median[1] / median[2], 3),
        "scaling per round": [round(a / b, 3) for a, b in zip(times[1], times[2])],
    })
    print(f"\n{what}, {size / 1e6:.0f} MB: 1 {unit} {median[1]:.3f} s, 2 {plural} {median[2]:.3f} s "
          f"(medians of {len(times[1])} alternating rounds): {median[1] / median[2]:.2f}x")
