// The ERNIE-4.5-VL family (model_type ernie4_5_vl_moe, Ernie4_5_VLMoeForConditionalGeneration): the chat
// model of pages, images and video, in transformers' checkpoint layout (baidu/ERNIE-4.5-VL-28B-A3B-PT and
// its -Thinking variant).
#pragma once

#include <memory>

#include "engine/models/model-family.h"

namespace folio {

std::unique_ptr<ModelFamily> make_ernie45_vl_family();

}  // namespace folio
