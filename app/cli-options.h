// What folio-cli's commands share: the option parser, the engine and model options with FastDeploy's names,
// and the choice of backend.
#pragma once

#include <algorithm>
#include <chrono>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backend.h"
#include "clock.h"
#include "engine-core.h"
#include "error.h"
#include "model-config.h"
#include "models/paddleocr-vl/paddleocr-vl.h"

namespace folio::cli {

// Command-line options: repeated flags keep every value, in order.
class Options {
public:
    Options(int argc, char** argv, int first) {
        for (int i = first; i < argc; ++i) {
            const std::string flag = argv[i];
            if (!flag.starts_with("--")) {
                fail("unexpected argument '", flag, "'");
            }
            if (flag == "--help") {
                values_[flag].push_back("");
                continue;
            }
            if (i + 1 >= argc) {
                fail("option ", flag, " needs a value");
            }
            values_[flag].push_back(argv[++i]);
        }
    }

    void allow(const std::vector<const char*>& known) const {
        for (const auto& entry : values_) {
            const std::string& flag = entry.first;
            if (flag != "--help" && std::find_if(known.begin(), known.end(),
                                                 [&](const char* k) { return flag == k; }) == known.end()) {
                fail("unknown option ", flag);
            }
        }
    }
    bool has(const std::string& flag) const { return values_.contains(flag); }
    std::vector<std::string> all(const std::string& flag) const {
        const auto it = values_.find(flag);
        return it == values_.end() ? std::vector<std::string>{} : it->second;
    }
    std::string text(const std::string& flag, std::optional<std::string> fallback = std::nullopt) const {
        const auto it = values_.find(flag);
        if (it != values_.end()) {
            return it->second.back();
        }
        if (!fallback) {
            fail("missing required option ", flag);
        }
        return *fallback;
    }
    long long integer(const std::string& flag, long long fallback) const {
        return has(flag)
                   ? parse<long long>(flag, [](const std::string& s, size_t* n) { return std::stoll(s, n); })
                   : fallback;
    }
    double real(const std::string& flag, double fallback) const {
        return has(flag)
                   ? parse<double>(flag, [](const std::string& s, size_t* n) { return std::stod(s, n); })
                   : fallback;
    }

private:
    template <typename T, typename F>
    T parse(const std::string& flag, F&& convert) const {
        const std::string s = text(flag);
        try {
            size_t used = 0;
            const T v = convert(s, &used);
            if (used == s.size()) {
                return v;
            }
        } catch (const std::exception&) {
        }
        fail("option ", flag, " expects a number, got '", s, "'");
    }

    std::map<std::string, std::vector<std::string>> values_;
};

// The engine options' help text, for the commands' usage.
extern const char* const kEngineUsage;

// "WxH" -> {W, H}, each at least 28 (two patches); throws naming the flag.
std::pair<int, int> parse_size(const std::string& text, const char* flag);
// on/true/1 or off/false/0.
bool parse_switch(const Options& opt, const std::string& flag, bool fallback);
// The engine options with FastDeploy's names, defaults suited to the device.
EngineConfig engine_config(const Options& opt, const ModelConfig& cfg);
ModelLoadParams load_params(const Options& opt);
// flags plus the engine options, for Options::allow.
std::vector<const char*> with_engine_flags(std::initializer_list<const char*> flags);
// --device cpu (default), cuda or cuda:N.
std::unique_ptr<Backend> make_backend(const Options& opt);

}  // namespace folio::cli
