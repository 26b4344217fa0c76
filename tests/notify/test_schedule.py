"""When a target is told: quiet hours in local time, a cooldown per target and camera, its cameras."""
import dataclasses

import pytest

from edge_app.config.schema_notify import NotificationsConfig, NotifyTargetConfig, QuietHoursConfig
from edge_app.events.model import END, NEW, Event, EventMessage
from edge_app.notify.notifier import Notifier
from edge_app.notify.schedule import in_quiet_hours
from edge_app.review.live import LiveReview
from edge_app.review.model import AlertRule


def minute(hhmm):
    hours, minutes = hhmm.split(":")
    return int(hours) * 60 + int(minutes)


QUIET = [
    # (start, end, local time, quiet)
    ("22:00", "07:00", "21:59", False),
    ("22:00", "07:00", "22:00", True),
    ("22:00", "07:00", "23:59", True),
    ("22:00", "07:00", "00:00", True),
    ("22:00", "07:00", "06:59", True),
    ("22:00", "07:00", "07:00", False),
    ("09:00", "17:30", "08:59", False),
    ("09:00", "17:30", "09:00", True),
    ("09:00", "17:30", "17:29", True),
    ("09:00", "17:30", "17:30", False),
    ("00:00", "23:59", "23:59", False),
    ("23:59", "00:00", "23:59", True),
    ("23:59", "00:00", "00:00", False),
]


@pytest.mark.parametrize("start, end, now, quiet", QUIET)
def test_quiet_hours(start, end, now, quiet):
    assert in_quiet_hours(QuietHoursConfig(start=start, end=end), minute(now)) is quiet


def test_no_quiet_hours_is_never_quiet():
    assert not any(in_quiet_hours(None, m) for m in range(1440))


class Clock:
    def __init__(self):
        self.now_s = 0.0
        self.minute = minute("12:00")


def run(targets, alerts):
    """Deliveries per target for ``alerts``: (seconds from start, camera, local time). Sends through a
    transport that records the requests; the HTTP side is tested against real receivers elsewhere."""
    clock, sent = Clock(), []
    config = NotificationsConfig(targets=[NotifyTargetConfig(**t) for t in targets])
    found = Notifier(config, "dev1", LiveReview(lambda: 0.0, lambda _c: AlertRule()),
                     transport=lambda request, _timeout_s: sent.append(request) or 200,
                     monotonic=lambda: clock.now_s, local_minute=lambda: clock.minute)
    for index, (at_s, camera, local) in enumerate(alerts):
        clock.now_s, clock.minute = at_s, minute(local)
        each = Event(id=f"{index}-{camera}", camera_id=camera, label="person", track_id=index, score=0.9,
                     top_score=0.9, box=(0, 0, 1, 1), frame_time=at_s, start_time=at_s)
        found.on_event(EventMessage(NEW, each))
        found.on_event(EventMessage(END, dataclasses.replace(each, end_time=at_s), each))
    return {status.name: (status.queued, status.suppressed_quiet, status.suppressed_cooldown)
            for status in found.status().targets}


HOOK = {"name": "hook", "type": "webhook", "url": "http://127.0.0.1:9/x", "secret": "s" * 16}

COOLDOWN = [
    ("cooldown holds back the same camera", {"cooldown_s": 60}, [(0, "a", "12:00"), (30, "a", "12:00")], (1, 0, 1)),
    ("after the cooldown it goes out again", {"cooldown_s": 60}, [(0, "a", "12:00"), (60, "a", "12:01")], (2, 0, 0)),
    ("each camera has its own cooldown", {"cooldown_s": 60}, [(0, "a", "12:00"), (1, "b", "12:00")], (2, 0, 0)),
    ("no cooldown", {"cooldown_s": 0}, [(0, "a", "12:00"), (0.1, "a", "12:00")], (2, 0, 0)),
    ("quiet hours hold back everything", {"quiet_hours": {"start": "22:00", "end": "07:00"}},
     [(0, "a", "23:00"), (100, "b", "06:59")], (0, 2, 0)),
    ("an alert in quiet hours starts no cooldown", {"cooldown_s": 600, "quiet_hours": {"start": "22:00", "end": "07:00"}},
     [(0, "a", "06:59"), (60, "a", "07:00")], (1, 1, 0)),
    ("only its cameras", {"cameras": ["b"]}, [(0, "a", "12:00"), (100, "b", "12:00")], (1, 0, 0)),
]


@pytest.mark.parametrize("what, settings, alerts, expected", COOLDOWN, ids=[row[0] for row in COOLDOWN])
def test_cooldown_quiet_hours_and_cameras(what, settings, alerts, expected):
    assert run([{**HOOK, **settings}], alerts)["hook"] == expected


def test_targets_keep_cooldowns_of_their_own():
    found = run([{**HOOK, "cooldown_s": 60}, {**HOOK, "name": "other", "cooldown_s": 0}],
                [(0, "a", "12:00"), (10, "a", "12:00")])
    assert found == {"hook": (1, 0, 1), "other": (2, 0, 0)}
