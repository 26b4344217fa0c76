"""What a configuration change touches: a pure diff, so live re-configuration is predictable.

docs/configuration.md: an edited camera restarts that camera alone, a new model is loaded beside the old one
and swapped in when ready, new MQTT settings reconnect, ``api.host``/``api.port`` need a restart.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Set, Tuple

from edge_app.config.schema import AppConfig, ModelConfig

# Model settings the decoder reads on every batch: changing these needs no model reload.
_DECODE_ONLY_KEYS = {"conf_threshold", "iou_threshold", "classes", "batch_timeout_ms"}
# Camera settings read by the analysis (edge_app.appliance.analysis) or the recorder, not by capture:
# no camera restart (a camera that starts or stops being recorded reconnects through the recorder's
# own check, edge_app.record.device_recorder). ``model``: the camera's frames go to another model's
# pipeline; capture goes on as it is.
_ANALYSIS_KEYS = {"detect", "zones", "lines", "motion", "model", "record", "review"}


def _capture_settings(camera) -> dict:
    return camera.model_dump(exclude=_ANALYSIS_KEYS)


@dataclass(frozen=True)
class ChangePlan:
    cameras_added: Tuple[str, ...] = ()
    cameras_removed: Tuple[str, ...] = ()
    cameras_changed: Tuple[str, ...] = ()
    reload_model: bool = False  # some model is loaded again (models_reloaded names them)
    retune_model: bool = False
    reconnect_mqtt: bool = False
    restart_required: List[str] = field(default_factory=list)
    models_reloaded: Tuple[str, ...] = ()  # models added, or whose file or load settings changed
    models_retuned: Tuple[str, ...] = ()  # models whose thresholds or classes changed
    models_removed: Tuple[str, ...] = ()


def _differing_model_keys(old: ModelConfig, new: ModelConfig) -> Set[str]:
    # The name is where the section sits (model, or an entry of models), not how the model runs.
    old_model, new_model = old.model_dump(exclude={"name"}), new.model_dump(exclude={"name"})
    return {k for k in set(new_model) | set(old_model) if new_model.get(k) != old_model.get(k)}


def model_reload_needed(loaded: ModelConfig, wanted: ModelConfig) -> bool:
    """Whether a detector loaded from ``loaded`` must be loaded again to run ``wanted``."""
    return bool(_differing_model_keys(loaded, wanted) - _DECODE_ONLY_KEYS)


def plan_changes(old: AppConfig, new: AppConfig) -> ChangePlan:
    old_cams = {c.id: c for c in old.cameras}
    new_cams = {c.id: c for c in new.cameras}
    added = tuple(cid for cid in new_cams if cid not in old_cams)
    removed = tuple(cid for cid in old_cams if cid not in new_cams)
    changed = tuple(cid for cid in new_cams
                    if cid in old_cams and _capture_settings(new_cams[cid]) != _capture_settings(old_cams[cid]))
    if old.capture != new.capture:
        # Reconnect timing is read when a camera starts: restart the ones that stay.
        changed = tuple(dict.fromkeys(changed + tuple(cid for cid in new_cams if cid in old_cams)))

    old_models, new_models = old.model_configs(), new.model_configs()
    reloaded, retuned = [], []
    for name, model in new_models.items():
        differing = _differing_model_keys(old_models[name], model) if name in old_models else {"path"}
        if differing - _DECODE_ONLY_KEYS:
            reloaded.append(name)
        elif differing & _DECODE_ONLY_KEYS:
            retuned.append(name)
    removed_models = tuple(name for name in old_models if name not in new_models)

    reconnect_mqtt = old.mqtt != new.mqtt or old.device_id != new.device_id

    restart_required = [f"api.{key}" for key in ("host", "port") if getattr(old.api, key) != getattr(new.api, key)]
    if old.api.enabled != new.api.enabled:
        restart_required.append("api.enabled")
    # The event store is opened at start, in its folder.
    restart_required += [f"events.{key}" for key in ("enabled", "dir") if getattr(old.events, key) != getattr(new.events, key)]
    # The recording store opens its folder and index at start.
    if old.record.dir != new.record.dir:
        restart_required.append("record.dir")
    # R/config/desired is subscribed to at start only when remote configuration is on.
    if new.fleet.remote_config and not old.fleet.remote_config:
        restart_required.append("fleet.remote_config")
    return ChangePlan(added, removed, changed, bool(reloaded), bool(retuned), reconnect_mqtt, restart_required,
                      tuple(reloaded), tuple(retuned), removed_models)
