"""How much room a file system has: the one place the appliance reads its disk space.

The appliance's configuration, events, recordings and engine cache often share one small eMMC
(or a RAM-backed /tmp): a download or an export that fills it stops all of them. The health
report, recording retention, the recorder's reserve and whoever writes a large file it can size
beforehand all read the space here (``disk_space``), so they agree on what "free" means: what
an unprivileged process may still write, as ``df`` counts it (root's reserved blocks are neither
used nor free).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Union

MIB = 1024 * 1024


@dataclass(frozen=True)
class DiskSpace:
    """One file system's space, in bytes."""

    total_bytes: int
    used_bytes: int
    free_bytes: int  # what the appliance may still write (root's reserve not counted)

    @property
    def used_percent(self) -> float:
        """``df``'s Use%: the reserved blocks count as neither used nor free (0 for an empty file system)."""
        room = self.used_bytes + self.free_bytes
        return 100.0 * self.used_bytes / room if room else 0.0


def disk_space(path: Union[str, Path]) -> DiskSpace:
    """The space of the file system holding ``path``; OSError when it cannot be read."""
    st = os.statvfs(path)
    return DiskSpace(total_bytes=st.f_blocks * st.f_frsize, used_bytes=(st.f_blocks - st.f_bfree) * st.f_frsize,
                     free_bytes=st.f_bavail * st.f_frsize)


def free_bytes(path: Union[str, Path]) -> int:
    """What may still be written to the file system holding ``path``; OSError when unknown."""
    return disk_space(path).free_bytes


class NotEnoughSpace(OSError):
    """Writing would leave less than the reserve free; nothing was written."""


def ensure_room(folder: Union[str, Path], need_bytes: int, reserve_bytes: int, what: str = "the file") -> None:
    """NotEnoughSpace unless ``need_bytes`` more fit in ``folder`` with ``reserve_bytes`` left free."""
    free = free_bytes(folder)
    if free - need_bytes < reserve_bytes:
        raise NotEnoughSpace(f"not enough free space in {folder}: {what} needs {need_bytes / MIB:.1f} MB and "
                             f"{free / MIB:.1f} MB are free ({reserve_bytes / MIB:.0f} MB are kept free)")


__all__ = ["MIB", "DiskSpace", "NotEnoughSpace", "disk_space", "ensure_room", "free_bytes"]
