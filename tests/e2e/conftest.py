import pytest

from testkit.appliance import ApplianceProcess
from testkit.net import free_port


@pytest.fixture
def appliance_factory(tmp_path):
    """``appliance_factory(cameras, model_path, broker, **sections) -> started ApplianceProcess``."""
    running = []

    def make(cameras, model_path, broker=None, start=True, **sections):
        config = {
            "device_id": "e2e",
            "cameras": cameras,
            "model": {"path": str(model_path), "max_batch": 1, **sections.pop("model", {})},
            "mqtt": {"enabled": broker is not None, "host": getattr(broker, "host", "127.0.0.1"),
                     "port": getattr(broker, "port", 1883), **sections.pop("mqtt", {})},
            "api": {"host": "127.0.0.1", "port": free_port(), **sections.pop("api", {})},
            "capture": {"stall_timeout_s": 5, "backoff_initial_s": 0.5, "backoff_max_s": 2, "open_timeout_s": 8,
                        **sections.pop("capture", {})},
            **sections,
        }
        proc = ApplianceProcess(config, tmp_path)
        running.append(proc)
        return proc.start() if start else proc

    yield make
    for proc in running:
        proc.close()
