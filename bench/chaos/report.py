"""Settings and result of the chaos soak (``bench/chaos/soak.py``), with its goals and its table."""
from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from bench.chaos.probes import BurstResult, ProcessSample
from bench.common.provenance import Provenance, write_results

FULL_MINUTES = 30.0


@dataclass(frozen=True)
class ChaosSettings:
    """Timings of one soak. ``minutes`` is the disturbed phase; warm-up, settle and the final
    accounting come on top. ``for_minutes`` scales the periods of the 30-minute soak down for a
    short run, keeping at least one of each disturbance."""

    minutes: float = FULL_MINUTES
    cameras: int = 4
    model_path: str = ""
    camera_cycle_s: float = 120.0  # each RTSP server is killed once per cycle, staggered
    camera_down_s: float = 10.0
    broker_cycle_s: float = 180.0
    broker_down_s: float = 3.0
    storm_every_s: float = 300.0
    storm_patches: int = 40
    slowloris_every_s: float = 420.0
    slowloris_sockets: int = 32
    slowloris_s: float = 15.0
    warmup_s: float = 60.0
    settle_s: float = 60.0
    fps_limit: float = 2.0  # per camera: keeps the soak's CPU use modest on a small machine
    clip_size: Tuple[int, int] = (640, 480)  # width, height of the cameras' clips
    sample_every_s: float = 5.0
    recovery_goal_s: float = 10.0
    rss_growth_goal_mb: float = 30.0

    @classmethod
    def for_minutes(cls, minutes: float, **overrides: Any) -> "ChaosSettings":
        scale = min(1.0, minutes / FULL_MINUTES)
        short = minutes < FULL_MINUTES
        values: Dict[str, Any] = dict(
            minutes=minutes,
            camera_cycle_s=max(40.0, 120.0 * scale),
            broker_cycle_s=max(45.0, 180.0 * scale),
            storm_every_s=max(50.0, 300.0 * scale),
            slowloris_every_s=max(60.0, 420.0 * scale),
            warmup_s=20.0 if short else 60.0,
            settle_s=20.0 if short else 60.0,
        )
        values.update(overrides)
        return cls(**values)

    @property
    def chaos_s(self) -> float:
        return self.minutes * 60.0


@dataclass
class CameraOutage:
    camera_id: str
    killed_s: float  # since the start of the disturbed phase
    back_s: float  # the server listens again
    back_wall_s: float
    next_kill_s: Optional[float]  # the same server's next kill, if any
    recovery_s: Optional[float] = None  # first analysed frame captured after back, minus back


@dataclass(frozen=True)
class Goal:
    name: str
    measured: str
    goal: str
    met: bool


@dataclass
class ChaosReport:
    settings: ChaosSettings
    started_utc: str
    chaos_s: float = 0.0
    crashes: int = 0  # the appliance's process exited on its own
    crash_detail: Optional[str] = None
    exit_code_on_sigterm: Optional[int] = None
    analysed: Dict[str, int] = field(default_factory=dict)  # appliance: frames analysed = messages queued
    received_unique: Dict[str, int] = field(default_factory=dict)
    received_total: int = 0
    mqtt_dropped: Optional[int] = None  # appliance: messages dropped from its offline queue
    broker_restarts: int = 0
    outages: List[CameraOutage] = field(default_factory=list)
    bursts: List[BurstResult] = field(default_factory=list)
    baseline: Optional[ProcessSample] = None
    end: Optional[ProcessSample] = None
    rss_max_mb: float = 0.0
    fds_added: List[str] = field(default_factory=list)  # descriptors at the end, not at baseline
    fds_removed: List[str] = field(default_factory=list)
    log_errors: int = 0
    log_tracebacks: int = 0
    samples: List[ProcessSample] = field(default_factory=list)

    # ---------------------------------------------------------------- figures
    @property
    def missing(self) -> Optional[int]:
        """Detections the appliance analysed and queued that never reached the subscriber."""
        if not self.analysed:
            return None
        return sum(max(0, n - self.received_unique.get(cid, 0)) for cid, n in self.analysed.items())

    @property
    def duplicates(self) -> int:
        return self.received_total - sum(self.received_unique.values())

    @property
    def recoveries_s(self) -> List[Optional[float]]:
        return [o.recovery_s for o in self.outages]

    @property
    def worst_recovery_s(self) -> Optional[float]:
        known = [r for r in self.recoveries_s if r is not None]
        if not known or len(known) < len(self.outages):
            return None
        return max(known)

    # ------------------------------------------------------------------ goals
    def goals(self) -> List[Goal]:
        s = self.settings
        goals = [Goal("crashes (process exit)", str(self.crashes), "0", self.crashes == 0)]
        missing = self.missing
        goals.append(Goal(
            "detections queued by the appliance that never arrived",
            "–" if missing is None else f"{missing} of {sum(self.analysed.values())} "
            f"(+{self.mqtt_dropped} dropped from the queue, {self.duplicates} duplicates)",
            "0", missing == 0 and self.mqtt_dropped == 0))
        if self.baseline and self.end:
            growth_mb = round(self.end.rss_mb - self.baseline.rss_mb, 1)
            goals.append(Goal("RSS growth after warm-up, MB",
                              f"{growth_mb:+.1f} ({self.baseline.rss_mb:.0f} → {self.end.rss_mb:.0f}, max {self.rss_max_mb:.0f})",
                              f"< {s.rss_growth_goal_mb:g}", growth_mb < s.rss_growth_goal_mb))
            goals.append(Goal("threads at the end / baseline", f"{self.end.threads} / {self.baseline.threads}",
                              "≤ baseline", self.end.threads <= self.baseline.threads))
            goals.append(Goal("open descriptors at the end / baseline", f"{self.end.fds} / {self.baseline.fds}",
                              "≤ baseline", self.end.fds <= self.baseline.fds))
        else:
            goals.append(Goal("process samples", "missing", "baseline and end", False))
        recoveries = self.recoveries_s
        known = [r for r in recoveries if r is not None]
        worst = self.worst_recovery_s
        goals.append(Goal(
            f"camera streaming again after its server is back, s ({len(recoveries)} restarts)",
            (f"worst {worst:.1f}, median {statistics.median(known):.1f}" if worst is not None
             else f"{len(recoveries) - len(known)} of {len(recoveries)} never recovered before the next kill"
             if recoveries else "no restart happened"),
            f"each ≤ {s.recovery_goal_s:g}", worst is not None and worst <= s.recovery_goal_s))
        return goals

    @property
    def met(self) -> bool:
        return all(goal.met for goal in self.goals())

    def as_dict(self) -> Dict[str, Any]:
        data = asdict(self)
        data["missing"] = self.missing
        data["duplicates"] = self.duplicates
        data["worst_recovery_s"] = self.worst_recovery_s
        data["goals"] = [asdict(goal) for goal in self.goals()]
        data["met"] = self.met
        return data

    # --------------------------------------------------------------- markdown
    def markdown(self) -> str:
        s = self.settings
        lines = [f"Chaos soak, {s.minutes:g} min disturbed, {s.cameras} RTSP cameras, started {self.started_utc}",
                 "", "| measure | value | goal | met |", "|---|---|---|---|"]
        lines += [f"| {g.name} | {g.measured} | {g.goal} | {'yes' if g.met else 'no'} |" for g in self.goals()]
        lines += ["", "| disturbance | count | detail |", "|---|---|---|",
                  f"| RTSP server killed and restarted | {len(self.outages)} | down {s.camera_down_s:g} s each, "
                  f"every {s.camera_cycle_s:g} s per camera, staggered |",
                  f"| broker restarted (SIGTERM, persistence on) | {self.broker_restarts} | down {s.broker_down_s:g} s, "
                  f"every {s.broker_cycle_s:g} s |"]
        for kind, label in (("patch_storm", "PATCH storm"), ("slowloris", "slowloris burst")):
            bursts = [b for b in self.bursts if b.kind == kind]
            lines.append(f"| {label} | {len(bursts)} | {self._burst_detail(kind, bursts)} |")
        if self.fds_added or self.fds_removed:
            lines += ["", f"Descriptors at the end and not at baseline: {', '.join(self.fds_added) or 'none'}; "
                          f"gone: {', '.join(self.fds_removed) or 'none'}."]
        lines += ["", f"Log: {self.log_errors} ERROR lines, {self.log_tracebacks} tracebacks; "
                      f"exit code on SIGTERM at the end: {self.exit_code_on_sigterm}."]
        return "\n".join(lines) + "\n"

    @staticmethod
    def _burst_detail(kind: str, bursts: List[BurstResult]) -> str:
        if not bursts:
            return "–"
        if kind == "patch_storm":
            sent, ok = sum(b.sent for b in bursts), sum(b.ok for b in bursts)
            worst = max(b.worst_request_ms for b in bursts)
            return f"{ok} of {sent} PATCHes answered 200, slowest {worst:.0f} ms"
        probes = [ms for b in bursts for ms in b.healthz_ms]
        failures = sum(b.healthz_failures for b in bursts)
        sockets = max(b.sent for b in bursts)
        worst = f"slowest answer {max(probes):.0f} ms" if probes else "no answer"
        return f"{sockets} sockets; /healthz during bursts: {len(probes)} answered ({worst}), {failures} timed out (2 s)"


def write_json(report: ChaosReport, path: Path, provenance: Provenance) -> None:
    write_results(path, report.as_dict(), provenance)
