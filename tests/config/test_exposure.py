"""When a configuration needs a token: its own api.host, and every address the API listens on now."""
import pytest

from edge_app.config.exposure import exposed_hosts, token_problems, usable_token
from edge_app.config.file import parse_config

TOKEN = "a-token-of-24-characters"


def config(host="127.0.0.1", token=None, enabled=True):
    return parse_config({"cameras": [{"id": "a", "source": "test://bars"}], "model": {"path": "m.onnx"},
                         "api": {"host": host, "token": token, "enabled": enabled}})


@pytest.mark.parametrize(
    "api, listening, refused",
    [
        ({}, (), False),  # not started (check-config, tests): the configuration alone decides
        ({}, ("127.0.0.1",), False),
        ({}, ("127.0.0.2",), False),
        ({}, ("::1",), False),
        ({}, ("::ffff:127.0.0.1",), False),
        ({"host": "localhost"}, ("127.0.0.1", "::1"), False),
        ({}, ("10.99.0.1",), True),  # the attack: host moved to loopback, listener still on the LAN
        ({}, ("0.0.0.0",), True),
        ({}, ("",), True),
        ({}, ("::",), True),
        ({}, ("::ffff:10.99.0.1",), True),
        ({}, ("fe80::1",), True),
        ({}, ("127.0.0.1", "192.0.2.2"), True),  # any one listener off loopback is enough
        ({"enabled": False}, ("10.99.0.1",), True),  # the listener stays until the restart
        ({"token": "short"}, ("10.99.0.1",), True),
        ({"token": "short"}, ("127.0.0.1",), False),
        ({"token": TOKEN}, ("10.99.0.1",), False),
        ({"token": TOKEN}, ("0.0.0.0", "::"), False),
        ({"host": "0.0.0.0", "token": TOKEN}, (), False),
    ],
)
def test_a_token_is_needed_while_any_listener_is_off_loopback(api, listening, refused):
    problems = token_problems(config(**api), listening)
    assert [p.loc for p in problems] == (["api.token"] if refused else [])
    if refused:
        assert "listens on" in problems[0].msg


@pytest.mark.parametrize("host", ["0.0.0.0", "10.99.0.1", "::", ""])
@pytest.mark.parametrize("token", [None, "", "short"])
def test_a_new_host_off_loopback_needs_a_token_whatever_listens_now(host, token):
    # The schema refuses these on its own; the rule holds for a configuration built without it too.
    valid = config()
    unchecked = valid.model_copy(update={"api": valid.api.model_copy(update={"host": host, "token": token})})
    assert [p.loc for p in token_problems(unchecked, ("127.0.0.1",))] == ["api.token"]


def test_a_disabled_api_with_nothing_listening_needs_no_token():
    valid = config(enabled=False)
    unchecked = valid.model_copy(update={"api": valid.api.model_copy(update={"host": "0.0.0.0"})})
    assert token_problems(unchecked, ()) == []


def test_exposed_hosts_and_usable_token():
    assert exposed_hosts(["127.0.0.1", "0.0.0.0", "::1", "192.0.2.2", "localhost"]) == ["0.0.0.0", "192.0.2.2"]
    assert [usable_token(t) for t in (None, "", "x" * 15, "x" * 16)] == [False, False, False, True]
