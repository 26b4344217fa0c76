"""``edge-app fleet -c FLEET.yaml``: the fleet service in the foreground until SIGINT/SIGTERM."""
from __future__ import annotations

import logging
import sys
import time

from edge_app.fleet_service.config import FleetConfig
from edge_app.process.shutdown import STOP_BUDGET_S, StopSignals

logger = logging.getLogger(__name__)

EXIT_OK, EXIT_FAILURE = 0, 1
WAIT_SLICE_S = 0.5


def run_fleet(config: FleetConfig, signals: StopSignals) -> int:
    from edge_app.http_server.server import TLSSetupError
    from edge_app.fleet_service.app import fleet_server
    from edge_app.fleet_service.db import DatabaseError
    from edge_app.fleet_service.fleet import FleetService

    service = FleetService(config)
    try:
        service.start()
    except DatabaseError as err:
        print(f"edge-app: {err}", file=sys.stderr)
        service.stop()
        return EXIT_FAILURE
    server = None
    if config.api.enabled:
        server = fleet_server(service)
        try:
            server.start()
        except TLSSetupError as err:
            print(f"edge-app: {err}", file=sys.stderr)
            service.stop()
            return EXIT_FAILURE
        except OSError as err:
            print(f"edge-app: cannot serve the API on {config.api.host}:{config.api.port}: {err.strerror or err}",
                  file=sys.stderr)
            service.stop()
            return EXIT_FAILURE
    logger.info("fleet service running (database: %s)", service.conn.dialect)
    signum = None
    while signum is None:
        signum = signals.wait(WAIT_SLICE_S)
    logger.info("stopping the fleet service")
    signals.stopping(signum, time.monotonic() + STOP_BUDGET_S)
    if server is not None:
        server.stop(timeout_s=1.5)
    service.stop(timeout_s=2.0)
    return EXIT_OK
