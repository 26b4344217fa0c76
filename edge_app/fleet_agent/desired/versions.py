"""What the appliance remembers of the fleet's desired configurations across restarts.

One small JSON file next to the configuration file (``config.yaml`` -> ``config.desired.json``):
the last desired version acted on, the outcome reported for it, and the fleet epochs it follows
and refuses (``edge_app.fleet_agent.desired.epoch``). The configuration folder is
the one the service may write (systemd's ``/etc/edge-app``), and keeping the version beside the
configuration it produced means a restored backup of the folder restores both together.
Written to a temporary file, flushed and renamed, so a crash leaves the old or the new state.
"""
from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from edge_app.config.file import Problem
from edge_app.fleet_agent.desired.epoch import EpochState, reset as reset_epochs
from edge_app.mqtt.payloads import config_reported_payload
from edge_app.process.atomic_file import write_atomic

log = logging.getLogger(__name__)

APPLIED, REJECTED = "applied", "rejected"


@dataclass(frozen=True)
class ConfigReport:
    """The outcome of one desired version, as published on ``R/config/reported``."""

    version: Optional[int]
    status: str  # APPLIED or REJECTED
    errors: Tuple[Problem, ...] = ()
    ts: float = field(default=0.0)

    def to_payload(self) -> Dict[str, Any]:
        return config_reported_payload(self.version, self.status, [p.as_dict() for p in self.errors], self.ts)

    @classmethod
    def from_payload(cls, data: Dict[str, Any]) -> "ConfigReport":
        errors = tuple(Problem(str(e["loc"]), str(e["msg"])) for e in data.get("errors") or ())
        return cls(int(data["version"]), str(data["status"]), errors, float(data["ts"]))


def state_path_for(config_path: Path) -> Path:
    return Path(config_path).with_suffix(".desired.json")


class DesiredVersionStore:
    """Loads and saves ``{"version": N, "reported": {...}, "epoch": ..., "issued_at_ms": ..., ...}``."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def load(self) -> Tuple[int, Optional[ConfigReport], EpochState]:
        """(last version acted on, its outcome, the epochs); (0, None, no epoch) when there is none yet."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            version = data["version"]
            if isinstance(version, bool) or not isinstance(version, int) or version < 0:
                raise ValueError(f"version {version!r} is not a count")
            reported = data.get("reported")
            return version, (ConfigReport.from_payload(reported) if reported else None), EpochState.from_dict(data)
        except FileNotFoundError:
            return 0, None, EpochState()
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
            # Starting from 0 re-applies at most the retained (latest) desired patch, which
            # leaves a configuration already carrying it unchanged.
            log.error("%s is unreadable (%s); acting on the next desired configuration as if new", self.path, err)
            return 0, None, EpochState()

    def reset(self, now_ms: Optional[int] = None) -> Optional[int]:
        """``edge-app fleet-reset``: forget the version, retire the epoch followed; the version it held (None: none).

        The next desired configuration issued after now is then acted on as the first one,
        whatever its epoch and version: the way back after the fleet service started over with
        a new database, or after a version was pinned too high. Nothing of the retired epoch and
        nothing issued before the reset is acted on again (``edge_app.fleet_agent.desired.epoch``).
        """
        version, _, epochs = self.load()
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        self._write({"version": 0, **reset_epochs(epochs, now_ms).to_dict()})
        return version or None

    def save(self, version: int, report: ConfigReport, epochs: EpochState = EpochState()) -> None:
        self._write({"version": version, "reported": report.to_payload(), **epochs.to_dict()})

    def _write(self, data: Dict[str, Any]) -> None:
        write_atomic(self.path, json.dumps(data, indent=1).encode("utf-8"))
