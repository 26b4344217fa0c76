"""``RemoteTracker``: a camera's tracker with ``Tracker``'s interface, held in a tracker child process.

The parent keeps what ``len``, ``removed_ids`` and ``active_ids`` answer from the last reply, so
only ``update``, ``expire`` and their placing forms ask the child. A child that was replaced
since the last request gets the tracker made again first, its ids counting on from the last."""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, Tuple

import numpy as np

from edge_app.detect.detections import Detections
from edge_app.track.placement import Areas, Placed, unpack_placed
from edge_app.track.tracker import TrackerSettings
from edge_app.track.tracker_child import TrackerState, pack_detections, unpack_state
from edge_app.track.tracker_host import TrackerHost, TrackerUnavailable


class RemoteTracker:
    """``Tracker``'s interface, for one camera, with the tracker in a ``TrackerHost``'s child."""

    def __init__(self, host: TrackerHost, key: str, settings: TrackerSettings) -> None:
        self.settings = settings
        self._host, self._key = host, key
        self._generation = -1  # made in no child yet
        self._state = TrackerState(None, (), 0, (), 1)
        self.removed_ids: Tuple[int, ...] = ()
        self._areas: Optional[Areas] = None
        self._labels_sent: Optional[Sequence[str]] = None  # the label names the child holds

    def place_with(self, areas: Areas) -> None:
        """Have the child place each frame in these zones and lines (``update_placed``,
        ``expire_placed``); before the first request."""
        if self._generation != -1:
            raise RuntimeError("place_with comes before the first request")
        self._areas = areas

    def __len__(self) -> int:
        return self._state.tracks

    def active_ids(self) -> Tuple[int, ...]:
        return self._state.active_ids

    def update(self, detections: Detections, timestamp_s: float) -> np.ndarray:
        state = self._ask("update", pack_detections(detections), float(timestamp_s))
        return state.ids.copy()  # writable, as Tracker's are

    def expire(self, now_s: float) -> Tuple[int, ...]:
        return self._ask("expire", float(now_s)).removed_ids

    def update_placed(self, detections: Detections, timestamp_s: float,
                      frame_size: Tuple[int, int]) -> Tuple[np.ndarray, Placed]:
        """``update``, then the frame's tracked objects placed in the zones and lines in the child."""
        packed, ts, size = pack_detections(detections), float(timestamp_s), (int(frame_size[0]), int(frame_size[1]))

        def message() -> tuple:
            labels = detections.labels
            if labels is self._labels_sent or labels == self._labels_sent:
                return "place", self._key, packed, ts, size, None
            self._labels_sent = labels
            return "place", self._key, packed, ts, size, tuple(labels)

        state, placed = self._ask_placed(message)
        return state.ids.copy(), placed

    def expire_placed(self, now_s: float) -> Placed:
        """``expire``, then the tracks that ended leave their zones in the child."""
        return self._ask_placed(lambda: ("age", self._key, float(now_s)))[1]

    def reset(self) -> None:
        try:
            self._ask("reset")
        except TrackerUnavailable:  # the child that held the tracks is gone, and they with it
            self._state = TrackerState(None, (), 0, (), self._state.next_id)
        self.removed_ids = ()

    def close(self) -> None:
        """Forget the tracker in the child (the camera's analysis ended)."""
        try:  # a child that is gone holds nothing: none is started to be told
            self._host.request(self._generation, ("drop", self._key), start=False)
        except (TrackerUnavailable, ValueError):
            pass  # a child that is gone holds nothing

    def _ask(self, kind: str, *arguments: Any) -> TrackerState:
        return self._request(lambda: (kind, self._key, *arguments), placed=False)[0]

    def _ask_placed(self, message: Callable[[], tuple]) -> Tuple[TrackerState, Placed]:
        if self._areas is None:
            raise RuntimeError("update_placed and expire_placed need place_with first")
        return self._request(message, placed=True)  # type: ignore[return-value]

    def _request(self, message: Callable[[], tuple], placed: bool) -> Tuple[TrackerState, Optional[Placed]]:
        lost: Tuple[int, ...] = ()
        remade = False
        for _ in range(2):  # once more after making the tracker in a new child
            try:
                generation, answer = self._host.request(self._generation, message())
            except TrackerUnavailable:
                self._forget_child()
                raise
            if answer is not None:
                break
            lost = self._state.active_ids  # the child that held them is gone: so are they
            remade, self._labels_sent = True, None
            _, made = self._host.request(generation, ("new", self._key, self.settings, self._state.next_id,
                                                      self._areas))
            self._generation = generation if made is not None else -1
        else:
            raise TrackerUnavailable("the tracker process was replaced twice in one request")
        state = unpack_state(answer[0] if placed else answer)
        self._state = state
        self.removed_ids = tuple(dict.fromkeys(lost + state.removed_ids))
        if not placed:
            return state, None
        where = unpack_placed(answer[1])
        if remade and where.occupants is None:  # a new child: nobody is in its zones yet
            where = Placed(where.zone_changes, where.crossings, {})
        return state, where

    def _forget_child(self) -> None:
        # Tracks of the lost child end with the next answer (removed_ids): keep what they were.
        self._generation = -1
        self._labels_sent = None
