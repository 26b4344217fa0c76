"""The ``notifications`` section (docs/notifications.md): its form, its secrets masked and kept, and
a write through the API or the broker can never change it (a notification URL must not become a way
to send alerts, snapshots or a secret's signatures somewhere new)."""
import pytest

from edge_app.config.file import ConfigError, merge_patch, parse_config, redacted_dict
from edge_app.config.policy import unsafe_changes
from edge_app.config.remote_policy import broker_problems
from edge_app.config.secrets import restore_secrets

SECRET = "s" * 32
TOKEN = "tk_ntfy_token_123"
BASE = {
    "device_id": "dev1",
    "model": {"path": "m.onnx"},
    "cameras": [{"id": "front", "source": "rtsp://h/1"}, {"id": "back", "source": "rtsp://h/2"}],
    "fleet": {"remote_config": True, "desired_key": "k" * 40},
    "notifications": {"base_url": "https://box.lan:8080/", "targets": [
        {"name": "hook", "type": "webhook", "url": "https://hooks.example/edge", "secret": SECRET},
        {"name": "phone", "type": "ntfy", "url": "https://ntfy.example/doorbell", "token": TOKEN,
         "cameras": ["front"], "cooldown_s": 120, "quiet_hours": {"start": "22:00", "end": "07:00"}},
    ]},
}


def config(patch=None):
    return parse_config(merge_patch(BASE, patch or {}))


def target_problems(target):
    with pytest.raises(ConfigError) as err:
        config({"notifications": {"targets": [target]}})
    return [(p.loc, p.msg) for p in err.value.problems]


def test_the_example_parses():
    notifications = config().notifications
    assert notifications.base_url == "https://box.lan:8080"
    hook, phone = notifications.targets
    assert (hook.type, hook.secret, hook.cooldown_s, hook.cameras, hook.quiet_hours) == ("webhook", SECRET, 60.0, [], None)
    assert (phone.token, phone.cameras, phone.quiet_hours.start, phone.quiet_hours.end) == (TOKEN, ["front"], "22:00", "07:00")


def test_no_targets_by_default():
    assert parse_config({k: v for k, v in BASE.items() if k != "notifications"}).notifications.targets == []


WEBHOOK = {"name": "h", "type": "webhook", "url": "https://hooks.example/x", "secret": SECRET}


@pytest.mark.parametrize("change, loc, words", [
    ({"secret": None}, "notifications.targets.0", "a webhook needs secret"),
    ({"secret": "short"}, "notifications.targets.0", "a webhook needs secret"),
    ({"token": TOKEN}, "notifications.targets.0", "token is for ntfy targets"),
    ({"type": "ntfy"}, "notifications.targets.0", "secret is for webhook targets"),
    ({"type": "email"}, "notifications.targets.0.type", ""),
    ({"url": "ftp://hooks.example/x"}, "notifications.targets.0.url", "http(s)://"),
    ({"url": "https://user:pw@hooks.example/x"}, "notifications.targets.0.url", "without a user name"),
    ({"url": "https://hooks.example/x#frag"}, "notifications.targets.0.url", ""),
    ({"secret": "a" * 20 + " b"}, "notifications.targets.0.secret", "no spaces"),
    ({"name": "a/b"}, "notifications.targets.0.name", ""),
    ({"cameras": ["garage"]}, "notifications.targets.0.cameras.0", "there is no camera 'garage'"),
    ({"cooldown_s": -1}, "notifications.targets.0.cooldown_s", ""),
    ({"retries": 11}, "notifications.targets.0.retries", ""),
    ({"queue_size": 0}, "notifications.targets.0.queue_size", ""),
    ({"quiet_hours": {"start": "22:00", "end": "22:00"}}, "notifications.targets.0.quiet_hours", "the same minute"),
    ({"quiet_hours": {"start": "24:00", "end": "06:00"}}, "notifications.targets.0.quiet_hours.start", "HH:MM"),
    ({"quiet_hours": {"start": "7:00", "end": "06:00"}}, "notifications.targets.0.quiet_hours.start", "HH:MM"),
    ({"retry": 3}, "notifications.targets.0.retry", ""),
])
def test_bad_targets_name_the_field(change, loc, words):
    found = target_problems({**WEBHOOK, **change})
    assert any(where == loc and words in msg for where, msg in found), found


def test_two_targets_of_one_name_are_refused():
    with pytest.raises(ConfigError) as err:
        config({"notifications": {"targets": [WEBHOOK, WEBHOOK]}})
    assert "is used twice" in str(err.value)


def test_the_api_view_masks_target_secrets():
    shown = redacted_dict(config())["notifications"]["targets"]
    assert (shown[0]["secret"], shown[1]["token"]) == ("***", "***")
    assert SECRET not in str(redacted_dict(config())) and TOKEN not in str(redacted_dict(config()))


def test_put_of_the_masked_view_keeps_the_secrets_and_changes_nothing():
    current = config()
    data, restored, problems = restore_secrets(redacted_dict(current), current)
    assert problems == [] and {r.loc for r in restored} >= {"notifications.targets.0.secret",
                                                            "notifications.targets.1.token"}
    new = parse_config(data)
    assert new.notifications == current.notifications
    assert unsafe_changes(current, new, ".") == [] and broker_problems(current, new) == []


ATTACKS = [
    ("the attack: the masked secret sent on to another URL",
     {"notifications": {"targets": [{**WEBHOOK, "name": "hook", "url": "https://attacker.example/x", "secret": "***"}]}}),
    ("a new target that receives every alert", {"notifications": {"targets": [
        BASE["notifications"]["targets"][0], BASE["notifications"]["targets"][1],
        {"name": "evil", "type": "webhook", "url": "https://attacker.example/x", "secret": "e" * 32}]}}),
    ("links pointed elsewhere", {"notifications": {"base_url": "https://attacker.example"}}),
    ("quiet hours that silence every alert", {"notifications": {"targets": [
        {**BASE["notifications"]["targets"][0], "quiet_hours": {"start": "00:00", "end": "23:59"}}]}}),
    ("targets removed", {"notifications": {"targets": []}}),
]


@pytest.mark.parametrize("why, patch", ATTACKS, ids=[why for why, _ in ATTACKS])
def test_no_write_through_the_api_or_the_broker_changes_notifications(why, patch):
    current = config()
    data, _restored, problems = restore_secrets(merge_patch(redacted_dict(current), patch), current)
    new = parse_config(data)
    assert new.notifications != current.notifications
    for refused in (unsafe_changes(current, new, "."), unsafe_changes(current, new, ".", honour_allow_unsafe=False)):
        assert [p.loc for p in refused] == ["notifications"], refused
    assert any(p.loc.startswith("notifications") for p in broker_problems(current, new))


def test_the_api_cannot_change_notifications_even_where_the_file_allows_unsafe_sources():
    current = config({"api": {"allow_unsafe_sources": True}})
    new = config({"api": {"allow_unsafe_sources": True}, "notifications": {"base_url": None}})
    assert [p.loc for p in unsafe_changes(current, new, ".")] == ["notifications"]


def test_the_broker_may_change_review_rules():
    current = config()
    new = config({"review": {"gap_s": 10, "alerts": {"labels": ["person"]}},
                  "cameras": [{"id": "front", "source": "rtsp://h/1", "review": {"alerts": {"labels": ["car"]}}},
                              {"id": "back", "source": "rtsp://h/2"}]})
    assert broker_problems(current, new) == []


@pytest.mark.parametrize("patch, loc, words", [
    ({"base_url": "ftp://box.lan"}, "notifications.base_url", "must be http(s)://"),
    ({"base_url": "javascript:alert(1)"}, "notifications.base_url", "must be http(s)://"),
    ({"base_url": "https://user:pw@box.lan"}, "notifications.base_url", "without a user name"),
    ({"base_url": "https://box.lan/?a=1"}, "notifications.base_url", "query"),
    ({"link_ttl_s": 59}, "notifications.link_ttl_s", ""),
    ({"link_ttl_s": 8 * 86400}, "notifications.link_ttl_s", ""),
    ({"link_key": "k" * 32}, "notifications.link_key", ""),  # the key is the device's, never the file's
])
def test_bad_link_settings_name_the_field(patch, loc, words):
    with pytest.raises(ConfigError) as err:
        config({"notifications": patch})
    assert any(p.loc == loc and words in p.msg for p in err.value.problems), err.value.problems


def test_the_clip_links_live_half_a_day_by_default():
    assert config().notifications.link_ttl_s == 12 * 3600
    assert config({"notifications": {"link_ttl_s": 600}}).notifications.link_ttl_s == 600
