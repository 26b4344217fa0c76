"""``TorchFp16StandIn``: the TensorRT detector with its engine replaced by PyTorch FP16. NOT TensorRT.

The GPU benchmark needs a model that really runs on the GPU, and TensorRT is not available on
the H200 test machine. This class is the product's ``TensorRTDetector`` (same CUDA layer, same
GPU letterbox into the engine's rotating device input slots, same ``YoloDecoder``, same
``runs_on_host_cpu = False`` pipeline layout) with one difference: instead of building or
loading a TensorRT engine, ``_load`` converts the ONNX model with ``onnx2torch`` and runs it in
FP16 on CUDA (``bench.gpu.torch_runtime``). Its speed is PyTorch's, not TensorRT's, which is
usually faster still on the same model.

It is a benchmark stand-in, not a product backend: the configuration cannot select it; the
benchmark hands it to ``Appliance(detector_factory=...)``.
"""
from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any, Optional

from edge_app.detect import DetectorError
from edge_app.detect.model_metadata import is_engine_file, resolve_input_hw
from edge_app.detect.tensorrt import PreparedEngine, TensorRTDetector
from edge_app.detect.tensorrt.engine_process import EnginePlan
from edge_app.detect.tensorrt.onnx_info import read_onnx_info

log = logging.getLogger(__name__)

ENGINE_DESCRIPTION = "PyTorch FP16 via onnx2torch (stand-in: TensorRT is not available)"


class TorchFp16StandIn(TensorRTDetector):
    """The TensorRT detector, its engine stood in for by an onnx2torch module in FP16 on CUDA."""

    backend_name = "torch-fp16-standin"

    def __init__(self, model: Any, *, use_cuda_graphs: bool = True, **options: Any) -> None:
        self._use_cuda_graphs = use_cuda_graphs
        # the appliance passes engine-build options (progress, cancel); nothing is built here
        options.pop("progress", None)
        options.pop("cancel", None)
        options.pop("force_build", None)
        super().__init__(model, **options)
        log.warning("model %s runs on the PyTorch FP16 stand-in, not TensorRT", self.model_path)

    @classmethod
    def _import_runtime(cls) -> Any:
        from bench.gpu.torch_runtime import import_torch

        torch, _ = import_torch()
        return torch

    @classmethod
    def is_available(cls) -> bool:
        try:
            cls._import_runtime()
        except DetectorError:
            return False
        from edge_app.cuda import available_adapters
        return bool(available_adapters())

    def _load(self, trt: Any, model: Any, progress: Any, force: bool, cancel: Optional[threading.Event]):
        from bench.gpu.torch_runtime import TorchEngineRuntime

        path = Path(self.model_path)
        if is_engine_file(path):
            raise DetectorError(f"the PyTorch stand-in runs ONNX models, not the engine {path}")
        info = read_onnx_info(path)
        input_hw = resolve_input_hw(info.static_hw, model.configured_input_size, None, info.metadata, str(path))
        runtime = None
        if self._wants_engine_process:
            runtime = self._start_engine_process(EnginePlan(runtime="bench.gpu.torch_runtime:child_runtime", options={
                "model_path": str(path), "input_hw": tuple(input_hw), "max_batch": model.max_batch,
                "use_cuda_graphs": self._use_cuda_graphs}, device=self.engine_process_device))
        if runtime is None:
            self._device.make_current()  # torch and the CUDA layer share the device's primary context
            runtime = TorchEngineRuntime(str(path), info, input_hw, model.max_batch,
                                         use_cuda_graphs=self._use_cuda_graphs)
        engine = PreparedEngine(source="torch-standin", path=path, metadata=dict(info.metadata),
                                sidecar={"build": {"applied_precision": "fp16 (PyTorch stand-in)"}},
                                reason=ENGINE_DESCRIPTION)
        return runtime, engine

    def describe(self) -> dict:
        info = super().describe()
        info.update(engine=ENGINE_DESCRIPTION, runtime=self._runtime.describe() if self._runtime else None)
        return info
