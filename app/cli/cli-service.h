// The engine service as folio-cli's commands load it: the recognition model and, for documents, a layout
// model beside it, on the --device chosen, each loading phase on stderr as it begins.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "app/options/cli-options.h"
#include "app/options/engine-options.h"
#include "engine/service/engine-service.h"

namespace folio::cli {

// A loading phase as the program shows it as it begins: the bytes of weights to read, the weights to
// quantize.
std::string phase_line(const LoadProgress& progress, std::string_view program = "folio-cli");

// Loads the service and waits for it; throws folio::Error with the service's error when loading fails.
void load_service(EngineService& service, const Options& opt, const std::filesystem::path& model_dir,
                  const EngineOptions& engine_options,
                  const std::optional<std::filesystem::path>& layout_dir = std::nullopt,
                  int layout_batch = 4);

}  // namespace folio::cli
