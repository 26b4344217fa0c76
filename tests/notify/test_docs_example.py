"""docs/notifications.md's signature checks (Python and shell) accept a body a real webhook
received and refuse it tampered: a receiver that copies them gets a check that works."""
import hashlib
import hmac
import json
import re
import subprocess
import time
from pathlib import Path

import pytest

from edge_app.config.schema_notify import NotificationsConfig, NotifyTargetConfig
from edge_app.events.model import NEW, Event, EventMessage
from edge_app.notify.notifier import Notifier
from edge_app.review.live import LiveReview
from edge_app.review.model import AlertRule
from tests.notify.receivers import Receiver
from testkit.skips import require_tool

DOC = Path(__file__).resolve().parents[2] / "docs" / "notifications.md"
SECRET = "5b0c9b0e6f1f4e0a9c7d2d7a8e1f3b4c"


def snippet(language):
    blocks = re.findall(rf"```{language}\n(.*?)```", DOC.read_text(), re.DOTALL)
    return next(block for block in blocks if "sha256" in block)


@pytest.fixture(scope="module")
def delivered():
    with Receiver() as receiver:
        config = NotificationsConfig(targets=[NotifyTargetConfig(name="h", type="webhook", url=receiver.url,
                                                                 secret=SECRET)])
        notifier = Notifier(config, "dev1", LiveReview(lambda: 30.0, lambda _c: AlertRule()))
        notifier.start()
        notifier.on_event(EventMessage(NEW, Event(id="1-cam-1", camera_id="cam", label="person", track_id=1, score=0.9,
                                                  top_score=0.9, box=(0, 0, 1, 1), frame_time=time.time(),
                                                  start_time=time.time())))
        request, = receiver.wait_for(1)
        notifier.stop()
    return request.body, request.headers["x-edge-app-signature"]


def test_the_python_check_accepts_a_delivered_body_and_refuses_a_tampered_one(delivered):
    body, header = delivered
    scope = {}
    exec(snippet("python"), scope)
    assert scope["verify"](body, header, SECRET)["label"] == "person"
    with pytest.raises(ValueError, match="bad signature"):
        scope["verify"](body.replace(b"person", b"nobody"), header, SECRET)
    old = json.dumps({**json.loads(body), "sent_at": time.time() - 3600}).encode()
    with pytest.raises(ValueError, match="too old"):
        scope["verify"](old, "sha256=" + hmac.new(SECRET.encode(), old, hashlib.sha256).hexdigest(), SECRET)


@pytest.mark.parametrize("tamper, verdict", [(False, "valid"), (True, "INVALID")])
def test_the_shell_check(delivered, tmp_path, tamper, verdict):
    openssl = require_tool("openssl")
    body, header = delivered
    (tmp_path / "body.json").write_bytes(body.replace(b"person", b"nobody") if tamper else body)
    result = subprocess.run(["sh", "-c", snippet("sh")], cwd=tmp_path, capture_output=True, text=True, timeout=30,
                            env={"PATH": f"{Path(openssl).parent}:/usr/bin:/bin", "SECRET": SECRET,
                                 "SIGNATURE": header})
    assert result.stdout.strip() == verdict, result.stderr
