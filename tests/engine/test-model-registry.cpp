// The model registry: a folder's config.json picks its family (model_type, architectures), the family
// describes the model without loading it, a folder of no known family is refused with the file, its
// model_type and the families there are, and a slot loads through its family (a registered fake here).
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/backend/backend.h"
#include "engine/common/error.h"
#include "engine/models/model-registry.h"
#include "temp-dir.h"

namespace folio {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

const fs::path kFixtures = FOLIO_FIXTURES_DIR;
const fs::path kLayoutFixtures = kFixtures.parent_path() / "layout";

void write_text(const fs::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
}

std::string error_of(const std::function<void()>& action) {
    try {
        action();
    } catch (const Error& e) {
        return e.what();
    }
    return "<no error>";
}

TEST(ModelRegistryTest, FixtureFoldersMapToTheirFamilies) {
    const ModelRegistry& registry = ModelRegistry::builtin();
    EXPECT_EQ(registry.family_of(kFixtures / "paddleocr-vl-tiny").name(), "paddleocr-vl");
    EXPECT_EQ(registry.family_of(kFixtures / "paddleocr-vl-tiny-hf").name(), "paddleocr-vl");
    EXPECT_EQ(registry.family_of(kLayoutFixtures / "pp-doclayout-v2-tiny").name(), "pp-doclayout");
    EXPECT_EQ(registry.family_of(kLayoutFixtures / "pp-doclayout-v3-tiny").name(), "pp-doclayout");
}

TEST(ModelRegistryTest, DescribesWithoutLoading) {
    const ModelDescription ocr = describe_model(kFixtures / "paddleocr-vl-tiny");
    EXPECT_EQ(ocr.family, "paddleocr-vl");
    EXPECT_EQ(ocr.name, "paddleocr-vl-tiny");
    EXPECT_EQ(ocr.model_type, "paddleocr_vl");
    EXPECT_EQ(ocr.role, ModelRole::Recognition);
    EXPECT_TRUE(ocr.takes(Modality::Text));
    EXPECT_TRUE(ocr.takes(Modality::Image));
    EXPECT_FALSE(ocr.takes(Modality::Video));
    // The fixture's tokenizer has no location tokens: the four tasks of version 0.9B.
    EXPECT_EQ(ocr.tasks, (std::vector<std::string>{
                             "OCR:", "Table Recognition:", "Formula Recognition:", "Chart Recognition:"}));
    // The context is the fixture config's, not the full-size default.
    const ModelDescription full = describe_model("");
    EXPECT_EQ(full.max_context, 131072);
    EXPECT_GT(ocr.max_context, 0);
    EXPECT_NE(ocr.max_context, full.max_context);

    const ModelDescription layout = describe_model(kLayoutFixtures / "pp-doclayout-v3-tiny");
    EXPECT_EQ(layout.role, ModelRole::Layout);
    EXPECT_EQ(layout.model_type, "pp_doclayout_v3");
    EXPECT_EQ(layout.max_context, 0);
    EXPECT_EQ(describe_model(kLayoutFixtures / "pp-doclayout-v2-tiny").model_type, "pp_doclayout_v2");
}

TEST(ModelRegistryTest, LaterVersionsOfferSpottingAndSeals) {
    TempDir dir;
    fs::copy_file(kFixtures / "paddleocr-vl-tiny" / "config.json", dir / "config.json");
    write_text(dir / "added_tokens.json", R"({"<|LOC_BEGIN|>": 606, "<|LOC_END|>": 607})");
    const ModelDescription d = describe_model(dir.path());
    ASSERT_EQ(d.tasks.size(), 6u);
    EXPECT_EQ(d.tasks[4], "Spotting:");
    EXPECT_EQ(d.tasks[5], "Seal Recognition:");
}

TEST(ModelRegistryTest, ArchitecturesPickTheFamilyWithoutModelType) {
    const ModelRegistry& registry = ModelRegistry::builtin();
    const nlohmann::json by_architecture = {{"architectures", {"PPDocLayoutV3ForObjectDetection"}}};
    ASSERT_NE(registry.match(by_architecture), nullptr);
    EXPECT_EQ(registry.match(by_architecture)->name(), "pp-doclayout");
    const nlohmann::json ocr = {{"architectures", {"PaddleOCRVLForConditionalGeneration"}}};
    ASSERT_NE(registry.match(ocr), nullptr);
    EXPECT_EQ(registry.match(ocr)->name(), "paddleocr-vl");
    const nlohmann::json llama = {{"architectures", {"LlamaForCausalLM"}}};
    ASSERT_NE(registry.match(llama), nullptr);
    EXPECT_EQ(registry.match(llama)->name(), "llama");
    const nlohmann::json qwen = {{"model_type", "qwen2"}, {"architectures", {"Qwen2ForCausalLM"}}};
    EXPECT_EQ(registry.match(qwen), nullptr);
}

TEST(ModelRegistryTest, UnknownFoldersAreRefusedByName) {
    TempDir dir;
    write_text(dir / "config.json", R"({"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"]})");
    const std::string unknown = error_of([&] { describe_model(dir.path()); });
    EXPECT_NE(unknown.find((dir / "config.json").string()), std::string::npos) << unknown;
    EXPECT_NE(unknown.find("\"qwen2\""), std::string::npos) << unknown;
    EXPECT_NE(unknown.find("Qwen2ForCausalLM"), std::string::npos) << unknown;
    EXPECT_NE(unknown.find("paddleocr-vl, pp-doclayout, ernie-4.5-vl, llama"), std::string::npos) << unknown;

    write_text(dir / "config.json", "{\"model_type\": ");
    const std::string broken = error_of([&] { describe_model(dir.path()); });
    EXPECT_NE(broken.find((dir / "config.json").string()), std::string::npos) << broken;

    fs::remove(dir / "config.json");
    const std::string missing = error_of([&] { describe_model(dir.path()); });
    EXPECT_NE(missing.find("config.json: missing"), std::string::npos) << missing;
    const std::string absent = error_of([&] { describe_model(dir / "nothing"); });
    EXPECT_NE(absent.find("does not exist"), std::string::npos) << absent;
}

// A family the test registers: it takes configs of model_type "fake" and counts what it loads.
class FakeFamily final : public ModelFamily {
public:
    class Loaded final : public LoadedModel {
    public:
        ModelRole role() const override { return ModelRole::Recognition; }
        ModelDescription description() const override {
            ModelDescription d;
            d.family = "fake";
            return d;
        }
    };

    std::string_view name() const override { return "fake"; }
    ModelRole role() const override { return ModelRole::Recognition; }
    bool matches(const nlohmann::json& config) const override { return config_model_type(config) == "fake"; }
    ModelDescription describe(const fs::path& dir) const override {
        ModelDescription d;
        d.family = "fake";
        d.name = dir.filename().string();
        d.max_context = 77;
        return d;
    }
    std::unique_ptr<LoadedModel> load(const ModelSlot&, Backend&, LoadContext&) const override {
        ++*n_loads;
        return std::make_unique<Loaded>();
    }

    std::shared_ptr<int> n_loads = std::make_shared<int>(0);
};

TEST(ModelRegistryTest, SlotsLoadThroughTheirFamily) {
    ModelRegistry registry;
    auto family = std::make_unique<FakeFamily>();
    const std::shared_ptr<int> n_loads = family->n_loads;
    registry.add(std::move(family));
    EXPECT_NE(error_of([&] { registry.add(std::make_unique<FakeFamily>()); }).find("already"),
              std::string::npos);

    TempDir dir;
    write_text(dir / "config.json", R"({"model_type": "fake"})");
    EXPECT_EQ(registry.describe(dir.path()).max_context, 77);

    const std::unique_ptr<Backend> backend = make_cpu_backend(1);
    std::atomic<bool> cancelled{false};
    LoadContext context([](const LoadProgress&) {}, cancelled);
    const std::unique_ptr<LoadedModel> loaded =
        registry.load(ModelSlot(ModelRole::Recognition, dir.path()), *backend, context);
    EXPECT_EQ(*n_loads, 1);
    EXPECT_EQ(loaded->description().family, "fake");

    // A slot of another role is refused before its family loads anything.
    const std::string wrong_role =
        error_of([&] { registry.load(ModelSlot(ModelRole::Layout, dir.path()), *backend, context); });
    EXPECT_NE(wrong_role.find("is a recognition model, not a layout model"), std::string::npos) << wrong_role;
    EXPECT_EQ(*n_loads, 1);

    // A slot may name its family; an unknown name is refused.
    ModelSlot named(ModelRole::Recognition, "");
    named.family = "fake";
    registry.load(named, *backend, context);
    EXPECT_EQ(*n_loads, 2);
    named.family = "nonexistent";
    EXPECT_NE(
        error_of([&] { registry.load(named, *backend, context); }).find("no model family named nonexistent"),
        std::string::npos);
}

}  // namespace
}  // namespace folio
