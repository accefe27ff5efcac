#include "conv2d.h"

#include <algorithm>
#include <climits>

#include "cuda-check.h"
#include "error.h"
#include "flat-launch.cuh"
#include "vision-activation.cuh"

namespace folio::kernels {

namespace {

// The columns of a chunk of images stay under this many floats (at least one image's).
constexpr int64_t kMaxScratchFloats = int64_t{32} << 20;

// cols [images, c_in kh kw, h_out w_out] of x [images, c_in, h, w]: row (c, i, j) holds channel c at kernel
// tap (i, j) for every output position, zero where the tap falls in the padding. Grid: positions in x, the
// row in y, the image in z, so that a block's threads write consecutive columns.
__global__ void im2col_kernel(const float* x, float* cols, Conv2dShape s) {
    const int n_pos = static_cast<int>(s.h_out * s.w_out);
    const int pos = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    if (pos >= n_pos) {
        return;
    }
    const int kh = static_cast<int>(s.kh), kw = static_cast<int>(s.kw), w_out = static_cast<int>(s.w_out);
    const int h = static_cast<int>(s.h), w = static_cast<int>(s.w);
    const int r = static_cast<int>(blockIdx.y), img = static_cast<int>(blockIdx.z);
    const int c = r / (kh * kw), i = r / kw % kh, j = r % kw;
    const int oy = pos / w_out, ox = pos - oy * w_out;
    const int iy =
        oy * static_cast<int>(s.stride_h) - static_cast<int>(s.pad_h) + i * static_cast<int>(s.dilation_h);
    const int ix =
        ox * static_cast<int>(s.stride_w) - static_cast<int>(s.pad_w) + j * static_cast<int>(s.dilation_w);
    const float* plane = x + (static_cast<int64_t>(img) * s.c_in + c) * h * w;  // [h, w]
    const int64_t rows = s.c_in * s.kh * s.kw;
    cols[(img * rows + r) * n_pos + pos] = iy >= 0 && iy < h && ix >= 0 && ix < w ? plane[iy * w + ix] : 0.0f;
}

// y [n, c_out, h_out, w_out] = act(conv + b) where output channel o reads input channel o / (c_out / c_in)
// only (c_in == groups): a thread an output, the taps summed in the CPU backend's order. Grid: positions in
// x, the output channel in y, the image in z.
__global__ void conv2d_depthwise_kernel(const float* x, const float* w, const float* b, float* y,
                                        Conv2dShape s, KernelActivation act) {
    const int w_out = static_cast<int>(s.w_out), n_pos = static_cast<int>(s.h_out) * w_out;
    const int pos = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    if (pos >= n_pos) {
        return;
    }
    const int h = static_cast<int>(s.h), wd = static_cast<int>(s.w);
    const int kh = static_cast<int>(s.kh), kw = static_cast<int>(s.kw);
    const int o = static_cast<int>(blockIdx.y), img = static_cast<int>(blockIdx.z);
    const int c = o / static_cast<int>(s.c_out / s.c_in);
    const float* xp = x + (static_cast<int64_t>(img) * s.c_in + c) * h * wd;  // [h, w]
    const float* wk = w + static_cast<int64_t>(o) * kh * kw;                  // [kh, kw]
    const int oy = pos / w_out;
    const int y0 = oy * static_cast<int>(s.stride_h) - static_cast<int>(s.pad_h);
    const int x0 = (pos - oy * w_out) * static_cast<int>(s.stride_w) - static_cast<int>(s.pad_w);
    float sum = 0.0f;
    for (int i = 0; i < kh; ++i) {
        const int iy = y0 + i * static_cast<int>(s.dilation_h);
        for (int j = 0; j < kw; ++j) {
            const int ix = x0 + j * static_cast<int>(s.dilation_w);
            if (iy >= 0 && iy < h && ix >= 0 && ix < wd) {
                sum += wk[i * kw + j] * xp[iy * wd + ix];
            }
        }
    }
    y[(static_cast<int64_t>(img) * s.c_out + o) * n_pos + pos] =
        activation_value(act, sum + (b != nullptr ? b[o] : 0.0f));
}

// y [n_planes, n_pos] = act(y + b[plane % c_out]) in place.
__global__ void bias_activation_kernel(float* y, const float* b, int64_t n_planes, int64_t n_pos,
                                       int64_t c_out, KernelActivation act) {
    const int64_t e = global_index();
    if (e < n_planes * n_pos) {
        y[e] = activation_value(act, y[e] + (b != nullptr ? b[e / n_pos % c_out] : 0.0f));
    }
}

bool depthwise(const Conv2dShape& s) {
    return s.c_in == s.groups;
}

bool pointwise(const Conv2dShape& s) {
    return s.kh == 1 && s.kw == 1 && s.stride_h == 1 && s.stride_w == 1 && s.pad_h == 0 && s.pad_w == 0;
}

// Images whose columns one pass of im2col and the products take.
int64_t images_per_chunk(const Conv2dShape& s) {
    const int64_t per_image = s.c_in * s.kh * s.kw * s.h_out * s.w_out;
    return std::clamp<int64_t>(kMaxScratchFloats / std::max<int64_t>(per_image, 1), 1,
                               std::max<int64_t>(s.n, 1));
}

// One strided batch of products: batch entry e gives c [m_rows, n_cols] (column-major, leading dimension
// m_rows) = a [m_rows, k] · b [k, n_cols] at a + e * stride_a, b + e * stride_b, c + e * stride_c.
void strided_products(cublasHandle_t handle, int64_t m_rows, int64_t n_cols, int64_t k, const float* a,
                      int64_t stride_a, const float* b, int64_t stride_b, float* c, int64_t stride_c,
                      int64_t batch, bool tf32) {
    const float alpha = 1.0f, beta = 0.0f;
    CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        handle, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(m_rows), static_cast<int>(n_cols),
        static_cast<int>(k), &alpha, a, CUDA_R_32F, static_cast<int>(m_rows), stride_a, b, CUDA_R_32F,
        static_cast<int>(k), stride_b, &beta, c, CUDA_R_32F, static_cast<int>(m_rows), stride_c,
        static_cast<int>(batch), tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
        CUBLAS_GEMM_DEFAULT));
}

}  // namespace

int64_t conv2d_scratch_floats(const Conv2dShape& s) {
    if (depthwise(s) || pointwise(s)) {
        return 0;
    }
    return images_per_chunk(s) * s.c_in * s.kh * s.kw * s.h_out * s.w_out;
}

void conv2d_f32(cublasHandle_t handle, const float* x, const float* w, const float* b, float* y,
                float* scratch, const Conv2dShape& s, KernelActivation act, cudaStream_t stream) {
    const int64_t n_pos = s.h_out * s.w_out, n_out = s.n * s.c_out * n_pos;
    if (n_out == 0) {
        return;
    }
    if (s.h * s.w > INT_MAX || n_pos > INT_MAX || s.c_in * s.kh * s.kw > 65535 || s.c_out > 65535 ||
        s.n > 65535) {
        fail("conv2d of ", s.n, "x", s.c_in, "x", s.h, "x", s.w, " into ", s.c_out, " channels of ", s.kh,
             "x", s.kw, ": beyond the kernels' grid");
    }
    if (depthwise(s)) {
        const dim3 grid(n_blocks(n_pos), static_cast<unsigned int>(s.c_out), static_cast<unsigned int>(s.n));
        conv2d_depthwise_kernel<<<grid, kBlock, 0, stream>>>(x, w, b, y, s, act);
        CUDA_CHECK(cudaGetLastError());
        return;
    }
    // Per image and group, row-major y_g [c_out_g, n_pos] = w_g [c_out_g, k] · cols_g [k, n_pos], which
    // column-major is y_gᵀ = cols_gᵀ · w_gᵀ with cols_gᵀ [n_pos, k] and w_gᵀ [k, c_out_g]. Without groups the
    // images of a chunk are one strided batch over the same weights.
    const int64_t c_out_g = s.c_out / s.groups, k = s.c_in / s.groups * s.kh * s.kw;
    const int64_t in_image = s.c_in * s.h * s.w, cols_image = s.c_in * s.kh * s.kw * n_pos;
    const int64_t chunk = images_per_chunk(s);
    CUBLAS_CHECK(cublasSetStream(handle, stream));
    for (int64_t img = 0; img < s.n; img += chunk) {
        const int64_t m = std::min(chunk, s.n - img);
        const float* cols = x + img * in_image;
        int64_t cols_stride = in_image;
        if (!pointwise(s)) {
            const dim3 grid(n_blocks(n_pos), static_cast<unsigned int>(s.c_in * s.kh * s.kw),
                            static_cast<unsigned int>(m));
            im2col_kernel<<<grid, kBlock, 0, stream>>>(cols, scratch, s);
            CUDA_CHECK(cudaGetLastError());
            cols = scratch;
            cols_stride = cols_image;
        }
        float* out = y + img * s.c_out * n_pos;
        if (s.groups == 1) {
            strided_products(handle, n_pos, s.c_out, k, cols, cols_stride, w, 0, out, s.c_out * n_pos, m,
                             s.tf32);
            continue;
        }
        for (int64_t i = 0; i < m; ++i) {
            strided_products(handle, n_pos, c_out_g, k, cols + i * cols_stride, k * n_pos, w, c_out_g * k,
                             out + i * s.c_out * n_pos, c_out_g * n_pos, s.groups, s.tf32);
        }
    }
    if (b != nullptr || act != KernelActivation::None) {
        bias_activation_kernel<<<n_blocks(n_out), kBlock, 0, stream>>>(y, b, s.n * s.c_out, n_pos, s.c_out,
                                                                       act);
        CUDA_CHECK(cudaGetLastError());
    }
}

}  // namespace folio::kernels
