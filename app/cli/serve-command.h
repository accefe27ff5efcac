// folio-cli serve: the model behind a local OpenAI-compatible server, a drop-in for FastDeploy's
// PaddleOCR-VL server.
#pragma once

#include "app/options/cli-options.h"

namespace folio::cli {

extern const char* const kServeUsage;

int run_serve(int argc, char** argv, int first);

}  // namespace folio::cli
