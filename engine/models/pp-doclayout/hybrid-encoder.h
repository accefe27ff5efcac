// The layout models' hybrid encoder (RT-DETR's, as transformers' PPDocLayoutV2HybridEncoder and
// PPDocLayoutV3HybridEncoder define it): attention within the coarsest feature map (AIFI, with a 2D sine
// position embedding), then a top-down FPN and a bottom-up PAN of CSP-RepVGG blocks; V3 adds the mask
// feature head that turns the PAN maps and the backbone's stride-4 map into mask prototypes.
#pragma once

#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "engine/models/pp-doclayout/layout-weights.h"
#include "engine/models/pp-doclayout/pp-doclayout-config.h"

namespace folio {

// A post-norm transformer encoder layer (RT-DETR's encoder layer; also the decoder's self-attention block).
struct AttentionBlock {
    Linear q, k, v, o;
    Tensor norm_w, norm_b;
};

struct EncoderOutput {
    std::vector<Tensor> maps;  // [n, d, h_l, w_l] per level, finest first
    Tensor mask_prototypes;    // V3: [n, num_prototypes, h4, w4]; empty for V2
};

class HybridEncoder {
public:
    HybridEncoder(LayoutWeights& weights, const PpDocLayoutConfig& config);

    // backbone: the backbone's maps (V3: the stride-4 map first). They go through the input projections
    // (1x1 convolution and batch norm) first.
    EncoderOutput forward(const std::vector<Tensor>& backbone) const;

private:
    struct CspRep {
        Conv conv1, conv2, conv3;  // conv3 empty where hidden == out channels
        std::vector<Conv> bottlenecks;
    };
    struct AifiLayer {
        AttentionBlock attn;
        Linear fc1, fc2;
        Tensor final_norm_w, final_norm_b;
    };
    struct ScaleHead {
        std::vector<Conv> convs;  // each followed by a 2x bilinear upsampling where upsample is set
        bool upsample = false;
    };

    CspRep load_csp(LayoutWeights& weights, const std::string& prefix) const;
    Tensor run_csp(const CspRep& csp, const Tensor& x) const;
    // One AIFI layer over rows [n * h * w, d] with position embedding pos (empty: none).
    Tensor run_aifi_layer(const AifiLayer& layer, const Tensor& x, const Tensor& pos, int64_t n,
                          int64_t hw) const;
    // The 2D sine-cosine position embedding of an h x w map, a table [h * w, d] on the backend, made once for
    // each size (where nothing is being recorded) and kept.
    const Tensor& position_embedding(int64_t h, int64_t w) const;

    Backend& backend_;
    PpDocLayoutConfig config_;
    std::vector<Conv> input_proj_;
    std::vector<std::vector<AifiLayer>> aifi_;  // per encode_proj_layers entry
    std::vector<Conv> lateral_, downsample_;
    std::vector<CspRep> fpn_, pan_;
    // V3's mask feature head.
    std::vector<ScaleHead> scale_heads_;
    Conv mask_output_conv_, mask_lateral_, mask_base_conv_, mask_proto_conv_;

    mutable std::mutex position_mutex_;
    mutable std::map<std::pair<int64_t, int64_t>, Tensor> position_tables_;  // by (h, w)
};

// The attention of a post-norm block: x + o(attention(q(x + pos), k(x + pos), v(x))), then the norm, over n
// sequences of seq rows each.  x, pos [n * seq, d]  ->  [n * seq, d]
Tensor run_attention_block(Backend& backend, const AttentionBlock& block, const Tensor& x, const Tensor& pos,
                           int64_t n, int64_t seq, int64_t n_heads, float eps);
// The q projection comes scaled by 1 / sqrt(d / n_heads), the scores' scale.
AttentionBlock load_attention_block(LayoutWeights& weights, const std::string& attn_prefix,
                                    const std::string& norm_prefix, int64_t d, int64_t n_heads);

}  // namespace folio
