"""Benchmarks of edge-app: raw backend, pipeline on pre-decoded frames, full appliance,
Ultralytics as the peer, per-stage CPU, latency and memory. Entry point: ``python -m bench.run``."""
