"""Importing TensorRT and the few version differences the backend has to bridge.

The backend is written against TensorRT 10's Python API (JetPack 6.x ships 10.3) and keeps
working on 8.5/8.6 (JetPack 5.1): there, networks need the explicit-batch flag and the builder
has no progress monitor. The named-tensor API the runtime uses exists since 8.5.
"""
from __future__ import annotations

import logging
import re
from typing import Any, Tuple

from edge_app.detect.base import DetectorError

log = logging.getLogger(__name__)

#: the oldest TensorRT with the named-tensor API (set_input_shape, execute_async_v3)
MIN_VERSION = (8, 5)


class TensorRTUnavailable(DetectorError):
    """TensorRT cannot be imported here."""


def import_tensorrt() -> Any:
    try:
        import tensorrt
    except ImportError as err:
        raise TensorRTUnavailable(
            f"TensorRT is not installed ({err}); on a Jetson it comes with JetPack - create the venv with "
            "--system-site-packages so it is visible (see docs/jetson.md)") from None
    version = parse_version(getattr(tensorrt, "__version__", "0"))
    if version[:2] < MIN_VERSION:
        raise TensorRTUnavailable(
            f"TensorRT {tensorrt.__version__} is too old; edge-app needs {MIN_VERSION[0]}.{MIN_VERSION[1]} or newer (JetPack 5.1+)")
    return tensorrt


def parse_version(text: str) -> Tuple[int, int, int]:
    numbers = [int(n) for n in re.findall(r"\d+", str(text))[:3]]
    while len(numbers) < 3:
        numbers.append(0)
    return numbers[0], numbers[1], numbers[2]


def version_of(trt: Any) -> Tuple[int, int, int]:
    return parse_version(getattr(trt, "__version__", "0"))


def is_standin(trt: Any) -> bool:
    """True for the test suite's stand-in module, which must never pass for TensorRT."""
    return bool(getattr(trt, "IS_STANDIN", False))


def network_flags(trt: Any) -> int:
    """create_network flags: explicit batch is mandatory before 10 and implied (deprecated) from 10."""
    if version_of(trt)[0] >= 10:
        return 0
    return 1 << int(trt.NetworkDefinitionCreationFlag.EXPLICIT_BATCH)


def make_logger(trt: Any) -> Any:
    """A trt.ILogger that forwards TensorRT's messages to Python logging."""

    severity = trt.ILogger.Severity
    levels = {
        severity.INTERNAL_ERROR: logging.CRITICAL,
        severity.ERROR: logging.ERROR,
        severity.WARNING: logging.WARNING,
        severity.INFO: logging.DEBUG,  # TensorRT's INFO is build chatter
        severity.VERBOSE: logging.DEBUG - 5,
    }
    trt_log = logging.getLogger("edge_app.tensorrt")

    class _Logger(trt.ILogger):
        def __init__(self) -> None:
            trt.ILogger.__init__(self)

        def log(self, level, msg) -> None:  # noqa: A003 - name fixed by TensorRT
            trt_log.log(levels.get(level, logging.INFO), "%s", msg)

    return _Logger()


def init_plugins(trt: Any, logger: Any) -> None:
    """Register TensorRT's bundled plugins (EfficientNMS_TRT and friends) once per process."""
    try:
        trt.init_libnvinfer_plugins(logger, "")
    except Exception as err:  # engines without plugins still work
        log.warning("TensorRT plugins could not be registered: %s", err)
