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
from typing import TYPE_CHECKING, Any, NamedTuple

from ._numpy import np
from ._encode import tables_made_by_merging
from ._gpt2_files import TokenIndex, pack_pairs
from ._ranks import recover_merges
from .token_arrays import first_occurrences, gather_tokens

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

__all__ = ["RuleCheck", "rule_difference_of_indices", "merge_rule_difference", "made_as_listed", "describe_difference",
           "later_pairs", "remade_token",
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


def _index_copy(values: ArrayLike, name: str) -> NDArray[np.int64]:
    """A private int64 copy of an array of indices; floats (which int64 would cut without a word) refused."""
    given = np.asarray(values)
    if given.size and given.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integers, not {given.dtype}")
    return np.array(given, dtype=np.int64)


def rule_difference_of_indices(pool: NDArray[np.uint8], offsets: NDArray[np.int64], left: NDArray[np.int64],
                               right: NDArray[np.int64], joined: NDArray[np.int64]) -> RuleCheck:
    """merge_rule_difference of the merges (token left[k], token right[k]) whose joins are tokens joined[k], the
    tokens given by pool/offsets (distinct; the indices int64 arrays): the same
    answer, with no Python object a merge, and whether the ranks rule (merged tokens ranked by their first
    merge) makes every merged token (RuleCheck).

    The parts the ranks rule leaves each merged token in are those of its tables built one pair a token, each
    token's first merge's parts expected (_rule_splits: a token the split trees show made so costs their depth,
    not its bytes merged), compared with the first merge's by where they cut the token (two cuts of the same
    bytes at the same place are the same two tokens)."""
    # private copies, checked: another thread could write the caller's arrays meanwhile
    pool = np.array(pool, dtype=np.uint8)
    offsets, left, right, joined = (_index_copy(a, name) for a, name in
                                    ((offsets, "offsets"), (left, "left"), (right, "right"), (joined, "joined")))
    n, m = len(offsets) - 1, len(joined)
    if n < 0 or len(left) != m or len(right) != m:
        raise ValueError("offsets must have one entry more than there are tokens; left, right, joined one a merge")
    if len(pool) >= _BIG or n >= _BIG:
        raise ValueError("too many tokens, or too many bytes (2 GiB or more)")
    lengths = np.diff(offsets)
    if offsets[0] != 0 or offsets[n] != len(pool) or np.any(lengths < 0):
        raise ValueError("offsets must start at 0, not fall, and end at the pool's length")
    outside = (np.minimum(np.minimum(left, right), joined) < 0) | (np.maximum(np.maximum(left, right), joined) >= n)
    if np.any(outside):
        raise ValueError(f"merge {int(np.argmax(outside))}: a token index outside 0..{n - 1}")
    singles = np.flatnonzero(lengths == 1)
    byte_token = np.full(256, -1, dtype=np.int64)   # the token of each byte (its first, as TokenIndex finds it)
    held, first_single = np.unique(pool[offsets[singles]], return_index=True)
    byte_token[held] = singles[first_single]
    if np.any(byte_token < 0) or np.any(lengths[joined] < 2):
        # a single byte without a token, or a merge that makes a single byte
        if len(joined) and np.all(lengths[joined] >= 2):
            # only a byte without a token: the ranks rule still starts from every byte, so the check is
            # merge_rule_difference's (rare: here with a Python object a merge)
            token = lambda t: pool[offsets[t]:offsets[t + 1]].tobytes()      # noqa: E731
            return RuleCheck(merge_rule_difference(list(zip(map(token, left.tolist()), map(token, right.tolist())))),
                             False)
        return RuleCheck(None, False)
    first = first_occurrences(joined)       # the first merge of each merged token, in rank order
    ranked = joined[first]
    rank_of_token = np.full(n, -1, dtype=np.int64)
    rank_of_token[ranked] = np.arange(len(ranked))
    got_left, got_right, unmade = _rule_splits(byte_token, *gather_tokens(pool, offsets, ranked), ranked,
                                               left[first], right[first],
                                               later_pairs(rank_of_token[joined], first, left, right, len(first)))
    stop = len(first) if unmade < 0 else unmade
    differ_at = np.flatnonzero(lengths[got_left[:stop]] != lengths[left[first[:stop]]])
    bad = int(first[unmade]) if unmade >= 0 else -1
    if len(differ_at):
        parts_left, parts_right = got_left[differ_at], got_right[differ_at]
        listed = np.isin(parts_left << 32 | parts_right, left << 32 | right)   # a token listed with several
        unlisted = np.flatnonzero(~listed)                                    # merges may use any of them
        if len(unlisted):
            i = int(unlisted[0])
            a, b = (pool[offsets[t]:offsets[t + 1]].tobytes() for t in (parts_left[i], parts_right[i]))
            return RuleCheck((int(first[differ_at[i]]), (a, b)), bad < 0)
    if bad >= 0:
        return RuleCheck((bad, None), False)
    return RuleCheck(None, True)


def _rule_splits(byte_ids: NDArray[np.integer[Any]], ranked_pool: NDArray[np.uint8], ranked_offsets: NDArray[np.int64],
                 ranked_ids: NDArray[np.integer[Any]], expected_left: NDArray[np.integer[Any]],
                 expected_right: NDArray[np.integer[Any]], later: dict[str, NDArray[Any]]
                 ) -> tuple[NDArray[np.int64], NDArray[np.int64], int]:
    """(left, right, unmade): the ids of the two tokens the ranks rule leaves each ranked token in (merging its
    bytes with the tokens ranked before it; the ranked tokens in rank order, ranked_pool/ranked_offsets, their ids
    ranked_ids; every byte's id byte_ids), and -1 or the first ranked token it leaves in other than two parts (the
    arrays are then filled only before it). The tables of the rule one pair a token (tables_made_by_merging, no
    decoding and no encoder's entries made), the parts each token is expected to be made of (its listed merge's,
    ids; -1 for none) given: where the split trees show that merging a token's bytes leaves exactly those two,
    its bytes are not merged, so a run of one letter 8,000 long costs the trees' depth a token, not n log n
    lookups of spans up to n bytes long; the pairs of a token's later merges are asked the same way (`later`:
    later_pairs'). The answer is the same as recover_merges' (bpe_fast._ranks)."""
    int32 = np.int32
    no_bytes = np.zeros(0, dtype=np.uint8)       # (these tables decode nothing)
    tables = tables_made_by_merging(
        np.ascontiguousarray(byte_ids, dtype=int32), ranked_pool, ranked_offsets,
        np.ascontiguousarray(ranked_ids, dtype=int32), no_bytes, np.zeros(1, dtype=np.int64), no_bytes,
        permanent=np.zeros(len(ranked_ids), dtype=np.uint8),
        expected_left=np.ascontiguousarray(expected_left, dtype=int32),
        expected_right=np.ascontiguousarray(expected_right, dtype=int32), **later)
    left, right, unmade, _ = tables.splits()
    return np.asarray(left, dtype=np.int64), np.asarray(right, dtype=np.int64), int(unmade)


def later_pairs(ranks: NDArray[np.int64], firsts: NDArray[np.int64], left: NDArray[np.integer[Any]],
                right: NDArray[np.integer[Any]], n_ranked: int) -> dict[str, NDArray[Any]]:
    """tables_made_by_merging's other_starts / other_left / other_right: the parts (left[j], right[j]) of each
    merge j but the first of its token (firsts: each merged token's first merge), grouped by the rank of the
    token it makes (ranks[j], 0..n_ranked - 1), in the list's order; none when each token has one merge, or an id
    does not fit in 32 bits. A list converted from ranks lists a token's every pair, the one the ranks rule makes
    not always first: with these the tables still make every token by its parts' split trees.

    >>> later = later_pairs(np.array([0, 1, 1, 0]), np.array([0, 1]), np.array([7, 8, 9, 6]), np.array([1, 2, 3, 4]), 2)
    >>> [a.tolist() for a in later.values()]
    [[0, 1, 2], [6, 9], [4, 3]]
    """
    later = np.ones(len(ranks), dtype=np.bool_)
    later[firsts] = False
    others = np.flatnonzero(later)
    if not len(others):
        return {}
    others = others[np.argsort(ranks[others], kind="stable")]
    lefts, rights = left[others], right[others]
    if max(lefts.max(), rights.max()) > np.iinfo(np.int32).max:
        return {}
    starts = np.zeros(n_ranked + 1, dtype=np.int64)
    np.cumsum(np.bincount(ranks[others], minlength=n_ranked), out=starts[1:])
    return dict(other_starts=starts, other_left=lefts.astype(np.int32), other_right=rights.astype(np.int32))


_BIG = 0x7FFFFFFF       # the tables' ids and offsets into a token are 32-bit


class _ListedSplits(NamedTuple):
    """_listed_splits' answer: the parts the ranks rule leaves each merged token in (left, right; ids: a byte's
    is the byte, a merged token's 256 + its rank, by its first merge) and unmade (as _rule_splits'), the parts of
    each one's first merge (expected_left, expected_right; -1: a part that is no token before), that merge's
    index (firsts) and the length of its first part (cut), and the merged tokens' bytes (ranked_pool,
    ranked_offsets)."""
    left: NDArray[np.int64]
    right: NDArray[np.int64]
    unmade: int
    expected_left: NDArray[np.int64]
    expected_right: NDArray[np.int64]
    firsts: NDArray[np.int64]
    cut: NDArray[np.int64]
    ranked_pool: NDArray[np.uint8]
    ranked_offsets: NDArray[np.int64]

    def every_token_as_listed(self) -> bool:
        """Whether the ranks rule makes every merged token from the two tokens of its first merge."""
        return bool(self.unmade < 0 and np.array_equal(self.left, self.expected_left)
                    and np.array_equal(self.right, self.expected_right))

    def token(self, i: int) -> bytes:
        """The bytes of the token with id i."""
        if i < 256:
            return bytes([i])
        return self.ranked_pool[self.ranked_offsets[i - 256]:self.ranked_offsets[i - 255]].tobytes()


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
    splits = _listed_splits(merges)
    if splits is not None:
        return _difference_of_splits(merges, splits)
    # (not a list of tuples of two non-empty bytes objects, or a merge that makes a single byte): as it was
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
    shown (the merges may still agree: merge_rule_difference then compares the parts the same tables found).

    The proof is the encoder's tables built by the ranks rule one pair a token, the first merges' parts
    expected (bpe_fast._encode.tables_made_by_merging, as Tokenizer's constructor and loading build them): where
    the ranks of the pairs along the two parts' split trees show that merging a token's bytes leaves exactly
    those two, its bytes are not merged, so a token of n bytes costs the depth of the trees, not n log n lookups
    of spans up to n bytes long (a merge list making a run of one letter 8,000 bytes long: 0.1 s, not 13 s).
    The merges as arrays (no Python object a merge); a list of anything but tuples of two non-empty bytes
    objects, or with a merge that makes a single byte, is left to the full check (False here).

    >>> made_as_listed([(b"a", b"b"), (b"ab", b"c")]), made_as_listed([(b"b", b"c"), (b"a", b"b"), (b"ab", b"c")])
    (True, False)
    """
    splits = _listed_splits(merges)
    return splits is not None and splits.every_token_as_listed()


def _listed_splits(merges: Sequence[tuple[bytes, bytes]]) -> _ListedSplits | None:
    """The parts the ranks rule leaves each token of `merges` in, by the split trees (_rule_splits), and the parts
    of its first merge (_ListedSplits); None for a list of anything but tuples of two non-empty bytes objects, or
    one with a merge that makes a single byte (or tokens crafted to crowd the index)."""
    packed = pack_pairs(merges) if type(merges) is list and merges else None
    if packed is None:
        return None
    pool, offsets = packed
    if np.any(offsets[1:] == offsets[:-1]):       # an empty part
        return None
    n = len(merges)
    # the tokens: the 256 bytes, then each merge's join (the two parts end to end in the pool: merge k's
    # join is the span offsets[2k]:offsets[2k + 2]); the index keeps the first of equal tokens
    tokens = np.concatenate([np.arange(256, dtype=np.uint8), pool])
    starts = np.concatenate([np.arange(256, dtype=np.int64), 256 + offsets[0::2]])
    index = TokenIndex(tokens, starts)
    found = [index.find(tokens, starts, 256), index.find(pool, offsets, 0, 2), index.find(pool, offsets, 1, 2)]
    if index.flooded or any(hits is None for hits in found):
        return None
    joins, lefts, rights = found
    assert joins is not None and lefts is not None and rights is not None
    if np.any(joins < 256):     # a merge that makes a single byte
        return None
    firsts = np.flatnonzero(joins == np.arange(256, 256 + n))       # the first merge of each merged token
    rank = np.full(256 + n + 1, -1, dtype=np.int64)     # token (by its first place) -> its id in the tables; the
    rank[:256] = np.arange(256)                         # last entry, -1, for a part that is no token (found: -1)
    rank[256 + firsts] = np.arange(256, 256 + len(firsts))
    ranked_pool, ranked_offsets = gather_tokens(tokens, starts, 256 + firsts)
    expected_left, expected_right = rank[lefts[firsts]], rank[rights[firsts]]
    left, right, unmade = _rule_splits(np.arange(256), ranked_pool, ranked_offsets,
                                       np.arange(256, 256 + len(firsts)), expected_left, expected_right,
                                       later_pairs(rank[joins] - 256, firsts, rank[lefts], rank[rights], len(firsts)))
    cut = (offsets[1::2] - offsets[0:-1:2])[firsts]
    return _ListedSplits(left, right, unmade, expected_left, expected_right, firsts, cut, ranked_pool, ranked_offsets)


def _difference_of_splits(merges: Sequence[tuple[bytes, bytes]], splits: _ListedSplits
                          ) -> tuple[int, tuple[bytes, bytes] | None] | None:
    """merge_rule_difference's answer from the ranks rule's parts of each token (_listed_splits)."""
    if splits.every_token_as_listed():
        return None
    stop = len(splits.firsts) if splits.unmade < 0 else splits.unmade
    lengths = np.concatenate([np.ones(256, dtype=np.int64), np.diff(splits.ranked_offsets)])
    # the first merge of each token against the parts the ranks rule leaves: two ways to cut the same bytes in
    # two agree when their first parts are as long
    differ = np.flatnonzero(lengths[splits.left[:stop]] != splits.cut[:stop]).tolist()
    listed = set(merges) if differ else set()
    for i in differ:
        parts = splits.token(int(splits.left[i])), splits.token(int(splits.right[i]))
        if parts not in listed:     # a token listed with several merges (files converted from ranks) may use any
            return int(splits.firsts[i]), parts
    if splits.unmade >= 0:
        return int(splits.firsts[splits.unmade]), None
    return None


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
