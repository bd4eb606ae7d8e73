"""bpe_fast.ranks: reading `.tiktoken` files and recovering merges from ranks, against plain-Python oracles.

The oracle for merges_from_ranks is the definition: for each multi-byte token in rank order, tiktoken's rule
on its bytes using only the lower ranks must leave two parts (a, b), the merge; otherwise the token is refused.
The oracle for read_tiktoken is tiktoken's own reader (tiktoken.load.load_tiktoken_bpe) on valid files.
"""
import array
import base64
import gzip
import os
import random
import re
import string
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bpe_fast
import bpe_fast._ranks
import bpe_fast.load
import bpe_fast.merge_rule
import bpe_fast.ranks
import bpe_fast.specials
from bpe_fast import GPT2_PATTERN, Tokenizer
from bpe_fast.formats import FormatError
from bpe_fast.ranks import merges_from_ranks, ranks_from_tokenizer, read_tiktoken
from encode_oracle import merge_pretoken_tiktoken, oracle_encode
from openai_ranks import load_ranks, ranks_path

SOME = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FEW = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
BYTE_RANKS = {bytes([b]): b for b in range(256)}


# ------------------------------------------------------------------------------------- the oracle

def oracle_merges(ranks):
    """merges_from_ranks by its definition, in plain Python: (merges, None) or (None, unreachable token)."""
    merges = []
    lower = {}
    for token in sorted(ranks, key=ranks.get):
        if len(token) == 1:
            continue
        parts = merge_pretoken_tiktoken(token, lower)
        if len(parts) != 2:
            return None, token
        merges.append((parts[0], parts[1]))
        lower[token] = ranks[token]
    return merges, None


def random_ranks(rng, n_tokens, alphabet=b"abc", shuffle_bytes=False):
    """Single bytes, then `n_tokens` tokens each the concatenation of two earlier ones (drawn from `alphabet`
    and what was built on it), in rank order; some of them are unreachable under tiktoken's rule."""
    singles = list(range(256))
    if shuffle_bytes:
        rng.shuffle(singles)
    ranks = {bytes([b]): r for r, b in enumerate(singles)}
    pool = [bytes([c]) for c in alphabet]
    next_rank = 256
    while next_rank < 256 + n_tokens:
        token = rng.choice(pool) + rng.choice(pool)
        if token in ranks or len(token) > 12:
            continue
        ranks[token] = next_rank
        pool.append(token)
        next_rank += 1
    return ranks


# ------------------------------------------------------------------------------------- worked examples

def test_worked_example():
    # a b c ab abc bc: "abc" -> [a, b, c] -> "ab" seen, "bc" not yet -> [ab, c]; "bc" -> [b, c]
    ranks = BYTE_RANKS | {b"ab": 256, b"abc": 257, b"bc": 258}
    assert merges_from_ranks(ranks) == [(b"a", b"b"), (b"ab", b"c"), (b"b", b"c")]
    # "abcd" with "cd" unranked: [a, b, c, d] -> [ab, c, d] -> [abc, d]
    assert merges_from_ranks(ranks | {b"abcd": 259})[-1] == (b"abc", b"d")
    # "bcd" ranked before "abcd": "abcd" -> [ab, c, d] -> [abc, d] ("abc" 257 < "bcd" 259)
    assert merges_from_ranks(ranks | {b"bcd": 259, b"abcd": 260})[-1] == (b"abc", b"d")
    # a tie (the same token at two places) goes to the leftmost: "aaa" -> [aa, a]
    assert merges_from_ranks(BYTE_RANKS | {b"aa": 256, b"aaa": 257}) == [(b"a", b"a"), (b"aa", b"a")]


def test_the_lowest_rank_wins_not_the_leftmost():
    # "abc": "bc" has a lower rank than "ab", so [a, bc]
    ranks = BYTE_RANKS | {b"bc": 256, b"ab": 257, b"abc": 258}
    assert merges_from_ranks(ranks)[-1] == (b"a", b"bc")


def test_unreachable_token_is_named_with_its_rank():
    ranks = BYTE_RANKS | {b"ab": 256, b"xyz": 257}
    with pytest.raises(ValueError, match=r"b'xyz' \(rank 257\).*3 parts"):
        merges_from_ranks(ranks)
    # "abc" ranked before "ab": [a, b, c] has no lower-ranked pair, so it stays three parts
    with pytest.raises(ValueError, match=r"b'abc' \(rank 256\)"):
        merges_from_ranks(BYTE_RANKS | {b"abc": 256, b"ab": 257})


def test_a_token_ranked_before_its_parts_gives_tiktokens_ids():
    # tiktoken's rule merges "abc" through "ab" (rank 300) whatever their order; merging "abc"'s bytes by the
    # ranks below its own leaves 3 parts, so no merge list says it: it was refused ("cannot be made by merging
    # tokens of lower rank"); read now as tiktoken reads it (Llama 3's ranks have 678 such tokens)
    tiktoken = pytest.importorskip("tiktoken")
    ranks = BYTE_RANKS | {b"ab": 300, b"abc": 257, b"bc": 400}
    specials = {"<|endoftext|>": 401}
    enc = tiktoken.Encoding("x", pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens=specials)
    ours = bpe_fast.Encoding("x", pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens=specials)
    assert ours.tokenizer.by_ranks_only
    for text in ["xabc", "abc", "abcbc abab xbcab", "<|endoftext|>abc"]:
        assert ours.encode(text, allowed_special="all") == enc.encode(text, allowed_special="all"), text
    assert ours.encode("xabc") == [120, 257]


def test_single_bytes_anywhere_but_all_present():
    # the byte tokens need not be ids 0..255 (cl100k's are not): their ranks are only ids
    ranks = {bytes([b]): 1000 + (b * 7) % 256 for b in range(256)} | {b"ab": 5, b"abc": 6}
    assert merges_from_ranks(ranks) == [(b"a", b"b"), (b"ab", b"c")]
    tok = Tokenizer.from_tiktoken(ranks, r"\S+|\s+")
    assert tok.encode("abcab a") == [6, 5, ranks[b" "], ranks[b"a"]]
    missing = dict(BYTE_RANKS)
    del missing[b"\xff"], missing[b"\x00"]
    with pytest.raises(ValueError, match=r"2 of the 256 single bytes have no rank \(b'\\x00', b'\\xff'\)"):
        merges_from_ranks(missing)


@pytest.mark.parametrize("in_rank_order", [True, False])
def test_ranks_no_merge_makes_are_read_and_a_missing_byte_names_the_file(tmp_path, in_rank_order):
    """From a `.tiktoken` file, in rank order or not, a token no merge makes is read (it was refused naming the
    file and line); a missing byte names the file."""
    import base64

    from bpe_fast.formats import FormatError

    lines = [f"{base64.b64encode(bytes([b])).decode()} {b}" for b in range(256)]
    lines.insert(3, f"{base64.b64encode(b'ab').decode()} 256")
    lines.insert(7, f"{base64.b64encode(b'xyz').decode()} 257")     # line 8: x, y, z make no two parts
    if not in_rank_order:
        lines.insert(0, lines.pop(11))      # line 1 now: rank 9 (b"\t"); b"xyz" moves to line 9
    path = tmp_path / "bad.tiktoken"
    path.write_text("\n".join(lines) + "\n")
    # b"xyz" no merge makes: read as tiktoken reads it (a pre-token that is the whole token gets its rank)
    tok = Tokenizer.from_tiktoken(path, "gpt2")
    assert tok.by_ranks_only and tok.encode("xyz wxyz") == [257, 32, 119, 120, 121, 122]
    assert Tokenizer.from_tiktoken(BYTE_RANKS | {b"xyz": 257}, "gpt2").encode("xyz") == [257]
    del lines[20]       # a single byte with no rank
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(FormatError, match=r"bad\.tiktoken: 1 of the 256 single bytes have no rank"):
        Tokenizer.from_tiktoken(path, "gpt2")


def test_bad_ranks_arguments():
    with pytest.raises(TypeError, match="dict"):
        merges_from_ranks([(b"a", 0)])
    with pytest.raises(TypeError, match="'a' is not bytes"):
        merges_from_ranks(BYTE_RANKS | {"a": 300})
    with pytest.raises(TypeError, match="not an int"):
        merges_from_ranks(BYTE_RANKS | {b"ab": 1.5})
    with pytest.raises(TypeError, match="not an int"):
        merges_from_ranks(BYTE_RANKS | {b"ab": True})
    with pytest.raises(ValueError, match="the empty token"):
        merges_from_ranks(BYTE_RANKS | {b"": 300})
    with pytest.raises(ValueError, match="out of range"):
        merges_from_ranks(BYTE_RANKS | {b"ab": -1})
    with pytest.raises(ValueError, match="out of range"):
        merges_from_ranks(BYTE_RANKS | {b"ab": 2**40})
    with pytest.raises(ValueError, match=r"b'a' and b'ab' have the same rank 97"):
        merges_from_ranks(BYTE_RANKS | {b"ab": 97})
    # numpy integers are ints; gaps between ranks are allowed
    assert merges_from_ranks(BYTE_RANKS | {b"ab": np.int64(5000)}) == [(b"a", b"b")]


# ------------------------------------------------------------------------------------- against the oracle

@SOME
@given(st.integers(0, 2**32), st.integers(1, 60), st.booleans())
def test_merges_from_ranks_equals_oracle(seed, n_tokens, shuffle_bytes):
    ranks = random_ranks(random.Random(seed), n_tokens, shuffle_bytes=shuffle_bytes)
    expected, unreachable = oracle_merges(ranks)
    if unreachable is None:
        assert merges_from_ranks(ranks) == expected
    else:
        with pytest.raises(ValueError, match=f"the token {unreachable!r} \\(rank {ranks[unreachable]}\\)"):
            merges_from_ranks(ranks)


def reachable_ranks(seed, n_tokens):
    """Random ranks with the unreachable tokens dropped (each drop may make later ones unreachable: repeat)."""
    ranks = random_ranks(random.Random(seed), n_tokens, alphabet=b"ab c")
    while True:
        _, bad = oracle_merges(ranks)
        if bad is None:
            return ranks
        del ranks[bad]


@FEW
@given(st.integers(0, 2**32), st.integers(1, 80), st.text(alphabet="abc d", max_size=80))
def test_recovered_merges_encode_as_tiktoken(seed, n_tokens, text):
    tiktoken = pytest.importorskip("tiktoken")
    ranks = reachable_ranks(seed, n_tokens)
    pattern = r" ?\S+|\s+"
    tok = Tokenizer.from_tiktoken(ranks, pattern)
    enc = tiktoken.Encoding("random", pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
    expected = enc.encode(text)
    assert tok.encode(text) == expected
    vocab = {r: t for t, r in ranks.items()}
    assert oracle_encode(text, vocab, tok.merges, pattern=pattern) == expected


def _ranked_or_error(read, ranks):
    try:
        ranked = read(ranks)
    except (TypeError, ValueError) as exc:
        return type(exc), str(exc)
    return (ranked.tokens, ranked.values.tolist(), ranked.pool.tolist(), ranked.offsets.tolist(),
            ranked.byte_index.tolist())


# ranks the native reading declines (or must check): a bool, a NumPy integer, beyond int64 or the largest id,
# negative, a duplicate of another
_odd_rank = st.one_of(st.just(True), st.integers(-3, 2**64), st.integers(0, 600).map(np.int32), st.just(2**31),
                      st.just(-1), st.integers(0, 300))


@SOME
@given(st.lists(st.binary(min_size=1, max_size=3), max_size=20, unique=True), st.booleans(), st.booleans(),
       st.lists(st.tuples(st.integers(0, 40), _odd_rank), max_size=2), st.booleans())
def test_ranks_read_natively_equal_the_python_reading(extra, shuffle, bytes_first, odd, empty_token):
    """ranked_tokens reads a plain dict of bytes and ints in rank order natively (ranks_arrays); anything else
    goes through the Python reading: the same RankedTokens, or the same error, either way."""
    tokens = [bytes([b]) for b in range(256)] + [t for t in extra if len(t) > 1]
    if not bytes_first:
        tokens = tokens[256:] + tokens[:256]
    items = [(t, r) for r, t in enumerate(tokens)]
    if shuffle:
        random.Random(len(items)).shuffle(items)
    for at, rank in odd:
        k = at % len(items)
        items[k] = (items[k][0], rank)
    ranks = dict(items)
    if empty_token:
        ranks[b""] = len(ranks) + 1000
    python = _ranked_or_error(lambda d: bpe_fast.ranks._ranked(*bpe_fast.ranks._ranked_tokens(d)), ranks)
    assert _ranked_or_error(bpe_fast.ranks.ranked_tokens, ranks) == python


def test_ranks_arrays_declines_what_it_cannot_read():
    from bpe_fast._ranks import ranks_arrays

    pool, offsets, values = ranks_arrays({b"a": 0, b"bc": 5})
    assert (pool.tobytes(), offsets.tolist(), values.tolist()) == (b"abc", [0, 1, 3], [0, 5])
    assert [a.tolist() for a in ranks_arrays({})] == [[], [0], []]
    class Bytes(bytes):
        pass

    for bad in ({b"a": True}, {b"a": np.int64(1)}, {Bytes(b"a"): 1}, {b"": 1}, {b"a": -1}, {b"a": 2**63},
                {"a": 1}):
        assert ranks_arrays(bad) is None, bad


def _recover_both_ways(ranks):
    """recover_merges of `ranks` as merges_from_ranks calls it, and with every token merged by the heap path
    (long_from=1) instead of the scan."""
    tokens, values = bpe_fast.ranks._ranked_tokens(ranks)
    ranked = bpe_fast.ranks._ranked(tokens, values)
    args = (ranked.pool, ranked.offsets, ranked.byte_index)
    return bpe_fast._ranks.recover_merges(*args), bpe_fast._ranks.recover_merges(*args, long_from=1)


@SOME
@given(st.integers(0, 2**32), st.integers(1, 80), st.booleans())
def test_long_token_path_equals_the_scan(seed, n_tokens, shuffle_bytes):
    # long tokens are merged with a heap (O(n log n)); with long_from=1 every token is, and the parts, and the
    # first unreachable token, must be the scan's
    ranks = random_ranks(random.Random(seed), n_tokens, alphabet=b"ab c", shuffle_bytes=shuffle_bytes)
    (left, right, bad, parts), (left2, right2, bad2, parts2) = _recover_both_ways(ranks)
    assert (bad, parts) == (bad2, parts2)
    if bad < 0:
        assert parts == 0
    else:       # the parts tiktoken's rule leaves with the lower ranks only
        token = sorted(ranks, key=ranks.get)[bad]
        lower = {t: r for t, r in ranks.items() if r < ranks[token]}
        assert parts == len(merge_pretoken_tiktoken(token, lower)) > 2
    end = bad if bad >= 0 else len(left)
    assert left[:end].tolist() == left2[:end].tolist() and right[:end].tolist() == right2[:end].tolist()


def _splits_by_merging(ranks):
    """tables_made_by_merging(...).splits() of `ranks` (not given `permanent`), and the checked ranks."""
    from bpe_fast import tokenizer as T
    from bpe_fast._encode import tables_made_by_merging

    ranked = bpe_fast.ranks.ranked_tokens(ranks)
    arrays = T._ranks_table_arrays(ranked, {})
    del arrays["permanent"]
    return tables_made_by_merging(**arrays).splits(), ranked


@SOME
@given(st.integers(0, 2**32), st.integers(1, 80), st.booleans(), st.booleans())
def test_tables_made_by_merging_find_what_recover_finds(seed, n_tokens, shuffle_bytes, long_tokens):
    # the encoder's tables from tiktoken's ranks hold one pair a token, found by merging its bytes with the
    # pairs of the tokens before it: the two parts, the first token not made and its parts must be what
    # recover_merges finds by merging with every token before it (tiktoken's rule: any two parts whose bytes
    # are a token join), and the oracle's
    ranks = random_ranks(random.Random(seed), n_tokens, alphabet=b"ab c", shuffle_bytes=shuffle_bytes)
    if long_tokens:     # longer than the encoder's small-piece limit (128 bytes): merged with the heap
        top = max(ranks.values())
        ranks |= {b"ab" * 2 ** e: top + e for e in range(1, 9) if b"ab" * 2 ** e not in ranks}
    (left, right, unmade, parts), ranked = _splits_by_merging(ranks)
    (r_left, r_right, bad, r_parts), _ = _recover_both_ways(ranks)
    multi = np.flatnonzero(np.diff(ranked.offsets) > 1)
    assert (multi[unmade] if unmade >= 0 else -1, parts) == (bad, r_parts)
    end = unmade if unmade >= 0 else len(multi)
    values = np.asarray(ranked.values)      # (an array.array, read from a dict natively)
    assert left[:end].tolist() == values[r_left[multi[:end]]].tolist()
    assert right[:end].tolist() == values[r_right[multi[:end]]].tolist()
    expected, unreachable = oracle_merges(ranks)
    assert (unreachable is None) == (unmade < 0)
    if unreachable is None:
        assert ranked.merges_of_ranks(left, right) == expected


def test_tables_made_by_merging_on_real_ranks():
    for name in ("cl100k_base", "o200k_base"):
        (left, right, unmade, parts), ranked = _splits_by_merging(load_ranks(name))
        assert (unmade, parts) == (-1, 0)
        r_left, r_right = ranked.recover()
        multi = r_left >= 0
        values = np.asarray(ranked.values)
        assert np.array_equal(left, values[r_left[multi]])
        assert np.array_equal(right, values[r_right[multi]])


def _built_ranks(rng, n_tokens, alphabet, longest):
    """Single bytes, then `n_tokens` tokens each two earlier ones joined (from `alphabet` up), in rank order, and
    the two tokens each was built from (most are what tiktoken's rule makes it of, some not: runs of one letter
    and overlaps of the small alphabets make joins across the two parts); fewer tokens when no new join fits
    in `longest` bytes after many tries."""
    ranks = {bytes([b]): b for b in range(256)}
    pool = [bytes([c]) for c in alphabet]
    built = {}
    for _ in range(100 * n_tokens):
        if len(built) == n_tokens:
            break
        left, right = rng.choice(pool), rng.choice(pool)
        if left + right in ranks or len(left + right) > longest:
            continue
        ranks[left + right] = len(ranks)
        built[left + right] = (left, right)
        pool.append(left + right)
    return ranks, built


@SOME
@given(st.integers(0, 2**32), st.integers(1, 120), st.sampled_from([b"a", b"ab", b"abc", b"ab c"]),
       st.sampled_from([12, 40, 300]), st.booleans())
def test_expected_parts_change_nothing(seed, n_tokens, alphabet, longest, other_split):
    # tables_made_by_merging given each token's expected two parts skips merging its bytes where the ranks of
    # the boundary pairs along the parts' spines show the rule leaves exactly those two (_leaves_parts): the
    # tables must be those made by merging every token's bytes, whatever the expected parts (the ones it was
    # built from, or another split of it into two earlier tokens), and a token's parts must be the oracle's
    from bpe_fast import tokenizer as T
    from bpe_fast._encode import tables_made_by_merging

    rng = random.Random(seed)
    ranks, built = _built_ranks(rng, n_tokens, alphabet, longest)
    ranked = bpe_fast.ranks.ranked_tokens(ranks)
    arrays = T._ranks_table_arrays(ranked, {})
    del arrays["permanent"]
    tokens = sorted(built, key=ranks.get)
    expected = []
    for token in tokens:
        left, right = built[token]
        if other_split:     # any split of the token in two tokens ranked before it
            cuts = [j for j in range(1, len(token)) if ranks.get(token[:j], len(ranks)) < ranks[token]
                    and ranks.get(token[j:], len(ranks)) < ranks[token]]
            j = rng.choice(cuts)
            left, right = token[:j], token[j:]
        expected.append((ranks[left], ranks[right]))
    hint = np.array(expected, dtype=np.int32).reshape(-1, 2)
    merged = tables_made_by_merging(**arrays).splits()
    hinted = tables_made_by_merging(**arrays, expected_left=np.ascontiguousarray(hint[:, 0]),
                                    expected_right=np.ascontiguousarray(hint[:, 1])).splits()
    assert hinted[2:] == merged[2:]
    end = merged[2] if merged[2] >= 0 else len(tokens)
    assert hinted[0][:end].tolist() == merged[0][:end].tolist()
    assert hinted[1][:end].tolist() == merged[1][:end].tolist()
    by_id = {rank: token for token, rank in ranks.items()}
    for k in range(end):
        lower = {t: r for t, r in ranks.items() if r < ranks[tokens[k]]}
        assert merge_pretoken_tiktoken(tokens[k], lower) == [by_id[int(merged[0][k])], by_id[int(merged[1][k])]]


@SOME
@given(st.integers(0, 2**32), st.integers(1, 120), st.sampled_from([b"a", b"ab", b"abc", b"ab c"]),
       st.sampled_from([12, 40, 300]), st.sampled_from([1, 2, 3, 7]), st.sampled_from(["built", "random", "hinted"]))
def test_split_at_lengths_changes_nothing(seed, n_tokens, alphabet, longest, split_at, kind):
    # tables_made_by_merging splits a token longer than split_at_lengths (256 bytes; lowered here so that every
    # token goes that way) where two earlier tokens meet, found by their lengths and the signatures of the spans,
    # when _leaves_parts shows the rule leaves exactly those two: the tables (each token's two parts, the first
    # token not made and its parts) must be those made by merging every token's bytes, for ranks built from
    # merges, random ranks (some tokens unreachable) and with expected parts given too (the ones built from)
    from bpe_fast import tokenizer as T
    from bpe_fast._encode import tables_made_by_merging

    rng = random.Random(seed)
    if kind == "random":        # (its tokens are at most 12 bytes: over one letter there are too few of them)
        ranks = random_ranks(rng, n_tokens, alphabet=b"ab c")
    else:
        ranks, built = _built_ranks(rng, n_tokens, alphabet, longest)
    arrays = T._ranks_table_arrays(bpe_fast.ranks.ranked_tokens(ranks), {})
    del arrays["permanent"]
    hints = {}
    if kind == "hinted":
        parts = np.array([(ranks[a], ranks[b]) for a, b in (built[t] for t in sorted(built, key=ranks.get))],
                         dtype=np.int32).reshape(-1, 2)
        hints = dict(expected_left=np.ascontiguousarray(parts[:, 0]), expected_right=np.ascontiguousarray(parts[:, 1]))
    merged = tables_made_by_merging(**arrays, split_at_lengths=1 << 40).splits()
    split = tables_made_by_merging(**arrays, **hints, split_at_lengths=split_at).splits()
    assert split[2:] == merged[2:]
    end = merged[2] if merged[2] >= 0 else len(merged[0])
    assert split[0][:end].tolist() == merged[0][:end].tolist()
    assert split[1][:end].tolist() == merged[1][:end].tolist()



@SOME
@given(st.integers(0, 2**32), st.integers(1, 120), st.sampled_from([b"a", b"ab", b"abc", b"ab c"]),
       st.sampled_from([12, 40, 300]), st.integers(0, 4))
def test_other_pairs_change_nothing(seed, n_tokens, alphabet, longest, wrong):
    # tables_made_by_merging's other pairs (a merge list's later merges of a token, asked of _leaves_parts when
    # the expected pair is not the one merging leaves): the tables are those made by merging every token's bytes,
    # whatever pairs are given (ids of tokens ranked later, -1, out of range); with the rule's own pair among
    # them (and a wrong one expected), no token's bytes are merged
    from bpe_fast import tokenizer as T
    from bpe_fast._encode import tables_made_by_merging

    rng = random.Random(seed)
    ranks, _ = _built_ranks(rng, n_tokens, alphabet, longest)
    arrays = T._ranks_table_arrays(bpe_fast.ranks.ranked_tokens(ranks), {})
    del arrays["permanent"]
    merged = tables_made_by_merging(**arrays, split_at_lengths=1 << 40)
    left, right, unmade, _ = merged.splits()
    n = len(left)
    end = unmade if unmade >= 0 else n
    top = 256 + n
    some_id = lambda: rng.choice([-1, 0, rng.randrange(top), top + 5, 1 << 30])      # noqa: E731
    expected = np.array([[some_id(), some_id()] for _ in range(n)], dtype=np.int32).reshape(-1, 2)
    starts, others = [0], []
    for k in range(n):
        pairs = [(some_id(), some_id()) for _ in range(rng.randint(0, wrong))]
        if k < end:
            pairs.insert(rng.randint(0, len(pairs)), (int(left[k]), int(right[k])))
        others += pairs
        starts.append(len(others))
    others_array = np.array(others, dtype=np.int32).reshape(-1, 2)
    hinted = tables_made_by_merging(**arrays, split_at_lengths=1 << 40, expected_left=expected[:, 0].copy(),
                                    expected_right=expected[:, 1].copy(), other_starts=np.array(starts),
                                    other_left=others_array[:, 0].copy(), other_right=others_array[:, 1].copy())
    got = hinted.splits()
    assert got[2:] == (unmade, merged.splits()[3])
    assert got[0][:end].tolist() == left[:end].tolist() and got[1][:end].tolist() == right[:end].tolist()
    assert hinted.stats()["bytes_merged"] == (1 if unmade >= 0 else 0)
    assert merged.stats()["bytes_merged"] == min(end + 1, n)

def test_split_at_lengths_of_long_runs():
    # tiktoken's ranks of what training learns from one letter repeated (no merges to go by: from_tiktoken):
    # tokens of 2, 4, ... 2^15 bytes, and runs built a letter at a time, split at the known lengths, as merging
    # their bytes splits them
    from bpe_fast import tokenizer as T
    from bpe_fast._encode import tables_made_by_merging

    for tokens in ([b"a" * 2 ** e for e in range(1, 16)], [b"a" * n for n in range(2, 600)],
                   [b"a" * 2 ** e for e in range(1, 12)] + [b"a" * (2 ** 11 + 2 ** e) for e in range(1, 11)]):
        ranks = BYTE_RANKS | {token: 256 + k for k, token in enumerate(tokens)}
        arrays = T._ranks_table_arrays(bpe_fast.ranks.ranked_tokens(ranks), {})
        del arrays["permanent"]
        merged = tables_made_by_merging(**arrays, split_at_lengths=1 << 40).splits()
        split = tables_made_by_merging(**arrays).splits()
        assert merged[2:] == split[2:] == (-1, 0)
        assert np.array_equal(merged[0], split[0]) and np.array_equal(merged[1], split[1])


def test_expected_parts_of_long_runs():
    # a run of one letter doubled again and again (what training on one character repeated learns), and runs
    # built a letter at a time: given their parts, the tables are those of merging each token's bytes
    from bpe_fast import tokenizer as T
    from bpe_fast._encode import tables_made_by_merging

    for tokens in ([(b"a" * 2 ** e, b"a" * 2 ** (e - 1)) for e in range(1, 16)],
                   [(b"a" * n, b"a" * (n - 1)) for n in range(2, 200)],
                   [(b"a" * n, b"a") for n in range(2, 200)]):
        ranks = {bytes([b]): b for b in range(256)} | {token: 256 + k for k, (token, _) in enumerate(tokens)}
        arrays = T._ranks_table_arrays(bpe_fast.ranks.ranked_tokens(ranks), {})
        del arrays["permanent"]
        left = np.array([ranks[part] for token, part in tokens], dtype=np.int32)
        right = np.array([ranks[token[len(part):]] for token, part in tokens], dtype=np.int32)
        merged = tables_made_by_merging(**arrays).splits()
        hinted = tables_made_by_merging(**arrays, expected_left=left, expected_right=right).splits()
        assert merged[2:] == hinted[2:] and np.array_equal(merged[0], hinted[0])
        assert np.array_equal(merged[1], hinted[1])


@pytest.mark.parametrize("tokens", [
    [b"a" * n for n in range(2, 1200)],                             # a run of one letter, a letter at a time
    [b"ab" * n for n in range(1, 600)],                             # ... of a unit of two, a unit at a time
    [(b"abc" * 400)[:n] for n in range(2, 1200)],                   # ... of a unit of three, a letter at a time
    [b"b" * n + b"a" for n in range(1, 1200)],                      # each the one before with a byte in front
], ids=["a", "ab units", "abc letters", "ba"])
def test_runs_split_by_their_neighbours(tokens):
    # tiktoken's ranks of a run built a letter (or a unit) at a time, the chain bench_load.py loads: a long token's
    # split is asked first where its neighbours' splits suggest (the token without its last byte, or its first,
    # or the one ranked before it, as its start or end: _neighbour_cuts), then at the known lengths. Each token's
    # bytes were merged before (its split after a power of two: beyond the SPLIT_TRIES lengths first asked; 5.6 s
    # for 8,000 tokens); now none are, with every token split that way (split_at_lengths=1), and the tables are
    # those of merging every token's bytes
    from bpe_fast import tokenizer as T
    from bpe_fast._encode import tables_made_by_merging

    ranks = BYTE_RANKS | {token: 256 + k for k, token in enumerate(tokens)}
    arrays = T._ranks_table_arrays(bpe_fast.ranks.ranked_tokens(ranks), {})
    del arrays["permanent"]
    merged = tables_made_by_merging(**arrays, split_at_lengths=1 << 40)
    split = tables_made_by_merging(**arrays, split_at_lengths=1)
    assert merged.stats()["bytes_merged"] == len(tokens)
    assert split.stats()["bytes_merged"] == 0
    assert merged.splits()[2:] == split.splits()[2:] == (-1, 0)
    assert all(np.array_equal(a, b) for a, b in zip(merged.splits()[:2], split.splits()[:2]))
    assert tables_made_by_merging(**arrays).stats()["bytes_merged"] == sum(len(t) <= 256 for t in tokens)


def test_tokens_longer_than_a_cached_piece_are_merged_not_looked_up():
    # a token longer than MAX_CACHED_PIECE (256 bytes) is no whole-pre-token entry of the encoder's table (each
    # encoder would copy its bytes: megabytes for a vocabulary learnt from a run of one letter); a pre-token
    # that long is merged to the same ids. The permanent mask still says every token merges to itself.
    vocab = {i: bytes([i]) for i in range(256)} | {255 + e: b"a" * 2 ** e for e in range(1, 11)}
    merges = [(b"a" * 2 ** (e - 1), b"a" * 2 ** (e - 1)) for e in range(1, 11)]
    ranks = {token: i for i, token in vocab.items()}
    for tok in (Tokenizer(vocab, merges), Tokenizer.from_tiktoken(ranks, "gpt2")):
        stats = tok._tables.stats()
        assert stats["permanent"] == 8 and stats["lookup_limit"] == 256       # 2 .. 256 bytes: 8 of the 10
        assert tok._tables.permanent_mask() == b"\x01" * 10
        for n in (255, 256, 257, 511, 512, 513, 1023, 1024, 1025, 1100, 2048 + 3):
            text = "a" * n + " " + "a" * (n // 2) + "b"
            assert tok.encode(text) == oracle_encode(text, vocab, merges, pattern=tok.pattern), n


def test_expected_parts_are_checked():
    from bpe_fast import tokenizer as T
    from bpe_fast._encode import tables_made_by_merging

    arrays = T._ranks_table_arrays(bpe_fast.ranks.ranked_tokens(BYTE_RANKS | {b"ab": 256}), {})
    del arrays["permanent"]
    one = np.array([0x61], dtype=np.int32)
    with pytest.raises(ValueError, match="go together"):
        tables_made_by_merging(**arrays, expected_left=one)
    with pytest.raises(ValueError, match="one id a ranked token"):
        tables_made_by_merging(**arrays, expected_left=np.zeros(2, dtype=np.int32),
                               expected_right=np.zeros(2, dtype=np.int32))
    negative = dict(arrays, ranked_ids=np.array([-1], dtype=np.int32))
    with pytest.raises(ValueError, match="ranked token 0 has a negative id"):
        tables_made_by_merging(**negative, expected_left=one, expected_right=one)
    # ids out of range, or parts whose bytes are not the token's: the bytes are merged as without them
    for left, right in ((-5, 2**30), (0x61, 0x61), (256, 0x62), (0x62, 0x61)):
        made = tables_made_by_merging(**arrays, expected_left=np.array([left], dtype=np.int32),
                                      expected_right=np.array([right], dtype=np.int32)).splits()
        assert (made[0].tolist(), made[1].tolist(), made[2]) == ([0x61], [0x62], -1)


@SOME
@given(st.integers(0, 2**32), st.integers(1, 80), st.lists(st.text(alphabet="abc", min_size=1, max_size=40),
                                                           min_size=1, max_size=8))
def test_one_pair_a_token_encodes_as_every_split(seed, n_tokens, words):
    # from_tiktoken's tables hold one pair a token (the one tiktoken's rule joins); a tokenizer built from the
    # same vocabulary and merges holds every split of every token in two: the ids must be the same, and
    # tiktoken's (the pattern keeps each run of letters one piece: long pieces, many joins)
    tiktoken = pytest.importorskip("tiktoken")
    ranks = reachable_ranks(seed, n_tokens)
    pattern = r"\S+|\s+"
    one_pair = Tokenizer.from_tiktoken(ranks, pattern)
    every_split = Tokenizer(dict(one_pair.vocab), list(one_pair.merges), pattern=pattern)
    text = " ".join(w * (1 + seed % 5) for w in words)
    expected = tiktoken.Encoding("random", pat_str=pattern, mergeable_ranks=ranks, special_tokens={}).encode(text)
    assert one_pair.encode(text) == every_split.encode(text) == expected


@SOME
@given(st.integers(0, 2**32), st.integers(2, 60), st.sampled_from([129, 200, 700, 2000]),
       st.sampled_from(["periodic", "few letters", "many letters", "a run, then many letters"]))
def test_long_pieces_merge_as_tiktoken_when_ranks_do_not_follow_merges(seed, n_tokens, length, kind):
    # pieces over 128 bytes merge with the pairs grouped by rank (pieces whose pairs mostly repeat: a period, a
    # few letters, a long run before the rest) or in a heap (most pairs of a distinct rank: many letters, most pairs
    # of two of them ranked, and thousands of longer tokens; after a run, they make the groups' table grow). Ranks shuffled among the tokens make joins that create a pair of lower rank
    # than the one being joined ("ab" 300, then "cab" 280): the rest of the group must wait for it, as
    # tiktoken's rule (lowest rank, then leftmost) says. The oracle for pieces up to 700 bytes, tiktoken for all
    tiktoken = pytest.importorskip("tiktoken")
    rng = random.Random(seed)
    many = kind.endswith("many letters")
    letters = string.ascii_letters if many else "abc"
    pool = [c.encode() for c in letters]
    tokens = {a + b for a in pool for b in pool if rng.random() < 0.7} if many else set()
    pool += sorted(tokens)
    target = len(tokens) + n_tokens * (60 if many else 1)
    while len(tokens) < target:
        token = rng.choice(pool) + rng.choice(pool)
        if token not in tokens and len(token) <= 12:
            tokens.add(token)
            pool.append(token)
    tokens = sorted(tokens)
    rng.shuffle(tokens)
    ranks = BYTE_RANKS | {t: 256 + k for k, t in enumerate(tokens)}
    if kind == "periodic":
        unit = "".join(rng.choice(letters) for _ in range(rng.randint(1, 5)))
        text = (unit * length)[:length]
    elif many:                          # the tokens' bytes, so that long tokens form
        text = b"".join(rng.choice(pool) for _ in range(length)).decode()[:length]
        if kind.startswith("a run"):           # most of the piece: the groups take it (a sample over all of it)
            text = "a" * (3 * length) + text
    else:
        text = "".join(rng.choice(letters) for _ in range(length))
    pattern = r"[a-zA-Z]+"
    ours = bpe_fast.Encoding("random", pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
    expected = tiktoken.Encoding("random", pat_str=pattern, mergeable_ranks=ranks, special_tokens={}).encode(text)
    assert ours.encode_ordinary(text) == expected
    if len(text) <= 700:
        assert expected == [ranks[p] for p in merge_pretoken_tiktoken(text.encode(), ranks)]


def test_a_long_piece_whose_joins_make_lower_ranks():
    # "ab" ranks 300 and "aba" 280: in "abab...", joining "ab" at 0 makes (ab, a) of rank 280, which tiktoken
    # joins before the next "ab" (at 2), taking its "a": "aba", "b", "aba", "b", ... Joining the whole group of
    # "ab" first would give "ab" a hundred times
    ranks = BYTE_RANKS | {b"ab": 300, b"aba": 280}
    ours = bpe_fast.Encoding("r", pat_str=r"[ab]+", mergeable_ranks=ranks, special_tokens={})
    assert ours.encode_ordinary("ab" * 100) == [280, ord("b")] * 50
    assert ours.encode_ordinary("b" + "ab" * 100) == [ord("b")] + [280, ord("b")] * 50
    # "aa" 1000 and "aaa" 300: every join of "aa" makes (aa, a), which goes first: "aaa" 233 times, then "a"
    # (the groups gave up on the first and the heap went on; putting the rest of the group back each time was
    # quadratic: 100,000 letters took seconds)
    ranks = BYTE_RANKS | {b"aa": 1000, b"aaa": 300}
    ours = bpe_fast.Encoding("r", pat_str=r"a+", mergeable_ranks=ranks, special_tokens={})
    assert ours.encode_ordinary("a" * 700) == [300] * 233 + [ord("a")]
    assert [ranks[p] for p in merge_pretoken_tiktoken(b"a" * 700, ranks)] == [300] * 233 + [ord("a")]
    assert ours.encode_ordinary("a" * 100_000) == [300] * 33_333 + [ord("a")]


def test_tables_hold_the_decode_pool_they_were_given():
    # BPETables keeps the caller's decode_pool (not a copy: megabytes for long tokens), so it must keep it
    # alive: decoding after every other reference is gone gives the tokens' bytes
    import gc
    import sys

    from bpe_fast import tokenizer as T
    from bpe_fast._encode import BPETables

    vocab = {i: bytes([i]) for i in range(256)} | {256: b"ab", 257: b"abab" * 100}
    arrays = T._ranks_table_arrays(bpe_fast.ranks.ranked_tokens({t: i for i, t in vocab.items()}), {})
    pool = arrays["decode_pool"]
    before = sys.getrefcount(pool)
    tables = BPETables(**arrays)
    assert sys.getrefcount(pool) > before       # held, not copied
    del arrays, pool
    gc.collect()
    junk = [np.full(1 << 16, 0xEE, dtype=np.uint8) for _ in range(64)]     # reuse of freed memory would show
    assert tables.decode_bytes(np.array([257, 256, 0x63, 257], dtype=np.int64)) == b"abab" * 100 + b"abc" + b"abab" * 100
    del junk


def test_made_by_merging_needs_every_byte():
    from bpe_fast import tokenizer as T
    from bpe_fast._encode import tables_made_by_merging

    arrays = T._ranks_table_arrays(bpe_fast.ranks.ranked_tokens(BYTE_RANKS | {b"ab": 256}), {})
    arrays["byte_ids"][0x41] = -1
    with pytest.raises(ValueError, match="byte 0x41 has none"):
        tables_made_by_merging(**arrays)


def test_long_token_path_on_real_ranks():
    (left, right, bad, _), (left2, right2, bad2, _) = _recover_both_ways(load_ranks("cl100k_base"))
    assert bad == bad2 == -1
    assert np.array_equal(left, left2) and np.array_equal(right, right2)


def test_a_long_token_is_recovered_in_time():
    # a 2^20-byte token made by 20 doublings: the scan took time quadratic in its length (about 15 minutes;
    # 2^17 bytes took 13 s); each doubling's merge is its two halves
    ranks = BYTE_RANKS | {b"a" * 2 ** e: 255 + e for e in range(1, 21)}
    merges = merges_from_ranks(ranks)
    assert merges == [(b"a" * 2 ** (e - 1), b"a" * 2 ** (e - 1)) for e in range(1, 21)]
    # and with a token the doublings cannot finish: 3 * 2^17 bytes is [2^17, 2^17, 2^17] then [2^18, 2^17]
    assert merges_from_ranks(ranks | {b"a" * (3 * 2 ** 17): 300})[-1] == (b"a" * 2 ** 18, b"a" * 2 ** 17)
    # a token of three 2^17-byte runs, each made by its doublings, but nothing joins two runs: three parts,
    # and the message shows the token shortened
    with pytest.raises(ValueError, match=r"b'aaaa[a]*'\.\.\. \(393,216 bytes\) \(rank 600\).*leaves 3 parts"):
        merges_from_ranks(ranks | {b"b" * 2 ** e: 400 + e for e in range(1, 18)}
                          | {b"c" * 2 ** e: 500 + e for e in range(1, 18)}
                          | {b"a" * 2 ** 17 + b"b" * 2 ** 17 + b"c" * 2 ** 17: 600})


def test_real_ranks_equal_oracle_on_a_sample():
    # cl100k_base: the kernel's merges against the oracle for every 97th token (the oracle needs all lower ranks)
    ranks = load_ranks("cl100k_base")
    merges = merges_from_ranks(ranks)
    by_rank = sorted((r, t) for t, r in ranks.items() if len(t) > 1)
    assert len(merges) == len(by_rank)
    lower = {}
    for k, (r, token) in enumerate(by_rank):
        if k % 97 == 0:
            assert merges[k] == tuple(merge_pretoken_tiktoken(token, lower)), token
        lower[token] = r
    assert all(a + b == t for (a, b), (_, t) in zip(merges, by_rank))


# ------------------------------------------------------------------------------------- reading files

def write_lines(tmp_path, lines, name="r.tiktoken"):
    path = tmp_path / name
    path.write_bytes("".join(lines).encode() if isinstance(lines[0], str) else b"".join(lines))
    return path


def b64(token):
    return base64.b64encode(token).decode()


def test_read_tiktoken_equals_tiktokens_reader(tmp_path):
    load = pytest.importorskip("tiktoken.load")
    rng = random.Random(5)
    tokens = list({bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9))) for _ in range(300)})
    ranks = {t: 3 * k + 1 for k, t in enumerate(tokens)}    # gaps between ranks
    lines = [f"{b64(t)} {r}\n" for t, r in ranks.items()]
    lines.insert(7, "\n")                                   # empty lines are skipped
    lines[10] = lines[10].replace("\n", "\r\n")             # CRLF
    lines[11] = lines[11].replace(" ", " \t ")              # blanks
    lines[-1] = lines[-1].rstrip("\n")                      # no final newline
    path = write_lines(tmp_path, lines)
    assert read_tiktoken(path) == load.load_tiktoken_bpe(str(path)) == ranks
    gz = tmp_path / "r.tiktoken.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    assert read_tiktoken(gz) == ranks


def test_read_tiktoken_real_files():
    for name in ("cl100k_base", "o200k_base"):
        assert read_tiktoken(ranks_path(name)) == load_ranks(name)


@pytest.mark.parametrize("bad, line, message", [
    ("YQ==", 2, "expected a base64 token, blanks and a decimal rank, got 'YQ=='"),
    ("YQ== 1 2", 2, "expected a base64 token, blanks and a decimal rank"),
    (" ", 2, "expected a base64 token"),
    ("YQ==\x0b1", 2, "expected a base64 token"),
    ("YQ== -1", 2, "the rank '-1' is not a decimal integer"),
    ("YQ== +1", 2, "the rank '\\+1' is not a decimal integer"),
    ("YQ== 1_0", 2, "the rank '1_0' is not a decimal integer"),
    ("YQ== ١", 2, "the rank '١' is not a decimal integer"),
    ("YQ== 12345678901", 2, "not a decimal integer of at most 10 digits"),
    ("YQ== 4294967296", 2, "the rank 4294967296 is beyond"),
    ("YQ= 1", 2, "the token 'YQ=' is not padded base64"),
    ("YQ 1", 2, "the token 'YQ' is not padded base64"),
    ("Y=== 1", 2, "is not padded base64"),
    ("=YQ= 1", 2, "is not padded base64"),
    ("YQ==YQ== 1", 2, "is not padded base64"),
    ("Y!Q= 1", 2, "is not padded base64"),
    ("Yg== 0", 2, "the rank 0 is on line 1 already"),
    ("YQ== 7", 2, "the token b'a' is on line 1 already"),
])
def test_bad_line_names_file_and_line(tmp_path, bad, line, message):
    path = write_lines(tmp_path, ["YQ== 0\n", bad + "\n", "Yw== 2\n"])
    with pytest.raises(FormatError, match=message) as info:
        read_tiktoken(path)
    assert info.value.path == str(path) and info.value.line == line
    assert str(info.value).startswith(f"{path}:{line}: ")
    assert isinstance(info.value, ValueError)


def test_a_byte_order_mark_or_cr_line_ends_are_read_as_tiktoken_reads_them(tmp_path):
    # tiktoken reads a file saved with a UTF-8 BOM (Windows PowerShell's Out-File -Encoding utf8 writes one) or
    # with CR-only line ends (bytes.splitlines ends a line at CR; its base64 decoder drops the BOM's bytes) as
    # the same ranks; bpe_fast refused both ("starts with a UTF-8 byte order mark", "end in CR alone")
    tiktoken = pytest.importorskip("tiktoken")
    load = pytest.importorskip("tiktoken.load")
    ranks = BYTE_RANKS | {b"ab": 256, b" ab": 257}
    ranks[b"c"] = ranks.pop(b"c")       # (a file out of rank order)
    text = b"".join(base64.b64encode(t) + b" %d\n" % r for t, r in ranks.items())
    files = {"bom": b"\xef\xbb\xbf" + text, "bom-crlf": b"\xef\xbb\xbf" + text.replace(b"\n", b"\r\n"),
             "cr": text.replace(b"\n", b"\r"), "mixed": text.replace(b"\n", b"\r", 100)}
    expected = tiktoken.Encoding("r", pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens={"<|e|>": 258})
    for name, data in files.items():
        path = tmp_path / f"{name}.tiktoken"
        path.write_bytes(data)
        assert load.load_tiktoken_bpe(str(path)) == ranks, name          # tiktoken's reading
        assert read_tiktoken(path) == bpe_fast.load.load_tiktoken_bpe(str(path)) == ranks, name
        gz = tmp_path / f"{name}.tiktoken.gz"
        gz.write_bytes(gzip.compress(data))
        for source in (path, gz):
            tok = Tokenizer.from_tiktoken(source, GPT2_PATTERN, {"<|e|>": 258})
            for sample in ["ab ab cab", " abab<|e|>c", "xyz ab\r\n ab", ""]:
                assert tok.encode(sample) == expected.encode(sample, allowed_special="all"), (name, sample)
    # a bad line of such a file is still named, its lines counted as tiktoken's splitlines counts them
    path = tmp_path / "bad.tiktoken"
    path.write_bytes(b"\xef\xbb\xbfYQ== 0\rYg== 1\rYg==1\r")
    with pytest.raises(FormatError, match=r"bad\.tiktoken:3: expected a base64 token, blanks and a decimal rank, "
                                          r"got 'Yg==1'"):
        read_tiktoken(path)
    path.write_bytes(b"YQ== 0\nYg== 1\n\xef\xbb\xbfYWI= 2\n")     # a BOM after the first line is no BOM
    with pytest.raises(FormatError, match=r"bad\.tiktoken:3: the token .* is not padded base64"):
        read_tiktoken(path)


def test_a_tiktoken_file_named_by_a_bytes_path_or_a_path_object(tmp_path):
    # a bytes path (which from_files, save and load take) was refused by from_tiktoken ("expected the path of a
    # .tiktoken file or a dict[bytes, int] of ranks, got bytes"), and a bytes path ending in .gz was read without
    # gzip (refused as "is gzip-compressed ... read a name ending in .gz through gzip"); bpe_fast.load's
    # load_tiktoken_bpe and data_gym_to_mergeable_bpe_ranks failed on a pathlib.Path or bytes with "argument of
    # type 'PosixPath' is not iterable" / "a bytes-like object is required"
    ranks = BYTE_RANKS | {b"ab": 256, b"abc": 257}
    text = b"".join(base64.b64encode(t) + b" %d\n" % r for t, r in ranks.items())
    path = tmp_path / "r.tiktoken"
    path.write_bytes(text)
    gz = tmp_path / "r.tiktoken.gz"
    gz.write_bytes(gzip.compress(text))
    for source in (path, gz):
        for given in (str(source), source, os.fsencode(source)):
            assert read_tiktoken(given) == ranks, given
            tok = Tokenizer.from_tiktoken(given, "gpt2", {"<|e|>": 258})
            assert tok.encode("abcab<|e|>") == [257, 256, 258], given
            assert bpe_fast.Encoding.from_tiktoken_file("r", given, r"\w+|\W").encode("abc ab") == [257, 32, 256]
    for given in (path, os.fsencode(path)):
        assert bpe_fast.load.load_tiktoken_bpe(given) == ranks, given
    with pytest.raises(FormatError, match=r"^" + re.escape(str(tmp_path)) + r".*bad\.tiktoken:1: expected a base64"):
        bad = tmp_path / "bad.tiktoken"
        bad.write_bytes(b"YQ==\n")
        Tokenizer.from_tiktoken(os.fsencode(bad), "gpt2")          # named as text, not as b'...'
    with pytest.raises(TypeError, match="must be a str or os.PathLike, got int"):
        bpe_fast.load.load_tiktoken_bpe(3)
    fixtures = os.path.join(os.path.dirname(__file__), "fixtures")
    vocab_bpe = tmp_path / "vocab.bpe"
    vocab_bpe.write_bytes(b"#version: 0.2\n" + open(os.path.join(fixtures, "gpt2_merges.txt"), "rb").read())
    encoder = os.path.join(fixtures, "gpt2_vocab.json")
    expected = pytest.importorskip("tiktoken.load").data_gym_to_mergeable_bpe_ranks(str(vocab_bpe), encoder)
    assert bpe_fast.load.data_gym_to_mergeable_bpe_ranks(vocab_bpe, os.fsencode(encoder)) == expected


def test_gzip_data_read_as_text_is_named(tmp_path):
    # a gzip-compressed file read as text (a .tiktoken.gz renamed, or a .gz given to bpe_fast.load.load_tiktoken_bpe,
    # which reads as tiktoken's does, without decompressing) was refused as line 1 "holds a carriage return ...:
    # its lines end in CR alone" (bpe-openai's cl100k_base.tiktoken.gz) or as garbage: nothing said it was compressed
    text = b"".join(base64.b64encode(bytes([i])) + b" %d\n" % i for i in range(256))
    data = gzip.compress(text, mtime=0)
    for name, blob in [("plain", data), ("cr", data[:4] + b"\r" + data[4:])]:    # "cr": a CR in its first line
        path = tmp_path / f"{name}.tiktoken"
        path.write_bytes(blob)
        with pytest.raises(FormatError, match=rf"{name}\.tiktoken: is gzip-compressed") as info:
            read_tiktoken(path)
        assert info.value.line is None
    gz = tmp_path / "ranks.tiktoken.gz"
    gz.write_bytes(data)
    assert read_tiktoken(gz) == {bytes([i]): i for i in range(256)}     # a .gz name is read through gzip
    with pytest.raises(FormatError, match=r"ranks\.tiktoken\.gz: is gzip-compressed"):
        bpe_fast.load.load_tiktoken_bpe(str(gz))


def test_bad_line_number_counts_empty_lines(tmp_path):
    path = write_lines(tmp_path, ["YQ== 0\n", "\n", "\r\n", "Yg== 1\n", "bad\n"])
    with pytest.raises(FormatError) as info:
        read_tiktoken(path)
    assert info.value.line == 5


def test_bad_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_tiktoken(tmp_path / "missing.tiktoken")
    broken = tmp_path / "broken.tiktoken.gz"
    broken.write_bytes(b"not gzip at all")
    with pytest.raises(FormatError, match="cannot read"):
        read_tiktoken(broken)
    empty = tmp_path / "empty.tiktoken"
    empty.write_bytes(b"")
    assert read_tiktoken(empty) == {}



@pytest.mark.parametrize("content", [b"", b"\n\n", b"\r\n"])
def test_a_file_without_ranks_is_named(tmp_path, content):
    """An empty .tiktoken file (or one of blank lines): from_tiktoken said '256 of the 256 single bytes have no
    rank' naming no file, Encoding.from_tiktoken_file 'max() arg is an empty sequence'."""
    path = tmp_path / "empty.tiktoken"
    path.write_bytes(content)
    with pytest.raises(FormatError, match="empty.tiktoken: holds no ranks"):
        Tokenizer.from_tiktoken(path, "gpt2")
    with pytest.raises(FormatError, match="empty.tiktoken: holds no ranks"):
        bpe_fast.Encoding.from_tiktoken_file("x", path, r"\S+")

def test_parse_kernel_worked_example():
    pool, offsets, ranks, lines, bad = bpe_fast._ranks.parse_tiktoken(b"YQ== 0\n\nYWI= 7\r\n")
    assert (bytes(pool), offsets.tolist(), ranks.tolist(), lines.tolist(), bad) == (b"aab", [0, 1, 3], [0, 7],
                                                                                   [1, 3], 0)
    assert bpe_fast._ranks.parse_tiktoken(b"")[-1] == 0
    assert bpe_fast._ranks.parse_tiktoken(b"YQ== 0\nYQ=0\n")[-1] == 2


# ------------------------------------------------------------------------------------- from_tiktoken

@pytest.mark.parametrize("name, short", [("cl100k_base", "cl100k"), ("o200k_base", "o200k"), ("r50k_base", "gpt2"),
                                         ("p50k_base", "gpt2"), ("o200k_harmony", "o200k")])
def test_tiktoken_encoding_names_are_patterns_not_regexes(name, short):
    """from_tiktoken(path, "cl100k_base") read the name as a regex, which matches only itself: "hello world 123"
    encoded to []. (r50k/p50k: tiktoken's spelling of GPT-2's pattern, the same pre-tokens; o200k_harmony:
    gpt-oss's, o200k_base's pattern.)"""
    from bpe_fast.patterns import PATTERNS, R50K_PATTERN

    ranks = {bytes([b]): b for b in range(256)} | {b"he": 256, b"hel": 257}
    tok = Tokenizer.from_tiktoken(ranks, name)
    assert tok.pattern == (R50K_PATTERN if short == "gpt2" else PATTERNS[short])
    assert tok.encode("hello world 123") == Tokenizer.from_tiktoken(ranks, short).encode("hello world 123") != []


def test_from_tiktoken_file_and_special_tokens(tmp_path):
    ranks = BYTE_RANKS | {b"ab": 256, b"abc": 257}
    path = write_lines(tmp_path, [f"{b64(t)} {r}\n" for t, r in ranks.items()])
    tok = Tokenizer.from_tiktoken(path, "gpt2", {"<|eot|>": 300, "<|pad|>": 299})
    assert tok.special_tokens == {"<|eot|>": 300, "<|pad|>": 299}
    assert tok.encode("abc<|pad|>ab<|eot|>") == [257, 299, 256, 300]
    assert tok.vocab_size == 301 and 258 not in tok.vocab     # gaps stay gaps
    with pytest.raises(ValueError, match="unknown token id 258"):
        tok.decode([258])
    assert Tokenizer.from_tiktoken(str(path), "gpt2").encode("abc") == [257]


def test_from_tiktoken_refuses_bad_special_tokens():
    ranks = BYTE_RANKS | {b"ab": 256}
    with pytest.raises(ValueError, match="its id 256 is the rank of b'ab'"):
        Tokenizer.from_tiktoken(ranks, "gpt2", {"<|eot|>": 256})
    with pytest.raises(ValueError, match="its bytes are a ranked token"):
        Tokenizer.from_tiktoken(ranks, "gpt2", {"ab": 300})
    # two special tokens of one id (tiktoken's o200k_harmony has such): both encode to it, it decodes to the first
    shared = Tokenizer.from_tiktoken(ranks, "gpt2", {"<|a|>": 300, "<|b|>": 300, "<|c|>": 301})
    assert shared.encode("<|b|>x<|a|><|c|>") == [300, 120, 300, 301]
    assert shared.decode([300, 301]) == "<|a|><|c|>" and shared.special_tokens == {"<|a|>": 300, "<|b|>": 300,
                                                                                   "<|c|>": 301}
    with pytest.raises(TypeError, match="dict"):
        Tokenizer.from_tiktoken(ranks, "gpt2", ["<|eot|>"])
    with pytest.raises(TypeError, match="not an int"):
        Tokenizer.from_tiktoken(ranks, "gpt2", {"<|eot|>": "300"})
    with pytest.raises(TypeError, match="path of a .tiktoken file or a dict"):
        Tokenizer.from_tiktoken(42, "gpt2")


def test_encode_with_offsets_of_special_tokens_sharing_an_id():
    # the id of special tokens that share it (o200k_harmony's 200018) has the first's bytes in the vocabulary, but
    # the text holds whichever matched: the offsets after it count that one's characters
    ranks = BYTE_RANKS | {b"ab": 256}
    text = "a<|bb|>ab<|a|>c<|bb|>"
    for specials in [{"<|a|>": 300, "<|bb|>": 300}, {"<|bb|>": 300, "<|a|>": 300}]:
        tok = Tokenizer.from_tiktoken(ranks, "gpt2", specials)
        for view, starts in [(tok, [0, 1, 7, 9, 14, 15]), (tok.restricted_to(frozenset(["<|bb|>"])), None)]:
            ids, offsets = view.encode_with_offsets(text)
            if starts is None:      # <|a|> is ordinary text here
                starts = np.cumsum([0] + [len(tok.vocab[i]) if i != 300 else 6 for i in ids.tolist()[:-1]])
            assert ids.tolist() == view.encode(text) and offsets.tolist() == list(starts), (specials, view)


def test_offsets_of_a_special_token_sharing_an_id_in_a_view_and_its_pickle():
    # a tokenizer matching only <|bb|> of the two sharing 300 (whose bytes are <|a|>'s), and that view pickled:
    # the holder is not among its special tokens, yet <|bb|> covers its own bytes
    import pickle

    tok = Tokenizer.from_tiktoken(BYTE_RANKS, "gpt2", {"<|a|>": 300, "<|bb|>": 300})
    view = tok.restricted_to(frozenset(["<|bb|>"]))
    for made in [view, pickle.loads(pickle.dumps(view))]:
        ids, offsets = made.encode_with_offsets("x<|bb|>y")
        assert (ids.tolist(), offsets.tolist()) == ([120, 300, 121], [0, 1, 7])
        assert made.show("x<|bb|>y").pieces == ["x", "<|bb|>", "y"]


def _general_tables(tok):
    """The encoder's table arrays and permanent mask as any Tokenizer's are built: from the vocabulary and the
    merge list, each ranked token merged once to find whether it is permanent."""
    from bpe_fast import tokenizer as T
    from bpe_fast._encode import BPETables

    arrays = T._table_arrays(tok.vocab, list(tok.merges), {t: i for i, t in sorted(tok.vocab.items(), reverse=True)})
    arrays["permanent"] = np.frombuffer(BPETables(**arrays).permanent_mask(), dtype=np.uint8)
    return arrays


def _fast_tables(ranks, specials):
    from bpe_fast import tokenizer as T

    ranked = bpe_fast.ranks.ranked_tokens(ranks)
    return T._ranks_table_arrays(ranked, bpe_fast.ranks.check_tiktoken_specials(ranked, specials))


def _assert_same_arrays(fast, general):
    assert sorted(fast) == sorted(general)
    for name in general:        # (the fast build's are array.array buffers: NumPy reads them without a copy)
        assert np.asarray(fast[name]).dtype == general[name].dtype, name
        assert np.array_equal(fast[name], general[name]), name


@SOME
@given(st.integers(0, 2**32), st.integers(0, 60), st.booleans(), st.lists(st.integers(0, 400), max_size=3))
def test_tables_from_ranks_equal_the_general_build(seed, n_tokens, shuffle_bytes, special_ids):
    # from_tiktoken builds the encoder's tables straight from the ranks, every token permanent; the general
    # build from the vocabulary and the recovered merges (merging each token) must give the same arrays
    ranks = random_ranks(random.Random(seed), n_tokens, alphabet=b"ab c", shuffle_bytes=shuffle_bytes)
    while (bad := oracle_merges(ranks)[1]) is not None:
        del ranks[bad]
    if random.Random(seed).random() < 0.5:      # a gap in the ranks
        ranks = {t: r + 7 * (r >= 256 + n_tokens // 2) for t, r in ranks.items()}
    taken = set(ranks.values())
    specials = {f"<|s{i}|>": i for i in dict.fromkeys(special_ids) if i not in taken}
    tok = Tokenizer.from_tiktoken(ranks, "gpt2", specials)
    assert list(tok.merges) == oracle_merges(ranks)[0]
    assert tok.special_tokens == specials
    _assert_same_arrays(_fast_tables(ranks, specials), _general_tables(tok))
    assert set(np.frombuffer(_fast_tables(ranks, specials)["permanent"], dtype=np.uint8)) <= {1}


@pytest.mark.parametrize("name, specials", [("cl100k_base", {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258}),
                                            ("o200k_base", {"<|endoftext|>": 199999, "<|endofprompt|>": 200018})])
def test_tables_from_real_ranks_equal_the_general_build(name, specials):
    ranks = load_ranks(name)
    tok = Tokenizer.from_tiktoken(ranks_path(name), name.split("_")[0], specials)
    _assert_same_arrays(_fast_tables(ranks, specials), _general_tables(tok))
    assert tok.vocab == {r: t for t, r in ranks.items()} | {i: s.encode() for s, i in specials.items()}


def test_from_tiktoken_reads_a_token_no_merge_makes():
    # the tables are built in a thread beside the Python work: when they find such a token, the tables that look
    # every ranked token up whole are built instead (it was refused)
    tok = Tokenizer.from_tiktoken(BYTE_RANKS | {b"ab": 256, b"xyz": 257}, "gpt2")
    assert tok.by_ranks_only and tok.encode("xyz abxyz") == [257, 32, 256, 120, 121, 122]
    enc = bpe_fast.Encoding("x", pat_str=r"\S+", mergeable_ranks=BYTE_RANKS | {b"abc": 256, b"ab": 257},
                            special_tokens={})
    # (the space no match covers is left out; "abcd": a+b first, then ab+c: "abc" ranked before "ab")
    assert enc.encode("abc abcd") == [256, 256, 100]


def test_from_tiktoken_file_out_of_rank_order(tmp_path):
    ranks = BYTE_RANKS | {b"ab": 256, b"abc": 257, b"bc": 258}
    lines = [f"{b64(t)} {r}\n" for t, r in ranks.items()]
    random.Random(5).shuffle(lines)
    tok = Tokenizer.from_tiktoken(write_lines(tmp_path, lines), "gpt2", {"<|eot|>": 259})
    assert tok.merges == ((b"a", b"b"), (b"ab", b"c"), (b"b", b"c"))
    assert tok.encode("abcbc<|eot|>") == [257, 258, 259]
    assert tok.vocab == Tokenizer.from_tiktoken(ranks, "gpt2", {"<|eot|>": 259}).vocab


def test_special_token_bytes_against_the_ranked_tokens():
    ranks = BYTE_RANKS | {b"ab": 256, b"abc": 257}
    for name in ("a", "ab", "abc", "\xff"):        # a single byte, ranked tokens, b"\xc3\xbf" is not one
        if name == "\xff":
            assert Tokenizer.from_tiktoken(ranks, "gpt2", {name: 300}).encode(name, allowed_special="all") == [300]
            continue
        with pytest.raises(ValueError, match="its bytes are a ranked token"):
            Tokenizer.from_tiktoken(ranks, "gpt2", {name: 300})
    # an extension of a ranked token, or a part of one, is not one
    tok = Tokenizer.from_tiktoken(ranks, "gpt2", {"abcd": 300, "bc": 301})
    assert tok.encode("abcdbc") == [300, 301]


def _under_memory_limit(code, extra_mb):
    """Run `code` in a fresh Python whose address space may grow only extra_mb MB from where it is after the
    imports at the top of `code` (the line `limit()` sets it); its stdout."""
    prelude = ("import resource, sys\n"
               "def limit():\n"
               "    vm = int(open('/proc/self/statm').read().split()[0]) * resource.getpagesize()\n"
               f"    resource.setrlimit(resource.RLIMIT_AS, (vm + {extra_mb} * 2**20, resource.RLIM_INFINITY))\n")
    done = subprocess.run([sys.executable, "-c", prelude + code], capture_output=True, text=True, timeout=300,
                          cwd=os.path.dirname(__file__))
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])      # not a crash
    # nor an error a native function could not pass up (Cython prints it and the function goes on)
    assert "Exception ignored" not in done.stderr, done.stderr[-2000:]
    return done.stdout


def test_running_out_of_memory_while_building_is_a_memory_error():
    # the encoder's tables (built without the GIL) and the merges of a long token: MemoryError, not a crash
    # or a wrong answer (tables without their pair table; a token "left in 0 parts")
    ranks_path("cl100k_base")
    out = _under_memory_limit(
        "from openai_ranks import load_ranks\n"
        "import bpe_fast.ranks as R\n"
        "from bpe_fast import tokenizer as T\n"
        "from bpe_fast._encode import BPETables\n"
        "arrays = T._ranks_table_arrays(R.ranked_tokens(load_ranks('cl100k_base')), {})\n"
        "limit()\n"
        "for merging in (False, True):\n"
        "    try:\n"
        "        BPETables(**arrays, made_by_merging=merging)\n"
        "        print('built')\n"
        "    except MemoryError:\n"
        "        print('MemoryError')\n", 2)
    assert out.split() == ["MemoryError", "MemoryError"]
    out = _under_memory_limit(
        "import bpe_fast.ranks as R\n"
        "ranks = {bytes([b]): b for b in range(256)} | {b'a' * 2 ** e: 255 + e for e in range(1, 23)}\n"
        "ranked = R._ranked(*R._ranked_tokens(ranks))\n"
        "limit()\n"
        "try:\n"
        "    ranked.recover()\n"
        "    print('recovered')\n"
        "except MemoryError:\n"
        "    print('MemoryError')\n", 24)
    assert out.strip() == "MemoryError"


def test_running_out_of_memory_while_merging_a_long_piece_is_a_memory_error():
    # a run of 4,096,000 "a" (one piece, merged by rank groups: its parts, the groups' entries, the ranks' heap)
    # under limits from too small for its ids to plenty: each call gives the right ids (2,000 tokens of 2,048
    # "a") or a MemoryError, never a crash or other ids (an allocation that failed inside a function that
    # could not pass the error up went on with a half-made queue, "Exception ignored" on stderr)
    out = _under_memory_limit(
        "import bpe_fast\n"
        "ranks = {bytes([b]): b for b in range(256)} | {b'a' * 2 ** e: 255 + e for e in range(1, 12)}\n"
        "enc = bpe_fast.Encoding('r', pat_str=r'a+', mergeable_ranks=ranks, special_tokens={})\n"
        "text = 'a' * 4_096_000\n"
        "enc.encode_ordinary('a')\n"      # (the first encoding's imports, NumPy's for `regex`'s spans, before the limit)
        "limit()\n"
        "soft, hard = resource.getrlimit(resource.RLIMIT_AS)\n"
        "for extra in list(range(8, 120, 2)) + [200, 400]:\n"
        "    resource.setrlimit(resource.RLIMIT_AS, (soft + extra * 2**20, hard))\n"
        "    try:\n"
        "        ids = enc.encode_ordinary(text)\n"
        "        print('right' if ids == [266] * 2000 else 'wrong')\n"
        "    except MemoryError:\n"
        "        print('MemoryError')\n", 0)
    results = out.split()
    assert len(results) == 58 and set(results) <= {"right", "MemoryError"}, results
    assert results[0] == "MemoryError" and results[-1] == "right", results


def test_sparse_ids_are_refused_before_the_tables_are_made():
    # the tables are indexed by id: a special token's id of 2^28 would make them 2 GB and more before the check
    out = _under_memory_limit(
        "from bpe_fast import Tokenizer\n"
        "ranks = {bytes([b]): b for b in range(256)} | {b'ab': 256}\n"
        "limit()\n"
        "try:\n"
        "    Tokenizer.from_tiktoken(ranks, 'gpt2', {'<|x|>': 2 ** 28})\n"
        "except ValueError as e:\n"
        "    print(e)\n", 256)
    assert out.strip() == "vocab ids are too sparse: largest id 268435456 for 258 tokens"


def test_sparse_ranks_of_a_file_are_refused_naming_the_file_and_line(tmp_path):
    # the message named no file: the ranks were checked only as the tokenizer's ids
    lines = [f"{base64.b64encode(bytes([b])).decode()} {b}" for b in range(256)]
    lines[100] = f"{base64.b64encode(bytes([100])).decode()} {2_000_000}"
    path = tmp_path / "sparse.tiktoken"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(FormatError, match=rf"^{path}:101: vocab ids are too sparse: largest id 2000000 for 256 "
                                          r"tokens$"):
        Tokenizer.from_tiktoken(path, "gpt2")
    assert read_tiktoken(path)[bytes([100])] == 2_000_000        # the file's ranks, read as tiktoken reads them


def test_from_tiktoken_in_an_atexit_handler():
    # no thread may start once the interpreter is shutting down: the two jobs run in the calling thread
    code = ("import atexit\n"
            "from bpe_fast import Tokenizer\n"
            "ranks = {bytes([b]): b for b in range(256)} | {b'ab': 256}\n"
            "def late():\n"
            "    print(Tokenizer.from_tiktoken(ranks, 'gpt2', {'<|e|>': 300}).encode('abab<|e|>'))\n"
            "    print(Tokenizer.from_tiktoken(ranks | {b'xyz': 257}, 'gpt2').encode('xyz'))\n"
            "atexit.register(late)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=os.path.dirname(__file__))   # not the source folder: the installed bpe_fast
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["[256, 256, 300]", "[257]"]


def test_many_special_tokens_checked_against_the_ranks():
    ranks = BYTE_RANKS | {b"ab": 256, b"<|s3|>": 257}
    specials = {f"<|s{i}|>": 1000 + i for i in range(40)}
    with pytest.raises(ValueError, match=r"special token '<\|s3\|>': its bytes are a ranked token"):
        Tokenizer.from_tiktoken(ranks, "gpt2", specials)
    tok = Tokenizer.from_tiktoken(BYTE_RANKS | {b"ab": 256}, "gpt2", specials)
    assert tok.encode("ab<|s7|><|s3|>") == [256, 1007, 1003]


def test_from_tiktoken_names_a_bad_line(tmp_path):
    path = write_lines(tmp_path, ["YQ== 0\n", "YWI= x\n"])
    with pytest.raises(FormatError, match=r"r\.tiktoken:2: the rank 'x'"):
        Tokenizer.from_tiktoken(path, "gpt2")


# ------------------------------------------------------------------------------------- round trips

@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tokenizer trained by bpe_fast (GPT-4's pattern, <|endoftext|> at id 256)."""
    from bpe_fast import train_bpe

    rng = random.Random(3)
    words = "the cat sat on mat hello world don't stop 12345 678 Straße café 東京 I'm we'll <|endoftext|>".split()
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text(" ".join(rng.choice(words) + rng.choice(["", "s", "ing", "ed"]) for _ in range(3000)),
                    encoding="utf-8")
    vocab, merges = train_bpe(path, 340, ["<|endoftext|>"], num_processes=1, pattern="gpt4")
    return Tokenizer(vocab, merges, ["<|endoftext|>"], "gpt4")


def test_round_trip_export_tiktoken_from_tiktoken(tmp_path, trained):
    tok = trained
    path = tmp_path / "mine.tiktoken"
    tok.export_tiktoken(path)
    back = Tokenizer.from_tiktoken(path, tok.pattern, tok.special_tokens)
    assert back.merges == tok.merges
    assert dict(back.vocab) == dict(tok.vocab)
    text = "the cat<|endoftext|> don't Straße 12345678 hello  world\n"
    assert back.encode(text) == tok.encode(text)
    assert read_tiktoken(path) == ranks_from_tokenizer(tok)


def test_to_tiktoken_gives_the_same_ids(trained):
    pytest.importorskip("tiktoken")
    tok = trained
    enc = tok.to_tiktoken("mine")
    assert enc.name == "mine" and enc.n_vocab == tok.vocab_size
    text = "the cat<|endoftext|> don't Straße 12345678 hello  world\n"
    assert enc.encode(text, allowed_special="all") == tok.encode(text)
    assert enc.encode_ordinary(text) == tok.encode_ordinary(text)



def test_to_tiktoken_refuses_special_tokens_tiktoken_would_match_otherwise():
    """tiktoken finds special tokens with one regex alternation in its hash map's order, not the longest first:
    with "<|e|>" and "<|e|>a" .. "<|e|>j" the Encoding to_tiktoken made gave "<|e|>", "a" for some "<|e|>a" where
    the tokenizer gives "<|e|>a". It is refused, naming the two, unless tiktoken happens to try the longer first."""
    pytest.importorskip("tiktoken")
    specials = ["<|e|>"] + [f"<|e|>{c}" for c in "abcdefghij"]
    tok = Tokenizer({i: bytes([i]) for i in range(256)}, [], specials)
    try:
        enc = tok.to_tiktoken()
    except ValueError as exc:
        assert re.search(r"special tokens '<\|e\|>' and '<\|e\|>\w'.*finds '<\|e\|>' first", str(exc)), exc
    else:
        for name in specials:
            assert enc.encode(name + "x", allowed_special="all") == tok.encode(name + "x"), name

def test_ranks_from_tokenizer_refusals():
    # ids not in merge order: tiktoken would merge "cd" (id 256) before "ab" (id 257)
    vocab = dict(enumerate(bytes([b]) for b in range(256))) | {256: b"cd", 257: b"ab"}
    with pytest.raises(ValueError, match="ids must follow the merge order"):
        ranks_from_tokenizer(Tokenizer(vocab, [(b"a", b"b"), (b"c", b"d")]))
    # a multi-byte token no merge makes: tiktoken would merge into it
    vocab = dict(enumerate(bytes([b]) for b in range(256))) | {256: b"xy"}
    with pytest.raises(ValueError, match="made by no merge"):
        ranks_from_tokenizer(Tokenizer(vocab, []))
    # a byte without a token
    vocab = {i: bytes([i]) for i in range(255)}
    with pytest.raises(ValueError, match=r"single byte b'\\xff' has no token"):
        ranks_from_tokenizer(Tokenizer(vocab, []))
    # two ids with the same bytes
    vocab = dict(enumerate(bytes([b]) for b in range(256))) | {256: b"a"}
    with pytest.raises(ValueError, match="same bytes"):
        ranks_from_tokenizer(Tokenizer(vocab, []))



def test_ranks_from_tokenizer_refuses_a_special_token_merges_make(tmp_path):
    """A special token whose bytes a merge makes ("ab", id 256, the join of a + b) is left out of tiktoken's
    ranks, so tiktoken could not make it, nor "abc" from it: refused naming it (it was a bare KeyError: b'ab')."""
    vocab = dict(enumerate(bytes([b]) for b in range(256))) | {256: b"ab", 257: b"abc"}
    tok = Tokenizer(vocab, [(b"a", b"b"), (b"ab", b"c")], ["ab"])
    with pytest.raises(ValueError, match="special token 'ab' .id 256. is made by merge 0"):
        ranks_from_tokenizer(tok)
    with pytest.raises(ValueError, match="special token 'ab'"):
        tok.export_tiktoken(tmp_path / "out.tiktoken")
    assert not (tmp_path / "out.tiktoken").exists()

def test_export_tiktoken_refuses_what_to_tiktoken_refuses(tmp_path):
    """A file bpe_fast writes must give bpe_fast's ids: the ranks of a tokenizer whose ids are not in merge order
    give [97, 256] for "abc" in tiktoken where the tokenizer gives [257, 99]; one without a byte makes tiktoken
    panic on that byte."""
    in_wrong_order = Tokenizer(dict(enumerate(bytes([b]) for b in range(256))) | {256: b"bc", 257: b"ab"},
                               [(b"a", b"b"), (b"b", b"c")])
    no_byte = Tokenizer({i: bytes([i]) for i in range(1, 256)} | {256: b"ab"}, [(b"a", b"b")])
    for tok, message in [(in_wrong_order, "ids must follow the merge order"), (no_byte, r"b'\\x00' has no token")]:
        with pytest.raises(ValueError, match=message):
            tok.to_tiktoken()
        with pytest.raises(ValueError, match=message):
            tok.export_tiktoken(tmp_path / "out.tiktoken")
        assert not (tmp_path / "out.tiktoken").exists()


def _abe_tokenizer(pattern):
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"ab", 257: "é".encode(), 258: "abé".encode()}
    return Tokenizer(vocab, [(b"a", b"b"), (b"\xc3", b"\xa9"), (b"ab", "é".encode())], pattern=pattern)


def test_export_tiktoken_refuses_a_pattern_tiktoken_reads_otherwise(tmp_path):
    """[[:alpha:]] is ASCII in tiktoken's regex engine, Unicode letters in `regex`: "abé" is one piece here
    ([258]) and "ab", "é" there ([256, 257]). to_tiktoken refused the pattern; export_tiktoken wrote the ranks,
    which gave tiktoken other ids with the pattern however spelled."""
    tiktoken = pytest.importorskip("tiktoken", reason="tiktoken is not installed")
    pattern = r"[[:alpha:]]+|\s+|."
    tok = _abe_tokenizer(pattern)
    assert tok.encode("abé") == [258]
    ranks = {tok.vocab[i]: i for i in range(259)}
    assert tiktoken.Encoding("x", pat_str=pattern, mergeable_ranks=ranks, special_tokens={}).encode("abé") == [256, 257]
    with pytest.raises(ValueError, match=r"\[:alpha:\], which `regex` and tiktoken's regex engine read differently"):
        tok.to_tiktoken()
    with pytest.raises(ValueError, match=r"\[:alpha:\], which `regex` and tiktoken's regex engine read differently"):
        tok.export_tiktoken(tmp_path / "out.tiktoken")
    assert not (tmp_path / "out.tiktoken").exists()


def test_export_tiktoken_refuses_a_pattern_that_can_match_empty_text(tmp_path):
    """a|(?=b)|b on "ab": `regex` (and so bpe_fast) "a", "", "b"; tiktoken's engine "a" only (it goes on past the
    empty match): ids [97, 98] against [97]; \\b made tiktoken's encode panic. Both were written (helper-148)."""
    tiktoken = pytest.importorskip("tiktoken", reason="tiktoken is not installed")
    import regex
    bytes_only = {i: bytes([i]) for i in range(256)}
    pattern = r"a|(?=b)|b"
    tok = Tokenizer(bytes_only, [], pattern=pattern)
    assert regex.findall(pattern, "ab") == ["a", "", "b"] and tok.encode("ab") == [97, 98]
    theirs = tiktoken.Encoding("x", pat_str=pattern, mergeable_ranks={v: k for k, v in bytes_only.items()},
                               special_tokens={})
    assert theirs.encode("ab") == [97]
    for empty in (pattern, r"\b", r"\p{L}*", r"(?:a*|b)+|\s"):
        tok = Tokenizer(bytes_only, [], pattern=empty)
        with pytest.raises(ValueError, match=r"the pattern can match empty text"):
            tok.to_tiktoken()
        with pytest.raises(ValueError, match=r"the pattern can match empty text"):
            tok.export_tiktoken(tmp_path / "out.tiktoken")
    assert not (tmp_path / "out.tiktoken").exists()
    assert Tokenizer(bytes_only, [], pattern=r"\p{L}+|\s").to_tiktoken().encode("ab c") == [97, 98, 32, 99]


def test_export_tiktoken_with_its_anchors_spelled_for_tiktoken_gives_the_same_ids(tmp_path):
    # what export_tiktoken's docstring says to build: the pattern through tiktoken_anchors ("$" is the end of the
    # text alone in tiktoken's engine, also before a final newline in `regex`)
    tiktoken = pytest.importorskip("tiktoken", reason="tiktoken is not installed")
    from tiktoken.load import load_tiktoken_bpe

    from bpe_fast.patterns import tiktoken_anchors

    tok = _abe_tokenizer(r"ab$|a|b|\n|[^ab\n]")
    tok.export_tiktoken(tmp_path / "out.tiktoken")
    enc = tiktoken.Encoding("x", pat_str=tiktoken_anchors(tok.pattern),
                            mergeable_ranks=load_tiktoken_bpe(str(tmp_path / "out.tiktoken")), special_tokens={})
    for text in ["ab\n", "xab\nab\n", "ab", "abab\n\n", "éab"]:
        assert enc.encode(text) == tok.encode(text), text


def test_to_tiktoken_without_tiktoken(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_tiktoken(name, *args, **kwargs):
        if name == "tiktoken":
            raise ImportError("No module named 'tiktoken'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_tiktoken)
    with pytest.raises(ImportError, match="pip install tiktoken"):
        Tokenizer({i: bytes([i]) for i in range(256)}, []).to_tiktoken()


# ------------------------------------------------------------------------------------- merge_rule_difference

def random_merge_list(rng, n_merges, again, limit):
    """(merges, tokens): n_merges merges built up from a, b, c (so that the ranks rule often joins other parts than
    the list's), joins of at most `limit` bytes, a token made a second time by other parts with probability
    `again`; the tokens made, the three bytes first."""
    pool = [b"a", b"b", b"c"]
    merges = []
    while len(merges) < n_merges:
        a, b = rng.choice(pool), rng.choice(pool)
        if len(a + b) > limit or ((a, b) in merges):
            continue
        if a + b in pool and rng.random() > again:
            continue
        merges.append((a, b))
        if a + b not in pool:
            pool.append(a + b)
    return merges, pool


def oracle_rule_difference(merges):
    """merge_rule_difference by its docstring, with the plain-Python ranks rule: each merged token in rank order
    merged from the tokens before it; the first whose parts are not a listed merge, or that is left in more than
    two parts (None: the comparison stops there)."""
    first = {}
    for k, (a, b) in enumerate(merges):
        first.setdefault(a + b, k)
    listed = set(merges)
    lower = {}
    for token, k in first.items():
        parts = merge_pretoken_tiktoken(token, lower)
        if len(parts) != 2:
            return k, None
        if tuple(parts) not in listed:
            return k, tuple(parts)
        lower[token] = 256 + k
    return None


@SOME
@given(st.integers(0, 2**32 - 1), st.integers(1, 40), st.floats(0, 0.3))
def test_merge_rule_difference_equals_oracle(seed, n_merges, again):
    """Merge lists built up from a few bytes (so that the ranks rule often joins other parts than the list's),
    some tokens made a second time by other parts."""
    rng = random.Random(seed)
    merges, _ = random_merge_list(rng, n_merges, again, 8)
    expected = oracle_rule_difference(merges)
    assert bpe_fast.merge_rule.merge_rule_difference(merges) == expected
    assert difference_of_indices(merges, rng) == expected


@SOME
@given(st.integers(0, 2**32 - 1), st.integers(1, 40), st.floats(0, 0.3), st.booleans(), st.integers(0, 2))
def test_made_as_listed_only_where_the_oracle_agrees(seed, n_merges, again, long_tokens, swaps):
    """made_as_listed, the split-tree proof merge_rule_difference asks first (it then merges no token's bytes),
    says True only for merge lists in which the plain-Python oracle finds no difference, and for each of those
    in which no token is made twice (each token's first merge is then the pair the rule must make); with tokens
    past recover's long_from, and merges moved out of order."""
    rng = random.Random(seed)
    merges, _ = random_merge_list(rng, n_merges, again, 80 if long_tokens else 8)
    for _ in range(swaps if len(merges) > 1 else 0):
        i, j = rng.randrange(len(merges)), rng.randrange(len(merges))
        merges[i], merges[j] = merges[j], merges[i]
    expected = oracle_rule_difference(merges)
    made = bpe_fast.merge_rule.made_as_listed(merges)
    if made:
        assert expected is None
    elif expected is None:
        assert len({a + b for a, b in merges}) < len(merges)
    assert bpe_fast.merge_rule.merge_rule_difference(merges) == expected


def run_merges(n):
    """The merges the ranks rule makes a run of one letter with: tokens "aa" to n letters, ranked by length."""
    ranks = dict(BYTE_RANKS) | {b"a" * k: 254 + k for k in range(2, n + 1)}
    return list(Tokenizer.from_tiktoken(ranks, "gpt2").merges)


@pytest.mark.parametrize("n", [70, 300])
def test_merge_rule_difference_of_a_run_of_one_letter(n):
    """A merge list making tokens of 2..n letters "a" (n past recover's long_from: the split-tree proof takes
    them, where merging their bytes took 13 s for 8,000 letters): as listed; the same tokens made one letter at a
    time (aa + a, aaa + a, ...) are not what the ranks rule makes (aaaa is aa + aa); with two merges swapped, the
    oracle's answer."""
    merges = run_merges(n)
    assert bpe_fast.merge_rule.made_as_listed(merges)
    assert bpe_fast.merge_rule.merge_rule_difference(merges) is None is oracle_rule_difference(merges)
    one_at_a_time = [(b"a" * k, b"a") for k in range(1, n)]
    assert not bpe_fast.merge_rule.made_as_listed(one_at_a_time)
    assert bpe_fast.merge_rule.merge_rule_difference(one_at_a_time) == (2, (b"aa", b"aa"))
    assert oracle_rule_difference(one_at_a_time) == (2, (b"aa", b"aa"))
    for k in (1, n // 2):
        swapped = list(merges)
        swapped[k], swapped[k + 1] = swapped[k + 1], swapped[k]
        expected = oracle_rule_difference(swapped)
        assert bpe_fast.merge_rule.merge_rule_difference(swapped) == expected
        if k == 1:      # aaaa made before aaa: aaaaa is then aaaa + a, a pair not listed (merge 3)
            assert expected == (3, (b"aaaa", b"a"))


def test_made_as_listed_leaves_other_lists_to_the_full_check():
    """Lists the proof does not read as arrays (not tuples of two non-empty bytes, a merge making a single byte, a
    part no merge makes): False, and merge_rule_difference answers as before."""
    assert not bpe_fast.merge_rule.made_as_listed([])
    assert not bpe_fast.merge_rule.made_as_listed([[b"a", b"b"]])
    assert not bpe_fast.merge_rule.made_as_listed([(b"", b"a")])
    assert bpe_fast.merge_rule.merge_rule_difference([(b"", b"a")]) is None
    assert not bpe_fast.merge_rule.made_as_listed([(b"ab", b"c")])
    assert bpe_fast.merge_rule.merge_rule_difference([(b"ab", b"c")]) == (0, None) == oracle_rule_difference(
        [(b"ab", b"c")])
    assert bpe_fast.merge_rule.made_as_listed(((b"a", b"b"),)) is False     # a tuple: the full check's
    assert bpe_fast.merge_rule.merge_rule_difference(((b"a", b"b"),)) is None


def difference_of_indices(merges, rng):
    """rule_difference_of_indices of the merges, the tokens (the bytes, then the others in a random order) as
    arrays and the merges as indices."""
    made = {t for a, b in merges for t in (a, b, a + b)}
    tokens = [bytes([b]) for b in range(256)] + sorted(made - set(BYTE_RANKS), key=lambda t: rng.random())
    index = {t: i for i, t in enumerate(tokens)}
    offsets = np.cumsum([0] + [len(t) for t in tokens]).astype(np.int64)
    left, right, joined = (np.array([index[x] for x in column], dtype=np.int64)
                           for column in ([a for a, _ in merges], [b for _, b in merges], [a + b for a, b in merges]))
    check = bpe_fast.merge_rule.rule_difference_of_indices(np.frombuffer(b"".join(tokens), dtype=np.uint8), offsets,
                                                      left, right, joined)
    ranks = dict(BYTE_RANKS) | {t: 256 + k for k, t in enumerate(dict.fromkeys(a + b for a, b in merges))}
    assert check.every_token_made == (oracle_merges(ranks)[0] is not None)
    return check.difference


def numpy_rule_difference_of_indices(pool, offsets, left, right, joined):
    """rule_difference_of_indices as it was in NumPy before rule_cuts (2f8a0dc's bpe_fast.ranks): the parts the
    ranks rule leaves compared by index, not by where they cut the token."""
    from bpe_fast.token_arrays import first_occurrences, gather_tokens

    lengths = np.diff(offsets)
    singles = np.flatnonzero(lengths == 1)
    byte_token = np.full(256, -1, dtype=np.int64)
    byte_token[pool[offsets[singles]]] = singles
    if np.any(byte_token < 0) or np.any(lengths[joined] < 2):
        return bpe_fast.merge_rule.RuleCheck(None, False)
    firsts = first_occurrences(joined)
    order = np.concatenate([byte_token, joined[firsts]])
    ranked_pool, ranked_offsets = gather_tokens(pool, offsets, order)
    got_left, got_right, bad, _ = bpe_fast._ranks.recover_merges(ranked_pool, ranked_offsets,
                                                                 np.arange(256, dtype=np.int32))
    stop = len(order) if bad < 0 else bad
    rank_of = np.full(len(lengths), -1, dtype=np.int64)
    rank_of[order] = np.arange(len(order))
    made = firsts[:stop - 256]
    differ = np.flatnonzero((got_left[256:stop] != rank_of[left[made]]) | (got_right[256:stop] != rank_of[right[made]]))
    if len(differ):
        parts_left, parts_right = order[got_left[256:stop][differ]], order[got_right[256:stop][differ]]
        unlisted = np.flatnonzero(~np.isin(parts_left << 32 | parts_right, left << 32 | right))
        if len(unlisted):
            i = int(unlisted[0])
            a, b = (pool[offsets[t]:offsets[t + 1]].tobytes() for t in (parts_left[i], parts_right[i]))
            return bpe_fast.merge_rule.RuleCheck((int(firsts[differ[i]]), (a, b)), bad < 0)
    if bad >= 0:
        return bpe_fast.merge_rule.RuleCheck((int(firsts[bad - 256]), None), False)
    return bpe_fast.merge_rule.RuleCheck(None, True)


@SOME
@given(st.integers(0, 2**32 - 1), st.integers(0, 30), st.floats(0, 0.4), st.integers(0, 3), st.integers(0, 3),
       st.booleans())
def test_rule_difference_of_indices_equals_the_numpy_one(seed, n_merges, again, swaps, unmade, long_tokens):
    """rule_difference_of_indices' answer (rule_cuts' before the split trees) is the NumPy version's, on lists
    with tokens made by several merges, merges moved out of order, vocabulary tokens no merge makes used as parts
    (which the ranks rule cannot make), tokens past recover's long_from (its heap path), the tokens in a random
    order. (Differential: it found no difference.)"""
    rng = random.Random(seed)
    merges, pool = random_merge_list(rng, n_merges, again, 80 if long_tokens else 8)
    for _ in range(swaps if len(merges) > 1 else 0):
        i, j = rng.randrange(len(merges)), rng.randrange(len(merges))
        merges[i], merges[j] = merges[j], merges[i]
    for _ in range(unmade):
        token = bytes(rng.choice(b"abc") for _ in range(rng.randint(2, 4)))
        pair = (token, rng.choice(pool)) if rng.random() < 0.5 else (rng.choice(pool), token)
        if pair not in merges:
            merges.insert(rng.randint(0, len(merges)), pair)
    made = {t for a, b in merges for t in (a, b, a + b)}
    tokens = [bytes([b]) for b in range(256)] + list(made - set(BYTE_RANKS))
    rng.shuffle(tokens)
    index = {t: i for i, t in enumerate(tokens)}
    args = (np.frombuffer(b"".join(tokens), dtype=np.uint8), np.cumsum([0] + [len(t) for t in tokens]).astype(np.int64),
            *(np.array([index[x] for x in column], dtype=np.int64)
              for column in ([a for a, _ in merges], [b for _, b in merges], [a + b for a, b in merges])))
    check = bpe_fast.merge_rule.rule_difference_of_indices(*args)
    assert check == numpy_rule_difference_of_indices(*args)
    if len(set(merges)) == len(merges):
        assert check.difference == bpe_fast.merge_rule.merge_rule_difference(merges)


def test_merge_rule_difference_worked_example():
    # "aab" is made twice (merges 2 and 3); "abc", listed as a + bc (merge 5), is ab + c by the ranks rule (ab,
    # rank 256, is joined before bc, rank 260), a pair the list does not hold: merge 5, not the 5th token
    merges = [(b"a", b"b"), (b"a", b"a"), (b"a", b"ab"), (b"aa", b"b"), (b"b", b"c"), (b"a", b"bc")]
    assert bpe_fast.merge_rule.merge_rule_difference(merges) == (5, (b"ab", b"c"))
    assert oracle_rule_difference(merges) == (5, (b"ab", b"c"))
    assert difference_of_indices(merges, random.Random(0)) == (5, (b"ab", b"c"))
    assert bpe_fast.merge_rule.merge_rule_difference(merges[:5] + [(b"ab", b"c")]) is None


def test_merge_rule_difference_on_gpt2():
    from bpe_fast import formats
    from corpora import FIXTURES

    merges = formats.read_merges(FIXTURES / "gpt2_merges.txt")
    assert bpe_fast.merge_rule.merge_rule_difference(merges) is None
    swapped = [merges[1], merges[0]] + merges[2:]
    assert bpe_fast.merge_rule.merge_rule_difference(swapped) == oracle_rule_difference(swapped)


def test_rule_difference_of_indices_refuses_offsets_outside_the_pool():
    # rule_cuts (the native check it asked before the split trees) checked the merges' token indices but not
    # offsets: a last offset past the pool read (and copied) memory past it without the GIL (a segmentation
    # fault); a negative or falling offset the same before it. The offsets are checked before any is used
    code = ("import numpy as np\n"
            "from bpe_fast.merge_rule import rule_difference_of_indices\n"
            "pool = np.frombuffer(bytes(range(256)) + b'ab', dtype=np.uint8)\n"
            "one = np.array([97]), np.array([98]), np.array([256])\n"
            "for bad in ([10**6], [-(10**6)], [100]):\n"
            "    offsets = np.array(list(range(257)) + bad, dtype=np.int64)\n"
            "    try:\n"
            "        rule_difference_of_indices(pool, offsets, *one)\n"
            "    except ValueError as e:\n"
            "        print(e)\n"
            "for offsets in ([0] + list(range(2, 257)) + [1, 258], [1] + list(range(1, 257)) + [258]):\n"
            "    try:\n"
            "        rule_difference_of_indices(pool, np.array(offsets, dtype=np.int64), *one)\n"
            "    except ValueError as e:\n"
            "        print(e)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=os.path.dirname(__file__))
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])      # not a crash
    assert done.stdout.splitlines() == ["offsets must start at 0, not fall, and end at the pool's length"] * 5


@pytest.mark.parametrize("call, message", [
    (lambda r, B, Q: r.ranks_table_arrays(B(b"ab"), Q(0, 1, 1, 2), Q(0, 1, 2), B(b""), Q(0), Q()),
     "token 1: offsets must rise \\(no token is empty\\)"),
    (lambda r, B, Q: r.ranks_table_arrays(B(b"ab"), Q(0, 1, 2), Q(0, -1), B(b""), Q(0), Q()), "token 1: rank -1 outside"),
    (lambda r, B, Q: r.ranks_table_arrays(B(b"ab"), Q(0, 1, 2), Q(0, 1), B(b"x"), Q(0, 1), Q(-3)),
     "extra token 0: id -3 outside"),
    (lambda r, B, Q: r.ranks_table_arrays(B(b"ab"), Q(0, 1, 2), Q(0, 1), B(b"x"), Q(0, 5), Q(3)), "offsets must start at 0"),
    (lambda r, B, Q: r.byte_index(B(b"ab"), Q(0, 2, 1, 2)), "token 1: offsets must rise"),
    (lambda r, B, Q: r.byte_index(B(b"ab"), Q(-1, 2)), "offsets must start at 0"),
    (lambda r, B, Q: r.find_token(B(b"ab"), Q(1, 2), b"b"), "offsets must start at 0"),
])
def test_native_ranks_helpers_refuse_spans_outside_their_pool(call, message):
    # the native helpers that read tokens by offsets checked only the last offset: an empty token, a falling or
    # negative offset or a negative id wrote or read outside their arrays without the GIL (no caller passes one:
    # the checks are the functions' own)
    from bpe_fast import _ranks

    with pytest.raises(ValueError, match=message):
        call(_ranks, lambda b: array.array("B", b), lambda *v: array.array("q", v))


@pytest.mark.parametrize("which", ["offsets", "left", "right", "joined"])
def test_rule_difference_of_indices_refuses_float_indices(which):
    # the indices were copied as int64, so 97.9 was read as token 97 without a word
    from bpe_fast.merge_rule import rule_difference_of_indices

    arrays = {"offsets": np.arange(258, dtype=np.int64), "left": np.array([97]), "right": np.array([98]),
              "joined": np.array([256])}
    pool = np.frombuffer(bytes(range(256)) + b"ab", dtype=np.uint8)
    arrays["offsets"][-1] = 258
    assert rule_difference_of_indices(pool, *arrays.values()).difference is None
    arrays[which] = arrays[which] + 0.5
    with pytest.raises(TypeError, match=f"{which} must hold integers, not float64"):
        rule_difference_of_indices(pool, *arrays.values())


@pytest.mark.parametrize("name", ["x.tiktoken", "x.tiktoken.gz"])
def test_a_path_through_a_file_is_an_os_error_not_a_format_error(tmp_path, name):
    # read_tiktoken_bytes: FormatError for a broken gzip stream only, the OSError of a path that cannot be opened
    (tmp_path / "afile").write_bytes(b"")
    with pytest.raises(NotADirectoryError):
        read_tiktoken(tmp_path / "afile" / name)


@SOME
@given(st.integers(0, 2**32 - 1), st.integers(1, 25), st.floats(0, 0.4), st.booleans(),
       st.text(alphabet="abc ", max_size=200))
def test_from_files_and_from_hf_tables_one_pair_a_token_equal_the_general_build(tmp_path_factory, seed, n_merges, again,
                                                                    long_tokens, text):
    # from_files builds the ranks rule's tables one pair a token (tables_made_by_merging) and takes them when
    # each token's pair is its first merge's; else (a token listed with several merges, a list the rule reads
    # otherwise) it asks the merge rule's check. Either way: refused exactly when the constructor refuses the
    # same vocabulary and merges, else the constructor's ids (its tables hold every split of every token)
    from bpe_fast import formats

    rng = random.Random(seed)
    merges, pool = random_merge_list(rng, n_merges, again, 80 if long_tokens else 8)
    vocab = {i: bytes([i]) for i in range(256)}
    for token in pool[3:]:
        vocab[len(vocab)] = token
    folder = tmp_path_factory.mktemp("files")
    formats.write_vocab(folder / "vocab.json", vocab)
    formats.write_merges(folder / "merges.txt", merges)
    try:
        general = Tokenizer(dict(vocab), list(merges))
    except ValueError:
        general = None
    if general is None:
        with pytest.raises(ValueError):
            Tokenizer.from_files(folder / "vocab.json", folder / "merges.txt")
        return
    fast = Tokenizer.from_files(folder / "vocab.json", folder / "merges.txt")
    general.export_hf(folder / "tokenizer.json")        # from_hf: its reader checks the rule; tables the same way
    hf = Tokenizer.from_hf(folder / "tokenizer.json")
    text += " " + b"".join(a + b for a, b in merges[::-1]).decode()
    assert fast.encode(text) == hf.encode(text) == general.encode(text)
    assert fast._tables.permanent_mask() == hf._tables.permanent_mask() == general._tables.permanent_mask()


@pytest.mark.parametrize("case, line", [("missing", None), ("sparse", 257), ("long", 257)])
def test_encoding_from_a_tiktoken_file_names_the_file_of_ranks_it_refuses(tmp_path, case, line):
    # the Encoding's checks of the ranks as a dict said "ranks: ..." (no file, no line) where from_tiktoken names both
    base = [(bytes([b]), b) for b in range(256)]
    ranks = {"missing": base[1:], "sparse": base + [(b"ab", 10 ** 9)], "long": base + [(b"x" * 300, 256)]}[case]
    path = tmp_path / f"{case}.tiktoken"
    path.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % r for t, r in ranks))
    where = re.escape(f"{path}:{line}: " if line else f"{path}: ")
    with pytest.raises(FormatError, match=f"^{where}"):
        bpe_fast.Encoding.from_tiktoken_file("x", path, r"\S+|\s+")
    with pytest.raises(ValueError, match="^ranks: |^vocab ids are too sparse"):     # ranks given as a dict: no file
        bpe_fast.Encoding("x", pat_str=r"\S+|\s+", mergeable_ranks=dict(ranks), special_tokens={})
