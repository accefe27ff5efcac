// The layout models' RT-DETR decoder: query selection over the encoder's levels (anchors, the encoder head's
// scores and boxes, top-k), then layers of self-attention, multi-scale deformable attention and an MLP,
// each refining the boxes. V2 has a class and a box head per layer; V3 shares the encoder's heads, starts
// from boxes around its masks (mask_enhanced) and ends with per-query masks and global-pointer order logits.
#pragma once

#include <map>
#include <mutex>
#include <vector>

#include "engine/models/pp-doclayout/hybrid-encoder.h"

namespace folio {

// The decoder's results for a batch of n pages, on the backend.
struct DecoderResult {
    int64_t n = 0;
    Tensor logits;          // [n * queries, labels]
    Tensor boxes;           // [n * queries, 4] cx, cy, w, h relative to the page
    Tensor order_products;  // V3: [n, queries, queries], the global pointer's before finish_global_pointer
    Tensor masks;           // V3: [n * queries, h4 * w4]
    int64_t mask_h = 0, mask_w = 0;
};

class DetrDecoder {
public:
    DetrDecoder(LayoutWeights& weights, const PpDocLayoutConfig& config);

    DecoderResult forward(const EncoderOutput& encoded) const;

private:
    struct Layer {
        AttentionBlock self_attn;
        Linear sampling_offsets, attention_weights, value_proj, output_proj;
        Tensor cross_norm_w, cross_norm_b;
        Linear fc1, fc2;
        Tensor final_norm_w, final_norm_b;
    };

    // Anchors of the levels' positions (log-odds of cx, cy, w, h; float max where invalid) on the backend,
    // the positions whose anchors are invalid, and those positions' rows in batches of n pages.
    struct AnchorTable {
        Tensor anchors;  // [s, 4]
        std::vector<int64_t> invalid;
        std::map<int64_t, Tensor> invalid_rows;  // by n: int32 [n * invalid.size()], page b's at b * s + r
    };
    // The table for these level sizes, made once for each and kept, with the invalid rows of n pages on the
    // backend (where they are made, nothing is being recorded).
    const AnchorTable& anchors(const std::vector<FeatureLevel>& levels, int64_t n) const;

    Backend& backend_;
    PpDocLayoutConfig config_;
    std::vector<Conv> input_proj_;
    Linear enc_output_;
    Tensor enc_norm_w_, enc_norm_b_;
    Linear enc_score_;
    Mlp enc_bbox_;
    Mlp query_pos_;
    std::vector<Layer> layers_;
    std::vector<Linear> class_heads_;  // one per layer (V2) or the shared one (V3)
    std::vector<Mlp> box_heads_;
    // V3
    Tensor decoder_norm_w_, decoder_norm_b_;
    Mlp mask_query_;
    Linear order_head_;      // the last layer's
    Linear global_pointer_;  // queries' half scaled by 1 / sqrt(head size)

    mutable std::mutex anchors_mutex_;
    mutable std::map<std::vector<int64_t>, AnchorTable> anchor_tables_;  // by the levels' heights and widths
};

}  // namespace folio
