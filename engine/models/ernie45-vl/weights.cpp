#include "engine/models/ernie45-vl/weights.h"

#include <string>
#include <string_view>

#include "engine/common/error.h"
#include "engine/common/thread-pool.h"
#include "engine/files/safetensors.h"
#include "engine/runtime/rope.h"

namespace folio {

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

class Ernie45VlWeightSource final : public WeightSource {
public:
    Ernie45VlWeightSource(const TensorStore& store, const Ernie45VlConfig& config)
        : store_(store), head_order_(adjacent_to_half_rows(config.text.head_dim)), pool_(0) {}

    // The tensors stored as the model reads them (all but the routers and the q and k projections: the
    // experts, most of the bytes) are converted straight into out.
    void load_into(const std::string& name, const std::vector<int64_t>& shape,
                   std::span<float> out) override {
        if (router(name) || reordered(name)) {
            WeightSource::load_into(name, shape, out);
            return;
        }
        to_f32(shape_checked(store_, name, shape), pool_, out);
    }

    std::vector<float> load(const std::string& name, const std::vector<int64_t>& shape) override {
        const bool is_router = router(name);
        const std::vector<int64_t> stored =
            is_router && shape.size() == 2 ? std::vector<int64_t>{shape[1], shape[0]} : shape;
        std::vector<float> values = to_f32(shape_checked(store_, name, stored), pool_);
        if (is_router) {
            return transposed(values, stored[0], stored[1]);
        }
        if (reordered(name)) {
            return heads_reordered(values, shape);
        }
        return values;
    }
    bool has(const std::string& name) const override { return store_.find(name) != nullptr; }

private:
    static bool router(const std::string& name) {
        return ends_with(name, ".mlp.gate.weight") || ends_with(name, ".mlp.gate.weight_1");
    }
    static bool reordered(const std::string& name) {
        return name.find(".self_attn.q_proj.") != std::string::npos ||
               name.find(".self_attn.k_proj.") != std::string::npos;
    }

    static std::vector<float> transposed(const std::vector<float>& v, int64_t rows, int64_t cols) {
        std::vector<float> t(v.size());
        for (int64_t r = 0; r < rows; ++r) {
            for (int64_t c = 0; c < cols; ++c) {
                t[static_cast<size_t>(c * rows + r)] = v[static_cast<size_t>(r * cols + c)];
            }
        }
        return t;
    }

    // Each head's rows (a weight's rows of its input size, or a bias's single values) in rotate-half order.
    std::vector<float> heads_reordered(const std::vector<float>& v, const std::vector<int64_t>& shape) const {
        const auto hd = static_cast<int64_t>(head_order_.size());
        const int64_t n_rows = shape.at(0);
        const int64_t row = shape.size() > 1 ? shape[1] : 1;
        if (n_rows % hd != 0) {
            fail(store_.dir().string(), ": ", n_rows, " rows of a q or k projection are not heads of ", hd);
        }
        std::vector<float> out(v.size());
        for (int64_t h = 0; h < n_rows / hd; ++h) {
            for (int64_t j = 0; j < hd; ++j) {
                const int64_t from = h * hd + head_order_[static_cast<size_t>(j)];
                std::copy_n(v.begin() + from * row, row, out.begin() + (h * hd + j) * row);
            }
        }
        return out;
    }

    const TensorStore& store_;
    std::vector<int64_t> head_order_;
    ThreadPool pool_;  // converts each tensor's elements
};

}  // namespace

std::unique_ptr<WeightSource> make_ernie45_vl_weight_source(const TensorStore& store,
                                                            const Ernie45VlConfig& config) {
    return std::make_unique<Ernie45VlWeightSource>(store, config);
}

}  // namespace folio
