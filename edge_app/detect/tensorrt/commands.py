"""The body of ``edge-app build-engine -c CONFIG [--force]``.

Builds (or reuses) the engine the appliance would load for the configuration, with a progress
bar on the terminal, and ends with one line saying what happened. Exit codes follow docs/commands.md:
0 ok, 1 runtime failure.
"""
from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any, Optional

from edge_app.cuda import CudaError, open_device
from edge_app.detect.base import DetectorError
from edge_app.detect.tensorrt.api import import_tensorrt, is_standin
from edge_app.detect.model_metadata import is_engine_file
from edge_app.detect.tensorrt.prepare import EngineCache, load_user_engine
from edge_app.detect.tensorrt.progress import TerminalProgress
from edge_app.detect.tensorrt.runtime import EngineRuntime

log = logging.getLogger(__name__)

EXIT_OK = 0
EXIT_FAILURE = 1


def _ensure_logging(level: str) -> None:
    """The rebuild reason is a log line; make sure a bare CLI run shows it."""
    root = logging.getLogger()
    if not root.handlers:
        logging.basicConfig(level=getattr(logging, level, logging.INFO), stream=sys.stderr,
                            format="%(levelname)s %(name)s: %(message)s")


def _fail(message: str) -> int:
    print(f"edge-app: {message}", file=sys.stderr)
    return EXIT_FAILURE


def build_engine_command(config: Any, force: bool) -> int:
    """Build or reuse the TensorRT engine of every model of ``config`` (``model``, ``models``); returns
    the exit code (the worst of them: every model is tried)."""
    _ensure_logging(config.logging.level)
    models = config.model_configs()
    # A model set to run with ONNX Runtime needs no engine; with one model it is built all the same, as ever.
    wanted = [m for m in models.values() if m.backend != "onnxruntime"] if len(models) > 1 else list(models.values())
    return max((_build_engine(model, force) for model in wanted), default=EXIT_OK)


def _build_engine(model: Any, force: bool) -> int:
    try:
        trt = import_tensorrt()
    except DetectorError as err:
        return _fail(str(err))
    if is_standin(trt):
        return _fail("the importable 'tensorrt' module is the test suite's stand-in, not TensorRT")
    try:
        device = open_device()
    except CudaError as err:
        return _fail(f"no usable GPU: {err} (install cuda-python or pycuda)")
    runtime: Optional[EngineRuntime] = None
    try:
        def deserialize(data: bytes, label: str) -> EngineRuntime:
            return EngineRuntime(trt, data, device, model.max_batch, label)

        if is_engine_file(model.path):
            runtime, _ = load_user_engine(Path(model.path), deserialize)
            print(f"{model.path} is a prebuilt engine and loads with TensorRT {trt.__version__} on {device.name}; "
                  "nothing to build")
            return EXIT_OK
        cache = EngineCache(trt, model, device, TerminalProgress(sys.stderr))
        runtime, prepared = cache.load(deserialize, force=force)
        what = "built" if prepared.source == "built" else "reused cached"
        height, width = runtime.input_hw
        batch = f"1..{runtime.max_batch}" if runtime.dynamic_batch else str(runtime.max_batch)
        print(f"{what} engine {prepared.path} ({model.precision}, batch {batch}, input {width}x{height}, "
              f"TensorRT {trt.__version__}, {device.name} sm_{''.join(map(str, device.compute_capability))})")
        return EXIT_OK
    except DetectorError as err:
        return _fail(str(err))
    except KeyboardInterrupt:
        return _fail("engine build interrupted")
    finally:
        if runtime is not None:
            runtime.close()
        device.close()
