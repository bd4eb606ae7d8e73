"""A small, obviously-correct BPE trainer: the reference the Cython engine is tested against.

It follows issue 2's semantics literally and recounts every pair from scratch at each step. It is slow on purpose
(no incremental updates, no heap): read it, don't optimise it.

- ids 0..255 are the single bytes, then the special tokens in the given order, then one id per merge.
- The text is split on the special tokens (longest first); special tokens are never counted or merged across.
- Each piece is pre-tokenized with ``regex.findall(pattern, piece)``; pre-tokens are counted as UTF-8 bytes.
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
        for pretoken in regex.findall(pattern, piece):
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
