"""Several models on one appliance: ``models`` (named) beside the single ``model`` (named ``default``).

The rules of names live here, apart from the pydantic classes, so the schema only wires them in:
a name is ``^[A-Za-z0-9_-]{1,32}$`` and used once, every camera names a model that exists, and
``model`` with ``models`` is allowed only while no entry of ``models`` is also called ``default``
(``model`` *is* the model named ``default``: two definitions of one name would leave it open
which one runs).
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, Optional, Sequence

MODEL_NAME_PATTERN = r"^[A-Za-z0-9_-]{1,32}$"
#: the name of the single ``model`` and the model a camera uses when it names none
DEFAULT_MODEL = "default"
#: models one appliance runs at most: each has its own detector, threads and memory
MAX_MODELS = 8


class LocatedError(ValueError):
    """A rule across sections, with the key it is about (``loc``) for the problem report."""

    def __init__(self, loc: str, message: str) -> None:
        super().__init__(message)
        self.loc = loc


def named_models(model: Optional[Any], models: Sequence[Any]) -> Dict[str, Any]:
    """Name -> model section, ``model`` (as ``default``) first, then ``models`` in their order."""
    found: Dict[str, Any] = {}
    if model is not None:
        found[DEFAULT_MODEL] = model
    for entry in models:
        found.setdefault(entry.name, entry)
    return found


def model_location(model: Optional[Any], models: Sequence[Any], name: str) -> str:
    """Where the model called ``name`` is in the configuration: ``model`` or ``models.<i>``."""
    if model is not None and name == DEFAULT_MODEL:
        return "model"
    for index, entry in enumerate(models):
        if entry.name == name:
            return f"models.{index}"
    return "model"


def check_models(model: Optional[Any], models: Sequence[Any], cameras: Iterable[Any]) -> None:
    """``LocatedError`` with the first rule of names the configuration breaks."""
    if model is None and not models:
        raise LocatedError("model", "a model is required: give model (one model, named default) or models "
                                    "(a list of named models)")
    seen: Dict[str, int] = {}
    for index, entry in enumerate(models):
        if entry.name in seen:
            raise LocatedError(f"models.{index}.name", f"the name {entry.name!r} is already used by models.{seen[entry.name]}")
        seen[entry.name] = index
    if model is not None and DEFAULT_MODEL in seen:
        raise LocatedError(f"models.{seen[DEFAULT_MODEL]}.name",
                           f"model and models.{seen[DEFAULT_MODEL]} both define the model named {DEFAULT_MODEL!r}: "
                           "move model into models, or give that entry another name")
    # models_state and fleet rollouts name a model by its artifact's name (docs/fleet.md): one
    # fleet model is run by one model of the appliance, whose cameras share it.
    fleet_names: Dict[str, str] = {}
    for loc, entry in [("model", model)] + [(f"models.{i}", m) for i, m in enumerate(models)]:
        artifact = getattr(entry, "artifact", None)
        if artifact is None:
            continue
        if artifact.name in fleet_names:
            raise LocatedError(f"{loc}.artifact.name",
                               f"the fleet model {artifact.name!r} is already run by {fleet_names[artifact.name]}: "
                               "let the cameras share that model (cameras[].model) instead")
        fleet_names[artifact.name] = loc
    names = list(named_models(model, models))
    for index, camera in enumerate(cameras):
        if camera.model not in names:
            hint = "" if camera.model != DEFAULT_MODEL else " (the default: set cameras[].model)"
            raise LocatedError(f"cameras.{index}.model", f"camera {camera.id!r} uses the model {camera.model!r}{hint}, "
                                                         f"but there is no model of that name (models: {', '.join(names)})")
