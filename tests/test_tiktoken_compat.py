"""bpe_fast.Encoding and Tokenizer against tiktoken itself: GPT-2, cl100k_base and o200k_base ranks.

Every Encoding method is called on bpe_fast's Encoding and on tiktoken's with the same arguments; results and
exceptions (type, and the message where tiktoken's is meant for people) must be the same. The ranks are read
offline (tests/openai_ranks.py: cl100k_base and o200k_base from the bpe-openai wheel; GPT-2's from
tests/fixtures); tests skip with the reason when the wheel is missing.
"""
import functools
import json
import pickle
import subprocess
import sys

import numpy as np
import pytest
import regex
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import bpe_fast
import bpe_fast.encoding
from bpe_fast import Encoding, Tokenizer
from bpe_fast._encode import DECODE_PARALLEL_IDS
from bpe_fast.patterns import (DEEPSEEK3_PATTERN, GPT2_PATTERN, KIMI_PAT_STR, KIMI_PATTERN, LLAMA3_PATTERN, QWEN2_PATTERN,
                               TEKKEN_PATTERN, V1_PREFIX, pattern_from_tiktoken, resolve_pattern, swap_tiktoken_anchors)
from bpe_fast.ranks import ranks_from_tokenizer
from corpora import FIXTURES
from encode_oracle import assigned_in_old_unicode
from openai_ranks import ENCODINGS, load_ranks, ranks_path

tiktoken = pytest.importorskip("tiktoken")

EOT = "<|endoftext|>"
FEW = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SOME = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NAMES = ["gpt2", "cl100k_base", "o200k_base", "llama3", "qwen2", "tekken", "deepseek3", "kimi"]
# Llama 3's, Qwen2's and DeepSeek V3's patterns (natively scanned, as the three above) over cl100k_base's ranks and
# special tokens, Tekken's and Kimi K2's over o200k_base's
OTHER_PATTERNS = {"llama3": (LLAMA3_PATTERN, "cl100k_base"), "qwen2": (QWEN2_PATTERN, "cl100k_base"),
                  "tekken": (TEKKEN_PATTERN, "o200k_base"), "deepseek3": (DEEPSEEK3_PATTERN, "cl100k_base"),
                  "kimi": (KIMI_PAT_STR, "o200k_base")}     # Kimi K2's pat_str (tiktoken's spelling: read natively)

TRICKY = [
    "", " ", "  ", "\n", "\r\n", "\r\n\r\n  \r\n", "a\n\n\nb", "trailing spaces   ", "   leading", "tab\tand\t\ttabs",
    "I'm don't we'll they've she'd it's", "I'M DON'T WE'LL THEY'VE SHE'D IT'S", "i'M dOn'T wE'lL", "'s 'S 'll 'LL 'x",
    "O'Neil's rock'n'roll", "don't\n'tis", "12 123 1234 12345 123456789 3.14159 1,000,000 0x1F 2024-05-13",
    "٣٤٥٦٧ १२३४ ½ x² ⅓ 𝟙𝟚𝟛", "hello world", "Hello World HELLO wORLD HeLLo", "CamelCaseWords andHTTPServer",
    "😀 🎉🎉 👩‍👩‍👧 ✨ 🇫🇷🇩🇪 ❤️", "東京 日本語の文章です。我能吞下玻璃而不伤身体。", "한국어 안녕하세요",
    "مرحبا بالعالم! السَّلَامُ عَلَيْكُمْ", "शालि हिन्दी नमस्ते क्षत्रिय",
    "Ελληνικά Привет мир съешь ещё", "שָׁלוֹם עולם",
    "Straße Größe naïve café façade déjà vu", "e\u0301 a\u0308\u0304 n\u0303", "ﬁ ﬂ ǅ ǈ ǋ",
    "\u00a0\u3000\u2028\u2029\x0b\x0c", "a/b//c\n/d", "...!!!???---***", "$5 #tag @me 100% <html><body>",
    "\x00\x01\x7f\x80 control", "a\ud800b", "\udfff", "\ud83d\ude00", "x\ud83dy\ude00z", "<|endoftext|>",
    "a<|endoftext|>b<|endoftext|>",
    "<|endoftext|<|endoftext|>|>", "<|endofprompt|> and <|fim_prefix|>x<|fim_suffix|>", "<|endoftext", "endoftext|>",
    "word" * 300, " " * 70, "\n" * 40 + "x", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "💩" * 30,
]


# ------------------------------------------------------------------------------------- the encodings

def gpt2_ranks():
    tok = Tokenizer.from_files(FIXTURES / "gpt2_vocab.json", FIXTURES / "gpt2_merges.txt", [EOT])
    return ranks_from_tokenizer(tok), tok


_pairs = {}


def encodings(name):
    """(bpe_fast Encoding, tiktoken Encoding) for `name`, built once."""
    if name not in _pairs:
        if name == "gpt2":
            ranks, _ = gpt2_ranks()
            pattern, specials = GPT2_PATTERN, {EOT: 50256}
        elif name in OTHER_PATTERNS:
            pattern, ranks_name = OTHER_PATTERNS[name]
            ranks, specials = load_ranks(ranks_name), ENCODINGS[ranks_name][1]
        else:
            ranks = load_ranks(name)
            pattern, specials = ENCODINGS[name]
        ours = Encoding(name, pat_str=pattern, mergeable_ranks=ranks, special_tokens=specials)
        theirs = tiktoken.Encoding(name, pat_str=pattern, mergeable_ranks=ranks, special_tokens=specials)
        _pairs[name] = ours, theirs
    return _pairs[name]


@pytest.fixture(scope="module", params=NAMES)
def pair(request):
    return encodings(request.param)


def outcome(call):
    """What a call gives, comparably: ("ok", value) or ("raise", exception type, message). Messages are
    compared for the exceptions tiktoken words itself (ValueError, KeyError, OverflowError, AssertionError)."""
    try:
        value = call()
    except Exception as exc:        # noqa: BLE001 (comparing exceptions is the point)
        shown = str(exc) if isinstance(exc, (ValueError, KeyError, OverflowError, AssertionError)) else None
        if isinstance(exc, UnicodeError):
            shown = str(exc)
        return "raise", type(exc), shown
    if isinstance(value, np.ndarray):
        return "ok", ("array", value.dtype, value.tolist())
    return "ok", value


def same(pair, call, *args, **kwargs):
    """call(encoding, *args, **kwargs) on both encodings of `pair` (`call` may be a method's name) gives the
    same outcome; returns it."""
    if isinstance(call, str):
        name = call

        def call(encoding, *a, **k):
            return getattr(encoding, name)(*a, **k)

    ours, theirs = pair
    got = outcome(lambda: call(ours, *args, **kwargs))
    assert got == outcome(lambda: call(theirs, *args, **kwargs))
    return got


ENCODE_CALLS = [
    lambda e, t: e.encode(t),
    lambda e, t: e.encode(t, allowed_special="all"),
    lambda e, t: e.encode(t, allowed_special={EOT}),
    lambda e, t: e.encode(t, disallowed_special=()),
    lambda e, t: e.encode(t, allowed_special={EOT}, disallowed_special=()),
    lambda e, t: e.encode(t, disallowed_special={EOT}),
    lambda e, t: e.encode(t, allowed_special=frozenset({EOT, "<|endofprompt|>", "not special"}),
                          disallowed_special=()),
    lambda e, t: e.encode_ordinary(t),
    lambda e, t: e.encode_to_numpy(t, allowed_special="all"),
    lambda e, t: e.encode_to_numpy(t),
    lambda e, t: e.encode_batch([t, t[:7], ""], allowed_special="all", num_threads=2),
    lambda e, t: e.encode_batch([t, "x"]),
    lambda e, t: e.encode_ordinary_batch([t, t[3:]], num_threads=3),
]


def check_text(pair, text):
    # every code point: the built-in patterns scan with Unicode 16.0's classes, tiktoken's (they kept to Unicode
    # 14's before: test_unicode_peers)
    assert pair[0]._core._tokenizer.native and pair[0]._core._tokenizer.unicode == "16.0"
    for call in ENCODE_CALLS:
        same(pair, call, text)
    _, ids = same(pair, "encode", text, allowed_special="all")
    for cut in (ids, ids[:-1], ids[1:]):
        same(pair, "decode", cut)
        same(pair, "decode", cut, errors="strict")
        same(pair, "decode", cut, errors="ignore")
        same(pair, "decode_bytes", cut)
        same(pair, "decode_tokens_bytes", cut)
        same(pair, "decode_with_offsets", cut)
        same(pair, "decode_batch", [cut, cut[:2]], num_threads=2)
        same(pair, "decode_bytes_batch", [cut, cut[:2]])


# ------------------------------------------------------------------------------------- ids as tiktoken's

@pytest.mark.parametrize("text", TRICKY)
def test_tricky_strings(pair, text):
    check_text(pair, text)


def joined(parts):
    return "".join(parts)


FRAGMENTS = TRICKY[:48] + [EOT, "<|endofprompt|>", " ", "'", "\r", "\n", "1", "A", "é"]
SURROGATES = st.characters(categories=["Cs"])          # (hypothesis leaves them out of its default alphabet)
texts = st.one_of(
    st.text(st.characters() | SURROGATES, max_size=60),
    st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=5) | SURROGATES, max_size=12).map(joined),
)


@SOME
@given(texts)
@example("\ud800\udc00\ud800")
@example("\ud8b4\udc00:A")    # a surrogate pair spelling U+3D000, a letter since Unicode 17 (not to tiktoken)
@example("A'S'T'LL 1234567 \r\n\r\n ")
def test_random_text_cl100k(text):
    check_text(encodings("cl100k_base"), text)


@SOME
@given(texts)
@example("ÀÉÎ'sù'D ǅǈ\u0301x/\n/ 12345")
def test_random_text_o200k(text):
    check_text(encodings("o200k_base"), text)


@FEW
@given(texts)
def test_random_text_gpt2(text):
    check_text(encodings("gpt2"), text)


@SOME
@given(texts, st.sampled_from(sorted(OTHER_PATTERNS)))
@example("a \n ", "llama3")    # cut after the newline (same ids as cl100k's pattern: no cl100k token has a
@example("x 12345\r\n\t", "qwen2")  # newline then spaces; test_pretokenize checks the cut itself)
@example("Don't 2024 ÀÉÎ'sù'D", "tekken")
def test_random_text_llama3_qwen2_tekken(text, name):
    check_text(encodings(name), text)


WHITESPACE_FRAGMENTS = ["a", "b", " ", "  ", "\n", "\r\n", "\t", "x.", "1234", EOT]


@SOME
@given(st.lists(st.sampled_from(WHITESPACE_FRAGMENTS), max_size=12).map(joined),
       st.lists(st.integers(min_value=0, max_value=10**6), max_size=6), st.sampled_from(sorted(OTHER_PATTERNS)))
@example("a \n \nb", [4], "llama3")   # " \n \n" is one cl100k token: " \n" (what "a \n " ends in) is not final
def test_encode_iterable_cuts_in_whitespace_llama3_and_qwen2(text, points, name):
    # the end-of-text rule (a run ending the text is cut after its last newline) must not apply at a cut of the
    # stream; cl100k's ranks have tokens over several newlines (" \n \n"), so a wrong cut changes the ids
    ours, theirs = encodings(name)
    points = sorted({p % (len(text) + 1) for p in points})
    parts = [text[a:b] for a, b in zip([0] + points, points + [len(text)])]
    assert list(ours._tokenizer.encode_iterable(parts)) == theirs.encode(text, allowed_special="all")


def test_long_text_and_threads(pair):
    # texts of 16 KB or more encode without the GIL: several at once on threads
    text = " ".join(TRICKY[:40]) * 30
    batch = [text, text[1:], text[:20000], EOT.join([text[:5000]] * 4)]
    got = same(pair, lambda e: e.encode_batch(batch, allowed_special="all", num_threads=4))
    assert got[1][0] == pair[0].encode(text, allowed_special="all")


def test_gpt2_ranks_recover_gpt2_merges():
    ranks, tok = gpt2_ranks()
    recovered = Tokenizer.from_tiktoken(ranks, "gpt2", {EOT: 50256})
    assert recovered.merges == tok.merges
    text = " ".join(TRICKY)
    assert recovered.encode(text) == tok.encode(text)


def test_real_file_loads():
    # (tests/test_ranks.py reads o200k_base's file too)
    name = "cl100k_base"
    pattern, specials = ENCODINGS[name]
    ours = Encoding.from_tiktoken_file(name, ranks_path(name), pattern, specials)
    assert ours._mergeable_ranks == load_ranks(name)
    assert ours.encode("hello world <|endoftext|>", allowed_special="all") == \
        encodings(name)[1].encode("hello world <|endoftext|>", allowed_special="all")


# ------------------------------------------------------------------------------------- the other methods

def test_properties_and_attributes(pair):
    ours, theirs = pair
    for get in [lambda e: e.name, lambda e: e.n_vocab, lambda e: e.max_token_value, lambda e: e.eot_token,
                lambda e: e.special_tokens_set, lambda e: e._pat_str, lambda e: e._special_tokens,
                lambda e: e._special_token_values, lambda e: repr(e), lambda e: e.token_byte_values()]:
        same(pair, get)
    assert ours._mergeable_ranks is theirs._mergeable_ranks        # kept, not copied, as tiktoken does
    for token in [0, 1, 255, 50256, 100257, 100276, 199999, 200018, 10**6]:
        same(pair, "is_special_token", token)
    same(pair, "is_special_token", "a")                             # AssertionError


def test_single_tokens(pair):
    ours, _ = pair
    for value in ["hello", " world", b"hello", EOT, "<|endofprompt|>", "no such token at all", b"\xff\xfe\xfd",
                  "\ud800", 5, None, bytearray(b"hello"), memoryview(b"a")]:
        same(pair, "encode_single_token", value)
    for token in [0, 1, 97, 50256, 100257, 100261, 100276, 199999, 200018, 200019, 10**6, -1, 2**32, 2**64,
                  -2**63, -2**63 - 1, True, np.int64(31373), np.uint32(5), "5", 5.0, None]:
        same(pair, "decode_single_token_bytes", token)
        same(pair, "decode_tokens_bytes", [token])
        same(pair, "decode_with_offsets", [token])
    # every token's bytes round-trip
    for token in range(0, ours.max_token_value + 1, 997):
        same(pair, lambda e, t: e.encode_single_token(e.decode_single_token_bytes(t)), token)


def test_decode_arguments_and_errors(pair):
    ours, _ = pair
    unknown = next(i for i in range(ours.max_token_value + 2) if i not in ours.tokenizer.vocab)
    for ids in [[31373, 995], (31373, 995), range(5), np.array([1, 2]), np.array([1, 2], dtype=np.uint32),
                np.array([1.0]), np.array([True]), np.array([[1]]), np.array([2**63], dtype=np.uint64),
                [unknown], [1, unknown], [unknown, -1], [-1], [2**32], [2**70], ["a"], [1.0], [True, False],
                [np.int64(5)], b"ab", bytearray(b"ab"), "ab", {1: 2}, {1}, iter([1, 2]), [], None]:
        same(pair, "decode", ids)
        same(pair, "decode_bytes", ids)


def test_decode_of_a_numpy_bool_among_ints_is_a_type_error(pair):
    # tiktoken takes no NumPy bool as an id; among ints, NumPy made an int array of them and decode read
    # np.True_ as 1. Found comparing decode's arguments with tiktoken's
    # (NumPy before 2.3 gives its bools __index__, deprecated, which tiktoken then takes: the same outcome still)
    bools_are_ints = hasattr(np.True_, "__index__")
    for ids in [[1, np.True_], (2, np.False_), [np.int64(3), np.True_]]:
        assert same(pair, "decode", ids)[0] == "ok" if bools_are_ints else \
            same(pair, "decode", ids)[:2] == ("raise", TypeError)
        same(pair, "decode_bytes", ids)
    with pytest.raises(TypeError, match="position 1"):
        pair[0].tokenizer.decode([1, np.True_])


def test_disallowed_special_message(pair):
    got = same(pair, "encode", "a<|endoftext|>")
    assert got[:2] == ("raise", ValueError) and "disallowed special token '<|endoftext|>'" in got[2]
    for text in ["x <|endofprompt|> <|endoftext|>", "<|fim_prefix|>", "<|endoftext|><|endoftext|>"]:
        same(pair, "encode", text)
    # a string that is no special token can still be disallowed (tiktoken searches for what it is given)
    same(pair, lambda e: e.encode("hello", disallowed_special={"ell"}))
    same(pair, lambda e: e.encode("hello", disallowed_special="ell"))           # a str: its characters
    same(pair, lambda e: e.encode("", disallowed_special={""}))
    same(pair, lambda e: e.encode_to_numpy("a<|endoftext|>"))
    same(pair, lambda e: e.encode_batch(["ok", "a<|endoftext|>"]))


def test_bad_arguments(pair):
    for call in [lambda e: e.encode(b"bytes"), lambda e: e.encode(None), lambda e: e.encode_ordinary(b"x"),
                 lambda e: e.encode("a", allowed_special=[EOT]),
                 lambda e: e.encode("a", allowed_special=[EOT], disallowed_special=()),
                 lambda e: e.encode("a", allowed_special="foo"),
                 lambda e: e.encode("a", allowed_special={EOT: 1}.keys()),
                 lambda e: e.encode_to_numpy(b"x", disallowed_special=()),
                 lambda e: e.encode_batch(["a"], num_threads=0), lambda e: e.encode_batch(["a"], num_threads=None),
                 lambda e: e.encode_batch("ab"), lambda e: e.decode_batch([[1]], num_threads=-1),
                 lambda e: e.encode_ordinary_batch(["a", "b"], num_threads=1)]:
        same(pair, call)


def test_num_threads_any_number_thread_pool_executor_takes(pair):
    # tiktoken hands num_threads to ThreadPoolExecutor, which takes any number above 0: a float
    # (os.cpu_count() / 2), a NumPy integer, True; found comparing the batch methods with tiktoken's
    for n in [2.0, 2.5, 0.5, True, np.int64(2), np.float64(3.0), 1]:
        for call in [lambda e: e.encode_batch(["a b", "c", EOT], allowed_special="all", num_threads=n),
                     lambda e: e.encode_batch(["a b", "c"], num_threads=n),
                     lambda e: e.encode_ordinary_batch(["a b", "c"], num_threads=n),
                     lambda e: e.decode_batch([[1, 2], [3]], num_threads=n),
                     lambda e: e.decode_bytes_batch([[1, 2], [3]], num_threads=n)]:
            assert same(pair, call)[0] == "ok", n
    for n in [0, -1.5, False, "2"]:
        assert same(pair, lambda e: e.encode_batch(["a"], num_threads=n))[0] == "raise"


def test_decode_batches_of_long_and_short_lists(pair):
    # a batch is decoded here when no list is long enough to gain from threads (DECODE_PARALLEL_IDS), else on
    # threads: the same texts, or the same error (the first bad list's), either way and with any thread count
    _, theirs = pair
    long = theirs.encode("Hello world, caf\u00e9 " * 2000)
    assert len(long) >= DECODE_PARALLEL_IDS
    for batch in ([long, [1, 2], long[:10]], [[1, 2], [3]], [[1], long, [10**6], long], [long[:-1], [0xE2]], []):
        for n in (1, 2, 8):
            same(pair, "decode_batch", batch, num_threads=n)
            same(pair, "decode_batch", batch, num_threads=n, errors="strict")
            same(pair, "decode_bytes_batch", batch, num_threads=n)


def test_allowed_special_of_what_is_not_str_is_a_type_error(pair):
    # tiktoken's encoder takes allowed_special as a set of str: bytes (the token's bytes) or an id in it is
    # a TypeError, after the disallowed check; it was ignored here (the text encoded as if nothing were
    # allowed). Found comparing encode's keywords with tiktoken over sets of other types.
    for allowed in [{b"<|endoftext|>"}, {50256}, {EOT, 1}, frozenset({None})]:
        for disallowed in [(), "all"]:
            for text in ["", "x", "a<|endoftext|>"]:
                for call in [lambda e: e.encode(text, allowed_special=allowed, disallowed_special=disallowed),
                             lambda e: e.encode_to_numpy(text, allowed_special=allowed,
                                                         disallowed_special=disallowed),
                             lambda e: e.encode_batch([text], allowed_special=allowed,
                                                      disallowed_special=disallowed)]:
                    assert same(pair, call)[0] == "raise"


def test_encode_batch_of_no_texts_checks_no_keyword_the_texts_would(pair):
    # tiktoken's encode_batch of [] encodes nothing, so never searches for disallowed_special: a non-str in it
    # is no error there; it was a TypeError here (the native batch sorted the tokens first). Found comparing
    # encode_batch's keywords with tiktoken over sets of other types
    for disallowed in [{EOT, 1}, {b"x"}, frozenset({None, EOT})]:
        assert same(pair, lambda e: e.encode_batch([], disallowed_special=disallowed)) == ("ok", [])
        assert same(pair, lambda e: e.encode_batch(["a"], disallowed_special=disallowed))[:2] == ("raise", TypeError)
    same(pair, lambda e: e.encode_batch([], allowed_special=[EOT]))         # set - list: raised before any text


def test_encode_batch_raises_the_first_texts_error(pair):
    # tiktoken encodes text by text, each searched for disallowed tokens first: a disallowed token in a text
    # before one that is not a str is its ValueError; the native batch raised the TypeError of the later text
    # (it checks every text's type first). Found comparing encode_batch with tiktoken on mixed bad batches
    for texts in [[EOT, 5], ["a", EOT, None], ["a", 5, EOT], [5, EOT], ["<|fim_prefix|>", b"x"]]:
        for keywords in [{}, {"disallowed_special": {EOT}}, {"allowed_special": {"<|fim_prefix|>"}},
                         {"disallowed_special": ()}, {"allowed_special": "all"}]:
            assert same(pair, lambda e: e.encode_batch(texts, **keywords))[0] == "raise"
            same(pair, lambda e: e.encode_batch(texts, num_threads=1, **keywords))


def test_encode_to_numpy_reads_a_str_subclass_as_its_characters(pair):
    # tiktoken's encoder reads the characters of a str subclass; encode_to_numpy called the subclass's encode
    # (here "qqq"). Found encoding str subclasses with every encode method
    class Text(str):
        def encode(self, *args, **kwargs):
            return b"qqq"

    for call in [lambda e: e.encode_to_numpy(Text("hello <|endoftext|>"), allowed_special="all"),
                 lambda e: e.encode_to_numpy(Text("hello"))]:
        assert same(pair, call)[1][2] != list(b"qqq")


def test_disallowed_check_reads_a_str_subclass_as_its_characters(pair):
    # tiktoken searches a text's characters for disallowed tokens; the check asked the text's own `in`, so a
    # str subclass answering False let "<|endoftext|>" through (encode_batch: an AssertionError). Found
    # encoding str subclasses with every encode method
    class Text(str):
        def __contains__(self, item):
            return False

    text = Text("hi <|endoftext|>")
    for call in [lambda e: e.encode(text), lambda e: e.encode_to_numpy(text), lambda e: e.encode_batch([text]),
                 lambda e: e.encode(text, disallowed_special={EOT})]:
        assert same(pair, call)[:2] == ("raise", ValueError)


def test_encode_batch_of_a_long_str_subclass_is_its_characters_ids(pair):
    # helper-119 F3: a text longer than one encode group (256 KiB) is cut into pieces, and the cut's helper took
    # an exact str only: "TypeError: Expected str, got Text" from encode_batch, where encode and tiktoken read it
    class Text(str):
        pass

    long = Text("hello world! " * 30000 + "<|endoftext|> and more")
    for call in [lambda e: e.encode_batch([long], allowed_special="all"), lambda e: e.encode_ordinary_batch([long]),
                 lambda e: e.encode_batch([Text("short"), long], num_threads=2, allowed_special="all")]:
        outcome = same(pair, call)
        assert outcome[0] == "ok" and len(outcome[1][-1]) > 30000


def small_ranks():
    return {bytes([b]): b for b in range(256)} | {b"ab": 256, b"abc": 257}


def test_construction_checks():
    def build(cls, kwargs):
        return cls("x", pat_str=r"\w+|\W", mergeable_ranks=small_ranks(), **kwargs)

    for kwargs in [{"special_tokens": {}}, {"special_tokens": {"<|x|>": 300}, "explicit_n_vocab": 259},
                   {"special_tokens": {"<|x|>": 258}, "explicit_n_vocab": 259},
                   {"special_tokens": {"<|x|>": 258}, "explicit_n_vocab": 300}]:
        ours, theirs = (outcome(functools.partial(build, cls, kwargs)) for cls in (Encoding, tiktoken.Encoding))
        assert ours[0] == theirs[0] and (ours[0] == "ok" or ours[1] is theirs[1]), kwargs
    assert outcome(lambda: Encoding("x", pat_str="a", mergeable_ranks={}, special_tokens={})) == \
        outcome(lambda: tiktoken.Encoding("x", pat_str="a", mergeable_ranks={}, special_tokens={}))
    no_eot = (Encoding("x", pat_str=r"\w+|\W", mergeable_ranks=small_ranks(), special_tokens={}),
              tiktoken.Encoding("x", pat_str=r"\w+|\W", mergeable_ranks=small_ranks(), special_tokens={}))
    same(no_eot, lambda e: e.eot_token)
    same(no_eot, lambda e: e.encode("<|endoftext|>"))


def test_refusals_tiktoken_does_not_make():
    # documented differences: a missing byte, a special id that is a rank (a token no merge makes is read now:
    # test_ranks_only)
    ranks = small_ranks()
    with pytest.raises(ValueError, match="single bytes have no rank"):
        Encoding("x", pat_str="a", mergeable_ranks={b"a": 0}, special_tokens={})
    assert Encoding("x", pat_str=r"\w+", mergeable_ranks=ranks | {b"xyz": 258}, special_tokens={}).encode("xyz") == [258]
    with pytest.raises(ValueError, match="is the rank of"):
        Encoding("x", pat_str="a", mergeable_ranks=ranks, special_tokens={EOT: 257})


def test_pickle_by_value():
    ranks = small_ranks()
    ours = Encoding("tiny", pat_str=r"\w+|\W", mergeable_ranks=ranks, special_tokens={EOT: 258})
    data = pickle.dumps(ours)
    assert b"tiktoken" not in data and b".py" not in data       # no file, no tiktoken: by value
    back = pickle.loads(data)
    assert back.name == "tiny" and back._mergeable_ranks == ranks and back._special_tokens == {EOT: 258}
    text = "abc ab<|endoftext|>"
    assert back.encode(text, allowed_special="all") == ours.encode(text, allowed_special="all") == [257, 32, 256, 258]
    cl100k = encodings("cl100k_base")[0]
    state = cl100k.__getstate__()
    assert set(state) == {"name", "pat_str", "mergeable_ranks", "special_tokens"}


# ------------------------------------------------------------------------------------- one engine

def test_encoding_is_a_view_of_one_tokenizer():
    ours, _ = encodings("cl100k_base")
    tok = ours.tokenizer
    assert isinstance(tok, Tokenizer)
    core = ours._core_bpe
    views = [core.tokenizer_for(set()), core.tokenizer_for({EOT}), core.tokenizer_for(ours.special_tokens_set)]
    assert views[2] is tok
    for view in views:
        assert view._tables is tok._tables and view._pool is tok._pool and view._vocab is tok._vocab
    assert views[1].special_tokens == {EOT: 100257} and views[0].special_tokens == {}
    assert core.tokenizer_for({EOT}) is views[1]                     # cached
    assert bpe_fast.Encoding is Encoding


# ------------------------------------------------------------------------------------- tiktoken's core

def core_call(method, *args):
    """A call of `method` on an encoding's core, _core_bpe (tiktoken._tiktoken.CoreBPE in tiktoken's; code written
    for tiktoken calls it itself); a buffer's ids as a list."""
    def call(encoding):
        value = getattr(encoding._core_bpe, method)(*args)
        if method == "encode_to_tiktoken_buffer":
            return np.frombuffer(value, dtype=np.uint32).tolist()
        if method == "encode_with_unstable":        # its completions are a hash set's, in no order
            return value[0], sorted(value[1])
        return value
    return call


CORE_TEXTS = ["hello world", "  !!x\n\n", "日本語 text 123", "a<|endoftext|>b <|endofprompt|>", "it's   ",
              "x\ud800y", "<|endoftext|>", ""]


@pytest.mark.parametrize("text", CORE_TEXTS)
def test_the_core_answers_as_tiktokens(pair, text):
    ours, _ = pair
    for specials in [set(), {EOT}, frozenset({EOT, "<|endofprompt|>", "not special"}), set(ours.special_tokens_set)]:
        same(pair, core_call("encode", text, specials))
        same(pair, core_call("encode_to_tiktoken_buffer", text, specials))
        same(pair, core_call("encode_with_unstable", text, specials))
    same(pair, core_call("encode_ordinary", text))
    data = text.encode("utf-8", "replace")
    same(pair, core_call("_encode_bytes", data + b"\xff\x80"))
    if data:        # (tiktoken's core panics on an empty piece: "range end index 2 out of range")
        same(pair, core_call("encode_single_piece", data))
    else:
        assert ours._core_bpe.encode_single_piece(data) == []
    same(pair, core_call("encode_single_token", data))
    got = same(pair, core_call("encode", text, {EOT}))
    if got[0] == "ok":
        same(pair, core_call("decode_bytes", got[1]))
        for token in got[1][:3]:
            same(pair, core_call("decode_single_token_bytes", token))


def test_the_cores_arguments_and_errors_as_tiktokens(pair):
    for call in [core_call("encode", "a", [EOT]), core_call("encode", b"a", set()), core_call("encode", "a", {5}),
                 core_call("encode_ordinary", b"a"), core_call("encode_ordinary", None),
                 core_call("encode_to_tiktoken_buffer", b"a", set()), core_call("encode_with_unstable", 5, set()),
                 core_call("encode_single_piece", "hello"), core_call("encode_single_token", "hello"),
                 core_call("encode_single_token", b"no such token at all"), core_call("_encode_bytes", "a"),
                 core_call("decode_bytes", [10**6]), core_call("decode_bytes", [-1]), core_call("decode_bytes", "ab"),
                 core_call("decode_single_token_bytes", 10**6), core_call("decode_single_token_bytes", -1)]:
        same(pair, call)
    assert same(pair, core_call("token_byte_values"))[0] == "ok"


def test_a_core_made_alone_is_tiktokens(tmp_path):
    # code written for tiktoken makes one: tiktoken._tiktoken.CoreBPE(ranks, special_tokens, pattern)
    ranks, _ = gpt2_ranks()
    specials = {EOT: 50256, "<|im_start|>": 50257}
    reached = subprocess.run([sys.executable, "-c", "import bpe_fast as t; print(t._tiktoken.CoreBPE.__name__)"],
                             capture_output=True, text=True, check=True, cwd=tmp_path)   # (not the source tree's)
    assert reached.stdout.strip() == "CoreBPE"      # an attribute of the package once imported, as tiktoken's
    cores = (bpe_fast._tiktoken.CoreBPE(ranks, specials, GPT2_PATTERN),
             tiktoken._tiktoken.CoreBPE(ranks, specials, GPT2_PATTERN))
    for text in CORE_TEXTS + ["<|im_start|>user hi<|endoftext|>"]:
        for call in [lambda c: c.encode(text, set(specials)), lambda c: c.encode(text, {"<|im_start|>"}),
                     lambda c: c.encode_ordinary(text), lambda c: c.encode_single_piece(b"x" + text.encode("utf-8", "replace"))]:
            assert outcome(lambda: call(cores[0])) == outcome(lambda: call(cores[1]))
    with pytest.raises(ValueError, match="starts with special token"):
        bpe_fast._tiktoken.CoreBPE(ranks, {"<|a|>": 50300, "<|a|>b": 50301}, GPT2_PATTERN)


def fresh_gpt2_pair():
    ranks, _ = gpt2_ranks()
    return [module.Encoding("gpt2", pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens={EOT: 50256})
            for module in (bpe_fast, tiktoken)]


def test_a_core_put_in_place_as_code_written_for_tiktoken_does():
    # two ways seen in code written for tiktoken: a smaller vocabulary (the first 10,256 ranks, the end-of-text
    # token after them), and more special tokens; the Encoding's methods use the new core, the attributes
    # tiktoken sets once stay (max_token_value, is_special_token's ids), in both
    text = "<|endoftext|>Hello there, <|im_start|>world 1234 aaaa<|im_end|>"
    for change in ["smaller", "more specials"]:
        pair = fresh_gpt2_pair()
        for enc, module in zip(pair, (bpe_fast, tiktoken)):
            assert enc.decode_single_token_bytes(10300) == b"ouri"     # (bpe_fast's look-up dicts made for the old core)
            assert enc.encode_single_token(b"ouri") == 10300
            if change == "smaller":
                enc._mergeable_ranks = dict(list(enc._mergeable_ranks.items())[:10256])
                enc._special_tokens = {EOT: 10256}
            else:
                enc._special_tokens = {**enc._special_tokens, "<|im_start|>": 50257, "<|im_end|>": 50258}
            enc._core_bpe = module._tiktoken.CoreBPE(enc._mergeable_ranks, enc._special_tokens, enc._pat_str)
        _, ids = same(pair, "encode", text, allowed_special="all")
        assert (max(ids) == 10256) if change == "smaller" else (50258 in ids)
        for call in [lambda e: e.encode(text), lambda e: e.encode_ordinary(text), lambda e: e.decode(ids),
                     lambda e: e.encode(text, allowed_special={"<|im_start|>"}, disallowed_special=()),
                     lambda e: e.encode_batch([text, "hi"], allowed_special="all"), lambda e: e.max_token_value,
                     lambda e: e.encode_single_token("<|im_end|>"), lambda e: e.is_special_token(50257),
                     lambda e: e.special_tokens_set, lambda e: e.decode_single_token_bytes(10300),
                     lambda e: e.encode_single_token(b"ouri"), lambda e: e.decode_bytes(ids),
                     lambda e: e.token_byte_values()[-3:], lambda e: e._encode_single_piece(" aaaa")]:
            same(pair, call)


def test_a_core_of_other_special_tokens_leaves_the_encodings_own_default_check():
    # tiktoken's encode looks for special_tokens_set's tokens by default (the Encoding's, made when first asked for),
    # whatever the core holds: a core with one more special token, the Encoding's left as they were, encodes it as
    # text by default; a core with none still refuses the Encoding's (a review found the core's set used)
    for core_specials, text in [({EOT: 50256, "<|im_start|>": 50257}, "a<|im_start|>"), ({}, "a<|endoftext|>")]:
        pair = fresh_gpt2_pair()
        for enc, module in zip(pair, (bpe_fast, tiktoken)):
            enc._core_bpe = module._tiktoken.CoreBPE(enc._mergeable_ranks, core_specials, enc._pat_str)
        for call in [lambda e: e.encode(text), lambda e: e.encode_to_numpy(text),
                     lambda e: (lambda got: (got[0], sorted(got[1])))(e.encode_with_unstable(text)),
                     lambda e: e.encode(text, allowed_special={"<|im_start|>"}), lambda e: e.encode_ordinary(text)]:
            same(pair, call)


def test_version_1_reading_folds_as_tiktoken():
    # `regex`'s version 1 turns on full case folding under (?i): (?i:'st) took the ligature U+FB06, which
    # tiktoken's engine does not (a review found it); its prefix turns it off
    ranks = {bytes([b]): b for b in range(256)} | {b"'\xef": 256}
    pat_str = r"(?i:'st)|[a-z&&[^q]]+|[\s\S]"
    ours, theirs = [module.Encoding("f", pat_str=pat_str, mergeable_ranks=ranks, special_tokens={})
                    for module in (bpe_fast, tiktoken)]
    assert ours.encode_ordinary("it'\ufb06 'ST") == theirs.encode_ordinary("it'\ufb06 'ST")


def test_kimi_pat_str_as_a_pattern_reads_as_tiktoken():
    # tiktoken's spelling given where a `regex` pattern goes (Tokenizer, training, the CLI) is read as KIMI_PATTERN:
    # in `regex`'s default syntax it dropped text ("Hello" and "English" of the text below)
    assert resolve_pattern(KIMI_PAT_STR) == KIMI_PATTERN
    assert bpe_fast.pretokenize("Hello 中文English", KIMI_PAT_STR) == ["Hello", " ", "中文", "English"]
    ranks, _ = gpt2_ranks()
    tok = Tokenizer.from_tiktoken(ranks, KIMI_PAT_STR, {EOT: 50256})
    assert tok.pattern == KIMI_PATTERN and tok.native
    assert tok.encode(HAN_PROBE) == Tokenizer.from_tiktoken(ranks, "kimi", {EOT: 50256}).encode(HAN_PROBE)


GPT2_ENCODER_SPELLING = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""   # encoder.py's


def test_gpt2_encoder_spelling_reads_as_gpt2_with_tiktokens_unicode():
    # GPT-2's encoder.py spelling (tiktoken's gpt2 before its runs were possessive) went to `regex`, whose newer
    # Unicode takes U+0558 for a letter where tiktoken's does not (helper-126): now read as GPT2_PATTERN, natively
    from bpe_fast.patterns import GPT2_ENCODER_PAT_STR
    assert GPT2_ENCODER_PAT_STR == GPT2_ENCODER_SPELLING
    assert resolve_pattern(GPT2_ENCODER_SPELLING) == GPT2_PATTERN
    ranks, _ = gpt2_ranks()
    kw = dict(pat_str=GPT2_ENCODER_SPELLING, mergeable_ranks=ranks, special_tokens={EOT: 50256})
    ours, theirs = Encoding("gpt2_encoder", **kw), tiktoken.Encoding("gpt2_encoder", **kw)
    assert ours.tokenizer.native and ours._pat_str == GPT2_ENCODER_SPELLING
    for text in ["\u0558's", "x\U0003D000y", *TRICKY, PATTERN_PROBE]:
        assert ours.encode(text, allowed_special="all") == theirs.encode(text, allowed_special="all"), repr(text)


@given(st.text(alphabet=st.sampled_from(list("aA1 \t\n\r'sStTdDlLvVmMrReE.,!-_") + ["\u00a0", "é", "東", "😀"]),
               max_size=40))
@settings(max_examples=300, deadline=None)
def test_gpt2_encoder_spelling_gives_gpt2s_pieces_in_regex_too(text):
    # the claim behind reading it as GPT2_PATTERN: `regex` gives the same pieces with either spelling
    assert regex.findall(GPT2_ENCODER_SPELLING, text) == regex.findall(GPT2_PATTERN, text)


def test_a_core_of_another_kind_is_refused():
    ours, _ = fresh_gpt2_pair()
    with pytest.raises(TypeError, match="bpe_fast._tiktoken.CoreBPE"):
        ours._core_bpe = tiktoken._tiktoken.CoreBPE(ours._mergeable_ranks, {}, ours._pat_str)
    assert ours.encode("hi") == [5303]


# ------------------------------------------------------------------------------------- the Tokenizer's keywords

def test_tokenizer_keywords_follow_tiktoken():
    ours, theirs = encodings("cl100k_base")
    tok = ours.tokenizer
    text = "a<|endoftext|>b<|endofprompt|>c"
    # CS336's default: its special tokens are matched, nothing is refused
    assert tok.encode(text) == theirs.encode(text, allowed_special="all")
    assert tok.encode(text, allowed_special={EOT}) == theirs.encode(text, allowed_special={EOT},
                                                                    disallowed_special=())
    assert tok.encode(text, allowed_special=set()) == theirs.encode_ordinary(text) == tok.encode_ordinary(text)
    with pytest.raises(ValueError, match="disallowed special token '<\\|endofprompt\\|>'"):
        tok.encode(text, allowed_special={EOT}, disallowed_special="all")
    with pytest.raises(ValueError, match="disallowed special token '<\\|endoftext\\|>'"):
        tok.encode(text, allowed_special=set(), disallowed_special={EOT})
    with pytest.raises(TypeError, match='"all" or a set'):
        tok.encode(text, allowed_special=EOT)
    with pytest.raises(TypeError, match='"all" or a collection'):
        tok.encode(text, disallowed_special=EOT)
    assert tok.encode("x", allowed_special=["not a special token"]) == theirs.encode("x")
    batch = [text, "", "plain", text * 100]
    for threads in (1, 2, 8):
        assert tok.encode_batch(batch, num_threads=threads) == theirs.encode_batch(batch, allowed_special="all")
        assert tok.encode_batch(batch, allowed_special=set(), num_threads=threads) == \
            theirs.encode_ordinary_batch(batch)
    with pytest.raises(ValueError, match="disallowed"):
        tok.encode_batch(batch, allowed_special=set(), disallowed_special="all")
    with pytest.raises(TypeError, match="not a single str"):
        tok.encode_batch("text")
    with pytest.raises(ValueError, match="at least 1"):
        tok.encode_batch(batch, num_threads=0)
    ids = theirs.encode_batch(batch, allowed_special="all")
    assert tok.decode_batch(ids, num_threads=2) == theirs.decode_batch(ids)


def test_tokenizer_allowed_special_of_what_is_not_str_is_a_type_error():
    # as tiktoken's (and Encoding's): {b"<|endoftext|>"} or {100257} was ignored, the special token's text
    # encoded as ordinary tokens without a word. Found comparing encode's keywords with tiktoken.
    tok = encodings("cl100k_base")[0].tokenizer
    for allowed in [{b"<|endoftext|>"}, {100257}, [EOT, None]]:
        for call in [lambda: tok.encode(EOT, allowed_special=allowed),
                     lambda: tok.encode_batch([EOT], allowed_special=allowed),
                     lambda: tok.encode_with_offsets(EOT, allowed_special=allowed)]:
            with pytest.raises(TypeError, match="allowed_special"):
                call()
    assert tok.encode(EOT, allowed_special=[EOT, "not a special token"]) == [100257]


def test_tokenizer_decode_errors():
    ours, theirs = encodings("cl100k_base")
    tok = ours.tokenizer
    ids = tok.encode("naïve ") + [ours.encode_single_token(b"\xe2"), ours.encode_single_token(b"\x82")]  # "€" cut
    assert tok.decode(ids) == "naïve \ufffd"
    for errors in ("replace", "ignore", "backslashreplace"):
        assert tok.decode(ids, errors=errors) == theirs.decode(ids, errors=errors)
        assert tok.decode(np.array(ids), errors=errors) == theirs.decode(ids, errors=errors)
    with pytest.raises(UnicodeDecodeError):
        tok.decode(ids, errors="strict")


@pytest.mark.parametrize("name", NAMES)
def test_encode_with_offsets_equals_decode_with_offsets(name):
    ours, theirs = encodings(name)
    tok = ours.tokenizer
    for text in TRICKY[:60]:
        if any("\ud800" <= c <= "\udfff" for c in text):
            continue
        ids, offsets = tok.encode_with_offsets(text)
        assert ids.dtype == np.int32 and offsets.dtype == np.int64
        assert ids.tolist() == tok.encode(text)
        try:
            expected = theirs.decode_with_offsets(ids.tolist())
        except UnicodeDecodeError:
            continue
        assert (text, offsets.tolist()) == expected == tok.decode_with_offsets(ids)


def test_encode_with_offsets_of_surrogates():
    # lone surrogates are replaced by U+FFFD and a surrogate pair becomes its character, as tiktoken does; the
    # offsets still index the text as given
    ours, theirs = encodings("cl100k_base")
    text = "a\ud83d\ude00b\ud800c"      # a=0, the pair 1-2, b=3, a lone surrogate 4, c=5
    ids, offsets = ours.tokenizer.encode_with_offsets(text)
    assert ids.tolist() == theirs.encode(text)
    fixed, fixed_offsets = theirs.decode_with_offsets(ids.tolist())
    assert fixed == "a\U0001F600b\ufffdc"
    assert offsets.tolist() == [[0, 1, 3, 4, 5][k] for k in fixed_offsets]


def test_encode_with_offsets_keywords():
    tok = encodings("cl100k_base")[0].tokenizer
    ids, offsets = tok.encode_with_offsets("ab<|endoftext|>c")
    assert ids.tolist() == tok.encode("ab<|endoftext|>c") and offsets.tolist()[-2:] == [2, 15]
    ids, _ = tok.encode_with_offsets("ab<|endoftext|>c", allowed_special=set())
    assert ids.tolist() == tok.encode_ordinary("ab<|endoftext|>c")



def test_batches_of_many_short_texts_equal_tiktoken(pair):
    """encode_batch / encode_ordinary_batch encode groups of texts in one native call each: many short texts
    (empty ones, special tokens, lone surrogates among them) give tiktoken's lists, in order."""
    import random
    rng = random.Random(13)
    words = ["the", " cat", "  ", "\n\n", "Straße", " 東京", "😀", "'s", " 123", EOT, "<|endofprompt|>", "\ud800",
             "\udc00", "<|endof", "text|>", " ", "x"]
    batch = ["".join(rng.choice(words) for _ in range(rng.randrange(0, 25))) for _ in range(400)]
    batch += ["", "a" * 20000 + EOT, "\ud83d\ude00"]
    for threads in (1, 2, 5):
        same(pair, lambda e: e.encode_batch(batch, allowed_special="all", num_threads=threads))
        same(pair, lambda e: e.encode_batch(batch, allowed_special={EOT}, disallowed_special=(),
                                            num_threads=threads))
        same(pair, lambda e: e.encode_ordinary_batch(batch, num_threads=threads))
    same(pair, lambda e: e.encode_batch(batch, num_threads=2))                  # tiktoken's ValueError
    clean = [t for t in batch if EOT not in t and "<|endofprompt|>" not in t]
    same(pair, lambda e: e.encode_batch(clean, num_threads=2))


# ------------------------------------------------------------------------------------- custom patterns

@pytest.mark.parametrize("pat_str", [r"ab$|a|b|\n|[^ab\n]", r"ab\Z|a|b|\n|[^ab\n]", r"ab\z|a|b|\n|[^ab\n]",
                                     r"^ab|[$]|ab|a|b|\n|[^ab\n$]", r"\w+|\s+(?!\S)|\s+$|\s",
                                     r"(?m)ab$|a|b|\n|[^ab\n]", r"[[:punct:]$]+|ab$|a|b|\n|[^ab\n]"])
def test_a_custom_pat_str_anchors_as_tiktoken_reads_them(pat_str):
    # tiktoken's engine: $ only at the very end, \Z also before a final newline (`regex`: the other way round)
    ranks = {bytes([i]): i for i in range(256)} | {b"ab": 256}
    ours = bpe_fast.Encoding("c", pat_str=pat_str, mergeable_ranks=ranks, special_tokens={})
    theirs = tiktoken.Encoding("c", pat_str=pat_str, mergeable_ranks=ranks, special_tokens={})
    for text in ["ab\n", "ab", "ab\nab\n", "$ab\n", "^ab$", "x ab  \n", "ab \n\n"] + TRICKY[:20]:
        assert ours.encode(text) == theirs.encode(text), text
    assert ours._pat_str == pat_str
    # and back: a Tokenizer with the pattern as `regex` reads it gives tiktoken's Encoding of the same ids
    again = ours.tokenizer.to_tiktoken("again")
    for text in ["ab\n", "ab", "ab\nab\n", "$ab\n", "^ab$"]:
        assert again.encode(text) == theirs.encode(text), text


ANCHOR_TEXTS = ["ab", "ab\n", "ab\n\n", "ab\n\n\n", "ab\nab\n\n", "ab\r\n", "ab\n\nx", "ab \n\n", "\n\nab\n\n\n"]


@pytest.mark.parametrize("pat_str", [r"ab\Z|a|b|\n|[^ab\n]", r"(?m)ab\Z|a|b|\n|[^ab\n]", r"(?m:ab\Z)|a|b|\n|[^ab\n]",
                                     r"ab$|ab\Z|a|b|\n|[^ab\n]", r"\s+\Z|ab|\S"])
def test_tiktoken_end_anchor_before_any_trailing_newlines(pat_str):
    # tiktoken's \Z (fancy-regex) is the end of the text or before any number of final newlines; it was read as
    # `regex`'s $, before one final newline only: "ab\n\n" gave [97, 98, 10, 10] where tiktoken gives
    # [256, 10, 10]. Found comparing custom patterns' anchors with tiktoken on texts ending in newlines.
    ranks = {bytes([i]): i for i in range(256)} | {b"ab": 256}
    ours = bpe_fast.Encoding("c", pat_str=pat_str, mergeable_ranks=ranks, special_tokens={})
    theirs = tiktoken.Encoding("c", pat_str=pat_str, mergeable_ranks=ranks, special_tokens={})
    for text in ANCHOR_TEXTS:
        assert ours.encode(text) == theirs.encode(text), text


@pytest.mark.parametrize("pattern", [r"ab$|a|b|\n|[^ab\n]", r"ab\Z|a|b|\n|[^ab\n]", r"(?m)ab\Z|a|b|\n|[^ab\n]",
                                     r"\s+$|ab|\S"])
def test_to_tiktoken_keeps_the_end_anchors_of_regex(pattern):
    # and back: `regex`'s $ (the end, or before one final newline) and \Z (the end) written for tiktoken; $ was
    # written as tiktoken's \Z, which also matches before two or more final newlines
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"ab"}
    tok = Tokenizer(vocab, [(b"a", b"b")], pattern=pattern)
    enc = tok.to_tiktoken("back")
    for text in ANCHOR_TEXTS:
        assert enc.encode(text) == tok.encode(text), text


@pytest.mark.parametrize("pat_str", [r"(?m:ab$)|a|b|\n|[^ab\n]", r"ab(?m:$)|a|b|\n|[^ab\n]",
                                     r"(?m)(?-m:ab$)|a|b|\n|[^ab\n]", r"ab$|(?m)ab$|a|b|\n|[^ab\n]",
                                     r"(?:(?m)ab$)|ab$|a|b|\n|[^ab\n]",
                                     r"(?m:(?-m)ab$)|a|b|\n|[^ab\n]", r"(?i-m:AB$)|(?P<x>a)|b|\n|[^ab\n]+",
                                     # a comment of verbose mode is no class: "[" there left "$" as it was
                                     "(?x) xy # [x\n | ab$ | a | b | \\n | [^ab\\n]",
                                     "(?x: xy # (x\n | ab$ ) | (?m: ab$ ) | a | b | \\n | [^ab\\n]"])
def test_tiktoken_anchors_under_scoped_multi_line_flags(pat_str):
    # "$" is a line end where the flag m is on, by inline flags that hold to the end of their group in both
    # engines; it was decided for the whole pattern ((?m:ab$)'s "$" was made the end of the text, and in
    # (?m)(?-m:ab$) it stayed `regex`'s "$"). Found comparing custom patterns' anchors with tiktoken.
    ranks = {bytes([i]): i for i in range(256)} | {b"ab": 256}
    ours = bpe_fast.Encoding("c", pat_str=pat_str, mergeable_ranks=ranks, special_tokens={})
    theirs = tiktoken.Encoding("c", pat_str=pat_str, mergeable_ranks=ranks, special_tokens={})
    again = ours.tokenizer.to_tiktoken("again")
    for text in ANCHOR_TEXTS + ["ab\nx", "ab\nab\nab"]:
        assert ours.encode(text) == theirs.encode(text) == again.encode(text), text



# ------------------------------------------------------------------------- custom patterns read as tiktoken reads

@functools.lru_cache(maxsize=1)
def _pair_ranks():
    """Every byte and every pair of bytes: a piece's pairs merge, so the ids show where each piece starts."""
    ranks = {bytes([i]): i for i in range(256)}
    ranks.update((bytes([a, b]), 256 + 256 * a + b) for a in range(256) for b in range(256))
    return ranks


# ASCII and beyond: letters that fold (K, ſ, İ, ı, ß, ẞ, Greek, Cyrillic), digits, marks, spaces, punctuation (a
# custom pat_str is read by the installed `regex`, whose classes are of another Unicode version than tiktoken's)
PATTERN_PROBE = assigned_in_old_unicode(
    "".join(map(chr, range(32, 127))) + " \t\n\r\x0b\x0c\x1c\x85\xa0\u2028\u3000 İıIiKkKſßẞ ÀÉîõüÿĀŁŒ ǅǈ ΣσςΩω ДдЁё "
    "٣٤ १२ ½² 𝟙 é e\u0301 東京 한국 😀 0x1F Ab12_cd-EF gh'S I'll iİ KELVIN k\n\nend aıb xİıi yKſz")


def _same_ids_or_refused(pat_str, text=PATTERN_PROBE):
    """True when bpe_fast refuses pat_str (ValueError) or gives tiktoken's ids for `text`; False when tiktoken
    cannot use the pattern (it refuses it, or panics on an empty match) or the pattern matches empty text there."""
    try:
        theirs = tiktoken.Encoding("c", pat_str=pat_str, mergeable_ranks=_pair_ranks(), special_tokens={})
        expected = theirs.encode_ordinary(text)
    except BaseException:           # tiktoken's ValueError, or pyo3's PanicException on an empty match
        return False
    try:
        ours = bpe_fast.Encoding("c", pat_str=pat_str, mergeable_ranks=_pair_ranks(), special_tokens={})
    except ValueError:
        return True
    if any(m.start() == m.end() for m in regex.finditer(pattern_from_tiktoken(pat_str), text)):
        return False                # an empty match: tiktoken's pieces there are its own (noted, not compared)
    assert ours.encode_ordinary(text) == expected, pat_str
    return True


# constructs tiktoken's engine (Rust's regex, fancy-regex) and `regex` spell otherwise: respelled, same ids
@pytest.mark.parametrize("pat_str", [
    r"[[:alpha:]]+|[[:digit:]]+|[[:space:]]+|[[:punct:]]+|.", r"[[:upper:]]+|[[:lower:]]+|[[:^alnum:]]+|.",
    r"[[:word:]]+|[[:blank:]]+|[[:cntrl:]]+|[[:graph:]]|.", r"[[:print:]]+|[[:xdigit:]]+|[[:ascii:]]+|.",
    r"[^[:^alpha:]0-9]+|.", r"\h+|\H+", r"[\h_]+|.", r"\x{e9}+|\x{1F600}|\u{41}+|[\x{4B}-\x{4F}]+|.", r"\e|\S+|\s+",
    r"\<\w+|\w+\>|.", r"\b{start}\w+|\w+\b{end}|.", r"\b{start-half}\w+|\w+\b{end-half}|.",
    r"(?i)[a-h]+|(?i:K+|S+)|.", r"(?x) [[:alpha:]]+ # a comment [[:digit:]]" + "\n | .",
    r"(?i:x?i+|I\x49)|(?i)ki|.",
])
def test_custom_pattern_respelled_for_regex_gives_tiktokens_ids(pat_str):
    # these were read by `regex` as written: [[:alpha:]] took every Unicode letter where tiktoken takes ASCII
    # ones, \h horizontal space where tiktoken takes a hex digit, \x{e9} and \e did not compile, \< and \b{start}
    # were a literal "<" and a \b repeated
    ours = bpe_fast.Encoding("c", pat_str=pat_str, mergeable_ranks=_pair_ranks(), special_tokens={})
    theirs = tiktoken.Encoding("c", pat_str=pat_str, mergeable_ranks=_pair_ranks(), special_tokens={})
    assert ours.encode_ordinary(PATTERN_PROBE) == theirs.encode_ordinary(PATTERN_PROBE)
    assert len(set(theirs.encode_ordinary(PATTERN_PROBE))) > 20         # the probe tells patterns apart


# Kimi K2's pat_str (moonshotai's tokenization_kimi.py), as code written for tiktoken gives it: classes in classes
KIMI_K2_PATTERN = "|".join([
    r"""[\p{Han}]+""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""", r""" ?[^\s\p{L}\p{N}]+[\r\n]*""", r"""\s*[\r\n]+""", r"""\s+(?!\S)""", r"""\s+"""])
HAN_PROBE = PATTERN_PROBE + " 中文English混合ÀbcDEF東京Tōkyō 汉字's 한국어 ÉcoleNORMALE 日本語テキスト"


# set operations and classes in classes: read by `regex`'s version 1 syntax as tiktoken's engine reads them
@pytest.mark.parametrize("pat_str", [
    KIMI_K2_PATTERN, r"[a-z&&[^aeiou]]+|.", r"[a-z--[aeiou]]+|.", r"[a-z~~[aeiou]]+|.", r"[[a-c][x-z]]+|.",
    r"[^[^a-c]&&\w]+|.", r"[\p{L}--\p{Lu}--\p{Lt}]+|[|]|.", r"[\w&&[^\d]]+$|\s+|.", r"(?i:'S)|[a-z&&[^k]]+|.",
    r"[[:alpha:]--[aeiou]]+|.", r"[[\d]--[5-9]]{1,2}|.", r"[\p{L}&&\p{Latin}&&[^a-z]]+|.",
])
def test_set_operations_and_classes_in_classes_read_as_tiktoken(pat_str, tmp_path):
    # they were refused (a class inside a class, "&&": `regex`'s default syntax reads them as members)
    ours = bpe_fast.Encoding("c", pat_str=pat_str, mergeable_ranks=_pair_ranks(), special_tokens={})
    assert ours.tokenizer.pattern.startswith(V1_PREFIX)
    assert _same_ids_or_refused(pat_str, HAN_PROBE)
    # and back to tiktoken, as written (a "|" in a class escaped); not to HF (Oniguruma has no "--" or "~~"), but
    # for Kimi K2's, which Oniguruma reads as tiktoken's engine does (test_hf)
    theirs = ours.tokenizer.to_tiktoken("back")
    assert theirs.encode_ordinary(HAN_PROBE) == ours.encode_ordinary(HAN_PROBE)
    if pat_str != KIMI_K2_PATTERN:
        with pytest.raises(ValueError, match="set operations or classes in classes"):
            ours.tokenizer.export_hf(tmp_path / "tokenizer.json")
        assert not (tmp_path / "tokenizer.json").exists()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(st.sampled_from(sorted(set(HAN_PROBE) | set("'sStTlLdDmMvVrReE\n\r\t 7"))), max_size=60))
def test_kimi_k2_pattern_gives_tiktokens_ids(text):
    ours, theirs = [module.Encoding("kimi", pat_str=KIMI_K2_PATTERN, mergeable_ranks=_pair_ranks(), special_tokens={})
                    for module in (bpe_fast, tiktoken)]
    assert ours.encode_ordinary(text) == theirs.encode_ordinary(text)


# constructs read differently with no `regex` spelling: refused, naming the construct
@pytest.mark.parametrize("pat_str, construct", [
    (r"(?i)\p{Lu}+|.", r"\p{Lu}"), (r"(?i:[A-Z]+)|.", "[A-Z]"),
    (r"(?i)[\x41-\x49]+|.", "[\\\\x41-\\\\x49]"), (r"(?i)\u0130+|.", "'\\\\u0130'"), (r"(?i)[^i]+|.", "[^i]"),
    (r"(?i)[[:upper:]]+|.", "[:upper:]"), (r"\N{LATIN SMALL LETTER A}|\w+|.", r"\N"),
])
def test_custom_pattern_read_otherwise_is_refused(pat_str, construct):
    # (?i)[A-Z] takes U+0131 in `regex`, not in tiktoken; two set operations in one class are ordered otherwise
    # ([a-z&&b--c]: && first in `regex`, left to right in tiktoken's engine); all gave other ids silently
    theirs = tiktoken.Encoding("c", pat_str=pat_str, mergeable_ranks=_pair_ranks(), special_tokens={})
    with pytest.raises(ValueError, match="read differently") as exc:
        bpe_fast.Encoding("c", pat_str=pat_str, mergeable_ranks=_pair_ranks(), special_tokens={})
    assert construct in str(exc.value)
    # read by `regex` as written (anchors aside), as it was: other ids than tiktoken's
    as_written = Tokenizer.from_tiktoken(_pair_ranks(), swap_tiktoken_anchors(pat_str), {})
    assert as_written.encode(PATTERN_PROBE) != theirs.encode_ordinary(PATTERN_PROBE)


@pytest.mark.parametrize("pat_str, construct", [
    (r"[a-z&&b--c]+|.", "&& and --"), (r"[a-z--b~~c]+|.", "-- and ~~"), (r"[&&a]+|.", "'&&' with no set"),
    (r"[a&&]+|.", "'&&' with no set"), (r"[a---b]+|.", "'--' with no set"), (r"[a[]b]]+|.", "'[]'"),
])
def test_set_operations_read_otherwise_in_version_1_are_refused(pat_str, construct):
    # two operations in one class are ordered otherwise (`regex`: && before --, tiktoken: left to right); an
    # operation with no set on one side, a class in a class starting with "]": read otherwise too (a fuzz of
    # such classes against tiktoken found them)
    tiktoken.Encoding("c", pat_str=pat_str, mergeable_ranks=_pair_ranks(), special_tokens={})
    with pytest.raises(ValueError, match="read differently") as exc:
        bpe_fast.Encoding("c", pat_str=pat_str, mergeable_ranks=_pair_ranks(), special_tokens={})
    assert construct in str(exc.value)


def test_two_set_operations_in_one_class_are_ordered_otherwise_in_version_1():
    # why the refusal above: [\w~~\d&&[0-4]] is (\w ~~ \d) && [0-4] to tiktoken, \w ~~ (\d && [0-4]) to `regex`
    pat_str = r"[\w~~\d&&[0-4]]+|."
    theirs = tiktoken.Encoding("c", pat_str=pat_str, mergeable_ranks=_pair_ranks(), special_tokens={})
    pieces = regex.findall(V1_PREFIX + pat_str, "a1b7")
    assert [token for piece in pieces for token in theirs._encode_single_piece(piece)] != theirs.encode_ordinary("a1b7")


_ATOMS = [r"\p{L}", r"\p{Lu}", r"\p{Ll}", r"\p{N}", r"\w", r"\d", r"\s", r"\S", r"\h", r"\H", "[[:alpha:]]",
          "[[:punct:]]", "[[:^space:]]", "[[:upper:]]", "[[:alnum:]_]", "[a-z&&[^aeiou]]", "[a-z--[aeiou]]",
          "[[a-c]x]", r"\x{e9}", r"\u{49}", r"\x49", "[A-Z]", "[a-h]", "[h-j]", "[^a-z]", "i", "I", "k", "s", "ß", "é",
          r"\<", r"\>", r"\b{start}", r"\b{end}", r"\b", "[\\x41-\\x49]", ".", "'", r"[\s\p{N}]", "[İı]"]


@st.composite
def _custom_patterns(draw):
    def sequence():
        atoms = draw(st.lists(st.sampled_from(_ATOMS), min_size=1, max_size=3))
        body = "".join(a + draw(st.sampled_from(["", "+", "{1,3}"])) for a in atoms)
        return f"(?i:{body})" if draw(st.booleans()) else body
    return "|".join(sequence() for _ in range(draw(st.integers(1, 4)))) + "|."


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_custom_patterns(), st.text(st.sampled_from(sorted(set(PATTERN_PROBE))), max_size=40))
def test_custom_pattern_gives_tiktokens_ids_or_is_refused(pat_str, text):
    # every custom pat_str tiktoken can use: bpe_fast gives its ids, or refuses the pattern naming why
    _same_ids_or_refused(pat_str, PATTERN_PROBE + text)


@pytest.mark.parametrize("pattern", [r"[[:alpha:]]+|.", r"\h+|.", r"(?i:[A-Z]+)|.", r"[a&&b]|."])
def test_to_tiktoken_refuses_a_pattern_tiktoken_reads_otherwise(pattern):
    # `regex` reads [[:alpha:]] as Unicode letters, tiktoken as ASCII ones: the Encoding gave other ids
    tok = Tokenizer({i: bytes([i]) for i in range(256)}, [], pattern=pattern)
    with pytest.raises(ValueError, match="read differently"):
        tok.to_tiktoken()


@pytest.mark.parametrize("pat_str, construct", [(r"(?R)a+|.", "(?R)"), (r"x|(?Ri:a)+|.", "(?Ri:"), (r"(?U)a+|.", "(?U)")])
def test_custom_pattern_with_a_flag_regex_reads_otherwise_is_refused(pat_str, construct):
    # R is tiktoken's CRLF mode and "(?R)" `regex`'s recursion of the whole pattern (encoding ran out of memory);
    # U swaps greediness in tiktoken and is no flag to `regex`
    tiktoken.Encoding("c", pat_str=pat_str, mergeable_ranks=_pair_ranks(), special_tokens={})
    with pytest.raises(ValueError, match="read differently") as exc:
        bpe_fast.Encoding("c", pat_str=pat_str, mergeable_ranks=_pair_ranks(), special_tokens={})
    assert construct in str(exc.value)


@pytest.mark.parametrize("pat_str", [r"((?i)a)b|.", r"(?P<n>(?i)a)b|.", r"(?=(?i)a)ab|.", r"(?>(?i)a)b|.",
                                     r"(a|(?i)x)b|.", r"((?x)a) b|.", r"((?:x)(?i)a)b|."])
def test_custom_pattern_with_flags_set_inside_a_group_tiktoken_keeps_on_is_refused(pat_str):
    # tiktoken's engine (fancy-regex) ends "(?i)" at the end of a "(?:...)" group only: after a capturing group,
    # a lookaround or an atomic group, the flag stays on; `regex` ends it with any group. (?:(?i)a)b reads alike
    text = PATTERN_PROBE + " ab AB aB Ab xB xAB a b"
    theirs = tiktoken.Encoding("c", pat_str=pat_str, mergeable_ranks=_pair_ranks(), special_tokens={})
    with pytest.raises(ValueError, match="read differently") as exc:
        bpe_fast.Encoding("c", pat_str=pat_str, mergeable_ranks=_pair_ranks(), special_tokens={})
    assert "(?i)" in str(exc.value) or "(?x)" in str(exc.value)
    as_written = Tokenizer.from_tiktoken(_pair_ranks(), swap_tiktoken_anchors(pat_str), {})
    assert as_written.encode(text) != theirs.encode_ordinary(text)
    assert _same_ids_or_refused(r"(?:(?i)a)b|(?:x(?i:a))b|.", text)


@pytest.mark.parametrize("pat_str", [r"\p{Print}+|.", r"[\p{graph}]+|.", r"\P{Graph}+|.", r"\p{ExtPict}+|.",
                                     r"\p{Extended_Pictographic}+|.", r"\p{^Print}+|."])
def test_custom_pattern_with_a_property_read_otherwise_is_refused(pat_str):
    # Print and Graph take the format characters (U+00AD, U+0600, ...) in `regex`, not in tiktoken's engine (whose
    # Print takes U+2028 and U+2029); Extended_Pictographic takes U+2605 (★) and 650 other symbols in tiktoken only
    text = PATTERN_PROBE + " a\u00ad\u0600b \u2605\u2388 x\u2029\u2029y"
    theirs = tiktoken.Encoding("c", pat_str=pat_str, mergeable_ranks=_pair_ranks(), special_tokens={})
    with pytest.raises(ValueError, match="read differently"):
        bpe_fast.Encoding("c", pat_str=pat_str, mergeable_ranks=_pair_ranks(), special_tokens={})
    as_written = Tokenizer.from_tiktoken(_pair_ranks(), swap_tiktoken_anchors(pat_str), {})
    assert as_written.encode(text) != theirs.encode_ordinary(text)


def test_custom_pattern_with_braced_U_escapes_gives_tiktokens_ids():
    # \U{...} is a hex escape to tiktoken as \x{...} and \u{...} are; `regex` did not compile it
    pat_str = r"\U{1F600}|\U{41}+|[\U{4B}-\U{4F}]+|."
    ours = bpe_fast.Encoding("c", pat_str=pat_str, mergeable_ranks=_pair_ranks(), special_tokens={})
    theirs = tiktoken.Encoding("c", pat_str=pat_str, mergeable_ranks=_pair_ranks(), special_tokens={})
    assert ours.encode_ordinary(PATTERN_PROBE + "AAKLM") == theirs.encode_ordinary(PATTERN_PROBE + "AAKLM")


def test_a_ranks_dict_changed_after_construction_changes_no_answer():
    """encode_single_token and token_byte_values read the caller's dict, which tiktoken copies: a rank added to
    it, or removed, after construction changed their answers (tiktoken's stay those of construction)."""
    ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256, b"abc": 257}
    specials = {"<|e|>": 300}
    ours = Encoding("t", pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens=specials)
    theirs = tiktoken.Encoding("t", pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens=specials)
    ranks[b"zz"] = 258
    del ranks[b"abc"]
    for enc in (ours, theirs):
        assert enc.encode_single_token(b"abc") == 257 and enc.encode_single_token("<|e|>") == 300
        with pytest.raises(KeyError):
            enc.encode_single_token(b"zz")
        assert enc.token_byte_values() == sorted([bytes([b]) for b in range(256)] + [b"ab", b"abc"])


# ---- tiktoken.load's functions (bpe_fast.load), against tiktoken's own, offline ----------------------------

def test_load_tiktoken_bpe_reads_and_checks_as_tiktoken(tmp_path, monkeypatch):
    # Llama 3's and Qwen's tokenizers do `from tiktoken.load import load_tiktoken_bpe`: bpe_fast had no such
    # function (its reader was bpe_fast.ranks.read_tiktoken, of another name and error)
    tiktoken_load = pytest.importorskip("tiktoken.load")
    import gzip
    import hashlib
    from bpe_fast.load import dump_tiktoken_bpe, load_tiktoken_bpe
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")        # tiktoken would copy even a local file into its cache
    path = tmp_path / "cl100k_base.tiktoken"
    path.write_bytes(gzip.decompress(open(ranks_path("cl100k_base"), "rb").read()))
    ranks = load_tiktoken_bpe(str(path))
    assert ranks == load_ranks("cl100k_base") == tiktoken_load.load_tiktoken_bpe(str(path))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert load_tiktoken_bpe(str(path), digest) == ranks
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "cache"))    # (with its cache off, tiktoken checks no hash)
    for load in (load_tiktoken_bpe, tiktoken_load.load_tiktoken_bpe):
        with pytest.raises(ValueError, match="Hash mismatch"):
            load(str(path), "0" * 64)
        assert load(str(path), "") == ranks         # an empty hash checks nothing (it was a mismatch in bpe_fast)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    small = {b"a": 0, b"b": 1, b"ab": 2, b"\x00\xff": 3}
    dump_tiktoken_bpe(small, str(tmp_path / "small.tiktoken"))
    assert tiktoken_load.load_tiktoken_bpe(str(tmp_path / "small.tiktoken")) == small
    assert load_tiktoken_bpe(str(tmp_path / "small.tiktoken")) == small
    (tmp_path / "bad.tiktoken").write_bytes(b"YQ== 0\nYg==1\n")
    with pytest.raises(ValueError, match=r"bad\.tiktoken:2: expected a base64 token"):
        load_tiktoken_bpe(str(tmp_path / "bad.tiktoken"))


def test_load_tiktoken_bpe_of_a_url_reads_tiktokens_cache_and_downloads_nothing(tmp_path, monkeypatch):
    import hashlib
    from bpe_fast.load import load_tiktoken_bpe
    url = "https://example.invalid/mine.tiktoken"
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="bpe_fast downloads nothing, and tiktoken's cache holds no copy"):
        load_tiktoken_bpe(url)
    data = b"YQ== 0\nYg== 1\nYWI= 2\n"
    (tmp_path / hashlib.sha1(url.encode()).hexdigest()).write_bytes(data)       # where tiktoken caches it
    assert load_tiktoken_bpe(url) == {b"a": 0, b"b": 1, b"ab": 2}
    assert load_tiktoken_bpe(url, hashlib.sha256(data).hexdigest()) == {b"a": 0, b"b": 1, b"ab": 2}
    with pytest.raises(FileNotFoundError, match="does not have the SHA-256 " + "1" * 64):
        load_tiktoken_bpe(url, "1" * 64)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    with pytest.raises(FileNotFoundError, match="tiktoken's cache is off"):
        load_tiktoken_bpe(url)


def test_data_gym_ranks_of_gpt2s_files_equal_tiktokens(tmp_path, monkeypatch):
    tiktoken_load = pytest.importorskip("tiktoken.load")
    from bpe_fast.load import data_gym_to_mergeable_bpe_ranks
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    vocab_bpe = tmp_path / "vocab.bpe"          # GPT-2's vocab.bpe: merges.txt with its "#version" line
    vocab_bpe.write_bytes(b"#version: 0.2\n" + (FIXTURES / "gpt2_merges.txt").read_bytes())
    encoder = str(FIXTURES / "gpt2_vocab.json")
    ranks = data_gym_to_mergeable_bpe_ranks(str(vocab_bpe), encoder)
    expected = tiktoken_load.data_gym_to_mergeable_bpe_ranks(str(vocab_bpe), encoder)
    assert ranks == expected and list(ranks) == list(expected) and len(ranks) == 50256
    with pytest.raises(ValueError, match=r"does not match .*merges\.txt: b' a' is 256 by the merges, 257 in"):
        data_gym_to_mergeable_bpe_ranks(str(FIXTURES / "gpt2_merges.txt"), encoder)     # its first merge skipped


def test_dump_tiktoken_bpe_refuses_ranks_load_tiktoken_bpe_would_refuse(tmp_path):
    # dump_tiktoken_bpe wrote whatever it was given, so a rank beyond MAX_TOKEN_ID, a negative one, the empty
    # token or a rank given twice made a file its own load_tiktoken_bpe refuses; they are refused before
    # anything is written now, and numpy ints (which tiktoken's writes) are taken
    import numpy as np
    from bpe_fast.formats import MAX_TOKEN_ID
    from bpe_fast.load import dump_tiktoken_bpe, load_tiktoken_bpe
    path = tmp_path / "r.tiktoken"
    for bad, match in [({b"a": MAX_TOKEN_ID + 1}, "out of range"), ({b"a": -1}, "out of range"),
                       ({b"": 0}, "empty token"), ({b"a": 0, b"b": 0}, "same rank 0"),
                       ({b"a": 0, b"b": "1"}, "not an int"), ({"a": 0}, "not bytes")]:
        with pytest.raises((ValueError, TypeError), match=match):
            dump_tiktoken_bpe(bad, str(path))
        assert list(tmp_path.iterdir()) == []
    ranks = {bytes([b]): 255 - b for b in range(256)} | {b"\x00\xff": MAX_TOKEN_ID}
    dump_tiktoken_bpe({k: np.int64(v) for k, v in ranks.items()}, str(path))
    assert load_tiktoken_bpe(str(path)) == dict(sorted(ranks.items(), key=lambda item: item[1]))


def test_data_gym_errors_name_the_file_and_line(tmp_path, monkeypatch):
    # vocab.bpe not UTF-8 was the bare UnicodeDecodeError of its bytes, an encoder.json that is not JSON (or not
    # an object) json's error, naming neither file; a character outside GPT-2's byte mapping named both files
    # and no line. (tiktoken's are the same bare errors, a KeyError for the character.)
    tiktoken_load = pytest.importorskip("tiktoken.load")
    from bpe_fast.load import data_gym_to_mergeable_bpe_ranks
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    merges = b"#version: 0.2\n" + (FIXTURES / "gpt2_merges.txt").read_bytes()
    encoder = (FIXTURES / "gpt2_vocab.json").read_bytes()
    vocab_bpe, encoder_json = tmp_path / "vocab.bpe", tmp_path / "encoder.json"
    cases = [(merges.replace(b"\n", b"\n\xff x\n", 3), encoder, r"vocab\.bpe:2: not UTF-8"),
             (merges.replace(b"\n", b"\n\x00 a\n", 3), encoder, r"vocab\.bpe:2: .*'\\x00'"),
             (merges, encoder[:-5], r"encoder\.json:1: bad JSON"),
             (merges, b"[1, 2]", r"encoder\.json: .*object"),
             (merges, encoder.replace(b'"!"', b'"\\u0000"', 1), r"encoder\.json: .*'\\x00'"),
             (merges, encoder.replace(b'"!": 0', b'"!": "0"'), r"'!' is 0 by the merges, '0' in .*encoder\.json")]
    for vocab_data, encoder_data, match in cases:
        vocab_bpe.write_bytes(vocab_data)
        encoder_json.write_bytes(encoder_data)
        with pytest.raises(Exception):
            tiktoken_load.data_gym_to_mergeable_bpe_ranks(str(vocab_bpe), str(encoder_json))
        with pytest.raises(ValueError, match=match):
            data_gym_to_mergeable_bpe_ranks(str(vocab_bpe), str(encoder_json))
    for vocab_data, encoder_data in [(b"\xef\xbb\xbf" + merges, encoder), (merges, b"\xef\xbb\xbf" + encoder)]:
        vocab_bpe.write_bytes(vocab_data)       # a BOM: in vocab.bpe's first line, which is skipped; in
        encoder_json.write_bytes(encoder_data)  # encoder.json, read past (json.loads of bytes does)
        expected = tiktoken_load.data_gym_to_mergeable_bpe_ranks(str(vocab_bpe), str(encoder_json))
        assert data_gym_to_mergeable_bpe_ranks(str(vocab_bpe), str(encoder_json)) == expected


def test_data_gym_refuses_a_token_two_merges_make(tmp_path, monkeypatch):
    # the rank of a merge's token was len(ranks), which a token made again (a merge line given twice, or two
    # merges of the same bytes) does not grow: the next merge had the same rank, so an encoder.json with the two
    # ids alike was taken and the ranks held 258 twice (tiktoken counts the merges: b"cd" 259). A
    # token made twice is refused, as a token given twice in a .tiktoken file is, naming both lines
    from bpe_fast.formats import bytes_to_unicode
    from bpe_fast.load import data_gym_to_mergeable_bpe_ranks
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    chars = bytes_to_unicode()
    singles = {chars[b]: i for i, b in enumerate(sorted(range(256), key=lambda b: ord(chars[b])))}
    (tmp_path / "vocab.bpe").write_text("#version: 0.2\na b\nab c\nab c\nc d\n")
    for ids in [{"ab": 256, "abc": 258, "cd": 258}, {"ab": 256, "abc": 258, "cd": 259}]:
        (tmp_path / "encoder.json").write_text(json.dumps(singles | ids))
        with pytest.raises(ValueError, match=r"vocab\.bpe:4: the merge 'ab c' makes b'abc', made on line 3 already"):
            data_gym_to_mergeable_bpe_ranks(str(tmp_path / "vocab.bpe"), str(tmp_path / "encoder.json"))


def test_data_gym_clobbering_refuses_a_byte_given_a_merges_id(tmp_path, monkeypatch):
    # clobber_one_byte_tokens takes the single bytes' ids from encoder.json: one given a merge's id (or two bytes
    # one id) made ranks holding that rank twice, returned as they agree with encoder.json (as tiktoken's do)
    from bpe_fast.formats import bytes_to_unicode
    from bpe_fast.load import data_gym_to_mergeable_bpe_ranks
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    chars = bytes_to_unicode()
    singles = {chars[b]: i for i, b in enumerate(sorted(range(256), key=lambda b: ord(chars[b])))}
    (tmp_path / "vocab.bpe").write_text("#version: 0.2\na b\n")
    for ids in [{"ab": 256, "c": 256}, {"ab": 256, "c": 0}]:
        (tmp_path / "encoder.json").write_text(json.dumps(singles | ids))
        with pytest.raises(ValueError, match=r"encoder\.json: b'.*' and b'.*' have the same id (256|0)"):
            data_gym_to_mergeable_bpe_ranks(str(tmp_path / "vocab.bpe"), str(tmp_path / "encoder.json"),
                                            clobber_one_byte_tokens=True)
    (tmp_path / "encoder.json").write_text(json.dumps(singles | {"ab": 256, "c": 300}))    # a gap: taken
    ranks = data_gym_to_mergeable_bpe_ranks(str(tmp_path / "vocab.bpe"), str(tmp_path / "encoder.json"),
                                            clobber_one_byte_tokens=True)
    assert ranks[b"c"] == 300 and ranks[b"ab"] == 256


def test_a_url_whose_cached_copy_is_a_pipe_or_folder_is_not_read(tmp_path, monkeypatch):
    # tiktoken's cache is a file bpe_fast picks, not one the caller names: a named pipe there blocked the read
    # for good (get_encoding passes such a file over), a folder was IsADirectoryError naming only the cache entry
    import hashlib
    import os
    import threading
    from bpe_fast.load import load_tiktoken_bpe
    url = "https://example.invalid/mine.tiktoken"
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    cached = tmp_path / hashlib.sha1(url.encode()).hexdigest()
    os.mkfifo(cached)
    outcome = []

    def load():
        try:
            outcome.append(load_tiktoken_bpe(url))
        except FileNotFoundError as exc:
            outcome.append(exc)

    reader = threading.Thread(target=load, daemon=True)
    reader.start()
    reader.join(5)
    if reader.is_alive():
        with open(cached, "wb"):        # let the blocked reader go
            pass
        reader.join(5)
        pytest.fail("load_tiktoken_bpe blocked on a named pipe in tiktoken's cache")
    assert "example.invalid/mine.tiktoken" in str(outcome[0]) and "not a regular file" in str(outcome[0])
    cached.unlink()
    cached.mkdir()
    with pytest.raises(FileNotFoundError, match=r"example\.invalid/mine\.tiktoken: .*not a regular file"):
        load_tiktoken_bpe(url)


def test_data_gym_clobbering_refuses_an_id_that_is_no_rank(tmp_path, monkeypatch):
    # the single bytes' ids taken from encoder.json were returned as they were: 0.0, "0", -5 or 2**40 as a rank
    # (a list: unhashable, a TypeError naming no file)
    from bpe_fast.formats import MAX_TOKEN_ID, bytes_to_unicode
    from bpe_fast.load import data_gym_to_mergeable_bpe_ranks
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    chars = bytes_to_unicode()
    singles = {chars[b]: i for i, b in enumerate(sorted(range(256), key=lambda b: ord(chars[b])))}
    (tmp_path / "vocab.bpe").write_text("#version: 0.2\na b\n")
    for bad in [0.0, True, "0", [0], -5, MAX_TOKEN_ID + 1]:
        (tmp_path / "encoder.json").write_text(json.dumps(singles | {"ab": 256, "!": bad}))
        with pytest.raises(ValueError, match=r"encoder\.json: the id of b'!' is .*, not an int in 0\.\."):
            data_gym_to_mergeable_bpe_ranks(str(tmp_path / "vocab.bpe"), str(tmp_path / "encoder.json"),
                                            clobber_one_byte_tokens=True)


def test_bpe_fast_load_has_tiktoken_loads_public_functions():
    # `from tiktoken.load import *` gives read_file_cached and check_hash too; bpe_fast.load's __all__ left them out
    tiktoken_load = pytest.importorskip("tiktoken.load")
    import bpe_fast.load
    wanted = {"load_tiktoken_bpe", "dump_tiktoken_bpe", "data_gym_to_mergeable_bpe_ranks", "read_file_cached",
              "check_hash"}
    assert wanted <= set(bpe_fast.load.__all__) and all(hasattr(tiktoken_load, name) for name in wanted)
    data = b"YQ== 0\n"
    digest = tiktoken_load.hashlib.sha256(data).hexdigest()
    assert bpe_fast.load.check_hash(data, digest) is tiktoken_load.check_hash(data, digest) is True
    assert bpe_fast.load.check_hash(data, "0" * 64) is tiktoken_load.check_hash(data, "0" * 64) is False


# ------------------------------------------------------------------------------------- encode_with_unstable

def unstable(encoding, text, **keywords):
    """encode_with_unstable's result, its completions as a sorted list (tiktoken's come from a hash set, in an
    order that changes from run to run) with their count (so a sequence listed twice would show)."""
    stable, completions = encoding.encode_with_unstable(text, **keywords)
    assert isinstance(stable, list) and all(isinstance(seq, list) for seq in completions)
    return stable, sorted(map(tuple, completions)), len(completions)


UNSTABLE_TEXTS = [
    "", "hello fant", "hello", "x<|endoftext|>", "x<|endoftext|>ab c", "a<|endoftext|> ", "don'", "I'm don't",
    "12345", "3.1", "héllo wör", "日本語の", "😀", "a\u3000", "a\u3000\u3000", "abc\t", "x   \n", "x\r\n", "a\n\n",
    "<|endofprompt|>x", "a..", "foo(", "ÀÉÎ", "a\u0301", "\n\n\n",
    "a\n\t", " \n\t", "a\n\n\t",       # o200k: tokens of white space before the last piece are unstable too
]


@pytest.mark.parametrize("text", UNSTABLE_TEXTS)
def test_encode_with_unstable_as_tiktoken(pair, text):
    # the stable ids and the set of completions are tiktoken's, each completion listed once
    same(pair, unstable, text)
    same(pair, unstable, text, allowed_special="all")
    same(pair, unstable, text, allowed_special={EOT}, disallowed_special=())


@pytest.mark.parametrize("text", [" ", "a  b ", "hi\n \n ", "x" + " " * 40, "x" + " " * 80])
def test_encode_with_unstable_of_trailing_white_space(text):
    # the largest cases (a token that starts with a space: tens of thousands of completions), and the whitespace
    # steps (tokens of spaces before the last piece; the last white-space character alone), on GPT-2's ranks;
    # 40 and 80 spaces: completions of 40 and 80 ids (the lists made from slices of one list, and from each
    # sequence's own array)
    got = same(encodings("gpt2"), unstable, text, allowed_special="all")
    assert got[0] == "ok" and got[1][2] > 10_000


def test_encode_with_unstable_promises():
    # tiktoken's docstring: the stable ids decode to a prefix of the text, and each completion after them to
    # the text and more; examples worked by hand on a tiny encoding
    enc = bpe_fast.encoding._tiny()
    assert enc.encode_with_unstable("abc ab") == ([257, 32], [[256], [257]])       # "ab" may become "abc"
    assert enc.encode_with_unstable("abc ab<|endoftext|>", allowed_special="all") == ([257, 32, 256, 258], [])
    ours, _ = encodings("cl100k_base")
    text = "Once upon a time, in a land far aw"
    stable, completions = ours.encode_with_unstable(text)
    assert text.encode().startswith(ours.decode_bytes(stable)) and ours.decode(stable) == "Once upon a time, in a land far"
    assert completions and all(ours.decode_bytes(stable + seq).startswith(text.encode()) for seq in completions)
    assert [ours.encode_single_token(" away")] in completions


def test_encode_with_unstable_bad_input(pair):
    # tiktoken's exceptions: a disallowed special token, a lone surrogate, allowed_special not a set
    same(pair, unstable, f"a {EOT}")
    same(pair, unstable, "a\ud800b")
    same(pair, unstable, "ab", allowed_special=[EOT])


def test_encode_with_unstable_of_a_token_that_finishes_a_character():
    # a token that starts inside a character (b"\\xa9 x": the end of "é", then " x") finishes the text "é" into
    # UTF-8 ("é x") that the pattern splits before merging, unlike the same bytes merged as one piece (tiktoken's
    # way for bytes that are not UTF-8): with these ranks the two give different completions
    ranks = {bytes([b]): b for b in range(256)} | {b"\xa9 ": 256, b"\xa9 x": 257}
    pair = tuple(module.Encoding("t", pat_str=r"\S+|\s+", mergeable_ranks=ranks, special_tokens={})
                 for module in (bpe_fast, tiktoken))
    got = same(pair, unstable, "é")
    assert got[0] == "ok" and (195, 169) in got[1][1] and (195, 257) not in got[1][1]


@pytest.mark.parametrize("text", ["\n\t\n ", "x\n\t\n ", "a\xff", "\n\t\n"])
def test_encode_with_unstable_of_ranks_merging_does_not_make(text):
    # tokens merging cannot make ("a\xff\xff", "\n\t\n": by_ranks_only): tiktoken merges the candidates that are not
    # UTF-8 and the text before trailing white space by its byte_pair_encode, which never looks a piece up
    # whole, so "\n\t\n" stays three ids there (helper-130: bpe_fast gave [257, 32] as one more completion)
    ranks = {bytes([b]): b for b in range(256)} | {b"a\xff\xff": 256, b"\n\t\n": 257}
    pair = tuple(module.Encoding("t", pat_str=r"\S+|\s+", mergeable_ranks=ranks, special_tokens={})
                 for module in (bpe_fast, tiktoken))
    assert pair[0]._tokenizer.by_ranks_only
    assert same(pair, unstable, text)[0] == "ok"
    tok = pair[0]._tokenizer
    assert tok.merge_pieces([b"\n\t\n", b"a\xff\xff", b""]) == [[10, 9, 10], [97, 255, 255], []]
    assert tok.encode_pieces([b"\n\t\n", b"a\xff\xff"]) == [[257], [256]]
    with pytest.raises(TypeError, match=r"pieces\[1\] must be bytes, got str"):
        tok.merge_pieces([b"a", "b"])


def test_encode_with_unstable_merges_a_candidate_that_is_not_utf8_without_looking_it_up():
    # "a\xc3" + the token "\xa9\xff" is a candidate that is not UTF-8, and a token merging does not make: tiktoken's
    # byte_pair_encode leaves it [97, 195, 256], where a whole-piece lookup gives [257] (a completion anyway: it
    # starts with the unstable bytes)
    ranks = {bytes([b]): b for b in range(256)} | {b"\xa9\xff": 256, b"a\xc3\xa9\xff": 257}
    pair = tuple(module.Encoding("t", pat_str=r"\S+|\s+", mergeable_ranks=ranks, special_tokens={})
                 for module in (bpe_fast, tiktoken))
    got = same(pair, unstable, "a\u00e9")
    assert got[0] == "ok" and (97, 195, 256) in got[1][1] and (257,) in got[1][1]


def test_encode_with_unstable_with_ids_mostly_without_tokens():
    # a special token far above the ranks: most ids have no bytes, and the sorted vocabulary is made from the
    # ranked tokens' bytes alone (helper-130: sorting a million empty strings took 0.1 s)
    ranks = {bytes([b]): b for b in range(256)} | {b"ab": 300, b"abc": 5000, b" a": 700, b" ab": 9000}
    pair = tuple(module.Encoding("t", pat_str=r"\S+|\s+", mergeable_ranks=ranks, special_tokens={"<|x|>": 2**20})
                 for module in (bpe_fast, tiktoken))
    for text in ("x ab", "x a", "ab", "x<|x|> a"):
        assert same(pair, unstable, text, allowed_special="all")[0] == "ok"
    assert pair[0].token_byte_values() == pair[1].token_byte_values()


def test_token_byte_values_is_a_new_list_each_call():
    # made once (the sorted bytes), handed out as a new list each time, as tiktoken's: changing one changes
    # nothing the next call gives
    ours, theirs = encodings("cl100k_base")
    first = ours.token_byte_values()
    first[0] = b"changed"
    assert ours.token_byte_values() == theirs.token_byte_values() != first


@pytest.mark.parametrize("text", ["ab <|x|>", "ab <|x|> ", "ab <|x|>cd e", "a, b", "ab!"])
def test_encode_with_unstable_of_a_pattern_that_leaves_text_out(text):
    # the text after the last special token is found in the text, not from the tokens' lengths (the skipped
    # space put it one character early: StopIteration)
    ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256, b"cd": 257}
    pair = tuple(module.Encoding("t", pat_str=r"\w+", mergeable_ranks=ranks, special_tokens={"<|x|>": 300})
                 for module in (bpe_fast, tiktoken))
    assert same(pair, unstable, text, allowed_special="all")[0] == "ok"


@pytest.mark.parametrize("text", ["b", "ab", "ab a", "ab\u65e5 a\u65e5", "x ab<|x|>ab"])
def test_encode_with_unstable_of_a_pattern_that_matches_empty_text(text):
    # tiktoken's regex reports no empty match where the match before it ends (\w* on "ab": "ab", not "ab" and
    # ""): its last piece is the last word, unstable, where an empty last match left nothing unstable
    ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256, b"abc": 257}
    pair = tuple(module.Encoding("t", pat_str=r"\w*", mergeable_ranks=ranks, special_tokens={"<|x|>": 300})
                 for module in (bpe_fast, tiktoken))
    got = same(pair, unstable, text, allowed_special="all")
    assert got[0] == "ok" and got[1][2] > 0


@FEW
@given(st.lists(st.sampled_from(["a", "b", "ab", " ", "  ", "\n", "\t", "1", "é", "日", "'", "s", ".", EOT, "\u3000",
                                 "the", " the", "\r\n"]), max_size=6).map(joined))
def test_encode_with_unstable_random_text_gpt2(text):
    same(encodings("gpt2"), unstable, text, allowed_special="all")


@SOME
@given(st.lists(st.lists(st.integers(0, 2**20), max_size=5), max_size=40), st.sampled_from([1, 3, 2**20]),
       st.sampled_from([1, 2, 3]))
def test_completions_each_once_in_order_found(seqs, scale, copies):
    # encode_with_unstable's sequences of ids, each kept once (its first), those of one token in step 1 left
    # out, the shorter first and otherwise as found: against a plain-Python dict of tuples (ids below 3 give
    # many equal sequences; their bytes are hashed natively, so equal ones must be found among unequal ones)
    from bpe_fast._tiktoken import _joined_segments, _segments
    seqs = [[i % scale for i in seq] for seq in seqs]
    parts = [_segments(seqs[k::copies]) for k in range(copies)]
    flat, first, stop = _joined_segments(parts)
    found = [seq for k in range(copies) for seq in seqs[k::copies]]
    assert [flat[a:b].tolist() for a, b in zip(first, stop)] == found
    from bpe_fast._inspect import first_spans
    kept = first_spans(flat.view(np.uint8), first * 4, stop * 4).tolist()
    assert [found[k] for k in kept] == [list(t) for t in dict.fromkeys(map(tuple, found))]


def test_first_spans_refuses_spans_outside_the_pool():
    from bpe_fast._inspect import first_spans
    assert first_spans(b"abab", np.array([0, 2, 1, 0]), np.array([2, 4, 3, 0])).tolist() == [0, 2, 3]
    for starts, stops in (([0], [5]), ([2], [1]), ([-1], [1])):
        with pytest.raises(ValueError, match=r"string 0 \(.*\) is not within the pool's 4 bytes"):
            first_spans(b"abab", np.array(starts), np.array(stops))
    with pytest.raises(ValueError, match="the same length"):
        first_spans(b"abab", np.array([0, 1]), np.array([1]))


@SOME
@given(st.lists(st.lists(st.integers(1, 4), min_size=1, max_size=6), min_size=1, max_size=12),
       st.integers(1, 8), st.booleans())
def test_covering_tokens_against_a_walk(texts, size, drop):
    # where each text's tokens begin and end once they cover its first `size` bytes (texts as lists of token
    # lengths; token id = length - 1); None where a text is shorter than size, or (drop) a token is left out
    from bpe_fast._inspect import covering_tokens
    ids = np.array([n - 1 for text in texts for n in text], dtype=np.int32)
    bounds = np.cumsum([0] + [sum(text) for text in texts])
    if drop:
        ids = ids[:-1]
    lengths = np.arange(1, 5, dtype=np.int64)
    got = covering_tokens(ids, lengths, bounds, size)
    if drop or min(sum(text) for text in texts) < size:
        assert got is None
        return
    first, stop, t = [], [], 0
    for text in texts:
        first.append(t)
        covered = 0
        for k, n in enumerate(text):
            covered += n
            if covered >= size:
                stop.append(t + k + 1)
                break
        t += len(text)
    assert got[0].tolist() == first and got[1].tolist() == stop


@pytest.mark.parametrize("piece", ["hello world", "  !", "日本", b"\xe6\x97", b"\xff\xfe ab", "<|endoftext|>"])
def test_encode_single_piece_as_tiktoken(pair, piece):
    # tiktoken's private method (used by code that merges a piece without the pre-tokenizer): no regex split,
    # no special tokens, any bytes. (Of b"", tiktoken's Rust panics; bpe_fast's gives [].)
    same(pair, "_encode_single_piece", piece)
    assert pair[0]._encode_single_piece(b"") == []


ENCODE_BYTES = [b"", b"hello world", b"ab\xff", b"hello \xff world", b"\xff", b"\xe6\x97", b"hello wor\xe6\x97",
                b"abc  \xe6", b"x\n\n\xff", b"x \n \xff", "a <|endoftext|>".encode() + b"\xff", b"12345\x80",
                b"don'\xff", b"a\n\n\t\xa5", b"The \xe6\x97\xa5 end", b"caf\xc3",
                b" \taa\xff"]       # cl100k, o200k: "\taa" is a piece, the tokens " " and "\t" before "aa" unstable


@pytest.mark.parametrize("data", ENCODE_BYTES)
def test_encode_bytes_as_tiktoken(pair, data):
    # tiktoken's private method for bytes that may not be UTF-8: the tokens text appended could change (the last
    # piece's, and white space before it) merged again with the bytes from the first invalid one on
    same(pair, "_encode_bytes", data)


@SOME
@given(st.lists(st.sampled_from([b"a", b"b", b" ", b"  ", b"\n", b"\t", b"\r\n", b"\xff", b"\xe6", b"\x97", b"\xa5",
                                 b"the", b" the", b"1", b"'s", "é".encode(), EOT.encode()]), max_size=8).map(b"".join),
       st.sampled_from(NAMES))
def test_encode_bytes_random_bytes(data, name):
    same(encodings(name), "_encode_bytes", data)


@pytest.mark.parametrize("text", ["hello world", "a  b\n\n", f"{EOT} x", "12345 6", "\ud800x", ""])
def test_encode_only_native_bpe_as_tiktoken(pair, text):
    # tiktoken's private check of its Rust split: `regex`'s findall of the pattern, each piece merged alone
    same(pair, "_encode_only_native_bpe", text)


@pytest.mark.parametrize("method", ["_encode_bytes", "_encode_single_piece"])
@pytest.mark.parametrize("arg", [bytearray(b"ab\xff"), memoryview(b"ab"), 5, 0, True, [97, 98], (97,), None, "ab\xff"])
def test_private_bytes_methods_refuse_what_tiktoken_refuses(method, arg):
    # tiktoken's Rust takes bytes only (a str for _encode_single_piece): a bytearray, memoryview, int or list is
    # its TypeError, not bytes(arg)'s reading of it (5 was five zero bytes, [97, 98] b"ab")
    same(encodings("gpt2"), method, arg)


# (pat_str, text): accepted and read otherwise than tiktoken reads them (helper-102's grammar fuzz against tiktoken);
# now either read as tiktoken reads them (respelled) or refused naming the construct
READ_AS_TIKTOKEN = [(r"\<?a", "ba"), (r"x\<?\w+|\s+", "xab cd"), (r"\b{start}?a|\S", "ba"),     # a quantified \<
                    (r"[[:word:]-a]|\S", "-a"), (r"[[:space:]-~]+|\w+", "a b-c"),                  # "-" after a set
                    # an empty match right after a match: tiktoken goes on one character later, `regex` looked for a
                    # longer match there ("a", "", "b": [97, 98] where tiktoken gives [97])
                    (r"a|(?=b)|b", "ab"), (r"[a-z]+|(?=,)|,", "ab,"), (r"\w*", "ab a")]
REFUSED_AS_TIKTOKEN = [(r"\pl+|\s+", r"\\p"),                       # \p{L} to tiktoken, nothing to `regex`
                       (r"\p{gc!=L}|\S", r"\\p\{gc!=L\}"),          # a negation to tiktoken, nothing to `regex`
                       ("(?x)a\u3000b|\\S", r"'\\u3000' where the flag x is on"),     # which spaces it skips
                       ("(?x)[a b]|\\S", "' ' where the flag x is on"),              # and in a class
                       (r"[.-[:word:]]|\S", r"\[:word:\]"),         # a range ending in a POSIX set
                       (r"(?i:x)|[^L]|y", r"'\[\^L\]' \(an alternative of its own"),  # `regex` ignores its case
                       (r"[^a-f\s\S]{1}|b", r"\[\^\\s\\S"),               # any character to `regex`, none to tiktoken
                       (r"(?:\p{Common}*|\D)+|\s+", "")]    # a loop of what can be empty: see the next test


@pytest.mark.parametrize("pat_str, text", READ_AS_TIKTOKEN)
def test_custom_patterns_respelled_read_as_tiktoken_reads_them(pat_str, text):
    ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256, b"ba": 257, b"b-": 258, b" b": 259}
    ours, theirs = (module.Encoding("c", pat_str=pat_str, mergeable_ranks=ranks, special_tokens={})
                    for module in (bpe_fast, tiktoken))
    assert ours.encode(text) == theirs.encode(text)


@pytest.mark.parametrize("pat_str, construct", REFUSED_AS_TIKTOKEN)
def test_custom_patterns_read_otherwise_are_refused(pat_str, construct):
    ranks = {bytes([b]): b for b in range(256)}
    tiktoken.Encoding("c", pat_str=pat_str, mergeable_ranks=ranks, special_tokens={})     # tiktoken takes it
    with pytest.raises(ValueError, match=f"has {construct}" if construct else "repeats what can match empty text"):
        bpe_fast.Encoding("c", pat_str=pat_str, mergeable_ranks=ranks, special_tokens={})


def test_a_loop_of_what_can_be_empty_ends_elsewhere_in_the_two_engines():
    # (?:\p{Common}*|\D)+ at "x": `regex` ends the loop at its first, empty, pass (an empty match), tiktoken's
    # engine takes "x" by \D (helper-102's fuzz, once the empty matches were read as tiktoken reads them)
    import regex
    ranks = {bytes([b]): b for b in range(256)}
    theirs = tiktoken.Encoding("c", pat_str=r"(?:\p{Common}*|\D)+|\s+", mergeable_ranks=ranks, special_tokens={})
    assert theirs.encode("  x") == [32, 32, 120]
    assert regex.match(r"(?>(?:\p{Common}*|\D)+)", "x").group() == ""


# ------------------------------------------------------------------------------------- allowed sets kept

ALLOWED_TEXTS = ["a<|endoftext|>b", "x<|fim_prefix|>y<|endoftext|>", "<|endofprompt|><|endoftext|>", "plain text",
                 "<|", "<|endoftext", "<|fim_suffix|>", ""]


def test_an_allowed_set_changed_between_calls_is_read_again():
    # encode keeps what an allowed set asks for, keyed by the set's identity and checked by its contents: one set
    # object changed between calls must give tiktoken's results each time (kept by identity alone, the second
    # step encoded <|fim_prefix|> as disallowed)
    pair = encodings("cl100k_base")
    allowed = {EOT}
    frozen = frozenset({EOT})
    steps = [lambda: None, lambda: allowed.add("<|fim_prefix|>"), lambda: allowed.discard(EOT), allowed.clear,
             lambda: allowed.update(pair[0].special_tokens_set), lambda: allowed.add("not special"),
             lambda: allowed.discard("<|fim_suffix|>")]
    for step in steps:
        step()
        for text in ALLOWED_TEXTS:
            for given in (allowed, frozen):
                for disallowed in ("all", ()):
                    same(pair, lambda e: e.encode(text, allowed_special=given, disallowed_special=disallowed))
                    same(pair, lambda e: e.encode_to_numpy(text, allowed_special=given,
                                                           disallowed_special=disallowed))
                same(pair, lambda e: e.encode_with_unstable(text, allowed_special=given)[0])


@FEW
@given(st.lists(st.tuples(st.integers(0, 2), st.sampled_from(["add", "discard", "encode", "encode ()"]),
                          st.sampled_from([EOT, "<|fim_prefix|>", "<|endofprompt|>", "other"]),
                          st.sampled_from(ALLOWED_TEXTS)), max_size=30))
def test_allowed_sets_changed_and_reused_give_tiktokens_results(ops):
    pair = encodings("cl100k_base")
    sets = [set(), {EOT}, {EOT, "<|endofprompt|>"}]
    for which, op, token, text in ops:
        given_set = sets[which]
        if op == "add":
            given_set.add(token)
        elif op == "discard":
            given_set.discard(token)
        else:
            disallowed = () if op == "encode ()" else "all"
            same(pair, lambda e: e.encode(text, allowed_special=given_set, disallowed_special=disallowed))


def test_a_set_kept_for_one_core_is_not_used_with_the_next():
    # the kept views are the core's tokenizer's: a core put in place drops them (kept, the text below encoded with
    # the old core's larger vocabulary)
    pair = fresh_gpt2_pair()
    allowed = {EOT}
    text = "Hello world, ouri<|endoftext|>"
    before = same(pair, lambda e: e.encode(text, allowed_special=allowed))
    for enc, module in zip(pair, (bpe_fast, tiktoken)):
        enc._core_bpe = module._tiktoken.CoreBPE(dict(list(enc._mergeable_ranks.items())[:300]), {EOT: 300},
                                                enc._pat_str)
    after = same(pair, lambda e: e.encode(text, allowed_special=allowed))
    assert after != before
    same(pair, lambda e: e.encode(text))


def test_many_special_tokens_with_a_kept_set():
    # more than FEW_TOKENS disallowed tokens are looked for by one regex, not one by one
    from bpe_fast.specials import FEW_TOKENS

    ranks, _ = gpt2_ranks()
    specials = {f"<|s{k}|>": 50257 + k for k in range(FEW_TOKENS + 4)} | {EOT: 50256}
    pair = [module.Encoding("many", pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens=specials)
            for module in (bpe_fast, tiktoken)]
    allowed = {"<|s1|>", "<|s3|>"}
    for text in ["a<|s1|>b<|s3|>", "a<|s1|>b<|s2|>", "<|s11|>", "<|s1", "x" * 50, f"a{EOT}"]:
        same(pair, lambda e: e.encode(text, allowed_special=allowed))
        same(pair, lambda e: e.encode(text, allowed_special=allowed, disallowed_special=()))
        same(pair, lambda e: e.encode(text))


class _NothingInside(str):
    def __contains__(self, item):
        return False


def test_a_str_subclass_is_searched_as_a_str():
    # encode looks for disallowed tokens in the text's characters, as tiktoken's regex does: not with the text's
    # own `in` (here always False)
    pair = encodings("cl100k_base")
    for text in [_NothingInside("a<|endoftext|>"), _NothingInside("a<|fim_prefix|>b"), _NothingInside("plain")]:
        same(pair, lambda e: e.encode(text))
        same(pair, lambda e: e.encode(text, allowed_special={EOT}))
        same(pair, lambda e: e.encode(text, allowed_special={"<|fim_prefix|>"}, disallowed_special=()))


def _values_in_a_dict(obj, name):
    """Whether `obj`'s attributes live in a dict (its __dict__ was read) rather than in the object: on CPython
    3.11 each attribute read is then ~15 ns slower. A dict holding the attribute `name` among what the garbage
    collector sees of the object says so."""
    import gc

    return any(type(r) is dict and name in r for r in gc.get_referents(obj))


@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="how CPython 3.11 keeps an object's attributes")
def test_calls_leave_the_attributes_in_the_objects():
    pair = fresh_gpt2_pair()
    ours = pair[0]
    calls = [lambda e: e.encode("a<|endoftext|>", allowed_special={EOT}), lambda e: e.encode("hi"),
             lambda e: e.encode("hi", disallowed_special=()), lambda e: e.encode_single_token(b"hi"),
             lambda e: e.encode_single_token(EOT), lambda e: e.decode_single_token_bytes(50256),
             lambda e: e.decode([31373]), lambda e: e.special_tokens_set, lambda e: e.encode_batch(["a", "b"]),
             lambda e: e.decode_with_offsets([31373]), lambda e: e.token_byte_values()[:3],
             lambda e: e.encode("x", allowed_special="all")]
    for call in calls:
        same(pair, call)
    assert not _values_in_a_dict(ours._core, "_tokenizer")
    ours._core_bpe = bpe_fast._tiktoken.CoreBPE(ours._mergeable_ranks, {EOT: 50256, "<|a|>": 50257}, ours._pat_str)
    for call in calls:
        call(ours)
    tok = ours.tokenizer
    tok.token_lengths()
    for view in [tok, ours._ordinary, tok.restricted_to(frozenset({EOT})), tok.with_normalizer("NFC")]:
        view.encode("a<|endoftext|>")
        assert not _values_in_a_dict(view, "_tables")
    assert not _values_in_a_dict(ours, "_tokenizer")
    ours.__dict__       # (the check can fail)
    assert _values_in_a_dict(ours, "_tokenizer")


@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="how CPython 3.11 keeps an object's attributes")
def test_attributes_made_later_stay_in_the_object_after_many_encodings(tmp_path):
    # CPython 3.11 keeps an object's attributes in the object only under names its class has already seen by the
    # time a few dozen instances have been made; an attribute made when first asked for (a core's sorted ranks, an
    # Encoding's look-up dicts, its default view) then put every attribute of a later object in a dict, each read
    # ~15 ns slower. The test above failed when it ran after test_ranks.py's hypothesis test, which makes hundreds
    # of Encodings and asks none of them for those (a fresh interpreter here: which names a class has seen lasts)
    code = (
        "import gc\n"
        "import bpe_fast\n"
        "def in_a_dict(obj, name):\n"
        "    return any(type(r) is dict and name in r for r in gc.get_referents(obj))\n"
        "ranks = {bytes([i]): i for i in range(256)} | {b'ab': 256, b'abc': 257}\n"
        "def encoding():\n"
        "    return bpe_fast.Encoding('e', pat_str=r'[a-z]+', mergeable_ranks=ranks, special_tokens={'<|x|>': 258})\n"
        "made = [encoding() for _ in range(100)]\n"
        "enc = encoding()\n"
        "out = [enc.encode('abc ab'), enc.encode('abc<|x|>', allowed_special='all'), enc.special_tokens_set,\n"
        "       enc.encode_single_token(b'abc'), enc.decode_single_token_bytes(257), enc.decode_tokens_bytes([256]),\n"
        "       enc.token_byte_values()[-1], enc.decode([257, 258])]\n"
        "print(in_a_dict(enc, '_tokenizer'), in_a_dict(enc._core, '_tokenizer'), out)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)                    # (not the source tree's unbuilt bpe_fast/)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == ("False False [[257, 256], [257, 258], {'<|x|>'}, 257, b'abc', [b'ab'], b'\\xff', "
                                   "'abc<|x|>']")


def test_a_subclass_may_make_special_tokens_set_a_property():
    # Encoding's __init__ sets and drops the names of what it makes later (see the test above); a subclass's
    # property of one of those names is neither called with None nor refused ("can't set attribute")
    class Spelled(Encoding):
        @property
        def special_tokens_set(self):
            return {"<|x|>"}

    ranks = {bytes([i]): i for i in range(256)}
    enc = Spelled("e", pat_str=r"\S+", mergeable_ranks=ranks, special_tokens={"<|x|>": 256})
    assert enc.special_tokens_set == {"<|x|>"}
    assert enc.encode("a<|x|>", allowed_special="all") == [97, 256]


def test_all_as_any_str_object_and_other_strs():
    # "all" is kept as a set is (by identity, checked by its contents): an "all" made at run time too; another
    # str is tiktoken's error
    pair = encodings("cl100k_base")
    for allowed in ["all", "".join(["al", "l"]), "ALL", "none", ""]:
        for disallowed in ("all", (), [EOT], "".join(["al", "l"])):
            for text in ALLOWED_TEXTS:
                same(pair, lambda e: e.encode(text, allowed_special=allowed, disallowed_special=disallowed))


def _small_core(module, enc):
    """A core of the first 300 ranks (the end-of-text token after them), as code written for tiktoken puts one."""
    return module._tiktoken.CoreBPE(dict(list(enc._mergeable_ranks.items())[:300]), {EOT: 300}, enc._pat_str)


def test_a_core_put_in_place_during_a_call_is_used_by_the_next(monkeypatch):
    # another thread putting a core in place while a call is under way (simulated: at a step of the call): what
    # the call keeps for its allowed set, the defaults or a look-up table is not the old core's for later calls
    # (a review found a set's view and the defaults' tokenizer kept for good)
    import bpe_fast.encoding as encoding_module

    pair = fresh_gpt2_pair()
    ours = pair[0]
    allowed = {EOT}

    class Swapping(bpe_fast._tiktoken.CoreBPE):
        def tokenizer_for(self, allowed_special, checked=False):
            view = super().tokenizer_for(allowed_special, checked)
            ours._core_bpe = _small_core(bpe_fast, ours)
            return view

        def ranks(self):
            made = super().ranks()
            ours._core_bpe = _small_core(bpe_fast, ours)
            return made

    real_shared_start = encoding_module.shared_start

    def swapping_shared_start(tokens):
        ours._core_bpe = _small_core(bpe_fast, ours)
        return real_shared_start(tokens)

    text = "Hello world, ouri<|endoftext|> <|"
    calls = [lambda e: e.encode(text, allowed_special=allowed), lambda e: e.encode_to_numpy("Hello world"),
             lambda e: e.encode_single_token(b"ouri"), lambda e: e.decode_single_token_bytes(10300),
             lambda e: e.encode("Hello <|", allowed_special=allowed, disallowed_special=())]
    for racing in calls:
        pair = fresh_gpt2_pair()
        ours = pair[0]
        ours._core_bpe = Swapping(ours._mergeable_ranks, {EOT: 50256}, ours._pat_str)
        monkeypatch.setattr(encoding_module, "shared_start", swapping_shared_start)
        try:
            racing(ours)        # (the old core's result or the new one's: either)
        except KeyError:
            pass
        monkeypatch.setattr(encoding_module, "shared_start", real_shared_start)
        if type(ours._core_bpe) is Swapping:       # (a call that took none of the steps that swap)
            ours._core_bpe = _small_core(bpe_fast, ours)
        pair[1]._core_bpe = _small_core(tiktoken, pair[1])
        for call in calls:
            same(pair, call)


def test_a_set_changed_during_a_call_is_read_again_by_the_next():
    # another thread changing the allowed set while a call is under way (simulated: when the core makes its
    # tokenizer view): the set's contents are read once, so the next call sees the change (a review found the
    # new contents kept with the old contents' tokenizer)
    pair = fresh_gpt2_pair()
    allowed = {EOT}

    class Changing(bpe_fast._tiktoken.CoreBPE):
        armed = True

        def tokenizer_for(self, allowed_special, checked=False):
            view = super().tokenizer_for(allowed_special, checked)
            if Changing.armed:
                Changing.armed = False
                allowed.discard(EOT)
            return view

    pair[0]._core_bpe = Changing(pair[0]._mergeable_ranks, {EOT: 50256}, pair[0]._pat_str)
    assert pair[0].encode("a<|endoftext|>", allowed_special=allowed, disallowed_special=()) == [64, 50256]
    assert allowed == set()
    same(pair, lambda e: e.encode("a<|endoftext|>", allowed_special=allowed, disallowed_special=()))
    same(pair, lambda e: e.encode("a<|endoftext|>", allowed_special=allowed))


class _EqualToEndOfText:
    """Not a str, but hashed and compared as "<|endoftext|>"."""

    def __hash__(self):
        return hash(EOT)

    def __eq__(self, other):
        return other == EOT


def test_an_allowed_item_equal_to_a_str_is_still_not_a_str():
    # tiktoken's TypeError for an allowed set holding what is not a str, even when the set equals one seen before
    # (a review found the kept view's equality enough)
    pair = fresh_gpt2_pair()
    allowed = {EOT}
    same(pair, lambda e: e.encode("a<|endoftext|>", allowed_special=allowed))
    allowed.clear()
    allowed.add(_EqualToEndOfText())
    same(pair, lambda e: e.encode("a<|endoftext|>", allowed_special=allowed))
    same(pair, lambda e: e.encode("a<|endoftext|>", allowed_special=allowed, disallowed_special=()))


class _LengthRaises:
    """A sequence of `items` whose __len__ raises `error` (tiktoken's methods iterate it and never ask)."""

    def __init__(self, items, error):
        self.items, self.error = list(items), error

    def __getitem__(self, i):
        return self.items[i]

    def __iter__(self):
        return iter(self.items)

    def __len__(self):
        if self.error == "huge":
            return 10 ** 30
        raise self.error


@pytest.mark.parametrize("error", [ValueError("no length"), OverflowError("no length"), "huge"])
def test_sequences_whose_length_raises_are_read_by_iterating(error):
    # a review found decode_batch asking each list's length (for whether to start threads) and the batch methods
    # and decode_with_offsets making lists with list(), which asks too: tiktoken iterates them
    pair = encodings("cl100k_base")
    ids = _LengthRaises([15339, 1917], error)
    for threads in (1, 2, 8):
        same(pair, lambda e: e.decode_batch([ids, ids, [15339]], num_threads=threads))
        same(pair, lambda e: e.decode_bytes_batch([ids, [1917]], num_threads=threads))
        same(pair, lambda e: e.decode_batch(_LengthRaises([[15339], ids], error), num_threads=threads))
        same(pair, lambda e: e.encode_batch(_LengthRaises(["hello", "world"], error), num_threads=threads))
        same(pair, lambda e: e.encode_ordinary_batch(_LengthRaises(["hello", "world"], error), num_threads=threads))
    same(pair, lambda e: e.decode_with_offsets(ids))


def test_a_callers_error_handler_runs_once():
    # decode with a handler of the caller's: the long way from the start, so that the handler runs once (a review
    # found it run twice, the native decode's error taken for the ids' and the decode done again)
    import codecs

    pair = encodings("cl100k_base")
    calls = []

    def flaky(exc):
        calls.append(exc.start)
        if len(calls) % 2:
            raise ValueError("refused")
        return "?", exc.end

    codecs.register_error("bpe_fast_test_flaky", flaky)
    ff = pair[1].encode_single_token(b"\xff")
    for _ in range(3):
        same(pair, lambda e: e.decode([15339, ff, 1917, ff], "bpe_fast_test_flaky"))
    counts = []
    for enc in pair:        # as many calls of the handler in each library, the same state before each
        calls.clear()
        for _ in range(4):
            outcome(lambda: enc.decode([15339, ff, 1917, ff], "bpe_fast_test_flaky"))
        counts.append(len(calls))
    assert counts[0] == counts[1] == 7      # (refused at the first call, then at the second each time: 1+2+2+2)


def test_a_text_that_cannot_be_utf8_is_refused_before_a_bad_allowed_set():
    # tiktoken's encode_to_numpy and encode_with_unstable give the text to the core before the allowed set: a lone
    # surrogate's UnicodeEncodeError comes first (a review found the set's TypeError first here)
    pair = encodings("cl100k_base")
    for text in ["a\ud800b", "plain"]:
        for allowed in [{1}, {b"<|endoftext|>"}, {EOT}]:
            same(pair, lambda e: e.encode_to_numpy(text, allowed_special=allowed))
            same(pair, lambda e: e.encode_with_unstable(text, allowed_special=allowed)[0])
            same(pair, lambda e: e.encode(text, allowed_special=allowed))


def test_a_bad_keyword_is_refused_before_a_text_that_cannot_be_utf8():
    # tiktoken's own steps before its core (special_tokens_set - allowed_special, frozenset(disallowed_special) and
    # the search for its items) raise their TypeError before the core reads the text: an allowed_special that is no
    # set, or a disallowed item that is not a str, gave bpe_fast's encode_to_numpy and encode_with_unstable the
    # surrogate's UnicodeEncodeError instead
    pair = encodings("cl100k_base")
    for text in ["a\ud800b", "plain"]:
        for keywords in [dict(allowed_special=[EOT]), dict(allowed_special=(EOT,)), dict(allowed_special=EOT),
                         dict(allowed_special=None), dict(allowed_special={EOT: 1}), dict(disallowed_special={1}),
                         dict(allowed_special={1}, disallowed_special={1}), dict(allowed_special=[EOT],
                                                                                 disallowed_special=())]:
            for method in ["encode_to_numpy", "encode_with_unstable", "encode"]:
                got = same(pair, lambda e: getattr(e, method)(text, **keywords))
                assert got[0] == "raise"


def test_encode_to_numpy_gives_a_read_only_array_as_tiktoken():
    # tiktoken's array is a view of its core's buffer, read-only: code writing to it fails there (it could be
    # written here)
    pair = encodings("cl100k_base")
    for text in ["", "hello world", "a<|endoftext|>b" * 100]:
        arrays = [enc.encode_to_numpy(text, allowed_special="all") for enc in pair]
        assert [a.flags.writeable for a in arrays] == [False, False]
        assert arrays[0].dtype == arrays[1].dtype and arrays[0].tolist() == arrays[1].tolist()
        for array in arrays:
            with pytest.raises(ValueError, match="read-only"):
                array[...] = 0
        assert arrays[0].tolist() == arrays[1].tolist()


def test_decode_tokens_bytes_of_every_kind_of_ids(pair):
    # a list or tuple of ints is looked up natively (items_at); anything else, or an id without a token, goes
    # the long way, for tiktoken's exceptions
    ours, _ = pair
    ids = ours.encode("hello world, \u00e9t\u00e9 <|endoftext|> 123", allowed_special="all")
    unknown = next(i for i in range(ours.max_token_value + 2) if i not in ours.tokenizer.vocab)
    for make in [lambda: ids, lambda: tuple(ids), lambda: [], lambda: (), lambda: ids * 300, lambda: [*ids, True],
                 lambda: [*ids, np.int64(5)], lambda: [*ids, 1.0], lambda: [1.0, *ids], lambda: [*ids, -1],
                 lambda: [*ids, unknown], lambda: [*ids, 2 ** 40], lambda: [*ids, 2 ** 70], lambda: [*ids, None],
                 lambda: [ours.max_token_value], lambda: [ours.max_token_value + 1], lambda: iter(ids),
                 lambda: range(3), lambda: np.array(ids), lambda: [*ids, "5"]]:
        same(pair, lambda e: e.decode_tokens_bytes(make()))


def test_decode_tokens_bytes_follows_a_core_put_in_place():
    pair = fresh_gpt2_pair()
    same(pair, lambda e: e.decode_tokens_bytes([10300, 50256]))
    for enc, module in zip(pair, (bpe_fast, tiktoken)):
        enc._core_bpe = _small_core(module, enc)
    same(pair, lambda e: e.decode_tokens_bytes([10300, 300]))
    same(pair, lambda e: e.decode_tokens_bytes([299, 300]))


def test_a_subclass_or_an_instance_overriding_a_method_is_called_by_the_helpers_as_tiktoken_calls_it():
    # encode_batch, encode_ordinary_batch, decode_tokens_bytes and decode_with_offsets ran natively, skipping a
    # subclass's encode / encode_ordinary / decode_single_token_bytes (tiktoken calls them; helper-150); a
    # subclass calling super() got its own prefix twice (the first call went back through self)
    ranks, _ = gpt2_ranks()
    spec = dict(pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens={EOT: 50256})
    results = []
    for base in (tiktoken.Encoding, Encoding):
        class Sub(base):
            def encode(self, text, **kwargs):
                return [0] + super().encode(text, **kwargs)

            def encode_ordinary(self, text):
                return [1] + super().encode_ordinary(text)

            def decode_single_token_bytes(self, token):
                return b"S:" + super().decode_single_token_bytes(token)

        sub = Sub("sub", **spec)
        plain = base("plain", **spec)
        plain.encode_ordinary = lambda text, real=plain.encode_ordinary: [2] + real(text)     # on the instance
        results.append([sub.encode_batch(["hi", "a" + EOT], allowed_special="all"), sub.encode_ordinary_batch(["hi"]),
                        sub.decode_tokens_bytes([5303, 220]), sub.decode_with_offsets([5303, 220]),
                        sub.decode_single_token_bytes(5303), plain.encode_ordinary_batch(["hi"])])
    assert results[1] == results[0]
    assert results[1][:3] == [[[0, 5303], [0, 64, 50256]], [[1, 5303]], [b"S:hi", b"S: "]]


def test_a_subclass_encode_gets_the_batch_keywords_as_tiktoken_passes_them():
    # encode_batch of a subclass overriding encode handed its keywords on as given ("all", a list): tiktoken's
    # makes "all" the sets and the disallowed tokens a frozenset first, and so raises for a list or a number
    # even with no text (helper-174)
    ranks, _ = gpt2_ranks()
    spec = dict(pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens={EOT: 50256})
    results = []
    for base in (tiktoken.Encoding, Encoding):
        seen = []

        class Sub(base):
            def encode(self, text, **kwargs):
                # (the default allowed_special is tiktoken's set() and our empty frozenset: both sets)
                seen.append({k: (isinstance(v, frozenset if k == "disallowed_special" else (set, frozenset)),
                                 sorted(v)) for k, v in kwargs.items()})
                return super().encode(text, **kwargs)

        sub = Sub("sub", **spec)
        got = [outcome(lambda: sub.encode_batch(["hi"], **keywords))
               for keywords in [{}, {"allowed_special": "all"}, {"disallowed_special": [EOT]},
                                {"allowed_special": {EOT}, "disallowed_special": "all"}]]
        got += [outcome(lambda: sub.encode_batch([], **keywords))[:2]
                for keywords in [{"allowed_special": [EOT]}, {"disallowed_special": 5}]]
        results.append((got, seen))
    assert results[1] == results[0]
    assert results[0][0][-2:] == [("raise", TypeError)] * 2 and results[0][1][1] == {
        "allowed_special": (True, [EOT]), "disallowed_special": (True, [])}


def test_disallowed_tokens_of_a_str_subclass_in_a_batch(pair):
    # encode_batch searches the texts natively for disallowed tokens, through a helper that took an exact str
    # only: a str subclass there was "TypeError: Argument 'token' has incorrect type" (helper-174)
    class Token(str):
        pass

    for texts in (["hi"], ["hello there"], [""], ["a", "b hello"]):
        for keywords in ({}, {"allowed_special": "all"}, {"allowed_special": {EOT}}):
            got = same(pair, lambda e: e.encode_batch(texts, disallowed_special={Token("hello")}, **keywords))
            assert got[0] == "ok" or got[:2] == ("raise", ValueError)
