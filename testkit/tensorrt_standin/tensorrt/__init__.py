"""A stand-in for NVIDIA TensorRT's Python module, for CPU tests. THIS IS NOT TENSORRT.

TensorRT cannot be installed where the test suite runs, so this package implements only the
TensorRT 10 Python API calls that ``edge_app.detect.tensorrt`` makes, with the names and
signatures given in NVIDIA's TensorRT Python API documentation. Its "engine" is the ONNX file
plus build metadata, serialised; "running" it executes the ONNX model with ONNX Runtime on the
host memory behind the tensor addresses. It optimises nothing and computes everything in FP32.
It exists to exercise the backend's plumbing (build flow, cache, buffers, shapes, batching,
decoding) and says nothing about TensorRT's behaviour or speed.

``IS_STANDIN`` lets production code refuse to mistake it for TensorRT.
"""
from __future__ import annotations

import enum
from typing import Any

import numpy as np

IS_STANDIN = True
#: reported version; tests change it to simulate an upgrade (8.x has no IProgressMonitor)
__version__ = "10.3.0"


def _version() -> tuple:
    parts = [int(p) for p in str(__version__).split(".")[:3] if p.isdigit()]
    return tuple(parts + [0] * (3 - len(parts)))


class DataType(enum.IntEnum):
    FLOAT = 0
    HALF = 1
    INT8 = 2
    INT32 = 3
    BOOL = 4
    UINT8 = 5
    INT64 = 8


_NP_TYPES = {DataType.FLOAT: np.float32, DataType.HALF: np.float16, DataType.INT8: np.int8,
             DataType.INT32: np.int32, DataType.BOOL: np.bool_, DataType.UINT8: np.uint8, DataType.INT64: np.int64}


def nptype(trt_type: DataType) -> type:
    """The numpy type of a TensorRT DataType (tensorrt.nptype)."""
    try:
        return _NP_TYPES[DataType(trt_type)]
    except (KeyError, ValueError):
        raise TypeError(f"could not resolve TensorRT datatype to an equivalent numpy datatype: {trt_type}") from None


class TensorIOMode(enum.IntEnum):
    NONE = 0
    INPUT = 1
    OUTPUT = 2


class Dims(tuple):
    """tensorrt.Dims: an iterable, indexable shape."""


class ILogger:
    class Severity(enum.IntEnum):
        INTERNAL_ERROR = 0
        ERROR = 1
        WARNING = 2
        INFO = 3
        VERBOSE = 4

    def __init__(self) -> None:
        pass

    def log(self, severity: "ILogger.Severity", msg: str) -> None:
        raise NotImplementedError


class Logger(ILogger):
    INTERNAL_ERROR = ILogger.Severity.INTERNAL_ERROR
    ERROR = ILogger.Severity.ERROR
    WARNING = ILogger.Severity.WARNING
    INFO = ILogger.Severity.INFO
    VERBOSE = ILogger.Severity.VERBOSE

    def __init__(self, min_severity: "ILogger.Severity" = ILogger.Severity.WARNING) -> None:
        super().__init__()
        self.min_severity = min_severity
        self.messages: list = []

    def log(self, severity, msg) -> None:
        if severity <= self.min_severity:
            self.messages.append((severity, msg))


def init_libnvinfer_plugins(logger: Any, namespace: str) -> bool:
    """Registers the bundled plugins; the stand-in always knows EfficientNMS_TRT."""
    return True


class NetworkDefinitionCreationFlag(enum.IntEnum):
    EXPLICIT_BATCH = 0
    STRONGLY_TYPED = 1


class BuilderFlag(enum.IntEnum):
    FP16 = 0
    INT8 = 1
    DEBUG = 2
    GPU_FALLBACK = 3
    REFIT = 5


class MemoryPoolType(enum.IntEnum):
    WORKSPACE = 0
    DLA_MANAGED_SRAM = 1
    DLA_LOCAL_DRAM = 2
    DLA_GLOBAL_DRAM = 3


class DeviceType(enum.IntEnum):
    GPU = 0
    DLA = 1


class ErrorCode(enum.IntEnum):
    SUCCESS = 0
    INTERNAL_ERROR = 1
    MEM_ALLOC_FAILED = 2
    MODEL_DESERIALIZE_FAILED = 3
    INVALID_VALUE = 4
    INVALID_GRAPH = 5
    INVALID_NODE = 6
    UNSUPPORTED_GRAPH = 7
    UNSUPPORTED_NODE = 8


class IInt8Calibrator:
    def __init__(self) -> None:
        pass


class IInt8EntropyCalibrator2(IInt8Calibrator):
    """Base class; subclasses implement get_batch_size, get_batch, read/write_calibration_cache."""


class _IProgressMonitor:
    """tensorrt.IProgressMonitor (TensorRT 10 only): phase_start, step_complete, phase_finish."""

    def __init__(self) -> None:
        pass


def __getattr__(name: str) -> Any:
    # TensorRT 8.x has no progress monitor; the stand-in follows whatever version it reports
    if name == "IProgressMonitor" and _version()[0] >= 10:
        return _IProgressMonitor
    raise AttributeError(f"module 'tensorrt' has no attribute {name!r}")


from tensorrt._builder import (Builder, IBuilderConfig, IHostMemory, INetworkDefinition,  # noqa: E402
                               IOptimizationProfile, ITensor, ITimingCache, OnnxParser, ParserError)
from tensorrt._runtime import ICudaEngine, IExecutionContext, Runtime  # noqa: E402

__all__ = [
    "IS_STANDIN", "DataType", "nptype", "TensorIOMode", "Dims", "ILogger", "Logger", "init_libnvinfer_plugins",
    "NetworkDefinitionCreationFlag", "BuilderFlag", "MemoryPoolType", "DeviceType", "ErrorCode",
    "IInt8Calibrator", "IInt8EntropyCalibrator2", "Builder", "IBuilderConfig", "IHostMemory",
    "INetworkDefinition", "IOptimizationProfile", "ITensor", "ITimingCache", "OnnxParser", "ParserError",
    "ICudaEngine", "IExecutionContext", "Runtime",
]
