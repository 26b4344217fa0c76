"""A fleet model that fell back to its ``path`` at start fetches its version later, by itself.

docs/fleet.md, "Models and engines over the air". At start, a model whose version cannot be
fetched because the fleet service cannot be reached (or the download was cut) runs its ``path``,
so that analysis starts. Nothing else would ever load the version: the configuration names it
already (a rollout of the same version changes nothing) and the stand-in runs (it is no broken
model to load again). So one ``Refetch`` thread per such model asks the fleet service for the
version's manifest after ``fleet.fallback_retry_s``, then after twice as long each time up to
``fleet.fallback_retry_max_s``. Once the service answers, the model is loaded again through the
appliance's background model change, which fetches, verifies and swaps the version in as a
rollout does (and says why in ``models_state`` when it cannot).

Only that question is asked here: the download, the checks and the load are the model change's,
on its own thread, so there is never more than one fetch of a model under way. The thread ends
when it is cancelled (the appliance stops, or another load of that fleet model took over; an
Event wait, so a stop never waits out a backoff), when the model's section is no longer the one
that fell back (another version or path, the model removed), or once the model change has
taken over.
"""
from __future__ import annotations

import logging
import threading
from typing import Callable, Optional

from edge_app.config.schema import AppConfig, ModelConfig
from edge_app.fleet_agent.artifacts.client import FleetRefused, FleetUnreachable
from edge_app.fleet_agent.artifacts.state import ModelsState
from edge_app.process.backoff import next_retry_s

log = logging.getLogger(__name__)

#: reload(model_name, section) -> bool: True when the appliance took it over (a background change of
#: that section began or is under way) or nothing is left to do (it stops, the section changed); False
#: when it cannot begin a change yet (still starting), so the next attempt asks again
Reload = Callable[[str, ModelConfig], bool]
#: probe(section): returns, or raises FleetRefused, once the fleet service answered about the section's
#: version (a refusal is reported by the model change that follows); FleetUnreachable otherwise
Probe = Callable[[ModelConfig], None]


def section_name(config: AppConfig, model: ModelConfig) -> Optional[str]:
    """The name of the model whose section is still exactly ``model`` (None: it changed or left)."""
    return next((name for name, section in config.model_configs().items() if section == model), None)


class Refetch:
    """Asks for ``model``'s fleet version until the fleet service answers, then hands it to ``reload``."""

    def __init__(self, model: ModelConfig, reason: str, *, config: Callable[[], AppConfig], state: ModelsState,
                 probe: Probe, reload: Reload, previous_wait_s: Optional[float] = None) -> None:
        assert model.artifact is not None
        self.model = model
        self._reason = reason  # why the last attempt failed
        # The waits of the refetches of one model grow one after the other: a version the fleet
        # refuses each time is asked for ever less often, not every fallback_retry_s.
        self.wait_s = previous_wait_s
        self._config, self._state, self._probe, self._reload = config, state, probe, reload
        self._cancel = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"fleet:refetch:{model.artifact.name}", daemon=True)

    def start(self) -> "Refetch":
        self._thread.start()
        return self

    def cancel(self) -> None:
        """End it now, also in the middle of a wait (the appliance stops, or another load took over)."""
        self._cancel.set()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def join(self, timeout_s: float) -> bool:
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    def _run(self) -> None:
        artifact = self.model.artifact
        while True:
            fleet = self._config().fleet  # read each time: a change of fleet.* applies from the next wait
            self.wait_s = delay_s = next_retry_s(self.wait_s, fleet.fallback_retry_s, fleet.fallback_retry_max_s)
            self._report(delay_s)
            if self._cancel.wait(delay_s):
                return
            name = section_name(self._config(), self.model)
            if name is None:
                log.info("model %s version %s: its section changed since it fell back to %s; not fetched from here",
                         artifact.name, artifact.version, self.model.path)
                return
            try:
                self._probe(self.model)
            except FleetUnreachable as err:
                self._reason = str(err)
                continue
            except FleetRefused as err:  # an answer all the same: the model change that follows reports it
                log.info("model %s version %s: the fleet service answers (%s)", artifact.name, artifact.version, err)
            except Exception as err:  # this thread is the only one that will ever try again: it must not end
                log.exception("model %s version %s: asking the fleet service failed", artifact.name, artifact.version)
                self._reason = str(err) or type(err).__name__
                continue
            if self._cancel.is_set():
                return
            if self._reload(name, self.model):
                log.info("model %s version %s: the fleet service answers; fetching it to replace %s",
                         artifact.name, artifact.version, self.model.path)
                return
            self._reason = "the appliance has not started yet"

    def _report(self, delay_s: float) -> None:
        artifact = self.model.artifact
        current = self._state.get(artifact.name)
        # Another version's report (a rollout under way) is not overwritten with this one's.
        if self._cancel.is_set() or (current is not None and current.version != artifact.version):
            return
        self._state.set(artifact.name, artifact.version, "failed",
                        reason=f"{self._reason}; running {self.model.path} until it is fetched, "
                               f"trying again in {delay_s:.0f} s")


__all__ = ["Probe", "Refetch", "Reload", "section_name"]
