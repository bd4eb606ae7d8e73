"""A small, obviously-correct BPE encoder: the reference the Cython encoder is tested against.

Slow on purpose: read it, don't optimise it.

- The text is split on the special tokens, longest first; each special token becomes its single id.
- Every other piece is cut into the whole matches of ``regex.finditer(pattern, piece)`` (text that no match
  covers is skipped, as tiktoken does); each pre-token's UTF-8 bytes start as single
  bytes.
- tiktoken's rule: while two adjacent parts concatenate to a token that some merge produced, join the pair
  whose concatenation was produced earliest (lowest merge index); on a tie, the leftmost pair.
- The merge-list rule (CS336's wording): while some adjacent pair is itself a merge, apply the earliest merge at its
  leftmost occurrence. For vocabularies produced by BPE training the two rules agree; the tests check that too.
- A part's id is the smallest id whose bytes it is.
"""
import regex


def token_ids(vocab):
    """bytes -> smallest id with those bytes."""
    ids = {}
    for i in sorted(vocab):
        ids.setdefault(vocab[i], i)
    return ids


def token_ranks(merges):
    """bytes -> index of the first merge that produced them."""
    ranks = {}
    for k, (a, b) in enumerate(merges):
        ranks.setdefault(a + b, k)
    return ranks


def merge_pretoken_tiktoken(piece, ranks):
    """The parts (bytes) of `piece` under tiktoken's rule."""
    parts = [bytes([b]) for b in piece]
    while len(parts) > 1:
        best = None
        for i in range(len(parts) - 1):
            rank = ranks.get(parts[i] + parts[i + 1])
            if rank is not None and (best is None or rank < best[0]):
                best = (rank, i)
        if best is None:
            break
        i = best[1]
        parts[i:i + 2] = [parts[i] + parts[i + 1]]
    return parts


def merge_pretoken_merge_list(piece, merges):
    """The parts (bytes) of `piece` under the merge-list rule."""
    merge_rank = {}
    for k, pair in enumerate(merges):
        merge_rank.setdefault(pair, k)
    parts = [bytes([b]) for b in piece]
    while len(parts) > 1:
        candidates = [(merge_rank[pair], i) for i, pair in enumerate(zip(parts, parts[1:])) if pair in merge_rank]
        if not candidates:
            break
        _, i = min(candidates)
        parts[i:i + 2] = [parts[i] + parts[i + 1]]
    return parts


def split_specials(text, special_tokens):
    """[(piece, is_special)] with the special tokens matched longest first."""
    if not special_tokens:
        return [(text, False)] if text else []
    ordered = sorted(special_tokens, key=len, reverse=True)
    pieces = regex.split("(" + "|".join(regex.escape(t) for t in ordered) + ")", text)
    # regex.split with one group alternates text, special, text, ...
    return [(p, k % 2 == 1) for k, p in enumerate(pieces) if p]


def oracle_encode(text, vocab, merges, special_tokens=(), pattern=None, rule="tiktoken"):
    """Encode `text` to a list of ids. `rule` is "tiktoken" or "merge-list"."""
    from bpe_fast.patterns import GPT2_PATTERN, resolve_pattern

    pattern = resolve_pattern(pattern or GPT2_PATTERN)
    ids = token_ids(vocab)
    next_id = max(vocab) + 1 if vocab else 0
    special_ids = {}
    for tok in special_tokens or ():
        b = tok.encode("utf-8")
        if b in ids:
            special_ids[tok] = ids[b]
        else:
            special_ids[tok] = next_id
            next_id += 1
    ranks = token_ranks(merges)
    out = []
    for piece, is_special in split_specials(text, special_tokens):
        if is_special:
            out.append(special_ids[piece])
            continue
        for pretoken in (m.group() for m in regex.finditer(pattern, piece)):
            data = pretoken.encode("utf-8")
            if rule == "tiktoken":
                parts = merge_pretoken_tiktoken(data, ranks)
            else:
                parts = merge_pretoken_merge_list(data, merges)
            out.extend(ids[p] for p in parts)
    return out


def oracle_decode(ids, vocab):
    return b"".join(vocab[i] for i in ids).decode("utf-8", errors="replace")


def assigned_in_old_unicode(text):
    """text without the code points unassigned in this Python's Unicode database (Unicode 14 for Python 3.11).

    A tokenizer reading characters as the installed `regex` does (unicode None: the CS336 side, and any custom
    pattern) classifies code points with Unicode 17 (regex 2025.9 and later), tiktoken with its Rust regex
    crate's Unicode 16.0: a code point assigned in between (U+3D000, a CJK letter since Unicode 17) is a letter
    to one and not to the other, so the pre-tokens, and the ids, differ there. Comparisons of such a tokenizer
    with tiktoken keep to code points both know (the drop-in paths' Unicode 16.0 needs no such care). A surrogate pair is the code point it spells (tiktoken and
    bpe_fast join one into it), so one spelling a new code point (U+3D000: "\\ud8b4\\udc00") goes too."""
    import unicodedata

    kept = []
    k = 0
    while k < len(text):
        c = text[k]
        if "\ud800" <= c <= "\udbff" and k + 1 < len(text) and "\udc00" <= text[k + 1] <= "\udfff":
            pair = text[k:k + 2]
            if unicodedata.category(pair.encode("utf-16", "surrogatepass").decode("utf-16")) != "Cn":
                kept.append(pair)
            k += 2
            continue
        if unicodedata.category(c) != "Cn":
            kept.append(c)
        k += 1
    return "".join(kept)
