"""Markdown reference of an OpenAPI document: every route with its parameters, answers and schemas.

``docs/rest-api.md`` is generated from the document ``GET /api/openapi.json`` serves
(``python scripts/gen_reference.py``), so the page lists exactly the routes the server answers.
"""
from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Tuple

Schema = Dict[str, Any]
_METHODS = ("get", "post", "put", "patch", "delete")
_REF_PREFIX = "#/components/schemas/"


def _anchor(name: str) -> str:
    return name.lower()


def _type(schema: Schema, links: Mapping[str, str]) -> str:
    """How a value of ``schema`` reads, with referenced schemas as links."""
    if "$ref" in schema:
        name = schema["$ref"][len(_REF_PREFIX):]
        return f"[{name}]({links.get(name, '#' + _anchor(name))})"
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    if "enum" in schema:
        return " \\| ".join(f"`{json.dumps(v)}`" for v in schema["enum"])
    for combinator in ("anyOf", "oneOf"):
        if combinator in schema:
            return " or ".join(_type(option, links) for option in schema[combinator])
    kind = schema.get("type")
    if kind == "array":
        return "array of " + _type(schema.get("items", {}), links)
    if kind == "object" and schema.get("properties"):
        return "{" + ", ".join(f"{name}: {_type(value, links)}" for name, value in schema["properties"].items()) + "}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return "object of " + _type(schema["additionalProperties"], links)
    if isinstance(kind, list):
        return " or ".join(kind)
    if kind == "string" and schema.get("format") == "binary":
        return "binary"
    return str(kind or "any")


def _limits(schema: Schema) -> str:
    words = (("minimum", ">= {}"), ("maximum", "<= {}"), ("pattern", "matches `{}`"), ("default", "default `{}`"))
    return ", ".join(text.format(json.dumps(schema[key]) if key == "default" else schema[key])
                     for key, text in words if key in schema)


def _cell(text: Any) -> str:
    text = " ".join(str(text).split())
    return text.replace("|", "\\|") if "\\|" not in text else text


def _body(content: Mapping[str, Any], links: Mapping[str, str]) -> str:
    return "; ".join(f"`{media}` {_type(item.get('schema', {}), links)}" for media, item in content.items())


def _common_answers(operations: List[Tuple[str, str, Schema]]) -> Dict[str, Tuple[Any, str]]:
    """Answers most operations list identically, said once for the whole API: status -> (answer, where)."""
    counts: Dict[str, List[Tuple[Any, List[Schema]]]] = {}
    for _, _, op in operations:
        for status, answer in op["responses"].items():
            same = next((entry for entry in counts.setdefault(status, []) if entry[0] == answer), None)
            if same is None:
                counts[status].append((answer, [op]))
            else:
                same[1].append(op)
    common: Dict[str, Tuple[Any, str]] = {}
    for status, entries in counts.items():
        ranked = sorted(entries, key=lambda entry: len(entry[1]), reverse=True)
        answer, ops = ranked[0]
        # Said once when most routes share it, or when it is by far the commonest (every route
        # can get the host check's 400; many also have a 400 of their own, each a different one).
        runner_up = len(ranked[1][1]) if len(ranked) > 1 else 0
        on_every_route = sum(len(entry[1]) for entry in entries) == len(operations)
        if 2 * len(ops) < len(operations) and not (on_every_route and len(ops) >= 3 * max(runner_up, 1)):
            continue
        secured = [op for _, _, op in operations if op.get("security") != []]
        if len(ops) == len(operations):
            where = "every route"
        elif len(ops) == len(secured) and all(op.get("security") != [] for op in ops):
            where = "routes that need a token"
        else:
            where = "most routes; a route that answers otherwise says so" if 2 * len(ops) >= len(operations) \
                else "routes that list no other answer for it"
        common[status] = (answer, where)
    return common


def _operation(method: str, path: str, op: Schema, common: Mapping[str, Tuple[Any, str]], links: Mapping[str, str]) -> List[str]:
    lines = [f"### `{method.upper()} {path}`", "", op.get("summary", "").strip() + ".", ""]
    if op.get("security") == []:
        lines += ["No token needed.", ""]
    params = op.get("parameters", [])
    if params:
        lines += ["| parameter | in | type | required | limits | description |", "|---|---|---|---|---|---|"]
        for param in params:
            schema = param.get("schema", {})
            lines.append(f"| `{param['name']}` | {param['in']} | {_cell(_type(schema, links))} | "
                         f"{'yes' if param.get('required') else 'no'} | {_cell(_limits(schema))} | "
                         f"{_cell(param.get('description', ''))} |")
        lines.append("")
    body = op.get("requestBody")
    if body:
        text = f"Body: {_body(body.get('content', {}), links)}"
        if body.get("description"):
            text += f". {body['description']}"
        lines += [_cell(text), ""]
    lines += ["| status | answer | body |", "|---|---|---|"]
    for status, answer in sorted(op["responses"].items()):
        if status in common and common[status][0] == answer:
            continue
        lines.append(f"| {status} | {_cell(answer.get('description', ''))} | {_cell(_body(answer.get('content', {}), links))} |")
    return lines + [""]


def _schema_section(name: str, schema: Schema, links: Mapping[str, str]) -> List[str]:
    lines = [f"### {name}", ""]
    if schema.get("description"):
        lines += [" ".join(schema["description"].replace("``", "`").split()), ""]
    properties = schema.get("properties", {})
    if not properties:
        return lines + [f"Type: {_type(schema, links)}.", ""]
    required = set(schema.get("required", []))
    lines += ["| field | type | required | description |", "|---|---|---|---|"]
    for field, prop in properties.items():
        lines.append(f"| `{field}` | {_cell(_type(prop, links))} | {'yes' if field in required else 'no'} | "
                     f"{_cell(prop.get('description', ''))} |")
    return lines + [""]


def openapi_markdown(document: Schema, links: Mapping[str, str]) -> str:
    """Routes, answers and schemas of ``document``; ``links`` sends named schemas elsewhere (no section here)."""
    operations = [(method, path, op) for path, item in document["paths"].items()
                  for method, op in item.items() if method in _METHODS]
    common = _common_answers(operations)
    lines = ["## Routes", "", "| method | path | summary |", "|---|---|---|"]
    for method, path, op in operations:
        anchor = f"{method}-{path}".lower().replace("/", "").replace("{", "").replace("}", "").replace(".", "")
        lines.append(f"| {method.upper()} | [`{path}`](#{anchor}) | {_cell(op.get('summary', ''))} |")
    lines += ["", "Besides the answers listed with each route:", "", "| status | answer | on |", "|---|---|---|"]
    lines += [f"| {status} | {_cell(answer.get('description', ''))} | {where} |"
              for status, (answer, where) in sorted(common.items())]
    lines += ["", "Every error is a JSON object [Error](#error).", ""]
    for method, path, op in operations:
        lines += _operation(method, path, op, common, links)
    lines += ["## Schemas", ""]
    for name, schema in document["components"]["schemas"].items():
        if name not in links:
            lines += _schema_section(name, schema, links)
    return "\n".join(lines).rstrip("\n") + "\n"
