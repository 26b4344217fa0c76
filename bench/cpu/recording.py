"""What recording costs: 4 RTSP cameras at 1080p30 and 4 Mbit/s, recording off, pre-roll only, and writing.

    python -m bench.cpu recording [--window-s 10] [--warmup-s 4] [--cameras 4] [--fps-limit 2] [--model PATH]

One run, six phases, each a fresh ``edge-app run`` (a real subprocess, as systemd runs it) on
the same four RTSP streams (gst-rtsp-server in its own process, looping one clip without
re-encoding):

* ``off``: ``record.events.enabled: false``, nothing recorded (the cameras are read as when
  recording was never configured: OpenCV's FFmpeg reader);
* ``tee``: event clips on with ``pre_s: 0``: the camera is read through PyAV and its packets go
  to the recorder's thread, which keeps one GOP (the baseline of a recorded camera);
* ``preroll``: ``pre_s: 5``; the clip has no people, so no event starts and the recorder only
  keeps the pre-roll ring (what every recorded camera costs all the time);
* ``writing``: continuous recording on as well: every packet is written to fragmented MP4;
* ``analysed-off`` and ``analysed-writing``: ``off`` and ``writing`` with detection on (at most
  ``--fps-limit`` frames/s per camera): analysed frames/s with and without recording.

The first four run with detection off: on a shared 2-core machine the model's CPU and working
memory swing by more than recording costs.

Per phase, over ``--window-s`` after ``--warmup-s``: the process's CPU (user + system, all
threads and children, % of one core), analysed frames/s (``/api/v1/status``; detection is
limited to ``--fps-limit`` per camera so the model costs the same in every phase), the peak RSS
over the window (VmHWM, reset when the window starts) and the bytes the recorder wrote per second against the streams'
bitrate. Per camera, each phase is compared with the one it adds to: ``tee`` - ``off`` is what
reading a camera through PyAV and the tee costs, ``preroll`` - ``tee`` the 5 s ring, ``writing``
- ``preroll`` the writing. Results go to
``bench/results/recording.json``; bench/README.md has the table and the command.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Dict, List, Optional

from bench.common.provenance import collect, engine_of, write_results
from bench.common.settings import results_dir
from testkit.appliance import ApplianceProcess
from testkit.net import free_port
from testkit.paths import shared_dir
from testkit.rtsp import RtspServer

log = logging.getLogger("bench.cpu.recording")

WIDTH, HEIGHT, FPS = 1920, 1080, 30
BITRATE_BPS = 4_000_000
CLIP_S = 10
PRE_S = 5.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
#: phase -> (record.events.enabled, pre_s, record.continuous.enabled, detect). Recording's CPU and
#: memory are measured with detection off: on a shared 2-core machine the model's CPU and working
#: memory swing by more than recording costs. Analysed frames/s are compared with it on.
PHASES = {"off": (False, PRE_S, False, False), "tee": (True, 0.0, False, False),
          "preroll": (True, PRE_S, False, False), "writing": (True, PRE_S, True, False),
          "analysed-off": (False, PRE_S, False, True), "analysed-writing": (True, PRE_S, True, True)}
#: what each phase adds to
ADDS_TO = {"tee": "off", "preroll": "tee", "writing": "preroll", "analysed-writing": "analysed-off"}


@dataclass
class Phase:
    name: str
    window_s: float
    cpu_percent: float  # of one core, the whole appliance process
    captured_fps: float  # all cameras: the streams are read in full
    analysed_fps: float
    peak_rss_mb: float
    bytes_written_per_s: float
    recording_paused: Optional[str]
    packets_dropped: int


def make_clip(out: Path) -> Path:
    """1080p30 H.264 at 4 Mbit/s (constant, a keyframe a second), a moving test pattern; cached."""
    if out.exists() and out.stat().st_size > 0:
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_suffix(".part.mp4")
    subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi",
                    "-i", f"testsrc2=size={WIDTH}x{HEIGHT}:rate={FPS}", "-t", str(CLIP_S),
                    "-c:v", "libx264", "-preset", "veryfast", "-profile:v", "main", "-bf", "0",
                    "-g", str(FPS), "-keyint_min", str(FPS), "-b:v", str(BITRATE_BPS), "-minrate", str(BITRATE_BPS),
                    "-maxrate", str(BITRATE_BPS), "-bufsize", str(BITRATE_BPS), "-x264-params", "nal-hrd=cbr",
                    "-pix_fmt", "yuv420p", str(partial)], check=True)
    partial.replace(out)
    return out


def clip_bitrate_bps(clip: Path) -> float:
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "format=bit_rate",
                          "-of", "json", str(clip)], check=True, capture_output=True, text=True).stdout
    return float(json.loads(out)["format"]["bit_rate"])


def _proc_cpu_s(pid: int) -> float:
    """User + system CPU seconds of ``pid`` and its waited-for children."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(fields[i]) for i in (11, 12, 13, 14)) / CLOCK_TICKS


def _status_mb(pid: int, key: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024.0
    return 0.0


def _reset_peak_rss(pid: int) -> bool:
    """The kernel's peak-RSS mark of ``pid`` back to its RSS now, so the window has its own peak
    (the model's load peaks otherwise, once per process)."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def _config(urls: List[str], model: Path, phase: str, work: Path, fps_limit: float) -> Dict:
    return {
        "device_id": "bench",
        "cameras": [{"id": f"cam{i}", "source": url, "fps_limit": fps_limit, "decoder": "ffmpeg",
                     "detect": PHASES[phase][3]} for i, url in enumerate(urls)],
        "model": {"path": str(model), "max_batch": 4},
        "mqtt": {"enabled": False},
        "api": {"host": "127.0.0.1", "port": free_port(), "allow_unsafe_sources": True},
        "events": {"enabled": False},
        "record": {"dir": str(work / "recordings"),
                   "events": {"enabled": PHASES[phase][0], "pre_s": PHASES[phase][1]},
                   "continuous": {"enabled": PHASES[phase][2]},
                   "retain": {"reserve_mb": 64}},
    }


def _status(app: ApplianceProcess) -> Dict:
    return app.get("/api/v1/status").json()


def _analysed(status: Dict) -> int:
    return sum(int(c["frames_analyzed"]) for c in status["cameras"])


def _captured(status: Dict) -> int:
    return sum(int(c["frames_captured"]) for c in status["cameras"])


def _written(status: Dict) -> int:
    recording = status.get("recording") or {}
    return int(recording.get("bytes_written") or 0)


def run_phase(name: str, urls: List[str], model: Path, work: Path, window_s: float, warmup_s: float,
              fps_limit: float) -> Phase:
    folder = work / name
    folder.mkdir(parents=True, exist_ok=True)
    app = ApplianceProcess(_config(urls, model, name, folder, fps_limit), folder)
    app.start()
    try:
        deadline = time.monotonic() + 60
        counted = _analysed if PHASES[name][3] else _captured
        while time.monotonic() < deadline and counted(_status(app)) == 0:
            time.sleep(0.5)
        time.sleep(max(warmup_s, PHASES[name][1] + 1.0))  # the pre-roll ring has filled
        pid = app.proc.pid
        peak_reset = _reset_peak_rss(pid)
        before, cpu_before, wall_before = _status(app), _proc_cpu_s(pid), time.monotonic()
        rss_mb = []
        while time.monotonic() - wall_before < window_s:
            rss_mb.append(_status_mb(pid, "VmRSS"))
            time.sleep(0.5)
        after, cpu_after, wall_after = _status(app), _proc_cpu_s(pid), time.monotonic()
        wall = wall_after - wall_before
        recording = after.get("recording") or {}
        return Phase(name=name, window_s=round(wall, 1), cpu_percent=round(100.0 * (cpu_after - cpu_before) / wall, 1),
                     captured_fps=round((_captured(after) - _captured(before)) / wall, 1),
                     analysed_fps=round((_analysed(after) - _analysed(before)) / wall, 2),
                     peak_rss_mb=round(_status_mb(pid, "VmHWM") if peak_reset else max(rss_mb), 1),
                     bytes_written_per_s=round((_written(after) - _written(before)) / wall, 0),
                     recording_paused=recording.get("paused"), packets_dropped=int(recording.get("packets_dropped") or 0))
    finally:
        app.terminate(timeout_s=15)
        app.close()


def table(phases: List[Phase], cameras: int, bitrate_bps: float) -> str:
    lines = ["| phase | detection | CPU % (process) | CPU per camera vs the phase it adds to, % of a core | "
             "captured frames/s | analysed frames/s | peak RSS MB | RSS per camera vs the phase it adds to, MB | "
             "written | packets dropped |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    done = {p.name: p for p in phases}
    for p in phases:
        previous = done.get(ADDS_TO.get(p.name, ""))
        cpu = "-" if previous is None else f"{(p.cpu_percent - previous.cpu_percent) / cameras:+.2f}"
        rss = "-" if previous is None else f"{(p.peak_rss_mb - previous.peak_rss_mb) / cameras:+.2f}"
        written = (f"{p.bytes_written_per_s * 8 / 1e6:.2f} Mbit/s = {p.bytes_written_per_s * 8 / (bitrate_bps * cameras):.2f}"
                   f" x the streams" if p.bytes_written_per_s else "-")
        lines.append(f"| {p.name} | {'on' if PHASES[p.name][3] else 'off'} | {p.cpu_percent:.1f} | {cpu} | {p.captured_fps:.1f} | {p.analysed_fps:.2f} | "
                     f"{p.peak_rss_mb:.1f} | {rss} | {written} | {p.packets_dropped} |")
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cpu recording", description=__doc__.split("\n")[0])
    parser.add_argument("--window-s", type=float, default=10.0)
    parser.add_argument("--warmup-s", type=float, default=4.0)
    parser.add_argument("--cameras", type=int, default=4)
    parser.add_argument("--fps-limit", type=float, default=2.0, help="analysed frames/s per camera (the model's load)")
    parser.add_argument("--model", type=Path, default=shared_dir() / "models" / "yolov8n_coco_dynbatch.onnx")
    parser.add_argument("--phases", default=",".join(PHASES), help="comma-separated, of " + ", ".join(PHASES))
    parser.add_argument("--out", type=Path, default=results_dir() / "recording.json")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    for tool in ("ffmpeg", "ffprobe"):
        if shutil.which(tool) is None:
            print(f"{tool} is not installed", file=sys.stderr)
            return 2
    clip = make_clip(results_dir() / f"recording-{WIDTH}x{HEIGHT}p{FPS}-{BITRATE_BPS // 1000}k.mp4")
    bitrate = clip_bitrate_bps(clip)
    phases: List[Phase] = []
    with tempfile.TemporaryDirectory(prefix="bench-recording-") as tmp:
        work = Path(tmp)
        server = RtspServer({f"cam{i}": clip for i in range(args.cameras)}, work / "rtsp").start()
        try:
            urls = [server.url(f"cam{i}") for i in range(args.cameras)]
            for name in args.phases.split(","):
                log.info("phase %s", name)
                phases.append(run_phase(name, urls, args.model, work, args.window_s, args.warmup_s, args.fps_limit))
                log.info("%s", phases[-1])
        finally:
            server.stop()
    print(table(phases, args.cameras, bitrate))
    write_results(args.out, {"cameras": args.cameras, "clip": {"width": WIDTH, "height": HEIGHT, "fps": FPS,
                                                               "bitrate_bps": bitrate},
                             "fps_limit": args.fps_limit, "cpu_count": os.cpu_count(),
                             "phases": [asdict(p) for p in phases]}, collect(engine_of(args.model)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
