"""``edge-app run``: start the appliance and its API, wait for a signal, stop within 5 s."""
from __future__ import annotations

import logging
import sys
import threading
from pathlib import Path

from edge_app.config.schema import AppConfig

log = logging.getLogger(__name__)


def _opencv_problem() -> str:
    try:
        import cv2  # noqa: F401
    except ImportError:
        return ("OpenCV is not installed: install edge-app[opencv] (or, on a Jetson, JetPack's python3-opencv "
                "and create the virtual environment with --system-site-packages)")
    return ""


def run_appliance(config: AppConfig, config_path: Path, stop: threading.Event) -> int:
    problem = _opencv_problem()
    if problem:
        print(f"edge-app: {problem}", file=sys.stderr)
        return 1
    from edge_app.api import create_app
    from edge_app.api.server import ApiServer, TLSSetupError
    from edge_app.appliance import Appliance
    from edge_app.detect.base import DetectorError

    appliance = Appliance(config, config_path)
    # The API comes up first so /api/v1/status can show a TensorRT engine build in progress.
    server = None
    if config.api.enabled:
        server = ApiServer.from_config(create_app(appliance), config.api,
                                       body_limit_bytes=lambda: appliance.current_config().api.max_body_bytes)
        try:
            server.start()
        except TLSSetupError as err:
            print(f"edge-app: {err}", file=sys.stderr)
            return 1
        except OSError as err:
            print(f"edge-app: cannot serve the API on {config.api.host}:{config.api.port}: {err.strerror or err}", file=sys.stderr)
            return 1
    try:
        appliance.start()
    except DetectorError as err:
        print(f"edge-app: {err}", file=sys.stderr)
        if server is not None:
            server.stop(timeout_s=1.0)
        appliance.stop(timeout_s=2.0)
        return 1
    log.info("edge-app running with %d camera(s)", len(config.cameras))
    stop.wait()
    if server is not None:
        server.stop(timeout_s=1.0)
    appliance.stop(timeout_s=3.5)
    log.info("edge-app stopped")
    return 0
