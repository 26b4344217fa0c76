"""The HTTP server against misbehaving LAN clients, over real sockets: slow senders, huge
request lines and headers, declared bodies above the limit, all while /healthz stays up."""
from __future__ import annotations

import socket
import threading
import time
from typing import List

import pytest
import requests

from edge_app.api import create_app
from edge_app.http_server.server import ApiServer
from edge_app.http_server.http_limits import DEFAULT_LIMITS, HttpLimits
from tests.api import raw_http

SLOW_SOCKETS = 64


def _rss_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/self/status")


@pytest.fixture
def short_deadline_api(api):
    """A second server on the same app whose header deadline is 1 s, so the test is quick."""
    server = ApiServer(create_app(api.service, api.changes, api.deletion), "127.0.0.1", 0, limits=HttpLimits(header_deadline_s=1.0))
    server.start()
    yield server
    server.stop(timeout_s=3)


class SlowLoris:
    """``count`` sockets that each send one byte of a request header every ``interval_s``."""

    def __init__(self, url: str, count: int, interval_s: float = 2.0):
        self.sockets: List[socket.socket] = [raw_http.connect(url) for _ in range(count)]
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._drip, name="test:slowloris", daemon=True)
        self._payload = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: " + b"a" * 1000

    def __enter__(self) -> "SlowLoris":
        self._thread.start()
        return self

    def _drip(self) -> None:
        position = 0
        while not self._stop.is_set():
            byte = self._payload[position % len(self._payload):][:1]
            for sock in self.sockets:
                try:
                    sock.send(byte)
                except OSError:
                    pass
            position += 1
            self._stop.wait(self._interval_s)

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(5)
        for sock in self.sockets:
            sock.close()


def test_64_slow_header_senders_and_8_live_views_leave_healthz_and_status_answering(api):
    viewers = [requests.get(api.url + "/api/v1/cameras/front/stream.mjpg", stream=True, timeout=10) for _ in range(8)]
    try:
        assert all(v.status_code == 200 for v in viewers)
        with SlowLoris(api.url, SLOW_SOCKETS):
            time.sleep(1.0)  # every slow socket has been accepted and handed to a worker
            worst_s = 0.0
            for _ in range(6):
                for path in ("/healthz", "/api/v1/status"):
                    started = time.monotonic()
                    response = requests.get(api.url + path, timeout=5)
                    worst_s = max(worst_s, time.monotonic() - started)
                    assert response.status_code == 200, path
                time.sleep(0.5)
        assert worst_s < 1.0, f"slowest answer during the attack took {worst_s:.2f} s"
    finally:
        for viewer in viewers:
            viewer.close()


def test_a_slow_header_sender_gets_408_at_the_deadline_and_its_socket_is_closed(short_deadline_api):
    with raw_http.connect(short_deadline_api.url) as sock:
        started = time.monotonic()
        for byte in b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1":
            sock.send(bytes([byte]))
            time.sleep(0.2)  # one byte every 0.2 s: each read is quick, the whole is too slow
            if time.monotonic() - started > 0.7:
                break
        response = raw_http.read_response(sock)
        assert response.status == 408
        assert "headers within 1 s" in response.json()["error"]
        assert response.headers["content-type"] == "application/json"
        assert raw_http.wait_closed(sock, 2.0)
    assert time.monotonic() - started < 4.0


def test_a_silent_connection_is_dropped_at_the_deadline(short_deadline_api):
    with raw_http.connect(short_deadline_api.url) as sock:
        # Nothing sent: the server may answer 408 or just close; either way within the deadline.
        assert raw_http.wait_closed(sock, 3.0)


def test_a_request_line_above_32_kib_is_414(api):
    response = raw_http.request(api.url, b"GET /healthz?" + b"a" * (64 * 1024) + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    assert response.status == 414
    assert "32768 bytes" in response.json()["error"]


def test_headers_above_32_kib_are_431(api):
    padding = b"".join(b"X-Pad-%d: %s\r\n" % (i, b"b" * 1000) for i in range(40))
    response = raw_http.request(api.url, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n" + padding + b"\r\n")
    assert response.status == 431
    assert response.json()["error"].startswith("the request headers are larger than 32768 bytes")


def test_headers_just_below_the_limit_are_served(api):
    padding = b"".join(b"X-Pad-%d: %s\r\n" % (i, b"b" * 1000) for i in range(20))
    assert raw_http.request(api.url, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" + padding + b"\r\n").status == 200


def test_a_declared_body_above_max_body_bytes_is_413_before_it_is_sent(api):
    # Nothing of the body is sent: the answer must come from the declared length alone.
    started = time.monotonic()
    response = raw_http.request(api.url, b"PATCH /api/v1/config HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                                b"Content-Length: 104857600\r\n\r\n", timeout_s=5)
    assert response.status == 413
    assert "65536 bytes (api.max_body_bytes)" in response.json()["error"]
    assert time.monotonic() - started < 2.0
    # Also on a route that never reads a body.
    assert raw_http.request(api.url, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 104857600\r\n\r\n").status == 413


def test_the_body_limit_follows_the_running_configuration(api):
    response = requests.patch(api.url + "/api/v1/config", json={"api": {"max_body_bytes": 2048}}, timeout=10)
    assert response.status_code == 200
    server = ApiServer(create_app(api.service, api.changes, api.deletion), "127.0.0.1", 0,
                       body_limit_bytes=lambda: api.changes.current().api.max_body_bytes)
    server.start()
    try:
        head = b"POST /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 4096\r\n\r\n"
        assert raw_http.request(server.url, head).status == 413
    finally:
        server.stop(timeout_s=3)


def test_huge_parallel_headers_are_cut_and_memory_stays_flat(api):
    """Eight clients each streaming a 32 MiB header: the server reads 32 KiB of each and hangs up."""
    before = _rss_bytes()
    results: List[int] = []

    def flood() -> None:
        with raw_http.connect(api.url, timeout_s=10) as sock:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Huge: ")
            results.append(raw_http.send_until_closed(sock, 32 * 1024 * 1024))

    threads = [threading.Thread(target=flood) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    growth = _rss_bytes() - before
    assert len(results) == 8
    assert all(sent < 16 * 1024 * 1024 for sent in results), results  # cut off long before the end
    assert growth < 64 * 1024 * 1024, f"RSS grew by {growth / 2**20:.0f} MiB"
    assert requests.get(api.url + "/healthz", timeout=5).status_code == 200


def test_the_limits_are_the_documented_numbers():
    assert DEFAULT_LIMITS.header_deadline_s == 10.0
    assert DEFAULT_LIMITS.max_request_line_bytes == DEFAULT_LIMITS.max_header_bytes == 32 * 1024
    assert DEFAULT_LIMITS.threads >= SLOW_SOCKETS + 8 + 16


def test_connections_beyond_the_workers_and_the_queue_get_503_at_once(api):
    limits = HttpLimits(header_deadline_s=3.0, threads=2, max_waiting_connections=2)
    server = ApiServer(create_app(api.service, api.changes, api.deletion), "127.0.0.1", 0, limits=limits)
    server.start()
    hogs = []
    try:
        for _ in range(4):  # two hold the workers, two wait in the queue
            hogs.append(raw_http.connect(server.url))
            time.sleep(0.1)
        started = time.monotonic()
        refused = raw_http.get(server.url, "/healthz", timeout_s=5)
        assert refused.status == 503
        assert refused.json()["error"] == "the appliance is busy; retry in a moment"
        assert time.monotonic() - started < 1.0
    finally:
        for sock in hogs:
            sock.close()
        server.stop(timeout_s=3)


def test_a_body_sent_too_slowly_gets_408_not_500(api):
    server = ApiServer(create_app(api.service, api.changes, api.deletion), "127.0.0.1", 0, limits=HttpLimits(body_deadline_s=1.0))
    server.start()
    try:
        with raw_http.connect(server.url) as sock:
            sock.sendall(b"PATCH /api/v1/config HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                         b"Content-Length: 200\r\n\r\n{")
            started = time.monotonic()
            try:
                while time.monotonic() - started < 1.6:
                    time.sleep(0.2)
                    sock.send(b" ")  # each byte well inside the socket timeout; the whole far too slow
            except OSError:
                pass
            response = raw_http.read_response(sock)
        assert response.status == 408
        assert response.json()["error"] == "the request body did not arrive in time"
        assert time.monotonic() - started < 4.0
    finally:
        server.stop(timeout_s=3)


def test_a_late_body_on_a_route_that_ignores_it_closes_quietly(api, caplog):
    server = ApiServer(create_app(api.service, api.changes, api.deletion), "127.0.0.1", 0, limits=HttpLimits(body_deadline_s=1.0))
    server.start()
    try:
        with raw_http.connect(server.url) as sock:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\nab")
            response = raw_http.read_response(sock)
            assert response.status == 200
            assert response.headers.get("connection") == "close"
            assert raw_http.wait_closed(sock, 3.0)
    finally:
        server.stop(timeout_s=3)
    assert not [r for r in caplog.records if r.levelname == "ERROR"]
