"""The one way a running appliance's configuration is changed, whoever asks for it.

``PUT``/``PATCH /api/v1/config``, the per-camera routes and the fleet's ``R/config/desired``
messages all build a whole configuration and hand it to :meth:`ConfigChanges.write`, so the rules
apply to every one of them alike and live in one place: secrets are re-used only where they went
before, the schema, what a remote client may change (SPEC.md "What the API may change"), what
this machine can run, then the appliance applies and saves. A refusal at any step raises
:class:`ConfigRefused` with every problem located in the full configuration, and nothing changed.

Origins: a change from the MQTT broker (``Origin.BROKER``) follows the rules of the API with one
difference: ``api.allow_unsafe_sources: true`` in the file does not lift the limits for it. That
setting says the *local network's API clients* are trusted; the broker is a fleet-wide channel
where one account (or one compromised fleet service) reaches every appliance at once, so it can
never bring in ``gst:``/``csi://`` sources or files outside the configured folders.
"""
from __future__ import annotations

import enum
import logging
import threading
from pathlib import Path
from typing import Any, Callable, List

from edge_app.checks import check_runtime
from edge_app.config.policy import unsafe_changes
from edge_app.config.remote_policy import broker_problems
from edge_app.config.schema import AppConfig
from edge_app.config.secrets import misdirected_secrets, restore_secrets
from edge_app.config.store import ConfigError, Problem, merge_patch, parse_config, redacted_dict
from edge_app.service import ApplianceService, ApplyResult

logger = logging.getLogger(__name__)

#: Builds the whole new configuration (unvalidated, secrets possibly masked) from the running one.
ConfigBuilder = Callable[[AppConfig], Any]
#: Checks a valid configuration against this machine (model file, labels, certificates, ...).
RuntimeCheck = Callable[..., List[Problem]]


class Origin(enum.Enum):
    API = "api"
    BROKER = "broker"


class ConfigRefused(Exception):
    """A change refused before anything was saved or applied: ``what`` went wrong, every problem."""

    def __init__(self, what: str, problems: List[Problem]) -> None:
        super().__init__(what)
        self.what = what
        self.problems = list(problems) or [Problem("", "unknown problem")]

    def summary(self) -> str:
        more = len(self.problems) - 1
        return f"{self.what}: {self.problems[0]}" + (f" (and {more} more problem{'s' if more > 1 else ''})" if more else "")


class ConfigChanges:
    """Validates and applies configuration changes one at a time, for every origin."""

    def __init__(self, service: ApplianceService, config_getter: Callable[[], AppConfig],
                 runtime_check: RuntimeCheck = check_runtime) -> None:
        self._service = service
        self._config_getter = config_getter
        self._runtime_check = runtime_check
        # Read-modify-apply must not interleave: two concurrent writes (a config PATCH and a
        # desired configuration from the fleet, say) would otherwise both start from the same
        # configuration and the second would silently undo the first.
        self._lock = threading.Lock()

    def current(self) -> AppConfig:
        return self._config_getter()

    def write(self, build: ConfigBuilder, origin: Origin = Origin.API) -> ApplyResult:
        """Build the new configuration from the running one, under the lock, and apply it.

        ``build`` may raise (an unknown camera, a conflict); nothing has changed then either.
        """
        with self._lock:
            current = self._config_getter()
            return self._validate_and_apply(build(current), current, origin)

    def patch(self, patch: Any, origin: Origin = Origin.API) -> ApplyResult:
        """Apply an RFC 7396 merge patch (``PATCH /api/v1/config``, ``R/config/desired``).

        The patch applies to the view a client sees, secrets masked, and goes through the same
        re-entry rule as a whole configuration: a patch that moves the broker without the
        password is refused rather than sending the stored password to the new broker.
        """
        return self.write(lambda current: merge_patch(redacted_dict(current), patch), origin)

    def _validate_and_apply(self, data: Any, current: AppConfig, origin: Origin) -> ApplyResult:
        """Everything is checked before the appliance sees the change: all or nothing."""
        # A client that GETs, edits and sends back sends "***" for secrets: they are filled in
        # from the running configuration where their destination did not change.
        data, restored, problems = restore_secrets(data, current)
        if problems:
            raise ConfigRefused("the configuration is refused", problems)
        try:
            new_config = parse_config(data, strict_json=True)
        except ConfigError as err:
            raise ConfigRefused("the configuration is invalid", err.problems) from None
        honour_file = origin is Origin.API
        problems = (misdirected_secrets(new_config, current, restored)
                    + unsafe_changes(current, new_config, Path.cwd(), honour_allow_unsafe=honour_file)
                    + (broker_problems(current, new_config) if origin is Origin.BROKER else []))
        if problems:
            raise ConfigRefused("the configuration is refused", problems)
        problems = self._runtime_check(new_config, previous=current)
        if problems:
            raise ConfigRefused("the configuration cannot run here", problems)
        try:
            result = self._service.apply_config(new_config)
        except ConfigError as err:
            raise ConfigRefused("the configuration cannot be applied", err.problems) from None
        if result.restart_required:
            logger.info("configuration applied (%s); these settings take effect after a restart: %s",
                        origin.value, ", ".join(result.restart_required))
        else:
            logger.info("configuration applied (%s)", origin.value)
        return result


__all__ = ["ConfigBuilder", "ConfigChanges", "ConfigRefused", "Origin"]
