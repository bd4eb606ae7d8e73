"""Type stubs for the compiled module bpe_fast._parquet (bpe_fast/_parquet.pyx)."""
import numpy as np
from _typeshed import ReadableBuffer
from numpy.typing import NDArray

SUPPORTED_CODECS: frozenset[int]
SUPPORTED_ENCODINGS: frozenset[int]

def read_footer(footer: ReadableBuffer, column: bytes) -> tuple[
    int, bool, list[bytes], list[int], int, int, tuple[int, int, int, int, int] | None,
    list[tuple[int, int, int, int, int, int, int, int, int, bool, bool, bool, bool]]]: ...
def snappy_decompress(data: ReadableBuffer, length: int) -> bytes: ...

class ColumnChunk:
    def __init__(self, data: ReadableBuffer, base: int, codec: int, optional: bool, num_values: int) -> None: ...
    def read(self, max_bytes: int, max_rows: int) -> tuple[bytes, NDArray[np.int64]] | None: ...
