"""No configuration number is NaN or infinite: not from YAML (.inf, .nan), not from JSON (1e400)."""
from __future__ import annotations

import math
from typing import Iterator, Set, Type

import pytest
from pydantic import BaseModel

from edge_app.config.file import ConfigError, load_config
from edge_app.config.schema import AppConfig
from edge_app.fleet_service.config import FleetConfig, load_fleet_config


def _models(root: Type[BaseModel], seen: Set[type]) -> Iterator[Type[BaseModel]]:
    if root in seen:
        return
    seen.add(root)
    yield root
    for field in root.model_fields.values():
        stack = [field.annotation]
        while stack:
            kind = stack.pop()
            if isinstance(kind, type) and issubclass(kind, BaseModel):
                yield from _models(kind, seen)
            stack.extend(getattr(kind, "__args__", ()))


@pytest.mark.parametrize("root", [AppConfig, FleetConfig])
def test_every_configuration_model_refuses_nan_and_infinity(root):
    models = list(_models(root, set()))
    assert len(models) > 5
    assert [m.__name__ for m in models if m.model_config.get("allow_inf_nan") is not False] == []


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan", "1e400"])
def test_a_camera_fps_limit_of_infinity_in_the_file_is_refused(tmp_path, value):
    path = tmp_path / "config.yaml"
    path.write_text(f"model: {{path: m.onnx}}\ncameras:\n  - {{id: cam1, source: 'rtsp://h/s', fps_limit: {value}}}\n")
    try:
        config = load_config(path)
    except ConfigError as err:
        assert [p.loc for p in err.problems] == ["cameras.0.fps_limit"]
    else:  # YAML reads 1e400 as the string "1e400", which pydantic then reads as a float
        assert math.isfinite(config.cameras[0].fps_limit), config.cameras[0].fps_limit


def test_a_fleet_number_of_infinity_in_the_file_is_refused(tmp_path):
    path = tmp_path / "fleet.yaml"
    path.write_text("mqtt: {host: 127.0.0.1}\nappliances:\n  edge-1: {url: 'http://10.0.0.2:8080', timeout_s: .inf}\n"
                    "api: {port: 8081}\n")
    with pytest.raises(ConfigError) as err:
        load_fleet_config(path)
    assert [p.loc for p in err.value.problems] == ["appliances.edge-1.timeout_s"]
