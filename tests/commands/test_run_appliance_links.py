"""``edge-app run`` makes the notifications' link key at the first start that needs it, in the state
directory (the working directory), and keeps it; an appliance that sends no links makes none."""
import os
import stat

import pytest

from edge_app.commands.run_appliance import notification_links
from edge_app.config.file import merge_patch, parse_config
from edge_app.notify.clip_links import KEY_FILE_NAME

BASE = {"device_id": "dev1", "model": {"path": "m.onnx"}, "cameras": [{"id": "front", "source": "test://bars"}]}
HOOK = {"name": "hook", "type": "webhook", "url": "https://hooks.example/in", "secret": "s" * 32}


@pytest.mark.parametrize("notifications, makes_key", [
    ({"base_url": "https://box.lan:8080", "targets": [HOOK]}, True),
    ({"targets": [HOOK]}, False),  # no base URL: notifications carry no links
    ({"base_url": "https://box.lan:8080"}, False),  # no target: nothing is sent
    ({}, False),
])
def test_the_key_is_made_only_where_links_go_out(tmp_path, monkeypatch, notifications, makes_key):
    monkeypatch.chdir(tmp_path)
    links = notification_links(parse_config(merge_patch(BASE, {"notifications": notifications})))
    assert (links is not None) == makes_key == (tmp_path / KEY_FILE_NAME).exists()


def test_the_key_outlives_a_restart_and_is_the_services_alone(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = parse_config(merge_patch(BASE, {"notifications": {"base_url": "https://box.lan:8080", "targets": [HOOK]}}))
    first = notification_links(config).link("https://box.lan:8080", "1700000000.000000-front-1", 600, now_s=1e9)
    again = notification_links(config).link("https://box.lan:8080", "1700000000.000000-front-1", 600, now_s=1e9)
    assert first == again  # links sent before a restart still open
    assert stat.S_IMODE(os.stat(tmp_path / KEY_FILE_NAME).st_mode) == 0o600
    key = (tmp_path / KEY_FILE_NAME).read_bytes()
    assert key.hex() not in config.model_dump_json() and "link_key" not in config.notifications.model_dump()
