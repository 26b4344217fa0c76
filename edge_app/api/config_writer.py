"""The REST API's side of :class:`edge_app.config_changes.ConfigChanges`: refusals become 400s.

``PUT``/``PATCH /api/v1/config`` and the per-camera routes all go through one
:class:`ConfigWriter`, which hands every change to the appliance's one ``ConfigChanges`` (shared
with the fleet's ``R/config/desired``), so the rules live in one place and one lock orders every
write. A refusal answers 400 with every problem located in the full configuration.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

from edge_app.api.errors import ApiError
from edge_app.api.listening import request_listening_hosts
from edge_app.config.schema import AppConfig
from edge_app.config.store import Problem
from edge_app.config_changes import ConfigBuilder, ConfigChanges, ConfigRefused
from edge_app.service import ApplianceService, ApplyResult


def refusal(what: str, problems: List[Problem]) -> ApiError:
    """A 400 naming the first problem, with every problem in ``details``."""
    details: List[Dict[str, str]] = [problem.as_dict() for problem in problems]
    return ApiError(400, ConfigRefused(what, problems).summary(), details)


class ConfigWriter:
    """Validates and applies configuration changes one at a time (see ``ConfigChanges``)."""

    def __init__(self, service: ApplianceService, config_getter: Callable[[], AppConfig],
                 changes: Optional[ConfigChanges] = None):
        self._changes = changes if changes is not None else ConfigChanges(
            service, config_getter, listening_hosts=request_listening_hosts)

    def current(self) -> AppConfig:
        return self._changes.current()

    def write(self, build: ConfigBuilder) -> ApplyResult:
        """Build the new configuration from the running one, under the lock, and apply it.

        ``build`` may raise (an unknown camera, a conflict); nothing has changed then either.
        """
        return self._answer(lambda: self._changes.write(build))

    def patch(self, patch: Any) -> ApplyResult:
        """``PATCH /api/v1/config``: a merge patch on the configuration as the client sees it."""
        return self._answer(lambda: self._changes.patch(patch))

    @staticmethod
    def _answer(change: Callable[[], ApplyResult]) -> ApplyResult:
        try:
            return change()
        except ConfigRefused as err:
            raise refusal(err.what, err.problems) from None


__all__ = ["ConfigBuilder", "ConfigWriter", "refusal"]
