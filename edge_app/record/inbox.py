"""The hand-over from a capture thread to its recorder thread: bounded in packets and in bytes.

The capture thread must never wait for a disk: a packet that does not fit is dropped and counted
(the camera's recording status shows the count). A clip then has a hole, never a stalled camera.
Once a packet is dropped, the rest of its GOP goes too, until the next keyframe that fits: the
frames after a missing one refer to it, so written they would only decode as garbage, and the
pre-roll ring behind the inbox keeps whole GOPs.
The other items (a connection opened or closed, orders, stop) are never dropped: without them
the packets after a reconnect would be measured from the old connection's origin. They are few
(one pair per reconnect, which the capture loop paces) and take no room from packets.
"""
from __future__ import annotations

import collections
import threading
import time
from typing import Any, Deque, Optional, Tuple

#: packets waiting for the recorder thread: ~30 s of a 30 fps camera
DEFAULT_ITEMS = 1024
#: bytes of packets waiting: ~16 s of a 4 Mbit/s camera; a stalled disk costs no more memory
DEFAULT_BYTES = 8 * 1024 * 1024

Item = Tuple[Any, ...]


class Inbox:
    """A queue of ("opened", info) / ("packet", packet) / ("closed", why) / control items, in order."""

    def __init__(self, max_items: int = DEFAULT_ITEMS, max_bytes: int = DEFAULT_BYTES) -> None:
        self._items: Deque[Tuple[Item, int]] = collections.deque()
        self._max_packets = max_items
        self._max_bytes = max_bytes
        self._changed = threading.Condition()
        self._packets = 0  # queued items that count against the bounds (offered ones)
        self._bytes = 0
        self._unfinished = 0  # queued or being handled
        self.dropped = 0
        self._dropping_gop = False  # a packet of the current GOP was dropped: so is the rest of it

    def offer(self, item: Item, size: int = 0, keyframe: bool = True) -> bool:
        """Queue a packet without waiting; False (and counted) when it does not fit, or when an
        earlier packet of its GOP did not (``keyframe`` False: it needs the packets before it)."""
        with self._changed:
            if keyframe:
                self._dropping_gop = False
            if (self._dropping_gop or self._packets >= self._max_packets
                    or self._bytes + size > self._max_bytes):
                self.dropped += 1
                self._dropping_gop = True
                return False
            self._packets += 1
            self._bytes += size
            self._append(item, size)
            return True

    def always(self, item: Item) -> None:
        """Queue an item that must not be lost (a connection opened or closed), whatever the bounds."""
        with self._changed:
            self._append(item, -1)

    def put(self, item: Item, timeout_s: float) -> bool:
        """Queue a control item once the packets leave room, waiting up to ``timeout_s``; False
        when they do not (the recorder thread is stuck, or busy: a wake-up is then not needed)."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while self._packets >= self._max_packets:
                left_s = deadline - time.monotonic()
                if left_s <= 0:
                    return False
                self._changed.wait(left_s)
            self._append(item, -1)
            return True

    def take(self, timeout_s: float) -> Optional[Item]:
        """The next item; None after ``timeout_s`` without one. Call ``done`` when it is handled."""
        with self._changed:
            if not self._changed.wait_for(lambda: self._items, timeout_s):
                return None
            item, size = self._items.popleft()
            if size >= 0:  # an offered packet: its room is free again
                self._packets -= 1
            self._changed.notify_all()
            return item

    def done(self, size: int = 0) -> None:
        with self._changed:
            self._bytes -= size
            self._unfinished -= 1
            self._changed.notify_all()

    def wait_idle(self, timeout_s: float) -> bool:
        """Wait until every item queued so far is handled; False on timeout."""
        with self._changed:
            return self._changed.wait_for(lambda: self._unfinished == 0, timeout_s)

    def _append(self, item: Item, size: int) -> None:
        """``size`` -1 marks an item outside the bounds."""
        self._items.append((item, size))
        self._unfinished += 1
        self._changed.notify_all()
