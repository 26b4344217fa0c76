"""The ``review`` section: how events become review items and which items are alerts
(docs/notifications.md, "Review items and alerts").

An event is an *alert* when its label is one of ``alerts.labels`` and it entered one of
``alerts.zones``; an empty list matches everything, as elsewhere in the configuration (``events.labels``,
``zones[].labels``). So with both lists empty every event is an alert: ``events.labels`` already chose
what is worth an event, and an appliance that says nothing more should not hide any of it. A camera's
``review.alerts``, when given, replaces the device's rules for that camera.
"""
from __future__ import annotations

import re
from typing import Dict, Iterable, List, Optional

from pydantic import Field, field_validator

from edge_app.config.model_names import LocatedError
from edge_app.config.schema_rules import ID_PATTERN, MAX_AREA_LABELS, _clean_labels, _Strict

MAX_ALERT_ZONES = 64
MAX_REVIEW_GAP_S = 3600.0


class ReviewAlertsConfig(_Strict):
    """Which events make a review item an alert (the others are detections)."""

    labels: List[str] = Field(
        default_factory=list, title="Alert labels", max_length=MAX_AREA_LABELS,
        description="An event of one of these labels is an alert; empty = every label. Checked against the "
                    "labels of the camera's model by check-config")
    zones: List[str] = Field(
        default_factory=list, title="Alert zones", max_length=MAX_ALERT_ZONES,
        description="An event that entered one of these zones is an alert; empty = anywhere. Each must be a zone "
                    "of the camera (of some camera for the device's rules)")

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: List[str]) -> List[str]:
        return _clean_labels(value)

    @field_validator("zones")
    @classmethod
    def _zone_names(cls, value: List[str]) -> List[str]:
        for index, name in enumerate(value):
            if not re.match(ID_PATTERN, name):
                raise ValueError(f"zones[{index}]: {name[:64]!r} is not a zone name ({ID_PATTERN})")
        return value


class ReviewConfig(_Strict):
    """Events of one camera that overlap or follow each other closely form one review item."""

    gap_s: float = Field(
        30.0, title="Gap between events (s)", ge=0, le=MAX_REVIEW_GAP_S, allow_inf_nan=False,
        description="An event that starts within this long after the camera's previous events ended joins their "
                    "review item; overlapping events always do")
    alerts: ReviewAlertsConfig = Field(default_factory=ReviewAlertsConfig, title="Alerts")


class CameraReviewConfig(_Strict):
    """A camera's own alert rules."""

    alerts: Optional[ReviewAlertsConfig] = Field(
        None, title="Alerts", description="This camera's alert rules in place of review.alerts; left out: review.alerts")


def check_alert_zones(review: ReviewConfig, cameras: Iterable[object]) -> None:
    """``LocatedError`` for the first alert zone that names no zone where it applies."""
    cameras = list(cameras)
    every_zone = {zone.name for cam in cameras for zone in cam.zones}
    for index, name in enumerate(review.alerts.zones):
        if name not in every_zone:
            known = ", ".join(sorted(every_zone)) or "none"
            raise LocatedError(f"review.alerts.zones.{index}",
                               f"no camera has a zone named {name!r} (zones: {known})")
    for ci, cam in enumerate(cameras):
        alerts = cam.review.alerts
        if alerts is None:
            continue
        own = {zone.name for zone in cam.zones}
        for index, name in enumerate(alerts.zones):
            if name not in own:
                known = ", ".join(sorted(own)) or "none"
                raise LocatedError(f"cameras.{ci}.review.alerts.zones.{index}",
                                   f"camera {cam.id!r} has no zone named {name!r} (its zones: {known})")


def alert_label_problems(review: ReviewConfig, cameras: Iterable[object],
                         labels_of_model: Dict[str, Optional[List[str]]]) -> List[LocatedError]:
    """Alert labels no model of the cameras they apply to knows.

    ``labels_of_model``: the labels of each model by name; None where they could not be read (that
    is reported elsewhere, and nothing is checked against it).
    """
    problems: List[LocatedError] = []
    cameras = list(cameras)
    device_wide = [cam for cam in cameras if cam.review.alerts is None]
    known_device = [labels_of_model.get(cam.model) for cam in device_wide]
    if review.alerts.labels and known_device and all(labels is not None for labels in known_device):
        union = {label for labels in known_device for label in labels}
        for index, label in enumerate(review.alerts.labels):
            if label not in union:
                problems.append(LocatedError(f"review.alerts.labels.{index}",
                                             f"no model of the cameras without their own review.alerts knows the "
                                             f"label {label!r}"))
    for ci, cam in enumerate(cameras):
        alerts, known = cam.review.alerts, labels_of_model.get(cam.model)
        if alerts is None or known is None:
            continue
        for index, label in enumerate(alerts.labels):
            if label not in known:
                problems.append(LocatedError(f"cameras.{ci}.review.alerts.labels.{index}",
                                             f"the model {cam.model!r} of camera {cam.id!r} has no label {label!r}"))
    return problems
