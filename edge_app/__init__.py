"""edge-app: cameras -> YOLO (TensorRT / ONNX Runtime) -> MQTT, with a REST API."""
from edge_app.version import __version__

__all__ = ["__version__"]
