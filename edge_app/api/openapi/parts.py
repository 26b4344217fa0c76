"""The pieces the OpenAPI document is assembled from (edge_app/api/openapi/document.py and
edge_app/api/openapi/recordings.py): answers, parameters and schema references."""
from __future__ import annotations

from typing import Any, Dict

from edge_app.http_server.query_params import TIME_PATTERN

Schema = Dict[str, Any]

INTEGER: Schema = {"type": "integer"}
NUMBER: Schema = {"type": "number"}
#: a camera (or zone) id, and the same as a query filter, where empty is the same as none (what an
#: HTML form sends for a field left blank)
NAME: Schema = {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"}
NAME_FILTER: Schema = {"type": "string", "pattern": "^[A-Za-z0-9_-]{0,64}$"}
#: a time as the routes take it (``http_server.query_params.parse_time``), and the same as a filter
TIME: Schema = {"type": "string", "pattern": TIME_PATTERN}
TIME_FILTER: Schema = {"type": "string", "pattern": TIME_PATTERN.replace("^(", "^(|")}


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def json_answer(schema: Schema, description: str) -> Dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def headers(**described: str) -> Dict[str, Any]:
    return {name: {"description": text, "schema": {"type": "string"}} for name, text in described.items()}


def error(description: str) -> Dict[str, Any]:
    return json_answer(ref("Error"), description)


def error_with_headers(description: str, **described: str) -> Dict[str, Any]:
    return {**error(description), "headers": headers(**described)}


def obj(**properties: Schema) -> Schema:
    return {"type": "object", "properties": properties}


def param(name: str, where: str, schema: Schema, description: str = "", required: bool = False) -> Dict[str, Any]:
    answer: Dict[str, Any] = {"name": name, "in": where, "schema": schema}
    if description:
        answer["description"] = description
    if required:
        answer["required"] = True
    return answer


def binary(media_type: str, description: str) -> Dict[str, Any]:
    return {"description": description, "content": {media_type: {"schema": {"type": "string", "format": "binary"}}}}
