"""The GPU benchmark's figures and tables: ratios to the raw engine, CPU per frame, the goals.

Pure functions over the summarised rows (``bench.common.rounds``), so they are tested without a GPU.
A pipeline row carries ``transport`` (file or rtsp), ``decoder`` (nvdec or ffmpeg), ``cameras``,
``batch``, ``frames_per_s``, ``cpu_ms_per_frame`` (by thread group, ``watcher`` being the
benchmark's own subscriber) and latencies.
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional

from bench.common.figures import ratio

#: the GPU path's goals, on 8 cameras of 1080p30 files
GOAL_RATIO_TO_RAW = 0.8
GOAL_CPU_ADVANTAGE = 5.0
GOAL_CAMERAS = 8
#: the default configuration (no settings) with NVIDIA MPS running, 8 cameras: the same ratio
GOAL_DEFAULT_RATIO_TO_RAW = 0.8


def appliance_cpu_ms(row: dict) -> Optional[float]:
    """CPU ms per analysed frame of the process, less the benchmark's own MQTT subscriber."""
    shares = row.get("cpu_ms_per_frame") or {}
    if "total" not in shares:
        return None
    return round(shares["total"] - shares.get("watcher", 0.0), 3)


def _ok(rows: Iterable[dict]) -> List[dict]:
    return [r for r in rows if r.get("status", "ok") == "ok" and r.get("frames_per_s")]


def raw_by_batch(raw_rows: Iterable[dict]) -> Dict[int, float]:
    return {r["batch"]: r["images_per_s"] for r in raw_rows if r.get("images_per_s")}


def add_ratios(results: Dict[str, Any], camera_fps: float) -> None:
    """Each pipeline row gets ``ratio_to_raw`` (same batch), ``appliance_cpu_ms_per_frame`` and,
    for RTSP (paced at the stream's rate), ``offered_fps`` and ``ratio_to_offered``."""
    raw = raw_by_batch(results.get("raw", []))
    for row in _ok(results.get("full", [])):
        row["raw_images_per_s"] = raw.get(row["batch"])
        row["ratio_to_raw"] = ratio(row["frames_per_s"], row["raw_images_per_s"])
        row["appliance_cpu_ms_per_frame"] = appliance_cpu_ms(row)
        if row.get("transport") == "rtsp":
            row["offered_fps"] = round(row["cameras"] * camera_fps, 2)
            row["ratio_to_offered"] = ratio(row["frames_per_s"], row["offered_fps"])


def find_row(rows: Iterable[dict], transport: str, decoder: str, cameras: int) -> Optional[dict]:
    return next((r for r in _ok(rows) if (r.get("transport"), r.get("decoder"), r.get("cameras")) == (transport, decoder, cameras)), None)


def cpu_comparison(rows: List[dict]) -> List[Dict[str, Any]]:
    """Per transport and camera count: appliance CPU ms per frame, NVDEC against CPU decode."""
    keys = sorted({(r.get("transport"), r.get("cameras")) for r in _ok(rows)}, key=lambda k: (str(k[0]), k[1]))
    out = []
    for transport, cameras in keys:
        gpu, cpu = find_row(rows, transport, "nvdec", cameras), find_row(rows, transport, "ffmpeg", cameras)
        gpu_ms = gpu.get("appliance_cpu_ms_per_frame") if gpu else None
        cpu_ms = cpu.get("appliance_cpu_ms_per_frame") if cpu else None
        out.append({"transport": transport, "cameras": cameras, "nvdec_cpu_ms": gpu_ms, "ffmpeg_cpu_ms": cpu_ms,
                    "ffmpeg_over_nvdec": ratio(cpu_ms, gpu_ms)})
    return out


def _meets(value: Optional[float], bound: float) -> Optional[bool]:
    return None if value is None else value >= bound


def targets(results: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """The GPU path's two goals, on 8 camera files, NVDEC path: the pipeline keeps up with the raw
    engine, and NVDEC saves CPU against decoding on the CPU."""
    rows = results.get("full", [])
    nvdec = find_row(rows, "file", "nvdec", GOAL_CAMERAS)
    ffmpeg = find_row(rows, "file", "ffmpeg", GOAL_CAMERAS)
    throughput = nvdec.get("ratio_to_raw") if nvdec else None
    advantage = ratio(ffmpeg.get("appliance_cpu_ms_per_frame") if ffmpeg else None,
                      nvdec.get("appliance_cpu_ms_per_frame") if nvdec else None)
    goals = {
        "throughput_vs_raw": {"goal": f">= {GOAL_RATIO_TO_RAW}", "value": throughput, "met": _meets(throughput, GOAL_RATIO_TO_RAW)},
        "cpu_advantage": {"goal": f">= {GOAL_CPU_ADVANTAGE}", "value": advantage, "met": _meets(advantage, GOAL_CPU_ADVANTAGE)},
    }
    engine = find_row(rows, "file", "nvdec+engine", GOAL_CAMERAS)
    if engine is not None:  # the same goals with model.engine_process on
        value = engine.get("ratio_to_raw")
        goals["throughput_vs_raw_engine_process"] = {"goal": f">= {GOAL_RATIO_TO_RAW}", "value": value,
                                                     "met": _meets(value, GOAL_RATIO_TO_RAW)}
        value = ratio(ffmpeg.get("appliance_cpu_ms_per_frame") if ffmpeg else None, engine.get("appliance_cpu_ms_per_frame"))
        goals["cpu_advantage_engine_process"] = {"goal": f">= {GOAL_CPU_ADVANTAGE}", "value": value,
                                                 "met": _meets(value, GOAL_CPU_ADVANTAGE)}
    default = find_row(rows, "file", "default", GOAL_CAMERAS)
    if default is not None:  # no settings at all: engine_process auto decides by MPS
        value = default.get("ratio_to_raw")
        goals["throughput_vs_raw_default"] = {"goal": f">= {GOAL_DEFAULT_RATIO_TO_RAW}", "value": value,
                                              "met": _meets(value, GOAL_DEFAULT_RATIO_TO_RAW),
                                              "engine_process": default.get("engine_process"),
                                              "reason": default.get("engine_process_reason")}
    return goals


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _pair(block: Optional[dict]) -> str:
    if not block or block.get("p50") is None:
        return "–"
    return f"{block['p50']:.0f} / {block['p99']:.0f}"


def parity_lines(results: Dict[str, Any]) -> List[str]:
    parity = results.get("parity") or {}
    if parity.get("status") != "ok":
        return [f"parity check: {parity.get('status', 'not run')}: {parity.get('error', '')}".rstrip(": ")]
    lines = ["| image | ONNX Runtime detections | stand-in detections | matched (same class, IoU >= "
             f"{parity['match_iou']}) | max confidence difference |", "|---|---|---|---|---|"]
    for image in parity["images"]:
        lines.append(f"| {image['image']} | {image['reference']} | {image['standin']} | {image['matched']} | "
                     f"{_fmt(image['max_confidence_diff'], 4)} |")
    return lines


def raw_table(results: Dict[str, Any]) -> List[str]:
    lines = ["| batch | images/s | per round | ms per batch (median) | CPU ms per image | CPU % |", "|---|---|---|---|---|---|"]
    for row in results.get("raw", []):
        if not row.get("images_per_s"):
            lines.append(f"| {row.get('batch', '?')} | {row.get('status', 'error')}: {row.get('error', row.get('reason', '?'))} | | | | |")
            continue
        rounds = " / ".join(f"{v:.0f}" for v in row.get("rounds_per_s", []))
        lines.append(f"| {row['batch']} | {_fmt(row['images_per_s'], 1)} | {rounds} | {_fmt(row['ms_per_batch']['median'], 2)} | "
                     f"{_fmt((row.get('cpu_ms_per_image') or {}).get('total'), 2)} | {_fmt(row['resources']['cpu_percent'], 0)} |")
    return lines


def pipeline_table(results: Dict[str, Any]) -> List[str]:
    lines = ["| source | decode | cameras | batch | frames/s | per round | × raw, same batch | × offered | "
             "latency p50 / p99 ms | capture → subscriber p50 / p99 ms | CPU ms per frame | CPU % |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in results.get("full", []):
        head = f"| {row.get('transport', '?')} | {row.get('decoder', '?')} | {row.get('cameras', '?')} | {row.get('batch', '?')} |"
        if row.get("status", "ok") != "ok" or not row.get("frames_per_s"):
            why = row.get("reason") or row.get("error") or "; ".join(f"{k}: {v}" for k, v in (row.get("camera_errors") or {}).items()) or "no frames"
            lines.append(f"{head} {row.get('status', 'error')}: {why[:160]} | | | | | | | |")
            continue
        rounds = " / ".join(f"{v:.0f}" for v in row.get("rounds_per_s", []))
        lines.append(f"{head} {_fmt(row['frames_per_s'], 1)} | {rounds} | {_fmt(row.get('ratio_to_raw'))} | "
                     f"{_fmt(row.get('ratio_to_offered'))} | {_pair(row.get('latency_ms'))} | {_pair(row.get('delivered_ms'))} | "
                     f"{_fmt(row.get('appliance_cpu_ms_per_frame'), 2)} | {_fmt(row['resources']['cpu_percent'], 0)} |")
    return lines


def cpu_table(results: Dict[str, Any]) -> List[str]:
    lines = ["| source | cameras | NVDEC path, CPU ms per frame | CPU decode path, CPU ms per frame | CPU decode / NVDEC |",
             "|---|---|---|---|---|"]
    for item in results.get("cpu_comparison", []):
        lines.append(f"| {item['transport']} | {item['cameras']} | {_fmt(item['nvdec_cpu_ms'])} | {_fmt(item['ffmpeg_cpu_ms'])} | "
                     f"{_fmt(item['ffmpeg_over_nvdec'])} |")
    return lines


def targets_table(goals: Dict[str, Dict[str, Any]]) -> List[str]:
    names = {
        "throughput_vs_raw": f"full pipeline, {GOAL_CAMERAS} camera files, NVDEC / raw engine at batch {GOAL_CAMERAS}",
        "cpu_advantage": f"CPU per frame, {GOAL_CAMERAS} camera files: CPU decode path / NVDEC path",
        "throughput_vs_raw_engine_process": "the same, model.engine_process on (nvdec+engine)",
        "cpu_advantage_engine_process": "CPU per frame, CPU decode path / NVDEC with model.engine_process",
        "throughput_vs_raw_default": "the same, the default configuration (engine_process auto)",
    }
    lines = ["| goal | measured | wanted | met |", "|---|---|---|---|"]
    for key, goal in goals.items():
        met = {True: "yes", False: "no", None: "not measured"}[goal.get("met")]
        lines.append(f"| {names.get(key, key)} | {_fmt(goal.get('value'))} | {goal['goal']} | {met} |")
    return lines


def finish(results: Dict[str, Any], camera_fps: float) -> Dict[str, Any]:
    """Ratios, the CPU comparison and the goals added to ``results`` (in place, and returned)."""
    add_ratios(results, camera_fps)
    results["cpu_comparison"] = cpu_comparison(results.get("full", []))
    results["targets"] = targets(results)
    return results


def markdown(results: Dict[str, Any]) -> str:
    parts = ["#### Stand-in against ONNX Runtime, sample images", *parity_lines(results), "",
             "#### Raw engine (PyTorch FP16 stand-in, device input, outputs decoded on the GPU, kept boxes to host)", *raw_table(results), "",
             "#### Full pipeline, decode → letterbox → model → NMS → MQTT", *pipeline_table(results), "",
             "#### CPU per analysed frame, NVDEC against CPU decode", *cpu_table(results), "",
             "#### Goals", *targets_table(results.get("targets", {}))]
    return "\n".join(parts) + "\n"
