"""bpe_fast: byte-level BPE training and encoding with Cython-compiled hot paths."""
from .patterns import GPT2_PATTERN, GPT4_PATTERN
from .pretokenize import pretokenize

__all__ = ["GPT2_PATTERN", "GPT4_PATTERN", "pretokenize"]
__version__ = "0.1.0"
