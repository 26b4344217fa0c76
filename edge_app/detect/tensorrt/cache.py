"""The engine cache: built engines in ``model.engine_dir``, each with a JSON sidecar holding its key.

A TensorRT engine only loads on the TensorRT version and GPU it was built for, and silently
depends on the ONNX it came from. The sidecar records all of that, so a JetPack upgrade, a new
model file or a changed setting is noticed before the engine is even read, and leads to a
rebuild with one log line saying why. Files are written atomically (temp file + rename), the
sidecar last, so a crash mid-write leaves nothing that looks valid.
"""
from __future__ import annotations

import hashlib
import json
import logging
import re
import struct
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from edge_app.canonical_json import canonical_json
from edge_app.process.atomic_file import write_atomic

log = logging.getLogger(__name__)

SIDECAR_SCHEMA = 1
#: longest metadata header accepted at the front of an Ultralytics-exported engine
MAX_HEADER_BYTES = 1 << 20


@dataclass(frozen=True)
class EngineKey:
    """Everything a built engine depends on; any difference means it must be rebuilt."""

    onnx_sha256: str
    tensorrt_version: str
    gpu_name: str
    compute_capability: str
    precision: str
    max_batch: int
    input_size: Tuple[int, int]
    dla_core: Optional[int]
    #: "L4T R35.4.1" on a Jetson, "driver 580.65.06" on a discrete GPU (edge_app.detect.tensorrt.platform)
    platform: str

    def to_dict(self) -> Dict[str, Any]:
        data = asdict(self)
        data["input_size"] = list(self.input_size)
        return data

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "EngineKey":
        names = {f.name for f in fields(cls)}
        missing = names - set(data)
        if missing:
            raise ValueError(f"key misses {', '.join(sorted(missing))}")
        values = {name: data[name] for name in names}
        values["input_size"] = tuple(int(v) for v in values["input_size"])
        values["max_batch"] = int(values["max_batch"])
        for name in ("onnx_sha256", "tensorrt_version", "gpu_name", "compute_capability", "precision", "platform"):
            if not isinstance(values[name], str):
                raise ValueError(f"key field {name} is not text")
        if values["dla_core"] is not None and not isinstance(values["dla_core"], int):
            raise ValueError("key field dla_core is not a number")
        if len(values["input_size"]) != 2:
            raise ValueError("key field input_size is not [height, width]")
        return cls(**values)

    def canonical_json(self) -> str:
        """The key as the fleet protocol writes it (X-Engine-Key): sorted keys, no spaces."""
        return canonical_json(self.to_dict())

    def differences(self, cached: "EngineKey") -> List[str]:
        """Human-readable reasons why an engine built for ``cached`` does not fit this key."""
        reasons = []
        if cached.onnx_sha256 != self.onnx_sha256:
            reasons.append("the ONNX file changed")
        labels = (("tensorrt_version", "TensorRT"), ("gpu_name", "GPU"), ("compute_capability", "compute capability"),
                  ("precision", "precision"), ("max_batch", "max_batch"), ("input_size", "input size"),
                  ("dla_core", "DLA core"), ("platform", "platform"))
        for name, label in labels:
            old, new = getattr(cached, name), getattr(self, name)
            if old != new:
                reasons.append(f"{label} {_show(old)} -> {_show(new)}")
        return reasons


def _show(value: Any) -> str:
    if isinstance(value, tuple):
        return "x".join(str(v) for v in reversed(value))  # (h, w) shown as WxH
    return "none" if value is None else str(value)


@dataclass(frozen=True)
class EnginePaths:
    engine: Path
    sidecar: Path
    lock: Path


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "model"


def engine_paths(engine_dir: Path, model_stem: str, key: EngineKey) -> EnginePaths:
    """Where the engine for this model and configuration lives.

    The name holds the configuration (precision, batch, size, DLA), so switching settings back and
    forth keeps both engines; the version, GPU and ONNX checksum live only in the sidecar, so an
    upgrade replaces the stale engine instead of leaving it behind.
    """
    height, width = key.input_size
    name = f"{_slug(model_stem)}-{key.precision}-b{key.max_batch}-{width}x{height}"
    if key.dla_core is not None:
        name += f"-dla{key.dla_core}"
    engine = engine_dir / f"{name}.engine"
    return EnginePaths(engine, engine.with_name(engine.name + ".json"), engine.with_name(engine.name + ".lock"))


def timing_cache_path(engine_dir: Path, tensorrt_version: str, gpu_name: str, compute_capability: str) -> Path:
    """One timing cache per TensorRT version and GPU: it is model-independent but not portable."""
    name = _slug(f"trt{tensorrt_version}-{gpu_name}-sm{compute_capability}").replace(".", "_")
    return engine_dir / f"{name}.timing-cache"


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_engine(paths: EnginePaths, engine: bytes, key: EngineKey, extra: Dict[str, Any]) -> None:
    """Store a freshly built engine, then its sidecar (the sidecar is what makes it count)."""
    write_atomic(paths.engine, engine, make_folder=True)
    sidecar = {
        "schema": SIDECAR_SCHEMA,
        "key": key.to_dict(),
        "engine": {"file": paths.engine.name, "bytes": len(engine), "sha256": sha256_bytes(engine)},
        **extra,
    }
    write_atomic(paths.sidecar, json.dumps(sidecar, indent=2, sort_keys=True).encode(), make_folder=True)


def read_sidecar(path: Path) -> Dict[str, Any]:
    """The sidecar as a dict; ValueError saying what is wrong with it."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"unreadable: {err}") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"not valid JSON: {err.msg} at line {err.lineno}") from None
    if not isinstance(data, dict) or data.get("schema") != SIDECAR_SCHEMA:
        raise ValueError("not an edge-app engine sidecar of a known schema")
    engine = data.get("engine")
    if not isinstance(engine, dict) or not isinstance(engine.get("bytes"), int) or not isinstance(engine.get("sha256"), str):
        raise ValueError("no engine size and checksum")
    if not isinstance(data.get("key"), dict):
        raise ValueError("no key")
    return data


@dataclass(frozen=True)
class CacheCheck:
    usable: bool
    reason: str
    sidecar: Optional[Dict[str, Any]] = None
    engine: Optional[bytes] = None


def check_cached_engine(paths: EnginePaths, expected: EngineKey) -> CacheCheck:
    """Whether the cached engine can be used for ``expected``; if not, the one-line reason why.

    A usable result carries the engine bytes, already checked against the sidecar's size and
    checksum, so a truncated or bit-flipped file is caught before TensorRT reads it.
    """
    if not paths.engine.exists():
        return CacheCheck(False, f"no cached engine {paths.engine.name} yet")
    if not paths.sidecar.exists():
        return CacheCheck(False, f"engine {paths.engine.name} has no sidecar {paths.sidecar.name}, so its origin is unknown")
    try:
        sidecar = read_sidecar(paths.sidecar)
        if set(sidecar["key"]) == {f.name for f in fields(EngineKey)} - {"platform"}:
            # Written before the key named the L4T release or driver: it may be from before an upgrade.
            return CacheCheck(False, f"engine {paths.engine.name} was cached before edge-app recorded the platform "
                                     "(L4T release or driver)", sidecar)
        cached = EngineKey.from_dict(sidecar["key"])
    except (ValueError, TypeError) as err:
        return CacheCheck(False, f"sidecar {paths.sidecar.name} is corrupt ({err})")
    reasons = expected.differences(cached)
    if reasons:
        return CacheCheck(False, "; ".join(reasons), sidecar)
    try:
        engine = paths.engine.read_bytes()
    except OSError as err:
        return CacheCheck(False, f"engine {paths.engine.name} cannot be read ({err.strerror})", sidecar)
    expected_bytes = sidecar["engine"]["bytes"]
    if len(engine) != expected_bytes:
        what = "truncated" if len(engine) < expected_bytes else "larger than recorded"
        return CacheCheck(False, f"engine {paths.engine.name} is {what} ({len(engine)} of {expected_bytes} bytes)", sidecar)
    if sha256_bytes(engine) != sidecar["engine"]["sha256"]:
        return CacheCheck(False, f"engine {paths.engine.name} is corrupt (checksum mismatch)", sidecar)
    return CacheCheck(True, "cached engine matches", sidecar, engine)


def split_ultralytics_header(data: bytes) -> Tuple[Optional[Dict[str, Any]], bytes]:
    """(metadata, engine) for engines exported by Ultralytics, which prefix a length + JSON header.

    Any other file comes back unchanged with None metadata.
    """
    if len(data) < 8:
        return None, data
    (length,) = struct.unpack("<i", data[:4])
    if not 2 <= length <= min(MAX_HEADER_BYTES, len(data) - 4):
        return None, data
    try:
        metadata = json.loads(data[4:4 + length].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None, data
    if not isinstance(metadata, dict):
        return None, data
    return metadata, data[4 + length:]
