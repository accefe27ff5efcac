#include "engine/models/paddleocr-vl/paddleocr-vl-family.h"

#include "engine/common/error.h"
#include "engine/common/mapped-file.h"
#include "engine/models/paddleocr-vl/chat-prompt.h"
#include "engine/models/paddleocr-vl/model-files.h"
#include "engine/models/paddleocr-vl/paddleocr-vl.h"
#include "engine/models/prompt-format.h"

namespace folio {

namespace {

constexpr std::string_view kFamilyName = "paddleocr-vl";

// Versions 1.5 and later add the spotting and seal tasks, with the location tokens spotting answers in.
constexpr std::string_view kLocationToken = "<|LOC_BEGIN|>";

ModelDescription describe_paddleocr_vl(const std::filesystem::path& dir, const ModelConfig& config,
                                       const Tokenizer* tokenizer, GenerationDefaults generation) {
    ModelDescription d;
    d.generation = std::move(generation);
    d.family = std::string(kFamilyName);
    d.name = dir.empty() ? "PaddleOCR-VL (random weights)" : dir.filename().string();
    d.model_type = config.model_type;
    d.role = ModelRole::Recognition;
    d.tasks = {"OCR:", "Table Recognition:", "Formula Recognition:", "Chart Recognition:"};
    const bool has_locations =
        tokenizer ? tokenizer->find_token(kLocationToken).has_value()
                  : !dir.empty() && (file_mentions(dir / "tokenizer_config.json", kLocationToken) ||
                                     file_mentions(dir / "tokenizer.json", kLocationToken) ||
                                     file_mentions(dir / "added_tokens.json", kLocationToken));
    if (has_locations) {
        d.tasks.emplace_back("Spotting:");
        d.tasks.emplace_back("Seal Recognition:");
    }
    d.max_context = config.text.max_position_embeddings;
    d.modalities = {Modality::Text, Modality::Image};
    return d;
}

class LoadedPaddleOcrVl final : public LoadedModel {
public:
    LoadedPaddleOcrVl(const ModelSlot& slot, Backend& backend, LoadContext& context) {
        context.set_phase(LoadPhase::Opening);
        std::unique_ptr<WeightSource> weights;
        if (slot.dir.empty()) {
            config_ = parse_model_config(slot.random_config, "full-size defaults");
            preprocessor_ = parse_preprocessor_config("{}", "reference defaults");
            weights = make_random_weight_source(2026);
            // Every weight is read as float32, whatever it is stored as.
            context.add_total(weight_bytes(config_, ModelLoadParams{}));
            if (!slot.tokenizer_dir.empty()) {
                // Random weights that take prompts (the document benchmark): the special tokens are the
                // tokenizer's.
                tokenizer_ = Tokenizer::load(slot.tokenizer_dir);
                const SpecialTokenIds ids = template_token_ids(*tokenizer_);
                config_.image_token_id = ids.image_token_id;
                config_.vision_start_token_id = ids.vision_start_token_id;
                config_.vision_end_token_id = ids.vision_end_token_id;
                config_.text.bos_token_id = tokenizer_->bos_id();
                if (tokenizer_->eos_id() >= 0) {
                    config_.text.eos_token_ids = {tokenizer_->eos_id()};
                }
                if (tokenizer_->n_vocab() > config_.text.vocab_size) {
                    fail(slot.tokenizer_dir.string(), ": a tokenizer of ", tokenizer_->n_vocab(),
                         " tokens for a model of ", config_.text.vocab_size);
                }
            }
        } else {
            files_ = ModelFiles::open(slot.dir);
            config_ = files_->config();
            preprocessor_ = files_->preprocessor();
            tokenizer_ = Tokenizer::load(slot.tokenizer_dir.empty() ? slot.dir : slot.tokenizer_dir);
            weights = make_file_weight_source(*files_);
            context.add_total(static_cast<int64_t>(files_->n_bytes()));
        }
        if (slot.adjust_preprocessor) {
            slot.adjust_preprocessor(preprocessor_);
        }
        generation_ = load_generation_defaults(slot.dir, slot.generation_config);
        check_generation_token_ids(generation_, config_.text.vocab_size);
        add_stop_ids(config_.text.eos_token_ids, generation_.eos_token_ids);
        context.set_phase(LoadPhase::Weights);
        const ModelFiles* files = files_.get();
        ProgressWeightSource counted(
            *weights,
            [files](const std::string& name) {
                const TensorView* stored = files ? files->find(name) : nullptr;
                return stored ? static_cast<int64_t>(stored->n_bytes) : int64_t{-1};
            },
            context);
        ProgressQuantizationObserver quantization(context);
        model_ = std::make_unique<PaddleOcrVl>(backend, config_, counted, slot.load, &quantization);
        description_ = describe_paddleocr_vl(slot.dir, config_, tokenizer_.get(), generation_);
        if (slot.chat_template) {
            chat_template_ = slot.chat_template;
        } else if (tokenizer_) {
            // The model folder's template, else the tokenizer folder's, else the built-in one.
            const bool own = !slot.dir.empty() && ChatTemplate::find_in_folder(slot.dir).has_value();
            chat_template_ = paddleocr_vl_chat_template(own ? slot.dir : slot.tokenizer_dir);
        }
    }

    ModelRole role() const override { return ModelRole::Recognition; }
    GenerativeModel* generative() override { return model_.get(); }
    const Tokenizer* tokenizer() const override { return tokenizer_.get(); }
    std::optional<PromptFormat> prompt_format() const override {
        if (!tokenizer_) {
            return std::nullopt;
        }
        PromptFormat f;
        f.tokenizer = tokenizer_.get();
        f.chat_template = chat_template_;
        f.template_values = special_token_values(*tokenizer_);
        f.special = {config_.image_token_id, config_.vision_start_token_id, config_.vision_end_token_id};
        f.preprocessor = preprocessor_;
        const PaddleOcrVl* model = model_.get();
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
    std::unique_ptr<ModelFiles> files_;
    std::unique_ptr<Tokenizer> tokenizer_;
    std::shared_ptr<const ChatTemplate> chat_template_;
    ModelConfig config_;
    PreprocessorConfig preprocessor_;
    GenerationDefaults generation_;
    std::unique_ptr<PaddleOcrVl> model_;
    ModelDescription description_;
};

class PaddleOcrVlFamily final : public ModelFamily {
public:
    std::string_view name() const override { return kFamilyName; }
    ModelRole role() const override { return ModelRole::Recognition; }
    bool matches(const nlohmann::json& config) const override {
        const std::string type = config_model_type(config);
        if (type == "paddleocr_vl" ||
            config_has_architecture(config, "PaddleOCRVLForConditionalGeneration")) {
            return true;
        }
        // A config.json that names neither is read as PaddleOCR-VL's, whose reader fills in the defaults.
        return type.empty() && !config.contains("architectures");
    }
    ModelDescription describe(const std::filesystem::path& dir) const override {
        if (dir.empty()) {
            return describe_paddleocr_vl(dir, parse_model_config("{}", "full-size defaults"), nullptr, {});
        }
        return describe_paddleocr_vl(dir, load_model_config(dir / "config.json"), nullptr,
                                     load_generation_defaults(dir));
    }
    std::unique_ptr<LoadedModel> load(const ModelSlot& slot, Backend& backend,
                                      LoadContext& context) const override {
        return std::make_unique<LoadedPaddleOcrVl>(slot, backend, context);
    }
};

}  // namespace

std::unique_ptr<ModelFamily> make_paddleocr_vl_family() {
    return std::make_unique<PaddleOcrVlFamily>();
}

}  // namespace folio
