"""Request bodies the fleet server never holds in memory: over api.max_body_bytes on any route but
the uploads, and any upload body before its request is authenticated.

The fleet runs in this process, so its peak resident memory is this process's; the kernel's
peak (VmHWM) is reset just before the requests.
"""
from __future__ import annotations

import os
import socket
import threading
from pathlib import Path
from typing import List, Tuple

import pytest

MIB = 1 << 20
BODY_BYTES = 50 * MIB
REQUESTS = 8
#: What eight bodies of 50 MiB may raise the peak by at most (one of them held would be 50 MiB).
MAX_PEAK_GROWTH_BYTES = 30 * MIB
TOKEN = "fleet-token-0123456789abcdef"

pytestmark = pytest.mark.parametrize("fleet_db_url", ["sqlite"], indirect=True)


def _peak_rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM in /proc/self/status")


def _reset_peak_rss() -> None:
    Path("/proc/self/clear_refs").write_text("5")


def _send(url: str, method: str, path: str, body: memoryview, headers: str = "") -> Tuple[int, bytes]:
    """(status, head of the answer) of one request whose body is sent while the answer is awaited."""
    host, port = url.split("//", 1)[1].rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=60)
    try:
        sock.sendall(f"{method} {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Length: {len(body)}\r\n"
                     f"Content-Type: application/octet-stream\r\n{headers}\r\n".encode("latin-1"))

        def push() -> None:
            try:
                sock.sendall(body)
            except OSError:  # the server closed the connection instead of reading: what is wanted
                pass

        sender = threading.Thread(target=push, daemon=True)
        sender.start()
        answer = b""
        while b"\r\n\r\n" not in answer:
            piece = sock.recv(65536)
            if not piece:
                break
            answer += piece
        sender.join(60)
        return int(answer.split(b" ", 2)[1]), answer[:2000]
    finally:
        sock.close()


def _many(url: str, method: str, path: str, headers: str = "") -> Tuple[List[int], int]:
    """The statuses of REQUESTS concurrent requests with 50 MiB bodies, and how much they raised the peak RSS."""
    body = memoryview(bytearray(b"x" * BODY_BYTES))
    statuses: List[int] = []
    _reset_peak_rss()
    before = _peak_rss_bytes()
    threads = [threading.Thread(target=lambda: statuses.append(_send(url, method, path, body, headers)[0]))
               for _ in range(REQUESTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return statuses, _peak_rss_bytes() - before


def test_a_large_body_to_any_other_route_is_refused_before_it_is_read(fleet_factory):
    fleet = fleet_factory(api={"token": TOKEN})
    statuses, growth = _many(fleet.url, "GET", "/healthz")
    print(f"8 x GET /healthz with 50 MiB: statuses {sorted(statuses)}, peak RSS +{growth / MIB:.1f} MiB")
    assert statuses == [413] * REQUESTS
    assert growth < MAX_PEAK_GROWTH_BYTES, f"the peak RSS grew by {growth / MIB:.0f} MiB"
    # Unauthenticated, to a route that takes a JSON body: 413 too, never the 401 after reading it.
    statuses, growth = _many(fleet.url, "POST", "/api/v1/rollouts")
    assert statuses == [413] * REQUESTS
    assert growth < MAX_PEAK_GROWTH_BYTES, f"the peak RSS grew by {growth / MIB:.0f} MiB"
    assert fleet.get("/healthz").status_code == 200


def test_an_upload_body_is_not_read_before_the_request_is_authenticated(fleet_factory):
    fleet = fleet_factory(api={"token": TOKEN})
    artifacts = Path(fleet.artifacts_dir)
    statuses, growth = _many(fleet.url, "PUT", "/api/v1/models/m/1")
    print(f"8 x unauthenticated PUT of 50 MiB: statuses {sorted(statuses)}, peak RSS +{growth / MIB:.1f} MiB")
    assert statuses == [401] * REQUESTS
    assert growth < MAX_PEAK_GROWTH_BYTES, f"the peak RSS grew by {growth / MIB:.0f} MiB"
    assert [p for p in artifacts.rglob("*") if p.is_file()] == []
    # A path under the uploads that no route answers: refused without reading the body either.
    statuses, growth = _many(fleet.url, "PUT", "/api/v1/models/m", f"Authorization: Bearer {TOKEN}\r\n")
    assert statuses == [405] * REQUESTS or statuses == [404] * REQUESTS
    assert growth < MAX_PEAK_GROWTH_BYTES, f"the peak RSS grew by {growth / MIB:.0f} MiB"
    # Authenticated, the same upload is streamed to disk (not held in memory) and kept.
    statuses, growth = _many(fleet.url, "PUT", "/api/v1/engines", "X-Edge-Device: nobody\r\n"
                             "Authorization: Bearer nobody-token-0123456789\r\n")
    assert statuses == [401] * REQUESTS
    status, _ = _send(fleet.url, "PUT", "/api/v1/models/m/1", memoryview(b"y" * (4 * MIB)),
                      f"Authorization: Bearer {TOKEN}\r\n")
    assert status == 201
    assert sum(p.stat().st_size for p in artifacts.rglob("*") if p.is_file()) == 4 * MIB
    assert os.path.isdir(artifacts)
