"""What a tokenizer does to an evaluation text, at its full size and at every smaller one: the compression curve.

The encoding with only the first R merged tokens (in rank order) is the full encoding with every token of rank
>= R split back into the two parts its merge joined, recursively. So one encoding pass gives the token count at
every size: a produced token t falls into 1 + (the number of nodes u of its merge tree with rank(u) >= R)
pieces, since a node's parts always have lower ranks than the node (they existed before it), so every node of
rank >= R has only such nodes above it. Summed over the text,

    tokens(R) = tokens(full) + sum over ranked tokens u with rank(u) >= R of W(u),

where W(u) is how often u occurs in the merge trees of the produced tokens (as a produced token or inside one).
W comes from the produced-token counts by one pass from the last rank down, each token handing its count to its
parts (bpe_fast._inspect.propagate): O(vocabulary) after the encoding, whatever the size of the text.

This equals encoding with the truncated tokenizer when the encoder builds each token from the same two parts
wherever it makes it, in rank order, which holds for merges learned by BPE training (the merges of a training
run cut after R merges are the merges of training to R; tests/test_report.py checks the counts against
tokenizers trained to each size, and GPT-2's ranks cut at random sizes) and for tiktoken's ranks. A token
several merges make (an HF file converted from tiktoken's ranks lists each split) has the parts the encoder
joins, those its bytes alone merge into.

Sizes: a vocabulary of size V holds the tokens no merge makes (the 256 single bytes, the special tokens, any
other added token: B of them) and the first V - B merged tokens, so the curve runs from B (256 + the special
tokens, usually) to B + every distinct merged token, the tokenizer's vocab_size unless ids are missing or
repeated. A special token is one token at every size.

Per script: each produced token gets the class (SCRIPTS) of the first character in it that is not whitespace
(a token starting inside a character: that character; only whitespace: "whitespace"), from Unicode properties
(unicodedata); its parts at smaller sizes keep the class, and its bytes count for it. Words are maximal runs of
characters that are not whitespace (str.isspace).
"""
from __future__ import annotations

import dataclasses
import functools
import itertools
import os
import unicodedata
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, Union

import numpy as np
from numpy.typing import NDArray

from ._inspect import count_words, merge_forest, propagate, tally_tokens
from ._warn import warn_caller
from .inputs import CorpusDecodeError, read_documents
from .specials import shared_ids

if TYPE_CHECKING:
    from .tokenizer import Tokenizer

# an evaluation text: itself (str), its UTF-8 (bytes) or a file (os.PathLike); or an iterable of those
_Text = Union[str, bytes, bytearray, memoryview, "os.PathLike[str]"]
Texts = Union[_Text, Iterable[_Text]]

__all__ = ["compression_curve", "CompressionCurve", "TextAnalysis", "analyze_text", "merge_trees", "SCRIPTS"]

SCRIPTS = ("Latin", "Cyrillic", "CJK", "Arabic", "other letters", "digits", "whitespace", "punctuation/code")
_LATIN, _CYRILLIC, _CJK, _ARABIC, _OTHER_LETTERS, _DIGITS, _SPACE, _PUNCT = range(len(SCRIPTS))
# the first or second word of a letter's (or mark's) Unicode name that gives its script ("FULLWIDTH LATIN ...",
# "HALFWIDTH KATAKANA ...", "CJK UNIFIED IDEOGRAPH-4E00", "IDEOGRAPHIC ITERATION MARK")
_NAME_SCRIPTS = {"LATIN": _LATIN, "CYRILLIC": _CYRILLIC, "ARABIC": _ARABIC, "CJK": _CJK, "IDEOGRAPHIC": _CJK,
                 "HIRAGANA": _CJK, "KATAKANA": _CJK, "KATAKANA-HIRAGANA": _CJK, "HANGUL": _CJK, "BOPOMOFO": _CJK}


def script_of(char: str) -> str:
    """The SCRIPTS name of one character (the astral planes other than CJK ideographs count as
    "punctuation/code", with symbols and emoji).

    >>> [script_of(c) for c in "aЖ中ب3 ,"]
    ['Latin', 'Cyrillic', 'CJK', 'Arabic', 'digits', 'whitespace', 'punctuation/code']
    """
    cp = ord(char)
    if cp < 0x10000:
        return SCRIPTS[script_table()[cp]]
    return SCRIPTS[_CJK if 0x20000 <= cp < 0x40000 else _PUNCT]


# blocks of letters all of one script, classified without reading 30,000 names: CJK ideographs (extension A,
# unified, compatibility) and Hangul syllables
_CJK_BLOCKS = ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3), (0xF900, 0xFAFF))


@functools.lru_cache(maxsize=1)
def script_table() -> NDArray[np.uint8]:
    """uint8[65536]: the index in SCRIPTS of each code point of the Basic Multilingual Plane (read-only): whitespace
    (str.isspace), decimal digits (category Nd), letters and marks by the script their Unicode name starts with
    (its first or second word: "LATIN", "FULLWIDTH LATIN", "CJK", "HANGUL", ...; another script: "other
    letters"), and the rest (punctuation, symbols, other numbers, controls) "punctuation/code"."""
    chars = list(map(chr, range(0x10000)))
    kinds = list(map(unicodedata.category, chars))
    table = np.full(0x10000, _PUNCT, dtype=np.uint8)
    scripts = _NAME_SCRIPTS.get
    in_block = bytearray(0x10000)
    for low, high in _CJK_BLOCKS:
        in_block[low:high + 1] = b"\x01" * (high + 1 - low)
    for cp, kind in enumerate(kinds):
        if kind == "Nd":
            table[cp] = _DIGITS
        elif kind[0] in "LM" and not in_block[cp]:
            words = unicodedata.name(chars[cp], "").split(" ", 2)
            script = scripts(words[0])
            if script is None and len(words) > 1:
                script = scripts(words[1])
            table[cp] = _OTHER_LETTERS if script is None else script
    for low, high in _CJK_BLOCKS:
        for cp in range(low, high + 1):
            if kinds[cp][0] in "LM":
                table[cp] = _CJK
    table[np.fromiter(map(str.isspace, chars), dtype=bool, count=0x10000)] = _SPACE
    table.flags.writeable = False
    return table


@functools.lru_cache(maxsize=1)
def space_table() -> NDArray[np.uint8]:
    """script_table with whitespace only (the other code points are 0): enough to count words."""
    table = np.fromiter(map(str.isspace, map(chr, range(0x10000))), dtype=np.uint8, count=0x10000) * _SPACE
    table.flags.writeable = False
    return table


# ------------------------------------------------------------------------------------- merge trees

@dataclasses.dataclass(frozen=True)
class MergeTrees:
    """A tokenizer's merged tokens in rank order and their parts, as arrays.

    ranked_ids[r]: the id of the token of rank r (the r-th distinct token the merges make); left[r], right[r]:
    the ranks of the two parts the encoder joins into it (its merge's; -1 for a single byte or a special
    token); first_merge[r]: the index of the first merge making it;
    lengths[id]: the bytes of each id; base_size: the number of ids whose token no merge makes (256 bytes +
    special tokens, usually): the size of the vocabulary with no merged token."""
    ranked_ids: NDArray[np.int64]
    left: NDArray[np.int32]
    right: NDArray[np.int32]
    lengths: NDArray[np.int64]
    base_size: int
    first_merge: NDArray[np.int64]

    @property
    def full_size(self) -> int:
        return self.base_size + len(self.ranked_ids)


def merge_trees(tokenizer: Tokenizer) -> MergeTrees:
    """The MergeTrees of a bpe_fast.Tokenizer (its vocabulary and merges handed to the native
    bpe_fast._inspect.merge_forest as byte pools). A special token is matched before merging, so it is one
    token at every size even when a merge makes its bytes. ValueError when a merge's part is neither a single
    byte, a special token nor the token of an earlier merge (such a merge list is not one BPE training makes;
    the curve is not defined), as for a tokenizer by_ranks_only."""
    if tokenizer.by_ranks_only:     # its merges do not say how its tokens are made (helper-111)
        raise ValueError("this tokenizer's ranks hold tokens that merging the tokens ranked before them does not "
                         "make (as Llama 3's): its size cannot be cut by its merges; not supported")
    vocab = tokenizer.vocab
    size = tokenizer.vocab_size
    tokens = list(map(vocab.get, range(size), itertools.repeat(b"", size)))
    lengths = np.fromiter(map(len, tokens), dtype=np.int64, count=size)
    vocab_offsets = np.zeros(size + 1, dtype=np.int64)
    np.cumsum(lengths, out=vocab_offsets[1:])
    sides = list(itertools.chain.from_iterable(tokenizer.merges))
    merge_offsets = np.zeros(len(sides) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, sides), dtype=np.int64, count=len(sides)), out=merge_offsets[1:])
    ranked_ids, left, right, first_merge, base_size = merge_forest(
        np.frombuffer(b"".join(tokens), dtype=np.uint8), vocab_offsets,
        np.frombuffer(b"".join(sides), dtype=np.uint8), merge_offsets,
        np.array(sorted(set(tokenizer.special_tokens.values())), dtype=np.int64))
    return MergeTrees(ranked_ids=ranked_ids, left=left, right=right, lengths=lengths, base_size=base_size,
                      first_merge=first_merge)


# ------------------------------------------------------------------------------------- evaluation text

def read_texts(texts_or_paths: Texts, text_field: str = "text", text_column: str = "text",
               errors: str = "strict") -> Iterator[tuple[str, bytes, NDArray[np.int64]]]:
    """(name, data, bounds) of each evaluation text: document k of it is data[bounds[k]:bounds[k + 1]]. An
    os.PathLike is an input to read as training reads it (bpe_fast.inputs.read_documents: a file of any kind, a
    folder or a glob; a text file, compressed or not, is one document, JSON lines' text_field and Parquet's
    text_column one a line or row), a text each file; a str is the text itself, bytes are its UTF-8. One str,
    bytes or path alone is one text. An empty text is a ValueError naming it. A text file's bytes are not
    checked here: encode_ids checks them as it encodes."""
    if isinstance(texts_or_paths, (str, bytes, bytearray, memoryview, os.PathLike)):
        texts_or_paths = [texts_or_paths]
    count = 0
    for k, item in enumerate(texts_or_paths):
        if isinstance(item, os.PathLike):
            texts = read_documents(os.fspath(item), text_field, text_column, errors)
        elif isinstance(item, str):
            if len(item) < 4096 and "\n" not in item and os.path.isfile(item):
                warn_caller(f"{item!r} is taken as the text itself; pass pathlib.Path({item!r}) to read the file")
            try:
                data = item.encode("utf-8")
            except UnicodeEncodeError:      # lone surrogates: U+FFFD, as encode does
                data = item.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode("utf-8")
            texts = iter([(f"text {k}", data, np.array([0, len(data)], dtype=np.int64))])
        elif isinstance(item, (bytes, bytearray, memoryview)):
            data = bytes(item)
            texts = iter([(f"text {k}", data, np.array([0, len(data)], dtype=np.int64))])
        else:
            raise TypeError(f"item {k}: expected a path (os.PathLike), a str or bytes, got {type(item).__name__}")
        for name, data, bounds in texts:
            count += 1
            if not data:
                raise ValueError(f"{name}: the evaluation text is empty")
            yield name, data, bounds
    if count == 0:
        raise ValueError("no evaluation text given")


@dataclasses.dataclass(frozen=True)
class CompressionCurve:
    """Token counts of an evaluation text at several vocabulary sizes (compression_curve).

    vocab_sizes, tokens: int64 arrays, the text's token count at each size; bytes: the text's UTF-8 bytes (for a
    script: the bytes of its tokens); words: its words (None for a script). scripts: per SCRIPTS name (those with
    bytes in the text), the same for the tokens of that class, or None."""
    vocab_sizes: NDArray[np.int64]
    tokens: NDArray[np.int64]
    bytes: int
    words: int | None = None
    scripts: dict[str, CompressionCurve] | None = None

    @property
    def bytes_per_token(self) -> NDArray[np.float64]:
        """float64 array, one value a size."""
        return self.bytes / np.maximum(self.tokens, 1)

    @property
    def tokens_per_word(self) -> NDArray[np.float64]:
        """float64 array, one value a size (NaN without words)."""
        if not self.words:
            return np.full(len(self.tokens), np.nan)
        return self.tokens / self.words

    def tokens_at(self, vocab_size: int) -> int:
        """The token count at one of the curve's sizes."""
        where = np.flatnonzero(self.vocab_sizes == vocab_size)
        if not len(where):
            raise KeyError(f"the curve has no vocabulary size {vocab_size}")
        return int(self.tokens[where[0]])


class TextAnalysis:
    """A tokenizer's encoding of evaluation texts, tallied: what compression_curve and the report read.

    counts: int64 (vocab_size, classes): how often each id was produced (by script class with by_script, else
    one column); class_bytes: their bytes by class; words; sources: (name, bytes, tokens) of each text;
    shared_counts: {id: {special token: count}} for each id several special tokens share (o200k_harmony's
    <|endofprompt|> and <|reserved_200018|>: specials.shared_ids), how often the text held each of them, in the
    order given (counts holds their sum at the id)."""

    def __init__(self, trees: MergeTrees, counts: NDArray[np.int64], class_bytes: NDArray[np.int64], words: int,
                 sources: list[tuple[str, int, int]], shared_counts: dict[int, dict[str, int]] | None = None) -> None:
        self.trees, self.counts, self.class_bytes, self.words, self.sources = trees, counts, class_bytes, words, sources
        self.shared_counts = {} if shared_counts is None else shared_counts
        self._weights: NDArray[np.int64] | None = None

    @property
    def bytes(self) -> int:
        """The texts' UTF-8 bytes (as read: errors="replace" counts U+FFFD's), what bytes per token divides: for
        every tokenizer the same figure of the same text. (class_bytes are the bytes of the tokens: fewer where
        a pattern leaves text out, other where a normalizer changes it; helper-145.)"""
        return sum(size for _, size, _ in self.sources)

    @property
    def tokens(self) -> int:
        return int(self.counts.sum())

    @property
    def produced(self) -> NDArray[np.int64]:
        """int64 (vocab_size,): how often each id was produced."""
        return self.counts.sum(axis=1)

    def weights(self) -> NDArray[np.int64]:
        """int64 (ranks, classes): how often each ranked token occurs in the merge trees of the produced tokens
        (as one of them, or inside one), by class."""
        if self._weights is None:
            weights = np.ascontiguousarray(self.counts[self.trees.ranked_ids])
            propagate(self.trees.left, self.trees.right, weights)
            self._weights = weights
        return self._weights

    def curve(self, vocab_sizes: Iterable[int] | None = None) -> CompressionCurve:
        """The CompressionCurve at every size from trees.base_size to trees.full_size, or at `vocab_sizes`."""
        trees = self.trees
        weights = self.weights()
        n_ranks = len(trees.ranked_ids)
        if vocab_sizes is None:
            rows = np.arange(n_ranks + 1)
        else:
            rows = _size_rows(vocab_sizes, trees)
        suffix = np.zeros((n_ranks + 1, weights.shape[1]), dtype=np.int64)
        if n_ranks:
            suffix[:n_ranks] = np.cumsum(weights[::-1], axis=0)[::-1]
        tokens = self.counts.sum(axis=0) + suffix[rows]
        sizes = rows + trees.base_size
        total = CompressionCurve(sizes, tokens.sum(axis=1), self.bytes, self.words)
        if tokens.shape[1] == 1:
            return total
        scripts = {SCRIPTS[c]: CompressionCurve(sizes, np.ascontiguousarray(tokens[:, c]), int(self.class_bytes[c]))
                   for c in range(len(SCRIPTS)) if self.class_bytes[c]}
        return dataclasses.replace(total, scripts=scripts)


def _size_rows(vocab_sizes: Iterable[int], trees: MergeTrees) -> NDArray[np.int64]:
    sizes = []
    for v in vocab_sizes:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"vocab_sizes must be ints, got {v!r}")
        if not trees.base_size <= v <= trees.full_size:
            raise ValueError(f"vocabulary size {v} is outside {trees.base_size}..{trees.full_size} (the "
                             f"{trees.base_size} tokens no merge makes, up to every merged token)")
        sizes.append(int(v) - trees.base_size)
    if not sizes:
        raise ValueError("vocab_sizes is empty")
    return np.array(sizes, dtype=np.int64)


def encode_ids(tokenizer: Tokenizer, name: str, data: bytes, errors: str = "strict",
               bounds: NDArray[np.int64] | None = None) -> tuple[bytes, NDArray[Any]]:
    """(data, ids): the evaluation text `data` (bytes) and its ids (encode_utf8_to_numpy, which checks the
    UTF-8 as it goes). Invalid UTF-8 is a CorpusDecodeError naming `name` and the byte offset; with
    errors="replace" it becomes U+FFFD (the data returned is then the replaced text's). bounds: the documents
    of data (read_texts), each encoded alone; several are valid UTF-8 already (JSON lines, Parquet rows)."""
    if bounds is not None and len(bounds) > 2:
        return data, tokenizer.encode_documents_utf8(data, bounds)
    try:
        return data, tokenizer.encode_utf8_to_numpy(data)
    except UnicodeDecodeError as exc:
        if errors == "strict":
            raise CorpusDecodeError(name, exc.start, exc.reason, data.count(b"\n", 0, exc.start) + 1) from None
    data = data.decode("utf-8", "replace").encode("utf-8")
    return data, tokenizer.encode_utf8_to_numpy(data)


def analyze_text(tokenizer: Tokenizer, texts_or_paths: Texts, *, by_script: bool = False, errors: str = "strict",
                 trees: MergeTrees | None = None, text_field: str = "text", text_column: str = "text") -> TextAnalysis:
    """Encode the evaluation texts once (each alone, special tokens matched) and tally the ids: a TextAnalysis.
    Arguments as compression_curve's; trees: merge_trees(tokenizer), if already made."""
    if errors not in ("strict", "replace"):
        raise ValueError(f"errors must be 'strict' or 'replace', got {errors!r}")
    trees = merge_trees(tokenizer) if trees is None else trees
    table = script_table() if by_script else space_table()
    classes = len(SCRIPTS) if by_script else 1
    counts = np.zeros((len(trees.lengths), classes), dtype=np.int64)
    class_bytes = np.zeros(classes, dtype=np.int64)
    words = 0
    sources = []
    specials, vocab = tokenizer.special_tokens, tokenizer.vocab
    # an id whose bytes are a special token not among these (a tokenizer matching only some of those sharing an
    # id: restricted_to, or its pickle) is shared too: the text holds other bytes there than the vocabulary
    holders = {i: vocab[i].decode("utf-8", "replace") for name, i in specials.items()
               if vocab[i] != name.encode("utf-8")}
    shared_counts = {i: {name: 0 for name, j in specials.items() if j == i} for i in shared_ids(specials, holders)}
    for name, data, bounds in read_texts(texts_or_paths, text_field, text_column, errors):
        data, ids = encode_ids(tokenizer, name, data, errors, bounds)
        if shared_counts:
            _tally_shared(tokenizer, data, ids, trees.lengths, table, counts, class_bytes, shared_counts)
        else:
            # the tokens' own bytes when they do not cover the text (a pattern that leaves some out): walked by the
            # tokens' lengths, the text put every token after a gap on the wrong bytes
            # (or a normalizer's: its text may keep the length with other bytes, helper-145)
            covers = tokenizer.normalizer is None and int(trees.lengths[ids].sum()) == len(data)
            tokens_bytes = data if covers else tokenizer.decode_bytes(ids)
            tally_tokens(tokens_bytes, ids, trees.lengths, table, counts, class_bytes, _SPACE, _CJK, _PUNCT)
        if len(bounds) > 2:             # documents: a word never runs on into the next
            edges = bounds.tolist()
            view = memoryview(data)
            words += sum(count_words(view[a:b], table, _SPACE, _CJK, _PUNCT) for a, b in zip(edges[:-1], edges[1:]))
        else:
            words += count_words(data, table, _SPACE, _CJK, _PUNCT)
        sources.append((name, len(data), len(ids)))
    return TextAnalysis(trees, counts, class_bytes, words, sources, shared_counts)


def _tally_shared(tokenizer: Tokenizer, data: bytes, ids: NDArray[Any], lengths: NDArray[np.int64],
                  table: NDArray[np.uint8], counts: NDArray[np.int64], class_bytes: NDArray[np.int64],
                  shared_counts: dict[int, dict[str, int]]) -> None:
    """tally_tokens for a tokenizer whose special tokens share an id (o200k_harmony's <|endofprompt|> and
    <|reserved_200018|>): the vocabulary holds the first's bytes at the id, the text the one matched. Each token
    whose bytes are not its id's in the vocabulary is tallied under an id past the vocabulary, of its own
    length, whose counts are then added to its id's; each token of an id in shared_counts counts there for the
    special token the text holds (its bytes, as long as Tokenizer.lengths_in measures them)."""
    own = tokenizer.lengths_in(data, ids)
    at = np.flatnonzero(np.isin(ids, list(shared_counts)))
    starts = np.cumsum(own) - own
    for i, start, n in zip(ids[at].tolist(), starts[at].tolist(), own[at].tolist()):
        shared_counts[i][data[start:start + n].decode("utf-8")] += 1
    differs = np.flatnonzero(own != lengths[ids])
    pairs = list(zip(ids[differs].tolist(), own[differs].tolist()))
    extra = list(dict.fromkeys(pairs))          # (id, length), each once
    index = {pair: len(lengths) + j for j, pair in enumerate(extra)}
    ids = ids.copy()
    ids[differs] = [index[pair] for pair in pairs]
    wide = np.zeros((len(lengths) + len(extra), counts.shape[1]), dtype=np.int64)
    tally_tokens(data, ids, np.concatenate([lengths, np.array([n for _, n in extra], dtype=np.int64)]), table, wide,
                 class_bytes, _SPACE, _CJK, _PUNCT)
    counts += wide[:len(lengths)]
    for (i, _), row in zip(extra, wide[len(lengths):]):
        counts[i] += row


def compression_curve(tokenizer: Tokenizer, texts_or_paths: Texts, vocab_sizes: Iterable[int] | None = None, *,
                      by_script: bool = False, errors: str = "strict", text_field: str = "text",
                      text_column: str = "text") -> CompressionCurve:
    """Bytes per token (and tokens per word) of the evaluation text at every vocabulary size from 256 + the
    special tokens (the tokens no merge makes) to the tokenizer's full size (or at `vocab_sizes`), from one
    encoding pass: a
    CompressionCurve. Equal to encoding the text with the tokenizer cut to each size (its first merged tokens;
    see bpe_fast.curve for how, and why it is exact).

    texts_or_paths: a text (str), its UTF-8 (bytes), a file (pathlib.Path or any os.PathLike: of any kind
    training reads, a folder or a glob too; JSON lines' text under text_field, Parquet's under text_column, each
    line or row a document), or an iterable of those; each is encoded alone, special tokens matched (one token
    at every size). by_script: also the
    curve of each script class (CompressionCurve.scripts). Invalid UTF-8 in a file is a CorpusDecodeError naming
    it and the byte offset (errors="replace": U+FFFD); an empty text is a ValueError naming it.

    >>> from bpe_fast import Tokenizer
    >>> vocab = {i: bytes([i]) for i in range(256)} | {256: b"ab", 257: b"abc"}
    >>> tok = Tokenizer(vocab, [(b"a", b"b"), (b"ab", b"c")])
    >>> curve = compression_curve(tok, "abcab")
    >>> curve.vocab_sizes.tolist(), curve.tokens.tolist(), curve.bytes_per_token.tolist()
    ([256, 257, 258], [5, 3, 2], [1.0, 1.6666666666666667, 2.5])
    """
    return analyze_text(tokenizer, texts_or_paths, by_script=by_script, errors=errors, text_field=text_field,
                        text_column=text_column).curve(vocab_sizes)
