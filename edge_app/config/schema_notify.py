"""The ``notifications`` section: where an alert is announced (docs/notifications.md).

Targets and their secrets are the file's alone: neither the REST API nor ``R/config/desired`` may
change this section (``edge_app.config.policy``, ``edge_app.config.remote_policy``), so a
configuration write can never point a notification, and the secret that signs it, somewhere new.
"""
from __future__ import annotations

import re
from typing import List, Literal, Optional

from pydantic import Field, field_validator, model_validator

from edge_app.config.model_names import LocatedError
from edge_app.config.schema_rules import _CONTROL_CHARS, ID_PATTERN, _Strict

MAX_TARGETS = 16
#: the keys of a target that hold secrets: shown as "***" by the API
TARGET_SECRET_KEYS = ("secret", "token")
MIN_SECRET_CHARS = 16
#: the signed clip link of a notification (edge_app.notify.clip_links): 12 h by default, a week at most
DEFAULT_LINK_TTL_S = 12 * 3600
MIN_LINK_TTL_S = 60
MAX_LINK_TTL_S = 7 * 86400
MAX_SECRET_CHARS = 1024
_HHMM = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")
# http(s)://host[:port][/path], no user name (a password in it would be shown and logged), no fragment.
_TARGET_URL = re.compile(r"^https?://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?(/[^\s#?]*)?(\?[^\s#]*)?$")
_BASE_URL = re.compile(r"^https?://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?(/[^\s#?]*)?$")


def minute_of_day(hhmm: str) -> int:
    """``"22:30"`` -> 1350."""
    match = _HHMM.match(hhmm)
    if match is None:
        raise ValueError(f"{hhmm!r} is not a time of day as HH:MM (00:00 to 23:59)")
    return int(match.group(1)) * 60 + int(match.group(2))


class QuietHoursConfig(_Strict):
    """A daily period, in the appliance's local time, in which no notification goes out."""

    start: str = Field(title="From (HH:MM)", description="Local time; quiet from this minute on")
    end: str = Field(title="Until (HH:MM)", description="Local time; quiet until this minute. Before start: "
                                                        "the period spans midnight (22:00 to 07:00)")

    @field_validator("start", "end")
    @classmethod
    def _time_of_day(cls, value: str) -> str:
        minute_of_day(value)
        return value

    @model_validator(mode="after")
    def _not_empty(self) -> "QuietHoursConfig":
        if self.start == self.end:
            raise ValueError("quiet_hours.start and quiet_hours.end are the same minute: leave quiet_hours out "
                             "instead of a period of no length")
        return self


class NotifyTargetConfig(_Strict):
    """One receiver of notifications: a webhook (signed JSON) or an ntfy topic."""

    name: str = Field(title="Target name", pattern=ID_PATTERN, description="Unique; names the target in status and "
                                                                            "its delivery thread notify:<name>")
    type: Literal["webhook", "ntfy"] = Field(title="Type", description="webhook: JSON POSTed, signed with secret; "
                                                                       "ntfy: a message published to an ntfy topic")
    url: str = Field(title="URL", min_length=1, max_length=2048,
                     description="webhook: where the JSON is POSTed; ntfy: the topic's URL (https://ntfy.example/topic)")
    secret: Optional[str] = Field(
        None, title="Signing secret",
        description=f"webhook (required): HMAC-SHA256 key of X-Edge-App-Signature, at least {MIN_SECRET_CHARS} characters")
    token: Optional[str] = Field(None, title="Access token", description="ntfy: sent as Authorization: Bearer <token>")
    cameras: List[str] = Field(default_factory=list, title="Cameras", max_length=64,
                               description="Camera ids whose alerts go here; empty = every camera")
    cooldown_s: float = Field(60.0, title="Cooldown per camera (s)", ge=0, le=86400, allow_inf_nan=False,
                              description="After a notification for a camera, its next alert waits this long")
    quiet_hours: Optional[QuietHoursConfig] = Field(None, title="Quiet hours")
    attach_snapshot: bool = Field(
        False, title="Attach the snapshot",
        description="ntfy: send the event's JPEG as an attachment (the ntfy server must allow attachments); "
                    "webhook: include it in the JSON as base64")
    timeout_s: float = Field(5.0, title="Request timeout (s)", gt=0, le=60, allow_inf_nan=False)
    retries: int = Field(3, title="Retries", ge=0, le=10, description="Attempts after a failed one, each after "
                                                                      "twice the wait of the one before")
    retry_initial_s: float = Field(1.0, title="First retry after (s)", gt=0, le=600, allow_inf_nan=False)
    queue_size: int = Field(32, title="Queue size", ge=1, le=1000,
                            description="Notifications waiting for delivery at most; more are dropped and counted")

    @field_validator("url")
    @classmethod
    def _url_form(cls, value: str) -> str:
        if not _TARGET_URL.match(value):
            raise ValueError("must be http(s)://host[:port][/path] without a user name or password")
        return value

    @field_validator("secret", "token")
    @classmethod
    def _secret_chars(cls, value: Optional[str]) -> Optional[str]:
        if value is None:
            return value
        if len(value) > MAX_SECRET_CHARS or not value.strip() or _CONTROL_CHARS.search(value) or " " in value:
            raise ValueError(f"may have at most {MAX_SECRET_CHARS} characters and no spaces nor control characters")
        return value

    @model_validator(mode="after")
    def _secrets_of_the_type(self) -> "NotifyTargetConfig":
        if self.type == "webhook":
            if self.secret is None or len(self.secret) < MIN_SECRET_CHARS:
                raise ValueError(f"a webhook needs secret, at least {MIN_SECRET_CHARS} characters "
                                 "(openssl rand -hex 32): receivers check the signature with it")
            if self.token is not None:
                raise ValueError("token is for ntfy targets; a webhook is signed with secret")
        elif self.secret is not None:
            raise ValueError("secret is for webhook targets; ntfy takes token")
        return self


class NotificationsConfig(_Strict):
    """Notifications when an alert starts; settable only in the configuration file."""

    base_url: Optional[str] = Field(
        None, title="Appliance URL for links",
        description="How receivers reach this appliance's API (https://camera-box.lan:8080), http or https: "
                    "links to the snapshot and the signed clip link are made from it; left out, notifications "
                    "carry no links")
    link_ttl_s: int = Field(
        DEFAULT_LINK_TTL_S, title="Clip link lifetime (s)", ge=MIN_LINK_TTL_S, le=MAX_LINK_TTL_S,
        description="How long the signed clip link of a notification works without the API token; a push "
                    "read the next morning still opens the clip with the default")
    targets: List[NotifyTargetConfig] = Field(default_factory=list, title="Targets", max_length=MAX_TARGETS)

    @field_validator("base_url")
    @classmethod
    def _base_url(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and not _BASE_URL.match(value):
            raise ValueError("must be http(s)://host[:port][/path] without a user name, query or fragment")
        return None if value is None else value.rstrip("/")

    @field_validator("targets")
    @classmethod
    def _unique_names(cls, value: List[NotifyTargetConfig]) -> List[NotifyTargetConfig]:
        seen = set()
        for index, target in enumerate(value):
            if target.name in seen:
                raise ValueError(f"targets[{index}]: the name {target.name!r} is used twice")
            seen.add(target.name)
        return value


def check_target_cameras(notifications: NotificationsConfig, camera_ids: List[str]) -> None:
    """``LocatedError`` for the first camera a target names that is not configured."""
    for ti, target in enumerate(notifications.targets):
        for ci, camera_id in enumerate(target.cameras):
            if camera_id not in camera_ids:
                raise LocatedError(f"notifications.targets.{ti}.cameras.{ci}",
                                   f"there is no camera {camera_id!r} (cameras: {', '.join(camera_ids) or 'none'})")
