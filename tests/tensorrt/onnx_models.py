"""Variants of the real YOLOv8n model for the TensorRT backend tests, written with onnx.helper."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def _load(src: Path) -> onnx.ModelProto:
    return onnx.load(str(src))


def with_metadata(src: Path, dst: Path, key: str, value: str) -> Path:
    """The same network with one more metadata entry: a different file, so a different sha256."""
    model = _load(src)
    entry = model.metadata_props.add()
    entry.key, entry.value = key, value
    onnx.save(model, str(dst))
    return dst


def with_custom_op(src: Path, dst: Path) -> Path:
    """Adds a node of an operator no parser knows, consuming the network output."""
    model = _load(src)
    node = helper.make_node("MyCustomOp", ["output0"], ["custom_out"], name="mystery_node", domain="com.example")
    model.graph.node.append(node)
    model.opset_import.append(helper.make_opsetid("com.example", 1))
    onnx.save(model, str(dst))
    return dst


def with_static_batch(src: Path, dst: Path, batch: int) -> Path:
    model = _load(src)
    for value in (model.graph.input[0], model.graph.output[0]):
        value.type.tensor_type.shape.dim[0].dim_value = batch
    onnx.save(model, str(dst))
    return dst


def with_efficient_nms(src: Path, dst: Path, max_boxes: int = 100) -> Path:
    """YOLOv8 head -> corner boxes + class scores -> EfficientNMS_TRT, as TensorRT export tools do.

    Outputs num_dets (N x 1 int32), det_boxes (N x K x 4), det_scores (N x K), det_classes
    (N x K int32), all in model-input pixels.
    """
    model = _load(src)
    graph = model.graph
    corners = np.array([[1, 0, 1, 0], [0, 1, 0, 1], [-0.5, 0, 0.5, 0], [0, -0.5, 0, 0.5]], np.float32)
    graph.initializer.extend([
        numpy_helper.from_array(corners, "nms_corners"),
        numpy_helper.from_array(np.array([0], np.int64), "nms_s0"),
        numpy_helper.from_array(np.array([4], np.int64), "nms_s4"),
        numpy_helper.from_array(np.array([84], np.int64), "nms_s84"),
        numpy_helper.from_array(np.array([2], np.int64), "nms_axis"),
    ])
    graph.node.extend([
        helper.make_node("Transpose", ["output0"], ["nms_rows"], perm=[0, 2, 1], name="nms_transpose"),
        helper.make_node("Slice", ["nms_rows", "nms_s0", "nms_s4", "nms_axis"], ["nms_cxcywh"], name="nms_boxes"),
        helper.make_node("Slice", ["nms_rows", "nms_s4", "nms_s84", "nms_axis"], ["nms_scores"], name="nms_scores"),
        helper.make_node("MatMul", ["nms_cxcywh", "nms_corners"], ["nms_xyxy"], name="nms_to_corners"),
        helper.make_node("EfficientNMS_TRT", ["nms_xyxy", "nms_scores"],
                         ["num_dets", "det_boxes", "det_scores", "det_classes"], name="efficient_nms",
                         plugin_version="1", background_class=-1, max_output_boxes=max_boxes, score_threshold=0.25,
                         iou_threshold=0.45, score_activation=0, box_coding=0),
    ])
    del graph.output[:]
    graph.output.extend([
        helper.make_tensor_value_info("num_dets", TensorProto.INT32, ["batch", 1]),
        helper.make_tensor_value_info("det_boxes", TensorProto.FLOAT, ["batch", max_boxes, 4]),
        helper.make_tensor_value_info("det_scores", TensorProto.FLOAT, ["batch", max_boxes]),
        helper.make_tensor_value_info("det_classes", TensorProto.INT32, ["batch", max_boxes]),
    ])
    onnx.save(model, str(dst))
    return dst
