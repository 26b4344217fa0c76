"""``edge-app run`` after the API is up: load the model, tell systemd, wait, stop within 5 s.

The main thread owns the loop: it waits for a stop signal in short steps (``StopSignals``),
sends the systemd notifications (READY once the model is loaded and the API listens,
WATCHDOG only while neither the pipeline nor the MQTT link is stalled, STATUS, EXTEND_TIMEOUT while a TensorRT
engine builds) and runs the stop. The model loads on a thread of its own, so that a signal
during a build of several minutes cancels the build instead of waiting for it.
"""
from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from typing import Any, Callable, Optional

from edge_app.reporting.protocol import StatusReport
from edge_app.process.shutdown import EXIT_FAILURE, EXIT_OK, STOP_BUDGET_S, StopSignals
from edge_app.process.systemd import SystemdNotifier, watchdog_interval_s

log = logging.getLogger(__name__)

TICK_S = 0.25
STATUS_EVERY_S = 5.0
#: start-up time asked of systemd at a time while an engine builds (TimeoutStartSec covers the rest)
BUILD_EXTENSION_S = 60.0
EXTEND_EVERY_S = 20.0


def status_line(status: StatusReport) -> str:
    """One line for ``systemctl status``: fps, camera states, device health problems, paused recording,
    and a stall if there is one."""
    pipeline = status.pipeline
    cameras = ", ".join(f"{c.id} {c.state}" for c in status.cameras) or "none"
    line = f"{pipeline.fps:.1f} fps; cameras: {cameras}"
    problems = status.health.problems if status.health is not None else []
    if problems:
        line = f"PROBLEMS: {'; '.join(p.message for p in problems)}; {line}"
    if status.mqtt.behind_reason:
        line = f"MQTT BEHIND ({status.mqtt.behind_reason}); {line}"
    if status.recording is not None and status.recording.paused:
        line = f"RECORDING PAUSED ({status.recording.paused}); {line}"
    if status.mqtt.stalled:
        line = f"MQTT STALLED ({status.mqtt.stall_reason}); {line}"
    if pipeline.stalled:
        line = f"STALLED ({pipeline.stall_reason}); {line}"
    return line


class Supervisor:
    """Runs ``appliance`` (an ``edge_app.appliance.appliance.Appliance``) behind an already started API server."""

    def __init__(self, appliance: Any, server: Any, signals: StopSignals, notifier: SystemdNotifier,
                 watchdog_s: Optional[float] = None, clock: Callable[[], float] = time.monotonic):
        self._appliance = appliance
        self._server = server
        self._signals = signals
        self._notifier = notifier
        self._watchdog_s = watchdog_s if watchdog_s is not None else watchdog_interval_s(os.environ, os.getpid())
        self._clock = clock
        self._load_error: Optional[BaseException] = None
        self._loader: Optional[threading.Thread] = None
        self._stop_requested = threading.Event()

    def request_stop(self) -> None:
        """Stop from inside the process (any thread); the main loop notices within TICK_S."""
        self._stop_requested.set()

    def _wait(self, timeout_s: float) -> Optional[int]:
        signum = self._signals.wait(timeout_s)
        if signum is None and self._stop_requested.is_set():
            return 0
        return signum

    # -- start-up ---------------------------------------------------------------------------------
    def _load(self) -> None:
        try:
            self._appliance.start()
        except BaseException as err:  # reported by the main thread
            self._load_error = err

    def _start(self) -> Optional[int]:
        """Run ``appliance.start()`` on a thread; a signal meanwhile is returned (else None)."""
        self._loader = threading.Thread(target=self._load, name="model-loader", daemon=True)
        self._loader.start()
        last_extend_s = None
        while self._loader.is_alive():
            signum = self._wait(TICK_S)
            if signum is not None:
                return signum
            build = self._appliance.reads.engine_build()
            now_s = self._clock()
            if build and build.get("state") == "building" and (last_extend_s is None or now_s - last_extend_s >= EXTEND_EVERY_S):
                last_extend_s = now_s
                percent = build.get("percent")
                progress = f" {percent:.0f}%" if isinstance(percent, (int, float)) else ""
                self._notifier.extend_timeout(BUILD_EXTENSION_S, f"building the TensorRT engine{progress}")
        return None

    # -- running ----------------------------------------------------------------------------------
    def run(self) -> int:
        signum = self._start()
        if signum is None and self._load_error is not None:
            return self._fail_start(self._load_error)
        if signum is None:
            log.info("edge-app running with %d camera(s)", len(self._appliance.current_config().cameras))
            self._notifier.ready(self._status_text())
            signum = self._serve()
        return self._stop(signum)

    def _serve(self) -> int:
        next_ping_s = next_status_s = self._clock()
        was_stalled = False
        while True:
            now_s = self._clock()
            if self._watchdog_s is not None and now_s >= next_ping_s:
                stall = self._stall()
                if stall:
                    if not was_stalled:
                        log.error("%s: no more watchdog pings, systemd will restart the service", stall)
                        next_status_s = now_s
                else:
                    self._notifier.watchdog()
                was_stalled = bool(stall)
                next_ping_s = now_s + self._watchdog_s
            if self._notifier.enabled and now_s >= next_status_s:
                self._notifier.status(self._status_text())
                next_status_s = now_s + STATUS_EVERY_S
            waits = [TICK_S, next_status_s - now_s if self._notifier.enabled else TICK_S]
            if self._watchdog_s is not None:
                waits.append(next_ping_s - now_s)
            signum = self._wait(max(0.01, min(waits)))
            if signum is not None:
                return signum

    def _stall(self) -> Optional[str]:
        """Why the service should be restarted (a stalled pipeline or MQTT link), or None."""
        health = self._appliance.reads.pipeline_health()
        if health.stalled:
            return f"the pipeline is stalled ({health.reason})"
        mqtt = self._appliance.reads.mqtt_health()
        if mqtt.stalled:
            return f"the MQTT link is stalled ({mqtt.reason})"
        return None

    def _status_text(self) -> str:
        try:
            return status_line(self._appliance.reads.status())
        except Exception:  # a status line must never stop the service
            log.debug("building the status line failed", exc_info=True)
            return "running"

    # -- stopping ---------------------------------------------------------------------------------
    def _stop(self, signum: Optional[int]) -> int:
        deadline_s = self._clock() + STOP_BUDGET_S
        if signum:
            log.info("received %s, shutting down", signal.Signals(signum).name)
        else:
            log.info("shutting down")
        # A second signal, or a stop overrunning its budget, ends the process at once.
        self._signals.stopping(signum or None, time.monotonic() + STOP_BUDGET_S + 0.3)
        self._notifier.stopping()
        self._appliance.cancel_start()
        if self._loader is not None and self._loader.is_alive():
            self._loader.join(min(1.5, max(0.0, deadline_s - self._clock() - 2.5)))
            if self._loader.is_alive():
                log.warning("the model is still loading; stopping without waiting for it")
            elif self._load_error is not None:
                log.info("start-up ended early: %s", self._load_error)
        if self._server is not None:
            self._server.stop(timeout_s=min(1.0, max(0.1, deadline_s - self._clock() - 2.0)))
        self._appliance.stop(timeout_s=max(0.5, deadline_s - self._clock() - 0.2))
        log.info("edge-app stopped")
        return EXIT_OK

    def _fail_start(self, err: BaseException) -> int:
        from edge_app.detect.base import DetectorError

        if isinstance(err, DetectorError):
            print(f"edge-app: {err}", file=sys.stderr)
        else:
            log.error("starting the appliance failed", exc_info=err)
            print(f"edge-app: starting the appliance failed: {type(err).__name__}: {err}", file=sys.stderr)
        self._notifier.stopping("start-up failed")
        if self._server is not None:
            self._server.stop(timeout_s=1.0)
        self._appliance.stop(timeout_s=2.0)
        return EXIT_FAILURE
