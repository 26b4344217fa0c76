"""An occupancy event is an alert where a loitering event of the same zone and label is: by the pure
rule, as events happen (what starts a notification), and in the review items of the event database."""
import pytest

from edge_app.events.camera_analysis import AnalysisSettings, CameraAnalysis, ZoneRules
from edge_app.events.database import EventDatabase, read_connection
from edge_app.events.model import LOITERING, OCCUPANCY
from edge_app.review.database import review_page
from edge_app.review.live import LiveReview
from edge_app.review.model import ALERT, DETECTION, AlertRule, severity_of
from edge_app.review.query import ReviewQuery
from edge_app.track import Zone
from tests.events.scene import Obj, run, still

PORCH = Zone("porch", ((0.0, 0.0), (0.5, 0.0), (0.5, 1.0), (0.0, 1.0)), frozenset({"person"}))


def zone_events(type_):
    """The ``R/events`` messages of a loitering or an occupancy event of two people on the porch."""
    rules = ZoneRules(loitering_s={"porch": 1.0}) if type_ == LOITERING else ZoneRules(max_objects={"porch": 1})
    analysis = CameraAnalysis("gate", AnalysisSettings(event_labels=frozenset({"car"}), min_frames=3),
                              zones=[PORCH], rules=rules)
    results = run(analysis, [Obj(0, still(100, 100), last=29), Obj(0, still(200, 300), last=29)], 60)
    found = [m for r in results for m in r.events if m.after.type == type_]
    first = found[0].after.id
    return [m for m in found if m.after.id == first]


@pytest.mark.parametrize("rule, severity", [
    (AlertRule(), ALERT),
    (AlertRule(frozenset({"person"})), ALERT),
    (AlertRule(frozenset(), frozenset({"porch"})), ALERT),
    (AlertRule(frozenset({"person"}), frozenset({"porch"})), ALERT),
    (AlertRule(frozenset({"car"})), DETECTION),
    (AlertRule(frozenset(), frozenset({"drive"})), DETECTION),
])
@pytest.mark.parametrize("type_", [LOITERING, OCCUPANCY])
def test_zone_events_are_alerts_by_label_and_zone(tmp_path, type_, rule, severity):
    messages = zone_events(type_)
    assert [m.type for m in messages] == ["new", "end"]
    assert severity_of([messages[-1].after], rule) == severity

    review = LiveReview(lambda: 5.0, lambda _camera: rule)
    starts = [start for start in (review.observe(m) for m in messages) if start is not None]
    assert [s.event.id for s in starts] == ([messages[0].after.id] if severity == ALERT else [])

    database = EventDatabase(tmp_path)
    database.begin()
    database.upsert(messages[-1].after)
    database.commit()
    database.close()
    conn = read_connection(tmp_path)
    try:
        items = review_page(conn, ReviewQuery(), 5.0, lambda _camera: rule).to_dict()["items"]
    finally:
        conn.close()
    assert [([e["id"] for e in item["events"]], item["severity"]) for item in items] == [([messages[-1].after.id], severity)]
