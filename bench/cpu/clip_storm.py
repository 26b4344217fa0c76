"""What an event storm writes in clips, against the camera's continuous recording.

    python -m bench.cpu clip-storm [--scene-s 120] [--interval-s 1.5] [--out bench/results/clip-storm.json]

A real H.264 stream (ffmpeg, 640x360 at 10 fps and about 70 KB/s, a keyframe every 2 s) is fed
packet by packet into one camera's real recorder (``CameraRecorder``, continuous recording on)
while events come as a flickering detection makes them with ``events.min_frames: 1`` and
``end_after_s: 0.1``: one every ``--interval-s``, each 0.1 s long. Two settings:

* ``defaults``: ``record.events`` pre_s 5, post_s 5, max_s 300;
* ``signed``: pre_s 60, post_s 600, max_s 3600 (what one allowed signed desired message sets).

Per setting: the bytes the clips take on the disk (each file once, however many names it has),
the continuous segments' bytes over the same scene, their ratio, the most clip files open at
once (descriptors of the process under ``<dir>/events``), and how many events got a clip. The
packets carry their camera's wall clock, so the scene is played as fast as the disk takes it.
"""
from __future__ import annotations

import argparse
import logging
import os
import subprocess
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Dict, List, Optional

import av

from bench.common.provenance import NO_MODEL, collect, write_results
from bench.common.settings import results_dir
from edge_app.capture.packets import EncodedPacket, StreamInfo
from edge_app.config.schema_record import RecordSettings
from edge_app.record.recorder import CameraRecorder
from edge_app.record.store import RecordingStore

log = logging.getLogger("bench.cpu.clip_storm")

WIDTH, HEIGHT, FPS, GOP_S = 640, 360, 10, 2
BITRATE = "560k"  # ~70 KB/s
SOURCE_S = 30
BASE_WALL = 1_800_000_000.0
EVENT_S = 0.1
FIRST_EVENT_S = 5.0  # the storm starts once the pre-roll ring holds a few seconds
SETTINGS = {"defaults": (5.0, 5.0, 300.0), "signed": (60.0, 600.0, 3600.0)}


@dataclass
class StormResult:
    setting: str
    pre_s: float
    post_s: float
    max_s: float
    scene_s: float
    events: int
    events_with_clip: int
    clip_bytes_on_disk: int
    clip_files: int  # distinct files (inodes)
    clip_names: int  # names under events/ (one per event and part)
    continuous_bytes: int
    clips_per_continuous: float
    peak_open_clip_files: int
    wall_s: float


def make_source(path: Path) -> Path:
    if not path.exists():
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", f"testsrc2=size={WIDTH}x{HEIGHT}:rate={FPS}",
                        "-t", str(SOURCE_S), "-c:v", "libx264", "-preset", "veryfast", "-b:v", BITRATE,
                        "-g", str(FPS * GOP_S), "-keyint_min", str(FPS * GOP_S), "-sc_threshold", "0", "-bf", "0",
                        "-pix_fmt", "yuv420p", str(path)], check=True, timeout=120)
    return path


def demux(path: Path) -> tuple:
    with av.open(str(path)) as container:
        st = container.streams.video[0]
        ctx = st.codec_context
        info = StreamInfo(camera_id="cam1", codec=ctx.name, width_px=ctx.width, height_px=ctx.height,
                          time_base=st.time_base, extradata=bytes(ctx.extradata or b""), fps=float(st.average_rate))
        packets = [p for p in container.demux(st) if p.size]
        first = packets[0].pts
        span = int(round(SOURCE_S / st.time_base))
        return info, [(bytes(p), p.pts - first, p.dts - first, p.is_keyframe, p.duration or 0) for p in packets], span, st.time_base


def scene(source: tuple, scene_s: float):
    """The source looped on one connection for ``scene_s``: (packet) in decode order."""
    info, packets, span, time_base = source
    loop = 0
    while True:
        for data, pts, dts, key, duration in packets:
            offset = loop * span
            wall = BASE_WALL + float((pts + offset) * time_base)
            if wall - BASE_WALL >= scene_s:
                return
            yield EncodedPacket(data, pts + offset, dts + offset, key, wall, duration)
        loop += 1


def _clip_files(folder: Path) -> tuple:
    events = folder / "cam1" / "events"
    inodes: Dict[int, int] = {}
    names = 0
    for path in events.iterdir() if events.is_dir() else []:
        st = os.stat(path)
        inodes[st.st_ino] = st.st_size
        names += 1
    return sum(inodes.values()), len(inodes), names


def _open_clip_files(folder: Path) -> int:
    events = str(folder / "cam1" / "events")
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith(events):
                count += 1
        except OSError:
            pass
    return count


def run_setting(name: str, source: tuple, scene_s: float, interval_s: float, work: Path) -> StormResult:
    pre_s, post_s, max_s = SETTINGS[name]
    folder = work / name
    store = RecordingStore(folder)
    settings = RecordSettings("cam1", True, pre_s, post_s, max_s, True, 60.0)
    recorder = CameraRecorder(store, settings, reserve_bytes=0, free_bytes=lambda: 10 ** 15,
                              queue_packets=10 ** 6, queue_bytes=2 ** 31, ring_max_bytes=256 * 2 ** 20).start()
    peak = [0]
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(0.05):
            peak[0] = max(peak[0], _open_clip_files(folder))
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    info = source[0]
    started = time.monotonic()
    recorder.stream_opened(info)
    next_event, events = BASE_WALL + FIRST_EVENT_S, []
    for packet in scene(source, scene_s):
        while packet.wall_ts >= next_event:
            event_id = f"ev{len(events)}"
            recorder.event_started(event_id, "cam1", next_event)
            recorder.event_ended(event_id, next_event + EVENT_S)
            events.append(event_id)
            next_event += interval_s
        recorder.packet(packet)
        if len(events) % 20 == 0:
            recorder.wait_idle(60)  # keeps the queue (and the memory it holds) small
    recorder.stream_closed("end of scene")
    recorder.stop(timeout_s=600)
    stop.set()
    watcher.join()
    wall_s = time.monotonic() - started
    clip_bytes, clip_files, clip_names = _clip_files(folder)
    continuous = sum(s.bytes for s in store.segments("cam1", 0, 4e9))
    with_clip = sum(1 for e in events if store.clip(e) is not None)
    store.close()
    return StormResult(name, pre_s, post_s, max_s, scene_s, len(events), with_clip, clip_bytes, clip_files, clip_names,
                       continuous, round(clip_bytes / continuous, 2) if continuous else 0.0, peak[0], round(wall_s, 1))


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cpu clip-storm", description=__doc__.split("\n")[0])
    parser.add_argument("--scene-s", type=float, default=120.0, help="seconds of camera stream played")
    parser.add_argument("--interval-s", type=float, default=1.5, help="an event starts this often")
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument("--work-dir", type=Path, default=None, help="where the recordings go (kept); default a temporary folder")
    parser.add_argument("--out", type=Path, default=results_dir() / "clip-storm.json")
    args = parser.parse_args(argv)
    provenance = collect(NO_MODEL)  # the tree as it is when the run starts
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("edge_app.record.event_clips").setLevel(logging.ERROR)  # one line per capped event
    with tempfile.TemporaryDirectory(prefix="clip-storm-") as temporary:
        work = args.work_dir or Path(temporary)
        work.mkdir(parents=True, exist_ok=True)
        source = demux(make_source(work / f"source-{WIDTH}x{HEIGHT}-{BITRATE}.mp4"))
        results = [run_setting(name, source, args.scene_s, args.interval_s, work) for name in args.settings]
    print(f"{'setting':10} {'events':>7} {'w/ clip':>8} {'clip MB':>9} {'files':>6} {'cont. MB':>9} {'ratio':>7} {'open max':>9}")
    for r in results:
        print(f"{r.setting:10} {r.events:7d} {r.events_with_clip:8d} {r.clip_bytes_on_disk / 1e6:9.1f} {r.clip_files:6d} "
              f"{r.continuous_bytes / 1e6:9.1f} {r.clips_per_continuous:7.2f} {r.peak_open_clip_files:9d}")
    write_results(args.out, {"scene_s": args.scene_s, "interval_s": args.interval_s, "event_s": EVENT_S,
                             "source": {"width": WIDTH, "height": HEIGHT, "fps": FPS, "bitrate": BITRATE},
                             "results": [asdict(r) for r in results]}, provenance)
    print(f"written to {args.out}")
    return 0
