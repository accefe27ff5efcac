// A PaddleOCR-VL model folder: config.json, preprocessor_config.json and the weights, with tensors under
// transformers' names (model.visual.*, model.projector.*, model.language_model.*, lm_head.weight) whichever
// naming the checkpoint uses.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/files/safetensors.h"
#include "engine/files/weight-source.h"
#include "engine/image/preprocessor-config.h"
#include "engine/models/paddleocr-vl/config.h"

namespace folio {

// The transformers name of a checkpoint tensor name: the published checkpoint's visual.* becomes
// model.visual.*, mlp_AR.* becomes model.projector.*, model.* becomes model.language_model.*; names that
// are already canonical are returned unchanged.
std::string canonical_tensor_name(std::string_view name);

// Tensors the reference implementation does not load (packing_position_embedding, the vision model's
// pooling head), by canonical name.
bool is_ignored_tensor(std::string_view canonical_name);

class ModelFiles {
private:
    struct Key {
        explicit Key() = default;
    };

public:
    // Reads config.json, preprocessor_config.json (defaults where absent) and the weights of `dir`.
    static std::unique_ptr<ModelFiles> open(const std::filesystem::path& dir);
    ModelFiles(const std::filesystem::path& dir, Key);

    const std::filesystem::path& dir() const { return dir_; }
    const ModelConfig& config() const { return config_; }
    const PreprocessorConfig& preprocessor() const { return preprocessor_; }

    // The tensor by canonical name; the view's name is the canonical name. Throws naming the folder and
    // the tensor when it is missing.
    const TensorView& tensor(std::string_view canonical_name) const;
    const TensorView* find(std::string_view canonical_name) const;
    std::vector<std::string> tensor_names() const;  // canonical, sorted; ignored tensors left out
    size_t n_bytes() const { return store_->n_bytes(); }

    // Throws naming the folder, the tensor and both shapes when the tensor's shape is not `expected`.
    void check_shape(const TensorView& tensor, const std::vector<int64_t>& expected) const;

private:
    std::filesystem::path dir_;
    ModelConfig config_;
    PreprocessorConfig preprocessor_;
    std::unique_ptr<TensorStore> store_;
    std::map<std::string, TensorView, std::less<>> tensors_;
};

// The folder's tensors as float32, each checked against the shape the model expects. The files must outlive
// the source.
std::unique_ptr<WeightSource> make_file_weight_source(const ModelFiles& files);

}  // namespace folio
