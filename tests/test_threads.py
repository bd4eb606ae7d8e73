"""Threads sharing one Tokenizer: the native encoder runs without the GIL on texts of 16 KB or more, each call
on an encoder (BPECore, own cache) taken from tok._cores and given back afterwards.

Every result computed in threads is compared with the one computed beforehand, sequentially, by a separate
Tokenizer built from the same merges; the threads start each round together (a barrier) so that calls overlap.
Also: the pool of encoders stays bounded, small caches reset in several threads at once, the GIL is really
released, an error in one thread leaves every encoder usable, and encode_file over threads or processes
equals encode of the whole text.
"""
import functools
import io
import random
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import numpy as np
import pytest

from bpe_fast import Tokenizer, encode_file, train_bpe
from bpe_fast._encode import BPECore
from bpe_fast.synthetic import generate, mixed_text

from corpora import EOT, make_corpus

PAD = "<|pad|>"
SPECIALS = [EOT, PAD]
CUSTOM = r"\w+|[^\w\s]+|\s+"       # not a built-in pattern: `regex` pre-tokenizes, BPECore.encode_pretokens merges
PATTERNS = {"gpt2": "gpt2", "gpt4": "gpt4", "custom": CUSTOM}
N_THREADS = 8
ROUNDS = {"gpt2": 10, "gpt4": 10, "custom": 4}     # the Python path is some 20 times slower
NOGIL_BYTES = 1 << 14               # bpe_fast/_encode.pyx: texts at least this long are encoded without the GIL
NOGIL_IDS = 1 << 16                 # ... and id arrays at least this long are decoded without it
METHODS = ("encode", "encode_to_numpy", "encode_utf8_to_numpy", "encode_iterable", "decode")


# ------------------------------------------------------------------------------------------- texts, tokenizers

@pytest.fixture(scope="module")
def prose():
    """Mixed-language prose without special tokens (about 4% non-Latin sentences)."""
    return mixed_text(1_500_000, seed=11)


def long_text(seed, n_bytes, prose):
    """About n_bytes of UTF-8 (at least 64 KB): stretches dense with special tokens and text in several scripts
    (tests/corpora.py), and stretches of 20 KB or more without special tokens, where the Python path too hands
    the native encoder more than NOGIL_BYTES at once."""
    rng = random.Random(seed)
    parts, size = [], 0
    while size < max(n_bytes, 1 << 16):
        if rng.random() < 0.5:
            part = make_corpus(rng.randrange(1 << 30), rng.randrange(300, 4000), specials=SPECIALS)
        else:
            start = rng.randrange(len(prose) - 70_000)
            part = prose[start:start + rng.randrange(20_000, 70_000)]
        parts += [part, rng.choice(SPECIALS)]
        size += len(part.encode("utf-8"))
    return "".join(parts)


def cut(text, rng):
    """text in pieces for encode_iterable: short ones, and ones long enough to be encoded without the GIL."""
    pieces, pos = [], 0
    while pos < len(text):
        n = rng.randrange(1, 300) if rng.random() < 0.5 else rng.randrange(NOGIL_BYTES, 5 * NOGIL_BYTES)
        pieces.append(text[pos:pos + n])
        pos += n
    return pieces


@pytest.fixture(scope="module")
def trained(tmp_path_factory, prose):
    """pattern name -> (vocab, merges), trained with that pattern on text like long_text's."""
    path = tmp_path_factory.mktemp("train") / "train.txt"
    path.write_bytes(long_text(1, 600_000, prose).encode("utf-8"))
    return {name: train_bpe(path, 1000, SPECIALS, num_processes=1, pattern=pattern)
            for name, pattern in PATTERNS.items()}


def tokenizer(trained, name):
    return Tokenizer(*trained[name], SPECIALS, pattern=PATTERNS[name])


def cases(ref, texts):
    """The expected results, computed sequentially by `ref` (a Tokenizer no thread uses)."""
    out = []
    for text in texts:
        ids = ref.encode(text)
        out.append(SimpleNamespace(text=text, data=text.encode("utf-8"), ids=ids, array=np.array(ids, dtype=np.int64)))
    return out


@pytest.fixture(scope="module")
def texts(prose):
    # 64 KB to 400 KB: all encoded without the GIL, the longer ones decoded without it too (NOGIL_IDS)
    return [long_text(100 + k, 64_000 + 48_000 * k, prose) for k in range(8)]


@pytest.fixture(scope="module", params=list(PATTERNS))
def pattern_name(request):
    return request.param


@pytest.fixture(scope="module")
def expected(trained, pattern_name, texts):
    return cases(tokenizer(trained, pattern_name), texts)


# ------------------------------------------------------------------------------------------- running in threads

def same(got, want, what):
    """Assert two id sequences are equal, naming the first difference (not a diff of 100,000 ids)."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or not np.array_equal(got, want):
        n = min(len(got), len(want))
        diff = np.flatnonzero(got[:n] != want[:n])
        at = int(diff[0]) if len(diff) else n
        raise AssertionError(f"{what}: {len(got)} ids, expected {len(want)}; first difference at {at}: "
                             f"{got[at:at + 5].tolist()} != {want[at:at + 5].tolist()}")


def check(tok, method, case, rng):
    """Run one entry point of `tok` on `case` and compare with the sequential result."""
    if method == "encode":
        got = tok.encode(case.text)
        assert type(got) is list
        same(got, case.ids, method)
    elif method == "encode_to_numpy":
        dtype = np.dtype(rng.choice(["int32", "uint16", "uint32", "int64", "uint64"]))
        got = tok.encode_to_numpy(case.text, dtype=dtype)
        assert got.dtype == dtype
        same(got, case.array, f"{method}({dtype})")
    elif method == "encode_utf8_to_numpy":
        got = tok.encode_utf8_to_numpy(case.data, dtype=np.int32)
        same(got, case.array, method)
    elif method == "encode_iterable":
        same(list(tok.encode_iterable(cut(case.text, rng))), case.ids, method)
    elif method == "decode":
        assert tok.decode(case.ids) == case.text, "decode"
        assert tok.decode_bytes(case.array) == case.data, "decode_bytes"
    else:
        raise ValueError(method)


def run_threads(job, rounds, n_threads=N_THREADS):
    """job(thread, round) in n_threads threads; every round starts in all threads at once. The first error
    that is not a broken barrier (another thread's error aborts the barrier) is raised here."""
    barrier = threading.Barrier(n_threads, timeout=300)

    def worker(k):
        try:
            for r in range(rounds):
                barrier.wait()
                job(k, r)
        except BaseException:
            barrier.abort()
            raise

    with ThreadPoolExecutor(n_threads) as pool:
        futures = [pool.submit(worker, k) for k in range(n_threads)]
        errors = [f.exception() for f in futures]
    errors = sorted((e for e in errors if e is not None), key=lambda e: isinstance(e, threading.BrokenBarrierError))
    if errors:
        raise errors[0]


def count_new_cores(tok):
    """A list that receives every encoder tok makes from now on (tok._new_core is wrapped)."""
    made = []
    new_core = tok._new_core

    def counted():
        core = new_core()
        made.append(core)
        return core

    tok._new_core = counted
    return made


def check_pool(tok, before, made, n_threads=N_THREADS):
    """Every encoder is back in tok._cores exactly once, and there are at most as many as threads: one more is
    made only when all the others are in use. More than one means some calls did overlap."""
    ids = [id(core) for core in tok._cores]
    assert len(set(ids)) == len(ids), "an encoder was given back twice"
    assert sorted(ids) == sorted(id(core) for core in before + made), "an encoder was lost"
    assert len(tok._cores) <= n_threads, f"{len(tok._cores)} encoders for {n_threads} threads"
    assert len(tok._cores) >= 2, "no two calls overlapped: the test did not run anything concurrently"


def check_each_encoder(tok, cases, what):
    """Each encoder of the pool, used alone, still gives every case's ids (none was left inconsistent)."""
    cores = list(tok._cores)
    for core in cores:
        tok._cores[:] = [core]
        for case in cases:
            same(tok.encode(case.text), case.ids, what)
    tok._cores[:] = cores


# ------------------------------------------------------------------------------------------- the tests

def test_threads_share_one_tokenizer(trained, pattern_name, expected):
    tok = tokenizer(trained, pattern_name)
    assert (tok._segmenter is None) == (pattern_name == "custom")     # the native and the Python path
    assert any(len(c.ids) >= NOGIL_IDS for c in expected) and min(len(c.data) for c in expected) >= 1 << 16
    before, made = list(tok._cores), count_new_cores(tok)

    def job(k, r):
        rng = random.Random(1000 * k + r)
        for step in range(2):
            case = expected[(k + 3 * r + step) % len(expected)]
            check(tok, METHODS[(k + r + step) % len(METHODS)], case, rng)

    run_threads(job, rounds=ROUNDS[pattern_name])
    check_pool(tok, before, made)
    # the encoders are still consistent: each one alone gives every result again
    check_each_encoder(tok, expected[:3], "encode after the threads")


def test_small_caches_reset_in_several_threads_at_once(trained, pattern_name, expected):
    tok = tokenizer(trained, pattern_name)
    tok._cache_bounds = {"cache_entries": 8, "cache_bytes": 200}
    tok._cores.clear()                  # every encoder is made with the small bounds
    made = count_new_cores(tok)

    def job(k, r):
        rng = random.Random(k - 1000 * r)
        case = expected[(k + r) % len(expected)]
        check(tok, METHODS[(k + 2 * r) % 4], case, rng)      # the encoding entry points

    run_threads(job, rounds=ROUNDS[pattern_name] // 2)
    check_pool(tok, [], made)
    assert all(core.cache_entries == 8 for core in tok._cores)
    resets = [core.stats()["cache_resets"] for core in tok._cores]
    assert sum(n > 10 for n in resets) >= 2, resets


def test_pool_of_encoders_does_not_grow_over_many_calls(trained, pattern_name, expected):
    tok = tokenizer(trained, pattern_name)
    before, made = list(tok._cores), count_new_cores(tok)
    for _ in range(3):
        run_threads(lambda k, r: check(tok, "encode", expected[(k + r) % 2], None), rounds=3, n_threads=4)
    check_pool(tok, before, made, n_threads=4)


# --- the GIL is released

class TimedCore(BPECore):
    """A BPECore that records (start, end) of its native calls, and sets `started` as the first one starts."""

    def __init__(self, *args, **kwargs):
        self.calls = []
        self.started = threading.Event()

    def _timed(self, method, *args):
        self.started.set()
        start = time.perf_counter()
        try:
            return method(self, *args)
        finally:
            self.calls.append((start, time.perf_counter()))

    def encode_text(self, *args):
        return self._timed(BPECore.encode_text, *args)

    def encode_text_into(self, *args):
        return self._timed(BPECore.encode_text_into, *args)

    def encode_utf8_into(self, *args):
        return self._timed(BPECore.encode_utf8_into, *args)

    def encode_pretokens(self, *args):
        return self._timed(BPECore.encode_pretokens, *args)


def slow_text(seed, n_bytes):
    """Long words of random letters: each is merged (no cache hit), so the native merging takes most of the time
    on any path (the custom pattern's regex splits them quickly)."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyzäöüßéèçñ"
    words, size = [], 0
    while size < n_bytes:
        word = "".join(rng.choices(letters, k=rng.randrange(300, 3000)))
        words.append(word)
        size += len(word) + 1
    return " ".join(words)


def spin_during(core, call):
    """Run call() in another thread while this one spins, from the start of the first native call on `core` to
    the end of call(); returns the timestamps of the spinning (one every 0.2 ms or so)."""
    stamps, last = [], 0.0
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(call)
        # not before: the custom pattern's `regex` releases the GIL so often that a spinning thread would slow
        # its pre-tokenizing a hundredfold (each time it has to wait to get the GIL back)
        while not core.started.wait(0.01) and not future.done():
            pass
        while not future.done():
            now = time.perf_counter()
            if now - last > 2e-4:
                stamps.append(now)
                last = now
        future.result()
    return stamps


@pytest.mark.parametrize("name,method", [("gpt2", "encode"), ("gpt4", "encode_to_numpy"),
                                         ("gpt2", "encode_utf8_to_numpy"), ("custom", "encode")])
def test_other_threads_run_during_a_long_encode(trained, name, method):
    """The main thread spins, recording timestamps, while a thread encodes a text of several MB; some of those
    timestamps fall in the middle half of the native call. Were the GIL held, the main thread could run only
    at the very start of the call (until the worker took the GIL back, after a switch interval)."""
    tok = tokenizer(trained, name)
    n_bytes = 4 << 20
    for _ in range(5):
        core = TimedCore(tok._tables)
        tok._cores[:] = [core]
        text = slow_text(7, n_bytes)
        arg = text.encode("utf-8") if method == "encode_utf8_to_numpy" else text
        stamps = spin_during(core, functools.partial(getattr(tok, method), arg))
        assert tok._cores == [core]
        start, end = max(core.calls, key=lambda call: call[1] - call[0])
        if end - start >= 0.1:
            break
        n_bytes *= 2                    # a fast machine: the call must last long enough to tell
    else:
        pytest.fail(f"the native call never took 0.1 s (last: {end - start:.3f} s for {n_bytes // 2} bytes)")
    quarter = (end - start) / 4
    during = [t for t in stamps if start + quarter < t < end - quarter]
    assert during, (f"the main thread made no progress in the middle of a {end - start:.3f} s native call "
                    f"({len(stamps)} timestamps in all)")


# --- errors

@pytest.fixture(scope="module")
def no_high_bytes(tmp_path_factory, prose):
    """pattern name -> (vocab, merges) of a vocabulary holding only the bytes 0..200 (and merges of them)."""
    def low(text):
        return "".join(ch for ch in text if max(ch.encode("utf-8")) <= 200)

    path = tmp_path_factory.mktemp("low") / "train.txt"
    path.write_bytes(low(long_text(2, 300_000, prose)).encode("utf-8"))
    out = {}
    for name, pattern in PATTERNS.items():
        _, merges = train_bpe(path, 700, SPECIALS, num_processes=1, pattern=pattern)
        vocab = {i: bytes([i]) for i in range(201)}
        for a, b in merges:
            assert max(a + b) <= 200
            vocab[len(vocab)] = a + b
        out[name] = (vocab, merges, low)
    return out


def middle_of_longest_plain_run(text):
    """The index of a space in the middle of the longest stretch of text without special tokens."""
    starts = [m.start() for m in re.finditer("|".join(map(re.escape, SPECIALS)), text)]
    a, b = max(zip([0] + starts, starts + [len(text)]), key=lambda run: run[1] - run[0])
    assert b - a > NOGIL_BYTES
    return text.index(" ", (a + b) // 2)


@pytest.mark.parametrize("name", list(PATTERNS))
def test_an_error_in_one_thread_leaves_every_encoder_usable(no_high_bytes, prose, name):
    vocab, merges, low = no_high_bytes[name]
    tok = Tokenizer(vocab, merges, SPECIALS, pattern=PATTERNS[name])
    texts = [low(long_text(200 + k, 100_000 + 30_000 * k, prose)).replace(" dogs", " café naïve dogs")
             for k in range(6)]
    good = cases(Tokenizer(vocab, merges, SPECIALS, pattern=PATTERNS[name]), texts)
    assert all(max(c.data) <= 200 and "é" in c.text for c in good)
    # byte 0xd0 (Cyrillic) far into a long run without special tokens (the Python path too encodes it without
    # the GIL)
    bad = []
    for case in good:
        at = middle_of_longest_plain_run(case.text)
        bad.append(case.text[:at] + " жук" + case.text[at:])
    before, made = list(tok._cores), count_new_cores(tok)
    raised = []

    def job(k, r):
        rng = random.Random(k + 100 * r)
        if (k + r) % 2:                 # half the threads fail at each round, in all four entry points
            method = METHODS[k % 4]
            text = bad[(k + r) % len(bad)]
            run = {"encode": tok.encode, "encode_to_numpy": tok.encode_to_numpy,
                   "encode_utf8_to_numpy": lambda t: tok.encode_utf8_to_numpy(t.encode("utf-8")),
                   "encode_iterable": lambda t: list(tok.encode_iterable(cut(t, rng)))}[method]
            with pytest.raises(ValueError, match="byte 0xd0 has no token in the vocabulary"):
                run(text)
            raised.append(method)
        else:
            check(tok, METHODS[(k + r // 2) % len(METHODS)], good[(k + 2 * r) % len(good)], rng)

    rounds = min(8, ROUNDS[name])
    run_threads(job, rounds=rounds)
    assert sorted(set(raised)) == sorted(METHODS[:4]) and len(raised) == N_THREADS * rounds // 2
    check_pool(tok, before, made)
    # now every thread succeeds, and each encoder alone gives the right ids
    run_threads(lambda k, r: check(tok, METHODS[(k + r) % len(METHODS)], good[(k + r) % len(good)],
                                   random.Random(k)), rounds=rounds // 2)
    check_each_encoder(tok, good[:2], "encode after the errors")


# --- encode_file

@pytest.fixture(scope="module")
def multi_mb_file(tmp_path_factory, prose):
    """4 MB of the synthetic corpus (documents end with <|endoftext|>) and 1 MB of long_text (both specials)."""
    buf = io.BytesIO()
    generate(buf, 4_000_000, seed=5)
    path = tmp_path_factory.mktemp("file") / "corpus.txt"
    path.write_bytes(buf.getvalue() + long_text(3, 1_000_000, prose).encode("utf-8"))
    return path


@pytest.mark.parametrize("name", list(PATTERNS))
def test_encode_file_in_two_workers_equals_encode(trained, multi_mb_file, tmp_path, name):
    tok = tokenizer(trained, name)
    text = multi_mb_file.read_bytes().decode("utf-8")        # not read_text: "\r\n" must stay as it is
    want = np.array(tokenizer(trained, name).encode(text), dtype=np.uint16)
    reports = []
    before, made = list(tok._cores), count_new_cores(tok)
    out = tmp_path / "tokens.npy"
    count = encode_file(tok, multi_mb_file, out, num_processes=2, chunk_bytes=64 << 10,
                        progress=lambda *report: reports.append(report))
    got = np.load(out)
    assert got.dtype == np.uint16 and count == len(want)
    same(got, want, f"encode_file ({name})")
    assert len(reports) >= 60                                  # one report per range
    if name != "custom":                                       # threads share tok's encoders
        check_pool(tok, before, made, n_threads=2)


# ------------------------------------------------------------------------------------- caller's buffers change

def test_decode_of_an_array_another_thread_writes_to(trained):
    """decode_bytes checks the ids, then copies their bytes without the GIL: it must work on its own copy of
    the ids, or an id written meanwhile by another thread (here a huge one) is used unchecked (a crash)."""
    tok = tokenizer(trained, "gpt2")
    ids = np.full(4_000_000, ord("a"), dtype=np.int64)
    stop = threading.Event()

    def scribble():
        while not stop.is_set():
            ids[-1] = 1 << 40
            ids[-1] = ord("b")

    writer = threading.Thread(target=scribble)
    writer.start()
    try:
        outcomes = set()
        for _ in range(20):
            try:
                data = tok.decode_bytes(ids)
            except ValueError as exc:
                assert "unknown token id 1099511627776 (at position 3999999)" in str(exc)
                outcomes.add("error")
            else:
                assert len(data) == len(ids) and data[:-1] == b"a" * (len(ids) - 1) and data[-1:] in (b"a", b"b")
                outcomes.add("bytes")
    finally:
        stop.set()
        writer.join()
    assert outcomes


def test_decode_of_a_strided_array(trained):
    tok = tokenizer(trained, "gpt2")
    ids = np.array(tok.encode("Once upon a time, there was a cat."), dtype=np.int64)
    pairs = np.stack([ids, ids])                # a column of it and every other id are not contiguous
    assert tok.decode(pairs[:, 0]) == tok.decode([int(ids[0])] * 2)
    assert tok.decode(ids[::2]) == tok.decode(ids.tolist()[::2])
    assert tok.decode(ids.astype(np.uint32)[::-1]) == tok.decode(ids.tolist()[::-1])


def test_spare_encoders_are_capped(trained):
    """Threads that each hold an encoder at once (all waiting at a barrier inside _on_core) make one encoder
    each; once they give them back, at most MAX_SPARE_CORES stay spare, and encoding still works."""
    from bpe_fast._encode import MAX_SPARE_CORES

    tok = tokenizer(trained, "gpt2")
    n = MAX_SPARE_CORES + 4
    barrier = threading.Barrier(n)
    with ThreadPoolExecutor(n) as pool:
        held = list(pool.map(lambda _: tok._on_core(lambda core: (barrier.wait(), core)[1]), range(n)))
    assert len({id(core) for core in held}) == n             # n encoders existed at once
    assert len(tok._cores) == MAX_SPARE_CORES
    text = "Once upon a time<|endoftext|> there was a cat. " * 2000
    with ThreadPoolExecutor(n) as pool:
        assert set(map(tuple, pool.map(tok.encode, [text] * n))) == {tuple(tokenizer(trained, "gpt2").encode(text))}
    assert len(tok._cores) <= MAX_SPARE_CORES
