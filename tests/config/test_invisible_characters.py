"""Names and labels may not hold characters that display as nothing or reorder the text after
them (U+202E RIGHT-TO-LEFT OVERRIDE turns "person‮gnp.exe" into what reads as another name in
a dashboard, a log or Home Assistant): refused in the file and through the API, with the field."""
import copy

import pytest

from edge_app.config.file import ConfigError, parse_config

ZONE = {"name": "driveway", "polygon": [[0.1, 0.5], [0.6, 0.5], [0.6, 1.0], [0.1, 1.0]]}
LINE = {"name": "gate", "points": [[0.5, 0.0], [0.5, 1.0]]}
#: bidirectional embeddings, overrides and isolates, the marks, the Arabic letter mark, and other
#: invisible formatting characters (general category Cf), C1 controls and line/paragraph separators
INVISIBLE = ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069", "\u200e",
             "\u200f", "\u061c", "\u200b", "\u2060", "\ufeff", "\u00ad", "\u0085", "\u2028", "\u2029"]


def base(**camera):
    return {"model": {"path": "m.onnx"}, "cameras": [{"id": "cam1", "source": "rtsp://h/s", **camera}]}


def problems(data):
    with pytest.raises(ConfigError) as err:
        parse_config(data)
    return [(p.loc, p.msg) for p in err.value.problems]


def with_label(where, label):
    data = base(zones=[dict(ZONE, labels=["car"])], lines=[dict(LINE, labels=["car"])])
    if where == "zone":
        data["cameras"][0]["zones"][0]["labels"] = ["car", label]
    elif where == "line":
        data["cameras"][0]["lines"][0]["labels"] = [label]
    elif where == "events":
        data["events"] = {"labels": [label]}
    elif where == "classes":
        data["model"]["classes"] = ["person", label]
    return data


LABEL_LOCS = {"zone": "cameras.0.zones.0.labels", "line": "cameras.0.lines.0.labels", "events": "events.labels",
              "classes": "model.classes"}


@pytest.mark.parametrize("char", INVISIBLE, ids=[f"U+{ord(c):04X}" for c in INVISIBLE])
@pytest.mark.parametrize("where", list(LABEL_LOCS))
def test_labels_and_class_names_with_invisible_characters_are_refused_where_they_are(where, char):
    found = problems(with_label(where, f"per{char}son"))
    assert len(found) == 1, found
    loc, msg = found[0]
    assert loc == LABEL_LOCS[where]
    assert f"U+{ord(char):04X}" in msg and "invisible" in msg, msg


def test_the_message_locates_the_label_in_its_list():
    (loc, msg), = problems(with_label("zone", "bus\u202eeulb"))
    assert loc == "cameras.0.zones.0.labels" and msg.startswith("labels[1]: ") and "'bus\\u202eeulb'" in msg, msg


@pytest.mark.parametrize("label", ["traffic light", "Gabelstapler", "ciężarówka", "自転車", "سيارة", "voiture éclairée"])
def test_labels_in_any_script_stay_welcome(label):
    for where in LABEL_LOCS:
        parse_config(with_label(where, label))


@pytest.mark.parametrize("path", [("device_id",), ("cameras", 0, "id"), ("cameras", 0, "zones", 0, "name"),
                                  ("cameras", 0, "lines", 0, "name")])
@pytest.mark.parametrize("char", ["\u202e", "\u2066", "\u200f", "\u061c", "\u200b"])
def test_names_with_invisible_characters_are_refused(path, char):
    data = copy.deepcopy(base(zones=[ZONE], lines=[LINE]))
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = f"cam{char}1"
    found = problems(data)
    assert [loc for loc, _ in found] == [".".join(map(str, path))], found


@pytest.mark.parametrize("key", ["topic_prefix", "client_id"])
def test_mqtt_names_with_invisible_characters_are_refused(key):
    found = problems({**base(), "mqtt": {key: "edge\u202eapp"}})
    assert found and found[0][0] == f"mqtt.{key}" and "U+202E" in found[0][1], found

