"""What a camera delivers: one ``Frame``."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from edge_app.capture.gpu_image import FrameImage, bgr_image, image_hw


@dataclass(frozen=True, eq=False)
class Frame:
    """One decoded frame of one camera.

    ``frame_id`` counts the frames the camera delivered, from 1 upwards per run (docs/mqtt.md), so a
    gap tells a subscriber how many frames were skipped. ``ts`` is the capture time in Unix
    seconds (what MQTT publishes); ``mono_ts`` is ``time.monotonic()`` at capture, for latency
    and pacing, immune to clock steps.
    """

    camera_id: str
    frame_id: int
    ts: float
    mono_ts: float
    #: BGR uint8 H x W x 3 from CPU decoders; NV12 (host or device memory) from hardware ones
    image: FrameImage = field(repr=False)

    @property
    def width(self) -> int:
        return image_hw(self.image)[1]

    @property
    def height(self) -> int:
        return image_hw(self.image)[0]

    def bgr(self) -> np.ndarray:
        """The frame as BGR pixels; an NV12 frame is converted (and downloaded) only now, once."""
        return bgr_image(self.image)
