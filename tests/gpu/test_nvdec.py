"""decoder: nvdec on a real GPU: NVDEC output against software decoders, surfaces copied out before
reuse, no host copy from decoder to engine input, PyAV-fed streams, the camera, and throughput."""
from __future__ import annotations

import socket
import threading
import time

import numpy as np
import pytest

from edge_app.capture.video_decode.device_frames import FramePoolExhausted
from edge_app.capture.video_decode.nvdec_source import open_nvdec
from edge_app.config.source_spec import SourceKind, SourceSpec
from edge_app.cuda import open_device
from edge_app.detect.letterbox_gpu import GpuLetterbox
from edge_app.detect.nv12_reference import letterbox_nv12_reference
from edge_app.capture.gpu_image import DeviceNv12Image
from tests.gpu.counting import CountingDevice

pytestmark = pytest.mark.gpu

FRAMES = 60
TOLERANCE = 1.0 / 255.0 + 1e-6


def _open(device, spec, **kwargs):
    # each source gets its own handle on the fixture's GPU: its frame pool closes it at the end
    return open_nvdec(spec, device_opener=lambda index: open_device(device.adapter_name, index), **kwargs)


def _file(path) -> SourceSpec:
    return SourceSpec(SourceKind.FILE, str(path), live=False)


def _read_all(source, limit=10_000):
    frames = []
    while len(frames) < limit:
        frame = source.read()
        if frame is None:
            break
        frames.append(frame)
    return frames


def _software_nv12(path):
    """Every frame of ``path`` decoded by FFmpeg's software H.264 decoder, as packed NV12."""
    av = pytest.importorskip("av")
    out = []
    with av.open(str(path)) as container:
        for frame in container.decode(video=0):
            i420 = frame.to_ndarray(format="yuv420p")
            height, width = frame.height, frame.width
            nv12 = np.empty((height * 3 // 2, width), np.uint8)
            nv12[:height] = i420[:height]
            uv = nv12[height:].reshape(height // 2, width // 2, 2)
            uv[..., 0] = i420[height:height + height // 4].reshape(height // 2, width // 2)
            uv[..., 1] = i420[height + height // 4:].reshape(height // 2, width // 2)
            out.append(nv12)
    return out


@pytest.fixture(scope="module")
def reference_nv12(h264_clips):
    return _software_nv12(h264_clips[0])


def test_file_frames_equal_the_software_decoder_after_every_surface_was_reused(
        device, pynvvideocodec, h264_clips, reference_nv12, gpu_results):
    source = _open(device, _file(h264_clips[0]), max_frames=FRAMES + 4)
    try:
        frames = _read_all(source)  # all kept: surfaces were reused many times meanwhile
    finally:
        source.release()
    assert len(frames) == FRAMES == len(reference_nv12)
    assert all(isinstance(f, DeviceNv12Image) and (f.width, f.height) == (1920, 1080) for f in frames)
    assert all(f.downloads == 0 for f in frames)
    mismatched = [i for i, f in enumerate(frames) if not np.array_equal(f.nv12_host(), reference_nv12[i])]
    gpu_results.setdefault("nvdec", {})["frames_not_bit_exact_vs_ffmpeg_software"] = len(mismatched)
    # H.264 decoding is exact: NVDEC and FFmpeg give the same YUV, bit for bit
    assert mismatched == []
    assert not np.array_equal(frames[0].nv12_host(), frames[-1].nv12_host())  # a moving clip


@pytest.mark.parametrize("clip", ["h264", "hevc"])
def test_a_rewound_file_gives_the_same_frames_with_the_same_decoder(
        device, pynvvideocodec, h264_clips, clip, gpu_results, request):
    """A looping file starts over on the decoder it has (``NvdecSource.rewind``): every pass
    gives the file's frames bit for bit, and starting over costs far less than opening."""
    path = h264_clips[0] if clip == "h264" else request.getfixturevalue("hevc_clip")

    def downloaded(first):  # each frame to the host and dropped: the pool has 8 buffers
        pictures, frame = [], first
        while frame is not None:
            pictures.append(frame.nv12_host())
            frame = source.read()
        return pictures

    source = _open(device, _file(path), max_frames=8)
    try:
        decoder = source._decoder
        first_pass = downloaded(source.read())
        rewind_ms = []
        for _ in range(3):
            start_s = time.perf_counter()
            assert source.rewind()
            frame = source.read()
            rewind_ms.append((time.perf_counter() - start_s) * 1e3)
            frames = downloaded(frame)
            assert source._decoder is decoder
            assert len(frames) == len(first_pass) == FRAMES
            assert all(np.array_equal(a, b) for a, b in zip(frames, first_pass))
    finally:
        source.release()
    start_s = time.perf_counter()
    reopened = _open(device, _file(path))
    try:
        assert reopened.read() is not None
        open_ms = (time.perf_counter() - start_s) * 1e3
    finally:
        reopened.release()
    gpu_results.setdefault("nvdec", {})[f"{clip}_rewind_to_first_frame_ms"] = round(float(np.median(rewind_ms)), 1)
    gpu_results["nvdec"][f"{clip}_open_to_first_frame_ms"] = round(open_ms, 1)
    assert float(np.median(rewind_ms)) < open_ms


def test_hevc_file_frames_equal_the_software_decoder(device, pynvvideocodec, hevc_clip):
    source = _open(device, _file(hevc_clip), max_frames=FRAMES + 4)
    try:
        frames = _read_all(source)
    finally:
        source.release()
    reference = _software_nv12(hevc_clip)
    assert len(frames) == FRAMES == len(reference)
    assert all(np.array_equal(f.nv12_host(), reference[i]) for i, f in enumerate(frames))


def test_bgr_on_demand_matches_opencvs_decode(device, pynvvideocodec, h264_clips, gpu_results):
    import cv2

    capture = cv2.VideoCapture(str(h264_clips[0]))
    expected = []
    while True:
        ok, image = capture.read()
        if not ok:
            break
        expected.append(image)
    capture.release()
    source = _open(device, _file(h264_clips[0]))
    try:
        for index in range(FRAMES):
            frame = source.read()
            if index in (0, 29, 59):
                diff = np.abs(frame.bgr().astype(np.int16) - expected[index]).astype(np.float32)
                stats = {"mean": round(float(diff.mean()), 3), "p99": float(np.percentile(diff, 99)),
                         "max": float(diff.max())}
                gpu_results.setdefault("nvdec", {}).setdefault("bgr_vs_opencv_decode", {})[index] = stats
                # same YUV; OpenCV's FFmpeg converts with swscale, which rounds differently
                assert stats["mean"] < 1.5 and stats["p99"] <= 8, stats
                assert frame.downloads == 1
    finally:
        source.release()


def test_decoder_to_engine_input_makes_no_host_copy(device, pynvvideocodec, h264_clips, reference_nv12):
    counting = CountingDevice(device)
    letterbox = GpuLetterbox(counting, (640, 640), 1)
    out = device.alloc_device(letterbox.image_nbytes)
    source = _open(device, _file(h264_clips[0]), max_frames=32)
    try:
        frames = [source.read() for _ in range(30)]
        for frame in frames:
            letterbox([frame], out.ptr)
        assert counting.host_to_device == 0 and counting.device_to_host == 0
        assert all(f.downloads == 0 for f in frames) and source.pool.downloads == 0
        # and what reached the engine input is right (checked only now, downloading it)
        tensor = device.alloc_pinned((3, 640, 640), np.float32)
        device.memcpy_dtoh_async(tensor, out.ptr, letterbox.stream)
        letterbox.stream.synchronize()
        expected = letterbox_nv12_reference(reference_nv12[29], (640, 640))[0][0]
        assert np.abs(tensor - expected).max() <= TOLERANCE
    finally:
        source.release()


def test_mp4_demuxed_by_pyav_feeds_the_decoder(device, pynvvideocodec, h264_clips, reference_nv12):
    """The network path (PyAV demux -> PacketData) on the MP4: length-prefixed H.264 -> Annex B."""
    source = _open(device, SourceSpec(SourceKind.HTTP, str(h264_clips[0]), live=False), max_frames=FRAMES + 4)
    try:
        frames = _read_all(source)
    finally:
        source.release()
    assert len(frames) == FRAMES
    assert all(np.array_equal(f.nv12_host(), reference_nv12[i]) for i, f in enumerate(frames))


def _serve_once(path) -> int:
    """A TCP server that sends ``path`` to its first client, as a live camera would stream it."""
    server = socket.create_server(("127.0.0.1", 0))
    payload = path.read_bytes()

    def run():
        with server:
            conn, _ = server.accept()
            with conn:
                for start in range(0, len(payload), 64 << 10):
                    conn.sendall(payload[start:start + (64 << 10)])
                    time.sleep(0.002)

    threading.Thread(target=run, name="nvdec-test-stream", daemon=True).start()
    return server.getsockname()[1]


def test_live_mpegts_stream_over_tcp(device, pynvvideocodec, h264_clips, reference_nv12):
    port = _serve_once(h264_clips[1])
    source = _open(device, SourceSpec(SourceKind.HTTP, f"tcp://127.0.0.1:{port}", live=True), max_frames=FRAMES + 4)
    try:
        frames = _read_all(source)
        assert source.read() is None  # the stream ended: the camera would reconnect
    finally:
        source.release()
    assert len(frames) == FRAMES
    assert all(np.array_equal(f.nv12_host(), reference_nv12[i]) for i, f in enumerate(frames))


def test_pool_buffers_come_back_and_a_stuck_consumer_is_reported(device, pynvvideocodec, h264_clips):
    source = _open(device, _file(h264_clips[0]), max_frames=4)
    try:
        for _ in range(20):  # frames dropped at once: four buffers are plenty
            assert source.read() is not None
        assert source.pool.in_use == 0
        held = [source.read() for _ in range(4)]
        assert source.pool.in_use == 4
        with pytest.raises(FramePoolExhausted):
            source.read()
        del held
    finally:
        source.release()


@pytest.mark.parametrize("decoder", ["nvdec", "auto"])
def test_camera_streams_device_frames(device, pynvvideocodec, h264_clips, decoder):
    """The configured path: cameras[].decoder picks NVDEC (auto does on a dGPU host without a
    hardware GStreamer), and the camera hands on NV12 frames in device memory."""
    from edge_app.capture import CameraWorker, StreamState
    from edge_app.config.schema import CaptureConfig
    from edge_app.config.schema_cameras import CameraConfig

    worker = CameraWorker(CameraConfig(id="gpu", source=str(h264_clips[0]), decoder=decoder), CaptureConfig())
    worker.start()
    try:
        deadline_s = time.monotonic() + 20
        while worker.stats()["frames_captured"] < 10 and time.monotonic() < deadline_s:
            time.sleep(0.05)
        frame = worker.peek()
        assert worker.state in (StreamState.STREAMING, StreamState.STOPPED), worker.stats()
        assert frame is not None and isinstance(frame.image, DeviceNv12Image)
        assert (frame.width, frame.height) == (1920, 1080) and frame.image.downloads == 0
        assert frame.bgr().shape == (1080, 1920, 3) and frame.image.downloads == 1
    finally:
        worker.stop()


def test_throughput_one_decoder(device, pynvvideocodec, h264_clips, gpu_results, capsys):
    """Frames per second once the decoder runs (from its first frame on), and what opening costs."""
    letterbox = GpuLetterbox(device, (640, 640), 1)
    out = device.alloc_device(letterbox.image_nbytes)
    figures = {}
    for label, prepare in (("decode_copy", False), ("decode_copy_letterbox", True)):
        frames, running_s, first_frame_ms = 0, 0.0, []
        for _ in range(5):
            start_s = time.perf_counter()
            source = _open(device, _file(h264_clips[0]))
            try:
                frame = source.read()
                first_s = time.perf_counter()
                while frame is not None:
                    if prepare:
                        letterbox([frame], out.ptr)
                    frame = source.read()
                    frames += frame is not None
                running_s += time.perf_counter() - first_s
            finally:
                source.release()
            first_frame_ms.append((first_s - start_s) * 1e3)
        figures[f"{label}_fps"] = round(frames / running_s, 1)
        figures[f"{label}_open_to_first_frame_ms"] = round(float(np.median(first_frame_ms)), 1)
    gpu_results.setdefault("nvdec", {})["throughput_1080p_h264_one_decoder"] = figures
    with capsys.disabled():
        print(f"\n[nvdec on {device.name}] 1080p H.264, one decoder: {figures}")
    assert figures["decode_copy_fps"] > 30


def test_selftest_decode_check_passes_with_nvdec(pynvvideocodec, h264_clips, gpu_results):
    from edge_app.capture.video_decode.check import check_decoder

    result = check_decoder("nvdec", h264_clips[0], (1920, 1080), frames=30)
    gpu_results.setdefault("nvdec", {})["selftest_decode_check"] = result.detail
    assert result.ok, result.detail


@pytest.mark.parametrize("decoders", [2, 4, 8])
def test_throughput_parallel_decoders(device, pynvvideocodec, h264_clips, gpu_results, decoders, capsys):
    """One capture thread per decoder, as with that many cameras; frames dropped once copied out."""
    counts = [0] * decoders
    errors = []

    def camera(index):
        try:
            for _ in range(4):
                source = _open(device, _file(h264_clips[0]))
                try:
                    while source.read() is not None:
                        counts[index] += 1
                finally:
                    source.release()
        except Exception as err:  # reported by the assertion below
            errors.append(err)

    threads = [threading.Thread(target=camera, args=(i,), name=f"capture:nvdec{i}") for i in range(decoders)]
    start_s = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    elapsed_s = time.perf_counter() - start_s
    assert not errors and counts == [4 * FRAMES] * decoders, (errors, counts)
    fps = round(sum(counts) / elapsed_s, 1)
    gpu_results.setdefault("nvdec", {}).setdefault("parallel_decoders_total_fps_opening_included", {})[decoders] = fps
    with capsys.disabled():
        print(f"\n[nvdec on {device.name}] {decoders} decoders in parallel, 1080p H.264: {fps} fps in total")
