"""A speed above its line pair's limit makes an alert whatever review.alerts says."""
import pytest

from edge_app.events.model import Event
from edge_app.review.model import ALERT, DETECTION, AlertRule, severity_of


def car(speed_alert: bool, zones=()) -> Event:
    return Event(id="1.0-road-7", camera_id="road", label="car", track_id=7, score=0.8, top_score=0.9,
                 box=(1.0, 2.0, 3.0, 4.0), frame_time=2.0, start_time=1.0, entered_zones=tuple(zones),
                 speed_kmh=62.0 if speed_alert else 40.0, speed_alert=speed_alert)


@pytest.mark.parametrize("rule, speed_alert, expected", [
    (AlertRule(frozenset({"person"})), False, DETECTION),
    (AlertRule(frozenset({"person"})), True, ALERT),
    (AlertRule(frozenset(), frozenset({"porch"})), True, ALERT),
    (AlertRule(frozenset(), frozenset({"porch"})), False, DETECTION),
    (AlertRule(), False, ALERT),
])
def test_speed_alerts(rule, speed_alert, expected):
    assert severity_of([car(speed_alert)], rule) == expected
