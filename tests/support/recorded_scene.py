"""Detections, tracks and events of a recorded scene: what the analysis path must keep giving.

The real YOLOv8n (the float32 export of the shared models, ONNX Runtime on the CPU, batches of
one frame so no batching changes a figure) on the frames of the camera-like scene of
``bench.cpu.camera_scene`` (640x360, 10 frames/s, 4 s: the bus and four people walking through
a panning, noisy view), as drawn, before encoding (an encoder capped at a bitrate is not
deterministic across runs), on two cameras: cam1 plays the scene from its middle. Each camera has a zone (its left half) and a
line down the middle. The frames go through the real Pipeline (its overlapped stages, as on an
accelerator), ResultStore and AnalysisHub; what AnalysisHub publishes is recorded by a stand-in
for the MQTT publisher's publish methods (checked against MqttPublisher's signatures by the test).

    python -m tests.support.recorded_scene tests/events/data/recorded_scene.json

records the file; tests/events/test_recorded_scene.py runs the same scene and compares.
"""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from bench.common.detectors import load_detector, model_config
from bench.cpu import motion_clips
from bench.cpu.camera_scene import SceneSettings, scene_frames
from edge_app.appliance.analysis import AnalysisHub
from edge_app.capture.frame import Frame
from edge_app.config import AppConfig, CameraConfig
from edge_app.config.schema import TrackingConfig
from edge_app.config.schema_cameras import LineConfig, ZoneConfig
from edge_app.events.model import EventMessage
from edge_app.events.zone_stats import ZoneStats
from edge_app.pipeline.results import ResultStore
from edge_app.pipeline.runner import Pipeline
from edge_app.pipeline.scheduler import BatchScheduler

SCENE = SceneSettings(size=(640, 360), fps=10, seconds=4.0, pan_period_s=4.0)
CAMERAS = {"cam0": 0, "cam1": 20}  # camera -> first frame of the clip it plays
T0 = 1_800_000_000.0
END_S = T0 + 100.0  # when the scene ends: every open event ends then


class RecordingPublisher:
    """What AnalysisHub sends, per camera, in order (MqttPublisher's publish methods, recorded)."""

    def __init__(self) -> None:
        self.messages: Dict[str, List[list]] = defaultdict(list)
        self._lock = threading.Lock()

    def _add(self, camera_id: str, item: list) -> bool:
        with self._lock:
            self.messages[camera_id].append(item)
        return True

    def publish_event(self, message: EventMessage) -> bool:
        return self._add(message.after.camera_id, ["event", _rounded(message.to_dict())])

    def publish_snapshot(self, camera_id: str, label: str, jpeg: bytes) -> bool:
        return self._add(camera_id, ["snapshot", label])

    def publish_object_count(self, camera_id: str, label: str, count: int, ts: Optional[float] = None,
                             model: str = "default") -> bool:
        return self._add(camera_id, ["objects", label, count, ts])

    def publish_zone_count(self, zone: str, label: str, count: int, ts: Optional[float] = None,
                           model: str = "default") -> bool:
        return self._add(zone.split("_")[0], ["zone", zone, label, count, ts])

    def publish_zone_stats(self, zone: str, stats: ZoneStats, ts: Optional[float] = None,
                           model: str = "default") -> bool:
        return self._add(zone.split("_")[0], ["zone_stats", zone, _rounded(stats.to_dict()), ts])

    def publish_line_count(self, camera_id: str, line: str, count_in: int, count_out: int, ts: Optional[float] = None,
                           model: str = "default") -> bool:
        return self._add(camera_id, ["line", line, count_in, count_out, ts])

    def publish_line_crossing(self, camera_id: str, line: str, event_id: Optional[str], track_id: int, label: str,
                              direction: str, ts: Optional[float] = None, model: str = "default",
                              speed: object = None) -> bool:
        return self._add(camera_id, ["crossing", line, event_id, track_id, label, direction, ts])


def _rounded(value: Any) -> Any:
    """Floats to 3 decimals: another CPU's ONNX Runtime may differ in the last bits."""
    if isinstance(value, float):
        return round(value, 3)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_rounded(v) for v in value]
    return value


class _Feed:
    """A file camera read as fast as the pipeline takes its frames (none lost)."""

    waits_for_consumer = True

    def __init__(self, frames: List[Frame]) -> None:
        self._frames = list(frames)
        self._lock = threading.Lock()

    def take(self) -> Optional[Frame]:
        with self._lock:
            return self._frames.pop(0) if self._frames else None


class _Overlapped:
    """The CPU detector with the pipeline's accelerator stages: infer and decode on their own threads."""

    runs_on_host_cpu = False

    def __init__(self, detector) -> None:
        self._detector = detector

    def __getattr__(self, name: str):
        return getattr(self._detector, name)


def scene_config(clip: Path, model_path: Path, tracker_processes: int = 0) -> AppConfig:
    cameras = [CameraConfig(id=cid, source=str(clip), zones=[ZoneConfig(name=f"{cid}_left", polygon=[[0, 0], [0.5, 0], [0.5, 1], [0, 1]])],
                            lines=[LineConfig(name=f"{cid}_middle", points=[[0.5, 0], [0.5, 1]])]) for cid in CAMERAS]
    return AppConfig(device_id="recorded-scene", cameras=cameras, model=model_config(model_path, 1),
                     tracking=TrackingConfig(enabled=True, processes=tracker_processes))


def run_scene(model_path: Path, images_dir: Path, lanes: int = 2, tracker_processes: int = 0) -> Dict[str, Any]:
    """Per camera: every frame's detections with track ids, and every message AnalysisHub sent.
    ``lanes``: the pipeline's result lanes (2: the two cameras' analyses run side by side);
    ``tracker_processes``: ``tracking.processes`` (0: the trackers in this process)."""
    motion_clips.BUS_JPG = images_dir / "bus.jpg"
    draw, count = scene_frames(SCENE)
    images = [draw(i) for i in range(count)]
    config = scene_config(Path(SCENE.file_name()), model_path, tracker_processes)
    publisher = RecordingPublisher()
    hub = AnalysisHub(lambda: publisher, clock=lambda: END_S)
    hub.configure(config)
    detections: Dict[str, List[list]] = defaultdict(list)

    def published(frame) -> None:
        d = frame.detections
        rows = [[*_rounded(box), _rounded(float(score)), int(cls), int(track)] for box, score, cls, track in
                zip(d.xyxy.tolist(), d.confidence.tolist(), d.class_id.tolist(), d.track_id.tolist())]
        detections[frame.camera_id].append([frame.frame_id, rows])

    store = ResultStore(published, analyse=hub.analyse)
    feeds = {}
    for cid, first in CAMERAS.items():
        order = [images[(first + i) % len(images)] for i in range(len(images))]
        feeds[cid] = _Feed([Frame(cid, i + 1, T0 + i / SCENE.fps, time.monotonic(), image) for i, image in enumerate(order)])
    detector = _Overlapped(load_detector(model_path, 1))
    pipeline = Pipeline(lambda: detector, lambda: feeds, store, BatchScheduler(1, 0.005), lanes=lanes)
    pipeline.reconfigure({cid: 0 for cid in feeds}, 1, 0.005)
    pipeline.start()
    deadline = time.monotonic() + 300
    try:
        while time.monotonic() < deadline and sum(len(v) for v in detections.values()) < len(images) * len(feeds):
            pipeline.notify_frame()
            time.sleep(0.02)
    finally:
        pipeline.stop()
        detector.close()
    started = [pid for pid in hub.tracker_process_ids() if pid is not None]  # before end_all stops them
    hub.end_all()
    return {"frames_per_camera": len(images), "tracker_processes_started": len(started),
            "cameras": {cid: {"detections": detections[cid], "messages": publisher.messages[cid]} for cid in CAMERAS}}


def main(argv: Sequence[str]) -> int:
    """``python -m tests.support.recorded_scene OUT [--messages-only]``: record the scene into OUT;
    with ``--messages-only``, keep OUT's detections and header and record its messages anew (when the
    messages gain keys: the detections stay the original recording's)."""
    from testkit.paths import shared_dir

    args = [arg for arg in argv if arg != "--messages-only"]
    out = Path(args[0])
    shared = shared_dir()
    result = run_scene(shared / "models" / "yolov8n_coco_dynbatch.onnx", shared / "images")
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=False).stdout.strip()
    if "--messages-only" in argv:
        recorded = json.loads(out.read_text())
        for camera_id, camera in recorded["cameras"].items():
            camera["messages"] = result["cameras"][camera_id]["messages"]
        recorded["header"]["messages_updated"] = (
            f"at {commit}: the messages re-recorded by run_scene (python -m tests.support.recorded_scene "
            f"{' '.join(argv)}); the detections are the original recording's")
        result, header = {k: v for k, v in recorded.items() if k != "header"}, recorded["header"]
    else:
        header = {"captured_by": "python -m tests.support.recorded_scene " + " ".join(argv),
                  "commit": commit, "model": "yolov8n_coco_dynbatch.onnx (float32), ONNX Runtime on the CPU, batch 1",
                  "scene": f"bench.cpu.camera_scene {SCENE} (frames as drawn, not encoded)", "cameras": CAMERAS,
                  "note": "detections, track ids and the messages AnalysisHub sent, recorded from the analysis "
                          "path as it was at this commit; floats rounded to 3 decimals"}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"header": header, **result}, indent=None, separators=(",", ":")) + "\n")
    print(f"{out}: {sum(len(c['messages']) for c in result['cameras'].values())} messages")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
