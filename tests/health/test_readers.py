"""The sysfs, procfs and tegrastats readers against synthetic trees of three Jetson modules (written
by hand, not captured from a device: trees/README.md)."""
from pathlib import Path

import pytest

from edge_app.config.schema import HealthConfig
from edge_app.health import host, jetson, tegrastats, thermal
from edge_app.health.report import is_unavailable
from edge_app.health.sampler import HealthSampler
from tests.health.conftest import TREES

EXPECTED = {
    # module: (zones, max °C, throttling, GPU load %, GPU MHz, power mode, total W, fan %, rpm, cores, over-current events)
    "orin-nano": (9, 47.5, False, 0.0, 306.0, "7W", 3.985, 37.3, 1720.0, 6, 0),
    "orin-nx": (9, 99.4, True, 96.2, 918.0, "25W", 23.995, 100.0, 5460.0, 8, 4),
    "agx-orin": (11, 63.8, False, 73.4, 1300.5, "MAXN", 31.511, 50.2, 2890.0, 12, 0),
}


def _sampler(tree: Path) -> HealthSampler:
    query = (tree / "nvpmodel-q.txt").read_text() if (tree / "nvpmodel-q.txt").exists() else None
    return HealthSampler(HealthConfig(), ["."], root=tree, base=tree,
                         power_mode=jetson.PowerModeReader(tree, query=lambda: query))


def test_every_synthetic_module_tree_reads_as_written(synthetic_tree):
    zones, max_c, throttling, load, mhz, mode, total_w, fan, rpm, cores, oc = EXPECTED[synthetic_tree.name]
    report = _sampler(synthetic_tree).sample()
    assert len(report.thermal.zones) == zones
    assert report.thermal.max_temperature_c == max_c
    assert report.thermal.throttling is throttling
    assert report.thermal.throttle_events == (1 if throttling else 0)
    (gpu,) = report.gpu
    assert (gpu.kind, gpu.load_percent, gpu.clock_mhz) == ("jetson", load, mhz)
    assert is_unavailable(gpu.memory_used_mb) and "shared" in gpu.memory_used_mb
    assert report.power.mode == mode
    assert report.power.total_w == pytest.approx(total_w, abs=0.01)
    assert (report.thermal.fan.pwm_percent, report.thermal.fan.rpm) == (fan, rpm)
    assert report.cpu.cores == cores
    assert report.memory.shared_with_gpu is True
    assert is_unavailable(report.thermal.over_current_events) is False
    assert report.uptime_s > 0


def test_synthetic_zones_keep_trip_points_and_say_when_a_sensor_is_off():
    zones = thermal.read_zones(TREES / "orin-nano")
    gpu = next(z for z in zones if z.name == "GPU-therm")
    assert gpu.temperature_c == "unavailable: sensor powered off"
    tj = next(z for z in zones if z.name == "tj-therm")
    assert [t.type for t in tj.trip_points] == ["active", "active", "active", "passive", "critical"]
    assert tj.throttle_c == 99.0


def test_synthetic_pmic_die_is_not_a_chip_temperature():
    names = [z.name for z in thermal.read_zones(TREES / "agx-orin")]
    assert "PMIC-Die" not in names and "tj-therm" in names


def test_synthetic_agx_orin_rails_skip_unconnected_channels():
    rails = jetson.read_rails(TREES / "agx-orin")
    assert [r.name for r in rails] == ["VDD_GPU_SOC", "VDD_CPU_CV", "VIN_SYS_5V0", "VDDQ_VDD2_1V8AO"]
    assert rails[0].power_w == pytest.approx(19.912 * 1.04, abs=0.001)


def test_power_mode_from_status_file_or_from_nvpmodel_query_of_synthetic_trees():
    assert jetson.PowerModeReader(TREES / "orin-nx").read() == ("25W", 3.0)
    calls = []
    reader = jetson.PowerModeReader(TREES / "agx-orin", query=lambda: calls.append(1) or "NV Power Mode: MAXN\n0\n",
                                    clock=lambda: 100.0)
    assert reader.read() == ("MAXN", 0.0)
    assert reader.read() == ("MAXN", 0.0)
    assert len(calls) == 1  # the command runs at most once a minute


def test_nvpmodel_query_output_with_warnings():
    assert jetson.parse_nvpmodel_query("NVPM WARN: fan mode is not set!\nNV Power Mode: MODE_30W\n2\n") == ("MODE_30W", 2)
    assert jetson.parse_nvpmodel_query("garbage") == (None, None)


def test_off_a_jetson_everything_jetson_says_unavailable(tmp_path):
    (tmp_path / "proc").mkdir()
    assert not jetson.is_jetson(tmp_path)
    assert is_unavailable(jetson.read_rails(tmp_path))
    mode, mode_id = jetson.PowerModeReader(tmp_path).read()
    assert is_unavailable(mode) and is_unavailable(mode_id)
    assert is_unavailable(thermal.read_fan(tmp_path))
    assert thermal.over_current_events(tmp_path) is None
    assert is_unavailable(host.read_memory(tmp_path, False))
    assert is_unavailable(host.read_uptime(tmp_path))


def test_cpu_load_percent_is_measured_between_samples(tmp_path):
    stat = tmp_path / "proc" / "stat"
    stat.parent.mkdir()
    stat.write_text("cpu  100 0 100 800 0 0 0 0 0 0\n")
    reader = host.CpuReader(tmp_path)
    assert is_unavailable(reader.read("unavailable: x").load_percent)
    stat.write_text("cpu  250 0 150 900 0 0 0 0 0 0\n")  # 200 busy of 300 jiffies
    assert reader.read("unavailable: x").load_percent == pytest.approx(66.7)


def test_over_current_events_count_since_start_and_mean_throttling_on_a_synthetic_tree(tmp_path):
    tracker_sampler = _sampler(TREES / "orin-nano")
    first = tracker_sampler.sample()
    assert first.thermal.throttling is False and first.thermal.over_current_events == 0.0
    from edge_app.health.sampler import ThrottleTracker
    tracker = ThrottleTracker()
    assert tracker.update(False, 4) == (False, 0, 0.0)
    assert tracker.update(False, 6) == (True, 1, 2.0)  # two new over-current events: throttled now
    assert tracker.update(False, 6) == (False, 1, 2.0)
    assert tracker.update(True, 6) == (True, 2, 2.0)


@pytest.mark.parametrize("module", ["orin-nano", "orin-nx", "agx-orin"])
def test_synthetic_tegrastats_line_agrees_with_the_synthetic_sysfs_tree(module):
    tree = TREES / module
    sample = tegrastats.parse_line((tree / "tegrastats.txt").read_text())
    report = _sampler(tree).sample()
    assert sample.ram_total_mb == pytest.approx(report.memory.total_mb, abs=2)
    assert sample.gpu_load_percent == pytest.approx(report.gpu[0].load_percent, abs=1)
    rails = {r.name: r.power_w * 1000 for r in report.power.rails}
    for name, milliwatts in sample.rails_mw.items():
        assert rails[name] == pytest.approx(milliwatts, rel=0.01)
    assert max(sample.temperatures_c.values()) == pytest.approx(report.thermal.max_temperature_c, abs=0.1)
    assert None not in sample.cpu_percent[:6]


def test_tegrastats_older_layouts_and_the_synthetic_agx_orin_line():
    old = tegrastats.parse_line("RAM 3468/3983MB (lfb 48x4MB) SWAP 873/8192MB (cached 295MB) cpu [17%,13%,29%,5%]@408 "
                                "EMC 1%@408 APE 25 GR3D 3%@76")
    assert (old.ram_used_mb, old.swap_used_mb, old.gpu_load_percent) == (3468.0, 873.0, 3.0)
    agx = tegrastats.parse_line((TREES / "agx-orin" / "tegrastats.txt").read_text())
    assert agx.cpu_percent[-4:] == [None, None, None, None]
    assert "NC" not in agx.rails_mw and "GPU" in agx.temperatures_c
