"""Files written whole or not at all (results/files.py)."""

import errno

import pytest

from results import files


def test_a_file_is_replaced_whole(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text("old\n")
    files.write_atomic(path, "new\n")
    assert path.read_text() == "new\n"
    assert [p.name for p in tmp_path.iterdir()] == ["results.jsonl"]


def test_a_write_that_runs_out_of_space_keeps_the_old_file_and_names_the_new(tmp_path):
    path = tmp_path / "results.parquet"
    path.write_text("old")
    with pytest.raises(files.DiskError) as got:
        with files.replacing(path) as tmp:
            tmp.write_text("half")
            raise OSError(errno.ENOSPC, "No space left on device")
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["results.parquet"]
    assert str(got.value) == (f"{path}: no space left on device: free some space on its "
                              "filesystem (df -h) and run again")


def test_other_errors_pass_through_and_leave_nothing(tmp_path):
    path = tmp_path / "x"
    with pytest.raises(ValueError):
        with files.replacing(path) as tmp:
            tmp.write_text("half")
            raise ValueError("a bug")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(files.DiskError, match="read-only file system: check the filesystem"):
        with files.replacing(path):
            raise OSError(errno.EROFS, "Read-only file system")
