"""Byte-level BPE training: CS336's `train_bpe(input_path, vocab_size, special_tokens)`, fast."""
import warnings

import numpy as np

from ._scan import merge_arrays
from ._train import MergeEngine
from .counts import PretokenCounts, check_count_args, count_file_tables
from .patterns import GPT2_PATTERN
from .specials import check_special_tokens

_MERGE_BATCH = 256      # merges between progress reports


def check_vocab_size(vocab_size, special_tokens):
    minimum = 256 + len(special_tokens)
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
        raise TypeError(f"vocab_size must be an int, got {type(vocab_size).__name__}")
    if vocab_size < minimum:
        raise ValueError(f"vocab_size must be at least {minimum} (256 byte tokens + {len(special_tokens)} "
                         f"special tokens), got {vocab_size}")
    return vocab_size


def train_bpe(input_path, vocab_size, special_tokens=None, num_processes=None, pattern=GPT2_PATTERN,
              errors="strict", *, chunk_bytes=None, progress=None):
    """Learn a byte-level BPE vocabulary from a UTF-8 text file.

    Returns (vocab, merges): vocab maps ids to bytes (0..255 the single bytes, then the special tokens in
    order, then one id per merge); merges is the list of (bytes, bytes) in creation order. The result is
    the same whatever num_processes (None: all cores; the caller's process counts too, by a thread, beside
    num_processes - 1 worker processes). progress, if given, is called as
    progress(stage, done, total) with stage "count" (bytes) then "merge" (merges).

    >>> vocab, merges = train_bpe("corpus.txt", 1000, ["<|endoftext|>"])   # doctest: +SKIP
    """
    special_tokens = check_special_tokens(special_tokens)
    check_vocab_size(vocab_size, special_tokens)
    input_path, special_tokens, pattern = check_count_args(input_path, special_tokens, pattern, errors)
    # one expression: no local of this frame keeps the tables alive while the engine is built
    return _train(_concatenate(count_file_tables(input_path, special_tokens, pattern, num_processes, errors,
                                                 chunk_bytes, progress)),
                  vocab_size, special_tokens, progress, stacklevel=3)


def _concatenate(tables):
    """The workers' tables end to end as one PretokenCounts-like triple (a pre-token may be listed twice)."""
    if len(tables) == 1:
        return tables[0]
    if sum(len(t[0]) + len(t[2]) for t in tables) + 1 >= 2 ** 31:
        return merge_arrays(tables)     # listed once each, they may still fit the engine's int32 slots
    tokens = np.concatenate([t[0] for t in tables])
    counts = np.concatenate([t[2] for t in tables])
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    at, base = 1, 0
    for t in tables:
        n = len(t[2])
        offsets[at:at + n] = t[1][1:] + base
        at += n
        base += t[1][-1]
    return tokens, offsets, counts


def counts_to_arrays(counts):
    """A mapping {pre-token bytes: count} as (tokens uint8, offsets int64, counts int64) for the engine."""
    keys = list(counts.keys())
    n = len(keys)
    freqs = np.fromiter(counts.values(), dtype=np.int64, count=n)
    lengths = np.fromiter(map(len, keys), dtype=np.int64, count=n)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] >= 2 ** 31:
        raise ValueError("the distinct pre-tokens hold more than 2 GiB of bytes; the engine indexes them "
                         "with int32")
    return np.frombuffer(b"".join(keys), dtype=np.uint8), offsets, freqs


def train_from_counts(counts, vocab_size, special_tokens=None, *, progress=None):
    """Learn merges from pre-token counts: a PretokenCounts (see count_pretokens) or a mapping
    {bytes: int}. Identical to train_bpe on the corpus they were counted from.

    special_tokens defaults to those the counts were made with; others are an error, since the counts
    were split on exactly those.
    """
    made_with = getattr(counts, "special_tokens", None)
    if special_tokens is None:
        special_tokens = made_with or ()
    special_tokens = check_special_tokens(special_tokens)
    if made_with is not None and set(made_with) != set(special_tokens):
        raise ValueError(f"the counts were made with special tokens {list(made_with)}, "
                         f"not {list(special_tokens)}")
    check_vocab_size(vocab_size, special_tokens)
    return _train(counts, vocab_size, special_tokens, progress, stacklevel=3)


def _train(counts, vocab_size, special_tokens, progress, stacklevel):
    if isinstance(counts, PretokenCounts):
        engine = MergeEngine(counts.tokens, counts.offsets, counts.counts)
    elif isinstance(counts, tuple):                  # arrays (tokens, offsets, counts), from train_bpe
        engine = MergeEngine(*counts)
    else:
        engine = MergeEngine(*counts_to_arrays(counts))
    del counts
    wanted = vocab_size - 256 - len(special_tokens)
    done = 0
    while done < wanted:
        step = engine.run(min(_MERGE_BATCH, wanted - done))
        done += step
        if progress is not None:
            progress("merge", done, wanted)
        if step == 0:
            break
    engine.finish()
    merges, made = engine.merges(with_tokens=True)
    del engine
    if len(merges) < wanted:
        warnings.warn(f"no pairs left after {len(merges)} merges: the vocabulary has "
                      f"{256 + len(special_tokens) + len(merges)} tokens, not the {vocab_size} asked for",
                      stacklevel=stacklevel)
    vocab = {i: bytes([i]) for i in range(256)}
    for tok in special_tokens:
        vocab[len(vocab)] = tok.encode("utf-8")
    for token in made:
        vocab[len(vocab)] = token
    return vocab, merges
