// Renders the chat-template cases of a cases file with folio::ChatTemplate and writes the results in the
// format tests/tools/render-chat-template.py writes for jinja2, or compares them with such a file.
//   folio-render-template CASES.json                 results as JSON on stdout
//   folio-render-template CASES.json --compare REF   exit 1 naming each case whose output differs
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "engine/chat-template/chat-template.h"
#include "engine/common/error.h"

namespace {

using Json = nlohmann::ordered_json;

Json read_json(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        folio::fail(path.string(), ": cannot be read");
    }
    std::ostringstream text;
    text << in.rdbuf();
    return Json::parse(text.str());
}

std::string read_text(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// {"name", "outputs": [{"output": text} or {"error": message}]} per case.
Json render_cases(const std::filesystem::path& cases_path) {
    const Json cases = read_json(cases_path);
    const Json& contexts = cases.at("contexts");
    Json results = Json::array();
    for (const Json& c : cases.at("cases")) {
        const std::string name = c.at("name").get<std::string>();
        std::string source;
        std::string origin = name;
        if (c.contains("template_file")) {
            origin = c.at("template_file").get<std::string>();
            source = read_text(cases_path.parent_path() / origin);
        } else {
            source = c.at("template").get<std::string>();
        }
        Json outputs = Json::array();
        try {
            const folio::ChatTemplate tmpl = folio::ChatTemplate::parse(source, origin);
            for (const Json& context_name : c.at("contexts")) {
                try {
                    outputs.push_back(
                        {{"output", tmpl.render(contexts.at(context_name.get<std::string>()))}});
                } catch (const folio::Error& e) {
                    outputs.push_back({{"error", e.what()}});
                }
            }
        } catch (const folio::Error& e) {
            for (size_t i = 0; i < c.at("contexts").size(); ++i) {
                outputs.push_back({{"error", e.what()}});
            }
        }
        results.push_back({{"name", name}, {"outputs", outputs}});
    }
    return results;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2 && !(argc == 4 && std::string(argv[2]) == "--compare")) {
        std::cerr << "usage: folio-render-template CASES.json [--compare REFERENCE.json]\n";
        return 2;
    }
    try {
        const Json results = render_cases(argv[1]);
        if (argc == 2) {
            std::cout << results.dump(1) << "\n";
            return 0;
        }
        const Json reference = read_json(argv[3]).at("results");
        int failures = 0;
        for (size_t i = 0; i < results.size(); ++i) {
            const Json& ours = results[i]["outputs"];
            const Json& theirs = reference.at(i).at("outputs");
            for (size_t k = 0; k < ours.size(); ++k) {
                const bool our_error = ours[k].contains("error");
                const bool their_error = theirs.at(k).contains("error");
                if (our_error != their_error || (!our_error && ours[k]["output"] != theirs.at(k)["output"])) {
                    ++failures;
                    std::cout << "MISMATCH " << results[i]["name"].get<std::string>() << " context " << k
                              << "\n  jinja2: " << theirs.at(k).dump() << "\n  folio:  " << ours[k].dump()
                              << "\n";
                }
            }
        }
        std::cout << results.size() << " cases, " << failures << " mismatches\n";
        return failures == 0 ? 0 : 1;
    } catch (const std::exception& e) {
        std::cerr << "folio-render-template: " << e.what() << "\n";
        return 2;
    }
}
