"""The schema's migrations and the database layer, on SQLite and PostgreSQL."""
from __future__ import annotations

import pytest

from edge_app.fleet_service.db import DatabaseError, connect, dialect_of
from edge_app.fleet_service.migrations import MIGRATIONS, migrate, schema_version

LATEST = max(m[0] for m in MIGRATIONS)
EXTRA = (LATEST + 1, "a column for a test", ("ALTER TABLE devices ADD COLUMN site TEXT",))


@pytest.fixture
def conn(fleet_db_url):
    connection = connect(fleet_db_url)
    yield connection
    connection.close()


def test_a_fresh_database_gets_every_migration_once(conn):
    assert schema_version(conn) == 0
    assert migrate(conn) == LATEST
    assert migrate(conn) == LATEST  # again: nothing to do
    with conn.reading():
        assert conn.query("SELECT version FROM schema_version ORDER BY version") == [(v,) for v, _, _ in MIGRATIONS]
        assert conn.query("SELECT COUNT(*) FROM devices") == [(0,)]


def test_a_later_migration_is_applied_on_top_of_existing_data(conn):
    migrate(conn)
    with conn.transaction():
        conn.execute("INSERT INTO devices (device_id, first_seen, last_seen) VALUES (?, ?, ?)", ("edge-1", 1.0, 2.0))
    assert migrate(conn, MIGRATIONS + (EXTRA,)) == LATEST + 1
    with conn.reading():
        assert conn.query("SELECT device_id, site FROM devices") == [("edge-1", None)]


def test_a_failing_migration_leaves_the_previous_version_intact(conn):
    migrate(conn)
    broken = (LATEST + 1, "broken", ("ALTER TABLE devices ADD COLUMN site TEXT", "THIS IS NOT SQL"))
    with pytest.raises(Exception):
        migrate(conn, MIGRATIONS + (broken,))
    assert schema_version(conn) == LATEST
    # The first statement was rolled back with the second, so the fixed migration applies cleanly.
    assert migrate(conn, MIGRATIONS + (EXTRA,)) == LATEST + 1


def test_a_database_newer_than_the_code_is_refused(conn):
    migrate(conn, MIGRATIONS + (EXTRA,))
    with pytest.raises(DatabaseError, match="newer than this edge-app knows"):
        migrate(conn)


def test_upserts_and_placeholders_behave_the_same_on_both_engines(conn):
    migrate(conn)
    sql = ("INSERT INTO cameras (device_id, camera_id, state, error, ts) VALUES (?, ?, ?, ?, ?) "
           "ON CONFLICT (device_id, camera_id) DO UPDATE SET state = excluded.state, ts = excluded.ts")
    with conn.transaction():
        conn.executemany(sql, [("d", "c1", "connecting", None, 1.0), ("d", "c2", "streaming", "50% lost? no", 1.0)])
        conn.executemany(sql, [("d", "c1", "streaming", None, 2.0)])
    with conn.reading():
        assert conn.query("SELECT camera_id, state, error, ts FROM cameras ORDER BY camera_id") == [
            ("c1", "streaming", None, 2.0), ("c2", "streaming", "50% lost? no", 1.0)]
    with pytest.raises(RuntimeError):
        with conn.transaction():
            conn.execute("DELETE FROM cameras")
            raise RuntimeError("rolled back")
    with conn.reading():
        assert conn.query_one("SELECT COUNT(*) FROM cameras") == (2,)


@pytest.mark.parametrize("url, problem", [
    ("mysql://x/y", "unsupported database URL"),
    ("postgresql://nobody:secret@127.0.0.1:1/none", "cannot connect to PostgreSQL at 127.0.0.1:1/none"),
    ("sqlite:////proc/no/such/dir/fleet.db", "cannot open the SQLite database"),
])
def test_a_database_that_cannot_be_opened_is_one_clear_sentence(url, problem):
    with pytest.raises(DatabaseError, match=problem) as caught:
        connect(url)
    assert "secret" not in str(caught.value)


@pytest.mark.parametrize("url, dialect", [("sqlite:///fleet.db", "sqlite"), ("postgresql://h/db", "postgresql"),
                                          ("postgres://h/db", "postgresql")])
def test_the_url_names_the_engine(url, dialect):
    assert dialect_of(url) == dialect
