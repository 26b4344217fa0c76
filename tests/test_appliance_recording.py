"""Recording wired into the appliance: sinks per camera, events linked to their clips, status.

The recorder here is a stand-in that records what the appliance tells it (the real one, with
real files and ffprobe, is exercised end to end in tests/e2e/test_recording.py); the event
store, the camera workers (test:// sources, whose packet tee says "unavailable") and the
reports are the real ones.
"""
from __future__ import annotations

import time
from dataclasses import replace
from typing import Dict, List, Optional

from edge_app.api.metrics import ApplianceCollector
from edge_app.appliance.appliance import Appliance
from edge_app.appliance.recording import RecordingHub
from edge_app.appliance.supervise import status_line
from edge_app.capture.packets import EncodedPacket, StreamInfo
from edge_app.config.file import parse_config
from edge_app.events.model import END, NEW, UPDATE, Event, EventMessage
from edge_app.events.store import EventStore
from edge_app.record.types import CameraRecordingStatus, ClipInfo

NOW = 1_800_000_000.0
CONFIG = {"device_id": "dev", "model": {"path": "m.onnx"}, "mqtt": {"enabled": False}, "api": {"enabled": False},
          "cameras": [{"id": "cam1", "source": "test://box?fps=10&width=64&height=48"},
                      {"id": "cam2", "source": "test://box?fps=10&width=64&height=48"}]}


class RecorderStandIn:
    """Keeps what it is told; ``recorded`` names the cameras whose packets it wants."""

    def __init__(self, on_clip, recorded=("cam1",)):
        self.on_clip = on_clip
        self.recorded = set(recorded)
        self.calls: List[tuple] = []
        self.unavailable: Dict[str, str] = {}
        self.paused: Optional[str] = None
        self.closed = False
        self.configured = 0
        self.recorded_next = None  # what configure() switches to

    def records(self, camera_id):
        return camera_id in self.recorded

    def sink(self, camera_id):
        recorder = self

        class Sink:
            def stream_opened(self, info: StreamInfo) -> None:
                recorder.calls.append(("opened", camera_id))

            def packet(self, packet: EncodedPacket) -> None:
                pass

            def stream_closed(self, reason: str) -> None:
                recorder.calls.append(("closed", camera_id))

            def unavailable(self, reason: str) -> None:
                recorder.unavailable[camera_id] = reason

        return Sink()

    def event_started(self, event_id, camera_id, start_ts):
        self.calls.append(("started", event_id, camera_id, start_ts))

    def event_ended(self, event_id, end_ts):
        self.calls.append(("ended", event_id, end_ts))

    def event_deleted(self, event_id):
        self.calls.append(("deleted", event_id))

    def statuses(self):
        return [CameraRecordingStatus(cid, events_enabled=True, continuous_enabled=False,
                                      recording=self.paused is None and cid not in self.unavailable,
                                      unavailable=self.unavailable.get(cid), paused=self.paused,
                                      bytes_written=1000, packets_dropped=2, clips_preroll_short=1)
                for cid in sorted(self.recorded)]

    def reader(self):
        return "reader"

    def configure(self, config):
        self.configured += 1
        self.recorded = set(self.recorded_next or self.recorded)

    def close(self):
        self.closed = True


def event(n: int = 1, camera: str = "cam1", **changes) -> Event:
    base = Event(id=f"{NOW:.3f}-{camera}-{n}", camera_id=camera, label="person", track_id=n, score=0.7,
                 top_score=0.8, box=(1.0, 2.0, 3.0, 4.0), frame_time=NOW + 1, start_time=NOW)
    return replace(base, **changes)


def clip(ev: Event, duration_s: float, complete: bool) -> ClipInfo:
    return ClipInfo(ev.id, ev.camera_id, NOW - 5, NOW - 5 + duration_s, 4096, f"events/{ev.camera_id}/a.mp4", complete)


def hub_with(tmp_path, **recorder_kwargs):
    made, published = [], []
    store = EventStore(tmp_path / "events", clock=lambda: NOW)

    def factory(config, on_clip, on_clips_removed):
        made.append(RecorderStandIn(on_clip, **recorder_kwargs))
        return made[-1]

    hub = RecordingHub(factory, published.append, store=store)
    hub.start(parse_config(CONFIG))
    return hub, made[0], published, store


def test_an_event_tells_the_recorder_and_its_payloads_carry_the_clip(tmp_path):
    hub, recorder, published, store = hub_with(tmp_path)
    try:
        ev = event()
        new = hub.on_event(EventMessage(NEW, ev))
        assert recorder.calls == [("started", ev.id, "cam1", NOW)]
        assert new.after.has_clip is True and new.after.clip_duration_s == 0.0
        recorder.on_clip(clip(ev, 7.5, complete=False))
        update = hub.on_event(EventMessage(UPDATE, replace(ev, score=0.9), ev))
        assert update.after.has_clip and update.after.clip_duration_s == 7.5 and update.before.clip_duration_s == 7.5
        ended = replace(ev, end_time=NOW + 3)
        end = hub.on_event(EventMessage(END, ended, ev))
        assert recorder.calls[-1] == ("ended", ev.id, NOW + 3)
        assert end.after.has_clip and end.after.clip_duration_s == 7.5
        assert published == []  # the end itself goes out through the analysis, not here
        recorder.on_clip(clip(ev, 13.0, complete=True))
        assert len(published) == 1
        final = published[0]
        assert final.type == UPDATE and final.before == end.after
        assert final.after == replace(end.after, clip_duration_s=13.0)
        assert store.flush()
        assert store.get(ev.id) == replace(ended, has_clip=True, clip_duration_s=13.0)
        assert store.clip(ev.id).path == "events/cam1/a.mp4" and store.clip(ev.id).size_bytes == 4096
        assert (store.clip(ev.id).start_time, store.clip(ev.id).end_time) == (NOW - 5, NOW + 8)
    finally:
        store.close()


def test_a_camera_that_cannot_record_gives_events_without_clips(tmp_path):
    hub, recorder, published, store = hub_with(tmp_path, recorded=("cam1",))
    try:
        recorder.unavailable["cam1"] = "recording unavailable: test:// has no compressed stream"
        ev = event()
        assert hub.on_event(EventMessage(NEW, ev)).after.has_clip is False
        assert hub.on_event(EventMessage(END, replace(ev, end_time=NOW + 2), ev)).after.has_clip is False
        assert recorder.calls == []
        other = event(2, camera="cam2")  # not recorded at all
        assert hub.on_event(EventMessage(NEW, other)).after.has_clip is False
        assert hub.camera_status("cam1").unavailable.startswith("recording unavailable: ")
        assert hub.camera_status("cam2") is None
    finally:
        store.close()


def test_a_paused_store_starts_no_clip_and_is_reported(tmp_path):
    hub, recorder, published, store = hub_with(tmp_path)
    try:
        recorder.paused = "disk below its reserve: 3.1 % free of /rec (reserve 5 %)"
        assert hub.on_event(EventMessage(NEW, event())).after.has_clip is False
        report = hub.report()
        assert report.paused == recorder.paused and report.recording == [] and report.bytes_written == 1000
    finally:
        store.close()


def test_deleting_an_event_deletes_its_clip(tmp_path):
    hub, recorder, published, store = hub_with(tmp_path)
    try:
        ev = event(end_time=NOW + 2)
        store.save_event(ev)
        store.save_clip(ev.id, "events/cam1/a.mp4", 10, 1.0)
        assert store.flush()
        assert store.delete(ev.id)
        assert ("deleted", ev.id) in recorder.calls
    finally:
        store.close()


def test_the_appliance_gives_recorded_cameras_a_sink_and_shows_their_recording(tmp_path, model_path):
    made: List[RecorderStandIn] = []
    workers = {}

    def factory(config, on_clip, on_clips_removed):
        made.append(RecorderStandIn(on_clip, recorded=("cam1",)))
        return made[-1]

    def camera_factory(cam, capture, **kwargs):
        from edge_app.capture.camera import CameraWorker

        workers.setdefault(cam.id, []).append("packet_sink" in kwargs)
        return CameraWorker(cam, capture, **kwargs)

    # The real model; detection is off, so only capture and recording run.
    config = {**CONFIG, "model": {"path": str(model_path)}, "api": {"enabled": False, "allow_unsafe_sources": True},
              "cameras": [{**c, "detect": False} for c in CONFIG["cameras"]]}
    appliance = Appliance(parse_config(config), recorder_factory=factory, camera_factory=camera_factory)
    appliance.start()
    try:
        assert workers == {"cam1": [True], "cam2": [False]}
        recorder = made[0]
        deadline = time.monotonic() + 20
        while "cam1" not in recorder.unavailable and time.monotonic() < deadline:
            time.sleep(0.05)
        cams = {c.id: c for c in appliance.reads.status().cameras}
        assert cams["cam1"].recording.unavailable.startswith("recording unavailable"), cams["cam1"].recording
        assert cams["cam2"].recording is None
        assert appliance.reads.status().recording.bytes_written == 1000
        assert appliance.reads.status().recording.clips_preroll_short == 1
        assert appliance.reads.recordings() == "reader"

        recorder.paused = "disk below its reserve"
        status = appliance.reads.status()
        assert status_line(status).startswith("RECORDING PAUSED (disk below its reserve); ")
        samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
                   for m in ApplianceCollector(appliance.reads).collect() for s in m.samples}
        assert samples[("edge_app_recording_paused", ())] == 1.0
        assert samples[("edge_app_camera_recording_bytes_written_total", (("camera", "cam1"),))] == 1000.0
        assert samples[("edge_app_recording_clips_preroll_short_total", ())] == 1.0
        assert samples[("edge_app_camera_recording_clips_preroll_short_total", (("camera", "cam1"),))] == 1.0

        # Recording switched on for cam2 by a configuration change: it restarts with a sink.
        recorder.recorded_next = {"cam1", "cam2"}
        appliance.changes.write(lambda running: config)  # the one change path
        assert recorder.configured == 1 and workers["cam2"] == [False, True] and workers["cam1"] == [True]
    finally:
        appliance.stop()
    assert made[0].closed



def as_part(clip: ClipInfo, part: int) -> ClipInfo:
    """``clip`` as part ``part`` of its event's clip (the recorder's ClipInfo.part)."""
    return replace(clip, part=part)


def test_a_clip_longer_than_max_s_counts_as_one_clip_of_its_parts(tmp_path):
    hub, recorder, published, store = hub_with(tmp_path)
    try:
        ev = event()
        hub.on_event(EventMessage(NEW, ev))
        recorder.on_clip(ClipInfo(ev.id, "cam1", NOW - 5, NOW + 295, 1000, "cam1/events/a.mp4", True))
        second = ClipInfo(ev.id, "cam1", NOW + 295, NOW + 300, 100, "cam1/events/a__p1.mp4", False)
        recorder.on_clip(as_part(second, 1))
        assert published == []  # the event is still open: its clip goes on
        end = hub.on_event(EventMessage(END, replace(ev, end_time=NOW + 298), ev))
        assert end.after.clip_duration_s == 305.0
        recorder.on_clip(as_part(replace(second, end=NOW + 303, bytes=150, complete=True), 1))
        assert [m.after.clip_duration_s for m in published] == [308.0]
        assert store.flush()
        record = store.clip(ev.id)
        assert (record.path, record.size_bytes, record.start_time, record.end_time) == (
            "cam1/events/a.mp4", 1150, NOW - 5, NOW + 303)
    finally:
        store.close()


def test_the_recording_service_follows_the_configuration(tmp_path):
    """The real record layer: a camera recorded, then not, then again; events go to its recorder."""
    from edge_app.appliance.recording_service import RecordingService, recording_service
    from edge_app.record.recorder import CameraRecorder

    folder = tmp_path / "rec"

    def config(cam1_events: bool, events_days: float = 30):
        return parse_config({**CONFIG, "record": {"dir": str(folder), "events": {"enabled": cam1_events},
                                                  "retain": {"events_days": events_days}}})

    clips, lost = [], []
    assert recording_service(config(False), clips.append, lost.extend) is None  # nothing recorded, no folder
    service = recording_service(config(True), clips.append, lost.extend)
    assert isinstance(service, RecordingService)
    try:
        assert service.records("cam1") and service.records("cam2")  # record.events is the device's default
        assert isinstance(service.sink("cam1"), CameraRecorder)
        assert [s.camera_id for s in service.statuses()] == ["cam1", "cam2"]
        service.event_started("ev-1", "cam1", NOW)
        service.event_ended("ev-1", NOW + 1)
        service.event_deleted("ev-1")
        service.event_deleted("never-recorded")  # an older event: straight from the folder, no error
        service.configure(config(False, events_days=7))
        assert not service.records("cam1") and service.statuses() == []
        service.configure(config(True))
        assert service.records("cam1")
        assert service.reader().clip("ev-1") is None
    finally:
        service.close()
    earlier = recording_service(config(False), clips.append, lost.extend)  # earlier recordings: kept, retained
    assert earlier is not None and earlier.statuses() == []
    earlier.close()


def test_an_open_event_is_routed_to_its_recorder_after_any_number_of_newer_events(tmp_path, monkeypatch):
    """The map of events to cameras forgot the oldest entries whether or not their events were
    still open: a long event's end then never reached its recorder (the clip went on in max_s
    parts for ever) and its deletion unlinked a file the recorder still wrote."""
    from edge_app.appliance.recording_service import MAX_EVENTS_KNOWN, recording_service
    from edge_app.record.recorder import CameraRecorder

    ended, deleted = [], []
    monkeypatch.setattr(CameraRecorder, "event_ended", lambda self, event_id, end_ts: ended.append(event_id))
    monkeypatch.setattr(CameraRecorder, "event_deleted", lambda self, event_id: deleted.append(event_id))
    config = parse_config({**CONFIG, "record": {"dir": str(tmp_path / "rec"), "events": {"enabled": True}}})
    service = recording_service(config, lambda clip: None, lambda ids: None)
    try:
        service.event_started("long", "cam1", NOW)
        service.event_started("long-deleted", "cam2", NOW)
        for index in range(MAX_EVENTS_KNOWN + 10):
            service.event_started(f"short-{index}", "cam1", NOW + index)
            service.event_ended(f"short-{index}", NOW + index + 1)
        service.event_ended("long", NOW + 2000)
        service.event_deleted("long-deleted")
        assert ended[-1] == "long" and deleted == ["long-deleted"]
    finally:
        service.close()
