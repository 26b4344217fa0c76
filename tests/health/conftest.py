from pathlib import Path

import pytest

TREES = Path(__file__).parent / "trees"
MODULES = ("orin-nano", "orin-nx", "agx-orin")


@pytest.fixture(params=MODULES)
def module_tree(request) -> Path:
    """The recorded sysfs/procfs tree of one Jetson module."""
    return TREES / request.param
