"""Choosing and constructing the detector backend for a ModelConfig.

Backends register by subclassing ``Detector`` with a ``backend_name`` and are constructed as
``Backend(model_config, **options)``. The TensorRT backend lives in ``edge_app.detect.tensorrt``
and is imported lazily: on a machine without it (or without TensorRT) everything else works.
"""
from __future__ import annotations

import importlib
import logging
from typing import Any, Dict, Optional, Type

from edge_app.config.schema import ModelConfig
from edge_app.detect.base import Detector, DetectorError
from edge_app.detect.image_io import ImageReadError, load_image
from edge_app.detect.model_metadata import is_engine_file
from edge_app.detect.onnxruntime_backend import OnnxRuntimeDetector

log = logging.getLogger(__name__)

TENSORRT = "tensorrt"
ONNXRUNTIME = OnnxRuntimeDetector.backend_name
_TENSORRT_MODULE = "edge_app.detect.tensorrt"

__all__ = ["available_backends", "create_detector", "load_image", "ImageReadError", "backend_class"]


def _register_optional_backends() -> None:
    """Import backends that may be absent so their classes register themselves."""
    try:
        importlib.import_module(_TENSORRT_MODULE)
    except ImportError as exc:
        log.debug("TensorRT backend not loaded: %s", exc)
    except Exception as exc:  # a broken optional backend must not take the ONNX Runtime path down
        log.warning("TensorRT backend failed to import: %s", exc)


def backend_class(name: str) -> Optional[Type[Detector]]:
    """The registered Detector subclass called ``name``, or None."""
    _register_optional_backends()
    return Detector.backends().get(name)


def _is_available(cls: Optional[Type[Detector]]) -> bool:
    if cls is None:
        return False
    try:
        return bool(cls.is_available())
    except Exception as exc:
        log.warning("could not check whether the %s backend is available: %s", cls.backend_name, exc)
        return False


def available_backends() -> Dict[str, bool]:
    """Every known backend name and whether it can run on this machine."""
    _register_optional_backends()
    found = {name: _is_available(cls) for name, cls in Detector.backends().items()}
    found.setdefault(TENSORRT, False)
    return dict(sorted(found.items()))


def choose_backend(model: ModelConfig) -> str:
    """The backend name ``model.backend`` resolves to here, or DetectorError saying why none can."""
    is_engine = is_engine_file(model.path)
    tensorrt_ok = _is_available(backend_class(TENSORRT))
    if model.backend == TENSORRT or (model.backend == "auto" and is_engine):
        if not tensorrt_ok:
            what = f"model {model.path} is a TensorRT engine" if is_engine else "backend tensorrt was requested"
            raise DetectorError(f"{what} but TensorRT is not installed on this machine; use an .onnx model with backend onnxruntime")
        return TENSORRT
    if model.backend == ONNXRUNTIME:
        if is_engine:
            raise DetectorError(f"ONNX Runtime cannot run the TensorRT engine {model.path}; use the .onnx model or backend tensorrt")
        return ONNXRUNTIME
    return TENSORRT if tensorrt_ok else ONNXRUNTIME


def create_detector(model: ModelConfig, **options: Any) -> Detector:
    """Load ``model`` with the backend it asks for; ``options`` go to the backend's constructor.

    Every failure is a DetectorError with a one-sentence message for the user.
    """
    name = choose_backend(model)
    cls = backend_class(name)
    if cls is None:
        raise DetectorError(f"backend {name} is not available in this installation")
    log.info("loading %s with the %s backend", model.path, name)
    try:
        return cls(model, **options)
    except DetectorError:
        raise
    except Exception as exc:
        raise DetectorError(f"the {name} backend could not load {model.path} ({type(exc).__name__}: {exc})") from exc
