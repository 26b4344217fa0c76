"""``models_state``: what each fleet model is doing on this appliance, as the fleet service is told.

docs/fleet.md, "Models and engines over the air": ``{<name>: {"version", "state", "progress",
"reason"}}`` with state ``downloading`` (progress 0..1), ``building``, ``running`` or ``failed``
(reason). It travels in ``R/config/reported``; whoever publishes it registers as a listener and
is called on every change of state, and on progress (downloading, building) when it moved by
``PROGRESS_EVERY``.
"""
from __future__ import annotations

import logging
import threading
from dataclasses import asdict, dataclass
from typing import Callable, Dict, List, Optional

from edge_app.config.redact import mask_secrets

log = logging.getLogger(__name__)

STATES = ("downloading", "building", "running", "failed")
#: progress reports are published when they moved at least this far (a 12 MB download is ~10 messages)
PROGRESS_EVERY = 0.1
MAX_REASON_CHARS = 500


@dataclass(frozen=True)
class ModelState:
    version: str
    state: str
    progress: Optional[float] = None
    reason: Optional[str] = None

    def as_dict(self) -> Dict[str, object]:
        return asdict(self)


class ModelsState:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._states: Dict[str, ModelState] = {}
        self._listeners: List[Callable[[], None]] = []

    def on_change(self, listener: Callable[[], None]) -> None:
        with self._lock:
            self._listeners.append(listener)

    def snapshot(self) -> Dict[str, Dict[str, object]]:
        with self._lock:
            return {name: state.as_dict() for name, state in self._states.items()}

    def get(self, name: str) -> Optional[ModelState]:
        with self._lock:
            return self._states.get(name)

    def set(self, name: str, version: str, state: str, progress: Optional[float] = None,
            reason: Optional[str] = None) -> None:
        if state not in STATES:
            raise ValueError(f"model state must be one of {STATES}")
        if reason is not None:
            reason = mask_secrets(reason)[:MAX_REASON_CHARS]
        new = ModelState(version, state, None if progress is None else min(max(progress, 0.0), 1.0), reason)
        with self._lock:
            old = self._states.get(name)
            if old == new:
                return
            quiet = (old is not None and old.state == state and state in ("downloading", "building")
                     and old.version == version
                     and old.reason == reason and new.progress is not None and old.progress is not None
                     and new.progress < 1.0 and new.progress - old.progress < PROGRESS_EVERY)
            if quiet:
                return
            self._states[name] = new
            listeners = list(self._listeners)
        if state == "failed":
            log.error("model %s version %s: %s", name, version, reason)
        elif old is None or old.state != state:
            log.info("model %s version %s: %s", name, version, state)
        for listener in listeners:
            try:
                listener()
            except Exception:  # a publisher's trouble must not stop a download
                log.exception("publishing models_state failed")


__all__ = ["ModelState", "ModelsState", "STATES"]
