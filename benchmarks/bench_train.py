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


@pytest.mark.parametrize("vocab_size", [2_000, 10_000])
def test_merge_loop_from_counts(benchmark, corpus_counts, vocab_size):
    def run():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")       # a small corpus may run out of pairs
            return train_from_counts(corpus_counts, vocab_size, [EOT])
    vocab, merges = benchmark.pedantic(run, rounds=3, iterations=1)
    benchmark.extra_info["merges"] = len(merges)
    assert merges


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
