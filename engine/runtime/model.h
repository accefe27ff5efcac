// What the serving runtime needs of a model that generates tokens: request limits, image encoding,
// the prompt's rotary positions, embeddings, one step through the decoder over the paged KV cache, logits,
// and the geometry of the cache. ModelRunner, EngineCore, DecodeGraphs, Engine and generate know a model
// only through this interface.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/image/image-preprocess.h"
#include "engine/runtime/kv-cache.h"

namespace folio {

// What a prompt token stands for: text, or a feature of an image or of a video (a placeholder that the
// encoder's output replaces). A mixture-of-experts decoder routes the modalities to different experts.
enum class TokenModality : uint8_t { Text = 0, Image = 1, Video = 2 };

// Whether a token is a placeholder of an image's or a video's features.
inline bool is_media(TokenModality m) {
    return m != TokenModality::Text;
}

// A prompt's token ids, and each token's modality (an image's or a video's run of placeholders).
struct PromptTokens {
    std::vector<int32_t> ids;
    std::vector<TokenModality> modality;  // [n]: Text except on placeholders
};

// What a request may ask of the model.
struct ModelLimits {
    int64_t vocab_size = 0;
    int64_t max_context = 0;             // positions the model was made for
    std::vector<int32_t> eos_token_ids;  // a request's stop ids unless it gives its own
};

// The rotary position of every prompt token on each of the model's position axes (one for a text model;
// temporal, height and width for a multimodal one), and what a token after the prompt adds to its index.
struct PromptPositions {
    int n_axes = 1;
    std::vector<int64_t> pos;  // [n_prompt, n_axes]
    int64_t delta = 0;

    int64_t n_prompt() const { return static_cast<int64_t>(pos.size()) / n_axes; }
    // Appends token `token`'s position on every axis: its prompt position, else token + delta.
    void append(int64_t token, std::vector<int32_t>& out) const;
};

// The device-side inputs of one decoder step over n new tokens.
struct DecoderStep {
    Tensor positions;  // [n, n_position_axes] int32: each token's rotary position on every axis
    Tensor modality;   // [n] int32 TokenModality; empty: every token is text
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
    // Whether a decode step's work can be recorded on backend() and replayed (DecodeGraphs): the backend's
    // say, unless the model runs work elsewhere too.
    virtual bool can_record() const { return backend().can_record(); }
    // The work queue gives, recorded for replay where can_record() (record_work on backend(), unless the
    // model's work runs on other backends too, each recording its own part).
    virtual std::unique_ptr<RecordedWork> record(const std::function<void()>& queue) {
        return record_work(backend(), queue);
    }
    virtual ModelLimits limits() const = 0;
    // Axes of a token's rotary position (PromptPositions::n_axes, DecoderStep::positions).
    virtual int n_position_axes() const = 0;
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
    // an encoder), videos among them where with_video is set; measured on the backend, for the memory plan.
    virtual int64_t image_activation_bytes(int64_t n_image_tokens, bool with_video) = 0;

    // The modality each prompt token has in a decoder step (DecoderStep::modality): the prompt's by default.
    // A model may treat more tokens as media there (a mixture of experts that routes an image's start and
    // end markers with its features), without changing the runs that positions and features follow.
    virtual std::vector<TokenModality> step_modality(const PromptTokens& prompt) const {
        return prompt.modality;
    }
    // Rotary positions of a prompt whose image and video runs belong to the grids, in order. Throws
    // folio::Error when the runs and the grids do not match.
    virtual PromptPositions prompt_positions(std::span<const TokenModality> modality,
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
    // The same with the positions, the modalities (empty: all text) and the batch on the host.
    // positions [n, n_position_axes], modality [n]
    Tensor forward_text(Tensor embeds, std::span<const int32_t> positions,
                        std::span<const TokenModality> modality, PagedKvCache& cache, const KvBatch& batch);
    // The final norm and the head.  hidden [n, hidden]  ->  logits [n, vocab]
    virtual Tensor logits(const Tensor& hidden) = 0;

    // The cache forward_text takes for n_blocks blocks of block_size tokens: the decoder's layers, K/V heads
    // and head size, in the element type the backend keeps keys and values in for the model.
    virtual KvCacheParams kv_cache_params(int64_t n_blocks, int64_t block_size) const = 0;
};

}  // namespace folio
