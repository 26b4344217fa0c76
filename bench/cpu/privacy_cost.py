"""What privacy masks cost: on the snapshot / live path per 1080p frame, and the recording re-encode per camera.

    python -m bench.cpu privacy-cost [--frames 200] [--live-fps 10] [--record-seconds 10] [--record-fps 10]
                                     [--encoder x264|nvenc|nvv4l2h264enc] [--json PATH]

Snapshot / live path: one masked copy of a 1920x1080 BGR frame (what ``MaskedImage`` makes the
first time a snapshot, an event snapshot or a live-view part reads the frame), for black and for
blurred masks covering about a fifth of the picture, against the JPEG encode the same read pays
anyway. CPU time per frame (``time.process_time``) and, at ``--live-fps`` frames sent a second,
the share of one core; the budget is 1 % per camera.

Recording: ``--record-seconds`` of a 1080p H.264 pattern (ffmpeg ``testsrc2``, a keyframe a
second) re-encoded by ``MaskedEncoder`` at the source height and at 720p with ``--encoder`` (x264:
libx264 veryfast, zerolatency, the default; nvenc: PyNvVideoCodec on a dGPU; nvv4l2h264enc: a
Jetson Orin NX / AGX): CPU seconds per second of video, i.e. cores one camera keeps busy at
``--record-fps`` (decoding, masking and the colour conversion stay on the CPU on every path), and
wall seconds per second of video. The encoder really used is recorded: a hardware encoder that
does not start would fall back to x264, so the run stops instead. ``--record-seconds 0`` leaves it out.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np

from bench.common.provenance import NO_MODEL, collect, write_results
from edge_app.detect.annotate import encode_jpeg
from edge_app.privacy.masks import MaskShape, PrivacyMasks

BUDGET_PERCENT_OF_CORE = 1.0
WIDTH, HEIGHT = 1920, 1080
#: a neighbour's window (a rectangle) and a strip of street (a quadrilateral): about 20 % of the frame
SHAPES = (((0.05, 0.05), (0.3, 0.05), (0.3, 0.4), (0.05, 0.4)),
          ((0.55, 0.75), (1.0, 0.7), (1.0, 1.0), (0.5, 1.0)))


def _frame() -> np.ndarray:
    # a photo-like frame: smooth gradients with noise (a JPEG of flat colour would flatter the encode)
    rng = np.random.default_rng(7)
    ys, xs = np.mgrid[0:HEIGHT, 0:WIDTH]
    base = np.stack([(xs * 255 // WIDTH), (ys * 255 // HEIGHT), ((xs + ys) * 255 // (WIDTH + HEIGHT))], axis=-1)
    return np.clip(base + rng.normal(0, 12, base.shape), 0, 255).astype(np.uint8)


def _cpu_ms(action, frames: int) -> float:
    action()  # the first call draws the masks for this size
    start_s = time.process_time()
    for _ in range(frames):
        action()
    return (time.process_time() - start_s) * 1000.0 / frames


def snapshot_path(frames: int, live_fps: float) -> Dict[str, object]:
    image = _frame()
    result: Dict[str, object] = {"frame": f"{WIDTH}x{HEIGHT}", "frames": frames, "live_fps": live_fps}
    jpeg_ms = _cpu_ms(lambda: encode_jpeg(image, 85), max(10, frames // 4))
    result["jpeg_encode_ms"] = round(jpeg_ms, 3)
    for style in ("black", "blur"):
        masks = PrivacyMasks([MaskShape(shape, style) for shape in SHAPES])
        ms = _cpu_ms(lambda: masks.apply(image), frames)
        result[style] = {"covered_percent": round(100 * masks.rendered(HEIGHT, WIDTH).covered_fraction, 1),
                         "mask_ms_per_frame": round(ms, 3),
                         "percent_of_jpeg_encode": round(100 * ms / jpeg_ms, 1),
                         "percent_of_one_core": round(ms * live_fps / 10.0, 3)}
    return result


def recording(seconds: float, fps: int, encoder_path: str = "x264") -> Dict[str, object]:
    from edge_app.capture.packets import EncodedPacket, StreamInfo
    from edge_app.record.encoder_choice import EncoderPath
    from edge_app.record.masked_encoder import EncoderSettings, MaskedEncoder
    import av

    path = EncoderPath(encoder_path)
    out: Dict[str, object] = {"source": f"{WIDTH}x{HEIGHT} H.264 testsrc2", "seconds": seconds, "fps": fps,
                              "encoder": path.value}
    with tempfile.TemporaryDirectory() as folder:
        clip = Path(folder) / "source.mp4"
        subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                        f"testsrc2=size={WIDTH}x{HEIGHT}:rate={fps}", "-t", str(seconds), "-pix_fmt", "yuv420p",
                        "-c:v", "libx264", "-g", str(fps), "-bf", "0", str(clip)], check=True)
        with av.open(str(clip)) as container:
            stream = container.streams.video[0]
            ctx = stream.codec_context
            info = StreamInfo("bench", ctx.name, ctx.width, ctx.height, stream.time_base,
                              bytes(ctx.extradata or b""), float(fps))
            packets = [EncodedPacket(bytes(p), p.pts, p.dts, p.is_keyframe, float(p.pts * stream.time_base),
                                     p.duration or 0) for p in container.demux(stream) if p.size]
    masks = PrivacyMasks([MaskShape(shape) for shape in SHAPES])
    for name, height in (("source_height", None), ("720p", 720)):
        encoder = MaskedEncoder(info, masks, EncoderSettings(height_px=height, path=path))
        if encoder.path is not path:
            raise SystemExit(f"the {path.value} encoder did not start here (see the log); nothing measured")
        start_s, wall_s = time.process_time(), time.perf_counter()
        written = sum(len(encoder.encode(p)) for p in packets) + len(encoder.flush())
        cpu_s, wall = time.process_time() - start_s, time.perf_counter() - wall_s
        video_s = len(packets) / fps
        out[name] = {"size": f"{encoder.width_px}x{encoder.height_px}", "frames": written,
                     "cpu_s_per_video_s": round(cpu_s / video_s, 3), "wall_s_per_video_s": round(wall / video_s, 3),
                     "cores_per_camera": round(cpu_s / video_s, 3)}
    return out


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=200)
    parser.add_argument("--live-fps", type=float, default=10.0)
    parser.add_argument("--record-seconds", type=float, default=10.0)
    parser.add_argument("--record-fps", type=int, default=10)
    parser.add_argument("--encoder", choices=["x264", "nvenc", "nvv4l2h264enc"], default="x264",
                        help="the recording re-encode's encoder (x264 runs everywhere)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    result = {"snapshot_path": snapshot_path(args.frames, args.live_fps),
              "budget_percent_of_one_core": BUDGET_PERCENT_OF_CORE}
    if args.record_seconds > 0:
        result["recording"] = recording(args.record_seconds, args.record_fps, args.encoder)
    print(json.dumps(result, indent=2))
    if args.json:
        write_results(args.json, result, collect(NO_MODEL))
    worst = max(result["snapshot_path"][s]["percent_of_one_core"] for s in ("black", "blur"))
    return 0 if worst <= BUDGET_PERCENT_OF_CORE else 1


if __name__ == "__main__":
    sys.exit(main())
