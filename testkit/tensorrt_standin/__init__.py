"""Test stand-ins for TensorRT and the CUDA layer. NOT TensorRT, NOT CUDA (see README.md)."""
