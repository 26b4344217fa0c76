"""The detector plugin interface: a batch of BGR frames in, one Detections per frame out.

The three stages are separate methods so a pipeline can overlap them (preprocess batch k+1
while batch k is in the model) and so decoding is tested without running a model.
Backends register themselves by subclassing with a ``backend_name``.
"""
from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar, Dict, List, Sequence, Type

import numpy as np

from edge_app.detections import Detections

log = logging.getLogger(__name__)


class DetectorError(RuntimeError):
    """A model that cannot be loaded or run; the message is meant for the user."""


@dataclass(frozen=True)
class LetterboxMeta:
    """How one source frame was placed into the model input (see detect.letterbox)."""

    src_hw: tuple  # (height, width) of the source frame
    scale: float  # model pixels per source pixel
    pad_xy: tuple  # (left, top) padding in model pixels


@dataclass
class PreparedBatch:
    tensor: np.ndarray  # (N, 3, H, W) float32, RGB, 0..1
    metas: List[LetterboxMeta]


class Detector(ABC):
    """One loaded model. Not thread-safe: one pipeline thread drives it."""

    backend_name: ClassVar[str] = ""
    _backends: ClassVar[Dict[str, Type["Detector"]]] = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.backend_name:
            Detector._backends[cls.backend_name] = cls

    #: (height, width) of the model input
    input_hw: tuple = (640, 640)
    max_batch: int = 1
    labels: List[str]
    conf_threshold: float = 0.25
    iou_threshold: float = 0.45
    classes: Sequence[str] = ()
    #: True when inference runs on the host CPU: the pipeline then runs its stages one after
    #: another, since overlapping them only steals cores from the model.
    runs_on_host_cpu: bool = True

    @classmethod
    def backends(cls) -> Dict[str, Type["Detector"]]:
        return dict(cls._backends)

    @classmethod
    def is_available(cls) -> bool:
        """Whether this backend's runtime is importable on this machine."""
        return True

    @abstractmethod
    def preprocess(self, frames: Sequence[np.ndarray]) -> PreparedBatch:
        ...

    @abstractmethod
    def infer(self, tensor: np.ndarray) -> List[np.ndarray]:
        """Run the model on an (N, 3, H, W) tensor, N <= max_batch; raw outputs in model order."""

    @abstractmethod
    def postprocess(self, outputs: List[np.ndarray], batch: PreparedBatch) -> List[Detections]:
        ...

    def detect(self, frames: Sequence[np.ndarray]) -> List[Detections]:
        if not frames:
            return []
        results: List[Detections] = []
        for start in range(0, len(frames), self.max_batch):
            batch = self.preprocess(frames[start:start + self.max_batch])
            results.extend(self.postprocess(self.infer(batch.tensor), batch))
        return results

    def describe(self) -> dict:
        """What /api/v1/status shows about the loaded model."""
        return {"backend": self.backend_name, "input_size": list(self.input_hw), "max_batch": self.max_batch}

    def close(self) -> None:
        pass
