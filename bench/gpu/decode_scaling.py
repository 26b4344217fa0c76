"""How NVDEC decoding scales with the number of cameras, in threads and in processes.

    python -m bench.gpu decode-scaling --clip CLIP [--decoders 1 4 8] [--seconds 3] [--json OUT]

Each worker loops over the clip as fast as it can, reopening it at the end, and counts frames
in a common window after a warm-up. Three depths, each a superset of the one before:

- ``demux``: PyNvVideoCodec's demuxer only;
- ``decode``: demux and ``Decode``, the decoder's surfaces dropped at once;
- ``decode_copy``: ``NvdecSource.read`` in the worker (each picture copied into a frame pool);
- ``decode_process``: what a camera uses, ``DecodeProcessOpener``: the decoding in a child
  process per worker, each picture written into CUDA IPC memory this process owns and handed
  on without a copy (run it as threads: the children are the processes).

Workers run as threads of one process (as the appliance's cameras do) and as separate
processes. In the thread runs a probe thread counts how often it gets the interpreter lock: its
rate next to the workers, over its rate alone, is the share of the lock the workers leave free.
A decoder that holds the lock while the GPU decodes shows up as threads that do not scale while
processes do.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from bench.common.provenance import NO_MODEL, collect, write_results
from bench.common.settings import add_switch_interval_argument, apply_switch_interval

DEPTHS = ("demux", "decode", "decode_copy", "decode_process")


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class _Reader:
    """One camera's frames at one depth; ``next()`` returns False at the end of the clip."""

    def __init__(self, clip: str, depth: str) -> None:
        self._clip, self._depth = clip, depth
        if depth == "decode_process":
            from edge_app.capture.video_decode.child_process import DecodeProcessOpener

            self._opener = DecodeProcessOpener()  # one per camera, kept across the clip's passes
        self._open()

    def _open(self) -> None:
        if self._depth == "decode_process":
            from edge_app.config.schema import CaptureConfig
            from edge_app.config.source_spec import parse_source

            self._source = self._opener(parse_source(self._clip), CaptureConfig())
            return
        if self._depth == "decode_copy":
            from edge_app.capture.video_decode.nvdec_source import open_nvdec
            from edge_app.config.source_spec import parse_source

            self._source = open_nvdec(parse_source(self._clip))
            return
        import PyNvVideoCodec as nvc

        self._demuxer = nvc.CreateDemuxer(filename=self._clip)
        self._packets = iter(self._demuxer)
        self._decoder = None
        if self._depth == "decode":
            self._decoder = nvc.CreateDecoder(gpuid=0, codec=self._demuxer.GetNvCodecId(), usedevicememory=True)

    def frames(self) -> int:
        """Frames got by one step (0 at the end of the clip, which reopens it)."""
        if self._depth in ("decode_copy", "decode_process"):
            if self._source.read() is None:
                self._source.release()
                self._open()
            return 1
        packet = next(self._packets, None)
        if packet is None or packet.bsl == 0:
            self._open()
            return 0
        if self._decoder is None:
            return 1
        return len(list(self._decoder.Decode(packet)))

    def close(self) -> None:
        if self._depth in ("decode_copy", "decode_process"):
            self._source.release()
        if self._depth == "decode_process":
            self._opener.close()


class _Window:
    """The counting window, fixed once every worker has opened its source (opening a decoder
    process takes seconds; it must not eat into the window)."""

    def __init__(self, workers: int, warmup_s: float, window_s: float) -> None:
        self._barrier = threading.Barrier(workers, action=self._fix)
        self._warmup_s, self._window_s = warmup_s, window_s
        self.start_s = self.end_s = 0.0

    def _fix(self) -> None:
        self.start_s = time.time() + self._warmup_s
        self.end_s = self.start_s + self._window_s

    def wait(self) -> Tuple[float, float]:
        self._barrier.wait()
        return self.start_s, self.end_s


def _work(clip: str, depth: str, window: "_Window", out: Dict[str, float]) -> None:
    reader = _Reader(clip, depth)
    start_s, end_s = window.wait()
    try:
        frames = 0
        while time.time() < start_s:
            reader.frames()
        cpu_start_s = _cpu_s()
        while time.time() < end_s:
            frames += reader.frames()
        out.update(frames=frames, cpu_s=_cpu_s() - cpu_start_s)
    finally:
        reader.close()


class _FixedWindow:
    def __init__(self, start_s: float, end_s: float) -> None:
        self.start_s, self.end_s = start_s, end_s

    def wait(self) -> Tuple[float, float]:
        return self.start_s, self.end_s


def _process_worker(clip: str, depth: str, start_s: float, end_s: float, results: "multiprocessing.Queue") -> None:
    out: Dict[str, float] = {}
    try:
        _work(clip, depth, _FixedWindow(start_s, end_s), out)
    except Exception as err:  # reported with the row
        out["error"] = f"{type(err).__name__}: {err}"
    results.put(out)


def _probe(start_s: float, end_s: float, out: Dict[str, float]) -> None:
    count = 0
    while time.time() < start_s:
        pass
    while time.time() < end_s:
        count += 1
    out["count"] = count


def probe_alone(seconds: float) -> float:
    out: Dict[str, float] = {}
    now = time.time()
    _probe(now, now + seconds, out)
    return out["count"] / seconds


def run_threads(clip: str, depth: str, workers: int, warmup_s: float, window_s: float, probe_rate: float) -> dict:
    window = _Window(workers + 1, warmup_s, window_s)
    outs: List[Dict[str, float]] = [{} for _ in range(workers)]
    probe: Dict[str, float] = {}
    threads = [threading.Thread(target=_work, args=(clip, depth, window, outs[i]), name=f"capture:cam{i}")
               for i in range(workers)]
    threads.append(threading.Thread(target=lambda: _probe(*window.wait(), probe), name="probe"))
    cpu_start_s = _cpu_s()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    frames = sum(o.get("frames", 0) for o in outs)
    return {"mode": "threads", "depth": depth, "workers": workers, "fps": round(frames / window_s, 1),
            "lock_left_for_others": round(probe.get("count", 0) / window_s / probe_rate, 3),
            "process_cpu_s_whole_run": round(_cpu_s() - cpu_start_s, 2)}


def run_processes(clip: str, depth: str, workers: int, warmup_s: float, window_s: float) -> dict:
    context = multiprocessing.get_context("spawn")  # CUDA does not survive fork
    results: "multiprocessing.Queue" = context.Queue()
    start_s = time.time() + warmup_s + 4.0  # spawning and importing come first
    end_s = start_s + window_s
    processes = [context.Process(target=_process_worker, args=(clip, depth, start_s, end_s, results)) for _ in range(workers)]
    for process in processes:
        process.start()
    outs = [results.get(timeout=120) for _ in processes]
    for process in processes:
        process.join(30)
    frames = sum(o.get("frames", 0) for o in outs)
    row = {"mode": "processes", "depth": depth, "workers": workers, "fps": round(frames / window_s, 1),
           "cpu_ms_per_frame": round(1000 * sum(o.get("cpu_s", 0.0) for o in outs) / max(frames, 1), 3)}
    errors = [o["error"] for o in outs if "error" in o]
    if errors:
        row["errors"] = errors
    return row


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.gpu decode-scaling", description=__doc__.splitlines()[0])
    parser.add_argument("--clip", type=Path, required=True)
    parser.add_argument("--decoders", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument("--depths", nargs="+", choices=DEPTHS, default=list(DEPTHS))
    parser.add_argument("--modes", nargs="+", choices=("threads", "processes"), default=["threads", "processes"])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    add_switch_interval_argument(parser)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    switch_interval_ms = apply_switch_interval(args.switch_interval_ms)
    probe_rate = probe_alone(1.0)
    rows = []
    for depth in args.depths:
        for workers in args.decoders:
            for mode in args.modes:
                if mode == "threads":
                    row = run_threads(str(args.clip), depth, workers, args.warmup, args.seconds, probe_rate)
                else:
                    row = run_processes(str(args.clip), depth, workers, args.warmup, args.seconds)
                print(json.dumps(row), flush=True)
                rows.append(row)
    if args.json:
        write_results(args.json, {"clip": str(args.clip), "probe_alone_per_s": probe_rate, "rows": rows,
                                  "switch_interval_ms": switch_interval_ms}, collect(NO_MODEL))
    return 0
