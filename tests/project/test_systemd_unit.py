"""systemd/edge-app.service passes ``systemd-analyze verify`` without a single warning.

The shipped unit runs /opt/edge-app/venv/bin/edge-app, which does not exist on a CI machine,
and verify rightly refuses a command it cannot execute. So the unit is verified as a copy whose
commands point at the edge-app of this environment; every other line is checked as shipped.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest

INSTALLED_EDGE_APP = "/opt/edge-app/venv/bin/edge-app"
MPS_CONTROL = "/usr/bin/nvidia-cuda-mps-control"


def _unit(repo_root: Path) -> str:
    return (repo_root / "systemd" / "edge-app.service").read_text()


def _settings(text: str, key: str) -> List[str]:
    return [line.split("=", 1)[1] for line in text.splitlines() if line.startswith(key + "=")]


def _verify(unit_text: str, directory: Path, name: str = "edge-app.service") -> str:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.fail("systemd-analyze is missing: run scripts/system-deps.sh (Debian package systemd)")
    edge_app = Path(sys.executable).with_name("edge-app")
    assert edge_app.is_file(), f"{edge_app} missing: install edge-app into this environment"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    # NVIDIA's driver tools are not on a CI machine either: an executable stands in for them
    path.write_text(unit_text.replace(INSTALLED_EDGE_APP, str(edge_app)).replace(MPS_CONTROL, shutil.which("true")))
    result = subprocess.run([analyze, "verify", "--man=no", str(path)], capture_output=True, text=True, timeout=60)
    return (f"exit {result.returncode}\n" if result.returncode else "") + result.stdout + result.stderr


def test_the_unit_verifies_without_any_warning(repo_root, tmp_path):
    text = _unit(repo_root)
    assert _settings(text, "ExecStart") == [f"{INSTALLED_EDGE_APP} run -c /etc/edge-app/config.yaml"]
    output = _verify(text, tmp_path / "shipped")
    assert output == "", output


def test_the_check_catches_a_warning(repo_root, tmp_path):
    """An unknown key only makes verify print a line (exit 0): the check must still fail on it."""
    broken = _unit(repo_root).replace("[Service]\n", "[Service]\nWatchdogSecs=30\n", 1)
    assert "Unknown key" in _verify(broken, tmp_path / "broken")


def test_the_unit_is_hardened_and_notifies(repo_root):
    text = _unit(repo_root)
    single = {key: _settings(text, key) for key in (
        "Type", "NotifyAccess", "WatchdogSec", "ProtectSystem", "StateDirectory", "ReadWritePaths", "DevicePolicy",
        "NoNewPrivileges", "ProtectHome", "PrivateTmp", "User", "SupplementaryGroups")}
    assert single["Type"] == ["notify"] and single["NotifyAccess"] == ["main"] and single["WatchdogSec"]
    assert single["ProtectSystem"] == ["strict"] and single["StateDirectory"] == ["edge-app"]
    assert single["ReadWritePaths"] == ["/etc/edge-app"], "configuration changes through the API are saved there"
    assert single["DevicePolicy"] == ["closed"] and single["NoNewPrivileges"] == ["true"]
    assert single["ProtectHome"] == ["true"] and single["PrivateTmp"] == ["true"] and single["User"] == ["edge-app"]
    assert set(single["SupplementaryGroups"][0].split()) == {"video", "render"}
    allowed = {entry.split()[0] for entry in _settings(text, "DeviceAllow")}
    assert {"char-video4linux", "char-nvidia*", "char-nvhost*", "char-nvmap", "char-nvgpu*"} <= allowed
    # CUDA's and NVRTC's JIT compilers need writable and executable memory.
    assert not _settings(text, "MemoryDenyWriteExecute")


def test_the_unit_allows_the_open_files_a_full_appliance_needs(repo_root):
    """64 cameras, each with its socket, a segment and record.events.max_concurrent clip files at
    the default, and the API's connections: more than the default soft limit of 1024."""
    from edge_app.config.schema_record import RecordEventsConfig

    limit = _settings(_unit(repo_root), "LimitNOFILE")
    assert limit, "the unit sets LimitNOFILE"
    needed = 64 * (2 + RecordEventsConfig().max_concurrent) + 128 + 64
    assert int(limit[0].split(":")[0]) >= needed


def test_an_invalid_configuration_is_not_restarted_in_a_loop(repo_root):
    """``run`` and ``check-config`` exit 2 for a configuration that can never start."""
    text = _unit(repo_root)
    assert _settings(text, "Restart") == ["on-failure"]
    assert _settings(text, "RestartPreventExitStatus") == ["2"]


def _mps_unit(repo_root: Path) -> str:
    return (repo_root / "systemd" / "edge-app-mps.service").read_text()


def test_the_mps_unit_verifies_without_any_warning(repo_root, tmp_path):
    text = _mps_unit(repo_root)
    assert _settings(text, "ExecStart") == [f"{MPS_CONTROL} -f"]
    output = _verify(text, tmp_path / "mps", "edge-app-mps.service")
    assert output == "", output


def test_the_appliance_looks_for_mps_where_its_daemon_runs(repo_root):
    """CUDA finds the MPS daemon only in $CUDA_MPS_PIPE_DIRECTORY; PrivateTmp hides the default
    /tmp/nvidia-mps from the service, so both units must name the same directory outside /tmp."""
    def pipe_directory(text):
        return [value.split("=", 1)[1] for value in _settings(text, "Environment")
                if value.startswith("CUDA_MPS_PIPE_DIRECTORY=")]

    mps, appliance = _mps_unit(repo_root), _unit(repo_root)
    assert pipe_directory(mps) == pipe_directory(appliance) == ["/run/edge-app-mps"]
    assert _settings(mps, "RuntimeDirectory") == ["edge-app-mps"]  # systemd makes /run/edge-app-mps
    assert _settings(mps, "User") == _settings(appliance, "User") == ["edge-app"]  # one user: no root daemon
    assert "edge-app-mps.service" in _settings(appliance, "After")[0].split()
    assert "edge-app.service" in _settings(mps, "Before")[0].split()
