"""Overlapping events of one camera share their clip's bytes, and a camera's clips are capped:
real H.264/H.265 packets into a real recorder, the files checked with ffprobe and os.stat."""
from __future__ import annotations

import os

from edge_app.record.store import RecordingStore
from tests.record.feeding import record, settings
from tests.record.media import BASE_WALL, FRAME_S, GOP_S, ffprobe


def _started(event_id, at):
    return lambda rec: rec.event_started(event_id, "cam1", at)


def _ended(event_id, at):
    return lambda rec: rec.event_ended(event_id, at)


def _orders(*events):
    orders = {}
    for event_id, start, end in events:
        orders.setdefault(BASE_WALL + start, []).append(_started(event_id, BASE_WALL + start))
        orders.setdefault(BASE_WALL + end, []).append(_ended(event_id, BASE_WALL + end))
    return orders


def _inodes(store, event_id):
    return {os.stat(store.resolve(c.path)).st_ino for c in store.clips(event_id)}


def _clip_disk_bytes(store):
    """Bytes the clips really take: each file (inode) once, however many names it has."""
    files = {}
    for path in (store.folder / "cam1" / "events").iterdir():
        st = os.stat(path)
        files[st.st_ino] = st.st_size
    return sum(files.values())


def test_overlapping_events_share_one_file_and_each_clip_covers_its_event(tmp_path, stream):
    """Three overlapping events, two of them starting on the same frame: one file on the disk,
    each clip a name of it covering its event. Before, each event wrote its own file: the
    overlap was written three times."""
    info, packets = stream
    store = RecordingStore(tmp_path / "rec")
    events = [("ev1", 3.0, 5.0), ("ev2", 4.0, 7.0), ("ev3", 4.0, 6.0)]
    recorder, _seen = record(store, settings(pre_s=1.0, post_s=1.0), [(info, packets)], _orders(*events))
    assert _inodes(store, "ev1") == _inodes(store, "ev2") == _inodes(store, "ev3")
    assert len(list((store.folder / "cam1" / "events").iterdir())) == 3, "three names"
    one_stream = sum(len(p.data) for p in packets if BASE_WALL + 2.0 - GOP_S <= p.wall_ts <= BASE_WALL + 8.5)
    assert _clip_disk_bytes(store) <= one_stream * 1.05, "the overlap is written once"
    for event_id, start, end in events:
        clip = store.clip(event_id)
        assert clip is not None and clip.complete, event_id
        # complete with the shared file: what the index says is what the file holds
        assert clip.bytes == store.resolve(clip.path).stat().st_size
        probe = ffprobe(store.resolve(clip.path))
        assert probe.errors == "", probe.errors
        assert clip.start <= BASE_WALL + start - 1.0 + 1e-6
        assert clip.start + (probe.last_s - probe.first_s) >= BASE_WALL + end + 1.0 - FRAME_S - 1e-6
    status = recorder.status()
    assert status.clips_skipped == 0 and status.packets_dropped == 0


def test_a_deleted_event_leaves_the_shared_file_to_the_others(tmp_path, stream):
    info, packets = stream
    store = RecordingStore(tmp_path / "rec")
    orders = _orders(("ev1", 3.0, 4.0), ("ev2", 3.5, 7.0))
    orders.setdefault(BASE_WALL + 5.0, []).append(lambda rec: rec.event_deleted("ev1"))
    record(store, settings(pre_s=1.0, post_s=1.0), [(info, packets)], orders)
    assert store.clips("ev1") == []
    clip = store.clip("ev2")
    assert clip is not None and clip.complete
    probe = ffprobe(store.resolve(clip.path))
    assert probe.errors == "" and clip.start + (probe.last_s - probe.first_s) >= BASE_WALL + 8.0 - FRAME_S - 1e-6
    assert [p.name for p in (store.folder / "cam1" / "events").iterdir()] == ["ev2.mp4"]


def test_events_beyond_max_concurrent_are_stored_without_a_clip_and_counted(tmp_path, stream):
    info, packets = stream
    store = RecordingStore(tmp_path / "rec")
    from dataclasses import replace
    capped = replace(settings(pre_s=1.0, post_s=1.0), max_concurrent=2)
    recorder, _ = record(store, capped, [(info, packets)],
                         _orders(("ev1", 3.0, 6.0), ("ev2", 3.5, 6.0), ("ev3", 4.0, 5.0), ("ev4", 9.0, 9.5)))
    assert store.clip("ev1") is not None and store.clip("ev2") is not None
    assert store.clip("ev3") is None, "a third clip at once is over the cap"
    assert store.clip("ev4") is not None, "once the others ended, clips are written again"
    status = recorder.status()
    assert status.clips_skipped == 1 and "max_concurrent 2" in status.clips_limited


def test_clips_stop_when_the_hour_s_clip_bytes_are_spent(tmp_path, stream):
    info, packets = stream
    store = RecordingStore(tmp_path / "rec")
    from dataclasses import replace
    per_second = sum(len(p.data) for p in packets) / (packets[-1].wall_ts - packets[0].wall_ts)
    budget_mb = 3 * per_second / 2 ** 20  # three seconds of the stream
    capped = replace(settings(pre_s=1.0, post_s=1.0), max_mb_per_hour=budget_mb)
    recorder, _ = record(store, capped, [(info, packets)], _orders(("ev1", 2.0, 8.0), ("ev2", 9.0, 10.0)))
    clip = store.clip("ev1")
    assert clip is not None and clip.complete and clip.end - clip.start <= 4.5, "cut near three seconds"
    assert ffprobe(store.resolve(clip.path)).errors == ""
    assert store.clip("ev2") is None
    status = recorder.status()
    assert status.clips_cut == 1 and status.clips_skipped == 1 and "max_mb_per_hour" in status.clips_limited


def test_an_event_ending_while_another_goes_on_completes_soon_and_the_other_continues_in_a_part(
        tmp_path, stream, monkeypatch):
    """Its clip completes at the first keyframe COMPLETE_WITHIN_S after its post-roll (here 2 s),
    matching its file; the other event goes on in a new part of the same run, nothing written twice."""
    from edge_app.record import clip_runs

    monkeypatch.setattr(clip_runs, "COMPLETE_WITHIN_S", 2.0)
    info, packets = stream
    store = RecordingStore(tmp_path / "rec")
    _recorder, seen = record(store, settings(pre_s=1.0, post_s=1.0), [(info, packets)],
                             _orders(("ev1", 2.0, 3.0), ("ev2", 2.5, 10.0)))
    first = store.clips("ev1")
    assert len(first) == 1 and first[0].complete
    assert first[0].bytes == store.resolve(first[0].path).stat().st_size
    assert BASE_WALL + 3.0 + 1.0 + 2.0 <= first[0].end <= BASE_WALL + 3.0 + 1.0 + 2.0 + GOP_S + FRAME_S
    done_at = [c for c in seen if c.event_id == "ev1" and c.complete]
    assert done_at, "the listener heard ev1's clip complete"
    second = store.clips("ev2")
    assert [c.part for c in second] == [0, 1] and all(c.complete for c in second)
    assert second[0].path != first[0].path and _inodes(store, "ev1") < _inodes(store, "ev2")
    assert second[1].start == first[0].end or abs(second[1].start - first[0].end) <= FRAME_S
    one_stream = sum(len(p.data) for p in packets if BASE_WALL + 1.0 - GOP_S <= p.wall_ts <= BASE_WALL + 11.5)
    assert _clip_disk_bytes(store) <= one_stream * 1.05
    for clip in second:
        assert ffprobe(store.resolve(clip.path)).errors == ""
