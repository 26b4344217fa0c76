"""Reading still images for the ``edge-app detect`` command and for tests."""
from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Union

import numpy as np

from edge_app.opencv import opencv

log = logging.getLogger(__name__)


class ImageReadError(ValueError):
    """An image file that does not exist or cannot be decoded; the message is for the user."""


def load_image(path: Union[str, os.PathLike]) -> np.ndarray:
    """The image at ``path`` as an ``(H, W, 3)`` uint8 BGR array.

    Decodes from bytes instead of ``cv2.imread`` so a bad file yields one clear error here
    rather than an OpenCV warning on stderr followed by ``None``.
    """
    file = Path(path)
    if not file.exists():
        raise ImageReadError(f"image {path} does not exist")
    if not file.is_file():
        raise ImageReadError(f"image {path} is not a file")
    try:
        data = np.fromfile(str(file), dtype=np.uint8)
    except OSError as exc:
        raise ImageReadError(f"image {path} cannot be read ({exc.strerror or exc})") from exc
    cv2 = opencv()
    image = cv2.imdecode(data, cv2.IMREAD_COLOR) if data.size else None
    if image is None:
        raise ImageReadError(f"image {path} is not a readable image file")
    return image
