"""A green test run leaves nothing in the system's temporary folder (clips, profiles, brokers'
folders all live in pytest's temporary directories, which this repository's settings remove)."""
from __future__ import annotations

import os
import subprocess
import sys


def test_a_passing_session_removes_its_temporary_directories(tmp_path, repo_root):
    (tmp_path / "test_writes.py").write_text(
        "import pytest\n\n"
        "@pytest.fixture(scope='session')\n"
        "def clip(tmp_path_factory):\n"
        "    path = tmp_path_factory.mktemp('clips') / 'clip.mp4'\n"
        "    path.write_bytes(b'x' * 1000)\n"
        "    return path\n\n"
        "def test_one(tmp_path, clip):\n"
        "    (tmp_path / 'out.bin').write_bytes(b'x' * 1000)\n")
    system_temp = tmp_path / "system-temp"
    system_temp.mkdir()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", str(repo_root / "setup.cfg"),
                           "--rootdir", str(tmp_path), str(tmp_path / "test_writes.py")],
                          cwd=tmp_path, env={**os.environ, "TMPDIR": str(system_temp)},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    left = [str(p.relative_to(system_temp)) for p in system_temp.rglob("*") if p.is_file()]
    assert left == []
