"""Object detection: letterboxing, YOLO output decoding, NMS, labels and runtime backends.

The rest of the application needs little more than ``create_detector(model_config)`` and the
``Detector`` methods (``detect`` or ``preprocess``/``infer``/``postprocess``).
"""
from edge_app.detect.base import Detector, DetectorError, LetterboxMeta, PreparedBatch
from edge_app.detect.yolo_outputs import (
    DecoderTuning,
    LayoutError,
    LayoutInfo,
    OutputLayout,
    YoloDecoder,
    decode_outputs,
    detect_layout,
)
from edge_app.detect.factory import available_backends, choose_backend, create_detector
from edge_app.detect.image_io import ImageReadError, load_image
from edge_app.detect.labels import class_ids_for, coco80_labels, resolve_labels
from edge_app.detect.letterbox import Letterboxer, letterbox, letterbox_meta, model_to_source, source_to_model
from edge_app.detect.nms import batched_nms, nms
from edge_app.detect.onnxruntime_backend import OnnxRuntimeDetector

__all__ = [
    "Detector",
    "DetectorError",
    "LetterboxMeta",
    "PreparedBatch",
    "DecoderTuning",
    "LayoutError",
    "LayoutInfo",
    "OutputLayout",
    "YoloDecoder",
    "decode_outputs",
    "detect_layout",
    "available_backends",
    "choose_backend",
    "create_detector",
    "ImageReadError",
    "load_image",
    "class_ids_for",
    "coco80_labels",
    "resolve_labels",
    "Letterboxer",
    "letterbox",
    "letterbox_meta",
    "model_to_source",
    "source_to_model",
    "batched_nms",
    "nms",
    "OnnxRuntimeDetector",
]
