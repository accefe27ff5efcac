#include "engine/files/safetensors.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <system_error>
#include <tuple>
#include <utility>

#include "engine/common/error.h"
#include "engine/common/json-reader.h"

namespace folio {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian and is read in place");

namespace {

using nlohmann::json;

std::optional<DType> dtype_from_name(std::string_view name) {
    static constexpr std::pair<std::string_view, DType> kNames[] = {
        {"F32", DType::F32}, {"F16", DType::F16}, {"BF16", DType::BF16}, {"I8", DType::I8},
        {"U8", DType::U8},   {"I32", DType::I32}, {"I64", DType::I64},
    };
    for (const auto& [text, dtype] : kNames) {
        if (text == name) {
            return dtype;
        }
    }
    return std::nullopt;
}

// A non-negative JSON integer that fits in int64, or nullopt.
std::optional<uint64_t> non_negative_integer(const json& value) {
    const std::optional<int64_t> n = json_int64(value);
    if (!n || *n < 0) {
        return std::nullopt;
    }
    return static_cast<uint64_t>(*n);
}

std::string shape_text(const std::vector<int64_t>& shape) {
    std::string text = "[";
    for (size_t i = 0; i < shape.size(); ++i) {
        text += (i ? ", " : "") + std::to_string(shape[i]);
    }
    return text + "]";
}

// Parses the JSON header, rejecting a tensor name that appears twice (nlohmann would keep the last).
json parse_header_json(std::string_view text, const std::string& origin) {
    std::set<std::string, std::less<>> names;
    const json::parser_callback_t on_event = [&](int depth, json::parse_event_t event, json& parsed) {
        if (depth == 1 && event == json::parse_event_t::key) {
            const auto& name = parsed.get_ref<const std::string&>();
            if (!names.insert(name).second) {
                fail(origin, ": tensor name '", name, "' appears twice in the header");
            }
        }
        return true;
    };
    return parse_json(text, origin + ": header", on_event);
}

std::map<std::string, std::string> parse_metadata(const json& value, const std::string& origin) {
    if (!value.is_object()) {
        fail(origin, ": __metadata__ must be an object of strings, got ", describe_json(value));
    }
    std::map<std::string, std::string> metadata;
    for (const auto& [key, item] : value.items()) {
        if (!item.is_string()) {
            fail(origin, ": __metadata__ entry '", key, "' must be a string, got ", describe_json(item));
        }
        metadata.emplace(key, item.get<std::string>());
    }
    return metadata;
}

struct Entry {
    TensorView view;
    uint64_t begin = 0;
    uint64_t end = 0;
};

Entry parse_entry(const std::string& name, const json& value, const std::byte* data_section,
                  uint64_t data_size, const std::string& origin) {
    const std::string where = origin + ": tensor '" + name + "'";
    if (!value.is_object()) {
        fail(where, ": entry must be an object, got ", describe_json(value));
    }
    Entry entry;
    entry.view.name = name;

    const auto dtype_it = value.find("dtype");
    if (dtype_it == value.end()) {
        fail(where, ": no dtype");
    }
    if (!dtype_it->is_string()) {
        fail(where, ": dtype must be a string, got ", describe_json(*dtype_it));
    }
    const auto dtype = dtype_from_name(dtype_it->get_ref<const std::string&>());
    if (!dtype) {
        fail(where, ": unknown dtype ", describe_json(*dtype_it),
             " (supported: F32, F16, BF16, I8, U8, I32, I64)");
    }
    entry.view.dtype = *dtype;

    const auto shape_it = value.find("shape");
    if (shape_it == value.end()) {
        fail(where, ": no shape");
    }
    if (!shape_it->is_array()) {
        fail(where, ": shape must be an array of non-negative integers, got ", describe_json(*shape_it));
    }
    uint64_t n_elements = 1;
    for (const auto& dim : *shape_it) {
        const auto n = non_negative_integer(dim);
        if (!n) {
            fail(where, ": shape must be an array of non-negative integers, got ", describe_json(*shape_it));
        }
        if (__builtin_mul_overflow(n_elements, *n, &n_elements) ||
            n_elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
            fail(where, ": shape ", describe_json(*shape_it), " has more elements than can be addressed");
        }
        entry.view.shape.push_back(static_cast<int64_t>(*n));
    }
    uint64_t expected_bytes = 0;
    if (__builtin_mul_overflow(n_elements, dtype_size(*dtype), &expected_bytes)) {
        fail(where, ": shape ", describe_json(*shape_it), " has more bytes than can be addressed");
    }

    const auto offsets_it = value.find("data_offsets");
    if (offsets_it == value.end()) {
        fail(where, ": no data_offsets");
    }
    std::optional<uint64_t> begin;
    std::optional<uint64_t> end;
    if (offsets_it->is_array() && offsets_it->size() == 2) {
        begin = non_negative_integer((*offsets_it)[0]);
        end = non_negative_integer((*offsets_it)[1]);
    }
    if (!begin || !end) {
        fail(where, ": data_offsets must be two non-negative integers [begin, end], got ",
             describe_json(*offsets_it));
    }
    if (*begin > *end) {
        fail(where, ": data offsets [", *begin, ", ", *end, ") end before they begin");
    }
    if (*end > data_size) {
        fail(where, ": data offsets [", *begin, ", ", *end, ") pass the end of the data section (", data_size,
             " bytes)");
    }
    if (*end - *begin != expected_bytes) {
        fail(where, ": data offsets [", *begin, ", ", *end, ") hold ", *end - *begin, " bytes, but shape ",
             shape_text(entry.view.shape), " of ", dtype_name(*dtype), " needs ", expected_bytes, " bytes");
    }
    entry.begin = *begin;
    entry.end = *end;
    entry.view.data = data_section + *begin;
    entry.view.n_bytes = static_cast<size_t>(expected_bytes);
    return entry;
}

float half_to_float(uint16_t half) {
    const uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
    const uint32_t exponent = (half >> 10) & 0x1fu;
    const uint32_t mantissa = half & 0x3ffu;
    if (exponent == 0) {
        const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
        return sign ? -magnitude : magnitude;
    }
    if (exponent == 31) {
        return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
    }
    return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

template <typename T>
T load(const std::byte* data, size_t index) {
    T value;
    std::memcpy(&value, data + index * sizeof(T), sizeof(T));
    return value;
}

template <typename Out, typename In>
std::vector<Out> convert(const TensorView& tensor) {
    const size_t n = tensor.n_bytes / sizeof(In);
    std::vector<Out> out(n);
    for (size_t i = 0; i < n; ++i) {
        out[i] = static_cast<Out>(load<In>(tensor.data, i));
    }
    return out;
}

bool is_file(const std::filesystem::path& path) {
    std::error_code ec;
    return std::filesystem::is_regular_file(path, ec);
}

}  // namespace

size_t dtype_size(DType dtype) {
    switch (dtype) {
        case DType::F32:
        case DType::I32:
            return 4;
        case DType::F16:
        case DType::BF16:
            return 2;
        case DType::I8:
        case DType::U8:
            return 1;
        case DType::I64:
            return 8;
    }
    fail("dtype_size: invalid dtype ", static_cast<int>(dtype));
}

const char* dtype_name(DType dtype) {
    switch (dtype) {
        case DType::F32:
            return "F32";
        case DType::F16:
            return "F16";
        case DType::BF16:
            return "BF16";
        case DType::I8:
            return "I8";
        case DType::U8:
            return "U8";
        case DType::I32:
            return "I32";
        case DType::I64:
            return "I64";
    }
    fail("dtype_name: invalid dtype ", static_cast<int>(dtype));
}

int64_t TensorView::n_elements() const {
    int64_t n = 1;
    for (const int64_t dim : shape) {
        n *= dim;
    }
    return n;
}

SafetensorsHeader parse_safetensors(const std::byte* data, size_t size, const std::string& origin) {
    if (size < 8) {
        fail(origin, ": file is ", size,
             " bytes, too short for a safetensors file (8-byte header length first)");
    }
    uint64_t header_bytes = 0;
    std::memcpy(&header_bytes, data, 8);
    if (header_bytes > kMaxSafetensorsHeaderBytes) {
        fail(origin, ": header length ", header_bytes, " exceeds the limit of ", kMaxSafetensorsHeaderBytes,
             " bytes");
    }
    if (header_bytes > size - 8) {
        fail(origin, ": header length ", header_bytes, " passes the end of the file (", size, " bytes)");
    }
    const std::string_view header_text(reinterpret_cast<const char*>(data + 8),
                                       static_cast<size_t>(header_bytes));
    const json header = parse_header_json(header_text, origin);
    if (!header.is_object()) {
        fail(origin, ": header must be a JSON object, got ", describe_json(header));
    }

    const std::byte* data_section = data + 8 + header_bytes;
    const uint64_t data_size = size - 8 - header_bytes;
    SafetensorsHeader result;
    std::vector<Entry> entries;
    for (const auto& [name, value] : header.items()) {
        if (name == "__metadata__") {
            result.metadata = parse_metadata(value, origin);
        } else {
            entries.push_back(parse_entry(name, value, data_section, data_size, origin));
        }
    }

    std::vector<const Entry*> by_offset;
    by_offset.reserve(entries.size());
    for (const Entry& entry : entries) {
        by_offset.push_back(&entry);
    }
    std::sort(by_offset.begin(), by_offset.end(), [](const Entry* a, const Entry* b) {
        return std::tie(a->begin, a->end) < std::tie(b->begin, b->end);
    });
    for (size_t i = 1; i < by_offset.size(); ++i) {
        const Entry& previous = *by_offset[i - 1];
        const Entry& current = *by_offset[i];
        if (current.begin < previous.end) {
            fail(origin, ": tensors '", previous.view.name, "' [", previous.begin, ", ", previous.end,
                 ") and '", current.view.name, "' [", current.begin, ", ", current.end, ") overlap");
        }
    }

    result.tensors.reserve(entries.size());
    for (Entry& entry : entries) {
        result.tensors.push_back(std::move(entry.view));
    }
    return result;
}

SafetensorsFile::SafetensorsFile(const std::filesystem::path& path, Key)
    : path_(path), file_(path), header_(parse_safetensors(file_.data(), file_.size(), path.string())) {}

std::unique_ptr<SafetensorsFile> SafetensorsFile::open(const std::filesystem::path& path) {
    return std::make_unique<SafetensorsFile>(path, Key{});
}

const TensorView* SafetensorsFile::find(std::string_view name) const {
    const auto& tensors = header_.tensors;
    const auto it =
        std::lower_bound(tensors.begin(), tensors.end(), name,
                         [](const TensorView& tensor, std::string_view key) { return tensor.name < key; });
    return it != tensors.end() && it->name == name ? &*it : nullptr;
}

const TensorView& SafetensorsFile::get(std::string_view name) const {
    const TensorView* tensor = find(name);
    if (tensor == nullptr) {
        fail(path_.string(), ": no tensor named '", name, "'");
    }
    return *tensor;
}

SafetensorsIndex parse_safetensors_index(std::string_view text, const std::string& origin) {
    const json index = parse_json_object(text, origin);
    return read_json_values(origin, [&] {
        const auto map_it = index.find("weight_map");
        if (map_it == index.end() || !map_it->is_object()) {
            fail(origin, ": \"weight_map\" must be an object from tensor names to shard files, got ",
                 map_it == index.end() ? std::string("nothing") : describe_json(*map_it));
        }
        if (map_it->empty()) {
            fail(origin, ": \"weight_map\" is empty");
        }
        SafetensorsIndex result;
        for (const auto& [name, shard_value] : map_it->items()) {
            if (!shard_value.is_string()) {
                fail(origin, ": weight_map entry '", name, "' must be a shard file name, got ",
                     describe_json(shard_value));
            }
            const auto& shard = shard_value.get_ref<const std::string&>();
            const std::filesystem::path shard_name(shard);
            if (shard.empty() || shard_name.filename() != shard_name || shard == "." || shard == "..") {
                fail(origin, ": weight_map entry '", name, "' names shard '", shard,
                     "', which is not a file name inside the model folder");
            }
            result.weight_map.emplace_back(name, shard);
        }
        return result;
    });
}

std::unique_ptr<TensorStore> TensorStore::open(const std::filesystem::path& model_dir) {
    std::error_code ec;
    if (!std::filesystem::is_directory(model_dir, ec)) {
        fail(model_dir.string(), ": not a folder (the model folder holds model.safetensors and config.json)");
    }
    auto store = std::make_unique<TensorStore>(model_dir, Key{});
    const auto index_path = model_dir / "model.safetensors.index.json";
    const auto single_path = model_dir / "model.safetensors";

    if (!is_file(index_path)) {
        if (!is_file(single_path)) {
            fail(model_dir.string(), ": no model.safetensors or model.safetensors.index.json");
        }
        store->files_.push_back(SafetensorsFile::open(single_path));
        for (const TensorView& tensor : store->files_.back()->tensors()) {
            store->by_name_.emplace(tensor.name, &tensor);
        }
        return store;
    }

    const std::string origin = index_path.string();
    const SafetensorsIndex index = parse_safetensors_index(read_file_text(index_path), origin);
    std::map<std::string, const SafetensorsFile*, std::less<>> shards;
    for (const auto& [name, shard] : index.weight_map) {
        auto shard_it = shards.find(shard);
        if (shard_it == shards.end()) {
            const auto shard_path = model_dir / shard;
            if (!is_file(shard_path)) {
                fail(origin, ": weight_map puts tensor '", name, "' in shard '", shard,
                     "', which does not exist in ", model_dir.string());
            }
            store->files_.push_back(SafetensorsFile::open(shard_path));
            shard_it = shards.emplace(shard, store->files_.back().get()).first;
        }
        const TensorView* tensor = shard_it->second->find(name);
        if (tensor == nullptr) {
            fail(origin, ": weight_map puts tensor '", name, "' in shard '", shard,
                 "', but that shard has no such tensor");
        }
        store->by_name_.emplace(name, tensor);
    }
    return store;
}

const TensorView* TensorStore::find(std::string_view name) const {
    const auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : it->second;
}

const TensorView& TensorStore::get(std::string_view name) const {
    const TensorView* tensor = find(name);
    if (tensor == nullptr) {
        fail(dir_.string(), ": no tensor named '", name, "'");
    }
    return *tensor;
}

std::vector<std::string> TensorStore::names() const {
    std::vector<std::string> names;
    names.reserve(by_name_.size());
    for (const auto& entry : by_name_) {
        names.push_back(entry.first);
    }
    return names;
}

size_t TensorStore::n_bytes() const {
    size_t n = 0;
    for (const auto& entry : by_name_) {
        n += entry.second->n_bytes;
    }
    return n;
}

void to_f32_range(const TensorView& tensor, int64_t begin, int64_t end, float* out) {
    const int64_t n = f32_count(tensor);
    if (begin < 0 || begin > end || end > n) {
        fail("tensor '", tensor.name, "': elements [", begin, ", ", end, ") of ", n);
    }
    const auto each = [&](auto convert) {
        for (int64_t i = begin; i < end; ++i) {
            out[i - begin] = convert(static_cast<size_t>(i));
        }
    };
    const std::byte* data = tensor.data;
    switch (tensor.dtype) {
        case DType::F32:
            return each([data](size_t i) { return load<float>(data, i); });
        case DType::F16:
            return each([data](size_t i) { return half_to_float(load<uint16_t>(data, i)); });
        case DType::BF16:
            return each([data](size_t i) {
                return std::bit_cast<float>(static_cast<uint32_t>(load<uint16_t>(data, i)) << 16);
            });
        case DType::I8:
            return each([data](size_t i) { return static_cast<float>(load<int8_t>(data, i)); });
        case DType::U8:
            return each([data](size_t i) { return static_cast<float>(load<uint8_t>(data, i)); });
        case DType::I32:
            return each([data](size_t i) { return static_cast<float>(load<int32_t>(data, i)); });
        case DType::I64:
            return each([data](size_t i) { return static_cast<float>(load<int64_t>(data, i)); });
    }
    fail("tensor '", tensor.name, "': invalid dtype ", static_cast<int>(tensor.dtype));
}

std::vector<float> to_f32(const TensorView& tensor) {
    const int64_t n = f32_count(tensor);
    std::vector<float> out(static_cast<size_t>(n));
    to_f32_range(tensor, 0, n, out.data());
    return out;
}

int64_t f32_count(const TensorView& tensor) {
    switch (tensor.dtype) {
        case DType::F32:
        case DType::I32:
            return static_cast<int64_t>(tensor.n_bytes / 4);
        case DType::F16:
        case DType::BF16:
            return static_cast<int64_t>(tensor.n_bytes / 2);
        case DType::I64:
            return static_cast<int64_t>(tensor.n_bytes / 8);
        case DType::I8:
        case DType::U8:
            return static_cast<int64_t>(tensor.n_bytes);
    }
    fail("tensor '", tensor.name, "': invalid dtype ", static_cast<int>(tensor.dtype));
}

std::vector<int64_t> to_i64(const TensorView& tensor) {
    switch (tensor.dtype) {
        case DType::I64:
            return convert<int64_t, int64_t>(tensor);
        case DType::I32:
            return convert<int64_t, int32_t>(tensor);
        case DType::U8:
            return convert<int64_t, uint8_t>(tensor);
        case DType::I8:
            return convert<int64_t, int8_t>(tensor);
        case DType::F32:
        case DType::F16:
        case DType::BF16:
            break;
    }
    fail("tensor '", tensor.name, "' has dtype ", dtype_name(tensor.dtype), ", not an integer type");
}

}  // namespace folio
