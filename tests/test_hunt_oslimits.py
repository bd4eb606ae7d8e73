"""The command line and the file writers under hostile operating conditions: a file size limit (ulimit -f), a
memory limit (ulimit -v), a stream that never ends (/dev/zero), a tokens file truncated in place while it is
decoded, a signal while an endless stream is read. Each case: a clear one-line error naming what was wrong, the
exit status saying so, and nothing half-written left behind.

Every command runs in a child process (the limits are set there, by preexec_fn), so a crash (SIGBUS, SIGABRT)
is a failed assertion here, never a dead test session."""
from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from bpe_fast import Tokenizer, train_bpe

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux limits, /proc and /dev/zero")

CLI = [sys.executable, "-m", "bpe_fast"]
FSIZE = 8_000           # bytes: ulimit -f for the file size cases (below every output here)


def _words(n_lines: int, seed: int = 0) -> str:
    rng = np.random.default_rng(seed)
    vocab = ["the", "cat", "sat", "on", "a", "mat", "dog", "ran", "far", "away", "and", "then", "slept", "Once",
             "upon", "time", "there", "was", "little", "girl", "named", "Lily", "she", "liked", "to", "play"]
    lines = []
    for k in range(n_lines):
        picks = rng.integers(0, len(vocab), 12)
        lines.append(" ".join(vocab[i] for i in picks) + f" {k % 997}.")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A corpus (~1.2 MB), a larger one for the worker-table case (~12 MB, many distinct pre-tokens), a 1,000-token
    tokenizer folder and its tokens of the corpus."""
    root = tmp_path_factory.mktemp("oslimits")
    corpus = root / "corpus.txt"
    corpus.write_text(_words(20_000) + "<|endoftext|>" + _words(500, seed=1), encoding="utf-8")
    vocab, merges = train_bpe(str(corpus), 1000, ["<|endoftext|>"], num_processes=1)
    tok = Tokenizer(vocab, merges, special_tokens=["<|endoftext|>"])
    tokdir = root / "tok"
    tok.save(str(tokdir))
    tokens = root / "tokens.npy"
    np.save(tokens, np.asarray(tok.encode(corpus.read_text(encoding="utf-8")), dtype=np.uint16))
    big = root / "big.txt"
    rng = np.random.default_rng(7)
    with open(big, "w", encoding="ascii") as f:       # distinct words: a worker's table of some hundreds of KB
        for _ in range(40):
            letters = rng.integers(97, 123, size=(25_000, 8), dtype=np.uint8)
            f.write(" ".join(bytes(row).decode("ascii") for row in letters) + "\n")
    return {"root": root, "corpus": corpus, "tok": tokdir, "tokens": tokens, "big": big}


def _limits(fsize: int | None = None, address_space: int | None = None):
    def apply() -> None:
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        if address_space is not None:
            resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    return apply


def _run(args, cwd, fsize=None, address_space=None, stdin=None, timeout=60, env=None):
    return subprocess.run(CLI + ["-q"] + [str(a) for a in args], cwd=cwd, capture_output=True, stdin=stdin,
                          preexec_fn=_limits(fsize, address_space), timeout=timeout,
                          env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1", **(env or {})))


def _one_line(stderr: bytes) -> str:
    text = stderr.decode("utf-8", "replace").strip()
    assert "Traceback" not in text, text
    lines = text.splitlines()
    assert len(lines) == 1, text
    return lines[0]


def _entries(folder) -> list[str]:
    return sorted(os.listdir(folder))


# ---- a file size limit: every command that writes ---------------------------------------------------------------

FILE_COMMANDS = {
    "synth": lambda w, out: ["synth", "--size", "200KB", "-o", out],
    "train": lambda w, out: ["train", w["corpus"], "--vocab-size", "1000", "--special-token", "<|endoftext|>",
                             "-o", out],
    "encode": lambda w, out: ["encode", "-t", w["tok"], w["corpus"], "-o", out],
    "decode": lambda w, out: ["decode", "-t", w["tok"], w["tokens"], "-o", out],
    "count": lambda w, out: ["count", w["big"], "-o", out],
    "export-hf": lambda w, out: ["export", "-t", w["tok"], "--hf", out],
    "export-tiktoken": lambda w, out: ["export", "-t", w["tok"], "--tiktoken", out],
    "report": lambda w, out: ["report", "-t", w["tok"], "--eval", w["corpus"], "-o", out],
    "show-html": lambda w, out: ["show", "-t", w["tok"], "-f", w["corpus"], "--html", out],
}


@pytest.mark.parametrize("command", sorted(FILE_COMMANDS))
def test_file_size_limit_is_a_one_line_error_naming_the_output_and_leaves_nothing(work, tmp_path, command):
    out = tmp_path / "out" / ("tok" if command == "train" else "result")
    out.parent.mkdir()
    done = _run(["-j", "1"] + FILE_COMMANDS[command](work, out), cwd=tmp_path, fsize=FSIZE)
    assert done.returncode == 1, done.stderr
    line = _one_line(done.stderr)
    assert "File too large" in line and str(out) in line, line
    assert _entries(out.parent) == [], _entries(out.parent)


def test_stdin_encoded_to_a_file_past_the_size_limit_names_the_file(work, tmp_path):
    """np.save into atomic_output's file: NumPy reports the short write as "N requested and M written", an
    OSError with no errno and no file name, which atomic_output passed on as it was."""
    out = tmp_path / "ids.npy"
    with open(work["corpus"], "rb") as stdin:
        done = _run(["encode", "-t", work["tok"], "-", "-o", out], cwd=tmp_path, fsize=FSIZE, stdin=stdin)
    assert done.returncode == 1
    line = _one_line(done.stderr)
    assert line.startswith(f"bpe-fast: {out}: File too large"), line
    assert _entries(tmp_path) == []


def test_a_worker_table_past_the_size_limit_names_the_temporary_file(work, tmp_path):
    """Counting with 2 processes, the worker writes its table to a temporary folder: past the file size limit
    (or on a full /dev/shm or TMPDIR) the error was NumPy's "N requested and M written", naming nothing."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    out = tmp_path / "counts.npz"
    done = _run(["-j", "2", "count", work["big"], "-o", out], cwd=tmp_path, fsize=100_000,
                env={"TMPDIR": str(scratch)})
    assert done.returncode == 1
    line = _one_line(done.stderr)
    assert "File too large" in line and "table" in line and "temporary" in line, line
    assert "requested and" not in line.split("(")[0], line
    assert not out.exists() and _entries(scratch) == []


def test_numpy_short_write_through_atomic_output_names_the_file(tmp_path):
    """The library's own writer: atomic_output of np.save, past the file size limit."""
    script = ("import numpy as np\nfrom bpe_fast.atomic import atomic_output\n"
              f"with atomic_output({str(tmp_path / 'a.npy')!r}) as f:\n"
              "    np.save(f, np.zeros(100_000, dtype=np.int64))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, preexec_fn=_limits(fsize=FSIZE))
    err = done.stderr.decode()
    assert done.returncode == 1
    last = err.strip().splitlines()[-1]
    assert last.startswith("OSError: [Errno 27] File too large") and "a.npy" in last, err
    assert _entries(tmp_path) == []


# ---- out of memory ----------------------------------------------------------------------------------------------

def test_memory_error_is_one_line_and_exit_1(work, tmp_path, monkeypatch, capsys):
    """A MemoryError (NumPy's _ArrayMemoryError adding the workers' tables under ulimit -v, a bytearray reading a
    pipe) was a traceback: _run caught OSError, ValueError ... but not it."""
    import bpe_fast.train
    from bpe_fast.cli import main

    def exhausted(*args, **kwargs):
        raise MemoryError("Unable to allocate 168. MiB for an array")

    monkeypatch.setattr(bpe_fast.train, "train_bpe", exhausted)
    out = tmp_path / "tok"
    assert main(["-q", "train", str(work["corpus"]), "--vocab-size", "300", "-o", str(out)]) == 1
    line = _one_line(capsys.readouterr().err.encode())
    assert line.startswith("bpe-fast: out of memory") and "168. MiB" in line, line
    assert not out.exists()


def test_encoding_an_endless_stream_under_a_memory_limit_is_a_clear_error(work, tmp_path):
    """/dev/zero as the input to encode (a character device: read whole, as a pipe is) under ulimit -v: a one-line
    out-of-memory error, no traceback, no output."""
    out = tmp_path / "ids.npy"
    done = _run(["encode", "-t", work["tok"], "/dev/zero", "-o", out], cwd=tmp_path, address_space=1_500_000_000)
    assert done.returncode == 1, done.stderr
    assert _one_line(done.stderr).startswith("bpe-fast: out of memory"), done.stderr
    assert _entries(tmp_path) == []


# ---- streams that never end -------------------------------------------------------------------------------------

def test_decode_of_an_endless_stream_is_refused_at_once(work, tmp_path):
    """decode read a pipe whole before looking at it: /dev/zero ran until memory ran out (the OOM killer, on a
    machine without a limit). Its header is read first now: no .npy magic, an error at once."""
    out = tmp_path / "text.txt"
    for source, stdin in (("/dev/zero", None), ("-", "/dev/zero")):
        with open(stdin, "rb") if stdin else open(os.devnull, "rb") as f:
            start = time.monotonic()
            done = _run(["decode", "-t", work["tok"], source, "-o", out], cwd=tmp_path, stdin=f,
                        address_space=3_000_000_000)
        assert done.returncode == 1, done.stderr
        line = _one_line(done.stderr)
        assert "not a .npy file" in line, line
        assert time.monotonic() - start < 20
    assert _entries(tmp_path) == []


def test_decode_of_a_pipe_reads_the_array_the_header_gives(work, tmp_path):
    """The bounded read keeps what decode read from a pipe before: the whole array (and refuses a short one)."""
    expected = Tokenizer.load(str(work["tok"])).decode(np.load(work["tokens"]).tolist())
    out = tmp_path / "text.txt"
    with open(work["tokens"], "rb") as f:
        done = _run(["decode", "-t", work["tok"], "-", "-o", out], cwd=tmp_path, stdin=f)
    assert done.returncode == 0, done.stderr
    assert out.read_text(encoding="utf-8") == expected
    short = tmp_path / "short.npy"
    short.write_bytes(work["tokens"].read_bytes()[:1000])
    with open(short, "rb") as f:
        done = _run(["decode", "-t", work["tok"], "-", "-o", tmp_path / "x.txt"], cwd=tmp_path, stdin=f)
    assert done.returncode == 1 and "truncated" in _one_line(done.stderr)
    assert not (tmp_path / "x.txt").exists()


def _wait_for_fd(pid: int, target: str, timeout: float = 30.0) -> None:
    """Until process pid has `target` open (its /proc fd links): the marker that it is reading it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if any(os.readlink(f"/proc/{pid}/fd/{fd}") == target for fd in os.listdir(f"/proc/{pid}/fd")):
                return
        except OSError:
            pass
        time.sleep(0.005)
    raise AssertionError(f"process {pid} never opened {target}")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_while_an_endless_stream_is_read_stops_the_command_at_once(work, tmp_path, sig):
    """encode of /dev/zero read it in one readall() in C, which never returns to let a handler run: SIGTERM and
    Ctrl-C waited until memory ran out. Read a block at a time, the command stops at once, saying so."""
    out = tmp_path / "ids.npy"
    proc = subprocess.Popen(CLI + ["-q", "encode", "-t", str(work["tok"]), "/dev/zero", "-o", str(out)],
                            cwd=tmp_path, stderr=subprocess.PIPE, preexec_fn=_limits(address_space=4_000_000_000),
                            env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    try:
        _wait_for_fd(proc.pid, "/dev/zero")
        time.sleep(0.05)
        proc.send_signal(sig)
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        if proc.poll() is None and proc.returncode is None:
            with __import__("contextlib").suppress(ProcessLookupError, ChildProcessError):
                proc.kill()
                os.waitpid(proc.pid, 0)
    err = proc.stderr.read().decode()
    assert os.WIFEXITED(status), (status, err)
    assert os.WEXITSTATUS(status) == (143 if sig == signal.SIGTERM else 130), err
    assert "terminated" in err or "interrupted" in err, err
    assert usage.ru_maxrss < 2_000_000, f"read {usage.ru_maxrss} KB after the signal"     # (KB)
    assert _entries(tmp_path) == []


# ---- a tokens file truncated in place while it is decoded ---------------------------------------------------------

def test_decode_survives_its_tokens_file_truncated_in_place(work, tmp_path):
    """decode mapped the tokens file (np.load mmap_mode="r"): truncated in place by another program while it was
    decoded, the process died of SIGBUS, saying nothing. The file is read now: the ids are decoded as they were."""
    tokens = tmp_path / "tokens.npy"
    tokens.write_bytes(work["tokens"].read_bytes())
    out = tmp_path / "text.txt"
    script = (
        "import os, sys\n"
        "import bpe_fast.tokenizer as t\n"
        "from bpe_fast.cli import main\n"
        "real = t.Tokenizer.decode\n"
        "def decode(self, ids, *a, **k):\n"
        f"    os.truncate({str(tokens)!r}, 200)\n"
        "    return real(self, ids, *a, **k)\n"
        "t.Tokenizer.decode = decode\n"
        f"sys.exit(main(['-q', 'decode', '-t', {str(work['tok'])!r}, {str(tokens)!r}, '-o', {str(out)!r}]))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 0, (done.returncode, done.stderr.decode()[-2000:])
    expected = Tokenizer.load(str(work["tok"])).decode(np.load(work["tokens"]).tolist())
    assert out.read_text(encoding="utf-8") == expected
