"""Starting and stopping the benchmark's RTSP server (``bench.gpu rtsp-serve``) in its own process.

Its own process so that its CPU time is not counted as the appliance's.
"""
from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from testkit.paths import REPO

log = logging.getLogger(__name__)

START_TIMEOUT_S = 20.0


def annexb_for(clip: Path) -> Path:
    """The clip as an H.264 Annex-B byte stream: ``<clip>.h264`` beside it, made with ffmpeg if missing."""
    out = clip.with_suffix(".h264")
    if out.exists() and out.stat().st_size > 0:
        return out
    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg is None:
        return _annexb_with_pyav(clip, out)
    subprocess.run([ffmpeg, "-hide_banner", "-loglevel", "error", "-y", "-i", str(clip), "-map", "0:v:0", "-c:v", "copy",
                    "-bsf:v", "h264_mp4toannexb", "-f", "h264", str(out)], check=True)
    return out


def _annexb_with_pyav(clip: Path, out: Path) -> Path:
    """The same remux through PyAV (the raw h264 muxer inserts h264_mp4toannexb by itself)."""
    try:
        import av
    except ImportError:
        raise RuntimeError(f"{out} is missing, and neither ffmpeg nor PyAV is installed to make it from {clip}") from None
    partial = out.with_suffix(".h264.part")
    with av.open(str(clip)) as source, av.open(str(partial), "w", format="h264") as target:
        video = source.streams.video[0]
        stream = target.add_stream_from_template(video)
        for packet in source.demux(video):
            if packet.dts is None:
                continue  # the demuxer's final empty packet
            packet.stream = stream
            target.mux(packet)
    partial.replace(out)
    return out


def _cpu_s(pid: int) -> Optional[float]:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


class RtspServerProcess:
    def __init__(self, clip: Path, fps: float, mounts: Sequence[str], port: int = 0) -> None:
        self.clip, self.fps, self.mounts, self.port = clip, fps, list(mounts), port
        self._proc: Optional[subprocess.Popen] = None
        self._started_s = 0.0

    def start(self) -> List[str]:
        """Start the server; returns one rtsp:// URL per mount."""
        stream = annexb_for(self.clip)
        command = [sys.executable, "-m", "bench.gpu.rtsp_serve", "--port", str(self.port), "--clip", str(stream), "--fps", str(self.fps)]
        for mount in self.mounts:
            command += ["--mount", mount]
        self._proc = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, text=True)
        self._started_s = time.monotonic()
        line = self._proc.stdout.readline() if self._proc.stdout else ""
        if not line.startswith("READY "):
            self.stop()
            raise RuntimeError(f"the RTSP server did not start (it said {line.strip()!r})")
        self.port = int(line.split()[1])
        log.info("RTSP server on port %d serving %s at %g fps", self.port, stream.name, self.fps)
        return [f"rtsp://127.0.0.1:{self.port}/{mount}" for mount in self.mounts]

    def describe(self) -> Dict[str, object]:
        return {"server": "bench.gpu.rtsp_serve (Python, RTSP 1.0, RTP/H.264 over interleaved TCP)", "port": self.port,
                "fps": self.fps, "mounts": len(self.mounts)}

    def stop(self) -> Dict[str, object]:
        if self._proc is None:
            return {}
        cpu_s = _cpu_s(self._proc.pid)
        wall_s = time.monotonic() - self._started_s
        self._proc.terminate()
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._proc = None
        return {"server_cpu_s": cpu_s, "server_wall_s": round(wall_s, 1)}
