"""Whether a merge list gives the same ids under the two rules that read it.

A merge list (GPT-2's merges.txt, HF's tokenizer.json, CS336's merges) is read by its own tools with the list rule:
only the listed pairs join, the one listed first first. bpe_fast (and tiktoken) encode with the ranks rule: any
two adjacent parts whose concatenation is a token join, the lowest-ranked token first, a token ranked by its first
merge. The two agree for lists made by training; a list that holds a token the ranks rule makes from other parts
than the list does would give other ids, silently: every reader of a merge list refuses it, naming the merge
(describe_difference).
"""
from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from ._encode import tables_made_by_merging
from ._gpt2_files import TokenIndex, pack_pairs
from ._ranks import recover_merges, rule_cuts
from .token_arrays import gather_tokens

__all__ = ["RuleCheck", "rule_difference_of_indices", "merge_rule_difference", "made_as_listed", "describe_difference",
           "remade_token",
           "describe_remade", "repeated_merge", "list_rule_problem", "PAIR_TWICE"]

# why a merge list cannot hold a pair twice
PAIR_TWICE = ("GPT-2's encoder and HF rank a pair listed twice by its last place, bpe_fast by its first, so the ids "
              "would differ")


class RuleCheck(NamedTuple):
    """rule_difference_of_indices' answer: merge_rule_difference's (difference), and whether the ranks rule makes
    every merged token from the tokens before it (then merging any merged token's bytes with all of them gives
    the token itself: each is a permanent entry of the encoder, as for tiktoken's ranks)."""
    difference: tuple[int, tuple[bytes, bytes] | None] | None
    every_token_made: bool


def rule_difference_of_indices(pool: NDArray[np.uint8], offsets: NDArray[np.int64], left: NDArray[np.int64],
                               right: NDArray[np.int64], joined: NDArray[np.int64]) -> RuleCheck:
    """merge_rule_difference of the merges (token left[k], token right[k]) whose joins are tokens joined[k], the
    tokens given by pool/offsets (distinct; the indices int64 arrays): the same
    answer, with no Python object a merge, and whether the ranks rule (merged tokens ranked by their first
    merge) makes every merged token (RuleCheck)."""
    checkable, differ, parts_left, parts_right, bad = rule_cuts(pool, offsets, left, right, joined)   # no GIL
    if not checkable:       # a single byte without a token, or a merge that makes a single byte
        if len(joined) and np.all(offsets[joined + 1] - offsets[joined] >= 2):
            # only a byte without a token: the ranks rule still starts from every byte, so the check is
            # merge_rule_difference's (rare: here with a Python object a merge)
            token = lambda t: pool[offsets[t]:offsets[t + 1]].tobytes()      # noqa: E731
            return RuleCheck(merge_rule_difference(list(zip(map(token, left.tolist()), map(token, right.tolist())))),
                             False)
        return RuleCheck(None, False)
    if len(differ):
        listed = np.isin(parts_left << 32 | parts_right, left << 32 | right)   # a token listed with several
        unlisted = np.flatnonzero(~listed)                                    # merges may use any of them
        if len(unlisted):
            i = int(unlisted[0])
            a, b = (pool[offsets[t]:offsets[t + 1]].tobytes() for t in (parts_left[i], parts_right[i]))
            return RuleCheck((int(differ[i]), (a, b)), bad < 0)
    if bad >= 0:
        return RuleCheck((int(bad), None), False)
    return RuleCheck(None, True)


def merge_rule_difference(merges: Sequence[tuple[bytes, bytes]]) -> tuple[int, tuple[bytes, bytes] | None] | None:
    """Where replaying `merges` as a merge list (HF's rule: only the listed pairs join, by their place) can give
    other ids than the ranks rule bpe_fast and tiktoken encode with (any adjacent pair whose concatenation is a
    token joins, lowest rank first; a token ranked by its first merge): (index of the first merge of a token
    whose parts the ranks rule makes differently and that the list does not hold, the parts it makes), or None
    when the two rules agree. A token that the ranks rule cannot make from the tokens ranked before it gives
    (index of its first merge, None): the comparison cannot go past it (the ranks rule may still make it, from a
    part ranked after it, where the list would not), so the two rules cannot be shown to agree. No merge list
    made by training has such a token.

    >>> merge_rule_difference([(b"b", b"c"), (b"a", b"b"), (b"ab", b"c")])   # "abc": the ranks rule joins a+bc
    (2, (b'a', b'bc'))
    >>> merge_rule_difference([(b"a", b"b"), (b"ab", b"c")]) is None
    True
    >>> merge_rule_difference([(b"a", b"b"), (b"b", b"c"), (b"bc", b"d"), (b"a", b"bcd")])  # "abcd": ab, c, d
    (3, None)
    """
    if made_as_listed(merges):
        return None
    joined = [a + b for a, b in merges]
    first: dict[bytes, int] = dict.fromkeys(joined, 0)      # each merged token once, in the order of its first merge
    if len(first) == len(joined):
        firsts: Sequence[int] = range(len(joined))
        first_merges: Sequence[tuple[bytes, bytes]] = merges
    else:                                   # tokens made by several merges: where each is made first
        for k in range(len(joined) - 1, -1, -1):
            first[joined[k]] = k
        firsts = list(first.values())
        first_merges = list(map(merges.__getitem__, firsts))
    tokens = [bytes([b]) for b in range(256)] + list(first)
    if len(tokens) != len(set(tokens)):     # a merge makes a single byte (empty part): no ranks to compare with
        return None
    offsets = np.zeros(len(tokens) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens)), out=offsets[1:])
    pool = np.frombuffer(b"".join(tokens), dtype=np.uint8)
    left, right, bad, _ = recover_merges(pool, offsets, np.arange(256, dtype=np.int32))   # the bytes come first
    stop = len(tokens) if bad < 0 else bad          # the parts are known for the tokens before an unmakeable one
    # the first merge of each token against the parts the ranks rule leaves: two ways to cut the same bytes in
    # two agree when their first parts are as long
    listed_cut = np.fromiter(map(len, map(operator.itemgetter(0), first_merges[:stop - 256])), dtype=np.int64,
                             count=stop - 256)
    differ = np.flatnonzero(np.diff(offsets)[left[256:stop]] != listed_cut).tolist()
    listed = set(merges)
    for i in differ:
        parts = tokens[left[256 + i]], tokens[right[256 + i]]
        if parts not in listed:     # a token listed with several merges (files converted from ranks) may use any
            return firsts[i], parts
    if bad >= 0:
        return firsts[bad - 256], None
    return None


def made_as_listed(merges: Sequence[tuple[bytes, bytes]]) -> bool:
    """True when the ranks rule is shown to make every merged token (ranked by its first merge, after the 256
    bytes) from the two tokens of its first merge: merge_rule_difference is then None. False when that is not
    shown (the merges may still agree: merge_rule_difference then merges every token's bytes to say where not).

    The proof is the encoder's tables built by the ranks rule one pair a token, the first merges' parts
    expected (bpe_fast._encode.tables_made_by_merging, as Tokenizer's constructor and loading build them): where
    the ranks of the pairs along the two parts' split trees show that merging a token's bytes leaves exactly
    those two, its bytes are not merged, so a token of n bytes costs the depth of the trees, not n log n lookups
    of spans up to n bytes long (a merge list making a run of one letter 8,000 bytes long: 0.1 s, not 13 s).
    The merges as arrays (no Python object a merge); a list of anything but tuples of two non-empty bytes
    objects, a part that is no token before it, a merge that makes a single byte, is left to the full check.

    >>> made_as_listed([(b"a", b"b"), (b"ab", b"c")]), made_as_listed([(b"b", b"c"), (b"a", b"b"), (b"ab", b"c")])
    (True, False)
    """
    packed = pack_pairs(merges) if type(merges) is list and merges else None
    if packed is None:
        return False
    pool, offsets = packed
    if np.any(offsets[1:] == offsets[:-1]):       # an empty part
        return False
    n = len(merges)
    # the tokens: the 256 bytes, then each merge's join (the two parts end to end in the pool: merge k's
    # join is the span offsets[2k]:offsets[2k + 2]); the index keeps the first of equal tokens
    tokens = np.concatenate([np.arange(256, dtype=np.uint8), pool])
    starts = np.concatenate([np.arange(256, dtype=np.int64), 256 + offsets[0::2]])
    index = TokenIndex(tokens, starts)
    found = [index.find(tokens, starts, 256), index.find(pool, offsets, 0, 2), index.find(pool, offsets, 1, 2)]
    if index.flooded or any(hits is None for hits in found):
        return False
    joins, lefts, rights = found
    assert joins is not None and lefts is not None and rights is not None
    if np.any(joins < 256):     # a merge that makes a single byte
        return False
    firsts = np.flatnonzero(joins == np.arange(256, 256 + n))       # the first merge of each merged token
    if np.any(lefts[firsts] < 0) or np.any(rights[firsts] < 0):     # a part that no merge makes
        return False
    rank = np.full(256 + n, -1, dtype=np.int64)     # token (by its first place) -> its id in the tables
    rank[:256] = np.arange(256)
    rank[256 + firsts] = np.arange(256, 256 + len(firsts))
    ranked_pool, ranked_offsets = gather_tokens(tokens, starts, 256 + firsts)
    n_ids = 256 + len(firsts)
    tables = tables_made_by_merging(
        np.arange(256, dtype=np.int32), ranked_pool, ranked_offsets, np.arange(256, n_ids, dtype=np.int32),
        np.concatenate([tokens[:256], ranked_pool]), np.concatenate([starts[:256], 256 + ranked_offsets]),
        np.ones(n_ids, dtype=np.uint8), permanent=np.zeros(len(firsts), dtype=np.uint8),     # (no encoding here:
        expected_left=rank[lefts[firsts]].astype(np.int32),                 # the encoder's entries are not made)
        expected_right=rank[rights[firsts]].astype(np.int32))
    left, right, unmade, _ = tables.splits()
    return bool(unmade < 0 and np.array_equal(left, rank[lefts[firsts]]) and np.array_equal(right, rank[rights[firsts]]))


def remade_token(merges: Sequence[tuple[bytes, bytes]]) -> tuple[int, int] | None:
    """(k, j) when merge k makes the token that merge j made first, with other merges between them (not in the run
    of merges after j that all make it, as lists converted from ranks list a token's pairs); None when there is
    none. The list rule joins merge k's pair only at k's place, the ranks rule at the token's first (j): the ids
    can differ where merge_rule_difference sees none, as its parts are a listed pair (HF's reader refuses the
    same). No merge list made by training remakes a token.

    >>> remade_token([(b"b", b"b"), (b"b", b"bb"), (b"a", b"bb"), (b"bb", b"b")])   # "abbb": [abb, b] / [a, bbb]
    (3, 1)
    >>> remade_token([(b"b", b"b"), (b"b", b"bb"), (b"bb", b"b"), (b"a", b"bb")]) is None     # a run: accepted
    True
    """
    joined = [a + b for a, b in merges]
    first: dict[bytes, int] = {}
    if len(dict.fromkeys(joined)) == len(joined):
        return None
    for k, token in enumerate(joined):
        j = first.setdefault(token, k)
        if j != k and joined[k - 1] != token:
            return k, j
    return None


def describe_remade(a: bytes, b: bytes, first: str) -> str:
    """What is wrong with the merge (a, b) that remade_token found (first: the earlier merge, named)."""
    return (f"makes {a + b!r}, which {first} made already, with other merges between them: GPT-2's encoder, HF and "
            "CS336's tokenizer join each pair at its own place, bpe_fast (as tiktoken) a token's pairs at its first "
            "merge's, so the ids could differ")


def describe_difference(a: bytes, b: bytes, parts: tuple[bytes, bytes] | None) -> str:
    """What is wrong with the merge (a, b) that merge_rule_difference found (its parts: those it gave)."""
    if parts is None:
        return (f"tiktoken's rule (bpe_fast's) cannot make {a + b!r} from the tokens merged before it, so whether "
                "the merge list's own rule gives the same ids cannot be checked")
    return (f"bpe_fast (as tiktoken) makes {a + b!r} from {parts[0]!r} + {parts[1]!r}, a pair the merge list does "
            "not hold (GPT-2's encoder, HF and CS336's tokenizer would not join them), so the ids would differ")


def repeated_merge(merges: Sequence[Sequence[bytes]]) -> tuple[int, int] | None:
    """(k, j) when merge k is the first to repeat an earlier one, merge j; None when no pair is listed twice.
    A merge list must not (PAIR_TWICE): the constructor, read_merges, write_merges and export_hf refuse one that
    does.

    >>> repeated_merge([(b"a", b"b"), (b"b", b"c"), (b"a", b"b")])
    (2, 0)
    >>> repeated_merge([(b"a", b"b"), (b"a", b"b")])       # in a row too
    (1, 0)
    """
    if len(set(map(tuple, merges))) == len(merges):
        return None
    first: dict[tuple[bytes, ...], int] = {}
    for k, merge in enumerate(merges):
        j = first.setdefault(tuple(merge), k)
        if j != k:
            return k, j
    raise AssertionError("not reached: a pair is listed twice")


def list_rule_problem(merges: Sequence[tuple[bytes, bytes]], name: Callable[[int], str]) -> tuple[int, str] | None:
    """(k, what is wrong with merge k) when the list's own rule and the ranks rule can read `merges` differently:
    a pair listed twice (repeated_merge, in a row too) or a token remade after other merges (remade_token), a
    token the ranks rule makes from other parts or cannot make (merge_rule_difference); None when they agree. The
    text follows the merge's name (it starts with its own separator); name(j) names an earlier merge j in it
    ("merge 3", "line 5").

    >>> list_rule_problem([(b"b", b"c"), (b"a", b"b"), (b"ab", b"c")], lambda j: f"merge {j}")[0]
    2
    >>> list_rule_problem([(b"a", b"b"), (b"a", b"b")], lambda j: f"merge {j}")[1][:17]
    ' repeats merge 0:'
    """
    # a pair listed twice is a token remade, but remade_token accepts it within a run of merges making one token
    # (as lists converted from ranks list a token's pairs): the earlier of the two faults is named
    repeat = repeated_merge(merges)
    remade = remade_token(merges)
    if repeat is not None and (remade is None or repeat[0] <= remade[0]):
        k, j = repeat
        return k, f" repeats {name(j)}: {PAIR_TWICE}"
    if remade is not None:
        k, j = remade
        return k, f" {describe_remade(*merges[k], name(j))}"
    difference = merge_rule_difference(merges)
    if difference is not None:
        k, parts = difference
        return k, f": {describe_difference(*merges[k], parts)}"
    return None
