"""A fleet of simulated appliances in one process, for the fleet service and its broker.

    python -m bench.fleet sim --broker HOST:PORT --prefix PREFIX --devices N --cameras 4 --duration-s S

Options (all optional; defaults in brackets):

    --broker HOST:PORT      the broker [none: start a private Mosquitto on a free loopback port,
                            configured for N connections, and print its address]
    --prefix PREFIX         mqtt.topic_prefix of every appliance [edge_app]
    --devices N             number of appliances [1000]
    --cameras C             cameras per appliance [4]
    --duration-s S          how long to run after the first connection [60]
    --id-format FMT         device ids, str.format with {index} [sim-{index:04d}]
    --stats-interval-s S    period of R/stats [10]
    --health-interval-s S   period of R/health [30]; 0: none
    --event-period-s S      one event (new, update, end) and its counts per camera per period [60]
    --kill K                kill K appliances abruptly (no DISCONNECT: their last will fires) [0]
    --kill-at-s T           when, in seconds after start [duration / 2]
    --username / --password per-device credentials, "{device_id}" replaced [none]
    --tls-ca PATH           connect with TLS, checking the broker against this CA [plain TCP]
    --fleet-username / --fleet-password   the rollout connection's account [none]
    --connect-rate R        new connections per second [500]
    --seed N                randomness of ids killed, labels and timing [1]
    --rollout-at-s T        at T s, publish a desired version to every appliance (as the fleet
                            service would, from one extra connection) and time the reports [off]
    --rollout-patch JSON    the merge patch of that rollout [{"model": {"conf_threshold": 0.3}}]
    --rollout-invalid K     K of the appliances get a patch the rules refuse instead [0]
    --rollout-version N     its version [1000; simulated appliances start with nothing saved]
    --json PATH             also write the summary there

Each appliance has its own MQTT connection (client id ``edge-app-<device_id>``) and speaks the
real topic contract with the appliance's own payload builders (``bench.fleet.device``): retained
``online`` birth and ``offline`` last will on ``R/status``, retained camera states and
``detect/state``, ``R/stats``, ``R/events`` new/update/end and retained object counts, and it
answers ``R/config/desired`` on ``R/config/reported`` through the appliance's own ``FleetAgent``:
``applied``, or ``rejected`` with located errors for a patch the configuration rules refuse
(``{"cameras": [{"id": "x", "fps_limit": -1}]}``, a ``gst:`` source, ...).

At the end it prints one JSON line: devices, connected, killed (and how many of their last wills
the fleet connection received), how long connecting took, its own
sending rate (messages and bytes handed to the sockets, messages acknowledged by the broker) and,
with --rollout-at-s, the rollout: applied, rejected, missing, and the time from each appliance's
desired message to its report (p50, p99) and until the last report.
Many connections need file descriptors: the soft ``ulimit -n`` is raised to the hard limit.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import logging
import random
import re
import resource
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

from bench.common.provenance import NO_MODEL, collect, write_results
from bench.fleet.device import DeviceSettings, SimulatedAppliance
from bench.fleet.rollout import RolloutProbe, RolloutResult
from edge_app.config.schema_rules import ID_PATTERN
from testkit.broker import MosquittoBroker

log = logging.getLogger("bench.fleet.sim")


@dataclass
class FleetSummary:
    broker: str
    devices: int
    cameras: int
    connected: int
    killed: int
    connect_s: Optional[float]  # until every appliance was connected; None if some never were
    duration_s: float
    messages_sent: int
    bytes_sent: int
    messages_acked: int
    messages_per_s: float
    bytes_per_s: float
    desired_handled: int
    desired_ms_mean: Optional[float]  # the simulator's own time per desired message (ConfigChanges included)
    cpu_s: float  # CPU time of the simulator process (user + system)
    errors: int
    first_errors: List[str] = field(default_factory=list)
    killed_ids: List[str] = field(default_factory=list)
    wills_seen: Optional[int] = None  # killed appliances whose last will the fleet connection received
    rollout: Optional[RolloutResult] = None


def raise_fd_limit(wanted: int) -> int:
    """Raise the soft RLIMIT_NOFILE towards the hard limit; returns the soft limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard == resource.RLIM_INFINITY else max(soft, min(hard, wanted))
    if target != soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def start_private_broker(devices: int, work_dir: Path) -> MosquittoBroker:
    """A Mosquitto on a free loopback port, sized for a fleet: no connection cap, big queues."""
    # The broker inherits the raised descriptor limit: one descriptor per connection.
    raise_fd_limit(devices * 2 + 256)
    return MosquittoBroker(work_dir, allow_anonymous=True, persistence=False, log_types=("error", "warning"),
                           extra_config=["max_connections -1", "max_queued_messages 10000"]).start()


def parse_broker(text: str) -> Tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host, int(port)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench.fleet sim", description="Simulate a fleet of edge-app appliances.")
    parser.add_argument("--broker", type=parse_broker, default=None)
    parser.add_argument("--prefix", default="edge_app")
    parser.add_argument("--devices", type=int, default=1000)
    parser.add_argument("--cameras", type=int, default=4)
    parser.add_argument("--duration-s", type=float, default=60.0)
    parser.add_argument("--id-format", default="sim-{index:04d}")
    parser.add_argument("--stats-interval-s", type=float, default=10.0)
    parser.add_argument("--health-interval-s", type=float, default=30.0, help="period of R/health; 0: none")
    parser.add_argument("--event-period-s", type=float, default=60.0)
    parser.add_argument("--kill", type=int, default=0)
    parser.add_argument("--kill-at-s", type=float, default=None)
    parser.add_argument("--username", default=None)
    parser.add_argument("--password", default=None)
    parser.add_argument("--tls-ca", default=None)
    parser.add_argument("--fleet-username", default=None)
    parser.add_argument("--fleet-password", default=None)
    parser.add_argument("--connect-rate", type=float, default=500.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rollout-at-s", type=float, default=None)
    parser.add_argument("--rollout-patch", type=json.loads, default={"model": {"conf_threshold": 0.3}})
    parser.add_argument("--rollout-invalid", type=int, default=0)
    parser.add_argument("--rollout-version", type=int, default=None)
    parser.add_argument("--json", type=Path, default=None)
    return parser


class FleetSimulator:
    def __init__(self, settings: DeviceSettings, device_ids: Sequence[str], seed: int = 1) -> None:
        self.settings = settings
        self.device_ids = list(device_ids)
        self.devices: List[SimulatedAppliance] = []
        self._random = random.Random(seed)
        self._seed = seed
        self.killed: List[str] = []

    async def connect_all(self, rate_per_s: float) -> Optional[float]:
        loop = asyncio.get_running_loop()
        started = time.monotonic()
        step = max(1, int(rate_per_s / 20))
        for index, device_id in enumerate(self.device_ids):
            device = SimulatedAppliance(device_id, self.settings, loop, seed=self._seed * 100003 + index)
            self.devices.append(device)
            device.connect()
            if (index + 1) % step == 0:
                await asyncio.sleep(step / rate_per_s)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if all(d.connected for d in self.devices):
                return round(time.monotonic() - started, 2)
            await asyncio.sleep(0.05)
        return None

    def kill(self, count: int) -> List[str]:
        alive = [d for d in self.devices if not d.killed]
        chosen = self._random.sample(alive, min(count, len(alive)))
        for device in chosen:
            device.kill()
        self.killed += [d.device_id for d in chosen]
        log.info("killed %d appliances", len(chosen))
        return [d.device_id for d in chosen]

    async def close(self, ack_timeout_s: float = 5.0) -> None:
        pending = [info for info in (device.say_offline() for device in self.devices) if info is not None]
        deadline = time.monotonic() + ack_timeout_s
        while time.monotonic() < deadline and not all(info.is_published() for info in pending):
            await asyncio.sleep(0.02)
        for device in self.devices:
            device.disconnect()
        await asyncio.sleep(0.5)  # let the DISCONNECTs reach the sockets


async def run(args: argparse.Namespace, broker: Tuple[str, int]) -> FleetSummary:
    settings = DeviceSettings(broker[0], broker[1], args.prefix, args.cameras, args.stats_interval_s,
                              args.event_period_s, args.username, args.password, tls_ca=args.tls_ca,
                              health_interval_s=args.health_interval_s)
    ids = [args.id_format.format(index=i) for i in range(args.devices)]
    sim = FleetSimulator(settings, ids, args.seed)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    started = time.monotonic()
    connect_s = await sim.connect_all(args.connect_rate)
    log.info("%d appliances connected in %s s", sum(d.connected for d in sim.devices), connect_s)
    kill_at_s = args.duration_s / 2 if args.kill_at_s is None else args.kill_at_s
    if args.kill:
        loop.call_at(loop.time() + max(0.0, kill_at_s - (time.monotonic() - started)), sim.kill, args.kill)
    probe = None
    if args.kill or args.rollout_at_s is not None:
        probe = RolloutProbe(broker[0], broker[1], args.prefix, loop, args.fleet_username, args.fleet_password, args.tls_ca)
        await probe.connect()
    rollout = None
    if probe is not None and args.rollout_at_s is not None:
        rollout = loop.create_task(_rollout(args, probe, sim, max(0.0, args.rollout_at_s - (time.monotonic() - started))))
    try:
        await asyncio.wait_for(stop.wait(), timeout=max(0.0, args.duration_s - (time.monotonic() - started)))
    except asyncio.TimeoutError:
        pass
    rollout_result = None
    if rollout is not None:
        rollout_result = await rollout if rollout.done() or not stop.is_set() else None
    connected = sum(d.connected for d in sim.devices)
    elapsed_s = time.monotonic() - started
    wills_seen = None if probe is None else len(probe.offline_seen & set(sim.killed))
    if probe is not None:
        probe.close()
    await sim.close()
    counters = [d.counters for d in sim.devices]
    errors = [e for c in counters for e in c.errors]
    sent, sent_bytes = sum(c.sent for c in counters), sum(c.sent_bytes for c in counters)
    handled = sum(c.desired_handled for c in counters)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return FleetSummary(
        broker=f"{broker[0]}:{broker[1]}", devices=len(ids), cameras=args.cameras, connected=connected,
        killed=len(sim.killed), connect_s=connect_s, duration_s=round(elapsed_s, 2), messages_sent=sent,
        bytes_sent=sent_bytes, messages_acked=sum(c.acked for c in counters),
        messages_per_s=round(sent / elapsed_s, 1), bytes_per_s=round(sent_bytes / elapsed_s, 1),
        desired_handled=handled,
        desired_ms_mean=round(1000 * sum(c.desired_s for c in counters) / handled, 2) if handled else None,
        cpu_s=round(usage.ru_utime + usage.ru_stime, 1), errors=len(errors), first_errors=errors[:5],
        killed_ids=list(sim.killed), wills_seen=wills_seen, rollout=rollout_result)


#: a patch every appliance refuses: a negative fps_limit (the rules of PATCH /api/v1/config)
#: Above what a test sends by hand first, within the appliance's bounded step from nothing saved.
DEFAULT_ROLLOUT_VERSION = 1000
INVALID_PATCH = {"cameras": [{"id": "cam1", "source": "rtsp://10.0.0.10:554/stream1", "fps_limit": -1}]}


async def _rollout(args: argparse.Namespace, probe: RolloutProbe, sim: "FleetSimulator", delay_s: float) -> RolloutResult:
    await asyncio.sleep(delay_s)
    patches = {"*": args.rollout_patch}
    for device_id in sim.device_ids[:max(0, args.rollout_invalid)]:
        patches[device_id] = INVALID_PATCH
    alive = [d.device_id for d in sim.devices if not d.killed]
    version = args.rollout_version if args.rollout_version is not None else DEFAULT_ROLLOUT_VERSION
    result = await probe.rollout(alive, patches, version, timeout_s=max(5.0, args.duration_s))
    log.info("rollout of version %d: %s", version, result)
    return result


def check_args(args: argparse.Namespace) -> Optional[str]:
    """Why the options cannot run, or None."""
    positive = ("devices", "cameras", "duration_s", "stats_interval_s", "event_period_s", "connect_rate")
    for name in positive:
        if getattr(args, name) <= 0:
            return f"--{name.replace('_', '-')} must be positive"
    if args.kill < 0 or args.rollout_invalid < 0:
        return "--kill and --rollout-invalid cannot be negative"
    if not isinstance(args.rollout_patch, dict):
        return "--rollout-patch must be a JSON object (a merge patch)"
    try:
        ids = [args.id_format.format(index=i) for i in (0, args.devices - 1)]
    except (KeyError, IndexError, ValueError) as err:
        return f"--id-format {args.id_format!r} does not format with {{index}}: {err}"
    bad = [device_id for device_id in ids if not re.match(ID_PATTERN, device_id)]
    if bad:
        return f"--id-format makes {bad[0]!r}, not a valid device_id ({ID_PATTERN})"
    return None


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("edge_app").setLevel(logging.ERROR)  # a line per device and desired message is noise here
    problem = check_args(args)
    if problem:
        print(f"fleet_sim: {problem}", file=sys.stderr)
        return 2
    limit = raise_fd_limit(args.devices + 256)
    if limit < args.devices + 64:
        print(f"fleet_sim: ulimit -n is {limit}, too low for {args.devices} connections", file=sys.stderr)
        return 2
    broker_process = None
    broker_dir = Path(tempfile.mkdtemp(prefix="fleet-sim-broker-"))
    broker = args.broker
    try:
        if broker is None:
            broker_process = start_private_broker(args.devices, broker_dir)
            broker = ("127.0.0.1", broker_process.port)
            print(f"fleet_sim: broker 127.0.0.1:{broker_process.port}", file=sys.stderr, flush=True)
        summary = asyncio.run(run(args, broker))
    finally:
        if broker_process is not None:
            broker_process.stop()
        shutil.rmtree(broker_dir, ignore_errors=True)
    line = json.dumps(asdict(summary))
    print(line, flush=True)
    if args.json is not None:
        write_results(args.json, asdict(summary), collect(NO_MODEL))
    return 0
