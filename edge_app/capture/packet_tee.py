"""A camera's side of the packet hand-over: one ``PacketSink`` lease per opened source.

``CameraWorker`` wraps the recorder's sink in a ``PacketTee`` and gives every source it opens a
fresh ``lease()``. The tee keeps the promises of ``edge_app.capture.packets`` whatever the
sources do:

* the sink sees ``stream_opened`` / ``packet``... / ``stream_closed`` in pairs: a connection that
  a source never closed (the watchdog abandoned a capture thread stuck in the backend) is closed
  before the next one opens, and a second close is dropped;
* a source abandoned by the watchdog may wake up later and go on demuxing: its lease is no
  longer current, so its packets never interleave with the new connection's;
* ``unavailable`` reaches the sink once per reason, not on every reconnect;
* ``StreamInfo.camera_id`` is the camera's, so sources need not know it;
* a sink that raises never stops capture (logged once; the analysis goes on).
"""
from __future__ import annotations

import dataclasses
import logging
import threading
from typing import Optional

from edge_app.capture.packets import EncodedPacket, PacketSink, StreamInfo

logger = logging.getLogger(__name__)


class PacketTee:
    """Hands one camera's packets to ``sink``, one source (lease) at a time."""

    def __init__(self, camera_id: str, sink: PacketSink) -> None:
        self.camera_id = camera_id
        self._sink = sink
        self._lock = threading.Lock()
        self._current: Optional["PacketLease"] = None
        self._open = False
        self._unavailable: Optional[str] = None
        self._failed = False

    def lease(self) -> "PacketLease":
        """A sink for the next source; the previous lease goes stale (its calls are dropped)."""
        with self._lock:
            self._current = PacketLease(self)
            return self._current

    def close(self, reason: str) -> None:
        """The camera ends the current connection (failure, end of file, stop); no-op when none is open."""
        with self._lock:
            self._close_locked(reason)

    # -- called through a lease
    def _opened(self, lease: "PacketLease", info: StreamInfo) -> None:
        with self._lock:
            if lease is not self._current:
                return
            self._close_locked("reconnecting")
            self._unavailable = None
            self._open = True
            self._call("stream_opened", dataclasses.replace(info, camera_id=self.camera_id))

    def _packet(self, lease: "PacketLease", packet: EncodedPacket) -> None:
        # no lock: one capture thread at a time owns the current lease; a stale one is refused
        if lease is self._current and self._open:
            self._call("packet", packet)

    def _closed(self, lease: "PacketLease", reason: str) -> None:
        with self._lock:
            if lease is self._current:
                self._close_locked(reason)

    def _no_stream(self, lease: "PacketLease", reason: str) -> None:
        with self._lock:
            if lease is not self._current or reason == self._unavailable:
                return
            self._close_locked("no compressed stream")
            self._unavailable = reason
            self._call("unavailable", reason)

    def _close_locked(self, reason: str) -> None:
        if self._open:
            self._open = False
            self._call("stream_closed", reason)

    def _call(self, method: str, arg: object) -> None:
        try:
            getattr(self._sink, method)(arg)
        except Exception:
            if not self._failed:  # once: a broken sink would otherwise log every packet
                self._failed = True
                logger.exception("camera %s: packet sink failed in %s; capture goes on", self.camera_id, method)


class PacketLease:
    """The ``PacketSink`` one opened source writes to (see ``PacketTee``)."""

    def __init__(self, tee: PacketTee) -> None:
        self._tee = tee

    @property
    def camera_id(self) -> str:
        return self._tee.camera_id

    def stream_opened(self, info: StreamInfo) -> None:
        self._tee._opened(self, info)

    def packet(self, packet: EncodedPacket) -> None:
        self._tee._packet(self, packet)

    def stream_closed(self, reason: str) -> None:
        self._tee._closed(self, reason)

    def unavailable(self, reason: str) -> None:
        self._tee._no_stream(self, reason)
