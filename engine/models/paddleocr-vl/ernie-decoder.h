// The ERNIE-4.5 language model of PaddleOCR-VL: the Llama-style decoder under model.language_model, its
// rotary positions the 3D multimodal RoPE (temporal, height and width in contiguous sections).
#pragma once

#include "engine/models/llama-decoder.h"
#include "engine/models/paddleocr-vl/config.h"

namespace folio {

class ErnieDecoder : public LlamaDecoder {
public:
    ErnieDecoder(WeightLoader& weights, const TextConfig& config);
};

}  // namespace folio
