"""The stand-in CUDA layer of the stand-in appliance subprocesses (testkit/tensorrt_standin/process_cuda,
host memory, NOT CUDA): every part of the process that opens a device gets the stand-in.

Each case runs in a subprocess of its own, as the appliances do, because the patch is process-wide.
"""
import subprocess
import sys

import pytest

from testkit.standin_appliance import REPO_ROOT, STANDIN_DIR

PROBES = {
    # what the NVDEC probe and selftest do: the first listed adapter, opened by name
    "open_device() with no adapter named": "d = edge_app.cuda.open_device()",
    "the first listed adapter, by name": "d = edge_app.cuda.open_device(edge_app.cuda.available_adapters()[0])",
    "the TensorRT backend's open_device": "from edge_app.detect.tensorrt import backend; d = backend.open_device()",
}


@pytest.mark.parametrize("probe", PROBES.values(), ids=list(PROBES))
def test_every_open_device_of_the_process_gets_the_standin(probe):
    code = "\n".join([
        "import sys", f"sys.path.insert(0, {str(REPO_ROOT)!r})", f"sys.path.insert(0, {str(STANDIN_DIR)!r})",
        "import edge_app.cuda",
        "from testkit.tensorrt_standin.process_cuda import use_host_memory_cuda",
        "use_host_memory_cuda({'name': 'NVIDIA H200', 'compute_capability': (9, 0)})",
        probe,
        "print(type(d).__name__, d.name, d.compute_capability)",
    ])
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO_ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["HostMemoryCudaDevice", "NVIDIA", "H200", "(9,", "0)"]
