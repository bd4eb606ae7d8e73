"""The `bpe-fast` command line (also `python -m bpe_fast`).

    bpe-fast synth --size 100MB -o corpus.txt [--style web]
    bpe-fast train corpus.txt --vocab-size 10000 --special-token '<|endoftext|>' -o tok/
    bpe-fast encode -t tok/ corpus.txt -o tokens.npy
    bpe-fast decode -t tok/ tokens.npy -o text.txt
    bpe-fast export -t tok/ --hf tokenizer.json      (--hf-dir DIR: the folder transformers loads)
    bpe-fast encode -t tokenizer.json corpus.txt -o tokens.npy     (-t: a folder, or HF's tokenizer.json)
    bpe-fast count corpus.txt -o counts.npz

Errors are one line on stderr and a non-zero exit (1; 130 after Ctrl-C), never a traceback, and no
partial output file is left behind.
"""
import argparse
import contextlib
import os
import signal
import sys
import tempfile
import time

from .patterns import PATTERNS


class CliError(Exception):
    """An error worth one line on stderr."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, turned into an exception so that workers are stopped and temporary files removed."""


def _on_sigterm(signum, frame):
    raise Terminated()


# ---- progress ----------------------------------------------------------------------------------

def _human_bytes(n):
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n} B"
        n /= 1000


class Progress:
    """A progress line on stderr: redrawn in place on a terminal, a line every few seconds otherwise."""

    def __init__(self, stream=None, quiet=False):
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.tty = self.stream.isatty()
        self.stage = None
        self.started = time.monotonic()      # the first stage starts when the command does
        self.last = 0.0

    def __call__(self, stage, done, total):
        if self.quiet:
            return
        now = time.monotonic()
        if stage != self.stage:
            self._end_line()
            if self.stage is not None:
                self.started = now
            self.stage, self.last = stage, 0.0
        finished = done >= total
        if finished and self.last == float("inf"):
            return                              # the end of this stage is shown already
        if not finished and now - self.last < (0.1 if self.tty else 5.0):
            return
        self.last = float("inf") if finished else now
        elapsed = max(now - self.started, 1e-9)
        if stage in ("count", "encode"):
            rate = done / elapsed
            eta = (total - done) / rate if rate > 0 else 0.0
            verb = "pre-tokenized" if stage == "count" else "encoded"
            msg = (f"{verb} {_human_bytes(done)} / {_human_bytes(total)} ({100 * done / max(total, 1):.0f}%)"
                   f"  {_human_bytes(rate)}/s  ETA {eta:.0f}s")
        else:
            msg = f"merges {done} / {total} ({100 * done / max(total, 1):.0f}%)  {elapsed:.1f}s"
        if self.tty:
            self.stream.write("\r" + msg.ljust(79))
        else:
            self.stream.write(msg + "\n")
        self.stream.flush()

    def _end_line(self):
        if self.tty and self.stage is not None:
            self.stream.write("\n")

    def close(self):
        if not self.quiet:
            self._end_line()
        self.stage = None


# ---- commands ----------------------------------------------------------------------------------

def _pattern(value):
    if value in PATTERNS:
        return PATTERNS[value]
    if value.isidentifier() and value.lower() == value and len(value) < 12:
        raise CliError(f"unknown pattern name {value!r} (choose {', '.join(PATTERNS)} or give a regex)")
    return value


def _load_tokenizer(path):
    """A folder Tokenizer.save wrote, or an HF tokenizer.json (a file whose name ends in .json)."""
    from .tokenizer import Tokenizer
    if not os.path.exists(path):
        raise CliError(f"{path}: no such tokenizer directory")
    if os.path.isfile(path) and path.endswith(".json") and os.path.basename(path) not in ("vocab.json",
                                                                                          "bpe_fast.json"):
        return Tokenizer.from_hf(path)
    return Tokenizer.load(path)


def _check_output_folder(path):
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise CliError(f"{path}: the folder {folder} does not exist")


def cmd_synth(args):
    from .synthetic import generate, parse_size
    try:
        size = parse_size(args.size)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    _check_output_folder(args.output)
    start = time.perf_counter()
    generate(args.output, size, seed=args.seed, style=args.style)
    took = time.perf_counter() - start
    print(f"wrote {size:,} bytes to {args.output} in {took:.2f} s", file=sys.stderr)


def cmd_count(args):
    from .counts import count_pretokens
    _check_output_folder(args.output)
    client = None
    if args.dask_scheduler:
        from distributed import Client
        client = Client(args.dask_scheduler)
    progress = Progress(quiet=args.quiet)
    try:
        counts = count_pretokens(args.corpus, args.special_token, pattern=_pattern(args.pattern),
                                 num_processes=args.processes, errors=args.errors, progress=progress,
                                 client=client)
    finally:
        progress.close()
        if client is not None:
            client.close()
    counts.save(args.output)
    print(f"{len(counts):,} distinct pre-tokens, {counts.total():,} in all -> {args.output}", file=sys.stderr)


def _summary(tokenizer, merges, took, corpus):
    """Time, vocab size, longest tokens, and bytes per token on a sample of the corpus."""
    lines = [f"trained in {took:.2f} s: {tokenizer.vocab_size} tokens ({len(merges)} merges)"]
    longest = sorted({a + b for a, b in merges}, key=len, reverse=True)[:5]
    if longest:
        lines.append("longest tokens: " + ", ".join(repr(t.decode("utf-8", "replace")) for t in longest))
    if corpus:
        with open(corpus, "rb") as f:
            sample = f.read(1 << 20).decode("utf-8", "replace")
        n = len(tokenizer.encode(sample))
        if n:
            lines.append(f"bytes per token on the first {_human_bytes(len(sample.encode()))} of {corpus}: "
                         f"{len(sample.encode()) / n:.2f}")
    return "\n".join(lines)


def cmd_train(args):
    from .counts import PretokenCounts, count_pretokens
    from .tokenizer import Tokenizer
    from .train import check_vocab_size, train_bpe, train_from_counts
    from .specials import check_special_tokens
    specials = list(check_special_tokens(args.special_token))
    check_vocab_size(args.vocab_size, specials)
    if os.path.exists(args.output) and not os.path.isdir(args.output):
        raise CliError(f"{args.output}: exists and is not a directory")
    parent = os.path.dirname(os.path.abspath(args.output))
    if not os.path.isdir(parent):
        raise CliError(f"{args.output}: the folder {parent} does not exist")
    progress = Progress(quiet=args.quiet)
    start = time.perf_counter()
    try:
        if args.from_counts:
            if args.corpus:
                raise CliError("give CORPUS files or --from-counts, not both")
            shards = []
            for path in args.from_counts:              # shards add up; each must match the first
                shard = PretokenCounts.load(path)
                if shards:
                    try:
                        shards[0].check_compatible(shard)
                    except ValueError as exc:
                        raise CliError(f"{path}: {exc} ({args.from_counts[0]} is the first)") from None
                shards.append(shard)
            counts = shards[0] if len(shards) == 1 else PretokenCounts.merge(shards)
            pattern = counts.pattern
            if not specials:
                specials = list(counts.special_tokens)
        else:
            if not args.corpus:
                raise CliError("give a CORPUS or --from-counts")
            pattern = _pattern(args.pattern)
            counts = None
            if len(args.corpus) == 1:      # train_bpe's path: the workers' tables go to the engine as they are
                vocab, merges = train_bpe(args.corpus[0], args.vocab_size, specials, num_processes=args.processes,
                                          pattern=pattern, errors=args.errors, progress=progress)
            else:
                counts = count_pretokens(args.corpus, specials, pattern=pattern, num_processes=args.processes,
                                         errors=args.errors, progress=progress)
        if counts is not None:
            vocab, merges = train_from_counts(counts, args.vocab_size, specials, progress=progress)
    finally:
        progress.close()
    took = time.perf_counter() - start
    tokenizer = Tokenizer(vocab, merges, special_tokens=specials, pattern=pattern)
    _save_dir_atomic(tokenizer, args.output)
    print(_summary(tokenizer, merges, took, args.corpus[0] if args.corpus else None), file=sys.stderr)
    print(f"saved to {args.output}", file=sys.stderr)


def _save_dir_atomic(tokenizer, directory):
    """Save into a temporary sibling folder, then move the files in: no half-written tokenizer."""
    parent = os.path.dirname(os.path.abspath(directory))
    tmp = tempfile.mkdtemp(prefix=".bpe-fast-", dir=parent)
    try:
        tokenizer.save(tmp)
        os.makedirs(directory, exist_ok=True)
        for name in os.listdir(tmp):
            os.replace(os.path.join(tmp, name), os.path.join(directory, name))
    finally:
        for name in os.listdir(tmp):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(tmp, name))
        with contextlib.suppress(OSError):
            os.rmdir(tmp)


def cmd_encode(args):
    from .encode_file import encode_file
    tokenizer = _load_tokenizer(args.tokenizer)
    _check_output_folder(args.output)
    progress = Progress(quiet=args.quiet)
    start = time.perf_counter()
    try:
        n = encode_file(tokenizer, args.input, args.output, num_processes=args.processes, dtype=args.dtype,
                        errors=args.errors, progress=progress)
    finally:
        progress.close()
    took = time.perf_counter() - start
    size = os.path.getsize(args.input)
    print(f"{n:,} tokens from {_human_bytes(size)} in {took:.2f} s ({_human_bytes(size / max(took, 1e-9))}/s)"
          f" -> {args.output}", file=sys.stderr)


def cmd_decode(args):
    import numpy as np
    from .encode_file import read_npy_dtype
    from .formats import write_text_atomic
    tokenizer = _load_tokenizer(args.tokenizer)
    _check_output_folder(args.output)
    if not os.path.isfile(args.tokens):
        raise CliError(f"{args.tokens}: no such file")
    try:
        dtype, shape = read_npy_dtype(args.tokens)
    except ValueError as exc:
        raise CliError(f"{args.tokens}: not a .npy file ({exc})") from None
    if dtype.kind not in "iu" or len(shape) != 1:
        raise CliError(f"{args.tokens}: expected a 1-D integer token array, got {dtype} of shape {shape}")
    ids = np.load(args.tokens, mmap_mode="r", allow_pickle=False)
    write_text_atomic(args.output, tokenizer.decode(ids))
    print(f"decoded {len(ids):,} tokens -> {args.output}", file=sys.stderr)


def cmd_export(args):
    tokenizer = _load_tokenizer(args.tokenizer)
    target = args.hf or args.hf_dir or args.tiktoken
    _check_output_folder(target)
    if args.hf:
        tokenizer.export_hf(args.hf)
    elif args.hf_dir:
        tokenizer.export_hf_dir(args.hf_dir, eos_token=args.eos_token)
    else:
        tokenizer.export_tiktoken(args.tiktoken)
    print(f"exported -> {target}", file=sys.stderr)


# ---- argument parsing --------------------------------------------------------------------------

def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {value}")
    return value


_TOKENIZER_HELP = "a folder written by train (or Tokenizer.save), or an HF tokenizer.json"


def build_parser():
    parser = argparse.ArgumentParser(prog="bpe-fast", description="Byte-level BPE: train, encode, decode.")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    sub = parser.add_subparsers(dest="command", required=True)

    def corpus_options(p):
        p.add_argument("--special-token", action="append", default=[], metavar="TOK",
                       help="a special token (repeatable); it splits the text and is never merged")
        p.add_argument("--pattern", default="gpt2", help="gpt2 (default), gpt4 (= cl100k), o200k, or a regex")
        p.add_argument("--processes", type=_positive_int, default=None,
                       help="processes counting at once (default: all cores): this one, by a thread that scans "
                            "without the GIL, and P-1 workers")
        p.add_argument("--errors", choices=["strict", "replace"], default="strict",
                       help="invalid UTF-8: fail (strict) or substitute U+FFFD (replace)")

    p = sub.add_parser("train", help="learn a BPE vocabulary from text files")
    p.add_argument("corpus", nargs="*", metavar="CORPUS")
    p.add_argument("--vocab-size", type=int, required=True)
    corpus_options(p)
    p.add_argument("--from-counts", metavar="COUNTS.npz", nargs="+",
                   help="train from saved pre-token counts (several: shards, added up)")
    p.add_argument("-o", "--output", required=True, metavar="DIR")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("count", help="count pre-tokens and save them (.npz) for later training")
    p.add_argument("corpus", nargs="+", metavar="CORPUS")
    corpus_options(p)
    p.add_argument("--dask-scheduler", metavar="ADDRESS", help="count on this Dask cluster")
    p.add_argument("-o", "--output", required=True, metavar="COUNTS.npz")
    p.set_defaults(func=cmd_count)

    p = sub.add_parser("encode", help="encode a text file into a .npy token array")
    p.add_argument("-t", "--tokenizer", required=True, metavar="DIR", help=_TOKENIZER_HELP)
    p.add_argument("input", metavar="INPUT")
    p.add_argument("-o", "--output", required=True, metavar="TOKENS.npy")
    p.add_argument("--processes", type=_positive_int, default=None,
                   help="workers encoding at once (default: all cores): threads for the gpt2 and gpt4 patterns "
                        "(the encoder runs without the GIL), processes for a custom regex")
    p.add_argument("--dtype", choices=["uint16", "uint32"], default=None,
                   help="default: uint16 when the vocabulary fits, else uint32")
    p.add_argument("--errors", choices=["strict", "replace"], default="strict")
    p.set_defaults(func=cmd_encode)

    p = sub.add_parser("decode", help="decode a .npy token array into text")
    p.add_argument("-t", "--tokenizer", required=True, metavar="DIR", help=_TOKENIZER_HELP)
    p.add_argument("tokens", metavar="TOKENS.npy")
    p.add_argument("-o", "--output", required=True, metavar="OUTPUT.txt")
    p.set_defaults(func=cmd_decode)

    p = sub.add_parser("export", help="write the tokenizer for HF tokenizers or tiktoken")
    p.add_argument("-t", "--tokenizer", required=True, metavar="DIR", help=_TOKENIZER_HELP)
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("--hf", metavar="tokenizer.json")
    group.add_argument("--hf-dir", metavar="DIR", help="tokenizer.json, tokenizer_config.json and "
                       "special_tokens_map.json, for transformers' PreTrainedTokenizerFast.from_pretrained")
    group.add_argument("--tiktoken", metavar="FILE.tiktoken")
    p.add_argument("--eos-token", metavar="TOKEN", help="with --hf-dir: the special token transformers takes as "
                   "eos_token (the others are additional special tokens)")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("synth", help="generate a TinyStories-like or web-like corpus")
    p.add_argument("--size", required=True, help="e.g. 100MB, 2GB, 512KiB")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--style", choices=["stories", "web"], default="stories",
                   help="stories (TinyStories-like, the default) or web (web-like: a vocabulary that keeps growing)")
    p.add_argument("-o", "--output", required=True, metavar="CORPUS.txt")
    p.set_defaults(func=cmd_synth)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        args.func(args)
    except Terminated:
        print("\nbpe-fast: terminated; no output written", file=sys.stderr)
        return 143
    except KeyboardInterrupt:
        print("\nbpe-fast: interrupted; no output written", file=sys.stderr)
        return 130
    except CliError as exc:
        print(f"bpe-fast: {exc}", file=sys.stderr)
        return 1
    except (OSError, ValueError, TypeError, RuntimeError, ImportError) as exc:
        print(f"bpe-fast: {_describe(exc)}", file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous)
    return 0


def _describe(exc):
    if isinstance(exc, OSError) and exc.filename and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


if __name__ == "__main__":
    sys.exit(main())
