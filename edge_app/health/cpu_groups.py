"""CPU time of the appliance's threads and child processes, by what they do.

Where a device's cores go is the first question when it cannot keep up: the capture threads,
the pipeline's stages and result lanes, the MQTT client, or the decoder, engine and tracker
processes. Linux gives every thread's CPU in ``/proc/self/task/<tid>/stat`` and every child's
in ``/proc/<pid>/stat``; the group is the thread's name (``pipeline:lane0`` -> ``lane0``,
``capture:front`` -> ``capture``) or the ``multiprocessing`` child's (``decode:front`` ->
``decoders``). Threads Python did not start (ONNX Runtime's and OpenCV's pools, FFmpeg's
decoders) and threads that ended are ``native``: the process total less the named threads.

This is the one place these rules live: ``GET /metrics`` reads it at scrape time
(``edge_app_cpu_seconds_total``), and the benchmarks read it over their windows. Reading
costs a file per thread (about 150 in a busy appliance), so nothing on the frame path calls it.
"""
from __future__ import annotations

import multiprocessing
import os
import resource
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

from edge_app.detect.tensorrt.engine_process import PROCESS_NAME as ENGINE_PROCESS_NAME
from edge_app.track.tracker_host import PROCESS_NAME as TRACKER_PROCESS_NAME

#: the group of CPU that no named thread accounts for
NATIVE = "native"


def stat_cpu_s(stat: Path) -> Optional[float]:
    """User + system CPU seconds from a /proc ``stat`` file; None when it is gone (ended)."""
    try:
        text = stat.read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _present(times: Dict[int, Optional[float]]) -> Dict[int, float]:
    return {key: value for key, value in times.items() if value is not None}


def thread_cpu_s() -> Dict[int, float]:
    """CPU seconds (user + system) of every thread of this process, by native thread id."""
    return _present({int(task.name): stat_cpu_s(task / "stat") for task in Path("/proc/self/task").iterdir()})


def children_cpu_s(children: Optional[List[Any]] = None) -> Dict[int, float]:
    """CPU seconds (user + system) of each live ``multiprocessing`` child (or of ``children``), by pid."""
    live = multiprocessing.active_children() if children is None else children
    return _present({int(child.pid): stat_cpu_s(Path(f"/proc/{child.pid}/stat")) for child in live})


def child_group(name: str) -> str:
    """The group of a ``multiprocessing`` child's name."""
    if name.startswith(TRACKER_PROCESS_NAME):
        return "trackers"
    return "engine" if name == ENGINE_PROCESS_NAME else "decoders"


def thread_group(name: str) -> str:
    """The group of a Python thread's name."""
    if name.startswith("pipeline:"):
        return name.rsplit(":", 1)[1]  # pipeline:lane0 and pipeline:<model>:lane0 alike
    if name.startswith("capture"):
        return "capture"
    if name.startswith(("mqtt", "paho")):
        return "mqtt"
    if name == "MainThread":
        return "main"
    return "other"


def process_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@dataclass(frozen=True)
class CpuReading:
    """CPU seconds so far of this process, each of its threads (by native id) and each live
    ``multiprocessing`` child (by pid), read at one moment."""

    process_s: float
    threads: Dict[int, float]
    children: Dict[int, float]
    child_names: Dict[int, str] = field(default_factory=dict)  # by pid, as they were when read


#: the reading before anything ran: figures since it are totals
START = CpuReading(0.0, {}, {})


def read_cpu() -> CpuReading:
    threads = thread_cpu_s()  # before the process total: the rest of it is native
    process_s = process_cpu_s()
    children = multiprocessing.active_children()  # once: the times and the names of the same children
    return CpuReading(process_s, threads, children_cpu_s(children), {child.pid: child.name for child in children})


def thread_groups(since: CpuReading, now: CpuReading) -> Dict[str, float]:
    """CPU seconds of this process's threads between two readings by group, ``native`` included."""
    names = {thread.native_id: thread.name for thread in threading.enumerate() if thread.native_id is not None}
    groups: Dict[str, float] = {}
    for tid, seconds in now.threads.items():
        if tid in names:
            group = thread_group(names[tid])
            groups[group] = groups.get(group, 0.0) + max(0.0, seconds - since.threads.get(tid, 0.0))
    groups[NATIVE] = max(0.0, now.process_s - since.process_s - sum(groups.values()))
    return groups


def child_groups(since: CpuReading, now: CpuReading) -> Dict[str, float]:
    """CPU seconds of the live children between two readings by group (those that used some)."""
    groups: Dict[str, float] = {}
    for pid, seconds in now.children.items():
        child_s = max(0.0, seconds - since.children.get(pid, 0.0))
        if child_s > 0:
            group = child_group(now.child_names.get(pid, ""))
            groups[group] = groups.get(group, 0.0) + child_s
    return groups


def cpu_by_group(since: CpuReading = START) -> Dict[str, float]:
    """CPU seconds of each group since ``since`` (by default: so far), threads and children. A
    total falls when its threads or processes end (a camera removed, a child started again), as
    a restarted process's counters do."""
    now = read_cpu()
    return {**thread_groups(since, now), **child_groups(since, now)}
