// What a model offers, as front ends show and check it: its family, role, tasks, context length and the
// kinds of input it takes. The registry describes a folder's model without loading it; a loaded model
// describes itself.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/models/generation-config.h"

namespace folio {

// Recognition: a document model (PaddleOCR-VL); Chat: a model for conversation; Layout: a layout detector.
enum class ModelRole { Recognition, Layout, Chat };
const char* model_role_name(ModelRole role);

enum class Modality { Text, Image, Video };
const char* modality_name(Modality modality);

// What a model offers, as front ends show and check it.
struct ModelDescription {
    std::string name;        // the folder's name, or the family's with random weights
    std::string family;      // the registry's name of the family ("paddleocr-vl", "pp-doclayout")
    std::string model_type;  // config.json's model_type
    ModelRole role = ModelRole::Recognition;
    std::vector<std::string> tasks;  // task prompts it is made for ("OCR:", ...); empty for a chat model
    int64_t max_context = 0;         // positions a generative model was made for; 0 for a layout model
    std::vector<Modality> modalities;
    // The folder's generation_config.json: the defaults of every request to the model (empty: none).
    GenerationDefaults generation;
    // The reasoning parser its answers split into thought and answer with ("deepseek_r1", "ernie-45-vl";
    // reasoning-parser.h); empty: its answers are not split.
    std::string reasoning_parser;

    bool takes(Modality modality) const;
};

}  // namespace folio
