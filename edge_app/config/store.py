"""Loading, validating, redacting, patching and atomically saving the configuration."""
from __future__ import annotations

import copy
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

import yaml
from pydantic import ValidationError

from edge_app.config.schema import AppConfig
from edge_app.redact import MASK as REDACTED, mask_secrets

SECRET_PATHS = (("mqtt", "password"), ("api", "token"), ("fleet", "desired_key"))


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


def _problems_from(err: ValidationError) -> List[Problem]:
    problems = []
    for item in err.errors(include_url=False):
        loc = ".".join(str(part) for part in item.get("loc", ()))
        msg = item.get("msg", "invalid value")
        if item.get("type") == "extra_forbidden":
            msg = "unknown key (check the spelling)"
        elif msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
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
        raise ConfigError(_problems_from(err), source) from None


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
    return config.model_dump(mode="json")


def save_config(config: AppConfig, path: Union[str, Path]) -> None:
    """Write atomically: a temp file in the same directory, fsync, then rename over the old one.

    A power cut mid-write leaves either the old file or the new one, never half of each.
    """
    path = Path(path)
    text = yaml.safe_dump(config_to_dict(config), sort_keys=False, default_flow_style=False)
    directory = path.parent if str(path.parent) else Path(".")
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if path.exists():
            os.chmod(tmp_name, path.stat().st_mode & 0o777)
        os.replace(tmp_name, path)
    except BaseException:
        try:
            os.unlink(tmp_name)
        except FileNotFoundError:
            pass
        raise
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def redacted_dict(config: AppConfig) -> Dict[str, Any]:
    """The configuration as the API shows it: secrets as "***", credentials in sources masked."""
    data = config_to_dict(config)
    for section, key in SECRET_PATHS:
        if data.get(section, {}).get(key) is not None:
            data[section][key] = REDACTED
    for cam in data.get("cameras", []):
        cam["source"] = mask_secrets(cam["source"])
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
