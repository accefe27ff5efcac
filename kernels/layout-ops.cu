#include "kernels/layout-ops.h"

#include "engine/backend/box-ops.h"
#include "engine/backend/mask-box.h"
#include "kernels/cuda-check.h"
#include "kernels/flat-launch.cuh"

namespace folio::kernels {

namespace {

constexpr int kMaskBlock = 256;

// Each thread scans a strided share of one map for positive values; the block takes the extremes.
__global__ void mask_boxes_kernel(const float* x, float* boxes, int64_t h, int64_t w) {
    __shared__ int64_t lo_x[kMaskBlock], lo_y[kMaskBlock], hi_x[kMaskBlock], hi_y[kMaskBlock];
    const float* map = x + static_cast<int64_t>(blockIdx.x) * h * w;
    int64_t x0 = w, y0 = h, x1 = -1, y1 = -1;
    for (int64_t i = threadIdx.x; i < h * w; i += blockDim.x) {
        if (map[i] > 0.0f) {
            const int64_t y = i / w, c = i % w;
            x0 = min(x0, c);
            x1 = max(x1, c);
            y0 = min(y0, y);
            y1 = max(y1, y);
        }
    }
    lo_x[threadIdx.x] = x0;
    lo_y[threadIdx.x] = y0;
    hi_x[threadIdx.x] = x1;
    hi_y[threadIdx.x] = y1;
    __syncthreads();
    for (int stride = kMaskBlock / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) {
            const int other = threadIdx.x + stride;
            lo_x[threadIdx.x] = min(lo_x[threadIdx.x], lo_x[other]);
            lo_y[threadIdx.x] = min(lo_y[threadIdx.x], lo_y[other]);
            hi_x[threadIdx.x] = max(hi_x[threadIdx.x], hi_x[other]);
            hi_y[threadIdx.x] = max(hi_y[threadIdx.x], hi_y[other]);
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        mask_box_from_extent(lo_x[0], lo_y[0], hi_x[0], hi_y[0], h, w, boxes + blockIdx.x * 4);
    }
}

// A warp a word: lane b tests value 32 w + b of its row, the warp's ballot is the word.
__global__ void sigmoid_bits_kernel(const float* x, uint32_t* bits, int64_t n_rows, int64_t n,
                                    int64_t n_words, float threshold) {
    const int64_t word = global_index() / 32;
    if (word >= n_rows * n_words) {
        return;  // whole warps leave together: n_rows * n_words words take whole warps
    }
    const int64_t row = word / n_words, at = word % n_words * 32 + threadIdx.x % 32;
    const bool set = at < n && 1.0f / (1.0f + expf(-x[row * n + at])) > threshold;
    const uint32_t ballot = __ballot_sync(0xffffffffU, set);
    if (threadIdx.x % 32 == 0) {
        bits[word] = ballot;
    }
}

__global__ void box_sample_locations_kernel(const float* boxes, const float* offsets, float* out,
                                            int64_t n_rows, int64_t n_samples, float n_points) {
    const int64_t e = global_index();  // (row, sample, axis)
    if (e >= n_rows * n_samples * 2) {
        return;
    }
    const int64_t axis = e % 2;
    const float* box = boxes + e / (n_samples * 2) * 4;
    out[e] = box_sample_location(box[axis], box[2 + axis], offsets[e], n_points);
}

__global__ void refine_boxes_kernel(float* boxes, const float* delta, int64_t n) {
    const int64_t e = global_index();
    if (e < n) {
        boxes[e] = refined_box_value(boxes[e], delta[e]);
    }
}

__global__ void pair_relations_kernel(const float* boxes, float* out, int64_t n, int64_t t, float scale) {
    const int64_t e = global_index();  // (page, i, j)
    if (e >= n * t * t) {
        return;
    }
    const int64_t page = e / (t * t), i = e / t % t, j = e % t;
    pair_relation(boxes + (page * t + i) * 4, boxes + (page * t + j) * 4, scale, out + e * 4);
}

__global__ void sinusoid_kernel(const float* x, float* out, int64_t n, Freqs freqs) {
    const int64_t i = global_index();
    const int64_t width = 2 * freqs.n;
    if (i >= n * width) {
        return;
    }
    const int64_t r = i / width, j = i % width;
    const float angle = x[r] * freqs.f[j % freqs.n];
    out[i] = j < freqs.n ? sinf(angle) : cosf(angle);
}

}  // namespace

void mask_boxes_f32(const float* x, float* boxes, int64_t n_maps, int64_t h, int64_t w, cudaStream_t stream) {
    if (n_maps == 0) {
        return;
    }
    mask_boxes_kernel<<<static_cast<unsigned int>(n_maps), kMaskBlock, 0, stream>>>(x, boxes, h, w);
    CUDA_CHECK(cudaGetLastError());
}

void sigmoid_bits_f32(const float* x, uint32_t* bits, int64_t n_rows, int64_t n, float threshold,
                      cudaStream_t stream) {
    const int64_t n_words = (n + 31) / 32;
    if (n_rows * n_words == 0) {
        return;
    }
    sigmoid_bits_kernel<<<n_blocks(n_rows * n_words * 32), kBlock, 0, stream>>>(x, bits, n_rows, n, n_words,
                                                                                threshold);
    CUDA_CHECK(cudaGetLastError());
}

void box_sample_locations_f32(const float* boxes, const float* offsets, float* out, int64_t n_rows,
                              int64_t n_samples, int64_t n_points, cudaStream_t stream) {
    const int64_t n = n_rows * n_samples * 2;
    if (n == 0) {
        return;
    }
    box_sample_locations_kernel<<<n_blocks(n), kBlock, 0, stream>>>(boxes, offsets, out, n_rows, n_samples,
                                                                    static_cast<float>(n_points));
    CUDA_CHECK(cudaGetLastError());
}

void refine_boxes_f32(float* boxes, const float* delta, int64_t n, cudaStream_t stream) {
    if (n == 0) {
        return;
    }
    refine_boxes_kernel<<<n_blocks(n), kBlock, 0, stream>>>(boxes, delta, n);
    CUDA_CHECK(cudaGetLastError());
}

void pair_relations_f32(const float* boxes, float* out, int64_t n, int64_t t, float scale,
                        cudaStream_t stream) {
    if (n * t == 0) {
        return;
    }
    pair_relations_kernel<<<n_blocks(n * t * t), kBlock, 0, stream>>>(boxes, out, n, t, scale);
    CUDA_CHECK(cudaGetLastError());
}

void sinusoid_f32(const float* x, float* out, int64_t n, const Freqs& freqs, cudaStream_t stream) {
    if (n == 0) {
        return;
    }
    sinusoid_kernel<<<n_blocks(n * 2 * freqs.n), kBlock, 0, stream>>>(x, out, n, freqs);
    CUDA_CHECK(cudaGetLastError());
}

}  // namespace folio::kernels
