"""Tokenizers that normalize text to NFC, as HF tokenizers does for Qwen2/2.5/3's tokenizer.json
(``"normalizer": {"type": "NFC"}``): every encoding path against HF's ids on text whose normal form differs, the
cut rule of bpe_fast.normalize against unicodedata, and what is refused."""
from __future__ import annotations

import json
import pickle
import random
import unicodedata

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bpe_fast import Tokenizer, encode_file, train_bpe
from bpe_fast.formats import FormatError
from bpe_fast.normalize import stable_cut

tokenizers = pytest.importorskip("tokenizers", reason="HF tokenizers is not installed")

SPECIALS = ["<|endoftext|>", "<|im_end|>", "<a>"]
# Characters whose NFC is another (decomposed accents, singletons, Hangul jamo, marks to reorder, Tibetan vowels that
# decompose into non-starters, a musical symbol excluded from composition), the ones they become, and the
# characters around them that could be joined with them: ">" + U+0338 composes to U+226F, so a special token
# ending in ">" followed by U+0338 is where normalizing the whole text would differ from HF.
PIECES = ["a", "e", "\u00e9", "e\u0301", "\u0301", "\u0308", "\u0323", " ", "\n", "K", "\u212a", "\u00c5", "\u212b",
          "A\u030a", "\u1100", "\u1161", "\u11a8", "\uac00", "\u3042", "\u304b", "\u3099", "\u0f71", "\u0f72", "\u0f73",
          "\u1e0a", "D\u0307\u0323", "D\u0323\u0307", ">", "\u0338", "1", "!", "\U0001d15e", "\U0001d157\U0001d165",
          "\u0928\u093c", "\u0929", *SPECIALS]


def _corpus(n, seed):
    rng = random.Random(seed)
    words = ["caf" + p for p in ("\u00e9", "e\u0301")] + ["na\u00efve", "nai\u0308ve", "\uac00\ub098", "\u1100\u1161",
                                                          "\u304b\u3099", "\u304c", "A\u030angstr\u00f6m", "\u212b",
                                                          "the", "cat", "12", "!!"]
    return " ".join(rng.choice(words) for _ in range(n))


@pytest.fixture(scope="module")
def qwen_like(tmp_path_factory):
    """(bpe_fast's from_hf, HF's) of a Qwen-like tokenizer.json: Qwen2's pattern, NFC, added tokens with
    normalized false, its merges trained on text that has both forms of its accented words."""
    folder = tmp_path_factory.mktemp("qwen")
    corpus = folder / "corpus.txt"
    corpus.write_text(_corpus(20_000, 1), "utf-8")
    vocab, merges = train_bpe(corpus, 300, SPECIALS, num_processes=1, pattern="qwen2")
    path = folder / "tokenizer.json"
    Tokenizer(vocab, merges, SPECIALS, pattern="qwen2").with_normalizer("NFC").export_hf(path)
    doc = json.loads(path.read_text("utf-8"))
    assert doc["normalizer"] == {"type": "NFC"}
    assert all(not entry["normalized"] for entry in doc["added_tokens"])
    return Tokenizer.from_hf(path), tokenizers.Tokenizer.from_file(str(path))


def hf_ids(hf, text):
    return hf.encode(text, add_special_tokens=False).ids


texts = st.lists(st.sampled_from(PIECES), max_size=24).map("".join)


def test_the_fixture_tells_normalizing_apart(qwen_like):
    # the tokenizer has tokens of the composed forms: without the normalizer, the ids would differ
    ours, hf = qwen_like
    assert ours.normalizer == "NFC"
    text = "cafe\u0301 nai\u0308ve \u1100\u1161"
    assert ours.encode(text) == hf_ids(hf, text)
    assert ours.with_normalizer(None).encode(text) != hf_ids(hf, text)
    # ">" + U+0338 after a special token: HF finds the token first, and U+0338 stays apart
    assert ours.encode("<a>\u0338") == hf_ids(hf, "<a>\u0338") == [ours.special_tokens["<a>"]] + ours.encode("\u0338")


@settings(max_examples=300, deadline=None)
@given(texts)
def test_encode_as_hf(qwen_like, text):
    ours, hf = qwen_like
    expected = hf_ids(hf, text)
    assert ours.encode(text) == expected
    assert ours.encode_to_numpy(text).tolist() == expected
    assert ours.encode_utf8_to_numpy(text.encode("utf-8")).tolist() == expected


@settings(max_examples=150, deadline=None)
@given(st.lists(texts, max_size=6), st.randoms(use_true_random=False))
def test_batch_documents_and_streams_as_hf(qwen_like, batch, rng):
    ours, hf = qwen_like
    expected = [hf_ids(hf, text) for text in batch]
    assert ours.encode_batch(batch, num_threads=2) == expected
    data = "".join(batch).encode("utf-8")
    bounds = np.cumsum([0] + [len(text.encode("utf-8")) for text in batch])
    assert ours.encode_documents_utf8(data, bounds).tolist() == [i for ids in expected for i in ids]
    whole = "".join(batch)
    cuts = sorted(rng.sample(range(len(whole) + 1), min(len(whole) + 1, rng.randint(0, 8))))
    chunks = [whole[a:b] for a, b in zip([0, *cuts], [*cuts, len(whole)])]
    assert list(ours.encode_iterable(chunks)) == hf_ids(hf, whole)


def test_stream_of_one_character_at_a_time(qwen_like):
    ours, hf = qwen_like
    text = "".join(random.Random(5).choice(PIECES) for _ in range(3000))
    assert list(ours.encode_iterable(list(text))) == hf_ids(hf, text)


def test_stream_without_a_latin_character_for_long(qwen_like):
    # no character below U+0300 to cut before: the full table of stable characters decides
    ours, hf = qwen_like
    text = "\u3042\u304b\u3099\u0cbf\u0cd5\u1100\u1161\u11a8" * 1000 + "<a>" + "\u304b\u3099\u0dd9\u0dcf" * 1000
    assert list(ours.encode_iterable(text[k:k + 700] for k in range(0, len(text), 700))) == hf_ids(hf, text)


# ---- encode_iterable through long stretches NFC cannot cut ----------------------------------------------------
# encode_iterable holds the text it cannot normalize yet and looks for a special token or a stable cut in each string
# as it arrives: these compare it with encoding the whole text at once on streams cut anywhere, inside runs of
# thousands of characters none of which may be cut before (combining marks, the second characters of compositions),
# around special tokens and surrogate pairs spelled apart.

# characters a cut before may change the NFC of (combining marks, Hangul vowel and final jamo, the Kannada, Sinhala,
# Oriya, Myanmar and Tibetan vowel signs that compose or decompose, the kana voiced-sound mark, a mark HF's tables
# lack, a musical-symbol stem), and what they follow: the characters they compose with, special tokens, surrogates
UNCUT = ["\u0301", "\u0323", "\u0338", "\u0308", "\u1161", "\u11a8", "\u3099", "\u0cd5", "\u0cc2", "\u0dcf", "\u0dca",
         "\u0b3e", "\u102e", "\u0f71", "\u0f72", "\u0c3c", "\U0001d165"]
LEADS = ["e", "a", ">", "D", "\u00e9", "\u1100", "\uac00", "\u304b", "\u0cbf", "\u0cc6", "\u0dd9", "\u0b47", "\u1025",
         "\U0001d157", " ", "\n", "x\ud834", "\udd5e", "\ud800", "\udfff", *SPECIALS]
runs = st.tuples(st.lists(st.sampled_from(UNCUT), min_size=1, max_size=4).map("".join),
                 st.integers(1, 1500)).map(lambda run: run[0] * run[1])
stretches = st.lists(st.one_of(st.sampled_from(LEADS), st.sampled_from(PIECES), runs), max_size=10).map("".join)
chunkings = st.lists(st.one_of(st.integers(0, 4), st.integers(0, 200), st.integers(0, 5000)), max_size=40)


def _chunks(text, lengths):
    """text cut into strings of the given lengths (the rest as the last string)."""
    out, at = [], 0
    for n in lengths:
        out.append(text[at:at + n])
        at += n
    return [*out, text[at:]]


@pytest.fixture(scope="module")
def bytes_nfc():
    """A tokenizer with no special token (nothing to wait for but the cut) whose ids are the UTF-8 of the text."""
    return Tokenizer({i: bytes([i]) for i in range(256)}, [], pattern="qwen2").with_normalizer("NFC")


@settings(max_examples=300, deadline=None)
@given(stretches, chunkings)
def test_stream_through_long_runs_is_the_whole_text(qwen_like, bytes_nfc, text, lengths):
    chunks = _chunks(text, lengths)
    for tok in (qwen_like[0], bytes_nfc):
        assert list(tok.encode_iterable(chunks)) == tok.encode(text), [len(c) for c in chunks]


def test_stream_cut_inside_runs_of_thousands_of_marks(qwen_like, bytes_nfc):
    # runs longer than stable_cut's look for a character below U+0300 and than the pieces the stream joins, cut at
    # every few characters and in large strings; U+0323 after U+0301s moves before them and composes with the e,
    # U+0338 composes with the >, the Hangul vowels only the first with the consonant before
    ours, hf = qwen_like
    text = ("cafe" + "\u0301" * 9000 + "\u0323 x>" + "\u0338" * 5000 + "<|endoftext|>" + "\u0301" * 5000 + "\u1100"
            + "\u1161" * 7000 + "<a>" + "\u0cc6" + "\u0cd5\u0cc2" * 3000 + "\u304b" + "\u3099" * 4500 + "e")
    rng = random.Random(3)
    lengths = rng.choices([1, 2, 7, 12, 13, 14, 100, 250, 4095, 4097], [5, 5, 5, 5, 5, 5, 20, 20, 1, 1], k=len(text))
    chunks = _chunks(text, lengths)
    assert sum(1 for c in chunks if c) > 100
    expected = hf_ids(hf, text)
    assert ours.encode(text) == expected
    assert list(ours.encode_iterable(chunks)) == expected
    assert list(ours.encode_iterable(list(text))) == expected
    assert list(bytes_nfc.encode_iterable(chunks)) == bytes_nfc.encode(text) == list(
        unicodedata.normalize("NFC", text).encode("utf-8"))


def test_stream_lets_text_go_at_a_cut_before_a_string_s_first_character(bytes_nfc):
    # each string starts with the only character a cut may come before: the text before it is final there, so the
    # ids of a stream of such strings come out as it goes (held to the end, they would take memory without bound)
    taken = []

    def strings():
        for k in range(1000):
            taken.append(k)
            yield "e" + "\u0301" * 99

    ids = bytes_nfc.encode_iterable(strings())
    first = next(ids)
    assert len(taken) <= 3
    assert [first, *ids] == bytes_nfc.encode(("e" + "\u0301" * 99) * 1000)


def test_stream_searches_only_what_arrived(qwen_like, monkeypatch):
    # the cost of a string does not grow with the text held: the stable cut is looked for in the string and the
    # characters a special token could start in before it, not in all that is held (which made a megabyte of
    # combining marks in strings of 100 characters quadratic)
    import bpe_fast.normalize as module      # (the tokenizer imports last_stable from it where it cuts)

    ours, _ = qwen_like
    looked = []
    real = module.last_stable
    monkeypatch.setattr(module, "last_stable", lambda text, *args: looked.append(len(text)) or real(text, *args))
    text = "e" + "\u0301" * 100_000
    reach = max(map(len, SPECIALS))
    assert list(ours.encode_iterable(text[k:k + 100] for k in range(0, len(text), 100))) == ours.encode(text)
    assert len(looked) > 900 and max(looked) < 100 + reach


def test_characters_hf_tables_lack_stay_as_hf_leaves_them(qwen_like):
    # HF's NFC has Unicode 9.0's tables: to it U+0C3C (Telugu nukta, 14.0, class 7), U+1DF6 (10.0, class 232) and
    # U+11930 (13.0, the second of U+11938) are starters that compose with nothing; Python 3.11's reorder or
    # compose them
    ours, hf = qwen_like
    for text in ["\u0301\u0c3c", "a\u1df6\u0301", "\U00011935\U00011930", "e\u0301<a>\u0323\U00016ff0\u0301x",
                 "\u0915\u093c\u0301\u0c3c\u0323 cafe\u0301"]:
        expected = hf_ids(hf, text)
        assert ours.encode(text) == expected, ascii(text)
        assert ours.encode_batch([text, "x"])[0] == expected
        assert list(ours.encode_iterable(list(text))) == expected
        assert ours.normalize(text) == "".join(
            hf.normalizer.normalize_str(piece) if piece not in SPECIALS else piece
            for piece in text.replace("<a>", "\0<a>\0").split("\0"))


def test_normal_is_hf_nfc_around_every_mark_and_decomposition():
    from bpe_fast.normalize import normal

    hf_nfc = tokenizers.normalizers.NFC().normalize_str
    chars = [chr(c) for c in range(0x300, 0x30000) if not 0xD800 <= c < 0xE000
             and (unicodedata.combining(chr(c)) or unicodedata.decomposition(chr(c))[:1] not in ("", "<"))]
    for ch in chars:
        for text in ("\u0301" + ch + "\u0323", "a" + ch + "\u0301", ch + "\u0301", unicodedata.normalize("NFD", ch)):
            assert normal("NFC", text) == hf_nfc(text), ascii(text)


def test_allowed_and_disallowed_special_tokens(qwen_like):
    ours, _ = qwen_like
    text = "cafe\u0301<|im_end|>\u0338"
    plain = ours.with_normalizer(None)
    # the special token left as text is normalized with the text around it, as HF would without the added token
    assert ours.encode(text, allowed_special=set()) == plain.encode(unicodedata.normalize("NFC", text),
                                                                     allowed_special=set())
    with pytest.raises(ValueError, match="disallowed special token '<|im_end|>'"):
        ours.encode(text, allowed_special=set(), disallowed_special="all")
    with pytest.raises(ValueError, match="disallowed special token '<|im_end|>'"):
        ours.encode_batch(["x", text], allowed_special=set(), disallowed_special="all")
    assert ours.encode_ordinary(text) == ours.encode(text, allowed_special=set())


def test_lone_surrogates_are_replaced_then_normalized(qwen_like):
    ours, _ = qwen_like
    # a surrogate pair spelled apart becomes U+1D15E, which NFC decomposes
    text = "a\ud834\udd5e\ud800"
    expected = ours.encode("a\U0001d157\U0001d165\ufffd")
    assert ours.encode(text) == expected
    assert ours.encode_batch([text]) == [expected]
    assert list(ours.encode_iterable(["a\ud834", "\udd5e\ud800"])) == expected


def test_encode_file_normalizes(qwen_like, tmp_path):
    ours, hf = qwen_like
    text = "".join(random.Random(9).choice(PIECES) for _ in range(60_000))
    path = tmp_path / "corpus.txt"
    path.write_text(text, "utf-8")
    out = tmp_path / "ids.npy"
    encode_file(ours, path, out, num_processes=2, chunk_bytes=20_000)
    assert np.load(out).tolist() == hf_ids(hf, text)


def test_save_load_pickle_and_views_keep_it(qwen_like, tmp_path):
    ours, _ = qwen_like
    text = "cafe\u0301<|im_end|>nai\u0308ve"
    ours.save(tmp_path / "tok")
    assert json.loads((tmp_path / "tok" / "bpe_fast.json").read_text("utf-8"))["normalizer"] == "NFC"
    for other in (Tokenizer.load(tmp_path / "tok"), pickle.loads(pickle.dumps(ours))):
        assert other.normalizer == "NFC"
        assert other.encode(text) == ours.encode(text)
    plain = ours.with_normalizer(None)
    assert plain.normalizer is None and plain.with_normalizer("NFC").encode(text) == ours.encode(text)
    plain.save(tmp_path / "plain")
    assert "normalizer" not in json.loads((tmp_path / "plain" / "bpe_fast.json").read_text("utf-8"))
    assert Tokenizer.load(tmp_path / "plain").normalizer is None
    ours.encode("\u00e9")        # (the tokenizer without normalizer made: a view must not take it as its own)
    view = ours.restricted_to(frozenset({"<a>"}))
    assert view.normalizer == "NFC"
    for text in ("<|im_end|>e\u0301", "<|im_end|>\u00e9"):
        assert view.encode(text) == ours.encode_ordinary(text) == ours.encode(text, allowed_special={"<a>"})
        assert view.encode(text) != ours.encode(text)


def test_offsets_of_text_in_normal_form_only(qwen_like):
    ours, _ = qwen_like
    ids, offsets = ours.encode_with_offsets("caf\u00e9<a>x")
    assert ids.tolist() == ours.encode("caf\u00e9<a>x")
    with pytest.raises(ValueError, match=r"the text is not in NFC .*pass tokenizer.normalize\(text\)"):
        ours.encode_with_offsets("cafe\u0301")
    ids, _ = ours.encode_with_offsets(ours.normalize("cafe\u0301<a>"))
    assert ids.tolist() == ours.encode("cafe\u0301<a>")
    # a special token then a mark that would compose with its last character: normalize leaves it (the pieces
    # between special tokens are normalized), and its output was refused as not normal (helper-108)
    text = ours.normalize("x<a>\u0338e\u0301")
    assert text == "x<a>\u0338\u00e9"
    ids, offsets = ours.encode_with_offsets(text)
    assert ids.tolist() == ours.encode(text) and offsets.tolist()[:2] == [0, 1]
    with pytest.raises(ValueError, match=r"the text is not in NFC"):     # <a> as text: its ">" composes
        ours.encode_with_offsets(text, allowed_special=set(), disallowed_special=())


def test_offsets_of_normal_text_with_a_lone_surrogate(qwen_like):
    # encode replaces a lone surrogate with U+FFFD with or without a normalizer: the text was refused as not in NFC
    # (its normalize() holds U+FFFD), where the tokenizer without one gives the offsets
    ours, hf = qwen_like
    plain = ours.with_normalizer(None)
    for text in ("a\ud800b", "caf\u00e9 \udcff<a>x\ud800", "\ud800\u0301"):
        ids, offsets = ours.encode_with_offsets(text)
        assert ids.tolist() == ours.encode(text) == hf_ids(hf, "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c
                                                                         for c in text))
        want_ids, want_offsets = plain.encode_with_offsets(text)
        assert (ids.tolist(), offsets.tolist()) == (want_ids.tolist(), want_offsets.tolist())
    with pytest.raises(ValueError, match=r"the text is not in NFC"):     # not normal apart from it: still refused
        ours.encode_with_offsets("cafe\u0301\ud800")


def test_normalize_and_show(qwen_like):
    ours, _ = qwen_like
    text = "cafe\u0301<a>\u0338 \ud834\udd5e"
    shown = "caf\u00e9<a>\u0338 \U0001d157\U0001d165"
    assert ours.normalize(text) == shown
    assert ours.with_normalizer(None).normalize(text) == text
    assert ours.normalize("abc") == "abc"
    pieces, ids = ours.show(text)
    assert ids == ours.encode(text)
    assert (pieces, ids) == ours.with_normalizer(None).show(shown) == ours.show(shown)
    assert pieces[:4] == ["ca", "f", "\u00e9", "<a>"]
    assert "normalizer=NFC" in repr(ours) and "normalizer" not in repr(ours.with_normalizer(None))


def test_what_cannot_normalize_refuses(qwen_like, tmp_path):
    ours, _ = qwen_like
    pytest.importorskip("tiktoken")
    with pytest.raises(ValueError, match="normalizes text to NFC before encoding it, and tiktoken does not"):
        ours.to_tiktoken()
    with pytest.raises(ValueError, match="normalizes text to NFC"):
        ours.export_tiktoken(tmp_path / "x.tiktoken")
    assert not (tmp_path / "x.tiktoken").exists()
    corpus = tmp_path / "c.txt"
    corpus.write_text("cafe\u0301 " * 100, "utf-8")
    with pytest.raises(ValueError, match="initial: the tokenizer normalizes text to NFC"):
        train_bpe(corpus, ours.vocab_size + 10, num_processes=1, initial=ours)
    with pytest.raises(ValueError, match=r"normalizer must be None or one of \('NFC',\), got 'NFKC'"):
        ours.with_normalizer("NFKC")


def test_a_bad_normalizer_in_bpe_fast_json_names_file_and_line(qwen_like, tmp_path):
    ours, _ = qwen_like
    ours.save(tmp_path)
    config = tmp_path / "bpe_fast.json"
    text = config.read_text("utf-8")
    config.write_text(text.replace('"normalizer": "NFC"', '"normalizer": "NFD"'), "utf-8")
    line = next(k for k, row in enumerate(config.read_text("utf-8").split("\n"), 1) if '"normalizer"' in row)
    with pytest.raises(FormatError, match=rf"^{config}:{line}: \"normalizer\": normalizer must be None or one of"):
        Tokenizer.load(tmp_path)


# Characters above U+0300 only, so that stable_cut asks its full table: among them composition's second characters
# of class 0 (Kannada, Sinhala, Oriya, Myanmar, Hangul jamo) and the first characters they follow.
NON_LATIN = ["\u0cbf", "\u0cd5", "\u0cc6", "\u0cc2", "\u0cca", "\u0dd9", "\u0dcf", "\u0dca", "\u0ddf", "\u0b47", "\u0b3e",
             "\u0b57", "\u1025", "\u102e", "\u1100", "\u1161", "\u11a8", "\uac00", "\u3042", "\u304b", "\u3099", "\u0f73",
             "\u0f71", "\u0301", "\u0905"]
alphabets = st.sampled_from([PIECES[:-len(SPECIALS)], NON_LATIN])


@settings(max_examples=800, deadline=None)
@given(alphabets.flatmap(lambda alphabet: st.tuples(st.lists(st.sampled_from(alphabet), max_size=12).map("".join),
                                                    st.lists(st.sampled_from(alphabet), max_size=6).map("".join))),
       st.integers(0, 20))
def test_a_stable_cut_keeps_the_normal_form(texts, start):
    text, after = texts
    start = min(start, len(text))
    k = stable_cut(text, start)
    assert start <= k <= max(start, len(text) - 1)
    nfc = unicodedata.normalize
    assert nfc("NFC", text[start:k]) + nfc("NFC", text[k:] + after) == nfc("NFC", text[start:] + after)


@settings(max_examples=800, deadline=None)
@given(alphabets.flatmap(lambda alphabet: st.tuples(st.lists(st.sampled_from(alphabet), max_size=12).map("".join),
                                                    st.lists(st.sampled_from(alphabet), max_size=6).map("".join))),
       st.integers(0, 20), st.integers(0, 20), st.integers(0, 20))
def test_a_stable_cut_within_bounds_keeps_the_normal_form(texts, start, end, floor):
    """With `end`, the cut is one of text[:end], whatever follows it; with `floor`, it is at or after floor
    (or start), and equal to the cut of the text from floor on when there is one there."""
    text, after = texts
    end = min(end, len(text))
    start = min(start, end)
    k = stable_cut(text, start, end, floor)
    assert start <= k <= max(start, end - 1)
    assert k == start or k >= floor
    nfc = unicodedata.normalize
    rest = text[end:] + after
    assert nfc("NFC", text[start:k]) + nfc("NFC", text[k:end] + rest) == nfc("NFC", text[start:end] + rest)
    assert k in (start, stable_cut(text[:end], max(start, floor)))
    if floor <= start:
        assert k == stable_cut(text[:end], start)



def _last_stable_loop(text, low, end, scan):
    """bpe_fast.normalize.last_stable as it was written before its search ran in C: the oracle."""
    from bpe_fast.normalize import _unstable_characters

    n = len(text) if end is None else end
    for k in range(n - 1, max(low, n - scan) - 1, -1):
        if text[k] < "\u0300":
            return k
    unstable = _unstable_characters()
    for k in range(n - 1, low - 1, -1):
        if text[k] not in unstable:
            return k
    return -1


# ASCII, combining marks (U+0300-U+036F), Hangul syllables and jamo (the vowels and finals compose with what is
# before them), the characters HF's tables lack, marks above U+FFFF (U+1D165, U+1E94A: the table after the regex),
# stable characters above U+0300 (kana, CJK, an emoji), a lone surrogate
LAST_STABLE_ALPHABET = st.one_of(
    st.characters(min_codepoint=0x20, max_codepoint=0x7E), st.characters(min_codepoint=0x300, max_codepoint=0x36F),
    st.sampled_from(["\uac00", "\uac01", "\u1100", "\u1161", "\u1175", "\u11a8", "\u11c2", "\u3042", "\u3099",
                     "\u4e00", "\U0001d165", "\U0001e94a", "\U0001f600", "\ud800", "\U000105c0"]),
    st.sampled_from(sorted(__import__("bpe_fast.normalize", fromlist=["x"])._UNKNOWN_TO_HF_SET)))


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.tuples(LAST_STABLE_ALPHABET, st.integers(1, 40)), max_size=12).map(
           lambda runs: "".join(c * k for c, k in runs)),
       st.integers(0, 500), st.integers(0, 500), st.booleans(), st.sampled_from([1, 2, 3, 7, 4096]))
def test_last_stable_is_the_plain_loop(text, low, end, no_end, scan):
    """last_stable (a reversed copy searched by `re`, in windows growing from _SCAN characters; a table after a
    mark above U+FFFF) gives what the plain loop gives, runs of each character longer than the windows."""
    from unittest import mock

    import bpe_fast.normalize as module

    end = None if no_end else min(end, len(text))
    low = min(low, len(text) if end is None else end)
    with mock.patch.object(module, "_SCAN", scan):
        assert module.last_stable(text, low, end) == _last_stable_loop(text, low, end, scan)


@pytest.mark.parametrize("before", ["a", "\u3042", "\uac00", "\U0001f600", ""])
@pytest.mark.parametrize("marks", ["\u0301", "\U0001e94a", "\u1161\u0301\U0001d165"])
def test_last_stable_past_long_runs(before, marks):
    # runs longer than the first window (_SCAN) and the ones after it: the stable character before them is found
    # (or none), from any low
    from bpe_fast.normalize import _SCAN, last_stable

    for length in (_SCAN - 1, _SCAN, _SCAN + 1, 5 * _SCAN + 3, 30 * _SCAN):
        text = "x" + before + marks * (length // len(marks))
        for low in (0, 1, 2, len(text) - 1, len(text)):
            assert last_stable(text, low) == _last_stable_loop(text, low, None, _SCAN), (length, low)
        assert last_stable(text, 0, len(text) - 7) == _last_stable_loop(text, 0, len(text) - 7, _SCAN)

@pytest.mark.parametrize("low, end", [(0, 3), (0, 99), (-1, None), (-2, -1), (0, -1)])
def test_last_stable_refuses_a_range_outside_the_text(low, end):
    # an end past the text gave an index past it (last_stable("ab", 0, 5) was 4), a negative low read from the end
    from bpe_fast.normalize import last_stable, stable_cut

    for search in (last_stable, stable_cut):
        with pytest.raises(ValueError, match=r"0 <= low and 0 <= end <= len\(text\) = 2"):
            search("ab", low, end)
    # low at or past end: nothing looked at (-1; stable_cut's start)
    assert last_stable("ab", 0, 2) == 1 and last_stable("ab", 2, 2) == -1 and last_stable("ab", 2, 1) == -1
    assert stable_cut("ab", 1, 1) == 1 and stable_cut("ab", 0, 2, floor=5) == 0


# ---- GPT-NeoX / Pythia: added tokens with normalized true, under NFC ------------------------------------------

RUNS = ["  ", "   ", "    ", "\t\t", "{{", "#!"]       # added tokens of characters NFC leaves alone wherever they are
NEOX_PIECES = [*PIECES, " ", "  ", "\t", "{", "#", "!", "Q", ";", "\u037e", *RUNS]


@pytest.fixture(scope="module")
def neox_like(tmp_path_factory):
    """(bpe_fast's from_hf, HF's, the document, its folder) of a GPT-NeoX-like tokenizer.json: GPT-2's pattern,
    NFC, <|endoftext|> with normalized false, and after the model's vocab runs of spaces (and other tokens of such
    characters) as added tokens with normalized true, not special, some of them the model's tokens too (as "  "
    is the merge of "Ġ Ġ" in GPT-NeoX's)."""
    folder = tmp_path_factory.mktemp("neox")
    corpus = folder / "corpus.txt"
    rng = random.Random(2)
    corpus.write_text("".join(word + rng.choice([" ", " ", "  ", "    ", "\t\t", "{{"])
                              for word in _corpus(20_000, 2).split(" ")), "utf-8")
    vocab, merges = train_bpe(corpus, 300, ["<|endoftext|>"], num_processes=1)
    path = folder / "tokenizer.json"
    Tokenizer(vocab, merges, ["<|endoftext|>"]).with_normalizer("NFC").export_hf(path)
    doc = json.loads(path.read_text("utf-8"))
    after = max(doc["model"]["vocab"].values()) + 1
    fresh = iter(range(after, after + len(RUNS)))      # HF's ids: a vocab key's ("{{" is its own key), else the next
    doc["added_tokens"] += [{"id": doc["model"]["vocab"][run] if run in doc["model"]["vocab"] else next(fresh),
                             "content": run, "single_word": False, "lstrip": False, "rstrip": False,
                             "normalized": True, "special": False} for run in RUNS]
    path.write_text(json.dumps(doc), "utf-8")
    ours = Tokenizer.from_hf(path)
    assert {b"  ", b"   "} <= {token for i, token in ours.vocab.items() if i < after}       # the model's too
    return ours, tokenizers.Tokenizer.from_file(str(path)), doc, folder


def test_inert_characters_are_what_unicodedata_says():
    # derived here from the decompositions of every code point: an ASCII character none maps to (alone or in a
    # sequence) that is a starter and decomposes to nothing itself; the letters left out (Q and q qualify today)
    from bpe_fast.hf import NFC_INERT
    in_some = set()
    for cp in range(0x110000):
        mapping = unicodedata.decomposition(chr(cp))
        if mapping and not mapping.startswith("<"):
            in_some.update(chr(int(x, 16)) for x in mapping.split())
    derived = {chr(c) for c in range(128) if chr(c) not in in_some and unicodedata.combining(chr(c)) == 0
               and not unicodedata.decomposition(chr(c)) and not chr(c).isalpha()}
    assert derived == NFC_INERT
    assert {" ", "\t", "\n", "{", "#", "!"} <= NFC_INERT and not {";", ">", "`", "Q", "e"} & NFC_INERT


def test_neox_like_added_tokens_are_found_as_hf_finds_them(neox_like):
    ours, hf, _, _ = neox_like
    assert ours.normalizer == "NFC" and set(RUNS) <= set(ours.special_tokens)
    text = "a    b\t\t\u0301 {{e\u0301}} #!x" + " " * 9 + "\u0301"
    assert ours.encode(text) == hf_ids(hf, text)
    assert ours.special_tokens["    "] in hf_ids(hf, text)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(NEOX_PIECES), max_size=24).map("".join))
def test_neox_like_encode_as_hf(neox_like, text):
    ours, hf, _, _ = neox_like
    expected = hf_ids(hf, text)
    assert ours.encode(text) == expected
    assert ours.encode_batch([text, text[:3]])[0] == expected
    assert list(ours.encode_iterable([text[:5], text[5:]])) == expected


@pytest.mark.parametrize("content", ["  e", "QQ", " ;", "<|x|>", "`~", "\u00a0\u00a0", "\u3000"])
def test_a_normalized_token_nfc_may_touch_is_refused(neox_like, content, tmp_path):
    _, _, doc, _ = neox_like
    added = dict(doc["added_tokens"][-1], content=content, normalized=True, special=False,
                 id=max(e["id"] for e in doc["added_tokens"]) + 1)     # HF's id for it: after the others
    path = tmp_path / "tokenizer.json"
    with_it = dict(doc, added_tokens=[*doc["added_tokens"], added])
    path.write_text(json.dumps(with_it), "utf-8")
    with pytest.raises(FormatError, match=r"has normalized: true, and the file normalizes text to NFC"):
        Tokenizer.from_hf(path)
    path.write_text(json.dumps(dict(with_it, normalizer=None)), "utf-8")       # refused for the normalizer only
    assert Tokenizer.from_hf(path).special_tokens[content] == added["id"]
