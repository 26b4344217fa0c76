"""Each model's TensorRT engine build progress, for ``status.models[].engine_build``.

Every model loads on its own thread, so two models may build engines at once (two changes, or a
reload beside a change): each has its own ``BuildStatus``, and one build never replaces another's
progress. ``status.engine_build`` (one value, from before there were several models) is chosen
from them by ``EngineBuilds.latest``.
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Dict, Iterable, Optional

from edge_app.reporting.protocol import EngineBuildReport

if TYPE_CHECKING:
    from edge_app.detect.tensorrt.progress import BuildStatus


class EngineBuilds:
    """The latest engine build of each model by name, in the order the builds started."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._builds: Dict[str, "BuildStatus"] = {}

    def start(self, name: str) -> "BuildStatus":
        """A new build of the model ``name``: the progress sink to hand to the TensorRT backend."""
        # Imported here: the TensorRT backend's package is loaded only where a TensorRT model is.
        from edge_app.detect.tensorrt.progress import BuildStatus

        status = BuildStatus()
        with self._lock:
            self._builds.pop(name, None)  # re-inserted last: the order is the order the builds started
            self._builds[name] = status
        return status

    def report(self, name: str) -> Optional[EngineBuildReport]:
        """The model's latest build as its last progress report said, or None before any."""
        with self._lock:
            status = self._builds.get(name)
        snapshot = status.snapshot() if status is not None else None
        return EngineBuildReport(**snapshot) if snapshot is not None else None

    def latest(self, names: Iterable[str]) -> Optional[Dict[str, Any]]:
        """``status.engine_build``: of the models ``names`` (those configured), the build started
        last among those still building, else the build started last; None before any build."""
        wanted = set(names)
        with self._lock:
            statuses = [status for name, status in self._builds.items() if name in wanted]
        snapshots = [snapshot for snapshot in (status.snapshot() for status in reversed(statuses)) if snapshot]
        building = [snapshot for snapshot in snapshots if snapshot["state"] == "building"]
        return (building or snapshots or [None])[0]
