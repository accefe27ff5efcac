// Host entry points of the layout models' small operations over float32 tensors in device memory: the boxes
// around masks' positive positions, masks thresholded to bits, deformable attention's sampling locations and
// the box refinement around boxes, boxes' pairwise relations and sine-cosine features. Enqueued on stream.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace folio::kernels {

// The most frequencies sinusoid_f32 takes.
constexpr int kMaxFreqs = 64;

struct Freqs {
    float f[kMaxFreqs] = {};
    int n = 0;
};

// Backend::mask_boxes, a block a map.  x [n_maps, h, w]  ->  boxes [n_maps, 4]
void mask_boxes_f32(const float* x, float* boxes, int64_t n_maps, int64_t h, int64_t w, cudaStream_t stream);

// Backend::sigmoid_bits, a warp a word.  x [n_rows, n]  ->  bits [n_rows, ceil(n / 32)]
void sigmoid_bits_f32(const float* x, uint32_t* bits, int64_t n_rows, int64_t n, float threshold,
                      cudaStream_t stream);

// Backend::box_sample_locations, a thread a location.  boxes [r, 4], offsets [r, s, 2]  ->  out [r, s, 2]
void box_sample_locations_f32(const float* boxes, const float* offsets, float* out, int64_t n_rows,
                              int64_t n_samples, int64_t n_points, cudaStream_t stream);

// Backend::refine_boxes in place, a thread a value.  boxes [n], delta [n]
void refine_boxes_f32(float* boxes, const float* delta, int64_t n, cudaStream_t stream);

// Backend::pair_relations, a thread a pair.  boxes [n, t, 4]  ->  out [n, t, t, 4]
void pair_relations_f32(const float* boxes, float* out, int64_t n, int64_t t, float scale,
                        cudaStream_t stream);

// Backend::sinusoid, a thread an output element.  x [n]  ->  out [n, 2 freqs.n]
void sinusoid_f32(const float* x, float* out, int64_t n, const Freqs& freqs, cudaStream_t stream);

}  // namespace folio::kernels
