"""The benchmark on an NVIDIA GPU, with the PyTorch FP16 stand-in for TensorRT (``torch_engine``)."""
