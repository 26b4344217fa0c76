"""``decoder: nvdec``: video decoded by the GPU's NVDEC engines through PyNvVideoCodec.

For NVIDIA dGPU hosts (x86 or ARM servers); Jetson Orin has no PyNvVideoCodec. Files go through
PyNvVideoCodec's own demuxer, which is made for them; RTSP and HTTP streams are demuxed by PyAV
(``pyav.demux``) and each packet is handed to the decoder.

Decoded pictures are NV12 in device memory, in decoder surfaces that a later decode reuses. Each
one is copied device-to-device into a buffer of a ``DeviceFramePool`` before the next decode and
handed on as a ``DeviceNv12Image``: the GPU letterbox kernel reads it where it lies, so the path
from decoder to engine input has no host copy. Snapshots and live view download a frame only
when they ask for its pixels.

Errors mean what they mean for the OpenCV path, so reconnects and the watchdog work unchanged:
``SourceError`` when this can never work (no PyNvVideoCodec, no GPU, a codec or source kind
NVDEC cannot take), ``SourceUnavailable`` when it may work later (file missing, stream offline),
and a read that returns None or raises when a stream ends or breaks.
"""
from __future__ import annotations

import collections
import logging
import os
from typing import Any, Callable, Deque, Optional

import numpy as np

from edge_app.capture.pyav.demux import NVDEC_CODECS, AvDemuxer
from edge_app.capture.packets import PacketSink
from edge_app.capture.video_decode.device_frames import DEFAULT_MAX_FRAMES, DeviceFramePool
from edge_app.capture.sources import SourceError, SourceUnavailable, frame_too_large
from edge_app.config.schema import CaptureConfig
from edge_app.config.source_spec import SourceKind, SourceSpec
from edge_app.cuda import CudaError, open_device
from edge_app.capture.gpu_image import DeviceNv12Image, Nv12Planes
from edge_app.config.redact import mask_secrets

log = logging.getLogger(__name__)

NVDEC_KINDS = (SourceKind.FILE, SourceKind.RTSP, SourceKind.HTTP)

MISSING_MESSAGE = ("decoder nvdec needs PyNvVideoCodec and an NVIDIA GPU with NVDEC (not a Jetson): "
                   "pip install 'edge-app[nvdec]'")


def import_pynvvideocodec() -> Any:
    """The PyNvVideoCodec module, or a SourceError saying why it cannot be used here."""
    try:
        import PyNvVideoCodec as nvc
    except ImportError as err:
        raise SourceError(f"{MISSING_MESSAGE} ({err})") from None
    except Exception as err:  # it checks the driver at import: no driver, or one too old
        first_line = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise SourceError(f"{MISSING_MESSAGE}; PyNvVideoCodec cannot use this machine's driver: {first_line}") from None
    return nvc


def surface_planes(frame: Any) -> Nv12Planes:
    """Where a PyNvVideoCodec ``DecodedFrame`` lies: its two planes' CUDA array interfaces."""
    planes = frame.cuda()
    if len(planes) != 2:
        raise SourceError(f"NVDEC gave a frame with {len(planes)} planes; only 8-bit 4:2:0 (NV12) streams are supported")
    luma, chroma = planes[0].__cuda_array_interface__, planes[1].__cuda_array_interface__
    height, width = int(luma["shape"][0]), int(luma["shape"][1])
    if luma.get("typestr") != "|u1" or int(chroma["shape"][0]) != height // 2:
        raise SourceError("NVDEC gave a frame that is not 8-bit NV12; only 8-bit 4:2:0 streams are supported")
    luma_pitch = int(luma["strides"][0]) if luma.get("strides") else width
    chroma_pitch = int(chroma["strides"][0]) if chroma.get("strides") else width
    return Nv12Planes(int(luma["data"][0]), int(chroma["data"][0]), luma_pitch, chroma_pitch, width, height)


class _FilePackets:
    """PyNvVideoCodec's own demuxer, for files."""

    def __init__(self, nvc: Any, path: str) -> None:
        self._nvc, self._path = nvc, path
        try:
            self._demuxer = nvc.CreateDemuxer(filename=path)
        except Exception as err:
            raise SourceUnavailable(f"cannot open {path}: {err}") from None
        self.codec = self._demuxer.GetNvCodecId()
        self.width, self.height = int(self._demuxer.Width()), int(self._demuxer.Height())
        self.fps = float(self._demuxer.FrameRate() or 0.0)
        self._iter = iter(self._demuxer)

    def next(self) -> Any:
        packet = next(self._iter, None)
        return None if packet is None or packet.bsl == 0 else packet

    def restart(self) -> "_FilePackets":
        """The same file from its first packet, in a demuxer of its own (a few milliseconds)."""
        self.close()
        return _FilePackets(self._nvc, self._path)

    def close(self) -> None:
        self._demuxer = self._iter = None


class _StreamPackets:
    """PyAV's demuxer, its packets wrapped as PyNvVideoCodec ``PacketData``."""

    def __init__(self, nvc: Any, demuxer: AvDemuxer) -> None:
        self._nvc, self._demuxer = nvc, demuxer
        self.codec = getattr(nvc.cudaVideoCodec, NVDEC_CODECS[demuxer.codec_name])
        self.width, self.height, self.fps = demuxer.width, demuxer.height, demuxer.fps
        self._iter = demuxer.packets()
        self._current: Optional[np.ndarray] = None  # the bytes the decoder reads: alive until the next packet

    def next(self) -> Any:
        item = next(self._iter, None)
        if item is None:
            return None
        self._current, pts = item
        packet = self._nvc.PacketData()
        packet.bsl_data = int(self._current.ctypes.data)
        packet.bsl = int(self._current.size)
        packet.pts = pts
        return packet

    def close(self) -> None:
        self._demuxer.close()


class NvdecSource:
    """A FrameSource whose ``read`` returns ``DeviceNv12Image`` frames (NV12 in device memory)."""

    def __init__(self, nvc: Any, packets: Any, decoder: Any, pool: DeviceFramePool, live: bool, what: str) -> None:
        self._nvc, self._packets, self._decoder, self._pool = nvc, packets, decoder, pool
        self.live = live
        self.fps = packets.fps
        self._what = what
        # decoded pictures still in the decoder's surfaces: each is copied out (read) or let go
        # (grab) before the decoder runs again and reuses the surfaces
        self._ready: Deque[Any] = collections.deque()
        self._flushed = False

    @property
    def pool(self) -> DeviceFramePool:
        return self._pool

    def read(self) -> Optional[DeviceNv12Image]:
        decoded = self._next_decoded()
        return None if decoded is None else self._copy_out(decoded)

    def grab(self) -> bool:
        """Decode the next picture (the ones after it need it) but never copy it out of the decoder's
        surface: a frame dropped before it costs anything (fps_limit, an idle motion gate). False at the end."""
        return self._next_decoded() is not None

    def _next_decoded(self) -> Any:
        while not self._ready:
            if self._flushed or self._decoder is None:
                return None
            packet = self._packets.next()
            if packet is None:
                packet = self._nvc.PacketData()  # an empty packet: end of stream, hand over what is queued
                self._flushed = True
            self._ready.extend(self._decode(packet))
        return self._ready.popleft()

    def rewind(self) -> bool:
        """Start a file over with the decoder it has, for a camera that loops it. False for a
        stream. To the first picture, 3.4 ms against 48 ms for a new decoder and demuxer (H.264
        on an H200 test machine); in a decoder process a camera gave no frames for about 250 ms
        while its file was opened anew.

        The decoder was flushed at the end of the file; it takes the file's first packets, with
        their sequence header, as a new stream.
        """
        if self._decoder is None or not isinstance(self._packets, _FilePackets):
            return False
        self._packets = self._packets.restart()
        self._ready.clear()
        self._flushed = False
        return True

    def _decode(self, packet: Any) -> list:
        try:
            return list(self._decoder.Decode(packet))
        except Exception as err:
            raise RuntimeError(f"NVDEC could not decode {self._what}: {err}") from None

    def _copy_out(self, frame: Any) -> DeviceNv12Image:
        surface = surface_planes(frame)
        too_large = frame_too_large(surface.width, surface.height)
        if too_large:
            raise SourceError(too_large)
        return self._pool.copy_in(surface)

    def release(self) -> None:
        # the decoder goes before the demuxer; the pool (and its CUDA context) lives on while
        # frames from it are still held, and closes with the last of them
        self._decoder = None
        self._ready.clear()
        if self._packets is not None:
            self._packets.close()
            self._packets = None


def check_nvdec(spec: SourceSpec) -> None:
    """Raise SourceError when decoder nvdec can never open ``spec`` on this machine."""
    if spec.kind not in NVDEC_KINDS:
        raise SourceError(f"decoder nvdec decodes files and rtsp/http streams, not {spec.kind.value} sources; "
                          "use decoder auto")
    import_pynvvideocodec()


def open_nvdec(spec: SourceSpec, capture: Optional[CaptureConfig] = None, device_index: int = 0,
               max_frames: int = DEFAULT_MAX_FRAMES,
               device_opener: Callable[[int], Any] = lambda index: open_device(device_index=index),
               packet_sink: Optional[PacketSink] = None) -> NvdecSource:
    """Open ``spec`` for NVDEC decoding. Raises SourceError (never works) or SourceUnavailable.

    With a ``packet_sink`` (a recorded camera) files are demuxed by PyAV too, whose packets are
    teed to the sink before they reach the decoder; PyNvVideoCodec's own demuxer hides them."""
    capture = capture or CaptureConfig()
    if spec.kind not in NVDEC_KINDS:
        check_nvdec(spec)
    what = mask_secrets(spec.target)
    if spec.kind is SourceKind.FILE and not os.path.isfile(spec.target):
        raise SourceUnavailable(f"file {spec.target} does not exist")
    nvc = import_pynvvideocodec()
    try:
        device = device_opener(device_index)
    except CudaError as err:
        raise SourceError(f"{MISSING_MESSAGE}; CUDA is not usable: {err}") from None
    pool = DeviceFramePool(device, max_frames, device_index)
    if spec.kind is SourceKind.FILE and packet_sink is None:
        packets: Any = _FilePackets(nvc, spec.target)
    else:
        packets = _StreamPackets(nvc, AvDemuxer(spec.target, capture.open_timeout_s, capture.stall_timeout_s,
                                                packet_sink=packet_sink))
    try:
        too_large = frame_too_large(packets.width, packets.height)
        if too_large:
            raise SourceError(too_large)
        latency = nvc.DisplayDecodeLatencyType.LOW if spec.live else nvc.DisplayDecodeLatencyType.NATIVE
        decoder = nvc.CreateDecoder(gpuid=device_index, codec=packets.codec, cudacontext=device.context_handle,
                                    cudastream=pool.stream.handle, usedevicememory=True, latency=latency)
    except SourceError:
        packets.close()
        raise
    except Exception as err:
        packets.close()
        raise SourceError(f"NVDEC cannot decode {what}: {err}") from None
    log.info("nvdec: %s, %dx%d at %.3g fps on GPU %d", what, packets.width, packets.height, packets.fps, device_index)
    return NvdecSource(nvc, packets, decoder, pool, spec.live, what)
