"""Counting pre-tokens on 2 local Dask workers against 2 local processes, on the same ~50 MB file.

    pytest benchmarks/bench_dask.py -s        # prints the Dask / local ratio (also in extra_info)

The cluster is started once per module (not timed); one warm-up round lets the workers import bpe_fast.
Target: Dask within 1.3x of local multiprocessing.
"""
import statistics
import time

import pytest

distributed = pytest.importorskip("distributed", reason="the Dask benchmark needs dask[distributed]")

from bpe_fast import count_pretokens
from bpe_fast.synthetic import generate

from conftest import EOT

SIZE = 50_000_000


@pytest.fixture(scope="module")
def corpus_50mb(tmp_path_factory):
    path = tmp_path_factory.mktemp("dask") / "corpus_50mb.txt"
    generate(path, SIZE, seed=0)
    return path


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  scheduler_kwargs={"dashboard": False}) as cluster, \
            distributed.Client(cluster) as client:
        yield client


def test_count_50mb_local_2_processes(benchmark, corpus_50mb):
    benchmark.extra_info["bytes"] = SIZE
    counts = benchmark.pedantic(count_pretokens, args=(corpus_50mb, [EOT]), kwargs={"num_processes": 2},
                                rounds=5, iterations=1, warmup_rounds=1)
    assert counts


def test_count_50mb_dask_2_workers(benchmark, corpus_50mb, client):
    benchmark.extra_info["bytes"] = SIZE
    counts = benchmark.pedantic(count_pretokens, args=(corpus_50mb, [EOT]), kwargs={"client": client},
                                rounds=5, iterations=1, warmup_rounds=1)
    assert counts == count_pretokens(corpus_50mb, [EOT], num_processes=2)


def test_count_50mb_dask_vs_local_interleaved(benchmark, corpus_50mb, client):
    """The ratio of median times, Dask over local, from runs taken in turn (Dask first every other round), so
    a machine shared with other work slows both alike. The time shown is one local plus one Dask count."""
    times = {"local": [], "dask": []}
    turn = []

    def timed(name, **kwargs):
        start = time.perf_counter()
        count_pretokens(corpus_50mb, [EOT], **kwargs)
        times[name].append(time.perf_counter() - start)

    def both():
        turn.append(None)
        runs = [lambda: timed("local", num_processes=2), lambda: timed("dask", client=client)]
        for run in runs[::-1] if len(turn) % 2 else runs:
            run()

    benchmark.pedantic(both, rounds=6, iterations=1, warmup_rounds=1)
    if benchmark.disabled:                      # --benchmark-disable: one run, no warm-up, nothing to compare
        return
    ratio = statistics.median(times["dask"][1:]) / statistics.median(times["local"][1:])   # [0]: warm-up
    benchmark.extra_info["dask_over_local_median"] = round(ratio, 3)
    print(f"\nDask / local, median of {len(times['dask']) - 1} runs each, in turn: {ratio:.2f} (target <= 1.3)")
