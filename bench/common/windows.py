"""Waiting out a warm-up, then counting over a fixed window."""
from __future__ import annotations

import time
from typing import Callable, Dict


def wait_for(condition: Callable[[], bool], timeout_s: float, interval_s: float = 0.05) -> bool:
    deadline_s = time.monotonic() + timeout_s
    while time.monotonic() < deadline_s:
        if condition():
            return True
        time.sleep(interval_s)
    return condition()


def count_deltas(before: Dict[str, int], after: Dict[str, int]) -> Dict[str, int]:
    return {key: after.get(key, 0) - before.get(key, 0) for key in sorted(set(before) | set(after))}


def share_of_equal(per_camera: Dict[str, int], cameras: int) -> Dict[str, float]:
    """Each camera's analysed frames as a fraction of an equal share (1.0 = exactly fair)."""
    total = sum(per_camera.values())
    if total == 0 or cameras == 0:
        return {cid: 0.0 for cid in per_camera}
    equal = total / cameras
    return {cid: round(count / equal, 3) for cid, count in sorted(per_camera.items())}
