"""tracking.processes: auto or a whole number of tracker child processes, with one clear error otherwise."""
import pytest

from edge_app.appliance.analysis import tracker_processes
from edge_app.config.file import ConfigError, parse_config


def _config(processes):
    return parse_config({"cameras": [{"id": "cam", "source": "test://box"}], "model": {"path": "m.onnx"},
                         "tracking": {"processes": processes}})


@pytest.mark.parametrize("value, cores, expected", [
    ("auto", 2, 0), ("auto", 4, 1), ("auto", 16, 4), ("auto", 128, 4), (0, 16, 0), (3, 2, 3), (16, 4, 16),
])
def test_the_count_asked_for_on_a_device(value, cores, expected):
    assert tracker_processes(_config(value), cpu_count=cores) == expected


def test_the_default_is_auto():
    config = parse_config({"cameras": [{"id": "cam", "source": "test://box"}], "model": {"path": "m.onnx"}})
    assert config.tracking.processes == "auto"


@pytest.mark.parametrize("value", [-1, 17, True, 2.5, "4", "many", None])
def test_anything_else_is_refused_with_one_sentence(value):
    with pytest.raises(ConfigError) as refused:
        _config(value)
    assert "processes must be auto or a whole number from 0 to 16" in str(refused.value)
