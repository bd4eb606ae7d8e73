"""Looking at a tokenizer (issue 16): Tokenizer.show and `bpe-fast show`, compression_curve against tokenizers
trained to (or cut at) each size, `bpe-fast report` (a self-contained page), and what training records."""
import html.parser
import json
import os
import pickle
import random
import shutil
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bpe_fast import GPT2_PATTERN, GPT4_PATTERN, O200K_PATTERN, Tokenizer, compression_curve, count_pretokens
from bpe_fast import PretokenCounts, train_bpe, train_from_counts
from bpe_fast._inspect import count_distinct, propagate
from bpe_fast.cli import main
from bpe_fast.curve import SCRIPTS, merge_trees, script_of
from bpe_fast.formats import FormatError
from bpe_fast.html_report import write_report
from bpe_fast.train import corpus_statistics
from bpe_fast.inputs import CorpusDecodeError
from bpe_fast.token_view import TokenView, display_token, render_ansi, render_html, render_plain, split_positions

from corpora import EOT, FIXTURES, make_corpus, write
from train_oracle import _apply_merge, _count_pairs, oracle_count_pretokens


def byte_vocab():
    return {i: bytes([i]) for i in range(256)}


def abc_tokenizer(specials=()):
    # ranks: 0 = "ab" (a, b), 1 = "abc" (ab, c)
    return Tokenizer(byte_vocab() | {256: b"ab", 257: b"abc"}, [(b"a", b"b"), (b"ab", b"c")], list(specials))


# ------------------------------------------------------------------------------------------ the curve

def test_curve_worked_example():
    # "abcab" encodes as [abc, ab]: 2 tokens with both merges; without "abc" the "abc" splits into [ab, c]
    # (3 tokens); without "ab" too, everything is bytes (5 tokens)
    curve = compression_curve(abc_tokenizer(), "abcab")
    assert curve.vocab_sizes.tolist() == [256, 257, 258]
    assert curve.tokens.tolist() == [5, 3, 2]
    assert curve.bytes == 5 and curve.words == 1
    assert curve.bytes_per_token.tolist() == [1.0, 5 / 3, 2.5]
    assert curve.tokens_per_word.tolist() == [5.0, 3.0, 2.0]
    assert compression_curve(abc_tokenizer(), "abcab", vocab_sizes=[258, 256]).tokens.tolist() == [2, 5]


def test_propagate_worked_example():
    # the kernel's docstring example: rank 1 ("abc") hands its count to its left part, rank 0 ("ab")
    weights = np.array([[1], [1]], dtype=np.int64)
    propagate(np.array([-1, 0], dtype=np.int32), np.array([-1, -1], dtype=np.int32), weights)
    assert weights[:, 0].tolist() == [2, 1]


def test_special_tokens_are_one_token_at_every_size():
    tok = abc_tokenizer([EOT])
    curve = compression_curve(tok, f"abc{EOT}abc")
    assert curve.vocab_sizes.tolist() == [257, 258, 259]
    assert curve.tokens.tolist() == [3 + 1 + 3, 2 + 1 + 2, 1 + 1 + 1]


def test_a_special_token_a_merge_makes_is_one_token_at_every_size():
    # special token "ab" is the token merge 0 makes (as an HF file's added token in its model's vocab can be): it
    # is matched before merging, so "abc" never forms and "ab" is one token at every size; the curve split it
    # (5 tokens for "abcab" at size 256, which it drew without the special token), and counted "abc" as made
    tok = Tokenizer(byte_vocab() | {256: b"ab", 257: b"abc"}, [(b"a", b"b"), (b"ab", b"c")], ["ab"])
    assert tok.encode("abcab") == [256, 99, 256]
    curve = compression_curve(tok, "abcab")
    assert curve.vocab_sizes.tolist() == [257, 258] and curve.tokens.tolist() == [3, 3]
    cut = Tokenizer(byte_vocab() | {256: b"ab"}, [(b"a", b"b")], ["ab"])
    assert curve.tokens_at(257) == len(cut.encode("abcab"))
    # a merged token with such a part: the part is not split further
    tok = Tokenizer(byte_vocab() | {256: b"ab", 257: b"abc", 258: b"abcd"}, [(b"a", b"b"), (b"ab", b"c"),
                                                                            (b"abc", b"d")], ["abc"])
    trees = merge_trees(tok)
    assert trees.ranked_ids.tolist() == [256, 258] and trees.left.tolist() == [-1, -1] and trees.base_size == 257
    assert compression_curve(tok, "abcd ab").tokens.tolist() == [2 + 1 + 2, 2 + 1 + 1, 2 + 1 + 1]


def test_special_tokens_sharing_an_id_in_the_curve_and_the_report(tmp_path):
    # o200k_harmony's <|endofprompt|> and <|reserved_200018|> share 200018, whose vocabulary bytes are the first's:
    # a text holding the other is tallied by its own bytes, as with ids of their own
    ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256, b"abc": 257}
    text = "abc<|bb|>ab <|a|>c\u4e2d<|bb|>"
    own = compression_curve(Tokenizer.from_tiktoken(ranks, "gpt2", {"<|a|>": 300, "<|bb|>": 301}), text,
                            by_script=True)
    for specials in [{"<|a|>": 300, "<|bb|>": 300}, {"<|bb|>": 300, "<|a|>": 300}]:
        tok = Tokenizer.from_tiktoken(ranks, "gpt2", specials)
        curve = compression_curve(tok, text, by_script=True)
        assert curve.tokens.tolist() == own.tokens.tolist() and (curve.bytes, curve.words) == (own.bytes, own.words)
        assert curve.bytes == len(text.encode("utf-8"))
        write_report(tok, [write(tmp_path, text)], tmp_path / "r.html")


def test_report_counts_each_special_token_of_a_shared_id_under_its_own_name(tmp_path):
    # o200k_harmony's <|endofprompt|> and <|reserved_200018|> share 200018, which decodes to the first: in the
    # report each is counted under its own name (with the shared id) and measured by its own bytes, as when each
    # has an id of its own
    import re

    ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256}
    text = write(tmp_path, "ab<|bb|>ab<|a|><|bb|>")

    def frequent_and_lengths(specials):
        write_report(Tokenizer.from_tiktoken(ranks, "gpt2", specials), [text], tmp_path / "r.html")
        page = (tmp_path / "r.html").read_text()
        frequent = page[page.index("<h3>Most frequent tokens</h3>"):]
        rows = re.findall(r"<tr><td>(\d+)</td><td><code>(.*?)</code></td><td>(\d+)</td><td>(.*?)</td></tr>", frequent)
        lengths = re.search(r'<svg [^>]*aria-label="Lengths of the tokens the evaluation text[^"]*">.*?</svg>', page,
                            re.S).group()
        return rows, lengths

    own_rows, own_lengths = frequent_and_lengths({"<|a|>": 300, "<|bb|>": 301})
    assert own_rows == [("256", "ab", "2", "40.00%"), ("301", "&lt;|bb|&gt;", "2", "40.00%"),
                        ("300", "&lt;|a|&gt;", "1", "20.00%")]
    for specials in [{"<|a|>": 300, "<|bb|>": 300}, {"<|bb|>": 300, "<|a|>": 300}]:
        rows, lengths = frequent_and_lengths(specials)
        assert rows == [(i if i == "256" else "300", *rest) for i, *rest in own_rows], specials
        assert lengths == own_lengths, specials


def test_curve_and_report_of_a_view_matching_a_shared_id_without_its_holder(tmp_path):
    # a tokenizer matching only <|bb|> of the two sharing 300 (whose bytes are <|a|>'s: restricted_to), and that
    # view pickled: its special tokens are {"<|bb|>": 300} alone, yet the text holds <|bb|> where the vocabulary
    # holds <|a|>, so the id is tallied by the bytes matched (as with ids of their own), not by the vocabulary's
    ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256}
    text = "ab<|bb|>x<|bb|>ab"
    own = compression_curve(Tokenizer.from_tiktoken(ranks, "gpt2", {"<|bb|>": 300}), text)
    view = Tokenizer.from_tiktoken(ranks, "gpt2", {"<|a|>": 300, "<|bb|>": 300}).restricted_to(frozenset(["<|bb|>"]))
    for tok in [view, pickle.loads(pickle.dumps(view))]:
        curve = compression_curve(tok, text)
        assert curve.tokens.tolist() == own.tokens.tolist() and (curve.bytes, curve.words) == (own.bytes, own.words)
        write_report(tok, [write(tmp_path, text)], tmp_path / "r.html")
        assert "&lt;|bb|&gt;</code></td><td>2</td>" in (tmp_path / "r.html").read_text()


def test_words_are_runs_of_non_whitespace():
    text = "ab c\u00a0\u3000ab\n\n ab\u2003x "        # U+00A0, U+3000, U+2003 are whitespace too
    assert compression_curve(abc_tokenizer(), text).words == 5 == len(text.split())


def test_vocab_sizes_outside_the_curve_are_errors():
    tok = abc_tokenizer()
    with pytest.raises(ValueError, match="outside 256..258"):
        compression_curve(tok, "ab", vocab_sizes=[259])
    with pytest.raises(TypeError, match="ints"):
        compression_curve(tok, "ab", vocab_sizes=[256.0])


def test_merge_lists_training_cannot_make_are_refused():
    # (a, bc) before (b, c): "bc" is not made yet when merge 0 uses it
    vocab = byte_vocab() | {256: b"abc", 257: b"bc"}
    with pytest.raises(ValueError, match=r"merge 0 .*cannot make b'abc' from the tokens merged before it"):
        Tokenizer(vocab, [(b"a", b"bc"), (b"b", b"c")])         # the constructor refuses it first
    tok = Tokenizer._from_checked(vocab, [(b"a", b"bc"), (b"b", b"c")], None, "gpt2")     # the curve's own check
    with pytest.raises(ValueError, match=r"merge 0 .*neither a single byte nor made by an earlier merge"):
        compression_curve(tok, "abc")


def test_a_report_on_such_a_merge_list_names_the_tokenizer(tmp_path, capsys):
    # the error named the merge but not the tokenizer: with --against, which of the two could not be cut
    odd = Tokenizer._from_checked(byte_vocab() | {256: b"abc", 257: b"bc"}, [(b"a", b"bc"), (b"b", b"c")], None,
                                  "gpt2")     # past the constructor, which refuses such a list
    with pytest.raises(ValueError, match=r"^odd: merge 0 "):
        write_report(abc_tokenizer(), ["abc"], tmp_path / "r.html", against=odd, against_name="odd")
    odd.save(tmp_path / "odd")
    abc_tokenizer().save(tmp_path / "abc")
    text = write(tmp_path, "abc abc", "t.txt")
    code, _, err = run(["report", "-t", str(tmp_path / "abc"), "--eval", str(text), "-o", str(tmp_path / "r.html"),
                        "--against", str(tmp_path / "odd")], capsys)
    # its files are refused as they are read, naming the file and line
    assert code == 1 and "odd/merges.txt:1: merge 'a bc'" in err and not (tmp_path / "r.html").exists()


def test_a_token_made_twice_keeps_its_first_merge():
    vocab = byte_vocab() | {256: b"ab", 257: b"bc", 258: b"abc"}
    tok = Tokenizer(vocab, [(b"a", b"b"), (b"b", b"c"), (b"ab", b"c"), (b"a", b"bc")])
    trees = merge_trees(tok)
    assert trees.ranked_ids.tolist() == [256, 257, 258]
    assert trees.left.tolist() == [-1, -1, 0] and trees.right.tolist() == [-1, -1, -1]
    assert trees.first_merge.tolist() == [0, 1, 2] and trees.base_size == 256


def test_a_token_several_merges_make_splits_as_the_encoder_joins_it():
    # HF files converted from tiktoken's ranks (Llama 3's) list every split of a token, the left part's rank
    # first: "cab" as (c, ab), then (ca, b). The encoder joins "abcab" as a|b|ca|b, ab|ca|b, ab|cab: "cab" of
    # (ca, b), but the curve split it into its first merge's parts, so at size 257 (only "ca") it counted
    # c|a|b where the cut tokenizer keeps "ca" (5 tokens against 4)
    vocab = byte_vocab() | {256: b"ca", 257: b"ab", 258: b"cab"}
    merges = [(b"c", b"a"), (b"a", b"b"), (b"c", b"ab"), (b"ca", b"b")]
    tok = Tokenizer(vocab, merges)
    assert tok.encode("abcab") == [257, 258]
    trees = merge_trees(tok)
    assert trees.left.tolist() == [-1, -1, 0] and trees.right.tolist() == [-1, -1, -1]
    assert trees.first_merge.tolist() == [0, 1, 2]
    curve = compression_curve(tok, ["abcab", "cab cab"])
    for merged, n in [(0, 0), (1, 1), (2, 2), (3, 4)]:
        cut = Tokenizer({i: t for i, t in vocab.items() if i < 256 + merged}, merges[:n])
        assert curve.tokens_at(256 + merged) == len(cut.encode("abcab")) + len(cut.encode("cab cab")), merged
    assert curve.tokens.tolist() == [12, 9, 8, 5]


def test_inputs_paths_texts_and_bytes(tmp_path):
    tok = abc_tokenizer()
    path = write(tmp_path, "abcab")
    assert compression_curve(tok, path).tokens.tolist() == [5, 3, 2]
    assert compression_curve(tok, [path, "abc", b"ab"]).tokens.tolist() == [10, 6, 4]
    # attributed to the caller's line whichever function is called (stacklevel=3 named curve.py from
    # compression_curve, html_report.py from write_report: helper-145)
    from bpe_fast import write_report
    from bpe_fast.curve import analyze_text
    for call in (lambda: compression_curve(tok, str(path)), lambda: analyze_text(tok, str(path)),
                 lambda: write_report(tok, str(path), tmp_path / "r.html")):
        with pytest.warns(UserWarning, match="taken as the text itself") as caught:
            call()
        assert [w.filename for w in caught] == [__file__]


def test_bytes_are_the_texts_for_every_tokenizer_and_scripts_the_tokens():
    # a pattern that leaves text out, or a normalizer that changes it: the curve's bytes (what bytes per token
    # divides, the report's summary) were the tokens' bytes, the report's table of files the text's: two figures
    # of one text, and two tokenizers compared on it divided by different byte counts (helper-145)
    text = "ab 12 cd"                                   # 8 bytes; \p{L}+ keeps "ab" and "cd"
    letters = Tokenizer(byte_vocab(), [], pattern=r"\p{L}+")
    curve = compression_curve(letters, text, by_script=True)
    assert curve.bytes == 8 and curve.tokens.tolist() == [4]
    assert {name: c.bytes for name, c in curve.scripts.items()} == {"Latin": 4}
    # NFC: the tokens lie on the normalized text, whose bytes may be as many as the text's and other ones
    # ("e\u0301" x3 + "\u0958": 12 bytes; NFC "\xe9" x3 + "\u0915\u093c": 12 too); the tokens were tallied
    # over the text's bytes, a Devanagari byte counted as Latin
    nfd = "e\u0301" * 3 + "\u0958"
    curve = compression_curve(Tokenizer(byte_vocab(), []).with_normalizer("NFC"), nfd, by_script=True)
    assert curve.bytes == len(nfd.encode()) == 12
    assert {name: c.bytes for name, c in curve.scripts.items()} == {"Latin": 6, "other letters": 6}


def test_write_report_takes_one_bytearray_or_memoryview_as_curve_does(tmp_path):
    # write_report takes texts "as compression_curve takes them"; a bytearray or memoryview was iterated as its
    # byte values ("item 0: ... got int"). "abcab": 5 bytes in 2 tokens (abc, ab) at the full size.
    from bpe_fast import write_report

    for text in (bytearray(b"abcab"), memoryview(b"abcab")):
        assert compression_curve(abc_tokenizer(), text).tokens.tolist() == [5, 3, 2]
        assert write_report(abc_tokenizer(), text, tmp_path / "r.html")["bytes_per_token"] == [2.5]


def test_bad_evaluation_text_names_it(tmp_path):
    tok = abc_tokenizer()
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ab\nc\xffab")
    with pytest.raises(CorpusDecodeError, match=r"bad.txt: invalid UTF-8 at byte offset 4 \(line 2\)"):
        compression_curve(tok, bad)
    assert compression_curve(tok, bad, errors="replace").bytes == 9      # U+FFFD is 3 bytes
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="empty.txt: the evaluation text is empty"):
        compression_curve(tok, [bad, empty], errors="replace")
    with pytest.raises(ValueError, match="no evaluation text"):
        compression_curve(tok, [])


# Random small corpora: the curve at every size must equal encoding with the tokenizer trained to that size
# (training is greedy, so that is the full training's first merges; checked too).
PIECES = ["a", "b", "c", "ab", "ba", "aa", " ", "  ", "\n", "é", "中", "中文", "😀", "1", "22", "'s", ".", EOT]
text_strategy = st.lists(st.sampled_from(PIECES), min_size=0, max_size=40).map("".join)
PATTERNS = [GPT2_PATTERN, GPT4_PATTERN, O200K_PATTERN, r"\S+|\s+", r"(?s).+"]


def _train_quietly(counts, size):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # "no pairs left": the corpus ran out of pairs
        return train_from_counts(counts, size)


@given(docs=st.lists(text_strategy, min_size=1, max_size=6), eval_docs=st.lists(text_strategy, min_size=1, max_size=3),
       pattern=st.sampled_from(PATTERNS), merges=st.integers(0, 45))
@settings(max_examples=80)
def test_curve_equals_the_tokenizer_trained_to_each_size(docs, eval_docs, pattern, merges):
    eval_docs = [d if d else "a" for d in eval_docs]
    counts = count_pretokens(iter(docs), [EOT], pattern=pattern, num_processes=1)
    vocab, full = _train_quietly(counts, 257 + merges)
    tok = Tokenizer(vocab, full, [EOT], pattern)
    curve = compression_curve(tok, eval_docs, by_script=True)
    assert curve.vocab_sizes[0] == 257 and curve.vocab_sizes[-1] == 257 + len(set(a + b for a, b in full))
    for k in range(len(full) + 1):
        vocab_k, merges_k = _train_quietly(counts, 257 + k)
        assert merges_k == full[:k]
        cut = Tokenizer(vocab_k, merges_k, [EOT], pattern)
        size = 257 + len(set(a + b for a, b in merges_k))
        assert curve.tokens_at(size) == sum(len(cut.encode(d)) for d in eval_docs)
    assert curve.bytes == sum(len(d.encode()) for d in eval_docs)
    assert sum(c.tokens for c in curve.scripts.values()).tolist() == curve.tokens.tolist()
    assert sum(c.bytes for c in curve.scripts.values()) == curve.bytes


def test_curve_equals_gpt2_cut_at_random_sizes(gpt2):
    text = (FIXTURES / "corpus.en").read_text("utf-8")[:30000] + " 中文 Москва 😀 ٣٤٥" + EOT + " end"
    curve = compression_curve(gpt2, text)
    assert curve.vocab_sizes[0] == 257 and curve.vocab_sizes[-1] == 50257
    assert curve.tokens[-1] == len(gpt2.encode(text))
    rng = random.Random(16)
    vocab = gpt2.vocab
    merges = gpt2.merges
    for merged in sorted({0, 1, 7, 50000, *(rng.randrange(50001) for _ in range(9))}):
        cut_vocab = {i: t for i, t in vocab.items() if i < 256 + merged or i == 50256}
        cut = Tokenizer(cut_vocab, merges[:merged], [EOT])
        assert curve.tokens_at(257 + merged) == len(cut.encode(text)), merged


def test_scripts_classify_unicode_properties():
    assert [script_of(c) for c in "aЖ中ب3 ,ｱ가ー々𠀀😀é"] == [
        "Latin", "Cyrillic", "CJK", "Arabic", "digits", "whitespace", "punctuation/code", "CJK", "CJK", "CJK",
        "CJK", "CJK", "punctuation/code", "Latin"]
    tok = Tokenizer(byte_vocab(), [])
    curve = compression_curve(tok, "ab Жж 中 12\n!", by_script=True)
    got = {name: (c.bytes, int(c.tokens[-1])) for name, c in curve.scripts.items()}
    # byte tokens: a token inside a character counts for that character; a space for whitespace
    assert got == {"Latin": (2, 2), "Cyrillic": (4, 4), "CJK": (3, 3), "digits": (2, 2), "whitespace": (4, 4),
                   "punctuation/code": (1, 1)}
    assert set(got) <= set(SCRIPTS)


def test_scripts_of_a_pattern_that_leaves_text_out():
    # with r"[^\\s,!]+" the spaces, commas and "!" are in no token: each token is tallied under its own
    # characters (the text walked by the tokens' lengths put every token after a gap on the wrong bytes: the
    # Cyrillic letters counted as whitespace and Latin); worked by hand: the tokens are a, b, Ж, ж, 中, 1, 2
    tok = Tokenizer(byte_vocab(), [], pattern=r"[^\s,!]+")
    curve = compression_curve(tok, "ab, Жж 中 12\n!", by_script=True)
    got = {name: (c.bytes, int(c.tokens[-1])) for name, c in curve.scripts.items() if c.bytes}
    assert got == {"Latin": (2, 2), "Cyrillic": (4, 4), "CJK": (3, 3), "digits": (2, 2)}


# ------------------------------------------------------------------------------------------ show

show_text = st.lists(st.sampled_from(PIECES + ["\u00e9t\u00e9", "\u0416", "\t", "\r\n"]), max_size=30).map("".join)


@given(text=show_text)
@settings(max_examples=60)
def test_show_pieces_and_ids(gpt2, text):
    pieces, ids = gpt2.show(text)
    assert ids == gpt2.encode(text)
    assert b"".join(gpt2.vocab[i] for i in ids) == text.encode("utf-8")
    split = split_positions(TokenView(pieces, ids), gpt2)
    if not split:
        assert "".join(pieces) == text
    for k in split:
        assert "\\x" in pieces[k]


def test_show_escapes_parts_of_characters():
    tok = Tokenizer(byte_vocab() | {256: b"ab"}, [(b"a", b"b")], [EOT])
    view = tok.show(f"ab€{EOT}")
    assert view == TokenView(["ab", "\\xe2", "\\x82", "\\xac", EOT], [256, 226, 130, 172, 257])
    assert split_positions(view, tok) == {1, 2, 3}
    assert tok.show("") == ([], [])


def test_show_special_tokens_sharing_an_id():
    # o200k_harmony's <|endofprompt|> and <|reserved_200018|> share 200018: each shows as the text holds it
    ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256}
    text = "ab<|bb|>a<|a|>"
    for specials in [{"<|a|>": 300, "<|bb|>": 300}, {"<|bb|>": 300, "<|a|>": 300}]:
        tok = Tokenizer.from_tiktoken(ranks, "gpt2", specials)
        view = tok.show(text)
        assert view == TokenView(["ab", "<|bb|>", "a", "<|a|>"], [256, 300, 97, 300])
        assert split_positions(view, tok) == set()


def test_render_plain_and_html():
    view = TokenView(["Hello", " world", "\n", "x"], [1, 2, 3, 4])
    assert render_plain(view) == "[Hello][ world][\\n]\n[x]\n"
    assert render_plain(view, ids=True) == "[Hello|1][ world|2][\\n|3]\n[x|4]\n"
    page = render_html(view, ids=True, split={1}, title="t <x>")
    check_self_contained(page)
    assert "t &lt;x&gt;" in page and '<span class="c1 split" title="id 2"> world</span><sub>2</sub>' in page
    assert display_token(b" the\n\xe4") == "\u2423the\\n\\xe4"
    # a label stands for one token: "\u2423" itself (the sign shown for a space) is escaped, as it was not
    # (b" " and "\u2423"'s UTF-8 had the same label; found checking that no two short tokens share a label)
    assert display_token("\u2423".encode()) == "\\u2423" != display_token(b" ")
    labels = {}
    for token in [bytes([b]) for b in range(256)] + [chr(c).encode() for c in range(0x80, 0x3000)]:
        assert labels.setdefault(display_token(token), token) == token



def test_render_escapes_control_characters():
    # a token of a control character (ESC, NUL, backspace, form feed, a C1 control) was written as it is: the
    # terminal ran it (ESC [2J cleared the screen, a backspace ate the "[" before it) and the plain view, the
    # colours and the page showed an empty token; now \xNN (C1: \u0080..\u009f), as display_token writes them
    view = TokenView(["\x1b[2J", "\x00", "\x08", "a\x0cb", "\x7f", "\u009b", "\\x1b"], [1, 2, 3, 4, 5, 6, 7])
    assert render_plain(view) == "[\\x1b[2J][\\x00][\\x08][a\\x0cb][\\x7f][\\u009b][\\x1b]\n"
    ansi = render_ansi(view)
    assert "\x1b[2J" not in ansi and "\x00" not in ansi and "\x08" not in ansi and "\x0c" not in ansi
    assert "\\x1b[2J" in ansi and "\\u009b" in ansi
    page = render_html(view)
    check_self_contained(page)
    assert not any(ch in page for ch in "\x00\x08\x0c\x1b\x7f\u009b")
    assert ">\\x00</span>" in page and ">a\\x0cb</span>" in page


def test_render_escapes_characters_that_reorder_or_break_the_view():
    # a right-to-left override (U+202E) was written raw: a terminal and a page showed every later piece
    # reversed (ab|cd read as dc|ba), and U+2028 broke the line in a page; now \uNNNN, as display_token has them
    layout = "\u202e\u2066\u2069\u200f\u061c\u2028\u2029"
    view = TokenView(["x\u202e", "ab", "\u2028", "cd", "\u2066\u2069\u200f\u061c\u2029"], [1, 2, 3, 4, 5])
    expected = "[x\\u202e][ab][\\u2028][cd][\\u2066\\u2069\\u200f\\u061c\\u2029]\n"
    assert render_plain(view) == expected
    for out in (render_ansi(view), render_html(view)):
        assert not any(ch in out for ch in layout) and "\\u202e" in out and "\\u2028" in out
    assert [display_token(ch.encode()) for ch in layout] == [f"\\u{ord(ch):04x}" for ch in layout]


def test_render_escapes_characters_that_show_nothing_but_keeps_the_joiners():
    # a token of a zero-width space, a soft hyphen or a BOM showed as an empty piece ("[\u200b]" looked like
    # "[]"; helper-145); the joiners shape emoji and scripts and stay as they are
    hidden = "\u200b\u00ad\ufeff\u2060"
    view = TokenView(["a\u200b", "\u00ad", "\ufeff\u2060", "\U0001f468\u200d\U0001f469", "\u0645\u200c"],
                     [1, 2, 3, 4, 5])
    assert render_plain(view) == ("[a\\u200b][\\u00ad][\\ufeff\\u2060][\U0001f468\u200d\U0001f469]"
                                  "[\u0645\u200c]\n")
    for out in (render_ansi(view), render_html(view)):
        assert not any(ch in out for ch in hidden) and "\u200d" in out and "\\u00ad" in out
    assert [display_token(ch.encode()) for ch in hidden] == [f"\\u{ord(ch):04x}" for ch in hidden]


# ------------------------------------------------------------------------------------------ the page

class _PageChecker(html.parser.HTMLParser):
    """Collects every URL-bearing attribute and checks that the elements nest."""
    VOID = {"meta", "br", "hr", "img", "input", "link", "col", "wbr", "source", "area", "base"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.urls, self.tags = [], [], set()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.urls += [v or "" for k, v in attrs if k in ("src", "href", "xlink:href", "action", "data", "poster")]
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.add(tag)
        self.urls += [v or "" for k, v in attrs if k in ("src", "href", "xlink:href")]

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, (tag, self.stack[-5:])
        self.stack.pop()


def check_self_contained(page):
    checker = _PageChecker()
    checker.feed(page)
    checker.close()
    assert checker.stack == []
    assert not any(u.startswith(("http://", "https://", "//")) for u in checker.urls), checker.urls
    assert not {"script", "link", "iframe", "object", "embed"} & checker.tags
    assert "url(" not in page and "@import" not in page
    return checker


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    folder = tmp_path_factory.mktemp("report")
    corpus = write(folder, make_corpus(3, n_words=4000, specials=[EOT]))
    out = folder / "tok"
    assert main(["-q", "train", str(corpus), "--vocab-size", "600", "--special-token", EOT, "-j", "2",
                 "-o", str(out)]) == 0
    held_out = write(folder, make_corpus(4, n_words=2000, specials=[EOT]), "held_out.txt")
    return out, held_out, corpus


def test_report_page_is_self_contained(trained, tmp_path):
    tok_dir, held_out, _ = trained
    tok = Tokenizer.load(tok_dir)
    out = tmp_path / "report.html"
    result = write_report(tok, [held_out], out, name="mine")
    page = out.read_text("utf-8")
    checker = check_self_contained(page)
    assert "svg" in checker.tags
    for heading in ("Compression curve", "By script", "Token lengths", "Merges in training order",
                    "Under-trained candidates", "Most frequent tokens"):
        assert heading in page
    assert "Pair count when each merge was chosen" in page      # train recorded them
    curve = compression_curve(tok, held_out)
    assert result["bytes_per_token"] == [round(float(curve.bytes_per_token[-1]), 4)]
    assert result["full_sizes"] == [600] and result["notes"] == []


def test_report_shows_special_tokens_as_token_labels(tmp_path):
    # the summary wrote the special tokens as they are: ESC and NUL went into the page raw (shown as nothing, or
    # as U+FFFD) and a newline or space as blank, where the token tables show each token's label
    tok = Tokenizer(byte_vocab() | {256: b"ab"}, [(b"a", b"b")], ["<|x|>", "\x1b[2J", "\x00", "\n"])
    out = tmp_path / "report.html"
    write_report(tok, ["ab\x00ab\n"], out)
    page = out.read_text("utf-8")
    check_self_contained(page)
    assert "\x1b" not in page and "\x00" not in page
    assert "<code>&lt;|x|&gt;</code>, <code>\\x1b[2J</code>, <code>\\x00</code>, <code>\\n</code>" in page


def test_report_against_another_pattern_notes_it(trained, tmp_path, gpt2):
    tok_dir, held_out, _ = trained
    tok = Tokenizer.load(tok_dir)
    gpt4 = Tokenizer(dict(tok.vocab), tok.merges, [EOT], GPT4_PATTERN)
    out = tmp_path / "report.html"
    result = write_report(tok, [held_out], out, against=gpt4, against_name="other")
    assert any("different patterns" in note for note in result["notes"])
    page = out.read_text("utf-8")
    check_self_contained(page)
    assert "different patterns" in page and "other" in page
    result = write_report(tok, [held_out], out, against=gpt2, against_name="gpt2")
    assert result["notes"] == [] and result["full_sizes"] == [600, 50257]
    assert "pair counts not recorded" in out.read_text("utf-8")


def test_report_against_tiktokens_spelling_of_gpt2s_pattern_notes_nothing(trained, tmp_path, gpt2):
    # tiktoken's gpt2 / r50k_base (`--against gpt2`) spell GPT-2's pattern otherwise (R50K_PATTERN), with the same
    # pre-tokens: the report noted "different patterns (gpt2 and custom regex)" against a tokenizer trained with it
    tok_dir, held_out, _ = trained
    r50k = Tokenizer(dict(gpt2.vocab), gpt2.merges, [EOT], "r50k_base")
    out = tmp_path / "report.html"
    result = write_report(Tokenizer.load(tok_dir), [held_out], out, against=r50k, against_name="gpt2")
    assert result["notes"] == []
    assert "custom regex" not in out.read_text("utf-8")


def test_report_png(trained, tmp_path):
    pytest.importorskip("matplotlib")
    tok_dir, held_out, _ = trained
    result = write_report(Tokenizer.load(tok_dir), [held_out], tmp_path / "r.html", png_dir=tmp_path / "png")
    assert result["pngs"] and all(Path(p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in result["pngs"])


def test_report_png_draws_names_as_they_are(trained, tmp_path, monkeypatch):
    # matplotlib reads text between two $ as mathtext and leaves a label starting with _ out of a legend: with
    # --png, a tokenizer named 'tok$^$' failed the report (ValueError: ParseSyntaxException ...) and one named
    # '_mine' was missing from every legend
    matplotlib = pytest.importorskip("matplotlib")
    import matplotlib.figure
    tok_dir, held_out, _ = trained
    tok = Tokenizer.load(tok_dir)
    legends = []
    savefig = matplotlib.figure.Figure.savefig

    def saving(fig, *args, **kwargs):
        legend = fig.axes[0].get_legend()
        legends.extend(t.get_text() for t in (legend.get_texts() if legend else []))
        return savefig(fig, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", saving)
    result = write_report(tok, [held_out], tmp_path / "r.html", name="tok$^$", against=tok, against_name="_mine",
                          png_dir=tmp_path / "png")
    assert result["pngs"] and "\u200b_mine" in legends and "tok\\$^\\$" in legends


def open_in_chromium(page_path, screenshot=None):
    """Load the page in headless Chromium (a system one, else playwright's own; skip naming what is missing).
    Returns the URLs it requested other than local files and data: URLs (aborted, so nothing leaves the machine;
    file://HOST/ counts as external) and what the first chart's first curve measures on screen."""
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    from screenshot_report import NoBrowser, visit_local_page     # the README picture's browser, one owner

    def look(page):
        curve = page.locator("svg.chart").first.locator("polyline").first
        seen = {"charts": page.locator("svg.chart").count(), "curve_box": curve.bounding_box(),
                "curve_points": len((curve.get_attribute("points") or "").split()),
                "curve_stroke": curve.evaluate("e => getComputedStyle(e).stroke"),
                "height": page.evaluate("document.documentElement.scrollHeight")}
        if screenshot is not None:
            page.screenshot(path=str(screenshot), full_page=True)
        return seen

    try:
        return visit_local_page(page_path, look)
    except NoBrowser as exc:
        pytest.skip(str(exc))


def test_report_opens_in_headless_chromium_without_requests(trained, tmp_path):
    tok_dir, held_out, _ = trained
    out = tmp_path / "report.html"
    write_report(Tokenizer.load(tok_dir), [held_out], out)
    shot = tmp_path / "report.png"
    external, seen = open_in_chromium(out, shot)
    assert external == []
    # something visible was drawn: charts, the compression curve a line of many points with an area on screen
    assert seen["charts"] >= 4 and seen["curve_points"] >= 10, seen
    box = seen["curve_box"]
    assert box is not None and box["width"] > 100 and box["height"] > 10, seen
    assert seen["curve_stroke"] not in ("", "none") and seen["height"] > 1000, seen
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


@pytest.mark.parametrize("leak", ['<img src="http://example.com/x.png" alt="">',
                                  '<div style="background: url(https://example.com/bg.png)">x</div>',
                                  '<link rel="stylesheet" href="//example.com/s.css">'])
def test_chromium_check_catches_an_external_request(trained, tmp_path, leak):
    # the check above can fail: the same page with one external resource added is caught
    tok_dir, held_out, _ = trained
    out = tmp_path / "report.html"
    write_report(Tokenizer.load(tok_dir), [held_out], out)
    page = out.read_text("utf-8")
    out.write_text(page.replace("<h1>", leak + "<h1>", 1), "utf-8")
    external, _ = open_in_chromium(out)
    assert len(external) == 1 and "example.com" in external[0], external


# ------------------------------------------------------------------------------------------ command line

def run(argv, capsys):
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cli_show(trained, capsys, tmp_path):
    tok_dir = str(trained[0])
    tok = Tokenizer.load(tok_dir)
    code, out, err = run(["show", "-t", tok_dir, f"the cat{EOT}\nsat"], capsys)
    assert code == 0
    pieces, ids = tok.show(f"the cat{EOT}\nsat")
    assert out == render_plain(TokenView(pieces, ids))         # stdout is not a terminal: brackets
    assert f"[{EOT}]" in out and f"{len(ids)} tokens" in err
    code, out, err = run(["show", "-t", tok_dir, "--plain", "--ids", "the"], capsys)
    assert out == "".join(f"[{p}|{i}]" for p, i in zip(*tok.show("the"))) + "\n"
    assert len(tok.show("the").ids) == 1 and "1 token, 3 bytes" in err       # it said "1 tokens"
    text_file = write(tmp_path, "héllo 中文\n", "t.txt")
    code, out, _ = run(["show", "-t", tok_dir, "-f", str(text_file)], capsys)
    assert code == 0 and out == render_plain(tok.show("héllo 中文\n"))
    page = tmp_path / "view.html"
    code, out, err = run(["show", "-t", tok_dir, "-f", str(text_file), "--html", str(page), "--ids"], capsys)
    assert code == 0 and out == "" and str(page) in err
    check_self_contained(page.read_text("utf-8"))


def test_cli_show_errors(trained, capsys, tmp_path):
    tok_dir = str(trained[0])
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ok\n\xc3(")
    code, _, err = run(["show", "-t", tok_dir, "-f", str(bad)], capsys)
    assert code == 1 and f"{bad}: invalid UTF-8 at byte offset 3 (line 2)" in err and "--errors replace" in err
    code, out, _ = run(["show", "-t", tok_dir, "-f", str(bad), "--errors", "replace"], capsys)
    assert code == 0 and out == render_plain(Tokenizer.load(tok_dir).show("ok\n\ufffd("))
    # TEXT with invalid UTF-8 (its bytes as the command line has them: surrogate escapes) is refused as -f FILE's
    # is; it became U+FFFD without a word
    code, _, err = run(["show", "-t", tok_dir, os.fsdecode(b"ok \xc3(")], capsys)
    assert code == 1 and "the text: invalid UTF-8 at byte offset 3 (line 1)" in err and "--errors replace" in err
    code, out, _ = run(["show", "-t", tok_dir, os.fsdecode(b"ok \xc3("), "--errors", "replace"], capsys)
    assert code == 0 and out == render_plain(Tokenizer.load(tok_dir).show("ok \ufffd("))
    for argv, message in ((["show", "-t", tok_dir], "give the TEXT or -f FILE"),
                          (["show", "-t", tok_dir, "x", "-f", str(bad)], "give the TEXT or -f FILE"),
                          (["show", "-t", tok_dir, "-f", str(tmp_path / "nope")], "no such file"),
                          (["show", "-t", str(tmp_path / "none"), "x"], "no such tokenizer"),
                          # it was "bpe-fast: DIR: Is a directory", naming no flag
                          (["show", "-t", tok_dir, "x", "--html", str(tmp_path)], f"--html {tmp_path}: is a folder")):
        code, _, err = run(argv, capsys)
        assert code == 1 and message in err and "Traceback" not in err


def test_cli_report(trained, capsys, tmp_path, gpt2):
    tok_dir, held_out, _ = trained
    out = tmp_path / "report.html"
    code, _, err = run(["report", "-t", str(tok_dir), "--eval", str(held_out), "-o", str(out)], capsys)
    assert code == 0, err
    check_self_contained(out.read_text("utf-8"))
    assert "bytes per token" in err and str(out) in err
    # against GPT-2's own files, and against another pattern (a note)
    gpt2_dir = tmp_path / "gpt2"
    gpt2_dir.mkdir()
    shutil.copy(FIXTURES / "gpt2_vocab.json", gpt2_dir / "vocab.json")
    shutil.copy(FIXTURES / "gpt2_merges.txt", gpt2_dir / "merges.txt")
    code, _, err = run(["report", "-t", str(tok_dir), "--eval", str(held_out), "-o", str(out), "--against",
                        str(gpt2_dir)], capsys)
    assert code == 0 and "gpt2: " in err
    other = tmp_path / "other"
    tok = Tokenizer.load(tok_dir)
    Tokenizer(dict(tok.vocab), tok.merges, [EOT], O200K_PATTERN).save(other)
    code, _, err = run(["report", "-t", str(tok_dir), "--eval", str(held_out), "-o", str(out), "--against",
                        str(other)], capsys)
    assert code == 0 and "note: The two tokenizers pre-tokenize with different patterns" in err


def test_cli_report_errors(trained, capsys, tmp_path):
    tok_dir = str(trained[0])
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine text\nmore\xff")
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    (tmp_path / "none").mkdir()
    out = tmp_path / "r.html"
    # ranks merging does not rebuild: the refusal named neither --against nor the tokenizer (helper-145)
    Tokenizer.from_tiktoken({bytes([i]): i for i in range(256)} | {b"abc": 256, b"ab": 257},
                            GPT2_PATTERN).save(tmp_path / "ro")
    cases = ((["--eval", str(bad), "--against", str(tmp_path / "ro")], "bpe-fast: ro: this tokenizer's ranks hold"),
             (["--eval", str(bad)], f"{bad}: invalid UTF-8 at byte offset 14 (line 2)"),
             (["--eval", str(empty)], f"{empty}: the evaluation text is empty"),
             (["--eval", str(tmp_path / "nope.txt")], "nope.txt: no such file"),
             # a folder was "no such file" (the CLI review); it is read as the other commands read one, its files
             (["--eval", str(tmp_path / "none")], "none: corpus directory holds no files"),
             (["--eval", str(bad), "--against", str(tmp_path / "none")], "--against"),
             # a --png that is a file: the report was written, then "bpe-fast: FILE: File exists" and exit 1
             # (found by giving --png a file name)
             (["--eval", str(bad), "--errors", "replace", "--png", str(empty)], f"--png {empty}: exists and is "
                                                                                  f"not a folder"),
             # a --png under a file: the report was written, then "bpe-fast: FILE/charts: Not a directory", exit 1
             (["--eval", str(bad), "--errors", "replace", "--png", str(empty / "charts")],
              f"--png {empty / 'charts'}: {empty} is not a folder"),
             # an -o that is a folder: "bpe-fast: DIR: Is a directory", naming no flag, once the text was encoded
             (["--eval", str(bad), "--errors", "replace", "-o", str(tmp_path)], f"-o {tmp_path}: is a folder"))
    for extra, message in cases:
        code, _, err = run(["report", "-t", tok_dir, "-o", str(out), *extra], capsys)
        assert code == 1 and message in err and "Traceback" not in err, err
        assert not out.exists()
    code, _, err = run(["report", "-t", tok_dir, "-o", str(out), "--eval", str(bad), "--errors", "replace"], capsys)
    assert code == 0 and out.exists()




@pytest.mark.parametrize("chart, against", [("curve.png", False), ("usage.png", False), ("scripts-2.png", True),
                                            ("merges-2.png", True)])
def test_cli_report_png_of_a_chart_that_is_a_folder_is_refused_before_any_work(trained, capsys, tmp_path,
                                                                                monkeypatch, chart, against):
    # --png DIR where DIR/curve.png is a folder: the text was encoded and the charts drawn, then the error
    # ('charts/curve.png: Is a directory', naming no flag)
    import bpe_fast.html_report
    tok_dir, held_out, _ = trained
    out, charts = tmp_path / "r.html", tmp_path / "charts"
    (charts / chart).mkdir(parents=True)
    monkeypatch.setattr(bpe_fast.html_report, "write_report", lambda *a, **k: pytest.fail("the work was begun"))
    code, _, err = run(["report", "-t", str(tok_dir), "--eval", str(held_out), "-o", str(out), "--png", str(charts)]
                       + (["--against", str(tok_dir)] if against else []), capsys)
    assert code == 1 and err == (f"bpe-fast: --png {charts}: {charts / chart} is a folder; the output of that name "
                                 f"cannot replace it\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["charts"] and [p.name for p in charts.iterdir()] == [chart]


@pytest.mark.parametrize("target", ["report", "eval"])
def test_cli_report_png_chart_over_the_report_or_an_input_is_refused(trained, capsys, tmp_path, monkeypatch, target):
    # -o charts/curve.png --png charts: the page was replaced by the chart; --eval charts/curve.png --png charts:
    # the text by the chart; both exited 0 (helper-145)
    import bpe_fast.html_report
    tok_dir, held_out, _ = trained
    charts = tmp_path / "charts"
    charts.mkdir()
    chart = charts / "curve.png"
    text = held_out.read_bytes()
    if target == "report":
        out, evaluated = chart, held_out
    else:
        out, evaluated = tmp_path / "r.html", chart
        chart.write_bytes(text)
    monkeypatch.setattr(bpe_fast.html_report, "write_report", lambda *a, **k: pytest.fail("the work was begun"))
    code, _, err = run(["report", "-t", str(tok_dir), "--eval", str(evaluated), "-o", str(out), "--png", str(charts)],
                       capsys)
    kind = "the report (-o)" if target == "report" else "an input"
    shown = out if target == "report" else chart
    assert code == 1 and err == (f"bpe-fast: {shown} is {kind} and would be overwritten by the output (--png "
                                 f"{chart}); choose another output\n")
    assert [p.name for p in charts.iterdir()] == ([] if target == "report" else ["curve.png"])
    assert target == "report" or chart.read_bytes() == text


def test_report_png_names_are_the_charts_written(trained, tmp_path):
    # the CLI checks these names before any work: every chart written is one of them
    pytest.importorskip("matplotlib")
    from bpe_fast.html_report import png_names
    tok_dir, held_out, _ = trained
    tok = Tokenizer.load(tok_dir)
    for against in (None, tok):
        result = write_report(tok, [held_out], tmp_path / "r.html", against=against, png_dir=tmp_path / "png")
        written = [Path(p).name for p in result["pngs"]]
        assert written and set(written) <= set(png_names(against is not None)), (written, png_names(against))


@pytest.mark.parametrize("failure, code", [(RuntimeError("the drawing failed"), 1), (KeyboardInterrupt(), 130)])
def test_cli_report_png_failing_leaves_the_earlier_report(trained, capsys, tmp_path, monkeypatch, failure, code):
    # bpe-fast report -o r.html --png charts/: the page was renamed over r.html before the charts were drawn, so
    # an error or Ctrl-C while matplotlib drew them (or a --png folder that could not be made) left the new page
    # in place of the earlier one, some charts in a new folder, and 'interrupted; no output written' (found by
    # sending SIGINT to bpe-fast report --png while it drew)
    matplotlib = pytest.importorskip("matplotlib")
    import matplotlib.figure
    tok_dir, held_out, _ = trained
    out, charts = tmp_path / "r.html", tmp_path / "charts"
    out.write_text("the earlier report")
    drawn = []
    real_savefig = matplotlib.figure.Figure.savefig

    def savefig(self, *args, **kwargs):
        if len(drawn) == 3:
            raise failure
        drawn.append(1)
        return real_savefig(self, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", savefig)
    got, _, err = run(["report", "-t", str(tok_dir), "--eval", str(held_out), "-o", str(out), "--png",
                       str(charts)], capsys)
    assert got == code and "Traceback" not in err
    assert len(drawn) == 3
    assert out.read_text() == "the earlier report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.html"]      # no charts folder, no temporary file
    # an existing charts folder keeps its earlier charts too
    charts.mkdir()
    (charts / "curve.png").write_bytes(b"earlier chart")
    drawn.clear()
    got, _, err = run(["report", "-t", str(tok_dir), "--eval", str(held_out), "-o", str(out), "--png",
                       str(charts)], capsys)
    assert got == code and out.read_text() == "the earlier report"
    assert [p.name for p in charts.iterdir()] == ["curve.png"] and (charts / "curve.png").read_bytes() == b"earlier chart"
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", real_savefig)
    got, _, err = run(["report", "-t", str(tok_dir), "--eval", str(held_out), "-o", str(out), "--png",
                       str(charts)], capsys)
    assert got == 0 and out.read_text("utf-8").startswith("<!DOCTYPE html>")
    assert (charts / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not [p for p in [*tmp_path.iterdir(), *charts.iterdir()] if p.name.startswith(".")]


# ------------------------------------------------------------------------------------------ what training records

def test_train_records_merge_counts_and_corpus_statistics(tmp_path):
    text = make_corpus(7, n_words=3000, specials=[EOT])
    path = write(tmp_path, text)
    result = train_bpe(path, 420, [EOT], num_processes=2, chunk_bytes=4096)   # several tables, added up
    vocab, merges = result
    assert result == (vocab, merges) and isinstance(result, tuple)
    counts = count_pretokens(path, [EOT], num_processes=1)
    corpus = result.training["corpus"]
    assert corpus == {"bytes": path.stat().st_size, "documents": 1, "pretokens": counts.total(),
                      "pretoken_bytes": int(np.dot(np.diff(counts.offsets), counts.counts)),
                      "distinct_pretokens": len(counts)}
    # each count is the pair's count in the corpus when it was chosen (the plain-Python oracle's words)
    words = {tuple(bytes([b]) for b in w): n for w, n in oracle_count_pretokens(text, [EOT], GPT2_PATTERN).items()
             if len(w) > 1}
    recorded = result.training["merge_counts"]
    assert len(recorded) == len(merges)
    for pair, count in zip(merges, recorded):
        assert _count_pairs(words)[pair] == count
        words = _apply_merge(words, pair)
    assert pickle.loads(pickle.dumps(result)).training == result.training


def test_train_counts_documents_of_every_input_kind(tmp_path):
    lines = tmp_path / "docs.jsonl"
    lines.write_text("".join(json.dumps({"text": t}) + "\n" for t in ["hello there", "", "hello hello"]))
    result = train_bpe(lines, 260, num_processes=1)
    assert result.training["corpus"]["documents"] == 3 and result.training["corpus"]["bytes"] == 22
    result = train_bpe(iter(["ab ab", "abc"]), 258, num_processes=1)
    assert result.training["corpus"]["documents"] == 2
    result = train_from_counts({b"hello": 5, b"help": 2}, 258)
    assert result.training == {"corpus": {"pretokens": 7, "pretoken_bytes": 33, "distinct_pretokens": 2},
                               "merge_counts": [7, 7]}


def test_corpus_statistics_leave_out_pre_tokens_counted_zero_times():
    # a count of 0 is no entry (PretokenCounts' equality, Counter's): such a pre-token is not in the corpus, so
    # the two equal counts below have 1 distinct pre-token, b"ab", 5 times (10 bytes)
    with_zero, without = PretokenCounts({b"ab": 5, b"cd": 0}), PretokenCounts({b"ab": 5})
    assert with_zero == without
    expected = {"pretokens": 5, "pretoken_bytes": 10, "distinct_pretokens": 1}
    for counts in (with_zero, without, {b"ab": 5, b"cd": 0}, {b"cd": 0, b"ab": 5, b"": 0}):
        assert train_from_counts(counts, 257).training["corpus"] == expected
    # tables that may list a pre-token twice (train_bpe's, one a worker): b"ab" 3 + 2 times, b"cd" and b"x" 0
    tokens = np.frombuffer(b"abcdabx", dtype=np.uint8)
    offsets = np.array([0, 2, 4, 6, 7], dtype=np.int64)
    assert corpus_statistics(tokens, offsets, np.array([3, 0, 2, 0], dtype=np.int64), may_repeat=True) == expected


def test_count_distinct_worked_example():
    tokens = np.frombuffer(b"abcabab", dtype=np.uint8)
    assert count_distinct(tokens, np.array([0, 1, 3, 4, 5, 7], dtype=np.int64)) == 4     # a bc a b ab
    assert count_distinct(np.zeros(0, dtype=np.uint8), np.zeros(1, dtype=np.int64)) == 0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([b"", b"a", b"ab", b"abcdefgh", b"abcdefghi", b"abcdefghj", b"\x00" * 9]) |
                st.binary(max_size=20), max_size=300),
       st.randoms(use_true_random=False))
def test_count_distinct_equals_a_set(strings, rng):
    # count_distinct hashes 32 pre-tokens ahead of checking them: lists longer and shorter than that, repeats
    # near and far, keys equal in their first 8 bytes
    strings = strings + [rng.choice(strings) for _ in range(len(strings))] if strings else strings
    tokens = np.frombuffer(b"".join(strings), dtype=np.uint8)
    offsets = np.cumsum([0] + [len(s) for s in strings]).astype(np.int64)
    assert count_distinct(tokens, offsets) == len(set(strings))


def test_training_is_saved_and_loaded(tmp_path):
    result = train_from_counts({b"hello": 5, b"help": 2}, 258)
    tok = Tokenizer(*result, [EOT], training=result.training)
    assert tok.training == result.training
    tok.save(tmp_path / "t")
    config = (tmp_path / "t" / "bpe_fast.json").read_text()
    assert json.loads(config)["training"] == result.training and len(config.splitlines()) < 12
    loaded = Tokenizer.load(tmp_path / "t")
    assert loaded.training == result.training
    assert pickle.loads(pickle.dumps(loaded)).training == result.training
    # a file written before merge counts were recorded loads, without them
    old = json.loads(config)
    del old["training"]
    (tmp_path / "t" / "bpe_fast.json").write_text(json.dumps(old))
    assert Tokenizer.load(tmp_path / "t").training is None
    old["training"] = {"merge_counts": "many"}
    (tmp_path / "t" / "bpe_fast.json").write_text(json.dumps(old, indent=2))
    line = next(k for k, row in enumerate(json.dumps(old, indent=2).splitlines(), 1) if '"training"' in row)
    with pytest.raises(FormatError, match=rf"bpe_fast.json:{line}: training's merge_counts must be a list"):
        Tokenizer.load(tmp_path / "t")
    with pytest.raises(ValueError, match="2 counts for 1 merges"):
        Tokenizer(*train_from_counts({b"hello": 5}, 257), training={"merge_counts": [1, 2]})


@pytest.mark.parametrize("cached", [False, True], ids=["text-files", "cache"])
def test_load_refuses_merge_counts_of_other_merges_naming_the_file(tmp_path, monkeypatch, cached):
    # load took merge_counts of any length (the constructor refuses them), save wrote them back and `bpe-fast
    # report` read them as the merges' counts
    from bpe_fast import formats
    monkeypatch.setattr(formats, "CACHE_MIN_TOKENS", 0 if cached else formats.CACHE_MIN_TOKENS)
    result = train_from_counts({b"hello": 5, b"help": 2}, 259)
    Tokenizer(*result, training=result.training).save(tmp_path / "t")
    assert (tmp_path / "t" / formats.CACHE_FILE).exists() == cached
    config = tmp_path / "t" / "bpe_fast.json"
    settings = json.loads(config.read_text())
    settings["training"]["merge_counts"] = [1, 2]
    config.write_text(json.dumps(settings, indent=2))
    assert (formats.read_cache(tmp_path / "t") is not None) == cached      # the merges counted there
    with pytest.raises(FormatError, match=rf"^{config}:\d+: training's merge_counts has 2 counts for 3 merges \(the "
                                          rf"merges of {tmp_path / 't' / 'merges.txt'}: cut short or edited since "
                                          r"the save\?\)$"):
        Tokenizer.load(tmp_path / "t")
    settings["training"]["merge_counts"] = [5, 5, 2]
    config.write_text(json.dumps(settings, indent=2))
    assert Tokenizer.load(tmp_path / "t").training["merge_counts"] == [5, 5, 2]


def test_cli_train_saves_what_training_recorded(trained):
    tok = Tokenizer.load(trained[0])
    assert len(tok.training["merge_counts"]) == len(tok.merges)
    assert tok.training["corpus"]["bytes"] == trained[2].stat().st_size


# ------------------------------------------------------------------------------------------ chart layout

def _font_sizes(css):
    """{class: font size in px} of the svg text classes, as the page's style sets them."""
    import re
    return {name: float(size) for name, size in re.findall(r"svg \.(\w+) \{ font-size: (\d+)px", css)}


def _text_box(e, font):
    """(x0, y0, x1, y1) an svg <text> can cover: width 0.6 * font size a character (more than system-ui needs),
    ascent 0.8 and descent 0.25 font size; turned about its anchor point by rotate(-90 ...)."""
    size = max(font[c] for c in e.get("class", "").split() if c in font)
    text = "".join(e.itertext())
    w = 0.6 * size * len(text)
    x, y = float(e.get("x")), float(e.get("y"))
    x0 = {"start": x, "middle": x - w / 2, "end": x - w}[e.get("text-anchor", "start")]
    if e.get("transform", "").startswith("rotate(-90"):         # text runs upwards, its ascent to the left
        return x - 0.8 * size, y - (x0 + w - x), x + 0.25 * size, y + (x - x0)
    assert not e.get("transform"), e.get("transform")
    return x0, y - 0.8 * size, x0 + w, y + 0.25 * size


def _overlap(a, b, slack=0.5):
    return a[0] < b[2] - slack and b[0] < a[2] - slack and a[1] < b[3] - slack and b[1] < a[3] - slack


def check_chart_layout(svg, font):
    """What a chart must look like: every label inside the svg, no two labels on each other and none over the plot
    (the legend and the marks' labels are outside it), the y axis's top tick at or above every data point with
    the data clear of the frame, and the legend below the plot. Returns the chart's element tree."""
    import xml.etree.ElementTree as ET
    root = ET.fromstring(svg)
    width, height = float(root.get("width")), float(root.get("height"))
    assert root.get("viewBox") == f"0 0 {root.get('width')} {root.get('height')}"
    plot = next(e for e in root.iter("rect") if e.get("class") == "plot")
    px0, py0 = float(plot.get("x")), float(plot.get("y"))
    px1, py1 = px0 + float(plot.get("width")), py0 + float(plot.get("height"))
    boxes = []
    for e in root.iter("text"):
        box = _text_box(e, font)
        label = "".join(e.itertext())
        assert 0 <= box[0] and box[2] <= width and 0 <= box[1] and box[3] <= height, (label, box, width, height)
        assert not _overlap(box, (px0, py0, px1, py1)), (label, box, "over the plot")
        for other, other_box in boxes:
            assert not _overlap(box, other_box), (label, other, box, other_box)
        boxes.append((label, box))
    # the y axis: nice top, data under it and clear of the frame
    ticks = [float(e.get("y1")) for e in root.iter("line") if "ygrid" in e.get("class", "").split()]
    assert ticks and all(py0 < t <= py1 for t in ticks)
    data_y = [float(p.split(",")[1]) for e in root.iter("polyline") for p in e.get("points").split()]
    data_y += [float(e.get("y")) for e in root.iter("rect") if e.get("class") == "bar"]
    assert data_y, "no data drawn"
    assert min(ticks) <= min(data_y) + 0.05, ("data above the top tick", min(ticks), min(data_y))
    assert py0 < min(data_y) and max(data_y) <= py1
    y_ticks = sorted((float(e.get("y")), float(e.text.replace(",", ""))) for e in root.iter("text")
                     if "ytick" in e.get("class", "").split())
    assert [v for _, v in y_ticks] == sorted((v for _, v in y_ticks), reverse=True)    # the top tick is the max
    # the legend: under the plot, its x-axis ticks and its x label
    for entry in root.iter("g"):
        if entry.get("class") == "legend-entry":
            assert entry.find("title").text
            for e in entry:
                if e.tag != "title":
                    top = _text_box(e, font)[1] if e.tag == "text" else min(float(e.get("y1")), float(e.get("y2")))
                    assert top > py1 + 20, (e.tag, top, py1)
    return root


def _charts(page):
    import re
    return re.findall(r'<svg class="chart".*?</svg>', page, flags=re.DOTALL)


def test_report_chart_layout(trained, tmp_path, gpt2):
    # against GPT-2: the log x axes run to 50,257, whose 50,000 tick label used to be cut at the right edge; the
    # merged-token usage chart has four long legend labels and curves at 100%
    tok_dir, held_out, _ = trained
    out = tmp_path / "report.html"
    write_report(Tokenizer.load(tok_dir), [held_out], out, name="mine", against=gpt2, against_name="gpt2")
    page = out.read_text("utf-8")
    font = _font_sizes(page)
    assert {"tick", "axis", "ctitle", "legend", "mark"} <= set(font)
    charts = _charts(page)
    assert len(charts) >= 6
    roots = [check_chart_layout(svg, font) for svg in charts]
    x_labels = [t.text for r in roots for t in r.iter("text") if "xtick" in t.get("class", "").split()]
    assert "50,000" in x_labels
    usage = next(r for r in roots if r.get("aria-label").startswith("Merged tokens the evaluation text uses"))
    legend = [e.find("title").text for e in usage.iter("g") if e.get("class") == "legend-entry"]
    assert legend == ["mine: used (as a token or inside one)", "mine: produced as a token",
                      "gpt2: used (as a token or inside one)", "gpt2: produced as a token"]
    marks = [t.text for r in roots[:1] for t in r.iter("text") if t.get("class") == "mark"]
    assert marks == ["600", "50,257"]


def _synthetic_charts():
    from bpe_fast.html_report import Chart, Series
    long = "a legend label long enough that it cannot fit on one line of the chart, " * 3
    xs = np.unique(np.geomspace(256, 10**6, 2000).astype(np.int64))    # ends on a tick whose label, 1,000,000,
    assert xs[-1] == 10**6                                              # centred under it, would run off the svg
    yield Chart("long", "Long legend labels", "vocabulary size", "bytes per token",
                [Series(long.strip(), xs, np.log(xs) / 4), Series("short", xs, np.log(xs) / 5, "#d62728", True)],
                log_x=True, marks=[(4096, "4,096", "#1f77b4"), (4200, "4,200", "#d62728"), (50257, "50,257", "#444"),
                                   (256, "256", "#444")])
    pct = np.linspace(0, 100, 50)
    yield Chart("pct", "Percentages that reach 100", "position", "% of tokens",          # the max is a tick
                [Series("one", pct, np.minimum(pct * 2, 100)), Series("two", pct, 100 - pct, "#d62728")],
                y_from_zero=True)
    yield Chart("log", "Counts on a log axis", "merge", "count",
                [Series("one", np.arange(1, 1001), 10 ** 6 / np.arange(1, 1001))], log_y=True)
    yield Chart("bars", "Bars", "length", "% of tokens", [Series("one", ["1", "2", "3+"], [20.0, 50.0, 30.0]),
                                                          Series("two", ["1", "2", "3+"], [10.0, 43.2, 1.0])],
                kind="bars")


@pytest.mark.parametrize("chart", list(_synthetic_charts()), ids=lambda c: c.slug)
def test_chart_layout_edge_cases(chart):
    from bpe_fast.html_report import _CSS, svg_chart
    root = check_chart_layout(svg_chart(chart), _font_sizes(_CSS))
    entries = [e for e in root.iter("g") if e.get("class") == "legend-entry"]
    for entry, s in zip(entries, chart.series):
        # a wrapped label loses nothing: its lines make it up, and the tooltip holds it whole
        assert entry.find("title").text == s.label
        assert " ".join(t.text for t in entry.iter("text")) == s.label
    if chart.slug == "long":
        assert len(list(entries[0].iter("text"))) > 1
        rows = {t.get("y") for t in root.iter("text") if t.get("class") == "mark"}
        assert len(rows) == 2               # 4,096 and 4,200 would overlap in one row
    if chart.slug == "pct":
        assert [t.text for t in root.iter("text") if "ytick" in t.get("class", "")][-1] == "100"


def test_linear_ticks_have_nice_ends():
    from bpe_fast.html_report import _linear_ticks
    assert _linear_ticks(1.0, 2.43) == [1.0, 1.5, 2.0, 2.5]
    assert _linear_ticks(0.0, 100.0) == [0, 20, 40, 60, 80, 100]
    assert _linear_ticks(2.93, 7.1) == [2, 3, 4, 5, 6, 7, 8]
    assert _linear_ticks(0.0, 23.4) == [0, 5, 10, 15, 20, 25]


@pytest.mark.skipif(sys.platform != "linux", reason="file names of any bytes (Linux)")
@pytest.mark.parametrize("png", [False, True])
def test_cli_report_and_show_on_files_whose_names_are_not_utf8(trained, capsys, tmp_path, png):
    # a file or tokenizer folder whose name is not UTF-8 (b'c\xff.txt': os.fsdecode makes it 'c\udcff.txt') failed
    # once all was measured: "bpe-fast: 'utf-8' codec can't encode character '\udcff' ...: surrogates not allowed"
    # (the page holds the names), and with --png matplotlib refused the tokenizer's name in the charts
    if png:
        pytest.importorskip("matplotlib")
    tok_dir, held_out, _ = trained
    folder = os.fsdecode(bytes(tmp_path) + b"/k\xfe")
    shutil.copytree(tok_dir, folder)
    text = os.fsdecode(bytes(tmp_path) + b"/c\xff.txt")
    shutil.copy(held_out, text)
    out = tmp_path / "r.html"
    code, _, err = run(["report", "-t", folder, "--eval", text, "-o", str(out)]
                       + (["--png", str(tmp_path / "png")] if png else []), capsys)
    assert code == 0, err
    page = out.read_text("utf-8")
    assert "k\\udcfe" in page and "c\\udcff.txt" in page
    if png:
        assert (tmp_path / "png" / "curve.png").read_bytes()[:4] == b"\x89PNG"
    code, _, err = run(["show", "-t", folder, "-f", text, "--html", str(tmp_path / "s.html")], capsys)
    assert code == 0, err
    assert "<title>" + html.escape(f"{text} in tokens of {folder}").replace("\udcff", "\\udcff").replace(
        "\udcfe", "\\udcfe") in (tmp_path / "s.html").read_text("utf-8")


@pytest.mark.parametrize("low, high", [(257, 400), (257, 499), (600, 900), (257, 258), (257, 50257), (1, 10)])
def test_log_axes_have_labelled_ticks_at_every_range(low, high):
    # 257..400 (a small tokenizer's curve) fell between 1-2-5 ticks: the charts had no x labels (helper-145)
    from bpe_fast.html_report import _log_ticks
    ticks = _log_ticks(low, high)
    assert len(ticks) >= 2 and all(low <= t <= high for t in ticks) and ticks == sorted(set(ticks))
    assert all(float(t).is_integer() for t in ticks)
