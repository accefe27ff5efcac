// Writes safetensors files for tests: valid ones from tensors, and raw images with any header for the
// tests of broken files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace folio::test {

struct TensorData {
    std::string name;
    std::string dtype;  // as safetensors spells it: "F32", "BF16", ...
    std::vector<int64_t> shape;
    std::vector<std::byte> bytes;
};

// A tensor whose bytes are `values` as stored in memory (little-endian on the hosts Folio supports).
template <typename T>
TensorData make_tensor(std::string name, std::string dtype, std::vector<int64_t> shape,
                       const std::vector<T>& values) {
    TensorData tensor{std::move(name), std::move(dtype), std::move(shape),
                      std::vector<std::byte>(values.size() * sizeof(T))};
    if (!values.empty()) {
        std::memcpy(tensor.bytes.data(), values.data(), tensor.bytes.size());
    }
    return tensor;
}

// An 8-byte little-endian length, `header` as it is, then `n_data_bytes` zero bytes.
inline std::string raw_safetensors(std::string_view header, size_t n_data_bytes = 0) {
    std::string image(8, '\0');
    uint64_t length = header.size();
    for (size_t i = 0; i < 8; ++i) {
        image[i] = static_cast<char>((length >> (8 * i)) & 0xffu);
    }
    image += header;
    image.append(n_data_bytes, '\0');
    return image;
}

// A valid safetensors image: tensors stored in the given order, header padded with spaces to 8 bytes.
inline std::string safetensors_image(const std::vector<TensorData>& tensors,
                                     const std::map<std::string, std::string>& metadata = {}) {
    nlohmann::ordered_json header = nlohmann::ordered_json::object();
    if (!metadata.empty()) {
        header["__metadata__"] = metadata;
    }
    size_t offset = 0;
    for (const TensorData& tensor : tensors) {
        header[tensor.name] = {{"dtype", tensor.dtype},
                               {"shape", tensor.shape},
                               {"data_offsets", {offset, offset + tensor.bytes.size()}}};
        offset += tensor.bytes.size();
    }
    std::string header_text = header.dump();
    header_text.append((8 - header_text.size() % 8) % 8, ' ');
    std::string image = raw_safetensors(header_text);
    for (const TensorData& tensor : tensors) {
        image.append(reinterpret_cast<const char*>(tensor.bytes.data()), tensor.bytes.size());
    }
    return image;
}

inline void write_file(const std::filesystem::path& path, std::string_view bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) {
        throw std::runtime_error("cannot write " + path.string());
    }
}

inline void write_safetensors(const std::filesystem::path& path, const std::vector<TensorData>& tensors,
                              const std::map<std::string, std::string>& metadata = {}) {
    write_file(path, safetensors_image(tensors, metadata));
}

}  // namespace folio::test
