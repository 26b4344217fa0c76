"""What a model file says about itself: engine or ONNX, metadata flags, and its input size.

Both backends decide these the same way, so the rules live here once.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Mapping, Optional, Tuple

from edge_app.detect.base import DetectorError

log = logging.getLogger(__name__)

#: a model.path ending in one of these is a serialised TensorRT engine, not an ONNX file
ENGINE_SUFFIXES = (".engine", ".plan")
#: the input side used when neither the model nor the configuration states one
FALLBACK_INPUT_SIZE = 640


def is_engine_file(path: Any) -> bool:
    return Path(str(path)).suffix.lower() in ENGINE_SUFFIXES


def metadata_bool(metadata: Mapping[str, str], key: str) -> Optional[bool]:
    """A "true"/"false" metadata entry; None when absent or anything else."""
    text = metadata.get(key)
    if text is None:
        return None
    return {"true": True, "false": False}.get(str(text).strip().lower())


def metadata_hw(metadata: Mapping[str, str]) -> Optional[Tuple[int, int]]:
    """``imgsz`` as written by the Ultralytics exporter: "[640, 640]" or "640"."""
    text = str(metadata.get("imgsz", "")).strip("[]() ")
    try:
        values = [int(v) for v in text.replace(",", " ").split()]
    except ValueError:
        return None
    if len(values) == 1 and values[0] > 0:
        return values[0], values[0]
    return (values[0], values[1]) if len(values) == 2 and min(values) > 0 else None


def resolve_input_hw(static_hw: Optional[Tuple[int, int]], configured: Optional[int], default_size: Optional[int],
                     metadata: Mapping[str, str], model_path: str) -> Tuple[int, int]:
    """The model input (height, width).

    The model's own fixed size wins (a different configured size is an error); then the size the
    user wrote (``configured``, None when the key was left out: the model decides);
    then the exporter's ``imgsz`` metadata; then ``default_size`` or 640.
    """
    if static_hw:
        if configured is not None and (configured, configured) != tuple(static_hw):
            height, width = static_hw
            raise DetectorError(f"model {model_path} has a fixed {width}x{height} input but model.input_size is "
                                f"{configured}; set input_size to {height if height == width else 'null'} "
                                "or re-export the model")
        return int(static_hw[0]), int(static_hw[1])
    if configured is not None:
        return configured, configured
    from_metadata = metadata_hw(metadata)
    if from_metadata:
        return from_metadata
    size = default_size or FALLBACK_INPUT_SIZE
    log.info("model %s does not state its input size; using %d", model_path, size)
    return size, size
