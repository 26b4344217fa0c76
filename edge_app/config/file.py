"""Loading, validating, redacting, patching and atomically saving the configuration."""
from __future__ import annotations

import copy
import difflib
import json
import logging
import os
import stat
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Type, Union

import yaml
from pydantic import BaseModel, ValidationError

from edge_app.config.schema_notify import TARGET_SECRET_KEYS
from edge_app.config.schema import AppConfig
from edge_app.config.redact import MASK as REDACTED, mask_secrets
from edge_app.process.atomic_file import temp_name_pattern, write_atomic

log = logging.getLogger(__name__)

SECRET_PATHS = (("mqtt", "password"), ("api", "token"), ("fleet", "desired_key"), ("fleet", "token"))


@dataclass(frozen=True)
class Problem:
    loc: str
    msg: str

    def as_dict(self) -> Dict[str, str]:
        return {"loc": self.loc, "msg": self.msg}

    def __str__(self) -> str:
        return f"{self.loc}: {self.msg}" if self.loc else self.msg


class ConfigError(Exception):
    """An invalid configuration: every problem with the dotted path of its field."""

    def __init__(self, problems: List[Problem], source: Optional[str] = None):
        self.problems = problems
        self.source = source
        where = f"{source}: " if source else ""
        super().__init__(where + "; ".join(str(p) for p in problems))


def _model_at(model: Optional[Type[BaseModel]], path: Sequence[Any]) -> Optional[Type[BaseModel]]:
    """The model class that validates the mapping at ``path`` below ``model``, or None when unsure."""
    for part in path:
        if model is None or isinstance(part, int):  # a list index: the list's item type was taken already
            continue
        field = model.model_fields.get(str(part))
        if field is None:
            return None
        model = _model_in(field.annotation)
    return model


def _model_in(annotation: Any) -> Optional[Type[BaseModel]]:
    """The one model class inside an annotation such as ``List[Zone]`` or ``Optional[TlsConfig]``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    found = [m for m in (_model_in(arg) for arg in typing.get_args(annotation)) if m is not None]
    return found[0] if len(found) == 1 else None


def _unknown_key(model: Optional[Type[BaseModel]], loc: Sequence[Any]) -> str:
    parent = _model_at(model, loc[:-1]) if loc else None
    known = list(parent.model_fields) if parent is not None else []
    near = difflib.get_close_matches(str(loc[-1]), known, n=1) if known else []
    return f"unknown key (did you mean {near[0]}?)" if near else "unknown key (check the spelling)"


def _problems_from(err: ValidationError, model: Optional[Type[BaseModel]] = None) -> List[Problem]:
    """One Problem per error; ``model``, the class validated, lets an unknown key name the nearest known one."""
    problems = []
    for item in err.errors(include_url=False):
        loc = ".".join(str(part) for part in item.get("loc", ()))
        msg = item.get("msg", "invalid value")
        if item.get("type") == "extra_forbidden":
            msg = _unknown_key(model, tuple(item.get("loc", ())))
        elif msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        located = getattr((item.get("ctx") or {}).get("error"), "loc", None)
        if not loc and isinstance(located, str):
            loc = located  # a rule across sections (model names) names the key it is about
        problems.append(Problem(loc, msg))
    return problems


#: For other configuration files (the fleet service's) that report problems the same way.
problems_from = _problems_from


def parse_config(data: Any, source: Optional[str] = None, *, strict_json: bool = False) -> AppConfig:
    """Validate a plain mapping; raise ConfigError listing every problem.

    ``strict_json`` takes values with the JSON types the schema states, for the REST API whose
    clients send JSON: ``"5"`` is no number there and ``0`` no boolean. A YAML file written by
    hand keeps pydantic's conversions.
    """
    if not isinstance(data, dict):
        raise ConfigError([Problem("", "the configuration must be a mapping of keys to values")], source)
    try:
        if strict_json:
            return AppConfig.model_validate_json(json.dumps(data), strict=True)
        return AppConfig.model_validate(data)
    except ValidationError as err:
        raise ConfigError(_problems_from(err, AppConfig), source) from None


def read_yaml(path: Union[str, Path]) -> Any:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError([Problem("", f"config file {path} does not exist")], str(path)) from None
    except OSError as err:
        raise ConfigError([Problem("", f"cannot read {path}: {err.strerror}")], str(path)) from None
    try:
        return yaml.safe_load(text) or {}
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError([Problem("", f"not valid YAML{where}: {getattr(err, 'problem', err)}")], str(path)) from None


def load_config(path: Union[str, Path]) -> AppConfig:
    return parse_config(read_yaml(path), str(path))


def config_to_dict(config: AppConfig) -> Dict[str, Any]:
    data = config.model_dump(mode="json")
    # A configuration with one model is written as it was read: no empty models list, no model: null.
    if not data.get("models"):
        data.pop("models", None)
    if data.get("model", 0) is None:
        data.pop("model")
    return data


def save_config(config: AppConfig, path: Union[str, Path]) -> None:
    """Write atomically: a temp file in the same directory, fsync, then rename over the old one.

    A power cut mid-write leaves either the old file or the new one, never half of each.
    """
    text = yaml.safe_dump(config_to_dict(config), sort_keys=False, default_flow_style=False)
    write_atomic(Path(path), text.encode("utf-8"))


class ConfigFile:
    """The file a running configuration is saved to, and put back as it was when applying fails."""

    def __init__(self, path: Union[str, Path]) -> None:
        self.path = Path(path)

    def save(self, config: AppConfig) -> Optional[bytes]:
        """Save ``config``; what the file held before (None: there was no file), for :meth:`restore`."""
        try:
            previous: Optional[bytes] = self.path.read_bytes()
        except FileNotFoundError:
            previous = None
        save_config(config, self.path)
        return previous

    def restore(self, previous: Optional[bytes]) -> None:
        """Put back what :meth:`save` returned, byte for byte."""
        if previous is None:
            self.path.unlink(missing_ok=True)
        else:
            write_atomic(self.path, previous)


def remove_stale_temp_files(path: Union[str, Path]) -> List[Path]:
    """Remove what saves of ``path`` that never finished (a power cut, a kill) left beside it.

    Such a file is a whole configuration, token and passwords included (mode 0600, but still a
    copy nobody knows of). Only regular files named as ``save_config`` names them go: never a
    link, a folder, nor another program's file. Returns the files removed.
    """
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    own = temp_name_pattern(path)
    removed: List[Path] = []
    try:
        names = sorted(name for name in os.listdir(directory) if own.fullmatch(name))
    except OSError as err:
        log.warning("cannot look for unfinished saves of %s: %s", path, err)
        return removed
    for name in names:
        stale = directory / name
        try:
            if not stat.S_ISREG(os.lstat(stale).st_mode):
                continue
            stale.unlink()
        except OSError as err:
            log.warning("cannot remove %s, left by a save of the configuration that did not finish: %s", stale, err)
            continue
        log.warning("removed %s, left by a save of the configuration that did not finish", stale)
        removed.append(stale)
    return removed


def redacted_dict(config: AppConfig) -> Dict[str, Any]:
    """The configuration as the API shows it: secrets as "***", credentials in sources masked."""
    data = config_to_dict(config)
    for section, key in SECRET_PATHS:
        if data.get(section, {}).get(key) is not None:
            data[section][key] = REDACTED
    for cam in data.get("cameras", []):
        cam["source"] = mask_secrets(cam["source"])
    for target in data.get("notifications", {}).get("targets", []):
        for key in TARGET_SECRET_KEYS:
            if target.get(key) is not None:
                target[key] = REDACTED
    return data


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7396 JSON merge patch: objects merge recursively, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result
