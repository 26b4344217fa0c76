"""The wheelhouse every install line of tests/install/ installs from, built once per test run."""
from __future__ import annotations


import pytest

from tests.support.fresh_venv import PipFailed, Wheelhouse
from testkit.skips import missing

#: every extra a documented install line names (gstreamer and pycuda build from source: not here)
EXTRAS = ("opencv", "fleet", "nvml", "nvdec", "tensorrt")
#: what the docs install beside edge-app on a Jetson (docs/jetson.md), resolved apart from the rest
JETSON_REQUIREMENTS = ("numpy<2", "cuda-python==12.6.*", "setuptools", "wheel")


def pytest_configure(config):
    config.addinivalue_line("markers", "install: fresh virtual environments, one per documented install line")


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory) -> Wheelhouse:
    try:
        return Wheelhouse.build(tmp_path_factory.mktemp("wheelhouse"), JETSON_REQUIREMENTS, EXTRAS)
    except PipFailed as err:
        # the package index (or a warm pip cache) is part of what these tests need, like ffmpeg
        missing(f"cannot fetch the wheels of the install lines: {err}")
