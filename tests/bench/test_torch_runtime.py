"""The stand-in's changes to onnx2torch's module compute what the ONNX model computes.

Runs where PyTorch and onnx2torch are installed (the GPU benchmark's machine; CPU builds serve),
and is skipped elsewhere: the appliance does not depend on either. The CUDA side (graph capture,
device buffers) is exercised by the benchmark's parity check on the GPU.
"""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
onnx2torch = pytest.importorskip("onnx2torch")
onnx = pytest.importorskip("onnx")

from bench.gpu.torch_runtime import alias_newer_opsets, freeze_constant_slices  # noqa: E402


@pytest.fixture(scope="module")
def converted(model_path):
    model = onnx.load(str(model_path))
    aliases = alias_newer_opsets(model)
    module = onnx2torch.convert(model).eval()
    frozen = freeze_constant_slices(module)
    return module, aliases, frozen


def test_newer_op_versions_reuse_older_converters(converted):
    _, aliases, _ = converted
    # the shared model is opset 20; onnx2torch 1.5 stops at Split-13, Resize-13, Reshape-14
    assert {a.split("-")[0] for a in aliases} <= {"Split", "Resize", "Reshape", "Constant"}


def test_constant_slices_become_python_slices(converted):
    module, _, frozen = converted
    kinds = {type(m).__name__ for m in module.modules()}
    assert frozen >= 1 and "OnnxSlice" not in kinds and "ConstantSlice" in kinds


@pytest.mark.parametrize("batch", [1, 3])
def test_converted_module_matches_onnxruntime(converted, model_path, batch):
    import onnxruntime as ort

    module, _, _ = converted
    images = np.random.default_rng(batch).random((batch, 3, 640, 640), dtype=np.float32)
    with torch.no_grad():
        ours = module(torch.from_numpy(images)).numpy()
    session = ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
    reference = session.run(None, {session.get_inputs()[0].name: images})[0]
    assert ours.shape == reference.shape == (batch, 84, 8400)
    assert np.abs(ours - reference).max() < 1e-2  # box coordinates in pixels, scores 0..1
