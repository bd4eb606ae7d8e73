"""Training on a folder of many small files (a source tree, a dataset saved one document a file), every tool
given the same list of files: bpe_fast's train_bpe(list), gigabpe's train_bpe(list) and HF tokenizers'
train(list), each in a fresh process, the tools alternating round by round.

    python benchmarks/bench_folder.py --folder DOCS/ --vocab-size 2000 --rounds 3 [--out results.md]
    python benchmarks/bench_folder.py --split real.txt --folder DOCS/ ...   # first write real.txt's documents
                                                                           # (split at <|endoftext|>) as files

Time is the training call's wall time in its process (best of the rounds); peak memory the summed resident
memory of the process and its workers (compare.TreeRssSampler). 2 processes for bpe_fast, 2 threads for the
peers (--processes). The peers break ties between equally frequent pairs otherwise and gigabpe and HF's
train() count <|endoftext|> as text: their merges are not compared here (compare.py does that on one file).
"""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

EOT = "<|endoftext|>"
TOOLS = ("bpe_fast", "gigabpe", "tokenizers")

try:
    import pytest
except ImportError:          # run as a script
    pytest = None


def split_documents(corpus, folder):
    """Write corpus's documents (split at EOT) into folder, one file each (0000000.txt, ...)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for k, doc in enumerate(Path(corpus).read_bytes().split(EOT.encode())):
        (folder / f"{k:07d}.txt").write_bytes(doc)


def _files(folder):
    return sorted(str(p) for p in Path(folder).iterdir() if p.is_file() and not p.name.startswith("."))


def _alphabet(files):
    """How many distinct byte values the files hold together (the special token's bytes included)."""
    import numpy as np

    seen = np.zeros(256, dtype=bool)
    for path in files:
        seen |= np.bincount(np.frombuffer(Path(path).read_bytes(), dtype=np.uint8), minlength=256) > 0
    return int(seen.sum())


def _run(tool, folder, vocab_size, processes, alphabet=256):
    """One training in this process: print {"seconds", "peak_kb"}. alphabet: the files' distinct bytes, which
    size gigabpe's vocabulary (compare.py's rule)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from compare import TreeRssSampler

    files = _files(folder)
    if tool == "tokenizers":
        os.environ["RAYON_NUM_THREADS"] = str(processes)
    sampler = TreeRssSampler()
    start = time.perf_counter()
    if tool == "bpe_fast":
        from bpe_fast import train_bpe
        train_bpe(files, vocab_size, [EOT], num_processes=processes)
    elif tool == "gigabpe":
        import gigabpe
        # gigabpe's vocabulary holds the bytes found, not all 256: asked for vocab_size as it was, it learnt more
        # merges than the others (1,841 against 1,743 at 2,000 on 1 MB; helper-149)
        gigabpe.train_bpe(files, vocab_size - 256 + alphabet, special_tokens=[EOT], pretokenizer="bytelevel",
                          threads=processes)
    else:
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[EOT], show_progress=False,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        tok.train(files, trainer)
    took = time.perf_counter() - start
    print(json.dumps({"seconds": took, "peak_kb": sampler.stop()}))


if pytest is not None:
    def test_train_on_a_folder_of_small_files(benchmark, corpus_path, tmp_path_factory):
        """bpe_fast's train_bpe on the session corpus as a folder of 4 KB files (cut at line ends), against the
        same text as one file, alternating; extra_info: the median time over the file's."""
        import statistics

        from bpe_fast import train_bpe
        folder = tmp_path_factory.mktemp("folder")
        data, k, at = Path(corpus_path).read_bytes(), 0, 0
        while at < len(data):
            end = data.find(b"\n", at + 4096)
            end = len(data) if end < 0 else end + 1
            (folder / f"{k:07d}.txt").write_bytes(data[at:end])
            at, k = end, k + 1
        times = {"file": [], "folder": []}
        results = {}

        def one_round():
            for form, source in (("file", corpus_path), ("folder", folder)):
                start = time.perf_counter()
                results[form] = train_bpe(source, 1000, [EOT], num_processes=2)
                times[form].append(time.perf_counter() - start)

        benchmark.pedantic(one_round, rounds=3, iterations=1)
        assert results["folder"].training["corpus"]["documents"] == k
        if benchmark.stats is not None:
            median = {form: statistics.median(t) for form, t in times.items()}
            benchmark.extra_info["folder / file"] = round(median["folder"] / median["file"], 3)
            print(f"\n{k:,} files: folder {median['folder']:.2f} s, file {median['file']:.2f} s")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", required=True)
    parser.add_argument("--split", metavar="CORPUS", help="first write CORPUS's documents into --folder")
    parser.add_argument("--vocab-size", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--tools", default=",".join(TOOLS))
    parser.add_argument("--out")
    parser.add_argument("--worker", metavar="TOOL", help=argparse.SUPPRESS)
    parser.add_argument("--alphabet", type=int, default=256, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        _run(args.worker, args.folder, args.vocab_size, args.processes, args.alphabet)
        return
    if args.split:
        split_documents(args.split, args.folder)
    tools = args.tools.split(",")
    alphabet = _alphabet(_files(args.folder)) if "gigabpe" in tools else 256
    runs = {tool: [] for tool in tools}
    for _ in range(args.rounds):
        for tool in tools:
            out = subprocess.run([sys.executable, __file__, "--folder", args.folder, "--vocab-size",
                                  str(args.vocab_size), "--processes", str(args.processes), "--worker", tool,
                                  "--alphabet", str(alphabet)],
                                 check=True, capture_output=True, text=True).stdout
            runs[tool].append(json.loads(out.strip().splitlines()[-1]))
            print(tool, runs[tool][-1], file=sys.stderr)
    files = _files(args.folder)
    size = sum(os.path.getsize(f) for f in files)
    best = {tool: min(r["seconds"] for r in runs[tool]) for tool in tools}
    lines = [f"Training to {args.vocab_size:,} tokens on a folder of {len(files):,} files ({size / 1e6:.0f} MB), "
             f"every tool given the list of files, {args.processes} processes (bpe_fast) or threads, best of "
             f"{args.rounds} alternating rounds, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.", "",
             "| tool | time | peak memory | time / bpe_fast's |", "| --- | ---: | ---: | ---: |"]
    for tool in tools:
        peak = max(r["peak_kb"] for r in runs[tool]) / 1024
        ratio = f"{best[tool] / best['bpe_fast']:.2f}x" if "bpe_fast" in best else ""
        lines.append(f"| {tool} | {best[tool]:.2f} s | {peak:.0f} MB | {ratio} |")
    table = "\n".join(lines) + "\n"
    print(table)
    if args.out:
        Path(args.out).write_text(table)


if __name__ == "__main__":
    main()
