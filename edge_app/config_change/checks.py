"""Everything ``edge-app run`` would refuse, checked before it matters.

Form is the schema's job; this module checks the configuration against the machine: the model
file is there and readable, its labels (a labels file or the model's metadata) can be read and pass the
rule of configured labels, ``model.classes`` and the alert labels of ``review`` name labels the model has,
the HTTPS certificate loads, camera files exist, ``test://`` cameras fit the device's synthetic
budget (``edge_app.config.synthetic_budget``). The config API runs it before saving anything
(a change is all or nothing), ``check-config`` reports it, and ``run`` refuses to start with it
instead of failing later in a restart loop.

With ``previous`` (the running configuration) only what changed is checked, so a camera file that
went missing does not block an unrelated change of a threshold.
"""
from __future__ import annotations

import os
import ssl
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from edge_app.config.staged_model import staged_copy, staged_files
from edge_app.config.synthetic_budget import physical_memory_bytes, synthetic_problems
from edge_app.config.source_spec import SourceError, parse_source, source_file
from edge_app.config.schema import AppConfig, ModelConfig
from edge_app.config.schema_review import alert_label_problems
from edge_app.config.file import Problem
from edge_app.detect.base import DetectorError
from edge_app.detect.factory import choose_backend
from edge_app.detect.labels import class_ids_for, read_labels_file, resolve_labels
from edge_app.detect.model_metadata import is_engine_file


def _resolved(path: str) -> str:
    """Where a relative ``path`` points: what the appliance reads depends on where it was started
    (``scripts/demo.sh`` starts it in the demo's state folder, systemd in /var/lib/edge-app)."""
    if os.path.isabs(path):
        return ""
    return f" (relative to the working directory {os.getcwd()}: {os.path.abspath(path)})"


def _readable_file(path: str, what: str) -> Optional[str]:
    """None when ``path`` is a readable regular file, else why not."""
    if not os.path.exists(path):
        return f"{what} {path} does not exist{_resolved(path)}"
    if not os.path.isfile(path):
        return f"{what} {path} is not a file{_resolved(path)}"
    try:
        with open(path, "rb") as handle:
            handle.read(1)
    except OSError as err:
        return f"{what} {path} cannot be read ({err.strerror or type(err).__name__}){_resolved(path)}"
    return None


def model_metadata(model: ModelConfig) -> Dict[str, str]:
    """The metadata of the model file (DetectorError when it cannot be read)."""
    # The readers the backends use (imported here: only a labels check needs them), so check and
    # run see the same labels; an engine without a header falls back to its sidecar, as at run time.
    from edge_app.detect.tensorrt.onnx_info import read_onnx_info
    from edge_app.detect.tensorrt.prepare import user_engine_metadata

    try:
        if is_engine_file(model.path):
            return user_engine_metadata(Path(model.path))
        return read_onnx_info(Path(model.path)).metadata
    except DetectorError:
        raise
    except Exception as err:  # ONNX Runtime raises its own exception types for a broken file
        raise DetectorError(f"model file {model.path} is not a readable model ({type(err).__name__})") from None


def model_labels(model: ModelConfig) -> List[str]:
    """The labels the detector will use for ``model`` (DetectorError when they cannot be read)."""
    if model.labels:
        return read_labels_file(model.labels)
    return resolve_labels(None, model_metadata(model))[0]


def _label_problems(model: ModelConfig, at: str = "model") -> Tuple[List[Problem], Optional[List[str]]]:
    """(problems, labels): the model's labels pass the rule of configured labels wherever they come from."""
    if model.labels:
        try:
            return [], read_labels_file(model.labels)
        except DetectorError as err:
            return [Problem(f"{at}.labels", str(err))], None
    try:
        metadata = model_metadata(model)
    except DetectorError as err:
        # A model file that cannot be read is the load's to report, unless the classes need its labels.
        return ([Problem(f"{at}.classes", str(err))] if model.classes else []), None
    try:
        return [], resolve_labels(None, metadata)[0]
    except DetectorError as err:
        return [Problem(f"{at}.path", f"model file {model.path}: {err}")], None


def fleet_version_model(model: ModelConfig) -> Optional[ModelConfig]:
    """``model`` as ``edge-app run`` runs it from its fleet version staged on this device (its files in
    place of ``path`` and ``labels``); None for a model without ``artifact`` or whose version is not
    staged here (yet)."""
    artifact = model.artifact
    staged = staged_files(model.engine_dir, artifact.name, artifact.version) if artifact is not None else None
    if staged is None:
        return None
    return staged_copy(model, staged.onnx, staged.labels)


def _model_problems(model: ModelConfig, at: str = "model") -> List[Problem]:
    """``at``: where the model's section is (``model`` or ``models.<i>``), for the problems' locations."""
    why = _readable_file(model.path, "model file")
    if why:
        return [Problem(f"{at}.path", why)]
    try:
        choose_backend(model)
    except DetectorError as err:
        return [Problem(f"{at}.backend" if model.backend != "auto" else f"{at}.path", str(err))]
    # A fleet model runs the labels of its fleet version, which may not be those of path (its
    # fallback): classes are checked against the version staged here; one not staged yet is
    # checked by its load, which refuses it and keeps the running model (docs/fleet.md).
    fleet_model = fleet_version_model(model)
    classes_checked_here = model.artifact is None or fleet_model is not None
    problems, labels = _label_problems(fleet_model or model, at)
    if problems:
        return problems
    if model.classes and labels is not None and classes_checked_here:
        try:
            class_ids_for(model.classes, labels)
        except DetectorError as err:
            return [Problem(f"{at}.classes", str(err))]
    return []


def _tls_problems(config: AppConfig) -> List[Problem]:
    tls = config.api.tls
    if not (config.api.enabled and tls.enabled and tls.certfile):
        return []
    problems = []
    for loc, path in (("api.tls.certfile", tls.certfile), ("api.tls.keyfile", tls.keyfile)):
        why = _readable_file(path, "file") if path else None
        if why:
            problems.append(Problem(loc, why))
    if problems:
        return problems
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(tls.certfile, tls.keyfile)
    except (ssl.SSLError, OSError, ValueError):
        return [Problem("api.tls.certfile", "the certificate and key do not load as a PEM certificate chain "
                                            "and its private key (is the key encrypted, or the wrong file?)")]
    return []


def _camera_problems(config: AppConfig, previous: Optional[AppConfig]) -> List[Problem]:
    old_sources = {cam.id: cam.source for cam in previous.cameras} if previous is not None else {}
    problems = []
    for index, cam in enumerate(config.cameras):
        # Disabled cameras too: enabling one later keeps its source, so this is the only check it gets.
        if old_sources.get(cam.id) == cam.source:
            continue
        path = source_file(cam.source)
        why = _readable_file(path, "file") if path else None
        if why:
            problems.append(Problem(f"cameras.{index}.source", why))
    return problems


def _decoder_problems(config: AppConfig, previous: Optional[AppConfig]) -> List[Problem]:
    """A decoder chosen by name (not auto) must be able to open its camera's source here."""
    from edge_app.capture.video_decode.decoders import CameraOpener

    old = {cam.id: (cam.source, cam.decoder) for cam in previous.cameras} if previous is not None else {}
    problems = []
    for index, cam in enumerate(config.cameras):
        if not cam.enabled or cam.decoder in ("auto", "ffmpeg") or old.get(cam.id) == (cam.source, cam.decoder):
            continue
        try:
            CameraOpener(cam.decoder).check(parse_source(cam.source))
        except SourceError as err:
            problems.append(Problem(f"cameras.{index}.decoder", str(err)))
    return problems


#: Model keys that read no file: bounded numbers the schema has checked.
_MODEL_NUMBERS = frozenset({"conf_threshold", "iou_threshold"})


def _model_files_changed(model: ModelConfig, previous: ModelConfig) -> bool:
    # A threshold PATCH must not read the model's metadata again: a storm of them grew the
    # appliance by hundreds of MB, and the running detector already passed these checks.
    return model.model_dump(exclude=_MODEL_NUMBERS | {"name"}) != previous.model_dump(exclude=_MODEL_NUMBERS | {"name"})


def _review_rules(config: AppConfig) -> tuple:
    return (config.review.alerts, [(cam.model, cam.review.alerts) for cam in config.cameras], config.model_configs())


def _review_label_problems(config: AppConfig, previous: Optional[AppConfig]) -> List[Problem]:
    """Alert labels (``review.alerts.labels``, ``cameras[].review.alerts.labels``) the models do not know."""
    if not (config.review.alerts.labels or any(cam.review.alerts and cam.review.alerts.labels for cam in config.cameras)):
        return []
    if previous is not None and _review_rules(config) == _review_rules(previous):
        return []
    labels_of_model: Dict[str, Optional[List[str]]] = {}
    for name, model in config.model_configs().items():
        try:
            labels_of_model[name] = model_labels(fleet_version_model(model) or model)
        except DetectorError:
            labels_of_model[name] = None  # the model's own check reports why
    return [Problem(err.loc, str(err)) for err in alert_label_problems(config.review, config.cameras, labels_of_model)]


def relative_paths_note(config: AppConfig) -> Optional[str]:
    """One line naming where each relative path of ``config`` leads from here, or None when all are absolute."""
    paths: List[Tuple[str, Optional[str]]] = []
    for name, model in config.model_configs().items():
        at = config.model_location(name)
        paths += [(f"{at}.path", model.path), (f"{at}.labels", model.labels), (f"{at}.engine_dir", model.engine_dir)]
    paths += [(f"cameras.{index}.source", source_file(cam.source)) for index, cam in enumerate(config.cameras)]
    paths += [("events.dir", config.events.dir), ("record.dir", config.record.dir)]
    relative = [f"{loc} {os.path.abspath(path)}" for loc, path in paths if path and not os.path.isabs(path)]
    if not relative:
        return None
    return f"relative paths start in the working directory {os.getcwd()}: " + ", ".join(relative)


def check_runtime(config: AppConfig, previous: Optional[AppConfig] = None) -> List[Problem]:
    """Every problem that would stop ``config`` from running here; empty when it would run."""
    problems: List[Problem] = []
    before = previous.model_configs() if previous is not None else {}
    for name, model in config.model_configs().items():
        # Each model is checked alone, where it is: a change of one does not read the others' files.
        if name not in before or _model_files_changed(model, before[name]):
            problems += _model_problems(model, config.model_location(name))
    if previous is None or config.api.tls != previous.api.tls or config.api.enabled != previous.api.enabled:
        problems += _tls_problems(config)
    problems += _review_label_problems(config, previous)
    problems += _camera_problems(config, previous)
    problems += _decoder_problems(config, previous)
    problems += synthetic_problems(config, physical_memory_bytes())
    return problems


__all__ = ["check_runtime", "model_labels", "relative_paths_note"]
