"""decoder: nvdec in decoder processes, on a real GPU: frames handed over in CUDA IPC memory are
the pictures the in-process decoder gives, and decoders in processes are not serialised."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from edge_app.capture.video_decode.child_process import DecodeProcessOpener
from edge_app.capture.video_decode.nvdec_source import open_nvdec
from edge_app.config.schema import CaptureConfig
from edge_app.config.source_spec import SourceKind, SourceSpec
from edge_app.capture.gpu_image import DeviceNv12Image

pytestmark = pytest.mark.gpu


def _spec(path) -> SourceSpec:
    return SourceSpec(SourceKind.FILE, str(path), live=False)


def test_frames_from_a_decoder_process_equal_the_in_process_decoders(pynvvideocodec, h264_clips):
    opener = DecodeProcessOpener()
    source = opener(_spec(h264_clips[0]), CaptureConfig())
    reference = open_nvdec(_spec(h264_clips[0]))
    try:
        count = 0
        while True:
            mine, theirs = source.read(), reference.read()
            assert (mine is None) == (theirs is None)
            if mine is None:
                break
            assert isinstance(mine, DeviceNv12Image)
            if count % 10 == 0:
                np.testing.assert_array_equal(mine.nv12_host(), theirs.nv12_host())
            count += 1
        assert count == 60
        process = source._child.process
        source.release()
        again = opener(_spec(h264_clips[0]), CaptureConfig())  # loop: true reopens in the same process
        assert again._child.process is process and again.read() is not None
        again.release()
    finally:
        reference.release()
        opener.close()


def test_frames_outlive_their_decoder_process(pynvvideocodec, h264_clips):
    opener = DecodeProcessOpener()
    source = opener(_spec(h264_clips[0]), CaptureConfig())
    first = source.read()
    expected = first.nv12_host().copy()
    source.release()
    opener.close()
    time.sleep(0.5)
    np.testing.assert_array_equal(first.nv12_host(), expected)


def test_a_held_frame_keeps_its_pixels_while_the_decoder_goes_on(pynvvideocodec, h264_clips):
    """The frame is the decoder process's slot itself: holding it keeps the slot from being
    written again, while the process goes on in the other slots."""
    opener = DecodeProcessOpener()
    source = opener(_spec(h264_clips[0]), CaptureConfig())
    reference = open_nvdec(_spec(h264_clips[0]))
    try:
        held, expected = source.read(), reference.read().nv12_host().copy()
        for _ in range(40):  # more pictures than slots: every other slot is reused
            assert source.read() is not None
        np.testing.assert_array_equal(held.nv12_host(), expected)
    finally:
        source.release()
        reference.release()
        opener.close()


@pytest.mark.parametrize("cameras", [1, 8])
def test_throughput_of_decoder_processes(pynvvideocodec, h264_clips, gpu_results, cameras, capsys):
    """One thread per camera reading from its decoder process, as the appliance does."""
    counts, errors = [0] * cameras, []
    window_s = 3.0
    ready = threading.Barrier(cameras + 1)

    def camera(index):
        opener = DecodeProcessOpener()
        try:
            source = opener(_spec(h264_clips[0]), CaptureConfig())
            ready.wait()
            end_s = time.monotonic() + window_s
            while time.monotonic() < end_s:
                if source.read() is None:
                    source.release()
                    source = opener(_spec(h264_clips[0]), CaptureConfig())
                    continue
                counts[index] += 1
            source.release()
        except Exception as err:
            errors.append(err)
        finally:
            opener.close()

    threads = [threading.Thread(target=camera, args=(i,), name=f"capture:cam{i}") for i in range(cameras)]
    for thread in threads:
        thread.start()
    ready.wait(120)
    for thread in threads:
        thread.join(60)
    assert not errors, errors
    fps = round(sum(counts) / window_s, 1)
    gpu_results.setdefault("nvdec", {}).setdefault("decoder_processes_total_fps", {})[cameras] = fps
    with capsys.disabled():
        print(f"\n[nvdec] {cameras} camera(s) in decoder processes: {fps} frames/s in total")
    assert fps > 30
