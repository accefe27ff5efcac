#include "conv2d.h"

#include "cuda-check.h"
#include "flat-launch.cuh"
#include "vision-activation.cuh"

namespace folio::kernels {

namespace {

// cols [c_in kh kw, h_out w_out] of one image x [c_in, h, w]: row (c, i, j) holds channel c at kernel tap
// (i, j) for every output position, zero where the tap falls in the padding.
__global__ void im2col_kernel(const float* x, float* cols, Conv2dShape s) {
    const int64_t n_pos = s.h_out * s.w_out, e = global_index();
    if (e >= s.c_in * s.kh * s.kw * n_pos) {
        return;
    }
    const int64_t r = e / n_pos, pos = e % n_pos;
    const int64_t c = r / (s.kh * s.kw), i = r / s.kw % s.kh, j = r % s.kw;
    const int64_t iy = pos / s.w_out * s.stride_h - s.pad_h + i * s.dilation_h;
    const int64_t ix = pos % s.w_out * s.stride_w - s.pad_w + j * s.dilation_w;
    const bool inside = iy >= 0 && iy < s.h && ix >= 0 && ix < s.w;
    cols[e] = inside ? x[(c * s.h + iy) * s.w + ix] : 0.0f;
}

// y [n, c_out, h_out, w_out] = act(conv + b) where output channel o reads input channel o / (c_out / c_in)
// only (c_in == groups): a thread an output, the taps summed in the CPU backend's order.
__global__ void conv2d_depthwise_kernel(const float* x, const float* w, const float* b, float* y,
                                        Conv2dShape s, KernelActivation act) {
    const int64_t n_pos = s.h_out * s.w_out, e = global_index();
    if (e >= s.n * s.c_out * n_pos) {
        return;
    }
    const int64_t plane = e / n_pos, pos = e % n_pos;  // plane: (image, output channel)
    const int64_t o = plane % s.c_out, c = o / (s.c_out / s.c_in);
    const float* xp = x + (plane / s.c_out * s.c_in + c) * s.h * s.w;  // [h, w]
    const float* wk = w + o * s.kh * s.kw;                             // [kh, kw]
    const int64_t y0 = pos / s.w_out * s.stride_h - s.pad_h, x0 = pos % s.w_out * s.stride_w - s.pad_w;
    float sum = 0.0f;
    for (int64_t i = 0; i < s.kh; ++i) {
        const int64_t iy = y0 + i * s.dilation_h;
        for (int64_t j = 0; j < s.kw; ++j) {
            const int64_t ix = x0 + j * s.dilation_w;
            if (iy >= 0 && iy < s.h && ix >= 0 && ix < s.w) {
                sum += wk[i * s.kw + j] * xp[iy * s.w + ix];
            }
        }
    }
    y[e] = activation_value(act, sum + (b != nullptr ? b[o] : 0.0f));
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

}  // namespace

int64_t conv2d_scratch_floats(const Conv2dShape& s) {
    return depthwise(s) || pointwise(s) ? 0 : s.c_in * s.kh * s.kw * s.h_out * s.w_out;
}

void conv2d_f32(cublasHandle_t handle, const float* x, const float* w, const float* b, float* y,
                float* scratch, const Conv2dShape& s, KernelActivation act, cudaStream_t stream) {
    const int64_t n_pos = s.h_out * s.w_out, n_out = s.n * s.c_out * n_pos;
    if (n_out == 0) {
        return;
    }
    if (depthwise(s)) {
        conv2d_depthwise_kernel<<<n_blocks(n_out), kBlock, 0, stream>>>(x, w, b, y, s, act);
        CUDA_CHECK(cudaGetLastError());
        return;
    }
    // Per image and group, row-major y_g [c_out_g, n_pos] = w_g [c_out_g, k] · cols_g [k, n_pos], which
    // column-major is y_gᵀ = cols_gᵀ · w_gᵀ with cols_gᵀ [n_pos, k] and w_gᵀ [k, c_out_g].
    const int64_t c_out_g = s.c_out / s.groups, k = s.c_in / s.groups * s.kh * s.kw;
    const float alpha = 1.0f, beta = 0.0f;
    CUBLAS_CHECK(cublasSetStream(handle, stream));
    for (int64_t img = 0; img < s.n; ++img) {
        const float* xi = x + img * s.c_in * s.h * s.w;
        const float* cols = xi;
        if (!pointwise(s)) {
            im2col_kernel<<<n_blocks(s.c_in * s.kh * s.kw * n_pos), kBlock, 0, stream>>>(xi, scratch, s);
            CUDA_CHECK(cudaGetLastError());
            cols = scratch;
        }
        CUBLAS_CHECK(cublasSgemmStridedBatched(
            handle, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n_pos), static_cast<int>(c_out_g),
            static_cast<int>(k), &alpha, cols, static_cast<int>(n_pos), k * n_pos, w, static_cast<int>(k),
            c_out_g * k, &beta, y + img * s.c_out * n_pos, static_cast<int>(n_pos), c_out_g * n_pos,
            static_cast<int>(s.groups)));
    }
    if (b != nullptr || act != KernelActivation::None) {
        bias_activation_kernel<<<n_blocks(n_out), kBlock, 0, stream>>>(y, b, s.n * s.c_out, n_pos, s.c_out,
                                                                       act);
        CUDA_CHECK(cudaGetLastError());
    }
}

}  // namespace folio::kernels
