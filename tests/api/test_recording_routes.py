"""Event clips, signed URLs, recording listings and exports over real HTTP, with real MP4 files.

The files are fragmented MP4 made by ffmpeg (what the recorder writes); what comes back is
checked byte for byte against them and read with ffprobe.
"""
from __future__ import annotations

import resource
import tempfile
import time
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest
import requests

from edge_app.api import signed_urls
from tests.api.conftest import TOKEN
from tests.api.test_events_routes import NOW, event
from tests.support.media import clip_info
from edge_app.record.index import FileRow
from tests.support.recordings import RecordedFiles
from tests.support.waiting import wait_for

BEARER = {"Authorization": f"Bearer {TOKEN}"}
CLIP_S = 4.0
SEGMENT_S = 6.0
DAY_START = 1_800_000_000.0


@pytest.fixture
def recorded(secured_api, tmp_path):
    """A token-protected API with two events, the first with a real clip, and three segments of "front"."""
    files = RecordedFiles(tmp_path / "recordings")
    secured_api.service.recording_reader = files.store
    first, second = event(1, "front", "person", NOW - 300), event(2, "back", "bus", NOW - 200)
    secured_api.service.add_event(first)
    secured_api.service.add_event(second)
    files.add_clip(first.id, "front", first.start_time - 5, CLIP_S)
    secured_api.segments = [files.add_segment("front", DAY_START + n * SEGMENT_S, SEGMENT_S) for n in range(3)]
    secured_api.http.headers.update(BEARER)
    secured_api.clip_id, secured_api.other_id, secured_api.files = first.id, second.id, files
    secured_api.clip_bytes = files.clip_bytes(first.id)
    yield secured_api
    files.close()


def clip_path(event_id: str) -> str:
    return f"/api/v1/events/{event_id}/clip.mp4"


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


@pytest.mark.parametrize("header", ["bytes=abc", "bytes=10-5", "lines=0-10", "bytes=0-1,x"])
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
    url = recorded.request("POST", f"/api/v1/events/{recorded.clip_id}/clip-url?part=1").json()["url"]
    assert "part=1" in url
    assert requests.get(recorded.url + url, timeout=10).content == second
    assert requests.get(recorded.url + _with(url, part="0"), timeout=10).status_code == 403
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


# -- signed URLs -------------------------------------------------------------------------------------

def signed_url(recorded, event_id: str, **body) -> dict:
    response = recorded.request("POST", f"/api/v1/events/{event_id}/clip-url", json=body or None)
    assert response.status_code == 200, response.text
    return response.json()


def test_a_signed_url_plays_without_the_token_and_seeks(recorded):
    before = time.time()
    answer = signed_url(recorded, recorded.clip_id)
    assert before + signed_urls.DEFAULT_TTL_S <= answer["expires"] <= time.time() + signed_urls.DEFAULT_TTL_S + 1
    assert answer["url"].startswith(clip_path(recorded.clip_id) + "?") and TOKEN not in answer["url"]
    whole = requests.get(recorded.url + answer["url"], timeout=10)
    assert whole.status_code == 200 and whole.content == recorded.clip_bytes
    part = requests.get(recorded.url + answer["url"], headers={"Range": "bytes=-100"}, timeout=10)
    assert part.status_code == 206 and part.content == recorded.clip_bytes[-100:]


def test_the_signed_url_lives_as_long_as_asked(recorded):
    answer = signed_url(recorded, recorded.clip_id, ttl_s=600)
    assert answer["expires"] >= time.time() + 590
    for body in ({"ttl_s": 5}, {"ttl_s": 3601}, {"ttl_s": "60"}, {"ttl_s": True}, {"other": 1}, [60]):
        refused = recorded.request("POST", f"/api/v1/events/{recorded.clip_id}/clip-url", json=body)
        assert refused.status_code == 400, body


def test_no_signed_url_for_an_event_without_a_clip(recorded):
    assert recorded.request("POST", f"/api/v1/events/{recorded.other_id}/clip-url").status_code == 404
    assert recorded.request("POST", "/api/v1/events/1700000000.000-front-99/clip-url").status_code == 404


def _with(url: str, **changes: str) -> str:
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    query.update(changes)
    return parts.path + "?" + urlencode(query)


def test_an_expired_signed_url_is_403(recorded):
    path = clip_path(recorded.clip_id)
    expired = signed_urls.sign(TOKEN, path, {}, ttl_s=60, now_s=time.time() - 120)
    response = requests.get(recorded.url + expired.url, timeout=10)
    assert response.status_code == 403 and "expired" in response.json()["error"]


def test_an_altered_signed_url_is_403(recorded):
    url = signed_url(recorded, recorded.clip_id)["url"]
    query = dict(parse_qsl(urlsplit(url).query))
    sig, expires = query["sig"], int(query["expires"])
    flipped = ("0" if sig[0] != "0" else "1") + sig[1:]
    altered = [
        _with(url, sig=flipped),
        _with(url, expires=str(expires + 3600)),  # a later expiry under the old signature
        _with(url, sig=sig[:-2]),
        _with(url, sig=sig.upper()),
        _with(url, download="1"),  # a parameter added after signing
        url.replace(recorded.clip_id, recorded.other_id),  # another event's clip with this signature
        clip_path(recorded.clip_id) + "?expires=" + str(expires),  # the signature left out
        url + "&sig=" + sig,  # a parameter named twice
    ]
    for changed in altered:
        response = requests.get(recorded.url + changed, timeout=10)
        assert response.status_code == 403, changed
        assert recorded.clip_bytes[:64] not in response.content


def test_a_signature_opens_only_the_signed_routes(recorded):
    url = signed_url(recorded, recorded.clip_id)["url"]
    query = urlsplit(url).query
    for other in (f"/api/v1/events/{recorded.clip_id}", f"/api/v1/events/{recorded.clip_id}/snapshot.jpg",
                  "/api/v1/config"):
        assert requests.get(f"{recorded.url}{other}?{query}", timeout=10).status_code == 401, other


def test_a_new_token_revokes_the_urls_signed_under_the_old_one(recorded):
    url = signed_url(recorded, recorded.clip_id)["url"]
    assert requests.get(recorded.url + url, timeout=10).status_code == 200
    new_token = "an0ther-t0ken-for-tests"
    changed = recorded.request("PATCH", "/api/v1/config", json={"api": {"token": new_token}})
    assert changed.status_code == 200, changed.text
    assert requests.get(recorded.url + url, timeout=10).status_code == 403


def test_without_a_token_the_plain_route_is_the_url(make_api, tmp_path):
    running = make_api()
    files = RecordedFiles(tmp_path / "recordings")
    running.service.recording_reader = files.store
    ev = running.service.add_event(event(1))
    files.add_clip(ev.id, "front", ev.start_time, 2)
    answer = running.request("POST", f"/api/v1/events/{ev.id}/clip-url").json()
    assert answer == {"url": clip_path(ev.id), "expires": None}
    assert running.get(answer["url"]).status_code == 200


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


def test_a_signed_export_url_names_its_range_only(recorded):
    params = {"camera": "front", "from": str(DAY_START), "to": str(DAY_START + 6)}
    answer = recorded.request("POST", "/api/v1/recordings/export-url?" + urlencode(params))
    assert answer.status_code == 200, answer.text
    url = answer.json()["url"]
    played = requests.get(recorded.url + url, headers={"Range": "bytes=0-99"}, timeout=10)
    assert played.status_code == 206 and len(played.content) == 100
    for changed in (_with(url, to=str(DAY_START + 18)), _with(url, camera="back"), _with(url, **{"from": "0"})):
        assert requests.get(recorded.url + changed, timeout=10).status_code == 403, changed
