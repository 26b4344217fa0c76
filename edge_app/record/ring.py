"""The pre-roll ring: the last ``pre_s`` seconds of a camera's packets, in whole GOPs.

A clip must start at a keyframe, so the ring keeps whole GOPs and drops them from the front only
while what remains still reaches back ``pre_s + late_s``: it holds at most that plus one GOP.
``late_s`` is how late an event's start may reach the recorder and its clip still get the whole
pre-roll: an event starts at the first frame its object was seen, but is known only after
``events.min_frames`` analysed frames and the detector's latency, which on a loaded device at one
analysed frame a second is seconds behind the camera. A byte limit bounds the ring too (a camera with a 60 s GOP must not hold a minute of 4K in memory): GOPs go
from the front while it is exceeded, the newest too, and then the ring holds nothing until the
next keyframe (a clip starting then has no pre-roll).

The capture thread fills the ring as packets arrive, before they are queued for the recorder
thread: a queue full of packets waiting for a slow disk or a starved CPU drops packets of files
being written, never the pre-roll of a clip still to come. The recorder thread reads the ring up
to the packet it has reached (``since``'s ``upto``); what comes after reaches it through the queue.
It also tells the ring how far it has come (``reached``): the ring keeps ``pre_s + late_s`` behind
the recorder, not only behind the camera, so a recorder running late still finds its pre-roll
(the packets it has not handled yet are held by the queue anyway; the byte bound caps the rest).
"""
from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Deque, List, Optional, Tuple

from edge_app.capture.packets import EncodedPacket, StreamInfo

#: how late an event's start may come and still find its whole pre-roll held (see above)
DEFAULT_LATE_S = 5.0
#: default byte bound: 5 s of a 4 Mbit/s camera is 2.5 MB; this leaves room for a long GOP
DEFAULT_MAX_BYTES = 16 * 1024 * 1024

Entry = Tuple[StreamInfo, EncodedPacket]


def decode_wall(info: StreamInfo, packet: EncodedPacket) -> float:
    """When a packet is due for decoding: every frame shown at or before that time has come before
    it in decode order (B-frames arrive after the later frame they refer to)."""
    return packet.wall_ts - float((packet.pts - packet.dts) * info.time_base)


@dataclass
class _Gop:
    entries: List[Entry] = field(default_factory=list)
    bytes: int = 0

    @property
    def start_wall(self) -> float:
        return self.entries[0][1].wall_ts


class PreRollRing:
    """Whole GOPs covering at least the last ``pre_s + late_s`` seconds (when they fit in ``max_bytes``)."""

    def __init__(self, pre_s: float, max_bytes: int = DEFAULT_MAX_BYTES, late_s: float = DEFAULT_LATE_S) -> None:
        self.pre_s = pre_s
        self.late_s = late_s
        self.max_bytes = max_bytes
        self._gops: Deque[_Gop] = deque()
        self._bytes = 0
        self._newest = float("-inf")
        self._lost_before = float("-inf")  # packets held before this time were dropped
        # the reader's newest packet time (``reached``): nothing is trimmed by time before the
        # reader has handled a packet
        self._reached = float("-inf")
        self._lock = threading.Lock()  # the capture thread adds, the recorder thread reads
        self.dropped_for_bytes = 0

    @property
    def bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return sum(len(g.entries) for g in self._gops)

    def clear(self) -> None:
        with self._lock:
            self._gops.clear()
            self._bytes = 0
            self._newest = float("-inf")
            self._lost_before = float("-inf")
            self._reached = float("-inf")

    def add(self, info: StreamInfo, packet: EncodedPacket) -> None:
        """One packet in decode order; packets before a connection's first keyframe are dropped."""
        with self._lock:
            self._add(info, packet)

    def _add(self, info: StreamInfo, packet: EncodedPacket) -> None:
        if packet.keyframe:
            self._gops.append(_Gop())
        elif not self._gops or self._gops[-1].entries and self._gops[-1].entries[-1][0] is not info:
            return  # no keyframe of this connection yet: nothing could decode it
        gop = self._gops[-1]
        gop.entries.append((info, packet))
        gop.bytes += len(packet.data)
        self._bytes += len(packet.data)
        self._newest = max(self._newest, packet.wall_ts)  # B-frames come after the later frame they refer to
        self._trim(min(self._newest, self._reached))

    def _trim(self, now_wall: float) -> None:
        # The front GOP may go when the next one still starts at or before now - pre_s - late_s.
        while len(self._gops) > 1 and self._gops[1].start_wall <= now_wall - self.pre_s - self.late_s:
            self._drop_front()
        while self._gops and self._bytes > self.max_bytes:
            # the newest GOP too, once it alone is over the bound (keyframes stopped, a long GOP
            # of a big picture): the ring then waits for the next keyframe
            self._drop_front()
            self.dropped_for_bytes += 1

    def _drop_front(self) -> None:
        self._bytes -= self._gops.popleft().bytes
        self._lost_before = self._gops[0].start_wall if self._gops else self._newest

    def reached(self, wall_ts: float) -> None:
        """The recorder thread has handled the packets up to ``wall_ts``."""
        with self._lock:
            self._reached = max(self._reached, wall_ts)

    def reaches(self, wall_ts: float) -> bool:
        """Whether every packet given since ``wall_ts`` is still held: False once a GOP the ring
        had dropped was needed (an event later than ``late_s``, a pre-roll over ``max_bytes``)."""
        with self._lock:
            return wall_ts >= self._lost_before

    def since(self, wall_ts: float, upto: Optional[EncodedPacket] = None) -> List[Entry]:
        """Packets from the last keyframe at or before ``wall_ts`` (or the oldest one held), up to
        and with the packet ``upto`` where given (none when it is no longer held)."""
        with self._lock:
            start = 0
            for index, gop in enumerate(self._gops):
                if gop.start_wall <= wall_ts:
                    start = index
            held = [entry for gop in list(self._gops)[start:] for entry in gop.entries]
        if upto is None:
            return held
        end = next((i for i in range(len(held) - 1, -1, -1) if held[i][1] is upto), -1)
        return held[:end + 1]

    def newest_wall(self) -> Optional[float]:
        """Wall-clock time of the newest packet held; None when empty."""
        with self._lock:
            return self._newest if self._gops else None

    def span_s(self) -> float:
        """Seconds from the oldest packet held to the newest."""
        if not self._gops:
            return 0.0
        return self._gops[-1].entries[-1][1].wall_ts - self._gops[0].start_wall
