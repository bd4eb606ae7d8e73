"""Concurrency and fork safety as a data-loading pipeline meets them: one Tokenizer / Encoding shared by many
threads, processes forked while other threads encode or hold bpe_fast's locks, pickling to spawn workers, and the
process-based functions (train_bpe, count_pretokens, encode_file) called from threads and from daemonic workers.

Every fork here is watched with a timeout (a child that hangs is killed and the test fails); no test relies on
timing luck: a lock "held by another thread at the fork" is held by a thread that waits on an event."""
from __future__ import annotations

import multiprocessing
import os
import pickle
import random
import signal
import sys
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import bpe_fast
from bpe_fast import Encoding, Tokenizer, count_pretokens, encode_file, train_bpe

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
SHARED = "/work/shared/fixtures"
SPECIALS = ["<|endoftext|>", "<|pad|>", "<|sep|>"]
GPT2_PAT_STR = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
CHILD_TIMEOUT = 60.0


def _fixture(name: str) -> str:
    for folder in (FIXTURES, SHARED):
        path = os.path.join(folder, name)
        if os.path.exists(path):
            return path
    pytest.skip(f"fixture {name} not found")


def _words() -> list[str]:
    with open(_fixture("corpus.en"), encoding="utf-8") as f:
        words = f.read().split()
    rng = random.Random(7)
    return words + [w + str(rng.randrange(10**6)) for w in words[:3000]] + ["naïve", "日本語", "emoji🙂", "Grüße"]


def _text(n_words: int, seed: int, specials: bool = True) -> str:
    rng = random.Random(seed)
    words = _words()
    out = [rng.choice(words) for _ in range(n_words)]
    if specials:
        for k in range(0, n_words, 97):
            out[k] += rng.choice(SPECIALS)
    return " ".join(out)


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    return Tokenizer.from_files(_fixture("gpt2_vocab.json"), _fixture("gpt2_merges.txt"), special_tokens=SPECIALS)


@pytest.fixture(scope="module")
def enc(tok: Tokenizer) -> Encoding:
    ranks = {token: i for i, token in tok.vocab.items() if i < 50256}     # GPT-2's ranks are its ids
    return Encoding("gpt2_hunt", pat_str=GPT2_PAT_STR, mergeable_ranks=ranks,
                    special_tokens={"<|endoftext|>": 50256, "<|pad|>": 50257, "<|sep|>": 50258})


@pytest.fixture(scope="module")
def texts() -> list[str]:
    rng = random.Random(3)
    sizes = [0, 1, 5, 40, 300, 3000, 20000, 60000]     # 16 KB and more: encoded without the GIL
    return [_text(rng.choice(sizes) // 5 + 1, seed) for seed in range(48)]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A text file over count_workers._IN_PROCESS_BYTES (4 MB), special tokens throughout: counted and encoded by
    worker processes when num_processes > 1."""
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text(_text(900_000, 11), encoding="utf-8")
    assert path.stat().st_size > (4 << 20)
    return str(path)


def _wait_child(pid: int, timeout: float = CHILD_TIMEOUT) -> int | str:
    """The child's exit code, or "hung" (killed after timeout seconds)."""
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return "hung"
        time.sleep(0.01)


def _fork(child) -> int | str:
    """Run child() in a forked process (exit code 0 when it returns True); its exit code, or "hung"."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)    # (3.12: forking a process with threads)
        pid = os.fork()
    if pid == 0:
        code = 3
        try:
            code = 0 if child() else 3
        except BaseException:
            import traceback
            traceback.print_exc()
            code = 4
        finally:
            os._exit(code)
    return _wait_child(pid)


def _fork_while_held(hold, child) -> int | str:
    """_fork(child) while another thread is inside `hold()` (a context manager: a lock, say), as a process forked
    at that moment finds it; the thread leaves it once the child has ended."""
    inside, release = threading.Event(), threading.Event()

    def holder() -> None:
        with hold():
            inside.set()
            release.wait(120)

    thread = threading.Thread(target=holder, daemon=True)
    thread.start()
    try:
        assert inside.wait(60)
        return _fork(child)
    finally:
        release.set()
        thread.join(60)


# ---------------------------------------------------------------------------------------------- threads


def _all_outputs(tok: Tokenizer, enc: Encoding, text: str, allowed) -> dict:
    """Every encoding path's output for `text` with `allowed` special tokens ("all" or a set)."""
    view = tok.restricted_to(set(SPECIALS) if allowed == "all" else allowed)
    ids, offsets = tok.encode_with_offsets(text, allowed_special=allowed)
    out = {
        "encode": tok.encode(text, allowed_special=allowed),
        "numpy": view.encode_to_numpy(text, dtype=np.uint16).tolist(),
        "offsets": (ids.tolist(), offsets.tolist()),
        "iterable": list(view.encode_iterable(iter([text[:len(text) // 3], text[len(text) // 3:]]))),
        "batch": tok.encode_batch([text, text[:100], text[::-1]], num_threads=3, allowed_special=allowed),
        "enc": enc.encode(text, allowed_special=allowed, disallowed_special=()),
        "enc_numpy": enc.encode_to_numpy(text, allowed_special=allowed, disallowed_special=()).tolist(),
        "enc_ordinary": enc.encode_ordinary(text),
        "enc_batch": enc.encode_batch([text, text[:100]], num_threads=2, allowed_special=allowed,
                                      disallowed_special=()),
    }
    out["decode"] = tok.decode(out["encode"])
    out["enc_decode"] = enc.decode_with_offsets(out["enc"])
    try:
        enc.encode(text)        # tiktoken's defaults: a special token in the text is an error
        out["enc_default"] = "ok"
    except ValueError:
        out["enc_default"] = "disallowed"
    return out


def test_threads_sharing_a_tokenizer_and_an_encoding_get_single_threaded_results(tok, enc, texts):
    allowed_sets = ["all", set(), {"<|endoftext|>"}, {"<|pad|>", "<|sep|>"}]
    expected = {(j, k): _all_outputs(tok, enc, text, allowed_sets[k])
                for j, text in enumerate(texts) for k in range(len(allowed_sets))}
    n_threads = 24
    barrier = threading.Barrier(n_threads)
    wrong: list[tuple[int, int, int, list[str]]] = []

    def work(seed: int) -> int:
        rng = random.Random(seed)
        keys = list(expected)
        rng.shuffle(keys)
        barrier.wait(timeout=60)
        for j, k in keys[:60]:
            allowed = allowed_sets[k]
            got = _all_outputs(tok, enc, texts[j], allowed if isinstance(allowed, str) else set(allowed))
            if got != expected[j, k]:
                wrong.append((seed, j, k, [name for name in got if got[name] != expected[j, k][name]]))
        return len(keys[:60])

    with ThreadPoolExecutor(n_threads) as pool:
        done = [f.result(timeout=300) for f in [pool.submit(work, i) for i in range(n_threads)]]
    assert sum(done) == n_threads * 60
    assert wrong == []


def test_threads_with_a_new_allowed_set_each_call_churn_the_views_safely(tok, enc):
    """Encoding keeps a view per allowed set's id, Tokenizer per frozenset, each forgetting all past 64: many
    threads passing new set objects (new ids, and ids reused) still get each set's own ids."""
    specials = [f"<|s{i}|>" for i in range(24)]
    many = Tokenizer(dict(tok.vocab), tok.merges, special_tokens=specials)
    ranks = {token: i for i, token in tok.vocab.items() if i < 50256}
    many_enc = Encoding("many", pat_str=GPT2_PAT_STR, mergeable_ranks=ranks,
                        special_tokens={s: 50259 + i for i, s in enumerate(specials)})
    text = " ".join(f"w{i} {specials[i % 24]}x" for i in range(120))
    rng = random.Random(0)
    subsets = [frozenset(rng.sample(specials, rng.randrange(25))) for _ in range(150)]
    want_tok = {s: many.encode(text, allowed_special=set(s)) for s in subsets}
    want_enc = {s: many_enc.encode(text, allowed_special=set(s), disallowed_special=()) for s in subsets}
    n_threads = 16
    barrier = threading.Barrier(n_threads)
    wrong: list[str] = []

    def work(seed: int) -> None:
        r = random.Random(seed)
        barrier.wait(timeout=60)
        for _ in range(150):
            s = r.choice(subsets)
            if many.encode(text, allowed_special=set(s)) != want_tok[s]:
                wrong.append("Tokenizer")
            if many_enc.encode(text, allowed_special=set(s), disallowed_special=()) != want_enc[s]:
                wrong.append("Encoding")

    with ThreadPoolExecutor(n_threads) as pool:
        for f in [pool.submit(work, i) for i in range(n_threads)]:
            f.result(timeout=300)
    assert wrong == []


def test_calls_during_a_long_encode_on_the_same_objects_raise_nothing(tok, enc, texts):
    """No "busy" error: a long encode in one thread (its encoder taken from the pool) and every other method on
    the same Tokenizer and Encoding in this one, as tiktoken allows."""
    big = _text(2_000_000, 5)       # ~12 MB: a second or so of encoding without the GIL
    expected = [tok.encode(t) for t in texts[:12]]
    expected_enc = [enc.encode(t, allowed_special="all") for t in texts[:12]]
    long_ids = tok.encode_to_numpy(big)
    started, result = threading.Event(), {}

    def long_call() -> None:
        started.set()
        result["ids"] = tok.encode_to_numpy(big)

    thread = threading.Thread(target=long_call)
    thread.start()
    assert started.wait(60)
    rounds = 0
    while True:
        alive = thread.is_alive()
        assert [tok.encode(t) for t in texts[:12]] == expected
        assert tok.encode_batch(texts[:12], num_threads=4) == expected
        assert list(tok.encode_iterable(iter(texts[:12]))) == [i for ids in expected for i in ids]
        assert [tok.decode(ids) for ids in expected] == texts[:12]
        assert enc.encode_batch(texts[:12], allowed_special="all") == expected_enc
        assert pickle.loads(pickle.dumps(tok)).encode(texts[5]) == expected[5]
        rounds += 1
        if not alive:
            break
    thread.join(120)
    assert not thread.is_alive()
    assert np.array_equal(result["ids"], long_ids)


# ---------------------------------------------------------------------------------------------- fork


def test_fork_while_other_threads_encode(tok, enc, texts):
    """Processes forked (as a 'fork' pool or PyTorch's DataLoader forks its workers) while 6 threads encode on
    the same objects (the encoder pool's encoders in use, native calls without the GIL): each child encodes and
    decodes with the same results, no hang."""
    big = _text(200_000, 9)
    expected = [tok.encode(t) for t in texts]
    expected_enc = [enc.encode(t, allowed_special="all") for t in texts]
    expected_big = tok.encode_to_numpy(big)
    stop = threading.Event()
    running = threading.Barrier(7)

    def busy(seed: int) -> None:
        r = random.Random(seed)
        running.wait(timeout=60)
        while not stop.is_set():
            k = r.randrange(4)
            if k == 0:
                tok.encode(big)
            elif k == 1:
                tok.encode_batch(texts, num_threads=3)
            elif k == 2:
                enc.encode_batch(texts, allowed_special="all", num_threads=3)
            else:
                list(tok.encode_iterable(iter(texts)))

    def child() -> bool:
        return ([tok.encode(t) for t in texts] == expected
                and [enc.encode(t, allowed_special="all") for t in texts] == expected_enc
                and tok.encode_batch(texts, num_threads=4) == expected
                and np.array_equal(tok.encode_to_numpy(big), expected_big)
                and tok.decode(expected[7]) == texts[7])

    threads = [threading.Thread(target=busy, args=(i,), daemon=True) for i in range(6)]
    for t in threads:
        t.start()
    try:
        running.wait(timeout=60)
        codes = []
        for n in range(8):
            time.sleep(0.01 * n)
            codes.append(_fork(child))
    finally:
        stop.set()
        for t in threads:
            t.join(60)
    assert codes == [0] * 8


def test_multiprocessing_fork_pool_after_threads_used_the_tokenizer(tok, enc, texts):
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda t: (tok.encode(t), enc.encode(t, allowed_special="all")), texts * 2))
    expected = [tok.encode(t) for t in texts]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with multiprocessing.get_context("fork").Pool(2) as pool:
            got = pool.map_async(tok.encode, texts).get(timeout=120)
    assert got == expected


def test_get_encoding_in_a_child_forked_while_another_thread_builds_one():
    """registry.get_encoding holds a lock while it builds an encoding (o200k_base: a second): a process forked
    meanwhile had the lock held for good, and its get_encoding waited forever (tiktoken's registry does the
    same; bpe_fast's child now takes a new lock)."""
    from bpe_fast import registry

    registry._find_constructors()
    assert registry.ENCODING_CONSTRUCTORS is not None
    ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256}
    registry.ENCODING_CONSTRUCTORS["hunt_forked"] = lambda: dict(name="hunt_forked", pat_str=r"\w+|\W",
                                                                   mergeable_ranks=ranks, special_tokens={})
    try:        # a thread inside get_encoding's lock at the fork (building, say, o200k_base)
        code = _fork_while_held(lambda: registry._lock,
                                lambda: bpe_fast.get_encoding("hunt_forked").encode("ab ab") == [256, 32, 256])
    finally:
        registry.ENCODING_CONSTRUCTORS.pop("hunt_forked", None)
        registry.ENCODINGS.pop("hunt_forked", None)
    assert code == 0


def test_native_tables_in_a_child_forked_while_another_thread_builds_them():
    """pretokenize.native_tables builds the scanner's tables under a lock on first use (50 ms; the Unicode 16.0
    ones, 30 ms): a process forked meanwhile waited for that lock forever."""
    pretokenize = sys.modules["bpe_fast.pretokenize"]

    def child() -> bool:
        pretokenize._peer_tables = None         # not built yet in this process, as at the fork it was not
        return pretokenize.native_tables("16.0") is not None

    assert _fork_while_held(lambda: pretokenize._native_lock, child) == 0


def test_child_forked_while_another_thread_starts_forkserver_workers(corpus):
    """procs._worker_start_env (starting workers from a forkserver, once the caller holds over 512 MB) holds a lock
    and hides __main__'s __file__ and puts bpe_fast's folder first on sys.path: a child forked meanwhile waited for
    that lock forever in its own count_pretokens, with __main__ and sys.path left changed."""
    procs = sys.modules["bpe_fast.procs"]
    main = sys.modules["__main__"]
    path_before = list(sys.path)
    file_before = main.__dict__.get("__file__")
    expected = count_pretokens(corpus, SPECIALS, num_processes=1)

    def child() -> bool:
        if sys.path != path_before or main.__dict__.get("__file__") != file_before:
            return False
        procs.FORK_LIMIT_BYTES = 0      # workers from a forkserver, as for a caller holding over 512 MB
        return count_pretokens(corpus, SPECIALS, num_processes=2) == expected

    assert _fork_while_held(procs._worker_start_env, child) == 0
    assert sys.path == path_before and main.__dict__.get("__file__") == file_before


def test_child_forked_after_forkserver_workers_ran_starts_its_own(corpus, monkeypatch):
    """A process that counted with forkserver workers (holding over 512 MB) and then forked: the child's pool
    failed with ChildProcessError (multiprocessing's forkserver, inherited, asks os.waitpid about a process that
    is not the child's child)."""
    procs = sys.modules["bpe_fast.procs"]
    monkeypatch.setattr(procs, "FORK_LIMIT_BYTES", 0)
    expected = count_pretokens(corpus, SPECIALS, num_processes=1)
    assert count_pretokens(corpus, SPECIALS, num_processes=2) == expected     # the forkserver is running now
    code = _fork(lambda: count_pretokens(corpus, SPECIALS, num_processes=2) == expected)
    assert code == 0


# ---------------------------------------------------------------------------------------------- processes


def _encode_all(args):
    obj, texts = args
    if isinstance(obj, Tokenizer):
        return [obj.encode(t) for t in texts]
    return [obj.encode(t, allowed_special="all") for t in texts]


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_pickled_to_spawn_and_forkserver_workers(tok, enc, texts, method):
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"no {method}")
    expected = ([tok.encode(t) for t in texts], [enc.encode(t, allowed_special="all") for t in texts])
    with multiprocessing.get_context(method).Pool(2) as pool:
        got = pool.map_async(_encode_all, [(tok, texts), (enc, texts)]).get(timeout=180)
    assert (got[0], got[1]) == expected


def test_process_functions_from_several_threads_at_once(tok, corpus, tmp_path):
    expected_counts = count_pretokens(corpus, SPECIALS, num_processes=1)
    expected_merges = train_bpe(corpus, 300, SPECIALS, num_processes=1)
    regex_tok = Tokenizer({i: bytes([i]) for i in range(256)}, [], SPECIALS, pattern=r"\w+|\W")   # processes
    encode_file(regex_tok, corpus, tmp_path / "one.npy", num_processes=1)
    expected_ids = np.load(tmp_path / "one.npy")
    barrier = threading.Barrier(4)

    def job(k: int) -> bool:
        barrier.wait(timeout=60)
        if k == 0:
            return count_pretokens(corpus, SPECIALS, num_processes=2) == expected_counts
        if k == 1:
            return tuple(train_bpe(corpus, 300, SPECIALS, num_processes=2)) == tuple(expected_merges)
        out = tmp_path / f"ids{k}.npy"
        encode_file(regex_tok, corpus, out, num_processes=2)
        return bool(np.array_equal(np.load(out), expected_ids))

    with ThreadPoolExecutor(4) as pool:
        assert [f.result(timeout=300) for f in [pool.submit(job, k) for k in range(4)]] == [True] * 4


def _in_daemon(args):
    kind, corpus, out = args
    if kind == "count":
        return count_pretokens(corpus, SPECIALS, num_processes=2)
    if kind == "count_default":
        return count_pretokens(corpus, SPECIALS)        # num_processes=None: every core
    if kind == "count_iterable":
        with open(corpus, encoding="utf-8") as f:
            return count_pretokens(iter(f.read().split("<|sep|>")), SPECIALS, num_processes=2)
    if kind == "train":
        return tuple(train_bpe(corpus, 300, SPECIALS, num_processes=2))
    tok = Tokenizer({i: bytes([i]) for i in range(256)}, [], SPECIALS, pattern=r"\w+|\W")
    encode_file(tok, corpus, out, num_processes=2)
    return np.load(out).tolist()


def test_process_functions_inside_a_daemonic_worker_fall_back_to_one_process(corpus, tmp_path, monkeypatch):
    """In a multiprocessing.Pool worker (daemonic, as PyTorch's DataLoader workers are), train_bpe,
    count_pretokens and encode_file with worker processes raised multiprocessing's AssertionError "daemonic
    processes are not allowed to have children" (num_processes=None too, on any machine of 2 cores or more):
    they now count and encode in the worker itself, with the same results."""
    monkeypatch.setenv("BPE_FAST_NUM_PROCESSES", "2")      # (count_default: 2 processes whatever the machine)
    with open(corpus, encoding="utf-8") as f:
        documents = f.read().split("<|sep|>")
    expected = {
        "count": count_pretokens(corpus, SPECIALS, num_processes=1),
        "count_iterable": count_pretokens(iter(documents), SPECIALS, num_processes=1),
        "train": tuple(train_bpe(corpus, 300, SPECIALS, num_processes=1)),
    }
    expected["count_default"] = expected["count"]
    regex_tok = Tokenizer({i: bytes([i]) for i in range(256)}, [], SPECIALS, pattern=r"\w+|\W")
    encode_file(regex_tok, corpus, tmp_path / "one.npy", num_processes=1)
    expected["encode_file"] = np.load(tmp_path / "one.npy").tolist()
    kinds = list(expected)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with multiprocessing.get_context("fork").Pool(1) as pool:
            got = pool.map_async(_in_daemon, [(k, corpus, str(tmp_path / f"{k}.npy")) for k in kinds]).get(240)
    for kind, result in zip(kinds, got):
        assert result == expected[kind], kind
