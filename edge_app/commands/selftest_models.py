"""What ``edge-app selftest`` says of each model before checking it: how it runs on this machine,
the cameras that name it, and, for a model from the fleet service, which artifact ``edge-app run``
runs instead of its ``path``."""
from __future__ import annotations

from typing import Any

from edge_app.config.schema import AppConfig, ModelConfig
from edge_app.detect.base import DetectorError
from edge_app.detect.factory import TENSORRT, choose_backend


def _what_runs(model: ModelConfig, gpu: bool) -> str:
    """The backend and precision this machine would run ``model`` with (precision is TensorRT's only)."""
    try:
        backend = choose_backend(model)
    except DetectorError:
        return f"backend {model.backend}, which cannot run here"
    if backend == TENSORRT:
        return f"TensorRT, precision {model.precision}"
    return f"ONNX Runtime{'' if gpu else ' on the CPU'}, precision as exported"


def _cameras_of(config: Any, model_name: str) -> str:
    """``; cameras a, b`` (those whose ``model`` names it, as status lists them); nothing for a
    model given on the command line, which no camera names."""
    if not isinstance(config, AppConfig):
        return ""
    return f"; cameras {', '.join(config.camera_ids_of(model_name)) or 'none'}"


def _fleet_artifact(model: ModelConfig) -> str:
    """The fleet artifact ``edge-app run`` runs instead of ``path``, and whether it is staged here.

    Selftest never fetches, nor verifies a staged version against its signed manifest (``edge-app
    run`` does, right before it uses one), so its checks keep to ``path``; the line says so.
    """
    artifact = model.artifact
    if artifact is None:
        return ""
    from edge_app.fleet_agent.artifacts_manifest import ManifestError
    from edge_app.fleet_agent.artifacts_stage import MANIFEST_FILE, stage_dir
    try:
        staged = (stage_dir(model.engine_dir, artifact.name, artifact.version) / MANIFEST_FILE).is_file()
    except (ManifestError, OSError):
        staged = False
    where = ("staged on this device" if staged
             else "not staged on this device: edge-app run fetches it and runs path until then")
    return f"; fleet artifact {artifact.name} version {artifact.version}, {where}; these checks use path {model.path}"


def describe_model(config: Any, name: str, model: ModelConfig, gpu: bool) -> str:
    """``<path>, <how it runs>; cameras ...[; fleet artifact ...]`` for selftest's line of the model ``name``."""
    return f"{model.path}, {_what_runs(model, gpu)}{_cameras_of(config, name)}{_fleet_artifact(model)}"
