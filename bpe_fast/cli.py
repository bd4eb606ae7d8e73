"""The `bpe-fast` command line (also `python -m bpe_fast`).

    bpe-fast synth --size 100MB -o corpus.txt [--style web]
    bpe-fast train corpus.txt --vocab-size 10000 --special-token '<|endoftext|>' -o tok/
    bpe-fast encode -t tok/ corpus.txt -o tokens.npy
    bpe-fast decode -t tok/ tokens.npy -o text.txt
    bpe-fast export -t tok/ --hf tokenizer.json      (--hf-dir DIR: the folder transformers loads)
    bpe-fast encode -t tokenizer.json corpus.txt -o tokens.npy     (-t: a folder, or HF's tokenizer.json)
    bpe-fast count corpus.txt -o counts.npz
    bpe-fast train shards/*.jsonl.gz --text-field text --max-bytes 2GB --vocab-size 32000 -o tok/
    bpe-fast train code.parquet --continue-from gpt2/ --vocab-size 52000 -o tok2/
    cat doc.txt | bpe-fast encode -t tok/ - -o -  > tokens.npy
    bpe-fast show -t tok/ "Once upon a time" --ids          (-f FILE; --plain; --html OUT.html)
    bpe-fast report -t tok/ --eval held_out.txt -o report.html --against gpt2/ [--png charts/]

A CORPUS is a text file, a compressed one (.gz, .bz2, .xz, .zst), JSON lines (.jsonl, --text-field), Parquet
(--text-column), a directory or a glob. `-q` and `-j N` go before or after the command;
BPE_FAST_NUM_PROCESSES sets the default number of processes.

Errors are one line on stderr and a non-zero exit (1; 130 after Ctrl-C), never a traceback, and no
partial output file is left behind. An output that is one of the command's inputs (the corpus, the tokens, the
tokenizer's files; by another path or a symbolic link too) is refused before any work.
"""
from __future__ import annotations

import argparse
import contextlib
import glob
import io
import math
import os
import re
import shutil
import signal
import stat
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from types import FrameType
from typing import IO, TYPE_CHECKING, Any, TextIO, cast

from .patterns import PATTERNS, SHORT_NAMES
from .procs import MAX_PROCESSES

if TYPE_CHECKING:
    from .counts import PretokenCounts
    from .inputs import Stream
    from .tokenizer import Tokenizer


class CliError(Exception):
    """An error worth one line on stderr."""


class Terminated(KeyboardInterrupt):
    """SIGTERM (or SIGHUP: the terminal or ssh session closed), turned into an exception so that workers are
    stopped and temporary files removed; args[0] is the signal's number."""


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise Terminated(signum)


def _exit_status(stop: Terminated) -> int:
    """128 + the signal's number, as the shell reports a process the signal killed."""
    return 128 + (stop.args[0] if stop.args else signal.SIGTERM)


# ---- progress ----------------------------------------------------------------------------------

def _human_bytes(n: float) -> str:    # type: ignore[return]  # the loop returns at "TB"
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n:.0f} B"     # (a rate is a float)
        n /= 1000


class Progress:
    """A progress line on stderr: redrawn in place on a terminal, a line every few seconds otherwise."""

    def __init__(self, stream: IO[str] | None = None, quiet: bool = False) -> None:
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.tty = self.stream.isatty()
        self.stage: str | None = None
        self.started = time.monotonic()      # the first stage starts when the command does
        self.last = 0.0
        self.undrawn: tuple[float, Any, float] | None = None      # (done, total, when) not drawn yet

    def __call__(self, stage: str, done: float, total: Any) -> None:      # total: a number, or None (counting)
        if self.quiet:
            return
        now = time.monotonic()
        if stage != self.stage:
            self._end_line()
            if self.stage is not None:
                self.started = now
            self.stage, self.last = stage, 0.0
        finished = total is not None and done >= total
        if finished and self.last == float("inf"):
            return                              # the end of this stage is shown already
        if not finished and now - self.last < (0.1 if self.tty else 5.0):
            # not drawn now: drawn when the stage ends if nothing comes after it (a stream's last bytes, whose
            # total is never known, were not shown: "pre-tokenized 0 B  0 B/s" was the last line of a short run)
            self.undrawn = (done, total, now)
            return
        self.last = float("inf") if finished else now
        self._draw(stage, done, total, now)

    def _draw(self, stage: str, done: float, total: Any, now: float) -> None:
        self.undrawn = None
        elapsed = max(now - self.started, 1e-9)
        if stage in ("count", "encode") and total is None:       # documents read as they come
            verb = "pre-tokenized" if stage == "count" else "encoded"
            msg = f"{verb} {_human_bytes(done)}  {_human_bytes(done / elapsed)}/s"
        elif stage in ("count", "encode"):
            rate = done / elapsed
            eta = (total - done) / rate if rate > 0 else 0.0
            verb = "pre-tokenized" if stage == "count" else "encoded"
            percent = 100 * done / total if total else 100.0      # (all of an empty input is done)
            msg = (f"{verb} {_human_bytes(done)} / {_human_bytes(total)} ({percent:.0f}%)"
                   f"  {_human_bytes(rate)}/s  ETA {eta:.0f}s")
        else:
            msg = f"merges {done} / {total} ({100 * done / max(total, 1):.0f}%)  {elapsed:.1f}s"
        if self.tty:
            self.stream.write("\r" + msg.ljust(79))
        else:
            self.stream.write(msg + "\n")
        self.stream.flush()

    def _end_line(self) -> None:
        if self.stage is not None and self.undrawn is not None:
            self._draw(self.stage, *self.undrawn)
        if self.tty and self.stage is not None:
            self.stream.write("\n")

    def close(self) -> None:
        if not self.quiet:
            self._end_line()
        self.stage = None


# ---- commands ----------------------------------------------------------------------------------

def _pattern(value: str) -> str:
    if not value:       # (--pattern "$UNSET": taken for no --pattern, the gpt2 pattern used without a word)
        raise CliError(f"--pattern: empty; give {', '.join(SHORT_NAMES)} or a regex")
    if value in PATTERNS:
        return PATTERNS[value]
    if value.isidentifier() and value.lower() == value and len(value) < 12:
        raise CliError(f"--pattern: unknown pattern name {value!r} (choose {', '.join(PATTERNS)} or give a regex)")
    from .patterns import compile_pattern
    try:
        compile_pattern(value)      # (resolve_pattern's checks, then regex's: before any work, naming the flag)
    except ValueError as exc:
        raise CliError(f"--pattern: {exc}") from None
    return value


_TOKENIZER_FORMS = ("a folder Tokenizer.save (or train -o) wrote, a folder holding HF's tokenizer.json, a "
                    "tokenizer.json, or the name of one of tiktoken's encodings")


def _load_tokenizer(path: str, flag: str = "-t") -> Tokenizer:
    """A folder Tokenizer.save wrote, a folder without vocab.json holding an HF tokenizer.json (export --hf-dir's),
    an HF tokenizer.json (a file whose name ends in .json), or, when no such path exists, the name of one of
    tiktoken's encodings (bpe_fast.get_encoding's tokenizer)."""
    from .formats import CONFIG_FILE, VOCAB_FILE, path_exists
    from .registry import get_encoding, list_encoding_names
    from .tokenizer import Tokenizer
    try:
        exists = path_exists(path)
    except OSError as exc:
        raise CliError(f"{flag}: {_describe(exc)}") from None
    if not exists:
        missing = "no such file" if path.endswith(".json") else "no such tokenizer directory"   # (a tokenizer.json)
        try:
            names = list_encoding_names()
        except ValueError as exc:       # a tiktoken_ext plugin that is not one
            raise CliError(f"{flag} {path}: {missing}, and {exc}") from None
        if path not in names:
            raise CliError(f"{flag} {path}: {missing} (nor one of tiktoken's encodings: {', '.join(names)})")
    is_file = os.path.isfile(path)
    if is_file and (not path.endswith(".json") or os.path.basename(path) in (VOCAB_FILE, CONFIG_FILE)):
        raise CliError(f"{flag} {path}: a file that is no tokenizer.json; {flag} takes {_TOKENIZER_FORMS}")
    hf_file = os.path.join(path, "tokenizer.json")
    if os.path.isdir(path) and not os.path.exists(os.path.join(path, CONFIG_FILE)) and os.path.isfile(hf_file):
        # a folder export --hf-dir wrote, or transformers' save_pretrained (vocab.json and merges.txt beside it:
        # read as GPT-2's files they would give GPT-2's pattern and no special tokens): its tokenizer.json
        path = hf_file
        is_file = True
    try:        # what is wrong with it names the file (and line); the flag says which of the tokenizers it is
        if not exists:
            return get_encoding(path).tokenizer
        if is_file:
            return Tokenizer.from_hf(path)
        return Tokenizer.load(path)
    except (OSError, ValueError) as exc:
        raise CliError(f"{flag}: {_describe(exc)}") from None


def _check_output_folder(path: str, flag: str = "-o") -> None:
    """A CliError naming the flag when the file `path` cannot be made: its folder is missing or not a folder, or
    it ends with '/' (a folder's name)."""
    _check_not_stdout(path, flag)
    if path.endswith(("/", os.sep)):
        raise CliError(f"{flag} {path}: ends with '/', a folder's name; give the file to write")
    target = os.path.realpath(path) if os.path.islink(path) else path    # written through a link (bpe_fast.atomic)
    _check_names_fit(target, f"{flag} {path}")
    folder = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(folder):
        why = f"{folder} is not a folder" if os.path.exists(folder) else f"the folder {folder} does not exist"
        raise CliError(f"{flag} {path}: {why}")
    if not os.path.exists(path) or os.path.isfile(path):    # (/dev/null is written to as it is)
        _check_can_make_in(folder, f"{flag} {path}")


def _check_names_fit(path: str, given: str) -> None:
    """A CliError naming `given` when a part of `path` that does not exist yet has a name longer than the file
    system takes: found after the work, as the output was renamed into place ('File name too long')."""
    from .atomic import check_name_fits
    part = os.path.abspath(path)
    while not os.path.lexists(part):
        try:
            check_name_fits(part)
        except OSError as exc:
            raise CliError(f"{given}: {exc.strerror}") from None
        part = os.path.dirname(part)


def _check_not_stdout(path: str, flag: str, file: bool = True) -> None:
    """A CliError naming the flag when `path` is '-', stdout, for an output that is not written there."""
    if path == "-":         # (decode, encode and synth take -o - for stdout, and do not come here with it)
        raise CliError(f"{flag} -: this output is not written to stdout; give a {'file' if file else 'folder'} name "
                       f"(./- for one named -)")


def _check_can_make_in(folder: str, given: str) -> None:
    """A CliError naming `given` unless something can be made in `folder`, tried by making and removing an empty
    folder there: os.access says yes to root for a folder where nothing can be made (/proc), and the output's
    temporary file then failed only after the work."""
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".bpe-fast-", dir=folder))
    except OSError as exc:
        raise CliError(f"{given}: cannot make anything in {folder} ({exc.strerror or exc})") from None


def _not_a_folder(path: str) -> bool:
    """Whether `path`, a folder to write into, is something else already (a file, a link to one). A trailing '/'
    is not looked through: os.path.exists('notes.txt/') is False for a file notes.txt, so 'train -o notes.txt/'
    trained, then failed to make the folder ('File exists', naming no flag)."""
    name = path.rstrip("/" + os.sep) or path
    return os.path.exists(name) and not os.path.isdir(name)


def _check_no_folder_among(outputs: Sequence[str], given: str) -> None:
    """A CliError naming `given` (the flag and its folder) if one of the files to write in it is a folder already:
    found only when the files were written, after the work ('out/vocab.json: Is a directory')."""
    for output in outputs:
        if os.path.isdir(output):
            raise CliError(f"{given}: {output} is a folder; the output of that name cannot replace it")


def _check_not_an_input(output: str, flag: str, inputs: Sequence[str], kind: str = "an input") -> None:
    """A CliError if writing `output` would replace one of the files the command reads: the same directory entry
    by another path, or through a symbolic link (bpe_fast.atomic writes through it). (A hard link to an input is
    not: the output's own entry is replaced, the input keeps its contents.) Called before any work, as
    encode_files refuses an input among its outputs."""
    target = os.path.realpath(output)
    for path in inputs:
        source = os.path.realpath(path)
        try:        # the same entry: the same name in the same folder (reached by any path)
            same = (os.path.basename(target) == os.path.basename(source)
                    and os.path.samefile(os.path.dirname(target), os.path.dirname(source)))
        except OSError:                 # a folder is missing: an output not written yet replaces no input
            same = False
        if same:
            raise CliError(f"{path} is {kind} and would be overwritten by the output ({flag} {output}); "
                           f"choose another output")


def _input_files(corpus: Sequence[str]) -> list[str]:
    """The files CORPUS arguments name (a folder's, a glob's), as bpe_fast.inputs resolves them."""
    from .inputs import TextFile, resolve_inputs
    return [s.path if isinstance(s, TextFile) else s.obj for s in resolve_inputs(list(corpus))
            if isinstance(s, TextFile) or isinstance(s.obj, str)]


def _tokenizer_files(path: str) -> list[str]:
    """The files a tokenizer is read from: the tokenizer.json given, or the folder's (Tokenizer.load's, and the
    tokenizer.json _load_tokenizer reads from a folder export --hf-dir wrote: not from one holding bpe_fast.json,
    where 'export -t tok --hf tok/tokenizer.json', a tokenizer.json beside the files it was made from, was refused
    as overwriting an input it does not read)."""
    from .formats import CONFIG_FILE
    if not os.path.isdir(path):
        return [path]
    if os.path.exists(os.path.join(path, CONFIG_FILE)):
        return _tokenizer_files_in(path)
    return [*_tokenizer_files_in(path), os.path.join(path, "tokenizer.json")]


def _tokenizer_files_in(folder: str) -> list[str]:
    """The files of a tokenizer folder: what Tokenizer.load reads and Tokenizer.save writes (or removes)."""
    from .formats import CACHE_FILE, CONFIG_FILE, MERGES_FILE, VOCAB_FILE
    return [os.path.join(folder, name) for name in (VOCAB_FILE, MERGES_FILE, CONFIG_FILE, CACHE_FILE)]


def cmd_synth(args: argparse.Namespace) -> None:
    from .synthetic import generate, parse_size
    try:
        size = parse_size(args.size)
    except ValueError as exc:
        raise CliError(f"--size: {exc}") from None
    if args.seed < 0:
        raise CliError(f"--seed: must be a non-negative int, got {args.seed}")
    if args.style == "web" and args.seed >= 2 ** 64:
        raise CliError(f"--seed: the web style takes a seed below 2**64, got {args.seed}")
    to_stdout = args.output == "-"
    if not to_stdout:
        _check_output_folder(args.output)
        if os.path.isdir(args.output):
            raise CliError(f"-o {args.output}: is a folder; give the file to write (CORPUS.txt)")
        _check_free_space(args.output, size, args.size)
    if to_stdout:           # what went stays there ("no output written" was said after hundreds of MB; helper-146)
        args.on_interrupt = "stdout holds the corpus written so far, cut short"
    start = time.perf_counter()
    out = cast("IO[bytes]", _Stdout()) if to_stdout else args.output      # generate only calls write()
    generate(out, size, seed=args.seed, style=args.style)
    took = time.perf_counter() - start
    _say(args, f"wrote {_plural(size, 'byte')} to {'stdout' if to_stdout else args.output} in {took:.2f} s")


def _check_free_space(output: str, size: int, given: str) -> None:
    """A CliError naming --size when a corpus of `size` bytes cannot fit where synth writes it: its temporary
    file beside the target (through a symbolic link: beside the file it points to). `--size 100000TB` wrote
    until the disk was full (minutes, every other program on it failing too), then failed. An output that is
    not a regular file (/dev/null, a named pipe) is written to as it is, and not measured: asked of the path
    given, as _encode_one asks it (/dev/stdout or >(cmd)'s /dev/fd/N to a pipe is really /proc/PID/fd/pipe:[N], a
    name no folder holds: 'more than the 0 bytes free in /proc/PID/fd')."""
    if os.path.exists(output) and not os.path.isfile(output):
        return
    target = os.path.realpath(output)
    folder = os.path.dirname(target)
    try:
        free = shutil.disk_usage(folder).free
    except OSError:         # nothing to measure: the writing says what is wrong
        return
    if size > free:
        raise CliError(f"--size {given}: {size:,} bytes, more than the {free:,} bytes free in {folder}")


def _dask_client(address: str) -> Any:
    """A dask.distributed Client of the scheduler at `address`; a CliError naming --dask-scheduler when it cannot
    be reached or the address is malformed."""
    try:
        from distributed import Client
    except ImportError:
        raise CliError("--dask-scheduler needs dask.distributed: pip install 'bpe_fast[dask]'") from None
    try:
        return Client(address)
    except (OSError, ValueError, TypeError) as exc:     # (asyncio's and the builtin TimeoutError are OSErrors)
        raise CliError(f"--dask-scheduler {address}: {_describe(exc)}") from None


def _dask_flag(message: str) -> str:
    """A message of count_pretokens or encode_files about their Dask client, naming --dask-scheduler: "(count it
    without client=)" told the command line's user of a keyword argument they never gave."""
    return message.replace("with a Dask client", "with --dask-scheduler").replace("without client=",
                                                                                  "without --dask-scheduler")


def _input_options(args: argparse.Namespace) -> dict[str, Any]:
    """count_pretokens' / train_bpe's input keywords from the command line."""
    from .synthetic import parse_size
    max_bytes = None
    if args.max_bytes is not None:
        try:
            max_bytes = parse_size(args.max_bytes)
        except ValueError as exc:
            raise CliError(f"--max-bytes: {exc}") from None
    return dict(max_bytes=max_bytes, max_documents=args.max_documents, text_field=args.text_field,
                text_column=args.text_column)


def _corpus(args: argparse.Namespace) -> Stream | list[str]:
    """The CORPUS arguments as one input: "-" alone reads the text from stdin."""
    from .inputs import Stream
    if args.corpus == ["-"]:
        return Stream("text", _stdin(), "<stdin>")
    if "-" in args.corpus:
        raise CliError("'-' (stdin) must be the only CORPUS")
    return list(args.corpus)


def _special_tokens(tokens: list[str]) -> list[str]:
    """The --special-token values, checked (an empty one, the same twice): a CliError naming the flag."""
    from .specials import SpecialTokens
    try:
        return list(SpecialTokens(tokens))
    except ValueError as exc:
        raise CliError(f"--special-token: {exc}") from None


def cmd_count(args: argparse.Namespace) -> None:
    from .counts import count_pretokens
    # a special token whose bytes are one byte's is refused as train refuses it (the counts were made, then
    # training from them failed)
    _check_special_bytes(_special_tokens(args.special_token), None, "--special-token")
    _check_output_folder(args.output)
    if os.path.isdir(args.output):      # before the counting, not when saving its result
        raise CliError(f"-o {args.output}: is a folder; give the counts file to write (COUNTS.npz)")
    corpus = _corpus(args)
    if isinstance(corpus, list):
        _check_not_an_input(args.output, "-o", _input_files(corpus))
    options = _input_options(args)
    client = None
    if args.dask_scheduler:
        for flag, value in (("--max-bytes", args.max_bytes), ("--max-documents", args.max_documents)):
            if value is not None:       # (before connecting; count_pretokens would name its keywords)
                raise CliError(f"{flag} is not supported with --dask-scheduler (the cluster counts whole files)")
        client = _dask_client(args.dask_scheduler)
    progress = Progress(quiet=args.quiet)
    try:
        counts = count_pretokens(corpus, args.special_token, pattern=_pattern("gpt2" if args.pattern is None else args.pattern),
                                 num_processes=args.processes, errors=args.errors, progress=progress,
                                 client=client, **options)
    except ValueError as exc:       # stdin, a .gz or a .jsonl on the cluster: "(count it without client=)"
        if client is None or "client=" not in str(exc):
            raise
        raise CliError(_dask_flag(str(exc))) from None
    finally:
        progress.close()
        if client is not None:
            client.close()
    counts.save(args.output)
    _say(args, f"{len(counts):,} distinct pre-tokens, {counts.total():,} in all -> {args.output}")


def _summary(tokenizer: Tokenizer, merges: Sequence[tuple[bytes, bytes]], took: float, corpus: str | None) -> str:
    """Time, vocab size, longest tokens, and bytes per token on a sample of the corpus (a plain text file)."""
    lines = [f"trained in {took:.2f} s: {tokenizer.vocab_size} tokens ({len(merges)} merges)"]
    # the longest, those of one length in the order training made them (a set's order changed from run to run)
    longest = sorted(dict.fromkeys(a + b for a, b in merges), key=len, reverse=True)[:5]
    if longest:
        lines.append("longest tokens: " + ", ".join(map(_token_shown, longest)))
    if corpus:
        with open(corpus, "rb") as f:
            sample = f.read(1 << 20).decode("utf-8", "replace")
        n = len(tokenizer.encode(sample))
        if n:
            lines.append(f"bytes per token on the first {_human_bytes(len(sample.encode()))} of {corpus}: "
                         f"{len(sample.encode()) / n:.2f}")
    return "\n".join(lines)


def _token_shown(token: bytes, most: int = 40) -> str:
    """A token for the summary: its text, cut to `most` characters with its length in bytes when longer (a
    corpus of one character repeated makes tokens of megabytes)."""
    text = token.decode("utf-8", "replace")
    if len(text) <= most:
        return repr(text)
    return f"{text[:most]!r}... ({len(token):,} bytes)"


def _first_text_file(corpus: Stream | list[str], text_field: str) -> str | None:
    """The first CORPUS if it is a plain text file (for the summary's sample), else None."""
    from .inputs import TextFile, resolve_inputs
    if not isinstance(corpus, list) or not corpus:
        return None
    first = resolve_inputs(corpus[0], text_field)[0]
    return first.path if isinstance(first, TextFile) else None


def _load_counts(paths: Sequence[str]) -> PretokenCounts:
    from .counts import PretokenCounts
    shards: list[PretokenCounts] = []
    for path in paths:              # shards add up; each must match the first
        shard = PretokenCounts.load(path)
        if shards:
            try:
                shards[0].check_compatible(shard)
            except ValueError as exc:
                raise CliError(f"{path}: {exc} ({paths[0]} is the first)") from None
        shards.append(shard)
    if len(shards) == 1:
        return shards[0]
    try:
        return PretokenCounts.merge(shards)
    except ValueError as exc:       # a pre-token's counts add up to more than int64 holds
        raise CliError(f"{_counts_files(paths)}: {exc}") from None


def _counts_files(paths: Sequence[str]) -> str:
    """The --from-counts files, for an error about their counts together."""
    return ", ".join(paths) if len(paths) <= 3 else f"{paths[0]} and {len(paths) - 1} more counts files"


def _check_counts_match(args: argparse.Namespace, counts: PretokenCounts, specials: list[str],
                        initial: Tokenizer | None) -> None:
    """A CliError naming the counts files (and the --continue-from folder) when the counts were made with other
    special tokens than the tokenizer is to have, or with another pattern than the one continued:
    train_from_counts refuses them naming neither."""
    where = _counts_files(args.from_counts)
    if set(counts.special_tokens) != set(specials):
        if initial is None:
            given, hint = "--special-token", "leave --special-token out to use theirs"
        else:
            given = f"the special tokens of {args.continue_from}" + (" and --special-token" if args.special_token
                                                                      else "")
            hint = "count the corpus with those (bpe-fast count --special-token ...)"
        raise CliError(f"{where}: the counts were made with special tokens {list(counts.special_tokens)}, not "
                       f"{specials} ({given}); {hint}")
    if initial is not None and counts.pattern != initial.pattern:
        raise CliError(f"{where}: the counts were made with the pattern {counts.pattern!r}, but the pattern of "
                       f"{args.continue_from} is {initial.pattern!r}; count the corpus with that pattern")


def cmd_train(args: argparse.Namespace) -> None:
    from .tokenizer import Tokenizer
    from .train import check_train_options, train_bpe, train_from_counts
    specials = _special_tokens(args.special_token)
    initial = _load_tokenizer(args.continue_from, "--continue-from") if args.continue_from else None
    options = dict(min_frequency=args.min_frequency, max_token_length=args.max_token_length,
                   special_tokens_position=args.special_tokens_position,
                   pad_vocab_to_multiple_of=args.pad_vocab_to_multiple_of, initial=initial)
    try:
        check_train_options(**options)
    except ValueError as exc:       # the initial tokenizer's (the others are checked by argparse)
        raise CliError(f"--continue-from {args.continue_from}: {str(exc).removeprefix('initial: ')}") from None
    if initial is not None:
        specials = list(initial.special_tokens) + [t for t in specials if t not in initial.special_tokens]
        if args.pattern is not None and _pattern(args.pattern) != initial.pattern:
            from .patterns import shown_pattern
            raise CliError(f"--pattern {args.pattern}: not the pattern of --continue-from {args.continue_from} "
                           f"({shown_pattern(initial.pattern)}); leave --pattern out to continue with it")
    _check_special_bytes(specials, initial, "--special-token")
    _check_vocab_size(args.vocab_size, specials, initial)
    if args.output == "-":
        raise CliError("-o -: a tokenizer is a folder of files, not written to stdout; give a folder")
    if _not_a_folder(args.output):
        raise CliError(f"-o {args.output}: exists and is not a folder; give the folder to save the tokenizer in")
    _check_creatable(args.output)
    # the tokenizer's files replace whatever has their names in -o: refused if that is the corpus, the counts or the
    # tokenizer continued (a corpus saved as DIR/merges.txt was trained on, then overwritten by the merges)
    inputs = list(args.from_counts or []) + (_input_files(args.corpus) if args.corpus and "-" not in args.corpus
                                             else [])
    if args.continue_from:      # the tokenizer extended is an input too: replaced by its extension, it was lost
        inputs += _tokenizer_files(args.continue_from)
    for output in _tokenizer_files_in(args.output):
        _check_not_an_input(output, "-o", inputs)
    _check_no_folder_among(_tokenizer_files_in(args.output), f"-o {args.output}")
    if args.from_counts:
        given = [flag for flag, value, default in (("--max-bytes", args.max_bytes, None),
                                                   ("--max-documents", args.max_documents, None),
                                                   ("--text-field", args.text_field, "text"),
                                                   ("--text-column", args.text_column, "text"),
                                                   ("--errors", args.errors, "strict")) if value != default]
        if given:
            raise CliError(f"{', '.join(given)}: for reading CORPUS inputs; --from-counts reads counts made "
                           f"already (give them to `bpe-fast count`)")
    progress = Progress(quiet=args.quiet)
    start = time.perf_counter()
    try:
        if args.from_counts:
            if args.corpus:
                raise CliError("give CORPUS files or --from-counts, not both")
            counts = _load_counts(args.from_counts)
            if args.pattern is not None and _pattern(args.pattern) != counts.pattern:
                raise CliError(f"--pattern {args.pattern} differs from the pattern the counts were made with "
                               f"({counts.pattern!r}); leave --pattern out to use theirs")
            pattern = counts.pattern
            if not args.special_token and (initial is None or set(specials) <= set(counts.special_tokens)):
                # the counts' special tokens; continuing, the tokenizer's then the counts' others, as train_from_counts
                # takes them (counts with one more were refused: "count the corpus with those", which they were)
                specials += [t for t in counts.special_tokens if t not in specials]
                _check_special_bytes(specials, initial, f"{args.from_counts[0]}: the counts' special token")
                _check_vocab_size(args.vocab_size, specials, initial)     # with the counts' special tokens
            _check_counts_match(args, counts, specials, initial)
            try:
                result = train_from_counts(counts, args.vocab_size, specials, progress=progress, **options)
            except ValueError as exc:   # the options are checked: the tokenizer continued, or the counts (too large)
                message = str(exc)
                if message.startswith("initial: "):
                    raise CliError(f"--continue-from {args.continue_from}: {message.removeprefix('initial: ')}") \
                        from None
                raise CliError(f"{_counts_files(args.from_counts)}: {message}") from None
        else:
            if not args.corpus:
                raise CliError("give a CORPUS or --from-counts")
            pattern = _pattern(args.pattern) if args.pattern is not None else (initial.pattern if initial else _pattern("gpt2"))
            result = train_bpe(_corpus(args), args.vocab_size, specials, num_processes=args.processes,
                               pattern=pattern, errors=args.errors, progress=progress,
                               **_input_options(args), **options)
    finally:
        progress.close()
    took = time.perf_counter() - start
    vocab, merges = result
    # each merge's pair count and the corpus statistics go into bpe_fast.json (bpe-fast report reads them)
    tokenizer = Tokenizer(vocab, merges, special_tokens=specials, pattern=pattern, training=result.training)
    # the summary's sample: the corpus's first text file, listed before the tokenizer's files are saved (into the
    # corpus's folder, say: its bpe_fast.json was the first file of the folder then)
    sample = _first_text_file(_corpus(args), args.text_field) if args.corpus else None
    _save_dir_atomic(tokenizer, args.output)
    args.on_interrupt = f"the tokenizer was saved to {args.output} before"     # stopped in the summary (encoding)
    if not args.quiet:          # (the summary encodes a sample of the corpus: not done under -q)
        _say(args, _summary(tokenizer, merges, took, sample))
    _say(args, f"saved to {args.output}")


def _check_vocab_size(vocab_size: int, specials: list[str], initial: Tokenizer | None) -> None:
    """train.check_vocab_size, its "vocab_size must be at least ..." naming the flag, not the keyword."""
    from .train import check_vocab_size
    try:
        check_vocab_size(vocab_size, specials, initial)
    except ValueError as exc:
        raise CliError(str(exc).replace("vocab_size", "--vocab-size", 1)) from None


def _check_special_bytes(specials: list[str], initial: Tokenizer | None, given: str) -> None:
    """A CliError, before training, for a new special token whose bytes are another token's: a single byte
    (--special-token X), or a token of the --continue-from tokenizer (bpe_fast.train.special_token_clash). Training
    made the vocabulary, then saving it failed ('ids 88 and 256 have the same bytes b'X'; vocab.json cannot hold
    both'), naming no flag."""
    from .train import special_token_clash

    clash = special_token_clash(specials, initial, single_bytes=True)
    if clash is not None:
        token, found = clash
        raise CliError(f"{given} {token!r}: its bytes are token {found}'s already (a "
                       f"{'single byte' if len(token.encode('utf-8')) == 1 else 'token of the tokenizer continued'}); "
                       f"a tokenizer folder (vocab.json) cannot hold a special token with another token's bytes: "
                       f"choose another (e.g. '<|{token.strip() or 'sep'}|>')")


def _check_creatable(directory: str, flag: str = "-o") -> None:
    """A CliError naming the flag unless files can be made in the output folder `directory`: in it when it
    exists, else in its nearest existing ancestor, which must be a folder (the folders between are made when the
    files are written, as Tokenizer.save and encode_files make them)."""
    ancestor = os.path.realpath(directory)       # a link to a folder still to be made is written through
    _check_names_fit(ancestor, f"{flag} {directory}")
    while not os.path.exists(ancestor):
        ancestor = os.path.dirname(ancestor)
    if not os.path.isdir(ancestor):
        raise CliError(f"{flag} {directory}: {ancestor} is not a folder")
    _check_can_make_in(ancestor, f"{flag} {directory}")


def _save_dir_atomic(tokenizer: Tokenizer, directory: str) -> None:
    """Tokenizer.save: each file written beside its target in `directory` (made if missing) and all renamed
    together once written, so no half-written tokenizer (files staged in a sibling folder and moved in failed
    when `directory` is on another file system: a mount point, a link to another disk)."""
    missing, folder = [], os.path.realpath(directory)     # through a link to a folder still to be made
    while not os.path.lexists(folder):          # the folders made here, removed again if the saving fails
        missing.append(folder)
        folder = os.path.dirname(folder)
    try:
        os.makedirs(os.path.realpath(directory), exist_ok=True)
    except OSError as exc:
        raise CliError(f"-o {directory}: cannot write there ({exc.strerror or exc})") from None
    try:
        tokenizer.save(directory)
    except BaseException:
        for folder in missing:                  # the deepest first; one holding something else stays
            with contextlib.suppress(OSError):
                os.rmdir(folder)
        raise


def cmd_encode(args: argparse.Namespace) -> None:
    inputs, output = args.input, args.output
    if "-" in inputs and inputs != ["-"]:
        raise CliError("'-' (stdin) must be the only INPUT")
    to_folder = len(inputs) > 1 or output.endswith(("/", os.sep)) or os.path.isdir(output)
    if to_folder and inputs == ["-"]:
        raise CliError(f"-o {output}: '-' (stdin) is encoded to a .npy file or to stdout (-o -), not into a folder")
    if to_folder and output == "-":
        raise CliError("-o -: several inputs are encoded into a folder, not to stdout")
    if to_folder and _not_a_folder(output):
        raise CliError(f"-o {output}: is a file; several inputs (or -o ending with /) are encoded into a folder, "
                       f"one .npy a shard: give a folder")
    if to_folder:       # (before the tokenizer is loaded: os.makedirs's "No such file or directory" named no flag)
        _check_creatable(output)
    if not to_folder and args.dask_scheduler:
        raise CliError("--dask-scheduler encodes shards into a folder: give -o DIR/")
    if output == "-" and _stdout().isatty():     # (gzip refuses too: binary bytes work as escape sequences there)
        raise CliError("-o -: stdout is a terminal, and the tokens are a binary .npy; redirect it (> tokens.npy) "
                       "or give -o FILE")
    if output != "-" and not to_folder:         # (encode_files refuses an input among a folder's outputs)
        _check_output_folder(output)
        _check_not_an_input(output, "-o", (_input_files(inputs) if inputs != ["-"] else [])
                            + _tokenizer_files(args.tokenizer))
    tokenizer = _load_tokenizer(args.tokenizer)
    if args.ordinary:       # a view matching no special token (shards' index.json records it as having none)
        tokenizer = tokenizer.restricted_to(frozenset())
    from .file_encoding import check_dtype
    try:
        check_dtype(args.dtype, tokenizer.vocab_size)
    except ValueError as exc:       # "a vocabulary of N tokens does not fit in uint16"
        raise CliError(f"--dtype {args.dtype}: {exc}") from None
    progress = Progress(quiet=args.quiet)
    start = time.perf_counter()
    try:
        if to_folder:
            # stopped, a folder encode keeps its finished shards (index.json lists them), for the same command
            args.on_interrupt = f"the shards finished stay in {output} (the same command resumes)"
            n, size = _encode_shards(tokenizer, inputs, output, args, progress)
        elif inputs == ["-"]:
            data = _read_all(_stdin())
            n, size = _encode_bytes_to(tokenizer, data, output, args), len(data)
        else:
            n, size = _encode_one(tokenizer, inputs[0], output, args, progress)
    finally:
        progress.close()
    took = time.perf_counter() - start
    where = "stdout" if output == "-" else output
    _say(args, f"{n:,} tokens from {_human_bytes(size)} in {took:.2f} s ({_human_bytes(size / max(took, 1e-9))}/s)"
               f" -> {where}")


def _encode_one(tokenizer: Tokenizer, path: str, output: str, args: argparse.Namespace,
                progress: Progress) -> tuple[int, int]:
    """One input to one .npy (or stdout): plain text by encode_file, other kinds as a one-shard folder."""
    from .file_encoding import encode_text_file
    from .inputs import TextFile, plain_pipe, resolve_inputs
    sources = resolve_inputs(path, args.text_field)
    if len(sources) != 1:
        raise CliError(f"{path}: holds {len(sources)} files; give -o DIR/ to encode them into a folder")
    # a pipe (<(cmd), /dev/stdin: a text Stream of a path that is not a file) cannot be cut into byte ranges
    # (encode_file seeks): read whole, as stdin is; one named as compressed (x.gz) goes as a folder, decompressed
    source = sources[0]
    piped = plain_pipe(source)
    if output == "-" or piped:
        readable = source.path if isinstance(source, TextFile) else piped
        if readable is None:
            raise CliError(f"-o -: only a plain text file (or stdin) is encoded to stdout; {path} is not one")
        with open(readable, "rb") as f:
            data = _read_all(f)
        return _encode_bytes_to(tokenizer, data, output, args, name=path), len(data)
    if isinstance(sources[0], TextFile):        # (path may be a folder or a glob naming this one file)
        # (encode_text_file: the file is text as resolved with --text-field; encode_file would sniff it with "text")
        n = encode_text_file(tokenizer, sources[0].path, output, num_processes=args.processes, dtype=args.dtype,
                             errors=args.errors, progress=progress)
        return n, os.path.getsize(sources[0].path)
    # encoded as a one-shard folder beside the output's file (through a symbolic link: beside the file it points
    # to), whose .npy is renamed over it; an output that is not a regular file (/dev/null, a named pipe) cannot
    # be replaced: the .npy, made in a temporary folder, is copied into it (as atomic_output writes to it)
    target = os.path.realpath(output)
    # (asked of the path given: /dev/stdout to a pipe is really /proc/PID/fd/pipe:[N], a name no folder holds)
    regular = not os.path.exists(output) or os.path.isfile(output)
    folder = tempfile.mkdtemp(prefix=".bpe-fast-", dir=os.path.dirname(target) if regular else None)
    try:
        n, size = _encode_shards(tokenizer, [path], folder, args, progress)
        made = os.path.join(folder, next(name for name in os.listdir(folder) if name.endswith(".npy")))
        if regular:
            os.replace(made, target)
        else:
            from .atomic import atomic_output
            with open(made, "rb") as src, atomic_output(output) as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
        return n, size
    finally:
        shutil.rmtree(folder, ignore_errors=True)


_SETTING = r"(?:tokenizer|separator|text_field|text_column)"
# shards.encode_files' "DIR holds shards encoded with another text_field and text_column (DIR/index.json); ..."
_OTHER_SETTINGS = re.compile(rf" holds shards encoded with another ({_SETTING}(?: and {_SETTING})*) \(")


def _encode_shards(tokenizer: Tokenizer, inputs: list[str], folder: str, args: argparse.Namespace,
                   progress: Progress) -> tuple[int, int]:
    from .shards import encode_files
    client = None
    if args.dask_scheduler:
        client = _dask_client(args.dask_scheduler)
    try:
        index = encode_files(inputs, folder, tokenizer, client=client, num_processes=args.processes,
                             dtype=args.dtype, errors=args.errors, text_field=args.text_field,
                             text_column=args.text_column, progress=progress)
    except ValueError as exc:   # "DIR holds shards encoded with another text_field": the flags, not the keywords
        # (the settings named, not the text before them: a folder named 'run (2)' holds a ' (' of its own)
        message = str(exc)
        if message.endswith("; choose another out_dir"):        # an input among the outputs
            raise CliError(message.removesuffix("out_dir") + "-o") from None
        if client is not None and message.endswith("without client="):    # a pipe given to the cluster
            raise CliError(_dask_flag(message)) from None
        found = _OTHER_SETTINGS.search(message)
        if found is None:
            raise
        what = found.group(1).replace("text_field", "--text-field").replace("text_column", "--text-column")
        raise CliError(message[:found.start(1)] + what + message[found.end(1):]) from None
    finally:
        if client is not None:
            client.close()
    size = sum(os.path.getsize(s["path"]) for s in index["shards"] if os.path.exists(s["path"]))
    return index["tokens"], size


def _encode_bytes_to(tokenizer: Tokenizer, data: bytes | bytearray, output: str, args: argparse.Namespace,
                     name: str = "<stdin>") -> int:
    """Encode UTF-8 bytes held in memory; write the .npy to output (a path, atomically, or "-": stdout)."""
    import numpy as np
    from .atomic import atomic_output
    from .file_encoding import check_dtype
    from .inputs import CorpusDecodeError
    try:
        text = data.decode("utf-8", args.errors)
    except UnicodeDecodeError as exc:
        raise CorpusDecodeError(name, exc.start, exc.reason, data.count(b"\n", 0, exc.start) + 1) from None
    ids = np.asarray(tokenizer.encode(text, allowed_special="all"),
                     dtype=check_dtype(args.dtype, tokenizer.vocab_size))
    if output == "-":
        held = io.BytesIO()                 # numpy writes a real file with fwrite, whose EPIPE it loses
        np.save(held, ids, allow_pickle=False)
        _Stdout().write(held.getbuffer())
    else:
        with atomic_output(output) as f:
            np.save(f, ids, allow_pickle=False)
    return len(ids)


def cmd_decode(args: argparse.Namespace) -> None:
    import numpy as np
    from .file_encoding import read_npy_dtype
    from .formats import write_text_atomic
    if args.output != "-":
        _check_output_folder(args.output)
        if os.path.isdir(args.output):      # before the decoding, not when the text is written
            raise CliError(f"-o {args.output}: is a folder; give the text file to write (OUTPUT.txt)")
        _check_not_an_input(args.output, "-o", ([args.tokens] if args.tokens != "-" else [])
                            + _tokenizer_files(args.tokenizer))
    tokenizer = _load_tokenizer(args.tokenizer)
    source = args.tokens
    if source == "-":
        source = io.BytesIO(_read_npy_stream(_stdin()))
        args.tokens = "<stdin>"
    elif not os.path.isfile(source):
        if not os.path.exists(source) or os.path.isdir(source):
            raise CliError(f"{source}: {_not_a_file(source)}")
        with open(source, "rb") as f:       # a pipe (<(cmd)): read, as stdin, to the end of the array it holds
            source = io.BytesIO(_read_npy_stream(f))
    try:
        dtype, shape = read_npy_dtype(source)
    except ValueError as exc:       # not a .npy file, a damaged header, or a truncated file: read_npy_dtype says
        raise CliError(f"{args.tokens}: {exc}") from None
    if dtype.kind not in "iu" or len(shape) != 1:
        raise CliError(f"{args.tokens}: expected a 1-D integer token array, got {dtype} of shape {shape}")
    if isinstance(source, io.BytesIO):
        source.seek(0)
        ids = np.load(source, allow_pickle=False)
    else:
        # read, not mapped: a file truncated in place while it was decoded ended the process with SIGBUS, saying
        # nothing (the ids take less memory than the text decoded from them)
        try:
            ids = np.load(source, allow_pickle=False)
        except (ValueError, EOFError) as exc:      # "Failed to read all data for array": shorter than just now
            raise CliError(f"{args.tokens}: changed while it was read ({exc})") from None
    try:
        text = tokenizer.decode(ids)
    except ValueError as exc:           # an id the vocabulary does not have: name the file
        raise CliError(f"{args.tokens}: {exc}") from None
    if args.output == "-":
        _Stdout().write(text.encode("utf-8", "surrogatepass"))
    else:
        write_text_atomic(args.output, text)
    _say(args, f"decoded {len(ids):,} tokens -> {'stdout' if args.output == '-' else args.output}")


def cmd_export(args: argparse.Namespace) -> None:
    from .export import HF_FILES
    target = args.hf or args.hf_dir or args.tiktoken
    flag = "--hf" if args.hf else "--hf-dir" if args.hf_dir else "--tiktoken"
    if args.hf_dir:
        _check_not_stdout(target, flag, file=False)
    else:
        _check_output_folder(target, flag)
    if args.hf_dir and _not_a_folder(target):
        raise CliError(f"--hf-dir {target}: exists and is not a folder; give the folder to write the files into")
    if args.hf_dir:         # missing folders on the way are made (export_hf_dir), as train -o makes them
        _check_creatable(target, "--hf-dir")
    if not args.hf_dir and os.path.isdir(target):
        raise CliError(f"{flag} {target}: is a folder; give the file to write "
                       f"({'tokenizer.json' if args.hf else 'FILE.tiktoken'})")
    if args.eos_token is not None and not args.hf_dir:
        raise CliError(f"--eos-token: only --hf-dir writes an eos_token (transformers' files), not {flag}")
    for output in [os.path.join(target, name) for name in HF_FILES] if args.hf_dir else [target]:
        _check_not_an_input(output, flag, _tokenizer_files(args.tokenizer))
    if args.hf_dir:
        _check_no_folder_among([os.path.join(target, name) for name in HF_FILES], f"--hf-dir {target}")
    tokenizer = _load_tokenizer(args.tokenizer)
    if args.eos_token is not None and args.eos_token not in tokenizer.special_tokens:
        raise CliError(f"--eos-token {args.eos_token!r}: not one of the special tokens of {args.tokenizer} "
                       f"({list(tokenizer.special_tokens)})")
    if args.hf:
        tokenizer.export_hf(args.hf)
    elif args.hf_dir:
        tokenizer.export_hf_dir(args.hf_dir, eos_token=args.eos_token)
    else:
        tokenizer.export_tiktoken(args.tiktoken)
    _say(args, f"exported -> {target}")


def _show_text(args: argparse.Namespace) -> tuple[str, str]:
    """show's text and its name: TEXT, or the file of -f (- for stdin) decoded as UTF-8 (--errors)."""
    from .inputs import CorpusDecodeError
    if (args.text is None) == (args.file is None):
        raise CliError("give the TEXT or -f FILE (one of them)")
    data: bytes | bytearray
    if args.text is not None:       # its bytes, as the command line gave them (undecodable ones: surrogate escapes,
        try:                        # which became U+FFFD without a word where -f FILE's are an error)
            data, name = os.fsencode(args.text), "the text"
        except UnicodeEncodeError:  # a lone surrogate given from Python (main([...])): refused the same way
            data, name = args.text.encode("utf-8", "surrogatepass"), "the text"
    elif args.file == "-":
        data, name = _read_all(_stdin()), "<stdin>"
    else:
        if not os.path.exists(args.file) or os.path.isdir(args.file):     # (a pipe, <(cmd), is read as it comes)
            raise CliError(f"-f {args.file}: {_not_a_file(args.file)}")
        with open(args.file, "rb") as f:
            data, name = _read_all(f), args.file
    try:
        return data.decode("utf-8", args.errors), name
    except UnicodeDecodeError as exc:
        raise CorpusDecodeError(name, exc.start, exc.reason, data.count(b"\n", 0, exc.start) + 1) from None


def cmd_show(args: argparse.Namespace) -> None:
    from .atomic import atomic_output
    from .token_view import render_ansi, render_html, render_plain, split_positions
    if args.html and args.plain:      # (the page has its colours: --plain was dropped without a word)
        raise CliError("--plain: the terminal's view without colours; --html writes a page, with its colours: give "
                       "one of them")
    if args.html:
        _check_output_folder(args.html, "--html")
        if os.path.isdir(args.html):
            raise CliError(f"--html {args.html}: is a folder; give the page to write (OUT.html)")
        _check_not_an_input(args.html, "--html", ([args.file] if args.file not in (None, "-") else [])
                            + _tokenizer_files(args.tokenizer))
    tokenizer = _load_tokenizer(args.tokenizer)
    text, name = _show_text(args)
    view = tokenizer.show(text)
    vocab, special_ids = tokenizer.vocab, frozenset(tokenizer.special_tokens.values())
    # a special token's piece is the text it matched (token_view), not always its id's bytes (o200k_harmony)
    size = sum(len(piece.encode("utf-8")) if i in special_ids else len(vocab[i])
               for piece, i in zip(view.pieces, view.ids))
    summary = f"{_plural(len(view.ids), 'token')}, {_plural(size, 'byte')}"
    if view.ids:
        summary += f", {size / len(view.ids):.2f} bytes per token"
    options = dict(ids=args.ids, split=split_positions(view, tokenizer),
                   special_ids=special_ids)
    if args.html:
        page = render_html(view, title=f"{name} in tokens of {args.tokenizer}", summary=summary, **options)
        with atomic_output(args.html) as f:
            f.write(page.encode("utf-8", "backslashreplace"))     # a file name not UTF-8: \udcff, not an error
        _say(args, f"{summary} -> {args.html}")
        return
    colour = not args.plain and _stdout().isatty() and not os.environ.get("NO_COLOR")
    out = render_ansi(view, **options) if colour else render_plain(view, ids=args.ids)
    _Stdout().write(out.encode("utf-8"))
    _say(args, summary)


def _say(args: argparse.Namespace, line: str) -> None:
    """A command's summary line, on stderr; -q leaves only warnings and errors there."""
    if not args.quiet:
        print(line, file=sys.stderr)


def _plural(n: int, noun: str) -> str:
    """ "1 token", "2 tokens", "1,000 tokens"."""
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def _tokenizer_name(path: str) -> str:
    return os.path.basename(os.path.normpath(path)) or path


def _not_a_file(path: str) -> str:
    """Why `path`, which is not a regular file, cannot be read as one."""
    if os.path.isdir(path):
        return "is a folder, not a file"
    return "is not a regular file" if os.path.exists(path) else "no such file"


def cmd_report(args: argparse.Namespace) -> None:
    import pathlib
    from .html_report import write_report
    for path in args.eval:      # read as the other commands read their inputs (bpe_fast.inputs), folders and globs too
        if path == "-":
            raise CliError("--eval -: report reads its evaluation text from files (each is read twice), not stdin; "
                           "give a file")
        if not (os.path.isfile(path) or os.path.isdir(path) or not os.path.exists(path) and glob.has_magic(path)):
            raise CliError(f"--eval {path}: {_not_a_file(path)}")   # (not a pipe: read once a tokenizer)
    _check_output_folder(args.output)
    if os.path.isdir(args.output):      # before the text is encoded, not when the page is written
        raise CliError(f"-o {args.output}: is a folder; give the page to write (REPORT.html)")
    inputs = (_input_files(args.eval) + _tokenizer_files(args.tokenizer)
              + (_tokenizer_files(args.against) if args.against else []))
    _check_not_an_input(args.output, "-o", inputs)
    tokenizer = _load_tokenizer(args.tokenizer)
    against = _load_tokenizer(args.against, "--against") if args.against else None
    if args.png == "-":               # a folder named '-' was written, where '-' is stdout for encode, decode, synth
        raise CliError("--png -: the charts are files in a folder, not written to stdout; give a folder name "
                       "(./- for one named -)")
    if args.png and os.path.realpath(args.png) == os.path.realpath(args.output):
        raise CliError(f"--png {args.png}: is -o {args.output} too; give the charts a folder of their own")
    if args.png and _not_a_folder(args.png):    # before the report is written
        raise CliError(f"--png {args.png}: exists and is not a folder; give the folder to write the charts into")
    if args.png:
        from .html_report import png_names
        charts = [os.path.join(args.png, name) for name in png_names(bool(args.against))]
        _check_no_folder_among(charts, f"--png {args.png}")
        for chart in charts:            # a chart replaced an --eval file or the page itself, and the run said done
            _check_not_an_input(chart, "--png", inputs)
            _check_not_an_input(chart, "--png", [args.output], "the report (-o)")
    if args.png:                        # a folder to make (the charts are made after the report's work)
        _check_creatable(args.png, "--png")
    if args.png:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise CliError("--png needs matplotlib: pip install 'bpe_fast[report]' (or matplotlib)") from None
    names: list[Any] = [_tokenizer_name(args.tokenizer), _tokenizer_name(args.against) if args.against else None]
    if names[0] == names[1]:
        names = [args.tokenizer, args.against]
    start = time.perf_counter()
    result = write_report(tokenizer, [pathlib.Path(p) for p in args.eval], args.output, name=names[0],
                          against=against, against_name=names[1] or "against", png_dir=args.png, errors=args.errors,
                          text_field=args.text_field, text_column=args.text_column)
    took = time.perf_counter() - start
    for name, size, bpt, tpw in zip(result["names"], result["full_sizes"], result["bytes_per_token"],
                                    result["tokens_per_word"]):
        per_word = f"{tpw:.3f} tokens per word" if math.isfinite(tpw) else "no words"   # NaN: no words in --eval
        _say(args, f"{name}: {bpt:.3f} bytes per token, {per_word} at {size:,} tokens")
    for note in result["notes"]:            # (the report holds them too)
        _say(args, f"note: {note}")
    pngs = f" and {len(result['pngs'])} PNG charts in {args.png}" if result["pngs"] else ""
    _say(args, f"report on {_human_bytes(result['bytes'])} of text in {took:.2f} s -> {args.output}{pngs}")


# ---- argument parsing --------------------------------------------------------------------------

def _int_at_least(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """An argparse type: an int >= minimum (and <= maximum)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}: {value}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum}: {value}")
        return value
    return parse


_positive_int = _int_at_least(1)
_num_processes = _int_at_least(1, MAX_PROCESSES)
_non_negative_int = _int_at_least(0)


_TOKENIZER_HELP = ("a folder written by train (or Tokenizer.save), an HF tokenizer.json or a folder holding one "
                   "(export --hf-dir's, save_pretrained's), or an encoding's name (cl100k_base, o200k_base, gpt2, "
                   "...: its ranks read from this machine, see bpe_fast.get_encoding)")


class _Parser(argparse.ArgumentParser):
    """argparse's parser (its subcommands' too), but --help and --version that cannot be written to stdout (a full
    disk, a closed pipe) exit 1 saying so: argparse ignores the error and exits 0."""

    def _print_message(self, message: str, file: Any = None) -> None:
        if file is None and sys.stdout is None and message:     # started with stdout closed (`>&-`): argparse
            print("bpe-fast: stdout is closed, there is nowhere to write", file=sys.stderr)    # wrote to stderr
            raise SystemExit(1)
        if file is None or file is not sys.stdout or not message:
            super()._print_message(message, file)
            return
        try:
            file.write(message)
            file.flush()
        except OSError as exc:
            _drop_stdout()
            if isinstance(exc, BrokenPipeError):        # its reader has gone (as _StdoutClosed)
                raise SystemExit(141) from None
            print(f"bpe-fast: stdout: {exc.strerror or exc}", file=sys.stderr)      # as _run says it
            raise SystemExit(1) from None


def _drop_stdout() -> None:
    """Point stdout at os.devnull: what its buffer still holds is not written (again) at exit."""
    with contextlib.suppress(OSError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def build_parser() -> argparse.ArgumentParser:
    from . import __version__
    parser: argparse.ArgumentParser = _Parser(prog="bpe-fast", description="Byte-level BPE: train, encode, decode.")
    parser.add_argument("--version", action="version", version=f"bpe-fast {__version__}")
    # -q and -j are accepted before the command and after it: the command's copies default to SUPPRESS, so
    # they set the value only when given there
    for p, default in ((parser, None), (None, argparse.SUPPRESS)):
        if p is None:
            common = p = argparse.ArgumentParser(add_help=False)
        p.add_argument("-q", "--quiet", action="store_true", default=False if default is None else default,
                       help="no progress or summary lines (warnings and errors are still shown)")
        p.add_argument("-j", "--processes", type=_num_processes, default=default, metavar="N",
                       help=f"processes (or encoding threads) at once, at most {MAX_PROCESSES}; default: "
                            "BPE_FAST_NUM_PROCESSES, else all cores. Counting uses this one, by a thread that "
                            "scans without the GIL, and N-1 workers")
    sub = parser.add_subparsers(dest="command", required=True)

    def corpus_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("--special-token", action="append", default=[], metavar="TOK",
                       help="a special token (repeatable); it splits the text and is never merged")
        p.add_argument("--pattern", default=None,
                       help=f"{SHORT_NAMES[0]} (default), {SHORT_NAMES[1]} (= cl100k), {', '.join(SHORT_NAMES[2:])}, "
                            "or a regex")
        p.add_argument("--errors", choices=["strict", "replace"], default="strict",
                       help="invalid UTF-8: fail (strict) or substitute U+FFFD (replace)")
        p.add_argument("--text-field", default="text", metavar="NAME",
                       help="JSON lines (.jsonl, and .json files of records): the field holding the text "
                            "(default: text)")
        p.add_argument("--text-column", default="text", metavar="NAME",
                       help="Parquet: the column holding the text (default: text)")
        p.add_argument("--max-bytes", default=None, metavar="SIZE",
                       help="read only the corpus's first SIZE bytes (e.g. 2GB, 500MiB)")
        p.add_argument("--max-documents", type=_non_negative_int, default=None, metavar="N",
                       help="read only the first N documents (JSON lines, Parquet rows; a text file is one)")

    p = sub.add_parser("train", parents=[common], help="learn a BPE vocabulary from a corpus")
    p.add_argument("corpus", nargs="*", metavar="CORPUS",
                   help="text files (.gz, .bz2, .xz, .zst too), .jsonl, .parquet, directories, globs; - for stdin")
    p.add_argument("--vocab-size", type=int, required=True)
    corpus_options(p)
    p.add_argument("--from-counts", metavar="COUNTS.npz", nargs="+",
                   help="train from saved pre-token counts (several: shards, added up)")
    p.add_argument("--min-frequency", type=_positive_int, default=1, metavar="N",
                   help="stop when the best pair occurs fewer than N times")
    p.add_argument("--max-token-length", type=_positive_int, default=None, metavar="L",
                   help="never make a token longer than L bytes")
    p.add_argument("--special-tokens-position", choices=["after_bytes", "end"], default="after_bytes",
                   help="special token ids right after the 256 bytes (default) or after the merges (as GPT-2)")
    p.add_argument("--pad-vocab-to-multiple-of", type=_positive_int, default=None, metavar="N",
                   help="go on to the next multiple of N tokens (e.g. 64, for GPU matrix shapes)")
    p.add_argument("--continue-from", metavar="DIR",
                   help="a tokenizer to extend (folder or tokenizer.json): its ids and merges are kept, "
                        "new merges are learned after them up to --vocab-size")
    p.add_argument("-o", "--output", required=True, metavar="DIR")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("count", parents=[common], help="count pre-tokens and save them (.npz) for later training")
    p.add_argument("corpus", nargs="+", metavar="CORPUS")
    corpus_options(p)
    p.add_argument("--dask-scheduler", metavar="ADDRESS", help="count on this Dask cluster")
    p.add_argument("-o", "--output", required=True, metavar="COUNTS.npz")
    p.set_defaults(func=cmd_count)

    p = sub.add_parser("encode", parents=[common], help="encode text into .npy token arrays")
    p.add_argument("-t", "--tokenizer", required=True, metavar="DIR", help=_TOKENIZER_HELP)
    p.add_argument("input", nargs="+", metavar="INPUT",
                   help="text files (.gz, .bz2, .xz, .zst too), .jsonl, .parquet, directories, globs; - for stdin")
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="TOKENS.npy (- for stdout) for one input; a folder (one .npy a shard and index.json) "
                        "for several, or when OUT ends with / or is a folder already")
    p.add_argument("--dtype", choices=["uint16", "uint32"], default=None,
                   help="default: uint16 when the vocabulary fits, else uint32")
    p.add_argument("--errors", choices=["strict", "replace"], default="strict")
    p.add_argument("--text-field", default="text", metavar="NAME")
    p.add_argument("--text-column", default="text", metavar="NAME")
    p.add_argument("--dask-scheduler", metavar="ADDRESS", help="encode the shards on this Dask cluster")
    p.add_argument("--ordinary", action="store_true",
                   help="encode a special token's text in the input as ordinary text (tiktoken's "
                        "encode_ordinary), not as its id: for text from elsewhere that may spell one")
    p.set_defaults(func=cmd_encode)

    p = sub.add_parser("decode", parents=[common], help="decode a .npy token array into text")
    p.add_argument("-t", "--tokenizer", required=True, metavar="DIR", help=_TOKENIZER_HELP)
    p.add_argument("tokens", metavar="TOKENS.npy", help="- for stdin")
    p.add_argument("-o", "--output", required=True, metavar="OUTPUT.txt", help="- for stdout")
    p.set_defaults(func=cmd_decode)

    p = sub.add_parser("export", parents=[common], help="write the tokenizer for HF tokenizers or tiktoken")
    p.add_argument("-t", "--tokenizer", required=True, metavar="DIR", help=_TOKENIZER_HELP)
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("--hf", metavar="tokenizer.json")
    group.add_argument("--hf-dir", metavar="DIR", help="tokenizer.json, tokenizer_config.json and "
                       "special_tokens_map.json, for transformers' PreTrainedTokenizerFast.from_pretrained")
    group.add_argument("--tiktoken", metavar="FILE.tiktoken")
    p.add_argument("--eos-token", metavar="TOKEN", help="with --hf-dir: the special token transformers takes as "
                   "eos_token (the others are additional special tokens)")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("show", parents=[common], help="show a text cut into its tokens (colours, or brackets)")
    p.add_argument("-t", "--tokenizer", required=True, metavar="DIR", help=_TOKENIZER_HELP)
    p.add_argument("text", nargs="?", metavar="TEXT", help="the text (or -f FILE)")
    p.add_argument("-f", "--file", metavar="FILE", help="read the text from FILE (- for stdin)")
    p.add_argument("--plain", action="store_true",
                   help="tokens in [brackets], no colours (the default when stdout is not a terminal or NO_COLOR "
                        "is set)")
    p.add_argument("--ids", action="store_true", help="each token's id after it")
    p.add_argument("--html", metavar="OUT.html", help="write the view as an HTML page instead")
    p.add_argument("--errors", choices=["strict", "replace"], default="strict",
                   help="invalid UTF-8 in FILE: fail (strict) or substitute U+FFFD (replace)")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("report", parents=[common],
                       help="an HTML report: compression at every vocabulary size and by script, token lengths, "
                            "merges, unused and frequent tokens")
    p.add_argument("-t", "--tokenizer", required=True, metavar="DIR", help=_TOKENIZER_HELP)
    p.add_argument("--eval", required=True, nargs="+", metavar="FILE",
                   help="the text to evaluate on: files of any kind train reads (.gz, .bz2, .xz, .zst too, .jsonl, "
                        ".parquet), directories, globs")
    p.add_argument("-o", "--output", required=True, metavar="REPORT.html")
    p.add_argument("--against", metavar="DIR2",
                   help="a second tokenizer (folder, e.g. GPT-2's vocab.json and merges.txt, or tokenizer.json) "
                        "measured on the same text, side by side")
    p.add_argument("--png", metavar="DIR", help="also write the charts as PNG files into DIR (needs matplotlib)")
    p.add_argument("--errors", choices=["strict", "replace"], default="strict",
                   help="invalid UTF-8 in an --eval file: fail (strict) or substitute U+FFFD (replace)")
    p.add_argument("--text-field", default="text", metavar="NAME",
                   help="JSON lines (.jsonl, and .json files of records): the field holding the text (default: text)")
    p.add_argument("--text-column", default="text", metavar="NAME",
                   help="Parquet: the column holding the text (default: text)")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("synth", parents=[common], help="generate a TinyStories-like or web-like corpus")
    p.add_argument("--size", required=True, help="e.g. 100MB, 2GB, 512KiB")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--style", choices=["stories", "web"], default="stories",
                   help="stories (TinyStories-like, the default) or web (web-like: a vocabulary that keeps growing)")
    p.add_argument("-o", "--output", required=True, metavar="CORPUS.txt", help="the file to write (-: stdout)")
    p.set_defaults(func=cmd_synth)
    return parser


class _Stdout:
    """Binary stdout that writes all it is given or raises: sys.stdout.buffer.write of a large buffer to a
    pipe whose reader has gone returns how much went (64 KB) instead of raising BrokenPipeError, so the rest
    was lost with exit status 0. Each write is flushed."""

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        out = _stdout()
        try:
            while view:
                view = view[out.write(view):]
            out.flush()
        except BrokenPipeError:
            raise _StdoutClosed() from None
        except OSError as exc:          # a full disk or device behind stdout (> /dev/full): say it was stdout
            raise CliError(f"stdout: {exc.strerror or exc}") from None
        return len(data) if isinstance(data, (bytes, bytearray)) else memoryview(data).nbytes


_READ_BLOCK = 16 << 20


def _read_all(f: IO[bytes], size: int | None = None) -> bytes | bytearray:
    """f read to its end (or its first `size` bytes); a stream that is no regular file a block at a time: one
    read() of a stream that never ends (/dev/zero, `yes |`) ran in C until memory ran out, SIGTERM and Ctrl-C
    waiting for it (their handlers run between blocks; out of memory is a MemoryError, which _run reports). A
    regular file, whose end is known, in one read (one buffer of its size, no copies)."""
    try:
        regular = stat.S_ISREG(os.fstat(f.fileno()).st_mode)
    except (OSError, ValueError, io.UnsupportedOperation):      # (a BytesIO, a closed stdin)
        regular = False
    if regular:
        return f.read() if size is None else f.read(size)
    data = bytearray()
    while size is None or len(data) < size:
        block = f.read(_READ_BLOCK if size is None else min(_READ_BLOCK, size - len(data)))
        if not block:
            break
        data += block
    return data


def _read_npy_stream(f: IO[bytes]) -> bytes | bytearray:
    """A .npy file from a pipe or stdin: its header, then the bytes of the array it describes, not the stream to
    its end (decode of /dev/zero read until memory ran out, where its first bytes say it is no .npy file). What
    is no .npy header is returned as read, for read_npy_dtype to say what is wrong; so is a header whose array
    is longer than the stream."""
    import numpy as np
    data = bytearray(_read_all(f, 12))
    if len(data) < 12 or data[:6] != b"\x93NUMPY" or data[6] not in (1, 2, 3):
        return data
    start = 10 if data[6] == 1 else 12
    length = int.from_bytes(data[8:start], "little")
    if length > 1 << 20:        # (NumPy refuses such a header: read_npy_dtype says so)
        return data
    data += _read_all(f, start + length - len(data))
    try:
        header = io.BytesIO(data)
        version = np.lib.format.read_magic(header)
        read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, _, dtype = read_header(header)
        need = math.prod(shape) * dtype.itemsize
    except Exception:           # a damaged header: read_npy_dtype names the damage
        return data
    if dtype.hasobject or need < 0:     # (an object array's data is a pickle, of any length: np.load refuses it)
        return data
    data += _read_all(f, need)
    return data


def _stdin() -> IO[bytes]:
    """Binary stdin, or a CliError when the command was started with it closed (`<&-`: sys.stdin is None)."""
    if sys.stdin is None:
        raise CliError("'-': stdin is closed, there is nothing to read")
    return sys.stdin.buffer


def _stdout() -> IO[bytes]:
    """Binary stdout, or a CliError when the command was started with it closed (`>&-`: sys.stdout is None)."""
    if sys.stdout is None:
        raise CliError("stdout is closed, there is nowhere to write (give -o FILE, or open stdout)")
    return sys.stdout.buffer


class _StdoutClosed(Exception):
    """The reader of stdout stopped (`| head`): main ends quietly, as a process killed by SIGPIPE would."""


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: IO[str] | None = None, line: str | None = None) -> None:
    """warnings.showwarning for the command line: one line, as the errors are ('train' on a corpus with fewer
    pairs than the vocabulary asks for), not Python's 'FILE:LINE: UserWarning: ...' with a line of source."""
    text = str(message)
    for keyword, flag in _WARNING_KEYWORDS:
        text = text.replace(keyword, flag)
    print(f"bpe-fast: warning: {text}", file=file if file is not None else sys.stderr)


# the keywords training's warnings name, as the command line spells them
_WARNING_KEYWORDS = [("min_frequency=", "--min-frequency "), ("pad_vocab_to_multiple_of=", "--pad-vocab-to-multiple-of ")]


def main(argv: Sequence[str] | None = None) -> int:
    # started with stderr closed (2>&-: sys.stderr is None), print(file=sys.stderr) wrote the messages to stdout,
    # after the text decode -o - wrote there, and Progress failed on None: they go nowhere instead. So do argparse's
    # (a usage error: print_usage(None) writes to stdout), which is why the parsing comes after
    stderr = sys.stderr
    if stderr is None:
        sys.stderr = open(os.devnull, "w")
    try:
        args = build_parser().parse_args(argv)
    except BaseException:
        _restore_stderr(stderr)
        raise
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            return _run(args)
    except Terminated as stop:      # SIGTERM as the command ended (a KeyboardInterrupt too: not taken for Ctrl-C)
        print("\nbpe-fast: terminated as the command ended", file=sys.stderr)
        return _exit_status(stop)
    except KeyboardInterrupt:       # Ctrl-C as the command ended, past _run's handlers (restoring SIGTERM's)
        print("\nbpe-fast: interrupted as the command ended", file=sys.stderr)
        return 130
    finally:
        _restore_stderr(stderr)


def _restore_stderr(stderr: TextIO | None) -> None:
    """Put back the sys.stderr main found (None: stderr was closed, and main wrote to os.devnull instead)."""
    if stderr is None and sys.stderr is not None:
        sys.stderr.close()
        sys.stderr = stderr


# the arguments that name a file or folder, by their attribute, as the usage names them
_PATH_ARGUMENTS = {"corpus": "CORPUS", "input": "INPUT", "tokens": "TOKENS.npy", "output": "-o", "tokenizer": "-t",
                   "from_counts": "--from-counts", "continue_from": "--continue-from", "eval": "--eval",
                   "against": "--against", "png": "--png", "html": "--html", "file": "-f", "hf": "--hf",
                   "hf_dir": "--hf-dir", "tiktoken": "--tiktoken"}


def _check_no_empty_path(args: argparse.Namespace) -> None:
    """A CliError naming the flag given '' for a file or folder (a script's unset variable): such an option was
    taken for not given (--continue-from '' trained from scratch, --html '' wrote to stdout), was a traceback
    (--hf ''), or failed after the work with the OS's words about ''. So is --dask-scheduler ''."""
    for name, flag in _PATH_ARGUMENTS.items():
        value = getattr(args, name, None)
        if value == "" or (isinstance(value, list) and "" in value):
            raise CliError(f"{flag} '': an empty path; give a file or folder name")
    if getattr(args, "dask_scheduler", None) == "":      # (taken for no --dask-scheduler: the work was done here)
        raise CliError("--dask-scheduler '': an empty address; give the scheduler's (such as tcp://host:8786)")


def _run(args: argparse.Namespace) -> int:
    from .atomic import stop_signals_handled
    with stop_signals_handled(_on_sigterm):
        try:
            _check_no_empty_path(args)
            # inside the try: importing inputs imports the compiled modules, which read BPE_FAST_HASH_SEED then (a
            # ValueError naming it and its value, one line as BPE_FAST_NUM_PROCESSES's)
            from .inputs import CorpusDecodeError
            try:
                args.func(args)
            except CorpusDecodeError as exc:
                exc.hint = "pass --errors replace to substitute U+FFFD"
                raise CliError(str(exc)) from None
        except Terminated as stop:
            print(f"\nbpe-fast: terminated; {getattr(args, 'on_interrupt', 'no output written')}", file=sys.stderr)
            return _exit_status(stop)
        except KeyboardInterrupt:
            print(f"\nbpe-fast: interrupted; {getattr(args, 'on_interrupt', 'no output written')}", file=sys.stderr)
            return 130
        except _StdoutClosed:
            _drop_stdout()      # nothing more reaches the closed pipe at exit
            return 141
        except CliError as exc:
            print(f"bpe-fast: {exc}", file=sys.stderr)
            return 1
        except MemoryError as exc:  # (NumPy's _ArrayMemoryError says how much it asked for): was a traceback
            print(f"bpe-fast: out of memory{f' ({exc})' if str(exc) else ''}; "
                  f"{getattr(args, 'on_interrupt', 'no output written')}", file=sys.stderr)
            return 1
        except (OSError, ValueError, TypeError, RuntimeError, ImportError) as exc:
            print(f"bpe-fast: {_describe(exc)}", file=sys.stderr)
            return 1
    return 0


def _describe(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


if __name__ == "__main__":
    sys.exit(main())
