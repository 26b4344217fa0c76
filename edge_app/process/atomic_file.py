"""Writing a file so that a power cut or a kill leaves the old file or the whole new one, never a part.

A temp file beside the target (``.<name>.<random>.tmp``, so the same file system and a name that
``temp_name_pattern`` recognises for cleaning up after a kill), written and fsynced, given the
target's permissions, renamed over it, and the folder fsynced so the rename itself survives a
power cut. A failure removes the temp file and raises.
"""
from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

TEMP_SUFFIX = ".tmp"
#: tempfile's random part of a temp file's name
TEMP_RANDOM_PATTERN = r"[A-Za-z0-9_]{1,32}"


def temp_prefix(path: Path) -> str:
    return f".{path.name}."


def temp_name_pattern(path: Path) -> "re.Pattern[str]":
    """The names :func:`write_atomic` gives its temp files beside ``path``."""
    return re.compile(re.escape(temp_prefix(path)) + TEMP_RANDOM_PATTERN + re.escape(TEMP_SUFFIX))


def write_atomic(path: Path, data: bytes, *, make_folder: bool = False) -> None:
    """Replace ``path`` with ``data`` in one step; OSError when it cannot. ``make_folder``: create
    the folder when it is missing (otherwise that is an error)."""
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    if make_folder:
        directory.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=temp_prefix(path), suffix=TEMP_SUFFIX, dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if path.exists():
            os.chmod(tmp_name, path.stat().st_mode & 0o777)
        os.replace(tmp_name, path)
    except BaseException:
        try:
            os.unlink(tmp_name)
        except FileNotFoundError:
            pass
        raise
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
