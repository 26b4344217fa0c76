"""kill -9 while recording, 10 times: every file stays readable and the index is rebuilt to match."""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from edge_app.record.store import RecordingStore
from tests.record.media import ffprobe

ROUNDS = 10
ROOT = Path(__file__).resolve().parents[2]


def _kill_while_recording(folder: Path, media: Path, delay_s: float) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    child = subprocess.Popen([sys.executable, "-m", "tests.record.crash_writer", str(folder), str(media)],
                             cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "recording"
        time.sleep(delay_s)  # somewhere inside a fragment, a segment or a clip
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()


def test_kill_9_leaves_readable_files_and_an_index_that_matches(tmp_path, encoded_files, codec):
    folder = tmp_path / "rec"
    chance = random.Random(24)
    for _ in range(ROUNDS):
        _kill_while_recording(folder, encoded_files[codec], chance.uniform(0.2, 2.5))
    store = RecordingStore(folder)
    store.reconcile()
    on_disk = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.mp4"))
    indexed = sorted(row.path for row in store.index.all())
    assert on_disk == indexed and len(on_disk) >= ROUNDS
    for row in store.index.all():
        probe = ffprobe(folder / row.path)
        assert probe.errors == "", row.path
        assert probe.frames > 0 and probe.codec == codec
        assert abs((row.end - row.start) - (probe.last_s - probe.first_s)) < 0.2, row.path
    assert store.reconcile() == 0  # a second start finds nothing to change
