"""Pre-tokenizer throughput: the native scanner against `regex`, on English and on mixed-language text.

Run: python -m pytest benchmarks/bench_pretokenize.py -s --benchmark-columns=min,mean,rounds
Three jobs, each native and `regex`: scan (bytes -> pre-token boundaries), split (str -> list of str, i.e.
pretokenize vs regex.findall) and count (count_chunk, the training workers' hot path). Every benchmark records
its throughput as extra_info["MB/s"] (from the fastest of 5 rounds after a warm-up, native and `regex` alike);
the last test prints a table of them, native next to `regex`, for the same run.

The texts are made here from a fixed seed (about 2 MB each), so the figures compare across runs and machines
(and scan also runs on the first 5 MB of the benchmarks' corpus: `--corpus real.txt` for real text):
- english: Zipf-distributed common words, capitals, punctuation, contractions, numbers, paragraphs.
- mixed: paragraphs of English, German, French, Russian, Greek, Arabic, Hindi, Chinese, Japanese, emoji and
  code, with the scripts' own punctuation and digits.
"""
import random
from collections import Counter

import pytest
import regex

from bpe_fast.patterns import (DEEPSEEK3_PATTERN, GPT2_PATTERN, GPT4_PATTERN, LLAMA3_PATTERN, O200K_PATTERN, QWEN2_PATTERN,
                               TEKKEN_PATTERN)
from bpe_fast.pretokenize import count_chunk, native_kind, pretoken_boundaries, pretokenize
from bpe_fast.specials import SpecialTokens

TEXT_BYTES = 2_000_000
EOT = "<|endoftext|>"

ENGLISH_WORDS = (
    "the of and to a in is it you that he was for on are with as I his they be at one have this from or had by "
    "not word but what some we can out other were all there when up use your how said an each she which do their "
    "time if will way about many then them write would like so these her long make thing see him two has look "
    "more day could go come did number sound no most people my over know water than call first who may down side "
    "been now find any new work part take get place made live where after back little only round man year came "
    "show every good me give our under name very through just form sentence great think say help low line differ "
    "turn cause much mean before move right boy old too same tell does set three want air well also play small end "
    "put home read hand port large spell add even land here must big high such follow act why ask men change went "
    "light kind off need house picture try us again animal point mother world near build self earth father"
).split()
CONTRACTIONS = ["don't", "it's", "I'm", "we'll", "they've", "you're", "can't", "she'd", "that's", "won't"]


def english_text(nbytes, seed=0):
    rng = random.Random(seed)
    weights = [1 / (k + 1) for k in range(len(ENGLISH_WORDS))]
    out, size = [], 0
    while size < nbytes:
        words = rng.choices(ENGLISH_WORDS, weights, k=rng.randint(5, 25))
        for k in range(len(words)):
            r = rng.random()
            if r < 0.04:
                words[k] = rng.choice(CONTRACTIONS)
            elif r < 0.06:
                words[k] = str(rng.choice([rng.randint(0, 100), rng.randint(1900, 2030), rng.randint(0, 10**6)]))
            elif r < 0.09:
                words[k] += ","
            elif r < 0.1:
                words[k] = f'"{words[k]}"'
        words[0] = words[0].capitalize()
        sentence = " ".join(words) + rng.choice([".", ".", ".", "?", "!", ":"])
        sep = "\n\n" if rng.random() < 0.15 else " "
        out.append(sentence + sep)
        size += len(sentence) + len(sep)
    return "".join(out)[:nbytes]


SCRIPTS = {
    "german": ("abcdefghijklmnopqrstuvwxyzäöüß", " ", ".,;:!?", "0123456789"),
    "french": ("abcdefghijklmnopqrstuvwxyzéèêàçôù", " ", ".,;:!?«»", "0123456789"),
    "russian": ("абвгдеёжзийклмнопрстуфхцчшщъыьэюя", " ", ".,;:!?—", "0123456789"),
    "greek": ("αβγδεζηθικλμνξοπρστυφχψω", " ", ".,;·", "0123456789"),
    "arabic": ("ابتثجحخدذرزسشصضطظعغفقكلمنهوي", " ", "،؛؟.", "٠١٢٣٤٥٦٧٨٩"),
    "hindi": ("कखगघचछजझटठडढणतथदधनपफबभमयरलवशसह", " ", "।,", "०१२३४५६७८९"),
    "chinese": ("的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年", "", "，。、！？：", "0123456789"),
    "japanese": ("あいうえおかきくけこさしすせそたちつてとなにぬねのはひふへほまみむめもやゆよらりるれろわをん", "", "、。", "0123456789"),
}
HINDI_MARKS = "ािीुूेैोौं्"
EMOJI = ["😀", "👍🏽", "👨‍👩‍👧", "❤️", "🎉", "🇩🇪", "🙂"]
CODE_LINES = ["    return x + 1\n", "\tif (a == b) { c++; }\n", "def f(a, b=2):\n", "x = [1, 2, 3]  # list\n",
              "for (int i = 0; i < n; i++)\r\n"]


def _vocabulary(rng, kind, size=400):
    """A fixed list of made-up words in a script; drawn with Zipf weights, as words are in real text."""
    letters = SCRIPTS[kind][0]
    words = []
    for _ in range(size):
        word = "".join(rng.choices(letters, k=rng.randint(1, 8)))
        if kind == "hindi":
            word = "".join(c + (rng.choice(HINDI_MARKS) if rng.random() < 0.4 else "") for c in word)
        words.append(word)
    return words, [1 / (k + 1) for k in range(size)]


def mixed_text(nbytes, seed=0):
    rng = random.Random(seed)
    kinds = ["english", "code", "emoji"] + list(SCRIPTS)
    vocab = {kind: _vocabulary(rng, kind) for kind in SCRIPTS}
    out, size = [], 0
    while size < nbytes:
        kind = rng.choice(kinds)
        if kind == "english":
            para = english_text(rng.randint(100, 600), seed=rng.randrange(1 << 30))
        elif kind == "code":
            para = "".join(rng.choices(CODE_LINES, k=rng.randint(2, 8)))
        elif kind == "emoji":
            para = " ".join(rng.choice(EMOJI) + rng.choice(["", " wow", "!!", " 2024"]) for _ in range(10))
        else:
            _, space, punct, digits = SCRIPTS[kind]
            words = []
            for word in rng.choices(*vocab[kind], k=rng.randint(10, 60)):
                if rng.random() < 0.05:
                    word = "".join(rng.choices(digits, k=rng.randint(1, 5)))
                if rng.random() < 0.1:
                    word += rng.choice(punct)
                words.append(word)
            para = space.join(words)
        para += rng.choice(["\n\n", "\n", " "])
        out.append(para)
        size += len(para.encode())
    return "".join(out).encode()[:nbytes].decode("utf-8", "ignore")


TEXTS = {"english": english_text(TEXT_BYTES), "mixed": mixed_text(TEXT_BYTES)}
# native and `regex` alike: each MB/s is from the fastest round, and the fastest of more rounds is faster
TIMING = {"rounds": 5, "warmup_rounds": 1}
PATTERNS = {"gpt2": GPT2_PATTERN, "gpt4": GPT4_PATTERN, "o200k": O200K_PATTERN, "llama3": LLAMA3_PATTERN,
            "qwen2": QWEN2_PATTERN, "tekken": TEKKEN_PATTERN, "deepseek3": DEEPSEEK3_PATTERN}
RESULTS = {}


def _record(benchmark, group, impl, nbytes):
    if benchmark.stats is None:          # --benchmark-disable: the code ran once, nothing was timed
        return
    mbs = nbytes / benchmark.stats.stats.min / 1e6
    benchmark.extra_info["MB/s"] = round(mbs, 1)
    RESULTS[(group, impl)] = mbs


@pytest.fixture(scope="module", autouse=True)
def native_active():
    assert all(native_kind(p) for p in PATTERNS.values()), "the native scanner is not active: build bpe_fast/_scan.pyx"


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("text", TEXTS)
def test_scan_native(benchmark, text, pattern):
    """Bytes in, pre-token boundaries out (pretoken_boundaries)."""
    data = TEXTS[text].encode()
    benchmark.group = f"scan-{text}-{pattern}"
    out = benchmark.pedantic(pretoken_boundaries, (data, PATTERNS[pattern]), **TIMING)
    assert out[-1] == len(data)
    _record(benchmark, benchmark.group, "native", len(data))


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("text", TEXTS)
def test_scan_regex(benchmark, text, pattern):
    """The same job with `regex`: decode, findall (the list of str is what regex gives)."""
    data = TEXTS[text].encode()
    rx = regex.compile(PATTERNS[pattern])
    benchmark.group = f"scan-{text}-{pattern}"
    benchmark.pedantic(lambda: rx.findall(data.decode("utf-8")), **TIMING)
    _record(benchmark, benchmark.group, "regex", len(data))


CORPUS_BYTES = 5_000_000     # of the benchmarks' corpus (conftest: --corpus real.txt, else synthetic)


@pytest.fixture(scope="module")
def corpus_data(corpus_path):
    """The first CORPUS_BYTES of the benchmarks' corpus, cut at a line end: real text with --corpus."""
    with open(corpus_path, "rb") as f:
        data = f.read(CORPUS_BYTES)
    return data[:data.rfind(b"\n") + 1 or len(data)]


@pytest.mark.parametrize("impl", ["native", "regex"])
@pytest.mark.parametrize("pattern", PATTERNS)
def test_scan_corpus(benchmark, corpus_data, pattern, impl):
    """scan (as test_scan_native / test_scan_regex) on the benchmarks' corpus: with --corpus, real text, whose
    distinct words and scripts the made-up texts above only imitate."""
    benchmark.group = f"scan-corpus-{pattern}"
    if impl == "native":
        out = benchmark.pedantic(pretoken_boundaries, (corpus_data, PATTERNS[pattern]), **TIMING)
        assert out[-1] == len(corpus_data)
    else:
        rx = regex.compile(PATTERNS[pattern])
        benchmark.pedantic(lambda: rx.findall(corpus_data.decode("utf-8")), **TIMING)
    _record(benchmark, benchmark.group, impl, len(corpus_data))


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("text", TEXTS)
def test_split_native(benchmark, text, pattern):
    """str in, list of str out: pretokenize(), against regex.findall on the same str."""
    benchmark.group = f"split-{text}-{pattern}"
    benchmark.pedantic(pretokenize, (TEXTS[text], PATTERNS[pattern]), **TIMING)
    _record(benchmark, benchmark.group, "native", len(TEXTS[text].encode()))


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("text", TEXTS)
def test_split_regex(benchmark, text, pattern):
    rx = regex.compile(PATTERNS[pattern])
    benchmark.group = f"split-{text}-{pattern}"
    assert benchmark.pedantic(rx.findall, (TEXTS[text],), **TIMING) == pretokenize(TEXTS[text], PATTERNS[pattern])
    _record(benchmark, benchmark.group, "regex", len(TEXTS[text].encode()))


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("text", TEXTS)
def test_count_native(benchmark, text, pattern):
    """count_chunk, the training workers' entry point: bytes in, dict of distinct pre-tokens out."""
    data = (TEXTS[text].replace("\n\n", "\n\n" + EOT, 50)).encode()
    benchmark.group = f"count-{text}-{pattern}"
    benchmark.pedantic(count_chunk, (data, [EOT], PATTERNS[pattern]), **TIMING)
    _record(benchmark, benchmark.group, "native", len(data))


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("text", TEXTS)
def test_count_regex(benchmark, text, pattern):
    """The regex path count_chunk had before: decode, split at specials, findall, Counter, encode keys."""
    data = (TEXTS[text].replace("\n\n", "\n\n" + EOT, 50)).encode()
    rx, special = regex.compile(PATTERNS[pattern]), SpecialTokens([EOT]).regex

    def count():
        counts = Counter()
        for piece in special.split(data.decode("utf-8")):
            counts.update(rx.findall(piece))
        return {w.encode(): n for w, n in counts.items()}

    benchmark.group = f"count-{text}-{pattern}"
    assert benchmark.pedantic(count, **TIMING) == count_chunk(data, [EOT], PATTERNS[pattern])
    _record(benchmark, benchmark.group, "regex", len(data))


def test_zz_report(capsys):
    """Print MB/s native vs regex for every group measured in this run (runs last: tests go in file order)."""
    lines = [f"{'group':<22}{'native MB/s':>12}{'regex MB/s':>12}{'speed-up':>10}"]
    for group in sorted({g for g, _ in RESULTS}):
        nat, rex = RESULTS.get((group, "native")), RESULTS.get((group, "regex"))
        if nat and rex:
            lines.append(f"{group:<22}{nat:>12.1f}{rex:>12.1f}{nat / rex:>9.1f}x")
    with capsys.disabled():
        print("\n" + "\n".join(lines))
