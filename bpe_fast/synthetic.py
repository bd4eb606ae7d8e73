"""A deterministic corpus of any size, TinyStories-like or web-like, for benchmarks, examples and tests.

Two styles: "stories" (the default, described first) and "web" (below).

Short stories from a small vocabulary with a Zipf-like word distribution: names, dialogue with quotes and
contractions, punctuation, numbers, paragraph breaks, and a few percent of non-Latin text (Cyrillic, Greek,
Chinese, Japanese, Korean, Arabic, emoji). Documents are separated by the special token on its own line, as in
TinyStories: ``story\\n<|endoftext|>\\nstory\\n<|endoftext|>\\n...``.

How it is made, and why it is fast: a seeded pool of sentences is written once from templates, then combined into
passages of one to four sentences, plus a pool of short sentences with made-up words (the long tail, so the number
of distinct words keeps growing with the corpus, as in real text); this takes well under a second. The corpus is
then assembled in blocks of whole documents by drawing passage indices in bulk with numpy and joining pre-encoded
bytes. The stream of documents depends only on the seed, so a smaller file is a prefix of a larger one with the
same seed (both styles). The same seed gives the same bytes with the same numpy (only its PCG64 uniform doubles
are used).

The web style (``style="web"``) imitates scraped web pages, whose vocabulary keeps growing with the size of
the corpus (Heaps' law), so that caches keyed by pre-token are not flattered: 150 MB hold about 5 million
distinct GPT-2 pre-tokens (the stories style: tens of thousands). Documents are articles, forum threads, shop
listings, programming pages (prose and code blocks: indentation, brackets, operators, camelCase and snake_case
identifiers) and pages in French, Spanish, German, Russian, Greek, Arabic, Korean, Chinese and Japanese. The
text is common English words (about a thousand, Zipf-distributed) with, in about a third of the word places,
pieces from an unbounded supply: made-up rare words and proper nouns (Zipf-ranked over tens of millions of them),
names, typos (a slip of the keyboard in a common word), numbers, dates, prices, phone numbers, ids, hex,
versions, URLs, emails, hashtags and handles; the other languages are mostly made-up words of their own
syllables. How it is made: a seeded pool of sentences, lines and code blocks with slots is written from
templates once; each block of documents draws its units in bulk and fills all the slots of one kind in one
vectorised numpy call (random numbers from SplitMix64 over a counter, exact integer arithmetic), at about
50-70 MB/s on one core. The same (size, seed, style) gives the same bytes on any machine.

Size: ``generate`` writes exactly ``size_bytes`` bytes. It stops at the first document end at or after
``size_bytes`` and cuts there, so the last document is usually cut short. The cut never splits a UTF-8
character: if it would, the partial character is replaced by as many "\\n" as its bytes that fit, so the file is
valid UTF-8 and still exactly ``size_bytes`` long.

Command line::

    python -m bpe_fast.synthetic --size 100MB -o corpus.txt [--seed N] [--style stories|web] [--special-token TEXT]

(``-o -``: stdout.)
"""
from __future__ import annotations

import argparse
import bisect
import decimal
import io
import itertools
import os
import random
import re
import sys
import time
from collections.abc import Iterator, Sequence
from functools import lru_cache
from typing import IO, Any

import numpy as np

from ._types import StrPath
from .atomic import atomic_output, stop_signals_handled

DEFAULT_SPECIAL_TOKEN = "<|endoftext|>"

_SENTENCE_POOL = 1 << 15  # distinct sentences per seed, written from templates
_PASSAGE_POOL = 1 << 16  # distinct passages (1 to 4 of those sentences) per seed
_OPENING_POOL = 1 << 11  # distinct first sentences per seed
_RARE_POOL = 1 << 16  # distinct short sentences with made-up words: the long tail of the vocabulary
_RARE_SHARE = 0.03  # of the passages are replaced by one of those
_DOCS_PER_BLOCK = 2048  # about 1.5 MB of text per block
_WEB_DOCS_PER_BLOCK = 4096  # at most, about 8 MB of text per block (web style)

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


def _check_seed(seed, style="stories"):
    """seed as an int; the style checked too (the web style's seeds are below 2**64: the key of _Rand is a
    uint64), so that a bad one is refused when called, not at the first document (iter_documents)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    if seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    if _check_style(style) == "web" and seed >= 2 ** 64:
        raise ValueError(f"the web style takes a seed below 2**64, got {seed}")
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
        parts: list[bytes] = []
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


def iter_documents(seed: int = 0, style: str = "stories") -> Iterator[str]:
    """Yield the documents of the corpus for `seed` and `style` forever, as str without separators.

    ``generate(f, size, seed, tok, style)`` writes
    ``"".join(d + "\\n" + tok + "\\n" for d in iter_documents(seed, style))`` cut to ``size`` bytes.
    """
    seed = _check_seed(seed, style)
    blocks = _block_source(style)

    def documents() -> Iterator[str]:
        for block in blocks(seed, b"\x1e"):  # "\x1e" never occurs in the text
            yield from block.decode("utf-8").split("\x1e")[:-1]

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


_STYLES = ("stories", "web")


def _check_style(style):
    if not isinstance(style, str) or style not in _STYLES:
        raise ValueError(f"style must be one of {', '.join(map(repr, _STYLES))}, got {style!r}")
    return style


def _block_source(style):
    """The generator of blocks for a style (looked up when called, so tests can replace it)."""
    return _blocks if _check_style(style) == "stories" else _web_blocks


def _write(out, size_bytes, seed, doc_end, style="stories"):
    remaining = size_bytes
    for block in _block_source(style)(seed, doc_end):
        if remaining <= 0:
            break
        if len(block) >= remaining:
            _write_all(out, _cut(block[:remaining]))
            break
        _write_all(out, block)
        remaining -= len(block)
    return size_bytes


def _write_all(out, data):
    """out.write until all of data (bytes) went: a raw file object (io.FileIO on a pipe, a signal arriving) may
    write part of it and say how much (the rest was lost, and generate returned the full size; helper-146). A raw
    file object's None (non-blocking, no room) is an error; any other writer's None is taken as all written (as
    hand-written ones return nothing)."""
    while data:
        n = out.write(data)
        if n is None:
            if isinstance(out, io.RawIOBase):
                raise BlockingIOError(11, "the file object took none of the bytes (non-blocking?)")
            return
        data = data[n:]


def generate(path_or_file: StrPath | IO[bytes], size_bytes: int, seed: int = 0,
             special_token: str | None = DEFAULT_SPECIAL_TOKEN, style: str = "stories") -> int:
    """Write exactly `size_bytes` bytes of the corpus for `seed` to a path or a binary file object.

    style: "stories" (TinyStories-like, the default) or "web" (web-like, with a vocabulary that keeps growing).
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
    style = _check_style(style)
    seed = _check_seed(seed, style)
    doc_end = _doc_end(special_token)
    if style == "web" and b"\0" in doc_end:
        raise ValueError("the web style cannot write a special token with a NUL character")

    if hasattr(path_or_file, "write"):
        if isinstance(path_or_file, io.TextIOBase):
            raise TypeError("generate() needs a binary file object (open it with 'wb')")
        return _write(path_or_file, size_bytes, seed, doc_end, style)

    with atomic_output(path_or_file) as out:
        _write(out, size_bytes, seed, doc_end, style)
    return size_bytes


def mixed_text(n_chars: int, seed: int = 0, special_token: str | None = None, style: str = "stories") -> str:
    """The first `n_chars` characters of the corpus for `seed`, as str (documents separated by an empty line,
    or by `special_token` on its own line if given). Mixed-language, like the corpus: about 4% of sentences
    are in a non-Latin script.

    >>> len(mixed_text(500, seed=3))
    500
    """
    if isinstance(n_chars, bool) or not isinstance(n_chars, (int, np.integer)):
        raise TypeError(f"n_chars must be an int, got {type(n_chars).__name__}")
    if n_chars < 0:
        raise ValueError(f"n_chars must be >= 0, got {n_chars}")
    n_chars = int(n_chars)
    seed = _check_seed(seed, style)
    blocks = _block_source(style)
    parts, have = [], 0
    for block in blocks(seed, _doc_end(special_token)):
        if have >= n_chars:
            break
        text = block.decode("utf-8")
        parts.append(text)
        have += len(text)
    return "".join(parts)[:n_chars]


# --- web style: word lists ---------------------------------------------------------------------------------

# Common words of English web pages, most frequent first (the head of the Zipf distribution).
_WEB_WORDS = """
the to and of a in is for on that by this with I you it not or be are from at as your all have new more an was
we will home can us about if page my has search free but our one other do no information time they site he up
may what which their news out use any there see only so his when contact here business who web also now help get
view online first am been would how were me services some these click its like service than find price date back
top people had list name just over state year day into email two health world next used go work last most
products music buy data make them should product system post her city add policy number such please available
support message after best software then good video well where info rights public books high school through each
links she review years order very privacy book items company read group need many user said does set under
general research university mail full map reviews program life know games way days management part could great
united hotel real item international center must store travel comments made development report off member
details line terms before hotels did send right type because local those using results office education national
car design take posted internet address community within states area want phone shipping reserved subject
between forum family long based code show even black check special prices website index being women much sign
file link open today technology south case project same pages version section own found sports house related
security both county american photo game members power while care network down computer systems three total
place end following download him without per access think north resources current posts big media law control
water history pictures size art personal since including guide shop directory board location change white text
small rating rate government children during return students shopping account times sites level digital profile
previous form events love old main call hours image department title description insurance another why shall
property class still money quality every listing content country private little visit save tools low reply
customer compare movies include college value article man card jobs provide food source author different press
learn sale around print course job process room stock training too credit point join science men categories
advanced west sales look english left team estate box conditions select windows photos thread week category note
live large gallery table register however market library really action start series model features air industry
plan human provided yes required second hot accessories cost movie forums better say questions going medical
test friend come server study application cart staff articles feedback again play looking issues never users
complete street topic comment financial things working against standard tax person below mobile less got blog
party payment equipment login student let programs offers legal above recent park stores side act problem red
give memory performance social sell options experience rates create key body young important field few east
paper single age activities club example girls additional password latest something road gift question changes
night hard pay four status browse issue range building seller court always result audio light write war offer
blue groups easy given files event release analysis request making picture needs possible might professional yet
month major star areas future space committee hand sun cards problems meeting become interest child keep enter
share similar garden schools million added reference companies listed baby learning energy run delivery popular
term film stories put computers journal reports try welcome central images president notice original head radio
until cell color self council away includes track discussion archive once others entertainment agreement format
least society months log safety friends sure trade edition cars messages marketing tell further updated
association able having provides fun already green studies close common drive specific several gold living
collection called short arts lot ask display limited solutions means director daily beach past natural whether
due five upon period planning database says official weather land average done technical window pro region
island record direct conference environment records district calendar costs style front statement update parts
ever downloads early miles sound resource present applications either ago document word works material bill
written talk federal rules final tickets thing centre requirements via cheap kids finance true minutes else mark
third rock gifts reading topics bad individual tips plus auto cover usually edit together videos percent fast
function fact unit getting global tech meet far economic player projects often subscribe submit amount watch
included feel though bank risk thanks everything deals various words production commercial weight town heart
advertising received choose treatment newsletter archives points knowledge magazine error camera girl currently
construction toys registered clear golf receive domain methods chapter makes protection policies loan wide
beauty manager position taken sort listings models known half cases step engineering simple quick none wireless
license friday lake whole annual published later basic shows corporate church method purchase customers active
response practice hardware figure materials fire holiday chat enough designed along among death writing speed
countries loss face brand discount higher effects created remember standards oil bit yellow political increase
advertise kingdom base near environmental thought stuff french storage doing loans shoes entry stay nature orders
availability summary turn mean growth notes agency king monday european activity copy although drug western
income force cash employment overall bay river commission package contents seen players engine port album
regional stop supplies started administration bar institute views plans double dog build screen exchange types
soon sponsored lines electronic continue across benefits needed season apply someone held anything printer
condition effective believe organization effect asked mind sunday selection lost tour menu volume cross anyone
hope silver corporation wish inside solution role rather weeks addition came supply nothing certain executive
running lower necessary union jewelry according clothing particular fine names hour gas skills six advice career
military rental decision leave british huge woman facilities bid kind sellers middle move cable opportunities
taking values division coming tuesday object appropriate machine logo length actually nice score statistics
client returns capital follow sample investment sent shown saturday christmas culture band flash lead choice
went starting registration thursday courses consumer airport foreign artist outside furniture levels channel
letter mode phones ideas wednesday structure fund summer allow degree contract button releases homes super male
matter custom almost took located multiple distribution editor industrial cause potential song focus late fall
featured idea rooms female responsible communications win associated primary numbers reason tool browser spring
foundation answer voice friendly schedule documents communication purpose feature bed comes police everyone
independent approach cameras brown physical operating hill maps medicine deal hold ratings forms glass happy
wanted developed thank safe unique survey prior telephone sport ready feed animal sources population regular
secure navigation operations therefore simply evidence station round favorite understand option master valley
recently probably rentals sea built publications blood cut worldwide improve connection publisher hall larger
networks earth parents impact transfer introduction kitchen strong wedding properties hospital ground overview
ship accommodation owners disease excellent paid perfect hair opportunity kit classic basis command cities
express award distance tree assessment ensure thus wall involved extra especially interface partners budget
rated guides success maximum operation existing quite selected boy patients restaurants beautiful warning wine
locations horse vote forward flowers stars significant lists technologies owner retail animals useful directly
manufacturer ways son providing rule housing takes bring catalog searches trying mother authority considered told
traffic joined input strategy feet agent valid modern senior teaching door grand testing trial charge units
instead canadian cool normal wrote enterprise ships entire educational leading metal positive fitness chinese
opinion football abstract uses output funds greater likely develop employees artists alternative processing
responsibility resolution guest seems publication pass relations trust van contains session multi photography
republic fees components vacation century academic assistance completed skin graphics indian prev ads mary
expected ring grade dating pacific mountain organizations pop filter mailing vehicle longer consider northern
behind panel floor buying match proposed default require outdoor morning otherwise allows rest protect owned
sure don't it's I'm can't didn't doesn't isn't you're we're that's there's I've won't let's they're I'll
""".split()

_WEB_STOPWORDS = frozenset(
    "a an the and or but of to in on at by for with from as is are was were be been it its this that these those "
    "into over under than then via per".split()
)

_WEB_TECH = """
user id name count data list item value key index config file path url request response error event handler
manager service client server node tree map table row column buffer size length width height time date type
status state message token cache query result options params props context session account order price total
number page view model controller component widget button input output stream reader writer logger parser builder
factory provider adapter callback listener queue stack array vector matrix string text char bytes flag mode level
limit max min offset start end first last next prev parent child root source target temp old new current default
local global remote image color font style theme layout header footer body title label icon link menu form field
dialog window frame canvas layer scene player game score health speed position velocity product cart customer
address email phone city country region api auth login password hash salt secret job task worker thread pool
""".split()

_WEB_VERB_PREFIXES = (
    "get set is has update create handle on to parse load compute make build fetch find add remove init render "
    "validate check read write process format convert apply reset enable disable show hide send receive open close "
    "start stop run use can should"
).split()

_WEB_SECTIONS = (
    "blog news article articles products product p wiki docs help about en us search category tag tags forum "
    "thread topic user users profile watch video videos images download downloads shop store item r questions "
    "answers post posts story stories page pages index events media static assets"
).split()

_WEB_MAIL_DOMAINS = (
    "gmail.com yahoo.com hotmail.com outlook.com icloud.com aol.com protonmail.com mail.ru yandex.ru gmx.de web.de "
    "qq.com 163.com live.com msn.com orange.fr libero.it"
).split()

_WEB_TLDS = (
    ".com .com .com .com .com .com .com .com .org .org .org .net .net .io .co.uk .de .ru .fr .jp .cn .info .edu "
    ".gov .us .ca .com.au .in .com.br .es .it .nl .co .me .tv .app .dev"
).split()

_WEB_FIRST_NAMES = """
James Mary John Patricia Robert Jennifer Michael Linda William Elizabeth David Barbara Richard Susan Joseph Jessica
Thomas Sarah Charles Karen Christopher Nancy Daniel Lisa Matthew Betty Anthony Margaret Mark Sandra Donald Ashley
Steven Kimberly Paul Emily Andrew Donna Joshua Michelle Kenneth Dorothy Kevin Carol Brian Amanda George Melissa
Edward Deborah Ronald Stephanie Timothy Rebecca Jason Sharon Jeffrey Laura Ryan Cynthia Jacob Kathleen Gary Amy
Nicholas Shirley Eric Angela Jonathan Helen Stephen Anna Larry Brenda Justin Pamela Scott Nicole Brandon Emma
Benjamin Samantha Samuel Katherine Gregory Christine Frank Rachel Alexander Catherine Patrick Jack Janet Dennis
Ruth Tyler Heather Aaron Diane Jose Virginia Adam Julie Henry Victoria Nathan Olivia Kyle Lauren Mohammed Ahmed
Ali Fatima Wei Ming Hiroshi Yuki Sakura Kenji Olga Dmitri Sergei Natasha Ivan Pierre Marie Jean Hans Klaus Greta
Giulia Marco Luca Sofia Mateo Camila Santiago Valentina Diego Lucia Carlos Juan Miguel Ana Priya Rahul Arjun
Ananya Kwame Amara Chinedu Jae Linh Omar Leila Noah Liam Mia Ethan Ava Lucas Chloe Zoe Max Ben Tom Lily
""".split()

_WEB_SURNAMES = """
Smith Johnson Williams Brown Jones Garcia Miller Davis Rodriguez Martinez Hernandez Lopez Gonzalez Wilson Anderson
Thomas Taylor Moore Jackson Martin Lee Perez Thompson White Harris Sanchez Clark Ramirez Lewis Robinson Walker
Young Allen King Wright Scott Torres Nguyen Hill Flores Green Adams Nelson Baker Hall Rivera Campbell Mitchell
Carter Roberts Schmidt Schneider Fischer Weber Meyer Wagner Becker Ivanov Petrov Smirnov Kumar Singh Patel Sharma
Wang Zhang Liu Chen Yang Tanaka Suzuki Sato Watanabe Kim Park Choi Rossi Russo Ferrari Dubois Moreau Laurent
Silva Santos Oliveira Costa Murphy Kelly O'Brien Cohen Novak Kowalski Jensen Hansen Larsen Berg
""".split()

_WEB_EMOJI = _EMOJI + "🔥 💯 🙏 😍 🤔 😎 👀 ✅ ❌ ⚡ 📷 💡 🎶 😅 🤣 👏 💪 🥳 🌍 📈".split()

# Other languages: common words (most frequent first), and syllables from which their long tail is made up.
_WEB_LANGS = {
    "fr": (
        "de la le et les des en un une du est que pour dans qui pas sur au avec ce il ne se plus par sont mais nous "
        "vous ou son sa ses leur été être avoir fait très tout tous comme aussi bien peut cette où elle ils même "
        "après avant depuis entre sans sous chez notre votre deux ans fois jour temps monde vie France Paris année "
        "première nouveau grand petit autre encore déjà toujours ici là voilà c'est j'ai d'un d'une qu'il n'est à ça "
        "était également français société ville histoire"
    ),
    "es": (
        "de la que el en y a los del se las por un para con no una su al es lo como más pero sus le ya o este sí "
        "porque esta entre cuando muy sin sobre también me hasta hay donde quien desde todo nos durante todos uno "
        "les ni contra otros ese eso ante ellos esto mí antes algunos qué unos yo otro otras otra él tanto esa "
        "estos mucho quienes nada muchos cual poco ella estar estas algunas algo año años día España México está "
        "están había hace según después así gobierno país ciudad información"
    ),
    "de": (
        "der die und in den von zu das mit sich des auf für ist im dem nicht ein eine als auch es an werden aus er "
        "hat dass sie nach wird bei einer um am sind noch wie einem über einen so zum war haben nur oder aber vor "
        "zur bis mehr durch man sein wurde sei Jahr Jahre Zeit Menschen Deutschland können müssen schon wieder "
        "heute immer sehr gibt geht viele neue große ganz hier während gegen unter Stadt Unternehmen Straße"
    ),
    "ru": (
        "и в не на я быть он с что а по это она этот к но они мы как из у который то за свой весь год от так о "
        "для ты же все тот мочь вы человек такой его сказать только или ещё бы себя один уже до время если сам "
        "когда другой вот говорить наш мой знать стать при чтобы дело жизнь кто первый очень два день её новый "
        "рука даже во со раз где там под можно ну какой после их работа без самый потом надо хотеть ли слово "
        "идти большой должен место иметь Россия Москва " + " ".join(_CYRILLIC)
    ),
    "el": (
        "και το η του να ο τα της την σε με που για από δεν στο είναι θα των τον οι στην ένα μια αλλά όπως πιο "
        "έχει στα μας σας τους ότι ή αυτό αυτή αυτός όταν μόνο πολύ μετά ακόμα χρόνια ημέρα Ελλάδα Αθήνα "
        "κυβέρνηση " + " ".join(_GREEK)
    ),
    "ar": (
        "في من على إلى أن عن مع هذا هذه التي الذي كان قد لا ما هو هي كل بين بعد قبل عند حتى أو ثم إن لم لن كما "
        "أيضا يوم عام الله مصر الحكومة الرئيس " + " ".join(_ARABIC)
    ),
    "ko": (
        "그리고 하지만 있다 없다 이 그 저 것 수 등 더 때 년 월 일 한국 서울 정부 사람 우리 많은 새로운 대한 통해 위해 "
        + " ".join(_KOREAN)
    ),
}

# Characters for Chinese and Japanese, most frequent first (a run of them is one GPT-2 pre-token).
_HANZI = (
    "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多天"
    "而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样现分将外但身些"
    "与高意进把法此实回二理美点月明其种声全工己话儿者向情部正名定女问力机给等几很业最间新什打便位因重被走电四第门相"
    "次东政海口使教西再平真听世气信北少关并内加化由却代军产入先山五太水万市眼体别处总才场师书比住员九笑性通目华报立"
    "马命张活难神数件安表原车白应路期叫死常提感金何更反合放做系计或司利受光王果亲界及今京务制解各任至清物台象记边共"
    "风战干接它许八特觉望直服毛林题建南度统色字请交爱让认算论百吃义科怎元社术结六功指思非流每青管夫连远资队跟带花快"
    "条院变联言权往展该领传近留红治决周保达办运武半候七必城父强步完革深区即求品士转量空甚众技轻程告江语英基派满式李"
    "息写呢识极令黄德收脸钱党倒未持取设始版双历越史商千片容研像找友孩站广改议形委早房音火际则首单据导影失拿网香似斯"
)
_KANA = "あいうえおかきくけこさしすせそたちつてとなにぬねのはひふへほまみむめもやゆよらりるれろわをんがぎぐげござじずぜぞだでどばびぶべぼっょゃゅ"
_KATAKANA = "アイウエオカキクケコサシスセソタチツテトナニヌネノハヒフヘホマミムメモヤユヨラリルレロワンーガギグゲゴザジズゼゾダデドバビブベボパピプペポッ"
_KANJI = "日本人年大中国出会見時行分後前生上下学気自事社者地業方新場員立開手力問代明動京目通言理体田主題意不作用度強公持野以思家世多正安院心界教文元重近考画海売知道集別物使品計死特私始朝運終台広住真有口少町料工建空急止送切転研足究楽起着店病質待試族銀早映親験英医仕去味写字答夜音注帰古歌買悪図週室歩風紙黒花春赤青館屋色走秋夏習駅洋旅服夕借曜飲肉貸堂鳥飯勉冬昼茶弟牛魚兄犬妹姉漢"
_HANGUL = (
    "가나다라마바사아자차카타파하거너더러머버서어저처고노도로모보소오조초코토포호구누두루무부수우주추기니디리미비시이지치"
    "키티피히개내대래매배새애재해게세제한국사람일시간년학생회전정문화경제치교육발술연산업관방법결과상황우유의미내용료"
    "활행각음랑친족님공책영악노래운여음식커피물밥집길차은는을를에서와과도만께"
)

# Made-up words per script: (onsets, nuclei, codas, finals, prefixes, syllable counts). A word is a prefix,
# syllables (onset + nucleus + coda) and a final; an entry repeated is drawn more often.
_WEB_SCRIPTS = {
    "en": (
        "b c d f g h j k l m n p r s t v w y z b c d l m n p r s t b c d f g h k l m n p r s t v w bl br ch cl cr "
        "dr fl fr gl gr pl pr sh sl sp st th tr",
        "a e i o u a e i o a e i o u ea ee oo ou ai y",
        "- - - - - - - - - - - - - - - - n r s t l m d ck ng nd nt st",
        "- - - - - - - - - - - - - - ing ed er ly y s s es al ic ist ful",
        "- - - - - - - - - - - - un re dis con",
        (1, 1, 2, 2, 2, 3),
    ),
    "name": (
        "b c d f g h j k l m n p r s t v w z br ch cl cr dr fr gr kr sh st tr",
        "a e i o u a e i o ai ei ia ie oe",
        "- - - - n r s l m nd rk",
        "- - - son man ez ski ov ova er ton ley berg stein ini elli sen ard ani escu ic wicz",
        "-",
        (1, 2, 2, 3),
    ),
    "fr": (
        "b c d f g j l m n p r s t v b c d l m p r s t ch qu gr tr pl br cr pr fl",
        "a e i o u a e i é è ê à â ô î ou ai eu au oi ie",
        "- - - - - - r n s l t",
        "- - - - tion ment eur euse ité er é ée ique isme age esse oire ais",
        "-",
        (1, 2, 2, 3, 3),
    ),
    "es": (
        "b c d f g j l m n p r s t v b c d l m p r s t ll ch gu qu br tr pr",
        "a e i o u a e i o á é í ó ú ia ie ue io",
        "- - - - - - n r s l",
        "- - - - ción dad mente ado ada ido ero era ismo ía ón",
        "-",
        (1, 2, 2, 3, 3),
    ),
    "de": (
        "b d f g h k l m n p r s t w z b d g h k l m s t sch st sp pf kr tr br gr fr",
        "a e i o u a e i o ä ö ü ei au ie eu",
        "- - - - n r s t l ch ck nd ng",
        "- - - - ung heit keit lich isch chen er en ig schaft",
        "- - - - - - - - ge ver be",
        (1, 2, 2, 3, 3),
    ),
    "ru": (
        "б в г д ж з к л м н п р с т ф х ц ч ш щ в д к л м н п р с т бр вл гр др кр пр ст тр св сл",
        "а е и о у ы я ю э а е и о",
        "- - - - - н р с т л в й к",
        "- - - ов ая ый ий ого ние ать ить ка ский ство ость ой ами ых",
        "- - - - - - - - по за пере при",
        (1, 2, 2, 3, 3),
    ),
    "el": (
        "β γ δ ζ θ κ λ μ ν ξ π ρ σ τ φ χ ψ κ λ μ ν π τ μπ ντ γκ στ τρ κρ πρ",
        "α ε η ι ο υ ω ά έ ή ί ό ύ ώ ου αι ει οι α ε ο",
        "- - - - - - ν ρ λ",
        "ος ης ας ες ων ου ια ικός ση μα ό ή ά ος ο",
        "-",
        (1, 2, 2, 3),
    ),
    "ar": (
        "ب ت ث ج ح خ د ذ ر ز س ش ص ض ط ظ ع غ ف ق ك ل م ن ه و ي ب ت ر س ك ل م ن",
        "- - - ا و ي",
        "-",
        "- - - ة ات ون ين ي ها",
        "- - - - ال ال",
        (2, 2, 3, 3, 4),
    ),
    "ko": (" ".join(_HANGUL), "-", "-", "- - 는 은 이 가 를 을 에 의 도 로 에서 입니다 했다", "-", (2, 3, 3, 4)),
}
# Chinese and Japanese have no spaces: a clause is a run of characters (and one GPT-2 pre-token), then maybe an
# ending; an entry repeated is drawn more often.
_CLAUSES = {
    "zh": (_HANZI[:300] + _HANZI, ""),
    "ja": (_KANA * 3 + _KATAKANA + _KANJI, "です ます した する から まで ました"),
}


# --- web style: vectorised pieces of text --------------------------------------------------------------------
#
# Everything random in a block comes from a counter-based generator (SplitMix64 of a counter) with exact uint64
# arithmetic, so the bytes are the same on any machine and numpy version. A batch of n pieces of text (n names,
# n URLs, ...) is a list of columns of uint64 "words" of 8 bytes each: piece i is the bytes of word i of every
# column, in order, without their 0 bytes (padding). Joining pieces side by side is joining lists, a table
# lookup is one 1-D gather per column, and all of it stays cheap in numpy.

_U = np.uint64
_GOLDEN = _U(0x9E3779B97F4A7C15)
_MIX1, _MIX2 = _U(0xBF58476D1CE4E5B9), _U(0x94D049BB133111EB)
_SH = [_U(k) for k in range(64)]
_M16 = _U(0xFFFF)
_POW10 = np.array([10**k for k in range(20)], dtype=np.uint64)


def _fmix(z):
    """SplitMix64's output function, in place on a uint64 array (which it returns)."""
    z ^= z >> _SH[30]
    z *= _MIX1
    z ^= z >> _SH[27]
    z *= _MIX2
    z ^= z >> _SH[31]
    return z


def _hash(keys, salt):
    """A pseudo-random uint64 for each uint64 key: a fixed function of (key, salt)."""
    return _fmix(keys * _GOLDEN + _U(salt & 0xFFFFFFFFFFFFFFFF))


class _Rand:
    """Pseudo-random uint64 arrays: SplitMix64 of a running counter, keyed by the seed."""

    def __init__(self, seed):
        self.key = int(_hash(np.array([seed], dtype=np.uint64), 0x5EB1)[0])
        self.count = 0

    def __call__(self, n):
        counter = np.arange(self.count, self.count + n, dtype=np.uint64)
        self.count += n
        return _hash(counter, self.key)


def _field(h, i, n):
    """The i-th 16-bit field of h (i in 0..3) scaled to an index in [0, n) (n: an int <= 65536 or a uint64
    array)."""
    f = (h >> _SH[16 * i]) & _M16 if i else h & _M16
    return ((f * (n if isinstance(n, np.ndarray) else _U(n))) >> _SH[16]).astype(np.intp)


def _chance(h, i, p):
    """True with probability p, from the i-th 16-bit field of h."""
    return ((h >> _SH[16 * i]) & _M16) < _U(int(p * 65536))


def _below(h, n):
    """A uniform uint64 in [0, n) (n < 2**32: an int or a uint64 array) from the high 32 bits of h."""
    return ((h >> _SH[32]) * (n if isinstance(n, np.ndarray) else _U(n))) >> _SH[32]


def _ranks(h, base, low_bits, high_bits):
    """Ranks base + [0, 2**k), k uniform in [low_bits, high_bits]: about Zipf (frequency ~ 1 / rank) over a
    vocabulary of 2**high_bits, so that the number of distinct words keeps growing with the text (Heaps' law)."""
    bits = _U(low_bits) + _field(h, 3, high_bits - low_bits + 1).astype(np.uint64)
    return _U(base) + (h & ((_U(1) << bits) - _U(1)))


def _random_bytes(R, n, width):
    """An (n, width) uint8 matrix of random bytes."""
    k = -(-width // 8)
    return R(n * k).astype("<u8", copy=False).view(np.uint8).reshape(n, 8 * k)[:, :width]


def _lut(chars):
    """A random byte -> one of chars (as bytes), about uniformly."""
    chars = chars.encode("ascii")
    return np.array([chars[(b * len(chars)) >> 8] for b in range(256)], dtype=np.uint8)


_CLASSES = {
    "9": _lut("0123456789"), "1": _lut("123456789"), "A": _lut("ABCDEFGHIJKLMNOPQRSTUVWXYZ"),
    "a": _lut("abcdefghijklmnopqrstuvwxyz"), "f": _lut("0123456789abcdef"),
    "b": _lut("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"),
}


def _cols(mat):
    """A uint8 matrix (n, w) as columns of 8-byte words (zero-padded)."""
    n, w = mat.shape
    k = max(1, -(-w // 8))
    buf = np.zeros((n, 8 * k), dtype=np.uint8)
    buf[:, :w] = mat
    words = buf.view(np.uint64)
    return [words[:, c] for c in range(k)]


def _matrix(cols):
    """Columns of words back to an (n, 8 * len(cols)) uint8 matrix."""
    return np.stack(cols, axis=1).view(np.uint8)


def _items(cols):
    """The pieces as a list of bytes (for tests and the pool)."""
    mat = _matrix(cols)
    full = np.empty((mat.shape[0], mat.shape[1] + 1), dtype=np.uint8)
    full[:, :-1] = mat
    full[:, -1] = 0xFF  # never in UTF-8
    return full[full != 0].tobytes().split(b"\xff")[:-1]


@lru_cache(maxsize=None)
def _const_words(text):
    return [int(c[0]) for c in _cols(np.frombuffer(text.encode("utf-8"), dtype=np.uint8)[None, :])]


def _const(n, text):
    return [np.full(n, w, dtype=np.uint64) for w in _const_words(text)]


def _when(cols, keep):
    """The pieces where keep is True, empty elsewhere."""
    return [c * keep for c in cols]


class _Tab:
    """A table of strings, picked by index (uniformly or with Zipf weights 1 / (rank + 2.7))."""

    def __init__(self, strings, zipf=False):
        self.strings = list(strings)
        data = [s.encode("utf-8") for s in self.strings]
        width = max(1, max(map(len, data)))
        mat = np.frombuffer(b"".join(b.ljust(width, b"\0") for b in data), dtype=np.uint8).reshape(-1, width)
        self.cols = [np.ascontiguousarray(c) for c in _cols(mat)]
        self.n = len(data)
        self.lengths = np.array([len(b) for b in data], dtype=np.uint64)
        if zipf:
            self.cum = np.cumsum(np.array([int(2**24 / (r + 2.7)) for r in range(self.n)], dtype=np.uint64))
            self.total = int(self.cum[-1])

    def take(self, idx):
        return [c[idx] for c in self.cols]

    def uniform(self, h, i=0):
        """Uniformly, from the i-th 16-bit field of h."""
        return self.take(_field(h, i, self.n))

    def zipf(self, h):
        """Zipf-weighted, from the high 32 bits of h."""
        return self.take(np.searchsorted(self.cum, _below(h, self.total), side="right"))


def _mixture(R, n, variants):
    """n pieces made by a weighted mix of makers: variants are (weight, maker(R, m) -> m pieces)."""
    cum = np.cumsum(np.array([w for w, _ in variants], dtype=np.uint64))
    choice = np.searchsorted(cum, _below(R(n), int(cum[-1])), side="right")
    order = np.argsort(choice, kind="stable")
    counts = np.bincount(choice, minlength=len(variants)).tolist()
    made = [maker(R, m) for (_, maker), m in zip(variants, counts)]  # every maker, for the width
    out = [np.zeros(n, dtype=np.uint64) for _ in range(max(map(len, made)))]
    start = 0
    for cols, m in zip(made, counts):
        rows = order[start : start + m]
        for c, col in enumerate(cols):
            out[c][rows] = col
        start += m
    return out


def _digits(v, width, pad=False):
    """Decimal digits of the uint64 values v, right-aligned in `width` bytes; leading zeros are blank unless
    pad."""
    q = v[:, None] // _POW10[width - 1 :: -1]
    d = (q % _U(10)).astype(np.uint8) + np.uint8(48)
    if not pad:
        d[:, :-1] *= q[:, :-1] != 0
    return d


def _between(R, n, low, high, width=None, pad=False):
    """Decimal integers uniform in [low, high]."""
    return _cols(_digits(_U(low) + _below(R(n), high - low + 1), width or len(str(high)), pad))


def _grouped(R, n, low, high):
    """Integers uniform in [low, high] (high < 10**9) with thousands separators: 1,234,567."""
    d = _digits(_U(low) + _below(R(n), high - low + 1), 9)
    parts = [d[:, 0:3]]
    for g in (1, 2):
        parts.append(np.where(d[:, 3 * g - 1] != 0, np.uint8(44), np.uint8(0))[:, None])
        parts.append(d[:, 3 * g : 3 * g + 3])
    return _cols(np.concatenate(parts, axis=1))


def _digit_run(R, n, low, high):
    """Random digit strings of low..high digits (no leading zero)."""
    b = _random_bytes(R, n, high + 1)
    d = _CLASSES["9"][b[:, :high]]
    d[:, 0] = _CLASSES["1"][b[:, 0]]
    length = low + ((b[:, high].astype(np.uint16) * (high - low + 1)) >> 8)
    d[np.arange(high)[None, :] >= length[:, None]] = 0
    return _cols(d)


def _fill(R, n, pattern):
    """Pieces like `pattern` with each class character (9: digit, A/a: letter, f: hex digit, b: base64url)
    replaced by a random one of its class; other characters are kept."""
    mat = np.tile(np.frombuffer(pattern.encode("utf-8"), dtype=np.uint8), (n, 1))
    b = _random_bytes(R, n, len(pattern))
    for i, c in enumerate(pattern):
        if c in _CLASSES:
            mat[:, i] = _CLASSES[c][b[:, i]]
    return _cols(mat)


def _syllable_stems(spec, count, salt, first, limit):
    """`count` made-up stems of a script (see _WEB_SCRIPTS), as drawn (a few repeat, so short stems are as
    common as they should be) but at most `limit` bytes long: heads (prefix + syllables) if first, else tails
    (syllables + final)."""
    syllables: Any          # a list of ints (the others: lists of str)
    onsets, nuclei, codas, finals, prefixes, syllables = (
        [("" if w == "-" else w) for w in part.split()] if isinstance(part, str) else part for part in spec)
    extra = prefixes if first else finals
    keys = np.arange(2 * count, dtype=np.uint64)
    h = _hash(keys, salt)
    n = np.array(syllables)[_field(h, 0, len(syllables))]
    n = ((n + 1) // 2 if first else np.maximum(n // 2, 1)).tolist()
    parts = [[extra[i] for i in _field(h, 1, len(extra)).tolist()]]
    for k in range(max(syllables)):
        hk = _hash(keys, salt + 1 + k)
        parts.append([o + v + c for o, v, c in zip(*(
            [table[i] for i in _field(hk, j, len(table)).tolist()] for j, table in enumerate((onsets, nuclei, codas))))])
    stems = ["".join(parts[k + 1][i] for k in range(n_i)) for i, n_i in enumerate(n)]
    if first:  # a head is never empty
        stems = [p + (stem or parts[1][i]) for i, (p, stem) in enumerate(zip(parts[0], stems))]
    else:
        stems = [stem + f for stem, f in zip(stems, parts[0])]
    return [stem for stem in stems if len(stem.encode("utf-8")) <= limit][:count]


class _MadeUp:
    """Made-up words of a script, each a fixed function of a rank: a head and a tail stem (of thousands)."""

    def __init__(self, name, spec, heads=4096, tails=4096):
        self.salt = 0xC0FFEE + sum(map(ord, name)) * 7919
        # one word of 8 bytes for a stem of a Latin script, two or three for others (2 or 3 bytes a letter)
        limit = 8 * max(len(c.encode("utf-8")) for c in spec[0].replace(" ", "")[:1])
        head_stems = _syllable_stems(spec, heads, self.salt, True, limit)
        self.heads = _Tab(head_stems)
        self.heads_cap = _Tab([s[:1].upper() + s[1:] for s in head_stems])
        self.tails = _Tab(_syllable_stems(spec, tails, self.salt + 1, False, limit))

    def __call__(self, ranks, capital=False):
        h = _hash(ranks, self.salt)
        heads = self.heads_cap if capital else self.heads
        return heads.uniform(h, 0) + self.tails.uniform(h, 1)


class _WebLexicon:
    """The tables the web style draws from (fixed, the same for every seed)."""

    def __init__(self):
        self.made_up = {
            name: _MadeUp(name, spec, *((16384, 16384) if name == "en" else (4096, 4096)))
            for name, spec in _WEB_SCRIPTS.items()
        }
        words = list(dict.fromkeys(_WEB_WORDS))
        # the common vocabulary: real words, then made-up ones, with Zipf weights that fall off faster after the
        # real words (most words are real); made-up words of higher rank come from the WORD slot
        head = len(words)
        tail = [w.decode("utf-8") for w in _items(self.made_up["en"](np.arange(head, head + 6000, dtype=np.uint64)))]
        self.vocab = words + [w for w in tail if w]
        self.vocab_cum = list(itertools.accumulate(
            1.0 / (r + 2.7) * (1.0 if r < head else head / r) for r in range(len(self.vocab))))
        self.word_base = head
        plain = [w for w in words if w.isascii() and w.isalpha() and w.islower()]
        self.plain = _Tab(plain, zipf=True)
        self.plain_cap = _Tab([w.capitalize() for w in plain], zipf=True)
        self.typo_source = _Tab([w for w in plain if len(w) >= 4], zipf=True)
        self.tech = _Tab(_WEB_TECH)
        self.tech_cap = _Tab([w.capitalize() for w in _WEB_TECH])
        self.tech_upper = _Tab([w.upper() for w in _WEB_TECH])
        self.verbs = _Tab(_WEB_VERB_PREFIXES)
        self.first = _Tab(_WEB_FIRST_NAMES, zipf=True)
        self.first_lower = _Tab([n.lower() for n in _WEB_FIRST_NAMES], zipf=True)
        self.surnames = _Tab(_WEB_SURNAMES, zipf=True)
        self.surnames_lower = _Tab([n.lower().replace("'", "") for n in _WEB_SURNAMES], zipf=True)
        self.sections = _Tab(_WEB_SECTIONS, zipf=True)
        self.mail = _Tab(_WEB_MAIL_DOMAINS, zipf=True)
        self.tlds = _Tab(_WEB_TLDS)
        self.emoji = _Tab(_WEB_EMOJI, zipf=True)
        months = "January February March April May June July August September October November December".split()
        self.months = _Tab(months)
        self.months_short = _Tab([m[:3] for m in months])
        self.ampm = _Tab([" am", " pm", " AM", " PM", "am", "pm"])
        self.currency = _Tab(["$", "$", "$", "€", "£", "¥", "USD ", "EUR "])
        self.titles = _Tab(["Dr. ", "Mr. ", "Ms. ", "Mrs. ", "Prof. "])
        self.initials = _Tab([c + ". " for c in "ABCDEFGHJKLMNPRSTW"])
        self.seps = _Tab(["_", ".", "", "", "-"])
        self.keyboard = np.zeros((26, 8), dtype=np.uint8)
        self.keyboard_count = np.zeros(26, dtype=np.uint64)
        for i, near in enumerate(_KEYBOARD_NEIGHBOURS):
            self.keyboard[i, : len(near)] = np.frombuffer(near.encode(), dtype=np.uint8)
            self.keyboard_count[i] = len(near)
        self.clauses = {}
        for name, (chars, finals) in _CLAUSES.items():
            flat = np.frombuffer("".join(chars).encode("utf-8"), dtype=np.uint8)
            assert len(flat) == 3 * len(chars)
            self.clauses[name] = (flat, len(chars), _Tab([""] * 4 + finals.split()))


_KEYBOARD_NEIGHBOURS = (
    "qwsz vghn xdfv serf wsdr drtg ftyh gyuj ujko huikm jiol kop njk bhjm iklp olp wa edft awedxz rfgy yhji cfgb "
    "qase zsdc tugh asx"
).split()


@lru_cache(maxsize=1)
def _lexicon():
    return _WebLexicon()


# --- web style: what fills each slot ----------------------------------------------------------------------
# A maker takes (R, n) and returns n pieces as columns of words (the number of columns never depends on R or n).


def _word(R, n, capital=False):
    """A rare word: made up, Zipf-ranked over a vocabulary of millions."""
    lx = _lexicon()
    return lx.made_up["en"](_ranks(R(n), lx.word_base, 18, 36), capital)


def _capword(R, n):
    """A made-up proper noun."""
    return _word(R, n, True)


def _first(R, n):
    lx = _lexicon()
    return _mixture(R, n, [(7, lambda R, m: lx.first.zipf(R(m))),
                           (3, lambda R, m: lx.made_up["name"](_ranks(R(m), 0, 16, 32), True))])


def _surname(R, n):
    lx = _lexicon()
    return _mixture(R, n, [(3, lambda R, m: lx.surnames.zipf(R(m))),
                           (7, lambda R, m: lx.made_up["name"](_ranks(R(m), 0, 16, 32), True))])


def _name(R, n):
    lx = _lexicon()
    return _mixture(R, n, [
        (15, _first),
        (65, lambda R, m: _first(R, m) + _const(m, " ") + _surname(R, m)),
        (8, lambda R, m: _first(R, m) + _const(m, " ") + lx.initials.uniform(R(m)) + _surname(R, m)),
        (12, lambda R, m: lx.titles.uniform(R(m)) + _surname(R, m)),
    ])


def _typo(R, n):
    """A common word with one slip: a neighbouring key, a letter dropped, two letters swapped, or one doubled."""
    lx = _lexicon()
    h = R(n)
    idx = np.searchsorted(lx.typo_source.cum, _below(h, lx.typo_source.total), side="right")
    length = lx.typo_source.lengths[idx]
    word = _matrix(lx.typo_source.take(idx))
    word = np.concatenate([word, np.zeros((n, 1), dtype=np.uint8)], axis=1)  # room for a doubled letter
    w = word.shape[1]
    op = _field(h, 0, 4)
    pos = 1 + _field(h, 1, length - _U(2))  # 1 .. length - 2
    cols = np.arange(w)
    src = np.broadcast_to(cols, (n, w)).copy()
    rows = np.flatnonzero(op == 3)  # double the letter at pos
    src[rows] -= cols > pos[rows, None]
    rows = np.flatnonzero(op == 2)  # swap it with the next
    src[rows, pos[rows]] += 1
    src[rows, pos[rows] + 1] -= 1
    out = np.take_along_axis(word, src, axis=1)
    rows = np.flatnonzero(op == 1)  # drop it
    out[rows, pos[rows]] = 0
    rows = np.flatnonzero(op == 0)  # hit a neighbouring key
    letters = out[rows, pos[rows]].astype(np.intp) - 97
    out[rows, pos[rows]] = lx.keyboard[letters, _field(R(len(rows)), 0, lx.keyboard_count[letters])]
    return _cols(out)


def _number(R, n):
    return _mixture(R, n, [
        (12, lambda R, m: _between(R, m, 0, 99)),
        (6, lambda R, m: _between(R, m, 100, 9999)),
        (70, lambda R, m: _digit_run(R, m, 5, 9)),
        (6, lambda R, m: _between(R, m, 0, 999) + _const(m, ".") + _between(R, m, 0, 99, pad=True)),
        (6, lambda R, m: _grouped(R, m, 1000, 999_999_999)),
    ])


def _small(R, n):
    """A small count: days, percents, ratings' reviews, minutes."""
    return _mixture(R, n, [(4, lambda R, m: _between(R, m, 1, 10)), (4, lambda R, m: _between(R, m, 11, 99)),
                           (2, lambda R, m: _between(R, m, 100, 999))])


def _year(R, n):
    return _between(R, n, 1950, 2029)


def _date(R, n):
    lx = _lexicon()
    return _mixture(R, n, [
        (35, lambda R, m: _between(R, m, 1990, 2029) + _const(m, "-") + _between(R, m, 1, 12, 2, True)
         + _const(m, "-") + _between(R, m, 1, 28, 2, True)),
        (20, lambda R, m: _between(R, m, 1, 12) + _const(m, "/") + _between(R, m, 1, 28) + _const(m, "/")
         + _between(R, m, 1990, 2029)),
        (25, lambda R, m: lx.months.uniform(R(m)) + _const(m, " ") + _between(R, m, 1, 28) + _const(m, ", ")
         + _between(R, m, 1990, 2029)),
        (10, lambda R, m: _between(R, m, 1, 28) + _const(m, " ") + lx.months_short.uniform(R(m)) + _const(m, " ")
         + _between(R, m, 1990, 2029)),
        (10, lambda R, m: _between(R, m, 1, 28, 2, True) + _const(m, ".") + _between(R, m, 1, 12, 2, True)
         + _const(m, ".") + _between(R, m, 1990, 2029)),
    ])


def _time(R, n):
    lx = _lexicon()
    return _mixture(R, n, [
        (45, lambda R, m: _between(R, m, 0, 23, 2, True) + _const(m, ":") + _between(R, m, 0, 59, 2, True)),
        (40, lambda R, m: _between(R, m, 1, 12) + _const(m, ":") + _between(R, m, 0, 59, 2, True)
         + lx.ampm.uniform(R(m))),
        (15, lambda R, m: _between(R, m, 0, 23, 2, True) + _const(m, ":") + _between(R, m, 0, 59, 2, True)
         + _const(m, ":") + _between(R, m, 0, 59, 2, True)),
    ])


def _price(R, n):
    lx = _lexicon()
    return lx.currency.uniform(R(n)) + _mixture(R, n, [
        (50, lambda R, m: _between(R, m, 1, 999) + _const(m, ".") + _between(R, m, 0, 99, 2, True)),
        (30, lambda R, m: _grouped(R, m, 1, 9_999_999)),
        (20, lambda R, m: _between(R, m, 1, 99) + _const(m, ".99")),
    ])


def _patterns(R, n, patterns):
    return _mixture(R, n, [(1, lambda R, m, c=c, p=p: _const(m, c) + _fill(R, m, p)) for c, p in patterns])


def _phone(R, n):
    return _patterns(R, n, [("", "(999) 999-9999"), ("", "999-999-9999"), ("+1 ", "999-999-9999"),
                            ("+44 ", "99 9999 9999"), ("+49 ", "999 9999999"), ("", "999.999.9999"),
                            ("+7 ", "999 999-99-99"), ("+33 ", "9 99 99 99 99")])


def _sku(R, n):
    return _patterns(R, n, [("", "AA-99999"), ("#", "9999999"), ("", "A9A-999-AA"), ("", "AAA9999"),
                            ("", "99-9999-99"), ("", "A99999"), ("", "AA9999AA")])


def _hex(R, n):
    return _patterns(R, n, [("0x", "ffff"), ("0x", "ffffffff"), ("0x", "ff"), ("", "fffffff"), ("", "fffffff"),
                            ("", "ffffffffffff"), ("", "ffffffff-ffff-ffff-ffff-ffffffffffff"),
                            ("", "ffffffffffffffffffffffffffffffffffffffff")])


def _hex_color(R, n):
    return _fill(R, n, "ffffff")


def _version(R, n):
    return _mixture(R, n, [
        (1, lambda R, m: _between(R, m, 0, 9) + _const(m, ".") + _between(R, m, 0, 30) + _const(m, ".")
         + _between(R, m, 0, 200)),
        (1, lambda R, m: _const(m, "v") + _between(R, m, 1, 12) + _const(m, ".") + _between(R, m, 0, 30)),
    ])


def _part(R, n, case=""):
    """One word of an identifier: a tech word, a common word or a made-up one; case "" / "cap" / "upper"."""
    lx = _lexicon()
    tech = {"": lx.tech, "cap": lx.tech_cap, "upper": lx.tech_upper}[case]
    variants = [(40, lambda R, m: tech.uniform(R(m)))]
    if case != "upper":
        plain = lx.plain_cap if case else lx.plain
        variants += [(30, lambda R, m: plain.zipf(R(m))), (30, lambda R, m: _word(R, m, case == "cap"))]
    return _mixture(R, n, variants)


def _camel(R, n):
    lx = _lexicon()
    h = R(n)
    return (lx.verbs.uniform(h, 0) + _part(R, n, "cap") + _when(_part(R, n, "cap"), _chance(h, 1, 0.5))
            + _when(_between(R, n, 1, 99), _chance(h, 2, 0.08)))


def _pascal(R, n):
    return _part(R, n, "cap") + _part(R, n, "cap")


def _snake(R, n):
    h = R(n)
    return (_part(R, n) + _const(n, "_") + _part(R, n)
            + _when(_const(n, "_") + _part(R, n), _chance(h, 0, 0.35)))


def _const_name(R, n):
    h = R(n)
    return (_part(R, n, "upper") + _const(n, "_") + _part(R, n, "upper")
            + _when(_const(n, "_") + _part(R, n, "upper"), _chance(h, 0, 0.35)))


def _hashtag(R, n):
    lx = _lexicon()
    h = R(n)
    return (_const(n, "#") + lx.plain_cap.zipf(R(n))
            + _when(_mixture(R, n, [(3, lambda R, m: lx.plain_cap.zipf(R(m))), (1, _capword)]), _chance(h, 0, 0.7))
            + _when(lx.plain_cap.zipf(R(n)), _chance(h, 1, 0.25))
            + _when(_between(R, n, 2010, 2029), _chance(h, 2, 0.1)))


def _handle_name(R, n):
    lx = _lexicon()
    return _mixture(R, n, [(4, lambda R, m: lx.first_lower.zipf(R(m))), (3, _word),
                           (2, lambda R, m: lx.plain.zipf(R(m))),
                           (1, lambda R, m: lx.made_up["name"](_ranks(R(m), 0, 10, 26)))])


def _handle(R, n):
    lx = _lexicon()
    h = R(n)
    return (_const(n, "@") + _handle_name(R, n)
            + _when(lx.seps.uniform(h, 0) + _handle_name(R, n), _chance(h, 1, 0.45))
            + _when(_between(R, n, 1, 9999), _chance(h, 2, 0.4)))


def _host(R, n):
    lx = _lexicon()
    return _mixture(R, n, [
        (4, _word), (3, lambda R, m: lx.plain.zipf(R(m))),
        (2, lambda R, m: lx.plain.zipf(R(m)) + lx.plain.zipf(R(m))),
        (1, lambda R, m: lx.plain.zipf(R(m)) + _const(m, "-") + lx.plain.zipf(R(m))),
    ])


def _email(R, n):
    lx = _lexicon()
    local = _mixture(R, n, [
        (4, lambda R, m: lx.first_lower.zipf(R(m)) + _const(m, ".") + _mixture(R, m, [
            (1, lambda R, k: lx.surnames_lower.zipf(R(k))),
            (2, lambda R, k: lx.made_up["name"](_ranks(R(k), 0, 10, 26)))])),
        (2, lambda R, m: lx.first_lower.zipf(R(m)) + _between(R, m, 1, 9999)),
        (2, lambda R, m: _word(R, m) + _between(R, m, 1, 999)),
        (1, lambda R, m: lx.plain.zipf(R(m)) + _const(m, ".") + lx.plain.zipf(R(m))),
        (1, lambda R, m: lx.plain.zipf(R(m)) + lx.first_lower.zipf(R(m))),
    ])
    domain = _mixture(R, n, [(6, lambda R, m: lx.mail.zipf(R(m))),
                             (4, lambda R, m: _host(R, m) + lx.tlds.uniform(R(m)))])
    return local + _const(n, "@") + domain


def _slug(R, n):
    lx = _lexicon()

    def word(R, m):
        return _mixture(R, m, [(4, lambda R, k: lx.plain.zipf(R(k))), (1, _word)])

    h = R(n)
    cols = word(R, n)
    for i, p in enumerate((0.9, 0.7, 0.4)):
        cols += _when(_const(n, "-") + word(R, n), _chance(h, i, p))
    return cols


def _url(R, n):
    lx = _lexicon()
    h = R(n)
    scheme = _mixture(R, n, [(14, lambda R, m: _const(m, "https://")), (3, lambda R, m: _const(m, "http://")),
                             (3, lambda R, m: _const(m, "www."))])
    www = _when(_const(n, "www."), _chance(h, 0, 0.3))
    path = _mixture(R, n, [
        (6, lambda R, m: _const(m, "")),
        (4, lambda R, m: _const(m, "/")),
        (8, lambda R, m: _const(m, "/") + lx.sections.zipf(R(m))),
        (25, lambda R, m: _const(m, "/") + lx.sections.zipf(R(m)) + _const(m, "/") + _slug(R, m)),
        (15, lambda R, m: _const(m, "/") + _between(R, m, 2005, 2029) + _const(m, "/") + _between(R, m, 1, 12, 2, True)
         + _const(m, "/") + _slug(R, m) + _const(m, "/")),
        (10, lambda R, m: _const(m, "/") + _slug(R, m) + _const(m, ".html")),
        (5, lambda R, m: _const(m, "/p/") + _between(R, m, 1000, 99_999_999)),
        (6, lambda R, m: _const(m, "/watch?v=") + _fill(R, m, "bbbbbbbbbbb")),
        (12, lambda R, m: _const(m, "/") + lx.sections.zipf(R(m)) + _const(m, "?id=") + _between(R, m, 1, 9_999_999)),
        (5, lambda R, m: _const(m, "/") + lx.sections.zipf(R(m)) + _const(m, "/") + _fill(R, m, "ffffffff")),
    ])
    www = [np.where(scheme[0] == _const_words("www.")[0], _U(0), c) for c in www]  # no "www.www."
    return scheme + www + _host(R, n) + lx.tlds.uniform(h, 1) + path


def _emoji(R, n):
    return _lexicon().emoji.zipf(R(n))


def _script_word(name):
    def make(R, n):
        return _lexicon().made_up[name](_ranks(R(n), 0, 16, 32))

    return make


def _clause(name):
    """A run of 3 to 11 Chinese or Japanese characters (one GPT-2 pre-token, as there are no spaces)."""

    def make(R, n, longest=11):
        flat, count, finals = _lexicon().clauses[name]
        b = _random_bytes(R, n, 2 * longest + 1).astype(np.uint32)
        idx = 3 * (((b[:, 0 : 2 * longest : 2] << 8 | b[:, 1 : 2 * longest : 2]) * count) >> 16)
        out = np.empty((n, longest, 3), dtype=np.uint8)
        for k in range(3):
            out[:, :, k] = flat[idx + k]
        length = 3 + ((b[:, 2 * longest] * (longest - 2)) >> 8)
        out[np.arange(longest)[None, :] >= length[:, None]] = 0
        return _cols(out.reshape(n, 3 * longest)) + finals.uniform(R(n))

    return make


# slot name -> maker; a template writes a slot as ⟦NAME⟧
_SLOT_MAKERS = {
    "WORD": _word, "CAPWORD": _capword, "FIRST": _first, "NAME": _name, "TYPO": _typo, "NUM": _number, "SMALL": _small,
    "YEAR": _year, "DATE": _date, "TIME": _time, "PRICE": _price, "PHONE": _phone, "SKU": _sku, "HEX": _hex,
    "COLOR": _hex_color, "VERSION": _version, "URL": _url, "EMAIL": _email, "HASHTAG": _hashtag,
    "HANDLE": _handle, "CAMEL": _camel, "PASCAL": _pascal, "SNAKE": _snake, "CONST": _const_name,
    "EMOJI": _emoji, "SLUG": _slug,
    "FR": _script_word("fr"), "ES": _script_word("es"), "DE": _script_word("de"), "RU": _script_word("ru"),
    "EL": _script_word("el"), "AR": _script_word("ar"), "KO": _script_word("ko"), "ZH": _clause("zh"),
    "JA": _clause("ja"),
}
_SLOT_NAMES = ("",) + tuple(_SLOT_MAKERS)  # index 0: no slot
_SLOT_INDEX = {name: i for i, name in enumerate(_SLOT_NAMES)}


# --- web style: documents -----------------------------------------------------------------------------------
#
# A seeded pool of units (sentences, lines, code blocks) is written once from templates, with slots (⟦NAME⟧)
# where fresh pieces go. A unit is stored as a run of 8-byte rows: its text cut into words of 8 bytes
# (zero-padded at each slot), and for each slot, as many rows as its pieces have words. A block of documents
# draws unit indices in bulk, expands them into rows, makes all the pieces of each slot type in one vectorised
# call, gathers every row's word from the pool or from the pieces, and squeezes out the zero bytes.

_SLOT_RE = re.compile("⟦([A-Z]+)⟧")


def _weighted(pairs):
    """(names, cumulative weights) for random.choices."""
    names = [p[0] for p in pairs]
    return names, list(itertools.accumulate(p[1] for p in pairs))


_ARTICLE_SLOTS = _weighted([
    ("WORD", 50), ("CAPWORD", 16), ("NAME", 6), ("TYPO", 3), ("NUM", 25), ("YEAR", 2), ("DATE", 1), ("PRICE", 1),
    ("URL", 1), ("EMAIL", 1), ("HASHTAG", 1), ("HANDLE", 1), ("VERSION", 1), ("SKU", 1), ("CAMEL", 1),
    ("PHONE", 1), ("TIME", 1),
])
_FORUM_SLOTS = _weighted([
    ("WORD", 40), ("TYPO", 7), ("NAME", 4), ("HANDLE", 6), ("HASHTAG", 5), ("EMOJI", 4), ("NUM", 20), ("URL", 3),
    ("CAPWORD", 8), ("DATE", 1), ("TIME", 2), ("PRICE", 1), ("VERSION", 1),
])
_SHOP_SLOTS = _weighted([
    ("WORD", 30), ("CAPWORD", 14), ("NUM", 18), ("PRICE", 8), ("SKU", 8), ("TYPO", 6), ("NAME", 4), ("PHONE", 2),
    ("EMAIL", 1), ("URL", 2), ("DATE", 2), ("VERSION", 2),
])
_TECH_SLOTS = _weighted([
    ("WORD", 25), ("CAMEL", 14), ("SNAKE", 8), ("PASCAL", 5), ("VERSION", 5), ("HEX", 5), ("NUM", 14), ("URL", 5),
    ("CONST", 3), ("TYPO", 5), ("CAPWORD", 7), ("NAME", 3), ("DATE", 2), ("HANDLE", 1), ("EMAIL", 1),
])
_FORUM_OPENERS = ("lol", "tbh", "imo", "btw", "yeah", "ok so", "idk", "honestly", "omg", "well", "hmm", "same,")
_FORUM_ENDS = _weighted([
    (".", 30), ("!", 12), ("!!", 5), ("?", 12), ("??", 3), ("...", 8), (" :)", 5), (" :(", 2), (" ;)", 2),
    (" :D", 2), (" ⟦EMOJI⟧", 8), ("", 9),
])
_PAIRS = {"WORD": 0.3, "CAPWORD": 0.4}  # how often a rare word comes with another
_PROSE_RATE = 0.33  # of the words of an English sentence are slots (mostly rare words, names and numbers)
_FOREIGN_RATE = 0.55  # of the words of other languages are made-up words of that language
_ENDS = _weighted([(".", 86), ("?", 6), ("!", 5), ("...", 2), (":", 1)])

_BOILERPLATE = (
    "Read more: ⟦URL⟧", "Source: ⟦URL⟧", "Posted by ⟦NAME⟧ on ⟦DATE⟧ at ⟦TIME⟧", "Updated ⟦DATE⟧",
    "Share: ⟦HASHTAG⟧ ⟦HASHTAG⟧", "Follow us on Twitter ⟦HANDLE⟧ and Instagram ⟦HANDLE⟧",
    "Contact us at ⟦EMAIL⟧ or call ⟦PHONE⟧.", "Copyright © ⟦YEAR⟧ ⟦CAPWORD⟧ Inc. All rights reserved.",
    "Tags: {w}, {w}, {w}", "⟦SMALL⟧ comments", "Photo: ⟦NAME⟧/⟦CAPWORD⟧", "Related: ⟦URL⟧",
    "Subscribe to our newsletter!", "Click here to download the PDF (⟦SMALL⟧ MB).", "Image credit: ⟦HANDLE⟧",
    "Last modified: ⟦DATE⟧ ⟦TIME⟧", "Order #⟦SKU⟧ shipped on ⟦DATE⟧.", "Call ⟦PHONE⟧ today!",
    "See also: ⟦URL⟧ and ⟦URL⟧", "Filed under: {W}, {W}", "{W} | {W} | {W} | Contact | Privacy Policy",
    "Home > {W} > {W} > ⟦CAPWORD⟧", "⟦NUM⟧ views · ⟦SMALL⟧ likes", "Email: ⟦EMAIL⟧ | Phone: ⟦PHONE⟧",
)
_SHOP_LINES = (
    "Price: ⟦PRICE⟧", "SKU: ⟦SKU⟧", "Model: ⟦SKU⟧", "Rating: {r}/5 (⟦SMALL⟧ reviews)", "In stock: ⟦SMALL⟧ units",
    "Call ⟦PHONE⟧ or email ⟦EMAIL⟧.", "Ships from ⟦CAPWORD⟧, ⟦CAPWORD⟧ in ⟦SMALL⟧ days.",
    "Seller: ⟦HANDLE⟧ ({p}% positive)", "Dimensions: ⟦SMALL⟧ x ⟦SMALL⟧ x ⟦SMALL⟧ cm", "Weight: ⟦SMALL⟧ kg",
    "Was ⟦PRICE⟧, now ⟦PRICE⟧ (save {p}%)", "Free shipping on orders over ⟦PRICE⟧", "Brand: ⟦CAPWORD⟧",
    "Color: {w} / {w}", "Item ⟦SKU⟧ added on ⟦DATE⟧", "- {T}: {s}", "- {T} ⟦CAPWORD⟧ ⟦NUM⟧ {w}",
)

# code: (openers ending a line that opens a block, statements); ⟦...⟧ are slots, {c} is an English comment
_CODE = {
    "py": ("    ", "", (
        "def ⟦SNAKE⟧(⟦SNAKE⟧, ⟦SNAKE⟧=None):", "def ⟦SNAKE⟧(self, ⟦SNAKE⟧):", "if ⟦SNAKE⟧ is None:",
        "if not ⟦SNAKE⟧:", "if len(⟦SNAKE⟧) > ⟦NUM⟧:", 'elif ⟦SNAKE⟧ == "⟦WORD⟧":', "else:",
        "for ⟦SNAKE⟧ in ⟦SNAKE⟧:", "for i, ⟦SNAKE⟧ in enumerate(⟦SNAKE⟧):", "while ⟦SNAKE⟧ < ⟦NUM⟧:",
        "class ⟦PASCAL⟧(⟦PASCAL⟧):", "try:", "except ⟦PASCAL⟧Error as e:", 'with open("⟦SNAKE⟧.json") as f:',
    ), (
        "⟦SNAKE⟧ = ⟦SNAKE⟧.⟦SNAKE⟧(⟦SNAKE⟧)", "⟦SNAKE⟧ = [⟦SNAKE⟧ for ⟦SNAKE⟧ in ⟦SNAKE⟧ if ⟦SNAKE⟧]",
        "return ⟦SNAKE⟧", 'return {"⟦SNAKE⟧": ⟦SNAKE⟧, "⟦SNAKE⟧": ⟦NUM⟧}', "self.⟦SNAKE⟧ = ⟦SNAKE⟧",
        "⟦SNAKE⟧[⟦SNAKE⟧] += 1", "⟦SNAKE⟧ += ⟦SNAKE⟧ * ⟦NUM⟧", 'print(f"⟦WORD⟧: {⟦SNAKE⟧}")',
        'logger.info("%s {c} %d", ⟦SNAKE⟧, ⟦SNAKE⟧)', 'raise ValueError("{c}")', "# {c}", "⟦CONST⟧ = ⟦NUM⟧",
        "⟦SNAKE⟧ = ⟦SNAKE⟧ or {}", "assert ⟦SNAKE⟧ == ⟦HEX⟧", "time.sleep(0.⟦NUM⟧)",
        '⟦SNAKE⟧ = os.path.join(⟦SNAKE⟧, "⟦SNAKE⟧")', "continue", "break", "import ⟦SNAKE⟧",
        "from ⟦SNAKE⟧ import ⟦PASCAL⟧, ⟦SNAKE⟧", "x = [i ** 2 for i in range(⟦NUM⟧)]",
        "⟦SNAKE⟧ = np.zeros((⟦NUM⟧, ⟦NUM⟧), dtype=np.float32)",
    )),
    "js": ("  ", "}", (
        "function ⟦CAMEL⟧(⟦CAMEL⟧, ⟦CAMEL⟧) {", "const ⟦CAMEL⟧ = async (⟦CAMEL⟧) => {",
        "if (⟦CAMEL⟧ !== null && ⟦CAMEL⟧.length > ⟦NUM⟧) {", "for (let i = 0; i < ⟦CAMEL⟧.length; i++) {",
        "try {", "class ⟦PASCAL⟧ extends ⟦PASCAL⟧ {", "switch (⟦CAMEL⟧) {", "} else {",
    ), (
        "const ⟦CAMEL⟧ = ⟦CAMEL⟧.⟦CAMEL⟧(⟦CAMEL⟧);", "let ⟦CAMEL⟧ = await fetch(`⟦URL⟧`);",
        "return ⟦CAMEL⟧ || [];", "console.log('⟦WORD⟧', ⟦CAMEL⟧);", "⟦CAMEL⟧.push({ id: ⟦NUM⟧, name: '⟦WORD⟧' });",
        "this.⟦CAMEL⟧ = ⟦CAMEL⟧;", "// {c}", "⟦CAMEL⟧ += ⟦CAMEL⟧ * ⟦NUM⟧;",
        "document.getElementById('⟦SNAKE⟧').innerHTML = ⟦CAMEL⟧;", 'throw new Error("{c}");',
        "export default ⟦PASCAL⟧;", "import { ⟦CAMEL⟧ } from './⟦CAMEL⟧';", "const { ⟦CAMEL⟧, ⟦CAMEL⟧ } = props;",
    )),
    "c": ("    ", "}", (
        "int ⟦SNAKE⟧(int ⟦SNAKE⟧, char *⟦SNAKE⟧) {", "static void ⟦CAMEL⟧(const ⟦PASCAL⟧ &⟦CAMEL⟧) {",
        "for (int i = 0; i < ⟦CONST⟧; i++) {", "if (⟦SNAKE⟧ == NULL) {", "while (⟦SNAKE⟧-- > 0) {",
        "public ⟦PASCAL⟧ ⟦CAMEL⟧(String ⟦CAMEL⟧) {", "} else if (⟦SNAKE⟧ >= ⟦NUM⟧) {",
    ), (
        "⟦SNAKE⟧[i] = ⟦SNAKE⟧[i] << 2 | ⟦HEX⟧;", "return -1;", 'printf("%d {c}\\n", ⟦SNAKE⟧);',
        "⟦SNAKE⟧->⟦SNAKE⟧ = &⟦SNAKE⟧;", "#define ⟦CONST⟧ ⟦NUM⟧", "#include <⟦SNAKE⟧.h>", "int ⟦SNAKE⟧ = ⟦NUM⟧;",
        "⟦CAMEL⟧.⟦CAMEL⟧(⟦CAMEL⟧);", "/* {c} */", "free(⟦SNAKE⟧);", "memcpy(⟦SNAKE⟧, ⟦SNAKE⟧, sizeof(⟦SNAKE⟧));",
        'System.out.println("⟦WORD⟧: " + ⟦CAMEL⟧);', "uint32_t ⟦SNAKE⟧ = (⟦SNAKE⟧ >> 8) & 0xff;",
    )),
}
_CODE_ONE_LINERS = (
    "$ pip install ⟦SNAKE⟧==⟦VERSION⟧", '$ git commit -m "{c}"', "$ cd ~/⟦SNAKE⟧ && make -j4",
    "$ curl -s ⟦URL⟧ | jq '.⟦SNAKE⟧'", "SELECT ⟦SNAKE⟧, COUNT(*) FROM ⟦SNAKE⟧ WHERE ⟦SNAKE⟧ > ⟦NUM⟧ GROUP BY ⟦SNAKE⟧;",
    '<div class="⟦SNAKE⟧"><a href="⟦URL⟧">{c}</a></div>', '{"⟦CAMEL⟧": ⟦NUM⟧, "⟦CAMEL⟧": "⟦WORD⟧", "id": "⟦HEX⟧"}',
    ".⟦SNAKE⟧ { margin: 0 auto; padding: ⟦NUM⟧px; color: #⟦COLOR⟧; }", "docker run -p 8080:80 ⟦SNAKE⟧:⟦VERSION⟧",
    'Traceback (most recent call last):\n  File "⟦SNAKE⟧.py", line ⟦NUM⟧, in ⟦SNAKE⟧\n⟦PASCAL⟧Error: {c}',
)
_CODE_LANGUAGES = ("Python", "JavaScript", "C", "Java", "Rust", "Go", "SQL", "Bash", "React", "Linux", "Docker")

# (weight in documents, units in the body: lowest, highest)
_WEB_KINDS = {
    "article": (40, 4, 30), "forum": (16, 3, 24), "shop": (8, 5, 25), "code": (10, 4, 16),
    "fr": (3.5, 3, 20), "es": (3.5, 3, 20), "de": (3.5, 3, 20), "ru": (4, 3, 20), "el": (2, 3, 16),
    "ar": (2.5, 3, 16), "ko": (1.5, 3, 16), "zh": (4, 3, 20), "ja": (2, 3, 16),
}


class _WebWriter:
    """Writes the units of the pool with a seeded random.Random."""

    def __init__(self, seed, lexicon):
        self.rng = random.Random((seed << 8) | 0x57)
        self.lx = lexicon
        self.foreign = {
            lang: list(dict.fromkeys(text.split())) for lang, text in _WEB_LANGS.items()
        }
        self.foreign_cum = {
            lang: list(itertools.accumulate(1.0 / (r + 2.7) for r in range(len(w)))) for lang, w in self.foreign.items()
        }

    def words(self, n):
        return self.rng.choices(self.lx.vocab, cum_weights=self.lx.vocab_cum, k=n)

    def pick(self, weighted):
        """random.choices(names, cum_weights=cum)[0], without its overhead (the same draw)."""
        names, cum = weighted
        return names[bisect.bisect(cum, self.rng.random() * (cum[-1] + 0.0), 0, len(cum) - 1)]

    def fill(self, template):
        """Replace {w} (a word), {W} (a capitalized word), {T} (a title), {s} (a phrase), {c} (a comment),
        {r} (a rating out of 5), {p} (a percentage)."""
        rng = self.rng
        out = []
        for part in re.split(r"(\{[wWTscrp]\})", template):
            if part == "{w}":
                part = self.words(1)[0]
            elif part == "{W}":
                part = self.words(1)[0].capitalize()
            elif part == "{T}":
                part = self.title_words(rng.randint(2, 5))
            elif part == "{s}":
                part = " ".join(self.words(rng.randint(3, 10)))
            elif part == "{r}":
                part = "%.1f" % (rng.randint(25, 50) / 10)
            elif part == "{p}":
                part = str(rng.randint(5, 99))
            elif part == "{c}":
                part = " ".join(self.words(rng.randint(2, 8))).capitalize()
            out.append(part)
        return "".join(out)

    def title_words(self, n):
        words = self.words(n)
        return " ".join(w if i and w in _WEB_STOPWORDS else w[0].upper() + w[1:] for i, w in enumerate(words))

    def title(self):
        rng = self.rng
        text = self.title_words(rng.randint(3, 9))
        r = rng.random()
        if r < 0.1:
            text = "⟦NUM⟧ " + text
        elif r < 0.2:
            text = "How to " + text
        elif r < 0.3:
            text += ": " + self.title_words(rng.randint(2, 6))
        elif r < 0.35:
            text += " (⟦YEAR⟧)"
        elif r < 0.5:
            text += " - ⟦CAPWORD⟧"
        elif r < 0.55:
            text += " | ⟦CAPWORD⟧ ⟦CAPWORD⟧"
        return text

    def sentence(self, slots, rate, forum=False, code=False):
        rng = self.rng
        n = rng.randint(2, 14) + rng.randint(1, 14)
        words = self.words(n)
        for i in range(1, n):
            if rng.random() < rate:
                name = self.pick(slots)
                words[i] = ("`⟦%s⟧`" if code and name in ("CAMEL", "SNAKE", "CONST") and rng.random() < 0.5
                            else "⟦%s⟧") % name
                if name in _PAIRS and rng.random() < _PAIRS[name]:  # two rare words or a two-word name
                    words[i] += " ⟦%s⟧" % name
            elif forum and words[i] == "you" and rng.random() < 0.3:
                words[i] = "u"
        if not forum or rng.random() < 0.6:
            words[0] = words[0][0].upper() + words[0][1:]
        for i in range(n - 1):
            r = rng.random()
            if r < 0.06:
                words[i] += ","
            elif r < 0.07:
                words[i] += " -"
        r = rng.random()
        if r < 0.04 and n > 6:  # a parenthesis or a quotation
            i = rng.randint(1, n - 4)
            j = i + rng.randint(1, 3)
            if rng.random() < 0.6:
                words[i], words[j] = "(" + words[i], words[j].rstrip(",") + ")"
            else:
                words[i], words[j] = '"' + words[i], words[j].rstrip(",") + '"'
        text = " ".join(words)
        if forum:
            if rng.random() < 0.15:
                text = rng.choice(_FORUM_OPENERS) + " " + text
            return text + self.pick(_FORUM_ENDS)
        return text + self.pick(_ENDS)

    def joiner(self, weights=(0.72, 0.06, 0.22)):
        return self.pick(((" ", "\n", "\n\n"), list(itertools.accumulate(weights))))

    # units of each kind: (heads, body)

    def article(self, n_heads, n_body):
        rng = self.rng
        heads = []
        for _ in range(n_heads):
            byline = rng.choice(("By ⟦NAME⟧ | ⟦DATE⟧\n\n", "⟦DATE⟧ · ⟦SMALL⟧ min read\n\n")) if rng.random() < 0.3 else ""
            heads.append(self.title() + "\n\n" + byline + self.sentence(_ARTICLE_SLOTS, _PROSE_RATE))
        body = []
        for _ in range(n_body):
            if rng.random() < 0.1:
                body.append("\n\n" + self.fill(rng.choice(_BOILERPLATE)))
            else:
                body.append(self.joiner() + self.sentence(_ARTICLE_SLOTS, _PROSE_RATE))
        return heads, body

    def forum(self, n_heads, n_body):
        rng = self.rng
        heads = []
        for _ in range(n_heads):
            intro = rng.choice(("⟦HANDLE⟧ wrote:\n", "Posted by ⟦HANDLE⟧ on ⟦DATE⟧, ⟦TIME⟧\n\n",
                                "Quote from ⟦NAME⟧:\n", "", ""))
            heads.append(("Re: " if rng.random() < 0.3 else "") + self.title() + "\n\n" + intro
                         + self.sentence(_FORUM_SLOTS, _PROSE_RATE, forum=True))
        body = []
        for _ in range(n_body):
            r = rng.random()
            if r < 0.12:
                who = rng.choice(("⟦HANDLE⟧ said:\n", "⟦HANDLE⟧ wrote:\n", "> ", "Reply from ⟦NAME⟧:\n"))
                body.append("\n\n" + who + self.sentence(_FORUM_SLOTS, _PROSE_RATE, forum=True))
            elif r < 0.16:
                body.append("\n" + rng.choice(("⟦SMALL⟧ likes · Reply · ⟦SMALL⟧h", "Edited ⟦DATE⟧", "+1", "^ this",
                                               "Thanks ⟦HANDLE⟧!", "⟦HASHTAG⟧ ⟦HASHTAG⟧ ⟦HASHTAG⟧")))
            else:
                body.append(self.joiner((0.6, 0.2, 0.2)) + self.sentence(_FORUM_SLOTS, _PROSE_RATE, forum=True))
        return heads, body

    def shop(self, n_heads, n_body):
        rng = self.rng
        heads = [
            "⟦CAPWORD⟧ " + self.title_words(rng.randint(2, 6)) + rng.choice((" ⟦SKU⟧", "", " - ⟦PRICE⟧")) + "\n\n"
            + self.sentence(_SHOP_SLOTS, _PROSE_RATE)
            for _ in range(n_heads)
        ]
        body = []
        for _ in range(n_body):
            r = rng.random()
            if r < 0.55:
                body.append("\n" + self.fill(rng.choice(_SHOP_LINES)))
            elif r < 0.7:
                body.append("\n\n⟦NAME⟧ (⟦DATE⟧): " + self.sentence(_FORUM_SLOTS, _PROSE_RATE, forum=True))
            else:
                body.append(self.joiner((0.5, 0.1, 0.4)) + self.sentence(_SHOP_SLOTS, _PROSE_RATE))
        return heads, body

    def code_block(self):
        rng = self.rng
        if rng.random() < 0.2:
            return "\n\n" + "\n".join(self.fill(rng.choice(_CODE_ONE_LINERS)) for _ in range(rng.randint(1, 3)))
        indent, closer, openers, statements = _CODE[rng.choice(("py", "py", "js", "c"))]
        if rng.random() < 0.2:
            indent = "\t"
        lines, depth = [], 0
        for _ in range(rng.randint(3, 12)):
            r = rng.random()
            if r < 0.25 and depth < 4:
                line = rng.choice(openers)
                if line.startswith("}") and depth:
                    lines.append(indent * (depth - 1) + self.fill(line))
                    continue
                lines.append(indent * depth + self.fill(line.lstrip("} ")))
                depth += 1
            elif r < 0.4 and depth:
                depth -= 1
                if closer:
                    lines.append(indent * depth + closer)
            else:
                lines.append(indent * depth + self.fill(rng.choice(statements)))
        while closer and depth:
            depth -= 1
            lines.append(indent * depth + closer)
        return "\n\n" + "\n".join(lines)

    def code(self, n_heads, n_body):
        rng = self.rng
        heads = [
            rng.choice(("How to ", "", "Fixing ", "Understanding ")) + self.title_words(rng.randint(2, 6)) + " in "
            + rng.choice(_CODE_LANGUAGES) + "\n\n" + self.sentence(_TECH_SLOTS, _PROSE_RATE, code=True)
            for _ in range(n_heads)
        ]
        body = [
            self.code_block() if rng.random() < 0.5
            else self.joiner((0, 0.3, 0.7)) + self.sentence(_TECH_SLOTS, _PROSE_RATE, code=True)
            for _ in range(n_body)
        ]
        return heads, body

    def foreign_sentence(self, lang):
        rng = self.rng
        slot = "⟦%s⟧" % lang.upper()
        if lang in ("zh", "ja"):
            comma, stop = ("，", "。") if lang == "zh" else ("、", "。")
            clauses = []
            for _ in range(rng.randint(1, 4)):
                r = rng.random()
                if r < 0.08:
                    clauses.append(slot + "⟦NUM⟧" + slot)
                elif r < 0.13:
                    clauses.append(slot + " " + self.words(1)[0].capitalize() + " " + slot)
                else:
                    clauses.append(slot)
            return comma.join(clauses) + rng.choice((stop, stop, stop, stop, "！", "？"))
        n = rng.randint(2, 10) + rng.randint(1, 10)
        out = rng.choices(self.foreign[lang], cum_weights=self.foreign_cum[lang], k=n)
        for i in range(1, n):
            r = rng.random()
            if r < _FOREIGN_RATE:
                out[i] = slot
            elif r < _FOREIGN_RATE + 0.02:
                out[i] = rng.choice(("⟦NUM⟧", "⟦YEAR⟧", "⟦CAPWORD⟧", "⟦NAME⟧", "⟦URL⟧"))
        out[0] = out[0][0].upper() + out[0][1:]
        comma = "،" if lang == "ar" else ","
        for i in range(n - 1):
            if rng.random() < 0.07:
                out[i] += comma
        stop = rng.choice(("。", ".", ".", ".", "?", "!")) if lang == "ko" else rng.choice(
            (".", ".", ".", ".", "؟" if lang == "ar" else "?", "!"))
        return " ".join(out) + ("." if stop == "。" else stop)

    def foreign_kind(self, lang, n_heads, n_body):
        no_space = lang in ("zh", "ja")
        heads = []
        for _ in range(n_heads):
            title = self.foreign_sentence(lang).rstrip(".。!！?？؟")
            heads.append(title + "\n\n" + self.foreign_sentence(lang))
        body = [
            (self.rng.choices(("", "\n", "\n\n"), cum_weights=(0.75, 0.8, 1.0))[0] if no_space else self.joiner())
            + self.foreign_sentence(lang)
            for _ in range(n_body)
        ]
        return heads, body


class _WebPool:
    """The units of every kind of document for a seed, as rows (see above)."""

    def __init__(self, seed):
        writer = _WebWriter(seed, _lexicon())
        probe = _Rand(0)  # R(0) draws nothing: the widths of the pieces of each slot type
        self.piece_words = np.array([0] + [len(_SLOT_MAKERS[name](probe, 0)) for name in _SLOT_NAMES[1:]],
                                    dtype=np.int64)
        # each unit is a run of segments: a fragment of text (slot 0) or a slot for a piece (slot type > 0)
        seg_slot: Any           # lists of slot types, then an array
        unit_segments: Any      # ints
        fragments, seg_slot, unit_segments, kinds = [], [], [], []
        for kind, (weight, low, high) in _WEB_KINDS.items():
            if kind in _WEB_LANGS or kind in _CLAUSES:
                heads, body = writer.foreign_kind(kind, 150, 800)
            else:
                sizes = {"article": (1500, 8000), "forum": (600, 3000), "shop": (300, 1500), "code": (300, 1500)}
                heads, body = getattr(writer, kind)(*sizes[kind])
            ranges = []
            for units in (heads, body):
                ranges.append((len(unit_segments), len(units)))
                for unit in units:
                    parts = _SLOT_RE.split(unit)
                    unit_segments.append(len(parts))
                    fragments.extend(parts[0::2])
                    seg_slot.extend([0, _SLOT_INDEX[name]] for name in parts[1::2])
                    seg_slot.append([0])
            kinds.append((weight, low, high, *ranges[0], *ranges[1]))
        data = [f.encode("utf-8") for f in fragments]
        seg_slot = np.array(list(itertools.chain.from_iterable(seg_slot)), dtype=np.int64)
        is_text = seg_slot == 0
        seg_words = self.piece_words[seg_slot]
        text_words = np.array([-(-len(d) // 8) for d in data], dtype=np.int64)
        seg_words[is_text] = text_words
        # the text, each fragment padded to whole words of 8 bytes
        self.words = np.frombuffer(b"".join(d.ljust(8 * w, b"\0") for d, w in zip(data, text_words.tolist())),
                                   dtype=np.uint64)
        seg_value = seg_slot.copy()  # a slot type, or where its text starts in words
        seg_value[is_text] = np.cumsum(text_words) - text_words
        # rows: >= 0, a word of text; < 0, -1 - slot type - 64 * (which word of the piece)
        seg_of_row = np.repeat(np.arange(len(seg_slot)), seg_words)
        j = np.arange(len(seg_of_row)) - np.repeat(np.cumsum(seg_words) - seg_words, seg_words)
        self.codes = np.where(is_text[seg_of_row], seg_value[seg_of_row] + j, -1 - seg_value[seg_of_row] - 64 * j)
        unit_rows = np.add.reduceat(seg_words, np.cumsum(unit_segments) - unit_segments)
        self.count = unit_rows
        self.first = np.cumsum(unit_rows) - unit_rows
        k = np.array([row[1:] for row in kinds], dtype=np.uint64).T
        self.body_low, self.body_span, self.head_start, self.head_size, self.body_start, self.body_size = (
            k[0], k[1] - k[0] + _U(1), k[2], k[3], k[4], k[5])
        self.kind_cum = np.cumsum(np.array([int(10 * row[0]) for row in kinds], dtype=np.uint64))


@lru_cache(maxsize=2)
def _web_pool(seed):
    return _WebPool(seed)


def _web_blocks(seed, doc_end):
    """Yield bytes blocks of whole web-like documents forever; each document is followed by `doc_end`."""
    if b"\0" in doc_end:
        raise ValueError("the web style cannot write a special token with a NUL character")
    seed = _check_seed(seed, "web")
    pool = _web_pool(seed)
    end_words = -(-len(doc_end) // 8)
    words = np.concatenate([pool.words, np.frombuffer(doc_end + bytes(8 * end_words - len(doc_end)), np.uint64)])
    codes = np.concatenate([pool.codes, np.arange(len(pool.words), len(words))])
    end_unit = len(pool.first)
    first = np.append(pool.first, len(pool.codes))
    count = np.append(pool.count, end_words)
    piece_words = pool.piece_words
    makers = [None] + [_SLOT_MAKERS[name] for name in _SLOT_NAMES[1:]]
    R = _Rand(seed)
    for block in itertools.count():
        # small blocks first (a small corpus is quick), then larger ones
        n_docs = min(_WEB_DOCS_PER_BLOCK, 256 << min(block, 8))
        h = R(n_docs)
        kind = np.searchsorted(pool.kind_cum, _below(h, int(pool.kind_cum[-1])), side="right")
        lengths = (pool.body_low[kind] + _below(_fmix(h), pool.body_span[kind])).astype(np.int64) + 2
        ends = np.cumsum(lengths)
        doc_kind = np.repeat(kind, lengths)
        hu = R(int(ends[-1]))
        units = (pool.body_start[doc_kind] + _below(hu, pool.body_size[doc_kind])).astype(np.int64)
        heads = ends - lengths
        units[heads] = (pool.head_start[kind] + _below(hu[heads], pool.head_size[kind])).astype(np.int64)
        units[ends - 1] = end_unit
        # units -> rows
        c = count[units]
        row_code = codes[np.repeat(first[units] - (np.cumsum(c) - c), c) + np.arange(int(c.sum()))]
        is_piece = row_code < 0
        piece_code = -1 - row_code[is_piece]
        word = piece_code >> 6  # the word of its piece each piece row is
        starts = np.flatnonzero(word == 0)
        slot_of = (piece_code[starts] & 63).astype(np.uint8)  # the slot type of each piece, in text order
        order = np.argsort(slot_of, kind="stable")  # a radix sort
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order))
        n_pieces = np.bincount(slot_of, minlength=len(makers))
        first_rank = np.cumsum(n_pieces) - n_pieces
        sizes = n_pieces * piece_words
        offset = np.cumsum(sizes) - sizes
        source = np.empty(len(words) + int(sizes.sum()), dtype=np.uint64)  # the pool's words, then the pieces'
        source[: len(words)] = words
        for t in np.flatnonzero(n_pieces).tolist():
            cols = makers[t](R, int(n_pieces[t]))
            start = len(words) + offset[t]
            out = source[start : start + sizes[t]].reshape(-1, piece_words[t])
            for j, col in enumerate(cols):
                out[:, j] = col
        # each piece's first word in source, less its first row; then every piece row's word
        base = len(words) + offset[slot_of] + (rank - first_rank[slot_of]) * piece_words[slot_of] - starts
        row_code[is_piece] = np.repeat(base, piece_words[slot_of]) + np.arange(len(word))
        data = source[row_code].view(np.uint8)
        yield data[data != 0].tobytes()


# --- command line ------------------------------------------------------------------------------------------

_UNITS = {"": 1, "b": 1}
for _i, _p in enumerate("kmgt", start=1):
    _UNITS[_p] = _UNITS[_p + "b"] = 1000**_i
    _UNITS[_p + "ib"] = 1024**_i


def parse_size(text: str | int) -> int:
    """Bytes in a size like "4096", "100MB", "1.5GB", "2GiB", "64KiB", "10M" (K/M/G/T without "i" are decimal).

    >>> parse_size("100MB"), parse_size("2KiB")
    (100000000, 2048)
    """
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([A-Za-z]*)\s*", str(text))
    if m is None or m.group(2).lower() not in _UNITS:
        raise ValueError(f"invalid size {text!r} (expected a number with an optional unit: 4096, 100MB, 2GiB)")
    # exact: "0.5" is half a byte, not 0 (a context as precise as the digits given: the default 28 digits
    # rounded longer numbers, and took "1.00000000000000000000000000001KB" for 1000; helper-146)
    with decimal.localcontext() as context:
        context.prec = len(m.group(1)) + 20
        size = decimal.Decimal(m.group(1)) * _UNITS[m.group(2).lower()]
        if size != size.to_integral_value():
            raise ValueError(f"invalid size {text!r}: {size.normalize():f} bytes is not a whole number of bytes")
    return int(size)


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (`bpe-fast synth` is the same with the tool's other habits): one-line errors, no
    traceback; SIGTERM and SIGHUP stop it as Ctrl-C does, the temporary file removed; "-o -" writes to stdout."""
    parser = argparse.ArgumentParser(
        prog="python -m bpe_fast.synthetic",
        description="Write a deterministic TinyStories-like or web-like corpus of an exact size.",
    )
    parser.add_argument("--size", required=True, help="e.g. 100MB, 2GB, 512MiB, 4096 (bytes)")
    parser.add_argument("-o", "--output", required=True, help="the file to write (-: stdout)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--style", choices=_STYLES, default="stories",
                        help="stories (TinyStories-like, default) or web (web-like, a growing vocabulary)")
    parser.add_argument(
        "--special-token", default=DEFAULT_SPECIAL_TOKEN, help="the document separator ('' for an empty line)"
    )
    args = parser.parse_args(argv)
    prog = parser.prog
    try:
        size = parse_size(args.size)
    except ValueError as exc:
        sys.exit(f"{prog}: error: --size: {exc}")
    try:
        _check_seed(args.seed, args.style)
    except ValueError as exc:
        sys.exit(f"{prog}: error: --seed: {exc}")
    to_stdout = args.output == "-"
    start = time.perf_counter()
    try:
        with stop_signals_handled(_interrupt):
            generate(sys.stdout.buffer if to_stdout else args.output, size, seed=args.seed,
                     special_token=args.special_token, style=args.style)
            if to_stdout:
                sys.stdout.buffer.flush()
    except KeyboardInterrupt:
        sys.exit(f"{prog}: interrupted; " + ("stdout holds the corpus cut short" if to_stdout else "nothing written"))
    except BrokenPipeError:         # the reader stopped (| head): quiet, as a process killed by SIGPIPE
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())     # (nothing more at exit's flush)
        return 141
    except (OSError, ValueError) as exc:
        sys.exit(f"{prog}: error: {exc}")
    seconds = time.perf_counter() - start
    print(
        f"wrote {size:,} bytes to {'stdout' if to_stdout else args.output} in {seconds:.2f} s "
        f"({size / 1e6 / max(seconds, 1e-9):.0f} MB/s)",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
