"""Putting stored secrets back where a client sent ``***``, but never towards a new destination.

``GET /api/v1/config`` shows secrets masked, and a client that edits and sends that view back
means "keep the secret". The server may only fill it in while the secret still goes where it
went before: otherwise ``PATCH {"mqtt": {"port": <attacker's broker>}}`` would make the appliance
log in to the attacker with the real password. A change of destination must carry the secret
again, so only someone who knows it can send it somewhere new.
"""
from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any, List, Optional, Tuple

from edge_app.config.schema import AppConfig
from edge_app.config.file import SECRET_PATHS, Problem
from edge_app.config.schema_notify import TARGET_SECRET_KEYS
from edge_app.config.redact import MASK, unmask

_URL = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?:[^\s?#]*@)?(?P<host>[^/?#\s]*)", re.DOTALL)


@dataclass(frozen=True)
class RestoredSecret:
    """A secret filled in from the running configuration: where, and for which camera."""

    loc: str
    camera_id: Optional[str] = None


def _again(loc: str, why: str) -> Problem:
    return Problem(loc, f"must carry the secret again ({why}); \"{MASK}\" stands for a secret that is only "
                        "re-used where it was used before")


def source_destination(source: str) -> str:
    """Where a source connects to: ``scheme://host:port`` for URLs, the masked text otherwise."""
    match = _URL.match(source.strip())
    if match is None:
        return source.strip()
    return f"{match.group('scheme').lower()}://{match.group('host').lower()}"


def restore_secrets(data: Any, current: AppConfig) -> Tuple[Any, List[RestoredSecret], List[Problem]]:
    """(data with stored secrets in place of ``***``, what was filled in, problems).

    ``data`` is an unvalidated body; anything that is not shaped like a configuration is passed
    through for the schema to report.
    """
    if not isinstance(data, dict):
        return data, [], []
    data = copy.deepcopy(data)
    restored: List[RestoredSecret] = []
    problems: List[Problem] = []
    for section, key in SECRET_PATHS:
        stored = getattr(getattr(current, section), key)
        block = data.get(section)
        if isinstance(block, dict) and block.get(key) == MASK:
            block[key] = stored
            restored.append(RestoredSecret(f"{section}.{key}"))
    restored += _restore_target_secrets(data, current)
    old_sources = {cam.id: cam.source for cam in current.cameras}
    cameras = data.get("cameras")
    for index, cam in enumerate(cameras if isinstance(cameras, list) else []):
        if not (isinstance(cam, dict) and isinstance(cam.get("source"), str) and MASK in cam["source"]):
            continue
        loc = f"cameras.{index}.source"
        old = old_sources.get(cam.get("id")) if isinstance(cam.get("id"), str) else None
        filled = unmask(cam["source"], old) if old is not None else None
        if filled is None:
            problems.append(_again(loc, "the masked part does not match this camera's stored source"))
            continue
        cam["source"] = filled
        restored.append(RestoredSecret(loc, cam["id"]))
    return data, restored, problems


def _restore_target_secrets(data: dict, current: AppConfig) -> List[RestoredSecret]:
    """``***`` in a notification target's secret or token: the stored one of the target of that name.

    Safe without a destination check: no write through the API or the broker may change the
    notifications section at all (``edge_app.config.policy``), so a restored secret either goes back
    exactly where it was or the whole change is refused.
    """
    restored: List[RestoredSecret] = []
    block = data.get("notifications")
    targets = block.get("targets") if isinstance(block, dict) else None
    stored = {target.name: target for target in current.notifications.targets}
    for index, target in enumerate(targets if isinstance(targets, list) else []):
        if not isinstance(target, dict) or not isinstance(target.get("name"), str):
            continue
        old = stored.get(target["name"])
        for key in TARGET_SECRET_KEYS:
            if target.get(key) == MASK and old is not None and getattr(old, key) is not None:
                target[key] = getattr(old, key)
                restored.append(RestoredSecret(f"notifications.targets.{index}.{key}"))
    return restored


def misdirected_secrets(new: AppConfig, current: AppConfig, restored: List[RestoredSecret]) -> List[Problem]:
    """Problems for restored secrets whose destination changed."""
    problems: List[Problem] = []
    old_cams = {cam.id: cam for cam in current.cameras}
    for item in restored:
        if item.loc == "mqtt.password" and new.mqtt.password is not None:
            old, now = current.mqtt, new.mqtt
            if (old.host, old.port, old.tls) != (now.host, now.port, now.tls):
                problems.append(_again(item.loc, "mqtt.host, mqtt.port or mqtt.tls changed"))
        elif item.loc == "fleet.token" and new.fleet.token is not None:
            # The token opens this device's downloads: it goes to the fleet service it was set for.
            if (current.fleet.url, current.fleet.ca_certs) != (new.fleet.url, new.fleet.ca_certs):
                problems.append(_again(item.loc, "fleet.url or fleet.ca_certs changed"))
        elif item.camera_id is not None:
            cam, old_cam = new.camera(item.camera_id), old_cams.get(item.camera_id)
            if cam is None or old_cam is None or source_destination(cam.source) != source_destination(old_cam.source):
                problems.append(_again(item.loc, "the source's scheme, host or port changed"))
    return problems


__all__ = ["RestoredSecret", "misdirected_secrets", "restore_secrets", "source_destination"]
