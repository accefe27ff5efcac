// Where a model's weights come from: a checkpoint on disk (each model's files make their source, as
// models/paddleocr-vl/model-files does), or seeded random values for benchmarks and tests of the full-size
// architecture.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace folio {

class WeightSource {
public:
    virtual ~WeightSource() = default;
    // The tensor with transformers' (canonical) name, as float32, checked against the expected shape.
    virtual std::vector<float> load(const std::string& name, const std::vector<int64_t>& shape) = 0;
    // The same values written into out, which holds the shape's elements: a source that converts in place
    // overrides it, so that a large layer's tensors go straight into its staging buffer.
    virtual void load_into(const std::string& name, const std::vector<int64_t>& shape, std::span<float> out);
    // Whether the source has the tensor (optional tensors such as an untied lm_head).
    virtual bool has(const std::string& name) const = 0;
};

class TensorStore;
class ThreadPool;
struct TensorView;

// The tensor's elements as float32 (to_f32), converted on the pool's threads: the conversion reads the mapped
// file, so a checkpoint is then read from disk by every thread, where one thread read it alone.
std::vector<float> to_f32(const TensorView& tensor, ThreadPool& pool);
// The same into out, which holds the tensor's elements.
void to_f32(const TensorView& tensor, ThreadPool& pool, std::span<float> out);

// The store's tensor `name`, which must have `shape` as the model reads config.json: an error names the
// folder, the tensor and both shapes.
const TensorView& shape_checked(const TensorStore& store, const std::string& name,
                                const std::vector<int64_t>& shape);

// The store's tensors as they are saved (a checkpoint whose layout is the model's own, as Llama's is); a
// tensor of another shape than the model expects is an error naming the folder, the tensor and both shapes.
std::unique_ptr<WeightSource> make_store_weight_source(const TensorStore& store);

// Seeded random values of about a normal distribution: deviation std about 0 for matrices and biases, 0.1
// about 1 for norm weights (a 1-D tensor not named .bias).
std::unique_ptr<WeightSource> make_random_weight_source(uint64_t seed, float std = 0.02f);

}  // namespace folio
