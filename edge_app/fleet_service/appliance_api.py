"""The fleet's way to an appliance's own REST API, for what stays on the appliance: event clips.

Clips are large and already kept (and retained) by each appliance, so the fleet never copies
them: it lists an appliance's events through that appliance's API and streams a clip through,
Range requests included, so a player can seek in it from the fleet. Where an appliance's API is
(``appliances`` in FLEET.yaml: URL, token, CA) is configured; the URLs asked for are built from a
fixed path and checked ids only, never from what a client or the broker sent. Redirects are not
followed, and only the headers a player needs are passed on.
"""
from __future__ import annotations

import http.client
import logging
import socket
import ssl
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Mapping, Tuple
from urllib.parse import quote, urlencode, urlsplit

from edge_app.finite_json import loads_finite
from edge_app.fleet_service.config import ApplianceApiConfig, FleetConfig

logger = logging.getLogger(__name__)

CHUNK_BYTES = 64 * 1024
#: an event list of the appliance (at most 1000 events of a few hundred bytes) is read up to this
MAX_LIST_BYTES = 8 * 1024 * 1024
#: request headers passed on to the appliance, and answer headers passed back
REQUEST_HEADERS = ("Range", "If-Range")
ANSWER_HEADERS = ("Content-Type", "Content-Length", "Content-Range", "Accept-Ranges", "ETag", "Last-Modified",
                  "Content-Disposition")


class ApplianceApiError(Exception):
    """The appliance's API cannot answer this: ``status`` is what the fleet answers (404, 502, 504)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class UpstreamAnswer:
    """An answer of the appliance, its body still to be read (``chunks``), closed when read."""

    status: int
    headers: Dict[str, str]
    chunks: Iterator[bytes]


class ApplianceApi:
    """Requests to the appliances of ``appliances`` in the running FLEET.yaml."""

    def __init__(self, config_getter: Callable[[], FleetConfig]):
        self._config = config_getter

    def _target(self, device_id: str) -> ApplianceApiConfig:
        target = self._config().appliances.get(device_id)
        if target is None:
            raise ApplianceApiError(404, f"the fleet does not know where device {device_id!r} serves its API "
                                         f"(appliances in FLEET.yaml)")
        return target

    @staticmethod
    def _connect(target: ApplianceApiConfig) -> http.client.HTTPConnection:
        parts = urlsplit(target.url)
        if parts.scheme == "https":
            context = ssl.create_default_context(cafile=target.ca_file)
            return http.client.HTTPSConnection(parts.hostname or "", parts.port, timeout=target.timeout_s, context=context)
        return http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=target.timeout_s)

    def get(self, device_id: str, path: str, params: Mapping[str, str], headers: Mapping[str, str]) -> UpstreamAnswer:
        """GET ``path`` (fixed by the caller, ids quoted) on the device's API."""
        target = self._target(device_id)
        query = urlencode(sorted(params.items()))
        sent = {name: value for name, value in headers.items() if name in REQUEST_HEADERS}
        if target.token is not None:
            sent["Authorization"] = f"Bearer {target.token.get_secret_value()}"
        conn = self._connect(target)
        try:
            conn.request("GET", path + ("?" + query if query else ""), headers=sent)
            response = conn.getresponse()
        except (socket.timeout, TimeoutError):
            conn.close()
            raise ApplianceApiError(504, f"device {device_id!r} did not answer within {target.timeout_s:g} s") from None
        except (OSError, http.client.HTTPException) as err:
            conn.close()
            logger.info("cannot reach the API of %s at %s: %s", device_id, target.url, err)
            raise ApplianceApiError(502, f"cannot reach the API of device {device_id!r}: {err}") from None
        if response.status in (401, 403):
            conn.close()
            raise ApplianceApiError(502, f"device {device_id!r} refused the fleet's token (its token in appliances "
                                         f"of FLEET.yaml)")
        if response.status >= 500 or 300 <= response.status < 400:
            conn.close()
            raise ApplianceApiError(502, f"device {device_id!r} answered {response.status}")
        kept = {name: response.headers[name] for name in ANSWER_HEADERS if response.headers.get(name) is not None}
        return UpstreamAnswer(response.status, kept, _chunks(conn, response, device_id))

    def events(self, device_id: str, params: Mapping[str, str]) -> Tuple[int, Any]:
        """(status, body) of the device's ``GET /api/v1/events`` with ``params``."""
        answer = self.get(device_id, "/api/v1/events", params, {})
        body = bytearray()
        for chunk in answer.chunks:
            body += chunk
            if len(body) > MAX_LIST_BYTES:
                raise ApplianceApiError(502, f"device {device_id!r} answered more than {MAX_LIST_BYTES} bytes of events")
        try:
            return answer.status, loads_finite(bytes(body))
        except ValueError:
            raise ApplianceApiError(502, f"device {device_id!r} answered something that is not JSON") from None

    def clip(self, device_id: str, event_id: str, headers: Mapping[str, str], part: int = 0) -> UpstreamAnswer:
        params = {"part": str(part)} if part else {}
        return self.get(device_id, f"/api/v1/events/{quote(event_id, safe='')}/clip.mp4", params, headers)


def _chunks(conn: http.client.HTTPConnection, response: http.client.HTTPResponse, device_id: str) -> Iterator[bytes]:
    # A generator: the connection is closed when the body is read, or when the client that
    # asked hangs up (the server closes the iterator), whichever comes first.
    try:
        while True:
            try:
                chunk = response.read(CHUNK_BYTES)
            except (OSError, http.client.HTTPException) as err:
                logger.info("the answer of %s broke off: %s", device_id, err)
                return
            if not chunk:
                return
            yield chunk
    finally:
        conn.close()


def annotate_clips(device_id: str, events: List[Any]) -> List[Any]:
    """The events with ``clip_url``, the fleet's path of each clip (None without one)."""
    for event in events:
        if isinstance(event, dict):
            event_id = str(event.get("id", ""))
            event["clip_url"] = (f"/api/v1/devices/{device_id}/events/{quote(event_id, safe='')}/clip.mp4"
                                 if event.get("has_clip") is True else None)
    return events

