#include "engine/runtime/generator.h"

#include <chrono>

#include "engine/common/clock.h"
#include "engine/common/error.h"
#include "engine/runtime/engine-core.h"

namespace folio {

GenerateResult generate(GenerativeModel& model, const PromptTokens& prompt, const PreprocessedImages& images,
                        const GenerateParams& params, const std::function<bool(int32_t)>& on_token) {
    const int64_t n_prompt = static_cast<int64_t>(prompt.ids.size());
    if (n_prompt == 0) {
        fail("empty prompt");
    }
    if (params.max_tokens < 1) {
        fail("max_tokens must be at least 1, got ", params.max_tokens);
    }
    const int64_t n_ctx = n_prompt + params.max_tokens;
    const int64_t max_context = model.limits().max_context;
    if (n_ctx > max_context) {
        fail("prompt of ", n_prompt, " tokens plus ", params.max_tokens,
             " new tokens exceeds the context of ", max_context);
    }
    EngineConfig config;
    config.max_model_len = n_ctx;
    config.max_num_seqs = 1;
    config.max_num_batched_tokens = config.max_model_len;
    config.enable_chunked_prefill = false;
    config.enable_prefix_caching = false;
    config.kv_cache_dtype = params.kv_cache_dtype;
    config.limit_mm_per_prompt = static_cast<int64_t>(images.grids.size());
    config.limit_video_per_prompt = static_cast<int64_t>(images.n_videos());
    config.num_gpu_blocks_override = (config.max_model_len + config.block_size - 1) / config.block_size;
    EngineCore engine(model, config);

    Request request;
    request.prompt = prompt;
    request.images = images;
    request.sampling = params.sampling;
    request.max_tokens = params.max_tokens;
    request.stop_ids = params.stop_ids;
    const int64_t id = engine.submit(std::move(request));

    GenerateResult result;
    result.n_prompt_tokens = n_prompt;
    result.n_image_patches = images.n_patches();
    const auto start = std::chrono::steady_clock::now();
    double first_token_seconds = 0.0;
    while (engine.has_unfinished()) {
        for (const RequestOutput& out : engine.step()) {
            if (out.id != id) {
                continue;
            }
            for (const int32_t token : out.tokens) {
                if (result.tokens.empty()) {
                    first_token_seconds = seconds_since(start);
                }
                result.tokens.push_back(token);
                if (!on_token(token)) {
                    engine.cancel(id);
                }
            }
            if (out.finish) {
                result.finish = *out.finish;
            }
        }
    }
    const double total = seconds_since(start);
    result.vision_seconds = engine.stats().runner.vision_seconds;
    result.prefill_seconds = first_token_seconds - result.vision_seconds;
    result.decode_seconds = total - first_token_seconds;
    return result;
}

}  // namespace folio
