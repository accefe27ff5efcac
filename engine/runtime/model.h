// What the serving runtime needs of a model that generates tokens: request limits, image encoding,
// the prompt's rotary positions, embeddings, one step through the decoder over the paged KV cache, logits,
// and the geometry of the cache. ModelRunner, EngineCore, DecodeGraphs, Engine and generate know a model
// only through this interface.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/image/image-preprocess.h"
#include "engine/runtime/kv-cache.h"

namespace folio {

// A prompt's token ids, and which of them stand for image features (an image's run of placeholders).
struct PromptTokens {
    std::vector<int32_t> ids;
    std::vector<uint8_t> is_image;  // 1 where ids[i] is an image placeholder
};

// What a request may ask of the model.
struct ModelLimits {
    int64_t vocab_size = 0;
    int64_t max_context = 0;             // positions the model was made for
    std::vector<int32_t> eos_token_ids;  // a request's stop ids unless it gives its own
};

// The rotary position of every prompt token on three axes (temporal, height, width; a text-only model
// gives the same value on all three), and what a token after the prompt adds to its index.
struct PromptPositions {
    std::vector<std::array<int64_t, 3>> pos;  // [n_prompt][t, h, w]
    int64_t delta = 0;

    // Token `token` of the sequence: its prompt position, else token + delta on every axis.
    std::array<int64_t, 3> at(int64_t token) const {
        if (token < static_cast<int64_t>(pos.size())) {
            return pos[static_cast<size_t>(token)];
        }
        const int64_t p = token + delta;
        return {p, p, p};
    }
};

// The device-side inputs of one decoder step over n new tokens.
struct DecoderStep {
    Tensor positions;  // [n, 3] int32: each token's (t, h, w) rotary position
    Tensor slots;      // [n] int32: each token's cache row; negative rows are not stored (padding)
    // A decode step (one new token per sequence) gives its attention metadata on the device; any other step
    // gives the host-side batch.
    Tensor seq_lens;      // [n] int32: tokens in the cache per sequence, the new one included
    Tensor block_tables;  // [n, max_blocks] int32
    const KvBatch* batch = nullptr;
};

class GenerativeModel {
public:
    virtual ~GenerativeModel() = default;

    virtual Backend& backend() const = 0;
    virtual ModelLimits limits() const = 0;
    // Bytes of the weights as the backend holds them.
    virtual int64_t n_weight_bytes() const = 0;

    // Images. A model without an image encoder rejects every image in check_images.
    // Throws folio::Error unless the images are ones the encoder takes (their values fill their grids).
    virtual void check_images(const PreprocessedImages& images) const = 0;
    // Placeholder tokens an image of this grid takes in the prompt, one per feature row.
    virtual int64_t n_image_tokens(const ImageGrid& grid) const = 0;
    // The images' features, images one after another. The values come in parts that follow each other
    // (each image's own array), as 8-bit levels that stand for their channel's value in level_values or as
    // float values.  ->  [sum of n_image_tokens, hidden]
    virtual Tensor encode_images(std::span<const std::span<const uint8_t>> levels,
                                 const ChannelLevels& level_values, std::span<const ImageGrid> grids) = 0;
    virtual Tensor encode_images(std::span<const std::span<const float>> values,
                                 std::span<const ImageGrid> grids) = 0;
    // The most bytes of activations encoding images of n_image_tokens tokens in one step takes (0 without
    // an encoder); measured on the backend, for the memory plan.
    virtual int64_t image_activation_bytes(int64_t n_image_tokens) = 0;

    // Rotary positions of a prompt whose image runs belong to the grids, in order. Throws folio::Error when
    // the runs and the grids do not match.
    virtual PromptPositions prompt_positions(std::span<const uint8_t> is_image,
                                             std::span<const ImageGrid> grids) const = 0;

    // Token embeddings.  ids [n]  ->  [n, hidden]
    virtual Tensor embed(std::span<const int32_t> ids) = 0;
    // The same with the ids on the backend, a negative id -p - 1 standing for the token pending[p] that a
    // step still running samples. Recordable.  ids [n], pending [n_pending] int32  ->  [n, hidden]
    virtual Tensor embed(const Tensor& ids, const Tensor& pending) = 0;
    // Runs the decoder over the new tokens of a batch of sequences, writing their keys and values into the
    // cache rows the step names and attending through the sequences' block tables. embeds becomes the
    // residual stream and is returned before the final norm (logits applies it). With a step whose inputs
    // are all on the backend (no batch) the work can be recorded and replayed: it uploads nothing and waits
    // for nothing.  embeds [n, hidden]  ->  hidden states [n, hidden]
    virtual Tensor forward_text(Tensor embeds, const DecoderStep& step, PagedKvCache& cache) = 0;
    // The same with the positions and the batch on the host.  positions [n][t, h, w]
    Tensor forward_text(Tensor embeds, std::span<const std::array<int64_t, 3>> positions, PagedKvCache& cache,
                        const KvBatch& batch);
    // The final norm and the head.  hidden [n, hidden]  ->  logits [n, vocab]
    virtual Tensor logits(const Tensor& hidden) = 0;

    // The cache forward_text takes for n_blocks blocks of block_size tokens: the decoder's layers, K/V heads
    // and head size, in the element type the backend keeps keys and values in for the model.
    virtual KvCacheParams kv_cache_params(int64_t n_blocks, int64_t block_size) const = 0;
};

}  // namespace folio
