"""PretokenCounts: counting several files, adding shards, the .npz format and its bad inputs."""
import re

import numpy as np
import regex
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bpe_fast import GPT2_PATTERN, GPT4_PATTERN, PretokenCounts, count_pretokens, train_bpe, train_from_counts
from bpe_fast import _scan
from bpe_fast._scan import first_repeat

from train_oracle import oracle_count_pretokens, oracle_merges
from corpora import EOT, make_corpus, write


@pytest.fixture
def two_files(tmp_path):
    texts = [make_corpus(31, specials=[EOT]), make_corpus(32, specials=[EOT])]
    return [write(tmp_path, t, f"part{i}.txt") for i, t in enumerate(texts)], texts


def test_counts_of_several_files_add_up(two_files):
    paths, texts = two_files
    counts = count_pretokens(paths, [EOT], num_processes=2, chunk_bytes=300)
    want = oracle_count_pretokens(texts[0], [EOT], counts.pattern) + \
        oracle_count_pretokens(texts[1], [EOT], counts.pattern)
    assert dict(counts.items()) == dict(want)
    assert len(counts) == len(want) and counts.total() == sum(want.values())
    assert sorted(counts.most_common()) == sorted(want.items())
    assert [n for _, n in counts.most_common()] == sorted(want.values(), reverse=True)
    assert counts.most_common(2) == counts.most_common()[:2]


def test_shards_merge_to_the_whole(two_files):
    paths, _ = two_files
    whole = count_pretokens(paths, [EOT])
    a, b = (count_pretokens(p, [EOT]) for p in paths)
    assert a + b == whole
    assert PretokenCounts.merge([a, b]) == whole
    # counts and training equal those of the corpus joined with a special token between the parts
    joined = paths[0].parent / "joined.txt"
    joined.write_bytes(paths[0].read_bytes() + EOT.encode() + paths[1].read_bytes())
    assert count_pretokens(joined, [EOT]) == a + b
    assert train_from_counts(a + b, 400) == train_bpe(joined, 400, [EOT])


def test_merging_different_patterns_or_specials_is_an_error(two_files):
    paths, _ = two_files
    a = count_pretokens(paths[0], [EOT])
    with pytest.raises(ValueError, match="patterns"):
        a + count_pretokens(paths[0], [EOT], pattern=GPT4_PATTERN)
    with pytest.raises(ValueError, match="special tokens"):
        PretokenCounts.merge([a, count_pretokens(paths[0], [])])
    with pytest.raises(ValueError, match="special tokens"):
        train_from_counts(a, 400, ["<|other|>"])


def test_save_load_round_trip(tmp_path, two_files):
    paths, _ = two_files
    counts = count_pretokens(paths, [EOT, "<|pad|>"], pattern=GPT4_PATTERN)
    counts.save(tmp_path / "c.npz")
    loaded = PretokenCounts.load(tmp_path / "c.npz")
    assert loaded == counts
    assert loaded.pattern == GPT4_PATTERN and loaded.special_tokens == (EOT, "<|pad|>")
    assert train_from_counts(loaded, 380) == train_from_counts(counts, 380)
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_truncated_or_foreign_files_are_rejected(tmp_path, two_files):
    paths, _ = two_files
    good = tmp_path / "c.npz"
    count_pretokens(paths[0], [EOT]).save(good)
    raw = good.read_bytes()
    (tmp_path / "trunc.npz").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ValueError, match="trunc.npz"):
        PretokenCounts.load(tmp_path / "trunc.npz")
    np.savez(tmp_path / "foreign.npz", x=np.arange(3))
    with pytest.raises(ValueError, match="foreign.npz.*not a bpe_fast counts file"):
        PretokenCounts.load(tmp_path / "foreign.npz")
    (tmp_path / "text.npz").write_text("hello")
    with pytest.raises(ValueError, match="text.npz"):
        PretokenCounts.load(tmp_path / "text.npz")
    # offsets that disagree with the tokens
    with np.load(good) as data:
        arrays = {k: data[k] for k in data.files}
    arrays["offsets"] = arrays["offsets"][:-1]
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ValueError, match="bad.npz.*corrupt"):
        PretokenCounts.load(tmp_path / "bad.npz")
    # a pre-token listed twice
    with np.load(good) as data:
        arrays = {k: data[k] for k in data.files}
    first = arrays["tokens"][:arrays["offsets"][1]]
    arrays["tokens"] = np.concatenate([arrays["tokens"], first])
    arrays["offsets"] = np.append(arrays["offsets"], arrays["offsets"][-1] + len(first))
    arrays["counts"] = np.append(arrays["counts"], 1)
    np.savez(tmp_path / "twice.npz", **arrays)
    with pytest.raises(ValueError, match="twice.npz.*listed twice"):
        PretokenCounts.load(tmp_path / "twice.npz")
    # a negative count
    with np.load(good) as data:
        arrays = {k: data[k] for k in data.files}
    arrays["counts"][0] = -1
    np.savez(tmp_path / "neg.npz", **arrays)
    with pytest.raises(ValueError, match="neg.npz.*negative"):
        PretokenCounts.load(tmp_path / "neg.npz")
    # an object array would need pickle: refused, not loaded
    arrays = {k: v for k, v in np.load(good).items()}
    arrays["pattern"] = np.array([object()], dtype=object)
    np.savez(tmp_path / "obj.npz", **arrays)
    with pytest.raises(ValueError, match="obj.npz"):
        PretokenCounts.load(tmp_path / "obj.npz")


@pytest.mark.parametrize("name, value, message", [
    # int() of the array was a bare TypeError
    ("version", np.array([1, 1]), r"not a bpe_fast counts file \('version' is an array of shape \(2,\), not one "
                                  r"value\)"),
    # cast to uint8, the values above 255 wrapped into other bytes
    ("tokens", np.frombuffer(b"ab", np.uint8).astype(np.uint16) + np.uint16(256),
     r"corrupt counts file \('tokens' is uint16, not uint8\)"),
    # str() of the array became the pattern "[['a' 'b']]"
    ("pattern", np.array([["a", "b"]]), r"not a bpe_fast counts file \('pattern' is an array of shape \(1, 2\), "
                                        r"not one value\)"),
    # loaded, and failed only after training, naming no file
    ("pattern", np.array("("), r"corrupt counts file \(invalid pre-tokenization pattern '\(': missing \)"),
])
def test_malformed_entries_are_refused_naming_the_file(tmp_path, name, value, message):
    PretokenCounts({b"a": 1, b"b": 2}).save(tmp_path / "c.npz")
    arrays = dict(np.load(tmp_path / "c.npz"))
    arrays[name] = value
    if name == "pattern":
        del arrays["pattern_utf8"]      # a file written before the pattern's exact bytes were
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ValueError, match=r"^" + re.escape(str(tmp_path / "bad.npz")) + ": " + message):
        PretokenCounts.load(tmp_path / "bad.npz")
    if name != "tokens":
        arrays = dict(np.load(tmp_path / "c.npz"))
        arrays[name] = arrays[name].reshape(1)          # one element is one value
        np.savez(tmp_path / "one.npz", **arrays)
        assert PretokenCounts.load(tmp_path / "one.npz") == {b"a": 1, b"b": 2}


@pytest.mark.parametrize("name, value, message", [
    # (paths no test reached, found by coverage) each names the file and what is wrong
    ("format", np.array("other_counts"), r"not a bpe_fast counts file \(format 'other_counts'\)"),
    ("version", np.array(99), r"counts file version 99 is not supported \(this is \d+\)"),
    ("counts", None, r"not a bpe_fast counts file \(missing or bad 'counts'\)"),
    ("counts", np.array([1.0, 2.0]), r"not a bpe_fast counts file \(missing or bad 'counts'\)"),
    ("special_tokens", np.array('{"<|a|>": 1}'), r"corrupt counts file \(special_tokens is not a list\)"),
    ("pattern_utf8", np.array([97, 98], dtype=np.uint16),
     r"corrupt counts file \('pattern_utf8' is uint16 of shape \(2,\), not uint8 bytes\)"),
    ("pattern_utf8", np.frombuffer(b"other", dtype=np.uint8), r"corrupt counts file \('pattern_utf8' and 'pattern' "
                                                              r"differ\)"),
])
def test_other_malformed_entries_are_refused_naming_the_file(tmp_path, name, value, message):
    PretokenCounts({b"a": 1, b"b": 2}).save(tmp_path / "c.npz")
    arrays = dict(np.load(tmp_path / "c.npz"))
    if value is None:
        del arrays[name]
    else:
        arrays[name] = value
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ValueError, match=r"^" + re.escape(str(tmp_path / "bad.npz")) + ": " + message):
        PretokenCounts.load(tmp_path / "bad.npz")


def test_counts_with_a_pattern_that_does_not_compile_are_refused_when_made():
    with pytest.raises(ValueError, match=r"invalid pre-tokenization pattern '\('"):
        PretokenCounts({b"a": 1}, pattern="(")


def test_special_tokens_nested_too_deeply_name_the_file(tmp_path):
    # special_tokens is JSON: json.loads's RecursionError got out bare, naming no file
    PretokenCounts({b"a": 1}).save(tmp_path / "c.npz")
    arrays = dict(np.load(tmp_path / "c.npz"))
    arrays["special_tokens"] = np.array("[" * 100_000)
    np.savez(tmp_path / "deep.npz", **arrays)
    with pytest.raises(ValueError, match=r"deep\.npz: corrupt counts file \(special_tokens: JSON arrays or objects "
                                         r"nested too deeply\)"):
        PretokenCounts.load(tmp_path / "deep.npz")


def test_save_into_missing_folder_fails_cleanly(tmp_path, two_files):
    counts = count_pretokens(two_files[0][0], [EOT])
    with pytest.raises(FileNotFoundError, match="missing"):
        counts.save(tmp_path / "missing" / "c.npz")


def test_counts_are_arrays_and_read_as_a_mapping(two_files):
    paths, texts = two_files
    counts = count_pretokens(paths[0], [EOT], num_processes=2, chunk_bytes=300)
    assert counts.tokens.dtype == np.uint8 and counts.offsets.dtype == np.int64 and counts.counts.dtype == np.int64
    want = oracle_count_pretokens(texts[0], [EOT], counts.pattern)
    blob = counts.tokens.tobytes()
    pairs = {blob[a:b]: int(n) for a, b, n in zip(counts.offsets[:-1], counts.offsets[1:], counts.counts)}
    assert pairs == dict(want) and len(pairs) == len(counts)         # each pre-token once
    assert counts == want and counts[b" the"] == want[b" the"] and counts[b"\x00never"] == 0
    rebuilt = PretokenCounts.from_arrays(counts.tokens, counts.offsets, counts.counts, counts.pattern, [EOT])
    assert rebuilt == counts
    with pytest.raises(ValueError, match="listed twice"):
        PretokenCounts.from_arrays(np.frombuffer(b"abab", np.uint8), [0, 2, 4], [1, 1])


def test_counts_compare_as_counter_does():
    # a count of 0 is the same as no entry; an iterable of bytes is counted
    assert PretokenCounts({b"x": 1, b"z": 0}) == PretokenCounts({b"x": 1}) == {b"x": 1}
    assert PretokenCounts([b"ab", b"ab", b"c"]) == {b"ab": 2, b"c": 1}
    assert PretokenCounts({b"x": 1}) != PretokenCounts({b"x": 1}, special_tokens=[EOT])
    # PretokenCounts reads as a mapping: made from one, it keeps the counts (it counted each pre-token once)
    assert PretokenCounts(PretokenCounts({b"ab": 5, b"c": 2, b"z": 0})) == {b"ab": 5, b"c": 2}
    # with the pattern or special tokens given, those given; the others its own (a copy keeps them: test below)
    made = PretokenCounts(PretokenCounts({b"a": 3}, special_tokens=[EOT]), pattern=GPT4_PATTERN)
    assert made == {b"a": 3} and made.special_tokens == (EOT,) and made.pattern == GPT4_PATTERN
    made = PretokenCounts(PretokenCounts({b"a": 3}, special_tokens=[EOT]), special_tokens=())
    assert made.special_tokens == () and made.pattern == GPT2_PATTERN


@pytest.mark.parametrize("tokens, offsets, counts, match", [
    (np.array([300, 98]), [0, 2], [1], "tokens"),                 # was wrapped to b",b"
    (np.array([97, 98]), [0, 2], np.array([2.9]), "counts"),      # was truncated to 2
    (np.array([97, 98]), np.array([0.0, 2.5]), [1], "offsets"),
    (np.array([97, 98]), [0, 2], np.array([2 ** 63], dtype=np.uint64), "counts"),
    (np.array([97, 98]), [0, 2], [2 ** 64], "counts"),           # was an OverflowError naming nothing
    (np.array([97, 98]), [0, 2 ** 64], [1], "offsets"),
])
def test_from_arrays_refuses_values_its_dtypes_cannot_hold(tokens, offsets, counts, match):
    with pytest.raises(ValueError, match=f"{match}: values that"):
        PretokenCounts.from_arrays(tokens, offsets, counts)
    with pytest.raises(TypeError, match="counts: int"):
        PretokenCounts.from_arrays([97, 98], [0, 2], [None])
    # the same values that fit are taken, whatever the arrays' dtypes
    assert PretokenCounts.from_arrays(np.array([97, 98]), np.array([0.0, 2.0]), [2.0]) == {b"ab": 2}
    assert PretokenCounts.from_arrays([], [0], []) == {}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=10).map(lambda b: bytes(x % 3 for x in b)), max_size=60))
def test_a_repeated_pretoken_is_found_wherever_it_is(tokens):
    # the check PretokenCounts makes of its arrays (a native hash table of indices; it added the arrays to a
    # whole counting table, 11.5 GB for 5 GB of web-like text's counts), against the first repeat in a dict
    seen, want = set(), -1
    for k, token in enumerate(tokens):
        if token in seen:
            want = k
            break
        seen.add(token)
    offsets = np.cumsum([0] + [len(t) for t in tokens], dtype=np.int64)
    assert first_repeat(np.frombuffer(b"".join(tokens), dtype=np.uint8), offsets) == want
    if want >= 0:
        with pytest.raises(ValueError, match=f"listed twice: {re.escape(repr(tokens[want]))} \\(pre-token {want}\\)"):
            PretokenCounts.from_arrays(np.frombuffer(b"".join(tokens), dtype=np.uint8), offsets,
                                       np.ones(len(tokens), dtype=np.int64))


@pytest.mark.parametrize("offsets", [[0, 6, 2, 8], [0, 100, 8], [0, -3, 8]])
def test_adding_unchecked_counts_with_falling_offsets_is_a_value_error(offsets):
    # from_arrays(check=False) keeps the arrays as given, and adding shards hands them to the native counter's
    # add_arrays, which checked only the first and last offsets: a falling offset made a negative length
    # (memcpy of -4 bytes, an ASan negative-size-param; a segmentation fault on the normal build), an offset
    # past the tokens read past them
    bad = PretokenCounts.from_arrays(np.frombuffer(b"abcdefgh", dtype=np.uint8), np.array(offsets),
                                     np.ones(len(offsets) - 1, dtype=np.int64), check=False)
    good = PretokenCounts({b"x": 1})
    with pytest.raises(ValueError, match="offsets fall at"):
        bad + good
    with pytest.raises(ValueError, match="offsets fall at"):
        PretokenCounts.merge([good, bad])
    ok = PretokenCounts.from_arrays(np.frombuffer(b"abcdefgh", dtype=np.uint8), np.array([0, 2, 2, 8]),
                                    np.array([1, 2, 3]), check=False)
    assert dict((ok + good).items()) == {b"ab": 1, b"": 2, b"cdefgh": 3, b"x": 1}


def test_adding_counts_whose_sum_int64_cannot_hold_is_a_value_error():
    # the native counter adds int64 counts: 2^62 + 2^62 wrapped to -2^63, a negative count in the sum (which
    # save wrote and training refused, naming no shard)
    big = PretokenCounts({b"c": 1, b"ab": 2 ** 62})
    with pytest.raises(ValueError, match=r"counts of b'ab' add up to more than int64 holds"):
        big + big
    with pytest.raises(ValueError, match=r"counts of b'ab' add up to more than int64 holds"):
        PretokenCounts.merge([PretokenCounts({b"x": 1}), big, PretokenCounts({b"ab": 2 ** 62, b"y": 3})])
    # sums that fit are exact, also when the largest counts of the shards add up to more
    near = PretokenCounts({b"ab": 2 ** 62, b"c": 2 ** 62})
    total = PretokenCounts.merge([near, PretokenCounts({b"ab": 2 ** 62 - 1}), PretokenCounts({b"c": 5})])
    assert dict(total.items()) == {b"ab": 2 ** 63 - 1, b"c": 2 ** 62 + 5}
    assert list(total) == [b"ab", b"c"]
    assert near + PretokenCounts({b"d": 1}) == {b"ab": 2 ** 62, b"c": 2 ** 62, b"d": 1}
    # their total is exact too: the int64 sum of 2^62 + 2^62 wrapped to -2^63 in total() and the repr
    assert near.total() == 2 ** 63 and total.total() == 2 ** 63 - 1 + 2 ** 62 + 5
    assert repr(near) == f"PretokenCounts(2 distinct, {2 ** 63} in all)"


def test_a_pattern_ending_in_nul_survives_save_and_load(tmp_path):
    # NumPy's str arrays drop trailing NULs: a pattern 'a|\x00' was saved and came back as 'a|' (silently another
    # pattern, which the counts were not made with)
    counts = PretokenCounts({b"a": 2, b"\x00": 1}, pattern="a|\x00")
    counts.save(tmp_path / "c.npz")
    back = PretokenCounts.load(tmp_path / "c.npz")
    assert back.pattern == "a|\x00" and back == counts
    with np.load(tmp_path / "c.npz") as data:
        arrays = {name: data[name] for name in data.files}
    np.savez(tmp_path / "old.npz", **{k: v for k, v in arrays.items() if k != "pattern_utf8"})   # written before it
    assert PretokenCounts.load(tmp_path / "old.npz").pattern == "a|"
    arrays["pattern_utf8"] = np.frombuffer(b"b|\x00", dtype=np.uint8)
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ValueError, match=r"bad\.npz: corrupt counts file \('pattern_utf8' and 'pattern' differ\)"):
        PretokenCounts.load(tmp_path / "bad.npz")


def test_counts_are_a_mapping_to_what_takes_mappings():
    # Counter(counts) counted each pre-token once: PretokenCounts was no collections.abc.Mapping, so Counter took
    # it for an iterable of its keys (dict(counts) was right)
    from collections import Counter
    from collections.abc import Mapping
    counts = PretokenCounts({b"a": 3, b" b": 1})
    assert isinstance(counts, Mapping)
    assert Counter(counts) == Counter({b"a": 3, b" b": 1}) and dict(counts) == {b"a": 3, b" b": 1}
    merged = Counter({b"a": 1})
    merged.update(counts)
    assert merged == Counter({b"a": 4, b" b": 1})
    assert counts.get(b"a") == 3 and counts.get(b"zz") is None and counts.get(b"zz", 0) == 0


def _tag_and_slot_twins(head, tail_len, seed, rng):
    """Two pre-tokens head + tail (tail_len lowercase letters, head 8 bytes) whose hash_bytes under `seed` share
    the top 32 bits (the counter's tag) and the low 10 (its first slot in a table of 1,024): hash_bytes of a key
    of 9 to 16 bytes written out over batches of 3 million random tails (about one such pair a batch), in
    NumPy's wrapping uint64 arithmetic; None after 20 batches."""
    for _ in range(20):
        found = _twins_in_a_batch(head, tail_len, seed, rng)
        if found is not None:
            return found
    return None


def _twins_in_a_batch(head, tail_len, seed, rng):
    F = np.uint64(0xFF51AFD7ED558CCD)
    first = ((int.from_bytes(head, "little") ^ ((8 + tail_len) << 56) ^ seed) * 0xFF51AFD7ED558CCD) % 2**64
    first ^= first >> 32
    letters = rng.integers(97, 123, size=(3_000_000, tail_len), dtype=np.uint8)
    words = np.zeros((len(letters), 8), dtype=np.uint8)
    words[:, :tail_len] = letters
    with np.errstate(over="ignore"):
        h = (np.uint64(first) + words.view("<u8").ravel()) * F
        h = (h ^ (h >> np.uint64(32))) * F
        h ^= h >> np.uint64(32)
    key = ((h >> np.uint64(32)) << np.uint64(10)) | (h & np.uint64(1023))
    order = np.argsort(key, kind="stable")
    same = np.flatnonzero(key[order][1:] == key[order][:-1])
    for k in same:
        a, b = letters[order[k]].tobytes(), letters[order[k + 1]].tobytes()
        if a != b:
            return head + a, head + b
    return None


@pytest.mark.parametrize("tail_len", [5, 8])
def test_pretokens_meeting_in_one_slot_with_one_tag_are_counted_apart(tail_len):
    # The counter compares a pre-token with one it holds when their hashes' tags (top 32 bits) agree in the
    # probe run: then by length, first 8 bytes (the span's head) and the bytes after them (tail_equal: the last 8
    # up to 16 bytes). Two crafted against this process's key: the same first 8 bytes and length, one tag, one
    # first slot; only the bytes after the 8th tell them apart.
    rng = np.random.default_rng(tail_len)
    twins = _tag_and_slot_twins(b" abcdefg", tail_len, _scan.hash_seed, rng)
    assert twins is not None
    a, b = twins
    ha, hb = _scan.hash_of(a), _scan.hash_of(b)     # the collision is the native hash's
    assert ha != hb and ha >> 32 == hb >> 32 and ha & 1023 == hb & 1023
    counts = count_pretokens(iter([(a + b + b).decode()]), num_processes=1)
    assert dict(counts.items()) == {a: 1, b: 2}


def test_a_table_past_the_cache_counts_as_a_counter_does():
    # A table of 2^20 slots or more (over 262,144 distinct pre-tokens) counts through a queue of prefetches,
    # and the short pre-tokens it found last through PretokenCounter.hot: a text that fills the table with about
    # 470,000 distinct words, then one of the same words again, short ones many times, new ones among them, all
    # counted by later add() calls (each takes the path for its table's size at its start)
    from collections import Counter

    from bpe_fast._scan import PretokenCounter
    from bpe_fast.pretokenize import native_tables

    rng = np.random.default_rng(12)
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
    lengths = rng.integers(1, 12, size=600_000)
    pool = letters[rng.integers(0, 26, size=int(lengths.sum()))].tobytes()
    ends = np.cumsum(lengths).tolist()
    words = sorted({pool[a:b].decode() for a, b in zip([0] + ends[:-1], ends)})
    fill = " ".join(words)
    short = [w for w in words if len(w) <= 4][:3000]
    repeats = " ".join(rng.choice(short, size=200_000).tolist() + rng.choice(words, size=50_000).tolist()
                       + [f"{w}q" for w in words[:20_000]])           # new ones: 20,000 words never seen
    counter = PretokenCounter(native_tables(), 2)
    for part in (fill, repeats, repeats[:100_000], fill[:50_000]):
        counter.add(part.encode())
    expected = Counter()
    for part in (fill, repeats, repeats[:100_000], fill[:50_000]):
        expected.update(regex.findall(GPT2_PATTERN, part))
    assert len(expected) > 400_000
    got = counter.to_dict()
    assert got == {k.encode(): v for k, v in expected.items()}
    assert list(got)[:10] == [k.encode() for k in list(expected)[:10]]     # first occurrences keep their order
    assert counter.total() == sum(expected.values())
    # emptied (arrays(release=True)), it counts anew: nothing it held before is counted (none of its hot ones)
    counter.arrays(release=True)
    counter.add(fill.encode())
    counter.add(repeats.encode())
    again = Counter(regex.findall(GPT2_PATTERN, fill)) + Counter(regex.findall(GPT2_PATTERN, repeats))
    assert counter.to_dict() == {k.encode(): v for k, v in again.items()}


def test_a_copy_keeps_the_pattern_and_special_tokens():
    # PretokenCounts(counts) kept the arrays and reset the pattern to GPT-2's and the special tokens to none: the
    # copy was != the original and could not be added to it (review helper-142)
    counts = count_pretokens(iter(["a b c<|endoftext|> a b"]), ["<|endoftext|>"], pattern=GPT4_PATTERN)
    copy = PretokenCounts(counts)
    assert copy == counts and copy.pattern == GPT4_PATTERN and copy.special_tokens == ("<|endoftext|>",)
    assert (copy + counts).total() == 2 * counts.total()
    other = PretokenCounts(counts, pattern=GPT2_PATTERN, special_tokens=[])        # given: as given
    assert other.pattern == GPT2_PATTERN and other.special_tokens == ()
    assert PretokenCounts({b"a": 1}).pattern == GPT2_PATTERN and PretokenCounts({b"a": 1}).special_tokens == ()


def test_shards_with_special_tokens_in_other_orders_add_up_to_the_same_counts():
    # a + b kept a's order of the special tokens and b + a b's: the two compared equal but trained the special tokens
    # at other ids. Now shards that disagree on the order give a sum with them sorted (as a set of them is), either way
    texts = ["hello world<|pad|> hi hello<|endoftext|>yo yo", "hello there<|endoftext|> hi<|pad|>yo hello"]
    a = count_pretokens(iter([texts[0]]), [EOT, "<|pad|>"], num_processes=1)
    b = count_pretokens(iter([texts[1]]), ["<|pad|>", EOT], num_processes=1)
    want = oracle_count_pretokens(texts[0], [EOT, "<|pad|>"], GPT2_PATTERN) + \
        oracle_count_pretokens(texts[1], [EOT, "<|pad|>"], GPT2_PATTERN)
    for total in (a + b, b + a, PretokenCounts.merge([a, b]), PretokenCounts.merge([b, a])):
        assert total == want and total.special_tokens == (EOT, "<|pad|>")
    assert PretokenCounts.merge([b, b, a]).special_tokens == (b + b + a).special_tokens == (EOT, "<|pad|>")
    ab, ba = train_from_counts(a + b, 270), train_from_counts(b + a, 270)
    assert ab == ba and ab[1] == oracle_merges(want, 270 - 258)
    assert ab[0][256] == EOT.encode() and ab[0][257] == b"<|pad|>"
    # shards that agree keep their order; special_tokens given to training choose the ids
    assert (b + b).special_tokens == PretokenCounts.merge([b, b]).special_tokens == ("<|pad|>", EOT)
    assert train_from_counts(a + b, 270, ["<|pad|>", EOT])[0][256] == b"<|pad|>"


def test_train_from_counts_refuses_counts_that_are_no_mapping():
    # a tuple was taken for train_bpe's arrays (tokens, offsets, counts), unchecked: a tuple of (bytes, count) pairs
    # failed inside NumPy ("corpus_statistics() missing 1 required positional argument", "ufunc 'subtract' ...")
    for counts in (tuple({b"ab": 2, b"cd": 1}.items()), tuple({b"ab": 2, b"cd": 1, b"ef": 4}.items()),
                   (b"hello", b"help", b"he"), [(b"ab", 2)]):
        with pytest.raises(TypeError, match=r"^counts must be PretokenCounts or a mapping \{bytes: int\}, got "):
            train_from_counts(counts, 258)


def test_count_pretokens_takes_pattern_none_as_gpt2s(tmp_path):
    # train_bpe(pattern=None) and PretokenCounts(pattern=None) mean GPT-2's pattern; count_pretokens(pattern=None)
    # was "TypeError: pattern must be a str, got NoneType"
    from bpe_fast.counts import count_file
    text = "Hello, world! It's 2024<|endoftext|>  don't  stop"
    want = oracle_count_pretokens(text, [EOT], GPT2_PATTERN)
    counts = count_pretokens(iter([text]), [EOT], pattern=None, num_processes=1)
    assert counts == want and counts.pattern == GPT2_PATTERN
    path = write(tmp_path, text, "c.txt")
    counts = count_file(path, [EOT], pattern=None, num_processes=1)
    assert counts == want and counts.pattern == GPT2_PATTERN


def test_counts_pickle_in_every_protocol_without_the_dict_read_made():
    # protocols 0 and 1 refused the class ("a class that defines __slots__ without defining __getstate__ cannot be
    # pickled"), and the others pickled the dict a mapping read made as well as the arrays
    import pickle
    counts = PretokenCounts({b"hello": 3, b" world": 2 ** 63 - 1, b"": 1}, pattern=GPT4_PATTERN,
                            special_tokens=["<|pad|>", EOT])
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        back = pickle.loads(pickle.dumps(counts, protocol=protocol))
        assert back == {b"hello": 3, b" world": 2 ** 63 - 1, b"": 1}
        assert back.pattern == GPT4_PATTERN and back.special_tokens == ("<|pad|>", EOT)
    before = len(pickle.dumps(counts))
    assert counts[b"hello"] == 3                    # the dict is made
    assert len(pickle.dumps(counts)) == before
    assert pickle.loads(pickle.dumps(PretokenCounts())) == {}


def test_sum_of_shards_with_special_tokens_and_another_pattern():
    # sum() starts from PretokenCounts() (GPT-2's pattern, no special token) or from 0: either start adds as
    # nothing, whatever made the shards; the expected counts are the documents' Counter sums (the oracle's)
    docs = ["hello world<|endoftext|>hi there", "bye world, bye", "<|endoftext|>hello again"]
    shards = [count_pretokens(iter([d]), special_tokens=[EOT], pattern=GPT4_PATTERN, num_processes=1) for d in docs]
    want = {}
    for d in docs:
        for token, n in oracle_count_pretokens(d, [EOT], GPT4_PATTERN).items():
            want[token] = want.get(token, 0) + n
    for total in (sum(shards, PretokenCounts()), sum(shards), PretokenCounts.merge(shards)):
        assert total == want
        assert total.pattern == GPT4_PATTERN and total.special_tokens == (EOT,)
    assert PretokenCounts() + PretokenCounts() == {}
    with pytest.raises(ValueError, match="special tokens"):     # two shards that both hold counts still must agree
        shards[0] + count_pretokens(iter(["x"]), pattern=GPT4_PATTERN, num_processes=1)
    with pytest.raises(TypeError):
        1 + shards[0]


def test_a_copy_of_counts_is_its_own():
    counts = PretokenCounts({b"hello": 3, b" world": 2})
    for copy in (PretokenCounts(counts), counts + PretokenCounts(), 0 + counts):
        copy.counts[:] = 7
        copy.tokens[:] = ord("x")
        assert counts == {b"hello": 3, b" world": 2}
