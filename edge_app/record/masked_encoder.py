"""Re-encoding one camera's stream with its privacy masks burnt in: packets in, H.264 packets out.

A stream copy would write the masked pixels to the disk, so a camera with privacy masks is
recorded by decoding its packets (PyAV), masking every frame (``edge_app.privacy``) and encoding
it again at the configured height, with the encoder ``encoder_choice`` picks for the device:
NVENC (PyNvVideoCodec) on a discrete GPU, ``nvv4l2h264enc`` on a Jetson Orin NX or AGX, libx264
elsewhere (``picture_encoders``, ``jetson_encoder``). The output is an ordinary H.264 stream with
its parameter sets in band: the recorder writes it into the same clips, segments and index rows
as a stream copy. Each source keyframe becomes a keyframe of the output where the encoder can be
told (x264, NVENC), so clips and segments start where they would have; no encoder holds frames
back, so a packet leaves as soon as its frame is encoded. A hardware encoder that will not start
(no free NVENC session, say) leaves the camera on x264, never on a stream copy; one that stops in
the middle of a connection raises :class:`EncoderStopped`, and the masked sink goes on with x264.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

from edge_app.capture.packets import EncodedPacket, StreamInfo
from edge_app.privacy.masks import PrivacyMasks
from edge_app.record.encoder_choice import EncoderChoice, EncoderPath
from edge_app.record.picture_encoders import EncodedPicture, PictureEncoder, X264Pictures

if TYPE_CHECKING:
    import av

log = logging.getLogger(__name__)

#: what ``check-config`` says of the two ways of recording
PATH_NAME = "re-encoded with {words} (privacy masks)"
COPY_PATH_NAME = "stream copy"


class EncoderStopped(RuntimeError):
    """A hardware encoder stopped in the middle of a connection (its process died, the driver)."""


@dataclass(frozen=True)
class EncoderSettings:
    height_px: Optional[int] = None  # None: the source's
    preset: str = "veryfast"  # x264's
    crf: int = 23  # x264's
    path: EncoderPath = EncoderPath.X264


def recording_path(config, camera, choice: Optional[EncoderChoice] = None) -> str:
    """How ``camera`` (a ``CameraConfig`` of the ``AppConfig`` ``config``) is recorded, in words;
    ``choice``: the device's encoder for masked cameras (None: x264)."""
    if not config.record_settings(camera.id).any_enabled:
        return "off"
    if not camera.privacy.masks:
        return COPY_PATH_NAME
    choice = choice or EncoderChoice(EncoderPath.X264, "")
    height = camera.privacy.record_height
    words = PATH_NAME.format(words=choice.words) + (f" at {height} px high" if height else "")
    return words + (f"; {choice.reason}" if choice.reason else "")


def output_size(width_px: int, height_px: int, wanted_height_px: Optional[int]) -> Tuple[int, int]:
    """(width, height) of the re-encoded picture: the wanted height (even), the aspect kept, never larger."""
    height = height_px if not wanted_height_px else min(int(wanted_height_px), height_px)
    height = max(2, height - height % 2)
    width = max(2, int(round(width_px * height / height_px / 2)) * 2)
    return width, height


def open_picture_encoder(info: StreamInfo, width_px: int, height_px: int,
                         settings: EncoderSettings) -> Tuple[PictureEncoder, EncoderPath]:
    """The encoder ``settings.path`` names, or x264 where that one will not start."""
    if settings.path is EncoderPath.NVENC:
        try:
            from edge_app.record.nvenc_encoder import NvencPictures

            return NvencPictures(width_px, height_px, info.fps), EncoderPath.NVENC
        except Exception as err:  # noqa: BLE001 - no free session, the driver: x264 still masks
            log.warning("camera %s: NVENC will not start (%s); recording with x264", info.camera_id, err)
    elif settings.path is EncoderPath.JETSON_GST:
        try:
            from edge_app.record.jetson_encoder import GstJetsonPictures

            return GstJetsonPictures(width_px, height_px, info.fps), EncoderPath.JETSON_GST
        except Exception as err:  # noqa: BLE001 - as above
            log.warning("camera %s: nvv4l2h264enc will not start (%s); recording with x264", info.camera_id, err)
    return X264Pictures(width_px, height_px, info.time_base, info.fps, settings.preset, settings.crf), EncoderPath.X264


class MaskedEncoder:
    """One connection's packets (``info``) decoded, masked and encoded; not thread-safe."""

    def __init__(self, info: StreamInfo, masks: PrivacyMasks, settings: EncoderSettings = EncoderSettings()) -> None:
        # PyAV is loaded with the first masked recording, not whenever the appliance is imported
        import av

        self._av = av
        self.source = info
        self.masks = masks
        self.width_px, self.height_px = output_size(info.width_px, info.height_px, settings.height_px)
        self._decoder = self._av.CodecContext.create(info.codec, "r")
        if info.extradata:
            self._decoder.extradata = info.extradata
        self._encoder, self.path = open_picture_encoder(info, self.width_px, self.height_px, settings)
        self.output = StreamInfo(camera_id=info.camera_id, codec="h264", width_px=self.width_px,
                                 height_px=self.height_px, time_base=info.time_base, extradata=b"", fps=info.fps)
        # what each source packet said of its frame, by presentation time: the encoded packet of
        # that frame carries it on (the recorder cuts files and pre-rolls by wall-clock time)
        self._pending: Dict[int, Tuple[float, bool, int]] = {}
        self._keyframe_seen = False
        self.frames = 0

    def encode(self, packet: EncodedPacket) -> List[EncodedPacket]:
        """The encoded packets ready after ``packet`` (none, one, or several after a held frame)."""
        if not self._keyframe_seen:
            if not packet.keyframe:
                return []  # nothing before the first keyframe can be decoded
            self._keyframe_seen = True
        source = self._av.Packet(packet.data)
        source.pts, source.dts = packet.pts, packet.dts
        source.time_base = self.source.time_base
        self._pending[packet.pts] = (packet.wall_ts, packet.keyframe, packet.duration)
        try:
            frames = self._decoder.decode(source)
        except self._av.error.FFmpegError as err:  # a damaged packet costs its frame, not the recording
            log.debug("camera %s: a packet could not be decoded: %s", self.source.camera_id, err)
            self._pending.pop(packet.pts, None)
            return []
        out: List[EncodedPacket] = []
        for frame in frames:
            out.extend(self._encode_frame(frame))
        return out

    def flush(self) -> List[EncodedPacket]:
        """What the decoder and the encoder still hold (the connection ended)."""
        out: List[EncodedPacket] = []
        try:
            for frame in self._decoder.decode(None):
                out.extend(self._encode_frame(frame))
        except self._av.error.FFmpegError as err:
            log.debug("camera %s: flushing the decoder failed: %s", self.source.camera_id, err)
        out.extend(self._packets(self._encoder.flush()))
        return out

    def drain_stopped(self) -> List[EncodedPacket]:
        """What a stopped encoder (:class:`EncoderStopped`) had encoded before it stopped."""
        try:
            return self._packets(self._encoder.flush())
        except Exception as err:  # noqa: BLE001 - a dead encoder may fail this too; nothing more to save
            log.debug("camera %s: nothing more from the stopped encoder: %s", self.source.camera_id, err)
            return []

    def _encode_frame(self, frame: av.VideoFrame) -> List[EncodedPacket]:
        pts = frame.pts
        if pts is None or pts not in self._pending:
            return []
        _, keyframe, _ = self._pending[pts]
        # scaled and converted in one step, then masked at the output size
        bgr = frame.to_ndarray(width=self.width_px, height=self.height_px, format="bgr24")
        self.masks.apply_in_place(bgr)
        self.frames += 1
        try:
            pictures = self._encoder.encode(bgr, pts, keyframe)
        except Exception as err:
            if self.path is EncoderPath.X264:
                raise
            raise EncoderStopped(f"{self.path.value} stopped: {err}") from err
        return self._packets(pictures)

    def _packets(self, packets: List[EncodedPicture]) -> List[EncodedPacket]:
        out = []
        for packet in packets:
            wall_ts, _, duration = self._pending.pop(packet.pts, (None, False, 0))
            if wall_ts is None:
                continue
            # frames dropped by the decoder leave their entries behind: only newer ones are kept
            for stale in [p for p in self._pending if p < packet.pts]:
                self._pending.pop(stale, None)
            out.append(EncodedPacket(data=packet.data, pts=packet.pts, dts=packet.dts, keyframe=packet.keyframe,
                                     wall_ts=wall_ts, duration=duration))
        return out
