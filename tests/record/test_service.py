"""The recording side as an appliance runs it: reconcile at start, a recorder per camera, retention."""
from __future__ import annotations

from edge_app.config.schema_record import RecordConfig
from edge_app.record.service import Recordings, retention_policy
from edge_app.record.store import RecordingStore
from tests.record.feeding import settings
from tests.record.media import BASE_WALL, ffprobe
from testkit.waiting import wait_for


def test_recordings_record_a_camera_and_retention_reports_lost_clips(tmp_path, stream):
    info, packets = stream
    lost = []
    config = RecordConfig(dir=str(tmp_path / "rec"))
    recordings = Recordings(config, on_clips_lost=lost.extend, retention=False)
    recorder = recordings.add_camera(settings(pre_s=1.0, post_s=0.5))
    assert recordings.add_camera(settings(pre_s=1.0, post_s=0.5)) is recorder
    recorder.stream_opened(info)
    for packet in packets:
        if abs(packet.wall_ts - (BASE_WALL + 4.0)) < 1e-6:
            recorder.event_started("ev1", "cam1", packet.wall_ts)
            recorder.event_ended("ev1", packet.wall_ts + 1.0)
        recorder.packet(packet)
    recordings.close()
    peek = RecordingStore(tmp_path / "rec")
    clip = peek.clip("ev1")
    assert clip is not None and clip.complete and ffprobe(peek.resolve(clip.path)).errors == ""
    peek.close()
    again = Recordings(config, on_clips_lost=lost.extend, retention_interval_s=3600)
    wait_for(lambda: lost == ["ev1"], 30, "retention at start to delete the clip from 2023")
    assert again.store.clip("ev1") is None and not (again.store.folder / clip.path).exists()
    assert again.statuses() == []
    again.close()


def test_retention_policy_from_the_configuration():
    policy = retention_policy(RecordConfig(retain={"max_gb": 1.5, "reserve_mb": 100}).retain)
    assert (policy.max_bytes, policy.reserve_bytes, policy.events_days) == (1_500_000_000, 100 * 1024 * 1024, 30)
