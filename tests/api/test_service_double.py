"""The API's test double and the real appliance both keep to the ApplianceService protocol.

Every method of the protocol must exist on both, with the same parameters and the same
return annotation, so a change to the protocol that one of them misses fails here instead
of leaving the API tests green against a double that no longer looks like the appliance.
"""
from __future__ import annotations

import inspect

import pytest

from edge_app.appliance.appliance import Appliance
from edge_app.reporting.protocol import ApplianceService
from tests.api.in_memory_service import InMemoryService

PROTOCOL_METHODS = sorted(
    name for name, member in vars(ApplianceService).items()
    if callable(member) and not name.startswith("_")
)


def _signature(cls, name):
    sig = inspect.signature(getattr(cls, name))
    return [(p.name, p.kind, p.annotation) for p in sig.parameters.values()], sig.return_annotation


def test_the_protocol_lists_what_the_api_uses():
    assert PROTOCOL_METHODS == ["apply_config", "cameras", "counts", "current_config", "delete_event", "device_health", "event",
                                "event_snapshot", "events", "latest_detections", "latest_frame", "readiness",
                                "recordings", "reviews", "status", "wait_frame"]


@pytest.mark.parametrize("implementation", [Appliance, InMemoryService], ids=["appliance", "in-memory-double"])
@pytest.mark.parametrize("name", PROTOCOL_METHODS)
def test_implements_the_protocol_method(implementation, name):
    assert hasattr(implementation, name), f"{implementation.__name__} lacks {name}"
    assert _signature(implementation, name) == _signature(ApplianceService, name)
