#include "app/options/cli-options.h"

#include "app/options/engine-options.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>

#ifdef FOLIO_WITH_CUDA
#include "engine/backend/cuda/make-cuda-backend.h"
#endif

namespace folio::cli {

namespace {

// "--max_model_len" -> "--max-model-len": FastDeploy's parser takes either.
std::string normalise_flag(std::string flag) {
    std::replace(flag.begin() + 2, flag.end(), '_', '-');
    return flag;
}

}  // namespace

Options::Options(int argc, char** argv, int first, std::initializer_list<std::string_view> switches) {
    if (argc > 0 && argv[0] != nullptr && argv[0][0] != '\0') {
        program_ = std::filesystem::path(argv[0]).filename().string();
    }
    for (int i = first; i < argc; ++i) {
        std::string flag = argv[i];
        if (flag == "-tp") {
            flag = "--tensor-parallel-size";
        }
        if (!flag.starts_with("--") || flag.size() == 2) {
            fail("unexpected argument '", flag, "'");
        }
        std::optional<std::string> value;
        if (const auto eq = flag.find('='); eq != std::string::npos) {
            value = flag.substr(eq + 1);
            flag.resize(eq);
        }
        flag = normalise_flag(flag);
        if (flag == "--help") {
            if (value) {
                fail("option --help takes no value");
            }
            values_[flag].push_back("");
            continue;
        }
        if (std::find(switches.begin(), switches.end(), flag) != switches.end()) {
            if (value) {
                fail("option ", flag, " takes no value");
            }
            values_[flag].push_back("true");
            continue;
        }
        if (!is_engine_switch(flag) && flag.starts_with("--no-") && is_engine_switch("--" + flag.substr(5))) {
            if (value) {
                fail("option ", flag, " takes no value");
            }
            values_["--" + flag.substr(5)].push_back("false");
            continue;
        }
        if (!value && is_engine_switch(flag)) {
            // Bare, unless a word of the switch's follows.
            if (i + 1 < argc && is_switch_word(flag, argv[i + 1])) {
                value = argv[++i];
            } else {
                value = "true";
            }
        }
        if (!value) {
            if (i + 1 >= argc) {
                fail("option ", flag, " needs a value");
            }
            value = argv[++i];
        }
        values_[flag].push_back(*value);
    }
}

// "WxH" -> {W, H}, each at least 28 (two patches).
std::pair<int, int> parse_size(const std::string& text, const char* flag) {
    const auto x = text.find('x');
    try {
        size_t n_w = 0, n_h = 0;
        const int w = std::stoi(text.substr(0, x), &n_w);
        const int h = std::stoi(text.substr(x + 1), &n_h);
        if (x != std::string::npos && n_w == x && n_h == text.size() - x - 1 && w >= 28 && h >= 28) {
            return {w, h};
        }
    } catch (const std::exception&) {
    }
    fail(flag, " expects WxH of at least 28x28, got '", text, "'");
}

std::vector<std::string> with_engine_flags(std::initializer_list<const char*> flags) {
    std::vector<std::string> all(flags.begin(), flags.end());
    all.emplace_back("--device-memory");
    all.emplace_back("--devices");
    const std::vector<std::string> engine = engine_flags();
    all.insert(all.end(), engine.begin(), engine.end());
    return all;
}

// --device cpu (default) or cuda[:N].
std::unique_ptr<Backend> make_backend(const Options& opt) {
    return make_backend(opt.text("--device", "cpu"), static_cast<int>(opt.integer("--threads", 0)),
                        device_memory_limit(opt));
}

int64_t parse_byte_size(const std::string& flag, const std::string& text) {
    size_t used = 0;
    double value = -1;
    try {
        value = std::stod(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    std::string unit = text.substr(used);
    for (const char* tail : {"iB", "B"}) {
        if (unit.size() > std::strlen(tail) && unit.ends_with(tail)) {
            unit.resize(unit.size() - std::strlen(tail));
            break;
        }
    }
    double scale = 0;
    if (unit.empty()) {
        scale = 1;
    } else if (unit.size() == 1) {
        const std::string units = "KMGT";
        const size_t power = units.find(static_cast<char>(std::toupper(static_cast<unsigned char>(unit[0]))));
        scale = power == std::string::npos ? 0 : std::pow(1024.0, static_cast<double>(power + 1));
    }
    if (used == 0 || scale == 0 || !(value > 0) || value * scale > 1e15) {
        fail(flag, " expects a size such as 8GiB, 12G or 4096M, got '", text, "'");
    }
    return static_cast<int64_t>(value * scale);
}

int64_t device_memory_limit(const Options& opt) {
    if (!opt.has("--device-memory")) {
        return 0;
    }
    const int64_t bytes = parse_byte_size("--device-memory", opt.text("--device-memory"));
    for (const std::string& device : engine_devices(opt)) {
        if (device == "cpu") {
            fail("--device-memory applies to CUDA devices (--device cuda[:N])");
        }
    }
    return bytes;
}

namespace {

// A --devices entry as a --device value: cpu, cuda, cuda:N, or N for cuda:N.
std::string device_name(const std::string& entry) {
    if (!entry.empty() &&
        std::all_of(entry.begin(), entry.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return "cuda:" + std::to_string(std::stoi(entry.substr(0, 6)));
    }
    if (entry == "cpu" || entry == "cuda" || entry.starts_with("cuda:")) {
        return entry;
    }
    fail("--devices expects a list of cpu, cuda:N or N separated by commas, got '", entry, "'");
}

}  // namespace

std::vector<std::vector<std::string>> engine_device_groups(const Options& opt) {
    constexpr long long kMaxDevices = 64;
    const long long tp = opt.integer("--tensor-parallel-size", 1);
    if (tp < 1) {
        fail("--tensor-parallel-size must be at least 1, got ", tp);
    }
    if (tp > kMaxDevices) {
        fail("--tensor-parallel-size ", tp, ": at most ", kMaxDevices, " devices");
    }
    std::vector<std::string> devices;
    if (opt.has("--devices")) {
        if (opt.has("--device")) {
            fail("--device and --devices name the devices twice; give one of them");
        }
        const std::string list = opt.text("--devices");
        size_t at = 0;
        for (;;) {
            const size_t comma = std::min(list.find(',', at), list.size());
            devices.push_back(device_name(list.substr(at, comma - at)));
            if (comma == list.size()) {
                break;
            }
            at = comma + 1;
        }
        if (static_cast<long long>(devices.size()) > kMaxDevices) {
            fail("--devices names ", devices.size(), " devices; at most ", kMaxDevices);
        }
    }
    const auto n_listed = static_cast<long long>(devices.size());
    const long long n =
        opt.integer("--data-parallel-size", devices.empty() ? 1 : std::max(1LL, n_listed / tp));
    if (n < 1 || n > kMaxDevices) {
        fail("--data-parallel-size must be 1 to ", kMaxDevices, ", got ", n);
    }
    if (n * tp > kMaxDevices) {
        fail("--data-parallel-size ", n, " times --tensor-parallel-size ", tp, " is ", n * tp,
             " devices; at most ", kMaxDevices);
    }
    if (!devices.empty()) {
        if (n_listed != n * tp) {
            if (tp == 1) {
                fail("--data-parallel-size ", n, " and --devices with ", n_listed, " devices disagree");
            }
            fail("--devices names ", n_listed, " devices where --data-parallel-size ", n,
                 " times --tensor-parallel-size ", tp, " needs ", n * tp);
        }
    } else {
        // N engines of T ranks: on the CPU, or on N * T cards from --device's on.
        const std::string device = opt.text("--device", "cpu");
        if (device == "cpu" || n * tp == 1) {
            devices.assign(static_cast<size_t>(n * tp), device);
        } else {
            int first = 0;
            if (device.starts_with("cuda:")) {
                first = std::stoi(device_name(device.substr(5)).substr(5));
            } else if (device != "cuda") {
                fail("--device expects cpu, cuda or cuda:N, got '", device, "'");
            }
            for (long long i = 0; i < n * tp; ++i) {
                devices.push_back("cuda:" + std::to_string(first + i));
            }
        }
    }
    std::vector<std::vector<std::string>> groups;
    for (long long e = 0; e < n; ++e) {
        groups.emplace_back(devices.begin() + e * tp, devices.begin() + (e + 1) * tp);
    }
    return groups;
}

std::vector<std::string> engine_devices(const Options& opt) {
    std::vector<std::string> devices;
    for (const std::vector<std::string>& group : engine_device_groups(opt)) {
        devices.insert(devices.end(), group.begin(), group.end());
    }
    return devices;
}

std::unique_ptr<Backend> make_backend(const std::string& device, int threads, int64_t memory_limit_bytes) {
    if (device == "cpu") {
        if (memory_limit_bytes > 0) {
            fail("--device-memory applies to CUDA devices (--device cuda[:N])");
        }
        return make_cpu_backend(threads);
    }
#ifdef FOLIO_WITH_CUDA
    if (device == "cuda" || device.starts_with("cuda:")) {
        int index = 0;
        if (device.size() > 5) {
            try {
                size_t used = 0;
                index = std::stoi(device.substr(5), &used);
                if (used != device.size() - 5) {
                    index = -1;
                }
            } catch (const std::exception&) {
                index = -1;
            }
        }
        if (index < 0) {
            fail("--device expects cpu, cuda or cuda:N, got '", device, "'");
        }
        CudaBackendOptions options;
        options.device = index;
        options.memory_limit_bytes = memory_limit_bytes;
        return make_cuda_backend(options);
    }
    fail("--device expects cpu, cuda or cuda:N, got '", device, "'");
#else
    fail("--device ", device, " is not available in this build (devices: cpu)");
#endif
}

}  // namespace folio::cli
