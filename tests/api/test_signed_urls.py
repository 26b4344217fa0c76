"""Signed URLs of clips and exports: what a <video> element loads without the token, for one file and a short while."""
from __future__ import annotations

import time
from urllib.parse import parse_qsl, urlencode, urlsplit

import requests

from edge_app.http_server import signed_urls
from tests.api.conftest import TOKEN
from tests.api.test_events_routes import event
from tests.support.recordings import RecordedFiles
from tests.api.recorded_api import DAY_START, clip_path, recorded, with_params  # noqa: F401 (a fixture)


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



def test_an_expired_signed_url_is_403(recorded):
    path = clip_path(recorded.clip_id)
    expired = signed_urls.sign(TOKEN, path, {}, ttl_s=60, now_s=time.time() - 120)
    response = requests.get(recorded.url + expired.url, timeout=10)
    assert response.status_code == 403 and "expired" in response.json()["error"]


def test_a_signed_url_that_lives_longer_than_the_api_hands_out_is_403(recorded):
    # The API signs for at most MAX_TTL_S; a URL valid for longer (signed by hand with the token,
    # or with a key that leaked) is refused, so no signature outlives that bound.
    path = clip_path(recorded.clip_id)
    forever = signed_urls.sign(TOKEN, path, {}, ttl_s=10 * 365 * 86400)
    response = requests.get(recorded.url + forever.url, timeout=10)
    assert response.status_code == 403 and "expires too far" in response.json()["error"]
    longest = signed_urls.sign(TOKEN, path, {}, ttl_s=signed_urls.MAX_TTL_S)
    assert requests.get(recorded.url + longest.url, timeout=10).status_code == 200


def test_an_altered_signed_url_is_403(recorded):
    url = signed_url(recorded, recorded.clip_id)["url"]
    query = dict(parse_qsl(urlsplit(url).query))
    sig, expires = query["sig"], int(query["expires"])
    flipped = ("0" if sig[0] != "0" else "1") + sig[1:]
    altered = [
        with_params(url, sig=flipped),
        with_params(url, expires=str(expires + 3600)),  # a later expiry under the old signature
        with_params(url, sig=sig[:-2]),
        with_params(url, sig=sig.upper()),
        with_params(url, download="1"),  # a parameter added after signing
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
    assert answer == {"url": clip_path(ev.id), "expires": None, "part": 0, "parts": 1}
    assert running.get(answer["url"]).status_code == 200


def test_a_signed_export_url_names_its_range_only(recorded):
    params = {"camera": "front", "from": str(DAY_START), "to": str(DAY_START + 6)}
    answer = recorded.request("POST", "/api/v1/recordings/export-url?" + urlencode(params))
    assert answer.status_code == 200, answer.text
    url = answer.json()["url"]
    played = requests.get(recorded.url + url, timeout=10)
    assert played.status_code == 200 and played.content.startswith(b"\x00\x00\x00\x1cftyp")
    for changed in (with_params(url, to=str(DAY_START + 18)), with_params(url, camera="back"), with_params(url, **{"from": "0"})):
        assert requests.get(recorded.url + changed, timeout=10).status_code == 403, changed

