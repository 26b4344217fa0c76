"""What an engine's validity depends on beyond TensorRT and the GPU: the L4T release or the driver.

A TensorRT engine is tied to the JetPack (L4T) release on a Jetson and to the NVIDIA driver on a
discrete GPU; after an upgrade an old engine may deserialise and then misbehave, so the engine
key carries this text and an upgrade means a rebuild. "unknown" when neither can be read (a
machine with no NVIDIA driver: only the test stand-in of TensorRT runs there).
"""
from __future__ import annotations

import re
from pathlib import Path

TEGRA_RELEASE = Path("/etc/nv_tegra_release")
DRIVER_VERSION = Path("/sys/module/nvidia/version")
DRIVER_PROC = Path("/proc/driver/nvidia/version")
UNKNOWN = "unknown"
#: the most read of any of these files (they are a line or two)
MAX_READ_BYTES = 4096

_L4T = re.compile(r"#\s*R(?P<major>\d+)\s*\(release\),\s*REVISION:\s*(?P<revision>[0-9.]+)")
_DRIVER = re.compile(r"(?P<version>\d+\.\d+(?:\.\d+)?)")
_PROC_DRIVER = re.compile(r"Kernel Module(?:\s+for\s+\S+)?\s+(?P<version>\d+\.\d+(?:\.\d+)?)")


def _head(path: Path) -> str:
    try:
        with open(path, "rb") as handle:
            return handle.read(MAX_READ_BYTES).decode("utf-8", "replace")
    except OSError:
        return ""


def device_platform(tegra_release: Path = TEGRA_RELEASE, driver_version: Path = DRIVER_VERSION,
                    driver_proc: Path = DRIVER_PROC) -> str:
    """``"L4T R35.4.1"`` on a Jetson, ``"driver 580.65.06"`` on a discrete GPU, else ``"unknown"``."""
    match = _L4T.search(_head(tegra_release))
    if match is not None:
        return f"L4T R{match.group('major')}.{match.group('revision').strip('.')}"
    match = _DRIVER.match(_head(driver_version).strip())
    if match is None:
        match = _PROC_DRIVER.search(_head(driver_proc))
    if match is not None:
        return f"driver {match.group('version')}"
    return UNKNOWN


__all__ = ["UNKNOWN", "device_platform"]
