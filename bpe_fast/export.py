"""Writing a tokenizer for the libraries people already use: HF tokenizers (and transformers) and tiktoken.

Both files give the same ids as bpe_fast for the same text (on every code point when the tokenizer reads
characters as tiktoken and HF do, tokenizer.unicode "16.0", as from_tiktoken's and from_hf's; a CS336-side
tokenizer, unicode None, reads the characters Unicode 17 assigned as the installed `regex` does, the peers not):
  * HF `tokenizer.json`: a BPE model over GPT-2's byte-to-unicode strings, the tokenizer's normalizer (NFC, as
    Qwen's files have it, or none), a Split pre-tokenizer with the
    same regex (spelled for Oniguruma by bpe_fast.hf.split_to_hf: the built-in patterns as Isolated pieces,
    another as a Removed, inverted Split, whose pieces are its matches only, as bpe_fast's; DeepSeek V3's
    pattern as its three Splits: hf.pre_tokenizer_to_hf) followed by ByteLevel
    without its own regex, a ByteLevel decoder, and the special tokens as added tokens. The merges are
    "a b" strings, the form every tokenizers release reads (the [a, b] pairs need 0.20 or later); no mapped
    token holds a space (the space byte is written "Ġ"), so the one space between the two is unambiguous.
  * export_hf_dir: that file plus tokenizer_config.json and special_tokens_map.json, the folder
    transformers' save_pretrained writes, for PreTrainedTokenizerFast.from_pretrained.
  * tiktoken's `.tiktoken`: one line per ordinary token, its bytes in base64 and its rank (= its id).
    tiktoken merges by the rank of the merged token, which equals the merge order here since merged
    tokens get ids in creation order. Build the Encoding with the same pattern, spelled for tiktoken's regex
    engine (its anchors: bpe_fast.patterns.tiktoken_anchors; the built-in patterns stay as they are), and the
    same special tokens (tok.to_tiktoken() does all this):
        tiktoken.Encoding("mine", pat_str=tiktoken_anchors(tok.pattern),
                          mergeable_ranks=tiktoken.load.load_tiktoken_bpe("mine.tiktoken"),
                          special_tokens=tok.special_tokens)
    A pattern tiktoken's engine reads otherwise ([[:alpha:]] is ASCII there, ...) is refused, as to_tiktoken
    refuses it.
Files are written to a temporary name and renamed.
"""
from __future__ import annotations

import itertools
import json
import operator
import os
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from ._gpt2_files import TokenIndex, pack_pairs
from .atomic import output_group
from .formats import (json_merges_chunks, json_object_chunks, mapped_strs, merge_strs, pack_tokens, token_to_str,
                      tokens_to_strs, write_bytes_atomic, write_text_atomic)
from .hf import hf_added_token_difference, key_read_as_text, pre_tokenizer_to_hf
from .merge_rule import describe_difference, merge_rule_difference, repeated_merge
from .patterns import check_tiktoken_readable, tiktoken_anchors
from .ranks import ranked_tokens, ranks_from_tokenizer, tiktoken_text, vocab_of
from .specials import check_no_alias, first_prefix_pair
from .token_arrays import gather_tokens, same_tokens

if TYPE_CHECKING:
    import tiktoken as tiktoken_module

    from ._types import StrPath
    from .tokenizer import Tokenizer

HF_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def _check_unique(tokenizer: Tokenizer, unique: bool) -> None:
    """Two ids with the same bytes are refused, unless one is a special token and the other not: the file then
    holds the other in the model's vocab and the special token as an added token only (GPT-NeoX's runs of
    spaces), which HF finds in the text first, as bpe_fast does. (unique: no two of the vocabulary's ids have
    the same bytes, as _token_census says.)"""
    check_no_alias(tokenizer.special_tokens, "HF's files")
    if unique:
        return
    special = set(tokenizer.special_tokens.values())
    seen: dict[tuple[bytes, bool], int] = {}
    for i, tok in tokenizer.vocab.items():
        key = (tok, i in special)
        if key in seen:
            raise ValueError(f"tokens {seen[key]} and {i} have the same bytes {tok!r}; "
                             f"the exported file could hold only one of them")
        seen[key] = i


def _token_census(tokenizer: Tokenizer, all_tokens: Mapping[int, bytes]) -> tuple[bool, list[int]]:
    """(whether no two ids of all_tokens, the tokenizer's vocab, have the same bytes; the single bytes no token
    is), asked of a TokenIndex of the tokenizer's token_pool (o200k_base: 5 ms, where a set of its 200k bytes
    objects took 17), or of that set when the pool does not hold the vocabulary or the index is flooded."""
    pool, offsets = tokenizer.token_pool()
    empty = int(np.count_nonzero(offsets[1:] == offsets[:-1]))     # ids without bytes (no token is empty)
    if len(offsets) - 1 - empty == len(all_tokens):
        index = TokenIndex(pool, offsets)       # (the empty spans are one token to it, the others its duplicates)
        found = None if index.flooded else index.find(np.arange(256, dtype=np.uint8), np.arange(257, dtype=np.int64))
        if found is not None:
            return index.duplicates == max(empty - 1, 0), np.flatnonzero(found < 0).tolist()
    tokens = set(all_tokens.values())
    return len(tokens) == len(all_tokens), [b for b in range(256) if bytes([b]) not in tokens]


class _Vocab(NamedTuple):
    """The model's vocab of the document: {key: id} (entries), or, when every token is under its byte-level
    form (_plain_vocab), as arrays: key k is the byte-level form of token which[k] of pool (token j is
    pool[offsets[j]:offsets[j + 1]]) and ids[k] its id, in increasing order, written natively
    (formats.json_object_chunks) with no Python object a token."""
    entries: dict[str, int] | None
    pool: NDArray[np.uint8] | None
    offsets: NDArray[np.int64] | None
    which: NDArray[np.int64] | None
    ids: NDArray[np.int64] | None

    def as_dict(self) -> dict[str, int]:
        if self.entries is not None:
            return self.entries
        assert self.pool is not None and self.offsets is not None and self.which is not None and self.ids is not None
        pool, offsets = gather_tokens(self.pool, self.offsets, self.which)
        return dict(zip(mapped_strs(pool, offsets[1:]), self.ids.tolist()))

    def data(self) -> Iterable[bytes | NDArray[np.uint8]]:
        """json.dumps(self.as_dict(), ensure_ascii=False) in UTF-8, in chunks"""
        if self.entries is not None:
            return [json.dumps(self.entries, ensure_ascii=False).encode("utf-8")]
        assert self.pool is not None and self.offsets is not None and self.which is not None and self.ids is not None
        return json_object_chunks(self.pool, self.offsets, self.which, self.ids, False)


class _Document(NamedTuple):
    """hf_tokenizer_json's document but the model's vocab and merges (its last two keys), and those two (packed:
    the merges as pack_pairs gives them, or None)."""
    skeleton: dict[str, Any]
    vocab: _Vocab
    merges: list[tuple[bytes, bytes]]
    packed: tuple[NDArray[np.uint8], NDArray[np.int64]] | None

    def as_dict(self) -> dict[str, Any]:
        document = self.skeleton
        document["model"]["vocab"] = self.vocab.as_dict()
        document["model"]["merges"] = merge_strs(self.merges)
        return document

    def parts(self) -> Iterator[bytes | NDArray[np.uint8]]:
        """json.dumps(self.as_dict(), ensure_ascii=False) in UTF-8, in pieces to write one after the other: the
        vocab and the merges made natively from arrays, in chunks (formats.json_object_chunks, json_merges_chunks),
        between json.dumps of the rest ("model" is the document's last key, "vocab" and "merges" the model's)."""
        head = {key: value for key, value in self.skeleton.items() if key != "model"}
        assert list(self.skeleton)[-1] == "model" and head
        model = json.dumps(self.skeleton["model"], ensure_ascii=False)
        if self.packed is not None:
            merges: Iterable[bytes | NDArray[np.uint8]] = json_merges_chunks(self.packed)
        else:
            merges = [json.dumps(merge_strs(self.merges), ensure_ascii=False).encode("utf-8")]
        start = "".join([json.dumps(head, ensure_ascii=False)[:-1], ', "model": ', model[:-1], ', "vocab": '])
        return itertools.chain([start.encode("utf-8")], self.vocab.data(), [b', "merges": '], merges, [b"}}"])

    def text(self) -> str:
        """json.dumps(self.as_dict(), ensure_ascii=False)"""
        return b"".join(map(bytes, self.parts())).decode("utf-8")


def hf_tokenizer_json(tokenizer: Tokenizer) -> dict[str, Any]:
    """The tokenizer as an HF tokenizers `tokenizer.json` document (a dict).

    HF numbers the added tokens itself: one found (by its text) in the model's vocab keeps that id, the others
    follow the vocab in order (bpe_fast.hf.hf_added_token_ids). A special token whose text is its mapped form
    ("<|endoftext|>") can be in the model's vocab, as in GPT-2's own file; one that is not ("<|a b|>" is
    "<|aĠb|>" mapped) cannot, and must get its id from that order: the special tokens are put in the vocab
    (all that can be, or none, or those before the first that cannot) so that HF gives each its id, and a
    ValueError names the first for which no choice does (give such tokens the last ids)."""
    return _hf_document(tokenizer).as_dict()


def hf_tokenizer_text(tokenizer: Tokenizer) -> str:
    """json.dumps(hf_tokenizer_json(tokenizer), ensure_ascii=False), the text export_hf writes: the model's vocab
    and merges written from arrays (o200k_base's 200,000 tokens and merges: no dict of them, nor json's encoder
    on them)."""
    return _hf_document(tokenizer).text()


def _hf_document(tokenizer: Tokenizer) -> _Document:
    """hf_tokenizer_json's document, its vocab and merges apart (_Document)."""
    all_tokens: Mapping[int, bytes] = tokenizer.vocab
    unique, missing = _token_census(tokenizer, all_tokens)
    _check_unique(tokenizer, unique)
    if missing:
        raise ValueError(f"the single byte {bytes([missing[0]])!r} has no token ({len(missing)} bytes have none); "
                         "HF's byte-level model would drop it from the text")
    steps = pre_tokenizer_to_hf(tokenizer.pattern)
    if tokenizer.by_ranks_only:
        # ranks holding tokens that merging does not make (Llama 3's): written as transformers' TikTokenConverter
        # writes them, ignore_merges and every split of each token, which HF reads as tiktoken reads the ranks
        # (bpe_fast.ranks.not_as_ranks); the vocabulary is the ranks and the special tokens (a view's vocab holds
        # the others, which would be ranked tokens there, looked up whole: helper-112)
        ranked = ranked_tokens(tokenizer.tiktoken_ranks())
        merges = ranked.every_split_merges()
        all_tokens = vocab_of(ranked, tokenizer.special_tokens)
        unique = len(set(all_tokens.values())) == len(all_tokens)
        packed = pack_pairs(merges) if type(merges) is list and merges else None
    else:
        merges = list(tokenizer.merges)
        packed = pack_pairs(merges) if merges else None
        if not tables_made_as_listed(tokenizer, len(merges), packed):
            repeat = repeated_merge(merges)
            if repeat is not None:
                k, j = repeat
                raise ValueError(f"merge {k} ({merges[k][0]!r}, {merges[k][1]!r}) repeats merge {j}: HF ranks a pair "
                                 "by its last place, bpe_fast by its first, so HF would give other ids")
            difference = merge_rule_difference(merges)
            if difference is not None:
                k, parts = difference
                a, b = tokenizer.merges[k]
                raise ValueError(f"merge {k} ({a!r}, {b!r}): {describe_difference(a, b, parts)}")
    special_ids = sorted(tokenizer.special_tokens.items(), key=lambda item: item[1])
    own = None if tokenizer.by_ranks_only else tokenizer.token_pool()      # (by id: all_tokens is its vocab)
    vocab = _plain_vocab(all_tokens, special_ids, unique, merges, packed, own)
    if vocab is None:
        vocab = _Vocab(_placed_vocab(all_tokens, special_ids, merges), None, None, None, None)
    skeleton = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": i, "content": s, "single_word": False, "lstrip": s in tokenizer.special_lstrip, "rstrip": False,
             "normalized": False, "special": True}
            for s, i in special_ids
        ],
        "normalizer": None if tokenizer.normalizer is None else {"type": tokenizer.normalizer},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": steps},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        "model": {
            "type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
            "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
            "ignore_merges": tokenizer.by_ranks_only,
        },
    }
    return _Document(skeleton, vocab, merges, packed)


def tables_made_as_listed(tokenizer: Tokenizer, n_merges: int,
                           packed: tuple[NDArray[np.uint8], NDArray[np.int64]] | None) -> bool:
    """True when the tokenizer's tables, built by the ranks rule one pair a token (tables_made_by_merging, as
    from_tiktoken, from_files, from_hf and the constructor build them), made each ranked token, in rank order,
    from the two tokens of merge k of its merges (packed: pack_pairs of them): their joins are then distinct
    (no pair listed twice) and the ranks rule makes each as listed, which is what merge_rule.made_as_listed
    proves (merge_rule_difference is None), without proving it again. False when that is not shown."""
    if packed is None:
        return False
    trees = tokenizer.split_trees()
    if trees is None or len(trees[0]) != n_merges:
        return False
    left, right = trees
    parts = np.empty(2 * n_merges, dtype=np.int64)
    parts[0::2] = left
    parts[1::2] = right
    pool, offsets = tokenizer.token_pool()
    return same_tokens(pool, offsets, parts, packed[0], packed[1])


def _plain_vocab(all_tokens: Mapping[int, bytes], special_ids: list[tuple[str, int]], unique: bool,
                 merges: list[tuple[bytes, bytes]], packed: tuple[NDArray[np.uint8], NDArray[np.int64]] | None,
                 token_pool: tuple[NDArray[np.uint8], NDArray[np.int64]] | None = None) -> _Vocab | None:
    """The model's vocab when every token, the special tokens' too, is there under its byte-level form at its
    id: no two ids have the same bytes (unique), each special token's bytes are the vocabulary's at its id, its
    text is its byte-level form ("<|endoftext|>") and no merge takes or makes it. _placed_vocab then gives the
    same: HF finds each special token's text in the vocab, at its id. None otherwise (_placed_vocab decides).
    token_pool: all_tokens as Tokenizer.token_pool gives them (id i's bytes pool[offsets[i]:offsets[i + 1]]),
    when the caller has them: the vocab is then written from them, with no bytes object a token."""
    if not unique:
        return None
    if merges and packed is None:
        return None
    for s, i in special_ids:
        data = s.encode("utf-8")
        if all_tokens.get(i) != data or token_to_str(data) != s or (packed is not None and _in_merges(packed, data)):
            return None
    if token_pool is not None:
        pool, offsets = token_pool
        ids = np.flatnonzero(offsets[1:] != offsets[:-1])      # the ids with bytes: all_tokens' (no token is empty)
        if len(ids) == len(all_tokens):
            return _Vocab(None, pool, offsets, ids, ids)
    ids_list = sorted(all_tokens)
    if not set(map(type, ids_list)) <= {int}:
        return None
    tokens = list(map(all_tokens.__getitem__, ids_list))
    if not set(map(type, tokens)) <= {bytes}:
        return None
    pool, ends = pack_tokens(tokens)
    which = np.arange(len(tokens), dtype=np.int64)
    return _Vocab(None, pool, np.concatenate([np.zeros(1, dtype=np.int64), ends]), which,
                  np.array(ids_list, dtype=np.int64))


def _in_merges(packed: tuple[NDArray[np.uint8], NDArray[np.int64]], data: bytes) -> bool:
    """Whether `data` is a token of one of the merges pack_pairs gave as `packed` (one of its two or their join)."""
    pool, offsets = packed
    needle = np.frombuffer(data, dtype=np.uint8)
    for starts, stops in ((offsets[:-1], offsets[1:]), (offsets[0:-1:2], offsets[2::2])):
        found = np.flatnonzero(stops - starts == len(data))
        for chunk in range(0, len(found), 1 << 16):
            at = starts[found[chunk:chunk + (1 << 16)]]
            if np.any(np.all(pool[at[:, None] + np.arange(len(data))] == needle, axis=1)):
                return True
    return False


def _placed_vocab(all_tokens: Mapping[int, bytes], special_ids: list[tuple[str, int]],
                  merges: list[tuple[bytes, bytes]]) -> dict[str, int]:
    """The model's vocab {key: id}, the special tokens placed in it as hf_tokenizer_json says; ValueError for a
    special token no placement gives its id."""
    contents = [s for s, _ in special_ids]
    special_set = {i for _, i in special_ids}
    # {key: id}; of a special token and an ordinary one with the same bytes (_check_unique), the ordinary one's
    in_order = sorted(all_tokens, key=special_set.__contains__, reverse=True)      # specials first, stable
    all_keys = dict(zip(tokens_to_strs(map(all_tokens.__getitem__, in_order)), in_order))
    # a token a merge takes or makes must be in the model's vocab under its byte-level form, a special token's
    # too (the merges would name a token of no vocab: HF panics or refuses the file); HF gives an added token
    # whose text is not that form an id of its own, so such a special token cannot keep its id
    # (as bytes: the byte-level form of a token is one to one)
    merge_tokens = {a for a, _ in merges} | {b for _, b in merges} | set(itertools.starmap(bytes.__add__, merges))
    for s, i in special_ids:
        key = token_to_str(s.encode("utf-8"))
        if s.encode("utf-8") in merge_tokens and key != s and all_keys[key] == i:     # (not when an ordinary token holds it)
            k = next(k for k, (a, b) in enumerate(merges) if key in tokens_to_strs((a, b, a + b)))
            raise ValueError(f"special token {s!r} (id {i}) is a token of merge {k} ({merges[k][0]!r}, "
                             f"{merges[k][1]!r}): HF's model must hold it as {key!r}, and gives an added token "
                             f"whose text is not its byte-level form an id of its own")
    ordinary = dict(all_keys)       # but the special tokens no merge takes or makes
    for i in special_set:
        key = token_to_str(all_tokens[i]) if i in all_tokens else None
        if key is not None and all_keys.get(key) == i and all_tokens[i] not in merge_tokens:
            del ordinary[key]
    mapped = [(s, i) for s, i in special_ids if token_to_str(s.encode("utf-8")) == s]
    mapped_ids = {i for _, i in mapped}
    first_unmapped = min((i for _, i in special_ids if i not in mapped_ids), default=None)
    # last: every special token in the vocab, one whose text from_hf reads back as its UTF-8 under its text
    # (bpe_fast.hf.key_read_as_text: a character GPT-2's byte mapping lacks, as DeepSeek's files hold
    # "<\uff5cbegin\u2581of\u2581sentence\uff5c>", or bytes no text holds, as HF's trainer writes "<|début|>"):
    # HF finds it there and keeps its id
    raw = mapped + [(s, i) for s, i in special_ids if i not in mapped_ids and s not in ordinary and key_read_as_text(s)]
    choices = [mapped, [], [(s, i) for s, i in mapped if first_unmapped is None or i < first_unmapped], raw]
    ids = [i for _, i in special_ids]
    for in_vocab in choices:
        vocab = ordinary | dict(in_vocab)
        if hf_added_token_difference(vocab, contents, ids) is None:     # the ids of every tokenizers release
            break
    else:
        vocab = ordinary | dict(mapped)
        difference = hf_added_token_difference(vocab, contents, ids)
        assert difference is not None
        k, hf_id, which = difference
        s, i = special_ids[k]
        if vocab.get(s) == hf_id:       # (not "the next id after the vocab's size": HF finds it among the keys)
            raise ValueError(f"special token {s!r} has id {i}, but HF would give it id {hf_id}: its text is the "
                             f"byte-level spelling of token {hf_id} ({all_tokens[hf_id]!r}), and HF gives an added "
                             f"token the id of the vocab key that is its text")
        raise ValueError(f"special token {s!r} has id {i}, but HF would give it id {hf_id} ({which}: an added "
                         "token whose text is not its byte-level form gets the next id after the vocab's size, "
                         "its number of tokens)")
    return dict(sorted(vocab.items(), key=operator.itemgetter(1)))


def export_hf(tokenizer: Tokenizer, path: StrPath) -> None:
    """Write an HF tokenizers `tokenizer.json` (load it with tokenizers.Tokenizer.from_file)."""
    write_bytes_atomic(path, _hf_document(tokenizer).parts())


def export_hf_dir(tokenizer: Tokenizer, directory: StrPath, bos_token: str | None = None, eos_token: str | None = None,
                  pad_token: str | None = None) -> list[str]:
    """Write `directory` (created if missing) as transformers' save_pretrained does: tokenizer.json,
    tokenizer_config.json (tokenizer_class PreTrainedTokenizerFast, the special tokens, no clean-up of spaces
    in decode) and special_tokens_map.json. The roles bos/eos/pad, when given, name special tokens; the other
    special tokens are additional_special_tokens. Returns the paths written."""
    specials = tokenizer.special_tokens
    roles: dict[str, str] = {}
    for role, token in (("bos_token", bos_token), ("eos_token", eos_token), ("pad_token", pad_token)):
        if token is not None:
            if token not in specials:
                raise ValueError(f"{role} {token!r} is not one of the special tokens {list(specials)!r}")
            roles[role] = token
    additional = [s for s in specials if s not in roles.values()]
    made = _hf_document(tokenizer)      # checks before anything is written
    document = made.skeleton
    config = {
        # tokenizer.json's added tokens, their flags as there: transformers adds a token again when the two differ,
        # which would drop an lstrip (helper-109)
        "added_tokens_decoder": {
            str(entry["id"]): {key: entry[key] for key in ("content", "lstrip", "normalized", "rstrip", "single_word",
                                                           "special")}
            for entry in document["added_tokens"]
        },
        **roles,
        "additional_special_tokens": additional,
        "clean_up_tokenization_spaces": False,
        "tokenizer_class": "PreTrainedTokenizerFast",
    }
    directory = os.fspath(directory)
    paths = [os.path.join(directory, name) for name in HF_FILES]
    with output_group() as group:           # the three together: a failure leaves the folder as it was
        group.makedirs(directory)
        write_bytes_atomic(paths[0], made.parts(), group)
        write_text_atomic(paths[1], json.dumps(config, ensure_ascii=False, indent=2) + "\n", group)
        write_text_atomic(paths[2], json.dumps({**roles, "additional_special_tokens": additional},
                                               ensure_ascii=False, indent=2) + "\n", group)
    return paths


def export_tiktoken(tokenizer: Tokenizer, path: StrPath) -> None:
    """Write a `.tiktoken` ranks file (load it with tiktoken.load.load_tiktoken_bpe); special tokens are
    not in it: pass them to tiktoken.Encoding with their ids (tokenizer.special_tokens, a dict token -> id),
    and the pattern as tiktoken_anchors(tokenizer.pattern), or use tokenizer.to_tiktoken(). Refused with a
    ValueError, as to_tiktoken is, when tiktoken's rule with these ranks would give other ids
    (bpe_fast.ranks.ranks_from_tokenizer), its regex engine would cut the text otherwise
    (bpe_fast.patterns.check_tiktoken_readable), or, where one special token is the start of another, it would
    find the shorter (asked of tiktoken when it is installed: it tries them in its hash map's order)."""
    check_tiktoken_readable(tokenizer.pattern)
    ranks = ranks_from_tokenizer(tokenizer)
    if first_prefix_pair(tokenizer.special_tokens) is not None:
        try:
            import tiktoken
        except ImportError:
            pass
        else:
            tiktoken_encoding(tokenizer, tiktoken, "bpe_fast", ranks)
    write_text_atomic(path, tiktoken_text(ranks).decode("ascii"))


def tiktoken_encoding(tokenizer: Tokenizer, tiktoken: Any, name: str,
                      ranks: dict[bytes, int]) -> tiktoken_module.Encoding:
    """tiktoken.Encoding (of the module `tiktoken`) with the tokenizer's ranks (ranks_from_tokenizer), pattern and
    special tokens; ValueError when of two special tokens, one the start of the other, tiktoken would find the
    shorter (to_tiktoken's and export_tiktoken's refusal)."""
    specials = tokenizer.special_tokens
    enc = tiktoken.Encoding(name, pat_str=tiktoken_anchors(tokenizer.pattern), mergeable_ranks=ranks,
                            special_tokens=specials)
    # tiktoken finds special tokens by one alternation in its hash map's order, the tokenizer the longest first:
    # where one is a prefix of another, whether tiktoken tries the longer first is asked of it
    names = sorted(specials)
    for k, short in enumerate(names):
        for long in itertools.takewhile(lambda other: other.startswith(short), names[k + 1:]):
            found = enc.encode(long, allowed_special="all")
            if found != [specials[long]]:
                raise ValueError(f"special tokens {short!r} and {long!r}: tiktoken finds {short!r} first in "
                                 f"{long!r} ({found[:2]}...; it tries special tokens in its hash map's order, "
                                 "bpe_fast the longest first), so its ids would differ")
    return enc
