"""write_atomic: the old file or the whole new one, never a part; the one writer of the config file,
the engine cache and the fleet agent's saved versions."""
from __future__ import annotations

import os
import stat

import pytest

from edge_app.process.atomic_file import temp_name_pattern, write_atomic


def test_it_replaces_whole_files_and_leaves_no_temporaries(tmp_path):
    target = tmp_path / "sub" / "file.bin"
    write_atomic(target, b"first", make_folder=True)
    write_atomic(target, b"second")
    assert target.read_bytes() == b"second"
    assert sorted(p.name for p in target.parent.iterdir()) == ["file.bin"]


def test_a_missing_folder_is_an_error_unless_asked_for(tmp_path):
    with pytest.raises(FileNotFoundError):
        write_atomic(tmp_path / "missing" / "file.bin", b"x")
    assert not (tmp_path / "missing").exists()


@pytest.mark.parametrize("failing", ["replace", "fsync"])
def test_the_old_file_stays_when_writing_fails(tmp_path, monkeypatch, failing):
    target = tmp_path / "file.bin"
    write_atomic(target, b"old")

    def broken(*_args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, failing, broken)
    with pytest.raises(OSError):
        write_atomic(target, b"new")
    monkeypatch.undo()
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["file.bin"]


def test_the_new_file_keeps_the_old_ones_permissions(tmp_path):
    target = tmp_path / "secret.yaml"
    write_atomic(target, b"old")
    target.chmod(0o600)
    write_atomic(target, b"new")
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


@pytest.mark.parametrize("name, own", [
    (".config.yaml.k2j4_x9.tmp", True),
    (".config.yaml.k2j4_x9", False),  # not a temp file of this writer
    (".config.yaml..tmp", False),
    (".other.yaml.k2j4.tmp", False),
    ("config.yaml", False),
])
def test_temp_name_pattern(tmp_path, name, own):
    assert bool(temp_name_pattern(tmp_path / "config.yaml").fullmatch(name)) is own
