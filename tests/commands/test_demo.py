"""The demo a new user starts first: its configuration, and the clip maker's answer to missing images."""
from __future__ import annotations

import subprocess
import sys

import pytest

from edge_app.commands import demo_clip
from edge_app.config.file import load_config


def test_the_demo_configuration_is_valid_and_shows_a_zone_and_a_line(repo_root):
    config = load_config(repo_root / "configs" / "demo.yaml")
    (camera,) = config.cameras
    assert [zone.name for zone in camera.zones] and [line.name for line in camera.lines]


def test_the_demo_keeps_its_files_relative_to_its_state_folder_and_bounded(repo_root):
    config = load_config(repo_root / "configs" / "demo.yaml")
    relative = [config.cameras[0].source, config.model.path, config.events.dir]
    assert not [path for path in relative if path.startswith(("/", ".."))]
    assert config.events.max_mb <= 100 and config.events.retain_days <= 1  # a loop makes events for ever


def test_the_demo_script_parses(repo_root):
    subprocess.run(["bash", "-n", str(repo_root / "scripts" / "demo.sh")], check=True)


@pytest.mark.parametrize("what", ["missing", "empty"])
def test_the_clip_maker_says_where_images_are_missing_without_a_traceback(tmp_path, what):
    folder = tmp_path / "images"
    if what == "empty":
        folder.mkdir()
    done = subprocess.run([sys.executable, "-m", "edge_app.commands.demo_clip", "--images", str(folder), "--out",
                           str(tmp_path / "demo.mp4")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr and str(folder) in done.stderr
    assert "EDGE_APP_SHARED" in done.stderr


def test_the_clip_maker_reports_an_image_ffmpeg_cannot_read(tmp_path, capsys):
    bad = tmp_path / "broken.jpg"
    bad.write_bytes(b"not a picture")
    assert demo_clip.main(["--images", str(bad), "--out", str(tmp_path / "demo.mp4")]) == 1
    err = capsys.readouterr().err
    assert "ffmpeg could not make the clip" in err and "Traceback" not in err


def test_the_demo_bounds_its_recordings_too(repo_root):
    # Switched on through the dashboard or the API, recording would otherwise fill the disk to 80 %.
    config = load_config(repo_root / "configs" / "demo.yaml")
    record = config.record
    assert not record.dir.startswith(("/", ".."))
    assert record.retain.max_gb is not None and record.retain.max_gb <= 0.1
    assert record.retain.events_days <= 1 and record.retain.continuous_days <= 1


def _demo_config(tmp_path, repo_root, *args):
    return subprocess.run([sys.executable, "-m", "edge_app.commands.demo_config", "--template",
                           str(repo_root / "configs" / "demo.yaml"), "--config", str(tmp_path / "config.yaml"), *args],
                          capture_output=True, text=True, timeout=60)


def test_the_demo_copies_its_configuration_once_and_writes_the_ports_asked_for(tmp_path, repo_root):
    template = (repo_root / "configs" / "demo.yaml").read_text()
    first = _demo_config(tmp_path, repo_root)
    assert first.returncode == 0, first.stderr
    assert first.stdout.split() == ["127.0.0.1", "8080", "127.0.0.1", "1883"]
    assert (tmp_path / "config.yaml").read_text() == template  # a copy, comments and all

    moved = _demo_config(tmp_path, repo_root, "--api-port", "18081", "--mqtt-port", "11884")
    assert moved.returncode == 0, moved.stderr
    assert moved.stdout.split() == ["127.0.0.1", "18081", "127.0.0.1", "11884"]
    config = load_config(tmp_path / "config.yaml")
    assert (config.api.port, config.mqtt.port) == (18081, 11884)
    assert config.cameras[0].zones == load_config(repo_root / "configs" / "demo.yaml").cameras[0].zones

    kept = _demo_config(tmp_path, repo_root)  # the next run without the variables keeps them
    assert kept.stdout.split() == ["127.0.0.1", "18081", "127.0.0.1", "11884"]


@pytest.mark.parametrize("port", ["0", "70000", "http"])
def test_a_bad_demo_port_is_refused_with_a_sentence(tmp_path, repo_root, port):
    done = _demo_config(tmp_path, repo_root, "--api-port", port)
    assert done.returncode == 2 and "Traceback" not in done.stderr and "port" in done.stderr
    assert not (tmp_path / "config.yaml").exists()
