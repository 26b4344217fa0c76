"""One Route entry is both the registered view and its operation in the OpenAPI document."""
from typing import Optional

import pytest
from flask import Blueprint, Flask, jsonify
from pydantic import BaseModel, ConfigDict

from edge_app.api.answers import SignedUrl
from edge_app.api.openapi_spec import appliance_routes, build_openapi
from edge_app.api.request_models import ExportQuery, TtlBody
from edge_app.api.routing import RequestBody, ResponseSpec, Route, error, register_routes


class WidgetQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")
    colour: Optional[str] = None


def widget(prefix, query, camera_id):
    assert isinstance(query, WidgetQuery)  # the route's query model, validated, after the bound arguments
    return jsonify({"url": f"{prefix}{camera_id}", "expires": None})


WIDGET = Route("POST", "/api/v1/cameras/<camera_id>/widget", widget, "A widget", "cameras",
               {200: ResponseSpec("The widget", SignedUrl), 404: error("Unknown camera")},
               query=WidgetQuery, body=RequestBody(TtlBody, required=False))


def test_a_new_route_is_one_entry_registered_and_documented():
    app = Flask(__name__)
    app.register_blueprint(register_routes(Blueprint("widgets", __name__), [WIDGET], "/w/"))
    assert app.test_client().post("/api/v1/cameras/front/widget").get_json() == {"url": "/w/front", "expires": None}
    operation = build_openapi([WIDGET])["paths"]["/api/v1/cameras/{camera_id}/widget"]["post"]
    assert [(p["name"], p["in"], p.get("required", False)) for p in operation["parameters"]] == [
        ("camera_id", "path", True), ("colour", "query", False)]
    assert operation["requestBody"]["required"] is False
    assert operation["requestBody"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/TtlBody"}
    assert operation["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/SignedUrl"}
    # What the server answers before any route, and the token's answers, come with every secured route.
    assert {"400", "401", "404", "408", "413", "414", "429", "431"} <= set(operation["responses"])


@pytest.mark.parametrize("name, required", [("camera", True), ("from", True), ("to", True), ("download", False),
                                            ("expires", False), ("sig", False)])
def test_query_models_give_the_parameters_their_names_and_whether_they_are_required(name, required):
    fields = {field.alias or key: field for key, field in ExportQuery.model_fields.items()}
    assert fields[name].is_required() is required


def test_every_appliance_route_is_a_distinct_method_and_path():
    seen = [(route.method, route.path) for route in appliance_routes()]
    assert len(seen) == len(set(seen))
