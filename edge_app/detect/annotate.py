"""Drawing detections onto frames and encoding frames as JPEG.

Both are done on demand only (a snapshot or a live-view request): the analysis loop never pays
for drawing or encoding a frame nobody looks at.
"""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

import numpy as np

from edge_app.detect.detections import Detections
from edge_app.detect.label_placement import LabelToPlace, place_labels
from edge_app.opencv import opencv

Color = Tuple[int, int, int]

# A fixed, high-contrast palette (BGR) so a class keeps its colour across frames, cameras and
# restarts; the same hues that YOLO users know from the Ultralytics plots.
_PALETTE_RGB_HEX: Sequence[str] = (
    "FF3838", "FF9D97", "FF701F", "FFB21D", "CFD231", "48F90A", "92CC17", "3DDB86", "1A9334", "00D4BB",
    "2C99A8", "00C2FF", "344593", "6473FF", "0018EC", "8438FF", "520085", "CB38FF", "FF95C8", "FF37C7",
)


def class_color(class_id: int) -> Color:
    """The BGR colour used for ``class_id``."""
    hex_rgb = _PALETTE_RGB_HEX[int(class_id) % len(_PALETTE_RGB_HEX)]
    red, green, blue = (int(hex_rgb[i:i + 2], 16) for i in (0, 2, 4))
    return (blue, green, red)


def _text_color_for(background: Color) -> Color:
    """Black on light backgrounds, white on dark ones (ITU-R BT.601 luma)."""
    blue, green, red = background
    luma = 0.299 * red + 0.587 * green + 0.114 * blue
    return (0, 0, 0) if luma > 150 else (255, 255, 255)


def _as_bgr(image: np.ndarray) -> np.ndarray:
    cv2 = opencv()
    if image.ndim == 2:
        return cv2.cvtColor(image, cv2.COLOR_GRAY2BGR)
    if image.ndim == 3 and image.shape[2] == 4:
        return cv2.cvtColor(image, cv2.COLOR_BGRA2BGR)
    return image.copy()


def draw_detections(
    image: np.ndarray,
    detections: Detections,
    line_width_px: Optional[int] = None,
    show_confidence: bool = True,
) -> np.ndarray:
    """Return a BGR copy of ``image`` with one class-coloured box and label per detection.

    The source frame is never modified: it may be shared with the analysis loop and other
    viewers. Line width and font size scale with the frame so labels stay readable on both a
    640x360 substream and a 4K main stream.
    """
    cv2 = opencv()
    canvas = _as_bgr(image)
    height_px, width_px = canvas.shape[:2]
    thickness = line_width_px or max(2, round((height_px + width_px) / 2 * 0.003))
    font_scale = max(0.4, thickness / 3)
    font_thickness = max(1, thickness - 1)

    rows = sorted(zip(detections.xyxy.tolist(), detections.confidence.tolist(), detections.class_id.tolist()),
                  key=lambda row: -row[1])  # the best-scored boxes keep the label places next to them
    pad = max(2, thickness)
    boxes, texts, sizes = [], [], []
    for box, confidence, class_id in rows:
        x1, y1, x2, y2 = (int(round(v)) for v in box)
        x1, x2 = sorted((min(max(x1, 0), width_px - 1), min(max(x2, 0), width_px - 1)))
        y1, y2 = sorted((min(max(y1, 0), height_px - 1), min(max(y2, 0), height_px - 1)))
        color = class_color(class_id)
        cv2.rectangle(canvas, (x1, y1), (x2, y2), color, thickness, cv2.LINE_AA)
        label = detections.label_of(int(class_id))
        if show_confidence:
            label = f"{label} {confidence:.2f}"
        (text_w, text_h), baseline = cv2.getTextSize(label, cv2.FONT_HERSHEY_SIMPLEX, font_scale, font_thickness)
        boxes.append(LabelToPlace(x1, y1, x2, y2, text_w + 2 * pad, text_h + baseline + pad))
        texts.append((label, color))
        sizes.append(text_h)
    # Every label after every box, placed so that none hides another (people close together).
    for spot, (label, color), text_h in zip(place_labels(boxes, width_px, height_px), texts, sizes):
        cv2.rectangle(canvas, (spot.x, spot.y), (spot.x + spot.w, spot.y + spot.h), color, cv2.FILLED)
        cv2.putText(canvas, label, (spot.x + pad, spot.y + text_h + pad // 2), cv2.FONT_HERSHEY_SIMPLEX,
                    font_scale, _text_color_for(color), font_thickness, cv2.LINE_AA)
    return canvas


def encode_jpeg(image: np.ndarray, quality: int = 85) -> bytes:
    """Encode a BGR (or grayscale) uint8 image as JPEG; ``quality`` is 1..100."""
    if not 1 <= int(quality) <= 100:
        raise ValueError(f"JPEG quality must be between 1 and 100, got {quality}")
    if image.dtype != np.uint8:
        raise ValueError(f"only 8-bit images can be encoded as JPEG, got {image.dtype}")
    cv2 = opencv()
    ok, buffer = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    if not ok:
        raise ValueError(f"OpenCV could not encode an image of shape {image.shape} as JPEG")
    return buffer.tobytes()
