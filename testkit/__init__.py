"""The test kit: the real things the tests and the benchmarks run against.

A Mosquitto broker on a free port, the GStreamer RTSP server, ``edge-app run`` as a subprocess
(also with the TensorRT stand-in), free ports, waiting with a deadline, throw-away TLS
certificates, the shared models and images, skipping for a missing tool.

``tests/`` and ``bench/`` both import it; it imports neither, and it is not installed with the
package (``setup.py`` packages ``edge_app`` only).
"""
