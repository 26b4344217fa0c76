"""A real RTSP server for the tests: GStreamer's gst-rtsp-server looping H.264 (or H.265) clips.

Run by the *system* python (``/usr/bin/python3``), which has the GObject bindings the test
virtualenv lacks::

    /usr/bin/python3 rtsp_server.py --port 8554 --mount cam1=/tmp/bus.mp4 --mount cam2=/tmp/z.mp4

Each mount point serves its clip without re-encoding, forever. qtdemux cannot loop by itself and
seeking a media owned by the RTSP server is fragile, so every clip is first remuxed (stream copy,
no re-encoding) into an Annex-B byte-stream file. ``multifilesrc`` then reads that file again and
again as one continuous H.264 stream; ``h264parse`` stamps decoding times from the clip's frame
rate (given in the caps), so timestamps keep increasing across the loop seam and the server's
sink paces the stream in real time. h264parse leaves presentation times unset, which would give
every RTP packet the same timestamp; a pad probe copies DTS to PTS, which is exact because the
clips have no B-frames (``make_clip`` ensures that). CPU use is about 1% of a core per stream.

The line ``READY <port>`` is printed on stdout once the server listens. SIGTERM/SIGINT stop it.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
from fractions import Fraction
from typing import Dict, Tuple

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstRtspServer", "1.0")
from gi.repository import GLib, Gst, GstRtspServer  # noqa: E402


def probe_fps(clip: str) -> Fraction:
    """The clip's frame rate as ffprobe reports it; 25 when it reports none."""
    out = subprocess.run(
        ["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=r_frame_rate", "-of", "json", clip],
        check=True, capture_output=True, text=True,
    ).stdout
    streams = json.loads(out).get("streams") or [{}]
    rate = streams[0].get("r_frame_rate", "0/0")
    num, _, den = rate.partition("/")
    if not den or int(den) == 0 or int(num) == 0:
        return Fraction(25)
    return Fraction(int(num), int(den))


def probe_codec(clip: str) -> str:
    """The clip's video codec, "h264" or "h265" (ffprobe's "hevc"); anything else is refused."""
    out = subprocess.run(
        ["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=codec_name", "-of", "csv=p=0", clip],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    if out not in ("h264", "hevc"):
        raise SystemExit(f"clip {clip} is {out or 'not video'}; the test server serves H.264 and H.265")
    return "h265" if out == "hevc" else "h264"


def to_annexb(clip: str, work_dir: str, name: str, codec: str = "h264") -> str:
    """Remux an mp4 (or any container) into a raw H.264/H.265 byte stream, copying the video as is."""
    out = os.path.join(work_dir, f"{name}.{codec}")
    bsf, fmt = ("h264_mp4toannexb", "h264") if codec == "h264" else ("hevc_mp4toannexb", "hevc")
    subprocess.run(
        ["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-i", clip, "-map", "0:v:0", "-c:v", "copy",
         "-bsf:v", bsf, "-f", fmt, out],
        check=True,
    )
    return out


def launch_line(stream_path: str, fps: Fraction, codec: str = "h264") -> str:
    caps = f"video/x-{codec},stream-format=byte-stream,framerate={fps.numerator}/{fps.denominator}"
    # Quoted location: temp paths may hold characters the parser would split on.
    return (
        f'( multifilesrc location="{stream_path}" loop=true caps="{caps}" '
        f"! {codec}parse name=parse config-interval=-1 ! rtp{codec}pay name=pay0 pt=96 config-interval=-1 )"
    )


def parse_mounts(values) -> Dict[str, str]:
    mounts: Dict[str, str] = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not name or not path:
            raise SystemExit(f"--mount wants NAME=PATH, got {value!r}")
        if not os.path.isfile(path):
            raise SystemExit(f"clip {path} does not exist")
        mounts[name.strip("/")] = path
    return mounts


def _pts_from_dts(_pad, info) -> Gst.PadProbeReturn:
    # h264parse interpolates DTS from the frame rate but leaves PTS unset (it cannot know about
    # reordering); the clips have no B-frames, so presentation time equals decoding time.
    buf = info.get_buffer()
    if buf is not None and buf.pts == Gst.CLOCK_TIME_NONE:
        buf.pts = buf.dts
    return Gst.PadProbeReturn.OK


def _on_media_configure(_factory, media) -> None:
    parse = media.get_element().get_by_name("parse")
    parse.get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, _pts_from_dts)


def build_server(port: int, mounts: Dict[str, Tuple[str, Fraction, str]]) -> GstRtspServer.RTSPServer:
    server = GstRtspServer.RTSPServer()
    server.set_address("127.0.0.1")
    server.set_service(str(port))
    table = server.get_mount_points()
    for name, (stream_path, fps, codec) in mounts.items():
        factory = GstRtspServer.RTSPMediaFactory()
        factory.set_launch(launch_line(stream_path, fps, codec))
        # One pipeline for all clients: cheap on CPU, and every client sees the same live stream.
        factory.set_shared(True)
        factory.connect("media-configure", _on_media_configure)
        table.add_factory(f"/{name}", factory)
    return server


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--mount", action="append", required=True, help="NAME=CLIP (repeatable)")
    parser.add_argument("--work-dir", default=None, help="where the remuxed clips go (default: system temp)")
    args = parser.parse_args()

    Gst.init(None)
    clips = parse_mounts(args.mount)
    if args.work_dir:
        os.makedirs(args.work_dir, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="rtsp-server-", dir=args.work_dir) as work_dir:
        codecs = {name: probe_codec(path) for name, path in clips.items()}
        prepared = {name: (to_annexb(path, work_dir, name, codecs[name]), probe_fps(path), codecs[name])
                    for name, path in clips.items()}
        server = build_server(args.port, prepared)
        if server.attach(None) == 0:
            print(f"cannot listen on port {args.port}", file=sys.stderr, flush=True)
            return 1
        # Expire the state of vanished RTSP clients now and then, so a killed client does not keep
        # its media pipeline running forever.
        GLib.timeout_add_seconds(2, lambda: (server.get_session_pool().cleanup(), True)[1])
        loop = GLib.MainLoop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, sig, loop.quit)
        print(f"READY {args.port}", flush=True)
        loop.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
