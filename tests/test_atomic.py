"""atomic_output: every output file appears whole or not at all."""
import os
import stat

import pytest

from bpe_fast.atomic import atomic_output


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


def test_a_missing_folder_names_the_target(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope"):
        with atomic_output(tmp_path / "nope" / "out.bin"):
            pass
