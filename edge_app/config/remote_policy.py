"""What ``R/config/desired`` may change (docs/fleet.md, "Who may configure an appliance": the broker is not trusted).

A fixed allow-list, checked on the difference between the whole running configuration and the
whole configuration a desired message would produce, never on the keys of the patch: whatever
shape a patch takes (a camera list replaced, a section deleted with null, a key moved), every
field whose value would change is named and compared with this list. The broker may change:

* cameras (their sources under the API's rules, ``edge_app.config.policy``, and never a
  ``test://`` source the running configuration does not have), with their zones,
  lines, ``detect`` switches and ``record``/``motion``/``model`` choices;
* the detection thresholds and classes (``model.conf_threshold``, ``iou_threshold``, ``classes``);
* the fleet artifact's version (``model.artifact.version``, ``models[i].artifact.version``), a rollout
  of a model the fleet service holds; never its name, nor the artifact section as a whole. A
  rollout addresses the model by its fleet name (``{"models": {"artifact:<name>": ...}}``,
  ``edge_app.config.model_patch``), resolved to a plain change before this list is consulted;
* ``tracking``, ``events`` (not ``events.dir``), ``record`` (not ``record.dir``), ``motion``,
  ``health`` and ``review`` settings (a camera's ``review`` too);
* the ``version`` of each entry of ``models``, and its thresholds and classes;
* the active profile (``profiles.active``): a switch held until the next scheduled boundary,
  like one made by hand (docs/profiles.md); never the profiles themselves nor the schedule.

A camera's ``privacy`` section is never the broker's: a mask removed or moved would send out what
its owner hid. A camera the broker adds may bring one; a camera that stays keeps its own (compared
by camera id, so removing another camera does not count as a change).

Everything else is refused: ``api.*``, ``mqtt.*``, ``device_id``, ``fleet.*``, ``homeassistant.*``, ``notifications.*``,
``logging``, ``capture``, ``snapshots`` and every path (model files, labels, engine and
calibration folders, events and recordings folders, TLS files); for ``models`` that means no
entry added, removed or renamed, and no path, backend or load setting changed. Keys that do not
exist in the schema yet (``record``, ``models[].version``) are listed by name so the rule does
not have to change when they arrive.
"""
from __future__ import annotations

from typing import Any, Iterator, List, Tuple

from edge_app.config.schema import AppConfig
from edge_app.config.file import Problem, config_to_dict

#: A path pattern: dict keys, ``*`` for any list index. A pattern covers everything below it.
Pattern = Tuple[str, ...]

ALLOWED: Tuple[Pattern, ...] = (
    ("cameras", "*", "id"), ("cameras", "*", "source"), ("cameras", "*", "enabled"),
    ("cameras", "*", "fps_limit"), ("cameras", "*", "loop"), ("cameras", "*", "realtime"),
    ("cameras", "*", "decoder"), ("cameras", "*", "detect"), ("cameras", "*", "zones"),
    ("cameras", "*", "lines"), ("cameras", "*", "record"), ("cameras", "*", "motion"),
    ("cameras", "*", "model"), ("cameras", "*", "review"),
    ("model", "conf_threshold"), ("model", "iou_threshold"), ("model", "classes"),
    ("model", "artifact", "version"), ("models", "*", "artifact", "version"),
    ("models", "*", "version"), ("models", "*", "conf_threshold"), ("models", "*", "iou_threshold"),
    ("models", "*", "classes"),
    ("tracking",), ("events",), ("record",), ("motion",), ("health",), ("review",),
    ("profiles", "active"),
)
#: Paths inside allowed sections: a folder the appliance writes to is never the broker's to choose.
DENIED: Tuple[Pattern, ...] = (("events", "dir"), ("record", "dir"))
#: A report names at most this many fields; a patch touching more is refused all the same.
MAX_PROBLEMS = 32

_WHY = ("cannot be changed through R/config/desired; the broker may change only cameras, zones, lines, "
        "detect switches, thresholds and classes, tracking, events, record, motion, health, review, model versions "
        "and the active profile")


def _matches(pattern: Pattern, path: Tuple[str, ...]) -> bool:
    if len(path) < len(pattern):
        return False
    return all(want == "*" and got.isdigit() or want == got for want, got in zip(pattern, path))


def _allowed(path: Tuple[str, ...]) -> bool:
    if any(_matches(pattern, path) for pattern in DENIED):
        return False
    return any(_matches(pattern, path) for pattern in ALLOWED)


_MISSING = object()


def _changed(old: Any, new: Any, path: Tuple[str, ...] = ()) -> Iterator[Tuple[str, ...]]:
    """Every leaf path whose value differs, a key or list entry present on one side only included."""
    if isinstance(old, dict) or isinstance(new, dict):
        old_d = old if isinstance(old, dict) else {}
        new_d = new if isinstance(new, dict) else {}
        if not isinstance(old, dict) and old is not _MISSING or not isinstance(new, dict) and new is not _MISSING:
            yield path  # a value turned into a section or back
        for key in list(old_d) + [k for k in new_d if k not in old_d]:
            yield from _changed(old_d.get(key, _MISSING), new_d.get(key, _MISSING), path + (str(key),))
    elif isinstance(old, list) or isinstance(new, list):
        old_l = old if isinstance(old, list) else []
        new_l = new if isinstance(new, list) else []
        if not isinstance(old, list) and old is not _MISSING or not isinstance(new, list) and new is not _MISSING:
            yield path
        for index in range(max(len(old_l), len(new_l))):
            yield from _changed(old_l[index] if index < len(old_l) else _MISSING,
                                new_l[index] if index < len(new_l) else _MISSING, path + (str(index),))
    elif old != new or type(old) is not type(new):
        yield path


def _synthetic_sources_added(current: AppConfig, new: AppConfig) -> List[Problem]:
    """``test://`` cameras the running configuration does not have, by id and source: drawn in
    Python at any size and rate they ask, they are the owner's, never the broker's to add, copy or resize."""
    existing = {(cam.id, cam.source.strip()) for cam in current.cameras}
    return [Problem(f"cameras.{index}.source", "test:// sources cannot be added through R/config/desired")
            for index, cam in enumerate(new.cameras)
            if cam.source.strip().lower().startswith("test://") and (cam.id, cam.source.strip()) not in existing]


def _privacy_changed(current: AppConfig, new: AppConfig) -> List[Problem]:
    """Cameras that stay (by id) whose ``privacy`` section the change would alter."""
    before = {cam.id: cam.privacy for cam in current.cameras}
    return [Problem(f"cameras.{index}.privacy", "a camera's privacy masks cannot be changed through R/config/desired")
            for index, cam in enumerate(new.cameras) if cam.id in before and cam.privacy != before[cam.id]]


def _is_privacy(path: Tuple[str, ...]) -> bool:
    return len(path) >= 3 and path[0] == "cameras" and path[2] == "privacy"


def broker_problems(current: AppConfig, new: AppConfig) -> List[Problem]:
    """Every field the change from ``current`` to ``new`` touches that the broker may not change."""
    problems: List[Problem] = (_synthetic_sources_added(current, new) + _privacy_changed(current, new))[:MAX_PROBLEMS]
    seen = {problem.loc for problem in problems}
    for path in _changed(config_to_dict(current), config_to_dict(new)):
        if _allowed(path) or _is_privacy(path):  # privacy: by camera id, above
            continue
        loc = ".".join(path) or "(the whole configuration)"
        if loc in seen:
            continue
        seen.add(loc)
        if len(problems) == MAX_PROBLEMS:
            problems.append(Problem("", "more fields the broker may not change are not listed"))
            break
        problems.append(Problem(loc, _WHY))
    return problems


__all__ = ["ALLOWED", "DENIED", "broker_problems"]
