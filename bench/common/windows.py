"""Counting over a fixed window (the warm-up before it is waited out with ``testkit.waiting.poll_until``)."""
from __future__ import annotations

from typing import Dict


def count_deltas(before: Dict[str, int], after: Dict[str, int]) -> Dict[str, int]:
    return {key: after.get(key, 0) - before.get(key, 0) for key in sorted(set(before) | set(after))}


def share_of_equal(per_camera: Dict[str, int], cameras: int) -> Dict[str, float]:
    """Each camera's analysed frames as a fraction of an equal share (1.0 = exactly fair)."""
    total = sum(per_camera.values())
    if total == 0 or cameras == 0:
        return {cid: 0.0 for cid in per_camera}
    equal = total / cameras
    return {cid: round(count / equal, 3) for cid, count in sorted(per_camera.items())}
