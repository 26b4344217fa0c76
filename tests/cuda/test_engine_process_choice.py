"""model.engine_process: auto decides from the host's facts, passed in; true and false are obeyed."""
import pytest

from edge_app.config.file import ConfigError, parse_config
from edge_app.cuda.engine_process_choice import HostFacts, choose, is_jetson

DGPU_MPS = HostFacts(jetson=False, mps_running=True, mps_pipe_directory="/run/edge-app-mps")
DGPU = HostFacts(jetson=False, mps_running=False, mps_pipe_directory="/tmp/nvidia-mps")
JETSON = HostFacts(jetson=True, mps_running=False, mps_pipe_directory="/tmp/nvidia-mps")
JETSON_MPS = HostFacts(jetson=True, mps_running=True, mps_pipe_directory="/tmp/nvidia-mps")


@pytest.mark.parametrize("facts, enabled, says", [
    (DGPU_MPS, True, "MPS running"),
    (DGPU, False, "no daemon answers in /tmp/nvidia-mps"),
    (JETSON, False, "Jetson"),
    (JETSON_MPS, False, "Jetson"),
])
def test_auto(facts, enabled, says):
    choice = choose("auto", facts)
    assert choice.enabled is enabled and says in choice.reason


@pytest.mark.parametrize("facts", [DGPU_MPS, DGPU, JETSON])
@pytest.mark.parametrize("setting", [True, False])
def test_true_and_false_are_obeyed(setting, facts):
    choice = choose(setting, facts)
    assert choice.enabled is setting and f"is {str(setting).lower()}" in choice.reason


@pytest.mark.parametrize("yaml_value, expected", [(None, "auto"), ("auto", "auto"), (True, True), (False, False)])
def test_the_setting_takes_auto_true_and_false(yaml_value, expected):
    model = {"path": "m.onnx"}
    if yaml_value is not None:
        model["engine_process"] = yaml_value
    assert parse_config({"model": model}).model.engine_process == expected


@pytest.mark.parametrize("bad", ["sometimes", 2, "AUTO ", None])
def test_anything_else_is_refused(bad):
    with pytest.raises(ConfigError):
        parse_config({"model": {"path": "m.onnx", "engine_process": bad}})


def test_jetson_is_told_by_its_release_file_or_device_tree(tmp_path):
    release, compatible = tmp_path / "nv_tegra_release", tmp_path / "compatible"
    assert not is_jetson(release, compatible)
    compatible.write_bytes(b"nvidia,p3768-0000+p3767-0005\x00nvidia,p3767-0005\x00nvidia,tegra234\x00")
    assert is_jetson(release, compatible)
    compatible.write_bytes(b"raspberrypi,5-model-b\x00brcm,bcm2712\x00")
    assert not is_jetson(release, compatible)
    release.write_text("# R36 (release), REVISION: 3.0\n")
    assert is_jetson(release, compatible)
