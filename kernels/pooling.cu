#include "kernels/pooling.h"

#include "kernels/cuda-check.h"

namespace folio::kernels {

namespace {

constexpr int kBlock = 256;

// y [planes, out_h, out_w] from x [planes, h, w]: a thread an output, its window first within the padded
// input (for the divisor), then clipped to the input, as the CPU backend computes it.
__global__ void pool2d_kernel(const float* x, float* y, int64_t n_planes, int64_t h, int64_t w, int64_t out_h,
                              int64_t out_w, PoolWindow p) {
    const int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (e >= n_planes * out_h * out_w) {
        return;
    }
    const int64_t plane = e / (out_h * out_w), oy = e / out_w % out_h, ox = e % out_w;
    const float* xp = x + plane * h * w;
    int64_t y0 = oy * p.sh - p.ph, x0 = ox * p.sw - p.pw;
    int64_t y1 = min(y0 + p.kh, h + p.ph), x1 = min(x0 + p.kw, w + p.pw);
    const int64_t padded_size = (y1 - y0) * (x1 - x0);
    y0 = max(y0, int64_t{0});
    x0 = max(x0, int64_t{0});
    y1 = min(y1, h);
    x1 = min(x1, w);
    float result = p.max ? -INFINITY : 0.0f;
    for (int64_t iy = y0; iy < y1; ++iy) {
        for (int64_t ix = x0; ix < x1; ++ix) {
            const float v = xp[iy * w + ix];
            if (p.max) {
                result = (v > result || isnan(v)) ? v : result;
            } else {
                result += v;
            }
        }
    }
    if (!p.max) {
        result /= static_cast<float>(p.count_include_pad ? padded_size : (y1 - y0) * (x1 - x0));
    }
    y[e] = result;
}

}  // namespace

void pool2d_f32(const float* x, float* y, const Dims4& in, const Dims4& out, const PoolWindow& p,
                cudaStream_t stream) {
    const int64_t n = out.n * out.c * out.h * out.w;
    if (n == 0) {
        return;
    }
    pool2d_kernel<<<static_cast<unsigned int>((n + kBlock - 1) / kBlock), kBlock, 0, stream>>>(
        x, y, in.n * in.c, in.h, in.w, out.h, out.w, p);
    CUDA_CHECK(cudaGetLastError());
}

}  // namespace folio::kernels
