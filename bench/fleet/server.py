"""The fleet service at scale: 1,000 simulated appliances, a real Mosquitto, SQLite then PostgreSQL.

    python -m bench.fleet server [--devices 1000] [--cameras 4] [--duration-s 150] [--kill 100]
                                [--kill-at-s 100] [--event-period-s 60] [--engines sqlite,postgresql] [--json PATH]

Per engine it starts a Mosquitto sized for the fleet (no connection cap), the fleet service
(``edge-app fleet``, a separate process) on a fresh database, an independent witness subscriber
(:mod:`bench.fleet.witness`) and ``bench.fleet sim``, then measures: how long until every
appliance shows online, a rollout to all of them until each reported it applied, how long the
appliances killed by the simulator take to show offline after their last will, the messages
the fleet ingested per second, the events it lost against what the broker delivered to the
witness, and the fleet process's CPU and memory (psutil). PostgreSQL: see
:mod:`bench.fleet.postgres` (its own cluster when possible).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence

import psutil
import requests
import yaml

from bench.common.provenance import NO_MODEL, collect, write_results
from bench.fleet.device import bench_desired_key
from bench.fleet.postgres import PostgresForBench
from bench.fleet.sim import raise_fd_limit
from bench.fleet.witness import FleetWitness
from testkit.broker import MosquittoBroker
from testkit.net import free_port
from testkit.waiting import wait_for

if TYPE_CHECKING:  # a bench that serves HTTPS makes them with testkit.certs
    from testkit.certs import BrokerCertificates

ROLLOUT_PATCH = {"model": {"conf_threshold": 0.3}}
POLL_S = 0.1


@dataclass
class EngineResult:
    engine: str
    database: str
    devices: int
    cameras: int
    all_online_s: Optional[float]
    all_online_broker_s: Optional[float]  # the last birth at the witness: what the simulator and broker take
    rollout_s: Optional[float]
    rollout_broker_s: Optional[float]  # the last report at the witness
    rollout_applied: int
    rollout_rejected: int
    killed: int
    offline_after_will_s: Optional[float]  # first last will at the witness -> every killed one offline in the fleet
    offline_lag_max_s: Optional[float]  # worst delay of the fleet behind the witness, per killed appliance
    ingest_msgs_per_s: float  # steady state, messages the fleet received / wall time
    ingest_peak_msgs_per_s: float  # highest 1-second rate (the connection burst)
    sim_msgs_per_s: float
    events_seen: int
    events_lost: int
    ends_lost: int
    cpu_cores_steady: float
    cpu_cores_connect: float
    rss_max_mb: float
    rejected_messages: int
    load_avg_1m: float  # the machine's 1-minute load average at the end: what else ran meanwhile


def _wait(condition: Callable[[], object], timeout_s: float, what: str) -> object:
    """The kit's wait at the bench's pace; a timeout is the run's failure (RuntimeError), not a test's."""
    try:
        return wait_for(condition, timeout_s, what, POLL_S)
    except AssertionError as err:
        raise RuntimeError(str(err)) from None


def start_broker(work: Path, devices: int) -> MosquittoBroker:
    """The fleet's broker: anonymous, no persistence, errors and warnings logged, no connection limit."""
    raise_fd_limit(devices * 2 + 512)  # inherited: one descriptor per connection
    return MosquittoBroker(work, allow_anonymous=True, persistence=False, log_types=("error", "warning"),
                           extra_config=["max_connections -1", "max_queued_messages 100000",
                                         "max_inflight_messages 100"]).start()


class FleetProcess:
    """``edge-app fleet`` as a separate process; with ``tls`` (a server certificate, its key and the CA
    that signed them) it serves HTTPS, and ``verify`` is what a client checks it against."""

    def __init__(self, work: Path, broker_port: int, prefix: str, db_url: str, device_ids: Sequence[str] = (),
                 extra: Optional[dict] = None, tls: Optional[BrokerCertificates] = None):
        self.port = free_port()
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        self.verify: Any = str(tls.ca) if tls else True
        api: Dict[str, Any] = {"host": "127.0.0.1", "port": self.port}
        if tls:
            api["tls"] = {"enabled": True, "certfile": str(tls.server_cert), "keyfile": str(tls.server_key)}
        config = {"mqtt": {"host": "127.0.0.1", "port": broker_port, "keepalive": 30, "client_id": f"fleet-{prefix}"},
                  "topic_prefix": prefix, "database": {"url": db_url}, "devices": {"max": max(len(device_ids), 1)},
                  "api": api, "logging": {"level": "WARNING"},
                  # The simulated appliances act only on what is signed with their keys (bench.fleet.device).
                  "desired_keys": {device_id: bench_desired_key(device_id) for device_id in device_ids}}
        for section, value in (extra or {}).items():  # a section given is merged over the one above
            config[section] = {**config.get(section, {}), **value} if isinstance(value, dict) else value
        (work / "FLEET.yaml").write_text(yaml.safe_dump(config))
        self.log = open(work / "fleet.log", "wb")
        self.process = subprocess.Popen([sys.executable, "-m", "edge_app", "fleet", "-c", str(work / "FLEET.yaml")],
                                        cwd=work, stdout=self.log, stderr=subprocess.STDOUT)
        self.ps = psutil.Process(self.process.pid)
        _wait(lambda: self._ready(), 60, "the fleet service")

    def _ready(self) -> bool:
        if self.process.poll() is not None:
            raise RuntimeError(f"the fleet service exited with {self.process.returncode}")
        try:
            return requests.get(self.url + "/readyz", timeout=2, verify=self.verify).status_code == 200
        except requests.RequestException:
            return False

    def status(self) -> dict:
        return requests.get(self.url + "/api/v1/status", timeout=10, verify=self.verify).json()

    def cpu_s(self) -> float:
        times = self.ps.cpu_times()
        return times.user + times.system

    def rss_mb(self) -> float:
        return self.ps.memory_info().rss / 2**20

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()


def _stored_events(db_url: str) -> Dict[tuple, Optional[float]]:
    sql = "SELECT device_id, event_id, end_time FROM events"
    if db_url.startswith("sqlite:///"):
        with sqlite3.connect(db_url[len("sqlite:///"):]) as conn:
            rows = conn.execute(sql).fetchall()
    else:
        import psycopg

        with psycopg.connect(db_url) as conn:
            rows = conn.execute(sql).fetchall()
    return {(d, e): end for d, e, end in rows}


class Sampler:
    """The fleet's received counter, CPU time and RSS, sampled on every poll."""

    def __init__(self, fleet: FleetProcess):
        self.fleet = fleet
        self.samples: List[tuple] = []  # (monotonic, received, cpu_s)
        self.rss_max_mb = 0.0
        self.last_status: dict = {}

    def poll(self) -> dict:
        status = self.fleet.status()
        self.last_status = status
        self.samples.append((time.monotonic(), status["mqtt"]["received"], self.fleet.cpu_s()))
        self.rss_max_mb = max(self.rss_max_mb, self.fleet.rss_mb())
        return status

    def rate_between(self, start: float, end: float) -> tuple:
        window = [s for s in self.samples if start <= s[0] <= end]
        if len(window) < 2:
            return 0.0, 0.0
        (t0, r0, c0), (t1, r1, c1) = window[0], window[-1]
        return (r1 - r0) / (t1 - t0), (c1 - c0) / (t1 - t0)

    def peak_rate(self) -> float:
        best, j = 0.0, 0
        for i, (t, r, _) in enumerate(self.samples):
            while self.samples[j][0] < t - 1.0:
                j += 1
            if t - self.samples[j][0] >= 0.5:
                best = max(best, (r - self.samples[j][1]) / (t - self.samples[j][0]))
        return best


def run_engine(engine: str, args: argparse.Namespace, work: Path) -> EngineResult:
    pg = None
    if engine == "sqlite":
        db_url, database = f"sqlite:///{work / 'fleet.db'}", "SQLite file (WAL)"
    else:
        pg = PostgresForBench(args.pg_url).start()
        db_url, database = pg.url, "PostgreSQL: " + pg.how
    prefix = f"bench_{engine}"
    broker = start_broker(work, args.devices)
    fleet = witness = sim = None
    try:
        fleet = FleetProcess(work, broker.port, prefix, db_url, [f"sim-{index:04d}" for index in range(args.devices)])
        witness = FleetWitness("127.0.0.1", broker.port, prefix).start()
        sampler = Sampler(fleet)
        sampler.poll()
        started = time.monotonic()
        sim = subprocess.Popen(
            [sys.executable, "-m", "bench.fleet", "sim", "--broker", f"127.0.0.1:{broker.port}", "--prefix", prefix,
             "--devices", str(args.devices), "--cameras", str(args.cameras), "--duration-s", str(args.duration_s),
             "--kill", str(args.kill), "--kill-at-s", str(args.kill_at_s), "--event-period-s", str(args.event_period_s),
             "--health-interval-s", str(args.health_interval_s), "--json", str(work / "sim.json")],
            stdout=subprocess.DEVNULL, stderr=open(work / "sim.log", "wb"))

        def online() -> bool:
            return sampler.poll().get("devices", {}).get("online", 0) >= args.devices

        all_online_s = round(_wait(online, 180, "every appliance online") and time.monotonic() - started, 2)
        online_at = time.monotonic()
        births, _ = witness.times()
        all_online_broker_s = round(max(births.values()) - started, 2) if len(births) >= args.devices else None
        time.sleep(args.settle_s)

        # From before the request: appliances answer while the fleet is still publishing to the others.
        rollout_started = time.monotonic()
        rollout = requests.patch(fleet.url + "/api/v1/fleet/config", json={"devices": "all", "patch": ROLLOUT_PATCH},
                                 timeout=60)
        rollout.raise_for_status()
        rollout_id = rollout.json()["rollout_id"]
        tally: dict = {}

        def settled() -> bool:
            nonlocal tally
            sampler.poll()
            tally = requests.get(f"{fleet.url}/api/v1/rollouts/{rollout_id}", timeout=30).json()["devices"]
            return tally["pending"] == 0

        _wait(settled, 120, "the rollout reported by every appliance")
        rollout_s = round(time.monotonic() - rollout_started, 2)
        _, reports = witness.times()
        answered = [t for t in reports.values() if t >= rollout_started]
        rollout_broker_s = round(max(answered) - rollout_started, 2) if len(answered) >= args.devices else None

        fleet_offline_at: Dict[str, float] = {}
        offline_after_will_s = lag_max_s = None
        if args.kill:
            def killed_offline() -> bool:
                sampler.poll()
                _, _, wills = witness.snapshot()
                if len(wills) < args.kill:
                    return False
                offline = requests.get(fleet.url + "/api/v1/devices?state=offline", timeout=30).json()["devices"]
                now = time.monotonic()
                for device in offline:
                    fleet_offline_at.setdefault(device["device_id"], now)
                return all(d in fleet_offline_at for d in wills)

            _wait(killed_offline, args.kill_at_s + 60, "the killed appliances offline")
            _, _, wills = witness.snapshot()
            offline_after_will_s = round(max(fleet_offline_at[d] for d in wills) - min(wills.values()), 2)
            lag_max_s = round(max(fleet_offline_at[d] - wills[d] for d in wills), 2)

        while sim.poll() is None:
            sampler.poll()
            time.sleep(0.5)
        steady_end = time.monotonic()
        _wait(lambda: sampler.poll()["mqtt"]["backlog"] == 0, 60, "the fleet to write everything")
        time.sleep(2)  # the last batch committed
        events, ended, _ = witness.snapshot()
        stored = _stored_events(db_url)
        lost = events - set(stored)
        ends_lost = [k for k in ended if stored.get(k) is None]
        rate, cpu_steady = sampler.rate_between(online_at + 2, steady_end)
        _, cpu_connect = sampler.rate_between(started, online_at)
        sim_summary = json.loads((work / "sim.json").read_text())
        return EngineResult(
            engine=engine, database=database, devices=args.devices, cameras=args.cameras, all_online_s=all_online_s,
            all_online_broker_s=all_online_broker_s, rollout_s=rollout_s, rollout_broker_s=rollout_broker_s, rollout_applied=tally.get("applied", 0), rollout_rejected=tally.get("rejected", 0),
            killed=args.kill, offline_after_will_s=offline_after_will_s, offline_lag_max_s=lag_max_s,
            ingest_msgs_per_s=round(rate, 1), ingest_peak_msgs_per_s=round(sampler.peak_rate(), 1),
            sim_msgs_per_s=sim_summary["messages_per_s"], events_seen=len(events), events_lost=len(lost),
            ends_lost=len(ends_lost), cpu_cores_steady=round(cpu_steady, 3), cpu_cores_connect=round(cpu_connect, 3),
            rss_max_mb=round(sampler.rss_max_mb, 1), rejected_messages=sampler.last_status["mqtt"]["rejected"],
            load_avg_1m=round(os.getloadavg()[0], 1))
    finally:
        if sim is not None and sim.poll() is None:
            sim.terminate()
            sim.wait(30)
        if witness is not None:
            witness.stop()
        if fleet is not None:
            fleet.stop()
        broker.stop()
        if pg is not None:
            pg.stop()


def table(results: List[EngineResult]) -> str:
    rows = [
        ("appliances x cameras", lambda r: f"{r.devices} x {r.cameras}"),
        ("database", lambda r: r.database),
        ("all online in the fleet after start (s)", lambda r: r.all_online_s),
        ("  the last birth at the witness (s)", lambda r: r.all_online_broker_s),
        ("rollout to all, until every report in the fleet (s)",
         lambda r: f"{r.rollout_s} ({r.rollout_applied} applied, {r.rollout_rejected} rejected)"),
        ("  the last report at the witness (s)", lambda r: r.rollout_broker_s),
        ("killed appliances offline after the first last will (s)", lambda r: f"{r.offline_after_will_s} ({r.killed} killed; worst lag behind the broker {r.offline_lag_max_s} s)"),
        ("messages ingested per s, steady (peak 1 s)", lambda r: f"{r.ingest_msgs_per_s} ({r.ingest_peak_msgs_per_s})"),
        ("simulator's sending rate (msg/s)", lambda r: r.sim_msgs_per_s),
        ("events lost / seen by the witness", lambda r: f"{r.events_lost} / {r.events_seen} (ends lost: {r.ends_lost})"),
        ("fleet CPU, steady (cores)", lambda r: r.cpu_cores_steady),
        ("fleet CPU, while the appliances connect (cores)", lambda r: r.cpu_cores_connect),
        ("fleet peak RSS (MB)", lambda r: r.rss_max_mb),
        ("machine load average (1 min) at the end", lambda r: r.load_avg_1m),
    ]
    head = "| | " + " | ".join(r.engine for r in results) + " |\n|---|" + "---|" * len(results) + "\n"
    return head + "\n".join(f"| {name} | " + " | ".join(str(get(r)) for r in results) + " |" for name, get in rows)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fleet server", description=__doc__.split("\n\n")[0])
    parser.add_argument("--devices", type=int, default=1000)
    parser.add_argument("--cameras", type=int, default=4)
    parser.add_argument("--duration-s", type=float, default=150.0)
    parser.add_argument("--kill", type=int, default=100)
    parser.add_argument("--kill-at-s", type=float, default=100.0)
    parser.add_argument("--event-period-s", type=float, default=60.0, help="one event per camera per period")
    parser.add_argument("--health-interval-s", type=float, default=30.0, help="period of R/health per appliance; 0: none")
    parser.add_argument("--settle-s", type=float, default=10.0, help="wait after all online before the rollout")
    parser.add_argument("--engines", default="sqlite,postgresql")
    parser.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/test",
                        help="server for a fresh database when no cluster of its own can be started")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    results = []
    for engine in args.engines.split(","):
        work = Path(tempfile.mkdtemp(prefix=f"fleet-bench-{engine}-"))
        try:
            results.append(run_engine(engine, args, work))
        finally:
            shutil.rmtree(work, ignore_errors=True)
        print(json.dumps(asdict(results[-1])), flush=True)
    print(table(results))
    if args.json is not None:
        write_results(args.json, {"engines": [asdict(r) for r in results]}, collect(NO_MODEL))
    return 0
