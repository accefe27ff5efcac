#include "kernels/topk.h"

#include "engine/common/error.h"
#include "kernels/cuda-check.h"

namespace folio::kernels {

namespace {

constexpr int kSelectBlock = 1024;
constexpr int kBlock = 256;

// Larger value, larger key; NaN above +inf, -0 equal to +0; ties broken towards the smaller column.
__device__ uint64_t order_key(const float* row, int64_t column) {
    const float v = row[column];
    uint32_t bits = isnan(v) ? 0x7fc00000U : __float_as_uint(v == 0.0f ? 0.0f : v);
    bits = (bits & 0x80000000U) != 0 ? ~bits : bits | 0x80000000U;
    return (static_cast<uint64_t>(bits) << 32) | (0xffffffffU - static_cast<uint32_t>(column));
}

// A block a row of x [n_rows, d]: the row's k largest keys, unordered, into selected [n_rows, k].
__global__ void top_k_select_kernel(const float* x, uint64_t* selected, int64_t d, int64_t k) {
    const float* row = x + static_cast<int64_t>(blockIdx.x) * d;
    __shared__ unsigned int hist[256];
    __shared__ uint64_t prefix;  // the digits of the k-th largest key found so far
    __shared__ int64_t remaining;
    __shared__ unsigned int n_selected;
    if (threadIdx.x == 0) {
        prefix = 0;
        remaining = k;
        n_selected = 0;
    }
    for (int shift = 56; shift >= 0; shift -= 8) {
        for (int i = static_cast<int>(threadIdx.x); i < 256; i += blockDim.x) {
            hist[i] = 0;
        }
        __syncthreads();
        for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
            const uint64_t key = order_key(row, i);
            if (shift == 56 || (key >> (shift + 8)) == (prefix >> (shift + 8))) {
                atomicAdd(&hist[(key >> shift) & 255], 1U);
            }
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            // The digit whose bucket holds the remaining-th largest of the keys matching the prefix.
            int64_t need = remaining;
            int digit = 255;
            for (; digit > 0 && hist[digit] < need; --digit) {
                need -= hist[digit];
            }
            prefix |= static_cast<uint64_t>(digit) << shift;
            remaining = need;
        }
        __syncthreads();
    }
    // prefix is now the k-th largest key itself; keys are distinct, so exactly k reach it.
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
        const uint64_t key = order_key(row, i);
        if (key >= prefix) {
            selected[static_cast<int64_t>(blockIdx.x) * k + atomicAdd(&n_selected, 1U)] = key;
        }
    }
}

// k = 1: a warp a row of x [n_rows, d], its lanes' largest keys reduced to the row's.
__global__ void top_1_kernel(const float* x, float* values, int32_t* indices, int64_t n_rows, int64_t d) {
    const int64_t r = static_cast<int64_t>(blockIdx.x) * (kBlock / 32) + threadIdx.x / 32;
    if (r >= n_rows) {
        return;
    }
    const float* row = x + r * d;
    const auto lane = static_cast<int64_t>(threadIdx.x % 32);
    uint64_t best = 0;
    for (int64_t i = lane; i < d; i += 32) {
        const uint64_t key = order_key(row, i);
        best = key > best ? key : best;
    }
    for (int offset = 16; offset > 0; offset /= 2) {
        const uint64_t other = __shfl_xor_sync(0xffffffffU, best, offset);
        best = other > best ? other : best;
    }
    if (lane == 0) {
        const auto column = static_cast<int32_t>(0xffffffffU - static_cast<uint32_t>(best));
        values[r] = row[column];
        indices[r] = column;
    }
}

// A thread a selected key: its rank is the number of the row's selected keys above it.
__global__ void top_k_place_kernel(const float* x, const uint64_t* selected, float* values, int32_t* indices,
                                   int64_t n_rows, int64_t d, int64_t k) {
    const int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (e >= n_rows * k) {
        return;
    }
    const int64_t r = e / k;
    const uint64_t* row = selected + r * k;
    const uint64_t key = selected[e];
    int64_t rank = 0;
    for (int64_t j = 0; j < k; ++j) {
        rank += row[j] > key ? 1 : 0;
    }
    const auto column = static_cast<int32_t>(0xffffffffU - static_cast<uint32_t>(key));
    values[r * k + rank] = x[r * d + column];
    indices[r * k + rank] = column;
}

}  // namespace

int64_t top_k_scratch_bytes(int64_t n_rows, int64_t k) {
    return n_rows * k * static_cast<int64_t>(sizeof(uint64_t));
}

void top_k_f32(const float* x, float* values, int32_t* indices, void* scratch, int64_t n_rows, int64_t d,
               int64_t k, cudaStream_t stream) {
    if (d > INT32_MAX || n_rows > INT32_MAX) {
        fail("top_k: ", n_rows, " rows of ", d, " columns; int32 columns and rows only");
    }
    if (n_rows == 0) {
        return;
    }
    if (k == 1) {
        const int64_t rows_a_block = kBlock / 32;
        top_1_kernel<<<static_cast<unsigned int>((n_rows + rows_a_block - 1) / rows_a_block), kBlock, 0,
                       stream>>>(x, values, indices, n_rows, d);
        CUDA_CHECK(cudaGetLastError());
        return;
    }
    // A block a row, of as many warps as the row has 32 columns, up to 1024 threads.
    int block = 32;
    while (block < kSelectBlock && block < d) {
        block *= 2;
    }
    auto* selected = static_cast<uint64_t*>(scratch);
    top_k_select_kernel<<<static_cast<unsigned int>(n_rows), block, 0, stream>>>(x, selected, d, k);
    CUDA_CHECK(cudaGetLastError());
    top_k_place_kernel<<<static_cast<unsigned int>((n_rows * k + kBlock - 1) / kBlock), kBlock, 0, stream>>>(
        x, selected, values, indices, n_rows, d, k);
    CUDA_CHECK(cudaGetLastError());
}

}  // namespace folio::kernels
