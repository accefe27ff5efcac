#include "engine/models/model-loading.h"

namespace folio {

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

ProgressWeightSource::ProgressWeightSource(WeightSource& inner, const TensorStore* store,
                                           LoadContext& context)
    : ProgressWeightSource(
          inner,
          [store](const std::string& name) {
              const TensorView* stored = store ? store->find(name) : nullptr;
              return stored ? static_cast<int64_t>(stored->n_bytes) : int64_t{-1};
          },
          context) {}

std::shared_ptr<const ChatTemplate> chat_template_of(const ModelSlot& slot, const std::filesystem::path& dir,
                                                     std::string_view needed_for) {
    if (slot.chat_template) {
        return slot.chat_template;
    }
    if (auto found = ChatTemplate::find_in_folder(dir)) {
        return std::make_shared<const ChatTemplate>(std::move(*found));
    }
    fail(dir.string(),
         ": no chat template (chat_template.jinja, chat_template.json or tokenizer_config.json's ",
         "chat_template); ", needed_for);
}

std::vector<float> ProgressWeightSource::load(const std::string& name, const std::vector<int64_t>& shape) {
    context_.check_cancelled();
    std::vector<float> values = inner_.load(name, shape);
    count(name, values.size());
    return values;
}

void ProgressWeightSource::load_into(const std::string& name, const std::vector<int64_t>& shape,
                                     std::span<float> out) {
    context_.check_cancelled();
    inner_.load_into(name, shape, out);
    count(name, out.size());
}

void ProgressWeightSource::count(const std::string& name, size_t n_values) {
    const int64_t stored = stored_bytes_ ? stored_bytes_(name) : -1;
    context_.add_read(stored >= 0 ? stored : static_cast<int64_t>(n_values * sizeof(float)), name);
}

void ProgressQuantizationObserver::quantization_begins(int64_t n_weights) {
    context_.add_to_quantize(n_weights);
    context_.set_phase(LoadPhase::Quantization);
}

void ProgressQuantizationObserver::layer_quantized(const std::string& layer, int64_t n_weights) {
    context_.add_quantized(n_weights, layer);
}

}  // namespace folio
