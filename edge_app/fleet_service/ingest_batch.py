"""Turning a batch of heard messages into a few statements in one transaction.

Most of what appliances send replaces what came before (status, camera state, stats, counts,
the latest version of an event), so a batch keeps only the newest per key and writes each
table with one ``executemany``: at a thousand appliances that is what keeps the database and
the fleet's CPU out of the way. Reported configuration is the exception: every report is kept
in order, because it settles rollouts, and a report of a version this fleet never issued is
ignored (and remembered as such) rather than trusted.
"""
from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from edge_app.finite_json import dumps_finite
from edge_app.fleet_service import messages as m
from edge_app.fleet_service.db import Connection
from edge_app.fleet_service.device_health import health_row
from edge_app.fleet_service.model_state import parse_models_state

logger = logging.getLogger(__name__)

CAMERA_STATES = frozenset({"connecting", "streaming", "reconnecting", "stopped", "error"})
MAX_TEXT_CHARS = 1024


@dataclass
class BatchResult:
    """What one batch did; the ingest adds these up for /metrics and the benchmark."""

    messages: int = 0
    events: int = 0
    rejected: int = 0
    failed: int = 0  # refused by the database, dropped
    unissued: int = 0  # reports of versions this fleet never issued, ignored
    reasons: List[str] = field(default_factory=list)

    def add(self, other: "BatchResult") -> None:
        self.messages += other.messages
        self.events += other.events
        self.rejected += other.rejected
        self.failed += other.failed
        self.unissued += other.unissued
        self.reasons.extend(other.reasons[:max(0, 5 - len(self.reasons))])


def _number(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _text(value: Any, limit: int = MAX_TEXT_CHARS) -> Optional[str]:
    return value[:limit] if isinstance(value, str) else None


@dataclass
class _Plan:
    """The newest of each kind per key, and every report in order."""

    ensure: Dict[str, float] = field(default_factory=dict)
    touch: Dict[str, float] = field(default_factory=dict)
    status: Dict[str, Tuple] = field(default_factory=dict)
    cameras: Dict[Tuple[str, str], Tuple] = field(default_factory=dict)
    stats: Dict[str, Tuple] = field(default_factory=dict)
    counts: Dict[Tuple[str, str], Tuple] = field(default_factory=dict)
    events: Dict[Tuple[str, str], Tuple] = field(default_factory=dict)
    reported: List[Tuple] = field(default_factory=list)
    health: Dict[str, Tuple] = field(default_factory=dict)
    models_state: Dict[str, Tuple] = field(default_factory=dict)


def _plan_one(plan: _Plan, heard: m.Heard, body: Any) -> None:
    dev = heard.device_id
    if heard.kind == m.STATUS:
        state = body.get("state")
        if state not in ("online", "offline"):
            raise ValueError(f"status state {state!r} is neither online nor offline")
        models_state = _models_state(body)
        plan.status[dev] = (state, _text(body.get("version"), 64), _number(body.get("ts")), dev)
        _plan_models_state(plan, heard, models_state)
    elif heard.kind == m.CAMERA_STATE:
        state = body.get("state")
        if state not in CAMERA_STATES:
            raise ValueError(f"camera state {state!r} is unknown")
        plan.cameras[(dev, heard.key)] = (dev, heard.key, state, _text(body.get("error")), _number(body.get("ts")))
    elif heard.kind == m.STATS:
        plan.stats[dev] = (dumps_finite(body), heard.received_s, dev)
    elif heard.kind == m.COUNT:
        plan.counts[(dev, heard.key)] = (dev, heard.key, dumps_finite(body), _number(body.get("ts")))
    elif heard.kind == m.EVENT:
        event = body.get("after")
        if not isinstance(event, dict) or not isinstance(event.get("id"), str) or not 0 < len(event["id"]) <= 128:
            raise ValueError("an event message needs an 'after' object with a string 'id'")
        for name in ("start_time", "end_time", "frame_time"):
            when = _number(event.get(name))
            if when is not None and when > heard.received_s + m.MAX_FUTURE_S:
                raise ValueError(f"the event's {name} is more than {m.MAX_FUTURE_S / 3600:g} hours in the future")
        zones = event.get("entered_zones")
        zones = [z for z in zones if isinstance(z, str)] if isinstance(zones, list) else []
        stored = dict(event, device_id=dev)
        plan.events[(dev, event["id"])] = (
            dev, event["id"], _text(event.get("camera_id"), 64), _text(event.get("label"), 128),
            _number(event.get("start_time")), _number(event.get("end_time")), json.dumps(zones),
            dumps_finite(stored), heard.received_s)
    elif heard.kind == m.HEALTH:
        plan.health[dev] = health_row(dev, body, heard.received_s)
    elif heard.kind == m.REPORTED:
        version, status = body.get("version"), body.get("status")
        if not isinstance(version, int) or isinstance(version, bool) or not 0 <= version <= m.MAX_INT:
            raise ValueError("a reported config needs an integer 'version' from 0 to 2^53")
        if status not in ("applied", "rejected"):
            raise ValueError(f"reported status {status!r} is neither applied nor rejected")
        errors = body.get("errors") if isinstance(body.get("errors"), list) else []
        models_state = _models_state(body)
        plan.reported.append((dev, version, status, json.dumps(errors[:100]), _number(body.get("ts")) or heard.received_s))
        _plan_models_state(plan, heard, models_state)
    else:
        raise ValueError(f"the fleet does not keep {heard.kind} messages")


def _models_state(body: Dict[str, Any]) -> Optional[Dict[str, Dict[str, Any]]]:
    """The checked ``models_state`` of a message, None when it has none; ValueError before anything
    of the message is planned, so a refused message changes nothing."""
    return parse_models_state(body["models_state"]) if "models_state" in body else None


def _plan_models_state(plan: _Plan, heard: m.Heard, state: Optional[Dict[str, Dict[str, Any]]]) -> None:
    """The newest ``models_state`` of a device, from whichever of its messages carried one last."""
    if state is not None:
        plan.models_state[heard.device_id] = (json.dumps(state), heard.received_s, heard.device_id)


def check_message(heard: m.Heard) -> Dict[str, Any]:
    """The payload of ``heard`` parsed and checked by the rules of its kind; ValueError naming what is wrong.

    What the MQTT thread asks before a message is charged to its device's budget and queued:
    only a message that passes is well-formed.
    """
    body = m.decode(heard)
    _plan_one(_Plan(), heard, body)
    return body


def plan_batch(batch: Sequence[m.Heard], result: BatchResult) -> _Plan:
    plan = _Plan()
    for heard in batch:
        result.messages += 1
        try:
            _plan_one(plan, heard, heard.body if heard.body is not None else m.decode(heard))
        except ValueError as err:
            result.rejected += 1
            if len(result.reasons) < 5:
                result.reasons.append(f"{heard.kind} from {heard.device_id}: {err}")
            continue
        plan.ensure.setdefault(heard.device_id, heard.received_s)
        # A retained message says nothing about when the device was last heard from.
        if not heard.retained:
            plan.touch[heard.device_id] = max(heard.received_s, plan.touch.get(heard.device_id, 0.0))
        if heard.kind == m.EVENT:
            result.events += 1
    return plan


def write_plan(conn: Connection, plan: _Plan) -> int:
    """All of a batch in one transaction; returns how many reports were of versions never issued."""
    with conn.transaction():
        conn.executemany(
            "INSERT INTO devices (device_id, first_seen, last_seen) VALUES (?, ?, ?) ON CONFLICT (device_id) DO NOTHING",
            [(dev, ts, ts) for dev, ts in plan.ensure.items()])
        conn.executemany(
            "UPDATE devices SET last_seen = CASE WHEN ? > last_seen THEN ? ELSE last_seen END WHERE device_id = ?",
            [(ts, ts, dev) for dev, ts in plan.touch.items()])
        conn.executemany(
            "UPDATE devices SET state = ?, version = COALESCE(?, version), status_ts = ? WHERE device_id = ?",
            plan.status.values())
        conn.executemany("UPDATE devices SET online_at = ? WHERE device_id = ? AND online_at IS NULL",
                         [(plan.touch.get(dev) or plan.ensure[dev], dev)
                          for dev, (state, *_rest) in plan.status.items() if state == "online"])
        conn.executemany(
            "INSERT INTO cameras (device_id, camera_id, state, error, ts) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (device_id, camera_id) DO UPDATE SET state = excluded.state, error = excluded.error, ts = excluded.ts",
            plan.cameras.values())
        conn.executemany("UPDATE devices SET stats = ?, stats_ts = ? WHERE device_id = ?", plan.stats.values())
        conn.executemany(
            "INSERT INTO counts (device_id, topic, payload, ts) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (device_id, topic) DO UPDATE SET payload = excluded.payload, ts = excluded.ts",
            plan.counts.values())
        conn.executemany(
            "INSERT INTO events (device_id, event_id, camera_id, label, start_time, end_time, entered_zones, body, received_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (device_id, event_id) DO UPDATE SET "
            "camera_id = excluded.camera_id, label = excluded.label, start_time = excluded.start_time, "
            "end_time = excluded.end_time, entered_zones = excluded.entered_zones, body = excluded.body, "
            "received_at = excluded.received_at",
            plan.events.values())
        conn.executemany(
            "INSERT INTO health (device_id, body, problems, problem_count, temperature_c, ts, received_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (device_id) DO UPDATE SET body = excluded.body, "
            "problems = excluded.problems, problem_count = excluded.problem_count, "
            "temperature_c = excluded.temperature_c, ts = excluded.ts, received_at = excluded.received_at",
            plan.health.values())
        conn.executemany("UPDATE devices SET models_state = ?, models_state_ts = ? WHERE device_id = ?",
                         plan.models_state.values())
        return sum(not _settle(conn, dev, version, status, errors, ts) for dev, version, status, errors, ts in plan.reported)


def _settle(conn: Connection, dev: str, version: int, status: str, errors: str, ts: float) -> bool:
    """Record a report and settle the rollouts it answers; False for a version never issued.

    The desired patch of version N carries every patch still pending below it (see
    :mod:`edge_app.fleet_service.rollouts`), so a report of N settles them all with N's outcome, timed
    out ones too (a late answer is still the answer). An older or repeated report changes
    nothing, as on the appliance. A version above the last one issued to the device is kept
    aside (``unissued_version``, shown by the API) and moves nothing: anyone on the broker can
    claim any version, and the next version issued is the fleet's own count plus one.
    """
    row = conn.query_one("SELECT desired_version FROM devices WHERE device_id = ?", (dev,))
    if row is None or version > int(row[0]):
        conn.execute("UPDATE devices SET unissued_version = ?, unissued_ts = ? WHERE device_id = ?", (version, ts, dev))
        return False
    conn.execute(
        "UPDATE devices SET reported_version = ?, reported_status = ?, reported_errors = ?, reported_ts = ? "
        "WHERE device_id = ? AND reported_version <= ?",
        (version, status, errors, ts, dev, version))
    conn.execute(
        "UPDATE rollout_devices SET status = ?, errors = ?, updated_at = ? "
        "WHERE device_id = ? AND version <= ? AND status IN ('pending', 'timed_out')",
        (status, errors, ts, dev, version))
    return True
