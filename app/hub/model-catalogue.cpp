#include "app/hub/model-catalogue.h"

#include <algorithm>
#include <cctype>

namespace folio::hub {

const char* model_kind_name(ModelKind kind) {
    switch (kind) {
        case ModelKind::Recognition:
            return "recognition";
        case ModelKind::Layout:
            return "layout";
        case ModelKind::Chat:
            return "chat";
    }
    return "unknown";
}

const std::vector<CatalogueEntry>& model_catalogue() {
    static const std::vector<CatalogueEntry> catalogue = {
        {"PaddlePaddle/PaddleOCR-VL", "PaddleOCR-VL 0.9B", ModelKind::Recognition,
         "PaddlePaddle/PP-DocLayoutV2_safetensors"},
        {"PaddlePaddle/PaddleOCR-VL-1.5", "PaddleOCR-VL 1.5", ModelKind::Recognition,
         "PaddlePaddle/PP-DocLayoutV3_safetensors"},
        {"PaddlePaddle/PaddleOCR-VL-1.6", "PaddleOCR-VL 1.6", ModelKind::Recognition,
         "PaddlePaddle/PP-DocLayoutV3_safetensors"},
        {"PaddlePaddle/PP-DocLayoutV2_safetensors", "PP-DocLayoutV2", ModelKind::Layout, ""},
        {"PaddlePaddle/PP-DocLayoutV3_safetensors", "PP-DocLayoutV3", ModelKind::Layout, ""},
        {"baidu/ERNIE-4.5-VL-28B-A3B-PT", "ERNIE-4.5-VL 28B-A3B", ModelKind::Chat, ""},
        {"baidu/ERNIE-4.5-VL-28B-A3B-Thinking", "ERNIE-4.5-VL 28B-A3B Thinking", ModelKind::Chat, ""},
        {"deepseek-ai/DeepSeek-R1-Distill-Llama-8B", "DeepSeek-R1-Distill-Llama 8B", ModelKind::Chat, ""},
    };
    return catalogue;
}

const CatalogueEntry* find_catalogue_entry(std::string_view repo) {
    const auto same = [repo](const CatalogueEntry& entry) {
        return std::equal(
            entry.repo.begin(), entry.repo.end(), repo.begin(), repo.end(),
            [](unsigned char a, unsigned char b) { return std::tolower(a) == std::tolower(b); });
    };
    const auto& catalogue = model_catalogue();
    const auto it = std::find_if(catalogue.begin(), catalogue.end(), same);
    return it == catalogue.end() ? nullptr : &*it;
}

const std::vector<std::string>& fetch_patterns(ModelKind kind) {
    static const std::vector<std::string> recognition = {
        "config.json",
        "generation_config.json",
        "preprocessor_config.json",
        "processor_config.json",
        "tokenizer.json",
        "tokenizer.model",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "added_tokens.json",
        "chat_template.jinja",
        "chat_template.json",
        "video_preprocessor_config.json",
        "*.safetensors",
        "model.safetensors.index.json",
    };
    static const std::vector<std::string> layout = {
        "config.json",
        "preprocessor_config.json",
        "*.safetensors",
        "model.safetensors.index.json",
    };
    return kind == ModelKind::Layout ? layout : recognition;
}

const std::vector<RequiredFile>& required_files(ModelKind kind) {
    static const RequiredFile config{{"config.json"}, "the model configuration"};
    static const RequiredFile preprocessor{{"preprocessor_config.json"},
                                           "the image preprocessing configuration"};
    static const RequiredFile weights{{"model.safetensors", "model.safetensors.index.json"}, "the weights"};
    // The engine reads a recognition model's preprocessing from preprocessor_config.json where there is one
    // and takes the reference's defaults otherwise.
    static const std::vector<RequiredFile> recognition = {
        config, {{"tokenizer.json", "tokenizer.model"}, "the tokenizer"}, weights};
    static const std::vector<RequiredFile> layout = {config, preprocessor, weights};
    return kind == ModelKind::Layout ? layout : recognition;
}

bool glob_match(std::string_view pattern, std::string_view path) {
    // Iterative matching with one backtracking point, the last '*' seen.
    size_t p = 0, s = 0;
    size_t star = std::string_view::npos, star_s = 0;
    while (s < path.size()) {
        if (p < pattern.size() && pattern[p] == '*') {
            star = p++;
            star_s = s;
        } else if (p < pattern.size() && path[s] != '/' && (pattern[p] == '?' || pattern[p] == path[s])) {
            ++p;
            ++s;
        } else if (p < pattern.size() && pattern[p] == '/' && path[s] == '/') {
            ++p;
            ++s;
        } else if (star != std::string_view::npos && path[star_s] != '/') {
            // Let the last '*' take one more character, never a '/'.
            p = star + 1;
            s = ++star_s;
        } else {
            return false;
        }
    }
    while (p < pattern.size() && pattern[p] == '*') {
        ++p;
    }
    return p == pattern.size();
}

bool matches_any(const std::vector<std::string>& patterns, std::string_view path) {
    return std::any_of(patterns.begin(), patterns.end(),
                       [path](const std::string& pattern) { return glob_match(pattern, path); });
}

}  // namespace folio::hub
