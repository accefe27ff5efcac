// What a --model value names: a folder, or a Hub repository ("ORG/NAME") already on disk, in the Hugging
// Face cache, in Folio's models folder or in another folder the user keeps models in. The folder found is
// checked before use, so that a missing or damaged file is reported up front, naming it.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "app/hub/hub-settings.h"
#include "app/hub/model-catalogue.h"

namespace folio::hub {

enum class ModelSource { Folder, HubCache, ModelsFolder };
const char* model_source_name(ModelSource source);

struct LocatedModel {
    std::filesystem::path dir;
    ModelSource source = ModelSource::Folder;
    std::string repo;    // ORG/NAME, where known (by name, or a folder inside a Hugging Face cache)
    std::string commit;  // where the folder is a cache snapshot
    ModelKind kind = ModelKind::Recognition;
    // "PaddlePaddle/PaddleOCR-VL at 0123abc in the Hugging Face cache (DIR)", for messages.
    std::string description() const;
};

struct LocateOptions {
    std::string revision = "main";     // a branch, tag or commit in a Hugging Face cache layout
    std::optional<ModelKind> kind;     // the kind the model must be
    bool check = true;                 // check the folder (files, sizes, safetensors headers)
    bool tokenizer_elsewhere = false;  // the tokenizer comes from another folder
    // More folders to look in after the Hugging Face cache and Folio's models folder; each may hold the
    // cache's layout (models--ORG--NAME) or plain ORG/NAME folders.
    std::vector<std::filesystem::path> search_dirs;
};

// Throws folio::Error saying where it looked and how to download the model, or what is wrong with the
// folder found.
LocatedModel locate_model(std::string_view spec, const HubSettings& settings,
                          const LocateOptions& options = {});

// The catalogue's layout model for a located recognition model; nullopt where the catalogue pairs none.
std::optional<std::string> paired_layout_repo(const LocatedModel& model);

}  // namespace folio::hub
