"""Models and engines over the air (docs/fleet.md, "Models and engines over the air").

Admin routes (the fleet's api.token): upload and list model versions, roll a version out.
Device routes (``Authorization: Bearer <fleet.token>`` + ``X-Edge-Device``): the device's own
signed manifest, blobs by digest (admins may fetch them too), and offering a built engine.
Nothing from a request reaches the filesystem but a checked SHA-256 digest.
"""
from __future__ import annotations

import fnmatch
import io
import logging
from typing import Optional

from flask import Blueprint, Response, jsonify, request, send_file

from werkzeug.exceptions import RequestEntityTooLarge

from edge_app.http_server.errors import ApiError, error_response
from edge_app.http_server.json_body import read_json_body
from edge_app.fleet_protocol.artifacts_manifest import MAX_LABELS_BYTES
from edge_app.fleet_service.artifacts import ArtifactConflict, check_name, parse_engine_key
from edge_app.fleet_service.blobs import BlobError, StoredBlob, is_sha256
from edge_app.fleet_service.device_auth import DeviceAuth
from edge_app.fleet_service.model_state import devices_reporting
from edge_app.fleet_service.rollouts import NoModelDevices, UnknownDevices, model_rollout_patch
from edge_app.fleet_service.routes import DEVICE_ID, parse_targets
from edge_app.fleet_service.fleet import MIB, FleetService

logger = logging.getLogger(__name__)

#: Endpoints whose body is a file: they get artifacts.max_upload_mb instead of api.max_body_bytes.
UPLOAD_ENDPOINTS = frozenset({"artifacts.put_model", "artifacts.put_engine", "artifacts.post_labels"})
#: Paths of those uploads, for the server's longer body deadline (it decides before any routing).
UPLOAD_PATH_PREFIXES = ("/api/v1/models/", "/api/v1/engines")
#: Endpoints a device calls; with X-Edge-Device they authenticate the device, not the admin token.
DEVICE_ENDPOINTS = frozenset({"artifacts.blob", "artifacts.manifest", "artifacts.put_engine"})


def _name(name: str, version: str) -> None:
    try:
        check_name(name, version)
    except ValueError as err:
        raise ApiError(400, str(err)) from None


def _sha_header(name: str) -> str:
    value = request.headers.get(name, "")
    if not is_sha256(value):
        raise ApiError(400, f"{name} must be 64 lowercase hexadecimal digits")
    return value


def artifacts_blueprint(service: FleetService, device_auth: DeviceAuth) -> Blueprint:
    bp = Blueprint("artifacts", __name__)
    limits = service.config.artifacts

    @bp.errorhandler(RequestEntityTooLarge)
    def _too_large(err: RequestEntityTooLarge) -> Response:
        # The app-wide answer names api.max_body_bytes; these routes have their own limits.
        if request.endpoint == "artifacts.post_labels":
            return error_response(413, f"labels are at most {MAX_LABELS_BYTES} bytes")
        if request.endpoint not in UPLOAD_ENDPOINTS:  # a JSON body under the same paths (a rollout)
            return error_response(413, f"the request body is larger than the limit of {request.max_content_length} "
                                       "bytes (api.max_body_bytes)")
        return error_response(413, f"the file is larger than the limit of {limits.max_upload_mb * MIB} bytes "
                                   "(artifacts.max_upload_mb)")

    def store(stream, max_bytes: int, expected: Optional[str] = None) -> StoredBlob:
        try:
            blob = service.blobs.write(stream, max_bytes, expected)
        except BlobError as err:
            raise ApiError(err.status, str(err)) from None
        service.artifacts.note_blob(blob)
        return blob

    def drop_unused(digests) -> None:
        """Remove the files of ``digests`` that no model or engine names (a refused upload, a deletion)."""
        for sha256 in digests:
            if service.artifacts.forget_if_unused(sha256):
                service.blobs.remove(sha256)

    def forget(*blobs: Optional[StoredBlob]) -> None:
        """Remove again what a refused upload stored, unless a model or engine names it."""
        drop_unused(blob.sha256 for blob in blobs if blob is not None)

    def refuse(status: int, err: Exception, *blobs: Optional[StoredBlob]) -> ApiError:
        forget(*blobs)
        return ApiError(status, str(err))

    @bp.put("/api/v1/models/<name>/<version>")
    def put_model(name: str, version: str) -> Response:
        _name(name, version)
        max_bytes = limits.max_upload_mb * MIB
        if request.mimetype == "multipart/form-data":
            onnx_part, labels_part = request.files.get("onnx"), request.files.get("labels")
            if onnx_part is None:
                raise ApiError(400, "a multipart upload needs an 'onnx' part (and may have a 'labels' part)")
            onnx = store(onnx_part.stream, max_bytes)
            try:
                labels = store(labels_part.stream, MAX_LABELS_BYTES) if labels_part is not None else None
                if labels is None and request.form.get("labels"):
                    labels = store(io.BytesIO(request.form["labels"].encode("utf-8")), MAX_LABELS_BYTES)
            except ApiError:
                forget(onnx)
                raise
        else:
            onnx, labels = store(request.stream, max_bytes), None
        if onnx.bytes == 0:
            raise refuse(400, ValueError("the ONNX file is empty"), onnx, labels)
        try:
            created = service.artifacts.add_model(name, version, onnx, labels)
        except ArtifactConflict as err:
            raise refuse(409, err, onnx, labels) from None
        logger.info("model %s version %s %s (onnx %s, %d bytes)", name, version,
                    "stored" if created else "uploaded again", onnx.sha256, onnx.bytes)
        response = jsonify(service.artifacts.model(name, version).to_dict())  # type: ignore[union-attr]
        response.status_code = 201 if created else 200
        return response

    @bp.post("/api/v1/models/<name>/<version>/labels")
    def post_labels(name: str, version: str) -> Response:
        _name(name, version)
        if service.artifacts.model(name, version) is None:
            raise ApiError(404, f"unknown model {name} version {version}")
        labels = store(request.stream, MAX_LABELS_BYTES)
        try:
            service.artifacts.set_labels(name, version, labels)
        except ArtifactConflict as err:
            raise refuse(409, err, labels) from None
        except LookupError as err:
            raise refuse(404, err, labels) from None
        return jsonify(service.artifacts.model(name, version).to_dict())  # type: ignore[union-attr]

    @bp.get("/api/v1/models")
    def models() -> Response:
        name = request.args.get("name") or None
        if name is not None:
            _name(name, "0")
        records = service.artifacts.models(name)
        body = []
        for record in records:
            item = record.to_dict()
            item["engines"] = [e.to_dict() for e in service.artifacts.engines(record.onnx.sha256)]
            body.append(item)
        return jsonify({"models": body, "used_bytes": service.blobs.used_bytes})

    @bp.get("/api/v1/blobs/<sha256>")
    def blob(sha256: str) -> Response:
        if device_auth.asks_as_device():
            device_auth.require()
        if not is_sha256(sha256):
            raise ApiError(400, "a blob is named by its SHA-256: 64 lowercase hexadecimal digits")
        if service.artifacts.blob_bytes(sha256) is None or not service.blobs.has(sha256):
            raise ApiError(404, f"no blob {sha256}")
        # conditional: Range (206, 416) and If-Range against the digest as ETag, so a cut download resumes.
        response = send_file(service.blobs.blob_path(sha256), mimetype="application/octet-stream",
                             conditional=True, etag=sha256, max_age=0, download_name=sha256)
        return response

    @bp.get("/api/v1/devices/<device_id>/models/<name>/<version>/manifest")
    def manifest(device_id: str, name: str, version: str) -> Response:
        asking = device_auth.require()
        if asking != device_id:
            raise ApiError(403, "a device may fetch only its own manifests")
        _name(name, version)
        record = service.artifacts.model(name, version)
        if record is None:
            raise ApiError(404, f"unknown model {name} version {version}")
        key = service.config.desired_keys.get(device_id)
        if key is None:
            raise ApiError(409, f"no desired key for {device_id} in FLEET.yaml desired_keys: "
                                "a manifest is signed with it, and the appliance needs fleet.desired_key")
        return jsonify(service.artifacts.manifest(device_id, record, key.get_secret_value()))

    @bp.put("/api/v1/engines")
    def put_engine() -> Response:
        device_id = device_auth.require()
        if not any(fnmatch.fnmatchcase(device_id, pattern) for pattern in limits.engines_from):
            raise ApiError(403, f"engines from {device_id} are not accepted (artifacts.engines_from)")
        try:
            key = parse_engine_key(request.headers.get("X-Engine-Key", ""))
        except ValueError as err:
            raise ApiError(400, f"X-Engine-Key: {err}") from None
        sha256 = _sha_header("X-Content-SHA256")
        if not service.artifacts.onnx_known(key["onnx_sha256"]):
            raise ApiError(404, f"the engine key names ONNX {key['onnx_sha256']}, which no model of this fleet has")
        kept = service.artifacts.engine_sha(key)
        if kept is not None and kept != sha256:
            raise ApiError(409, f"another engine ({kept}) is kept for this key; the first one offered wins")
        if kept is None:
            refused = service.artifacts.may_offer(device_id, key)
            if refused is not None:  # answered before the body is read
                raise ApiError(409, refused)
            blob = store(request.stream, limits.max_upload_mb * MIB, sha256)
            try:
                stored = service.artifacts.add_engine(key, blob, device_id)
            except ArtifactConflict as err:
                raise refuse(409, err, blob) from None
        else:
            stored = False
        if stored:
            logger.info("engine %s from %s kept for %s on %s", sha256, device_id, key.get("gpu_name"), key["platform"])
        return jsonify({"sha256": sha256, "stored": stored})

    @bp.delete("/api/v1/models/<name>/<version>")
    def delete_model(name: str, version: str) -> Response:
        """A version and, when no other version has its ONNX file, that file's engines. Refused (409)
        while devices report the version, unless ``?force=true``: a device that restarts with the
        fleet reachable would find it gone and run its fallback ``path``."""
        _name(name, version)
        force = request.args.get("force", "false")
        if force not in ("true", "false"):
            raise ApiError(400, "force must be true or false")
        if force == "false":
            with service.conn.reading() as conn:
                using = devices_reporting(conn, name, version)
            if using:
                raise ApiError(409, f"{len(using)} device(s) report model {name} version {version} "
                                    f"({', '.join(using[:20])}): roll another version out first, or delete with ?force=true")
        try:
            digests = service.artifacts.delete_model(name, version)
        except LookupError as err:
            raise ApiError(404, str(err)) from None
        drop_unused(digests)
        logger.info("model %s version %s deleted", name, version)
        return jsonify({"deleted": {"name": name, "version": version}})

    @bp.delete("/api/v1/engines/<sha256>")
    def delete_engine(sha256: str) -> Response:
        if not is_sha256(sha256):
            raise ApiError(400, "an engine is named by its SHA-256: 64 lowercase hexadecimal digits")
        removed = service.artifacts.delete_engines(sha256=sha256)
        if not removed:
            raise ApiError(404, f"no engine {sha256}")
        drop_unused(removed)
        logger.info("engine %s deleted", sha256)
        return jsonify({"deleted": removed})

    @bp.delete("/api/v1/devices/<device_id>/engines")
    def delete_device_engines(device_id: str) -> Response:
        """Every engine one device offered (a device not trusted any more, or a replaced board)."""
        if not DEVICE_ID.fullmatch(device_id):
            raise ApiError(400, "not a device id")
        removed = service.artifacts.delete_engines(device_id=device_id)
        drop_unused(removed)
        logger.info("%d engine(s) offered by %s deleted", len(removed), device_id)
        return jsonify({"deleted": removed})

    @bp.post("/api/v1/models/<name>/<version>/rollout")
    def rollout(name: str, version: str) -> Response:
        _name(name, version)
        body = read_json_body()
        if not isinstance(body, dict) or set(body) != {"devices"}:
            raise ApiError(400, 'the body must be {"devices": [...] | "all"}')
        targets = parse_targets(body["devices"])
        if service.artifacts.model(name, version) is None:
            raise ApiError(404, f"unknown model {name} version {version}: upload it first")
        # Addressed by the fleet's name of the model: which of a device's models runs it (model or
        # an entry of models) is the device's business (edge_app.config.model_patch).
        patch = model_rollout_patch(name, version)
        try:
            started = service.start_rollout(targets, patch, (name, version))
        except UnknownDevices as err:
            raise ApiError(400, f"unknown device(s): {', '.join(err.device_ids[:20])}") from None
        except NoModelDevices as err:
            raise ApiError(409, str(err)) from None
        response = jsonify({"versions": started.versions, "rollout_id": started.rollout_id,
                            "targeted": len(started.versions)})
        response.status_code = 202
        return response

    return bp
