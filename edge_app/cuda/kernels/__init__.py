"""CUDA C++ kernel sources, compiled at run time with NVRTC for the GPU at hand."""
