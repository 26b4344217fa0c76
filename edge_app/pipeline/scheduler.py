"""Which cameras' frames go into the next batch, and how long to wait for more.

Pure logic with time passed in (as Savant does for stall detection), so batching, fairness and
``fps_limit`` are tested without threads or cameras. The pipeline thread asks ``plan`` what to
do every time a frame arrives or a wait runs out. The ``fps_limit`` given here is the one left to
the scheduler (``edge_app.capture.early_drop.scheduler_fps_limit``: files read with
``realtime: false``), held by the capture's own schedule and tolerance.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Mapping, Optional, Tuple

from edge_app.capture.early_drop import EarlyDrop


@dataclass(frozen=True)
class BatchPlan:
    """``take``: camera ids to batch now (may be empty). ``wait_s``: how long to wait for more
    frames before asking again (None: until a frame arrives)."""

    take: Tuple[str, ...]
    wait_s: Optional[float]


@dataclass
class _CameraTurn:
    fps_limit: float
    #: the capture's rule for ``fps_limit`` (one schedule, one tolerance), fed the batching times
    schedule: EarlyDrop


@dataclass
class BatchScheduler:
    max_batch: int
    batch_timeout_s: float
    _cameras: Dict[str, _CameraTurn] = field(default_factory=dict)
    _order: List[str] = field(default_factory=list)
    _next_index: int = 0

    def set_cameras(self, fps_limits: Mapping[str, float]) -> None:
        """(Re)declare the cameras; keeps the turn state of cameras that stay."""
        self._cameras = {cid: self._turn(cid, float(fps)) for cid, fps in fps_limits.items()}
        self._order = list(fps_limits)
        self._next_index %= max(1, len(self._order))

    def _turn(self, camera_id: str, fps_limit: float) -> _CameraTurn:
        turn = self._cameras.get(camera_id)
        return turn if turn is not None and turn.fps_limit == fps_limit else _CameraTurn(fps_limit, EarlyDrop(fps_limit))

    def _eligible_at(self, camera_id: str) -> float:
        """Earliest time the camera may be analysed again under its fps_limit."""
        earliest_s = self._cameras[camera_id].schedule.earliest_s()
        return float("-inf") if earliest_s is None else earliest_s

    def _round_robin(self, ids: Iterable[str]) -> List[str]:
        wanted = set(ids)
        n = len(self._order)
        return [self._order[(self._next_index + k) % n] for k in range(n) if self._order[(self._next_index + k) % n] in wanted]

    def plan(self, ready: Mapping[str, float], now_s: float) -> BatchPlan:
        """``ready`` maps camera id -> arrival time of its pending frame (monotonic seconds)."""
        ready = {cid: t for cid, t in ready.items() if cid in self._cameras}
        eligible = {cid: t for cid, t in ready.items() if self._eligible_at(cid) <= now_s}
        held_back = [self._eligible_at(cid) - now_s for cid in ready if cid not in eligible]
        next_release_s = min(held_back) if held_back else None
        if not eligible:
            return BatchPlan((), next_release_s)
        ordered = self._round_robin(eligible)
        if len(ordered) >= self.max_batch:
            return BatchPlan(tuple(ordered[: self.max_batch]), None)
        # A partial batch goes once its oldest frame waited batch_timeout, or when no other
        # camera could add a frame anyway (every camera is already in it).
        oldest_wait_s = now_s - min(eligible.values())
        if oldest_wait_s >= self.batch_timeout_s or len(eligible) >= len(self._cameras):
            return BatchPlan(tuple(ordered), None)
        wait_s = self.batch_timeout_s - oldest_wait_s
        if next_release_s is not None:
            wait_s = min(wait_s, next_release_s)
        return BatchPlan((), wait_s)

    def mark_analysed(self, camera_ids: Iterable[str], now_s: float) -> None:
        """Record that these cameras were batched; the round-robin turn moves past the last one."""
        last_index = None
        for cid in camera_ids:
            if cid in self._cameras:
                self._cameras[cid].schedule.kept(now_s)
                last_index = self._order.index(cid)
        if last_index is not None and self._order:
            self._next_index = (last_index + 1) % len(self._order)
