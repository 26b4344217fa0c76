"""Folders the event store cannot write to: a read-only one and a tiny full one.

Both are tmpfs mounts, which needs root (this project's test machines run as root); without
root the read-only folder falls back to file permissions and the full disk is skipped.
"""
from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from pathlib import Path
from typing import Iterator

from testkit.skips import missing


def _mount(target: Path, options: str) -> bool:
    if os.geteuid() != 0:
        return False
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(target)], capture_output=True)
    return done.returncode == 0


def _umount(target: Path) -> None:
    subprocess.run(["umount", "-l", str(target)], capture_output=True)


@contextlib.contextmanager
def read_only_folder(target: Path) -> Iterator[str]:
    """Yield how the folder was made read-only: "ro-mount" (tmpfs mounted ro) or "chmod"."""
    target.mkdir(parents=True, exist_ok=True)
    if _mount(target, "ro,size=64k"):
        try:
            yield "ro-mount"
        finally:
            _umount(target)
        return
    target.chmod(0o500)
    try:
        yield "chmod"
    finally:
        target.chmod(0o700)


@contextlib.contextmanager
def tiny_filesystem(target: Path, size_kb: int) -> Iterator[Path]:
    """A tmpfs of ``size_kb`` at ``target``; skips the test when it cannot be mounted."""
    target.mkdir(parents=True, exist_ok=True)
    if not _mount(target, f"size={size_kb}k"):
        missing("mounting a tmpfs needs root")
    try:
        yield target
    finally:
        _umount(target)


def fill(folder: Path) -> Path:
    """Write a file until the filesystem is full; returns it (delete it to give the space back)."""
    filler = folder / "filler"
    with open(filler, "wb", buffering=0) as fh:
        try:
            while True:
                fh.write(b"\0" * 4096)
        except OSError as err:
            assert err.errno == errno.ENOSPC, err
    return filler
