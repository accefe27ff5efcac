// Models as the service loads them: what a model slot names (a folder, its role, how to load it), the
// progress of loading (phase, bytes read, weights quantized) with cancellation, the loaded model the service
// holds, and the factory that turns a slot into one on the engine thread. The model registry
// (models/model-registry.h) is that factory: it hands each slot to the family its folder's config.json names.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/chat-template/chat-template.h"
#include "engine/common/error.h"
#include "engine/files/safetensors.h"
#include "engine/files/weight-source.h"
#include "engine/image/preprocessor-config.h"
#include "engine/models/generation-config.h"
#include "engine/models/linear.h"
#include "engine/models/model-description.h"
#include "engine/models/prompt-format.h"
#include "engine/runtime/model.h"
#include "engine/tokenizer/tokenizer.h"

namespace folio {

class LayoutModel;

// One model to load.
struct ModelSlot {
    ModelSlot() = default;
    ModelSlot(ModelRole slot_role, std::filesystem::path slot_dir, ModelLoadParams slot_load = {})
        : role(slot_role), dir(std::move(slot_dir)), load(slot_load) {}

    ModelRole role = ModelRole::Recognition;
    // The registry's name of the model family; empty: the family the folder's config.json names (random
    // weights: the first family of the role, PaddleOCR-VL for recognition).
    std::string family;
    std::filesystem::path dir;  // empty: the full-size architecture with seeded random weights (benchmarks)
    // With random weights, config.json text whose values replace the full-size defaults (a benchmark's fewer
    // layers, say); ignored where dir is given.
    std::string random_config = "{}";
    ModelLoadParams load;
    // Another folder's tokenizer; empty: dir's. With random weights (dir empty) it makes the model take
    // prompts, its special tokens at the tokenizer's ids.
    std::filesystem::path tokenizer_dir;
    // A chat template in place of the folder's (--chat-template); none: the folder's own.
    std::shared_ptr<const ChatTemplate> chat_template;
    // A layout slot: the most pages one call of the layout model runs together, and how its convolutions
    // round their inputs.
    int layout_batch = 4;
    ConvPrecision layout_precision = ConvPrecision::Tf32;
    // Changes to the folder's preprocessing (a front end's image pixel bounds); may throw folio::Error.
    std::function<void(PreprocessorConfig&)> adjust_preprocessor;
    // Where the request defaults come from (--generation-config): the folder's generation_config.json unless
    // a front end says otherwise.
    GenerationConfigSource generation_config;
};

// A slot loads in the phases opening (its files), weights (every tensor kept as it is stored) and, where it
// asks for WINT8 or WINT4, quantization (the linear layers read and quantized, one at a time); then the
// service plans the memory and captures the decode graphs.
enum class LoadPhase { Idle, Opening, Weights, Quantization, MemoryPlan, GraphCapture, Ready };
const char* load_phase_name(LoadPhase phase);

struct LoadProgress {
    LoadPhase phase = LoadPhase::Idle;
    int model = 0;  // the slot being loaded
    int n_models = 0;
    // Bytes of weights read as stored, of all slots together: in the weights phase, and in the quantization
    // phase those of the layers it quantizes.
    int64_t bytes_read = 0;
    int64_t bytes_total = 0;
    // Weights (values) of the layers quantized at load, of all slots together: quantized of all to quantize.
    int64_t n_quantized = 0;
    int64_t n_to_quantize = 0;
    std::string tensor;  // the tensor being read, or the layer being quantized (its first weight)
};

// Loading was cancelled; what was made so far is released as this unwinds.
class LoadCancelled : public Error {
public:
    LoadCancelled() : Error("loading cancelled") {}
};

// What a factory reports to and asks of the service while it loads.
class LoadContext {
public:
    LoadContext(std::function<void(const LoadProgress&)> report, const std::atomic<bool>& cancelled)
        : report_(std::move(report)), cancelled_(cancelled) {}

    // Throws LoadCancelled once the service cancels the load.
    void check_cancelled() const;
    void set_phase(LoadPhase phase);
    void set_model(int model, int n_models);
    void add_total(int64_t n_bytes);
    void add_read(int64_t n_bytes, const std::string& tensor);
    void add_to_quantize(int64_t n_weights);
    void add_quantized(int64_t n_weights, const std::string& layer);
    const LoadProgress& progress() const { return progress_; }

private:
    std::function<void(const LoadProgress&)> report_;
    const std::atomic<bool>& cancelled_;
    LoadProgress progress_;
};

// A model the service holds. A generative one serves requests through EngineCore; a layout model serves the
// service's layout requests (engine/service/layout-queue.h).
class LoadedModel {
public:
    virtual ~LoadedModel() = default;
    virtual ModelRole role() const = 0;
    virtual GenerativeModel* generative() { return nullptr; }
    virtual const Tokenizer* tokenizer() const { return nullptr; }
    // How prompts are built from images and text; none where only prepared requests are taken.
    virtual std::optional<PromptFormat> prompt_format() const { return std::nullopt; }
    // The most tokens one image may take (from the image processor's max_pixels); 0: no bound of its own.
    virtual int64_t max_image_tokens() const { return 0; }
    // Activation bytes the model keeps free for itself when it runs beside a generative one.
    virtual int64_t reserved_activation_bytes() const { return 0; }
    // A layout model (PP-DocLayoutV2 or V3), which runs on the engine thread.
    virtual const LayoutModel* layout() const { return nullptr; }
    // What the model offers.
    virtual ModelDescription description() const {
        ModelDescription d;
        d.role = role();
        return d;
    }
};

// A weight source that counts what it reads into the loading progress and stops at a cancel; stored_bytes
// gives a tensor's bytes as its file stores them (-1: count its float32 values).
class ProgressWeightSource final : public WeightSource {
public:
    ProgressWeightSource(WeightSource& inner, std::function<int64_t(const std::string&)> stored_bytes,
                         LoadContext& context)
        : inner_(inner), stored_bytes_(std::move(stored_bytes)), context_(context) {}
    // The bytes as the store's files hold them; store null (random weights): float32 values.
    ProgressWeightSource(WeightSource& inner, const TensorStore* store, LoadContext& context);

    std::vector<float> load(const std::string& name, const std::vector<int64_t>& shape) override;
    void load_into(const std::string& name, const std::vector<int64_t>& shape, std::span<float> out) override;
    bool has(const std::string& name) const override { return inner_.has(name); }

private:
    void count(const std::string& name, size_t n_values);

    WeightSource& inner_;
    std::function<int64_t(const std::string&)> stored_bytes_;
    LoadContext& context_;
};

// A chat model's template: the slot's (--chat-template), else the tokenizer folder's; a folder without one is
// an error naming it, saying what the template is for.
std::shared_ptr<const ChatTemplate> chat_template_of(const ModelSlot& slot, const std::filesystem::path& dir,
                                                     std::string_view needed_for);

// The quantization pass as a phase of the loading progress, its weights counted.
class ProgressQuantizationObserver final : public QuantizationObserver {
public:
    explicit ProgressQuantizationObserver(LoadContext& context) : context_(context) {}

    void quantization_begins(int64_t n_weights) override;
    void layer_quantized(const std::string& layer, int64_t n_weights) override;

private:
    LoadContext& context_;
};

class ModelFactory {
public:
    virtual ~ModelFactory() = default;
    // Loads the slot's model onto the backend, on the engine thread. Throws folio::Error naming the file and
    // the problem, or LoadCancelled.
    virtual std::unique_ptr<LoadedModel> load(const ModelSlot& slot, Backend& backend,
                                              LoadContext& context) const = 0;
};

}  // namespace folio
