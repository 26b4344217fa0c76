"""The REST API holds no way to change the configuration but the one change path (``ConfigChanges``).

The API is built from three narrow doors: the read side (``ApplianceReads``), the change path and
``EventDeletion``. The read side changes nothing, the appliance hands its apply to its change path
alone, and a PATCH really goes through that path: it waits for the path's lock like every other
origin (the fleet, the detect switch, a model revert).
"""
from __future__ import annotations

import inspect
import threading
from pathlib import Path

import pytest

import edge_app.api
from edge_app.api import create_app
from edge_app.appliance.appliance import Appliance
from edge_app.config.file import Problem, load_config, parse_config
from edge_app.config_change.changes import ConfigChanges, ConfigRefused
from edge_app.reporting.protocol import ApplianceReads, EventDeletion

#: verbs of a method that changes something; none may start a method of the read side
MUTATING_VERBS = ("add", "apply", "cancel", "clear", "delete", "patch", "put", "reload", "remove", "reset", "save",
                  "set", "start", "stop", "update", "use", "write")
API_FOLDER = Path(edge_app.api.__file__).parent

READ_METHODS = sorted(name for name, member in vars(ApplianceReads).items()
                      if callable(member) and not name.startswith("_"))


@pytest.mark.parametrize("name", READ_METHODS)
def test_no_method_of_the_read_side_changes_anything(name):
    assert not name.startswith(MUTATING_VERBS), f"ApplianceReads.{name} looks like a change"


@pytest.mark.parametrize("protocol, methods", [(ApplianceReads, READ_METHODS), (EventDeletion, ["delete_event"])])
def test_neither_door_can_apply_a_configuration(protocol, methods):
    assert "apply_config" not in vars(protocol) and "current_config" not in vars(protocol)
    assert sorted(name for name in vars(protocol) if not name.startswith("_") and callable(vars(protocol)[name])) == methods


def test_create_app_takes_the_three_doors_and_requires_each():
    parameters = inspect.signature(create_app).parameters
    required = [(name, p.annotation) for name, p in parameters.items() if p.default is inspect.Parameter.empty]
    assert required == [("reads", "ApplianceReads"), ("changes", "ConfigChanges"), ("deletion", "EventDeletion")]
    with pytest.raises(TypeError):
        create_app(object())  # type: ignore[call-arg]


def test_a_change_path_cannot_be_built_without_what_it_applies_to():
    with pytest.raises(TypeError):
        ConfigChanges(lambda: None)  # type: ignore[call-arg]


@pytest.mark.parametrize("name", ["apply_config", "ApplianceService", "use_changes", "current_config"])
def test_no_module_of_the_api_names_another_way_in(name):
    named = [path.name for path in sorted(API_FOLDER.rglob("*.py")) if name in path.read_text(encoding="utf-8")]
    assert named == []


def test_the_appliance_offers_its_doors_and_no_apply_of_its_own(model_path):
    appliance = Appliance(parse_config({"device_id": "doors", "cameras": [{"id": "cam", "source": "test://box"}],
                                        "model": {"path": str(model_path)}, "mqtt": {"enabled": False},
                                        "api": {"enabled": False}}))
    assert isinstance(appliance.changes, ConfigChanges)
    public = {name for name, member in inspect.getmembers(Appliance) if callable(member) and not name.startswith("_")}
    assert not public & {"apply_config", "use_changes", *READ_METHODS, "delete_event"}


def test_a_patch_waits_for_the_change_paths_lock_and_lands_through_it(api):
    """Another origin holds the change path (its build blocks): the PATCH cannot overtake it."""
    holding, release = threading.Event(), threading.Event()

    def held_build(current):
        holding.set()
        release.wait(10)
        raise ConfigRefused("held by the test", [Problem("", "nothing to change")])

    other = threading.Thread(target=lambda: pytest.raises(ConfigRefused, api.changes.write, held_build), daemon=True)
    other.start()
    assert holding.wait(5)
    answers = []
    patcher = threading.Thread(target=lambda: answers.append(
        api.request("PATCH", "/api/v1/config", json={"model": {"conf_threshold": 0.42}})), daemon=True)
    patcher.start()
    patcher.join(0.5)
    assert patcher.is_alive() and api.service.applied.apply_calls == 0, "the PATCH did not wait for the change path"
    release.set()
    patcher.join(10)
    other.join(5)
    assert answers[0].status_code == 200, answers[0].text
    assert api.service.applied.apply_calls == 1
    assert api.changes.current().model.conf_threshold == 0.42 == load_config(api.config_path).model.conf_threshold
