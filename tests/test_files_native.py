"""bpe_fast._files (the native stat and read loops behind lists and folders of small files) against plain Python:
os.stat, open().read(), for every kind of path the listing and the workers may meet."""
import errno
import os
import pathlib
import stat

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from bpe_fast import GPT2_PATTERN
from bpe_fast._files import DIRECTORY, MISSING, NOT_REGULAR, OTHER, REGULAR, SHORTER, read_files, stat_paths
from bpe_fast.inputs import Stream, TextFile, file_sizes, resolve_inputs


def oracle_stat(path):
    """(kind, size, errno) as stat_paths gives them, from os.stat."""
    try:
        st_ = os.stat(path)
    except OSError as exc:
        return MISSING, 0, exc.errno
    if stat.S_ISREG(st_.st_mode):
        return REGULAR, st_.st_size, 0
    return (DIRECTORY if stat.S_ISDIR(st_.st_mode) else OTHER), 0, 0


def native_stat(paths):
    kinds, sizes, errnos = stat_paths([os.fsencode(p) for p in paths])
    return list(zip(kinds.tolist(), sizes.tolist(), errnos.tolist()))


def read(paths, sizes, whole):
    """read_files, its data as bytes (a uint8 array of exactly the bytes read: checked here)."""
    data, bounds, failed, error = read_files([os.fsencode(p) for p in paths], np.array(sizes, dtype=np.int64),
                                             np.array(whole, dtype=np.uint8))
    assert data.dtype == np.uint8 and data.ndim == 1 and len(data) == bounds[-1]
    return data.tobytes(), bounds, failed, error


@pytest.fixture
def zoo(tmp_path):
    """Every kind of path: files (empty, small, larger than the first buffer), a folder, a pipe, links."""
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "small.txt").write_bytes(b"hello world\n")
    (tmp_path / "big.txt").write_bytes(bytes(range(256)) * 300)       # 76,800 bytes: the buffer grows
    (tmp_path / "folder").mkdir()
    os.mkfifo(tmp_path / "pipe")
    os.symlink(tmp_path / "small.txt", tmp_path / "link.txt")
    os.symlink(tmp_path / "nowhere.txt", tmp_path / "dangling.txt")
    os.symlink(tmp_path / "loop-a", tmp_path / "loop-b")
    os.symlink(tmp_path / "loop-b", tmp_path / "loop-a")
    names = ["empty.txt", "small.txt", "big.txt", "folder", "pipe", "link.txt", "dangling.txt", "loop-a",
             "missing.txt", "small.txt/under"]
    return [str(tmp_path / n) for n in names]


def test_stat_paths_says_what_os_stat_says(zoo):
    assert native_stat(zoo) == [oracle_stat(p) for p in zoo]
    kinds = [k for k, _, _ in native_stat(zoo)]
    assert kinds == [REGULAR, REGULAR, REGULAR, DIRECTORY, OTHER, REGULAR, MISSING, MISSING, MISSING, MISSING]
    assert native_stat([]) == []


def test_file_sizes_gives_none_for_anything_not_a_regular_file_and_for_a_name_holding_nul(zoo):
    sizes = file_sizes(zoo + [zoo[1] + "\0x", "\0"])
    assert sizes == [0, 12, 76800, None, None, 12, None, None, None, None, None, None]


def test_stat_paths_takes_bytes_only():
    with pytest.raises(TypeError, match="paths must be bytes, got str"):
        stat_paths(["a.txt"])
    with pytest.raises(TypeError, match="got bytearray"):
        read_files([bytearray(b"a")], np.zeros(1, np.int64), np.ones(1, np.uint8))
    with pytest.raises(ValueError, match="2 paths, 1 sizes and 2 whole flags"):
        read_files([b"a", b"b"], np.zeros(1, np.int64), np.ones(2, np.uint8))


def test_read_files_reads_whole_files_as_they_are_now_whatever_the_size_planned(zoo):
    files = [zoo[0], zoo[1], zoo[2], zoo[5], zoo[2]]
    truth = [open(p, "rb").read() for p in files]
    for planned in ([0] * 5, [len(t) for t in truth], [10 ** 6] * 5, [3, 0, 5000, 1, 70000]):
        data, bounds, failed, error = read(files, planned, [1] * 5)
        assert (failed, error) == (-1, 0)
        assert [data[bounds[k]:bounds[k + 1]] for k in range(5)] == truth
        assert bounds.tolist() == np.cumsum([0] + [len(t) for t in truth]).tolist()


def test_read_files_reads_the_planned_size_of_a_file_not_whole_and_says_when_it_holds_fewer(zoo):
    data, bounds, failed, error = read([zoo[2], zoo[1]], [1000, 5], [0, 0])
    assert (data, bounds.tolist(), failed, error) == (bytes(range(256)) * 3 + bytes(range(232)) + b"hello",
                                                      [0, 1000, 1005], -1, 0)
    data, bounds, failed, error = read([zoo[2], zoo[1], zoo[2]], [7, 13, 1], [0, 0, 0])
    assert (data, bounds.tolist(), failed, error) == (bytes(range(7)), [0, 7], 1, SHORTER)


@pytest.mark.parametrize("index, expected", [(3, errno.EISDIR), (4, NOT_REGULAR), (6, errno.ENOENT),
                                             (7, errno.ELOOP), (8, errno.ENOENT), (9, errno.ENOTDIR)])
def test_read_files_names_the_first_file_it_cannot_read_and_keeps_the_ones_before(zoo, index, expected):
    # a pipe is refused without waiting for a writer (opened non-blocking)
    files = [zoo[1], zoo[2], zoo[index], zoo[0]]
    data, bounds, failed, error = read(files, [0] * 4, [1] * 4)
    assert (failed, error) == (2, expected)
    assert data == open(zoo[1], "rb").read() + open(zoo[2], "rb").read()
    assert bounds.tolist() == [0, 12, 12 + 76800]


settings_ = settings(max_examples=60, deadline=None,     # (naming the health checks: too_slow too, see conftest)
                     suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


# contents up to about 19 KB (past a plan of 10,000 and past one file's share) from a short piece repeated: random
# bytes of that size a file exceeded hypothesis's entropy limit (data_too_large) in some runs
CONTENTS = st.builds(lambda piece, times: piece * times, st.binary(max_size=300), st.integers(1, 64))


@settings_
@given(st.lists(st.tuples(CONTENTS, st.booleans(), st.integers(0, 10 ** 4)), min_size=1, max_size=12))
def test_read_files_is_open_read_for_any_files(tmp_path, files):
    paths, sizes, whole, truth = [], [], [], []
    for k, (content, is_whole, planned) in enumerate(files):
        path = tmp_path / f"h{k}.bin"
        path.write_bytes(content)
        paths.append(str(path))
        whole.append(is_whole)
        sizes.append(planned if is_whole else min(planned, len(content)))
        truth.append(content if is_whole else content[:sizes[-1]])
    data, bounds, failed, error = read(paths, sizes, whole)
    assert (failed, error) == (-1, 0)
    assert [data[bounds[k]:bounds[k + 1]] for k in range(len(files))] == truth


def test_a_listed_file_that_became_a_pipe_is_refused_naming_it_without_waiting(tmp_path, monkeypatch):
    import bpe_fast.count_workers as cw
    (tmp_path / "a.txt").write_text("one two three", encoding="utf-8")
    os.mkfifo(tmp_path / "b.txt")
    files = [(str(tmp_path / "a.txt"), 13, True), (str(tmp_path / "b.txt"), 10, True)]
    with pytest.raises(OSError, match=r"no longer a regular file.*b\.txt") as info:
        cw.count_small_files_tables(files, [], GPT2_PATTERN, 1, "strict", None)
    assert info.value.errno == errno.EINVAL and info.value.filename == str(tmp_path / "b.txt")


def test_a_list_of_paths_is_resolved_with_the_sizes_listed_and_each_kind_as_before(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"abc")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "x.txt").write_bytes(b"xy")
    (tmp_path / "sub" / "y.txt").write_bytes(b"")
    (tmp_path / "c.jsonl").write_bytes(b'{"text": "hi"}\n')
    sources = resolve_inputs([str(tmp_path / "a.txt"), str(tmp_path / "sub"), tmp_path / "c.jsonl",
                              os.fsencode(tmp_path / "sub" / "*.txt")])
    assert sources[:3] == [TextFile(str(tmp_path / "a.txt"), 3), TextFile(str(tmp_path / "sub" / "x.txt"), 2),
                           TextFile(str(tmp_path / "sub" / "y.txt"), 0)]
    assert sources[3].kind == "jsonl" and sources[4:] == sources[1:3]
    with pytest.raises(FileNotFoundError, match="gone"):
        resolve_inputs([str(tmp_path / "a.txt"), str(tmp_path / "gone")])


def test_a_list_of_regular_files_of_every_kind_is_resolved_as_each_path_alone(tmp_path):
    # a list of regular files only takes a shorter road (_sources_of_files: TextFile made at once for a plain
    # name); each path resolved on its own (_resolve_path, _source_of) is the oracle, whatever the item's type
    import gzip
    contents = {"a.txt": b"abc", "B.TXT": b"de", "c.md": b"", "d.jsonl": b'{"text": "hi"}\n',
                "e.json": b'{"text": "json lines"}\n', "f.json": b"plain text, not a record\n",
                "g.txt.gz": gzip.compress(b"zipped"), "h.JSONL.GZ": gzip.compress(b'{"text": "z"}\n'),
                "i": b"no suffix", "j.tar": b"x"}
    for name, data in contents.items():
        (tmp_path / name).write_bytes(data)
    paths = [str(tmp_path / name) for name in contents]
    items = [p if k % 3 == 0 else os.fsencode(p) if k % 3 == 1 else pathlib.Path(p) for k, p in enumerate(paths)]
    alone = [source for p in paths for source in resolve_inputs(p)]
    assert resolve_inputs(items) == alone
    kinds = ["text"] * 3 + ["jsonl"] * 2 + ["text"] + ["compressed text", "jsonl"] + ["text"] * 2
    assert [s.kind if isinstance(s, Stream) and s.kind == "jsonl" else "compressed text" if isinstance(s, Stream)
            else "text" for s in alone] == kinds
    assert [s.size for s in alone if isinstance(s, TextFile)] == [len(contents[n]) for n, k in zip(contents, kinds)
                                                                  if k == "text"]


def test_paths_holding_nul_are_refused_as_einval_not_cut_short(tmp_path):
    (tmp_path / "a").write_bytes(b"abc")
    cut = os.fsencode(tmp_path / "a") + b"\0tail"       # a C string would read it as .../a
    kinds, _, errnos = stat_paths([cut])
    assert (kinds.tolist(), errnos.tolist()) == ([MISSING], [errno.EINVAL])
    assert read_files([cut], np.zeros(1, np.int64), np.ones(1, np.uint8))[2:] == (0, errno.EINVAL)


def test_stat_paths_by_parts_in_two_threads_is_the_same_as_at_once(zoo, monkeypatch):
    import bpe_fast.inputs as inputs
    many = zoo * 7
    whole = file_sizes(many)
    monkeypatch.setattr(inputs, "_STAT_IN_TWO", 2)
    assert file_sizes(many) == whole == [oracle_stat(p)[1] if oracle_stat(p)[0] == REGULAR else None for p in many]
    encoded = [os.fsencode(p) for p in many]
    arrays = (np.zeros(len(many), np.int8), np.zeros(len(many), np.int64), np.zeros(len(many), np.int32))
    stat_paths(encoded, 5, 40, *arrays)
    stat_paths(encoded, 0, 5, *arrays)
    stat_paths(encoded, 40, None, *arrays)
    assert all((a == b).all() for a, b in zip(arrays, stat_paths(encoded)))
    with pytest.raises(ValueError, match="70 paths and arrays of 3"):
        stat_paths(encoded, 0, None, np.zeros(3, np.int8), *arrays[1:])


def test_a_file_replaced_by_a_pipe_or_a_folder_after_listing_is_refused_on_every_path_without_waiting(
        tmp_path, monkeypatch):
    # helper-117: a max_bytes cap ending inside it (its character boundary looked for) and a file listed large
    # enough for byte ranges (count_file_tables) opened it blocking, waiting for a writer for ever; a folder in
    # its place is IsADirectoryError, as open() says
    import bpe_fast.count_workers as cw
    from bpe_fast.inputs import Budget, open_regular
    os.mkfifo(tmp_path / "pipe.txt")
    (tmp_path / "dir.txt").mkdir()
    (tmp_path / "ok.txt").write_bytes(b"abc")
    with open_regular(str(tmp_path / "ok.txt")) as f:
        assert f.read() == b"abc"
    with pytest.raises(OSError, match=r"no longer a regular file.*pipe\.txt") as info:
        open_regular(str(tmp_path / "pipe.txt"))
    assert info.value.errno == errno.EINVAL
    with pytest.raises(IsADirectoryError, match=r"dir\.txt"):
        open_regular(str(tmp_path / "dir.txt"))
    with pytest.raises(OSError, match=r"pipe\.txt"):        # listed with 400 bytes, the cap ends inside
        cw._capped_size(TextFile(str(tmp_path / "pipe.txt"), 400), Budget(100, None))
    with pytest.raises(OSError, match=r"pipe\.txt"):
        cw.count_file_tables(str(tmp_path / "pipe.txt"), [], GPT2_PATTERN, 2, "strict", None, None, size=5 << 20)
    with pytest.raises(IsADirectoryError, match=r"dir\.txt"):
        cw.count_small_files_tables([(str(tmp_path / "ok.txt"), 3, True), (str(tmp_path / "dir.txt"), 9, True)],
                                    [], GPT2_PATTERN, 1, "strict", None)


def test_the_first_bad_file_is_found_a_piece_at_a_time_and_progress_ends_once(tmp_path, monkeypatch):
    # helper-117: the failing file was looked for by reading every file before it at once (memory as large as
    # the corpus: 1 GB for 525 MB of files); and with one claimant the last progress report came twice
    import bpe_fast.count_workers as cw
    sizes = []
    real = cw._read_files
    monkeypatch.setattr(cw, "_read_files", lambda files: sizes.append(sum(s for _, s, _ in files)) or real(files))
    monkeypatch.setattr(cw, "_IN_PROCESS_BYTES", 1000)
    files = []
    for k in range(40):
        path = tmp_path / f"f{k:02d}.txt"
        path.write_bytes((b"word %d " % k) * 50000 if k != 33 else b"ok \xff")     # 350 KB a file
        files.append((str(path), os.path.getsize(path), True))
    with pytest.raises(cw.CorpusDecodeError, match=r"f33\.txt"):
        cw.count_small_files_tables(files, [], GPT2_PATTERN, 2, "strict", None)
    assert max(sizes) < 3 << 20, sizes
    reports = []
    cw.count_small_files_tables(files[:3], [], GPT2_PATTERN, 1, "strict", lambda *r: reports.append(r))
    total = sum(s for _, s, _ in files[:3])
    assert reports[-1] == ("count", total, total) and reports.count(("count", total, total)) == 1, reports


def test_a_file_grown_past_the_plan_is_read_again_into_a_larger_buffer(tmp_path):
    # the buffer is sized by the plan (each file's listed size + 1); a file grown since is read again whole
    # into a buffer grown for it, the files before it kept
    sizes = [10, 70_000, 5, 300_000]
    for k, n in enumerate(sizes):
        (tmp_path / f"g{k}").write_bytes(bytes([65 + k]) * n)
    paths = [str(tmp_path / f"g{k}") for k in range(4)]
    data, bounds, failed, error = read(paths, [10, 3, 5, 1], [1, 1, 1, 1])
    assert (failed, error) == (-1, 0)
    assert data == b"".join(bytes([65 + k]) * n for k, n in enumerate(sizes))
    assert bounds.tolist() == np.cumsum([0] + sizes).tolist()


def test_read_files_refuses_a_plan_past_any_memory_as_out_of_memory(tmp_path):
    # the planned sizes' sum overflowed int64 and numpy was asked for a negative size (ValueError)
    paths = [os.fsencode(tmp_path / name) for name in "ab"]
    for path in paths:
        open(path, "wb").close()
    data, bounds, failed, error = read_files(paths, np.full(2, 2**63 - 1, dtype=np.int64), np.ones(2, np.uint8))
    assert (len(data), failed, error) == (0, 0, errno.ENOMEM)


# ---- encode_file: its workers and its output ------------------------------------------------------------------

@pytest.mark.parametrize("pattern", [GPT2_PATTERN, r"\w+|\s+|[^\w\s]+"], ids=["threads", "processes (regex)"])
def test_encode_file_stops_its_workers_when_writing_the_array_fails(tmp_path, monkeypatch, pattern):
    # an error while the array was written (a full disk, Ctrl-C during a write) left the range generator suspended
    # with its pool open: while the error was kept (a REPL's last exception, a caller's log), the worker threads,
    # or the worker processes with a copy of the tokenizer each, stayed
    import multiprocessing
    import threading
    import bpe_fast.file_encoding as fe
    from bpe_fast import Tokenizer, encode_file
    tok = Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|endoftext|>"], pattern=pattern)
    src = tmp_path / "in.txt"
    src.write_bytes(b"some words and more words<|endoftext|>" * 8000)     # (cut at spaces, or special tokens only)

    def full_disk(*args):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(fe, "start_writeback", full_disk)
    monkeypatch.setattr(fe, "_WRITEBACK_BYTES", 1)
    before = set(multiprocessing.active_children())
    with pytest.raises(OSError, match="No space left") as kept:
        encode_file(tok, src, tmp_path / "out.npy", num_processes=2, chunk_bytes=4000)
    assert kept.value is not None       # (the error, its traceback and the frames it holds, still alive here)
    assert set(multiprocessing.active_children()) - before == set()
    assert [t.name for t in threading.enumerate() if t.name.startswith("bpe_fast-encode")] == []
    assert sorted(os.listdir(tmp_path)) == ["in.txt"]
