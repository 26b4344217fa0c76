"""The chaos soak's disk-pressure run: a real ``edge-app run`` recording onto a small file system
while exports are held open, an event storm writes clips, and the disk is filled by another writer.

    python -m bench.chaos disk-pressure [--disk-mb 128] [--json bench/results/chaos-disk.json]

One RTSP camera (gst-rtsp-server) loops a clip that shows the people of bus.jpg for one second
and an empty picture for the next, so with ``events.min_frames: 1`` and ``end_after_s: 0.1``
every appearance is an event: a clip storm, recorded with the settings one signed desired message
may set (``pre_s`` 60, ``post_s`` 600, ``max_s`` 3600), and continuous recording besides. The
recordings and the appliance's temporary folder (``TMPDIR``, as ``PrivateTmp`` puts it on the
same disk) share one real tmpfs of ``--disk-mb``. Phases:

1. storm: events and clips for ``--storm-s``;
2. exports held: two downloads of one signed export URL read by slow readers (a few KB, then
   nothing) for ``--hold-s`` (longer than a retention run's interval), then a third use of the
   URL and a download with the token: what they are answered, the bytes in the temporary
   folder, the disk's use, and whether retention deleted anything meanwhile;
3. full disk: another writer fills the file system to the last byte; how soon recording says
   it paused, and, once that writer's file is removed, how soon it writes again.

Needs root (for the tmpfs), the model and the system packages of scripts/system-deps.sh.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import logging
import os
import re
import secrets
import socket
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional
from urllib.parse import urlencode, urlsplit

import cv2
import numpy as np
import psutil
import requests

from bench.chaos.probes import api_json
from bench.common.provenance import ONNXRUNTIME_CPU, collect, write_results
from edge_app.commands.demo_clip import make_clip
from testkit.appliance import ApplianceProcess
from testkit.broker import MosquittoBroker
from testkit.net import free_port
from testkit.paths import shared_dir
from testkit.rtsp import RtspServer

log = logging.getLogger(__name__)

CAMERA = "cam0"
RETENTION_LINE = re.compile(r"retention deleted (\d+) recordings")


@dataclass
class DiskPressureReport:
    """What the run saw; ``met`` says whether every goal held."""

    started: str
    disk_mb: int
    storm_s: float
    hold_s: float
    events: int = 0
    events_with_clip: int = 0
    clips_skipped: int = 0
    clip_bytes_on_disk: int = 0
    clip_files: int = 0
    continuous_bytes: int = 0
    most_open_descriptors: int = 0
    held_answers: List[int] = field(default_factory=list)  # the two slow readers of one signed URL
    third_use_answer: Optional[int] = None  # a third use of that URL while both are read
    token_export_answer: Optional[int] = None  # an export with the token while both are read
    temp_growth_bytes_max: int = 0  # bytes the temporary folder grew by while the exports were held
    disk_growth_during_hold_mb: float = 0.0  # the disk's use, end of the hold minus its start
    retention_deleted_during_hold: int = 0
    paused_after_full_s: Optional[float] = None
    pause_reason: Optional[str] = None
    writing_again_after_freed_s: Optional[float] = None
    crashes: int = 0
    log_errors: int = 0
    log_tracebacks: int = 0
    exit_code_on_sigterm: Optional[int] = None

    @property
    def met(self) -> bool:
        return (self.crashes == 0 and self.log_tracebacks == 0 and self.temp_growth_bytes_max == 0
                and self.retention_deleted_during_hold == 0 and self.third_use_answer == 429
                and self.token_export_answer == 503 and self.held_answers == [200, 200]
                and self.paused_after_full_s is not None and self.writing_again_after_freed_s is not None
                and self.exit_code_on_sigterm == 0)

    def markdown(self) -> str:
        ratio = self.clip_bytes_on_disk / self.continuous_bytes if self.continuous_bytes else 0.0
        rows = [
            ("events (with a clip / over a cap)", f"{self.events} ({self.events_with_clip} / {self.clips_skipped})"),
            ("clip bytes on the disk / continuous, MB", f"{self.clip_bytes_on_disk / 1e6:.1f} / "
                                                        f"{self.continuous_bytes / 1e6:.1f} ({ratio:.2f}x, {self.clip_files} files)"),
            ("most open descriptors of the appliance", str(self.most_open_descriptors)),
            ("held exports of one signed URL", ", ".join(map(str, self.held_answers))),
            ("third use of that URL / an export with the token, while held", f"{self.third_use_answer} / {self.token_export_answer}"),
            ("growth of the temporary folder while held (max), bytes", str(self.temp_growth_bytes_max)),
            ("disk use growth during the hold, MB", f"{self.disk_growth_during_hold_mb:.1f}"),
            ("recordings retention deleted during the hold", str(self.retention_deleted_during_hold)),
            ("disk filled: recording paused after, s", f"{self.paused_after_full_s} ({self.pause_reason})"),
            ("filler removed: writing again after, s", str(self.writing_again_after_freed_s)),
            ("crashes / ERROR lines / tracebacks / exit code on SIGTERM",
             f"{self.crashes} / {self.log_errors} / {self.log_tracebacks} / {self.exit_code_on_sigterm}"),
        ]
        return "\n".join(["| measure | value |", "|---|---|"] + [f"| {a} | {b} |" for a, b in rows]
                         + ["", f"all goals met: {'yes' if self.met else 'no'}"])


@contextlib.contextmanager
def small_disk(folder: Path, size_mb: int) -> Iterator[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(folder)], capture_output=True)
    if mounted.returncode:
        raise SystemExit(f"the disk-pressure run needs a tmpfs (root): {mounted.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def flicker_clip(work: Path) -> Path:
    """bus.jpg for one second, an empty grey picture for the next."""
    bus = shared_dir() / "images" / "bus.jpg"
    empty = work / "empty.jpg"
    cv2.imwrite(str(empty), np.full((1080, 810, 3), 128, np.uint8))
    return make_clip([bus, empty], work / "flicker.mp4", 1.0, 10, (640, 480))


class SlowReader:
    """A download that reads its first 4 KB and then nothing. Its receive buffer is set small
    before it connects, so the server cannot push the whole answer into the sockets' buffers and
    be done: it waits for the reader, as it does for a phone on a slow link."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.sock.settimeout(30)
        self.sock.connect((parts.hostname, parts.port))
        self.sock.sendall(f"GET {parts.path}?{parts.query} HTTP/1.1\r\nHost: {parts.netloc}\r\n\r\n".encode())
        head = self.sock.recv(4096)
        self.status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/1.") else 0

    def close(self) -> None:
        self.sock.close()


def _clip_files(recordings: Path) -> tuple:
    inodes: Dict[int, int] = {}
    folder = recordings / CAMERA / "events"
    for path in folder.iterdir() if folder.is_dir() else []:
        st = os.stat(path)
        inodes[st.st_ino] = st.st_size
    return sum(inodes.values()), len(inodes)


def _folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


class DiskPressureRun:
    def __init__(self, args: argparse.Namespace, work: Path) -> None:
        self.args = args
        self.work = work
        self.token = secrets.token_hex(16)
        self.report = DiskPressureReport(datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                                         args.disk_mb, args.storm_s, args.hold_s)
        self.app: Optional[ApplianceProcess] = None

    def run(self) -> DiskPressureReport:
        with small_disk(self.work / "disk", self.args.disk_mb) as disk:
            recordings, temporary = disk / "recordings", disk / "tmp"
            temporary.mkdir()
            server = RtspServer({CAMERA: flicker_clip(self.work)}, self.work / "rtsp").start()
            broker = MosquittoBroker(self.work / "mosquitto").start()
            try:
                self.app = self._start(server, broker, recordings, temporary)
                self._watch(self.args.storm_s)
                self._storm_figures(recordings)
                self._hold_exports(disk, temporary)
                self._fill(disk)
            except _Crashed as crash:
                self.report.crashes = 1
                log.error("%s", crash)
            finally:
                self._stop()
                server.stop()
                broker.kill()
        return self.report

    def _start(self, server: RtspServer, broker: MosquittoBroker, recordings: Path, temporary: Path) -> ApplianceProcess:
        config = {
            "device_id": "chaos-disk",
            "cameras": [{"id": CAMERA, "source": server.url(CAMERA), "fps_limit": 5}],
            "model": {"path": str(Path(self.args.model).resolve()), "conf_threshold": 0.25},
            "mqtt": {"host": broker.host, "port": broker.port, "topic_prefix": "edge_app_chaos"},
            "api": {"host": "127.0.0.1", "port": free_port(), "token": self.token},
            "tracking": {"enabled": True},
            "events": {"enabled": True, "dir": str(self.work / "events"), "min_frames": 1, "end_after_s": 0.1},
            "record": {"dir": str(recordings),
                       "events": {"enabled": True, "pre_s": 60, "post_s": 600, "max_s": 3600},
                       "continuous": {"enabled": True, "segment_s": 10},
                       "retain": {"reserve_mb": 8, "max_disk_percent": 95}},
        }
        os.environ["TMPDIR"] = str(temporary)  # the appliance's temporary folder shares the disk
        try:
            return ApplianceProcess(config, self.work).start()
        finally:
            os.environ.pop("TMPDIR", None)

    # ---- phases --------------------------------------------------------------------------------

    def _storm_figures(self, recordings: Path) -> None:
        status = api_json(self.app, "/api/v1/status") or {}
        events = (api_json(self.app, "/api/v1/events?limit=500") or {}).get("events", [])
        self.report.events = len(events)  # the newest 500 at most
        self.report.events_with_clip = sum(1 for e in events if e.get("has_clip"))
        self.report.clips_skipped = int((status.get("recording") or {}).get("clips_skipped", 0))
        self.report.clip_bytes_on_disk, self.report.clip_files = _clip_files(recordings)
        self.report.continuous_bytes = sum(p.stat().st_size for p in (recordings / CAMERA).glob("*.mp4"))

    def _hold_exports(self, disk: Path, temporary: Path) -> None:
        now = time.time()
        params = {"camera": CAMERA, "from": f"{now - 40:.0f}", "to": f"{now - 5:.0f}"}
        signed = self.app.request("POST", "/api/v1/recordings/export-url?" + urlencode(params))
        url = self.app.base_url + signed.json()["url"]
        deleted_before = self._retention_deleted()
        used_before = psutil.disk_usage(str(disk)).used
        temp_before = _folder_bytes(temporary)
        readers = [SlowReader(url) for _ in range(2)]
        try:
            self.report.held_answers = [r.status for r in readers]
            self.report.third_use_answer = requests.get(url, timeout=30).status_code
            self.report.token_export_answer = self.app.get("/api/v1/recordings/export.mp4", params=params).status_code
            deadline = time.monotonic() + self.args.hold_s
            while time.monotonic() < deadline:
                growth = _folder_bytes(temporary) - temp_before
                self.report.temp_growth_bytes_max = max(self.report.temp_growth_bytes_max, growth)
                self._watch(2.0)
            self.report.disk_growth_during_hold_mb = round((psutil.disk_usage(str(disk)).used - used_before) / 2 ** 20, 1)
        finally:
            for reader in readers:
                reader.close()
        self.report.retention_deleted_during_hold = self._retention_deleted() - deleted_before

    def _fill(self, disk: Path) -> None:
        filler = disk / "filler"
        started = time.monotonic()
        with open(filler, "wb", buffering=0) as fh:
            try:
                while True:
                    fh.write(b"\0" * (1 << 20))
            except OSError:
                pass  # ENOSPC: the disk is full
        paused = self._until(lambda: ((api_json(self.app, "/api/v1/status") or {}).get("recording") or {}).get("paused"), 90)
        if paused:
            self.report.paused_after_full_s = round(time.monotonic() - started, 1)
            self.report.pause_reason = paused
        filler.unlink()
        freed = time.monotonic()
        before = self._bytes_written()
        writing = self._until(lambda: (not ((api_json(self.app, "/api/v1/status") or {}).get("recording") or {}).get("paused")
                                       and self._bytes_written() > before), 120)
        if writing:
            self.report.writing_again_after_freed_s = round(time.monotonic() - freed, 1)

    # ---- helpers -------------------------------------------------------------------------------

    def _bytes_written(self) -> int:
        return int(((api_json(self.app, "/api/v1/status") or {}).get("recording") or {}).get("bytes_written", 0))

    def _retention_deleted(self) -> int:
        text = self.app.log_path.read_text(errors="replace")
        return sum(int(n) for n in RETENTION_LINE.findall(text))

    def _watch(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        process = psutil.Process(self.app.proc.pid)
        while time.monotonic() < deadline:
            if self.app.proc.poll() is not None:
                raise _Crashed(f"edge-app exited with {self.app.proc.returncode}: {self.app.log_tail(20)}")
            with contextlib.suppress(psutil.Error):
                self.report.most_open_descriptors = max(self.report.most_open_descriptors, process.num_fds())
            time.sleep(0.5)

    def _until(self, condition: Callable[[], object], timeout_s: float):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            value = condition()
            if value:
                return value
            self._watch(0.5)
        return None


    def _stop(self) -> None:
        if self.app is None or self.app.proc is None:
            return
        if self.app.proc.poll() is None:
            with contextlib.suppress(Exception):
                self.app.terminate(15.0)
        self.report.exit_code_on_sigterm = self.app.proc.poll()
        text = self.app.log_path.read_text(errors="replace") if self.app.log_path.exists() else ""
        self.report.log_errors = len(re.findall(r" ERROR ", text))
        self.report.log_tracebacks = text.count("Traceback")
        self.app.close()


class _Crashed(RuntimeError):
    pass


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.chaos disk-pressure", description=__doc__.split("\n")[0])
    parser.add_argument("--disk-mb", type=int, default=128, help="size of the recordings' file system")
    parser.add_argument("--storm-s", type=float, default=90.0)
    parser.add_argument("--hold-s", type=float, default=75.0, help="how long exports are held (a retention run is every 60 s)")
    parser.add_argument("--model", default=str(shared_dir() / "models" / "yolov8n_coco_dynbatch.onnx"))
    parser.add_argument("--json", type=Path, default=Path("bench/results/chaos-disk.json"))
    parser.add_argument("--work-dir", type=Path, default=None, help="keep the logs here")
    args = parser.parse_args(argv)
    provenance = collect(ONNXRUNTIME_CPU)  # the tree as it is when the run starts
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    with tempfile.TemporaryDirectory(prefix="edge-app-chaos-disk-") as temporary:
        work = args.work_dir or Path(temporary)
        work.mkdir(parents=True, exist_ok=True)
        report = DiskPressureRun(args, work).run()
    write_results(args.json, {**asdict(report), "met": report.met}, provenance)
    print(report.markdown())
    print(f"written to {args.json}")
    return 0 if report.met else 1
