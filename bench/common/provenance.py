"""Where a results file came from, and the one writer of results files for every bench command.

Every JSON file a bench command writes (and every file in docs/results/) holds, beside its
figures, a ``provenance`` block: the commit measured and whether the tree had changes, the exact
command line, the date, the host's CPU, its GPUs with their driver, and the engine that ran the
model. A figure in the docs can then be traced to the code and the machine that produced it.
"""
from __future__ import annotations

import json
import logging
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, List, Mapping, Optional, Sequence

from bench.common.machine import cpu_model
from testkit.paths import REPO

log = logging.getLogger(__name__)

#: the engine names a results file may give; anything else is a named stand-in
#: ("<what it is> stand-in for TensorRT") or a CPU runtime
TENSORRT = "TensorRT"
TORCH_STANDIN = "PyTorch FP16 stand-in for TensorRT (bench.gpu.torch_engine)"
TEST_STANDIN = "test stand-in for TensorRT (testkit/tensorrt_standin), inference by ONNX Runtime on the CPU"
ONNXRUNTIME_CPU = "ONNX Runtime on the CPU"
NO_MODEL = "no model"

#: the fields every provenance block has (tests/project/test_results_provenance.py checks them)
#: names the commit of a clean tree copied to another machine without its .git, or with a stale one
COMMIT_ENV = "EDGE_APP_BENCH_COMMIT"
REQUIRED_FIELDS = ("commit", "dirty", "command", "date", "host", "gpus", "engine")

_GIT_TIMEOUT_S = 10.0
_NVIDIA_SMI_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Gpu:
    name: str
    driver: Optional[str]


@dataclass(frozen=True)
class Host:
    cpu: str
    cpus: Optional[int]


@dataclass(frozen=True)
class Provenance:
    commit: Optional[str]  # None only in files measured before commits were recorded
    dirty: Optional[bool]  # the tree had changes not in the commit
    command: str  # exactly as run, ``python -m bench.<family> COMMAND [options]``
    date: str  # ISO 8601, UTC
    host: Host
    gpus: List[Gpu] = field(default_factory=list)  # empty: no GPU found
    engine: str = NO_MODEL

    def as_dict(self) -> dict:
        return asdict(self)


def _git(*args: str) -> Optional[str]:
    if shutil.which("git") is None:
        return None
    try:
        done = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True,
                              timeout=_GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        log.warning("git %s: %s", " ".join(args), err)
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _jetson_gpu() -> Optional[Gpu]:
    """A Jetson has no nvidia-smi query; its GPU is the module named by the device tree, and the
    driver comes with the L4T release."""
    try:
        model = Path("/proc/device-tree/model").read_text().strip("\x00\n ")
        release = Path("/etc/nv_tegra_release").read_text().splitlines()[0].strip()
    except (OSError, IndexError):
        return None
    return Gpu(name=model, driver=release)


def find_gpus() -> List[Gpu]:
    if shutil.which("nvidia-smi") is not None:
        try:
            done = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                                  capture_output=True, text=True, timeout=_NVIDIA_SMI_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as err:
            log.warning("nvidia-smi: %s", err)
        else:
            if done.returncode == 0:
                rows = [line.rsplit(",", 1) for line in done.stdout.splitlines() if line.strip()]
                return [Gpu(name=name.strip(), driver=driver.strip()) for name, driver in rows]
    jetson = _jetson_gpu()
    return [jetson] if jetson is not None else []


def command_line(argv: Optional[Sequence[str]] = None) -> str:
    """The command as it was typed: ``python -m bench.gpu pipeline --seconds 6``. ``argv`` are the
    arguments after the module (default: this process's)."""
    args = list(sys.argv[1:] if argv is None else argv)
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    if spec is not None and spec.name:
        module = spec.name[:-len(".__main__")] if spec.name.endswith(".__main__") else spec.name
        return shlex.join(["python", "-m", module, *args])
    return shlex.join([Path(sys.argv[0]).name if sys.argv else "python", *args])


def collect(engine: str, argv: Optional[Sequence[str]] = None) -> Provenance:
    """The provenance of a run of this process. ``engine``: one of the names above, or the name of
    the stand-in that ran the model."""
    named = os.environ.get(COMMIT_ENV)
    if named:
        # a copy of the tree sent to a benchmark machine, which has no .git or a stale one: the
        # commit the copy was made from, as the person who sent it says (only for a clean tree)
        commit, status = named, ""
    else:
        commit = _git("rev-parse", "HEAD")
        status = _git("status", "--porcelain") if commit else None
    return Provenance(commit=commit, dirty=None if status is None else bool(status),
                      command=command_line(argv),
                      date=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                      host=Host(cpu=cpu_model(), cpus=os.cpu_count()),
                      gpus=find_gpus(), engine=engine)


def with_provenance(result: Mapping[str, Any], provenance: Provenance) -> dict:
    if "provenance" in result:
        raise ValueError("the result already has a 'provenance' key")
    return {"provenance": provenance.as_dict(), **result}


def write_results(path: Path, result: Mapping[str, Any], provenance: Provenance) -> Path:
    """Write ``result`` (a mapping; a list goes under a named key) with its provenance as JSON."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(with_provenance(result, provenance), indent=2, default=str) + "\n")
    log.info("results written to %s", path)
    return path


def engine_of(model_path: Path, backend: str = "auto") -> str:
    """The engine name for a model the product's own factory loads: TensorRT, or ONNX Runtime on
    the CPU (the ONNX Runtime backend of this product runs on the CPU)."""
    from edge_app.config.schema import ModelConfig
    from edge_app.detect.factory import TENSORRT as TENSORRT_BACKEND, choose_backend

    chosen = choose_backend(ModelConfig(path=str(model_path), backend=backend))
    return TENSORRT if chosen == TENSORRT_BACKEND else ONNXRUNTIME_CPU
