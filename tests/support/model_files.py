"""A folder of model files for the tests of several models: the real models under names of their own, and a corrupt one."""
from __future__ import annotations

import shutil

import pytest


@pytest.fixture
def models_dir(tmp_path, model_path, int8_model_path):
    """Copies of the two real models (``general.onnx``; ``int8.onnx`` and ``int8-v2.onnx``, one model under two
    versions' names) and ``corrupt.onnx``, in one folder (the API's path rule: files beside the configured ones)."""
    folder = tmp_path / "models"
    folder.mkdir()
    shutil.copy(model_path, folder / "general.onnx")
    shutil.copy(int8_model_path, folder / "int8.onnx")
    shutil.copy(int8_model_path, folder / "int8-v2.onnx")
    (folder / "corrupt.onnx").write_bytes(b"\x08\x07 not a protobuf " * 64)
    return folder
