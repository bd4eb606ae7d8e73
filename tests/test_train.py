"""Training: the merge engine's worked examples, the driver against the plain-Python oracle, chunking,
process counts, bad input, and the published CS336 reference."""
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
import weakref

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from bpe_fast import GPT2_PATTERN, GPT4_PATTERN, train_bpe, train_from_counts
from bpe_fast.patterns import (BLOOM_PATTERN, DEEPSEEK3_PATTERN, LLAMA3_PATTERN, O200K_PATTERN, QWEN2_PATTERN, R50K_PATTERN,
                               STARCODER_PATTERN, TEKKEN_PATTERN)
from bpe_fast._train import MergeEngine
from bpe_fast.chunking import chunk_boundaries
from bpe_fast.counts import count_file
from bpe_fast.inputs import CorpusDecodeError
from bpe_fast import train as train_module
from bpe_fast.train import counts_to_arrays

from corpora import EOT, FIXTURES, make_corpus, write
from proctable import children
from train_oracle import oracle_count_pretokens, oracle_merges, oracle_train_bpe


def engine_for(words):
    """A MergeEngine over {str: count}."""
    return MergeEngine(*counts_to_arrays({w.encode(): n for w, n in words.items()}))


# ---- the engine's worked examples --------------------------------------------------------------

def test_engine_worked_example_aaab():
    # "aaab" x2: (a,a) occurs twice -> 4, (a,b) once -> 2.
    eng = engine_for({"aaab": 2})
    assert eng.pair_count(b"a", b"a") == 4 and eng.pair_count(b"a", b"b") == 2
    # merge (a,a) left to right without overlap: [aa, a, b]; (a,a) -> 0, (aa,a) +2, (a,b) stays 2
    assert eng.run(1) == 1
    assert eng.merges() == [(b"a", b"a")]
    assert eng.pair_count(b"a", b"a") == 0
    assert eng.pair_count(b"aa", b"a") == 2 and eng.pair_count(b"a", b"b") == 2
    # tie at 2: (b"aa", b"a") > (b"a", b"b") as Python compares tuples of bytes
    assert eng.run(1) == 1
    assert eng.merges()[1] == (b"aa", b"a")
    # [aaa, b]: (a,b) lost its occurrence, (aaa,b) gained it
    assert eng.pair_count(b"a", b"b") == 0 and eng.pair_count(b"aaa", b"b") == 2
    assert eng.run(10) == 1 and eng.merges()[2] == (b"aaa", b"b")
    assert eng.run(10) == 0


def test_engine_neighbour_updates_hello():
    # HF tokenizers' example: "hello", merge (l,l): (e,l) -1, (l,o) -1, (e,ll) +1, (ll,o) +1.
    eng = engine_for({"hello": 1, "ll": 5})
    assert eng.run(1) == 1 and eng.merges() == [(b"l", b"l")]
    assert eng.pair_count(b"e", b"l") == 0 and eng.pair_count(b"l", b"o") == 0
    assert eng.pair_count(b"e", b"ll") == 1 and eng.pair_count(b"ll", b"o") == 1
    assert eng.pair_count(b"h", b"e") == 1


def test_engine_rejects_bad_arrays():
    with pytest.raises(ValueError, match="dtype"):         # tokens are bytes: uint8, nothing wider
        MergeEngine(np.array([1, 300], np.int32), np.array([0, 2], np.int64), np.array([1], np.int64))
    with pytest.raises(ValueError, match="offsets"):
        MergeEngine(np.array([1, 2], np.uint8), np.array([0, 1], np.int64), np.array([1, 1], np.int64))
    with pytest.raises(ValueError, match="not increasing"):
        MergeEngine(np.array([1, 2], np.uint8), np.array([0, 2, 1, 2], np.int64), np.array([1, 1, 1], np.int64))
    with pytest.raises(ValueError, match="negative"):
        MergeEngine(np.array([1, 2], np.uint8), np.array([0, 2], np.int64), np.array([-1], np.int64))


# ---- generated corpora --------------------------------------------------------------------------

CASES = [
    ("mixed", dict(seed=1), []),
    ("mixed-specials", dict(seed=2), [EOT]),
    ("nested-specials", dict(seed=3), [EOT, EOT + EOT, "<|pad|>"]),
]


@pytest.mark.parametrize("name,kwargs,specials", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("pattern", [GPT2_PATTERN, GPT4_PATTERN, O200K_PATTERN, LLAMA3_PATTERN, QWEN2_PATTERN,
                                     TEKKEN_PATTERN, DEEPSEEK3_PATTERN, STARCODER_PATTERN, BLOOM_PATTERN],
                         ids=["gpt2", "gpt4", "o200k", "llama3", "qwen2", "tekken", "deepseek3", "starcoder", "bloom"])
def test_train_matches_oracle(tmp_path, name, kwargs, specials, pattern):
    text = make_corpus(specials=specials, **kwargs)
    path = write(tmp_path, text)
    want = oracle_train_bpe(text, 256 + len(specials) + 150, specials, pattern)
    got = train_bpe(path, 256 + len(specials) + 150, specials, num_processes=1, pattern=pattern)
    assert got[1] == want[1]
    assert got[0] == want[0]


@pytest.mark.parametrize("num_processes", [1, 2, 4])
@pytest.mark.parametrize("chunk_bytes", [64, 1000, 1 << 20])
def test_same_result_for_any_processes_and_chunks(tmp_path, num_processes, chunk_bytes):
    specials = [EOT, EOT + EOT]
    text = make_corpus(7, n_words=3000, specials=specials)
    path = write(tmp_path, text)
    want = oracle_train_bpe(text, 256 + 2 + 120, specials, GPT2_PATTERN)
    got = train_bpe(path, 256 + 2 + 120, specials, num_processes=num_processes, chunk_bytes=chunk_bytes)
    assert got == want


def test_long_runs_and_ties(tmp_path):
    # long runs of one letter (overlapping pairs), and many pairs with equal counts
    text = "a" * 501 + " " + "b" * 64 + " " + " ".join("xy yz zx qr rs st".split() * 5) + " aaa aaaa"
    path = write(tmp_path, text)
    want = oracle_train_bpe(text, 300, [], GPT2_PATTERN)
    with pytest.warns(UserWarning, match="no pairs left"):
        assert train_bpe(path, 300, [], num_processes=1) == want


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(
    text=st.lists(st.sampled_from(list("aab bc\n\r\t'sé😀中1 ") + ["<|eot|>", "ab", "\r\n", "<|eo"]),
                  max_size=150).map("".join),
    extra=st.integers(0, 40),
    specials=st.sampled_from([[], ["<|eot|>"], ["<|eot|>", "b"]]),
    pattern=st.sampled_from([GPT2_PATTERN, GPT4_PATTERN, O200K_PATTERN, LLAMA3_PATTERN, QWEN2_PATTERN, TEKKEN_PATTERN,
                             DEEPSEEK3_PATTERN, STARCODER_PATTERN, BLOOM_PATTERN]),
    num_processes=st.sampled_from([1, 2]),
    chunk_bytes=st.sampled_from([None, 8, 40]),
)
def test_random_corpora_match_oracle(tmp_path, text, extra, specials, pattern, num_processes, chunk_bytes):
    path = write(tmp_path, text)
    vocab_size = 256 + len(specials) + extra
    want = oracle_train_bpe(text, vocab_size, specials, pattern)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = train_bpe(path, vocab_size, specials, num_processes=num_processes, pattern=pattern,
                        chunk_bytes=chunk_bytes)
    assert got == want


# ---- chunking -----------------------------------------------------------------------------------

@pytest.mark.parametrize("pattern", [GPT2_PATTERN, R50K_PATTERN, GPT4_PATTERN, O200K_PATTERN, LLAMA3_PATTERN,
                                     QWEN2_PATTERN, TEKKEN_PATTERN, DEEPSEEK3_PATTERN, r"\w+|\s+|[^\w\s]+"],
                         ids=["gpt2", "r50k", "gpt4", "o200k", "llama3", "qwen2", "tekken", "deepseek3", "custom"])
@pytest.mark.parametrize("specials", [[], [EOT, EOT + EOT]], ids=["no-specials", "specials"])
def test_chunked_counts_equal_one_chunk_counts(tmp_path, pattern, specials):
    text = make_corpus(11, n_words=4000, specials=specials)
    path = write(tmp_path, text)
    whole = oracle_count_pretokens(text, specials, pattern)
    for chunk_bytes in (17, 200, 5000):
        bounds = chunk_boundaries(path, specials, pattern, chunk_bytes)
        assert bounds[0] == 0 and bounds[-1] == path.stat().st_size and bounds == sorted(set(bounds))
        if pattern != r"\w+|\s+|[^\w\s]+":      # built-in patterns: cut near every target
            assert len(bounds) - 1 >= len(text) // chunk_bytes // 3
        elif specials:                             # custom pattern: cut at special tokens only
            assert len(bounds) - 1 >= min(10, len(text) // chunk_bytes)
        assert count_file(path, specials, pattern, num_processes=1, chunk_bytes=chunk_bytes) == whole


def test_cuts_never_split_a_special_token(tmp_path):
    # "<|a|><|a|>" is one special token; a cut between its halves would split it
    specials = ["<|a|>", "<|a|><|a|>"]
    text = "x y <|a|><|a|> z " * 300
    path = write(tmp_path, text)
    for chunk_bytes in (3, 7, 11):
        for k in chunk_boundaries(path, specials, GPT2_PATTERN, chunk_bytes)[1:-1]:
            raw = text.encode()
            assert raw[k - 5:k + 5] != b"<|a|><|a|>"
        assert count_file(path, specials, num_processes=1, chunk_bytes=chunk_bytes) == \
            oracle_count_pretokens(text, specials, GPT2_PATTERN)


def test_file_without_special_tokens_is_still_cut_for_builtin_patterns(tmp_path):
    text = make_corpus(5, n_words=5000)
    path = write(tmp_path, text)
    assert len(chunk_boundaries(path, [], GPT2_PATTERN, 4096, min_chunks=4)) >= 5
    # a custom pattern has no known safe cut: one chunk
    assert chunk_boundaries(path, [], r"\S+|\s+", 4096) == [0, path.stat().st_size]


def test_text_without_spaces_is_cut_after_its_newlines(tmp_path):
    # Chinese lines ending in "。" had no cut (the rule was a space after a printable ASCII character): one range,
    # counted by one process, and encode_file held it whole (a 48 MB file: 1 range, 479 MB; now 46, 337 MB)
    import random

    from bpe_fast import Tokenizer, encode_file
    r = random.Random(3)
    lines = ["".join(r.choice("中文字词语句，的了是") for _ in range(r.randint(5, 60))) + "。" for _ in range(3000)]
    text = "\n".join(lines) + "\n/tail\n\u3000end"
    path = write(tmp_path, text)
    for pattern in (GPT2_PATTERN, O200K_PATTERN):
        assert len(chunk_boundaries(path, [], pattern, 4096, min_chunks=4)) >= 5
        assert count_file(path, [], pattern=pattern, num_processes=2, chunk_bytes=4096) == \
            oracle_count_pretokens(text, [], pattern)
    tok = Tokenizer(*train_bpe(path, 400, [], pattern=O200K_PATTERN), pattern=O200K_PATTERN)
    encode_file(tok, path, tmp_path / "ids.npy", num_processes=2, chunk_bytes=4096)
    assert np.load(tmp_path / "ids.npy").tolist() == tok.encode(text)


def test_a_special_token_across_the_edge_of_a_read_window_is_a_cut(tmp_path):
    # The first cut after the target (the middle of the file: 23,617 to 23,628 here) is looked for in a window of
    # 16 KB, read with the bytes of the longest special token past its edge (40,001 to 40,012): the token at
    # 40,000 starts before the edge and ends after it, and is this file's only cut (a custom pattern: none at
    # spaces). It was found in no window (the next starts at the edge), and the file was left whole.
    for tail in (7221, 7230, 7244):
        path = write(tmp_path, "a" * 40000 + EOT + "b" * tail)
        assert chunk_boundaries(path, [EOT], r"\S+", 1 << 30, min_chunks=2) == [0, 40000, path.stat().st_size]


# ---- bad input ----------------------------------------------------------------------------------

def test_missing_file(tmp_path):
    missing = tmp_path / "nope.txt"
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        train_bpe(missing, 300, [])


def test_vocab_size_below_minimum_states_it(tmp_path):
    path = write(tmp_path, "hello")
    with pytest.raises(ValueError, match="at least 258"):
        train_bpe(path, 257, ["<a>", "<b>"])
    with pytest.raises(TypeError):
        train_bpe(path, 300.0, [])


@pytest.mark.parametrize("specials,match", [([""], "empty"), (["<a>", "<a>"], "duplicate"),
                                            ("<a>", "list")])
def test_bad_special_tokens(tmp_path, specials, match):
    path = write(tmp_path, "hello")
    with pytest.raises((ValueError, TypeError), match=match):
        train_bpe(path, 300, specials)


def test_bad_arguments(tmp_path):
    path = write(tmp_path, "hello")
    with pytest.raises(ValueError, match="errors"):
        train_bpe(path, 300, [], errors="ignore")
    with pytest.raises(ValueError, match="num_processes"):
        train_bpe(path, 300, [], num_processes=0)
    with pytest.raises(ValueError, match="pattern"):
        train_bpe(path, 300, [], pattern="(unclosed")


def test_invalid_utf8_strict_names_file_line_and_offset(tmp_path):
    raw = ("hello world\n" * 50).encode() + b"bad \xff\xfe byte\n" + b"more text\n" * 50
    path = tmp_path / "bad.txt"
    path.write_bytes(raw)
    offset = raw.index(b"\xff")
    for num_processes, chunk_bytes in ((1, None), (2, 64)):
        with pytest.raises(CorpusDecodeError) as info:
            train_bpe(path, 300, [], num_processes=num_processes, chunk_bytes=chunk_bytes)
        msg = str(info.value)
        assert "bad.txt" in msg and f"byte offset {offset}" in msg and "line 51" in msg
        assert isinstance(info.value, ValueError)


def test_first_invalid_utf8_in_file_order_whatever_worker_meets_one(tmp_path):
    # bad bytes early and late: workers claim ranges in any order, the report is always the first in the file
    raw = b"bad \xff here\n" + ("hello world\n" * 2000).encode() + b"late \xfe\n" + b"more\n" * 500
    path = tmp_path / "bad.txt"
    path.write_bytes(raw)
    for num_processes in (2, 3):
        with pytest.raises(CorpusDecodeError) as info:
            train_bpe(path, 300, [], num_processes=num_processes, chunk_bytes=64)
        assert info.value.offset == 4 and info.value.line == 1


def test_invalid_utf8_replace_substitutes_fffd(tmp_path):
    raw = b"caf\xe9 ok \xff\xfe end " * 20
    path = tmp_path / "bad.txt"
    path.write_bytes(raw)
    text = raw.decode("utf-8", "replace")
    assert train_bpe(path, 280, [], num_processes=1, errors="replace") == \
        oracle_train_bpe(text, 280, [], GPT2_PATTERN)


def test_empty_file(tmp_path):
    path = write(tmp_path, "")
    vocab, merges = train_bpe(path, 300, [EOT], num_processes=2)
    assert merges == []
    assert vocab == {**{i: bytes([i]) for i in range(256)}, 256: EOT.encode()}


def test_vocab_larger_than_pairs_warns_and_stops(tmp_path):
    path = write(tmp_path, "ab ab ab")
    with pytest.warns(UserWarning, match="no pairs left"):
        vocab, merges = train_bpe(path, 100000, [])
    assert merges == [(b"a", b"b"), (b" ", b"ab")]
    assert len(vocab) == 258


def test_train_from_counts_equals_train_bpe(tmp_path):
    text = make_corpus(21, specials=[EOT])
    path = write(tmp_path, text)
    counts = count_file(path, [EOT], num_processes=2, chunk_bytes=500)
    assert train_from_counts(counts, 400, [EOT]) == train_bpe(path, 400, [EOT])


KILL_SCRIPT = textwrap.dedent("""
    import sys
    from bpe_fast import train_bpe
    try:
        # a custom pattern takes the (slower) regex path, so the workers are still busy when one is killed
        train_bpe(sys.argv[1], 300, ["<|endoftext|>"], num_processes=2, pattern=r"\\w+|\\W",
                  chunk_bytes=1 << 18)
    except Exception as exc:
        print(type(exc).__name__, exc, file=sys.stderr)
        sys.exit(3)
    sys.exit(0)
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the process table from /proc")
def test_killed_worker_is_an_error_not_a_hang(tmp_path):
    path = write(tmp_path, make_corpus(3, n_words=1_500_000, specials=[EOT], crlf=False))
    # cwd: away from the source tree, so that the installed (compiled) package is imported
    proc = subprocess.Popen([sys.executable, "-c", KILL_SCRIPT, str(path)], stderr=subprocess.PIPE,
                            text=True, cwd=tmp_path)
    try:
        deadline = time.time() + 300        # a guard against a hang only (a loaded machine is slow)
        kids = []
        while time.time() < deadline and not kids and proc.poll() is None:
            time.sleep(0.02)
            kids = children(proc.pid)
        assert kids, f"the workers never started: {proc.poll()=}, {proc.stderr.read() if proc.poll() is not None else ''}"
        time.sleep(0.2)
        os.kill(kids[0], signal.SIGKILL)
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 3, err
    assert "worker process died" in err


# ---- the published reference ---------------------------------------------------------------------

@pytest.mark.parametrize("num_processes", [1, 2])
def test_cs336_reference_merges_and_vocab(cs336_reference, num_processes):
    ref_merges, ref_tokens = cs336_reference
    vocab, merges = train_bpe(FIXTURES / "corpus.en", 500, [EOT], num_processes=num_processes,
                              chunk_bytes=20_000)
    assert merges == ref_merges
    assert set(vocab.values()) == ref_tokens
    assert len(vocab) == 500


# ---- the engine alone against the oracle's merge loop, on words that stress its bookkeeping ----------

# positions_budget: None, or a tiny budget of positions, which makes most pairs positionless and the engine
# re-scan its slots again and again (0: each re-scan collects only the best pairs)
BUDGETS = st.sampled_from([None, 0, 2, 40])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.text("abc", min_size=0, max_size=14).map(str.encode), st.integers(0, 6), max_size=25),
       st.integers(1, 40), st.sampled_from([0, 1 << 16]), st.booleans(), st.booleans(), BUDGETS)
def test_engine_equals_oracle_on_small_alphabets(words, max_merges, heap_slack, lean, narrow, budget):
    # Three letters make overlapping runs ("aaaa"), adjacent occurrences ("abab" merged by (a,b) then
    # (ab,ab)) and ties everywhere, the cases of the engine's neighbour bookkeeping; words of count 0 and of
    # one byte must change nothing. heap_slack=0
    # prunes the heap after every merge (a long run's pruning, which small inputs never reach otherwise); a
    # lean engine drops stale positions as it compacts, which a small one does often. narrow: 2-byte slots or 4.
    eng = MergeEngine(*counts_to_arrays(words), heap_slack=heap_slack, lean=lean, narrow=narrow,
                      positions_budget=budget)
    assert eng.narrow == narrow
    eng.run(max_merges)
    assert eng.merges() == oracle_merges(words, max_merges)
    assert eng.memory()["mismatched"] == 0


def _oracle_pair_counts(words):
    """{(left, right): count} of the pairs of {tuple of tokens: count}, counted directly."""
    pairs = {}
    for word, freq in words.items():
        for pair in zip(word, word[1:]):
            pairs[pair] = pairs.get(pair, 0) + freq
    return pairs


@pytest.mark.parametrize("pairs_before", range(32767 - 24, 32768))
def test_engine_finds_its_pairs_when_the_pair_table_grows_within_a_merge(pairs_before):
    # A merge looks its neighbours' pairs up in groups (_resolve_pids) and makes the new ones in between: the
    # pair table doubles when pair id 32,767 is made (2 ** 16 slots, at most half full), and a look-up after
    # that in the same group must use the grown table's slots (the old ones find nothing, and the pair would be
    # made a second time with its count split). "x a b y" words give the merge (a, b) a look-up of (b, y) and
    # a new pair (c, y) for every y, in turns; 2-byte words of count 1 bring the pairs made before it to just
    # under the threshold, by 0 to 24, so that the table grows at each place a new pair takes in a group of
    # look-ups (new pairs alternate with look-ups there: the odd places).
    xs, ys = range(32, 40), range(40, 80)
    words = {bytes([x, 1, 2, y]): 7 for x in xs for y in ys}
    fill = pairs_before - len(xs) - 1 - len(ys)
    fillers = [bytes([u, v]) for u in range(80, 256) for v in range(3, 256)][:fill]
    words.update(dict.fromkeys(fillers, 1))
    eng = MergeEngine(*counts_to_arrays(words))
    eng.run(1)
    assert eng.merges() == [(b"\x01", b"\x02")]
    merged = {}
    for w, n in words.items():
        t = tuple(bytes([b]) for b in w)
        if t[1:3] == (b"\x01", b"\x02"):
            t = (t[0], b"\x01\x02", t[3])
        merged[t] = n
    want = _oracle_pair_counts(merged)
    for y in ys:       # the pairs the merge looked up (now gone) and made
        assert eng.pair_count(b"\x02", bytes([y])) == 0
        assert eng.pair_count(b"\x01\x02", bytes([y])) == want[(b"\x01\x02", bytes([y]))]
    for x in xs:
        assert eng.pair_count(bytes([x]), b"\x01") == 0
        assert eng.pair_count(bytes([x]), b"\x01\x02") == want[(bytes([x]), b"\x01\x02")]
    eng.run(5)
    assert eng.merges() == oracle_merges(words, 6)


def test_engine_merge_counts_are_the_chosen_pairs_counts():
    eng = engine_for({"aaab": 2, "ab": 3})
    eng.run(3)
    # (a,b): 2 + 3 = 5 -> aaab is [a, a, ab]: (a,a) 2 and (a,ab) 2, a tie won by (b"a", b"ab") > (b"a", b"a");
    # then [a, aab]: (a,aab) 2
    assert eng.merges() == [(b"a", b"b"), (b"a", b"ab"), (b"a", b"aab")]
    assert eng.merge_counts() == [5, 2, 2]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["a", "ab", "aab", "ba", "abc"]), st.integers(20, 150), st.integers(1, 3)),
                min_size=1, max_size=4), st.integers(1, 120), st.booleans(), BUDGETS)
def test_engine_equals_oracle_on_long_tokens(parts, max_merges, narrow, budget):
    # Repeated units give tokens far longer than the engine's short-symbol limit (64 bytes), built from two
    # long halves, with ties between long tokens whose first bytes agree: the cases where the engine reads
    # and compares a token's bytes by walking down its halves.
    words = {}
    for unit, repeat, count in parts:
        word = (unit * repeat).encode()
        words[word] = words.get(word, 0) + count
    eng = MergeEngine(*counts_to_arrays(words), narrow=narrow, positions_budget=budget)
    eng.run(max_merges)
    merges = eng.merges()
    assert merges == oracle_merges(words, max_merges)
    assert eng.pair_count(*merges[-1]) == 0


@pytest.mark.parametrize("narrow", [False, True])
def test_engine_huge_token_is_exact(narrow):
    # one word of 5,000 a's: the merges double the token, then join the leftovers (ties between long tokens)
    words = {b"a" * 5000: 1}
    eng = MergeEngine(*counts_to_arrays(words), narrow=narrow)
    eng.run(100)
    merges, made = eng.merges(with_tokens=True)
    assert merges == oracle_merges(words, 100)
    assert made[-1] == b"a" * 5000 and all(made[k] == a + b for k, (a, b) in enumerate(merges))


def test_engine_refuses_counts_whose_pair_counts_overflow_int64():
    with pytest.raises(ValueError, match="overflow"):
        train_from_counts({b"ab": 2 ** 62, b"xab": 2 ** 62, b"cd": 5}, 259)
    assert train_from_counts({b"ab": 2 ** 61, b"cd": 5}, 258)[1] == [(b"a", b"b"), (b"c", b"d")]


def test_engine_finish_frees_the_working_arrays():
    eng = engine_for({"hello": 3, "world": 2})
    eng.run(3)
    before = eng.memory()
    merges = eng.merges()
    eng.finish()
    after = eng.memory()
    assert after["slots"] == after["positions"] == after["heap"] == 0 and after["pairs"] < before["pairs"]
    assert eng.merges() == merges and eng.run(5) == 0
    with pytest.raises(RuntimeError, match="finish"):
        eng.pair_count(b"h", b"e")


def test_engine_consume_frees_the_arrays_before_indexing_and_is_the_same_engine():
    words = oracle_count_pretokens(make_corpus(4, n_words=3000), [], GPT2_PATTERN)
    arrays = list(counts_to_arrays(words))
    alive = [weakref.ref(a) for a in arrays]
    eng = MergeEngine.consume(arrays)
    assert arrays == [] and all(ref() is None for ref in alive)
    eng.run(200)
    assert eng.merges() == oracle_merges(words, 200)
    held = counts_to_arrays(words)        # held elsewhere too: emptying the list frees nothing, nothing breaks
    kept = list(held)
    MergeEngine.consume(kept).run(5)
    assert kept == [] and held[0].sum() == sum(sum(w) for w in words)
    with pytest.raises(ValueError, match=r"\[tokens, offsets, counts\], got a list of 2"):
        MergeEngine.consume(list(held[:2]))


def test_train_bpe_frees_the_counts_before_the_engine_indexes_pairs(tmp_path, monkeypatch):
    # train_bpe's arrays are held by nothing but the list the engine empties: the peak is then the engine's
    # alone. A reference kept anywhere on the way (a local, an argument) keeps them alive and fails this.
    text = make_corpus(6, n_words=4000, specials=[EOT])
    path = write(tmp_path, text)
    want = oracle_train_bpe(text, 400, [EOT], GPT2_PATTERN)
    freed = []

    class Spy:
        @staticmethod
        def consume(arrays, **options):
            alive = [weakref.ref(a) for a in arrays]
            engine = MergeEngine.consume(arrays, **options)
            freed.append([ref() is None for ref in alive])
            return engine

    monkeypatch.setattr(train_module, "MergeEngine", Spy)
    for processes in (1, 2):
        assert train_bpe(path, 400, [EOT], num_processes=processes, chunk_bytes=4096) == want
    assert freed == [[True] * 3, [True] * 3]


@pytest.mark.parametrize("narrow", [False, True])
def test_engine_drops_its_garbage_in_place_and_stays_exact(narrow):
    # Merges leave the positions they consume behind in the arena as garbage; once the arena is full and a
    # quarter of it is garbage, the live segments are moved down in place. Enough merges on a varied corpus
    # get there more than once; the merges stay the oracle's.
    words = oracle_count_pretokens(make_corpus(5, n_words=6000), [], GPT2_PATTERN)
    eng = MergeEngine(*counts_to_arrays(words), heap_slack=0, narrow=narrow)
    eng.run(400)
    assert eng.memory()["compactions"] >= 2
    assert eng.merges() == oracle_merges(words, 400)


@pytest.mark.parametrize("narrow", [False, True])
def test_lean_engine_drops_stale_positions_and_stays_exact(narrow):
    # A lean engine (any engine of LEAN_SLOTS slots or more; here forced) also drops the positions that no
    # longer hold their pair when it compacts, and gives back the arena's pages past its new end: after the
    # same merges its arena is well under the other's, and the merges are still the oracle's, at every step.
    words = oracle_count_pretokens(make_corpus(5, n_words=6000), [], GPT2_PATTERN)
    want = oracle_merges(words, 600)
    lean, plain = (MergeEngine(*counts_to_arrays(words), lean=flag, narrow=narrow) for flag in (True, False))
    initial = lean.memory()["most_positions"]
    for eng in (lean, plain):
        for step in (1, 9, 90, 500):
            eng.run(step)
            assert eng.merges() == want[: len(eng.merges())]
        assert eng.merges() == want
    assert lean.memory()["compactions"] >= 2 and lean.memory()["checked"] > 0
    assert lean.memory()["positions"] < 0.6 * plain.memory()["positions"]
    # it compacts once a quarter of the arena is garbage or stale, so the arena never grew by half (1.75x
    # here when it waited for half)
    assert lean.memory()["most_positions"] < 1.5 * initial


@pytest.mark.parametrize("threads, narrow", [(2, False), (3, False), (8, False), (2, True), (3, True)])
def test_the_pair_index_built_in_threads_is_one_threads(threads, narrow):
    # MergeEngine(threads=n) lays its words out in ranges of words (32,768 or more each: these ~138,000 in up
    # to 3) and builds its pair index over ranges of slots (65,536 or more each: these ~770,000 in up to 8),
    # each range's classes and pairs joined in order: the same slots, pair ids, counts and positions as one
    # thread's, so the same merges with the same counts, with and without a limit on token length
    rng = np.random.default_rng(threads)
    lengths = rng.integers(1, 9, 140_000)
    alphabet = np.frombuffer(b"abcdefghij klmnop\xc3\xa9", dtype=np.uint8)
    letters = alphabet[rng.integers(0, len(alphabet), len(lengths))]
    mixed = rng.random(len(lengths)) < 0.7          # the others one letter repeated: overlapping pairs, whose
    tokens = np.where(np.repeat(mixed, lengths),     # positions must come in order, across ranges too
                      alphabet[rng.integers(0, len(alphabet), int(lengths.sum()))], np.repeat(letters, lengths))
    tokens = tokens.astype(np.uint8)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    zipf = rng.zipf(1.3, len(lengths)).clip(0, 1 << 30).astype(np.int64) - (rng.random(len(lengths)) < 0.01)
    # and every word a class of its own (distinct counts, past SMALL_FREQ too): each range starts a class
    distinct = rng.permutation(len(lengths)).astype(np.int64) + 1
    for counts, limit in ((zipf, None), (zipf, 5), (distinct, None)):
        one = MergeEngine(tokens, offsets, counts, max_token_length=limit, narrow=narrow)
        many = MergeEngine(tokens, offsets, counts, max_token_length=limit, threads=threads, narrow=narrow)
        assert one.run(1500) == many.run(1500) > 1000
        assert many.merges() == one.merges() and many.merge_counts() == one.merge_counts()
        # under a positions budget, its re-scans' passes in two ranges of slots at once: the same merges
        bounded = MergeEngine(tokens, offsets, counts, max_token_length=limit, threads=threads, narrow=narrow,
                              positions_budget=20_000)
        assert bounded.run(1500) == len(one.merges())
        assert bounded.merges() == one.merges() and bounded.merge_counts() == one.merge_counts()
        assert bounded.memory()["rescans"] > 3 and bounded.memory()["mismatched"] == 0
        assert many.memory() == one.memory()


def test_the_engine_refuses_no_threads():
    with pytest.raises(ValueError, match="threads must be >= 1, got 0"):
        MergeEngine(np.array([1, 2], np.uint8), np.array([0, 2], np.int64), np.array([1], np.int64), threads=0)


def test_train_from_counts_takes_its_threads_from_the_default_process_count(monkeypatch):
    # the engine's threads are BPE_FAST_NUM_PROCESSES's (else every core): a value that is no number is refused
    # as train_bpe refuses it, and any number gives the same merges
    words = {b"hello": 5, b"help": 2, b"yellow": 3}
    want = train_from_counts(words, 262)
    for value in ("1", "3"):
        monkeypatch.setenv("BPE_FAST_NUM_PROCESSES", value)
        assert train_from_counts(words, 262) == want
    monkeypatch.setenv("BPE_FAST_NUM_PROCESSES", "two")
    with pytest.raises(ValueError, match="BPE_FAST_NUM_PROCESSES must be a positive integer, got 'two'"):
        train_from_counts(words, 262)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_engine_out_of_memory_laying_words_out_is_a_memory_error_naming_it(tmp_path):
    """The layout's own vectors (the words' order: 4 bytes a word) failing for memory was reported as the arrays
    changed by another thread (a noexcept function's unraisable MemoryError, then False): now MemoryError."""
    code = textwrap.dedent("""
        import resource, numpy as np
        from bpe_fast._train import MergeEngine
        n = 4_000_000
        tokens = np.frombuffer(b"ab" * n, dtype=np.uint8)
        offsets = np.arange(0, 2 * n + 1, 2, dtype=np.int64)
        counts = np.ones(n, dtype=np.int64)
        with open("/proc/self/status") as f:
            vm = next(int(line.split()[1]) for line in f if line.startswith("VmSize:")) * 1024
        resource.setrlimit(resource.RLIMIT_AS, (vm + (8 << 20), resource.RLIM_INFINITY))   # order: 16 MB
        try:
            MergeEngine(tokens, offsets, counts)
        except BaseException as e:
            print(type(e).__name__, e)
        """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path)          # (not the checkout: its bpe_fast/ may be unbuilt sources)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == ("MemoryError out of memory laying out 4,000,000 distinct pre-tokens "
                                  "(8,000,000 bytes) in the merge engine")
    assert "Exception ignored" not in run.stderr


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_merge_chain_of_long_tied_pre_tokens_matches_the_oracle(seed):
    # helper-154: one long pre-token repeated makes every pair tie; the greatest pair grows one token by its right
    # neighbour, each version the next one's left half. The heap compares versions without reading their bytes
    # (MergeEngine._starts); the merges must stay the reference's, with short tokens of other words beside them.
    import random
    from train_oracle import oracle_merges
    rng = random.Random(seed)
    blob = bytes(rng.choice(b"abcdefghij") for _ in range(700))
    counts = {blob: 3, blob[:350] + b"z": 2, b" " + blob[100:400]: 1, b"abc": 5, b"cab": 4}
    vocab, merges = train_from_counts(counts, 256 + 900)
    assert merges == oracle_merges(counts, 900)
    assert max(len(t) for t in vocab.values()) >= 350


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_long_tokens_sharing_their_first_bytes_are_ordered_as_the_oracle_orders_them(seed):
    # A long symbol's first 64 bytes are kept (its left half's, or a short left half's bytes and then the right
    # half's first): the heap orders two long tokens by them and reads further only when they are equal. Words
    # that share a 100-byte start and then differ, over two letters, grow many long tokens with equal first bytes
    # on other spines than each other's, and long tokens made of a short left half and a long right one.
    import random
    from train_oracle import oracle_merges
    rng = random.Random(seed)
    start = bytes(rng.choice(b"ab") for _ in range(100))
    counts = {}
    for k in range(8):
        tail = bytes(rng.choice(b"ab") for _ in range(rng.randrange(20, 120)))
        counts[start + tail] = rng.randrange(1, 4)
        counts[tail[:30] + start] = rng.randrange(1, 4)
    vocab, merges = train_from_counts(counts, 256 + 2_000)
    assert merges == oracle_merges(counts, 2_000)
    assert sum(len(t) > 64 for t in vocab.values()) > 20


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.binary(min_size=2, max_size=160).map(lambda b: bytes(97 + x % 3 for x in b)),
                       st.integers(1, 4), min_size=1, max_size=6))
def test_words_of_three_letters_to_the_last_merge_match_the_oracle(counts):
    # every merge the words allow: the last ones join long tokens (long left and right halves, short ones beside)
    from train_oracle import oracle_merges
    vocab, merges = train_from_counts(counts, 256 + 1_000)
    assert merges == oracle_merges(counts, 1_000)


@pytest.mark.parametrize("n", [62, 63, 64, 65, 100])
def test_two_long_tokens_equal_in_their_first_bytes_are_ordered_by_the_bytes_after(n):
    # P (n distinct bytes) and Q (50 others) become tokens first (their pairs are in every word), then P+"b"+Q and
    # P+"a"+Q (101 times each); last, the tie at count 1 between (P+"b"+Q, "a") and (P+"a"+Q, "z"): the greater
    # left wins, and the lefts differ only at byte n, about where the 64 kept bytes end (the rights would pick
    # the other)
    import random
    from train_oracle import oracle_merges
    p = bytes(random.Random(n).sample(range(128, 256), n))
    q = bytes(range(1, 51))
    counts = {p + b"b" + q: 100, p + b"a" + q: 100, p + b"b" + q + b"a": 1, p + b"a" + q + b"z": 1}
    vocab, merges = train_from_counts(counts, 256 + 1_000)
    assert merges == oracle_merges(counts, 1_000)
    assert merges[-2:] == [(p + b"b" + q, b"a"), (p + b"a" + q, b"z")]


# ---- the slots' layout: 2 bytes a slot when the ids and the words fit, else 4 ----------------------------

def _slots(words):
    """How many slots an engine lays {bytes: count} out in: a byte of each word that has a pair and occurs, a
    sentinel after each, one before them all."""
    return 1 + sum(len(w) + 1 for w, n in words.items() if len(w) >= 2 and n > 0)


def test_the_engine_chooses_narrow_slots_when_the_ids_and_the_words_fit():
    words = {b"hello": 3, b"world": 2, b"a" * 32_767: 1, b"b" * 40_000: 0}     # (a count of 0 is not laid out)
    arrays = counts_to_arrays(words)
    cases = [({"max_merges": 32_768 - 256}, True), ({"max_merges": 32_768 - 255}, False), ({}, False),
             ({"max_merges": 0}, True), ({"narrow": True}, True), ({"max_merges": 10, "narrow": False}, False)]
    for options, narrow in cases:
        eng = MergeEngine(*arrays, **options)
        assert eng.narrow == narrow, options
        assert eng.memory()["slots"] == (2 if narrow else 4) * _slots(words)
    longer = counts_to_arrays({b"hello": 3, b"a" * 32_768: 1})
    assert not MergeEngine(*longer, max_merges=10).narrow               # a word too long for int16's pointers
    with pytest.raises(ValueError, match="at most 32,767 bytes, and one has 32,768"):
        MergeEngine(*longer, narrow=True)
    for bad, error in ((-1, ValueError), (1.5, TypeError), (True, TypeError)):
        with pytest.raises(error, match="max_merges"):
            MergeEngine(*arrays, max_merges=bad)


def _spy_on_engines(monkeypatch):
    """The engines train.py builds from now on, each with its memory() just after it was built."""
    built = []

    class Spy:
        @staticmethod
        def consume(arrays, **options):
            engine = MergeEngine.consume(arrays, **options)
            built.append((engine, engine.memory()))
            return engine

    monkeypatch.setattr(train_module, "MergeEngine", Spy)
    return built


def test_training_lays_its_words_out_in_two_byte_slots_when_the_vocabulary_allows(monkeypatch):
    # train.py tells the engine how many merges it will ask for (continuing: the initial tokenizer's too): up to
    # vocab 32,768 (the 256 bytes and 32,512 merges; special tokens are not the engine's) the slots take 2 bytes
    from bpe_fast import Tokenizer
    built = _spy_on_engines(monkeypatch)
    words = oracle_count_pretokens(make_corpus(3, n_words=2000), [], GPT2_PATTERN)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")             # (the small corpus runs out of pairs: 343 merges)
        want = train_from_counts(words, 600)
        for vocab_size, specials, narrow in ((600, [], True), (32_768, [], True), (32_769, [], False),
                                             (32_769, [EOT], True), (32_770, [EOT], False)):
            result = train_from_counts(words, vocab_size, specials)
            engine, memory = built[-1]
            assert engine.narrow == narrow and memory["slots"] == (2 if narrow else 4) * _slots(words)
            assert result[1] == want[1]
        initial = Tokenizer(*train_from_counts(words, 300))        # 44 merges replayed, then 32,768 - 300 more
        for vocab_size, narrow in ((32_768, True), (32_769, False)):
            train_from_counts(words, vocab_size, initial=initial)
            assert built[-1][0].narrow == narrow


def test_a_narrow_engine_asked_for_more_ids_than_int16_holds_widens_its_slots():
    # 32,512 merges make ids up to 32,767; the next one's id needs 4-byte slots: the engine rewrites them (the
    # back pointers are relative: the same values) and goes on, its merges the wide engine's. Replayed merges too.
    rng = np.random.default_rng(5)
    words = {bytes(rng.integers(0, 256, int(rng.integers(2, 12)), dtype=np.uint8)): int(rng.integers(1, 6))
             for _ in range(20_000)}
    wide = MergeEngine(*counts_to_arrays(words), narrow=False)
    assert wide.run(33_000) == 33_000
    narrow = MergeEngine(*counts_to_arrays(words), max_merges=32_512)
    assert narrow.narrow and narrow.run(32_512) == 32_512 and narrow.narrow
    assert narrow.memory()["slots"] == 2 * _slots(words)
    assert narrow.run(488) == 488 and not narrow.narrow
    assert narrow.memory()["slots"] == 4 * _slots(words)
    assert narrow.merges() == wide.merges() and narrow.merge_counts() == wide.merge_counts()
    replayed = MergeEngine(*counts_to_arrays(words), narrow=True)
    replayed.replay(*train_module.merges_to_arrays(wide.merges()))
    assert not replayed.narrow and replayed.merge_counts() == wide.merge_counts()
    assert replayed.run(100) == wide.run(100) == 100 and replayed.merges() == wide.merges()


@pytest.mark.parametrize("length", [32_766, 32_767, 32_768, 40_000])
def test_words_at_and_past_the_narrow_slots_limit_merge_as_the_oracle(length):
    # A narrow slot's back pointer is -(d + 2), d up to a word's length - 1: a word of 32,767 bytes fits
    # (a token of all of it: -32,768), one more byte does not, and the engine lays such a run's words out in
    # 4-byte slots. Long tokens beside a last byte and short words: every kind of neighbour of a long token;
    # both layouts where both can be, the merges the oracle's to the last.
    rng = np.random.default_rng(length)
    tail = bytes(rng.integers(0, 4, 3, dtype=np.uint8) + 120)
    words = {b"a" * (length - 3) + tail: 2, b"a" * 5 + tail: 3, tail: 1, b"xa": 7}
    want = oracle_merges(words, 200)
    fits = length <= 32_767
    for narrow in ((None, True, False) if fits else (None, False)):
        eng = MergeEngine(*counts_to_arrays(words), narrow=narrow, max_merges=200)
        assert eng.narrow == (fits and narrow is not False)
        eng.run(200)
        merges, made = eng.merges(with_tokens=True)
        assert merges == want
        assert max(map(len, made)) == length
    if not fits:
        with pytest.raises(ValueError, match="narrow slots hold words of at most 32,767 bytes"):
            MergeEngine(*counts_to_arrays(words), narrow=True)
