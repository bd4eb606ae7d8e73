"""Byte-level BPE training: CS336's `train_bpe(input_path, vocab_size, special_tokens)`, fast."""
from __future__ import annotations

import numbers
import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Union

import numpy as np
from numpy.typing import NDArray

from ._inspect import count_distinct
from ._train import MergeEngine
from ._types import Merges, Progress, Table, Vocab
from .count_workers import check_input_args, count_input_tables
from .counts import PretokenCounts, exact_total, mapping_arrays
from .patterns import GPT2_PATTERN, resolve_pattern, shown_pattern
from .procs import check_num_processes, check_progress
from .specials import SpecialTokens, first_alias
from .spill import Spill, count_budget, merged_run, spill_folder

if TYPE_CHECKING:
    from .tokenizer import Tokenizer

# what training takes: PretokenCounts, a mapping {pre-token bytes: count}, or train_bpe's (tokens, offsets, counts)
# or its runs (a Spill: counting went past its memory budget)
_Counts = Union[PretokenCounts, Mapping[bytes, int], Table, Spill]

_MERGE_BATCH = 256      # merges between progress reports
_MAX_COUNT = 2 ** 63 - 1  # the engine's counts are int64: a larger min_frequency stops as this one does
SPECIAL_TOKENS_POSITIONS = ("after_bytes", "end")


def check_vocab_size(vocab_size: int, special_tokens: Sequence[str], initial: Tokenizer | None = None) -> int:
    """vocab_size, checked: an int with room for the byte tokens (or, continuing, the initial tokenizer's
    vocabulary, counted as its vocab_size: largest id + 1) and the special tokens not there yet."""
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, numbers.Integral):
        raise TypeError(f"vocab_size must be an int, got {type(vocab_size).__name__}")
    vocab_size = int(vocab_size)            # a NumPy integer too
    if initial is None:
        minimum = 256 + len(special_tokens)
        if vocab_size < minimum:
            raise ValueError(f"vocab_size must be at least {minimum} (256 byte tokens + {len(special_tokens)} "
                             f"special token{'' if len(special_tokens) == 1 else 's'}), got {vocab_size}")
        return vocab_size
    new = _new_special_tokens(special_tokens, initial)
    minimum = initial.vocab_size + len(new)
    if vocab_size < minimum:
        raise ValueError(f"vocab_size must be at least {minimum} (the initial tokenizer's {initial.vocab_size} "
                         f"tokens + {len(new)} new special token{'' if len(new) == 1 else 's'}), got {vocab_size}")
    return vocab_size


def _without_ids(special_tokens: Iterable[str] | None) -> SpecialTokens:
    """special_tokens checked; a dict {token: id} is refused: training gives the special tokens their ids (by
    special_tokens_position), so its ids would be dropped without a word (its keys were taken)."""
    if isinstance(special_tokens, Mapping):
        raise TypeError("special_tokens is a dict {token: id}: training gives the special tokens their ids (see "
                        "special_tokens_position), so those would be ignored; give a list of str")
    return SpecialTokens.of(special_tokens)


def train_bpe(input_path: Any, vocab_size: int, special_tokens: Iterable[str] | None = None,
              num_processes: int | None = None, pattern: str | None = None, errors: str = "strict", *,
              chunk_bytes: int | None = None, progress: Progress | None = None, max_bytes: int | None = None,
              max_documents: int | None = None, text_field: str = "text", text_column: str = "text",
              min_frequency: int = 1, max_token_length: int | None = None, special_tokens_position: str = "after_bytes",
              pad_vocab_to_multiple_of: int | None = None, initial: Tokenizer | None = None) -> TrainResult:
    """Learn a byte-level BPE vocabulary from a corpus: a UTF-8 text file (CS336's input_path), or any input
    count_pretokens takes (compressed files, JSON lines with text_field, Parquet with text_column,
    directories, globs, lists of paths, an iterable of documents; max_bytes / max_documents caps).

    Returns (vocab, merges): vocab maps ids to bytes (0..255 the single bytes, then the special tokens in
    order, then one id per merge); merges is the list of (bytes, bytes) in creation order. The result is
    the same whatever num_processes (None: all cores; the caller's process counts too, by a thread, beside
    num_processes - 1 worker processes). progress, if given, is called as
    progress(stage, done, total) with stage "count" (bytes) then "merge" (merges).

    pattern: the pre-tokenizer's regex (None: GPT-2's, or continuing, the initial tokenizer's). The options
    min_frequency, max_token_length, special_tokens_position, pad_vocab_to_multiple_of and initial are
    train_from_counts'; continuing, the corpus is split on the initial tokenizer's special tokens too.

    >>> vocab, merges = train_bpe("corpus.txt", 1000, ["<|endoftext|>"])   # doctest: +SKIP
    """
    special_tokens = _without_ids(special_tokens)
    check_train_options(min_frequency=min_frequency, max_token_length=max_token_length,
                        special_tokens_position=special_tokens_position,
                        pad_vocab_to_multiple_of=pad_vocab_to_multiple_of, initial=initial)
    if initial is not None:       # its special tokens split the corpus too; its pattern is the default
        special_tokens = list(initial.special_tokens) + [t for t in special_tokens if t not in initial.special_tokens]
        if pattern is not None and resolve_pattern(pattern) != initial.pattern:
            raise ValueError(f"pattern {shown_pattern(pattern)} is not the initial tokenizer's pattern "
                             f"{shown_pattern(initial.pattern)}: leave pattern out to continue with it")
        pattern = initial.pattern
    vocab_size = check_vocab_size(vocab_size, special_tokens, initial)
    special_tokens, pattern = check_input_args(special_tokens, GPT2_PATTERN if pattern is None else pattern, errors)
    read: dict[str, int] = {}           # the bytes and documents read, for the result's corpus statistics
    budget = count_budget()
    # the runs of counters past the budget go here (spill.py); removed with the folder, an error or interrupt too
    scratch = spill_folder()
    with scratch as folder:
        spill = Spill(folder, budget)
        # one expression: no local of this frame keeps the table alive while the engine is built; the workers'
        # tables and every input's are added into one as they arrive (combine: the engine lays out each word once;
        # handed them end to end, on the real corpus it took 5% longer and 6% more memory, on 10 files of it 23%
        # more memory). When counting spilled, the runs instead (the spill itself)
        return _train(_table_or_runs(count_input_tables(input_path, special_tokens, pattern, num_processes, errors,
                                                        chunk_bytes, progress, max_bytes=max_bytes,
                                                        max_documents=max_documents, text_field=text_field,
                                                        text_column=text_column, stats=read, combine=True,
                                                        spill=spill), spill, scratch),
                      vocab_size, special_tokens, progress, stacklevel=3, pattern=pattern, min_frequency=min_frequency,
                      max_token_length=max_token_length, special_tokens_position=special_tokens_position,
                      pad_vocab_to_multiple_of=pad_vocab_to_multiple_of, initial=initial, read=read,
                      threads=num_processes)


def _table_or_runs(tables: list[Table], spill: Spill, scratch: Any) -> Table | Spill:
    """count_input_tables' one table, or the spill when counting wrote runs (the list is then empty). Without runs
    the runs folder (scratch, a TemporaryDirectory) is removed now, not after the merges: a process killed
    (SIGKILL) while it merges leaves no empty folder behind."""
    if spill.runs:
        return spill
    scratch.cleanup()
    return tables[0]


def counts_to_arrays(counts: Mapping[bytes, int]) -> Table:
    """A mapping {pre-token bytes: count} as (tokens uint8, offsets int64, counts int64) for the engine, checked
    as counts.mapping_arrays checks it; ValueError when the pre-tokens hold 2 GiB or more (int32 slots)."""
    tokens, offsets, freqs = mapping_arrays(counts)
    if offsets[-1] >= 2 ** 31:
        raise ValueError("the distinct pre-tokens hold more than 2 GiB of bytes; the engine indexes them "
                         "with int32")
    return tokens, offsets, freqs


def train_from_counts(counts: PretokenCounts | Mapping[bytes, int], vocab_size: int,
                      special_tokens: Iterable[str] | None = None, *, progress: Progress | None = None,
                      min_frequency: int = 1, max_token_length: int | None = None,
                      special_tokens_position: str = "after_bytes", pad_vocab_to_multiple_of: int | None = None,
                      initial: Tokenizer | None = None) -> TrainResult:
    """Learn merges from pre-token counts: a PretokenCounts (see count_pretokens) or a mapping
    {bytes: int}. Identical to train_bpe on the corpus they were counted from.

    special_tokens defaults to those the counts were made with; others are an error, since the counts
    were split on exactly those.

    Options (train_bpe takes the same):
      min_frequency: stop when the best pair occurs fewer than this many times (a warning says so).
      max_token_length: never make a token longer than this many bytes (None: no limit).
      special_tokens_position: "after_bytes" (ids 256.. in order, then the merges) or "end" (the bytes, the
        merges, then the special tokens, as GPT-2's <|endoftext|> = 50256). vocab_size counts them either way.
      pad_vocab_to_multiple_of: go on to the next multiple of this of the vocabulary size (>= vocab_size)
        while pairs are left (a warning says when they run out first).
      initial: a bpe_fast.Tokenizer to continue: its ids, tokens and merges are kept, its merges are
        applied to the counts first, and the new tokens get ids after its largest id (vocab_size counts its
        tokens as its vocab_size, largest id + 1). Its special tokens stay; those of special_tokens it lacks
        are added (after its vocabulary, or at the end). The counts must be made with its pattern and
        its special tokens (with the new ones), as train_bpe splits the corpus on them. Training reads
        characters as the installed `regex` does, as CS336's reference does, whatever the initial tokenizer's
        Unicode reading (one from from_tiktoken or from_hf reads them as Unicode 16.0: Tokenizer.with_unicode).
    The merge engine sets itself up in as many threads as the default number of processes
    (BPE_FAST_NUM_PROCESSES, else every core; a value of it that is no number is a ValueError, as for
    train_bpe); the result is the same for any number.
    Returns (vocab, merges); continuing, merges is the initial tokenizer's followed by the new ones.

    >>> vocab, merges = train_from_counts({b"hello": 5, b"help": 2}, 259, min_frequency=3)   # doctest: +SKIP
    """
    if not isinstance(counts, (PretokenCounts, Mapping)):
        # (_train takes train_bpe's tuple of arrays unchecked: a tuple of (bytes, count) pairs failed in NumPy)
        raise TypeError(f"counts must be PretokenCounts or a mapping {{bytes: int}}, got {type(counts).__name__}")
    made_with = getattr(counts, "special_tokens", None)
    if special_tokens is None:
        special_tokens = made_with or ()
    special_tokens = _without_ids(special_tokens)
    with_initial = ""
    if initial is not None:     # its special tokens split the corpus too (as train_bpe splits it)
        check_train_options(initial=initial)
        special_tokens = SpecialTokens(list(initial.special_tokens)
                                       + [t for t in special_tokens if t not in initial.special_tokens])
        with_initial = " (with the initial tokenizer's)"
    if made_with is not None and set(made_with) != set(special_tokens):
        raise ValueError(f"the counts were made with special tokens {list(made_with)}, "
                         f"not {list(special_tokens)}{with_initial}")
    return _train(counts, vocab_size, special_tokens, progress, stacklevel=3, min_frequency=min_frequency,
                  max_token_length=max_token_length, special_tokens_position=special_tokens_position,
                  pad_vocab_to_multiple_of=pad_vocab_to_multiple_of, initial=initial)


def _train(counts: _Counts, vocab_size: int, special_tokens: Sequence[str], progress: Progress | None, stacklevel: int,
           *, pattern: str | None = None, min_frequency: int = 1, max_token_length: int | None = None,
           special_tokens_position: str = "after_bytes", pad_vocab_to_multiple_of: int | None = None,
           initial: Tokenizer | None = None, read: Mapping[str, int] | None = None,
           threads: int | None = None) -> TrainResult:
    """Train on counts (PretokenCounts, a mapping, or train_bpe's (tokens, offsets, counts) made with
    `pattern`, each pre-token listed once; the engine would take one listed twice as once with the summed count).
    special_tokens and initial come checked; vocab_size and the other options
    are checked here. read: the "bytes" and "documents" the counts were made from, if known. threads: how many
    the engine may build its pair index in (None: check_num_processes' default, as train_bpe's processes).
    Returns a TrainResult."""
    check_progress(progress)
    # (initial is checked by both callers, train_bpe before it counts: once is enough, 0.56 s for o200k_base's)
    check_train_options(min_frequency=min_frequency, max_token_length=max_token_length,
                        special_tokens_position=special_tokens_position,
                        pad_vocab_to_multiple_of=pad_vocab_to_multiple_of)
    vocab_size = check_vocab_size(vocab_size, special_tokens, initial)
    if initial is not None:
        _check_initial_pattern(getattr(counts, "pattern", pattern), initial)
    merged: str | None = None
    parts: list[Any] = []
    if isinstance(counts, Spill):       # runs (counting went past its budget): added up into one, natively
        merged, figures = merged_run(counts)
        corpus = dict(read or {})
        corpus.update((key, figures[key]) for key in ("pretokens", "pretoken_bytes", "distinct_pretokens"))
    else:
        if isinstance(counts, PretokenCounts):
            arrays = counts.tokens, counts.offsets, counts.counts
        elif isinstance(counts, tuple):                  # arrays (tokens, offsets, counts), from train_bpe
            arrays = counts
        else:
            arrays = counts_to_arrays(counts)
        # (each pre-token listed once: a PretokenCounts, a mapping, or train_bpe's tables added into one; counting
        # the distinct ones again, a hash set of them, took 30 ms of the real corpus's 1.9 s)
        corpus = corpus_statistics(*arrays, may_repeat=False, read=read)
        parts = list(arrays)
        del arrays
    del counts
    if initial is None:
        vocab: Vocab = {i: bytes([i]) for i in range(256)}
        old_merges: Merges = []
        new_specials = list(special_tokens)
    else:
        vocab = dict(initial.vocab)
        old_merges = list(initial.merges)
        new_specials = _new_special_tokens(special_tokens, initial)
    size = max(vocab) + 1                 # the vocabulary's size: every id is below it
    target = vocab_size
    if pad_vocab_to_multiple_of is not None:
        target = -(-vocab_size // pad_vocab_to_multiple_of) * pad_vocab_to_multiple_of
    wanted = target - size - len(new_specials)
    # the engine empties `parts` once it has laid the words out: train_bpe's arrays, held by nothing else, are
    # freed before the pair index is built (a PretokenCounts keeps its own). max_merges: what it will be asked
    # for, from which it chooses its slots' size (2 bytes a byte of the words when the ids fit)
    max_merges = len(old_merges) + max(wanted, 0)
    if merged is not None:
        engine = _engine_from_run(merged, max_token_length=max_token_length, threads=check_num_processes(threads),
                                  max_merges=max_merges)
    else:
        engine = MergeEngine.consume(parts, max_token_length=max_token_length, threads=check_num_processes(threads),
                                     max_merges=max_merges)
    if initial is not None:
        try:
            engine.replay(*merges_to_arrays(old_merges))
        except ValueError as exc:
            raise ValueError(f"initial: the tokenizer's {exc}") from None
    done = 0
    while done < wanted:
        step = engine.run(min(_MERGE_BATCH, wanted - done), min(min_frequency, _MAX_COUNT))
        done += step
        if progress is not None:
            progress("merge", done, wanted)
        if step == 0:
            break
    best = engine.next_count() if done < wanted else 0     # > 0: min_frequency stopped the training
    engine.finish()
    merges, made = engine.merges(with_tokens=True, start=len(old_merges))
    merge_counts = engine.merge_counts()        # replayed merges first (their counts when replayed)
    del engine
    total = size + len(new_specials) + len(merges)
    if total < target:
        warnings.warn(_stop_message(len(merges), initial is not None, best, min_frequency, total, vocab_size,
                                    pad_vocab_to_multiple_of, max_token_length), stacklevel=stacklevel)
    specials = [tok.encode("utf-8") for tok in new_specials]
    layout = specials + made if special_tokens_position == "after_bytes" else made + specials
    vocab.update(zip(range(size, size + len(layout)), layout))
    return TrainResult(vocab, old_merges + merges, {"corpus": corpus, "merge_counts": merge_counts})


def _engine_from_run(path: str, **options: Any) -> MergeEngine:
    """MergeEngine.from_run of the merged run at path (its words read twice, a buffer at a time), the file
    removed once they are laid out; a run that is not well formed is a ValueError naming it."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return MergeEngine.from_run(fd, name=path, **options)
    finally:
        os.close(fd)
        os.unlink(path)


class TrainResult(tuple[Vocab, Merges]):
    """train_bpe's and train_from_counts' result: the pair (vocab, merges), which it unpacks and compares as,
    with what training saw as `training`: a dict {"merge_counts": the count of each merge's pair when it was
    chosen, in merge order (a continued tokenizer's merges: their count when replayed), "corpus": {"bytes",
    "documents" (read from the inputs; train_bpe only), "pretokens", "pretoken_bytes" (the pre-tokens and
    their bytes, special tokens not included), "distinct_pretokens"}}. Tokenizer(vocab, merges, ...,
    training=result.training) keeps it; Tokenizer.save writes it to bpe_fast.json.

    >>> result = train_from_counts({b"hello": 5, b"help": 2}, 258)
    >>> vocab, merges = result
    >>> merges, result.training["merge_counts"], result.training["corpus"]["distinct_pretokens"]
    ([(b'h', b'e'), (b'he', b'l')], [7, 7], 2)
    """

    training: dict[str, Any] | None

    def __new__(cls, vocab: Vocab, merges: Merges, training: dict[str, Any] | None = None) -> TrainResult:
        self = super().__new__(cls, (vocab, merges))
        self.training = training
        return self

    def __getnewargs__(self) -> tuple[Any, ...]:
        return self[0], self[1], self.training


def corpus_statistics(tokens: NDArray[np.uint8], offsets: NDArray[np.int64], counts: NDArray[np.int64], *,
                      may_repeat: bool = True, read: Mapping[str, int] | None = None) -> dict[str, int]:
    """{"pretokens", "pretoken_bytes", "distinct_pretokens"} of pre-token arrays (tokens, offsets, counts),
    after the entries of `read` ({"bytes": ..., "documents": ...}: what the inputs held). may_repeat: a
    pre-token may be listed more than once (the workers' tables end to end), so the distinct ones are
    counted (natively: a hash set of the byte strings). A pre-token counted 0 times is not one of the corpus's
    (as for PretokenCounts' equality and Counter, a count of 0 is no entry)."""
    stats = dict(read or {})
    lengths = np.diff(offsets)
    stats["pretokens"] = exact_total(counts)
    stats["pretoken_bytes"] = exact_total(counts, lengths)
    if not may_repeat:
        stats["distinct_pretokens"] = int(np.count_nonzero(counts))
        return stats
    occurs = counts > 0
    if not occurs.all():            # only the occurring ones' bytes and offsets (counting never lists a 0)
        tokens = tokens[np.repeat(occurs, lengths)]
        offsets = np.zeros(int(np.count_nonzero(occurs)) + 1, dtype=np.int64)
        np.cumsum(lengths[occurs], out=offsets[1:])
    del lengths, occurs             # not held while the distinct ones are counted
    stats["distinct_pretokens"] = int(count_distinct(np.ascontiguousarray(tokens), offsets))
    return stats


def check_train_options(*, min_frequency: int = 1, max_token_length: int | None = None,
                        special_tokens_position: str = "after_bytes", pad_vocab_to_multiple_of: int | None = None,
                        initial: object = None) -> None:
    """TypeError/ValueError naming the first bad training option (train_bpe's and train_from_counts')."""
    _check_int("min_frequency", min_frequency, 1)
    if max_token_length is not None:
        _check_int("max_token_length", max_token_length, 1)
    if not isinstance(special_tokens_position, str) or special_tokens_position not in SPECIAL_TOKENS_POSITIONS:
        # (not `in` alone: np.array(['end']) == each name elementwise, and was taken)
        raise ValueError(f"special_tokens_position must be one of {', '.join(map(repr, SPECIAL_TOKENS_POSITIONS))},"
                         f" got {special_tokens_position!r}")
    if pad_vocab_to_multiple_of is not None:
        _check_int("pad_vocab_to_multiple_of", pad_vocab_to_multiple_of, 1)
    if initial is not None:
        from .tokenizer import Tokenizer
        if not isinstance(initial, Tokenizer):
            raise TypeError(f"initial must be a bpe_fast.Tokenizer, got {type(initial).__name__}")
        singles = {token for token in initial.vocab.values() if len(token) == 1}
        if len(singles) < 256:
            missing = min(set(range(256)) - {token[0] for token in singles})
            raise ValueError(f"initial: the tokenizer's vocabulary lacks the single byte {bytes([missing])!r} "
                             f"(byte-level BPE needs all 256)")
        alias = first_alias(initial.special_tokens)
        if alias is not None:       # the trained vocabulary would give the second a new id, silently
            raise ValueError(f"initial: special tokens {alias[0]!r} and {alias[1]!r} share the id {alias[2]} (as in "
                             "tiktoken's o200k_harmony); a trained tokenizer gives each special token an id of its "
                             "own, so it cannot keep the initial tokenizer's ids")
        if initial.normalizer is not None:      # the corpus would be counted as it is, not normalized
            raise ValueError(f"initial: the tokenizer normalizes text to {initial.normalizer}, and training counts "
                             "the corpus as it is: continuing a tokenizer with a normalizer is not supported")
        if initial.by_ranks_only:       # its merges do not say it (tiktoken's ranks merging does not rebuild)
            raise ValueError("initial: the tokenizer's ranks hold tokens that merging does not make (as Llama 3's): "
                             "continuing it from its merges would not be continuing it; not supported")
        if initial.special_lstrip:      # counting keeps the white space before a special token
            raise ValueError(f"initial: special tokens {sorted(initial.special_lstrip)} take the white space before "
                             "them, and training counts it: continuing such a tokenizer is not supported")
        unmade = _first_unmade_token(initial)
        if unmade is not None:          # a merge could make its bytes again, under a new id, which vocab.json cannot
            raise ValueError(f"initial: token {unmade[0]} ({unmade[1]!r}) is made by none of the tokenizer's merges "
                             "(nor is it a single byte or a special token): training could make its bytes again under "
                             "a new id, and a vocabulary cannot hold them twice; continuing it is not supported")


def _first_unmade_token(tokenizer: Tokenizer) -> tuple[int, bytes] | None:
    """(id, bytes) of the lowest id of a multi-byte token that no merge of the tokenizer makes and that is not
    a special token, or None. (One that a merge joins is named by the engine's replay of the merges: "merge k:
    ... is neither a byte nor made by an earlier merge".)"""
    made = {a + b for a, b in tokenizer.merges}
    joined = {part for pair in tokenizer.merges for part in pair}
    specials = set(tokenizer.special_tokens.values())
    return next(((i, token) for i, token in sorted(tokenizer.vocab.items())
                 if len(token) > 1 and token not in made and token not in joined and i not in specials), None)


def _check_int(name: str, value: int, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")


def _check_initial_pattern(pattern: str | None, initial: Tokenizer) -> None:
    """The counts must be split as the initial tokenizer splits text (pattern None: not known, trusted)."""
    if pattern is not None and resolve_pattern(pattern) != initial.pattern:
        raise ValueError(f"the counts were made with the pattern {pattern!r}, but the initial tokenizer's "
                         f"pattern is {initial.pattern!r}: count the corpus with initial.pattern")


def _new_special_tokens(special_tokens: Iterable[str], initial: Tokenizer) -> list[str]:
    """The special tokens (in order) that the initial tokenizer does not have yet; ValueError for one whose bytes
    are already a token of it (the vocabulary would hold them at two ids, which vocab.json cannot: the save
    after training failed)."""
    new = [tok for tok in special_tokens if tok not in initial.special_tokens]
    clash = special_token_clash(new, initial)
    if clash is not None:
        raise ValueError(f"special token {clash[0]!r}: its bytes are token {clash[1]} of the initial tokenizer "
                         "(a vocabulary holds each token's bytes once)")
    return new


def special_token_clash(special_tokens: Iterable[str], initial: Tokenizer | None,
                        single_bytes: bool = False) -> tuple[str, int] | None:
    """(special token, id) for the first special token not the initial tokenizer's whose bytes are a token of
    it (or, with single_bytes, a single byte: its id is the byte's in a trained vocabulary), else None. Its
    vocabulary would hold those bytes at two ids, which vocab.json cannot (the save after training failed)."""
    new = [tok for tok in special_tokens if initial is None or tok not in initial.special_tokens]
    ids_of: dict[bytes, int] = {}
    if initial is not None and new:
        ids_of = {token: i for i, token in initial.vocab.items()}
    for tok in new:
        data = tok.encode("utf-8")
        if data in ids_of:
            return tok, ids_of[data]
        if single_bytes and len(data) == 1:
            return tok, data[0]
    return None


def _stop_message(merges: int, continued: bool, best: int, min_frequency: int, total: int, vocab_size: int,
                  pad: int | None, max_token_length: int | None = None) -> str:
    made = ("new " if continued else "") + ("merge" if merges == 1 else "merges")
    if best > 0:
        why = (f"training stopped after {merges} {made}: the best pair occurs {best} times, fewer than "
               f"min_frequency={min_frequency};")
    elif max_token_length is not None:      # (pairs making longer tokens may be left: the engine does not count them)
        why = f"no pairs left after {merges} {made} (none whose token fits max_token_length={max_token_length}):"
    else:
        why = f"no pairs left after {merges} {made}:"
    if total < vocab_size:
        return f"{why} the vocabulary has {total} tokens, not the {vocab_size} asked for"
    return f"{why} the vocabulary has {total} tokens, not a multiple of pad_vocab_to_multiple_of={pad}"


def merges_to_arrays(merges: Sequence[tuple[bytes, bytes]]) -> tuple[NDArray[np.uint8], NDArray[np.int64]]:
    """A list of (bytes, bytes) as MergeEngine.replay's arrays: the sides' bytes end to end (uint8) and the
    2 * len(merges) + 1 offsets (int64) around them."""
    sides = [side for pair in merges for side in pair]
    offsets = np.zeros(len(sides) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, sides), dtype=np.int64, count=len(sides)), out=offsets[1:])
    return np.frombuffer(b"".join(sides), dtype=np.uint8), offsets
