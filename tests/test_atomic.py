"""atomic_output: every output file appears whole or not at all."""
import os
import stat

import pytest

from bpe_fast.atomic import atomic_output, name_max, staged_key, staged_target


def test_success_replaces_the_file_with_usual_permissions(tmp_path):
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    with atomic_output(target) as f:
        f.write(b"new")
        assert target.read_bytes() == b"old"          # nothing visible until the block ends
    assert target.read_bytes() == b"new"
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~mask
    assert os.listdir(tmp_path) == ["out.bin"]


@pytest.mark.parametrize("error", [ValueError, KeyboardInterrupt])
def test_an_error_keeps_the_previous_file_and_no_temporary(tmp_path, error):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(error):
        with atomic_output(target, "w", encoding="utf-8") as f:
            f.write("half")
            raise error()
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["out.txt"]


@pytest.mark.parametrize("name", ["a.npy", "a b.npy", "x\ny.npy"])
def test_staged_target_names_the_output_of_a_temporary_file(tmp_path, name):
    # what encode_files removes after a killed run: the temporary file of an output whose name held a newline
    # was not taken for its (the pattern's "." stopped at it), and stayed
    with atomic_output(tmp_path / name) as f:
        [entry] = os.listdir(tmp_path)
        assert staged_target(entry) == name
        f.write(b"x")
    assert staged_target(name) is None and staged_target("index.json") is None


def test_a_name_too_long_for_a_temporary_file_beside_it_is_written(tmp_path):
    # a valid name of over 241 bytes: "." + name + "." + 8 characters + ".tmp" was too long, and mkstemp failed
    # with ENAMETOOLONG although the output itself could be made
    name = "\u00e9" * ((name_max(str(tmp_path)) - 4) // 2) + ".npy"        # 254 bytes where names take 255
    with atomic_output(tmp_path / name) as f:
        [entry] = os.listdir(tmp_path)
        assert len(os.fsencode(entry)) <= name_max(str(tmp_path))
        assert staged_target(entry) == staged_key(name, str(tmp_path)) != name
        assert name.startswith(staged_key(name, str(tmp_path))[:-1])
        f.write(b"x")
    assert os.listdir(tmp_path) == [name] and (tmp_path / name).read_bytes() == b"x"
    assert staged_key("a.npy", str(tmp_path)) == "a.npy"


def test_a_name_too_long_for_the_folder_is_refused_before_the_block(tmp_path):
    ran = []
    with pytest.raises(OSError, match=r"the name is too long \(300 bytes; at most \d+ here\)") as caught:
        with atomic_output(tmp_path / ("a" * 300)):
            ran.append(True)
    assert caught.value.filename == str(tmp_path / ("a" * 300)) and not ran and os.listdir(tmp_path) == []


def test_a_missing_folder_names_the_target(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope"):
        with atomic_output(tmp_path / "nope" / "out.bin"):
            pass


def test_a_symbolic_link_is_written_through(tmp_path):
    (tmp_path / "disk").mkdir()
    real = tmp_path / "disk" / "tokens.npy"
    real.write_bytes(b"old")
    link = tmp_path / "tokens.npy"
    link.symlink_to(real)
    with atomic_output(link) as f:
        f.write(b"new")
    assert link.is_symlink() and real.read_bytes() == b"new"
    assert sorted(os.listdir(tmp_path / "disk")) == ["tokens.npy"]
    dangling = tmp_path / "later.npy"
    dangling.symlink_to(tmp_path / "disk" / "later.npy")
    with atomic_output(dangling) as f:
        f.write(b"made")
    assert dangling.is_symlink() and (tmp_path / "disk" / "later.npy").read_bytes() == b"made"


def _read_fifo(path, got):
    with open(path, "rb") as f:
        got.append(f.read())


def test_a_named_pipe_is_written_to_not_replaced(tmp_path):
    # renaming over what is not a regular file put a file in its place (as root: /dev/null, /dev/full too)
    import threading

    from bpe_fast.file_encoding import write_npy
    import numpy as np

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for write, want in [(lambda f: f.write(b"through"), b"through"),
                        (lambda f: write_npy(f, np.int32, iter([np.arange(3, dtype=np.int32)] * 2)), None)]:
        got = []
        reader = threading.Thread(target=_read_fifo, args=(fifo, got), daemon=True)
        reader.start()
        with atomic_output(fifo) as f:
            write(f)
        reader.join(10)
        assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and os.listdir(tmp_path) == ["pipe"]
        if want is not None:
            assert got == [want]
        else:          # a .npy needs no seek back to its header when the file cannot seek
            import io
            assert np.load(io.BytesIO(got[0])).tolist() == [0, 1, 2, 0, 1, 2]


def test_a_group_is_all_or_nothing(tmp_path):
    from bpe_fast.atomic import output_group

    for name in ("a", "b"):
        (tmp_path / name).write_text("old")
    with pytest.raises(OSError):
        with output_group() as group:
            with group.output(tmp_path / "a", "w") as f:
                f.write("new")
            raise OSError(28, "No space left on device")    # before the second file is written
    assert [(tmp_path / n).read_text() for n in ("a", "b")] == ["old", "old"]
    with output_group() as group:
        for name in ("a", "b"):
            with group.output(tmp_path / name, "w") as f:
                f.write("new")
        group.remove(tmp_path / "c")                         # not there: nothing to remove
        assert [(tmp_path / n).read_text() for n in ("a", "b")] == ["old", "old"]
    assert [(tmp_path / n).read_text() for n in ("a", "b")] == ["new", "new"]
    assert sorted(os.listdir(tmp_path)) == ["a", "b"]



def test_a_refused_rename_names_the_target_not_the_temporary_file(tmp_path):
    """A rename the system refuses (here the target became a folder while its file was written) raised naming
    the temporary file (.b.x1y2z3a4.tmp, which is then removed), and did not say the group was left mixed."""
    from bpe_fast.atomic import atomic_output, output_group

    with pytest.raises(IsADirectoryError) as raised:
        with atomic_output(tmp_path / "c", "w") as f:
            f.write("c")
            (tmp_path / "c").mkdir()
    assert raised.value.filename == str(tmp_path / "c") and ".tmp" not in str(raised.value)
    with pytest.raises(IsADirectoryError) as raised:
        with output_group() as group:
            for name in ("a", "b"):
                with group.output(tmp_path / name, "w") as f:
                    f.write(name)
            (tmp_path / "b").mkdir()
            (tmp_path / "b" / "inside").write_text("x")
    assert raised.value.filename == str(tmp_path / "b") and ".tmp" not in str(raised.value)
    # the group's renames before it undone: "a" was not there, and is not (helper-151: a save failing between
    # two renames left half of each save, which neither loaded)
    assert f"{tmp_path / 'a'} put back as they were" in str(raised.value)
    assert sorted(os.listdir(tmp_path)) == ["b", "c"]         # no temporary file left


def test_a_failed_rename_puts_back_the_files_the_group_replaced_before_it(tmp_path):
    from bpe_fast.atomic import output_group

    for name in ("a", "b", "c"):
        (tmp_path / name).write_text(f"old {name}")
    link = tmp_path / "a-link"
    os.link(tmp_path / "a", link)                  # the old "a" by another name: its inode is kept
    with pytest.raises(IsADirectoryError) as raised:
        with output_group() as group:
            for name in ("a", "b", "c"):
                with group.output(tmp_path / name, "w") as f:
                    f.write(f"new {name}")
            (tmp_path / "c").unlink()
            (tmp_path / "c").mkdir()               # the third rename fails
            (tmp_path / "c" / "inside").write_text("x")
    assert "put back as they were" in str(raised.value)
    assert [(tmp_path / name).read_text() for name in ("a", "b")] == ["old a", "old b"]
    assert os.path.samefile(tmp_path / "a", link)
    assert sorted(os.listdir(tmp_path)) == ["a", "a-link", "b", "c"]       # no link aside, no temporary file
    with output_group() as group:                  # and a group that succeeds leaves no link aside either
        for name in ("a", "b"):
            with group.output(tmp_path / name, "w") as f:
                f.write(f"new {name}")
    assert sorted(os.listdir(tmp_path)) == ["a", "a-link", "b", "c"] and (tmp_path / "a-link").read_text() == "old a"


def test_a_group_refuses_a_target_that_is_not_a_regular_file(tmp_path):
    # save into a folder whose merges.txt was a named pipe waited for a reader forever; one whose file was a
    # link to /dev/null "saved" what the load then refused (helper-151)
    from bpe_fast import Tokenizer
    tok = Tokenizer({i: bytes([i]) for i in range(256)}, [])
    (tmp_path / "t").mkdir()
    os.mkfifo(tmp_path / "t" / "merges.txt")
    with pytest.raises(OSError, match="is not a regular file; the files of a folder are replaced together"):
        tok.save(tmp_path / "t")
    assert sorted(os.listdir(tmp_path / "t")) == ["merges.txt"]


def _group_renamed_under_signals(tmp_path, monkeypatch, signals):
    """Write files a and b as an output group whose first rename sends `signals` to this process; the names
    renamed, in order (the group's KeyboardInterrupt expected)."""
    from bpe_fast import atomic

    real = os.replace
    renamed = []

    def replace(source, target):
        if not renamed:
            for number in signals:
                os.kill(os.getpid(), number)
        real(source, target)
        renamed.append(os.path.basename(target))

    monkeypatch.setattr(atomic.os, "replace", replace)
    with pytest.raises(KeyboardInterrupt):
        with atomic.output_group() as group:
            for name in ("a", "b"):
                with group.output(tmp_path / name, "w") as f:
                    f.write(name)
    return renamed


def test_a_signal_during_a_groups_renames_waits_until_every_file_is_renamed(tmp_path, monkeypatch):
    """Ctrl-C between two renames left the first file new and the second old (a tokenizer's new vocab.json
    beside its old merges.txt), and the second's temporary file behind."""
    import signal

    assert _group_renamed_under_signals(tmp_path, monkeypatch, [signal.SIGINT]) == ["a", "b"]
    assert sorted(os.listdir(tmp_path)) == ["a", "b"]


def test_signals_noted_during_the_renames_are_all_handled_after(tmp_path, monkeypatch):
    """SIGTERM and SIGINT both during the renames: each handler runs after them (re-raising SIGINT first
    threw KeyboardInterrupt before SIGTERM was raised again, so its handler never ran)."""
    import signal

    handled = []
    previous = signal.signal(signal.SIGTERM, lambda number, frame: handled.append(number))
    try:
        renamed = _group_renamed_under_signals(tmp_path, monkeypatch, [signal.SIGINT, signal.SIGTERM])
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert renamed == ["a", "b"] and handled == [signal.SIGTERM]
    assert sorted(os.listdir(tmp_path)) == ["a", "b"]


def test_an_interruption_before_the_renames_removes_the_temporary_files(tmp_path, monkeypatch):
    from bpe_fast import atomic

    def interrupted():
        raise KeyboardInterrupt
    monkeypatch.setattr(atomic, "_signals_deferred", interrupted)      # Ctrl-C as the commit begins
    with pytest.raises(KeyboardInterrupt):
        with atomic.output_group() as group:
            with group.output(tmp_path / "a", "w") as f:
                f.write("a")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_the_umask_is_read_without_setting_it(tmp_path, monkeypatch, mask):
    # reading the umask by setting it to 0 and back left a moment when a file made by another thread got mode
    # 0666: on Linux it is read from /proc/self/status; the files written follow the umask as it is
    import bpe_fast.atomic as A

    old = os.umask(mask)
    try:
        calls = []
        real = os.umask
        monkeypatch.setattr(os, "umask", lambda m: calls.append(m) or real(m))
        assert A._umask() == mask
        if os.path.exists("/proc/self/status"):
            assert calls == []
        with atomic_output(tmp_path / "f") as f:
            f.write(b"x")
        assert stat.S_IMODE((tmp_path / "f").stat().st_mode) == 0o666 & ~mask
    finally:
        os.umask(old)


def test_links_aside_leave_no_trace_and_draw_no_random_numbers(tmp_path):
    # helper-153: the links were named with the random module (a seeded caller's next numbers changed when a save
    # replaced files), and those a killed commit left were never removed (each an old file's blocks)
    import random
    from bpe_fast import Tokenizer
    tok = Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"ab"}, [(b"a", b"b")])
    tok.save(tmp_path / "t")
    stale = tmp_path / "t" / ".vocab.json.0123abcd.old"
    os.link(tmp_path / "t" / "vocab.json", stale)
    random.seed(1234)
    tok.save(tmp_path / "t")
    drawn = random.random()
    random.seed(1234)
    assert drawn == random.random()
    assert sorted(os.listdir(tmp_path / "t")) == ["bpe_fast.json", "merges.txt", "vocab.json"]


def test_a_group_writes_a_lone_output_into_what_is_not_a_regular_file(tmp_path):
    # only a folder written as a set refuses a pipe or a device: report -o /dev/null failed after the work
    # (helper-153)
    from bpe_fast import Tokenizer, write_report
    tok = Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"ab"}, [(b"a", b"b")])
    result = write_report(tok, "ab ab abc", "/dev/null")
    assert result["bytes"] == 9
