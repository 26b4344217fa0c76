"""HTTP to the fleet service for model artifacts: manifests, blobs (resumable) and engine offers.

docs/fleet.md, "Models and engines over the air". Every request carries ``Authorization: Bearer
<fleet.token>`` and ``X-Edge-Device``; HTTPS is verified against the system CAs or
``fleet.ca_certs``, plain HTTP is accepted only for a fleet service on this machine (the
configuration refuses anything else, and so does this client). Redirects are not followed: the
token is for the fleet service, not for wherever an answer points.

A blob is written to ``<dest>.part`` beside its final place and checked while it streams: never
more bytes than the manifest says, SHA-256 compared at the end. A cut connection leaves the part
file, and the next attempt asks for the rest with ``Range`` (a 200 instead of a 206 starts over).
"""
from __future__ import annotations

import hashlib
import http.client
import logging
import os
import ssl
import threading
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Callable, Optional

from edge_app.finite_json import loads_finite
from edge_app.config.schema_rules import is_loopback_host
from edge_app.health.free_space import ensure_room
from edge_app.fleet_protocol.artifacts_manifest import MAX_MANIFEST_BYTES

log = logging.getLogger(__name__)

TIMEOUT_S = 30.0
CHUNK_BYTES = 1 << 20
#: the fleet service answers an engine offer with a small object ({"stored": ...})
OFFER_ANSWER_BYTES = 64 * 1024
#: Progress(bytes_done) during a download
Progress = Callable[[int], None]
#: what a download leaves free on its file system at least: the engine cache shares it with the
#: configuration, events and recordings, and a disk filled by a model would stop them all
DOWNLOAD_RESERVE_BYTES = 128 * 1024 * 1024


class FleetUnreachable(Exception):
    """The fleet service could not be reached or answered 5xx: worth trying again later."""


class FleetRefused(Exception):
    """The fleet service answered, and the answer is final (4xx, a wrong digest, too many bytes)."""


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: D401 - urllib's signature
        return None  # the 3xx comes back as an HTTPError


class FleetClient:
    def __init__(self, url: str, token: str, device_id: str, ca_certs: Optional[str] = None,
                 timeout_s: float = TIMEOUT_S, reserve_bytes: int = DOWNLOAD_RESERVE_BYTES) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme == "http" and not is_loopback_host(parts.hostname or ""):
            raise FleetRefused("fleet.url must use https unless the fleet service runs on this machine")
        if parts.scheme not in ("http", "https"):
            raise FleetRefused("fleet.url must be https://host[:port]")
        self.base_url = url.rstrip("/")
        self.device_id = device_id
        self._headers = {"Authorization": f"Bearer {token}", "X-Edge-Device": device_id,
                         "User-Agent": "edge-app"}
        self._timeout_s = timeout_s
        self._reserve_bytes = reserve_bytes
        handlers: list = [_NoRedirects()]
        if parts.scheme == "https":
            context = ssl.create_default_context(cafile=ca_certs) if ca_certs else ssl.create_default_context()
            handlers.append(urllib.request.HTTPSHandler(context=context))
        self._opener = urllib.request.build_opener(*handlers)

    def _open(self, method: str, path: str, headers: Optional[dict] = None, body=None, length: Optional[int] = None):
        request = urllib.request.Request(self.base_url + path, data=body, method=method,
                                         headers={**self._headers, **(headers or {})})
        if length is not None:
            request.add_header("Content-Length", str(length))
        try:
            return self._opener.open(request, timeout=self._timeout_s)
        except urllib.error.HTTPError as err:
            detail = _error_text(err)
            err.close()
            if err.code >= 500 or err.code == 429:
                raise FleetUnreachable(f"the fleet service answered {err.code} to {method} {path}: {detail}") from None
            raise FleetRefused(f"the fleet service answered {err.code} to {method} {path}: {detail}") from None
        except (urllib.error.URLError, OSError, http.client.HTTPException) as err:
            reason = getattr(err, "reason", err)
            raise FleetUnreachable(f"the fleet service at {self.base_url} cannot be reached: {reason}") from None

    def manifest(self, name: str, version: str) -> bytes:
        path = "/api/v1/devices/{}/models/{}/{}/manifest".format(
            *(urllib.parse.quote(part, safe="") for part in (self.device_id, name, version)))
        with self._open("GET", path) as response:
            body = response.read(MAX_MANIFEST_BYTES + 1)
        if len(body) > MAX_MANIFEST_BYTES:
            raise FleetRefused(f"the manifest is larger than {MAX_MANIFEST_BYTES} bytes")
        return body

    def download(self, sha256: str, size: int, dest: Path, progress: Optional[Progress] = None,
                 cancel: Optional[threading.Event] = None) -> Path:
        """``dest`` holding exactly the ``size`` bytes whose SHA-256 is ``sha256``.

        FleetUnreachable (resume later from ``dest``.part), FleetRefused (the part is removed:
        the bytes were wrong, not cut short), NotEnoughSpace (asked nothing, wrote nothing).
        """
        part = dest.with_name(dest.name + ".part")
        dest.parent.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256()
        have = 0
        if part.exists():
            have = part.stat().st_size
            if have > size:
                part.unlink()
                have = 0
            else:
                with open(part, "rb") as handle:
                    for chunk in iter(lambda: handle.read(CHUNK_BYTES), b""):
                        digest.update(chunk)
        headers = {"Range": f"bytes={have}-"} if 0 < have < size else {}
        if have < size:
            ensure_room(dest.parent, size - have, self._reserve_bytes, "the download")
            with self._open("GET", f"/api/v1/blobs/{sha256}", headers) as response:
                if headers and response.status != 206:
                    log.info("the fleet service sent all of %s again instead of the rest; starting over", sha256[:12])
                    digest, have = hashlib.sha256(), 0
                elif headers:
                    log.info("resuming the download of %s at %d of %d bytes", sha256[:12], have, size)
                have = self._stream(response, part, have, size, digest, progress, cancel)
        if have != size:
            part.unlink(missing_ok=True)
            raise FleetRefused(f"blob {sha256[:12]} has {have} bytes, the manifest says {size}")
        if digest.hexdigest() != sha256:
            part.unlink(missing_ok=True)
            raise FleetRefused(f"blob {sha256[:12]} does not match the SHA-256 of the manifest (corrupt or replaced)")
        os.replace(part, dest)
        return dest

    @staticmethod
    def _stream(response, part: Path, have: int, size: int, digest, progress: Optional[Progress],
                cancel: Optional[threading.Event]) -> int:
        with open(part, "ab" if have else "wb") as handle:
            try:
                while True:
                    if cancel is not None and cancel.is_set():
                        raise FleetUnreachable("the download was cancelled")
                    # one byte more than the manifest allows is enough to know there are too many
                    chunk = response.read(min(CHUNK_BYTES, size + 1 - have))
                    if not chunk:
                        break
                    handle.write(chunk)
                    digest.update(chunk)
                    have += len(chunk)
                    if have > size:
                        break
                    if progress is not None:
                        progress(have)
            except (OSError, ValueError, http.client.HTTPException) as err:  # the connection cut mid-body
                handle.flush()
                raise FleetUnreachable(f"the download stopped at {have} of {size} bytes: {err}") from None
            finally:
                handle.flush()
                os.fsync(handle.fileno())
        if have < size:
            raise FleetUnreachable(f"the download stopped at {have} of {size} bytes")
        return have

    def offer_engine(self, key_json: str, sha256: str, engine: Path) -> dict:
        """PUT /api/v1/engines: the fleet service keeps it for devices of the same key."""
        size = engine.stat().st_size
        with open(engine, "rb") as body:
            with self._open("PUT", "/api/v1/engines", {"X-Engine-Key": key_json, "X-Content-SHA256": sha256,
                                                       "Content-Type": "application/octet-stream"},
                            body, size) as response:
                answer = response.read(OFFER_ANSWER_BYTES + 1)
        return _offer_answer(answer)


def _offer_answer(body: bytes) -> dict:
    """The fleet service's answer to an engine offer, as an object; FleetUnreachable for anything
    else, since the thread that offers only logs it (a list or deep nesting must not end it)."""
    if len(body) > OFFER_ANSWER_BYTES:
        raise FleetUnreachable(f"the fleet service's answer to the engine offer is not JSON: over {OFFER_ANSWER_BYTES} bytes")
    try:
        answer = loads_finite(body or b"{}")
    except (ValueError, RecursionError) as err:  # UnicodeDecodeError is a ValueError
        raise FleetUnreachable(f"the fleet service's answer to the engine offer is not JSON: {type(err).__name__}") from None
    if not isinstance(answer, dict):
        raise FleetUnreachable("the fleet service's answer to the engine offer is not a JSON object")
    return answer


def _error_text(err: urllib.error.HTTPError) -> str:
    try:
        text = err.read(500).decode("utf-8", "replace")
    except OSError:
        return err.reason or ""
    return " ".join(text.split())[:200] or str(err.reason)


__all__ = ["DOWNLOAD_RESERVE_BYTES", "FleetClient", "FleetRefused", "FleetUnreachable"]
