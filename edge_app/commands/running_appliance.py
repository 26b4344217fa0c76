"""What the appliance running on this machine says about its MQTT link, for ``edge-app selftest``.

Whether another client keeps taking the appliance's MQTT session over shows only while it runs
(``edge_app.mqtt_takeover``): selftest cannot connect with the appliance's client id to find out
without doing exactly that. So it asks the running appliance's own API, on this machine.
"""
from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Optional

from edge_app.config.schema import AppConfig

STATUS_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class RunningMqtt:
    answered: bool  # the running appliance's API gave its status
    detail: str  # why not, or what it said
    takeover_warning: Optional[str]


def _status_url(config: AppConfig) -> str:
    # A server on every interface answers on loopback too.
    host = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(config.api.host, config.api.host)
    host = f"[{host}]" if ":" in host else host
    scheme = "https" if config.api.tls.enabled else "http"
    return f"{scheme}://{host}:{config.api.port}/api/v1/status"


def running_mqtt(config: AppConfig, timeout_s: float = STATUS_TIMEOUT_S) -> RunningMqtt:
    """The MQTT part of the status of the appliance that runs ``config`` here, if it answers."""
    url = _status_url(config)
    request = urllib.request.Request(url)
    if config.api.token:
        request.add_header("Authorization", f"Bearer {config.api.token}")
    context = None
    if url.startswith("https:"):
        # Its own certificate may name the LAN address, not the one asked here; the server is this machine's.
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(request, timeout=timeout_s, context=context) as response:
            mqtt = json.loads(response.read()).get("mqtt") or {}
    except (urllib.error.URLError, OSError, ValueError) as err:
        return RunningMqtt(False, f"no running appliance answered at {url} ({getattr(err, 'reason', err)})", None)
    warning = mqtt.get("takeover_warning")
    closed = mqtt.get("closed_by_broker", 0)
    return RunningMqtt(True, f"the running appliance's broker closed {closed} accepted connections", warning)


__all__ = ["RunningMqtt", "running_mqtt"]
