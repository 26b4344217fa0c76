"""Engine build progress: TensorRT 10's progress monitor -> a terminal bar and a status callback.

A build takes minutes on a Jetson; users took a silent one for a hang. TensorRT 10 reports
nested phases with step counts through ``trt.IProgressMonitor``; they are folded into one
overall fraction. TensorRT 8.x has no monitor, so there only the elapsed time is reported,
from a heartbeat thread.
"""
from __future__ import annotations

import logging
import sys
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable, Dict, List, Optional, TextIO

from edge_app.process.worker import WorkerThread

log = logging.getLogger(__name__)

HEARTBEAT_S = 2.0
_BAR_WIDTH = 30
_REDRAW_S = 0.1


@dataclass(frozen=True)
class BuildProgress:
    """One report: ``fraction`` is 0..1, or None when TensorRT does not say (8.x)."""

    model: str
    state: str  # "building", "done" or "failed"
    phase: str
    fraction: Optional[float]
    elapsed_s: float

    def as_dict(self) -> Dict[str, Any]:
        data = asdict(self)
        data["percent"] = None if self.fraction is None else round(100.0 * self.fraction, 1)
        data["elapsed_s"] = round(self.elapsed_s, 1)
        return data


ProgressCallback = Callable[[BuildProgress], None]


class BuildStatus:
    """Keeps the latest report for ``/api/v1/status`` (call it as a ProgressCallback)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._latest: Optional[BuildProgress] = None

    def __call__(self, progress: BuildProgress) -> None:
        with self._lock:
            self._latest = progress

    def snapshot(self) -> Optional[Dict[str, Any]]:
        with self._lock:
            return None if self._latest is None else self._latest.as_dict()


@dataclass
class _Phase:
    name: str
    parent: Optional[str]
    steps: int
    done: int = 0


class PhaseTracker:
    """Folds nested phases into an overall fraction: a phase counts its finished steps plus the
    fraction of its running child phase, so the bar moves smoothly and never goes backwards within
    a top-level phase."""

    def __init__(self) -> None:
        self._phases: Dict[str, _Phase] = {}
        self._order: List[str] = []
        self._high: Dict[str, float] = {}  # best fraction reported per top-level phase

    def start(self, name: str, parent: Optional[str], steps: int) -> None:
        self._phases[name] = _Phase(name, parent, max(int(steps), 1))
        self._order.append(name)

    def step(self, name: str, step: int) -> None:
        phase = self._phases.get(name)
        if phase is not None:
            phase.done = max(phase.done, min(int(step) + 1, phase.steps))

    def finish(self, name: str) -> None:
        phase = self._phases.pop(name, None)
        if phase is not None and phase.parent is None:
            self._high.pop(name, None)
        if name in self._order:
            self._order.remove(name)

    def _fraction_of(self, phase: _Phase) -> float:
        children = [self._phases[n] for n in self._order if self._phases[n].parent == phase.name]
        partial = self._fraction_of(children[-1]) if children and phase.done < phase.steps else 0.0
        return min(1.0, (phase.done + partial) / phase.steps)

    def current(self) -> Optional[tuple]:
        """(phase description, overall fraction) or None when no phase is running."""
        roots = [self._phases[n] for n in self._order if self._phases[n].parent not in self._phases]
        if not roots:
            return None
        root = roots[-1]
        leaf = root
        while True:
            children = [self._phases[n] for n in self._order if self._phases[n].parent == leaf.name]
            if not children:
                break
            leaf = children[-1]
        label = root.name if leaf is root else f"{root.name}: {leaf.name}"
        # a child phase finishing before its parent's step is counted must not move the bar back
        fraction = max(self._high.get(root.name, 0.0), self._fraction_of(root))
        self._high[root.name] = fraction
        return label, fraction


class TerminalProgress:
    """A one-line bar on a terminal; on a pipe or log file, a line every 10 %."""

    def __init__(self, stream: Optional[TextIO] = None) -> None:
        self._stream = stream or sys.stderr
        self._tty = bool(getattr(self._stream, "isatty", lambda: False)())
        self._last_draw_s = 0.0
        self._last_decile = -1

    def __call__(self, progress: BuildProgress) -> None:
        minutes, seconds = divmod(int(progress.elapsed_s), 60)
        elapsed = f"{minutes}m{seconds:02d}s"
        if progress.state != "building":
            text = "engine ready" if progress.state == "done" else "engine build failed"
            self._write(f"{text} after {elapsed}", final=True)
            return
        if progress.fraction is None:
            line = f"building TensorRT engine ({progress.phase}) {elapsed}"
            decile = int(progress.elapsed_s // 30)  # a line every 30 s when nothing else is known
        else:
            filled = int(round(progress.fraction * _BAR_WIDTH))
            bar = "#" * filled + "-" * (_BAR_WIDTH - filled)
            line = f"[{bar}] {100 * progress.fraction:5.1f}%  {elapsed}  {progress.phase}"
            decile = int(progress.fraction * 10)
        if self._tty:
            now_s = time.monotonic()
            if now_s - self._last_draw_s >= _REDRAW_S:
                self._last_draw_s = now_s
                self._write(line[:118])
        elif decile != self._last_decile:
            self._last_decile = decile
            self._write(line, final=True)

    def _write(self, text: str, final: bool = False) -> None:
        if self._tty:
            self._stream.write("\r\x1b[K" + text + ("\n" if final else ""))
        else:
            self._stream.write(text + "\n")
        self._stream.flush()


class BuildReporter:
    """Collects progress from TensorRT (or a heartbeat) and sends it to every sink.

    ``cancel()`` makes the next ``step_complete`` ask TensorRT to stop the build.
    """

    def __init__(self, model: str, sinks: List[ProgressCallback], cancel: Optional[threading.Event] = None) -> None:
        self.model = model
        self._sinks = [s for s in sinks if s is not None]
        self._tracker = PhaseTracker()
        self._lock = threading.Lock()
        self._start_s = time.monotonic()
        self._cancel = cancel if cancel is not None else threading.Event()
        self._heartbeat = WorkerThread(self._beat, "trt-build-heartbeat")

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def cancel(self) -> None:
        self._cancel.set()

    def _emit(self, state: str, phase: str, fraction: Optional[float]) -> None:
        report = BuildProgress(self.model, state, phase, fraction, time.monotonic() - self._start_s)
        for sink in self._sinks:
            try:
                sink(report)
            except Exception:  # a broken display must not break the build
                log.debug("progress sink failed", exc_info=True)

    def _emit_current(self) -> None:
        current = self._tracker.current()
        if current is not None:
            self._emit("building", current[0], current[1])

    # called by the IProgressMonitor, possibly from several TensorRT threads
    def phase_start(self, name: str, parent: Optional[str], steps: int) -> None:
        with self._lock:
            self._tracker.start(name, parent, steps)
            self._emit_current()

    def step_complete(self, name: str, step: int) -> bool:
        with self._lock:
            self._tracker.step(name, step)
            self._emit_current()
        return not self._cancel.is_set()

    def phase_finish(self, name: str) -> None:
        with self._lock:
            self._tracker.finish(name)
            self._emit_current()

    def start(self, monitored: bool) -> None:
        self._emit("building", "starting", 0.0 if monitored else None)
        if not monitored:
            self._heartbeat.start()

    def _beat(self) -> None:
        while not self._heartbeat.stopping.wait(HEARTBEAT_S):
            self._emit("building", "TensorRT 8.x reports no progress", None)

    def finish(self, ok: bool) -> None:
        self._heartbeat.stop(1.0)
        self._emit("done" if ok else "failed", "done" if ok else "failed", 1.0 if ok else None)


def make_progress_monitor(trt: Any, reporter: BuildReporter) -> Optional[Any]:
    """A trt.IProgressMonitor feeding ``reporter``, or None on TensorRT without one (8.x)."""
    base = getattr(trt, "IProgressMonitor", None)
    if base is None:
        return None

    class _Monitor(base):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            base.__init__(self)

        def phase_start(self, phase_name, parent_phase, num_steps) -> None:
            reporter.phase_start(phase_name, parent_phase, num_steps)

        def step_complete(self, phase_name, step) -> bool:
            return reporter.step_complete(phase_name, step)

        def phase_finish(self, phase_name) -> None:
            reporter.phase_finish(phase_name)

    return _Monitor()
