#include "engine/models/ernie45-vl/ernie45-vl-family.h"

#include "engine/chat-template/chat-template.h"
#include "engine/common/error.h"
#include "engine/files/safetensors.h"
#include "engine/image/preprocessor-config.h"
#include "engine/models/ernie45-vl/config.h"
#include "engine/models/ernie45-vl/ernie45-vl.h"
#include "engine/models/ernie45-vl/weights.h"
#include "engine/models/prompt-format.h"
#include "engine/tokenizer/tokenizer.h"

namespace folio {

namespace {

constexpr std::string_view kFamilyName = "ernie-4.5-vl";
constexpr std::string_view kTransformersRepository = "baidu/ERNIE-4.5-VL-28B-A3B-PT";
// The reference image processor's pixel bounds, for a folder without preprocessor_config.json.
constexpr std::string_view kDefaultPreprocessor =
    R"({"size": {"shortest_edge": 3136, "longest_edge": 4842768}, "patch_size": 14, "merge_size": 2})";
// The reference video processor's, for a folder without video_preprocessor_config.json.
constexpr std::string_view kDefaultVideoPreprocessor =
    R"({"size": {"shortest_edge": 234416, "longest_edge": 937664}, "patch_size": 14, "merge_size": 2})";

// A video's pixel bounds from the folder's video_preprocessor_config.json (its size's shortest_edge and
// longest_edge, as the reference's video processor reads them), else the reference's defaults.
void set_video_bounds(PreprocessorConfig& preprocessor, const std::filesystem::path& dir) {
    const std::filesystem::path file = dir / "video_preprocessor_config.json";
    std::error_code error;
    const PreprocessorConfig video =
        !dir.empty() && std::filesystem::exists(file, error)
            ? load_preprocessor_config(file)
            : parse_preprocessor_config(kDefaultVideoPreprocessor, "reference defaults");
    if (video.patch_size != preprocessor.patch_size || video.merge_size != preprocessor.merge_size) {
        fail(file.string(), ": patch_size ", video.patch_size, " and merge_size ", video.merge_size,
             " differ from the image processor's ", preprocessor.patch_size, " and ",
             preprocessor.merge_size);
    }
    preprocessor.video_min_pixels = video.min_pixels;
    preprocessor.video_max_pixels = video.max_pixels;
}

ModelDescription describe_ernie45_vl(const std::filesystem::path& dir, const Ernie45VlConfig& config,
                                     GenerationDefaults generation) {
    ModelDescription d;
    d.generation = std::move(generation);
    d.family = std::string(kFamilyName);
    d.name = dir.empty() ? "ERNIE-4.5-VL (random weights)" : dir.filename().string();
    d.model_type = config.model_type;
    d.role = ModelRole::Chat;
    d.max_context = config.text.max_position_embeddings;
    d.modalities = {Modality::Text, Modality::Image, Modality::Video};
    // Its template opens "<think>" unless enable_thinking is false: FastDeploy's parser.
    d.reasoning_parser = "ernie-45-vl";
    return d;
}

// The checkpoint must be in transformers' layout; PaddlePaddle's (ernie.* tensors, or no tensors transformers
// names) gets a message naming the repository that has it.
void check_layout(const TensorStore& store) {
    if (store.find("model.embed_tokens.weight") == nullptr) {
        fail(store.dir().string(),
             ": the weights are not in transformers' layout (no model.embed_tokens.weight",
             store.find("ernie.embed_tokens.weight") != nullptr ? "; this is a PaddlePaddle checkpoint" : "",
             "); download the transformers checkpoint ", kTransformersRepository,
             " (or its -Thinking variant)");
    }
}

class LoadedErnie45Vl final : public LoadedModel {
public:
    LoadedErnie45Vl(const ModelSlot& slot, Backend& backend, LoadContext& context) {
        context.set_phase(LoadPhase::Opening);
        std::unique_ptr<WeightSource> weights;
        if (slot.dir.empty()) {
            config_ = parse_ernie45_vl_config(slot.random_config, "full-size defaults");
            preprocessor_ = parse_preprocessor_config(kDefaultPreprocessor, "reference defaults");
            weights = make_random_weight_source(2026);
        } else {
            config_ = load_ernie45_vl_config(slot.dir / "config.json");
            const std::filesystem::path preprocessor = slot.dir / "preprocessor_config.json";
            std::error_code error;
            preprocessor_ = std::filesystem::exists(preprocessor, error)
                                ? load_preprocessor_config(preprocessor)
                                : parse_preprocessor_config(kDefaultPreprocessor, "reference defaults");
            store_ = TensorStore::open(slot.dir);
            check_layout(*store_);
            weights = make_ernie45_vl_weight_source(*store_, config_);
            context.add_total(static_cast<int64_t>(store_->n_bytes()));
        }
        const std::filesystem::path tokenizer_dir =
            slot.tokenizer_dir.empty() ? slot.dir : slot.tokenizer_dir;
        if (!tokenizer_dir.empty()) {
            tokenizer_ = Tokenizer::load(tokenizer_dir);
            chat_template_ =
                chat_template_of(slot, tokenizer_dir, "ERNIE-4.5-VL's prompts come from its template");
        }
        // The resampler merges a video's frames in pairs; an odd count repeats the last, as the reference's
        // video processor pads it.
        preprocessor_.video_frame_multiple = static_cast<int>(config_.vision.temporal_merge_size);
        set_video_bounds(preprocessor_, slot.dir);
        if (slot.adjust_preprocessor) {
            slot.adjust_preprocessor(preprocessor_);
        }
        generation_ = load_generation_defaults(slot.dir, slot.generation_config);
        check_generation_token_ids(generation_, config_.text.vocab_size);
        add_stop_ids(config_.text.eos_token_ids, generation_.eos_token_ids);
        context.set_phase(LoadPhase::Weights);
        ProgressWeightSource counted(*weights, store_.get(), context);
        ProgressQuantizationObserver quantization(context);
        model_ = std::make_unique<Ernie45Vl>(backend, config_, counted, slot.load, &quantization);
        description_ = describe_ernie45_vl(slot.dir, config_, generation_);
    }

    ModelRole role() const override { return ModelRole::Chat; }
    GenerativeModel* generative() override { return model_.get(); }
    const Tokenizer* tokenizer() const override { return tokenizer_.get(); }
    std::optional<PromptFormat> prompt_format() const override {
        if (!tokenizer_ || !chat_template_) {
            return std::nullopt;
        }
        PromptFormat f;
        f.tokenizer = tokenizer_.get();
        f.chat_template = chat_template_;
        f.template_values = special_token_values(*tokenizer_);
        f.special = {config_.image_token_id, config_.image_start_token_id, config_.image_end_token_id,
                     config_.video_token_id, config_.video_start_token_id, config_.video_end_token_id};
        f.preprocessor = preprocessor_;
        const Ernie45Vl* model = model_.get();
        f.n_image_tokens = [model](const ImageGrid& grid) { return model->n_image_tokens(grid); };
        f.generation = generation_;
        return f;
    }
    ModelDescription description() const override { return description_; }
    int64_t max_image_tokens() const override {
        const int64_t factor = int64_t{preprocessor_.patch_size} * preprocessor_.merge_size;
        return preprocessor_.max_pixels / (factor * factor);
    }

private:
    std::unique_ptr<TensorStore> store_;
    std::unique_ptr<Tokenizer> tokenizer_;
    std::shared_ptr<const ChatTemplate> chat_template_;
    Ernie45VlConfig config_;
    PreprocessorConfig preprocessor_;
    GenerationDefaults generation_;
    std::unique_ptr<Ernie45Vl> model_;
    ModelDescription description_;
};

class Ernie45VlFamily final : public ModelFamily {
public:
    std::string_view name() const override { return kFamilyName; }
    ModelRole role() const override { return ModelRole::Chat; }
    bool matches(const nlohmann::json& config) const override {
        return config_model_type(config) == "ernie4_5_vl_moe" ||
               config_has_architecture(config, "Ernie4_5_VLMoeForConditionalGeneration") ||
               config_has_architecture(config, "Ernie4_5_VL_MoeForConditionalGeneration");
    }
    ModelDescription describe(const std::filesystem::path& dir) const override {
        if (dir.empty()) {
            return describe_ernie45_vl(dir, parse_ernie45_vl_config("{}", "full-size defaults"), {});
        }
        return describe_ernie45_vl(dir, load_ernie45_vl_config(dir / "config.json"),
                                   load_generation_defaults(dir));
    }
    std::unique_ptr<LoadedModel> load(const ModelSlot& slot, Backend& backend,
                                      LoadContext& context) const override {
        return std::make_unique<LoadedErnie45Vl>(slot, backend, context);
    }
};

}  // namespace

std::unique_ptr<ModelFamily> make_ernie45_vl_family() {
    return std::make_unique<Ernie45VlFamily>();
}

}  // namespace folio
