"""A deterministic, TinyStories-like corpus of any size, for benchmarks, examples and tests.

Short stories from a small vocabulary with a Zipf-like word distribution: names, dialogue with quotes and
contractions, punctuation, numbers, paragraph breaks, and a few percent of non-Latin text (Cyrillic, Greek,
Chinese, Japanese, Korean, Arabic, emoji). Documents are separated by the special token on its own line, as in
TinyStories: ``story\\n<|endoftext|>\\nstory\\n<|endoftext|>\\n...``.

How it is made, and why it is fast: a seeded pool of sentences is written once from templates, then combined into
passages of one to four sentences, plus a pool of short sentences with made-up words (the long tail, so the number
of distinct words keeps growing with the corpus, as in real text); this takes well under a second. The corpus is
then assembled in blocks of whole documents by drawing passage indices in bulk with numpy and joining pre-encoded
bytes. The stream of documents depends only on the seed, so a smaller file is a prefix of a larger one with the
same seed. The same seed gives the same bytes with the same numpy (only its PCG64 uniform doubles are used).

Size: ``generate`` writes exactly ``size_bytes`` bytes. It stops at the first document end at or after
``size_bytes`` and cuts there, so the last document is usually cut short. The cut never splits a UTF-8
character: if it would, the partial character is replaced by as many "\\n" as its bytes that fit, so the file is
valid UTF-8 and still exactly ``size_bytes`` long.

Command line::

    python -m bpe_fast.synthetic --size 100MB -o corpus.txt [--seed N] [--special-token TEXT]
"""
import argparse
import bisect
import io
import random
import re
import sys
import time
from functools import lru_cache

import numpy as np

from .atomic import atomic_output

DEFAULT_SPECIAL_TOKEN = "<|endoftext|>"

_SENTENCE_POOL = 1 << 15  # distinct sentences per seed, written from templates
_PASSAGE_POOL = 1 << 16  # distinct passages (1 to 4 of those sentences) per seed
_OPENING_POOL = 1 << 11  # distinct first sentences per seed
_RARE_POOL = 1 << 16  # distinct short sentences with made-up words: the long tail of the vocabulary
_RARE_SHARE = 0.03  # of the passages are replaced by one of those
_DOCS_PER_BLOCK = 2048  # about 1.5 MB of text per block

# --- vocabulary --------------------------------------------------------------------------------------------

_NAMES = (
    "Lily Ben Tom Mia Max Sue Anna Tim Sam Lucy Jack Emma Leo Zoe Mark Sara Bob Kate Finn Ella Jake Amy Dan Rosa "
    "Ollie Tina Ray Molly Nick Lola Joe Ruby Pip Daisy Spot Bella Kim Omar Yuki Ivan Olga Chen Aisha Diego Nina "
    "Pedro Hana Raj Lena Felix Noor Elena Kofi Mei Sven Ana Luca Maya"
).split()
_ANIMALS = (
    "cat dog bird fish bunny bear frog duck mouse owl fox lion pig cow horse sheep turtle bee butterfly puppy "
    "kitten dragon monkey elephant squirrel otter deer snail ant tiger"
).split()
_NOUNS = (
    "ball tree house car toy box boat book hat cake apple flower garden park sun moon star sky cloud rain snow "
    "river lake hill rock stick leaf door window bed chair table cup plate cookie pie kite truck train bike "
    "friend mom dad sister brother teacher girl boy baby grandma grandpa family school shop road bridge castle "
    "cave forest beach sea shell sand wave bag coat shoe sock dress doll robot drum song story game picture "
    "crayon paper rope swing slide bucket shovel jar key lamp clock bell gift basket bowl spoon egg bread milk "
    "juice carrot banana orange grape nest feather pond mud puddle seed plant wall fence gate roof tower"
).split()
_PLACES = (
    "park garden forest beach school shop farm zoo lake river house kitchen yard playground castle cave hill "
    "village town city library market pond meadow field street"
).split()
_ADJECTIVES = (
    "big small little happy sad kind brave shiny red blue green yellow pink purple soft loud quiet funny silly "
    "nice pretty old new warm cold hot wet dry tall short fast slow bright dark sweet yummy scary sleepy hungry "
    "tired gentle strong curious clever lucky special fluffy tiny huge busy careful proud excited angry "
    "friendly shy wild calm clean dirty round smooth sparkly magic"
).split()
_VERBS_PAST = (
    "saw found liked loved wanted took gave made played jumped ran walked looked smiled laughed cried shouted "
    "helped picked opened closed hugged kicked threw caught painted built shared ate drank climbed pulled pushed "
    "carried hid watched heard touched fixed cleaned dropped held waved"
).split()
_VERBS = (
    "play run jump swim climb share help find look eat drink sing dance read draw paint build fly hide catch "
    "throw fix clean open close hug try learn bake"
).split()
_ADVERBS = "quickly slowly happily sadly carefully loudly quietly gently soon again together suddenly".split()
_FEELINGS = "happy sad scared excited proud sorry surprised tired hungry angry glad curious".split()
_SYLLABLES = (
    "ka lo mi zu ter bin ra po shi vel dor an el is ok um tra bri glo fen mor sa ti nu wex qua zel pim rok "
    "dal bee fo gi har jun lin mar nor ax be co du ev fi ga ho ir ju ke lu ny ob pe ru so ut vo wi"
).split()

# A few percent of the text: real words in other scripts, joined the way each script is written.
_CYRILLIC = (
    "мама папа кот собака дом солнце друг лес река девочка мальчик играть любит большой маленький красивый "
    "сегодня вместе очень весело яблоко птица небо море книга школа хорошо день ночь звезда"
).split()
_GREEK = (
    "ο η το σκύλος γάτα σπίτι ήλιος θάλασσα φίλος παιδί παίζει αγαπά μεγάλο μικρό όμορφο σήμερα μαζί πολύ "
    "βιβλίο δέντρο νερό ουρανός αστέρι μήλο χαρά"
).split()
_CHINESE = (
    "小猫 小狗 妈妈 爸爸 朋友 太阳 花园 今天 我们 一起 玩 喜欢 快乐 大 小 树 水 书 苹果 天空 星星 学校 很 的 了 是 在 有 看 去"
).split()
_JAPANESE = "ねこ いぬ おかあさん ともだち たのしい あそぶ きょう そら ほし りんご は が と です ました 公園 学校".split()
_KOREAN = "고양이 강아지 친구 하늘 오늘 같이 놀았어요 좋아요 엄마 사과 학교 나무".split()
_ARABIC = (
    "قطة كلب بيت شمس صديق ولد بنت يلعب يحب كبير صغير جميل اليوم معا جدا كتاب شجرة ماء سماء نجمة تفاحة في مع على"
).split()
_EMOJI = "😊 😂 ❤️ 🐶 🐱 🌞 🌈 ⭐ 🍎 🎈 🚀 🌳 🐟 🎉 👍 🦋 🍪 🏠 😢 🙂".split()


def _a(phrase):
    """The phrase with its indefinite article: "a cat", "an orange"."""
    return ("an " if phrase[0] in "aeiou" else "a ") + phrase


_IRREGULAR_PLURALS = {"mouse": "mice", "sheep": "sheep", "deer": "deer", "fish": "fish", "leaf": "leaves"}


def _plural(noun):
    if noun in _IRREGULAR_PLURALS:
        return _IRREGULAR_PLURALS[noun]
    if noun.endswith(("s", "sh", "ch", "x")):
        return noun + "es"
    if noun.endswith("y") and noun[-2] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


class _Zipf:
    """Draws words with a Zipf-like distribution (weight 1 / (rank + 2.7), Zipf-Mandelbrot) over a seeded
    ranking."""

    def __init__(self, words, rng):
        self.words = list(words)
        rng.shuffle(self.words)
        total = 0.0
        self.cumulative = []
        for rank in range(len(self.words)):
            total += 1.0 / (rank + 2.7)
            self.cumulative.append(total)

    def __call__(self, rng):
        return self.words[bisect.bisect_right(self.cumulative, rng.random() * self.cumulative[-1])]


class _Writer:
    """Writes one sentence at a time from templates, with a seeded random.Random."""

    def __init__(self, seed):
        self.rng = rng = random.Random(seed)
        made_up = {rng.choice(_SYLLABLES) + rng.choice(_SYLLABLES) + rng.choice(("", *_SYLLABLES)) for _ in range(3000)}
        self.made_up = _Zipf(sorted(made_up), rng)  # sorted: a set's order is not reproducible
        self.name = _Zipf(_NAMES, rng)
        self.animal = _Zipf(_ANIMALS, rng)
        self.noun = _Zipf(_NOUNS + _ANIMALS, rng)
        self.place = _Zipf(_PLACES, rng)
        self.adj = _Zipf(_ADJECTIVES, rng)
        self.past = _Zipf(_VERBS_PAST, rng)
        self.verb = _Zipf(_VERBS, rng)
        self.adverb = _Zipf(_ADVERBS, rng)
        self.feeling = _Zipf(_FEELINGS, rng)
        self.scripts = [
            (_Zipf(_CYRILLIC, rng), " ", ".", ", "),
            (_Zipf(_GREEK, rng), " ", ".", ", "),
            (_Zipf(_CHINESE, rng), "", "。", "，"),
            (_Zipf(_JAPANESE, rng), "", "。", "、"),
            (_Zipf(_KOREAN, rng), " ", ".", ", "),
            (_Zipf(_ARABIC, rng), " ", ".", "، "),
        ]
        self.emoji = _Zipf(_EMOJI, rng)

    # one slot each --------------------------------------------------------------------------------------------

    def who(self):
        r = self.rng.random()
        if r < 0.55:
            return self.name(self.rng)
        if r < 0.62:
            return self.made_up(self.rng).capitalize()  # the long tail of rare names
        return "the " + self.thing()

    def thing(self):
        if self.rng.random() < 0.4:
            return self.adj(self.rng) + " " + self.noun(self.rng)
        if self.rng.random() < 0.05:
            return self.made_up(self.rng)
        return self.noun(self.rng)

    def number(self):
        r = self.rng.random()
        if r < 0.5:
            return str(self.rng.randint(2, 12))
        if r < 0.75:
            return str(self.rng.randint(13, 999))
        return str(self.rng.randint(1000, 99999))

    def speech(self):
        rng, v, t, a = self.rng, self.verb, self.thing, self.adj
        templates = (
            lambda: f"I'm so {self.feeling(rng)}!",
            lambda: f"Don't {v(rng)} the {t()}!",
            lambda: f"Can we {v(rng)} with the {t()}?",
            lambda: f"She'll {v(rng)} it tomorrow.",
            lambda: f"We're going to the {self.place(rng)}!",
            lambda: f"It's {_a(a(rng))} {self.noun(rng)}.",
            lambda: f"I can't {v(rng)} it.",
            lambda: f"They've found the {t()}!",
            lambda: f"Let's {v(rng)} together.",
            lambda: f"You won't believe it, {self.name(rng)}!",
            lambda: f"That's my {t()}.",
            lambda: f"He'd like to {v(rng)}, wouldn't he?",
            lambda: f"Where is the {t()}?",
            lambda: f"Thank you, {self.name(rng)}.",
            lambda: f"I'll {v(rng)} {self.adverb(rng)}.",
            lambda: f"Look, {self.number()} {_plural(self.noun(rng))}!",
        )
        text = rng.choice(templates)()
        if rng.random() < 0.3:
            text += " " + rng.choice(templates)()
        return text

    # whole sentences ------------------------------------------------------------------------------------------

    def opening(self):
        rng = self.rng
        if rng.random() < 0.03:
            return self.foreign()
        templates = (
            lambda: f"Once upon a time, there was {_a(self.adj(rng))} {self.animal(rng)} named {self.name(rng)}.",
            lambda: f"Once upon a time, there was a little {rng.choice(('girl', 'boy'))} named {self.name(rng)}.",
            lambda: f"One day, {self.name(rng)} went to the {self.place(rng)}.",
            lambda: f"There was once {_a(self.adj(rng))} {self.noun(rng)} who lived in {_a(self.place(rng))}.",
            lambda: f"{self.name(rng)} was {_a(self.adj(rng))} {self.animal(rng)} who loved to {self.verb(rng)}.",
            lambda: f"Long ago, in {_a(self.adj(rng))} {self.place(rng)}, lived {self.made_up(rng).capitalize()}.",
        )
        return rng.choice(templates)()

    def sentence(self):
        rng = self.rng
        r = rng.random()
        if r < 0.035:
            return self.foreign()
        if r < 0.06:
            return self.narration() + " " + self.emoji(rng)
        if r < 0.3:
            return self.dialogue()
        if r < 0.38:
            return self.counting()
        return self.narration()

    def narration(self):
        rng, who, t = self.rng, self.who, self.thing
        templates = (
            lambda: f"{who()} {self.past(rng)} {_a(t())}.",
            lambda: f"{who()} {self.past(rng)} the {t()} in the {self.place(rng)}.",
            lambda: f"{who()} was very {self.adj(rng)}.",
            lambda: f"The {self.noun(rng)} was {self.adj(rng)} and {self.adj(rng)}.",
            lambda: f"{who()} and {who()} {self.past(rng)} {self.adverb(rng)}.",
            lambda: f"{who()} wanted to {self.verb(rng)}, but the {t()} was too {self.adj(rng)}.",
            lambda: f"Then {who()} {self.past(rng)} the {t()} and {self.past(rng)} it.",
            lambda: f"They {self.past(rng)} all day, and {who()} felt {self.feeling(rng)}.",
            lambda: f"After that, {who()} never {self.past(rng)} the {t()} again.",
            lambda: f"{who()} looked at the {t()}. It was {self.adj(rng)}!",
            lambda: f"Why was the {t()} so {self.adj(rng)}?",
            lambda: f"{who()} {self.past(rng)} the {t()} - it was {self.adj(rng)}; it was {self.adj(rng)}...",
        )
        text = rng.choice(templates)()
        return text[0].upper() + text[1:]

    def dialogue(self):
        rng = self.rng
        speaker = self.who()
        speaker = speaker[0].upper() + speaker[1:]
        said = rng.choice(("said", "said", "asked", "shouted", "whispered", "cried", "replied"))
        open_q, close_q = ('"', '"') if rng.random() < 0.8 else ("\u201c", "\u201d")
        words = self.speech()
        r = rng.random()
        if r < 0.5:
            return f"{speaker} {said}, {open_q}{words}{close_q}"
        if r < 0.85:
            if words.endswith("."):
                words = words[:-1] + ","
            after = "the" + speaker[3:] if speaker.startswith("The ") else speaker
            return f"{open_q}{words}{close_q} {said} {after}."
        return f"{speaker} {said}: {open_q}{words}{close_q}"

    def counting(self):
        rng, t = self.rng, self.thing
        n = self.number()
        templates = (
            lambda: f"{self.who()} had {n} {_plural(self.noun(rng))}.",
            lambda: f"They counted to {n}!",
            lambda: f"It was {n} steps to the {self.place(rng)}.",
            lambda: f"In {rng.randint(1900, 2030)}, the {self.noun(rng)} was {rng.randint(2, 99)} years old.",
            lambda: f"The {self.noun(rng)} cost ${rng.randint(1, 99)}.{rng.randint(0, 99):02d}.",
            lambda: f"{self.who()} ate {n} cookies, then {rng.randint(2, 9)} more.",
            lambda: f"At {rng.randint(1, 12)}:{rng.randint(0, 59):02d}, {self.who()} {self.past(rng)} the {t()}.",
        )
        text = rng.choice(templates)()
        return text[0].upper() + text[1:]

    def foreign(self):
        rng = self.rng
        words, space, stop, comma = rng.choice(self.scripts)
        parts = [words(rng) for _ in range(rng.randint(3, 9))]
        if len(parts) > 5 and rng.random() < 0.5:
            parts[2] += comma.rstrip()
        text = space.join(parts) + stop
        if rng.random() < 0.2:
            text += " " + self.emoji(rng)
        return text


def _cumulative(weights):
    c = np.cumsum(np.asarray(weights, dtype=np.float64))
    return c / c[-1]


def _pick(cumulative, u):
    """Indices drawn from the distribution with `cumulative` weights, for uniform doubles `u` (exact)."""
    return np.searchsorted(cumulative, u, side="right")


# Between sentences: " " mostly, sometimes a new line or a paragraph break.
_JOINERS = (b" ", b"\n", b"\n\n")
_JOINER_CUM = _cumulative([0.74, 0.2, 0.06])
# Passages per document after the opening sentence: 1..12, mostly 3..7 (about 650 bytes a document).
_DOC_PASSAGES = np.arange(1, 13)
_DOC_PASSAGES_CUM = _cumulative([1, 3, 6, 8, 8, 7, 5, 4, 3, 2, 1, 1])


def _check_seed(seed):
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    return int(seed)


@lru_cache(maxsize=4)
def _pool(seed):
    """(passages, openings, rare) for a seed, as UTF-8 bytes. A passage is 1 to 4 sentences, each preceded
    by a joiner, so documents are an opening followed by passages, with no whitespace at either end. `rare` are
    one-sentence passages with made-up words (about 100,000 of them), so the number of distinct words keeps
    growing with the size of the corpus, as in real text."""
    writer = _Writer(seed)
    openings = [writer.opening().encode("utf-8") for _ in range(_OPENING_POOL)]
    sentences = [writer.sentence().encode("utf-8") for _ in range(_SENTENCE_POOL)]
    rng = np.random.Generator(np.random.PCG64([seed, 1]))
    count = 4 * _PASSAGE_POOL
    joiners = [_JOINERS[j] for j in _pick(_JOINER_CUM, rng.random(count)).tolist()]
    picked = [sentences[i] for i in (rng.random(count) * len(sentences)).astype(np.int64).tolist()]
    lengths = (1 + rng.random(_PASSAGE_POOL) * 4).astype(np.int64).tolist()
    passages = []
    for k, n in enumerate(lengths):
        parts = []
        for i in range(4 * k, 4 * k + n):
            parts += (joiners[i], picked[i])
        passages.append(b"".join(parts))
    return passages, openings, _rare_passages(rng, names=writer.name.words)


_RARE_TEMPLATES = (
    " {A} waved at the {b}.",
    " The {b} was called {A}.",
    '\n"{A}!" said {name}.',
    " {A} had {n} {b}s.",
    " They went to {A} by the {b}.",
    " {name} met {A} and {B} {n} steps away.",
)


def _rare_passages(rng, names):
    syllables = _SYLLABLES
    count = _RARE_POOL
    picks = (rng.random((2 * count, 4)) * len(syllables)).astype(np.int64).tolist()
    widths = (2 + rng.random(2 * count) * 3).astype(np.int64).tolist()  # 2 to 4 syllables
    words = ["".join(syllables[i] for i in p[:k]) for p, k in zip(picks, widths)]
    numbers = (rng.random(count) * 1_000_000).astype(np.int64).tolist()
    who = (rng.random(count) * len(names)).astype(np.int64).tolist()
    return [
        _RARE_TEMPLATES[k % len(_RARE_TEMPLATES)]
        .format(A=words[2 * k].capitalize(), b=words[2 * k + 1], B=words[2 * k + 1].capitalize(), n=numbers[k],
                name=names[who[k]])
        .encode("utf-8")
        for k in range(count)
    ]


def _blocks(seed, doc_end):
    """Yield bytes blocks of whole documents forever; each document is followed by `doc_end`."""
    passages, openings, rare = _pool(seed)
    table = passages + openings + rare + [doc_end]
    n_pass, n_open, n_rare = len(passages), len(openings), len(rare)
    doc_end_id = n_pass + n_open + n_rare
    get = table.__getitem__
    rng = np.random.Generator(np.random.PCG64([seed, 2]))
    while True:
        # only uniform doubles are drawn; everything else follows from them with exact comparisons
        lengths = _DOC_PASSAGES[_pick(_DOC_PASSAGES_CUM, rng.random(_DOCS_PER_BLOCK))] + 2  # + opening, doc_end
        ends = np.cumsum(lengths)  # index after each document's doc_end
        n = int(ends[-1])
        ids = (rng.random(n) * n_pass).astype(np.int64)
        rare_ids = n_pass + n_open + (rng.random(n) * n_rare).astype(np.int64)
        is_rare = rng.random(n) < _RARE_SHARE
        ids[is_rare] = rare_ids[is_rare]
        ids[ends - lengths] = n_pass + (rng.random(_DOCS_PER_BLOCK) * n_open).astype(np.int64)
        ids[ends - 1] = doc_end_id
        yield b"".join(map(get, ids.tolist()))


def iter_documents(seed=0):
    """Yield the documents of the corpus for `seed` forever, as str without separators.

    ``generate(f, size, seed, tok)`` writes ``"".join(d + "\\n" + tok + "\\n" for d in iter_documents(seed))``
    cut to ``size`` bytes.
    """
    seed = _check_seed(seed)

    def documents():
        for block in _blocks(seed, b"\0"):  # "\0" never occurs in the text
            yield from block.decode("utf-8").split("\0")[:-1]

    return documents()


def _doc_end(special_token):
    if special_token is None or special_token == "":
        return b"\n\n"
    if not isinstance(special_token, str):
        raise TypeError(f"special_token must be a str or None, got {type(special_token).__name__}")
    return b"\n" + special_token.encode("utf-8") + b"\n"


def _cut(data):
    """`data` with a UTF-8 character split at its end replaced by "\\n" bytes (same length)."""
    if not data:
        return data
    # the start of the last character: step back over at most 3 continuation bytes (0b10xxxxxx)
    start = len(data) - 1
    while start > 0 and len(data) - start < 4 and data[start] & 0xC0 == 0x80:
        start -= 1
    lead = data[start]
    width = 1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
    if len(data) - start < width:
        return data[:start] + b"\n" * (len(data) - start)
    return data


def _write(out, size_bytes, seed, doc_end):
    remaining = size_bytes
    for block in _blocks(seed, doc_end):
        if remaining <= 0:
            break
        if len(block) >= remaining:
            out.write(_cut(block[:remaining]))
            break
        out.write(block)
        remaining -= len(block)
    return size_bytes


def generate(path_or_file, size_bytes, seed=0, special_token=DEFAULT_SPECIAL_TOKEN):
    """Write exactly `size_bytes` bytes of the corpus for `seed` to a path or a binary file object.

    Documents are separated by "\\n" + special_token + "\\n" (special_token=None: by an empty line).
    A path is written to a temporary file in the same directory and renamed when complete, so an error or
    Ctrl-C leaves nothing half-written. Returns the number of bytes written.

    >>> import io; f = io.BytesIO(); generate(f, 1000, seed=1)
    1000
    """
    if isinstance(size_bytes, bool) or not isinstance(size_bytes, (int, np.integer)):
        raise TypeError(f"size_bytes must be an int, got {type(size_bytes).__name__}")
    if size_bytes < 0:
        raise ValueError(f"size_bytes must be >= 0, got {size_bytes}")
    size_bytes = int(size_bytes)
    seed = _check_seed(seed)
    doc_end = _doc_end(special_token)

    if hasattr(path_or_file, "write"):
        if isinstance(path_or_file, io.TextIOBase):
            raise TypeError("generate() needs a binary file object (open it with 'wb')")
        return _write(path_or_file, size_bytes, seed, doc_end)

    with atomic_output(path_or_file) as out:
        _write(out, size_bytes, seed, doc_end)
    return size_bytes


def mixed_text(n_chars, seed=0, special_token=None):
    """The first `n_chars` characters of the corpus for `seed`, as str (documents separated by an empty line,
    or by `special_token` on its own line if given). Mixed-language, like the corpus: about 4% of sentences
    are in a non-Latin script.

    >>> len(mixed_text(500, seed=3))
    500
    """
    if n_chars < 0:
        raise ValueError(f"n_chars must be >= 0, got {n_chars}")
    seed = _check_seed(seed)
    parts, have = [], 0
    for block in _blocks(seed, _doc_end(special_token)):
        if have >= n_chars:
            break
        text = block.decode("utf-8")
        parts.append(text)
        have += len(text)
    return "".join(parts)[:n_chars]


# --- command line ------------------------------------------------------------------------------------------

_UNITS = {"": 1, "b": 1}
for _i, _p in enumerate("kmgt", start=1):
    _UNITS[_p] = _UNITS[_p + "b"] = 1000**_i
    _UNITS[_p + "ib"] = 1024**_i


def parse_size(text):
    """Bytes in a size like "4096", "100MB", "1.5GB", "2GiB", "64KiB", "10M" (K/M/G/T without "i" are decimal).

    >>> parse_size("100MB"), parse_size("2KiB")
    (100000000, 2048)
    """
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([A-Za-z]*)\s*", str(text))
    if m is None or m.group(2).lower() not in _UNITS:
        raise ValueError(f"invalid size {text!r} (expected a number with an optional unit: 4096, 100MB, 2GiB)")
    return int(round(float(m.group(1)) * _UNITS[m.group(2).lower()]))


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m bpe_fast.synthetic",
        description="Write a deterministic TinyStories-like corpus of an exact size.",
    )
    parser.add_argument("--size", required=True, help="e.g. 100MB, 2GB, 512MiB, 4096 (bytes)")
    parser.add_argument("-o", "--output", required=True, help="the file to write")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--special-token", default=DEFAULT_SPECIAL_TOKEN, help="the document separator ('' for an empty line)"
    )
    args = parser.parse_args(argv)
    prog = parser.prog
    try:
        size = parse_size(args.size)
    except ValueError as exc:
        sys.exit(f"{prog}: error: {exc}")
    start = time.perf_counter()
    try:
        generate(args.output, size, seed=args.seed, special_token=args.special_token)
    except KeyboardInterrupt:
        sys.exit(f"{prog}: interrupted; nothing written")
    except OSError as exc:
        sys.exit(f"{prog}: error: {exc}")
    seconds = time.perf_counter() - start
    print(
        f"wrote {size:,} bytes to {args.output} in {seconds:.2f} s ({size / 1e6 / max(seconds, 1e-9):.0f} MB/s)",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
