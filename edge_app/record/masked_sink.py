"""A ``PacketSink`` in front of a camera's recorder that re-encodes its stream with privacy masks.

The capture thread only queues (never blocks: a full queue drops the packet and the rest of its
GOP, which could not be decoded without it); the thread ``record-mask:<camera>`` decodes, masks
and encodes (``MaskedEncoder``) and hands the recorder an ordinary H.264 stream. The source's own
packets never reach the recorder, so nothing unmasked is written; an encoder that cannot start
makes recording unavailable rather than falling back to a stream copy. A hardware encoder that
stops in the middle of a connection ends that stream, and the recording goes on with x264 in a
new one from the next source keyframe; the next connection tries the hardware again.
"""
from __future__ import annotations

import logging
import queue
import threading
from dataclasses import dataclass, replace
from typing import Callable, Dict, Optional, Tuple

from edge_app.capture.packets import EncodedPacket, PacketSink, StreamInfo
from edge_app.privacy.masks import PrivacyMasks
from edge_app.record.encoder_choice import EncoderChoice, EncoderPath, choose_encoder, detect_capabilities
from edge_app.record.masked_encoder import EncoderSettings, EncoderStopped, MaskedEncoder

log = logging.getLogger(__name__)

#: packets waiting for the encoder: about 10 s of a 25 fps camera
QUEUE_PACKETS = 256
#: the thread ends after this long without a packet once its stream closed (a camera restart makes a new sink)
IDLE_EXIT_S = 5.0


@dataclass(frozen=True)
class MaskedSinkStats:
    """A masked camera's re-encode, for its recording status and metrics."""

    encoder: str  # the EncoderPath value in use (or chosen, before the first connection)
    packets_dropped: int  # source packets the re-encode could not take in time (GOP tails)
    packets_encoded: int


class MaskedPacketSink:
    """Implements ``PacketSink``: ``sink`` (the recorder) gets the re-encoded stream."""

    def __init__(self, sink: PacketSink, masks: PrivacyMasks, settings: EncoderSettings = EncoderSettings(),
                 queue_packets: int = QUEUE_PACKETS) -> None:
        self._sink = sink
        self._masks = masks
        self._settings = settings
        self._queue: "queue.Queue" = queue.Queue(queue_packets)
        self._lock = threading.Lock()
        self._thread: Optional[threading.Thread] = None
        self._camera_id = "?"
        self._skip_to_keyframe = False  # capture thread only
        self.dropped = 0
        self.encoded = 0
        self.encoder_path = settings.path  # what the last connection's encoder really is

    def stats(self) -> MaskedSinkStats:
        return MaskedSinkStats(self.encoder_path.value, self.dropped, self.encoded)

    # ---- PacketSink (capture thread) ------------------------------------------------------------

    def stream_opened(self, info: StreamInfo) -> None:
        self._camera_id = info.camera_id
        self._skip_to_keyframe = False
        self._put(("opened", info), wait=True)

    def packet(self, packet: EncodedPacket) -> None:
        if self._skip_to_keyframe and not packet.keyframe:
            self.dropped += 1
            return
        self._skip_to_keyframe = not self._put(("packet", packet), wait=False)
        if self._skip_to_keyframe:
            self.dropped += 1

    def stream_closed(self, reason: str) -> None:
        self._put(("closed", reason), wait=True)

    def unavailable(self, reason: str) -> None:
        self._sink.unavailable(reason)

    # ---- life ------------------------------------------------------------------------------------

    def wait_idle(self, timeout_s: float) -> bool:
        """Wait until every packet queued so far went to the recorder (tests); False on timeout."""
        done = threading.Event()
        self._put(("mark", done), wait=True)
        return done.wait(timeout_s)

    def _put(self, item, wait: bool) -> bool:
        try:
            # open and close are rare and must not be lost; a short wait at most on the capture thread
            self._queue.put(item, block=wait, timeout=1.0 if wait else None)
        except queue.Full:
            return False
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=f"record-mask:{self._camera_id}", daemon=True)
                self._thread.start()
        return True

    def _run(self) -> None:
        encoder: Optional[MaskedEncoder] = None
        while True:
            try:
                item = self._queue.get(timeout=IDLE_EXIT_S)
            except queue.Empty:
                with self._lock:
                    if self._queue.empty():
                        self._thread = None
                        return
                continue
            try:
                encoder = self._handle(encoder, item)
            except Exception:  # noqa: BLE001 - the next connection starts afresh
                log.exception("recording %s: re-encoding with privacy masks failed", self._camera_id)
                encoder = None

    def _handle(self, encoder: Optional[MaskedEncoder], item) -> Optional[MaskedEncoder]:
        kind = item[0]
        if kind == "mark":
            item[1].set()
        elif kind == "opened":
            if encoder is not None:
                self._send(encoder.flush())
            return self._open(item[1], self._settings)
        elif kind == "packet" and encoder is not None:
            try:
                self._send(encoder.encode(item[1]))
            except EncoderStopped as err:
                log.warning("recording %s: %s; recording goes on with x264 from the next keyframe", self._camera_id, err)
                self._send(encoder.drain_stopped())
                self._sink.stream_closed(f"the {encoder.path.value} encoder stopped")
                return self._open(encoder.source, replace(self._settings, path=EncoderPath.X264))
        elif kind == "closed":
            if encoder is not None:
                self._send(encoder.flush())
            self._sink.stream_closed(item[1])
            return None
        return encoder

    def _open(self, info, settings: EncoderSettings) -> Optional[MaskedEncoder]:
        try:
            encoder = MaskedEncoder(info, self._masks, settings)
        except Exception as err:  # noqa: BLE001 - never a stream copy instead
            self._sink.unavailable(f"the privacy-masked re-encode cannot start: {err}")
            return None
        self.encoder_path = encoder.path
        self._sink.stream_opened(encoder.output)
        return encoder

    def _send(self, packets) -> None:
        for packet in packets:
            self._sink.packet(packet)
            self.encoded += 1


class MaskedSinks:
    """The masked sinks of every camera, so that a camera restarted (a configuration change, a
    reconnect by the appliance) goes on through the same queue and thread: two sinks in front of
    one recorder would interleave the end of one connection with the start of the next."""

    def __init__(self, drain_s: float = 10.0,
                 choose: Callable[[], EncoderChoice] = lambda: choose_encoder(detect_capabilities())) -> None:
        self._lock = threading.Lock()
        self._sinks: Dict[str, Tuple[MaskedPacketSink, PacketSink, PrivacyMasks, EncoderSettings]] = {}
        self._drain_s = drain_s
        self._choose = choose
        self._choice: Optional[EncoderChoice] = None  # looked for with the first masked camera, once

    def choice(self) -> EncoderChoice:
        """The device's encoder for masked recordings (the machine is looked at the first time)."""
        if self._choice is None:
            self._choice = self._choose()
            log.info("masked recordings are re-encoded with %s (%s)", self._choice.words, self._choice.reason)
        return self._choice

    def stats(self, camera_id: str) -> Optional[MaskedSinkStats]:
        """The camera's re-encode; None when it records by stream copy."""
        with self._lock:
            entry = self._sinks.get(camera_id)
        return entry[0].stats() if entry is not None else None

    def wrap(self, camera_id: str, sink: Optional[PacketSink], masks: Optional[PrivacyMasks],
             height_px: Optional[int]) -> Optional[PacketSink]:
        """``sink`` as the camera records: through its masked sink when it has masks, else unchanged."""
        masked_now = sink is not None and masks is not None
        settings = EncoderSettings(height_px=height_px, **({"path": self.choice().path} if masked_now else {}))
        with self._lock:
            old = self._sinks.get(camera_id)
            if old is not None and old[1] is sink and old[2] is masks and old[3] == settings:
                return old[0]
            self._sinks.pop(camera_id, None)
        if old is not None:
            # what the previous sink still holds reaches the recorder before the new one starts
            # (this runs on the thread that applies the configuration, never on a capture thread)
            old[0].wait_idle(self._drain_s)
        if sink is None or masks is None:
            return sink
        masked = MaskedPacketSink(sink, masks, settings)
        with self._lock:
            self._sinks[camera_id] = (masked, sink, masks, settings)
        return masked

