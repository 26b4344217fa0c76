from pathlib import Path

import pytest

#: synthetic sysfs/procfs trees of three Jetson modules, written by hand (trees/README.md)
TREES = Path(__file__).parent / "trees"
MODULES = ("orin-nano", "orin-nx", "agx-orin")


@pytest.fixture(params=MODULES, ids=[f"synthetic-{m}" for m in MODULES])
def synthetic_tree(request) -> Path:
    """The synthetic (hand-written) sysfs/procfs tree of one Jetson module."""
    return TREES / request.param
