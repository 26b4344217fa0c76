"""A new model requested through the configuration, loaded in the background and swapped in.

Loading a model takes seconds with ONNX Runtime and minutes on a Jetson, where the TensorRT
engine is built first; the configuration request must not wait for that, nor hold the lock that
every other change needs. So the request only validates and saves, and a ``ModelChange`` job
loads the model on its own thread while the old one keeps running. When the load succeeds the
appliance swaps the detector and retires the old one once its last batch has been decoded; when
it fails, the old model stays and the report says why. A newer change cancels an older one.

``ModelSwaps`` holds the running detector of one model (``models``: one per name) and wires these
jobs to the appliance: it starts them, installs what they load, retires the old model and reloads
one that can no longer run. The swaps of one model never touch another's detector or pipeline.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Callable, Optional

from edge_app.config.schema import AppConfig, ModelConfig
from edge_app.detect.base import Detector, DetectorError
from edge_app.pipeline.runner import Pipeline
from edge_app.reporting.protocol import ModelChangeReport

if TYPE_CHECKING:
    from edge_app.config_change.changes import ConfigChanges

log = logging.getLogger(__name__)

#: a model that can run no batch (``Detector.failure``) is loaded again at most this often: a GPU
#: that kills every engine process must not become a loop of loads
BROKEN_RELOAD_EVERY_S = 30.0

#: how long a replaced detector may take to finish its batches before it is closed anyway
RETIRE_TIMEOUT_S = 10.0

#: load(model, cancel) -> Detector; raises DetectorError (or anything) when it cannot load
Loader = Callable[[ModelConfig, threading.Event], Detector]
#: install(change, detector) -> bool: whether the detector was taken (False: close it)
Installer = Callable[["ModelChange", Detector], bool]
#: failed(change, message)
FailureHandler = Callable[["ModelChange", str], None]


class ModelChange:
    """One background load of ``model`` (the section of the model called ``name``)."""

    def __init__(self, name: str, model: ModelConfig, load: Loader, install: Installer, failed: FailureHandler,
                 clock: Callable[[], float] = time.time) -> None:
        self.name = name
        self.model = model
        self.cancel_event = threading.Event()
        self._load, self._install, self._failed = load, install, failed
        self._lock = threading.Lock()
        self._report = ModelChangeReport(state="loading", path=model.path, started_ts=clock(), name=name)
        self._clock = clock
        self._thread = threading.Thread(target=self._run, name=f"model:load:{name}", daemon=True)

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
            detector = self._load(self.model, self.cancel_event)
        except Exception as exc:  # whatever a backend raises, the running model must stay
            message = str(exc) or type(exc).__name__
            if self.cancelled:
                self._finish("cancelled", message)
                return
            log.error("loading model %s (%s) failed; the previous detector of this model keeps running, the "
                      "other models are not touched: %s", self.name, self.model.path, message)
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


class ModelSwaps:
    """The running detector of the model called ``name`` and the ``ModelChange`` that may replace it.

    ``lock`` is the appliance's lock for applying configuration: a swap and an apply never
    interleave. ``config`` gives the configuration in force, ``changes`` the one change path,
    ``stopping`` is set once the appliance stops, and ``swapped`` runs, under ``lock``, after a
    new detector has been installed.
    """

    def __init__(self, lock: threading.RLock, load: Loader, pipeline: Pipeline, *, config: Callable[[], AppConfig],
                 changes: "ConfigChanges", stopping: threading.Event,
                 swapped: Callable[[], None], name: str = "default") -> None:
        self.name = name
        self._apply_lock = lock
        self._load_detector = load
        self._pipeline = pipeline
        self._config = config
        self._changes = changes
        self._cancel = stopping
        self._swapped = swapped
        self.detector: Optional[Detector] = None
        self.detector_model: Optional[ModelConfig] = None  # what the running detector was loaded from
        self.change: Optional[ModelChange] = None
        self._broken_reload_s: Optional[float] = None  # when a model that could not run was last loaded again
        self.start_error: Optional[str] = None  # why the first load at start failed (the others run)

    def failed_at_start(self, message: str) -> None:
        """The first load failed (the other models run): tried again ``BROKEN_RELOAD_EVERY_S`` from now."""
        self.start_error = message
        self._broken_reload_s = time.monotonic()

    @property
    def failure(self) -> Optional[str]:
        """Why this model runs no batch now (None: it runs, or it is still loading)."""
        if self.detector is not None:
            return self.detector.failure
        change = self.change
        if change is not None:
            report = change.report
            return report.error if report.state == "failed" else None
        return self.start_error

    def set_running(self, detector: Detector, model: ModelConfig) -> None:
        """The first detector, loaded by the appliance's start."""
        self.detector, self.detector_model = detector, model

    def cancel(self) -> None:
        """Stop the change in progress, if any (the appliance is stopping)."""
        with self._apply_lock:
            change = self.change
        if change is not None:
            change.cancel()

    def pending(self) -> Optional[ModelChange]:
        change = self.change
        return change if change is not None and change.report.state == "loading" else None

    def cancel_pending(self) -> None:
        previous = self.pending()
        if previous is not None:
            previous.cancel()  # superseded: only the newest model is worth loading

    def _section(self, config: AppConfig) -> Optional[ModelConfig]:
        return config.model_configs().get(self.name)

    def begin(self, config: AppConfig) -> None:
        model = self._section(config)
        if model is None:
            return
        self.cancel_pending()
        self.change = ModelChange(self.name, model, self._load_detector, self._install_detector,
                                  self._model_change_failed).start()

    def reload_broken(self, now_s: float) -> None:
        """A model that can run no batch (its engine process died), or that never loaded, is
        loaded again, as a change, at most every ``BROKEN_RELOAD_EVERY_S``."""
        failure = self.failure
        with self._apply_lock:
            if self.pending() is not None or not reload_due(failure, self._broken_reload_s, now_s):
                return
            self._broken_reload_s = now_s
            config = self._config()
            model = self._section(config)
            if model is None:
                return
            log.error("model %s (%s) cannot run (%s); loading it again", self.name, model.path, failure)
            self.begin(config)

    def reload(self, model: ModelConfig) -> None:
        """Load ``model`` again, as a change, if it is still this model's section and no change is under
        way (which loads the newest section anyway): a fleet model that runs its ``path`` because its
        version could not be fetched at start, once the fleet service answers."""
        with self._apply_lock:
            config = self._config()
            if self._cancel.is_set() or self.pending() is not None or self._section(config) != model:
                return
            log.info("model %s: loading %s again", self.name, model.path)
            self.begin(config)

    def _install_detector(self, change: ModelChange, detector: Detector) -> bool:
        with self._apply_lock:
            if change is not self.change or change.cancelled or self._cancel.is_set():
                return False
            retune(detector, self._section(self._config()))
            old, self.detector, self.detector_model = self.detector, detector, change.model
            self._swapped()
        log.info("model %s (%s) is running", self.name, change.model.path)
        if old is not None:
            threading.Thread(target=self._retire_detector, args=(old,), name="model:retire", daemon=True).start()
        return True

    def _retire_detector(self, detector: Detector) -> None:
        # Batches prepared by the old model read its buffers until they are decoded.
        if not self._pipeline.wait_drained(detector, RETIRE_TIMEOUT_S):
            log.warning("the replaced model still had batches in flight after %.0f s; closing it", RETIRE_TIMEOUT_S)
        detector.close()

    def _model_change_failed(self, change: ModelChange, message: str) -> None:
        """Keep file and running state in agreement: the model section goes back to the running one."""
        with self._apply_lock:
            running = self.detector_model
            if running is None:
                # Nothing runs to go back to (a model added, or one that failed at start): it is
                # tried again, by reload_broken, BROKEN_RELOAD_EVERY_S after this failure.
                self._broken_reload_s = time.monotonic()
            if change is not self.change or running is None:
                return
        # Through the change path, under its lock: a change being validated now cannot undo this.
        if self._changes.revert_model(self.name, change.model, running) is not None:
            log.error("model %s (%s) could not be loaded (%s); the configuration keeps %s", self.name,
                      change.model.path, message, running.path)

    def retune(self, config: AppConfig) -> None:
        retune(self.detector, self._section(config))


def retune(detector: Optional[Detector], model: Optional[ModelConfig]) -> None:
    if detector is None or model is None:
        return
    try:
        detector.retune(conf_threshold=model.conf_threshold,
                        iou_threshold=model.iou_threshold, classes=model.classes)
    except DetectorError as err:  # validated against the model file before saving; keep going
        log.error("model settings not applied: %s", err)
