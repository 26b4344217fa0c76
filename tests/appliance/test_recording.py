"""Recording wired into the appliance: a sink for each recorded camera, their recording in the
status, metrics and the watchdog's STATUS line, a configuration change that records another camera.

The recorder is the real one (``edge_app.record.device_recorder``); the camera workers read
test:// sources, whose packet tee says "unavailable" (clips from real streams are exercised in
tests/record and end to end in tests/e2e/test_recording.py).
"""
from __future__ import annotations

import time
from dataclasses import replace

from edge_app.api.metrics import ApplianceCollector
from edge_app.appliance.appliance import Appliance
from edge_app.appliance.supervise import status_line
from edge_app.config.file import parse_config
from edge_app.record.recorder import CameraRecorder

CAMERAS = [{"id": "cam1", "source": "test://box?fps=10&width=64&height=48", "detect": False},
           {"id": "cam2", "source": "test://box?fps=10&width=64&height=48", "detect": False}]


def test_the_appliance_gives_recorded_cameras_a_sink_and_shows_their_recording(tmp_path, model_path, monkeypatch):
    workers = {}

    def camera_factory(cam, capture, **kwargs):
        from edge_app.capture.camera import CameraWorker

        workers.setdefault(cam.id, []).append(kwargs.get("packet_sink") is not None)
        return CameraWorker(cam, capture, **kwargs)

    def config(cam2_records: bool):
        cameras = [{**CAMERAS[0], "record": {"enabled": True}}, {**CAMERAS[1], "record": {"enabled": cam2_records}}]
        # The real model; detection is off, so only capture and recording run.
        return parse_config({"device_id": "dev", "model": {"path": str(model_path)}, "mqtt": {"enabled": False},
                             "api": {"enabled": False, "allow_unsafe_sources": True}, "cameras": cameras,
                             "record": {"dir": str(tmp_path / "rec"), "retain": {"reserve_mb": 0}}})

    appliance = Appliance(config(False), record=True, camera_factory=camera_factory)
    appliance.start()
    try:
        assert workers == {"cam1": [True], "cam2": [False]}
        deadline = time.monotonic() + 20
        while appliance.reads.status().cameras[0].recording.unavailable is None and time.monotonic() < deadline:
            time.sleep(0.05)
        cams = {c.id: c for c in appliance.reads.status().cameras}
        assert cams["cam1"].recording.unavailable.startswith("recording unavailable"), cams["cam1"].recording
        assert cams["cam2"].recording is None
        assert appliance.reads.status().recording.directory == str(tmp_path / "rec")
        assert appliance.reads.recordings().clip("no-such-event") is None

        # What the reports make of a camera's figures (a real pause needs a real stream: tests/record).
        real_status = CameraRecorder.status
        monkeypatch.setattr(CameraRecorder, "status", lambda self: replace(
            real_status(self), paused="disk below reserve", bytes_written=1000, clips_preroll_short=1))
        status = appliance.reads.status()
        assert status.recording.bytes_written == 1000 and status.recording.clips_preroll_short == 1
        assert status_line(status).startswith("RECORDING PAUSED (disk below reserve); ")
        samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
                   for m in ApplianceCollector(appliance.reads).collect() for s in m.samples}
        assert samples[("edge_app_recording_paused", ())] == 1.0
        assert samples[("edge_app_camera_recording_bytes_written_total", (("camera", "cam1"),))] == 1000.0
        assert samples[("edge_app_recording_clips_preroll_short_total", ())] == 1.0
        assert samples[("edge_app_camera_recording_clips_preroll_short_total", (("camera", "cam1"),))] == 1.0
        monkeypatch.undo()

        # Recording switched on for cam2 by a configuration change: it restarts with a sink.
        appliance.changes.write(lambda running: config(True).model_dump(mode="json"))  # the one change path
        assert workers["cam2"] == [False, True] and workers["cam1"] == [True]
        assert appliance.reads.status().recording is not None
    finally:
        appliance.stop()
    assert appliance.reads.status().recording is None  # stopped: every file finished, the folder closed


def test_an_appliance_that_does_not_record_opens_no_folder(tmp_path, model_path):
    config = parse_config({"device_id": "dev", "model": {"path": str(model_path)}, "mqtt": {"enabled": False},
                           "api": {"enabled": False, "allow_unsafe_sources": True}, "cameras": CAMERAS[:1],
                           "record": {"dir": str(tmp_path / "rec"), "events": {"enabled": True}}})
    appliance = Appliance(config, camera_factory=lambda cam, capture, **kwargs: _no_sink(cam, capture, **kwargs))
    appliance.start()
    try:
        assert appliance.reads.status().recording is None and appliance.reads.recordings() is None
    finally:
        appliance.stop()
    assert not (tmp_path / "rec").exists()


def _no_sink(cam, capture, **kwargs):
    from edge_app.capture.camera import CameraWorker

    assert kwargs.get("packet_sink") is None
    return CameraWorker(cam, capture, **kwargs)
