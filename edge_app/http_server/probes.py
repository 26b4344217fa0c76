"""Liveness and readiness probes (``/healthz``, ``/readyz``), for systemd, Docker and k8s."""
from __future__ import annotations

import logging
from functools import partial
from typing import List, Protocol, Tuple

from flask import Blueprint, Response, jsonify

logger = logging.getLogger(__name__)


class Readiness(Protocol):
    """What ``/readyz`` asks: the appliance and the fleet service each answer it."""

    def readiness(self) -> Tuple[bool, List[str]]:
        """(ready, the reasons it is not)."""


def healthz() -> Response:
    return jsonify({"status": "ok"})


def readyz(service: Readiness) -> Response:
    try:
        ready, reasons = service.readiness()
    except Exception as err:  # a probe must answer "not ready", not crash with a 500
        logger.exception("the readiness check failed")
        ready, reasons = False, [f"the readiness check failed: {err}"]
    if ready:
        return jsonify({"ready": True})
    reasons = list(reasons) or ["not ready"]
    # "error" too, so the body has the shape of every other non-2xx answer of the API.
    response = jsonify({"ready": False, "reasons": reasons, "error": "not ready: " + "; ".join(reasons)})
    response.status_code = 503
    return response


def health_blueprint(service: Readiness) -> Blueprint:
    """``/healthz`` answers while the process serves HTTP; ``/readyz`` asks ``service``."""
    bp = Blueprint("health", __name__)
    bp.add_url_rule("/healthz", "healthz", healthz, methods=["GET"])
    bp.add_url_rule("/readyz", "readyz", partial(readyz, service), methods=["GET"])
    return bp
