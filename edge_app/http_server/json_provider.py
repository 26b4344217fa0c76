"""Flask's JSON answers through :func:`edge_app.finite_json.dumps_finite`: never ``NaN`` or ``Infinity``.

A value read before non-finite numbers were refused (an old fleet database, a stored event) must
not make a whole answer invalid JSON for every client (the fleet page's list went blank).
"""
from __future__ import annotations

from typing import Any

from flask import Flask
from flask.json.provider import DefaultJSONProvider

from edge_app.finite_json import dumps_finite


class FiniteJSONProvider(DefaultJSONProvider):
    sort_keys = False  # the configuration in the order of the schema and docs/configuration.md

    def dumps(self, obj: Any, **kwargs: Any) -> str:
        kwargs.setdefault("default", self.default)
        kwargs.setdefault("ensure_ascii", self.ensure_ascii)
        kwargs.setdefault("sort_keys", self.sort_keys)
        return dumps_finite(obj, **kwargs)


def install_json_provider(app: Flask) -> None:
    app.json = FiniteJSONProvider(app)
