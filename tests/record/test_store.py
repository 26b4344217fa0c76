"""The recording folder: no path outside it can be named, the index follows the files, export."""
from __future__ import annotations

import os

import pytest

from edge_app.record.store import RecordingStore
from tests.record.feeding import record, settings
from tests.record.media import BASE_WALL, GOP_S, ffprobe


@pytest.fixture()
def recorded(tmp_path, stream):
    """A store with 4 s segments of the whole stream and one event clip."""
    info, packets = stream
    store = RecordingStore(tmp_path / "rec")
    start = BASE_WALL + 5.0
    record(store, settings(continuous=True, segment_s=4.0), [(info, packets)],
           {start: [lambda r: r.event_started("ev1", "cam1", start)],
            start + 1: [lambda r: r.event_ended("ev1", start + 1)]})
    return store


@pytest.mark.parametrize("path", [
    "../outside.mp4", "cam1/../../outside.mp4", "/etc/passwd", "cam1//x.mp4", "./cam1/x.mp4", "",
    "cam1/events/../../../x.mp4", "index.sqlite3", "cam1\\..\\..\\x.mp4", "cam1/x.mp4\x00.jpg",
    "link/secret.mp4", "cam1/events/evil.mp4",
])
def test_no_path_outside_the_folder_can_be_named(tmp_path, path):
    store = RecordingStore(tmp_path / "rec")
    outside = tmp_path / "secret"
    outside.mkdir()
    (outside / "secret.mp4").write_bytes(b"x")
    (store.folder / "link").symlink_to(outside)
    (store.folder / "cam1" / "events").mkdir(parents=True)
    (store.folder / "cam1" / "events" / "evil.mp4").symlink_to(outside / "secret.mp4")
    with pytest.raises(ValueError):
        store.resolve(path)


def test_paths_from_reports_resolve(recorded):
    for segment in recorded.segments("cam1", 0, 2e9):
        assert recorded.resolve(segment.path).is_file()
    assert recorded.resolve(recorded.clip("ev1").path).is_file()


@pytest.mark.parametrize("event_id", ["../x", "a/b", "..", ".hidden", "x__p1", "", "a" * 300])
def test_event_ids_that_cannot_name_a_file_are_refused(tmp_path, event_id):
    with pytest.raises(ValueError):
        RecordingStore(tmp_path / "rec").clip_path("cam1", event_id, 0)


def test_the_index_is_rebuilt_from_the_files(recorded):
    before = {row.path: row for row in recorded.index.all()}
    victim = recorded.segments("cam1", 0, 2e9)[1].path
    recorded.resolve(victim).unlink()  # a file gone behind the index's back
    os.remove(recorded.folder / "index.sqlite3")
    for extra in ("index.sqlite3-wal", "index.sqlite3-shm"):
        if (recorded.folder / extra).exists():
            os.remove(recorded.folder / extra)
    recorded.close()
    again = RecordingStore(recorded.folder)
    assert again.index.all() == []
    again.reconcile()
    after = {row.path: row for row in again.index.all()}
    assert set(after) == set(before) - {victim}
    for path, row in after.items():
        assert row.start == pytest.approx(before[path].start, abs=1e-3)
        assert row.end == pytest.approx(before[path].end, abs=0.05)
        assert row.bytes == before[path].bytes and row.complete


def test_reconcile_drops_rows_without_files_and_keeps_what_agrees(recorded):
    clip = recorded.clip("ev1")
    recorded.resolve(clip.path).unlink()
    assert recorded.reconcile() == 1
    assert recorded.clip("ev1") is None
    assert recorded.reconcile() == 0


@pytest.mark.parametrize("start_off, end_off", [(0.0, 12.0), (2.5, 9.3), (3.9, 4.1), (7.0, 30.0)])
def test_export_joins_segments_by_stream_copy(recorded, tmp_path, codec, start_off, end_off):
    out = recorded.export("cam1", BASE_WALL + start_off, BASE_WALL + end_off, tmp_path / "export.mp4")
    probe = ffprobe(out)
    assert probe.errors == "" and probe.codec == codec
    span = probe.last_s - probe.first_s
    covered = min(end_off, 12.0) - start_off
    assert covered - 0.1 <= span <= covered + GOP_S + 0.2


def test_export_of_a_range_without_recordings_is_none(recorded, tmp_path):
    assert recorded.export("cam1", BASE_WALL + 100, BASE_WALL + 200, tmp_path / "x.mp4") is None
    assert recorded.export("cam9", BASE_WALL, BASE_WALL + 5, tmp_path / "x.mp4") is None
    with pytest.raises(ValueError):
        recorded.export("cam1", BASE_WALL + 5, BASE_WALL + 5, tmp_path / "x.mp4")


def test_an_unreadable_index_is_set_aside_and_rebuilt_from_the_files(recorded):
    before = sorted(row.path for row in recorded.index.all())
    recorded.close()
    for extra in ("index.sqlite3-wal", "index.sqlite3-shm"):
        (recorded.folder / extra).unlink(missing_ok=True)
    (recorded.folder / "index.sqlite3").write_bytes(b"not a database" * 100)
    again = RecordingStore(recorded.folder)
    again.reconcile()
    assert sorted(row.path for row in again.index.all()) == before
    assert list(recorded.folder.glob("index.sqlite3.corrupt-*"))


def test_a_clip_part_past_9999_is_still_one_of_its_event(recorded):
    """Clip parts are numbered without a bound (an event of a day in 10 s parts has 8640); the
    index rebuilt from the files must still see each as its event's, or retention never deletes it."""
    first = recorded.clip("ev1")
    for part in (12, 10_000, 123_456):
        path = recorded.clip_path("cam1", "ev1", part)
        os.link(recorded.resolve(first.path), recorded.folder / path)
    assert recorded.reconcile() == 3
    assert sorted(c.part for c in recorded.clips("ev1")) == [0, 12, 10_000, 123_456]


def test_a_file_that_cannot_be_deleted_keeps_its_row(recorded, monkeypatch):
    """Retention and event deletion drop a file's row only when the file went: a file left
    behind (EACCES, EBUSY) stays known, to be deleted at the next pass, not a hidden leftover."""
    from pathlib import Path

    segments = [s.path for s in recorded.segments("cam1", 0, 2e9)]
    stuck = recorded.resolve(segments[0])
    real_unlink = Path.unlink

    def unlink(self, *args, **kwargs):
        if self == stuck:
            raise PermissionError(13, "Permission denied")
        return real_unlink(self, *args, **kwargs)

    monkeypatch.setattr(Path, "unlink", unlink)
    recorded.delete(segments[:2])
    left = [s.path for s in recorded.segments("cam1", 0, 2e9)]
    assert left == [segments[0]] + segments[2:] and stuck.exists()
    assert not (recorded.folder / segments[1]).exists()


def test_a_file_that_cannot_be_read_at_start_is_kept_not_deleted(recorded, monkeypatch):
    """Reconcile deletes a file that holds no complete frame (a crash right after it was made).
    A file it cannot read just now (EMFILE, EIO, EACCES) is not such a file: it stays, and is
    indexed once it can be read."""
    import errno

    from edge_app.record import reading

    victim = recorded.segments("cam1", 0, 2e9)[1].path
    os.remove(recorded.folder / "index.sqlite3")
    for extra in ("index.sqlite3-wal", "index.sqlite3-shm"):
        if (recorded.folder / extra).exists():
            os.remove(recorded.folder / extra)
    recorded.close()
    real_open = reading.av.open

    def open_(path, *args, **kwargs):
        if str(path).endswith(victim):
            raise OSError(errno.EMFILE, "Too many open files")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(reading.av, "open", open_)
    again = RecordingStore(recorded.folder)
    again.reconcile()
    assert (recorded.folder / victim).is_file()
    assert victim not in {s.path for s in again.segments("cam1", 0, 2e9)}
    monkeypatch.setattr(reading.av, "open", real_open)
    again.reconcile()
    assert victim in {s.path for s in again.segments("cam1", 0, 2e9)}


def test_an_index_locked_at_start_is_waited_for_not_set_aside(recorded):
    """Another process holding the index (a backup, sqlite3 on the console) makes opening it fail
    with "database is locked" once sqlite's 5 s are up: that is no corruption. The index is asked
    again and opened once free, with every row, and nothing is set aside."""
    import sqlite3
    import threading

    before = sorted(row.path for row in recorded.index.all())
    recorded.close()
    holder = sqlite3.connect(str(recorded.folder / "index.sqlite3"), isolation_level=None, check_same_thread=False)
    holder.execute("PRAGMA locking_mode=EXCLUSIVE")  # with WAL: no other connection may even read
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("CREATE TABLE held (x)")
    release = threading.Timer(6.5, lambda: (holder.execute("ROLLBACK"), holder.close()))
    release.start()
    try:
        again = RecordingStore(recorded.folder)
    finally:
        release.join()
    assert sorted(row.path for row in again.index.all()) == before
    assert not list(recorded.folder.glob("index.sqlite3.corrupt-*"))
    again.close()
