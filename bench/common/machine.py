"""What the run was measured on: CPUs, memory, library versions, thread settings."""
from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any, Dict


def cpu_model() -> str:
    """The CPU's name: x86 says "model name", some ARM kernels "Model"; else what Python knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") or line.startswith("Model"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _mem_total_gib() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return 0.0


def describe_machine() -> Dict[str, Any]:
    import cv2
    import numpy
    import onnxruntime

    from edge_app import __version__

    return {
        "cpu_model": cpu_model(),
        "cpus": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)),
        "mem_total_gib": _mem_total_gib(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "edge_app": __version__,
        "numpy": numpy.__version__,
        "opencv": cv2.__version__,
        "opencv_threads": cv2.getNumThreads(),
        "onnxruntime": onnxruntime.__version__,
        "load_average": list(os.getloadavg()),
    }
