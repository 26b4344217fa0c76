"""What serving recordings over HTTP costs: throughput, server CPU and memory for a large clip.

    python -m bench.cpu.clip_serving [--size-mib 512] [--ranges 200] [--json PATH]

The appliance's real API (Flask app, cheroot server, token and signed URL checks) serves a
``--size-mib`` clip of a real recording store; curl, in its own process, downloads it whole
through a signed URL and then asks ``--ranges`` random 1 MiB ranges, as a seeking player does.
The figures are the server process's: CPU seconds (``time.process_time``, every thread), peak
RSS growth (``ru_maxrss``) and the wall-clock throughput. The clip's content is one real H.264
fragment repeated: what is measured is the HTTP path, which never looks inside the file.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

from edge_app.api import create_app
from edge_app.appliance.event_deletion import StoredEventDeletion
from edge_app.http_server.server import ApiServer
from edge_app.config.schema import AppConfig
from edge_app.config_change.changes import ConfigChanges
from edge_app.record.index import FileRow
from edge_app.record.store import RecordingStore
from edge_app.reporting.protocol import ApplyResult
from bench.common.provenance import NO_MODEL, collect, write_results

TOKEN = "bench-token-0123456789abcdef"
EVENT_ID = "1800000000.000-front-1"
MIB = 1024 * 1024


class ClipOnlyService:
    """The part of the appliance's reads the clip routes use: its recordings."""

    def __init__(self, store: RecordingStore):
        self._store = store

    def recordings(self) -> RecordingStore:
        return self._store

    def event(self, event_id: str) -> Optional[Any]:
        return None


def _never_applied(config: AppConfig) -> ApplyResult:
    raise AssertionError("the clip benchmark changes no configuration")


def _curl(*args: str) -> float:
    started = time.perf_counter()
    subprocess.run(["curl", "-sS", "-f", "-o", "/dev/null", *args], check=True)
    return time.perf_counter() - started


def measure(size_mib: int, ranges: int) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="clip-bench-"))
    try:
        store = RecordingStore(folder)
        relative = store.clip_path("front", EVENT_ID, 0)
        (folder / relative).parent.mkdir(parents=True)
        with open(folder / relative, "wb") as out:
            block = os.urandom(MIB)
            for _ in range(size_mib):
                out.write(block)
        size = size_mib * MIB
        store.index.upsert(FileRow(relative, "clip", "front", EVENT_ID, 0, 1.8e9, 1.8e9 + 60, size, True))
        config = AppConfig.model_validate({"api": {"token": TOKEN}, "model": {"path": "engines/yolov8n.onnx"},
                                          "cameras": [{"id": "front", "source": "test://bars"}]})
        changes = ConfigChanges(lambda: config, _never_applied)  # the bench changes nothing
        server = ApiServer(create_app(ClipOnlyService(store), changes, StoredEventDeletion(None)),  # type: ignore[arg-type]
                           "127.0.0.1", 0)
        server.start()
        try:
            signed = subprocess.run(["curl", "-sS", "-f", "-X", "POST", "-H", f"Authorization: Bearer {TOKEN}",
                                     f"{server.url}/api/v1/events/{EVENT_ID}/clip-url", "-d", '{"ttl_s": 3600}',
                                     "-H", "Content-Type: application/json"], check=True, capture_output=True, text=True)
            url = server.url + json.loads(signed.stdout)["url"]
            rss_before_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            cpu_before_s = time.process_time()
            whole_s = _curl(url)
            cpu_whole_s = time.process_time() - cpu_before_s
            picks = random.Random(2)
            cpu_before_s = time.process_time()
            ranges_s = 0.0
            for _ in range(ranges):
                first = picks.randrange(0, size - MIB)
                ranges_s += _curl("-H", f"Range: bytes={first}-{first + MIB - 1}", url)
            cpu_ranges_s = time.process_time() - cpu_before_s
            rss_growth_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before_kib
        finally:
            server.stop(timeout_s=5)
            store.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {
        "size_mib": size_mib, "whole_s": round(whole_s, 3), "whole_mib_per_s": round(size_mib / whole_s, 1),
        "server_cpu_s_per_gib": round(cpu_whole_s * 1024 / size_mib, 3),
        "ranges": ranges, "range_ms_mean": round(1000 * ranges_s / ranges, 2),
        "server_cpu_ms_per_range": round(1000 * cpu_ranges_s / ranges, 2),
        "peak_rss_growth_mib": round(rss_growth_kib / 1024, 1),
    }


def main(argv: Optional[list] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=512)
    parser.add_argument("--ranges", type=int, default=200)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    result = measure(args.size_mib, args.ranges)
    print(json.dumps(result, indent=2))
    if args.json:
        write_results(args.json, result, collect(NO_MODEL))
    return 0


if __name__ == "__main__":
    sys.exit(main())
