"""Skipping a test for a missing tool or package: a skip with its reason on a contributor's
machine, a failure on CI (``CI`` set, as ``.ci/run`` does), where ``scripts/system-deps.sh`` and
``pip install -e '.[opencv,dev,gstreamer]'`` install everything the suite needs. A missing tool
can never turn CI green by skipping.

Every test that needs a tool or a package asks for it here (``tests/project/test_skips.py`` finds any
skip that does not, and checks that ``scripts/system-deps.sh`` installs every tool of ``TOOLS``).
"""
from __future__ import annotations

import importlib
import os
import shutil
from types import ModuleType
from typing import Dict, NoReturn, Optional

import pytest

#: every command-line tool the tests run, and the Debian package that brings it
TOOLS: Dict[str, str] = {
    "ffmpeg": "ffmpeg",                    # the test clips, RTSP feeds
    "ffprobe": "ffmpeg",                   # what the written files hold
    "mosquitto": "mosquitto",              # the tests' own brokers
    "mosquitto_passwd": "mosquitto",       # brokers with logins
    "mosquitto_pub": "mosquitto-clients",  # what the docs tell users to type
    "mosquitto_sub": "mosquitto-clients",
    "node": "nodejs",                      # the dashboard's scripts
    "chromium": "chromium",                # the dashboard in a browser
    "chromedriver": "chromium-driver",
    "postgres": "postgresql",              # the fleet service on PostgreSQL
    "psql": "postgresql-client",
    "git": "git",                          # the demo's test clones the checkout
    "openssl": "openssl",                  # throw-away TLS certificates
    "systemd-analyze": "systemd",          # the shipped unit file
}

#: what system-deps.sh installs that is no command: GStreamer's RTSP server and decoders, with
#: the bindings of the system Python (the tests' RTSP server) and what pip builds PyGObject with
LIBRARIES = ("python3-gi", "gir1.2-gst-rtsp-server-1.0", "gstreamer1.0-libav", "gstreamer1.0-plugins-base",
             "gstreamer1.0-plugins-good", "gstreamer1.0-plugins-bad", "libgirepository1.0-dev")


def on_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def missing(what: str) -> NoReturn:
    """Skip, or on CI fail, because ``what`` (a sentence saying what is missing and how to get it) is missing."""
    if on_ci():
        pytest.fail(f"{what} (CI must have it)", pytrace=False)
    pytest.skip(what, allow_module_level=True)  # also from a module import (require_module)


def require_tool(name: str, path: Optional[str] = None) -> str:
    """The path of the command ``name`` (of ``TOOLS``): ``path`` where given (an executable file),
    else found on PATH."""
    if name not in TOOLS:
        raise ValueError(f"{name} is not in testkit/skips.py TOOLS: add it with its Debian package")
    found = (path if os.access(path, os.X_OK) else None) if path else shutil.which(name)
    if found is None:
        missing(f"{path or name} is not installed (Debian package {TOOLS[name]}; run scripts/system-deps.sh)")
    return found


def require_module(name: str, extra: str = "dev") -> ModuleType:
    """The Python module ``name``, which ``pip install -e '.[<extra>]'`` installs."""
    try:
        return importlib.import_module(name)
    except ImportError as err:
        missing(f"Python module {name} is missing ({err}; pip install -e '.[{extra}]')")
