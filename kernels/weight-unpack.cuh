// Device helpers shared by the quantized-linear kernels: WINT8/WINT4/BF16 weights read under an evict-first
// L2 policy and unpacked, eight columns at a time or one, as dequantize_row() does.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>

#include "kernels/quantized-linear.h"

namespace folio::kernels {

__device__ inline float low_nibble(int8_t byte) {
    return static_cast<float>(static_cast<int8_t>(static_cast<int8_t>(byte << 4) >> 4));
}

__device__ inline float high_nibble(int8_t byte) {
    return static_cast<float>(static_cast<int8_t>(byte >> 4));
}

__device__ inline float bf16_bits_to_float(uint16_t h) {
    return __uint_as_float(static_cast<uint32_t>(h) << 16);
}

// Column c of weight row o, dequantized as dequantize_row() does.
template <QuantizedFormat kType>
__device__ inline float weight_at(const int8_t* q, const float* scales, int64_t o, int64_t c, int64_t n_in,
                                  int64_t group_size) {
    if constexpr (kType == QuantizedFormat::Bf16) {
        return bf16_bits_to_float(reinterpret_cast<const uint16_t*>(q)[o * n_in + c]);
    } else if constexpr (kType == QuantizedFormat::Wint8) {
        return static_cast<float>(q[o * n_in + c]) * scales[o];
    } else {
        const int8_t byte = q[o * (n_in / 2) + c / 2];
        const float scale = scales[o * (n_in / group_size) + c / group_size];
        return ((c & 1) ? high_nibble(byte) : low_nibble(byte)) * scale;
    }
}

// The L2 policy of weight loads: the lines they bring in are the first to be evicted. A step reads each
// weight once and more weights than the L2 cache holds, so weights kept there would only push out what the
// step reads again soon (the K/V cache, activations, norm weights).
__device__ inline uint64_t evict_first_policy() {
    uint64_t policy;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
    return policy;
}

// The L2 policy of weights that several rows of a step read (a mixture of experts' chosen experts, which
// tokens of a batch share): kept as any other line is.
__device__ inline uint64_t evict_normal_policy() {
    uint64_t policy;
    asm("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;" : "=l"(policy));
    return policy;
}

// 16, 8 or 4 bytes of weights at p, aligned to their size, loaded under policy.
__device__ inline uint4 load_weights_16(const void* p, uint64_t policy) {
    uint4 v;
    asm volatile("ld.global.nc.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p), "l"(policy));
    return v;
}

__device__ inline uint2 load_weights_8(const void* p, uint64_t policy) {
    uint2 v;
    asm volatile("ld.global.nc.L2::cache_hint.v2.u32 {%0, %1}, [%2], %3;"
                 : "=r"(v.x), "=r"(v.y)
                 : "l"(p), "l"(policy));
    return v;
}

__device__ inline uint32_t load_weights_4(const void* p, uint64_t policy) {
    uint32_t v;
    asm volatile("ld.global.nc.L2::cache_hint.u32 %0, [%1], %2;" : "=r"(v) : "l"(p), "l"(policy));
    return v;
}

// Columns per scale of a WINT4 row as a shift (meaningless for the other formats): group_size is a power of
// two (check_group_size), so that a chunk's scale is found without a 64-bit division.
__device__ inline int group_shift(int64_t group_size) {
    return __ffsll(group_size) - 1;
}

// The packed bytes of eight consecutive columns [c, c + 8) of weight row o and their scale, as loaded under
// policy (from evict_first_policy): c is a multiple of 8 and n_in of 8 (of 64 for WINT4), so the bytes are
// one 16-, 8- or 4-byte word and the eight columns share a WINT4 group of 1 << shift columns.
struct Packed8 {
    uint4 bits;
    float scale;
};

template <QuantizedFormat kType>
__device__ inline Packed8 load_packed8(const int8_t* q, const float* scales, int64_t o, int64_t c,
                                       int64_t n_in, int shift, uint64_t policy) {
    Packed8 p{};
    if constexpr (kType == QuantizedFormat::Bf16) {
        p.bits = load_weights_16(q + (o * n_in + c) * 2, policy);
    } else if constexpr (kType == QuantizedFormat::Wint8) {
        const uint2 word = load_weights_8(q + o * n_in + c, policy);
        p.bits.x = word.x;
        p.bits.y = word.y;
        p.scale = scales[o];
    } else {
        p.bits.x = load_weights_4(q + o * (n_in / 2) + c / 2, policy);
        p.scale = scales[o * (n_in >> shift) + (c >> shift)];
    }
    return p;
}

// Byte `byte` of word, an unsigned level u, as the float 2^23 + u minus bias: u goes into the low mantissa
// bits of 2^23 by a byte permute, and the subtraction is exact: a permute and an add in place of an integer-
// to-float conversion.
__device__ inline float level_of_byte(uint32_t word, int byte, float bias) {
    constexpr uint32_t kTwoTo23Bits = 0x4B000000u;
    return __uint_as_float(__byte_perm(word, kTwoTo23Bits, 0x7440u | static_cast<uint32_t>(byte))) - bias;
}

// The eight weights of a Packed8 before their scale: bfloat16 values, or the signed WINT8/WINT4 levels,
// exactly. Each level is offset to unsigned first (by 128 or 8, an exclusive or of its top bit), and the
// offset is part of the bias taken off.
template <QuantizedFormat kType>
__device__ inline void unpack8_levels(const Packed8& p, float out[8]) {
    if constexpr (kType == QuantizedFormat::Bf16) {
        const auto* halves = reinterpret_cast<const uint16_t*>(&p.bits);
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            out[i] = bf16_bits_to_float(halves[i]);
        }
    } else if constexpr (kType == QuantizedFormat::Wint8) {
        constexpr float kBias = 8388608.0f + 128.0f;
        const uint32_t words[2] = {p.bits.x ^ 0x80808080u, p.bits.y ^ 0x80808080u};
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            out[i] = level_of_byte(words[i / 4], i % 4, kBias);
        }
    } else {
        constexpr float kBias = 8388608.0f + 8.0f;
        const uint32_t offset = p.bits.x ^ 0x88888888u;
        const uint32_t low = offset & 0x0F0F0F0Fu, high = (offset >> 4) & 0x0F0F0F0Fu;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            out[2 * i] = level_of_byte(low, i, kBias);
            out[2 * i + 1] = level_of_byte(high, i, kBias);
        }
    }
}

// The eight weights of a Packed8, dequantized as dequantize_row() does.
template <QuantizedFormat kType>
__device__ inline void unpack8(const Packed8& p, float out[8]) {
    unpack8_levels<kType>(p, out);
    if constexpr (kType != QuantizedFormat::Bf16) {
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            out[i] *= p.scale;
        }
    }
}

}  // namespace folio::kernels
