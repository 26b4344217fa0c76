"""The TensorRT detector: a cached engine, pinned/device buffers, GPU letterboxing, shared decoder.

The three stages may run on three threads (the pipeline's layout): ``preprocess`` letterboxes
on the GPU into one of the engine's rotating input slots (or on the CPU when NVRTC is missing),
``infer`` runs the engine on its stream, ``postprocess`` decodes with the same YoloDecoder as
ONNX Runtime, EfficientNMS engines included. YOLOv8/v11 outputs are filtered and NMS'd on the GPU
right after the engine (``yolo_outputs_gpu``), so only the kept boxes come back to the host.
"""
from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any, List, Optional, Sequence, Union

import numpy as np

from edge_app.cuda import CudaDevice, CudaError, open_device
from edge_app.cuda.mps import mps_status
from edge_app.detect.base import Detector, DetectorError, PreparedBatch
from edge_app.detect.yolo_outputs import LayoutError, OutputLayout, YoloDecoder, detect_layout
from edge_app.detect.yolo_outputs_gpu import GpuDecoded, GpuYoloDecoder, detections_from
from edge_app.detect.detections import Detections
from edge_app.detect.labels import resolve_labels
from edge_app.detect.letterbox import Letterboxer
from edge_app.detect.tensorrt.api import import_tensorrt, is_standin
from edge_app.detect.model_metadata import is_engine_file, metadata_bool
from edge_app.cuda import engine_process_choice
from edge_app.detect.tensorrt.engine_process import CUDA_DEVICE, EnginePlan, EngineProcess, EngineWork, PendingBatch
from edge_app.detect.tensorrt.prepare import (EngineCache, PrebuiltSource, PreparedEngine, device_identity,
                                              load_user_engine)
from edge_app.detect.tensorrt.progress import ProgressCallback
from edge_app.detect.tensorrt.runtime import ROTATION, EngineRuntime

log = logging.getLogger(__name__)


class TensorRTDetector(Detector):
    """A YOLO model run as a TensorRT engine built (and cached) on this device.

    ``device`` injects a CUDA layer (default: ``edge_app.cuda.open_device()``); ``progress``
    receives engine build reports; ``gpu_preprocess`` forces the GPU (True) or CPU (False)
    letterbox, default GPU when NVRTC is available; ``gpu_decode`` likewise for decoding and NMS
    on the GPU (YOLOv8/v11 outputs only); setting ``cancel`` stops an engine build; ``prebuilt`` may supply
    an engine built elsewhere for exactly this device's key (the fleet), used instead of a build.
    """

    runs_on_host_cpu = False

    backend_name = "tensorrt"

    #: what opens the GPU in an engine process (``module:attribute``; tests name a double)
    engine_process_device = CUDA_DEVICE

    def __init__(self, model: Any, *, device: Optional[CudaDevice] = None, progress: Optional[ProgressCallback] = None,
                 gpu_preprocess: Optional[bool] = None, force_build: bool = False,
                 cancel: Optional[threading.Event] = None, gpu_decode: Optional[bool] = None,
                 engine_process: Optional[bool] = None, prebuilt: Optional[PrebuiltSource] = None) -> None:
        trt = self._import_runtime()
        self._prebuilt = prebuilt
        if is_standin(trt):
            log.warning("the tensorrt module in use is the test stand-in, not TensorRT")
        self._owns_device = device is None
        self._device = device if device is not None else self._open_device()
        self.model_path = str(model.path)
        self.precision = model.precision
        self._runtime: Optional[Union[EngineRuntime, EngineProcess]] = None
        self.engine: Optional[PreparedEngine] = None
        self._decodes_in_engine_process = False
        wanted = self._engine_process_wanted(getattr(model, "engine_process", False) if engine_process is None
                                             else engine_process)
        #: why the engine runs in this process although ``model.engine_process`` asked otherwise
        self.engine_process_problem: Optional[str] = None
        if wanted and (gpu_preprocess is False or not self._device.has_nvrtc):
            self._refuse_engine_process("its input comes from the GPU letterbox, which needs NVRTC")
        self._wants_engine_process = wanted and self.engine_process_problem is None
        try:
            self._runtime, self.engine = self._load(trt, model, progress, force_build, cancel)
            self.input_hw = self._runtime.input_hw
            self.max_batch = self._runtime.max_batch
            self._check_input_size(model)
            metadata = self.engine.metadata
            self.labels, labels_source = resolve_labels(model.labels, metadata)
            self.decoder = self._make_decoder(model, metadata, labels_source)
            self._gpu = self._gpu_letterbox(gpu_preprocess)
            self._gpu_decoder = self._gpu_decoding(gpu_decode)
        except BaseException:
            self.close()
            raise
        self._letterbox = None if self._gpu is not None else Letterboxer(self.input_hw, self.max_batch, ROTATION)
        self.max_batches_in_flight = ROTATION
        self._next_slot = 0
        where = f"engine process {self._runtime.pid}" if isinstance(self._runtime, EngineProcess) else "this process"
        log.info("loaded %s with TensorRT (%s engine %s, in %s): input %dx%d, max_batch %d, %s preprocessing, "
                 "%s decoding on %s", self.model_path, self.engine.source, self.engine.path.name, where,
                 self.input_hw[1], self.input_hw[0], self.max_batch, self.preprocessing.upper(),
                 self.postprocessing.upper(), self._device.name)
        if isinstance(self._runtime, EngineProcess):
            mps = mps_status()
            if not mps.running:  # the engine process then waits its turn on the GPU, at half its speed
                log.warning("model.engine_process: %s", mps.describe())

    # -- loading ------------------------------------------------------------------------------
    @staticmethod
    def _engine_process_wanted(setting: Union[str, bool]) -> bool:
        """``model.engine_process`` (``auto``: edge_app.cuda.engine_process_choice), with the reason logged."""
        choice = engine_process_choice.choose(setting, engine_process_choice.host_facts())
        log.info("model.engine_process %s: %s", "on" if choice.enabled else "off", choice.reason)
        return choice.enabled

    @staticmethod
    def _open_device() -> CudaDevice:
        try:
            return open_device()
        except CudaError as err:
            raise DetectorError(f"TensorRT needs a CUDA Python binding and a GPU: {err} "
                                "(install cuda-python, or pycuda)") from None

    @classmethod
    def _import_runtime(cls) -> Any:
        """The module that deserialises and runs engines: TensorRT (a benchmark stand-in overrides it)."""
        return import_tensorrt()

    @classmethod
    def is_available(cls) -> bool:
        try:
            import_tensorrt()
        except Exception:
            return False
        from edge_app.cuda import available_adapters
        return bool(available_adapters())

    def _load(self, trt: Any, model: Any, progress: Optional[ProgressCallback], force: bool,
              cancel: Optional[threading.Event]):
        def deserialize(data: bytes, label: str) -> Union[EngineRuntime, EngineProcess]:
            if self._wants_engine_process:
                plan = EnginePlan(options={"engine_bytes": data, "max_batch": model.max_batch, "label": label},
                                  device=self.engine_process_device)
                process = self._start_engine_process(plan)
                if process is not None:
                    return process
            return EngineRuntime(trt, data, self._device, model.max_batch, label)

        if is_engine_file(self.model_path):
            return load_user_engine(Path(self.model_path), deserialize, device_identity(trt, self._device))
        return EngineCache(trt, model, self._device, progress, cancel, self._prebuilt).load(deserialize, force=force)

    def _refuse_engine_process(self, reason: str) -> None:
        self.engine_process_problem = reason
        log.warning("model.engine_process: %s; the engine runs in the appliance's process", reason)

    def _start_engine_process(self, plan: EnginePlan) -> Optional[EngineProcess]:
        """The engine in a child process, or None (said in the log) to run it in this one."""
        try:
            return EngineProcess(plan, self._device)
        except DetectorError as err:
            self._refuse_engine_process(str(err))
            return None

    def _check_input_size(self, model: Any) -> None:
        configured = model.configured_input_size
        if configured is not None and (configured, configured) != tuple(self.input_hw):
            raise DetectorError(f"engine {self.engine.path} has a {self.input_hw[1]}x{self.input_hw[0]} input but "
                                f"model.input_size is {configured}")

    def _make_decoder(self, model: Any, metadata, labels_source: str) -> YoloDecoder:
        outputs = self._runtime.outputs
        num_classes = len(self.labels) if labels_source != "coco80" else None
        end2end = metadata_bool(metadata, "end2end")
        try:
            layout = detect_layout([[None, *s.max_shape[1:]] for s in outputs], num_classes=num_classes,
                                   input_hw=self.input_hw, end2end=end2end, names=[s.name for s in outputs],
                                   dtypes=[s.dtype for s in outputs])
        except LayoutError as err:
            raise DetectorError(f"engine {self.engine.path} has outputs the YOLO decoder does not understand: {err}") from None
        return YoloDecoder(self.labels, conf_threshold=model.conf_threshold, iou_threshold=model.iou_threshold,
                           classes=model.classes, layout=layout,
                           num_classes=num_classes, input_hw=self.input_hw, end2end=end2end,
                           output_names=[s.name for s in outputs])

    def _gpu_letterbox(self, wanted: Optional[bool]):
        if wanted is False:
            return None
        reason = None
        if not self._device.has_nvrtc:
            reason = "NVRTC was not found"
        elif self._runtime.input.dtype not in (np.dtype(np.float32), np.dtype(np.float16)):
            reason = f"the engine input is {self._runtime.input.dtype}"
        if reason is None:
            try:
                from edge_app.detect.letterbox_gpu import GpuLetterbox
                return GpuLetterbox(self._device, self.input_hw, self.max_batch, self._runtime.input.dtype)
            except CudaError as err:
                reason = str(err)
        if wanted:
            raise DetectorError(f"GPU preprocessing was requested but is unavailable: {reason}")
        log.info("letterboxing on the CPU: %s", reason)
        return None

    def _gpu_decoding(self, wanted: Optional[bool]) -> Optional[GpuYoloDecoder]:
        if wanted is False:
            return None
        layout = self.decoder.layout
        outputs = self._runtime.outputs
        if layout.layout is not OutputLayout.YOLO_CHANNELS_FIRST:
            reason = f"{layout.layout.value} outputs are decoded on the host"
        elif not self._device.has_nvrtc:
            reason = "NVRTC was not found"
        elif isinstance(self._runtime, EngineProcess):
            try:  # next to the engine, in its process: only the kept boxes come back
                self._runtime.start_decoding(layout.outputs[0], layout.num_classes, self.decoder.max_det)
                self._decodes_in_engine_process = True
                return None
            except DetectorError as err:
                reason = str(err)
        else:
            try:
                return GpuYoloDecoder(self._device, self.max_batch, outputs[layout.outputs[0]].max_shape,
                                      outputs[layout.outputs[0]].dtype, layout.num_classes, self.decoder.max_det, ROTATION)
            except (CudaError, ValueError) as err:
                reason = str(err)
        if wanted:
            raise DetectorError(f"GPU decoding was requested but is unavailable: {reason}")
        log.info("decoding on the CPU: %s", reason)
        return None

    # -- the three stages ---------------------------------------------------------------------
    def preprocess(self, frames: Sequence[np.ndarray]) -> PreparedBatch:
        if self._gpu is None:
            return self._letterbox(frames)
        count = len(frames)
        if not 1 <= count <= self.max_batch:
            raise ValueError(f"batch of {count} frames outside 1..{self.max_batch}")
        slot = self._next_slot
        self._next_slot = (slot + 1) % ROTATION
        metas = self._gpu(frames, self._runtime.input_slot_ptr(slot))
        return PreparedBatch(tensor=None, metas=metas, device_slot=slot)

    def infer(self, batch: PreparedBatch) -> Union[List[np.ndarray], GpuDecoded, PendingBatch]:
        """The raw outputs; or, when decoding on the GPU, the kept boxes of each image (to come,
        from an engine process)."""
        if self._runtime is None:
            raise DetectorError(f"model {self.model_path} was closed")
        host_input = None if batch.device_slot is not None else np.asarray(batch.tensor)
        slot = batch.device_slot or 0
        if self._decodes_in_engine_process:  # answered while postprocess waits for it
            return self._runtime.submit_decoded(batch.size, slot, self.decoder.tuning)
        if self._gpu_decoder is None:
            return self._runtime.run(batch.size, host_input, slot)
        output_ptrs = self._runtime.run_on_device(batch.size, host_input, slot)
        return self._gpu_decoder.run(output_ptrs[self.decoder.layout.outputs[0]], batch.size, self.decoder.tuning)

    def postprocess(self, outputs: Union[List[np.ndarray], GpuDecoded, PendingBatch],
                    batch: PreparedBatch) -> List[Detections]:
        if isinstance(outputs, PendingBatch):
            outputs = outputs.result()
        if isinstance(outputs, GpuDecoded):
            return detections_from(outputs, batch.metas, self.decoder)
        return super().postprocess(outputs, batch)

    # -- reporting and teardown ---------------------------------------------------------------
    @property
    def preprocessing(self) -> str:
        return "gpu" if self._gpu is not None else "cpu"

    @property
    def postprocessing(self) -> str:
        return "gpu" if self._gpu_decoder is not None or self._decodes_in_engine_process else "cpu"

    def describe(self) -> dict:
        info = super().describe()
        applied = (self.engine.sidecar or {}).get("build", {}).get("applied_precision", self.precision)
        info.update(
            path=self.model_path,
            precision=applied if self.engine.source != "user" else "as built",
            engine=str(self.engine.path),
            engine_source=self.engine.source,
            preprocessing=self.preprocessing,
            postprocessing=self.postprocessing,
            engine_process=self._runtime.pid if isinstance(self._runtime, EngineProcess) else None,
            cuda=self._device.describe(),
        )
        return info

    @property
    def failure(self) -> Optional[str]:
        return self._runtime.failure if isinstance(self._runtime, EngineProcess) else None

    def engine_work(self) -> Optional[EngineWork]:
        """The engine process's own account of its work; None when the engine runs in-process."""
        return self._runtime.work() if isinstance(self._runtime, EngineProcess) else None

    def _close_device(self) -> None:
        if self._owns_device and self._device is not None:
            self._device.close()
        self._device = None

    def close(self) -> None:
        if self._runtime is not None:
            self._runtime.close()
            self._runtime = None
        self._close_device()
