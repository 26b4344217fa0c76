"""The fleet's typed request models: the 400 sentence each bad body or query parameter gets, and
the views being module-level functions over the app's route state."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from edge_app.http_server.errors import ApiError
from edge_app.fleet_service.app import create_fleet_app
from edge_app.fleet_service.config import FleetConfig
from edge_app.fleet_service.request_models import (MAX_TARGETS, DeleteModelQuery, DeviceListQuery, FleetPatchBody,
                                                   MergePatch, ModelRolloutBody, ResetBody, parse_body)
from edge_app.http_server.query_params import parse_query
from edge_app.fleet_service.route_state import EXTENSION, FleetRouteState

SHAPE = "the body must be of the right shape"


@pytest.mark.parametrize("model, body, sentence", [
    (FleetPatchBody, [1], SHAPE),
    (FleetPatchBody, {"devices": "all"}, SHAPE),
    (FleetPatchBody, {"devices": "all", "patch": {"a": 1}, "extra": 1}, SHAPE),
    (FleetPatchBody, {"devices": "some", "patch": {"a": 1}}, 'devices must be "all" or a non-empty list'),
    (FleetPatchBody, {"devices": [], "patch": {"a": 1}}, 'devices must be "all" or a non-empty list'),
    (FleetPatchBody, {"devices": ["#"], "patch": {"a": 1}}, "a device id must match"),
    (FleetPatchBody, {"devices": [7], "patch": {"a": 1}}, "devices must hold device ids (strings), got 7"),
    (FleetPatchBody, {"devices": ["d"] * (MAX_TARGETS + 1), "patch": {"a": 1}}, f"at most {MAX_TARGETS} ids"),
    (FleetPatchBody, {"devices": "all", "patch": {}}, "patch is empty"),
    (FleetPatchBody, {"devices": "all", "patch": [1]}, "patch must be a JSON object"),
    (ModelRolloutBody, {"devices": "all", "patch": {}}, SHAPE),
    (ResetBody, {}, SHAPE),
    (ResetBody, {"version": 1, "x": 2}, SHAPE),
    (ResetBody, {"version": "7"}, "version must be an integer from 0 to 2^53 - 1"),
    (ResetBody, {"version": True}, "version must be an integer"),
    (ResetBody, {"version": 2 ** 53}, "version must be an integer"),
])
def test_a_bad_body_answers_its_rule_or_its_shape(model, body, sentence):
    with pytest.raises(ApiError) as refused:
        parse_body(model, body, SHAPE)
    assert refused.value.status == 400 and sentence in refused.value.message


@pytest.mark.parametrize("body, sentence", [
    ([1], "the body must be a JSON object"), ({}, "the body is empty"), ("x", "the body must be a JSON object"),
])
def test_a_device_patch_is_a_non_empty_object(body, sentence):
    with pytest.raises(ApiError, match=sentence):
        parse_body(MergePatch, body)
    assert parse_body(MergePatch, {"a": {"b": None}}).root == {"a": {"b": None}}


@pytest.mark.parametrize("model, args, sentence", [
    (DeviceListQuery, {"state": "on"}, "state must be online or offline"),
    (DeviceListQuery, {"problem": "x"}, "problem must be one of"),
    (DeviceListQuery, {"sort": "name"}, "sort must be id or problems"),
    (DeviceListQuery, {"limit": "+5"}, "limit must be an integer"),
    (DeviceListQuery, {"limit": "9" * 5000}, "limit must be an integer"),
    (DeviceListQuery, {"after": "a/b"}, "a device id must match"),
    (DeleteModelQuery, {"force": "1"}, "force must be true or false"),
])
def test_a_bad_query_parameter_answers_its_rule(model, args, sentence):
    with pytest.raises(ApiError) as refused:
        parse_query(model, args)
    assert refused.value.status == 400 and sentence in refused.value.message


def test_query_parameters_left_out_empty_or_unknown_take_their_defaults():
    query = parse_query(DeviceListQuery, {"state": "", "limit": "5", "unknown": "x"})
    assert (query.state, query.limit, query.after) == (None, 5, None)
    assert parse_query(DeleteModelQuery, {}).force == "false"


def test_every_fleet_view_is_a_module_level_function_over_the_route_state():
    config = FleetConfig()
    app = create_fleet_app(SimpleNamespace(config=config, current_config=lambda: config))
    assert isinstance(app.extensions[EXTENSION], FleetRouteState)
    for blueprint in ("fleet", "artifacts", "fleet_clips"):
        views = {name: view for name, view in app.view_functions.items() if name.startswith(blueprint + ".")}
        assert views, blueprint
        nested = [name for name, view in views.items() if "<locals>" in view.__qualname__]
        assert nested == [], f"views defined inside a function: {nested}"
