#include "engine/models/model-registry.h"

#include "engine/common/error.h"
#include "engine/common/json-reader.h"
#include "engine/common/mapped-file.h"
#include "engine/models/ernie45-vl/ernie45-vl-family.h"
#include "engine/models/llama/llama-family.h"
#include "engine/models/paddleocr-vl/paddleocr-vl-family.h"
#include "engine/models/pp-doclayout/pp-doclayout-family.h"

namespace folio {

namespace {

std::string architectures_text(const nlohmann::json& config) {
    const auto it = config.find("architectures");
    if (it == config.end() || !it->is_array() || it->empty()) {
        return "none";
    }
    const nlohmann::json& list = *it;
    std::string text;
    for (size_t i = 0; i < list.size(); ++i) {
        const nlohmann::json& a = list[i];
        text += (text.empty() ? "" : ", ") + (a.is_string() ? a.get<std::string>() : describe_json(a));
    }
    return text;
}

}  // namespace

std::string config_model_type(const nlohmann::json& config) {
    const auto it = config.find("model_type");
    return it != config.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool config_has_architecture(const nlohmann::json& config, std::string_view architecture) {
    const auto it = config.find("architectures");
    if (it == config.end() || !it->is_array()) {
        return false;
    }
    const nlohmann::json& list = *it;
    for (size_t i = 0; i < list.size(); ++i) {
        if (list[i].is_string() && list[i].get_ref<const std::string&>() == architecture) {
            return true;
        }
    }
    return false;
}

const ModelRegistry& ModelRegistry::builtin() {
    static const ModelRegistry registry = [] {
        ModelRegistry r;
        r.add(make_paddleocr_vl_family());
        r.add(make_pp_doclayout_family());
        r.add(make_ernie45_vl_family());
        r.add(make_llama_family());
        return r;
    }();
    return registry;
}

void ModelRegistry::add(std::unique_ptr<ModelFamily> family) {
    if (!family) {
        fail("model registry: no family to add");
    }
    if (find(family->name())) {
        fail("model registry: a family named ", family->name(), " is there already");
    }
    families_.push_back(std::move(family));
}

const ModelFamily* ModelRegistry::find(std::string_view name) const {
    for (const auto& family : families_) {
        if (family->name() == name) {
            return family.get();
        }
    }
    return nullptr;
}

const ModelFamily* ModelRegistry::match(const nlohmann::json& config) const {
    for (const auto& family : families_) {
        if (family->matches(config)) {
            return family.get();
        }
    }
    return nullptr;
}

const ModelFamily& ModelRegistry::family_of(const std::filesystem::path& dir) const {
    const std::filesystem::path file = dir / "config.json";
    std::error_code error;
    if (!std::filesystem::is_directory(dir, error)) {
        fail(dir.string(), ": ", std::filesystem::exists(dir, error) ? "is not a folder" : "does not exist");
    }
    if (!std::filesystem::exists(file, error)) {
        fail(file.string(), ": missing; a model folder holds its config.json");
    }
    const nlohmann::json config = parse_json_object(read_file_text(file), file.string());
    if (const ModelFamily* family = match(config)) {
        return *family;
    }
    std::string known;
    for (const auto& family : families_) {
        known += (known.empty() ? "" : ", ") + std::string(family->name());
    }
    const std::string type = config_model_type(config);
    fail(file.string(), ": model_type \"", type, "\" (architectures: ", architectures_text(config),
         ") is not a model Folio can load; it knows ", known);
}

const ModelFamily& ModelRegistry::family_of(const ModelSlot& slot) const {
    if (!slot.family.empty()) {
        const ModelFamily* family = find(slot.family);
        if (!family) {
            fail("no model family named ", slot.family);
        }
        return *family;
    }
    std::error_code error;
    if (!slot.dir.empty() && std::filesystem::exists(slot.dir / "config.json", error)) {
        return family_of(slot.dir);
    }
    // Random weights, or a folder without config.json: the role's family, whose loader names what the
    // folder lacks (a Paddle inference folder, say).
    for (const auto& family : families_) {
        if (family->role() == slot.role) {
            return *family;
        }
    }
    fail("no model family for a ", model_role_name(slot.role), " model");
}

ModelDescription ModelRegistry::describe(const std::filesystem::path& dir) const {
    return family_of(dir).describe(dir);
}

std::unique_ptr<LoadedModel> ModelRegistry::load(const ModelSlot& slot, Backend& backend,
                                                 LoadContext& context) const {
    try {
        const ModelFamily& family = family_of(slot);
        if (family.role() != slot.role) {
            fail(slot.dir.empty() ? std::string(family.name()) : slot.dir.string(), " is a ",
                 model_role_name(family.role()), " model, not a ", model_role_name(slot.role), " model");
        }
        return family.load(slot, backend, context);
    } catch (const LoadCancelled&) {
        throw;
    } catch (const std::exception& e) {
        if (slot.dir.empty()) {
            throw;
        }
        const std::string what = e.what();
        // Errors that already start with the folder are not named twice.
        if (what.starts_with(slot.dir.string())) {
            throw;
        }
        fail("loading ", slot.dir.string(), ": ", what);
    }
}

ModelDescription describe_model(const std::filesystem::path& dir) {
    const ModelRegistry& registry = ModelRegistry::builtin();
    if (dir.empty()) {
        return registry.family_of(ModelSlot{}).describe(dir);
    }
    return registry.describe(dir);
}

}  // namespace folio
