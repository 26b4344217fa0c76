"""NVIDIA's Multi-Process Service (MPS): whether the CUDA contexts of this process will use it.

Decoder processes (``capture.nvdec_processes``), an engine process (``model.engine_process``)
and the appliance each have a CUDA context. Without MPS a GPU runs one context's kernels at a
time, so they take turns; with it they share the GPU. On an H200 test machine with 8 NVDEC
camera files this was the largest single difference: 0.44-0.51 of the engine's own throughput
without MPS, 1.01-1.05 with it and the engine process (docs/gpu-benchmark.md).

When CUDA starts in a process, the driver looks for the MPS control daemon's pipes in
``$CUDA_MPS_PIPE_DIRECTORY`` (default ``/tmp/nvidia-mps``) and, finding none, runs without MPS.
So a daemon started with another directory, or hidden from a service by ``PrivateTmp``, is not
used: ``systemd/edge-app-mps.service`` and ``systemd/edge-app.service`` both name
``/run/edge-app-mps``.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional

#: where CUDA looks when $CUDA_MPS_PIPE_DIRECTORY is not set
DEFAULT_PIPE_DIRECTORY = Path("/tmp/nvidia-mps")
#: what the control daemon creates in its pipe directory while it runs
CONTROL_PIPE = "control"


@dataclass(frozen=True)
class MpsStatus:
    """Whether this process would find the MPS control daemon, and where it looked."""

    running: bool
    pipe_directory: Path

    def describe(self) -> str:
        if self.running:
            return f"NVIDIA MPS is running (pipes in {self.pipe_directory}): CUDA processes share the GPU"
        return (f"NVIDIA MPS is not running (no control pipe in {self.pipe_directory}): decoder and engine "
                "processes take turns on the GPU; on a dGPU host start it with systemd/edge-app-mps.service (README)")


def mps_status(environ: Optional[Mapping[str, str]] = None) -> MpsStatus:
    """What the CUDA driver will find when this process (or a child with the same environment)
    starts CUDA."""
    environ = os.environ if environ is None else environ
    pipe_directory = Path(environ.get("CUDA_MPS_PIPE_DIRECTORY") or DEFAULT_PIPE_DIRECTORY)
    try:
        running = (pipe_directory / CONTROL_PIPE).exists()
    except OSError:  # a directory we may not look into
        running = False
    return MpsStatus(running, pipe_directory)
