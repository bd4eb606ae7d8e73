"""Encoding with today's tokenizer.json files that bpe_fast reads beyond GPT-2's and Llama 3's: bpe_fast's
Tokenizer.from_hf against HF tokenizers reading the same file, one thread, the same run.

Run: python -m pytest benchmarks/bench_hf_files.py --corpus real.txt --benchmark-columns=min,mean,rounds
The files (written by export_hf; the models' own vocabularies are not on this machine, so cl100k_base's ranks from
the bpe-openai wheel stand in, with each model's pre-tokenizer and special tokens):
- "qwen": Qwen2/2.5/3's: an NFC normalizer and Qwen2's pattern (its vocabulary is cl100k's with about 50,000
  tokens more), <|endoftext|>, <|im_start|>, <|im_end|>;
- "deepseek": DeepSeek V3's three Splits (DEEPSEEK3_PATTERN, on `regex`), its <｜begin▁of▁sentence｜> and
  <｜end▁of▁sentence｜>.
Texts: the corpus's first TEXT_BYTES as they are (nearly all text is in NFC already: bpe_fast then only checks it),
and for "qwen" the same text in NFD too (every accented letter taken apart: normalizing changes each piece, bpe_fast's
slow path). Every timed round of bpe_fast gets a fresh tokenizer (an empty cache of pre-tokens, as HF's would be at
its first text); its ids are checked against HF's first. Each benchmark records MB/s in extra_info; the last test
prints bpe_fast's throughput as a multiple of HF's.
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
FILES = {   # name: (pattern, normalizer, special tokens)
    "qwen": ("qwen2", "NFC", {"<|endoftext|>": 100257, "<|im_start|>": 100258, "<|im_end|>": 100259}),
    "deepseek": ("deepseek3", None, {"<\uff5cbegin\u2581of\u2581sentence\uff5c>": 100257,
                                     "<\uff5cend\u2581of\u2581sentence\uff5c>": 100258}),
}
CASES = [("qwen", "as-is"), ("qwen", "NFD"), ("deepseek", "as-is")]
RESULTS = {}        # (file, text, library) -> MB/s


@pytest.fixture(scope="module")
def ranks():
    return load_ranks("cl100k_base")


@pytest.fixture(scope="module")
def corpus_head(corpus_path):
    with open(corpus_path, "rb") as f:
        data = f.read(TEXT_BYTES)
    return data[:data.rfind(b"\n") + 1 or len(data)].decode("utf-8", "replace")


@pytest.fixture(scope="module", params=CASES, ids=["-".join(case) for case in CASES])
def case(request, ranks, corpus_head, tmp_path_factory):
    """(file name, text name, path of the tokenizer.json, text)."""
    name, text_name = request.param
    pattern, normalizer, specials = FILES[name]
    path = tmp_path_factory.mktemp(name) / "tokenizer.json"
    Tokenizer.from_tiktoken(ranks, pattern, specials).with_normalizer(normalizer).export_hf(path)
    text = corpus_head if text_name == "as-is" else unicodedata.normalize("NFD", corpus_head)
    return name, text_name, path, text


def _record(benchmark, key, text):
    if benchmark.stats is None:         # --benchmark-disable: ran once, untimed (the ids were checked)
        return
    RESULTS[key] = len(text.encode("utf-8")) / 1e6 / benchmark.stats.stats.min
    benchmark.extra_info["MB/s"] = round(RESULTS[key], 2)


def test_bpe_fast(benchmark, case):
    name, text_name, path, text = case
    hf = tokenizers.Tokenizer.from_file(str(path))
    assert Tokenizer.from_hf(path).encode(text) == hf.encode(text, add_special_tokens=False).ids
    benchmark.pedantic(lambda tok: tok.encode(text), setup=lambda: ((Tokenizer.from_hf(path),), {}),
                       rounds=5, iterations=1)
    _record(benchmark, (name, text_name, "bpe_fast"), text)


def test_bpe_fast_without_normalizer(benchmark, case):
    # what checking and normalizing costs: the same tokenizer without its normalizer (other ids on NFD text)
    name, text_name, path, text = case
    if FILES[name][1] is None:
        pytest.skip("this file has no normalizer")
    benchmark.pedantic(lambda tok: tok.encode(text), setup=lambda: ((Tokenizer.from_hf(path).with_normalizer(None),), {}),
                       rounds=5, iterations=1)
    _record(benchmark, (name, text_name, "bpe_fast, no normalizer"), text)


def test_hf_tokenizers(benchmark, case):
    name, text_name, path, text = case
    hf = tokenizers.Tokenizer.from_file(str(path))
    benchmark.pedantic(lambda: hf.encode(text, add_special_tokens=False), rounds=3, iterations=1)
    _record(benchmark, (name, text_name, "HF tokenizers"), text)


STREAMS = ["NFD lines", "20,000 marks one at a time"]


@pytest.mark.parametrize("stream", STREAMS)
def test_bpe_fast_encode_iterable_normalizing(benchmark, stream, ranks, corpus_head, tmp_path):
    # encode_iterable with the Qwen-like file's NFC: the text NFD (normalizing changes each line), and a run of
    # combining marks with no character to cut before, fed one at a time (quadratic before it kept where it looked)
    path = tmp_path / "tokenizer.json"
    pattern, normalizer, specials = FILES["qwen"]
    Tokenizer.from_tiktoken(ranks, pattern, specials).with_normalizer(normalizer).export_hf(path)
    pieces = (unicodedata.normalize("NFD", corpus_head).splitlines(keepends=True) if stream == "NFD lines"
              else ["\u0301"] * 20_000)
    tok = Tokenizer.from_hf(path)
    assert list(tok.encode_iterable(pieces)) == tok.encode("".join(pieces))
    benchmark.pedantic(lambda tok: list(tok.encode_iterable(pieces)), setup=lambda: ((Tokenizer.from_hf(path),), {}),
                       rounds=3, iterations=1)
    _record(benchmark, ("qwen", stream, "bpe_fast encode_iterable"), "".join(pieces))


def test_report():
    if not RESULTS:
        pytest.skip("no benchmark ran")
    lines = []
    for name, text_name in CASES:
        ours, hf = RESULTS.get((name, text_name, "bpe_fast")), RESULTS.get((name, text_name, "HF tokenizers"))
        if ours and hf:
            plain = RESULTS.get((name, text_name, "bpe_fast, no normalizer"))
            lines.append(f"{name}, {text_name}: bpe_fast {ours:.1f} MB/s, HF tokenizers {hf:.2f} MB/s ({ours / hf:.1f}x)"
                         + (f"; without the normalizer {plain:.1f} MB/s" if plain else ""))
    for stream in STREAMS:
        if RESULTS.get(("qwen", stream, "bpe_fast encode_iterable")):
            lines.append(f"qwen, encode_iterable, {stream}: bpe_fast "
                         f"{RESULTS['qwen', stream, 'bpe_fast encode_iterable']:.1f} MB/s")
    print("\n" + "\n".join(lines))
    assert lines, "no benchmark ran"
