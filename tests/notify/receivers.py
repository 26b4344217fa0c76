"""Real HTTP receivers for the notification tests, each on a free port of 127.0.0.1 in a thread.

``Receiver`` records every request and answers from a script of statuses (or hangs until told
to let go). ``NtfyStandIn`` is a stand-in for an ntfy server, not ntfy itself: it implements the
request shape of ntfy's publish API (docs.ntfy.sh/publish: ``POST``/``PUT`` to ``/<topic>``, the
message in the body or, with a file attached, in ``Message``; ``Title``, ``Tags`` (comma
separated), ``Priority``, ``Click``, ``Filename``, their ``X-`` forms, RFC 2047 encoded values,
``Authorization: Bearer``) and answers with ntfy's message JSON, so the tests check what an ntfy
server would read from our requests.
"""
from __future__ import annotations

import base64
import json
import re
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Dict, List, Optional


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    headers: Dict[str, str]  # names lower case
    body: bytes
    at_s: float  # time.monotonic() when it arrived


class Receiver:
    """Answers each request with the next status of ``statuses`` (the last repeats)."""

    def __init__(self, statuses=(200,), hang: bool = False, location: Optional[str] = None) -> None:
        self.requests: List[Received] = []
        self.statuses = list(statuses)
        self.release = threading.Event()
        self.hang = hang
        self.location = location
        self.arrived = threading.Condition()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet test output
                pass

            def _handle(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                with owner.arrived:
                    received = Received(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body,
                                        time.monotonic())
                    owner.requests.append(received)
                    status = owner.statuses[min(len(owner.requests) - 1, len(owner.statuses) - 1)]
                    owner.arrived.notify_all()
                if owner.hang:
                    owner.release.wait(30)
                owner.answer(self, status, received)

            do_POST = do_PUT = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, name="test-receiver", daemon=True)

    def answer(self, handler: BaseHTTPRequestHandler, status: int, received: Received) -> None:
        body = b'{"ok":true}' if status < 400 else b'{"error":"test"}'
        handler.send_response(status)
        if self.location and 300 <= status < 400:
            handler.send_header("Location", self.location)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def wait_for(self, count: int, timeout_s: float = 10.0) -> List[Received]:
        deadline = time.monotonic() + timeout_s
        with self.arrived:
            while len(self.requests) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{len(self.requests)} of {count} requests arrived in {timeout_s} s")
                self.arrived.wait(left)
            return list(self.requests)

    def __enter__(self) -> "Receiver":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


_RFC2047 = re.compile(r"^=\?UTF-8\?B\?([A-Za-z0-9+/=]*)\?=$", re.IGNORECASE)


def _decoded(value: Optional[str]) -> Optional[str]:
    match = _RFC2047.match(value or "")
    return base64.b64decode(match.group(1)).decode("utf-8") if match else value


class NtfyStandIn(Receiver):
    """ntfy's publish API as a server reads it; ``messages`` holds what it would have published."""

    def __init__(self, token: Optional[str] = None) -> None:
        super().__init__()
        self.token = token
        self.messages: List[dict] = []

    def _header(self, received: Received, *names: str) -> Optional[str]:
        for name in names:
            if name in received.headers:
                return _decoded(received.headers[name])
        return None

    def answer(self, handler: BaseHTTPRequestHandler, status: int, received: Received) -> None:
        topic = received.path.lstrip("/")
        if received.method not in ("POST", "PUT") or not re.fullmatch(r"[-_A-Za-z0-9]{1,64}", topic):
            return super().answer(handler, 404, received)
        if self.token is not None and received.headers.get("authorization") != f"Bearer {self.token}":
            return super().answer(handler, 401, received)
        filename = self._header(received, "filename", "x-filename", "file", "f")
        attachment = None
        if filename is not None:
            attachment = {"name": filename, "size": len(received.body)}
            message = self._header(received, "message", "x-message", "m") or "You received a file: " + filename
        else:
            message = received.body.decode("utf-8")
        tags = self._header(received, "tags", "x-tags", "tag", "ta")
        published = {"id": f"m{len(self.messages)}", "time": int(time.time()), "event": "message", "topic": topic,
                     "message": message, "title": self._header(received, "title", "x-title", "t"),
                     "tags": tags.split(",") if tags else [], "click": self._header(received, "click", "x-click"),
                     "priority": self._header(received, "priority", "x-priority", "p")}
        if attachment:
            published["attachment"] = attachment
        self.messages.append(published)
        body = json.dumps(published).encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)
