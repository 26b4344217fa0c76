"""From a ModelConfig to a loaded engine: a user's .engine as is, else the cache, else a build.

The cached engine is checked (key, size, checksum) without a lock; only a rebuild takes the
file lock, and re-checks under it, so a second process that waited simply loads what the first
one built. Every rebuild decision is logged once, with its reason.
"""
from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple, TypeVar

from filelock import FileLock, Timeout

from edge_app.detect.base import DetectorError
from edge_app.detect.tensorrt.build import BuildSettings, EngineBuildError, build_engine
from edge_app.detect.tensorrt.cache import (MAX_HEADER_BYTES, CacheCheck, EngineKey, EnginePaths, check_cached_engine,
                                            engine_paths, read_sidecar, split_ultralytics_header, timing_cache_path,
                                            write_engine)
from edge_app.detect.model_metadata import resolve_input_hw
from edge_app.detect.tensorrt.onnx_info import file_sha256, read_onnx_info
from edge_app.detect.tensorrt.platform import device_platform
from edge_app.detect.tensorrt.progress import BuildReporter, ProgressCallback
from edge_app.detect.tensorrt.runtime import EngineLoadError
from edge_app.version import __version__

log = logging.getLogger(__name__)

#: how long a second process waits for another one's build before giving up
LOCK_TIMEOUT_S = 3600.0

T = TypeVar("T")

#: prebuilt(key) -> the bytes of an engine built elsewhere for exactly ``key`` (digest already verified), or
#: None to build here; what offers it (the fleet: edge_app.fleet_agent) checks the key before fetching it
PrebuiltSource = Callable[[EngineKey], Optional[bytes]]


@dataclass
class PreparedEngine:
    """Where an engine came from, for logs, ``describe()`` and the selftest."""

    source: str  # "user", "cache", "prebuilt" (fetched from the fleet) or "built"
    path: Path
    metadata: Dict[str, str] = field(default_factory=dict)  # the ONNX's metadata_props (names, imgsz, ...)
    sidecar: Optional[Dict[str, Any]] = None
    reason: str = ""



def user_engine_metadata(path: Path, header: Optional[Dict[str, Any]] = None) -> Dict[str, str]:
    """The metadata (names, imgsz, ...) of a user engine: its Ultralytics header, else its sidecar.

    ``header`` is the already split header; without it, only the head of the file is read.
    """
    if header is None:
        with open(path, "rb") as handle:
            header, _ = split_ultralytics_header(handle.read(4 + MAX_HEADER_BYTES))
    if header:
        return {str(k): str(v) for k, v in header.items()}
    sidecar_path = path.with_name(path.name + ".json")
    if sidecar_path.is_file():
        try:
            return dict(json.loads(sidecar_path.read_text(encoding="utf-8")).get("model", {}).get("metadata", {}))
        except (OSError, ValueError, AttributeError):
            log.warning("ignoring unreadable sidecar %s", sidecar_path)
    return {}


def device_identity(trt: Any, device: Any) -> Dict[str, str]:
    """The key fields that name this device (not the model nor the settings)."""
    major, minor = device.compute_capability
    return {"tensorrt_version": str(trt.__version__), "gpu_name": device.name,
            "compute_capability": f"{major}.{minor}", "platform": device_platform()}


def user_engine_key_problem(path: Path, identity: Dict[str, str]) -> Optional[str]:
    """Why a user engine whose sidecar names another device must not be deserialised (None: go ahead).

    Deserialising an engine built for another TensorRT, GPU or driver can crash the process, so
    a sidecar that says so is believed; an engine without a sidecar is tried as before.
    """
    sidecar_path = path.with_name(path.name + ".json")
    if not sidecar_path.is_file():
        return None
    try:
        data = read_sidecar(sidecar_path)
    except ValueError:
        return None  # a user's own JSON file of another kind: not a statement about the device
    recorded = dict(data["key"])
    if "platform" not in recorded:
        log.warning("engine %s was recorded without its platform (L4T release or driver); it is tried as is", path)
        recorded["platform"] = identity["platform"]
    try:
        built_for = EngineKey.from_dict(recorded)
    except (ValueError, TypeError) as err:
        return f"its sidecar {sidecar_path.name} has a corrupt key ({err})"
    reasons = replace(built_for, **identity).differences(built_for)
    return "; ".join(reasons) if reasons else None


def load_user_engine(path: Path, deserialize: Callable[[bytes, str], T],
                     identity: Optional[Dict[str, str]] = None) -> Tuple[T, PreparedEngine]:
    """A user-supplied engine, used as it is; a clear DetectorError if it does not load here.

    With ``identity`` (``device_identity``), an engine whose sidecar names another device is
    refused before it is read.
    """
    if not path.is_file():
        raise DetectorError(f"engine file {path} does not exist")
    problem = user_engine_key_problem(path, identity) if identity is not None else None
    if problem is not None:
        raise DetectorError(f"engine {path} was built for another device ({problem}); it is not loaded, because an "
                            f"engine only runs with the TensorRT, GPU and driver it was built for: point model.path "
                            f"at the .onnx and edge-app builds and caches one for this device")
    header, engine = split_ultralytics_header(path.read_bytes())
    metadata = user_engine_metadata(path, header)
    try:
        loaded = deserialize(engine, f"engine {path}")
    except EngineLoadError as err:
        raise DetectorError(
            f"{err}; an engine only loads with the TensorRT version and GPU it was built for, so build it again "
            f"on this device (point model.path at the .onnx and edge-app builds and caches it)") from None
    return loaded, PreparedEngine("user", path, metadata)


def engine_key(model: Any, onnx_sha256: str, input_hw: Tuple[int, int], trt_version: str, gpu_name: str,
               compute_capability: Tuple[int, int], max_batch: int, platform: str) -> EngineKey:
    return EngineKey(
        onnx_sha256=onnx_sha256, tensorrt_version=trt_version, gpu_name=gpu_name,
        compute_capability=f"{compute_capability[0]}.{compute_capability[1]}", precision=model.precision,
        max_batch=int(max_batch), input_size=(int(input_hw[0]), int(input_hw[1])), dla_core=model.dla_core,
        platform=platform,
    )


class EngineCache:
    """Loads or builds the engine for one ModelConfig on one device."""

    def __init__(self, trt: Any, model: Any, device: Any, progress: Optional[ProgressCallback] = None,
                 cancel: Optional[threading.Event] = None, prebuilt: Optional[PrebuiltSource] = None) -> None:
        self.trt = trt
        self.prebuilt = prebuilt
        self.model = model
        self.device = device
        self.progress = progress
        self.onnx_path = Path(model.path)
        self.engine_dir = Path(model.engine_dir)
        self.info = read_onnx_info(self.onnx_path)
        self.input_hw = resolve_input_hw(self.info.static_hw, model.configured_input_size, model.input_size,
                                         self.info.metadata, str(model.path))
        self.max_batch = model.max_batch if self.info.dynamic_batch else int(self.info.input_shape[0])
        if self.max_batch != model.max_batch:
            log.info("model %s has a fixed batch of %d; max_batch %d becomes %d", model.path, self.max_batch,
                     model.max_batch, self.max_batch)
        self.onnx_sha256 = file_sha256(self.onnx_path)
        self.key = engine_key(model, self.onnx_sha256, self.input_hw, str(trt.__version__), device.name,
                              device.compute_capability, self.max_batch, device_platform())
        self.paths: EnginePaths = engine_paths(self.engine_dir, self.onnx_path.stem, self.key)
        self._last_sidecar: Optional[Dict[str, Any]] = None
        self._reporter: Optional[BuildReporter] = None
        # Shared with the caller (the appliance sets it on shutdown); also set by cancel().
        self._cancel = cancel if cancel is not None else threading.Event()

    def cancel(self) -> None:
        """Ask a running build to stop (TensorRT 10 stops at its next progress step); a build not
        yet begun does not begin."""
        self._cancel.set()
        if self._reporter is not None:
            self._reporter.cancel()

    def load(self, deserialize: Callable[[bytes, str], T], force: bool = False) -> Tuple[T, PreparedEngine]:
        """The engine, from the cache when it fits, else freshly built (``force`` always builds)."""
        failed_to_load = False
        if not force:
            check = check_cached_engine(self.paths, self.key)
            if check.usable:
                loaded = self._try_deserialize(check, deserialize)
                if loaded is not None:
                    return loaded
                failed_to_load = True
        try:
            self.engine_dir.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise DetectorError(f"model.engine_dir {self.engine_dir} cannot be created ({err.strerror})") from None
        lock = FileLock(str(self.paths.lock), timeout=LOCK_TIMEOUT_S)
        asked_s = time.monotonic()
        try:
            with lock:
                # a forced build that had to wait found another process's build just finished: use it
                force = force and time.monotonic() - asked_s < 1.0
                return self._load_locked(deserialize, force, failed_to_load)
        except Timeout:
            raise DetectorError(f"another process has been building {self.paths.engine} for over "
                                f"{LOCK_TIMEOUT_S / 60:.0f} minutes (lock {self.paths.lock})") from None

    def _try_deserialize(self, check: CacheCheck, deserialize: Callable[[bytes, str], T]) -> Optional[Tuple[T, PreparedEngine]]:
        self._last_sidecar = check.sidecar
        try:
            loaded = deserialize(check.engine or b"", f"cached engine {self.paths.engine}")
        except EngineLoadError:
            return None
        metadata = dict((check.sidecar or {}).get("model", {}).get("metadata", {}))
        return loaded, PreparedEngine("cache", self.paths.engine, metadata, check.sidecar)

    def _load_locked(self, deserialize: Callable[[bytes, str], T], force: bool,
                     failed_to_load: bool) -> Tuple[T, PreparedEngine]:
        missing = False
        if force:
            reason = "rebuild requested (--force)"
        else:
            # another process may have finished a build while this one waited for the lock
            check = check_cached_engine(self.paths, self.key)
            loaded = None
            if check.usable and not (failed_to_load and check.sidecar == self._last_sidecar):
                loaded = self._try_deserialize(check, deserialize)
            if loaded is not None:
                return loaded
            missing = not self.paths.engine.exists()
            reason = check.reason if not check.usable else f"cached engine {self.paths.engine.name} did not deserialise"
            if self.prebuilt is not None and not failed_to_load:
                loaded = self._load_prebuilt(deserialize)
                if loaded is not None:
                    return loaded
        level = logging.INFO if missing else logging.WARNING
        log.log(level, "building TensorRT engine %s: %s", self.paths.engine, reason)
        engine = self._build()
        try:
            loaded = deserialize(engine, f"freshly built engine {self.paths.engine}")
        except EngineLoadError as err:
            raise DetectorError(f"{err}; the TensorRT installation looks broken") from None
        return loaded, PreparedEngine("built", self.paths.engine, dict(self.info.metadata), None, reason)

    def _load_prebuilt(self, deserialize: Callable[[bytes, str], T]) -> Optional[Tuple[T, PreparedEngine]]:
        """An engine built elsewhere for exactly this key, cached like a build of this device's; None: build."""
        engine = self.prebuilt(self.key) if self.prebuilt is not None else None
        if engine is None:
            return None
        extra = {"model": {"onnx": str(self.onnx_path.resolve()), "metadata": dict(self.info.metadata),
                           "input_name": self.info.input_name},
                 "prebuilt": {"fetched_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}}
        try:
            write_engine(self.paths, engine, self.key, extra)
        except OSError as err:
            log.warning("could not cache the prebuilt engine in %s (%s)", self.engine_dir, err.strerror)
        check = check_cached_engine(self.paths, self.key)
        loaded = self._try_deserialize(check, deserialize) if check.usable else None
        if loaded is None:
            log.warning("the prebuilt engine for %s did not deserialise; building one here", self.onnx_path)
            return None
        log.info("using the prebuilt engine %s instead of building one", self.paths.engine.name)
        engine_loaded, prepared = loaded
        return engine_loaded, PreparedEngine("prebuilt", prepared.path, prepared.metadata, prepared.sidecar)

    def _build(self) -> bytes:
        model = self.model
        settings = BuildSettings(
            precision=model.precision, max_batch=self.max_batch, input_hw=self.input_hw,
            workspace_mb=model.workspace_mb, dla_core=model.dla_core,
            calibration_dir=Path(model.calibration_dir) if model.calibration_dir else None,
            engine_dir=self.engine_dir,
        )
        if self._cancel.is_set():
            raise EngineBuildError(f"the engine build for {self.onnx_path} was cancelled")
        sinks: List[ProgressCallback] = [self.progress] if self.progress is not None else []
        reporter = self._reporter = BuildReporter(str(self.onnx_path), sinks, cancel=self._cancel)
        timing = timing_cache_path(self.engine_dir, self.key.tensorrt_version, self.key.gpu_name,
                                   self.key.compute_capability)
        engine, notes = build_engine(self.trt, self.onnx_path, self.info, settings, onnx_sha256=self.onnx_sha256,
                                     device=self.device, reporter=reporter, timing_cache=timing)
        extra = {
            "model": {"onnx": str(self.onnx_path.resolve()), "metadata": dict(self.info.metadata),
                      "input_name": self.info.input_name},
            "build": {**notes, "built_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                      "edge_app_version": __version__, "workspace_mb": model.workspace_mb},
        }
        try:
            write_engine(self.paths, engine, self.key, extra)
        except OSError as err:
            log.warning("could not cache the engine in %s (%s); it will be rebuilt next time", self.engine_dir,
                        err.strerror)
        log.info("built %s in %.0f s (%s)", self.paths.engine.name, notes.get("build_seconds", 0),
                 notes.get("applied_precision", model.precision))
        return engine
