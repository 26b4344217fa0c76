"""End to end: motion gating gives the same events for less work, and a static scene costs nothing.

One ``edge-app run`` with the real YOLOv8n reads three cameras from a real RTSP server:
``gated`` and ``ungated`` read the same shared mount of the walking clip, made with sensor noise
and a static lead longer than the keepalive (a person enters a scene that was static), one with
motion gating on and one with it off; ``static`` reads a noisy scene whose light is switched on
half way. The two walking cameras must give the same events (starting within 0.5 s of each other),
the same zone entries and the same line crossings, while the gated one holds back the frames of
the empty scene; the static camera gives no event and no lasting motion.

On a loaded machine the cameras are analysed more slowly than ``fps_limit``; each samples the
walk at its own instants, so their events can start up to one analysed frame apart, and a walk
is over only when its camera stayed quiet for a few of its frame intervals: both allowances grow
with the interval the detections show (never below their fixed values).
"""
import statistics
import time
from collections import Counter

import pytest

from testkit.waiting import wait_until
from tests.e2e.scene import event_histories, split_passes
from tests.support.media import make_static_clip, make_walking_clip

pytestmark = pytest.mark.slow

ROOT = "edge_app/e2e"
KEEPALIVE_S = 1.0
GAP_S = 2.5
QUIET_S = 3.5
START_TOLERANCE_S = 0.5
FPS_LIMIT = 5


@pytest.fixture(scope="module")
def noisy_walk(clips_dir, bus_jpg):
    # 5 s of a static, noisy scene (five keepalives), then the walk, then 4 s empty
    return make_walking_clip(bus_jpg, clips_dir / "walking-noisy.mp4", lead_s=5.0, tail_s=4.0, noise_sigma=3.0)


@pytest.fixture(scope="module")
def static_clip(clips_dir):
    return make_static_clip(clips_dir / "static-light.mp4", seconds=8.0, noise_sigma=4.0, light_step_at_s=4.0)


def _camera(camera_id, source, gated):
    # 5 frames/s analysed: both cameras and the model share the test machine's CPU with the rest of the suite
    return {"id": camera_id, "source": source, "motion": {"enabled": gated}, "fps_limit": FPS_LIMIT,
            "zones": [{"name": f"{camera_id}_right", "polygon": [[0.5, 0.0], [1.0, 0.0], [1.0, 1.0], [0.5, 1.0]]}],
            "lines": [{"name": f"{camera_id}_middle", "points": [[0.5, 0.0], [0.5, 1.0]]}]}


def _frame_interval_s(walk) -> float:
    """The camera's analysed frame interval during a walk (its frame rate limit while unknown)."""
    times = [frame["ts"] for frame in walk.frames]
    return statistics.median(b - a for a, b in zip(times, times[1:])) if len(times) > 1 else 1 / FPS_LIMIT


def _complete_walks(collector, camera_id, clip):
    passes = split_passes(collector.payloads(f"{ROOT}/cameras/{camera_id}/detections"), GAP_S)
    # Not the first pass a camera saw: the cameras connect one after the other, and a camera in its
    # first seconds (connecting, its first frames analysed late) may show a walk from its middle
    # that still starts left of the line.
    return [walk for index, walk in enumerate(passes)
            if index > 0
            and (index + 1 < len(passes) or time.time() - walk.end_ts > max(QUIET_S, 3 * _frame_interval_s(walk)))
            and walk.starts_left_of(0.46 * clip.width)]


def _same_walk_on_both(collector, clip):
    """The first walk both cameras saw from its start (a camera may join the shared stream a loop later)."""
    for gated in _complete_walks(collector, "gated", clip):
        for ungated in _complete_walks(collector, "ungated", clip):
            if abs(gated.start_ts - ungated.start_ts) <= clip.walk_s / 2:
                return gated, ungated
    return None


def _events_of(collector, camera_id, walk):
    histories = event_histories(collector.messages(f"{ROOT}/events"))
    return sorted((h for h in histories.values() if h.last["camera_id"] == camera_id
                   and walk.start_ts - 1.0 <= h.last["start_time"] <= walk.end_ts),
                  key=lambda h: (h.last["label"], h.last["start_time"]))


def _crossings_of(collector, camera_id, walk):
    crossings = [m.json() for m in collector.messages(f"{ROOT}/cameras/{camera_id}/lines/{camera_id}_middle/crossing")]
    return Counter((c["label"], c["direction"]) for c in crossings if walk.start_ts - 1.0 <= c["ts"] <= walk.end_ts + 1.0)


def test_gating_gives_the_same_events_for_less_work_and_a_static_scene_costs_nothing(
    rtsp_server_factory, noisy_walk, static_clip, mosquitto_broker, mqtt_collector, appliance_factory, model_path,
    tmp_path,
):
    rtsp = rtsp_server_factory({"walk": noisy_walk.path, "static": static_clip})
    collector = mqtt_collector(mosquitto_broker, f"{ROOT}/#")
    app = appliance_factory(
        [_camera("gated", rtsp.url("walk"), True), _camera("ungated", rtsp.url("walk"), False),
         {"id": "static", "source": rtsp.url("static")}],
        model_path, mosquitto_broker, model={"max_batch": 2},
        motion={"keepalive_s": KEEPALIVE_S}, tracking={"enabled": True},
        events={"enabled": True, "dir": str(tmp_path / "events")})

    gated_walk, ungated_walk = wait_until(lambda: _same_walk_on_both(collector, noisy_walk), 120,
                                          "one walk seen from its start by both cameras")
    # one shared stream: the same walk reaches both cameras at the same time, give or take a frame
    tolerance_s = max(START_TOLERANCE_S, 1.5 * max(_frame_interval_s(gated_walk), _frame_interval_s(ungated_walk)))
    assert abs(gated_walk.start_ts - ungated_walk.start_ts) <= tolerance_s, (
        f"first complete walk at {gated_walk.start_ts:.2f} gated, {ungated_walk.start_ts:.2f} ungated")

    def ended_events():
        found = _events_of(collector, "gated", gated_walk), _events_of(collector, "ungated", ungated_walk)
        return found if all(h and all(e.messages[-1]["type"] == "end" for e in h) for h in found) else None
    gated, ungated = wait_until(ended_events, 10, "the walk's events on both cameras, ended; all events: " + str(
        [(h.last["camera_id"], h.last["label"], h.last["start_time"]) for h in
         event_histories(collector.messages(f"{ROOT}/events")).values()]) + f" walk {gated_walk.start_ts}-{gated_walk.end_ts}")
    assert [h.last["label"] for h in gated] == [h.last["label"] for h in ungated] and gated, (
        f"events gated {[h.last['label'] for h in gated]}, ungated {[h.last['label'] for h in ungated]}")
    for g, u in zip(gated, ungated):
        assert abs(g.last["start_time"] - u.last["start_time"]) <= tolerance_s, (
            f"{g.last['label']} started at {g.last['start_time']:.2f} gated, {u.last['start_time']:.2f} ungated")
        assert [m["type"] for m in g.messages][-1] == "end", f"gated event {g.id} did not end"
        assert g.last["entered_zones"] == ["gated_right"] and u.last["entered_zones"] == ["ungated_right"]
    assert _crossings_of(collector, "gated", gated_walk) == _crossings_of(collector, "ungated", ungated_walk) != Counter()

    # the motion topic went ON for the walk and back OFF; the gated camera skipped the empty scene
    motion = [m.payload for m in collector.messages(f"{ROOT}/cameras/gated/motion")]
    assert motion[0] == b"OFF" and motion[1:3] == [b"ON", b"OFF"], motion  # the loop may have begun another walk
    assert not collector.messages(f"{ROOT}/cameras/ungated/motion")
    cameras = {c["id"]: c for c in app.get("/api/v1/cameras").json()}
    assert cameras["ungated"]["motion"] is None
    assert cameras["gated"]["motion"]["frames_skipped"] > 0, cameras["gated"]
    share = {cid: cameras[cid]["frames_analyzed"] / cameras[cid]["frames_captured"] for cid in ("gated", "ungated")}
    assert share["gated"] < share["ungated"], (share, cameras)
    # the empty scene is over a third of the loop: its frames are held back, or dropped before the gate
    gated_camera = cameras["gated"]
    offered = gated_camera["motion"]["frames_checked"] - gated_camera["motion"]["frames_skipped"]
    assert gated_camera["motion"]["frames_skipped"] > 0 and offered <= 0.85 * gated_camera["frames_captured"], gated_camera

    # the static scene: light switched on and off every loop, sensor noise, and nothing else
    static = cameras["static"]
    assert static["frames_captured"] > 0 and static["motion"]["motion"] is False, static
    assert static["motion"]["frames_skipped"] >= 0.7 * static["motion"]["frames_checked"], static
    assert [m.payload for m in collector.messages(f"{ROOT}/cameras/static/motion")] == [b"OFF"]
    assert not [h for h in event_histories(collector.messages(f"{ROOT}/events")).values()
                if h.last["camera_id"] == "static"]
    assert not collector.payloads(f"{ROOT}/cameras/static/detections")
    assert "motion gating on" in app.log_tail(200)
