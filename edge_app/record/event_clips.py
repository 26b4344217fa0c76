"""A camera's event clips, written once however many events overlap.

Events of one camera that overlap share one file (a *run*): the run starts at the keyframe the
first event's pre-roll needs and goes on while any of its events has post-roll left. Each event's
clip is a hard link to the run's file (``<camera>/events/<event_id>.mp4``), so its bytes are on
the disk once; an event that joins later links the same file (which begins before its own
pre-roll), and events starting on the same frame get the same file. A clip is complete when its file
is, so an event that ends while others go on ends the file at the first keyframe
``COMPLETE_WITHIN_S`` after its post-roll, and the others continue in a new file (their next
part); a run longer than ``max_s`` does the same. An event joining in the first moments of a
part, whose pre-roll is in the previous part, links that part too. Which events share a run is
decided here; the run's files are written and named by ``RunFiles`` (``clip_runs``).

Every file is one open descriptor and one stream written to the disk, so events that find no run
to join start one only while ``record.events.max_concurrent`` allows, and clips stop while the
camera's clip bytes of the last hour exceed ``record.events.max_mb_per_hour`` (``ClipBudget``).
"""
from __future__ import annotations

import logging
from typing import Dict, List, Optional

from edge_app.capture.packets import EncodedPacket, StreamInfo
from edge_app.config.schema_record import RecordSettings
from edge_app.record.clip_budget import ClipBudget
from edge_app.record.clip_runs import ClipEvent, ClipRun, RunFiles
from edge_app.record.files import CameraFiles
from edge_app.record.mp4 import Fmp4Writer
from edge_app.record.ring import DEFAULT_MAX_BYTES, PreRollRing, decode_wall
from edge_app.record.writing import FileWriting

log = logging.getLogger(__name__)

#: a run's file may begin this much after the keyframe an event wants and still serve it (clock noise)
JOIN_SLACK_S = 1e-3
#: events refused by a cap are logged at most once in this many seconds (with how many there were)
REFUSAL_LOG_INTERVAL_S = 60.0


class EventClips:
    """The event clips of one camera and their pre-roll ring. ``keep`` runs on the capture thread
    (it only fills the ring); everything else on the camera's recorder thread."""

    def __init__(self, settings: RecordSettings, files: CameraFiles, io: FileWriting,
                 ring_max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.camera_id = files.camera_id
        self.store = files.store
        self._files = files
        self._enabled = settings.events_enabled
        self._post_s = settings.post_s
        self._ring = PreRollRing(settings.pre_s, max_bytes=ring_max_bytes)
        self.budget = ClipBudget(settings.max_concurrent, settings.max_mb_per_hour)
        self._run_files = RunFiles(files, io, self.budget, settings.max_s)
        self._runs: List[ClipRun] = []
        self._waiting: Dict[str, ClipEvent] = {}
        self._reached: Optional[EncodedPacket] = None  # the last packet handled: the ring may hold newer ones
        self._warned_wall: Optional[float] = None
        self._warned_skipped = 0
        self.preroll_short = 0  # clips whose pre-roll the ring no longer held

    def configure(self, settings: RecordSettings) -> None:
        """The camera's new settings (a configuration change); open clips keep their files."""
        self._enabled, self._post_s = settings.events_enabled, settings.post_s
        self._run_files.max_s = settings.max_s
        self._ring.pre_s = settings.pre_s
        self.budget.set_limits(settings.max_concurrent, settings.max_mb_per_hour)
        if not settings.events_enabled:
            self._ring.clear()

    def keep(self, info: StreamInfo, packet: EncodedPacket) -> None:
        """The capture thread: a packet into the pre-roll ring (before the recorder's queue, so a
        full queue never costs a clip its pre-roll)."""
        if self._enabled:
            self._ring.add(info, packet)

    # ---- what the recorder asks --------------------------------------------------------------

    def writers(self) -> List[Fmp4Writer]:
        return [run.writer for run in self._runs if run.writer is not None]

    def open_events(self) -> int:
        return len(self._waiting) + sum(len(run.events) for run in self._runs)

    def knows(self, event_id: str) -> bool:
        return event_id in self._waiting or any(
            event_id in run.events or any(e.event_id == event_id for e in run.ended) for run in self._runs)

    def started(self, event_id: str, start_ts: float) -> None:
        if not self._enabled or self.knows(event_id):
            return
        event = self._waiting[event_id] = ClipEvent(event_id, start_ts)
        self._catch_up(event, None if self._reached is None else self._reached.wall_ts)

    def ended(self, event_id: str, end_ts: float) -> None:
        event = self._waiting.get(event_id) or next((r.events[event_id] for r in self._runs if event_id in r.events), None)
        if event is not None:
            event.end_deadline = end_ts + self._post_s

    def deleted(self, event_id: str) -> None:
        self._waiting.pop(event_id, None)
        for run in list(self._runs):
            gone = [e for e in run.ended if e.event_id == event_id]
            run.ended = [e for e in run.ended if e.event_id != event_id]
            active = run.events.pop(event_id, None)
            gone += [active] if active is not None else []
            if not gone:
                continue
            for event in gone:
                if event.path is not None:
                    self.store.forget_writing(event.path)  # its name goes with the event, below
            if not run.events:
                self._close_run(run)
            elif run.owner == event_id and run.writer is not None:
                self._run_files.hand_over(run)
        self._files.guard(lambda: self.store.delete_event(event_id))

    def packet(self, info: StreamInfo, packet: EncodedPacket) -> None:
        self._ring.reached(packet.wall_ts)
        self._reached = packet
        due = decode_wall(info, packet)
        for run in list(self._runs):
            for event in [e for e in run.events.values() if e.end_deadline is not None and due > e.end_deadline]:
                self._leave(run, event)
        runs = list(self._runs)  # a run started below from the ring has this packet already
        for event in list(self._waiting.values()):
            self._catch_up(event, packet.wall_ts)
        for run in runs:
            if run.events and run in self._runs:
                self._feed(run, info, packet)

    def finish_ended(self, now_wall: float) -> None:
        """The camera is gone: events whose post-roll is over leave their runs (and empty runs end)."""
        for run in list(self._runs):
            for event in [e for e in run.events.values() if e.end_deadline is not None and now_wall > e.end_deadline]:
                self._leave(run, event)

    def drop_writers(self) -> None:
        """Close every open file as far as the disk allows; active runs continue in a new part."""
        for run in self._runs:
            self._run_files.close(run)

    def forget_writers(self) -> None:
        """After an error the files could not even be closed: they are left to the next start's reconciling."""
        for run in self._runs:
            run.writer = None

    def finish_all(self) -> None:
        for run in list(self._runs):
            self._close_run(run)

    # ---- joining a run -------------------------------------------------------------------------

    def _catch_up(self, event: ClipEvent, newest_wall: Optional[float]) -> None:
        """Give the event its clip once the packets of start - pre_s have arrived.

        The order may come before the packets of its time when the recorder lags behind the
        camera; starting right away would take an older keyframe than the clip needs.
        """
        pre_s = self._ring.pre_s
        if newest_wall is None or newest_wall < event.start_ts - pre_s:
            return
        self._waiting.pop(event.event_id, None)
        event.waiting = False
        # the caps are judged at the event's own time, not when its order came (the recorder may lag)
        why = self.budget.why_not(sum(len(run.events) for run in self._runs), newest_wall)
        if why is not None:
            self.budget.refuse(why)
            self._warn_refused(event.event_id, why, newest_wall)
            return
        if not self._ring.reaches(event.start_ts - pre_s):
            self.preroll_short += 1
            log.warning("recording %s: the clip of event %s misses part of its pre-roll (the event came %.1f s "
                        "after its start)", self.camera_id, event.event_id, newest_wall - event.start_ts)
        held = self._ring.since(event.start_ts - pre_s, upto=self._reached)
        wanted = held[0][1].wall_ts if held else None
        run = self._run_covering(wanted)
        if run is not None:
            self._join(run, event, wanted)
            return
        run = ClipRun(events={event.event_id: event}, owner=event.event_id)
        self._runs.append(run)
        for held_info, held_packet in held:
            if event.end_deadline is not None and decode_wall(held_info, held_packet) > event.end_deadline:
                self._leave(run, event)
                return
            self._feed(run, held_info, held_packet)

    def _warn_refused(self, event_id: str, why: str, wall_ts: float) -> None:
        # a storm refuses many events a second: one line a minute says how many, not one line each
        if self._warned_wall is not None and wall_ts - self._warned_wall < REFUSAL_LOG_INTERVAL_S:
            return
        since = self.budget.skipped - self._warned_skipped
        self._warned_wall, self._warned_skipped = wall_ts, self.budget.skipped
        log.warning("event %s of %s is stored without a clip (%d since the last such line): %s",
                    event_id, self.camera_id, since, why)

    def _run_covering(self, wanted_wall: Optional[float]) -> Optional[ClipRun]:
        """An open run whose files hold the packets from ``wanted_wall`` on (None: the ring is empty,
        any run with a file will do)."""
        for run in self._runs:
            if run.writer is None:
                continue
            if wanted_wall is None or run.writer.start_wall <= wanted_wall + JOIN_SLACK_S:
                return run
            if run.previous is not None and run.previous.start <= wanted_wall + JOIN_SLACK_S:
                return run
        return None

    def _join(self, run: ClipRun, event: ClipEvent, wanted_wall: Optional[float]) -> None:
        writer = run.writer
        assert writer is not None
        if wanted_wall is not None and writer.start_wall > wanted_wall + JOIN_SLACK_S and run.previous is not None:
            event.part = 0
            self._run_files.link_finished(run.previous, event)
        run.events[event.event_id] = event
        self._run_files.link_current(run, event)

    def _feed(self, run: ClipRun, info: StreamInfo, packet: EncodedPacket) -> None:
        stop = self._run_files.feed(run, info, packet)
        if stop is not None and stop.cut:
            self._cut(run, packet.wall_ts)
        elif stop is not None and stop.leaving is not None:
            self._leave(run, stop.leaving)

    def _leave(self, run: ClipRun, event: ClipEvent) -> None:
        """The event's post-roll is over. Its clip is the run's file, so it is complete when that
        file is: when the last event of the run ends, the file reaches max_s, or at the first
        keyframe ``COMPLETE_WITHIN_S`` later (the others then go on in a new part); until then it
        takes no new parts and costs no index update."""
        run.events.pop(event.event_id, None)
        if event.path is not None:
            run.ended.append(event)
        if not run.events:
            self._close_run(run)

    def _close_run(self, run: ClipRun) -> None:
        self._run_files.close(run)
        if run in self._runs:
            self._runs.remove(run)

    def _cut(self, run: ClipRun, wall_ts: float) -> None:
        """The hour's clip bytes are spent: the run's clips end here."""
        why = self.budget.why_not(0, wall_ts) or "the clip budget is spent"
        self.budget.cut += len(run.events)
        self.budget.limited = why
        log.warning("clips of %s end early: %s", self.camera_id, why)
        self._close_run(run)

