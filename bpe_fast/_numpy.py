"""NumPy, imported when first used, for the modules that building an Encoding imports.

`from ._numpy import np` gives `np`, which stands for the numpy module: its first read of an attribute imports
NumPy, and it keeps each attribute it has read as its own (read again, a plain attribute: no function runs). So
a module can import it at its top and use `np.` as usual, yet building a tokenizer from tiktoken's ranks, which
uses no NumPy, does not pay NumPy's import: 50-70 ms of a fresh process's first Encoding (tiktoken's whole
first Encoding of cl100k_base is about 60). The modules that need NumPy anyway (training, counting) import it.
"""
from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

__all__ = ["np"]


class _NumPy(ModuleType):
    """The numpy module, imported on the first attribute read (see the module's docstring). A module object
    itself, as what it stands for is one (what a module holds, its stubs name: tests/test_typing.py)."""

    def __getattr__(self, name: str) -> Any:        # (only for a name not read before)
        import numpy

        value = getattr(numpy, name)
        setattr(self, name, value)
        return value

    def __repr__(self) -> str:
        return "<numpy, imported when first used>"


if TYPE_CHECKING:
    import numpy as np
else:
    np = _NumPy("numpy")
