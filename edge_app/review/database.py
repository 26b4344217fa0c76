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


def _items_sql(conn: sqlite3.Connection, query: ReviewQuery, gap_s: float,
               rule_of: Callable[[str], AlertRule]) -> Tuple[str, List]:
    """The CTEs ending in ``items`` (id, camera_id, start_time, next_start, alert, has_label, has_zone):
    ``next_start`` is the start of the camera's next item (None for its latest), its events start before."""
    if query.camera is not None:
        cameras = [query.camera]
    else:
        cameras = [row[0] for row in conn.execute("SELECT DISTINCT camera_id FROM events")]
    args: List = []
    cases = []
    for camera in cameras:
        rule = rule_of(camera)
        label_ok, zone_ok = "1", "1"
        if rule.labels:
            label_ok = "e.label IN (" + ", ".join("?" * len(rule.labels)) + ")"
        if rule.zones:
            zone_ok = ("EXISTS (SELECT 1 FROM event_zones z WHERE z.event_id = e.id AND z.zone IN ("
                       + ", ".join("?" * len(rule.zones)) + "))")
        # AlertRule.matches in SQL: a speed alert is an alert whatever the labels and zones
        cases.append(f"WHEN ? THEN (e.speed_alert OR ({label_ok} AND {zone_ok}))")
        args += [camera, *sorted(rule.labels), *sorted(rule.zones)]
    alert_expr = f"CASE e.camera_id {' '.join(cases)} ELSE 0 END" if cases else "0"
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
    args += extra + [gap_s, gap_s]
    # One pass over the events in grouping order (the index gives it without a sort): the latest
    # end before each event, and running counts of alert / label / zone matches, so an item's
    # counts are the difference of the running counts at its first event and the next item's.
    sql = f"""WITH
      flags AS (
        SELECT e.id, e.camera_id, e.start_time, e.end_time, {alert_expr} AS alert, {label_expr} AS has_label,
          {zone_expr} AS has_zone
        FROM events e {where}),
      ev AS (
        SELECT id, camera_id, start_time, MAX(COALESCE(end_time, {_OPEN_END})) OVER w AS prev_end,
          LEAD(id) OVER w IS NULL AS is_last, alert, has_label, has_zone,
          COALESCE(SUM(alert) OVER w, 0) AS alerts_before, COALESCE(SUM(has_label) OVER w, 0) AS labels_before,
          COALESCE(SUM(has_zone) OVER w, 0) AS zones_before
        FROM flags
        WINDOW w AS (PARTITION BY camera_id ORDER BY start_time, id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)),
      edges AS (
        SELECT *, (prev_end IS NULL OR start_time > prev_end + ?) AS first FROM ev
        WHERE prev_end IS NULL OR start_time > prev_end + ? OR is_last),
      bounds AS (
        SELECT *, CASE WHEN first THEN alerts_before ELSE alerts_before + alert END AS alerts_at,
          CASE WHEN first THEN labels_before ELSE labels_before + has_label END AS labels_at,
          CASE WHEN first THEN zones_before ELSE zones_before + has_zone END AS zones_at
        FROM edges),
      spans AS (
        SELECT id, camera_id, start_time, first,
          LEAD(CASE WHEN first THEN start_time END) OVER n AS next_start,
          COALESCE(LEAD(alerts_at) OVER n, alerts_before + alert) - alerts_before AS alerts,
          COALESCE(LEAD(labels_at) OVER n, labels_before + has_label) - labels_before AS labels,
          COALESCE(LEAD(zones_at) OVER n, zones_before + has_zone) - zones_before AS zones
        FROM bounds WINDOW n AS (PARTITION BY camera_id ORDER BY start_time, id)),
      items AS (
        SELECT id, camera_id, start_time, next_start, alerts > 0 AS alert, labels > 0 AS has_label,
          zones > 0 AS has_zone
        FROM spans WHERE first)"""
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
    sql = (f"{items_sql} SELECT i.id, i.camera_id, i.start_time, i.next_start, rv.item_id IS NOT NULL, "
           f"COUNT(*) OVER () FROM items i LEFT JOIN reviewed rv ON rv.item_id = i.id{where} "
           "ORDER BY i.start_time DESC, i.id DESC LIMIT ? OFFSET ?")
    rows = conn.execute(sql, args + where_args + [PAGE_SIZE, query.offset]).fetchall()
    if rows:
        total = int(rows[0][5])
    else:  # past the last page: the window above had no row to count on
        total = int(conn.execute(f"{items_sql} SELECT COUNT(*) FROM items i LEFT JOIN reviewed rv "
                                 f"ON rv.item_id = i.id{where}", args + where_args).fetchone()[0])
    entries = []
    for item_id, camera_id, first_start, next_start, reviewed, _total in rows:
        events = db_sql.camera_events_between(conn, camera_id, first_start, next_start)
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

