"""What docs/mqtt.md says of each MQTT topic: retained or not, the payload, an example from the publisher's builders.

``docgen.mqtt_topics`` makes the page's tables from :data:`TOPIC_DOCS` (``python scripts/gen_reference.py``):
topic names come from :class:`~edge_app.mqtt.topics.Topics` itself and example payloads from the builders the publisher
uses, so a renamed topic or a changed payload shows up in the page, and a topic of :class:`~edge_app.mqtt.topics.Topics`
missing here fails the suite.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Dict, Optional

import numpy as np

from edge_app.detect.detections import Detections
from edge_app.events.model import END, NEW, OCCUPANCY, UPDATE, Event, EventMessage, Occupancy
from edge_app.config.profile_schedule import ProfileReport
from edge_app.mqtt import payloads
from edge_app.mqtt.profile_commands import profile_error_payload

# Fixed values, so the page is the same on every run.
_TS = 1796290959.25

#: members of Topics that are subscription filters or parse topics, not topics a message goes to
NOT_TOPICS = frozenset({"root", "all_detect_set", "all_detections", "everything",
                        "camera_of", "is_camera_state", "detect_set_camera", "is_detect_state"})


@dataclass(frozen=True)
class TopicDoc:
    """What the page says about one topic of :class:`~edge_app.mqtt.topics.Topics`."""

    retained: str  # "yes", "no" or "subscribed"
    payload: str
    example: Optional[Callable[[], bytes]] = None


def _profile() -> dict:
    return ProfileReport("away", "manual", "2026-12-07T17:00:00+01:00", "2026-12-07T17:00:00+01:00", "home",
                         "Europe/Paris", ["home", "away", "night"]).to_dict()


def _event(**changes: object) -> Event:
    base = dict(id="1796290950.1-front-17", camera_id="front", label="person", track_id=17, score=0.81,
                top_score=0.86, box=(412.0, 188.5, 530.0, 460.0), frame_time=_TS, start_time=1796290950.1,
                current_zones=("driveway",), entered_zones=("driveway",), has_snapshot=True, has_clip=True,
                clip_duration_s=14.15, dwell_s={"driveway": 6.4})
    base.update(changes)
    return Event(**base)  # type: ignore[arg-type]


def _detections() -> bytes:
    found = Detections(np.array([[412.0, 188.5, 530.0, 460.0], [1210.0, 402.0, 1490.0, 611.0]]), np.array([0.86, 0.64]),
                       np.array([0, 2]), labels=("person", "bicycle", "car"), track_id=np.array([17, -1]))
    return payloads.encode(payloads.detections_payload("edge-01", "front", 5310, _TS, 1920, 1080, 41.7, found))


def _stats() -> bytes:
    return payloads.encode(payloads.stats_payload(
        "edge-01", fps=14.8, latency_ms={"p50": 41.2, "p99": 63.0}, queue=0, dropped=12, ts=_TS,
        cameras={"front": {"fps": 14.8, "state": "streaming", "frames_dropped": 12, "model": "default"},
                 "yard": {"fps": 10.0, "state": "streaming", "frames_dropped": 0, "model": "default",
                          "recording_encoder": "x264", "recording_masked_packets_dropped": 0}}))


def _health() -> bytes:
    from edge_app.health import report as h

    zones = [h.ThermalZone("CPU-therm", 61.3, [h.TripPoint("passive", 99.0), h.TripPoint("critical", 104.5)]),
             h.ThermalZone("GPU-therm", h.unavailable("sensor powered off"))]
    sample = h.HealthReport(
        ts=_TS, uptime_s=8421.5,
        problems=[h.Problem("disk_full", "recordings", "disk of recordings 93.1 % full (limit 90 %)", 93.1, 90.0)],
        cpu=h.CpuReport(cores=6, load_1m=1.2, load_percent=23.5, freq_mhz=1510.4, temperature_c=61.3),
        memory=h.MemoryReport(total_mb=7617.5, used_mb=3120.2, used_percent=41.0, swap_used_mb=0.0, shared_with_gpu=True),
        disk=[h.DiskReport("recordings", 119234.0, 8231.5, 93.1)],
        gpu=[h.GpuReport(0, "NVIDIA Orin Nano Developer Kit", "jetson", 71.2, 624.8, h.unavailable("sensor powered off"),
                         *(h.unavailable("shared with the CPU (see memory)"),) * 2,
                         *(h.unavailable("not reported by an integrated GPU"),) * 5)],
        thermal=h.ThermalReport(zones, 61.3, False, 0, 0.0, h.FanReport(37.3, 1720.0)),
        power=h.PowerReport("15W", 0.0, [h.PowerRail("VDD_IN", 5.032, 1.412, 7.105)], 7.105), sample_ms=1.9)
    return payloads.encode(dataclasses.replace(sample, summary=h.summarise(sample)).to_dict())


def _events() -> bytes:
    before = _event(current_zones=(), entered_zones=(), score=0.79, top_score=0.79, has_snapshot=False,
                    clip_duration_s=13.1, dwell_s={})
    return payloads.encode(EventMessage(type=UPDATE, before=before, after=_event()).to_dict())


def _reviews() -> bytes:
    from edge_app.review.feed import ReviewMessage
    from edge_app.review.model import ALERT, ReviewItem

    after = ReviewItem(id="1796290950.1-front-17", camera_id="front", start_time=1796290950.1, end_time=_TS,
                       labels=("person", "car"), zones=("driveway",),
                       event_ids=("1796290950.1-front-17", "1796290952.4-front-18"), severity=ALERT)
    before = dataclasses.replace(after, end_time=None)
    return payloads.encode(ReviewMessage(END, before, after).to_dict())


def _zone_stats():
    from edge_app.events.zone_stats import ZoneStats

    return ZoneStats(occupancy=3, mean_dwell_s=42.7, visits_last_hour=18, loitering=1, max_objects=2, over_capacity=True)


TOPIC_DOCS: Dict[str, TopicDoc] = {
    "status": TopicDoc("yes", '`{"state": "online" | "offline", "device_id", "version", "ts"}`: the birth message; the '
                              "last will and a clean shutdown publish `offline`",
                       lambda: payloads.encode(payloads.status_payload("online", "edge-01", "1.4.0", _TS))),
    "stats": TopicDoc("no", "periodic pipeline figures, every `mqtt.stats_interval_s`: `fps`, `latency_ms` "
                            "(`p50`, `p99`), `queue` (MQTT messages waiting), `dropped` (frames), per camera (with its `model`)",
                      _stats),
    "health": TopicDoc("yes", '`{"ts", "uptime_s", "problems": [{"kind", "subject", "message", "value", "limit"}], '
                              '"cpu", "memory", "disk", "gpu", "thermal", "power", "summary"}` every `health.publish_s` '
                              "and when the problems change; a figure or section that is unavailable is a string "
                              '`"unavailable: <why>"` ([device health](health.md))', _health),
    "camera_detections": TopicDoc("no", "one message per analysed frame (with no detections only when "
                                        "`mqtt.publish_empty`); `bbox` is `[x1, y1, x2, y2]` in source pixels; "
                                        "`track_id` with `tracking.enabled` (-1 until the track is confirmed)",
                                  _detections),
    "camera_state": TopicDoc("yes", "the camera's state: `connecting`, `streaming`, `reconnecting`, `stopped` or "
                                    "`error`, with the last error (credentials masked)",
                             lambda: payloads.encode(payloads.camera_state_payload("streaming", None, _TS))),
    "events": TopicDoc("no", '`{"type": "new" | "update" | "end", "before", "after"}` with event objects; '
                             "`update` at most once a second per event; an event's own `type` is `object`, "
                             "`loitering` or `occupancy` ([the event object](#the-event-object))", _events),
    "reviews": TopicDoc("no", '`{"type": "new" | "update" | "end", "before", "after"}` with review items: a camera\'s '
                              "events grouped by `review.gap_s`, `severity` by `review.alerts`; sent when the item "
                              "changes, not on every event update ([review](review.md))", _reviews),
    "camera_review_alerts": TopicDoc("yes", "the camera's alerts not yet marked reviewed (review items of the event "
                                            "database); sent at start, when an alert begins or ends, and when items are "
                                            "marked ([review](review.md))",
                                     lambda: payloads.encode(payloads.review_alerts_payload(3, _TS))),
    "camera_objects": TopicDoc("yes", "objects of that label in view now (0 once they leave); `model` is the "
                                      "camera's model (`cameras[].model`), whose label it is",
                               lambda: payloads.encode(payloads.count_payload(2, _TS))),
    "zone_objects": TopicDoc("yes", "objects of that label in the zone now; `model`: the zone's camera's model",
                             lambda: payloads.encode(payloads.count_payload(1, _TS))),
    "zone": TopicDoc("yes", "the zone's figures, sent when one changes: `occupancy` (objects of its labels inside now), "
                            "`mean_dwell_s` (mean time in the zone of the visits that ended in the last hour; null "
                            "when none did) and `visits_last_hour`, `loitering` (objects inside longer than its "
                            "`loitering_s` now), `max_objects` and `over_capacity` (more objects inside than that: "
                            "the occupancy alert); `model`: the zone's camera's model "
                            "([analytics](analytics.md#dwell-and-loitering))",
                     lambda: payloads.encode(payloads.zone_stats_payload(_zone_stats(), _TS))),
    "camera_line": TopicDoc("yes", "crossings since the counts were reset, kept across restarts; `model`: "
                                   "the camera's model",
                            lambda: payloads.encode(payloads.line_count_payload(41, 38, _TS))),
    "camera_line_crossing": TopicDoc("no", "one crossing; `event_id` is null when the object is no event (yet); "
                                            "`model`: the camera's model. A crossing that completes a speed "
                                            "line pair's passage adds `speed_kmh`, `speed_mph` (pairs with "
                                            "`unit: mph`), `from_line`, `max_kmh` and `speed_alert` "
                                            "([analytics](analytics.md#speed))",
                                     lambda: payloads.encode(payloads.line_crossing_payload(
                                         "1796290950.1-front-17", 17, "person", "in", _TS))),
    "camera_detect_state": TopicDoc("yes", "`ON` or `OFF`: whether the camera is analysed",
                                    lambda: payloads.detect_state_payload(True)),
    "camera_motion": TopicDoc("yes", "`ON` or `OFF`: whether something moves in the camera (cameras with motion gating "
                                     "on; `OFF` when gating is switched off); the camera is analysed while `ON`, while it "
                                     "has tracked objects, and every `motion.keepalive_s`",
                              lambda: payloads.motion_payload(True)),
    "camera_detect_set": TopicDoc("subscribed", "`ON` or `OFF` (case and spaces forgiven; anything else is ignored): "
                                                "analysis of that camera on or off, saved like a configuration change",
                                  lambda: b"OFF"),
    "camera_label_snapshot": TopicDoc("yes", "raw JPEG bytes: the best snapshot of the latest event of that label"),
    "profile": TopicDoc("yes", '`{"active", "source", "hold_until", "next_boundary", "next_profile", "timezone", '
                               '"profiles"}`: the profile in force and why (`manual` until `hold_until`, `schedule`, '
                               '`switched`, `default`), sent at start and after every change ([profiles](profiles.md))',
                        lambda: payloads.encode(_profile())),
    "profile_set": TopicDoc("subscribed", "the name of a profile as plain text (what a Home Assistant select sends): "
                                          "switched on until the next scheduled boundary; a retained command, or "
                                          "anything not a profile of the appliance, is refused on `R/profile/error`",
                            lambda: b"away"),
    "profile_error": TopicDoc("no", '`{"error", "ts"}`: why an `R/profile/set` command was refused (at most one '
                                    'a second)', lambda: payloads.encode(profile_error_payload(
                                        "there is no profile 'party' (profiles: home, away, night)", _TS))),
    "config_desired": TopicDoc("subscribed", "the fleet's desired configuration: a version and an RFC 7396 merge "
                                             "patch, applied with the rules of `PATCH /api/v1/config`; from the "
                                             "fleet service also its epoch, issue time and signature "
                                             "([fleet](fleet.md#desired-and-reported-configuration))",
                               lambda: payloads.encode(payloads.config_desired_payload(
                                   7, {"model": {"conf_threshold": 0.35}}))),
    "config_reported": TopicDoc("yes", "the outcome of the latest desired version acted on, or (`\"version\": null`, "
                                       "`refused`: how many) of refused unauthenticated messages, at most one such "
                                       "report every 5 s; with fleet models "
                                       "(a model with an `artifact`) also `models_state`, published again when it changes "
                                       "([fleet](fleet.md#models-and-engines-over-the-air))",
                                lambda: payloads.encode(payloads.config_reported_payload(
                                    8, "rejected", [{"loc": "cameras.0.fps_limit",
                                                     "msg": "Input should be greater than or equal to 0"}], _TS))),
}


def occupancy_event_example() -> str:
    """The ``new`` message of an occupancy event (docs/analytics.md, "Dwell and loitering"), compact JSON."""
    event = _event(id="1796290958.850000-front-occupancy-driveway", track_id=-1, score=0.62, top_score=0.62,
                   box=(212.0, 160.5, 1105.0, 702.0), start_time=1796290958.85, frame_time=1796290958.85,
                   clip_duration_s=0.0, dwell_s={}, type=OCCUPANCY,
                   occupancy=Occupancy({"person": 3}, peak_objects=3, max_objects=2))
    return payloads.encode(EventMessage(type=NEW, after=event).to_dict()).decode("utf-8")


def event_object_example() -> str:
    """One event object (as in ``R/events`` and ``GET /api/v1/events``), compact JSON."""
    return payloads.encode(_event().to_dict()).decode("utf-8")

