"""Several models on one appliance (``models``; the single ``model`` is the one named ``default``).

Each model is a ``ModelUnit``: its own detector (``ModelSwaps``: loaded in the background when
its section changes, swapped in when ready) and its own ``Pipeline`` (batch scheduler and
threads) that batches only the frames of the cameras naming it. So one model's load, reload or
failure never stops another's cameras, and a batch never mixes frames for two networks.

``ModelSet`` holds the units by name and follows the configuration: a model added gets a unit
(loaded in the background), one removed is stopped and closed, one changed is reloaded or
retuned alone. A model that fails at start leaves the others running; it is tried again, like a
detector that can no longer run, at most every ``model_change.BROKEN_RELOAD_EVERY_S``.
"""
from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Callable, Dict, List, Mapping, Optional, Sequence

from edge_app.appliance.model_change import ModelSwaps
from edge_app.capture.camera import CameraWorker
from edge_app.capture.early_drop import scheduler_fps_limit
from edge_app.config.model_names import DEFAULT_MODEL
from edge_app.config.schema import AppConfig, ModelConfig
from edge_app.config_change.plan import model_reload_needed
from edge_app.detect.base import Detector, DetectorError
from edge_app.pipeline.stall_watch import PipelineActivity
from edge_app.pipeline.results import ResultStore
from edge_app.pipeline.runner import Pipeline
from edge_app.pipeline.scheduler import BatchScheduler
from edge_app.privacy.feed import detector_feed
from edge_app.reporting.protocol import ModelChangeReport

if TYPE_CHECKING:
    from edge_app.config_change.changes import ConfigChanges

log = logging.getLogger(__name__)

#: load(name, model, cancel) -> Detector: ``model_change.Loader`` told which model it loads (for its build progress)
NamedLoader = Callable[[str, ModelConfig, threading.Event], Detector]

#: how long a removed model's pipeline may take to finish its batch before its detector is closed
REMOVE_TIMEOUT_S = 10.0


class _ModelSink:
    """The shared ``ResultStore``, with every frame marked as analysed by one model."""

    def __init__(self, results: ResultStore, name: str) -> None:
        self._results, self._name = results, name

    def handle(self, frame, detections, timings_ms) -> None:
        self._results.handle(frame, detections, timings_ms, model=self._name)

    def count_stale(self, camera_id: str) -> None:
        self._results.count_stale(camera_id)


class ModelUnit:
    """One model: its detector and background changes, and the pipeline over its cameras."""

    def __init__(self, name: str, config: AppConfig, *, lock: threading.RLock, load: NamedLoader, results: ResultStore,
                 config_getter: Callable[[], AppConfig], changes: "ConfigChanges",
                 stopping: threading.Event, swapped: Callable[[str], None]) -> None:
        model = config.model_configs()[name]
        self.name = name
        self.loading = False  # the first load (at start) is under way
        self.detecting: Mapping[str, CameraWorker] = {}
        self._feeds: Mapping[str, object] = {}  # detecting, masked where privacy.detect is false
        self._privacy = results.privacy
        self._active = False  # the appliance runs: the pipeline starts once there is a detector
        self._stopping = stopping
        self.pipeline = Pipeline(
            detector_getter=lambda: self.swaps.detector, sources_getter=lambda: self._feeds,
            sink=_ModelSink(results, name),
            scheduler=BatchScheduler(model.max_batch, model.batch_timeout_ms / 1000.0),
            # The single model keeps the thread names it always had.
            name="pipeline" if name == DEFAULT_MODEL else f"pipeline:{name}",
        )

        def load_this(section: ModelConfig, cancel: threading.Event) -> Detector:
            return load(name, section, cancel)  # the load knows its model: the build progress is this model's

        self.swaps = ModelSwaps(lock, load_this, self.pipeline, config=config_getter, changes=changes,
                                stopping=stopping, swapped=lambda: swapped(name), name=name)

    @property
    def detector(self) -> Optional[Detector]:
        return self.swaps.detector

    def configure(self, config: AppConfig, cameras: Mapping[str, CameraWorker]) -> None:
        """Batch the cameras of ``config`` that name this model; start the pipeline once it can run."""
        model = config.model_configs().get(self.name)
        if model is None:
            return
        detector = self.detector
        max_batch = min(model.max_batch, detector.max_batch if detector else model.max_batch)
        wanted = {c.id: c.fps_limit for c in config.cameras if c.enabled and c.detect and c.model == self.name}
        self.detecting = {cid: worker for cid, worker in cameras.items() if cid in wanted}
        self._feeds = {cid: detector_feed(worker, self._privacy.hidden_from_detector(cid))
                       for cid, worker in self.detecting.items()}
        # a camera whose capture drops frames keeps its fps_limit there; the scheduler paces the others
        paced = {cid: fps if cid not in self.detecting else scheduler_fps_limit(self.detecting[cid].policy, fps)
                 for cid, fps in wanted.items()}
        self.pipeline.reconfigure(paced, max_batch, model.batch_timeout_ms / 1000.0)
        if self._active and detector is not None and not self.pipeline.started and not self._stopping.is_set():
            self.pipeline.start()

    def activate(self) -> None:
        self._active = True

    @property
    def active(self) -> bool:
        return self._active

    def close(self, timeout_s: float) -> None:
        """Stop the pipeline and close the detector (the model left the configuration, or the appliance stops)."""
        self.swaps.cancel()
        self.detecting = {}
        self._feeds = {}
        self.pipeline.stop(timeout_s=timeout_s)
        detector = self.swaps.detector
        if detector is not None:
            detector.close()


class ModelSet:
    """Every model by name; see the module's docstring."""

    def __init__(self, lock: threading.RLock, load: NamedLoader, results: ResultStore, *,
                 config: Callable[[], AppConfig], changes: "ConfigChanges",
                 stopping: threading.Event, swapped: Callable[[str], None]) -> None:
        self._lock = lock
        self._load = load
        self._results = results
        self._config = config
        self._changes = changes
        self._stopping = stopping
        self._swapped = swapped
        self._units: Dict[str, ModelUnit] = {}

    def _new_unit(self, name: str, config: AppConfig) -> ModelUnit:
        unit = ModelUnit(name, config, lock=self._lock, load=self._load, results=self._results,
                         config_getter=self._config, changes=self._changes, stopping=self._stopping,
                         swapped=self._swapped)
        self._units = {**self._units, name: unit}
        return unit

    @property
    def units(self) -> List[ModelUnit]:
        return list(self._units.values())

    def unit(self, name: str) -> Optional[ModelUnit]:
        return self._units.get(name)

    def detectors(self) -> Dict[str, Detector]:
        """The running detector of every model that has one."""
        return {name: unit.detector for name, unit in self._units.items() if unit.detector is not None}

    # -- start and stop ---------------------------------------------------------------------------
    def load_all(self, config: AppConfig) -> None:
        """Load every model, one after the other (at start). A model that fails is reported and
        tried again later while the others run; DetectorError when none could be loaded."""
        errors: List[str] = []
        for name, model in config.model_configs().items():
            unit = self._units.get(name) or self._new_unit(name, config)
            unit.loading = True
            try:
                detector = self._load(name, model, self._stopping)
            except Exception as exc:
                if self._stopping.is_set():
                    # Stopped while loading (an engine build cancelled): as ever, the load's own error.
                    self.close_all(timeout_s=0.5)
                    raise
                message = str(exc) or type(exc).__name__
                unit.swaps.failed_at_start(message)
                errors.append(f"{name}: {message}" if len(config.model_configs()) > 1 else message)
                log.error("model %s (%s) could not be loaded; the other models run without it: %s",
                          name, model.path, message)
                continue
            finally:
                unit.loading = False
            unit.swaps.set_running(detector, model)
        if self._stopping.is_set():
            return  # the appliance's start sees it, closes what loaded and raises StartCancelled
        if not self.detectors():
            raise DetectorError("; ".join(errors) or "no model could be loaded")

    def start(self, config: AppConfig, cameras: Mapping[str, CameraWorker]) -> None:
        """Start the pipeline of every model that loaded (the others start theirs once they do)."""
        for unit in self.units:
            unit.activate()
        self.configure(config, cameras)

    def cancel(self) -> None:
        for unit in self.units:
            unit.swaps.cancel()

    def close_all(self, timeout_s: float) -> None:
        for unit in self.units:
            unit.close(timeout_s=timeout_s / max(1, len(self._units)))

    # -- the running appliance ----------------------------------------------------------------------
    def configure(self, config: AppConfig, cameras: Mapping[str, CameraWorker]) -> None:
        for unit in self.units:
            unit.configure(config, cameras)

    def notify_frame(self) -> None:
        """A camera delivered a frame (capture thread): wake the pipelines, which take only their cameras'."""
        for unit in self.units:
            unit.pipeline.notify_frame()

    def apply(self, old: AppConfig, new: AppConfig, reloaded: Sequence[str]) -> List[str]:
        """Follow a configuration change (under the apply lock); the names of the models now loading."""
        loading: List[str] = []
        new_models = new.model_configs()
        for name in [n for n in self._units if n not in new_models]:
            unit = self._units[name]
            self._units = {n: u for n, u in self._units.items() if n != name}
            log.info("model %s left the configuration; closing it", name)
            threading.Thread(target=unit.close, args=(REMOVE_TIMEOUT_S,), name=f"model:remove:{name}",
                             daemon=True).start()
        for name, model in new_models.items():
            unit = self._units.get(name)
            if unit is None:
                unit = self._new_unit(name, new)
                unit.activate()
            running_model = unit.swaps.detector_model
            if running_model is None:
                # Never loaded (new, or failed so far): a new section is loaded now; an unchanged
                # one is left to the load under way or to the retry of tick().
                if name not in old.model_configs() or name in reloaded:
                    unit.swaps.begin(new)
                if unit.swaps.pending() is not None:
                    loading.append(name)
                continue
            if name in reloaded and model_reload_needed(running_model, model):
                unit.swaps.begin(new)
                loading.append(name)
                continue
            if name in reloaded:
                unit.swaps.cancel_pending()  # back to the model that runs: nothing to load
            if name in reloaded or unit.swaps.pending() is None:
                unit.swaps.retune(new)
        return loading

    def reload(self, name: str, model: ModelConfig) -> bool:
        """Load the model called ``name`` again if its section is still ``model`` (``ModelSwaps.reload``).

        False only while the appliance is still starting (its cameras and pipelines are wired
        without the apply lock, so no change may swap a model in yet): ask again later. True
        when a change began or is under way, or when nothing is left to do (the appliance stops,
        the model left the configuration)."""
        unit = self._units.get(name)
        if unit is None or self._stopping.is_set():
            return True
        if not unit.active:
            return False
        unit.swaps.reload(model)
        return True

    def tick(self, now_s: float) -> None:
        """A model that can run no batch, or that never loaded, is loaded again (rate-limited)."""
        for unit in self.units:
            unit.swaps.reload_broken(now_s)

    # -- what the reads need ------------------------------------------------------------------------
    def labels(self) -> List[str]:
        """Every label of every running model, once each, in model order."""
        seen: Dict[str, None] = {}
        for detector in self.detectors().values():
            seen.update(dict.fromkeys(detector.labels))
        return list(seen)

    def latest_change(self) -> Optional[ModelChangeReport]:
        reports = [unit.swaps.change.report for unit in self.units if unit.swaps.change is not None]
        return max(reports, key=lambda report: report.started_ts) if reports else None

    @property
    def loading(self) -> bool:
        return any(unit.loading for unit in self.units)

    @property
    def errors(self) -> int:
        return sum(unit.pipeline.errors for unit in self.units)

    def activity(self) -> PipelineActivity:
        """The pipelines' activity as one: stalled when any running pipeline is."""
        return combine_activity([unit.pipeline.activity() for unit in self.units])

    def wait_drained(self, detector: Detector, timeout_s: float) -> bool:
        unit = next((u for u in self.units if u.detector is detector), None)
        return True if unit is None else unit.pipeline.wait_drained(detector, timeout_s)


def combine_activity(activities: Sequence[PipelineActivity]) -> PipelineActivity:
    """One ``PipelineActivity`` for several pipelines: the worst of the running ones."""
    running = [a for a in activities if a.running]
    if not running:
        return PipelineActivity(False, False, None, None)
    batches = [a.last_batch_s for a in running if a.last_batch_s is not None]
    waiting = [a for a in running if a.work_since_s is not None]
    oldest = min(waiting, key=lambda a: a.work_since_s) if waiting else None
    return PipelineActivity(
        running=True, gather_alive=all(a.gather_alive for a in running),
        last_batch_s=max(batches) if batches else None,
        work_since_s=oldest.work_since_s if oldest is not None else None,
        last_error=oldest.last_error if oldest is not None else None,
    )
