"""How the appliance's paho client is configured: protocol, reconnect backoff, credentials, TLS
and the retained ``offline`` last will. The callbacks and the delivery rules are the publisher's
(``edge_app.mqtt.publisher``)."""
from __future__ import annotations

import logging
from typing import Tuple

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

from edge_app.config.schema import MQTTConfig

log = logging.getLogger(__name__)


def appliance_client_id(config: MQTTConfig, device_id: str) -> str:
    """The client id the appliance connects with: ``mqtt.client_id``, else ``edge-app-<device id>``."""
    return config.client_id or f"edge-app-{device_id}"


def new_client(config: MQTTConfig, client_id: str, reconnect_delays_s: Tuple[float, float], connect_timeout_s: float,
               will_topic: str, will_payload: bytes) -> mqtt.Client:
    """A client that is not connected yet. Raises OSError or ValueError for TLS files it cannot use."""
    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id, clean_session=True)
    if log.isEnabledFor(logging.DEBUG):
        # paho logs retries of an absent broker at ERROR level; keep its chatter at DEBUG.
        client.on_log = lambda _client, _userdata, _level, text: log.debug("paho: %s", text)
    client.max_inflight_messages = 0  # the publisher's own window bounds what paho holds
    client.reconnect_delay_set(*reconnect_delays_s)
    client.connect_timeout = connect_timeout_s
    if config.username is not None:
        client.username_pw_set(config.username, config.password)
    client.will_set(will_topic, will_payload, qos=1, retain=True)
    tls = config.tls
    if tls.enabled:
        client.tls_set(ca_certs=tls.ca_certs, certfile=tls.certfile, keyfile=tls.keyfile)
        client.tls_insecure_set(tls.insecure)
    return client
