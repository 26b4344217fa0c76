"""The hook: AnalysisHub tells the notifier every event message, and a person walking into an alert
zone reaches a real webhook once, with the zone, while the frames go on."""
import json

from edge_app.appliance.analysis import AnalysisHub
from edge_app.config.file import parse_config
from edge_app.notify.wiring import notifier_for
from edge_app.reporting.protocol import AnalysedFrame
from tests.events.scene import FPS, T0, Obj, detections_at, image, moving
from tests.notify.receivers import Receiver
from tests.appliance.test_analysis import RecordingPublisher

SECRET = "x" * 32
RIGHT = [[0.5, 0], [1, 0], [1, 1], [0.5, 1]]


def config(url, alert_labels, alert_zones):
    return parse_config({
        "device_id": "dev1",
        "cameras": [{"id": "cam", "source": "test://box", "zones": [{"name": "right", "polygon": RIGHT}]}],
        "model": {"path": "m.onnx"},
        "events": {"min_frames": 3, "end_after_s": 1.0},
        "review": {"alerts": {"labels": alert_labels, "zones": alert_zones}},
        "notifications": {"targets": [{"name": "hook", "type": "webhook", "url": url, "secret": SECRET}]},
    })


def walk(url, alert_labels, alert_zones):
    running = config(url, alert_labels, alert_zones)
    publisher = RecordingPublisher()
    hub = AnalysisHub(lambda: publisher, clock=lambda: T0 + 100.0)
    notifier = notifier_for(lambda: running)
    hub.also_tell(notifier.on_event)
    notifier.start()
    hub.configure(running)
    person = Obj(0, moving(20, 200, 20), first=0, last=25)
    for i in range(40):
        hub.analyse(AnalysedFrame("cam", i, T0 + i / FPS, image(), detections_at([person], i)))
    return notifier, publisher


def test_a_person_entering_the_alert_zone_notifies_once_with_the_zone():
    with Receiver() as receiver:
        notifier, publisher = walk(receiver.url, ["person"], ["right"])
        try:
            request, = receiver.wait_for(1)
            body = json.loads(request.body)
            assert (body["camera_id"], body["label"], body["zones"]) == ("cam", "person", ["right"])
            kinds = [m.type for (m,) in publisher.of("event")]
            assert kinds.count("new") == 1 and kinds[-1] == "end"  # the events went out as before
        finally:
            notifier.stop()
        assert len(receiver.requests) == 1


def test_without_alert_zones_the_alert_starts_with_the_event_before_any_zone():
    with Receiver() as receiver:
        notifier, _publisher = walk(receiver.url, ["person"], [])
        try:
            assert json.loads(receiver.wait_for(1)[0].body)["zones"] == []
        finally:
            notifier.stop()


def test_a_detection_sends_nothing():
    with Receiver() as receiver:
        notifier, publisher = walk(receiver.url, ["car"], [])
        notifier.stop()
        assert [m.type for (m,) in publisher.of("event")].count("new") == 1
        status, = notifier.status().targets
    assert receiver.requests == [] and (status.queued, status.sent) == (0, 0)
