"""``R/config/desired`` messages (docs/fleet.md), checked before anything acts on them.

Anyone who can publish on the broker can send one, so the payload is treated as hostile: at
most ``MAX_DESIRED_BYTES`` nested at most ``MAX_DESIRED_DEPTH`` deep (both checked before
parsing, ``edge_app.mqtt.inbound``), UTF-8 JSON without NaN or Infinity, exactly ``{"version": N,
"patch": {...}}`` (and the optional ``"epoch"``, ``"issued_at_ms"`` and ``"sig"`` of
``edge_app.fleet_protocol.desired_signature``, each of its form) with ``N``
an integer from 1 to 2**53 (what every JSON parser reads exactly) and
the patch an object. Anything else raises :class:`DesiredConfigError` with located problems, and
the version when one could still be read, so the refusal can be reported for that version.
What the patch itself may change is decided by ``edge_app.config_change.changes``, not here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from edge_app.config.file import Problem
from edge_app.mqtt.inbound import InboundPayloadError, parse_json_payload
from edge_app.fleet_protocol.desired_signature import EPOCH_KEY, ISSUED_KEY, SIGNATURE_KEY, valid_epoch, valid_issued_ms

MAX_DESIRED_BYTES = 256 * 1024
#: a whole configuration nests about 8 levels (cameras, zones, polygons, points)
MAX_DESIRED_DEPTH = 32
MAX_VERSION = 2 ** 53
_KEYS = ("version", "patch", EPOCH_KEY, ISSUED_KEY, SIGNATURE_KEY)


@dataclass(frozen=True)
class DesiredConfig:
    version: int
    patch: Dict[str, Any]
    sig: Any = None  # as received: checked by edge_app.fleet_protocol.desired_signature, never trusted here
    epoch: Optional[str] = None  # the fleet's epoch for this device (edge_app.fleet_agent.desired.epoch)
    issued_ms: Optional[int] = None  # when the fleet issued the message, milliseconds since 1970


class DesiredConfigError(ValueError):
    """A desired message that cannot be acted on; ``version`` is None when it names none."""

    def __init__(self, problems: List[Problem], version: Optional[int] = None) -> None:
        super().__init__("; ".join(str(p) for p in problems))
        self.problems = problems
        self.version = version


def _decode(payload: bytes) -> Any:
    try:
        return parse_json_payload(payload, MAX_DESIRED_BYTES, MAX_DESIRED_DEPTH)
    except InboundPayloadError as err:
        raise DesiredConfigError([Problem("", err.reason)]) from None


def _version(value: Any) -> Optional[int]:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_VERSION:
        return None
    return value


def parse_desired(payload: bytes) -> DesiredConfig:
    """The desired configuration in ``payload``; raises :class:`DesiredConfigError`."""
    data = _decode(payload)
    if not isinstance(data, dict):
        raise DesiredConfigError([Problem("", 'the message must be a JSON object {"version": N, "patch": {...}}')])
    version = _version(data.get("version"))
    problems = [Problem(str(key)[:64], "unknown key; a desired configuration has only version, patch, epoch, issued_at_ms and sig")
                for key in data if key not in _KEYS]
    if EPOCH_KEY in data and not valid_epoch(data[EPOCH_KEY]):
        problems.append(Problem(EPOCH_KEY, "must be 32 lowercase hexadecimal digits"))
    if ISSUED_KEY in data and not valid_issued_ms(data[ISSUED_KEY]):
        problems.append(Problem(ISSUED_KEY, "must be an integer from 0 to 2^53 (milliseconds since 1970)"))
    if version is None:
        problems.append(Problem("version", f"must be an integer from 1 to {MAX_VERSION}"))
    if not isinstance(data.get("patch"), dict):
        problems.append(Problem("patch", "must be a JSON object (an RFC 7396 merge patch of the configuration)"))
    if problems:
        raise DesiredConfigError(problems, version)
    assert version is not None
    return DesiredConfig(version, data["patch"], data.get(SIGNATURE_KEY), data.get(EPOCH_KEY), data.get(ISSUED_KEY))


__all__ = ["DesiredConfig", "DesiredConfigError", "MAX_DESIRED_BYTES", "parse_desired"]
