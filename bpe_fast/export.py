"""Writing a tokenizer for the libraries people already use: HF tokenizers and tiktoken.

Both files give the same ids as bpe_fast for the same text:
  * HF `tokenizer.json`: a BPE model over GPT-2's byte-to-unicode strings, a Split pre-tokenizer with the
    same regex (isolated pieces) followed by ByteLevel without its own regex, a ByteLevel decoder, and
    the special tokens as added tokens.
  * tiktoken's `.tiktoken`: one line per ordinary token, its bytes in base64 and its rank (= its id).
    tiktoken merges by the rank of the merged token, which equals the merge order here since merged
    tokens get ids in creation order. Build the Encoding with the same pattern and special tokens:
        tiktoken.Encoding("mine", pat_str=tok.pattern,
                          mergeable_ranks=tiktoken.load.load_tiktoken_bpe("mine.tiktoken"),
                          special_tokens={s: id for id, s in ...})
Files are written to a temporary name and renamed.
"""
import base64
import json

from .formats import token_to_str, write_text_atomic
from .patterns import GPT4_PATTERN

# HF tokenizers runs Split patterns on Oniguruma, where "{1,3}+" repeats the interval instead of making
# it possessive. At the end of its alternative a possessive and a greedy "{1,3}" match the same, so the
# exported GPT-4 pattern drops the "+".
_HF_PATTERN = {GPT4_PATTERN: GPT4_PATTERN.replace(r"\p{N}{1,3}+", r"\p{N}{1,3}")}


def _check_unique(tokenizer):
    seen = {}
    for i, tok in tokenizer.vocab.items():
        if tok in seen:
            raise ValueError(f"tokens {seen[tok]} and {i} have the same bytes {tok!r}; "
                             f"the exported file could hold only one of them")
        seen[tok] = i


def hf_tokenizer_json(tokenizer):
    """The tokenizer as an HF tokenizers `tokenizer.json` document (a dict)."""
    _check_unique(tokenizer)
    specials = set(tokenizer.special_tokens)
    special_ids = {s: i for i, tok in tokenizer.vocab.items() for s in specials if tok == s.encode("utf-8")}
    # special tokens are in the model's vocab too (as in GPT-2's own file): HF takes an added token's id
    # from there, and would give it a new id past the vocab otherwise
    vocab = {token_to_str(tok): i for i, tok in tokenizer.vocab.items()}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": special_ids[s], "content": s, "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": True}
            for s in tokenizer.special_tokens
        ],
        "normalizer": None,
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": _HF_PATTERN.get(tokenizer.pattern, tokenizer.pattern)}, "behavior": "Isolated",
                 "invert": False},
                {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
            ],
        },
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        "model": {
            "type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
            "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
            "vocab": vocab,
            "merges": [[token_to_str(a), token_to_str(b)] for a, b in tokenizer.merges],
        },
    }


def export_hf(tokenizer, path):
    """Write an HF tokenizers `tokenizer.json` (load it with tokenizers.Tokenizer.from_file)."""
    write_text_atomic(path, json.dumps(hf_tokenizer_json(tokenizer), ensure_ascii=False))


def export_tiktoken(tokenizer, path):
    """Write a `.tiktoken` ranks file (load it with tiktoken.load.load_tiktoken_bpe); special tokens are
    not in it: pass them to tiktoken.Encoding with their ids (tokenizer.special_token_ids())."""
    _check_unique(tokenizer)
    specials = {s.encode("utf-8") for s in tokenizer.special_tokens}
    lines = [f"{base64.b64encode(tok).decode('ascii')} {i}\n"
             for i, tok in sorted(tokenizer.vocab.items()) if tok not in specials]
    write_text_atomic(path, "".join(lines))


def special_token_ids(tokenizer):
    """{special token: id}."""
    by_bytes = {tok: i for i, tok in tokenizer.vocab.items()}
    return {s: by_bytes[s.encode("utf-8")] for s in tokenizer.special_tokens}
