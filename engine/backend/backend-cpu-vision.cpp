// The CPU backend's vision operations: direct loops in the order torch computes them, convolution as im2col
// and blocked dot products.
#include "engine/backend/backend-cpu-vision.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "engine/backend/backend-vision-checks.h"
#include "engine/backend/box-ops.h"
#include "engine/backend/mask-box.h"
#include "engine/common/error.h"

namespace folio {

namespace {

float activation_value(Activation act, float v) {
    switch (act) {
        case Activation::None:
            return v;
        case Activation::Relu:
            return v < 0.0f ? 0.0f : v;  // a NaN stays a NaN, as in torch
        case Activation::Silu:
            return v / (1.0f + std::exp(-v));
        case Activation::Gelu:
            return 0.5f * v * (1.0f + std::erf(v * 0.7071067811865476f));
        case Activation::Sigmoid:
            return 1.0f / (1.0f + std::exp(-v));
        case Activation::GeluTanh:
            return 0.5f * v * (1.0f + std::tanh(0.7978845608028654f * (v + 0.044715f * v * v * v)));
        case Activation::QuickGelu:
            return v / (1.0f + std::exp(-1.702f * v));
        case Activation::Swiglu:
            break;
    }
    fail("activation ", activation_name(act), " halves each row; it is Backend::swiglu");
}

// The bilinear sample of plane [h, w] (element (y, x) at plane[(y * w + x) * stride]) at pixel coordinates
// (ix, iy), corners outside the plane counting as zero, as grid_sample's zero padding.
float bilinear_zero_padded(const float* plane, int64_t h, int64_t w, int64_t stride, float ix, float iy) {
    const float x0f = std::floor(ix), y0f = std::floor(iy);
    const auto x0 = static_cast<int64_t>(x0f), y0 = static_cast<int64_t>(y0f);
    const float fx = ix - x0f, fy = iy - y0f;
    const float weights[4] = {(1.0f - fx) * (1.0f - fy), fx * (1.0f - fy), (1.0f - fx) * fy, fx * fy};
    float sum = 0.0f;
    for (int corner = 0; corner < 4; ++corner) {
        const int64_t y = y0 + corner / 2, x = x0 + corner % 2;
        if (y >= 0 && y < h && x >= 0 && x < w) {
            sum += weights[corner] * plane[(y * w + x) * stride];
        }
    }
    return sum;
}

Tensor with_dtype(Tensor t, ScalarType dtype) {
    t.dtype = dtype;
    return t;
}

}  // namespace

Tensor CpuVisionBackend::conv2d(const Tensor& x, const Tensor& w, const Tensor* b, const Conv2dParams& p) {
    Tensor y = alloc(check_conv2d(x, w, b, p));
    const Nchw in = x.nchw(), out = y.nchw();
    const int64_t kh = w.shape[2], kw = w.shape[3], groups = p.groups;
    const int64_t c_in_g = in.c / groups, c_out_g = out.c / groups;
    const int64_t k_size = c_in_g * kh * kw, n_pos = out.h * out.w;
    // One image's input as columns: row (c, i, j) holds channel c at kernel tap (i, j) for every output
    // position, so that group g's rows [g k_size, (g + 1) k_size) line up with w's rows of that group.
    std::vector<float> cols(static_cast<size_t>(in.c * kh * kw * n_pos));  // [groups, k_size, n_pos]
    constexpr int64_t kOut = 8, kPos = 256;  // a task's block of output channels and positions
    const int64_t n_out_blocks = (c_out_g + kOut - 1) / kOut, n_pos_blocks = (n_pos + kPos - 1) / kPos;
    for (int64_t img = 0; img < in.n; ++img) {
        const float* xi = x.f32() + img * in.c * in.h * in.w;  // [c_in, h, w]
        thread_pool().parallel_for(in.c * kh * kw, 1, [&](int64_t begin, int64_t end) {
            for (int64_t r = begin; r < end; ++r) {
                const int64_t c = r / (kh * kw), i = r / kw % kh, j = r % kw;
                float* row = cols.data() + r * n_pos;  // [n_pos]
                for (int64_t oy = 0; oy < out.h; ++oy) {
                    const int64_t iy = oy * p.stride[0] - p.padding[0] + i * p.dilation[0];
                    for (int64_t ox = 0; ox < out.w; ++ox) {
                        const int64_t ix = ox * p.stride[1] - p.padding[1] + j * p.dilation[1];
                        const bool inside = iy >= 0 && iy < in.h && ix >= 0 && ix < in.w;
                        row[oy * out.w + ox] = inside ? xi[(c * in.h + iy) * in.w + ix] : 0.0f;
                    }
                }
            }
        });
        thread_pool().parallel_for(groups * n_out_blocks * n_pos_blocks, 1, [&](int64_t begin, int64_t end) {
            float acc[kOut][kPos];
            for (int64_t task = begin; task < end; ++task) {
                const int64_t g = task / (n_out_blocks * n_pos_blocks);
                const int64_t o0 = g * c_out_g + task / n_pos_blocks % n_out_blocks * kOut;
                const int64_t p0 = task % n_pos_blocks * kPos;
                const int64_t n_o = std::min(kOut, (g + 1) * c_out_g - o0), n_p = std::min(kPos, n_pos - p0);
                for (int64_t o = 0; o < n_o; ++o) {
                    std::fill_n(acc[o], n_p, 0.0f);
                }
                for (int64_t k = 0; k < k_size; ++k) {
                    const float* col = cols.data() + (g * k_size + k) * n_pos + p0;  // [n_p]
                    for (int64_t o = 0; o < n_o; ++o) {
                        const float wv = w.f32()[(o0 + o) * k_size + k];
                        for (int64_t q = 0; q < n_p; ++q) {
                            acc[o][q] += wv * col[q];
                        }
                    }
                }
                for (int64_t o = 0; o < n_o; ++o) {
                    const float bias = b ? b->f32()[o0 + o] : 0.0f;
                    float* yr = y.f32() + (img * out.c + o0 + o) * n_pos + p0;  // [n_p]
                    for (int64_t q = 0; q < n_p; ++q) {
                        yr[q] = activation_value(p.activation, acc[o][q] + bias);
                    }
                }
            }
        });
    }
    return y;
}

Tensor CpuVisionBackend::pool2d(const Tensor& x, const Pool2dParams& p) {
    Tensor y = alloc(check_pool2d(x, p));
    const Nchw in = x.nchw(), out = y.nchw();
    thread_pool().parallel_for(in.n * in.c, 1, [&](int64_t begin, int64_t end) {
        for (int64_t plane = begin; plane < end; ++plane) {
            const float* xp = x.f32() + plane * in.h * in.w;  // [h, w]
            float* yp = y.f32() + plane * out.h * out.w;      // [h_out, w_out]
            for (int64_t oy = 0; oy < out.h; ++oy) {
                for (int64_t ox = 0; ox < out.w; ++ox) {
                    // The window, first within the padded input, then clipped to the input.
                    int64_t y0 = oy * p.stride[0] - p.padding[0], x0 = ox * p.stride[1] - p.padding[1];
                    int64_t y1 = std::min(y0 + p.kernel[0], in.h + p.padding[0]);
                    int64_t x1 = std::min(x0 + p.kernel[1], in.w + p.padding[1]);
                    const int64_t padded_size = (y1 - y0) * (x1 - x0);
                    y0 = std::max<int64_t>(y0, 0);
                    x0 = std::max<int64_t>(x0, 0);
                    y1 = std::min(y1, in.h);
                    x1 = std::min(x1, in.w);
                    float result = 0.0f;
                    if (p.mode == PoolMode::Max) {
                        result = -std::numeric_limits<float>::infinity();
                        for (int64_t iy = y0; iy < y1; ++iy) {
                            for (int64_t ix = x0; ix < x1; ++ix) {
                                const float v = xp[iy * in.w + ix];
                                result = (v > result || std::isnan(v)) ? v : result;
                            }
                        }
                    } else {
                        for (int64_t iy = y0; iy < y1; ++iy) {
                            for (int64_t ix = x0; ix < x1; ++ix) {
                                result += xp[iy * in.w + ix];
                            }
                        }
                        const int64_t divisor = p.count_include_pad ? padded_size : (y1 - y0) * (x1 - x0);
                        result /= static_cast<float>(divisor);
                    }
                    yp[oy * out.w + ox] = result;
                }
            }
        }
    });
    return y;
}

Tensor CpuVisionBackend::pad2d(const Tensor& x, const std::array<int64_t, 4>& pads) {
    Tensor y = alloc(check_pad2d(x, pads));
    const Nchw in = x.nchw(), out = y.nchw();
    thread_pool().parallel_for(in.n * in.c, 1, [&](int64_t begin, int64_t end) {
        for (int64_t plane = begin; plane < end; ++plane) {
            for (int64_t iy = 0; iy < in.h; ++iy) {
                std::copy_n(x.f32() + (plane * in.h + iy) * in.w, in.w,
                            y.f32() + (plane * out.h + iy + pads[0]) * out.w + pads[2]);
            }
        }
    });
    return y;
}

Tensor CpuVisionBackend::interpolate2d(const Tensor& x, int64_t out_h, int64_t out_w, InterpolateMode mode) {
    Tensor y = alloc(check_interpolate2d(x, out_h, out_w));
    const Nchw in = x.nchw();
    const float scale_h = static_cast<float>(in.h) / static_cast<float>(out_h);
    const float scale_w = static_cast<float>(in.w) / static_cast<float>(out_w);
    // Input index and weight of the second tap along one axis, as torch's upsample kernels find them.
    const auto source = [mode](int64_t dst, float scale, int64_t size, float& frac) {
        if (mode == InterpolateMode::Nearest) {
            frac = 0.0f;
            return std::min(static_cast<int64_t>(std::floor(static_cast<float>(dst) * scale)), size - 1);
        }
        const float src = std::max(scale * (static_cast<float>(dst) + 0.5f) - 0.5f, 0.0f);
        const auto i0 = static_cast<int64_t>(src);
        frac = src - static_cast<float>(i0);
        return i0;
    };
    thread_pool().parallel_for(in.n * in.c, 1, [&](int64_t begin, int64_t end) {
        for (int64_t plane = begin; plane < end; ++plane) {
            const float* xp = x.f32() + plane * in.h * in.w;  // [h, w]
            float* yp = y.f32() + plane * out_h * out_w;      // [out_h, out_w]
            for (int64_t oy = 0; oy < out_h; ++oy) {
                float fy = 0.0f;
                const int64_t y0 = source(oy, scale_h, in.h, fy), y1 = y0 + (y0 < in.h - 1 ? 1 : 0);
                for (int64_t ox = 0; ox < out_w; ++ox) {
                    float fx = 0.0f;
                    const int64_t x0 = source(ox, scale_w, in.w, fx), x1 = x0 + (x0 < in.w - 1 ? 1 : 0);
                    const float top = (1.0f - fx) * xp[y0 * in.w + x0] + fx * xp[y0 * in.w + x1];
                    const float bottom = (1.0f - fx) * xp[y1 * in.w + x0] + fx * xp[y1 * in.w + x1];
                    yp[oy * out_w + ox] = mode == InterpolateMode::Nearest ? xp[y0 * in.w + x0]
                                                                           : (1.0f - fy) * top + fy * bottom;
                }
            }
        }
    });
    return y;
}

void CpuVisionBackend::apply_activation(Tensor& x, Activation act) {
    check_f32(x, "apply_activation", "x");
    if (act == Activation::GeluTanh) {
        gelu_tanh(x);  // the same values as the products' GELU
        return;
    }
    if (act == Activation::Swiglu) {
        activation_value(act, 0.0f);  // throws
    }
    float* xd = x.f32();
    thread_pool().parallel_for(x.n_elements(), 1 << 14, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            xd[i] = activation_value(act, xd[i]);
        }
    });
}

Tensor CpuVisionBackend::multiply(const Tensor& x, const Tensor& y, Activation y_act) {
    check_multiply(x, y);
    Tensor out = alloc(x.shape);
    thread_pool().parallel_for(x.n_elements(), 1 << 14, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            out.f32()[i] = x.f32()[i] * activation_value(y_act, y.f32()[i]);
        }
    });
    return out;
}

void CpuVisionBackend::softmax(Tensor& x) {
    check_softmax(x);
    const int64_t d = x.shape.back();
    thread_pool().parallel_for(x.n_elements() / d, 1, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
            float* row = x.f32() + r * d;  // [d]
            const float max = *std::max_element(row, row + d);
            double sum = 0.0;
            for (int64_t i = 0; i < d; ++i) {
                row[i] = std::exp(row[i] - max);
                sum += row[i];
            }
            const auto inv = static_cast<float>(1.0 / sum);
            for (int64_t i = 0; i < d; ++i) {
                row[i] *= inv;
            }
        }
    });
}

Tensor CpuVisionBackend::batched_products(const Tensor& a, const Tensor& b) {
    const std::vector<int64_t> shape = check_batched_products(a, b);
    const int64_t g = shape[0], m = shape[1], n = shape[2], k = a.shape[2];
    Tensor out = alloc(shape);  // [g, m, n], zeros
    for (int64_t i = 0; i < g && m * n > 0; ++i) {
        const Tensor part = linear(a.view(i * m * k, {m, k}), b.view(i * n * k, {n, k}), nullptr);  // [m, n]
        std::memcpy(out.f32() + i * m * n, part.f32(), static_cast<size_t>(m * n) * sizeof(float));
    }
    return out;
}

Tensor CpuVisionBackend::permute(const Tensor& x, std::span<const int> axes) {
    Tensor y = with_dtype(alloc(check_permute(x, axes)), x.dtype);
    const size_t rank = axes.size();
    std::vector<int64_t> in_strides(rank, 1), strides(rank);  // strides[i]: x's stride of y's dimension i
    for (size_t d = rank; d-- > 1;) {
        in_strides[d - 1] = in_strides[d] * x.shape[d];
    }
    for (size_t i = 0; i < rank; ++i) {
        strides[i] = in_strides[static_cast<size_t>(axes[i])];
    }
    const auto* src = static_cast<const uint32_t*>(x.buffer->data()) + x.offset;  // float or int32 bits
    auto* dst = static_cast<uint32_t*>(y.buffer->data());
    thread_pool().parallel_for(y.n_elements(), 1 << 12, [&](int64_t begin, int64_t end) {
        for (int64_t e = begin; e < end; ++e) {
            int64_t rest = e, offset = 0;
            for (size_t i = rank; i-- > 0;) {
                offset += rest % y.shape[i] * strides[i];
                rest /= y.shape[i];
            }
            dst[e] = src[offset];
        }
    });
    return y;
}

Tensor CpuVisionBackend::concat(std::span<const Tensor> parts, int axis) {
    Tensor y = alloc(check_concat(parts, axis));
    y.dtype = parts.front().dtype;
    const auto outer =
        std::accumulate(y.shape.begin(), y.shape.begin() + axis, int64_t{1}, std::multiplies<>());
    const int64_t out_inner = y.n_elements() / std::max<int64_t>(outer, 1);
    auto* dst = static_cast<uint32_t*>(y.buffer->data());
    int64_t column = 0;  // where the part starts within a block of out_inner
    for (const Tensor& part : parts) {
        const int64_t inner = outer > 0 ? part.n_elements() / outer : 0;
        const auto* src = static_cast<const uint32_t*>(part.buffer->data()) + part.offset;
        for (int64_t o = 0; o < outer; ++o) {
            std::copy_n(src + o * inner, inner, dst + o * out_inner + column);
        }
        column += inner;
    }
    return y;
}

Tensor CpuVisionBackend::grid_sample(const Tensor& x, const Tensor& grid) {
    Tensor y = alloc(check_grid_sample(x, grid));
    const Nchw in = x.nchw(), out = y.nchw();
    const int64_t n_pos = out.h * out.w;
    thread_pool().parallel_for(in.n * n_pos, 64, [&](int64_t begin, int64_t end) {
        for (int64_t task = begin; task < end; ++task) {
            const int64_t img = task / n_pos, pos = task % n_pos;
            const float* g = grid.f32() + task * 2;  // (x, y)
            // align_corners=False: -1 and 1 are the outer edges of the corner pixels.
            const float ix = ((g[0] + 1.0f) * static_cast<float>(in.w) - 1.0f) / 2.0f;
            const float iy = ((g[1] + 1.0f) * static_cast<float>(in.h) - 1.0f) / 2.0f;
            for (int64_t c = 0; c < in.c; ++c) {
                const float* plane = x.f32() + (img * in.c + c) * in.h * in.w;
                y.f32()[(img * in.c + c) * n_pos + pos] = bilinear_zero_padded(plane, in.h, in.w, 1, ix, iy);
            }
        }
    });
    return y;
}

Tensor CpuVisionBackend::multi_scale_deformable_attention(const Tensor& value,
                                                          std::span<const FeatureLevel> levels,
                                                          const Tensor& sampling_locations,
                                                          const Tensor& attention_weights) {
    Tensor out =
        alloc(check_multi_scale_deformable_attention(value, levels, sampling_locations, attention_weights));
    const int64_t s = value.shape[1], n_head = value.shape[2], d_head = value.shape[3];
    const int64_t n_q = sampling_locations.shape[1], n_levels = sampling_locations.shape[3];
    const int64_t n_points = sampling_locations.shape[4];
    thread_pool().parallel_for(value.shape[0] * n_q * n_head, 4, [&](int64_t begin, int64_t end) {
        for (int64_t task = begin; task < end; ++task) {  // (image, query, head)
            const int64_t img = task / (n_q * n_head), h = task % n_head;
            float* acc = out.f32() + task * d_head;  // [d_head]
            for (int64_t l = 0; l < n_levels; ++l) {
                const FeatureLevel& lv = levels[static_cast<size_t>(l)];
                // The level's map of head h: element (y, x, d) at base[(y * width + x) * n_head * d_head +
                // d].
                const float* base = value.f32() + ((img * s + lv.start) * n_head + h) * d_head;
                for (int64_t pt = 0; pt < n_points; ++pt) {
                    const int64_t sample = (task * n_levels + l) * n_points + pt;
                    const float* loc = sampling_locations.f32() + sample * 2;  // (x, y) in [0, 1]
                    const float a = attention_weights.f32()[sample];
                    const float ix = loc[0] * static_cast<float>(lv.width) - 0.5f;
                    const float iy = loc[1] * static_cast<float>(lv.height) - 0.5f;
                    for (int64_t d = 0; d < d_head; ++d) {
                        acc[d] +=
                            a * bilinear_zero_padded(base + d, lv.height, lv.width, n_head * d_head, ix, iy);
                    }
                }
            }
        }
    });
    return out;
}

Tensor CpuVisionBackend::mask_boxes(const Tensor& x) {
    const std::vector<int64_t> shape = check_mask_boxes(x);
    Tensor out = alloc(shape);
    const int64_t h = x.dim(-2), w = x.dim(-1);
    thread_pool().parallel_for(x.n_elements() / (h * w), 1, [&](int64_t begin, int64_t end) {
        for (int64_t m = begin; m < end; ++m) {
            const float* map = x.f32() + m * h * w;  // [h, w]
            int64_t x0 = w, y0 = h, x1 = -1, y1 = -1;
            for (int64_t y = 0; y < h; ++y) {
                for (int64_t c = 0; c < w; ++c) {
                    if (map[y * w + c] > 0.0f) {
                        x0 = std::min(x0, c);
                        x1 = std::max(x1, c);
                        y0 = std::min(y0, y);
                        y1 = std::max(y1, y);
                    }
                }
            }
            mask_box_from_extent(x0, y0, x1, y1, h, w, out.f32() + m * 4);
        }
    });
    return out;
}

Tensor CpuVisionBackend::sigmoid_bits(const Tensor& x, float threshold) {
    const std::vector<int64_t> shape = check_sigmoid_bits(x);
    Tensor out = with_dtype(alloc(shape), ScalarType::I32);  // [..., words]
    const int64_t n = x.shape.back(), n_words = shape.back();
    thread_pool().parallel_for(x.n_elements() / std::max<int64_t>(n, 1), 1, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
            const float* row = x.f32() + r * n;
            auto* words = reinterpret_cast<uint32_t*>(out.i32() + r * n_words);
            for (int64_t w = 0; w < n_words; ++w) {
                uint32_t word = 0;
                for (int64_t b = 0; b < 32 && w * 32 + b < n; ++b) {
                    word |= 1.0f / (1.0f + std::exp(-row[w * 32 + b])) > threshold ? uint32_t{1} << b : 0U;
                }
                words[w] = word;
            }
        }
    });
    return out;
}

Tensor CpuVisionBackend::box_sample_locations(const Tensor& boxes, const Tensor& offsets, int64_t n_points) {
    Tensor out = alloc(check_box_sample_locations(boxes, offsets, n_points));  // [r, s, 2]
    const int64_t n_samples = offsets.shape[1];
    const auto points = static_cast<float>(n_points);
    for (int64_t r = 0; r < boxes.shape[0]; ++r) {
        const float* box = boxes.f32() + r * 4;
        for (int64_t k = 0; k < n_samples; ++k) {
            const int64_t at = (r * n_samples + k) * 2;
            out.f32()[at] = box_sample_location(box[0], box[2], offsets.f32()[at], points);
            out.f32()[at + 1] = box_sample_location(box[1], box[3], offsets.f32()[at + 1], points);
        }
    }
    return out;
}

void CpuVisionBackend::refine_boxes(Tensor& boxes, const Tensor& delta) {
    check_refine_boxes(boxes, delta);
    for (int64_t i = 0; i < boxes.n_elements(); ++i) {
        boxes.f32()[i] = refined_box_value(boxes.f32()[i], delta.f32()[i]);
    }
}

Tensor CpuVisionBackend::pair_relations(const Tensor& boxes, float scale) {
    Tensor out = alloc(check_pair_relations(boxes));  // [n, t, t, 4]
    const int64_t t = boxes.shape[1];
    thread_pool().parallel_for(boxes.shape[0] * t, 16, [&](int64_t begin, int64_t end) {
        for (int64_t row = begin; row < end; ++row) {  // (page, source token)
            const float* page = boxes.f32() + row / t * t * 4;
            for (int64_t j = 0; j < t; ++j) {
                pair_relation(boxes.f32() + row * 4, page + j * 4, scale, out.f32() + (row * t + j) * 4);
            }
        }
    });
    return out;
}

Tensor CpuVisionBackend::sinusoid(const Tensor& x, std::span<const float> freqs) {
    const std::vector<int64_t> shape = check_sinusoid(x, freqs);
    Tensor out = alloc(shape);
    const auto n_f = static_cast<int64_t>(freqs.size());
    thread_pool().parallel_for(x.shape[0], 256, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
            float* row = out.f32() + r * 2 * n_f;  // [2 n_f]
            for (int64_t f = 0; f < n_f; ++f) {
                const float angle = x.f32()[r] * freqs[static_cast<size_t>(f)];
                row[f] = std::sin(angle);
                row[n_f + f] = std::cos(angle);
            }
        }
    });
    return out;
}

TopK CpuVisionBackend::top_k(const Tensor& x, int64_t k) {
    const std::vector<int64_t> shape = check_top_k(x, k);
    TopK result{alloc(shape), with_dtype(alloc(shape), ScalarType::I32)};
    const int64_t d = x.shape.back();
    thread_pool().parallel_for(x.n_elements() / d, 1, [&](int64_t begin, int64_t end) {
        std::vector<int32_t> order(static_cast<size_t>(d));
        for (int64_t r = begin; r < end; ++r) {
            const float* row = x.f32() + r * d;  // [d]
            std::iota(order.begin(), order.end(), 0);
            // Larger first, NaN above every number, equal values in column order.
            std::partial_sort(order.begin(), order.begin() + k, order.end(), [row](int32_t i, int32_t j) {
                const float a = row[i], b = row[j];
                if (std::isnan(a) != std::isnan(b)) {
                    return std::isnan(a);
                }
                return a > b || (!(a < b) && i < j);
            });
            for (int64_t i = 0; i < k; ++i) {
                result.values.f32()[r * k + i] = row[order[static_cast<size_t>(i)]];
                result.indices.i32()[r * k + i] = order[static_cast<size_t>(i)];
            }
        }
    });
    return result;
}

}  // namespace folio
