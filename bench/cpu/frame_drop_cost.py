"""What a frame that will not be analysed costs, per decoder path, and what teeing packets costs.

``python -m bench.cpu frame-drop [--size 1920x1080] [--fps 30] [--seconds 10] [--limit 5]``

Two H.264 clips of the same synthetic scene (ffmpeg's testsrc2 with noise), 4 Mbit/s, a keyframe
a second: one without B-frames (what most IP cameras send) and one with 2 B-frames between
references. On each, one thread, CPU time of the whole process (``time.process_time``):

* decoder ffmpeg for a recorded camera (``AvSource``, PyAV): ``read`` (decode + BGR conversion)
  and ``grab`` (``skip_frame = NONREF``, no conversion), and a plain PyAV decode loop without
  ``skip_frame`` and without conversion, to split what skipping and what not converting save;
* OpenCV's ``read`` and ``grab``, the path of a camera that is not recorded;
* the packet tee: ``AvSource.read`` with and without a sink (a sink that keeps nothing);
* decoder gstreamer (Debian's software pipeline, ``GstSource`` on the file): every frame, and
  ``fps_limit`` frames/s through ``videorate`` before the conversion.

It prints Markdown tables (bench/README.md, "Frames dropped before they cost anything").
"""
from __future__ import annotations

import argparse
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

from edge_app.capture.pyav.source import AvSource
from edge_app.config.source_spec import parse_source


class NullSink:
    """A PacketSink that keeps nothing: the tee's own cost."""

    def stream_opened(self, info) -> None:
        pass

    def packet(self, packet) -> None:
        pass

    def stream_closed(self, reason) -> None:
        pass

    def unavailable(self, reason) -> None:
        pass


def make_clip(out: Path, size: Tuple[int, int], fps: int, seconds: float, bframes: int) -> Path:
    if out.exists():
        return out
    subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                    f"testsrc2=size={size[0]}x{size[1]}:rate={fps},noise=alls=8:allf=t", "-t", f"{seconds:g}",
                    "-c:v", "libx264", "-preset", "veryfast", "-b:v", "4M", "-g", str(fps), "-bf", str(bframes),
                    "-pix_fmt", "yuv420p", str(out)], check=True)
    return out


def cpu_ms_per_frame(step: Callable[[], bool], frames: int) -> float:
    start = time.process_time()
    done = 0
    while done < frames and step():
        done += 1
    return (time.process_time() - start) * 1000.0 / max(1, done)


def av_source(clip: Path, sink: Optional[NullSink]) -> AvSource:
    return AvSource(parse_source(str(clip)), packet_sink=sink)


def av_costs(clip: Path, frames: int) -> Dict[str, float]:
    import av

    out: Dict[str, float] = {}
    for name, sink, method in (("read", NullSink(), "read"), ("grab", NullSink(), "grab")):
        source = av_source(clip, sink)
        try:
            step = (lambda s=source: s.read() is not None) if method == "read" else source.grab
            out[name] = cpu_ms_per_frame(step, frames)
        finally:
            source.release()
    with av.open(str(clip)) as container:  # decode every picture, convert none
        stream = container.streams.video[0]
        stream.codec_context.thread_count = 1
        start = time.process_time()
        decoded = 0
        for packet in container.demux(stream):
            decoded += len(stream.codec_context.decode(packet))
            if decoded >= frames:
                break
        out["decode only"] = (time.process_time() - start) * 1000.0 / max(1, decoded)
    out["tee us"] = tee_cost_us(clip)
    return out


def tee_cost_us(clip: Path, passes: int = 20) -> float:
    """CPU µs per packet of ``PacketTap.tap`` (copy out of FFmpeg, EncodedPacket, hand-over) on
    the clip's packets demuxed beforehand: too small to see as a difference of two decode runs."""
    import av

    from edge_app.capture.pyav.container import PacketTap

    with av.open(str(clip)) as container:
        stream = container.streams.video[0]
        packets = [packet for packet in container.demux(stream) if packet.size]
        tap = PacketTap(NullSink(), stream)
        tap.opened()
        start = time.process_time()
        for _ in range(passes):
            tap._last_dts = None  # each pass is a new connection's timestamps
            for packet in packets:
                tap.tap(packet)
        return (time.process_time() - start) * 1e6 / (passes * len(packets))


def opencv_costs(clip: Path, frames: int) -> Dict[str, float]:
    import cv2

    out: Dict[str, float] = {}
    for name in ("read", "grab"):
        capture = cv2.VideoCapture(str(clip), cv2.CAP_FFMPEG, [cv2.CAP_PROP_N_THREADS, 1])
        try:
            out[name] = cpu_ms_per_frame(lambda: capture.read()[0] if name == "read" else capture.grab(), frames)
        finally:
            capture.release()
    return out


def gstreamer_cpu_ms_per_video_s(clip: Path, fps: int, max_fps: float) -> Optional[float]:
    try:
        from edge_app.capture.gst.source import GstSource
    except Exception:
        return None
    try:
        source = GstSource(parse_source(str(clip)), max_fps=max_fps)
    except Exception:
        return None
    start = time.process_time()
    try:
        while source.read() is not None:
            pass
    finally:
        source.release()
    return (time.process_time() - start) * 1000.0 / clip_seconds(clip, fps)


def clip_seconds(clip: Path, fps: int) -> float:
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-count_packets", "-show_entries",
                          "stream=nb_read_packets", "-of", "csv=p=0", str(clip)], capture_output=True, text=True,
                         check=True).stdout.strip()
    return int(out) / fps


def least(measure: Callable[[], Dict[str, float]], rounds: int) -> Dict[str, float]:
    """Each figure's least over ``rounds`` runs: other work on the machine only ever adds time."""
    runs = [measure() for _ in range(max(1, rounds))]
    return {key: min(run[key] for run in runs) for key in runs[0]}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="1920x1080")
    parser.add_argument("--fps", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--limit", type=float, default=5.0, help="the fps_limit of the gated rows")
    parser.add_argument("--rounds", type=int, default=3, help="each figure is the least of this many runs (others' load)")
    parser.add_argument("--work-dir", type=Path, default=Path(tempfile.gettempdir()) / "edge-app-frame-drop")
    args = parser.parse_args(argv)
    size = tuple(int(v) for v in args.size.split("x"))
    args.work_dir.mkdir(parents=True, exist_ok=True)
    frames = int(args.fps * args.seconds)
    rows: List[str] = []
    gated: List[str] = []
    for label, bframes in (("no B-frames", 0), ("2 B-frames", 2)):
        clip = make_clip(args.work_dir / f"clip_{size[0]}x{size[1]}_{args.fps}_bf{bframes}.mp4", size, args.fps,
                         args.seconds, bframes)
        av_ms = least(lambda: av_costs(clip, frames), args.rounds)
        cv_ms = least(lambda: opencv_costs(clip, frames), args.rounds)
        rows.append(f"| {label} | {av_ms['read']:.2f} | {av_ms['grab']:.2f} | {av_ms['decode only']:.2f} | "
                    f"{cv_ms['read']:.2f} | {cv_ms['grab']:.2f} | {av_ms['tee us']:.1f} |")
        kept = min(args.limit, args.fps)
        every = args.fps * av_ms["read"]
        limited = kept * av_ms["read"] + (args.fps - kept) * av_ms["grab"]
        gst_ms = least(lambda: {"all": gstreamer_cpu_ms_per_video_s(clip, args.fps, 0.0) or 0.0,
                                "limited": gstreamer_cpu_ms_per_video_s(clip, args.fps, args.limit) or 0.0}, args.rounds)
        gst_all, gst_limited = gst_ms["all"], gst_ms["limited"]
        gst = (f"{gst_all:.0f} | {gst_limited:.0f} | {100 * (1 - gst_limited / gst_all):.0f} %"
               if gst_all and gst_limited else "– | – | –")
        gated.append(f"| {label} | {every:.0f} | {limited:.0f} | {100 * (1 - limited / every):.0f} % | {gst} |")
    print(f"least of {args.rounds} runs\n")
    print(f"CPU ms per frame, one thread, {size[0]}x{size[1]} H.264 4 Mbit/s, {args.fps} frames/s\n")
    print("| clip | PyAV read | PyAV grab (NONREF, no conversion) | PyAV decode only | OpenCV read | OpenCV grab "
          "| packet tee, CPU µs per packet |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    print(f"\nCPU ms per second of video, every frame vs fps_limit {args.limit:g}\n")
    print("| clip | ffmpeg (PyAV), every frame | ffmpeg (PyAV), limited | saved | gstreamer, every frame "
          "| gstreamer, videorate | saved |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(gated))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
