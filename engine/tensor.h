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

struct Tensor {
    std::vector<int64_t> shape;
    std::shared_ptr<Buffer> buffer;

    int64_t n_elements() const {
        return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
    }
    int64_t rows() const { return shape.empty() ? 0 : shape.front(); }
    int64_t row_size() const {
        return shape.empty()
                   ? 0
                   : std::accumulate(shape.begin() + 1, shape.end(), int64_t{1}, std::multiplies<>());
    }
    bool empty() const { return buffer == nullptr; }
    float* f32() const { return static_cast<float*>(buffer->data()); }
};

std::string shape_string(const std::vector<int64_t>& shape);

}  // namespace folio
