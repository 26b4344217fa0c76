"""The CUDA driver's queueing calls, made without letting go of Python's interpreter lock.

cuda-python lets go of the lock for every driver call. For a call that only queues work (a
kernel launch, an asynchronous copy from pinned or device memory) and returns in microseconds,
that costs more than it saves: under load the calling thread then waits for the lock behind
whichever thread took it. The appliance's threads make several such calls a frame (the copy
out of a decoder's slot, the letterbox launch, the decoding kernels). These go through
``ctypes.PyDLL``, which keeps the lock, to the same ``libcuda`` cuda-python uses (one driver, one
context per thread). Calls that wait (stream synchronisation) stay with cuda-python and let go.

Where ``libcuda`` or one of its symbols cannot be loaded, ``load`` returns None and the adapter
makes every call through cuda-python.
"""
from __future__ import annotations

import ctypes
import logging
from typing import Callable, Optional

log = logging.getLogger(__name__)

LIBRARY = "libcuda.so.1"

_u64, _ptr, _uint, _size = ctypes.c_uint64, ctypes.c_void_p, ctypes.c_uint, ctypes.c_size_t


class GilHeldCalls:
    """``cuLaunchKernel`` and the ``cuMemcpy*Async`` calls; each returns the CUresult as an int."""

    def __init__(self, library: ctypes.CDLL) -> None:
        self.launch = self._bind(library, "cuLaunchKernel",
                                 [_ptr, _uint, _uint, _uint, _uint, _uint, _uint, _uint, _ptr, _ptr, _ptr])
        self.memcpy_htod = self._bind(library, "cuMemcpyHtoDAsync_v2", [_u64, _ptr, _size, _ptr])
        self.memcpy_dtoh = self._bind(library, "cuMemcpyDtoHAsync_v2", [_ptr, _u64, _size, _ptr])
        self.memcpy_dtod = self._bind(library, "cuMemcpyDtoDAsync_v2", [_u64, _u64, _size, _ptr])

    @staticmethod
    def _bind(library: ctypes.CDLL, name: str, argtypes: list) -> Callable[..., int]:
        function = getattr(library, name)
        function.argtypes = argtypes
        function.restype = ctypes.c_int
        return function


def load(library: Optional[str] = None, loader: Callable[[str], ctypes.CDLL] = ctypes.PyDLL) -> Optional[GilHeldCalls]:
    """The calls from ``library`` (default ``LIBRARY``, loaded so that calls keep the lock), or
    None when unavailable."""
    try:
        return GilHeldCalls(loader(library or LIBRARY))
    except (OSError, AttributeError) as err:
        log.info("CUDA driver calls go through cuda-python only: %s", err)
        return None
