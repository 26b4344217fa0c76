"""A process that records a real file's packets in a loop until it is killed (``kill -9`` tests).

    python -m tests.record.crash_writer <recording folder> <media file>

It reconciles the index first (as the appliance does at start), prints "recording" once the
first fragment is on disk, and keeps an event clip and continuous segments open at all times.
"""
from __future__ import annotations

import sys
import time
from dataclasses import replace
from pathlib import Path

from edge_app.record.recorder import CameraRecorder
from edge_app.record.store import RecordingStore
from tests.record.feeding import PLENTY_FREE, settings
from tests.record.media import demux

PACKET_PAUSE_S = 0.004


def main(folder: str, media: str) -> None:
    store = RecordingStore(Path(folder))
    store.reconcile()
    info, packets = demux(Path(media), "cam1")
    recorder = CameraRecorder(store, settings(continuous=True, segment_s=10.0, max_s=10.0, pre_s=1.0),
                              free_bytes=lambda: PLENTY_FREE, reserve_bytes=0).start()
    told = False
    loop = 0
    while True:
        origin = time.time()
        connection = replace(info)
        recorder.stream_opened(connection)
        if loop == 0 or loop % 2:
            recorder.event_started(f"ev{int(origin * 1000)}", "cam1", origin)
        for packet in packets:
            recorder.packet(replace(packet, wall_ts=origin + (packet.wall_ts - packets[0].wall_ts)))
            time.sleep(PACKET_PAUSE_S)
            if not told and any(store.folder.glob("cam1/*.mp4")):
                print("recording", flush=True)
                told = True
        loop += 1


if __name__ == "__main__":
    main(*sys.argv[1:3])
