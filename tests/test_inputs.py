"""Corpus inputs: compressed files, JSON lines, Parquet, iterables, directories, globs, caps. The counts and
merges must not depend on how the text arrives; each is checked against the plain-Python oracle on the
same text (documents joined by a special token, which splits the text as document boundaries do)."""
import bz2
import errno
import functools
import gzip
import itertools
import json
import lzma
import os
import random
import re
import warnings
import zlib

import numpy as np
import pytest
import regex
from hypothesis import HealthCheck, example, given, settings, strategies as st

from bpe_fast import GPT2_PATTERN, GPT4_PATTERN, count_pretokens, train_bpe
from bpe_fast.chunking import last_safe_cut
from bpe_fast.inputs import CorpusDecodeError, InputError
from bpe_fast.patterns import O200K_PATTERN, SHORT_NAMES

from corpora import EOT, make_corpus
from train_oracle import oracle_count_pretokens, oracle_train_bpe

try:                                    # the parquet and zstd extras (both in .[test]): only the tests that
    import pyarrow                      # read such files need them
    import pyarrow.parquet as pq
except ImportError:
    pyarrow = pq = None
try:
    import zstandard
except ImportError:
    zstandard = None
needs_pyarrow = pytest.mark.skipif(pyarrow is None, reason="pyarrow (the parquet extra) is not installed")
needs_zstandard = pytest.mark.skipif(zstandard is None, reason="zstandard (the zstd extra) is not installed")


def documents(seed, n=40):
    """Documents with every script, whitespace runs, CRLF, empty ones and one long one."""
    rng = np.random.default_rng(seed)
    docs = [make_corpus(seed * 1000 + k, n_words=int(rng.integers(0, 60))) for k in range(n)]
    docs[3] = ""
    docs[7] = make_corpus(seed + 99, n_words=3000)
    return docs


def write_text(path, text, opener=open):
    with opener(path, "wb") as f:
        f.write(text.encode("utf-8"))


def write_jsonl(path, docs, opener=open, field="text"):
    with opener(path, "wb") as f:
        for d in docs:
            f.write((json.dumps({"id": 1, field: d}, ensure_ascii=False) + "\n").encode("utf-8"))


def write_parquet(path, docs, row_group_size=7):
    pq.write_table(pyarrow.table({"n": list(range(len(docs))), "text": docs}), path, row_group_size=row_group_size)


def zst_open(path, mode):
    return zstandard.open(path, mode)


def oracle_docs(docs, specials=(EOT,), pattern=GPT2_PATTERN):
    return oracle_count_pretokens(EOT.join(docs), list(specials), pattern)


# ---- the same counts whichever way the text arrives ----------------------------------------------

def every_form(tmp_path, docs):
    """The same documents as each kind of input."""
    text = EOT.join(docs)
    forms = {}
    write_text(tmp_path / "c.txt", text)
    forms["txt"] = tmp_path / "c.txt"
    for ext, opener in ((".gz", gzip.open), (".bz2", bz2.open), (".xz", lzma.open), (".zst", zst_open)):
        write_text(tmp_path / f"c.txt{ext}", text, opener)
        forms["txt" + ext] = tmp_path / f"c.txt{ext}"
    write_jsonl(tmp_path / "c.jsonl", docs)
    forms["jsonl"] = tmp_path / "c.jsonl"
    write_jsonl(tmp_path / "c.jsonl.gz", docs, gzip.open)
    forms["jsonl.gz"] = tmp_path / "c.jsonl.gz"
    write_jsonl(tmp_path / "c.json", docs)            # HF datasets' to_json writes JSON lines under .json
    forms["json"] = tmp_path / "c.json"
    write_jsonl(tmp_path / "c.json.gz", docs, gzip.open)      # as C4's shards (c4-train.00000-of-01024.json.gz)
    forms["json.gz"] = tmp_path / "c.json.gz"
    write_parquet(tmp_path / "c.parquet", docs)
    forms["parquet"] = tmp_path / "c.parquet"
    forms["iter-str"] = lambda: iter(docs)
    forms["iter-bytes"] = lambda: (d.encode("utf-8") for d in docs)
    forms["iter-dict"] = lambda: ({"text": d, "x": 0} for d in docs)
    return forms


@needs_pyarrow
@needs_zstandard
@pytest.mark.parametrize("num_processes", [1, 2])
def test_every_input_kind_gives_the_oracle_counts(tmp_path, num_processes):
    docs = documents(1)
    expected = oracle_docs(docs)
    for name, form in every_form(tmp_path, docs).items():
        inp = form() if callable(form) else form
        got = count_pretokens(inp, [EOT], num_processes=num_processes, chunk_bytes=3000)
        assert got == expected, name


@needs_pyarrow
@needs_zstandard
def test_every_input_kind_gives_the_oracle_merges(tmp_path):
    docs = documents(2)
    _, expected = oracle_train_bpe(EOT.join(docs), 256 + 1 + 60, [EOT], GPT2_PATTERN)
    for name, form in every_form(tmp_path, docs).items():
        inp = form() if callable(form) else form
        _, merges = train_bpe(inp, 256 + 1 + 60, [EOT], num_processes=2, chunk_bytes=2000)
        assert merges == expected, name


def test_a_json_file_is_json_lines_only_when_its_first_line_is_a_record(tmp_path):
    # a .json file of JSON lines (C4's .json.gz, HF datasets' to_json) was counted as text: its keys, quotes and
    # escapes became pre-tokens; any other .json (a package.json, an array, a one-line object without the text
    # field) is still text, as a source tree's files are
    docs = ["Hello world\n", "naïve café", "x = 1"]
    records = "".join(json.dumps({"url": "http://a.b/c", "text": d, "timestamp": "2019-04-25"}) + "\n" for d in docs)
    (tmp_path / "c4.json").write_text(records)
    assert count_pretokens(str(tmp_path / "c4.json"), [EOT], num_processes=1) == oracle_docs(docs)
    (tmp_path / "c4.json").write_text("\n \n" + records)          # blank lines first, as JSON lines may have
    assert count_pretokens(str(tmp_path / "c4.json"), [EOT], num_processes=1) == oracle_docs(docs)
    content = "".join(json.dumps({"content": d}) + "\n" for d in docs)
    (tmp_path / "code.json").write_text(content)
    assert count_pretokens(str(tmp_path / "code.json"), [EOT], num_processes=1, text_field="content") \
        == oracle_docs(docs)
    assert count_pretokens(str(tmp_path / "code.json"), [EOT], num_processes=1) == oracle_docs([content])
    for text in ['{\n  "name": "pkg",\n  "text": "not a record"\n}\n',        # pretty-printed: "{" alone
                 '[{"text": "a"}, {"text": "b"}]\n',                           # an array
                 '{"name": "pkg", "version": "1.0"}\n{"text": "b"}\n',        # no text field on line 1
                 '{"text": 5}\n',                                             # not a str
                 '{"text": "unterminated\n']:                                 # not JSON
        (tmp_path / "other.json").write_text(text)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            assert count_pretokens(str(tmp_path / "other.json"), [EOT], num_processes=1) == oracle_docs([text]), text
        # a first line naming the field that is no JSON is most likely a damaged record: said (helper-115 #8)
        said = [str(w.message) for w in seen if "first line names the 'text' field" in str(w.message)]
        assert len(said) == (text == '{"text": "unterminated\n'), (text, said)
        assert all("other.json" in m and "read as plain text" in m and "Invalid control character" in m
                   for m in said)
    (tmp_path / "broken.json.gz").write_bytes(b"\x1f\x8b\x08\x00broken")   # read as text: the error names it
    with pytest.raises(InputError, match="broken.json.gz"):
        count_pretokens(str(tmp_path / "broken.json.gz"), [EOT], num_processes=1)


def test_a_document_boundary_splits_like_a_special_token(tmp_path):
    # "ab" and "cd" as two documents are never the pre-token "abcd"; as one text they are
    docs = ["ab", "cd", "ab", "cd"]
    assert count_pretokens(iter(docs), [], num_processes=1) == {b"ab": 2, b"cd": 2}
    assert count_pretokens(iter(["".join(docs)]), [], num_processes=1) == {b"abcdabcd": 1}


def test_paths_directories_and_globs(tmp_path):
    docs = documents(3, n=12)
    (tmp_path / "shards").mkdir()
    for k, d in enumerate(docs):      # one document a file: a file is one document
        write_text(tmp_path / "shards" / f"{k:02d}.txt", d)
    (tmp_path / "shards" / ".hidden").write_text("never read")
    expected = oracle_docs(docs)
    paths = [tmp_path / "shards" / f"{k:02d}.txt" for k in range(len(docs))]
    assert count_pretokens(paths, [EOT], num_processes=2) == expected
    assert count_pretokens(tmp_path / "shards", [EOT], num_processes=2) == expected
    assert count_pretokens(str(tmp_path / "shards" / "*.txt"), [EOT], num_processes=1) == expected
    assert count_pretokens(str(tmp_path / "shards" / "0*.txt"), [EOT]) == oracle_docs(docs[:10])


# a pattern the native scanner does not count (regex does: in a worker process, not a thread of the caller's)
WORDS_PATTERN = r"""\p{L}+| ?[^\s\p{L}]+|\s+"""


@pytest.mark.parametrize("procs", [1, 2])
@pytest.mark.parametrize("pattern", [GPT2_PATTERN, WORDS_PATTERN], ids=["native-threads", "regex-workers"])
def test_many_small_files_are_counted_together_as_each_alone(tmp_path, monkeypatch, procs, pattern):
    # a folder of 20,000 files of a few KB trained 5.6 times as slowly as one file of the same text: each file was
    # counted into a table of its own (and training read each common word once a file); small files are now
    # counted together, in runs the caller's threads (a native pattern) or the workers claim. Each is still a
    # document of its own, in every mix
    import bpe_fast.count_workers as cw
    from bpe_fast.pretokenize import ChunkCounter
    assert ChunkCounter([], pattern).native == (pattern == GPT2_PATTERN)
    monkeypatch.setattr(cw, "_IN_PROCESS_BYTES", 3000)     # files under 3,000 bytes are small; 3,000 bytes of
    docs = documents(21, n=60)                              # them start the workers
    docs[10] = docs[10] + EOT + "after the special token"
    docs[30] = make_corpus(77, n_words=900)                 # large files among them (and documents()' 7th):
    assert [k for k, d in enumerate(docs) if len(d.encode()) >= 3000] == [7, 30]   # counted alone, by ranges
    folder = tmp_path / "docs"
    folder.mkdir()
    for k, d in enumerate(docs):
        write_text(folder / f"{k:03d}.txt", d)
    paths = sorted(folder.iterdir())
    stats = {}
    tables = cw.count_input_tables(paths, [EOT], pattern, procs, stats=stats)
    assert len(tables) <= 5 * procs                          # not one a file: three runs of small files, two large
    total = {}
    for tokens, offsets, counts in tables:
        for j in range(len(counts)):
            word = bytes(tokens[offsets[j]:offsets[j + 1]])
            total[word] = total.get(word, 0) + int(counts[j])
    assert total == dict(oracle_docs(docs, pattern=pattern))
    assert stats == {"bytes": sum(len(d.encode()) for d in docs), "documents": 60}
    assert count_pretokens(folder, [EOT], pattern=pattern, num_processes=procs) == oracle_docs(docs, pattern=pattern)
    # capped: the first 20 files and some bytes of the 21st (cut at a character), or the first 45 files
    cut = sum(len(d.encode()) for d in docs[:20]) + 37
    head = (docs[20].encode()[:37]).decode("utf-8", "ignore")
    assert count_pretokens(folder, [EOT], pattern=pattern, num_processes=procs, max_bytes=cut) == \
        oracle_docs(docs[:20] + [head], pattern=pattern)
    assert count_pretokens(folder, [EOT], pattern=pattern, num_processes=procs, max_documents=45) == \
        oracle_docs(docs[:45], pattern=pattern)
    result = train_bpe(folder, 400, [EOT], pattern=pattern, num_processes=procs)
    assert result == oracle_train_bpe(EOT.join(docs), 400, [EOT], pattern)


def test_invalid_utf8_in_small_files_names_the_first_bad_file(tmp_path, monkeypatch):
    # whoever meets an error first, the one named is the first in the files' order, with its offset and line
    import bpe_fast.count_workers as cw
    monkeypatch.setattr(cw, "_IN_PROCESS_BYTES", 2000)
    folder = tmp_path / "docs"
    folder.mkdir()
    for k in range(80):
        data = make_corpus(500 + k, n_words=150).encode()[:1500]
        data = data[:len(data.decode("utf-8", "ignore").encode())]
        if k in (9, 70):
            data = data[:100] + b"\nline two \xff" + data[100:]
        (folder / f"{k:03d}.txt").write_bytes(data)
    line = (folder / "009.txt").read_bytes()[:100].count(b"\n") + 2
    for procs in (1, 2, 2):
        with pytest.raises(CorpusDecodeError) as err:
            count_pretokens(folder, num_processes=procs)
        assert err.value.path.endswith("009.txt") and err.value.offset == 110 and err.value.line == line, str(err.value)


def test_small_files_are_read_as_they_are_when_counted_and_the_first_failure_in_order_is_named(tmp_path, monkeypatch):
    # helper-116: sizes taken at listing made a file shortened since an error and one grown since cut (inside a
    # character, maybe); and a later missing file, met first by a worker, was named before an earlier bad one
    import os
    import bpe_fast.count_workers as cw
    monkeypatch.setattr(cw, "_IN_PROCESS_BYTES", 2000)
    (tmp_path / "grown.txt").write_text("héllo wörld " * 20, encoding="utf-8")
    (tmp_path / "shrunk.txt").write_text("ab", encoding="utf-8")
    files = [(str(tmp_path / "grown.txt"), 7, True), (str(tmp_path / "shrunk.txt"), 50, True)]
    tables = cw.count_small_files_tables(files, [], GPT2_PATTERN, 1, "strict", None)
    counted = {bytes(t[0][t[1][j]:t[1][j + 1]]): int(t[2][j]) for t in tables for j in range(len(t[2]))}
    assert counted == dict(oracle_docs(["héllo wörld " * 20, "ab"]))      # (EOT: the oracle's document break)
    with pytest.raises(OSError, match=r"shrunk\.txt changed while it was read"):        # a max_bytes cut: size is due
        cw.count_small_files_tables([(str(tmp_path / "shrunk.txt"), 50, False)], [], GPT2_PATTERN, 1, "strict", None)
    names = []
    for k in range(60):
        path = tmp_path / f"f{k:02d}.txt"
        path.write_bytes(make_corpus(900 + k, n_words=60).encode()[:700].decode("utf-8", "ignore").encode())
        names.append((str(path), os.path.getsize(path), True))
    (tmp_path / "f40.txt").write_bytes(b"ok \xff")
    names[40] = (names[40][0], 4, True)
    gone = [*names[:20], (str(tmp_path / "gone.txt"), 500, True), *names[20:]]
    for procs in (1, 2, 3):
        with pytest.raises(CorpusDecodeError, match=r"f40\.txt"):
            cw.count_small_files_tables(names, [], GPT2_PATTERN, procs, "strict", None)
        with pytest.raises(FileNotFoundError, match=r"gone\.txt"):
            cw.count_small_files_tables(gone, [], GPT2_PATTERN, procs, "strict", None)
        with pytest.raises(FileNotFoundError, match=r"gone\.txt"):       # replace: the bad bytes are no error
            cw.count_small_files_tables(gone, [], GPT2_PATTERN, procs, "replace", None)


def test_a_folder_passes_over_links_it_cannot_follow_as_a_glob_does(tmp_path):
    # os.DirEntry.is_file() raises for a loop of links, where os.path.isfile (and a glob) says False (helper-116)
    folder = tmp_path / "docs"
    folder.mkdir()
    write_text(folder / "a.txt", "hello world")
    (folder / "loop1").symlink_to(folder / "loop2")
    (folder / "loop2").symlink_to(folder / "loop1")
    (folder / "dangling").symlink_to(tmp_path / "nothing")
    expected = oracle_docs(["hello world"])
    assert count_pretokens(folder, [EOT], num_processes=1) == expected
    assert count_pretokens(str(folder / "*"), [EOT], num_processes=1) == expected


@needs_pyarrow
def test_mixed_list_of_inputs_in_order(tmp_path):
    docs = documents(4, n=9)
    write_text(tmp_path / "a.txt", docs[0])
    write_jsonl(tmp_path / "b.jsonl.gz", docs[1:5], gzip.open)
    write_parquet(tmp_path / "c.parquet", docs[5:8])
    write_text(tmp_path / "d.txt.xz", docs[8], lzma.open)
    paths = [tmp_path / n for n in ("a.txt", "b.jsonl.gz", "c.parquet", "d.txt.xz")]
    for procs in (1, 2):
        assert count_pretokens(paths, [EOT], num_processes=procs, chunk_bytes=500) == oracle_docs(docs)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(docs=st.lists(st.text(alphabet="ab c'\n\t1é日😀<|>", max_size=40), max_size=12),
       procs=st.sampled_from([1, 2]), pattern=st.sampled_from([GPT2_PATTERN, GPT4_PATTERN, O200K_PATTERN]))
def test_iterable_of_random_documents_equals_oracle(docs, procs, pattern):
    specials = ["<|>"]
    expected = oracle_count_pretokens("<|>".join(docs), specials, pattern)
    assert count_pretokens(iter(docs), specials, pattern=pattern, num_processes=procs, chunk_bytes=16) == expected


@settings(max_examples=60, deadline=None)
@given(docs=st.lists(st.tuples(st.text(alphabet="ab cé日😀", max_size=30), st.sampled_from(["str", "bytes", "dict", "sub"])),
                     max_size=700),
       chunk_bytes=st.sampled_from([1, 64, 4096]))
def test_iterable_of_mixed_items_in_pulls_equals_oracle(docs, chunk_bytes):
    # items are pulled a few at a time and plain-str pulls take the fast path: any mix of kinds, any batch size
    class Sub(str):
        pass
    forms = {"str": str, "bytes": lambda d: d.encode("utf-8"), "dict": lambda d: {"text": d}, "sub": Sub}
    items = [forms[kind](d) for d, kind in docs]
    expected = oracle_count_pretokens("<|>".join(d for d, _ in docs), ["<|>"], GPT2_PATTERN)
    assert count_pretokens(iter(items), ["<|>"], num_processes=1, chunk_bytes=chunk_bytes) == expected


@settings(max_examples=60, deadline=None)
@given(docs=st.lists(st.tuples(st.text(alphabet="ab cé日😀", max_size=30), st.sampled_from(["str", "bytes", "dict"])),
                     max_size=300),
       cuts=st.lists(st.integers(0, 300), max_size=12), chunk_bytes=st.sampled_from([1, 64, 4096]),
       procs=st.sampled_from([1, 2]), max_documents=st.one_of(st.none(), st.integers(0, 300)),
       columns=st.booleans())
@example(docs=[("a", "str"), ("b", "bytes")], cuts=[0, 0, 1, 1, 2, 2], chunk_bytes=1, procs=1, max_documents=None,
         columns=False)
@example(docs=[("a", "str"), ("b", "bytes")], cuts=[0, 0, 1, 1, 2, 2], chunk_bytes=1, procs=1, max_documents=None,
         columns=True)
def test_list_items_are_batches_of_documents(docs, cuts, chunk_bytes, procs, max_documents, columns):
    """HF's train_from_iterator takes lists of texts: a list item is a batch of documents (empty ones too),
    counted as its items one by one, with any other items around it. So is a mapping whose text field holds a
    list (columns), as HF datasets' iter(batch_size=...) gives them: it was a TypeError."""
    forms = {"str": str, "bytes": lambda d: d.encode("utf-8"), "dict": lambda d: {"text": d}}
    flat = [forms[kind](d) for d, kind in docs]
    bounds = sorted(min(c, len(flat)) for c in cuts)
    items: list = []
    for k, (a, b) in enumerate(zip([0] + bounds, bounds + [len(flat)])):
        batch = {"id": list(range(a, b)), "text": flat[a:b]} if columns else flat[a:b]
        items.extend([batch] if k % 2 else flat[a:b])      # every other run as one batch item
    taken = [d for d, _ in docs][:max_documents] if max_documents is not None else [d for d, _ in docs]
    expected = oracle_count_pretokens("<|>".join(taken), ["<|>"], GPT2_PATTERN)
    assert count_pretokens(iter(items), ["<|>"], num_processes=procs, chunk_bytes=chunk_bytes,
                           max_documents=max_documents) == expected


@pytest.mark.parametrize("procs", [1, 2])
@pytest.mark.parametrize("capped", [False, True])
def test_list_items_name_their_documents(procs, capped):
    cap = {"max_documents": 100} if capped else {}
    with pytest.raises(InputError, match="item 4 of the input holds a lone surrogate at character 1"):
        count_pretokens(iter(["a", ["b", "c"], ["d", "e\ud800", "f"]]), num_processes=procs, **cap)
    with pytest.raises(TypeError, match=r"item 2 of the input is a list inside a list item"):
        count_pretokens(iter(["a", ["b", ["c"]]]), num_processes=procs, **cap)
    with pytest.raises(TypeError, match=r"item 2 of the input: field 'text' is list; documents must be str"):
        count_pretokens(iter(["a", {"text": ["b", {"text": ["c"]}]}]), num_processes=procs, **cap)
    with pytest.raises(InputError, match="item 2 of the input holds a lone surrogate at character 0"):
        count_pretokens(iter(["a", {"text": ["b", "\ud800"]}]), num_processes=procs, **cap)
    with pytest.raises(TypeError, match=r"item 1 of the input is tuple"):
        count_pretokens(iter(["a", ("b", "c")]), num_processes=procs, **cap)


@pytest.mark.parametrize("at", [0, 5, 300, 999])
def test_a_lone_surrogate_names_its_item_among_many(at):
    docs = ["plain text"] * 1000
    docs[at] = "ab\ud800c"
    with pytest.raises(InputError, match=f"item {at} of the input holds a lone surrogate at character 2"):
        count_pretokens(iter(docs), num_processes=1, chunk_bytes=100)


@settings(max_examples=40, deadline=None)
@given(text=st.text(alphabet="ab c'\n\r\t1é日<e>", max_size=300), pattern=st.sampled_from([GPT2_PATTERN, GPT4_PATTERN,
                                                                                          O200K_PATTERN]))
def test_last_safe_cut_keeps_the_pretokens(text, pattern):
    data = text.encode("utf-8")
    specials = [b"<e>"]
    k = last_safe_cut(data, specials, True)
    if k is None:
        return
    assert 0 < k <= len(data) - 3
    left, right = data[:k].decode(), data[k:].decode()
    split = lambda t: [p for piece in t.split("<e>") for p in regex.findall(pattern, piece)]   # noqa: E731
    assert split(left) + split(right) == split(text)


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet="ab c'.,!?()|-_\n\r\t1\u00e9\u65e5<e>\u3002/A\n\u4e2d\u3000\u00a0\u2028", max_size=200),
       name=st.sampled_from(SHORT_NAMES))
@example(text="a.\n/x \u3002\n/y", name="o200k")       # o200k's and Tekken's punctuation runs take "/" after newlines
@example(text="\u3002\n/x", name="tekken")
@example(text="a \u3000\nb\u3000\n\u3000c\r\nd\n\ne", name="gpt2")     # white space either side of a newline
def test_every_built_in_patterns_space_cuts_keep_its_pretokens(text, name):
    # every cut the pattern's rule allows (chunking.cuts_at_spaces), not only the last: BLOOM's pieces starting
    # with punctuation run on into the spaces after it (a cut after "." split '. ': a review found it); the cuts
    # after a newline between other characters than white space (text without spaces) too, "/" excepted
    from bpe_fast.chunking import cuts_at_spaces
    from bpe_fast.patterns import resolve_pattern

    data = text.encode("utf-8")
    pattern = resolve_pattern(name)
    split = lambda t: [p for piece in t.split("<e>") for p in regex.findall(pattern, piece)]   # noqa: E731
    whole = split(text)
    for m in cuts_at_spaces(name).finditer(data):
        k = m.end()
        if b"<e>" in data[max(0, k - 2):k + 2] and data.find(b"<e>", max(0, k - 2)) < k:
            continue        # (inside a special token: chunking's own check)
        assert split(data[:k].decode()) + split(data[k:].decode()) == whole, (name, k)


def _covered_oracle(buf, k, specials):
    """Whether some occurrence of a special token starts before k and ends after it: every start tried."""
    return any(buf.startswith(tok, q) for tok in specials for q in range(max(0, k - len(tok) + 1), k))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(b"<|ab"), min_size=1, max_size=6).map(bytes), max_size=12),
       st.lists(st.sampled_from(b"<|ab x"), max_size=40).map(bytes))
def test_covered_is_every_occurrence_tried(specials, buf):
    # chunking's check that a cut splits no occurrence of a special token (any occurrence, overlapping ones too)
    # is the native trie's walk; a Python loop over each token and each start cost 0.6 s a MB of a compressed
    # corpus with 256 special tokens (helper-178)
    from bpe_fast.chunking import _matcher

    assert [_matcher(tuple(specials)).covered(buf, k) for k in range(len(buf) + 1)] == \
        [_covered_oracle(buf, k, specials) for k in range(len(buf) + 1)]


def test_last_safe_cut_worked_example():
    # "ab cd ef": cuts before each space that follows a printable; the last that leaves 1 byte (the margin)
    assert last_safe_cut(b"ab cd ef", [], True) == 5
    assert last_safe_cut(b"ab cd ef", [], False) is None
    assert last_safe_cut(b"x<e>yy", [b"<e>"], False) == 1
    assert last_safe_cut(b"x<e", [b"<e>"], False) is None        # "<e" may be the start of a special token
    assert last_safe_cut(b"x<e>y", [b"<e>", b"x<e>"], False) is None   # covered by the longer "x<e>"
    assert last_safe_cut("日 本".encode(), [], True) is None       # a space after a non-ASCII character
    from bpe_fast.chunking import cuts_at_spaces
    assert last_safe_cut(b"x.  y z", [], cuts_at_spaces("bloom")) == 5       # BLOOM's: not after "."
    assert last_safe_cut(b"x.  y", [], cuts_at_spaces("bloom")) is None
    assert last_safe_cut(b"x.  y", [], cuts_at_spaces("gpt2")) == 2
    # a newline between two characters other than white space (text without spaces, as Chinese): after it
    assert last_safe_cut("中。\n文。\nx".encode(), [], True) == len("中。\n文。\n".encode())
    assert last_safe_cut("中。\n文。\n\u3000x".encode(), [], True) == len("中。\n".encode())   # not before U+3000
    for no_cut in ("a\n/b", "a\t\nb", "a\u3000\nb", "a\r\nb", "a\n\nb"):     # "/" (o200k), white space
        assert last_safe_cut(no_cut.encode(), [], True) is None, no_cut
    assert cuts_at_spaces(r"\w+|\W") is None
    # shorter than the margin: "<|endoftext|>" may still come and cover the "x" (rfind read the negative end,
    # -1, as counted from the end of the buffer, and found that "x")
    assert last_safe_cut(b"<|endoftext", [b"<|endoftext|>", b"x"], False) is None


def test_compressed_text_in_many_pieces(tmp_path):
    text = make_corpus(5, n_words=20000, specials=[EOT])
    write_text(tmp_path / "big.txt.gz", text, gzip.open)
    got = count_pretokens(tmp_path / "big.txt.gz", [EOT], num_processes=2, chunk_bytes=4096)
    assert got == oracle_count_pretokens(text, [EOT], GPT2_PATTERN)


def test_a_long_stretch_without_a_safe_cut_is_searched_once_not_at_every_read(tmp_path, monkeypatch):
    # a compressed text read a MB at a time: while no safe cut came, each read copied everything read so far
    # and searched all of it again, quadratic (40 MB of one letter in a .gz took 12.8 s, the .txt 0.4 s);
    # each byte is now searched about once
    import bpe_fast.inputs as inputs
    size = 8 << 20
    write_text(tmp_path / "run.txt.gz", "a" * size, functools.partial(gzip.open, compresslevel=1))
    searched = []
    real = inputs.last_safe_cut

    def spy(buf, specials, space_cuts, after=0, **kw):
        searched.append(len(buf) - after)
        return real(buf, specials, space_cuts, after, **kw) if after else real(buf, specials, space_cuts, **kw)
    monkeypatch.setattr(inputs, "last_safe_cut", spy)
    assert count_pretokens(tmp_path / "run.txt.gz", [EOT], num_processes=1) == {b"a" * size: 1}
    assert len(searched) >= 4 and sum(searched) < 2 * size


@settings(max_examples=150, deadline=None)
@given(text=st.text("ab< \né", max_size=120), specials=st.lists(st.text("ab< é", min_size=1, max_size=4),
                                                                 max_size=3, unique=True),
       pattern=st.sampled_from([GPT2_PATTERN, GPT4_PATTERN, r"\S+|\s"]), read=st.integers(1, 9),
       batch=st.integers(1, 20), cap=st.none() | st.integers(0, 150))
def test_a_stream_read_a_few_bytes_at_a_time_counts_as_the_oracle(text, specials, pattern, read, batch, cap):
    # the reads of a compressed file or stdin, made tiny: pieces cut where the bytes read so far allow
    import io
    from unittest import mock
    import bpe_fast.inputs as inputs
    from bpe_fast.inputs import Stream
    data = text.encode()
    prefix = data if cap is None else data[:cap]
    while True:
        try:
            prefix = prefix.decode()
            break
        except UnicodeDecodeError:
            prefix = prefix[:-1]
    with mock.patch.object(inputs, "_READ_BYTES", read):
        got = count_pretokens(Stream("text", io.BytesIO(data), "s"), specials, pattern=pattern, num_processes=1,
                              chunk_bytes=batch, max_bytes=cap)
    assert got == oracle_count_pretokens(prefix, specials, pattern)


@pytest.mark.parametrize("num_processes", [1, 2])
def test_max_bytes_inside_a_special_token_of_a_compressed_file_keeps_the_pretokens_before_it(tmp_path, num_processes):
    # a piece was cut at the safe point before the special token, then the cap cut the token itself: its first
    # bytes, text again, were counted apart from the spaces before them ("   ", "<|" instead of "  ", " <|")
    text = "hello   " + EOT + " world"
    write_text(tmp_path / "c.txt.gz", text, gzip.open)
    for cap in range(len(text) + 1):
        for chunk_bytes in (1, 8, 100):
            got = count_pretokens(tmp_path / "c.txt.gz", [EOT], num_processes=num_processes, chunk_bytes=chunk_bytes,
                                  max_bytes=cap)
            assert got == oracle_count_pretokens(text[:cap], [EOT], GPT2_PATTERN), (cap, chunk_bytes)


# ---- caps ----------------------------------------------------------------------------------------

def utf8_prefix(text, n):
    data = text.encode("utf-8")[:n]
    return data.decode("utf-8", "ignore") if n < len(text.encode()) else text


@needs_pyarrow
@needs_zstandard
@pytest.mark.parametrize("max_bytes", [0, 1, 50, 777, 5000, 10 ** 9])
def test_max_bytes_takes_the_first_bytes_whatever_the_input(tmp_path, max_bytes):
    docs = documents(6, n=20)
    text = EOT.join(docs)
    prefix = text.encode("utf-8")[:max_bytes]
    while True:
        try:
            prefix = prefix.decode("utf-8")
            break
        except UnicodeDecodeError:
            prefix = prefix[:-1]
    expected = oracle_count_pretokens(prefix, [EOT], GPT2_PATTERN)
    for name in ("txt", "txt.gz", "txt.zst"):
        got = count_pretokens(every_form(tmp_path, docs)[name], [EOT], num_processes=2, chunk_bytes=300,
                              max_bytes=max_bytes)
        assert got == expected, name


@needs_pyarrow
@needs_zstandard
@pytest.mark.parametrize("max_bytes", [0, 3, 900, 10 ** 9])
def test_max_bytes_on_documents_cuts_the_last_one(tmp_path, max_bytes):
    docs = documents(7, n=15)
    taken, left = [], max_bytes
    for d in docs:
        data = d.encode("utf-8")
        if left == 0:
            break
        part = data[:left]
        while True:
            try:
                taken.append(part.decode("utf-8"))
                break
            except UnicodeDecodeError:
                part = part[:-1]
        left -= len(part) if len(part) == len(data) else left
    expected = oracle_docs(taken)
    forms = every_form(tmp_path, docs)
    for name in ("jsonl", "parquet", "iter-str"):
        inp = forms[name]() if callable(forms[name]) else forms[name]
        assert count_pretokens(inp, [EOT], num_processes=2, chunk_bytes=200, max_bytes=max_bytes) == expected, name


@needs_pyarrow
@needs_zstandard
def test_a_document_max_bytes_cuts_to_nothing_is_read_in_every_form(tmp_path):
    # ["ab", "é", "c"] at max_bytes=3: "é" is cut to no bytes (a character boundary), a document read all the
    # same as an iterable's, a JSON line's or a file's; Parquet's count left it out (1 document, not 2)
    docs = ["ab", "é", "c"]
    forms = every_form(tmp_path, docs)
    for name in ("jsonl", "parquet", "iter-str"):
        inp = forms[name]() if callable(forms[name]) else forms[name]
        corpus = train_bpe(inp, 256, num_processes=1, max_bytes=3).training["corpus"]
        assert (corpus["bytes"], corpus["documents"]) == (2, 2), name


@needs_pyarrow
@needs_zstandard
def test_empty_documents_after_max_bytes_is_reached_are_not_read(tmp_path):
    # ["ab", "", ""] at max_bytes=2: the cap is reached with "ab"; Parquet read the empty documents after it
    # in the same record batch (3 documents in training's corpus statistics, where the other forms say 1)
    forms = every_form(tmp_path, ["ab", "", ""])
    for name in ("jsonl", "parquet", "iter-str"):
        inp = forms[name]() if callable(forms[name]) else forms[name]
        corpus = train_bpe(inp, 256, num_processes=1, max_bytes=2).training["corpus"]
        assert (corpus["bytes"], corpus["documents"]) == (2, 1), name


@needs_pyarrow
def test_a_parquet_file_after_the_caps_is_not_read(tmp_path):
    # a Parquet file after the caps were reached was opened all the same: one without the column was an error
    # (a JSON lines file without the field, or a corrupt .gz, is not read there), and its first empty
    # documents were read past max_bytes (3 documents here, not 2)
    pq.write_table(pyarrow.table({"text": ["ab", "cd"]}), tmp_path / "a.parquet")
    pq.write_table(pyarrow.table({"other": ["x"]}), tmp_path / "b.parquet")
    pq.write_table(pyarrow.table({"text": [""]}), tmp_path / "c.parquet")
    assert count_pretokens([tmp_path / "a.parquet", tmp_path / "b.parquet"], max_documents=1) == {b"ab": 1}
    corpus = train_bpe([tmp_path / "a.parquet", tmp_path / "c.parquet"], 256, num_processes=1,
                       max_bytes=4).training["corpus"]
    assert (corpus["bytes"], corpus["documents"]) == (4, 2)


@needs_zstandard
@pytest.mark.parametrize("num_processes", [1, 2])
def test_an_empty_compressed_file_is_a_document_as_an_empty_text_file_is(tmp_path, num_processes):
    # the corpus statistics count each file as a document; an empty .gz/.zst file was counted as none (no batch
    # came of it) while max_documents spent one on it
    for k, name in enumerate(["a.txt", "b.txt.gz", "c.txt", "d.txt.zst", "e.txt"]):
        opener = {".gz": gzip.open, ".zst": zst_open}.get("." + name.rsplit(".", 1)[1], open)
        write_text(tmp_path / name, "" if k % 2 else f"hello world {k}", opener)
    for caps, documents in (({}, 5), ({"max_documents": 4}, 4), ({"max_documents": 2}, 2)):
        result = train_bpe(tmp_path, 260, num_processes=num_processes, **caps)
        assert result.training["corpus"]["documents"] == documents, caps
    assert train_bpe(tmp_path / "b.txt.gz", 256, num_processes=num_processes).training["corpus"]["documents"] == 1


@needs_pyarrow
@needs_zstandard
@pytest.mark.parametrize("max_documents", [0, 1, 5, 39, 1000])
def test_max_documents_takes_the_first_documents(tmp_path, max_documents):
    docs = documents(8, n=40)
    expected = oracle_docs(docs[:max_documents])
    forms = every_form(tmp_path, docs)
    for name in ("jsonl", "jsonl.gz", "parquet", "iter-str"):
        inp = forms[name]() if callable(forms[name]) else forms[name]
        got = count_pretokens(inp, [EOT], num_processes=2, chunk_bytes=100, max_documents=max_documents)
        assert got == expected, name


@needs_pyarrow
@needs_zstandard
@pytest.mark.parametrize("num_processes", [1, 2])
def test_max_documents_keeps_the_last_document_when_it_is_a_compressed_file(tmp_path, num_processes):
    # a compressed text file (or stdin) is one document, read in pieces: taking it as the last document
    # max_documents allows left the budget spent before its first piece was read, so it was dropped whole
    # (train_bpe("corpus.txt.gz", ..., max_documents=1) trained on nothing)
    docs = documents(9, n=10)
    text = EOT.join(docs)
    forms = every_form(tmp_path, docs)
    for name in ("txt", "txt.gz", "txt.bz2", "txt.xz", "txt.zst"):
        for cap in (1, 2):
            got = count_pretokens(forms[name], [EOT], num_processes=num_processes, chunk_bytes=500, max_documents=cap)
            assert got == oracle_count_pretokens(text, [EOT], GPT2_PATTERN), (name, cap)
    (tmp_path / "first.txt").write_text("one two")
    got = count_pretokens([tmp_path / "first.txt", forms["txt.gz"], forms["txt"]], [EOT], num_processes=num_processes,
                          max_documents=2)
    assert got == oracle_count_pretokens(f"one two{EOT}{text}", [EOT], GPT2_PATTERN)
    from bpe_fast.inputs import Stream
    with open(forms["txt"], "rb") as f:
        got = count_pretokens(Stream("text", f, "<stdin>"), [EOT], num_processes=num_processes, max_documents=1)
    assert got == oracle_count_pretokens(text, [EOT], GPT2_PATTERN)


def test_iterator_is_consumed_only_up_to_the_cap():
    taken = []

    def gen():
        for k in range(100):
            taken.append(k)
            yield f"doc {k}"
    count_pretokens(gen(), num_processes=1, max_documents=3)
    assert taken == [0, 1, 2]


def test_caps_are_checked():
    # a wrong type is a TypeError, a wrong value a ValueError, as for vocab_size and the other options (a float
    # or a str cap was a ValueError)
    for error, bad in ((ValueError, -1), (TypeError, 1.5), (TypeError, "2GB"), (TypeError, True)):
        with pytest.raises(error, match="max_bytes"):
            count_pretokens(iter(["a"]), max_bytes=bad)
        with pytest.raises(error, match="max_documents"):
            count_pretokens(iter(["a"]), max_documents=bad)


# ---- bad input -----------------------------------------------------------------------------------

def test_missing_json_field_names_file_and_line(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"text": "a"}\n\n{"body": "b", "id": 3}\n')
    with pytest.raises(InputError, match=r"c\.jsonl:3: no field 'text' \(fields: \['body', 'id'\]\)"):
        count_pretokens(path, num_processes=2)
    assert count_pretokens(path, text_field="body", max_documents=0) == {}


@pytest.mark.parametrize("line, match", [("[1, 2]", "must be an object"), ("{not json", "not a JSON line"),
                                         ('{"text": 3}', "is int, not a string"),
                                         ('{"text": "\\ud800"}', "lone surrogate"),
                                         ("[" * 100_000, r"not a JSON line \(arrays or objects nested too deeply\)"),
                                         ('{"text": "a", "b": ' + "[" * 100_000, "nested too deeply")])
def test_bad_json_lines_name_file_and_line(tmp_path, line, match):
    # JSON nested too deeply was a bare RecursionError (json.loads's), naming neither the file nor the line
    path = tmp_path / "c.jsonl"
    path.write_text('{"text": "fine"}\n' + line + "\n")
    with pytest.raises(InputError, match=rf"c\.jsonl:2: .*{match}"):
        count_pretokens(path, num_processes=1)
    with pytest.raises(InputError, match=rf"c\.jsonl:2: .*{match}"):
        count_pretokens(path, num_processes=1, errors="replace")


def test_a_json_line_nested_too_deeply_names_file_and_line_in_workers_and_when_replacing(tmp_path):
    # json.loads's RecursionError got out bare from the workers' ranges of lines too, and from the line read
    # again with errors="replace" after invalid UTF-8
    lines = [json.dumps({"text": f"document {k} " * 20}) for k in range(300)]
    lines[200] = '{"text": "a", "b": ' + "[" * 100_000
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(lines) + "\n")
    for procs in (1, 2):
        with pytest.raises(InputError, match=r"c\.jsonl:201: not a JSON line \(arrays or objects nested too deeply\)"):
            train_bpe(path, 300, num_processes=procs, chunk_bytes=1 << 10)
    path.write_bytes(b'{"text": "fine"}\n{"text": "caf\xe9", "b": ' + b"[" * 100_000 + b"\n")
    with pytest.raises(CorpusDecodeError, match=r"c\.jsonl: invalid UTF-8 at line 2"):
        count_pretokens(path, num_processes=1)
    with pytest.raises(InputError, match=r"c\.jsonl:2: not a JSON line \(arrays or objects nested too deeply\)"):
        count_pretokens(path, num_processes=1, errors="replace")


def test_corrupt_gzip_names_file_and_offset(tmp_path):
    data = gzip.compress(("hello world " * 50000).encode())
    path = tmp_path / "c.txt.gz"
    path.write_bytes(data[:len(data) // 2])           # truncated
    with pytest.raises(InputError, match=r"c\.txt\.gz: corrupt compressed file after \d+ decompressed bytes"):
        count_pretokens(path, num_processes=2)
    path.write_bytes(data[:100] + b"\xff" * 50 + data[150:])
    with pytest.raises(InputError, match=r"c\.txt\.gz: corrupt compressed file"):
        count_pretokens(path, num_processes=1)


def test_corrupt_gzip_names_how_far_it_decompresses(tmp_path):
    # the read that fails is of megabytes and loses what it had decompressed: the offset is found again in
    # reads of 64 KB (it said "after 0 decompressed bytes" for a file that decompresses 3 MB)
    data = gzip.compress(bytes(random.Random(1).choices(b"abc def\n", k=8_000_000)), 1)
    path = tmp_path / "c.txt.gz"
    path.write_bytes(data[:len(data) // 2])
    readable = len(zlib.decompressobj(31).decompress(data[:len(data) // 2]))
    assert readable > 3_000_000
    with pytest.raises(InputError, match=r"corrupt compressed file after (\d+) decompressed bytes") as err:
        count_pretokens(path, num_processes=1)
    reached = int(re.search(r"after (\d+) decompressed", str(err.value)).group(1))
    assert readable - (1 << 17) <= reached <= readable


@needs_zstandard
@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz", ".zst"])
def test_a_small_cut_compressed_file_names_how_far_it_decompresses(tmp_path, suffix):
    # the whole of a small file decompresses in the one read that fails, and that read's bytes were lost with
    # it: a gzip file of 6 KB cut in half said "after 0 decompressed bytes" where 2.7 KB decompress
    text = "".join(f"line {k} hello world\n" for k in range(300)).encode()
    compress, decompressor = {
        ".gz": (gzip.compress, lambda: zlib.decompressobj(31)), ".bz2": (bz2.compress, bz2.BZ2Decompressor),
        ".xz": (lzma.compress, lzma.LZMADecompressor),
        ".zst": (zstandard.ZstdCompressor().compress, lambda: zstandard.ZstdDecompressor().decompressobj())}[suffix]
    data = compress(text)
    path = tmp_path / f"c.txt{suffix}"
    path.write_bytes(data[:len(data) // 2])
    readable = len(decompressor().decompress(data[:len(data) // 2]))
    assert readable > 1000 or suffix in (".bz2", ".zst")     # (they decompress whole blocks: nothing of a cut one)
    with pytest.raises(InputError, match=rf"c\.txt\{suffix}: corrupt compressed file after {readable} decompressed "
                                         rf"bytes \(EOFError: "):
        count_pretokens(path, num_processes=1)


@needs_zstandard
@pytest.mark.parametrize("name", ["e.txt.gz", "e.jsonl.gz", "e.txt.zst", "e.txt.bz2", "e.txt.xz"])
@pytest.mark.parametrize("processes", [1, 2])
def test_an_empty_compressed_file_is_corrupt(tmp_path, name, processes):
    # (review helper-92) gzip and zstandard read a 0-byte file as no text, so a download cut at its start trained
    # an empty corpus; bz2 and lzma refused it already: each is named as corrupt
    if name.endswith(".zst"):
        pytest.importorskip("zstandard")
    (tmp_path / name).write_bytes(b"")
    with pytest.raises(InputError, match=re.escape(name) + r": corrupt compressed file after 0 decompressed bytes"):
        count_pretokens(tmp_path / name, num_processes=processes)


def _compressor(suffix):
    return {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress,
            ".zst": lambda b: zstandard.ZstdCompressor().compress(b)}[suffix]


@needs_zstandard
@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz", ".zst"])
def test_a_file_of_several_compressed_streams_is_read_whole(tmp_path, suffix):
    # pbzip2 and pzstd write several streams (frames), and `cat a.gz b.gz` is a valid .gz: all are read
    docs = documents(21, n=12)
    text = "".join(docs)
    compress = _compressor(suffix)
    cut = len(text) // 3
    (tmp_path / f"c.txt{suffix}").write_bytes(compress(text[:cut].encode()) + compress(text[cut:].encode()))
    got = count_pretokens(tmp_path / f"c.txt{suffix}", num_processes=1)
    assert dict(got) == dict(oracle_count_pretokens(text, [], GPT2_PATTERN))


@needs_zstandard
@pytest.mark.parametrize("suffix", [".bz2", ".xz", ".zst"])
@pytest.mark.parametrize("read_bytes", [1, 3, 7, 64, 1 << 20])
def test_several_streams_read_whole_whatever_the_read_size(tmp_path, monkeypatch, suffix, read_bytes):
    # the next stream's first bytes are looked for across reads (a stream ends anywhere in one), xz's padding too;
    # read by read, read1 and readline as the readers of inputs.py read
    from bpe_fast import inputs
    monkeypatch.setattr(inputs, "_READ_BYTES", read_bytes)
    pieces = [b"", b"one\n", b"", "two, deux, \u4e8c\n".encode() * 50, b"three"]
    padding = bytes(4) if suffix == ".xz" else b""
    path = tmp_path / f"s.txt{suffix}"
    path.write_bytes(padding.join(_compressor(suffix)(p) for p in pieces) + padding)
    whole = b"".join(pieces)
    for read in (lambda f: f.read(), lambda f: b"".join(iter(lambda: f.read1(5), b"")), lambda f: b"".join(f)):
        with inputs.open_binary(str(path)) as f:
            assert read(f) == whole
    path.write_bytes(path.read_bytes() + b"BZ")          # two bytes that begin no stream, read in any reads
    with pytest.raises(OSError, match=r"do not begin another: trailing data"), inputs.open_binary(str(path)) as f:
        f.read()


@needs_zstandard
@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz", ".zst"])
@pytest.mark.parametrize("junk", [b"junk after the stream\n", b"x", b"\0\0\0\0ZZZZ"])
def test_bytes_after_the_last_compressed_stream_are_refused(tmp_path, suffix, junk):
    # the standard library's bz2 and lzma stop silently at bytes that do not begin a stream: a second stream
    # whose header was damaged dropped the rest of the corpus unseen; gzip and zstandard refused them already
    text = "".join(documents(22, n=8)).encode()
    path = tmp_path / f"j.txt{suffix}"
    path.write_bytes(_compressor(suffix)(text) + junk)
    with pytest.raises(InputError, match=rf"j\.txt\{suffix}: corrupt compressed file after {len(text)} "
                                         rf"decompressed bytes"):
        count_pretokens(path, num_processes=1)


def test_xz_stream_padding_is_not_trailing_data(tmp_path):
    # xz's format pads streams with NULs (in fours), which xz itself reads past; other counts it refuses
    text = "".join(documents(23, n=8))
    path = tmp_path / "p.txt.xz"
    first = lzma.compress(text[:100].encode())
    path.write_bytes(first + bytes(8) + lzma.compress(text[100:].encode()) + bytes(4))
    assert dict(count_pretokens(path, num_processes=1)) == dict(oracle_count_pretokens(text, [], GPT2_PATTERN))
    for padding in (1, 3, 6):
        path.write_bytes(first + bytes(padding) + lzma.compress(text[100:].encode()))
        with pytest.raises(InputError, match=rf"corrupt compressed file after {len(text[:100].encode())} decompressed bytes .*{padding} NUL "
                                             rf"bytes before compressed offset {len(first) + padding}.*in fours"):
            count_pretokens(path, num_processes=1)


@needs_zstandard
@pytest.mark.parametrize("suffix", [".bz2", ".xz", ".zst"])
def test_a_file_of_several_streams_cut_inside_one_is_cut_not_trailing_data(tmp_path, suffix):
    # a later stream that has begun (its header read) and ends early is a cut file, as a one-stream file is
    text = "".join(documents(24, n=12)).encode()
    compress = _compressor(suffix)
    first = compress(text[:1000])
    path = tmp_path / f"c.txt{suffix}"
    path.write_bytes(first + compress(text[1000:])[:-20])
    with pytest.raises(InputError, match=r"corrupt compressed file after \d+ decompressed bytes \(EOFError: "):
        count_pretokens(path, num_processes=1)


def test_corrupt_zstd_names_file(tmp_path):
    data = zstandard.ZstdCompressor().compress(("hello world " * 50000).encode())
    path = tmp_path / "c.jsonl.zst"
    path.write_bytes(data[:len(data) // 3])
    with pytest.raises(InputError, match=r"c\.jsonl\.zst: corrupt compressed file"):
        count_pretokens(path, num_processes=1)


@needs_pyarrow
def test_parquet_without_the_column_lists_the_columns(tmp_path):
    write_parquet(tmp_path / "c.parquet", ["a", "b"])
    with pytest.raises(InputError, match=r"no column 'body' \(columns: \['n', 'text'\]\)"):
        count_pretokens(tmp_path / "c.parquet", text_column="body")
    with pytest.raises(InputError, match=r"column 'n' is int64, not strings"):
        count_pretokens(tmp_path / "c.parquet", text_column="n")


@needs_pyarrow
@pytest.mark.parametrize("processes", [1, 2])
def test_parquet_with_two_text_columns_or_a_damaged_footer_names_the_file(tmp_path, processes):
    # pyarrow writes two columns of one name without complaint, and field() of that name is then a bare
    # KeyError; a footer whose column name is not UTF-8 a bare UnicodeDecodeError (helper-115)
    import pyarrow as pa
    import pyarrow.parquet as pq
    twice = tmp_path / "twice.parquet"
    pq.write_table(pa.Table.from_arrays([pa.array(["a b", "c d"]), pa.array(["e", "f"])], names=["text", "text"]),
                   twice)
    with pytest.raises(InputError, match=r"twice\.parquet: 2 columns named 'text' \(columns: \['text', 'text'\]\)"):
        count_pretokens(twice, num_processes=processes)
    write_parquet(tmp_path / "c.parquet", ["a b", "c d", "e f"])
    data = (tmp_path / "c.parquet").read_bytes()
    assert b"\x04text" in data              # the column's name as the footer's Thrift writes it (length 4, bytes)
    damaged = tmp_path / "damaged.parquet"
    damaged.write_bytes(data.replace(b"\x04text", b"\x04\xdfext"))
    with pytest.raises(InputError, match=r"damaged\.parquet: not a Parquet file \("):
        count_pretokens(damaged, num_processes=processes)


@needs_pyarrow
def test_parquet_row_groups_are_read_by_the_workers(tmp_path, monkeypatch):
    # several files of several row groups (with nulls and non-ASCII text): with 2 processes the workers and the
    # caller's thread each read the row groups they claim; the counts, merges and corpus statistics are those
    # of the documents read in order in one process
    import bpe_fast.count_workers as cw
    monkeypatch.setattr(cw, "PARQUET_UNIT_BYTES", 1)        # each row group a unit of its own
    docs = documents(7, n=60)
    docs[3] = None
    paths = []
    for i, part in enumerate((docs[:25], docs[25:26], docs[26:])):
        path = tmp_path / f"part-{i}.parquet"
        pq.write_table(pyarrow.table({"text": part}), path, row_group_size=4)
        paths.append(path)
    calls = []
    real = cw.count_unit_tables
    monkeypatch.setattr(cw, "count_unit_tables",
                        lambda run, units, *a, **k: calls.append(len(units)) or real(run, units, *a, **k))
    texts = [d or "" for d in docs]
    assert count_pretokens(paths, [EOT], num_processes=2) == oracle_docs(texts)
    assert calls == [7 + 1 + 9]
    one = train_bpe(paths, 256 + 1 + 50, [EOT], num_processes=1)
    two = train_bpe(paths, 256 + 1 + 50, [EOT], num_processes=2)
    assert len(calls) == 2 and two == one and two.training["corpus"] == one.training["corpus"]
    assert two.training["corpus"]["documents"] == 60
    assert count_pretokens(paths, [EOT], num_processes=2, max_documents=30) == oracle_docs(texts[:30])
    assert len(calls) == 2                      # a cap reads the files in order, here


def test_a_huge_chunk_bytes_does_not_allocate_it():
    # the batches' buffers are at most a slot of 64 MB whatever chunk_bytes asks (1, 2 and 3 processes)
    docs = ["a b", "c", "dé 日"]
    for procs in (1, 2, 3):
        assert count_pretokens(iter(docs), [EOT], num_processes=procs, chunk_bytes=1 << 40) == oracle_docs(docs)


def table_counts(counter):
    tokens, offsets, counts = counter.arrays()
    return {tokens[offsets[i]:offsets[i + 1]].tobytes(): int(counts[i]) for i in range(len(counts))}


def test_tail_share_hands_batches_only_to_idle_claimants_and_loses_none():
    # two claimants (threads here; processes in use): while nobody is idle, an offer is refused and the offerer
    # counts the batch; once the other drains, batches go to it; both counters together hold every document
    import threading
    import time
    from collections import Counter
    from bpe_fast.count_workers import TailShare, _counter_for
    from bpe_fast.inputs import Batch
    from bpe_fast.procs import worker_context
    docs = documents(11, n=30)
    batches = [Batch(d.encode(), np.array([0, len(d.encode())], dtype=np.int64), ("docs", k, None, None))
               for k, d in enumerate(docs)]
    share = TailShare(worker_context(), 2)
    mine, theirs = (_counter_for([EOT], GPT2_PATTERN, "strict") for _ in range(2))
    assert share.offer(batches[0]) is False
    mine.add_documents(batches[0].data, batches[0].bounds)
    stop = threading.Event()                # set only if drain never returns: the test then fails, not hangs
    timer = threading.Timer(20, stop.set)
    timer.start()
    other = threading.Thread(target=share.drain, args=(theirs, None, stop))
    other.start()
    deadline = time.monotonic() + 20
    while share.state[0] == 0:            # the other claimant is idle in drain
        assert time.monotonic() < deadline
    given = 0
    for batch in batches[1:]:
        if share.offer(batch):
            given += 1
        else:
            mine.add_documents(batch.data, batch.bounds)
    share.drain(mine, None, stop)         # the last claimant done: both return once every batch is counted
    other.join(timeout=10)
    timer.cancel()
    assert not other.is_alive() and not stop.is_set()
    assert given >= 1 and share.state[:] == [2, given, given]
    assert Counter(table_counts(mine)) + Counter(table_counts(theirs)) == oracle_docs(docs)


@needs_pyarrow
def test_parquet_row_groups_of_uneven_sizes_in_small_batches_count_as_the_oracle(tmp_path):
    # the workers share the batches of the last row groups (TailShare): the counts are still the documents'
    docs = documents(12, n=120)
    path = tmp_path / "uneven.parquet"
    writer = pq.ParquetWriter(path, pyarrow.schema([("text", pyarrow.string())]))
    start = 0
    for size in (50, 5, 30, 2, 25, 8):                    # row groups of uneven sizes, largest not first
        writer.write_table(pyarrow.table({"text": docs[start:start + size]}))
        start += size
    writer.close()
    assert pq.ParquetFile(path).metadata.num_row_groups == 6
    for procs in (2, 3):
        assert count_pretokens(path, [EOT], num_processes=procs, chunk_bytes=1 << 10) == oracle_docs(docs)


@needs_pyarrow
def test_parquet_units_are_the_row_groups_largest_first_sized_by_the_text_column(tmp_path):
    # sizes from the text column's own leaf, also when a struct column (two leaves) comes before it
    from bpe_fast.count_workers import parquet_units
    from bpe_fast.inputs import parquet_row_groups, resolve_inputs
    path = tmp_path / "nested.parquet"
    texts = [f"{i}" + "abc"[i // 3] * (10, 5000, 900)[i // 3] for i in range(9)]   # distinct: no dictionary
    meta = [{"k": f"{i}" + "x" * (5000 if i < 3 else 1), "v": i} for i in range(9)]  # big where the text is small
    pq.write_table(pyarrow.table({"meta": meta, "text": texts}), path, row_group_size=3)
    sizes, rows = parquet_row_groups(str(path), "text")
    assert rows == [3, 3, 3] and sizes[1] > sizes[2] > sizes[0]
    assert sizes[1] >= 5000 * 3 and sizes[0] < 1000
    units = parquet_units(resolve_inputs(path), "text", 2, unit_bytes=1)
    assert units is None                                  # 3 row groups: fewer than 2 a process
    more = tmp_path / "more.parquet"
    pq.write_table(pyarrow.table({"meta": meta * 2, "text": texts + [t + "!" for t in texts]}), more,
                   row_group_size=3)
    units = parquet_units(resolve_inputs(more), "text", 2, unit_bytes=1)
    assert [groups for _, groups, _ in units] == [(4,), (1,), (5,), (2,), (3,), (0,)]   # the second copy's
    assert [first for _, _, first in units] == [12, 3, 15, 6, 9, 0]                     # texts a byte longer
    # consecutive row groups make a unit until their text reaches unit_bytes (a file's last ones: less)
    units = parquet_units(resolve_inputs(more), "text", 2, unit_bytes=4600)   # (text bytes: ~120, 15,060, 4,570
    assert [(groups, first) for _, groups, first in units] == [                 # then the same, 3 more each)
        ((0, 1), 0), ((4,), 12), ((2, 3), 6), ((5,), 15)]
    assert parquet_units(resolve_inputs(more), "text", 2) is None      # (all of it is under 4 MB: one unit)


@needs_pyarrow
def test_a_parquet_file_of_many_small_row_groups_is_counted_in_few_units(tmp_path, monkeypatch):
    # each row group was a unit, and its worker opened the file and summed the row groups before it: 2,000 row
    # groups of 100 rows took 24 s with 2 processes, 0.6 s with 1 (helper-178); now consecutive ones make a unit
    from bpe_fast.count_workers import parquet_units
    from bpe_fast.inputs import resolve_inputs
    path = tmp_path / "small-groups.parquet"
    docs = [f"doc {i} " + "word " * (i % 50) + "\u00e9t\u00e9" for i in range(30000)]
    pq.write_table(pyarrow.table({"text": docs}), path, row_group_size=20)
    units = parquet_units(resolve_inputs(path), "text", 2, unit_bytes=100_000)
    assert 4 <= len(units) <= 150 and sorted(g for _, groups, _ in units for g in groups) == list(range(1500))
    from bpe_fast import count_workers
    monkeypatch.setattr(count_workers, "PARQUET_UNIT_BYTES", 100_000)      # the workers read the units
    assert count_pretokens(path, num_processes=2) == oracle_docs(docs)


def _parquet_of_bytes(path, docs, row_group_size):
    # a string column whose values need not be valid UTF-8 (Arrow checks only when asked)
    offsets = np.cumsum([0] + [len(d) for d in docs]).astype(np.int32)
    column = pyarrow.Array.from_buffers(pyarrow.string(), len(docs),
                                        [None, pyarrow.py_buffer(offsets.tobytes()), pyarrow.py_buffer(b"".join(docs))])
    pq.write_table(pyarrow.table({"text": column}), path, row_group_size=row_group_size)


@needs_pyarrow
@pytest.mark.parametrize("procs", [1, 2, 3])
def test_the_first_invalid_utf8_of_parquet_row_groups_in_file_order(tmp_path, procs, monkeypatch):
    # the workers claim row groups largest first: the last row group (the largest) was counted first and its
    # error named, not the first row group's
    import bpe_fast.count_workers as cw
    from bpe_fast.count_workers import parquet_units
    from bpe_fast.inputs import resolve_inputs
    monkeypatch.setattr(cw, "PARQUET_UNIT_BYTES", 1)        # each row group a unit of its own
    docs = [b"fine", b"ab\xffcd"] + [b"word " * 20] * 48 + [b"word " * 2000 + b"x \xfe"] * 10
    _parquet_of_bytes(tmp_path / "a.parquet", docs, 10)
    assert procs == 1 or parquet_units(resolve_inputs(tmp_path / "a.parquet"), "text", procs)[0][1:] == ((5,), 50)
    with pytest.raises(CorpusDecodeError, match=r"a\.parquet: invalid UTF-8 at document 1, byte offset 2 of "):
        count_pretokens(tmp_path / "a.parquet", num_processes=procs, chunk_bytes=1000)
    # in a run of files: the first file's, though the second's row groups are larger
    fine = [f"doc {k} ".encode() for k in range(60)]
    _parquet_of_bytes(tmp_path / "b.parquet", fine[:20] + [b"z\xc3"] + fine[20:], 10)
    _parquet_of_bytes(tmp_path / "c.parquet", [b"word " * 4000 + b"\xff"] * 40, 10)
    with pytest.raises(CorpusDecodeError, match=r"b\.parquet: invalid UTF-8 at document 20, byte offset 1 of "):
        count_pretokens([tmp_path / "b.parquet", tmp_path / "c.parquet"], num_processes=procs, chunk_bytes=1000)
    # a document ending inside a character, the next starting with the rest: each is invalid alone
    _parquet_of_bytes(tmp_path / "d.parquet", fine[:30] + [b"x \xe2\x82", b"\xac"] + fine[30:], 8)
    with pytest.raises(CorpusDecodeError, match=r"d\.parquet: invalid UTF-8 at document 30, byte offset 2 of "):
        count_pretokens([tmp_path / "d.parquet", tmp_path / "c.parquet"], num_processes=procs, chunk_bytes=1000)


@needs_pyarrow
def test_a_corrupt_row_group_names_the_file(tmp_path):
    path = tmp_path / "c.parquet"
    pq.write_table(pyarrow.table({"text": [f"document {i} " * 50 for i in range(400)]}), path,
                   row_group_size=40, compression="none")
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle:middle + 2000] = b"\xff" * 2000           # a data page in the middle; the footer is intact
    path.write_bytes(bytes(data))
    for procs in (1, 2):
        with pytest.raises((InputError, CorpusDecodeError), match=str(path)):
            count_pretokens(path, num_processes=procs)


@needs_pyarrow
def test_parquet_nulls_are_empty_documents(tmp_path):
    pq.write_table(pyarrow.table({"text": ["a b", None, "c"]}), tmp_path / "c.parquet")
    assert count_pretokens(tmp_path / "c.parquet", num_processes=1) == {b"a": 1, b" b": 1, b"c": 1}


@needs_pyarrow
@pytest.mark.parametrize("procs", [1, 2])
def test_parquet_dictionary_encoded_strings_are_read(tmp_path, procs):
    # a pandas categorical column is written as dictionary<values=string>: it was refused as "not strings"
    # (found by the training review); row groups of it read by the workers too
    docs = ["a b", None, "c d é", "a b"] * 50
    pq.write_table(pyarrow.table({"text": pyarrow.array(docs).dictionary_encode()}), tmp_path / "d.parquet",
                   row_group_size=40)
    expected = oracle_docs([d or "" for d in docs])
    assert count_pretokens(tmp_path / "d.parquet", num_processes=procs, chunk_bytes=64) == expected
    assert count_pretokens(tmp_path / "d.parquet", num_processes=procs, max_documents=3) == \
        oracle_docs(["a b", "", "c d é"])


@needs_pyarrow
@pytest.mark.skipif(not hasattr(pyarrow, "string_view"), reason="pyarrow without string_view")
@pytest.mark.parametrize("procs", [1, 2])
def test_parquet_string_view_nulls_are_empty_documents(tmp_path, procs):
    # a string_view column (taken as strings) with a null failed in fill_null (ArrowNotImplementedError: no
    # 'coalesce' kernel for string_view), before its cast to large_string
    docs = ["a b", None, "c d é", ""] * 10
    pq.write_table(pyarrow.table({"text": pyarrow.array(docs, pyarrow.string_view())}), tmp_path / "v.parquet",
                   row_group_size=5)
    expected = oracle_docs([d or "" for d in docs])
    assert count_pretokens(tmp_path / "v.parquet", num_processes=procs) == expected
    assert count_pretokens(tmp_path / "v.parquet", num_processes=procs, max_documents=3) == \
        oracle_docs(["a b", "", "c d é"])


class Text(str):
    """A str subclass, as some libraries hand out (taken as its str, as Tokenizer.encode takes it)."""


@pytest.mark.parametrize("max_documents", [None, 10])
def test_str_subclasses_are_documents(max_documents):
    docs = ["Hello world", "é and ü", "x y z"] * 4
    expected = count_pretokens(iter(docs), max_documents=max_documents, num_processes=1)
    for form in ([Text(d) for d in docs], [{"text": Text(d)} for d in docs]):
        assert count_pretokens(iter(form), max_documents=max_documents, num_processes=1) == expected


def test_a_custom_pattern_validates_utf8_in_a_fresh_process(tmp_path):
    # the UTF-8 validator must not need the native scanner's tables (loaded only by a built-in pattern)
    import subprocess
    import sys
    code = ("from bpe_fast import count_pretokens\n"
            "print(dict(count_pretokens(iter(['abc def', b'gh']), pattern=r'\\w+', num_processes=1)))\n"
            "try:\n    count_pretokens(iter([b'ok', b'a\\xffb']), pattern=r'\\w+', num_processes=1)\n"
            "except Exception as exc:\n    print(type(exc).__name__, exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == repr({b"abc": 1, b"def": 1, b"gh": 1})
    assert lines[1].startswith("CorpusDecodeError") and "document 1, byte offset 1" in lines[1], lines[1]


@pytest.mark.parametrize("procs", [1, 2])
def test_iterable_item_of_a_wrong_type_names_index_and_type(procs):
    with pytest.raises(TypeError, match=r"item 2 of the input is int"):
        count_pretokens(iter(["a", b"b", 3, "d"]), num_processes=procs, chunk_bytes=1)
    with pytest.raises(InputError, match=r"item 1 of the input has no field 'text'"):
        count_pretokens(iter([{"text": "a"}, {"body": "b"}]), num_processes=procs)


@pytest.mark.parametrize("procs", [1, 2])
def test_invalid_utf8_in_a_document_names_document_and_offset(procs):
    docs = [b"fine"] * 5 + [b"ab\xffcd"] + [b"fine"] * 5
    with pytest.raises(CorpusDecodeError, match=r"iterable: invalid UTF-8 at document 5, byte offset 2 of the "
                                                r"document"):
        count_pretokens(iter(docs), num_processes=procs, chunk_bytes=8)
    got = count_pretokens(iter(docs), num_processes=procs, errors="replace", chunk_bytes=8)
    assert got == oracle_count_pretokens("".join(f"{d.decode('utf-8', 'replace')}\0" for d in docs)
                                         .replace("\0", EOT), [EOT], GPT2_PATTERN)


@pytest.mark.parametrize("procs", [1, 2])
def test_a_document_ending_inside_a_character_is_invalid_though_the_batch_is_valid(procs):
    # each document is decoded alone: b"ab\xc3" then b"\xa9cd" is "ab\u00e9cd" as one text but two invalid
    # documents. The batch's bytes were checked as a whole, so the counter took both as valid UTF-8 and counted
    # b"ab\xc3\xa9" (a byte of the next document) and b"\xa9cd" (its lead byte read as a character's)
    docs = [b"fine", b"ab\xc3", b"\xa9cd", b"fine"]
    with pytest.raises(CorpusDecodeError, match=r"iterable: invalid UTF-8 at document 1, byte offset 2 of the "
                                                r"document: unexpected end of data"):
        count_pretokens(iter(docs), num_processes=procs)
    got = count_pretokens(iter(docs), num_processes=procs, errors="replace")
    assert got == oracle_count_pretokens(EOT.join(d.decode("utf-8", "replace") for d in docs), [EOT], GPT2_PATTERN)
    # the last document starting inside a character: its lead-byte look-alike is the batch's last byte
    docs = [b"x \xe2\x82", b"\xac"]
    with pytest.raises(CorpusDecodeError, match=r"document 0, byte offset 2 of the document"):
        count_pretokens(iter(docs), num_processes=procs)
    got = count_pretokens(iter(docs), num_processes=procs, errors="replace")
    assert got == oracle_count_pretokens(EOT.join(d.decode("utf-8", "replace") for d in docs), [EOT], GPT2_PATTERN)


def test_invalid_utf8_in_compressed_text_names_file_offset_and_line(tmp_path):
    data = b"line one\nline two\n" * 1000 + b"bad \xc3( here\n" + b"more\n" * 10
    (tmp_path / "c.txt.gz").write_bytes(gzip.compress(data))
    with pytest.raises(CorpusDecodeError) as info:
        count_pretokens(tmp_path / "c.txt.gz", num_processes=2, chunk_bytes=1000)
    assert (info.value.offset, info.value.line) == (data.index(b"\xc3"), 2001)
    assert "c.txt.gz: invalid UTF-8 at byte offset 18004 (line 2001)" in str(info.value)


@pytest.mark.parametrize("procs", [1, 2, 3])
def test_the_first_invalid_utf8_of_an_iterable_is_reported_whatever_counts_first(procs):
    # the review's example: document 10 is big, so the counter given it meets its error after another counter
    # has met document 11's; the error named was the first met in time (document 11 with 2 or 3 processes)
    docs = [b"a"] * 10 + [b"x" * 6_000_000 + b"\xff"] + [b"bad \xfe"] * 50
    with pytest.raises(CorpusDecodeError, match=r"iterable: invalid UTF-8 at document 10, byte offset 6000000 "):
        count_pretokens(iter(docs), num_processes=procs, chunk_bytes=100)


def _slow_first_batch(monkeypatch, seconds=0.5):
    # the caller's thread counts the first batch handed out: make it meet that batch's error last (in this
    # process only: forked workers inherit the patch)
    import os
    import time
    import bpe_fast.count_workers as cw
    count_batch, caller = cw._count_batch, os.getpid()

    def slow(counter, batch, *args):
        if os.getpid() == caller and batch.origin[1] == 0 and batch.origin[3] in (None, 0):
            time.sleep(seconds)
        return count_batch(counter, batch, *args)

    monkeypatch.setattr(cw, "_count_batch", slow)


@pytest.mark.parametrize("procs", [1, 2, 3])
def test_the_first_invalid_utf8_of_documents_in_order_though_a_later_one_is_met_first(procs, monkeypatch):
    _slow_first_batch(monkeypatch)
    docs = [b"fine", b"ab\xffcd"] + [f"doc {k} ".encode() * 10 for k in range(40)] + [b"x \xfe"] * 20
    with pytest.raises(CorpusDecodeError, match=r"iterable: invalid UTF-8 at document 1, byte offset 2 of the "):
        count_pretokens(iter(docs), num_processes=procs, chunk_bytes=16)
    with pytest.raises(CorpusDecodeError, match=r"iterable: invalid UTF-8 at document 1, byte offset 2 of the "):
        train_bpe(iter(docs), 300, num_processes=procs, chunk_bytes=16)
    # capped reads and lists of documents are batches handed out the same way
    with pytest.raises(CorpusDecodeError, match=r"iterable: invalid UTF-8 at document 1, byte offset 2 of the "):
        count_pretokens(iter(docs), num_processes=procs, chunk_bytes=16, max_bytes=10**6)
    # no batch is read after the error is met: an endless input ends
    endless = itertools.chain(docs, itertools.repeat(b"fine"))
    with pytest.raises(CorpusDecodeError, match=r"iterable: invalid UTF-8 at document 1, byte offset 2 of the "):
        count_pretokens(endless, num_processes=procs, chunk_bytes=16)


@pytest.mark.parametrize("procs", [1, 2, 3])
def test_the_first_invalid_utf8_of_a_compressed_file_in_file_order(tmp_path, procs, monkeypatch):
    import bpe_fast.inputs as inputs
    monkeypatch.setattr(inputs, "_READ_BYTES", 1000)       # pieces of about chunk_bytes, not of a whole read
    _slow_first_batch(monkeypatch)
    data = b"good \xc3( one\n" + b"line of text\n" * 4000 + (b"bad \xff\n" + b"more text\n" * 200) * 20
    (tmp_path / "c.txt.gz").write_bytes(gzip.compress(data))
    with pytest.raises(CorpusDecodeError) as info:
        count_pretokens(tmp_path / "c.txt.gz", num_processes=procs, chunk_bytes=2000)
    assert (info.value.offset, info.value.line) == (5, 1)
    # without the first, the next (in a piece other than the first)
    (tmp_path / "d.txt.gz").write_bytes(gzip.compress(data.replace(b"\xc3(", b"ok")))
    with pytest.raises(CorpusDecodeError) as info:
        count_pretokens(tmp_path / "d.txt.gz", num_processes=procs, chunk_bytes=2000)
    assert info.value.line == 4002


def test_invalid_utf8_in_a_pipe_is_not_given_a_line_read_from_the_rest_of_the_pipe():
    # the line of an error in a text stream was found by reading the input again from its start: a pipe
    # (<(cmd), /dev/stdin) gave what followed the error instead (line 1 here), and waited for its writer; the
    # line is counted as the pipe is read, once
    import os
    data = b"line one\nline two\nbad \xff here\n" + b"more\n" * 10
    read, write = os.pipe()
    try:
        os.write(write, data)
        os.close(write)
        with pytest.raises(CorpusDecodeError) as info:
            count_pretokens(f"/dev/fd/{read}", num_processes=1)
    finally:
        os.close(read)
    assert (info.value.offset, info.value.line) == (data.index(b"\xff"), 3)


def test_list_of_texts_is_not_taken_for_paths(tmp_path):
    with pytest.raises(FileNotFoundError, match="corpus file not found"):
        count_pretokens(["hello world"])
    with pytest.raises(TypeError, match=r"item 0 is int .*iter\(texts\)"):
        count_pretokens([3])
    # the item's place in the list (review helper-93: it was the number of files found before it, 3 here)
    (tmp_path / "fold").mkdir()
    for k in range(3):
        (tmp_path / "fold" / f"f{k}.txt").write_text("text")
    with pytest.raises(TypeError, match=r"item 1 is int"):
        count_pretokens([tmp_path / "fold", 5])


@pytest.mark.parametrize("inputs, what, shown", [
    (["Once upon a time, a fox.\nThe end."], "item 0 of the list of inputs", "'Once upon a time, a fox.\\nThe end.'"),
    ([__file__, "Is the sky blue? It is, said the owl."], "item 1 of the list of inputs",
     "'Is the sky blue? It is, said the owl.'"),                          # a '?': it was taken for a glob
    ("a story " * 100, "the input", "'a story a story a story a story a story a story a story a st... (800 "
                                    "characters)'"),                      # (a name too long: ENAMETOOLONG)
])
def test_a_text_given_as_a_path_is_named_shortened_with_how_to_pass_texts(inputs, what, shown):
    """A document passed where a path goes (a str, or a list's items: a list is taken as paths) was a
    FileNotFoundError naming the whole document as the file (or, with a '?' in it, as a glob that matched nothing,
    or a name too long): now named in 60 characters, with iter(texts) as the way to pass texts."""
    with pytest.raises(OSError) as info:
        count_pretokens(inputs, num_processes=1)
    message = str(info.value)
    assert f"({what} reads as text: a str input, and each item of a list, is a path; to pass texts, pass an " \
           f"iterator: iter(texts)): {shown}" in message, message
    assert len(message) < 300


def test_a_missing_path_that_reads_as_a_path_is_named_as_before(tmp_path):
    for path in (tmp_path / "corpus.txt", tmp_path / "my corpus.txt", tmp_path / "*.txt"):
        with pytest.raises(FileNotFoundError) as info:
            count_pretokens([path], num_processes=1)
        assert "reads as text" not in str(info.value) and info.value.filename == str(path)


def test_missing_paths_empty_globs_and_directories(tmp_path):
    with pytest.raises(FileNotFoundError, match="no corpus file matches"):
        count_pretokens(str(tmp_path / "*.txt"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="holds no files"):
        count_pretokens(tmp_path / "empty")
    with pytest.raises(ValueError, match="list of paths is empty"):
        count_pretokens([])
    with pytest.raises(TypeError, match="must be a path"):
        count_pretokens(3)


def test_compressed_parquet_is_refused(tmp_path):
    (tmp_path / "c.parquet.gz").write_bytes(b"")
    with pytest.raises(InputError, match="compressed Parquet"):
        count_pretokens(tmp_path / "c.parquet.gz")


# items for pull_utf8: strs of every kind, with lone surrogates, bytes, ints, and runs of 16 ASCII characters and
# more in strs of every kind (converted 16 at a time)
_PULL_ITEMS = st.lists(st.one_of(st.text(max_size=12), st.text(alphabet="a\ud800\udfff日", max_size=4),
                                 st.binary(max_size=3), st.binary(max_size=3).map(bytearray), st.integers(),
                                 st.fixed_dictionaries({"text": st.one_of(st.text(alphabet="ab\ud800日", max_size=4),
                                                                          st.binary(max_size=3), st.integers())}),
                                 st.just({"title": "a"}),
                                 st.lists(st.sampled_from(["abcdefghijklmnopq", "é", "\u00ff", "日", "\U0001F600",
                                                           "\ud800", "x"]), max_size=8).map("".join)), max_size=12)


def _most_bytes_a_character(text):
    """The most UTF-8 bytes a character of a str of this one's kind (its widest character) can take."""
    widest = max(map(ord, text), default=0)
    return 1 if widest < 0x80 else 2 if widest < 0x100 else 3 if widest < 0x10000 else 4


def pull_oracle(items, budget, room=None, field=None):
    """What bpe_fast._encode.pull_utf8 returns, in plain Python: plain str items without surrogates (their UTF-8)
    and plain bytes items (as they are), and with `field` plain dicts whose field holds one, are taken until
    their total reaches budget; another item stops the pull and is handed back. With room (the size of an `out`
    buffer), so is bytes that does not fit in what is left, and a str whose characters, at the most bytes a
    character of its kind takes, might not."""
    data, lengths = b"", []
    for k, item in enumerate(items):
        if len(data) >= budget:
            return data, lengths, 0, None, k
        value = item
        if field is not None and type(item) is dict:
            if field not in item:
                return data, lengths, 2, item, k + 1
            value = item[field]
        if type(value) is bytes:
            if room is not None and len(value) > room - len(data):
                return data, lengths, 2, item, k + 1
            data += value
            lengths.append(len(value))
            continue
        if type(value) is not str or any(0xD800 <= ord(c) <= 0xDFFF for c in value):
            return data, lengths, 2, item, k + 1
        if room is not None and len(value) * _most_bytes_a_character(value) > room - len(data):
            return data, lengths, 2, item, k + 1
        data += value.encode("utf-8")
        lengths.append(len(value.encode("utf-8")))
    return data, lengths, (0 if len(data) >= budget else 1), None, len(items)


@settings(max_examples=300, deadline=None)
@given(items=_PULL_ITEMS, budget=st.integers(min_value=1, max_value=120), field=st.sampled_from([None, "text"]))
@example(items=["", "a"], budget=10, field=None)
@example(items=["", ""], budget=10, field=None)
@example(items=["", "\ud800"], budget=10, field=None)
@example(items=[{"text": "a"}, {"title": "a"}], budget=10, field="text")
def test_pull_utf8_equals_oracle(items, budget, field):
    from bpe_fast._encode import pull_utf8

    iterator = iter(items)
    data, lengths, state, item, pulled = pull_oracle(items, budget, field=field)
    out = bytearray(4 * sum(len(x) if isinstance(x, (str, bytes)) else 12 for x in items) + 4)  # room for all
    got = pull_utf8(iterator, budget, out, field)
    assert (got[0], got[1].tolist(), got[2]) == (len(data), lengths, state) and out[:len(data)] == data
    assert got[3] is item or got[3] == item
    assert list(iterator) == items[pulled:]        # nothing pulled beyond what it took or handed back


@settings(max_examples=200, deadline=None)
@given(items=_PULL_ITEMS, cut=st.integers(min_value=0, max_value=12), budget=st.integers(min_value=1, max_value=120),
       field=st.sampled_from([None, "text"]))
@example(items=["ab", b"c"], cut=2, budget=10, field=None)
@example(items=[], cut=0, budget=10, field=None)
def test_pull_utf8_hands_back_what_it_took_before_the_iterator_raised(items, cut, budget, field):
    # the iterator raises after its first `cut` items: what pull_utf8 took before it is returned with state 3
    # and the exception, unless it stopped before reaching it (the oracle on those items)
    from bpe_fast._encode import pull_utf8

    cut = min(cut, len(items))
    broken = _Broken("the iterator broke")

    def iterator():
        yield from items[:cut]
        raise broken

    it = iterator()
    data, lengths, state, item, _ = pull_oracle(items[:cut], budget, field=field)
    if state == 1:                      # it took them all and asked for more
        state, item = 3, broken
    out = bytearray(4 * sum(len(x) if isinstance(x, (str, bytes)) else 12 for x in items) + 4)
    got = pull_utf8(it, budget, out, field)
    assert (got[0], got[1].tolist(), got[2]) == (len(data), lengths, state) and out[:len(data)] == data
    assert got[3] is item or got[3] == item



@settings(max_examples=300, deadline=None)
@given(items=_PULL_ITEMS, budget=st.integers(min_value=1, max_value=120),
       room=st.integers(min_value=0, max_value=150))
@example(items=["abc", "de"], budget=100, room=5)               # exactly full
@example(items=["abc", "é"], budget=100, room=4)                # 1 character of 2 bytes at most: fits
@example(items=["abc", "éa"], budget=100, room=6)               # 2 characters of 2 bytes at most: might not
@example(items=["", "a"], budget=10, room=0)
@example(items=[b"ab", b"cde"], budget=100, room=5)             # bytes: exactly full
@example(items=[b"ab", b"cdef"], budget=100, room=5)            # bytes that do not fit: handed back
def test_pull_utf8_into_a_buffer_equals_oracle(items, budget, room):
    from bpe_fast._encode import pull_utf8

    iterator = iter(items)
    data, lengths, state, item, pulled = pull_oracle(items, budget, room, "text")
    out = bytearray(b"\xee" * (room + 4))                       # 4 guard bytes past the view
    got = pull_utf8(iterator, budget, memoryview(out)[:room], "text")
    assert (got[0], got[1].tolist(), got[2]) == (len(data), lengths, state)
    assert bytes(out[:len(data)]) == data and out[room:] == b"\xee" * 4
    assert got[3] is item or got[3] == item
    assert list(iterator) == items[pulled:]


# items for pull_utf8(batches=True): those above, and batches of them (plain lists, dicts whose "text" holds one,
# a batch inside a batch), empty ones too
_PULL_DOCUMENT = st.one_of(st.text(max_size=6), st.text(alphabet="a\ud800日", max_size=3), st.binary(max_size=3),
                           st.integers(), st.fixed_dictionaries({"text": st.text(alphabet="ab日", max_size=3)}),
                           st.just({"title": "a"}))
_PULL_BATCHES = st.lists(st.one_of(_PULL_DOCUMENT, st.lists(_PULL_DOCUMENT, max_size=5),
                                   st.fixed_dictionaries({"text": st.lists(_PULL_DOCUMENT, max_size=5)}),
                                   st.lists(st.one_of(_PULL_DOCUMENT, st.lists(_PULL_DOCUMENT, max_size=2)),
                                            max_size=3)), max_size=10)


def _flattened(items, field="text"):
    """The documents of items, a batch (a plain list, or a plain dict whose field holds one) in its place."""
    out = []
    for item in items:
        batch = item if type(item) is list else item[field] if type(item) is dict and type(
            item.get(field)) is list else None
        out.extend([item] if batch is None else batch)
    return out


@settings(max_examples=400, deadline=None)
@given(items=_PULL_BATCHES, budget=st.integers(min_value=1, max_value=60), room=st.integers(min_value=0, max_value=80))
@example(items=[["a"]] * 3, budget=100, room=100)
@example(items=[[], "ab", [], []], budget=100, room=100)
@example(items=[["ab", "cd"], "e"], budget=2, room=100)            # the budget reached inside a batch
@example(items=[["ab", 5, "cd"], "e"], budget=100, room=100)       # an item handed back inside a batch
@example(items=[["ab", ["x"]], "e"], budget=100, room=100)         # a batch inside a batch: handed back
@example(items=[{"text": ["ab", {"text": ["x"]}]}], budget=100, room=100)
def test_pull_utf8_of_batches_equals_oracle_of_their_documents(items, budget, room):
    # with batches=True a batch's documents are pulled in its place; where the pull stops inside one, the rest
    # of it comes back as an iterator: with the input's items left, the documents not yet pulled
    from bpe_fast._encode import pull_utf8

    documents = _flattened(items)
    data, lengths, state, item, pulled = pull_oracle(documents, budget, room, "text")
    iterator = iter(items)
    out = bytearray(b"\xee" * (room + 4))
    got = pull_utf8(iterator, budget, memoryview(out)[:room], "text", True)
    assert (got[0], got[1].tolist(), got[2]) == (len(data), lengths, state)
    assert bytes(out[:len(data)]) == data and out[room:] == b"\xee" * 4
    assert got[3] is item or got[3] == item
    rest = got[4]
    assert rest is None or state != 1
    assert (list(rest) if rest is not None else []) + _flattened(list(iterator)) == documents[pulled:]


def test_pull_utf8_without_batches_hands_a_list_back():
    from bpe_fast._encode import pull_utf8

    out = bytearray(16)
    batch = ["b", "c"]
    assert [x.tolist() if hasattr(x, "tolist") else x for x in pull_utf8(iter(["a", batch]), 16, out, "text")] == \
        [1, [1], 2, batch, None]


def test_batch_ring_hands_bytes_through_shared_slots_and_frees_them(monkeypatch):
    import pickle
    from bpe_fast.count_workers import BatchRing
    from bpe_fast.inputs import Batch, SlotBatch
    from bpe_fast.procs import worker_context
    ring = BatchRing(worker_context(), 2, 16)
    one = Batch(b"hello world", np.array([0, 5, 11], dtype=np.int64), ("docs", 3, None, None))
    two = Batch(b"x" * 16, np.array([0, 16], dtype=np.int64), ("docs", 4, None, None))         # exactly a slot
    big = Batch(b"y" * 17, np.array([0, 17], dtype=np.int64), ("docs", 5, None, None))
    first = ring.pack(one)
    assert isinstance(first, SlotBatch) and first.length == 11 and first.size == 11
    assert ring.pack(first) is first                                          # already in a slot
    assert ring.pack(big) is big and ring.data(big) is big.data               # too big for a slot: whole
    ring.done(big)                                                            # frees nothing
    second = pickle.loads(pickle.dumps(ring.pack(two)))                       # as the queue sends it
    assert ring.pack(one, timeout=0.01) is one                               # no slot free: whole
    assert ring.take(0.01) is None
    for packed, batch in ((second, two), (first, one)):
        assert bytes(ring.data(packed)) == batch.data                         # read in the slot, no copy
        assert packed.bounds.tolist() == batch.bounds.tolist() and packed.origin == batch.origin
        ring.done(packed)
    assert all(isinstance(ring.pack(b), SlotBatch) for b in (one, two))      # both slots free again
    assert BatchRing(worker_context(), 100, 1 << 10).n_slots == BatchRing.MAX_SLOTS
    assert BatchRing.MAX_BYTES // BatchRing.MAX_SLOT_BYTES == 4                # slots of 64 MB: 4 at most
    monkeypatch.setattr(BatchRing, "MAX_SLOT_BYTES", 32)
    monkeypatch.setattr(BatchRing, "MAX_BYTES", 100)
    capped = BatchRing(worker_context(), 100, 1 << 40)
    assert (capped.slot_bytes, capped.n_slots) == (32, 3)


def test_a_reader_writes_into_leased_slots_and_the_counts_are_the_oracles():
    # _iterable_slot_batches against the oracle: plain strs, bytes, mappings and strs too big for what is left of
    # a slot (they start the next batch) or for a whole slot (a Batch of their own); every slot given back
    from bpe_fast.count_workers import BatchRing
    from bpe_fast import inputs
    from bpe_fast.inputs import Batch, SlotBatch, _iterable_slot_batches
    from bpe_fast.procs import worker_context
    from bpe_fast.pretokenize import ChunkCounter

    class Slots(inputs.Slots):
        def __init__(self, ring, refused=()):
            self.ring, self.leased, self.refused = ring, 0, refused
            self.slot_bytes = ring.slot_bytes

        def lease(self):                        # None for the leases in `refused`, as when none comes free
            self.leased += 1
            if self.leased in self.refused:
                return None
            slot = self.ring.take(1)
            assert slot is not None, "every slot is taken: a batch was never given back"
            return slot

        def view(self, slot):
            return self.ring.view(slot)

        def release(self, slot):
            self.ring.release(slot)

    docs = documents(21, n=40)
    docs[0], docs[1] = "a" * 50, "b " * 50             # the second does not fit what the first leaves: carried
    docs[3] = "é" * 30 + docs[3]                      # 2 bytes a character, in a 1-byte str
    docs[7] = "🙂 " * 40                               # 4 bytes a character
    docs[12] = "x" * 150                               # more than a whole slot of 128 bytes
    docs[20] = "ab " * 30 + "\u4e2d"                   # 90 characters of a UCS-2 str: up to 273 bytes
    items = [d.encode() if k % 9 == 4 else {"text": d} if k % 11 == 5 else d for k, d in enumerate(docs)]
    ring = BatchRing(worker_context(), 3, 128)
    for refused in ((), (2, 3, 7)):             # slots for every batch; some batches without one (their own buffer)
        slots = Slots(ring, refused)
        counter = ChunkCounter([EOT])
        got_docs = []
        kinds = set()
        for batch in _iterable_slot_batches(iter(items), 64, "text", "docs", slots):
            data = ring.data(batch)
            kinds.add(type(batch))
            assert batch.origin == ("docs", len(got_docs), None, None)
            bounds = batch.bounds
            got_docs += [bytes(data[bounds[k]:bounds[k + 1]]).decode() for k in range(len(bounds) - 1)]
            counter.add_documents(data, bounds)
            ring.done(batch)
        assert got_docs == docs
        assert kinds == {SlotBatch, Batch}
        assert counter.to_dict() == oracle_docs(docs)
        assert ring.free.qsize() == 3 and slots.leased > 7
    assert list(_iterable_slot_batches(iter([]), 64, "text", "docs", slots)) == [] and ring.free.qsize() == 3


def test_a_stream_worker_counts_packed_and_whole_batches_and_frees_every_slot(tmp_path):
    # what a stream worker does with its queue, run here: packed batches (their bytes in slots), a whole one,
    # then the end; the table is the documents' counts and every slot is free again
    import queue as queues
    import bpe_fast.count_workers as cw
    from bpe_fast.count_workers import BatchRing, Tally, _count_queued, _init_stream_worker, _read_table
    from bpe_fast.inputs import Batch
    from bpe_fast.procs import worker_context
    docs = documents(14, n=30)
    batches = []
    for k in range(0, 30, 5):
        data = [d.encode() for d in docs[k:k + 5]]
        bounds = np.zeros(6, dtype=np.int64)
        np.cumsum([len(x) for x in data], out=bounds[1:])
        batches.append(Batch(b"".join(data), bounds, ("docs", k, None, None)))
    context = worker_context()
    ring = BatchRing(context, 3, max(len(b.data) for b in batches))
    items: queues.Queue = queues.Queue()
    for number, batch in enumerate(batches):
        packed = ring.pack(batch, timeout=0.01)
        items.put((number, packed))
    tally = Tally(context)
    saved = (cw._bytes_done, cw._queue, cw._ring)
    try:
        _init_stream_worker(tally, items, ring)
        # the first 3 went through slots, the rest whole (no slot free until the worker frees them)
        assert sum(not isinstance(items.queue[k][1], Batch) for k in range(len(batches))) == 3
        items.put(None)
        out = _count_queued([EOT], GPT2_PATTERN, "strict", str(tmp_path / "table.npy"))
    finally:
        cw._bytes_done, cw._queue, cw._ring = saved
    tokens, offsets, counts = _read_table(out)
    got = {tokens[offsets[i]:offsets[i + 1]].tobytes(): int(counts[i]) for i in range(len(counts))}
    assert got == oracle_docs(docs)
    assert tally.documents == 30 and tally.value == sum(len(b.data) for b in batches)
    assert ring.free.qsize() == 3                                            # every slot back


def test_documents_bigger_than_a_ring_slot_go_whole_and_count_as_the_oracle():
    docs = documents(13, n=60)
    docs[10] = make_corpus(77, n_words=60000)          # far bigger than a slot (2 x 64 KB at least)
    assert len(docs[10].encode()) > 300_000
    for procs in (2, 3):
        assert count_pretokens(iter(docs), [EOT], num_processes=procs, chunk_bytes=1 << 10) == oracle_docs(docs)


def test_a_symbolic_link_to_nothing_or_in_a_loop_is_named_so(tmp_path):
    # os.path.exists is False for both, and the error said "corpus file not found" for a path that is there
    from bpe_fast import Tokenizer, encode_file
    (tmp_path / "loop1").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
    (tmp_path / "dangling.txt").symlink_to(tmp_path / "nothere.txt")
    with pytest.raises(OSError, match=r"corpus path is a loop of symbolic links: '.*loop1'$") as err:
        count_pretokens(tmp_path / "loop1", num_processes=1)
    assert err.value.errno == errno.ELOOP
    with pytest.raises(FileNotFoundError, match=r"corpus path is a symbolic link to .*nothere\.txt, which does not "
                                                r"exist: '.*dangling\.txt'$"):
        count_pretokens([tmp_path / "dangling.txt"], num_processes=1)
    with pytest.raises(FileNotFoundError, match=r"symbolic link to .*nothere\.txt"):
        encode_file(Tokenizer({i: bytes([i]) for i in range(256)}, []), tmp_path / "dangling.txt", tmp_path / "x.npy")
    with pytest.raises(FileNotFoundError, match=r"corpus file not found: '.*missing\.txt'$"):
        count_pretokens(tmp_path / "missing.txt", num_processes=1)


@pytest.mark.parametrize("how", ["itself", "a link to it", "a hard link"])
@pytest.mark.parametrize("suffix", [".txt", ".jsonl"])
def test_encode_file_refuses_to_write_over_its_input(tmp_path, how, suffix):
    # encode_file(tok, "x.txt", "x.txt") renamed the finished .npy over the corpus, saying nothing (the CLI
    # refused it); found by helper-115
    import os
    from bpe_fast import Tokenizer, encode_file
    corpus = tmp_path / f"c{suffix}"
    corpus.write_text('{"text": "hello world"}\n' if suffix == ".jsonl" else "hello world\n")
    before = corpus.read_bytes()
    output = {"itself": corpus, "a link to it": tmp_path / "link.npy", "a hard link": tmp_path / "hard.npy"}[how]
    if how == "a link to it":
        output.symlink_to(corpus)
    elif how == "a hard link":
        os.link(corpus, output)
    with pytest.raises(ValueError, match=rf"output_path {re.escape(str(output))} is the input file "):
        encode_file(Tokenizer({i: bytes([i]) for i in range(256)}, []), corpus, output)
    assert corpus.read_bytes() == before
    assert encode_file(Tokenizer({i: bytes([i]) for i in range(256)}, []), corpus, tmp_path / "ids.npy") > 0


def test_every_inputs_tables_are_summed_into_one_when_the_caller_sums_them(tmp_path, monkeypatch):
    # training laid out each common word once an input (a corpus of 10 files: 23% more memory, 10% more time
    # than the same text as one file); with combine, count_input_tables adds each input's table into one as it
    # comes; the oracle: the tables without combine, summed here in Python
    import bpe_fast.count_workers as cw
    monkeypatch.setattr(cw, "_IN_PROCESS_BYTES", 2000)        # the text files by byte ranges, on workers
    docs = [make_corpus(700 + k, n_words=30 + k) for k in range(12)]
    (tmp_path / "a.txt").write_text(EOT.join(docs[:4]), encoding="utf-8")
    (tmp_path / "b.txt").write_text(EOT.join(docs[4:8]), encoding="utf-8")
    with gzip.open(tmp_path / "c.txt.gz", "wt", encoding="utf-8") as f:
        f.write(EOT.join(docs[8:10]))
    (tmp_path / "d.jsonl").write_text("".join(json.dumps({"text": d}) + "\n" for d in docs[10:]), encoding="utf-8")
    inputs = [tmp_path / name for name in ("a.txt", "b.txt", "c.txt.gz", "d.jsonl")]

    def as_dict(tables):
        out = {}
        for tokens, offsets, counts in tables:
            blob = tokens.tobytes()
            for k, n in enumerate(counts.tolist()):
                word = blob[offsets[k]:offsets[k + 1]]
                out[word] = out.get(word, 0) + n
        return out

    for procs in (1, 2):
        apart = cw.count_input_tables(inputs, [EOT], GPT2_PATTERN, procs, chunk_bytes=1 << 10)
        summed = cw.count_input_tables(inputs, [EOT], GPT2_PATTERN, procs, chunk_bytes=1 << 10, combine=True)
        assert len(apart) >= 2 and len(summed) == 1
        tokens, offsets, _ = summed[0]
        words = [tokens.tobytes()[offsets[k]:offsets[k + 1]] for k in range(len(offsets) - 1)]
        assert len(set(words)) == len(words)                     # each word once
        assert as_dict(summed) == as_dict(apart) == oracle_count_pretokens(EOT.join(docs), [EOT], GPT2_PATTERN)


def test_consecutive_text_files_are_counted_by_one_pool_and_the_first_failure_in_their_order_is_named(
        tmp_path, monkeypatch):
    # a corpus of many files started a pool of workers (and summed two tables) a file: their byte ranges are now
    # claimed by one pool; an invalid byte or a file that cannot be read is still named first in the files' order
    import bpe_fast.count_workers as cw
    monkeypatch.setattr(cw, "_IN_PROCESS_BYTES", 2000)
    pools = []
    real = cw._count_claimed_units
    monkeypatch.setattr(cw, "_count_claimed_units", lambda n, *a, **k: pools.append(n) or real(n, *a, **k))
    docs = [make_corpus(900 + k, n_words=40 + 3 * k) for k in range(15)]
    paths = []
    for f in range(5):
        path = tmp_path / f"{f}.txt"
        path.write_text(EOT.join(docs[3 * f:3 * f + 3]), encoding="utf-8")
        paths.append(path)
    expected = oracle_count_pretokens(EOT.join(docs), [EOT], GPT2_PATTERN)
    for procs in (1, 2, 3):
        pools.clear()
        assert count_pretokens(paths, [EOT], num_processes=procs, chunk_bytes=1 << 10) == expected
        assert len(pools) == (procs > 1) and all(n >= 5 for n in pools)
    assert train_bpe(paths, 300, [EOT], num_processes=2, chunk_bytes=1 << 10) == \
        train_bpe(tmp_path / "*.txt", 300, [EOT], num_processes=1)

    def corrupt(f, where):
        data = bytearray(paths[f].read_bytes())
        at = int(len(data) * where)
        while data[at - 1] >= 0x80 or data[at] >= 0x80:     # an ASCII byte after one: the error is there
            at += 1
        data[at] = 0xFF
        paths[f].write_bytes(bytes(data))
        return at

    late = corrupt(3, 0.9)
    early = corrupt(4, 0.05)                   # met first in time by a claimant, perhaps; not first in order
    for procs in (1, 2, 3):
        with pytest.raises(CorpusDecodeError) as info:
            count_pretokens(paths, [EOT], num_processes=procs, chunk_bytes=1 << 10)
        assert (info.value.path, info.value.offset) == (str(paths[3]), late)
    first = corrupt(1, 0.5)
    with pytest.raises(CorpusDecodeError) as info:
        count_pretokens(paths, [EOT], num_processes=2, chunk_bytes=1 << 10)
    assert (info.value.path, info.value.offset) == (str(paths[1]), first)
    assert early > 0
    # a file that cannot be read (a folder in its place once listed) before the first invalid byte: that file
    listed = [(str(p), p.stat().st_size) for p in paths]
    paths[0].unlink()
    paths[0].mkdir()
    for procs in (1, 2):
        with pytest.raises(IsADirectoryError) as info:
            cw.count_text_files_tables(listed, [EOT], GPT2_PATTERN, procs, "strict", 1 << 10, None)
        assert info.value.filename == str(paths[0])


PUNCTUATED = ("Hello.  World, yes!  ok (a)  b?  c\r\n  d.\t e 12 345  6.7  x(  )y  'll  \u00e9t\u00e9.  "
              "\u6f22\u5b57\u3002  -- __init__  ?!  ")


@pytest.mark.parametrize("name", SHORT_NAMES)
@pytest.mark.parametrize("num_processes", [1, 2])
def test_a_file_cut_in_small_chunks_counts_as_the_whole_text_with_every_built_in_pattern(tmp_path, name,
                                                                                          num_processes):
    # a file is cut into chunks where the pattern allows (chunking.cuts_at_spaces): for BLOOM's, a cut before a
    # space after "." split '. ' into '.' and ' ' (a review found it: its punctuation runs take the spaces after)
    from bpe_fast.patterns import resolve_pattern

    text = PUNCTUATED * 300
    path = tmp_path / "punctuated.txt"
    write_text(path, text)
    expected = oracle_count_pretokens(text, [], resolve_pattern(name))
    got = count_pretokens(str(path), [], pattern=name, num_processes=num_processes, chunk_bytes=700)
    assert {k: v for k, v in got.items() if v} == dict(expected)
    # and cut it is, for every one of them (so that the processes share a file without special tokens)
    from bpe_fast.chunking import chunk_boundaries
    assert len(chunk_boundaries(path, [], name, chunk_bytes=700)) > len(text) // 1000


@pytest.mark.parametrize("name", ["bloom", "gpt2", "o200k"])
def test_encode_file_cut_in_small_chunks_gives_encode_of_the_whole_text(tmp_path, name):
    # encode_file cuts where counting does (the same review: BLOOM's ids differed, 200,039 for 200,000)
    from bpe_fast import Tokenizer, encode_file

    text = PUNCTUATED * 300
    path = tmp_path / "punctuated.txt"
    write_text(path, text)
    tok = Tokenizer({i: bytes([i]) for i in range(256)} | {256: b". ", 257: b"  "}, [(b".", b" "), (b" ", b" ")],
                    pattern=name)
    encode_file(tok, path, tmp_path / "ids.npy", num_processes=2, chunk_bytes=700)
    assert np.load(tmp_path / "ids.npy").tolist() == tok.encode(text)


@pytest.mark.parametrize("num_processes", [1, 2])
def test_the_first_error_in_input_order_whatever_the_processes(tmp_path, num_processes):
    # a file with invalid UTF-8, then a JSON-lines file without the field: the first file's error, with any
    # number of processes (with two, the second file's error was raised while a counter still held the first's
    # batch: a review found it)
    first, second = tmp_path / "a.txt.gz", tmp_path / "b.jsonl.gz"
    first.write_bytes(gzip.compress(b"some words\n" * 1000 + b"\xff"))
    second.write_bytes(gzip.compress(b'{"txt": 1}\n'))
    with pytest.raises(CorpusDecodeError, match=r"a\.txt\.gz: invalid UTF-8 at byte offset 11000 \(line 1001\)"):
        count_pretokens([str(first), str(second)], [EOT], num_processes=num_processes)
    with pytest.raises(InputError, match=r"b\.jsonl\.gz:1: no field 'text'"):
        count_pretokens([str(second), str(first)], [EOT], num_processes=num_processes)


class _Broken(Exception):
    """What the iterators below raise."""


def _documents_then(failure, bad=True, size=20):
    """An iterable input: a few documents (the second invalid UTF-8 when bad, each about `size` bytes), then
    `failure`: "type" (an int item), "field" (a record without the field), or "raise" (the iterator raises)."""
    yield "fine words " * (size // 11 + 1)
    yield b"bad \xff utf8" if bad else b"good utf8"
    yield "more words " * (size // 11 + 1)
    if failure == "type":
        yield 3
    elif failure == "field":
        yield {"title": "x"}
    else:
        raise _Broken("the iterator broke")


_LATER_ERRORS = {"type": (TypeError, r"item 3 of the input is int"),
                 "field": (InputError, r"item 3 of the input has no field 'text'"),
                 "raise": (_Broken, r"the iterator broke")}


@pytest.mark.parametrize("failure", sorted(_LATER_ERRORS))
@pytest.mark.parametrize("num_processes", [1, 2])
@pytest.mark.parametrize("max_bytes", [None, 10 ** 9])
@pytest.mark.parametrize("size", [20, 3 << 20])     # one batch, or batches of their own
def test_an_iterable_s_first_error_in_input_order_whatever_the_batches(failure, num_processes, max_bytes, size):
    # an item's invalid UTF-8 (found where the batch is counted), then a later item's type error, a record
    # without the field or the iterator's own exception: the invalid UTF-8's error whether or not the two land in
    # one batch (in one, the later error came first: a review found it), and the later error alone without it
    with pytest.raises(CorpusDecodeError, match=r"iterable: invalid UTF-8 at document 1, byte offset 4"):
        count_pretokens(_documents_then(failure, size=size), [EOT], num_processes=num_processes,
                        max_bytes=max_bytes)
    kind, message = _LATER_ERRORS[failure]
    with pytest.raises(kind, match=message):
        count_pretokens(_documents_then(failure, bad=False, size=size), [EOT], num_processes=num_processes,
                        max_bytes=max_bytes)


@needs_zstandard
@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz", ".zst"])
def test_a_cap_before_a_damaged_end_reads_as_the_capped_text(tmp_path, suffix):
    # max_bytes takes the corpus's first bytes: damage well past them is not read, in a compressed text file as in
    # JSON lines (a review found the .txt.gz read 1 MB ahead and refused; the .jsonl.gz read)
    import zstandard

    compress = {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress,
                ".zst": zstandard.ZstdCompressor().compress}[suffix]
    text = "".join(f"word other \u00e9 {i}\n" for i in range(60_000))
    path = tmp_path / f"t.txt{suffix}"
    path.write_bytes(compress(text.encode())[:-5000])        # cut short: its end is damaged
    for cap in (10, 1000, 100_000):
        expected = oracle_count_pretokens(text.encode()[:cap].decode("utf-8", "ignore"), [EOT], GPT2_PATTERN)
        assert count_pretokens(str(path), [EOT], num_processes=1, max_bytes=cap) == expected
    with pytest.raises(InputError, match=re.escape(str(path))):
        count_pretokens(str(path), [EOT], num_processes=1)


@pytest.mark.parametrize("procs", [1, 2])
def test_a_mapping_input_is_one_item_not_its_keys(procs):
    # a dict of columns (HF datasets' dataset[:n]) passed as the input was iterated: its keys were the documents,
    # and the corpus counted was {b"text": 1, b"id": 1}
    columns = {"text": ["hello world", "naïve café"], "id": [1, 2]}
    assert count_pretokens(columns, [EOT], num_processes=procs) == oracle_docs(columns["text"])
    assert count_pretokens({"text": "hello world"}, [EOT], num_processes=procs) == oracle_docs(["hello world"])
    assert count_pretokens(columns, [EOT], num_processes=procs, max_documents=1) == oracle_docs(["hello world"])
    assert count_pretokens({"body": ["a b"]}, [EOT], num_processes=procs, text_field="body") == oracle_docs(["a b"])
    with pytest.raises(InputError, match=r"the input is a mapping without a field 'text' \(fields: \['test', "
                                         r"'train'\]\)"):
        count_pretokens({"train": [], "test": []}, num_processes=procs)      # (a DatasetDict: its splits)


@needs_pyarrow
@pytest.mark.parametrize("errors", ["strict", "replace"])
@pytest.mark.parametrize("max_bytes", [2, 3])
def test_max_bytes_at_the_end_of_a_parquet_document_keeps_it_whole(tmp_path, errors, max_bytes):
    # the cap was cut back to a character boundary in the record batch's bytes, not in the document: a cap at the
    # end of "ab" before a document beginning with a continuation byte (not UTF-8) cut "ab" to "a", where the
    # same documents from an iterable keep "ab"
    docs = [b"ab", b"\x80cd"]
    _parquet_of_bytes(tmp_path / "c.parquet", docs, 10)
    taken = ["ab"] + (["\ufffd"] if max_bytes == 3 else [])
    if max_bytes == 3 and errors == "strict":
        for inp in (tmp_path / "c.parquet", iter(docs)):
            with pytest.raises(CorpusDecodeError, match=r"document 1, byte offset 0 of the document"):
                count_pretokens(inp, [EOT], num_processes=1, max_bytes=max_bytes, errors=errors)
        return
    for inp in (tmp_path / "c.parquet", iter(docs)):
        assert count_pretokens(inp, [EOT], num_processes=1, max_bytes=max_bytes, errors=errors) == oracle_docs(taken)


def _resident_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads /proc/self/statm (Linux)")
def test_a_batch_ring_is_resident_only_as_its_slots_are_written():
    # RawArray's memset made all of a ring resident at once: 64 MB of slots for a few bytes of input
    import multiprocessing
    from bpe_fast.count_workers import BatchRing
    before = _resident_bytes()
    ring = BatchRing(multiprocessing.get_context("fork"), 4, 16 << 20)
    try:
        assert ring.n_slots * ring.slot_bytes == 64 << 20
        assert _resident_bytes() - before < 16 << 20
        view = ring.view(1)
        view[:3] = [1, 2, 3]
        # shared with a forked process both ways (what the workers read, and the slots they free)
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:        # the child: reports what it reads, writes into the slot, exits at once
            os.write(write, bytes(ring.view(1)[:3]))
            ring.view(1)[3] = 9
            os._exit(0)
        assert os.read(read, 3) == b"\x01\x02\x03"
        os.waitpid(pid, 0)
        assert view[3] == 9
        os.close(read)
        os.close(write)
    finally:
        ring.close()
