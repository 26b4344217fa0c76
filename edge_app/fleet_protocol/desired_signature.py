"""Signatures of ``R/config/desired`` messages: HMAC-SHA256 with a key the device and fleet share.

The broker is not a trusted party (anyone may publish on an anonymous broker), so an appliance
with ``fleet.desired_key`` set acts only on desired messages the fleet service signed with that
key. The signature covers the device id, the fleet's epoch for the device, the time the message
was issued, the version and the patch: a message signed for one device cannot be replayed to
another, one signed for version N cannot carry another patch, and a captured message cannot be
replayed into a later epoch (``edge_app.fleet_agent.desired.epoch`` says which epochs and times an
appliance accepts). Replaying a message of the current epoch again is harmless: versions only
move forward.

Wire format (version 2): the desired object carries ``"epoch"`` (32 lowercase hexadecimal
digits, chosen by the fleet), ``"issued_at_ms"`` (milliseconds since 1970, an integer) and
``"sig": "hmac-sha256:<64 hex digits>"``. The signed bytes are ``edge-app desired v2\\n<device_id>
\\n<epoch>\\n<issued_at_ms>\\n<version>\\n`` followed by the patch as canonical JSON (keys sorted, no
spaces, ASCII only), so both sides compute them from the parsed values and no byte-exact copy of
the message is needed. Version 1 (no epoch, no time) is not accepted any more: its messages could
be replayed after a reset.

The canonical JSON and the keyed digest are the ones every fleet signature uses: the manifests
of model versions (``edge_app.fleet_protocol.artifacts_manifest``) are signed with them too.
"""
from __future__ import annotations

import hashlib
import hmac
import re
from typing import Any, Dict, Mapping

from edge_app.canonical_json import canonical_json
from edge_app.config.schema_fleet import MIN_DESIRED_KEY_CHARS

SIGNATURE_KEY = "sig"
EPOCH_KEY = "epoch"
ISSUED_KEY = "issued_at_ms"
_SCHEME = "hmac-sha256:"
_CONTEXT = b"edge-app desired v2\n"
# The "sig" member as the fleet service writes it, found in the raw bytes without parsing them.
_SIGNATURE_MEMBER = re.compile(rb'"sig"\s*:\s*"' + re.escape(_SCHEME.encode("ascii")) + rb'[0-9a-f]{64}"')
#: The form of an epoch: what uuid4().hex gives.
EPOCH_PATTERN = re.compile(r"[0-9a-f]{32}")
MAX_ISSUED_MS = 2 ** 53
#: A shorter key is guessable off-line from one captured message (the rule lives with the schema).
MIN_KEY_CHARS = MIN_DESIRED_KEY_CHARS


def keyed_digest(key: str, message: bytes) -> str:
    """HMAC-SHA256 of ``message`` with ``key``, in hexadecimal."""
    return hmac.new(key.encode("utf-8"), message, hashlib.sha256).hexdigest()


def valid_epoch(value: Any) -> bool:
    return isinstance(value, str) and EPOCH_PATTERN.fullmatch(value) is not None


def valid_issued_ms(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int) and 0 <= value <= MAX_ISSUED_MS


def _signed_bytes(device_id: str, epoch: str, issued_ms: int, version: int, patch: Mapping[str, Any]) -> bytes:
    if not valid_epoch(epoch) or not valid_issued_ms(issued_ms):
        raise ValueError("an epoch is 32 lowercase hexadecimal digits and issued_at_ms an integer from 0 to 2^53")
    return (_CONTEXT + f"{device_id}\n{epoch}\n{issued_ms}\n{int(version)}\n".encode("utf-8")
            + canonical_json(patch).encode("ascii"))


def sign_desired(key: str, device_id: str, epoch: str, issued_ms: int, version: int, patch: Mapping[str, Any]) -> str:
    """The ``sig`` value of a desired message for ``device_id``."""
    return _SCHEME + keyed_digest(key, _signed_bytes(device_id, epoch, issued_ms, version, patch))


def carries_signature(payload: bytes) -> bool:
    """Whether ``payload`` holds a ``"sig"`` member of the right form at all: the check before parsing.

    A message without one cannot be valid (a signature written any other way, with escapes or
    upper-case digits, never matches the digest either), so it is refused unread.
    """
    return _SIGNATURE_MEMBER.search(payload) is not None


def signed_desired(key: str, device_id: str, epoch: str, issued_ms: int, version: int,
                   patch: Mapping[str, Any]) -> Dict[str, Any]:
    """The whole desired message, signed: what the fleet publishes on ``R/config/desired``."""
    return {"version": version, "patch": patch, EPOCH_KEY: epoch, ISSUED_KEY: issued_ms,
            SIGNATURE_KEY: sign_desired(key, device_id, epoch, issued_ms, version, patch)}


def signature_valid(key: str, device_id: str, epoch: Any, issued_ms: Any, version: int, patch: Mapping[str, Any],
                    signature: Any) -> bool:
    """Whether ``signature`` is the one ``key`` gives for this device, epoch, issue time, version and patch."""
    if not isinstance(signature, str) or not signature.startswith(_SCHEME) or len(signature) != len(_SCHEME) + 64:
        return False
    try:
        expected = sign_desired(key, device_id, epoch, issued_ms, version, patch)
    except (TypeError, ValueError):  # no epoch or time, or a patch that is not canonical JSON: never signed
        return False
    return hmac.compare_digest(expected, signature)


__all__ = ["EPOCH_KEY", "ISSUED_KEY", "MIN_KEY_CHARS", "SIGNATURE_KEY", "carries_signature", "keyed_digest",
           "sign_desired", "signature_valid", "signed_desired", "valid_epoch", "valid_issued_ms"]
