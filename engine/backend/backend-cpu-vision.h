// The CPU reference backend's vision operations (backend-cpu-vision.cpp), a base of the CPU backend: float32,
// multi-threaded over the derived backend's thread pool, written for clarity first.
#pragma once

#include "engine/backend/backend.h"
#include "engine/common/thread-pool.h"

namespace folio {

class CpuVisionBackend : public Backend {
public:
    Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor* b, const Conv2dParams& p) override;
    Tensor pool2d(const Tensor& x, const Pool2dParams& p) override;
    Tensor pad2d(const Tensor& x, const std::array<int64_t, 4>& pads) override;
    Tensor interpolate2d(const Tensor& x, int64_t out_h, int64_t out_w, InterpolateMode mode) override;
    void apply_activation(Tensor& x, Activation act) override;
    Tensor multiply(const Tensor& x, const Tensor& y, Activation y_act) override;
    void softmax(Tensor& x) override;
    Tensor batched_products(const Tensor& a, const Tensor& b) override;
    Tensor permute(const Tensor& x, std::span<const int> axes) override;
    Tensor concat(std::span<const Tensor> parts, int axis) override;
    Tensor grid_sample(const Tensor& x, const Tensor& grid) override;
    Tensor multi_scale_deformable_attention(const Tensor& value, std::span<const FeatureLevel> levels,
                                            const Tensor& sampling_locations,
                                            const Tensor& attention_weights) override;
    TopK top_k(const Tensor& x, int64_t k) override;
    Tensor mask_boxes(const Tensor& x) override;
    Tensor sigmoid_bits(const Tensor& x, float threshold) override;
    Tensor box_sample_locations(const Tensor& boxes, const Tensor& offsets, int64_t n_points) override;
    void refine_boxes(Tensor& boxes, const Tensor& delta) override;
    Tensor pair_relations(const Tensor& boxes, float scale) override;
    Tensor sinusoid(const Tensor& x, std::span<const float> freqs) override;

protected:
    // The workers the operations split their work between.
    virtual ThreadPool& thread_pool() = 0;
};

}  // namespace folio
