"""Type stubs for the compiled module bpe_fast._ranks (bpe_fast/_ranks.pyx)."""
import array
from typing import Any

import numpy as np
from _typeshed import ReadableBuffer
from numpy.typing import NDArray

hash_seed: int

_Bytes = ReadableBuffer | NDArray[np.uint8]
_Ints = ReadableBuffer | NDArray[np.integer[Any]]

def parse_tiktoken(data: _Bytes) -> tuple[array.array[int], array.array[int], array.array[int], array.array[int],
                                           int]: ...
LONG_TOKEN: int

def recover_merges(pool: _Bytes, offsets: _Ints, byte_index: _Ints, long_from: int = ...) -> tuple[NDArray[np.int32], NDArray[np.int32], int, int]: ...

def ranks_arrays(ranks: dict[bytes, int],
                 max_rank: int = ...) -> tuple[array.array[int], array.array[int], array.array[int]] | None: ...
def ranks_rise(values: _Ints, max_rank: int) -> bool: ...
def byte_index(pool: _Bytes, offsets: _Ints) -> array.array[int]: ...
def find_token(pool: _Bytes, offsets: _Ints, token: _Bytes) -> int: ...
def ranks_table_arrays(pool: _Bytes, offsets: _Ints, values: _Ints, extra_pool: _Bytes, extra_offsets: _Ints,
                       extra_ids: _Ints) -> dict[str, Any]: ...
