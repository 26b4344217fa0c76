"""The ratios the CPU targets name, and the markdown tables printed and stored in the JSON."""
from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional

from bench.common.figures import ratio


def short_model(name: str) -> str:
    return name.replace("yolov8n_coco_", "").replace(".onnx", "")


def _ok_rows(rows: Iterable[dict]) -> List[dict]:
    return [r for r in rows if r.get("status", "ok") == "ok" and "frames_per_s" in r]


def raw_lookup(results: Dict[str, Any]) -> Dict[tuple, float]:
    return {(r["model"], r["batch"]): r["images_per_s"] for r in results.get("raw", []) if "images_per_s" in r}


def add_raw_ratios(results: Dict[str, Any]) -> None:
    """Each pipeline row gets ``raw_images_per_s`` and ``ratio_to_raw`` at its model and batch."""
    raw = raw_lookup(results)
    for section in ("predecoded", "full"):
        for row in _ok_rows(results.get(section, [])):
            row["raw_images_per_s"] = raw.get((row["model"], row["batch"]))
            row["ratio_to_raw"] = ratio(row["frames_per_s"], row["raw_images_per_s"])


def _one_camera(rows: Iterable[dict], model: str) -> Optional[dict]:
    return next((r for r in _ok_rows(rows) if r["cameras"] == 1 and r["model"] == model), None)


def _fps(run: Optional[dict]) -> Optional[float]:
    return run.get("frames_per_s") if run and run.get("status", "ok") == "ok" else None


def target_ratios(results: Dict[str, Any], model: str, batch_model: str) -> Dict[str, Any]:
    """The CPU targets on ``model``; the two full-pipeline ratios again on ``batch_model``."""
    ultra = results.get("ultralytics", {})
    ultra_batch = results.get("ultralytics_batch_model", {})
    full_one = _one_camera(results.get("full", []), model)
    full_one_batch = _one_camera(results.get("full", []), batch_model)
    stages = results.get("stages", {})
    ultra_pre_post = None
    if ultra.get("status") == "ok":
        speed = ultra["speed_ms"]
        ultra_pre_post = (speed.get("preprocess") or 0.0) + (speed.get("postprocess") or 0.0)
    targets = {
        "predecoded_vs_raw": {
            "goal": ">= 0.95",
            "by_cameras": {str(r["cameras"]): r.get("ratio_to_raw") for r in _ok_rows(results.get("predecoded", []))},
        },
        "full_1cam_vs_ultralytics": {"goal": ">= 1.5", "model": model, "value": ratio(_fps(full_one), _fps(ultra))},
        "full_1cam_vs_raw": {"goal": ">= 0.85", "model": model, "value": full_one.get("ratio_to_raw") if full_one else None},
        "pre_post_cpu_vs_ultralytics": {
            "goal": "<= 0.5",
            "value": ratio(stages.get("pre_plus_post_cpu_ms"), ultra_pre_post),
        },
    }
    if full_one_batch is not None or ultra_batch:
        targets["full_1cam_vs_ultralytics_batch_model"] = {
            "goal": ">= 1.5", "model": batch_model, "value": ratio(_fps(full_one_batch), _fps(ultra_batch))}
        targets["full_1cam_vs_raw_batch_model"] = {
            "goal": ">= 0.85", "model": batch_model, "value": full_one_batch.get("ratio_to_raw") if full_one_batch else None}
    by_cameras = [v for v in targets["predecoded_vs_raw"]["by_cameras"].values() if v is not None]
    targets["predecoded_vs_raw"]["value"] = min(by_cameras) if by_cameras else None
    for target in targets.values():
        target["met"] = _meets(target["value"], target["goal"])
    return targets


def _meets(value: Optional[float], goal: str) -> Optional[bool]:
    if value is None:
        return None
    op, bound = goal.split()
    return value >= float(bound) if op == ">=" else value <= float(bound)


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _latency(row: dict) -> str:
    lat = row.get("latency_ms") or {}
    return "–" if lat.get("p50") is None else f"{lat['p50']:.0f} / {lat['p99']:.0f}"


def _rounds(row: dict) -> str:
    values = row.get("rounds_per_s") or []
    return " / ".join(f"{v:.1f}" for v in values) if len(values) > 1 else "–"


def _resources(row: dict) -> tuple:
    res = row.get("resources") or {}
    return _fmt(res.get("cpu_percent"), 0), _fmt(res.get("peak_rss_mb"), 0)


def throughput_table(results: Dict[str, Any]) -> List[str]:
    lines = ["| run | cameras | model | batch | frames/s | per round | × raw, same batch | latency p50 / p99 ms | CPU % | peak RSS MB |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for row in results.get("raw", []):
        if "images_per_s" not in row:
            lines.append(f"| a. raw backend | – | {short_model(row.get('model', '?'))} | {row.get('batch', '?')} | error: {row.get('error', '?')} | | | | | |")
            continue
        cpu, rss = _resources(row)
        lines.append(f"| a. raw backend | – | {short_model(row['model'])} | {row['batch']} | {_fmt(row['images_per_s'])} | {_rounds(row)} | 1.00 | "
                     f"{_fmt(row['ms_per_batch']['median'], 0)} per batch | {cpu} | {rss} |")
    for section, title in (("predecoded", "b. pipeline, pre-decoded"), ("full", "c. full, decode → MQTT")):
        for row in results.get(section, []):
            if row.get("status", "ok") != "ok" or "frames_per_s" not in row:
                lines.append(f"| {title} | {row.get('cameras', '?')} | {short_model(row.get('model', '?'))} | {row.get('batch', '?')} | "
                             f"{row.get('status', 'error')}: {row.get('reason', row.get('error', '?'))} | | | | | |")
                continue
            cpu, rss = _resources(row)
            lines.append(f"| {title} | {row['cameras']} | {short_model(row['model'])} | {row['batch']} | {_fmt(row['frames_per_s'])} | "
                         f"{_rounds(row)} | {_fmt(row.get('ratio_to_raw'))} | {_latency(row)} | {cpu} | {rss} |")
    raw = raw_lookup(results)
    for key in ("ultralytics", "ultralytics_batch_model"):
        ultra = results.get(key)
        if ultra is None:
            continue
        if ultra.get("status") == "ok":
            lines.append(f"| d. Ultralytics predict(stream=True) | 1 | {short_model(ultra['model'])} | 1 | {_fmt(ultra['frames_per_s'])} | "
                         f"{_rounds(ultra)} | {_fmt(ratio(ultra['frames_per_s'], raw.get((ultra['model'], 1))))} | – | "
                         f"{_fmt(ultra.get('cpu_percent'), 0)} | {_fmt(ultra.get('peak_rss_mb'), 0)} |")
        else:
            lines.append(f"| d. Ultralytics | 1 | {short_model(ultra.get('model', '–'))} | – | "
                         f"{ultra.get('status', 'skipped')}: {ultra.get('reason', ultra.get('error', '?'))} | | | | | |")
    return lines


def stage_table(results: Dict[str, Any]) -> List[str]:
    stages = results.get("stages", {})
    ultra = results.get("ultralytics", {})
    speed = ultra.get("speed_ms", {}) if ultra.get("status") == "ok" else {}
    raw_one = raw_lookup(results).get((stages.get("model"), 1))
    pre, post = stages.get("preprocess", {}), stages.get("postprocess", {})
    ultra_pp = (speed["preprocess"] + speed["postprocess"]) if speed else None
    return [
        "| per 1080p frame, ms | edge-app CPU | edge-app wall | Ultralytics (its own figures) |",
        "|---|---|---|---|",
        f"| preprocess (letterbox → tensor) | {_fmt(pre.get('cpu_ms'))} | {_fmt(pre.get('wall_ms'))} | {_fmt(speed.get('preprocess'))} |",
        f"| postprocess (decode + NMS) | {_fmt(post.get('cpu_ms'))} | {_fmt(post.get('wall_ms'))} | {_fmt(speed.get('postprocess'))} |",
        f"| preprocess + postprocess | {_fmt(stages.get('pre_plus_post_cpu_ms'))} | "
        f"{_fmt((pre.get('wall_ms') or 0) + (post.get('wall_ms') or 0) if pre else None)} | {_fmt(ultra_pp)} |",
        f"| inference (raw backend, batch 1) | – | {_fmt(1000.0 / raw_one if raw_one else None, 1)} | {_fmt(speed.get('inference'), 1)} |",
    ]


def thread_table(results: Dict[str, Any]) -> List[str]:
    groups = ["gather", "infer", "publish", "capture", "mqtt", "native", "total"]
    lines = ["| run | cameras | model | " + " | ".join(groups) + " |", "|---|---|---|" + "---|" * len(groups)]
    for section, title in (("predecoded", "b. pre-decoded"), ("full", "c. full")):
        for row in _ok_rows(results.get(section, [])):
            shares = row.get("cpu_ms_per_frame", {})
            lines.append(f"| {title} | {row['cameras']} | {short_model(row['model'])} | "
                         + " | ".join(_fmt(shares.get(g), 1) for g in groups) + " |")
    return lines


def targets_table(targets: Dict[str, Any]) -> List[str]:
    names = {
        "predecoded_vs_raw": "pipeline on pre-decoded frames / raw backend, same batch (worst camera count)",
        "full_1cam_vs_ultralytics": "full pipeline, 1 camera / Ultralytics",
        "full_1cam_vs_raw": "full pipeline, 1 camera / raw backend (batch 1)",
        "full_1cam_vs_ultralytics_batch_model": "full pipeline, 1 camera / Ultralytics, both on the float model",
        "full_1cam_vs_raw_batch_model": "full pipeline, 1 camera / raw backend (batch 1), float model",
        "pre_post_cpu_vs_ultralytics": "(preprocess + postprocess) CPU / Ultralytics' preprocess + postprocess",
    }
    lines = ["| target | measured | goal | met |", "|---|---|---|---|"]
    for key, target in targets.items():
        value = _fmt(target.get("value"))
        if key == "predecoded_vs_raw" and target.get("by_cameras"):
            value += " (" + ", ".join(f"{c} cam: {_fmt(v)}" for c, v in target["by_cameras"].items()) + ")"
        met = {True: "yes", False: "no", None: "–"}[target.get("met")]
        name = names.get(key, key)
        if target.get("model"):
            name += f" [{short_model(target['model'])}]"
        lines.append(f"| {name} | {value} | {target['goal']} | {met} |")
    return lines


def markdown(results: Dict[str, Any]) -> str:
    parts = ["### Throughput", *throughput_table(results), "",
             "### Per-frame CPU of the stages", *stage_table(results), "",
             "### CPU ms per analysed frame, by thread", *thread_table(results), "",
             "### Targets", *targets_table(results.get("targets", {}))]
    return "\n".join(parts) + "\n"
