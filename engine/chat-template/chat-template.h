// A model's chat template, rendered exactly as Hugging Face transformers' apply_chat_template renders it
// (jinja2's sandboxed environment with trim_blocks, lstrip_blocks, loop controls, {% generation %}, a
// json.dumps tojson, raise_exception and strftime_now).
#pragma once

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace folio {

namespace jinja {
struct Template;
}

class ChatTemplate {
public:
    // Parses; throws folio::Error naming `origin` (the file) with line, column and what is wrong.
    static ChatTemplate parse(std::string_view source, std::string origin);
    // A model folder's template: chat_template.jinja, else tokenizer_config.json's "chat_template" (a string,
    // or a list of {name, template} of which "default" is used). Throws folio::Error naming the file when
    // neither holds one or it is broken.
    static ChatTemplate from_folder(const std::filesystem::path& dir);
    // The same, or nothing where the folder holds no template at all (neither file, or no "chat_template"
    // key); a template that is there but broken still throws.
    static std::optional<ChatTemplate> find_in_folder(const std::filesystem::path& dir);

    // Renders with the context's keys as variables: "messages", "add_generation_prompt", "bos_token",
    // "tools" and any template kwargs. Throws folio::Error where the template fails (raise_exception, an
    // undefined value used, a bound exceeded).
    std::string render(const nlohmann::ordered_json& context) const;

    const std::string& origin() const;

    ChatTemplate(ChatTemplate&&) noexcept;
    ChatTemplate& operator=(ChatTemplate&&) noexcept;
    ~ChatTemplate();

private:
    explicit ChatTemplate(std::unique_ptr<jinja::Template> tmpl);
    std::unique_ptr<jinja::Template> template_;
};

}  // namespace folio
