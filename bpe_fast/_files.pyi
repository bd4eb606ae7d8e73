"""Type stubs for the compiled module bpe_fast._files (bpe_fast/_files.pyx)."""
import numpy as np
from numpy.typing import NDArray

MISSING: int
REGULAR: int
DIRECTORY: int
OTHER: int
SHORTER: int
NOT_REGULAR: int

def stat_paths(paths: list[bytes], start: int = ..., stop: int | None = ..., kinds_array: NDArray[np.int8] | None = ...,
               sizes_array: NDArray[np.int64] | None = ..., errnos_array: NDArray[np.int32] | None = ...
               ) -> tuple[NDArray[np.int8], NDArray[np.int64], NDArray[np.int32]]: ...
def read_files(paths: list[bytes], sizes: NDArray[np.int64], whole: NDArray[np.uint8]) -> tuple[
    NDArray[np.uint8], NDArray[np.int64], int, int]: ...
