"""The bounded JSON parser every inbound MQTT payload goes through (hostile input)."""
from __future__ import annotations

import time

import pytest

from edge_app.mqtt.inbound import InboundPayloadError, nesting_depth_exceeds, parse_json_payload

MAX_BYTES = 256 * 1024
MAX_DEPTH = 8


@pytest.mark.parametrize("payload, expected", [
    (b'{"a": [1, 2, {"b": null}]}', {"a": [1, 2, {"b": None}]}),
    (b'"[[[[[[[[[[[[[[[[[[[[[[["', "[" * 23),  # brackets inside a string are no nesting
    (b'["a\\"[[[[[[[[[[[[[[[[[[", 1]', ['a"' + "[" * 18, 1]),  # nor after an escaped quote
    (b"[" * MAX_DEPTH + b"]" * MAX_DEPTH, eval("[" * MAX_DEPTH + "]" * MAX_DEPTH)),
    (b"12", 12),
    (b'{"x": 1.5e3}', {"x": 1500.0}),
    ('{"name": "Küche ✓"}'.encode(), {"name": "Küche ✓"}),
])
def test_valid_payloads_parse(payload, expected):
    assert parse_json_payload(payload, MAX_BYTES, MAX_DEPTH) == expected


@pytest.mark.parametrize("payload, why", [
    (b"[" * 100000 + b"]" * 100000, "nested"),  # the 200 KB message that killed the network thread
    (b"[" * 100000, "nested"),
    (b"{" * 50000, "nested"),
    (b'{"a":' * 9 + b"1" + b"}" * 9, "nested"),
    (b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1), "nested"),
    (b" " * (MAX_BYTES + 1), "bytes"),
    (b'{"a": "' + b"x" * MAX_BYTES + b'"}', "bytes"),
    (b"\xc3\x28\x00\xff", "UTF-8"),
    (bytes(range(256)), "UTF-8"),
    (b"NaN", "JSON"),
    (b'{"v": Infinity}', "JSON"),
    (b'[-Infinity]', "JSON"),
    (b'{"v": 1e999}', "JSON"),
    (b"9" * 5000, "JSON"),
    (b"{", "JSON"),
    (b'"unterminated [[[[', "JSON"),
    (b"", "JSON"),
])
def test_hostile_payloads_raise_the_one_error(payload, why):
    with pytest.raises(InboundPayloadError) as caught:
        parse_json_payload(payload, MAX_BYTES, MAX_DEPTH)
    assert why in caught.value.reason
    assert isinstance(caught.value, ValueError)  # callers that catch ValueError stay correct


def test_the_scan_is_cheap_for_the_worst_payloads():
    worst = [b"[" * MAX_BYTES, b"[]" * (MAX_BYTES // 2), b'"' + b"\\\"" * (MAX_BYTES // 2 - 1) + b'"',
             b'"' * MAX_BYTES]
    started = time.perf_counter()
    for payload in worst:
        try:
            parse_json_payload(payload, MAX_BYTES, MAX_DEPTH)
        except InboundPayloadError:
            pass
    assert time.perf_counter() - started < 2.0


def test_depth_counts_levels_outside_strings_only():
    assert not nesting_depth_exceeds(b'[[{"k": "]]]]]]]]"}]]', 3)
    assert nesting_depth_exceeds(b'[[{"k": [1]}]]', 3)
    assert not nesting_depth_exceeds(b"1", 0)
    assert nesting_depth_exceeds(b"[]", 0)


def test_an_unreasonable_depth_bound_is_a_programming_error():
    with pytest.raises(ValueError):
        parse_json_payload(b"1", MAX_BYTES, 10000)
