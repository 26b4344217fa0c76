"""A small RTSP server for the GPU benchmark: one H.264 clip, looped and paced, on any number of mounts.

    python -m bench.gpu rtsp-serve --port 8554 --clip clip.h264 --fps 30 --mount cam0 --mount cam1

The tests' server (``testkit/rtsp_server.py``) is GStreamer's gst-rtsp-server, which the
GPU test machine does not have; this one needs nothing but Python. It speaks RTSP 1.0 (RFC 2326:
OPTIONS, DESCRIBE, SETUP, PLAY, GET_PARAMETER, TEARDOWN) with RTP over the RTSP connection
(interleaved TCP, as edge-app opens rtsp:// sources) and packs H.264 as RFC 6184 says (single
NAL units, FU-A fragments above ``MAX_PAYLOAD``). The clip is an Annex-B byte stream with its
SPS/PPS before each IDR frame (``ffmpeg -bsf:v h264_mp4toannexb``); frames go out at ``fps``
in real time, with RTP timestamps that keep increasing across the loop seam. UDP transport is
answered 461, after which FFmpeg's client asks for TCP.

The line ``READY <port>`` is printed on stdout once the server listens; SIGTERM stops it.
"""
from __future__ import annotations

import argparse
import base64
import logging
import random
import signal
import socket
import struct
import sys
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

log = logging.getLogger(__name__)

MAX_PAYLOAD = 1400
PAYLOAD_TYPE = 96
CLOCK_HZ = 90000


def split_nals(stream: bytes) -> List[bytes]:
    """The NAL units of an Annex-B byte stream, without their start codes."""
    nals, start, index = [], None, 0
    while True:
        found = stream.find(b"\x00\x00\x01", index)
        if found < 0:
            break
        if start is not None:
            end = found - 1 if found > 0 and stream[found - 1] == 0 else found
            nals.append(stream[start:end])
        start = index = found + 3
    if start is not None and start < len(stream):
        nals.append(stream[start:])
    return [n for n in nals if n]


def group_frames(nals: Sequence[bytes]) -> List[List[bytes]]:
    """Access units: parameter sets and SEI join the next picture; a slice whose first_mb_in_slice
    is 0 (its first payload bit set) starts a new picture."""
    frames: List[List[bytes]] = []
    pending: List[bytes] = []
    for nal in nals:
        kind = nal[0] & 0x1F
        if kind in (1, 5):
            if pending or not frames or (len(nal) > 1 and nal[1] & 0x80):
                frames.append(pending + [nal])
                pending = []
            else:
                frames[-1].append(nal)
        elif kind != 9:  # access unit delimiters are dropped
            pending.append(nal)
    return frames


def packetize(nal: bytes) -> List[bytes]:
    """RTP payloads for one NAL unit: itself, or FU-A fragments."""
    if len(nal) <= MAX_PAYLOAD:
        return [nal]
    indicator = (nal[0] & 0xE0) | 28
    kind = nal[0] & 0x1F
    body = nal[1:]
    chunks = [body[i:i + MAX_PAYLOAD - 2] for i in range(0, len(body), MAX_PAYLOAD - 2)]
    out = []
    for i, chunk in enumerate(chunks):
        header = kind | (0x80 if i == 0 else 0) | (0x40 if i == len(chunks) - 1 else 0)
        out.append(bytes((indicator, header)) + chunk)
    return out


class Clip:
    def __init__(self, path: Path, fps: float) -> None:
        self.fps = fps
        self.frames = group_frames(split_nals(path.read_bytes()))
        if not self.frames:
            raise SystemExit(f"{path} holds no H.264 pictures")
        nals = [n for f in self.frames for n in f]
        sps = next((n for n in nals if n[0] & 0x1F == 7), None)
        pps = next((n for n in nals if n[0] & 0x1F == 8), None)
        if sps is None or pps is None:
            raise SystemExit(f"{path} has no SPS/PPS in band")
        self.sps, self.pps = sps, pps

    def sdp(self) -> str:
        sets = ",".join(base64.b64encode(n).decode() for n in (self.sps, self.pps))
        return ("v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=edge-app bench\r\nt=0 0\r\n"
                f"m=video 0 RTP/AVP {PAYLOAD_TYPE}\r\nc=IN IP4 0.0.0.0\r\na=rtpmap:{PAYLOAD_TYPE} H264/{CLOCK_HZ}\r\n"
                f"a=fmtp:{PAYLOAD_TYPE} packetization-mode=1;profile-level-id={self.sps[1:4].hex()};"
                f"sprop-parameter-sets={sets}\r\na=framerate:{self.fps:g}\r\na=control:trackID=0\r\n")


class Session(threading.Thread):
    """One client connection: its requests, then the paced RTP stream once it plays."""

    def __init__(self, conn: socket.socket, clip: Clip, mounts: Sequence[str], stop: threading.Event) -> None:
        super().__init__(name=f"rtsp:{conn.fileno()}", daemon=True)
        self.conn, self.clip, self.mounts, self.stop = conn, clip, set(mounts), stop
        self.reader = conn.makefile("rb")
        self.write_lock = threading.Lock()
        self.session_id = f"{random.getrandbits(32):08X}"
        self.channel = 0
        self.playing = threading.Event()
        self.closed = threading.Event()

    def send(self, data: bytes) -> None:
        with self.write_lock:
            self.conn.sendall(data)

    def reply(self, cseq: str, status: str = "200 OK", headers: Optional[Dict[str, str]] = None, body: str = "") -> None:
        lines = [f"RTSP/1.0 {status}", f"CSeq: {cseq}", "Server: edge-app-bench"]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        if body:
            lines += ["Content-Type: application/sdp", f"Content-Length: {len(body.encode())}"]
        self.send(("\r\n".join(lines) + "\r\n\r\n" + body).encode())

    def read_request(self) -> Optional[Tuple[str, str, Dict[str, str]]]:
        while True:
            first = self.reader.read(1)
            if not first:
                return None
            if first == b"$":  # the client's interleaved RTCP: read past it
                header = self.reader.read(3)
                if len(header) < 3:
                    return None
                self.reader.read(struct.unpack(">H", header[1:])[0])
                continue
            line = first + self.reader.readline()
            method, url = (line.decode(errors="replace").split() + ["", ""])[:2]
            headers: Dict[str, str] = {}
            while True:
                raw = self.reader.readline()
                if not raw or raw in (b"\r\n", b"\n"):
                    break
                key, _, value = raw.decode(errors="replace").partition(":")
                headers[key.strip().lower()] = value.strip()
            if int(headers.get("content-length", "0") or 0):
                self.reader.read(int(headers["content-length"]))
            return method.upper(), url, headers

    def mount_of(self, url: str) -> str:
        path = url.split("://", 1)[-1].partition("/")[2]
        return path.split("/")[0].split("?")[0]

    def run(self) -> None:
        try:
            self.serve()
        except (OSError, ValueError) as err:
            log.debug("session ended: %s", err)
        finally:
            self.closed.set()
            self.playing.clear()
            self.conn.close()

    def serve(self) -> None:
        while not self.stop.is_set():
            request = self.read_request()
            if request is None:
                return
            method, url, headers = request
            cseq = headers.get("cseq", "0")
            if method not in ("OPTIONS", "GET_PARAMETER") and self.mount_of(url) not in self.mounts:
                self.reply(cseq, "404 Not Found")
            elif method == "OPTIONS":
                self.reply(cseq, headers={"Public": "OPTIONS, DESCRIBE, SETUP, PLAY, GET_PARAMETER, TEARDOWN"})
            elif method == "DESCRIBE":
                self.reply(cseq, headers={"Content-Base": url.rstrip("/") + "/"}, body=self.clip.sdp())
            elif method == "SETUP":
                transport = headers.get("transport", "")
                if "TCP" not in transport.upper():
                    self.reply(cseq, "461 Unsupported Transport")
                    continue
                interleaved = next((p.split("=", 1)[1] for p in transport.split(";") if p.startswith("interleaved=")), "0-1")
                self.channel = int(interleaved.split("-")[0])
                self.reply(cseq, headers={"Transport": f"RTP/AVP/TCP;unicast;interleaved={interleaved}",
                                          "Session": f"{self.session_id};timeout=60"})
            elif method == "PLAY":
                self.reply(cseq, headers={"Session": self.session_id, "Range": "npt=0.000-"})
                if not self.playing.is_set():
                    self.playing.set()
                    threading.Thread(target=self.stream, name=f"rtp:{self.session_id}", daemon=True).start()
            elif method == "GET_PARAMETER":
                self.reply(cseq, headers={"Session": self.session_id})
            elif method == "TEARDOWN":
                self.reply(cseq, headers={"Session": self.session_id})
                return
            else:
                self.reply(cseq, "405 Method Not Allowed")

    def stream(self) -> None:
        clip, ssrc, seq = self.clip, random.getrandbits(32), random.getrandbits(16)
        ticks_per_frame = CLOCK_HZ / clip.fps
        start_s, index = time.monotonic(), 0
        try:
            while self.playing.is_set() and not self.stop.is_set():
                due_s = start_s + index / clip.fps
                delay_s = due_s - time.monotonic()
                if delay_s > 0:
                    time.sleep(delay_s)
                elif delay_s < -1.0:  # the client stalled: resume the pace from now, do not burst
                    start_s, index = time.monotonic(), 0
                timestamp = int(index * ticks_per_frame) & 0xFFFFFFFF
                payloads = [p for nal in clip.frames[index % len(clip.frames)] for p in packetize(nal)]
                chunks = []
                for i, payload in enumerate(payloads):
                    marker = 0x80 if i == len(payloads) - 1 else 0
                    packet = struct.pack(">BBHII", 0x80, marker | PAYLOAD_TYPE, seq, timestamp, ssrc) + payload
                    chunks.append(struct.pack(">cBH", b"$", self.channel, len(packet)) + packet)
                    seq = (seq + 1) & 0xFFFF
                self.send(b"".join(chunks))
                index += 1
        except OSError:
            self.playing.clear()


def serve(port: int, clip: Clip, mounts: Sequence[str], stop: threading.Event, host: str = "127.0.0.1") -> None:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(64)
    listener.settimeout(0.5)
    print(f"READY {listener.getsockname()[1]}", flush=True)
    while not stop.is_set():
        try:
            conn, _ = listener.accept()
        except socket.timeout:
            continue
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        Session(conn, clip, mounts, stop).start()
    listener.close()


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.gpu rtsp-serve", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (printed in the READY line)")
    parser.add_argument("--clip", type=Path, required=True, help="H.264 Annex-B byte stream")
    parser.add_argument("--fps", type=float, default=30.0)
    parser.add_argument("--mount", action="append", required=True, help="mount point name, e.g. cam0 (repeatable)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    serve(args.port, Clip(args.clip, args.fps), args.mount, stop)
    return 0


if __name__ == "__main__":
    sys.exit(main())
