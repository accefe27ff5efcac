#include "engine/models/llama/llama-family.h"

#include "engine/chat-template/chat-template.h"
#include "engine/common/error.h"
#include "engine/common/mapped-file.h"
#include "engine/files/safetensors.h"
#include "engine/files/weight-source.h"
#include "engine/models/llama/config.h"
#include "engine/models/llama/llama.h"
#include "engine/models/prompt-format.h"
#include "engine/tokenizer/tokenizer.h"

namespace folio {

namespace {

constexpr std::string_view kFamilyName = "llama";
// The token a reasoning model's thought ends with (DeepSeek-R1's).
constexpr std::string_view kThinkEnd = "</think>";

// deepseek_r1 where the model's tokens hold the end of a thought (a DeepSeek-R1 distillation); none for a
// plain Llama.
std::string reasoning_parser_of(const std::filesystem::path& dir, const Tokenizer* tokenizer) {
    const bool thinks = tokenizer
                            ? tokenizer->find_token(kThinkEnd).has_value()
                            : !dir.empty() && (file_mentions(dir / "tokenizer_config.json", kThinkEnd) ||
                                               file_mentions(dir / "tokenizer.json", kThinkEnd));
    return thinks ? "deepseek_r1" : "";
}

ModelDescription describe_llama(const std::filesystem::path& dir, const LlamaConfig& config,
                                const Tokenizer* tokenizer, GenerationDefaults generation) {
    ModelDescription d;
    d.generation = std::move(generation);
    d.family = std::string(kFamilyName);
    d.name = dir.empty() ? "Llama (random weights)" : dir.filename().string();
    d.model_type = "llama";
    d.role = ModelRole::Chat;
    d.max_context = config.max_position_embeddings;
    d.modalities = {Modality::Text};
    d.reasoning_parser = reasoning_parser_of(dir, tokenizer);
    return d;
}

class LoadedLlama final : public LoadedModel {
public:
    LoadedLlama(const ModelSlot& slot, Backend& backend, LoadContext& context) {
        context.set_phase(LoadPhase::Opening);
        std::unique_ptr<WeightSource> weights;
        if (slot.dir.empty()) {
            config_ = llama_full_size_config(slot.random_config);
            weights = make_random_weight_source(2026);
        } else {
            config_ = load_llama_config(slot.dir / "config.json");
            store_ = TensorStore::open(slot.dir);
            if (store_->find("model.embed_tokens.weight") == nullptr) {
                fail(store_->dir().string(),
                     ": the weights are not in transformers' layout (no model.embed_tokens.weight); Folio "
                     "reads "
                     "LlamaForCausalLM checkpoints as transformers saves them");
            }
            weights = make_store_weight_source(*store_);
            context.add_total(static_cast<int64_t>(store_->n_bytes()));
        }
        const std::filesystem::path tokenizer_dir =
            slot.tokenizer_dir.empty() ? slot.dir : slot.tokenizer_dir;
        if (!tokenizer_dir.empty()) {
            tokenizer_ = Tokenizer::load(tokenizer_dir);
            if (tokenizer_->n_vocab() > config_.vocab_size) {
                fail(tokenizer_dir.string(), ": a tokenizer of ", tokenizer_->n_vocab(),
                     " tokens for a model of ", config_.vocab_size);
            }
            chat_template_ = chat_template_of(slot, tokenizer_dir, "give one with --chat-template");
        }
        generation_ = load_generation_defaults(slot.dir, slot.generation_config);
        check_generation_token_ids(generation_, config_.vocab_size);
        add_stop_ids(config_.eos_token_ids, generation_.eos_token_ids);
        context.set_phase(LoadPhase::Weights);
        ProgressWeightSource counted(*weights, store_.get(), context);
        ProgressQuantizationObserver quantization(context);
        model_ = std::make_unique<Llama>(backend, config_, counted, slot.load, &quantization);
        description_ = describe_llama(slot.dir, config_, tokenizer_.get(), generation_);
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
        f.n_image_tokens = [](const ImageGrid&) -> int64_t {
            fail("a Llama model reads text only; it takes no images");
        };
        f.generation = generation_;
        // Rendered and tokenized as apply_chat_template does.
        f.text_content = true;
        f.chat_special_tokens = false;
        return f;
    }
    ModelDescription description() const override { return description_; }

private:
    std::unique_ptr<TensorStore> store_;
    std::unique_ptr<Tokenizer> tokenizer_;
    std::shared_ptr<const ChatTemplate> chat_template_;
    LlamaConfig config_;
    GenerationDefaults generation_;
    std::unique_ptr<Llama> model_;
    ModelDescription description_;
};

class LlamaFamily final : public ModelFamily {
public:
    std::string_view name() const override { return kFamilyName; }
    ModelRole role() const override { return ModelRole::Chat; }
    bool matches(const nlohmann::json& config) const override {
        return config_model_type(config) == "llama" || config_has_architecture(config, "LlamaForCausalLM");
    }
    ModelDescription describe(const std::filesystem::path& dir) const override {
        if (dir.empty()) {
            return describe_llama(dir, llama_full_size_config(), nullptr, {});
        }
        return describe_llama(dir, load_llama_config(dir / "config.json"), nullptr,
                              load_generation_defaults(dir));
    }
    std::unique_ptr<LoadedModel> load(const ModelSlot& slot, Backend& backend,
                                      LoadContext& context) const override {
        return std::make_unique<LoadedLlama>(slot, backend, context);
    }
};

}  // namespace

std::unique_ptr<ModelFamily> make_llama_family() {
    return std::make_unique<LlamaFamily>();
}

}  // namespace folio
