"""Review items from the event database: the grouping of ``grouping.group_events`` done in SQL.

An item is never stored: a window over each camera's events, in the order of the pure grouping
(start time, then id), finds where an event starts later than ``gap_s`` after the latest end of
every event before it; that event begins an item and its id is the item's id. Filters, the count
and the page are then one query, so 100,000 events answer in SQLite's time, not Python's
(bench/review). The events of the page's items are read afterwards and made items by
``grouping.make_item``; tests/review checks both groupings agree on random events.

The ``reviewed`` table holds the ids of the items marked reviewed.
"""
from __future__ import annotations

import sqlite3
from typing import Callable, Dict, List, Sequence, Tuple

from edge_app.events import database as db_sql
from edge_app.review.grouping import make_item
from edge_app.review.model import ALERT, AlertRule
from edge_app.review.query import PAGE_SIZE, ReviewEntry, ReviewPage, ReviewQuery

#: an open event counts as ending at the end of time: whatever starts after it joins its item
_OPEN_END = 1e308


def _rows(columns: int, rows: Sequence[Tuple]) -> Tuple[str, List]:
    """A SELECT of ``rows`` usable as a CTE body, also when there are none."""
    parts = ["SELECT " + ", ".join(["NULL"] * columns) + " WHERE 0"]
    args: List = []
    for row in rows:
        parts.append("SELECT " + ", ".join(["?"] * columns))
        args.extend(row)
    return " UNION ALL ".join(parts), args


def _items_sql(conn: sqlite3.Connection, query: ReviewQuery, gap_s: float,
               rule_of: Callable[[str], AlertRule]) -> Tuple[str, List]:
    """The CTE ``items`` (id, camera_id, start_time, last_start, alert, has_label, has_zone, reviewed)."""
    if query.camera is not None:
        cameras = [query.camera]
    else:
        cameras = [row[0] for row in conn.execute("SELECT DISTINCT camera_id FROM events")]
    rules = {camera: rule_of(camera) for camera in cameras}
    rules_sql, rules_args = _rows(3, [(c, int(not r.labels), int(not r.zones)) for c, r in rules.items()])
    labels_sql, labels_args = _rows(2, [(c, label) for c, r in rules.items() for label in sorted(r.labels)])
    zones_sql, zones_args = _rows(2, [(c, zone) for c, r in rules.items() for zone in sorted(r.zones)])
    args: List = rules_args + labels_args + zones_args
    label_expr, zone_expr = "0", "0"
    extra: List = []
    if query.label is not None:
        label_expr = "e.label = ?"
        extra.append(query.label)
    if query.zone is not None:
        zone_expr = "EXISTS (SELECT 1 FROM event_zones z WHERE z.event_id = e.id AND z.zone = ?)"
        extra.append(query.zone)
    where = ""
    if query.camera is not None:
        where = "WHERE e.camera_id = ?"
        extra.append(query.camera)
    args += extra + [gap_s]
    sql = f"""WITH rules(camera_id, any_label, any_zone) AS ({rules_sql}),
      rule_labels(camera_id, label) AS ({labels_sql}),
      rule_zones(camera_id, zone) AS ({zones_sql}),
      ev AS (
        SELECT e.id, e.camera_id, e.start_time,
          MAX(COALESCE(e.end_time, {_OPEN_END})) OVER (PARTITION BY e.camera_id ORDER BY e.start_time, e.id
            ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end,
          ((r.any_label OR e.label IN (SELECT label FROM rule_labels l WHERE l.camera_id = e.camera_id))
           AND (r.any_zone OR EXISTS (SELECT 1 FROM event_zones z JOIN rule_zones rz ON rz.zone = z.zone
                AND rz.camera_id = e.camera_id WHERE z.event_id = e.id))) AS alert,
          {label_expr} AS has_label, {zone_expr} AS has_zone
        FROM events e JOIN rules r ON r.camera_id = e.camera_id {where}),
      marked AS (SELECT *, (prev_end IS NULL OR start_time > prev_end + ?) AS first FROM ev),
      grouped AS (SELECT *, SUM(first) OVER (PARTITION BY camera_id ORDER BY start_time, id
        ROWS UNBOUNDED PRECEDING) AS grp FROM marked),
      items AS (
        SELECT MAX(CASE WHEN first THEN id END) AS id, camera_id, MIN(start_time) AS start_time,
          MAX(start_time) AS last_start, MAX(alert) AS alert, MAX(has_label) AS has_label, MAX(has_zone) AS has_zone
        FROM grouped GROUP BY camera_id, grp)"""
    return sql, args


def _filters(query: ReviewQuery) -> Tuple[str, List]:
    where, args = [], []
    if query.label is not None:
        where.append("i.has_label")
    if query.zone is not None:
        where.append("i.has_zone")
    if query.severity is not None:
        where.append("i.alert" if query.severity == ALERT else "NOT i.alert")
    if query.reviewed is not None:
        where.append("rv.item_id IS NOT NULL" if query.reviewed else "rv.item_id IS NULL")
    if query.after is not None:
        where.append("i.start_time >= ?")
        args.append(query.after)
    if query.before is not None:
        where.append("i.start_time < ?")
        args.append(query.before)
    return (" WHERE " + " AND ".join(where)) if where else "", args


def review_page(conn: sqlite3.Connection, query: ReviewQuery, gap_s: float,
                rule_of: Callable[[str], AlertRule]) -> ReviewPage:
    """One page of review items matching ``query``, newest first, with the total on every page."""
    items_sql, args = _items_sql(conn, query, gap_s, rule_of)
    where, where_args = _filters(query)
    sql = (f"{items_sql} SELECT i.id, i.camera_id, i.start_time, i.last_start, rv.item_id IS NOT NULL, "
           f"COUNT(*) OVER () FROM items i LEFT JOIN reviewed rv ON rv.item_id = i.id{where} "
           "ORDER BY i.start_time DESC, i.id DESC LIMIT ? OFFSET ?")
    rows = conn.execute(sql, args + where_args + [PAGE_SIZE, query.offset]).fetchall()
    if rows:
        total = int(rows[0][5])
    else:  # past the last page: the window above had no row to count on
        total = int(conn.execute(f"{items_sql} SELECT COUNT(*) FROM items i LEFT JOIN reviewed rv "
                                 f"ON rv.item_id = i.id{where}", args + where_args).fetchone()[0])
    entries = []
    for item_id, camera_id, first_start, last_start, reviewed, _total in rows:
        events = db_sql.camera_events_between(conn, camera_id, first_start, last_start)
        item = make_item(events, rule_of(camera_id), reviewed=bool(reviewed))
        entries.append(ReviewEntry(item, tuple(events)))
    return ReviewPage(tuple(entries), total, query.page)


def item_ids(conn: sqlite3.Connection, query: ReviewQuery, gap_s: float,
             rule_of: Callable[[str], AlertRule]) -> List[str]:
    """The ids of every item matching ``query`` (no page): what "all up to here" marks."""
    items_sql, args = _items_sql(conn, query, gap_s, rule_of)
    where, where_args = _filters(query)
    return [row[0] for row in conn.execute(f"{items_sql} SELECT i.id FROM items i LEFT JOIN reviewed rv "
                                           f"ON rv.item_id = i.id{where}", args + where_args)]


def unreviewed_alerts(conn: sqlite3.Connection, cameras: Sequence[str], gap_s: float,
                      rule_of: Callable[[str], AlertRule]) -> Dict[str, int]:
    """Per camera of ``cameras``, its alerts not reviewed (0 for a camera without any)."""
    items_sql, args = _items_sql(conn, ReviewQuery(), gap_s, rule_of)
    counts = dict.fromkeys(cameras, 0)
    for camera_id, count in conn.execute(f"{items_sql} SELECT i.camera_id, COUNT(*) FROM items i LEFT JOIN reviewed "
                                         "rv ON rv.item_id = i.id WHERE i.alert AND rv.item_id IS NULL "
                                         "GROUP BY i.camera_id", args):
        if camera_id in counts:
            counts[camera_id] = int(count)
    return counts

