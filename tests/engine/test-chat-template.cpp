// ChatTemplate: the corpus under tests/fixtures/chat-templates rendered byte for byte as jinja2 rendered it
// (expected.json, written by tests/tools/render-chat-template.py), and the bounds and errors that untrusted
// templates meet.
#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "engine/chat-template/chat-template.h"
#include "engine/common/error.h"

namespace {

using Json = nlohmann::ordered_json;
const std::filesystem::path kCorpus = FOLIO_CHAT_TEMPLATES_DIR;

std::string read_text(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

Json read_json(const std::filesystem::path& path) {
    return Json::parse(read_text(path));
}

// The message of the folio::Error that rendering `source` with `context` throws, or "" when none is thrown.
std::string render_error(const std::string& source, const Json& context = Json::object()) {
    try {
        folio::ChatTemplate::parse(source, "test.jinja").render(context);
    } catch (const folio::Error& e) {
        return e.what();
    }
    return "";
}

std::string render(const std::string& source, const Json& context = Json::object()) {
    return folio::ChatTemplate::parse(source, "test.jinja").render(context);
}

// The output jinja2 rendered on the day expected.json was made (its rendered_on, as strftime_now("%d %b %Y")
// wrote it then) with today's date in its place, as the renderer writes it now.
std::string on_today(std::string output, const std::string& rendered_on) {
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    char today[32];
    const std::string day(today, std::strftime(today, sizeof today, "%d %b %Y", &local));
    for (size_t at = output.find(rendered_on); !rendered_on.empty() && at != std::string::npos;
         at = output.find(rendered_on, at + day.size())) {
        output.replace(at, rendered_on.size(), day);
    }
    return output;
}

TEST(ChatTemplate, CorpusMatchesJinja2) {
    const Json cases = read_json(kCorpus / "cases.json");
    const Json expected = read_json(kCorpus / "expected.json");
    ASSERT_TRUE(expected.contains("jinja2_version"));
    const Json& results = expected.at("results");
    ASSERT_EQ(results.size(), cases.at("cases").size())
        << "expected.json is stale: rerun render-chat-template.py";
    int rendered = 0;
    for (size_t i = 0; i < results.size(); ++i) {
        const Json& c = cases["cases"][i];
        const std::string name = c.at("name").get<std::string>();
        ASSERT_EQ(results[i].at("name"), name);
        const std::string source = c.contains("template_file")
                                       ? read_text(kCorpus / c.at("template_file").get<std::string>())
                                       : c.at("template").get<std::string>();
        const Json& contexts = c.at("contexts");
        for (size_t k = 0; k < contexts.size(); ++k) {
            SCOPED_TRACE(name + " with context " + contexts[k].get<std::string>());
            const Json& want = results[i]["outputs"].at(k);
            const Json& context = cases["contexts"].at(contexts[k].get<std::string>());
            if (want.contains("output")) {
                std::string got;
                EXPECT_NO_THROW(got = render(source, context));
                EXPECT_EQ(got, on_today(want["output"].get<std::string>(),
                                        expected.at("rendered_on").get<std::string>()));
            } else {
                const std::string error = render_error(source, context);
                EXPECT_FALSE(error.empty()) << "jinja2 failed with " << want["error"];
                // raise_exception's message reaches the caller.
                const std::string theirs = want["error"].get<std::string>();
                const std::string prefix = "TemplateError: ";
                if (theirs.rfind(prefix, 0) == 0) {
                    EXPECT_NE(error.find(theirs.substr(prefix.size())), std::string::npos) << error;
                }
            }
            ++rendered;
        }
    }
    EXPECT_GE(rendered, 60);
}

TEST(ChatTemplate, UnterminatedTagNamesLineAndColumn) {
    const std::string error = render_error("hello\n  {{ name ");
    EXPECT_NE(error.find("test.jinja:2:3"), std::string::npos) << error;
    EXPECT_NE(error.find("}}"), std::string::npos) << error;
    const std::string block = render_error("{% for x in y %}\n{{ x }}");
    EXPECT_NE(block.find("endfor"), std::string::npos) << block;
    const std::string comment = render_error("a {# never closed");
    EXPECT_NE(comment.find("test.jinja:1:3"), std::string::npos) << comment;
    const std::string tag = render_error("{% frobnicate %}");
    EXPECT_NE(tag.find("unknown tag 'frobnicate'"), std::string::npos) << tag;
}

TEST(ChatTemplate, RecursionIsBounded) {
    const std::string error = render_error("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
    EXPECT_NE(error.find("recursion too deep"), std::string::npos) << error;
    const std::string deep =
        render_error("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}");
    EXPECT_NE(deep.find("nested too deeply"), std::string::npos) << deep;
    std::string blocks;
    for (int i = 0; i < 1000; ++i) {
        blocks += "{% if true %}";
    }
    EXPECT_NE(render_error(blocks).find("nested too deeply"), std::string::npos);
}

TEST(ChatTemplate, MutationIsRefused) {
    const Json context = {{"messages", Json::array({{{"role", "user"}}})}};
    EXPECT_NE(render_error("{{ messages.append(1) }}", context).find("modifies a list"), std::string::npos);
    EXPECT_NE(render_error("{% set _ = messages[0].update({'a': 1}) %}", context).find("modifies a dict"),
              std::string::npos);
    EXPECT_NE(render_error("{{ messages[0].pop('role') }}", context).find("modifies a dict"),
              std::string::npos);
}

TEST(ChatTemplate, WorkAndOutputAreBounded) {
    const auto start = std::chrono::steady_clock::now();
    EXPECT_NE(render_error("{{ range(1000000000) | length }}").find("Range too big"), std::string::npos);
    EXPECT_NE(render_error("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}")
                  .find("too much work"),
              std::string::npos);
    EXPECT_NE(render_error("{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}").find("output"),
              std::string::npos);
    EXPECT_FALSE(render_error("{{ 'x' * 4000000000 }}").empty());
    EXPECT_FALSE(render_error("{{ [1] * 4000000000 }}").empty());
    EXPECT_FALSE(render_error("{{ 9223372036854775807 + 1 }}").empty());
    EXPECT_FALSE(render_error("{{ 2 ** 100 }}").empty());
    // The caps stop each of these within seconds, under a sanitizer on a busy machine too; without them the
    // loops above would run for hours, so the bound leaves room for slow machines.
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(180));
}

TEST(ChatTemplate, RuntimeErrorsAreFolioErrors) {
    EXPECT_NE(render_error("{{ raise_exception('bad role') }}").find("bad role"), std::string::npos);
    EXPECT_NE(render_error("{{ missing.attr }}").find("'missing' is undefined"), std::string::npos);
    EXPECT_FALSE(render_error("{{ 1 / 0 }}").empty());
    EXPECT_FALSE(render_error("{{ none | tojson }}{{ missing | tojson }}").empty());
    EXPECT_FALSE(render_error("{% for a, b in [1] %}{% endfor %}").empty());
    EXPECT_FALSE(render_error("{% set x.y = 1 %}").empty());
    EXPECT_FALSE(render_error("{{ 'a' < 1 }}").empty());
    EXPECT_THROW(render("{{ x }}", Json::array()), folio::Error);
}

TEST(ChatTemplate, TojsonKeepsContextOrder) {
    const Json context = Json::parse(R"({"d": {"z": 1, "a": {"y": [1.5, "é"], "b": null}}})");
    EXPECT_EQ(render("{{ d | tojson }}", context), R"({"z": 1, "a": {"y": [1.5, "é"], "b": null}})");
    EXPECT_EQ(render("{% for k in d %}{{ k }}{% endfor %}", context), "za");
}

class ChatTemplateFolder : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = std::filesystem::temp_directory_path() /
               ("folio-chat-template-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
                "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
        std::filesystem::remove_all(dir_);
        std::filesystem::create_directories(dir_);
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }
    void write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
    std::filesystem::path dir_;
};

TEST_F(ChatTemplateFolder, PrefersJinjaFile) {
    write("chat_template.jinja", "file {{ x }}\n");
    write("tokenizer_config.json", R"({"chat_template": "config"})");
    EXPECT_EQ(folio::ChatTemplate::from_folder(dir_).render({{"x", 1}}), "file 1");
}

TEST_F(ChatTemplateFolder, ReadsTokenizerConfigStringOrDefaultEntry) {
    write("tokenizer_config.json", R"({"chat_template": "config {{ x }}"})");
    EXPECT_EQ(folio::ChatTemplate::from_folder(dir_).render({{"x", 2}}), "config 2");
    write(
        "tokenizer_config.json",
        R"({"chat_template": [{"name": "tool_use", "template": "tools"}, {"name": "default", "template": "dflt"}]})");
    EXPECT_EQ(folio::ChatTemplate::from_folder(dir_).render(Json::object()), "dflt");
}

TEST_F(ChatTemplateFolder, ErrorsNameTheFile) {
    auto error_of = [&] {
        try {
            folio::ChatTemplate::from_folder(dir_);
        } catch (const folio::Error& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_NE(error_of().find(dir_.string()), std::string::npos);
    write("tokenizer_config.json", "{ not json");
    EXPECT_NE(error_of().find("tokenizer_config.json"), std::string::npos);
    write("tokenizer_config.json", R"({"chat_template": [{"name": "other", "template": "x"}]})");
    EXPECT_NE(error_of().find("default"), std::string::npos);
    write("chat_template.jinja", "line\n{% if %}");
    const std::string error = error_of();
    EXPECT_NE(error.find("chat_template.jinja:2:"), std::string::npos) << error;
}

TEST(ChatTemplate, ReadsTheTinyModelsTemplate) {
    const auto tmpl =
        folio::ChatTemplate::from_folder(std::filesystem::path(FOLIO_FIXTURES_DIR) / "paddleocr-vl-tiny");
    const Json context = Json::parse(
        R"({"messages": [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "OCR:"}]}],
            "add_generation_prompt": true})");
    EXPECT_EQ(
        tmpl.render(context),
        "<|begin_of_sentence|>User: <|IMAGE_START|><|IMAGE_PLACEHOLDER|><|IMAGE_END|>OCR:\nAssistant: ");
}

}  // namespace
