"""Where a version of a fleet model (``model.artifact``) is staged on the device, and the names of
its files: the one rule the fleet agent stages by, and the configuration checks and selftest read by.

A version lives in ``<engine_dir>/fleet/<name>/<version>/``; its files are named by their role
(``model.onnx``, ``labels.txt``), never by anything the fleet service sends, and its verified
manifest (``manifest.json``) is written last, so a folder with a manifest is a complete version.
Whether the files still match the signed manifest is checked by ``edge-app run`` right before it
uses them (``edge_app.fleet_agent.artifacts.stage``), not here.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Optional

from edge_app.config.schema_model import ModelConfig

MANIFEST_FILE = "manifest.json"
#: a staged file's name by its role in the manifest
ROLE_FILES: Dict[str, str] = {"onnx": "model.onnx", "labels": "labels.txt"}


def stage_dir(engine_dir: str, name: str, version: str) -> Path:
    """The folder of ``name`` ``version``; ValueError when it would lie outside the engine cache's ``fleet``."""
    base = (Path(engine_dir) / "fleet").resolve()
    folder = (base / name / version).resolve()
    if folder.parent.parent != base:
        raise ValueError(f"model {name!r} version {version!r} would be staged outside {base}")
    return folder


@dataclass(frozen=True)
class StagedFiles:
    onnx: Path
    labels: Optional[Path]  # None: the version brings no labels file (its ONNX metadata has them)


def staged_files(engine_dir: str, name: str, version: str) -> Optional[StagedFiles]:
    """The files of a completely staged version (its manifest written), else None."""
    try:
        folder = stage_dir(engine_dir, name, version)
        if not (folder / MANIFEST_FILE).is_file():
            return None
    except (OSError, ValueError):
        return None
    labels = folder / ROLE_FILES["labels"]
    return StagedFiles(folder / ROLE_FILES["onnx"], labels if labels.is_file() else None)


def staged_copy(model: ModelConfig, onnx: Path, labels: Optional[Path]) -> ModelConfig:
    """``model`` as ``edge-app run`` runs it from a staged version: its files in place of ``path``
    and ``labels`` (a version without a labels file keeps the configured ``labels``)."""
    return model.model_copy(update={"path": str(onnx), "labels": str(labels) if labels else model.labels})


__all__ = ["MANIFEST_FILE", "ROLE_FILES", "StagedFiles", "stage_dir", "staged_copy", "staged_files"]
