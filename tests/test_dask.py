"""count_pretokens on a Dask cluster: the same counts as local counting, the task plan, bad input, lost workers.

One LocalCluster of 2 worker processes (1 thread each) serves the whole module; the tests that kill a worker
wait for the nanny to start a new one before they end.
"""
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter

import numpy as np
import pytest

distributed = pytest.importorskip("distributed", reason="counting on Dask needs dask[distributed]")

from bpe_fast import GPT2_PATTERN, GPT4_PATTERN, PretokenCounts, count_pretokens, train_bpe, train_from_counts
from bpe_fast import dask_counts
from bpe_fast.inputs import CorpusDecodeError
from bpe_fast.synthetic import generate

from corpora import EOT, make_corpus, write

PAD = "<|pad|>"


def _local_cluster(**kwargs):
    # no dashboard, and the scheduler's HTTP server (always started) on a free port: 8787 may be taken
    return distributed.LocalCluster(dashboard_address=":0", scheduler_kwargs={"dashboard": False}, **kwargs)


@pytest.fixture(scope="module")
def cluster():
    with _local_cluster(n_workers=2, threads_per_worker=1, processes=True) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def client(cluster):
    with distributed.Client(cluster) as client:
        yield client


@pytest.fixture(scope="module")
def corpus_files(tmp_path_factory):
    """Three multilingual files (with special tokens, CRLF, emoji) and an empty one."""
    folder = tmp_path_factory.mktemp("dask")
    specials = [EOT, PAD]
    paths = [write(folder, make_corpus(seed, n_words, specials=specials), f"part{seed}.txt")
             for seed, n_words in ((71, 6000), (72, 3000), (73, 500))]
    return paths + [write(folder, "", "empty.txt")]


def _local(paths, specials, **kwargs):
    return count_pretokens(paths, specials, num_processes=1, **kwargs)


# ---- the same counts as local counting -------------------------------------------------------------------

@pytest.mark.parametrize("chunk_bytes", [None, 1 << 20, 4096, 300])
@pytest.mark.parametrize("specials", [(), (EOT, PAD)], ids=["no-specials", "specials"])
def test_counts_equal_local_counts(client, corpus_files, specials, chunk_bytes):
    want = _local(corpus_files, specials)
    got = count_pretokens(corpus_files, specials, chunk_bytes=chunk_bytes, client=client)
    assert got == want
    assert got.special_tokens == tuple(specials)


def test_gpt4_pattern_and_a_pattern_without_native_scanner(client, corpus_files):
    for pattern in (GPT4_PATTERN, GPT2_PATTERN + "|x"):      # the second runs the regex path on the workers
        want = _local(corpus_files[:2], [EOT], pattern=pattern)
        assert count_pretokens(corpus_files[:2], [EOT], pattern=pattern, chunk_bytes=2000, client=client) == want


def test_training_from_dask_counts_equals_train_bpe(client, corpus_files, tmp_path):
    one = corpus_files[0]
    for specials in ([], [EOT, PAD]):
        counts = count_pretokens(one, specials, chunk_bytes=1000, client=client)
        assert train_from_counts(counts, 400, specials) == train_bpe(one, 400, specials, num_processes=1)
    # several files: the same as one file made of them with a special token between them
    joined = tmp_path / "joined.txt"
    joined.write_bytes(EOT.encode().join(p.read_bytes() for p in corpus_files))
    counts = count_pretokens(corpus_files, [EOT, PAD], chunk_bytes=700, client=client)
    assert train_from_counts(counts, 450, [EOT, PAD]) == train_bpe(joined, 450, [EOT, PAD], num_processes=1)


def test_empty_files_and_relative_paths(client, corpus_files, monkeypatch):
    empty = corpus_files[-1]
    assert len(count_pretokens([empty, empty], client=client)) == 0
    # the workers' working folder is not the caller's: paths are sent absolute
    monkeypatch.chdir(corpus_files[0].parent)
    names = [p.name for p in corpus_files]
    assert count_pretokens(names, [EOT], client=client) == _local(corpus_files, [EOT])


def test_a_folder_or_a_glob_of_text_files(client, corpus_files):
    # inputs are paths, folders and globs (bpe_fast.inputs), with a client too: a folder was "corpus path is a
    # directory" and a glob "corpus file not found" (bpe-fast count corpus/ --dask-scheduler ...)
    folder = corpus_files[0].parent
    want = _local(corpus_files, [EOT])
    assert count_pretokens(folder, [EOT], client=client) == want
    assert count_pretokens(str(folder / "*.txt"), [EOT], client=client) == want
    assert count_pretokens([folder / "part7*.txt", corpus_files[-1]], [EOT], client=client) == want


def test_bad_arguments_fail_before_anything_is_submitted(client, corpus_files):
    with pytest.raises(ValueError, match="errors"):
        count_pretokens(corpus_files[0], errors="ignore", client=client)
    with pytest.raises(ValueError, match="chunk_bytes"):
        count_pretokens(corpus_files[0], chunk_bytes=0, client=client)
    for bad in (1.5, "100", True):     # int() took them (1.5 counted with ranges of 1 byte); as without a client
        with pytest.raises(TypeError, match="chunk_bytes must be an int or None"):
            count_pretokens(corpus_files[0], chunk_bytes=bad, client=client)
    with pytest.raises(TypeError, match="Client"):
        count_pretokens(corpus_files[0], client="tcp://127.0.0.1:8786")


def test_a_closed_client_is_refused_naming_it_before_any_output(cluster, corpus_files, tmp_path):
    # count_pretokens raised "'NoneType' object has no attribute 'ncores'" from inside Dask; encode_files made
    # out_dir and an empty index.json first (helper-147)
    from bpe_fast import Tokenizer, encode_files
    closed = distributed.Client(cluster)
    closed.close()
    with pytest.raises(ValueError, match="client is not running \\(its status is 'closed'\\): count_pretokens"):
        count_pretokens(corpus_files[0], client=closed)
    tok = Tokenizer({i: bytes([i]) for i in range(256)}, [])
    with pytest.raises(ValueError, match="client is not running .*: encode_files"):
        encode_files(corpus_files[0], tmp_path / "out", tok, client=closed)
    assert not (tmp_path / "out").exists()


def test_inputs_the_workers_cannot_read_as_text_are_refused_naming_them(client, tmp_path):
    # the workers count a file's bytes as they are: a JSON lines file was counted with its JSON syntax as text
    # ('{"', '":' ...), a .gz file as compressed bytes (an invalid UTF-8 error, or with errors="replace" U+FFFD
    # counts); each is refused naming it, as the local counting would read it otherwise
    import gzip
    import json
    jsonl = tmp_path / "docs.jsonl"
    jsonl.write_text(json.dumps({"text": "hello world"}) + "\n")
    assert count_pretokens(jsonl, num_processes=1) == {b"hello": 1, b" world": 1}
    packed = tmp_path / "text.txt.gz"
    with gzip.open(packed, "wt") as f:
        f.write("hello world")
    for path, kind in ((jsonl, "jsonl"), (packed, "compressed text")):
        for errors in ("strict", "replace"):
            with pytest.raises(ValueError, match=rf"{path.name}: with a Dask client, .*uncompressed text files, "
                                                 rf"not {kind}"):
                count_pretokens([write(tmp_path, "hello", "ok.txt"), path], client=client, errors=errors)


def test_a_json_file_is_resolved_with_the_text_field_given(client, tmp_path):
    # the Dask path resolved its inputs with text_field "text" whatever was given: a .json of "content" records
    # counted with text_field="content" (JSON lines, locally) was counted as text on the cluster, its keys and
    # quotes as pre-tokens; and a .json of "text" records with text_field="content" (text) was refused
    import json
    from train_oracle import oracle_count_pretokens
    content = tmp_path / "content.json"
    content.write_text(json.dumps({"content": "hello world"}) + "\n")
    with pytest.raises(ValueError, match=r"content.json: with a Dask client, .*not jsonl"):
        count_pretokens(content, client=client, text_field="content")
    records = tmp_path / "records.json"
    records.write_text(json.dumps({"text": "hello world"}) + "\n")
    want = oracle_count_pretokens(records.read_text(), [], GPT2_PATTERN)
    assert count_pretokens(records, client=client, text_field="content") == want


def test_importing_bpe_fast_does_not_import_dask(tmp_path):
    # run outside the source tree: `python -c` puts its working folder first on sys.path, and the tests are
    # of the installed (compiled) package
    code = ("import sys, bpe_fast, bpe_fast.counts, bpe_fast.dask_counts; bpe_fast.count_pretokens; "
            "sys.exit(2 * any(m in sys.modules for m in ('dask', 'distributed')))")
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr or "importing bpe_fast imported dask"


@pytest.fixture(scope="module")
def threads_client():
    """A cluster of 2 workers in this process (processes=False): nothing pickled on the way, as on a cluster of
    threads."""
    with _local_cluster(n_workers=2, threads_per_worker=1, processes=False) as cluster, \
            distributed.Client(cluster) as client:
        yield client


def test_boundaries_on_special_tokens_multibyte_characters_and_crlf_in_process(threads_client, tmp_path):
    # every cut of the cluster's plan falls on one of them: the counts are the oracle's (regex over the text split
    # at the special tokens) and the local counts
    from train_oracle import oracle_count_pretokens
    pieces = [EOT, PAD, "\r\n", "\r\n\r\n", "é", "😀", "我", " ", "   ", "ab", "'s", "\n", "\t"]
    rng = np.random.default_rng(11)
    texts = ["".join(pieces[k] for k in rng.integers(0, len(pieces), 1500)) for _ in range(2)]
    paths = [write(tmp_path, text, f"edge{i}.txt") for i, text in enumerate(texts)]
    for specials in ((EOT, PAD), ()):
        around = set()         # (the 2 bytes before a cut, the 2 after)
        for path, text in zip(paths, texts):
            data = text.encode()
            for task in dask_counts._plan([(str(path), len(data))], specials, GPT2_PATTERN, 5, 40):
                around.update((data[a - 2:a], data[a:a + 2]) for _, _, ranges in task for a, _ in ranges if a)
        if specials:        # cut at the special tokens, right after a CRLF or a multi-byte character
            assert any(after == b"<|" for _, after in around)
            assert any(before == b"\r\n" for before, _ in around)
            assert any(before[-1] >= 0x80 for before, _ in around)
        else:               # cut before a space, right before a CRLF or a multi-byte character
            assert any(after == b" \r" for _, after in around)
            assert any(after[:1] == b" " and after[1] >= 0x80 for _, after in around)
    for pattern in (GPT2_PATTERN, GPT4_PATTERN):
        for specials in ((EOT, PAD), ()):
            want = sum((oracle_count_pretokens(t, specials, pattern) for t in texts), start=Counter())
            for chunk_bytes in (1, 5, 64, None):
                got = count_pretokens(paths, specials, pattern=pattern, chunk_bytes=chunk_bytes, client=threads_client)
                assert got == want, (pattern, specials, chunk_bytes)
            assert _local(paths, specials, pattern=pattern) == want


def test_a_file_a_worker_cannot_see_is_named_and_nothing_is_left(threads_client, tmp_path, monkeypatch):
    # the caller plans from its own view of the files; a worker that cannot read one (removed, or another
    # machine's disk) or sees another size fails the count naming the file, and leaves no task on the cluster
    planned = dask_counts._plan

    for change, error, message in ((os.remove, FileNotFoundError, "corpus file not found on Dask worker"),
                                   (lambda p: open(p, "wb").close(), RuntimeError, "0 bytes on Dask worker")):
        path = write(tmp_path, make_corpus(5, 300), "seen.txt")

        def plan_then_change(files, *args, change=change):
            tasks = planned(files, *args)
            for name, _ in files:
                change(name)
            return tasks
        monkeypatch.setattr(dask_counts, "_plan", plan_then_change)
        with pytest.raises(error, match=message) as info:
            count_pretokens(path, chunk_bytes=200, client=threads_client)
        assert str(path) in str(info.value)
        deadline = time.monotonic() + 30
        while threads_client.cluster.scheduler.tasks and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not threads_client.cluster.scheduler.tasks


# ---- the task plan and the adding task -------------------------------------------------------------------

def test_task_bytes():
    mb = 1 << 20
    assert dask_counts._task_bytes(50 * mb, nthreads=2) == 50 * mb // 4      # 2 tasks per thread
    assert dask_counts._task_bytes(1000 * mb, nthreads=2) == 1000 * mb // 16   # at most 64 MB a task
    assert dask_counts._task_bytes(3, nthreads=8) == 1


def test_plan_covers_every_byte_once_in_order(corpus_files):
    files = [(str(p), p.stat().st_size) for p in corpus_files]
    total = sum(size for _, size in files)
    for range_bytes, task_bytes in ((300, 300), (300, 5000), (5000, 5000), (total, total)):
        tasks = dask_counts._plan(files, (EOT,), GPT2_PATTERN, range_bytes, task_bytes)
        seen = [(path, r) for pieces in tasks for path, size, ranges in pieces for r in ranges]
        for path, size in files:
            ranges = [r for p, r in seen if p == path]
            assert [b for r in ranges for b in r] == sorted(b for r in ranges for b in r)   # in order
            assert ranges == [] if size == 0 else (ranges[0][0] == 0 and ranges[-1][1] == size)
            assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))                      # no gap
        sizes = [sum(e - s for _, _, ranges in pieces for s, e in ranges) for pieces in tasks]
        assert sum(sizes) == total
        assert max(sizes) < task_bytes + range_bytes + 64                 # a cut may move a little


def test_plan_worked_example(tmp_path):
    # "aaa bbb ccc ddd" (15 bytes) cut at spaces every 4 bytes: ranges [0,3) [3,7) [7,11) [11,15);
    # tasks of 8 bytes by the ranges' middles 1, 5, 9, 13: task 0 gets the first two, task 1 the rest
    path = write(tmp_path, "aaa bbb ccc ddd")
    tasks = dask_counts._plan([(str(path), 15)], (), GPT2_PATTERN, range_bytes=4, task_bytes=8)
    assert tasks == [[(str(path), 15, [(0, 3), (3, 7)])], [(str(path), 15, [(7, 11), (11, 15)])]]


def test_add_leaves_its_inputs_alone():
    def table(counts):
        c = PretokenCounts(counts)
        return c.tokens.copy(), c.offsets.copy(), c.counts.copy()
    a, b, c = table({b"x": 1, b"y": 2}), table({b"y": 3}), table({b"z": 4, b"x": 5, b"w": 1})
    copies = [tuple(x.copy() for x in t) for t in (a, b, c)]
    total = PretokenCounts.from_arrays(*dask_counts._add(a, b, c))
    assert total == {b"x": 6, b"y": 5, b"z": 4, b"w": 1}
    for t, copy in zip((a, b, c), copies):
        assert all(np.array_equal(x, y) for x, y in zip(t, copy))


# ---- bad input -------------------------------------------------------------------------------------------

def test_invalid_utf8_names_the_file_offset_and_line(client, tmp_path):
    good = make_corpus(81, 800, specials=[EOT]).encode()
    bad = good + b"caf\xe9 au lait" + good
    ok_path, bad_path = tmp_path / "ok.txt", tmp_path / "bad.txt"
    ok_path.write_bytes(good)
    bad_path.write_bytes(bad)
    with pytest.raises(CorpusDecodeError) as local:
        _local([ok_path, bad_path], [EOT])
    with pytest.raises(CorpusDecodeError) as remote:
        count_pretokens([ok_path, bad_path], [EOT], chunk_bytes=500, client=client)
    err = remote.value
    assert (err.path, err.offset, err.line) == (str(bad_path), len(good) + 3, good.count(b"\n") + 1)
    assert (err.path, err.offset, err.line) == (local.value.path, local.value.offset, local.value.line)
    assert str(bad_path) in str(err) and f"byte offset {len(good) + 3}" in str(err)
    # errors="replace" counts U+FFFD instead, as locally
    assert count_pretokens(bad_path, [EOT], errors="replace", client=client) == \
        _local(bad_path, [EOT], errors="replace")


def test_invalid_utf8_past_the_line_scan_limit_is_named_without_its_line(client, tmp_path, monkeypatch):
    # the caller reads the file to find the line (the workers hold it): at most _LINE_SCAN_LIMIT bytes of it, the
    # line left out beyond; the path named as given
    good = make_corpus(81, 800, specials=[EOT]).encode()
    (tmp_path / "bad.txt").write_bytes(good + b"caf\xe9 au lait")
    monkeypatch.chdir(tmp_path)
    for limit, line in ((len(good) + 3, good.count(b"\n") + 1), (len(good) + 2, None)):
        monkeypatch.setattr(dask_counts, "_LINE_SCAN_LIMIT", limit)
        with pytest.raises(CorpusDecodeError) as info:
            count_pretokens("bad.txt", [EOT], chunk_bytes=500, client=client)
        assert (info.value.path, info.value.offset, info.value.line) == ("bad.txt", len(good) + 3, line)


# ---- a worker lost mid-count -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def slow_corpus(tmp_path_factory):
    """A file that takes the 2 workers about a second and a half: the regex path (a pattern the native
    scanner does not know) on 3 MB, and the local counts of it."""
    path = tmp_path_factory.mktemp("slow") / "slow.txt"
    generate(path, 3_000_000, seed=5)
    pattern = GPT2_PATTERN + "|x"
    return path, pattern, count_pretokens(path, [EOT], pattern=pattern, num_processes=2)


def _count_while_killing_a_worker(client, path, pattern):
    """Start counting in a thread; kill (SIGKILL) a worker while it runs a counting task; return the result or
    the error."""
    outcome = {}

    def run():
        try:
            outcome["counts"] = count_pretokens(path, [EOT], pattern=pattern, chunk_bytes=64 << 10, client=client)
        except Exception as exc:        # noqa: BLE001 - handed to the test
            outcome["error"] = exc

    thread = threading.Thread(target=run)
    pids = client.run(os.getpid)
    thread.start()
    deadline = time.monotonic() + 300          # the waits here guard against a hang only
    victim = None
    while victim is None and time.monotonic() < deadline and thread.is_alive():
        for worker, keys in client.processing().items():
            if any(str(k).startswith("bpe_fast-count-") for k in keys):
                victim = worker
                break
        else:
            time.sleep(0.005)
    assert victim is not None and thread.is_alive(), "the count ended before a worker could be killed"
    os.kill(pids[victim], signal.SIGKILL)
    thread.join(300)
    assert not thread.is_alive()
    return outcome


def _wait_for_two_workers(client):
    client.wait_for_workers(2, timeout=300)


def test_lost_worker_is_replaced_and_the_count_is_right(client, slow_corpus):
    path, pattern, want = slow_corpus
    try:
        outcome = _count_while_killing_a_worker(client, path, pattern)
        assert "error" not in outcome, outcome.get("error")
        assert outcome["counts"] == want
    finally:
        _wait_for_two_workers(client)


def test_cluster_that_cannot_finish_is_a_clear_error(client, cluster, slow_corpus):
    # no reruns allowed after a worker dies: the count must fail, not return what the other worker counted
    path, pattern, _ = slow_corpus
    allowed = cluster.scheduler.allowed_failures
    cluster.scheduler.allowed_failures = 0
    try:
        outcome = _count_while_killing_a_worker(client, path, pattern)
        assert "counts" not in outcome
        err = outcome["error"]
        assert isinstance(err, RuntimeError), repr(err)
        assert "no counts returned" in str(err) and "died" in str(err)
    finally:
        cluster.scheduler.allowed_failures = allowed
        _wait_for_two_workers(client)
    # the cluster is usable again
    assert count_pretokens(path, [EOT], client=client, chunk_bytes=1 << 20) == \
        count_pretokens(path, [EOT], num_processes=1)


def test_no_workers_and_a_timeout_is_a_clear_error(corpus_files):
    # Dask waits for workers by default (adaptive clusters start from zero); with no-workers-timeout it fails
    import dask

    with dask.config.set({"distributed.scheduler.no-workers-timeout": "200ms"}), \
            _local_cluster(n_workers=0, processes=False) as empty, \
            distributed.Client(empty) as client:
        with pytest.raises(RuntimeError, match="no counts returned: no worker could run a task"):
            count_pretokens(corpus_files[0], client=client)


def test_count_command_on_the_cluster_then_train_from_counts(cluster, client, corpus_files, tmp_path, capsys):
    from bpe_fast import Tokenizer
    from bpe_fast.cli import main
    out = tmp_path / "counts.npz"
    paths = [str(p) for p in corpus_files[:2]]
    assert main(["-q", "count", *paths, "--special-token", EOT, "--dask-scheduler", cluster.scheduler_address,
                 "-o", str(out)]) == 0, capsys.readouterr().err
    counts = PretokenCounts.load(out)
    assert counts == _local(paths, [EOT])
    assert main(["-q", "train", "--from-counts", str(out), "--vocab-size", "400", "-o", str(tmp_path / "t")]) == 0
    assert list(Tokenizer.load(tmp_path / "t").merges) == train_from_counts(counts, 400)[1]


def test_count_command_of_stdin_on_the_cluster_is_refused_clearly(cluster, tmp_path, capsys, monkeypatch):
    # `bpe-fast count - --dask-scheduler ...`: stdin is a Stream, a NamedTuple, which the Dask path took for a
    # tuple of paths: its fields were resolved as paths ("corpus file not found: text")
    import io
    from bpe_fast import cli
    from bpe_fast.inputs import InputError, Stream
    monkeypatch.setattr(cli, "_stdin", lambda: io.BytesIO(b"hello world"))
    assert main_count(cli, cluster, tmp_path) == 1
    err = capsys.readouterr().err
    # (the CLI names its flag, not client=: c598d09)
    assert "<stdin>: with --dask-scheduler, inputs must be uncompressed text files, not a stream (such as stdin)" in err, err
    with pytest.raises(InputError, match="<stdin>: with a Dask client"):
        count_pretokens(Stream("text", io.BytesIO(b"hello"), "<stdin>"), client=object())


def main_count(cli, cluster, tmp_path):
    return cli.main(["-q", "count", "-", "--dask-scheduler", cluster.scheduler_address, "-o",
                     str(tmp_path / "c.npz")])
