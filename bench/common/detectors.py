"""Loading the benchmark's detectors the way the appliance does (create_detector + ModelConfig)."""
from __future__ import annotations

from pathlib import Path

from edge_app.config import ModelConfig
from edge_app.detect import Detector, create_detector


def model_config(path: Path, max_batch: int, batch_timeout_ms: float = 5.0) -> ModelConfig:
    return ModelConfig(path=str(path), backend="onnxruntime", max_batch=max_batch, batch_timeout_ms=batch_timeout_ms)


def load_detector(path: Path, max_batch: int) -> Detector:
    detector = create_detector(model_config(path, max_batch))
    if detector.max_batch < max_batch:
        raise ValueError(f"{path} takes batches of at most {detector.max_batch}, not {max_batch}")
    return detector
