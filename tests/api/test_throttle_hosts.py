"""Token guessing is throttled per client address; requests for foreign host names are refused."""
from __future__ import annotations

import logging
import socket

import pytest

from edge_app.http_server.hosts import host_allowed
from edge_app.http_server.throttle import FailureThrottle, ThrottlePolicy
from tests.api import raw_http
from tests.api.conftest import TOKEN


def _get_from(url: str, path: str, source_ip: str, headers: dict) -> raw_http.RawResponse:
    """One GET from ``source_ip`` (any 127.x address is this host), so tests can be two clients."""
    host, port = raw_http.address(url)
    with socket.create_connection((host, port), timeout=10, source_address=(source_ip, 0)) as sock:
        lines = [f"GET {path} HTTP/1.1", f"Host: {host}:{port}", "Connection: close"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        return raw_http.read_response(sock)


def test_ten_wrong_tokens_a_minute_get_429_even_with_the_right_token_then(secured_api, caplog):
    caplog.set_level(logging.INFO, logger="edge_app.http_server.auth")
    wrong = {"Authorization": "Bearer guess-0000000000"}
    for _ in range(10):
        assert _get_from(secured_api.url, "/api/v1/status", "127.0.0.1", wrong).status == 401
    refused = _get_from(secured_api.url, "/api/v1/status", "127.0.0.1", wrong)
    assert refused.status == 429
    assert 1 <= int(refused.headers["retry-after"]) <= 60
    assert "too many wrong tokens" in refused.json()["error"]
    # Guessing right now does not help: the answer would tell the guesser it found the token.
    right = {"Authorization": f"Bearer {TOKEN}"}
    assert _get_from(secured_api.url, "/api/v1/status", "127.0.0.1", right).status == 429
    # Another client is not affected, and unprotected routes still answer the throttled one.
    assert _get_from(secured_api.url, "/api/v1/status", "127.0.0.2", right).status == 200
    assert _get_from(secured_api.url, "/healthz", "127.0.0.1", {}).status == 200
    # Eleven failures: one line for the first, one warning for reaching the limit, not eleven.
    lines = [r for r in caplog.records if r.name == "edge_app.http_server.auth"]
    assert len(lines) <= 3, [r.getMessage() for r in lines]
    assert any(r.levelno == logging.WARNING and "127.0.0.1" in r.getMessage() for r in lines)


def test_a_missing_token_is_not_counted_as_a_guess(secured_api):
    for _ in range(15):
        assert _get_from(secured_api.url, "/api/v1/status", "127.0.0.1", {}).status == 401
    right = {"Authorization": f"Bearer {TOKEN}"}
    assert _get_from(secured_api.url, "/api/v1/status", "127.0.0.1", right).status == 200


def test_the_throttle_forgets_failures_after_the_window():
    now = [1000.0]
    throttle = FailureThrottle(ThrottlePolicy(max_failures=3, window_s=60.0, max_clients=2), clock=lambda: now[0])
    assert [throttle.record_failure("a") for _ in range(3)] == [False, False, True]
    assert throttle.retry_after_s("a") == 60
    now[0] += 45
    assert throttle.retry_after_s("a") == 15
    now[0] += 15
    assert throttle.retry_after_s("a") is None
    # Memory is bounded: a third address pushes out the least recently failing one.
    throttle.record_failure("b")
    throttle.record_failure("c")
    throttle.record_failure("d")
    assert throttle.retry_after_s("b") is None


@pytest.mark.parametrize("host, allowed", [
    ("127.0.0.1:8080", True), ("10.1.2.3", True), ("[::1]:8080", True), ("::1", True), ("[fe80::1%eth0]:80", True),
    ("localhost:8080", True), ("LOCALHOST.", True), (None, True),
    ("evil.example", False), ("evil.example:8080", False), ("localhost.evil.example", False), ("127.0.0.1.nip.io", False),
    ("edge.lan", True), ("EDGE.LAN:8080", True), ("cam.site.lan", True), ("lan", False), ("edge.lan.evil.example", False),
])
def test_host_allowed(host, allowed):
    assert host_allowed(host, ["edge.lan", "*.site.lan"]) is allowed


def test_a_request_for_a_foreign_host_name_is_400_json(api):
    refused = raw_http.get(api.url, "/api/v1/config", {"Host": "attacker.example"})
    assert refused.status == 400
    assert "attacker.example" in refused.json()["error"]
    assert "api.allowed_hosts" in refused.json()["error"]
    assert raw_http.get(api.url, "/api/v1/config", {"Host": f"localhost:{api.server.port}"}).status == 200


def test_listed_host_names_are_served(make_api):
    running = make_api({"api": {"allowed_hosts": ["edge-box.lan"]}})
    assert raw_http.get(running.url, "/api/v1/status", {"Host": "edge-box.lan:8080"}).status == 200
    assert raw_http.get(running.url, "/api/v1/status", {"Host": "other.lan"}).status == 400
