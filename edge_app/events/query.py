"""What a client may ask of the event store: filters, a limit, and the answers' typed shapes."""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Dict, Optional

from edge_app.events.model import Event

DEFAULT_LIMIT = 50
MAX_LIMIT = 500
#: the most events a listing may skip; past it a client narrows the filters (after, before) instead.
#: While writes are held in memory a page is cut from the merge of everything before it, so the
#: offset bounds what one request may read.
MAX_OFFSET = 100_000
#: event ids the REST API accepts; the engine's "<start time>-<camera>-<track>" fits
EVENT_ID_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}"
_EVENT_ID = re.compile(EVENT_ID_PATTERN)
#: {camera: {line: {"in": n, "out": n}}}
LineCountsByCamera = Dict[str, Dict[str, Dict[str, int]]]


def valid_event_id(event_id: str) -> bool:
    return bool(_EVENT_ID.fullmatch(event_id))


def zone_event_id(readable: str, start_s: float, folded_tail: str) -> str:
    """The id of a zone's event (loitering, occupancy): ``readable`` when it is a valid id, else
    ``<start_s>-<folded_tail>-<hash of readable>``, so long zone names still make a valid id."""
    if valid_event_id(readable):
        return readable
    digest = hashlib.sha256(readable.encode("utf-8")).hexdigest()[:16]
    return f"{start_s:.6f}-{folded_tail}-{digest}"


def snapshot_file_name(event_id: str) -> str:
    """A file name for the event's snapshot that can never leave the snapshot folder.

    A safe id is used as it is, so an operator recognises the files; any other id becomes a
    hash, with a leading "_" that no safe id has, so the two kinds of name never collide.
    """
    if valid_event_id(event_id):
        return event_id + ".jpg"
    return "_" + hashlib.sha256(event_id.encode("utf-8", "surrogatepass")).hexdigest()[:40] + ".jpg"


@dataclass(frozen=True)
class EventQuery:
    """Filters of ``GET /api/v1/events``; None means no filter. Newest (by start time) first."""

    camera: Optional[str] = None
    label: Optional[str] = None
    zone: Optional[str] = None  # one of the event's entered zones
    after: Optional[float] = None  # start_time > after, Unix seconds
    before: Optional[float] = None  # start_time < before
    limit: int = DEFAULT_LIMIT
    offset: int = 0  # events skipped (newest first) before the first one answered
    has_clip: Optional[bool] = None  # True: only events with a clip; False: only those without

    @property
    def bounded_limit(self) -> int:
        return max(1, min(MAX_LIMIT, int(self.limit)))

    def matches(self, event: Event) -> bool:
        if self.camera is not None and event.camera_id != self.camera:
            return False
        if self.label is not None and event.label != self.label:
            return False
        if self.zone is not None and self.zone not in event.entered_zones:
            return False
        if self.after is not None and not event.start_time > self.after:
            return False
        if self.before is not None and not event.start_time < self.before:
            return False
        if self.has_clip is not None and event.has_clip != self.has_clip:
            return False
        return True


def newest_first_key(event: Event) -> tuple:
    return (-event.start_time, _reverse(event.id))


def _reverse(text: str) -> tuple:
    # ids descending within one start time, to match ORDER BY start_time DESC, id DESC
    return tuple(-ord(ch) for ch in text) + (1,)


@dataclass(frozen=True)
class DatabaseReport:
    """The database file itself: sound, or found corrupt and what was done about it."""

    # "ok"; "recovered": found corrupt, moved aside (with its snapshots) and a new one started;
    # "corrupt": found corrupt and still in place (it could not be moved: reads answer an error)
    state: str = "ok"
    reason: Optional[str] = None  # what SQLite said of the file
    moved_to: Optional[str] = None  # the folder now holding the corrupt file and its snapshots
    detected_ts: Optional[float] = None  # Unix seconds


@dataclass(frozen=True)
class StoreHealth:
    """How the event store is doing, for the status report and the log."""

    directory: str
    on_disk: bool  # the latest writes reached the database
    problem: Optional[str]  # why not (an unwritable folder, a full disk), else None
    queued: int  # writes waiting for the writer thread
    dropped: int  # writes dropped because the queue was full
    held_in_memory: int  # events kept in memory until the disk takes them again
    database: DatabaseReport = field(default_factory=DatabaseReport)
