"""The running appliance: cameras, detector, pipeline and MQTT, wired together.

The front ends never get the appliance itself, only its narrow doors: ``reads`` (the
``edge_app.reporting.protocol.ApplianceReads`` the API and the systemd status line read, built by
``read_side.RunningReads``), ``changes`` (the one change path) and ``event_deletion``. What it
builds (detector, MQTT publisher, camera workers) comes from factories that tests replace. Its
parts do the work: the models (each with its detector, background changes and pipeline) are
``model_set.ModelSet``, the analysis of every camera is ``analysis.AnalysisHub``.

It never writes the file and offers no public way to apply a configuration: every change, also
those it asks for itself (the MQTT detect switch, a model that could not be loaded), goes through
its one ``edge_app.config_change.changes.ConfigChanges``, built with it (``change_rules`` say
where it saves and what it checks), so there is no appliance without its change path. Profile
switches (the schedule, ``R/profile/set``) are changes too; what runs is the configuration with
the active profile's overrides (``edge_app.config.profile_overrides``), what is saved the base.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Dict, Optional

from edge_app.appliance.analysis import AnalysisHub
from edge_app.appliance.engine_builds import EngineBuilds
from edge_app.capture.camera import CameraWorker
from edge_app.capture.state import StreamState
from edge_app.config.schema import AppConfig, ModelConfig
from edge_app.config.schema_cameras import CameraConfig
from edge_app.detect.base import Detector, DetectorError
from edge_app.detect.factory import choose_backend, create_detector
from edge_app.events.store import EventStore
from edge_app.health.report import HealthReport
from edge_app.health.sampler import HealthSampler, health_dirs
from edge_app.notify.clip_links import ClipLinks
from edge_app.notify.wiring import notifier_for
from edge_app.review.book import ReviewBook
from edge_app.review.feed import ReviewFeed
from edge_app.review.model import AlertRule
from edge_app.appliance.model_set import ModelSet
from edge_app.appliance.event_deletion import StoredEventDeletion
from edge_app.appliance.read_side import RunningParts, RunningReads
from edge_app.appliance.reviews import ReviewAnnouncer
from edge_app.motion.gating import MotionGating
from edge_app.mqtt.ha_discovery import event_labels
from edge_app.mqtt.payloads import detections_payload_for
from edge_app.mqtt.publisher import MqttPublisher
from edge_app.opencv import opencv
from edge_app.pipeline import stall_watch
from edge_app.pipeline.results import ResultStore
from edge_app.record.device_recorder import DeviceRecorder
from edge_app.record.masked_sink import MaskedSinks
from edge_app.config_change.plan import plan_changes
from edge_app.config_change.changes import ChangeRules, ConfigChanges
from edge_app.config_change.detect_switch import DetectSwitch
from edge_app.config_change.profile_switch import ProfileSwitch
from edge_app.config.profile_overrides import effective_config
from edge_app.reporting.stage_times import StageTimes
from edge_app.reporting.protocol import AnalysedFrame, ApplyResult, RemoteConfigReport
from edge_app.version import __version__

log = logging.getLogger(__name__)


class StartCancelled(DetectorError):
    """The appliance was asked to stop while it was still starting."""


class Appliance:
    def __init__(self, config: AppConfig, stall_after_s: Optional[float] = None,
                 *, detector_factory: Callable[..., Detector] = create_detector,
                 publisher_factory: Callable[..., MqttPublisher] = MqttPublisher,
                 camera_factory: Callable[..., CameraWorker] = CameraWorker,
                 event_store: Optional[EventStore] = None, health: Optional[HealthSampler] = None,
                 record: bool = False,
                 on_model_running: Optional[Callable[[ModelConfig, Detector], None]] = None,
                 change_rules: ChangeRules = ChangeRules(), clip_links: Optional[ClipLinks] = None):
        # The file's configuration (the change path's) and what runs: the base with the active profile's overrides.
        self._base, self._config = config, effective_config(config)
        config = self._config
        # Signs the notifications' clip links; the API checks them with the same key (None: no links).
        self.clip_links = clip_links
        # Told each time a model's detector has been installed (at start, or swapped in): the fleet's models_state.
        self._on_model_running = on_model_running
        # Optional: without one events are only published, and the event routes answer [] and 404.
        # Whoever makes the store closes it, after stop() has ended the open events.
        self._event_store = event_store
        self._detector_factory = detector_factory
        self._publisher_factory = publisher_factory
        self._camera_factory = camera_factory
        self._apply_lock = threading.RLock()
        self._cameras: Dict[str, CameraWorker] = {}
        self._publisher = publisher_factory(config.mqtt, config.device_id, __version__)
        # The one change path: the API's, the fleet's, and the appliance's own (detect switch, model reverts).
        self.changes = ConfigChanges(self.current_config, self._apply_config, change_rules)
        self._detect_switch = DetectSwitch(self.changes, lambda cid, on: self._publisher.publish_detect_state(cid, on))
        self._profiles = ProfileSwitch(self.changes, lambda report: self._publisher.publish_profile(report.to_dict()))
        # Only with record (edge-app run) is the record section acted on; events and MQTT are the same either way.
        self._recording = DeviceRecorder(lambda message: self._publisher.publish_event(message), event_store,
                                         enabled=record)
        # Time per frame of each stage, per camera (GET /metrics: edge_app_stage_seconds).
        self._stage_times = StageTimes()
        self._analysis = AnalysisHub(lambda: self._publisher, store=event_store, on_event=self._recording.on_event,
                                     stage_times=self._stage_times)
        self._results = ResultStore(self._publish_frame, analyse=self._analysis.analyse, stage_times=self._stage_times)
        self._results.privacy.configure(config.cameras)  # before any frame can be seen
        self._masked_sinks = MaskedSinks()  # masked cameras record through these (edge_app.record.masked_sink)
        # Frames of a camera where nothing moves and nothing is tracked never reach the model.
        self._motion = MotionGating(self._has_objects, lambda cid, motion: self._publisher.publish_motion(cid, motion))
        # The cameras whose frames go through the model: enabled with their detect switch on.
        self._detecting: Dict[str, CameraWorker] = {}
        self._builds = EngineBuilds()  # each model's TensorRT engine build, for status
        # Set once the appliance is stopping: cancels a model load or engine build in progress.
        self._cancel = threading.Event()
        self._lifecycle_lock = threading.Lock()
        self._stats_stop = threading.Event()
        self._stats_thread: Optional[threading.Thread] = None
        self._config_desired: Optional[Callable[[bytes], None]] = None  # the fleet agent, if any
        self._health = health or HealthSampler(config.health, health_dirs(config))
        self._health.set_publisher(self._publish_health)
        # Alerts announced to notifications.targets (docs/notifications.md), told each event message.
        self._notifier = notifier_for(lambda: self._config, snapshot_of=event_store.snapshot if event_store else None,
                                      clip_links=clip_links)
        self._analysis.also_tell(self._notifier.on_event)
        # Review items (docs/review.md): read and marked through the API, announced on R/reviews.
        self._review_book = ReviewBook(event_store, gap_s=lambda: self._config.review.gap_s,
                                       rule_of=self._alert_rule) if event_store is not None else None
        self._review_announcer = ReviewAnnouncer(lambda: self._publisher,
                                                 ReviewFeed(lambda: self._config.review.gap_s, self._alert_rule),
                                                 self._review_book, lambda: [c.id for c in self._config.cameras])
        self._analysis.also_tell(self._review_announcer.on_event)
        self._remote_config_report: Optional[Callable[[], RemoteConfigReport]] = None
        self._models = ModelSet(self._apply_lock, self._load_detector, self._results, config=lambda: self._config,
                                changes=self.changes, stopping=self._cancel, swapped=self._model_swapped)
        # What the front ends read (edge_app.reporting.protocol.ApplianceReads) and the one thing they delete.
        self.reads = RunningReads(
            self._running, results=self._results, pipeline=self._models, analysis=self._analysis,
            event_store=event_store, health=self._health, recording=self._recording, builds=self._builds,
            stage_times=self._stage_times,
            notifications=self._notifier.status, reviews=self._review_book, masked=self._masked_sinks.stats,
            stall_after_s=stall_watch.STALL_AFTER_S if stall_after_s is None else stall_after_s)
        self.event_deletion = StoredEventDeletion(event_store)

    @property
    def _detector(self) -> Optional[Detector]:
        """The detector of the first model (the single model's)."""
        return self._running().detector

    def _running(self) -> RunningParts:
        detectors = self._models.detectors()
        first = next(iter(self._config.model_configs()))
        return RunningParts(config=self._config, detector=detectors.get(first), loading=self._models.loading,
                            cameras=self._cameras, detecting=self._detecting, publisher=self._publisher,
                            model_change=self._models.latest_change(), remote_config=self._remote_config_report,
                            models=self._models, profile=self._profiles.report)

    # -- lifecycle --------------------------------------------------------------------------------
    def start(self) -> None:
        """Load the model (raises DetectorError), then start MQTT, cameras and the pipeline.

        May run on its own thread: ``stop`` (or ``cancel_start``) from another thread cancels a
        TensorRT engine build in progress, and ``start`` then raises ``StartCancelled``.
        """
        self._publisher.start()
        self._notifier.start()
        self._health.start()  # before the model: a Jetson building an engine may be the one overheating
        self._models.load_all(self._config)  # raises when no model loads; one that fails is reported
        for name in self._models.detectors():
            self._model_running(name)
        with self._lifecycle_lock:
            if self._cancel.is_set():
                self._models.close_all(timeout_s=1.0)
                raise StartCancelled("the appliance was stopped while the model was loading")
            # Each camera works in its own thread and OpenCV's share of a frame is small (the motion
            # check's 320-wide picture, drawing): its thread pool only spins. On an H200 test machine
            # 16 threads spent 3.3 ms of CPU on a 0.21 ms motion check; with the model on the CPU they
            # would also compete with the model's threads for the same cores.
            cv2 = opencv()

            cv2.setNumThreads(1)
            self._recording.start(self._config)  # before the cameras: each recorded one gets its sink
            for cam in self._config.cameras:
                self._start_camera(cam)
            self._analysis.configure(self._config)
            self._publish_detect_states(self._config)
            self._publish_ha_discovery()
            self._detect_switch.start()
            self._profiles.start()  # the schedule's thread; also publishes R/profile after each change
            self._subscribe_commands()  # only now: a command or desired change must not race the start
            self._reconfigure_pipeline()
            self._models.start(self._config, self._cameras)
            self._stats_thread = threading.Thread(target=self._stats_loop, name="stats:mqtt", daemon=True)
            self._stats_thread.start()

    def cancel_start(self) -> None:
        """Stop a model load or engine build in progress (from any thread); nothing starts after it."""
        self._cancel.set()

    def stop(self, timeout_s: float = 4.0) -> None:
        deadline = time.monotonic() + timeout_s
        self._cancel.set()
        with self._lifecycle_lock:  # a start() finishing now either completes first or sees the cancel
            pass
        self._models.cancel()
        self._detect_switch.stop(timeout_s=1.0)
        self._profiles.stop(timeout_s=1.0)
        self._stats_stop.set()
        self._health.stop(timeout_s=0.5)
        workers = list(self._cameras.values())
        stoppers = [threading.Thread(target=w.stop, kwargs={"timeout_s": 2.0}, name=f"stop:{w.config.id}") for w in workers]
        for t in stoppers:
            t.start()
        self._models.close_all(timeout_s=max(0.5, deadline - time.monotonic() - 1.0))
        for t in stoppers:
            t.join(max(0.0, deadline - time.monotonic() - 1.0))
        try:
            self._analysis.end_all()  # open events end now, counts fall to 0, before MQTT goes
        except Exception:
            log.exception("ending the open events failed")
        self._recording.close()  # after the ends: the clips of the events that just ended are finished
        if self._event_store is not None:
            # What the end of the open events wrote must reach the disk; MQTT keeps its share of the budget.
            self._event_store.close(timeout_s=max(0.3, min(1.5, deadline - time.monotonic() - 1.0)))
        self._publisher.stop(timeout_s=max(0.5, deadline - time.monotonic()))
        self._notifier.stop()

    def _load_detector(self, name: str, model: ModelConfig, cancel: threading.Event) -> Detector:
        """Load the model called ``name`` (on its own load thread: several may load at once)."""
        options = {}
        if choose_backend(model) == "tensorrt":
            # Building an engine takes minutes on a Jetson: /api/v1/status shows its progress, per model.
            options["progress"] = self._builds.start(name)
            options["cancel"] = cancel
        detector = self._detector_factory(model, **options)
        log.info("model %s loaded with %s (input %s, max batch %d)", model.path, detector.backend_name,
                 "x".join(map(str, detector.input_hw)), detector.max_batch)
        return detector

    def _start_camera(self, cam: CameraConfig) -> None:
        if not cam.enabled:
            self._publisher.publish_camera_state(cam.id, StreamState.STOPPED.value, None)
            return
        sink = self._recording.sink(cam.id)
        # a camera with privacy masks records a re-encode with the masks burnt in, never a stream copy
        sink = self._masked_sinks.wrap(cam.id, sink, self._results.privacy.masks(cam.id), cam.privacy.record_height)
        worker = self._camera_factory(cam, self._config.capture, on_state=self._on_camera_state,
                                      on_frame=self._models.notify_frame, **({"packet_sink": sink} if sink else {}))
        self._cameras = {**self._cameras, cam.id: worker}
        worker.start()

    def _stop_camera(self, camera_id: str) -> None:
        workers = dict(self._cameras)
        worker = workers.pop(camera_id, None)
        self._cameras = workers
        if worker is not None:
            worker.stop(timeout_s=3.0)
        self._results.forget(camera_id)

    def _publish_frame(self, frame: AnalysedFrame) -> None:
        # Read at call time: a configuration change may have replaced the publisher or device id.
        self._publisher.publish_detections(frame.camera_id, detections_payload_for(self._config.device_id, frame))

    def _on_camera_state(self, camera_id: str, state: StreamState, error: Optional[str]) -> None:
        self._publisher.publish_camera_state(camera_id, state.value, error)

    def _reconfigure_pipeline(self) -> None:
        self._results.privacy.configure(self._config.cameras)  # before the models take their feeds
        detecting = {c.id for c in self._config.cameras if c.enabled and c.detect}
        self._detecting = {cid: worker for cid, worker in self._cameras.items() if cid in detecting}
        self._models.configure(self._config, self._cameras)  # each model batches its own cameras
        self._motion.configure(self._config, self._cameras)

    def _has_objects(self, camera_id: str) -> bool:
        """Whether a camera has tracked objects (or, without tracking, detections in its newest result)."""
        tracked = self._analysis.has_objects(camera_id)
        if tracked is not None:
            return tracked
        latest = self._results.latest_frame(camera_id)
        return latest is not None and len(latest.detections) > 0

    def _stats_loop(self) -> None:
        next_stats_s = time.monotonic() + self._config.mqtt.stats_interval_s
        while not self._stats_stop.wait(1.0):
            try:
                self._analysis.tick()  # objects of a camera that went quiet still leave
                self._review_announcer.tick()
                self._models.tick(time.monotonic())
                if time.monotonic() >= next_stats_s:
                    next_stats_s = time.monotonic() + self._config.mqtt.stats_interval_s
                    self._publisher.publish_stats(self.reads.stats_payload())
            except Exception:
                log.exception("publishing stats failed")

    def _publish_detect_states(self, config: AppConfig) -> None:
        for camera in config.cameras:
            self._publisher.publish_detect_state(camera.id, camera.detect)

    def _publish_ha_discovery(self) -> None:
        self._publisher.set_ha_discovery(self._config, event_labels(self._config, self._models.labels()))

    # -- live configuration -----------------------------------------------------------------------
    def current_config(self) -> AppConfig:
        return self._base

    def _apply_config(self, new_config: AppConfig) -> ApplyResult:
        """Apply ``new_config`` (validated and saved by ``self.changes``, its one caller); a new
        model is loaded in the background (``applying``)."""
        with self._apply_lock:
            old, self._base, new_config = self._config, new_config, effective_config(new_config)
            plan = plan_changes(old, new_config)
            self._config = new_config
            self._results.privacy.configure(new_config.cameras)  # new masks hold from the next frame out
            # Each model alone: a changed one loads in the background, the others run on untouched.
            loading = self._models.apply(old, new_config, plan.models_reloaded)
            if plan.reconnect_mqtt:
                self._swap_publisher(new_config)
            # A camera recorded now and not before (or the other way round) restarts with (or without) a sink.
            changed = plan.cameras_changed + tuple(cid for cid in self._recording.configure(new_config, list(self._cameras))
                                                   if cid not in plan.cameras_changed + plan.cameras_removed)
            for cid in plan.cameras_removed + changed:
                self._stop_camera(cid)
                if cid in plan.cameras_removed:
                    self._publisher.publish_camera_state(cid, StreamState.STOPPED.value, None)
                    self._publisher.forget_camera(cid)
            for cid in plan.cameras_added + changed:
                self._start_camera(new_config.camera(cid))
            self._analysis.configure(new_config)
            self._health.configure(new_config.health, health_dirs(new_config))
            if self._event_store is not None:
                self._event_store.set_retention(new_config.events.retain_days, new_config.events.max_mb)
            self._publish_detect_states(new_config)
            self._publish_ha_discovery()
            self._reconfigure_pipeline()
            logging.getLogger().setLevel(new_config.logging.level)
            log.info("configuration applied: %s", plan)
            # "model" as ever for the single model; "models.<name>" for one of several.
            applying = ["model" if new_config.model_location(name) == "model" else f"models.{name}" for name in loading]
            self._profiles.on_applied(self._base)
            return ApplyResult(self._base, plan.restart_required, applying)

    def reload_model(self, name: str, model: ModelConfig) -> bool:
        """Load a model again if it still runs ``model`` (``ModelSet.reload``): a fleet model that fell back."""
        return self._models.reload(name, model)

    def _model_swapped(self, name: str) -> None:
        self._reconfigure_pipeline()
        self._publish_ha_discovery()  # a new model may know other labels
        self._model_running(name)

    def _model_running(self, name: str) -> None:
        unit = self._models.unit(name)
        if self._on_model_running is not None and unit is not None and unit.detector is not None:
            self._on_model_running(unit.swaps.detector_model, unit.detector)

    def _swap_publisher(self, config: AppConfig) -> None:
        old = self._publisher
        old.withdraw_ha_discovery_unless(config.device_id)  # a renamed device must not leave its old self in HA
        old.stop(timeout_s=2.0)
        self._publisher = self._publisher_factory(config.mqtt, config.device_id, __version__)
        self._publisher.start()
        self._subscribe_commands()  # a new client has no subscriptions
        for cid, worker in self._cameras.items():
            self._publisher.publish_camera_state(cid, worker.state.value, worker.stats().get("last_error"))

    # -- the fleet (edge_app.fleet_agent) -------------------------------------------------------------
    def on_config_desired(self, handler: Callable[[bytes], None]) -> None:
        """Hand every ``R/config/desired`` payload to ``handler`` once started, across MQTT reconnects."""
        self._config_desired = handler

    def refetch_config_desired(self) -> None:
        """Subscribe to ``R/config/desired`` again: the broker hands over its retained message anew."""
        if self._config_desired is not None:
            self._publisher.on_config_desired(self._config_desired)

    def on_remote_config_report(self, provider: Callable[[], RemoteConfigReport]) -> None:
        """Where ``status()`` reads whether and how remote configuration is authenticated."""
        self._remote_config_report = provider

    def _subscribe_commands(self) -> None:
        self._publisher.on_detect_set(self._detect_switch.on_command,
                                      camera_known=lambda cid: self._config.camera(cid) is not None)
        self._publisher.on_profile_set(self._profiles.request, lambda: self._base.profiles.names())
        if self._config_desired is not None:
            self._publisher.on_config_desired(self._config_desired)

    def publish_config_reported(self, body: Dict[str, Any]) -> bool:
        return self._publisher.publish_config_reported(body)

    def mqtt_connected(self) -> bool:
        """Whether the MQTT link is up now (what is published goes out rather than waits)."""
        return self._publisher.connected

    def _publish_health(self, report: HealthReport) -> None:
        self._publisher.publish_health(report.to_dict())

    def _alert_rule(self, camera_id: str) -> AlertRule:
        return AlertRule.of(self._config.alert_rules(camera_id))
