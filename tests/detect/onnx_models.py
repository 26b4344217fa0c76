"""Tiny ONNX models built on the fly, for load-time checks that need a specific input or output.

Each graph casts its input to float, averages it to one number and broadcasts that number to
the requested output shape: the outputs are meaningless, the shapes are what the tests need.
"""
from pathlib import Path
from typing import Sequence, Union

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

Dim = Union[int, str]


def build_model(
    path: Path,
    input_shape: Sequence[Dim] = (1, 3, 320, 320),
    output_shape: Sequence[int] = (1, 84, 2100),
    input_type: int = TensorProto.FLOAT,
    extra_input: bool = False,
    metadata: dict = None,
) -> Path:
    """Write a model with input ``images`` and output ``output0`` to ``path`` and return it."""
    inputs = [helper.make_tensor_value_info("images", input_type, list(input_shape))]
    if extra_input:
        inputs.append(helper.make_tensor_value_info("orig_size", TensorProto.INT64, [1, 2]))
    nodes = [
        helper.make_node("Cast", ["images"], ["as_float"], to=TensorProto.FLOAT),
        helper.make_node("ReduceMean", ["as_float"], ["mean"], keepdims=0),
        helper.make_node("Expand", ["mean", "out_shape"], ["output0"]),
    ]
    shape_init = numpy_helper.from_array(np.asarray(output_shape, dtype=np.int64), "out_shape")
    output = helper.make_tensor_value_info("output0", TensorProto.FLOAT, list(output_shape))
    graph = helper.make_graph(nodes, "tiny", inputs, [output], initializer=[shape_init])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    for key, value in (metadata or {}).items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path
