"""One tree's work after the model, on recorded frames and detections: CPU µs per analysed frame.

Run as a script by ``bench.cpu.post_model`` with ``PYTHONPATH`` set to the tree measured (this
checkout, or another commit's ``edge_app`` unpacked beside it), so it imports nothing but
``edge_app``, numpy and what the appliance itself imports.

    python bench/cpu/post_model_worker.py '{"frames": "f.npy", "detections": "d.npz", "config": {...}, ...}'

The appliance's own objects after the model, wired as ``edge_app.appliance.Appliance`` wires them:
``ResultStore`` (privacy masks, status figures) → ``AnalysisHub`` (tracking, zones and lines,
events, snapshots, their MQTT messages and the event store on disk) → the detections message,
published by a real ``MqttPublisher`` to a real broker. The frames go in through the pipeline's
``CameraLanes`` exactly as an accelerator's batches do, as fast as the lanes take them. Prints
one JSON object: CPU (every thread of the process: lanes, MQTT network loop, event store writer;
plus the trackers' child processes, ``tracking.processes``) and wall µs per frame, the CPU of the
appliance's process alone (what shares its interpreter lock), and the stages as
``edge_app_stage_seconds`` counts them.

With ``"profile": true`` the frames are handled on this thread (no lanes) under cProfile and the
functions holding the most time come back instead of the lanes' figures.
"""
from __future__ import annotations

import cProfile
import io
import json
import os
import pstats
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import numpy as np

import edge_app
from edge_app.appliance.analysis import AnalysisHub
from edge_app.capture.frame import Frame
from edge_app.config.schema import AppConfig, TrackingConfig
from edge_app.detect.detections import Detections
from edge_app.events.store import EventStore
from edge_app.mqtt.payloads import detections_payload_for
from edge_app.mqtt.publisher import MqttPublisher
from edge_app.pipeline.lanes import CameraLanes
from edge_app.pipeline.results import ResultStore
from edge_app.reporting.stage_times import StageTimes

TOP_FUNCTIONS = 30


def recorded(path: str, labels: Tuple[str, ...]) -> List[Detections]:
    data = np.load(path)
    offsets = data["offsets"]
    return [Detections(data["xyxy"][a:b], data["confidence"][a:b], data["class_id"][a:b], labels)
            for a, b in zip(offsets[:-1], offsets[1:])]


def frames_in_order(spec: Dict[str, Any], images: np.ndarray, detections: List[Detections]):
    """(camera, Frame, Detections) in the order the pipeline hands them on: frame by frame, every camera."""
    cameras = [c["id"] for c in spec["config"]["cameras"]]
    fps, repeats, count = float(spec["fps"]), int(spec["repeats"]), len(detections)
    start_s = time.time()
    for loop in range(repeats):
        for index in range(count):
            frame_id = loop * count + index + 1
            ts = start_s + (frame_id - 1) / fps  # each pass is a new walk through the scene, later in time
            for camera_id in cameras:
                yield camera_id, Frame(camera_id, frame_id, ts, time.monotonic(), images[index]), detections[index]


def top_functions(profile: cProfile.Profile) -> Dict[str, List[str]]:
    out = {}
    for key in ("tottime", "cumulative"):
        text = io.StringIO()
        pstats.Stats(profile, stream=text).sort_stats(key).print_stats(TOP_FUNCTIONS)
        out[key] = [line.rstrip() for line in text.getvalue().splitlines() if line.strip()][-TOP_FUNCTIONS - 1:]
    return out


def children_cpu_s(pids: List[Any]) -> float:
    """CPU seconds the tracker processes have used so far (/proc: Linux). Not
    bench.common.resources: this script runs against other commits' trees, where only
    ``edge_app`` is importable."""
    total = 0.0
    for pid in pids:
        if pid is None:
            continue
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def app_config(spec: Dict[str, Any]) -> AppConfig:
    """The configuration, less ``tracking.processes`` in a tree from before that key."""
    document = json.loads(json.dumps(spec["config"]))
    if "processes" not in TrackingConfig.model_fields:
        document.get("tracking", {}).pop("processes", None)
    return AppConfig.model_validate(document)


def main() -> int:
    spec: Dict[str, Any] = json.loads(sys.argv[1])
    config = app_config(spec)
    images = np.load(spec["frames"], mmap_mode="r")
    images = np.ascontiguousarray(images)  # in memory, as decoded frames are
    # a tuple, as the detectors give their labels (edge_app/detect/yolo_outputs.py)
    detections = recorded(spec["detections"], tuple(spec["labels"]))
    publisher = MqttPublisher(config.mqtt, config.device_id, "bench")
    publisher.start()
    deadline_s = time.monotonic() + 10.0
    while not publisher.connected and time.monotonic() < deadline_s:
        time.sleep(0.05)
    if not publisher.connected:
        print(json.dumps({"status": "skipped", "reason": "no MQTT broker"}))
        return 0
    failures: List[str] = []
    with tempfile.TemporaryDirectory(prefix="post-model-") as temp:
        store = EventStore(Path(temp))
        stage_times = StageTimes()
        hub = AnalysisHub(lambda: publisher, store=store, stage_times=stage_times)
        hub.configure(config)
        results = ResultStore(lambda frame: publisher.publish_detections(
            frame.camera_id, detections_payload_for(config.device_id, frame)), analyse=hub.analyse,
            stage_times=stage_times)
        work = list(frames_in_order(spec, images, detections))
        handle: Callable[[Frame, Detections], None] = lambda f, d: results.handle(f, d, {})
        cameras = len(config.cameras)
        for _, frame, dets in work[:cameras]:  # the first frame of each camera starts what starts lazily
            handle(frame, dets)
        work = work[cameras:]
        pids = list(getattr(hub, "tracker_process_ids", lambda: [])())
        out: Dict[str, Any] = {"status": "ok", "edge_app": edge_app.__file__, "frames": len(work),
                               "tracker_processes": len(pids)}
        children_start_s = children_cpu_s(pids)
        cpu_start_s, wall_start_s = time.process_time(), time.perf_counter()
        if spec.get("profile"):
            profile = cProfile.Profile()
            profile.enable()
            for _, frame, dets in work:
                handle(frame, dets)
            profile.disable()
            out["profile"] = top_functions(profile)
        else:
            lanes = CameraLanes(int(spec["lanes"]), "bench", on_error=failures.append)
            for camera_id, frame, dets in work:
                lanes.submit(camera_id, lambda f=frame, d=dets: handle(f, d))
            lanes.stop(60.0)
        cpu_s, wall_s = time.process_time() - cpu_start_s, time.perf_counter() - wall_start_s
        children_s = children_cpu_s(pids) - children_start_s
        hub.end_all()
        store.flush(30.0)
        events = store.total()  # the events the scene made, every camera: the same in every tree measured
        store.close()
    publisher.stop()
    out.update({"cpu_us_per_frame": round((cpu_s + children_s) / len(work) * 1e6, 1),
                "appliance_process_cpu_us_per_frame": round(cpu_s / len(work) * 1e6, 1),
                "wall_us_per_frame": round(wall_s / len(work) * 1e6, 1),
                "threads": threading.active_count(), "errors": len(failures),
                "stage_ms": {k: round(v, 4) for k, v in stage_times.mean_ms().items()}, "events": events})
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
