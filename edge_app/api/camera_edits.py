"""``POST /api/v1/cameras``, ``PATCH``/``DELETE /api/v1/cameras/<id>``: edit one camera.

``PATCH /api/v1/config`` cannot change one camera: RFC 7396 replaces lists whole, so
``{"cameras": [{"id": "demo", "fps_limit": 5}]}`` means "this is the only camera now". These
routes edit one entry of the list and hand the whole resulting configuration to the same
:class:`ConfigWriter` as the config routes: the same secrets, policy and runtime rules, the
same 400 answers (located in the full configuration, ``cameras.2.fps_limit``), all or nothing.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Tuple

from flask import Blueprint, Response, jsonify

from edge_app.api.config_writer import ConfigWriter
from edge_app.api.routing import MERGE_PATCH, RequestBody, ResponseSpec, Route, error, ref, register_routes
from edge_app.http_server.errors import ApiError
from edge_app.http_server.json_body import read_json_body
from edge_app.config.schema import AppConfig
from edge_app.config.file import merge_patch, redacted_dict
from edge_app.reporting.protocol import ApplyResult, UnknownCamera


def _index_of(cameras: List[Any], camera_id: Any) -> int:
    """Where ``camera_id`` is in a (redacted) camera list, or -1."""
    return next((i for i, cam in enumerate(cameras) if isinstance(cam, dict) and cam.get("id") == camera_id), -1)


def _conflict(camera_id: str) -> ApiError:
    return ApiError(409, f"a camera with id {camera_id!r} already exists; PATCH /api/v1/cameras/{camera_id} changes it")


def _camera_answer(result: ApplyResult, camera_id: str, status: int) -> Response:
    """The camera as the configuration now holds it, credentials masked."""
    cameras = redacted_dict(result.config)["cameras"]
    response = jsonify(cameras[_index_of(cameras, camera_id)])
    response.status_code = status
    return response


def add_camera(writer: ConfigWriter) -> Response:
    camera = read_json_body()
    new_id = camera.get("id") if isinstance(camera, dict) else None

    def with_camera(current: AppConfig) -> Dict[str, Any]:
        # Built from the view a client sees, so the other cameras' masked credentials are
        # restored by the same rule as a PATCH of the whole configuration.
        data = redacted_dict(current)
        if isinstance(new_id, str) and _index_of(data["cameras"], new_id) >= 0:
            raise _conflict(new_id)
        data["cameras"].append(camera)
        return data

    result = writer.write(with_camera)
    response = _camera_answer(result, new_id, 201)
    response.headers["Location"] = f"/api/v1/cameras/{new_id}"
    return response


def patch_camera(writer: ConfigWriter, camera_id: str) -> Response:
    patch = read_json_body()
    renamed_to = patch.get("id") if isinstance(patch, dict) else None

    def with_patch(current: AppConfig) -> Dict[str, Any]:
        data = redacted_dict(current)
        index = _index_of(data["cameras"], camera_id)
        if index < 0:
            raise UnknownCamera(camera_id)
        if isinstance(renamed_to, str) and renamed_to != camera_id and _index_of(data["cameras"], renamed_to) >= 0:
            raise _conflict(renamed_to)
        data["cameras"][index] = merge_patch(data["cameras"][index], patch)
        return data

    result = writer.write(with_patch)
    return _camera_answer(result, renamed_to if isinstance(renamed_to, str) else camera_id, 200)


def delete_camera(writer: ConfigWriter, camera_id: str) -> Response:
    def without_camera(current: AppConfig) -> Dict[str, Any]:
        data = redacted_dict(current)
        index = _index_of(data["cameras"], camera_id)
        if index < 0:
            raise UnknownCamera(camera_id)
        del data["cameras"][index]
        return data

    writer.write(without_camera)
    return Response(status=204)


_REFUSED = ResponseSpec("Refused; details locate each problem in the whole configuration (cameras.2.fps_limit), "
                        "or the body is not JSON; nothing changed", {"anyOf": [ref("ValidationError"), ref("Error")]})
_BODY_ERRORS = {400: _REFUSED, 413: error("Body larger than api.max_body_bytes"), 415: error("Body is not JSON")}
_UNKNOWN = error("Unknown camera")
_CAMERA = ResponseSpec("The camera as now saved (credentials in its source masked)", ref("CameraConfig"))

#: the endpoint is ``camera_edits.<view name>``
ROUTES: Tuple[Route, ...] = (
    Route("POST", "/api/v1/cameras", add_camera, "Add a camera; applied live and saved, with the rules of PUT "
          "/api/v1/config", "cameras",
          {201: dataclasses.replace(_CAMERA, headers={"Location": "The new camera's path"}),
           409: error("A camera with this id already exists; nothing changed"), **_BODY_ERRORS},
          body=RequestBody(ref("CameraConfig"), description="One camera, as in the configuration's camera list")),
    Route("PATCH", "/api/v1/cameras/<camera_id>", patch_camera, "Merge-patch one camera; applied live and saved, with "
          "the rules of PUT /api/v1/config", "cameras",
          {200: _CAMERA, 404: _UNKNOWN, 409: error("Renamed to the id of another camera"), **_BODY_ERRORS},
          body=RequestBody({"type": "object"}, description=(
              "RFC 7396 JSON merge patch of this one camera; null deletes a key (back to its default). A source "
              "whose host changes must carry its credentials again (\"***\" is refused there)"),
              media_types=MERGE_PATCH)),
    Route("DELETE", "/api/v1/cameras/<camera_id>", delete_camera, "Remove one camera; applied live and saved", "cameras",
          {204: ResponseSpec("Removed"), 400: ResponseSpec("Refused; nothing changed", ref("ValidationError")),
           404: _UNKNOWN}),
)


def camera_edits_blueprint(writer: ConfigWriter) -> Blueprint:
    return register_routes(Blueprint("camera_edits", __name__), ROUTES, writer)
