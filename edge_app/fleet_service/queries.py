"""What the fleet's REST API reads: devices, their cameras, stats and counts, events, rollouts."""
from __future__ import annotations

import dataclasses
import json
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from edge_app.events.query import EventQuery
from edge_app.events.query_sql import EventColumns, event_filter
from edge_app.fleet_service.db import Connection
from edge_app.fleet_service.model_state import MODEL_STATES, rollout_model_state

#: ``GET /api/v1/devices`` answers this many devices when no ``limit`` is asked for, and never more than MAX.
DEFAULT_PAGE = 1000
MAX_PAGE = 10_000
ROLLOUT_STATES = ("pending", "applied", "rejected", "timed_out", "cancelled")

_DEVICE_COLUMNS = ("device_id, state, version, last_seen, first_seen, desired_version, reported_version, "
                   "reported_status, reported_errors, reported_ts, models_state")


@dataclass(frozen=True)
class CameraSummary:
    id: str
    state: str
    error: Optional[str]


@dataclass(frozen=True)
class ConfigState:
    """Where a device's configuration stands: ``pending`` while a desired version is unanswered."""

    desired_version: int
    reported_version: int
    status: Optional[str]


@dataclass(frozen=True)
class HealthState:
    """A device's latest ``R/health`` as the list shows it: its problem kinds and hottest temperature."""

    problems: List[str]
    temperature_c: Optional[float]
    ts: Optional[float]


@dataclass(frozen=True)
class DeviceSummary:
    """One device as ``GET /api/v1/devices`` lists it (docs/rest-api.md, "Fleet service")."""

    device_id: str
    state: str
    version: Optional[str]
    last_seen: float
    first_seen: float
    cameras: List[CameraSummary]
    config: ConfigState
    health: Optional[HealthState] = None  # None until the device sent R/health
    models_state: Dict[str, Any] = field(default_factory=dict)  # its latest reported models_state, checked

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class DeviceDetail:
    """``GET /api/v1/devices/<id>``: the summary with its latest stats, counts and rollouts."""

    summary: DeviceSummary
    config_errors: List[Dict[str, Any]]
    reported_at: Optional[float]
    stats: Optional[Dict[str, Any]]
    stats_received_at: Optional[float]
    counts: Dict[str, Dict[str, Any]]
    rollouts: List[Dict[str, Any]] = field(default_factory=list)
    unissued_version: Optional[int] = None  # the last version reported that this fleet never issued
    health_report: Optional[Dict[str, Any]] = None  # the latest R/health as the device sent it
    models_state_at: Optional[float] = None

    def to_dict(self) -> Dict[str, Any]:
        body = self.summary.to_dict()
        body["config"].update(errors=self.config_errors, reported_at=self.reported_at,
                              unissued_version=self.unissued_version)
        body.update(stats=self.stats, stats_received_at=self.stats_received_at, counts=self.counts,
                    rollouts=self.rollouts, health_report=self.health_report, models_state_at=self.models_state_at)
        return body


def _config_status(desired: int, reported: int, status: Optional[str]) -> Optional[str]:
    if desired > reported:
        return "pending"
    return status


def _device(row: tuple, cameras: List[CameraSummary]) -> DeviceSummary:
    dev, state, version, last_seen, first_seen, desired, reported, status, _errors, _ts, models_state = row
    config = ConfigState(int(desired), int(reported), _config_status(int(desired), int(reported), status))
    return DeviceSummary(dev, state, version, last_seen, first_seen, cameras, config,
                         models_state=json.loads(models_state) if models_state else {})


@dataclass(frozen=True)
class DevicePage:
    """One page of ``GET /api/v1/devices``, in device id order; ``next`` is the ``after`` of the next page."""

    devices: List[DeviceSummary]
    total: int
    next: Optional[str]

    def to_dict(self) -> Dict[str, Any]:
        return {"devices": [d.to_dict() for d in self.devices], "total": self.total, "next": self.next}


def _cameras_by_device(conn: Connection, device_id: Optional[str] = None,
                       between: Optional[Tuple[str, str]] = None) -> Dict[str, List[CameraSummary]]:
    sql = "SELECT device_id, camera_id, state, error FROM cameras"
    params: tuple = ()
    if device_id is not None:
        sql, params = sql + " WHERE device_id = ?", (device_id,)
    elif between is not None:
        sql, params = sql + " WHERE device_id >= ? AND device_id <= ?", between
    found: Dict[str, List[CameraSummary]] = {}
    for dev, cam, state, error in conn.query(sql + " ORDER BY device_id, camera_id", params):
        found.setdefault(dev, []).append(CameraSummary(cam, state, error))
    return found


def _health_by_device(conn: Connection, ids: List[str]) -> Dict[str, HealthState]:
    if not ids:
        return {}
    marks = ", ".join("?" * len(ids))
    return {dev: HealthState(problems.split(), temperature, ts) for dev, problems, temperature, ts in conn.query(
        f"SELECT device_id, problems, temperature_c, ts FROM health WHERE device_id IN ({marks})", ids)}


def _problem_filter(problem: str) -> Tuple[str, tuple]:
    """A WHERE clause for ``?problem=``: a problem kind, ``offline``, or ``any`` (either)."""
    if problem == "offline":
        return "d.state = 'offline'", ()
    if problem == "any":
        return "(d.state = 'offline' OR d.device_id IN (SELECT device_id FROM health WHERE problem_count > 0))", ()
    return "d.device_id IN (SELECT device_id FROM health WHERE problems LIKE ?)", (f"% {problem} %",)


#: ``sort=problems``, worst first: offline, then most problems, then hottest; by id within a rank.
_RANK = ("CASE WHEN d.state = 'offline' THEN 0 ELSE 1 END", "COALESCE(h.problem_count, 0)",
         "COALESCE(h.temperature_c, -1e300)")
_FROM = "devices d LEFT JOIN health h ON h.device_id = d.device_id"


def _after_rank(conn: Connection, after: str) -> Tuple[str, List[Any]]:
    """The WHERE clause for the devices after ``after`` in problem order (none if it is gone)."""
    row = conn.query_one(f"SELECT {', '.join(_RANK)} FROM {_FROM} WHERE d.device_id = ?", (after,))
    if row is None:
        return "1 = 0", []
    offline, count, hottest = _RANK
    return (f"({offline} > ? OR ({offline} = ? AND ({count} < ? OR ({count} = ? AND "
            f"({hottest} < ? OR ({hottest} = ? AND d.device_id > ?))))))",
            [row[0], row[0], row[1], row[1], row[2], row[2], after])


def list_devices(conn: Connection, state: Optional[str] = None, limit: int = DEFAULT_PAGE,
                 after: Optional[str] = None, problem: Optional[str] = None,
                 sort: Optional[str] = None) -> DevicePage:
    """Up to ``limit`` devices after ``after`` (a cursor: stable while devices come and go).

    ``problem`` filters (a problem kind, ``offline``, ``any``); ``sort="problems"`` puts the worst
    first, and ``after`` then continues from that device's place in this order.
    """
    by_problems = sort == "problems"
    where: List[str] = []
    params: List[Any] = []
    if state is not None:
        where.append("d.state = ?")
        params.append(state)
    if problem is not None:
        clause, values = _problem_filter(problem)
        where.append(clause)
        params.extend(values)
    counted, counted_params = (" WHERE " + " AND ".join(where) if where else ""), list(params)
    columns = ", ".join(f"d.{c.strip()}" for c in _DEVICE_COLUMNS.split(","))
    order = (" ORDER BY " + ", ".join((_RANK[0], _RANK[1] + " DESC", _RANK[2] + " DESC", "d.device_id"))
             if by_problems else " ORDER BY d.device_id")
    with conn.reading():
        if after is not None:
            clause, values = _after_rank(conn, after) if by_problems else ("d.device_id > ?", [after])
            where.append(clause)
            params.extend(values)
        sql = f"SELECT {columns} FROM {_FROM if by_problems else 'devices d'}" + (
            " WHERE " + " AND ".join(where) if where else "")
        row = conn.query_one("SELECT COUNT(*) FROM devices d" + counted, counted_params)
        rows = conn.query(sql + order + " LIMIT ?", params + [limit + 1])
        page, more = rows[:limit], len(rows) > limit
        ids = [r[0] for r in page]
        cameras = _cameras_by_device(conn, between=(min(ids), max(ids))) if page else {}
        health = _health_by_device(conn, ids)
    devices = [dataclasses.replace(_device(r, cameras.get(r[0], [])), health=health.get(r[0])) for r in page]
    return DevicePage(devices, int(row[0]) if row else 0, page[-1][0] if more else None)


def device_counts(rows: List[tuple]) -> Dict[str, Dict[str, Any]]:
    """Counts topics folded into the shape of the appliance's ``GET /api/v1/counts``."""
    counts: Dict[str, Dict[str, Any]] = {"cameras": {}, "zones": {}, "lines": {}}
    for topic, payload in rows:
        levels, body = topic.split("/"), json.loads(payload)
        if levels[0] == "cameras" and levels[2] == "objects":
            counts["cameras"].setdefault(levels[1], {})[levels[3]] = body.get("count")
        elif levels[0] == "zones":
            counts["zones"].setdefault(levels[1], {})[levels[2]] = body.get("count")
        elif levels[0] == "cameras" and levels[2] == "lines":
            counts["lines"][levels[3]] = {"in": body.get("in"), "out": body.get("out")}
    return counts


def get_device(conn: Connection, device_id: str) -> Optional[DeviceDetail]:
    with conn.reading():
        row = conn.query_one(f"SELECT {_DEVICE_COLUMNS}, stats, stats_ts, unissued_version, models_state_ts "
                             "FROM devices WHERE device_id = ?", (device_id,))
        if row is None:
            return None
        cameras = _cameras_by_device(conn, device_id).get(device_id, [])
        count_rows = conn.query("SELECT topic, payload FROM counts WHERE device_id = ?", (device_id,))
        health_row = conn.query_one("SELECT body, problems, temperature_c, ts FROM health WHERE device_id = ?",
                                    (device_id,))
        rollouts = conn.query(
            "SELECT rollout_id, version, status, errors, updated_at FROM rollout_devices WHERE device_id = ? "
            "ORDER BY version DESC LIMIT 20", (device_id,))
    health = HealthState(health_row[1].split(), health_row[2], health_row[3]) if health_row else None
    return DeviceDetail(
        summary=dataclasses.replace(_device(row[:11], cameras), health=health),
        health_report=json.loads(health_row[0]) if health_row else None, config_errors=json.loads(row[8]) if row[8] else [], reported_at=row[9],
        stats=json.loads(row[11]) if row[11] else None, stats_received_at=row[12], counts=device_counts(count_rows),
        rollouts=[{"rollout_id": r, "version": int(v), "status": s, "errors": json.loads(e) if e else [],
                   "updated_at": u} for r, v, s, e, u in rollouts],
        unissued_version=None if row[13] is None else int(row[13]), models_state_at=row[14])


#: the fleet's events table on each engine; ``entered_zones`` is a JSON list of strings
EVENT_COLUMNS = {
    "sqlite": EventColumns(camera="camera_id", label="label", start_time="start_time",
                           entered_zone="EXISTS (SELECT 1 FROM json_each(entered_zones) WHERE json_each.value = ?)"),
    "postgresql": EventColumns(camera="camera_id", label="label", start_time="start_time",
                               entered_zone="EXISTS (SELECT 1 FROM jsonb_array_elements_text(CAST(entered_zones AS jsonb)) "
                                            "AS zone(name) WHERE zone.name = ?)"),
}


def list_events(conn: Connection, query: EventQuery, device: Optional[str] = None) -> List[Dict[str, Any]]:
    """Events of the fleet (the appliance's filters, and ``device``), newest first."""
    found = event_filter(query, EVENT_COLUMNS[conn.dialect], extra=(("device_id", device),))
    sql = "SELECT body FROM events" + found.where() + " ORDER BY start_time DESC, event_id DESC LIMIT ?"
    with conn.reading():
        rows = conn.query(sql, (*found.params, query.bounded_limit))
    return [json.loads(body) for (body,) in rows]


def list_rollouts(conn: Connection, limit: int = 20) -> List[Dict[str, Any]]:
    with conn.reading():
        rows = conn.query("SELECT rollout_id, created_at, target, patch, model_name, model_version FROM rollouts "
                          "ORDER BY created_at DESC LIMIT ?", (limit,))
        ids = [r[0] for r in rows]
        tallies: Dict[str, Dict[str, int]] = {i: dict.fromkeys(ROLLOUT_STATES, 0) for i in ids}
        if ids:
            marks = ", ".join("?" for _ in ids)
            for rid, status, n in conn.query(
                    f"SELECT rollout_id, status, COUNT(*) FROM rollout_devices WHERE rollout_id IN ({marks}) "
                    "GROUP BY rollout_id, status", ids):
                tallies[rid][status] = int(n)
    return [{"rollout_id": rid, "created_at": created, "target": json.loads(target), "patch": json.loads(patch),
             "devices": tallies[rid], "model": {"name": name, "version": version} if name is not None else None}
            for rid, created, target, patch, name, version in rows]


def get_rollout(conn: Connection, rollout_id: str) -> Optional[Dict[str, Any]]:
    with conn.reading():
        row = conn.query_one("SELECT rollout_id, created_at, target, patch, model_name, model_version FROM rollouts "
                             "WHERE rollout_id = ?", (rollout_id,))
        if row is None:
            return None
        devices = conn.query(
            "SELECT rd.device_id, rd.version, rd.status, rd.errors, rd.updated_at, d.models_state "
            "FROM rollout_devices rd LEFT JOIN devices d ON d.device_id = rd.device_id WHERE rd.rollout_id = ? "
            "ORDER BY rd.device_id", (rollout_id,))
    model_name, model_version = row[4], row[5]
    per_device = []
    for d, v, s, e, u, models_state in devices:
        item = {"device_id": d, "version": int(v), "status": s, "errors": json.loads(e) if e else [], "updated_at": u}
        if model_name is not None:
            item["model"] = rollout_model_state(model_name, model_version, json.loads(models_state or "{}"), s,
                                                item["errors"])
        per_device.append(item)
    tally = dict.fromkeys(ROLLOUT_STATES, 0)
    for item in per_device:
        tally[item["status"]] = tally.get(item["status"], 0) + 1
    body = {"rollout_id": row[0], "created_at": row[1], "target": json.loads(row[2]), "patch": json.loads(row[3]),
            "devices": tally, "results": per_device}
    if model_name is not None:
        states: Dict[str, int] = dict.fromkeys(("waiting", *MODEL_STATES), 0)
        for item in per_device:
            states[item["model"]["state"]] += 1
        body["model"] = {"name": model_name, "version": model_version, "devices": states}
    return body
