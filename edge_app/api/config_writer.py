"""The REST API's side of :class:`edge_app.config_change.changes.ConfigChanges`: refusals become 400s.

``PUT``/``PATCH /api/v1/config`` and the per-camera routes all go through one
:class:`ConfigWriter` in front of the appliance's one ``ConfigChanges`` (shared with the fleet's
``R/config/desired``, the detect switch and model reloads), so the rules live in one place and one
lock orders every write. A refusal answers 400 with every problem located in the full configuration.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, TypeVar

from edge_app.http_server.errors import ApiError
from edge_app.config.schema import AppConfig
from edge_app.config.file import Problem
from edge_app.config_change.changes import ConfigBuilder, ConfigChanges, ConfigRefused
from edge_app.reporting.protocol import ApplyResult

T = TypeVar("T")


def refusal(what: str, problems: List[Problem]) -> ApiError:
    """A 400 naming the first problem, with every problem in ``details``."""
    details: List[Dict[str, str]] = [problem.as_dict() for problem in problems]
    return ApiError(400, ConfigRefused(what, problems).summary(), details)


class ConfigWriter:
    """``changes`` as the routes use it: the running configuration, writes, and 400s for refusals."""

    def __init__(self, changes: ConfigChanges) -> None:
        self._changes = changes

    def current(self) -> AppConfig:
        return self._changes.current()

    def write(self, build: ConfigBuilder) -> ApplyResult:
        """``ConfigChanges.write``: ``build`` makes the new configuration from the running one."""
        return self._answer(lambda: self._changes.write(build))

    def patch(self, patch: Any) -> ApplyResult:
        """``PATCH /api/v1/config``: a merge patch on the configuration as the client sees it."""
        return self._answer(lambda: self._changes.patch(patch))

    def through(self, change: Callable[[ConfigChanges], T]) -> T:
        """A change made by a helper of the change path (a profile switch): its refusals are 400s too."""
        try:
            return change(self._changes)
        except ConfigRefused as err:
            raise refusal(err.what, err.problems) from None

    @staticmethod
    def _answer(change: Callable[[], ApplyResult]) -> ApplyResult:
        try:
            return change()
        except ConfigRefused as err:
            raise refusal(err.what, err.problems) from None


__all__ = ["ConfigBuilder", "ConfigWriter", "refusal"]
