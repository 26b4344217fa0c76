"""``edge-app selftest``: what a Jetson owner runs to check the device end to end.

It first names each model with how it would run here, the cameras that name it and, for a model
from the fleet service, its artifact and version (``selftest_models``). It reports the video
decoders the device has (and decodes a test clip with one of them), the
TensorRT, CUDA and driver versions and the GPU, builds a small engine from the
configured model, runs sample images through TensorRT and through ONNX Runtime and compares the
detections, and checks the GPU letterbox against the CPU one. Given a configuration, it also
warns (``WARN``, not a failure) when the MQTT broker accepts clients without a login, and when the
appliance running here sees another client take its MQTT session over. Each check prints one
``PASS``/``FAIL``/``SKIP`` line; any FAIL makes the exit code 1. On a machine with an NVIDIA GPU,
a missing TensorRT or CUDA is said plainly on a FAIL line, and the checks that need them are
skipped. On a machine without one they are not applicable (SKIP) unless the model needs them,
and the sample images run through ONNX Runtime on the CPU instead.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, TextIO, Union

import numpy as np

from edge_app.commands.demo_clip import IMAGE_SUFFIXES
from edge_app.commands.selftest_models import describe_model, model_to_check
from edge_app.config.schema import AppConfig, ModelConfig
from edge_app.cuda.mps import mps_status
from edge_app.detect.base import Detector, DetectorError
from edge_app.detect.factory import TENSORRT
from edge_app.detect.image_io import ImageReadError, load_image
from edge_app.detect.model_metadata import is_engine_file
from edge_app.detect.nms import box_iou
from edge_app.detect.detections import Detections
from edge_app.opencv import OpenCVUnavailable, opencv

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"
#: A finding that does not fail the device but needs the owner's attention (exit code stays 0).
WARN = "WARN"
#: detections at least this confident must appear in both runtimes
STRONG_CONFIDENCE = 0.5
#: IoU a TensorRT box must reach with its ONNX Runtime twin (INT8 moves boxes more)
MATCH_IOU = {"fp32": 0.85, "fp16": 0.8, "int8": 0.6}
NOT_APPLICABLE = "not applicable: no NVIDIA GPU on this machine"
#: device nodes of an NVIDIA GPU: a dGPU's /dev/nvidia0.., a Jetson's /dev/nvhost-* and /dev/nvgpu
_GPU_NODE = re.compile(r"nvidia\d+|nvhost-.*|nvgpu")


def nvidia_gpu_present(dev_dir: Path = Path("/dev")) -> bool:
    """Whether this machine shows an NVIDIA GPU at all (a driver that cannot open it is another matter)."""
    try:
        return any(_GPU_NODE.fullmatch(name) for name in os.listdir(dev_dir))
    except OSError:
        return False


def _needs_tensorrt(model: ModelConfig) -> bool:
    return model.backend == TENSORRT or is_engine_file(model.path)


@dataclass
class Report:
    stream: TextIO = field(default_factory=lambda: sys.stdout)
    results: List[tuple] = field(default_factory=list)

    def add(self, status: str, name: str, detail: str) -> None:
        self.results.append((status, name, detail))
        print(f"{status}  {name}: {detail}", file=self.stream, flush=True)

    @property
    def exit_code(self) -> int:
        return 1 if any(r[0] == FAIL for r in self.results) else 0


@dataclass
class _ModelChecks:
    """The report, with every check named after the model it is about (several models)."""

    report: Report
    model_name: str

    def add(self, status: str, name: str, detail: str) -> None:
        self.report.add(status, f"model {self.model_name}: {name}", detail)


def _model_configs(config_or_model_path: Union[AppConfig, ModelConfig, str, os.PathLike]) -> Dict[str, ModelConfig]:
    """Every model to check by name: each of a configuration's models, or the one given."""
    if isinstance(config_or_model_path, AppConfig):
        return config_or_model_path.model_configs()
    if isinstance(config_or_model_path, ModelConfig):
        return {"default": config_or_model_path}
    return {"default": ModelConfig(path=str(config_or_model_path))}


def _sample_images(model: ModelConfig, images: Sequence[Any]) -> List[Path]:
    if images:
        return [Path(p) for p in images]
    candidates = [os.environ.get("EDGE_APP_SAMPLE_IMAGES", ""), Path(model.path).resolve().parent.parent / "images",
                  Path.cwd().parent / "shared" / "images", Path.cwd() / "shared" / "images"]
    for folder in (Path(c) for c in candidates if str(c)):
        if folder.is_dir():
            found = sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
            if found:
                return found
    return []


def _check_tensorrt(report: Report, required: bool) -> Optional[Any]:
    from edge_app.detect.tensorrt.api import import_tensorrt, is_standin
    try:
        trt = import_tensorrt()
    except DetectorError as err:
        report.add(FAIL if required else SKIP, "TensorRT", f"not available - {err}" if required else NOT_APPLICABLE)
        return None
    if is_standin(trt):
        report.add(FAIL, "TensorRT", "the importable 'tensorrt' is the test suite's stand-in, not TensorRT")
        return None
    report.add(PASS, "TensorRT", f"version {trt.__version__}")
    return trt


def _check_cuda(report: Report, required: bool) -> Optional[Any]:
    from edge_app.cuda import CudaError, available_adapters, open_device
    try:
        device = open_device()
    except CudaError as err:
        adapters = ", ".join(available_adapters()) or "none installed"
        report.add(FAIL if required else SKIP, "CUDA",
                   f"no usable GPU ({err}; Python bindings: {adapters})" if required else NOT_APPLICABLE)
        return None
    major, minor = device.compute_capability
    report.add(PASS, "CUDA", f"{device.adapter_name} {device.binding_version()}, driver supports CUDA {device.driver_version}")
    report.add(PASS, "GPU", f"{device.name}, compute capability {major}.{minor}")
    if device.has_nvrtc:
        report.add(PASS, "NVRTC", f"version {device.nvrtc_version()} (GPU preprocessing available)")
    else:
        report.add(FAIL, "NVRTC", "not found: preprocessing falls back to the CPU")
    mps = mps_status()
    report.add(PASS if mps.running else SKIP, "MPS", mps.describe())
    return device


def _check_engine_process(report: Report, model: ModelConfig, gpu: bool) -> None:
    """What ``model.engine_process`` comes to on this host, and why (``auto`` decides here)."""
    from edge_app.cuda.engine_process_choice import choose, host_facts
    if not gpu and model.engine_process == "auto":
        report.add(SKIP, "engine process", NOT_APPLICABLE)
        return
    choice = choose(model.engine_process, host_facts())
    report.add(PASS if choice.enabled else SKIP, "engine process", f"{'on' if choice.enabled else 'off'} - {choice.reason}")


def _onnx_for(model: ModelConfig) -> Optional[Path]:
    path = Path(model.path)
    if path.suffix.lower() == ".onnx":
        return path if path.is_file() else None
    sibling = path.with_suffix(".onnx")
    return sibling if sibling.is_file() else None


def _load_tensorrt(report: Report, model: ModelConfig, device: Any, work_dir: Path) -> Optional[Detector]:
    from edge_app.detect.tensorrt import TensorRTDetector, TerminalProgress
    is_engine = Path(model.path).suffix.lower() in (".engine", ".plan")
    # a fresh engine directory, so the build itself is exercised; batch 1 keeps it quick
    small = model.model_copy(update={"engine_dir": str(work_dir), "max_batch": 1})
    started_s = time.monotonic()
    try:
        detector = TensorRTDetector(small, device=device, progress=TerminalProgress(sys.stderr))
    except DetectorError as err:
        report.add(FAIL, "engine", str(err))
        return None
    if is_engine:
        report.add(SKIP, "engine build", "model.path is a prebuilt engine; it deserialised")
    else:
        report.add(PASS, "engine build", f"{small.precision} engine built in {time.monotonic() - started_s:.0f} s "
                                         f"and deserialised ({detector.describe().get('precision')})")
    return detector


def _load_onnxruntime(report: Report, model: ModelConfig) -> Optional[Detector]:
    onnx_path = _onnx_for(model)
    if onnx_path is None:
        report.add(SKIP, "ONNX Runtime", f"no .onnx next to {model.path} to compare with")
        return None
    from edge_app.detect.onnxruntime_backend import OnnxRuntimeDetector
    try:
        return OnnxRuntimeDetector(model.model_copy(update={"path": str(onnx_path), "max_batch": 1}),
                                   providers=["CPUExecutionProvider"])
    except DetectorError as err:
        report.add(FAIL, "ONNX Runtime", str(err))
        return None


def compare_detections(trt_dets: Detections, ort_dets: Detections, min_iou: float) -> tuple:
    """(ok, summary): every strong detection of either runtime has a same-class twin in the other."""
    def unmatched(a: Detections, b: Detections) -> int:
        missing = 0
        for i in np.flatnonzero(a.confidence >= STRONG_CONFIDENCE):
            same = np.flatnonzero(b.class_id == a.class_id[i])
            if not len(same) or box_iou(a.xyxy[i:i + 1], b.xyxy[same]).max() < min_iou:
                missing += 1
        return missing

    lost, extra = unmatched(ort_dets, trt_dets), unmatched(trt_dets, ort_dets)
    shift, conf = 0.0, 0.0
    for i in range(len(ort_dets)):
        same = np.flatnonzero(trt_dets.class_id == ort_dets.class_id[i])
        if len(same):
            ious = box_iou(ort_dets.xyxy[i:i + 1], trt_dets.xyxy[same])[0]
            j = same[int(np.argmax(ious))]
            shift = max(shift, float(np.abs(trt_dets.xyxy[j] - ort_dets.xyxy[i]).max()))
            conf = max(conf, abs(float(trt_dets.confidence[j] - ort_dets.confidence[i])))
    counts = ", ".join(f"{trt_dets.count(label)} {label}" for label in sorted({trt_dets.label_of(int(c)) for c in trt_dets.class_id}))
    summary = (f"TensorRT {len(trt_dets)} ({counts or 'none'}) vs ONNX Runtime {len(ort_dets)}; "
               f"max box shift {shift:.1f} px, max confidence diff {conf:.3f}")
    if lost or extra:
        summary += f"; {lost} confident ONNX Runtime detections missing, {extra} unexpected"
    return not (lost or extra), summary


def _run_images(report: Report, detector: Detector, images: List[Path]) -> None:
    """Without a GPU, the model is what runs: each sample image through it, with what it found."""
    for path in images:
        try:
            dets = detector.detect([load_image(path)])[0]
        except ImageReadError as err:
            report.add(FAIL, f"image {path.name}", str(err))
            continue
        found = ", ".join(f"{dets.count(label)} {label}" for label in sorted({dets.label_of(int(c)) for c in dets.class_id}))
        report.add(PASS, f"image {path.name}", f"ONNX Runtime on the CPU: {len(dets)} detections ({found or 'none'})")


def _check_images(report: Report, trt_det: Optional[Detector], ort_det: Optional[Detector], images: List[Path],
                  precision: str, compare: bool = True) -> None:
    if not images:
        report.add(SKIP, "detections", "no sample images found; pass image paths on the command line")
        return
    if trt_det is None and ort_det is not None and not compare:
        _run_images(report, ort_det, images)
        return
    if trt_det is None or ort_det is None:
        report.add(SKIP, "detections", "needs both TensorRT and ONNX Runtime")
        return
    for path in images:
        try:
            frame = load_image(path)
        except ImageReadError as err:
            report.add(FAIL, f"image {path.name}", str(err))
            continue
        ok, summary = compare_detections(trt_det.detect([frame])[0], ort_det.detect([frame])[0], MATCH_IOU.get(precision, 0.8))
        report.add(PASS if ok else FAIL, f"image {path.name}", summary)


def _check_gpu_letterbox(report: Report, device: Any, images: List[Path]) -> None:
    if device is None or not device.has_nvrtc:
        report.add(SKIP, "GPU letterbox", "needs a GPU with NVRTC")
        return
    from edge_app.cuda import CudaError
    from edge_app.detect.letterbox_gpu import GpuLetterbox
    from edge_app.detect.letterbox import letterbox
    frames = [np.random.default_rng(0).integers(0, 256, (1080, 1920, 3), np.uint8)]
    for path in images[:4]:
        try:
            frames.append(load_image(path))
        except ImageReadError:
            continue
    worst = 0.0
    try:
        gpu = GpuLetterbox(device, (640, 640), 1)
        out = device.alloc_device(gpu.image_nbytes)
        host = device.alloc_pinned((1, 3, 640, 640), np.float32)
        for frame in frames:
            gpu([frame], out.ptr)
            device.memcpy_dtoh_async(host, out.ptr, gpu.stream)
            gpu.stream.synchronize()
            worst = max(worst, float(np.abs(host - letterbox(frame, (640, 640))[0]).max()))
    except CudaError as err:
        report.add(FAIL, "GPU letterbox", str(err))
        return
    status = PASS if worst <= 1.0 / 255.0 + 1e-6 else FAIL
    report.add(status, "GPU letterbox", f"max difference to the CPU letterbox {worst * 255:.2f}/255 over {len(frames)} frames")


def check_broker(report: Report, config: Any) -> None:
    """Warn when the configured MQTT broker lets clients in without a login (docs/fleet.md, "Who may configure an appliance")."""
    if not isinstance(config, AppConfig) or not config.mqtt.enabled:
        return
    from edge_app.fleet_agent.desired.gate import ANONYMOUS_WARNING
    from edge_app.mqtt.anonymous_probe import ProbeOutcome, probe_anonymous

    where = f"MQTT broker {config.mqtt.host}:{config.mqtt.port}"
    probe = probe_anonymous(config.mqtt, config.device_id)
    if probe.outcome is ProbeOutcome.ACCEPTED:
        report.add(WARN, where, ANONYMOUS_WARNING)
    elif probe.outcome is ProbeOutcome.REFUSED:
        report.add(PASS, where, "refuses clients without a login")
    else:
        report.add(SKIP, where, f"could not tell whether it accepts clients without a login: {probe.detail}")


def check_session_takeover(report: Report, config: Any) -> None:
    """Warn when the running appliance sees another client take its MQTT session over (``edge_app.mqtt_takeover``)."""
    if not isinstance(config, AppConfig) or not config.mqtt.enabled or not config.api.enabled:
        return
    from edge_app.commands.running_appliance import running_mqtt

    found = running_mqtt(config)
    status = (WARN if found.takeover_warning else PASS) if found.answered else SKIP
    report.add(status, "MQTT session", found.takeover_warning or found.detail)


def check_decoders(report: Report, decoder: Optional[str]) -> None:
    """One line per decoder this device has or lacks, then a test clip through one of them:
    ``decoder`` when given, else the one ``decoder: auto`` uses for RTSP cameras and files."""
    from edge_app.capture.video_decode.check import CLIP_SIZE, check_decoder, make_test_clip
    from edge_app.capture.video_decode.decoders import CameraOpener, detect_decoders
    from edge_app.config.source_spec import parse_source

    inventory = detect_decoders()
    for info in inventory.decoders:
        report.add(PASS if info.available else SKIP, f"decoder {info.name}", info.detail)
    chosen = decoder or CameraOpener("auto").resolve(parse_source("rtsp://camera/stream"))
    why = "as asked" if decoder else "what decoder auto uses for RTSP and files"
    if not inventory.get(chosen).available:
        report.add(FAIL if decoder else SKIP, f"decode with {chosen}", f"not available here ({why})")
        return
    with tempfile.TemporaryDirectory(prefix="edge-app-decode-") as work_dir:
        try:
            clip = make_test_clip(Path(work_dir) / "testsrc.mp4")
        except (RuntimeError, OSError, subprocess.CalledProcessError) as err:
            report.add(SKIP, f"decode with {chosen}", f"cannot make the test clip: {err}")
            return
        result = check_decoder(chosen, clip, CLIP_SIZE)
    report.add(PASS if result.ok else FAIL, f"decode with {chosen}", f"{result.detail} ({why})")


def _check_opencv(report: Report) -> bool:
    """Whether OpenCV can be used: the models' letterboxing and sample images need it."""
    try:
        version = opencv().__version__
    except OpenCVUnavailable as err:
        report.add(FAIL, "OpenCV", str(err))
        return False
    report.add(PASS, "OpenCV", f"cv2 {version}")
    return True


def _check_model(report: Report, model: ModelConfig, gpu: bool, trt: Any, device: Any, samples: List[Path]) -> None:
    """Load one model with each backend that can run here and run it on the sample images."""
    _check_engine_process(report, model, gpu)
    trt_det = ort_det = None
    try:
        with tempfile.TemporaryDirectory(prefix="edge-app-selftest-") as work_dir:
            if trt is not None and device is not None:
                trt_det = _load_tensorrt(report, model, device, Path(work_dir))
            else:
                report.add(SKIP, "engine build", "needs TensorRT and a GPU")
            ort_det = _load_onnxruntime(report, model)
            _check_images(report, trt_det, ort_det, samples, model.precision, compare=gpu or _needs_tensorrt(model))
    finally:
        for detector in (trt_det, ort_det):
            if detector is not None:
                detector.close()


def selftest_command(config_or_model_path: Union[AppConfig, ModelConfig, str, os.PathLike],
                     images: Sequence[Any] = (), decoder: Optional[str] = None) -> int:
    """Run every check, print one line each, return 0 when nothing failed, else 1."""
    report = Report()
    try:
        models = _model_configs(config_or_model_path)
    except Exception as err:  # a bad --model path is a usage problem, reported as a check
        report.add(FAIL, "model", str(err).splitlines()[0])
        return report.exit_code
    gpu = nvidia_gpu_present()
    to_check = {name: model_to_check(config_or_model_path, model) for name, model in models.items()}
    for name, model in models.items():
        named = f"{name} " if len(models) > 1 else ""
        line = describe_model(config_or_model_path, name, model, gpu, to_check[name].fleet_line)
        print(f"edge-app selftest: model {named}{line}", flush=True)
    models = {name: checked.model for name, checked in to_check.items()}
    samples = _sample_images(next(iter(models.values())), images)
    check_broker(report, config_or_model_path)
    check_session_takeover(report, config_or_model_path)
    check_decoders(report, decoder)
    has_opencv = _check_opencv(report)
    needs_tensorrt = any(_needs_tensorrt(model) for model in models.values())
    trt = _check_tensorrt(report, required=gpu or needs_tensorrt)
    device = _check_cuda(report, required=gpu or needs_tensorrt)
    try:
        for name, model in models.items():
            # Each model is checked on its own: one that fails does not hide what the others do.
            checks = report if len(models) == 1 else _ModelChecks(report, name)
            if to_check[name].problem is not None:
                checks.add(FAIL, "fleet artifact", to_check[name].problem)
            if has_opencv:
                _check_model(checks, model, gpu, trt, device, samples)
            else:
                checks.add(SKIP, "detections", "needs OpenCV")
        if has_opencv:
            _check_gpu_letterbox(report, device, samples)
    finally:
        if device is not None:
            device.close()
    failed = sum(1 for r in report.results if r[0] == FAIL)
    print(f"selftest {'FAILED' if failed else 'passed'}: {failed} of {len(report.results)} checks failed", flush=True)
    return report.exit_code
