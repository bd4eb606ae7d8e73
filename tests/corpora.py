"""Generated test corpora (several scripts, digits, whitespace runs, special tokens), and where the published
reference files are (FIXTURES) with GPT-2's way of writing bytes as characters."""
import random
from pathlib import Path

EOT = "<|endoftext|>"
# data published with references (GPT-2's files, CS336's results), kept in the repository: tests/fixtures/README.md
FIXTURES = Path(__file__).resolve().parent / "fixtures"

SCRIPTS = {
    "latin": "the quick brown fox jumps over lazy dogs and cats sat on mats",
    "cyrillic": "съешь же ещё этих мягких французских булок да выпей чаю",
    "cjk": "我能吞下玻璃而不伤身体 私はガラスを食べられます 나는 유리를 먹을 수 있어요",
    "emoji": "😀 😃 🎉🎉 👩‍👩‍👧 ✨✨✨ 🇫🇷🇩🇪",
    "digits": "12 345 6789 2024 3.14159 ٣٤٥ १२३",
}


def make_corpus(seed, n_words=1500, specials=(), crlf=True):
    rng = random.Random(seed)
    vocab = [w for text in SCRIPTS.values() for w in text.split()]
    vocab += ["aaaaaaaa", "ab" * 7, "zz", "I'm", "don't", "we'll", "they've", "'s"]
    seps = [" ", " ", " ", "  ", "\t", "\n", "\r\n" if crlf else "\n", "   \n", ", ", ". ", "!\n\n"]
    out = []
    for _ in range(n_words):
        out.append(rng.choice(vocab))
        out.append(rng.choice(seps))
        if specials and rng.random() < 0.03:
            out.append(rng.choice(specials))
    out.append("   ")     # text ending in spaces
    return "".join(out)


def write(tmp_path, text, name="corpus.txt"):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


def gpt2_unicode_to_byte():
    """Inverse of GPT-2's byte-to-unicode mapping, written out here rather than taken from bpe_fast: printable
    bytes stand for themselves, the other 68 (in increasing order) for chr(256), chr(257), ..."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    others = [b for b in range(256) if b not in printable]
    table = {chr(b): b for b in printable}
    table.update({chr(256 + i): b for i, b in enumerate(others)})
    return table


def gpt2_decode(token, table=gpt2_unicode_to_byte()):
    """The bytes of a token written in GPT-2's characters ("Ġthe" -> b" the")."""
    return bytes(table[ch] for ch in token)
