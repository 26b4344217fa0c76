"""The query-parameter rules the API and the fleet service share (edge_app/http_server/query_params.py), one table per rule."""
from __future__ import annotations

import math

import pytest

from edge_app.http_server.errors import ApiError
from edge_app.http_server.query_params import integer_arg, number_arg


@pytest.mark.parametrize("raw, expected", [
    (None, 75), ("", 75), ("1", 1), ("100", 100), ("080", 80),
])
def test_integer_arg_takes_plain_digits_within_bounds(raw, expected):
    args = {} if raw is None else {"quality": raw}
    assert integer_arg(args, "quality", 75, 1, 100) == expected


@pytest.mark.parametrize("raw", ["0", "101", "+5", "-1", "1_0", " 5", "5 ", "٣", "²", "5.0", "high", "9" * 5000])
def test_integer_arg_refuses_anything_else_with_a_short_message(raw):
    with pytest.raises(ApiError) as refused:
        integer_arg({"quality": raw}, "quality", 75, 1, 100)
    assert refused.value.status == 400 and "quality must be an integer from 1 to 100" in str(refused.value)
    assert len(str(refused.value)) < 200


@pytest.mark.parametrize("raw, expected", [
    (None, 10.0), ("", 10.0), ("0.1", 0.1), ("30", 30.0), ("2.5", 2.5), ("1e1", 10.0),
    ("0.3333333333333333", 0.3333333333333333),
])
def test_number_arg_takes_decimal_numbers_within_bounds(raw, expected):
    args = {} if raw is None else {"fps": raw}
    assert math.isclose(number_arg(args, "fps", 10.0, 0.1, 30.0), expected)


@pytest.mark.parametrize("raw", ["0", "0.09", "31", "nan", "NaN", "inf", "-inf", "1e400", "fast", "1" + "0" * 5000, "٣"])
def test_number_arg_refuses_anything_else_with_a_short_message(raw):
    with pytest.raises(ApiError) as refused:
        number_arg({"fps": raw}, "fps", 10.0, 0.1, 30.0)
    assert refused.value.status == 400 and "fps must be a number from 0.1 to 30" in str(refused.value)
    assert len(str(refused.value)) < 200
