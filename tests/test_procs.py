"""bpe_fast.procs: how worker processes start. A caller holding much memory gets workers from a forkserver (no
copy-on-write of its pages), started without its __main__; results are the same as with fork."""
import functools
import os
import subprocess
import time
import sys

import pytest

from bpe_fast import count_pretokens, procs
from bpe_fast.patterns import GPT2_PATTERN
from train_oracle import oracle_count_pretokens

EOT = "<|endoftext|>"
DOCS = ["Once upon a time, a cat sat.", "It's 2024; the dog's bone?", "日本語 text\n\nand more  ", ""] * 50


@pytest.fixture
def large_caller(monkeypatch):
    """As if this process held more than FORK_LIMIT_BYTES."""
    monkeypatch.setattr(procs, "FORK_LIMIT_BYTES", -1)
    assert procs.worker_context().get_start_method() == "forkserver"


def test_small_callers_fork(monkeypatch):
    held = procs._resident_bytes()
    assert held > 0
    # the limit just above what this process holds (after earlier tests it may hold more than 512 MB)
    monkeypatch.setattr(procs, "FORK_LIMIT_BYTES", held + (256 << 20))
    assert procs.worker_context().get_start_method() == "fork"


def test_workers_from_a_forkserver_count_the_same(large_caller, tmp_path):
    expected = oracle_count_pretokens(EOT.join(DOCS), [EOT], GPT2_PATTERN)
    assert count_pretokens(iter(DOCS), [EOT], num_processes=2, chunk_bytes=64) == expected
    path = tmp_path / "corpus.txt"
    path.write_text(EOT.join(DOCS), encoding="utf-8", newline="")
    assert count_pretokens(path, [EOT], num_processes=3, chunk_bytes=64) == expected


def test_a_script_without_a_main_guard_is_not_run_again_by_the_workers(tmp_path):
    # with fork nothing is imported again; from a forkserver multiprocessing would run the script's top level
    # in each worker (and fail there: a process started while bootstrapping) unless __main__ is kept out
    script = tmp_path / "script.py"
    script.write_text(
        "from bpe_fast import count_pretokens, procs\n"
        "procs.FORK_LIMIT_BYTES = -1\n"
        "print('top level', flush=True)\n"
        "counts = count_pretokens(iter(['a b', 'b c'] * 100), num_processes=2, chunk_bytes=8)\n"
        "print(dict(counts) == {b'a': 100, b' b': 100, b'b': 100, b' c': 100}, __file__.endswith('script.py'))\n",
        encoding="utf-8")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "top level\nTrue True\n"


def test_forkserver_workers_die_with_a_killed_caller(tmp_path):
    # a forkserver outlives a caller killed with SIGKILL while its workers live (they hold its pipe), and the
    # workers' parent is the forkserver: each worker watches the caller itself
    script = tmp_path / "script.py"
    script.write_text(
        "import multiprocessing, time\n"
        "from bpe_fast import count_pretokens, procs\n"
        "procs.FORK_LIMIT_BYTES = -1\n"
        "def docs():\n"
        "    for i in range(10 ** 9):\n"
        "        if i == 5000:\n"
        "            print(' '.join(str(p.pid) for p in multiprocessing.active_children()), flush=True)\n"
        "        if i % 1000 == 0:\n"
        "            time.sleep(0.01)\n"
        "        yield f'document {i}'\n"
        "count_pretokens(docs(), num_processes=3, chunk_bytes=1 << 12)\n", encoding="utf-8")
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        workers = [int(p) for p in proc.stdout.readline().split()]
        assert len(workers) >= 2 and all(_alive(p) for p in workers)
    finally:
        proc.kill()
        proc.wait(timeout=60)
    deadline = time.monotonic() + 30
    while any(_alive(p) for p in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(p) for p in workers)


def _alive(pid):
    """True while process pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):     # gone before the open, or between the open and the read
        return False


def test_forkserver_workers_import_the_callers_bpe_fast(tmp_path):
    # run from a folder holding another "bpe_fast" (as a source checkout without its compiled modules is): the
    # forkserver's own path starts with that folder, the workers must still import the caller's package
    (tmp_path / "bpe_fast").mkdir()
    (tmp_path / "bpe_fast" / "__init__.py").write_text("# the wrong bpe_fast: it has nothing\n")
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    script = scripts / "script.py"
    script.write_text(
        "import bpe_fast\n"
        "from bpe_fast import count_pretokens, procs\n"
        "procs.FORK_LIMIT_BYTES = -1\n"
        "counts = count_pretokens(iter(['a b'] * 100), num_processes=2, chunk_bytes=8)\n"
        "print(dict(counts) == {b'a': 100, b' b': 100})\n", encoding="utf-8")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0 and out.stdout == "True\n", out.stderr


def test_worker_counts_and_range_sizes_are_ints_numpy_ones_too():
    # chunk_bytes went through int(): '100', 1.5 and True were taken; num_processes refused np.int64, which the
    # caps (max_bytes, max_documents) take
    import numpy as np
    from bpe_fast.procs import check_chunk_bytes, check_num_processes

    assert check_num_processes(np.int64(2)) == 2 and type(check_num_processes(np.int64(2))) is int
    assert check_chunk_bytes(np.int32(100), 5) == 100 and check_chunk_bytes(None, 5) == 5
    for bad in ("100", 1.5, True, np.bool_(True)):
        with pytest.raises(TypeError, match="chunk_bytes must be an int or None"):
            check_chunk_bytes(bad, 5)
    for bad in (True, 2.0, "2"):
        with pytest.raises(TypeError, match="num_processes must be an int or None"):
            check_num_processes(bad)
    for bad in (0, -1, np.int64(0)):
        with pytest.raises(ValueError, match="num_processes must be a positive int or None"):
            check_num_processes(bad)
    with pytest.raises(ValueError, match="chunk_bytes must be positive"):
        check_chunk_bytes(0, 5)


def test_a_thread_job_is_made_once_its_job_has_begun():
    """procs.ThreadJob waits until its job runs: a job started before Python work on the calling thread began
    only when that work let go of the GIL (up to the 5 ms switch interval; the tables of a loaded tokenizer were
    built after the caller's dicts instead of beside them)."""
    import threading

    began: list[int] = []
    gate = threading.Event()

    def job() -> int:
        began.append(threading.get_ident())
        gate.wait(10)
        return 7

    for _ in range(20):
        began.clear()
        gate.clear()
        made = procs.ThreadJob(job, "test-job")
        assert len(began) == 1 and began[0] != threading.get_ident()     # begun, in a thread of its own
        gate.set()
        assert made.result() == 7


def _unit_marking_who_counted_it(main_pid, counter, k, bytes_done, share):
    caller = os.getpid() == main_pid
    time.sleep(0.4 if caller else 0.02)     # the worker, far quicker, would reach the last unit first
    counter.add(f" unit{chr(97 + k)}by{'caller' if caller else 'worker'}".encode())


@pytest.mark.parametrize("send_seconds", [1.0, 0.0])
def test_a_worker_leaves_the_last_unit_to_the_caller_when_its_table_is_slow_to_send(monkeypatch, send_seconds):
    # _count_claimed: a worker whose table would take longer to send than half a unit takes to count claims no
    # more than the units before the last; the caller's thread counts it. Each unit is counted once either way.
    # (The caller's units take 0.4 s, the worker's 0.02 s: without the rule the worker counts the last unit.)
    from bpe_fast import count_workers as cw
    from bpe_fast.patterns import resolve_pattern

    monkeypatch.setattr(procs, "FORK_LIMIT_BYTES", 1 << 62)      # forked: the workers see the patched estimate
    monkeypatch.setattr(cw, "_SEND_SECONDS_A_PRETOKEN", send_seconds)
    own, tables, _ = cw._count_claimed_units(6, functools.partial(_unit_marking_who_counted_it, os.getpid()), [],
                                             resolve_pattern(GPT2_PATTERN), "strict", 2, None, None, "a test",
                                             lambda seen: seen[0])
    tokens, offsets, counts = cw._own_and_theirs(own, tables, True)[0]
    marks = sorted(bytes(tokens[offsets[k]:offsets[k + 1]]).decode() for k in range(len(counts)))
    assert counts.tolist() == [1] * 6 and [m[:6] for m in marks] == [f" unit{c}" for c in "abcdef"]
    assert sum(m.endswith("worker") for m in marks) >= 1
    if send_seconds:
        assert marks[-1] == " unitfbycaller"


def test_claim_below_claims_nothing_from_there_on():
    from bpe_fast import count_workers as cw

    index = procs.shared_counter(procs.worker_context(), 3)
    assert cw._claim(index, 4) == 3 and cw._claim(index, 4) == 4 and cw._claim(index, 4) == 4
    assert index.value == 4 and cw._claim(index) == 4 and index.value == 5


def test_no_more_workers_than_byte_ranges(tmp_path):
    # a file with 3 safe cuts (no space: only the special tokens' starts) counted with num_processes=6 started 5
    # worker processes for 3 ranges (num_processes=1024 on a small file forked 1023 of them): at most one
    # claimant a range, the caller's thread being one
    import multiprocessing

    text = "aaaa" + EOT + "bbbb" + EOT + "cccc" + EOT + "dddd"
    path = tmp_path / "corpus.txt"
    path.write_text(text, encoding="utf-8")
    seen = []
    counts = count_pretokens(path, [EOT], num_processes=6, chunk_bytes=1,
                             progress=lambda *_: seen.append(len(multiprocessing.active_children())))
    assert counts == oracle_count_pretokens(text, [EOT], GPT2_PATTERN)
    assert seen and max(seen) <= 3


def test_an_interrupted_count_of_small_files_in_threads_leaves_no_thread(tmp_path, monkeypatch):
    # small files with a native pattern are counted by threads of this process: on Ctrl-C in the caller's thread
    # (raised here by the progress report after its first run of files) the call returned while the others were
    # still counting theirs
    import threading
    from bpe_fast import count_workers as cw

    for k in range(80):
        (tmp_path / f"{k:02d}.txt").write_text(f"file {k} " * 8000, encoding="utf-8")      # 5 MB in all
    count_files_unit = cw._count_files_unit

    def slow_in_the_helpers(*args):
        if threading.current_thread() is not threading.main_thread():
            time.sleep(0.3)
        return count_files_unit(*args)

    def interrupt(*_):
        raise KeyboardInterrupt

    monkeypatch.setattr(cw, "_count_files_unit", slow_in_the_helpers)
    with pytest.raises(KeyboardInterrupt):
        count_pretokens(tmp_path, num_processes=2, progress=interrupt)
    assert [t.name for t in threading.enumerate() if t.name.startswith("bpe_fast")] == []


@pytest.mark.parametrize("cores, num_threads, most", [(1, 8, 1), (2, 8, 2), (4, 3, 3), (64, 8, 8)])
def test_map_threads_runs_no_more_threads_than_cores_or_asked(monkeypatch, cores, num_threads, most):
    # the results in order whatever the threads; at most min(num_threads, cores) threads, the caller's alone on
    # one core. Each item waits (up to a second) for another to run at once, so as many threads as allowed
    # take part.
    import threading

    monkeypatch.setattr(procs, "usable_cores", lambda: cores)
    seen = set()
    together = threading.Barrier(most, timeout=1) if most > 1 else None

    def work(x):
        seen.add(threading.get_ident())
        if together is not None and x < most * 4:
            try:
                together.wait()
            except threading.BrokenBarrierError:
                pass
        return x * x

    items = list(range(200))
    assert procs.map_threads(work, items, num_threads) == [x * x for x in items]
    assert 1 <= len(seen) <= most
    if most == 1:
        assert seen == {threading.get_ident()}
