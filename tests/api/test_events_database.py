"""A corrupt event database over real HTTP: /api/v1/status says what happened, the events API
answers 503 while the file cannot be trusted, never an empty 200 that looks like the truth."""
from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

import pytest

from edge_app.events.database import DB_NAME
from tests.api.test_events_routes import NOW, event


def events_dir(tmp_path: Path, index: int = 0) -> Path:
    """Where the InMemoryService of the ``index``-th API started in a test keeps its events."""
    return tmp_path / f"config-{index}-events"


@pytest.mark.parametrize("damage", ["truncated", "random bytes"])
def test_a_corrupt_database_found_at_start_shows_in_status_and_a_new_one_serves(make_api, tmp_path, damage):
    first = make_api()
    for n in range(300):
        first.service.add_event(event(n, start=NOW + n))
    first.service.close()
    data = (events_dir(tmp_path) / DB_NAME).read_bytes()
    damaged = data[:len(data) // 2] if damage == "truncated" else os.urandom(len(data))
    # The second API's store opens the damaged file, as a restart after a power cut would.
    (events_dir(tmp_path, 1) / DB_NAME).parent.mkdir()
    (events_dir(tmp_path, 1) / DB_NAME).write_bytes(damaged)

    api = make_api()
    status = api.get("/api/v1/status")
    assert status.status_code == 200
    database = status.json()["events"]["database"]
    assert database["state"] == "recovered", database
    assert "malformed" in database["reason"] or "not a database" in database["reason"], database
    assert (Path(database["moved_to"]) / DB_NAME).read_bytes() == damaged
    assert set(database) == {"state", "reason", "moved_to", "detected_ts"}
    assert status.json()["events"]["on_disk"] is True

    listed = api.get("/api/v1/events")
    assert listed.status_code == 200 and listed.json() == {"events": [], "total": 0}
    api.service.add_event(event(1, start=NOW + 1000))
    assert [e["id"] for e in api.get("/api/v1/events").json()["events"]] == [event(1, start=NOW + 1000).id]


def test_a_sound_database_says_so(api):
    assert api.get("/api/v1/status").json()["events"]["database"] == {
        "state": "ok", "reason": None, "moved_to": None, "detected_ts": None}


@pytest.mark.parametrize("path", ["/api/v1/events", "/api/v1/events?camera=front",
                                  f"/api/v1/events/{event(1).id}", f"/api/v1/events/{event(1).id}/snapshot.jpg"])
def test_a_database_corrupted_while_running_is_503_until_a_new_one_is_started(api, tmp_path, path):
    api.service.add_event(event(1))
    db_file = events_dir(tmp_path) / DB_NAME
    with sqlite3.connect(str(db_file)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    with open(db_file, "r+b") as fh:
        fh.write(os.urandom(db_file.stat().st_size))

    response = api.get(path)
    assert response.status_code == 503, response.text
    assert response.headers["Content-Type"] == "application/json" and response.headers["Retry-After"] == "5"
    error = response.json()["error"]
    assert "corrupt" in error and "not a database" in error and "/api/v1/status" in error, error

    deadline = time.monotonic() + 10
    while api.get("/api/v1/status").json()["events"]["database"]["state"] != "recovered":
        assert time.monotonic() < deadline, api.get("/api/v1/status").json()["events"]
        time.sleep(0.05)
    listed = api.get("/api/v1/events")
    assert listed.status_code == 200 and listed.json() == {"events": [], "total": 0}
    assert api.get(f"/api/v1/events/{event(1).id}").status_code == 404
