"""A secret shown as "***" is re-used only where it was used before (docs/configuration.md, "Secrets")."""
import pytest

from edge_app.config.secrets import misdirected_secrets, restore_secrets
from edge_app.config.file import merge_patch, parse_config, redacted_dict

STORED = {
    "cameras": [{"id": "front", "source": "rtsp://admin:p@ss@10.0.0.5:554/s1"}, {"id": "back", "source": "test://bars"}],
    "model": {"path": "engines/y.onnx"},
    "mqtt": {"host": "10.0.0.2", "port": 1883, "username": "edge", "password": "mqtt-secret"},
    "api": {"token": "t0ken-0f-24-characters!!"},
}


def submit(patch):
    """What the config API does: the patch applies to the masked view, then secrets are filled in."""
    current = parse_config(STORED)
    data, restored, problems = restore_secrets(merge_patch(redacted_dict(current), patch), current)
    if problems:
        return None, problems
    new = parse_config(data)
    return new, misdirected_secrets(new, current, restored)


@pytest.mark.parametrize(
    "patch",
    [{}, {"mqtt": {"keepalive": 60}}, {"mqtt": {"username": "other"}},
     {"cameras": [{"id": "front", "source": "rtsp://admin:***@10.0.0.5:554/s1", "fps_limit": 5}]},
     {"cameras": [{"id": "front", "source": "rtsp://admin:***@10.0.0.5:554/s2"}]}],
)
def test_unchanged_destinations_keep_their_secrets(patch):
    new, problems = submit(patch)
    assert problems == []
    assert new.mqtt.password == "mqtt-secret" and new.api.token == STORED["api"]["token"]
    assert new.cameras[0].source.startswith("rtsp://admin:p@ss@10.0.0.5:554/")


@pytest.mark.parametrize(
    "patch, loc",
    [
        ({"mqtt": {"port": 1884}}, "mqtt.password"),
        ({"mqtt": {"host": "10.6.6.6"}}, "mqtt.password"),
        ({"mqtt": {"tls": {"enabled": True}}}, "mqtt.password"),
        ({"mqtt": {"host": "10.6.6.6", "password": "***"}}, "mqtt.password"),
        ({"cameras": [{"id": "front", "source": "rtsp://admin:***@10.6.6.6:554/s1"}]}, "cameras.0.source"),
        ({"cameras": [{"id": "front", "source": "rtsp://admin:***@10.0.0.5:8554/s1"}]}, "cameras.0.source"),
        ({"cameras": [{"id": "front", "source": "rtsps://admin:***@10.0.0.5:554/s1"}]}, "cameras.0.source"),
        ({"cameras": [{"id": "new", "source": "rtsp://admin:***@10.0.0.5:554/s1"}]}, "cameras.0.source"),
        ({"cameras": [{"id": "front", "source": "rtsp://root:***@10.0.0.5:554/s1"}]}, "cameras.0.source"),
    ],
)
def test_a_new_destination_must_carry_the_secret_again(patch, loc):
    _, problems = submit(patch)
    assert [p.loc for p in problems] == [loc]
    assert "must carry the secret again" in problems[0].msg
    assert "mqtt-secret" not in problems[0].msg and "p@ss" not in problems[0].msg


def test_a_new_destination_with_the_secret_given_is_fine():
    new, problems = submit({"mqtt": {"port": 8883, "password": "mqtt-secret"},
                            "cameras": [{"id": "front", "source": "rtsp://admin:n3w@10.0.0.9/s1"}]})
    assert problems == []
    assert new.mqtt.port == 8883 and new.cameras[0].source == "rtsp://admin:n3w@10.0.0.9/s1"


def test_put_of_the_masked_view_round_trips():
    current = parse_config(STORED)
    data, restored, problems = restore_secrets(redacted_dict(current), current)
    assert problems == [] and parse_config(data) == current
    assert misdirected_secrets(parse_config(data), current, restored) == []
