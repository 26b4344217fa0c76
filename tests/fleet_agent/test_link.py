"""The appliance keeps the four calls the fleet agent is wired through, with the same signatures."""
import inspect

import pytest

from edge_app.appliance.appliance import Appliance
from edge_app.fleet_agent.link import ApplianceFleetLink

CALLS = ["on_config_desired", "refetch_config_desired", "on_remote_config_report", "publish_config_reported"]


def test_the_link_names_exactly_these_calls():
    named = sorted(name for name, _ in inspect.getmembers(ApplianceFleetLink, inspect.isfunction) if not name.startswith("_"))
    assert named == sorted(CALLS)


@pytest.mark.parametrize("name", CALLS)
def test_the_appliance_has_the_call_with_its_signature(name):
    wanted = inspect.signature(getattr(ApplianceFleetLink, name))
    found = inspect.signature(getattr(Appliance, name))
    assert list(found.parameters) == list(wanted.parameters)
    assert str(found.return_annotation) == str(wanted.return_annotation)
