"""The editor's speed fields (static/speed.js), called in Node: the ``speed`` section a line is
saved with, and how the list of a camera's lines describes it."""
from __future__ import annotations

import pytest

from tests.api.dashboard_page import LogicCalls


@pytest.fixture(scope="module")
def call_speed():
    calls = LogicCalls("speed.js")
    yield calls
    calls.close()


@pytest.mark.parametrize("args, expected", [
    (["", "12", "50", "kmh"], None),                                   # no second line: no speed
    (["  ", "12", "", "kmh"], None),
    (["b", "12.5", "", "kmh"], {"to_line": "b", "distance_m": 12.5, "unit": "kmh"}),
    (["b", " 20 ", "50", "mph"], {"to_line": "b", "distance_m": 20, "max_kmh": 50, "unit": "mph"}),
    (["b", "20", "50", "knots"], {"to_line": "b", "distance_m": 20, "max_kmh": 50, "unit": "kmh"}),
    # what is no number goes as typed: the API refuses it and names the field
    (["b", "", "", "kmh"], {"to_line": "b", "distance_m": "", "unit": "kmh"}),
    (["b", "ten", "x", "kmh"], {"to_line": "b", "distance_m": "ten", "max_kmh": "x", "unit": "kmh"}),
    (["b", "-3", "", "kmh"], {"to_line": "b", "distance_m": -3, "unit": "kmh"}),
])
def test_line_speed_section(call_speed, args, expected):
    assert call_speed("lineSpeed", *args) == expected


@pytest.mark.parametrize("args, expected", [
    (["", "50", "kmh"], None),                                         # no length: no speed
    (["20", "", "kmh"], {"distance_m": 20, "unit": "kmh"}),
    (["20", "50", "mph"], {"distance_m": 20, "max_kmh": 50, "unit": "mph"}),
    (["x", "", "kmh"], {"distance_m": "x", "unit": "kmh"}),
])
def test_zone_speed_section(call_speed, args, expected):
    assert call_speed("zoneSpeed", *args) == expected


@pytest.mark.parametrize("line, expected", [
    ({"name": "a"}, ""),
    ({"name": "a", "speed": {"to_line": "b", "distance_m": 12, "unit": "kmh"}}, "speed to b over 12 m"),
    ({"name": "a", "speed": {"to_line": "b", "distance_m": 12, "max_kmh": 50, "unit": "mph"}},
     "speed to b over 12 m, limit 50 km/h (mph)"),
    ({"name": "road", "speed": {"distance_m": 20, "unit": "kmh"}}, "speed over 20 m"),
])
def test_speed_summary(call_speed, line, expected):
    assert call_speed("speedSummary", line) == expected
