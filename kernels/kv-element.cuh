// Elements of keys and values as the attention kernels read them: float32, bfloat16 or signed 8-bit levels
// (a paged cache's storage types), widened to float32 for the sums or packed in pairs for the tensor cores.
// A level is read as its integer, exactly (bfloat16 holds every level); the kernels multiply a key's score
// by its row's scale and a value's weight by its row's (row_scale), so each row's scale is applied once.
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>

#include "engine/common/error.h"
#include "kernels/attention.h"
#include "kernels/mma.cuh"

namespace folio::kernels {

using Bf16 = __nv_bfloat16;

__device__ inline float to_float(float x) {
    return x;
}

__device__ inline float to_float(Bf16 x) {
    return __bfloat162float(x);
}

__device__ inline float to_float(int8_t x) {
    return static_cast<float>(x);
}

// The scale of a cache row, row_head being (kv row * n_kv_head + K/V head): scales[row_head] for 8-bit
// levels, 1 for the other element types (whose scales are null).
template <typename KV>
__device__ inline float row_scale(const float* scales, int64_t row_head) {
    if constexpr (std::is_same_v<KV, int8_t>) {
        return scales[row_head];
    } else {
        return 1.0f;
    }
}

// Four consecutive elements at p, aligned to four elements.
__device__ inline float4 load_four(const float* p) {
    return *reinterpret_cast<const float4*>(p);
}

__device__ inline float4 load_four(const Bf16* p) {
    const uint2 raw = *reinterpret_cast<const uint2*>(p);
    const float2 lo = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&raw.x));
    const float2 hi = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&raw.y));
    return float4{lo.x, lo.y, hi.x, hi.y};
}

__device__ inline float4 load_four(const int8_t* p) {
    const char4 raw = *reinterpret_cast<const char4*>(p);
    return float4{static_cast<float>(raw.x), static_cast<float>(raw.y), static_cast<float>(raw.z),
                  static_cast<float>(raw.w)};
}

// Two consecutive elements at p, aligned to two, as a bfloat16 pair for the tensor cores (p[0] low).
__device__ inline uint32_t load_pair_bf16(const float* p) {
    const float2 x = *reinterpret_cast<const float2*>(p);
    return pack_bf16(x.x, x.y);
}

__device__ inline uint32_t load_pair_bf16(const Bf16* p) {
    return *reinterpret_cast<const uint32_t*>(p);
}

__device__ inline uint32_t load_pair_bf16(const int8_t* p) {
    const char2 raw = *reinterpret_cast<const char2*>(p);
    return pack_bf16(static_cast<float>(raw.x), static_cast<float>(raw.y));
}

// Two elements as a bfloat16 pair, lo in the low half.
__device__ inline uint32_t pair_bf16(float lo, float hi) {
    return pack_bf16(lo, hi);
}

__device__ inline uint32_t pair_bf16(Bf16 lo, Bf16 hi) {
    return static_cast<uint32_t>(__bfloat16_as_ushort(lo)) | static_cast<uint32_t>(__bfloat16_as_ushort(hi))
                                                                 << 16;
}

__device__ inline uint32_t pair_bf16(int8_t lo, int8_t hi) {
    return pack_bf16(static_cast<float>(lo), static_cast<float>(hi));
}

// A C++ element type as a value, for with_kv_element.
template <typename T>
struct ElementTag {
    using type = T;
};

// Calls f with the ElementTag of the C++ type of a cache's elements.
template <typename F>
void with_kv_element(KvElement element, F&& f) {
    switch (element) {
        case KvElement::F32:
            f(ElementTag<float>{});
            return;
        case KvElement::Bf16:
            f(ElementTag<Bf16>{});
            return;
        case KvElement::Q8:
            f(ElementTag<int8_t>{});
            return;
    }
    fail("attention kernel: invalid key/value element type ", static_cast<int>(element));
}

}  // namespace folio::kernels
