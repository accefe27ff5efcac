// A few rows times WINT8/WINT4 weights on the tensor cores (m16n8k16, bfloat16 fragments, float32 sums), the
// weights dequantized in registers from one read of the packed bytes.
#include <cstdlib>
#include <string_view>

#include <cuda_bf16.h>

#include "engine/common/error.h"
#include "kernels/activation.cuh"
#include "kernels/cuda-check.h"
#include "kernels/mma.cuh"
#include "kernels/quantized-mma.h"
#include "kernels/weight-unpack.cuh"

namespace folio::kernels {

namespace {

constexpr int kWarps = 8;
constexpr int kRowTiles = 2;  // 16-row tiles of weight rows a warp multiplies: 32 rows a block
constexpr int kBlockRows = 16 * kRowTiles;
constexpr int kChunk = 64;  // input columns a warp takes at a time: 16 a lane of each quad

// Chunks of weights a warp keeps in flight, measured best: with 32 or 64 rows the loads of the blocks on a
// multiprocessor do not cover the memory's latency alone; with fewer rows, or WINT8 at 32, the registers a
// deeper pipeline takes cost more than it gains.
[[maybe_unused]] constexpr int chunks_in_flight(QuantizedFormat type, int batch_tiles) {
    return batch_tiles == 8 ? 2 : batch_tiles == 4 && type == QuantizedFormat::Wint4 ? 3 : 1;
}

// A lane's 16 consecutive columns of one weight row, packed: 8 bytes of WINT4 or 16 of WINT8, and the
// scales of its two halves (equal unless WINT4 groups are 8 columns).
template <QuantizedFormat kType>
struct RowPiece {
    uint4 bits;
    float scale_lo, scale_hi;
};

template <QuantizedFormat kType>
__device__ inline RowPiece<kType> load_piece(const int8_t* q, const float* scales, int row, int col, int n_in,
                                             int shift, uint64_t policy) {
    RowPiece<kType> p{};
    if constexpr (kType == QuantizedFormat::Wint8) {
        p.bits = load_weights_16(q + static_cast<int64_t>(row) * n_in + col, policy);
        p.scale_lo = p.scale_hi = scales[row];
    } else {
        const uint2 w = load_weights_8(q + static_cast<int64_t>(row) * (n_in / 2) + col / 2, policy);
        p.bits.x = w.x;
        p.bits.y = w.y;
        const int64_t base = static_cast<int64_t>(row) * (n_in >> shift);
        p.scale_lo = scales[base + (col >> shift)];
        p.scale_hi = scales[base + ((col + 8) >> shift)];
    }
    return p;
}

// The piece's 16 weights dequantized and rounded to bfloat16, as 8 pairs of consecutive columns (the lower
// column in the low half), as dequantize_rows_bf16 rounds them.
template <QuantizedFormat kType>
__device__ inline void unpack_piece(const RowPiece<kType>& p, uint32_t (&pairs)[8]) {
    if constexpr (kType == QuantizedFormat::Wint8) {
        constexpr float kBias = 8388608.0f + 128.0f;
        const uint32_t words[4] = {p.bits.x ^ 0x80808080u, p.bits.y ^ 0x80808080u, p.bits.z ^ 0x80808080u,
                                   p.bits.w ^ 0x80808080u};
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const float scale = j < 4 ? p.scale_lo : p.scale_hi;
            const uint32_t word = words[j / 2];
            const int byte = 2 * (j % 2);
            pairs[j] = pack_bf16(level_of_byte(word, byte, kBias) * scale,
                                 level_of_byte(word, byte + 1, kBias) * scale);
        }
    } else {
        constexpr float kBias = 8388608.0f + 8.0f;
        const uint32_t words[2] = {p.bits.x ^ 0x88888888u, p.bits.y ^ 0x88888888u};
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const float scale = j < 4 ? p.scale_lo : p.scale_hi;
            const uint32_t word = words[j / 4];
            const uint32_t low = word & 0x0F0F0F0Fu, high = (word >> 4) & 0x0F0F0F0Fu;
            pairs[j] = pack_bf16(level_of_byte(low, j % 4, kBias) * scale,
                                 level_of_byte(high, j % 4, kBias) * scale);
        }
    }
}

// Block: kBlockRows weight rows [row0, row0 + 32) against all n rows of x; its kWarps warps split the
// input's 64-column chunks (warp w takes chunks w, w + kWarps, ...) and their sums are added in warp order,
// so the result does not depend on timing. In a chunk, lane (g = lane / 4, c = lane % 4) reads columns
// [16 c, 16 c + 16) of weight rows g and g + 8 of each row tile and of x's rows g of each batch tile; the
// tensor cores' k index is a permutation of the chunk's columns (step s, fragment column 2 c + e is column
// 16 c + 4 s + e, and 2 c + 8 + e is 16 c + 4 s + 2 + e), the same for both operands, so the sums are the
// chunk's dot products.
//   q, scales: the packed weights [n_out, n_in]; x [n, n_in] bfloat16; b [n_out] or null
//   -> y [n, n_out] float32 or y_bf16 [n, n_out] bfloat16
template <QuantizedFormat kType, int kBatchTiles, int kDepth = chunks_in_flight(kType, kBatchTiles)>
__global__ void __launch_bounds__(kWarps * 32)
    quantized_mma_kernel(const int8_t* __restrict__ q, const float* __restrict__ scales,
                         const __nv_bfloat16* __restrict__ x, const float* __restrict__ b, float* y,
                         __nv_bfloat16* y_bf16, int n, int n_in, int n_out, int shift,
                         LinearEpilogue epilogue) {
    __shared__ float sums[kRowTiles][kBatchTiles][4][32];
    const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
    const int g = lane / 4, c = lane % 4;
    const int row0 = static_cast<int>(blockIdx.x) * kBlockRows;
    const uint64_t policy = evict_first_policy();

    // Weight rows past n_out read the last row and are never written; x rows past n read as zeros.
    int rows[kRowTiles][2];
#pragma unroll
    for (int t = 0; t < kRowTiles; ++t) {
        rows[t][0] = min(row0 + 16 * t + g, n_out - 1);
        rows[t][1] = min(row0 + 16 * t + g + 8, n_out - 1);
    }
    const int n_chunks = n_in / kChunk;
    float acc[kRowTiles][kBatchTiles][4] = {};

    // The warp's next kDepth chunks of weights, in flight while the chunk before them is multiplied. The loop
    // below is unrolled by kDepth so that each stage keeps its registers: no stage is copied while its loads
    // are in flight.
    struct Stage {
        RowPiece<kType> w[kRowTiles][2];
    };
    const auto load_stage = [&](Stage& stage, int chunk) {
        const int col = chunk * kChunk + 16 * c;
#pragma unroll
        for (int t = 0; t < kRowTiles; ++t) {
            stage.w[t][0] = load_piece<kType>(q, scales, rows[t][0], col, n_in, shift, policy);
            stage.w[t][1] = load_piece<kType>(q, scales, rows[t][1], col, n_in, shift, policy);
        }
    };
    const auto multiply = [&](const Stage& stage, int chunk) {
        const int col = chunk * kChunk + 16 * c;
        uint4 xs[kBatchTiles][2];
#pragma unroll
        for (int u = 0; u < kBatchTiles; ++u) {
            const int r = 8 * u + g;
            if (r < n) {
                const auto* p = reinterpret_cast<const uint4*>(x + static_cast<int64_t>(r) * n_in + col);
                xs[u][0] = __ldg(p);
                xs[u][1] = __ldg(p + 1);
            } else {
                xs[u][0] = xs[u][1] = uint4{0, 0, 0, 0};
            }
        }
        uint32_t pairs[kRowTiles][2][8];
#pragma unroll
        for (int t = 0; t < kRowTiles; ++t) {
            unpack_piece<kType>(stage.w[t][0], pairs[t][0]);
            unpack_piece<kType>(stage.w[t][1], pairs[t][1]);
        }
#pragma unroll
        for (int s = 0; s < 4; ++s) {
#pragma unroll
            for (int t = 0; t < kRowTiles; ++t) {
                const uint32_t a[4] = {pairs[t][0][2 * s], pairs[t][1][2 * s], pairs[t][0][2 * s + 1],
                                       pairs[t][1][2 * s + 1]};
#pragma unroll
                for (int u = 0; u < kBatchTiles; ++u) {
                    const uint32_t* xw = reinterpret_cast<const uint32_t*>(&xs[u][0]);
                    mma_bf16(acc[t][u], a, xw[2 * s], xw[2 * s + 1]);
                }
            }
        }
    };

    Stage stages[kDepth];
#pragma unroll
    for (int d = 0; d < kDepth; ++d) {
        if (warp + d * kWarps < n_chunks) {
            load_stage(stages[d], warp + d * kWarps);
        }
    }
    for (int base = warp; base < n_chunks; base += kDepth * kWarps) {
#pragma unroll
        for (int d = 0; d < kDepth; ++d) {
            const int chunk = base + d * kWarps;
            if (chunk < n_chunks) {
                const Stage current = stages[d];
                if (chunk + kDepth * kWarps < n_chunks) {
                    load_stage(stages[d], chunk + kDepth * kWarps);
                }
                multiply(current, chunk);
            }
        }
    }

    for (int w = 0; w < kWarps; ++w) {
        if (warp == w) {
#pragma unroll
            for (int t = 0; t < kRowTiles; ++t) {
#pragma unroll
                for (int u = 0; u < kBatchTiles; ++u) {
#pragma unroll
                    for (int i = 0; i < 4; ++i) {
                        sums[t][u][i][lane] = (w == 0 ? 0.0f : sums[t][u][i][lane]) + acc[t][u][i];
                    }
                }
            }
        }
        __syncthreads();
    }

    // Fragment element i of lane l: weight row 16 t + l / 4 (+ 8 for i >= 2), x row 8 u + 2 (l % 4) + i % 2.
    constexpr int kElements = kRowTiles * kBatchTiles * 4 * 32;
    for (int e = static_cast<int>(threadIdx.x); e < kElements; e += kWarps * 32) {
        const int l = e % 32, i = e / 32 % 4, u = e / 128 % kBatchTiles, t = e / (128 * kBatchTiles);
        const int o = row0 + 16 * t + l / 4 + (i >= 2 ? 8 : 0);
        const int r = 8 * u + 2 * (l % 4) + i % 2;
        if (o >= n_out || r >= n) {
            continue;
        }
        const float v = sums[t][u][i][l] + (b != nullptr ? b[o] : 0.0f);
        const int64_t at = static_cast<int64_t>(r) * n_out + o;
        if (y_bf16 != nullptr) {
            y_bf16[at] = __float2bfloat16_rn(epilogue == LinearEpilogue::GeluTanh ? gelu_tanh(v) : v);
        } else {
            y[at] = epilogue == LinearEpilogue::GeluTanh     ? gelu_tanh(v)
                    : epilogue == LinearEpilogue::Accumulate ? y[at] + v
                                                             : v;
        }
    }
}

// The bytes a lane reads of a weight row at once, and so the alignment of the weights.
uintptr_t weight_alignment(QuantizedFormat format) {
    return format == QuantizedFormat::Wint4 ? 8 : 16;
}

bool enabled() {
    static const bool off = [] {
        const char* value = std::getenv("FOLIO_QUANTIZED_MMA");
        return value != nullptr && std::string_view(value) == "0";
    }();
    return !off;
}

template <QuantizedFormat kType>
void launch(const QuantizedLinearArgs& a, const uint16_t* x_bf16, float* y, uint16_t* y_bf16,
            cudaStream_t stream) {
    const auto n_blocks = static_cast<unsigned int>((a.n_out + kBlockRows - 1) / kBlockRows);
    const int shift =
        kType == QuantizedFormat::Wint4 ? __builtin_ctzll(static_cast<uint64_t>(a.group_size)) : 0;
    const auto go = [&](auto kernel) {
        kernel<<<n_blocks, kWarps * 32, 0, stream>>>(
            a.q, a.scales, reinterpret_cast<const __nv_bfloat16*>(x_bf16), a.b, y,
            reinterpret_cast<__nv_bfloat16*>(y_bf16), static_cast<int>(a.n), static_cast<int>(a.n_in),
            static_cast<int>(a.n_out), shift, a.epilogue);
    };
    if (a.n <= 8) {
        go(quantized_mma_kernel<kType, 1>);
    } else if (a.n <= 16) {
        go(quantized_mma_kernel<kType, 2>);
    } else if (a.n <= 32) {
        go(quantized_mma_kernel<kType, 4>);
    } else {
        go(quantized_mma_kernel<kType, 8>);
    }
    CUDA_CHECK(cudaGetLastError());
}

}  // namespace

bool quantized_mma_takes(int64_t n, int64_t n_in, int64_t n_out, QuantizedFormat format) {
    const bool rows =
        n >= 1 && (n <= 16 || (n <= kQuantizedMmaMaxRows && n_in * n_out >= kQuantizedMmaWideValues));
    return format != QuantizedFormat::Bf16 && rows && n_in % kChunk == 0 && n_in < (int64_t{1} << 30) &&
           n_out < (int64_t{1} << 30) && enabled();
}

bool quantized_mma_aligned(const QuantizedLinearArgs& a, const uint16_t* x_bf16) {
    return reinterpret_cast<uintptr_t>(x_bf16) % 16 == 0 &&
           reinterpret_cast<uintptr_t>(a.q) % weight_alignment(a.format) == 0;
}

void quantized_mma_bf16(const QuantizedLinearArgs& a, const uint16_t* x_bf16, float* y, uint16_t* y_bf16,
                        cudaStream_t stream) {
    if (a.n == 0 || a.n_out == 0) {
        return;
    }
    if (!quantized_mma_takes(a.n, a.n_in, a.n_out, a.format)) {
        fail("quantized_mma_bf16: ", a.n, " rows of ", a.n_in, " inputs and ", a.n_out,
             " outputs are not for it (WINT8/WINT4, up to 16 rows or ", kQuantizedMmaMaxRows,
             " of larger weights, inputs a multiple of ", kChunk, ")");
    }
    if (a.format == QuantizedFormat::Wint4 &&
        (a.group_size < 8 || (a.group_size & (a.group_size - 1)) != 0)) {
        fail("quantized_mma_bf16: WINT4 groups of ", a.group_size,
             " columns, not a power of two of at least 8");
    }
    if (!quantized_mma_aligned(a, x_bf16)) {
        fail("quantized_mma_bf16: the input at ", static_cast<const void*>(x_bf16), " or the weights at ",
             static_cast<const void*>(a.q), " are not aligned to 16 and ", weight_alignment(a.format),
             " bytes");
    }
    if ((y == nullptr) == (y_bf16 == nullptr) ||
        (y_bf16 != nullptr && a.epilogue == LinearEpilogue::Accumulate)) {
        fail("quantized_mma_bf16: one output, float32 or bfloat16 (which does not accumulate)");
    }
    if (a.format == QuantizedFormat::Wint8) {
        launch<QuantizedFormat::Wint8>(a, x_bf16, y, y_bf16, stream);
    } else {
        launch<QuantizedFormat::Wint4>(a, x_bf16, y, y_bf16, stream);
    }
}

}  // namespace folio::kernels
