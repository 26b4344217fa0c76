"""The ONNX Runtime detector: any YOLO ONNX export on CPU, or on CUDA/TensorRT providers when
the installed onnxruntime build offers them."""
from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from edge_app.config.schema import ModelConfig
from edge_app.detect.base import Detector, DetectorError, PreparedBatch
from edge_app.detect.yolo_outputs import LayoutError, YoloDecoder, detect_layout
from edge_app.detect.labels import resolve_labels
from edge_app.detect.letterbox import Letterboxer
from edge_app.detect.model_metadata import metadata_bool, resolve_input_hw

log = logging.getLogger(__name__)

#: Used when neither the model, its metadata nor the configuration fixes the input size.
_FLOAT_INPUTS = {"tensor(float)": np.float32, "tensor(float16)": np.float16}


def usable_cpu_count() -> int:
    """CPUs this process may run on (respects affinity and container cpusets)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _static(dim: Any) -> Optional[int]:
    return int(dim) if isinstance(dim, int) and dim > 0 else None


def _ort_reason(exc: Exception) -> str:
    """The useful end of an ONNX Runtime error, without its code prefix and the repeated path."""
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    text = text.split(" failed:", 1)[-1] if " failed:" in text else text.split(" : ")[-1]
    return text.strip().rstrip(".")[:300] or type(exc).__name__


class OnnxRuntimeDetector(Detector):
    """A YOLO model run by ONNX Runtime.

    The three stages may run on three threads (one each): ``preprocess`` only touches the
    letterbox buffers, ``infer`` the session, ``postprocess`` the decoder. Thresholds and classes change
    live through ``retune``.
    ``intra_op_threads`` defaults to every usable CPU: left at 0, ONNX Runtime was measured to
    keep its work on one CPU of the two. ``providers`` overrides the provider choice.
    """

    backend_name = "onnxruntime"

    def __init__(self, model: ModelConfig, *, intra_op_threads: Optional[int] = None,
                 providers: Optional[Sequence[Any]] = None) -> None:
        ort = self._import_runtime()
        self.model_path = str(model.path)
        self.precision = model.precision
        self.intra_op_threads = int(intra_op_threads or usable_cpu_count())
        self._session = self._open_session(ort, model, providers)
        self.providers = list(self._session.get_providers())
        self.runs_on_host_cpu = self.providers == ["CPUExecutionProvider"]
        metadata = dict(self._session.get_modelmeta().custom_metadata_map or {})

        model_input = self._checked_input()
        self._input_name = model_input.name
        self._input_dtype = _FLOAT_INPUTS[model_input.type]
        self.input_hw = self._input_size(model, model_input.shape, metadata)
        self._fixed_batch = _static(model_input.shape[0])
        self.max_batch = self._batch_size(model.max_batch)

        self.labels, labels_source = resolve_labels(model.labels, metadata)
        self.decoder = YoloDecoder(
            self.labels,
            conf_threshold=model.conf_threshold,
            iou_threshold=model.iou_threshold,
            classes=model.classes,
            layout=self._static_layout(metadata, labels_source),
            num_classes=len(self.labels) if labels_source != "coco80" else None,
            input_hw=self.input_hw,
            end2end=metadata_bool(metadata, "end2end"),
            output_names=[o.name for o in self._session.get_outputs()],
        )
        self._letterbox = Letterboxer(self.input_hw, self.max_batch, self.max_batches_in_flight)
        self._padded: Optional[np.ndarray] = None
        layout = self.decoder.layout.layout.value if self.decoder.layout else "detected on first batch"
        log.info("loaded %s with ONNX Runtime (%s, %d threads): input %dx%d, max_batch %d, output %s, %d labels from %s",
                 self.model_path, ", ".join(self.providers), self.intra_op_threads, self.input_hw[1],
                 self.input_hw[0], self.max_batch, layout, len(self.labels), labels_source)

    @classmethod
    def is_available(cls) -> bool:
        try:
            import onnxruntime  # noqa: F401
        except ImportError:
            return False
        return True

    @staticmethod
    def _import_runtime():
        try:
            import onnxruntime
        except ImportError as exc:
            raise DetectorError("ONNX Runtime is not installed (pip install onnxruntime)") from exc
        return onnxruntime

    def _providers(self, ort, model: ModelConfig) -> List[Any]:
        available = set(ort.get_available_providers())
        chosen: List[Any] = []
        if "TensorrtExecutionProvider" in available:
            options: Dict[str, Any] = {"trt_fp16_enable": model.precision != "fp32"}
            try:
                Path(model.engine_dir).mkdir(parents=True, exist_ok=True)
                options.update(trt_engine_cache_enable=True, trt_engine_cache_path=str(model.engine_dir))
            except OSError:
                log.warning("engine_dir %s is not writable; TensorRT engines will be rebuilt on every start", model.engine_dir)
            chosen.append(("TensorrtExecutionProvider", options))
        if "CUDAExecutionProvider" in available:
            chosen.append("CUDAExecutionProvider")
        chosen.append("CPUExecutionProvider")
        return chosen

    def _open_session(self, ort, model: ModelConfig, providers: Optional[Sequence[Any]]):
        path = Path(self.model_path)
        if not path.exists():
            raise DetectorError(f"model file {self.model_path} does not exist")
        if not path.is_file():
            raise DetectorError(f"model path {self.model_path} is not a file")
        options = ort.SessionOptions()
        options.intra_op_num_threads = self.intra_op_threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3  # errors only; load problems are reported as DetectorError
        try:
            return ort.InferenceSession(str(path), sess_options=options,
                                        providers=list(providers or self._providers(ort, model)))
        except Exception as exc:  # ORT raises its own exception types for every load failure
            raise DetectorError(f"model file {self.model_path} could not be loaded as an ONNX model ({_ort_reason(exc)})") from exc

    def _checked_input(self):
        inputs = self._session.get_inputs()
        described = ", ".join(f"{i.name} {list(i.shape)} {i.type}" for i in inputs)
        expected = "expected one float image input shaped N x 3 x H x W"
        if len(inputs) != 1:
            raise DetectorError(f"model {self.model_path} has inputs [{described}]; {expected}")
        model_input = inputs[0]
        shape = list(model_input.shape)
        channels = _static(shape[1]) if len(shape) == 4 else None
        if len(shape) != 4 or channels not in (None, 3) or model_input.type not in _FLOAT_INPUTS:
            raise DetectorError(f"model {self.model_path} has input {described}; {expected}")
        return model_input

    def _input_size(self, model: ModelConfig, shape: Sequence[Any], metadata: Mapping[str, str]) -> Tuple[int, int]:
        fixed = (_static(shape[2]), _static(shape[3]))
        static_hw = fixed if fixed[0] and fixed[1] else None
        return resolve_input_hw(static_hw, model.configured_input_size, model.input_size, metadata, self.model_path)

    def _batch_size(self, configured: int) -> int:
        if self._fixed_batch is None:
            return configured
        if configured != self._fixed_batch:
            log.info("model %s has a fixed batch of %d; max_batch %d becomes %d",
                     self.model_path, self._fixed_batch, configured, self._fixed_batch)
        return self._fixed_batch

    def _static_layout(self, metadata: Mapping[str, str], labels_source: str):
        outputs = self._session.get_outputs()
        shapes = [[None, *[_static(d) for d in o.shape[1:]]] for o in outputs]
        if any(d is None for s in shapes for d in s[1:]):
            return None  # symbolic output dimensions: detect from the first real outputs
        try:
            info = detect_layout(
                shapes,
                num_classes=len(self.labels) if labels_source != "coco80" else None,
                input_hw=self.input_hw,
                end2end=metadata_bool(metadata, "end2end"),
                names=[o.name for o in outputs],
            )
        except LayoutError as exc:
            raise DetectorError(f"model {self.model_path} has outputs the YOLO decoder does not understand: {exc}") from exc
        if info.num_classes and info.num_classes != len(self.labels):
            log.warning("model %s predicts %d classes but %d labels are known; unnamed classes show as numbers",
                        self.model_path, info.num_classes, len(self.labels))
        return info

    def preprocess(self, frames: Sequence[np.ndarray]) -> PreparedBatch:
        return self._letterbox(frames)

    def infer(self, batch: PreparedBatch) -> List[np.ndarray]:
        if self._session is None:
            raise DetectorError(f"model {self.model_path} was closed")
        tensor = batch.tensor
        count = tensor.shape[0]
        if count > self.max_batch:
            raise ValueError(f"batch of {count} exceeds max_batch {self.max_batch}")
        feed = tensor if tensor.dtype == self._input_dtype else tensor.astype(self._input_dtype)
        if self._fixed_batch is not None and count < self._fixed_batch:
            # A fixed-batch model needs every slot filled; the padding images are never decoded.
            if self._padded is None or self._padded.dtype != feed.dtype:
                self._padded = np.zeros((self._fixed_batch, *feed.shape[1:]), dtype=feed.dtype)
            self._padded[:count] = feed
            feed = self._padded
        try:
            return self._session.run(None, {self._input_name: feed})
        except Exception as exc:
            raise DetectorError(f"inference with {self.model_path} failed ({_ort_reason(exc)})") from exc

    def describe(self) -> dict:
        info = super().describe()
        # The CPU and CUDA providers run the graph in the precision it was exported in.
        applied = self.precision if "TensorrtExecutionProvider" in self.providers else "as exported"
        info.update(
            path=self.model_path,
            precision=applied,
            providers=list(self.providers),
            intra_op_threads=self.intra_op_threads,
        )
        return info

    def close(self) -> None:
        self._session = None
