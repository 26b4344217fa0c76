"""``edge-app run`` in a subprocess whose TensorRT is the test stand-in (testkit/tensorrt_standin, NOT TensorRT).

The stand-in implements the TensorRT 10 Python API calls edge-app makes, with the names and
signatures of NVIDIA's documentation; its "engine" is the ONNX plus build metadata, run with
ONNX Runtime on host memory. Its build takes no time of its own, so ``build_step_s`` makes each
of its progress steps sleep that long: a simulated build time, standing for the minutes a
Jetson spends (never a measurement of TensorRT). With ``gpu_identity`` the stand-in device takes
the name and compute capability of this host's real GPU (memory stays on the host), so engine
keys are those a TensorRT appliance on this host would have.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict

from testkit.appliance import ApplianceProcess, default_stop_signals
from testkit.waiting import wait_until

REPO_ROOT = Path(__file__).resolve().parents[1]
STANDIN_DIR = REPO_ROOT / "testkit" / "tensorrt_standin"

LAUNCHER = """
import os, sys, time
sys.path.insert(0, {repo!r})
sys.path.insert(0, {standin!r})
import edge_app.cuda
from tensorrt import _build_steps
from testkit.tensorrt_standin.process_cuda import use_host_memory_cuda
from edge_app.cli import main

assert __import__("tensorrt").IS_STANDIN
IDENTITY = {{}}
if os.environ.get("STANDIN_GPU_IDENTITY") == "1":  # engine keys name this host's real GPU
    real = edge_app.cuda.open_device()
    IDENTITY = {{"name": real.name, "compute_capability": real.compute_capability}}
    real.close()
use_host_memory_cuda(IDENTITY)
STEP_S = float(os.environ.get("STANDIN_BUILD_STEP_S", "0"))
real_step = _build_steps._Monitor.step

def slow_step(self, name, step):
    time.sleep(STEP_S)
    return real_step(self, name, step)

_build_steps._Monitor.step = slow_step
sys.exit(main(["run", "-c", sys.argv[1]]))
"""


class StandinAppliance(ApplianceProcess):
    """An ``edge-app run`` whose TensorRT backend runs on the stand-in."""

    def __init__(self, config: Dict[str, Any], workdir: Path, build_step_s: float = 0.0,
                 gpu_identity: bool = False) -> None:
        super().__init__(config, workdir)
        self.build_step_s = build_step_s
        self.gpu_identity = gpu_identity

    def start(self, wait_api: bool = True) -> "StandinAppliance":
        env = dict(os.environ, PYTHONUNBUFFERED="1", STANDIN_BUILD_STEP_S=str(self.build_step_s),
                   STANDIN_GPU_IDENTITY="1" if self.gpu_identity else "0")
        self._log = open(self.log_path, "wb")
        code = LAUNCHER.format(repo=str(REPO_ROOT), standin=str(STANDIN_DIR))
        self.proc = subprocess.Popen([sys.executable, "-c", code, str(self.config_path)], stdout=self._log,
                                     stderr=subprocess.STDOUT, cwd=self.workdir, env=env,
                                     preexec_fn=default_stop_signals)
        if wait_api:
            wait_until(self._api_up, 60, f"the API of edge-app to answer (log: {self.log_tail()})")
        return self

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""
