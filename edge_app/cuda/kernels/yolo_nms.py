"""CUDA source of the GPU decoder for ``yolo_channels_first`` outputs (YOLOv8/v11 heads).

The engine's raw output is ``N x (4+C) x A`` (8400 anchors of 84 values for YOLOv8n at 640:
2.7 MB per image). Copying that to the host and reducing it there costs a frame more CPU than
everything else the appliance does with it, and the CPU of a Jetson is its scarcest resource.
These two kernels leave only the kept boxes to copy (TensorRT's EfficientNMS plugin and
DeepStream do the same inside the engine; here it works on any exported model):

``yolo_candidates_*``
    one thread per anchor: best class score and its class (the first on ties, like numpy's
    argmax), dropped unless the score is above the threshold and the class is kept; survivors
    are appended to a per-image list of at most ``cap`` (cx, cy, w, h, score, class) rows, with
    their anchor index. ``counts[b]`` is the number of survivors even when it exceeds ``cap``.
``yolo_nms``
    one block per image: sorts the survivors by score, highest first, anchors in order on ties
    (numpy's stable sort on the host's anchor-ordered candidates), converts to corners as the
    host does, and runs greedy class-aware NMS: a box is suppressed by a kept box of its class
    whose IoU with it is greater than the threshold. Writes at most ``max_det`` rows of (x1, y1,
    x2, y2, score, class) in model pixels and ``kept[b]``; ``kept[b] = -1`` when the image had
    more survivors than ``cap``, and the host decodes that image from the raw output instead.

So the result is the host decoder's (``edge_app.detect.yolo_outputs``) up to float32 rounding in the
IoU (the host computes it in float64): the same boxes, scores and classes in the same order.
"""

KERNEL_CANDIDATES_F32 = "yolo_candidates_f32"
KERNEL_CANDIDATES_F16 = "yolo_candidates_f16"
KERNEL_NMS = "yolo_nms"

#: survivors of the score threshold that one image may have for the GPU path (one per thread of
#: the NMS block, and the bitonic sort needs a power of two)
CANDIDATE_CAP = 1024
#: values per candidate row and per kept row
ROW_VALUES = 6

SOURCE = r"""
#define EDGE_CAP 1024

__device__ __forceinline__ float edge_load(const float* p, size_t i) { return p[i]; }
__device__ __forceinline__ float edge_load(const unsigned short* p, size_t i)
{
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(p[i]));
    return f;
}

template <typename T>
__device__ void edge_candidates(const T* __restrict__ pred, int anchors, int classes, float conf,
                                const unsigned char* __restrict__ keep_class, float* __restrict__ rows,
                                int* __restrict__ anchor_of, int* __restrict__ counts, int cap)
{
    int a = blockIdx.x * blockDim.x + threadIdx.x;
    int b = blockIdx.y;
    if (a >= anchors) return;
    const T* p = pred + (size_t)b * (4 + classes) * anchors;
    float best = edge_load(p, (size_t)4 * anchors + a);
    int cls = 0;
    for (int c = 1; c < classes; ++c) {
        float v = edge_load(p, (size_t)(4 + c) * anchors + a);
        if (v > best) { best = v; cls = c; }
    }
    if (!(best > conf)) return;
    if (keep_class != 0 && !keep_class[cls]) return;
    int slot = atomicAdd(&counts[b], 1);
    if (slot >= cap) return;
    float* row = rows + ((size_t)b * cap + slot) * 6;
    row[0] = edge_load(p, a);
    row[1] = edge_load(p, (size_t)anchors + a);
    row[2] = edge_load(p, (size_t)2 * anchors + a);
    row[3] = edge_load(p, (size_t)3 * anchors + a);
    row[4] = best;
    row[5] = (float)cls;
    anchor_of[(size_t)b * cap + slot] = a;
}

extern "C" __global__ void yolo_candidates_f32(const float* pred, int anchors, int classes, float conf,
    const unsigned char* keep_class, float* rows, int* anchor_of, int* counts, int cap)
{
    edge_candidates(pred, anchors, classes, conf, keep_class, rows, anchor_of, counts, cap);
}

extern "C" __global__ void yolo_candidates_f16(const unsigned short* pred, int anchors, int classes, float conf,
    const unsigned char* keep_class, float* rows, int* anchor_of, int* counts, int cap)
{
    edge_candidates(pred, anchors, classes, conf, keep_class, rows, anchor_of, counts, cap);
}

/* true when element x belongs after element y: lower score, or the same score and a later anchor */
__device__ __forceinline__ bool edge_after(float sx, int ax, float sy, int ay)
{
    return sx < sy || (sx == sy && ax > ay);
}

/* blockDim.x == EDGE_CAP, one block per image */
extern "C" __global__ void yolo_nms(const float* __restrict__ rows, const int* __restrict__ anchor_of,
    const int* __restrict__ counts, int cap, float iou_threshold, int max_det,
    float* __restrict__ kept_rows, int* __restrict__ kept)
{
    __shared__ float score[EDGE_CAP];
    __shared__ int anchor[EDGE_CAP];
    __shared__ int slot[EDGE_CAP];
    __shared__ float x1[EDGE_CAP], y1[EDGE_CAP], x2[EDGE_CAP], y2[EDGE_CAP], area[EDGE_CAP];
    __shared__ int cls[EDGE_CAP];
    __shared__ unsigned char suppressed[EDGE_CAP];
    __shared__ int kept_n;

    int b = blockIdx.x;
    int t = threadIdx.x;
    int n = counts[b];
    if (n > cap) {
        if (t == 0) kept[b] = -1;
        return;
    }
    const float* in = rows + (size_t)b * cap * 6;
    score[t] = t < n ? in[(size_t)t * 6 + 4] : -3.0e38f;
    anchor[t] = t < n ? anchor_of[(size_t)b * cap + t] : 0x7fffffff;
    slot[t] = t;
    __syncthreads();

    /* bitonic sort of all EDGE_CAP entries: score descending, anchor ascending */
    for (int k = 2; k <= EDGE_CAP; k <<= 1) {
        for (int j = k >> 1; j > 0; j >>= 1) {
            int o = t ^ j;
            if (o > t) {
                bool ascending_block = (t & k) == 0;
                bool swap = ascending_block ? edge_after(score[t], anchor[t], score[o], anchor[o])
                                            : edge_after(score[o], anchor[o], score[t], anchor[t]);
                if (swap) {
                    float s = score[t]; score[t] = score[o]; score[o] = s;
                    int a = anchor[t]; anchor[t] = anchor[o]; anchor[o] = a;
                    int i = slot[t]; slot[t] = slot[o]; slot[o] = i;
                }
            }
            __syncthreads();
        }
    }

    if (t < n) {
        const float* r = in + (size_t)slot[t] * 6;
        /* as the host's cxcywh_to_xyxy: half the size, then centre -/+ half, in float32 */
        float hw = r[2] / 2.0f, hh = r[3] / 2.0f;
        x1[t] = r[0] - hw; y1[t] = r[1] - hh; x2[t] = r[0] + hw; y2[t] = r[1] + hh;
        area[t] = fmaxf(x2[t] - x1[t], 0.0f) * fmaxf(y2[t] - y1[t], 0.0f);
        cls[t] = (int)r[5];
    }
    suppressed[t] = 0;
    if (t == 0) kept_n = 0;
    __syncthreads();

    float* out = kept_rows + (size_t)b * max_det * 6;
    for (int i = 0; i < n; ++i) {
        if (suppressed[i]) continue;  /* the same shared value for every thread: uniform */
        if (t == 0) {
            float* o = out + (size_t)kept_n * 6;
            o[0] = x1[i]; o[1] = y1[i]; o[2] = x2[i]; o[3] = y2[i]; o[4] = score[i]; o[5] = (float)cls[i];
            kept_n += 1;
        }
        if (t > i && t < n && !suppressed[t] && cls[t] == cls[i]) {
            float w = fmaxf(fminf(x2[i], x2[t]) - fmaxf(x1[i], x1[t]), 0.0f);
            float h = fmaxf(fminf(y2[i], y2[t]) - fmaxf(y1[i], y1[t]), 0.0f);
            float inter = w * h;
            float uni = area[i] + area[t] - inter;
            float iou = uni > 0.0f ? inter / uni : 0.0f;
            if (iou > iou_threshold) suppressed[t] = 1;
        }
        __syncthreads();
        if (kept_n >= max_det) break;
    }
    if (t == 0) kept[b] = kept_n;
}
"""
