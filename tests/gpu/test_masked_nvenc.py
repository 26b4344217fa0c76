"""record: a privacy-masked recording re-encoded by NVENC (PyNvVideoCodec) on a real GPU.

The 1080p H.264 clip of the GPU tests (bus.jpg zooming, 60 frames, a keyframe every 30) goes
packet by packet through ``MaskedEncoder`` with the NVENC path and then, whole, through
``MaskedPacketSink`` into a real recorder; the output is decoded by FFmpeg's software decoder and
compared frame by frame with the decoded source: inside the masks black (or, blurred, far from
the source: PSNR under 25 dB), outside them close to it (PSNR over 30 dB), as the CPU test
(tests/record/test_masked_recording.py) does for x264. Skipped where PyNvVideoCodec is missing
or the GPU has no NVENC (the A100 and H100 have none).

    EDGE_APP_SHARED=/path/to/shared python -m pytest tests/gpu/test_masked_nvenc.py

The encode's CPU and wall time per second of video go to $EDGE_APP_GPU_RESULTS when it is set.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import List, Tuple

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

av = pytest.importorskip("av")
cv2 = pytest.importorskip("cv2")

# a rectangle and a triangle, in frame fractions (those of the CPU test)
RECT = ((0.05, 0.1), (0.45, 0.1), (0.45, 0.6), (0.05, 0.6))
TRIANGLE = ((0.6, 0.2), (0.95, 0.9), (0.55, 0.8))
BASE_WALL = 1_800_000_000.0


@pytest.fixture(scope="module")
def nvenc(pynvvideocodec):
    from edge_app.record.encoder_choice import nvenc_problem

    problem = nvenc_problem()
    if problem is not None:
        pytest.skip(f"no NVENC here: {problem}")
    return pynvvideocodec


def masks_of(style: str):
    from edge_app.privacy.masks import MaskShape, PrivacyMasks

    return PrivacyMasks([MaskShape(RECT, style), MaskShape(TRIANGLE, style)])


def parts(height: int, width: int) -> Tuple[np.ndarray, np.ndarray]:
    """(surely inside, surely outside) the masks: 4 px of slack either side of the edges."""
    canvas = np.zeros((height, width), dtype=np.uint8)
    for polygon in (RECT, TRIANGLE):
        cv2.fillPoly(canvas, [np.round(np.asarray(polygon) * [width, height]).astype(np.int32)], 255)
    kernel = np.ones((9, 9), dtype=np.uint8)
    return cv2.erode(canvas, kernel) > 0, cv2.dilate(canvas, kernel) == 0


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return 99.0 if mse == 0 else 10 * np.log10(255.0 ** 2 / mse)


def black(pixels: np.ndarray) -> bool:
    return pixels.max() <= 40 and pixels.mean() < 2


def demux(path: Path):
    from edge_app.capture.packets import EncodedPacket, StreamInfo

    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        ctx = stream.codec_context
        fps = float(stream.average_rate or 30)
        info = StreamInfo("cam1", ctx.name, ctx.width, ctx.height, stream.time_base, bytes(ctx.extradata or b""), fps)
        packets = [EncodedPacket(bytes(p), p.pts, p.dts, bool(p.is_keyframe),
                                 BASE_WALL + float(p.pts * stream.time_base), p.duration or 0)
                   for p in container.demux(stream) if p.size]
    return info, packets


def decoded_stream(data: bytes) -> List[np.ndarray]:
    decoder = av.CodecContext.create("h264", "r")
    frames = [f.to_ndarray(format="bgr24") for f in decoder.decode(av.Packet(data))]
    return frames + [f.to_ndarray(format="bgr24") for f in decoder.decode(None)]


def decoded_file(path: Path) -> List[np.ndarray]:
    with av.open(str(path)) as container:
        return [f.to_ndarray(format="bgr24") for f in container.decode(video=0)]


def check_masked(recorded: List[np.ndarray], source: List[np.ndarray], style: str) -> None:
    assert len(recorded) == len(source)
    height, width = source[0].shape[:2]
    inside, outside = parts(height, width)
    blurred = 0
    for index, (got, want) in enumerate(zip(recorded, source)):
        if style == "black":
            assert black(got[inside]), f"frame {index}: masked pixels were encoded"
        else:
            assert psnr(got[inside], want[inside]) < 25, f"frame {index}: the blurred mask shows the detail it hides"
            blurred += 1
        assert psnr(got[outside], want[outside]) > 30, f"frame {index}: the picture outside the masks is lost"
    assert style == "black" or blurred == len(source)


@pytest.mark.parametrize("style", ["black", "blur"])
def test_nvenc_encodes_every_frame_masked_with_the_source_keyframes(nvenc, h264_clips, gpu_results, style):
    from edge_app.record.encoder_choice import EncoderPath
    from edge_app.record.masked_encoder import EncoderSettings, MaskedEncoder

    info, packets = demux(h264_clips[0])
    encoder = MaskedEncoder(info, masks_of(style), EncoderSettings(path=EncoderPath.NVENC))
    assert encoder.path is EncoderPath.NVENC, "NVENC did not start: the encoder fell back to x264"
    cpu_s, wall_s = time.process_time(), time.perf_counter()
    out = [p for packet in packets for p in encoder.encode(packet)] + encoder.flush()
    cpu_s, wall_s = time.process_time() - cpu_s, time.perf_counter() - wall_s
    assert len(out) == len(packets)
    assert [p.keyframe for p in out] == [p.keyframe for p in packets]
    assert [p.wall_ts for p in out] == [p.wall_ts for p in packets]
    assert all(p.data.startswith((b"\x00\x00\x00\x01", b"\x00\x00\x01")) for p in out)
    check_masked(decoded_stream(b"".join(p.data for p in out)), decoded_file(h264_clips[0]), style)
    video_s = len(packets) / info.fps
    gpu_results[f"masked_nvenc_{style}_1080p"] = {"frames": len(out), "cpu_s_per_video_s": round(cpu_s / video_s, 3),
                                                  "wall_s_per_video_s": round(wall_s / video_s, 3)}


def test_a_masked_camera_recorded_through_nvenc_is_masked_in_the_file(nvenc, h264_clips, tmp_path):
    pytest.importorskip("pydantic")
    from edge_app.record.encoder_choice import EncoderPath
    from edge_app.record.masked_encoder import EncoderSettings
    from edge_app.record.masked_sink import MaskedPacketSink
    from edge_app.record.recorder import CameraRecorder
    from edge_app.config.schema_record import RecordSettings
    from edge_app.record.store import RecordingStore

    info, packets = demux(h264_clips[0])
    store = RecordingStore(tmp_path / "rec")
    recorder = CameraRecorder(store, RecordSettings("cam1", False, 2.0, 1.0, 300.0, True, 600.0),
                              free_bytes=lambda: 1 << 40, reserve_bytes=0, queue_packets=10_000).start()
    sink = MaskedPacketSink(recorder, masks_of("black"), EncoderSettings(path=EncoderPath.NVENC),
                            queue_packets=10_000)
    sink.stream_opened(info)
    for packet in packets:
        sink.packet(packet)
    sink.stream_closed("end of file")
    assert sink.wait_idle(120)
    recorder.stop(timeout_s=60)
    assert sink.stats().encoder == "nvenc" and sink.stats().packets_dropped == 0
    segments = store.segments("cam1", BASE_WALL - 1, BASE_WALL + 1000)
    assert len(segments) == 1
    check_masked(decoded_file(store.resolve(segments[0].path)), decoded_file(h264_clips[0]), "black")
