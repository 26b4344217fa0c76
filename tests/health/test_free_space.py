"""Free disk space is read in one place; it says what ``df`` and ``shutil.disk_usage`` say."""
from __future__ import annotations

import shutil

import pytest

from edge_app.health.free_space import DiskSpace, NotEnoughSpace, disk_space, ensure_room, free_bytes
from edge_app.health.host import read_disk


def test_disk_space_is_what_shutil_disk_usage_reads(tmp_path):
    space, usage = disk_space(tmp_path), shutil.disk_usage(tmp_path)
    assert space.total_bytes == usage.total and space.used_bytes == usage.used
    assert abs(space.free_bytes - usage.free) < 64 * 1024 * 1024  # other writers between the two reads
    assert abs(free_bytes(tmp_path) - space.free_bytes) < 64 * 1024 * 1024


def test_the_health_report_reads_the_same_space(tmp_path):
    report, space = read_disk(".", tmp_path), disk_space(tmp_path)
    assert report.total_mb == round(space.total_bytes / 1024 / 1024, 1)
    assert report.used_percent == pytest.approx(space.used_percent, abs=0.5)


@pytest.mark.parametrize("space, percent", [
    (DiskSpace(total_bytes=1000, used_bytes=900, free_bytes=50), 100.0 * 900 / 950),  # root's 50 reserved: neither
    (DiskSpace(total_bytes=1000, used_bytes=0, free_bytes=1000), 0.0),
    (DiskSpace(total_bytes=0, used_bytes=0, free_bytes=0), 0.0),
])
def test_used_percent_counts_as_df_does(space, percent):
    assert space.used_percent == pytest.approx(percent)


def test_a_missing_folder_is_an_os_error(tmp_path):
    with pytest.raises(OSError):
        disk_space(tmp_path / "gone")


def test_ensure_room_refuses_what_would_eat_the_reserve(tmp_path):
    free = disk_space(tmp_path).free_bytes
    ensure_room(tmp_path, 1, 0)
    with pytest.raises(NotEnoughSpace, match="kept free"):
        ensure_room(tmp_path, 1, free + 1024 ** 3)
