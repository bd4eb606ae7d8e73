"""encode_batch's time and the memory it leaves behind, by num_threads: bpe_fast against tiktoken and HF, o200k_base.

Each thread of bpe_fast's encode_batch holds an encoder of its own (its table of ranked tokens and its cache of
pre-tokens: tens of megabytes for o200k_base), kept for the next call. This measures, in a fresh process per
run (tools and thread counts alternating), the seconds of one encode_batch call and the resident memory it adds
(after the call, its lists dropped), the ids of both tools checked equal.

Run: python benchmarks/batch_memory.py [--corpus FILE] [--mb 8] [--texts 16] [--threads 1,2,8,32] [--rounds 3]
    [--baseline-build DIR]
The texts are the corpus's first --mb megabytes cut in --texts pieces at line ends (random words: at spaces) (default: random words, the
hardest case for a cache: few pre-tokens repeat). The ranks come from the bpe-openai wheel (no download).
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import gc, json, random, sys, time
import psutil
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[1] + "/benchmarks")
from small_calls import load_ranks
tool, threads, corpus, mb, n_texts = sys.argv[2], int(sys.argv[3]), sys.argv[4], float(sys.argv[5]), int(sys.argv[6])
if corpus:
    with open(corpus, "rb") as f:
        data = f.read(int(mb * 1e6)).decode("utf-8", "ignore")
else:
    rng = random.Random(0)
    letters = "abcdefghijklmnopqrstuvwxyz\u00e4\u00f6\u00fc\u00df\u00e9\u00e8"
    words, size = [], 0
    while size < mb * 1e6:
        words.append("".join(rng.choice(letters) for _ in range(rng.randint(3, 12))))
        size += len(words[-1]) + 1
    data = " ".join(words)
step = len(data) // n_texts + 1
texts = []
at = 0
while at < len(data):
    end = data.find("\n" if corpus else " ", at + step)
    end = len(data) if end < 0 else end + 1
    texts.append(data[at:end])
    at = end
ranks = load_ranks("o200k_base")
from bpe_fast.patterns import O200K_PATTERN
if tool == "bpe_fast":
    import bpe_fast
    enc = bpe_fast.Encoding("o200k_base", pat_str=O200K_PATTERN, mergeable_ranks=ranks, special_tokens={})
elif tool == "HF":        # HF tokenizers from export_hf's file; its threads: RAYON_NUM_THREADS, set by the parent
    import os, tempfile
    import bpe_fast, tokenizers
    ours = bpe_fast.Encoding("o200k_base", pat_str=O200K_PATTERN, mergeable_ranks=ranks, special_tokens={})
    with tempfile.TemporaryDirectory() as folder:
        ours.tokenizer.export_hf(os.path.join(folder, "tokenizer.json"))
        hf = tokenizers.Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    del ours

    class _HF:
        def encode_ordinary(self, text):
            return hf.encode(text, add_special_tokens=False).ids

        def encode_ordinary_batch(self, texts, num_threads):
            return [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)]

    enc = _HF()
else:
    import tiktoken
    enc = tiktoken.Encoding("o200k_base", pat_str=O200K_PATTERN, mergeable_ranks=ranks, special_tokens={})
del ranks
enc.encode_ordinary("warm up")
gc.collect()
proc = psutil.Process()
before = proc.memory_info().rss
t = time.perf_counter()
ids = enc.encode_ordinary_batch(texts, num_threads=threads)
seconds = time.perf_counter() - t
check = hash(tuple(map(tuple, ids)))
del ids
gc.collect()
print(json.dumps({"seconds": seconds, "kept_mb": (proc.memory_info().rss - before) / 1e6, "check": check,
                  "mb": len(data.encode("utf-8")) / 1e6, "texts": len(texts)}))
"""


def run(tool, threads, args):
    root = args.baseline_build if tool == "baseline" else str(ROOT)
    tool = "bpe_fast" if tool == "baseline" else tool
    out = subprocess.run([sys.executable, "-c", CHILD, root, tool, str(threads), args.corpus or "",
                          str(args.mb), str(args.texts)], capture_output=True, text=True, cwd="/tmp",
                         env=dict(os.environ, PYTHONHASHSEED="0", RAYON_NUM_THREADS=str(threads),
                                  TOKENIZERS_PARALLELISM="true"))
    if out.returncode:
        sys.exit(f"{tool}, {threads} threads failed:\n{out.stderr}")
    return json.loads(out.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", help="a UTF-8 text file (default: random words)")
    parser.add_argument("--mb", type=float, default=8.0, help="megabytes of text")
    parser.add_argument("--texts", type=int, default=16, help="texts in the batch")
    parser.add_argument("--threads", default="1,2,8,32", help="num_threads values, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", help="write the Markdown table here")
    parser.add_argument("--baseline-build", metavar="DIR", help="also run the bpe_fast built in DIR (an A/B in one run)")
    args = parser.parse_args()
    threads = [int(t) for t in args.threads.split(",")]
    tools = ("bpe_fast", "tiktoken", "HF") + (("baseline",) if args.baseline_build else ())
    results = {}
    for _ in range(args.rounds):
        for n in threads:
            for tool in tools:
                results.setdefault((tool, n), []).append(run(tool, n, args))
    for n in threads:
        checks = {r["check"] for tool in tools for r in results[tool, n]}
        if len(checks) != 1:
            sys.exit(f"{n} threads: the two tools' ids differ")
    first = results[("bpe_fast", threads[0])][0]
    source = args.corpus or "random words"
    lines = [f"encode_ordinary_batch of {first['mb']:.1f} MB ({source}) in {first['texts']} texts, o200k_base, "
             f"median of {args.rounds} fresh processes each, {os.cpu_count()} cores ({platform.machine()}); "
             "memory: resident memory kept after the call, its lists dropped.", "",
             "| num_threads | bpe_fast | memory kept | tiktoken | memory kept | tiktoken / bpe_fast | HF tokenizers |"
             " memory kept | HF / bpe_fast |"
             + (f" {args.baseline_build} | memory kept |" if args.baseline_build else ""),
             "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |" + (" ---: | ---: |" if args.baseline_build else "")]
    for n in threads:
        ours = statistics.median(r["seconds"] for r in results["bpe_fast", n])
        theirs = statistics.median(r["seconds"] for r in results["tiktoken", n])
        kept = [statistics.median(r["kept_mb"] for r in results[tool, n]) for tool in ("bpe_fast", "tiktoken")]
        hf = statistics.median(r["seconds"] for r in results["HF", n])
        hf_kept = statistics.median(r["kept_mb"] for r in results["HF", n])
        row = (f"| {n} | {ours:.2f} s | {kept[0]:.0f} MB | {theirs:.2f} s | {kept[1]:.0f} MB | {theirs / ours:.2f}x |"
               f" {hf:.2f} s | {hf_kept:.0f} MB | {hf / ours:.2f}x |")
        if args.baseline_build:
            base = results["baseline", n]
            row += (f" {statistics.median(r['seconds'] for r in base):.2f} s |"
                    f" {statistics.median(r['kept_mb'] for r in base):.0f} MB |")
        lines.append(row)
    table = "\n".join(lines)
    print(table)
    if args.out:
        Path(args.out).write_text(table + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
