"""A real ``PacketSink`` for tests: keeps what a camera's source hands it, thread-safe, and
writes a connection's packets as a raw Annex B stream that ffprobe can check.

``CollectingSink.events`` is the sequence of calls as ("opened", StreamInfo), ("packet",
EncodedPacket), ("closed", reason), ("unavailable", reason); ``connections()`` splits it into one
``Connection`` per stream_opened.
"""
from __future__ import annotations

import json
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional, Tuple

from edge_app.capture.packets import EncodedPacket, StreamInfo

from tests.support.media import require_tool


@dataclass
class Connection:
    info: StreamInfo
    packets: List[EncodedPacket] = field(default_factory=list)
    closed: Optional[str] = None  # the reason; None while open

    @property
    def keyframes(self) -> int:
        return sum(1 for packet in self.packets if packet.keyframe)

    def from_first_keyframe(self) -> List[EncodedPacket]:
        """What a recorder keeps: a stream joined mid-GOP starts at its first keyframe."""
        for index, packet in enumerate(self.packets):
            if packet.keyframe:
                return self.packets[index:]
        return []

    def write_annexb(self, path: Path) -> Path:
        """The packets from the first keyframe as a raw stream (they are Annex B for RTSP and
        GStreamer; extradata first when it is Annex B too, as from an RTSP SDP)."""
        header = self.info.extradata if self.info.extradata[:3] in (b"\0\0\1", b"\0\0\0") else b""
        with open(path, "wb") as out:
            out.write(header)
            for packet in self.from_first_keyframe():
                out.write(packet.data)
        return path


class CollectingSink:
    """Every call, in order; ``packet`` never blocks (a list append under a lock)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.events: List[Tuple[str, object]] = []

    def stream_opened(self, info: StreamInfo) -> None:
        self._add("opened", info)

    def packet(self, packet: EncodedPacket) -> None:
        self._add("packet", packet)

    def stream_closed(self, reason: str) -> None:
        self._add("closed", reason)

    def unavailable(self, reason: str) -> None:
        self._add("unavailable", reason)

    def _add(self, kind: str, value: object) -> None:
        with self._lock:
            self.events.append((kind, value))

    def kinds(self) -> List[str]:
        with self._lock:
            return [kind for kind, _ in self.events]

    def of(self, kind: str) -> List[object]:
        with self._lock:
            return [value for k, value in self.events if k == kind]

    def count(self, kind: str) -> int:
        return len(self.of(kind))

    def connections(self) -> List[Connection]:
        with self._lock:
            events = list(self.events)
        out: List[Connection] = []
        for kind, value in events:
            if kind == "opened":
                out.append(Connection(value))  # type: ignore[arg-type]
            elif kind == "packet":
                assert out and out[-1].closed is None, "a packet outside a connection"
                out[-1].packets.append(value)  # type: ignore[arg-type]
            elif kind == "closed":
                assert out and out[-1].closed is None, "closed twice or without opened"
                out[-1].closed = value  # type: ignore[assignment]
        return out


def ffprobe_packets(path: Path, raw_codec: Optional[str] = None) -> Tuple[str, List[bool]]:
    """(codec name, keyframe flag of each packet) as ffprobe reports them for ``path``'s video."""
    cmd = [require_tool("ffprobe"), "-v", "error"]
    if raw_codec:
        cmd += ["-f", raw_codec]
    cmd += ["-select_streams", "v:0", "-show_entries", "stream=codec_name:packet=flags", "-of", "json", str(path)]
    result = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    return result["streams"][0]["codec_name"], ["K" in packet["flags"] for packet in result["packets"]]
