"""Recording listings and exports by stream copy over real HTTP, from a real recording store."""
from __future__ import annotations

import tempfile
import time

import pytest

from tests.support.media import clip_info
from tests.support.tmpfs import mounted_tmpfs
from tests.support.waiting import wait_for
from tests.api.recorded_api import DAY_START, SEGMENT_S, recorded  # noqa: F401 (a fixture)


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
    assert response.headers["Content-Type"] == "video/mp4" and response.headers["Accept-Ranges"] == "bytes"
    saved = tmp_path / "export.mp4"
    saved.write_bytes(response.content)
    # From the keyframe at from (one a second) to the last frame before to, over 3 segments, at 10 fps.
    assert clip_info(saved)["frames"] == 16 * 10
    # Removed once the answer is sent: the server closes it just after the last byte.
    wait_for(lambda: not list((tmp_path / "tmp").iterdir()), 10, "the temporary export to be removed")
    part = recorded.get("/api/v1/recordings/export.mp4", headers={"Range": "bytes=0-1023"},
                        params={"camera": "front", "from": DAY_START, "to": DAY_START + 5})
    assert part.status_code == 206 and len(part.content) == 1024
    wait_for(lambda: not list((tmp_path / "tmp").iterdir()), 10, "the temporary export to be removed")
    head = recorded.request("HEAD", "/api/v1/recordings/export.mp4",
                            params={"camera": "front", "from": DAY_START, "to": DAY_START + 5})
    assert head.status_code == 200 and int(head.headers["Content-Length"]) > 0
    wait_for(lambda: not list((tmp_path / "tmp").iterdir()), 10, "the temporary export to be removed")


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




def test_an_export_that_would_fill_the_temporary_folder_is_507_and_writes_nothing(recorded, tmp_path, monkeypatch):
    """A real 4 MiB tmpfs as the temporary folder: an export keeps 64 MiB free there, so it is
    refused with the figures before a byte is written (before, it was written whatever the room)."""
    with mounted_tmpfs(tmp_path / "tmp", "4m") as small:
        monkeypatch.setattr(tempfile, "tempdir", str(small))
        response = recorded.get("/api/v1/recordings/export.mp4",
                                params={"camera": "front", "from": DAY_START + 1, "to": DAY_START + 17})
        assert response.status_code == 507, response.text
        error = response.json()["error"]
        assert "not enough free space" in error and "export a shorter range" in error and "MB are kept free" in error
        assert list(small.iterdir()) == []
