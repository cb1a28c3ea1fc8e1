"""Output paths are checked before any work, on the real file system."""

from __future__ import annotations

import os

import pytest

from common.errors import InputError
from common.outpath import check_output_file, check_output_folder


def test_a_folder_to_make_is_accepted_and_nothing_is_left_behind(tmp_path):
    check_output_folder(tmp_path / "a" / "b", "--out")
    assert list(tmp_path.iterdir()) == []


def test_an_existing_folder_keeps_its_files_and_gets_no_probe(tmp_path):
    (tmp_path / "report.html").write_text("x")
    check_output_folder(tmp_path, "--out")
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux /proc")
def test_a_folder_the_file_system_refuses_is_an_error_even_for_root():
    # /proc is writable by permission bits for root, but nothing can be made there.
    with pytest.raises(InputError, match=r"^--out /proc/headstart-x: cannot write there"):
        check_output_folder("/proc/headstart-x", "--out")


def test_a_file_where_a_folder_is_wanted_is_an_error(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(InputError, match="is a file; name a folder"):
        check_output_folder(tmp_path / "f", "--out")
    with pytest.raises(InputError, match="is a file, not a folder"):
        check_output_folder(tmp_path / "f" / "sub", "--out")


def test_an_output_file_in_a_missing_folder_is_an_error(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        check_output_file(tmp_path / "missing" / "x.csv", "--out")
    check_output_file(tmp_path / "x.csv", "--out")
    assert not (tmp_path / "x.csv").exists()
