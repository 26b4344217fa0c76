"""Benchmarks of edge-app, one subpackage and one entry point per family (bench/README.md):

* ``python -m bench.cpu``: raw backend, pipeline on pre-decoded frames, full appliance, Ultralytics
  as the peer, per-stage CPU, latency and memory, the long run; the cost of tracking and events;
* ``python -m bench.gpu``: the same on an NVIDIA GPU, NVDEC decoding, the model stage's waits;
* ``python -m bench.fleet``: a simulated fleet of appliances, and the fleet server under it;
* ``python -m bench.chaos``: a chaos soak of a real ``edge-app run``;
* ``python -m bench.track``: the tracker against a reference ByteTrack on synthetic scenes.

``bench.common`` holds what several families share."""
