"""A fleet service running in the test process on a real broker, reached over real HTTP."""
from __future__ import annotations

import shutil
import tempfile
import uuid
from dataclasses import dataclass
from typing import Any, Optional

import requests

from edge_app.http_server.server import ApiServer
from edge_app.fleet_service.app import fleet_server
from edge_app.fleet_service.config import FleetConfig
from edge_app.fleet_service.fleet import FleetService


@dataclass
class RunningFleet:
    service: FleetService
    server: ApiServer
    prefix: str
    artifacts_dir: Optional[str] = None  # a temporary one of this fleet's own, removed at stop

    @property
    def url(self) -> str:
        return self.server.url

    def get(self, path: str, **kwargs) -> requests.Response:
        return requests.get(self.url + path, timeout=10, **kwargs)

    def patch(self, path: str, body, **kwargs) -> requests.Response:
        return requests.patch(self.url + path, json=body, timeout=10, **kwargs)

    def post(self, path: str, body, **kwargs) -> requests.Response:
        return requests.post(self.url + path, json=body, timeout=10, **kwargs)

    def device(self, device_id: str) -> dict:
        response = self.get(f"/api/v1/devices/{device_id}")
        return response.json() if response.status_code == 200 else {}

    def stop(self) -> None:
        self.server.stop(2)
        self.service.stop(2)
        if self.artifacts_dir is not None:
            shutil.rmtree(self.artifacts_dir, ignore_errors=True)



def start_fleet(broker: Any, db_url: str, **overrides: Any) -> RunningFleet:
    """A started fleet service on ``broker`` (``.host``, ``.port``) and ``db_url``, its API on a free port.

    ``overrides`` are FLEET.yaml sections merged over the defaults (``api={"token": ...}``);
    ``topic_prefix`` defaults to a unique one, so tests sharing a broker do not see each other.
    """
    prefix = overrides.pop("topic_prefix", f"fleet{uuid.uuid4().hex[:6]}")
    data = {"mqtt": {"host": broker.host, "port": broker.port, "keepalive": 5,
                     "client_id": f"fleet-{uuid.uuid4().hex[:8]}"},
            "topic_prefix": prefix, "database": {"url": db_url},
            "api": {"host": "127.0.0.1", "port": 0}}
    own_artifacts = None if "artifacts" in overrides else tempfile.mkdtemp(prefix="fleet-artifacts-")
    if own_artifacts is not None:  # never the default "artifacts" in the working directory
        data["artifacts"] = {"dir": own_artifacts}
    for key, value in overrides.items():
        data[key] = {**data.get(key, {}), **value} if isinstance(value, dict) else value
    config = FleetConfig.model_validate(data)
    service = FleetService(config)
    service.start()
    if not service.ingest.wait_subscribed(10):
        service.stop()
        raise AssertionError("the fleet service did not subscribe")
    server = fleet_server(service)
    server.start()
    return RunningFleet(service, server, prefix, own_artifacts)
