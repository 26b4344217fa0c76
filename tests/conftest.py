"""Fixtures shared by the whole suite, in tests/support: around the real-world helpers of the
test kit (``testkit``: a Mosquitto broker on a free port, a GStreamer RTSP server), and clips
made with ffmpeg."""

pytest_plugins = ["tests.support.paths", "tests.support.media", "tests.support.broker", "tests.support.rtsp"]


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs an NVIDIA GPU with CUDA (skipped without one)")
    config.addinivalue_line("markers", "slow: end-to-end tests with subprocesses, brokers and RTSP servers")
