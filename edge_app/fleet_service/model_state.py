"""What each appliance says about its models (``models_state``), checked, and how a rollout shows it.

An appliance reports ``models_state: {<name>: {"version", "state", "progress", "reason"}}`` in its
``R/config/reported`` and ``R/status`` messages (docs/fleet.md, "Models and engines over the
air"). It comes over the broker, so it is hostile input: names and versions are checked like
those of the artifact routes, texts are cut, numbers bounded, and anything else is dropped.
"""
from __future__ import annotations

import itertools
import json
import math
from typing import Any, Dict, List, Optional

from edge_app.config.schema_model import ARTIFACT_NAME_PATTERN, ARTIFACT_VERSION_PATTERN, is_artifact_part

MODEL_STATES = ("downloading", "building", "running", "failed")
MAX_MODELS = 32
#: entries looked at in one report: dropped ones do not take the places of real ones, within this
MAX_ENTRIES_READ = 4 * MAX_MODELS
MAX_REASON_CHARS = 500


def parse_models_state(value: Any) -> Dict[str, Dict[str, Any]]:
    """The usable part of a reported ``models_state``; ValueError when it is not an object at all."""
    if not isinstance(value, dict):
        raise ValueError("models_state must be an object of model name -> state")
    found: Dict[str, Dict[str, Any]] = {}
    for name, entry in itertools.islice(value.items(), MAX_ENTRIES_READ):
        if len(found) == MAX_MODELS:
            break
        if not is_artifact_part(name, ARTIFACT_NAME_PATTERN) or not isinstance(entry, dict):
            continue
        version, state = entry.get("version"), entry.get("state")
        if not is_artifact_part(version, ARTIFACT_VERSION_PATTERN) or state not in MODEL_STATES:
            continue
        progress = entry.get("progress")
        if isinstance(progress, bool) or not isinstance(progress, (int, float)) or not math.isfinite(progress):
            progress = None
        else:
            progress = min(max(float(progress), 0.0), 1.0)
        reason = entry.get("reason")
        found[name] = {"version": version, "state": state, "progress": progress,
                       "reason": reason[:MAX_REASON_CHARS] if isinstance(reason, str) else None}
    return found


def rollout_model_state(name: str, version: str, reported: Optional[Dict[str, Any]], config_status: str,
                        config_errors: Any) -> Dict[str, Any]:
    """One device's state in a model rollout of ``name`` ``version``.

    ``waiting`` until the device reports that version (it may still run the one before);
    ``failed`` with the reason when the device refused the configuration change itself.
    """
    entry = (reported or {}).get(name)
    if isinstance(entry, dict) and entry.get("version") == version:
        return {"name": name, "version": version, **{k: entry.get(k) for k in ("state", "progress", "reason")}}
    if config_status == "rejected":
        reason = "; ".join(str(e.get("msg", e))[:200] for e in config_errors[:5]) if isinstance(config_errors, list) else None
        return {"name": name, "version": version, "state": "failed", "progress": None,
                "reason": f"the device refused the configuration change: {reason or 'no reason given'}"}
    running = entry.get("version") if isinstance(entry, dict) else None
    return {"name": name, "version": version, "state": "waiting", "progress": None,
            "reason": f"the device reports version {running}" if running else None}


def stored_models_state(stored: Optional[str]) -> Dict[str, Any]:
    """A device's ``models_state`` as the database keeps it (checked JSON, or NULL): {} when there is none."""
    if not stored:
        return {}
    try:
        state = json.loads(stored)
    except ValueError:
        return {}
    return state if isinstance(state, dict) else {}


def devices_reporting(conn: Any, name: str, version: str) -> List[str]:
    """The devices whose stored ``models_state`` names fleet model ``name`` at ``version`` (running,
    or on its way to it): those a deletion of that version would leave without it at their next start."""
    found = []
    for device_id, stored in conn.query("SELECT device_id, models_state FROM devices WHERE models_state IS NOT NULL "
                                        "ORDER BY device_id"):
        entry = stored_models_state(stored).get(name)
        if isinstance(entry, dict) and entry.get("version") == version:
            found.append(device_id)
    return found
