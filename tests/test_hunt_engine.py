"""Found by an adversarial hunt on the merge engine (bpe_fast/_train.pyx) and the training around it: one test
a bug, each failing before its fix; then the hunt's strategies for the engine's rarely exercised paths, which
found nothing there, kept as guards. Expected values come from the plain-Python oracle or by hand."""
import functools
import sys
import threading
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from bpe_fast import GPT2_PATTERN, Tokenizer, train_bpe, train_from_counts
from bpe_fast._train import MergeEngine
from bpe_fast.train import corpus_statistics, counts_to_arrays, merges_to_arrays

from corpora import write
from train_oracle import oracle_continue_merges, oracle_count_pretokens, oracle_merges, oracle_train_options


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
    while True:                       # until the run has begun (it merges without the GIL, for a second or so)
        try:
            eng.num_merges
        except RuntimeError:
            break
    calls = [lambda: eng.num_merges, eng.finish, lambda: eng.run(5), eng.next_count, eng.merges, eng.merge_counts, eng.memory,
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


# ---- the engine's rarely exercised paths against the oracle (no bug found; kept as guards) ------------------

def _build_by_halves(token, merges, known, draw):
    """Merges that make `token` from single bytes, split at drawn points (so its halves differ run to run)."""
    if token in known or len(token) == 1:
        return
    cut = draw(st.integers(1, len(token) - 1))
    _build_by_halves(token[:cut], merges, known, draw)
    _build_by_halves(token[cut:], merges, known, draw)
    merges.append((token[:cut], token[cut:]))
    known.add(token)


@st.composite
def long_token_ties(draw):
    """Words holding tokens of 63 to 513 bytes that share all but their last few bytes, made by replayed merges
    split anywhere: pairs of them tie, and the tie-break reads bytes past SHORT (64) and CHUNK (256)."""
    size = draw(st.sampled_from([63, 64, 65, 255, 256, 257, 300, 513]))
    prefix = bytes(draw(st.lists(st.sampled_from(b"ab"), min_size=size, max_size=size)))
    tokens = sorted({prefix[:draw(st.integers(size - 3, size))] + bytes(draw(st.lists(st.sampled_from(b"abc"),
                                                                                        max_size=3)))
                     for _ in range(draw(st.integers(2, 4)))})
    merges, known = [], set()
    for token in draw(st.permutations(tokens)):
        _build_by_halves(token, merges, known, draw)
    words = {}
    for token in tokens:
        z = bytes([draw(st.sampled_from(b"xyz"))])
        word = draw(st.sampled_from([token + z, z + token, token + token, z + token + z]))
        words[word] = words.get(word, 0) + draw(st.integers(1, 2))
    return words, merges


@settings(max_examples=40, deadline=None)
@given(long_token_ties(), st.sampled_from([0, 1 << 16]), st.booleans(), st.booleans(),
       st.sampled_from([None, 0, 3]))
def test_engine_ties_between_long_tokens_equal_the_oracle(case, heap_slack, lean, narrow, budget):
    words, initial = case
    eng = MergeEngine(*counts_to_arrays(words), heap_slack=heap_slack, lean=lean, narrow=narrow,
                      positions_budget=budget)
    eng.replay(*merges_to_arrays(initial))
    eng.run(30)
    assert eng.merges() == initial + oracle_continue_merges(words, 30, initial)


def _thue_morse(k, a, b):
    bits = [0]
    for _ in range(k):
        bits += [1 - x for x in bits]
    return bytes(a if x == 0 else b for x in bits)


def test_engine_symbols_whose_rolling_hashes_collide_stay_apart():
    # The Thue-Morse word of 1024 bytes and its complement have the same rolling hash mod 2**64 (any odd base),
    # as do both followed by the same bytes: tokens with equal hashes, equal tags and lengths, told apart only
    # by their bytes.
    s, t = _thue_morse(10, ord("a"), ord("b")), _thue_morse(10, ord("b"), ord("a"))
    base, mask = 0x100000001B3, 2 ** 64 - 1
    assert len({functools.reduce(lambda h, x: (h * base + x + 1) & mask, word, 0) for word in (s, t)}) == 1
    for words in ({s: 1, t: 1}, {s + b"a": 2, t + b"a": 1, s: 1}):
        eng = MergeEngine(*counts_to_arrays(words), heap_slack=0, lean=True)
        eng.run(10 ** 4)
        merges, made = eng.merges(with_tokens=True)
        assert merges == oracle_merges(words, 10 ** 4)
        assert s in made and made == [a + b for a, b in merges]


@st.composite
def repetitive_words(draw):
    """Small alphabets, long runs of one unit (overlapping pairs, a pair many times in one word), one-byte and
    empty words, counts of 0 and around the engine's 2**16 class boundary."""
    alphabet = draw(st.sampled_from([b"a", b"ab", b"abc", b"\x00\xff"]))
    words = {}
    for _ in range(draw(st.integers(0, 10))):
        unit = bytes(draw(st.lists(st.sampled_from(alphabet), min_size=1, max_size=3)))
        word = draw(st.sampled_from([unit * draw(st.integers(0, 90)), unit]))
        word += bytes(draw(st.lists(st.sampled_from(alphabet), max_size=4)))
        words[word] = words.get(word, 0) + draw(st.sampled_from([0, 1, 2, 3, 2 ** 16 - 1, 2 ** 16]))
    return words


@settings(max_examples=60, deadline=None)
@given(repetitive_words(), st.integers(1, 120), st.sampled_from([0, 1 << 16]), st.booleans(),
       st.none() | st.integers(1, 70), st.integers(0, 120), st.booleans(), st.sampled_from([None, 0, 5]))
def test_engine_on_repetitive_words_equals_the_oracle(words, max_merges, heap_slack, lean, max_len, cut, narrow,
                                                     budget):
    eng = MergeEngine(*counts_to_arrays(words), heap_slack=heap_slack, lean=lean, max_token_length=max_len,
                      narrow=narrow, positions_budget=budget)
    first = eng.run(min(cut, max_merges))
    eng.run(max_merges - first)
    want, chosen = oracle_continue_merges(words, max_merges, max_token_length=max_len, with_counts=True)
    assert eng.merges() == want and eng.merge_counts() == [count for count, _ in chosen]


LONG_RUNS = st.lists(st.one_of(st.sampled_from(["a", "b", " ", "ab", "\n", "<|eot|>"]),
                               st.tuples(st.sampled_from(["a", "ab", "ba", "aab"]), st.integers(10, 150))
                               .map(lambda unit: unit[0] * unit[1])), max_size=30).map("".join)
OPTIONS = st.fixed_dictionaries({
    "min_frequency": st.integers(1, 3),
    "max_token_length": st.none() | st.integers(1, 100),
    "special_tokens_position": st.sampled_from(["after_bytes", "end"]),
    "pad_vocab_to_multiple_of": st.none() | st.integers(1, 16),
})


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(text=LONG_RUNS, extra=st.integers(0, 80), specials=st.sampled_from([[], ["<|eot|>"]]), options=OPTIONS,
       chunk_bytes=st.sampled_from([None, 16, 300]))
def test_train_bpe_on_long_runs_equals_the_oracle_with_one_or_two_processes(tmp_path, text, extra, specials,
                                                                             options, chunk_bytes):
    path = write(tmp_path, text)
    vocab_size = 256 + len(specials) + extra
    want = oracle_train_options(oracle_count_pretokens(text, specials, GPT2_PATTERN), vocab_size, specials,
                                **options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for processes in (1, 2):
            assert train_bpe(path, vocab_size, specials, num_processes=processes, chunk_bytes=chunk_bytes,
                             **options) == want
