"""Training benchmarks: counting pre-tokens, the merge loop alone, and whole runs.

    pytest benchmarks/bench_train.py --benchmark-autosave          # record
    pytest benchmarks/bench_train.py --benchmark-compare           # compare with the last saved run
    pytest benchmarks/bench_train.py --corpus /data/real.txt --corpus-bytes 100MB    # on a real corpus

The corpus (corpus_path, see conftest.py) is synthetic unless --corpus names a real one.
"""
import os
import time
import warnings

import pytest

from bpe_fast import count_pretokens, train_bpe, train_from_counts
from bpe_fast.counts import count_file

from conftest import EOT, FIXTURES, record_scaling

ROUNDS = int(os.environ.get("BPE_FAST_BENCH_ROUNDS", 5))      # alternating rounds of 1 and 2 processes


def test_count_pretokens_2_processes(benchmark, corpus_path):
    benchmark.extra_info["bytes"] = corpus_path.stat().st_size
    counts = benchmark.pedantic(count_file, args=(corpus_path, [EOT]), kwargs={"num_processes": 2},
                                rounds=3, iterations=1)
    assert counts


def test_count_pretokens_1_process(benchmark, corpus_path):
    benchmark.extra_info["bytes"] = corpus_path.stat().st_size
    counts = benchmark.pedantic(count_file, args=(corpus_path, [EOT]), kwargs={"num_processes": 1},
                                rounds=3, iterations=1)
    assert counts


def test_count_pretokens_1_and_2_processes(benchmark, corpus_path):
    """count_pretokens with 1 and 2 processes in alternating rounds (this machine's speed drifts over
    seconds); extra_info["scaling"] is the 2-process throughput over the 1-process one, from the medians."""
    size = corpus_path.stat().st_size
    times = {1: [], 2: []}
    results = {}

    def one_round():
        for processes in (1, 2):
            start = time.perf_counter()
            results[processes] = count_pretokens(corpus_path, [EOT], num_processes=processes)
            times[processes].append(time.perf_counter() - start)

    benchmark.pedantic(one_round, rounds=ROUNDS, iterations=1)
    assert results[1] == results[2]
    record_scaling(benchmark, "count_pretokens", size, times, "process")


@pytest.fixture(scope="module")
def corpus_counts(corpus_path):
    return count_file(corpus_path, [EOT], num_processes=2)


def test_counts_file_load(benchmark, corpus_counts, tmp_path):
    """PretokenCounts.load of a saved counts file (count once, train later): reading the .npz and checking its
    arrays (no pre-token listed twice: _scan.first_repeat; 5 GB of web-like text's 88.6 million pre-tokens load
    in 25.6 s and 4.2 GB, where adding them to a counting table took 40.7 s and 11.5 GB)."""
    from bpe_fast import PretokenCounts
    path = tmp_path / "counts.npz"
    corpus_counts.save(path)
    benchmark.extra_info["distinct_pretokens"] = len(corpus_counts)
    loaded = benchmark.pedantic(PretokenCounts.load, args=(path,), rounds=3, iterations=1)
    assert loaded == corpus_counts


@pytest.mark.parametrize("vocab_size", [2_000, 10_000])
def test_merge_loop_from_counts(benchmark, corpus_counts, vocab_size):
    def run():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")       # a small corpus may run out of pairs
            return train_from_counts(corpus_counts, vocab_size, [EOT])
    vocab, merges = benchmark.pedantic(run, rounds=3, iterations=1)
    benchmark.extra_info["merges"] = len(merges)
    assert merges


def test_merge_engine_lean_and_plain(benchmark, corpus_counts):
    """The merge engine to 10,000 on the corpus's counts, lean (dropping stale positions as it compacts, which
    an engine of 2^25 slots or more does by itself) and not, in alternating rounds; extra_info records each
    one's median time and the size of its positions' arena at the end and at its largest, whose ratios are what
    lean trades."""
    import statistics

    from bpe_fast._train import MergeEngine

    arrays = (corpus_counts.tokens, corpus_counts.offsets, corpus_counts.counts)
    times = {True: [], False: []}
    arena = {}
    most = {}
    merges = {}

    def one_round():
        for lean in (True, False):
            start = time.perf_counter()
            engine = MergeEngine(*arrays, lean=lean, max_merges=10_000 - 256)   # (2-byte slots, as training)
            engine.run(10_000 - 256)
            times[lean].append(time.perf_counter() - start)
            arena[lean] = engine.memory()["positions"]
            most[lean] = 4 * engine.memory()["most_positions"]
            merges[lean] = engine.merges()

    benchmark.pedantic(one_round, rounds=3, iterations=1)
    assert merges[True] == merges[False]
    lean_time, plain_time = statistics.median(times[True]), statistics.median(times[False])
    benchmark.extra_info.update({"lean_s": lean_time, "plain_s": plain_time, "time_ratio": lean_time / plain_time,
                                 "lean_positions_bytes": arena[True], "plain_positions_bytes": arena[False],
                                 "positions_ratio": arena[True] / arena[False], "lean_most_positions_bytes": most[True],
                                 "plain_most_positions_bytes": most[False]})
    print(f"\nmerge engine to 10,000, lean / plain: time {lean_time:.3f} s / {plain_time:.3f} s "
          f"({lean_time / plain_time:.2f}x), positions {arena[True] / 1e6:.1f} MB / {arena[False] / 1e6:.1f} MB "
          f"({arena[True] / arena[False]:.2f}x), at their largest {most[True] / 1e6:.1f} MB / "
          f"{most[False] / 1e6:.1f} MB")


def test_train_corpus_2_processes(benchmark, corpus_path):
    """A whole run on the session's corpus (synthetic, or --corpus): counting and 9,743 merges."""
    benchmark.extra_info["bytes"] = corpus_path.stat().st_size

    def run():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")       # a small corpus may run out of pairs
            return train_bpe(corpus_path, 10_000, [EOT], num_processes=2)
    vocab, merges = benchmark.pedantic(run, rounds=3, iterations=1)
    benchmark.extra_info["merges"] = len(merges)
    assert merges


def test_train_small_corpus_in_process(benchmark, small_corpus_path):
    vocab, merges = benchmark.pedantic(train_bpe, args=(small_corpus_path, 1000, [EOT]),
                                       kwargs={"num_processes": 1}, rounds=5, iterations=1)
    assert len(vocab) == 1000


@pytest.mark.skipif(not (FIXTURES / "corpus.en").is_file(), reason=f"fixture corpus.en not found in {FIXTURES}")
def test_train_corpus_en_vocab_500(benchmark):
    # CS336's reference implementation takes about 0.38 s on this
    vocab, merges = benchmark.pedantic(train_bpe, args=(FIXTURES / "corpus.en", 500, [EOT]),
                                       kwargs={"num_processes": 1}, rounds=10, iterations=1)
    assert len(merges) == 243
