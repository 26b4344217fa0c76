"""Review queries on a real SQLite event database of many events (default 100,000).

Events of 4 cameras over 7 days, in bursts (so they group into items), some with zones; a tenth
of the items marked reviewed. Each query runs ``--rounds`` times on a fresh read connection, as
the REST API does; the median and the slowest are reported in milliseconds.
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

from bench.common.provenance import collect, write_results
from edge_app.events.database import EventDatabase, read_connection
from edge_app.events.model import Event
from edge_app.review import database as review_sql
from edge_app.review.model import AlertRule
from edge_app.review.query import ReviewQuery

CAMERAS = ("gate", "yard", "porch", "street")
LABELS = ("person", "car", "dog", "bicycle")
GAP_S = 30.0
DAY_S = 86400.0
START_S = 1_760_000_000.0


def rule_of(camera_id: str) -> AlertRule:
    return AlertRule(frozenset({"person", "car"}), frozenset({"drive"}) if camera_id == "gate" else frozenset())


def make_database(directory: Path, count: int, seed: int = 1) -> List[str]:
    """``count`` events in ``directory``; the ids of a tenth of the items' first events marked reviewed."""
    chance = random.Random(seed)
    per_camera = count // len(CAMERAS)
    database = EventDatabase(directory)
    database.begin()
    firsts = []
    for camera in CAMERAS:
        start = START_S
        step_s = 7 * DAY_S / per_camera
        for n in range(per_camera):
            burst = chance.random() < 0.3
            start += chance.uniform(0, 2) if burst else chance.uniform(step_s, 2 * step_s)
            if not burst:
                firsts.append(f"{start:.3f}-{camera}-{n}")
            zones = ("drive",) if chance.random() < 0.2 else ()
            database.upsert(Event(id=f"{start:.3f}-{camera}-{n}", camera_id=camera, label=chance.choice(LABELS),
                                  track_id=n, score=0.5, top_score=0.7, box=(0.0, 0.0, 10.0, 10.0),
                                  frame_time=start + 5, start_time=start, end_time=start + chance.uniform(1, 20),
                                  entered_zones=zones))
    database.commit()
    marked = firsts[::10]
    database.begin()
    database.mark_reviewed(marked, True, START_S)
    database.commit()
    database.close()
    return marked


def timed(directory: Path, fn: Callable, rounds: int) -> Dict[str, float]:
    times_ms = []
    for _ in range(rounds):
        began = time.perf_counter()
        conn = read_connection(directory)
        try:
            fn(conn)
        finally:
            conn.close()
        times_ms.append((time.perf_counter() - began) * 1000.0)
    return {"median_ms": round(statistics.median(times_ms), 1), "max_ms": round(max(times_ms), 1)}


def queries() -> Dict[str, Callable]:
    def page(**filters) -> Callable:
        return lambda conn: review_sql.review_page(conn, ReviewQuery(**filters), GAP_S, rule_of)

    return {
        "first page, no filter": page(),
        "first page, one camera": page(camera="gate"),
        "unreviewed alerts, first page": page(severity="alert", reviewed=False),
        "one day, label and zone": page(after=START_S + 3 * DAY_S, before=START_S + 4 * DAY_S, label="person",
                                        zone="drive"),
        "page 200": page(page=200),
        "unreviewed alerts per camera (HA sensor)":
            lambda conn: review_sql.unreviewed_alerts(conn, CAMERAS, GAP_S, rule_of),
        "ids up to a time (mark all up to here)":
            lambda conn: review_sql.item_ids(conn, ReviewQuery(before=START_S + 5 * DAY_S), GAP_S, rule_of),
    }


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.review", description=__doc__)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-review-") as tmp:
        directory = Path(tmp)
        began = time.perf_counter()
        make_database(directory, args.events)
        fill_s = time.perf_counter() - began
        conn = read_connection(directory)
        items = review_sql.review_page(conn, ReviewQuery(), GAP_S, rule_of).total
        conn.close()
        results = [{"query": name, **timed(directory, fn, args.rounds)} for name, fn in queries().items()]
    summary = {"events": args.events, "items": items, "rounds": args.rounds, "fill_s": round(fill_s, 1),
               "queries": results}
    print(json.dumps(summary, indent=2))
    if args.json is not None:
        write_results(args.json, summary, collect("no model", argv))
    return 0
