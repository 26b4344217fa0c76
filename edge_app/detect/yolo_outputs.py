"""Decoding raw YOLO outputs into Detections in source pixels, independent of any runtime.

Supported output layouts (N = batch, C = classes, A = anchors/grid cells, K = kept detections):

* ``yolo_channels_first``  ``N x (4+C) x A`` - YOLOv8/v11 exports: cx, cy, w, h, class scores
* ``yolo_channels_last``   ``N x A x (4+C)`` - the same, transposed
* ``yolo_objectness``      ``N x A x (5+C)`` - YOLOv5/v7: cx, cy, w, h, objectness, class scores
* ``end_to_end``           ``N x K x 6``     - NMS-free heads: x1, y1, x2, y2, score, class
* ``efficient_nms``        TensorRT EfficientNMS: num_dets ``N x 1``, boxes ``N x K x 4`` (xyxy),
  scores ``N x K``, classes ``N x K``

Boxes are in model-input pixels; ``LetterboxMeta`` maps them back to each source frame.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from enum import Enum
from typing import List, Optional, Sequence, Tuple

import numpy as np

from edge_app.detect.batch import LetterboxMeta
from edge_app.detect.labels import class_ids_for
from edge_app.detect.letterbox import boxes_to_source
from edge_app.detect.nms import DEFAULT_MAX_DET, batched_nms
from edge_app.detect.detections import Detections

log = logging.getLogger(__name__)

#: Strides of the usual P3-P5 heads and of the P6 variants (e.g. yolov5s6).
HEAD_STRIDES = ((8, 16, 32), (8, 16, 32, 64))
#: End-to-end heads keep a few hundred boxes; raw heads have thousands of anchors.
MAX_END_TO_END_DETS = 1000
#: Candidates fed to NMS at most, best first; bounds the worst case on a very low threshold.
DEFAULT_MAX_CANDIDATES = 30000


class OutputLayout(str, Enum):
    YOLO_CHANNELS_FIRST = "yolo_channels_first"
    YOLO_CHANNELS_LAST = "yolo_channels_last"
    YOLO_OBJECTNESS = "yolo_objectness"
    END_TO_END = "end_to_end"
    EFFICIENT_NMS = "efficient_nms"


class LayoutError(ValueError):
    """The model outputs match no supported layout."""


@dataclass(frozen=True)
class LayoutInfo:
    """A detected layout; ``outputs`` are the indices of the outputs it reads, in role order."""

    layout: OutputLayout
    num_classes: Optional[int] = None  # None where the outputs do not tell (NMS-done layouts)
    outputs: Tuple[int, ...] = (0,)


def _dims(shape: Sequence) -> Tuple[Optional[int], ...]:
    """A shape with symbolic or unknown dimensions as None."""
    return tuple(int(d) if isinstance(d, (int, np.integer)) and d >= 0 else None for d in shape)


def anchor_counts(input_hw: Tuple[int, int]) -> Tuple[set, set]:
    """Possible A for an input size: (anchor-free heads, anchor-based heads with 3 anchors)."""
    height, width = input_hw
    free = {sum(math.ceil(height / s) * math.ceil(width / s) for s in strides) for strides in HEAD_STRIDES}
    return free, {3 * count for count in free}


def _efficient_nms_roles(shapes, names, dtypes) -> Optional[Tuple[int, int, int, int]]:
    """Indices of (num_dets, boxes, scores, classes) if the outputs look like EfficientNMS."""
    if len(shapes) != 4:
        return None
    if names and len(names) == 4:
        keys = ("num", "box", "score", "class")
        found = [next((i for i, n in enumerate(names) if key in str(n).lower()), None) for key in keys]
        if None not in found and len(set(found)) == 4:
            return tuple(found)  # type: ignore[return-value]
    boxes = [i for i, s in enumerate(shapes) if len(s) == 3 and s[2] == 4]
    if len(boxes) != 1:
        return None
    rest = [i for i in range(4) if i != boxes[0]]
    counts = [i for i in rest if len(shapes[i]) == 1 or (len(shapes[i]) == 2 and shapes[i][1] == 1)]
    if not counts:
        return None
    # With K == 1 every rest output is N x 1; the plugin's own order (num first) then decides.
    num = counts[0]
    pair = [i for i in rest if i != num and len(shapes[i]) == 2]
    if len(pair) != 2:
        return None
    if dtypes and len(dtypes) == 4:
        ints = [i for i in pair if np.issubdtype(np.dtype(dtypes[i]), np.integer)]
        if len(ints) == 1:
            return num, boxes[0], next(i for i in pair if i != ints[0]), ints[0]
    return num, boxes[0], pair[0], pair[1]


def detect_layout(
    shapes: Sequence[Sequence],
    *,
    num_classes: Optional[int] = None,
    input_hw: Optional[Tuple[int, int]] = None,
    end2end: Optional[bool] = None,
    names: Optional[Sequence[str]] = None,
    dtypes: Optional[Sequence] = None,
) -> LayoutInfo:
    """Work out the output layout from output shapes and what is known about the model.

    Decision order, most reliable first: the EfficientNMS four-output pattern; the model's own
    ``end2end`` metadata; the anchor count implied by the input size (it separates channels-first
    from channels-last and anchor-free from anchor-based heads even when 4+C is close to A);
    a small K with 6 values per row (end-to-end); the number of classes; finally the shape alone.
    Raises LayoutError when nothing fits or a needed dimension is unknown.
    """
    dims = [_dims(s) for s in shapes]
    roles = _efficient_nms_roles(dims, names, dtypes)
    if roles is not None:
        return LayoutInfo(OutputLayout.EFFICIENT_NMS, None, roles)
    index = next((i for i, s in enumerate(dims) if len(s) == 3), None)
    if index is None:
        raise LayoutError(f"no N x rows x columns output among shapes {[list(s) for s in shapes]}")
    _, rows, cols = dims[index]
    if rows is None or cols is None:
        raise LayoutError(f"output {index} has unknown dimensions {list(shapes[index])}")

    def info(layout: OutputLayout, classes: Optional[int]) -> LayoutInfo:
        if classes is not None and classes < 1:
            raise LayoutError(f"output shape {list(shapes[index])} leaves no room for class scores")
        return LayoutInfo(layout, classes, (index,))

    if end2end:
        if cols < 6:
            raise LayoutError(f"end-to-end output {list(shapes[index])} needs 6 values per detection")
        return info(OutputLayout.END_TO_END, None)
    if input_hw:
        free, based = anchor_counts(input_hw)
        if cols in free and rows > 4:
            return info(OutputLayout.YOLO_CHANNELS_FIRST, rows - 4)
        if rows in free and cols > 4:
            return info(OutputLayout.YOLO_CHANNELS_LAST, cols - 4)
        if rows in based and cols > 5:
            return info(OutputLayout.YOLO_OBJECTNESS, cols - 5)
    if cols == 6 and rows <= MAX_END_TO_END_DETS and end2end is None:
        return info(OutputLayout.END_TO_END, None)
    if num_classes:
        if rows == 4 + num_classes and cols > rows:
            return info(OutputLayout.YOLO_CHANNELS_FIRST, num_classes)
        if cols == 5 + num_classes and rows > cols:
            return info(OutputLayout.YOLO_OBJECTNESS, num_classes)
        if cols == 4 + num_classes and rows > cols:
            return info(OutputLayout.YOLO_CHANNELS_LAST, num_classes)
    if rows < cols:
        return info(OutputLayout.YOLO_CHANNELS_FIRST, rows - 4)
    log.warning("output %s could be YOLOv8 (4+C) or YOLOv5 (5+C); assuming YOLOv8", list(shapes[index]))
    return info(OutputLayout.YOLO_CHANNELS_LAST, cols - 4)


Candidates = Tuple[np.ndarray, np.ndarray, np.ndarray]  # xyxy (M, 4), scores (M,), class ids (M,)


def cxcywh_to_xyxy(cxcywh: np.ndarray) -> np.ndarray:
    """Center/size boxes ``(M, 4)`` as corner boxes, float32."""
    boxes = np.asarray(cxcywh, dtype=np.float32).reshape(-1, 4)
    half = boxes[:, 2:] / 2
    return np.concatenate([boxes[:, :2] - half, boxes[:, :2] + half], axis=1)


def candidates_channels_first(pred: np.ndarray, num_classes: int, conf: float) -> Candidates:
    """Rows ``(4+C, A)``; the max/argmax run along contiguous rows, no transpose copy needed."""
    scores = pred[4:4 + num_classes]
    best = scores.max(axis=0)
    idx = np.flatnonzero(best > conf)
    class_ids = scores[:, idx].argmax(axis=0)
    return cxcywh_to_xyxy(pred[:4, idx].T), best[idx].astype(np.float32), class_ids


def candidates_channels_last(pred: np.ndarray, num_classes: int, conf: float) -> Candidates:
    """Rows ``(A, 4+C)``."""
    scores = pred[:, 4:4 + num_classes]
    best = scores.max(axis=1)
    idx = np.flatnonzero(best > conf)
    class_ids = scores[idx].argmax(axis=1)
    return cxcywh_to_xyxy(pred[idx, :4]), best[idx].astype(np.float32), class_ids


def candidates_objectness(pred: np.ndarray, num_classes: int, conf: float) -> Candidates:
    """Rows ``(A, 5+C)``; score = objectness * class score."""
    objectness = pred[:, 4]
    # Class scores are at most 1, so objectness alone rules most anchors out cheaply.
    idx = np.flatnonzero(objectness > conf)
    scores = pred[idx, 5:5 + num_classes].astype(np.float32) * objectness[idx, None].astype(np.float32)
    class_ids = scores.argmax(axis=1) if len(idx) else np.zeros((0,), np.int64)
    best = scores[np.arange(len(idx)), class_ids] if len(idx) else np.zeros((0,), np.float32)
    keep = best > conf
    return cxcywh_to_xyxy(pred[idx[keep], :4]), best[keep], class_ids[keep]


def candidates_end_to_end(pred: np.ndarray, conf: float) -> Candidates:
    """Rows ``(K, 6)``: x1, y1, x2, y2, score, class."""
    idx = np.flatnonzero(pred[:, 4] > conf)
    rows = pred[idx].astype(np.float32)
    return rows[:, :4], rows[:, 4], np.rint(rows[:, 5]).astype(np.int64)


def candidates_efficient_nms(num_dets, boxes: np.ndarray, scores: np.ndarray, classes: np.ndarray,
                             conf: float) -> Candidates:
    """One image of EfficientNMS output; only the first ``num_dets`` rows are valid."""
    count = int(np.asarray(num_dets).reshape(-1)[0]) if np.size(num_dets) else 0
    count = max(0, min(count, boxes.shape[0]))
    valid_scores = scores[:count].astype(np.float32)
    idx = np.flatnonzero(valid_scores > conf)
    return (boxes[:count][idx].astype(np.float32), valid_scores[idx],
            np.rint(classes[:count][idx]).astype(np.int64))


@dataclass(frozen=True)
class DecoderTuning:
    """What may change on a loaded model without reloading it."""

    conf_threshold: float
    iou_threshold: float
    classes: Tuple[str, ...]
    #: class ids to keep, resolved from ``classes``; None keeps every class
    keep_class_ids: Optional[np.ndarray]


class YoloDecoder:
    """Raw outputs of a batch -> one Detections per frame, in source pixels.

    The layout is fixed at construction when known, else detected from the first outputs seen
    and kept. Confidence and class filters run before NMS (class-aware, ``max_det`` per image).
    ``classes`` (labels to keep) or ``keep_class_ids`` select classes; empty keeps all.
    Thresholds and ``classes`` may be changed between batches.
    """

    def __init__(
        self,
        labels: Sequence[str] = (),
        *,
        conf_threshold: float = 0.25,
        iou_threshold: float = 0.45,
        max_det: int = DEFAULT_MAX_DET,
        keep_class_ids: Optional[np.ndarray] = None,
        classes: Sequence[str] = (),
        layout: Optional[LayoutInfo] = None,
        num_classes: Optional[int] = None,
        input_hw: Optional[Tuple[int, int]] = None,
        end2end: Optional[bool] = None,
        output_names: Optional[Sequence[str]] = None,
        max_candidates: int = DEFAULT_MAX_CANDIDATES,
    ) -> None:
        self.labels = tuple(labels)
        self.max_det = int(max_det)
        ids = None if keep_class_ids is None else np.asarray(keep_class_ids, dtype=np.int64)
        self._tuning = DecoderTuning(float(conf_threshold), float(iou_threshold), (), ids)
        if classes:
            self.retune(classes=classes)
        self.layout = layout
        self.max_candidates = int(max_candidates)
        self._hints = dict(num_classes=num_classes, input_hw=input_hw, end2end=end2end, names=output_names)

    @property
    def tuning(self) -> "DecoderTuning":
        return self._tuning

    @property
    def conf_threshold(self) -> float:
        return self._tuning.conf_threshold

    @property
    def iou_threshold(self) -> float:
        return self._tuning.iou_threshold

    @property
    def classes(self) -> Tuple[str, ...]:
        return self._tuning.classes

    def retune(self, *, conf_threshold: Optional[float] = None, iou_threshold: Optional[float] = None,
               classes: Optional[Sequence[str]] = None) -> "DecoderTuning":
        """Change thresholds and the kept classes from the next batch on; all or nothing.

        Class names are resolved first, so an unknown label raises DetectorError and leaves the
        decoder as it was. The new settings replace the old in one assignment: a batch being
        decoded on another thread sees either the old or the new settings, never a mix.
        """
        old = self._tuning
        if classes is None:
            names, ids = old.classes, old.keep_class_ids
        else:
            names, ids = tuple(classes), class_ids_for(classes, self.labels)
        self._tuning = DecoderTuning(
            conf_threshold=old.conf_threshold if conf_threshold is None else float(conf_threshold),
            iou_threshold=old.iou_threshold if iou_threshold is None else float(iou_threshold),
            classes=names,
            keep_class_ids=ids,
        )
        return self._tuning

    def layout_for(self, outputs: Sequence[np.ndarray]) -> LayoutInfo:
        if self.layout is None:
            self.layout = detect_layout([o.shape for o in outputs], dtypes=[o.dtype for o in outputs], **self._hints)
            log.info("model output layout: %s (%s classes)", self.layout.layout.value, self.layout.num_classes or "?")
        return self.layout

    def decode(self, outputs: Sequence[np.ndarray], metas: Sequence[LetterboxMeta]) -> List[Detections]:
        """Detections for each of ``metas``; outputs may hold extra (padding) images, ignored."""
        info = self.layout_for(outputs)
        used = [np.asarray(outputs[i]) for i in info.outputs]
        if any(o.shape[0] < len(metas) for o in used):
            raise ValueError(f"outputs hold {used[0].shape[0]} images but {len(metas)} frames were sent")
        tuning = self._tuning
        return [self._finish(tuning, *self._candidates(tuning.conf_threshold, info, used, image), meta)
                for image, meta in enumerate(metas)]

    @staticmethod
    def _candidates(conf: float, info: LayoutInfo, used: List[np.ndarray],
                    image: int) -> Tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
        layout = info.layout
        if layout is OutputLayout.YOLO_CHANNELS_FIRST:
            return (*candidates_channels_first(used[0][image], info.num_classes, conf), True)
        if layout is OutputLayout.YOLO_CHANNELS_LAST:
            return (*candidates_channels_last(used[0][image], info.num_classes, conf), True)
        if layout is OutputLayout.YOLO_OBJECTNESS:
            return (*candidates_objectness(used[0][image], info.num_classes, conf), True)
        if layout is OutputLayout.END_TO_END:
            return (*candidates_end_to_end(used[0][image], conf), False)
        num_dets, boxes, scores, classes = (o[image] for o in used)
        return (*candidates_efficient_nms(num_dets, boxes, scores, classes, conf), False)

    def _finish(self, tuning: "DecoderTuning", xyxy: np.ndarray, scores: np.ndarray, class_ids: np.ndarray,
                needs_nms: bool, meta: LetterboxMeta) -> Detections:
        if tuning.keep_class_ids is not None and len(class_ids):
            mask = np.isin(class_ids, tuning.keep_class_ids)
            xyxy, scores, class_ids = xyxy[mask], scores[mask], class_ids[mask]
        if len(scores) > self.max_candidates:
            top = np.argpartition(-scores, self.max_candidates - 1)[:self.max_candidates]
            xyxy, scores, class_ids = xyxy[top], scores[top], class_ids[top]
        if needs_nms:
            keep = batched_nms(xyxy, scores, class_ids, tuning.iou_threshold, self.max_det)
        else:
            keep = np.argsort(-scores, kind="stable")[:self.max_det]
        return self.to_detections(xyxy[keep], scores[keep], class_ids[keep], meta)

    def to_detections(self, xyxy: np.ndarray, scores: np.ndarray, class_ids: np.ndarray,
                      meta: LetterboxMeta) -> Detections:
        """Kept boxes in model pixels (after NMS, here or on the GPU) as one frame's Detections."""
        boxes = boxes_to_source(xyxy, meta)
        # A box lying wholly in the padding clips to zero size; it describes nothing in the frame.
        visible = (boxes[:, 2] > boxes[:, 0]) & (boxes[:, 3] > boxes[:, 1])
        return Detections(boxes[visible], scores[visible], class_ids[visible], self.labels)


def decode_outputs(
    outputs: Sequence[np.ndarray],
    metas: Sequence[LetterboxMeta],
    num_classes: Optional[int] = None,
    conf_threshold: float = 0.25,
    iou_threshold: float = 0.45,
    *,
    labels: Sequence[str] = (),
    max_det: int = DEFAULT_MAX_DET,
    keep_class_ids: Optional[np.ndarray] = None,
    input_hw: Optional[Tuple[int, int]] = None,
    end2end: Optional[bool] = None,
    output_names: Optional[Sequence[str]] = None,
) -> List[Detections]:
    """One-shot decoding; backends keep a YoloDecoder instead so the layout is detected once."""
    decoder = YoloDecoder(
        labels, conf_threshold=conf_threshold, iou_threshold=iou_threshold, max_det=max_det,
        keep_class_ids=keep_class_ids, num_classes=num_classes, input_hw=input_hw, end2end=end2end,
        output_names=output_names,
    )
    return decoder.decode(outputs, metas)
