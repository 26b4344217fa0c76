"""Stand-in Runtime, engine and execution context. NOT TensorRT (see the package doc).

The "engine" runs its ONNX model with ONNX Runtime when ``execute_async_v3`` is called, reading
inputs from and writing outputs to the host memory behind the addresses given with
``set_tensor_address`` (the host-memory CUDA stand-in hands out ordinary host memory).
"""
from __future__ import annotations

import ctypes
import os
from typing import Dict, List, Optional

import numpy as np
import onnx
import onnxruntime as ort

import tensorrt as _trt
from tensorrt import _format
from tensorrt._builder import _value_dtype, _value_shape
from tensorrt._efficient_nms import efficient_nms


class Runtime:
    def __init__(self, logger) -> None:
        self.logger = logger

    def deserialize_cuda_engine(self, serialized_engine) -> Optional["ICudaEngine"]:
        header, onnx_bytes, problem = _format.unpack(bytes(serialized_engine))
        if header is None:
            self.logger.log(_trt.ILogger.Severity.ERROR, f"IRuntime::deserializeCudaEngine: {problem}")
            return None
        if header.get("tensorrt_version") != _trt.__version__:
            self.logger.log(_trt.ILogger.Severity.ERROR,
                            f"IRuntime::deserializeCudaEngine: engine was built with TensorRT "
                            f"{header.get('tensorrt_version')} and cannot be loaded by {_trt.__version__}")
            return None
        return ICudaEngine(header, onnx_bytes)


class _Tensor:
    def __init__(self, value: onnx.ValueInfoProto, is_input: bool) -> None:
        self.name = value.name
        self.shape = _value_shape(value)
        self.dtype = _value_dtype(value)
        self.is_input = is_input


class ICudaEngine:
    def __init__(self, header: Dict, onnx_bytes: bytes) -> None:
        self.header = header
        model = onnx.load_from_string(onnx_bytes)
        initializers = {i.name for i in model.graph.initializer}
        self._tensors = [_Tensor(v, True) for v in model.graph.input if v.name not in initializers]
        self._tensors += [_Tensor(v, False) for v in model.graph.output]
        self._by_name = {t.name: t for t in self._tensors}
        self._nms_attrs: Optional[Dict] = None
        nms = [n for n in model.graph.node if n.op_type == "EfficientNMS_TRT"]
        if nms:
            model = self._cut_before_plugin(model, nms[0])
        options = ort.SessionOptions()
        options.intra_op_num_threads = max(1, len(os.sched_getaffinity(0)))
        options.log_severity_level = 3
        self.session = ort.InferenceSession(model.SerializeToString(), sess_options=options,
                                            providers=["CPUExecutionProvider"])

    def _cut_before_plugin(self, model: onnx.ModelProto, node: onnx.NodeProto) -> onnx.ModelProto:
        """ONNX Runtime cannot run the TensorRT plugin: run the graph up to it, emulate it after."""
        self._nms_attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        graph = model.graph
        kept = [n for n in graph.node if n is not node]
        outputs = [onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None) for name in node.input[:2]]
        new_graph = onnx.helper.make_graph(kept, graph.name, list(graph.input), outputs, list(graph.initializer))
        cut = onnx.helper.make_model(new_graph, opset_imports=list(model.opset_import))
        cut.ir_version = model.ir_version
        return cut

    @property
    def num_io_tensors(self) -> int:
        return len(self._tensors)

    @property
    def num_optimization_profiles(self) -> int:
        return max(1, len(self.header.get("profiles") or []))

    def get_tensor_name(self, index: int) -> str:
        return self._tensors[index].name

    def get_tensor_mode(self, name: str):
        tensor = self._by_name.get(name)
        if tensor is None:
            return _trt.TensorIOMode.NONE
        return _trt.TensorIOMode.INPUT if tensor.is_input else _trt.TensorIOMode.OUTPUT

    def get_tensor_shape(self, name: str):
        return _trt.Dims(self._by_name[name].shape)

    def get_tensor_dtype(self, name: str):
        return self._by_name[name].dtype

    def get_tensor_profile_shape(self, name: str, profile_index: int) -> List:
        profiles = self.header.get("profiles") or []
        if profile_index < len(profiles) and name in profiles[profile_index]:
            return [_trt.Dims(s) for s in profiles[profile_index][name]]
        shape = _trt.Dims(self._by_name[name].shape)
        return [shape, shape, shape]

    def create_execution_context(self) -> "IExecutionContext":
        return IExecutionContext(self)

    def _tensors_of(self, is_input: bool) -> List[_Tensor]:
        return [t for t in self._tensors if t.is_input == is_input]


def _host_array(address: int, shape, dtype) -> np.ndarray:
    count = int(np.prod(shape))
    raw = (ctypes.c_uint8 * max(1, count * np.dtype(dtype).itemsize)).from_address(int(address))
    return np.frombuffer(raw, dtype=dtype, count=count).reshape(shape)


class IExecutionContext:
    def __init__(self, engine: ICudaEngine) -> None:
        self.engine = engine
        self._shapes = {t.name: tuple(t.shape) for t in engine._tensors_of(True)}
        self._addresses: Dict[str, int] = {}
        self.execute_calls: List[int] = []

    def set_input_shape(self, name: str, shape) -> bool:
        tensor = self.engine._by_name.get(name)
        shape = tuple(int(d) for d in shape)
        if tensor is None or not tensor.is_input or len(shape) != len(tensor.shape):
            return False
        low, _, high = (tuple(s) for s in self.engine.get_tensor_profile_shape(name, 0))
        if not all(a <= d <= b for a, d, b in zip(low, shape, high)):
            return False
        self._shapes[name] = shape
        return True

    def get_tensor_shape(self, name: str):
        tensor = self.engine._by_name[name]
        if tensor.is_input:
            return _trt.Dims(self._shapes[name])
        batch = next(iter(self._shapes.values()))[0]
        shape = list(tensor.shape)
        if shape and shape[0] == -1:
            shape[0] = batch
        return _trt.Dims(shape)

    def set_tensor_address(self, name: str, memory: int) -> bool:
        if name not in self.engine._by_name:
            return False
        self._addresses[name] = int(memory)
        return True

    def get_tensor_address(self, name: str) -> int:
        return self._addresses.get(name, 0)

    def execute_async_v3(self, stream_handle: int) -> bool:
        engine = self.engine
        if any(t.name not in self._addresses for t in engine._tensors):
            return False
        if any(-1 in s for s in self._shapes.values()):
            return False
        self.execute_calls.append(int(stream_handle))
        feeds = {}
        for tensor in engine._tensors_of(True):
            dtype = _trt.nptype(tensor.dtype)
            feeds[tensor.name] = _host_array(self._addresses[tensor.name], self._shapes[tensor.name], dtype).copy()
        results = engine.session.run(None, feeds)
        if engine._nms_attrs is not None:
            results = efficient_nms(results[0], results[1], engine._nms_attrs)
        for tensor, value in zip(engine._tensors_of(False), results):
            shape = tuple(self.get_tensor_shape(tensor.name))
            dtype = _trt.nptype(tensor.dtype)
            if tuple(value.shape) != shape:
                return False
            out = np.ascontiguousarray(value, dtype=dtype)
            ctypes.memmove(self._addresses[tensor.name], out.ctypes.data, out.nbytes)
        return True
