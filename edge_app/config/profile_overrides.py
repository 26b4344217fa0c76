"""The configuration the appliance runs: the base with the active profile's overrides on top.

Pure: the file, the config API and every change keep the base (what the owner wrote); only the
running parts (analysis, recording, review, notifications) see the result. Built by copying the
validated sections, so no rule of the schema can be bypassed by a profile: it only switches
settings that already passed, and a zone switched off is left out as if it were not drawn.
"""
from __future__ import annotations

from typing import Optional

from edge_app.config.schema import AppConfig
from edge_app.config.schema_cameras import CameraConfig
from edge_app.config.schema_profiles import ProfileConfig, RecordMode

#: (event clips, continuous segments) of each recording mode
_RECORD_MODES = {"off": (False, False), "events": (True, False), "continuous": (False, True),
                 "events_and_continuous": (True, True)}


def _camera(cam: CameraConfig, profile: ProfileConfig) -> CameraConfig:
    update = {}
    if cam.id in profile.detect:
        update["detect"] = profile.detect[cam.id]
    if any(zone.name in profile.zones for zone in cam.zones):
        update["zones"] = [zone for zone in cam.zones if profile.zones.get(zone.name, True)]
    if profile.record is not None:
        update["record"] = _record(cam, profile.record)
    return cam.model_copy(update=update) if update else cam


def _record(cam: CameraConfig, mode: RecordMode):
    events, continuous = _RECORD_MODES[mode]
    return cam.record.model_copy(update={"enabled": events, "continuous": continuous})


def effective_config(config: AppConfig, name: Optional[str] = None) -> AppConfig:
    """``config`` with the overrides of the profile ``name`` (default: ``profiles.active``)."""
    profile = config.profiles.profile(config.profiles.active if name is None else name)
    if profile is None:
        return config
    update = {"cameras": [_camera(cam, profile) for cam in config.cameras]}
    if profile.alerts is not None:
        update["review"] = config.review.model_copy(update={"alerts": profile.alerts})
    if profile.quiet_hours is not None:
        targets = [target.model_copy(update={"quiet_hours": profile.quiet_hours})
                   for target in config.notifications.targets]
        update["notifications"] = config.notifications.model_copy(update={"targets": targets})
    return config.model_copy(update=update)


__all__ = ["effective_config"]
