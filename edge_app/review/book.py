"""The review items of a running appliance: pages read from the event database, marks written by
the event store's writer (docs/review.md). The grouping gap and alert rules are the configuration's
at the time of each read, so a changed rule applies to every stored event at once."""
from __future__ import annotations

import logging
import math
import sqlite3
from dataclasses import replace
from pathlib import Path
from typing import Callable, Dict, List, Optional, Protocol, Sequence

from edge_app.events import database as db_sql
from edge_app.review import database as review_sql
from edge_app.review.model import AlertRule
from edge_app.review.query import ReviewPage, ReviewQuery

log = logging.getLogger(__name__)


class ReviewUnavailable(RuntimeError):
    """The event database could not be read or written; the store's health says why."""


class ReviewMarks(Protocol):
    """Where marks are written (``edge_app.events.store.EventStore``)."""

    directory: Path

    def mark_reviewed(self, item_ids: List[str], reviewed: bool = True) -> Optional[int]: ...


class ReviewBook:
    def __init__(self, store: ReviewMarks, gap_s: Callable[[], float],
                 rule_of: Callable[[str], AlertRule]) -> None:
        self._store = store
        self._gap_s = gap_s
        self._rule_of = rule_of
        self._listeners: List[Callable[[], object]] = []

    def on_marked(self, listener: Callable[[], object]) -> None:
        """``listener()`` after marks changed (the unreviewed counts did)."""
        self._listeners.append(listener)

    def page(self, query: ReviewQuery) -> ReviewPage:
        empty = ReviewPage((), 0, query.page)
        return self._read(lambda conn: review_sql.review_page(conn, query, self._gap_s(), self._rule_of), empty)

    def unreviewed_alerts(self, cameras: Sequence[str]) -> Dict[str, int]:
        return self._read(lambda conn: review_sql.unreviewed_alerts(conn, cameras, self._gap_s(), self._rule_of),
                          dict.fromkeys(cameras, 0))

    def mark(self, item_ids: Sequence[str], reviewed: bool = True) -> int:
        """Mark items by id; the count of marks changed. Raises ReviewUnavailable."""
        changed = self._store.mark_reviewed(list(item_ids), reviewed)
        if changed is None:
            raise ReviewUnavailable("the event database did not take the marks; GET /api/v1/status (events) says why")
        if changed:
            for listener in self._listeners:
                try:
                    listener()
                except Exception:  # a listener (MQTT) must not turn a stored mark into an error
                    log.exception("a review mark listener failed")
        return changed

    def mark_until(self, before: float, query: ReviewQuery, reviewed: bool = True) -> int:
        """Mark every item of ``query`` that starts at or before ``before`` ("all up to here")."""
        # The item_ids query takes "before" as exclusive; the next float above makes it inclusive.
        bounded = replace(query, before=before if query.before is not None and query.before <= before
                          else _just_after(before), page=1)
        ids = self._read(lambda conn: review_sql.item_ids(conn, bounded, self._gap_s(), self._rule_of), [])
        return self.mark(ids, reviewed) if ids else 0

    def _read(self, fn, default):
        try:
            conn = db_sql.read_connection(self._store.directory)
        except (sqlite3.Error, OSError) as err:
            raise ReviewUnavailable(f"cannot read the event database: {err}") from err
        if conn is None:
            return default
        try:
            return fn(conn)
        except (sqlite3.Error, OSError) as err:
            raise ReviewUnavailable(f"cannot read the event database: {err}") from err
        finally:
            conn.close()


def _just_after(value: float) -> float:
    return math.nextafter(value, math.inf)
