#include "engine/files/weight-source.h"

#include <algorithm>
#include <cmath>

#include "engine/backend/tensor.h"
#include "engine/common/error.h"
#include "engine/common/thread-pool.h"
#include "engine/files/safetensors.h"

namespace folio {

namespace {

// Each value follows from the source's seed, the tensor's name and the value's index alone (a counter-based
// draw), so that the values fill in parallel, do not depend on how many threads there are, and a tensor has
// the same values whatever else is loaded (a tensor-parallel rank other than 0 loads no embedding table or
// vision encoder). A value is the sum of four 16-bit uniforms of one 64-bit hash, centred and scaled to the
// wanted deviation: near enough to a normal for random weights (bounded at 3.46 deviations), and one hash a
// value, where a normal draw from a seeded engine took most of a full-size model's load.
class RandomWeightSource final : public WeightSource {
public:
    RandomWeightSource(uint64_t seed, float std) : seed_(seed), std_(std), pool_(0) {}

    std::vector<float> load(const std::string& name, const std::vector<int64_t>& shape) override {
        int64_t n = 1;
        for (const int64_t d : shape) {
            n *= d;
        }
        std::vector<float> values(static_cast<size_t>(n));
        load_into(name, shape, values);
        return values;
    }

    void load_into(const std::string& name, const std::vector<int64_t>& shape,
                   std::span<float> out) override {
        int64_t n = 1;
        for (const int64_t d : shape) {
            n *= d;
        }
        if (static_cast<int64_t>(out.size()) != n) {
            fail("tensor '", name, "': ", n, " values for ", out.size(), " places");
        }
        const bool is_bias = name.ends_with(".bias");
        const bool is_norm = shape.size() == 1 && !is_bias;
        const float mean = is_norm ? 1.0f : 0.0f;
        const float std = is_norm ? 0.1f : std_;
        const uint64_t key = mix(seed_ ^ mix(name_hash(name)));
        // The sum of four uniforms on [0, 65535] has mean 131070 and deviation 65536 / sqrt(3).
        const float scale = std * std::sqrt(3.0f) / 65536.0f;
        pool_.parallel_for(n, kGrain, [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) {
                const uint64_t bits = mix(key + static_cast<uint64_t>(i) * 0x9e3779b97f4a7c15ULL);
                const auto sum = static_cast<float>((bits & 0xffff) + ((bits >> 16) & 0xffff) +
                                                    ((bits >> 32) & 0xffff) + (bits >> 48));
                out[static_cast<size_t>(i)] = mean + (sum - 131070.0f) * scale;
            }
        });
    }

    bool has(const std::string& /*name*/) const override { return false; }

private:
    static constexpr int64_t kGrain = int64_t{1} << 16;  // values a task fills at least

    // FNV-1a over the name's bytes.
    static uint64_t name_hash(const std::string& name) {
        uint64_t h = 0xcbf29ce484222325ULL;
        for (const char c : name) {
            h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ULL;
        }
        return h;
    }

    // splitmix64's finaliser: nearby inputs give unrelated seeds.
    static uint64_t mix(uint64_t x) {
        x += 0x9e3779b97f4a7c15ULL;
        x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
        x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
        return x ^ (x >> 31);
    }

    uint64_t seed_;
    float std_;
    ThreadPool pool_;
};

}  // namespace

const TensorView& shape_checked(const TensorStore& store, const std::string& name,
                                const std::vector<int64_t>& shape) {
    const TensorView& view = store.get(name);
    if (view.shape != shape) {
        fail(store.dir().string(), ": tensor '", name, "' has shape ", shape_string(view.shape),
             ", expected ", shape_string(shape), " from config.json");
    }
    return view;
}

namespace {

class StoreWeightSource final : public WeightSource {
public:
    explicit StoreWeightSource(const TensorStore& store) : store_(store), pool_(0) {}

    std::vector<float> load(const std::string& name, const std::vector<int64_t>& shape) override {
        return to_f32(shape_checked(store_, name, shape), pool_);
    }
    void load_into(const std::string& name, const std::vector<int64_t>& shape,
                   std::span<float> out) override {
        to_f32(shape_checked(store_, name, shape), pool_, out);
    }
    bool has(const std::string& name) const override { return store_.find(name) != nullptr; }

private:
    const TensorStore& store_;
    ThreadPool pool_;  // converts each tensor's elements
};

}  // namespace

void WeightSource::load_into(const std::string& name, const std::vector<int64_t>& shape,
                             std::span<float> out) {
    const std::vector<float> values = load(name, shape);
    if (values.size() != out.size()) {
        fail("tensor '", name, "': ", values.size(), " values for ", out.size(), " places");
    }
    std::copy(values.begin(), values.end(), out.begin());
}

void to_f32(const TensorView& tensor, ThreadPool& pool, std::span<float> out) {
    constexpr int64_t kGrain = int64_t{1} << 18;  // elements a task converts at least
    const int64_t n = f32_count(tensor);
    if (static_cast<int64_t>(out.size()) != n) {
        fail("tensor '", tensor.name, "': ", n, " elements for ", out.size(), " places");
    }
    pool.parallel_for(
        n, kGrain, [&](int64_t begin, int64_t end) { to_f32_range(tensor, begin, end, out.data() + begin); });
}

std::vector<float> to_f32(const TensorView& tensor, ThreadPool& pool) {
    std::vector<float> values(static_cast<size_t>(f32_count(tensor)));
    to_f32(tensor, pool, values);
    return values;
}

std::unique_ptr<WeightSource> make_store_weight_source(const TensorStore& store) {
    return std::make_unique<StoreWeightSource>(store);
}

std::unique_ptr<WeightSource> make_random_weight_source(uint64_t seed, float std) {
    return std::make_unique<RandomWeightSource>(seed, std);
}

}  // namespace folio
