// PP-DocLayoutV2's reading-order network (transformers' PPDocLayoutV2ReadingOrder): the detected boxes, as
// LayoutLMv3-style tokens (start, one per detection, end) with 2D position embeddings and their labels'
// embeddings, through post-norm layers whose attention adds a bias from the boxes' relative positions, then a
// global pointer that scores each pair of detections.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/models/pp-doclayout/layout-weights.h"
#include "engine/models/pp-doclayout/pp-doclayout-config.h"

namespace folio {

// One page's detections as the network takes them: the kept ones first, boxes as x1, y1, x2, y2 scaled to
// 0..1000, each query's reading-order class.
struct ReadingOrderInput {
    std::vector<float> boxes;  // [queries, 4], zeros after the kept ones
    std::vector<int> classes;  // [queries]
    int n_kept = 0;
};

// A batch of pages' inputs as the backend takes them, made on the host (ReadingOrder::pack).
struct ReadingOrderBatch {
    int64_t n = 0;
    // Int32 rows, n * tokens each, of: the token ids, token types (0), positions, x0, y0, x1, y1, heights and
    // widths into their embedding tables; then n * queries each of the detections' classes and their tokens'
    // rows among the n * tokens.
    std::vector<int32_t> indices;
    std::vector<float> boxes;  // [n, tokens, 4] each token's box as cx, cy, w, h
    std::vector<float>
        padding;  // [n, 1, tokens, tokens] the attention bias that masks the keys after the end
};

// The same on the backend.
struct ReadingOrderTensors {
    int64_t n = 0;
    Tensor indices, boxes, padding;
};

class ReadingOrder {
public:
    ReadingOrder(LayoutWeights& weights, const ReadingOrderConfig& config, int n_queries);

    // The pair logits of each page: entry [i][j] (i < j) is the belief that detection i comes before j;
    // -1e4 on and below the diagonal.  ->  [pages, queries, queries]
    std::vector<float> forward(std::span<const ReadingOrderInput> pages) const;

    // Its parts: the pages' inputs packed on the host (throws naming what does not fit the network), uploaded
    // or written into inputs already on the backend, and run there to the global pointer's products (nothing
    // staged from the host, so that the pass can be recorded).  ->  [n, queries, queries], before
    // finish_global_pointer
    ReadingOrderBatch pack(std::span<const ReadingOrderInput> pages) const;
    ReadingOrderTensors upload(const ReadingOrderBatch& batch) const;
    void update(ReadingOrderTensors& inputs, const ReadingOrderBatch& batch) const;
    Tensor products(const ReadingOrderTensors& inputs) const;
    // The pair logits from those products, brought to the host.  products [n, queries, queries]
    std::vector<float> logits(const Tensor& products) const;

private:
    struct Layer {
        Linear query, key, value;  // query scaled by 1 / sqrt(head size)
        Linear attn_out;
        Tensor attn_norm_w, attn_norm_b;
        Linear intermediate, output;
        Tensor out_norm_w, out_norm_b;
    };

    // The attention bias of each page from its boxes' relative positions, with the padding keys masked.
    // ->  [pages, heads, tokens, tokens]
    Tensor relation_bias(const ReadingOrderTensors& inputs) const;

    Backend& backend_;
    ReadingOrderConfig config_;
    int n_queries_ = 0;
    Tensor word_, token_type_, position_, x_pos_, y_pos_, h_pos_, w_pos_;
    Linear spatial_proj_;
    Tensor embed_norm_w_, embed_norm_b_;
    Tensor label_table_;
    Linear label_proj_;
    std::vector<Layer> layers_;
    Linear pos_proj_;  // [heads, 4 * relation_bias_embed_dim]
    std::vector<float> inv_freq_;
    Linear pointer_;  // [2 * head size, hidden]
};

}  // namespace folio
