"""The ranks of tiktoken's cl100k_base and o200k_base, read offline from the `bpe-openai` wheel (a test extra),
and tiktoken Encodings built from them (tiktoken itself would download the files).

Independent of bpe_fast: the file is parsed here with base64 and int only, so tests comparing bpe_fast's
loader with it compare two readers."""
import base64
import gzip
import os

import pytest

from bpe_fast.patterns import GPT4_PATTERN, O200K_PATTERN

ENCODINGS = {
    # name: (pattern, special tokens), as tiktoken_ext.openai_public defines them
    "cl100k_base": (GPT4_PATTERN, {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
                                   "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276}),
    "o200k_base": (O200K_PATTERN, {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}),
}
_cache = {}


def ranks_path(name):
    """The path of `name`.tiktoken.gz inside the installed bpe-openai wheel; skips the test when absent."""
    try:
        import bpe_openai
    except ImportError:
        pytest.skip("bpe-openai (the test extra that ships cl100k_base/o200k_base ranks) is not installed")
    path = os.path.join(os.path.dirname(bpe_openai.__file__), "data", f"{name}.tiktoken.gz")
    if not os.path.exists(path):
        pytest.skip(f"{path} is missing from the installed bpe-openai")
    return path


def load_ranks(name):
    """{token bytes: rank} of `name` ("cl100k_base" or "o200k_base")."""
    if name not in _cache:
        with gzip.open(ranks_path(name), "rt", encoding="ascii") as f:
            _cache[name] = {base64.b64decode(tok): int(rank) for tok, rank in (line.split() for line in f if line.strip())}
    return _cache[name]


def tiktoken_encoding(name, with_specials=True):
    """tiktoken's Encoding for `name`, built offline from the ranks."""
    tiktoken = pytest.importorskip("tiktoken")
    pattern, specials = ENCODINGS[name]
    return tiktoken.Encoding(name, pat_str=pattern, mergeable_ranks=load_ranks(name),
                             special_tokens=specials if with_specials else {})
