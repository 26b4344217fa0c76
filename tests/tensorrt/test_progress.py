"""Build progress: nested phases folded into one fraction, and the terminal display."""
from __future__ import annotations

import io

from edge_app.detect.tensorrt.progress import BuildProgress, BuildReporter, PhaseTracker, TerminalProgress


def test_nested_phases_fold_into_a_fraction():
    tracker = PhaseTracker()
    tracker.start("Building engine", None, 4)
    assert tracker.current() == ("Building engine", 0.0)
    tracker.step("Building engine", 0)
    tracker.start("Tactic selection", "Building engine", 10)
    for step in range(5):
        tracker.step("Tactic selection", step)
    label, fraction = tracker.current()
    assert label == "Building engine: Tactic selection"
    assert fraction == (1 + 0.5) / 4
    tracker.finish("Tactic selection")
    assert tracker.current()[1] == (1 + 0.5) / 4  # never backwards before the parent step lands
    tracker.step("Building engine", 1)
    assert tracker.current()[1] == 2 / 4
    tracker.finish("Building engine")
    assert tracker.current() is None


class _Tty(io.StringIO):
    def isatty(self):
        return True


def _report(fraction, state="building", elapsed=75.0):
    return BuildProgress("m.onnx", state, "Building engine", fraction, elapsed)


def test_terminal_bar_on_a_tty_redraws_one_line():
    out = _Tty()
    bar = TerminalProgress(out)
    bar(_report(0.42))
    bar(_report(1.0, state="done"))
    text = out.getvalue()
    assert text.startswith("\r\x1b[K[") and " 42.0%  1m15s  Building engine" in text
    assert text.endswith("engine ready after 1m15s\n")


def test_terminal_output_on_a_pipe_is_one_line_per_tenth():
    out = io.StringIO()
    bar = TerminalProgress(out)
    for i in range(101):
        bar(_report(i / 100))
    lines = out.getvalue().splitlines()
    assert len(lines) == 11 and "\r" not in out.getvalue()


def test_unknown_progress_shows_elapsed_time():
    out = io.StringIO()
    TerminalProgress(out)(BuildProgress("m", "building", "TensorRT 8.x reports no progress", None, 5.0))
    assert "building TensorRT engine (TensorRT 8.x reports no progress) 0m05s" in out.getvalue()


def test_reporter_survives_a_broken_sink_and_can_cancel():
    seen = []

    def broken(_):
        raise RuntimeError("display went away")

    reporter = BuildReporter("m.onnx", [broken, seen.append])
    reporter.start(monitored=True)
    reporter.phase_start("Building engine", None, 2)
    assert reporter.step_complete("Building engine", 0) is True
    reporter.cancel()
    assert reporter.step_complete("Building engine", 1) is False
    reporter.finish(False)
    assert [r.state for r in seen][-1] == "failed"
    assert seen[-2].fraction == 1.0
