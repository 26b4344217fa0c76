"""``edge-app run`` starting after a power cut: what the cut left behind is dealt with, not served
or kept. A configuration save cut short left a copy of the file (token included); the card
left the event database corrupt."""
import logging
import os

import pytest

from testkit.waiting import wait_until

pytestmark = pytest.mark.slow

TOKEN = "e2e-token-that-a-stale-copy-holds"


def test_a_start_after_a_power_cut_removes_stale_config_copies_and_moves_a_corrupt_database_aside(
        appliance_factory, model_path, tmp_path):
    events_dir = tmp_path / "events"
    app = appliance_factory([{"id": "bars", "source": "test://bars?width=320&height=240&fps=5"}], model_path,
                            start=False, api={"token": TOKEN}, logging={"level": "INFO"},
                            events={"enabled": True, "dir": str(events_dir)})
    stale = tmp_path / ".config.yaml.k3x_9q2a.tmp"  # as save_config names its temp file
    stale.write_text(app.config_path.read_text())
    stale.chmod(0o600)
    not_ours = tmp_path / ".config.yaml.notes"
    not_ours.write_text("kept\n")
    events_dir.mkdir()
    damaged = os.urandom(64 * 1024)
    (events_dir / "events.db").write_bytes(damaged)

    app.start()
    assert not stale.exists() and not_ours.read_text() == "kept\n"
    log = app.log_path.read_text(errors="replace")
    assert any(stale.name in line and logging.getLevelName(logging.WARNING) in line for line in log.splitlines()), log

    database = app.get("/api/v1/status").json()["events"]["database"]
    assert database["state"] == "recovered" and "not a database" in database["reason"], database
    assert (events_dir / database["moved_to"] / "events.db").read_bytes() == damaged
    listed = app.get("/api/v1/events")
    assert listed.status_code == 200 and listed.json() == {"events": [], "total": 0}
    wait_until(lambda: app.camera_state("bars") == "streaming", 60, "the test camera to stream")
    assert app.terminate() < 10.0 and app.proc.returncode == 0, app.log_tail()
