"""A CudaDevice wrapper for tests that must prove a path copies nothing between host and GPU."""
from __future__ import annotations


class CountingDevice:
    """A CudaDevice that counts host<->device copies, to prove a path makes none."""

    def __init__(self, inner) -> None:
        self._inner = inner
        self.host_to_device = 0
        self.device_to_host = 0

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def memcpy_htod_async(self, *args, **kwargs):
        self.host_to_device += 1
        return self._inner.memcpy_htod_async(*args, **kwargs)

    def memcpy_dtoh_async(self, *args, **kwargs):
        self.device_to_host += 1
        return self._inner.memcpy_dtoh_async(*args, **kwargs)
