"""Running a deserialised engine: named IO tensors, buffers allocated once, async execution.

Everything is sized for the engine's largest batch at load time; a frame only costs copies and
one ``execute_async_v3`` on the stream. The pipeline runs preprocess, infer and decode on three
threads, so up to three batches are alive at once: input slots for the GPU preprocessing and
host output sets rotate over ``ROTATION`` buffers, never reused while a batch may still use them.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from edge_app.cuda import CudaDevice, DeviceBuffer, Stream
from edge_app.detect.base import DetectorError
from edge_app.detect.tensorrt.api import make_logger, init_plugins

log = logging.getLogger(__name__)

#: batch k in the model, k+1 queued, k+2 being prepared (or k-1 decoding, k queued, k+1 running)
ROTATION = 3


class EngineLoadError(DetectorError):
    """The engine bytes could not be deserialised by this TensorRT on this GPU."""


@dataclass
class TensorSpec:
    name: str
    shape: Tuple[int, ...]  # as the engine states it; -1 for a dynamic dimension
    dtype: np.dtype
    is_input: bool
    max_shape: Tuple[int, ...] = ()
    device: List[DeviceBuffer] = field(default_factory=list)
    host: List[np.ndarray] = field(default_factory=list)


def _np_dtype(trt: Any, dtype: Any) -> np.dtype:
    try:
        return np.dtype(trt.nptype(dtype))
    except TypeError as err:
        raise DetectorError(f"engine tensor type {dtype} has no numpy equivalent ({err})") from None


class EngineRuntime:
    """One engine, one execution context, one stream; buffers for ``max_batch`` images."""

    def __init__(self, trt: Any, engine_bytes: bytes, device: CudaDevice, max_batch: int, label: str) -> None:
        self._trt = trt
        self._device = device
        self.label = label
        device.make_current()
        self._logger = make_logger(trt)
        init_plugins(trt, self._logger)
        self._runtime = trt.Runtime(self._logger)
        engine = self._runtime.deserialize_cuda_engine(engine_bytes)
        if engine is None:
            raise EngineLoadError(f"{label} could not be deserialised by TensorRT {trt.__version__} on {device.name}")
        self._engine = engine
        self._context = engine.create_execution_context()
        if self._context is None:
            raise EngineLoadError(f"TensorRT could not create an execution context for {label} (out of GPU memory?)")
        self._specs = self._discover()
        inputs = [s for s in self._specs if s.is_input]
        if len(inputs) != 1 or len(inputs[0].shape) != 4:
            described = ", ".join(f"{s.name} {list(s.shape)}" for s in inputs)
            raise DetectorError(f"{label} has inputs [{described}]; expected one image input N x 3 x H x W")
        self.input = inputs[0]
        self.outputs = [s for s in self._specs if not s.is_input]
        self.dynamic_batch = self.input.shape[0] == -1
        self.max_batch = self._batch_capacity(max_batch)
        self.input_hw = self._input_hw()
        self._stream: Stream = device.create_stream()
        self._bound_batch = 0
        self._bound_input_slot = -1
        self._next_output = 0
        self._allocate()

    # -- discovery --------------------------------------------------------------------------
    def _discover(self) -> List[TensorSpec]:
        trt, engine = self._trt, self._engine
        specs = []
        for index in range(engine.num_io_tensors):
            name = engine.get_tensor_name(index)
            is_input = engine.get_tensor_mode(name) == trt.TensorIOMode.INPUT
            shape = tuple(int(d) for d in engine.get_tensor_shape(name))
            specs.append(TensorSpec(name, shape, _np_dtype(trt, engine.get_tensor_dtype(name)), is_input))
        return specs

    def _batch_capacity(self, wanted: int) -> int:
        if not self.dynamic_batch:
            if wanted != self.input.shape[0]:
                log.info("%s has a fixed batch of %d; max_batch %d becomes %d", self.label, self.input.shape[0],
                         wanted, self.input.shape[0])
            return int(self.input.shape[0])
        _, _, largest = self._engine.get_tensor_profile_shape(self.input.name, 0)
        limit = int(largest[0])
        if wanted > limit:
            log.warning("%s accepts batches up to %d; max_batch %d becomes %d", self.label, limit, wanted, limit)
        return max(1, min(wanted, limit))

    def _input_hw(self) -> Tuple[int, int]:
        _, channels, height, width = self.input.shape
        if channels not in (3, -1) or height <= 0 or width <= 0:
            raise DetectorError(f"{self.label} input {self.input.name} {list(self.input.shape)} is not N x 3 x H x W "
                                "with a fixed height and width")
        return int(height), int(width)

    def _allocate(self) -> None:
        """Size every buffer for the largest batch, then bind addresses that never change."""
        height, width = self.input_hw
        self.input.max_shape = (self.max_batch, 3, height, width)
        if self.dynamic_batch:
            if not self._context.set_input_shape(self.input.name, self.input.max_shape):
                raise DetectorError(f"{self.label} rejects input shape {list(self.input.max_shape)}")
        nbytes = int(np.prod(self.input.max_shape)) * self.input.dtype.itemsize
        self.input.device = [self._device.alloc_device(nbytes) for _ in range(ROTATION)]
        self.input.host = [self._device.alloc_pinned(self.input.max_shape, self.input.dtype)]
        for spec in self.outputs:
            shape = tuple(int(d) for d in self._context.get_tensor_shape(spec.name))
            if any(d < 0 for d in shape):
                raise DetectorError(f"{self.label} output {spec.name} has a data-dependent shape {list(shape)}; "
                                    "engines must have fixed-size outputs (EfficientNMS pads to max detections)")
            spec.max_shape = shape
            spec.device = [self._device.alloc_device(max(1, int(np.prod(shape))) * spec.dtype.itemsize)]
            spec.host = [self._device.alloc_pinned(shape, spec.dtype) for _ in range(ROTATION)]
            self._context.set_tensor_address(spec.name, spec.device[0].ptr)
        self._bind_input(0)
        self._bound_batch = self.max_batch
        total_mb = (nbytes * ROTATION + sum(s.device[0].nbytes for s in self.outputs)) / (1 << 20)
        log.debug("%s: %.1f MiB of IO buffers for batch %d", self.label, total_mb, self.max_batch)

    def _bind_input(self, slot: int) -> None:
        if slot != self._bound_input_slot:
            self._context.set_tensor_address(self.input.name, self.input.device[slot].ptr)
            self._bound_input_slot = slot

    # -- execution --------------------------------------------------------------------------
    @property
    def stream(self) -> Stream:
        return self._stream

    def input_slot_ptr(self, slot: int) -> int:
        """Device address of input slot ``slot`` (the GPU preprocessing writes there)."""
        return self.input.device[slot % ROTATION].ptr

    def run(self, count: int, host_input: Optional[np.ndarray] = None, input_slot: int = 0) -> List[np.ndarray]:
        """Run ``count`` images; returns the outputs as views valid for ``ROTATION`` further runs.

        ``host_input`` (count x 3 x H x W) is copied in through the pinned buffer; without it the
        images must already be in device input slot ``input_slot``.
        """
        run_batch = self._enqueue(count, host_input, input_slot)
        out_set = self._next_output
        self._next_output = (self._next_output + 1) % ROTATION
        results = []
        for spec in self.outputs:
            view = spec.host[out_set][:run_batch] if self.dynamic_batch else spec.host[out_set]
            self._device.memcpy_dtoh_async(view, spec.device[0].ptr, self._stream)
            results.append(view[:count])
        self._stream.synchronize()
        return results

    def run_on_device(self, count: int, host_input: Optional[np.ndarray] = None, input_slot: int = 0) -> List[int]:
        """As ``run``, but the outputs stay on the device: their addresses, complete on return and
        valid until the next run (GPU decoding reads them there)."""
        self._enqueue(count, host_input, input_slot)
        self._stream.synchronize()
        return [spec.device[0].ptr for spec in self.outputs]

    def _enqueue(self, count: int, host_input: Optional[np.ndarray], input_slot: int) -> int:
        """Queue the input copy and the engine on the stream; returns the batch the engine runs."""
        if not 1 <= count <= self.max_batch:
            raise ValueError(f"batch of {count} outside 1..{self.max_batch}")
        device = self._device
        device.make_current()
        run_batch = count if self.dynamic_batch else self.max_batch
        if self.dynamic_batch and run_batch != self._bound_batch:
            if not self._context.set_input_shape(self.input.name, (run_batch, 3, *self.input_hw)):
                raise DetectorError(f"{self.label} rejects a batch of {run_batch}")
            self._bound_batch = run_batch
        slot = input_slot % ROTATION
        self._bind_input(slot)
        if host_input is not None:
            staging = self.input.host[0][:count]
            np.copyto(staging, host_input, casting="same_kind")
            device.memcpy_htod_async(self.input.device[slot].ptr, staging, self._stream)
        if not self._context.execute_async_v3(self._stream.handle):
            raise DetectorError(f"TensorRT failed to run {self.label}; see the TensorRT error logged above")
        return run_batch

    def describe(self) -> dict:
        return {
            "inputs": {self.input.name: [self.max_batch, 3, *self.input_hw]},
            "outputs": {s.name: list(s.max_shape) for s in self.outputs},
            "dynamic_batch": self.dynamic_batch,
        }

    @property
    def output_names(self) -> Sequence[str]:
        return [s.name for s in self.outputs]

    def close(self) -> None:
        # TensorRT objects go before the memory they point at; the device frees the buffers
        self._context = None
        self._engine = None
        self._runtime = None
