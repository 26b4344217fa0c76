"""What the fleet's REST API reads: devices, their cameras, stats and counts, events, rollouts."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from edge_app.events.query import EventQuery
from edge_app.fleet_service.db import Connection

#: ``GET /api/v1/devices`` answers this many devices when no ``limit`` is asked for, and never more than MAX.
DEFAULT_PAGE = 1000
MAX_PAGE = 10_000
ROLLOUT_STATES = ("pending", "applied", "rejected", "timed_out", "cancelled")

_DEVICE_COLUMNS = ("device_id, state, version, last_seen, first_seen, desired_version, reported_version, "
                   "reported_status, reported_errors, reported_ts")


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
class DeviceSummary:
    """One device as ``GET /api/v1/devices`` lists it (docs/rest-api.md, "Fleet service")."""

    device_id: str
    state: str
    version: Optional[str]
    last_seen: float
    first_seen: float
    cameras: List[CameraSummary]
    config: ConfigState

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

    def to_dict(self) -> Dict[str, Any]:
        body = self.summary.to_dict()
        body["config"].update(errors=self.config_errors, reported_at=self.reported_at,
                              unissued_version=self.unissued_version)
        body.update(stats=self.stats, stats_received_at=self.stats_received_at, counts=self.counts,
                    rollouts=self.rollouts)
        return body


def _config_status(desired: int, reported: int, status: Optional[str]) -> Optional[str]:
    if desired > reported:
        return "pending"
    return status


def _device(row: tuple, cameras: List[CameraSummary]) -> DeviceSummary:
    dev, state, version, last_seen, first_seen, desired, reported, status, _errors, _ts = row
    config = ConfigState(int(desired), int(reported), _config_status(int(desired), int(reported), status))
    return DeviceSummary(dev, state, version, last_seen, first_seen, cameras, config)


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


def list_devices(conn: Connection, state: Optional[str] = None, limit: int = DEFAULT_PAGE,
                 after: Optional[str] = None) -> DevicePage:
    """Up to ``limit`` devices with ids after ``after`` (a cursor: stable while devices come and go)."""
    where: List[str] = []
    params: List[Any] = []
    if state is not None:
        where.append("state = ?")
        params.append(state)
    counted = " WHERE " + " AND ".join(where) if where else ""
    if after is not None:
        where.append("device_id > ?")
        params.append(after)
    sql = f"SELECT {_DEVICE_COLUMNS} FROM devices" + (" WHERE " + " AND ".join(where) if where else "")
    with conn.reading():
        row = conn.query_one("SELECT COUNT(*) FROM devices" + counted, params[:1] if state is not None else ())
        rows = conn.query(sql + " ORDER BY device_id LIMIT ?", params + [limit + 1])
        page, more = rows[:limit], len(rows) > limit
        cameras = _cameras_by_device(conn, between=(page[0][0], page[-1][0])) if page else {}
    return DevicePage([_device(row, cameras.get(row[0], [])) for row in page], int(row[0]) if row else 0,
                      page[-1][0] if more else None)


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
        row = conn.query_one(f"SELECT {_DEVICE_COLUMNS}, stats, stats_ts, unissued_version FROM devices WHERE device_id = ?",
                             (device_id,))
        if row is None:
            return None
        cameras = _cameras_by_device(conn, device_id).get(device_id, [])
        count_rows = conn.query("SELECT topic, payload FROM counts WHERE device_id = ?", (device_id,))
        rollouts = conn.query(
            "SELECT rollout_id, version, status, errors, updated_at FROM rollout_devices WHERE device_id = ? "
            "ORDER BY version DESC LIMIT 20", (device_id,))
    return DeviceDetail(
        summary=_device(row[:10], cameras), config_errors=json.loads(row[8]) if row[8] else [], reported_at=row[9],
        stats=json.loads(row[10]) if row[10] else None, stats_received_at=row[11], counts=device_counts(count_rows),
        rollouts=[{"rollout_id": r, "version": int(v), "status": s, "errors": json.loads(e) if e else [],
                   "updated_at": u} for r, v, s, e, u in rollouts],
        unissued_version=None if row[12] is None else int(row[12]))


def _like_member(value: str) -> str:
    """A LIKE pattern matching ``"value"`` inside a JSON list of strings, wildcards escaped."""
    escaped = json.dumps(value).replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def list_events(conn: Connection, query: EventQuery, device: Optional[str] = None) -> List[Dict[str, Any]]:
    """Events of the fleet (the appliance's filters, and ``device``), newest first."""
    where: List[str] = []
    params: List[Any] = []
    for column, value in (("device_id", device), ("camera_id", query.camera), ("label", query.label)):
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    if query.zone is not None:
        where.append("entered_zones LIKE ? ESCAPE '\\'")
        params.append(_like_member(query.zone))
    if query.after is not None:
        where.append("start_time > ?")
        params.append(query.after)
    if query.before is not None:
        where.append("start_time < ?")
        params.append(query.before)
    sql = "SELECT body FROM events"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY start_time DESC, event_id DESC LIMIT ?"
    params.append(int(query.limit))
    with conn.reading():
        rows = conn.query(sql, params)
    return [json.loads(body) for (body,) in rows]


def list_rollouts(conn: Connection, limit: int = 20) -> List[Dict[str, Any]]:
    with conn.reading():
        rows = conn.query("SELECT rollout_id, created_at, target, patch FROM rollouts ORDER BY created_at DESC LIMIT ?", (limit,))
        ids = [r[0] for r in rows]
        tallies: Dict[str, Dict[str, int]] = {i: dict.fromkeys(ROLLOUT_STATES, 0) for i in ids}
        if ids:
            marks = ", ".join("?" for _ in ids)
            for rid, status, n in conn.query(
                    f"SELECT rollout_id, status, COUNT(*) FROM rollout_devices WHERE rollout_id IN ({marks}) "
                    "GROUP BY rollout_id, status", ids):
                tallies[rid][status] = int(n)
    return [{"rollout_id": rid, "created_at": created, "target": json.loads(target), "patch": json.loads(patch),
             "devices": tallies[rid]} for rid, created, target, patch in rows]


def get_rollout(conn: Connection, rollout_id: str) -> Optional[Dict[str, Any]]:
    with conn.reading():
        row = conn.query_one("SELECT rollout_id, created_at, target, patch FROM rollouts WHERE rollout_id = ?", (rollout_id,))
        if row is None:
            return None
        devices = conn.query(
            "SELECT device_id, version, status, errors, updated_at FROM rollout_devices WHERE rollout_id = ? "
            "ORDER BY device_id", (rollout_id,))
    per_device = [{"device_id": d, "version": int(v), "status": s, "errors": json.loads(e) if e else [], "updated_at": u}
                  for d, v, s, e, u in devices]
    tally = dict.fromkeys(ROLLOUT_STATES, 0)
    for item in per_device:
        tally[item["status"]] = tally.get(item["status"], 0) + 1
    return {"rollout_id": row[0], "created_at": row[1], "target": json.loads(row[2]), "patch": json.loads(row[3]),
            "devices": tally, "results": per_device}
