"""Long run: the full appliance with N cameras for M minutes; RSS growth and per-camera fairness.

The long run's target, over 10 minutes with 4 cameras: RSS grows by less than 20 MB (counted from the
end of the warm-up, when the model, buffers and decoder have settled) and every camera gets at
least 80 % of an equal share of the analysed frames.
"""
from __future__ import annotations

import logging
import time
from dataclasses import asdict
from pathlib import Path
from typing import List

import numpy as np

from bench.common.appliance_run import analysed_counts, bench_config, published_count, running
from bench.common.resources import ResourceMeter, rss_mb
from bench.common.windows import count_deltas, share_of_equal
from testkit.net import port_accepts
from testkit.waiting import poll_until

log = logging.getLogger(__name__)


def run_soak(clip: Path, cameras: int, model_path: Path, batch: int, minutes: float, batch_timeout_ms: float,
             mqtt_host: str, mqtt_port: int, realtime: bool = True, sample_interval_s: float = 10.0) -> dict:
    """``realtime`` True (the default) paces each camera like a live one at the clip's frame rate, so
    with more frames offered than the model can take the scheduler's fairness is what is measured."""
    if not port_accepts(mqtt_host, mqtt_port, timeout_s=1.0):
        return {"status": "skipped", "reason": f"no MQTT broker at {mqtt_host}:{mqtt_port}"}
    duration_s = minutes * 60.0
    warmup_s = min(60.0, max(5.0, duration_s * 0.1))
    config = bench_config(clip, cameras, model_path, batch, batch_timeout_ms, mqtt_host, mqtt_port, realtime=realtime)
    samples: List[dict] = []
    meter = ResourceMeter()
    with running(config) as appliance:
        started_s = time.monotonic()
        rss_at_start_mb = rss_mb()
        poll_until(lambda: min(analysed_counts(appliance).values() or [0]) >= 1, timeout_s=60.0)
        time.sleep(max(0.0, warmup_s - (time.monotonic() - started_s)))
        baseline_counts, baseline_published = analysed_counts(appliance), published_count(appliance)
        baseline_rss_mb = rss_mb()
        meter.start()
        end_s = time.monotonic() + duration_s - warmup_s
        while time.monotonic() < end_s:
            time.sleep(min(sample_interval_s, max(0.0, end_s - time.monotonic())))
            counts = analysed_counts(appliance)
            samples.append({"t_s": round(time.monotonic() - started_s, 1), "rss_mb": round(rss_mb() or 0.0, 1),
                            "frames": sum(count_deltas(baseline_counts, counts).values())})
            log.info("soak %.0f s: RSS %.1f MB, %d frames", samples[-1]["t_s"], samples[-1]["rss_mb"], samples[-1]["frames"])
        final_counts, final_published = analysed_counts(appliance), published_count(appliance)
        cameras_status = appliance.reads.cameras()
        usage = meter.stop()
        status = appliance.reads.status()
    per_camera = count_deltas(baseline_counts, final_counts)
    shares = share_of_equal(per_camera, cameras)
    final_rss_mb = samples[-1]["rss_mb"] if samples else rss_mb()
    growth_mb = round(final_rss_mb - baseline_rss_mb, 1)
    times = np.array([s["t_s"] for s in samples], dtype=np.float64)
    rss = np.array([s["rss_mb"] for s in samples], dtype=np.float64)
    slope_mb_per_min = round(float(np.polyfit(times / 60.0, rss, 1)[0]), 3) if len(samples) >= 3 else None
    analysed = sum(per_camera.values())
    return {
        "status": "ok",
        "cameras": cameras,
        "model": model_path.name,
        "batch": batch,
        "minutes": minutes,
        "realtime": realtime,
        "warmup_s": warmup_s,
        "frames": analysed,
        "frames_per_s": round(analysed / usage.wall_s, 2),
        "published": final_published - baseline_published,
        "camera_fps": {c.id: c.fps for c in cameras_status},
        "frames_dropped": {c.id: c.frames_dropped for c in cameras_status},
        "per_camera_frames": per_camera,
        "per_camera_share": shares,
        "min_share": min(shares.values()) if shares else None,
        "rss_mb": {"start": round(rss_at_start_mb or 0.0, 1), "after_warmup": round(baseline_rss_mb or 0.0, 1),
                   "end": final_rss_mb, "max": float(rss.max()) if len(rss) else None,
                   "growth_after_warmup": growth_mb, "slope_mb_per_min": slope_mb_per_min},
        "latency_ms": asdict(status.pipeline.latency_ms),
        "errors": status.pipeline.errors,
        "mqtt": asdict(status.mqtt),
        "resources": usage.as_dict(),
        "targets": {
            "rss_growth_below_20_mb": growth_mb < 20.0,
            "every_camera_at_least_80_percent_of_equal_share": bool(shares) and min(shares.values()) >= 0.8,
        },
        "samples": samples,
    }


def soak_markdown(result: dict) -> str:
    if result.get("status") != "ok":
        return f"soak {result.get('status')}: {result.get('reason')}\n"
    rss = result["rss_mb"]
    shares = ", ".join(f"{cid} {share:.2f}" for cid, share in result["per_camera_share"].items())
    targets = result["targets"]
    return "\n".join([
        "| soak | value | goal | met |", "|---|---|---|---|",
        f"| RSS growth after warm-up ({result['warmup_s']:.0f} s), MB | {rss['growth_after_warmup']:.1f} "
        f"({rss['after_warmup']:.0f} → {rss['end']:.0f}, max {rss['max']:.0f}; slope {rss['slope_mb_per_min']} MB/min) | < 20 | "
        f"{'yes' if targets['rss_growth_below_20_mb'] else 'no'} |",
        f"| per-camera share of an equal share | {shares} | each >= 0.80 | "
        f"{'yes' if targets['every_camera_at_least_80_percent_of_equal_share'] else 'no'} |",
        f"| analysed frames/s ({result['cameras']} cameras, {result['minutes']:g} min, "
        f"{'paced like live cameras' if result['realtime'] else 'as fast as possible'}) | {result['frames_per_s']:.2f} | – | – |",
    ]) + "\n"
