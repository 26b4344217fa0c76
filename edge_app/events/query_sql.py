"""The filters of an event query as SQL: one definition for every database that keeps events.

The appliance keeps its events in SQLite (a row per event, its entered zones in a table of their
own); the fleet service keeps every device's events in SQLite or PostgreSQL (the entered zones as a
JSON list). Both answer ``GET /api/v1/events`` with the same filters, so both build their
``WHERE`` from :func:`event_filter` and differ only in where the columns are.

The zone rule is the documented one, and that of :meth:`EventQuery.matches`: ``zone`` is one of the
event's entered zones, compared exactly (case and all). A ``LIKE`` on the JSON text is not that
rule: SQLite's ``LIKE`` ignores ASCII case, so ``zone=Driveway`` found ``driveway`` events on a
fleet on SQLite and on no appliance.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Tuple

from edge_app.events.query import EventQuery


@dataclass(frozen=True)
class EventColumns:
    """Where one table keeps what the filters compare (SQL expressions)."""

    camera: str
    label: str
    start_time: str
    #: a condition with one ``?`` (the zone), true when the row's event entered exactly that zone
    entered_zone: str


@dataclass(frozen=True)
class SqlFilter:
    """Conditions joined by ``AND`` and their parameters (``?`` placeholders), in order."""

    conditions: Tuple[str, ...]
    params: Tuple[Any, ...]

    def where(self) -> str:
        """`` WHERE ...``, or nothing when no filter is set."""
        return " WHERE " + " AND ".join(self.conditions) if self.conditions else ""


def event_filter(query: EventQuery, columns: EventColumns, *, extra: Tuple[Tuple[str, Any], ...] = ()) -> SqlFilter:
    """The conditions of ``query`` on ``columns``; ``extra`` adds ``column = value`` pairs (None: no filter)."""
    conditions: List[str] = []
    params: List[Any] = []
    for column, value in (*extra, (columns.camera, query.camera), (columns.label, query.label)):
        if value is not None:
            conditions.append(f"{column} = ?")
            params.append(value)
    if query.zone is not None:
        conditions.append(columns.entered_zone)
        params.append(query.zone)
    if query.after is not None:
        conditions.append(f"{columns.start_time} > ?")
        params.append(query.after)
    if query.before is not None:
        conditions.append(f"{columns.start_time} < ?")
        params.append(query.before)
    return SqlFilter(tuple(conditions), tuple(params))
