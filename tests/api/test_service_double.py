"""The API's test double and the appliance's real read side both keep to ``ApplianceReads``.

Every method of the protocol must exist on both, with the same parameters and the same return
annotation, and the double must offer nothing more than the read side (besides the controls a
test drives it with), so a change to the protocol that one of them misses fails here instead of
leaving the API tests green against a double that no longer looks like the appliance.
"""
from __future__ import annotations

import inspect

import pytest

from edge_app.appliance.read_side import RunningReads
from edge_app.reporting.protocol import ApplianceReads
from tests.api.in_memory_service import InMemoryService

PROTOCOL_METHODS = sorted(
    name for name, member in vars(ApplianceReads).items()
    if callable(member) and not name.startswith("_")
)
#: how a test drives the double: frames in, events in, closing its store
TEST_CONTROLS = ["add_event", "close", "publish"]


def _signature(cls, name):
    sig = inspect.signature(getattr(cls, name))
    return [(p.name, p.kind, p.annotation) for p in sig.parameters.values()], sig.return_annotation


def _public_methods(cls):
    return sorted(name for name, member in inspect.getmembers(cls) if callable(member) and not name.startswith("_"))


def test_the_protocol_lists_what_the_api_reads():
    assert PROTOCOL_METHODS == ["cameras", "counts", "device_health", "event", "event_snapshot", "event_total", "event_track", "events",
                                "latest_detections", "latest_frame", "readiness", "recordings", "reviews", "stage_times",
                                "status", "wait_frame"]


@pytest.mark.parametrize("implementation", [RunningReads, InMemoryService], ids=["appliance-reads", "in-memory-double"])
@pytest.mark.parametrize("name", PROTOCOL_METHODS)
def test_implements_the_protocol_method(implementation, name):
    assert hasattr(implementation, name), f"{implementation.__name__} lacks {name}"
    assert _signature(implementation, name) == _signature(ApplianceReads, name)


def test_the_double_offers_the_read_side_and_its_test_controls_only():
    assert _public_methods(InMemoryService) == sorted(PROTOCOL_METHODS + TEST_CONTROLS)
