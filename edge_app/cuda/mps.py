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
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional

#: where CUDA looks when $CUDA_MPS_PIPE_DIRECTORY is not set
DEFAULT_PIPE_DIRECTORY = Path("/tmp/nvidia-mps")
#: the control daemon's socket in its pipe directory: a UNIX SOCK_SEQPACKET socket (seen on an
#: H200 test machine with driver 580; a stream socket's connect is refused with EPROTOTYPE),
#: left behind when the daemon quits
CONTROL_SOCKET = "control"
CONNECT_TIMEOUT_S = 0.5


@dataclass(frozen=True)
class MpsStatus:
    """Whether this process would find the MPS control daemon, and where it looked."""

    running: bool
    pipe_directory: Path

    def describe(self) -> str:
        if self.running:
            return f"NVIDIA MPS is running (its daemon answers in {self.pipe_directory}): CUDA processes share the GPU"
        return (f"NVIDIA MPS is not running (no daemon answers in {self.pipe_directory}): decoder and engine "
                "processes take turns on the GPU; on a dGPU host start it with systemd/edge-app-mps.service (docs/install.md)")


def mps_status(environ: Optional[Mapping[str, str]] = None) -> MpsStatus:
    """What the CUDA driver will find when this process (or a child with the same environment)
    starts CUDA."""
    environ = os.environ if environ is None else environ
    pipe_directory = Path(environ.get("CUDA_MPS_PIPE_DIRECTORY") or DEFAULT_PIPE_DIRECTORY)
    return MpsStatus(_answers(pipe_directory / CONTROL_SOCKET), pipe_directory)


def _answers(control: Path) -> bool:
    """Whether a daemon listens on ``control``, as the CUDA driver finds out: by connecting. The
    socket file outlives the daemon, so its existence says nothing; the daemon takes a connection
    that sends no command as a client that left."""
    client = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    client.settimeout(CONNECT_TIMEOUT_S)
    try:
        client.connect(str(control))
    except OSError:  # no such file, a socket nobody listens on, no permission, not a socket
        return False
    finally:
        client.close()
    return True
