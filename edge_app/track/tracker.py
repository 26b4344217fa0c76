"""A ByteTrack-style multi-object tracker: one per camera, fed one frame of detections at a time.

Association runs in stages (Zhang et al., "ByteTrack", ECCV 2022):
1. confirmed tracks (seen last frame or lost for a while) against high-score detections;
2. confirmed tracks still unmatched against low-score detections, so a partly occluded object
   whose score dropped keeps its track instead of breaking it. Unlike the paper, tracks lost for
   a few frames take part too: an object that vanished behind something usually comes back
   half hidden, with a low score, and the strict IoU of this stage keeps clutter out;
3. tentative tracks (one sighting so far) against the high-score detections left over.
Each stage is an optimal assignment on IoU cost between Kalman-predicted boxes and detections.
At a low analysed rate (a busy device analysing a camera once or twice a second, its frames
stamped a few tenths of a second late, each by another amount) a prediction can be off by more
than the gap between two people walking side by side; plain overlap then pairs a track with its
neighbour's box while its own box overlaps nothing: an id switch, and a new event. In the first
stage a track seen in the previous frame may therefore also reach from its predicted box towards
a detection, ``reach_heights_per_s`` times the frame interval, and compare shapes there, nearer
candidates first; the one assignment over all tracks keeps neighbours apart. Frames closer than
``reach_from_s`` (more than ten a second) are matched by overlap alone, as are tracks that missed
a frame: a lost track is not handed to whatever turns up near its path.
A tentative track has no speed yet, so its prediction stands still; at a low analysed rate
(a loaded device, one frame a second) a walker has left that box before the next frame. The
third stage therefore lets a tentative track reach as far as ``tentative_reach_heights_per_s``
allows in the time since it was seen beyond ``tentative_reach_after_s`` and compares shapes
there, nearer candidates first. Within that half second the plain overlap decides, as it did
before: a walker's boxes still overlap, and look-alikes side by side are not paired by guess.
A high-score detection left over starts a tentative track; it gets an id once it has been seen
``confirm_hits`` times in a row, so a single false positive never consumes an id. A confirmed
track not seen for ``lost_timeout_s`` is removed. Tracks keep their class: a detection of
another class is never matched to them.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Callable, Optional, Protocol, Tuple

import numpy as np

from edge_app.detect.detections import Detections
from edge_app.track.kalman import MEASURE_DIM, STATE_DIM, BoxKalman, KalmanNoise, xyah_to_xyxy, xyxy_to_xyah
from edge_app.track.matching import assign, iou_cost, reach_cost

log = logging.getLogger(__name__)

UNTRACKED = -1


@dataclass(frozen=True)
class TrackerSettings:
    high_score: float = 0.5            # detections at or above: first stage, may start tracks
    low_score: float = 0.1             # detections below are ignored altogether
    new_track_score: float = 0.6       # a leftover detection needs this much to start a track
    match_iou: float = 0.2             # first stage: least IoU between prediction and detection
    low_match_iou: float = 0.5         # second stage is stricter: low scores are less certain
    tentative_match_iou: float = 0.3
    # How far (box heights a second) a tentative track may have moved since its first sighting,
    # counted after tentative_reach_after_s: a brisk walk is under one height a second. Gaps
    # longer than lost_timeout_s reach no further.
    tentative_reach_heights_per_s: float = 1.5
    tentative_reach_after_s: float = 0.5
    tentative_distance_weight: float = 0.1  # breaks ties between look-alikes in favour of the nearer
    # How far (box heights a second) the first stage lets a track seen in the previous frame
    # reach beyond its predicted box: a walker slowing or turning, a frame stamped late.
    reach_heights_per_s: float = 0.5
    reach_from_s: float = 0.1          # frames closer than this are matched by overlap alone
    confirm_hits: int = 2              # sightings in a row before a track gets an id
    # A confirmed track unseen this long is removed. Long enough for someone walking behind a
    # pillar or a parked car; an event ends after events.end_after_s (2 s) alike.
    lost_timeout_s: float = 2.0
    max_tracks: int = 2048             # a bound on per-frame work whatever the detector sends
    noise: KalmanNoise = KalmanNoise()

    def __post_init__(self) -> None:
        if not 0 <= self.low_score <= self.high_score <= 1:
            raise ValueError("need 0 <= low_score <= high_score <= 1")
        for name in ("match_iou", "low_match_iou", "tentative_match_iou"):
            if not 0 < getattr(self, name) <= 1:
                raise ValueError(f"{name} must be in (0, 1]")
        if (self.tentative_reach_heights_per_s < 0 or self.tentative_reach_after_s < 0
                or not 0 <= self.tentative_distance_weight < 1):
            raise ValueError("tentative_reach_heights_per_s and tentative_reach_after_s must be >= 0, "
                             "tentative_distance_weight in [0, 1)")
        if self.reach_heights_per_s < 0 or self.reach_from_s < 0:
            raise ValueError("reach_heights_per_s and reach_from_s must be >= 0")
        if self.confirm_hits < 1 or self.lost_timeout_s < 0 or self.max_tracks < 1:
            raise ValueError("confirm_hits and max_tracks must be >= 1, lost_timeout_s >= 0")


class TrackerLike(Protocol):
    """What a camera's analysis uses of its tracker: ``Tracker``, or a ``RemoteTracker`` whose
    ``Tracker`` runs in a child process (edge_app.track.processes)."""

    settings: TrackerSettings
    removed_ids: Tuple[int, ...]

    def __len__(self) -> int: ...

    def active_ids(self) -> Tuple[int, ...]: ...

    def update(self, detections: Detections, timestamp_s: float) -> np.ndarray: ...

    def expire(self, now_s: float) -> Tuple[int, ...]: ...

    def reset(self) -> None: ...

    def close(self) -> None: ...


class Tracker:
    """Tracks of one camera. ``update`` once per analysed frame, in time order."""

    def __init__(self, settings: TrackerSettings = TrackerSettings(), first_id: int = 1) -> None:
        """``first_id``: the id the first confirmed track gets (a tracker that replaces another
        of the same camera goes on where that one stopped: ids are never reused)."""
        if first_id < 1:
            raise ValueError("first_id must be >= 1")
        self.settings = settings
        self._kalman = BoxKalman(settings.noise)
        self._next_id = int(first_id)
        self._last_time_s: Optional[float] = None
        # One row per track (struct of arrays: whole-frame numpy operations, no per-track objects).
        self._ids = np.zeros(0, np.int64)          # UNTRACKED while tentative
        self._classes = np.zeros(0, np.int32)
        self._mean = np.zeros((0, STATE_DIM))
        self._cov = np.zeros((0, 3, MEASURE_DIM))        # BoxKalman's covariance blocks
        self._hits = np.zeros(0, np.int64)         # sightings in a row
        self._seen_s = np.zeros(0)                 # time of the last sighting
        self._seen_last = np.zeros(0, bool)        # matched in the previous update
        self.removed_ids: Tuple[int, ...] = ()     # confirmed tracks dropped by the last update

    def __len__(self) -> int:
        return int(self._ids.shape[0])

    @property
    def next_id(self) -> int:
        """The id the next confirmed track will get."""
        return self._next_id

    def active_ids(self) -> Tuple[int, ...]:
        """Ids of the confirmed tracks alive now, seen in the last frame or briefly lost."""
        return tuple(int(i) for i in self._ids[self._ids != UNTRACKED])

    def predicted_boxes(self) -> np.ndarray:
        """``(T, 4)`` current box estimates of all tracks, tentative ones included."""
        return xyah_to_xyxy(self._mean)

    def reset(self) -> None:
        """Forget every track (a camera that restarted); ids keep counting up, never reused."""
        self._last_time_s = None
        self._select(np.zeros(len(self), bool))
        self._seen_last = np.zeros(0, bool)
        self.removed_ids = ()

    def close(self) -> None:
        """Nothing to free here (a ``RemoteTracker`` forgets its tracker in the child)."""

    def update(self, detections: Detections, timestamp_s: float) -> np.ndarray:
        """Track ids ``(N,)`` int64 aligned with ``detections``; ``UNTRACKED`` (-1) for boxes of no track."""
        if not math.isfinite(timestamp_s):
            raise ValueError(f"timestamp_s must be a finite number, got {timestamp_s!r}")
        dt_s = 0.0 if self._last_time_s is None else timestamp_s - self._last_time_s
        if dt_s < 0:
            log.debug("frame time went back by %.3f s; predicting no motion", -dt_s)
            dt_s = 0.0
        self._last_time_s = max(timestamp_s, self._last_time_s or timestamp_s)
        now_s = self._last_time_s
        s = self.settings

        # A lost track keeps drifting at its speed but stops growing or shrinking.
        self._mean[~self._seen_last, 7] = 0.0
        self._mean, self._cov = self._kalman.predict(self._mean, self._cov, dt_s)

        out = np.full(len(detections), UNTRACKED, np.int64)
        scores = detections.confidence
        det_boxes = detections.xyxy.astype(np.float64)
        det_classes = detections.class_id
        high = np.nonzero(scores >= s.high_score)[0]
        low = np.nonzero((scores >= s.low_score) & (scores < s.high_score))[0]
        confirmed = np.nonzero(self._ids != UNTRACKED)[0]
        tentative = np.nonzero(self._ids == UNTRACKED)[0]
        # One cost matrix for the frame; each stage takes its rows and columns from it.
        cost = iou_cost(self.predicted_boxes(), self._classes, det_boxes, det_classes)

        matched_tracks, matched_dets = [], []

        def stage(tracks: np.ndarray, dets: np.ndarray, min_iou: float, costs: Optional[np.ndarray] = None,
                  ) -> Tuple[np.ndarray, np.ndarray]:
            if len(tracks) == 0 or len(dets) == 0:
                return tracks, dets
            pairs, free_tracks, free_dets = assign(cost[tracks[:, None], dets] if costs is None else costs, 1.0 - min_iou)
            matched_tracks.append(tracks[pairs[:, 0]])
            matched_dets.append(dets[pairs[:, 1]])
            return tracks[free_tracks], dets[free_dets]

        first_cost = None  # the plain overlap cost
        if dt_s >= s.reach_from_s and s.reach_heights_per_s > 0 and len(confirmed) and len(high):
            first_cost = self._reach_cost(confirmed, det_boxes[high], det_classes[high],
                                          cost[confirmed[:, None], high], dt_s)
        confirmed_left, high_left = stage(confirmed, high, s.match_iou, first_cost)
        stage(confirmed_left, low, s.low_match_iou)
        if len(tentative) and len(high_left):
            _, high_left = stage(tentative, high_left, s.tentative_match_iou,
                                 self._tentative_cost(tentative, det_boxes[high_left], det_classes[high_left],
                                                      cost[tentative[:, None], high_left], now_s))

        tracks_hit = np.concatenate(matched_tracks) if matched_tracks else np.zeros(0, np.int64)
        dets_hit = np.concatenate(matched_dets) if matched_dets else np.zeros(0, np.int64)
        self._correct(tracks_hit, det_boxes[dets_hit], now_s)
        out[dets_hit] = self._ids[tracks_hit]

        keep = self._ids != UNTRACKED
        keep[tracks_hit] = True  # tentative tracks live on only while seen every frame
        keep &= (now_s - self._seen_s) <= s.lost_timeout_s
        self.removed_ids = tuple(int(i) for i in self._ids[~keep & (self._ids != UNTRACKED)])
        if not keep.all():
            self._select(keep)

        starters = high_left[scores[high_left] >= s.new_track_score]
        if len(starters):
            out[starters] = self._start(starters, det_boxes[starters], det_classes[starters], now_s)
        return out

    def expire(self, now_s: float) -> Tuple[int, ...]:
        """Remove the tracks unseen for longer than ``lost_timeout_s`` at ``now_s``, without a frame
        (a camera that sent none for a while); ``removed_ids`` says which confirmed ones went.

        Nothing else changes: time without a frame is not a frame in which nothing was seen,
        so the other tracks keep their state, tentative ones included."""
        if not math.isfinite(now_s):
            raise ValueError(f"now_s must be a finite number, got {now_s!r}")
        keep = (now_s - self._seen_s) <= self.settings.lost_timeout_s
        self.removed_ids = tuple(int(i) for i in self._ids[~keep & (self._ids != UNTRACKED)])
        if not keep.all():
            self._select(keep)
        return self.removed_ids

    def _reach_cost(self, confirmed: np.ndarray, boxes: np.ndarray, classes: np.ndarray,
                    plain: np.ndarray, dt_s: float) -> np.ndarray:
        """The first stage's cost at a low analysed rate: the plain overlap cost, lowered where a
        detection is within the reach of a track seen in the previous frame."""
        rows = np.nonzero(self._seen_last[confirmed])[0]
        if len(rows) == 0:
            return plain
        reaching = confirmed[rows]
        reach_px = self.settings.reach_heights_per_s * self._mean[reaching, 3] * dt_s
        reached = reach_cost(xyah_to_xyxy(self._mean[reaching]), self._classes[reaching], reach_px,
                             boxes, classes, self.settings.tentative_distance_weight)
        cost = plain.copy()
        cost[rows] = np.minimum(plain[rows], reached)
        return cost

    def _tentative_cost(self, tentative: np.ndarray, boxes: np.ndarray, classes: np.ndarray,
                        plain: np.ndarray, now_s: float) -> np.ndarray:
        """The third stage's cost: never above the plain overlap cost, lower for a detection
        within the reach of a tentative track's first sighting."""
        s = self.settings
        gap_s = np.minimum(now_s - self._seen_s[tentative], s.lost_timeout_s)
        heights = self._mean[tentative, 3]
        reach_px = s.tentative_reach_heights_per_s * heights * np.maximum(gap_s - s.tentative_reach_after_s, 0.0)
        reached = reach_cost(xyah_to_xyxy(self._mean[tentative]), self._classes[tentative], reach_px,
                             boxes, classes, s.tentative_distance_weight)
        return np.minimum(plain, reached)

    def _correct(self, tracks: np.ndarray, boxes: np.ndarray, now_s: float) -> None:
        mean, cov = self._kalman.update(self._mean[tracks], self._cov[tracks], xyxy_to_xyah(boxes))
        self._mean[tracks] = mean
        self._cov[tracks] = cov
        missed = np.ones(len(self), bool)
        missed[tracks] = False
        self._hits[missed] = 0
        self._hits[tracks] += 1
        self._seen_s[tracks] = now_s
        self._seen_last = ~missed
        newly_confirmed = tracks[(self._ids[tracks] == UNTRACKED) & (self._hits[tracks] >= self.settings.confirm_hits)]
        self._ids[newly_confirmed] = self._allocate(len(newly_confirmed))

    def _start(self, dets: np.ndarray, boxes: np.ndarray, classes: np.ndarray, now_s: float) -> np.ndarray:
        """Tentative (or, with ``confirm_hits`` 1, confirmed) tracks; their ids aligned with ``dets``."""
        started = np.full(len(dets), UNTRACKED, np.int64)
        n = min(len(dets), max(self.settings.max_tracks - len(self), 0))
        if n < len(dets):
            log.warning("track table full (%d); %d new objects not tracked", self.settings.max_tracks, len(dets) - n)
        mean, cov = self._kalman.initiate(xyxy_to_xyah(boxes[:n]))
        ids = self._allocate(n) if self.settings.confirm_hits <= 1 else np.full(n, UNTRACKED, np.int64)
        self._ids = np.concatenate([self._ids, ids])
        self._classes = np.concatenate([self._classes, classes[:n].astype(np.int32)])
        self._mean = np.concatenate([self._mean, mean])
        self._cov = np.concatenate([self._cov, cov])
        self._hits = np.concatenate([self._hits, np.ones(n, np.int64)])
        self._seen_s = np.concatenate([self._seen_s, np.full(n, now_s)])
        self._seen_last = np.concatenate([self._seen_last, np.ones(n, bool)])
        started[:n] = ids
        return started

    def _allocate(self, n: int) -> np.ndarray:
        ids = np.arange(self._next_id, self._next_id + n, dtype=np.int64)
        self._next_id += n
        return ids

    def _select(self, keep: np.ndarray) -> None:
        self._ids = self._ids[keep]
        self._classes = self._classes[keep]
        self._mean = self._mean[keep]
        self._cov = self._cov[keep]
        self._hits = self._hits[keep]
        self._seen_s = self._seen_s[keep]
        self._seen_last = self._seen_last[keep]


#: how a camera's analysis gets its tracker, from the tracker's settings
MakeTracker = Callable[[TrackerSettings], TrackerLike]
