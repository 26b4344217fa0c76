"""Fixtures for the shared test data: real YOLOv8n models and real images.

The data sits beside the repository in ``../shared`` (or where ``EDGE_APP_SHARED`` points;
``testkit.paths``). A contributor without it gets skips with a reason; CI (``CI=true``) fails instead, so a missing
folder can never turn the suite green by skipping.
"""
from pathlib import Path

import pytest

from testkit.paths import REPO, shared_dir
from testkit.skips import missing


def _require(path: Path) -> Path:
    if not path.exists():
        missing(f"test data {path} is missing (set EDGE_APP_SHARED to the folder with models/ and images/)")
    return path


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def model_path() -> Path:
    """The float32, dynamic-batch YOLOv8n COCO export."""
    return _require(shared_dir() / "models" / "yolov8n_coco_dynbatch.onnx")


@pytest.fixture(scope="session")
def int8_model_path() -> Path:
    return _require(shared_dir() / "models" / "yolov8n_coco_int8.onnx")


@pytest.fixture(scope="session")
def images_dir() -> Path:
    return _require(shared_dir() / "images")


@pytest.fixture(scope="session")
def bus_jpg(images_dir) -> Path:
    return images_dir / "bus.jpg"


@pytest.fixture(scope="session")
def zidane_jpg(images_dir) -> Path:
    return images_dir / "zidane.jpg"
