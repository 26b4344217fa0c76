"""The appliance's detector factory for models from the fleet service (``artifact`` of a model).

Every model with an ``artifact`` (``model`` or an entry of ``models``) goes through here, each
in its own model's background change; ``models_state`` is keyed by the artifact's name (the
fleet's name of the model), which one model of the appliance runs at most (schema rule).

docs/fleet.md, "Models and engines over the air". Given a ModelConfig with an artifact, the
version is fetched and staged (``artifacts.stage``), the model is loaded from the staged files,
and with TensorRT an engine the fleet service holds for exactly this device's engine key is
used instead of a build (``prebuilt``; the key is compared before anything is fetched, so an
engine of another device is never deserialised). An engine built here is offered to the fleet
service in the background. This runs inside the appliance's background model change
(``edge_app.appliance.model_change``): raising keeps the old model running, and the reason goes
to ``models_state`` and the log.

While the fleet service cannot be reached the fetch is tried again (a cut download resumes),
until it succeeds, the configuration asks for another version, or the appliance stops. At
start, with that model not running yet, a fetch that fails once falls back to its ``path``;
``artifacts.refetch`` asks the service again later and, once it answers, has the appliance load
the model again (``reload``), through this factory. Until a version of that model runs, every
load of it that fails (a refusal, a rollout, the revert to the version that fell back) asks again
later, with a wait that keeps growing up to ``fleet.fallback_retry_max_s``.
"""
from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Set

from edge_app.appliance.report_builders import running_artifact
from edge_app.config.schema import AppConfig, ArtifactConfig, ModelConfig
from edge_app.config.staged_model import staged_copy
from edge_app.detect.base import Detector, DetectorError
from edge_app.detect.tensorrt.cache import EngineKey, read_sidecar
from edge_app.detect.tensorrt.onnx_info import file_sha256
from edge_app.fleet_agent.artifacts.client import FleetClient, FleetRefused, FleetUnreachable
from edge_app.fleet_protocol.artifacts_manifest import ManifestError, engine_for
from edge_app.fleet_agent.artifacts.refetch import Refetch, Reload
from edge_app.fleet_agent.artifacts.stage import ENGINE_FILE, StagedModel, Stager
from edge_app.fleet_agent.artifacts.state import ModelsState
from edge_app.process.backoff import next_retry_s

log = logging.getLogger(__name__)

RETRY_FIRST_S = 2.0
RETRY_MAX_S = 60.0

#: a TensorRT engine is about the size of its network's weights at its precision: rarely more than
#: 2-3x its ONNX file (FP32 weights). A prebuilt engine is read whole into memory to be
#: deserialised, so one far larger than its model is refused (built here instead), whoever offered it.
PREBUILT_MAX_TIMES_ONNX = 8
PREBUILT_MIN_LIMIT_BYTES = 256 * 1024 * 1024


def prebuilt_too_large(engine_bytes: int, onnx_bytes: int) -> Optional[str]:
    """Why a prebuilt engine of ``engine_bytes`` is not fetched for a model of ``onnx_bytes``; None: it may be."""
    limit = max(PREBUILT_MIN_LIMIT_BYTES, PREBUILT_MAX_TIMES_ONNX * onnx_bytes)
    if engine_bytes <= limit:
        return None
    return (f"the fleet's engine for this device is {engine_bytes // (1024 * 1024)} MB, more than this device takes "
            f"for a model of {onnx_bytes // (1024 * 1024)} MB ({limit // (1024 * 1024)} MB); building one here")


class FleetModels:
    """``create_detector`` with ``model.artifact`` resolved through the fleet service."""

    def __init__(self, create: Callable[..., Detector], config: Callable[[], AppConfig], state: ModelsState,
                 stager: Optional[Stager] = None, retry_first_s: float = RETRY_FIRST_S,
                 reload: Optional[Reload] = None) -> None:
        self._create = create
        self._config = config
        self.state = state
        self._stager = stager if stager is not None else Stager(config, state)
        self._retry_first_s = retry_first_s
        # fleet model names whose first fetch was tried: only that one may fall back to model.path
        self._started: Set[str] = set()
        self._stop = threading.Event()
        # reload(model name, section): the appliance loads a model again (None: nothing to reload, no refetch)
        self._reload = reload
        self._refetches: Dict[str, Refetch] = {}  # by fleet model name: at most one alive each
        # fleet model name -> the section whose fallback path runs (it fell back at start), until a
        # version of it runs: each failed load of it asks again later, the refusal included
        self._fell_back: Dict[str, ModelConfig] = {}
        self._last_wait_s: Dict[str, float] = {}  # the wait of the fleet model's last refetch
        self._lock = threading.Lock()

    def close(self) -> None:
        """Stop retrying (the appliance stops); a refetch waiting for its next attempt ends at once."""
        self._stop.set()
        with self._lock:
            refetches = list(self._refetches.values())
        for refetch in refetches:
            refetch.cancel()

    def __call__(self, model: ModelConfig, **options: Any) -> Detector:
        artifact = model.artifact
        if artifact is None:
            return self._create(model, **options)
        name, version = artifact.name, artifact.version
        first = name not in self._started
        self._started.add(name)
        if not first:
            self._cancel_refetch(name)  # this load fetches the version (or another one) itself
        cancel = options.get("cancel") or self._stop
        try:
            staged, client = self._stage(model, cancel, retry=not first)
        except (FleetUnreachable, FleetRefused, ManifestError, OSError) as err:
            reason = str(err)
            if first:
                # Its path runs, so analysis starts; the version is asked for again later, a refusal
                # too (the fleet's operator may mend it), ever less often (docs/fleet.md).
                with self._lock:
                    self._fell_back[name] = model
                if not self._refetch_later(model, reason):  # else the refetch reports it
                    self.state.set(name, version, "failed", reason=f"{reason}; running {model.path}"
                                   + (" until it is fetched" if isinstance(err, FleetUnreachable) else ""))
                return self._create(model, **options)
            self.state.set(name, version, "failed", reason=reason)
            self._refetch_fallback(name, reason)
            raise DetectorError(f"model {name} version {version} could not be fetched: {reason}") from None
        resolved = staged_copy(model, staged.onnx, staged.labels).model_copy(update={"engine_dir": str(staged.dir)})
        if "cancel" in options:  # TensorRT: an engine from the fleet, else a build reported as "building"
            options["prebuilt"] = lambda key: self._prebuilt(model, staged, client, key, cancel)
            options["progress"] = self._building(model, options.get("progress"))
        try:
            detector = self._create(resolved, **options)
        except Exception as err:
            self.state.set(name, version, "failed", reason=str(err) or type(err).__name__)
            self._refetch_fallback(name, str(err) or type(err).__name__)
            raise
        # "running" only once the appliance has swapped it in (``running``): a load that a newer
        # change cancels, or that the appliance's stop discards, never ran.
        engine = getattr(detector, "engine", None)
        if engine is not None and engine.source == "built":
            threading.Thread(target=self._offer, args=(client, Path(engine.path)), name=f"fleet:offer:{name}",
                             daemon=True).start()
        return detector

    def running(self, model: ModelConfig, detector: Detector) -> None:
        """The appliance installed ``detector``, loaded from the section ``model`` (``on_model_running``):
        ``models_state`` says ``running`` for its version when it runs the fleet's files, not its
        fallback ``path``."""
        artifact, _fallback = running_artifact(model, detector)
        if artifact is not None:
            with self._lock:
                self._fell_back.pop(artifact.name, None)
                self._last_wait_s.pop(artifact.name, None)
            self.state.set(artifact.name, artifact.version, "running")

    def _refetch_fallback(self, name: str, reason: str) -> None:
        """A load of the fleet model ``name`` failed while its fallback path runs (a refetch's load, a
        rollout, or the revert to the version that fell back): the version that fell back is asked
        for again later, with the refetches' growing wait."""
        with self._lock:
            fell_back = self._fell_back.get(name)
        if fell_back is not None:
            self._refetch_later(fell_back, reason)

    def _refetch_later(self, model: ModelConfig, reason: str) -> bool:
        """Ask the fleet service again later for ``model``'s version (``artifacts.refetch``); False when
        nobody could load it then (no ``reload``), or the appliance stops."""
        name = model.artifact.name
        with self._lock:
            running = self._refetches.get(name)
            if self._stop.is_set() or self._reload is None:
                return False
            if running is None or not running.alive:  # one per model
                previous_wait_s = running.wait_s if running is not None else self._last_wait_s.get(name)
                self._refetches[name] = Refetch(model, reason, config=self._config, state=self.state,
                                                probe=self._probe, reload=self._reload,
                                                previous_wait_s=previous_wait_s).start()
            return True

    def _cancel_refetch(self, name: str) -> None:
        with self._lock:
            refetch = self._refetches.pop(name, None)
            if refetch is not None and refetch.wait_s is not None:
                self._last_wait_s[name] = refetch.wait_s
        if refetch is not None:
            refetch.cancel()

    def _probe(self, model: ModelConfig) -> None:
        """Whether the fleet service answers for this version: its manifest, only read (the change verifies it)."""
        self._stager.client().manifest(model.artifact.name, model.artifact.version)

    def _stage(self, model: ModelConfig, cancel: threading.Event, retry: bool):
        delay_s = self._retry_first_s
        while True:
            try:
                return self._stager.stage(model, cancel)
            except FleetUnreachable as err:
                if not retry or cancel.is_set() or self._stop.is_set():
                    raise
                artifact = model.artifact
                self.state.set(artifact.name, artifact.version, "failed",
                               reason=f"{err}; trying again in {delay_s:.0f} s")
                if cancel.wait(delay_s) or self._stop.is_set():
                    raise FleetUnreachable(f"{err} (the appliance stopped, or another model was asked for)") from None
                if self._wanted(artifact.name) != artifact:
                    raise FleetUnreachable(f"{err} (another version was asked for meanwhile)") from None
                delay_s = next_retry_s(delay_s, self._retry_first_s, RETRY_MAX_S)

    def _wanted(self, fleet_name: str) -> Optional[ArtifactConfig]:
        """The artifact the configuration asks for now, of the model that runs ``fleet_name``."""
        for model in self._config().model_configs().values():
            if model.artifact is not None and model.artifact.name == fleet_name:
                return model.artifact
        return None

    def _building(self, model: ModelConfig, sink: Optional[Callable[[Any], None]]) -> Callable[[Any], None]:
        artifact = model.artifact

        def report(progress: Any) -> None:
            if progress.state == "building":
                current = self.state.get(artifact.name)
                reason = current.reason if current is not None and current.state == "building" else None
                self.state.set(artifact.name, artifact.version, "building", progress.fraction, reason)
            if sink is not None:
                sink(progress)
        return report

    def _prebuilt(self, model: ModelConfig, staged: StagedModel, client: FleetClient, key: EngineKey,
                  cancel: threading.Event) -> Optional[bytes]:
        """The fleet's engine for exactly ``key``, digest-checked; None (with the reason) to build here."""
        artifact = model.artifact
        engine, reasons = engine_for(staged.manifest, key)
        if engine is None:
            reason = f"no prebuilt engine for this device ({'; '.join(reasons)}); building one here"
            log.info("model %s version %s: %s", artifact.name, artifact.version, reason)
            self.state.set(artifact.name, artifact.version, "building", 0.0, reason)
            return None
        onnx = staged.manifest.file("onnx")
        too_large = prebuilt_too_large(engine.bytes, onnx.bytes if onnx is not None else 0)
        if too_large is not None:  # it would be read whole into memory to deserialise it
            log.warning("model %s version %s: %s", artifact.name, artifact.version, too_large)
            self.state.set(artifact.name, artifact.version, "building", 0.0, too_large)
            return None
        dest = staged.dir / ENGINE_FILE
        self.state.set(artifact.name, artifact.version, "downloading", 0.0, "the prebuilt engine for this device")
        try:
            client.download(engine.sha256, engine.bytes, dest, cancel=cancel,
                            progress=lambda n: self.state.set(artifact.name, artifact.version, "downloading",
                                                              n / max(engine.bytes, 1),
                                                              "the prebuilt engine for this device"))
        except FleetUnreachable as err:
            reason = f"the prebuilt engine could not be fetched ({err}); building one here"
            self.state.set(artifact.name, artifact.version, "building", 0.0, reason)
            return None
        except FleetRefused as err:  # wrong bytes under a signed digest: nothing of this version runs
            raise DetectorError(f"the prebuilt engine was refused: {err}") from None
        try:
            return dest.read_bytes()
        finally:
            dest.unlink(missing_ok=True)  # the engine cache keeps its own copy

    def _offer(self, client: FleetClient, engine_path: Path) -> None:
        """Offer an engine built here to the fleet service; any failure is only logged."""
        try:
            sidecar = read_sidecar(engine_path.with_name(engine_path.name + ".json"))
            key = EngineKey.from_dict(sidecar["key"])
            sha256 = file_sha256(engine_path)
            if sha256 != sidecar["engine"]["sha256"]:
                raise ValueError("the engine changed since it was built")
            answer = client.offer_engine(key.canonical_json(), sha256, engine_path)
            log.info("offered engine %s to the fleet service: %s", engine_path.name,
                     "stored" if answer.get("stored") else "it already had one for this key")
        except (FleetUnreachable, FleetRefused, ValueError, OSError, TypeError) as err:
            log.warning("could not offer engine %s to the fleet service: %s", engine_path.name, err)


__all__ = ["FleetModels"]
