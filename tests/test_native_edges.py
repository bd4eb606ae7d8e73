"""Edge inputs to the native kernels (bpe_fast._*.pyx, compiled without bounds checks): each test's input once
made a kernel read or write outside its arrays, or give a wrong result from bytes it should not have read."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bpe_fast._inspect import tally_tokens
from bpe_fast.curve import SCRIPTS, _CJK, _PUNCT, _SPACE, script_table


def _tally(data, ids, lengths):
    counts = np.zeros((len(lengths), len(SCRIPTS)), dtype=np.int64)
    class_bytes = np.zeros(len(SCRIPTS), dtype=np.int64)
    tally_tokens(data, np.asarray(ids, dtype=np.int32), np.asarray(lengths, dtype=np.int64), script_table(),
                 counts, class_bytes, _SPACE, _CJK, _PUNCT)
    return counts, class_bytes


def test_tally_a_token_of_no_bytes_at_the_end_reads_nothing_past_the_text():
    # the text is b"a", a view of b"a\x80": the byte after the text is a continuation byte. A token of no bytes
    # at the end covers no character, so it is counted as whitespace (SCRIPTS' class for "none"); reading the
    # byte past the end took it for the inside of "a"'s character and counted the empty token as Latin.
    data = np.frombuffer(b"a\x80", dtype=np.uint8)[:1]
    counts, class_bytes = _tally(data, [0, 1], [1, 0])
    latin, space = SCRIPTS.index("Latin"), SCRIPTS.index("whitespace")
    assert counts[0].tolist() == [1 if c == latin else 0 for c in range(len(SCRIPTS))]
    assert counts[1].tolist() == [1 if c == space else 0 for c in range(len(SCRIPTS))]
    assert class_bytes.tolist() == [1 if c == latin else 0 for c in range(len(SCRIPTS))]


def test_tally_a_token_of_no_bytes_inside_the_text_is_whitespace():
    counts, _ = _tally(np.frombuffer("aé".encode(), dtype=np.uint8), [0, 2, 1], [1, 2, 0])
    assert counts[2, SCRIPTS.index("whitespace")] == 1 and counts[2].sum() == 1


def test_tally_refuses_a_negative_length():
    # a negative length moved the position before the text, whose bytes were then read at negative offsets
    with pytest.raises(ValueError, match="do not make up the text"):
        _tally(np.frombuffer(b"ab", dtype=np.uint8), [0, 1, 0, 0, 0], [1, -2])


@pytest.mark.parametrize("bad, message", [(-1, "negative token id -1 (at position 1)"),
                                          (258, "unknown token id 258 (at position 1)"),
                                          (262, "unknown token id 262 (at position 1)")])
def test_lengths_in_refuses_ids_without_a_token(bad, message):
    # ids 0..256, 260 and the special token's 261 (257..259 have no token): -1 was read as the last id (NumPy's
    # negative index) and gave the special token's length, 7; an id with no token gave 0 bytes
    from bpe_fast import Tokenizer
    tok = Tokenizer(BYTES | {256: b"ab", 260: b"zz"}, [(b"a", b"b"), (b"z", b"z")], ["<|eot|>"])
    assert tok.lengths_in(b"ab<|eot|>", np.array([256, 261])).tolist() == [2, 7]
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        tok.lengths_in(b"a" * 9, np.array([97, bad, 97]))


BYTES = {i: bytes([i]) for i in range(256)}


def test_the_inspect_kernels_refuse_offsets_that_fall():
    # a falling offset is a negative length: count_distinct and merge_forest hashed and compared it, reading out
    # of the arrays (first and last offsets were checked, not the ones between)
    from bpe_fast._inspect import count_distinct, merge_forest

    tokens = np.frombuffer(b"abcd", dtype=np.uint8)
    assert count_distinct(tokens, np.array([0, 2, 4], dtype=np.int64)) == 2
    with pytest.raises(ValueError, match=r"offsets must not decrease \(offsets\[2\] = 1 < 3\)"):
        count_distinct(tokens, np.array([0, 3, 1, 4], dtype=np.int64))
    vocab = np.frombuffer(b"abab", dtype=np.uint8)
    merges = np.frombuffer(b"ab", dtype=np.uint8)
    ids, left, right, first, base = merge_forest(vocab, np.array([0, 1, 2, 4], dtype=np.int64), merges,
                                                 np.array([0, 1, 2], dtype=np.int64))
    assert ids.tolist() == [2] and left.tolist() == [-1] and right.tolist() == [-1] and base == 2
    with pytest.raises(ValueError, match="vocab_offsets must not decrease"):
        merge_forest(vocab, np.array([0, 3, 2, 4], dtype=np.int64), merges, np.array([0, 1, 2], dtype=np.int64))
    with pytest.raises(ValueError, match="merge_offsets must not decrease"):
        merge_forest(vocab, np.array([0, 1, 2, 4], dtype=np.int64), merges, np.array([0, 3, 2], dtype=np.int64))


def test_propagate_refuses_a_part_not_ranked_below_its_token():
    # a part at or after its token's rank (or below -1) added a row out of the array
    from bpe_fast._inspect import propagate

    weights = np.array([[1], [2], [3]], dtype=np.int64)
    propagate(np.array([-1, 0, 1], dtype=np.int32), np.array([-1, -1, 0], dtype=np.int32), weights)
    assert weights[:, 0].tolist() == [1 + 2 + 3 + 3, 2 + 3, 3]
    for left, right in (([-1, 1, -1], [-1, -1, -1]), ([-1, -1, 5], [-1, -1, -1]), ([-1, -1, -1], [-2, -1, -1])):
        with pytest.raises(ValueError, match="must be ranks below it"):
            propagate(np.array(left, dtype=np.int32), np.array(right, dtype=np.int32), weights.copy())


def test_an_engine_not_built_refuses_replay():
    # MergeEngine.__new__ gives an engine without tables: replay looked its symbols up in none (a crash), where
    # pair_count already refused
    from bpe_fast._train import MergeEngine

    engine = MergeEngine.__new__(MergeEngine)
    assert engine.run(5) == 0 and engine.next_count() == 0
    with pytest.raises(RuntimeError, match="replay needs a built engine"):
        engine.replay(np.frombuffer(b"ab", dtype=np.uint8), np.array([0, 1, 2], dtype=np.int64))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=12) | st.sampled_from([b"", b"a", b"ab", b"a\x00", b"\xff", b"\xc3\xa9", b"\xc3",
                                                           b"abcdefgh", b"abcdefgh\x00", b"abcdefghi", b"abcdefgh\xff",
                                                           b"a\x00\x00\x00\x00\x00\x00\x00\x00b"]),
                max_size=40))
def test_sort_byte_strings_sorts_as_python_and_flags_utf8(strings):
    # bpe_fast.encoding's sorted vocabulary: Python's order of bytes (unsigned bytes, a prefix first, b"a\x00"
    # after b"a"; the first 8 bytes compared as one number, then the rest), equal ones by index, and which are
    # UTF-8
    from bpe_fast._inspect import sort_byte_strings
    offsets = np.zeros(len(strings) + 1, dtype=np.int64)
    np.cumsum([len(s) for s in strings], out=offsets[1:])
    order, utf8 = sort_byte_strings(np.frombuffer(b"".join(strings), dtype=np.uint8), offsets)
    assert order.tolist() == sorted(range(len(strings)), key=lambda k: (strings[k], k))

    def is_utf8(s):
        try:
            s.decode("utf-8")
            return True
        except UnicodeDecodeError:
            return False
    assert utf8.tolist() == [int(is_utf8(strings[k])) for k in order.tolist()]


def test_sort_byte_strings_refuses_offsets_that_do_not_fit_the_pool():
    from bpe_fast._inspect import sort_byte_strings
    for offsets in ([], [1, 2], [0, 3], [0, 2, 1, 2]):
        with pytest.raises(ValueError, match="offsets"):
            sort_byte_strings(b"ab", np.array(offsets, dtype=np.int64))


_STRINGS = st.lists(st.binary(max_size=6) | st.sampled_from([b"", b"a", b"ab", b"a\x00", b"\xff", b"\xc3\xa9", b"\xc3",
                                                            b"\xa9", b"\xa9a", b"abcdefghi"]), max_size=30)


def _pool_of(strings):
    offsets = np.zeros(len(strings) + 1, dtype=np.int64)
    np.cumsum([len(s) for s in strings], out=offsets[1:])
    return np.frombuffer(b"".join(strings), dtype=np.uint8), offsets


def _is_utf8(data):
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


@settings(max_examples=300, deadline=None)
@given(_STRINGS, st.binary(max_size=4) | st.sampled_from([b"a", b"ab", b"\xff", b"\xc3"]))
def test_prefix_range_finds_the_sorted_strings_that_start_with_a_prefix(strings, prefix):
    # encode_with_unstable's tokens that start with some bytes: a binary search of the sorted strings against
    # the plain filter (b"\xff" prefixes: nothing sorts after their successor)
    from bpe_fast._inspect import prefix_range, sort_byte_strings
    pool, offsets = _pool_of(strings)
    ids, _ = sort_byte_strings(pool, offsets)
    lo, hi = prefix_range(pool, offsets, ids, prefix)
    assert [strings[i] for i in ids[lo:hi].tolist()] == sorted(s for s in strings if s.startswith(prefix))
    assert all(not strings[i].startswith(prefix) for i in ids[:lo].tolist() + ids[hi:].tolist())


@settings(max_examples=300, deadline=None)
@given(_STRINGS, st.binary(min_size=1, max_size=5) | st.sampled_from([b"\xc3\xa9", b"a\xc3\xa9b"]), st.data())
def test_prefixed_strings_are_each_prefix_and_string_split_by_utf8(strings, text, data):
    # for each prefix length i, text[:i] + each string of a range of ids, in order, those that are UTF-8 apart
    # from the others (each group in order), against plain Python
    from bpe_fast._inspect import byte_strings, prefixed_strings
    pool, offsets = _pool_of(strings)
    ids = np.array(data.draw(st.lists(st.integers(0, len(strings) - 1), max_size=10)) if strings else [],
                   dtype=np.int64)
    ranges = [sorted(data.draw(st.tuples(st.integers(0, len(ids)), st.integers(0, len(ids)))))
              for _ in range(data.draw(st.integers(0, len(text))))]
    los = np.array([r[0] for r in ranges], dtype=np.int64)
    his = np.array([r[1] for r in ranges], dtype=np.int64)
    everyone = [text[:i + 1] + strings[t] for i, (lo, hi) in enumerate(ranges) for t in ids[lo:hi].tolist()]
    valid, valid_bounds, other, other_bounds = prefixed_strings(pool, offsets, ids, text, los, his)
    assert [valid[a:b] for a, b in zip(valid_bounds[:-1], valid_bounds[1:])] == [s for s in everyone if _is_utf8(s)]
    assert [other[a:b] for a, b in zip(other_bounds[:-1], other_bounds[1:])] == [s for s in everyone if not _is_utf8(s)]
    assert byte_strings(pool, offsets, ids) == [strings[i] for i in ids.tolist()]


def test_byte_strings_prefix_range_and_prefixed_strings_refuse_indices_outside_the_pool():
    # the ids index the pool's offsets without the GIL: an id out of range, or a span past the pool, is named
    from bpe_fast._inspect import byte_strings, prefix_range, prefixed_strings
    pool, offsets = np.frombuffer(b"abc", dtype=np.uint8), np.array([0, 1, 3], dtype=np.int64)
    one = np.array([0], dtype=np.int64)
    for ids in ([2], [-1], [0, 5]):
        bad = np.array(ids, dtype=np.int64)
        with pytest.raises(ValueError, match="index .* is not one of the 2 strings"):
            byte_strings(pool, offsets, bad)
        with pytest.raises(ValueError, match="is not one of the 2 strings"):
            prefixed_strings(pool, offsets, bad, b"x", one, np.array([len(ids)], dtype=np.int64))
    with pytest.raises(ValueError, match="is not one of the 2 strings"):
        prefix_range(pool, offsets, np.array([7], dtype=np.int64), b"a")
    with pytest.raises(ValueError, match=r"string 1's offsets \(1, 9\) do not fit the pool"):
        byte_strings(pool, np.array([0, 1, 9], dtype=np.int64), np.array([1], dtype=np.int64))
    with pytest.raises(ValueError, match="the range of prefix 1"):
        prefixed_strings(pool, offsets, one, b"x", one, np.array([2], dtype=np.int64))
    with pytest.raises(ValueError, match="one entry a prefix length"):
        prefixed_strings(pool, offsets, one, b"", one, one)


@pytest.mark.parametrize("where", ["bmp", "space", "astral_cjk", "astral_other"])
def test_tally_refuses_a_class_past_the_columns(where):
    # a class from the lookup table (or one of the three given) indexed counts and class_bytes unchecked: a class
    # past the columns wrote into the next id's row, or past the end of class_bytes
    table = script_table().copy()
    classes = {"space": _SPACE, "astral_cjk": _CJK, "astral_other": _PUNCT}
    if where == "bmp":
        table[ord("a")] = len(SCRIPTS)
    else:
        classes[where] = len(SCRIPTS)
    counts = np.zeros((1, len(SCRIPTS)), dtype=np.int64)
    class_bytes = np.zeros(len(SCRIPTS), dtype=np.int64)
    with pytest.raises(ValueError, match=f"{where}.* is class {len(SCRIPTS)}, and counts has {len(SCRIPTS)} columns"):
        tally_tokens(np.frombuffer(b"a", dtype=np.uint8), np.zeros(1, dtype=np.int32), np.ones(1, dtype=np.int64),
                     table, counts, class_bytes, classes["space"], classes["astral_cjk"], classes["astral_other"])
    assert not counts.any() and not class_bytes.any()


def test_add_arrays_to_a_table_past_the_cache_counts_as_a_dict():
    # add_arrays queues the pre-tokens (slot, span and key asked for before each is counted) once the table has
    # QUEUE_FROM_SLOTS slots or more: two overlapping tables of 400,000 and 300,000 pre-tokens added into one,
    # against a dict; keys of 1 to 20 bytes (some past the 8 a span holds), counts of any size
    from collections import Counter

    from bpe_fast._scan import PretokenCounter

    rng = np.random.default_rng(7)

    def table(ids):
        keys = [(b"%d" % i) * (1 + i % 3) + bytes([i % 251]) for i in ids]
        counts = rng.integers(1, 1 << 40, len(keys))
        offsets = np.zeros(len(keys) + 1, dtype=np.int64)
        np.cumsum([len(k) for k in keys], out=offsets[1:])
        return keys, (np.frombuffer(b"".join(keys), dtype=np.uint8), offsets, counts.astype(np.int64))

    first_keys, first = table(range(400_000))
    second_keys, second = table(range(250_000, 550_000))
    assert len(set(first_keys + second_keys)) == 550_000
    counter = PretokenCounter(None, 0)
    counter.add_arrays(*first)
    counter.add_arrays(*second)
    want = Counter(dict(zip(first_keys, first[2].tolist())))
    want.update(dict(zip(second_keys, second[2].tolist())))
    assert counter.to_dict() == dict(want)
    assert list(counter.to_dict()) == list(dict.fromkeys(first_keys + second_keys))   # order of first occurrence


@pytest.mark.parametrize("sizes, threads", [((0, 0), 1), ((0, 5), 1), ((5, 0), 1), ((40, 30), 1), ((31, 33), 1),
                                            ((3000, 2000), 1), ((3000, 2000), 2), ((400_000, 300_000), 1),
                                            ((400_000, 300_000), 2), ((400_000, 300_000), 3),
                                            ((100_000, 300_000), 64), ((400_000, 131_073), 2)])
def test_arrays_with_is_add_arrays_then_arrays(sizes, threads):
    # arrays_with looks the table's pre-tokens up (queued once the counter's table is past the cache: 400,000
    # pre-tokens) instead of inserting them, in up to `threads` threads (65,536 or more pre-tokens each: 300,000
    # in 4 ranges at most, 131,073 in 2 uneven ones); its arrays must be add_arrays' then arrays(release=True)'s,
    # in the same order, and the counter emptied
    from bpe_fast._scan import PretokenCounter

    rng = np.random.default_rng(sum(sizes))

    def table(ids):
        keys = [(b"%d" % i) * (1 + i % 3) + bytes([i % 251]) for i in ids] + ([b""] if len(ids) % 2 else [])
        offsets = np.zeros(len(keys) + 1, dtype=np.int64)
        np.cumsum([len(k) for k in keys], out=offsets[1:])
        return np.frombuffer(b"".join(keys), dtype=np.uint8), offsets, rng.integers(0, 1 << 40, len(keys))

    mine, theirs = table(range(sizes[0])), table(range(sizes[0] // 2, sizes[0] // 2 + sizes[1]))
    expected, got = PretokenCounter(None, 0), PretokenCounter(None, 0)
    for counter in (expected, got):
        counter.add_arrays(*mine)
    expected.add_arrays(*theirs)
    want = expected.arrays(release=True)
    result = got.arrays_with(*theirs, threads=threads)
    for w, r in zip(want, result):
        assert r.dtype == w.dtype and r.tolist() == w.tolist()
    assert len(got) == 0 and got.arrays()[2].tolist() == []


@pytest.fixture(scope="module")
def big_table():
    """A table of 300,000 distinct pre-tokens (and an empty one): a counter holding it has QUEUE_FROM_SLOTS slots
    or more, so add_arrays and arrays_with queue what is added."""
    keys = [b""] + [b"w%d" % i for i in range(300_000)]
    offsets = np.zeros(len(keys) + 1, dtype=np.int64)
    np.cumsum([len(k) for k in keys], out=offsets[1:])
    return keys, (np.frombuffer(b"".join(keys), dtype=np.uint8), offsets, np.arange(1, len(keys) + 1))


@pytest.mark.parametrize("m", [1, 2, 31, 32, 33, 65])
@pytest.mark.parametrize("method", ["add_arrays", "arrays_with"])
def test_queued_tails_of_a_few_pre_tokens(big_table, m, method):
    # the queue's last entries are counted after the loop: m below, at and past QUEUE (32), an empty pre-token
    # among them, half of them already in the counter
    from collections import Counter

    from bpe_fast._scan import PretokenCounter

    keys, table = big_table
    counter = PretokenCounter(None, 0)
    counter.add_arrays(*table)          # 300,001 pre-tokens: 2**20 slots, _scan's QUEUE_FROM_SLOTS
    added = [b"" if k == m // 2 else (b"w%d" % k if k % 2 else b"new%d" % k) for k in range(m)]
    offsets = np.zeros(m + 1, dtype=np.int64)
    np.cumsum([len(k) for k in added], out=offsets[1:])
    counts = np.arange(10, 10 + m, dtype=np.int64)
    want = Counter(dict(zip(keys, table[2].tolist())))
    for key, n in zip(added, counts.tolist()):
        want[key] += n
    args = (np.frombuffer(b"".join(added), dtype=np.uint8), offsets, counts)
    if method == "add_arrays":
        got = counter.add_arrays(*args).to_dict()
    else:
        tokens, offs, cnts = counter.arrays_with(*args)
        got = {bytes(tokens[offs[k]:offs[k + 1]]): int(cnts[k]) for k in range(len(cnts))}
        assert len(got) == len(cnts) and len(counter) == 0
    assert got == dict(want)
    assert list(got) == list(dict.fromkeys(keys + added))


def test_arrays_with_refuses_no_threads_before_touching_the_counter():
    from bpe_fast._scan import PretokenCounter

    counter = PretokenCounter(None, 0)
    counter.add_arrays(np.frombuffer(b"abc", dtype=np.uint8), np.array([0, 1, 3]), np.array([1, 2]))
    with pytest.raises(ValueError, match="threads must be >= 1, got 0"):
        counter.arrays_with(np.frombuffer(b"ab", dtype=np.uint8), np.array([0, 2]), np.array([5]), threads=0)
    assert counter.to_dict() == {b"a": 1, b"bc": 2}


def test_arrays_with_refuses_falling_offsets_before_touching_the_counter():
    from bpe_fast._scan import PretokenCounter

    counter = PretokenCounter(None, 0)
    counter.add_arrays(np.frombuffer(b"abc", dtype=np.uint8), np.array([0, 1, 3]), np.array([1, 2]))
    with pytest.raises(ValueError, match="offsets fall at 1"):
        counter.arrays_with(np.frombuffer(b"abc", dtype=np.uint8), np.array([0, 2, 1, 3]), np.array([5, 5, 5]))
    assert counter.to_dict() == {b"a": 1, b"bc": 2}
