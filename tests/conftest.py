"""What several test modules share: Hypothesis's settings for the whole suite, and fixtures built from the
published reference files in tests/fixtures (see its README.md).

Plain helpers (generated corpora, FIXTURES, GPT-2's byte mapping) are in corpora.py, which the modules import.
"""
import json
import os

import pytest
from hypothesis import HealthCheck, settings

from bpe_fast import Tokenizer
from corpora import EOT, FIXTURES, gpt2_decode

# tiktoken's loaders keep a copy of every file they read, local ones too, in a cache folder (by default
# data-gym-cache in the temporary folder) under the path's SHA-1: the temporary rank files read here are not to be
# left there (nor a stale copy read back for a reused path). "" turns the cache off; a test that wants one sets it.
os.environ["TIKTOKEN_CACHE_DIR"] = ""

# No outcome may depend on how fast the machine is or how busy: Hypothesis's deadline (200 ms an example by
# default) and its too_slow health check both measure time. A test's own settings(...) keep these two unless it
# names them (naming suppress_health_check replaces the list: add HealthCheck.too_slow to it).
settings.register_profile("bpe_fast", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("bpe_fast")


@pytest.fixture(scope="session")
def gpt2():
    """GPT-2's tokenizer (50,257 ids; <|endoftext|> is 50256) from its published vocab.json and merges.txt.
    Shared by the whole session: build a new Tokenizer from its vocab and merges to change anything."""
    return Tokenizer.from_files(FIXTURES / "gpt2_vocab.json", FIXTURES / "gpt2_merges.txt", [EOT])


@pytest.fixture(scope="session")
def cs336_reference():
    """CS336's published result of training on corpus.en with vocab size 500 and <|endoftext|>:
    (merges as pairs of bytes in order, the set of the vocabulary's tokens as bytes)."""
    lines = (FIXTURES / "train-bpe-reference-merges.txt").read_text("utf-8").splitlines()
    merges = [tuple(gpt2_decode(token) for token in line.split(" ")) for line in lines if line.strip()]
    vocab = json.loads((FIXTURES / "train-bpe-reference-vocab.json").read_text("utf-8"))
    tokens = {gpt2_decode(token) for token in vocab}      # "<|endoftext|>" is printable ASCII: itself
    assert len(vocab) == len(tokens) == 500
    return merges, tokens


@pytest.fixture
def unsearchable(monkeypatch):
    """unsearchable(folder): from then on, as the kernel treats paths under a folder this process may not search
    (mode 700 of another user; root, who may run the tests, searches every folder), os.stat and os.open of them
    raise PermissionError."""
    real_stat, real_open = os.stat, os.open

    def make(folder):
        inside = str(folder) + os.sep

        def refuse(real):
            def call(path, *args, **kwargs):
                if isinstance(path, (str, os.PathLike)) and os.fspath(path).startswith(inside):
                    raise PermissionError(13, "Permission denied", os.fspath(path))
                return real(path, *args, **kwargs)
            return call

        monkeypatch.setattr(os, "stat", refuse(real_stat))
        monkeypatch.setattr(os, "open", refuse(real_open))
    return make
