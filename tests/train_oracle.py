"""A small, obviously-correct BPE trainer: the reference the Cython engine is tested against.

It follows issue 2's semantics literally and recounts every pair from scratch at each step. It is slow on purpose
(no incremental updates, no heap): read it, don't optimise it.

- ids 0..255 are the single bytes, then the special tokens in the given order, then one id per merge.
- The text is split on the special tokens (longest first); special tokens are never counted or merged across.
- Each piece is pre-tokenized into the whole matches of ``regex.finditer(pattern, piece)``; pre-tokens are
  counted as UTF-8 bytes.
- A pair's count is the sum over pre-tokens of frequency x adjacent occurrences in the current segmentation.
- Each step merges the pair with the highest count; ties go to the greatest ``(bytes, bytes)`` tuple.
- A merge is applied left to right without overlap: "aaa" -> [aa, a].
- Tokens are bytes objects, so two merges that make the same bytes make the same token for counting.
"""
from collections import Counter

import regex


def _split_on_specials(text, special_tokens):
    """The pieces of `text` between special tokens (the special tokens themselves are dropped)."""
    if not special_tokens:
        return [text]
    ordered = sorted(special_tokens, key=len, reverse=True)  # longest first: "abc" wins over "ab"
    return regex.split("|".join(regex.escape(t) for t in ordered), text)


def oracle_count_pretokens(text, special_tokens, pattern):
    """Counter mapping each pre-token (UTF-8 bytes) to how often it occurs in `text`."""
    counts = Counter()
    for piece in _split_on_specials(text, special_tokens):
        for pretoken in (m.group() for m in regex.finditer(pattern, piece)):
            counts[pretoken.encode("utf-8")] += 1
    return counts


def _count_pairs(words):
    """Pair counts over all words, from scratch. `words` maps a segmentation (tuple of bytes) to its frequency."""
    pairs = Counter()
    for word, freq in words.items():
        for pair in zip(word, word[1:]):
            pairs[pair] += freq
    return pairs


def _merge_word(word, pair, new_token):
    """Replace each occurrence of `pair` in `word`, left to right without overlap, by `new_token`."""
    out = []
    i = 0
    while i < len(word):
        if i + 1 < len(word) and word[i] == pair[0] and word[i + 1] == pair[1]:
            out.append(new_token)
            i += 2
        else:
            out.append(word[i])
            i += 1
    return tuple(out)


def oracle_train_bpe(text, vocab_size, special_tokens, pattern):
    """Train byte-level BPE on `text`. Returns (vocab: dict[int, bytes], merges: list[tuple[bytes, bytes]])."""
    vocab = {i: bytes([i]) for i in range(256)}
    for token in special_tokens:
        vocab[len(vocab)] = token.encode("utf-8")
    counts = oracle_count_pretokens(text, special_tokens, pattern)
    merges = oracle_merges(counts, vocab_size - len(vocab))
    for a, b in merges:
        vocab[len(vocab)] = a + b
    return vocab, merges


def oracle_merges(counts, max_merges):
    """The first max_merges merges (fewer if the pairs run out) learned from {pre-token bytes: count}."""
    # Each pre-token starts as its sequence of single bytes. Words of one token hold no pair: leave them out.
    words = {}
    for pretoken, freq in counts.items():
        if len(pretoken) > 1 and freq > 0:
            words[tuple(bytes([b]) for b in pretoken)] = freq

    merges = []
    while len(merges) < max_merges:
        pairs = _count_pairs(words)
        if not pairs:
            break
        count, pair = max((count, pair) for pair, count in pairs.items())
        new_token = pair[0] + pair[1]
        merges.append(pair)

        merged = {}
        for word, freq in words.items():
            if pair[0] in word:  # cheap filter; _merge_word leaves other words unchanged anyway
                word = _merge_word(word, pair, new_token)
            if len(word) > 1:
                merged[word] = merged.get(word, 0) + freq
        words = merged
    return merges


# ---- training options and continued training (issue 14) ---------------------------------------------------
# The same literal algorithm with three additions: an initial merge list replayed first (each merge applied to
# every word in turn, as a learned one is), pairs whose token would be longer than max_token_length left out of
# the choice, and a stop when the best count is below min_frequency.

def _apply_merge(words, pair):
    """`words` ({segmentation: frequency}) with every occurrence of `pair` merged; words of one token dropped."""
    new_token = pair[0] + pair[1]
    merged = {}
    for word, freq in words.items():
        if pair[0] in word and pair[1] in word:  # cheap filter; _merge_word leaves other words unchanged anyway
            word = _merge_word(word, pair, new_token)
        if len(word) > 1:
            merged[word] = merged.get(word, 0) + freq
    return merged


def oracle_continue_merges(counts, max_merges, initial_merges=(), *, min_frequency=1, max_token_length=None,
                           with_counts=False):
    """The merges learned from {pre-token bytes: count} after replaying `initial_merges` (not included in the
    result). with_counts: also the counts, as a list of (count, pair) per replayed and then learned merge."""
    words = {}
    for pretoken, freq in counts.items():
        if len(pretoken) > 1 and freq > 0:
            words[tuple(bytes([b]) for b in pretoken)] = freq
    chosen = []
    for pair in initial_merges:
        if with_counts:
            chosen.append((_count_pairs(words).get(pair, 0), pair))
        words = _apply_merge(words, pair)

    merges = []
    while len(merges) < max_merges:
        candidates = [(count, pair) for pair, count in _count_pairs(words).items()
                      if max_token_length is None or len(pair[0]) + len(pair[1]) <= max_token_length]
        if not candidates:
            break
        count, pair = max(candidates)
        if count < min_frequency:
            break
        merges.append(pair)
        chosen.append((count, pair))
        words = _apply_merge(words, pair)
    return (merges, chosen) if with_counts else merges


def oracle_train_options(counts, vocab_size, special_tokens=(), *, min_frequency=1, max_token_length=None,
                         special_tokens_position="after_bytes", pad_vocab_to_multiple_of=None, initial=None):
    """(vocab, merges) as train_from_counts(counts, ...) gives them. initial: None, or the tokenizer to continue
    as (vocab {id: bytes}, merges [(bytes, bytes)], special tokens [str]).

    The vocabulary's size is its largest id + 1. New special tokens (those `initial` lacks) come right after
    the bytes / the initial vocabulary ("after_bytes") or after the new merges ("end"); one new id per merge;
    with pad_vocab_to_multiple_of the target size is vocab_size rounded up to a multiple of it."""
    if initial is None:
        vocab, old_merges, new_specials = {i: bytes([i]) for i in range(256)}, [], list(special_tokens)
    else:
        initial_vocab, old_merges, initial_specials = initial
        vocab = dict(initial_vocab)
        new_specials = [t for t in special_tokens if t not in initial_specials]
    size = max(vocab) + 1
    target = vocab_size
    if pad_vocab_to_multiple_of:
        while target % pad_vocab_to_multiple_of:
            target += 1
    merges = oracle_continue_merges(counts, target - size - len(new_specials), old_merges,
                                    min_frequency=min_frequency, max_token_length=max_token_length)
    specials = [t.encode("utf-8") for t in new_specials]
    made = [a + b for a, b in merges]
    for token in (specials + made if special_tokens_position == "after_bytes" else made + specials):
        vocab[size] = token
        size += 1
    return vocab, list(old_merges) + merges
