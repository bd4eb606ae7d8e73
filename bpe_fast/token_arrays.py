"""Tokens as arrays: a pool of their bytes end to end (uint8) and offsets (int64; token k is
pool[offsets[k]:offsets[k + 1]]), and index arrays into them: the few operations the readers and the table
builders share (bpe_fast.formats, bpe_fast.hf, bpe_fast.ranks, bpe_fast.tokenizer), with no Python object a token.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ._numpy import np
from ._gpt2_files import first_indices, gather_spans, same_spans

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["all_distinct", "first_occurrences", "gather_tokens", "same_tokens"]


def gather_tokens(pool: NDArray[np.uint8], offsets: NDArray[np.int64],
                  which: NDArray[np.int64]) -> tuple[NDArray[np.uint8], NDArray[np.int64]]:
    """(pool, offsets) of the tokens `which` (indices) of pool/offsets (token k is pool[offsets[k]:offsets[k + 1]]),
    end to end in that order.

    >>> pool, offsets = gather_tokens(np.frombuffer(b"abcde", dtype=np.uint8), np.array([0, 1, 3, 5]), np.array([2, 0]))
    >>> bytes(pool), offsets.tolist()
    (b'dea', [0, 2, 3])
    """
    return gather_spans(np.ascontiguousarray(pool, dtype=np.uint8), np.ascontiguousarray(offsets, dtype=np.int64),
                        np.ascontiguousarray(which, dtype=np.int64))


def same_tokens(pool: NDArray[np.uint8], offsets: NDArray[np.int64], which: NDArray[np.int64],
                other_pool: NDArray[np.uint8], other_offsets: NDArray[np.int64]) -> bool:
    """Whether gather_tokens(pool, offsets, which) is (other_pool, other_offsets), found with no copy of the bytes.

    >>> same_tokens(np.frombuffer(b"abc", dtype=np.uint8), np.array([0, 1, 3]), np.array([1, 0]),
    ...             np.frombuffer(b"bca", dtype=np.uint8), np.array([0, 2, 3]))
    True
    """
    return same_spans(np.ascontiguousarray(pool, dtype=np.uint8), np.ascontiguousarray(offsets, dtype=np.int64),
                      np.ascontiguousarray(which, dtype=np.int64), np.ascontiguousarray(other_pool, dtype=np.uint8),
                      np.ascontiguousarray(other_offsets, dtype=np.int64))


def first_occurrences(values: NDArray[np.int64]) -> NDArray[np.int64]:
    """The index of the first occurrence of each distinct value, in increasing order (a native hash table; a
    stable sort for values made to crowd it).

    >>> first_occurrences(np.array([5, 3, 5, 7, 3])).tolist()
    [0, 1, 3]
    """
    found = first_indices(np.ascontiguousarray(values, dtype=np.int64))
    if found is not None:
        return found
    return _first_occurrences_sorted(values)


def _first_occurrences_sorted(values: NDArray[np.int64]) -> NDArray[np.int64]:
    """first_occurrences by a stable sort."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.flatnonzero(ordered[1:] != ordered[:-1]) + 1
    return np.sort(order[np.concatenate([[0], starts])]) if len(values) else np.zeros(0, dtype=np.int64)


def all_distinct(values: NDArray[np.int64]) -> bool:
    """No value twice (first_occurrences' hash table; a sort for values made to crowd it)."""
    found = first_indices(np.ascontiguousarray(values, dtype=np.int64))
    if found is not None:
        return len(found) == len(values)
    ordered = np.sort(values)
    return not np.any(ordered[1:] == ordered[:-1])
