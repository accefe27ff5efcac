// Fuzzes the chat-template interpreter: any input is either a template that renders (within the bounds on
// work, depth and output) or fails with folio::Error; nothing else may escape.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "engine/chat-template/chat-template.h"
#include "engine/common/error.h"

namespace {

const nlohmann::ordered_json& context() {
    static const nlohmann::ordered_json value = nlohmann::ordered_json::parse(R"({
        "messages": [
            {"role": "system", "content": "You are helpful."},
            {"role": "user", "content": [{"type": "image"}, {"type": "video"}, {"type": "text", "text": "Read it."}]},
            {"role": "assistant", "content": "<think>ok</think>Done.", "tool_calls": [
                {"type": "function", "function": {"name": "f", "arguments": {"a": 1, "b": [1.5, null, true]}}}]},
            {"role": "tool", "content": "{\"x\": 1}"}
        ],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
        "add_generation_prompt": true, "enable_thinking": false, "bos_token": "<s>", "eos_token": "</s>"
    })");
    return value;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        const folio::ChatTemplate tmpl = folio::ChatTemplate::parse(text, "fuzz.jinja");
        (void)tmpl.render(context());
    } catch (const folio::Error&) {
    }
    return 0;
}
