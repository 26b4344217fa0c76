"""The benchmark's configurations, run in rounds (forward, then reversed) and summarised."""
from __future__ import annotations

import logging
from functools import partial
from pathlib import Path
from typing import Any, Dict, List

from bench.common.full import measure_full
from bench.common.jobs import Job, guarded, run_rounds
from bench.common.media import clip_frames, ensure_clip
from bench.common.raw import measure_raw
from bench.common.rounds import summarise_pipeline, summarise_raw, summarise_ultralytics
from bench.cpu.predecoded import measure_predecoded
from bench.cpu.report import add_raw_ratios, target_ratios
from bench.cpu.settings import BenchSettings
from bench.cpu.stages import measure_stages
from bench.cpu.ultralytics_runner import measure_ultralytics

log = logging.getLogger(__name__)


def plan_jobs(s: BenchSettings, clip: Path, frames: list) -> List[Job]:
    jobs = [Job("raw", f"raw {s.model_by_role(role).name} batch {batch}",
                partial(_raw, s.model_by_role(role), batch, frames, s.warmup_s),
                {"model": s.model_by_role(role).name, "batch": batch})
            for role, batch in s.raw_batches]
    for cameras in s.predecoded_cameras:
        batch = s.batch_for_cameras(cameras)
        model = s.model_for_batch(batch)
        jobs.append(Job("predecoded", f"pre-decoded {cameras} camera(s)",
                        partial(_predecoded, model, cameras, batch, frames, s.warmup_s, s.batch_timeout_ms),
                        {"cameras": cameras, "model": model.name, "batch": batch}))
    full_runs = [(cameras, s.model_for_batch(s.batch_for_cameras(cameras)), s.batch_for_cameras(cameras)) for cameras in s.full_cameras]
    if s.compare_batch_model:
        full_runs.insert(1, (1, s.batch_model_path, 1))
    for cameras, model, batch in full_runs:
        jobs.append(Job("full", f"full {cameras} camera(s) {model.name}",
                        partial(_full, clip, cameras, model, batch, max(s.warmup_s, 1.0 if s.smoke else 3.0),
                                s.batch_timeout_ms, s.mqtt_host, s.mqtt_port),
                        {"cameras": cameras, "model": model.name, "batch": batch}))
    if s.run_ultralytics:
        for key, model in (("ultralytics", s.model_path), ("ultralytics_batch_model", s.batch_model_path)):
            if key == "ultralytics" or s.compare_batch_model:
                jobs.append(Job(key, f"Ultralytics {model.name}",
                                partial(_ultralytics, s.ultralytics_python, model, clip, s.work_dir), {"model": model.name}))
    return jobs


def _raw(model, batch, frames, warmup_s, window_s):
    return measure_raw(model, batch, frames, window_s, warmup_s)


def _predecoded(model, cameras, batch, frames, warmup_s, batch_timeout_ms, window_s):
    return measure_predecoded(model, cameras, batch, frames, window_s, warmup_s, batch_timeout_ms)


def _full(clip, cameras, model, batch, warmup_s, batch_timeout_ms, host, port, window_s):
    return measure_full(clip, cameras, model, batch, window_s, warmup_s, batch_timeout_ms, host, port)


def _ultralytics(python, model, clip, work_dir, window_s):
    return measure_ultralytics(python, model, clip, window_s, work_dir)


def run_benchmark(settings: BenchSettings) -> Dict[str, Any]:
    s = settings
    clip = ensure_clip(s.images_dir, s.work_dir, s.clip_size_wh, s.clip_seconds_per_image, s.clip_fps)
    frames = clip_frames(clip)
    jobs = plan_jobs(s, clip, frames)
    run_rounds(jobs, s.rounds, s.window_s)
    summarise = {"raw": summarise_raw, "predecoded": summarise_pipeline, "full": summarise_pipeline,
                 "ultralytics": summarise_ultralytics, "ultralytics_batch_model": summarise_ultralytics}
    results: Dict[str, Any] = {"clip": {"path": str(clip), "frame_wh": [frames[0].shape[1], frames[0].shape[0]]},
                               "raw": [], "predecoded": [], "full": []}
    for job in jobs:
        summary = summarise[job.section](job.rounds)
        summary = {**job.identity, **summary} if summary.get("status", "ok") != "ok" else summary
        if job.section.startswith("ultralytics"):
            results[job.section] = summary
        else:
            results[job.section].append(summary)
    if not s.run_ultralytics:
        results["ultralytics"] = {"status": "skipped", "reason": "not requested (--smoke or --no-ultralytics)"}
    results["stages"] = guarded("stages", lambda w: measure_stages(s.model_path, frames, w), max(0.3, s.window_s / 4))
    add_raw_ratios(results)
    results["targets"] = target_ratios(results, s.model_path.name, s.batch_model_path.name)
    return results
