// Fuzzes the model.safetensors.index.json reader: any input either gives a non-empty weight map whose shards
// are file names inside the model folder, or throws folio::Error naming the file.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "engine/common/error.h"
#include "engine/files/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const std::string origin = "model.safetensors.index.json";
    try {
        const folio::SafetensorsIndex index = folio::parse_safetensors_index(text, origin);
        if (index.weight_map.empty()) {
            std::abort();
        }
        for (const auto& [name, shard] : index.weight_map) {
            if (shard.empty() || shard == "." || shard == ".." || shard.find('/') != std::string::npos) {
                std::abort();
            }
        }
    } catch (const folio::Error& e) {
        if (!std::string_view(e.what()).starts_with(origin + ": ")) {
            std::abort();
        }
    }
    return 0;
}
