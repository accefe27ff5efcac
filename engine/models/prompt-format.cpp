#include "engine/models/prompt-format.h"

#include <optional>
#include <string>
#include <utility>

namespace folio {

nlohmann::ordered_json special_token_values(const Tokenizer& tokenizer) {
    nlohmann::ordered_json values = nlohmann::ordered_json::object();
    const std::pair<const char*, int32_t> tokens[] = {{"bos_token", tokenizer.bos_id()},
                                                      {"eos_token", tokenizer.eos_id()},
                                                      {"pad_token", tokenizer.pad_id()}};
    for (const auto& [key, id] : tokens) {
        if (id >= 0) {
            if (const std::optional<std::string> text = tokenizer.token_text(id)) {
                values[key] = *text;
            }
        }
    }
    return values;
}

}  // namespace folio
