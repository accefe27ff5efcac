// The PP-DocLayout family (model_type pp_doclayout_v2 and pp_doclayout_v3): layout detection models that run
// beside a generative model, on the engine thread.
#pragma once

#include <memory>

#include "engine/models/model-family.h"

namespace folio {

std::unique_ptr<ModelFamily> make_pp_doclayout_family();

}  // namespace folio
