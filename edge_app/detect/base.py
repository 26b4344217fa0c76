"""The detector plugin interface: a batch of BGR frames in, one Detections per frame out.

The three stages are separate methods so a pipeline can overlap them (preprocess batch k+1
while batch k is in the model) and so decoding is tested without running a model.
Backends register themselves by subclassing with a ``backend_name``. Every backend decodes
with a ``YoloDecoder`` held here, so labels, output layout and live retuning behave the same
whatever runs the model.
"""
from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from typing import Any, ClassVar, Dict, List, Optional, Sequence, Tuple, Type

import numpy as np

# DetectorError, LetterboxMeta and PreparedBatch live below decode, labels and letterbox, which
# need them; they are part of the plugin interface, so backends keep importing them from here.
from edge_app.detect.batch import LetterboxMeta, PreparedBatch
from edge_app.detect.yolo_outputs import DecoderTuning, YoloDecoder
from edge_app.detect.errors import DetectorError
from edge_app.detect.detections import Detections

__all__ = ["Detector", "DetectorError", "LetterboxMeta", "PreparedBatch"]

log = logging.getLogger(__name__)


class Detector(ABC):
    """One loaded model. Not thread-safe: one pipeline thread drives it."""

    backend_name: ClassVar[str] = ""
    _backends: ClassVar[Dict[str, Type["Detector"]]] = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.backend_name:
            Detector._backends[cls.backend_name] = cls

    #: the model file loaded; for a fleet model, its staged copy or the local path it fell back to
    #: (status tells them apart by it); None where a backend does not say
    model_path: Optional[str] = None
    #: (height, width) of the model input
    input_hw: tuple = (640, 640)
    max_batch: int = 1
    labels: List[str]
    decoder: "YoloDecoder"
    #: batches that may be between ``preprocess`` and the end of ``postprocess`` at once: the
    #: backend's buffers are reused after that many further batches. The pipeline obeys it.
    max_batches_in_flight: int = 3
    #: True when inference runs on the host CPU: the pipeline then runs its stages one after
    #: another, since overlapping them only steals cores from the model.
    runs_on_host_cpu: bool = True

    @classmethod
    def backends(cls) -> Dict[str, Type["Detector"]]:
        return dict(cls._backends)

    @property
    def failure(self) -> Optional[str]:
        """Why this model can run no further batch until it is loaded again (its engine process
        died or hung), or None while it works. The appliance then loads it again."""
        return None

    @classmethod
    def is_available(cls) -> bool:
        """Whether this backend's runtime is importable on this machine."""
        return True

    @abstractmethod
    def preprocess(self, frames: Sequence[np.ndarray]) -> PreparedBatch:
        ...

    @abstractmethod
    def infer(self, batch: PreparedBatch) -> Any:
        """Run the model on a prepared batch of at most max_batch; what ``postprocess`` takes:
        the raw outputs in model order, or a backend's own form (the TensorRT backend's boxes
        already decoded on the GPU). The pipeline only passes it on."""

    def postprocess(self, outputs: Any, batch: PreparedBatch) -> List[Detections]:
        return self.decoder.decode(outputs, batch.metas)

    # -- live settings: read and written through the decoder, the one place they live ----------
    @property
    def conf_threshold(self) -> float:
        return self.decoder.conf_threshold

    @property
    def iou_threshold(self) -> float:
        return self.decoder.iou_threshold

    @property
    def classes(self) -> Tuple[str, ...]:
        return self.decoder.classes

    def retune(self, *, conf_threshold: Optional[float] = None, iou_threshold: Optional[float] = None,
               classes: Optional[Sequence[str]] = None) -> "DecoderTuning":
        """New thresholds or class filter from the next batch on, without reloading the model.

        All or nothing: an unknown class name raises DetectorError and changes nothing.
        """
        return self.decoder.retune(conf_threshold=conf_threshold, iou_threshold=iou_threshold, classes=classes)

    def detect(self, frames: Sequence[np.ndarray]) -> List[Detections]:
        if not frames:
            return []
        results: List[Detections] = []
        for start in range(0, len(frames), self.max_batch):
            batch = self.preprocess(frames[start:start + self.max_batch])
            results.extend(self.postprocess(self.infer(batch), batch))
        return results

    def describe(self) -> dict:
        """What /api/v1/status shows about the loaded model."""
        layout = self.decoder.layout
        return {"backend": self.backend_name, "input_size": list(self.input_hw), "max_batch": self.max_batch,
                "num_labels": len(self.labels), "output_layout": layout.layout.value if layout else None}

    def close(self) -> None:
        pass
