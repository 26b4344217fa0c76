"""How much a single HTTP client may cost the appliance, in one place.

The API listens on a LAN where anyone can open sockets. Each number below bounds what one
connection can hold: a worker thread (for at most a header deadline while it sends its
request), memory (the request line and headers are cut, the body is refused up front when
its declared length is above ``api.max_body_bytes``), or the TLS handshake (done by a worker
under the same deadline, never by the thread that accepts connections).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple


@dataclass(frozen=True)
class HttpLimits:
    # A client has this long from its first byte (or from connecting) to the end of its headers;
    # a slow sender ("slowloris") gets 408 and its worker back instead of holding it forever.
    header_deadline_s: float = 10.0
    # The whole body must arrive within this; its size is already bounded by api.max_body_bytes.
    body_deadline_s: float = 30.0
    # PUT/POST bodies to these path prefixes (the fleet's uploads of model files and engines, of
    # up to gigabytes) get upload_deadline_s instead; their size is bounded by the route.
    upload_path_prefixes: Tuple[str, ...] = ()
    upload_deadline_s: float = 900.0
    # What a 413 answered by the server itself names as the limit (the setting to change).
    body_limit_setting: str = "api.max_body_bytes"
    # Per blocking socket operation otherwise (writing a response, an idle keep-alive socket).
    socket_timeout_s: float = 10.0
    # Request line (method, URL, version): above it 414. Browsers cap URLs well below this.
    max_request_line_bytes: int = 32 * 1024
    # All header lines together: above it 431.
    max_header_bytes: int = 32 * 1024
    # Worker threads. Each slow client holds one for at most header_deadline_s, each live view
    # one for as long as it is watched; 64 slow sockets plus every live view must still leave
    # workers for /healthz and the status page. An idle thread costs a stack, not CPU.
    threads: int = 128
    # Connections accepted but waiting for a worker; beyond it a new one is answered 503 at
    # once instead of queueing without bound behind clients that hold every worker.
    max_waiting_connections: int = 128
    # Keep-alive connections parked between requests (they hold a socket, not a thread).
    max_keepalive_connections: int = 256


DEFAULT_LIMITS = HttpLimits()
