"""The typed result of running a detector on one frame."""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Iterator, List, Optional, Sequence

import numpy as np


def _make_label_lookup(labels: Sequence[str]) -> np.ndarray:
    """The labels as an object array, one more (empty) for class ids outside them."""
    names = np.empty(len(labels) + 1, dtype=object)
    names[:-1], names[-1] = labels, ""
    names.flags.writeable = False  # shared by every frame of the model once cached
    return names


# A model's labels are one tuple shared by every frame's detections: its lookup array is made
# once, not twice a frame (the analysis and the detections message each ask for the labels).
_label_lookup = functools.lru_cache(maxsize=16)(_make_label_lookup)


@dataclass(frozen=True)
class Detections:
    """Boxes found in one frame, in that frame's pixel coordinates.

    ``xyxy`` is ``(N, 4)`` float32 ``[x1, y1, x2, y2]``; ``confidence`` is ``(N,)`` float32;
    ``class_id`` is ``(N,)`` int32. Shapes are checked so a decoding bug fails loudly here rather
    than as a malformed MQTT payload later.

    ``track_id`` is ``None`` until a tracker has seen the frame, then ``(N,)`` int64 aligned with
    the boxes; ``-1`` marks a box that belongs to no track (yet).
    """

    xyxy: np.ndarray
    confidence: np.ndarray
    class_id: np.ndarray
    labels: Sequence[str] = field(default=(), compare=False, repr=False)
    track_id: Optional[np.ndarray] = field(default=None, compare=False)

    def __post_init__(self) -> None:
        xyxy = np.asarray(self.xyxy, dtype=np.float32).reshape(-1, 4) if np.size(self.xyxy) == 0 else np.asarray(self.xyxy, dtype=np.float32)
        conf = np.asarray(self.confidence, dtype=np.float32).reshape(-1)
        cls = np.asarray(self.class_id, dtype=np.int32).reshape(-1)
        if xyxy.ndim != 2 or xyxy.shape[1] != 4:
            raise ValueError(f"xyxy must have shape (N, 4), got {xyxy.shape}")
        n = xyxy.shape[0]
        if conf.shape != (n,) or cls.shape != (n,):
            raise ValueError(
                f"confidence {conf.shape} and class_id {cls.shape} must both have shape ({n},)"
            )
        object.__setattr__(self, "xyxy", xyxy)
        object.__setattr__(self, "confidence", conf)
        object.__setattr__(self, "class_id", cls)
        if self.track_id is not None:
            tracks = np.asarray(self.track_id, dtype=np.int64).reshape(-1)
            if tracks.shape != (n,):
                raise ValueError(f"track_id {tracks.shape} must have shape ({n},)")
            object.__setattr__(self, "track_id", tracks)

    @classmethod
    def empty(cls, labels: Sequence[str] = ()) -> "Detections":
        return cls(np.zeros((0, 4), np.float32), np.zeros((0,), np.float32), np.zeros((0,), np.int32), labels)

    def __len__(self) -> int:
        return int(self.xyxy.shape[0])

    def __getitem__(self, index) -> "Detections":
        """Select rows with a boolean mask, an index array or a slice."""
        if isinstance(index, (int, np.integer)):
            index = [int(index)]
        tracks = None if self.track_id is None else self.track_id[index]
        return Detections(self.xyxy[index], self.confidence[index], self.class_id[index], self.labels, tracks)

    def with_track_ids(self, track_id: np.ndarray) -> "Detections":
        """The same boxes with the ids a tracker gave them."""
        return Detections(self.xyxy, self.confidence, self.class_id, self.labels, track_id)

    def label_of(self, class_id: int) -> str:
        if 0 <= class_id < len(self.labels):
            return str(self.labels[class_id])
        return str(class_id)

    def label_array(self) -> np.ndarray:
        """``(N,)`` object array of each box's label, as :meth:`label_of` gives it; one lookup for
        the frame (a class id outside the label list is named by its number)."""
        labels = self.labels
        names = _label_lookup(labels if isinstance(labels, tuple) else tuple(labels))
        known = (self.class_id >= 0) & (self.class_id < len(labels))
        out = names[np.where(known, self.class_id, len(labels))]
        if not known.all():
            out[~known] = [str(c) for c in self.class_id[~known].tolist()]
        return out

    def to_dicts(self, ndigits: int = 1) -> List[dict]:
        """The ``detections`` list of the MQTT message (docs/mqtt.md): class_id, label, confidence, bbox (and track_id once tracked)."""
        # Python's round on the floats, not np.round: the figures stay what they were (np.round
        # scales and rounds, and can end a half-way case the other way).
        out = [{"class_id": cls, "label": label, "confidence": round(conf, 4),
                "bbox": [round(box[0], ndigits), round(box[1], ndigits), round(box[2], ndigits), round(box[3], ndigits)]}
               for cls, label, conf, box in zip(self.class_id.tolist(), self.label_array().tolist(),
                                                self.confidence.tolist(), self.xyxy.tolist())]
        if self.track_id is not None:
            for item, track_id in zip(out, self.track_id.tolist()):
                item["track_id"] = track_id
        return out

    def __iter__(self) -> Iterator[dict]:
        return iter(self.to_dicts())

    def count(self, label: str, min_confidence: Optional[float] = None) -> int:
        n = 0
        for cls, conf in zip(self.class_id.tolist(), self.confidence.tolist()):
            if self.label_of(int(cls)) == label and (min_confidence is None or conf >= min_confidence):
                n += 1
        return n
