"""The TensorRT backend: engines built and cached on the device, run with pinned memory.

Importing this package registers ``TensorRTDetector`` (backend name "tensorrt") with the
detector factory. TensorRT itself and the CUDA bindings are imported only when a detector is
created, so this package imports everywhere; ``TensorRTDetector.is_available()`` says whether
it can run here.
"""
from edge_app.detect.tensorrt.backend import TensorRTDetector
from edge_app.detect.tensorrt.build import EngineBuildError
from edge_app.detect.tensorrt.cache import EngineKey, check_cached_engine, engine_paths
from edge_app.detect.tensorrt.prepare import EngineCache, PreparedEngine
from edge_app.detect.tensorrt.progress import BuildProgress, BuildStatus, TerminalProgress

__all__ = [
    "TensorRTDetector",
    "EngineBuildError",
    "EngineKey",
    "EngineCache",
    "PreparedEngine",
    "BuildProgress",
    "BuildStatus",
    "TerminalProgress",
    "check_cached_engine",
    "engine_paths",
]
