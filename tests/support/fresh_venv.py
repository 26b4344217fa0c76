"""Fresh virtual environments holding only what one documented install line puts there.

A wheelhouse is built once per test run: the project's own wheel (built from a copy of the
source tree, which is also what the docs call ``/path/to/edge-app``) and every wheel the install
lines resolve to, fetched through pip's configured index and its cache. Each venv then installs
with ``--no-index --find-links`` from it: the same resolution as ``pip install`` against the
index, without fetching or building anything again.

The venvs are made without pip (``venv --without-pip``) and filled by this interpreter's pip
(``pip --python``), which installs exactly what the venv's own pip would, seconds faster; they
see neither the system's site-packages nor the user's.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, List, Sequence

REPO = Path(__file__).resolve().parents[2]
#: what a release of the source holds: enough to build and install edge-app from a folder
SOURCE_FILES = ("setup.py", "setup.cfg", "README.md", "edge_app")
#: pip's own messages about the configured indexes, not about what it installs
_PIP_NOISE = ("WARNING: Location ", "WARNING: Skipping ")


class PipFailed(AssertionError):
    """pip refused an install line; the message holds its output."""


def _pip(args: Sequence[str], timeout_s: float) -> None:
    done = subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
                          capture_output=True, text=True, timeout=timeout_s)
    if done.returncode != 0:
        output = "\n".join(line for line in (done.stdout + done.stderr).splitlines() if not line.startswith(_PIP_NOISE))
        raise PipFailed(f"pip {' '.join(args)} failed with exit status {done.returncode}:\n{output[-4000:]}")


@dataclass(frozen=True)
class Wheelhouse:
    wheels: Path
    source: Path

    @classmethod
    def build(cls, root: Path, requirements: Iterable[str], extras: Iterable[str], timeout_s: float = 900) -> "Wheelhouse":
        """Wheels for ``edge-app[extras]`` and ``requirements`` (each resolved on its own), in ``root``."""
        source = root / "edge-app"
        for name in SOURCE_FILES:
            if (REPO / name).is_dir():
                shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                source.mkdir(parents=True, exist_ok=True)
                shutil.copy2(REPO / name, source / name)
        wheels = root / "wheels"
        _pip(["wheel", "--quiet", "--wheel-dir", str(wheels), f"{source}[{','.join(sorted(extras))}]"], timeout_s)
        for requirement in requirements:  # apart: a pin for one line must not narrow the others
            _pip(["download", "--quiet", "--dest", str(wheels), requirement], timeout_s)
        return cls(wheels, source)


class FreshVenv:
    """A venv at ``path`` that gets only what :meth:`pip_install` puts there."""

    def __init__(self, path: Path, wheelhouse: Wheelhouse):
        self.path = path
        self.wheelhouse = wheelhouse
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=60,
                       env=self.env())

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"

    @property
    def site_packages(self) -> Path:
        found = sorted(self.path.glob("lib/python3*/site-packages"))
        assert len(found) == 1, found
        return found[0]

    def pip_install(self, *requirements: str, timeout_s: float = 300) -> None:
        """``pip install REQUIREMENT...`` into this venv, from the wheelhouse only."""
        _pip(["--python", str(self.python), "install", "--quiet", "--no-index", "--find-links",
              str(self.wheelhouse.wheels), "--no-compile", *requirements], timeout_s)

    def add_system_opencv(self, system_dir: Path) -> None:
        """Let the venv see ``system_dir`` after its own site-packages, as ``--system-site-packages``
        shows a Jetson's ``/usr/lib/python3/dist-packages`` (where JetPack's ``python3-opencv`` is)."""
        (self.site_packages / "system-opencv.pth").write_text(f"{system_dir}\n")

    def env(self) -> Dict[str, str]:
        """The environment a user's shell gives the venv's commands: nothing of this test run's Python."""
        env = {key: value for key, value in os.environ.items()
               if key not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP", "PYTHONUSERBASE")}
        env["PATH"] = f"{self.path / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        env["PYTHONNOUSERSITE"] = "1"
        return env

    def command(self, name: str, *args: str) -> List[str]:
        """A console script of the venv (``edge-app``) with its arguments."""
        return [str(self.path / "bin" / name), *args]


def make_system_opencv(wheelhouse: Wheelhouse, target: Path, requirement: str = "opencv-python-headless") -> Path:
    """A stand-in for JetPack's ``python3-opencv``: cv2 in a folder of its own, without the metadata
    pip would see (an apt package has none), so a venv shows it the way a Jetson does."""
    _pip(["install", "--quiet", "--no-index", "--find-links", str(wheelhouse.wheels), "--no-deps", "--no-compile",
          "--target", str(target), requirement], 300)
    for metadata in target.glob("*.dist-info"):
        shutil.rmtree(metadata)
    return target
