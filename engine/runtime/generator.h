// One request through the model on its own: images through the vision encoder and projector, the prompt
// through one prefill, then token by token decoding until a stop token, max_tokens or cancellation. It runs
// the serving engine with a single sequence, so it computes exactly what a batched request computes.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "engine/backend/sampling.h"
#include "engine/image/image-preprocess.h"
#include "engine/runtime/engine-core.h"
#include "engine/runtime/model.h"
#include "engine/runtime/sequence.h"

namespace folio {

struct GenerateParams {
    SamplingParams sampling;
    int max_tokens = 256;
    std::vector<int32_t> stop_ids;  // the model's eos ids when empty
    KvCacheDtype kv_cache_dtype = KvCacheDtype::Auto;
};

struct GenerateResult {
    std::vector<int32_t> tokens;  // generated tokens, the stop token included when one ended the request
    FinishReason finish = FinishReason::Length;
    int64_t n_prompt_tokens = 0;
    int64_t n_image_patches = 0;
    double vision_seconds = 0.0;
    double prefill_seconds = 0.0;
    double decode_seconds = 0.0;
};

// on_token is called with each new token; returning false cancels the request.
GenerateResult generate(GenerativeModel& model, const PromptTokens& prompt, const PreprocessedImages& images,
                        const GenerateParams& params, const std::function<bool(int32_t)>& on_token);

}  // namespace folio
