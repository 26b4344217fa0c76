"""Event clips over real HTTP: whole, in ranges, in parts, and never a file outside the recording folder.

The files are fragmented MP4 made by ffmpeg (what the recorder writes) in a real recording store;
what comes back is checked byte for byte against them and read with ffprobe.
"""
from __future__ import annotations

import resource

import pytest
import requests

from edge_app.record.index import FileRow
from tests.api.conftest import TOKEN
from tests.api.test_events_routes import NOW
from tests.support.media import clip_info
from tests.api.recorded_api import BEARER, CLIP_S, DAY_START, clip_path, recorded, with_params  # noqa: F401 (a fixture)


# -- the clip, whole and in ranges -----------------------------------------------------------------

def test_the_whole_clip_is_the_file_and_plays(recorded, tmp_path):
    response = recorded.get(clip_path(recorded.clip_id))
    assert response.status_code == 200, response.text
    assert response.headers["Content-Type"] == "video/mp4"
    assert response.headers["Accept-Ranges"] == "bytes"
    assert response.content == recorded.clip_bytes
    saved = tmp_path / "downloaded.mp4"
    saved.write_bytes(response.content)
    assert clip_info(saved)["frames"] == CLIP_S * 10


def test_download_asks_the_browser_to_save(recorded):
    response = recorded.get(clip_path(recorded.clip_id), params={"download": "1"})
    assert response.status_code == 200
    assert response.headers["Content-Disposition"].startswith("attachment;")
    assert f'{recorded.clip_id}.mp4' in response.headers["Content-Disposition"]
    assert recorded.get(clip_path(recorded.clip_id), params={"download": "yes"}).status_code == 400


@pytest.mark.parametrize("where", ["first", "middle", "last", "suffix", "open-ended"])
def test_a_range_answers_206_with_exactly_those_bytes(recorded, where):
    data = recorded.clip_bytes
    size = len(data)
    header, first, last = {
        "first": ("bytes=0-99", 0, 99),
        "middle": (f"bytes={size // 2}-{size // 2 + 999}", size // 2, size // 2 + 999),
        "last": (f"bytes={size - 10}-{size - 1}", size - 10, size - 1),
        "suffix": ("bytes=-500", size - 500, size - 1),
        "open-ended": (f"bytes={size - 300}-", size - 300, size - 1),
    }[where]
    response = recorded.get(clip_path(recorded.clip_id), headers={"Range": header})
    assert response.status_code == 206, response.text
    assert response.headers["Content-Range"] == f"bytes {first}-{last}/{size}"
    assert response.headers["Content-Length"] == str(last - first + 1)
    assert response.content == data[first:last + 1]


def test_a_range_past_the_end_is_cut_to_the_file(recorded):
    size = len(recorded.clip_bytes)
    response = recorded.get(clip_path(recorded.clip_id), headers={"Range": f"bytes={size - 5}-{size + 1000}"})
    assert response.status_code == 206
    assert response.headers["Content-Range"] == f"bytes {size - 5}-{size - 1}/{size}"


@pytest.mark.parametrize("header", ["bytes={size}-", "bytes={size}-{more}"])
def test_an_unsatisfiable_range_is_416_with_the_size(recorded, header):
    size = len(recorded.clip_bytes)
    response = recorded.get(clip_path(recorded.clip_id), headers={"Range": header.format(size=size, more=size + 10)})
    assert response.status_code == 416, response.text
    assert response.headers["Content-Range"] == f"bytes */{size}"
    assert "error" in response.json()


# "bytes=0-1,5-6": several ranges would need a multipart answer, which players never ask for.
@pytest.mark.parametrize("header", ["bytes=abc", "bytes=10-5", "lines=0-10", "bytes=0-1,x", "bytes=0-1,5-6",
                                    "bytes=-0", "bytes=" + "9" * 40 + "-"])
def test_a_malformed_range_is_416_too(recorded, header):
    # RFC 9110 14.2 lets a server ignore or reject an invalid range; refusing says what went wrong.
    response = recorded.get(clip_path(recorded.clip_id), headers={"Range": header})
    assert response.status_code == 416 and response.headers["Content-Range"] == f"bytes */{len(recorded.clip_bytes)}"


def test_if_range_with_a_stale_etag_sends_the_whole_file(recorded):
    response = recorded.get(clip_path(recorded.clip_id), headers={"Range": "bytes=0-9", "If-Range": '"stale"'})
    assert response.status_code == 200 and response.content == recorded.clip_bytes
    etag = response.headers["ETag"]
    again = recorded.get(clip_path(recorded.clip_id), headers={"Range": "bytes=0-9", "If-Range": etag})
    assert again.status_code == 206 and again.content == recorded.clip_bytes[:10]


def test_head_gives_the_size_without_the_body(recorded):
    response = recorded.request("HEAD", clip_path(recorded.clip_id))
    assert response.status_code == 200 and response.content == b""
    assert response.headers["Content-Length"] == str(len(recorded.clip_bytes))


def test_a_clip_longer_than_max_s_is_served_part_by_part(recorded, tmp_path):
    recorded.files.add_clip(recorded.clip_id, "front", NOW - 305 + CLIP_S, 3, part=1)
    second = recorded.files.clip_bytes(recorded.clip_id, part=1)
    assert recorded.get(clip_path(recorded.clip_id), params={"part": "0"}).content == recorded.clip_bytes
    response = recorded.get(clip_path(recorded.clip_id), params={"part": "1", "download": "1"})
    assert response.status_code == 200 and response.content == second
    assert f"{recorded.clip_id}-part1.mp4" in response.headers["Content-Disposition"]
    saved = tmp_path / "part1.mp4"
    saved.write_bytes(response.content)
    assert clip_info(saved)["frames"] == 3 * 10
    missing = recorded.get(clip_path(recorded.clip_id), params={"part": "2"})
    assert missing.status_code == 404 and "has no part 2 (it has 2: 0 to 1)" in missing.json()["error"]
    for bad in ("-1", "x", "10000", "1.0"):
        assert recorded.get(clip_path(recorded.clip_id), params={"part": bad}).status_code == 400, bad
    # The signed URL says which part it plays and how many there are, so a player goes on to the next.
    first = recorded.request("POST", f"/api/v1/events/{recorded.clip_id}/clip-url").json()
    assert (first["part"], first["parts"]) == (0, 2)
    answer = recorded.request("POST", f"/api/v1/events/{recorded.clip_id}/clip-url?part=1").json()
    assert (answer["part"], answer["parts"]) == (1, 2)
    url = answer["url"]
    assert "part=1" in url
    assert requests.get(recorded.url + url, timeout=10).content == second
    assert requests.get(recorded.url + with_params(url, part="0"), timeout=10).status_code == 403
    assert recorded.request("POST", f"/api/v1/events/{recorded.clip_id}/clip-url?part=5").status_code == 404


def test_no_clip_unknown_event_and_recording_off_are_404(recorded):
    no_clip = recorded.get(clip_path(recorded.other_id))
    assert no_clip.status_code == 404 and "has no clip" in no_clip.json()["error"]
    unknown = recorded.get(clip_path("1700000000.000-front-99"))
    assert unknown.status_code == 404 and "unknown event" in unknown.json()["error"]
    clip = recorded.files.store.clip(recorded.clip_id)
    (recorded.files.root / clip.path).unlink()
    gone = recorded.get(clip_path(recorded.clip_id))
    assert gone.status_code == 404 and "gone" in gone.json()["error"]
    recorded.service.recording_reader = None
    off = recorded.get(clip_path(recorded.clip_id))
    assert off.status_code == 404 and "recording is off" in off.json()["error"]


def test_the_clip_needs_the_token_without_a_signature(recorded):
    bare = requests.get(recorded.url + clip_path(recorded.clip_id), timeout=10)
    assert bare.status_code == 401
    with_query_token = requests.get(recorded.url + clip_path(recorded.clip_id), params={"token": TOKEN}, timeout=10)
    assert with_query_token.status_code == 401, "the token never goes into a clip URL"


def replace_clip(recorded, relative: str, size: int) -> None:
    """The index says the event's clip is ``relative`` (as a damaged or tampered index could)."""
    index = recorded.files.store.index
    index.remove([recorded.files.store.clip(recorded.clip_id).path])
    index.upsert(FileRow(relative, "clip", "front", recorded.clip_id, 0, NOW, NOW + 60, size, True))


def test_a_large_clip_is_streamed_not_loaded(recorded):
    size = 96 * 1024 * 1024
    relative = f"front/events/{recorded.clip_id}__p1.mp4"
    with open(recorded.files.root / relative, "wb") as out:  # its content does not matter to HTTP, its size does
        for _ in range(size // (1 << 20)):
            out.write(b"\x00" * (1 << 20))
    replace_clip(recorded, relative, size)
    peak_before_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    received = 0
    with recorded.http.get(recorded.url + clip_path(recorded.clip_id), stream=True, timeout=30) as response:
        assert response.status_code == 200
        for chunk in response.iter_content(chunk_size=1 << 16):
            received += len(chunk)
    assert received == size
    growth_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before_kib
    assert growth_kib < 32 * 1024, f"the peak RSS grew {growth_kib} KiB while serving a {size >> 20} MiB file"


# -- path escapes -------------------------------------------------------------------------------------

@pytest.mark.parametrize("raw_path", [
    "/api/v1/events/..%2F..%2Fetc%2Fpasswd/clip.mp4",
    "/api/v1/events/%2E%2E/clip.mp4",
    "/api/v1/events/../../../etc/passwd/clip.mp4",
    "/api/v1/events/.hidden/clip.mp4",
])
def test_an_event_id_never_names_a_path(recorded, raw_path):
    response = requests.get(recorded.url + raw_path, headers=BEARER, timeout=10)
    assert response.status_code in (400, 404)
    assert b"root:" not in response.content and not response.content.startswith(b"\x00\x00\x00")


def test_a_clip_recorded_outside_the_folder_is_not_served(recorded, tmp_path):
    outside = tmp_path / "outside.mp4"
    outside.write_bytes(b"secret")
    for escape in ("../outside.mp4", str(outside), "front/../../outside.mp4", "index.sqlite3"):
        replace_clip(recorded, escape, 6)
        response = recorded.get(clip_path(recorded.clip_id))
        assert response.status_code == 404 and b"secret" not in response.content, escape
    (recorded.files.root / "front" / "link.mp4").symlink_to(outside)
    replace_clip(recorded, "front/link.mp4", 6)
    response = recorded.get(clip_path(recorded.clip_id))
    assert response.status_code == 404 and b"secret" not in response.content


@pytest.mark.parametrize("camera", ["../front", "front/..", "/etc", "front%00"])
def test_a_camera_parameter_never_names_a_path(recorded, camera):
    for route in ("/api/v1/recordings", "/api/v1/recordings/export.mp4"):
        response = recorded.get(route, params={"camera": camera, "from": DAY_START, "to": DAY_START + 10})
        assert response.status_code == 400 and "camera must match" in response.json()["error"]

