"""One appliance for the whole browser suite, and one browser looking at it.

A real Mosquitto, a real RTSP server looping a clip in which people walk across the frame,
``edge-app run`` with the real YOLOv8n on ONNX Runtime (tracking and events on, a zone and a
line on the walking camera, an API token), and a headless Chromium. They are started once per
module: the browser tests check what a user sees, and a fresh appliance per test would spend
most of the run loading the model and waiting for people to walk by.

The second camera, ``yard``, draws test bars without analysis: the edit tests change it, so
that restarting it never interrupts the walking camera the event and live-view tests watch.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.browser.chrome import ConsoleLog, describe, require_chromium, start_chromium
from tests.browser.dashboard import Dashboard
from testkit.appliance import ApplianceProcess
from testkit.broker import MosquittoBroker
from tests.support.media import make_walking_clip, require_tool
from testkit.net import free_port
from testkit.rtsp import RtspServer, require_gst_rtsp_server

TOKEN = "browser-tests-token-0123456789abcdef"
WALK_CAMERA = "walk"
EDIT_CAMERA = "yard"
ZONE = "right_half"
LINE = "middle"


@pytest.fixture(scope="module")
def browser_walking_clip(clips_dir, bus_jpg):
    """The e2e walking scene with short pauses: people are in the picture 6 s of every 10 s, so
    an event opens within a few seconds of the camera connecting. The tail stays longer than
    ``events.end_after_s`` (2 s), so every walk's events end before the next walk."""
    return make_walking_clip(bus_jpg, clips_dir / "browser-walking.mp4", lead_s=1.0, walk_s=6.0, tail_s=3.0)


@pytest.fixture(scope="module")
def browser_broker(tmp_path_factory):
    broker = MosquittoBroker(tmp_path_factory.mktemp("mosquitto")).start()
    yield broker
    broker.kill()


@pytest.fixture(scope="module")
def browser_rtsp(tmp_path_factory, browser_walking_clip):
    require_tool("ffmpeg")
    require_gst_rtsp_server()
    server = RtspServer({WALK_CAMERA: browser_walking_clip.path}, tmp_path_factory.mktemp("rtsp")).start()
    yield server
    server.stop()


def appliance_config(rtsp_url: str, model_path: Path, broker, events_dir: Path) -> dict:
    return {
        "device_id": "browser",
        "cameras": [
            # 5 analysed frames a second track the walkers well and leave the CPU to the browser.
            {"id": WALK_CAMERA, "source": rtsp_url, "fps_limit": 5,
             "zones": [{"name": ZONE, "polygon": [[0.5, 0.1], [1.0, 0.1], [1.0, 1.0], [0.5, 1.0]]}],
             "lines": [{"name": LINE, "points": [[0.5, 0.0], [0.5, 1.0]]}]},
            {"id": EDIT_CAMERA, "source": "test://bars", "fps_limit": 2, "detect": False},
        ],
        "model": {"path": str(model_path), "max_batch": 1},
        "mqtt": {"enabled": True, "host": broker.host, "port": broker.port},
        "api": {"host": "127.0.0.1", "port": free_port(), "token": TOKEN},
        "capture": {"stall_timeout_s": 5, "backoff_initial_s": 0.5, "backoff_max_s": 2, "open_timeout_s": 8},
        "tracking": {"enabled": True},
        "events": {"enabled": True, "dir": str(events_dir)},
    }


@pytest.fixture(scope="module")
def appliance(tmp_path_factory, browser_rtsp, browser_broker, model_path):
    workdir = tmp_path_factory.mktemp("appliance")
    # Where an installed appliance keeps its model, relative to its working directory: the page
    # (and its screenshots) show this path, not where the test data happens to live.
    (workdir / "engines").mkdir()
    (workdir / "engines" / "yolov8n.onnx").symlink_to(model_path)
    with ApplianceProcess(appliance_config(browser_rtsp.url(WALK_CAMERA), Path("engines/yolov8n.onnx"),
                                            browser_broker, workdir / "events"), workdir) as app:
        yield app


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    require_chromium()
    profile = tmp_path_factory.mktemp("chromium")
    browser = start_chromium(profile / "profile", profile / "chromedriver.log")
    yield browser
    browser.quit()
    shutil.rmtree(profile / "profile", ignore_errors=True)  # tens of MB of cache; the driver's log stays


@pytest.fixture(scope="module")
def console(driver):
    return ConsoleLog(driver)


@pytest.fixture(autouse=True)
def no_console_errors(request, console):
    """After every test: nothing SEVERE on the console except what that test said it provokes."""
    console.read()  # what came before belongs to the previous test, already checked
    yield
    errors = console.errors(console.read())
    console.reset()
    # A failed request is often explained by the appliance's log (a 500 has its traceback there).
    log = request.getfixturevalue("appliance").log_tail(30) if errors and "appliance" in request.fixturenames else ""
    assert not errors, (f"{request.node.name} left errors on the browser console:\n{describe(errors)}"
                        + (f"\nlog of edge-app:\n{log}" if log else ""))


@pytest.fixture
def dashboard(driver, appliance, console):
    """The dashboard, open and unlocked with the token."""
    page = Dashboard(driver, appliance.base_url, console, screenshots_dir())
    page.open(TOKEN)
    return page


def screenshots_dir():
    """Where the tests save pictures of the views they reach (``EDGE_APP_SCREENSHOTS``), or None."""
    folder = os.environ.get("EDGE_APP_SCREENSHOTS")
    return Path(folder) if folder else None
