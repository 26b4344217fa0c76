"""CUDA source of the motion picture kernel: a device frame's Y plane, shrunk by box averaging.

Motion is found on a small grey picture (``edge_app.motion.detector``). The Y plane of an NV12
frame already is grey, so on the GPU path one thread makes one pixel of the small picture: the
mean of the box of Y pixels it covers (boxes from integer division, like ``luma_shrink_reference``
below, which the GPU tests compare it with). Only the small picture (320x180 for 1080p, 57 kB)
is copied to the host, not the 3 MB frame. Averaging a box also averages sensor noise, which is
what the detector's blur is for.

``shrink_blur_luma`` also does the detector's blur, in the same launch, and writes the float32
picture the detector works on (``luma_shrink_blur_reference``): the host then starts at the
background difference.
"""
from __future__ import annotations

import numpy as np
from edge_app.opencv import opencv

KERNEL_SHRINK_LUMA = "shrink_luma"
KERNEL_SHRINK_BLUR_LUMA = "shrink_blur_luma"
#: the blur's taps on each side of a pixel (a 5-tap kernel, the detector's BLUR_PX)
BLUR_RADIUS = 2

SOURCE = r"""
// The mean of the box of Y pixels that pixel (ox, oy) of the small picture covers, rounded.
__device__ unsigned int box_mean(const unsigned char* __restrict__ y, int pitch, int src_w, int src_h,
                                 int out_w, int out_h, int ox, int oy) {
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
    return (sum + count / 2) / count;
}

extern "C" __global__ void shrink_luma(const unsigned char* __restrict__ y, int pitch, int src_w, int src_h,
                                       unsigned char* __restrict__ out, int out_w, int out_h) {
    int ox = blockIdx.x * blockDim.x + threadIdx.x;
    int oy = blockIdx.y * blockDim.y + threadIdx.y;
    if (ox >= out_w || oy >= out_h) return;
    out[(long long)oy * out_w + ox] = (unsigned char)box_mean(y, pitch, src_w, src_h, out_w, out_h, ox, oy);
}

// OpenCV's BORDER_REFLECT_101 (gfedcb|abcdefgh|gfedcba), the border sepFilter2D uses by default.
__device__ int reflect101(int i, int n) {
    if (n == 1) return 0;
    while (i < 0 || i >= n) {
        if (i < 0) i = -i;
        if (i >= n) i = 2 * n - 2 - i;
    }
    return i;
}

#define BW 32
#define BH 8
#define R 2
// shrink_luma followed by the detector's separable blur (taps k0..k4, border reflect 101), in
// one launch: each block shrinks its tile and a border of R pixels into shared memory, blurs the
// rows, then the columns, and writes float32 (the detector's picture, as cv2.sepFilter2D makes
// it from the shrunk picture: with dyadic taps like 1 4 6 4 1 / 16 every sum is exact in float32).
extern "C" __global__ void shrink_blur_luma(const unsigned char* __restrict__ y, int pitch, int src_w, int src_h,
                                            float* __restrict__ out, int out_w, int out_h,
                                            float k0, float k1, float k2, float k3, float k4) {
    __shared__ float tile[BH + 2 * R][BW + 2 * R];
    __shared__ float rows[BH + 2 * R][BW];
    const float k[2 * R + 1] = {k0, k1, k2, k3, k4};
    int t = threadIdx.y * BW + threadIdx.x;
    int bx = blockIdx.x * BW, by = blockIdx.y * BH;
    for (int i = t; i < (BH + 2 * R) * (BW + 2 * R); i += BW * BH) {
        int ly = i / (BW + 2 * R), lx = i % (BW + 2 * R);
        tile[ly][lx] = (float)box_mean(y, pitch, src_w, src_h, out_w, out_h,
                                       reflect101(bx + lx - R, out_w), reflect101(by + ly - R, out_h));
    }
    __syncthreads();
    for (int i = t; i < (BH + 2 * R) * BW; i += BW * BH) {
        int ly = i / BW, lx = i % BW;
        float sum = 0.0f;
        for (int j = 0; j <= 2 * R; ++j) sum += k[j] * tile[ly][lx + j];
        rows[ly][lx] = sum;
    }
    __syncthreads();
    int ox = bx + threadIdx.x, oy = by + threadIdx.y;
    if (ox >= out_w || oy >= out_h) return;
    float sum = 0.0f;
    for (int j = 0; j <= 2 * R; ++j) sum += k[j] * rows[threadIdx.y + j][threadIdx.x];
    out[(long long)oy * out_w + ox] = sum;
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


def luma_shrink_blur_reference(y: np.ndarray, out_w: int, out_h: int, taps: np.ndarray) -> np.ndarray:
    """What ``shrink_blur_luma`` makes: the reference shrink, then OpenCV's separable blur to float32."""
    cv2 = opencv()

    return cv2.sepFilter2D(luma_shrink_reference(y, out_w, out_h), cv2.CV_32F, taps, taps)
