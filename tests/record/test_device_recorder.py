"""The device's recorder as the appliance drives it: the folder reconciled at start, a camera
recorder per recorded camera as the configuration says, events routed to the camera that writes
their clip, retention, and what the event messages and the status say.

Everything is real: the recorders, their files (checked with ffprobe), the event store.
"""
from __future__ import annotations

from dataclasses import replace

import pytest

from edge_app.config.file import parse_config
from edge_app.events.model import END, NEW, Event, EventMessage
from edge_app.events.store import EventStore
from edge_app.record.device_recorder import DeviceRecorder
from edge_app.record.event_cameras import MAX_EVENTS_KNOWN
from edge_app.record.recorder import CameraRecorder
from edge_app.record.store import RecordingStore
from tests.record.media import BASE_WALL, ffprobe
from testkit.waiting import wait_for

CAMERAS = [{"id": "cam1", "source": "test://box?fps=10&width=64&height=48"},
           {"id": "cam2", "source": "test://box?fps=10&width=64&height=48"}]


def config(folder, events: bool = True, events_days: float = 3650, reserve_mb: int = 0, cam2_events=None):
    cameras = [CAMERAS[0], {**CAMERAS[1], "record": {"enabled": cam2_events}}]
    return parse_config({"device_id": "dev", "model": {"path": "m.onnx"}, "mqtt": {"enabled": False},
                         "api": {"enabled": False}, "cameras": cameras,
                         "record": {"dir": str(folder), "events": {"enabled": events, "pre_s": 1.0, "post_s": 0.5},
                                    "retain": {"events_days": events_days, "reserve_mb": reserve_mb}}})


def event(event_id: str, camera_id: str = "cam1", start: float = BASE_WALL + 4.0) -> Event:
    return Event(id=event_id, camera_id=camera_id, label="person", track_id=1, score=0.7, top_score=0.8,
                 box=(1.0, 2.0, 3.0, 4.0), frame_time=start, start_time=start)


def ended(ev: Event, end: float) -> EventMessage:
    return EventMessage(END, replace(ev, end_time=end, frame_time=end), ev)


def record_one_event(recorder: DeviceRecorder, stream, ev: Event) -> None:
    """Feed the camera's sink the stream, the event starting at its start and ending a second later."""
    info, packets = stream
    sink = recorder.sink(ev.camera_id)
    sink.stream_opened(info)
    for packet in packets:
        if abs(packet.wall_ts - ev.start_time) < 1e-6:
            assert recorder.on_event(EventMessage(NEW, ev)).after.has_clip
            recorder.on_event(ended(ev, ev.start_time + 1.0))
        sink.packet(packet)
    sink.stream_closed("end of file")


@pytest.fixture
def event_store(tmp_path):
    store = EventStore(tmp_path / "events")
    yield store
    store.close()


def test_a_camera_is_recorded_and_retention_tells_the_event_record_its_clip_is_gone(tmp_path, stream, event_store):
    folder, published = tmp_path / "rec", []
    recorder = DeviceRecorder(published.append, event_store)
    recorder.start(config(folder))
    ev = event("ev1")
    event_store.save_event(ev)
    record_one_event(recorder, stream, ev)
    recorder.close()  # every file finished: the clip is complete, and its final update went out
    assert [m.after.id for m in published] == ["ev1"] and published[0].after.has_clip
    peek = RecordingStore(folder)
    clip = peek.clip("ev1")
    assert clip is not None and clip.complete and ffprobe(peek.resolve(clip.path)).errors == ""
    peek.close()
    assert event_store.flush() and event_store.clip("ev1").path == clip.path

    # Recording switched off, the recordings of 2023 past events_days: retention at start takes them.
    again = DeviceRecorder(published.append, event_store, retention_interval_s=3600)
    again.start(config(folder, events=False, events_days=30))
    try:
        wait_for(lambda: event_store.flush() and event_store.clip("ev1") is None, 30,
                 "retention at start to delete the clip from 2023")
        assert again.reader().clip("ev1") is None and not (folder / clip.path).exists()
        assert again.camera_status("cam1") is None and again.report().recording == []
    finally:
        again.close()


def test_deleting_an_event_deletes_its_clip(tmp_path, stream, event_store):
    recorder = DeviceRecorder(lambda message: None, event_store)
    recorder.start(config(tmp_path / "rec"))
    try:
        ev = event("ev1")
        record_one_event(recorder, stream, ev)
        assert recorder.sink("cam1").wait_idle(30)
        path = recorder.reader().clip("ev1").path
        assert (tmp_path / "rec" / path).exists()
        event_store.save_event(ev)
        assert event_store.flush() and event_store.delete("ev1")
        # the file and its row go one after the other, on the recorder's thread: wait for both
        wait_for(lambda: not (tmp_path / "rec" / path).exists() and recorder.reader().clip("ev1") is None, 30,
                 "the clip and its index row to go with its event")
    finally:
        recorder.close()


def test_the_recorder_follows_the_configuration(tmp_path):
    folder = tmp_path / "rec"
    recorder = DeviceRecorder(lambda message: None)
    cameras = ["cam1", "cam2"]
    try:
        recorder.start(config(folder, events=False))  # nothing recorded and no folder: nothing opened
        assert recorder.reader() is None and recorder.report() is None and not folder.exists()
        assert recorder.configure(config(folder), cameras) == cameras  # record.events is the device's default
        assert isinstance(recorder.sink("cam1"), CameraRecorder) and recorder.records("cam2")
        assert recorder.camera_status("cam1").events_enabled and recorder.report().directory == str(folder)
        assert recorder.configure(config(folder, cam2_events=False), cameras) == ["cam2"]  # its own choice
        assert recorder.sink("cam2") is None and recorder.camera_status("cam2") is None
        assert recorder.configure(config(folder, events=False, events_days=7), cameras) == ["cam1"]
        assert recorder.report().recording == [] and recorder.reader() is not None  # the folder stays open
        assert recorder.configure(config(folder), cameras) == cameras
    finally:
        recorder.close()
    earlier = DeviceRecorder(lambda message: None)
    earlier.start(config(folder, events=False))  # earlier recordings: kept, read and retained
    assert earlier.reader() is not None and earlier.camera_status("cam1") is None
    earlier.close()


def test_a_disabled_recorder_opens_no_folder(tmp_path):
    recorder = DeviceRecorder(lambda message: None, enabled=False)
    recorder.start(config(tmp_path / "rec"))
    assert recorder.configure(config(tmp_path / "rec"), ["cam1"]) == []
    assert recorder.sink("cam1") is None and recorder.report() is None and not (tmp_path / "rec").exists()
    recorder.close()


def test_a_camera_that_cannot_record_gives_events_without_clips(tmp_path):
    recorder = DeviceRecorder(lambda message: None)
    recorder.start(config(tmp_path / "rec", cam2_events=False))
    try:
        recorder.sink("cam1").unavailable("test:// has no compressed stream")
        ev = event("ev1")
        assert recorder.on_event(EventMessage(NEW, ev)).after.has_clip is False
        assert recorder.on_event(ended(ev, ev.start_time + 2)).after.has_clip is False
        assert recorder.on_event(EventMessage(NEW, event("ev2", "cam2"))).after.has_clip is False  # not recorded
        assert recorder.camera_status("cam1").unavailable == "recording unavailable: test:// has no compressed stream"
        assert recorder.camera_status("cam2") is None
    finally:
        recorder.close()


def test_a_disk_below_the_reserve_pauses_recording_and_starts_no_clip(tmp_path, stream):
    info, packets = stream
    recorder = DeviceRecorder(lambda message: None)
    recorder.start(config(tmp_path / "rec", reserve_mb=1_048_576))  # a TiB kept free: more than this disk has
    try:
        sink = recorder.sink("cam1")
        sink.stream_opened(info)
        for packet in packets[:40]:
            sink.packet(packet)
        wait_for(lambda: recorder.camera_status("cam1").paused, 30, "the recorder to pause at a keyframe")
        assert recorder.on_event(EventMessage(NEW, event("ev1"))).after.has_clip is False
        report = recorder.report()
        assert report.paused.startswith("disk below reserve: ") and report.recording == []
    finally:
        recorder.close()


def test_an_open_event_is_routed_to_its_recorder_after_any_number_of_newer_events(tmp_path, monkeypatch):
    """The map of events to cameras forgot the oldest entries whether or not their events were
    still open: a long event's end then never reached its recorder (the clip went on in max_s
    parts for ever) and its deletion unlinked a file the recorder still wrote."""
    ended_ids, deleted = [], []
    monkeypatch.setattr(CameraRecorder, "event_ended", lambda self, event_id, end_ts: ended_ids.append(event_id))
    monkeypatch.setattr(CameraRecorder, "event_deleted", lambda self, event_id: deleted.append(event_id))
    recorder = DeviceRecorder(lambda message: None)
    recorder.start(config(tmp_path / "rec"))
    try:
        long, long_deleted = event("long"), event("long-deleted", "cam2")
        recorder.on_event(EventMessage(NEW, long))
        recorder.on_event(EventMessage(NEW, long_deleted))
        for index in range(MAX_EVENTS_KNOWN + 10):
            short = event(f"short-{index}", start=BASE_WALL + index)
            recorder.on_event(EventMessage(NEW, short))
            recorder.on_event(ended(short, BASE_WALL + index + 1))
        recorder.on_event(ended(long, BASE_WALL + 2000))
        recorder.events_deleted(["long-deleted"])
        assert ended_ids[-1] == "long" and deleted == ["long-deleted"]
    finally:
        recorder.close()
