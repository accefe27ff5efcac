#include "app/cli/cli-service.h"

#include <iomanip>
#include <iostream>
#include <sstream>

#include "app/options/device-memory.h"
#include "engine/common/error.h"
#include "engine/models/model-registry.h"

namespace folio::cli {

std::string phase_line(const LoadProgress& p, std::string_view program) {
    std::ostringstream line;
    line << std::fixed << std::setprecision(1) << program << ": loading: " << load_phase_name(p.phase);
    if (p.phase == LoadPhase::Weights) {
        line << " (" << static_cast<double>(p.bytes_total) / (1 << 20) << " MiB)";
    } else if (p.phase == LoadPhase::Quantization) {
        line << " (" << static_cast<double>(p.n_to_quantize) / 1e6 << " M weights)";
    }
    return line.str();
}

void load_service(EngineService& service, const Options& opt, const std::filesystem::path& model_dir,
                  const EngineOptions& engine_options, const std::optional<std::filesystem::path>& layout_dir,
                  int layout_batch) {
    ServiceParams params;
    set_service_devices(params, opt);
    ModelSlot slot{ModelRole::Recognition, model_dir, engine_options.load};
    // A chat model's folder (ERNIE-4.5-VL) loads in a chat slot; anything else as recognition, whose loader
    // names what is wrong with a folder it cannot read.
    std::error_code error;
    if (!model_dir.empty() && std::filesystem::exists(model_dir / "config.json", error)) {
        try {
            if (ModelRegistry::builtin().describe(model_dir).role == ModelRole::Chat) {
                slot.role = ModelRole::Chat;
            }
        } catch (const Error&) {
        }
    }
    slot.tokenizer_dir = engine_options.tokenizer.value_or(std::filesystem::path());
    slot.chat_template = engine_options.chat_template;
    slot.generation_config = engine_options.generation_config;
    slot.adjust_preprocessor = [engine_options](PreprocessorConfig& pre) {
        apply_preprocessing(engine_options, pre);
    };
    params.models.push_back(std::move(slot));
    if (layout_dir) {
        ModelSlot layout{ModelRole::Layout, *layout_dir, {}};
        layout.layout_batch = layout_batch;
        layout.layout_precision = engine_options.layout_precision;
        params.models.push_back(std::move(layout));
    }
    params.engine = engine_options.engine;
    params.on_progress = [shown = LoadPhase::Idle, program = opt.program()](const LoadProgress& p) mutable {
        if (p.phase != shown && p.phase != LoadPhase::Idle && p.phase != LoadPhase::Ready) {
            std::cerr << phase_line(p, program) << "\n";
        }
        shown = p.phase;
    };
    service.load(std::move(params));
    while (service.wait_loaded(std::chrono::seconds(1)) == ServiceState::Loading) {
    }
    const ServiceStatus status = service.status();
    if (status.state != ServiceState::Ready) {
        fail(status.error);
    }
    // The request defaults the model's generation_config.json gives (--generation-config).
    for (const ModelDescription& model : service.models()) {
        if (!model.generation.empty()) {
            std::cerr << opt.program() << ": " << model.name
                      << ": request defaults: " << describe_generation_defaults(model.generation) << "\n";
        }
    }
}

}  // namespace folio::cli
