#include "app/hub/hub-settings.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "app/hub/hub-cache.h"

namespace folio::hub {

namespace {

std::optional<std::string> non_empty(const EnvironmentLookup& env, const char* name) {
    std::optional<std::string> value = env(name);
    if (value && value->empty()) {
        return std::nullopt;
    }
    return value;
}

// "~" and "~/..." with the home folder, as os.path.expanduser does.
std::filesystem::path expand_home(const std::string& text, const EnvironmentLookup& env) {
    if (text == "~" || text.starts_with("~/")) {
        return std::filesystem::path(env("HOME").value_or("")) /
               text.substr(std::min<size_t>(2, text.size()));
    }
    return text;
}

bool is_true(const std::optional<std::string>& value) {
    if (!value) {
        return false;
    }
    std::string upper;
    std::transform(value->begin(), value->end(), std::back_inserter(upper),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    return upper == "1" || upper == "ON" || upper == "YES" || upper == "TRUE";
}

// A token with surrounding white space removed; nullopt when nothing is left.
std::optional<std::string> clean_token(std::string token) {
    const auto is_space = [](unsigned char c) { return std::isspace(c) != 0; };
    token.erase(token.begin(), std::find_if_not(token.begin(), token.end(), is_space));
    token.erase(std::find_if_not(token.rbegin(), token.rend(), is_space).base(), token.end());
    if (token.empty()) {
        return std::nullopt;
    }
    return token;
}

}  // namespace

EnvironmentLookup process_environment() {
    return [](const char* name) -> std::optional<std::string> {
        const char* value = std::getenv(name);
        return value ? std::optional<std::string>(value) : std::nullopt;
    };
}

HubSettings hub_settings_from_environment(const EnvironmentLookup& env) {
    HubSettings settings;
    const std::filesystem::path home = env("HOME").value_or("");
    if (const auto endpoint = non_empty(env, "HF_ENDPOINT")) {
        settings.endpoint = *endpoint;
        while (settings.endpoint.ends_with('/')) {
            settings.endpoint.pop_back();
        }
    }
    const auto xdg_cache = non_empty(env, "XDG_CACHE_HOME");
    const std::filesystem::path hf_home = expand_home(
        non_empty(env, "HF_HOME")
            .value_or(
                ((xdg_cache ? std::filesystem::path(*xdg_cache) : home / ".cache") / "huggingface").string()),
        env);
    if (const auto cache = non_empty(env, "HF_HUB_CACHE")) {
        settings.cache_dir = expand_home(*cache, env);
    } else if (const auto legacy = non_empty(env, "HUGGINGFACE_HUB_CACHE")) {
        settings.cache_dir = expand_home(*legacy, env);
    } else {
        settings.cache_dir = hf_home / "hub";
    }
    const auto xdg_data = non_empty(env, "XDG_DATA_HOME");
    settings.models_dir =
        (xdg_data ? std::filesystem::path(*xdg_data) : home / ".local" / "share") / "folio" / "models";

    settings.token_path =
        expand_home(non_empty(env, "HF_TOKEN_PATH").value_or((hf_home / "token").string()), env);
    if (const auto token = non_empty(env, "HF_TOKEN")) {
        settings.token = clean_token(*token);
        settings.token_source = "HF_TOKEN";
    } else if (const auto legacy_token = non_empty(env, "HUGGING_FACE_HUB_TOKEN")) {
        settings.token = clean_token(*legacy_token);
        settings.token_source = "HUGGING_FACE_HUB_TOKEN";
    } else if (std::optional<std::string> text = read_file(settings.token_path)) {
        settings.token = clean_token(std::move(*text));
        settings.token_source = settings.token_path.string();
    }
    // As huggingface_hub: TRANSFORMERS_OFFLINE counts only where HF_HUB_OFFLINE is unset or empty.
    const auto offline = non_empty(env, "HF_HUB_OFFLINE");
    settings.offline = is_true(offline ? offline : env("TRANSFORMERS_OFFLINE"));
    return settings;
}

}  // namespace folio::hub
