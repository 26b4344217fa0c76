"""``python -m bench.gpu COMMAND``: the benchmark on an NVIDIA GPU (docs/gpu-benchmark.md)."""
from __future__ import annotations

import sys

from bench.common.commands import Command, run_command

DESCRIPTION = "The benchmark on an NVIDIA GPU (docs/gpu-benchmark.md)."
COMMANDS = {
    "pipeline": Command("bench.gpu.pipeline", "raw engine and the whole appliance, NVDEC against CPU decoding, files and RTSP"),
    "decode-scaling": Command("bench.gpu.decode_scaling", "NVDEC decoding alone: threads, processes, decoder processes"),
    "stage-waits": Command("bench.gpu.stage_waits", "the model stage's steps, wall time against CPU time"),
    "motion-parts": Command("bench.gpu.motion_parts", "the motion check of a device frame, part by part"),
    "preprocess": Command("bench.gpu.preprocess", "the GPU letterbox against OpenCV on the CPU"),
    "rtsp-serve": Command("bench.gpu.rtsp_serve", "a small RTSP server for machines without gst-rtsp-server"),
}

if __name__ == "__main__":
    sys.exit(run_command("python -m bench.gpu", DESCRIPTION, COMMANDS))
