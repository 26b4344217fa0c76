"""CUDA source of the motion picture kernel: a device frame's Y plane, shrunk by box averaging.

Motion is found on a small grey picture (``edge_app.motion.detector``). The Y plane of an NV12
frame already is grey, so on the GPU path one thread makes one pixel of the small picture: the
mean of the box of Y pixels it covers (boxes from integer division, like ``luma_shrink_reference``
below, which the GPU tests compare it with). Only the small picture (320x180 for 1080p, 57 kB)
is copied to the host, not the 3 MB frame. Averaging a box also averages sensor noise, which is
what the detector's blur is for.
"""
from __future__ import annotations

import numpy as np

KERNEL_SHRINK_LUMA = "shrink_luma"

SOURCE = r"""
extern "C" __global__ void shrink_luma(const unsigned char* __restrict__ y, int pitch, int src_w, int src_h,
                                       unsigned char* __restrict__ out, int out_w, int out_h) {
    int ox = blockIdx.x * blockDim.x + threadIdx.x;
    int oy = blockIdx.y * blockDim.y + threadIdx.y;
    if (ox >= out_w || oy >= out_h) return;
    int x0 = (int)((long long)ox * src_w / out_w);
    int x1 = (int)((long long)(ox + 1) * src_w / out_w);
    int y0 = (int)((long long)oy * src_h / out_h);
    int y1 = (int)((long long)(oy + 1) * src_h / out_h);
    if (x1 <= x0) x1 = x0 + 1;
    if (y1 <= y0) y1 = y0 + 1;
    unsigned int sum = 0;
    for (int row = y0; row < y1; ++row) {
        const unsigned char* line = y + (long long)row * pitch;
        for (int col = x0; col < x1; ++col) sum += line[col];
    }
    unsigned int count = (unsigned int)((x1 - x0) * (y1 - y0));
    out[(long long)oy * out_w + ox] = (unsigned char)((sum + count / 2) / count);
}
"""


def _edges(size_in: int, size_out: int) -> np.ndarray:
    """Box boundaries along one axis, as the kernel computes them."""
    index = np.arange(size_out + 1, dtype=np.int64)
    edges = index * size_in // size_out
    return edges


def luma_shrink_reference(y: np.ndarray, out_w: int, out_h: int) -> np.ndarray:
    """What ``shrink_luma`` makes of a uint8 ``(H, W)`` Y plane, in numpy (for tests and hosts)."""
    src_h, src_w = y.shape
    xs, ys = _edges(src_w, out_w), _edges(src_h, out_h)
    out = np.empty((out_h, out_w), np.uint8)
    table = np.zeros((src_h + 1, src_w + 1), np.int64)  # summed-area table
    table[1:, 1:] = y.astype(np.int64).cumsum(0).cumsum(1)
    x0, x1 = xs[:-1], np.maximum(xs[1:], xs[:-1] + 1)
    y0, y1 = ys[:-1], np.maximum(ys[1:], ys[:-1] + 1)
    sums = (table[y1][:, x1] - table[y0][:, x1] - table[y1][:, x0] + table[y0][:, x0])
    counts = np.outer(y1 - y0, x1 - x0)
    out[:] = (sums + counts // 2) // counts
    return out
