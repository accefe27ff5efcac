// Host entry points of the 2-D convolution over NCHW float32 tensors in device memory: a direct kernel where
// each output channel reads one input channel (depthwise); with TF32 or bfloat16 inputs and no groups, where
// the work fills the device, the implicit product on the tensor cores (the columns gathered into shared
// memory as needed, bias and activation applied as y is written); otherwise the input as columns (im2col,
// skipped for 1x1 kernels of stride 1 without padding) times the weights through cuBLAS (without groups one
// strided batch over a chunk of images, with groups one over an image's groups), then bias and activation in
// one pass. Enqueued on stream.
#pragma once

#include <cstdint>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "kernels/vision-types.h"

namespace folio::kernels {

// How the products round their float32 inputs: not at all, to TF32 (10 mantissa bits) or to bfloat16 (7),
// the sums in float32 each time.
enum class ConvInputs { Float32, Tf32, Bf16 };

// Sizes and parameters of one convolution (Conv2dParams with the tensors' sizes).
struct Conv2dShape {
    int64_t n = 0, c_in = 0, h = 0, w = 0;  // x [n, c_in, h, w]
    int64_t c_out = 0, kh = 0, kw = 0;      // w [c_out, c_in / groups, kh, kw]
    int64_t h_out = 0, w_out = 0;           // y [n, c_out, h_out, w_out]
    int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1;
    int64_t groups = 1;
    ConvInputs inputs = ConvInputs::Float32;
};

// Floats of scratch conv2d_f32 takes for shape s on the current device: the columns [images, c_in kh kw,
// h_out w_out] of as many images as fit 128 MiB (one at least), or none.
int64_t conv2d_scratch_floats(const Conv2dShape& s);

// y = act(conv(x, w) + b).  x [n, c_in, h, w], w [c_out, c_in / groups, kh, kw], b [c_out] or null,
// scratch [conv2d_scratch_floats(s)]  ->  y [n, c_out, h_out, w_out]
void conv2d_f32(cublasHandle_t handle, const float* x, const float* w, const float* b, float* y,
                float* scratch, const Conv2dShape& s, KernelActivation act, cudaStream_t stream);

}  // namespace folio::kernels
