// Where the Hugging Face Hub and its cache are, read from the environment as huggingface_hub reads it, and
// Folio's own models folder.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>

namespace folio::hub {

// Looks up an environment variable: the process environment, or a table in tests.
using EnvironmentLookup = std::function<std::optional<std::string>(const char* name)>;
EnvironmentLookup process_environment();

struct HubSettings {
    // HF_ENDPOINT (a mirror), without a trailing '/'.
    std::string endpoint = "https://huggingface.co";
    // HF_HUB_CACHE, else HUGGINGFACE_HUB_CACHE, else HF_HOME/hub, where HF_HOME defaults to
    // XDG_CACHE_HOME/huggingface or ~/.cache/huggingface.
    std::filesystem::path cache_dir;
    // Folio's models folder: XDG_DATA_HOME/folio/models or ~/.local/share/folio/models.
    std::filesystem::path models_dir;
    // HF_TOKEN (or HUGGING_FACE_HUB_TOKEN), else the token file's text; white space around it removed.
    std::optional<std::string> token;
    std::string token_source;          // "HF_TOKEN" or the token file's path, for messages
    std::filesystem::path token_path;  // HF_TOKEN_PATH, else HF_HOME/token
    // HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) is 1, ON, YES or TRUE: nothing touches the network.
    bool offline = false;
};

HubSettings hub_settings_from_environment(const EnvironmentLookup& env = process_environment());

}  // namespace folio::hub
