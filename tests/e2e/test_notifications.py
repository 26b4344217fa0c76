"""End to end: people walking into an alert zone of a real ``edge-app run`` reach a webhook and an
ntfy stand-in, signed, with links to the event's snapshot and clip that the appliance serves; the
clip link opens without the API token, by its signature under the key the appliance made at its
first start, and an altered one is refused.

A real RTSP server loops the walking clip (the people of bus.jpg slide from the left half into the
right half), the real YOLOv8n finds them, and the receivers are HTTP servers started here
(``tests.notify.receivers``; the ntfy one is a stand-in for ntfy's publish API).
"""
import hashlib
import hmac
import json
import os
import stat
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest
import requests

from testkit.waiting import wait_until
from tests.e2e.scene import jpeg_size
from tests.notify.receivers import NtfyStandIn, Receiver
from testkit.net import free_port

pytestmark = pytest.mark.slow

CAM = "cam1"
ZONE = "right_half"
SECRET = "e2e-webhook-secret-0123456789"
TOKEN = "e2e-api-token-0123456789abcdef"


def test_an_alert_reaches_a_signed_webhook_and_ntfy_with_working_links(rtsp_server_factory, walking_clip,
                                                                         appliance_factory, model_path, tmp_path):
    rtsp = rtsp_server_factory({"walk": walking_clip.path})
    port = free_port()
    with Receiver() as webhook, NtfyStandIn() as ntfy:
        app = appliance_factory(
            [{"id": CAM, "source": rtsp.url("walk"), "decoder": "ffmpeg",
              "zones": [{"name": ZONE, "polygon": [[0.5, 0.0], [1.0, 0.0], [1.0, 1.0], [0.5, 1.0]]}]}],
            model_path, None, api={"port": port, "token": TOKEN},
            tracking={"enabled": True}, events={"enabled": True, "dir": str(tmp_path / "events")},
            record={"dir": str(tmp_path / "recordings"), "events": {"enabled": True, "pre_s": 1.0, "post_s": 1.0}},
            review={"alerts": {"labels": ["person"], "zones": [ZONE]}},
            notifications={"base_url": f"http://127.0.0.1:{port}", "targets": [
                {"name": "hook", "type": "webhook", "url": webhook.url + "/alerts", "secret": SECRET},
                {"name": "phone", "type": "ntfy", "url": ntfy.url + "/edge-e2e"},
            ]})
        request = webhook.wait_for(1, timeout_s=120)[0]
        ntfy.wait_for(1, timeout_s=10)

    expected = "sha256=" + hmac.new(SECRET.encode(), request.body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(request.headers["x-edge-app-signature"], expected)
    alert = json.loads(request.body)
    assert (alert["camera_id"], alert["label"], alert["device_id"]) == (CAM, "person", "e2e")
    assert ZONE in alert["zones"], alert  # the person became an alert by entering the zone

    message = ntfy.messages[0]
    assert message["title"].startswith(f"person on {CAM} in ") and ZONE in message["title"]
    assert message["click"] == alert["clip_url"]

    prefix = app.base_url
    assert alert["snapshot_url"].startswith(prefix) and alert["clip_url"].startswith(prefix)
    snapshot = wait_until(lambda: (lambda r: r if r.status_code == 200 else None)(
        app.get(alert["snapshot_url"][len(prefix):])), 30, "the event's snapshot")
    assert jpeg_size(snapshot.content) == (walking_clip.width, walking_clip.height)
    # The clip link carries no token and needs none: a bare client, as a phone opens it.
    assert TOKEN not in alert["clip_url"] and "sig=" in alert["clip_url"]
    clip = wait_until(lambda: (lambda r: r if r.status_code == 200 else None)(
        requests.get(alert["clip_url"], timeout=10)), 60, "the event's clip through the link")
    assert clip.headers["Content-Type"].startswith("video/mp4") and len(clip.content) > 1000
    # That event's clip: while the event is open its fragmented MP4 still grows, so the token route,
    # asked later, answers the same bytes and perhaps more fragments after them.
    through_api = app.get(f"/api/v1/events/{alert['event_id']}/clip.mp4").content
    assert through_api.startswith(clip.content), (len(clip.content), len(through_api))
    parts = urlsplit(alert["clip_url"])
    query = dict(parse_qsl(parts.query))
    later = f"{prefix}{parts.path}?{urlencode({**query, 'expires': str(int(query['expires']) + 60)})}"
    refused = requests.get(later, timeout=10)
    assert refused.status_code == 403 and "signature is not valid" in refused.json()["error"]
    # The key was made at the first start in the state directory, for the service alone, and is
    # nowhere in the configuration the API shows.
    key_file = tmp_path / "notify-link.key"
    assert stat.S_IMODE(os.stat(key_file).st_mode) == 0o600
    assert key_file.read_bytes().hex() not in app.get("/api/v1/config").text
