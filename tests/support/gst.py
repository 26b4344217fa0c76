"""PyGObject with GStreamer in the test venv (``pip install -e '.[gstreamer]'``), for the tests of
decoder gstreamer. Missing, those tests skip (and fail on CI, where it must be installed)."""
from __future__ import annotations

from testkit.skips import missing


def require_gi() -> None:
    from edge_app.capture.gst.source import import_gst
    from edge_app.config.source_spec import SourceError

    try:
        import_gst()
    except SourceError as err:
        missing(f"{err} (pip install -e '.[gstreamer]')")
