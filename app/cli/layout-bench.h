// The layout model's throughput for folio-cli bench --layout-model: pages a second through the model at each
// batch size, and the image processor's host time a page.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "engine/backend/backend.h"

namespace folio::cli {

// n_pages pages of 1700x2200 (a letter page at 200 DPI) with drawn blocks, at each batch size.
nlohmann::json bench_layout(Backend& backend, const std::filesystem::path& model_dir,
                            const std::vector<int64_t>& batches, int64_t n_pages);

}  // namespace folio::cli
