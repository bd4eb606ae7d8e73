"""A long differential fuzz of bpe_fast as a drop-in for tiktoken and HF tokenizers (gpt2, cl100k_base,
o200k_base; ranks offline: GPT-2's vocab.json fixture and the bpe-openai wheel): a seeded sample of its
generators, every expected value tiktoken's (or HF's, or `regex`'s pre-tokenization with tiktoken's BPE of each
piece), none written by hand. The long run (tens of thousands of texts an encoding and method) found no
difference; what is kept here are its kinds of text, a few hundred each, and the cases where tiktoken itself
cannot answer."""
import json
import random
import unicodedata

import numpy as np
import pytest

import bpe_fast
from bpe_fast.patterns import R50K_PATTERN
from corpora import EOT, FIXTURES, gpt2_decode
from openai_ranks import ENCODINGS, tiktoken_encoding

tiktoken = pytest.importorskip("tiktoken")
regex = pytest.importorskip("regex")

NAMES = ["gpt2", "cl100k_base", "o200k_base"]
_built = {}


def pair(name):
    """(tiktoken's Encoding, bpe_fast's) for `name`, from the same ranks, read offline."""
    if name not in _built:
        if name == "gpt2":
            path = FIXTURES / "gpt2_vocab.json"
            if not path.exists():
                pytest.skip("tests/fixtures/gpt2_vocab.json is missing")
            vocab = json.loads(path.read_text("utf-8"))
            ranks = {gpt2_decode(token): i for token, i in vocab.items() if token != EOT}
            kwargs = dict(pat_str=R50K_PATTERN, mergeable_ranks=ranks, special_tokens={EOT: 50256})
            _built[name] = (tiktoken.Encoding(name, **kwargs), bpe_fast.Encoding(name, **kwargs))
        else:
            theirs = tiktoken_encoding(name)     # skips without bpe-openai
            _built[name] = (theirs, bpe_fast.get_encoding(name))
    return _built[name]


# ------------------------------------------------------------------------------------------- the generators

def _by_category():
    cats = {}
    for cp in range(0, 0x110000, 7):        # every seventh code point: each category, assigned or not
        cats.setdefault(unicodedata.category(chr(cp)), []).append(cp)
    return cats


CATS = _by_category()
WS = [" ", "  ", "\n", "\r\n", "\r", "\t", "\x0b", "\x0c", "\u2028", "\u2029", "\xa0", "\x85", "\u3000", "\u200b",
      "\u2009", "\u202f", "\u1680", "\ufeff", "\x1c", "\x1f", "\u180e", "\u200d"]
APOS = ["'", "\u2019", "\u2018", "\u02bc", "\uff07", "`"]
CONTR = ["s", "t", "re", "ve", "m", "ll", "d", "S", "T", "RE", "Re", "VE", "LL", "D", "\u017f", "\u212a", "\u0130"]
SPECIAL_PARTS = ["<|endoftext|>", "<|endofprompt|>", "<|fim_prefix|>", "<|fim_suffix|>", "<|", "|>", "<|endoftext",
                 "endoftext|>", "<|endoftext|", "<<|endoftext|>", "<|endoftext|><|endoftext|>",
                 "<|<|endoftext|>|>", "<|end<|endoftext|>oftext|>", "<|im_start|>"]
WORDS = ["hello", "Hello", "HELLO", "na\u00efve", "Stra\u00dfe", "\u0391\u0392\u0393", "\u041f\u0440\u0438\u0432\u0435\u0442",
         "\u4e2d\u6587", "\u65e5\u672c\u8a9e\u306e", "\ud55c\uad6d\uc5b4", "\u0e44\u0e17\u0e22", "\u0939\u093f\u0928\u094d\u0926\u0940",
         "\u01c5ungla", "\uff21\uff22", "\U0001d400\U0001d401", "\u2160\u2161", "\u00b2\u00b3", "\u0663", "3.14",
         "1,000,000", "don't", "we'LL", "e\u0301", "\u0645\u0631\u062d\u0628\u0627", "\u05e9\u05dc\u05d5\u05dd",
         "\u202eabc\u202c", "\U0001F468\u200D\U0001F469\u200D\U0001F467", "\U0001F3F3\uFE0F\u200D\U0001F308",
         "\U0001F44D\U0001F3FD", "\U0001F1FA\U0001F1F8", "#\uFE0F\u20E3", "foo.bar()", "$100"]


def piece(rng):
    r = rng.randrange(16)
    if r < 4:
        return "".join(chr(rng.choice(CATS[rng.choice(sorted(CATS))])) for _ in range(rng.randint(1, 4)))
    if r < 7:
        return rng.choice(WORDS)
    if r < 9:
        return rng.choice(WS) * rng.randint(1, 5)
    if r == 9:
        return rng.choice(APOS) + rng.choice(CONTR)
    if r == 10:
        return rng.choice(SPECIAL_PARTS)
    if r == 11:
        return chr(rng.randint(0xD800, 0xDFFF))     # a lone surrogate
    if r == 12:
        return str(rng.randint(0, 10 ** rng.randint(1, 12)))
    if r == 13:
        return rng.choice(WS + list("1a\u4e2d'") + ["'s", "\r\n", "\u0301"]) * rng.randint(1, 300)
    if r == 14:
        return "".join(chr(rng.choice(CATS["Mn"])) for _ in range(rng.randint(1, 3)))
    return chr(rng.randint(32, 126)) * rng.randint(1, 4)


def text(rng):
    return "".join(piece(rng) for _ in range(rng.randint(0, 25)))


def outcome(f, *args, **kwargs):
    """f's result (arrays and completions made comparable) or its exception's type."""
    try:
        result = f(*args, **kwargs)
    except Exception as exc:
        return "raised", type(exc)
    if isinstance(result, np.ndarray):
        return result.dtype, result.tolist(), result.flags.writeable
    if f.__name__ == "encode_with_unstable":
        return result[0], sorted(result[1])     # (tiktoken's completions come in a hash set's order)
    return result


# ------------------------------------------------------------------------------------------- the comparisons

@pytest.mark.parametrize("name", NAMES)
def test_random_texts_encode_and_decode_as_tiktoken(name):
    theirs, ours = pair(name)
    rng = random.Random(f"fuzz-{name}")
    specials = sorted(theirs.special_tokens_set)
    for _ in range(250):
        t = text(rng)
        some = set(rng.sample(specials, rng.randint(0, len(specials))))
        for kwargs in [{}, {"allowed_special": "all"}, {"allowed_special": some}, {"disallowed_special": ()},
                       {"allowed_special": some, "disallowed_special": set(specials) - some}]:
            for method in ["encode", "encode_to_numpy"]:
                assert outcome(getattr(ours, method), t, **kwargs) == outcome(getattr(theirs, method), t, **kwargs), \
                    (method, t, kwargs)
        kwargs = rng.choice([{}, {"allowed_special": "all"}, {"disallowed_special": ()}])
        assert outcome(ours.encode_with_unstable, t, **kwargs) == outcome(theirs.encode_with_unstable, t, **kwargs), t
        assert ours.encode_ordinary(t) == theirs.encode_ordinary(t), t
        ids = theirs.encode(t, allowed_special="all")
        cut = ids[rng.randrange(len(ids) + 1):]        # (may start inside a character)
        for method in ["decode", "decode_bytes", "decode_with_offsets", "decode_tokens_bytes"]:
            for these in (ids, cut):
                assert outcome(getattr(ours, method), these) == outcome(getattr(theirs, method), these), (method, t)
        for errors in ["strict", "ignore", "backslashreplace"]:
            assert outcome(ours.decode, cut, errors=errors) == outcome(theirs.decode, cut, errors=errors), t
    batch = [text(rng) for _ in range(40)]
    for kwargs in [{}, {"allowed_special": "all"}, {"disallowed_special": ()}]:
        assert outcome(ours.encode_batch, batch, **kwargs) == outcome(theirs.encode_batch, batch, **kwargs)
    assert ours.encode_ordinary_batch(batch) == theirs.encode_ordinary_batch(batch)


@pytest.mark.parametrize("name", NAMES)
def test_every_id_and_the_vocabulary_as_tiktoken(name):
    theirs, ours = pair(name)
    for attribute in ["n_vocab", "max_token_value", "eot_token", "special_tokens_set"]:
        assert getattr(ours, attribute) == getattr(theirs, attribute)
    assert ours.token_byte_values() == theirs.token_byte_values()
    for i in list(range(theirs.n_vocab + 2)) + [-1, 2**32]:
        got = outcome(ours.decode_single_token_bytes, i)
        assert got == outcome(theirs.decode_single_token_bytes, i), i
        assert ours.is_special_token(i) == theirs.is_special_token(i)
        if not isinstance(got, tuple):
            assert ours.encode_single_token(got) == theirs.encode_single_token(got) == i


@pytest.mark.parametrize("name", NAMES)
def test_single_code_points_in_context_as_tiktoken(name):
    # a strided sample of every code point (unassigned ones and those assigned after Python's Unicode included)
    # where the patterns' classes decide: letters, digits, marks, case, contractions, white space
    theirs, ours = pair(name)
    points = [chr(cp) for cp in range(0, 0x110000, 61) if not 0xD800 <= cp < 0xE000]
    for context in ["x{c}x", " {c}1", "A{c}a", "{c}'s", "{c}{c} x", "\n{c}\u0301"]:
        texts = [context.format(c=c) for c in points]
        assert ours.encode_ordinary_batch(texts) == theirs.encode_ordinary_batch(texts), context


@pytest.mark.parametrize("name", NAMES)
def test_long_runs_as_tiktoken(name):
    theirs, ours = pair(name)
    for unit in [" ", "\n", "\r\n", "1", "a", "\u4e2d", "'s", "\u2019S", " a", "\xa0", "\x85", "\t \n", EOT,
                 "<|endoftext", "e\u0301", "\u2028", "\U0001F9D1\u200D\U0001F4BB"]:
        t = unit * (20_000 // len(unit))
        for kwargs in [{"allowed_special": "all"}, {"disallowed_special": ()}]:
            assert ours.encode(t, **kwargs) == theirs.encode(t, **kwargs), unit
        assert ours.encode_ordinary(t + "x") == theirs.encode_ordinary(t + "x"), unit


@pytest.mark.parametrize("name", NAMES)
def test_a_megabyte_of_spaces_before_a_letter_where_tiktoken_overflows(name):
    # tiktoken's regex engine (fancy-regex, backtracking \s+(?!\S)) panics with StackOverflow on a run of 2**20
    # spaces before a letter (pyo3's PanicException, a BaseException), o200k's on the run alone too. bpe_fast's
    # ids are those of `regex`'s pre-tokenization of the text, each piece merged by tiktoken (its encode's
    # look-up of the whole piece, then byte_pair_encode: _encode_single_piece).
    theirs, ours = pair(name)
    t = " " * 2**20 + "x"
    pieces = regex.findall(theirs._pat_str, t)
    assert [len(p) for p in pieces] == [2**20 - 1, 2]
    ranks = theirs._mergeable_ranks
    expected = [i for p in pieces for i in ([ranks[p.encode()]] if p.encode() in ranks
                                            else theirs._encode_single_piece(p))]
    assert ours.encode_ordinary(t) == expected
    assert ours.encode(t, allowed_special="all") == expected
    assert ours.decode(expected) == t


@pytest.mark.parametrize("name", NAMES)
def test_hf_reading_the_exported_file_as_tiktoken_and_from_hf(name, tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    theirs, ours = pair(name)
    path = tmp_path / "tokenizer.json"
    ours.tokenizer.export_hf(path)
    hf = tokenizers.Tokenizer.from_file(str(path))
    back = bpe_fast.Tokenizer.from_hf(path)
    rng = random.Random(f"hf-{name}")
    texts = [text(rng).encode("utf-8", "surrogatepass").decode("utf-8", "replace") for _ in range(300)]
    hf_ids = [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)]
    assert hf_ids == back.encode_batch(texts) == [theirs.encode(t, allowed_special="all") for t in texts]
    for ids in hf_ids:
        cut = ids[rng.randrange(len(ids) + 1):]
        assert back.decode(cut) == hf.decode(cut, skip_special_tokens=False) == theirs.decode(cut)
