"""NVRTC (CUDA's run-time compiler) through ctypes, for bindings that do not wrap it (pycuda).

pycuda's own ``SourceModule`` shells out to ``nvcc``, which a Jetson may lack on its PATH; NVRTC
is a plain shared library that JetPack and the CUDA wheels both ship.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import glob
import logging
import os
import sys
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

from edge_app.cuda.base import CudaError

log = logging.getLogger(__name__)

_SONAMES = ("libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so.11.1")


def _candidate_dirs() -> List[Path]:
    dirs: List[Path] = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            dirs.append(Path(os.environ[var]) / "lib64")
    dirs += [Path("/usr/local/cuda/lib64"), Path("/usr/local/cuda/targets/aarch64-linux/lib"),
             Path("/usr/local/cuda/targets/x86_64-linux/lib")]
    dirs += [Path(p) for p in sorted(glob.glob("/usr/local/cuda-*/lib64"), reverse=True)]
    # the pip wheels (nvidia-cuda-nvrtc) put the library under site-packages/nvidia/
    for entry in sys.path:
        base = Path(entry) / "nvidia"
        if base.is_dir():
            dirs += [Path(p) for p in glob.glob(str(base / "*" / "lib"))]
            dirs += [Path(p) for p in glob.glob(str(base / "cuda_nvrtc" / "lib"))]
    return dirs


def load_nvrtc() -> Optional[ctypes.CDLL]:
    """The NVRTC library, or None when this machine has none."""
    names: List[str] = list(_SONAMES)
    found = ctypes.util.find_library("nvrtc")
    if found:
        names.insert(0, found)
    for directory in _candidate_dirs():
        names += sorted(p for p in glob.glob(str(directory / "libnvrtc.so*")) if "builtins" not in p)
    for name in names:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


class Nvrtc:
    """Compiles CUDA C++ to a cubin for one GPU architecture."""

    def __init__(self, lib: ctypes.CDLL):
        self._lib = lib
        lib.nvrtcGetErrorString.restype = ctypes.c_char_p
        lib.nvrtcGetErrorString.argtypes = [ctypes.c_int]

    @classmethod
    def load(cls) -> Optional["Nvrtc"]:
        lib = load_nvrtc()
        return cls(lib) if lib is not None else None

    def _check(self, code: int, call: str) -> None:
        if code != 0:
            text = self._lib.nvrtcGetErrorString(code) or b"unknown error"
            raise CudaError(f"{call} failed: {text.decode(errors='replace')}")

    def version(self) -> Tuple[int, int]:
        major, minor = ctypes.c_int(), ctypes.c_int()
        self._check(self._lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "nvrtcVersion")
        return major.value, minor.value

    def compile(self, source: str, name: str, options: Sequence[str]) -> bytes:
        """Compile ``source`` and return the cubin; a compile error raises with NVRTC's log."""
        prog = ctypes.c_void_p()
        self._check(self._lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), f"{name}.cu".encode(),
                                                 0, None, None), "nvrtcCreateProgram")
        try:
            opts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
            code = self._lib.nvrtcCompileProgram(prog, len(options), opts)
            if code != 0:
                raise CudaError(f"NVRTC could not compile {name}: {self._log(prog)}")
            size = ctypes.c_size_t()
            self._check(self._lib.nvrtcGetCUBINSize(prog, ctypes.byref(size)), "nvrtcGetCUBINSize")
            image = ctypes.create_string_buffer(size.value)
            self._check(self._lib.nvrtcGetCUBIN(prog, image), "nvrtcGetCUBIN")
            return image.raw
        finally:
            self._lib.nvrtcDestroyProgram(ctypes.byref(prog))

    def _log(self, prog: ctypes.c_void_p) -> str:
        size = ctypes.c_size_t()
        if self._lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size)) != 0 or size.value <= 1:
            return "no compiler log"
        text = ctypes.create_string_buffer(size.value)
        self._lib.nvrtcGetProgramLog(prog, text)
        return text.value.decode(errors="replace").strip()
