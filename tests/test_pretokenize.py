"""The native pre-tokenizer against `regex`: worked examples per kernel, then differential fuzzing.

The oracle is always `regex` itself (regex.findall, and regex.split for the special tokens), never the code
under test.
"""
import importlib
import random
from collections import Counter

import pytest
import regex
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from bpe_fast.patterns import (DEEPSEEK3_PATTERN, GPT2_PATTERN, GPT4_PATTERN, KIMI_PATTERN, LLAMA3_PATTERN,
                               O200K_PATTERN, QWEN2_PATTERN, R50K_PATTERN, STARCODER_PATTERN, TEKKEN_PATTERN,
                               BLOOM_PATTERN, can_match_empty)

P = importlib.import_module("bpe_fast.pretokenize")   # the module (bpe_fast.pretokenize is also a function)
PATTERNS = [GPT2_PATTERN, GPT4_PATTERN, O200K_PATTERN, R50K_PATTERN,   # R50K: tiktoken spells GPT-2's so
            LLAMA3_PATTERN, QWEN2_PATTERN, TEKKEN_PATTERN, DEEPSEEK3_PATTERN, KIMI_PATTERN, STARCODER_PATTERN,
            BLOOM_PATTERN]
FUZZ = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(autouse=True, scope="module")
def native_scanner():
    assert P.native_kind(GPT2_PATTERN) == P.native_kind(R50K_PATTERN) == 2 and P.native_kind("gpt4") and \
        P.native_kind("o200k") == 5 and P.native_kind(LLAMA3_PATTERN) == 6 and P.native_kind("qwen2") == 7 and \
        P.native_kind(TEKKEN_PATTERN) == 8 and P.native_kind("deepseek3") == 9 and P.native_kind("kimi") == 10 and \
        P.native_kind("starcoder") == P.native_kind(STARCODER_PATTERN) == 11 and P.native_kind(BLOOM_PATTERN) == 12, \
        "native scanner not active: build _scan.pyx"


def oracle_counts(text, specials, pattern):
    """Counter of UTF-8 pre-tokens: cut at the special tokens (longest first), the whole matches of
    regex.finditer on each piece."""
    pieces = [text]
    if specials:
        alternation = "|".join(regex.escape(t) for t in sorted(specials, key=len, reverse=True))
        pieces = regex.split(alternation, text)
    return Counter(m.group().encode() for piece in pieces for m in regex.finditer(pattern, piece))


def oracle_boundaries(text, pattern):
    out = [0]
    for w in regex.findall(pattern, text):
        out.append(out[-1] + len(w.encode()))
    return out


# ------------------------------------------------------------------------------------ worked examples

def test_gpt2_worked_example():
    text = "Hi  there's 42\t\tdays!!\n"
    # "Hi"       ' ?\p{L}+' with no space before it
    # " "        '\s+(?!\S)': the run "  " is followed by "t", so it gives back its last space...
    # " there"   ...which ' ?\p{L}+' takes
    # "'s"       the contraction (lower case only in GPT-2)
    # " 42"      ' ?\p{N}+'
    # "\t"       '\s+(?!\S)' on "\t\t" gives back the second tab; a tab is not " ", so it stands alone ('\s+')
    # "\t"
    # "days"     '\p{L}+'
    # "!!"       '[^\s\p{L}\p{N}]+'
    # "\n"       '\s+(?!\S)' at the end of the text
    expected = ["Hi", " ", " there", "'s", " 42", "\t", "\t", "days", "!!", "\n"]
    assert regex.findall(GPT2_PATTERN, text) == expected
    assert P.pretokenize(text) == expected
    assert P.pretokenize("'S 'Ll") == ["'", "S", " '", "Ll"]    # GPT-2's contractions are case-sensitive


def test_gpt4_worked_example():
    text = "'S (Hello) 12345 ..\n\n  x  \r\n"
    # "'S"       '(?i:[sdmt]|...)': GPT-4's contractions ignore case
    # " ("       '[^\r\n\p{L}\p{N}]?+\p{L}++' fails (it allows one char before the letters, and " (" is two);
    #            ' ?[^\s\p{L}\p{N}]++[\r\n]*+' takes the space and the parenthesis
    # "Hello"    '\p{L}++'
    # ")"        punctuation
    # " "        GPT-4 has no ' ?\p{N}': the space before digits is alone ('\s')
    # "123" "45" '\p{N}{1,3}+': digits in groups of at most three
    # " ..\n\n"  punctuation takes the line breaks after it ('[\r\n]*+')
    # " "        '\s+(?!\S)' on "  " before "x" gives back one space...
    # " x"       ...which '[^\r\n\p{L}\p{N}]?+\p{L}++' takes
    # "  \r\n"   '\s++$': the whitespace run reaches the end of the text
    expected = ["'S", " (", "Hello", ")", " ", "123", "45", " ..\n\n", " ", " x", "  \r\n"]
    assert regex.findall(GPT4_PATTERN, text) == expected
    assert P.pretokenize(text, GPT4_PATTERN) == expected


def test_llama3_and_qwen2_worked_example():
    text = "'S 12345 x \n\t \n  "
    # As GPT-4's pattern (above), but for the whitespace run that ends the text:
    # "'S" " " "123" "45" " x"   (Qwen2: "1" "2" "3" "4" "5", '\p{N}' one digit at a time)
    # " \n\t \n"  '\s*[\r\n]+' comes first: to the run's last line break...
    # "  "        ...then '\s+(?!\S)' takes the rest (GPT-4's '\s++$' takes " \n\t \n  " whole)
    llama3 = ["'S", " ", "123", "45", " x", " \n\t \n", "  "]
    qwen2 = ["'S", " ", "1", "2", "3", "4", "5", " x", " \n\t \n", "  "]
    assert regex.findall(LLAMA3_PATTERN, text) == llama3 and P.pretokenize(text, "llama3") == llama3
    assert regex.findall(QWEN2_PATTERN, text) == qwen2 and P.pretokenize(text, "qwen2") == qwen2
    assert P.pretokenize(text, GPT4_PATTERN)[-1] == " \n\t \n  "


def test_starcoder_worked_example():
    # the scanner's comment's: a digit is a piece, no space joins it, and the run of spaces it ends is whole
    text = "a  12 b it's\t 7"
    expected = ["a", "  ", "1", "2", " b", " it", "'s", "\t ", "7"]
    assert regex.findall(STARCODER_PATTERN, text) == expected and P.pretokenize(text, "starcoder") == expected


def test_bloom_worked_example():
    # the scanner's comment's: runs (with the space before), and the text between them a piece of its own
    text = "Hi, (you) ok"
    expected = ["Hi", ", (", "you", ")", " ok"]
    assert regex.findall(BLOOM_PATTERN, text) == expected and P.pretokenize(text, "bloom") == expected


def test_tekken_worked_example():
    text = "Don't 2024 HTTPServer x/\n"
    # As o200k's pattern, without its contraction suffix and with digits one at a time:
    # "Don"          '[^\r\n\p{L}\p{N}]?[U]*[W]+': no (?i:'t) after it (o200k: "Don't")
    # "'t"           the apostrophe is the optional prefix of the next letter run
    # " " "2" "0" "2" "4"   no ' ?' before digits, and '\p{N}' one at a time (o200k: "202", "4")
    # " HTTPServer"  '[U]*[W]+': the upper-case run "HTTPS", then the lower-case run "erver"
    # " x"
    # "/\n"          ' ?[^\s\p{L}\p{N}]+[\r\n/]*'
    expected = ["Don", "'t", " ", "2", "0", "2", "4", " HTTPServer", " x", "/\n"]
    assert regex.findall(TEKKEN_PATTERN, text) == expected
    assert P.pretokenize(text, "tekken") == expected
    assert P.pretokenize(text, "o200k")[:1] == ["Don't"]


def test_kimi_worked_example():
    text = "Hello 中文English混合 東京's x/\n〇1234 e\u0301中\u0301"
    # Kimi K2's pattern: o200k's, with runs of Han apart and no "/" after punctuation:
    # "Hello"                 a letter run
    # " "                     the space is no prefix of a letter run here: Han is in none
    # "中文"                   [\p{Han}]+
    # "English"               the letter run stops before Han (o200k: "中文English混合" whole)
    # "混合"  " "  "東京"       Han runs; the space alone again
    # "'s"                    no letter run before it (Han is none): the apostrophe is the optional prefix of "s"
    # " x" "/\n"              [\r\n]* after punctuation (o200k's [\r\n/]*: the same here)
    # "〇"                     U+3007, a Han number: the Han run comes first
    # "123" "4"               digits three at a time
    # " e\u0301"             a letter and its mark
    # "中" "\u0301"            the mark after Han: a run of marks of its own
    expected = ["Hello", " ", "中文", "English", "混合", " ", "東京", "'s", " x", "/\n", "〇", "123", "4", " e\u0301",
                "中", "\u0301"]
    assert regex.findall(KIMI_PATTERN, text) == expected
    assert P.pretokenize(text, "kimi") == expected
    assert P.pretokenize("a.\n/b", "kimi") == ["a", ".\n", "/b"] and P.pretokenize("a.\n/b", "o200k") == ["a", ".\n/", "b"]


def test_deepseek3_worked_example():
    text = "Hello, 12345 \u65e5\u672c\u8a9e\u30fb\u30c6\u30b9\u30c8x  9\x00\x00 'sé  \n\n  a\u309b\u304b"
    # DeepSeek V3's three Splits, each cutting every piece the ones before made:
    # "Hello" ","              the third's letters, then its punctuation (the first alternative needs a letter
    #                          right after the punctuation)
    # " " "123" "45"           the space ends its piece before a digit; digits three at a time
    # " " "日本語" "・" "テスト"   a run of CJK and kana, which the third Split cuts at its punctuation
    # "x" "  " "9"             "  " whole: (?!\S) holds where the piece ends, before a digit
    # "\x00\x00"               no alternative takes \x00: the text between two matches is a piece
    # " '" "sé"                the letters need to follow the optional code point at once, so the space goes
    #                          with the punctuation (" ?[\p{P}\p{S}]+")
    # "  \n\n" " " " a"        \s*[\r\n]+, then \s+(?!\S) leaves the last space to the letter
    # "\u309b" "\u304b"        U+309B (a symbol) and U+304B (a letter) in the run of kana
    expected = ["Hello", ",", " ", "123", "45", " ", "\u65e5\u672c\u8a9e", "\u30fb", "\u30c6\u30b9\u30c8", "x", "  ",
                "9", "\x00\x00", " '", "s\u00e9", "  \n\n", " ", " a", "\u309b", "\u304b"]
    assert regex.findall(DEEPSEEK3_PATTERN, text) == expected
    assert P.pretokenize(text, "deepseek3") == expected


def test_gpt4_whitespace_worked_example():
    text = "a \n\n  b\t\nc \u017f'\u017fun"
    # "a"
    # " \n\n"    '\s*[\r\n]': the run " \n\n  " is not at the end; it ends at its last line break
    # " "        '\s+(?!\S)' on "  " before "b"
    # " b"
    # "\t\n"     '\s*[\r\n]'
    # "c"
    # " \u017f"  U+017F LONG S is a letter: ' ?'-like prefix + '\p{L}++'
    # "'\u017f"  and (?i:s) matches it: a contraction (else '[^\r\n\p{L}\p{N}]?+\p{L}++' would give "'\u017fun")
    # "un"
    expected = ["a", " \n\n", " ", " b", "\t\n", "c", " \u017f", "'\u017f", "un"]
    assert regex.findall(GPT4_PATTERN, text) == expected
    assert P.pretokenize(text, "gpt4") == expected


def test_boundaries_worked_example():
    data = "Hi, ünï\n".encode()        # "Hi" "," " ünï" "\n"; ü and ï are two bytes each
    assert P.pretoken_boundaries(data).tolist() == [0, 2, 3, 9, 10]
    assert P.pretoken_boundaries(data).dtype.name == "int64"
    assert P.pretoken_boundaries(b"", GPT4_PATTERN).tolist() == [0]


def test_count_chunk_worked_example():
    # Specials longest first: "<|a|><|a|>" is one special, then "<|a|>"; neither is counted. Each piece is
    # pre-tokenized on its own: " x" and " x" and "x" -> {b" x": 2, b"x": 1}.
    rx = ["<|a|>", "<|a|><|a|>"]
    assert P.count_chunk(b" x<|a|><|a|> x<|a|>x", rx) == {b" x": 2, b"x": 1}
    assert P.count_chunk(b"", rx) == {}
    assert P.count_chunk(b"<|a|>", rx) == {}


def test_letter_runs_longer_than_eight_bytes():
    # The letter scanner takes eight ASCII bytes at a time: runs of 7, 8, 9 and 17 letters, and a run that
    # continues into non-ASCII letters, must all end where regex ends them.
    text = "abcdefg abcdefgh abcdefghi abcdefghijklmnopq abcdefghé, Zz@[`{ éabcdefghijé abcdefghijkl\u0301mn"
    for pattern in PATTERNS:
        assert P.pretokenize(text, pattern) == regex.findall(pattern, text)
    # One letter run of a million code points alternating ASCII and not: one pre-token.
    assert P.pretoken_boundaries(("a\u00e9" * 500_000).encode()).tolist() == [0, 1_500_000]


def test_lower_case_runs_end_at_every_ascii_byte_as_regex_ends_them():
    # o200k's lower-case letter runs ([\p{Ll}\p{Lm}\p{Lo}\p{M}]+) go eight ASCII bytes at a time while they are
    # a-z: every ASCII byte (the ones either side of a-z, "`" and "{", upper case, digits, controls) put at each
    # place of the first eight-byte window and of the next must end the run where regex ends it, and after a
    # capital ([U]*[W]+) as well as after a space (the optional prefix)
    for pattern in (O200K_PATTERN, TEKKEN_PATTERN, KIMI_PATTERN):
        for b in range(128):
            for k in range(18):
                for lead in ("", " ", "Q"):
                    text = lead + "abcdefghijklmnopqrstuvwxyz"[:k] + chr(b) + "mnopqrstuvwxyzab" + "\u00e9t\u00e9"
                    assert P.pretokenize(text, pattern) == regex.findall(pattern, text), (pattern, b, k, lead)


def test_bloom_runs_end_at_every_ascii_byte_as_regex_ends_them():
    # BLOOM's runs ([^(\s|.,!?…。，、।۔،)]+) skip ASCII letters eight bytes at a time and test other ASCII bytes
    # by their class and a mask of the punctuation: every ASCII byte (white space, ! ( ) , . ? |, the bytes
    # either side of them and of the letters, controls) put at each place of the first eight-byte window and of
    # the next must end the run where regex ends it (or not), after nothing, a space (the optional prefix) or a
    # character runs stop at, and with one of the non-ASCII characters they stop at after it
    for b in range(128):
        for k in range(18):
            for lead in ("", " ", "(", "\u3002"):
                for tail in ("\u00e9t\u00e9", "\u2026x", " \u060cy"):
                    text = lead + "abcdefghijklmnopqrstuvwxyz"[:k] + chr(b) + "mnopqrstuvwxyzab" + tail
                    assert P.pretokenize(text, "bloom") == regex.findall(BLOOM_PATTERN, text), (b, k, lead, tail)


def test_every_contraction_spelling():
    # All two-character continuations of an apostrophe over the contraction letters in both cases, the
    # non-ASCII code points (?i) relates to them (U+017F long s, U+212A Kelvin sign) and a few others.
    alphabet = "sSdDmMtTlLvVeErR\u017f\u212akKx' \n1"
    for a in alphabet:
        for b in alphabet:
            text = f"'{a}{b}z 'x{a}'{b}"
            for pattern in PATTERNS:
                assert P.pretokenize(text, pattern) == regex.findall(pattern, text), text


def test_invalid_utf8_is_reported_like_bytes_decode():
    # b"ok \xe2\x82!": the 3-byte sequence is cut short by "!" at offset 5 -> start 3, end 5.
    for data in [b"ok \xe2\x82!", b"\xff", b"abc\xc0\xaf", b"\xed\xa0\x80", b"x\xf4\x90\x80\x80", b"ab\xe2\x82"]:
        with pytest.raises(UnicodeDecodeError) as ours:
            P.count_chunk(data)
        with pytest.raises(UnicodeDecodeError) as theirs:
            data.decode("utf-8")
        got, want = ours.value, theirs.value
        assert (got.start, got.end, got.reason, got.object) == (want.start, want.end, want.reason, want.object)
        with pytest.raises(UnicodeDecodeError):
            P.pretoken_boundaries(data, GPT4_PATTERN)


def test_other_patterns_use_regex():
    pattern = r"\w+|\s+|[^\w\s]+"
    assert P.native_kind(pattern) == 0
    text = "héllo, wörld  42"
    assert P.pretokenize(text, pattern) == regex.findall(pattern, text)
    assert P.count_chunk(text.encode(), (), pattern) == dict(oracle_counts(text, [], pattern))
    with pytest.raises(ValueError, match="invalid pre-tokenization pattern"):
        P.pretokenize("x", "(unclosed")


def test_a_pattern_nesting_groups_too_deeply_is_named_not_a_recursion_error(tmp_path):
    # `regex`'s parser recurses into each group: a pattern nesting 1000 got out as a bare RecursionError from
    # pretokenize, Tokenizer and count_pretokens
    from bpe_fast import Tokenizer, count_pretokens
    deep = "(?:" * 1000 + "a" + ")" * 1000
    message = r"invalid pre-tokenization pattern '\(\?:\(\?:.*'\.\.\. \(4,001 characters\): groups nested too deeply$"
    with pytest.raises(ValueError, match=message):
        P.pretokenize("x", deep)
    with pytest.raises(ValueError, match=message):
        Tokenizer({i: bytes([i]) for i in range(256)}, [], pattern=deep)
    (tmp_path / "a.txt").write_text("a b")
    with pytest.raises(ValueError, match=message):
        count_pretokens(tmp_path / "a.txt", pattern=deep, num_processes=1)


def test_a_pattern_holding_a_lone_surrogate_is_refused(tmp_path):
    # such a character matches no text (the text is matched as UTF-8): a byte that is not UTF-8 on the command
    # line arrives so (--pattern $'\xff\w+'), and counting found 0 pre-tokens without a word; the CLI names
    # the flag, before any work. (An escape spelling a surrogate range, r"[\ud800-\udfff]", is no such character.)
    import subprocess
    import sys

    from bpe_fast import Tokenizer, count_pretokens
    (tmp_path / "a.txt").write_text("hello world")
    message = r"pattern '\\udcff\\\\w\+' holds a lone surrogate \(U\+DCFF\) at index 0"
    with pytest.raises(ValueError, match=message):
        count_pretokens(tmp_path / "a.txt", pattern="\udcff\\w+", num_processes=1)
    with pytest.raises(ValueError, match=message):
        Tokenizer({i: bytes([i]) for i in range(256)}, [], pattern="\udcff\\w+")
    assert len(count_pretokens(tmp_path / "a.txt", pattern=r"[\ud800-\udfff]|\w+", num_processes=1)) == 2
    proc = subprocess.run([sys.executable, "-m", "bpe_fast", "count", "a.txt", "--pattern", b"\xff\\w+", "-o", "c.npz"],
                          cwd=tmp_path, capture_output=True)
    assert proc.returncode == 1 and proc.stderr.decode().startswith("bpe-fast: --pattern: pattern '\\udcff"), proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


def test_lone_surrogates_in_text_go_to_regex():
    text = "ab\ud800 cd's"
    for pattern in PATTERNS:
        assert P.pretokenize(text, pattern) == regex.findall(pattern, text)


def test_special_tokens_are_given_as_tokens_not_a_regex():
    # the counter takes the tokens themselves (nothing parses a regex back into tokens)
    with pytest.raises(TypeError):
        P.count_chunk(b"xxabyy", regex.compile(r"ab|c+"))
    assert P.count_chunk("xxabyy ab".encode(), ["ab"]) == {b"xx": 1, b"yy": 1, b" ": 1}


def test_more_pretokens_than_the_first_guess():
    # pretoken_boundaries writes into an array sized for pre-tokens of >= 3 bytes on average and grows it
    # when they are shorter: here they are 1 or 2 bytes ("a", " b", ...; "." "\n").
    for text in ["a b c d e f g h " * 2000, ".\n" * 5000, "1" * 7, "\u00e9 " * 3000 + "x"]:
        for pattern in PATTERNS:
            assert P.pretoken_boundaries(text.encode(), pattern).tolist() == oracle_boundaries(text, pattern)


def test_many_distinct_pretokens():
    # More distinct pre-tokens than the counting table's first size (1024), so it grows several times.
    words = [f"w{k}x" for k in range(5000)] * 3
    text = " ".join(words) + " " + "\n".join(words[:100])
    for pattern in PATTERNS:
        assert P.count_chunk(text.encode(), (), pattern) == dict(oracle_counts(text, [], pattern))
        counts = Counter({b"w1x": 5})
        P.count_pretokens_text(text, pattern, counts)
        assert counts == oracle_counts(text, [], pattern) + Counter({b"w1x": 5})


def test_counting_queue_keeps_counts_and_first_occurrence_order():
    # Once its table is large (2^20 slots: _scan.QUEUE_FROM_SLOTS, so the first piece has 270,000 distinct
    # pre-tokens) the counter hashes pre-tokens some way ahead of counting them (a queue of 32, _scan.QUEUE): a
    # pre-token seen again while its first occurrence still waits, keys that differ only past their first 8
    # bytes, the table growing while pre-tokens wait, and pieces (between special tokens) of about the queue's
    # length, must all count as the regex does, in the order of first occurrence.
    rng = random.Random(7)
    long_words = [f" abcdefgh{k}" for k in range(40)] + [f" abcdefghijklmnop{k}" for k in range(40)]
    words = [f"w{k}" for k in range(3000)] + long_words + [f" fresh{k}" for k in range(300_000)]
    pieces = [" ".join(f"d{k}" for k in range(270_000))]
    for n in [0, 1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 500, 5000]:
        pieces.append("".join(rng.choice(words[:40] if n < 100 else words[:3080] if n < 1000 else words)
                              for _ in range(n)))
    text = "<|e|>".join(pieces)
    for pattern in PATTERNS:
        want = oracle_counts(text, ["<|e|>"], pattern)
        got = P.count_chunk(text.encode(), ["<|e|>"], pattern)
        assert list(got.items()) == list(want.items())


@pytest.mark.parametrize("pattern", [r"\w+", r" ?(\w+)|\s+", r"(\w)(\w)|."])
def test_a_pattern_with_gaps_or_groups_counts_whole_matches(pattern):
    # text in no match is in no pre-token; a group does not cut the match (findall gave the groups: the text
    # was lost, or tuples crashed)
    text = "ab cd  é1, it's"
    want = [m.group() for m in regex.finditer(pattern, text)]
    assert P.pretokenize(text, pattern) == want
    assert P.count_chunk(text.encode(), ["<|e|>"], pattern) == dict(Counter(w.encode() for w in want))
    starts, ends = P.pretoken_spans(text.encode(), pattern)
    assert [text.encode()[a:b].decode() for a, b in zip(starts, ends)] == want
    if "".join(want) == text:
        assert P.pretoken_boundaries(text.encode(), pattern).tolist() == [0] + ends.tolist()
    else:
        first_gap = next(k for k, (a, b) in enumerate(zip([0] + ends.tolist(), starts.tolist())) if a != b)
        gap_at = 0 if first_gap == 0 else int(ends[first_gap - 1])
        with pytest.raises(ValueError, match=f"from byte {gap_at} in no pre-token"):
            P.pretoken_boundaries(text.encode(), pattern)


def test_o200k_worked_example():
    text = "HTTPServer's 中A! don'T 12345\t\t//x!!/\n/y  \n\nz"
    # "HTTPServer's"  [U]*[W]+C?: [U]* takes "HTTPS", [W]+ the lower-case run after it, then "'s"
    # " 中"           the space is the optional prefix; 中 is Lo, both U and W; 'A' is U only and '!' neither,
    #                 so [U]* gives "中" back to [W]+, which ends there
    # "A"             [U]+[W]*;  "!": " ?[^\s\p{L}\p{N}]+[\r\n/]*"
    # " don'T"        the contraction suffix, in any case
    # " " "123" "45"  digits have no prefix, three at most; the space is "\s+" on its own
    # "\t" "\t"       "\s+(?!\S)" gives back the second tab, which no letter follows
    # "//" "x"        "/" cannot be the letter prefix of "x" when a second "/" stands between
    # "!!/\n/"        punctuation, then "[\r\n/]*" takes newlines and slashes
    # "y" "  \n\n" "z" "\s*[\r\n]+" ends at the run's last newline
    expected = ["HTTPServer's", " 中", "A", "!", " don'T", " ", "123", "45", "\t", "\t", "//", "x", "!!/\n/", "y",
                "  \n\n", "z"]
    assert regex.findall(O200K_PATTERN, text) == expected
    assert P.pretokenize(text, O200K_PATTERN) == expected


# ------------------------------------------------------------------------------------ differential fuzzing

CATEGORIES = ["Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps", "Pe", "Pi",
              "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Co", "Cn"]
PIECES = ["'s", "'S", "'d", "'D", "'m", "'M", "'t", "'T", "'ll", "'Ll", "'LL", "'lL", "'ve", "'VE", "'re", "'Re",
          "'\u017f", "'\u017fx", "'Sx", "'LLx", "'\u212a", "'", "''", "\r\n", "\r", "\n", "\t", " ", "\u00a0", "\u2028", "\u2029", "\u3000",
          "\x85", "\x0b", "\x0c", "\x1c", "\u200b", "\ufeff", "e\u0301", "\u0915\u094d\u0937", "\u0663\u0664",
          "\u0967\u0968\u0969\u096a", "\uff11", "\u2460", "\u216b", "\u00b2", "\U0001d7ce", "12345", " 12",
          "\U0001f600", "\U0001f468\u200d\U0001f469\u200d\U0001f467", "\u200d", "\ufe0f", "\U0001f44d\U0001f3fd",
          "...", " !!", "Hello", " world", "\u4e2d\u6587", "\u0416\u0438", "\u00df", "\u01c5", "\u02b0",
          "\U00010400", "\U000e0001", "\U0010ffff",
          # o200k: case runs that give code points back ("中A!" is "中", "A", "!"), "/" and newlines after punctuation
          "\u4e2dA", "HTTPServer", "AB", "\u02b0A", "\u0301A", "A\u0301", "!/", "/\n/", " //", "'Re", "'rE",
          # DeepSeek V3: the edges of its CJK and kana ranges and what is next to them, the marks, punctuation and
          # unassigned code points inside them, ASCII punctuation before letters, digits after spaces
          "\u303f", "\u3040", "\u3041", "\u3097", "\u3099", "\u309b", "\u309f", "\u30a0", "\u30fb", "\u30fc",
          "\u30ff", "\u3100", "\u4dff", "\u4e00", "\u9fa5", "\u9fa6", "\u65e5\u672c", ",x", "'s", "  1",
          " \u65e5", "\x00"]
chars_any = st.characters(codec="utf-8")
chars_by_category = st.one_of([st.characters(categories=[c], codec="utf-8") for c in CATEGORIES])
whitespace_run = st.lists(st.sampled_from([" ", " ", "\t", "\n", "\r", "\r\n", "\u00a0", "\u3000", "\u2028"]),
                          min_size=2, max_size=40).map("".join)
texts = st.lists(st.one_of(st.sampled_from(PIECES), chars_any, chars_by_category, whitespace_run),
                 max_size=40).map("".join)
edge_texts = ["", " ", "  ", "\n", "\r\n", " \n", "a ", "a  ", "a\n\n", " " * 50 + "a", "a" + " " * 50, "'",
              "'l", "'ll", "''s", " 'S", "\t'x", "1234567", " \u00a0x", "x\u2028\u2028y", "ab\r\n\r\n  "]


@FUZZ
@given(text=texts, pattern=st.sampled_from(PATTERNS))
@example(text="   \n\n   x", pattern=GPT4_PATTERN)
@example(text="x    ", pattern=GPT2_PATTERN)
def test_pretokenize_equals_regex(text, pattern):
    assert P.pretokenize(text, pattern) == regex.findall(pattern, text)


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("text", edge_texts)
def test_edge_cases_equal_regex(text, pattern):
    assert P.pretokenize(text, pattern) == regex.findall(pattern, text)
    assert P.pretoken_boundaries(text.encode(), pattern).tolist() == oracle_boundaries(text, pattern)


DEEPSEEK3_EDGES = ["\u303f", "\u3040", "\u3041", "\u3097", "\u3099", "\u309b", "\u309f", "\u30a0", "\u30ab", "\u30fb",
                   "\u30fc", "\u30ff", "\u3100", "\u4dff", "\u4e00", "\u9fa5", "\u9fa6", "a", "\u00e9", "\u0301", " ", "  ",
                   "\n", "1", "!", ",x", "\x00", "\u2460"]


@settings(max_examples=400, deadline=None)
@given(text=st.lists(st.sampled_from(DEEPSEEK3_EDGES), max_size=12).map("".join))
@example(text="\u30ab\u30ff")           # U+30FF ends the kana range: the run goes on through it
@example(text="\u4e00\u9fa5\u9fa6")      # U+9FA6 is past the ideographs' range: a letter of its own piece
def test_deepseek3_at_the_edges_of_its_ranges_equals_regex(text):
    assert P.pretokenize(text, "deepseek3") == regex.findall(DEEPSEEK3_PATTERN, text)


@FUZZ
@given(text=texts, pattern=st.sampled_from(PATTERNS))
def test_boundaries_equal_regex(text, pattern):
    assert P.pretoken_boundaries(text.encode(), pattern).tolist() == oracle_boundaries(text, pattern)


@FUZZ
@given(text=st.lists(st.characters(), max_size=30).map("".join), pattern=st.sampled_from(PATTERNS))
def test_any_str_including_surrogates_equals_regex(text, pattern):
    assert P.pretokenize(text, pattern) == regex.findall(pattern, text)


SPECIALS = ["<|endoftext|>", "<|e|>", "<|e|><|e|>", "<|e|>!", "\n\n", "\n\n\n", "'s", "\u00e9t\u00e9", "x"]


@FUZZ
@given(parts=st.lists(st.one_of(texts, st.sampled_from(SPECIALS)), max_size=8),
       specials=st.lists(st.sampled_from(SPECIALS), unique=True, max_size=4),
       pattern=st.sampled_from(PATTERNS))
def test_count_chunk_equals_regex_counts(parts, specials, pattern):
    text = "".join(parts)
    want = oracle_counts(text, specials, pattern)
    assert P.count_chunk(text.encode(), specials, pattern) == dict(want)
    counts = Counter()
    assert P.count_pretokens_text(text, pattern, counts) is counts
    assert counts == oracle_counts(text, [], pattern)


@settings(max_examples=100, deadline=None)
@given(chunks=st.lists(texts, max_size=5), specials=st.lists(st.sampled_from(SPECIALS), unique=True, max_size=3),
       pattern=st.sampled_from(PATTERNS + [r"\w+|\W"]))
def test_chunk_counter_adds_up_chunks(chunks, specials, pattern):
    counter = P.ChunkCounter(specials, pattern)
    want = Counter()
    for chunk in chunks:
        assert counter.add(chunk.encode()) is counter
        want += oracle_counts(chunk, specials, pattern)
    assert counter.to_dict() == dict(want)
    tokens, offsets, counts = counter.arrays()
    got = {bytes(tokens[offsets[k]:offsets[k + 1]]): int(counts[k]) for k in range(len(counts))}
    assert got == dict(want) and tokens.dtype.name == "uint8" and offsets.dtype.name == counts.dtype.name == "int64"


def test_chunk_counter_worked_example():
    # Two chunks, one special token: "a", " b" | "a", " b" | " b" -> a: 2, " b": 3, in order of first sight.
    counter = P.ChunkCounter(["<|e|>"])
    counter.add(b"a b<|e|>a b").add(bytearray(b" b"))
    assert list(counter.to_dict().items()) == [(b"a", 2), (b" b", 3)]
    with pytest.raises(LookupError):
        P.ChunkCounter(errors="no-such-handler")


@FUZZ
@given(prefix=texts, junk=st.binary(min_size=1, max_size=6), suffix=texts, pattern=st.sampled_from(PATTERNS))
def test_bad_bytes(prefix, junk, suffix, pattern):
    data = prefix.encode() + junk + suffix.encode()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as want:
        with pytest.raises(UnicodeDecodeError) as got:
            P.count_chunk(data, (), pattern)
        assert (got.value.start, got.value.end, got.value.reason) == (want.start, want.end, want.reason)
        with pytest.raises(UnicodeDecodeError) as got:
            P.pretoken_boundaries(data, pattern)
        assert got.value.start == want.start
    else:
        assert P.count_chunk(data, (), pattern) == dict(oracle_counts(text, [], pattern))
    replaced = data.decode("utf-8", "replace")
    assert P.count_chunk(data, ["\n"], pattern, "replace") == dict(
        oracle_counts(replaced, ["\n"], pattern))


@FUZZ
@given(data=st.binary(max_size=64))
def test_utf8_validation_equals_bytes_decode(data):
    scan = importlib.import_module("bpe_fast._scan")
    try:
        data.decode("utf-8")
        want = -1
    except UnicodeDecodeError as exc:
        want = exc.start
    assert scan.utf8_error(data) == want


def test_utf8_validation_finds_an_error_after_long_ascii_runs():
    # ASCII is skipped 8 and then 32 bytes at a time: an error (or a valid character) at every offset of runs
    # of up to 100 ASCII bytes, and an error at each place of a 32-byte block after one, against bytes.decode
    scan = importlib.import_module("bpe_fast._scan")
    for bad in (b"\x80", b"\xc0\xaf", b"\xff", b"\xe2\x82", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82\xac"):
        for run in range(101):
            for tail in (b"", b"x" * 40):
                data = b"a" * run + bad + tail
                try:
                    data.decode("utf-8")
                    want = -1
                except UnicodeDecodeError as exc:
                    want = exc.start
                assert scan.utf8_error(data) == want, (bad, run, len(tail))
                assert scan.utf8_error(b"\xc3\xa9" + data) == (want + 2 if want >= 0 else -1)


@pytest.mark.parametrize("pattern, near", [("GPT2", "gpt2"), ("gpt-4", "gpt4"), ("cl100k-base", "cl100k_base"),
                                           ("O200K", "o200k"), ("words", None)])
def test_a_misspelt_pattern_name_is_refused_naming_the_names(pattern, near, tmp_path):
    # a misspelt name was read as a regex matching only itself: Tokenizer(..., pattern="GPT2").encode("ab cd")
    # was [] and training learned nothing, without a word
    from bpe_fast import Tokenizer, count_pretokens, train_bpe

    hint = f"did you mean {near!r}" if near else "give a name or a regex"
    path = tmp_path / "c.txt"
    path.write_text("ab cd ab")
    for make in (lambda: Tokenizer({i: bytes([i]) for i in range(256)}, [], pattern=pattern),
                 lambda: train_bpe(path, 260, pattern=pattern),
                 lambda: count_pretokens(path, pattern=pattern)):
        with pytest.raises(ValueError, match=rf"pattern '{pattern}' is not a built-in pattern's name.*{hint}"):
            make()
    assert count_pretokens(path, pattern=r"\w+|\s") == {b"ab": 2, b"cd": 1, b" ": 2}     # a regex still is one


def test_tiktoken_reads_a_one_word_pat_str_as_a_regex_and_so_does_encoding():
    # tiktoken.Encoding(pat_str="a") is a regex matching "a": bpe_fast.Encoding keeps that reading (in a group)
    from bpe_fast import Encoding

    ranks = {bytes([i]): i for i in range(256)}
    enc = Encoding("x", pat_str="ab", mergeable_ranks=ranks, special_tokens={})
    assert enc.encode("ab cd ab") == [97, 98, 97, 98]


# ---- can_match_empty: read from a regex's structure, checked against `regex` itself --------------------------

_ATOMS = ["a", "b", "[ab]", "[^a]", r"\p{L}", ".", r"\d", "[]a]", r"\{", "a{"]
_ASSERTIONS = ["^", "$", r"\b", r"\B", r"\A", r"\z", r"\Z", "(?=a)", "(?!a)", "(?<=a)", "(?<!b)", "(?=b|$)"]
_COUNTS = ["*", "+", "?", "{0}", "{1}", "{2}", "{0,2}", "{1,2}", "{,2}", "{2,}"]


def _regexes(assertions):
    atoms = st.sampled_from(_ATOMS + (_ASSERTIONS if assertions else []))

    def grow(inner):
        concat = st.lists(inner, min_size=1, max_size=3).map("".join)
        groups = st.tuples(st.sampled_from(["(?:", "(?>", "(?P<n>", "(?i:", "(?|"]), st.lists(concat, min_size=1,
                                                                                           max_size=3))
        counted = st.tuples(inner, st.sampled_from(_COUNTS), st.sampled_from(["", "?", "+"]))
        return st.one_of(concat, groups.map(lambda g: g[0] + "|".join(g[1]) + ")"),
                         counted.map(lambda c: f"(?:{c[0]}){c[1]}{c[2]}"), st.lists(concat, max_size=3).map("|".join))

    return st.recursive(atoms, grow, max_leaves=8)


def _compiles(pattern):
    """Whether `regex` compiles it (in the test, not the strategy: compiling draws on `random`, for its cache)."""
    try:
        regex.compile(pattern)
    except regex.error:
        return False
    return True


_TEXTS = ["", "a", "b", "ab", "ba", "aab", "abba", " a\nb ", "xyz", "a\n", "\nb"]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(_regexes(assertions=False))
def test_can_match_empty_without_assertions_is_whether_it_matches_empty_text(pattern):
    assume(_compiles(pattern))
    assert can_match_empty(pattern) == (regex.fullmatch(pattern, "") is not None)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(_regexes(assertions=True))
def test_can_match_empty_is_true_for_every_regex_with_an_empty_match(pattern):
    assume(_compiles(pattern))
    rx = regex.compile(pattern)
    empty = any(rx.match(text, k) is not None and rx.match(text, k).end() == k
                for text in _TEXTS for k in range(len(text) + 1))
    if empty:
        assert can_match_empty(pattern)


@pytest.mark.parametrize("pattern, empty", [
    (r"(?=q)|\p{L}+|\s+", True), (r"z*(?=zz)|\p{L}+", True), (r"a{2}?|a", False), (r"a{0,3}", True),
    (r"(?x) a * ", True), (r"(?x) a  # a comment *", False), (r"(?#c)|a", True), (r"(?P<x>ab)", False),
    (r"(?'x'a*)", True), (r"\b", True), (r"\ba", False), (r"[*]", False), (r"[]*]", False), (r"a\K", True),
    *((pattern, False) for pattern in PATTERNS),
])
def test_can_match_empty_examples(pattern, empty):
    assert can_match_empty(pattern) is empty


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=st.text(max_size=300), then=st.text(max_size=300),
       errors=st.sampled_from(["strict", "replace"]), bad=st.booleans())
def test_arrays_with_release_are_the_arrays_and_leave_an_empty_counter(first, then, errors, bad):
    # release frees the counter's table before the arrays are made (a caller done with it); the arrays are the
    # same, and the counter is then empty and counts afresh (oracle: a counter given only the later text)
    from bpe_fast.pretokenize import ChunkCounter
    data = first.encode("utf-8", "surrogatepass") + (b"\xff" if bad and errors == "replace" else b"")
    kept, released = (ChunkCounter(["<|e|>"], GPT2_PATTERN, errors).add(data) for _ in range(2))
    want = kept.arrays()
    got = released.arrays(release=True)
    assert all(a.tolist() == b.tolist() for a, b in zip(got, want))
    assert released.to_dict() == {} and released.arrays()[0].size == 0 and released.arrays()[1].tolist() == [0]
    later = then.encode("utf-8", "surrogatepass")
    assert released.add(later).to_dict() == ChunkCounter(["<|e|>"], GPT2_PATTERN, errors).add(later).to_dict()


def test_the_native_counter_released_holds_nothing():
    from bpe_fast import _scan
    from bpe_fast.pretokenize import native_tables
    counter = _scan.PretokenCounter(native_tables(), 2, [b"<|e|>"]).add(b"a b a<|e|>a")
    assert (len(counter), counter.total()) == (3, 4)
    tokens, offsets, counts = counter.arrays(release=True)
    assert (tokens.tobytes(), offsets.tolist(), counts.tolist()) == (b"a b a", [0, 1, 3, 5], [2, 1, 1])
    assert (len(counter), counter.total(), counter.to_dict()) == (0, 0, {})
    assert counter.add(b" b b").to_dict() == {b" b": 2}


@pytest.mark.parametrize("pattern, named", [(r"a\Ka+|\s", r"\\K"), (r"\p{L}\K\p{L}+|\p{L}|\s+|\S", r"\\K"),
                                            (r"(?r)\S+|\s+", r"\(\?r\)"), (r"(?r:\w+)|\s+", r"\(\?r\)")])
def test_patterns_a_tokenizer_cannot_cut_by_are_refused(pattern, named):
    # helper-148: with \K the stream encoder cut where the next match reported its start, dropping the text
    # before it (encode_iterable([" ", "aaa "]) lost an "a"); with (?r) the ids of a text came in reverse order
    # and a stream's pieces were duplicated and lost. Refused wherever a pattern is taken.
    import regex
    from bpe_fast import Tokenizer, count_pretokens
    assert regex.compile(pattern)                   # `regex` itself takes them
    with pytest.raises(ValueError, match=named + r".*not supported"):
        Tokenizer({i: bytes([i]) for i in range(256)}, [], pattern=pattern)
    with pytest.raises(ValueError, match=named + r".*not supported"):
        count_pretokens(["ab cd"], pattern=pattern)
    with pytest.raises(ValueError, match=named + r".*not supported"):
        P.pretokenize("ab cd", pattern)


@pytest.mark.parametrize("pattern", [r"[K\\]+|\s", r"\\K|\w+|\s", r"arr|(?i:r)|\s", r"\w+(?# no \K here)|\s"])
def test_a_k_or_r_that_is_no_keep_out_nor_reverse_flag_is_taken(pattern):
    import regex
    assert P.pretokenize("K\\K rr", pattern) == regex.findall(pattern, "K\\K rr")


def test_counting_a_text_with_a_lone_surrogate_names_it():
    # a custom pattern's path raised UnicodeEncodeError from encoding its pre-tokens (helper-148)
    for pattern in ("gpt2", r"\S+|\s+"):
        with pytest.raises(ValueError, match="lone surrogate at character 1"):
            P.count_pretokens_text("x\ud800y", pattern)


@pytest.mark.parametrize("pattern, errors", [(GPT2_PATTERN, "replace"), (r"\w+|\s+|[^\w\s]+", "strict"),
                                             (r"\w+|\s+|[^\w\s]+", "replace")],
                         ids=["gpt2-replace", "custom-strict", "custom-replace"])
def test_add_documents_takes_a_bytearray_or_memoryview_whatever_counts_it(pattern, errors):
    # the native counter took them; the documents' Python path (a custom pattern, or invalid UTF-8 decoded with
    # errors="replace") called data.tobytes(), an AttributeError for a bytearray (oracle: decode, split, regex)
    import numpy as np
    data = (b"a\xff<a>b c" if errors == "replace" else b"ab<a>b c") + b" \xc3\xa9"
    bounds = np.array([0, 2, 5, len(data)], dtype=np.int64)
    want = Counter()
    for k in range(3):
        want += oracle_counts(data[bounds[k]:bounds[k + 1]].decode("utf-8", errors), ["<a>"], pattern)
    for given_data in (bytearray(data), memoryview(data), np.frombuffer(data, dtype=np.uint8)):
        assert P.ChunkCounter(["<a>"], pattern, errors).add_documents(given_data, bounds).to_dict() == dict(want)


def test_boundaries_check_unicode_for_every_pattern():
    # a misspelt unicode was refused for a built-in pattern only; a custom pattern's call took it silently
    for pattern in ("gpt2", r"\w+| \w+"):
        assert P.pretoken_boundaries(b"a b", pattern, unicode="16.0").tolist() == [0, 1, 3]
        with pytest.raises(ValueError, match="unicode must be None"):
            P.pretoken_boundaries(b"a b", pattern, unicode="16")


@pytest.mark.parametrize("errors", ["surrogateescape", "surrogatepass"])
def test_an_error_handler_that_makes_lone_surrogates_is_refused_at_once(errors):
    # accepted before, then an add() of bad bytes failed with a message about a lone surrogate in the text
    with pytest.raises(ValueError, match=f"errors='{errors}' decodes bad bytes to lone surrogates"):
        P.ChunkCounter(errors=errors)
    with pytest.raises(ValueError, match="lone surrogates"):
        P.count_chunk(b"abc\xff def", errors=errors)


def test_errors_ignore_drops_the_bad_bytes():
    # as bytes.decode(errors="ignore") then the reference pre-tokenization
    import regex
    data = b"abc\xff def\xc3"
    want = {}
    for piece in regex.findall(GPT2_PATTERN, data.decode("utf-8", "ignore")):
        want[piece.encode()] = want.get(piece.encode(), 0) + 1
    assert P.count_chunk(data, errors="ignore") == want
