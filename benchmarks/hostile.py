"""Hostile inputs at full size: time and peak memory of training and encoding on corpora built to hurt.

    python benchmarks/hostile.py [--workdir DIR] [--out hostile.md] [--only NAME ...]

Each case runs in a fresh process; peak memory is the largest resident set of that process (VmHWM) or of
any one of its workers (ru_maxrss), or the summed resident memory of the process and all its workers sampled
every 10 ms, if larger (the sampling sees workers started by a forkserver, which ru_maxrss leaves out). The
results are a Markdown table (stdout and --out). The tests in
tests/test_hostile.py check the same behaviours, exactly, at sizes a test suite can afford.

Cases:
  line-200MB      200 MB of words on one line: no newline, no special token (cut at spaces, 2 processes)
  repeat-100M     one character repeated 100 million times (one pre-token of 100 MB)
  letters-10MB    a 10 MB run of letters inside ordinary text, trained and then encoded
  chain-32K       one string of 32,000 random letters, 50 times (documents apart), trained to 16,000 merges: every
                  pair ties, and the greatest pair grows one token by its right neighbour, a chain thousands of
                  merges deep (comparing two of its tokens walked down its left halves, 3.9 s for this case)
  memory-50MB     a 50 MB synthetic corpus, and
  memory-500MB    the same 50 MB ten times: the same distinct pre-tokens, ten times the bytes
  ranks-1MB       a .tiktoken file whose last token is 2^20 times "a" (the 256 bytes and 20 doublings),
                  loaded with Tokenizer.from_tiktoken (recovering its merge took time quadratic in its length)
  vocab-flood     a vocab.json of 60,000 8-byte tokens made to share the low 40 bits of their hash under the fixed
                  key hash_bytes had before its key was drawn at random in each process (what a file made in
                  advance can target), loaded with Tokenizer.from_files; with the fixed key the native index gave
                  up and the files were read in Python (0.16 s), and before that it took 16.9 s
  nfc-marks-8MB   "e" and 4 million U+0301 (8 MB of UTF-8 that NFC may cut nowhere) streamed through encode_iterable
                  of a byte-level tokenizer with the NFC normalizer and a special token, in strings of 100 characters
                  (each string copied all the text held before 5c4ad3f: 17.0-18.3 s then, 3.3-3.5 s after, on a
                  shared 2-core machine)
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path


def _peak_mb(tree_kb=0):
    """The peak resident memory of this process (VmHWM: RUSAGE_SELF's ru_maxrss would carry over the size of
    the script that started it) or of its largest worker, or tree_kb (the sampled peak of the process and all
    its workers together: workers a forkserver starts are not this process's children, and ru_maxrss of
    RUSAGE_CHILDREN never counts them), in MB."""
    from compare import peak_rss_self_kb

    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(peak_rss_self_kb(), kids, tree_kb) / 1024


def worker(case, path, out):
    """Run one case in this (fresh) process; write {"seconds": ..., "peak_mb": ..., "note": ...} to out."""
    import warnings
    from bpe_fast import Tokenizer, train_bpe
    from compare import TreeRssSampler
    warnings.simplefilter("ignore")
    note = ""
    sampler = TreeRssSampler()
    start = time.perf_counter()
    if case == "nfc-marks-8MB":
        from collections import deque
        tok = Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|endoftext|>"], pattern="qwen2")
        tok = tok.with_normalizer("NFC")
        deque(tok.encode_iterable(["\u0301" * 40]), 0)      # the table of stable characters is made once (~1 s)
        text = Path(path).read_text("utf-8")
        start = time.perf_counter()
        deque(tok.encode_iterable(text[k:k + 100] for k in range(0, len(text), 100)), 0)
        note = f"{len(text):,} characters in strings of 100"
    elif case == "vocab-flood":
        tok = Tokenizer.from_files(Path(path) / "vocab.json", Path(path) / "merges.txt")
        note = f"{len(tok.vocab):,} tokens"
    elif case == "ranks-1MB":
        tok = Tokenizer.from_tiktoken(path, "gpt2")
        a, b = tok.merges[-1]
        note = f"{len(tok.merges)} merges, the last {len(a):,} + {len(b):,} bytes"
    elif case == "letters-10MB":
        vocab, merges = train_bpe(path, 2000, ["<|endoftext|>"], num_processes=2)
        trained = time.perf_counter() - start
        tok = Tokenizer(vocab, merges, ["<|endoftext|>"])
        t1 = time.perf_counter()
        text = Path(path).read_text("utf-8")
        n = len(tok.encode_to_numpy(text))
        note = f"train {trained:.2f} s, encode {time.perf_counter() - t1:.2f} s ({n:,} tokens)"
    else:
        vocab_size = 300 if case == "repeat-100M" else 256 + 1 + 16_000 if case == "chain-32K" else 10_000
        specials = [] if case in ("line-200MB", "repeat-100M") else ["<|endoftext|>"]
        vocab, merges = train_bpe(path, vocab_size, specials, num_processes=2)
        note = f"{len(merges)} merges, the longest token {max(map(len, vocab.values())):,} bytes"
    seconds = time.perf_counter() - start
    tree = sampler.stop()
    Path(out).write_text(json.dumps({"seconds": seconds, "peak_mb": _peak_mb(tree), "note": note}))


def _token_with_hash(h):
    """The 8-byte token whose bpe_fast hash_bytes under its former fixed key is h (for 8-byte keys the hash
    inverts: see _hashing.pxd)."""
    factor, constant = 0xff51afd7ed558ccd, 0x9E3779B97F4A7C15
    x = ((h ^ (h >> 32)) * pow(factor, -1, 1 << 64)) & ((1 << 64) - 1)
    return (x ^ (8 << 56) ^ constant).to_bytes(8, "little")


def make(case, workdir):
    from bpe_fast.synthetic import generate, iter_documents
    if case == "vocab-flood":
        from bpe_fast import formats
        folder = workdir / case
        if not (folder / "merges.txt").exists():
            folder.mkdir(parents=True, exist_ok=True)
            tokens = [_token_with_hash((k + 1) << 40) for k in range(60_000)]
            formats.write_vocab(folder / "vocab.json",
                                {b: bytes([b]) for b in range(256)} | {256 + k: t for k, t in enumerate(tokens)})
            formats.write_merges(folder / "merges.txt", [])
        return folder
    path = workdir / (f"{case}.tiktoken" if case.startswith("ranks") else f"{case}.txt")
    if path.exists():
        return path
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as f:
        if case == "line-200MB":
            written = 0
            for doc in iter_documents(7):
                line = " ".join(doc.split()).encode() + b" "
                f.write(line)
                written += len(line)
                if written >= 200_000_000:
                    break
        elif case == "repeat-100M":
            block = b"a" * (1 << 20)
            for _ in range(100_000_000 >> 20):
                f.write(block)
            f.write(b"a" * (100_000_000 - (100_000_000 >> 20 << 20)))
        elif case == "letters-10MB":
            generate(f, 5_000_000, seed=8)
            f.write(b" " + b"x" * 10_000_000 + b" ")
            generate(f, 5_000_000, seed=9)
        elif case == "chain-32K":
            import random
            rng = random.Random(5)
            letters = bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(32_000))
            f.write(b"<|endoftext|>".join([letters] * 50))
        elif case == "memory-50MB":
            generate(f, 50_000_000, seed=10)
        elif case == "nfc-marks-8MB":
            f.write(("e" + "\u0301" * 4_000_000).encode("utf-8"))
        elif case == "ranks-1MB":
            import base64
            tokens = [bytes([b]) for b in range(256)] + [b"a" * (2 ** e) for e in range(1, 21)]
            f.write(b"".join(base64.b64encode(t) + b" %d\n" % k for k, t in enumerate(tokens)))
        elif case == "memory-500MB":
            base = make("memory-50MB", workdir).read_bytes()
            for _ in range(10):
                f.write(base)
                f.write(b"\n<|endoftext|>\n")
    os.replace(tmp, path)
    return path


CASES = ["line-200MB", "repeat-100M", "letters-10MB", "chain-32K", "memory-50MB", "memory-500MB", "ranks-1MB", "vocab-flood",
         "nfc-marks-8MB"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workdir", default="hostile-work")
    parser.add_argument("--out")
    parser.add_argument("--only", nargs="*", choices=CASES)
    parser.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(*args.worker)
        return 0
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    rows = ["| case | input | wall time | peak memory | |", "| --- | ---: | ---: | ---: | --- |"]
    failed = False
    for case in args.only or CASES:
        path = make(case, workdir)
        out = workdir / f"{case}.json"
        out.unlink(missing_ok=True)             # never a result left by an earlier run
        done = subprocess.run([sys.executable, __file__, "--worker", case, str(path), str(out)],
                              stderr=subprocess.PIPE, text=True)
        size = path.stat().st_size if path.is_file() else sum(p.stat().st_size for p in path.iterdir())
        if done.returncode != 0 or not out.is_file():
            # a case that fails (killed for memory, an error) is a row of the table; the others still run
            sys.stderr.write(f"{case} failed:\n{done.stderr}\n")
            lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
            why = (lines[-1] if lines else "no output").replace("|", "\\|")
            rows.append(f"| {case} | {size / 1e6:,.0f} MB | failed (exit {done.returncode}): {why} | | |")
            failed = True
        else:
            result = json.loads(out.read_text())
            rows.append(f"| {case} | {size / 1e6:,.0f} MB | {result['seconds']:.2f} s | "
                        f"{result['peak_mb']:,.0f} MB | {result['note']} |")
        print(rows[-1], flush=True)
    table = "\n".join(rows)
    print(table)
    if args.out:
        Path(args.out).write_text(table + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
