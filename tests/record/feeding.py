"""Feeding a recorder the packets of a real file as its camera's demuxer would."""
from __future__ import annotations

from typing import Callable, Dict, List, Optional, Sequence, Tuple

from edge_app.capture.packets import EncodedPacket, StreamInfo
from edge_app.config.schema_record import RecordSettings
from edge_app.record.recorder import CameraRecorder
from edge_app.record.store import RecordingStore
from edge_app.record.types import ClipInfo

PLENTY_FREE = 10 ** 15


def settings(camera_id: str = "cam1", events: bool = True, pre_s: float = 2.0, post_s: float = 1.0,
             max_s: float = 300.0, continuous: bool = False, segment_s: float = 60.0) -> RecordSettings:
    return RecordSettings(camera_id, events, pre_s, post_s, max_s, continuous, segment_s)


def record(store: RecordingStore, config: RecordSettings,
           connections: Sequence[Tuple[StreamInfo, List[EncodedPacket]]],
           orders: Optional[Dict[float, List[Callable[[CameraRecorder], None]]]] = None,
           free_bytes: Callable[[], int] = lambda: PLENTY_FREE, reserve_bytes: int = 0
           ) -> Tuple[CameraRecorder, List[ClipInfo]]:
    """Run a recorder over the packets of each connection in turn; ``orders`` run before the
    first packet at or after their wall-clock time. Returns the stopped recorder and its on_clip calls."""
    seen: List[ClipInfo] = []
    recorder = CameraRecorder(store, config, on_clip=seen.append, free_bytes=free_bytes,
                              reserve_bytes=reserve_bytes, queue_packets=100_000).start()
    pending = sorted((orders or {}).items())
    for info, packets in connections:
        recorder.stream_opened(info)
        for packet in packets:
            while pending and pending[0][0] <= packet.wall_ts:
                for order in pending.pop(0)[1]:
                    order(recorder)
            recorder.packet(packet)
        recorder.stream_closed("end of file")
    for _, rest in pending:
        for order in rest:
            order(recorder)
    recorder.stop(timeout_s=60)
    return recorder, seen
