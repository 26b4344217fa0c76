"""Configuration of privacy masks (``cameras[].privacy``, docs/privacy.md): bad polygons are refused by name."""
import subprocess
import sys

import pytest
import yaml

from edge_app.config.file import ConfigError, parse_config

SQUARE = [[0.1, 0.1], [0.4, 0.1], [0.4, 0.4], [0.1, 0.4]]


def base(**privacy):
    return {"model": {"path": "m.onnx"}, "cameras": [{"id": "cam1", "source": "rtsp://h/s", "privacy": privacy}]}


def problems(data):
    with pytest.raises(ConfigError) as err:
        parse_config(data)
    return [(p.loc, p.msg) for p in err.value.problems]


def test_a_camera_without_privacy_has_no_masks_and_detection_sees_everything():
    cam = parse_config({"model": {"path": "m.onnx"}, "cameras": [{"id": "cam1", "source": "rtsp://h/s"}]}).cameras[0]
    assert cam.privacy.masks == [] and cam.privacy.detect is True and cam.privacy.record_height is None


def test_masks_parse_with_their_style_black_by_default():
    cam = parse_config(base(masks=[{"polygon": SQUARE}, {"polygon": SQUARE, "style": "blur"}], detect=False,
                            record_height=720)).cameras[0]
    assert [m.style for m in cam.privacy.masks] == ["black", "blur"]
    assert cam.privacy.masks[0].polygon[2] == (0.4, 0.4)
    assert cam.privacy.detect is False and cam.privacy.record_height == 720


@pytest.mark.parametrize("mask, loc, msg", [
    ({"polygon": [[0.1, 0.1], [0.5, 0.5]]}, "cameras.0.privacy.masks.0.polygon", "at least 3"),
    ({"polygon": [[0.1, 0.1], [0.5, 0.5], [0.9, 0.9]]}, "cameras.0.privacy.masks.0.polygon", "encloses no area"),
    ({"polygon": [[0.1, 0.1], [0.5, 0.1], [0.1, 0.1], [0.1, 0.5]]}, "cameras.0.privacy.masks.0.polygon",
     "points 0 and 2 are the same point"),
    ({"polygon": [[0.1, 0.1], [0.5, 0.1], [0.5, 0.1], [0.1, 0.5]]}, "cameras.0.privacy.masks.0.polygon",
     "points 1 and 2 are the same point"),
    # a bow tie: edges 0 and 2 cross in the middle
    ({"polygon": [[0.1, 0.1], [0.5, 0.5], [0.5, 0.1], [0.1, 0.5]]}, "cameras.0.privacy.masks.0.polygon",
     "crosses itself (edges 0 and 2)"),
    # a vertex touching a non-neighbouring edge
    ({"polygon": [[0, 0], [0.6, 0], [0.6, 0.6], [0.3, 0], [0, 0.6]]}, "cameras.0.privacy.masks.0.polygon",
     "crosses itself"),
    ({"polygon": [[0.1, 0.1], [1.5, 0.1], [0.1, 0.5]]}, "cameras.0.privacy.masks.0.polygon.1.0", "less than or equal to 1"),
    ({"polygon": [[0.1, -0.1], [0.5, 0.1], [0.1, 0.5]]}, "cameras.0.privacy.masks.0.polygon.0.1",
     "greater than or equal to 0"),
    ({"polygon": [[0.1, 0.1], [0.5, 0.1], [0.1, float("nan")]]}, "cameras.0.privacy.masks.0.polygon.2.1", "finite"),
    ({"polygon": SQUARE, "style": "pixelate"}, "cameras.0.privacy.masks.0.style", "'black' or 'blur'"),
    ({"polygon": SQUARE, "colour": "red"}, "cameras.0.privacy.masks.0.colour", "unknown key"),
    ({"polygon": [[0.5, 0.5]] * 3}, "cameras.0.privacy.masks.0.polygon", "same point"),
    # a spike folding back along the edge it came from (neighbouring edges overlapping)
    ({"polygon": [[0.3, 0.0], [0.0, 0.5], [0.0, 0.0], [0.6, 0.0]]}, "cameras.0.privacy.masks.0.polygon",
     "crosses itself"),
], ids=["two points", "collinear", "repeated point", "repeated neighbour", "bow tie", "touching vertex",
        "x above 1", "y below 0", "nan", "unknown style", "unknown key", "one point thrice", "spike"])
def test_bad_masks_are_refused_naming_the_field(mask, loc, msg):
    found = problems(base(masks=[mask]))
    assert any(where == loc and msg in text for where, text in found), found


@pytest.mark.parametrize("privacy, loc, msg", [
    ({"record_height": 721}, "cameras.0.privacy.record_height", "even"),
    ({"record_height": 32}, "cameras.0.privacy.record_height", "greater than or equal to 64"),
    ({"detect": "sometimes"}, "cameras.0.privacy.detect", "boolean"),
    ({"masks": [{"polygon": SQUARE}] * 33}, "cameras.0.privacy.masks", "at most 32"),
])
def test_bad_privacy_settings_are_refused_naming_the_field(privacy, loc, msg):
    found = problems(base(**privacy))
    assert any(where == loc and msg in text for where, text in found), found


def test_the_second_mask_is_named_by_its_index():
    found = problems(base(masks=[{"polygon": SQUARE}, {"polygon": [[0.1, 0.1], [0.5, 0.5], [0.5, 0.1], [0.1, 0.5]]}]))
    assert [loc for loc, _ in found] == ["cameras.0.privacy.masks.1.polygon"]


def test_a_concave_polygon_and_one_drawn_clockwise_are_fine():
    concave = [[0, 0], [0.6, 0], [0.6, 0.6], [0.3, 0.2], [0, 0.6]]
    clockwise = list(reversed(SQUARE))
    cam = parse_config(base(masks=[{"polygon": concave}, {"polygon": clockwise}])).cameras[0]
    assert len(cam.privacy.masks) == 2


def test_check_config_names_the_mask_that_crosses_itself(tmp_path):
    bow_tie = [[0.1, 0.1], [0.5, 0.5], [0.5, 0.1], [0.1, 0.5]]
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(base(masks=[{"polygon": SQUARE}, {"polygon": bow_tie}])))
    done = subprocess.run([sys.executable, "-m", "edge_app", "check-config", "-c", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "cameras.0.privacy.masks.1.polygon" in done.stderr and "crosses itself (edges 0 and 2)" in done.stderr, \
        done.stderr
