"""The device's link key (made once, 0600, never in the configuration) and the links it signs."""
import os
import stat
import time

import pytest

from edge_app.notify.clip_links import KEY_BYTES, ClipLinks, LinkKeyError, clip_path, load_or_create_key

EVENT_ID = "1700000000.000000-front-1"


def test_the_key_is_made_at_first_start_readable_only_by_the_service_and_kept(tmp_path):
    path = tmp_path / "state" / "notify-link.key"
    first = load_or_create_key(path)
    assert len(first) == KEY_BYTES and stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert load_or_create_key(path) == first  # the next start: the same key, links sent before still work
    assert load_or_create_key(tmp_path / "other.key") != first  # random per device
    assert [p.name for p in path.parent.iterdir()] == ["notify-link.key"]  # no temp file left


@pytest.mark.parametrize("content", [b"", b"short", b"x" * (KEY_BYTES + 1)])
def test_a_key_file_that_is_not_a_key_is_a_clear_error(tmp_path, content):
    path = tmp_path / "notify-link.key"
    path.write_bytes(content)
    with pytest.raises(LinkKeyError, match="delete it and restart"):
        load_or_create_key(path)


def test_a_link_checks_under_its_key_until_it_expires():
    links, now = ClipLinks(b"k" * KEY_BYTES), time.time()
    link = links.link("https://box.lan:8080/", EVENT_ID, 600, now_s=now)
    assert link.url.startswith("https://box.lan:8080" + clip_path(EVENT_ID) + "?expires=")
    query = dict(part.split("=") for part in link.url.split("?")[1].split("&"))
    assert links.refusal(EVENT_ID, query["expires"], query["sig"], 600, now_s=now) is None
    assert "expired" in links.refusal(EVENT_ID, query["expires"], query["sig"], 600, now_s=now + 601)
    assert "not valid" in links.refusal("1700000000.000000-front-2", query["expires"], query["sig"], 600, now_s=now)
    assert "not valid" in ClipLinks(b"j" * KEY_BYTES).refusal(EVENT_ID, query["expires"], query["sig"], 600, now_s=now)
    assert "malformed" in links.refusal(EVENT_ID, "soon", query["sig"], 600, now_s=now)
