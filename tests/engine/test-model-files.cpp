// Model files: TensorStore (single file and shards), config.json in both layouts, preprocessor_config.json,
// ModelFiles over both fixture checkpoints, and broken input of every kind (safetensors files themselves:
// test-safetensors).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/common/error.h"
#include "engine/files/safetensors.h"
#include "engine/image/preprocessor-config.h"
#include "engine/models/paddleocr-vl/config.h"
#include "engine/models/paddleocr-vl/model-files.h"
#include "expect-error.h"
#include "safetensors-writer.h"
#include "temp-dir.h"

namespace folio {
namespace {

namespace fs = std::filesystem;
using test::expect_error;
using test::make_tensor;
using test::TempDir;
using test::TensorData;
using test::write_file;
using test::write_safetensors;

const fs::path kFixtures = FOLIO_FIXTURES_DIR;
const fs::path kPublished = kFixtures / "paddleocr-vl-tiny";
const fs::path kTransformers = kFixtures / "paddleocr-vl-tiny-hf";

float round_to_bf16(float x) {
    uint32_t bits = std::bit_cast<uint32_t>(x);
    bits += 0x7fffu + ((bits >> 16) & 1u);
    return std::bit_cast<float>(bits & 0xffff0000u);
}

TensorData copy_tensor(const TensorView& view) {
    TensorData tensor{view.name, dtype_name(view.dtype), view.shape, std::vector<std::byte>(view.n_bytes)};
    std::memcpy(tensor.bytes.data(), view.data, view.n_bytes);
    return tensor;
}

// A model folder with the published fixture's config files and the given weights.
void write_model_folder(const fs::path& dir, const std::vector<TensorData>& tensors) {
    fs::create_directories(dir);
    fs::copy_file(kPublished / "config.json", dir / "config.json");
    fs::copy_file(kPublished / "preprocessor_config.json", dir / "preprocessor_config.json");
    write_safetensors(dir / "model.safetensors", tensors);
}

std::vector<TensorData> published_tensors() {
    const auto file = SafetensorsFile::open(kPublished / "model.safetensors");
    std::vector<TensorData> tensors;
    for (const TensorView& view : file->tensors()) {
        tensors.push_back(copy_tensor(view));
    }
    return tensors;
}

std::string config_with(const std::string& key, const nlohmann::json& value) {
    auto config = nlohmann::json::parse(read_file_text(kPublished / "config.json"));
    config[key] = value;
    return config.dump();
}

// ---------------------------------------------------------------------------------------------- shards

TEST(TensorStore, ShardedCheckpoint) {
    const TempDir dir;
    const std::vector<TensorData> tensors = published_tensors();
    std::vector<TensorData> shards[2];
    nlohmann::json weight_map = nlohmann::json::object();
    for (size_t i = 0; i < tensors.size(); ++i) {
        const size_t shard = i % 2;
        shards[shard].push_back(tensors[i]);
        weight_map[tensors[i].name] = "model-0000" + std::to_string(shard + 1) + "-of-00002.safetensors";
    }
    fs::copy_file(kPublished / "config.json", dir / "config.json");
    write_safetensors(dir / "model-00001-of-00002.safetensors", shards[0]);
    write_safetensors(dir / "model-00002-of-00002.safetensors", shards[1]);
    write_file(dir / "model.safetensors.index.json",
               nlohmann::json{{"metadata", {{"total_size", 0}}}, {"weight_map", weight_map}}.dump());

    const auto sharded = TensorStore::open(dir.path());
    const auto single = TensorStore::open(kPublished);
    EXPECT_EQ(sharded->n_files(), 2u);
    EXPECT_EQ(single->n_files(), 1u);
    EXPECT_EQ(sharded->names(), single->names());
    EXPECT_EQ(sharded->n_bytes(), single->n_bytes());
    EXPECT_EQ(sharded->n_bytes(), 3711616u);
    for (const std::string& name : single->names()) {
        const TensorView& a = sharded->get(name);
        const TensorView& b = single->get(name);
        EXPECT_EQ(a.shape, b.shape) << name;
        ASSERT_EQ(a.n_bytes, b.n_bytes) << name;
        EXPECT_EQ(std::memcmp(a.data, b.data, a.n_bytes), 0) << name;
    }

    const auto files = ModelFiles::open(dir.path());
    EXPECT_EQ(files->tensor_names().size(), 72u);
    EXPECT_EQ(files->preprocessor().min_pixels, 384 * 384);  // no preprocessor_config.json: defaults
    expect_error([&] { sharded->get("nope"); }, dir.path().string() + ": no tensor named 'nope'");
}

TEST(TensorStoreErrors, IndexProblems) {
    const TempDir dir;
    write_safetensors(dir / "a.safetensors", {make_tensor("x", "F32", {1}, std::vector<float>{1.0f})});
    const fs::path index = dir / "model.safetensors.index.json";
    const auto with_index = [&](const std::string& text) {
        write_file(index, text);
        return [&] { TensorStore::open(dir.path()); };
    };
    expect_error(
        with_index(R"({"weight_map":{"x":"a.safetensors","y":"b.safetensors"}})"),
        index.string() + ": weight_map puts tensor 'y' in shard 'b.safetensors', which does not exist");
    expect_error(
        with_index(R"({"weight_map":{"x":"a.safetensors","z":"a.safetensors"}})"),
        index.string() +
            ": weight_map puts tensor 'z' in shard 'a.safetensors', but that shard has no such tensor");
    expect_error(with_index(R"({"weight_map":{"x":"../a.safetensors"}})"),
                 "names shard '../a.safetensors', which is not a file name inside the model folder");
    expect_error(with_index(R"({"weight_map":{"x":"/etc/passwd"}})"),
                 "which is not a file name inside the model folder");
    expect_error(with_index(R"({"weight_map":{"x":3}})"),
                 "weight_map entry 'x' must be a shard file name, got number 3");
    expect_error(with_index(R"({"weight_map":{}})"), "\"weight_map\" is empty");
    expect_error(with_index(R"({"metadata":{}})"), "\"weight_map\" must be an object");
    expect_error(with_index(R"({"weight_map":)"), index.string() + ": not valid JSON");
    expect_error(with_index(""), index.string() + ": not valid JSON");
    write_file(dir / "broken.safetensors", "12345");
    expect_error(with_index(R"({"weight_map":{"x":"broken.safetensors"}})"),
                 (dir / "broken.safetensors").string() + ": file is 5 bytes, too short");

    with_index(R"({"weight_map":{"x":"a.safetensors"}})")();
    EXPECT_EQ(TensorStore::open(dir.path())->names(), std::vector<std::string>{"x"});
}

// ---------------------------------------------------------------------------------------------- config.json

TEST(ModelConfig, BothLayoutsGiveTheSameValues) {
    const ModelConfig published = load_model_config(kPublished / "config.json");
    const ModelConfig transformers = load_model_config(kTransformers / "config.json");
    for (const ModelConfig* config : {&published, &transformers}) {
        const TextConfig& t = config->text;
        const VisionConfig& v = config->vision;
        EXPECT_EQ(config->model_type, "paddleocr_vl");
        EXPECT_EQ(t.vocab_size, 606);
        EXPECT_EQ(t.hidden_size, 128);
        EXPECT_EQ(t.intermediate_size, 256);
        EXPECT_EQ(t.num_hidden_layers, 3);
        EXPECT_EQ(t.num_attention_heads, 4);
        EXPECT_EQ(t.num_key_value_heads, 2);
        EXPECT_EQ(t.head_dim, 32);
        EXPECT_EQ(t.max_position_embeddings, 4096);
        EXPECT_FLOAT_EQ(t.rms_norm_eps, 1e-5f);
        EXPECT_EQ(t.rope_theta, 500000.0f);
        EXPECT_EQ(t.mrope_section, (std::array<int, 3>{4, 6, 6}));
        EXPECT_TRUE(t.tie_word_embeddings);
        EXPECT_FALSE(t.use_bias);
        EXPECT_EQ(t.hidden_act, "silu");
        EXPECT_EQ(t.pad_token_id, 0);
        EXPECT_EQ(t.bos_token_id, 1);
        EXPECT_EQ(t.eos_token_ids, std::vector<int>{2});
        EXPECT_EQ(v.hidden_size, 96);
        EXPECT_EQ(v.intermediate_size, 192);
        EXPECT_EQ(v.num_hidden_layers, 2);
        EXPECT_EQ(v.num_attention_heads, 4);
        EXPECT_EQ(v.head_dim(), 24);
        EXPECT_EQ(v.num_channels, 3);
        EXPECT_EQ(v.image_size, 84);
        EXPECT_EQ(v.patch_size, 14);
        EXPECT_EQ(v.spatial_merge_size, 2);
        EXPECT_FLOAT_EQ(v.layer_norm_eps, 1e-6f);
        EXPECT_EQ(v.hidden_act, "gelu_pytorch_tanh");
        EXPECT_EQ(v.rope_theta, 10000.0f);
        EXPECT_EQ(config->image_token_id, 602);
        EXPECT_EQ(config->video_token_id, 605);
        EXPECT_EQ(config->vision_start_token_id, 603);
        EXPECT_EQ(config->vision_end_token_id, 604);
    }
}

TEST(ModelConfig, DefaultsAreTheReferenceModel) {
    const ModelConfig config = parse_model_config("{}", "config.json");
    EXPECT_EQ(config.vision.hidden_size, 1152);
    EXPECT_EQ(config.vision.intermediate_size, 4304);
    EXPECT_EQ(config.vision.num_hidden_layers, 27);
    EXPECT_EQ(config.vision.num_attention_heads, 16);
    EXPECT_EQ(config.vision.head_dim(), 72);
    EXPECT_EQ(config.vision.image_size, 384);
    EXPECT_EQ(config.vision.patch_size, 14);
    EXPECT_EQ(config.text.vocab_size, 103424);
    EXPECT_EQ(config.text.hidden_size, 1024);
    EXPECT_EQ(config.text.num_hidden_layers, 18);
    EXPECT_EQ(config.text.num_key_value_heads, 2);
    EXPECT_EQ(config.text.head_dim, 128);
    EXPECT_EQ(config.text.mrope_section, (std::array<int, 3>{16, 24, 24}));
    EXPECT_EQ(config.text.rope_theta, 500000.0f);
    EXPECT_EQ(config.image_token_id, 100295);
    EXPECT_EQ(config.vision_end_token_id, 101306);
}

TEST(ModelConfig, OptionalValues) {
    const ModelConfig config = parse_model_config(
        R"({"num_key_value_heads": null, "head_dim": null, "pad_token_id": null, "eos_token_id": [2, 5],
            "rope_theta": 10000, "rope_scaling": {"type": "mrope", "mrope_section": [16, 8, 8]},
            "sliding_window": null, "unknown_key": {"anything": [1]}})",
        "config.json");
    EXPECT_EQ(config.text.num_key_value_heads, 16);
    EXPECT_EQ(config.text.head_dim, 64);
    EXPECT_EQ(config.text.pad_token_id, -1);
    EXPECT_EQ(config.text.eos_token_ids, (std::vector<int>{2, 5}));
    EXPECT_EQ(config.text.rope_theta, 10000.0f);
    EXPECT_EQ(config.text.mrope_section, (std::array<int, 3>{16, 8, 8}));
}

TEST(ModelConfigErrors, WrongTypes) {
    expect_error([] { parse_model_config(config_with("hidden_size", "abc"), "config.json"); },
                 R"(config.json: "hidden_size" must be an integer, got string "abc")");
    expect_error([] { parse_model_config(config_with("num_hidden_layers", 2.5), "config.json"); },
                 R"(config.json: "num_hidden_layers" must be an integer, got number 2.5)");
    expect_error([] { parse_model_config(config_with("vocab_size", 1e12), "config.json"); },
                 R"("vocab_size" must be an integer)");
    expect_error([] { parse_model_config(config_with("vocab_size", int64_t{1} << 40), "config.json"); },
                 R"("vocab_size" must be a 32-bit integer, got number 1099511627776)");
    expect_error([] { parse_model_config(config_with("rms_norm_eps", "small"), "config.json"); },
                 R"("rms_norm_eps" must be a number, got string "small")");
    expect_error([] { parse_model_config(config_with("use_bias", 0), "config.json"); },
                 R"("use_bias" must be true or false, got number 0)");
    expect_error(
        [] {
            parse_model_config(config_with("vision_config", {{"hidden_size", "96"}}), "config.json");
        },
        R"(config.json: "vision_config.hidden_size" must be an integer, got string "96")");
    expect_error([] { parse_model_config(config_with("vision_config", 5), "config.json"); },
                 R"("vision_config" must be an object, got number 5)");
    expect_error([] { parse_model_config(R"({"text_config": {"num_hidden_layers": "3"}})", "config.json"); },
                 R"("text_config.num_hidden_layers" must be an integer, got string "3")");
    expect_error([] { parse_model_config(config_with("hidden_act", 7), "config.json"); },
                 R"("hidden_act" must be a string, got number 7)");
}

TEST(ModelConfigErrors, EosList) {
    expect_error(
        [] {
            parse_model_config(config_with("eos_token_id", {2, "x"}), "config.json");
        },
        R"("eos_token_id" must be an integer or a list of integers, got array [2,"x"])");
    expect_error([] { parse_model_config(config_with("eos_token_id", "2"), "config.json"); },
                 R"("eos_token_id" must be an integer or a list of integers, got string "2")");
    expect_error(
        [] {
            parse_model_config(config_with("eos_token_id", {2, 606}), "config.json");
        },
        R"("eos_token_id" 606 is outside the vocabulary ("vocab_size" 606))");
}

TEST(ModelConfigErrors, Ranges) {
    expect_error(
        [] {
            parse_model_config(config_with("rope_scaling", {{"mrope_section", {4, 6, 7}}}), "config.json");
        },
        "mrope_section [4, 6, 7] sums to 17, but it must sum to \"head_dim\" / 2 = 16");
    expect_error(
        [] {
            parse_model_config(config_with("rope_scaling", {{"mrope_section", {8, 8}}}), "config.json");
        },
        R"("rope_scaling.mrope_section" must be a list of 3 integers, got array [8,8])");
    expect_error(
        [] {
            parse_model_config(config_with("rope_scaling", {{"type", "yarn"}}), "config.json");
        },
        R"("rope_scaling.type" "yarn" is not supported)");
    expect_error(
        [] {
            parse_model_config(
                R"({"text_config": {"head_dim": 32, "rope_parameters": {"mrope_section": [4, 4, 4]}}})",
                "config.json");
        },
        "mrope_section [4, 4, 4] sums to 12");
    expect_error([] { parse_model_config(config_with("hidden_size", 0), "config.json"); },
                 R"("hidden_size" must be positive, got 0)");
    expect_error([] { parse_model_config(config_with("head_dim", 31), "config.json"); },
                 R"("head_dim" must be even for the rotary embedding, got 31)");
    expect_error([] { parse_model_config(config_with("num_key_value_heads", 3), "config.json"); },
                 R"("num_key_value_heads" (3) must divide "num_attention_heads" (4))");
    expect_error([] { parse_model_config(config_with("rms_norm_eps", -1), "config.json"); },
                 R"("rms_norm_eps" must be positive, got -1)");
    expect_error([] { parse_model_config(config_with("image_token_id", 606), "config.json"); },
                 R"("image_token_id" 606 is outside the vocabulary (vocab_size 606))");
    expect_error([] { parse_model_config(config_with("hidden_act", "mish"), "config.json"); },
                 R"("hidden_act" "mish" is not a known activation)");
    expect_error([] { parse_model_config(config_with("model_type", "llama"), "config.json"); },
                 R"("model_type" "llama" is not supported (expected "paddleocr_vl"))");
    expect_error(
        [] {
            parse_model_config(
                config_with("vision_config", {{"hidden_size", 96}, {"num_attention_heads", 5}}),
                "config.json");
        },
        R"("vision_config.num_attention_heads" (5) must divide "vision_config.hidden_size" (96))");
    expect_error(
        [] {
            parse_model_config(
                config_with("vision_config", {{"hidden_size", 96}, {"num_attention_heads", 16}}),
                "config.json");
        },
        "the vision head size \"vision_config.hidden_size\" / \"vision_config.num_attention_heads\" = 6 must "
        "be a "
        "multiple of 4");
}

TEST(ModelConfigErrors, NotJson) {
    expect_error([] { parse_model_config("{\"hidden_size\": 12", "config.json"); },
                 "config.json: not valid JSON");
    expect_error([] { parse_model_config("", "config.json"); }, "config.json: not valid JSON");
    expect_error([] { parse_model_config("[1]", "config.json"); },
                 "config.json: must be a JSON object, got array [1]");
    const TempDir dir;
    expect_error([&] { load_model_config(dir / "config.json"); },
                 (dir / "config.json").string() + ": cannot open: No such file or directory");
    write_file(dir / "config.json", "");
    expect_error([&] { load_model_config(dir / "config.json"); },
                 (dir / "config.json").string() + ": not valid JSON");
}

// ---------------------------------------------------------------------------------------------- preprocessor

TEST(PreprocessorConfig, ReadsFixtureAndDefaults) {
    const PreprocessorConfig config = load_preprocessor_config(kPublished / "preprocessor_config.json");
    EXPECT_EQ(config.min_pixels, 3136);
    EXPECT_EQ(config.max_pixels, 50176);
    EXPECT_EQ(config.patch_size, 14);
    EXPECT_EQ(config.merge_size, 2);
    EXPECT_EQ(config.temporal_patch_size, 1);
    EXPECT_EQ(config.resample, 3);
    EXPECT_DOUBLE_EQ(config.rescale_factor, 1.0 / 255);
    EXPECT_EQ(config.image_mean, (std::array<float, 3>{0.48145466f, 0.4578275f, 0.40821073f}));
    EXPECT_EQ(config.image_std, (std::array<float, 3>{0.26862954f, 0.26130258f, 0.27577711f}));
    EXPECT_TRUE(config.do_resize && config.do_rescale && config.do_normalize && config.do_convert_rgb);

    const PreprocessorConfig defaults = parse_preprocessor_config("{}", "preprocessor_config.json");
    EXPECT_EQ(defaults.min_pixels, 384 * 384);
    EXPECT_EQ(defaults.max_pixels, 1536 * 1536);

    const PreprocessorConfig pixels = parse_preprocessor_config(
        R"({"min_pixels": 147384, "max_pixels": 2822400, "size": {"shortest_edge": 1, "longest_edge": 2},
            "image_mean": [0.5, 0.5, 0.5], "image_std": 0.5, "do_normalize": false})",
        "preprocessor_config.json");
    EXPECT_EQ(pixels.min_pixels, 147384);
    EXPECT_EQ(pixels.max_pixels, 2822400);
    EXPECT_EQ(pixels.image_mean, (std::array<float, 3>{0.5f, 0.5f, 0.5f}));
    EXPECT_EQ(pixels.image_std, (std::array<float, 3>{0.5f, 0.5f, 0.5f}));
    EXPECT_FALSE(pixels.do_normalize);
}

TEST(PreprocessorConfigErrors, BadValues) {
    const auto parse = [](const std::string& text) {
        parse_preprocessor_config(text, "preprocessor_config.json");
    };
    expect_error([&] { parse(R"({"min_pixels": "many"})"); },
                 R"(preprocessor_config.json: "min_pixels" must be an integer, got string "many")");
    expect_error([&] { parse(R"({"size": {"shortest_edge": 1.5}})"); },
                 R"("size.shortest_edge" must be an integer, got number 1.5)");
    expect_error([&] { parse(R"({"min_pixels": 100, "max_pixels": 10})"); },
                 "the largest pixel count (max_pixels or size.longest_edge) must be from min_pixels (100) to "
                 "268435456, got 10");
    expect_error([&] { parse(R"({"max_pixels": 1000000000000})"); }, "got 1000000000000");
    expect_error([&] { parse(R"({"min_pixels": 0})"); }, "must be positive, got 0");
    expect_error([&] { parse(R"({"image_std": [0.5, 0, 0.5]})"); }, R"("image_std" must be positive, got 0)");
    expect_error([&] { parse(R"({"image_mean": [0.5, 0.5]})"); },
                 R"("image_mean" must be a number or a list of 3 numbers, got array [0.5,0.5])");
    expect_error([&] { parse(R"({"resample": 9})"); },
                 R"("resample" must be a PIL resampling filter from 0 to 5, got 9)");
    expect_error([&] { parse(R"({"patch_size": -14})"); }, R"("patch_size" must be positive, got -14)");
    expect_error([&] { parse(R"({"do_resize": "yes"})"); },
                 R"("do_resize" must be true or false, got string "yes")");
}

// ---------------------------------------------------------------------------------------------- ModelFiles

TEST(ModelFiles, CanonicalNames) {
    EXPECT_EQ(canonical_tensor_name("visual.vision_model.post_layernorm.weight"),
              "model.visual.vision_model.post_layernorm.weight");
    EXPECT_EQ(canonical_tensor_name("mlp_AR.linear_1.weight"), "model.projector.linear_1.weight");
    EXPECT_EQ(canonical_tensor_name("model.norm.weight"), "model.language_model.norm.weight");
    EXPECT_EQ(canonical_tensor_name("model.layers.0.mlp.up_proj.weight"),
              "model.language_model.layers.0.mlp.up_proj.weight");
    EXPECT_EQ(canonical_tensor_name("model.visual.vision_model.post_layernorm.weight"),
              "model.visual.vision_model.post_layernorm.weight");
    EXPECT_EQ(canonical_tensor_name("model.projector.pre_norm.bias"), "model.projector.pre_norm.bias");
    EXPECT_EQ(canonical_tensor_name("model.language_model.norm.weight"), "model.language_model.norm.weight");
    EXPECT_EQ(canonical_tensor_name("lm_head.weight"), "lm_head.weight");
    EXPECT_TRUE(is_ignored_tensor(
        canonical_tensor_name("visual.vision_model.embeddings.packing_position_embedding.weight")));
    EXPECT_TRUE(is_ignored_tensor(canonical_tensor_name("visual.vision_model.head.mlp.fc1.weight")));
    EXPECT_TRUE(is_ignored_tensor("model.visual.vision_model.head.probe"));
    EXPECT_FALSE(is_ignored_tensor("model.visual.vision_model.post_layernorm.weight"));
}

TEST(ModelFiles, PublishedAndTransformersCheckpointsHoldTheSameWeights) {
    const auto published = ModelFiles::open(kPublished);
    const auto transformers = ModelFiles::open(kTransformers);
    const std::vector<std::string> names = published->tensor_names();
    ASSERT_EQ(names.size(), 72u);
    EXPECT_EQ(names, transformers->tensor_names());
    for (const std::string& name : names) {
        EXPECT_TRUE(name.starts_with("model.visual.vision_model.") || name.starts_with("model.projector.") ||
                    name.starts_with("model.language_model."))
            << name;
        const TensorView& f32 = published->tensor(name);
        const TensorView& bf16 = transformers->tensor(name);
        EXPECT_EQ(f32.name, name);
        EXPECT_EQ(bf16.name, name);
        EXPECT_EQ(f32.dtype, DType::F32) << name;
        EXPECT_EQ(bf16.dtype, DType::BF16) << name;
        ASSERT_EQ(f32.shape, bf16.shape) << name;
        const std::vector<float> a = to_f32(f32);
        const std::vector<float> b = to_f32(bf16);
        ASSERT_EQ(a.size(), b.size()) << name;
        size_t n_different = 0;
        for (size_t i = 0; i < a.size(); ++i) {
            n_different += round_to_bf16(a[i]) != b[i];
        }
        EXPECT_EQ(n_different, 0u) << name;
    }
    EXPECT_EQ(published->find("lm_head.weight"), nullptr);
    EXPECT_EQ(published->config().text.hidden_size, transformers->config().text.hidden_size);
    EXPECT_EQ(published->preprocessor().max_pixels, 50176);
    EXPECT_EQ(transformers->preprocessor().max_pixels, 1536 * 1536);
    EXPECT_EQ(published->n_bytes(), 2 * transformers->n_bytes());

    const ModelConfig& config = published->config();
    published->check_shape(published->tensor("model.language_model.embed_tokens.weight"),
                           {config.text.vocab_size, config.text.hidden_size});
    published->check_shape(published->tensor("model.language_model.layers.2.self_attn.k_proj.weight"),
                           {config.text.num_key_value_heads * config.text.head_dim, config.text.hidden_size});
    published->check_shape(published->tensor("model.projector.linear_1.weight"),
                           {4 * config.vision.hidden_size, 4 * config.vision.hidden_size});
    expect_error(
        [&] {
            published->check_shape(published->tensor("model.language_model.norm.weight"),
                                   {config.text.hidden_size, 2});
        },
        kPublished.string() +
            ": tensor 'model.language_model.norm.weight' has shape [128], expected [128, 2] from "
            "config.json");
    expect_error([&] { published->tensor("lm_head.weight"); },
                 kPublished.string() + ": missing tensor 'lm_head.weight'");
}

TEST(ModelFiles, IgnoresUnusedTensors) {
    const TempDir dir;
    std::vector<TensorData> tensors = published_tensors();
    tensors.push_back(make_tensor("visual.vision_model.embeddings.packing_position_embedding.weight", "F32",
                                  {2, 2}, std::vector<float>(4)));
    tensors.push_back(make_tensor("visual.vision_model.head.probe", "F32", {1}, std::vector<float>(1)));
    tensors.push_back(make_tensor("lm_head.weight", "F32", {1}, std::vector<float>(1)));
    write_model_folder(dir / "model", tensors);
    const auto files = ModelFiles::open(dir / "model");
    EXPECT_EQ(files->tensor_names().size(), 73u);
    EXPECT_NE(files->find("lm_head.weight"), nullptr);
    EXPECT_EQ(files->find("model.visual.vision_model.head.probe"), nullptr);
    EXPECT_EQ(files->find("model.visual.vision_model.embeddings.packing_position_embedding.weight"), nullptr);
}

TEST(ModelFilesErrors, ClashingNames) {
    const TempDir dir;
    std::vector<TensorData> tensors = published_tensors();
    tensors.push_back(make_tensor("model.language_model.norm.weight", "F32", {1}, std::vector<float>(1)));
    write_model_folder(dir / "model", tensors);
    expect_error([&] { ModelFiles::open(dir / "model"); },
                 ": tensors 'model.language_model.norm.weight' and 'model.norm.weight' are both "
                 "'model.language_model.norm.weight'");
}

TEST(ModelFilesErrors, MissingConfigAndBadFolders) {
    const TempDir dir;
    fs::create_directories(dir / "empty");
    expect_error([&] { ModelFiles::open(dir / "empty"); }, (dir / "empty").string() + ": no config.json");
    expect_error([&] { ModelFiles::open(dir / "absent"); }, (dir / "absent").string() + ": not a folder");

    fs::create_directories(dir / "no-weights");
    fs::copy_file(kPublished / "config.json", dir / "no-weights" / "config.json");
    expect_error([&] { ModelFiles::open(dir / "no-weights"); },
                 ": no model.safetensors or model.safetensors.index.json");

    write_model_folder(dir / "bad-config", published_tensors());
    write_file(dir / "bad-config" / "config.json", config_with("num_hidden_layers", "three"));
    expect_error([&] { ModelFiles::open(dir / "bad-config"); },
                 (dir / "bad-config" / "config.json").string() +
                     R"(: "num_hidden_layers" must be an integer, got string "three")");

    write_model_folder(dir / "bad-patch", published_tensors());
    write_file(dir / "bad-patch" / "preprocessor_config.json", R"({"patch_size": 16})");
    expect_error([&] { ModelFiles::open(dir / "bad-patch"); },
                 R"(preprocessor_config.json: "patch_size" 16 differs from vision_config.patch_size 14)");

    write_model_folder(dir / "truncated", {});
    const std::string image = read_file_text(kPublished / "model.safetensors");
    write_file(dir / "truncated" / "model.safetensors", image.substr(0, image.size() - 1));
    expect_error(
        [&] { ModelFiles::open(dir / "truncated"); },
        (dir / "truncated" / "model.safetensors").string() +
            ": tensor 'visual.vision_model.post_layernorm.weight': data offsets [3711232, 3711616) pass "
            "the end of the data section (3711615 bytes)");
}

TEST(ModelFiles, NonAsciiPath) {
    const TempDir dir;
    const fs::path model = dir / fs::path(u8"模型 ü");
    fs::create_directories(model);
    for (const char* name : {"config.json", "preprocessor_config.json", "model.safetensors"}) {
        fs::copy_file(kPublished / name, model / name);
    }
    const auto files = ModelFiles::open(model);
    EXPECT_EQ(files->tensor_names().size(), 72u);
    EXPECT_EQ(files->config().vision.hidden_size, 96);
    expect_error([&] { files->tensor("model.language_model.missing"); },
                 model.string() + ": missing tensor 'model.language_model.missing'");
    EXPECT_NE(model.string().find("模型 ü"), std::string::npos);

    fs::remove(model / "config.json");
    expect_error([&] { ModelFiles::open(model); }, "模型 ü: no config.json");
}

}  // namespace
}  // namespace folio
