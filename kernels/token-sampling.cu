#include "cuda-check.h"
#include "reduce.cuh"
#include "token-sampling.h"

namespace folio::kernels {

// ---- kernels ----------------------------------------------------------------------------------------

namespace {

constexpr int kBlock = 1024;

// (value, column) pairs: the larger value wins and, between equal values, the smaller column. A NaN never
// beats a number, and a NaN in column 0 is never beaten: the choice std::max_element makes.
struct Best {
    float value;
    int32_t column;
};

__device__ inline Best better(Best a, Best b) {
    return b.value > a.value || (b.value == a.value && b.column < a.column) ? b : a;
}

__device__ inline Best warp_best(Best v) {
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
        Best other;
        other.value = __shfl_xor_sync(0xffffffffu, v.value, offset);
        other.column = __shfl_xor_sync(0xffffffffu, v.column, offset);
        v = better(v, other);
    }
    return v;
}

// One block per row.  x [n_rows, d]  ->  out [n_rows]
__global__ void __launch_bounds__(kBlock) argmax_rows_f32_kernel(const float* x, int32_t* out, int64_t d) {
    __shared__ Best partial[kBlock / kWarpSize];
    const float* row = x + static_cast<int64_t>(blockIdx.x) * d;
    Best best{row[0], 0};
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x) {
        best = better(best, Best{row[c], static_cast<int32_t>(c)});
    }
    best = warp_best(best);
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
    if (lane == 0) {
        partial[warp] = best;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < static_cast<int>(blockDim.x) / kWarpSize; ++w) {
            best = better(best, partial[w]);
        }
        out[blockIdx.x] = best.column;
    }
}

}  // namespace

// ---- launchers --------------------------------------------------------------------------------------

void argmax_rows_f32(const float* x, int32_t* out, int64_t n_rows, int64_t d, cudaStream_t stream) {
    if (n_rows == 0) {
        return;
    }
    argmax_rows_f32_kernel<<<static_cast<unsigned int>(n_rows), kBlock, 0, stream>>>(x, out, d);
    CUDA_CHECK(cudaGetLastError());
}

}  // namespace folio::kernels
