"""Faults: signals to the command line, killed workers, a full disk. Each test runs `python -m bpe_fast`
in a child process (away from the source tree, so the installed package is used) and looks at the
process table and the output folder afterwards."""
import os
import resource
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from bpe_fast import Tokenizer, train_bpe
from bpe_fast.synthetic import generate

from corpora import EOT
from proctable import alive, children

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the process table in /proc")

# a pattern the native scanner does not know: the slower regex path keeps the workers busy for seconds
SLOW_PATTERN = r"\w+|[^\w\s]+|\s+"
# seconds after which a wait is a hang: a guard only, every wait ends as soon as what it waits for happens (a
# loaded machine may take many times the usual few seconds)
HANG = 300


def _as_from_a_terminal(then=None):
    # A job started in the background by a non-interactive shell (as CI may run us) inherits SIGINT
    # ignored, and Python then never raises KeyboardInterrupt; a terminal's Ctrl-C finds it at default.
    def apply():
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if then is not None:
            then()
    return apply


def start(args, cwd, preexec_fn=None, **kwargs):
    return subprocess.Popen([sys.executable, "-m", "bpe_fast", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=_as_from_a_terminal(preexec_fn),
                            **kwargs)


def wait_for_workers(proc, n=2, timeout=HANG):
    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None:
        kids = children(proc.pid)
        if len(kids) >= n:
            return kids
        time.sleep(0.02)
    out, err = proc.communicate(timeout=10) if proc.poll() is not None else ("", "")
    raise AssertionError(f"the workers never started (exit {proc.poll()}): {err}")


def assert_all_gone(pids, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline and any(alive(p) for p in pids):
        time.sleep(0.05)
    assert not [p for p in pids if alive(p)], "worker processes outlived the command"


@pytest.fixture(scope="module")
def big_corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("big") / "big.txt"
    generate(path, 40_000_000, seed=2)
    return path


@pytest.fixture(scope="module")
def slow_tokdir(tmp_path_factory):
    small = tmp_path_factory.mktemp("small") / "small.txt"
    generate(small, 200_000, seed=3)
    out = tmp_path_factory.mktemp("tok") / "tok"
    vocab, merges = train_bpe(small, 400, [EOT], pattern=SLOW_PATTERN)
    Tokenizer(vocab, merges, [EOT], SLOW_PATTERN).save(out)
    return out


@pytest.mark.parametrize("command", ["train", "encode"])
# SIGHUP (the terminal or ssh session closed) killed the command as it was: a hidden temporary file as large as
# the work done stayed (helper-146)
@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)],
                         ids=["SIGINT", "SIGTERM", "SIGHUP"])
def test_signal_stops_every_worker_and_writes_nothing(tmp_path, big_corpus, slow_tokdir, command, sig, code):
    if command == "train":
        args = ["train", str(big_corpus), "--vocab-size", "500", "--pattern", SLOW_PATTERN, "--special-token", EOT,
                "--processes", "2", "-o", str(tmp_path / "tok")]
    else:
        args = ["encode", "-t", str(slow_tokdir), str(big_corpus), "-o", str(tmp_path / "tokens.npy"),
                "--processes", "2"]
    proc = start(args, cwd=tmp_path)
    kids = wait_for_workers(proc, n=1 if command == "train" else 2)   # train: one worker and the command itself
    time.sleep(0.3)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=HANG)
    assert proc.returncode == code, err
    assert "Traceback" not in err
    assert_all_gone(kids)
    assert list(tmp_path.iterdir()) == []


@pytest.fixture(scope="module")
def native_tokdir(tmp_path_factory):
    """A tokenizer with GPT-2's pattern: encode_file runs it in threads of the command's own process."""
    small = tmp_path_factory.mktemp("small_native") / "small.txt"
    generate(small, 200_000, seed=3)
    out = tmp_path_factory.mktemp("tok_native") / "tok"
    vocab, merges = train_bpe(small, 400, [EOT])
    Tokenizer(vocab, merges, [EOT]).save(out)
    return out


def _repeated(source, times):
    """`source` written `times` times over into a new file beside it (a longer encode)."""
    path = source.with_name(f"{source.stem}x{times}{source.suffix}")
    if not path.exists():
        with open(path, "wb") as f:
            f.writelines([source.read_bytes()] * times)
    return path


def _wait_for_tokens(proc, folder, name, timeout=HANG):
    """The temporary output once it holds some tokens (the encode is under way), or None if the command ended
    first."""
    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None:
        for tmp in folder.glob(f".{name}.*.tmp"):
            try:
                if tmp.stat().st_size > 128:            # more than the .npy header
                    return tmp
            except FileNotFoundError:
                pass
        time.sleep(0.002)
    if proc.poll() is None:
        proc.kill()
        proc.communicate(timeout=10)
        raise AssertionError(f"no tokens were written within {timeout} s")
    return None


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"])
def test_signal_stops_threaded_encode_and_writes_nothing(tmp_path, big_corpus, native_tokdir, sig, code):
    # The built-in pattern encodes in threads at ~100 MB/s each: 40 MB may be done before the signal lands.
    # Then (the output exists) the encode is run again on a longer input; the test passes only on a run that
    # the signal interrupted.
    for times in (1, 4, 16):
        corpus = big_corpus if times == 1 else _repeated(big_corpus, times)
        out = tmp_path / "tokens.npy"
        proc = start(["encode", "-t", str(native_tokdir), str(corpus), "-o", str(out), "--processes", "2"],
                     cwd=tmp_path)
        tmp = _wait_for_tokens(proc, tmp_path, out.name)
        if tmp is not None:
            assert children(proc.pid) == [], "threads were expected, not worker processes"
            proc.send_signal(sig)
        _, err = proc.communicate(timeout=HANG)
        if tmp is not None and not out.exists():
            break
        # too fast: the encode ended before the signal (or before any tokens were seen)
        assert proc.returncode in (0, code, -sig) and "Traceback" not in err, err
        out.unlink()
        assert list(tmp_path.iterdir()) == []
    else:
        pytest.fail("every encode ended before the signal landed")
    assert proc.returncode == code, err
    assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_killed_encode_worker_is_a_clear_error(tmp_path, big_corpus, slow_tokdir):
    out = tmp_path / "tokens.npy"
    proc = start(["encode", "-t", str(slow_tokdir), str(big_corpus), "-o", str(out), "--processes", "2"],
                 cwd=tmp_path)
    kids = wait_for_workers(proc)
    time.sleep(0.3)
    os.kill(kids[0], signal.SIGKILL)
    _, err = proc.communicate(timeout=HANG)
    assert proc.returncode == 1 and "worker process died" in err, err
    assert_all_gone(kids)
    assert list(tmp_path.iterdir()) == []


def test_workers_die_with_a_killed_parent(tmp_path, big_corpus):
    proc = start(["train", str(big_corpus), "--vocab-size", "500", "--pattern", SLOW_PATTERN, "--special-token", EOT,
                  "--processes", "3", "-o", str(tmp_path / "tok")], cwd=tmp_path)
    kids = wait_for_workers(proc)             # 3 processes: two workers and the command itself
    proc.kill()
    proc.communicate(timeout=HANG)
    assert_all_gone(kids)


def _limit_file_size(limit):
    def apply():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def test_full_disk_while_encoding_keeps_the_previous_output(tmp_path, slow_tokdir):
    corpus = tmp_path / "c.txt"
    generate(corpus, 2_000_000, seed=4)
    out = tmp_path / "tokens.npy"
    np.save(out, np.arange(10, dtype=np.uint16))
    before = out.read_bytes()
    # the token array needs ~1 MB; a 64 KB file-size limit makes the write fail part way (EFBIG)
    proc = start(["encode", "-t", str(slow_tokdir), str(corpus), "-o", str(out), "--processes", "1"],
                 cwd=tmp_path, preexec_fn=_limit_file_size(64 << 10))
    _, err = proc.communicate(timeout=HANG)
    assert proc.returncode == 1 and "Traceback" not in err, err
    assert "too large" in err.lower() or "no space" in err.lower(), err
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.txt", "tokens.npy"]


def test_full_disk_while_saving_a_tokenizer_keeps_the_previous_one(tmp_path):
    corpus = tmp_path / "c.txt"
    generate(corpus, 300_000, seed=6)
    tokdir = tmp_path / "tok"
    vocab, merges = train_bpe(corpus, 300, [EOT])
    Tokenizer(vocab, merges, [EOT]).save(tokdir)
    before = {p.name: p.read_bytes() for p in tokdir.iterdir()}
    proc = start(["train", str(corpus), "--vocab-size", "3000", "--special-token", EOT, "-o", str(tokdir)],
                 cwd=tmp_path, preexec_fn=_limit_file_size(8 << 10))
    _, err = proc.communicate(timeout=HANG)
    assert proc.returncode == 1 and "Traceback" not in err, err
    assert {p.name: p.read_bytes() for p in tokdir.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.txt", "tok"]


_SHARED_TAIL_WORKER_DIES = '''
import os, signal, time
import numpy as np
from bpe_fast import count_workers as cw
from bpe_fast.inputs import Batch
from bpe_fast.patterns import GPT2_PATTERN, resolve_pattern

MAIN = os.getpid()


def unit(counter, k, bytes_done, share):        # unit 0, claimed by the caller's thread, offers 1 MB batches
    if k != 0:
        return
    text = ("some words here " * 65536).encode()   # more than a pipe holds
    for i in range(40):
        batch = Batch(text, np.array([0, len(text)], dtype=np.int64), ("x", i, None, None))
        if not share.offer(batch):
            cw._count_batch(counter, batch, bytes_done)
        time.sleep(0.05)


real_drain = cw.TailShare.drain


def drain(self, counter, bytes_done, stop=None):
    if os.getpid() != MAIN:                        # the worker: idle, then killed before it takes its batch
        with self.state.get_lock():
            self.state[0] += 1
        time.sleep(0.3)
        os.kill(os.getpid(), signal.SIGKILL)
    return real_drain(self, counter, bytes_done, stop)


real_claim = cw._claim


def claim(index, below=None):
    if os.getpid() != MAIN:
        time.sleep(0.1)                            # so that the caller's thread claims unit 0
    return real_claim(index, below)


cw.TailShare.drain, cw._claim = drain, claim
if __name__ == "__main__":
    try:
        cw._count_claimed_units(3, unit, [], resolve_pattern(GPT2_PATTERN), "strict", 2, None, None, "a test",
                                lambda seen: seen[0], shared_tail=True)
    except Exception as exc:
        print("raised", type(exc).__name__, flush=True)
    import threading
    deadline = time.time() + 10
    while time.time() < deadline and threading.active_count() > 1:
        time.sleep(0.05)
    print("threads left", [t.name for t in threading.enumerate() if t is not threading.main_thread()])
'''


def test_a_worker_dying_with_a_shared_batch_untaken_is_an_error_and_the_caller_exits(tmp_path):
    # TailShare: the caller's thread offered a batch to an idle worker that is killed before taking it; the call
    # raises WorkerDiedError and the process still exits (the queue's feeder thread does not wait for a reader);
    # no thread is left (the feeder, writing the 1 MB batch nobody would read, stayed blocked for good)
    script = tmp_path / "tail.py"
    script.write_text(_SHARED_TAIL_WORKER_DIES)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines() == ["raised WorkerDiedError", "threads left []"]


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"])
def test_signal_stops_the_threads_counting_a_folder_and_writes_nothing(tmp_path, big_corpus, sig, code):
    # small files with a native pattern are counted by threads of the command's own process (no worker): a
    # signal while they read and count stops them all, leaves no output, and no thread keeps the command alive
    folder = tmp_path / "docs"
    folder.mkdir()
    data = big_corpus.read_bytes()[:24_000_000]
    for k in range(0, len(data), 6000):
        (folder / f"{k // 6000:05d}.txt").write_bytes(data[k:k + 6000].decode("utf-8", "ignore").encode())
    out = tmp_path / "out"
    out.mkdir()
    proc = start(["train", str(folder), "--vocab-size", "500", "--special-token", EOT, "--processes", "2",
                  "-o", str(out / "tok")], cwd=out)
    first = proc.stderr.readline()          # the first progress line: the caller's thread has counted a run
    assert first.startswith("pre-tokenized") and proc.poll() is None, first
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=HANG)
    assert proc.returncode == code, first + err
    assert "Traceback" not in err
    assert list(out.iterdir()) == []
    assert children(proc.pid) == []


def test_an_interrupted_count_of_documents_leaves_no_thread(monkeypatch):
    # count_stream_tables: the worker busy with a batch while the next one, bigger than a pipe holds (the bounds
    # of 20,000 documents), is written to the workers' queue; then Ctrl-C (raised here by the documents). The
    # worker was stopped, but the queue's feeder thread stayed blocked on the full pipe for good, holding the batch
    from bpe_fast import count_pretokens, procs
    from bpe_fast import count_workers as cw

    monkeypatch.setattr(procs, "FORK_LIMIT_BYTES", 1 << 62)      # forked: the workers see the patch below
    main, count_numbered = os.getpid(), cw._count_numbered

    def slow(*args):
        if os.getpid() != main:
            time.sleep(HANG)                # the worker: stopped by the interrupt
        time.sleep(0.2)                     # the caller's thread: the next batches go to the worker's queue
        return count_numbered(*args)

    monkeypatch.setattr(cw, "_count_numbered", slow)

    def documents():
        for _ in range(100_000):           # 5 batches: 2 for the thread, the worker's, 2 in the queue
            yield "a b\n"
        raise KeyboardInterrupt

    before = set(threading.enumerate())
    with pytest.raises(KeyboardInterrupt):
        count_pretokens(documents(), num_processes=2, chunk_bytes=80_000)
    deadline = time.time() + 10
    while time.time() < deadline and set(threading.enumerate()) - before:
        time.sleep(0.05)
    assert [t.name for t in set(threading.enumerate()) - before] == []
