"""End to end: event clips and continuous recording of a real ``edge-app run``.

A real RTSP server (gst-rtsp-server) loops the walking clip (people of bus.jpg crossing a grey
canvas) in H.264 or H.265, the real YOLOv8n finds them, events go to a real Mosquitto, and the
recorder writes what the camera's demuxer handed out, by stream copy. Every file is checked with
ffprobe and decoded with ffmpeg; the event record's clip (path, size, first and last frame) is
read from the event database the appliance wrote.
"""
from __future__ import annotations

import json
import random
import signal
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Dict, List, Optional

import pytest

from testkit.waiting import wait_until
from tests.e2e.scene import event_histories
from tests.events.disks import fill, tiny_filesystem
from tests.support.media import require_tool

pytestmark = pytest.mark.slow

ROOT = "edge_app/e2e"
CAM = "cam1"
PRE_S, POST_S = 3.0, 2.0
GOP_S = 0.5  # the walking clip has a keyframe every half second
FRAME_S = 0.1  # at 10 frames/s


def sections(tmp_path: Path, **record) -> dict:
    events = record.pop("events", {})
    return {"tracking": {"enabled": True},
            "events": {"enabled": True, "dir": str(tmp_path / "events")},
            "record": {"dir": str(tmp_path / "recordings"),
                       "events": {"enabled": True, "pre_s": PRE_S, "post_s": POST_S, **events}, **record}}


def ffprobe_json(path: Path, *args: str) -> dict:
    done = subprocess.run([require_tool("ffprobe"), "-v", "error", "-of", "json", *args, str(path)],
                          capture_output=True, text=True)
    assert done.returncode == 0 and not done.stderr.strip(), f"ffprobe cannot read {path}: {done.stderr}"
    return json.loads(done.stdout)


def video_pts_s(path: Path) -> List[float]:
    """Presentation times (s) of the video packets, in file order."""
    packets = ffprobe_json(path, "-select_streams", "v:0", "-show_entries", "packet=pts_time", "-show_packets")["packets"]
    return [float(p["pts_time"]) for p in packets if p.get("pts_time") not in (None, "N/A")]


def decode_errors(path: Path) -> str:
    """What the decoder complains about while decoding every frame of the file, and packets that
    gave no frame (empty: every packet decoded). ffprobe decodes; ``ffmpeg -f null`` would also
    complain about its own output timing across a clip's gap, which is no fault of the file."""
    done = subprocess.run([require_tool("ffprobe"), "-v", "error", "-count_frames", "-count_packets",
                           "-select_streams", "v:0", "-show_entries", "stream=nb_read_frames,nb_read_packets",
                           "-of", "json", str(path)], capture_output=True, text=True)
    if done.returncode != 0 or done.stderr.strip():
        return f"exit {done.returncode}: {done.stderr.strip()}"
    counts = json.loads(done.stdout)["streams"][0]
    frames, packets = int(counts["nb_read_frames"]), int(counts["nb_read_packets"])
    return "" if frames == packets and frames > 0 else f"{frames} frames decoded of {packets} packets"


def clip_row(events_dir: Path, event_id: str) -> Optional[dict]:
    conn = sqlite3.connect(f"file:{events_dir / 'events.db'}?mode=ro", uri=True)
    try:
        row = conn.execute("SELECT path, size_bytes, duration_s, start_time, end_time FROM clips WHERE event_id = ?",
                           (event_id,)).fetchone()
    finally:
        conn.close()
    return None if row is None else dict(zip(("path", "size_bytes", "duration_s", "start_time", "end_time"), row))


def finished_clip(collector, timeout_s: float, started_after: float = 0.0) -> dict:
    """The first event (started after ``started_after``) whose clip is complete: the ``update``
    after its ``end`` (docs/mqtt.md)."""
    def done():
        for history in event_histories(collector.messages(f"{ROOT}/events")).values():
            kinds = [m["type"] for m in history.messages]
            if (history.messages[0]["after"]["start_time"] > started_after and "end" in kinds
                    and kinds.index("end") < len(kinds) - 1):
                return history
        return None
    return collector.wait_until(done, timeout_s, "an event that ended and whose clip was completed")


@pytest.mark.parametrize("codec", ["h264", "hevc"])
def test_an_events_clip_covers_the_event_and_decodes(codec, rtsp_server_factory, walking_clip, walking_clip_h265,
                                                      mosquitto_broker, mqtt_collector, appliance_factory, model_path,
                                                      tmp_path):
    clip_source = walking_clip if codec == "h264" else walking_clip_h265
    rtsp = rtsp_server_factory({"walk": clip_source.path})
    collector = mqtt_collector(mosquitto_broker, f"{ROOT}/#")
    app = appliance_factory([{"id": CAM, "source": rtsp.url("walk"), "decoder": "ffmpeg"}], model_path,
                            mosquitto_broker, **sections(tmp_path))
    # An event of the second walk: the first may start before the pre-roll has filled (the
    # stream was opened only seconds before), the second comes a whole loop later.
    first = collector.wait_for_message(f"{ROOT}/events", lambda m: m.json()["type"] == "new", timeout_s=90)
    history = finished_clip(collector, 90, first.json()["after"]["start_time"] + clip_source.loop_s / 2)
    kinds = [m["type"] for m in history.messages]
    new, end, final = history.messages[0], history.messages[kinds.index("end")], history.messages[-1]
    assert new["after"]["has_clip"] is True, new
    assert end["after"]["has_clip"] is True and final["type"] == "update", kinds
    event = final["after"]
    assert final["before"]["end_time"] == event["end_time"] is not None

    assert app.get(f"/api/v1/events/{event['id']}").json()["has_clip"] is True
    row = wait_until(lambda: clip_row(tmp_path / "events", event["id"]), 10, "the clip in the event record")
    assert abs(event["clip_duration_s"] - row["duration_s"]) < 0.01 and row["duration_s"] > 0
    path = tmp_path / "recordings" / row["path"]
    assert path.is_file() and path.stat().st_size == row["size_bytes"], (row, path)
    assert (tmp_path / "recordings").resolve() in path.resolve().parents

    # The clip covers the event: from pre_s before it (a clip starts at a keyframe) to post_s after it.
    assert row["start_time"] <= event["start_time"] - PRE_S + GOP_S, (row, event)
    assert row["end_time"] >= event["end_time"] + POST_S - FRAME_S, (row, event)
    # The file holds what the record says: ffprobe reads it, every frame decodes, the span matches.
    streams = ffprobe_json(path, "-show_entries", "stream=codec_name,width,height")["streams"]
    assert [s["codec_name"] for s in streams] == [codec] and streams[0]["width"] == clip_source.width
    pts = video_pts_s(path)
    assert pts == sorted(pts) and len(set(pts)) == len(pts), "timestamps must increase"
    assert abs((pts[-1] - pts[0]) - (row["end_time"] - row["start_time"])) <= 2 * FRAME_S, (pts[0], pts[-1], row)
    assert decode_errors(path) == ""
    status = app.get("/api/v1/status").json()
    assert status["recording"]["paused"] is None and status["recording"]["bytes_written"] >= row["size_bytes"]
    assert status["cameras"][0]["recording"]["events_enabled"] is True

    # Deleting the event deletes its clip.
    assert app.request("DELETE", f"/api/v1/events/{event['id']}").status_code == 204
    wait_until(lambda: not path.exists(), 10, f"the clip {path} to be deleted with its event")
    assert clip_row(tmp_path / "events", event["id"]) is None


def test_the_rtsp_server_killed_mid_clip_gives_a_clip_with_a_gap_never_a_corrupt_one(
        rtsp_server_factory, walking_clip, mosquitto_broker, mqtt_collector, appliance_factory, model_path, tmp_path):
    rtsp = rtsp_server_factory({"walk": walking_clip.path})
    collector = mqtt_collector(mosquitto_broker, f"{ROOT}/#")
    # A long post-roll: the camera is back (reconnect) while the clip is still being written.
    app = appliance_factory([{"id": CAM, "source": rtsp.url("walk"), "decoder": "ffmpeg"}], model_path,
                            mosquitto_broker, **sections(tmp_path, events={"post_s": 12.0}))
    opened = collector.wait_for_message(f"{ROOT}/events", lambda m: m.json()["type"] == "new", timeout_s=90).json()
    time.sleep(1.0)
    rtsp.stop()
    time.sleep(2.0)
    rtsp.start()
    event_id = opened["after"]["id"]

    def completed():
        history = event_histories(collector.messages(f"{ROOT}/events")).get(event_id)
        kinds = [m["type"] for m in history.messages] if history else []
        return "end" in kinds and kinds[-1] == "update" and kinds.index("end") < len(kinds) - 1
    collector.wait_until(completed, 60, f"the clip of {event_id} to be completed")
    row = wait_until(lambda: clip_row(tmp_path / "events", event_id), 10, "the clip in the event record")
    assert app.get("/api/v1/status").json()["cameras"][0]["state"] == "streaming"
    app.terminate(timeout_s=15)  # the clips of later walks are finished too, then every file is checked
    files = sorted((tmp_path / "recordings").rglob("*.mp4"))
    assert files, "no clip written"
    for path in files:
        pts = video_pts_s(path)
        assert pts and all(b > a for a, b in zip(pts, pts[1:])), f"{path}: timestamps not increasing"
        assert decode_errors(path) == "", path
    pts = video_pts_s(tmp_path / "recordings" / row["path"])
    gaps = [round(b - a, 2) for a, b in zip(pts, pts[1:]) if b - a > 1.0]
    assert gaps, f"the clip of {event_id} shows no gap where the stream was down: {pts[:3]}...{pts[-3:]}"


def test_kill_9_during_recording_leaves_every_file_readable_and_the_index_and_events_intact(
        rtsp_server_factory, walking_clip, mosquitto_broker, appliance_factory, model_path, tmp_path):
    rtsp = rtsp_server_factory({"walk": walking_clip.path})
    app = appliance_factory([{"id": CAM, "source": rtsp.url("walk"), "decoder": "ffmpeg"}], model_path,
                            mosquitto_broker, start=False,
                            **sections(tmp_path, continuous={"enabled": True, "segment_s": 10}))
    rng = random.Random(24)
    seen_events: Dict[str, dict] = {}
    for _ in range(10):
        app.start()
        for event in app.get("/api/v1/events", params={"limit": 500}).json()["events"]:
            seen_events.setdefault(event["id"], event)  # on disk: read back after a restart
        wait_until(lambda: (app.get("/api/v1/status").json().get("recording") or {}).get("bytes_written", 0) > 0,
                   60, "the recorder to write")
        time.sleep(rng.uniform(0.5, 4.0))
        app.proc.send_signal(signal.SIGKILL)
        app.proc.wait(10)
    app.start()
    wait_until(lambda: (app.get("/api/v1/status").json().get("recording") or {}).get("bytes_written", 0) > 0,
               60, "the recorder to write after the last restart")
    events_now = {e["id"]: e for e in app.get("/api/v1/events", params={"limit": 500}).json()["events"]}
    lost = sorted(set(seen_events) - set(events_now))
    assert not lost, f"events lost over 10 kills: {lost}"
    app.terminate(timeout_s=15)

    folder = tmp_path / "recordings"
    files = sorted(p for p in folder.rglob("*.mp4"))
    assert len(files) >= 10, f"every run wrote a segment at least: {files}"
    for path in files:
        ffprobe_json(path, "-show_entries", "stream=codec_name")  # readable up to its last fragment
        assert decode_errors(path) == "", path
    # The index (rebuilt from the files at start where it disagreed) names exactly the files on disk.
    from edge_app.record.store import RecordingStore

    store = RecordingStore(folder)
    try:
        indexed = {folder / s.path for s in store.segments(None, 0.0, time.time() + 60)}
        clips = set()
        for row_id in events_now:
            clips.update(folder / c.path for c in store.clips(row_id))
    finally:
        store.close()
    assert indexed | clips == set(files), (sorted(set(files) - indexed - clips), sorted((indexed | clips) - set(files)))


def test_a_full_disk_pauses_recording_with_the_reason_and_analysis_goes_on(
        rtsp_server_factory, walking_clip, mosquitto_broker, mqtt_collector, appliance_factory, model_path, tmp_path):
    with tiny_filesystem(tmp_path / "recordings", 24 * 1024) as disk:
        rtsp = rtsp_server_factory({"walk": walking_clip.path})
        collector = mqtt_collector(mosquitto_broker, f"{ROOT}/#")
        app = appliance_factory([{"id": CAM, "source": rtsp.url("walk"), "decoder": "ffmpeg"}], model_path,
                                mosquitto_broker, **sections(tmp_path, continuous={"enabled": True, "segment_s": 10},
                                                             retain={"reserve_mb": 4}))

        def recording() -> dict:  # null until the model has loaded and the recorder started
            return app.get("/api/v1/status").json()["recording"] or {"bytes_written": 0, "paused": None}
        wait_until(lambda: recording()["bytes_written"] > 0, 60, "the recorder to write")
        filler = fill(disk)
        paused = wait_until(lambda: recording()["paused"], 60, "recording to pause on the full disk")
        assert "reserve" in paused or "space" in paused or "full" in paused, paused
        camera = app.get("/api/v1/status").json()["cameras"][0]["recording"]
        assert camera["paused"] == paused and camera["recording"] is False
        metrics = app.get("/metrics").text
        assert "edge_app_recording_paused 1.0" in metrics
        # Detections and events go on while recording is paused.
        collector.clear()
        collector.wait_for_message(f"{ROOT}/cameras/{CAM}/detections", timeout_s=30)
        collector.wait_for_message(f"{ROOT}/events", lambda m: m.json()["type"] == "new", timeout_s=60)
        written = recording()["bytes_written"]
        filler.unlink()
        wait_until(lambda: recording()["paused"] is None, 60, "recording to resume once space returned")
        wait_until(lambda: recording()["bytes_written"] > written, 60, "the recorder to write again")
        app.terminate(timeout_s=15)
        for path in sorted(disk.rglob("*.mp4")):
            ffprobe_json(path, "-show_entries", "stream=codec_name")


def test_sources_without_a_compressed_stream_say_recording_unavailable_in_the_status(
        mosquitto_broker, mqtt_collector, appliance_factory, model_path, tmp_path):
    """A drawn test:// camera has no packets to record: the real appliance says so in the camera's
    status (and the dashboard shows it), and analyses it as before."""
    collector = mqtt_collector(mosquitto_broker, f"{ROOT}/#")
    app = appliance_factory([{"id": CAM, "source": "test://bars?width=320&height=240&fps=5"}], model_path,
                            mosquitto_broker, **sections(tmp_path, continuous={"enabled": True}))

    def camera_recording():
        cameras = app.get("/api/v1/status").json()["cameras"]
        return (cameras[0].get("recording") or {}).get("unavailable")
    why = wait_until(camera_recording, 60, "the camera's status to say why it is not recorded")
    assert why.startswith("recording unavailable: ") and "test://" in why, why
    analysed = wait_until(lambda: app.get("/api/v1/status").json()["cameras"][0]["frames_analyzed"] or None, 60,
                          "the camera to be analysed")
    assert analysed > 0
    collector.wait_for_message(f"{ROOT}/stats", timeout_s=30)
    status = app.get("/api/v1/status").json()
    assert status["recording"]["paused"] is None and status["recording"]["bytes_written"] == 0
    assert status["cameras"][0]["recording"]["recording"] is False
