"""HTTPS from api.tls, with certificates made by openssl; a silent TLS client blocks nobody."""
from __future__ import annotations

import socket
import ssl
import time

import pytest
import requests

from edge_app.api import create_app
from edge_app.http_server.server import ApiServer
from edge_app.http_server.server import TLSSetupError
from edge_app.config.schema import APIConfig
from tests.api import raw_http
from testkit.certs import make_test_certificates


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_test_certificates(tmp_path_factory.mktemp("api-certs"))


@pytest.fixture
def https_server(api, certs):
    api_config = APIConfig(host="127.0.0.1", port=0, tls={"enabled": True, "certfile": str(certs.server_cert),
                                                          "keyfile": str(certs.server_key)})
    server = ApiServer.from_config(create_app(api.service, api.changes, api.deletion), api_config)
    server.start()
    yield server
    server.stop(timeout_s=3)


def test_api_tls_serves_https(https_server, certs):
    assert https_server.url.startswith("https://127.0.0.1:")
    response = requests.get(https_server.url + "/api/v1/status", verify=str(certs.ca), timeout=10)
    assert response.status_code == 200
    assert response.json()["device_id"] == "edge-test"
    # Plain HTTP on the HTTPS port gets nothing, and the server carries on.
    with pytest.raises(requests.ConnectionError):
        requests.get(https_server.url.replace("https", "http") + "/healthz", timeout=5)
    assert requests.get(https_server.url + "/healthz", verify=str(certs.ca), timeout=10).status_code == 200


def test_clients_that_never_finish_the_handshake_do_not_stop_the_others(https_server, certs):
    silent = [socket.create_connection(raw_http.address(https_server.url)) for _ in range(4)]
    try:
        time.sleep(0.3)
        started = time.monotonic()
        response = requests.get(https_server.url + "/healthz", verify=str(certs.ca), timeout=5)
        assert response.status_code == 200
        assert time.monotonic() - started < 1.0
    finally:
        for sock in silent:
            sock.close()


def test_the_request_limits_apply_over_tls_too(https_server, certs):
    context = ssl.create_default_context(cafile=str(certs.ca))
    response = raw_http.request(https_server.url, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 40000 + b"\r\n\r\n",
                                tls_context=context)
    assert response.status == 431


def test_tls_off_serves_plain_http(api):
    server = ApiServer.from_config(create_app(api.service, api.changes, api.deletion), APIConfig(host="127.0.0.1", port=0))
    server.start()
    try:
        assert server.url.startswith("http://")
        assert requests.get(server.url + "/healthz", timeout=5).status_code == 200
    finally:
        server.stop(timeout_s=3)


def test_an_unreadable_certificate_is_a_clear_error_at_start(api, certs, tmp_path):
    missing = tmp_path / "nope.pem"
    config = APIConfig(host="127.0.0.1", port=0, tls={"enabled": True, "certfile": str(missing)})
    server = ApiServer.from_config(create_app(api.service, api.changes, api.deletion), config)
    with pytest.raises(TLSSetupError, match=str(missing)):
        server.start()
    assert not server.running
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate\n")
    config = APIConfig(host="127.0.0.1", port=0, tls={"enabled": True, "certfile": str(garbage), "keyfile": str(certs.server_key)})
    with pytest.raises(TLSSetupError, match="garbage.pem"):
        ApiServer.from_config(create_app(api.service, api.changes, api.deletion), config).start()
