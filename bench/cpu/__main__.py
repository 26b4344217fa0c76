"""``python -m bench.cpu COMMAND``: the benchmark on the host CPU (bench/README.md)."""
from __future__ import annotations

import sys

from bench.common.commands import Command, run_command

DESCRIPTION = "The benchmark on the host CPU (bench/README.md)."
COMMANDS = {
    "run": Command("bench.cpu.run", "raw backend, pipeline, full appliance, Ultralytics, stages; --soak-minutes for the long run"),
    "cameras": Command("bench.cpu.cameras", "8 cameras of the camera-like scene, tracking and events on: frames/s, CPU per frame, time per stage"),
    "analysis-cost": Command("bench.cpu.analysis_cost", "the full appliance with tracking and events off and on"),
    "analysis-path": Command("bench.cpu.analysis_path", "one camera's tracking, zones and lines, events in µs per frame, against other commits"),
    "post-model": Command("bench.cpu.post_model", "the work after the model (tracking, events, snapshots, MQTT, status) on recorded detections, against other commits"),
    "motion-gating": Command("bench.cpu.motion_gating", "8 cameras, 6 static and 2 walking, with motion gating off and on"),
    "recording": Command("bench.cpu.recording", "4 RTSP cameras at 1080p30: recording off, pre-roll only, writing"),
    "clip-storm": Command("bench.cpu.clip_storm", "an event storm: bytes written in clips against the continuous recording"),
    "frame-drop": Command("bench.cpu.frame_drop_cost", "what a frame dropped before analysis costs per decoder; the packet tee"),
    "publish-latency": Command("bench.cpu.publish_latency", "MQTT publishing at the engine's full rate: result to subscriber latency, QoS 0 and 1"),
    "desired-cost": Command("bench.cpu.desired_cost", "hostile R/config/desired traffic: CPU per big unsigned message, a flood against a real appliance"),
    "privacy-cost": Command("bench.cpu.privacy_cost", "privacy masks per 1080p frame on the snapshot path; the masked recording re-encode"),
    "live-tiles": Command("bench.cpu.live_tiles", "what an open live-grid tile costs the appliance: CPU ms and bytes per tile per second"),
    "speed-error": Command("bench.cpu.speed_error", "line pair speeds against the truth on a scene of known speed: error mean and max"),
    "health-cost": Command("bench.cpu.health_cost", "CPU time of device health sampling, as a share of one core"),
}

if __name__ == "__main__":
    sys.exit(run_command("python -m bench.cpu", DESCRIPTION, COMMANDS))
