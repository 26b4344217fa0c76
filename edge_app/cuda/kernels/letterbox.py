"""CUDA source of the preprocessing kernels: letterbox + colour + /255 + HWC->CHW in one pass.

One thread writes one model-input pixel (all three planes), reading the uint8 BGR source
straight from device memory and writing into the engine's input buffer, so the frame is touched
once and the CPU does none of it.

It reproduces the CPU path (``edge_app.detect.letterbox``: ``cv2.resize`` INTER_LINEAR into a
grey-114 canvas, then ``uint8 * float32(1/255)``) to within 1/255 per value, and for most pixels
exactly, by doing what OpenCV's 8-bit resize does rather than an idealised bilinear filter:

* sample positions use half-pixel centres, ``sx = (dx + 0.5) * src_w / new_w - 0.5`` (computed in
  double, then float), with OpenCV's border rule: a position left of the first pixel centre takes
  the first pixel, one right of the last takes the last;
* weights are OpenCV's 11-bit fixed point (``round(w * 2048)``) and the vertical pass uses the
  shifts of its vectorised 8-bit path, so the uint8 level matches. OpenCV handles the last few
  values of a row that do not fill a SIMD register with slightly different rounding; those may
  differ by one level (1/255), which is the stated tolerance.

The NV12 kernels (hardware decoders' output) do the same with the colour conversion folded in:
each of the four source pixels a sample needs is converted from Y and its 2x2 block's U/V with
OpenCV's integer BT.601 limited-range coefficients (``COLOR_YUV2BGR_NV12``), then resized as
above. So the result equals ``cvtColor(NV12 -> BGR)`` followed by the CPU letterbox, within the
same 1/255, with no BGR image ever written. Plane pitches are arguments: decoder surfaces and
frame pools may pad rows.
"""

KERNEL_F32 = "letterbox_bgr_chw_f32"
KERNEL_F16 = "letterbox_bgr_chw_f16"
KERNEL_NV12_F32 = "letterbox_nv12_chw_f32"
KERNEL_NV12_F16 = "letterbox_nv12_chw_f16"

SOURCE = r"""
/* One axis of OpenCV's INTER_LINEAR set-up: source index and 11-bit weights for position d. */
__device__ __forceinline__ void edge_axis(int d, int src_n, int new_n, int* i0, int* i1, int* w0, int* w1)
{
    /* double, then float, exactly as cv::resize computes the sample position */
    float f = (float)(((double)d + 0.5) * ((double)src_n / (double)new_n) - 0.5);
    int i = (int)floorf(f);
    f -= (float)i;
    if (i < 0) { i = 0; f = 0.0f; }
    if (i >= src_n - 1) { i = src_n - 1; f = 0.0f; }
    *i0 = i;
    *i1 = min(i + 1, src_n - 1);
    *w0 = __float2int_rn((1.0f - f) * 2048.0f);
    *w1 = __float2int_rn(f * 2048.0f);
}

/* A packed uint8 BGR source. */
struct EdgeBgr {
    const unsigned char* __restrict__ data;
    int pitch;
    __device__ __forceinline__ void at(int x, int y, int bgr[3]) const
    {
        const unsigned char* p = data + (size_t)y * pitch + x * 3;
        bgr[0] = p[0]; bgr[1] = p[1]; bgr[2] = p[2];
    }
};

/* An NV12 source: OpenCV's COLOR_YUV2BGR_NV12 (BT.601, limited range), bit for bit. */
struct EdgeNv12 {
    const unsigned char* __restrict__ luma;
    int luma_pitch;
    const unsigned char* __restrict__ chroma;
    int chroma_pitch;
    __device__ __forceinline__ void at(int x, int y, int bgr[3]) const
    {
        int yy = luma[(size_t)y * luma_pitch + x];
        const unsigned char* uv = chroma + (size_t)(y >> 1) * chroma_pitch + (x & ~1);
        int u = (int)uv[0] - 128;
        int v = (int)uv[1] - 128;
        int l = max(yy - 16, 0) * 1220542 + (1 << 19);
        bgr[0] = min(max((l + 2116026 * u) >> 20, 0), 255);
        bgr[1] = min(max((l - 852492 * v - 409993 * u) >> 20, 0), 255);
        bgr[2] = min(max((l + 1673527 * v) >> 20, 0), 255);
    }
};

template <typename Source>
__device__ __forceinline__ void edge_sample(const Source& src, int src_w, int src_h,
                                            int rx, int ry, int new_w, int new_h, float out[3])
{
    int x0, x1, a0, a1, y0, y1, b0, b1;
    edge_axis(rx, src_w, new_w, &x0, &x1, &a0, &a1);
    edge_axis(ry, src_h, new_h, &y0, &y1, &b0, &b1);
    int p00[3], p01[3], p10[3], p11[3];
    src.at(x0, y0, p00);
    src.at(x1, y0, p01);
    src.at(x0, y1, p10);
    src.at(x1, y1, p11);
    #pragma unroll
    for (int c = 0; c < 3; ++c) {
        int top = p00[c] * a0 + p01[c] * a1;
        int bottom = p10[c] * a0 + p11[c] * a1;
        /* OpenCV's vectorised 8-bit vertical pass, so the uint8 level comes out the same */
        int level = ((((top >> 4) * b0) >> 16) + (((bottom >> 4) * b1) >> 16) + 2) >> 2;
        level = min(max(level, 0), 255);
        /* BGR -> RGB planes, normalised like the CPU path (uint8 * float(1/255)) */
        out[2 - c] = (float)level * (1.0f / 255.0f);
    }
}

template <typename Source>
__device__ __forceinline__ bool edge_pixel(
    const Source& src, int src_w, int src_h,
    int dst_w, int dst_h, int new_w, int new_h, int pad_left, int pad_top,
    float pad_value, int* index, float rgb[3])
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= dst_w || y >= dst_h) return false;
    *index = y * dst_w + x;
    int rx = x - pad_left;
    int ry = y - pad_top;
    if (rx < 0 || ry < 0 || rx >= new_w || ry >= new_h) {
        rgb[0] = rgb[1] = rgb[2] = pad_value;
    } else {
        edge_sample(src, src_w, src_h, rx, ry, new_w, new_h, rgb);
    }
    return true;
}

/* FP16 engine inputs: the conversion is done with the PTX instruction, so no header is needed */
__device__ __forceinline__ unsigned short edge_to_half(float v)
{
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
    return h;
}

__device__ __forceinline__ void edge_store(float* dst, int plane, int index, const float rgb[3])
{
    dst[index] = rgb[0];
    dst[plane + index] = rgb[1];
    dst[2 * plane + index] = rgb[2];
}

__device__ __forceinline__ void edge_store(unsigned short* dst, int plane, int index, const float rgb[3])
{
    dst[index] = edge_to_half(rgb[0]);
    dst[plane + index] = edge_to_half(rgb[1]);
    dst[2 * plane + index] = edge_to_half(rgb[2]);
}

template <typename Source, typename Out>
__device__ __forceinline__ void edge_letterbox(
    const Source& src, int src_w, int src_h, Out* __restrict__ dst, int dst_w, int dst_h,
    int new_w, int new_h, int pad_left, int pad_top, float pad_value)
{
    int index;
    float rgb[3];
    if (!edge_pixel(src, src_w, src_h, dst_w, dst_h, new_w, new_h, pad_left, pad_top, pad_value, &index, rgb)) return;
    edge_store(dst, dst_w * dst_h, index, rgb);
}

extern "C" __global__ void letterbox_bgr_chw_f32(
    const unsigned char* __restrict__ src, int src_w, int src_h, int src_pitch,
    float* __restrict__ dst, int dst_w, int dst_h, int new_w, int new_h, int pad_left, int pad_top,
    float pad_value)
{
    EdgeBgr source = {src, src_pitch};
    edge_letterbox(source, src_w, src_h, dst, dst_w, dst_h, new_w, new_h, pad_left, pad_top, pad_value);
}

extern "C" __global__ void letterbox_bgr_chw_f16(
    const unsigned char* __restrict__ src, int src_w, int src_h, int src_pitch,
    unsigned short* __restrict__ dst, int dst_w, int dst_h, int new_w, int new_h, int pad_left, int pad_top,
    float pad_value)
{
    EdgeBgr source = {src, src_pitch};
    edge_letterbox(source, src_w, src_h, dst, dst_w, dst_h, new_w, new_h, pad_left, pad_top, pad_value);
}

extern "C" __global__ void letterbox_nv12_chw_f32(
    const unsigned char* __restrict__ luma, int luma_pitch, const unsigned char* __restrict__ chroma, int chroma_pitch,
    int src_w, int src_h,
    float* __restrict__ dst, int dst_w, int dst_h, int new_w, int new_h, int pad_left, int pad_top,
    float pad_value)
{
    EdgeNv12 source = {luma, luma_pitch, chroma, chroma_pitch};
    edge_letterbox(source, src_w, src_h, dst, dst_w, dst_h, new_w, new_h, pad_left, pad_top, pad_value);
}

extern "C" __global__ void letterbox_nv12_chw_f16(
    const unsigned char* __restrict__ luma, int luma_pitch, const unsigned char* __restrict__ chroma, int chroma_pitch,
    int src_w, int src_h,
    unsigned short* __restrict__ dst, int dst_w, int dst_h, int new_w, int new_h, int pad_left, int pad_top,
    float pad_value)
{
    EdgeNv12 source = {luma, luma_pitch, chroma, chroma_pitch};
    edge_letterbox(source, src_w, src_h, dst, dst_w, dst_h, new_w, new_h, pad_left, pad_top, pad_value);
}

/* Row-by-row copy between pitched buffers (a decoder surface into a packed frame buffer). */
extern "C" __global__ void copy_pitched_u8(
    const unsigned char* __restrict__ src, int src_pitch, unsigned char* __restrict__ dst, int dst_pitch,
    int width_bytes, int rows)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width_bytes || y >= rows) return;
    dst[(size_t)y * dst_pitch + x] = src[(size_t)y * src_pitch + x];
}
"""

KERNEL_COPY_PITCHED = "copy_pitched_u8"
