"""What the stand-in Builder checks and records while "building". NOT TensorRT (see the package doc).

It validates what TensorRT would reject (missing or inconsistent optimisation profile, INT8
without calibration, a DLA core that does not exist), drives the calibrator and the progress
monitor the way TensorRT 10 does, and returns the header stored in the stand-in engine.
"""
from __future__ import annotations

import ctypes
import json
from typing import Any, Dict, List, Optional

import numpy as np

import tensorrt as _trt

CALIBRATION_TAG = b"EDGEAPP-STANDIN-CALIBRATION\n"


class _Cancelled(Exception):
    pass


class _Monitor:
    """Calls the user's IProgressMonitor (if any) like TensorRT does: nested phases with steps."""

    def __init__(self, monitor) -> None:
        self.monitor = monitor

    def start(self, name: str, parent: Optional[str], steps: int) -> None:
        if self.monitor is not None:
            self.monitor.phase_start(name, parent, steps)

    def step(self, name: str, step: int) -> None:
        if self.monitor is not None and self.monitor.step_complete(name, step) is False:
            self.monitor.phase_finish(name)
            raise _Cancelled()

    def finish(self, name: str) -> None:
        if self.monitor is not None:
            self.monitor.phase_finish(name)


def _check_profiles(builder, network, config) -> Optional[List[Dict[str, List[list]]]]:
    dynamic = [t for t in (network.get_input(i) for i in range(network.num_inputs)) if -1 in tuple(t.shape)]
    if dynamic and not config.profiles:
        builder._error("Network has dynamic or shape inputs, but no optimization profile has been defined.")
        return None
    profiles = []
    for profile in config.profiles:
        for tensor in dynamic:
            shapes = profile.shapes.get(tensor.name)
            if shapes is None:
                builder._error(f"optimization profile is missing values for input {tensor.name}")
                return None
            low, opt, high = shapes
            static_ok = all(d == -1 or (a == d and b == d and c == d) for d, a, b, c in zip(tensor.shape, low, opt, high))
            ordered = all(a <= b <= c for a, b, c in zip(low, opt, high))
            if len(low) != len(tensor.shape) or not static_ok or not ordered or min(low) < 1:
                builder._error(f"invalid optimization profile for {tensor.name}: {shapes} vs {tuple(tensor.shape)}")
                return None
        profiles.append({name: [list(s) for s in shapes] for name, shapes in profile.shapes.items()})
    return profiles


def _read_host(address: int, shape, dtype) -> np.ndarray:
    count = int(np.prod(shape))
    raw = (ctypes.c_uint8 * (count * np.dtype(dtype).itemsize)).from_address(int(address))
    return np.frombuffer(raw, dtype=dtype, count=count).reshape(shape).copy()


def _calibrate(builder, network, config, monitor: _Monitor) -> Optional[Dict[str, Any]]:
    calibrator = config.int8_calibrator
    if calibrator is None:
        builder._error("INT8 is enabled but no calibrator is set and the network has no Q/DQ scales")
        return None
    cached = calibrator.read_calibration_cache()
    if cached:
        data = bytes(cached)
        if not data.startswith(CALIBRATION_TAG):
            builder._error("calibration cache is not valid; recalibrate")
            return None
        return dict(json.loads(data[len(CALIBRATION_TAG):].decode()), from_cache=True)
    tensor = network.get_input(0)
    batch = int(calibrator.get_batch_size())
    shape = list(tensor.shape)
    if -1 in shape:
        profile = config.calibration_profile or (config.profiles[0] if config.profiles else None)
        if profile is None or tensor.name not in profile.shapes:
            builder._error("calibration of a network with dynamic shapes needs a calibration profile")
            return None
        shape = list(profile.shapes[tensor.name][1])
        if config.calibration_profile is not None and shape[0] != batch:
            builder._error(f"calibration profile batch {shape[0]} differs from the calibrator's batch size {batch}")
            return None
    shape[0] = batch
    monitor.start("Calibrating INT8", "Building engine", 1)
    batches, low, high, total = 0, np.inf, -np.inf, 0.0
    while True:
        pointers = calibrator.get_batch([tensor.name])
        if not pointers:
            break
        values = _read_host(pointers[0], shape, np.float32)
        batches += 1
        low, high, total = min(low, float(values.min())), max(high, float(values.max())), total + float(values.mean())
    monitor.step("Calibrating INT8", 0)
    monitor.finish("Calibrating INT8")
    if batches == 0:
        builder._error("calibrator returned no batches")
        return None
    result = {"batches": batches, "batch_size": batch, "min": low, "max": high, "mean": total / batches}
    calibrator.write_calibration_cache(CALIBRATION_TAG + json.dumps(result).encode())
    return dict(result, from_cache=False)


def _device(builder, config) -> Optional[str]:
    if config.default_device_type != _trt.DeviceType.DLA:
        return "GPU"
    if not 0 <= config.DLA_core < builder.num_DLA_cores:
        builder._error(f"DLA core {config.DLA_core} requested but the device has {builder.num_DLA_cores}")
        return None
    if not (config.get_flag(_trt.BuilderFlag.FP16) or config.get_flag(_trt.BuilderFlag.INT8)):
        builder._error("DLA requires FP16 or INT8 precision")
        return None
    fallback = "+GPU fallback" if config.get_flag(_trt.BuilderFlag.GPU_FALLBACK) else ""
    return f"DLA:{config.DLA_core}{fallback}"


def run_build(builder, network, config) -> Optional[Dict[str, Any]]:
    if network.model is None:
        builder._error("network has no layers (nothing was parsed)")
        return None
    monitor = _Monitor(config.progress_monitor)
    try:
        monitor.start("Building engine", None, 3)
        profiles = _check_profiles(builder, network, config)
        device = _device(builder, config)
        if profiles is None or device is None:
            monitor.finish("Building engine")
            return None
        monitor.step("Building engine", 0)
        calibration = None
        if config.get_flag(_trt.BuilderFlag.INT8):
            calibration = _calibrate(builder, network, config, monitor)
            if calibration is None:
                monitor.finish("Building engine")
                return None
        monitor.start("Tactic selection", "Building engine", 4)
        for step in range(4):
            monitor.step("Tactic selection", step)
        monitor.finish("Tactic selection")
        monitor.step("Building engine", 1)
        if config.get_timing_cache() is not None:
            config.get_timing_cache().entries += len(network.model.graph.node)
        monitor.step("Building engine", 2)
        monitor.finish("Building engine")
    except _Cancelled:
        builder._error("engine build was cancelled by the progress monitor")
        return None
    return {
        "tensorrt_version": _trt.__version__,
        "precision": {"fp16": config.get_flag(_trt.BuilderFlag.FP16), "int8": config.get_flag(_trt.BuilderFlag.INT8)},
        "workspace_bytes": config.get_memory_pool_limit(_trt.MemoryPoolType.WORKSPACE),
        "profiles": profiles,
        "device": device,
        "calibration": calibration,
    }
