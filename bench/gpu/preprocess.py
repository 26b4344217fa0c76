"""Letterbox timing: the GPU kernel (through edge_app.cuda) against OpenCV on the CPU.

    PYTHONPATH=. python3 -m bench.gpu preprocess [--adapter cuda-python|pycuda] [--iterations 200] [--json out.json]

For each frame size it reports, in milliseconds per frame:
  gpu_total    host copy into pinned staging + H2D + kernel + synchronise (what preprocess() costs)
  gpu_kernel   the kernel alone (launched back to back, one synchronise at the end)
  cpu_letterbox edge_app's CPU path (cv2.resize into the canvas + numpy BGR->RGB, /255, CHW)
  cpu_resize   cv2.resize alone, for reference
Numbers depend on the machine; record where they were taken.
"""
from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import cv2
import numpy as np

from bench.common.provenance import NO_MODEL, collect, write_results

SIZES = {"720p": (720, 1280), "1080p": (1080, 1920), "4K": (2160, 3840)}


def _per_call_ms(fn: Callable[[], None], iterations: int, warmup: int = 5) -> float:
    for _ in range(warmup):
        fn()
    start_s = time.perf_counter()
    for _ in range(iterations):
        fn()
    return (time.perf_counter() - start_s) * 1000.0 / iterations


def measure(device, frame: np.ndarray, input_hw: Tuple[int, int] = (640, 640), iterations: int = 100) -> Dict[str, float]:
    """Milliseconds per frame for the GPU and CPU letterbox of ``frame``."""
    from edge_app.cuda import KernelArg, launch_grid_2d
    from edge_app.detect.letterbox_gpu import PAD_VALUE_F32, GpuLetterbox
    from edge_app.detect import Letterboxer, letterbox_meta
    from edge_app.detect.letterbox import resized_wh

    gpu = GpuLetterbox(device, input_hw, 1)
    out = device.alloc_device(gpu.image_nbytes)
    gpu_total = _per_call_ms(lambda: gpu([frame], out.ptr), iterations)

    # kernel alone, on the frame already staged in slot 0 by the calls above
    meta = letterbox_meta(frame.shape[:2], input_hw)
    new_w, new_h = resized_wh(meta.src_hw, meta.scale)
    height, width = input_hw
    src_h, src_w = frame.shape[:2]
    args = [KernelArg.ptr(gpu._slots[0].device.ptr), KernelArg.i32(src_w), KernelArg.i32(src_h), KernelArg.i32(src_w * 3),
            KernelArg.ptr(out.ptr), KernelArg.i32(width), KernelArg.i32(height), KernelArg.i32(new_w), KernelArg.i32(new_h),
            KernelArg.i32(meta.pad_xy[0]), KernelArg.i32(meta.pad_xy[1]), KernelArg.f32(PAD_VALUE_F32)]
    grid, block = launch_grid_2d(width, height)

    def kernels() -> None:
        for _ in range(10):
            device.launch(gpu._kernel, grid, block, args, gpu.stream)
        gpu.stream.synchronize()

    gpu_kernel = _per_call_ms(kernels, max(1, iterations // 10)) / 10.0

    cpu = Letterboxer(input_hw, max_batch=1, num_buffers=1)
    cpu_letterbox = _per_call_ms(lambda: cpu([frame]), max(10, iterations // 4))
    cpu_resize = _per_call_ms(lambda: cv2.resize(frame, (new_w, new_h), interpolation=cv2.INTER_LINEAR),
                              max(10, iterations // 4))
    return {"gpu_total": gpu_total, "gpu_kernel": gpu_kernel, "cpu_letterbox": cpu_letterbox, "cpu_resize": cpu_resize}


def run(adapter: Optional[str], iterations: int, sizes: Sequence[str]) -> Dict:
    from edge_app.cuda import open_device

    device = open_device(adapter)
    rng = np.random.default_rng(0)
    rows: List[Dict] = []
    try:
        for name in sizes:
            height, width = SIZES[name]
            frame = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
            rows.append({"frame": name, **{k: round(v, 3) for k, v in measure(device, frame, iterations=iterations).items()}})
        info = device.describe()
    finally:
        device.close()
    return {"device": info, "cpu": platform.processor() or platform.machine(), "cv2_threads": cv2.getNumThreads(),
            "opencv": cv2.__version__, "iterations": iterations, "results": rows}


def markdown(report: Dict) -> str:
    lines = ["| frame | GPU total ms | GPU kernel ms | CPU letterbox ms | CPU cv2.resize ms |", "|---|---|---|---|---|"]
    for row in report["results"]:
        lines.append(f"| {row['frame']} | {row['gpu_total']:.3f} | {row['gpu_kernel']:.3f} | "
                     f"{row['cpu_letterbox']:.3f} | {row['cpu_resize']:.3f} |")
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.gpu preprocess", description=__doc__.splitlines()[0])
    parser.add_argument("--adapter", choices=["cuda-python", "pycuda"], default=None)
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--sizes", nargs="*", default=list(SIZES), choices=list(SIZES))
    parser.add_argument("--json", default=None, help="also write the results here")
    args = parser.parse_args(argv)
    report = run(args.adapter, args.iterations, args.sizes)
    print(f"{report['device']['gpu']} via {report['device']['adapter']}; OpenCV {report['opencv']} "
          f"with {report['cv2_threads']} threads on {report['cpu']}")
    print(markdown(report))
    if args.json:
        write_results(Path(args.json), report, collect(NO_MODEL))
    return 0
