"""The crossing payload with a line pair's speed: extra keys only on the crossing that completed a
passage, mph where the pair asks for it (docs/analytics.md, "Speed")."""
import pytest

from edge_app.mqtt.payloads import line_crossing_payload
from edge_app.track.speed import SpeedReading

PLAIN_KEYS = {"event_id", "track_id", "label", "direction", "ts", "model"}


@pytest.mark.parametrize("speed, extra", [
    (None, {}),
    (SpeedReading("a", "b", "a", 7, "car", 47.26, "kmh", None),
     {"speed_kmh": 47.3, "from_line": "a", "max_kmh": None, "speed_alert": False}),
    (SpeedReading("a", "b", "a", 7, "car", 47.26, "kmh", 40.0),
     {"speed_kmh": 47.3, "from_line": "a", "max_kmh": 40.0, "speed_alert": True}),
    (SpeedReading("a", "a", "b", 7, "car", 100.0, "mph", 120.0),
     {"speed_kmh": 100.0, "speed_mph": 62.1, "from_line": "b", "max_kmh": 120.0, "speed_alert": False}),
])
def test_crossing_payload_with_speed(speed, extra):
    body = line_crossing_payload("1.0-road-7", 7, "car", "out", 5.0, "default", speed)
    assert {k: body[k] for k in PLAIN_KEYS} == {"event_id": "1.0-road-7", "track_id": 7, "label": "car",
                                                  "direction": "out", "ts": 5.0, "model": "default"}
    assert {k: v for k, v in body.items() if k not in PLAIN_KEYS} == extra
