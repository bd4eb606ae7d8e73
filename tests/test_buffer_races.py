"""A caller's array rewritten by another thread while bpe_fast reads it (numpy's copyto runs without the GIL).

Native code that checked a value of the caller's buffer and later read it again, trusting it, wrote or read out of
bounds when the value changed in between (helper-122: seven crashes, the rest wrong results or a wrong internal
error). Each case here flips one item of the caller's array between two values while the call runs in a loop:
every result must be one the call can give for some content of the array, and every error one that names a bad
array (the checks' own, or "changed while ... read"); a crash ends the run.
"""
import re
import threading
import time

import numpy as np
import pytest

from bpe_fast import PretokenCounts, Tokenizer, train_from_counts
from bpe_fast.merge_rule import rule_difference_of_indices
from bpe_fast.pretokenize import ChunkCounter, pretoken_boundaries
from bpe_fast.token_arrays import first_occurrences, gather_tokens

SECONDS = 1.5
CHANGED = r"changed while (it was|they were|its UTF-8 was) (read|checked)"


def race(view, a, b, call, good, errors):
    """Call call() in a loop while a thread flips view between a and b; good(result) must hold for each result,
    and each exception must be a ValueError, IndexError or RuntimeError whose message matches `errors`."""
    stop = threading.Event()

    def flip():
        while not stop.is_set():
            np.copyto(view, b)
            np.copyto(view, a)

    writer = threading.Thread(target=flip)
    writer.start()
    seen = set()
    try:
        deadline = time.monotonic() + SECONDS
        while time.monotonic() < deadline:
            try:
                result = call()
            except (ValueError, IndexError, RuntimeError) as exc:
                assert re.search(errors, str(exc)), repr(exc)
                seen.add("error")
            else:
                assert good(result), result
                seen.add("result")
    finally:
        stop.set()
        writer.join()
    np.copyto(view, a)
    assert "result" in seen or "error" in seen


def _words(m):
    tokens = np.frombuffer(b"".join(b"%07d" % k for k in range(m)), dtype=np.uint8).copy()
    return tokens, np.arange(0, 7 * m + 1, 7, dtype=np.int64), np.ones(m, dtype=np.int64)


def test_first_occurrences():
    # the table of seen values was sized by a first pass and written by a second: a value raised in between
    # wrote past it
    values = np.zeros(1 << 20, dtype=np.int64)
    race(values[-1:], np.zeros(1, np.int64), np.array([1 << 40]), lambda: first_occurrences(values).tolist(),
         lambda r: r in ([0], [0, len(values) - 1]), CHANGED)


def test_gather_tokens():
    pool = np.frombuffer(b"abcdefgh" * 1000, dtype=np.uint8)
    offsets = np.arange(0, len(pool) + 1, 8, dtype=np.int64)
    which = np.zeros(1 << 18, dtype=np.int64)
    race(which[-1:], np.zeros(1, np.int64), np.array([1 << 40]), lambda: gather_tokens(pool, offsets, which),
         lambda r: bytes(r[0]) == b"abcdefgh" * len(which) and r[1][-1] == 8 * len(which),
         f"out of range|{CHANGED}")


@pytest.mark.parametrize("call", ["from_arrays", "train_from_counts", "add", "engine", "engine in 3 threads",
                                  "engine in 3 threads, a count"])
def test_pretoken_arrays(call):
    # PretokenCounts keeps the caller's arrays: checked once, then read again by first_repeat, add_arrays and the
    # merge engine's layout, which copied the bytes at the offsets read the second time
    m = 100_000
    tokens, offsets, counts = _words(m)
    k = m // 2
    if call == "from_arrays":
        run, good = lambda: len(PretokenCounts.from_arrays(tokens, offsets, counts)), lambda r: r == m
    elif call == "train_from_counts":
        pc = PretokenCounts.from_arrays(tokens, offsets, counts)
        run, good = lambda: len(train_from_counts(pc, 262)[1]), lambda r: r == 6
    elif call == "add":
        pc = PretokenCounts.from_arrays(tokens, offsets, counts)
        run, good = lambda: len(pc + PretokenCounts({b"x": 1})), lambda r: r == m + 1
    else:
        from bpe_fast._train import MergeEngine
        threads = 3 if "threads" in call else 1     # (the layout and the pair index in ranges)
        run, good = lambda: MergeEngine(tokens, offsets, counts, threads=threads).run(5), lambda r: r == 5
    if call.endswith("a count"):    # (every count 1 but this one: a class of its own, past a range's start)
        race(counts[k:k + 1], np.array([1]), np.array([0]), run, good, f"disagree|{CHANGED}")
        return
    race(offsets[k:k + 1], np.array([7 * k]), np.array([1 << 40]), run, good,
         f"disagree|not increasing|fall|rise|{CHANGED}")


@pytest.mark.parametrize("where", ["offset", "offset at a range's start"])
def test_arrays_with_in_threads(where):
    # arrays_with looks a table up in up to 3 threads (65,536 pre-tokens or more each) and fills its arrays in 2,
    # each reading the table's offsets without the GIL: an offset rewritten meanwhile gives the arrays of some
    # content of it or the RuntimeError, never a read or write out of bounds, and the counter is left empty
    from bpe_fast._scan import PretokenCounter

    m = 3 * 65_536
    tokens, offsets, counts = _words(m)
    k = m // 3 if where.endswith("start") else m - 5
    half = m // 2

    def run():
        counter = PretokenCounter(None, 0)
        counter.add_arrays(tokens[:7 * half], offsets[:half + 1].copy(), counts[:half])
        try:
            result = counter.arrays_with(tokens, offsets, counts, threads=3)
        except RuntimeError:            # (past the argument checks, which refuse before touching it: ValueError)
            assert len(counter) == 0
            raise
        assert len(counter) == 0
        return result

    def good(result):
        out_tokens, out_offsets, out_counts = result
        return len(out_counts) == m and out_offsets[-1] == 7 * m and int(out_counts.sum()) == m + half

    race(offsets[k:k + 1], np.array([7 * k]), np.array([1 << 40]), run, good, f"fall|rise|{CHANGED}")


def test_add_documents():
    docs = 50_000
    data = np.frombuffer(b"hello world " * docs, dtype=np.uint8)
    bounds = np.arange(0, 12 * docs + 1, 12, dtype=np.int64)
    k = docs // 2
    want = {b"hello": docs, b" world": docs, b" ": docs}
    race(bounds[k:k + 1], np.array([12 * k]), np.array([1 << 40]),
         lambda: ChunkCounter().add_documents(data, bounds).to_dict(), lambda r: r == want,
         f"bounds|out of bounds|{CHANGED}")


def test_rule_difference_of_indices():
    pairs = [(x, y) for x in range(40, 240) for y in range(40, 240)][:20_000]
    pool = np.frombuffer(bytes(range(256)) + b"".join(bytes(p) for p in pairs), dtype=np.uint8)
    offsets = np.array(list(range(257)) + [256 + 2 * k for k in range(1, len(pairs) + 1)], dtype=np.int64)
    left = np.array([x for x, _ in pairs], dtype=np.int64)
    right = np.array([y for _, y in pairs], dtype=np.int64)
    joined = np.arange(256, 256 + len(pairs), dtype=np.int64)
    want = rule_difference_of_indices(pool, offsets, left, right, joined)
    race(joined[-1:], joined[-1:].copy(), np.array([1 << 40]),
         lambda: rule_difference_of_indices(pool, offsets, left, right, joined), lambda r: r == want,
         "token index outside")


@pytest.mark.parametrize("call", ["decode_with_offsets", "lengths_in", "decode_bytes_uint64"])
def test_ids_read_twice(call):
    tok = Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"ab"}, [(b"a", b"b")])
    n = 1 << 16
    if call == "decode_with_offsets":
        ids = np.full(n, 97, dtype=np.int64)
        race(ids[:1], np.array([97]), np.array([256]), lambda: tok.decode_with_offsets(ids),
             lambda r: (r[0], r[1][-1]) in (("a" * n, n - 1), ("ab" + "a" * (n - 1), n)), CHANGED)
    elif call == "lengths_in":
        ids = np.full(n, 97, dtype=np.int64)
        race(ids[:1], np.array([97]), np.array([-1]), lambda: tok.lengths_in(b"a" * n, ids).tolist(),
             lambda r: r == [1] * n, "negative token id -1 \\(at position 0\\)")
    else:
        ids = np.full(n, 97, dtype=np.uint64)
        race(ids[:1], np.array([97], np.uint64), np.array([2 ** 64 - 1], np.uint64), lambda: tok.decode_bytes(ids),
             lambda r: r == b"a" * n, "unknown token id 18446744073709551615 \\(at position 0\\)")


@pytest.mark.parametrize("call", ["count", "boundaries"])
def test_utf8_checked_then_scanned(call):
    # the UTF-8 of a bytearray was checked, then the live buffer scanned as valid: a lead byte written after the
    # check ended a pre-token past the buffer (its bytes counted; the validators' disagreement an AssertionError)
    data = bytearray(b"ab " * 10_000 + b"a" * 8 + "\u00e9\u00e9".encode())
    view = np.frombuffer(data, dtype=np.uint8)[-4:]
    first, second = (np.frombuffer(s.encode(), dtype=np.uint8) for s in ("\u00e9\u00e9", "\u20aca"))
    if call == "count":
        run, good = lambda: ChunkCounter().add(data).to_dict(), lambda r: sum(len(k) * v for k, v in r.items()) == \
            len(data) and not any(b"\0" in k for k in r)
    else:
        run, good = lambda: pretoken_boundaries(data), lambda r: r[-1] == len(data)
    race(view, first, second, run, good, CHANGED)


def test_decode_of_a_short_array():
    # below NOGIL_IDS (65,536) decode_bytes kept the GIL and read the caller's ids twice, checking them and sizing
    # the bytes, then gathering: ids rewritten in between wrote past the bytes allocated (heap corruption within
    # seconds, helper-120). Every result is the bytes of some n ids, each "a" or "ab".
    tok = Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"ab"}, [(b"a", b"b")])
    n = 60_000
    ids = np.full(n, 97, dtype=np.int64)
    race(ids, np.full(n, 97, dtype=np.int64), np.full(n, 256, dtype=np.int64), lambda: tok.decode_bytes(ids),
         lambda r: n <= len(r) <= 2 * n and r.replace(b"ab", b"a") == b"a" * n, "$^")


def test_encode_documents_of_a_bytearray():
    # encode_documents_utf8 checked the UTF-8 of the caller's buffer, then scanned it without the GIL: a bytearray
    # rewritten in between failed an internal check ("reported offset ... of valid UTF-8", helper-120). It works
    # on a copy: the ids of some n bytes, or the UnicodeDecodeError of a copy taken mid-rewrite (a character cut)
    tok = Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"ab"}, [(b"a", b"b")])
    n = 1 << 20
    text_a, text_b = ("hello world " * (n // 12 + 1))[:n].encode(), ("\u00e9" * (n // 2)).encode()
    data = bytearray(text_a)
    race(np.frombuffer(data, dtype=np.uint8), np.frombuffer(text_a, dtype=np.uint8),
         np.frombuffer(text_b, dtype=np.uint8), lambda: tok.encode_documents_utf8(data, np.array([0, n])),
         lambda ids: len(tok.decode_bytes(ids)) == n, "codec can't decode")


def test_token_index_splits():
    # TokenIndex kept the caller's pool and offsets: splits() sized a table from one read of the offsets and wrote
    # it from another, so an offset raised in between wrote past it. It now keeps copies, checked once.
    from bpe_fast._gpt2_files import TokenIndex

    m = 50_000
    tokens, offsets, _ = _words(m)
    k = m // 2
    want = TokenIndex(tokens, offsets.copy()).splits()

    def same(result):
        return all(np.array_equal(r, w) for r, w in zip(result[:3], want[:3])) and result[3] == want[3]

    race(offsets[k:k + 1], np.array([7 * k]), np.array([1 << 40]), lambda: TokenIndex(tokens, offsets).splits(),
         same, "offsets|spans|fall|rise|out of")


def test_engine_narrow_slots_take_no_word_longer_than_their_pointers():
    # A narrow engine (2-byte slots) chose its layout from the words' lengths when it checked the arrays; a word
    # made longer than 32,767 bytes before it was laid out would overflow its back pointers: the layout refuses
    # it (RuntimeError), or the engine is built from one content of the arrays, its slots that content's. (The
    # window, from the check to the layout, is met in about 1 call of 50: three races of SECONDS; without the
    # layout's own check the test failed 5 times in 5.)
    from bpe_fast._train import MergeEngine

    m = 5_000
    tokens, offsets, counts = _words(m)
    long = 40_000                                       # word k - 1: 40,000 bytes, count 0 (not laid out)
    tokens = np.concatenate([tokens[:7 * 10], np.full(long, 97, np.uint8), tokens[7 * 10:]])
    offsets = np.concatenate([offsets[:11], offsets[10:] + long])
    counts = np.concatenate([counts[:10], [0], counts[10:]])
    k = 11                                              # word k: 7 bytes, or word k - 1's 40,000 and its own
    slots = {1 + 8 * m: True, 1 + 8 * m + long: False}  # 8 slots a 7-byte word; narrow when no word is too long

    def run():
        engine = MergeEngine(tokens, offsets, counts, max_merges=5)
        engine.run(5)
        return engine.narrow, engine.memory()["slots"] // (2 if engine.narrow else 4)

    for _ in range(3):
        race(offsets[k:k + 1], offsets[k:k + 1].copy(), np.array([offsets[k - 1]]), run,
             lambda r: slots.get(r[1]) == r[0] or (r[1] == 1 + 8 * m and not r[0]), CHANGED)


def test_tally_tokens_classes():
    # tally_tokens checks bmp's classes against the columns of counts, then reads them again without the GIL for
    # each token: one raised in between wrote past counts' row
    from bpe_fast._inspect import tally_tokens

    data = np.frombuffer(("a\u0100" * 20_000).encode(), dtype=np.uint8)
    ids = np.zeros(len(data) // 3, dtype=np.int32)
    lengths = np.array([3], dtype=np.int64)
    bmp = np.zeros(0x10000, dtype=np.uint8)

    def run():
        counts = np.zeros((1, 2), dtype=np.int64)
        class_bytes = np.zeros(2, dtype=np.int64)
        tally_tokens(data, ids, lengths, bmp, counts, class_bytes, 1, 1, 1)
        return counts.tolist(), class_bytes.tolist()

    race(bmp[0x61:0x62], np.zeros(1, np.uint8), np.array([200], np.uint8), run,
         lambda r: r == ([[len(ids), 0]], [len(data), 0]), f"is class 200|{CHANGED}")


def test_engine_replay():
    # MergeEngine.replay checked the merges' offsets, then read them again without the GIL to find each side's
    # bytes: one raised in between read past the tokens. It now reads its own copies.
    from bpe_fast._train import MergeEngine
    from bpe_fast.train import counts_to_arrays

    m = 20_000
    sides = [b"a", b"b"] * m                          # the same merge (a, b) m times: the first makes ab
    tokens = np.frombuffer(b"".join(sides), dtype=np.uint8)
    offsets = np.arange(0, len(sides) + 1, dtype=np.int64)
    k = len(sides) - 2

    def run():
        engine = MergeEngine(*counts_to_arrays({b"ab": 3}))
        engine.replay(tokens, offsets)
        return engine.merges()[0], engine.num_merges

    race(offsets[k:k + 1], np.array([k]), np.array([1 << 40]), run, lambda r: r == ((b"a", b"b"), m),
         "offsets must|empty token")


def test_propagate():
    # propagate checked each rank's parts, then read them again without the GIL as row indices of weights: a
    # part raised in between wrote past them
    from bpe_fast._inspect import propagate

    n = 200_000
    left = np.full(n, -1, dtype=np.int32)
    right = np.full(n, -1, dtype=np.int32)
    left[1:] = np.arange(n - 1, dtype=np.int32)          # rank r is made of rank r - 1 and a byte

    def run():
        weights = np.ones((n, 1), dtype=np.int64)
        propagate(left, right, weights)
        return int(weights[0, 0])

    # (rank 1: checked first, read last, as the ranks are walked down)
    race(left[1:2], np.array([0], np.int32), np.array([1 << 30], np.int32), run, lambda r: r == n,
         "must be ranks below it")
