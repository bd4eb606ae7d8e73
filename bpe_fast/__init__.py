"""bpe_fast: byte-level BPE training and encoding with Cython-compiled hot paths.

Names are imported lazily from the module that owns them, so `import bpe_fast` stays cheap.
"""
import importlib
import os as _os
import sys as _sys
from types import ModuleType as _ModuleType
from typing import TYPE_CHECKING, Any


def _is_command(argv: list[str], orig_argv: list[str]) -> bool:
    """Whether this process is the bpe-fast command (its console script, or python -m bpe_fast)."""
    script = _os.path.basename(argv[0]) if argv else ""
    return script.removesuffix(".exe") == "bpe-fast" or orig_argv[1:3] == ["-m", "bpe_fast"]


# The bpe-fast command does no BLAS work; NumPy's OpenBLAS threads, started when NumPy is imported, busy-wait
# first, on the cores the counting needs (training the real corpus: 0.09 s of CPU, on 2 cores). So the command,
# before NumPy is imported (here: every submodule imports the package first), asks for one BLAS thread unless
# told otherwise. A program that imports bpe_fast keeps its own settings.
if "numpy" not in _sys.modules and _is_command(getattr(_sys, "argv", []), getattr(_sys, "orig_argv", [])):
    _os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


__version__ = "0.1.0"

if TYPE_CHECKING:       # what __getattr__ below imports on first use, for type checkers
    from .counts import PretokenCounts, count_pretokens
    from .curve import compression_curve
    from .encoding import Encoding
    from .file_encoding import encode_file
    from .html_report import write_report
    from .inputs import CorpusDecodeError, InputError
    from .patterns import (BLOOM_PATTERN, DEEPSEEK3_PATTERN, DIGIT_RUNS_GPT2_PATTERN, GPT2_PATTERN, GPT4_PATTERN,
                           KIMI_PAT_STR, KIMI_PATTERN, LLAMA3_PATTERN, O200K_PATTERN, QWEN2_PATTERN,
                           STARCODER_PATTERN, TEKKEN_PATTERN)
    from .pretokenize import pretokenize
    from .registry import encoding_for_model, encoding_name_for_model, get_encoding, list_encoding_names
    from .shards import encode_files
    from .tokenizer import Tokenizer
    from .train import train_bpe, train_from_counts

# Nothing heavy is imported with the package (NumPy alone was about 45 ms of the 60 `import bpe_fast` took, then
# `regex`), not even the patterns: each name below comes from its module when first asked for.
_PATTERNS = ("GPT2_PATTERN", "GPT4_PATTERN", "O200K_PATTERN", "LLAMA3_PATTERN", "QWEN2_PATTERN", "TEKKEN_PATTERN",
             "DEEPSEEK3_PATTERN", "KIMI_PAT_STR", "KIMI_PATTERN", "STARCODER_PATTERN", "DIGIT_RUNS_GPT2_PATTERN",
             "BLOOM_PATTERN")
_EXPORTS = {
    **dict.fromkeys(_PATTERNS, "patterns"),
    "pretokenize": "pretokenize",
    "train_bpe": "train",
    "Tokenizer": "tokenizer",
    "Encoding": "encoding",
    "encode_file": "file_encoding",
    "encode_files": "shards",
    "count_pretokens": "counts",
    "PretokenCounts": "counts",
    "train_from_counts": "train",
    "CorpusDecodeError": "inputs",
    "InputError": "inputs",
    "compression_curve": "curve",
    "write_report": "html_report",
    "get_encoding": "registry",
    "encoding_for_model": "registry",
    "encoding_name_for_model": "registry",
    "list_encoding_names": "registry",
}

# (spelled out, for type checkers and linters: the names of the TYPE_CHECKING imports above)
__all__ = ["GPT2_PATTERN", "GPT4_PATTERN", "O200K_PATTERN", "LLAMA3_PATTERN", "QWEN2_PATTERN", "TEKKEN_PATTERN",
           "DEEPSEEK3_PATTERN", "KIMI_PAT_STR", "KIMI_PATTERN", "STARCODER_PATTERN", "DIGIT_RUNS_GPT2_PATTERN",
           "BLOOM_PATTERN", "pretokenize", "train_bpe", "Tokenizer", "Encoding", "encode_file", "encode_files",
           "count_pretokens", "PretokenCounts", "train_from_counts", "CorpusDecodeError", "InputError",
           "compression_curve", "write_report", "get_encoding", "encoding_for_model", "encoding_name_for_model",
           "list_encoding_names"]

# tiktoken's submodules, by attribute as tiktoken's are (`tiktoken.model.MODEL_TO_ENCODING` after `import tiktoken`)
_SUBMODULES = frozenset({"core", "load", "model", "registry", "_tiktoken"})
# the submodules `import bpe_fast` used to import (so bpe_fast.patterns worked without importing it): still there
_FORMERLY_IMPORTED = frozenset({"patterns", "procs", "specials", "_types"})


class _Package(_ModuleType):
    """bpe_fast's module object: bpe_fast.pretokenize stays the function (as `from .pretokenize import
    pretokenize` here made it) when the submodule of that name is imported, which sets the package's attribute."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "pretokenize" and isinstance(value, _ModuleType):
            value = value.pretokenize
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES or name in _FORMERLY_IMPORTED:
        return importlib.import_module(f".{name}", __name__)      # which also sets it as an attribute
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'bpe_fast' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*__all__, *_SUBMODULES])
