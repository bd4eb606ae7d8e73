"""Threads sharing one Tokenizer: the native encoder runs without the GIL on texts of 16 KB or more, each call
on an encoder (BPECore, own cache) taken from the tokenizer's pool (EncoderPool) and given back afterwards.

Every result computed in threads is compared with the one computed beforehand, sequentially, by a separate
Tokenizer built from the same merges; the threads start each round together (a barrier) so that calls overlap.
Also: the pool of encoders stays bounded, small caches reset in several threads at once, the GIL is really
released, an error in one thread leaves every encoder usable, and encode_file over threads or processes
equals encode of the whole text.

No outcome depends on timing: where calls must run at once, they are made to (MeetingCore: the first two
encoder calls wait for each other, each holding its encoder, before encoding), and the GIL test reads no
clock (WatchedCore).
"""
import functools
import io
import itertools
import random
import re
import sys
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


class MeetingCore(BPECore):
    """A BPECore whose first `meeting.parties` native calls (over all the encoders sharing `meeting`) wait for
    one another before encoding, each holding its encoder: so that many encoders are in use at once however
    the threads are scheduled. Its native calls are BPECore's own (the encode entry points call these methods
    through Python attribute lookup, so the overrides are seen)."""

    meeting = None                      # set by meet_in_encoders

    def _met(self, method, *args):
        self.meeting.arrive()
        return method(self, *args)

    def encode_text(self, *args):
        return self._met(BPECore.encode_text, *args)

    def encode_text_into(self, *args):
        return self._met(BPECore.encode_text_into, *args)

    def encode_utf8_into(self, *args):
        return self._met(BPECore.encode_utf8_into, *args)

    def encode_pretokens(self, *args):
        return self._met(BPECore.encode_pretokens, *args)


class Meeting:
    """The first `parties` arrivals wait at a barrier for one another; later ones pass. If the others do not
    come within `timeout` seconds, calls did not run at once: the test fails, saying so."""

    def __init__(self, parties=2, timeout=120):
        self.parties, self.timeout = parties, timeout
        self.barrier = threading.Barrier(parties, timeout=timeout)
        self.arrivals = itertools.count()      # next() is atomic under the GIL

    def arrive(self):
        if next(self.arrivals) >= self.parties:
            return
        try:
            self.barrier.wait()
        except threading.BrokenBarrierError:
            raise AssertionError(f"{self.parties} encoder calls never ran at once: one waited {self.timeout} s "
                                 f"for the others, each holding its own encoder") from None


def meet_in_encoders(tok, parties=2):
    """Give tok only MeetingCores from now on (its spare encoders replaced, new ones made as MeetingCores), so
    that its first `parties` native calls hold `parties` encoders at once."""
    meeting = Meeting(parties)

    def new_core():
        core = MeetingCore(pool.tables, pool.cache_entries, pool.cache_bytes, pool.max_cache_entries,
                           pool.max_cache_bytes)
        core.meeting = meeting
        return core

    pool = tok._pool
    pool.factory = new_core
    pool.set_spare([new_core() for _ in pool.spare()])


def count_new_cores(tok):
    """A list that receives every encoder tok makes from now on (its pool's factory is wrapped)."""
    made = []
    pool = tok._pool
    factory = pool.factory

    def counted():
        core = factory() if factory is not None else BPECore(pool.tables, pool.cache_entries, pool.cache_bytes,
                                                                   pool.max_cache_entries, pool.max_cache_bytes)
        made.append(core)
        return core

    pool.factory = counted
    return made


def check_pool(tok, before, made, n_threads=N_THREADS):
    """Every encoder is back in tok's pool exactly once, and there are at most as many as threads: one more is
    made only when all the others are in use. At least two, since two calls held one each at once
    (meet_in_encoders)."""
    spare = tok._pool.spare()
    ids = [id(core) for core in spare]
    assert len(set(ids)) == len(ids), "an encoder was given back twice"
    assert sorted(ids) == sorted(id(core) for core in before + made), "an encoder was lost"
    assert len(spare) <= n_threads, f"{len(spare)} encoders for {n_threads} threads"
    assert len(spare) >= 2, "two calls held an encoder each at once, yet fewer than two encoders came back"


def check_each_encoder(tok, cases, what):
    """Each encoder of the pool, used alone, still gives every case's ids (none was left inconsistent)."""
    cores = tok._pool.spare()
    for core in cores:
        tok._pool.set_spare([core])
        for case in cases:
            same(tok.encode(case.text), case.ids, what)
    tok._pool.set_spare(cores)


# ------------------------------------------------------------------------------------------- the tests

def test_threads_share_one_tokenizer(trained, pattern_name, expected):
    tok = tokenizer(trained, pattern_name)
    assert (tok._segmenter is None) == (pattern_name == "custom")     # the native and the Python path
    assert any(len(c.ids) >= NOGIL_IDS for c in expected) and min(len(c.data) for c in expected) >= 1 << 16
    meet_in_encoders(tok)
    before, made = tok._pool.spare(), count_new_cores(tok)

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
    tok._pool.set_cache_bounds(8, 200)  # every encoder is made with the small bounds (the spare ones dropped)
    meet_in_encoders(tok)               # two of them encode at once, so both reset their caches many times
    made = count_new_cores(tok)

    def job(k, r):
        rng = random.Random(k - 1000 * r)
        case = expected[(k + r) % len(expected)]
        check(tok, METHODS[(k + 2 * r) % 4], case, rng)      # the encoding entry points

    run_threads(job, rounds=ROUNDS[pattern_name] // 2)
    check_pool(tok, [], made)
    assert all(core.cache_entries == 8 for core in tok._pool.spare())
    resets = [core.stats()["cache_resets"] for core in tok._pool.spare()]
    assert sum(n > 10 for n in resets) >= 2, resets


def test_pool_of_encoders_does_not_grow_over_many_calls(trained, pattern_name, expected):
    tok = tokenizer(trained, pattern_name)
    meet_in_encoders(tok)
    before, made = tok._pool.spare(), count_new_cores(tok)
    for _ in range(3):
        run_threads(lambda k, r: check(tok, "encode", expected[(k + r) % 2], None), rounds=3, n_threads=4)
    check_pool(tok, before, made, n_threads=4)


# --- the GIL is released

class WatchedCore(BPECore):
    """A BPECore that counts its native calls and shows, in `inside`, whether one is running."""

    def __init__(self, *args, **kwargs):
        self.calls = 0
        self.inside = False

    def _watched(self, method, *args):
        self.inside = True
        try:
            return method(self, *args)
        finally:
            self.inside = False
            self.calls += 1

    def encode_text(self, *args):
        return self._watched(BPECore.encode_text, *args)

    def encode_text_into(self, *args):
        return self._watched(BPECore.encode_text_into, *args)

    def encode_utf8_into(self, *args):
        return self._watched(BPECore.encode_utf8_into, *args)

    def encode_pretokens(self, *args):
        return self._watched(BPECore.encode_pretokens, *args)


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


def ran_inside_a_native_call(core, call):
    """Run call() in another thread while this one polls `core.inside`; return whether this thread ever ran
    while the other was inside a native call on `core`.

    The switch interval is set far longer than the call, so the interpreter never takes the GIL from the
    other thread: this thread gets it back (after each short sleep) only when the other thread gives it up by
    itself, by blocking, by ending, or by releasing it in native code. Seeing `inside` set is therefore proof
    that the native call released the GIL; no clock is read."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(100.0)
    try:
        seen = False
        with ThreadPoolExecutor(1) as pool:
            future = pool.submit(call)
            while not future.done():
                seen = seen or core.inside
                time.sleep(1e-4)
            future.result()
    finally:
        sys.setswitchinterval(interval)
    return seen


@pytest.mark.parametrize("name,method", [("gpt2", "encode"), ("gpt4", "encode_to_numpy"),
                                         ("gpt2", "encode_utf8_to_numpy"), ("custom", "encode")])
def test_other_threads_run_during_a_long_encode(trained, name, method):
    """While a thread encodes a text of several MB, the main thread runs during a native call (see
    ran_inside_a_native_call). Were the GIL held, it could run only between native calls. The text grows
    if the main thread happened not to be scheduled during the calls (a busy machine)."""
    tok = tokenizer(trained, name)
    n_bytes = 4 << 20
    for _ in range(3):
        core = WatchedCore(tok._pool.tables)
        tok._pool.set_spare([core])
        text = slow_text(7, n_bytes)
        arg = text.encode("utf-8") if method == "encode_utf8_to_numpy" else text
        seen = ran_inside_a_native_call(core, functools.partial(getattr(tok, method), arg))
        assert tok._pool.spare() == [core] and core.calls > 0, "the call did not use the watched encoder"
        if seen:
            return
        n_bytes *= 4
    pytest.fail(f"the main thread never ran during a native call ({core.calls} calls, {n_bytes // 4} bytes): "
                "the GIL is held")


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
    meet_in_encoders(tok)
    before, made = tok._pool.spare(), count_new_cores(tok)
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
    threads = name != "custom"          # the native path encodes in threads sharing tok's encoders
    if threads:                         # (the custom pattern's worker processes get a copy of tok)
        meet_in_encoders(tok)           # the two workers' first calls wait for each other
    before, made = tok._pool.spare(), count_new_cores(tok)
    out = tmp_path / "tokens.npy"
    count = encode_file(tok, multi_mb_file, out, num_processes=2, chunk_bytes=64 << 10,
                        progress=lambda *report: reports.append(report))
    got = np.load(out)
    assert got.dtype == np.uint16 and count == len(want)
    same(got, want, f"encode_file ({name})")
    assert len(reports) >= 60                                  # one report per range
    if threads:
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
    """Threads that each hold an encoder at once (all waiting at a barrier inside the pool's run) make one encoder
    each; once they give them back, at most MAX_SPARE_CORES stay spare, and encoding still works."""
    from bpe_fast._encode import MAX_SPARE_CORES

    tok = tokenizer(trained, "gpt2")
    n = MAX_SPARE_CORES + 4
    barrier = threading.Barrier(n, timeout=120)
    with ThreadPoolExecutor(n) as pool:
        held = list(pool.map(lambda _: tok._pool.run(lambda core: (barrier.wait(), core)[1]), range(n)))
    assert len({id(core) for core in held}) == n             # n encoders existed at once
    assert len(tok._pool.spare()) == MAX_SPARE_CORES == tok._pool.max_spare
    text = "Once upon a time<|endoftext|> there was a cat. " * 2000
    with ThreadPoolExecutor(n) as pool:
        assert set(map(tuple, pool.map(tok.encode, [text] * n))) == {tuple(tokenizer(trained, "gpt2").encode(text))}
    assert len(tok._pool.spare()) <= MAX_SPARE_CORES
