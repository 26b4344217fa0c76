"""Does the broker let a client in without a login? One anonymous CONNECT to find out.

A broker that accepts anonymous clients lets anyone on its network publish on any topic its ACL
does not close, ``R/config/desired`` included, so the appliance's own login proves nothing about
who sent a message. The probe connects once to the same host and port, with the same TLS
settings but no username, password or client certificate, waits for the CONNACK (at most
``timeout_s``) and disconnects at once; it publishes and subscribes nothing.

It fails closed: only a CONNACK saying "bad user name or password" or "not authorised" counts as
a refusal of clients without a login. Any other refusal (a client id the broker does not take, a
broker busy or shutting down) says nothing about logins, so the answer is unknown. Its client id
is the appliance's own followed by ``-probe-<random>``: a broker that admits client ids by prefix
(Mosquitto's ``clientid_prefixes``) judges it as it judges the appliance, and it never takes the
appliance's session over.
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
from edge_app.mqtt.client_setup import appliance_client_id

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 5.0
#: CONNACK reason codes (MQTT 5 numbering; paho maps 3.1.1's 4 and 5 onto them) that refuse a login
LOGIN_REFUSALS = frozenset({134, 135})  # bad user name or password, not authorised


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


def probe_client_id(config: MQTTConfig, device_id: str) -> str:
    """The probe's client id: the appliance's own, then ``-probe-`` and 8 random hex digits."""
    return f"{appliance_client_id(config, device_id)}-probe-{uuid.uuid4().hex[:8]}"


def probe_anonymous(config: MQTTConfig, device_id: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> AnonymousProbe:
    """Try one anonymous connection to the broker of ``config`` for appliance ``device_id``; never raises."""
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

    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=probe_client_id(config, device_id), clean_session=True)
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
        if code.is_failure and code.value in LOGIN_REFUSALS:
            return result(ProbeOutcome.REFUSED, f"the broker refused a client without a login ({code})")
        if code.is_failure:
            return result(ProbeOutcome.UNKNOWN, f"the broker refused the probe for a reason other than a "
                                                f"missing login ({code})")
        return result(ProbeOutcome.ACCEPTED, "the broker accepted a client without a login")
    finally:
        try:
            client.disconnect()
        except Exception:  # already gone: nothing to close
            pass
        client.loop_stop()


__all__ = ["AnonymousProbe", "LOGIN_REFUSALS", "ProbeOutcome", "probe_anonymous", "probe_client_id"]
