"""Type stubs for the compiled module bpe_fast._jsonl (bpe_fast/_jsonl.pyx)."""
import numpy as np
from _typeshed import ReadableBuffer
from numpy.typing import NDArray

def extract_texts(data: ReadableBuffer, start: int, field: bytes, first_line: int, max_digits: int = ...,
                  max_depth: int = ...) -> tuple[
    bytes, NDArray[np.int64], NDArray[np.int64], int, int]: ...
