// The fixture prompts with the reference's inputs, and a prefill of one of them through the paged cache, for
// the model tests of every backend.
#pragma once

#include <numeric>
#include <string>
#include <vector>

#include "engine/image/image-preprocess.h"
#include "engine/models/paddleocr-vl/chat-prompt.h"
#include "engine/models/paddleocr-vl/paddleocr-vl.h"
#include "engine/models/paddleocr-vl/positions.h"
#include "engine/runtime/kv-cache.h"
#include "fixture-reference.h"
#include "reversed-blocks.h"

namespace folio::testing {

struct PromptCase {
    std::string key;
    std::vector<std::string> images;
    std::string task;
};

inline const std::vector<PromptCase>& prompt_cases() {
    static const std::vector<PromptCase> cases = {{"one_image", {"tall"}, "OCR:"},
                                                  {"two_images", {"wide", "small"}, "Table Recognition:"}};
    return cases;
}

inline std::string prompt_case_name(const ::testing::TestParamInfo<PromptCase>& info) {
    return info.param.key;
}

// Reference pixels and grids of the prompt's images, concatenated in order.
inline PreprocessedImages reference_images(const Reference& ref, const PromptCase& c) {
    PreprocessedImages out;
    for (const auto& name : c.images) {
        const auto px = ref.f32("pixel_values." + name);
        out.pixel_values.insert(out.pixel_values.end(), px.begin(), px.end());
        const auto g = ref.i64("grid_thw." + name);
        out.grids.push_back({g[0], g[1], g[2]});
    }
    return out;
}

inline ChatPromptTokens reference_prompt(const Reference& ref, const PromptCase& c, int32_t image_token_id) {
    ChatPromptTokens prompt;
    for (const int64_t id : ref.i64(c.key + ".input_ids")) {
        prompt.ids.push_back(static_cast<int32_t>(id));
        prompt.modality.push_back(id == image_token_id ? TokenModality::Image : TokenModality::Text);
    }
    return prompt;
}

// Logits at every prompt position, the images encoded and in place; the cache in blocks of 8 slots in
// reverse order, so that attention must follow the block table.  ->  [n_prompt, vocab]
inline Tensor prompt_logits(GenerativeModel& model, const ChatPromptTokens& prompt,
                            const PreprocessedImages& images) {
    Backend& backend = model.backend();
    Tensor embeds = model.embed(prompt.ids);
    const std::span<const float> pixels(images.pixel_values);
    const Tensor features = model.encode_images(std::span(&pixels, 1), images.grids);
    std::vector<int64_t> rows;
    for (size_t i = 0; i < prompt.ids.size(); ++i) {
        if (is_media(prompt.modality[i])) {
            rows.push_back(static_cast<int64_t>(i));
        }
    }
    backend.scatter_rows(embeds, rows, features);
    const PromptPositions positions = model.prompt_positions(prompt.modality, images.grids);
    const auto n = static_cast<int64_t>(prompt.ids.size());
    const int64_t block_size = 8, n_blocks = (n + block_size - 1) / block_size;
    PagedKvCache cache(backend, model.kv_cache_params(n_blocks, block_size));
    const KvBatch batch = reversed_block_batch(n, block_size);
    const std::vector<int32_t> flat(positions.pos.begin(), positions.pos.end());  // [n, 3]
    return model.logits(model.forward_text(std::move(embeds), flat, prompt.modality, cache, batch));
}

}  // namespace folio::testing
