"""Type stubs for the compiled module bpe_fast._inspect (bpe_fast/_inspect.pyx)."""
import numpy as np
from _typeshed import ReadableBuffer
from numpy.typing import NDArray

hash_seed: int

_Bytes = ReadableBuffer | NDArray[np.uint8]
_Int32s = ReadableBuffer | NDArray[np.int32]
_Int64s = ReadableBuffer | NDArray[np.int64]

def tally_tokens(data: _Bytes, ids: _Int32s, lengths: _Int64s, bmp: _Bytes, counts: NDArray[np.int64],
                 class_bytes: NDArray[np.int64], space: int, astral_cjk: int, astral_other: int) -> None: ...
def count_words(data: _Bytes, bmp: _Bytes, space: int, astral_cjk: int, astral_other: int) -> int: ...
def propagate(left: _Int32s, right: _Int32s, weights: NDArray[np.int64]) -> None: ...
def count_distinct(tokens: _Bytes, offsets: _Int64s) -> int: ...
def merge_forest(vocab_pool: _Bytes, vocab_offsets: _Int64s, merge_pool: _Bytes, merge_offsets: _Int64s,
                 special_ids: _Int64s | None = None) -> tuple[
    NDArray[np.int64], NDArray[np.int32], NDArray[np.int32], NDArray[np.int64], int]: ...
def sort_byte_strings(pool: _Bytes, offsets: _Int64s) -> tuple[NDArray[np.int64], NDArray[np.uint8]]: ...
