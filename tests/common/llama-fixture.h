// The Llama golden fixture (tests/fixtures/llama, made by make_llama_fixtures.py): the tiny model on a
// backend, the reference tensors and prompts, and the prompt logits a model gives for them.
#pragma once

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/common/mapped-file.h"
#include "engine/files/safetensors.h"
#include "engine/files/weight-source.h"
#include "engine/models/llama/config.h"
#include "engine/models/llama/llama.h"
#include "engine/runtime/kv-cache.h"
#include "fixture-reference.h"
#include "reversed-blocks.h"

namespace folio::testing {

inline std::filesystem::path llama_dir() {
    return fixtures_dir().parent_path() / "llama";
}

inline std::filesystem::path llama_model_dir() {
    return llama_dir() / "llama-tiny";
}

inline const std::vector<std::string>& llama_prompt_keys() {
    static const std::vector<std::string> keys = {"hello", "system", "multi_turn"};
    return keys;
}

// The fixture model on a backend with the reference's tensors and prompts.
struct LlamaFixture {
    explicit LlamaFixture(std::unique_ptr<Backend> b)
        : store(TensorStore::open(llama_model_dir())),
          config(load_llama_config(llama_model_dir() / "config.json")),
          backend(std::move(b)),
          model([this] {
              const auto weights = make_store_weight_source(*store);
              return std::make_unique<Llama>(*backend, config, *weights);
          }()),
          reference(llama_dir() / "reference.safetensors"),
          meta(nlohmann::json::parse(read_file_text(llama_dir() / "reference.json"))) {}

    PromptTokens prompt(const std::string& key) const {
        PromptTokens p;
        for (const int64_t id : reference.i64(key + ".ids")) {
            p.ids.push_back(static_cast<int32_t>(id));
        }
        p.modality.assign(p.ids.size(), TokenModality::Text);
        return p;
    }

    // Logits at every prompt position, the cache in blocks of 8 slots in reverse order so that attention
    // must follow the block table; the cache's elements as the model keeps them, or 8-bit levels with
    // int8_cache.  ->  [n_prompt, vocab]
    Tensor prompt_logits(const std::string& key, bool int8_cache = false) const {
        const PromptTokens p = prompt(key);
        const auto n = static_cast<int64_t>(p.ids.size());
        const int64_t block_size = 8, n_blocks = (n + block_size - 1) / block_size;
        KvCacheParams params = model->kv_cache_params(n_blocks, block_size);
        if (int8_cache) {
            params.dtype = ScalarType::Q8;
        }
        PagedKvCache cache(*backend, params);
        const KvBatch batch = reversed_block_batch(n, block_size);
        std::vector<int32_t> positions(static_cast<size_t>(n));
        std::iota(positions.begin(), positions.end(), 0);
        return model->logits(model->forward_text(model->embed(p.ids), positions, {}, cache, batch));
    }

    std::unique_ptr<TensorStore> store;
    LlamaConfig config;
    std::unique_ptr<Backend> backend;
    std::unique_ptr<Llama> model;
    Reference reference;
    nlohmann::json meta;
};

}  // namespace folio::testing
