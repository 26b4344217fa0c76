"""A notification's clip link, end to end over real HTTP: the alert reaches a real webhook receiver
and an ntfy stand-in, the webhook's signature verifies, and the link each carries downloads the
event's clip from the running API without the token; an expired, altered or misdirected link is
refused with 403 and a sentence that says why."""
from __future__ import annotations

import hashlib
import hmac
import json
import time
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest
import requests

from edge_app.config.schema_notify import NotificationsConfig, NotifyTargetConfig
from edge_app.events.model import NEW, EventMessage
from edge_app.notify.clip_links import ClipLinks, clip_path
from edge_app.notify.message import SIGNATURE_HEADER
from edge_app.notify.notifier import Notifier
from edge_app.review.live import LiveReview
from edge_app.review.model import AlertRule
from tests.api.conftest import TOKEN
from tests.api.recorded_api import BEARER
from tests.api.test_events_routes import NOW, event
from tests.notify.receivers import NtfyStandIn, Receiver
from tests.support.recordings import RecordedFiles

SECRET = "0123456789abcdef0123456789abcdef"
KEY = bytes(range(32))
TTL_S = 3600


@pytest.fixture
def linked(make_api, tmp_path):
    """A token-protected API that checks clip links under KEY, with one event whose clip is real MP4."""
    api = make_api({"api": {"token": TOKEN}}, clip_links=ClipLinks(KEY))
    files = RecordedFiles(tmp_path / "recordings")
    api.service.recording_reader = files.store
    first, second = event(1, "front", "person", NOW - 300), event(2, "back", "bus", NOW - 200)
    api.service.add_event(first)
    api.service.add_event(second)
    files.add_clip(first.id, "front", first.start_time - 5, 4.0)
    api.clip_id, api.other_id, api.clip_bytes = first.id, second.id, files.clip_bytes(first.id)
    yield api
    files.close()


def notifier(base_url: str, *targets: dict) -> Notifier:
    config = NotificationsConfig(base_url=base_url, link_ttl_s=TTL_S,
                                 targets=[NotifyTargetConfig(**target) for target in targets])
    review = LiveReview(lambda: 30.0, lambda _camera: AlertRule(frozenset()))
    found = Notifier(config, "edge-test", review, clip_links=ClipLinks(KEY))
    found.start()
    return found


def test_the_notified_clip_link_downloads_the_clip_without_the_token(linked):
    with Receiver() as hook, NtfyStandIn() as ntfy:
        found = notifier(linked.url, {"name": "hook", "type": "webhook", "url": hook.url + "/in", "secret": SECRET},
                         {"name": "phone", "type": "ntfy", "url": ntfy.url + "/doorbell"})
        try:
            found.on_event(EventMessage(NEW, linked.service.event(linked.clip_id)))
            request, = hook.wait_for(1)
            ntfy.wait_for(1)
        finally:
            found.stop()
    # The receiver's check, on the bytes as received.
    expected = "sha256=" + hmac.new(SECRET.encode(), request.body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(request.headers[SIGNATURE_HEADER.lower()], expected)
    link = json.loads(request.body)["clip_url"]
    message, = ntfy.messages
    assert message["click"] == link  # the same link on the phone
    assert link.startswith(linked.url + clip_path(linked.clip_id) + "?") and TOKEN not in link
    expires = int(dict(parse_qsl(urlsplit(link).query))["expires"])
    assert time.time() + TTL_S - 60 <= expires <= time.time() + TTL_S + 1
    # A bare client: no Authorization header, only the link.
    whole = requests.get(link, timeout=10)
    assert whole.status_code == 200 and whole.content == linked.clip_bytes
    assert whole.headers["Content-Type"] == "video/mp4"
    part = requests.get(link, headers={"Range": "bytes=-100"}, timeout=10)
    assert part.status_code == 206 and part.content == linked.clip_bytes[-100:]


def _with(link: str, **changes: str) -> str:
    parts = urlsplit(link)
    query = dict(parse_qsl(parts.query))
    query.update(changes)
    return f"{parts.scheme}://{parts.netloc}{parts.path}?{urlencode(query)}"


@pytest.mark.parametrize("case, altered, why", [
    ("expired", lambda links, url, link: links.link(url, link.clip_id, 60, now_s=time.time() - 120).url,
     "has expired"),
    ("signature flipped", lambda links, url, link: _with(
        links.link(url, link.clip_id, 600).url, sig="0" * 64), "signature is not valid"),
    ("expiry moved later", lambda links, url, link: _with(
        links.link(url, link.clip_id, 600).url, expires=str(int(time.time()) + 7200)), "signature is not valid"),
    ("another event's clip", lambda links, url, link: links.link(url, link.clip_id, 600).url.replace(
        link.clip_id, link.other_id), "signature is not valid"),
    ("another device's key", lambda links, url, link: ClipLinks(b"k" * 32).link(url, link.clip_id, 600).url,
     "signature is not valid"),
    ("longer than the appliance hands out", lambda links, url, link: links.link(url, link.clip_id, 30 * 86400).url,
     "too far ahead"),
    ("no signature", lambda links, url, link: url + clip_path(link.clip_id), "malformed"),
    ("a parameter twice", lambda links, url, link: links.link(url, link.clip_id, 600).url + "&sig=" + "0" * 64,
     "each parameter once"),
])
def test_a_bad_clip_link_is_403_saying_why(linked, case, altered, why):
    url = altered(ClipLinks(KEY), linked.url, linked)
    response = requests.get(url, timeout=10)
    assert response.status_code == 403, (case, response.text)
    assert why in response.json()["error"], case
    assert response.headers["Content-Type"].startswith("application/json")


def test_the_token_does_not_open_the_link_route(linked):
    # The link route is opened by a link alone: the API token without a signature is no way in.
    response = requests.get(linked.url + clip_path(linked.clip_id), headers=BEARER, timeout=10)
    assert response.status_code == 403


def test_an_appliance_without_a_link_key_serves_no_links(make_api):
    api = make_api({"api": {"token": TOKEN}})
    url = ClipLinks(KEY).link(api.url, "1700000000.000000-front-1", 600).url
    response = requests.get(url, timeout=10)
    assert response.status_code == 404 and "no clip links" in response.json()["error"]
