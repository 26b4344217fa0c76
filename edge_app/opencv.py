"""OpenCV, imported where it is used, with one clear error when it is missing.

OpenCV is not an install requirement (setup.py says why): a device installs ``edge-app[opencv]``
or, on a Jetson, sees JetPack's GStreamer-enabled ``python3-opencv`` through a venv created with
``--system-site-packages``. A server that only runs the fleet service has no OpenCV at all, so no
module imports ``cv2`` when it is imported; the code that needs OpenCV calls :func:`opencv`.
"""
from __future__ import annotations

from types import ModuleType

INSTALL_HINT = ("install edge-app[opencv] (or, on a Jetson, JetPack's python3-opencv and create the virtual "
                "environment with --system-site-packages)")


class OpenCVUnavailable(ImportError):
    """``cv2`` cannot be imported; the message says what to install."""


def opencv() -> ModuleType:
    """The ``cv2`` module, or OpenCVUnavailable naming what to install."""
    try:
        import cv2
    except ModuleNotFoundError as err:
        if err.name != "cv2":  # installed, but a library it needs is missing
            raise OpenCVUnavailable(f"OpenCV is installed but cannot be imported ({err}); {INSTALL_HINT}") from None
        raise OpenCVUnavailable(f"OpenCV is not installed: {INSTALL_HINT}") from None
    except ImportError as err:  # e.g. libGL.so.1 of a non-headless wheel
        raise OpenCVUnavailable(f"OpenCV is installed but cannot be imported ({err}); {INSTALL_HINT}") from None
    return cv2


def opencv_problem() -> str:
    """Why OpenCV cannot be used here, or "" when it can."""
    try:
        opencv()
    except OpenCVUnavailable as err:
        return str(err)
    return ""
