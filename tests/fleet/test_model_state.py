"""parse_models_state: what the fleet keeps of a reported models_state (hostile input)."""
from __future__ import annotations

import pytest

from edge_app.fleet_service.model_state import MAX_MODELS, parse_models_state

GOOD = {"version": "2", "state": "running"}


@pytest.mark.parametrize("junk", [
    {f"bad name {i}": GOOD for i in range(MAX_MODELS)},
    {f"m{i}": {"version": "2", "state": "exploded"} for i in range(MAX_MODELS)},
    {f"m{i}": ["2", "running"] for i in range(MAX_MODELS)},
])
def test_entries_that_are_dropped_do_not_take_the_places_of_real_ones(junk):
    reported = parse_models_state({**junk, "gate": GOOD, "yard": {**GOOD, "progress": 0.5}})
    assert set(reported) == {"gate", "yard"}


def test_at_most_max_models_are_kept_and_only_so_many_entries_are_looked_at():
    many = {f"m{i:03d}": GOOD for i in range(10 * MAX_MODELS)}
    assert list(parse_models_state(many)) == [f"m{i:03d}" for i in range(MAX_MODELS)]
    junk_then_good = {**{f"bad name {i}": GOOD for i in range(10 * MAX_MODELS)}, "gate": GOOD}
    assert parse_models_state(junk_then_good) == {}


def test_a_models_state_that_is_no_object_is_refused():
    with pytest.raises(ValueError, match="must be an object"):
        parse_models_state(["gate", GOOD])
