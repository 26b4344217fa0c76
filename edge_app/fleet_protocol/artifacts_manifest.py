"""The manifest the fleet service signs for one device and one model version, parsed and verified.

docs/fleet.md, "Models and engines over the air": the manifest names the SHA-256 and size of
every file of a model version (role ``onnx``, optionally ``labels``) and the prebuilt engines
the service holds for that ONNX, each with its engine key. It is signed with this device's
``fleet.desired_key`` (HMAC-SHA256 over the canonical JSON without ``signature``), so a fleet
service, proxy or DNS name that is not the one holding the key cannot make this appliance run a
file. Everything in it is bounded and checked before any of it is used.
"""
from __future__ import annotations

import hmac
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from edge_app.finite_json import loads_finite
from edge_app.config.staged_model import ROLE_FILES
from edge_app.detect.tensorrt.cache import EngineKey
from edge_app.canonical_json import canonical_json
from edge_app.fleet_protocol.desired_signature import keyed_digest

#: a manifest lists a few files and engines; more than this is not one
MAX_MANIFEST_BYTES = 1 << 20
MAX_ENGINES = 64
#: the largest model file and engine the appliance downloads (an engine of a big model is ~1 GB)
MAX_FILE_BYTES = 4 << 30
#: the largest labels file: the fleet service stores none larger, the appliance fetches none larger
MAX_LABELS_BYTES = 1 << 20
#: the files of a model version, and the names they are staged under (never a name from the server)
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


class ManifestError(Exception):
    """The manifest is not one this appliance may act on; the text says why."""


@dataclass(frozen=True)
class ManifestFile:
    role: str
    sha256: str
    bytes: int


@dataclass(frozen=True)
class ManifestEngine:
    key: Dict[str, Any]
    sha256: str
    bytes: int


@dataclass(frozen=True)
class Manifest:
    device_id: str
    model: str
    version: str
    issued: int
    files: Tuple[ManifestFile, ...]
    engines: Tuple[ManifestEngine, ...]

    def file(self, role: str) -> Optional[ManifestFile]:
        return next((f for f in self.files if f.role == role), None)


def manifest_signature(key: str, manifest: Dict[str, Any]) -> str:
    """HMAC-SHA256 (hex) with ``key`` over the canonical JSON of ``manifest`` without its signature.

    The fleet service signs with it and the appliance verifies with it; ValueError when the
    manifest holds NaN or infinity (no manifest is signed with them).
    """
    unsigned = {k: v for k, v in manifest.items() if k != "signature"}
    return keyed_digest(key, canonical_json(unsigned).encode("ascii"))


def _count(value: Any, what: str, most: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= most:
        raise ManifestError(f"{what} must be a whole number of bytes up to {most}")
    return value


def _sha(value: Any, what: str) -> str:
    if not isinstance(value, str) or not _SHA256.match(value):
        raise ManifestError(f"{what} must be a SHA-256 of 64 lowercase hexadecimal digits")
    return value


def _files(value: Any) -> Tuple[ManifestFile, ...]:
    if not isinstance(value, list) or not 1 <= len(value) <= len(ROLE_FILES):
        raise ManifestError(f"files must list 1 to {len(ROLE_FILES)} files")
    found: Dict[str, ManifestFile] = {}
    for entry in value:
        role = entry.get("role") if isinstance(entry, dict) else None
        if not isinstance(role, str) or role not in ROLE_FILES or role in found:  # a list or object is no role
            raise ManifestError(f"each file needs a role of {', '.join(ROLE_FILES)}, each role once")
        most = MAX_LABELS_BYTES if role == "labels" else MAX_FILE_BYTES
        found[role] = ManifestFile(role, _sha(entry.get("sha256"), f"{role}.sha256"),
                                   _count(entry.get("bytes"), f"{role}.bytes", most))
    if "onnx" not in found:
        raise ManifestError("the manifest names no ONNX file")
    return tuple(found.values())


def _engines(value: Any) -> Tuple[ManifestEngine, ...]:
    if not isinstance(value, list) or len(value) > MAX_ENGINES:
        raise ManifestError(f"engines must be a list of at most {MAX_ENGINES}")
    engines = []
    for index, entry in enumerate(value):
        if not isinstance(entry, dict) or not isinstance(entry.get("key"), dict):
            raise ManifestError(f"engines.{index} needs a key")
        engines.append(ManifestEngine(dict(entry["key"]), _sha(entry.get("sha256"), f"engines.{index}.sha256"),
                                      _count(entry.get("bytes"), f"engines.{index}.bytes", MAX_FILE_BYTES)))
    return tuple(engines)


def verify_manifest(body: bytes, *, desired_key: Optional[str], device_id: str, name: str, version: str) -> Manifest:
    """The manifest in ``body`` if it was signed for this device, model and version; else ManifestError."""
    if not desired_key:
        raise ManifestError("fleet.desired_key is not set: a manifest cannot be verified without it")
    if len(body) > MAX_MANIFEST_BYTES:
        raise ManifestError(f"the manifest is larger than {MAX_MANIFEST_BYTES} bytes")
    try:
        data = loads_finite(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):  # RecursionError: nested deeper than Python goes
        raise ManifestError("the manifest is not JSON") from None
    if not isinstance(data, dict):
        raise ManifestError("the manifest is not a JSON object")
    signature = data.get("signature")
    try:
        expected = manifest_signature(desired_key, data)
    except ValueError:  # NaN or infinity: never signed
        expected = ""
    if (not expected or not isinstance(signature, str)
            or not hmac.compare_digest(signature.encode("ascii", "replace"), expected.encode())):
        raise ManifestError("the manifest's signature does not verify with fleet.desired_key")
    # Signed by the key holder; still only for this device, model and version (no replay of another's).
    if data.get("device_id") != device_id:
        raise ManifestError(f"the manifest is for device {str(data.get('device_id'))[:64]!r}, not {device_id!r}")
    if data.get("model") != name or data.get("version") != version:
        raise ManifestError(f"the manifest is for {str(data.get('model'))[:64]} version {str(data.get('version'))[:32]}, "
                            f"not {name} version {version}")
    issued = data.get("issued")
    if isinstance(issued, bool) or not isinstance(issued, int):
        raise ManifestError("the manifest has no issued time")
    return Manifest(device_id, name, version, issued, _files(data.get("files")), _engines(data.get("engines")))


def engine_for(manifest: Manifest, key: EngineKey) -> Tuple[Optional[ManifestEngine], List[str]]:
    """(the engine whose key is exactly ``key``, None) or (None, why the nearest one does not fit)."""
    wanted = key.to_dict()
    nearest: Optional[List[str]] = None
    for engine in manifest.engines:
        if set(engine.key) != set(wanted):
            reasons = [f"its key has the fields {', '.join(sorted(engine.key))[:200]}"]
        else:
            try:
                reasons = key.differences(EngineKey.from_dict(engine.key))
            except (ValueError, TypeError) as err:
                reasons = [f"its key is not valid ({err})"]
        if not reasons:
            return engine, []
        if nearest is None or len(reasons) < len(nearest):
            nearest = reasons
    return None, nearest if nearest is not None else ["the fleet service holds no engine for this model"]


__all__ = ["Manifest", "ManifestEngine", "ManifestError", "ManifestFile", "ROLE_FILES", "engine_for",
           "manifest_signature", "verify_manifest"]
