"""The model sections of the configuration: ``model``, each of ``models`` and a model's fleet ``artifact``.

Re-exported by ``edge_app.config.schema``, where the rest of the configuration is.
"""
from __future__ import annotations

import re
from typing import List, Literal, Optional, Union

from pydantic import Field, field_validator

from edge_app.config.model_names import MODEL_NAME_PATTERN
from edge_app.config.schema_rules import _clean_labels, _Strict


#: Names and versions of fleet artifacts (docs/fleet.md, "Models and engines over the air").
ARTIFACT_NAME_PATTERN = r"^[A-Za-z0-9_.-]{1,64}$"
ARTIFACT_VERSION_PATTERN = r"^[A-Za-z0-9_.-]{1,32}$"


def is_artifact_part(value: object, pattern: str) -> bool:
    """Whether ``value`` is a fleet artifact name (``pattern`` ARTIFACT_NAME_PATTERN) or version
    (ARTIFACT_VERSION_PATTERN): the fleet service stores nothing else, and an appliance runs nothing else."""
    return isinstance(value, str) and re.fullmatch(pattern, value) is not None and not _dots_only(value)


def _dots_only(value: str) -> bool:
    # Names and versions become folder names under the engine cache: "." and ".." would leave it.
    return value.strip(".") == ""


class ArtifactConfig(_Strict):
    """A model the fleet service holds: its files are fetched, verified and staged by the appliance."""

    name: str = Field(title="Artifact name", pattern=ARTIFACT_NAME_PATTERN, description="The model's name on the fleet service")
    version: str = Field(title="Artifact version", pattern=ARTIFACT_VERSION_PATTERN,
                         description="The version to run; a fleet rollout changes only this")

    @field_validator("name", "version")
    @classmethod
    def _not_dots(cls, value: str) -> str:
        if _dots_only(value):
            raise ValueError("may not consist of dots only")
        return value


class ModelConfig(_Strict):
    path: str = Field(title="Model path", min_length=1, description=".onnx, or a TensorRT .engine/.plan")
    backend: Literal["auto", "tensorrt", "onnxruntime"] = Field("auto", title="Backend")
    precision: Literal["fp32", "fp16", "int8"] = Field("fp16", title="Precision (TensorRT)")
    input_size: Optional[int] = Field(640, title="Input size", ge=32, le=4096, description="Square input side; null reads it from the model")
    max_batch: int = Field(1, title="Max batch", ge=1, le=64)
    batch_timeout_ms: float = Field(5, title="Batch timeout (ms)", ge=0, le=1000)
    conf_threshold: float = Field(0.25, title="Confidence threshold", ge=0, le=1)
    iou_threshold: float = Field(0.45, title="NMS IoU threshold", ge=0, le=1)
    classes: List[str] = Field(default_factory=list, title="Classes to keep")
    labels: Optional[str] = Field(None, title="Labels file")
    engine_dir: str = Field("engines", title="Engine cache directory")
    calibration_dir: Optional[str] = Field(None, title="INT8 calibration images")
    dla_core: Optional[int] = Field(None, title="DLA core (Jetson Orin/Xavier)", ge=0, le=1)
    workspace_mb: int = Field(1024, title="TensorRT workspace (MiB)", ge=16)
    engine_process: Union[Literal["auto"], bool] = Field(
        "auto", title="Engine in its own process (TensorRT)",
        description="run the TensorRT engine and its GPU decoding in a child process fed through CUDA IPC, away "
                    "from the appliance's Python threads; auto: on for a discrete GPU with NVIDIA MPS running, off on "
                    "a Jetson (no CUDA IPC) and without MPS (the reason is logged and shown by selftest)")
    artifact: Optional[ArtifactConfig] = Field(
        None, title="Fleet artifact",
        description="Run this model version from the fleet service (fleet.url) instead of path: its ONNX, labels and "
                    "a prebuilt engine for this device are downloaded, verified and staged under "
                    "<engine_dir>/fleet/<name>/<version>/; path stays the model used until one was staged")

    @field_validator("engine_process", mode="before")
    @classmethod
    def _auto_or_switch(cls, value: object) -> object:
        # One clear error rather than one per member of the union.
        if value != "auto" and not isinstance(value, bool):
            raise ValueError("engine_process must be auto, true or false")
        return value

    @field_validator("path")
    @classmethod
    def _model_suffix(cls, value: str) -> str:
        if not value.lower().endswith((".onnx", ".engine", ".plan")):
            raise ValueError("model.path must end in .onnx, .engine or .plan")
        return value

    @field_validator("classes")
    @classmethod
    def _class_names(cls, value: List[str]) -> List[str]:
        # Model labels, or class ids written as numbers: both pass the rule of labels.
        return _clean_labels(value)

    @property
    def configured_input_size(self) -> Optional[int]:
        """The input side the user wrote; None when the key was left out (the model decides)."""
        return self.input_size if "input_size" in self.model_fields_set else None

    @field_validator("input_size")
    @classmethod
    def _stride_multiple(cls, value: Optional[int]) -> Optional[int]:
        if value is not None and value % 32:
            raise ValueError("input_size must be a multiple of 32")
        return value


class NamedModelConfig(ModelConfig):
    """One of several models (``models``): every key of ``model``, and the name cameras use for it."""

    name: str = Field(title="Model name", pattern=MODEL_NAME_PATTERN,
                      description="Unique; what cameras[].model names (the single model key is named default)")
