"""Motion settings and masks are validated with bounds; a mask over the whole frame is allowed."""
import pytest

from edge_app.config.file import ConfigError, parse_config


def _raw(motion=None, camera_motion=None):
    camera = {"id": "cam1", "source": "test://box"}
    if camera_motion is not None:
        camera["motion"] = camera_motion
    raw = {"cameras": [camera], "model": {"path": "m.onnx"}}
    if motion is not None:
        raw["motion"] = motion
    return raw


def test_defaults():
    config = parse_config(_raw())
    assert config.motion.enabled and config.motion.threshold == 25 and config.motion.keepalive_s == 5.0
    assert config.cameras[0].motion.enabled and config.cameras[0].motion.masks == []


@pytest.mark.parametrize("motion", [
    {"threshold": 0}, {"threshold": 256}, {"threshold": 2.5}, {"min_area": 0}, {"min_area": 1.5},
    {"min_area": float("nan")}, {"keepalive_s": 0}, {"keepalive_s": 3601}, {"keepalive_s": float("inf")},
    {"sensitivity": 3},
])
def test_bad_settings_are_refused(motion):
    with pytest.raises(ConfigError):
        parse_config(_raw(motion=motion))


@pytest.mark.parametrize("masks, where", [
    ([[[0, 0], [1, 0]]], "masks.0"),                                 # two points
    ([[[0, 0], [1.2, 0], [1, 1]]], "masks.0"),                       # outside the frame
    ([[[0, 0], [-0.1, 0], [1, 1]]], "masks.0"),
    ([[[0, 0], [0.5, 0.5], [1, 1]]], "masks"),                       # no area
    ([[[0, 0], [1, 0], [1, 1]]] * 33, "masks"),                      # too many
    ([[[0.1 * (k % 10), 0.5] for k in range(65)]], "masks.0"),        # too many points
    ([[[0, 0], [1, 0], ["a", 1]]], "masks.0"),
])
def test_bad_masks_are_refused(masks, where):
    with pytest.raises(ConfigError) as err:
        parse_config(_raw(camera_motion={"masks": masks}))
    assert where in str(err.value)


def test_a_mask_over_the_whole_frame_is_allowed():
    config = parse_config(_raw(camera_motion={"masks": [[[0, 0], [1, 0], [1, 1], [0, 1]]]}))
    assert config.cameras[0].motion.masks == [[(0, 0), (1, 0), (1, 1), (0, 1)]]
