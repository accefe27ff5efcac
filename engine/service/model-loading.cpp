#include "model-loading.h"

#include "models/paddleocr-vl/chat-prompt.h"
#include "models/paddleocr-vl/model-files.h"
#include "models/paddleocr-vl/paddleocr-vl.h"
#include "models/pp-doclayout/pp-doclayout.h"
#include "weight-source.h"

namespace folio {

const char* model_role_name(ModelRole role) {
    switch (role) {
        case ModelRole::Recognition:
            return "recognition";
        case ModelRole::Layout:
            return "layout";
    }
    return "unknown";
}

const char* load_phase_name(LoadPhase phase) {
    switch (phase) {
        case LoadPhase::Idle:
            return "idle";
        case LoadPhase::Opening:
            return "opening";
        case LoadPhase::Weights:
            return "weights";
        case LoadPhase::Quantization:
            return "quantization";
        case LoadPhase::MemoryPlan:
            return "memory plan";
        case LoadPhase::GraphCapture:
            return "graph capture";
        case LoadPhase::Ready:
            return "ready";
    }
    return "unknown";
}

void LoadContext::check_cancelled() const {
    if (cancelled_.load()) {
        throw LoadCancelled();
    }
}

void LoadContext::set_phase(LoadPhase phase) {
    check_cancelled();
    progress_.phase = phase;
    progress_.tensor.clear();
    report_(progress_);
}

void LoadContext::set_model(int model, int n_models) {
    progress_.model = model;
    progress_.n_models = n_models;
    report_(progress_);
}

void LoadContext::add_total(int64_t n_bytes) {
    progress_.bytes_total += n_bytes;
    report_(progress_);
}

void LoadContext::add_read(int64_t n_bytes, const std::string& tensor) {
    check_cancelled();
    progress_.bytes_read += n_bytes;
    progress_.tensor = tensor;
    report_(progress_);
}

void LoadContext::add_to_quantize(int64_t n_weights) {
    progress_.n_to_quantize += n_weights;
    report_(progress_);
}

void LoadContext::add_quantized(int64_t n_weights, const std::string& layer) {
    check_cancelled();
    progress_.n_quantized += n_weights;
    progress_.tensor = layer;
    report_(progress_);
}

namespace {

// A weight source that counts what it reads and stops at a cancel.
class ProgressWeightSource final : public WeightSource {
public:
    ProgressWeightSource(WeightSource& inner, const ModelFiles* files, LoadContext& context)
        : inner_(inner), files_(files), context_(context) {}

    std::vector<float> load(const std::string& name, const std::vector<int64_t>& shape) override {
        context_.check_cancelled();
        std::vector<float> values = inner_.load(name, shape);
        const TensorView* stored = files_ ? files_->find(name) : nullptr;
        context_.add_read(stored ? static_cast<int64_t>(stored->n_bytes)
                                 : static_cast<int64_t>(values.size() * sizeof(float)),
                          name);
        return values;
    }
    bool has(const std::string& name) const override { return inner_.has(name); }

private:
    WeightSource& inner_;
    const ModelFiles* files_;
    LoadContext& context_;
};

// The quantization pass as a phase of its own, its weights counted.
class ProgressQuantizationObserver final : public QuantizationObserver {
public:
    explicit ProgressQuantizationObserver(LoadContext& context) : context_(context) {}

    void quantization_begins(int64_t n_weights) override {
        context_.add_to_quantize(n_weights);
        context_.set_phase(LoadPhase::Quantization);
    }
    void layer_quantized(const std::string& layer, int64_t n_weights) override {
        context_.add_quantized(n_weights, layer);
    }

private:
    LoadContext& context_;
};

class LoadedPaddleOcrVl final : public LoadedModel {
public:
    LoadedPaddleOcrVl(const ModelSlot& slot, Backend& backend, LoadContext& context) {
        context.set_phase(LoadPhase::Opening);
        std::unique_ptr<WeightSource> weights;
        if (slot.dir.empty()) {
            config_ = parse_model_config("{}", "full-size defaults");
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
        context.set_phase(LoadPhase::Weights);
        ProgressWeightSource counted(*weights, files_.get(), context);
        ProgressQuantizationObserver quantization(context);
        model_ = std::make_unique<PaddleOcrVl>(backend, config_, counted, slot.load, &quantization);
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
        f.special = {config_.image_token_id, config_.vision_start_token_id, config_.vision_end_token_id};
        f.preprocessor = preprocessor_;
        const PaddleOcrVl* model = model_.get();
        f.n_image_tokens = [model](const ImageGrid& grid) { return model->n_image_tokens(grid); };
        return f;
    }
    int64_t max_image_tokens() const override {
        const int64_t factor = int64_t{preprocessor_.patch_size} * preprocessor_.merge_size;
        return preprocessor_.max_pixels / (factor * factor);
    }

private:
    std::unique_ptr<ModelFiles> files_;
    std::unique_ptr<Tokenizer> tokenizer_;
    ModelConfig config_;
    PreprocessorConfig preprocessor_;
    std::unique_ptr<PaddleOcrVl> model_;
};

// Activation bytes one 800x800 page takes at the layout model's peak (backbone stages, encoder, decoder, V3's
// masks), float32, with room to spare.
constexpr int64_t kLayoutPageActivationBytes = int64_t{384} << 20;

class LoadedLayout final : public LoadedModel {
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
        model_ = std::make_unique<PpDocLayout>(backend, slot.dir, LayoutModelParams{.allow_tf32 = true});
        context.add_read(error ? 0 : static_cast<int64_t>(n_bytes), "model.safetensors");
    }

    ModelRole role() const override { return ModelRole::Layout; }
    // A batch's pages, and where the backend records, the single page's recorded pass, which keeps its own.
    int64_t reserved_activation_bytes() const override {
        return (batch_ + (recorded_page_ ? 1 : 0)) * kLayoutPageActivationBytes;
    }
    const PpDocLayout* layout() const override { return model_.get(); }

private:
    int64_t batch_;
    bool recorded_page_;
    std::unique_ptr<PpDocLayout> model_;
};

class DefaultModelFactory final : public ModelFactory {
public:
    std::unique_ptr<LoadedModel> load(const ModelSlot& slot, Backend& backend,
                                      LoadContext& context) const override {
        try {
            if (slot.role == ModelRole::Layout) {
                return std::make_unique<LoadedLayout>(slot, backend, context);
            }
            return std::make_unique<LoadedPaddleOcrVl>(slot, backend, context);
        } catch (const LoadCancelled&) {
            throw;
        } catch (const std::exception& e) {
            if (slot.dir.empty()) {
                throw;
            }
            fail("loading ", slot.dir.string(), ": ", e.what());
        }
    }
};

}  // namespace

const ModelFactory& default_model_factory() {
    static const DefaultModelFactory factory;
    return factory;
}

}  // namespace folio
