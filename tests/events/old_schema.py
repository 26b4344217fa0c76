"""An events database as an older edge-app left it, to test the upgrade in place."""
from __future__ import annotations

import sqlite3
from pathlib import Path

from edge_app.events.database import DB_NAME, MIGRATIONS


def database_at(folder: Path, version: int) -> sqlite3.Connection:
    """A new database in ``folder`` with the schema of ``version`` (its migrations and no later
    one), open for the caller to add the rows an appliance of that version wrote."""
    conn = sqlite3.connect(str(Path(folder) / DB_NAME))
    conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    for number, statements in MIGRATIONS:
        if number <= version:
            for statement in statements:
                conn.execute(statement)
    conn.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))
    return conn
