#include "tensor.h"

#include "error.h"

namespace folio {

std::string shape_string(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) {
        s += (i ? ", " : "") + std::to_string(shape[i]);
    }
    return s + "]";
}

Tensor Tensor::view(int64_t first, std::vector<int64_t> view_shape) const {
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
