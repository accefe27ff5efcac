#include "engine/models/paddleocr-vl/model-files.h"

#include <initializer_list>
#include <system_error>
#include <utility>

#include "engine/common/error.h"
#include "engine/common/thread-pool.h"

namespace folio {

namespace {

bool starts_with_any(std::string_view name, std::initializer_list<std::string_view> prefixes) {
    for (const std::string_view prefix : prefixes) {
        if (name.starts_with(prefix)) {
            return true;
        }
    }
    return false;
}

std::string shape_text(const std::vector<int64_t>& shape) {
    std::string text = "[";
    for (size_t i = 0; i < shape.size(); ++i) {
        text += (i ? ", " : "") + std::to_string(shape[i]);
    }
    return text + "]";
}

bool is_file(const std::filesystem::path& path) {
    std::error_code ec;
    return std::filesystem::is_regular_file(path, ec);
}

class FileWeightSource final : public WeightSource {
public:
    explicit FileWeightSource(const ModelFiles& files) : files_(files), pool_(0) {}

    std::vector<float> load(const std::string& name, const std::vector<int64_t>& shape) override {
        const TensorView& t = files_.tensor(name);
        files_.check_shape(t, shape);
        return to_f32(t, pool_);
    }

    bool has(const std::string& name) const override { return files_.find(name) != nullptr; }

private:
    const ModelFiles& files_;
    ThreadPool pool_;  // converts each tensor's elements
};

}  // namespace

std::string canonical_tensor_name(std::string_view name) {
    if (starts_with_any(name, {"model.visual.", "model.projector.", "model.language_model."})) {
        return std::string(name);
    }
    if (name.starts_with("visual.")) {
        return "model." + std::string(name);
    }
    if (name.starts_with("mlp_AR.")) {
        return "model.projector." + std::string(name.substr(std::string_view("mlp_AR.").size()));
    }
    if (name.starts_with("model.")) {
        return "model.language_model." + std::string(name.substr(std::string_view("model.").size()));
    }
    return std::string(name);
}

bool is_ignored_tensor(std::string_view canonical_name) {
    return canonical_name.find("packing_position_embedding") != std::string_view::npos ||
           canonical_name.starts_with("model.visual.vision_model.head.");
}

std::unique_ptr<ModelFiles> ModelFiles::open(const std::filesystem::path& dir) {
    return std::make_unique<ModelFiles>(dir, Key{});
}

ModelFiles::ModelFiles(const std::filesystem::path& dir, Key) : dir_(dir) {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir_, ec)) {
        fail(dir_.string(), ": not a folder (a model folder holds config.json and model.safetensors)");
    }
    const auto config_path = dir_ / "config.json";
    if (!is_file(config_path)) {
        fail(dir_.string(), ": no config.json (a model folder holds config.json and model.safetensors)");
    }
    config_ = load_model_config(config_path);

    const auto preprocessor_path = dir_ / "preprocessor_config.json";
    if (is_file(preprocessor_path)) {
        preprocessor_ = load_preprocessor_config(preprocessor_path);
    }
    if (preprocessor_.patch_size != config_.vision.patch_size) {
        fail(preprocessor_path.string(), ": \"patch_size\" ", preprocessor_.patch_size,
             " differs from vision_config.patch_size ", config_.vision.patch_size, " in config.json");
    }
    if (preprocessor_.merge_size != config_.vision.spatial_merge_size) {
        fail(preprocessor_path.string(), ": \"merge_size\" ", preprocessor_.merge_size,
             " differs from vision_config.spatial_merge_size ", config_.vision.spatial_merge_size,
             " in config.json");
    }

    store_ = TensorStore::open(dir_);
    std::map<std::string, std::string, std::less<>> sources;
    for (const std::string& name : store_->names()) {
        std::string canonical = canonical_tensor_name(name);
        if (is_ignored_tensor(canonical)) {
            continue;
        }
        const auto [source, inserted] = sources.emplace(canonical, name);
        if (!inserted) {
            fail(dir_.string(), ": tensors '", source->second, "' and '", name, "' are both '", canonical,
                 "'");
        }
        TensorView view = store_->get(name);
        view.name = canonical;
        tensors_.emplace(std::move(canonical), std::move(view));
    }
}

const TensorView* ModelFiles::find(std::string_view canonical_name) const {
    const auto it = tensors_.find(canonical_name);
    return it == tensors_.end() ? nullptr : &it->second;
}

const TensorView& ModelFiles::tensor(std::string_view canonical_name) const {
    const TensorView* view = find(canonical_name);
    if (view == nullptr) {
        fail(dir_.string(), ": missing tensor '", canonical_name, "'");
    }
    return *view;
}

std::vector<std::string> ModelFiles::tensor_names() const {
    std::vector<std::string> names;
    names.reserve(tensors_.size());
    for (const auto& entry : tensors_) {
        names.push_back(entry.first);
    }
    return names;
}

std::unique_ptr<WeightSource> make_file_weight_source(const ModelFiles& files) {
    return std::make_unique<FileWeightSource>(files);
}

void ModelFiles::check_shape(const TensorView& tensor, const std::vector<int64_t>& expected) const {
    if (tensor.shape != expected) {
        fail(dir_.string(), ": tensor '", tensor.name, "' has shape ", shape_text(tensor.shape),
             ", expected ", shape_text(expected), " from config.json");
    }
}

}  // namespace folio
