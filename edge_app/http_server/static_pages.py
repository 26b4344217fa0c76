"""``/``: a static page (the appliance's dashboard, the fleet's page) that talks to its server's API.

Each page is plain HTML, CSS and JavaScript with no third-party code, so it works on a box
without internet access and adds nothing to audit; ``shared_static/`` holds what the pages share.
"""
from __future__ import annotations

from pathlib import Path

from flask import Blueprint, Response, send_from_directory

#: the CSS and JavaScript helpers the dashboard and the fleet page both load, from ``/static/shared/``
SHARED_STATIC_DIR = Path(__file__).resolve().parent / "shared_static"

# Everything a page loads comes from its own server; the live view is an <img>.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; img-src 'self' data: blob:; style-src 'self'; script-src 'self'; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
)


def static_page_blueprint(name: str, static_dir: Path) -> Blueprint:
    """``/`` serves ``static_dir/index.html``, ``/static/shared/`` the files every page shares and
    ``/static/`` the rest of ``static_dir``, under the page's CSP."""
    bp = Blueprint(name, __name__, static_folder=str(static_dir), static_url_path="/static")

    @bp.get("/static/shared/<path:filename>")
    def shared_static(filename: str) -> Response:
        return send_from_directory(SHARED_STATIC_DIR, filename)

    @bp.get("/")
    def index() -> Response:
        response = send_from_directory(static_dir, "index.html", max_age=0)
        response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
        response.headers["Cache-Control"] = "no-cache"
        return response

    return bp
