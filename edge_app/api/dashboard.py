"""``GET /``: the built-in dashboard, a static page that talks to the REST API from the browser.

The page is plain HTML, CSS and JavaScript in ``static/`` with no third-party code, so it works
on a box without internet access and adds nothing to audit.
"""
from __future__ import annotations

from pathlib import Path
from typing import Tuple

from flask import Blueprint

from edge_app.api.routing import ResponseSpec, Route
from edge_app.http_server.static_pages import static_page_blueprint

STATIC_DIR = Path(__file__).resolve().parent / "static"

#: the page (its view is the static page blueprint's ``index``); its CSS and JavaScript are no part of the API
ROUTES: Tuple[Route, ...] = (
    Route("GET", "/", None, "Built-in dashboard", "meta", {200: ResponseSpec("HTML page", {"type": "string"}, "text/html")},
          secured=False),
)


def dashboard_blueprint() -> Blueprint:
    return static_page_blueprint("dashboard", STATIC_DIR)
