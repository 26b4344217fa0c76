"""NVML through a stand-in module, disk limits on a real tmpfs, a hung reader, one log line per change."""
import logging
import os
import subprocess
import threading
import time

import pytest

from edge_app.config.schema import HealthConfig, HealthLimitsConfig
from edge_app.health.nvml import NvmlReader
from edge_app.health.problems import DISK_FULL, HOT, THROTTLING, ProblemLog, find_problems
from edge_app.health.report import is_unavailable
from edge_app.health.sampler import SAMPLER_THREAD, HealthSampler
from tests.health.fake_pynvml import FakeGpu, FakeNvml
from testkit.skips import missing


def _dgpu_sampler(fake: FakeNvml, **options) -> HealthSampler:
    return HealthSampler(HealthConfig(), ["."], nvml=NvmlReader(fake.module()), **options)


def test_nvml_figures_with_units():
    fake = FakeNvml([FakeGpu(), FakeGpu(name="NVIDIA L4", encoder=None, throttle_mask=0x4 | 0x40, temperature_c=88)])
    report = _dgpu_sampler(fake).sample()
    first, second = report.gpu
    assert (first.kind, first.name, first.load_percent, first.temperature_c) == ("nvml", "NVIDIA H200", 37.0, 41.0)
    assert (first.power_w, first.power_limit_w, first.clock_mhz) == (118.0, 700.0, 1980.0)
    assert (first.memory_used_mb, first.memory_total_mb) == (3072.0, 143771.0)
    assert (first.encoder_percent, first.decoder_percent) == (0.0, 54.0)
    assert first.throttle_reasons == ["gpu_idle"]
    assert second.encoder_percent == "unavailable: NVML: Not Supported"
    assert second.throttle_reasons == ["sw_power_cap", "hw_thermal"]
    kinds = {(p.kind, p.subject) for p in report.problems}
    assert (HOT, "gpu1") in kinds and (THROTTLING, "gpu1") in kinds and (HOT, "gpu0") not in kinds


def test_nvml_missing_or_without_a_driver_says_why():
    missing = NvmlReader(load=lambda: None).read()
    assert missing == "unavailable: nvidia-ml-py not installed (pip install 'edge-app[nvml]')"
    no_driver = NvmlReader(FakeNvml(library_missing=True).module()).read()
    assert no_driver == "unavailable: NVML: NVML Shared Library Not Found"


def test_a_hung_reader_times_out_and_is_not_entered_again():
    fake, block = FakeNvml(), threading.Event()
    fake.block = block
    sampler = _dgpu_sampler(fake, timeout_s=0.3)
    try:
        started = time.monotonic()
        report = sampler.sample()
        assert time.monotonic() - started < 1.5
        assert report.gpu == "unavailable: timed out after 0.3 s"
        assert not is_unavailable(report.memory)  # the other readers answered
        inits = fake.calls["nvmlInit"]
        report = sampler.sample()
        assert report.gpu.startswith("unavailable: timed out (stuck for")
        assert fake.calls["nvmlInit"] == inits  # not started again while stuck
        stuck = [t for t in threading.enumerate() if t.name == "health:read-gpu"]
        assert len(stuck) == 1
    finally:
        block.set()
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and is_unavailable(sampler.sample().gpu):
        time.sleep(0.05)
    assert sampler.sample().gpu[0].name == "NVIDIA H200"  # back once the stuck call returned


def test_the_api_never_waits_for_a_hung_reader():
    block = threading.Event()
    sampler = HealthSampler(HealthConfig(interval_s=1), ["."], nvml=NvmlReader(load=lambda: None), timeout_s=0.5,
                            extra_readers={"thermal": block.wait})
    sampler.start()
    try:
        assert any(t.name == SAMPLER_THREAD for t in threading.enumerate())
        started = time.monotonic()
        for _ in range(50):
            sampler.latest()
        assert time.monotonic() - started < 0.1
        deadline = time.monotonic() + 3
        while sampler.samples < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sampler.latest().thermal.startswith("unavailable: timed out")
    finally:
        block.set()
        sampler.stop()


@pytest.fixture
def small_tmpfs(tmp_path):
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount_point)], capture_output=True, text=True)
    if done.returncode != 0:
        missing(f"mounting a tmpfs was refused (needs root): {done.stderr.strip()}")
    yield mount_point
    subprocess.run(["umount", "-l", str(mount_point)], check=False)


def test_disk_limit_on_a_real_tmpfs(small_tmpfs, caplog):
    config = HealthConfig(limits=HealthLimitsConfig(disk_percent=50))
    sampler = HealthSampler(config, ["disk"], base=small_tmpfs.parent, nvml=NvmlReader(load=lambda: None))
    (disk,) = sampler.sample().disk
    assert disk.total_mb == 4.0 and disk.used_percent < 5
    assert not [p for p in sampler.latest().problems if p.kind == DISK_FULL]
    (small_tmpfs / "recording.bin").write_bytes(os.urandom(3 * 1024 * 1024))
    with caplog.at_level(logging.WARNING, logger="edge_app.health"):
        report = sampler.sample()
    (problem,) = [p for p in report.problems if p.kind == DISK_FULL]
    assert problem.subject == "disk" and problem.value >= 75 and problem.limit == 50
    assert "disk of disk" in caplog.text and "% full (limit 50 %)" in caplog.text
    (small_tmpfs / "recording.bin").unlink()
    assert not [p for p in sampler.sample().problems if p.kind == DISK_FULL]


def test_a_missing_directory_is_unavailable_not_an_error(tmp_path):
    sampler = HealthSampler(HealthConfig(), ["gone"], base=tmp_path, nvml=NvmlReader(load=lambda: None))
    (disk,) = sampler.sample().disk
    assert disk.used_percent.startswith("unavailable: ")


def test_problems_are_logged_once_per_change(caplog):
    fake = FakeNvml([FakeGpu(temperature_c=40)])
    published = []
    sampler = _dgpu_sampler(fake, on_publish=published.append)
    with caplog.at_level(logging.INFO, logger="edge_app.health"):
        sampler.sample()
        fake.gpus[0].temperature_c = 95
        for _ in range(5):
            sampler.sample()
        fake.gpus[0].temperature_c = 40
        for _ in range(5):
            sampler.sample()
    lines = [r.getMessage() for r in caplog.records if r.name == "edge_app.health.problems"]
    assert len(lines) == 2, lines
    assert "GPU 0 at 95.0" in lines[0] and "no problems" in lines[1]
    # Published at the start and at each change of the problem set, not every sample.
    assert len(published) == 3


def test_find_problems_is_pure_and_follows_the_limits():
    fake = FakeNvml([FakeGpu(temperature_c=80, throttle_mask=0x8)])
    report = _dgpu_sampler(fake).sample()
    strict = HealthLimitsConfig(temperature_c=75, throttling=False)
    assert [p.kind for p in find_problems(report, strict) if p.subject == "gpu0"] == [HOT]
    lenient = HealthLimitsConfig(temperature_c=90, throttling=True)
    assert [p.kind for p in find_problems(report, lenient) if p.subject == "gpu0"] == [THROTTLING]
    assert find_problems(report, lenient) == find_problems(report, lenient)


def test_problem_log_names_what_is_gone():
    messages = []

    class Capture(logging.Handler):
        def emit(self, record):
            messages.append(record.getMessage())

    logger = logging.getLogger("test.health.problemlog")
    logger.addHandler(Capture())
    logger.setLevel(logging.INFO)
    from edge_app.health.report import Problem
    plog = ProblemLog(logger)
    hot, full = Problem(HOT, "board", "hot"), Problem(DISK_FULL, ".", "full")
    assert plog.note([hot]) and not plog.note([hot])
    assert plog.note([hot, full]) and plog.note([full]) and plog.note([])
    assert messages[-2].startswith("device health: no longer hot:board")
