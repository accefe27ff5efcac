#pragma once

// Device helpers the expert kernels share (moe.cu, streamed-experts.cu): where an expert's weight rows are, a
// packed word's dot product with eight inputs, and SwiGLU.

#include <cstdint>

#include "kernels/moe.h"
#include "kernels/weight-unpack.cuh"

namespace folio::kernels {

// An expert pool's weights as a kernel reads them.
struct RowSource {
    const float* dense = nullptr;
    const int8_t* q = nullptr;
    const float* scales = nullptr;
    int64_t n_in = 0;
    int64_t group_size = 0;
    int shift = 0;  // group_shift(group_size) for WINT4
};

template <QuantizedFormat kType>
__device__ inline RowSource row_source(const ExpertWeights& w) {
    RowSource s;
    s.dense = w.dense;
    s.q = w.q;
    s.scales = w.scales;
    s.n_in = w.n_in;
    s.group_size = w.group_size;
    s.shift = kType == QuantizedFormat::Wint4 && w.dense == nullptr ? group_shift(w.group_size) : 0;
    return s;
}

// acc plus the dot product of eight inputs with a packed word's eight weights (levels in order) times scale.
template <QuantizedFormat kType>
__device__ inline float add_word_dot(float acc, uint32_t word, float scale, const float x[8]) {
    Packed8 packed{};
    packed.bits.x = word;
    float levels[8];
    unpack8_levels<kType>(packed, levels);
    float dot = 0.0f;
#pragma unroll
    for (int v = 0; v < 8; ++v) {
        dot = fmaf(x[v], levels[v], dot);
    }
    return fmaf(scale, dot, acc);
}

__device__ inline float swiglu(float gate, float up) {
    return gate / (1.0f + expf(-gate)) * up;
}

}  // namespace folio::kernels
