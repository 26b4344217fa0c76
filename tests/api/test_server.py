"""ApiServer: free port, named thread, clean stop, clear bind errors."""
import socket
import threading

import pytest
import requests

from edge_app.api import create_app
from edge_app.http_server.server import ApiServer


def test_port_zero_gives_the_real_port_and_a_named_thread(api):
    assert api.server.port > 0
    assert api.server.url == f"http://127.0.0.1:{api.server.port}"
    assert "api:http" in [t.name for t in threading.enumerate()]
    assert requests.get(api.url + "/healthz", timeout=5).status_code == 200


def test_stop_releases_the_port_and_the_thread(api):
    port = api.server.port
    api.server.stop(timeout_s=3)
    assert not api.server.running
    with pytest.raises(requests.ConnectionError):
        requests.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
    api.server.stop(timeout_s=1)  # a second stop is harmless


def test_a_busy_port_is_an_oserror_at_start(api):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        server = ApiServer(create_app(api.service, api.changes, api.deletion), "127.0.0.1", busy.getsockname()[1])
        with pytest.raises(OSError) as info:
            server.start()
    assert "in use" in str(info.value).lower()
    assert not server.running
