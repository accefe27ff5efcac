// A small GenerativeModel for the runtime's tests: its next token is always the last one plus one, it takes
// images of any grid (one token a patch), and it can be told to fail on a token or an image.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/common/error.h"
#include "engine/runtime/model.h"

namespace folio::testing {

constexpr int64_t kVocab = 64;
constexpr int32_t kEos = 9;
constexpr int32_t kImageToken = 63;    // the image placeholder's id
constexpr int32_t kImageFeature = 50;  // image i's feature rows stand for token kImageFeature + i
constexpr int64_t kPatchDim = 3;       // values of one patch
constexpr int64_t kPositionDelta = 1000;

// A token the fake model's decoder saw: its id (image features as kImageFeature + i), rotary position on
// each axis, cache row and modality.
struct Fed {
    int32_t token = 0;
    std::vector<int32_t> pos;
    int32_t slot = 0;
    TokenModality modality = TokenModality::Text;
};

// Prompt modalities from flags: 0 text, 1 image, 2 video.
inline std::vector<TokenModality> modalities(std::initializer_list<int> flags) {
    std::vector<TokenModality> out;
    for (const int f : flags) {
        out.push_back(static_cast<TokenModality>(f));
    }
    return out;
}

// A model whose next token is always the last one plus one (mod kVocab): embeddings are one-hot rows, the
// decoder passes them through, and the head maps row t to t + 1. Prompt token i sits at (i, 2i, 3i, ...) on
// its n_axes axes and the tokens after the prompt at index + kPositionDelta, so that the runtime must take
// positions from the model.
// An image of grid (t, h, w) takes t * h * w tokens.
class FakeModel final : public GenerativeModel {
public:
    explicit FakeModel(Backend& backend, bool takes_images = true)
        : backend_(backend), takes_images_(takes_images) {
        std::vector<float> embed(kVocab * kVocab, 0.0f), head(kVocab * kVocab, 0.0f);  // [vocab, vocab] each
        for (int64_t t = 0; t < kVocab; ++t) {
            embed[t * kVocab + t] = 1.0f;
            head[((t + 1) % kVocab) * kVocab + t] = 1.0f;  // logit of token t + 1 is the input's weight on t
        }
        embed_ = backend.upload(embed, {kVocab, kVocab});
        head_ = backend.upload(head, {kVocab, kVocab});
    }

    Backend& backend() const override { return backend_; }
    ModelLimits limits() const override { return {kVocab, max_context, {kEos}}; }
    int64_t n_weight_bytes() const override { return 2 * kVocab * kVocab * int64_t{sizeof(float)}; }

    void check_images(const PreprocessedImages& images) const override {
        if (!takes_images_ && !images.grids.empty()) {
            fail("the model takes no images");
        }
        const auto n =
            static_cast<int64_t>(images.levels.empty() ? images.pixel_values.size() : images.levels.size());
        if (n != images.n_patches() * kPatchDim) {
            fail(n, " image values for ", images.n_patches(), " patches");
        }
    }
    int64_t n_image_tokens(const ImageGrid& grid) const override { return grid.n_patches(); }
    Tensor encode_images(std::span<const std::span<const uint8_t>>, const ChannelLevels&,
                         std::span<const ImageGrid> grids) override {
        return features(grids);
    }
    Tensor encode_images(std::span<const std::span<const float>>, std::span<const ImageGrid> grids) override {
        return features(grids);
    }
    int64_t image_activation_bytes(int64_t n_image_tokens, bool with_video) override {
        profiled_image_tokens = n_image_tokens;
        profiled_with_video = with_video;
        return image_activation;
    }

    int n_position_axes() const override { return n_axes; }
    PromptPositions prompt_positions(std::span<const TokenModality> modality,
                                     std::span<const ImageGrid> grids) const override {
        ++n_position_calls;
        PromptPositions p;
        p.n_axes = n_axes;
        for (int64_t i = 0; i < static_cast<int64_t>(modality.size()); ++i) {
            for (int a = 0; a < n_axes; ++a) {
                p.pos.push_back((a + 1) * i);
            }
        }
        p.delta = kPositionDelta;
        n_position_grids += static_cast<int64_t>(grids.size());
        return p;
    }

    Tensor embed(std::span<const int32_t> ids) override {
        return backend_.gather_rows(embed_, std::vector<int64_t>(ids.begin(), ids.end()));  // [n, vocab]
    }
    Tensor embed(const Tensor& ids, const Tensor& pending) override {
        ++n_pending_embeds;
        return backend_.gather_token_rows(embed_, ids, pending);  // [n, vocab]
    }
    Tensor forward_text(Tensor embeds, const DecoderStep& step, PagedKvCache&) override {
        const int64_t n = embeds.rows();
        const std::vector<float> rows = backend_.download(embeds);  // [n, vocab]
        const std::vector<int32_t> pos = read(step.positions), slots = read(step.slots);
        const std::vector<int32_t> kinds =
            step.modality.empty() ? std::vector<int32_t>(n, 0) : read(step.modality);
        if (static_cast<int64_t>(pos.size()) != n * n_axes || static_cast<int64_t>(kinds.size()) != n) {
            fail("fake model: ", pos.size(), " position values and ", kinds.size(), " modalities for ", n,
                 " tokens");
        }
        for (int64_t r = 0; r < n; ++r) {
            const auto row = rows.begin() + r * kVocab;
            const auto token = static_cast<int32_t>(std::max_element(row, row + kVocab) - row);
            if (token == fail_on_token) {
                fail(fail_message);
            }
            fed.push_back({token,
                           {pos.begin() + r * n_axes, pos.begin() + (r + 1) * n_axes},
                           slots[r],
                           static_cast<TokenModality>(kinds[r])});
        }
        rows_per_step.push_back(n);
        if (step_delay.count() > 0) {
            std::this_thread::sleep_for(step_delay);
        }
        n_decode_steps += step.batch == nullptr ? 1 : 0;
        return embeds;
    }
    Tensor logits(const Tensor& hidden) override { return backend_.linear(hidden, head_, nullptr); }
    KvCacheParams kv_cache_params(int64_t n_blocks, int64_t block_size) const override {
        return {1, 1, kv_head_dim, n_blocks, block_size};
    }

    int64_t max_context = 4096;
    int n_axes = 3;                    // axes of a rotary position
    int kv_head_dim = 2;               // the cache's head size: its bytes a block
    int32_t fail_on_token = -1;        // forward_text throws fail_message when it is fed this token
    int64_t fail_on_image_width = -1;  // encode_images throws for a grid this many patches wide
    std::string fail_message = "the fake model failed";
    std::chrono::microseconds step_delay{0};  // each forward_text takes at least this long
    int64_t image_activation = 0;
    std::vector<Fed> fed;
    std::vector<int64_t> rows_per_step;  // the tokens of each forward_text call
    std::vector<ImageGrid> encoded;      // the grids of every encode_images call, in order
    int64_t n_encode_calls = 0;
    int64_t n_pending_embeds = 0;
    int64_t n_decode_steps = 0;
    int64_t profiled_image_tokens = -1;
    bool profiled_with_video = false;
    mutable int64_t n_position_calls = 0;
    mutable int64_t n_position_grids = 0;

private:
    // Image i of the call: rows one-hot at kImageFeature + i.  ->  [sum of n_image_tokens, vocab]
    Tensor features(std::span<const ImageGrid> grids) {
        ++n_encode_calls;
        for (const ImageGrid& g : grids) {
            if (g.w == fail_on_image_width) {
                fail("the fake model cannot encode an image ", g.w, " patches wide");
            }
        }
        std::vector<float> values;
        for (size_t i = 0; i < grids.size(); ++i) {
            encoded.push_back(grids[i]);
            for (int64_t r = 0; r < n_image_tokens(grids[i]); ++r) {
                std::vector<float> row(kVocab, 0.0f);
                row[kImageFeature + i] = 1.0f;
                values.insert(values.end(), row.begin(), row.end());
            }
        }
        return backend_.upload(values, {static_cast<int64_t>(values.size()) / kVocab, kVocab});
    }
    std::vector<int32_t> read(const Tensor& t) {
        return backend_.read_back(t.view(0, {t.n_elements()}))->wait();
    }

    Backend& backend_;
    bool takes_images_;
    Tensor embed_;  // [vocab, vocab] one-hot rows
    Tensor head_;   // [vocab, vocab]: row t + 1 picks input t
};

}  // namespace folio::testing
