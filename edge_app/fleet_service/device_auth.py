"""Which appliance is asking: ``Authorization: Bearer <fleet.token>`` and ``X-Edge-Device: <id>``.

Each device has its own token (FLEET.yaml ``device_tokens``), so a device can be told apart from
another and one leaked token does not open the rest of the fleet. Tokens are compared in constant
time, and an unknown device is compared against a stand-in token so the answer takes as long as
for a known one with a wrong token. An address sending wrong tokens for one device id too often is
refused with 429 for that device id.
"""
from __future__ import annotations

import hmac
import logging
import re
from typing import Callable, Mapping, Optional

from flask import request
from pydantic import SecretStr

from edge_app.http_server.auth import CHALLENGE, bearer_token
from edge_app.http_server.errors import ApiError
from edge_app.http_server.throttle import FailureThrottle

logger = logging.getLogger(__name__)

DEVICE_HEADER = "X-Edge-Device"
_DEVICE_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_NOBODY = b"\x00" * 32  # compared when the device is unknown: the same work, never equal to a token


class DeviceAuth:
    """``require()`` answers the device id of the request or raises ApiError 401/429."""

    def __init__(self, tokens: Callable[[], Mapping[str, SecretStr]], throttle: Optional[FailureThrottle] = None):
        self._tokens = tokens
        self._throttle = throttle or FailureThrottle()

    @staticmethod
    def asks_as_device() -> bool:
        return DEVICE_HEADER in request.headers

    def require(self) -> str:
        device_id = request.headers.get(DEVICE_HEADER, "")
        presented = bearer_token(request.headers.get("Authorization"))
        if presented is None or len(presented) > 1024 or not _DEVICE_ID.fullmatch(device_id):
            raise ApiError(401, f"a device sends 'Authorization: Bearer <fleet.token>' and '{DEVICE_HEADER}: <device id>'",
                           headers=CHALLENGE)
        # Counted per address and device id: appliances behind one NAT address are not locked out
        # by one of them with a wrong token, and each token can still be tried only slowly.
        client = f"{request.remote_addr or '?'} {device_id}"
        retry_after_s = self._throttle.retry_after_s(client)
        if retry_after_s is not None:
            raise ApiError(429, f"too many wrong tokens for {device_id} from {request.remote_addr}; "
                                f"retry in {retry_after_s} s", headers={"Retry-After": str(retry_after_s)})
        expected = self._tokens().get(device_id)
        wanted = expected.get_secret_value().encode("utf-8") if expected is not None else _NOBODY
        if not hmac.compare_digest(presented.encode("utf-8"), wanted) or expected is None:
            if self._throttle.record_failure(client):
                logger.warning("too many wrong tokens for %s from %s; refusing them for a while", device_id,
                               request.remote_addr)
            raise ApiError(401, "unknown device or wrong token (FLEET.yaml device_tokens)", headers=CHALLENGE)
        return device_id
