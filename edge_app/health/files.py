"""Reading sysfs and procfs under a root directory, so a copy of a device's tree (or a synthetic one,
in tests) can stand in for ``/``."""
from __future__ import annotations

import re
from pathlib import Path
from typing import List, Optional

#: sysfs attributes are one short line; anything longer is not what we look for
MAX_ATTRIBUTE_BYTES = 4096


def under(root: Path, path: str) -> Path:
    return root / path.lstrip("/")


def read_text(path: Path) -> Optional[str]:
    """The stripped contents, None when missing or unreadable (no permission, a removed device)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(MAX_ATTRIBUTE_BYTES).decode("utf-8", "replace").strip()
    except OSError:
        return None


def read_int(path: Path) -> Optional[int]:
    text = read_text(path)
    if text is None:
        return None
    try:
        return int(text.split()[0]) if text else None
    except ValueError:
        return None


def sorted_glob(root: Path, pattern: str) -> List[Path]:
    """Matches in natural order (thermal_zone2 before thermal_zone10)."""
    def natural(path: Path) -> list:
        return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", str(path))]
    return sorted(root.glob(pattern.lstrip("/")), key=natural)


def hwmon_named(root: Path, *names: str) -> List[Path]:
    """``/sys/class/hwmon/hwmonN`` directories whose ``name`` is one of ``names``."""
    return [d for d in sorted_glob(root, "sys/class/hwmon/hwmon*") if read_text(d / "name") in names]
