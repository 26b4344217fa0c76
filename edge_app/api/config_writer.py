"""The one way the REST API changes the configuration, whichever route the change came through.

``PUT``/``PATCH /api/v1/config`` and the per-camera routes all build a whole configuration and
hand it to :meth:`ConfigWriter.write`, so the rules apply to every one of them alike and live in
one place: secrets are re-used only where they went before, the schema, what the API may change
(SPEC.md), what this machine can run, then the appliance applies and saves. A refusal at any
step answers 400 with every problem located in the full configuration and changes nothing.
"""
from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any, Callable, Dict, List

from edge_app.api.errors import ApiError
from edge_app.checks import check_runtime
from edge_app.config.policy import unsafe_changes
from edge_app.config.schema import AppConfig
from edge_app.config.secrets import misdirected_secrets, restore_secrets
from edge_app.config.store import ConfigError, Problem, parse_config
from edge_app.service import ApplianceService, ApplyResult

logger = logging.getLogger(__name__)

#: Builds the whole new configuration (unvalidated, secrets possibly masked) from the running one.
ConfigBuilder = Callable[[AppConfig], Any]


def _summary(problems: List[Problem]) -> str:
    if not problems:
        return "unknown problem"
    more = len(problems) - 1
    return str(problems[0]) + (f" (and {more} more problem{'s' if more > 1 else ''})" if more else "")


def refusal(what: str, problems: List[Problem]) -> ApiError:
    """A 400 naming the first problem, with every problem in ``details``."""
    details: List[Dict[str, str]] = [problem.as_dict() for problem in problems]
    return ApiError(400, f"{what}: {_summary(problems)}", details)


class ConfigWriter:
    """Validates and applies configuration changes one at a time."""

    def __init__(self, service: ApplianceService, config_getter: Callable[[], AppConfig]):
        self._service = service
        self._config_getter = config_getter
        # Read-modify-apply must not interleave: two concurrent writes (a config PATCH and a
        # camera edit, say) would otherwise both start from the same configuration and the
        # second would silently undo the first.
        self._lock = threading.Lock()

    def current(self) -> AppConfig:
        return self._config_getter()

    def write(self, build: ConfigBuilder) -> ApplyResult:
        """Build the new configuration from the running one, under the lock, and apply it.

        ``build`` may raise (an unknown camera, a conflict); nothing has changed then either.
        """
        with self._lock:
            current = self._config_getter()
            return self._validate_and_apply(build(current), current)

    def _validate_and_apply(self, data: Any, current: AppConfig) -> ApplyResult:
        """Everything is checked before the appliance sees the change: all or nothing."""
        # A client that GETs, edits and sends back sends "***" for secrets: they are filled in
        # from the running configuration where their destination did not change.
        data, restored, problems = restore_secrets(data, current)
        if problems:
            raise refusal("the configuration is refused", problems)
        try:
            new_config = parse_config(data, strict_json=True)
        except ConfigError as err:
            raise refusal("the configuration is invalid", err.problems) from None
        problems = misdirected_secrets(new_config, current, restored) + unsafe_changes(current, new_config, Path.cwd())
        if problems:
            raise refusal("the configuration is refused", problems)
        problems = check_runtime(new_config, previous=current)
        if problems:
            raise refusal("the configuration cannot run here", problems)
        try:
            result = self._service.apply_config(new_config)
        except ConfigError as err:
            raise refusal("the configuration cannot be applied", err.problems) from None
        if result.restart_required:
            logger.info("configuration applied; these settings take effect after a restart: %s", ", ".join(result.restart_required))
        else:
            logger.info("configuration applied")
        return result


__all__ = ["ConfigBuilder", "ConfigWriter", "refusal"]
