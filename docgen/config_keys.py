"""Markdown reference of a pydantic configuration model: every key with type, default, bounds, description.

``docs/configuration.md`` is generated from :class:`edge_app.config.schema.AppConfig` and
:class:`edge_app.fleet_service.config.FleetConfig` with this module (``python scripts/gen_reference.py``),
so the reference is the schema itself and cannot drift from it.
"""
from __future__ import annotations

import json
import typing
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Type

from pydantic import BaseModel

Schema = Dict[str, Any]

# JSON Schema keywords shown as bounds, with how they read.
_BOUNDS = (
    ("minimum", ">= {}"), ("exclusiveMinimum", "> {}"), ("maximum", "<= {}"), ("exclusiveMaximum", "< {}"),
    ("minLength", "at least {} characters"), ("maxLength", "at most {} characters"),
    ("minItems", "at least {} items"), ("maxItems", "at most {} items"), ("pattern", "matches `{}`"),
)


@dataclass(frozen=True)
class KeyDoc:
    """One row of the reference: a key as a dotted path (``cameras[].zones[].name``)."""

    path: str
    type: str
    default: str
    bounds: str
    description: str


def _resolve(schema: Schema, defs: Dict[str, Schema]) -> Schema:
    ref = schema.get("$ref")
    if ref is None:
        return schema
    merged = dict(defs[ref.rsplit("/", 1)[-1]])
    merged.update({k: v for k, v in schema.items() if k != "$ref"})
    return merged


def _literal(value: Any) -> str:
    return f"`{json.dumps(value)}`"


def _inline_bounds(schema: Schema) -> str:
    parts = [text.format(schema[key]) for key, text in _BOUNDS[:4] if key in schema]
    return f" ({', '.join(parts)})" if parts else ""


def _type(schema: Schema, defs: Dict[str, Schema], top: bool = True) -> str:
    """How a value of ``schema`` reads; bounds of the value itself are left to the bounds column."""
    if "$ref" in schema:
        return "section" if top else "object"
    if "enum" in schema:
        return " \\| ".join(_literal(v) for v in schema["enum"])
    if "const" in schema:
        return _literal(schema["const"])
    if "anyOf" in schema:
        options = [_resolve(s, defs) if "$ref" in s and not top else s for s in schema["anyOf"]]
        inner = [_type(o, defs, top=False) + ("" if top else _inline_bounds(o)) for o in options if o.get("type") != "null"]
        nullable = any(o.get("type") == "null" for o in options)
        return " or ".join(inner + (["null"] if nullable else []))
    kind = schema.get("type")
    if kind == "array":
        if "prefixItems" in schema:
            items = [_type(s, defs, top=False) + _inline_bounds(s) for s in schema["prefixItems"]]
            return "[" + ", ".join(items) + "]"
        items_schema = schema.get("items", {})
        if "$ref" in items_schema:
            return "list of sections"
        return "list of " + _type(items_schema, defs, top=False) + _inline_bounds(items_schema)
    if isinstance(kind, list):
        return " or ".join(kind)
    return str(kind or "any")


def _bounds(schema: Schema) -> str:
    if "anyOf" in schema:  # Optional[int] carries its bounds on the non-null branch
        branches = [s for s in schema["anyOf"] if s.get("type") != "null"]
        if len(branches) == 1:
            schema = {**branches[0], **schema}
    parts = [text.format(schema[key]) for key, text in _BOUNDS if key in schema]
    return "; ".join("not empty" if part in ("at least 1 characters", "at least 1 items") else part for part in parts)


def _default(model: Type[BaseModel], name: str) -> str:
    field = model.model_fields[name]
    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    if isinstance(value, BaseModel):
        return ""
    return _literal(value)


def _nested_model(annotation: Any) -> Optional[Type[BaseModel]]:
    """The model class inside ``X``, ``List[X]`` or ``Optional[X]``, if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _nested_model(arg)
        if found is not None:
            return found
    return None


def _describe(schema: Schema, nested: Optional[Schema]) -> str:
    text = schema.get("title", "")
    extra = schema.get("description") or (nested or {}).get("description", "")
    if extra:
        text = f"{text}: {extra.strip()}" if text else extra.strip()
    return " ".join(text.split())


def _walk(model: Type[BaseModel], schema: Schema, defs: Dict[str, Schema], prefix: str) -> Iterator[KeyDoc]:
    properties = schema.get("properties", {})
    for name in model.model_fields:
        prop = properties[model.model_fields[name].alias or name]
        nested_model = _nested_model(model.model_fields[name].annotation)
        is_list = prop.get("type") == "array" or any(s.get("type") == "array" for s in prop.get("anyOf", []))
        nested_schema = None
        if nested_model is not None:
            ref_holder = prop.get("items", prop) if is_list else prop
            if "$ref" not in ref_holder:  # Optional[X]: the reference is one of anyOf
                ref_holder = next((s for s in prop.get("anyOf", []) if "$ref" in s), ref_holder)
            nested_schema = _resolve({"$ref": ref_holder["$ref"]}, defs) if "$ref" in ref_holder else None
        path = f"{prefix}{name}"
        yield KeyDoc(path, _type(prop, defs), _default(model, name), _bounds(prop), _describe(prop, nested_schema))
        if nested_model is not None and nested_schema is not None:
            yield from _walk(nested_model, nested_schema, defs, f"{path}[]." if is_list else f"{path}.")


def config_keys(model: Type[BaseModel]) -> List[KeyDoc]:
    """Every key of ``model``, depth first in the order the model declares them."""
    schema = model.model_json_schema()
    return list(_walk(model, schema, schema.get("$defs", {}), ""))


def _cell(text: str) -> str:
    return text.replace("|", "\\|") if "\\|" not in text else text


def config_table(model: Type[BaseModel]) -> str:
    """A Markdown table of every key of ``model``."""
    rows = ["| key | type | default | bounds | description |", "|---|---|---|---|---|"]
    for key in config_keys(model):
        rows.append("| " + " | ".join([f"`{key.path}`", _cell(key.type), _cell(key.default), _cell(key.bounds),
                                       _cell(key.description)]) + " |")
    return "\n".join(rows) + "\n"
