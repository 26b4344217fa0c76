"""A real RTSP server for tests: ``rtsp_server.py`` (gst-rtsp-server) run by the system python.

Fixtures
--------
``rtsp_server_factory``
    Callable: ``rtsp_server_factory({"cam": clip_path, ...}, port=None, start=True) -> RtspServer``.
    Each mount point loops its H.264 clip forever without re-encoding. ``server.url("cam")`` is
    ``rtsp://127.0.0.1:<port>/cam``; ``server.stop()`` kills it and ``server.start()`` brings it
    back on the *same* port (for reconnect tests); ``with server.frozen():`` stops it sending
    while its connections stay open. Every server is stopped at teardown.
``rtsp_server``
    A started server with the mounts ``bus``, ``zidane`` and ``mixed`` (the clips of media.py).

The server is the kit's (``testkit.rtsp``).
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, List, Mapping, Optional

import pytest

from testkit.rtsp import RtspServer, require_gst_rtsp_server
from testkit.skips import require_tool


@pytest.fixture
def rtsp_server_factory(tmp_path) -> Callable[..., RtspServer]:
    require_tool("ffmpeg")
    require_gst_rtsp_server()
    servers: List[RtspServer] = []

    def make(mounts: Mapping[str, Path], port: Optional[int] = None, start: bool = True) -> RtspServer:
        server = RtspServer(mounts, tmp_path / "rtsp", port=port)
        servers.append(server)
        return server.start() if start else server

    yield make
    for server in servers:
        server.stop()


@pytest.fixture
def rtsp_server(rtsp_server_factory, bus_clip, zidane_clip, mixed_clip) -> RtspServer:
    return rtsp_server_factory({"bus": bus_clip, "zidane": zidane_clip, "mixed": mixed_clip})
