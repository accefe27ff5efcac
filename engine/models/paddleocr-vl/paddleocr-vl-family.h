// The PaddleOCR-VL family (model_type paddleocr_vl, PaddleOCRVLForConditionalGeneration): versions 0.9B, 1.5
// and 1.6 on one architecture, in the published checkpoint's layout or transformers'.
#pragma once

#include <memory>

#include "engine/models/model-family.h"

namespace folio {

std::unique_ptr<ModelFamily> make_paddleocr_vl_family();

}  // namespace folio
