"""Stand-in Builder, network, ONNX parser and builder config. NOT TensorRT (see the package doc)."""
from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

import onnx

import tensorrt as _trt
from tensorrt import _format

_STANDARD_DOMAINS = ("", "ai.onnx", "com.microsoft")
#: plugins the stand-in "has registered" (TensorRT's bundled ones that edge-app relies on)
_PLUGIN_OPS = ("EfficientNMS_TRT",)
_ONNX_TO_TRT = {onnx.TensorProto.FLOAT: 0, onnx.TensorProto.FLOAT16: 1, onnx.TensorProto.INT8: 2,
                onnx.TensorProto.INT32: 3, onnx.TensorProto.BOOL: 4, onnx.TensorProto.UINT8: 5,
                onnx.TensorProto.INT64: 8}


class IHostMemory(bytes):
    """Serialized data; supports the buffer protocol like TensorRT's IHostMemory."""

    @property
    def nbytes(self) -> int:
        return len(self)


class ITensor:
    def __init__(self, name: str, shape, dtype) -> None:
        self.name, self.shape, self.dtype = name, _trt.Dims(shape), dtype


def _value_shape(value: onnx.ValueInfoProto) -> tuple:
    dims = value.type.tensor_type.shape.dim
    return tuple(int(d.dim_value) if d.HasField("dim_value") and d.dim_value > 0 else -1 for d in dims)


def _value_dtype(value: onnx.ValueInfoProto):
    return _trt.DataType(_ONNX_TO_TRT.get(value.type.tensor_type.elem_type, 0))


class INetworkDefinition:
    def __init__(self, flags: int) -> None:
        self.flags = flags
        self.onnx_bytes = b""
        self.model: Optional[onnx.ModelProto] = None
        self._inputs: List[ITensor] = []
        self._outputs: List[ITensor] = []

    @property
    def num_inputs(self) -> int:
        return len(self._inputs)

    @property
    def num_outputs(self) -> int:
        return len(self._outputs)

    def get_input(self, index: int) -> ITensor:
        return self._inputs[index]

    def get_output(self, index: int) -> ITensor:
        return self._outputs[index]

    def _load(self, model: onnx.ModelProto, data: bytes) -> None:
        self.model, self.onnx_bytes = model, data
        initializers = {i.name for i in model.graph.initializer}
        self._inputs = [ITensor(v.name, _value_shape(v), _value_dtype(v)) for v in model.graph.input
                        if v.name not in initializers]
        self._outputs = [ITensor(v.name, _value_shape(v), _value_dtype(v)) for v in model.graph.output]


class ParserError:
    """tensorrt.ParserError; node_name/node_operator exist from TensorRT 8.6 on."""

    def __init__(self, code, desc: str, node: int = -1, name: str = "", operator: str = "") -> None:
        self._code, self._desc, self._node, self._name, self._operator = code, desc, node, name, operator

    def code(self):
        return self._code

    def desc(self) -> str:
        return self._desc

    def node(self) -> int:
        return self._node

    def file(self) -> str:
        return "standin_parser.py"

    def line(self) -> int:
        return 0

    def func(self) -> str:
        return "parse"

    def __getattr__(self, name: str):
        if name in ("node_name", "node_operator") and _trt._version()[:2] >= (8, 6):
            return (lambda: self._name) if name == "node_name" else (lambda: self._operator)
        raise AttributeError(name)


class OnnxParser:
    def __init__(self, network: INetworkDefinition, logger) -> None:
        self._network, self._logger = network, logger
        self._errors: List[ParserError] = []

    @property
    def num_errors(self) -> int:
        return len(self._errors)

    def get_error(self, index: int) -> ParserError:
        return self._errors[index]

    def clear_errors(self) -> None:
        self._errors = []

    def parse_from_file(self, model: str) -> bool:
        with open(model, "rb") as handle:
            return self.parse(handle.read(), model)

    def parse(self, model, path: Optional[str] = None) -> bool:
        data = bytes(model)
        if _trt._version()[0] < 10 and not self._network.flags & (1 << int(_trt.NetworkDefinitionCreationFlag.EXPLICIT_BATCH)):
            self._errors.append(ParserError(_trt.ErrorCode.INVALID_GRAPH, "network must be created with the explicit batch flag"))
            return False
        try:
            proto = onnx.load_from_string(data)
        except Exception as err:
            self._errors.append(ParserError(_trt.ErrorCode.MODEL_DESERIALIZE_FAILED, f"failed to parse ONNX model: {err}"))
            return False
        for index, node in enumerate(proto.graph.node):
            if node.domain not in _STANDARD_DOMAINS and node.op_type not in _PLUGIN_OPS:
                self._errors.append(ParserError(
                    _trt.ErrorCode.UNSUPPORTED_NODE,
                    f"No importer registered for op: {node.op_type}. Attempting to import as plugin... plugin not found",
                    index, node.name, node.op_type))
        if self._errors:
            return False
        self._network._load(proto, data)
        return True


class IOptimizationProfile:
    def __init__(self) -> None:
        self.shapes: Dict[str, List[tuple]] = {}

    def set_shape(self, input: str, min, opt, max) -> None:  # noqa: A002 - TensorRT's names
        self.shapes[input] = [tuple(int(d) for d in s) for s in (min, opt, max)]

    def get_shape(self, input: str) -> List[Any]:  # noqa: A002
        return [_trt.Dims(s) for s in self.shapes.get(input, [])]


class ITimingCache:
    def __init__(self, entries: int, version: str) -> None:
        self.entries, self.version = entries, version

    def serialize(self) -> IHostMemory:
        return IHostMemory(json.dumps({"standin_timing_cache": self.version, "entries": self.entries}).encode())

    def reset(self) -> bool:
        self.entries = 0
        return True


class IBuilderConfig:
    def __init__(self) -> None:
        self.flags = 0
        self.pool_limits: Dict[Any, int] = {}
        self.profiles: List[IOptimizationProfile] = []
        self.calibration_profile: Optional[IOptimizationProfile] = None
        self.int8_calibrator = None
        self.default_device_type = _trt.DeviceType.GPU
        self.DLA_core = -1
        self._timing_cache: Optional[ITimingCache] = None
        self._monitor = None

    def set_flag(self, flag) -> None:
        self.flags |= 1 << int(flag)

    def clear_flag(self, flag) -> None:
        self.flags &= ~(1 << int(flag))

    def get_flag(self, flag) -> bool:
        return bool(self.flags & (1 << int(flag)))

    def set_memory_pool_limit(self, pool, pool_size: int) -> None:
        self.pool_limits[pool] = int(pool_size)

    def get_memory_pool_limit(self, pool) -> int:
        return self.pool_limits.get(pool, 0)

    def add_optimization_profile(self, profile: IOptimizationProfile) -> int:
        self.profiles.append(profile)
        return len(self.profiles) - 1

    @property
    def num_optimization_profiles(self) -> int:
        return len(self.profiles)

    def set_calibration_profile(self, profile: IOptimizationProfile) -> bool:
        self.calibration_profile = profile
        return True

    def get_calibration_profile(self) -> Optional[IOptimizationProfile]:
        return self.calibration_profile

    def create_timing_cache(self, serialized_timing_cache) -> ITimingCache:
        data = bytes(serialized_timing_cache)
        if not data:
            return ITimingCache(0, _trt.__version__)
        try:
            parsed = json.loads(data.decode())
            return ITimingCache(int(parsed["entries"]), str(parsed["standin_timing_cache"]))
        except (ValueError, KeyError, UnicodeDecodeError):
            return ITimingCache(0, "corrupt")

    def set_timing_cache(self, cache: ITimingCache, ignore_mismatch: bool) -> bool:
        if cache.version != _trt.__version__ and not ignore_mismatch:
            return False
        self._timing_cache = cache
        return True

    def get_timing_cache(self) -> Optional[ITimingCache]:
        return self._timing_cache

    @property
    def progress_monitor(self):
        return self._monitor

    @progress_monitor.setter
    def progress_monitor(self, monitor) -> None:
        if _trt._version()[0] < 10:
            raise AttributeError("'IBuilderConfig' object has no attribute 'progress_monitor'")
        self._monitor = monitor


class Builder:
    #: what the simulated device offers; tests change these class attributes
    simulated_dla_cores = 0
    simulated_fast_fp16 = True
    simulated_fast_int8 = True

    def __init__(self, logger) -> None:
        self.logger = logger
        self.platform_has_fast_fp16 = type(self).simulated_fast_fp16
        self.platform_has_fast_int8 = type(self).simulated_fast_int8
        self.num_DLA_cores = type(self).simulated_dla_cores
        self.max_DLA_batch_size = 1

    def create_network(self, flags: int = 0) -> INetworkDefinition:
        return INetworkDefinition(flags)

    def create_builder_config(self) -> IBuilderConfig:
        return IBuilderConfig()

    def create_optimization_profile(self) -> IOptimizationProfile:
        return IOptimizationProfile()

    def _error(self, text: str) -> None:
        self.logger.log(_trt.ILogger.Severity.ERROR, text)

    def build_serialized_network(self, network: INetworkDefinition, config: IBuilderConfig) -> Optional[IHostMemory]:
        from tensorrt._build_steps import run_build
        header = run_build(self, network, config)
        if header is None:
            return None
        return IHostMemory(_format.pack(header, network.onnx_bytes))


__all__ = ["Builder", "IBuilderConfig", "IHostMemory", "INetworkDefinition", "IOptimizationProfile", "ITensor",
           "ITimingCache", "OnnxParser", "ParserError"]
