// The layout models' RT-DETR decoder: query selection over the encoder's levels (anchors, the encoder head's
// scores and boxes, top-k), then layers of self-attention, multi-scale deformable attention and an MLP,
// each refining the boxes. V2 has a class and a box head per layer; V3 shares the encoder's heads, starts
// from boxes around its masks (mask_enhanced) and ends with per-query masks and global-pointer order logits.
#pragma once

#include <map>
#include <mutex>
#include <vector>

#include "models/pp-doclayout/hybrid-encoder.h"

namespace folio {

// The decoder's results for a batch of n pages, on the host but for the masks.
struct DecoderResult {
    int64_t n = 0;
    std::vector<float> logits;        // [n, queries, labels]
    std::vector<float> boxes;         // [n, queries, 4] cx, cy, w, h relative to the page
    std::vector<float> order_logits;  // V3: [n, queries, queries]
    Tensor masks;                     // V3: [n * queries, h4 * w4] on the backend
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
    // and the rows whose anchors are invalid.
    struct AnchorTable {
        Tensor anchors;  // [s, 4]
        std::vector<int64_t> invalid;
    };
    // Made once for each set of level sizes and kept.
    const AnchorTable& anchors(const std::vector<FeatureLevel>& levels) const;

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
