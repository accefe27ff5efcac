// A model family: the architecture a folder's config.json names (model_type, architectures), what a model of
// it offers (ModelDescription), and how a slot of it loads. Each family lives under models/NAME/ with its
// config reader, checkpoint loader, prompt rendering and image processing; the registry (model-registry.h)
// picks the family of a folder, so the service and the front ends never read a family's config.json.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "engine/models/model-description.h"
#include "engine/models/model-loading.h"

namespace folio {

class ModelFamily {
public:
    virtual ~ModelFamily() = default;

    // The registry's name of the family.
    virtual std::string_view name() const = 0;
    virtual ModelRole role() const = 0;
    // Whether a folder whose config.json holds `config` (an object) is of this family.
    virtual bool matches(const nlohmann::json& config) const = 0;
    // The model of a folder of this family, from its files; `dir` empty: the full-size architecture with
    // random weights. Throws folio::Error naming the file and what is wrong.
    virtual ModelDescription describe(const std::filesystem::path& dir) const = 0;
    // Loads a slot of this family onto the backend, on the engine thread (ModelFactory::load).
    virtual std::unique_ptr<LoadedModel> load(const ModelSlot& slot, Backend& backend,
                                              LoadContext& context) const = 0;
};

// config.json's model_type, or "" where it has none; and whether its architectures name `architecture`.
std::string config_model_type(const nlohmann::json& config);
bool config_has_architecture(const nlohmann::json& config, std::string_view architecture);

}  // namespace folio
