"""AnalysisHub: per-camera analysis built from the configuration, and where its results go.

The publisher here records calls; every method it offers exists on MqttPublisher with the same
parameters (checked below), so the hub is tested against the real publisher's interface. The
real MQTT side is tested with a real broker in tests/mqtt and tests/e2e.
"""
from __future__ import annotations

import inspect
import os
import signal
import time

import pytest

from edge_app.appliance.analysis import AnalysisHub
from edge_app.config.file import parse_config
from edge_app.mqtt.publisher import MqttPublisher
from edge_app.reporting.protocol import AnalysedFrame, TrackerProcessesReport
from tests.events.scene import FPS, T0, Obj, detections_at, image, moving


class RecordingPublisher:
    def __init__(self):
        self.calls = []
        self.models = []  # (kind, model) of every count and crossing

    def _record(self, name, *args):
        self.calls.append((name, args))
        return True

    def publish_event(self, message):
        return self._record("event", message)

    def publish_snapshot(self, camera_id, label, jpeg):
        return self._record("snapshot", camera_id, label)

    def publish_object_count(self, camera_id, label, count, ts=None, model="default"):
        self.models.append(("objects", model))
        return self._record("objects", camera_id, label, count)

    def publish_zone_count(self, zone, label, count, ts=None, model="default"):
        self.models.append(("zone", model))
        return self._record("zone", zone, label, count)

    def publish_zone_stats(self, zone, stats, ts=None, model="default"):
        self.models.append(("zone_stats", model))
        return self._record("zone_stats", zone, stats)

    def publish_line_crossing(self, camera_id, line, event_id, track_id, label, direction, ts=None, model="default",
                              speed=None):
        self.models.append(("crossing", model))
        return self._record("crossing", camera_id, line, label, direction)

    def publish_line_count(self, camera_id, line, count_in, count_out, ts=None, model="default"):
        self.models.append(("line", model))
        return self._record("line", camera_id, line, count_in, count_out)

    def of(self, name):
        return [args for kind, args in self.calls if kind == name]


@pytest.mark.parametrize("name", [n for n in vars(RecordingPublisher) if n.startswith("publish_")])
def test_the_recording_publisher_keeps_to_the_real_one(name):
    real = [p.name for p in inspect.signature(getattr(MqttPublisher, name)).parameters.values()]
    fake = [p.name for p in inspect.signature(getattr(RecordingPublisher, name)).parameters.values()]
    assert fake == real


def _config(**camera):
    return parse_config({
        "cameras": [{"id": "cam", "source": "test://box", **camera}],
        "model": {"path": "m.onnx"},
        "events": {"min_frames": 3, "end_after_s": 1.0},
    })


def _frame(i, objects):
    return AnalysedFrame("cam", i, T0 + i / FPS, image(), detections_at(objects, i))


def _walk(hub, objects, frames):
    return [hub.analyse(_frame(i, objects)) for i in range(frames)]


def test_a_person_walking_across_makes_one_event_a_zone_entry_and_a_line_crossing():
    publisher = RecordingPublisher()
    hub = AnalysisHub(lambda: publisher, clock=lambda: T0 + 100.0)
    hub.configure(_config(zones=[{"name": "right", "polygon": [[0.5, 0], [1, 0], [1, 1], [0.5, 1]]}],
                          lines=[{"name": "middle", "points": [[0.5, 0], [0.5, 1]]}]))
    person = Obj(0, moving(20, 200, 20), first=0, last=25)
    frames = _walk(hub, [person], 40)

    tracked = [f.detections.track_id[0] for f in frames[2:26]]
    assert len(set(tracked)) == 1 and tracked[0] >= 0, "one stable track id while in view"
    kinds = [m.type for (m,) in publisher.of("event")]
    assert kinds[0] == "new" and kinds[-1] == "end" and kinds.count("new") == 1 and kinds.count("end") == 1
    assert publisher.of("crossing") == [("cam", "middle", "person", "out")]  # left to right is "out"
    assert publisher.of("line")[-1] == ("cam", "middle", 0, 1)
    assert ("right", "person", 1) in publisher.of("zone") and publisher.of("zone")[-1] == ("right", "person", 0)
    assert publisher.of("objects")[-1] == ("cam", "person", 0)
    counts = hub.counts()
    assert counts.cameras == {"cam": {"person": 0}} and counts.lines == {"middle": {"in": 0, "out": 1}}


@pytest.mark.parametrize("latency_s", [0.0, 1.5, 3.0])
def test_a_camera_analysed_late_keeps_its_tracks_through_the_stats_thread_ticks(latency_s):
    """A busy device analyses a frame seconds after capturing it, once a second; the stats thread
    ticks in between. Tracks are timed by capture: ticks aged by the clock ended them while the
    next frame showing their objects was still on its way (every frame a new id, a new event)."""
    clock = [T0]
    publisher = RecordingPublisher()
    hub = AnalysisHub(lambda: publisher, clock=lambda: clock[0])
    hub.configure(_config())
    person = Obj(0, moving(20, 200, 2))
    ids = []
    for i in range(0, 80, 10):  # one frame a second
        clock[0] = T0 + i / FPS + latency_s
        ids.append(hub.analyse(_frame(i, [person])).detections.track_id.tolist())
        clock[0] += 0.9  # the stats thread wakes before the next frame is analysed
        hub.tick()
    assert ids[0] == [-1] and all(i == ids[1] and i[0] >= 0 for i in ids[1:]), ids
    kinds = [m.type for (m,) in publisher.of("event")]
    assert kinds.count("new") == 1 and "end" not in kinds
    clock[0] += 2.5  # and once the camera has sent nothing for end_after_s, the event ends
    hub.tick()
    assert [m.type for (m,) in publisher.of("event")][-1] == "end"


def test_counts_and_crossings_carry_the_model_of_their_camera():
    publisher = RecordingPublisher()
    hub = AnalysisHub(lambda: publisher, clock=lambda: T0 + 100.0)
    hub.configure(parse_config({
        "cameras": [{"id": "cam", "source": "test://box", "model": "people",
                     "zones": [{"name": "right", "polygon": [[0.5, 0], [1, 0], [1, 1], [0.5, 1]]}],
                     "lines": [{"name": "middle", "points": [[0.5, 0], [0.5, 1]]}]}],
        "models": [{"name": "people", "path": "m.onnx"}],
        "events": {"min_frames": 3, "end_after_s": 1.0},
    }))
    _walk(hub, [Obj(0, moving(20, 200, 20), first=0, last=25)], 40)
    assert {kind for kind, _ in publisher.models} == {"objects", "zone", "zone_stats", "crossing", "line"}
    assert {model for _, model in publisher.models} == {"people"}


def test_switching_detection_off_ends_open_events_and_keeps_line_totals():
    publisher = RecordingPublisher()
    hub = AnalysisHub(lambda: publisher, clock=lambda: T0 + 100.0)
    hub.configure(_config(lines=[{"name": "middle", "points": [[0.5, 0], [0.5, 1]]}]))
    _walk(hub, [Obj(0, moving(20, 200, 20))], 25)
    assert [m.type for (m,) in publisher.of("event")] == ["new"] + [m.type for (m,) in publisher.of("event")][1:]

    hub.configure(_config(detect=False, lines=[{"name": "middle", "points": [[0.5, 0], [0.5, 1]]}]))
    assert publisher.of("event")[-1][0].type == "end"
    assert publisher.of("objects")[-1] == ("cam", "person", 0)
    untouched = _frame(30, [Obj(0, moving(20, 200, 20))])
    assert hub.analyse(untouched) is untouched, "no analysis while detection is off"
    assert hub.counts().lines == {"middle": {"in": 0, "out": 1}}

    hub.configure(_config(lines=[{"name": "middle", "points": [[0.5, 0], [0.5, 1]]}]))
    assert hub.counts().lines == {"middle": {"in": 0, "out": 1}}, "totals come back with the analysis"


def test_tracking_off_means_no_analysis():
    publisher = RecordingPublisher()
    hub = AnalysisHub(lambda: publisher)
    config = _config()
    hub.configure(config.model_copy(update={"tracking": config.tracking.model_copy(update={"enabled": False})}))
    frame = _frame(0, [Obj(0, moving(20, 200, 20))])
    assert hub.analyse(frame) is frame and publisher.calls == []


ZONES_A = [{"name": "right", "polygon": [[0.5, 0], [1, 0], [1, 1], [0.5, 1]]}]
ZONES_B = ZONES_A + [{"name": "left", "polygon": [[0, 0], [0.5, 0], [0.5, 1], [0, 1]]}]


@pytest.mark.parametrize("competitor", [
    # the API thread applying a zone change: ends the camera's analysis and builds a new one
    lambda hub: hub.configure(_config(zones=ZONES_B)),
    # the stats thread ageing the tracks of a camera that sent nothing for a while
    lambda hub: hub.tick(),
], ids=["configure", "tick"])
def test_a_frame_being_analysed_is_finished_before_anything_else_touches_its_analysis(monkeypatch, competitor):
    """A CameraAnalysis is fed from one thread at a time: configure() (API thread) and tick()
    (stats thread) used to end or age it while the publish thread was half way through a frame,
    which broke the frame's analysis and could fail the configuration change with a 500."""
    import threading

    from edge_app.events.camera_analysis import CameraAnalysis

    publisher = RecordingPublisher()
    hub = AnalysisHub(lambda: publisher, clock=lambda: T0 + 100.0)  # 100 s after the frames: tick() ages them
    hub.configure(_config(zones=ZONES_A))
    people = [Obj(0, moving(20 + 40 * k, 200, 20)) for k in range(3)]
    _walk(hub, people, 5)
    inside, release = threading.Event(), threading.Event()
    real_process = CameraAnalysis.process

    def held_process(self, *args, **kwargs):
        if threading.current_thread().name == "publish":
            inside.set()
            assert release.wait(5), "the test never let the frame finish"
        return real_process(self, *args, **kwargs)
    monkeypatch.setattr(CameraAnalysis, "process", held_process)

    analysed, failures = [], []
    publish = threading.Thread(target=lambda: analysed.append(hub.analyse(_frame(5, people))), name="publish")
    publish.start()
    assert inside.wait(5)

    def compete():
        try:
            competitor(hub)
        except Exception as err:  # noqa: BLE001 - reported by the assertion below
            failures.append(err)
    other = threading.Thread(target=compete, name="competitor")
    other.start()
    other.join(0.5)
    blocked = other.is_alive()
    release.set()
    publish.join(5)
    other.join(5)
    assert blocked, "the analysis was changed while a frame of it was being processed"
    assert not failures, failures
    assert analysed and all(int(t) >= 0 for t in analysed[0].detections.track_id), "the held frame lost its tracks"


def test_an_ended_event_is_stored_with_its_track(tmp_path):
    from edge_app.events.store import EventStore
    from tests.events.scene import WIDTH

    store = EventStore(tmp_path / "events")
    try:
        publisher = RecordingPublisher()
        hub = AnalysisHub(lambda: publisher, store=store, clock=lambda: T0 + 100.0)
        hub.configure(_config())
        _walk(hub, [Obj(0, moving(20, 200, 20), first=0, last=25)], 40)
        (ended,) = [m.after for (m,) in publisher.of("event") if m.type == "end"]
        assert store.flush()
        track = store.track(ended.id)
        assert track is not None and track.start_time == ended.start_time
        assert len(track.points) >= 10 and all(0 <= v <= 1 for p in track.points for v in p.box)
        # it walked right: each kept box is further right than the one before
        lefts = [p.box[0] for p in track.points]
        assert lefts == sorted(lefts) and lefts[-1] - lefts[0] > 200 / WIDTH
    finally:
        store.close()


def _processes_config(processes, **camera):
    config = _config(**camera)
    return config.model_copy(update={"tracking": config.tracking.model_copy(update={"processes": processes})})


@pytest.mark.parametrize("speed", [False, True], ids=["", "a speed zone"])
@pytest.mark.parametrize("frames", [45, 30], ids=["walked out", "still inside, aged by ticks"])
def test_trackers_in_a_child_process_give_the_same_messages_and_stop_with_the_hub(frames, speed):
    """tracking.processes: the same walk gives the same events, counts and crossings as trackers
    here (the zones and lines placed in the child, a speed zone measured here from the child's
    zone exits), when the camera then goes quiet and its tracks end by the stats thread's ticks
    too, and end_all stops the children."""
    zone = {"name": "right", "polygon": [[0.5, 0], [1, 0], [1, 1], [0.5, 1]]}
    # a band both people walk through, in and out, for the speed
    band = {"name": "band", "polygon": [[0.3, 0], [0.6, 0], [0.6, 1], [0.3, 1]], "speed": {"distance_m": 12.0}}
    areas = {"zones": [zone, band] if speed else [zone],
             "lines": [{"name": "middle", "points": [[0.5, 0], [0.5, 1]]}]}
    people = [Obj(0, moving(20, 200, 20), first=0, last=25), Obj(0, moving(600, 300, -15), first=5, last=35)]
    runs = {}
    for processes in (0, 1):
        publisher = RecordingPublisher()
        now_s = [T0 + 100.0]
        hub = AnalysisHub(lambda: publisher, clock=lambda: now_s[0])
        hub.configure(_processes_config(processes, **areas))
        tracked = [f.detections.track_id.tolist() for f in _walk(hub, people, frames)]
        inside = [z for z in publisher.of("zone") if z[0] == "right"][-1]
        for _ in range(3):
            now_s[0] += 1.0
            hub.tick()
        assert [z for z in publisher.of("zone") if z[0] == "right"][-1] == ("right", "person", 0)
        assert (inside[2] > 0) == (frames == 30), inside  # the quiet camera's ticks emptied the zone
        pids = hub.tracker_process_ids()
        hub.end_all()
        runs[processes] = (tracked, [(kind, args if kind != "event" else args[0].to_dict())
                                     for kind, args in publisher.calls])
        if processes:
            assert len(pids) == 1 and pids[0] is not None
            assert hub.tracker_process_ids() == []
            with pytest.raises(ProcessLookupError):
                os.kill(pids[0], 0)
    assert runs[1] == runs[0]
    speeds = [args["after"]["speed_kmh"] for kind, args in runs[0][1] if kind == "event"]
    assert any(s is not None for s in speeds) == speed, speeds


def test_a_tracker_child_that_dies_costs_one_frame_its_ids_and_its_events_still_end():
    publisher = RecordingPublisher()
    hub = AnalysisHub(lambda: publisher, clock=lambda: T0 + 100.0)
    hub.configure(_processes_config(1))
    person = Obj(0, moving(20, 200, 10))
    _walk(hub, [person], 10)
    first = publisher.of("event")[0][0].after
    assert hub.tracker_processes_report() == TrackerProcessesReport(processes=1, restarts=0)
    os.kill(hub.tracker_process_ids()[0], signal.SIGKILL)
    time.sleep(0.2)
    lost = hub.analyse(_frame(10, [person]))
    assert lost.detections.track_id is None  # published as detections, without tracks
    assert hub.tracker_processes_report() == TrackerProcessesReport(processes=1, restarts=1)
    later = [hub.analyse(_frame(i, [person])) for i in range(11, 20)]
    assert later[-1].detections.track_id[0] > first.track_id  # a new track, never the old id again
    events = [(m.type, m.after.id) for (m,) in publisher.of("event")]
    assert ("end", first.id) in events  # the lost track's event ended with its child
    hub.end_all()
    assert [m.type for (m,) in publisher.of("event")][-1] == "end"
    assert hub.tracker_processes_report() == TrackerProcessesReport(processes=0, restarts=1)  # kept across stops


def test_a_tracker_child_that_dies_with_a_person_in_a_zone_closes_the_visit_and_empties_the_zone():
    """The zones and lines travel with the tracker into its child: when that child dies, the
    zones it held go too, and the person inside leaves the zone here as a track that ends does:
    the zone count falls to 0, the visit is counted, the event ends outside the zone."""
    publisher = RecordingPublisher()
    hub = AnalysisHub(lambda: publisher, clock=lambda: T0 + 100.0)
    hub.configure(_processes_config(1, zones=[{"name": "all", "polygon": [[0, 0], [1, 0], [1, 1], [0, 1]]}]))
    person = Obj(0, moving(20, 200, 10))
    _walk(hub, [person], 10)
    first = publisher.of("event")[0][0].after
    assert publisher.of("zone")[-1] == ("all", "person", 1)
    os.kill(hub.tracker_process_ids()[0], signal.SIGKILL)
    time.sleep(0.2)
    hub.analyse(_frame(10, [person]))  # tracking fails: this frame goes out without track ids
    hub.analyse(_frame(11, [person]))  # a new child: the lost track has ended
    ended = [m.after for (m,) in publisher.of("event") if m.type == "end" and m.after.id == first.id]
    assert ended and ended[0].current_zones == () and ended[0].entered_zones == ("all",)
    assert publisher.of("zone")[-1] == ("all", "person", 0)
    stats = [s for zone, s in publisher.of("zone_stats") if zone == "all"][-1]
    assert stats.occupancy == 0 and stats.visits_last_hour == 1
    later = [hub.analyse(_frame(i, [person])) for i in range(12, 20)]
    assert later[-1].detections.track_id[0] > first.track_id
    assert publisher.of("zone")[-1] == ("all", "person", 1)  # the new track entered, in the new child
    hub.end_all()
    assert publisher.of("zone")[-1] == ("all", "person", 0)
