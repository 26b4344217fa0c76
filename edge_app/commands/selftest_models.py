"""What ``edge-app selftest`` says of each model before checking it: how it runs on this machine,
the cameras that name it, and, for a model from the fleet service, which artifact ``edge-app run``
runs instead of its ``path`` and which of the two the checks use."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from edge_app.config.schema import AppConfig, ModelConfig
from edge_app.config.staged_model import staged_copy
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


@dataclass(frozen=True)
class ModelToCheck:
    """What selftest checks of a model: ``model`` (a fleet model's staged copy where one verifies),
    the words of its line saying so, and why a staged version cannot run (None: nothing wrong)."""
    model: ModelConfig
    fleet_line: str = ""
    problem: Optional[str] = None


def model_to_check(config: Any, model: ModelConfig) -> ModelToCheck:
    """A fleet model is checked as ``edge-app run`` would run it: its version staged on this device,
    verified against its signed manifest (nothing fetched), or else its ``path``."""
    artifact = model.artifact
    if artifact is None:
        return ModelToCheck(model)
    from edge_app.fleet_agent.artifacts.client import FleetRefused
    from edge_app.fleet_protocol.artifacts_manifest import ManifestError
    from edge_app.fleet_agent.artifacts.stage import verified_staged

    named = f"; fleet artifact {artifact.name} version {artifact.version}"
    fallback = f"these checks use path {model.path}"
    try:
        staged = verified_staged(config, model) if isinstance(config, AppConfig) else None
    except (ManifestError, FleetRefused, OSError) as err:
        return ModelToCheck(model, f"{named}, staged on this device but refused ({err}); {fallback}",
                            f"the staged version {artifact.version} of {artifact.name} cannot run: {err}")
    if staged is None:
        return ModelToCheck(model, f"{named}, not staged on this device: edge-app run fetches it and runs path "
                                   f"until then; {fallback}")
    return ModelToCheck(staged_copy(model, staged.onnx, staged.labels),
                        f"{named}, staged on this device and verified; these checks use its staged copy {staged.onnx}")


def describe_model(config: Any, name: str, model: ModelConfig, gpu: bool, fleet_line: str = "") -> str:
    """``<path>, <how it runs>; cameras ...[; fleet artifact ...]`` for selftest's line of the model ``name``."""
    return f"{model.path}, {_what_runs(model, gpu)}{_cameras_of(config, name)}{fleet_line}"
