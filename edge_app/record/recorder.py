"""One camera's recorder: the ``PacketSink`` its demuxer calls, and a thread ``record:<camera>`` that
hands each packet to the recorder's two parts, its event clips (``EventClips``, with the pre-roll
ring) and its continuous segments (``ContinuousSegments``), which write through one
``CameraWriting`` (pausing when the disk runs low).

The capture thread only queues (a bounded queue; what does not fit is counted as dropped); the
events side only queues orders (event started / ended / deleted). Everything else happens on
the recorder's own thread, so a slow disk never stalls analysis.
"""
from __future__ import annotations

import logging
import queue
import threading
import time
from dataclasses import replace
from typing import Callable, Optional

from edge_app.capture.packets import RECORDABLE_CODECS, EncodedPacket, StreamInfo
from edge_app.config.schema_record import RecordSettings
from edge_app.health.free_space import free_bytes as read_free_bytes
from edge_app.record.event_clips import EventClips
from edge_app.record.files import CameraFiles
from edge_app.record.inbox import DEFAULT_BYTES, DEFAULT_ITEMS, Inbox
from edge_app.record.retention import MB
from edge_app.record.ring import DEFAULT_MAX_BYTES
from edge_app.record.segments import ContinuousSegments
from edge_app.record.store import RecordingStore
from edge_app.record.types import CameraRecordingStatus, ClipInfo
from edge_app.record.writing import CameraWriting

log = logging.getLogger(__name__)

IDLE_CHECK_S = 0.5  # how often the thread looks at the clock while no packet comes
#: a camera offline this long: clips whose post-roll is over are finished without waiting for it
OFFLINE_FINISH_S = 10.0


class CameraRecorder:
    """Implements ``PacketSink`` for one camera; ``start()`` runs its thread, ``stop()`` finishes every file."""

    def __init__(self, store: RecordingStore, settings: RecordSettings, *, reserve_bytes: int = 512 * MB,
                 on_clip: Optional[Callable[[ClipInfo], None]] = None,
                 free_bytes: Optional[Callable[[], int]] = None,
                 queue_packets: int = DEFAULT_ITEMS, queue_bytes: int = DEFAULT_BYTES,
                 ring_max_bytes: int = DEFAULT_MAX_BYTES,
                 offline_finish_s: float = OFFLINE_FINISH_S) -> None:
        self.store = store
        self.settings = settings
        self.camera_id = settings.camera_id
        self._offline_finish_s = offline_finish_s
        self._inbox = Inbox(queue_packets, queue_bytes)
        self._orders: "queue.SimpleQueue" = queue.SimpleQueue()
        self._thread: Optional[threading.Thread] = None
        self._lock = threading.Lock()  # guards the figures status() reads
        self._open_files = 0
        self._open_bytes = 0
        self._capture_info: Optional[StreamInfo] = None  # the capture thread's connection (the ring's)
        self._clips_skipped = self._clips_cut = 0
        self._clips_limited: Optional[str] = None
        files = CameraFiles(store, self.camera_id, on_clip)
        self._writing = CameraWriting(files, reserve_bytes, free_bytes or (lambda: read_free_bytes(store.folder)),
                                      drop_writers=self._drop_writers)
        self._clips = EventClips(settings, files, self._writing, ring_max_bytes=ring_max_bytes)
        self._segments = ContinuousSegments(settings, self._writing)
        self._files = files

    # ---- PacketSink (capture thread: never blocks) ---------------------------------------------

    def stream_opened(self, info: StreamInfo) -> None:
        self._capture_info = info
        self._inbox.always(("opened", info))

    def packet(self, packet: EncodedPacket) -> None:
        # the pre-roll is kept here, before the queue: a full queue never costs a clip its pre-roll
        if self._capture_info is not None and self._capture_info.codec in RECORDABLE_CODECS:
            self._clips.keep(self._capture_info, packet)
        self._inbox.offer(("packet", packet), len(packet.data), packet.keyframe)

    def stream_closed(self, reason: str) -> None:
        self._capture_info = None
        self._inbox.always(("closed", reason))

    def unavailable(self, reason: str) -> None:
        self._writing.unavailable(f"recording unavailable: {reason}")

    # ---- orders from the events side -----------------------------------------------------------

    def event_started(self, event_id: str, camera_id: str, start_ts: float) -> None:
        if camera_id == self.camera_id:
            self._order(("started", event_id, start_ts))

    def event_ended(self, event_id: str, end_ts: float) -> None:
        self._order(("ended", event_id, end_ts))

    def event_deleted(self, event_id: str) -> None:
        self._order(("deleted", event_id))

    def update(self, settings: RecordSettings) -> None:
        """New settings for this camera (a configuration change); applied on the recorder's thread."""
        self._order(("settings", settings))

    def _order(self, order) -> None:
        self._orders.put(order)
        self._inbox.put(("wake",), 0)  # when full, the thread is busy and looks at orders before each item

    # ---- life --------------------------------------------------------------------------------

    def start(self) -> "CameraRecorder":
        self._thread = threading.Thread(target=self._run, name=f"record:{self.camera_id}", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        """Write what is queued, finish every file (complete), end the thread."""
        if not self._inbox.put(("stop",), timeout_s):  # after what is queued: that is written first
            self._orders.put(("stop",))  # the thread is stuck: finish without the rest
        if self._thread is not None:
            self._thread.join(timeout_s)

    def wait_idle(self, timeout_s: float) -> bool:
        """Wait until everything queued so far is handled; False on timeout."""
        return self._inbox.wait_idle(timeout_s)

    def status(self) -> CameraRecordingStatus:
        paused = self._writing.paused_reason
        with self._lock:
            return CameraRecordingStatus(
                camera_id=self.camera_id, events_enabled=self.settings.events_enabled,
                continuous_enabled=self.settings.continuous_enabled,
                recording=self._open_files > 0 and paused is None, unavailable=self._writing.unavailable_reason,
                paused=paused, bytes_written=self._files.bytes_done + self._open_bytes,
                packets_dropped=self._inbox.dropped, clips_preroll_short=self._clips.preroll_short,
                clips_skipped=self._clips_skipped, clips_cut=self._clips_cut, clips_limited=self._clips_limited)

    def _publish(self) -> None:
        """What status() says about the open files (it runs on other threads: it never walks them)."""
        writers = self._clips.writers()
        writers += [self._segments.writer] if self._segments.writer is not None else []
        budget = self._clips.budget
        with self._lock:
            self._open_files = len(writers)
            self._open_bytes = sum(w.bytes for w in writers)
            self._clips_skipped, self._clips_cut, self._clips_limited = budget.skipped, budget.cut, budget.limited

    # ---- the recorder thread -----------------------------------------------------------------

    def _run(self) -> None:
        info: Optional[StreamInfo] = None
        closed_since: Optional[float] = None
        while True:
            item = self._inbox.take(IDLE_CHECK_S)
            if item is None:
                if closed_since is not None and time.monotonic() - closed_since > self._offline_finish_s:
                    self._clips.finish_ended(time.time())  # the camera is gone: post-rolls end by the clock
                    self._publish()
                continue
            try:
                if not self._apply_orders() or item[0] == "stop":
                    break
                if item[0] == "opened":
                    info, closed_since = item[1], None
                    if info.codec in RECORDABLE_CODECS:
                        self._writing.unavailable(None)
                elif item[0] == "closed":
                    info = None  # packets until the next stream_opened have no stream to belong to
                    closed_since = time.monotonic()
                elif item[0] == "packet" and info is not None:
                    self._handle(info, item[1])
            except Exception:  # noqa: BLE001 - a dead thread would leave status saying it records
                log.exception("recording %s: unexpected error; its open files are finished", self.camera_id)
                self._drop_writers_after_error()
            finally:
                self._inbox.done(len(item[1].data) if item[0] == "packet" else 0)
        self._clips.finish_all()
        self._segments.close()
        self._publish()

    def _apply_orders(self) -> bool:
        while True:
            try:
                order = self._orders.get_nowait()
            except queue.Empty:
                return True
            name = order[0]
            if name == "stop":
                return False
            if name == "started":
                self._clips.started(order[1], order[2])
            elif name == "ended":
                self._clips.ended(order[1], order[2])
            elif name == "deleted":
                self._clips.deleted(order[1])
                self._publish()
            elif name == "settings":
                self.settings = replace(order[1], camera_id=self.camera_id)
                self._clips.configure(self.settings)
                self._segments.configure(self.settings)

    def _handle(self, info: StreamInfo, packet: EncodedPacket) -> None:
        if info.codec not in RECORDABLE_CODECS:
            self._writing.unavailable(f"recording unavailable: codec {info.codec} cannot be recorded by stream copy")
            return
        if packet.keyframe:
            self._writing.check_disk()
            self._publish()
        self._clips.packet(info, packet)
        self._segments.packet(info, packet)

    def _drop_writers(self) -> None:
        """Close every open file as far as the disk allows; an active clip continues in a new part."""
        self._clips.drop_writers()
        self._segments.close()

    def _drop_writers_after_error(self) -> None:
        try:
            self._drop_writers()
        except Exception:  # noqa: BLE001 - the files are abandoned; the index is rebuilt from them at start
            log.exception("recording %s: its open files could not be finished", self.camera_id)
            self._clips.forget_writers()
            self._segments.forget()
        self._publish()
