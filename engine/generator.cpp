#include "generator.h"

#include <algorithm>
#include <chrono>

#include "error.h"
#include "kv-cache.h"
#include "paddleocr-vl.h"
#include "rope.h"

namespace folio {

const char* finish_reason_name(FinishReason reason) {
    switch (reason) {
        case FinishReason::Stop:
            return "stop";
        case FinishReason::Length:
            return "length";
        case FinishReason::Cancelled:
            return "cancelled";
    }
    return "unknown";
}

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

GenerateResult generate(PaddleOcrVl& model, const ChatPromptTokens& prompt, const PreprocessedImages& images,
                        const GenerateParams& params, const std::function<bool(int32_t)>& on_token) {
    const ModelConfig& config = model.config();
    Backend& backend = model.backend();
    const int64_t n_prompt = static_cast<int64_t>(prompt.ids.size());
    if (n_prompt == 0) {
        fail("empty prompt");
    }
    if (prompt.is_image.size() != prompt.ids.size()) {
        fail("prompt has ", prompt.ids.size(), " ids but ", prompt.is_image.size(), " image flags");
    }
    if (params.max_tokens < 1) {
        fail("max_tokens must be at least 1, got ", params.max_tokens);
    }
    const int64_t n_ctx = n_prompt + params.max_tokens;
    if (n_ctx > config.text.max_position_embeddings) {
        fail("prompt of ", n_prompt, " tokens plus ", params.max_tokens,
             " new tokens exceeds the context of ", config.text.max_position_embeddings);
    }
    const std::vector<int32_t>& stop_ids =
        params.stop_ids.empty() ? config.text.eos_token_ids : params.stop_ids;
    GenerateResult result;
    result.n_prompt_tokens = n_prompt;
    result.n_image_patches = images.n_patches();

    const MropePositions positions =
        compute_mrope_positions(prompt.is_image, images.grids, config.vision.spatial_merge_size);
    Tensor embeds = model.embed(prompt.ids);  // [n_prompt, hidden]
    if (!images.grids.empty()) {
        const auto start = std::chrono::steady_clock::now();
        const Tensor vision = model.encode_vision(images.pixel_values, images.grids);
        const Tensor features = model.project(vision, images.grids);  // [n_image_tokens, hidden]
        std::vector<int64_t> rows;
        for (int64_t i = 0; i < n_prompt; ++i) {
            if (prompt.is_image[i]) {
                rows.push_back(i);
            }
        }
        if (static_cast<int64_t>(rows.size()) != features.rows()) {
            fail("prompt has ", rows.size(), " image tokens for ", features.rows(), " image features");
        }
        backend.scatter_rows(embeds, rows, features);
        result.vision_seconds = seconds_since(start);
    }

    const TextConfig& tc = config.text;
    KvCache cache(backend, {tc.num_hidden_layers, tc.num_key_value_heads, tc.head_dim, n_ctx});
    Sampler sampler(params.sampling);
    std::vector<int32_t> history(prompt.ids.begin(), prompt.ids.end());

    auto start = std::chrono::steady_clock::now();
    Tensor hidden = model.forward_text(embeds, positions.pos, cache, 0);
    const Tensor last = backend.gather_rows(hidden, std::vector<int64_t>{n_prompt - 1});
    std::vector<float> logits = backend.download(model.logits(last));
    result.prefill_seconds = seconds_since(start);

    start = std::chrono::steady_clock::now();
    for (int64_t step = 0; step < params.max_tokens; ++step) {
        const int32_t token = sampler.sample(logits, history);
        result.tokens.push_back(token);
        history.push_back(token);
        if (!on_token(token)) {
            result.finish = FinishReason::Cancelled;
            break;
        }
        if (std::find(stop_ids.begin(), stop_ids.end(), token) != stop_ids.end()) {
            result.finish = FinishReason::Stop;
            break;
        }
        if (step + 1 == params.max_tokens) {
            result.finish = FinishReason::Length;
            break;
        }
        const int64_t n_past = n_prompt + step;
        const int64_t p = n_past + positions.delta;
        const std::array<int64_t, 3> pos{p, p, p};
        hidden = model.forward_text(model.embed(std::span(&token, 1)), std::span(&pos, 1), cache, n_past);
        logits = backend.download(model.logits(hidden));
    }
    result.decode_seconds = seconds_since(start);
    return result;
}

}  // namespace folio
