"""Everything the appliance derives from one camera's detections: tracks, zones, lines, events, counts.

Use one :class:`CameraAnalysis` per camera and feed it every analysed frame, in time order,
from one thread::

    analysis = CameraAnalysis.from_config(camera_config, app_config.events, line_seed=persisted)
    result = analysis.process(frame_id, ts, image, detections)   # -> FrameAnalysis
    ...publish result.detections, result.events, result.snapshots, the counts...
    analysis.tick(now)          # when no frame came for a while: ages tracks, ends events
    final = analysis.end_all(now)  # shutdown or detect OFF: ``end`` messages, counts to 0

``process`` is pure apart from the JPEG encoding of snapshots (bounded, see
``edge_app.events.snapshots``): no clock (``ts`` is the frame's capture time in Unix seconds),
no I/O, no locks. Counts in a :class:`FrameAnalysis` are changes only; :meth:`counts` gives
them all (``GET /api/v1/counts``).

An object ends (its event ends, it leaves its zones and the counts) when its track ends, and
the tracker drops a track unseen for ``events.end_after_s``, so all of them happen at once.
"""
from __future__ import annotations

import dataclasses
import threading
import time
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from edge_app.detect.detections import Detections
from edge_app.capture.gpu_image import FrameImage, bgr_image, image_hw
from edge_app.events.counts import LabelCounts, LineCounts, LineTotals
from edge_app.events.frame_analysis import CountsSnapshot, Crossing, FrameAnalysis
from edge_app.events.lifecycle import DEFAULT_UPDATE_INTERVAL_S, EventBook, Sighting
from edge_app.events.loitering import LoiteringWatch
from edge_app.events.model import Event, Snapshot
from edge_app.events.occupancy import OccupancyWatch
from edge_app.events.snapshots import SnapshotKeeper, SnapshotSettings
from edge_app.events.zone_snapshots import ZoneEventSnapshots
from edge_app.events.zone_stats import ZoneStatsBook
from edge_app.reporting.stage_times import StageTimes
from edge_app.track import (Line, SpeedMeter, SpeedPair, SpeedZone, Tracker, TrackerSettings, Zone,
                            ZoneChange, ZoneSpeedMeter, reference_points)
from edge_app.track.dwell import DwellClock, ZoneVisit
from edge_app.track.placement import Areas, CameraPlacement, Occupants, Placed, PlacingTracker
from edge_app.track.tracker import MakeTracker, TrackerLike


@dataclass(frozen=True)
class ZoneRules:
    """What zones may alert on, by zone name (``cameras[].zones[]``): only the zones that set them."""

    loitering_s: Mapping[str, float] = field(default_factory=dict)
    max_objects: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def from_config(cls, zones) -> "ZoneRules":
        return cls({z.name: z.loitering_s for z in zones if z.loitering_s is not None},
                   {z.name: z.max_objects for z in zones if z.max_objects is not None})


@dataclass(frozen=True)
class AnalysisSettings:
    events_enabled: bool = True
    event_labels: frozenset = frozenset()
    min_frames: int = 3
    end_after_s: float = 2.0
    update_interval_s: float = DEFAULT_UPDATE_INTERVAL_S
    snapshots: SnapshotSettings = SnapshotSettings()


class CameraAnalysis:
    """Tracking, zones, lines, events and counts of one camera."""

    def __init__(self, camera_id: str, settings: AnalysisSettings = AnalysisSettings(), zones: Sequence[Zone] = (),
                 lines: Sequence[Line] = (), line_seed: Optional[Mapping[str, object]] = None,
                 tracker_settings: Optional[TrackerSettings] = None, model: str = "default",
                 stage_times: Optional[StageTimes] = None, rules: ZoneRules = ZoneRules(),
                 speed_pairs: Sequence[SpeedPair] = (), speed_zones: Sequence[SpeedZone] = (),
                 make_tracker: MakeTracker = Tracker) -> None:
        self.camera_id = camera_id
        # Where each frame's time in tracking, zones and lines, events and snapshots is added.
        self.stage_times = stage_times if stage_times is not None else StageTimes()
        self._untimed = StageTimes()  # tick() ages tracks without a frame: not a frame's time
        self.model = model
        self.settings = settings
        base = tracker_settings or TrackerSettings()
        # The track outlives a gap exactly as long as the event does: one notion of "gone".
        # make_tracker: the tracker here, or in a child process (edge_app.track.processes).
        self.tracker: TrackerLike = make_tracker(dataclasses.replace(base, lost_timeout_s=settings.end_after_s))
        # A tracker in a child process places the frames in the zones and lines there too, off
        # this process's interpreter lock; here the placement holds them otherwise.
        areas = Areas(tuple(zones), tuple(lines))
        self._placed_by_tracker = bool(zones or lines) and isinstance(self.tracker, PlacingTracker)
        if self._placed_by_tracker:
            self.tracker.place_with(areas)  # type: ignore[attr-defined]
        self.placement = CameraPlacement(Areas() if self._placed_by_tracker else areas)
        self._occupants: Occupants = {}  # who is in each zone now (ZoneTracker.occupants)
        self.dwell = DwellClock()
        self.speeds = SpeedMeter(list(speed_pairs))
        self.zone_speeds = ZoneSpeedMeter(list(speed_zones))
        self.book = EventBook(camera_id, settings.event_labels, settings.min_frames, settings.update_interval_s,
                              frames_before_track=self.tracker.settings.confirm_hits - 1, model=model,
                              dwell_of=self.dwell.dwell_s)
        self.loitering = LoiteringWatch(camera_id, rules.loitering_s, model)
        self.occupancy = OccupancyWatch(camera_id, rules.max_objects, model)
        self.zone_stats = ZoneStatsBook([zone.name for zone in zones], rules.max_objects)
        self.snapshots = SnapshotKeeper(settings.snapshots)
        self.line_counts = LineCounts([line.name for line in lines], line_seed)
        self._object_counts: LabelCounts[str] = LabelCounts()
        self._zone_counts: LabelCounts[Tuple[str, str]] = LabelCounts()
        self._last_ts: Optional[float] = None
        self._latest_event: Dict[str, str] = {}   # label -> id of its most recent event
        # counts() may be read by the API while a frame is processed
        self._counts_lock = threading.Lock()

    @classmethod
    def from_config(cls, camera, events, jpeg_quality: int = 85,
                    line_seed: Optional[Mapping[str, object]] = None,
                    stage_times: Optional[StageTimes] = None, make_tracker: MakeTracker = Tracker) -> "CameraAnalysis":
        """From a ``CameraConfig`` and the ``EventsConfig`` (``jpeg_quality``: ``snapshots.jpeg_quality``)."""
        settings = AnalysisSettings(
            events_enabled=events.enabled, event_labels=frozenset(events.labels), min_frames=events.min_frames,
            end_after_s=events.end_after_s,
            snapshots=SnapshotSettings(enabled=events.enabled and events.snapshots, jpeg_quality=jpeg_quality),
        )
        pairs = [pair for pair in (SpeedPair.from_config(line) for line in camera.lines) if pair is not None]
        speed_zones = [zone for zone in (SpeedZone.from_config(z) for z in camera.zones) if zone is not None]
        return cls(camera.id, settings, [Zone.from_config(z) for z in camera.zones],
                   [Line.from_config(line) for line in camera.lines], line_seed, model=camera.model,
                   stage_times=stage_times, rules=ZoneRules.from_config(camera.zones), speed_pairs=pairs,
                   speed_zones=speed_zones, make_tracker=make_tracker)

    # ----------------------------------------------------------------- per frame
    def process(self, frame_id: int, ts: float, image: Optional[FrameImage], detections: Detections,
                frame_size: Optional[Tuple[int, int]] = None) -> FrameAnalysis:
        """Analyse one frame. ``image`` is the frame the detections are from (only read, and
        only to encode a snapshot: an NV12 frame on the GPU is downloaded only then);
        ``frame_size`` ``(width, height)`` is needed when it is None."""
        if image is not None:
            height, width = image_hw(image)
        elif frame_size is not None:
            width, height = frame_size
        elif len(detections):
            raise ValueError("process needs the image or frame_size to place detections in zones and lines")
        else:
            width = height = 1
        started_s = time.perf_counter()
        if self._placed_by_tracker:
            ids, placed = self.tracker.update_placed(detections, ts, (width, height))  # type: ignore[attr-defined]
            return self._analyse(frame_id, ts, image, detections, ids, width, height, started_s, placed)
        ids = self.tracker.update(detections, ts)
        return self._analyse(frame_id, ts, image, detections, ids, width, height, started_s)

    def _analyse(self, frame_id: int, ts: float, image: Optional[FrameImage], detections: Detections,
                 ids: np.ndarray, width: int, height: int, started_s: float,
                 placed: Optional[Placed] = None) -> FrameAnalysis:
        """Zones, lines, events and counts of a frame the tracker has seen (or of a tick);
        ``placed``: its zone changes and crossings when the tracker placed it (in its child, whose
        time is then the tracking's)."""
        clock, camera_id = time.perf_counter, self.camera_id
        stages = self.stage_times if frame_id >= 0 else self._untimed
        removed = self.tracker.removed_ids
        tracked = detections.with_track_ids(ids)
        labels = tracked.label_array()
        # Where the objects stand: for the zones and lines here, and for the speed zones (a tracker
        # that placed the frame in its child has used its own).
        points = reference_points(tracked.xyxy, width, height) if placed is None or self.zone_speeds.zones else None
        self._last_ts = ts if self._last_ts is None else max(self._last_ts, ts)
        now = self._last_ts

        tracked_s = clock()
        stages.add(camera_id, "tracking", tracked_s - started_s)

        if placed is None:
            placed = self.placement.place(ids, labels, points, ts, removed)
        zone_changes, line_crossings = placed.zone_changes + self._left_unsaid(removed, placed), placed.crossings
        if placed.occupants is not None:
            self._occupants = placed.occupants
        if points is not None:
            self.zone_speeds.update(ids, points, ts)
        zone_readings = self.zone_speeds.readings(zone_changes)
        self.zone_speeds.forget(removed)
        speeds = {(reading.line, reading.track_id): reading for reading in self.speeds.observe(line_crossings)}
        self.speeds.forget(removed)
        placed_s = clock()
        stages.add(camera_id, "zones_lines", placed_s - tracked_s)

        result = FrameAnalysis(self.camera_id, int(frame_id), float(ts), tracked, model=self.model)
        self.book.observe_frame(ids, labels, tracked.confidence, tracked.xyxy, ts, (width, height))
        for change in zone_changes:
            self.book.zone_change(change.track_id, change.zone, change.change == "enter")
        for reading in list(speeds.values()) + zone_readings:
            self.book.speed_measured(reading.track_id, reading.speed_kmh, reading.over_limit)
        closed = self._time_visits(ids, ts, zone_changes)
        snapped = ZoneEventSnapshots(self.snapshots, self.dwell, image, tracked, ids)
        if self.settings.events_enabled:  # loitering ends first: the object's own end may follow in this frame
            result.events.extend(m for m in (self.loitering.close(v, self.book.sighting) for v in closed) if m)
            if self.loitering.limits_s:
                result.events.extend(snapped.mark(self.loitering.check(self.dwell, self.book.sighting), self.loitering))

        # Ended tracks first: their last zone exits are part of the ``end``, not an ``update`` before it.
        for ended in self.book.end_tracks(removed):
            self.snapshots.forget(ended.after.id)
            result.events.append(ended)
        for track_id in removed:  # after the end messages: they carry the tracks' dwell
            self.dwell.end(track_id)
        if self.settings.events_enabled and self.occupancy.limits:  # the zones as this frame left them
            crowded = self.occupancy.check(now, self._occupants, self._sightings_in)
            result.events.extend(snapped.mark(crowded, self.occupancy))
        result.snapshots.extend(snapped.taken)
        if snapped.seconds:
            stages.add(camera_id, "snapshots", snapped.seconds, frames=0)  # the frame is counted with the objects' below
            placed_s += snapped.seconds  # the events' time below leaves the snapshots out
        if self.settings.events_enabled:
            for event in self.book.promote():
                self._latest_event[event.label] = event.id
            if image is not None:
                snapping_s = clock()
                result.snapshots.extend(self._snapshots(image, tracked, ids, now))
                for snapshot in result.snapshots:
                    if self._latest_event.get(snapshot.label) == snapshot.event_id:
                        result.label_snapshots[snapshot.label] = snapshot
                snapped_s = clock()
                stages.add(camera_id, "snapshots", snapped_s - snapping_s)
                placed_s += snapped_s - snapping_s  # the events' time below leaves the snapshots out
            result.events.extend(self.book.flush(now))

        result.tracks.extend(self.book.take_tracks())
        objects_now, zones_now = self.book.labels_in_view(), _flatten(self._occupants)
        with self._counts_lock:
            for crossing in line_crossings:
                event_id = self.book.event_id_of(crossing.track_id)
                result.crossings.append(Crossing(crossing.line, crossing.track_id, crossing.label, crossing.direction,
                                                 event_id, float(ts), speeds.get((crossing.line, crossing.track_id))))
                result.line_counts[crossing.line] = self.line_counts.add(crossing)
            result.object_counts.update(self._object_counts.update(objects_now))
            result.zone_counts.update(self._zone_counts.update(zones_now))
            result.zone_stats.update(self.zone_stats.update(now, _per_zone(zones_now), self.loitering.loitering()))
        stages.add(camera_id, "events", clock() - placed_s)
        return result

    def tick(self, now: float) -> FrameAnalysis:
        """No frame for a while (a stalled camera, detection switched off): age the tracks so
        objects still end and counts fall to 0.

        Only ages them: a tick is not a frame in which nothing was seen. A camera analysed once
        a second on a busy device is idle that long between any two of its frames, and ``now``
        is then later than the capture time of its next frame; fed to the tracker as an empty
        frame, every tick would break its tentative tracks and its motion model."""
        started_s, placed = time.perf_counter(), None
        if self._placed_by_tracker:
            placed = self.tracker.expire_placed(now)  # type: ignore[attr-defined]
        else:
            self.tracker.expire(now)
        return self._analyse(-1, now, None, Detections.empty(), np.zeros(0, np.int64), 1, 1, started_s, placed)

    def end_all(self, now: float) -> FrameAnalysis:
        """Shutdown, or analysis switched off: every open event ends (``end_time`` = ``now``),
        every track is forgotten and the object and zone counts fall to 0 (in the result).
        Line totals stay. The analysis can go on afterwards; new objects get new ids."""
        result = FrameAnalysis(self.camera_id, -1, float(now), Detections.empty(), model=self.model)
        live = self.tracker.active_ids()
        self.placement.forget(live)  # a tracker that places its frames forgets them itself on reset
        self.speeds.forget(live)
        self.zone_speeds.forget(live)
        self.tracker.reset()
        self._occupants = {}
        result.events.extend(self.occupancy.end_all(now))
        closed = self.dwell.close_all()
        for visit in closed:
            self.zone_stats.visit_closed(visit)
            ended = self.loitering.close(visit, self.book.sighting)
            if ended is not None:
                result.events.append(ended)
        for message in self.book.end_all(now):
            self.snapshots.forget(message.after.id)
            result.events.append(message)
        result.tracks.extend(self.book.take_tracks())
        self.dwell.clear()
        with self._counts_lock:
            result.object_counts.update(self._object_counts.update({}))
            result.zone_counts.update(self._zone_counts.update({}))
            result.zone_stats.update(self.zone_stats.update(now, {}, self.loitering.loitering()))
        return result

    # ------------------------------------------------------------------ queries
    def counts(self) -> CountsSnapshot:
        """Every count now (``GET /api/v1/counts``); safe to call from another thread."""
        with self._counts_lock:
            objects, zone_pairs, lines = self._object_counts.snapshot(), self._zone_counts.snapshot(), self.line_counts.totals()
            zone_stats = self.zone_stats.snapshot()
        zones: Dict[str, Dict[str, int]] = {}
        for (zone, label), count in zone_pairs.items():
            zones.setdefault(zone, {})[label] = count
        return CountsSnapshot(objects, zones, lines, zone_stats)

    def reset_line_counts(self, line: Optional[str] = None) -> Dict[str, LineTotals]:
        """Set one line's totals (or all) back to 0; returns the totals to publish and persist."""
        with self._counts_lock:
            self.line_counts.reset(line)
            return self.line_counts.totals()

    def open_events(self) -> List[Event]:
        return self.book.open_events()

    def idle_s(self, now: float) -> float:
        """Seconds since the last frame processed (infinite before the first)."""
        return float("inf") if self._last_ts is None else max(0.0, now - self._last_ts)

    # ---------------------------------------------------------------- internals
    def _time_visits(self, ids: np.ndarray, ts: float, changes: List[ZoneChange]) -> List[ZoneVisit]:
        """Zone entries open visits and exits close them (``DwellClock``); the visits closed now."""
        self.dwell.seen(ids.tolist(), ts)
        closed = []
        for change in changes:
            if change.change == "enter":
                self.dwell.enter(change.zone, change.track_id, change.label, ts if change.at_s is None else change.at_s)
            else:
                visit = self.dwell.leave(change.zone, change.track_id, change.at_s)
                if visit is not None:
                    closed.append(visit)
                    self.zone_stats.visit_closed(visit)
        return closed

    def _left_unsaid(self, removed: Sequence[int], placed: Placed) -> List[ZoneChange]:
        """Tracks that ended inside a zone whose exit the placement did not give: only a tracker
        child that died, and the zones it held with it. They leave here, as a track that ends does."""
        if not self._placed_by_tracker or not removed:
            return []
        said = {(change.zone, change.track_id) for change in placed.zone_changes if change.change == "leave"}
        ended = set(removed)
        return [ZoneChange(visit.zone, visit.track_id, visit.label, "leave") for visit in self.dwell.open_visits()
                if visit.track_id in ended and (visit.zone, visit.track_id) not in said]

    def _sightings_in(self, zone: str) -> List[Sighting]:
        """The live objects inside ``zone`` as last seen."""
        seen = (self.book.sighting(visit.track_id) for visit in self.dwell.open_visits() if visit.zone == zone)
        return [sighting for sighting in seen if sighting is not None]

    def _snapshots(self, image: FrameImage, tracked: Detections, ids: np.ndarray, now: float) -> List[Snapshot]:
        if not self.snapshots.settings.enabled:
            return []
        index, event_ids = self.book.events_in_frame(ids)
        in_frame = list(zip(index.tolist(), event_ids, tracked.confidence[index].tolist()))
        taken = []
        for index in self.snapshots.candidates(in_frame, now):
            track_id = int(ids[index])
            taken.append(self.snapshots.take(bgr_image(image), tracked, index, self.book.event_of(track_id)))
            self.book.snapshot_taken(track_id)
        return taken


def _per_zone(zone_counts: Dict[Tuple[str, str], int]) -> Dict[str, int]:
    totals: Dict[str, int] = {}
    for (zone, _), count in zone_counts.items():
        totals[zone] = totals.get(zone, 0) + count
    return totals


def _flatten(occupants: Dict[str, Dict[str, int]]) -> Dict[Tuple[str, str], int]:
    return {(zone, label): n for zone, per_label in occupants.items() for label, n in per_label.items()}
