"""Where the motion check of a frame in device memory spends its CPU, part by part.

    PYTHONPATH=. python3 -m bench.gpu motion-parts [--size 1920x1080] [--calls 600] [--json out.json]

The check of an NVDEC frame (``MotionDetector.picture`` then ``detect``) is the picture, shrunk and
blurred on the GPU and copied back (``LumaShrinker``), and the check on the host. This times, on
the motion-gating bench's static noisy scene as a 1080p NV12 frame in device memory:

  check        the whole check, as a camera's capture thread runs it
  picture      the picture alone
  host_check   ``detect`` on a picture already on the host
  gpu_steps    the picture's driver calls alone: launch (arguments packed once), copy back, wait
  host_copy    the copy out of the pinned buffer the picture comes back in

Each part in wall ms, CPU ms of the calling thread, and CPU ms of the whole process (the CUDA
driver's own threads, which wake a thread that waits, are in the last only), per call, the
least of 3 runs of ``--calls``.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional

import numpy as np

from bench.common.provenance import NO_MODEL, collect, write_results


def per_call_ms(fn: Callable[[], object], calls: int, runs: int = 3) -> Dict[str, float]:
    """Wall, thread CPU and process CPU ms per call of ``fn``: the run of least thread CPU."""
    for _ in range(min(50, calls)):
        fn()
    best: Optional[Dict[str, float]] = None
    for _ in range(runs):
        wall_s, thread_s, process_s = time.perf_counter(), time.thread_time(), time.process_time()
        for _ in range(calls):
            fn()
        run = {"wall": time.perf_counter() - wall_s, "thread_cpu": time.thread_time() - thread_s,
               "process_cpu": time.process_time() - process_s}
        if best is None or run["thread_cpu"] < best["thread_cpu"]:
            best = run
    assert best is not None
    return {name: round(seconds * 1000.0 / calls, 4) for name, seconds in best.items()}


def measure(width: int, height: int, calls: int) -> Dict[str, Dict[str, float]]:
    from bench.cpu.motion_gating import device_static_frame
    from edge_app.cuda import open_device
    from edge_app.cuda.base import KernelArg, kernel_options_for, launch_grid_2d
    from edge_app.cuda.kernels.luma_shrink import KERNEL_SHRINK_BLUR_LUMA, SOURCE
    from edge_app.motion.detector import MotionDetector, picture_size

    device = open_device()
    image = device_static_frame(device, (width, height))  # the motion-gating bench's frame
    planes, stream = image.planes, device.create_stream()
    detector = MotionDetector()
    clock = [0.0]

    def check() -> object:
        clock[0] += 0.1
        return detector.detect(detector.picture(image), clock[0])

    picture = detector.picture(image)

    def host_check() -> object:
        clock[0] += 0.1
        return detector.detect(picture, clock[0])

    # the picture's driver calls, as LumaShrinker makes them
    size = picture_size(image)
    kernel = device.compile_kernel(SOURCE, KERNEL_SHRINK_BLUR_LUMA, kernel_options_for(device.compute_capability))
    out = device.alloc_device(size[0] * size[1] * 4)
    host = device.alloc_pinned((size[1], size[0]), np.float32)
    grid, block = launch_grid_2d(*size)
    packed = device.pack_args([KernelArg.ptr(planes.y_ptr), KernelArg.i32(planes.y_pitch), KernelArg.i32(width),
                               KernelArg.i32(height), KernelArg.ptr(out.ptr), KernelArg.i32(size[0]),
                               KernelArg.i32(size[1]), *[KernelArg.f32(t) for t in detector._blur_taps]])
    flat = host.reshape(-1)

    def gpu_steps() -> None:
        device.launch_packed(kernel, grid, block, packed, stream)
        device.memcpy_dtoh_async(flat, out.ptr, stream)
        stream.synchronize()

    parts = {"check": check, "picture": lambda: detector.picture(image), "host_check": host_check,
             "gpu_steps": gpu_steps, "host_copy": host.copy}
    result = {name: per_call_ms(fn, calls) for name, fn in parts.items()}
    result["device"] = {"name": device.name, "adapter": device.adapter_name}  # type: ignore[assignment]
    return result


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="1920x1080")
    parser.add_argument("--calls", type=int, default=600)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    width, height = (int(v) for v in args.size.split("x"))
    from edge_app.cuda import CudaError

    try:
        result = measure(width, height, args.calls)
    except (ImportError, CudaError) as err:
        parser.exit(2, f"motion-parts needs cuda-python or pycuda and an NVIDIA GPU: {err}\n")
    print("| part | wall ms | thread CPU ms | process CPU ms |\n|---|---|---|---|")
    for name, figures in result.items():
        if name != "device":
            print(f"| {name} | {figures['wall']} | {figures['thread_cpu']} | {figures['process_cpu']} |")
    if args.json is not None:
        write_results(args.json, {"args": {k: str(v) for k, v in vars(args).items()}, "parts_ms": result},
                      collect(NO_MODEL))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
