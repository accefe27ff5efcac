// The Llama family (model_type llama, LlamaForCausalLM): text chat models in transformers' checkpoint layout
// (deepseek-ai/DeepSeek-R1-Distill-Llama-8B, Llama 3).
#pragma once

#include <memory>

#include "engine/models/model-family.h"

namespace folio {

std::unique_ptr<ModelFamily> make_llama_family();

}  // namespace folio
