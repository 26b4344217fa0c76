"""Whether a file about to be written leaves enough of its file system free.

The appliance's configuration, events, recordings and engine cache often share one small eMMC
(or a RAM-backed /tmp): a download or an export that fills it stops all of them. Whoever writes
a large file it can size beforehand checks here first and refuses with the figures instead.
"""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Union

MIB = 1024 * 1024


class NotEnoughSpace(OSError):
    """Writing would leave less than the reserve free; nothing was written."""


def ensure_room(folder: Union[str, Path], need_bytes: int, reserve_bytes: int, what: str = "the file") -> None:
    """NotEnoughSpace unless ``need_bytes`` more fit in ``folder`` with ``reserve_bytes`` left free."""
    free = shutil.disk_usage(folder).free
    if free - need_bytes < reserve_bytes:
        raise NotEnoughSpace(f"not enough free space in {folder}: {what} needs {need_bytes / MIB:.1f} MB and "
                             f"{free / MIB:.1f} MB are free ({reserve_bytes / MIB:.0f} MB are kept free)")


__all__ = ["MIB", "NotEnoughSpace", "ensure_room"]
