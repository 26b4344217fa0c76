"""``FleetService``: the database, the MQTT ingest and the rollouts of one fleet, started and stopped together."""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

from edge_app.fleet_service import queries
from edge_app.fleet_service.admission import Admission, AdmissionStats
from edge_app.fleet_service.artifacts import Artifacts
from edge_app.fleet_service.blobs import BlobStore
from edge_app.fleet_service.config import FleetConfig
from edge_app.fleet_service.db import Connection, connect
from edge_app.fleet_service.desired_watch import DesiredWatch
from edge_app.fleet_service.device_removal import forget_never_online, remove_device
from edge_app.fleet_service.ingest import FleetIngest, IngestStats
from edge_app.fleet_service.messages import desired_topic
from edge_app.fleet_service.migrations import migrate
from edge_app.fleet_service.rollouts import Rollout, Rollouts
from edge_app.events.query import EventQuery
from edge_app.process.worker import WorkerThread
from edge_app.version import __version__

logger = logging.getLogger(__name__)

TIMEOUTS_THREAD = "fleet:timeouts"
MIB = 1 << 20


@dataclass(frozen=True)
class FleetStatus:
    """``GET /api/v1/status`` of the fleet service."""

    version: str
    uptime_s: float
    database: str
    devices: Dict[str, int]
    mqtt: IngestStats
    admission: AdmissionStats

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


class FleetService:
    """Opens two connections (the writer's and the API's), migrates, subscribes."""

    def __init__(self, config: FleetConfig):
        self.config = config
        self._started_mono_s = time.monotonic()
        self._writer_conn: Optional[Connection] = None
        self._api_conn: Optional[Connection] = None
        self._ingest: Optional[FleetIngest] = None
        self._rollouts: Optional[Rollouts] = None
        self._blobs: Optional[BlobStore] = None
        self._artifacts: Optional[Artifacts] = None
        self._lock = threading.Lock()
        self._timeouts = WorkerThread(self._expire_loop, TIMEOUTS_THREAD)
        self._watch: Optional[DesiredWatch] = None

    # -- lifecycle
    def start(self) -> None:
        """Open and migrate the database (DatabaseError when it cannot), then subscribe."""
        url = self.config.database.url
        self._writer_conn = connect(url)
        migrate(self._writer_conn)
        self._api_conn = connect(url)
        self._blobs = BlobStore(Path(self.config.artifacts.dir), self.config.artifacts.max_mb * MIB)
        # The API's connection: every artifact query is short, and files never pass through a transaction.
        self._artifacts = Artifacts(self._api_conn)
        with self._api_conn.reading() as conn:
            known = [dev for (dev,) in conn.query("SELECT device_id FROM devices")]
        devices, ingest = self.config.devices, self.config.ingest
        admission = Admission(devices.allow, devices.max, ingest.device_bytes_per_min, known,
                              junk_budget_bytes=ingest.junk_bytes_per_min)
        self._watch = DesiredWatch(self.config.topic_prefix,
                                   lambda topic, body: self.ingest.publish(topic, body, retain=True),
                                   self._republish)
        self._ingest = FleetIngest(self.config.mqtt, self.config.mqtt_client_id, self.config.topic_prefix,
                                   self._writer_conn, events_retain_s=self.config.database.events_retain_days * 86400,
                                   admission=admission, message_bytes=ingest.message_bytes,
                                   stuck_after_s=ingest.stuck_after_s, on_desired=self._watch.heard)
        self._rollouts = Rollouts(self._api_conn, self.config.topic_prefix, self._watch.publish,
                                  desired_keys=lambda: self.config.desired_keys)
        self._watch.start()
        self._ingest.start()
        self._timeouts.start()

    def _expire_loop(self) -> None:
        timeout_s = self.config.rollouts.timeout_s
        forget_after_s = self.config.devices.forget_never_online_after_s
        # Checked a few times per timeout: a version times out (and a device never online is
        # forgotten) at most a quarter late, at most a minute.
        every_s = min(max(min(timeout_s, forget_after_s or timeout_s) / 4, 0.5), 60.0)
        while not self._timeouts.stopping.wait(every_s):
            try:
                assert self._rollouts is not None
                self._rollouts.expire(timeout_s)
                if forget_after_s:
                    for device_id in forget_never_online(self.conn, time.time() - forget_after_s):
                        self.ingest.admission.forget(device_id)
            except Exception as err:  # a database away: the next round tries again
                logger.warning("checking rollouts for timeouts and devices to forget failed: %s", err)

    def stop(self, timeout_s: float = 3.0) -> None:
        self._timeouts.stop(timeout_s)
        if self._watch is not None:
            self._watch.stop(timeout_s)
        if self._ingest is not None:
            self._ingest.stop(timeout_s)
        for conn in (self._api_conn, self._writer_conn):
            if conn is not None:
                conn.close()

    @property
    def ingest(self) -> FleetIngest:
        assert self._ingest is not None, "the fleet service is not started"
        return self._ingest

    def _republish(self, device_id: str) -> bool:
        assert self._rollouts is not None, "the fleet service is not started"
        return self._rollouts.republish(device_id)

    @property
    def conn(self) -> Connection:
        assert self._api_conn is not None, "the fleet service is not started"
        return self._api_conn

    @property
    def blobs(self) -> BlobStore:
        assert self._blobs is not None, "the fleet service is not started"
        return self._blobs

    @property
    def artifacts(self) -> Artifacts:
        assert self._artifacts is not None, "the fleet service is not started"
        return self._artifacts

    # -- what the API asks
    def current_config(self) -> FleetConfig:
        return self.config

    def readiness(self) -> Tuple[bool, List[str]]:
        reasons = []
        if self._ingest is None or not self._ingest.connected:
            reasons.append(f"not connected to the MQTT broker at {self.config.mqtt.host}:{self.config.mqtt.port}")
        stuck_s = self._ingest.stuck_s() if self._ingest is not None else 0.0
        if stuck_s:
            reasons.append(f"the fleet database has taken no message for {stuck_s:.0f} s while messages wait "
                           "(the service log says why)")
        return not reasons, reasons

    def status(self) -> FleetStatus:
        with self.conn.reading() as conn:
            rows = conn.query("SELECT state, COUNT(*) FROM devices GROUP BY state")
        return FleetStatus(__version__, round(time.monotonic() - self._started_mono_s, 1), self.conn.dialect,
                           {state: int(n) for state, n in rows}, self.ingest.stats(), self.ingest.admission.stats())

    def devices(self, state: Optional[str] = None, limit: int = queries.DEFAULT_PAGE,
                after: Optional[str] = None, problem: Optional[str] = None,
                sort: Optional[str] = None) -> queries.DevicePage:
        return queries.list_devices(self.conn, state, limit, after, problem, sort)

    def device(self, device_id: str) -> Optional[queries.DeviceDetail]:
        return queries.get_device(self.conn, device_id)

    def events(self, query: EventQuery, device: Optional[str] = None) -> List[Dict[str, Any]]:
        return queries.list_events(self.conn, query, device)

    def rollouts(self, limit: int = 20) -> List[Dict[str, Any]]:
        return queries.list_rollouts(self.conn, limit)

    def rollout(self, rollout_id: str) -> Optional[Dict[str, Any]]:
        return queries.get_rollout(self.conn, rollout_id)

    def start_rollout(self, targets: Union[str, List[str]], patch: Dict[str, Any],
                      model: Optional[Tuple[str, str]] = None) -> Rollout:
        assert self._rollouts is not None, "the fleet service is not started"
        return self._rollouts.start(targets, patch, model)

    def remove_device(self, device_id: str) -> bool:
        """Remove a device with everything stored of it (False: unknown); its retained desired message is deleted."""
        if not remove_device(self.conn, device_id):
            return False
        self.ingest.admission.forget(device_id)
        # The topic the fleet owns: a device of that id returning later is not handed an old version.
        assert self._watch is not None
        self._watch.publish(desired_topic(self.config.topic_prefix, device_id), b"")
        return True

    def reset_version(self, device_id: str, version: int) -> int:
        assert self._rollouts is not None, "the fleet service is not started"
        return self._rollouts.reset(device_id, version)
