// The ERNIE-4.5-VL golden fixture (tests/fixtures/ernie45-vl, made by make_ernie45_vl_fixtures.py): the tiny
// model on a backend, the reference tensors and prompts, and the prompt logits a model gives for them.
#pragma once

#include <algorithm>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/common/mapped-file.h"
#include "engine/files/safetensors.h"
#include "engine/models/ernie45-vl/config.h"
#include "engine/models/ernie45-vl/ernie45-vl.h"
#include "engine/models/ernie45-vl/weights.h"
#include "engine/runtime/kv-cache.h"
#include "fixture-reference.h"
#include "reversed-blocks.h"

namespace folio::testing {

inline std::filesystem::path ernie_dir() {
    return fixtures_dir().parent_path() / "ernie45-vl";
}

inline const std::vector<std::string>& ernie_prompt_keys() {
    static const std::vector<std::string> keys = {
        "text", "text_thinking_off", "system_text", "one_image", "two_images", "video", "multi_turn"};
    return keys;
}

// The reference's patches (each 2x2 window's patches one after another) in raster order, as Folio's
// preprocessing gives them.  [n_patches, patch_dim] for the grids, in order
inline std::vector<float> raster_patches(const std::vector<float>& windowed,
                                         const std::vector<ImageGrid>& grids, int64_t patch_dim) {
    std::vector<float> out(windowed.size());
    int64_t base = 0, src = 0;
    for (const ImageGrid& g : grids) {
        for (int64_t t = 0; t < g.t; ++t) {
            for (int64_t wy = 0; wy < g.h / 2; ++wy) {
                for (int64_t wx = 0; wx < g.w / 2; ++wx) {
                    for (int64_t dy = 0; dy < 2; ++dy) {
                        for (int64_t dx = 0; dx < 2; ++dx, ++src) {
                            const int64_t dst = base + (t * g.h + 2 * wy + dy) * g.w + 2 * wx + dx;
                            std::copy_n(windowed.begin() + src * patch_dim, patch_dim,
                                        out.begin() + dst * patch_dim);
                        }
                    }
                }
            }
        }
        base += g.n_patches();
    }
    return out;
}

// Logits at every prompt position of model, the images encoded and in place; the cache in blocks of 8 slots
// in reverse order, so that attention must follow the block table.  ->  [n_prompt, vocab]
inline Tensor ernie_prompt_logits(Backend& backend, GenerativeModel& model, const PromptTokens& p,
                                  const PreprocessedImages& im) {
    Tensor embeds = model.embed(p.ids);
    if (!im.grids.empty()) {
        const std::span<const float> part(im.pixel_values);
        std::vector<int64_t> rows;
        for (size_t i = 0; i < p.ids.size(); ++i) {
            if (is_media(p.modality[i])) {
                rows.push_back(static_cast<int64_t>(i));
            }
        }
        backend.scatter_rows(embeds, rows, model.encode_images(std::span(&part, 1), im.grids));
    }
    const PromptPositions positions = model.prompt_positions(p.modality, im.grids);
    const auto n = static_cast<int64_t>(p.ids.size());
    const int64_t block_size = 8, n_blocks = (n + block_size - 1) / block_size;
    PagedKvCache cache(backend, model.kv_cache_params(n_blocks, block_size));
    const KvBatch batch = reversed_block_batch(n, block_size);
    const std::vector<int32_t> flat(positions.pos.begin(), positions.pos.end());
    return model.logits(model.forward_text(std::move(embeds), flat, model.step_modality(p), cache, batch));
}

// The fixture model on a backend with the reference's tensors and prompts.
struct ErnieFixture {
    explicit ErnieFixture(std::unique_ptr<Backend> b)
        : store(TensorStore::open(ernie_dir() / "ernie45-vl-tiny")),
          config(load_ernie45_vl_config(ernie_dir() / "ernie45-vl-tiny" / "config.json")),
          backend(std::move(b)),
          model([this] {
              const auto weights = make_ernie45_vl_weight_source(*store, config);
              return std::make_unique<Ernie45Vl>(*backend, config, *weights);
          }()),
          reference(ernie_dir() / "reference.safetensors"),
          meta(nlohmann::json::parse(read_file_text(ernie_dir() / "reference.json"))) {}

    PromptTokens prompt(const std::string& key) const {
        PromptTokens p;
        for (const int64_t id : reference.i64(key + ".input_ids")) {
            p.ids.push_back(static_cast<int32_t>(id));
            p.modality.push_back(id == config.image_token_id   ? TokenModality::Image
                                 : id == config.video_token_id ? TokenModality::Video
                                                               : TokenModality::Text);
        }
        return p;
    }
    // Whether the prompt has images or a video.
    bool has_images(const std::string& key) const { return reference.has(key + ".grid_thw"); }
    bool has_video(const std::string& key) const { return key == "video"; }
    std::vector<ImageGrid> grids(const std::string& key) const {
        std::vector<ImageGrid> out;
        if (has_images(key)) {
            const std::vector<int64_t> g = reference.i64(key + ".grid_thw");
            for (size_t i = 0; i + 2 < g.size(); i += 3) {
                out.push_back({g[i], g[i + 1], g[i + 2]});
            }
        }
        return out;
    }
    // The prompt's images as the reference preprocessed them, in Folio's raster patch order.
    PreprocessedImages images(const std::string& key) const {
        PreprocessedImages out;
        out.grids = grids(key);
        for (const auto& name : meta["prompts"][key]["images"]) {
            const std::vector<float> px = reference.f32("pixel_values." + name.get<std::string>());
            out.pixel_values.insert(out.pixel_values.end(), px.begin(), px.end());
            out.kinds.push_back(MediaKind::Image);
        }
        if (has_video(key)) {
            out.pixel_values = reference.f32("pixel_values_videos.clip");
            out.kinds.push_back(MediaKind::Video);
        }
        out.pixel_values = raster_patches(out.pixel_values, out.grids, config.vision.patch_dim());
        return out;
    }

    // Logits at every prompt position (ernie_prompt_logits).  ->  [n_prompt, vocab]
    Tensor prompt_logits(const std::string& key) const {
        return ernie_prompt_logits(*backend, *model, prompt(key), images(key));
    }

    std::unique_ptr<TensorStore> store;
    Ernie45VlConfig config;
    std::unique_ptr<Backend> backend;
    std::unique_ptr<Ernie45Vl> model;
    Reference reference;
    nlohmann::json meta;
};

}  // namespace folio::testing
