"""Retention by age and by size, oldest first, an event's segments kept with its clip; the reserve."""
from __future__ import annotations

import pytest

from edge_app.health.free_space import DiskSpace
from edge_app.record.index import FileRow
from edge_app.record.retention import (DAY_S, MB, ReserveGuard, RetentionPolicy, plan_retention,
                                       reserve_reason)
from edge_app.record.store import RecordingStore
from tests.record.feeding import record, settings
from tests.record.media import BASE_WALL

NOW = 1_800_000_000.0


def seg(name, start_days_ago, length_s=60.0, size=100, camera="cam1"):
    start = NOW - start_days_ago * DAY_S
    return FileRow(f"{camera}/{name}.mp4", "segment", camera, None, 0, start, start + length_s, size, True)


def clip(event, start_days_ago, length_s=30.0, size=10, camera="cam1"):
    start = NOW - start_days_ago * DAY_S
    return FileRow(f"{camera}/events/{event}.mp4", "clip", camera, event, 0, start, start + length_s, size, True)


POLICY = RetentionPolicy(events_days=30, continuous_days=3, max_disk_percent=80)
NO_RESERVE = RetentionPolicy(events_days=30, continuous_days=3, max_disk_percent=80, reserve_bytes=0)


@pytest.mark.parametrize("rows, policy, disk, writing, expected", [
    # by age: old segments go, recent stay
    ([seg("a", 5), seg("b", 4), seg("c", 1)], POLICY, None, set(), ["cam1/a.mp4", "cam1/b.mp4"]),
    # an old segment holding a kept clip's frames stays; the clip's own age decides
    ([seg("a", 5), seg("b", 4), clip("e1", 4)], POLICY, None, set(), ["cam1/a.mp4"]),
    # ... on its own camera only
    ([seg("a", 4, camera="cam2"), clip("e1", 4)], POLICY, None, set(), ["cam2/a.mp4"]),
    # an expired clip goes, and frees its segments
    ([seg("a", 40), clip("e1", 40), clip("e2", 2)], POLICY, None, set(), ["cam1/a.mp4", "cam1/events/e1.mp4"]),
    # a file being written is never deleted
    ([seg("a", 5)], POLICY, None, {"cam1/a.mp4"}, []),
    # by size (max_bytes): oldest first until under the limit
    ([seg("a", 2), seg("b", 1), seg("c", 0.5)], RetentionPolicy(30, 3, 80, max_bytes=150), None, set(),
     ["cam1/a.mp4", "cam1/b.mp4"]),
    # by size: a protected segment goes only after its clip
    ([seg("a", 2), clip("e1", 2), seg("b", 1)], RetentionPolicy(30, 3, 80, max_bytes=50), None, set(),
     ["cam1/events/e1.mp4", "cam1/a.mp4", "cam1/b.mp4"]),
    # by disk percent: 900 of 1000 used, 80 % allowed: 100 bytes must go (no reserve on this tiny disk)
    ([seg("a", 2), seg("b", 1)], NO_RESERVE, DiskSpace(total_bytes=1000, used_bytes=900, free_bytes=100), set(), ["cam1/a.mp4"]),
    ([seg("a", 2), seg("b", 1)], NO_RESERVE, DiskSpace(total_bytes=1000, used_bytes=700, free_bytes=300), set(), []),
    # the reserve: 400 MB free of 32 GB is within 99 %, but below the 512 MB reserve, where writing
    # pauses; the oldest go until the reserve and its margin are free, or the pause would never end
    ([seg("a", 2, size=100 * MB), seg("b", 1, size=100 * MB), seg("c", 0.5, size=100 * MB)],
     RetentionPolicy(30, 3, 99, reserve_bytes=512 * MB), DiskSpace(32_000 * MB, 31_600 * MB, 400 * MB), set(),
     ["cam1/a.mp4", "cam1/b.mp4"]),
    # ... and nothing goes while the reserve and its margin are free
    ([seg("a", 2, size=100 * MB)], RetentionPolicy(30, 3, 99, reserve_bytes=512 * MB),
     DiskSpace(32_000 * MB, 31_000 * MB, 1000 * MB), set(), []),
])
def test_plan(rows, policy, disk, writing, expected):
    assert plan_retention(rows, NOW, policy, disk, writing).delete == expected


def test_plan_names_events_that_lost_every_clip_part():
    rows = [clip("e1", 40), clip("e2", 2)]
    assert plan_retention(rows, NOW, POLICY, None).events_without_clip == ["e1"]


@pytest.mark.parametrize("free_mb, reserve_mb, paused", [(0, 512, True), (511, 512, True), (512, 512, False),
                                                          (10_000, 512, False), (0, 0, False)])
def test_reserve(free_mb, reserve_mb, paused):
    reason = reserve_reason(free_mb * MB, reserve_mb * MB)
    assert (reason is not None) == paused
    if paused:
        assert reason.startswith(f"disk below reserve: {free_mb} MB free")


def test_retention_on_real_files_keeps_the_segments_of_a_kept_clip(tmp_path, stream):
    info, packets = stream
    store = RecordingStore(tmp_path / "rec")
    start = BASE_WALL + 9.0
    record(store, settings(continuous=True, segment_s=3.0, pre_s=0.5, post_s=0.5), [(info, packets)],
           {start: [lambda r: r.event_started("ev1", "cam1", start)],
            start + 1: [lambda r: r.event_ended("ev1", start + 1)]})
    segments = store.segments("cam1", 0, 2e9)
    now = BASE_WALL + 3.5 * DAY_S  # every segment is past continuous_days, the clip is not past events_days
    plan = store.enforce_retention(RetentionPolicy(30, 3, 99), now=now, disk=DiskSpace(10 ** 12, 0, 10 ** 12))
    kept = store.segments("cam1", 0, 2e9)
    clip_info = store.clip("ev1")
    assert kept and all(s.start <= clip_info.end and clip_info.start <= s.end for s in kept)
    assert len(kept) + plan.by_age == len(segments)
    for gone in plan.delete:
        assert not (store.folder / gone).exists()
    # by size: everything but the newest files, clip first, its segments after it
    total = sum(r.bytes for r in store.index.all())
    plan = store.enforce_retention(RetentionPolicy(30, 3, 99, max_bytes=1), now=now,
                                   disk=DiskSpace(10 ** 12, total, 10 ** 12))
    assert store.index.all() == [] and plan.events_without_clip == ["ev1"]


def test_the_reserve_guard_pauses_resumes_and_wants_a_margin_after_a_full_disk():
    guard = ReserveGuard(reserve_bytes=2 * MB)
    steps = [(10 * MB, None), (1 * MB, "disk below reserve: 1 MB free"), (2 * MB, None)]
    for free, expected in steps:
        reason = guard.check(free)
        assert (reason or "").startswith(expected or "") and (reason is None) == (expected is None)
    assert guard.disk_full("No space left on device") == "disk full: No space left on device"
    assert guard.check(2 * MB) == "disk full: No space left on device"  # the reserve alone is not enough now
    assert guard.check(3 * MB) is None
