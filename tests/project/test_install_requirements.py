"""A plain ``pip install edge-app`` installs everything edge-app needs at start; each extra is
imported where it is used, and when it is missing the error names the extra.

Read from the source (each module's module-level imports against setup.py's install_requires),
and run: the commands as a user starts them, in a subprocess where every installed package the
install line would not install is hidden (tests.support.without_packages). tests/install/ does
the same in real fresh virtual environments, one per documented install line.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, FrozenSet, List, Tuple

import pytest
import yaml
from packaging.requirements import Requirement

from tests.support.import_graph import every_import, module_files, module_level_imports
from tests.support.install_requirements import (distributions_installed_by, import_names, names_outside,
                                                read_setup)
from testkit.net import answers_ok, free_port
from testkit.waiting import wait_for
from tests.support.without_packages import python_without

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "edge_app"
OPENCV_HINT = "edge-app[opencv]"

#: extra -> (what it installs, as imported; a call that reaches it and prints what it says when it is missing)
EXTRA_USES: Dict[str, Tuple[Tuple[str, ...], str]] = {
    "opencv": (("cv2",), "from edge_app.opencv import opencv\nopencv()"),
    "fleet": (("psycopg",), "from edge_app.fleet_service.db import connect\nconnect('postgresql://fleet@127.0.0.1:9/fleet')"),
    "nvdec": (("PyNvVideoCodec",), "from edge_app.capture.video_decode.nvdec_source import import_pynvvideocodec\nimport_pynvvideocodec()"),
    "nvenc": (("PyNvVideoCodec",), "from edge_app.record.encoder_choice import nvenc_problem\nprint(nvenc_problem())"),
    "tensorrt": (("cuda",), "from edge_app.cuda.cuda_python import import_bindings\nimport_bindings()"),
    "pycuda": (("pycuda",), "from edge_app.cuda.pycuda_adapter import import_pycuda\nimport_pycuda()"),
    "gstreamer": (("gi",), "from edge_app.capture.gst.source import import_gst\nimport_gst()"),
    "nvml": (("pynvml",), "from edge_app.health.nvml import NvmlReader\nprint(NvmlReader().read())"),
}
#: extras for working on edge-app itself, never imported by it
TOOLING_EXTRAS = {"dev", "bench"}
#: the subprocesses import tests.support from this checkout, whatever their working directory
ENV = dict(os.environ, PYTHONPATH=str(REPO))


def _names(requirements: List[str]) -> List[str]:
    return [Requirement(text).name for text in requirements]


@pytest.fixture(scope="module")
def setup_requirements():
    return read_setup()


@pytest.fixture(scope="module")
def plain_install(setup_requirements) -> FrozenSet[str]:
    """The distributions a plain ``pip install edge-app`` puts in a fresh venv (as installed here)."""
    return distributions_installed_by(setup_requirements.install_requires)


def test_every_install_requirement_is_installed_here(setup_requirements):
    # the checks below map requirements to import names through the installed metadata
    provided = import_names(_names(setup_requirements.install_requires))
    for name in _names(setup_requirements.install_requires):
        assert import_names([name]), f"{name} (install_requires) is not installed in this environment"
    assert {"numpy", "flask", "av"} <= provided


def test_modules_import_only_install_requirements_at_module_level(setup_requirements):
    allowed = import_names(_names(setup_requirements.install_requires)) | set(sys.stdlib_module_names) | {"edge_app"}
    found = [f"{module}:{line} imports {name}" for module, path in sorted(module_files(PACKAGE).items())
             for name, line in module_level_imports(path) if name.partition(".")[0] not in allowed]
    assert found == [], "import an extra inside the function that uses it, or add it to install_requires"


def test_module_level_imports_are_read_from_every_kind_of_statement(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("from typing import TYPE_CHECKING\nimport a\nif TYPE_CHECKING:\n    import b\n"
                      "try:\n    import c\nexcept ImportError:\n    from d.e import f\nclass K:\n    import g\n"
                      "def later():\n    import h\nfrom . import i\n")
    assert [name for name, _ in module_level_imports(source)] == ["typing", "a", "c", "d.e", "g"]


def test_opencv_is_imported_only_by_edge_app_opencv():
    found = [f"{module}:{line}" for module, path in sorted(module_files(PACKAGE).items()) if module != "edge_app.opencv"
             for name, line in every_import(path) if name.partition(".")[0] == "cv2"]
    assert found == [], "call edge_app.opencv.opencv(), whose error names what to install"


def test_every_extra_that_edge_app_imports_has_its_use_checked(setup_requirements):
    assert set(setup_requirements.extras_require) - TOOLING_EXTRAS == set(EXTRA_USES)


@pytest.mark.parametrize("extra", sorted(EXTRA_USES))
def test_a_missing_extra_is_an_error_naming_it(extra):
    hidden, call = EXTRA_USES[extra]
    code = f"try:\n{_indent(call)}\nexcept Exception as err:\n    print(err)\n"
    done = subprocess.run(python_without(hidden, "-c", code), capture_output=True, text=True, timeout=60, cwd=REPO, env=ENV)
    assert done.returncode == 0, done.stderr
    assert f"edge-app[{extra}]" in done.stdout, done.stdout + done.stderr


def _indent(code: str) -> str:
    return "\n".join(f"    {line}" for line in code.splitlines())


@pytest.fixture
def appliance_dir(tmp_path, model_path, bus_clip) -> Path:
    config = {"device_id": "plain", "cameras": [{"id": "cam1", "source": str(bus_clip), "loop": True}],
              "model": {"path": str(model_path)}, "mqtt": {"host": "127.0.0.1", "port": free_port()},
              "api": {"host": "127.0.0.1", "port": free_port()},
              "record": {"events": {"enabled": True}, "continuous": {"enabled": True}}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    return tmp_path


@pytest.mark.parametrize("command", ["check-config", "run", "selftest"])
def test_without_opencv_the_appliance_commands_say_what_to_install(appliance_dir, plain_install, command):
    """As after ``pip install edge-app`` on a Jetson whose venv does not see JetPack's OpenCV."""
    hidden = names_outside(plain_install)
    assert "cv2" in hidden and "av" not in hidden
    done = subprocess.run(python_without(hidden, "-m", "edge_app", command, "-c", "config.yaml"),
                          capture_output=True, text=True, timeout=180, cwd=appliance_dir, env=ENV)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert OPENCV_HINT in output and "Traceback" not in output, output


def test_the_fleet_service_runs_on_a_plain_install_without_opencv(tmp_path, mosquitto_broker, plain_install):
    """SQLite needs nothing beyond the standard library; the service never imports OpenCV."""
    port = free_port()
    config = {"mqtt": {"host": mosquitto_broker.host, "port": mosquitto_broker.port, "client_id": "plain-fleet"},
              "database": {"url": "sqlite:///fleet.db"}, "api": {"host": "127.0.0.1", "port": port}}
    (tmp_path / "fleet.yaml").write_text(yaml.safe_dump(config))
    hidden = names_outside(plain_install)
    assert "cv2" in hidden
    # the finder reports every import of a hidden package, even one an ImportError handler swallows
    code = ("import sys, runpy\nfrom tests.support.without_packages import HidingFinder\n"
            f"class Loud(HidingFinder):\n    def find_spec(self, name, path=None, target=None):\n"
            f"        if name.partition('.')[0] == 'cv2':\n            print('imported cv2', file=sys.stderr, flush=True)\n"
            f"        return super().find_spec(name, path, target)\n"
            f"sys.meta_path.insert(0, Loud({sorted(hidden)!r}))\n"
            "sys.argv = ['edge_app', 'fleet', '-c', 'fleet.yaml']\nrunpy.run_module('edge_app', run_name='__main__')\n")
    log = tmp_path / "fleet.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path,
                                env=ENV)
    try:
        wait_for(lambda: proc.poll() is not None or answers_ok(f"http://127.0.0.1:{port}/healthz"), 60, "the fleet's /healthz")
        assert proc.poll() is None, log.read_text()
        proc.send_signal(signal.SIGTERM)
        started = time.monotonic()
        assert proc.wait(timeout=15) == 0, log.read_text()
        assert time.monotonic() - started < 10
    finally:
        if proc.poll() is None:
            proc.kill()
    text = log.read_text()
    assert "Traceback" not in text and "imported cv2" not in text, text
