"""Where the repository and the shared test data are: real YOLOv8n models and real images.

The data sits beside the repository in ``../shared`` (or where ``EDGE_APP_SHARED`` points).
"""
import os
from pathlib import Path

#: the repository's root folder
REPO = Path(__file__).resolve().parents[1]


def shared_dir() -> Path:
    """The shared models and images: ``EDGE_APP_SHARED`` or ``../shared`` beside the repository."""
    return Path(os.environ.get("EDGE_APP_SHARED", REPO.parent / "shared")).resolve()
