"""Every install line the README and docs/ give, each in a fresh venv holding only what it installs.

Then what a user runs next: ``edge-app selftest``; ``edge-app run`` for 15 s on a file camera
with event clips and continuous recording on (its clips are decoded, its events read back, its
detections heard on a real broker); ``edge-app fleet`` for the fleet's line. A line without
OpenCV (a Jetson's venv that does not see JetPack's) must say what to install, not crash.
"""
from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Tuple

import pytest
import yaml

from tests.support.fresh_venv import FreshVenv, Wheelhouse, make_system_opencv
from tests.support.media import require_tool
from testkit.net import answers_ok, free_port
from testkit.waiting import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.install]

#: stands for the folder of the source, as docs/jetson.md writes it
SOURCE = "/path/to/edge-app"
RUN_S = 15.0
OPENCV_HINT = "OpenCV is not installed: install edge-app[opencv]"


@dataclass(frozen=True)
class InstallLine:
    name: str
    where: str                                  # the document that gives it
    pip_installs: Tuple[Tuple[str, ...], ...]   # each ``pip install ARGS`` in order, as written there
    system_opencv: bool = False                 # the venv sees a stand-in for JetPack's python3-opencv
    has_opencv: bool = True
    run_s: Optional[float] = RUN_S              # edge-app run this long with recording; 0: start and stop; None: not run
    fleet: bool = False
    extra_check: str = ""                       # Python run in the venv: what the extra is for works

    def __str__(self) -> str:
        return self.name


JETSON = (("numpy<2",), (SOURCE,), ("cuda-python==12.6.*",))
LINES = (
    # the venv made without --system-site-packages, so JetPack's OpenCV is out of its sight
    InstallLine("jetson-without-opencv", "docs/jetson.md", JETSON, has_opencv=False, run_s=None),
    InstallLine("jetson", "docs/jetson.md", JETSON, system_opencv=True,
                extra_check="from edge_app.cuda import available_adapters; assert 'cuda-python' in available_adapters()"),
    InstallLine("opencv", "README.md", (("edge-app[opencv]",),)),
    InstallLine("fleet", "README.md", (("edge-app[fleet]",),), has_opencv=False, run_s=None, fleet=True),
    InstallLine("nvml", "docs/health.md", (("edge-app[opencv]",), ("edge-app[nvml]",)),
                extra_check="from edge_app.health.nvml import NvmlReader\nr = NvmlReader().read()\n"
                            "assert 'not installed' not in str(r), r"),
    InstallLine("nvdec", "README.md", (("edge-app[opencv]",), ("edge-app[nvdec]",)), run_s=0,
                extra_check="from edge_app.capture.video_decode.decoders import NO_NVDEC_MESSAGE, detect_nvdec\n"
                            "info = detect_nvdec()\nassert info.detail != NO_NVDEC_MESSAGE, info"),
    # the masked recordings' NVENC path (docs/privacy.md): PyNvVideoCodec is found; without a GPU
    # the encoder session does not open, and says so instead of "not installed"
    InstallLine("nvenc", "docs/privacy.md", (("edge-app[opencv]",), ("edge-app[nvenc]",)), run_s=0,
                extra_check="from edge_app.record.encoder_choice import nvenc_problem\nwhy = nvenc_problem()\n"
                            "assert why is None or 'not installed' not in why, why"),
    InstallLine("tensorrt", "setup.py", (("edge-app[opencv]",), ("edge-app[tensorrt]",)), run_s=0,
                extra_check="from edge_app.cuda.cuda_python import import_bindings; import_bindings()"),
)


def lines(**wanted) -> List[InstallLine]:
    """The install lines whose fields have the ``wanted`` values."""
    return [line for line in LINES if all(getattr(line, key) == value for key, value in wanted.items())]


@pytest.fixture(scope="module")
def installed(request, wheelhouse: Wheelhouse, tmp_path_factory) -> Tuple[InstallLine, FreshVenv]:
    line: InstallLine = request.param
    root = tmp_path_factory.mktemp(f"venv-{line.name}")
    venv = FreshVenv(root / "venv", wheelhouse)
    for args in line.pip_installs:
        venv.pip_install(*(str(wheelhouse.source) if arg == SOURCE else arg for arg in args))
    if line.system_opencv:
        venv.add_system_opencv(make_system_opencv(wheelhouse, root / "dist-packages"))
    return line, venv


def _run(venv: FreshVenv, *args: str, cwd: Path, timeout_s: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(venv.command("edge-app", *args), capture_output=True, text=True, cwd=cwd,
                          env=venv.env(), timeout=timeout_s)


@pytest.mark.parametrize("installed", LINES, ids=str, indirect=True)
def test_selftest(installed, tmp_path, model_path, bus_jpg):
    line, venv = installed
    done = _run(venv, "selftest", "--model", str(model_path), str(bus_jpg), cwd=tmp_path)
    output = done.stdout + done.stderr
    assert "Traceback" not in output, output
    if line.has_opencv:
        assert done.returncode == 0, output
        assert "PASS  image bus.jpg: ONNX Runtime on the CPU" in output, output
    else:
        assert done.returncode == 1, output
        assert f"FAIL  OpenCV: {OPENCV_HINT}" in output, output


@pytest.mark.parametrize("installed", [line for line in LINES if line.extra_check], ids=str, indirect=True)
def test_what_the_extra_is_for_works(installed, tmp_path):
    line, venv = installed
    done = subprocess.run([str(venv.python), "-c", line.extra_check], capture_output=True, text=True, cwd=tmp_path,
                          env=venv.env(), timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def _appliance_config(tmp_path: Path, line: InstallLine, model_path: Path, clip: Path, broker) -> Tuple[Path, int]:
    port = free_port()
    config = {
        "device_id": f"install-{line.name}",
        "cameras": [{"id": "cam1", "source": str(clip), "loop": True, "realtime": True}],
        "model": {"path": str(model_path)},
        "mqtt": {"host": broker.host, "port": broker.port},
        "api": {"host": "127.0.0.1", "port": port},
        "events": {"dir": "events"},
        # a busy test machine's disk may be fuller than the defaults allow recording on
        "record": {"dir": "recordings", "events": {"enabled": True, "pre_s": 1, "post_s": 1},
                   "continuous": {"enabled": True, "segment_s": 10},
                   "retain": {"reserve_mb": 0, "max_disk_percent": 99}},
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path, port


def _frames(path: Path) -> int:
    """Frames ffprobe decodes from ``path`` (0 when it cannot read it)."""
    done = subprocess.run([require_tool("ffprobe"), "-v", "error", "-count_frames", "-select_streams", "v:0",
                           "-show_entries", "stream=nb_read_frames", "-of", "json", str(path)],
                          capture_output=True, text=True, timeout=60)
    streams = json.loads(done.stdout or "{}").get("streams", [])
    return int(streams[0].get("nb_read_frames", 0)) if done.returncode == 0 and streams else 0


def _stop(proc: subprocess.Popen, log: Path) -> None:
    proc.send_signal(signal.SIGTERM)
    started = time.monotonic()
    try:
        code = proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError(f"no exit 15 s after SIGTERM: {log.read_text()[-3000:]}")
    assert code == 0, log.read_text()[-3000:]
    assert time.monotonic() - started < 10, "stopping took longer than 10 s"


@pytest.mark.parametrize("installed", lines(has_opencv=False), ids=str, indirect=True)
@pytest.mark.parametrize("command", ["check-config", "run"])
def test_without_opencv_the_appliance_says_what_to_install(installed, command, tmp_path, model_path, bus_clip,
                                                           mosquitto_broker):
    line, venv = installed
    config, _ = _appliance_config(tmp_path, line, model_path, bus_clip, mosquitto_broker)
    done = _run(venv, command, "-c", str(config), cwd=tmp_path)
    output = done.stdout + done.stderr
    assert done.returncode == 1 and OPENCV_HINT in output and "Traceback" not in output, output


@pytest.mark.parametrize("installed", [line for line in LINES if line.run_s is not None], ids=str, indirect=True)
def test_run_records_and_stops(installed, tmp_path, model_path, bus_clip, mosquitto_broker, mqtt_collector):
    line, venv = installed
    config, port = _appliance_config(tmp_path, line, model_path, bus_clip, mosquitto_broker)
    checked = _run(venv, "check-config", "-c", str(config), cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    detections = mqtt_collector(mosquitto_broker, f"edge_app/install-{line.name}/cameras/cam1/detections")
    log = tmp_path / "edge-app.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(venv.command("edge-app", "run", "-c", str(config)), stdout=out, stderr=subprocess.STDOUT,
                                cwd=tmp_path, env=venv.env())
    try:
        wait_for(lambda: proc.poll() is not None or answers_ok(f"http://127.0.0.1:{port}/healthz"), 120, "/healthz")
        assert proc.poll() is None, log.read_text()[-3000:]
        time.sleep(line.run_s)
        assert proc.poll() is None, log.read_text()[-3000:]
        if line.run_s:
            assert detections.messages(), "no detections on MQTT"
        _stop(proc, log)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = log.read_text()
    assert "Traceback" not in text, text[-3000:]
    if not line.run_s:
        return  # started and stopped: too short for recordings to check
    segments = sorted((tmp_path / "recordings" / "cam1").glob("*.mp4"))
    clips = sorted((tmp_path / "recordings" / "cam1" / "events").glob("*.mp4"))
    assert segments and all(_frames(path) > 0 for path in segments), f"continuous segments: {segments}"
    assert clips and all(_frames(path) > 0 for path in clips), f"event clips: {clips}"
    with sqlite3.connect(f"file:{tmp_path / 'events' / 'events.db'}?mode=ro", uri=True) as db:
        assert db.execute("SELECT count(*) FROM events").fetchone()[0] > 0
        assert db.execute("SELECT count(*) FROM clips").fetchone()[0] > 0


@pytest.mark.parametrize("installed", lines(fleet=True), ids=str, indirect=True)
def test_fleet(installed, tmp_path, mosquitto_broker):
    line, venv = installed
    port = free_port()
    base = {"mqtt": {"host": mosquitto_broker.host, "port": mosquitto_broker.port, "client_id": "install-fleet"},
            "api": {"host": "127.0.0.1", "port": port}}
    config = tmp_path / "fleet.yaml"
    config.write_text(yaml.safe_dump({**base, "database": {"url": "sqlite:///fleet.db"}}))
    log = tmp_path / "fleet.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(venv.command("edge-app", "fleet", "-c", str(config)), stdout=out,
                                stderr=subprocess.STDOUT, cwd=tmp_path, env=venv.env())
    try:
        wait_for(lambda: proc.poll() is not None or answers_ok(f"http://127.0.0.1:{port}/healthz"), 60, "/healthz")
        assert proc.poll() is None, log.read_text()
        assert answers_ok(f"http://127.0.0.1:{port}/api/v1/devices")
        _stop(proc, log)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "Traceback" not in log.read_text()
    # PostgreSQL through the extra's psycopg: a refused connection, not a missing package
    config.write_text(yaml.safe_dump({**base, "database": {"url": f"postgresql://fleet@127.0.0.1:{free_port()}/fleet"}}))
    done = _run(venv, "fleet", "-c", str(config), cwd=tmp_path, timeout_s=60)
    assert done.returncode == 1 and "cannot connect to PostgreSQL" in done.stderr, done.stdout + done.stderr
