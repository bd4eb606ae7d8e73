"""Found by an adversarial hunt on the merge engine (bpe_fast/_train.pyx) and the training around it: one test
a bug, each failing before its fix; expected values come from the plain-Python oracle or by hand."""
import sys
import threading

import numpy as np
import pytest

from bpe_fast import Tokenizer, train_from_counts
from bpe_fast._train import MergeEngine
from bpe_fast.train import corpus_statistics, counts_to_arrays, merges_to_arrays

from train_oracle import oracle_continue_merges, oracle_merges


def test_an_engine_set_up_again_is_refused_not_mixed_with_its_first_words():
    # __init__ called on a built engine laid the new words out on top of the old symbols, pairs and arena:
    # {b"ab": 1} then gave 1000 merges (out-of-range positions of the first words read into the new slots).
    words = {b"hello": 3, b"world": 2, b"aaaa": 5}
    eng = MergeEngine(*counts_to_arrays(words))
    eng.run(2)
    with pytest.raises(RuntimeError, match="already"):
        eng.__init__(*counts_to_arrays({b"ab": 1}))
    eng.run(10)                               # the engine is unchanged: it goes on with its own words
    assert eng.merges() == oracle_merges(words, 12)
    eng.finish()
    with pytest.raises(RuntimeError, match="already"):
        eng.__init__(*counts_to_arrays(words))


def test_corpus_statistics_of_counts_near_the_int64_limit_are_exact():
    # The engine takes any counts whose pair counts fit int64; words of one byte make no pair, so their counts
    # may sum past 2**63. The statistics were int64 sums (np.sum, np.dot) that wrapped to negative numbers,
    # which Tokenizer(..., training=...) then refused.
    counts = {b"a": 2 ** 62, b"b": 2 ** 62, b"cd": 1}
    pretokens = sum(counts.values())
    pretoken_bytes = sum(len(w) * n for w, n in counts.items())
    result = train_from_counts(counts, 257)
    assert result[1] == [(b"c", b"d")]
    assert result.training["corpus"] == {"pretokens": pretokens, "pretoken_bytes": pretoken_bytes,
                                         "distinct_pretokens": 3}
    assert Tokenizer(*result, training=result.training).training["corpus"]["pretokens"] == 2 ** 63 + 1
    # a pair count of 2**63 - 1 is the largest the engine takes: 2 bytes each
    result = train_from_counts({b"ab": 2 ** 63 - 1}, 257)
    assert result.training["corpus"]["pretoken_bytes"] == 2 * (2 ** 63 - 1)
    assert result.training["merge_counts"] == [2 ** 63 - 1]
    # the tables of train_bpe's workers (a pre-token may be listed twice) too
    tokens, offsets, freqs = counts_to_arrays({b"xyz": 2 ** 62, b"ab": 2 ** 62})
    tables = (np.concatenate([tokens, tokens]), np.concatenate([offsets, offsets[1:] + offsets[-1]]),
              np.concatenate([freqs, freqs]))
    assert corpus_statistics(*tables, may_repeat=True) == {"pretokens": 2 ** 64, "pretoken_bytes": 5 * 2 ** 63,
                                                           "distinct_pretokens": 2}


def test_an_engine_in_use_by_another_thread_refuses_calls_instead_of_crashing():
    # run() releases the GIL: finish() from another thread meanwhile freed the arrays under it, and a second
    # run() merged in the same arrays at once (both a segmentation fault). Every call is now a RuntimeError
    # while one thread is in the engine; the run goes on undisturbed.
    rng = np.random.default_rng(0)
    lengths = rng.integers(2, 40, 20_000)
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    eng = MergeEngine(rng.integers(97, 107, offsets[-1]).astype(np.uint8), offsets,
                      rng.integers(1, 9, len(lengths)).astype(np.int64))
    done = []
    worker = threading.Thread(target=lambda: done.append(eng.run(10 ** 9)))
    worker.start()
    while eng.num_merges == 0:        # the run has begun (it merges without the GIL, for a second or so)
        pass
    calls = [eng.finish, lambda: eng.run(5), eng.next_count, eng.merges, eng.merge_counts, eng.memory,
             lambda: eng.pair_count(b"a", b"b"), lambda: eng.replay(*merges_to_arrays([(b"a", b"b")])),
             lambda: eng.__init__(*counts_to_arrays({b"ab": 1}))]
    for call in calls:
        with pytest.raises(RuntimeError, match="another thread"):
            call()
    worker.join()
    merges, made = eng.merges(with_tokens=True)
    assert len(merges) == done[0] > 1000 and eng.next_count() == 0
    assert made == [a + b for a, b in merges]


def test_a_heap_slack_of_sys_maxsize_never_prunes_the_heap():
    # heap_slack: entries the heap may gain beyond twice its size after the last pruning. The bound
    # 2 * size + heap_slack overflowed for sys.maxsize (undefined behaviour; here a negative bound), and the heap
    # was pruned after every merge, as with heap_slack=0, where any slack past the heap's size never prunes.
    rng = np.random.default_rng(0)
    lengths = rng.integers(2, 40, 3000)
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    tokens = rng.integers(97, 107, offsets[-1]).astype(np.uint8)
    counts = rng.integers(1, 9, len(lengths)).astype(np.int64)
    heaps = {}
    for slack in (0, 2 ** 40, sys.maxsize):
        eng = MergeEngine(tokens, offsets, counts, heap_slack=slack)
        eng.run(1500)
        heaps[slack] = eng.memory()["heap"]
    assert heaps[0] < heaps[2 ** 40] == heaps[sys.maxsize]


@pytest.mark.parametrize("value", [2.5, "3", True, np.float64(3.0)])
def test_engine_max_token_length_that_is_not_an_int_is_a_type_error(value):
    # 2.5 was taken as 2 (the pair (a, bc) left out), "3" was a TypeError about '<', True a limit of 1
    with pytest.raises(TypeError, match="max_token_length must be an int"):
        MergeEngine(*counts_to_arrays({b"abc": 1}), max_token_length=value)


def test_engine_max_token_length_takes_numpy_ints():
    eng = MergeEngine(*counts_to_arrays({b"abc": 1}), max_token_length=np.int64(2))
    eng.run(5)
    assert eng.merges() == oracle_continue_merges({b"abc": 1}, 5, max_token_length=2) == [(b"b", b"c")]
