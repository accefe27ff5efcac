#include "engine/files/weight-source.h"

#include <random>

namespace folio {

namespace {

class RandomWeightSource final : public WeightSource {
public:
    RandomWeightSource(uint64_t seed, float std) : rng_(seed), std_(std) {}

    std::vector<float> load(const std::string& name, const std::vector<int64_t>& shape) override {
        int64_t n = 1;
        for (const int64_t d : shape) {
            n *= d;
        }
        std::vector<float> values(static_cast<size_t>(n));
        const bool is_bias = name.ends_with(".bias");
        const bool is_norm = shape.size() == 1 && !is_bias;
        std::normal_distribution<float> normal(0.0f, is_norm ? 0.1f : std_);
        for (float& v : values) {
            v = (is_norm ? 1.0f : 0.0f) + normal(rng_);
        }
        return values;
    }

    bool has(const std::string& /*name*/) const override { return false; }

private:
    std::mt19937_64 rng_;
    float std_;
};

}  // namespace

std::unique_ptr<WeightSource> make_random_weight_source(uint64_t seed, float std) {
    return std::make_unique<RandomWeightSource>(seed, std);
}

}  // namespace folio
