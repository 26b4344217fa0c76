"""GPU test fixtures: one CUDA device per installed adapter, skipped where there is no GPU.

These tests also run on a GPU machine whose Python image lacks the appliance's other
dependencies, with ``--confcutdir=tests/gpu`` so the suite-wide conftest (brokers, RTSP) is not
loaded. ``edge_app.detect``'s package ``__init__`` imports the configuration schema (pydantic)
through the factory; letterboxing needs none of it, so without pydantic the package is mapped
to its directory without running that ``__init__``.
"""
from __future__ import annotations

import json
import os
import sys
import types
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ADAPTERS = ("cuda-python", "pycuda")

try:
    import pydantic  # noqa: F401
except ImportError:
    if "edge_app.detect" not in sys.modules:
        package = types.ModuleType("edge_app.detect")
        package.__path__ = [str(REPO / "edge_app" / "detect")]
        sys.modules["edge_app.detect"] = package


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs an NVIDIA GPU with CUDA (skipped without one)")


@pytest.fixture(scope="module", params=ADAPTERS)
def device(request):
    from edge_app.cuda import CudaError, available_adapters, open_device

    if request.param not in available_adapters():
        pytest.skip(f"{request.param} is not installed")
    try:
        dev = open_device(request.param)
    except CudaError as err:
        pytest.skip(f"no GPU through {request.param}: {err}")
    yield dev
    dev.close()


@pytest.fixture(scope="session")
def gpu_results():
    """Collects measurements; written as JSON to $EDGE_APP_GPU_RESULTS when that is set."""
    results: dict = {}
    yield results
    target = os.environ.get("EDGE_APP_GPU_RESULTS")
    if target and results:
        Path(target).write_text(json.dumps(results, indent=2, sort_keys=True))


@pytest.fixture(scope="session")
def sample_frame():
    """bus.jpg when the shared test data is there, else None (tests fall back to synthetic frames)."""
    import cv2

    shared = Path(os.environ.get("EDGE_APP_SHARED", REPO.parent / "shared"))
    image = cv2.imread(str(shared / "images" / "bus.jpg"))
    return image
