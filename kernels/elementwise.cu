#include <algorithm>
#include <cstdint>

#include <cuda_bf16.h>

#include "kernels/activation.cuh"
#include "kernels/chained-launch.cuh"
#include "kernels/cuda-check.h"
#include "kernels/elementwise.h"
#include "kernels/flat-launch.cuh"

namespace folio::kernels {

// ---- kernels ----------------------------------------------------------------------------------------

namespace {

// x [n] += y [n]
__global__ void add_f32_kernel(float* x, const float* y, int64_t n) {
    const int64_t i = global_index();
    if (i < n) {
        x[i] += y[i];
    }
}

// y [n_rows, n_cols] += b [n_cols] on every row
__global__ void add_bias_f32_kernel(float* y, const float* b, int64_t n_rows, int64_t n_cols) {
    const int64_t i = global_index();
    if (i < n_rows * n_cols) {
        y[i] += b[i % n_cols];
    }
}

// x [n] = gelu_tanh(x)
__global__ void gelu_tanh_f32_kernel(float* x, int64_t n) {
    const int64_t i = global_index();
    if (i < n) {
        x[i] = gelu_tanh(x[i]);
    }
}

// x [n] = gelu_erf(x)
__global__ void gelu_erf_f32_kernel(float* x, int64_t n) {
    const int64_t i = global_index();
    if (i < n) {
        const float v = x[i];
        x[i] = 0.5f * v * (1.0f + erff(v * 0.7071067811865476f));
    }
}

// y [n] = x [n] bfloat16 widened to float32
__global__ void widen_bf16_kernel(const __nv_bfloat16* x, float* y, int64_t n) {
    const int64_t i = global_index();
    if (i < n) {
        y[i] = __bfloat162float(x[i]);
    }
}

// y [n, d] = silu(gate) * up of gate_up [n, 2 d] = [gate | up]; chained.
__global__ void swiglu_f32_kernel(const float* gate_up, float* y, int64_t n, int64_t d) {
    wait_for_prior_grids();
    start_dependent_grids();
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n * d) {
        const int64_t r = i / d, c = i % d;
        y[i] = silu(gate_up[r * 2 * d + c]) * gate_up[r * 2 * d + d + c];
    }
}

// y [n, d] = silu(gate) * up of gate_up [n, 2 d] = [gate | up] in bfloat16, the product in float32 rounded
// once; kVec consecutive columns a thread (8: d a multiple of 8, both 16-byte aligned), rows blockIdx.y,
// blockIdx.y + gridDim.y, ...; chained.
template <int kVec>
__global__ void swiglu_bf16_kernel(const __nv_bfloat16* gate_up, __nv_bfloat16* y, int64_t n, int64_t d) {
    wait_for_prior_grids();
    start_dependent_grids();
    const int64_t c = global_index() * kVec;
    if (c >= d) {
        return;
    }
    for (auto r = static_cast<int64_t>(blockIdx.y); r < n; r += gridDim.y) {
        const __nv_bfloat16* gate = gate_up + r * 2 * d + c;  // [kVec]
        const __nv_bfloat16* up = gate + d;                   // [kVec]
        __nv_bfloat16* out = y + r * d + c;                   // [kVec]
        if constexpr (kVec == 8) {
            const uint4 g = *reinterpret_cast<const uint4*>(gate);
            const uint4 u = *reinterpret_cast<const uint4*>(up);
            const auto* g2 = reinterpret_cast<const __nv_bfloat162*>(&g);
            const auto* u2 = reinterpret_cast<const __nv_bfloat162*>(&u);
            uint4 o;
            auto* o2 = reinterpret_cast<__nv_bfloat162*>(&o);
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                const float2 gf = __bfloat1622float2(g2[k]), uf = __bfloat1622float2(u2[k]);
                o2[k] = __floats2bfloat162_rn(silu(gf.x) * uf.x, silu(gf.y) * uf.y);
            }
            *reinterpret_cast<uint4*>(out) = o;
        } else {
            *out = __float2bfloat16_rn(silu(__bfloat162float(*gate)) * __bfloat162float(*up));
        }
    }
}

// y [n_rows, row_size] = table[(e / channel_size) * 256 + level] for each level of levels [n_rows,
// row_size] (e its element of the row); a block a row at a time, the table [row_size / channel_size, 256]
// read through L1.
__global__ void expand_levels_kernel(const uint8_t* levels, const float* table, float* y, int64_t n_rows,
                                     int row_size, int channel_size) {
    for (int64_t r = blockIdx.x; r < n_rows; r += gridDim.x) {
        const uint8_t* row = levels + r * row_size;  // [row_size]
        float* out = y + r * row_size;               // [row_size]
        for (int e = static_cast<int>(threadIdx.x); e < row_size; e += kBlock) {
            out[e] = __ldg(table + e / channel_size * 256 + row[e]);
        }
    }
}

}  // namespace

// ---- launchers --------------------------------------------------------------------------------------

void add_f32(float* x, const float* y, int64_t n, cudaStream_t stream) {
    if (n == 0) {
        return;
    }
    add_f32_kernel<<<n_blocks(n), kBlock, 0, stream>>>(x, y, n);
    CUDA_CHECK(cudaGetLastError());
}

void add_bias_f32(float* y, const float* b, int64_t n_rows, int64_t n_cols, cudaStream_t stream) {
    if (n_rows * n_cols == 0) {
        return;
    }
    add_bias_f32_kernel<<<n_blocks(n_rows * n_cols), kBlock, 0, stream>>>(y, b, n_rows, n_cols);
    CUDA_CHECK(cudaGetLastError());
}

void linear_f32(cublasHandle_t handle, const float* x, const float* w, const float* b, float* y, int64_t n,
                int64_t in, int64_t out, cudaStream_t stream) {
    if (n == 0 || out == 0) {
        return;
    }
    // Row-major y[n, out] = x[n, in] · w[out, in]ᵀ is column-major yᵀ[out, n] = w · xᵀ.
    const float alpha = 1.0f, beta = 0.0f;
    CUBLAS_CHECK(cublasSetStream(handle, stream));
    CUBLAS_CHECK(cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(out), static_cast<int>(n),
                             static_cast<int>(in), &alpha, w, static_cast<int>(in), x, static_cast<int>(in),
                             &beta, y, static_cast<int>(out)));
    if (b != nullptr) {
        add_bias_f32(y, b, n, out, stream);
    }
}

void batched_products_f32(cublasHandle_t handle, const float* a, const float* b, float* c, int64_t g,
                          int64_t m, int64_t n, int64_t k, cudaStream_t stream) {
    if (g == 0 || m == 0 || n == 0) {
        return;
    }
    if (k == 0) {
        CUDA_CHECK(cudaMemsetAsync(c, 0, static_cast<size_t>(g * m * n) * sizeof(float), stream));
        return;
    }
    // Row-major c_g [m, n] = a_g · b_gᵀ is column-major c_gᵀ [n, m] = b_g · a_gᵀ, b_g read as [k, n]
    // transposed.
    const float alpha = 1.0f, beta = 0.0f;
    CUBLAS_CHECK(cublasSetStream(handle, stream));
    CUBLAS_CHECK(cublasSgemmStridedBatched(handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n),
                                           static_cast<int>(m), static_cast<int>(k), &alpha, b,
                                           static_cast<int>(k), n * k, a, static_cast<int>(k), m * k, &beta,
                                           c, static_cast<int>(n), m * n, static_cast<int>(g)));
}

void gelu_tanh_f32(float* x, int64_t n, cudaStream_t stream) {
    if (n == 0) {
        return;
    }
    gelu_tanh_f32_kernel<<<n_blocks(n), kBlock, 0, stream>>>(x, n);
    CUDA_CHECK(cudaGetLastError());
}

void gelu_erf_f32(float* x, int64_t n, cudaStream_t stream) {
    if (n == 0) {
        return;
    }
    gelu_erf_f32_kernel<<<n_blocks(n), kBlock, 0, stream>>>(x, n);
    CUDA_CHECK(cudaGetLastError());
}

void widen_bf16(const uint16_t* x, float* y, int64_t n, cudaStream_t stream) {
    if (n == 0) {
        return;
    }
    widen_bf16_kernel<<<n_blocks(n), kBlock, 0, stream>>>(reinterpret_cast<const __nv_bfloat16*>(x), y, n);
    CUDA_CHECK(cudaGetLastError());
}

void swiglu_f32(const float* gate_up, float* y, int64_t n, int64_t d, cudaStream_t stream) {
    if (n * d == 0) {
        return;
    }
    launch_chained(swiglu_f32_kernel, dim3(n_blocks(n * d)), dim3(kBlock), 0, stream, gate_up, y, n, d);
}

void swiglu_bf16(const uint16_t* gate_up, uint16_t* y, int64_t n, int64_t d, cudaStream_t stream) {
    if (n * d == 0) {
        return;
    }
    constexpr int64_t kMaxGridRows = 65535;
    const auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
    const auto* in = reinterpret_cast<const __nv_bfloat16*>(gate_up);
    auto* out = reinterpret_cast<__nv_bfloat16*>(y);
    const auto grid_of = [&](int64_t per_thread) {
        return dim3(n_blocks((d + per_thread - 1) / per_thread),
                    static_cast<unsigned int>(std::min(n, kMaxGridRows)));
    };
    if (d % 8 == 0 && aligned(gate_up) && aligned(y)) {
        launch_chained(swiglu_bf16_kernel<8>, grid_of(8), dim3(kBlock), 0, stream, in, out, n, d);
    } else {
        launch_chained(swiglu_bf16_kernel<1>, grid_of(1), dim3(kBlock), 0, stream, in, out, n, d);
    }
}

void expand_levels(const uint8_t* levels, const float* table, float* y, int64_t n, int row_size,
                   int channel_size, cudaStream_t stream) {
    if (n == 0) {
        return;
    }
    constexpr int64_t kMaxBlocks = 4096;
    const int64_t n_rows = n / row_size;
    expand_levels_kernel<<<static_cast<unsigned int>(std::min(n_rows, kMaxBlocks)), kBlock, 0, stream>>>(
        levels, table, y, n_rows, row_size, channel_size);
    CUDA_CHECK(cudaGetLastError());
}

int device_count() {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return n;
}

}  // namespace folio::kernels
