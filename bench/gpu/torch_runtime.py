"""An ONNX model run by PyTorch in FP16 on CUDA, behind the interface of the TensorRT ``EngineRuntime``.

NOT TensorRT. It exists for the GPU benchmark (``bench.gpu pipeline``) on a test machine where
TensorRT is not installed: ``onnx2torch`` converts the ONNX graph to a ``torch.fx`` module, which
runs in half precision on the GPU. Like ``EngineRuntime`` it allocates every buffer once, for
the largest batch: ``ROTATION`` device input slots (the GPU letterbox writes into them through
their raw addresses), one device output, ``ROTATION`` pinned host output sets. Each batch size
is captured once as a CUDA graph, so a batch costs one graph launch, as an engine's
``execute_async_v3`` does, instead of a few hundred kernel launches from Python; where capture
fails the module runs eagerly and ``describe()`` says so.
"""
from __future__ import annotations

import logging
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from edge_app.detect import DetectorError
from edge_app.detect.tensorrt.onnx_info import OnnxInfo
from edge_app.detect.tensorrt.runtime import ROTATION, TensorSpec

log = logging.getLogger(__name__)

#: what the network computes in; the input tensor is written in this type by the letterbox
COMPUTE_DTYPE = np.dtype(np.float16)
#: what the decoder reads (an FP16 TensorRT engine built from this ONNX keeps float32 outputs too)
OUTPUT_DTYPE = np.dtype(np.float32)


def import_torch() -> Tuple[Any, Any]:
    """(torch, onnx2torch), or DetectorError saying what is missing."""
    try:
        import onnx2torch
        import torch
    except ImportError as err:
        raise DetectorError(f"the PyTorch stand-in needs torch and onnx2torch ({err})") from None
    if not torch.cuda.is_available():
        raise DetectorError("the PyTorch stand-in needs a CUDA GPU, and torch sees none")
    return torch, onnx2torch


#: ops whose newer ONNX versions only add attributes or types these models do not use, so
#: onnx2torch's converter of the previous version serves (the parity check in the benchmark
#: compares the detections with ONNX Runtime's)
ALIASABLE_OPS = ("Split", "Resize", "Reshape", "Constant")
#: onnx2torch modules that call ``.tolist()`` or compare on their shape-like inputs
SHAPE_CONSUMERS = ("OnnxSplit13", "OnnxResize", "OnnxReshape", "OnnxSlice")


def alias_newer_opsets(onnx_model: Any) -> List[str]:
    """Register, for the ops in ALIASABLE_OPS this model uses at versions onnx2torch lacks (Split-18,
    Resize-19, Reshape-19 at opset 20), the converter of the newest version it has."""
    from onnx import defs
    from onnx2torch.node_converters import registry

    opset = {o.domain: o.version for o in onnx_model.opset_import}.get("", 0)
    added = []
    for op_type in sorted({n.op_type for n in onnx_model.graph.node if n.domain in ("", "ai.onnx")} & set(ALIASABLE_OPS)):
        since = defs.get_schema(op_type, max_inclusive_version=opset).since_version
        wanted = registry.OperationDescription("", op_type, since)
        if wanted in registry._CONVERTER_REGISTRY:
            continue
        older = sorted(d.version for d in registry._CONVERTER_REGISTRY if d.domain == "" and d.operation_type == op_type and d.version < since)
        if not older:
            continue
        registry._CONVERTER_REGISTRY[wanted] = registry._CONVERTER_REGISTRY[registry.OperationDescription("", op_type, older[-1])]
        added.append(f"{op_type}-{since} as {op_type}-{older[-1]}")
    if added:
        log.info("onnx2torch converters reused for newer op versions: %s", ", ".join(added))
    return added


def keep_shape_inputs_on_host(module: Any) -> List[str]:
    """Move the constant shape-like inputs (split sizes, resize scales, reshape shapes, slice
    bounds) back to host memory.

    onnx2torch's modules read them with ``.tolist()``; on the GPU that is a device-to-host sync
    per op, which also makes CUDA graph capture impossible. They are constants, so host memory
    holds them as well.
    """
    moved = []
    modules = dict(module.named_modules())
    for node in module.graph.nodes:
        if node.op != "call_module" or type(modules.get(node.target)).__name__ not in SHAPE_CONSUMERS:
            continue
        # Resize takes its scales and sizes as keyword arguments
        for arg in [*node.args[1:], *node.kwargs.values()]:
            if getattr(arg, "op", None) != "get_attr":
                continue
            owner_name, _, buffer_name = arg.target.rpartition(".")
            owner = module.get_submodule(owner_name) if owner_name else module
            tensor = getattr(owner, buffer_name)
            if tensor.device.type != "cpu":
                # pinned: a copy from it to the GPU may be captured in a CUDA graph
                setattr(owner, buffer_name, tensor.cpu().pin_memory())
                moved.append(arg.target)
    return moved


def _attr(module: Any, target: str) -> Any:
    owner_name, _, name = target.rpartition(".")
    return getattr(module.get_submodule(owner_name) if owner_name else module, name)


def _index(value: Any) -> Optional[int]:
    return None if value is None else int(value)


def freeze_constant_slices(module: Any) -> int:
    """Replace each ``OnnxSlice`` whose bounds are constants by a slice with Python ints.

    onnx2torch's Slice indexes with 0-d tensors read from its inputs at every call, which copies
    them to the GPU (no CUDA graph can hold that); the bounds of an exported YOLO head are
    constants, known once the module is converted.
    """
    import torch
    from onnx2torch.node_converters.slice import _get_slices

    class ConstantSlice(torch.nn.Module):
        def __init__(self, flip_dims: List[int], pos: tuple, neg: tuple) -> None:
            super().__init__()
            self.flip_dims, self.pos, self.neg = flip_dims, pos, neg

        def forward(self, x: Any) -> Any:
            if self.flip_dims:
                x = torch.flip(x, dims=self.flip_dims)
            if self.pos:
                x = x[self.pos]
            if self.neg:
                x = x[self.neg]
            return x

    def normal(items: list) -> tuple:
        return tuple(i if i is Ellipsis else slice(_index(i.start), _index(i.stop), _index(i.step)) for i in items)

    modules = dict(module.named_modules())
    frozen = 0
    for node in module.graph.nodes:
        if node.op != "call_module" or type(modules.get(node.target)).__name__ != "OnnxSlice":
            continue
        bounds = list(node.args[1:])
        if not bounds or not all(b is None or getattr(b, "op", None) == "get_attr" for b in bounds):
            continue
        values = [None if b is None else _attr(module, b.target).cpu() for b in bounds] + [None] * (4 - len(bounds))
        starts, ends, axes, steps = values[:4]
        flip_dims, pos, neg = _get_slices(starts.tolist(), ends.tolist(), axes, steps)
        module.add_submodule(node.target, ConstantSlice([int(d) for d in flip_dims], normal(pos), normal(neg)))
        node.args = (node.args[0],)
        frozen += 1
    if frozen:
        module.graph.eliminate_dead_code()
        module.recompile()
    return frozen


class _DeviceArray:
    """Device memory described by the CUDA array interface, for ``torch.as_tensor`` to wrap."""

    def __init__(self, ptr: int, shape: Tuple[int, ...], dtype: np.dtype) -> None:
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": np.dtype(dtype).str,
                                         "data": (int(ptr), False), "strides": None, "version": 3}


def child_runtime(device: Any, model_path: str, input_hw: Tuple[int, int], max_batch: int,
                  use_cuda_graphs: bool = True) -> "TorchEngineRuntime":
    """The stand-in built in an engine process (``edge_app.detect.tensorrt.engine_process``)."""
    from pathlib import Path

    from edge_app.detect.tensorrt.onnx_info import read_onnx_info

    device.make_current()  # torch and the CUDA layer share the device's primary context
    return TorchEngineRuntime(model_path, read_onnx_info(Path(model_path)), input_hw, max_batch,
                              use_cuda_graphs=use_cuda_graphs, device=device)


class TorchEngineRuntime:
    """One converted model on one GPU, with buffers for ``max_batch`` images."""

    def __init__(self, model_path: str, info: OnnxInfo, input_hw: Tuple[int, int], max_batch: int,
                 use_cuda_graphs: bool = True, device: Any = None) -> None:
        torch, onnx2torch = import_torch()
        import onnx

        self._torch = torch
        self.label = f"{model_path} (PyTorch FP16 stand-in)"
        self.dynamic_batch = info.dynamic_batch
        self.max_batch = max_batch if self.dynamic_batch else int(info.input_shape[0])
        self.input_hw = (int(input_hw[0]), int(input_hw[1]))
        self._device = torch.device("cuda", torch.cuda.current_device())
        onnx_model = onnx.load(model_path)
        self.aliased_converters = alias_newer_opsets(onnx_model)
        module = onnx2torch.convert(onnx_model)
        self.frozen_slices = freeze_constant_slices(module)
        self._module = module.eval().half().to(self._device)
        self.host_shape_inputs = keep_shape_inputs_on_host(self._module)
        self._stream = torch.cuda.Stream(self._device)
        height, width = self.input_hw
        shape = (self.max_batch, 3, height, width)
        self.input = TensorSpec(info.input_name, (-1 if self.dynamic_batch else self.max_batch, 3, height, width),
                                COMPUTE_DTYPE, True, shape)
        torch_dtype = torch.float16
        if device is None:
            self._slots = [torch.zeros(shape, dtype=torch_dtype, device=self._device) for _ in range(ROTATION)]
        else:  # slots of the CUDA layer's own, which an engine process can export with CUDA IPC
            nbytes = int(np.prod(shape)) * COMPUTE_DTYPE.itemsize
            self.input.device = [device.alloc_device(nbytes) for _ in range(ROTATION)]
            self._slots = [torch.as_tensor(_DeviceArray(b.ptr, shape, COMPUTE_DTYPE), device=self._device)
                           for b in self.input.device]
        self._static_input = torch.zeros(shape, dtype=torch_dtype, device=self._device)
        with torch.no_grad(), torch.cuda.stream(self._stream):
            probe = self._forward(self._static_input)
        self._stream.synchronize()
        names = info.output_names or [f"output{i}" for i in range(len(probe))]
        self.outputs = [TensorSpec(name, tuple(out.shape), OUTPUT_DTYPE, False, tuple(out.shape))
                        for name, out in zip(names, probe)]
        self._host = [[torch.zeros(tuple(out.shape), dtype=torch.float32, pin_memory=True) for out in probe]
                      for _ in range(ROTATION)]
        self._host_np = [[t.numpy() for t in outs] for outs in self._host]
        self._staging = torch.zeros(shape, dtype=torch_dtype, pin_memory=True)
        self._next_output = 0
        self._device_outputs: List[Any] = []
        self._graphs: Dict[int, Any] = {}
        self._graph_outputs: Dict[int, List[Any]] = {}
        self.graph_error: Optional[str] = None
        if use_cuda_graphs:
            self._capture_graphs()

    # -- model calls ----------------------------------------------------------------------------
    def _forward(self, images: Any) -> List[Any]:
        """The module on ``images``; every output as float32 (the cast is part of the graph)."""
        result = self._module(images)
        outputs = list(result) if isinstance(result, (list, tuple)) else [result]
        return [out.float() for out in outputs]

    def _capture_graphs(self) -> None:
        torch = self._torch
        pool = None
        try:
            with torch.no_grad():
                for batch in range(1, self.max_batch + 1) if self.dynamic_batch else (self.max_batch,):
                    view = self._static_input[:batch]
                    with torch.cuda.stream(self._stream):
                        for _ in range(2):  # warm-up on the capture stream, as torch.cuda.graphs asks
                            self._forward(view)
                    self._stream.synchronize()
                    graph = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(graph, pool=pool, stream=self._stream):
                        outputs = self._forward(view)
                    pool = graph.pool()
                    self._graphs[batch] = graph
                    self._graph_outputs[batch] = outputs
        except Exception as err:  # e.g. an op that syncs with the host: run eagerly instead
            self.graph_error = f"{type(err).__name__}: {err}"
            self._graphs, self._graph_outputs = {}, {}
            log.warning("CUDA graph capture failed, running the module eagerly: %s", self.graph_error)

    # -- the EngineRuntime interface ------------------------------------------------------------
    @property
    def stream(self) -> Any:
        return self._stream

    @property
    def uses_cuda_graphs(self) -> bool:
        return bool(self._graphs)

    def input_slot_ptr(self, slot: int) -> int:
        return int(self._slots[slot % ROTATION].data_ptr())

    def run(self, count: int, host_input: Optional[np.ndarray] = None, input_slot: int = 0) -> List[np.ndarray]:
        """Run ``count`` images; returns host views valid for ``ROTATION`` further runs."""
        torch = self._torch
        run_batch = count if self.dynamic_batch else self.max_batch
        with torch.no_grad(), torch.cuda.stream(self._stream):
            device_outputs = self._enqueue(count, host_input, input_slot)
            out_set = self._next_output
            self._next_output = (out_set + 1) % ROTATION
            results = []
            for host, host_np, out in zip(self._host[out_set], self._host_np[out_set], device_outputs):
                host[:run_batch].copy_(out[:run_batch], non_blocking=True)
                results.append(host_np[:count])
        self._stream.synchronize()
        return results

    def run_on_device(self, count: int, host_input: Optional[np.ndarray] = None, input_slot: int = 0) -> List[int]:
        """As ``run``, the outputs left on the device: their addresses, valid until the next run."""
        torch = self._torch
        with torch.no_grad(), torch.cuda.stream(self._stream):
            # held until the next run: run eagerly, these tensors are the only owners of the memory
            self._device_outputs = self._enqueue(count, host_input, input_slot)
        self._stream.synchronize()
        return [int(out.data_ptr()) for out in self._device_outputs]

    def _enqueue(self, count: int, host_input: Optional[np.ndarray], input_slot: int) -> List[Any]:
        """Queue the input and the model on the stream (inside its context); the device outputs."""
        if not 1 <= count <= self.max_batch:
            raise ValueError(f"batch of {count} outside 1..{self.max_batch}")
        run_batch = count if self.dynamic_batch else self.max_batch
        slot = self._slots[input_slot % ROTATION]
        if host_input is not None:
            staging = self._staging[:count]
            staging.numpy()[...] = host_input
            slot[:count].copy_(staging, non_blocking=True)
        graph = self._graphs.get(run_batch)
        if graph is None:
            return [out.contiguous() for out in self._forward(slot[:run_batch])]
        self._static_input[:run_batch].copy_(slot[:run_batch], non_blocking=True)
        graph.replay()
        return self._graph_outputs[run_batch]

    def describe(self) -> dict:
        return {
            "inputs": {self.input.name: [self.max_batch, 3, *self.input_hw]},
            "outputs": {s.name: list(s.max_shape) for s in self.outputs},
            "dynamic_batch": self.dynamic_batch,
            "engine": "PyTorch FP16 stand-in (onnx2torch), not TensorRT",
            "cuda_graphs": self.uses_cuda_graphs,
            "cuda_graph_error": self.graph_error,
            "onnx2torch_aliases": self.aliased_converters,
            "shape_inputs_on_host": len(self.host_shape_inputs),
            "constant_slices": self.frozen_slices,
        }

    @property
    def output_names(self) -> List[str]:
        return [s.name for s in self.outputs]

    def close(self) -> None:
        if self._module is None:
            return
        self._stream.synchronize()
        self._graphs, self._graph_outputs = {}, {}
        self._module = None
        self._slots = []
        self._static_input = None
