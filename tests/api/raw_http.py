"""HTTP clients on raw sockets: what a misbehaving LAN client sends, byte for byte.

``requests`` cannot send a header one byte at a time, stop halfway through a request or
send a 100 MiB header without building it in memory; these helpers can.
"""
from __future__ import annotations

import json
import socket
import ssl
import time
from dataclasses import dataclass, field
from typing import Any, Dict, Optional
from urllib.parse import urlsplit


@dataclass
class RawResponse:
    status: int
    headers: Dict[str, str] = field(default_factory=dict)
    body: bytes = b""

    def json(self) -> Any:
        return json.loads(self.body.decode("utf-8"))


def address(url: str) -> tuple:
    parts = urlsplit(url)
    return parts.hostname, parts.port


def connect(url: str, timeout_s: float = 10.0, tls_context: Optional[ssl.SSLContext] = None) -> socket.socket:
    sock = socket.create_connection(address(url), timeout=timeout_s)
    if tls_context is not None:
        sock = tls_context.wrap_socket(sock, server_hostname=address(url)[0])
    return sock


def read_head(sock: socket.socket, limit_bytes: int = 65536) -> RawResponse:
    """Status and headers; whatever body bytes came along in the same reads are in ``body``."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionError(f"the server closed the connection after {len(data)} bytes: {data[:200]!r}")
        data += chunk
        if len(data) > limit_bytes:
            raise AssertionError("response headers too long")
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return RawResponse(status, headers, rest)


def read_response(sock: socket.socket) -> RawResponse:
    """A whole response with a Content-Length body (errors and JSON answers)."""
    response = read_head(sock)
    length = int(response.headers.get("content-length", "0"))
    body = response.body
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    response.body = body[:length]
    return response


def request(url: str, raw: bytes, timeout_s: float = 10.0, tls_context: Optional[ssl.SSLContext] = None) -> RawResponse:
    """Send ``raw`` as it is and read one response."""
    with connect(url, timeout_s, tls_context) as sock:
        sock.sendall(raw)
        return read_response(sock)


def get(url: str, path: str, headers: Optional[Dict[str, str]] = None, timeout_s: float = 10.0) -> RawResponse:
    host, port = address(url)
    headers = {"Host": f"{host}:{port}", "Connection": "close", **(headers or {})}
    lines = [f"GET {path} HTTP/1.1"] + [f"{name}: {value}" for name, value in headers.items()]
    return request(url, ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"), timeout_s)


def send_until_closed(sock: socket.socket, payload_bytes: int, piece: bytes = b"a" * 65536) -> int:
    """Stream up to ``payload_bytes`` of ``piece`` until the server stops reading; bytes sent."""
    sent = 0
    try:
        while sent < payload_bytes:
            sock.sendall(piece)
            sent += len(piece)
    except (BrokenPipeError, ConnectionResetError, socket.timeout):
        pass
    return sent


def wait_closed(sock: socket.socket, timeout_s: float) -> bool:
    """True when the server closed (or reset) ``sock`` within ``timeout_s``, draining any data."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        sock.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            if not sock.recv(65536):
                return True
        except socket.timeout:
            return False
        except (ConnectionResetError, BrokenPipeError):
            return True
    return False
