// The registry of model families: it maps a folder's config.json (model_type, architectures) to the family
// that reads, describes and loads it. The service loads every slot through it (it is the ModelFactory the
// service uses unless a test gives its own), and front ends ask it what a folder's model offers.
#pragma once

#include <filesystem>
#include <memory>
#include <string_view>
#include <vector>

#include "engine/models/model-family.h"

namespace folio {

class ModelRegistry final : public ModelFactory {
public:
    // PaddleOCR-VL, PP-DocLayoutV2 and V3.
    static const ModelRegistry& builtin();

    void add(std::unique_ptr<ModelFamily> family);

    // The family whose name is `name`; nullptr where none is.
    const ModelFamily* find(std::string_view name) const;
    // The family of a config.json's object; nullptr where no family matches.
    const ModelFamily* match(const nlohmann::json& config) const;
    // The family of a model folder, from its config.json. Throws folio::Error naming the file when it is
    // missing or broken, or when no family matches (naming its model_type and architectures, and the
    // families there are).
    const ModelFamily& family_of(const std::filesystem::path& dir) const;
    // The family a slot loads with: its own `family` where it names one, else that of its folder's
    // config.json, else (random weights) the first family of the slot's role.
    const ModelFamily& family_of(const ModelSlot& slot) const;

    // What the model of a folder offers (family_of(dir).describe(dir)).
    ModelDescription describe(const std::filesystem::path& dir) const;

    // Loads the slot through its family; errors name the folder.
    std::unique_ptr<LoadedModel> load(const ModelSlot& slot, Backend& backend,
                                      LoadContext& context) const override;

    const std::vector<std::unique_ptr<ModelFamily>>& families() const { return families_; }

private:
    std::vector<std::unique_ptr<ModelFamily>> families_;
};

// What the model of a folder offers, through the built-in registry; `dir` empty: the full-size recognition
// model with random weights (benchmarks).
ModelDescription describe_model(const std::filesystem::path& dir);

}  // namespace folio
