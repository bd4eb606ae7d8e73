"""The cost of one small call of each tiktoken method: bpe_fast.Encoding against tiktoken.Encoding, same ranks.

Code written for tiktoken makes many small calls (a chat message encoded, a streamed token decoded, a token
looked up), where a call's overhead, not the merging, is the time. Each row times one call shape, the two
libraries in alternating rounds (ROUNDS of each, `number` calls a round), and gives the best round's time a
call; the results of both are checked equal first (an exception counts as a result).

Run: python benchmarks/small_calls.py [--encoding cl100k_base|o200k_base] [--corpus FILE] [--out FILE.md]
The ranks come from the bpe-openai wheel (no download); the texts are the corpus's first lines (default: the
fixture text tests/fixtures/corpus.en): a word, a line, a paragraph of ~800 bytes.
"""
import argparse
import base64
import gzip
import os
import platform
import subprocess
import sys
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPECIALS = {"cl100k_base": {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
                            "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276},
            "o200k_base": {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}}


def load_ranks(name):
    """{token bytes: rank} of `name`, read from the installed bpe-openai wheel with base64 and int only."""
    import bpe_openai

    path = os.path.join(os.path.dirname(bpe_openai.__file__), "data", f"{name}.tiktoken.gz")
    with gzip.open(path, "rt", encoding="ascii") as f:
        return {base64.b64decode(tok): int(rank) for tok, rank in (line.split() for line in f if line.strip())}


def texts(corpus):
    """(word, line, paragraph) from the corpus's first 200 KB, lines holding a special token left out: its
    first word of 5 letters or more, its first line of 30 to 120 characters, and ~800 characters from its start
    (whole lines)."""
    with open(corpus, encoding="utf-8", errors="replace") as f:
        head = f.read(200_000)
    lines = [x.strip() for x in head.splitlines() if x.strip() and "<|" not in x]     # (no special token:
    # bpe-fast synth's documents end with <|endoftext|>, which encode refuses by default)
    word = next(w for line in lines for w in line.split() if w.isalpha() and len(w) >= 5)
    line = next(x for x in lines if 30 <= len(x) <= 120)
    para, k = "", 0
    while len(para) < 800:
        para += lines[k] + "\n"
        k += 1
    return word, line, para


def calls(word, line, para, ids_line, ids_para, eot, token):
    """[(name, call(encoding), number of calls a round)]; token: the bytes of ids_line[0]."""
    one = [ids_line[0]]
    return [
        ("encode (a word)", lambda e: e.encode(word), 20_000),
        ("encode (a line)", lambda e: e.encode(line), 20_000),
        ("encode (a paragraph)", lambda e: e.encode(para), 2_000),
        ("encode, special allowed (a line)", lambda e: e.encode(line + eot, allowed_special={eot}), 20_000),
        ("encode_ordinary (a word)", lambda e: e.encode_ordinary(word), 20_000),
        ("encode_to_numpy (a line)", lambda e: e.encode_to_numpy(line).tolist(), 20_000),
        ("encode_batch (4 lines)", lambda e: e.encode_batch([line] * 4), 200),
        ("encode_single_token (a token's bytes)", lambda e: e.encode_single_token(token), 50_000),
        ("decode (1 token)", lambda e: e.decode(one), 50_000),
        ("decode (a line)", lambda e: e.decode(ids_line), 50_000),
        ("decode (a paragraph)", lambda e: e.decode(ids_para), 10_000),
        ("decode_bytes (1 token)", lambda e: e.decode_bytes(one), 50_000),
        ("decode_single_token_bytes", lambda e: e.decode_single_token_bytes(one[0]), 50_000),
        ("decode_tokens_bytes (a line)", lambda e: e.decode_tokens_bytes(ids_line), 20_000),
        ("decode_with_offsets (a line)", lambda e: e.decode_with_offsets(ids_line), 20_000),
        ("decode_batch (4 lines)", lambda e: e.decode_batch([ids_line] * 4), 200),
    ]


def outcome(call, enc):
    try:
        return "ok", call(enc)
    except Exception as exc:       # the same exception counts as the same result
        return "raise", type(exc).__name__


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--encoding", choices=sorted(SPECIALS), default="cl100k_base")
    p.add_argument("--corpus", default=str(ROOT / "tests" / "fixtures" / "corpus.en"))
    p.add_argument("--rounds", type=int, default=7, help="rounds of each library, alternating (default 7)")
    p.add_argument("--scale", type=float, default=1.0, help="multiply each row's calls a round (smoke tests: 0.01)")
    p.add_argument("--out", help="also write the table (markdown) to this file")
    args = p.parse_args(argv)

    import tiktoken

    import bpe_fast
    from bpe_fast.patterns import GPT4_PATTERN, O200K_PATTERN

    ranks = load_ranks(args.encoding)
    pattern = GPT4_PATTERN if args.encoding == "cl100k_base" else O200K_PATTERN
    specials = SPECIALS[args.encoding]
    ours = bpe_fast.Encoding(args.encoding, pat_str=pattern, mergeable_ranks=ranks, special_tokens=specials)
    theirs = tiktoken.Encoding(args.encoding, pat_str=pattern, mergeable_ranks=ranks, special_tokens=specials)
    word, line, para = texts(args.corpus)
    rows = []
    ids_line = theirs.encode(line)
    for name, call, number in calls(word, line, para, ids_line, theirs.encode(para), "<|endoftext|>",
                                    theirs.decode_single_token_bytes(ids_line[0])):
        if outcome(call, ours) != outcome(call, theirs):
            sys.exit(f"small_calls.py: {name}: bpe_fast's result differs from tiktoken's")
        number = max(1, int(number * args.scale))
        best = {"bpe_fast": float("inf"), "tiktoken": float("inf")}
        for _ in range(args.rounds):
            for lib, enc in (("bpe_fast", ours), ("tiktoken", theirs)):
                best[lib] = min(best[lib], timeit.timeit(lambda: call(enc), number=number) / number)
        rows.append((name, best["bpe_fast"], best["tiktoken"]))
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip() or "?"
    except OSError:
        commit = "?"
    table = [f"Small calls, {args.encoding}, bpe_fast {commit} vs tiktoken {tiktoken.__version__}, "
             f"{platform.processor() or platform.machine()}, best of {args.rounds} alternating rounds "
             f"(text: {Path(args.corpus).name})", "",
             "| call | bpe_fast | tiktoken | tiktoken's time / bpe_fast's |", "| --- | ---: | ---: | ---: |"]
    for name, ours_s, theirs_s in rows:
        table.append(f"| {name} | {ours_s * 1e9:,.0f} ns | {theirs_s * 1e9:,.0f} ns | {theirs_s / ours_s:.2f}x |")
    print("\n".join(table))
    if args.out:
        Path(args.out).write_text("\n".join(table) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
