// Safetensors files: a memory-mapped reader that validates the whole header before any tensor is used,
// and TensorStore, a model's weights in one file or in shards listed by model.safetensors.index.json.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/common/mapped-file.h"

namespace folio {

enum class DType { F32, F16, BF16, I8, U8, I32, I64 };

size_t dtype_size(DType dtype);
// The name safetensors uses for the type ("F32", "BF16", ...).
const char* dtype_name(DType dtype);

// A tensor inside a mapped file. `data` points into the mapping and is not necessarily aligned to the
// element size: read it through std::memcpy or the to_* helpers below.
struct TensorView {
    std::string name;
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
    const std::byte* data = nullptr;
    size_t n_bytes = 0;

    int64_t n_elements() const;
};

struct SafetensorsHeader {
    std::vector<TensorView> tensors;  // sorted by name
    std::map<std::string, std::string> metadata;
};

// The largest JSON header accepted, in bytes.
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;

// Parses and validates a whole file image: an 8-byte little-endian header length, the JSON header, then
// the data section. The views point into `data`. `origin` names the file in error messages.
SafetensorsHeader parse_safetensors(const std::byte* data, size_t size, const std::string& origin);

class SafetensorsFile {
public:
    static std::unique_ptr<SafetensorsFile> open(const std::filesystem::path& path);

    const std::filesystem::path& path() const { return path_; }
    const std::vector<TensorView>& tensors() const { return header_.tensors; }
    const TensorView* find(std::string_view name) const;
    // Throws naming the file and the tensor when there is no such tensor.
    const TensorView& get(std::string_view name) const;
    const std::map<std::string, std::string>& metadata() const { return header_.metadata; }
    size_t file_size() const { return file_.size(); }

private:
    struct Key {
        explicit Key() = default;
    };

public:
    SafetensorsFile(const std::filesystem::path& path, Key);

private:
    std::filesystem::path path_;
    MappedFile file_;
    SafetensorsHeader header_;
};

// model.safetensors.index.json: which shard file holds each tensor.
struct SafetensorsIndex {
    std::vector<std::pair<std::string, std::string>> weight_map;  // tensor name, shard file name; not empty
};

// Parses an index's text: "weight_map" must be a non-empty object whose values are file names inside the
// model folder (no folder part, not "." or ".."). `origin` names the file in error messages.
SafetensorsIndex parse_safetensors_index(std::string_view text, const std::string& origin);

// A model's weights: model.safetensors, or the shards that model.safetensors.index.json lists in its
// weight_map, each shard opened once. Every tensor the index names must exist in its shard.
class TensorStore {
public:
    static std::unique_ptr<TensorStore> open(const std::filesystem::path& model_dir);

    const std::filesystem::path& dir() const { return dir_; }
    const TensorView* find(std::string_view name) const;
    // Throws naming the model folder and the tensor when there is no such tensor.
    const TensorView& get(std::string_view name) const;
    std::vector<std::string> names() const;  // sorted
    size_t n_bytes() const;                  // the tensors' data, all shards together
    size_t n_files() const { return files_.size(); }

private:
    struct Key {
        explicit Key() = default;
    };

public:
    TensorStore(std::filesystem::path dir, Key) : dir_(std::move(dir)) {}

private:
    std::filesystem::path dir_;
    std::vector<std::unique_ptr<SafetensorsFile>> files_;
    std::map<std::string, const TensorView*, std::less<>> by_name_;
};

// The tensor's elements converted to float32 (F32, F16, BF16 and the integer types).
std::vector<float> to_f32(const TensorView& tensor);
// How many elements the tensor's bytes hold, as to_f32 reads them.
int64_t f32_count(const TensorView& tensor);
// Elements [begin, end) of the tensor converted as to_f32 does, into out[0, end - begin): a large tensor's
// parts can be converted in parallel.
void to_f32_range(const TensorView& tensor, int64_t begin, int64_t end, float* out);
// The tensor's elements converted to int64 (I64, I32, U8, I8); a floating-point tensor is an error.
std::vector<int64_t> to_i64(const TensorView& tensor);

}  // namespace folio
