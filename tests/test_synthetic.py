"""Tests of bpe_fast.synthetic: the deterministic TinyStories-like and web-like corpus generator."""
import hashlib
import io
import itertools
import os
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest
import regex

from bpe_fast import synthetic
from bpe_fast.synthetic import generate, iter_documents, mixed_text, parse_size

ROOT = Path(__file__).resolve().parents[1]
SEP = b"\n<|endoftext|>\n"
WEB_SHA256_PREFIX = "d7a7e0d242dc9bba"  # the first 100,000 bytes of seed 0, web style


def corpus(size, seed=0, **kwargs):
    out = io.BytesIO()
    assert generate(out, size, seed, **kwargs) == size
    return out.getvalue()


def run_module(*args, **kwargs):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, **kwargs)


def test_same_seed_same_bytes_and_different_seed_differs(tmp_path):
    a = corpus(300_000, seed=1)
    assert corpus(300_000, seed=1) == a
    generate(tmp_path / "c.txt", 300_000, seed=1)  # a path gives the same bytes as a file object
    assert (tmp_path / "c.txt").read_bytes() == a
    assert corpus(300_000, seed=2) != a
    assert corpus(300_000, seed=2)[:1000] != a[:1000]


@pytest.mark.parametrize("size", [0, 1, 2, 3, 17, 4096, 999_999, 3_000_001])
def test_exact_size_and_valid_utf8(size):
    data = corpus(size, seed=size % 3)
    assert len(data) == size
    data.decode("utf-8")  # raises if a character was split


def test_a_smaller_corpus_is_a_prefix_of_a_larger_one():
    big = corpus(2_000_000, seed=4)
    for size in (1000, 1_500_000):
        small = corpus(size, seed=4)
        # equal except where the cut replaced a split character by "\n" (at most 3 bytes)
        assert small[:-3] == big[: size - 3]


def test_a_cut_inside_a_character_pads_with_newlines():
    big = corpus(3_000_000, seed=7)
    text = big.decode("utf-8")
    # the byte offset of the first 4-byte (emoji) and 3-byte (CJK) characters
    for width in (4, 3):
        char_index = next(i for i, ch in enumerate(text) if len(ch.encode()) == width)
        offset = len(text[:char_index].encode())
        for inside in range(1, width):
            cut = corpus(offset + inside, seed=7)
            assert cut == big[:offset] + b"\n" * inside
            cut.decode("utf-8")


def test_documents_are_separated_by_the_special_token_on_its_own_line():
    data = corpus(1_000_000, seed=0)
    docs = data.split(SEP)
    assert len(docs) > 500
    for doc in docs[:-1]:  # the last one is cut short
        assert doc and doc == doc.strip()  # no blank line or space around the separator

    assert b"<|endoftext|>" not in corpus(100_000, seed=0, special_token=None)
    assert b"\n<|doc|>\n" in corpus(100_000, seed=0, special_token="<|doc|>")


def test_iter_documents_is_the_corpus():
    docs = list(itertools.islice(iter_documents(3), 500))
    joined = b"".join(d.encode() + SEP for d in docs)
    assert corpus(200_000, seed=3) == joined[:200_000]


def test_content_is_mixed_language_stories():
    text = corpus(2_000_000, seed=0).decode("utf-8")
    for script in ("Cyrillic", "Greek", "Han", "Hiragana", "Hangul", "Arabic"):
        assert regex.search(rf"\p{{{script}}}", text), script
    assert regex.search(r"\p{Extended_Pictographic}", text)  # emoji
    non_latin = len(regex.findall(r"[^\p{Latin}\p{Common}\p{Inherited}]", text))
    assert 0.002 < non_latin / len(text) < 0.1  # a slice, not the bulk
    for needle in ("Don't", "I'm", "She'll", "can't", '"', "\u201c", "\n\n", "!", "?", ", "):
        assert needle in text, needle
    assert regex.search(r"\b\d{3,}\b", text)  # numbers
    # Zipf-like: the most common words are far more common than the median word
    words = regex.findall(r"\p{Latin}+", text.lower())
    counts = sorted(Counter(words).values(), reverse=True)
    assert counts[0] > 20 * counts[len(counts) // 2]


def test_mixed_text():
    text = mixed_text(5000, seed=9)
    assert isinstance(text, str) and len(text) == 5000
    assert mixed_text(100, seed=9) == text[:100]
    assert mixed_text(5000, seed=10) != text
    assert "<|endoftext|>" not in mixed_text(50_000, seed=9)
    assert "<|endoftext|>" in mixed_text(50_000, seed=9, special_token="<|endoftext|>")
    assert mixed_text(0) == ""


@pytest.mark.parametrize(
    "text, size",
    [("4096", 4096), ("10KB", 10_000), ("100MB", 100_000_000), ("2GB", 2_000_000_000), ("1.5GB", 1_500_000_000),
     ("64KiB", 65_536), ("3MiB", 3 * 2**20), ("2GiB", 2 * 2**30), ("10M", 10_000_000), ("5 mb", 5_000_000),
     ("7B", 7), ("0.5KiB", 512), ("1.005KB", 1005), ("0", 0)],
)
def test_parse_size(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "MB", "12XB", "-5MB", "1e6", "10 MB extra", "ten"])
def test_parse_size_rejects(text):
    with pytest.raises(ValueError, match="invalid size"):
        parse_size(text)


@pytest.mark.parametrize("text", ["0.5", "1.5", "0.0001KB", "1.00005KB"])
def test_parse_size_refuses_part_of_a_byte(text):
    # "synth --size 0.5" wrote 0 bytes and "--max-bytes 1.5" read 2, rounded without a word
    with pytest.raises(ValueError, match="is not a whole number of bytes"):
        parse_size(text)


def test_bad_arguments(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing/corpus.txt"):
        generate(tmp_path / "missing" / "corpus.txt", 10)
    with pytest.raises(ValueError, match="size_bytes"):
        generate(io.BytesIO(), -1)
    with pytest.raises(TypeError, match="size_bytes"):
        generate(io.BytesIO(), 10.5)
    with pytest.raises(TypeError, match="binary"):
        generate(io.StringIO(), 10)
    with pytest.raises(ValueError, match="seed"):
        generate(io.BytesIO(), 10, seed=-1)
    with pytest.raises(ValueError, match="seed"):
        iter_documents(-1)
    with pytest.raises(TypeError, match="seed must be an int, got float"):
        generate(io.BytesIO(), 10, seed=1.0)


def test_cli_writes_the_file(tmp_path):
    out = tmp_path / "corpus.txt"
    result = run_module("-m", "bpe_fast.synthetic", "--size", "200KB", "-o", str(out), "--seed", "5")
    assert result.returncode == 0, result.stderr
    assert out.read_bytes() == corpus(200_000, seed=5)
    assert os.listdir(tmp_path) == ["corpus.txt"]


def test_cli_bad_size_is_a_one_line_error(tmp_path):
    out = tmp_path / "corpus.txt"
    result = run_module("-m", "bpe_fast.synthetic", "--size", "12XB", "-o", str(out))
    assert result.returncode != 0
    assert result.stderr.count("\n") == 1 and "invalid size '12XB'" in result.stderr
    assert not out.exists()


def test_module_command_line_errors_stdout_and_signals(tmp_path):
    # python -m bpe_fast.synthetic: a bad --seed was a traceback, "-o -" made a file named "-", SIGTERM left
    # its temporary file (as large as what was written) and a closed pipe was a traceback (helper-146)
    import signal
    import time
    for args in (["--seed", "-1"], ["--style", "web", "--seed", str(2 ** 64)]):
        result = run_module("-m", "bpe_fast.synthetic", "--size", "1KB", *args, "-o", str(tmp_path / "x.txt"),
                            cwd=tmp_path)
        assert result.returncode == 1 and result.stderr.count("\n") == 1 and ": --seed: " in result.stderr
    result = subprocess.run([sys.executable, "-m", "bpe_fast.synthetic", "--size", "2KB", "--seed", "3", "-o", "-"],
                            capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=tmp_path)
    assert result.returncode == 0 and result.stdout == corpus(2_000, seed=3)
    assert os.listdir(tmp_path) == []
    for sig in (signal.SIGTERM, signal.SIGHUP):
        proc = subprocess.Popen([sys.executable, "-m", "bpe_fast.synthetic", "--size", "20GB", "-o",
                                 str(tmp_path / "big.txt")], stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                                env={**os.environ, "PYTHONPATH": str(ROOT)})
        deadline = time.time() + 60
        while not any(p.stat().st_size > 0 for p in tmp_path.iterdir()) and time.time() < deadline:
            time.sleep(0.01)                     # the temporary file is being written
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 1 and "interrupted; nothing written" in err and "Traceback" not in err, err
        assert os.listdir(tmp_path) == []
    reader = subprocess.Popen([sys.executable, "-m", "bpe_fast.synthetic", "--size", "50MB", "-o", "-"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)})
    reader.stdout.read(10)
    reader.stdout.close()
    assert reader.wait(60) == 141 and reader.stderr.read() == b""


def test_short_writes_of_a_raw_file_object_are_written_on(tmp_path):
    # generate ignored what write() returned: a raw file object (io.FileIO on a pipe, a signal arriving) that
    # took part of a block lost the rest, and generate returned the full size (helper-146)
    class Trickle(io.RawIOBase):
        def __init__(self):
            self.data = bytearray()

        def writable(self):
            return True

        def write(self, b):
            part = bytes(b[:7777])
            self.data += part
            return len(part)

    out = Trickle()
    assert generate(out, 300_000, seed=2) == 300_000 and bytes(out.data) == corpus(300_000, seed=2)

    class NonBlocking(Trickle):
        def write(self, b):
            return None
    with pytest.raises(BlockingIOError):
        generate(NonBlocking(), 1000)

    class Collector:            # a hand-written writer: returns nothing, reads what it is given as bytes
        def __init__(self):
            self.parts = []

        def write(self, data):
            self.parts.append(data.decode("utf-8"))
    out = Collector()
    assert generate(out, 50_000, seed=4) == 50_000 and "".join(out.parts).encode() == corpus(50_000, seed=4)


def test_argument_types_sizes_and_seeds_are_checked_when_called():
    # mixed_text(True) was 'O', mixed_text(1.5) a slice error naming nothing; parse_size rounded past 28 digits
    # (and took 1.00000000000000000000000000001KB for 1000); iter_documents(2**64, "web") failed at the first
    # document only (helper-146)
    for bad in (True, 1.5, "5", None):
        with pytest.raises(TypeError, match="n_chars must be an int"):
            mixed_text(bad)
    assert parse_size("12345678901234567890123456789") == 12345678901234567890123456789
    assert parse_size("123456789012345678901234567890123KB") == 123456789012345678901234567890123000
    with pytest.raises(ValueError, match=r"1000\.00000000000000000000000001 bytes is not a whole number"):
        parse_size("1.00000000000000000000000000001KB")
    with pytest.raises(ValueError, match="below 2\\*\\*64"):
        iter_documents(2 ** 64, "web")
    with pytest.raises(ValueError, match="below 2\\*\\*64"):
        mixed_text(10, seed=2 ** 64, style="web")
    assert next(iter_documents(2 ** 64))                     # the stories take any seed


def test_nothing_half_written_on_interrupt(tmp_path, monkeypatch):
    out = tmp_path / "corpus.txt"
    out.write_bytes(b"old")
    real_blocks = synthetic._blocks

    def interrupted(seed, doc_end):
        blocks = real_blocks(seed, doc_end)
        yield next(blocks)
        raise KeyboardInterrupt

    monkeypatch.setattr(synthetic, "_blocks", interrupted)
    with pytest.raises(KeyboardInterrupt):
        generate(out, 10_000_000)
    assert out.read_bytes() == b"old"  # the previous file is untouched
    assert os.listdir(tmp_path) == ["corpus.txt"]  # and no temporary file is left


def test_memory_does_not_grow_with_the_output(tmp_path):
    # Peak resident memory while writing 50 MB, above the baseline once the sentence pool is built.
    script = textwrap.dedent(
        """
        import resource, sys
        from bpe_fast import synthetic
        synthetic._pool(0)
        synthetic.generate(sys.argv[1], 1_000_000)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        synthetic.generate(sys.argv[1], 50_000_000)
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print((after - before) * (1 if sys.platform == "darwin" else 1024))
        """
    )
    result = run_module("-c", script, str(tmp_path / "big.txt"))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "big.txt").stat().st_size == 50_000_000
    growth = int(result.stdout)
    assert growth < 20_000_000, f"peak memory grew by {growth / 1e6:.1f} MB while writing 50 MB"


# ---- the web style --------------------------------------------------------------------------------------


def distinct_pretokens(tmp_path, data):
    from bpe_fast.counts import count_file

    path = tmp_path / f"c{len(data)}.txt"
    path.write_bytes(data)
    return len(count_file(path, ["<|endoftext|>"], num_processes=1))


def test_web_same_seed_same_bytes_and_different_seed_differs(tmp_path):
    a = corpus(300_000, seed=1, style="web")
    assert corpus(300_000, seed=1, style="web") == a
    generate(tmp_path / "c.txt", 300_000, seed=1, style="web")
    assert (tmp_path / "c.txt").read_bytes() == a
    assert corpus(300_000, seed=0, style="web")[:1000] != a[:1000]
    assert corpus(300_000, seed=1)[:1000] != a[:1000]  # not the stories
    # the same bytes on any machine: nothing but exact integer arithmetic and seeded Python random
    assert hashlib.sha256(corpus(100_000, seed=0, style="web")).hexdigest()[:16] == WEB_SHA256_PREFIX


def test_web_seed_of_2_to_the_64_or_more_is_a_value_error(tmp_path):
    # it was an OverflowError from numpy (a traceback in `bpe-fast synth --style web --seed 18446744073709551616`)
    with pytest.raises(ValueError, match="below 2\\*\\*64"):
        generate(io.BytesIO(), 10, seed=2 ** 64, style="web")
    with pytest.raises(ValueError, match="below 2\\*\\*64"):
        generate(tmp_path / "c.txt", 10, seed=2 ** 70, style="web")
    assert not (tmp_path / "c.txt").exists()
    assert len(corpus(10, seed=2 ** 64 - 1, style="web")) == 10


@pytest.mark.parametrize("size", [0, 1, 2, 17, 4096, 999_999, 3_000_001])
def test_web_exact_size_and_valid_utf8(size):
    data = corpus(size, seed=size % 2, style="web")
    assert len(data) == size
    data.decode("utf-8")


def test_web_cut_inside_a_character_and_prefix():
    big = corpus(2_000_000, seed=0, style="web")
    text = big.decode("utf-8")
    for width in (2, 3):  # Cyrillic or accented Latin; CJK or Hangul
        char_index = next(i for i, ch in enumerate(text) if len(ch.encode()) == width)
        offset = len(text[:char_index].encode())
        for inside in range(1, width):
            assert corpus(offset + inside, seed=0, style="web") == big[:offset] + b"\n" * inside
    small = corpus(1_500_000, seed=0, style="web")
    assert small[:-3] == big[: 1_500_000 - 3]


def test_web_documents_and_iter_documents():
    data = corpus(1_000_000, seed=0, style="web")
    docs = data.split(SEP)
    assert len(docs) > 200
    for doc in docs[:-1]:
        assert doc and doc == doc.strip()
    assert b"\n<|doc|>\n" in corpus(100_000, seed=0, special_token="<|doc|>", style="web")
    assert b"<|endoftext|>" not in corpus(100_000, seed=0, special_token=None, style="web")
    first = list(itertools.islice(iter_documents(0, style="web"), 50))
    joined = b"".join(d.encode() + SEP for d in first)
    assert data[: len(joined)] == joined
    text = mixed_text(5000, seed=0, style="web")
    assert text == data.decode().replace("\n<|endoftext|>\n", "\n\n")[:5000]


def test_web_vocabulary_keeps_growing(tmp_path):
    web = corpus(4_000_000, seed=0, style="web")
    one, four = distinct_pretokens(tmp_path, web[:1_000_000]), distinct_pretokens(tmp_path, web)
    assert one > 40_000
    assert four > 3 * one  # Heaps' law, steeply
    stories = distinct_pretokens(tmp_path, corpus(2_000_000, seed=0))
    assert distinct_pretokens(tmp_path, web[:2_000_000]) > 10 * stories


def test_web_content():
    text = corpus(3_000_000, seed=0, style="web").decode("utf-8")
    for script in ("Cyrillic", "Greek", "Han", "Hiragana", "Katakana", "Hangul", "Arabic"):
        assert regex.search(rf"\p{{{script}}}", text), script
    assert regex.search(r"\b\w*[éèàçñüöäß]\w*\b", text)  # accented Latin
    non_latin = len(regex.findall(r"[^\p{Latin}\p{Common}\p{Inherited}]", text))
    assert 0.02 < non_latin / len(text) < 0.3
    # code: indented lines, brackets, operators, identifiers
    assert len(regex.findall(r"(?m)^(?:    |  |\t)+\S", text)) > 1000
    for needle in ("{", "}", "(", ")", "[", "]", " == ", " += ", " => ", "return ", "def ", "function "):
        assert needle in text, needle
    assert regex.search(r"\b[a-z]+(?:[A-Z][a-z]+)+\b", text)  # camelCase
    assert regex.search(r"\b[a-z]+_[a-z]+\b", text)  # snake_case
    # the web's long tail
    assert regex.search(r"https?://[\w.-]+\.\w+/\S*", text)
    assert regex.search(r"\b[\w.]+@[\w-]+\.\w+", text)
    assert regex.search(r"#[A-Z][a-z]+[A-Z]", text)  # hashtags
    assert regex.search(r"@\w+", text)
    assert regex.search(r"\b\d{7,}\b", text) and regex.search(r"\b\d{4}-\d\d-\d\d\b", text)
    assert regex.search(r"\b0x[0-9a-f]{4,}\b", text) and regex.search(r"\$\d", text)
    # mostly common words, Zipf-like: the most common words are real English words (or parts of URLs)
    words = Counter(regex.findall(r"\b[a-z]+\b", text.replace("<|endoftext|>", "")))
    common = set(synthetic._WEB_WORDS) | {"https", "http", "www", "com", "org"}
    assert all(w in common for w, _ in words.most_common(30))
    assert sum(words[w] for w in common) > 0.5 * sum(words.values())


def test_bad_style_is_rejected(tmp_path):
    for call in (lambda: generate(io.BytesIO(), 10, style="poems"), lambda: iter_documents(0, style="Web"),
                 lambda: mixed_text(10, style=None)):
        with pytest.raises(ValueError, match="'stories', 'web'"):
            call()
    with pytest.raises(ValueError, match="NUL"):
        generate(io.BytesIO(), 10, special_token="a\0b", style="web")
    assert not list(tmp_path.iterdir())


def test_cli_style_web(tmp_path, capsys):
    from bpe_fast.cli import main

    out = tmp_path / "web.txt"
    assert main(["synth", "--size", "200KB", "--style", "web", "--seed", "1", "-o", str(out)]) == 0
    assert out.read_bytes() == corpus(200_000, seed=1, style="web")
    assert main(["synth", "--size", "20KB", "-o", str(tmp_path / "s.txt")]) == 0
    assert (tmp_path / "s.txt").read_bytes() == corpus(20_000, seed=0)  # the default is the stories
    with pytest.raises(SystemExit) as exc:
        main(["synth", "--size", "20KB", "--style", "poems", "-o", str(tmp_path / "x.txt")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'poems'" in err and "'stories', 'web'" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.txt", "web.txt"]

    assert synthetic.main(["--size", "30KB", "--style", "web", "-o", str(tmp_path / "m.txt")]) == 0  # python -m
    assert (tmp_path / "m.txt").read_bytes() == corpus(30_000, seed=0, style="web")


def test_web_same_bytes_in_fresh_processes_whatever_the_hash_seed():
    # `bpe-fast synth --style web` and `python -m bpe_fast.synthetic` run in fresh processes: no str hash order
    # (a set's iteration) may reach the bytes
    code = ("import io, hashlib; from bpe_fast.synthetic import generate; f = io.BytesIO(); "
            "generate(f, 300_000, 3, style='web'); print(hashlib.sha256(f.getvalue()).hexdigest())")
    want = hashlib.sha256(corpus(300_000, seed=3, style="web")).hexdigest()
    for hash_seed in ("1", "2"):
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": hash_seed})
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == want


def test_web_cut_at_and_next_to_the_block_ends_is_a_prefix():
    # the blocks grow (256, 512, ... documents): a cut at a block's end, or a byte either side, is the prefix of
    # a larger corpus (up to a character split at the cut)
    ends = list(itertools.accumulate(len(b) for b in itertools.islice(synthetic._web_blocks(0, SEP), 4)))
    big = corpus(ends[-1] + 10, seed=0, style="web")
    for end in ends:
        for size in (end - 1, end, end + 1):
            small = corpus(size, seed=0, style="web")
            assert len(small) == size and small[:-3] == big[: size - 3]
            small.decode("utf-8")
