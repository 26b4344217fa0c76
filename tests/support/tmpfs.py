"""A real small file system for tests of a full disk: a tmpfs mounted for the test (needs root,
else the test is skipped; on CI it fails). Its pages are only taken as they are written."""
from __future__ import annotations

import contextlib
import subprocess
from pathlib import Path
from typing import Iterator

from testkit.skips import missing


@contextlib.contextmanager
def mounted_tmpfs(folder: Path, size: str) -> Iterator[Path]:
    """``folder`` (made if needed) with a tmpfs of ``size`` (mount's syntax: ``3m``) on it."""
    folder.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True)
    if mounted.returncode:
        missing(f"cannot mount a tmpfs (needs root): {mounted.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)
