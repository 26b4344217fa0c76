"""Signatures of ``R/config/desired`` messages: HMAC-SHA256 with a key the device and fleet share.

The broker is not a trusted party (anyone may publish on an anonymous broker), so an appliance
with ``fleet.desired_key`` set acts only on desired messages the fleet service signed with that
key. The signature covers the device id, the version and the patch, so a message signed for one
device cannot be replayed to another, and one signed for version N cannot carry another patch.
Replaying the same message again is harmless: versions only move forward.

Wire format: the desired object gains ``"sig": "hmac-sha256:<64 hex digits>"``. The signed bytes
are ``edge-app desired v1\\n<device_id>\\n<version>\\n`` followed by the patch as canonical JSON
(keys sorted, no spaces, ASCII only), so both sides compute them from the parsed values and
no byte-exact copy of the message is needed.

The canonical JSON and the keyed digest are the ones every fleet signature uses: the manifests
of model versions (``edge_app.fleet_agent.artifacts_manifest``) are signed with them too.
"""
from __future__ import annotations

import hashlib
import hmac
import re
from typing import Any, Mapping

from edge_app.canonical_json import canonical_json
from edge_app.config.schema import MIN_DESIRED_KEY_CHARS

SIGNATURE_KEY = "sig"
_SCHEME = "hmac-sha256:"
_CONTEXT = b"edge-app desired v1\n"
# The "sig" member as the fleet service writes it, found in the raw bytes without parsing them.
_SIGNATURE_MEMBER = re.compile(rb'"sig"\s*:\s*"' + re.escape(_SCHEME.encode("ascii")) + rb'[0-9a-f]{64}"')
#: A shorter key is guessable off-line from one captured message (the rule lives with the schema).
MIN_KEY_CHARS = MIN_DESIRED_KEY_CHARS


def keyed_digest(key: str, message: bytes) -> str:
    """HMAC-SHA256 of ``message`` with ``key``, in hexadecimal."""
    return hmac.new(key.encode("utf-8"), message, hashlib.sha256).hexdigest()


def _signed_bytes(device_id: str, version: int, patch: Mapping[str, Any]) -> bytes:
    return _CONTEXT + f"{device_id}\n{int(version)}\n".encode("utf-8") + canonical_json(patch).encode("ascii")


def sign_desired(key: str, device_id: str, version: int, patch: Mapping[str, Any]) -> str:
    """The ``sig`` value of a desired message for ``device_id``."""
    return _SCHEME + keyed_digest(key, _signed_bytes(device_id, version, patch))


def carries_signature(payload: bytes) -> bool:
    """Whether ``payload`` holds a ``"sig"`` member of the right form at all: the check before parsing.

    A message without one cannot be valid (a signature written any other way, with escapes or
    upper-case digits, never matches the digest either), so it is refused unread.
    """
    return _SIGNATURE_MEMBER.search(payload) is not None


def signature_valid(key: str, device_id: str, version: int, patch: Mapping[str, Any], signature: Any) -> bool:
    """Whether ``signature`` is the one ``key`` gives for this device, version and patch."""
    if not isinstance(signature, str) or not signature.startswith(_SCHEME) or len(signature) != len(_SCHEME) + 64:
        return False
    try:
        expected = sign_desired(key, device_id, version, patch)
    except (TypeError, ValueError):  # a patch that is not canonical JSON was never signed
        return False
    return hmac.compare_digest(expected, signature)


__all__ = ["MIN_KEY_CHARS", "SIGNATURE_KEY", "carries_signature", "keyed_digest", "sign_desired", "signature_valid"]
