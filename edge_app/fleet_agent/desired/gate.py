"""Whether a ``R/config/desired`` message may be acted on at all (docs/fleet.md, "Who may configure an appliance").

The broker is not trusted: on an anonymous broker anyone can publish a desired configuration.
So, before anything reads a message's patch, the appliance asks:

* ``fleet.remote_config`` is true in the file (off by default);
* and either ``fleet.desired_key`` is set and the message carries a valid signature for this
  device, version and patch (``edge_app.fleet_protocol.desired_signature``),
* or no key is set, the appliance logs in to its broker (``mqtt.username``) and an anonymous
  CONNECT to the same broker is refused (``edge_app.mqtt.anonymous_probe``): only clients with
  a login can publish there, and the broker's ACL decides which of them may write this topic.
  A broker that accepts anonymous clients, or one whose answer is not known (no answer, or a
  refusal other than "bad user name or password" / "not authorised"), is not trusted.

A refusal names why, for the log, ``R/config/reported`` and ``/api/v1/status``.
The configuration is read live, so switching remote configuration off or changing the key
through the API takes effect with the next message.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Callable, Dict, Optional, Tuple

from edge_app.config.schema import AppConfig, MQTTConfig
from edge_app.config.file import Problem
from edge_app.mqtt.anonymous_probe import AnonymousProbe, ProbeOutcome, probe_anonymous
from edge_app.fleet_agent.desired.config import DesiredConfig
from edge_app.fleet_protocol.desired_signature import carries_signature, signature_valid
from edge_app.reporting.protocol import RemoteConfigReport

log = logging.getLogger(__name__)

SIGNATURE, BROKER_LOGIN = "signature", "broker login"
#: A definitive probe answer is trusted this long; a broker's settings may change while we run.
REPROBE_AFTER_S = 300.0
ANONYMOUS_WARNING = ("the MQTT broker accepts clients without a login: anyone who reaches it can publish "
                     "on this appliance's topics (require a login, or set fleet.desired_key)")

#: ``probe(mqtt, device_id)``: one anonymous CONNECT (``edge_app.mqtt.anonymous_probe``)
Probe = Callable[[MQTTConfig, str], AnonymousProbe]

_OFF = Problem("fleet.remote_config", "remote configuration is off (fleet.remote_config: false in the file)")
_UNSIGNED = Problem("sig", "missing or invalid signature: fleet.desired_key is set, so only desired "
                           "configurations the fleet service signed with it for this device (with an epoch "
                           "and an issue time) are acted on")


def _broker_key(mqtt: MQTTConfig) -> Tuple:
    return (mqtt.host, mqtt.port, mqtt.tls.enabled, mqtt.tls.ca_certs, mqtt.tls.insecure)


class DesiredGate:
    """Says why a desired message must not be acted on, or None when it may be."""

    def __init__(self, config_getter: Callable[[], AppConfig], probe: Probe = probe_anonymous,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._config_getter = config_getter
        self._probe = probe
        self._clock = clock
        self._lock = threading.Lock()
        self._probes: Dict[Tuple, Tuple[AnonymousProbe, float]] = {}
        self._refused = 0
        self._last_refusal: Optional[str] = None

    def probe_broker(self, force: bool = False) -> Optional[AnonymousProbe]:
        """The anonymous probe of the configured broker (cached while definitive); None without MQTT."""
        config = self._config_getter()
        mqtt = config.mqtt
        if not mqtt.enabled:
            return None
        key = _broker_key(mqtt)
        with self._lock:
            cached = self._probes.get(key)
        if cached is not None and not force and self._clock() - cached[1] < REPROBE_AFTER_S:
            return cached[0]
        probe = self._probe(mqtt, config.device_id)
        if probe.accepted and (cached is None or not cached[0].accepted):
            log.warning("%s (%s:%d)", ANONYMOUS_WARNING, mqtt.host, mqtt.port)
        if probe.outcome is not ProbeOutcome.UNKNOWN:
            with self._lock:
                self._probes[key] = (probe, self._clock())
        return probe

    def refusal_before_parsing(self, payload: bytes) -> Optional[Problem]:
        """Why ``payload`` must be refused before it is parsed, or None: the checks that need no parsing.

        Parsing and canonicalising a message near ``MAX_DESIRED_BYTES`` costs tens of
        milliseconds; a message that carries no signature at all (with ``fleet.desired_key``
        set) or arrives while nothing could authenticate it is refused for one regular
        expression's scan of its bytes.
        """
        config = self._config_getter()
        fleet = config.fleet
        if not fleet.remote_config:
            return _OFF
        if fleet.desired_key:
            return None if carries_signature(payload) else _UNSIGNED
        return self._login_refusal(config)

    def refusal(self, desired: Optional[DesiredConfig]) -> Optional[Problem]:
        """Why ``desired`` (None: a message too malformed to read) must be refused, or None."""
        config = self._config_getter()
        fleet = config.fleet
        if not fleet.remote_config:
            return _OFF
        if fleet.desired_key:
            if desired is None or not signature_valid(fleet.desired_key, config.device_id, desired.epoch,
                                                      desired.issued_ms, desired.version, desired.patch, desired.sig):
                return _UNSIGNED
            return None
        return self._login_refusal(config)

    def _login_refusal(self, config: AppConfig) -> Optional[Problem]:
        """Without a key: why a broker login cannot vouch for a message, or None when it can."""
        if not config.mqtt.username:
            return Problem("fleet.desired_key", "remote configuration needs fleet.desired_key, or an MQTT login "
                                                "(mqtt.username) on a broker that refuses clients without one")
        probe = self.probe_broker()
        if probe is None or probe.outcome is ProbeOutcome.ACCEPTED:
            return Problem("mqtt", "refused: the MQTT broker accepts clients without a login, so anyone may have "
                                   "sent this; require a login on the broker or set fleet.desired_key")
        if probe.outcome is ProbeOutcome.UNKNOWN:
            return Problem("mqtt", f"refused: could not tell whether the MQTT broker accepts clients without a "
                                   f"login ({probe.detail}); set fleet.desired_key to not depend on it")
        return None

    def note_refusal(self, problem: Problem) -> None:
        with self._lock:
            self._refused += 1
            self._last_refusal = str(problem)

    def report(self) -> RemoteConfigReport:
        config = self._config_getter()
        fleet, mqtt = config.fleet, config.mqtt
        with self._lock:
            cached = self._probes.get(_broker_key(mqtt)) if mqtt.enabled else None
            refused, last = self._refused, self._last_refusal
        anonymous = cached[0].accepted if cached is not None else None
        authentication = None
        warnings = [ANONYMOUS_WARNING] if anonymous else []
        if fleet.remote_config:
            if fleet.desired_key:
                authentication = SIGNATURE
            elif mqtt.username and anonymous is False:
                authentication = BROKER_LOGIN
            else:
                warnings.append("remote configuration is on but nothing authenticates desired configurations: "
                                "they are refused (set fleet.desired_key, or log in to a broker that requires a login)")
        return RemoteConfigReport(fleet.remote_config, authentication, anonymous, warnings, refused, last)


__all__ = ["ANONYMOUS_WARNING", "BROKER_LOGIN", "DesiredGate", "SIGNATURE"]
