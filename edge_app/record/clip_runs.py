"""The file that a run of overlapping events shares, and each event's name of it.

A run writes one file at a time: named after its *owner* event, with every other event of the
run linking it under its own name (``<camera>/events/<event_id>[__p<N>].mp4``, a hard link). The
file ends at a keyframe once it is ``max_s`` long, the stream's format changes, or an ended
event has waited ``COMPLETE_WITHIN_S`` for its clip to complete; the run's events then go on in
a new part. ``EventClips`` decides which events share a run; ``RunFiles`` writes and names its files.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from edge_app.capture.packets import EncodedPacket, StreamInfo
from edge_app.record.clip_budget import ClipBudget
from edge_app.record.files import CameraFiles
from edge_app.record.index import FileRow
from edge_app.record.mp4 import Fmp4Writer, compatible
from edge_app.record.writing import FileWriting, length_s

log = logging.getLogger(__name__)

#: an event that ended while others of its run go on has its clip completed this long after its
#: post-roll at the latest (the shared file ends at the next keyframe; the others continue in a new part)
COMPLETE_WITHIN_S = 10.0


@dataclass
class ClipEvent:
    event_id: str
    start_ts: float
    end_deadline: Optional[float] = None  # end + post_s once the event ended
    part: int = -1  # its part number of the run's current file
    path: Optional[str] = None  # its name of the run's current file (relative)
    waiting: bool = True  # the recorder has not yet seen packets up to start - pre_s


@dataclass
class ClipRun:
    events: Dict[str, ClipEvent] = field(default_factory=dict)
    owner: str = ""  # the event whose name the writer's file has
    owner_part: int = 0  # and which part of that event's clip it is
    writer: Optional[Fmp4Writer] = None
    previous: Optional[FileRow] = None  # the run's last finished file (a late event's pre-roll may be there)
    ended: List[ClipEvent] = field(default_factory=list)  # post-roll over, their clip completes with this file


@dataclass(frozen=True)
class RunStop:
    """Why a run cannot go on writing: the hour's clip bytes are spent (``cut``), or an event's clip
    cannot be named (``leaving``: that event leaves the run)."""

    cut: bool = False
    leaving: Optional[ClipEvent] = None


class RunFiles:
    """Writes, names and closes the files of one camera's runs (on its recorder thread)."""

    def __init__(self, files: CameraFiles, io: FileWriting, budget: ClipBudget, max_s: float) -> None:
        self.store = files.store
        self.camera_id = files.camera_id
        self._files = files
        self._io = io
        self._budget = budget
        self.max_s = max_s  # a file this long continues in the next part

    def feed(self, run: ClipRun, info: StreamInfo, packet: EncodedPacket) -> Optional[RunStop]:
        """Write ``packet`` into the run's file, starting a new part where due."""
        if self._io.paused():
            return None
        writer = run.writer
        if writer is not None and packet.keyframe and (
                length_s(writer, packet) >= self.max_s or not compatible(writer.info, info)
                or _ended_waited(run, packet.wall_ts)):
            self.close(run)  # this part is complete; the next one starts at this keyframe
            writer = None
        if writer is None:
            if not packet.keyframe:
                return None
            if self._budget.spent(packet.wall_ts):
                return RunStop(cut=True)
            stop = self._open(run, info, packet)
            if stop is not None or run.writer is None:
                return stop
            writer = run.writer
        if self._budget.spent(packet.wall_ts):
            return RunStop(cut=True)
        if self._io.write(writer, info, packet):
            self._budget.wrote(packet.wall_ts, len(packet.data))
            if packet.keyframe:
                for event in run.events.values():
                    if event.path is not None:
                        self._files.index(writer, (event.event_id, event.part), "progressed", path=event.path)
        return None

    def close(self, run: ClipRun) -> None:
        """Finish the run's file: every event's name of it is indexed complete."""
        writer, run.writer = run.writer, None
        if writer is None:
            return
        self._io.close(writer, (run.owner, run.owner_part))
        run.previous = self.store.index.get(self._files.relative(writer))
        for event in [*run.events.values(), *run.ended]:
            if event.path is not None and event.event_id != run.owner:
                self._files.finish_link(event.path, run.previous, (event.event_id, event.part))
            event.path = None
        run.ended = []  # their clips end with this file; the next part is the others' only

    def link_current(self, run: ClipRun, event: ClipEvent) -> None:
        """The event's next part is a name of the file the run writes now."""
        writer = run.writer
        assert writer is not None
        event.part += 1
        event.path = self._name(event, event.part)
        source = self._files.relative(writer)
        if event.path is None or not self._link(source, event.path):
            event.path = None
            return
        self._files.start_link(writer, event.path, (event.event_id, event.part))

    def link_finished(self, row: FileRow, event: ClipEvent) -> None:
        """The event's part ``event.part`` is a name of the run's finished file ``row``."""
        path = self._name(event, event.part)
        if path is None or not self._link(row.path, path):
            return
        self._files.finish_link(path, row, (event.event_id, event.part))

    def hand_over(self, run: ClipRun) -> None:
        """The writer's file goes on under the name of another event of the run (the owner's
        name may be deleted with its event; the bytes stay while any name of them does)."""
        heir = next((e for e in [*run.events.values(), *run.ended] if e.path is not None), None)
        if heir is None or run.writer is None:
            return
        run.owner, run.owner_part = heir.event_id, heir.part
        run.writer.path = self.store.folder / heir.path

    def _open(self, run: ClipRun, info: StreamInfo, packet: EncodedPacket) -> Optional[RunStop]:
        owner = run.events.get(run.owner) or next(iter(run.events.values()))
        run.owner = owner.event_id
        owner.part += 1
        owner.path = self._name(owner, owner.part)
        if owner.path is None:
            return RunStop(leaving=owner)
        writer = self._io.open_file(owner.path, info, packet)
        if writer is None or not self._io.started(writer, (owner.event_id, owner.part)):
            owner.part -= 1
            owner.path = None
            return None
        run.writer, run.owner_part = writer, owner.part
        for event in run.events.values():
            if event is not owner:
                self.link_current(run, event)
        return None

    def _name(self, event: ClipEvent, part: int) -> Optional[str]:
        try:
            return self.store.clip_path(self.camera_id, event.event_id, part)
        except ValueError as err:
            log.warning("no clip for event %s: %s", event.event_id, err)
            return None

    def _link(self, source: str, target: str) -> bool:
        try:
            os.link(self.store.folder / source, self.store.folder / target)
            return True
        except FileExistsError:
            return (self.store.folder / source).samefile(self.store.folder / target)
        except OSError as err:  # a file system without hard links, EMLINK: this event goes without
            log.warning("clip %s cannot share %s: %s", target, source, err)
            return False


def _ended_waited(run: ClipRun, wall_ts: float) -> bool:
    """Whether an event whose post-roll is over has waited long enough for its clip to complete:
    the file then ends at this keyframe and the others go on in a new part. Waiting batches
    the ends of a busy scene into one new part every few seconds instead of one per event."""
    return any(e.end_deadline is not None and wall_ts >= e.end_deadline + COMPLETE_WITHIN_S for e in run.ended)
