"""Reading what an appliance published about the walking scene (``tests.support.media.WalkingClip``).

The RTSP test server loops the clip, so the people cross the frame again and again, and the
appliance may have joined in the middle of a crossing. A :class:`Pass` is one crossing as the
detections show it: detection messages of one camera with no silence longer than ``gap_s``
between them (the empty canvas between crossings publishes nothing). A pass is *complete* when
its first frame has every object still in the left half, so every tripwire crossing of that walk
was seen.
"""
from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from testkit.broker import ReceivedMessage


@dataclass
class Pass:
    frames: List[dict] = field(default_factory=list)   # detection payloads, in time order

    @property
    def start_ts(self) -> float:
        return self.frames[0]["ts"]

    @property
    def end_ts(self) -> float:
        return self.frames[-1]["ts"]

    def starts_left_of(self, x_px: float) -> bool:
        return all(_centre_x(d) < x_px for d in self.frames[0]["detections"])

    def track_ids(self) -> Dict[int, str]:
        """track id -> label, for every tracked detection of the pass."""
        ids: Dict[int, str] = {}
        for frame in self.frames:
            for det in frame["detections"]:
                if isinstance(det.get("track_id"), int) and det["track_id"] >= 0:
                    ids.setdefault(det["track_id"], det["label"])
        return ids

    def path_of(self, track_id: int) -> List[float]:
        """The box centre x of one track, frame after frame."""
        return [_centre_x(d) for f in self.frames for d in f["detections"] if d.get("track_id") == track_id]


def _centre_x(detection: dict) -> float:
    x1, _, x2, _ = detection["bbox"]
    return (x1 + x2) / 2


def split_passes(detection_payloads: Sequence[dict], gap_s: float) -> List[Pass]:
    passes: List[Pass] = []
    for payload in sorted(detection_payloads, key=lambda p: p["ts"]):
        if not payload["detections"]:
            continue
        if not passes or payload["ts"] - passes[-1].end_ts > gap_s:
            passes.append(Pass())
        passes[-1].frames.append(payload)
    return passes


@dataclass
class EventHistory:
    """The ``R/events`` messages of one event, in arrival order."""

    id: str
    messages: List[dict] = field(default_factory=list)

    def of_type(self, kind: str) -> List[dict]:
        return [m for m in self.messages if m["type"] == kind]

    @property
    def last(self) -> dict:
        return self.messages[-1]["after"]


def event_histories(event_messages: Sequence[ReceivedMessage]) -> Dict[str, EventHistory]:
    histories: Dict[str, EventHistory] = {}
    for message in event_messages:
        payload = message.json()
        event_id = payload["after"]["id"]
        histories.setdefault(event_id, EventHistory(event_id)).messages.append(payload)
    return histories


def describe(histories: Dict[str, EventHistory]) -> str:
    """One line per event for failure messages: id, label, track and its message types."""
    return "; ".join(f"{h.id} {h.last['label']} track {h.last['track_id']}: {[m['type'] for m in h.messages]}"
                     for h in histories.values())


def detect_objects(model_path: Path, images: Sequence[Path], min_confidence: float) -> List[Counter]:
    """Objects per label that ``edge-app detect`` finds in each image with at least ``min_confidence``."""
    out = subprocess.run([sys.executable, "-m", "edge_app", "detect", "--model", str(model_path), *map(str, images)],
                         check=True, capture_output=True, text=True, timeout=120).stdout
    found = []
    for line in out.splitlines():
        detections = json.loads(line)["detections"]
        found.append(Counter(d["label"] for d in detections if d["confidence"] >= min_confidence))
    return found


def jpeg_size(data: bytes) -> Optional[tuple]:
    """(width, height) of a JPEG that OpenCV decodes, else None."""
    import cv2
    import numpy as np

    if not data.startswith(b"\xff\xd8"):
        return None
    image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    return None if image is None else (image.shape[1], image.shape[0])
