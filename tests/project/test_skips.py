"""No silent skips on CI: a test skips for a missing tool or package only through
``testkit.skips`` (which fails instead when ``CI`` is set), and ``scripts/system-deps.sh``
installs every tool the tests ask for.

Skips that are right on CI too are listed in ``ALLOWED``, each with why.
"""
from __future__ import annotations

import ast
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, List

import pytest

from testkit import skips

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
#: where a skip can be: the tests and the kit they share with the benchmarks
SCANNED = (TESTS, REPO / "testkit")
SYSTEM_DEPS = REPO / "scripts" / "system-deps.sh"
SKIP_CALLS = {"skip", "importorskip", "skipif"}  # pytest.skip(), pytest.importorskip(), pytest.mark.skip[if]


@dataclass(frozen=True)
class Allowed:
    path: str      # a file, or a folder ending in "/", relative to the repository
    contains: str  # a piece of the skip's source text
    why: str


ALLOWED = (
    Allowed("tests/gpu/", "", "needs an NVIDIA GPU with CUDA and its Python bindings; CI has no GPU"),
    Allowed("tests/bench/test_torch_runtime.py", "importorskip", "PyTorch and onnx2torch are no dependency of "
            "edge-app: the bench's torch runtime is compared where someone installed them"),
    Allowed("tests/config_change/test_checks.py", "this machine has nvdec", "the check under test passes where the hardware exists"),
    Allowed("tests/record/test_masked_recording.py", "may start on this machine", "the fallback to x264 under test "
            "happens only where the hardware encoder is missing; tests/gpu/test_masked_nvenc.py covers the hardware"),
    Allowed("tests/config_change/test_checks.py", "a Jetson has nvarguscamerasrc", "the check under test passes on a Jetson"),
    Allowed("tests/commands/test_selftest.py", "this machine has", "the failure under test cannot happen where the decoder exists"),
    Allowed("tests/detect/test_factory.py", "TensorRT is installed here", "tests the error without TensorRT"),
    Allowed("tests/tensorrt/test_commands.py", "this machine has an NVIDIA GPU", "tests the error without a GPU"),
    Allowed("tests/capture/video_decode/test_nvdec_source.py", "PyNvVideoCodec is installed here", "tests the error without it"),
    Allowed("tests/capture/test_camera_file.py", "this OpenCV has GStreamer", "tests the error of an OpenCV without it"),
    Allowed("tests/capture/test_sources.py", "this OpenCV has GStreamer", "tests the error of an OpenCV without it"),
    Allowed("tests/api/test_listening_address.py", "no non-loopback IPv4 address",
            "a container may have loopback only; what it tests cannot exist there"),
    Allowed("tests/e2e/test_listening_address.py", "no non-loopback IPv4 address",
            "a container may have loopback only; what it tests cannot exist there"),
    Allowed("tests/capture/test_camera_rtsp.py", "EDGE_APP_SKIP_LONG", "left out only when asked for by name"),
    Allowed("tests/project/test_docs_wording.py", "a recorded tree exists", "only while no tree captured from a device exists"),
    Allowed("testkit/skips.py", "", "the helper itself"),
    Allowed("tests/project/test_skips.py", "", "this test"),
)


@dataclass(frozen=True)
class Skip:
    path: str
    line: int
    source: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.source}"


def _is_skip(call: ast.Call) -> bool:
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name in SKIP_CALLS


def skips_in(path: Path, relative: str = "") -> Iterator[Skip]:
    """Every call of pytest.skip, pytest.importorskip, pytest.mark.skip or skipif in a file, and
    every bare ``@pytest.mark.skip`` (no call)."""
    text = path.read_text()
    relative = relative or path.relative_to(REPO).as_posix()
    for node in ast.walk(ast.parse(text, str(path))):
        if isinstance(node, ast.Call) and _is_skip(node):
            yield Skip(relative, node.lineno, " ".join((ast.get_source_segment(text, node) or "").split()))
        elif isinstance(node, ast.Attribute) and node.attr == "skip" and isinstance(node.value, ast.Attribute) \
                and node.value.attr == "mark":
            yield Skip(relative, node.lineno, "pytest.mark.skip")


def _allowed_by(skip: Skip) -> List[Allowed]:
    return [a for a in ALLOWED if (skip.path.startswith(a.path) if a.path.endswith("/") else skip.path == a.path)
            and a.contains in skip.source]


def all_skips() -> List[Skip]:
    return [s for root in SCANNED for path in sorted(root.rglob("*.py")) for s in skips_in(path)]


def test_every_skip_for_something_missing_goes_through_the_helper():
    bare = [str(s) for s in all_skips() if not _allowed_by(s)]
    assert not bare, ("skips that would pass silently on CI; use testkit.skips (require_tool, "
                      "require_module, missing) or add them to ALLOWED with why:\n" + "\n".join(bare))


def test_every_allowed_skip_still_exists():
    found = all_skips()
    stale = [a for a in ALLOWED if not a.path.endswith("/") and a.path not in ("testkit/skips.py", "tests/project/test_skips.py")
             and not any(a in _allowed_by(s) for s in found)]
    assert not stale, f"allowed skips that are gone (remove them from ALLOWED): {stale}"


def test_the_scan_finds_bare_skips(tmp_path):
    """The scanner itself: each form of a skip is found, wherever it stands."""
    sample = tmp_path / "test_sample.py"
    sample.write_text(
        "import pytest\nfrom pytest import importorskip\n"
        "node = pytest.importorskip('node')\nimportorskip('x')\n"
        "@pytest.mark.skipif(True, reason='no psql')\ndef test_a():\n    pytest.skip('no ffmpeg')\n"
        "@pytest.mark.skip\ndef test_b():\n    pass\n")
    found = list(skips_in(sample, "tests/api/test_sample.py"))
    assert sorted(s.line for s in found) == [3, 4, 5, 7, 8] and not any(_allowed_by(s) for s in found)


def test_every_tool_asked_for_is_known_and_installed_by_system_deps():
    script = SYSTEM_DEPS.read_text()
    asked = set()
    for path in sorted(p for root in SCANNED for p in root.rglob("*.py") if p != Path(__file__)):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "require_tool" \
                    and node.args and isinstance(node.args[0], ast.Constant):
                asked.add(node.args[0].value)
    assert asked and asked <= set(skips.TOOLS), f"tools asked for but not in TOOLS: {asked - set(skips.TOOLS)}"
    unnamed = sorted({package for package in (*skips.TOOLS.values(), *skips.LIBRARIES)
                      if not _names_package(script, package)})
    assert not unnamed, f"scripts/system-deps.sh does not install {unnamed}"


def _names_package(script: str, package: str) -> bool:
    """Whether ``package`` is among those the script installs: a ``need+=(...)`` or its ``for pkg in`` list."""
    lists = re.findall(r"need\+=\(([^)]*)\)", script) + re.findall(r"for pkg in ([^;]*);", script)
    return any(package in words.replace("\\", " ").split() for words in lists)


def test_system_deps_checks_its_tools_and_starts_postgresql():
    """The script installs nothing when all is there and says what it would install otherwise;
    run here it must find every tool (CI ran it before the tests)."""
    script = SYSTEM_DEPS.read_text()
    assert "5432" in script and "pg_ctl" in script, "system-deps.sh must start PostgreSQL when none listens"
    if not skips.on_ci():
        pytest.skip("the machine's own packages are checked on CI, where system-deps.sh ran")
    done = subprocess.run(["bash", str(SYSTEM_DEPS)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("ci, expected", [("1", "failed"), ("true", "failed"), ("", "skipped"), ("0", "skipped")])
def test_a_missing_tool_skips_here_and_fails_on_ci(monkeypatch, ci, expected):
    monkeypatch.setenv("CI", ci)
    monkeypatch.setenv("PATH", "/nonexistent")
    outcome = pytest.fail.Exception if expected == "failed" else pytest.skip.Exception
    with pytest.raises(outcome, match="node is not installed"):
        skips.require_tool("node")
    with pytest.raises(outcome, match="no_such_module_here"):
        skips.require_module("no_such_module_here")
    with pytest.raises(ValueError, match="TOOLS"):
        skips.require_tool("a-tool-nobody-listed")
