"""``GET /api/openapi.json``: the OpenAPI 3.1 document, generated from the routes' ``ROUTES``.

Every operation comes from one :class:`edge_app.api.routing.Route`: its path and method from the
rule, its parameters from the rule and the query model, its body and answers from the types
named there, plus what the server answers before any route sees a request (the host check, the
HTTP limits, the token). A route added to a blueprint's ``ROUTES`` is in the document with
nothing else to edit.

3.1 rather than 3.0 because its schemas are JSON Schema 2020-12, which is what pydantic emits
for the configuration (``null`` as a type, for one), so that schema is used unchanged.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Sequence, Tuple

from flask import Blueprint, Response, jsonify
from pydantic import BaseModel, TypeAdapter

from edge_app.api import (camera_edits, cameras, config_routes, dashboard, events, metrics, profiles, recordings, review,
                          status)
from edge_app.api.answer_schemas import config_schemas, detections_schema, refine, review_schemas
from edge_app.api.routing import (PATH_PARAMETERS, RequestBody, ResponseSpec, Route, Schema, SchemaSource, error,
                                  register_routes)
from edge_app.version import __version__

_REF_TEMPLATE = "#/components/schemas/{model}"

# What the server answers to any request before a route sees it (edge_app/http_server/http_limits.py).
PROTOCOL_ERRORS = {
    400: error("Host names a DNS name other than localhost that api.allowed_hosts does not list"),
    408: error("The request line and headers did not arrive within 10 s", Connection="close"),
    413: error("Declared body (Content-Length) larger than api.max_body_bytes; refused before it is read"),
    414: error("Request line longer than 32 KiB"),
    431: error("Request headers larger than 32 KiB in total"),
}
UNAUTHORIZED = error("Missing or wrong token (when api.token is set)")
THROTTLED = error("Too many wrong tokens from this address (10 a minute); refused until the minute is over",
                  **{"Retry-After": "Seconds until this address may try again"})


def openapi(document: Dict[str, Any]) -> Response:
    return jsonify(document)


ROUTES: Tuple[Route, ...] = (
    Route("GET", "/api/openapi.json", openapi, "This document", "meta",
          {200: ResponseSpec("OpenAPI document", {"type": "object"})}, secured=False),
)


def appliance_routes() -> Tuple[Route, ...]:
    """Every route of the appliance's API, in the order the document lists them."""
    return (*status.PROBE_ROUTES, *metrics.ROUTES, *ROUTES, *dashboard.ROUTES, *status.ROUTES, *config_routes.ROUTES,
            *cameras.ROUTES, *camera_edits.ROUTES, *profiles.ROUTES, *events.ROUTES, *recordings.ROUTES, *review.ROUTES)


class _Components:
    """The named schemas, filled as the routes name types."""

    def __init__(self) -> None:
        self.schemas: Dict[str, Schema] = config_schemas()

    def schema_of(self, source: SchemaSource, mode: str) -> Schema:
        """A reference for a model or dataclass, the generated schema of a typing form, a dict as it is."""
        if isinstance(source, dict):
            return source
        schema = TypeAdapter(source).json_schema(ref_template=_REF_TEMPLATE, mode=mode)  # type: ignore[arg-type]
        for name, definition in schema.pop("$defs", {}).items():
            self.schemas.setdefault(name, definition)
        if isinstance(source, type) and (issubclass(source, BaseModel) or dataclasses.is_dataclass(source)):
            self.schemas.setdefault(source.__name__, schema)
            return {"$ref": _REF_TEMPLATE.format(model=source.__name__)}
        return schema


def _parameters(route: Route) -> List[Dict[str, Any]]:
    parameters: List[Dict[str, Any]] = [{"name": name, "in": "path", "schema": PATH_PARAMETERS[name], "required": True}
                                        for name in route.path_parameters()]
    if route.query is None:
        return parameters
    model = route.query.model_json_schema(by_alias=True)
    required = set(model.get("required", []))
    for name, schema in model["properties"].items():
        schema = {key: value for key, value in schema.items() if key not in ("title", "description")}
        if schema.get("default", 0) is None:
            del schema["default"]
        parameter: Dict[str, Any] = {"name": name, "in": "query", "schema": schema}
        description = model["properties"][name].get("description")
        if description:
            parameter["description"] = description
        if name in required:
            parameter["required"] = True
        parameters.append(parameter)
    return parameters


def _body(body: RequestBody, components: _Components) -> Dict[str, Any]:
    schema = components.schema_of(body.schema, "validation")
    answer: Dict[str, Any] = {"required": body.required}
    if body.description:
        answer["description"] = body.description
    answer["content"] = {media: {"schema": schema} for media in body.media_types}
    return answer


def _response(spec: ResponseSpec, components: _Components) -> Dict[str, Any]:
    answer: Dict[str, Any] = {"description": spec.description}
    if spec.headers:
        answer["headers"] = {name: {"description": text, "schema": {"type": "string"}}
                             for name, text in spec.headers.items()}
    if spec.schema is not None:
        answer["content"] = {spec.media_type: {"schema": components.schema_of(spec.schema, "serialization")}}
    return answer


def _operation(route: Route, components: _Components) -> Dict[str, Any]:
    responses = dict(route.responses)
    for status_code, spec in PROTOCOL_ERRORS.items():
        responses.setdefault(status_code, spec)
    if route.secured:
        responses.setdefault(401, UNAUTHORIZED)
        responses.setdefault(429, THROTTLED)
    op: Dict[str, Any] = {"summary": route.summary, "tags": [route.tag]}
    parameters = _parameters(route)
    if parameters:
        op["parameters"] = parameters
    if route.body is not None:
        op["requestBody"] = _body(route.body, components)
    op["responses"] = {str(code): _response(spec, components) for code, spec in responses.items()}
    if not route.secured:
        op["security"] = []
    return op


def build_openapi(routes: Sequence[Route] = ()) -> Dict[str, Any]:
    """The OpenAPI document of ``routes`` (default: every route of the appliance's API)."""
    components = _Components()
    paths: Dict[str, Dict[str, Any]] = {}
    for route in routes or appliance_routes():
        paths.setdefault(route.path, {})[route.method.lower()] = _operation(route, components)
    schemas = components.schemas
    schemas["DetectionsMessage"] = detections_schema()
    schemas.update(review_schemas())
    refine(schemas)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "edge-app REST API",
            "version": __version__,
            "description": "Status, configuration, snapshots, detections and live views of an edge-app appliance. "
            "Every error is a JSON object {\"error\": \"<sentence>\"}. A camera with no frame yet streams "
            "a \"no frame yet\" picture until it has one; every live view sends a part at least every 2 s.",
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearerAuth": {"type": "http", "scheme": "bearer", "description": "api.token, when set"}},
        },
        "security": [{"bearerAuth": []}],
    }


def openapi_blueprint() -> Blueprint:
    # static: built once per app
    return register_routes(Blueprint("openapi", __name__), ROUTES, build_openapi())
