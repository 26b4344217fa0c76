"""Merge patches that address one model by its name (docs/configuration.md, "Several models").

An RFC 7396 merge patch replaces a list as a whole, so it cannot change one entry of
``models``. A patch (``PATCH /api/v1/config``, ``R/config/desired``) may therefore give
``models`` as an object instead of a list; each key addresses one model of the running
configuration and its value is a merge patch for that model's section:

* ``<model name>``: the model of that name; ``default`` is ``model`` when the single ``model``
  is used;
* ``artifact:<fleet model name>``: the model whose ``artifact.name`` is that name (at most one
  model runs a fleet model). The fleet service's model rollouts use this form, since which of an
  appliance's models runs a fleet model is the appliance's business.

The object is turned into an ordinary patch (``model`` patched, or the whole ``models`` list
with the addressed entries patched) before it is merged, so everything after it (validation,
the broker's allow-list) sees a plain change. An address that matches no model, a ``null``
(removing a model takes the whole list) or a value that is not an object is refused.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from edge_app.config.file import ConfigError, Problem, merge_patch
from edge_app.config.model_names import DEFAULT_MODEL

ARTIFACT_PREFIX = "artifact:"
#: a patch addresses at most this many models (an appliance runs at most MAX_MODELS)
MAX_ADDRESSES = 16


def _find(data: Dict[str, Any], address: str) -> Optional[str]:
    """``model`` or ``models.<i>``: where the model ``address`` names is in ``data``; None if nowhere."""
    entries: List[Any] = data.get("models") if isinstance(data.get("models"), list) else []  # type: ignore[assignment]
    single = data.get("model") if isinstance(data.get("model"), dict) else None
    if address.startswith(ARTIFACT_PREFIX):
        fleet_name = address[len(ARTIFACT_PREFIX):]
        candidates = ([("model", single)] if single is not None else []) + [
            (f"models.{i}", entry) for i, entry in enumerate(entries) if isinstance(entry, dict)]
        for loc, section in candidates:
            artifact = section.get("artifact")
            if isinstance(artifact, dict) and artifact.get("name") == fleet_name:
                return loc
        return None
    if single is not None and address == DEFAULT_MODEL:
        return "model"
    for index, entry in enumerate(entries):
        if isinstance(entry, dict) and entry.get("name") == address:
            return f"models.{index}"
    return None


def resolve_model_addresses(data: Dict[str, Any], patch: Any) -> Any:
    """``patch`` with a ``models`` object (see the module's docstring) made a plain merge patch of ``data``.

    ConfigError names every address that cannot be used; a patch without one comes back as it is.
    """
    if not isinstance(patch, dict) or not isinstance(patch.get("models"), dict):
        return patch
    addresses: Dict[str, Any] = patch["models"]
    problems: List[Problem] = []
    if len(addresses) > MAX_ADDRESSES:
        raise ConfigError([Problem("models", f"a patch addresses at most {MAX_ADDRESSES} models")])
    resolved = {key: value for key, value in patch.items() if key != "models"}
    entries = list(data.get("models") or []) if isinstance(data.get("models"), list) else []
    touched_list = False
    for address, section_patch in addresses.items():
        loc = f"models.{str(address)[:80]}"
        if not isinstance(section_patch, dict):
            problems.append(Problem(loc, "must be an object (a merge patch of that model); a model is removed "
                                         "by sending the whole models list"))
            continue
        where = _find(data, str(address))
        if where is None:
            shown = str(address)[:80]  # from the network: quoted, and cut
            what = (f"no model of this appliance runs the fleet model {shown[len(ARTIFACT_PREFIX):]!r}"
                    if shown.startswith(ARTIFACT_PREFIX) else f"there is no model named {shown!r}")
            problems.append(Problem(loc, what))
        elif where == "model":
            resolved["model"] = merge_patch(merge_patch(data["model"], resolved.get("model") or {}), section_patch)
        else:
            index = int(where.split(".")[1])
            entries[index] = merge_patch(entries[index], section_patch)
            touched_list = True
    if problems:
        raise ConfigError(problems)
    if touched_list:
        resolved["models"] = entries
    return resolved


__all__ = ["ARTIFACT_PREFIX", "resolve_model_addresses"]
