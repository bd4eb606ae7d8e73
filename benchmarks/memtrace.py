"""Training's memory over time: train_bpe on a corpus (2 processes, <|endoftext|>) while a thread samples the summed
resident memory of this process and its workers every 0.25 s, printing it every 10 s with the peak so far, and
each stage as the progress callback reports it (count, merge).

    python benchmarks/memtrace.py web5g.txt 32000

(compare.py gives the peak only; this shows where it is reached: counting, or the engine's first merges.)
"""
import argparse
import os
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare import tree_rss_kb  # noqa: E402  (compare.py, beside this file)


def main(argv=None):
    from bpe_fast import train_bpe

    parser = argparse.ArgumentParser(prog="memtrace.py", description=__doc__.splitlines()[0])
    parser.add_argument("corpus", help="a UTF-8 text file, documents separated by <|endoftext|>")
    parser.add_argument("vocab_size", type=int)
    args = parser.parse_args(argv)
    if not os.path.isfile(args.corpus):
        parser.error(f"corpus {args.corpus!r} is not a file")
    if args.vocab_size < 257:
        parser.error(f"vocab_size must be at least 257 (the bytes and <|endoftext|>), got {args.vocab_size}")
    start = time.perf_counter()
    peak = [0, 0.0]                 # KB, seconds
    # the same once counting is done (the engine's build, layout and pair index, and its merges), and from the
    # merge stage on (reported after the first 256 merges)
    built_peak = [0, 0.0]
    merge_peak = [0, 0.0]
    counted = []
    done = threading.Event()
    stages = []

    def sample():
        last = 0.0
        while not done.wait(0.25):
            kb, at = tree_rss_kb(), time.perf_counter() - start
            if kb > peak[0]:
                peak[:] = [kb, at]
            if counted and kb > built_peak[0]:
                built_peak[:] = [kb, at]
            if "merge" in stages and kb > merge_peak[0]:
                merge_peak[:] = [kb, at]
            if at - last >= 10:
                print(f"{at:7.1f} s {kb / 1024:9,.0f} MB (peak {peak[0] / 1024:,.0f} MB at {peak[1]:.0f} s)", flush=True)
                last = at

    def progress(stage, done_bytes, total):
        if not stages or stages[-1] != stage:
            stages.append(stage)
            print(f"{time.perf_counter() - start:7.1f} s stage {stage} begins, "
                  f"{tree_rss_kb() / 1024:,.0f} MB", flush=True)
        if stage == "count" and done_bytes == total and not counted:     # (after the stage's line: it comes first)
            counted.append(time.perf_counter() - start)
            print(f"{counted[0]:7.1f} s counted, {tree_rss_kb() / 1024:,.0f} MB", flush=True)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    train_bpe(args.corpus, args.vocab_size, ["<|endoftext|>"], num_processes=2, progress=progress)
    done.set()
    sampler.join()
    print(f"done in {time.perf_counter() - start:.1f} s, peak {peak[0] / 1024:,.0f} MB at {peak[1]:.0f} s; "
          f"once counted {built_peak[0] / 1024:,.0f} MB at {built_peak[1]:.0f} s; from the merge stage on "
          f"{merge_peak[0] / 1024:,.0f} MB at {merge_peak[1]:.0f} s", flush=True)


if __name__ == "__main__":
    main()
