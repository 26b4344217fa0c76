"""A camera with privacy masks records a re-encode with the masks burnt in (x264, the CPU path).

Real clips (the walking people of tests/support/media.py, H.264; the record tests' H.265 pattern
with B-frames) are fed packet by packet through ``MaskedPacketSink`` into a real recorder; the
files it indexes are decoded with PyAV and compared, frame by frame, with the decoded source:
inside the mask black (or, blurred, far from the source), outside the mask close to it (PSNR).
"""
from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path
from typing import List, Optional, Tuple

import av
import cv2
import numpy as np
import pytest

from edge_app.capture.packets import StreamInfo
from edge_app.config.schema_privacy import CameraPrivacyConfig
from edge_app.record.masked_encoder import EncoderSettings, MaskedEncoder, output_size
from edge_app.record.encoder_choice import EncoderChoice, EncoderPath, nvenc_problem
from edge_app.record.masked_sink import MaskedPacketSink, MaskedSinks, MaskedSinkStats
from edge_app.record.recorder import CameraRecorder
from edge_app.record.store import RecordingStore
from edge_app.privacy.masks import PrivacyMasks
from tests.record.feeding import PLENTY_FREE, settings
from tests.record.gst_standin import install_gst_standin
from tests.record.media import BASE_WALL, demux, ffprobe

# a rectangle and a triangle, in frame fractions
RECT = [[0.05, 0.1], [0.45, 0.1], [0.45, 0.6], [0.05, 0.6]]
TRIANGLE = [[0.6, 0.2], [0.95, 0.9], [0.55, 0.8]]


def masks_of(style: str) -> PrivacyMasks:
    privacy = CameraPrivacyConfig(masks=[{"polygon": RECT, "style": style}, {"polygon": TRIANGLE, "style": style}])
    return PrivacyMasks.from_config(privacy)


def parts(height: int, width: int) -> Tuple[np.ndarray, np.ndarray]:
    """(surely inside, surely outside) the masks at this size: 4 px of slack either side of the edges
    (the encoder's blocks smear an edge by a few pixels)."""
    canvas = np.zeros((height, width), dtype=np.uint8)
    for polygon in (RECT, TRIANGLE):
        points = np.round(np.asarray(polygon) * [width, height]).astype(np.int32)
        cv2.fillPoly(canvas, [points], 255)
    kernel = np.ones((9, 9), dtype=np.uint8)
    inside = cv2.erode(canvas, kernel) > 0
    outside = cv2.dilate(canvas, kernel) == 0
    return inside, outside


def black(pixels: np.ndarray) -> bool:
    """Black as an encoder leaves it: a few grey levels of ringing near the mask's edge at most,
    nothing like the picture it hides."""
    return pixels.max() <= 40 and pixels.mean() < 2


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return 99.0 if mse == 0 else 10 * np.log10(255.0 ** 2 / mse)


def decoded(path: Path, size: Optional[Tuple[int, int]] = None) -> List[np.ndarray]:
    """Every frame of ``path`` as BGR in display order, scaled to ``size`` (width, height) if given."""
    with av.open(str(path)) as container:
        frames = [f.to_ndarray(format="bgr24") for f in container.decode(video=0)]
    if size is not None:
        frames = [cv2.resize(f, size, interpolation=cv2.INTER_AREA) for f in frames]
    return frames


def record_masked(store: RecordingStore, info: StreamInfo, packets, masks: PrivacyMasks,
                  encoder: EncoderSettings = EncoderSettings(), events: bool = False):
    recorder = CameraRecorder(store, settings(events=events, continuous=True, segment_s=600.0),
                              free_bytes=lambda: PLENTY_FREE, reserve_bytes=0, queue_packets=100_000).start()
    sink = MaskedPacketSink(recorder, masks, encoder, queue_packets=100_000)
    sink.stream_opened(info)
    for packet in packets:
        sink.packet(packet)
    sink.stream_closed("end of file")
    assert sink.wait_idle(120)
    recorder.stop(timeout_s=60)
    return sink, recorder


@pytest.fixture(scope="module")
def walking_stream(walking_clip):
    return walking_clip.path, demux(walking_clip.path, "cam1")


@pytest.mark.parametrize("style", ["black", "blur"])
def test_every_recorded_frame_is_masked_inside_and_faithful_outside(tmp_path, walking_stream, style):
    path, (info, packets) = walking_stream
    store = RecordingStore(tmp_path / "rec")
    sink, recorder = record_masked(store, info, packets, masks_of(style))
    assert sink.dropped == 0 and recorder.status().unavailable is None
    segments = store.segments("cam1", BASE_WALL - 1, BASE_WALL + 1000)
    assert len(segments) == 1
    recorded_path = store.resolve(segments[0].path)
    probe = ffprobe(recorded_path)
    assert probe.codec == "h264" and probe.errors == ""
    recorded = decoded(recorded_path)
    source = decoded(path)
    assert len(recorded) == len(source) == len(packets)
    inside, outside = parts(info.height_px, info.width_px)
    worst_outside, blurred = 99.0, 0
    for index, (got, want) in enumerate(zip(recorded, source)):
        if style == "black":
            assert black(got[inside]), f"frame {index}: masked pixels were recorded"
        elif want[inside].std() > 20:  # the people are inside the mask (the empty canvas has nothing to blur)
            assert psnr(got[inside], want[inside]) < 25, f"frame {index}: the mask shows the detail it hides"
            blurred += 1
        worst_outside = min(worst_outside, psnr(got[outside], want[outside]))
    assert worst_outside > 30, worst_outside
    assert style == "black" or blurred >= len(source) // 3
    # the file is indexed like a stream copy's: its span is the source's
    assert segments[0].start == pytest.approx(BASE_WALL, abs=1e-3)
    assert segments[0].end == pytest.approx(packets[-1].wall_ts + 1 / info.fps, abs=0.1)


def test_an_export_of_a_masked_camera_is_masked_in_every_frame(tmp_path, walking_stream):
    path, (info, packets) = walking_stream
    store = RecordingStore(tmp_path / "rec")
    record_masked(store, info, packets, masks_of("black"))
    exported = tmp_path / "export.mp4"
    start, end = packets[5].wall_ts, packets[-5].wall_ts
    exported.write_bytes(b"".join(store.export_stream("cam1", start, end)))
    frames = decoded(exported)
    inside, outside = parts(info.height_px, info.width_px)
    assert len(frames) >= len(packets) - 20
    source = decoded(path)
    for index, frame in enumerate(frames):
        assert black(frame[inside]), f"exported frame {index} shows the masked area"
    # outside the mask each exported frame is a frame of the source (the export starts at a keyframe
    # before its start, and the walking clip repeats its empty canvas: the best match is taken)
    for index in (0, len(frames) // 2, len(frames) - 1):
        assert max(psnr(want[outside], frames[index][outside]) for want in source) > 30, f"exported frame {index}"


def test_a_clip_at_a_configured_height_is_scaled_and_masked(tmp_path, walking_stream):
    path, (info, packets) = walking_stream
    store = RecordingStore(tmp_path / "rec")
    record_masked(store, info, packets, masks_of("black"), EncoderSettings(height_px=360))
    segment = store.segments("cam1", BASE_WALL - 1, BASE_WALL + 1000)[0]
    width, height = output_size(info.width_px, info.height_px, 360)
    recorded = decoded(store.resolve(segment.path))
    source = decoded(path, (width, height))
    assert recorded[0].shape == (height, width, 3) == (360, 640, 3)
    inside, outside = parts(height, width)
    for index, (got, want) in enumerate(zip(recorded, source)):
        assert black(got[inside]), f"frame {index}"
        assert psnr(got[outside], want[outside]) > 30, f"frame {index}"


def test_hevc_with_b_frames_becomes_masked_h264_with_the_same_keyframes(tmp_path, encoded_files):
    info, packets = demux(encoded_files["hevc"], "cam1")
    masks = masks_of("black")
    encoder = MaskedEncoder(info, masks)
    out = [p for packet in packets for p in encoder.encode(packet)] + encoder.flush()
    assert len(out) == len(packets)
    # keyframes where the source has them: clips and segments still start where they did
    assert [p.pts for p in out if p.keyframe] == sorted(p.pts for p in packets if p.keyframe)
    assert [p.wall_ts for p in out] == sorted(p.wall_ts for p in packets)
    store = RecordingStore(tmp_path / "rec")
    record_masked(store, info, packets, masks)
    segment = store.segments("cam1", BASE_WALL - 1, BASE_WALL + 1000)[0]
    recorded = decoded(store.resolve(segment.path))
    source = decoded(encoded_files["hevc"])
    inside, outside = parts(info.height_px, info.width_px)
    assert len(recorded) == len(source)
    for index, (got, want) in enumerate(zip(recorded, source)):
        assert black(got[inside]), f"frame {index}"
        assert psnr(got[outside], want[outside]) > 30, f"frame {index}"


def test_an_event_clip_of_a_masked_camera_is_masked_too(tmp_path, walking_stream):
    path, (info, packets) = walking_stream
    store = RecordingStore(tmp_path / "rec")
    recorder = CameraRecorder(store, settings(events=True, pre_s=0.5, post_s=0.5), free_bytes=lambda: PLENTY_FREE,
                              reserve_bytes=0, queue_packets=100_000).start()
    sink = MaskedPacketSink(recorder, masks_of("black"), queue_packets=100_000)
    sink.stream_opened(info)
    middle = packets[len(packets) // 2].wall_ts
    for packet in packets:
        if abs(packet.wall_ts - middle) < 1e-6:
            assert sink.wait_idle(60)  # the event starts when its frame has been seen, as in the appliance
            recorder.event_started("ev1", "cam1", middle)
            recorder.event_ended("ev1", middle + 0.5)
        sink.packet(packet)
    sink.stream_closed("end of file")
    assert sink.wait_idle(120)
    recorder.stop(timeout_s=60)
    clip = store.clip("ev1")
    assert clip is not None and clip.complete
    recorded = decoded(store.resolve(clip.path))
    inside, _ = parts(info.height_px, info.width_px)
    assert len(recorded) >= 5
    assert all(black(frame[inside]) for frame in recorded)


def test_a_camera_keeps_its_masked_sink_across_restarts_and_gets_a_new_one_for_new_masks(walking_stream):
    _, (info, packets) = walking_stream

    class Recorder:
        def __init__(self):
            self.calls = []

        def stream_opened(self, info):
            self.calls.append("opened")

        def packet(self, packet):
            self.calls.append("packet")

        def stream_closed(self, reason):
            self.calls.append("closed")

        def unavailable(self, reason):
            self.calls.append("unavailable")

    recorder, masks = Recorder(), masks_of("black")
    sinks = MaskedSinks()
    assert sinks.wrap("cam1", None, masks, None) is None and sinks.wrap("cam1", recorder, None, None) is recorder
    first = sinks.wrap("cam1", recorder, masks, None)
    assert isinstance(first, MaskedPacketSink) and sinks.wrap("cam1", recorder, masks, None) is first
    first.stream_opened(info)
    for packet in packets[:20]:
        first.packet(packet)
    first.stream_closed("camera restarted")
    # new masks: a new sink, but only once the old one's connection has reached the recorder whole
    blur = masks_of("blur")
    second = sinks.wrap("cam1", recorder, blur, None)
    assert second is not first and recorder.calls == ["opened"] + ["packet"] * 20 + ["closed"]
    assert sinks.wrap("cam1", recorder, blur, None) is second
    assert sinks.wrap("cam1", recorder, blur, 480) is not second


@pytest.mark.parametrize("width, height, wanted, size", [
    (1920, 1080, None, (1920, 1080)), (1920, 1080, 720, (1280, 720)), (1920, 1080, 2160, (1920, 1080)),
    (1280, 720, 480, (854, 480)), (810, 1080, 540, (404, 540)),
])
def test_output_size_keeps_the_aspect_and_never_grows(width, height, wanted, size):
    assert output_size(width, height, wanted) == size


def _hardware_present(path: EncoderPath) -> bool:
    if path is EncoderPath.NVENC:
        return nvenc_problem() is None
    return shutil.which("gst-launch-1.0") is not None


@pytest.mark.parametrize("path", [EncoderPath.NVENC, EncoderPath.JETSON_GST])
def test_a_hardware_encoder_that_will_not_start_leaves_the_camera_on_x264_never_a_copy(tmp_path, walking_stream,
                                                                                       path):
    if _hardware_present(path):
        pytest.skip(f"{path.value} may start on this machine: tests/gpu/test_masked_nvenc.py covers it")
    _, (info, packets) = walking_stream
    store = RecordingStore(tmp_path / "rec")
    sink, recorder = record_masked(store, info, packets[:40], masks_of("black"), EncoderSettings(path=path))
    assert sink.stats() == MaskedSinkStats(encoder="x264", packets_dropped=0, packets_encoded=40)
    segment = store.segments("cam1", BASE_WALL - 1, BASE_WALL + 1000)[0]
    inside, _ = parts(info.height_px, info.width_px)
    assert all(black(frame[inside]) for frame in decoded(store.resolve(segment.path)))


def test_the_sinks_choose_the_encoder_once_and_report_each_masked_camera(walking_stream):
    asked = []

    def choose():
        asked.append(1)
        return EncoderChoice(EncoderPath.NVENC, "the GPU has NVENC")

    class Recorder:
        def stream_opened(self, info): pass
        def packet(self, packet): pass
        def stream_closed(self, reason): pass
        def unavailable(self, reason): pass

    sinks = MaskedSinks(choose=choose)
    recorder = Recorder()
    assert sinks.wrap("plain", recorder, None, None) is recorder and asked == []  # no masked camera: nothing probed
    masked = sinks.wrap("yard", recorder, masks_of("black"), None)
    sinks.wrap("gate", recorder, masks_of("blur"), 480)
    assert asked == [1]
    assert sinks.stats("plain") is None
    assert sinks.stats("yard") == MaskedSinkStats(encoder="nvenc", packets_dropped=0, packets_encoded=0)
    assert masked is not None


def test_a_re_encode_that_falls_behind_counts_what_it_drops(walking_stream):
    _, (info, packets) = walking_stream
    entered, release = threading.Event(), threading.Event()

    class StuckRecorder:  # its stream_opened holds the re-encode thread, as a slow disk would
        def stream_opened(self, info):
            entered.set()
            release.wait(30)

        def packet(self, packet): pass
        def stream_closed(self, reason): pass
        def unavailable(self, reason): pass

    sink = MaskedPacketSink(StuckRecorder(), masks_of("black"), queue_packets=2)
    sink.stream_opened(info)
    assert entered.wait(30)
    for packet in packets[:10]:
        sink.packet(packet)
    release.set()
    # the queue holds 2: the rest of that GOP is dropped and counted
    assert sink.stats().packets_dropped == 8
    assert sink.wait_idle(30)


def test_a_jetson_encoder_that_dies_mid_recording_is_followed_by_x264_from_the_next_keyframe(
        tmp_path, walking_stream, monkeypatch, caplog):
    """The Jetson path with a stand-in gst-launch-1.0 (tests/record/gst_standin.py; there is no
    Jetson here) that ends in the middle of a GOP: the recording goes on with x264 from the next source
    keyframe (the same segment goes on: the stream's size and codec are the same), masked in every frame; nothing is written unmasked and the camera
    does not stay without recording until it reconnects."""
    _, (info, packets) = walking_stream
    keyframes = [i for i, p in enumerate(packets) if p.keyframe]
    gop = keyframes[1]
    died_after = 2 * gop + 2  # in the middle of the third GOP
    install_gst_standin(tmp_path, die_after_frames=died_after)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    store = RecordingStore(tmp_path / "rec")
    used = packets[:5 * gop]
    sink, recorder = record_masked(store, info, used, masks_of("black"), EncoderSettings(path=EncoderPath.JETSON_GST))
    assert sink.stats().encoder == "x264"
    assert "nvv4l2h264enc stopped" in caplog.text and "goes on with x264" in caplog.text
    segments = store.segments("cam1", BASE_WALL - 1, BASE_WALL + 1000)
    assert segments and all(ffprobe(store.resolve(s.path)).errors == "" for s in segments), segments
    inside, _ = parts(info.height_px, info.width_px)
    frames = [frame for segment in segments for frame in decoded(store.resolve(segment.path))]
    assert all(black(frame[inside]) for frame in frames)
    # what was lost: the pictures from the encoder's end to the next source keyframe, no more
    assert len(frames) == len(used) - (3 * gop - died_after), (len(frames), len(used), gop, died_after)
