// The CUDA backend's vision operations: the arguments checked as the CPU backend checks them, then the
// kernels of conv2d, pooling, activation-ops, tensor-layout, grid-sample, topk and layout-ops.
#include "engine/backend/cuda/cuda-backend.h"
#include "kernels/activation-ops.h"
#include "kernels/conv2d.h"
#include "kernels/elementwise.h"
#include "kernels/grid-sample.h"
#include "kernels/layout-ops.h"
#include "kernels/pooling.h"
#include "kernels/tensor-layout.h"
#include "kernels/topk.h"

namespace folio::cuda {

namespace {

// The device address of a tensor of 4-byte elements, float32 or int32.
uint32_t* device_u32(const Tensor& t, const char* op) {
    return static_cast<uint32_t*>(device_data(t, op));
}

static_assert(kMaxPermuteDims <= kernels::kMaxLayoutDims);
static_assert(kMaxSinusoidFreqs == kernels::kMaxFreqs);

kernels::Dims4 dims(const Tensor& t) {
    const Nchw s = t.nchw();
    return {s.n, s.c, s.h, s.w};
}

kernels::KernelActivation kernel_activation(Activation act) {
    switch (act) {
        case Activation::None:
            return kernels::KernelActivation::None;
        case Activation::Relu:
            return kernels::KernelActivation::Relu;
        case Activation::Silu:
            return kernels::KernelActivation::Silu;
        case Activation::Gelu:
            return kernels::KernelActivation::Gelu;
        case Activation::Sigmoid:
            return kernels::KernelActivation::Sigmoid;
        case Activation::QuickGelu:
            return kernels::KernelActivation::QuickGelu;
        case Activation::GeluTanh:
        case Activation::Swiglu:
            break;
    }
    fail("the vision kernels do not apply ", activation_name(act));
}

}  // namespace

Tensor CudaBackend::conv2d(const Tensor& x, const Tensor& w, const Tensor* b, const Conv2dParams& p) {
    const char* op = "conv2d";
    Tensor y = alloc_uninitialized(check_conv2d(x, w, b, p), op);  // [n, c_out, h_out, w_out]
    const Nchw in = x.nchw(), out = y.nchw();
    const kernels::Conv2dShape s{.n = in.n,
                                 .c_in = in.c,
                                 .h = in.h,
                                 .w = in.w,
                                 .c_out = out.c,
                                 .kh = w.shape[2],
                                 .kw = w.shape[3],
                                 .h_out = out.h,
                                 .w_out = out.w,
                                 .stride_h = p.stride[0],
                                 .stride_w = p.stride[1],
                                 .pad_h = p.padding[0],
                                 .pad_w = p.padding[1],
                                 .dilation_h = p.dilation[0],
                                 .dilation_w = p.dilation[1],
                                 .groups = p.groups,
                                 .inputs = p.precision == ConvPrecision::Tf32 ? kernels::ConvInputs::Tf32
                                           : p.precision == ConvPrecision::Bfloat16
                                               ? kernels::ConvInputs::Bf16
                                               : kernels::ConvInputs::Float32};
    const Tensor scratch = alloc_bytes(kernels::conv2d_scratch_floats(s) * 4, op);  // a chunk's columns
    kernels::conv2d_f32(cublas_.get(), device_f32(x, op), device_f32(w, op), b ? device_f32(*b, op) : nullptr,
                        y.f32(), scratch.empty() ? nullptr : scratch.f32(), s,
                        kernel_activation(p.activation), stream());
    return y;
}

Tensor CudaBackend::batched_products(const Tensor& a, const Tensor& b) {
    const char* op = "batched_products";
    const std::vector<int64_t> shape = check_batched_products(a, b);
    Tensor out = alloc_uninitialized(shape, op);  // [g, m, n]
    kernels::batched_products_f32(cublas_.get(), device_f32(a, op), device_f32(b, op), out.f32(), shape[0],
                                  shape[1], shape[2], a.shape[2], stream());
    return out;
}

Tensor CudaBackend::pool2d(const Tensor& x, const Pool2dParams& p) {
    Tensor y = alloc_uninitialized(check_pool2d(x, p), "pool2d");  // [n, c, h_out, w_out]
    const kernels::PoolWindow window{.kh = p.kernel[0],
                                     .kw = p.kernel[1],
                                     .sh = p.stride[0],
                                     .sw = p.stride[1],
                                     .ph = p.padding[0],
                                     .pw = p.padding[1],
                                     .max = p.mode == PoolMode::Max,
                                     .count_include_pad = p.count_include_pad};
    kernels::pool2d_f32(device_f32(x, "pool2d"), y.f32(), dims(x), dims(y), window, stream());
    return y;
}

Tensor CudaBackend::pad2d(const Tensor& x, const std::array<int64_t, 4>& pads) {
    Tensor y = alloc_uninitialized(check_pad2d(x, pads), "pad2d");  // [n, c, h + top + bottom, w + ...]
    kernels::pad2d_f32(device_f32(x, "pad2d"), y.f32(), dims(x), dims(y), pads[0], pads[2], stream());
    return y;
}

Tensor CudaBackend::interpolate2d(const Tensor& x, int64_t out_h, int64_t out_w, InterpolateMode mode) {
    Tensor y =
        alloc_uninitialized(check_interpolate2d(x, out_h, out_w), "interpolate2d");  // [n, c, out_h, out_w]
    kernels::interpolate2d_f32(device_f32(x, "interpolate2d"), y.f32(), dims(x), dims(y),
                               mode == InterpolateMode::Nearest, stream());
    return y;
}

void CudaBackend::apply_activation(Tensor& x, Activation act) {
    check_f32(x, "apply_activation", "x");
    if (act == Activation::GeluTanh) {
        gelu_tanh(x);
        return;
    }
    activate();
    kernels::apply_activation_f32(device_f32(x, "apply_activation"), x.n_elements(), kernel_activation(act),
                                  stream());
}

Tensor CudaBackend::multiply(const Tensor& x, const Tensor& y, Activation y_act) {
    check_multiply(x, y);
    Tensor out = alloc_uninitialized(x.shape, "multiply");  // as x
    kernels::multiply_f32(device_f32(x, "multiply"), device_f32(y, "multiply"), out.f32(), x.n_elements(),
                          kernel_activation(y_act), stream());
    return out;
}

void CudaBackend::softmax(Tensor& x) {
    check_softmax(x);
    activate();
    const int64_t d = x.shape.back();
    kernels::softmax_rows_f32(device_f32(x, "softmax"), x.n_elements() / d, d, stream());
}

Tensor CudaBackend::permute(const Tensor& x, std::span<const int> axes) {
    Tensor y =
        alloc_uninitialized(check_permute(x, axes), "permute", x.dtype);  // x's dimensions in axes' order
    kernels::permute_u32(device_u32(x, "permute"), device_u32(y, "permute"), x.shape.data(), axes.data(),
                         static_cast<int>(axes.size()), stream());
    return y;
}

Tensor CudaBackend::concat(std::span<const Tensor> parts, int axis) {
    const std::vector<int64_t> shape = check_concat(parts, axis);
    Tensor y =
        alloc_uninitialized(shape, "concat", parts.front().dtype);  // the parts' shape, summed along axis
    int64_t n_outer = 1;
    for (int d = 0; d < axis; ++d) {
        n_outer *= shape[static_cast<size_t>(d)];
    }
    if (n_outer == 0) {
        return y;
    }
    const int64_t out_inner = y.n_elements() / n_outer;
    int64_t column = 0;
    for (const Tensor& part : parts) {
        const int64_t inner = part.n_elements() / n_outer;
        kernels::copy_blocks_u32(device_u32(part, "concat"), device_u32(y, "concat"), n_outer, inner,
                                 out_inner, column, stream());
        column += inner;
    }
    return y;
}

Tensor CudaBackend::grid_sample(const Tensor& x, const Tensor& grid) {
    Tensor y = alloc_uninitialized(check_grid_sample(x, grid), "grid_sample");  // [n, c, h_out, w_out]
    kernels::grid_sample_f32(device_f32(x, "grid_sample"), device_f32(grid, "grid_sample"), y.f32(), dims(x),
                             grid.shape[1], grid.shape[2], stream());
    return y;
}

Tensor CudaBackend::multi_scale_deformable_attention(const Tensor& value,
                                                     std::span<const FeatureLevel> levels,
                                                     const Tensor& sampling_locations,
                                                     const Tensor& attention_weights) {
    const char* op = "multi_scale_deformable_attention";
    Tensor out = alloc_uninitialized(
        check_multi_scale_deformable_attention(value, levels, sampling_locations, attention_weights),
        op);  // [n, q, n_head * d_head]
    if (levels.size() > static_cast<size_t>(kernels::kMaxFeatureLevels)) {
        fail(op, ": ", levels.size(), " levels; the CUDA kernel takes up to ", kernels::kMaxFeatureLevels);
    }
    kernels::FeatureLevels lv;
    lv.n = static_cast<int64_t>(levels.size());
    for (size_t l = 0; l < levels.size(); ++l) {
        lv.height[l] = levels[l].height;
        lv.width[l] = levels[l].width;
        lv.start[l] = levels[l].start;
    }
    const std::vector<int64_t>& loc = sampling_locations.shape;  // [n, q, n_head, n_levels, n_points, 2]
    kernels::multi_scale_deformable_attention_f32(
        device_f32(value, op), lv, device_f32(sampling_locations, op), device_f32(attention_weights, op),
        out.f32(), loc[0], value.shape[1], loc[2], value.shape[3], loc[1], loc[4], stream());
    return out;
}

TopK CudaBackend::top_k(const Tensor& x, int64_t k) {
    const std::vector<int64_t> shape = check_top_k(x, k);
    const int64_t d = x.shape.back(), n_rows = x.n_elements() / d;
    TopK result{alloc_uninitialized(shape, "top_k"), alloc_uninitialized(shape, "top_k", ScalarType::I32)};
    const Tensor scratch = alloc_bytes(kernels::top_k_scratch_bytes(n_rows, k), "top_k");  // selected keys
    kernels::top_k_f32(device_f32(x, "top_k"), result.values.f32(), result.indices.i32(),
                       scratch.empty() ? nullptr : scratch.f32(), n_rows, d, k, stream());
    return result;
}

Tensor CudaBackend::mask_boxes(const Tensor& x) {
    const std::vector<int64_t> shape = check_mask_boxes(x);
    const int64_t h = x.dim(-2), w = x.dim(-1);
    Tensor out = alloc_uninitialized(shape, "mask_boxes");  // [..., 4]
    kernels::mask_boxes_f32(device_f32(x, "mask_boxes"), out.f32(), x.n_elements() / (h * w), h, w, stream());
    return out;
}

Tensor CudaBackend::sigmoid_bits(const Tensor& x, float threshold) {
    const std::vector<int64_t> shape = check_sigmoid_bits(x);
    Tensor out = alloc_uninitialized(shape, "sigmoid_bits", ScalarType::I32);  // [..., words]
    const int64_t n = x.shape.back();
    kernels::sigmoid_bits_f32(device_f32(x, "sigmoid_bits"), reinterpret_cast<uint32_t*>(out.i32()),
                              n == 0 ? 0 : x.n_elements() / n, n, threshold, stream());
    return out;
}

Tensor CudaBackend::box_sample_locations(const Tensor& boxes, const Tensor& offsets, int64_t n_points) {
    const char* op = "box_sample_locations";
    Tensor out = alloc_uninitialized(check_box_sample_locations(boxes, offsets, n_points), op);  // [r, s, 2]
    kernels::box_sample_locations_f32(device_f32(boxes, op), device_f32(offsets, op), out.f32(),
                                      boxes.shape[0], offsets.shape[1], n_points, stream());
    return out;
}

void CudaBackend::refine_boxes(Tensor& boxes, const Tensor& delta) {
    check_refine_boxes(boxes, delta);
    kernels::refine_boxes_f32(device_f32(boxes, "refine_boxes"), device_f32(delta, "refine_boxes"),
                              boxes.n_elements(), stream());
}

Tensor CudaBackend::pair_relations(const Tensor& boxes, float scale) {
    Tensor out = alloc_uninitialized(check_pair_relations(boxes), "pair_relations");  // [n, t, t, 4]
    kernels::pair_relations_f32(device_f32(boxes, "pair_relations"), out.f32(), boxes.shape[0],
                                boxes.shape[1], scale, stream());
    return out;
}

Tensor CudaBackend::sinusoid(const Tensor& x, std::span<const float> freqs) {
    const std::vector<int64_t> shape = check_sinusoid(x, freqs);
    kernels::Freqs f;
    f.n = static_cast<int>(freqs.size());
    std::copy(freqs.begin(), freqs.end(), f.f);
    Tensor out = alloc_uninitialized(shape, "sinusoid");  // [n, 2 freqs]
    kernels::sinusoid_f32(device_f32(x, "sinusoid"), out.f32(), x.shape[0], f, stream());
    return out;
}

}  // namespace folio::cuda
