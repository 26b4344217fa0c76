"""event_filter: the one SQL definition of the event list's filters."""
from __future__ import annotations

import pytest

from edge_app.events.query import EventQuery
from edge_app.events.query_sql import EventColumns, event_filter

COLUMNS = EventColumns(camera="cam", label="lab", start_time="t", entered_zone="ZONE(?)")


@pytest.mark.parametrize("query, extra, where, params", [
    (EventQuery(), (), "", ()),
    (EventQuery(camera="front"), (), " WHERE cam = ?", ("front",)),
    (EventQuery(label="car", zone="drive"), (), " WHERE lab = ? AND ZONE(?)", ("car", "drive")),
    (EventQuery(after=1.0, before=2.0), (), " WHERE t > ? AND t < ?", (1.0, 2.0)),
    (EventQuery(camera="front"), (("device_id", "edge-a"),), " WHERE device_id = ? AND cam = ?", ("edge-a", "front")),
    (EventQuery(), (("device_id", None),), "", ()),  # an extra filter left out
    (EventQuery(camera="c", label="l", zone="z", after=1.0, before=2.0), (),
     " WHERE cam = ? AND lab = ? AND ZONE(?) AND t > ? AND t < ?", ("c", "l", "z", 1.0, 2.0)),
])
def test_event_filter(query, extra, where, params):
    found = event_filter(query, COLUMNS, extra=extra)
    assert (found.where(), found.params) == (where, params)
