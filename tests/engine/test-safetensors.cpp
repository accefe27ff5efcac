// Safetensors files: every dtype, conversion to float32 (whole, in parts, on a thread pool, in place through
// a store's weight source), the fixture file, and broken files of every kind.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "engine/common/error.h"
#include "engine/common/thread-pool.h"
#include "engine/files/safetensors.h"
#include "engine/files/weight-source.h"
#include "expect-error.h"
#include "safetensors-writer.h"
#include "temp-dir.h"

namespace folio {
namespace {

namespace fs = std::filesystem;
using test::expect_error;
using test::make_tensor;
using test::raw_safetensors;
using test::TempDir;
using test::write_file;
using test::write_safetensors;

const fs::path kFixtures = FOLIO_FIXTURES_DIR;
const fs::path kPublished = kFixtures / "paddleocr-vl-tiny";
const fs::path kTransformers = kFixtures / "paddleocr-vl-tiny-hf";

SafetensorsHeader parse_image(const std::string& image, const std::string& origin = "test.safetensors") {
    return parse_safetensors(reinterpret_cast<const std::byte*>(image.data()), image.size(), origin);
}

void expect_header_error(const std::string& image, const std::string& expected) {
    expect_error([&] { parse_image(image); }, expected);
}

// ---------------------------------------------------------------------------------------------- safetensors

TEST(Safetensors, ReadsEveryDtype) {
    const std::vector<float> f32 = {1.5f, -2.0f, 0.0f, 3.25f, 1e-30f, -7.0f};
    const std::vector<uint16_t> f16 = {0x3c00, 0xc000, 0x0001,
                                       0x7c00, 0x3555, 0x8000};           // 1, -2, 2^-24, inf, ~1/3, -0
    const std::vector<uint16_t> bf16 = {0x3f80, 0xc040, 0x0000, 0x4049};  // 1, -3, 0, 3.140625
    const std::vector<int8_t> i8 = {-128, 127, 0};
    const std::vector<uint8_t> u8 = {0, 255, 7};
    const std::vector<int32_t> i32 = {-5, 2147483647};
    const std::vector<int64_t> i64 = {-1, int64_t{1} << 40, 0};
    const std::string image = test::safetensors_image(
        {make_tensor("f32", "F32", {2, 3}, f32), make_tensor("f16", "F16", {6}, f16),
         make_tensor("bf16", "BF16", {2, 2}, bf16), make_tensor("i8", "I8", {3}, i8),
         make_tensor("u8", "U8", {3}, u8), make_tensor("i32", "I32", {2}, i32),
         make_tensor("i64", "I64", {3, 1}, i64), make_tensor("scalar", "F32", {}, std::vector<float>{42.0f}),
         make_tensor("empty", "F32", {0, 4}, std::vector<float>{})},
        {{"format", "pt"}, {"note", "ü"}});
    const SafetensorsHeader header = parse_image(image);

    ASSERT_EQ(header.tensors.size(), 9u);
    EXPECT_EQ(header.metadata.at("format"), "pt");
    EXPECT_EQ(header.metadata.at("note"), "ü");
    for (size_t i = 1; i < header.tensors.size(); ++i) {
        EXPECT_LT(header.tensors[i - 1].name, header.tensors[i].name);
    }
    const auto get = [&](const std::string& name) -> const TensorView& {
        for (const TensorView& t : header.tensors) {
            if (t.name == name) {
                return t;
            }
        }
        throw std::runtime_error("no " + name);
    };

    EXPECT_EQ(get("f32").shape, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(get("f32").n_elements(), 6);
    EXPECT_EQ(to_f32(get("f32")), f32);
    const std::vector<float> f16_values = to_f32(get("f16"));
    EXPECT_EQ(f16_values[0], 1.0f);
    EXPECT_EQ(f16_values[1], -2.0f);
    EXPECT_EQ(f16_values[2], std::ldexp(1.0f, -24));
    EXPECT_TRUE(std::isinf(f16_values[3]) && f16_values[3] > 0);
    EXPECT_FLOAT_EQ(f16_values[4], 0.333251953125f);
    EXPECT_TRUE(f16_values[5] == 0.0f && std::signbit(f16_values[5]));
    EXPECT_EQ(to_f32(get("bf16")), (std::vector<float>{1.0f, -3.0f, 0.0f, 3.140625f}));
    EXPECT_EQ(to_i64(get("i8")), (std::vector<int64_t>{-128, 127, 0}));
    EXPECT_EQ(to_i64(get("u8")), (std::vector<int64_t>{0, 255, 7}));
    EXPECT_EQ(to_i64(get("i32")), (std::vector<int64_t>{-5, 2147483647}));
    EXPECT_EQ(to_i64(get("i64")), i64);
    EXPECT_EQ(to_f32(get("i32")), (std::vector<float>{-5.0f, 2147483648.0f}));
    EXPECT_EQ(get("scalar").n_elements(), 1);
    EXPECT_EQ(to_f32(get("scalar")), std::vector<float>{42.0f});
    EXPECT_EQ(get("empty").n_elements(), 0);
    EXPECT_EQ(get("empty").n_bytes, 0u);
    expect_error([&] { to_i64(get("f32")); }, "tensor 'f32' has dtype F32, not an integer type");
    for (const DType dtype :
         {DType::F32, DType::F16, DType::BF16, DType::I8, DType::U8, DType::I32, DType::I64}) {
        EXPECT_GT(dtype_size(dtype), 0u) << dtype_name(dtype);
    }
}

// A tensor converted in parts, or on a pool's threads (a large one in several chunks), gives to_f32's values;
// a span or range of the wrong size is refused. A store's weights written in place equal the loaded ones.
TEST(Safetensors, ConvertsInPartsAndOnAPoolAsAWhole) {
    std::vector<uint16_t> large(1 << 20);
    for (size_t i = 0; i < large.size(); ++i) {
        large[i] = static_cast<uint16_t>(0x3f00 + i % 251);  // bfloat16 values about 0.5
    }
    const std::vector<float> f32 = {1.5f, -2.0f, 0.0f, 3.25f, 1e-30f, -7.0f};
    const std::vector<int8_t> i8 = {-128, 127, 0, 5, -9};
    const std::string image =
        test::safetensors_image({make_tensor("large", "BF16", {1024, 1024}, large),
                                 make_tensor("f32", "F32", {2, 3}, f32), make_tensor("i8", "I8", {5}, i8)});
    const SafetensorsHeader header = parse_image(image);
    ThreadPool pool(4);
    for (const TensorView& t : header.tensors) {
        const std::vector<float> whole = to_f32(t);
        const int64_t n = f32_count(t);
        ASSERT_EQ(n, t.n_elements()) << t.name;
        std::vector<float> parts(static_cast<size_t>(n), -1.0f);
        const int64_t cut = n / 3;
        to_f32_range(t, 0, cut, parts.data());
        to_f32_range(t, cut, n, parts.data() + cut);
        EXPECT_EQ(parts, whole) << t.name;
        EXPECT_EQ(to_f32(t, pool), whole) << t.name;
        std::vector<float> short_of_one(static_cast<size_t>(n - 1));
        EXPECT_THROW(to_f32(t, pool, short_of_one), Error) << t.name;
        EXPECT_THROW(to_f32_range(t, 0, n + 1, parts.data()), Error) << t.name;
        EXPECT_THROW(to_f32_range(t, 2, 1, parts.data()), Error) << t.name;
    }

    const TempDir dir;
    write_safetensors(dir / "model.safetensors", {make_tensor("w", "BF16", {1024, 1024}, large)});
    const auto store = TensorStore::open(dir.path());
    const auto source = make_store_weight_source(*store);
    const std::vector<float> loaded = source->load("w", {1024, 1024});
    std::vector<float> in_place(loaded.size());
    source->load_into("w", {1024, 1024}, in_place);
    EXPECT_EQ(in_place, loaded);
    EXPECT_THROW(source->load_into("w", {1024, 512}, std::span(in_place).first(1024 * 512)), Error);
}

TEST(Safetensors, OpensFixtureFile) {
    const auto file = SafetensorsFile::open(kTransformers / "model.safetensors");
    EXPECT_EQ(file->tensors().size(), 72u);
    EXPECT_EQ(file->metadata().at("format"), "pt");
    const TensorView& embed = file->get("model.language_model.embed_tokens.weight");
    EXPECT_EQ(embed.dtype, DType::BF16);
    EXPECT_EQ(embed.shape, (std::vector<int64_t>{606, 128}));
    EXPECT_EQ(embed.n_bytes, 606u * 128u * 2u);
    EXPECT_EQ(file->find("lm_head.weight"), nullptr);
    expect_error([&] { file->get("lm_head.weight"); },
                 (kTransformers / "model.safetensors").string() + ": no tensor named 'lm_head.weight'");
}

TEST(SafetensorsErrors, ZeroByteFile) {
    const TempDir dir;
    write_file(dir / "model.safetensors", "");
    expect_error([&] { SafetensorsFile::open(dir / "model.safetensors"); },
                 (dir / "model.safetensors").string() + ": file is 0 bytes, too short");
}

TEST(SafetensorsErrors, TruncatedFile) {
    const std::string image = read_file_text(kPublished / "model.safetensors");
    expect_header_error(image.substr(0, 5), "file is 5 bytes, too short");
    expect_header_error(image.substr(0, 100), "header length 8072 passes the end of the file (100 bytes)");
    // Header intact, data cut short: the last tensors' offsets pass the end of the data section.
    expect_header_error(image.substr(0, image.size() / 2), "pass the end of the data section");
}

TEST(SafetensorsErrors, HeaderLengthPastEndOfFile) {
    std::string image = raw_safetensors("{}");
    image[0] = 100;
    expect_header_error(image, "header length 100 passes the end of the file (10 bytes)");
    std::string huge(8, '\xff');
    expect_header_error(huge + "{}",
                        "header length 18446744073709551615 exceeds the limit of 100000000 bytes");
}

TEST(SafetensorsErrors, OffsetsPastEndOfData) {
    expect_header_error(raw_safetensors(R"({"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8),
                        "tensor 'x': data offsets [0, 16) pass the end of the data section (8 bytes)");
    expect_header_error(raw_safetensors(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", 8),
                        "data offsets [8, 4) end before they begin");
}

TEST(SafetensorsErrors, ByteLengthDiffersFromShape) {
    expect_header_error(
        raw_safetensors(R"({"x":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}})", 16),
        "tensor 'x': data offsets [0, 12) hold 12 bytes, but shape [2, 2] of F32 needs 16 bytes");
    expect_header_error(
        raw_safetensors(R"({"x":{"dtype":"I64","shape":[4611686018427387904],"data_offsets":[0,8]}})", 8),
        "tensor 'x': shape array [4611686018427387904] has more bytes than can be addressed");
    expect_header_error(
        raw_safetensors(R"({"x":{"dtype":"U8","shape":[4611686018427387904,2],"data_offsets":[0,1]}})", 1),
        "has more elements than can be addressed");
    expect_header_error(
        raw_safetensors(R"({"x":{"dtype":"U8","shape":[4294967296,4294967296,0],"data_offsets":[0,1]}})", 1),
        "has more elements than can be addressed");
    expect_header_error(
        raw_safetensors(R"({"x":{"dtype":"U8","shape":[0,4294967296],"data_offsets":[0,0]})"
                        R"(,"y":{"dtype":"U8","shape":[9223372036854775808],"data_offsets":[0,0]}})"),
        "tensor 'y': shape must be an array of non-negative integers");
}

TEST(SafetensorsErrors, UnknownDtype) {
    expect_header_error(raw_safetensors(R"({"x":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})", 2),
                        "tensor 'x': unknown dtype string \"F8_E4M3\"");
    expect_header_error(raw_safetensors(R"({"x":{"dtype":4,"shape":[2],"data_offsets":[0,2]}})", 2),
                        "tensor 'x': dtype must be a string, got number 4");
}

TEST(SafetensorsErrors, OverlappingTensors) {
    expect_header_error(raw_safetensors(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                                        R"("b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})",
                                        16),
                        "tensors 'a' [0, 16) and 'b' [8, 16) overlap");
}

TEST(SafetensorsErrors, DuplicateNames) {
    expect_header_error(raw_safetensors(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                        R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                        8),
                        "tensor name 'a' appears twice in the header");
}

TEST(SafetensorsErrors, InvalidJson) {
    expect_header_error(
        raw_safetensors(R"({"a":{"dtype":"F32",)", 8),
        "test.safetensors: header: not valid JSON: line 1, column 21: unexpected end of input");
    expect_header_error(raw_safetensors("[1, 2]"), "header must be a JSON object, got array [1,2]");
    expect_header_error(raw_safetensors(R"({"a": 5})"), "tensor 'a': entry must be an object, got number 5");
}

TEST(SafetensorsErrors, BadFields) {
    expect_header_error(raw_safetensors(R"({"x":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}})"),
                        "tensor 'x': shape must be an array of non-negative integers, got array [-1]");
    expect_header_error(raw_safetensors(R"({"x":{"dtype":"F32","shape":[1.5],"data_offsets":[0,0]}})"),
                        "shape must be an array of non-negative integers");
    expect_header_error(raw_safetensors(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 4),
                        "data_offsets must be two non-negative integers [begin, end], got array [0]");
    expect_header_error(raw_safetensors(R"({"x":{"dtype":"F32","shape":[1]}})", 4),
                        "tensor 'x': no data_offsets");
    expect_header_error(raw_safetensors(R"({"x":{"shape":[1],"data_offsets":[0,4]}})", 4),
                        "tensor 'x': no dtype");
    expect_header_error(raw_safetensors(R"({"x":{"dtype":"F32","data_offsets":[0,4]}})", 4),
                        "tensor 'x': no shape");
    expect_header_error(raw_safetensors(R"({"__metadata__":{"format":1}})"),
                        "__metadata__ entry 'format' must be a string, got number 1");
    expect_header_error(raw_safetensors(R"({"__metadata__":[]})"),
                        "__metadata__ must be an object of strings");
}

TEST(SafetensorsErrors, MissingFileAndFolder) {
    const TempDir dir;
    expect_error([&] { SafetensorsFile::open(dir / "absent.safetensors"); },
                 (dir / "absent.safetensors").string() + ": cannot open: No such file or directory");
    expect_error([&] { SafetensorsFile::open(dir.path()); },
                 dir.path().string() + ": is a folder, not a file");
    expect_error([&] { TensorStore::open(dir.path()); },
                 ": no model.safetensors or model.safetensors.index.json");
    expect_error([&] { TensorStore::open(dir / "absent"); }, (dir / "absent").string() + ": not a folder");
}

}  // namespace
}  // namespace folio
