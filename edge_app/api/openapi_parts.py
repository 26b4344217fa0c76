"""The pieces the OpenAPI document is assembled from (edge_app/api/openapi.py and
edge_app/api/openapi_recordings.py): answers, parameters and schema references."""
from __future__ import annotations

from typing import Any, Dict

Schema = Dict[str, Any]

INTEGER: Schema = {"type": "integer"}
NUMBER: Schema = {"type": "number"}


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
