"""A PostgreSQL for the fleet benchmark: its own throw-away cluster if it can, else a fresh database.

Its own cluster uses Debian's server binaries (``/usr/lib/postgresql/<version>/bin``): ``initdb``
in a temporary folder and ``pg_ctl`` on a free loopback port, run as the ``postgres`` user when
the benchmark runs as root (PostgreSQL refuses to run as root). When that is not possible, a
database with a unique name is created on an already running server (``--pg-url``) and dropped
afterwards. :attr:`PostgresForBench.how` says which.
"""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import List, Optional

from testkit.net import free_port


def _server_bin() -> Optional[Path]:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(found[-1]).parent if found else None


class PostgresForBench:
    def __init__(self, fallback_url: str = "postgresql://postgres@127.0.0.1:5432/test"):
        self._fallback_url = fallback_url
        self._dir: Optional[Path] = None
        self._bin: Optional[Path] = None
        self._as_user: List[str] = []
        self._dropped_db: Optional[str] = None
        self.url = ""
        self.how = ""

    def start(self) -> "PostgresForBench":
        error = self._start_cluster()
        if error is None:
            return self
        self._fresh_database(error)
        return self

    def _start_cluster(self) -> Optional[str]:
        self._bin = _server_bin()
        if self._bin is None:
            return "no PostgreSQL server binaries under /usr/lib/postgresql"
        if os.geteuid() == 0:
            try:
                pwd.getpwnam("postgres")
            except KeyError:
                return "running as root and there is no postgres user to run the server as"
            self._as_user = ["runuser", "-u", "postgres", "--"]
        self._dir = Path(tempfile.mkdtemp(prefix="fleet-bench-pg-"))
        if self._as_user:
            shutil.chown(self._dir, "postgres", "postgres")
        data, port = self._dir / "data", free_port()
        steps = [
            [str(self._bin / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"],
            [str(self._bin / "pg_ctl"), "-D", str(data), "-l", str(self._dir / "server.log"), "-w", "-t", "60", "start",
             "-o", f"-p {port} -k {self._dir} -c listen_addresses=127.0.0.1 -c max_connections=50"],
        ]
        for step in steps:
            done = subprocess.run(self._as_user + step, capture_output=True, text=True)
            if done.returncode != 0:
                return f"{Path(step[0]).name} failed: {(done.stderr or done.stdout).strip()[-300:]}"
        self.url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
        self.how = f"its own cluster ({self._bin.parent.name}, initdb + pg_ctl, port {port}, fsync on)"
        return None

    def _fresh_database(self, why: str) -> None:
        import psycopg

        name = f"fleet_bench_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(self._fallback_url, autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {name}")
        self._dropped_db = name
        base = self._fallback_url.rpartition("/")[0]
        self.url = f"{base}/{name}"
        self.how = f"a fresh database {name} on the running server {base.split('@')[-1]} ({why})"

    def stop(self) -> None:
        if self._dropped_db is not None:
            import psycopg

            with psycopg.connect(self._fallback_url, autocommit=True) as admin:
                admin.execute(f"DROP DATABASE IF EXISTS {self._dropped_db} WITH (FORCE)")
        if self._dir is not None and self._bin is not None and (self._dir / "data").exists():
            subprocess.run(self._as_user + [str(self._bin / "pg_ctl"), "-D", str(self._dir / "data"), "-m", "fast",
                                            "-w", "stop"], capture_output=True)
            time.sleep(0.2)
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
