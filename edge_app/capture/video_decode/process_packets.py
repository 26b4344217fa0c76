"""A recorded camera's packets from its decoder process to the camera, over the frames' pipe.

A ``decoder: nvdec`` camera decodes in a process of its own (``child_process``); its demuxer is
there too (``pyav.demux.AvDemuxer``), so the packets the recorder needs are teed in the child and
sent to the appliance on the pipe that carries the frame messages, in order with them. The child
gives its opener a ``PipePacketSink``; the parent hands each message on to the camera's
``PacketSink`` with ``forward`` while it waits for a frame, so the sink is still only ever called
on the camera's capture thread.

Messages, child to parent: ``("p-opened", StreamInfo)`` (without ``template``: a PyAV stream does
not cross processes; ``extradata`` does), ``("p-packet", EncodedPacket)``, ``("p-closed",
reason)``, ``("p-unavailable", reason)``. A packet is pickled whole: at 4 Mbit/s and 30 frames/s
that is 30 messages of about 17 kB a second, next to the frame messages the pipe already carries.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Optional

from edge_app.capture.packets import EncodedPacket, PacketSink, StreamInfo

OPENED, PACKET, CLOSED, UNAVAILABLE = "p-opened", "p-packet", "p-closed", "p-unavailable"
KINDS = (OPENED, PACKET, CLOSED, UNAVAILABLE)
_METHODS = {OPENED: "stream_opened", PACKET: "packet", CLOSED: "stream_closed", UNAVAILABLE: "unavailable"}


class PipePacketSink:
    """The child's PacketSink: every call becomes a message to the appliance."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def stream_opened(self, info: StreamInfo) -> None:
        self._conn.send((OPENED, dataclasses.replace(info, template=None)))

    def packet(self, packet: EncodedPacket) -> None:
        self._conn.send((PACKET, packet))

    def stream_closed(self, reason: str) -> None:
        self._conn.send((CLOSED, reason))

    def unavailable(self, reason: str) -> None:
        self._conn.send((UNAVAILABLE, reason))


def forward(message: tuple, sink: Optional[PacketSink]) -> bool:
    """Hand a packet message on to ``sink``; False when ``message`` is not one (a frame, an end)."""
    if not message or message[0] not in _METHODS:
        return False
    if sink is not None:
        getattr(sink, _METHODS[message[0]])(message[1])
    return True
