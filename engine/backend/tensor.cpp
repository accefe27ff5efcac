#include "engine/backend/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/common/error.h"

namespace folio {

uint16_t to_bf16(float v) {
    uint32_t bits = 0;
    std::memcpy(&bits, &v, sizeof(bits));
    if ((bits & 0x7fffffffU) > 0x7f800000U) {
        return static_cast<uint16_t>((bits >> 16) | 0x40);  // a quiet NaN stays a NaN
    }
    bits += 0x7fffU + ((bits >> 16) & 1U);  // round to nearest, ties to even
    return static_cast<uint16_t>(bits >> 16);
}

float from_bf16(uint16_t h) {
    const uint32_t bits = static_cast<uint32_t>(h) << 16;
    float v = 0.0f;
    std::memcpy(&v, &bits, sizeof(v));
    return v;
}

std::string shape_string(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) {
        s += (i ? ", " : "") + std::to_string(shape[i]);
    }
    return s + "]";
}

const char* dtype_name(ScalarType dtype) {
    switch (dtype) {
        case ScalarType::F32:
            return "float32";
        case ScalarType::I32:
            return "int32";
        case ScalarType::BF16:
            return "bfloat16";
        case ScalarType::Q8:
            return "8-bit levels with scales";
    }
    fail("dtype_name: invalid scalar type ", static_cast<int>(dtype));
}

int64_t Tensor::dim(int64_t axis) const {
    const auto rank = static_cast<int64_t>(shape.size());
    if (axis < -rank || axis >= rank) {
        fail("dimension ", axis, " of a tensor of ", shape_string(shape));
    }
    return shape[static_cast<size_t>(axis < 0 ? axis + rank : axis)];
}

Nchw Tensor::nchw() const {
    if (shape.size() != 4) {
        fail("tensor of ", shape_string(shape), " where [n, c, h, w] was expected");
    }
    return {shape[0], shape[1], shape[2], shape[3]};
}

void quantize_q8_rows(const float* values, int64_t n_rows, int64_t row_size, int8_t* levels, float* scales) {
    for (int64_t r = 0; r < n_rows; ++r) {
        const float* x = values + r * row_size;
        float top = 0.0f;
        for (int64_t i = 0; i < row_size; ++i) {
            top = std::max(top, std::fabs(x[i]));
        }
        const float inverse = top > 0.0f ? 127.0f / top : 0.0f;
        for (int64_t i = 0; i < row_size; ++i) {
            levels[r * row_size + i] =
                static_cast<int8_t>(std::clamp(std::nearbyint(x[i] * inverse), -127.0f, 127.0f));
        }
        scales[r] = top / 127.0f;
    }
}

std::vector<float> dequantize_q8_rows(const int8_t* levels, const float* scales, int64_t n_rows,
                                      int64_t row_size) {
    std::vector<float> values(static_cast<size_t>(n_rows * row_size));
    for (int64_t r = 0; r < n_rows; ++r) {
        for (int64_t i = 0; i < row_size; ++i) {
            values[static_cast<size_t>(r * row_size + i)] =
                static_cast<float>(levels[r * row_size + i]) * scales[r];
        }
    }
    return values;
}

Tensor Tensor::view(int64_t first, std::vector<int64_t> view_shape) const {
    if (dtype == ScalarType::Q8) {
        fail("view of ", shape_string(view_shape), ": a tensor of 8-bit levels with scales has no views");
    }
    Tensor v;
    v.shape = std::move(view_shape);
    v.buffer = buffer;
    v.dtype = dtype;
    v.offset = offset + first;
    if (first < 0 || first + v.n_elements() > n_elements()) {
        fail("view of ", shape_string(v.shape), " at element ", first, " outside a tensor of ",
             shape_string(shape));
    }
    return v;
}

}  // namespace folio
