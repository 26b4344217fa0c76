"""JSON numbers are finite: the one rule for every JSON read from outside and every JSON answer.

Python's ``json`` reads ``NaN``, ``Infinity`` and ``-Infinity`` (not JSON), and a number too large
for a float (``1e400``) as infinity; it then writes them back as ``Infinity``, which no JSON reader
accepts. Non-finite numbers also slip through range checks (``inf > 0``). So input with any of them
is refused, and output that would hold one carries ``null`` instead.
"""
from __future__ import annotations

import json
import math
from typing import Any


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400 parses as inf
        raise ValueError(f"{text[:32]} is out of range for a number")
    return value


def loads_finite(text: Any) -> Any:
    """``json.loads`` refusing NaN, Infinity and numbers beyond a float's range (ValueError)."""
    return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)


def without_non_finite(value: Any) -> Any:
    """``value`` with every NaN or infinite float replaced by None (what was stored before the rule)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: without_non_finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [without_non_finite(item) for item in value]
    return value


def dumps_finite(value: Any, **kwargs: Any) -> str:
    """``json.dumps`` that never writes NaN or Infinity: such numbers become null."""
    try:
        return json.dumps(value, allow_nan=False, **kwargs)
    except ValueError:
        return json.dumps(without_non_finite(value), allow_nan=False, **kwargs)


__all__ = ["dumps_finite", "loads_finite", "without_non_finite"]
