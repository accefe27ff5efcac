#include "engine/chat-template/chat-template.h"

#include <fstream>
#include <sstream>

#include "engine/chat-template/jinja-interpreter.h"
#include "engine/chat-template/jinja-parser.h"
#include "engine/chat-template/jinja-value.h"
#include "engine/common/error.h"
#include "engine/common/json-reader.h"

namespace folio {

namespace {

jinja::Value from_json(const nlohmann::ordered_json& json, int depth) {
    if (depth > 256) {
        fail("chat template context nested more than 256 levels deep");
    }
    switch (json.type()) {
        case nlohmann::ordered_json::value_t::null:
            return jinja::Value(jinja::None{});
        case nlohmann::ordered_json::value_t::boolean:
            return jinja::Value(json.get<bool>());
        case nlohmann::ordered_json::value_t::number_integer:
            return jinja::Value(json.get<int64_t>());
        case nlohmann::ordered_json::value_t::number_unsigned: {
            const auto u = json.get<uint64_t>();
            if (u > static_cast<uint64_t>(INT64_MAX)) {
                return jinja::Value(static_cast<double>(u));
            }
            return jinja::Value(static_cast<int64_t>(u));
        }
        case nlohmann::ordered_json::value_t::number_float:
            return jinja::Value(json.get<double>());
        case nlohmann::ordered_json::value_t::string:
            return jinja::Value(json.get<std::string>());
        case nlohmann::ordered_json::value_t::array: {
            std::vector<jinja::Value> items;
            for (const auto& item : json) {
                items.push_back(from_json(item, depth + 1));
            }
            return jinja::Value::list(std::move(items));
        }
        case nlohmann::ordered_json::value_t::object: {
            jinja::DictData dict;
            for (const auto& [key, value] : json.items()) {
                dict.items.emplace_back(jinja::Value(key), from_json(value, depth + 1));
            }
            return jinja::Value::dict(std::move(dict));
        }
        default:
            fail("chat template context holds an unsupported JSON value: ", json.type_name());
    }
}

std::string read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        fail(path.string(), ": cannot be read");
    }
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace

ChatTemplate::ChatTemplate(std::unique_ptr<jinja::Template> tmpl) : template_(std::move(tmpl)) {}
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;
ChatTemplate::~ChatTemplate() = default;

ChatTemplate ChatTemplate::parse(std::string_view source, std::string origin) {
    return ChatTemplate(jinja::parse_template(source, std::move(origin)));
}

ChatTemplate ChatTemplate::from_folder(const std::filesystem::path& dir) {
    std::optional<ChatTemplate> found = find_in_folder(dir);
    if (!found) {
        fail(dir.string(), ": no chat template (neither chat_template.jinja nor a \"chat_template\" in ",
             "tokenizer_config.json)");
    }
    return std::move(*found);
}

std::optional<ChatTemplate> ChatTemplate::find_in_folder(const std::filesystem::path& dir) {
    const std::filesystem::path jinja_file = dir / "chat_template.jinja";
    if (std::filesystem::exists(jinja_file)) {
        return parse(read_file(jinja_file), jinja_file.string());
    }
    const std::filesystem::path config_file = dir / "tokenizer_config.json";
    if (!std::filesystem::exists(config_file)) {
        return std::nullopt;
    }
    const std::string origin = config_file.string();
    const nlohmann::json config = parse_json_object(read_file(config_file), origin);
    // Read through references (at), not iterators, which GCC's sanitizer builds take for possibly null.
    if (!config.contains("chat_template") || config.at("chat_template").is_null()) {
        return std::nullopt;
    }
    const nlohmann::json& found = config.at("chat_template");
    if (found.is_string()) {
        return parse(found.get_ref<const std::string&>(), origin);
    }
    if (found.is_array()) {
        for (const nlohmann::json& entry : found) {
            if (entry.is_object() && entry.value("name", nlohmann::json()) == "default") {
                if (!entry.contains("template") || !entry.at("template").is_string()) {
                    fail(origin, ": the \"default\" chat template is not a string");
                }
                return parse(entry.at("template").get_ref<const std::string&>(), origin);
            }
        }
        fail(origin, ": \"chat_template\" lists no template named \"default\"");
    }
    fail(origin, ": \"chat_template\" must be a string or a list of {name, template}, not ",
         found.type_name());
}

std::string ChatTemplate::render(const nlohmann::ordered_json& context) const {
    if (!context.is_object()) {
        fail(template_->origin, ": the render context must be a JSON object, not ", context.type_name());
    }
    const jinja::Value values = from_json(context, 0);
    jinja::Interpreter interpreter(*template_, jinja::Limits{});
    return interpreter.render(values.as_dict());
}

const std::string& ChatTemplate::origin() const {
    return template_->origin;
}

}  // namespace folio
