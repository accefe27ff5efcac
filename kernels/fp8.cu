#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include "engine/common/error.h"
#include "kernels/cuda-check.h"
#include "kernels/fp8.h"
#include "kernels/reduce.cuh"

namespace folio::kernels {

namespace {

constexpr int kBlock = 256;
constexpr int kWarpRows = kBlock / kWarpSize;  // rows of a block, a warp each
constexpr float kFp8Max = 448.0f;
// Quads (four values) of a row each lane keeps in registers: rows up to 32 x 4 x 12 = 1,536 values are read
// once; longer rows are read again for each pass (from L1 or L2).
constexpr int kHeldQuads = 12;

// Four values of row r from column 4 i, as float32.
__device__ inline float4 load_quad(const Fp8RowsArgs& a, int64_t r, int64_t i) {
    if (a.x != nullptr) {
        return reinterpret_cast<const float4*>(a.x + r * a.d)[i];
    }
    const uint2 raw = reinterpret_cast<const uint2*>(a.x_bf16 + r * a.d)[i];
    const float2 lo = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&raw.x));
    const float2 hi = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&raw.y));
    return {lo.x, lo.y, hi.x, hi.y};
}

__device__ inline float quad_sum(float4 v) {
    return (v.x + v.y) + (v.z + v.w);
}

// The row's statistics for its norm: the mean (LayerNorm) and the inverse of the deviation or root mean
// square, from the quads each_quad(f) gives this lane as f(i, quad i).
struct RowNorm {
    float mean = 0.0f;
    float inv = 1.0f;
};

template <typename EachQuad>
__device__ RowNorm row_norm(const Fp8RowsArgs& a, EachQuad each_quad) {
    RowNorm n;
    if (a.norm == LinearInput::Plain) {
        return n;
    }
    const auto d = static_cast<float>(a.d);
    if (a.norm == LinearInput::LayerNorm) {
        float sum = 0.0f;
        each_quad([&](int64_t, float4 v) { sum += quad_sum(v); });
        n.mean = warp_sum(sum) / d;
    }
    float sq = 0.0f;
    each_quad([&](int64_t, float4 v) {
        const float cx = v.x - n.mean, cy = v.y - n.mean, cz = v.z - n.mean, cw = v.w - n.mean;
        sq += (cx * cx + cy * cy) + (cz * cz + cw * cw);
    });
    n.inv = rsqrtf(warp_sum(sq) / d + a.eps);
    return n;
}

// Quad i of the row after its norm.
__device__ inline float4 normed(const Fp8RowsArgs& a, const RowNorm& n, int64_t i, float4 v) {
    if (a.norm == LinearInput::Plain) {
        return v;
    }
    const float4 w = reinterpret_cast<const float4*>(a.norm_w)[i];
    if (a.norm == LinearInput::RmsNorm) {
        return {w.x * (v.x * n.inv), w.y * (v.y * n.inv), w.z * (v.z * n.inv), w.w * (v.w * n.inv)};
    }
    const float4 b = reinterpret_cast<const float4*>(a.norm_b)[i];
    return {(v.x - n.mean) * n.inv * w.x + b.x, (v.y - n.mean) * n.inv * w.y + b.y,
            (v.z - n.mean) * n.inv * w.z + b.z, (v.w - n.mean) * n.inv * w.w + b.w};
}

__device__ inline float quad_max(float4 v) {
    return fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w)));
}

// Four E4M3 bytes of v · inv, in one word.
__device__ inline uint32_t e4m3_quad(float4 v, float inv) {
    const auto byte = [&](float x) {
        return static_cast<uint32_t>(__nv_cvt_float_to_fp8(x * inv, __NV_SATFINITE, __NV_E4M3));
    };
    return byte(v.x) | (byte(v.y) << 8) | (byte(v.z) << 16) | (byte(v.w) << 24);
}

// A warp a row, reading quads of 16 bytes (8 for bfloat16); with Held the row stays in registers, otherwise
// each pass reads it again. The row's scale maps its largest magnitude to 448; each value v becomes
// e4m3(v · 448 / largest).  ->  q [n_rows, d], scales [n_rows]
template <bool Held>
__global__ void __launch_bounds__(kBlock) quantize_rows_fp8_kernel(Fp8RowsArgs a, uint8_t* q, float* scales) {
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpRows + threadIdx.x / kWarpSize;
    if (row >= a.n_rows) {
        return;
    }
    const int64_t n_quads = a.d / 4;
    float4 held[Held ? kHeldQuads : 1];
    if constexpr (Held) {
#pragma unroll
        for (int k = 0; k < kHeldQuads; ++k) {
            const int64_t i = lane + k * kWarpSize;
            held[k] = i < n_quads ? load_quad(a, row, i) : float4{0.0f, 0.0f, 0.0f, 0.0f};
        }
    }
    // f(i, quad i) for this lane's quads i = lane + 32 k, from the registers or read again.
    const auto each_quad = [&](auto&& f) {
        if constexpr (Held) {
#pragma unroll
            for (int k = 0; k < kHeldQuads; ++k) {
                const int64_t i = lane + k * kWarpSize;
                if (i < n_quads) {
                    f(i, held[k]);
                }
            }
        } else {
            for (int64_t i = lane; i < n_quads; i += kWarpSize) {
                f(i, load_quad(a, row, i));
            }
        }
    };
    const RowNorm n = row_norm(a, each_quad);
    float largest = 0.0f;
    each_quad([&](int64_t i, float4 v) { largest = fmaxf(largest, quad_max(normed(a, n, i, v))); });
    largest = warp_max(largest);
    const float inv = largest > 0.0f ? kFp8Max / largest : 1.0f;
    auto* qr = reinterpret_cast<uint32_t*>(q + row * a.d);  // [n_quads]
    each_quad([&](int64_t i, float4 v) { qr[i] = e4m3_quad(normed(a, n, i, v), inv); });
    if (lane == 0) {
        scales[row] = largest > 0.0f ? largest / kFp8Max : 1.0f;
    }
}

}  // namespace

void quantize_rows_fp8(const Fp8RowsArgs& args, uint8_t* q, float* scales, cudaStream_t stream) {
    if ((args.x == nullptr) == (args.x_bf16 == nullptr)) {
        fail("quantize_rows_fp8: give x in float32 or in bfloat16, not ",
             args.x == nullptr ? "neither" : "both");
    }
    if ((args.norm != LinearInput::Plain && args.norm_w == nullptr) ||
        (args.norm == LinearInput::LayerNorm && args.norm_b == nullptr)) {
        fail("quantize_rows_fp8: a norm without its weights");
    }
    if (args.d % 4 != 0) {
        fail("quantize_rows_fp8: rows of ", args.d, " values, not a multiple of 4");
    }
    if (args.n_rows == 0 || args.d == 0) {
        return;
    }
    const auto n_blocks = static_cast<unsigned int>((args.n_rows + kWarpRows - 1) / kWarpRows);
    if (args.d <= int64_t{kWarpSize} * 4 * kHeldQuads) {
        quantize_rows_fp8_kernel<true><<<n_blocks, kBlock, 0, stream>>>(args, q, scales);
    } else {
        quantize_rows_fp8_kernel<false><<<n_blocks, kBlock, 0, stream>>>(args, q, scales);
    }
    CUDA_CHECK(cudaGetLastError());
}

}  // namespace folio::kernels
