"""What a configuration change through the API may introduce (docs/configuration.md, "What the API may change").

The API writes the configuration; the configuration decides which files the appliance opens and
which pipelines it runs. Without a rule, a client could turn a config write into reading any file
(``file:`` sources served through snapshots, a labels file echoed in detections) or running any
GStreamer pipeline (``gst:`` with ``filesrc``/``tcpclientsink``). So through the API:

* no new ``gst:`` or ``csi://`` sources;
* file sources only inside directories that already hold configured file sources;
* model, labels, engine, calibration, events and recordings paths (and TLS files) only inside their current
  directories (a model added to ``models``: inside the directories of the models there are);
* no change at all to ``notifications``: a target's URL decides where alerts, snapshots and the
  secret's signatures go, so only the file on disk sets it, whatever ``api.allow_unsafe_sources`` says;

unless the file on disk sets ``api.allow_unsafe_sources: true``, which the API itself can never
change. Paths are compared after resolving ``..`` and symbolic links.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, List, Optional, Set, Tuple, Union

from edge_app.config.schema import AppConfig
from edge_app.config.source_spec import is_pipeline_source, source_file
from edge_app.config.file import Problem

_UNSAFE = "set api.allow_unsafe_sources: true in the configuration file to allow it"


def _resolve(path: Union[str, Path], cwd: Path) -> Path:
    return Path(os.path.realpath(os.path.join(cwd, str(path))))


def _inside(path: Path, roots: Iterable[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


_MODEL_PATHS = (("path", False), ("labels", False), ("engine_dir", True), ("calibration_dir", True))


def _path_fields(config: AppConfig) -> List[Tuple[str, str, Optional[str], bool]]:
    """(key, loc, value, is_directory) of every path the appliance opens besides camera sources; ``key``
    names the field across configurations (a model by its name, wherever its section sits)."""
    mqtt_tls, api_tls = config.mqtt.tls, config.api.tls
    fields = [(f"model:{name}.{key}", f"{config.model_location(name)}.{key}", getattr(model, key), is_dir)
              for name, model in config.model_configs().items() for key, is_dir in _MODEL_PATHS]
    return fields + [(loc, loc, value, is_dir) for loc, value, is_dir in [
        ("mqtt.tls.ca_certs", mqtt_tls.ca_certs, False),
        ("mqtt.tls.certfile", mqtt_tls.certfile, False),
        ("mqtt.tls.keyfile", mqtt_tls.keyfile, False),
        ("api.tls.certfile", api_tls.certfile, False),
        ("api.tls.keyfile", api_tls.keyfile, False),
        ("events.dir", config.events.dir, True),
        ("record.dir", config.record.dir, True),
    ]]


def _allowed_roots(key: str, value: Optional[str], is_dir: bool, old: AppConfig, cwd: Path) -> List[Path]:
    """The directories a field may point into: where its current value lives.

    A field that is unset today may point next to the model (labels, calibration images); a model
    that is new (added to ``models``) may use the folders of the models there are; unset TLS files
    have no directory yet and can only be set in the file.
    """
    if value:
        resolved = _resolve(value, cwd)
        return [resolved if is_dir else resolved.parent]
    if not key.startswith("model:"):
        return []
    name, field = key[len("model:"):].rsplit(".", 1)
    models = old.model_configs()
    if field in ("labels", "calibration_dir") and name in models:
        return [_resolve(models[name].path, cwd).parent]
    if name in models:
        return []
    if field == "engine_dir":
        return [_resolve(model.engine_dir, cwd) for model in models.values()]
    return [_resolve(model.path, cwd).parent for model in models.values()]


def _path_problems(old: AppConfig, new: AppConfig, cwd: Path) -> List[Problem]:
    problems = []
    old_fields = {key: (value, is_dir) for key, _, value, is_dir in _path_fields(old)}
    for key, loc, value, is_dir in _path_fields(new):
        old_value, _ = old_fields.get(key, (None, is_dir))
        if not value or value == old_value:
            continue
        roots = _allowed_roots(key, old_value, is_dir, old, cwd)
        if not roots:
            problems.append(Problem(loc, f"cannot be set through the API; {_UNSAFE}"))
        elif not _inside(_resolve(value, cwd), roots):
            where = ", ".join(str(root) for root in roots)
            problems.append(Problem(loc, f"must stay inside {where} when changed through the API; {_UNSAFE}"))
    return problems


def _source_problems(old: AppConfig, new: AppConfig, cwd: Path) -> List[Problem]:
    problems = []
    old_sources = {cam.source.strip() for cam in old.cameras}
    media_dirs: Set[Path] = set()
    for cam in old.cameras:
        path = source_file(cam.source)
        if path:
            media_dirs.add(_resolve(path, cwd).parent)
    for index, cam in enumerate(new.cameras):
        loc = f"cameras.{index}.source"
        if cam.source.strip() in old_sources:
            continue
        if is_pipeline_source(cam.source):
            problems.append(Problem(loc, f"gst: and csi:// sources cannot be added through the API; {_UNSAFE}"))
            continue
        path = source_file(cam.source)
        if path and not _inside(_resolve(path, cwd), media_dirs):
            where = ", ".join(sorted(str(d) for d in media_dirs)) or "no folder holds file sources yet"
            problems.append(Problem(loc, f"file sources added through the API must be inside a folder that "
                                         f"already holds one ({where}); {_UNSAFE}"))
    return problems


def unsafe_changes(old: AppConfig, new: AppConfig, cwd: Union[str, Path], *,
                   honour_allow_unsafe: bool = True) -> List[Problem]:
    """Every change from ``old`` (the file on disk) to ``new`` that the API may not make.

    ``honour_allow_unsafe=False`` applies the limits even when the file sets
    ``api.allow_unsafe_sources: true`` (changes that come from the MQTT broker).
    """
    cwd = Path(cwd)
    problems: List[Problem] = []
    if new.api.allow_unsafe_sources != old.api.allow_unsafe_sources:
        problems.append(Problem("api.allow_unsafe_sources", "can only be changed in the configuration file, never through the API"))
    if new.notifications != old.notifications:
        problems.append(Problem("notifications", "can only be changed in the configuration file, never through the API "
                                                 "or R/config/desired"))
    if old.api.allow_unsafe_sources and honour_allow_unsafe:
        return problems
    return problems + _source_problems(old, new, cwd) + _path_problems(old, new, cwd)


__all__ = ["is_pipeline_source", "source_file", "unsafe_changes"]
