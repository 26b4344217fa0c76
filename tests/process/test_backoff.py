"""next_retry_s: the one doubling wait of the retry loops (model downloads, refetches, the MQTT loop's restarts)."""
from __future__ import annotations

import pytest

from edge_app.process.backoff import next_retry_s


@pytest.mark.parametrize("previous_s, first_s, max_s, expected_s", [
    (None, 30, 600, 30),
    (30, 30, 600, 60),
    (480, 30, 600, 600),
    (600, 30, 600, 600),
    (None, 30, 10, 10),  # a first wait over the longest is cut to it
    (None, 1.0, 60.0, 1.0),
    (32.0, 1.0, 60.0, 60.0),
])
def test_next_retry_s(previous_s, first_s, max_s, expected_s):
    assert next_retry_s(previous_s, first_s, max_s) == expected_s


def test_the_wait_doubles_from_the_first_up_to_the_longest():
    waits, wait_s = [], None
    for _ in range(8):
        wait_s = next_retry_s(wait_s, 30, 600)
        waits.append(wait_s)
    assert waits == [30, 60, 120, 240, 480, 600, 600, 600]
