"""Merging the rounds of one configuration into its figures.

Every configuration is measured in several short rounds, in forward order and then in reverse
order (A B C ... C B A), so a load that drifts during the run (other work on a shared machine)
weighs on every configuration alike; the figures are totals over all rounds, and
``rounds_per_s`` shows the spread.
"""
from __future__ import annotations

from typing import Any, Dict, List

import numpy as np

from bench.common.figures import percentiles_ms
from bench.common.resources import Usage
from bench.common.windows import share_of_equal


def _failed(rounds: List[dict]) -> Dict[str, Any]:
    return next((r for r in rounds if r.get("status", "ok") != "ok"), {})


def _rate(frames: int, wall_s: float) -> float:
    return round(frames / wall_s, 2) if wall_s > 0 else 0.0


def summarise_raw(rounds: List[dict]) -> Dict[str, Any]:
    if _failed(rounds):
        return _failed(rounds)
    usage = Usage.combine([r["usage"] for r in rounds])
    batch_ms = np.concatenate([np.asarray(r["batch_ms"], dtype=np.float64) for r in rounds])
    images = sum(r["frames"] for r in rounds)
    return {
        "model": rounds[0]["model"],
        "batch": rounds[0]["batch"],
        "batches": int(batch_ms.size),
        "images_per_s": _rate(images, usage.wall_s),
        "rounds_per_s": [_rate(r["frames"], r["usage"].wall_s) for r in rounds],
        "ms_per_batch": {"mean": round(float(batch_ms.mean()), 1), "median": round(float(np.median(batch_ms)), 1),
                         "min": round(float(batch_ms.min()), 1)},
        "resources": usage.as_dict(),
        "cpu_ms_per_image": usage.per_frame_ms(images),
    }


def summarise_pipeline(rounds: List[dict]) -> Dict[str, Any]:
    """Sections b and c: frames/s, fairness, latency, CPU by thread, over all rounds."""
    if _failed(rounds):
        return _failed(rounds)
    usage = Usage.combine([r["usage"] for r in rounds])
    frames = sum(r["frames"] for r in rounds)
    per_camera: Dict[str, int] = {}
    for r in rounds:
        for cid, count in r["per_camera_frames"].items():
            per_camera[cid] = per_camera.get(cid, 0) + count
    latencies = [v for r in rounds for v in r["latencies_ms"]]
    result: Dict[str, Any] = {
        "status": "ok",
        "cameras": rounds[0]["cameras"],
        "model": rounds[0]["model"],
        "batch": rounds[0]["batch"],
        "warmed_up": all(r.get("warmed_up", True) for r in rounds),
        "frames": frames,
        "frames_per_s": _rate(frames, usage.wall_s),
        "rounds_per_s": [_rate(r["frames"], r["usage"].wall_s) for r in rounds],
        "per_camera_frames": dict(sorted(per_camera.items())),
        "per_camera_share": share_of_equal(per_camera, rounds[0]["cameras"]),
        "latency_ms": percentiles_ms(latencies),
        "stage_wall_ms": rounds[-1].get("stage_wall_ms", {}),
        # mean ms per analysed frame of each stage (edge_app_stage_seconds), weighted by frames
        "stage_ms": _stage_means(rounds),
        "cpu_ms_per_frame": usage.per_frame_ms(frames),
        "errors": sum(r.get("errors", 0) for r in rounds),
        "resources": usage.as_dict(),
    }
    if "delivered_ms" in rounds[0]:
        result["delivered_ms"] = percentiles_ms([v for r in rounds for v in r["delivered_ms"]])
    image_types = sorted({t for r in rounds for t in r.get("image_types", [])})
    if image_types:
        result["image_types"] = image_types
    camera_errors = {cid: text for r in rounds for cid, text in (r.get("camera_errors") or {}).items()}
    if camera_errors:
        result["camera_errors"] = camera_errors
    for key in ("replaced_frames", "published", "received"):
        if key in rounds[0]:
            result[key] = sum(r[key] for r in rounds)
    for key in ("published", "received"):
        if key in result:
            result[f"{key}_per_s"] = _rate(result[key], usage.wall_s)
    if "mqtt" in rounds[-1]:
        result["mqtt"] = rounds[-1]["mqtt"]
    for key in ("engine_process", "queueing_calls_keep_gil", "tracker_processes_used", "lanes"):  # the same every round
        if key in rounds[0]:
            result[key] = rounds[0][key]
    for key in ("mean_batch_whole_run", "engine_busy_ms_per_batch_whole_run", "engine_busy_fraction_whole_run"):
        if key in rounds[0]:  # one figure per round
            result[key] = [r.get(key) for r in rounds]
    return result


def _stage_means(rounds: List[dict]) -> Dict[str, float]:
    frames = sum(r["frames"] for r in rounds if r.get("stage_ms"))
    means: Dict[str, float] = {}
    for r in rounds:
        for stage, ms in (r.get("stage_ms") or {}).items():
            means[stage] = means.get(stage, 0.0) + ms * r["frames"] / frames
    return {stage: round(ms, 4) for stage, ms in means.items()}


def summarise_ultralytics(rounds: List[dict]) -> Dict[str, Any]:
    if _failed(rounds):
        return _failed(rounds)
    frames = sum(r["frames"] for r in rounds)
    wall_s = sum(r["wall_s"] for r in rounds)
    cpu_s = sum(r["cpu_s"] for r in rounds)
    speed = {key: round(sum(r["speed_ms"][key] * r["frames"] for r in rounds) / frames, 3) if frames else None
             for key in rounds[0]["speed_ms"]}
    return {
        **{k: v for k, v in rounds[-1].items() if k not in ("frames", "frames_per_s", "wall_s", "cpu_s", "speed_ms", "cpu_percent")},
        "status": "ok",
        "frames": frames,
        "frames_per_s": _rate(frames, wall_s),
        "rounds_per_s": [r["frames_per_s"] for r in rounds],
        "speed_ms": speed,
        "cpu_percent": round(100.0 * cpu_s / wall_s, 1) if wall_s > 0 else None,
        "peak_rss_mb": max(r.get("peak_rss_mb") or 0.0 for r in rounds),
    }
