"""The fleet database's schema as ordered migrations, applied at start.

``schema_version`` holds the version reached; each migration runs in its own transaction with
the version bump, so a crash in the middle leaves the previous version intact. A database newer
than this code (a downgrade) is refused rather than guessed at. Statements use only what both
SQLite and PostgreSQL accept (see :mod:`edge_app.fleet_service.db`).
"""
from __future__ import annotations

import logging
from typing import Sequence, Tuple

from edge_app.fleet_service.db import Connection, DatabaseError

logger = logging.getLogger(__name__)

Migration = Tuple[int, str, Sequence[str]]

MIGRATIONS: Tuple[Migration, ...] = (
    (1, "inventory, cameras, stats, counts, events, config and rollouts", (
        """CREATE TABLE devices (
            device_id TEXT PRIMARY KEY,
            state TEXT NOT NULL DEFAULT 'unknown',
            version TEXT,
            status_ts DOUBLE PRECISION,
            first_seen DOUBLE PRECISION NOT NULL,
            last_seen DOUBLE PRECISION NOT NULL,
            stats TEXT,
            stats_ts DOUBLE PRECISION,
            desired_version BIGINT NOT NULL DEFAULT 0,
            reported_version BIGINT NOT NULL DEFAULT 0,
            reported_status TEXT,
            reported_errors TEXT,
            reported_ts DOUBLE PRECISION
        )""",
        "CREATE INDEX devices_state ON devices (state)",
        """CREATE TABLE cameras (
            device_id TEXT NOT NULL,
            camera_id TEXT NOT NULL,
            state TEXT NOT NULL,
            error TEXT,
            ts DOUBLE PRECISION,
            PRIMARY KEY (device_id, camera_id)
        )""",
        """CREATE TABLE counts (
            device_id TEXT NOT NULL,
            topic TEXT NOT NULL,
            payload TEXT NOT NULL,
            ts DOUBLE PRECISION,
            PRIMARY KEY (device_id, topic)
        )""",
        """CREATE TABLE events (
            device_id TEXT NOT NULL,
            event_id TEXT NOT NULL,
            camera_id TEXT,
            label TEXT,
            start_time DOUBLE PRECISION,
            end_time DOUBLE PRECISION,
            entered_zones TEXT NOT NULL DEFAULT '[]',
            body TEXT NOT NULL,
            received_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (device_id, event_id)
        )""",
        "CREATE INDEX events_start ON events (start_time)",
        "CREATE INDEX events_device_start ON events (device_id, start_time)",
        """CREATE TABLE rollouts (
            rollout_id TEXT PRIMARY KEY,
            created_at DOUBLE PRECISION NOT NULL,
            target TEXT NOT NULL,
            patch TEXT NOT NULL
        )""",
        "CREATE INDEX rollouts_created ON rollouts (created_at)",
        """CREATE TABLE rollout_devices (
            rollout_id TEXT NOT NULL,
            device_id TEXT NOT NULL,
            version BIGINT NOT NULL,
            patch TEXT NOT NULL,
            status TEXT NOT NULL,
            errors TEXT,
            updated_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (rollout_id, device_id)
        )""",
        "CREATE INDEX rollout_devices_device ON rollout_devices (device_id, version)",
    )),
    (2, "reports of versions never issued, rollout timeouts", (
        "ALTER TABLE devices ADD COLUMN unissued_version BIGINT",
        "ALTER TABLE devices ADD COLUMN unissued_ts DOUBLE PRECISION",
        "CREATE INDEX rollout_devices_status ON rollout_devices (status, updated_at)",
    )),
    (3, "the latest device health of every appliance", (
        """CREATE TABLE health (
            device_id TEXT PRIMARY KEY,
            body TEXT NOT NULL,
            problems TEXT NOT NULL DEFAULT '',
            problem_count INTEGER NOT NULL DEFAULT 0,
            temperature_c DOUBLE PRECISION,
            ts DOUBLE PRECISION,
            received_at DOUBLE PRECISION NOT NULL
        )""",
        "CREATE INDEX health_problem_count ON health (problem_count)",
    )),
    (4, "model artifacts, prebuilt engines and each device's model state", (
        """CREATE TABLE blobs (
            sha256 TEXT PRIMARY KEY,
            bytes BIGINT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL
        )""",
        """CREATE TABLE models (
            name TEXT NOT NULL,
            version TEXT NOT NULL,
            onnx_sha256 TEXT NOT NULL,
            onnx_bytes BIGINT NOT NULL,
            labels_sha256 TEXT,
            labels_bytes BIGINT,
            created_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (name, version)
        )""",
        "CREATE INDEX models_onnx ON models (onnx_sha256)",
        """CREATE TABLE engines (
            engine_key TEXT PRIMARY KEY,
            onnx_sha256 TEXT NOT NULL,
            sha256 TEXT NOT NULL,
            bytes BIGINT NOT NULL,
            device_id TEXT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL
        )""",
        "CREATE INDEX engines_onnx ON engines (onnx_sha256)",
        "ALTER TABLE devices ADD COLUMN models_state TEXT",
        "ALTER TABLE devices ADD COLUMN models_state_ts DOUBLE PRECISION",
        "ALTER TABLE rollouts ADD COLUMN model_name TEXT",
        "ALTER TABLE rollouts ADD COLUMN model_version TEXT",
    )),
    (5, "when a device was first online (never: forgotten after a while)", (
        "ALTER TABLE devices ADD COLUMN online_at DOUBLE PRECISION",
        # Every device that ever sent a status is taken to have been online: none is forgotten by the upgrade.
        "UPDATE devices SET online_at = first_seen WHERE state <> 'unknown'",
    )),
    (6, "the fleet epoch of each device's desired configurations", (
        # NULL until the first rollout to the device picks one (edge_app.fleet_service.rollouts).
        "ALTER TABLE devices ADD COLUMN desired_epoch TEXT",
    )),
)


def schema_version(conn: Connection) -> int:
    with conn.transaction():
        conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        row = conn.query_one("SELECT MAX(version) FROM schema_version")
    return int(row[0]) if row and row[0] is not None else 0


def migrate(conn: Connection, migrations: Sequence[Migration] = MIGRATIONS) -> int:
    """Bring the schema to the newest version; returns it."""
    latest = max((m[0] for m in migrations), default=0)
    current = schema_version(conn)
    if current > latest:
        raise DatabaseError(f"the fleet database has schema version {current}, newer than this edge-app "
                            f"knows ({latest}); upgrade edge-app or use another database")
    for version, title, statements in sorted(migrations, key=lambda m: m[0]):
        if version <= current:
            continue
        with conn.transaction():
            if conn.dialect == "postgresql":
                # Two services starting on one database: the second waits, then sees the version.
                conn.execute("LOCK TABLE schema_version IN EXCLUSIVE MODE")
            row = conn.query_one("SELECT MAX(version) FROM schema_version")
            if row and row[0] is not None and int(row[0]) >= version:
                continue
            for statement in statements:
                conn.execute(statement)
            conn.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))
        logger.info("fleet database migrated to schema version %d (%s)", version, title)
    return latest
