// A tensor owned by a backend: a shape and a reference-counted buffer in the backend's memory.
#pragma once

#include <cstdint>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

namespace folio {

// Memory a backend allocated; the backend that made it frees it.
struct Buffer {
    virtual ~Buffer() = default;
    virtual void* data() = 0;
    virtual size_t n_bytes() const = 0;
};

// Element types. Int32 tensors carry indices (token ids, positions, cache rows, block tables) that
// operations read on the backend's device; bfloat16 (the upper half of a float32's bits) and Q8 are storage
// types of key/value caches (Backend::kv_dtype). A Q8 tensor holds signed 8-bit levels, then (from a 16-byte
// boundary) one float32 scale for each row of its last dimension: element e of row r is level e times
// scale r, the levels symmetric in [-127, 127].
enum class ScalarType { F32, I32, BF16, Q8 };

constexpr int64_t element_size(ScalarType dtype) {
    return dtype == ScalarType::BF16 ? 2 : dtype == ScalarType::Q8 ? 1 : 4;
}

// Bytes of a Q8 tensor's levels before its scales: n_elements rounded up to 16.
constexpr int64_t q8_scales_offset(int64_t n_elements) {
    return (n_elements + 15) / 16 * 16;
}

const char* dtype_name(ScalarType dtype);

// A float32 rounded to bfloat16 bits (to the nearest, ties to even; a NaN stays a NaN), and back.
uint16_t to_bf16(float v);
float from_bf16(uint16_t h);

// Rows of row_size floats as a Q8 tensor holds them: each row's scale its largest magnitude over 127, each
// level the value times 127 over that magnitude rounded to the nearest (ties to even). A row of zeros has
// scale 0.  values [n_rows * row_size]  ->  levels [n_rows * row_size], scales [n_rows]
void quantize_q8_rows(const float* values, int64_t n_rows, int64_t row_size, int8_t* levels, float* scales);
// The values a Q8 tensor's levels and scales stand for.  [n_rows * row_size]
std::vector<float> dequantize_q8_rows(const int8_t* levels, const float* scales, int64_t n_rows,
                                      int64_t row_size);

// The sizes of a 4-D tensor [n, c, h, w]: a batch of images or feature maps, channels first.
struct Nchw {
    int64_t n = 0;
    int64_t c = 0;
    int64_t h = 0;
    int64_t w = 0;
};

struct Tensor {
    std::vector<int64_t> shape;
    std::shared_ptr<Buffer> buffer;
    ScalarType dtype = ScalarType::F32;
    int64_t offset = 0;  // elements of the buffer before this tensor's first (a view into a larger buffer)

    int64_t n_elements() const {
        return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
    }
    int64_t rows() const { return shape.empty() ? 0 : shape.front(); }
    int64_t row_size() const {
        return shape.empty()
                   ? 0
                   : std::accumulate(shape.begin() + 1, shape.end(), int64_t{1}, std::multiplies<>());
    }
    // The size of dimension axis, counted from the end where it is negative.
    int64_t dim(int64_t axis) const;
    // The sizes of a 4-D tensor; throws for any other rank.
    Nchw nchw() const;
    bool empty() const { return buffer == nullptr; }
    float* f32() const { return static_cast<float*>(buffer->data()) + offset; }
    int32_t* i32() const { return static_cast<int32_t*>(buffer->data()) + offset; }
    uint16_t* bf16() const { return static_cast<uint16_t*>(buffer->data()) + offset; }
    // A Q8 tensor's levels and scales (a Q8 tensor is never a view: offset 0).
    int8_t* q8_levels() const { return static_cast<int8_t*>(buffer->data()); }
    float* q8_scales() const {
        return reinterpret_cast<float*>(static_cast<char*>(buffer->data()) + q8_scales_offset(n_elements()));
    }
    int64_t n_bytes() const {
        if (dtype == ScalarType::Q8) {
            const int64_t last = shape.empty() ? 1 : shape.back();
            return q8_scales_offset(n_elements()) + (last > 0 ? n_elements() / last : 0) * 4;
        }
        return n_elements() * element_size(dtype);
    }
    // Whether the buffer holds every element of the tensor.
    bool fits_buffer() const {
        if (dtype == ScalarType::Q8) {
            return buffer != nullptr && offset == 0 && n_bytes() <= static_cast<int64_t>(buffer->n_bytes());
        }
        return buffer != nullptr && offset >= 0 &&
               (offset + n_elements()) * element_size(dtype) <= static_cast<int64_t>(buffer->n_bytes());
    }

    // The elements [first, first + product(shape)) of this tensor as a tensor of that shape, sharing the
    // buffer.
    Tensor view(int64_t first, std::vector<int64_t> view_shape) const;
};

std::string shape_string(const std::vector<int64_t>& shape);

}  // namespace folio
