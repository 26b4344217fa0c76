"""The model stage in a process of its own (``model.engine_process``), fed through CUDA IPC.

Inside the appliance the model thread shares Python's interpreter lock with the camera,
batching and publishing threads. Every call that queues GPU work lets the lock go, and getting
it back waits for whichever thread took it. On an H200 with 8 NVDEC cameras a batch of 8 took
5.0 ms in the appliance against 2.1 ms in a loop of its own, with the GPU far from busy
(``docs/gpu-benchmark.md``). Frigate runs its detectors in processes of their own for the same
reason. Here the child owns the engine (``EngineRuntime``) and the GPU decoding
(``GpuYoloDecoder``) and has one thread, so nothing competes with it.

The child allocates the engine's ``ROTATION`` input slots and exports them with CUDA IPC. The
appliance maps them and its GPU letterbox writes a batch into one of them; the letterbox
synchronises its stream before the request is sent, so the child reads a finished tensor. The
child runs the engine and the decoding kernels and sends back only the kept boxes (a few
kilobytes), or the raw outputs when the model's outputs are decoded on the host.

Requests are pipelined: ``infer`` sends a batch and returns a ``PendingBatch`` at once, and
``postprocess`` (the pipeline's publishing thread) waits for its answer. While the appliance
hands one answer on, the child already runs the next batch; it never waits for the appliance's
threads between batches. At most ``max_batches_in_flight`` (``ROTATION``) batches are under way,
so an input slot is written again only after its batch was answered. So with an engine process
the pipeline's ``inference`` stage time is the hand-over, and waiting for the engine counts in
``postprocess``.

Messages (pickled tuples on a ``multiprocessing`` pipe), appliance to child:
``("decode", seq, output_index, num_classes, max_det)``, ``("run", seq, count, slot, tuning or
None)``, ``("run_raw", seq, count, slot)``, ``("close",)``; child to appliance: ``("ready", 0,
info, 0.0)``, ``("ok", seq, result, busy_s)``, ``("error", seq, text, busy_s)``, answers in the
order of the requests. ``busy_s`` is the child's own time on the request, so ``EngineWork`` tells
how busy the engine is apart from what the appliance waits for.
What opens the device and builds the runtime in the child are ``module:attribute`` strings,
since the child is a fresh interpreter (``spawn``: CUDA does not survive ``fork``); tests name
host-memory doubles there.

CUDA IPC needs a dGPU and the cuda-python adapter. Where the process cannot start, the detector
says why and runs the engine in the appliance's process. A child that exits or stops answering
is stopped and not replaced here: every later batch fails with the reason, ``failure`` reports
it, and the appliance loads the model again (``model_change.reload_due``), which starts a new
child beside the cameras that keep running.
"""
from __future__ import annotations

import logging
import multiprocessing
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from edge_app.detect.base import DetectorError
from edge_app.detect.yolo_outputs_gpu import GpuDecoded, GpuYoloDecoder
from edge_app.detect.tensorrt.runtime import ROTATION, EngineRuntime, TensorSpec
from edge_app.process.named_callable import resolve

log = logging.getLogger(__name__)

DECODE, RUN, RUN_RAW, CLOSE = "decode", "run", "run_raw", "close"
READY, OK, ERROR = "ready", "ok", "error"

TENSORRT_RUNTIME = "edge_app.detect.tensorrt.engine_process:tensorrt_runtime"
CUDA_DEVICE = "edge_app.cuda:open_device"
#: the child's name (process listings, the benchmark's CPU accounting)
PROCESS_NAME = "engine"
#: starting an interpreter, importing TensorRT and deserialising the engine
START_TIMEOUT_S = 180.0
#: one batch; a child that takes longer is stuck (a hung GPU) and is stopped
ANSWER_TIMEOUT_S = 30.0


def tensorrt_runtime(device: Any, engine_bytes: bytes, max_batch: int, label: str) -> EngineRuntime:
    """The child's runtime for a TensorRT engine: the same ``EngineRuntime`` as in-process."""
    from edge_app.detect.tensorrt.api import import_tensorrt

    return EngineRuntime(import_tensorrt(), engine_bytes, device, max_batch, label)


@dataclass(frozen=True)
class EnginePlan:
    """What the child builds, picklable: ``runtime(device, **options)`` on the device that
    ``device(device_index=...)`` opens."""

    runtime: str = TENSORRT_RUNTIME
    options: Dict[str, Any] = field(default_factory=dict)
    device: str = CUDA_DEVICE
    device_index: int = 0


@dataclass(frozen=True)
class EngineWork:
    """What the engine process did so far: requests answered and its own time on them."""

    answered: int
    busy_s: float


def _spec_info(spec: TensorSpec) -> Tuple[str, Tuple[int, ...], str, Tuple[int, ...]]:
    return spec.name, tuple(spec.shape), spec.dtype.str, tuple(spec.max_shape)


def _spec_from(info: Sequence[Any], is_input: bool) -> TensorSpec:
    name, shape, dtype, max_shape = info
    return TensorSpec(name, tuple(shape), np.dtype(dtype), is_input, tuple(max_shape))


# -- the child ----------------------------------------------------------------------------------
class _Child:
    def __init__(self, conn: Any, plan: EnginePlan) -> None:
        self.conn, self.plan = conn, plan
        self.device: Any = None
        self.runtime: Any = None
        self.decoder: Optional[GpuYoloDecoder] = None
        self.output_index = 0
        self.tuning: Any = None

    def run(self) -> None:
        try:
            self._start()
            while self._serve(self.conn.recv()):
                pass
        except (EOFError, BrokenPipeError, ConnectionResetError):
            pass  # the appliance is gone
        finally:
            self._close()

    def _start(self) -> None:
        try:
            self.device = resolve(self.plan.device)(device_index=self.plan.device_index)
            self.runtime = resolve(self.plan.runtime)(self.device, **self.plan.options)
            runtime = self.runtime
            handles = [self.device.ipc_export(buffer) for buffer in runtime.input.device[:ROTATION]]
            info = {"label": runtime.label, "input": _spec_info(runtime.input),
                    "outputs": [_spec_info(s) for s in runtime.outputs], "max_batch": runtime.max_batch,
                    "input_hw": tuple(runtime.input_hw), "dynamic_batch": runtime.dynamic_batch,
                    "handles": handles, "describe": runtime.describe()}
        except Exception as err:
            self.conn.send((ERROR, 0, f"{type(err).__name__}: {err}", 0.0))
            raise EOFError from None  # nothing to serve
        self.conn.send((READY, 0, info, 0.0))

    def _serve(self, message: Tuple[Any, ...]) -> bool:
        if message[0] == CLOSE:
            return False
        kind, seq, arguments = message[0], message[1], message[2:]
        started_s = time.perf_counter()
        try:
            answer = self._answer(kind, arguments)
            self.conn.send((OK, seq, answer, time.perf_counter() - started_s))
        except (EOFError, BrokenPipeError, ConnectionResetError):
            raise
        except Exception as err:  # reported to the appliance, which counts the batch as failed
            self.conn.send((ERROR, seq, f"{type(err).__name__}: {err}", time.perf_counter() - started_s))
        return True

    def _answer(self, kind: str, arguments: Tuple[Any, ...]) -> Any:
        if kind == DECODE:
            output_index, num_classes, max_det = arguments
            spec = self.runtime.outputs[output_index]
            self.decoder = GpuYoloDecoder(self.device, self.runtime.max_batch, spec.max_shape, spec.dtype,
                                          num_classes, max_det, ROTATION)
            self.output_index = output_index
            return None
        if kind == RUN:
            count, slot, tuning = arguments
            if tuning is not None:
                self.tuning = tuning
            ptrs = self.runtime.run_on_device(count, None, slot)
            decoded = self.decoder.run(ptrs[self.output_index], count, self.tuning)
            # only the rows that hold boxes travel; the pinned buffers are reused by the next run
            used = max(int(decoded.kept.max(initial=0)), 0)
            raw = None if decoded.raw is None else decoded.raw.copy()
            return decoded.kept.copy(), np.ascontiguousarray(decoded.rows[:, :used]), raw
        if kind == RUN_RAW:
            count, slot = arguments
            return [np.array(output) for output in self.runtime.run(count, None, slot)]
        raise ValueError(f"unknown request {kind!r}")

    def _close(self) -> None:
        if self.runtime is not None:
            self.runtime.close()
        if self.device is not None:
            self.device.close()


def child_main(conn: Any, plan: EnginePlan) -> None:
    """The engine process's entry point."""
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s engine: %(message)s")
    _Child(conn, plan).run()


# -- the appliance's side -----------------------------------------------------------------------
class PendingBatch:
    """A batch sent to the engine process; ``result()`` waits for its answer."""

    def __init__(self, engine: "EngineProcess", seq: int, kind: str) -> None:
        self._engine, self.seq, self.kind = engine, seq, kind

    def result(self) -> Any:
        payload = self._engine._collect(self.seq, self.kind)
        if self.kind == RUN:
            kept, rows, raw = payload
            return GpuDecoded(kept, rows, raw)
        return payload


class EngineProcess:
    """An engine in a child process, with the parts of ``EngineRuntime``'s interface the
    detector uses: the tensor specs, ``input_slot_ptr`` (mapped into this process), ``run``
    (raw outputs), and ``submit_decoded`` after ``start_decoding``."""

    def __init__(self, plan: EnginePlan, device: Any, start_timeout_s: float = START_TIMEOUT_S,
                 answer_timeout_s: float = ANSWER_TIMEOUT_S) -> None:
        self._device = device
        self._answer_timeout_s = answer_timeout_s
        # the model thread sends while the publishing thread receives
        self._send_lock, self._receive_lock = threading.RLock(), threading.Lock()
        self._next_seq = 1
        self._answers: Dict[int, Tuple[str, Any]] = {}
        self._slot_ptrs: List[int] = []
        self._sent_tuning: Any = None
        self._broken: Optional[str] = None
        self._failure: Optional[str] = None
        self._work = EngineWork(0, 0.0)
        context = multiprocessing.get_context("spawn")
        self._conn, child_conn = context.Pipe()
        self._process = context.Process(target=child_main, args=(child_conn, plan), name=PROCESS_NAME, daemon=True)
        self._process.start()
        child_conn.close()
        try:
            info = self._collect(0, "start", start_timeout_s)
            self.label = f"{info['label']} (engine process {self._process.pid})"
            self.input = _spec_from(info["input"], True)
            self.outputs = [_spec_from(o, False) for o in info["outputs"]]
            self.max_batch = int(info["max_batch"])
            self.input_hw = tuple(info["input_hw"])
            self.dynamic_batch = bool(info["dynamic_batch"])
            self._describe = dict(info["describe"])
            for handle in info["handles"]:
                self._slot_ptrs.append(device.ipc_open(handle))
        except BaseException:
            self.close()
            raise

    @property
    def pid(self) -> Optional[int]:
        return self._process.pid

    def input_slot_ptr(self, slot: int) -> int:
        """This process's address of input slot ``slot`` (the GPU letterbox writes there)."""
        return self._slot_ptrs[slot % ROTATION]

    def start_decoding(self, output_index: int, num_classes: int, max_det: int) -> None:
        """Decode output ``output_index`` on the GPU in the child; raises DetectorError if it cannot."""
        self._submit(DECODE, int(output_index), int(num_classes), int(max_det)).result()

    def submit_decoded(self, count: int, input_slot: int, tuning: Any) -> PendingBatch:
        """Send the ``count`` images in ``input_slot`` to be run and decoded; their kept boxes
        are the ``PendingBatch``'s result."""
        with self._send_lock:
            changed = tuning is not self._sent_tuning
            pending = self._submit(RUN, int(count), int(input_slot), tuning if changed else None)
            self._sent_tuning = tuning
            return pending

    def run(self, count: int, host_input: Optional[np.ndarray] = None, input_slot: int = 0) -> List[np.ndarray]:
        """The raw outputs of the ``count`` images in ``input_slot``."""
        if host_input is not None:
            raise DetectorError("the engine process reads its input from the GPU letterbox, not from host memory")
        return self._submit(RUN_RAW, int(count), int(input_slot)).result()

    def describe(self) -> dict:
        return {**self._describe, "engine_process": self._process.pid}

    def work(self) -> EngineWork:
        """The requests answered so far and the child's own time on them."""
        return self._work

    @property
    def failure(self) -> Optional[str]:
        """Why the child was given up (it exited or stopped answering), or None; not set by ``close``."""
        return self._failure

    def _submit(self, kind: str, *arguments: Any) -> PendingBatch:
        with self._send_lock:
            self._check()
            seq, self._next_seq = self._next_seq, self._next_seq + 1
            try:
                self._conn.send((kind, seq, *arguments))
            except (OSError, ValueError):
                self._exited()
            return PendingBatch(self, seq, kind)

    def _collect(self, seq: int, what: str, timeout_s: Optional[float] = None) -> Any:
        """The answer to request ``seq``; answers to earlier requests met on the way are kept."""
        with self._receive_lock:
            wait_s = self._answer_timeout_s if timeout_s is None else timeout_s
            while seq not in self._answers:
                self._check()
                if not self._conn.poll(wait_s):
                    self._fail(f"the engine process did not answer {what} within {wait_s:g} s")
                try:
                    kind, answered, payload, busy_s = self._conn.recv()
                except (EOFError, OSError):
                    self._exited()
                self._answers[answered] = (kind, payload)
                if answered:  # not the start
                    self._work = EngineWork(self._work.answered + 1, self._work.busy_s + busy_s)
            kind, payload = self._answers.pop(seq)
        if kind == ERROR:
            if what == "start":
                self._fail(f"the engine process could not load the engine: {payload}")
            raise DetectorError(f"the engine process failed to {what}: {payload}")
        return payload

    def _check(self) -> None:
        if self._broken:
            raise DetectorError(self._broken)

    def _exited(self) -> None:
        self._process.join(1.0)
        self._fail(f"the engine process exited (code {self._process.exitcode})")

    def _fail(self, text: str) -> None:
        """A child that is gone or stuck cannot be trusted with another batch: stop it."""
        if not self._broken:
            self._failure = text
            self._broken = f"{text}; a new one starts when the model is loaded again"
        self._stop_process()
        raise DetectorError(self._broken)

    def _stop_process(self) -> None:
        try:
            self._conn.send((CLOSE,))
        except (OSError, ValueError):
            pass
        self._process.join(5.0)
        if self._process.is_alive():
            self._process.kill()
            self._process.join(5.0)

    def close(self) -> None:
        with self._send_lock:
            # this process's mappings go before the memory behind them
            for ptr in self._slot_ptrs:
                try:
                    self._device.ipc_close(ptr)
                except Exception as err:
                    log.debug("unmapping an engine input slot: %s", err)
            self._slot_ptrs = []
            if self._broken is None:
                self._broken = "the engine process was closed"
            self._stop_process()
            self._conn.close()
