"""Encoding with a Qwen-like tokenizer.json (an NFC normalizer, Qwen2's pattern, added tokens): bpe_fast's
Tokenizer.from_hf against HF tokenizers reading the same file, one thread, the same run.

Run: python -m pytest benchmarks/bench_normalize.py --corpus real.txt --benchmark-columns=min,mean,rounds
The file: cl100k_base's ranks (from the bpe-openai wheel; Qwen2's vocabulary is cl100k's with about 50,000 tokens
more) with Qwen2's pattern, NFC and Qwen's <|endoftext|>, <|im_start|>, <|im_end|>, written by export_hf.
Texts: the corpus's first TEXT_BYTES as they are (nearly all text is in NFC already: bpe_fast then only checks
it), and the same text in NFD (every accented letter taken apart: normalizing changes each piece, bpe_fast's
slow path). Every timed round of bpe_fast gets a fresh tokenizer (an empty cache of pre-tokens, as HF's
would be at its first text): its ids are checked against HF's first. Each benchmark records MB/s in
extra_info; the last test prints bpe_fast's throughput as a multiple of HF's.
"""
import sys
import unicodedata
from pathlib import Path

import pytest

from bpe_fast import Tokenizer

tokenizers = pytest.importorskip("tokenizers")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from openai_ranks import load_ranks  # noqa: E402  (the tests' reader of the wheel's ranks, independent of bpe_fast)

TEXT_BYTES = 2_000_000
QWEN_SPECIALS = {"<|endoftext|>": 100257, "<|im_start|>": 100258, "<|im_end|>": 100259}
RESULTS = {}        # (text, library) -> MB/s


@pytest.fixture(scope="module")
def qwen_like(tmp_path_factory):
    path = tmp_path_factory.mktemp("qwen_like") / "tokenizer.json"
    Tokenizer.from_tiktoken(load_ranks("cl100k_base"), "qwen2", QWEN_SPECIALS).with_normalizer("NFC").export_hf(path)
    return path


@pytest.fixture(scope="module", params=["as-is", "NFD"])
def text(request, corpus_path):
    with open(corpus_path, "rb") as f:
        data = f.read(TEXT_BYTES)
    data = data[:data.rfind(b"\n") + 1 or len(data)]
    plain = data.decode("utf-8", "replace")
    return request.param, plain if request.param == "as-is" else unicodedata.normalize("NFD", plain)


def _record(benchmark, key, text):
    mb = len(text.encode("utf-8")) / 1e6
    RESULTS[key] = mb / benchmark.stats.stats.min
    benchmark.extra_info["MB/s"] = round(RESULTS[key], 2)


def test_bpe_fast(benchmark, qwen_like, text):
    name, body = text
    hf = tokenizers.Tokenizer.from_file(str(qwen_like))
    assert Tokenizer.from_hf(qwen_like).encode(body) == hf.encode(body, add_special_tokens=False).ids
    benchmark.pedantic(lambda tok: tok.encode(body), setup=lambda: ((Tokenizer.from_hf(qwen_like),), {}),
                       rounds=5, iterations=1)
    _record(benchmark, (name, "bpe_fast"), body)


def test_bpe_fast_without_normalizer(benchmark, qwen_like, text):
    # what checking and normalizing costs: the same tokenizer without its normalizer (other ids on NFD text)
    name, body = text
    benchmark.pedantic(lambda tok: tok.encode(body),
                       setup=lambda: ((Tokenizer.from_hf(qwen_like).with_normalizer(None),), {}),
                       rounds=5, iterations=1)
    _record(benchmark, (name, "bpe_fast, no normalizer"), body)


def test_hf_tokenizers(benchmark, qwen_like, text):
    name, body = text
    hf = tokenizers.Tokenizer.from_file(str(qwen_like))
    benchmark.pedantic(lambda: hf.encode(body, add_special_tokens=False), rounds=3, iterations=1)
    _record(benchmark, (name, "HF tokenizers"), body)


def test_report():
    lines = []
    for name in ("as-is", "NFD"):
        ours, hf = RESULTS.get((name, "bpe_fast")), RESULTS.get((name, "HF tokenizers"))
        if ours and hf:
            plain = RESULTS.get((name, "bpe_fast, no normalizer"))
            lines.append(f"{name}: bpe_fast {ours:.1f} MB/s, HF tokenizers {hf:.2f} MB/s ({ours / hf:.1f}x); "
                         f"without the normalizer {plain:.1f} MB/s" if plain else "")
    print("\n" + "\n".join(lines))
    assert RESULTS, "no benchmark ran"
