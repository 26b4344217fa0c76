"""What one CPU benchmark run (``python -m bench.cpu run``) measures and where it finds its inputs."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional, Tuple

from bench.common.settings import results_dir
from testkit.paths import REPO, shared_dir


@dataclass
class BenchSettings:
    """Every knob of a run. ``window_s`` is the measuring time of each configuration, split over
    ``rounds`` rounds (forward, then reversed order, and so on)."""

    model_path: Path = field(default_factory=lambda: shared_dir() / "models" / "yolov8n_coco_int8.onnx")
    batch_model_path: Path = field(default_factory=lambda: shared_dir() / "models" / "yolov8n_coco_dynbatch.onnx")
    images_dir: Path = field(default_factory=lambda: shared_dir() / "images")
    work_dir: Path = field(default_factory=results_dir)
    window_s: float = 12.0
    rounds: int = 2
    warmup_s: float = 1.5
    smoke: bool = False
    raw_batches: List[Tuple[str, int]] = field(default_factory=lambda: [("model", 1), ("batch_model", 1), ("batch_model", 2), ("batch_model", 4)])
    predecoded_cameras: List[int] = field(default_factory=lambda: [1, 2, 4, 8])
    full_cameras: List[int] = field(default_factory=lambda: [1, 2, 4])
    max_batch: int = 4
    batch_timeout_ms: float = 5.0
    clip_size_wh: Tuple[int, int] = (1920, 1080)
    clip_seconds_per_image: float = 5.0
    clip_fps: int = 10
    mqtt_host: str = "127.0.0.1"
    mqtt_port: int = 1883
    run_ultralytics: bool = True
    #: also run the full pipeline (1 camera) and Ultralytics on the batch model, at batch 1
    compare_batch_model: bool = True
    ultralytics_python: Path = field(default_factory=lambda: REPO / ".venv-bench" / "bin" / "python")
    cv2_threads: Optional[int] = None

    @classmethod
    def for_smoke(cls, **overrides) -> "BenchSettings":
        """About ten seconds in all: tiny windows, one configuration per section, no Ultralytics."""
        values = dict(window_s=0.5, rounds=1, warmup_s=0.2, smoke=True, raw_batches=[("model", 1), ("batch_model", 2)],
                      predecoded_cameras=[1, 2], full_cameras=[1], run_ultralytics=False, compare_batch_model=False,
                      clip_seconds_per_image=1.0)
        values.update(overrides)
        return cls(**values)

    def model_for_batch(self, batch: int) -> Path:
        """The fixed-batch model for batch 1, the dynamic-batch one above."""
        return self.model_path if batch <= 1 else self.batch_model_path

    def batch_for_cameras(self, cameras: int) -> int:
        return max(1, min(cameras, self.max_batch))

    def model_by_role(self, role: str) -> Path:
        return self.model_path if role == "model" else self.batch_model_path
