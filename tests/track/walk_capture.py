"""Record what the real YOLOv8n finds in every frame of the walking clip, for the tracker's tests.

The walking clip of the end-to-end tests (``tests.support.media.make_walking_clip``, the noisy
variant of ``tests/e2e/test_motion_gating.py``) is made, decoded frame by frame with OpenCV and
run through the ONNX Runtime detector with the appliance's default thresholds. Each detection is
written with the frame's index and time in the clip and the person it shows: the picture slides
as a whole, so a detection moved back by the frame's slide lands on one of the people of the
first walking frame (the nearest centre there is its ground truth).

    .venv/bin/python -m tests.track.walk_capture [OUT]

writes ``tests/track/data/walk_yolov8n.csv`` unless ``OUT`` is given.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import List

import numpy as np

from edge_app.config.schema_model import ModelConfig
from edge_app.detect.factory import create_detector
from tests.support.media import make_walking_clip
from tests.support.paths import shared_dir

DEFAULT_OUT = Path(__file__).resolve().parent / "data" / "walk_yolov8n.csv"
COMMAND = ".venv/bin/python -m tests.track.walk_capture"
# the clip of tests/e2e/test_motion_gating.py
LEAD_S, TAIL_S, NOISE_SIGMA = 5.0, 4.0, 3.0
COLUMNS = "frame,t_s,slide_px,person,class_id,score,x1,y1,x2,y2"


def capture(out: Path) -> None:
    import cv2

    with tempfile.TemporaryDirectory() as tmp:
        clip = make_walking_clip(shared_dir() / "images" / "bus.jpg", Path(tmp) / "walk.mp4",
                                 lead_s=LEAD_S, tail_s=TAIL_S, noise_sigma=NOISE_SIGMA)
        frames: List[np.ndarray] = []
        video = cv2.VideoCapture(str(clip.path))
        while True:
            ok, frame = video.read()
            if not ok:
                break
            frames.append(frame)
        video.release()
    detector = create_detector(ModelConfig(path=str(shared_dir() / "models" / "yolov8n_coco_dynbatch.onnx"),
                                           backend="onnxruntime"))
    # a few empty frames either side of the walk, as a camera sees them
    first, last = clip.lead_frames - 3, clip.lead_frames + clip.walk_frames + 3
    rows = []
    reference = None
    for index in range(first, last):
        walk_index = index - clip.lead_frames
        slide_px = (round((clip.width - clip.picture_width) * walk_index / (clip.walk_frames - 1))
                    if 0 <= walk_index < clip.walk_frames else -1)
        (found,) = detector.detect([frames[index]])
        boxes = found.xyxy.astype(np.float64)
        if slide_px < 0:
            person = np.full(len(boxes), -1)
        else:
            centres = (boxes[:, 0:2] + boxes[:, 2:4]) / 2 - [slide_px, 0]
            if reference is None:
                order = np.argsort(centres[:, 0])
                reference = centres[order]
                reference_classes = found.class_id[order]
            distance = np.linalg.norm(centres[:, None, :] - reference[None, :, :], axis=2)
            distance[found.class_id[:, None] != reference_classes[None, :]] = np.inf
            person = np.argmin(distance, axis=1) if len(reference) else np.full(len(boxes), -1)
        for k in range(len(boxes)):
            rows.append(f"{index},{index / clip.fps:.3f},{slide_px},{person[k]},{found.class_id[k]},"
                        f"{found.confidence[k]:.4f}," + ",".join(f"{v:.1f}" for v in boxes[k]))
    detector.close()
    out.parent.mkdir(parents=True, exist_ok=True)
    header = [
        "Detections of YOLOv8n (yolov8n_coco_dynbatch.onnx, ONNX Runtime on the CPU, conf 0.25, NMS IoU 0.45)",
        f"in the synthetic walking clip of tests/e2e/test_motion_gating.py ({clip.width}x{clip.height}, {clip.fps} fps,",
        f"sensor noise {NOISE_SIGMA}): frames {first}..{last - 1}, the walk is frames {clip.lead_frames}.."
        f"{clip.lead_frames + clip.walk_frames - 1}.",
        "person: the ground truth (index of the object in the first walking frame, left to right; -1 off the walk).",
        f"Regenerate: {COMMAND}",
        COLUMNS,
    ]
    out.write_text("".join(f"# {line}\n" for line in header) + "\n".join(rows) + "\n")


if __name__ == "__main__":
    capture(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT)
