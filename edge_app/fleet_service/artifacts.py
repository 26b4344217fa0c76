"""The fleet's records of model versions and prebuilt engines, and the manifests signed from them.

Files live in the :class:`~edge_app.fleet_service.blobs.BlobStore`; the database says which
digest is the ONNX file or the labels of ``<name>/<version>``, and which engine was built from
which ONNX file for which engine key. A model version never changes once stored (a second
upload with other bytes is a conflict), and the first engine offered for a key is the one kept,
so every device asking for the same thing gets the same bytes.
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable, Dict, List, Optional

from edge_app.config.schema_model import ARTIFACT_NAME_PATTERN, ARTIFACT_VERSION_PATTERN, is_artifact_part
from edge_app.fleet_protocol.artifacts_manifest import MAX_ENGINES, manifest_signature
from edge_app.canonical_json import canonical_json
from edge_app.fleet_service.blobs import StoredBlob, is_sha256
from edge_app.fleet_service.db import Connection

MAX_ENGINE_KEY_CHARS = 4096
#: engines one device may keep for one model file: one per engine key it has had (a new TensorRT,
#: driver or JetPack, another precision or batch) with room to spare; without a bound one device
#: could crowd a model's manifest past what appliances take (MAX_ENGINES)
MAX_ENGINES_PER_DEVICE = 8
MAX_ENGINE_KEY_FIELDS = 16
_KEY_FIELD = re.compile(r"[a-z][a-z0-9_]{0,31}")
MAX_KEY_TEXT_CHARS = 256


class ArtifactConflict(Exception):
    """What was sent differs from what is stored under the same name (versions never change)."""


@dataclass(frozen=True)
class FileRecord:
    role: str
    sha256: str
    bytes: int


@dataclass(frozen=True)
class ModelRecord:
    name: str
    version: str
    onnx: FileRecord
    labels: Optional[FileRecord]
    created_at: float

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class EngineRecord:
    key: Dict[str, Any]
    sha256: str
    bytes: int
    device_id: str
    created_at: float

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


def check_name(name: str, version: str) -> None:
    """ValueError unless ``name`` and ``version`` are a model name and version an appliance can run."""
    if not is_artifact_part(name, ARTIFACT_NAME_PATTERN):
        raise ValueError(f"a model name must match {ARTIFACT_NAME_PATTERN}, not dots only, got {name[:80]!r}")
    if not is_artifact_part(version, ARTIFACT_VERSION_PATTERN):
        raise ValueError(f"a model version must match {ARTIFACT_VERSION_PATTERN}, not dots only, got {version[:80]!r}")


def parse_engine_key(text: str) -> Dict[str, Any]:
    """The engine key of an ``X-Engine-Key`` header; ValueError naming what is wrong.

    The fleet does not interpret the key beyond ``onnx_sha256`` and ``platform``: it stores it as
    canonical JSON and hands it back, and the appliance compares it with its own field by field.
    """
    if len(text) > MAX_ENGINE_KEY_CHARS:
        raise ValueError(f"the engine key is longer than {MAX_ENGINE_KEY_CHARS} characters")
    try:
        key = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than Python goes
        raise ValueError("the engine key is not JSON") from None
    if not isinstance(key, dict) or not 0 < len(key) <= MAX_ENGINE_KEY_FIELDS:
        raise ValueError(f"the engine key must be a JSON object of 1 to {MAX_ENGINE_KEY_FIELDS} fields")
    for field, value in key.items():
        if not _KEY_FIELD.fullmatch(field):
            raise ValueError(f"engine key field {field[:40]!r} is not a lowercase name")
        if not _key_value_ok(value):
            raise ValueError(f"engine key field {field}: a string (at most {MAX_KEY_TEXT_CHARS} characters), "
                             "an integer, null or a list of two integers")
    if not is_sha256(key.get("onnx_sha256")):
        raise ValueError("the engine key needs onnx_sha256: 64 lowercase hexadecimal digits")
    if not isinstance(key.get("platform"), str) or not key["platform"]:
        raise ValueError("the engine key needs platform (the L4T or driver version the engine was built on)")
    return key


def _key_value_ok(value: Any) -> bool:
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and abs(value) < 1 << 31):
        return True
    if isinstance(value, str):
        return len(value) <= MAX_KEY_TEXT_CHARS
    return (isinstance(value, list) and len(value) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 16 for v in value))


class Artifacts:
    """Model and engine records on ``conn`` (the API's connection)."""

    def __init__(self, conn: Connection, clock: Callable[[], float] = time.time):
        self._conn = conn
        self._clock = clock

    def note_blob(self, blob: StoredBlob) -> None:
        with self._conn.transaction() as conn:
            conn.execute("INSERT INTO blobs (sha256, bytes, created_at) VALUES (?, ?, ?) ON CONFLICT (sha256) DO NOTHING",
                         (blob.sha256, blob.bytes, self._clock()))

    def forget_if_unused(self, sha256: str) -> bool:
        """Drop the record of a blob no model or engine names (a refused upload); True when dropped."""
        with self._conn.transaction() as conn:
            used = conn.query_one(
                "SELECT 1 FROM models WHERE onnx_sha256 = ? OR labels_sha256 = ? "
                "UNION SELECT 1 FROM engines WHERE sha256 = ?", (sha256, sha256, sha256))
            if used is None:
                conn.execute("DELETE FROM blobs WHERE sha256 = ?", (sha256,))
        return used is None

    def blob_bytes(self, sha256: str) -> Optional[int]:
        with self._conn.reading() as conn:
            row = conn.query_one("SELECT bytes FROM blobs WHERE sha256 = ?", (sha256,))
        return int(row[0]) if row else None

    def add_model(self, name: str, version: str, onnx: StoredBlob, labels: Optional[StoredBlob]) -> bool:
        """Store ``name/version``; True when new, False when the same files were stored already,
        ArtifactConflict when other files were."""
        with self._conn.transaction() as conn:
            row = conn.query_one("SELECT onnx_sha256, labels_sha256 FROM models WHERE name = ? AND version = ?",
                                 (name, version))
            if row is not None:
                if row[0] != onnx.sha256 or (labels is not None and row[1] not in (None, labels.sha256)):
                    raise ArtifactConflict(f"model {name} version {version} is stored with other files; "
                                           "a version never changes: upload a new version")
                if labels is not None and row[1] is None:
                    conn.execute("UPDATE models SET labels_sha256 = ?, labels_bytes = ? WHERE name = ? AND version = ?",
                                 (labels.sha256, labels.bytes, name, version))
                return False
            conn.execute(
                "INSERT INTO models (name, version, onnx_sha256, onnx_bytes, labels_sha256, labels_bytes, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (name, version, onnx.sha256, onnx.bytes, labels.sha256 if labels else None,
                 labels.bytes if labels else None, self._clock()))
        return True

    def set_labels(self, name: str, version: str, labels: StoredBlob) -> bool:
        """Attach labels to a stored version; LookupError unknown, ArtifactConflict other labels stored."""
        with self._conn.transaction() as conn:
            row = conn.query_one("SELECT labels_sha256 FROM models WHERE name = ? AND version = ?", (name, version))
            if row is None:
                raise LookupError(f"unknown model {name} version {version}")
            if row[0] not in (None, labels.sha256):
                raise ArtifactConflict(f"model {name} version {version} has other labels; upload a new version")
            conn.execute("UPDATE models SET labels_sha256 = ?, labels_bytes = ? WHERE name = ? AND version = ?",
                         (labels.sha256, labels.bytes, name, version))
        return row[0] is None

    def models(self, name: Optional[str] = None) -> List[ModelRecord]:
        sql = ("SELECT name, version, onnx_sha256, onnx_bytes, labels_sha256, labels_bytes, created_at FROM models"
               + (" WHERE name = ?" if name else "") + " ORDER BY name, created_at")
        with self._conn.reading() as conn:
            rows = conn.query(sql, (name,) if name else ())
        return [_model(row) for row in rows]

    def model(self, name: str, version: str) -> Optional[ModelRecord]:
        with self._conn.reading() as conn:
            row = conn.query_one(
                "SELECT name, version, onnx_sha256, onnx_bytes, labels_sha256, labels_bytes, created_at FROM models "
                "WHERE name = ? AND version = ?", (name, version))
        return _model(row) if row else None

    def onnx_known(self, sha256: str) -> bool:
        with self._conn.reading() as conn:
            return conn.query_one("SELECT 1 FROM models WHERE onnx_sha256 = ?", (sha256,)) is not None

    def engine_sha(self, key: Dict[str, Any]) -> Optional[str]:
        with self._conn.reading() as conn:
            row = conn.query_one("SELECT sha256 FROM engines WHERE engine_key = ?", (canonical_json(key),))
        return row[0] if row else None

    def add_engine(self, key: Dict[str, Any], blob: StoredBlob, device_id: str) -> bool:
        """Keep ``blob`` as the engine of ``key``: True when stored, False when it already was,
        ArtifactConflict when another engine is kept for that key (the first one wins)."""
        text = canonical_json(key)
        with self._conn.transaction() as conn:
            before = conn.query_one("SELECT sha256 FROM engines WHERE engine_key = ?", (text,))
            refused = self._refusal(conn, device_id, key) if before is None else None
            if refused is not None:
                raise ArtifactConflict(refused)
            if before is None:
                conn.execute(
                    "INSERT INTO engines (engine_key, onnx_sha256, sha256, bytes, device_id, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (engine_key) DO NOTHING",
                    (text, key["onnx_sha256"], blob.sha256, blob.bytes, device_id, self._clock()))
                before = conn.query_one("SELECT sha256 FROM engines WHERE engine_key = ?", (text,))
                stored = True
            else:
                stored = False
        if before is None or before[0] != blob.sha256:
            raise ArtifactConflict(f"another engine ({before[0] if before else '?'}) is kept for this key; "
                                   "the first one offered wins")
        return stored

    def engines(self, onnx_sha256: str) -> List[EngineRecord]:
        with self._conn.reading() as conn:
            rows = conn.query("SELECT engine_key, sha256, bytes, device_id, created_at FROM engines "
                              "WHERE onnx_sha256 = ? ORDER BY created_at", (onnx_sha256,))
        return [EngineRecord(json.loads(k), s, int(b), d, float(c)) for k, s, b, d, c in rows]

    def may_offer(self, device_id: str, key: Dict[str, Any]) -> Optional[str]:
        """None when ``device_id`` may offer one more engine for ``key``, else why not."""
        with self._conn.reading() as conn:
            return self._refusal(conn, device_id, key)

    def _refusal(self, conn: Any, device_id: str, key: Dict[str, Any]) -> Optional[str]:
        """At most ``MAX_ENGINES_PER_DEVICE`` per model file, and only for the GPU its engines name already."""
        if self._offered(conn, device_id, key["onnx_sha256"]) >= MAX_ENGINES_PER_DEVICE:
            return _too_many(device_id)
        # A device builds on its own GPU, which does not change: one naming another GPU than its
        # first engine did is building for devices it is not (a mistake, or a device taken over
        # trying to reach other kinds of devices). A replaced board: delete its engines first.
        earlier = conn.query_one("SELECT engine_key FROM engines WHERE device_id = ? ORDER BY created_at LIMIT 1",
                                 (device_id,))
        pinned = _gpu(json.loads(earlier[0])) if earlier is not None else None
        if pinned is not None and _gpu(key) != pinned:
            return (f"{device_id} offered engines for GPU {pinned[0]} (compute capability {pinned[1]}); this one "
                    f"names {str(_gpu(key)[0])[:64]} ({str(_gpu(key)[1])[:16]}): a device offers engines for its own "
                    f"GPU only (DELETE /api/v1/devices/{device_id}/engines if its board was replaced)")
        return None

    def delete_engines(self, *, sha256: Optional[str] = None, device_id: Optional[str] = None) -> List[str]:
        """Stop handing out the engines with digest ``sha256``, or all that ``device_id`` offered;
        the digests removed (their blobs are the caller's to drop once nothing else names them)."""
        column, value = ("sha256", sha256) if sha256 is not None else ("device_id", device_id)
        with self._conn.transaction() as conn:
            rows = conn.query(f"SELECT sha256 FROM engines WHERE {column} = ?", (value,))
            conn.execute(f"DELETE FROM engines WHERE {column} = ?", (value,))
        return sorted({row[0] for row in rows})

    def delete_model(self, name: str, version: str) -> List[str]:
        """Remove ``name/version`` and, when no other version has its ONNX file, that file's engines;
        the digests no longer named by this version (the caller drops the unused blobs). LookupError when unknown."""
        with self._conn.transaction() as conn:
            row = conn.query_one("SELECT onnx_sha256, labels_sha256 FROM models WHERE name = ? AND version = ?",
                                 (name, version))
            if row is None:
                raise LookupError(f"unknown model {name} version {version}")
            onnx, labels = row
            conn.execute("DELETE FROM models WHERE name = ? AND version = ?", (name, version))
            digests = [onnx] + ([labels] if labels else [])
            if conn.query_one("SELECT 1 FROM models WHERE onnx_sha256 = ?", (onnx,)) is None:
                digests += [r[0] for r in conn.query("SELECT sha256 FROM engines WHERE onnx_sha256 = ?", (onnx,))]
                conn.execute("DELETE FROM engines WHERE onnx_sha256 = ?", (onnx,))
        return sorted(set(digests))

    @staticmethod
    def _offered(conn: Any, device_id: str, onnx_sha256: str) -> int:
        row = conn.query_one("SELECT COUNT(*) FROM engines WHERE device_id = ? AND onnx_sha256 = ?",
                             (device_id, onnx_sha256))
        return int(row[0]) if row else 0

    def manifest(self, device_id: str, model: ModelRecord, key: str) -> Dict[str, Any]:
        """The manifest of ``model`` for ``device_id``, signed with that device's desired key."""
        files = [{"role": "onnx", "sha256": model.onnx.sha256, "bytes": model.onnx.bytes}]
        if model.labels is not None:
            files.append({"role": "labels", "sha256": model.labels.sha256, "bytes": model.labels.bytes})
        body: Dict[str, Any] = {
            "device_id": device_id, "model": model.name, "version": model.version, "issued": int(self._clock()),
            "files": files,
            # the newest the appliances take: a device with an older key builds its own engine
            "engines": [{"key": e.key, "sha256": e.sha256, "bytes": e.bytes}
                        for e in self.engines(model.onnx.sha256)[-MAX_ENGINES:]],
        }
        body["signature"] = manifest_signature(key, body)
        return body


def _gpu(key: Dict[str, Any]) -> tuple:
    """What in an engine key names the GPU it was built on."""
    return key.get("gpu_name"), key.get("compute_capability")


def _too_many(device_id: str) -> str:
    return (f"{device_id} already keeps {MAX_ENGINES_PER_DEVICE} engines for this model file, at most "
            f"{MAX_ENGINES_PER_DEVICE} are kept per device")


def _model(row: tuple) -> ModelRecord:
    name, version, onnx_sha, onnx_bytes, labels_sha, labels_bytes, created = row
    labels = FileRecord("labels", labels_sha, int(labels_bytes)) if labels_sha else None
    return ModelRecord(name, version, FileRecord("onnx", onnx_sha, int(onnx_bytes)), labels, float(created))
