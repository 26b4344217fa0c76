"""The ``R/cameras/<id>/detect/set`` switch: analysis of one camera on or off.

A command is a configuration change (``cameras[].detect``, saved to the file) made through the
one change path (``ConfigChanges``, origin ``DETECT_SWITCH``), so the switch, the config API and
the file never disagree, and a PATCH being validated meanwhile cannot undo it; ``detect/state``
follows, retained.

Anyone on the broker may send these, as fast as they like. So paho's network thread only notes
the latest wish per camera, and one worker (``mqtt:detect-switch``) applies what is wished, every
camera in one change, at most once every ``min_interval_s``: a flood costs one thread and about
one file write a second, and the last command sent is the one that holds.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Dict

from edge_app.config.schema import AppConfig
from edge_app.config.file import redacted_dict
from edge_app.config_change.changes import ConfigChanges, ConfigRefused, Origin
from edge_app.process.worker import WorkerThread

log = logging.getLogger(__name__)

#: a flood of commands changes the configuration (and writes the file) at most this often
MIN_INTERVAL_S = 1.0


class _Unchanged(Exception):
    """Every camera is as wished already: nothing to save."""


class DetectSwitch:
    def __init__(self, changes: ConfigChanges, publish_state: Callable[[str, bool], Any],
                 *, min_interval_s: float = MIN_INTERVAL_S) -> None:
        self._changes = changes
        self._publish_state = publish_state
        self._min_interval_s = min_interval_s
        self._cond = threading.Condition()
        self._wanted: Dict[str, bool] = {}  # camera id -> the latest command; at most one per camera
        self._next_apply_mono_s = 0.0
        self._busy = False
        self._worker = WorkerThread(self._run, "mqtt:detect-switch", wake=self._notify)

    def start(self) -> "DetectSwitch":
        self._worker.start()
        return self

    def stop(self, timeout_s: float = 2.0) -> None:
        self._worker.stop(timeout_s)

    def _notify(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def on_command(self, camera_id: str, enabled: bool) -> None:
        """Note a command (called on paho's network thread, which must not wait for a change)."""
        with self._cond:
            self._wanted[camera_id] = enabled
            self._cond.notify_all()

    def wait_idle(self, timeout_s: float) -> bool:
        """True once no command waits and none is being applied."""
        with self._cond:
            return self._cond.wait_for(lambda: not (self._wanted or self._busy), timeout_s)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._worker.stopping.is_set() and (not self._wanted or time.monotonic() < self._next_apply_mono_s):
                    self._cond.wait(max(0.0, self._next_apply_mono_s - time.monotonic()) if self._wanted else None)
                if self._worker.stopping.is_set():
                    return
                wanted, self._wanted = self._wanted, {}
                self._busy = True
            try:
                self.apply(wanted)
            except Exception:  # the switch must outlive any one change
                log.exception("switching detection failed")
            finally:
                with self._cond:
                    self._busy = False
                    self._next_apply_mono_s = time.monotonic() + self._min_interval_s
                    self._cond.notify_all()

    def apply(self, wanted: Dict[str, bool]) -> None:
        """Switch every camera of ``wanted`` (camera id -> on) in one configuration change."""
        switched: Dict[str, bool] = {}
        known: Dict[str, bool] = {}

        def build(current: AppConfig) -> Dict[str, Any]:
            # Built from the view a client sees, like the camera routes: masked secrets are restored.
            data = redacted_dict(current)
            for camera in data["cameras"]:
                want = wanted.get(camera["id"])
                if want is None:
                    continue
                known[camera["id"]] = want
                if camera["detect"] != want:
                    camera["detect"] = switched[camera["id"]] = want
            if not switched:
                raise _Unchanged()
            return data

        try:
            self._changes.write(build, Origin.DETECT_SWITCH)
        except _Unchanged:
            for camera_id, enabled in known.items():
                self._publish_state(camera_id, enabled)  # a switch that sent ON while ON waits for this
            return
        except ConfigRefused as err:
            log.warning("switching detection over MQTT refused: %s", err.summary())
            return
        for camera_id, enabled in switched.items():
            log.info("camera %s: detection switched %s over MQTT", camera_id, "on" if enabled else "off")
