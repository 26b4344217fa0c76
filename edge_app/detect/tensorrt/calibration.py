"""INT8 calibration: images from ``model.calibration_dir``, letterboxed exactly as at run time.

Calibration measures activation ranges on the tensors the engine will really see; images
prepared any other way (stretched instead of letterboxed, BGR, 0..255) give ranges that do not
fit and an INT8 engine that silently loses accuracy. So the batches come from the same
``Letterboxer`` the CPU run-time path uses (and the GPU kernel matches within 1/255).
The calibration cache is kept next to the engine and reused on later builds; its name carries a
fingerprint of the model and the image set, so new images or a new model recalibrate.
"""
from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Any, Iterator, List, Optional, Tuple

import numpy as np

from edge_app.detect.base import DetectorError
from edge_app.detect.image_io import ImageReadError, load_image
from edge_app.detect.letterbox import Letterboxer

log = logging.getLogger(__name__)

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff")
#: ample for entropy calibration of a detector; more only makes the build slower
DEFAULT_MAX_IMAGES = 500
DEFAULT_BATCH = 8


def calibration_files(directory: Path, max_images: int = DEFAULT_MAX_IMAGES) -> List[Path]:
    """Image files under ``directory`` (recursively), in a stable order."""
    if not directory.is_dir():
        raise DetectorError(f"model.calibration_dir {directory} is not a directory")
    files = sorted(p for p in directory.rglob("*") if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)
    if not files:
        raise DetectorError(f"model.calibration_dir {directory} holds no images ({', '.join(IMAGE_SUFFIXES)})")
    if len(files) > max_images:
        # an even spread keeps every part of a sorted (e.g. per-camera) folder represented
        step = len(files) / max_images
        files = [files[int(i * step)] for i in range(max_images)]
    return files


def calibration_fingerprint(onnx_sha256: str, input_hw: Tuple[int, int], files: List[Path]) -> str:
    digest = hashlib.sha256(f"{onnx_sha256}:{input_hw}".encode())
    for path in files:
        digest.update(f"{path.name}:{path.stat().st_size}\n".encode())
    return digest.hexdigest()[:16]


class CalibrationBatches:
    """Letterboxed calibration images as ``(batch_size, 3, H, W)`` float32 RGB 0..1 arrays.

    Only whole batches are produced (TensorRT's calibrator needs a fixed batch size); left-over
    images are dropped with a note in the log. Unreadable files are skipped, not fatal.
    """

    def __init__(self, files: List[Path], input_hw: Tuple[int, int], batch_size: int) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.files = list(files)
        self.input_hw = (int(input_hw[0]), int(input_hw[1]))
        self.batch_size = min(int(batch_size), max(1, len(self.files)))
        self._letterbox = Letterboxer(self.input_hw, max_batch=self.batch_size, num_buffers=1)
        dropped = len(self.files) % self.batch_size
        if dropped:
            log.info("calibration uses %d of %d images (whole batches of %d)", len(self.files) - dropped,
                     len(self.files), self.batch_size)

    def __len__(self) -> int:
        return len(self.files) // self.batch_size

    def __iter__(self) -> Iterator[np.ndarray]:
        pending: List[np.ndarray] = []
        for path in self.files:
            try:
                pending.append(load_image(path))
            except ImageReadError as err:
                log.warning("skipping calibration image %s: %s", path, err)
                continue
            if len(pending) == self.batch_size:
                yield self._letterbox(pending).tensor
                pending = []


def make_entropy_calibrator(trt: Any, batches: CalibrationBatches, device: Any, cache_path: Path,
                            write_cache) -> Any:
    """A ``trt.IInt8EntropyCalibrator2`` feeding ``batches`` through one pinned + device buffer."""
    base = trt.IInt8EntropyCalibrator2
    shape = (batches.batch_size, 3, *batches.input_hw)

    class _EntropyCalibrator(base):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            base.__init__(self)
            self._batches = iter(batches)
            self._host = device.alloc_pinned(shape, np.float32)
            self._device = device.alloc_device(self._host.nbytes)
            self._stream = device.create_stream()
            self.batches_fed = 0

        def get_batch_size(self) -> int:
            return batches.batch_size

        def get_batch(self, names, *unused) -> Optional[List[int]]:
            try:
                batch = next(self._batches)
            except StopIteration:
                return None
            np.copyto(self._host, batch)
            device.memcpy_htod_async(self._device.ptr, self._host, self._stream)
            self._stream.synchronize()
            self.batches_fed += 1
            return [int(self._device.ptr)]

        def read_calibration_cache(self, *unused) -> Optional[bytes]:
            if cache_path.is_file():
                log.info("reusing INT8 calibration cache %s", cache_path)
                return cache_path.read_bytes()
            return None

        def write_calibration_cache(self, cache) -> None:
            write_cache(cache_path, bytes(cache))
            log.info("wrote INT8 calibration cache %s", cache_path)

    return _EntropyCalibrator()
