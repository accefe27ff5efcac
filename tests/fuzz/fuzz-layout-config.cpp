// Fuzzes the layout models' config.json and preprocessor_config.json parsers (PP-DocLayoutV2 and V3): any
// input either gives a config that satisfies what the model code relies on, or throws folio::Error.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "engine/common/error.h"
#include "engine/models/pp-doclayout/pp-doclayout-config.h"

namespace {

void check(bool condition) {
    if (!condition) {
        std::abort();
    }
}

void check_config(const folio::PpDocLayoutConfig& c) {
    const folio::HgnetConfig& b = c.backbone;
    check(!c.labels.empty());
    check(b.stem_channels.size() == 3 && b.stem_strides.size() == 5 && !b.stage_in_channels.empty());
    for (const int s : b.out_stages) {
        check(s >= 0 && static_cast<size_t>(s) < b.stage_out_channels.size());
    }
    const size_t levels = c.feat_strides.size();
    check(levels > 0 && c.encoder_in_channels.size() == levels && c.decoder_in_channels.size() == levels);
    check(b.out_stages.size() == (c.kind == folio::LayoutModelKind::V3 ? levels + 1 : levels));
    for (const int l : c.encode_proj_layers) {
        check(l >= 0 && static_cast<size_t>(l) < levels);
    }
    check(c.encoder_attention_heads > 0 && c.encoder_hidden_dim % c.encoder_attention_heads == 0);
    check(c.encoder_hidden_dim % 4 == 0 && c.d_model == c.encoder_hidden_dim);
    check(c.decoder_attention_heads > 0 && c.d_model % c.decoder_attention_heads == 0);
    check(c.num_queries > 0 && c.decoder_n_points > 0 && c.num_feature_levels >= static_cast<int>(levels));
    if (c.kind == folio::LayoutModelKind::V2) {
        check(c.class_thresholds.size() == c.labels.size() && c.class_order.size() == c.labels.size());
        for (const int k : c.class_order) {
            check(k >= 0 && k < c.reading_order.num_classes);
        }
        const folio::ReadingOrderConfig& r = c.reading_order;
        check(r.num_attention_heads > 0 && r.hidden_size % r.num_attention_heads == 0);
        check(r.relation_bias_embed_dim % 2 == 0 && r.max_2d_position_embeddings >= 1024);
        check(c.num_queries + 2 + r.pad_token_id < r.max_position_embeddings);
    } else {
        check(c.mask_feature_channels.size() == 2);
    }
}

void check_preprocess(const folio::LayoutPreprocessConfig& c) {
    check(c.height > 0 && c.width > 0 && c.image_mean.size() == 3 && c.image_std.size() == 3);
    for (const float s : c.image_std) {
        check(s != 0.0f);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        check_config(folio::parse_pp_doclayout_config(text, "config.json"));
    } catch (const folio::Error&) {
    }
    try {
        check_preprocess(folio::parse_layout_preprocess_config(text, "preprocessor_config.json"));
    } catch (const folio::Error&) {
    }
    return 0;
}
