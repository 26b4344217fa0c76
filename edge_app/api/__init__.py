"""The REST API: a Flask app built by ``create_app`` and served by ``ApiServer`` (cheroot).

The names are resolved lazily so that importing ``edge_app.api.service`` (which the pipeline
does) does not pull in Flask, cheroot and OpenCV.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from edge_app.api.app import create_app
    from edge_app.api.server import ApiServer

__all__ = ["create_app", "ApiServer"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from edge_app.api.app import create_app

        return create_app
    if name == "ApiServer":
        from edge_app.api.server import ApiServer

        return ApiServer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
