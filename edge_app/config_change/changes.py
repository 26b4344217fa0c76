"""The one way a running appliance's configuration is changed, whoever asks for it.

``PUT``/``PATCH /api/v1/config``, the per-camera routes, the fleet's ``R/config/desired``
messages and the MQTT detect switch all build a whole configuration and hand it to
:meth:`ConfigChanges.write`, so the rules apply to every one of them alike and live in one place:
secrets are re-used only where they went before, the schema, what a remote client may change
(docs/configuration.md, "What the API may change"), what this machine can run; then the file is saved and the
appliance applies. A model that could not be loaded is put back in the configuration the same
way (:meth:`ConfigChanges.revert_model`). One lock orders them all: a change is built from the
configuration the previous one left, never from a stale copy.

All or nothing: a refusal at any step raises :class:`ConfigRefused` with every problem located in
the full configuration, and nothing changed. When applying fails after the file was saved, the
file gets its previous bytes back and the appliance its previous configuration.

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, List, Optional, Sequence

from edge_app.config_change.checks import check_runtime
from edge_app.config.exposure import token_problems
from edge_app.config.policy import unsafe_changes
from edge_app.config.remote_policy import broker_problems
from edge_app.config.schema import AppConfig, ModelConfig
from edge_app.config.secrets import misdirected_secrets, restore_secrets
from edge_app.config.file import ConfigError, ConfigFile, Problem, merge_patch, parse_config, redacted_dict
from edge_app.config.model_patch import resolve_model_addresses
from edge_app.reporting.protocol import ApplyResult

logger = logging.getLogger(__name__)

#: Builds the whole new configuration (unvalidated, secrets possibly masked) from the running one.
ConfigBuilder = Callable[[AppConfig], Any]
#: Checks a valid configuration against this machine (model file, labels, certificates, ...).
RuntimeCheck = Callable[..., List[Problem]]


class Origin(enum.Enum):
    API = "api"
    BROKER = "broker"
    DETECT_SWITCH = "detect switch"  # R/cameras/<id>/detect/set, from the broker too
    PROFILE_SWITCH = "profile switch"  # R/profile/set, from the broker too (docs/profiles.md)
    SCHEDULE = "profile schedule"  # the weekly schedule of profiles, on this appliance
    MODEL_RELOAD = "model reload"  # a model that could not be loaded goes back out of the configuration


class ConfigRefused(Exception):
    """A change refused before anything was saved or applied: ``what`` went wrong, every problem."""

    def __init__(self, what: str, problems: List[Problem]) -> None:
        super().__init__(what)
        self.what = what
        self.problems = list(problems) or [Problem("", "unknown problem")]

    def summary(self) -> str:
        more = len(self.problems) - 1
        return f"{self.what}: {self.problems[0]}" + (f" (and {more} more problem{'s' if more > 1 else ''})" if more else "")


@dataclass(frozen=True)
class ChangeRules:
    """Where a change is saved and what it is checked against besides the schema."""

    config_file: Optional[ConfigFile] = None  # None: nothing is saved (an appliance run by a benchmark, say)
    runtime_check: RuntimeCheck = check_runtime  # what this machine can run
    # Where the API server listens now: a new api.host waits for a restart (config.exposure).
    listening_hosts: Callable[[], Sequence[str]] = lambda: ()


class ConfigChanges:
    """Validates, saves and applies configuration changes one at a time, for every origin.

    ``current`` gives the running configuration and ``apply`` applies a checked and saved one
    (``Appliance`` passes its own; nobody else is handed a way to apply): both are required, so an
    appliance or API without its change path fails when it is built, not when a change comes.
    """

    def __init__(self, current: Callable[[], AppConfig], apply: Callable[[AppConfig], ApplyResult],
                 rules: ChangeRules = ChangeRules()) -> None:
        self._config_getter = current
        self._apply = apply
        self._listening_hosts = rules.listening_hosts
        self._runtime_check = rules.runtime_check
        self._file = rules.config_file
        # Read-modify-apply must not interleave: two concurrent writes (a config PATCH and a
        # detect switch or a desired configuration from the fleet, say) would otherwise both
        # start from the same configuration and the second would silently undo the first.
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
        def build(current: AppConfig) -> Any:
            data = redacted_dict(current)
            try:  # ``models`` may address one model by name (edge_app.config.model_patch)
                plain = resolve_model_addresses(data, patch)
            except ConfigError as err:
                raise ConfigRefused("the patch addresses no model of this appliance", err.problems) from None
            return merge_patch(data, plain)

        return self.write(build, origin)

    def revert_model(self, name: str, failed: ModelConfig, running: ModelConfig) -> Optional[ApplyResult]:
        """A model that could not be loaded leaves the configuration: the model called ``name``
        goes back to the section its running detector was loaded from, in the file too; the other
        models stay as they are. None when a later change replaced that section already.

        Not validated again: it is the configuration that ran before the failed change, the one
        the appliance still runs (a model file moved away since must not keep the failed one in).
        """
        with self._lock:
            current = self._config_getter()
            if current.model_configs().get(name) != failed:
                return None
            return self._save_and_apply(current.with_model(name, running), current, Origin.MODEL_RELOAD)

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
                    + token_problems(new_config, self._listening_hosts())
                    + (broker_problems(current, new_config) if origin is Origin.BROKER else []))
        if problems:
            raise ConfigRefused("the configuration is refused", problems)
        problems = self._runtime_check(new_config, previous=current)
        if problems:
            raise ConfigRefused("the configuration cannot run here", problems)
        return self._save_and_apply(new_config, current, origin)

    def _save_and_apply(self, new_config: AppConfig, current: AppConfig, origin: Origin) -> ApplyResult:
        """Save, then apply; a failure of either leaves file and appliance as they were."""
        previous_file = self._file.save(new_config) if self._file is not None else None
        try:
            result = self._apply(new_config)
        except ConfigError as err:  # refused before anything changed: only the file goes back
            self._restore_file(previous_file)
            raise ConfigRefused("the configuration cannot be applied", err.problems) from None
        except Exception:
            logger.exception("applying the configuration (%s) failed; putting the previous one back", origin.value)
            self._restore_file(previous_file)
            try:
                self._apply(current)
            except Exception:
                logger.exception("applying the previous configuration again failed")
            raise
        if result.restart_required:
            logger.info("configuration applied (%s); these settings take effect after a restart: %s",
                        origin.value, ", ".join(result.restart_required))
        else:
            logger.info("configuration applied (%s)", origin.value)
        return result

    def _restore_file(self, previous: Optional[bytes]) -> None:
        if self._file is None:
            return
        try:
            self._file.restore(previous)
        except OSError as err:
            logger.error("could not put the previous configuration back into %s: %s", self._file.path, err)


__all__ = ["ChangeRules", "ConfigBuilder", "ConfigChanges", "ConfigRefused", "Origin"]
