"""Type stubs for the compiled module bpe_fast._ranks (bpe_fast/_ranks.pyx)."""
import numpy as np
from _typeshed import ReadableBuffer
from numpy.typing import NDArray

hash_seed: int

_Bytes = ReadableBuffer | NDArray[np.uint8]

def parse_tiktoken(data: _Bytes) -> tuple[NDArray[np.uint8], NDArray[np.int64], NDArray[np.int64],
                                           NDArray[np.int64], int]: ...
LONG_TOKEN: int

def recover_merges(pool: _Bytes, offsets: ReadableBuffer | NDArray[np.int64],
                   byte_index: ReadableBuffer | NDArray[np.int32],
                   long_from: int = ...) -> tuple[NDArray[np.int32], NDArray[np.int32], int, int]: ...

def ranks_arrays(ranks: dict[bytes, int]) -> tuple[NDArray[np.uint8], NDArray[np.int64], NDArray[np.int64]] | None: ...
