"""Notifications reach real HTTP receivers: a signed webhook, an ntfy stand-in, retries, and a
receiver that hangs or is gone never holds up the analysis thread that reports the alert."""
import base64
import dataclasses
import hashlib
import hmac
import json
import threading
import time

import pytest

from edge_app.config.schema_notify import NotificationsConfig, NotifyTargetConfig
from edge_app.events.model import END, NEW, OCCUPANCY, UPDATE, Event, EventMessage, Occupancy
from edge_app.notify.message import SIGNATURE_HEADER
from edge_app.notify.notifier import Notifier
from edge_app.review.live import LiveReview
from edge_app.review.model import AlertRule

from tests.notify.receivers import NtfyStandIn, Receiver

SECRET = "0123456789abcdef0123456789abcdef"
JPEG = b"\xff\xd8\xff\xe0" + b"snapshot" * 100 + b"\xff\xd9"


def event(camera="front", label="person", start=1_700_000_000.0, track=1, zones=()):
    return Event(id=f"{start:.6f}-{camera}-{track}", camera_id=camera, label=label, track_id=track, score=0.8,
                 top_score=0.91, box=(1, 2, 3, 4), frame_time=start, start_time=start, entered_zones=tuple(zones),
                 current_zones=tuple(zones))


def notifier(*targets, base_url="https://box.lan:8080", labels=(), **options):
    config = NotificationsConfig(base_url=base_url, targets=[NotifyTargetConfig(**t) for t in targets])
    review = LiveReview(lambda: 30.0, lambda _camera: AlertRule(frozenset(labels)))
    found = Notifier(config, "dev1", review, snapshot_of=lambda _event_id: JPEG, **options)
    found.start()
    return found


def webhook(url, **more):
    return {"name": "hook", "type": "webhook", "url": url, "secret": SECRET, "retry_initial_s": 0.05, **more}


def wait_status(found, check, timeout_s=10.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = found.status().targets[0]
        if check(status):
            return status
        time.sleep(0.02)
    raise AssertionError(f"status never got there: {found.status()}")


def test_a_webhook_receives_the_alert_as_json_with_a_valid_signature():
    with Receiver() as receiver:
        found = notifier(webhook(receiver.url + "/edge"))
        try:
            found.on_event(EventMessage(NEW, event(zones=("door",))))
            request, = receiver.wait_for(1)
            # the receiver's check: HMAC-SHA256 of the exact body under the shared secret
            expected = "sha256=" + hmac.new(SECRET.encode(), request.body, hashlib.sha256).hexdigest()
            assert hmac.compare_digest(request.headers[SIGNATURE_HEADER.lower()], expected)
            assert (request.method, request.path, request.headers["content-type"]) == ("POST", "/edge", "application/json")
            body = json.loads(request.body)
            assert {k: body[k] for k in ("type", "device_id", "camera_id", "label", "zones", "score")} == {
                "type": "alert", "device_id": "dev1", "camera_id": "front", "label": "person", "zones": ["door"],
                "score": 0.91}
            event_path = "https://box.lan:8080/api/v1/events/1700000000.000000-front-1"
            assert (body["snapshot_url"], body["clip_url"]) == (event_path + "/snapshot.jpg", event_path + "/clip.mp4")
            assert body["review_id"] == body["event_id"] and abs(body["sent_at"] - time.time()) < 60
            assert "snapshot_jpeg_base64" not in body
            status = wait_status(found, lambda s: s.sent == 1)
            assert status.last_delivery_time is not None and status.last_error is None
            assert status.destination == receiver.url
        finally:
            found.stop()


def test_a_tampered_body_fails_the_signature_check():
    with Receiver() as receiver:
        found = notifier(webhook(receiver.url))
        try:
            found.on_event(EventMessage(NEW, event()))
            request, = receiver.wait_for(1)
            tampered = request.body.replace(b"person", b"nobody")
            forged = "sha256=" + hmac.new(SECRET.encode(), tampered, hashlib.sha256).hexdigest()
            assert not hmac.compare_digest(request.headers[SIGNATURE_HEADER.lower()], forged)
        finally:
            found.stop()


def test_the_webhook_snapshot_is_attached_as_base64_when_asked():
    with Receiver() as receiver:
        found = notifier(webhook(receiver.url, attach_snapshot=True))
        try:
            found.on_event(EventMessage(NEW, event()))
            assert base64.b64decode(json.loads(receiver.wait_for(1)[0].body)["snapshot_jpeg_base64"]) == JPEG
        finally:
            found.stop()


def test_the_ntfy_stand_in_publishes_title_tags_click_with_the_token():
    token = "tk_0123456789abcdef"
    with NtfyStandIn(token=token) as ntfy:
        found = notifier({"name": "phone", "type": "ntfy", "url": ntfy.url + "/doorbell", "token": token})
        try:
            found.on_event(EventMessage(NEW, event(zones=("door",))))
            ntfy.wait_for(1)
            message, = ntfy.messages
            assert message["topic"] == "doorbell" and message["title"] == "person on front in door"
            assert message["tags"] == ["rotating_light", "person", "front"] and message["priority"] == "high"
            assert message["click"] == "https://box.lan:8080/api/v1/events/1700000000.000000-front-1/clip.mp4"
            assert message["message"] == "person on camera front in door (score 0.91)"
            wait_status(found, lambda s: s.sent == 1)
        finally:
            found.stop()


def test_ntfy_gets_the_snapshot_as_an_attachment_and_non_ascii_text_encoded():
    with NtfyStandIn() as ntfy:
        found = notifier({"name": "phone", "type": "ntfy", "url": ntfy.url + "/doorbell", "attach_snapshot": True})
        try:
            found.on_event(EventMessage(NEW, event(label="Fußgänger")))
            request, = ntfy.wait_for(1)
            assert request.method == "PUT" and request.body == JPEG
            message, = ntfy.messages
            assert message["attachment"] == {"name": "snapshot.jpg", "size": len(JPEG)}
            assert message["title"] == "Fußgänger on front" and message["message"].startswith("Fußgänger on camera front")
        finally:
            found.stop()


def test_a_wrong_ntfy_token_is_an_error_in_status():
    with NtfyStandIn(token="tk_right_token_0000") as ntfy:
        found = notifier({"name": "phone", "type": "ntfy", "url": ntfy.url + "/doorbell", "token": "tk_wrong_token_000",
                          "retries": 0})
        try:
            found.on_event(EventMessage(NEW, event()))
            status = wait_status(found, lambda s: s.failed == 1)
            assert status.last_error == "HTTP 401 Unauthorized" and ntfy.messages == []
            assert "tk_wrong" not in repr(status)
        finally:
            found.stop()


def test_a_receiver_answering_500_then_200_gets_the_retry():
    with Receiver(statuses=(500, 200)) as receiver:
        found = notifier(webhook(receiver.url))
        try:
            found.on_event(EventMessage(NEW, event()))
            first, second = receiver.wait_for(2)
            assert json.loads(first.body)["event_id"] == json.loads(second.body)["event_id"]
            status = wait_status(found, lambda s: s.sent == 1)
            assert (status.retried, status.failed, status.last_error) == (1, 0, "HTTP 500 Internal Server Error")
            assert status.last_delivery_time >= status.last_error_time
        finally:
            found.stop()


def test_retries_back_off_exponentially_then_give_up():
    with Receiver(statuses=(503,)) as receiver:
        found = notifier(webhook(receiver.url, retries=3, retry_initial_s=0.1))
        try:
            found.on_event(EventMessage(NEW, event()))
            receiver.wait_for(4)
            status = wait_status(found, lambda s: s.failed == 1)
            assert (status.sent, status.retried) == (0, 3) and len(receiver.requests) == 4
        finally:
            found.stop()
    # waits of 0.1, 0.2 and 0.4 s between the four attempts (at least; the machine is shared)
    gaps_s = [b.at_s - a.at_s for a, b in zip(receiver.requests, receiver.requests[1:])]
    assert all(gap >= want * 0.9 for gap, want in zip(gaps_s, (0.1, 0.2, 0.4))), gaps_s


def test_a_redirect_is_not_followed():
    with Receiver() as elsewhere, Receiver(statuses=(302,), location=None) as receiver:
        receiver.location = elsewhere.url + "/stolen"
        found = notifier(webhook(receiver.url, retries=0))
        try:
            found.on_event(EventMessage(NEW, event()))
            status = wait_status(found, lambda s: s.failed == 1)
            assert status.last_error.startswith("HTTP 302") and elsewhere.requests == []
        finally:
            found.stop()


def test_a_hanging_receiver_never_blocks_the_caller_and_a_full_queue_drops():
    with Receiver(hang=True) as receiver:
        found = notifier(webhook(receiver.url, queue_size=2, cooldown_s=0, timeout_s=5, retries=0))
        try:
            started = time.monotonic()
            for index in range(10):  # a new review item each time: each one an alert
                each = event(start=1_700_000_000.0 + index * 100, track=index)
                found.on_event(EventMessage(NEW, each))
                found.on_event(EventMessage(END, dataclasses.replace(each, end_time=each.start_time + 1), each))
            assert time.monotonic() - started < 0.5
            receiver.wait_for(1)
            status = found.status().targets[0]
            # one in flight, two queued, the rest dropped
            assert status.dropped >= 7 and status.queued <= 2
            assert any(t.name == "notify:hook" for t in threading.enumerate())
        finally:
            receiver.release.set()
            found.stop()


def test_nobody_listening_is_an_error_not_an_exception():
    with Receiver() as receiver:
        url = receiver.url
    found = notifier(webhook(url, retries=1))
    try:
        found.on_event(EventMessage(NEW, event()))
        status = wait_status(found, lambda s: s.failed == 1)
        assert status.last_error.startswith("cannot connect")
    finally:
        found.stop()


def test_only_the_start_of_an_alert_notifies():
    with Receiver() as receiver:
        found = notifier(webhook(receiver.url), labels=("person",))
        try:
            car = event(label="car")
            found.on_event(EventMessage(NEW, car))  # a detection: nothing
            found.on_event(EventMessage(UPDATE, dataclasses.replace(car, score=0.9), car))
            person = event(start=1_700_000_002.0, track=2)
            found.on_event(EventMessage(NEW, person))  # the item becomes an alert
            found.on_event(EventMessage(NEW, event(start=1_700_000_003.0, track=3)))  # same item
            receiver.wait_for(1)
            time.sleep(0.3)
            assert len(receiver.requests) == 1 and json.loads(receiver.requests[0].body)["event_id"] == person.id
        finally:
            found.stop()


def test_without_a_base_url_there_are_no_links():
    with Receiver() as receiver:
        found = notifier(webhook(receiver.url), base_url=None)
        try:
            found.on_event(EventMessage(NEW, event()))
            body = json.loads(receiver.wait_for(1)[0].body)
            assert body["snapshot_url"] is None and body["clip_url"] is None
        finally:
            found.stop()


@pytest.mark.parametrize("kind, title, text", [
    ("object", "person on front in porch", "person on camera front in porch (score 0.91)"),
    ("loitering", "person loitering on front in porch", "person loitering on camera front in porch (score 0.91)"),
    ("occupancy", "3 person, 1 dog in porch on front (limit 2)",
     "3 person, 1 dog in porch on camera front (limit 2; score 0.91)"),
])
def test_a_zone_event_says_what_the_zone_noticed(kind, title, text):
    """Webhook and ntfy alike: the event's type, and an occupancy event's counts, in the payload and the title."""
    crowd = Occupancy({"person": 3, "dog": 1}, 4, 2) if kind == OCCUPANCY else None
    alert = dataclasses.replace(event(zones=("porch",)), type=kind, occupancy=crowd)
    with Receiver() as receiver, NtfyStandIn() as ntfy:
        found = notifier(webhook(receiver.url), {"name": "phone", "type": "ntfy", "url": ntfy.url + "/porch"})
        try:
            found.on_event(EventMessage(NEW, alert))
            body = json.loads(receiver.wait_for(1)[0].body)
            assert (body["event_type"], body["title"]) == (kind, title)
            assert body["occupancy"] == (None if crowd is None else crowd.to_dict())
            ntfy.wait_for(1)
            message, = ntfy.messages
            assert (message["title"], message["message"]) == (title, text)
        finally:
            found.stop()
