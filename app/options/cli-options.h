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
#include <string_view>
#include <utility>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/common/clock.h"
#include "engine/common/error.h"
#include "engine/models/paddleocr-vl/config.h"
#include "engine/models/paddleocr-vl/paddleocr-vl.h"
#include "engine/runtime/engine-core.h"

namespace folio::cli {

// Command-line options: repeated flags keep every value, in order. Flags are written --name value or
// --name=value, with '_' and '-' alike in the name (--max_model_len is --max-model-len); the engine's
// switches may stand bare (--enable-prefix-caching), take a boolean word (--use-cudagraph false) or be
// negated
// (--no-enable-prefix-caching); -tp is --tensor-parallel-size, as in FastDeploy.
class Options {
public:
    // switches: the command's own flags that take no value (--ids), "true" where given.
    Options(int argc, char** argv, int first, std::initializer_list<std::string_view> switches = {});

    void allow(const std::vector<std::string>& known) const {
        for (const auto& entry : values_) {
            const std::string& flag = entry.first;
            if (flag != "--help" && std::find(known.begin(), known.end(), flag) == known.end()) {
                fail("unknown option ", flag);
            }
        }
    }
    // The program's name as it was run (argv[0]'s file name; "folio-cli" without one), for messages.
    const std::string& program() const { return program_; }
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
    std::string program_ = "folio-cli";
};

// "WxH" -> {W, H}, each at least 28 (two patches); throws naming the flag.
std::pair<int, int> parse_size(const std::string& text, const char* flag);
// flags plus the engine options (engine-options.h), for Options::allow.
std::vector<std::string> with_engine_flags(std::initializer_list<const char*> flags);
// --device cpu (default), cuda or cuda:N.
std::unique_ptr<Backend> make_backend(const Options& opt);
// The backend of a --device value: cpu (with threads, 0 for all cores), cuda or cuda:N.
std::unique_ptr<Backend> make_backend(const std::string& device, int threads, int64_t memory_limit_bytes = 0);

// --device-memory SIZE: bytes, or a number with K, M, G or T (binary units, "iB" or "B" after them allowed):
// the CUDA device planned and used as if it had that much memory; 0 where the option is absent. Throws
// folio::Error naming the option and the value for anything else.
int64_t device_memory_limit(const Options& opt);
// The devices of each engine, one copy of the models each, and of each engine's tensor-parallel ranks
// (--tensor-parallel-size T: T devices an engine, rank 0's first): --device alone (cpu by default), or
// --devices LIST (cpu, cuda, cuda:N or N, separated by commas; a device may repeat, its memory then shared;
// consecutive runs of T make an engine), or --data-parallel-size N (N engines on the CPU, or on N * T cards
// from --device's on). Throws folio::Error naming the flag for a malformed list, counts that disagree, or
// --device beside --devices.
std::vector<std::vector<std::string>> engine_device_groups(const Options& opt);
// Every device of engine_device_groups, engine after engine.
std::vector<std::string> engine_devices(const Options& opt);
int64_t parse_byte_size(const std::string& flag, const std::string& text);

}  // namespace folio::cli
