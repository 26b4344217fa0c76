"""Does the broker let a client in without a login? One anonymous CONNECT to find out.

A broker that accepts anonymous clients lets anyone on its network publish on any topic its ACL
does not close, ``R/config/desired`` included, so the appliance's own login proves nothing about
who sent a message. The probe connects once to the same host and port, with the same TLS
settings but no username, password or client certificate, waits for the CONNACK (at most
``timeout_s``) and disconnects at once; it publishes and subscribes nothing.
"""
from __future__ import annotations

import enum
import logging
import threading
import uuid
from dataclasses import dataclass

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

from edge_app.config.schema import MQTTConfig

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 5.0


class ProbeOutcome(enum.Enum):
    ACCEPTED = "accepted"  # the broker took a client without a login
    REFUSED = "refused"  # the broker answered the CONNACK with a refusal
    UNKNOWN = "unknown"  # no answer: unreachable, timed out, TLS failed, ...


@dataclass(frozen=True)
class AnonymousProbe:
    """What one anonymous CONNECT to ``host:port`` found, and why."""

    outcome: ProbeOutcome
    detail: str
    host: str
    port: int

    @property
    def accepted(self) -> bool:
        return self.outcome is ProbeOutcome.ACCEPTED


def probe_anonymous(config: MQTTConfig, timeout_s: float = DEFAULT_TIMEOUT_S) -> AnonymousProbe:
    """Try one anonymous connection to the broker of ``config``; never raises."""
    done = threading.Event()
    answer = {}

    def on_connect(_client, _userdata, _flags, reason_code, _properties) -> None:
        answer["code"] = reason_code
        done.set()

    def on_disconnect(_client, _userdata, _flags, reason_code, _properties) -> None:
        answer.setdefault("closed", reason_code)
        done.set()

    def result(outcome: ProbeOutcome, detail: str) -> AnonymousProbe:
        return AnonymousProbe(outcome, detail, config.host, config.port)

    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"edge-app-probe-{uuid.uuid4().hex[:12]}", clean_session=True)
    client.on_connect = on_connect
    client.on_disconnect = on_disconnect
    client.connect_timeout = timeout_s
    try:
        if config.tls.enabled:
            # The CA is needed to reach the broker at all; the client certificate would be a login.
            client.tls_set(ca_certs=config.tls.ca_certs)
            client.tls_insecure_set(config.tls.insecure)
        client.connect(config.host, config.port, keepalive=max(5, int(timeout_s) * 2))
    except (OSError, ValueError) as err:  # ssl.SSLError is an OSError
        return result(ProbeOutcome.UNKNOWN, f"could not connect: {err}")
    client.loop_start()
    try:
        if not done.wait(timeout_s):
            return result(ProbeOutcome.UNKNOWN, f"no answer within {timeout_s:g} s")
        code = answer.get("code")
        if code is None:
            return result(ProbeOutcome.UNKNOWN, f"the broker closed the connection without an answer ({answer.get('closed')})")
        if code.is_failure:
            return result(ProbeOutcome.REFUSED, f"the broker refused a client without a login ({code})")
        return result(ProbeOutcome.ACCEPTED, "the broker accepted a client without a login")
    finally:
        try:
            client.disconnect()
        except Exception:  # already gone: nothing to close
            pass
        client.loop_stop()


__all__ = ["AnonymousProbe", "ProbeOutcome", "probe_anonymous"]
