"""Recording listings and exports by stream copy over real HTTP, from a real recording store."""
from __future__ import annotations

import shutil
import tempfile
import time
from typing import List
from urllib.parse import urlencode

import pytest
import requests

from edge_app.record.retention import RetentionPolicy
from tests.support.recordings import RecordedFiles, make_fmp4

from tests.support.media import clip_info
from tests.support.tmpfs import mounted_tmpfs
from testkit.waiting import wait_for
from tests.api.recorded_api import BEARER, DAY_START, SEGMENT_S, recorded  # noqa: F401 (a fixture)


# -- recordings and exports ---------------------------------------------------------------------------

def test_the_segments_of_a_range(recorded):
    response = recorded.get("/api/v1/recordings", params={"camera": "front", "from": DAY_START + 7,
                                                          "to": DAY_START + 13})
    assert response.status_code == 200, response.text
    segments = response.json()["segments"]
    assert segments == [{"camera_id": "front", "start": DAY_START + 6, "end": DAY_START + 12,
                         "bytes": recorded.segments[1].bytes},
                        {"camera_id": "front", "start": DAY_START + 12, "end": DAY_START + 18,
                         "bytes": recorded.segments[2].bytes}]
    iso = recorded.get("/api/v1/recordings", params={"from": "2027-01-15T08:00:00Z", "to": "2027-01-15T09:00:00+00:00"})
    assert iso.status_code == 200 and len(iso.json()["segments"]) == 3  # DAY_START is 2027-01-15T08:00:00Z
    assert recorded.get("/api/v1/recordings", params={"camera": "back", "from": DAY_START,
                                                      "to": DAY_START + 60}).json() == {"segments": []}


def test_by_default_the_last_day_is_listed(recorded):
    recorded.files.add_segment("back", time.time() - 3600, 2)
    segments = recorded.get("/api/v1/recordings").json()["segments"]
    assert [s["camera_id"] for s in segments] == ["back"]


@pytest.mark.parametrize("params, problem", [
    ({"from": "yesterday"}, "from must be Unix seconds or an ISO 8601"),
    ({"from": "-5", "to": "10"}, "from must be"),
    ({"from": "1e9", "to": "2e9"}, "must be Unix seconds"),
    ({"from": "2026-13-45T10:00:00Z", "to": "1800000000"}, "from must be"),
    ({"to": "9999-01-01T00:00:00Z"}, "between 1970 and the year 5138"),
    ({"from": "200", "to": "100"}, "must be earlier than to"),
    ({"from": "100", "to": "100"}, "must be earlier than to"),
    ({"from": "0", "to": str(8 * 86400)}, "a listing spans at most"),
    ({"camera": "a" * 65}, "camera must match"),
])
def test_bad_listing_parameters_are_400_naming_them(recorded, params, problem):
    response = recorded.get("/api/v1/recordings", params=params)
    assert response.status_code == 400 and problem in response.json()["error"], response.text


def test_an_export_is_one_playable_mp4_by_stream_copy(recorded, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    response = recorded.get("/api/v1/recordings/export.mp4",
                            params={"camera": "front", "from": DAY_START + 1, "to": DAY_START + 17})
    assert response.status_code == 200, response.text
    # muxed while it is sent: no length known up front, and no byte ranges
    assert response.headers["Content-Type"] == "video/mp4" and response.headers["Accept-Ranges"] == "none"
    saved = tmp_path / "export.mp4"
    saved.write_bytes(response.content)
    # From the keyframe at from (one a second) to the last frame before to, over 3 segments, at 10 fps.
    assert clip_info(saved)["frames"] == 16 * 10
    assert list((tmp_path / "tmp").iterdir()) == [], "nothing is written to the temporary folder"
    whole = recorded.get("/api/v1/recordings/export.mp4", headers={"Range": "bytes=0-1023"},
                         params={"camera": "front", "from": DAY_START + 1, "to": DAY_START + 17})
    assert whole.status_code == 200 and whole.content == response.content, "a Range is ignored: the whole export"
    head = recorded.request("HEAD", "/api/v1/recordings/export.mp4",
                            params={"camera": "front", "from": DAY_START, "to": DAY_START + 5})
    assert head.status_code == 200 and head.content == b""
    assert list((tmp_path / "tmp").iterdir()) == []


def test_an_export_of_nothing_is_404_and_leaves_nothing(recorded, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    response = recorded.get("/api/v1/recordings/export.mp4",
                            params={"camera": "back", "from": DAY_START, "to": DAY_START + 60})
    assert response.status_code == 404 and "no recording" in response.json()["error"]
    assert list((tmp_path / "tmp").iterdir()) == []


@pytest.mark.parametrize("params, problem", [
    ({"from": "1", "to": "2"}, "camera is required"),
    ({"camera": "front", "to": "2"}, "from and to are required"),
    ({"camera": "front", "from": "0", "to": "3601"}, "an export spans at most 3600 s"),
])
def test_an_export_needs_a_camera_and_a_bounded_range(recorded, params, problem, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    response = recorded.get("/api/v1/recordings/export.mp4", params=params)
    assert response.status_code == 400 and problem in response.json()["error"]
    assert list((tmp_path / "tmp").iterdir()) == [], "nothing is exported for a refused range"




EXPORT = "/api/v1/recordings/export.mp4"
WHOLE_RANGE = {"camera": "front", "from": DAY_START, "to": DAY_START + 18}
#: a picture that compresses badly: an export of 18 s is ~16 MB, several times what the sockets
#: between a slow reader and the server hold, so the server really waits for the reader
BIG = {"size": "1280x720", "pattern": "cellauto"}


class SlowReader:
    """An export read the way a slow client reads it: a first piece, then nothing for a while."""

    def __init__(self, url: str, **kwargs):
        self.response = requests.get(url, stream=True, timeout=10, **kwargs)
        if self.response.status_code == 200:
            self.first = self.response.raw.read(4096)

    def close(self) -> None:
        self.response.close()


def held_exports(url: str, count: int, **kwargs) -> List[SlowReader]:
    return [SlowReader(url, **kwargs) for _ in range(count)]


@pytest.fixture
def big_recorded(tmp_path, secured_api, monkeypatch):
    """Recordings and the temporary folder on one real 256 MiB file system (as under PrivateTmp):
    three 6 s segments of "front" at 1280x720 that compress badly."""
    with mounted_tmpfs(tmp_path / "disk", "256m") as disk:
        files = RecordedFiles(disk / "recordings")
        try:
            secured_api.service.recording_reader = files.store
            secured_api.http.headers.update(BEARER)
            for n in range(3):
                relative = files.store.segment_path("front", DAY_START + n * SEGMENT_S)
                make_fmp4(files.root / relative, SEGMENT_S, start_wall=DAY_START + n * SEGMENT_S, **BIG)
            files.store.reconcile()
            (disk / "tmp").mkdir()
            monkeypatch.setattr(tempfile, "tempdir", str(disk / "tmp"))
            secured_api.files, secured_api.disk = files, disk
            yield secured_api
        finally:
            files.close()


def test_held_exports_take_no_disk_space_and_retention_deletes_nothing(big_recorded):
    """Retention set to allow half an export more than is used. Two exports held open by slow
    readers used to sit in the temporary folder as files, and retention then deleted recordings
    to make room for them; a third export was written while the two were still being read."""
    api, disk, store = big_recorded, big_recorded.disk, big_recorded.files.store
    export_bytes = sum(s.bytes for s in store.segments("front", DAY_START, DAY_START + 18))
    assert export_bytes > 12 * 2**20, "an export several times larger than what sockets buffer"
    usage = shutil.disk_usage(disk)
    policy = RetentionPolicy(events_days=30, continuous_days=3650, reserve_bytes=0,
                             max_disk_percent=100.0 * (usage.used + export_bytes // 2) / usage.total)
    assert store.enforce_retention(policy).delete == [], "nothing to delete before the exports"

    readers = held_exports(api.url + EXPORT, 2, params=WHOLE_RANGE, headers=BEARER)
    try:
        assert [r.response.status_code for r in readers] == [200, 200]
        assert all(r.first for r in readers)
        assert list((disk / "tmp").iterdir()) == [], "an export held open keeps nothing on disk"
        assert shutil.disk_usage(disk).used <= usage.used + export_bytes // 4
        plan = store.enforce_retention(policy)
        assert plan.delete == [], f"retention deleted {plan.delete} while exports were held"
        third = api.get(EXPORT, params=WHOLE_RANGE)
        assert third.status_code == 503 and third.headers["Retry-After"] == "5", third.text
        assert "2 exports are being sent" in third.json()["error"]
    finally:
        for reader in readers:
            reader.close()
    # the places come back when the readers go (the server notices at its next write)
    wait_for(lambda: api.get(EXPORT, params=WHOLE_RANGE).status_code == 200, 15,
             "an export to be served once the held ones are closed")
    assert len(store.segments("front", DAY_START, DAY_START + 18)) == 3


def test_a_signed_export_url_serves_two_readers_at_once_and_the_third_gets_429(big_recorded):
    api = big_recorded
    signed = api.request("POST", "/api/v1/recordings/export-url?" + urlencode(WHOLE_RANGE))
    assert signed.status_code == 200, signed.text
    url = api.url + signed.json()["url"]
    readers = held_exports(url, 2)
    try:
        assert [r.response.status_code for r in readers] == [200, 200]
        replay = requests.get(url, timeout=10)
        assert replay.status_code == 429 and replay.headers["Retry-After"] == "5", replay.text
        assert "being read 2 times" in replay.json()["error"]
    finally:
        readers[0].close()
    wait_for(lambda: requests.get(url, timeout=10).status_code == 200, 15,
             "the signed URL to serve again once a reader has gone")
    readers[1].close()
