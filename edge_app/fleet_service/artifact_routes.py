"""Models and engines over the air (docs/fleet.md, "Models and engines over the air").

Admin routes (the fleet's api.token): upload and list model versions, roll a version out.
Device routes (``Authorization: Bearer <fleet.token>`` + ``X-Edge-Device``): the device's own
signed manifest, blobs by digest (admins may fetch them too), and offering a built engine.
Nothing from a request reaches the filesystem but a checked SHA-256 digest.

Module-level views over ``route_state()``, like :mod:`edge_app.fleet_service.routes`.
"""
from __future__ import annotations

import fnmatch
import io
import logging
from typing import IO, Any, Dict, Iterable, Optional, Tuple

from flask import Blueprint, Response, jsonify, request, send_file

from werkzeug.exceptions import RequestEntityTooLarge

from edge_app.http_server.errors import ApiError, error_response
from edge_app.http_server.json_body import read_json_body
from edge_app.fleet_protocol.artifacts_manifest import MAX_LABELS_BYTES
from edge_app.fleet_service.artifacts import ArtifactConflict, parse_engine_key
from edge_app.fleet_service.blobs import BlobError, StoredBlob, is_sha256
from edge_app.fleet_service.model_state import devices_reporting
from edge_app.http_server.query_params import parse_query
from edge_app.fleet_service.request_models import (DEVICE_ID, DeleteModelQuery, ModelListQuery, ModelRolloutBody,
                                                   checked_name, parse_body)
from edge_app.fleet_service.response_models import Deleted, EngineOffered, ModelList, ModelRolloutStarted
from edge_app.fleet_service.rollouts import NoModelDevices, UnknownDevices, model_rollout_patch
from edge_app.fleet_service.route_state import Route, blueprint_of, json_response, route_state
from edge_app.fleet_service.fleet import MIB, FleetService

logger = logging.getLogger(__name__)

#: Endpoints whose body is a file: they get artifacts.max_upload_mb instead of api.max_body_bytes.
UPLOAD_ENDPOINTS = frozenset({"artifacts.put_model", "artifacts.put_engine", "artifacts.post_labels"})
#: Paths of those uploads, for the server's longer body deadline (it decides before any routing).
UPLOAD_PATH_PREFIXES = ("/api/v1/models/", "/api/v1/engines")
#: Endpoints a device calls; with X-Edge-Device they authenticate the device, not the admin token.
DEVICE_ENDPOINTS = frozenset({"artifacts.blob", "artifacts.manifest", "artifacts.put_engine"})

ROLLOUT_SHAPE = 'the body must be {"devices": [...] | "all"}'


def _service() -> FleetService:
    return route_state().service


def _max_upload_bytes() -> int:
    return _service().config.artifacts.max_upload_mb * MIB


def _sha_header(name: str) -> str:
    value = request.headers.get(name, "")
    if not is_sha256(value):
        raise ApiError(400, f"{name} must be 64 lowercase hexadecimal digits")
    return value


def _unknown_model(name: str, version: str, hint: str = "") -> ApiError:
    return ApiError(404, f"unknown model {name} version {version}{hint}")


def too_large(err: RequestEntityTooLarge) -> Response:
    # The app-wide answer names api.max_body_bytes; these routes have their own limits.
    if request.endpoint == "artifacts.post_labels":
        return error_response(413, f"labels are at most {MAX_LABELS_BYTES} bytes")
    if request.endpoint not in UPLOAD_ENDPOINTS:  # a JSON body under the same paths (a rollout)
        return error_response(413, f"the request body is larger than the limit of {request.max_content_length} "
                                   "bytes (api.max_body_bytes)")
    return error_response(413, f"the file is larger than the limit of {_max_upload_bytes()} bytes "
                               "(artifacts.max_upload_mb)")


def _store(stream: IO[bytes], max_bytes: int, expected: Optional[str] = None) -> StoredBlob:
    service = _service()
    try:
        blob = service.blobs.write(stream, max_bytes, expected)
    except BlobError as err:
        raise ApiError(err.status, str(err)) from None
    service.artifacts.note_blob(blob)
    return blob


def _drop_unused(digests: Iterable[str]) -> None:
    """Remove the files of ``digests`` that no model or engine names (a refused upload, a deletion)."""
    service = _service()
    for sha256 in digests:
        if service.artifacts.forget_if_unused(sha256):
            service.blobs.remove(sha256)


def _forget(*blobs: Optional[StoredBlob]) -> None:
    """Remove again what a refused upload stored, unless a model or engine names it."""
    _drop_unused(blob.sha256 for blob in blobs if blob is not None)


def _refuse(status: int, err: Exception, *blobs: Optional[StoredBlob]) -> ApiError:
    _forget(*blobs)
    return ApiError(status, str(err))


def _model_files() -> Tuple[StoredBlob, Optional[StoredBlob]]:
    """The uploaded ONNX file and labels, stored: a multipart upload's parts, or the body as the ONNX file."""
    if request.mimetype != "multipart/form-data":
        return _store(request.stream, _max_upload_bytes()), None
    onnx_part, labels_part = request.files.get("onnx"), request.files.get("labels")
    if onnx_part is None:
        raise ApiError(400, "a multipart upload needs an 'onnx' part (and may have a 'labels' part)")
    onnx = _store(onnx_part.stream, _max_upload_bytes())
    try:
        labels = _store(labels_part.stream, MAX_LABELS_BYTES) if labels_part is not None else None
        if labels is None and request.form.get("labels"):
            labels = _store(io.BytesIO(request.form["labels"].encode("utf-8")), MAX_LABELS_BYTES)
    except ApiError:
        _forget(onnx)
        raise
    return onnx, labels


def put_model(name: str, version: str) -> Response:
    checked_name(name, version)
    artifacts = _service().artifacts
    onnx, labels = _model_files()
    if onnx.bytes == 0:
        raise _refuse(400, ValueError("the ONNX file is empty"), onnx, labels)
    try:
        created = artifacts.add_model(name, version, onnx, labels)
    except ArtifactConflict as err:
        raise _refuse(409, err, onnx, labels) from None
    logger.info("model %s version %s %s (onnx %s, %d bytes)", name, version,
                "stored" if created else "uploaded again", onnx.sha256, onnx.bytes)
    response = jsonify(artifacts.model(name, version).to_dict())  # type: ignore[union-attr]
    response.status_code = 201 if created else 200
    return response


def post_labels(name: str, version: str) -> Response:
    checked_name(name, version)
    artifacts = _service().artifacts
    if artifacts.model(name, version) is None:
        raise _unknown_model(name, version)
    labels = _store(request.stream, MAX_LABELS_BYTES)
    try:
        artifacts.set_labels(name, version, labels)
    except ArtifactConflict as err:
        raise _refuse(409, err, labels) from None
    except LookupError as err:
        raise _refuse(404, err, labels) from None
    return jsonify(artifacts.model(name, version).to_dict())  # type: ignore[union-attr]


def models() -> Response:
    query = parse_query(ModelListQuery, request.args)
    service = _service()
    body = []
    for record in service.artifacts.models(query.name):
        item = record.to_dict()
        item["engines"] = [e.to_dict() for e in service.artifacts.engines(record.onnx.sha256)]
        body.append(item)
    return json_response(ModelList(body, service.blobs.used_bytes))


def blob(sha256: str) -> Response:
    state = route_state()
    if state.device_auth.asks_as_device():
        state.device_auth.require()
    if not is_sha256(sha256):
        raise ApiError(400, "a blob is named by its SHA-256: 64 lowercase hexadecimal digits")
    if state.service.artifacts.blob_bytes(sha256) is None or not state.service.blobs.has(sha256):
        raise ApiError(404, f"no blob {sha256}")
    # conditional: Range (206, 416) and If-Range against the digest as ETag, so a cut download resumes.
    return send_file(state.service.blobs.blob_path(sha256), mimetype="application/octet-stream",
                     conditional=True, etag=sha256, max_age=0, download_name=sha256)


def manifest(device_id: str, name: str, version: str) -> Response:
    state = route_state()
    if state.device_auth.require() != device_id:
        raise ApiError(403, "a device may fetch only its own manifests")
    checked_name(name, version)
    record = state.service.artifacts.model(name, version)
    if record is None:
        raise _unknown_model(name, version)
    key = state.service.config.desired_keys.get(device_id)
    if key is None:
        raise ApiError(409, f"no desired key for {device_id} in FLEET.yaml desired_keys: "
                            "a manifest is signed with it, and the appliance needs fleet.desired_key")
    return jsonify(state.service.artifacts.manifest(device_id, record, key.get_secret_value()))


def _offered_engine_key(device_id: str) -> Dict[str, Any]:
    """The X-Engine-Key of an engine ``device_id`` may offer; refused before the body is read."""
    if not any(fnmatch.fnmatchcase(device_id, pattern) for pattern in _service().config.artifacts.engines_from):
        raise ApiError(403, f"engines from {device_id} are not accepted (artifacts.engines_from)")
    try:
        key = parse_engine_key(request.headers.get("X-Engine-Key", ""))
    except ValueError as err:
        raise ApiError(400, f"X-Engine-Key: {err}") from None
    return key


def put_engine() -> Response:
    state = route_state()
    artifacts = state.service.artifacts
    device_id = state.device_auth.require()
    key = _offered_engine_key(device_id)
    sha256 = _sha_header("X-Content-SHA256")
    if not artifacts.onnx_known(key["onnx_sha256"]):
        raise ApiError(404, f"the engine key names ONNX {key['onnx_sha256']}, which no model of this fleet has")
    kept = artifacts.engine_sha(key)
    if kept is not None and kept != sha256:
        raise ApiError(409, f"another engine ({kept}) is kept for this key; the first one offered wins")
    stored = False
    if kept is None:
        refused = artifacts.may_offer(device_id, key)
        if refused is not None:  # answered before the body is read
            raise ApiError(409, refused)
        engine = _store(request.stream, _max_upload_bytes(), sha256)
        try:
            stored = artifacts.add_engine(key, engine, device_id)
        except ArtifactConflict as err:
            raise _refuse(409, err, engine) from None
    if stored:
        logger.info("engine %s from %s kept for %s on %s", sha256, device_id, key.get("gpu_name"), key["platform"])
    return json_response(EngineOffered(sha256, stored))


def delete_model(name: str, version: str) -> Response:
    """A version and, when no other version has its ONNX file, that file's engines. Refused (409)
    while devices report the version, unless ``?force=true``: a device that restarts with the
    fleet reachable would find it gone and run its fallback ``path``."""
    checked_name(name, version)
    service = _service()
    if parse_query(DeleteModelQuery, request.args).force == "false":
        with service.conn.reading() as conn:
            using = devices_reporting(conn, name, version)
        if using:
            raise ApiError(409, f"{len(using)} device(s) report model {name} version {version} "
                                f"({', '.join(using[:20])}): roll another version out first, or delete with ?force=true")
    try:
        digests = service.artifacts.delete_model(name, version)
    except LookupError as err:
        raise ApiError(404, str(err)) from None
    _drop_unused(digests)
    logger.info("model %s version %s deleted", name, version)
    return json_response(Deleted({"name": name, "version": version}))


def delete_engine(sha256: str) -> Response:
    if not is_sha256(sha256):
        raise ApiError(400, "an engine is named by its SHA-256: 64 lowercase hexadecimal digits")
    removed = _service().artifacts.delete_engines(sha256=sha256)
    if not removed:
        raise ApiError(404, f"no engine {sha256}")
    _drop_unused(removed)
    logger.info("engine %s deleted", sha256)
    return json_response(Deleted(removed))


def delete_device_engines(device_id: str) -> Response:
    """Every engine one device offered (a device not trusted any more, or a replaced board)."""
    if not DEVICE_ID.fullmatch(device_id):
        raise ApiError(400, "not a device id")
    removed = _service().artifacts.delete_engines(device_id=device_id)
    _drop_unused(removed)
    logger.info("%d engine(s) offered by %s deleted", len(removed), device_id)
    return json_response(Deleted(removed))


def rollout(name: str, version: str) -> Response:
    checked_name(name, version)
    targets = parse_body(ModelRolloutBody, read_json_body(), ROLLOUT_SHAPE).devices
    service = _service()
    if service.artifacts.model(name, version) is None:
        raise _unknown_model(name, version, ": upload it first")
    # Addressed by the fleet's name of the model: which of a device's models runs it (model or
    # an entry of models) is the device's business (edge_app.config.model_patch).
    patch = model_rollout_patch(name, version)
    try:
        started = service.start_rollout(targets, patch, (name, version))
    except UnknownDevices as err:
        raise ApiError(400, f"unknown device(s): {', '.join(err.device_ids[:20])}") from None
    except NoModelDevices as err:
        raise ApiError(409, str(err)) from None
    return json_response(ModelRolloutStarted(started.versions, started.rollout_id, len(started.versions)), 202)


ROUTES = (
    Route("PUT", "/api/v1/models/<name>/<version>", put_model),
    Route("POST", "/api/v1/models/<name>/<version>/labels", post_labels),
    Route("GET", "/api/v1/models", models),
    Route("GET", "/api/v1/blobs/<sha256>", blob),
    Route("GET", "/api/v1/devices/<device_id>/models/<name>/<version>/manifest", manifest),
    Route("PUT", "/api/v1/engines", put_engine),
    Route("DELETE", "/api/v1/models/<name>/<version>", delete_model),
    Route("DELETE", "/api/v1/engines/<sha256>", delete_engine),
    Route("DELETE", "/api/v1/devices/<device_id>/engines", delete_device_engines),
    Route("POST", "/api/v1/models/<name>/<version>/rollout", rollout),
)


def artifacts_blueprint() -> Blueprint:
    blueprint = blueprint_of("artifacts", __name__, ROUTES)
    blueprint.register_error_handler(RequestEntityTooLarge, too_large)
    return blueprint
