// ERNIE-4.5-VL's tensors as the model reads them from a checkpoint in transformers' saved layout
// (model.layers.*, model.vision_model.*, model.resampler_model.*; every expert of both pools under
// mlp.experts.N, text experts first; each pool's router stored [hidden, experts]). The source hands the
// routers transposed to [experts, hidden] and the q and k projections' rows of each head in rotate-half
// order (the checkpoint's rotary pairs are adjacent values).
#pragma once

#include <memory>

#include "engine/files/safetensors.h"
#include "engine/files/weight-source.h"
#include "engine/models/ernie45-vl/config.h"

namespace folio {

std::unique_ptr<WeightSource> make_ernie45_vl_weight_source(const TensorStore& store,
                                                            const Ernie45VlConfig& config);

}  // namespace folio
