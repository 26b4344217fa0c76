"""The ``fleet`` section: whether and how the fleet service may configure this appliance, and
where its model files and engines come from (docs/fleet.md)."""
from __future__ import annotations

import re
from typing import Optional

from pydantic import Field, field_validator, model_validator

from edge_app.config.schema_rules import _CONTROL_CHARS, MIN_TOKEN_CHARS, _Strict, is_loopback_host

#: A shorter desired-message key is guessable off-line from one captured signed message.
MIN_DESIRED_KEY_CHARS = 32
MAX_DESIRED_KEY_CHARS = 1024


class FleetConfig(_Strict):
    """docs/fleet.md, "Who may configure an appliance": whether and how ``R/config/desired`` may change this appliance."""

    remote_config: bool = Field(
        False, title="Remote configuration",
        description="Act on R/config/desired from the fleet service; needs desired_key or a broker that requires a login",
    )
    # Length checked in the validator, not the field: the API shows the key as "***" (documented schema).
    desired_key: Optional[str] = Field(
        None, title="Desired-configuration key",
        description=f"Shared secret (at least {MIN_DESIRED_KEY_CHARS} characters, e.g. openssl rand -hex 32); "
                    "when set, only desired configurations the fleet service signed with it are acted on",
    )

    url: Optional[str] = Field(
        None, title="Fleet service URL",
        description="https://host:port of the fleet service, for model files and engines; http only for 127.0.0.1, "
                    "::1 and localhost")
    # Length checked in the validator, not the field: the API shows the token as "***" (documented schema).
    token: Optional[str] = Field(
        None, title="Fleet token",
        description=f"This device's bearer token on the fleet service (at least {MIN_TOKEN_CHARS} characters)")
    ca_certs: Optional[str] = Field(None, title="Fleet CA certificates",
                                    description="PEM file of a private CA that signed the fleet service's certificate")
    # Bounded both ways: a device booted during an outage must not hammer the service, nor wait for hours.
    fallback_retry_s: float = Field(
        30, title="Fetch again after (s)", ge=1, le=3600, allow_inf_nan=False,
        description="A model that runs its path because its fleet version could not be fetched at start asks the "
                    "fleet service again after this long, then after twice as long each time")
    fallback_retry_max_s: float = Field(
        600, title="Fetch again at most every (s)", ge=1, le=86400, allow_inf_nan=False,
        description="The longest wait between two such attempts (at least fallback_retry_s)")

    @model_validator(mode="after")
    def _retry_order(self) -> "FleetConfig":
        if self.fallback_retry_max_s < self.fallback_retry_s:
            raise ValueError("fleet.fallback_retry_max_s must be at least fleet.fallback_retry_s")
        return self

    @field_validator("url")
    @classmethod
    def _url_form(cls, value: Optional[str]) -> Optional[str]:
        return _fleet_url(value)

    @field_validator("token")
    @classmethod
    def _token_chars(cls, value: Optional[str]) -> Optional[str]:
        if value is None:
            return value
        if not MIN_TOKEN_CHARS <= len(value) <= MAX_DESIRED_KEY_CHARS:
            raise ValueError(f"fleet.token must have {MIN_TOKEN_CHARS} to {MAX_DESIRED_KEY_CHARS} characters")
        if not value.strip() or _CONTROL_CHARS.search(value) or " " in value:
            raise ValueError("fleet.token may not contain spaces nor control characters")
        return value

    @field_validator("desired_key")
    @classmethod
    def _key_chars(cls, value: Optional[str]) -> Optional[str]:
        if value is None:
            return value
        if not MIN_DESIRED_KEY_CHARS <= len(value) <= MAX_DESIRED_KEY_CHARS:
            raise ValueError(f"desired_key must have {MIN_DESIRED_KEY_CHARS} to {MAX_DESIRED_KEY_CHARS} characters "
                             "(openssl rand -hex 32)")
        if not value.strip() or _CONTROL_CHARS.search(value):
            raise ValueError("desired_key may not be blank nor contain control characters")
        return value


def _fleet_url(value: Optional[str]) -> Optional[str]:
    if value is None:
        return value
    match = re.match(r"^(https?)://(\[[^\]]+\]|[^/:?#@\s]+)(:\d{1,5})?/?$", value)
    if match is None:
        raise ValueError("fleet.url must be https://host[:port] (no path, no user name)")
    if match.group(1) == "http" and not is_loopback_host(match.group(2)):
        raise ValueError("fleet.url must use https unless the fleet service runs on this machine (127.0.0.1, ::1, localhost)")
    return value.rstrip("/")
