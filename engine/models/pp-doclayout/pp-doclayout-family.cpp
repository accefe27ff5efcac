#include "engine/models/pp-doclayout/pp-doclayout-family.h"

#include "engine/common/error.h"
#include "engine/common/mapped-file.h"
#include "engine/models/layout-model.h"
#include "engine/models/pp-doclayout/pp-doclayout-config.h"
#include "engine/models/pp-doclayout/pp-doclayout.h"

namespace folio {

namespace {

constexpr std::string_view kFamilyName = "pp-doclayout";

ModelDescription describe_layout(const std::filesystem::path& dir, const PpDocLayoutConfig& config) {
    ModelDescription d;
    d.family = std::string(kFamilyName);
    d.name = dir.filename().string();
    d.model_type = config.kind == LayoutModelKind::V2 ? "pp_doclayout_v2" : "pp_doclayout_v3";
    d.role = ModelRole::Layout;
    d.tasks = {"layout"};
    d.modalities = {Modality::Image};
    return d;
}

// Activation bytes one 800x800 page takes at the layout model's peak (backbone stages, encoder, decoder, V3's
// masks), float32, with room to spare.
constexpr int64_t kLayoutPageActivationBytes = int64_t{384} << 20;

class LoadedLayout final : public LoadedModel, public LayoutModel {
public:
    LoadedLayout(const ModelSlot& slot, Backend& backend, LoadContext& context)
        : batch_(slot.layout_batch), recorded_page_(backend.can_record()) {
        if (slot.dir.empty()) {
            fail("a layout slot needs its model's folder");
        }
        if (batch_ < 1 || batch_ > 256) {
            fail("layout batch ", batch_, " outside 1..256");
        }
        context.set_phase(LoadPhase::Opening);
        std::error_code error;
        const auto n_bytes = std::filesystem::file_size(slot.dir / "model.safetensors", error);
        context.add_total(error ? 0 : static_cast<int64_t>(n_bytes));
        context.set_phase(LoadPhase::Weights);
        model_ = std::make_unique<PpDocLayout>(backend, slot.dir,
                                               LayoutModelParams{.conv_precision = slot.layout_precision});
        context.add_read(error ? 0 : static_cast<int64_t>(n_bytes), "model.safetensors");
        description_ = describe_layout(slot.dir, model_->config());
    }

    ModelRole role() const override { return ModelRole::Layout; }
    // A batch's pages, and where the backend records, the single page's recorded pass, which keeps its own.
    int64_t reserved_activation_bytes() const override {
        return (batch_ + (recorded_page_ ? 1 : 0)) * kLayoutPageActivationBytes;
    }
    const LayoutModel* layout() const override { return this; }
    ModelDescription description() const override { return description_; }

    LayoutPagePreparation page_preparation() const override {
        return [config = model_->preprocess_config()](const Image& page) {
            return layout_page_levels(PageImage{page.rgb, page.width, page.height}, config);
        };
    }
    LayoutRules default_rules() const override {
        return model_->config().kind == LayoutModelKind::V2 ? paddleocr_vl_layout_rules()
                                                            : paddleocr_vl_1_5_layout_rules();
    }
    int max_batch() const override { return static_cast<int>(batch_); }
    std::vector<LayoutRawOutput> detect_prepared(std::span<const std::vector<uint8_t>> pages,
                                                 float mask_min_score) const override {
        return model_->detect_levels(pages, {.mask_min_score = mask_min_score});
    }

private:
    int64_t batch_;
    bool recorded_page_;
    std::unique_ptr<PpDocLayout> model_;
    ModelDescription description_;
};

class PpDocLayoutFamily final : public ModelFamily {
public:
    std::string_view name() const override { return kFamilyName; }
    ModelRole role() const override { return ModelRole::Layout; }
    bool matches(const nlohmann::json& config) const override {
        const std::string type = config_model_type(config);
        return type == "pp_doclayout_v2" || type == "pp_doclayout_v3" ||
               config_has_architecture(config, "PPDocLayoutV2ForObjectDetection") ||
               config_has_architecture(config, "PPDocLayoutV3ForObjectDetection");
    }
    ModelDescription describe(const std::filesystem::path& dir) const override {
        if (dir.empty()) {
            fail("a layout model needs its folder");
        }
        return describe_layout(dir, parse_pp_doclayout_config(read_file_text(dir / "config.json"),
                                                              (dir / "config.json").string()));
    }
    std::unique_ptr<LoadedModel> load(const ModelSlot& slot, Backend& backend,
                                      LoadContext& context) const override {
        return std::make_unique<LoadedLayout>(slot, backend, context);
    }
};

}  // namespace

std::unique_ptr<ModelFamily> make_pp_doclayout_family() {
    return std::make_unique<PpDocLayoutFamily>();
}

}  // namespace folio
