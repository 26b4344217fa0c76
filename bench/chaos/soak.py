"""Chaos soak: a real ``edge-app run`` under repeated failures, and whether it comes out whole.

    python -m bench.chaos --minutes 30 --json bench/results/chaos.json

Four RTSP cameras, each served by its own gst-rtsp-server process, feed the real model; the
appliance publishes to its own Mosquitto on a free port (QoS 1, persistence on; the soak's
subscriber keeps a persistent session). During the disturbed phase each RTSP server is killed
and restarted once per ``camera_cycle_s`` (staggered), the broker is stopped and restarted once
per ``broker_cycle_s``, and now and then a PATCH storm and a slowloris burst hit the REST API,
each on its own thread so the kill schedule never waits for them. Before the disturbances a
warm-up, after them a settle time; then the accounting (see ``ChaosReport`` for the goals).

The real-world helpers (RTSP server, Mosquitto, the appliance as a subprocess) are the test
kit's (``testkit``), which the tests use too: the soak drives them the way the tests do.
"""
from __future__ import annotations

import argparse
import datetime
import logging
import re
import secrets
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional


from bench.chaos.probes import BurstResult, DetectionsWatch, ProcessSampler, api_json, patch_storm, slowloris
from bench.chaos.report import CameraOutage, ChaosReport, ChaosSettings, write_json
from bench.common.provenance import collect, engine_of
from edge_app.commands.demo_clip import make_clip
from testkit.appliance import ApplianceProcess
from testkit.broker import MOSQUITTO, MosquittoBroker
from testkit.net import free_port
from testkit.paths import shared_dir
from testkit.rtsp import SYSTEM_PYTHON, RtspServer

log = logging.getLogger(__name__)

TOPIC_PREFIX = "edge_app_chaos"
DEVICE_ID = "chaos"


@dataclass(order=True)
class _Event:
    at_s: float
    kind: str  # camera_down | camera_up | broker_down | broker_up | storm | slowloris
    target: int = 0


def plan_events(settings: ChaosSettings) -> List[_Event]:
    """Every disturbance of the phase, in time order; each one ends before the phase does."""
    end_s, events = settings.chaos_s, []
    for cam in range(settings.cameras):
        at_s = (cam + 0.5) * settings.camera_cycle_s / settings.cameras
        while at_s + settings.camera_down_s < end_s:
            events += [_Event(at_s, "camera_down", cam), _Event(at_s + settings.camera_down_s, "camera_up", cam)]
            at_s += settings.camera_cycle_s
    at_s = 0.3 * settings.broker_cycle_s
    while at_s + settings.broker_down_s < end_s:
        events += [_Event(at_s, "broker_down"), _Event(at_s + settings.broker_down_s, "broker_up")]
        at_s += settings.broker_cycle_s
    for kind, every_s, phase, length_s in (("storm", settings.storm_every_s, 0.45, 30.0),
                                           ("slowloris", settings.slowloris_every_s, 0.65, settings.slowloris_s)):
        at_s = phase * every_s
        while at_s + length_s < end_s:
            events.append(_Event(at_s, kind))
            at_s += every_s
    return sorted(events)


def check_prerequisites(settings: ChaosSettings) -> None:
    problems = [f"{tool} is not installed" for tool in ("ffmpeg", "ffprobe") if shutil.which(tool) is None]
    if not Path(MOSQUITTO).exists():
        problems.append(f"{MOSQUITTO} is not installed")
    if not Path(SYSTEM_PYTHON).exists():
        problems.append(f"{SYSTEM_PYTHON} (with gst-rtsp-server's GObject bindings) is missing")
    if not Path(settings.model_path).is_file():
        problems.append(f"model {settings.model_path} is missing")
    if problems:
        raise SystemExit("chaos soak cannot run: " + "; ".join(problems) + " (scripts/system-deps.sh)")


class ChaosRun:
    """One soak: owns the servers, the broker, the appliance and the probes."""

    def __init__(self, settings: ChaosSettings, work_dir: Path) -> None:
        self.settings = settings
        self.work_dir = work_dir
        self.report = ChaosReport(settings, datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
        self.token = secrets.token_hex(16)
        self.servers: List[RtspServer] = []
        self.broker: Optional[MosquittoBroker] = None
        self.watch: Optional[DetectionsWatch] = None
        self.app: Optional[ApplianceProcess] = None
        self.sampler: Optional[ProcessSampler] = None
        self._bursts: List[threading.Thread] = []
        self._burst_lock = threading.Lock()
        self._started_mono_s = time.monotonic()
        self._phase_start_wall_s = 0.0

    # ------------------------------------------------------------------ setup
    def _clips(self) -> List[Path]:
        images = sorted((shared_dir() / "images").glob("*.jpg"))
        if not images:
            raise SystemExit(f"no images in {shared_dir() / 'images'}")
        clips = []
        for cam in range(self.settings.cameras):
            image = images[cam % len(images)]
            clip = self.work_dir / f"cam{cam}.mp4"
            clips.append(make_clip([image], clip, 2.0, 10, self.settings.clip_size))
        return clips

    def start(self) -> None:
        s = self.settings
        for cam, clip in enumerate(self._clips()):
            self.servers.append(RtspServer({f"cam{cam}": clip}, self.work_dir / f"rtsp{cam}").start())
        # A persistent subscriber may be away while the appliance flushes its queue: let the
        # broker keep far more than its default 1000 messages for it.
        self.broker = MosquittoBroker(self.work_dir / "mosquitto", extra_config=["max_queued_messages 100000"]).start()
        self.watch = DetectionsWatch(self.broker.host, self.broker.port,
                                     f"{TOPIC_PREFIX}/{DEVICE_ID}/cameras/+/detections", f"chaos-watch-{free_port()}")
        self.watch.start()
        config = {
            "device_id": DEVICE_ID,
            "cameras": [{"id": f"cam{cam}", "source": server.url(f"cam{cam}"), "fps_limit": s.fps_limit}
                        for cam, server in enumerate(self.servers)],
            # Waiting up to one frame interval for the other cameras makes nearly every batch a full
            # one from the start, so the model's working memory reaches its peak during the warm-up
            # instead of at the first rare full batch an hour later (which would read as growth).
            "model": {"path": str(Path(s.model_path).resolve()), "max_batch": s.cameras,
                      "batch_timeout_ms": min(1000.0, 800.0 / s.fps_limit) if s.fps_limit else 20,
                      "conf_threshold": 0.25, "iou_threshold": 0.45},
            # Every analysed frame is published, so the appliance's count of analysed frames is the
            # count of detections messages it queued.
            "mqtt": {"host": self.broker.host, "port": self.broker.port, "topic_prefix": TOPIC_PREFIX, "qos": 1,
                     "publish_empty": True, "max_queue": 100000},
            "api": {"host": "127.0.0.1", "port": free_port(), "token": self.token},
        }  # capture: the shipped defaults, which the recovery goal is about
        self.app = ApplianceProcess(config, self.work_dir).start()
        self.sampler = ProcessSampler(self.app.proc.pid, self._started_mono_s)

    # -------------------------------------------------------------- the phases
    def run(self) -> ChaosReport:
        s, report = self.settings, self.report
        try:
            self.start()
            self._wait(lambda: len(self.watch.unique_per_camera()) == s.cameras, 120, "detections from every camera")
            self._sleep_watching(s.warmup_s)
            self._wait(self._rss_flat, s.warmup_s + 180.0, "RSS to settle")
            report.baseline = self.sampler.steady_sample()
            baseline_fds = self.sampler.descriptors()
            log.info("baseline: %s", report.baseline)
            self._disturb()
            self._join_bursts()
            self._sleep_watching(s.settle_s)
            report.end = self.sampler.steady_sample()
            end_fds = self.sampler.descriptors()
            report.fds_added, report.fds_removed = _difference(end_fds, baseline_fds), _difference(baseline_fds, end_fds)
            self._account()
        except _Crashed as crash:
            report.crashes, report.crash_detail = 1, str(crash)
        finally:
            self._finish()
        return report

    def _disturb(self) -> None:
        s, report = self.settings, self.report
        events = plan_events(s)
        kills: Dict[int, List[CameraOutage]] = {}
        down_at: Dict[int, float] = {}
        phase_start = time.monotonic()
        for event in events:
            self._sleep_watching(max(0.0, phase_start + event.at_s - time.monotonic()))
            now_s = round(time.monotonic() - phase_start, 1)
            if event.kind == "camera_down":
                self.servers[event.target].stop()
                down_at[event.target] = now_s
            elif event.kind == "camera_up":
                self.servers[event.target].start()
                back_s = round(time.monotonic() - phase_start, 1)
                kills.setdefault(event.target, []).append(
                    CameraOutage(f"cam{event.target}", down_at[event.target], back_s, time.time(), None))
            elif event.kind == "broker_down":
                self.broker.stop()
            elif event.kind == "broker_up":
                self.broker.start()
                report.broker_restarts += 1
            elif event.kind == "storm":
                self._burst(lambda at_s=now_s: patch_storm(self.app.base_url, self.token, at_s, s.storm_patches))
            elif event.kind == "slowloris":
                self._burst(lambda at_s=now_s: slowloris("127.0.0.1", _port(self.app.base_url), at_s,
                                                         s.slowloris_sockets, s.slowloris_s))
            log.info("%6.1f s  %s %s", now_s, event.kind, event.target if event.kind.startswith("camera") else "")
        self._sleep_watching(max(0.0, phase_start + s.chaos_s - time.monotonic()))
        report.chaos_s = round(time.monotonic() - phase_start, 1)
        for outages in kills.values():
            for this, following in zip(outages, outages[1:] + [None]):
                this.next_kill_s = following.killed_s if following else None
            report.outages += outages
        report.outages.sort(key=lambda o: o.killed_s)
        self._phase_start_wall_s = time.time() - (time.monotonic() - phase_start)

    def _account(self) -> None:
        """Stop the cameras, let the appliance drain, then compare what it analysed (every
        analysed frame is one queued detections message) with what the subscriber got."""
        report = self.report
        for server in self.servers:
            server.stop()

        def drained() -> Optional[Dict[str, int]]:
            status, cameras = api_json(self.app, "/api/v1/status"), api_json(self.app, "/api/v1/cameras")
            if status is None or cameras is None or status["mqtt"]["queued"] or not status["mqtt"]["connected"]:
                return None
            return {cam["id"]: int(cam["frames_analyzed"]) for cam in cameras}

        settled = self._stable(drained, 3.0, 90.0)
        report.analysed = settled or {}
        status = api_json(self.app, "/api/v1/status") or {}
        report.mqtt_dropped = (status.get("mqtt") or {}).get("dropped")
        try:
            self._wait(lambda: all(self.watch.unique_per_camera().get(c, 0) >= n for c, n in report.analysed.items()),
                       30, "the subscriber to receive every queued detection")
        except TimeoutError:
            pass  # counted as missing below
        report.received_unique = self.watch.unique_per_camera()
        report.received_total = len(self.watch.received())
        for outage in report.outages:
            first = self.watch.first_capture_after(outage.camera_id, outage.back_wall_s)
            phase_wall_s = self._phase_start_wall_s
            if first is not None and (outage.next_kill_s is None or first < phase_wall_s + outage.next_kill_s):
                outage.recovery_s = round(first - outage.back_wall_s, 2)

    def _finish(self) -> None:
        report = self.report
        if self.app is not None and self.app.proc is not None:
            if self.app.proc.poll() is None:
                try:
                    self.app.terminate(10.0)
                except Exception as exc:
                    log.error("edge-app did not stop on SIGTERM: %s", exc)
            report.exit_code_on_sigterm = self.app.proc.poll()
            text = self.app.log_path.read_text(errors="replace") if self.app.log_path.exists() else ""
            report.log_errors = len(re.findall(r" ERROR ", text))
            report.log_tracebacks = text.count("Traceback")
            self.app.close()
        for thread in self._bursts:
            thread.join(5)
        if self.watch is not None:
            self.watch.stop()
        for server in self.servers:
            server.stop()
        if self.broker is not None:
            self.broker.kill()

    # ---------------------------------------------------------------- helpers
    def _burst(self, work: Callable[[], BurstResult]) -> None:
        def run() -> None:
            try:
                result = work()
            except Exception as exc:  # a broken probe is a finding, not a reason to stop
                log.exception("burst failed")
                result = BurstResult("error", 0.0, errors=[str(exc)])
            with self._burst_lock:
                self.report.bursts.append(result)

        thread = threading.Thread(target=run, name="chaos-burst", daemon=True)
        thread.start()
        self._bursts.append(thread)

    def _join_bursts(self) -> None:
        for thread in self._bursts:
            thread.join(120.0)

    def _sleep_watching(self, seconds: float) -> None:
        """Sleep, checking the appliance is alive and sampling it every ``sample_every_s``."""
        deadline = time.monotonic() + seconds
        while True:
            if self.app.proc.poll() is not None:
                raise _Crashed(f"edge-app exited with {self.app.proc.returncode}: {self.app.log_tail(20)}")
            last = self.report.samples[-1].t_s if self.report.samples else -1e9
            if time.monotonic() - self._started_mono_s - last >= self.settings.sample_every_s:
                sample = self.sampler.sample()
                self.report.samples.append(sample)
                self.report.rss_max_mb = max(self.report.rss_max_mb, sample.rss_mb)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            time.sleep(min(0.2, remaining))

    def _rss_flat(self, window_s: float = 30.0, tolerance_mb: float = 3.0) -> bool:
        """Whether RSS moved less than ``tolerance_mb`` over the last ``window_s`` of samples."""
        samples = self.report.samples
        if not samples or samples[-1].t_s - samples[0].t_s < window_s:
            return False
        recent = [x.rss_mb for x in samples if x.t_s >= samples[-1].t_s - window_s]
        return max(recent) - min(recent) < tolerance_mb

    def _wait(self, condition: Callable[[], bool], timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while not condition():
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out after {timeout_s:g} s waiting for {what}")
            self._sleep_watching(0.2)

    def _stable(self, read: Callable[[], Optional[Dict[str, int]]], for_s: float, timeout_s: float) -> Optional[Dict[str, int]]:
        """The value of ``read`` once it stayed the same (and not None) for ``for_s``."""
        deadline = time.monotonic() + timeout_s
        value, since = None, time.monotonic()
        while time.monotonic() < deadline:
            current = read()
            if current is None or current != value:
                value, since = current, time.monotonic()
            elif time.monotonic() - since >= for_s:
                return value
            self._sleep_watching(0.5)
        return None


class _Crashed(RuntimeError):
    pass


def _difference(a: List[str], b: List[str]) -> List[str]:
    rest = list(b)
    out = []
    for item in a:
        if item in rest:
            rest.remove(item)
        else:
            out.append(item)
    return out


def _port(base_url: str) -> int:
    return int(base_url.rsplit(":", 1)[1])


def run_chaos(settings: ChaosSettings, work_dir: Optional[Path] = None) -> ChaosReport:
    check_prerequisites(settings)
    if work_dir is not None:
        work_dir.mkdir(parents=True, exist_ok=True)
        return ChaosRun(settings, work_dir).run()
    with tempfile.TemporaryDirectory(prefix="edge-app-chaos-") as folder:
        return ChaosRun(settings, Path(folder)).run()


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.chaos", description="Chaos soak of a real edge-app run (see bench/chaos/soak.py)")
    parser.add_argument("--minutes", type=float, default=30.0, help="length of the disturbed phase (default 30)")
    parser.add_argument("--cameras", type=int, default=4)
    parser.add_argument("--model", default=str(shared_dir() / "models" / "yolov8n_coco_dynbatch.onnx"))
    parser.add_argument("--json", type=Path, default=Path("bench/results/chaos.json"))
    parser.add_argument("--work-dir", type=Path, default=None, help="keep servers' and edge-app's logs here")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = ChaosSettings.for_minutes(args.minutes, cameras=args.cameras, model_path=args.model)
    report = run_chaos(settings, args.work_dir)
    write_json(report, args.json, collect(engine_of(Path(args.model))))
    print(report.markdown())
    print(f"written to {args.json}")
    return 0 if report.met else 1
