"""Building a TensorRT engine from an ONNX model on the device itself.

Written against TensorRT 10's Python API with the 8.5/8.6 differences bridged in ``api``:
explicit-batch network, ONNX parser errors reported with node and operator, the workspace as a
memory-pool limit, FP16 where the platform is fast at it, INT8 with an entropy calibrator, an
optimisation profile from batch 1 to max_batch when the batch is dynamic, a persisted timing
cache, an optional DLA core with GPU fallback, and progress through ``trt.IProgressMonitor``.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from edge_app.detect.base import DetectorError
from edge_app.detect.tensorrt.api import make_logger, init_plugins, network_flags
from edge_app.process.atomic_file import write_atomic
from edge_app.detect.tensorrt.calibration import (DEFAULT_BATCH, CalibrationBatches, calibration_files,
                                                  calibration_fingerprint, make_entropy_calibrator)
from edge_app.detect.tensorrt.onnx_info import OnnxInfo
from edge_app.detect.tensorrt.progress import BuildReporter, make_progress_monitor

log = logging.getLogger(__name__)

_MIB = 1 << 20


class EngineBuildError(DetectorError):
    """The engine could not be built; the message says why in one sentence."""


@dataclass(frozen=True)
class BuildSettings:
    precision: str  # fp32 | fp16 | int8
    max_batch: int
    input_hw: Tuple[int, int]
    workspace_mb: int
    dla_core: Optional[int]
    calibration_dir: Optional[Path]
    engine_dir: Path


def describe_parser_error(error: Any, onnx_nodes: Optional[List[Any]] = None) -> str:
    """'node 57 'Resize_3' (Resize): <description>' from a TensorRT ParserError.

    ``node_name``/``node_operator`` exist from TensorRT 8.6; on 8.5 the ONNX graph supplies them.
    """
    def _get(method: str) -> Any:
        fn = getattr(error, method, None)
        try:
            return fn() if callable(fn) else None
        except Exception:
            return None

    index = _get("node")
    name, operator = _get("node_name"), _get("node_operator")
    if isinstance(index, int) and index >= 0 and onnx_nodes is not None and index < len(onnx_nodes):
        name = name or onnx_nodes[index].name
        operator = operator or onnx_nodes[index].op_type
    where = "the model"
    if isinstance(index, int) and index >= 0:
        where = f"node {index}" + (f" '{name}'" if name else "") + (f" ({operator})" if operator else "")
    description = str(_get("desc") or "unknown error").strip()
    return f"{where}: {description}"


def _onnx_nodes(onnx_path: Path) -> Optional[List[Any]]:
    try:
        import onnx
        return list(onnx.load(str(onnx_path), load_external_data=False).graph.node)
    except Exception:
        return None


def _parse(trt: Any, builder: Any, logger: Any, onnx_path: Path) -> Tuple[Any, Any]:
    network = builder.create_network(network_flags(trt))
    parser = trt.OnnxParser(network, logger)
    if not parser.parse_from_file(str(onnx_path)):
        nodes = _onnx_nodes(onnx_path)
        problems = [describe_parser_error(parser.get_error(i), nodes) for i in range(parser.num_errors)]
        raise EngineBuildError(f"TensorRT's ONNX parser rejected {onnx_path}: " + "; ".join(problems or ["no details given"]))
    return network, parser


def _profile_shapes(info: OnnxInfo, settings: BuildSettings) -> Optional[Tuple[tuple, tuple, tuple]]:
    """(min, opt, max) input shapes when the input has a dynamic dimension, else None."""
    if None not in info.input_shape:
        return None
    height, width = settings.input_hw
    if info.dynamic_batch:
        # opt at max_batch: batches fill up whenever several cameras deliver at once
        return (1, 3, height, width), (settings.max_batch, 3, height, width), (settings.max_batch, 3, height, width)
    fixed = (int(info.input_shape[0]), 3, height, width)
    return fixed, fixed, fixed


def _precision(trt: Any, builder: Any, config: Any, settings: BuildSettings, notes: Dict[str, Any]) -> str:
    fast_fp16 = bool(getattr(builder, "platform_has_fast_fp16", True))
    fast_int8 = bool(getattr(builder, "platform_has_fast_int8", True))
    wanted = settings.precision
    if wanted == "int8" and not fast_int8:
        log.warning("this GPU has no fast INT8; building FP16 instead of INT8")
        wanted = "fp16"
    if wanted == "fp16" and not fast_fp16:
        log.warning("this GPU has no fast FP16; building FP32 instead")
        wanted = "fp32"
    if wanted in ("fp16", "int8") and fast_fp16:
        # with INT8 too: layers that cannot run in INT8 fall back to FP16 rather than FP32
        config.set_flag(trt.BuilderFlag.FP16)
    if wanted == "int8":
        config.set_flag(trt.BuilderFlag.INT8)
    notes["applied_precision"] = wanted
    return wanted


def _dla(trt: Any, builder: Any, config: Any, settings: BuildSettings, notes: Dict[str, Any]) -> None:
    if settings.dla_core is None:
        return
    cores = int(getattr(builder, "num_DLA_cores", 0))
    if settings.dla_core >= cores:
        log.warning("model.dla_core is %d but this device has %d DLA cores; the engine runs on the GPU",
                    settings.dla_core, cores)
        notes["dla"] = "unavailable"
        return
    if notes.get("applied_precision") == "fp32":
        log.warning("DLA runs only FP16/INT8; enabling FP16 for DLA core %d", settings.dla_core)
        config.set_flag(trt.BuilderFlag.FP16)
    config.default_device_type = trt.DeviceType.DLA
    config.DLA_core = int(settings.dla_core)
    # layers the DLA cannot run go to the GPU instead of failing the build
    config.set_flag(trt.BuilderFlag.GPU_FALLBACK)
    notes["dla"] = f"core {settings.dla_core} with GPU fallback"


def _timing_cache(config: Any, path: Path) -> Any:
    data = b""
    if path.is_file():
        try:
            data = path.read_bytes()
        except OSError as err:
            log.warning("ignoring timing cache %s: %s", path, err.strerror)
    cache = config.create_timing_cache(data)
    if not config.set_timing_cache(cache, False):
        log.warning("timing cache %s does not fit this TensorRT/GPU; starting a new one", path.name)
        cache = config.create_timing_cache(b"")
        config.set_timing_cache(cache, False)
    return cache


def _calibrator(trt: Any, builder: Any, config: Any, info: OnnxInfo, settings: BuildSettings, onnx_sha256: str,
                model_stem: str, device: Any, notes: Dict[str, Any]) -> Any:
    if settings.calibration_dir is None:
        raise EngineBuildError("precision int8 needs model.calibration_dir: a folder of a few hundred images like "
                               "the cameras see, used to calibrate (or choose fp16)")
    files = calibration_files(Path(settings.calibration_dir))
    batch = settings.max_batch if info.dynamic_batch else int(info.input_shape[0])
    batch = min(DEFAULT_BATCH, batch) if info.dynamic_batch else batch
    batches = CalibrationBatches(files, settings.input_hw, batch)
    fingerprint = calibration_fingerprint(onnx_sha256, settings.input_hw, files)
    cache_path = settings.engine_dir / f"{model_stem}-{fingerprint}.calib"
    if info.dynamic_batch:
        profile = builder.create_optimization_profile()
        shape = (batches.batch_size, 3, *settings.input_hw)
        profile.set_shape(info.input_name, shape, shape, shape)
        config.set_calibration_profile(profile)
    calibrator = make_entropy_calibrator(trt, batches, device, cache_path,
                                         lambda path, data: write_atomic(path, data, make_folder=True))
    config.int8_calibrator = calibrator
    notes["calibration"] = {"images": len(batches) * batches.batch_size, "batch": batches.batch_size,
                            "cache": cache_path.name}
    return calibrator


def build_engine(trt: Any, onnx_path: Path, info: OnnxInfo, settings: BuildSettings, *, onnx_sha256: str,
                 device: Any, reporter: BuildReporter, timing_cache: Path) -> Tuple[bytes, Dict[str, Any]]:
    """Build and serialise an engine; returns (engine bytes, notes for the sidecar)."""
    started_s = time.monotonic()
    logger = make_logger(trt)
    init_plugins(trt, logger)
    builder = trt.Builder(logger)
    network, parser = _parse(trt, builder, logger, onnx_path)
    config = builder.create_builder_config()
    config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, int(settings.workspace_mb) * _MIB)
    notes: Dict[str, Any] = {}
    precision = _precision(trt, builder, config, settings, notes)
    shapes = _profile_shapes(info, settings)
    if shapes is not None:
        profile = builder.create_optimization_profile()
        profile.set_shape(info.input_name, *shapes)
        config.add_optimization_profile(profile)
        notes["profile"] = {"min": list(shapes[0]), "opt": list(shapes[1]), "max": list(shapes[2])}
    calibrator = None
    if precision == "int8":
        calibrator = _calibrator(trt, builder, config, info, settings, onnx_sha256, onnx_path.stem, device, notes)
    _dla(trt, builder, config, settings, notes)
    cache = _timing_cache(config, timing_cache)
    monitor = make_progress_monitor(trt, reporter)
    if monitor is not None:
        config.progress_monitor = monitor
    reporter.start(monitored=monitor is not None)
    serialized = None
    try:
        serialized = builder.build_serialized_network(network, config)
    finally:
        reporter.finish(serialized is not None)
    if serialized is None:
        if reporter.cancelled:
            raise EngineBuildError(f"the engine build for {onnx_path} was cancelled")
        raise EngineBuildError(f"TensorRT could not build an engine from {onnx_path}; the TensorRT errors logged above say why")
    try:
        write_atomic(timing_cache, bytes((config.get_timing_cache() or cache).serialize()), make_folder=True)
    except OSError as err:
        log.warning("could not save the timing cache %s: %s", timing_cache, err.strerror)
    notes["build_seconds"] = round(time.monotonic() - started_s, 1)
    del calibrator, parser  # kept alive until here: TensorRT holds raw references during the build
    return bytes(serialized), notes
