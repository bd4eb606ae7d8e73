"""Type stubs for the compiled module bpe_fast._gpt2_files (bpe_fast/_gpt2_files.pyx)."""
import numpy as np
from _typeshed import ReadableBuffer
from numpy.typing import NDArray

hash_seed: int

_Bytes = ReadableBuffer | NDArray[np.uint8]
_Ints = ReadableBuffer | NDArray[np.int64]

def parse_vocab(data: _Bytes, char_to_byte: NDArray[np.int16],
                max_id: int) -> tuple[NDArray[np.uint8], NDArray[np.int64], NDArray[np.int64]] | None: ...
def parse_merges(data: _Bytes, char_to_byte: NDArray[np.int16]
                 ) -> tuple[NDArray[np.uint8], NDArray[np.int64], NDArray[np.int64]] | None: ...
def token_list(pool: _Bytes, offsets: _Ints, first: int = ..., step: int = ..., span: int = ...) -> list[bytes]: ...
def index_tokens(pool: _Bytes, offsets: _Ints, queries: _Bytes, query_offsets: _Ints, first: int = ...,
                 step: int = ..., span: int = ...) -> NDArray[np.int64] | None: ...
def model_spans(data: _Bytes) -> tuple[int, int, int, int] | None: ...
def parse_merge_list(data: _Bytes, char_to_byte: NDArray[np.int16]
                     ) -> tuple[NDArray[np.uint8], NDArray[np.int64]] | None: ...

class TokenIndex:
    flooded: bool
    duplicates: int
    def __init__(self, pool: _Bytes, offsets: _Ints) -> None: ...
    def find(self, queries: _Bytes, query_offsets: _Ints, first: int = ..., step: int = ...,
             span: int = ...) -> NDArray[np.int64] | None: ...
