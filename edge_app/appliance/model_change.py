"""A new model requested through the configuration, loaded in the background and swapped in.

Loading a model takes seconds with ONNX Runtime and minutes on a Jetson, where the TensorRT
engine is built first; the configuration request must not wait for that, nor hold the lock that
every other change needs. So the request only validates and saves, and a ``ModelChange`` job
loads the model on its own thread while the old one keeps running. When the load succeeds the
appliance swaps the detector and retires the old one once its last batch has been decoded; when
it fails, the old model stays and the report says why. A newer change cancels an older one.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import replace
from typing import Callable, Optional

from edge_app.config.schema import AppConfig
from edge_app.detect.base import Detector
from edge_app.reporting.protocol import ModelChangeReport

log = logging.getLogger(__name__)

#: a model that can run no batch (``Detector.failure``) is loaded again at most this often: a GPU
#: that kills every engine process must not become a loop of loads
BROKEN_RELOAD_EVERY_S = 30.0

#: load(config, cancel) -> Detector; raises DetectorError (or anything) when it cannot load
Loader = Callable[[AppConfig, threading.Event], Detector]
#: install(change, detector) -> bool: whether the detector was taken (False: close it)
Installer = Callable[["ModelChange", Detector], bool]
#: failed(change, message)
FailureHandler = Callable[["ModelChange", str], None]


class ModelChange:
    """One background load of ``config.model``."""

    def __init__(self, config: AppConfig, load: Loader, install: Installer, failed: FailureHandler,
                 clock: Callable[[], float] = time.time) -> None:
        self.config = config
        self.cancel_event = threading.Event()
        self._load, self._install, self._failed = load, install, failed
        self._lock = threading.Lock()
        self._report = ModelChangeReport(state="loading", path=config.model.path, started_ts=clock())
        self._clock = clock
        self._thread = threading.Thread(target=self._run, name="model:load", daemon=True)

    def start(self) -> "ModelChange":
        self._thread.start()
        return self

    @property
    def report(self) -> ModelChangeReport:
        with self._lock:
            return self._report

    @property
    def cancelled(self) -> bool:
        return self.cancel_event.is_set()

    def cancel(self) -> None:
        """Stop a load in progress (an engine build ends at its next progress step)."""
        self.cancel_event.set()

    def join(self, timeout_s: float) -> bool:
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    def _finish(self, state: str, error: Optional[str] = None) -> None:
        with self._lock:
            self._report = replace(self._report, state=state, finished_ts=self._clock(), error=error)

    def _run(self) -> None:
        try:
            detector = self._load(self.config, self.cancel_event)
        except Exception as exc:  # whatever a backend raises, the running model must stay
            message = str(exc) or type(exc).__name__
            if self.cancelled:
                self._finish("cancelled", message)
                return
            log.error("loading model %s failed; the previous model keeps running: %s", self.config.model.path, message)
            try:
                self._failed(self, message)
            finally:
                # Reported last, so whoever sees "failed" also sees the configuration put back.
                self._finish("failed", message)
            return
        if self.cancelled or not self._install(self, detector):
            detector.close()
            self._finish("cancelled")
            return
        self._finish("applied")


def reload_due(failure: Optional[str], last_reload_s: Optional[float], now_s: float,
               every_s: float = BROKEN_RELOAD_EVERY_S) -> bool:
    """Whether a model that reports ``failure`` (None: it works) should be loaded again now, the
    last such load having begun at ``last_reload_s`` (None: never)."""
    return failure is not None and (last_reload_s is None or now_s - last_reload_s >= every_s)
