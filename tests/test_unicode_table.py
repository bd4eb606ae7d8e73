"""The native scanner's code point classes against the installed `regex`, for every code point."""
import gc
import importlib
import pathlib
import runpy
import subprocess
import sys
import types
import warnings
from collections import Counter

import numpy as np
import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from bpe_fast.patterns import GPT2_PATTERN, GPT4_PATTERN, O200K_PATTERN

P = importlib.import_module("bpe_fast.pretokenize")
table = importlib.import_module("bpe_fast._unicode_table")

L, N, S, NL, U, W, PS, HAN = 1, 2, 4, 8, 16, 32, 64, 128       # the class bits of bpe_fast/_scan.pyx


@pytest.fixture(scope="module")
def tables():
    """The package's bpe_fast._scan.UnicodeTables."""
    assert P.native_kind(GPT2_PATTERN), "the native scanner is not active (build bpe_fast/_scan.pyx)"
    return P.native_tables()


@pytest.fixture(scope="module")
def every_code_point():
    """All of 0..0x10FFFF, surrogates included, as one str."""
    return np.arange(0x110000, dtype="<u4").tobytes().decode("utf-32-le", "surrogatepass")


def _matching(rx, text):
    hits = np.zeros(len(text), dtype=bool)
    hits[[m.start() for m in regex.finditer(rx, text)]] = True
    return hits


def test_every_code_point_is_classified_as_regex_does(tables, every_code_point):
    classes = np.frombuffer(tables.classify_all(), dtype=np.uint8)
    assert len(classes) == 0x110000
    for bit, rx in ((L, r"\p{L}"), (N, r"\p{N}"), (S, r"\s"), (NL, r"[\r\n]"),
                    (U, r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]"), (W, r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]"), (PS, r"[\p{P}\p{S}]"),
                    (HAN, r"\p{Han}")):
        expected = _matching(rx, every_code_point)
        wrong = np.flatnonzero(((classes & bit) != 0) != expected)
        assert wrong.size == 0, f"{rx}: table differs from regex at {[hex(c) for c in wrong[:10]]}"
    # Worked example: 'a' is a letter, '٣' (ARABIC-INDIC DIGIT THREE) a number, U+3000 a space, '\n' a space
    # and a line break, '!' none of them; o200k's case classes: 'a' is lower (W), 'A' upper (U), '中' (Lo) and
    # U+0301 (a combining mark, not a letter) both; '!' and '$' are DeepSeek's punctuation and symbols; '中' is Han.
    assert [classes[ord(c)] for c in "a٣\u3000\n!A中\u0301$"] == [L | W, N, S, S | NL, PS, L | U, L | U | W | HAN, U | W,
                                                                PS]


def test_every_code_point_folds_to_the_contraction_letters_as_regex_does(tables, every_code_point):
    # (?i:s) in GPT-4's contractions also matches U+017F LATIN SMALL LETTER LONG S; the table must say so.
    expected = {}
    for letter in P.CONTRACTION_LETTERS:
        for m in regex.finditer(f"(?i:{letter})", every_code_point):
            assert m.start() not in expected, "a code point folding to two contraction letters"
            expected[m.start()] = letter
    assert expected[0x17F] == "s" and 0x212A not in expected      # KELVIN SIGN folds to k: not a contraction
    got = {cp: f for cp in range(0x110000) if (f := tables.fold_letter(cp))}
    assert got == expected


def test_committed_table_is_what_the_generator_writes():
    if table.REGEX_VERSION != regex.__version__:
        pytest.skip(f"table made with regex {table.REGEX_VERSION}, regex {regex.__version__} installed")
    tool = runpy.run_path(str(pathlib.Path(__file__).parent.parent / "tools" / "gen_unicode_table.py"))
    with open(table.__file__, encoding="utf-8") as f:
        assert f.read() == tool["render"](P.regex_unicode_classes())


RANGES = ("LETTER", "NUMBER", "SPACE", "UPPER", "LOWER", "PUNCT_SYMBOL", "HAN")


def _fake_table(**changes):
    fields = {k: getattr(table, k) for k in ("REGEX_VERSION", *RANGES, "FOLDS")}
    fields.update(changes)
    fields["STAMP"] = P.table_stamp(fields["REGEX_VERSION"], [fields[k] for k in RANGES], fields["FOLDS"])
    return types.SimpleNamespace(**fields)


def test_table_check_accepts_the_committed_table():
    if table.REGEX_VERSION != regex.__version__:
        pytest.skip(f"table made with regex {table.REGEX_VERSION}, regex {regex.__version__} installed")
    assert P._table_problem(table) == ""


def test_installed_regex_table_is_the_committed_one_for_its_release():
    rebuilt = P.installed_regex_table()
    assert P._table_problem(_fake_table(**{k: getattr(rebuilt, k) for k in ("REGEX_VERSION", *RANGES, "FOLDS")})) == ""
    if table.REGEX_VERSION == regex.__version__:
        assert [getattr(rebuilt, k) for k in RANGES] == [getattr(table, k) for k in RANGES]


def test_table_check_notices_a_hand_edit():
    edited = _fake_table()
    edited.LETTER = edited.LETTER[:-2]                 # stamp no longer matches
    assert "stamp" in P._table_problem(edited)


def test_table_check_compares_every_code_point_when_regex_is_another_release():
    now = P.installed_regex_table()          # the installed regex's contents, whatever its release
    contents = {k: getattr(now, k) for k in (*RANGES, "FOLDS")}
    # Same contents, other regex release: the full comparison passes.
    assert P._table_problem(_fake_table(**contents, REGEX_VERSION="0.0")) == ""
    # A regex whose Unicode has one more letter than the table (simulated by dropping the last letter range).
    stale = _fake_table(**{**contents, "LETTER": now.LETTER[:-2]}, REGEX_VERSION="0.0")
    assert r"\p{L}" in P._table_problem(stale)
    stale = _fake_table(**{**contents, "FOLDS": {**now.FOLDS, "s": (0x53, 0x73)}}, REGEX_VERSION="0.0")
    assert "case-folds" in P._table_problem(stale)


def test_another_regex_release_means_a_table_from_that_regex(monkeypatch):
    # A regex release whose Unicode differs from the committed table: the scanner stays native, with the
    # classes taken from the installed regex, so it still agrees with it.
    monkeypatch.setattr(P, "_scan", None)
    monkeypatch.setattr(P, "_tables", None)
    monkeypatch.setattr(P, "_native_checked", False)
    monkeypatch.setattr(P, "_installed_checked", False)
    monkeypatch.setattr(P, "_regex_problem", lambda t: "regex 9.9 disagrees on \\p{L}")
    rebuilt = []
    real = P.installed_regex_table
    monkeypatch.setattr(P, "installed_regex_table", lambda: rebuilt.append(1) or real())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert P.native_kind(GPT4_PATTERN) == 4
        assert P.native_tables() is not None
    assert rebuilt == [1]
    text = "Hello  world's 123\n ſ'ſ Ǆ٣"
    assert P.pretokenize(text, GPT4_PATTERN) == regex.findall(GPT4_PATTERN, text)


def test_a_hand_edited_table_means_regex_with_a_warning(monkeypatch):
    monkeypatch.setattr(P, "_scan", None)
    monkeypatch.setattr(P, "_tables", None)
    monkeypatch.setattr(P, "_native_checked", False)
    monkeypatch.setattr(P, "_installed_checked", False)
    monkeypatch.setattr(table, "STAMP", "0" * 16)
    with pytest.warns(RuntimeWarning, match="stamp"):
        assert P.native_kind(GPT4_PATTERN) == 0
    text = "Hello  world's 123\n"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert P.pretokenize(text, GPT4_PATTERN) == regex.findall(GPT4_PATTERN, text)
        assert P.count_chunk(text.encode(), None, GPT2_PATTERN) == {b"Hello": 1, b" ": 1, b" world": 1, b"'s": 1,
                                                                     b" 123": 1, b"\n": 1}
    assert P.native_tables() is None


def test_unicode_tables_are_objects_side_by_side(tables):
    # Each UnicodeTables is its own: a fresh one scans as regex does beside the package's, and one whose '-' is
    # a letter (in that object only) scans "well-known" as one word without changing what the others do.
    scan = importlib.import_module("bpe_fast._scan")
    stage1, stage2, fold_cps, fold_letters = P.table_arrays(table if P._table_problem(table) == ""
                                                           else P.installed_regex_table())
    fresh = scan.UnicodeTables(stage1, stage2, fold_cps, fold_letters)
    odd_stage2 = np.array(stage2)      # (a copy: the tables are array.array buffers)
    odd_stage2[int(stage1[0]) * 256 + ord("-")] |= L | W         # a lower-case letter
    odd = scan.UnicodeTables(stage1, odd_stage2, fold_cps, fold_letters)
    assert fresh.classify_all() == tables.classify_all() != odd.classify_all()
    text = "A well-known fact:  ſ'ſ DON'T 123456\r\n  Ǆ٣ x "
    data = text.encode()
    for pattern, kind in ((GPT2_PATTERN, 2), (GPT4_PATTERN, 4), (O200K_PATTERN, 5)):
        want = regex.findall(pattern, text)
        assert scan.split(fresh, data, kind) == want == scan.split(tables, data, kind)
        assert "".join(scan.split(odd, data, kind)) == text and "well-known" in "|".join(scan.split(odd, data, kind))
        assert scan.boundaries(fresh, data, kind).tolist() == [0, *np.cumsum([len(w.encode()) for w in want])]
        assert scan.count(fresh, data, kind) == {w.encode(): n for w, n in Counter(want).items()}
        assert scan.split(fresh, data, kind) == want                  # unchanged by the odd one
    assert scan.trailing_space(fresh, data) == len(data) - 1 and scan.trailing_space(odd, "x\u3000".encode()) == 1
    with pytest.raises(TypeError):
        scan.boundaries(None, data, 2)
    with pytest.raises(ValueError, match="0x1100"):
        scan.UnicodeTables(stage1[:-1], stage2, fold_cps, fold_letters)
    with pytest.raises(ValueError, match="past the end"):
        scan.UnicodeTables(stage1, stage2[:256], fold_cps, fold_letters)
    odd_stage2[int(stage1[0]) * 256 + ord("-")] = L                  # a letter neither upper nor lower
    with pytest.raises(ValueError, match="upper"):
        scan.UnicodeTables(stage1, odd_stage2, fold_cps, fold_letters)


def _plain_two_level_table(classes):
    """The oracle: every code point's bits, then the blocks of 256 numbered as they first appear (a dict)."""
    flat = bytearray(0x110000)
    for bit, ranges in zip((1, 2, 4, 16, 32, 64, 128), classes):
        for start, stop in zip(ranges[0::2], ranges[1::2]):
            for cp in range(start, stop):
                flat[cp] |= bit
    flat[0x0A] |= 8
    flat[0x0D] |= 8
    blocks = {}
    stage1 = [blocks.setdefault(bytes(flat[k * 256:(k + 1) * 256]), len(blocks)) for k in range(0x1100)]
    return stage1, b"".join(blocks)


def _sorted_ranges(cuts):
    points = sorted(set(cuts))
    return points[:len(points) // 2 * 2]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.lists(st.integers(0, 0x110000) | st.integers(0, 600), max_size=12).map(_sorted_ranges),
                min_size=7, max_size=7))
def test_two_level_table_is_the_plain_one(classes):
    # the native build of the scanner's table (pretokenize.table_arrays) against a loop over every code point;
    # and the package's own two tables, whose blocks repeat (most of the code space is one block)
    scan = importlib.import_module("bpe_fast._scan")
    stage1, stage2 = scan.two_level_table([np.array(c, dtype=np.int64) for c in classes])
    want1, want2 = _plain_two_level_table(classes)
    assert np.asarray(stage1).dtype == np.uint16 and stage1.tolist() == want1 and stage2.tobytes() == want2


@pytest.mark.parametrize("module", ["_unicode_table", "_unicode_table_peers"])
def test_the_packages_two_level_tables_are_the_plain_ones(module):
    table = importlib.import_module(f"bpe_fast.{module}")
    stage1, stage2, _, _ = P.table_arrays(table)
    want1, want2 = _plain_two_level_table(P._ranges_of(table))
    assert stage1.tolist() == want1 and stage2.tobytes() == want2


def test_two_level_table_refuses_ranges_it_cannot_read():
    scan = importlib.import_module("bpe_fast._scan")
    none = np.zeros(0, dtype=np.int64)
    for bad, match in (([5, 3], "range 0 .5, 3. is not sorted"), ([0, 0x110001], "not sorted within"),
                       ([4, 8, 2, 3], "range 1 .2, 3."), ([1, 2, 3], "odd number")):
        with pytest.raises(ValueError, match=match):
            scan.two_level_table([none, np.array(bad, dtype=np.int64)] + [none] * 5)
    with pytest.raises(ValueError, match="7 classes"):
        scan.two_level_table([none] * 6)


def test_a_unicode_tables_needs_nothing_called_first(tmp_path):
    # In a fresh interpreter, before anything loaded the scanner: a UnicodeTables built from the arrays
    # pretokenize builds is all _scan.boundaries needs.
    code = """if True:
        import importlib, regex
        P = importlib.import_module("bpe_fast.pretokenize")
        from bpe_fast import _scan, _unicode_table as table
        from bpe_fast.patterns import GPT4_PATTERN
        assert not P._native_checked and P._tables is None
        tables = _scan.UnicodeTables(*P.table_arrays(table))
        text = "Hello  world's 123\\n ſ'ſ"
        want = [0]
        for w in regex.findall(GPT4_PATTERN, text):
            want.append(want[-1] + len(w.encode()))
        assert _scan.boundaries(tables, text.encode(), 4).tolist() == want
        assert not P._native_checked and P._tables is None
        print("ok")
    """
    # cwd: not the repository, whose uncompiled bpe_fast/ would shadow the installed package
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0 and out.stdout == "ok\n", out.stderr


def test_threads_asking_for_the_tables_at_once_all_get_them(tmp_path):
    # In a fresh interpreter two threads build tokenizers at the same moment (a barrier both reach): both must
    # get the native scanner (one waits while the other builds the tables), none the slow `regex` path.
    code = """if True:
        import threading
        from bpe_fast import Tokenizer
        barrier = threading.Barrier(2)
        made = []
        def build():
            barrier.wait()
            made.append(Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|e|>"]))
        threads = [threading.Thread(target=build) for _ in range(2)]
        for t in threads: t.start()
        for t in threads: t.join()
        assert len(made) == 2 and all(t._segmenter is not None for t in made), [t._segmenter for t in made]
        print("ok")
    """
    for _ in range(3):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert out.returncode == 0 and out.stdout == "ok\n", out.stderr


def test_scanners_keep_their_tables_alive():
    # A counter and a segmenter hold the UnicodeTables they were given: dropping the caller's reference and
    # collecting leaves the counter scanning as before.
    encode = importlib.import_module("bpe_fast._encode")
    scan = importlib.import_module("bpe_fast._scan")
    tables = scan.UnicodeTables(*P.table_arrays(table if P._table_problem(table) == "" else P.installed_regex_table()))
    base = sys.getrefcount(tables)
    counter = scan.PretokenCounter(tables, 2, [b"<|e|>"])
    segmenter = encode.Segmenter(tables, 2, [b"<|e|>"], [256])
    assert sys.getrefcount(tables) == base + 2 and segmenter.kind == 2
    del tables
    gc.collect()
    pieces = ["Hello world", " again, world's"]
    counter.add("<|e|>".join(pieces).encode())
    assert counter.to_dict() == {w.encode(): n for w, n in Counter(w for p in pieces
                                                                    for w in regex.findall(GPT2_PATTERN, p)).items()}
