"""What the engine build needs to know about an ONNX file before TensorRT sees it."""
from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from edge_app.detect.base import DetectorError

log = logging.getLogger(__name__)

_CHUNK_BYTES = 1 << 20


@dataclass(frozen=True)
class OnnxInfo:
    input_name: str
    #: N, C, H, W with None for a dynamic dimension
    input_shape: Tuple[Optional[int], ...]
    output_names: List[str] = field(default_factory=list)
    metadata: Dict[str, str] = field(default_factory=dict)

    @property
    def dynamic_batch(self) -> bool:
        return self.input_shape[0] is None

    @property
    def static_hw(self) -> Optional[Tuple[int, int]]:
        height, width = self.input_shape[2], self.input_shape[3]
        return (height, width) if height and width else None


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK_BYTES), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _dim(value) -> Optional[int]:
    return int(value) if isinstance(value, int) and value > 0 else None


def _from_onnx(path: Path) -> Optional[OnnxInfo]:
    try:
        import onnx
    except ImportError:
        return None
    model = onnx.load(str(path), load_external_data=False)
    initializers = {init.name for init in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in initializers]
    if len(inputs) != 1:
        raise DetectorError(f"model {path} has {len(inputs)} inputs; expected one image input N x 3 x H x W")
    dims = inputs[0].type.tensor_type.shape.dim
    shape = tuple(_dim(d.dim_value) if d.HasField("dim_value") else None for d in dims)
    metadata = {prop.key: prop.value for prop in model.metadata_props}
    return OnnxInfo(inputs[0].name, shape, [o.name for o in model.graph.output], metadata)


def _from_onnxruntime(path: Path) -> OnnxInfo:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    session = ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
    inputs = session.get_inputs()
    if len(inputs) != 1:
        raise DetectorError(f"model {path} has {len(inputs)} inputs; expected one image input N x 3 x H x W")
    shape = tuple(_dim(d) for d in inputs[0].shape)
    metadata = dict(session.get_modelmeta().custom_metadata_map or {})
    return OnnxInfo(inputs[0].name, shape, [o.name for o in session.get_outputs()], metadata)


def read_onnx_info(path: Path) -> OnnxInfo:
    """Input name and shape, output names and metadata of an ONNX model (DetectorError if unreadable)."""
    if not path.is_file():
        raise DetectorError(f"model file {path} does not exist")
    try:
        info = _from_onnx(path) or _from_onnxruntime(path)
    except DetectorError:
        raise
    except Exception as err:
        raise DetectorError(f"model file {path} is not a readable ONNX model ({str(err).strip()[:200]})") from err
    if len(info.input_shape) != 4 or info.input_shape[1] not in (None, 3):
        raise DetectorError(f"model {path} has input {info.input_name} {list(info.input_shape)}; expected N x 3 x H x W")
    return info
