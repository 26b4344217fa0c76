"""The Supervisor's loop with a scripted appliance: watchdog pings, status lines, stop budget.

Signals themselves are tested on real ``edge-app run`` processes (tests/e2e/test_shutdown.py);
here the stop comes from ``request_stop`` so nothing touches the test runner's signal mask.
"""
from __future__ import annotations

import dataclasses
import threading
import time
from typing import List, Optional

from edge_app.detect.base import DetectorError
from edge_app.mqtt.link_stall_watch import LinkHealth
from edge_app.pipeline.stall_watch import PipelineHealth
from edge_app.process.shutdown import StopSignals
from edge_app.reporting.protocol import MqttReport
from edge_app.appliance.supervise import Supervisor, status_line
from tests.support.reports import camera_report, pipeline_report, status_report


class RecordingNotifier:
    enabled = True

    def __init__(self):
        self.sent: List[str] = []

    def notify(self, *lines: str) -> bool:
        self.sent.extend(lines)
        return True

    def ready(self, status: str = "") -> bool:
        return self.notify("READY=1", f"STATUS={status}")

    def stopping(self, status: str = "stopping") -> bool:
        return self.notify("STOPPING=1")

    def watchdog(self) -> bool:
        return self.notify("WATCHDOG=1")

    def status(self, text: str) -> bool:
        return self.notify(f"STATUS={text}")

    def extend_timeout(self, seconds: float, status: str = "") -> bool:
        return self.notify(f"EXTEND_TIMEOUT_USEC={int(seconds * 1e6)}")


class ScriptedAppliance:
    def __init__(self, fail_start: Optional[Exception] = None):
        self.fail_start = fail_start
        self.stalled = False
        self.mqtt_stalled = False
        self.stopped = threading.Event()
        self.cancelled = False

    @property
    def reads(self):
        """What the Supervisor reads (``Appliance.reads``): the figures scripted here."""
        return self

    def start(self):
        if self.fail_start:
            raise self.fail_start

    def engine_build(self):
        return None

    def current_config(self):
        class Config:
            cameras = ["cam"]
        return Config()

    def pipeline_health(self):
        return PipelineHealth(self.stalled, "hung" if self.stalled else None, 1.0)

    def mqtt_health(self):
        return LinkHealth(self.mqtt_stalled, "no MQTT traffic for 61 s" if self.mqtt_stalled else None, 60.0)

    def status(self):
        health = self.mqtt_health()
        return status_report(pipeline=pipeline_report(12.5, self.stalled, "hung" if self.stalled else None),
                             mqtt=MqttReport(True, 1, 5, 0, stalled=health.stalled, stall_reason=health.reason))

    def cancel_start(self):
        self.cancelled = True

    def stop(self, timeout_s):
        self.stopped.set()


class NoSignals(StopSignals):
    """StopSignals without the process-wide parts: waits, never receives a signal."""

    def wait(self, timeout_s):
        time.sleep(timeout_s)
        return None

    def stopping(self, signum, deadline_mono_s):
        pass


def _run(appliance, notifier, stop_after_s: float, on_the_way=None) -> int:
    supervisor = Supervisor(appliance, None, NoSignals(), notifier, watchdog_s=0.05)
    if on_the_way:
        threading.Timer(stop_after_s / 2, on_the_way).start()
    threading.Timer(stop_after_s, supervisor.request_stop).start()
    return supervisor.run()


def test_pings_while_healthy_and_none_while_stalled():
    appliance, notifier = ScriptedAppliance(), RecordingNotifier()
    assert _run(appliance, notifier, 0.6) == 0
    assert notifier.sent[0] == "READY=1" and notifier.sent.count("WATCHDOG=1") >= 5
    assert notifier.sent[-1] == "STOPPING=1" and appliance.cancelled and appliance.stopped.is_set()

    appliance, notifier = ScriptedAppliance(), RecordingNotifier()
    appliance.stalled = True
    assert _run(appliance, notifier, 0.6) == 0
    assert "WATCHDOG=1" not in notifier.sent
    assert any(line.startswith("STATUS=STALLED (hung)") for line in notifier.sent)


def test_a_stalled_mqtt_link_stops_the_pings_and_shows_in_the_status_line():
    appliance, notifier = ScriptedAppliance(), RecordingNotifier()
    appliance.mqtt_stalled = True
    assert _run(appliance, notifier, 0.6) == 0
    assert "WATCHDOG=1" not in notifier.sent
    assert any(line.startswith("STATUS=MQTT STALLED (no MQTT traffic for 61 s); 12.5 fps") for line in notifier.sent)


def test_a_failed_start_exits_1_with_one_sentence(capsys):
    appliance, notifier = ScriptedAppliance(DetectorError("model m.onnx does not exist")), RecordingNotifier()
    assert Supervisor(appliance, None, NoSignals(), notifier, watchdog_s=0.05).run() == 1
    assert capsys.readouterr().err == "edge-app: model m.onnx does not exist\n"
    assert "READY=1" not in notifier.sent and appliance.stopped.is_set()


def test_a_stop_that_overruns_its_budget_ends_the_process_with_1():
    exits: List[int] = []
    signals = StopSignals(exit_process=exits.append)
    started_s = time.monotonic()
    signals.stopping(None, started_s + 0.3)
    deadline = time.monotonic() + 3
    while not exits and time.monotonic() < deadline:
        time.sleep(0.02)
    assert exits == [1] and time.monotonic() - started_s < 1.5


def test_status_line_names_fps_cameras_and_a_stall():
    cameras = [camera_report("a", "streaming"), camera_report("b", "reconnecting")]
    status = status_report(cameras, pipeline_report(24.51))
    assert status_line(status) == "24.5 fps; cameras: a streaming, b reconnecting"
    status = status_report(cameras, pipeline_report(24.51, True, "no batch completed for 21 s"))
    assert status_line(status).startswith("STALLED (no batch completed for 21 s); 24.5 fps")


def test_status_line_names_device_health_problems():
    from edge_app.health.report import Problem, not_sampled_yet

    health = dataclasses.replace(not_sampled_yet(0.0), problems=[
        Problem("hot", "board", "tj-therm at 99.4 °C (limit 85 °C)"), Problem("disk_full", ".", "disk of . 93.0 % full")])
    status = status_report([camera_report("a", "streaming")], pipeline_report(10.0), health=health)
    assert status_line(status) == ("PROBLEMS: tj-therm at 99.4 °C (limit 85 °C); disk of . 93.0 % full; "
                                   "10.0 fps; cameras: a streaming")
    assert status_line(status_report([camera_report("a", "streaming")], pipeline_report(10.0),
                                     health=not_sampled_yet(0.0))) == "10.0 fps; cameras: a streaming"


def test_status_line_says_when_publishing_is_behind():
    from edge_app.reporting.protocol import MqttReport

    behind = MqttReport(connected=True, published=42, queued=900, dropped=0, lag_ms=2400.0,
                        behind_reason="publishing is 2.4 s behind: ...")
    status = status_report([camera_report("a", "streaming")], pipeline_report(10.0), mqtt=behind)
    assert status_line(status) == "MQTT BEHIND (publishing is 2.4 s behind: ...); 10.0 fps; cameras: a streaming"


def test_status_line_says_when_recording_is_paused_and_why():
    from edge_app.reporting.protocol import RecordingReport

    why = "the disk has 3 MB free, below record.retain.reserve_mb (64 MB)"
    paused = RecordingReport(directory="recordings", paused=why, recording=[], bytes_written=1, packets_dropped=0)
    status = status_report([camera_report("a", "streaming")], pipeline_report(10.0), recording=paused)
    assert status_line(status) == f"RECORDING PAUSED ({why}); 10.0 fps; cameras: a streaming"
    writing = RecordingReport(directory="recordings", paused=None, recording=["a"], bytes_written=1, packets_dropped=0)
    assert status_line(status_report([camera_report("a", "streaming")], pipeline_report(10.0), recording=writing)) == (
        "10.0 fps; cameras: a streaming")
