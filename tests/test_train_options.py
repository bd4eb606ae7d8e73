"""Training options (issue 14): min_frequency, max_token_length, special_tokens_position,
pad_vocab_to_multiple_of, and continued training from a Tokenizer (initial=). The engine's worked examples, then
the engine and the whole trainer against the plain-Python oracle (tests/train_oracle.py), GPT-2 continued, and
bad arguments."""
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from bpe_fast import (GPT2_PATTERN, GPT4_PATTERN, PretokenCounts, Tokenizer, count_pretokens, train_bpe,
                      train_from_counts)
from bpe_fast._train import MergeEngine
from bpe_fast import train as train_module
from bpe_fast.train import counts_to_arrays, merges_to_arrays

from corpora import EOT, FIXTURES, make_corpus, write
from encode_oracle import oracle_encode
from train_oracle import oracle_continue_merges, oracle_count_pretokens, oracle_merges, oracle_train_options


def engine_for(words, **kwargs):
    """A MergeEngine over {str: count}."""
    return MergeEngine(*counts_to_arrays({w.encode(): n for w, n in words.items()}), **kwargs)


def replay(engine, merges):
    engine.replay(*merges_to_arrays([(a.encode(), b.encode()) for a, b in merges]))


def quiet(call, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return call(*args, **kwargs)


# ---- the engine's worked examples --------------------------------------------------------------------

def test_engine_min_count_stops_below_it_and_keeps_the_pair():
    # "aaab" x2 + "ab" x3: (a,b) 5 is merged; then aaab is [a, a, ab]: (a,a) 2 and (a,ab) 2, below 3
    eng = engine_for({"aaab": 2, "ab": 3})
    assert eng.run(10, 3) == 1 and eng.merges() == [(b"a", b"b")]
    assert eng.next_count() == 2
    # the pair was not used up: a lower threshold goes on where it stopped, as one run would have
    assert eng.run(10, 2) == 2 and eng.merges() == [(b"a", b"b"), (b"a", b"ab"), (b"a", b"aab")]
    assert eng.next_count() == 0 and eng.run(10) == 0


def test_engine_max_token_length_leaves_long_pairs_out():
    # "aaaa": (a,a) -> [aa, aa]; (aa,aa) would make 4 bytes: with a limit of 3 it is no candidate, and (aa,aa)
    # keeps its count (2 = 1 occurrence x 2)
    eng = engine_for({"aaaa": 2, "abc": 1}, max_token_length=3)
    assert eng.run(10) == 3
    # (a,a) 6 -> aaaa is [aa, aa]; then the ties at 1 in abc: (b,c) > (a,b); then (a,bc) is 3 bytes
    assert eng.merges() == [(b"a", b"a"), (b"b", b"c"), (b"a", b"bc")]
    assert eng.pair_count(b"aa", b"aa") == 2 and eng.next_count() == 0
    assert engine_for({"aaaa": 2}, max_token_length=1).run(10) == 0
    with pytest.raises(ValueError, match="max_token_length"):
        engine_for({"ab": 1}, max_token_length=0)


def test_engine_replay_merges_like_chosen_ones_and_records_absent_pairs():
    # "abcd" x2. Replay (b,c): [a, bc, d], count 2; (x,y): absent, count 0, but its token is made; (a,bc) uses
    # the replayed token: [abc, d]; (x,xy) uses the absent pair's token. Then training goes on: (abc,d).
    eng = engine_for({"abcd": 2})
    replay(eng, [("b", "c"), ("x", "y"), ("a", "bc"), ("x", "xy")])
    assert eng.merges() == [(b"b", b"c"), (b"x", b"y"), (b"a", b"bc"), (b"x", b"xy")]
    assert eng.merge_counts() == [2, 0, 2, 0]
    assert eng.pair_count(b"abc", b"d") == 2 and eng.pair_count(b"a", b"b") == 0
    assert eng.run(5) == 1
    merges, made = eng.merges(with_tokens=True, start=4)
    assert merges == [(b"abc", b"d")] and made == [b"abcd"]


@pytest.mark.parametrize("budget", [None, 0, 1])
def test_engine_replay_then_a_merge_that_remakes_a_token(budget):
    # GPT-2-style lists hold such merges: (b,c), (a,b), (ab,c) on "abc" leaves [a, bc] ((a,b) and (ab,c) find
    # nothing), so training then merges (a,bc), whose bytes "abc" the replayed (ab,c) already made: the same
    # symbol (canonical by bytes), now with pairs of its own. With a positions budget, (abc,abc) is made by a
    # merge whose token existed: a pair that gets no positions then, collected by a re-scan.
    eng = engine_for({"abc": 3, "abcabc": 1}, positions_budget=budget)
    replay(eng, [("b", "c"), ("a", "b"), ("ab", "c")])
    assert eng.merge_counts() == [5, 0, 0]
    assert eng.run(5) == 2
    merges, made = eng.merges(with_tokens=True)
    assert merges[3:] == [(b"a", b"bc"), (b"abc", b"abc")] and made[2] == made[3] == b"abc"
    words = {b"abc": 3, b"abcabc": 1}
    assert merges[3:] == oracle_continue_merges(words, 5, merges[:3])
    assert eng.memory()["mismatched"] == 0


def test_engine_replay_names_the_merge_whose_token_is_unknown():
    eng = engine_for({"abc": 1})
    with pytest.raises(ValueError, match=r"merge 1: b'ab' is neither"):
        replay(eng, [("b", "c"), ("ab", "c")])
    assert eng.merges() == [(b"b", b"c")]           # the merges before it were done
    eng.finish()
    with pytest.raises(RuntimeError, match="finish"):
        replay(eng, [("a", "b")])


@st.composite
def merge_lists(draw, alphabet=b"abc", max_size=10):
    """Any merge list over the alphabet whose tokens are bytes or earlier products, not only trained ones: pairs
    that never occur, products made twice, (a,b) before (b,c) and the like."""
    known = [bytes([c]) for c in alphabet]
    merges = []
    for _ in range(draw(st.integers(0, max_size))):
        pair = (draw(st.sampled_from(known)), draw(st.sampled_from(known)))
        merges.append(pair)
        if pair[0] + pair[1] not in known:
            known.append(pair[0] + pair[1])
    return merges


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(words=st.dictionaries(st.text("abc", min_size=0, max_size=14).map(str.encode), st.integers(0, 6),
                             max_size=25),
       initial=merge_lists() | st.just([]), max_merges=st.integers(0, 40), min_count=st.integers(1, 8),
       max_len=st.none() | st.integers(1, 8), heap_slack=st.sampled_from([0, 1 << 16]), cut=st.integers(0, 40),
       lean=st.booleans(), narrow=st.booleans(), budget=st.sampled_from([None, 0, 2, 40]))
def test_engine_equals_oracle_with_options(words, initial, max_merges, min_count, max_len, heap_slack, cut, lean,
                                           narrow, budget):
    # The cases of test_train's small-alphabet test, after any replayed merge list and with both options; the
    # merges run in two calls (as _train runs batches), and the counts at each merge agree too.
    # budget: a tiny positions_budget (None: none), whose re-scans a replayed merge may start too
    eng = MergeEngine(*counts_to_arrays(words), heap_slack=heap_slack, max_token_length=max_len, lean=lean,
                      narrow=narrow, positions_budget=budget)
    eng.replay(*merges_to_arrays(initial))
    first = eng.run(min(cut, max_merges), min_count)
    eng.run(max_merges - first, min_count)
    want, chosen = oracle_continue_merges(words, max_merges, initial, min_frequency=min_count,
                                          max_token_length=max_len, with_counts=True)
    assert eng.merges() == initial + want
    assert eng.merge_counts() == [count for count, _ in chosen]
    merges, made = eng.merges(with_tokens=True, start=len(initial))
    assert merges == want and made == [a + b for a, b in want]
    if len(want) < max_merges:        # stopped: the best pair left is below min_count, or there is none
        assert eng.next_count() < min_count
    assert eng.memory()["mismatched"] == 0


def test_engine_without_options_is_unchanged():
    words = oracle_count_pretokens(make_corpus(5, n_words=3000), [], GPT2_PATTERN)
    eng = MergeEngine(*counts_to_arrays(words))
    eng.replay(*merges_to_arrays([]))
    eng.run(300, 1)
    assert eng.merges() == oracle_merges(words, 300)


# ---- the trainer against the oracle -------------------------------------------------------------------

OPTIONS = st.fixed_dictionaries({
    "min_frequency": st.integers(1, 4),
    "max_token_length": st.none() | st.integers(1, 6),
    "special_tokens_position": st.sampled_from(["after_bytes", "end"]),
    "pad_vocab_to_multiple_of": st.none() | st.integers(1, 16),
})
TEXTS = st.lists(st.sampled_from(list("aab bc\n'sé😀 ") + ["<|eot|>", "ab", "abab", "<|pad|>"]),
                 max_size=150).map("".join)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(text=TEXTS, extra=st.integers(0, 40), specials=st.sampled_from([[], ["<|eot|>"], ["<|pad|>", "<|eot|>"]]),
       options=OPTIONS)
def test_train_bpe_with_options_equals_oracle(tmp_path, text, extra, specials, options):
    path = write(tmp_path, text)
    vocab_size = 256 + len(specials) + extra
    want = oracle_train_options(oracle_count_pretokens(text, specials, GPT2_PATTERN), vocab_size, specials,
                                **options)
    assert quiet(train_bpe, path, vocab_size, specials, num_processes=1, **options) == want


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(first=TEXTS, second=TEXTS, first_extra=st.integers(0, 30), extra=st.integers(0, 30),
       first_specials=st.sampled_from([[], ["<|eot|>"]]),
       specials=st.sampled_from([[], ["<|eot|>"], ["<|pad|>", "<|eot|>"]]), options=OPTIONS)
# the initial tokenizer's special token in the new corpus, not among the special tokens given: it splits the text
@example(first="", second="<|eot|>", first_extra=0, extra=1, first_specials=["<|eot|>"], specials=[],
         options={"min_frequency": 1, "max_token_length": None, "special_tokens_position": "after_bytes",
                  "pad_vocab_to_multiple_of": None})
def test_continued_training_equals_oracle(tmp_path, first, second, first_extra, extra, first_specials, specials,
                                          options):
    # a tokenizer trained on one corpus, continued on another: its ids, tokens and merges stay, and the rest is
    # the oracle's replay-then-train
    vocab_a, merges_a = quiet(train_bpe, write(tmp_path, first, "a.txt"), 256 + len(first_specials) + first_extra,
                              first_specials, num_processes=1)
    initial = Tokenizer(vocab_a, merges_a, first_specials)
    new = [t for t in specials if t not in first_specials]
    vocab_size = max(vocab_a) + 1 + len(new) + extra
    vocab, merges = quiet(train_bpe, write(tmp_path, second, "b.txt"), vocab_size, specials, num_processes=1,
                          initial=initial, **options)
    assert all(vocab[i] == token for i, token in vocab_a.items())
    assert merges[:len(merges_a)] == merges_a
    # the corpus is split on the initial tokenizer's special tokens too (train_bpe's docstring)
    counts = oracle_count_pretokens(second, first_specials + new, GPT2_PATTERN)
    assert (vocab, merges) == oracle_train_options(counts, vocab_size, specials,
                                                   initial=(vocab_a, merges_a, first_specials), **options)
    # and it is a tokenizer
    tok = Tokenizer(vocab, merges, first_specials + new)
    assert tok.decode(tok.encode(first + second)) == first + second


def test_continued_training_of_a_real_corpus(tmp_path):
    # corpus A -> tokenizer -> continued on corpus B (other words, other scripts), through train_from_counts
    text_a = make_corpus(1, n_words=2000, specials=[EOT])
    text_b = make_corpus(2, n_words=2000, specials=[EOT]) + " Donaudampfschifffahrt " * 40
    vocab_a, merges_a = train_bpe(write(tmp_path, text_a, "a.txt"), 400, [EOT], num_processes=1)
    initial = Tokenizer(vocab_a, merges_a, [EOT])
    counts = count_pretokens(write(tmp_path, text_b, "b.txt"), [EOT], num_processes=2, chunk_bytes=3000)
    vocab, merges = train_from_counts(counts, 520, initial=initial)
    assert len(vocab) == 520 and {i: vocab[i] for i in vocab_a} == vocab_a and merges[:len(merges_a)] == merges_a
    assert [vocab[400 + k] for k in range(120)] == [a + b for a, b in merges[len(merges_a):]]
    assert (vocab, merges) == oracle_train_options(oracle_count_pretokens(text_b, [EOT], GPT2_PATTERN), 520, [EOT],
                                                   initial=(vocab_a, merges_a, [EOT]))
    assert any(b"Donau" in token for token in vocab.values()) and not any(b"Donau" in t for t in vocab_a.values())


@pytest.mark.parametrize("position", ["after_bytes", "end"])
def test_continue_gpt2(gpt2, position):
    # GPT-2's 50,257 ids all stay (50,000 merges replayed on the corpus), the new tokens come at 50257 and after;
    # a new special token goes after GPT-2's vocabulary or after the new merges
    path = FIXTURES / "german.txt"
    vocab, merges = train_bpe(path, 50257 + 31, [EOT, "<|de|>"], num_processes=1, initial=gpt2,
                              special_tokens_position=position)
    assert len(vocab) == 50288 and all(vocab[i] == token for i, token in gpt2.vocab.items())
    assert merges[:50000] == list(gpt2.merges) and len(merges) == 50030
    made = [a + b for a, b in merges[50000:]]
    assert [vocab[i] for i in range(50257, 50288)] == ([b"<|de|>"] + made if position == "after_bytes"
                                                      else made + [b"<|de|>"])
    text = path.read_text("utf-8")
    counts = oracle_count_pretokens(text, [EOT, "<|de|>"], GPT2_PATTERN)
    want = oracle_train_options(counts, 50288, [EOT, "<|de|>"], special_tokens_position=position,
                                initial=(dict(gpt2.vocab), list(gpt2.merges), [EOT]))
    assert (vocab, merges) == want
    tok = Tokenizer(vocab, merges, [EOT, "<|de|>"])
    assert len(tok.encode(text)) < len(gpt2.encode(text))
    assert tok.encode(" Stanford") == gpt2.encode(" Stanford")      # a token GPT-2 had keeps its id


# ---- each option alone -----------------------------------------------------------------------------------

def test_special_tokens_at_the_end():
    counts = oracle_count_pretokens(make_corpus(3), [], GPT2_PATTERN)
    specials = [EOT, "<|pad|>"]
    vocab, merges = train_from_counts(counts, 300, specials, special_tokens_position="end")
    after = train_from_counts(counts, 300, specials)
    assert merges == after[1] and len(vocab) == 300 == max(vocab) + 1
    assert vocab[298] == EOT.encode() and vocab[299] == b"<|pad|>"
    assert [vocab[256 + k] for k in range(42)] == [a + b for a, b in merges]
    assert after[0][256] == EOT.encode() and after[0][257] == b"<|pad|>"


def test_pad_to_a_multiple_while_pairs_remain():
    counts = oracle_count_pretokens(make_corpus(4), [EOT], GPT2_PATTERN)
    vocab, merges = train_from_counts(counts, 300, [EOT], pad_vocab_to_multiple_of=64)
    assert len(vocab) == 320 and len(merges) == 320 - 257
    assert train_from_counts(counts, 320, [EOT]) == (vocab, merges)
    assert train_from_counts(counts, 320, [EOT], pad_vocab_to_multiple_of=64) == (vocab, merges)   # a multiple
    assert len(train_from_counts(counts, 301, [EOT], pad_vocab_to_multiple_of=1)[0]) == 301


def test_pad_warns_when_the_pairs_run_out():
    counts = {b"ab": 3, b"abc": 1}                      # two merges in all: (a,b), (ab,c)
    with pytest.warns(UserWarning, match=r"258 tokens, not a multiple of pad_vocab_to_multiple_of=8"):
        vocab, merges = train_from_counts(counts, 257, pad_vocab_to_multiple_of=8)
    assert merges == [(b"a", b"b"), (b"ab", b"c")] and len(vocab) == 258
    with pytest.warns(UserWarning, match=r"not the 260 asked for"):
        train_from_counts(counts, 260, pad_vocab_to_multiple_of=8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(train_from_counts(counts, 258, pad_vocab_to_multiple_of=2)[0]) == 258


def test_min_frequency_stops_with_a_warning_that_says_so():
    counts = {b"hello": 5, b"help": 2, b"abcabc": 3}
    with pytest.warns(UserWarning, match=r"^training stopped after 7 merges: the best pair occurs 2 times, fewer than "
                                         r"min_frequency=3;"):
        vocab, merges = train_from_counts(counts, 400, min_frequency=3)
    assert merges == oracle_continue_merges(counts, 400, min_frequency=3)
    assert len(merges) == 7 and len(vocab) == 263
    with warnings.catch_warnings():                     # enough pairs at that count: no warning
        warnings.simplefilter("error")
        assert train_from_counts(counts, 260, min_frequency=3) == train_from_counts(counts, 260)


def test_a_min_frequency_beyond_int64_stops_at_once_not_an_overflow_error():
    counts = {b"hello": 5, b"help": 2}
    with pytest.warns(UserWarning, match=r"best pair occurs 7 times, fewer than min_frequency=1180591620717411303424"):
        assert train_from_counts(counts, 300, min_frequency=2 ** 70)[1] == []
    assert quiet(train_from_counts, counts, 300, min_frequency=2 ** 63 - 1)[1] == []


def test_max_token_length_end_to_end(tmp_path):
    text = make_corpus(8, n_words=2000)
    path = write(tmp_path, text)
    vocab, merges = quiet(train_bpe, path, 500, [], num_processes=2, chunk_bytes=2000, max_token_length=4)
    assert max(len(a + b) for a, b in merges) <= 4 and max(map(len, vocab.values())) <= 4
    want = oracle_train_options(oracle_count_pretokens(text, [], GPT2_PATTERN), 500, max_token_length=4)
    assert (vocab, merges) == want


def test_a_stop_by_max_token_length_says_so_not_that_no_pairs_are_left():
    # "hello" x5, "help" x2 with tokens of at most 3 bytes: (h,e), (he,l), (l,o); then hello is [hel, lo] and help
    # [hel, p], whose pairs would make 5 and 4 bytes. The warning said "no pairs left after 3 merges", and two were
    counts = {b"hello": 5, b"help": 2}
    with pytest.warns(UserWarning, match=r"^no pairs left after 3 merges \(none whose token fits max_token_length=3\): "
                                         r"the vocabulary has 259 tokens, not the 260 asked for$"):
        vocab, merges = train_from_counts(counts, 260, max_token_length=3)
    assert merges == oracle_continue_merges(counts, 4, max_token_length=3) == [(b"h", b"e"), (b"he", b"l"),
                                                                                (b"l", b"o")]
    assert oracle_continue_merges(counts, 4)[3] == (b"hel", b"lo")         # pairs were left, longer ones
    with pytest.warns(UserWarning, match=r"^training stopped after 2 merges: the best pair occurs 5 times, fewer than "
                                         r"min_frequency=6;"):        # min_frequency stops first: as before
        train_from_counts(counts, 260, max_token_length=3, min_frequency=6)


def test_progress_counts_the_new_merges(gpt2):
    seen = []
    vocab, merges = train_from_counts({b" Stanfordxyz": 3}, 50257 + 2, initial=gpt2,
                                      progress=lambda *a: seen.append(a))
    assert seen[-1] == ("merge", 2, 2) and len(vocab) == 50259 and len(merges) == 50002


# ---- bad arguments -------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs,error,match", [
    (dict(min_frequency=0), ValueError, "min_frequency"),
    (dict(min_frequency=2.0), TypeError, "min_frequency"),
    (dict(max_token_length=0), ValueError, "max_token_length"),
    (dict(max_token_length=True), TypeError, "max_token_length"),
    (dict(special_tokens_position="start"), ValueError, "special_tokens_position"),
    (dict(pad_vocab_to_multiple_of=0), ValueError, "pad_vocab_to_multiple_of"),
    (dict(pad_vocab_to_multiple_of="64"), TypeError, "pad_vocab_to_multiple_of"),
    (dict(initial={i: bytes([i]) for i in range(256)}), TypeError, "initial"),
])
def test_bad_options_name_the_argument(tmp_path, kwargs, error, match):
    with pytest.raises(error, match=match):
        train_from_counts({b"ab": 1}, 300, **kwargs)
    with pytest.raises(error, match=match):
        train_bpe(write(tmp_path, "ab ab"), 300, num_processes=1, **kwargs)


@pytest.mark.parametrize("counts,error,match", [
    ({b"cd": 2.5, b"ab": 2.9}, TypeError, r"count of b'cd' must be an int, got float 2.5"),  # was truncated: (c,d) won
    ({b"ab": True}, TypeError, r"count of b'ab' must be an int, got bool"),
    ({"ab": 3}, TypeError, r"pre-tokens must be bytes, got str 'ab'"),        # was "sequence item 0: expected ..."
    ({b"ab": 1, b"cd": -3}, ValueError, r"count of b'cd' must be non-negative, got -3"),
    ({b"ab": 2 ** 64}, ValueError, r"count of b'ab' does not fit int64"),
    ([b"ab", b"ab"], TypeError, r"counts must be PretokenCounts or a mapping"),
])
def test_train_from_counts_refuses_a_mapping_that_is_not_bytes_to_int_naming_the_entry(counts, error, match):
    # PretokenCounts refuses these; a plain mapping given to train_from_counts went to the engine as it was
    with pytest.raises(error, match=match):
        train_from_counts(counts, 260)
    if isinstance(counts, dict):
        with pytest.raises((TypeError, ValueError)):
            PretokenCounts(counts)
    assert train_from_counts({b"cd": 2, b"ab": np.int64(3)}, 257)[1] == oracle_continue_merges({b"cd": 2, b"ab": 3}, 1)


def test_vocab_size_below_the_initial_vocabulary():
    initial = Tokenizer(*train_from_counts({b"abc": 4}, 258), [EOT])       # 259 tokens
    with pytest.raises(ValueError, match=r"vocab_size must be at least 259 \(the initial tokenizer's 259"):
        train_from_counts({b"abc": 1}, 258, initial=initial)
    with pytest.raises(ValueError, match=r"vocab_size must be at least 260 .* 1 new special"):
        train_from_counts({b"abc": 1}, 259, ["<|pad|>"], initial=initial)
    vocab, merges = train_from_counts({b"abc": 1}, 259, [EOT], initial=initial)    # EOT is already there
    assert vocab == dict(initial.vocab) and merges == list(initial.merges)


def test_initial_tokenizer_must_suit(tmp_path):
    # counts made with another pattern than the tokenizer's
    tok = Tokenizer(*train_from_counts({b"abc": 4}, 257))         # one merge, (b,c)
    with pytest.raises(ValueError, match="pattern"):
        train_from_counts(PretokenCounts({b"abc": 2}, pattern=GPT4_PATTERN), 300, initial=tok)
    with pytest.raises(ValueError, match="pattern"):
        train_bpe(write(tmp_path, "abc"), 300, pattern=GPT4_PATTERN, num_processes=1, initial=tok)
    assert train_from_counts(PretokenCounts({b"abc": 2}), 258, initial=tok)[1] == [(b"b", b"c"), (b"a", b"bc")]
    # a vocabulary without all 256 bytes, a merge of a token no earlier merge made
    no_byte = Tokenizer({i: bytes([i]) for i in range(1, 256)}, [])
    with pytest.raises(ValueError, match=r"initial: .*lacks the single byte b'\\x00'"):
        train_from_counts({b"abc": 2}, 300, initial=no_byte)
    loose_vocab = {**{i: bytes([i]) for i in range(256)}, 256: b"ab", 257: b"abc"}
    with pytest.raises(ValueError, match=r"merge 0 .*cannot make b'abc'"):
        Tokenizer(loose_vocab, [(b"ab", b"c")])         # refused by the constructor first
    loose = Tokenizer._from_checked(loose_vocab, [(b"ab", b"c")], None, "gpt2")    # training's own check
    with pytest.raises(ValueError, match=r"initial: .*merge 0: b'ab' is neither"):
        train_from_counts({b"abc": 2}, 300, initial=loose)


@pytest.mark.parametrize("vocab, merges", [({256: b"xy", 257: b"xyz"}, [(b"x", b"y")]), ({256: b"xyz"}, [])])
def test_an_initial_token_no_merge_makes_is_refused_before_training(tmp_path, vocab, merges, capsys):
    # training made b"xyz" again under a new id (258): the vocabulary held its bytes twice, encode never gave the
    # new id and save failed ("ids 257 and 258 have the same bytes"); the CLI trained to the end, then failed
    # (review helper-143)
    from bpe_fast.cli import main
    initial = Tokenizer({**{i: bytes([i]) for i in range(256)}, **vocab}, merges)
    token_id = max(vocab)
    message = rf"initial: token {token_id} \(b'xyz'\) is made by none of the tokenizer's merges"
    with pytest.raises(ValueError, match=message):
        train_from_counts({b"xyz": 5}, 260, initial=initial)
    with pytest.raises(ValueError, match=message):
        train_bpe(write(tmp_path, "xyz xyz"), 260, num_processes=1, initial=initial)
    initial.save(tmp_path / "init")
    assert main(["-q", "train", str(write(tmp_path, "xyz xyz")), "--vocab-size", "260", "--continue-from",
                 str(tmp_path / "init"), "-o", str(tmp_path / "out")]) == 1
    assert f"--continue-from {tmp_path / 'init'}: token {token_id} (b'xyz') is made by none" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_initial_tokenizer_with_special_tokens_sharing_an_id_is_refused(tmp_path):
    # tiktoken's o200k_harmony gives <|endofprompt|> and <|reserved_200018|> one id; a trained vocabulary gives each
    # special token an id of its own, so the second would silently get a new id: refused, naming both
    shared = Tokenizer.from_tiktoken({bytes([b]): b for b in range(256)}, "gpt2", {"<|a|>": 300, "<|b|>": 300})
    for train in [lambda: train_from_counts({b"abc": 2}, 310, initial=shared),
                  lambda: train_bpe(write(tmp_path, "abc"), 310, num_processes=1, initial=shared)]:
        with pytest.raises(ValueError, match=r"initial: special tokens '<\|a\|>' and '<\|b\|>' share the id 300"):
            train()


def test_a_new_special_token_with_the_bytes_of_an_initial_token_is_refused_before_training(tmp_path):
    """Continuing with a new special token whose bytes are a token of the initial tokenizer ("ab", merged) gave
    a vocabulary with those bytes at two ids: the CLI trained to the end, then its save failed ("vocab.json
    cannot hold both"). Refused first, naming the token and its id; a special token the tokenizer has is fine."""
    import subprocess
    import sys

    initial = Tokenizer(*train_from_counts({b"ab": 5, b"cd": 3}, 258), [EOT])     # 256 = ab, 257 = cd
    assert initial.vocab[256] == b"ab"
    message = r"special token 'ab': its bytes are token 256 of the initial tokenizer"
    with pytest.raises(ValueError, match=message):
        train_from_counts({b"abab": 5}, 300, ["ab"], initial=initial)
    with pytest.raises(ValueError, match=message):
        train_bpe(write(tmp_path, "ab ab cd"), 300, ["ab"], num_processes=1, initial=initial)
    assert train_from_counts({b"abab": 5}, 300, [EOT, "<|new|>"], initial=initial)[0][259] == b"<|new|>"
    initial.save(tmp_path / "i1")
    done = subprocess.run([sys.executable, "-m", "bpe_fast", "train", str(write(tmp_path, "ab ab cd")),
                           "--continue-from", str(tmp_path / "i1"), "--special-token", "ab", "--vocab-size", "300",
                           "-o", str(tmp_path / "i2")], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)     # not the source folder: the installed bpe_fast
    assert done.returncode == 1 and "special-token 'ab': its bytes are token 256" in done.stderr
    assert "trained" not in done.stderr and not (tmp_path / "i2").exists()


def test_train_from_counts_continuing_needs_counts_split_on_the_initial_special_tokens():
    # train_bpe(initial=tok) splits the corpus on tok's special tokens; counts made without them hold EOT as
    # text ("<|", "endoftext", "|>"), so training on them would learn merges train_bpe never makes: refused. Counts
    # made with them train as train_bpe does, whether special_tokens is left out or given without them.
    text = f"eot{EOT}eot eot{EOT}|> xyz xyz"
    initial = Tokenizer({**{i: bytes([i]) for i in range(256)}, 256: EOT.encode()}, [], [EOT])
    without = count_pretokens(iter([text]), [], num_processes=1)
    with pytest.raises(ValueError, match=r"made with special tokens \[\], not \['<\|endoftext\|>'\]"):
        train_from_counts(without, 262, initial=initial)
    with pytest.raises(ValueError, match="special tokens"):
        train_from_counts(count_pretokens(iter([text]), ["<|pad|>"], num_processes=1), 262, ["<|pad|>"],
                          initial=initial)
    want = oracle_train_options(oracle_count_pretokens(text, [EOT], GPT2_PATTERN), 262, [EOT],
                                initial=(dict(initial.vocab), [], [EOT]))
    counts = count_pretokens(iter([text]), [EOT], num_processes=1)
    assert quiet(train_from_counts, counts, 262, initial=initial) == want
    assert quiet(train_from_counts, counts, 262, [], initial=initial) == want
    assert quiet(train_bpe, iter([text]), 262, initial=initial, num_processes=1) == want


def test_cli_continuing_from_counts_with_a_new_special_token_takes_them_as_train_from_counts_does(tmp_path, capsys):
    # counts made with the tokenizer's <|endoftext|> and a new <|de|>, no --special-token: the CLI refused them
    # ("the counts were made with special tokens [EOT, '<|de|>'], not [EOT] ...; count the corpus with those", as
    # they were), where train_from_counts(counts, ..., initial=tok) takes the counts' new one as the API documents
    from bpe_fast.cli import main
    text = f"xyz xyz{EOT}abab<|de|> xyz ab"
    initial = Tokenizer(*train_from_counts({b"ab": 3}, 257), [EOT])     # 256 = ab, 257 = EOT
    initial.save(tmp_path / "init")
    counts = count_pretokens(iter([text]), [EOT, "<|de|>"], num_processes=1)
    counts.save(tmp_path / "c.npz")
    assert main(["-q", "train", "--from-counts", str(tmp_path / "c.npz"), "--vocab-size", "262", "--continue-from",
                 str(tmp_path / "init"), "-o", str(tmp_path / "out")]) == 0, capsys.readouterr().err
    tok = Tokenizer.load(tmp_path / "out")
    want = oracle_train_options(oracle_count_pretokens(text, [EOT, "<|de|>"], GPT2_PATTERN), 262, [EOT, "<|de|>"],
                                initial=(dict(initial.vocab), list(initial.merges), [EOT]))
    assert (dict(tok.vocab), list(tok.merges)) == want == quiet(train_from_counts, counts, 262, initial=initial)
    assert tok.special_tokens == {EOT: 257, "<|de|>": 258}
    assert tok.encode(text, allowed_special="all") == oracle_encode(text, *want, [EOT, "<|de|>"])


def test_train_bpe_names_its_pattern_argument_when_it_is_not_the_initial_tokenizers(tmp_path):
    # train_bpe counts the corpus itself: its message said "the counts were made with the pattern ...: count the
    # corpus with initial.pattern", naming counts the caller never made
    tok = Tokenizer(*train_from_counts({b"abc": 4}, 257))
    with pytest.raises(ValueError, match=r"^pattern .* is not the initial tokenizer's pattern .*leave pattern out"):
        train_bpe(write(tmp_path, "abc"), 300, pattern=GPT4_PATTERN, num_processes=1, initial=tok)
    assert quiet(train_bpe, write(tmp_path, "abc abc"), 258, pattern="gpt2", num_processes=1, initial=tok)[1] == \
        [(b"b", b"c"), (b"a", b"bc")]


def test_train_bpe_continues_with_the_initial_pattern_and_special_tokens(tmp_path):
    # no pattern, no special tokens given: the initial tokenizer's GPT-4 pattern and its <|endoftext|> split the
    # new corpus (with GPT-2's pattern or without the split, the oracle's counts differ)
    text_a = make_corpus(3, n_words=1500, specials=[EOT])
    text_b = make_corpus(4, n_words=1500, specials=[EOT]) + " 12345678 abcABC " * 30
    vocab_a, merges_a = train_bpe(write(tmp_path, text_a, "a.txt"), 350, [EOT], num_processes=1,
                                  pattern=GPT4_PATTERN)
    initial = Tokenizer(vocab_a, merges_a, [EOT], pattern=GPT4_PATTERN)
    got = train_bpe(write(tmp_path, text_b, "b.txt"), 450, num_processes=2, initial=initial)
    expected = oracle_train_options(oracle_count_pretokens(text_b, [EOT], GPT4_PATTERN), 450, [EOT],
                                    initial=(vocab_a, merges_a, [EOT]))
    assert got == expected
    assert got != oracle_train_options(oracle_count_pretokens(text_b, [], GPT2_PATTERN), 450, [EOT],
                                       initial=(vocab_a, merges_a, [EOT]))


def test_a_progress_that_is_not_callable_is_refused_before_the_work(tmp_path):
    # a str given for progress failed at its first report, mid-run, as "'str' object is not callable"
    from bpe_fast import count_pretokens, encode_file, encode_files, train_bpe, train_from_counts
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello world " * 50)
    tok = Tokenizer({i: bytes([i]) for i in range(256)}, [])
    message = r"^progress must be a callable \(stage, done, total\) or None, got str$"
    for call in (lambda: train_bpe(corpus, 300, progress="bar"),
                 lambda: train_bpe(iter(["hello world"]), 300, progress="bar"),
                 lambda: train_from_counts({b"hello": 3}, 300, progress="bar"),
                 lambda: count_pretokens(corpus, progress="bar"),
                 lambda: encode_file(tok, corpus, tmp_path / "o.npy", progress="bar"),
                 lambda: encode_files([corpus], tmp_path / "out", tok, progress="bar")):
        with pytest.raises(TypeError, match=message):
            call()
    assert not (tmp_path / "o.npy").exists() and not (tmp_path / "out").exists()


def test_special_tokens_position_must_be_one_of_the_names():
    # np.array(['end']) compared equal to 'end' elementwise and was taken (`in` a tuple uses ==)
    from bpe_fast.train import check_train_options
    check_train_options(special_tokens_position=np.str_("end"))        # a str (subclass): taken
    for bad in (np.array(["end"]), ["end"], b"end", "END"):
        with pytest.raises(ValueError, match="special_tokens_position must be one of 'after_bytes', 'end'"):
            check_train_options(special_tokens_position=bad)


def test_special_tokens_given_with_ids_are_refused_by_training(tmp_path):
    # {token: id} (tiktoken's form) was taken for its keys, the ids dropped without a word (helper-175): training
    # gives the special tokens their ids, so a dict is a TypeError saying so; the Tokenizer checks such ids instead
    path = write(tmp_path, "hello<|a|> world<|b|> hello")
    given = {"<|b|>": 256, "<|a|>": 257}
    with pytest.raises(TypeError, match=r"special_tokens is a dict \{token: id\}.*give a list of str"):
        train_bpe(path, 270, given)
    counts = count_pretokens(path, list(given))
    with pytest.raises(TypeError, match=r"special_tokens is a dict"):
        train_from_counts(counts, 270, given)
    vocab, _ = train_bpe(path, 270, list(given))
    assert (vocab[256], vocab[257]) == (b"<|b|>", b"<|a|>")


# ---- positions under a budget (the engine's notes): the same merges, whatever the budget -------------------

def test_engine_worked_example_of_a_re_scan():
    # "abab" x5, "cd" x3, a budget of 2 positions: (a,b) 10 in 2 occurrences, (b,a) 5 in 1, (c,d) 3 in 1. The
    # watermark is the least count whose pairs' occurrences fit: 10 ((a,b)'s 2; with (b,a)'s, 3 > 2), so only
    # (a,b) has positions
    eng = engine_for({"abab": 5, "cd": 3}, positions_budget=2)
    memory = eng.memory()
    assert memory["bounded"] and memory["watermark"] == 10 and memory["most_positions"] == 2
    # (a,b) -> ab: [ab, ab]; (b,a) is gone, (ab,ab) is new with 5 < 10: it keeps its count, not its position
    assert eng.run(1) == 1 and eng.pair_count(b"ab", b"ab") == 5 and eng.memory()["rescans"] == 0
    # the best pair, (ab,ab), has no positions: the watermark goes down to 3 ((ab,ab) and (c,d): 2 occurrences
    # fit) and one pass over the slots collects both; the next merges need no other
    assert eng.run(1) == 1 and eng.merges()[1] == (b"ab", b"ab")
    assert eng.pair_count(b"ab", b"ab") == 0 and eng.pair_count(b"c", b"d") == 3     # (merged: found by the pass)
    memory = eng.memory()
    assert (memory["rescans"], memory["rescanned"], memory["watermark"], memory["mismatched"]) == (1, 2, 3, 0)
    assert eng.run(5) == 1 and eng.merges()[2] == (b"c", b"d") and eng.merge_counts() == [10, 5, 3]
    assert eng.memory()["rescans"] == 1


@pytest.mark.parametrize("budget", [0, 30, 300])
@pytest.mark.parametrize("narrow", [False, True])
def test_a_positions_budget_keeps_the_merges_and_their_counts(budget, narrow):
    # a varied corpus under budgets of 0 (a re-scan for most merges), 30 and 300 positions (of 1,492 at most
    # unbounded): the oracle's merges (all 349), the unbounded engine's counts, in batches as training runs
    # them, with re-scans
    words = oracle_count_pretokens(make_corpus(5, n_words=6000), [], GPT2_PATTERN)
    want = oracle_merges(words, 600)
    plain = MergeEngine(*counts_to_arrays(words), narrow=narrow)
    plain.run(600)
    eng = MergeEngine(*counts_to_arrays(words), narrow=narrow, positions_budget=budget, heap_slack=0)
    for step in (1, 9, 90, 500):
        eng.run(step)
        assert eng.merges() == want[: len(eng.merges())]
    assert eng.merges() == want and eng.merge_counts() == plain.merge_counts()
    memory = eng.memory()
    assert memory["bounded"] and memory["rescans"] >= {0: 100, 30: 30, 300: 3}[budget] and memory["mismatched"] == 0
    assert memory["most_positions"] < plain.memory()["most_positions"] // 3


def test_engines_are_bounded_when_asked_or_lean_with_more_than_a_gib_of_positions():
    # (the default budget: half the slots' bytes, at least 2 ** 28 positions, for lean engines only: a run that
    # large is measured in benchmarks/results/NOTES.md, not here)
    words = oracle_count_pretokens(make_corpus(5, n_words=3000), [], GPT2_PATTERN)
    for lean in (None, True, False):
        assert not MergeEngine(*counts_to_arrays(words), lean=lean).memory()["bounded"]
    memory = MergeEngine(*counts_to_arrays(words), positions_budget=10 ** 9).memory()
    assert memory["bounded"] and memory["positions_budget"] == 10 ** 9 and memory["watermark"] == 1
    for bad, error in ((-1, ValueError), (1.5, TypeError), (True, TypeError)):
        with pytest.raises(error, match="positions_budget"):
            MergeEngine(*counts_to_arrays(words), positions_budget=bad)


@pytest.mark.parametrize("options", [{}, {"max_token_length": 3}, {"min_frequency": 6}])
def test_training_under_a_tiny_positions_budget_is_unchanged(monkeypatch, options):
    # train_from_counts, alone and continued from a tokenizer (replayed merges), with its engine bounded by a
    # budget of 20 positions: the same vocabulary and merges as unbounded
    words = oracle_count_pretokens(make_corpus(3, n_words=3000, specials=[EOT]), [EOT], GPT2_PATTERN)
    more = oracle_count_pretokens(make_corpus(4, n_words=2000, specials=[EOT]), [EOT], GPT2_PATTERN)
    first = quiet(train_from_counts, words, 400, [EOT], **options)
    initial = Tokenizer(*first, [EOT])
    second = quiet(train_from_counts, more, 520, [EOT], initial=initial, **options)
    engines = []

    class Bounded:
        @staticmethod
        def consume(arrays, **kwargs):
            engines.append(MergeEngine.consume(arrays, positions_budget=20, **kwargs))
            return engines[-1]

    monkeypatch.setattr(train_module, "MergeEngine", Bounded)
    assert quiet(train_from_counts, words, 400, [EOT], **options) == first
    assert quiet(train_from_counts, more, 520, [EOT], initial=initial, **options) == second
    assert len(engines) == 2 and all(e.memory()["rescans"] > 10 and e.memory()["mismatched"] == 0 for e in engines)
