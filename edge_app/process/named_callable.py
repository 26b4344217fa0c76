"""Callables named as ``module:attribute`` strings.

A child process started with ``spawn`` is a fresh interpreter: what it should call (a decoder's
opener, an engine's runtime, a test double in their place) is handed over as a picklable name
and looked up there.
"""
from __future__ import annotations

import importlib
from typing import Any


def resolve(name: str) -> Any:
    """The attribute ``name`` (``module:attribute``) names, importing its module."""
    module, _, attribute = name.partition(":")
    return getattr(importlib.import_module(module), attribute)
