"""Looking at a tokenizer (issue 16): compression_curve against one encode, and the whole report.

    pytest benchmarks/bench_report.py -s --corpus /data/real.txt --corpus-bytes 50MB

- test_compression_curve_against_encode: the corpus of conftest.py (BPE_FAST_BENCH_BYTES, default 20 MB) as
  the evaluation text, with a BPE_FAST_BENCH_VOCAB-token vocabulary (default 32,000) trained on it. In each
  round, in alternating order: `encode_to_numpy(text)` and `compression_curve(tokenizer, text)` (the token
  count at every size from 257 to the full one, from the same str), each with a tokenizer just loaded, whose
  cache of pre-tokens is empty. extra_info["ratio"] is the curve's median time over
  the encode's (the target is under 2); "ratio per round" shows the spread on a busy machine. The curve's last
  count must equal the encode's.
- test_report: `write_report` of the same text (curves by script, tables, SVG charts), and `bpe-fast report`
  as a fresh process (loading the tokenizer and reading the file included). Target: under 10 s for 50 MB.
"""
import os
import statistics
import subprocess
import sys
import time

import pytest

from bpe_fast import Tokenizer, compression_curve, train_bpe, write_report

from conftest import EOT

ROUNDS = int(os.environ.get("BPE_FAST_BENCH_ROUNDS", 5))
VOCAB = int(os.environ.get("BPE_FAST_BENCH_VOCAB", 32000))


@pytest.fixture(scope="module")
def tokenizer_dir(corpus_path, tmp_path_factory):
    folder = tmp_path_factory.mktemp("tok") / "tok"
    result = train_bpe(corpus_path, VOCAB, [EOT], num_processes=2)
    Tokenizer(*result, [EOT], training=result.training).save(folder)
    return folder


def test_compression_curve_against_encode(benchmark, corpus_path, tokenizer_dir):
    text = corpus_path.read_text("utf-8")
    times = {"encode": [], "curve": []}
    results = {}

    def fresh_tokenizers():     # before each round, untimed: one for each call, neither has encoded anything
        return (Tokenizer.load(tokenizer_dir), Tokenizer.load(tokenizer_dir)), {}

    def one_round(for_encode, for_curve):
        # a tokenizer that has encoded keeps its pre-tokens cached and encodes the same text again about 1.7x as
        # fast, so each call gets one that has not, as a report's does; which call goes first alternates
        order = ("encode", "curve") if len(times["encode"]) % 2 == 0 else ("curve", "encode")
        for kind in order:
            start = time.perf_counter()
            if kind == "encode":
                results["ids"] = for_encode.encode_to_numpy(text)
            else:
                results["curve"] = compression_curve(for_curve, text)
            times[kind].append(time.perf_counter() - start)

    benchmark.pedantic(one_round, setup=fresh_tokenizers, rounds=ROUNDS, iterations=1)
    curve = results["curve"]
    assert curve.tokens[-1] == len(results["ids"]) and len(curve.vocab_sizes) == curve.vocab_sizes[-1] - 256
    median = {k: statistics.median(v) for k, v in times.items()}
    ratio = median["curve"] / median["encode"]
    if benchmark.stats is not None:
        benchmark.extra_info.update({
            "encode s": round(median["encode"], 3), "curve s": round(median["curve"], 3), "ratio": round(ratio, 3),
            "ratio per round": [round(c / e, 3) for c, e in zip(times["curve"], times["encode"])],
            "sizes": len(curve.vocab_sizes)})
    size = corpus_path.stat().st_size
    print(f"\ncompression_curve, {size / 1e6:.0f} MB, {len(curve.vocab_sizes):,} sizes: encode_to_numpy "
          f"{median['encode']:.3f} s, compression_curve {median['curve']:.3f} s (medians of {ROUNDS} alternating "
          f"rounds): {ratio:.2f}x; per round {[round(c / e, 2) for c, e in zip(times['curve'], times['encode'])]}")


def test_report(benchmark, corpus_path, tokenizer_dir, tmp_path):
    out = tmp_path / "report.html"
    times = []

    def one_round(tok):
        start = time.perf_counter()
        write_report(tok, [corpus_path], out)
        times.append(time.perf_counter() - start)

    # a tokenizer loaded before each round (untimed): one that has encoded the text would encode it from its cache
    benchmark.pedantic(one_round, setup=lambda: ((Tokenizer.load(tokenizer_dir),), {}), rounds=max(1, ROUNDS // 2),
                       iterations=1)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "bpe_fast", "report", "-t", str(tokenizer_dir), "--eval", str(corpus_path),
                    "-o", str(tmp_path / "cli.html")], check=True, capture_output=True,
                   cwd=tmp_path)       # not the repository's root, whose bpe_fast folder is the uncompiled source
    cli = time.perf_counter() - start
    if benchmark.stats is not None:
        benchmark.extra_info.update({"write_report s": round(statistics.median(times), 3), "cli s": round(cli, 3),
                                     "page KB": round(out.stat().st_size / 1e3, 1)})
    print(f"\nreport, {corpus_path.stat().st_size / 1e6:.0f} MB: write_report {statistics.median(times):.2f} s "
          f"(median of {len(times)}), `bpe-fast report` in a fresh process {cli:.2f} s, page "
          f"{out.stat().st_size / 1e3:.0f} KB")
