"""Type aliases for the annotations of bpe_fast's modules (static types only: nothing here checks a value)."""
import os
from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Tuple, Union

if TYPE_CHECKING:       # (NumPy's types in the aliases below only: importing this module imports no NumPy)
    import numpy as np  # noqa: F401  (in the string aliases below)
    from numpy.typing import NDArray  # noqa: F401
    from typing_extensions import TypeAlias

StrPath = Union[str, "os.PathLike[str]"]                # a file or folder path
Vocab = Dict[int, bytes]                                # id -> the token's bytes
Merges = List[Tuple[bytes, bytes]]                      # the merges in creation order
# progress(stage, done, total): stage "count" (bytes; total None when not known ahead) or "merge" (merges)
Progress = Callable[[str, int, Optional[int]], object]
# a table of counted pre-tokens: tokens (uint8, the pre-tokens' bytes end to end), offsets (int64, pre-token k is
# tokens[offsets[k]:offsets[k + 1]]) and counts (int64)
Table: "TypeAlias" = "Tuple[NDArray[np.uint8], NDArray[np.int64], NDArray[np.int64]]"
