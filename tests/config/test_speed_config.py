"""Line pair speed settings: ``cameras[].lines[].speed`` (docs/analytics.md, "Speed")."""
import pytest

from edge_app.config.file import ConfigError, parse_config

LEFT = [[0.2, 0.0], [0.2, 1.0]]
RIGHT = [[0.8, 0.0], [0.8, 1.0]]
SPEED = {"to_line": "b", "distance_m": 25.0}


def config(a_speed, b_points=RIGHT, extra_lines=()):
    lines = [{"name": "a", "points": LEFT, "speed": a_speed}, {"name": "b", "points": b_points}, *extra_lines]
    return {"model": {"path": "m.onnx"}, "cameras": [{"id": "cam1", "source": "rtsp://h/s", "lines": lines}]}


def problems(data):
    with pytest.raises(ConfigError) as err:
        parse_config(data)
    return [(p.loc, p.msg) for p in err.value.problems]


def test_a_pair_parses_with_its_defaults():
    line = parse_config(config(SPEED)).cameras[0].lines[0]
    assert line.speed.to_line == "b" and line.speed.distance_m == 25.0
    assert line.speed.max_kmh is None and line.speed.unit == "kmh"


def test_lines_without_speed_are_unchanged():
    data = config(SPEED)
    del data["cameras"][0]["lines"][0]["speed"]
    assert parse_config(data).cameras[0].lines[0].speed is None


@pytest.mark.parametrize("speed, b_points, loc, msg", [
    ({**SPEED, "distance_m": -5}, RIGHT, "cameras.0.lines.0.speed.distance_m", "greater than 0"),
    ({**SPEED, "distance_m": 0}, RIGHT, "cameras.0.lines.0.speed.distance_m", "greater than 0"),
    ({**SPEED, "distance_m": "nan"}, RIGHT, "cameras.0.lines.0.speed.distance_m", "finite"),
    ({**SPEED, "distance_m": 20000}, RIGHT, "cameras.0.lines.0.speed.distance_m", "less than or equal to 10000"),
    ({"to_line": "b"}, RIGHT, "cameras.0.lines.0.speed.distance_m", "Field required"),
    ({**SPEED, "max_kmh": 0}, RIGHT, "cameras.0.lines.0.speed.max_kmh", "greater than 0"),
    ({**SPEED, "max_kmh": -30}, RIGHT, "cameras.0.lines.0.speed.max_kmh", "greater than 0"),
    ({**SPEED, "unit": "knots"}, RIGHT, "cameras.0.lines.0.speed.unit", "'kmh' or 'mph'"),
    ({**SPEED, "to_line": "nowhere"}, RIGHT, "cameras.0.lines.0.speed.to_line", "no line named 'nowhere'"),
    ({**SPEED, "to_line": "a"}, RIGHT, "cameras.0.lines.0.speed.to_line", "paired with itself"),
    ({**SPEED, "to_line": "b c"}, RIGHT, "cameras.0.lines.0.speed.to_line", "pattern"),
    ({**SPEED, "metres": 3}, RIGHT, "cameras.0.lines.0.speed.metres", "unknown key"),
    (SPEED, [[0.0, 0.5], [1.0, 0.5]], "cameras.0.lines.0.speed.to_line", "cross or touch"),       # a cross
    (SPEED, [[0.2, 0.5], [0.9, 0.5]], "cameras.0.lines.0.speed.to_line", "cross or touch"),       # a T
    (SPEED, [[0.2, 0.2], [0.2, 0.6]], "cameras.0.lines.0.speed.to_line", "cross or touch"),       # on top
])
def test_bad_pairs_name_the_field(speed, b_points, loc, msg):
    got = problems(config(speed, b_points))
    assert any(l == loc and msg in m for l, m in got), got


def test_a_pair_is_given_once():
    data = config(SPEED)
    data["cameras"][0]["lines"][1]["speed"] = {"to_line": "a", "distance_m": 30}
    assert problems(data) == [("cameras.0.lines.1.speed.to_line",
                               "lines 'b' and 'a' are already a speed pair (cameras.0.lines.0.speed)")]


def test_the_second_line_must_be_of_the_same_camera():
    data = config({**SPEED, "to_line": "elsewhere"})
    data["cameras"].append({"id": "cam2", "source": "rtsp://h/t", "lines": [{"name": "elsewhere", "points": RIGHT}]})
    got = problems(data)
    assert any(l == "cameras.0.lines.0.speed.to_line" and "no line named 'elsewhere'" in m for l, m in got), got


def test_a_second_pair_is_checked_too():
    extra = [{"name": "c", "points": [[0.5, 0.1], [0.5, 0.9]], "speed": {"to_line": "b", "distance_m": 10}},
             {"name": "d", "points": [[0.0, 0.5], [1.0, 0.5]], "speed": {"to_line": "c", "distance_m": 10}}]
    got = problems(config(SPEED, extra_lines=extra))
    assert got == [("cameras.0.lines.3.speed.to_line", "lines 'd' and 'c' cross or touch each other; "
                                                        "the two lines of a speed pair must be apart")]


ZONE = {"name": "road", "polygon": [[0.3, 0.2], [0.7, 0.2], [0.7, 0.8], [0.3, 0.8]]}


def zone_config(speed):
    return {"model": {"path": "m.onnx"}, "cameras": [{"id": "cam1", "source": "rtsp://h/s", "zones": [{**ZONE, "speed": speed}]}]}


def test_a_speed_zone_parses():
    zone = parse_config(zone_config({"distance_m": 20, "max_kmh": 30, "unit": "mph"})).cameras[0].zones[0]
    assert (zone.speed.distance_m, zone.speed.max_kmh, zone.speed.unit) == (20.0, 30.0, "mph")


@pytest.mark.parametrize("speed, loc, msg", [
    ({"distance_m": -1}, "cameras.0.zones.0.speed.distance_m", "greater than 0"),
    ({}, "cameras.0.zones.0.speed.distance_m", "Field required"),
    ({"distance_m": 20, "max_kmh": -5}, "cameras.0.zones.0.speed.max_kmh", "greater than 0"),
    ({"distance_m": 20, "to_line": "b"}, "cameras.0.zones.0.speed.to_line", "unknown key"),
])
def test_bad_zone_speeds_name_the_field(speed, loc, msg):
    got = problems(zone_config(speed))
    assert any(l == loc and msg in m for l, m in got), got
